/* The verification pattern.  Stamps carry (seed, file, generation, word index), so
 * a misplaced block (wrong word index), a stale block (older generation) and a
 * damaged block (anything else) all fail.  Between stamps a seed-only fill keeps
 * the cost per transfer at one stamp per `interval` words. */
#include <string.h>

#include "kernel.h"

void sbk_pattern_init(sbk_pattern *p, uint64_t seed, uint64_t words_per_xfer)
{
    p->seed = seed;
    /* The largest power of two <= min(64, words per transfer): every transfer then
     * holds at least one stamp, however small. */
    p->interval = 1;
    while (p->interval * 2 <= 64 && p->interval * 2 <= words_per_xfer)
        p->interval *= 2;
    for (int i = 0; i < 64; i++)
        p->fill[i] = sbk_mix64(seed ^ (0xF111ULL + (uint64_t)i));
}

uint64_t sbk_stamp(const sbk_pattern *p, uint64_t file, uint64_t gen, uint64_t word)
{
    return sbk_mix64(p->seed ^ sbk_mix64(file * 0x100000001B3ULL ^ (gen << 48) ^ word));
}

void sbk_pattern_fill(const sbk_pattern *p, uint64_t *buf, uint64_t nwords, uint64_t file,
                      uint64_t gen, uint64_t first_word, int stamps_only)
{
    uint64_t mask = p->interval - 1;
    if (!stamps_only)
        for (uint64_t i = 0; i < nwords; i++)
            buf[i] = p->fill[(first_word + i) & mask];
    /* First stamp position at or after first_word. */
    uint64_t i = (p->interval - (first_word & mask)) & mask;
    for (; i < nwords; i += p->interval)
        buf[i] = sbk_stamp(p, file, gen, first_word + i);
}

sbk_verify_result sbk_pattern_check(const sbk_pattern *p, const uint64_t *buf, uint64_t nwords,
                                    uint64_t file, uint64_t gen, uint64_t first_word)
{
    sbk_verify_result r = {0, 0, -1};
    uint64_t mask = p->interval - 1;
    for (uint64_t i = 0; i < nwords; i++) {
        uint64_t w = first_word + i;
        uint64_t want = (w & mask) ? p->fill[w & mask] : sbk_stamp(p, file, gen, w);
        if (buf[i] == want)
            continue;
        r.bad_words++;
        if (r.first_bad_word < 0)
            r.first_bad_word = (int64_t)w;
        if (!(w & mask) && gen > 1 && buf[i] == sbk_stamp(p, file, gen - 1, w))
            r.stale_words++;
    }
    return r;
}
