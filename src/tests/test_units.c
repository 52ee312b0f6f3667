/* Unit tests of the kernel's statistics, verification pattern and JSON writer.
 * Prints one line per check and a final "N passed, N failed"; exits 1 on failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

static int passed, failed;

#define CHECK(cond, what)                                                   \
    do {                                                                    \
        if (cond) {                                                         \
            passed++;                                                       \
            printf("ok   %s\n", what);                                      \
        } else {                                                            \
            failed++;                                                       \
            printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__);          \
        }                                                                   \
    } while (0)

static int near(double a, double b) { return fabs(a - b) <= 1e-9 * (fabs(b) + 1.0); }

static void test_stats(void)
{
    double v[] = {4.0, 1.0, 3.0, 2.0, 10.0};
    sbk_summary s = sbk_summarize(v, 5);
    CHECK(s.n == 5, "stats: n");
    CHECK(near(s.min, 1.0) && near(s.max, 10.0), "stats: min and max");
    CHECK(near(s.mean, 4.0), "stats: mean");
    CHECK(near(s.trimmed_mean, 3.0), "stats: trimmed mean drops one min and one max");
    CHECK(near(s.stddev, sqrt(50.0 / 4.0)), "stats: sample standard deviation");
    CHECK(near(s.cv, sqrt(50.0 / 4.0) / 4.0), "stats: coefficient of variation");
    double two[] = {2.0, 4.0};
    s = sbk_summarize(two, 2);
    CHECK(near(s.trimmed_mean, 3.0), "stats: trimmed mean of two values is the mean");
    double one[] = {7.0};
    s = sbk_summarize(one, 1);
    CHECK(near(s.stddev, 0.0) && near(s.min, 7.0), "stats: a single value");
    s = sbk_summarize(NULL, 0);
    CHECK(s.n == 0 && isnan(s.mean), "stats: no values gives NaN, not zero");
}

static void test_pattern(void)
{
    sbk_pattern p;
    enum { N = 1024 };
    uint64_t *buf = malloc(N * 8), *ref = malloc(N * 8);
    sbk_pattern_init(&p, 42, N);
    CHECK(p.interval == 64, "pattern: stamp every 64 words for large transfers");
    sbk_pattern_fill(&p, buf, N, 3, 5, 4096, 0);
    sbk_verify_result r = sbk_pattern_check(&p, buf, N, 3, 5, 4096);
    CHECK(r.bad_words == 0 && r.first_bad_word == -1, "pattern: what was written verifies");

    /* Restamping a prefilled buffer equals a full fill. */
    memcpy(ref, buf, N * 8);
    sbk_pattern_fill(&p, buf, N, 3, 5, 4096 + N, 1);
    sbk_pattern_fill(&p, ref, N, 3, 5, 4096 + N, 0);
    CHECK(memcmp(buf, ref, N * 8) == 0, "pattern: restamping equals a full fill");

    r = sbk_pattern_check(&p, buf, N, 3, 5, 4096);
    CHECK(r.bad_words > 0 && r.first_bad_word == 4096, "pattern: a misplaced block is caught");

    sbk_pattern_fill(&p, buf, N, 3, 4, 4096, 0);
    r = sbk_pattern_check(&p, buf, N, 3, 5, 4096);
    CHECK(r.bad_words == N / 64 && r.stale_words == N / 64,
          "pattern: a stale block (previous generation) is caught and classified");

    sbk_pattern_fill(&p, buf, N, 2, 5, 4096, 0);
    r = sbk_pattern_check(&p, buf, N, 3, 5, 4096);
    CHECK(r.bad_words > 0 && r.stale_words == 0, "pattern: another file's block is caught");

    sbk_pattern_fill(&p, buf, N, 3, 5, 4096, 0);
    buf[100] ^= 1;
    r = sbk_pattern_check(&p, buf, N, 3, 5, 4096);
    CHECK(r.bad_words == 1 && r.first_bad_word == 4196, "pattern: one flipped bit is caught");

    memset(buf, 0, N * 8);
    r = sbk_pattern_check(&p, buf, N, 3, 1, 0);
    CHECK(r.bad_words == N, "pattern: zeros (a hole) fail everywhere");

    sbk_pattern_init(&p, 42, 3);
    CHECK(p.interval == 2, "pattern: small transfers get a stamp in every transfer");
    for (uint64_t start = 0; start < 30; start += 3) {
        sbk_pattern_fill(&p, buf, 3, 0, 1, start, 0);
        int has_stamp = 0;
        for (uint64_t w = start; w < start + 3; w++)
            has_stamp |= (w % p.interval) == 0;
        r = sbk_pattern_check(&p, buf, 3, 0, 1, start + 3);
        if (!has_stamp || r.bad_words == 0) {
            CHECK(0, "pattern: every 3-word transfer holds a stamp and a shifted one fails");
            goto out;
        }
    }
    CHECK(1, "pattern: every 3-word transfer holds a stamp and a shifted one fails");
out:
    free(buf);
    free(ref);
}

static void test_json(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sbk_json j;
    jw_begin(&j, f);
    jw_obj(&j, NULL);
    jw_str(&j, "quote", "a\"b\\c\n<script>");
    jw_num(&j, "nan", NAN);
    jw_int(&j, "n", 3);
    jw_arr(&j, "empty");
    jw_end_arr(&j);
    jw_end_obj(&j);
    jw_finish(&j);
    fclose(f);
    CHECK(strstr(text, "\"quote\": \"a\\\"b\\\\c\\n<script>\"") != NULL,
          "json: strings are escaped");
    CHECK(strstr(text, "\"nan\": null") != NULL, "json: NaN is written as null");
    CHECK(strstr(text, "\"empty\": []") != NULL, "json: empty array");
    free(text);

    jw_begin(&j, NULL);
    jw_obj(&j, NULL);
    jw_int(&j, "x", 1);
    jw_end_obj(&j);
    CHECK(1, "json: a writer without a file (ranks other than 0) writes nothing");
}

int main(void)
{
    test_stats();
    test_pattern();
    test_json();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
