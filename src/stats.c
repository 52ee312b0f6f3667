/* Statistics over repetitions or ranks: seed 000 asks to drop the min and max and
 * report the mean of the rest; seed 002 asks for the min and max themselves. */
#include <math.h>
#include <stdlib.h>

#include "kernel.h"

sbk_summary sbk_summarize(const double *values, size_t n)
{
    sbk_summary s = {0};
    s.n = n;
    if (n == 0) {
        s.min = s.max = s.mean = s.trimmed_mean = s.stddev = s.cv = NAN;
        return s;
    }
    double sum = 0.0;
    s.min = s.max = values[0];
    for (size_t i = 0; i < n; i++) {
        sum += values[i];
        if (values[i] < s.min)
            s.min = values[i];
        if (values[i] > s.max)
            s.max = values[i];
    }
    s.mean = sum / (double)n;
    /* Trimmed mean drops one minimum and one maximum; with fewer than three
     * values nothing is left to trim, so it equals the mean. */
    s.trimmed_mean = n >= 3 ? (sum - s.min - s.max) / (double)(n - 2) : s.mean;
    double sq = 0.0;
    for (size_t i = 0; i < n; i++)
        sq += (values[i] - s.mean) * (values[i] - s.mean);
    s.stddev = n >= 2 ? sqrt(sq / (double)(n - 1)) : 0.0;
    s.cv = s.mean != 0.0 ? s.stddev / s.mean : NAN;
    return s;
}
