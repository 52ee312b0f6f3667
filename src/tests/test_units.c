/* Unit tests of the kernel: option parsing, the core's repetition loop (driven by a
 * mode registered here, as any mode registers itself), statistics, the verification
 * pattern and the JSON writer.  Runs as an MPI singleton.  Prints one line per check
 * and a final "N passed, N failed"; exits 1 on failure. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

static int passed, failed;

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (cond) {                                                                                \
            passed++;                                                                              \
            printf("ok   %s\n", what);                                                             \
        } else {                                                                                   \
            failed++;                                                                              \
            printf("FAIL %s (%s:%d)\n", what, __FILE__, __LINE__);                                 \
        }                                                                                          \
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

/* ---- options ---- */
static int parse(const char *line, sbk_config *c, const sbk_mode **mode, void **opts)
{
    char *copy = strdup(line), *argv[32], *save = NULL;
    int argc = 0;
    for (char *tok = strtok_r(copy, " ", &save); tok && argc < 31; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    argv[argc] = NULL;
    *opts = NULL;
    int rc = sbk_parse_args(argc, argv, c, mode, opts);
    /* the config points into argv: keep copy alive for the caller's checks */
    return rc;
}

static int parse_error_is(const char *line, const char *want)
{
    sbk_config c;
    const sbk_mode *m;
    void *opts;
    int rc = parse(line, &c, &m, &opts);
    int ok = rc == SBK_EUSAGE && strstr(sbk_usage_error(), want) != NULL;
    if (!ok)
        printf("     got rc %d: %s\n", rc, sbk_usage_error());
    return ok;
}

static void test_options(void)
{
    uint64_t v = 0;
    CHECK(sbk_parse_size("4k", &v) == 0 && v == 4096, "options: 4k is 4096 bytes");
    CHECK(sbk_parse_size("1MiB", &v) == 0 && v == 1048576, "options: 1MiB");
    CHECK(sbk_parse_size("2g", &v) == 0 && v == 2ULL << 30, "options: 2g");
    CHECK(sbk_parse_size("12", &v) == 0 && v == 12, "options: a plain number is bytes");
    CHECK(sbk_parse_size("-1", &v) != 0 && sbk_parse_size("1x", &v) != 0 &&
              sbk_parse_size("", &v) != 0,
          "options: bad sizes are refused");
    char text[32];
    sbk_format_size(1048576, text, sizeof text);
    CHECK(!strcmp(text, "1 MiB"), "options: sizes print in the largest exact unit");
    sbk_format_size(12288, text, sizeof text);
    CHECK(!strcmp(text, "12 KiB"), "options: 12 KiB");

    CHECK(parse_error_is("k unit --dir . --nr 5", "--nr is an option of mode iotest, not unit"),
          "options: an option of another mode names that mode");
    CHECK(parse_error_is("k unit --dir . --engine aio", "--engine is an option of mode"),
          "options: a common option the mode lacks names the modes that have it");
    CHECK(parse_error_is("k unit --dir . --sizes 4k,0", "--sizes: expected a comma list of sizes "
                                                        "from 512 B to 1 GiB, got '4k,0'"),
          "options: a bad size in a list");
    CHECK(parse_error_is("k unit --dir . --depths 1,,x", "--depths: expected a comma list of "
                                                         "integers from 1 to 64"),
          "options: a bad integer in a list");
    CHECK(parse_error_is("k unit --dir . --fsync sometimes",
                         "--fsync: expected inside, outside or none, got 'sometimes'"),
          "options: choices are listed");
    CHECK(parse_error_is("k unit --dir a --dir b", "--dir given 2 times: mode unit tests one"),
          "options: --dir repeats only for modes with several directories");
    CHECK(parse_error_is("k nosuchmode", "unknown mode 'nosuchmode'"), "options: unknown mode");

    sbk_config c;
    const sbk_mode *m;
    void *opts;
    int rc = parse("k unit --dir . --sizes 4k,1m --depths 1,32 --reps 3", &c, &m, &opts);
    const sbk_list *sizes = opts ? (const sbk_list *)opts : NULL;
    CHECK(rc == 0 && m == sbk_find_mode("unit") && c.reps == 3 && sizes && sizes->n == 2 &&
              sizes->v[0] == 4096 && sizes->v[1] == 1048576,
          "options: lists parse in order");
}

/* ---- the core's loop, driven by a mode of its own ---- */
typedef struct {
    sbk_list sizes; /* first: test_options reads it through the opts pointer */
    sbk_list depths;
    long fail_rep, bad_words, iterations;
} unit_opts;

/* An option table keeps several fields a line. */
/* clang-format off */
static const sbk_option unit_options[] = {
    {.name = "sizes", .kind = SBK_OPT_SIZES, .offset = offsetof(unit_opts, sizes), .arg = "L",
     .help = "sizes", .lo = 512, .hi = 1L << 30},
    {.name = "depths", .kind = SBK_OPT_LONGS, .offset = offsetof(unit_opts, depths), .arg = "L",
     .help = "depths", .lo = 1, .hi = 64},
    {.name = "fail-rep", .kind = SBK_OPT_LONG, .offset = offsetof(unit_opts, fail_rep),
     .arg = "N", .help = "phase b fails in this repetition", .lo = -1, .hi = 100},
    {.name = "bad-words", .kind = SBK_OPT_LONG, .offset = offsetof(unit_opts, bad_words),
     .arg = "N", .help = "phase b reports N bad words per pass", .hi = 100},
    {.name = "iterations", .kind = SBK_OPT_LONG, .offset = offsetof(unit_opts, iterations),
     .arg = "N", .help = "passes over the plan per repetition", .lo = 1, .hi = 10},
    {0},
};
/* clang-format on */

enum { U_TICK, U_ITEMS, U_PEAK, U_N };
static const sbk_field unit_fields[U_N] = {
    {"tick", SBK_TIMER}, {"items_done", SBK_TOTAL}, {"peak", SBK_COUNT}};

static char unit_log[4096];
static int unit_written_calls, unit_end_reps, unit_last_seen, unit_teardowns;

static void unit_defaults(void *p)
{
    *(unit_opts *)p = (unit_opts){.fail_rep = -1, .iterations = 2};
}

static int unit_setup(sbk_ctx *ctx)
{
    const unit_opts *o = ctx->opts;
    ctx->iterations = o->iterations;
    sbk_phase a = {.name = "a",
                   .kind = 0,
                   .fields = unit_fields,
                   .nfields = U_N,
                   .flags = SBK_PH_REPORT | SBK_PH_STONEWALL | SBK_PH_DATA};
    sbk_phase b = a;
    snprintf(b.name, sizeof b.name, "b");
    b.kind = 1;
    b.flags = SBK_PH_REPORT | SBK_PH_DEFEAT_CACHE | SBK_PH_DATA;
    sbk_phase hidden = a;
    snprintf(hidden.name, sizeof hidden.name, "hidden");
    hidden.kind = 2;
    hidden.flags = 0;
    sbk_plan_add(ctx, &a);
    sbk_plan_add(ctx, &hidden);
    sbk_plan_add(ctx, &b);
    return sbk_agree(ctx);
}

static void unit_run_phase(sbk_ctx *ctx, const sbk_phase *ph, sbk_rec *rec)
{
    const unit_opts *o = ctx->opts;
    size_t used = strlen(unit_log);
    snprintf(unit_log + used, sizeof unit_log - used, "%s%s%llu ",
             unit_written_calls > unit_last_seen ? "D " : "", ph->name,
             (unsigned long long)ctx->generation);
    unit_last_seen = unit_written_calls;
    rec->time[U_TICK] += 1.5;
    rec->count[U_ITEMS] += 3;
    rec->count[U_PEAK] = (1ULL << 53) + 1; /* not representable as a double */
    if (ph->kind == 0) {
        rec->stonewall_hit = 1;
        int fd = openat(ctx->targets[0].fd, "unit.data", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            if (write(fd, "0123456789abcdef", 16) != 16)
                sbk_fail(ctx, SBK_EIO, EIO, ph->name, 0, "short write");
            close(fd);
        }
    }
    if (ph->kind == 1 && o->bad_words) {
        sbk_verify_result r = {(uint64_t)o->bad_words, 1, 7};
        sbk_rec_verify(rec, &r);
    }
    if (ph->kind == 1 && ctx->rep == o->fail_rep)
        sbk_fail(ctx, SBK_EIO, EIO, ph->name, 0, "phase b failed on purpose");
}

static void unit_report_phase(sbk_ctx *ctx, const sbk_phase *ph, const sbk_gathered *g, sbk_json *j)
{
    sbk_figure(ctx, j, ph, "fig", (double)(ctx->rep + 1) * (ph->kind == 0 ? 1.0 : 10.0),
               SBK_UNIT_OPS);
    jw_uint(j, "sum_seen_by_mode", sbk_col_sum(g, U_ITEMS));
}

static int unit_written_file(const sbk_ctx *ctx, int index, int *target, char *name, size_t len)
{
    (void)ctx;
    if (index > 0)
        return -1;
    unit_written_calls++;
    *target = 0;
    snprintf(name, len, "unit.data");
    return 0;
}

static void unit_end_rep(sbk_ctx *ctx, int last)
{
    (void)ctx;
    unit_end_reps++;
    if (last)
        unit_end_reps += 1000;
}

static void unit_teardown(sbk_ctx *ctx, int code)
{
    (void)code;
    unit_teardowns++;
    unlinkat(ctx->targets[0].fd, "unit.data", 0);
}

static const sbk_mode unit_mode = {
    .name = "unit",
    .about = "the unit tests' mode",
    .features = SBK_F_READS | SBK_F_STONEWALL,
    .options = unit_options,
    .opts_size = sizeof(unit_opts),
    .defaults = unit_defaults,
    .setup = unit_setup,
    .run_phase = unit_run_phase,
    .report_phase = unit_report_phase,
    .written_file = unit_written_file,
    .end_rep = unit_end_rep,
    .teardown = unit_teardown,
};
SBK_REGISTER_MODE(unit_mode)

/* Runs `line` (with --dir DIR appended) like main() does; returns the exit code and
 * the JSON report in *json. */
static int run_line(const char *line, const char *dir, char **json)
{
    char full[1024];
    snprintf(full, sizeof full, "%s --dir %s", line, dir);
    sbk_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
    sbk_config cfg;
    const sbk_mode *mode;
    void *opts;
    if (parse(full, &cfg, &mode, &opts) != 0) {
        printf("     cannot parse '%s': %s\n", full, sbk_usage_error());
        return -1;
    }
    unit_log[0] = '\0';
    unit_written_calls = unit_last_seen = unit_end_reps = unit_teardowns = 0;
    size_t len = 0;
    FILE *f = open_memstream(json, &len);
    int code = sbk_run_report(&ctx, &cfg, mode, opts, f);
    fclose(f);
    return code;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_loop(void)
{
    char dir[] = "/tmp/sbk-unit-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "loop: a temporary directory");
        return;
    }
    char scan[64];
    snprintf(scan, sizeof scan, "%s.scan", dir);
    FILE *sf = fopen(scan, "w");
    fputs("scan me", sf);
    fclose(sf);
    char *json = NULL, line[256];
    snprintf(line, sizeof line, "k unit --reps 3 --fadvise --scan-file %s", scan);
    int code = run_line(line, dir, &json);
    CHECK(code == 0, "loop: a clean run exits 0");
    CHECK(!strcmp(unit_log, "a1 hidden1 D b1 a2 hidden2 D b2 a3 hidden3 D b3 a4 hidden4 D b4 "
                            "a5 hidden5 D b5 a6 hidden6 D b6 "),
          "loop: phases run in plan order, iterations inside repetitions, a new generation per "
          "pass, cache defeat before the phase that reads");
    /* three repetitions and the summary */
    CHECK(count_of(json, "\"rep\": ") == 3 && count_of(json, "\"a\": {") == 4 &&
              count_of(json, "\"b\": {") == 4 && count_of(json, "\"hidden\"") == 0,
          "loop: every repetition reports its reported phases, never the preparation");
    CHECK(count_of(json, "\"tick\": [3]") == 6, "loop: timers accumulate over iterations");
    CHECK(count_of(json, "\"items_done\": 6") == 6 &&
              count_of(json, "\"sum_seen_by_mode\": 6") == 6,
          "loop: totals over ranks are written and handed to the mode");
    CHECK(count_of(json, "\"peak\": [9007199254740993]") == 6,
          "loop: counts are exact integers (2^53 + 1)");
    CHECK(strstr(json, "\"time_s\": {\n") && count_of(json, "\"tick\": {") == 6,
          "loop: statistics over ranks of every timer");
    CHECK(count_of(json, "\"stonewall_hit_ranks\": 1") == 3,
          "loop: stonewall hits are counted in phases that have a stonewall");
    CHECK(count_of(json, "\"resident_fraction_after_drop\": ") == 3 &&
              count_of(json, "\"scan_s\": ") == 3,
          "loop: cache defeat is recorded per repetition");
    CHECK(strstr(json, "\"summary\": {\n    \"a\": {\n      \"fig\": {\n        \"n\": 3,\n"
                       "        \"min\": 1,\n        \"max\": 3,\n        \"mean\": 2,\n"
                       "        \"trimmed_mean\": 2,") != NULL,
          "loop: figures are summarised over repetitions, phase by phase");
    CHECK(strstr(json, "\"b\": {\n      \"fig\": {\n        \"n\": 3,\n        \"min\": 10,") !=
              NULL,
          "loop: each phase keeps its own series");
    CHECK(unit_end_reps == 1003 && unit_teardowns == 1,
          "loop: end of each repetition (the last marked), one teardown");
    free(json);

    code = run_line("k unit --reps 3 --bad-words 5", dir, &json);
    CHECK(code == SBK_EVERIFY, "loop: words that fail verification make exit code 6");
    CHECK(count_of(json, "\"bad_words\": 10") == 3 && count_of(json, "\"bad_words\": 0") == 3,
          "loop: verification tallies per phase (two passes of 5)");
    CHECK(strstr(json, "\"verify_bad_words\": 30") != NULL, "loop: the summary's bad words");
    CHECK(strstr(json, "\"first_bad_byte\": [\n") && strstr(json, "\"byte\": 56"),
          "loop: the first bad byte of each rank");
    CHECK(strstr(json, "\"exit_reason\": \"verification-failed\""), "loop: exit reason");
    free(json);

    code = run_line("k unit --reps 4 --fail-rep 1 --iterations 1", dir, &json);
    CHECK(code == SBK_EIO, "loop: an error stops the run with its code");
    CHECK(!strcmp(unit_log, "a1 hidden1 b1 a2 hidden2 b2 "),
          "loop: no repetition after the failing one");
    /* a repetition's key is indented deeper than the report's own */
    CHECK(count_of(json, "      \"complete\": true") == 1 &&
              count_of(json, "      \"complete\": false") == 1,
          "loop: the failing repetition is reported incomplete");
    CHECK(count_of(json, "\n  \"complete\": false") == 1,
          "loop: the report of a failed run says it is incomplete, as main() writes it");
    CHECK(strstr(json, "\"fig\": {\n        \"n\": 1,") != NULL,
          "loop: the summary holds complete repetitions only");
    CHECK(strstr(json, "phase b failed on purpose") != NULL, "loop: the error's message");
    CHECK(unit_teardowns == 1, "loop: teardown after a failure too");
    free(json);

    unlink(scan);
    CHECK(rmdir(dir) == 0, "loop: nothing is left behind in the target");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    test_options();
    test_loop();
    test_stats();
    test_pattern();
    test_json();
    printf("%d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
