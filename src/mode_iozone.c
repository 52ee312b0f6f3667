/* iozone mode: seed 004's IOzone runs, with IOzone's access patterns and its automatic
 * file-size x record-size matrix (iozone.c 3.4xx).
 *
 * Each point of the matrix (file size, record size) runs the patterns in IOzone's order
 * on one file per rank: write (a new file), re-write, read, re-read, random read and
 * random write (every record once, in a shuffled order), backward read (the last record
 * first, stepping back one record at a time), record re-write (the record at offset 0,
 * once per record of the file), stride read (a record, then the one `stride` records on,
 * wrapping to the next start so every record is read once) and random mix (IOzone's
 * throughput mode only: a share of the ranks read, the others write, both at random).
 *
 * As in IOzone, timers start after open; --fsync inside puts fsync in the timed region
 * (IOzone -e) and --close-inside the close (IOzone -c).  Filling and checking the data
 * pattern is kept out of the timers.  With several ranks the run is IOzone's throughput
 * mode: every rank works its own file at once, and when the first rank finishes a pass
 * the others take their figures there (the stonewall) and finish the pass untimed, so
 * the file is whole for the next pattern.  Throughput is the sum over ranks of each
 * rank's bytes over its own time (IOzone's "children see").
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "kernel.h"

enum {
    P_WRITE,
    P_REWRITE,
    P_READ,
    P_REREAD,
    P_RANDOM_READ,
    P_RANDOM_WRITE,
    P_BACKWARD_READ,
    P_RECORD_REWRITE,
    P_STRIDE_READ,
    P_RANDOM_MIX,
    P_N
};
/* As --patterns names them, and as phase names start (with '_' for '-'). */
static const char *const pattern_names[P_N] = {
    "write",        "rewrite",       "read",           "reread",      "random-read",
    "random-write", "backward-read", "record-rewrite", "stride-read", "random-mix"};
static const char *const pattern_keys[P_N] = {
    "write",        "rewrite",       "read",           "reread",      "random_read",
    "random_write", "backward_read", "record_rewrite", "stride_read", "random_mix"};
/* The first reads of a file after writes: the core defeats the cache before them (with
 * --fadvise, --scan-file); re-read is the read of what the read left cached. */
static const int first_read[P_N] = {[P_READ] = 1,
                                    [P_RANDOM_READ] = 1,
                                    [P_BACKWARD_READ] = 1,
                                    [P_STRIDE_READ] = 1,
                                    [P_RANDOM_MIX] = 1};
static const int writes_data[P_N] = {
    [P_WRITE] = 1, [P_REWRITE] = 1, [P_RANDOM_WRITE] = 1, [P_RECORD_REWRITE] = 1};

/* IOzone's automatic mode (-a): files 64 KiB to 512 MiB, records 4 KiB to 16 MiB; records
 * below 64 KiB are skipped for files over 16 MiB (CROSSOVER), unless -z. */
#define SMALL_RECORD_LIMIT (64ULL << 10)
#define LARGE_FILE_OVER (16ULL << 20)

typedef struct {
    uint64_t min, max;
    int max_is_memory; /* files: the first size past the node's memory */
} size_range;

typedef struct {
    unsigned mask; /* bit per P_* */
    int given;     /* named on the command line */
} pattern_set;

typedef struct {
    size_range files, records;
    int all_records; /* IOzone -z */
    pattern_set patterns;
    long stride; /* IOzone -j, in records */
    long mix_read_percent;
    int close_inside; /* IOzone -c */
    int no_stonewall; /* IOzone -x */
    const char *record_offsets;
} iz_opts;

static int is_power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

static int parse_one_size(const char *text, int files, uint64_t *out, char *err, size_t len)
{
    char shown[32];
    uint64_t most = files ? 1ULL << 44 : 1ULL << 30;
    if (sbk_parse_size(text, out) || *out < 512 || *out > most) {
        snprintf(err, len, "expected sizes from 512 B to %s (such as 64k, 512m), got '%s'",
                 files ? "16 TiB" : "1 GiB", text);
        return -1;
    }
    if (!is_power_of_two(*out)) {
        sbk_format_size(*out, shown, sizeof shown);
        snprintf(err, len,
                 "%s is not a power of two: the matrix doubles from the smallest "
                 "size, as IOzone -a does",
                 shown);
        return -1;
    }
    return 0;
}

/* MIN[:MAX]; for files MAX may be 'memory'. */
static int parse_range(const char *value, size_range *r, int files, char *err, size_t len)
{
    char copy[128];
    snprintf(copy, sizeof copy, "%s", value);
    char *colon = strchr(copy, ':');
    if (colon)
        *colon = '\0';
    if (parse_one_size(copy, files, &r->min, err, len))
        return -1;
    r->max = r->min;
    r->max_is_memory = 0;
    if (!colon)
        return 0;
    if (!strcmp(colon + 1, "memory")) {
        if (!files) {
            snprintf(err, len, "'memory' applies to --file-sizes only");
            return -1;
        }
        r->max_is_memory = 1;
        return 0;
    }
    if (parse_one_size(colon + 1, files, &r->max, err, len))
        return -1;
    if (r->max < r->min) {
        char a[32], b[32];
        sbk_format_size(r->min, a, sizeof a);
        sbk_format_size(r->max, b, sizeof b);
        snprintf(err, len, "the largest size %s is below the smallest %s", b, a);
        return -1;
    }
    return 0;
}

static int parse_file_sizes(const char *value, void *field, char *err, size_t len)
{
    return parse_range(value, field, 1, err, len);
}

static int parse_record_sizes(const char *value, void *field, char *err, size_t len)
{
    return parse_range(value, field, 0, err, len);
}

static int parse_patterns(const char *value, void *field, char *err, size_t len)
{
    unsigned mask = 0;
    char *copy = strdup(value), *rest = copy, *tok;
    while ((tok = strsep(&rest, ",")) != NULL) {
        int found = -1;
        for (int p = 0; p < P_N; p++)
            if (!strcmp(tok, pattern_names[p]))
                found = p;
        if (found < 0) {
            snprintf(err, len,
                     "unknown pattern '%s': expected a comma list of write, rewrite, "
                     "read, reread, random-read, random-write, backward-read, record-rewrite, "
                     "stride-read, random-mix",
                     tok);
            free(copy);
            return -1;
        }
        mask |= 1u << found;
    }
    free(copy);
    *(pattern_set *)field = (pattern_set){mask, 1};
    return 0;
}

#define OPT(f) offsetof(iz_opts, f)
/* An option table keeps several fields a line. */
/* clang-format off */
static const sbk_option iz_options[] = {
    {.name = "file-sizes", .kind = SBK_OPT_CUSTOM, .offset = OPT(files), .arg = "MIN[:MAX]",
     .help = "file sizes, powers of two, doubling from MIN to MAX; MAX 'memory':\n"
             "up to the first size whose files (one per rank) pass the memory\n"
             "of rank 0's node, as seed 004's -g 12G [64k:512m, IOzone -a]",
     .parse = parse_file_sizes},
    {.name = "record-sizes", .kind = SBK_OPT_CUSTOM, .offset = OPT(records), .arg = "MIN[:MAX]",
     .help = "record sizes, powers of two, doubling; records larger than a file\n"
             "are skipped [4k:16m, IOzone -a]", .parse = parse_record_sizes},
    {.name = "all-records", .kind = SBK_OPT_FLAG, .offset = OPT(all_records),
     .help = "keep records below 64 KiB for files over 16 MiB, which IOzone\n"
             "skips unless -z"},
    {.name = "patterns", .kind = SBK_OPT_CUSTOM, .offset = OPT(patterns), .arg = "LIST",
     .help = "comma list of write, rewrite, read, reread, random-read,\n"
             "random-write, backward-read, record-rewrite, stride-read,\n"
             "random-mix; write is needed (it makes the file); always run in\n"
             "that order [all; random-mix with 2 ranks or more]",
     .parse = parse_patterns},
    {.name = "stride", .kind = SBK_OPT_LONG, .offset = OPT(stride), .arg = "N",
     .help = "stride read: records from one read to the next (IOzone -j) [17]", .lo = 1,
     .hi = 1L << 30},
    {.name = "mix-read-percent", .kind = SBK_OPT_LONG, .offset = OPT(mix_read_percent),
     .arg = "P", .help = "random mix: the share of ranks that read, the first ones; the\n"
                         "others write (IOzone -+p) [50]", .lo = 1, .hi = 100},
    {.name = "close-inside", .kind = SBK_OPT_FLAG, .offset = OPT(close_inside),
     .help = "time the close too (IOzone -c); --fsync inside is IOzone -e"},
    {.name = "no-stonewall", .kind = SBK_OPT_FLAG, .offset = OPT(no_stonewall),
     .help = "throughput mode: every rank times its whole pass (IOzone -x)"},
    {.name = "record-offsets", .kind = SBK_OPT_STRING, .offset = OPT(record_offsets),
     .arg = "PREFIX", .help = "write every request each rank issues to PREFIX.<rank>: one\n"
                              "line 'rep phase op offset length timed' per request"},
    {0},
};
/* clang-format on */

static void iz_defaults(void *p)
{
    iz_opts *o = p;
    o->files = (size_range){64ULL << 10, 512ULL << 20, 0};
    o->records = (size_range){4ULL << 10, 16ULL << 20, 0};
    o->patterns = (pattern_set){(1u << P_N) - 1, 0};
    o->stride = 17;
    o->mix_read_percent = 50;
}

/* ---- the matrix ---- */
typedef struct {
    uint64_t file, record;
} iz_point;

typedef struct {
    uint64_t *files, *records;
    int nfiles, nrecords;
    iz_point *points, *skipped;
    const char **skip_reason;
    int npoints, nskipped;
    unsigned patterns; /* those that run */
    int mix_dropped;   /* random-mix left out: one rank */
    uint64_t memory;   /* of rank 0's node, for 'memory' */
} iz_matrix;

static const char *SKIP_LARGER = "record larger than the file";
static const char *SKIP_SMALL = "IOzone skips records below 64 KiB for files over 16 MiB "
                                "(--all-records keeps them)";

/* Every rank computes the same matrix from rank 0's node memory and ranks per node. */
static void matrix_of(const iz_opts *o, uint64_t memory, int ranks_per_node, int nranks,
                      iz_matrix *m)
{
    memset(m, 0, sizeof *m);
    m->memory = memory;
    uint64_t max_file = o->files.max;
    if (o->files.max_is_memory) {
        max_file = o->files.min;
        while (max_file * (uint64_t)ranks_per_node <= memory && max_file < (1ULL << 44))
            max_file *= 2;
    }
    for (uint64_t f = o->files.min; f <= max_file; f *= 2)
        m->nfiles++;
    for (uint64_t r = o->records.min; r <= o->records.max; r *= 2)
        m->nrecords++;
    m->files = calloc((size_t)m->nfiles, sizeof *m->files);
    m->records = calloc((size_t)m->nrecords, sizeof *m->records);
    m->points = calloc((size_t)(m->nfiles * m->nrecords), sizeof *m->points);
    m->skipped = calloc((size_t)(m->nfiles * m->nrecords), sizeof *m->skipped);
    m->skip_reason = calloc((size_t)(m->nfiles * m->nrecords), sizeof *m->skip_reason);
    int i = 0;
    for (uint64_t f = o->files.min; f <= max_file; f *= 2)
        m->files[i++] = f;
    i = 0;
    for (uint64_t r = o->records.min; r <= o->records.max; r *= 2)
        m->records[i++] = r;
    for (int fi = 0; fi < m->nfiles; fi++)
        for (int ri = 0; ri < m->nrecords; ri++) {
            iz_point pt = {m->files[fi], m->records[ri]};
            const char *why =
                pt.record > pt.file ? SKIP_LARGER
                : !o->all_records && pt.file > LARGE_FILE_OVER && pt.record < SMALL_RECORD_LIMIT
                    ? SKIP_SMALL
                    : NULL;
            if (why) {
                m->skip_reason[m->nskipped] = why;
                m->skipped[m->nskipped++] = pt;
            } else {
                m->points[m->npoints++] = pt;
            }
        }
    m->patterns = o->patterns.mask;
    if (nranks < 2 && (m->patterns & (1u << P_RANDOM_MIX))) {
        m->patterns &= ~(1u << P_RANDOM_MIX);
        m->mix_dropped = 1;
    }
}

static void matrix_free(iz_matrix *m)
{
    free(m->files);
    free(m->records);
    free(m->points);
    free(m->skipped);
    free(m->skip_reason);
    memset(m, 0, sizeof *m);
}

/* A matrix without points: which rule left it empty (0 when it has points). */
static int empty_matrix(const iz_matrix *m, const iz_opts *o, char *err, size_t len)
{
    if (m->npoints > 0)
        return 0;
    char a[32], b[32];
    sbk_format_size(o->records.min, a, sizeof a);
    sbk_format_size(m->files[m->nfiles - 1], b, sizeof b);
    if (o->records.min > m->files[m->nfiles - 1])
        snprintf(err, len,
                 "--record-sizes: the smallest record, %s, is larger than the "
                 "largest file, %s: no point of the matrix is left",
                 a, b);
    else
        snprintf(err, len,
                 "--record-sizes: every record is below 64 KiB and every file over "
                 "16 MiB, which IOzone skips: no point of the matrix is left (--all-records "
                 "keeps them)");
    return 1;
}

static int iz_check(const sbk_config *c, const void *p, char *err, size_t len)
{
    const iz_opts *o = p;
    (void)c;
    if (!(o->patterns.mask & (1u << P_WRITE))) {
        snprintf(err, len,
                 "--patterns: write must be among them: it makes the file the "
                 "other patterns use (IOzone's -i 0)");
    } else if (!o->files.max_is_memory) {
        /* Explicit sizes: an empty matrix is known before MPI starts; with 'memory' the
         * set-up finds it. */
        iz_matrix m;
        matrix_of(o, 0, 1, 1, &m);
        empty_matrix(&m, o, err, len);
        matrix_free(&m);
    }
    return err[0] != '\0';
}

/* The largest CPU cache of this node (bytes, 0 if unknown): the first cache threshold
 * of IOzone's surfaces; the node's memory is the second. */
static uint64_t cpu_cache_bytes(void)
{
    uint64_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96], text[64] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(text, sizeof text, f)) {
            char *end = NULL;
            unsigned long long v = strtoull(text, &end, 10);
            if (end && (*end == 'K' || *end == 'k'))
                v <<= 10;
            else if (end && (*end == 'M' || *end == 'm'))
                v <<= 20;
            if (v > best)
                best = v;
        }
        fclose(f);
    }
    return best;
}

/* ---- state ---- */
enum { F_TIME, F_DATA, F_FSYNC, F_CLOSE, F_BYTES, F_XFERS, F_BYTES_ALL, F_READER, F_N };
static const sbk_field iz_fields[F_N] = {
    {"time", SBK_TIMER},  {"data", SBK_TIMER},  {"fsync", SBK_TIMER},     {"close", SBK_TIMER},
    {"bytes", SBK_TOTAL}, {"xfers", SBK_TOTAL}, {"bytes_all", SBK_TOTAL}, {"reader", SBK_COUNT}};

#define STOP_TAG 4242
#define POLL_INTERVAL_S 100e-6

typedef struct {
    const iz_opts *o;
    iz_matrix m;
    int throughput; /* several ranks: IOzone's throughput mode */
    int stonewall;  /* ...with the stonewall at the first finisher */
    int nreaders;   /* random mix */
    size_t align;
    uint64_t *buf;
    uint64_t *order; /* random permutation of the current point's records */
    uint64_t order_n;
    sbk_pattern pat;
    uint64_t next_gen;     /* generations of the data: one per writing pass */
    uint64_t gen_all;      /* of every record of this rank's file ... */
    uint64_t gen_rec0;     /* ... and of record 0 (record re-write changes it alone) */
    const sbk_backend *be; /* IOzone's own calls are POSIX read/write: the posix back end */
    FILE *log;
    uint64_t *log_off; /* this phase's requests: offset, and flags in the top bits */
    size_t log_n, log_cap;
    char name[64];
    char path[4200];
} iz;

static void file_name(const sbk_ctx *ctx, char *out, size_t len)
{
    snprintf(out, len, "iozone.%d", ctx->rank);
}

static int is_reader(const iz *z, const sbk_ctx *ctx) { return ctx->rank < z->nreaders; }

static int readers_of(const iz_opts *o, int nranks)
{
    return (int)(o->mix_read_percent * nranks / 100); /* IOzone: pct_read * children / 100 */
}

static void iz_config_json(const sbk_ctx *ctx, sbk_json *j)
{
    const iz_opts *o = ctx->opts;
    iz_matrix m;
    matrix_of(o, sbk_node_memory(), ctx->ranks_per_node, ctx->size, &m);
    jw_arr(j, "file_sizes");
    for (int i = 0; i < m.nfiles; i++)
        jw_uint(j, NULL, m.files[i]);
    jw_end_arr(j);
    jw_arr(j, "record_sizes");
    for (int i = 0; i < m.nrecords; i++)
        jw_uint(j, NULL, m.records[i]);
    jw_end_arr(j);
    jw_str(j, "file_size_rule", o->files.max_is_memory ? "memory" : "explicit");
    jw_bool(j, "skip_small_records", !o->all_records);
    jw_arr(j, "patterns");
    for (int p = 0; p < P_N; p++)
        if (m.patterns & (1u << p))
            jw_str(j, NULL, pattern_names[p]);
    jw_end_arr(j);
    jw_arr(j, "patterns_not_run");
    if (m.mix_dropped) {
        jw_obj(j, NULL);
        jw_str(j, "pattern", "random-mix");
        jw_str(j, "reason", "needs 2 ranks or more (IOzone's throughput mode)");
        jw_end_obj(j);
    }
    jw_end_arr(j);
    jw_int(j, "stride_records", o->stride);
    jw_int(j, "mix_read_percent", o->mix_read_percent);
    if (ctx->size > 1) {
        jw_int(j, "mix_readers", readers_of(o, ctx->size));
        jw_int(j, "mix_writers", ctx->size - readers_of(o, ctx->size));
    }
    jw_bool(j, "throughput_mode", ctx->size > 1);
    jw_str(j, "stonewall", ctx->size < 2 ? "none" : o->no_stonewall ? "off" : "first-finisher");
    jw_bool(j, "fsync_timed", ctx->cfg->fsync == FSYNC_INSIDE);
    jw_bool(j, "close_timed", o->close_inside);
    jw_uint(j, "node_memory_bytes", m.memory);
    jw_uint(j, "cpu_cache_bytes", cpu_cache_bytes());
    jw_str(j, "record_offsets", o->record_offsets);
    jw_obj(j, "matrix");
    jw_int(j, "npoints", m.npoints);
    jw_arr(j, "points");
    for (int i = 0; i < m.npoints; i++) {
        jw_obj(j, NULL);
        jw_uint(j, "file_size", m.points[i].file);
        jw_uint(j, "record_size", m.points[i].record);
        jw_end_obj(j);
    }
    jw_end_arr(j);
    jw_arr(j, "skipped");
    for (int i = 0; i < m.nskipped; i++) {
        jw_obj(j, NULL);
        jw_uint(j, "file_size", m.skipped[i].file);
        jw_uint(j, "record_size", m.skipped[i].record);
        jw_str(j, "reason", m.skip_reason[i]);
        jw_end_obj(j);
    }
    jw_end_arr(j);
    jw_end_obj(j);
    matrix_free(&m);
}

static void iz_describe(const sbk_ctx *ctx, char *buf, size_t len)
{
    const iz *z = ctx->state;
    char lo[32] = "?", hi[32] = "?", rlo[32] = "?", rhi[32] = "?";
    if (z && z->m.nfiles) {
        sbk_format_size(z->m.files[0], lo, sizeof lo);
        sbk_format_size(z->m.files[z->m.nfiles - 1], hi, sizeof hi);
        sbk_format_size(z->m.records[0], rlo, sizeof rlo);
        sbk_format_size(z->m.records[z->m.nrecords - 1], rhi, sizeof rhi);
    }
    snprintf(buf, len, "files %s-%s x records %s-%s (%d points)%s, %s (%s)", lo, hi, rlo, rhi,
             z ? z->m.npoints : 0,
             ctx->size > 1 ? (z && z->stonewall ? ", throughput mode, stonewall at the first "
                                                  "finisher"
                                                : ", throughput mode")
                           : "",
             ctx->targets[0].path, ctx->targets[0].fstype);
}

/* Fails early, before hours of smaller points, when the largest files cannot fit. */
static void check_space(sbk_ctx *ctx, const iz *z)
{
    const sbk_target *t = &ctx->targets[0];
    int checker = t->shared ? ctx->rank == 0 : ctx->node_rank == 0;
    if (!checker || z->m.nfiles == 0)
        return;
    uint64_t largest = z->m.files[z->m.nfiles - 1];
    uint64_t files = (uint64_t)(t->shared ? ctx->size : ctx->ranks_per_node);
    struct statvfs sv;
    if (fstatvfs(t->fd, &sv) != 0)
        return;
    uint64_t avail = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    if (largest * files > avail) {
        char need[32], have[32], each[32];
        sbk_format_size(largest * files, need, sizeof need);
        sbk_format_size(largest, each, sizeof each);
        snprintf(have, sizeof have, "%.1f GiB", (double)avail / (1u << 30));
        sbk_fail(ctx, SBK_ENOSPACE, ENOSPC, "setup", 0,
                 "the largest files need %s (%llu x %s) on %s, which has %s free: lower the "
                 "largest --file-sizes",
                 need, (unsigned long long)files, each, t->path, have);
    }
}

static int iz_setup(sbk_ctx *ctx)
{
    const iz_opts *o = ctx->opts;
    iz *z = calloc(1, sizeof *z);
    ctx->state = z;
    z->o = o;
    z->be = sbk_find_backend("posix");
    /* Rank 0's node decides 'memory', so every rank plans the same matrix. */
    uint64_t memory = sbk_node_memory();
    int rpn = ctx->ranks_per_node;
    MPI_Bcast(&memory, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Bcast(&rpn, 1, MPI_INT, 0, MPI_COMM_WORLD);
    matrix_of(o, memory, rpn, ctx->size, &z->m);
    z->throughput = ctx->size > 1;
    z->stonewall = z->throughput && !o->no_stonewall;
    z->nreaders = readers_of(o, ctx->size);
    file_name(ctx, z->name, sizeof z->name);
    sbk_path(ctx, 0, z->path, sizeof z->path, z->name);

    if (ctx->size < 2 && o->patterns.given && (o->patterns.mask & (1u << P_RANDOM_MIX))) {
        if (ctx->rank == 0)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--patterns random-mix needs 2 ranks "
                     "or more (IOzone's throughput mode: some ranks read, the others write); "
                     "got 1");
        return sbk_agree(ctx);
    }
    char why[300] = "";
    if (empty_matrix(&z->m, o, why, sizeof why)) {
        if (ctx->rank == 0)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0, "%s", why);
        return sbk_agree(ctx);
    }
    z->align = ctx->targets[0].dio_align > 4096 ? ctx->targets[0].dio_align : 4096;
    if (ctx->cfg->direct && z->m.records[0] % ctx->targets[0].dio_align) {
        char a[32];
        sbk_format_size(z->m.records[0], a, sizeof a);
        if (ctx->rank == 0)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--direct needs record sizes that are "
                     "multiples of %zu bytes, the direct-I/O alignment of %s (got %s)",
                     ctx->targets[0].dio_align, ctx->targets[0].path, a);
        return sbk_agree(ctx);
    }
    check_space(ctx, z);
    int code = sbk_agree(ctx);
    if (code)
        return code;

    uint64_t largest_record = z->m.records[z->m.nrecords - 1];
    z->buf = sbk_alloc_aligned(z->align, (size_t)largest_record);
    if (!z->buf)
        sbk_fail(ctx, SBK_EINTERNAL, ENOMEM, "setup", 0,
                 "cannot allocate a %llu-byte record "
                 "buffer",
                 (unsigned long long)largest_record);
    sbk_pattern_init(&z->pat, (uint64_t)ctx->cfg->seed, 64);
    if (o->record_offsets && ctx->error.code == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s.%d", o->record_offsets, ctx->rank);
        z->log = fopen(path, "w");
        if (!z->log)
            sbk_fail(ctx, SBK_EUSAGE, errno, "setup", 0, "--record-offsets %s: %s", path,
                     strerror(errno));
    }

    for (int i = 0; i < z->m.npoints; i++)
        for (int p = 0; p < P_N; p++) {
            if (!(z->m.patterns & (1u << p)))
                continue;
            sbk_phase ph = {
                .kind = p,
                .fields = iz_fields,
                .nfields = F_N,
                .flags = SBK_PH_REPORT | SBK_PH_DATA |
                         (first_read[p] ? (unsigned)SBK_PH_DEFEAT_CACHE : 0u) |
                         (z->throughput ? (unsigned)SBK_PH_STONEWALL : 0u),
                .arg = {(long long)z->m.points[i].file, (long long)z->m.points[i].record, i}};
            snprintf(ph.name, sizeof ph.name, "%s_f%llu_r%llu", pattern_keys[p],
                     (unsigned long long)z->m.points[i].file,
                     (unsigned long long)z->m.points[i].record);
            sbk_plan_add(ctx, &ph);
        }
    return sbk_agree(ctx);
}

/* ---- access orders ---- */
/* Fisher-Yates over the records (IOzone precomputes the same kind of shuffle). */
static int shuffle(iz *z, uint64_t n, uint64_t seed)
{
    if (z->order_n != n) {
        free(z->order);
        z->order = malloc((size_t)n * sizeof *z->order);
        z->order_n = z->order ? n : 0;
        if (!z->order)
            return ENOMEM;
    }
    for (uint64_t i = 0; i < n; i++)
        z->order[i] = i;
    uint64_t state = seed;
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t k = sbk_splitmix_next(&state) % (i + 1);
        uint64_t t = z->order[i];
        z->order[i] = z->order[k];
        z->order[k] = t;
    }
    return 0;
}

/* The record a pattern touches at step k of n.  Stride read walks columns: start c
 * reads c, c + stride, c + 2 stride ... then start c + 1, so every record once. */
typedef struct {
    int pattern;
    uint64_t n, stride, column, next;
    const uint64_t *order;
} walk;

static uint64_t walk_next(walk *w, uint64_t k)
{
    switch (w->pattern) {
    case P_RANDOM_READ:
    case P_RANDOM_WRITE:
    case P_RANDOM_MIX: return w->order[k];
    case P_BACKWARD_READ: return w->n - 1 - k;
    case P_RECORD_REWRITE: return 0;
    case P_STRIDE_READ: {
        if (w->next >= w->n) {
            w->column++;
            w->next = w->column;
        }
        uint64_t r = w->next;
        w->next += w->stride;
        return r;
    }
    default: return k;
    }
}

/* ---- the stonewall: the first rank to finish a pass tells the others ---- */
typedef struct {
    int active;
    int got;  /* a stop arrived */
    int sent; /* this rank finished first (or with the first) and told */
    int dummy_in, dummy_out;
    MPI_Request recv;
    MPI_Request *sends;
} stonewall;

static void sw_begin(stonewall *s, int active)
{
    memset(s, 0, sizeof *s);
    s->active = active;
    if (active)
        MPI_Irecv(&s->dummy_in, 1, MPI_INT, MPI_ANY_SOURCE, STOP_TAG, MPI_COMM_WORLD, &s->recv);
}

static int sw_poll(stonewall *s)
{
    if (s->active && !s->got) {
        int flag = 0;
        MPI_Test(&s->recv, &flag, MPI_STATUS_IGNORE);
        s->got = flag;
    }
    return s->got;
}

static void sw_finished(sbk_ctx *ctx, stonewall *s)
{
    if (!s->active || s->got || s->sent)
        return;
    s->sent = 1;
    s->sends = calloc((size_t)ctx->size, sizeof *s->sends);
    for (int r = 0; r < ctx->size; r++)
        s->sends[r] = MPI_REQUEST_NULL;
    for (int r = 0; r < ctx->size; r++)
        if (r != ctx->rank)
            MPI_Isend(&s->dummy_out, 1, MPI_INT, r, STOP_TAG, MPI_COMM_WORLD, &s->sends[r]);
}

/* Collective: every stop message of the phase is received before the next begins. */
static void sw_end(sbk_ctx *ctx, stonewall *s)
{
    if (!s->active)
        return;
    int senders = 0;
    MPI_Allreduce(&s->sent, &senders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int expected = senders - s->sent;
    if (expected == 0) {
        MPI_Cancel(&s->recv);
        MPI_Wait(&s->recv, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&s->recv, MPI_STATUS_IGNORE);
        for (int i = 1; i < expected; i++)
            MPI_Recv(&s->dummy_in, 1, MPI_INT, MPI_ANY_SOURCE, STOP_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    }
    if (s->sends) {
        /* one MPI_Wait each: MPICH's MPI_Waitall prototype trips gcc 12's
         * -Wstringop-overflow with MPI_STATUSES_IGNORE */
        for (int r = 0; r < ctx->size; r++)
            MPI_Wait(&s->sends[r], MPI_STATUS_IGNORE);
        free(s->sends);
    }
}

/* ---- one phase ---- */
static void log_request(iz *z, uint64_t offset, int timed)
{
    if (z->log_n == z->log_cap) {
        z->log_cap = z->log_cap ? 2 * z->log_cap : 1024;
        z->log_off = realloc(z->log_off, z->log_cap * sizeof *z->log_off);
    }
    z->log_off[z->log_n++] = offset | ((uint64_t)!timed << 63);
}

static void flush_log(sbk_ctx *ctx, iz *z, const sbk_phase *ph, int write, uint64_t record)
{
    for (size_t i = 0; i < z->log_n; i++)
        fprintf(z->log, "%d %s %c %llu %llu %d\n", ctx->rep, ph->name, write ? 'w' : 'r',
                (unsigned long long)(z->log_off[i] & ~(1ULL << 63)), (unsigned long long)record,
                !(z->log_off[i] >> 63));
    z->log_n = 0;
}

static int open_file(sbk_ctx *ctx, iz *z, const sbk_phase *ph, int write, int fresh, sbk_file *f)
{
    /* IOzone's write test writes a new file: it truncates and unlinks the old one and
     * creates the file again before it opens it, untimed.  The file is this rank's own,
     * in the run directory the kernel made. */
    if (fresh && unlinkat(ctx->targets[0].fd, z->name, 0) != 0 && errno != ENOENT) {
        int err = errno;
        sbk_fail(ctx, sbk_code_for_errno(err), err, ph->name, 0, "unlink %s: %s", z->path,
                 strerror(err));
        return err;
    }
    int err = z->be->open(ctx, z->name, write ? SBK_OPEN_CREATE | SBK_OPEN_WRITE : SBK_OPEN_READ, 0,
                          0, f);
    if (err == EINVAL && ctx->cfg->direct)
        sbk_fail(ctx, SBK_ENODIRECT, err, ph->name, 0,
                 "the file system at %s refuses O_DIRECT "
                 "(EINVAL); defeat the cache with --fadvise or --scan-file instead",
                 ctx->targets[0].path);
    else if (err)
        sbk_fail(ctx, sbk_code_for_errno(err), err, ph->name, 0, "open %s: %s", z->path,
                 strerror(err));
    return err;
}

static double timed_fsync(sbk_ctx *ctx, iz *z, const sbk_phase *ph, sbk_file *f, uint64_t bytes)
{
    double a = sbk_now();
    int err = z->be->sync(f);
    if (err) {
        sbk_fail(ctx, sbk_code_for_errno(err), err, ph->name, bytes, "fsync %s: %s", z->path,
                 strerror(err));
    }
    return sbk_now() - a;
}

static double timed_close(sbk_ctx *ctx, iz *z, const sbk_phase *ph, sbk_file *f, uint64_t bytes)
{
    double a = sbk_now();
    int err = z->be->close(f);
    if (err)
        sbk_fail(ctx, sbk_code_for_errno(err), err, ph->name, bytes, "close %s: %s", z->path,
                 strerror(err));
    return sbk_now() - a;
}

/* One rank's pass of one pattern over its file.  `time` runs from after the open to the
 * end of the pass (or the stonewall), with the fsync and close where they are timed,
 * less the time spent filling and checking the data pattern. */
/* The random patterns' record order: the same in every repetition, as IOzone's fixed
 * seed; --seed changes it. */
static void random_order(sbk_ctx *ctx, iz *z, const sbk_phase *ph, uint64_t n)
{
    int pattern = ph->kind;
    if (pattern != P_RANDOM_READ && pattern != P_RANDOM_WRITE && pattern != P_RANDOM_MIX)
        return;
    uint64_t seed = (uint64_t)ctx->cfg->seed * 0x100000001B3ULL ^ ((uint64_t)ctx->rank << 40) ^
                    ((uint64_t)ph->arg[2] << 8) ^ (uint64_t)pattern;
    if (shuffle(z, n, seed))
        sbk_fail(ctx, SBK_EINTERNAL, ENOMEM, ph->name, 0,
                 "cannot allocate the order of %llu records", (unsigned long long)n);
}

static void xfer_failed(sbk_ctx *ctx, const iz *z, const sbk_phase *ph, int write, uint64_t offset,
                        uint64_t bytes, int err)
{
    if (err == EINVAL && ctx->cfg->direct)
        sbk_fail(ctx, SBK_ENODIRECT, err, ph->name, bytes,
                 "the file system at %s refuses O_DIRECT transfers (EINVAL)", ctx->targets[0].path);
    else
        sbk_fail(ctx, sbk_code_for_errno(err), err, ph->name, bytes, "%s %s at byte %llu: %s",
                 write ? "write" : "read", z->path, (unsigned long long)offset, strerror(err));
}

static void iz_run_phase(sbk_ctx *ctx, const sbk_phase *ph, sbk_rec *rec)
{
    iz *z = ctx->state;
    const sbk_config *c = ctx->cfg;
    int pattern = ph->kind;
    uint64_t file_size = (uint64_t)ph->arg[0], record = (uint64_t)ph->arg[1];
    uint64_t n = file_size / record, words = record / 8;
    int write = writes_data[pattern] || (pattern == P_RANDOM_MIX && !is_reader(z, ctx));
    rec->count[F_READER] = pattern == P_RANDOM_MIX && is_reader(z, ctx);

    /* What this pass writes, or what it must find. */
    uint64_t gen = write ? ++z->next_gen : 0;
    random_order(ctx, z, ph, n);
    walk w = {.pattern = pattern, .n = n, .stride = (uint64_t)z->o->stride, .order = z->order};

    sbk_file f = {.fd = -1};
    int opened = ctx->error.code == 0 && open_file(ctx, z, ph, write, pattern == P_WRITE, &f) == 0;
    stonewall sw;
    sw_begin(&sw, z->stonewall);

    int fsync_timed = write && c->fsync == FSYNC_INSIDE, close_timed = z->o->close_inside;
    double data = 0, fsync_s = 0, close_s = 0, measured = -1;
    uint64_t bytes = 0, timed_bytes = 0, xfers = 0;
    int filled = 0;
    double start = sbk_now(), last_poll = start;
    for (uint64_t k = 0; opened && k < n; k++) {
        uint64_t r = walk_next(&w, k);
        uint64_t offset = r * record;
        if (z->log)
            log_request(z, offset, measured < 0);
        if (write) {
            double a = sbk_now();
            /* The fill between stamps is the same in every record: stamp only after the
             * first, as long as nothing was read into the buffer since. */
            sbk_pattern_fill(&z->pat, z->buf, words, (uint64_t)ctx->rank, gen, offset / 8, filled);
            filled = 1;
            data += sbk_now() - a;
        }
        size_t moved = 0;
        int err = z->be->xfer(&f, write, z->buf, (size_t)record, offset, &moved);
        bytes += moved;
        if (measured < 0)
            timed_bytes += moved;
        if (err) {
            xfer_failed(ctx, z, ph, write, offset, bytes, err);
            break;
        }
        if (measured < 0)
            xfers++;
        if (!write && c->verify) {
            double a = sbk_now();
            uint64_t expect = r == 0 ? z->gen_rec0 : z->gen_all;
            sbk_verify_result v =
                sbk_pattern_check(&z->pat, z->buf, words, (uint64_t)ctx->rank, expect, offset / 8);
            sbk_rec_verify(rec, &v);
            data += sbk_now() - a;
        }
        /* No poll after the last record: a stop arriving then finds the pass done and
         * timed whole, so this rank counts as a finisher, not as stopped. */
        if (sw.active && measured < 0 && k + 1 < n && sbk_now() - last_poll >= POLL_INTERVAL_S) {
            last_poll = sbk_now();
            if (sw_poll(&sw)) {
                /* Stopped by another rank: this rank's figure is taken here, with the
                 * fsync and the close where they are timed (IOzone closes and reopens),
                 * and the pass goes on untimed so the file is whole afterwards. */
                if (fsync_timed)
                    fsync_s += timed_fsync(ctx, z, ph, &f, bytes);
                if (close_timed) {
                    close_s += timed_close(ctx, z, ph, &f, bytes);
                    opened = open_file(ctx, z, ph, write, 0, &f) == 0;
                }
                measured = sbk_now() - start - data;
                rec->stonewall_hit = 1;
            }
        }
    }
    if (measured < 0)
        sw_finished(ctx, &sw);
    double fsync_untimed = 0;
    if (opened && write && c->fsync != FSYNC_NONE) {
        double took = timed_fsync(ctx, z, ph, &f, bytes);
        fsync_s += took;
        if (!fsync_timed || measured >= 0)
            fsync_untimed = took; /* --fsync outside, or after this rank's stonewall */
    }
    if (opened && measured < 0 && close_timed) {
        close_s += timed_close(ctx, z, ph, &f, bytes);
        opened = 0;
    }
    if (measured < 0)
        measured = sbk_now() - start - data - fsync_untimed;
    if (opened)
        close_s += timed_close(ctx, z, ph, &f, bytes);
    sw_end(ctx, &sw);

    if (write) {
        z->gen_rec0 = gen;
        if (pattern != P_RECORD_REWRITE)
            z->gen_all = gen;
    }
    if (z->log) {
        flush_log(ctx, z, ph, write, record);
        fflush(z->log);
    }
    rec->time[F_TIME] += measured;
    rec->time[F_DATA] += data;
    rec->time[F_FSYNC] += fsync_s;
    rec->time[F_CLOSE] += close_s;
    rec->count[F_BYTES] += timed_bytes;
    rec->count[F_XFERS] += xfers;
    rec->count[F_BYTES_ALL] += bytes;
    ctx->phase_bytes = bytes;
}

static void iz_report_phase(sbk_ctx *ctx, const sbk_phase *ph, const sbk_gathered *g, sbk_json *j)
{
    const iz *z = ctx->state;
    int mix = ph->kind == P_RANDOM_MIX;
    double sum = 0, read_sum = 0, write_sum = 0, ops = 0, min_rate = INFINITY;
    uint64_t min_bytes = UINT64_MAX;
    for (int r = 0; r < g->nranks; r++) {
        double t = g->time[F_TIME][r];
        double rate = t > 0 ? (double)g->count[F_BYTES][r] / t : NAN;
        sum += rate;
        ops += t > 0 ? (double)g->count[F_XFERS][r] / t : NAN;
        if (g->count[F_READER][r])
            read_sum += rate;
        else
            write_sum += rate;
        if (rate < min_rate)
            min_rate = rate;
        if (g->count[F_BYTES][r] < min_bytes)
            min_bytes = g->count[F_BYTES][r];
    }
    jw_str(j, "pattern", pattern_names[ph->kind]);
    jw_uint(j, "file_size", (uint64_t)ph->arg[0]);
    jw_uint(j, "record_size", (uint64_t)ph->arg[1]);
    jw_uint(j, "records_per_rank", (uint64_t)(ph->arg[0] / ph->arg[1]));
    jw_uint(j, "min_bytes_rank", min_bytes == UINT64_MAX ? 0 : min_bytes);
    sbk_figure(ctx, j, ph, "throughput_Bps", sum, SBK_UNIT_BPS);
    sbk_figure(ctx, j, ph, "throughput_min_rank_Bps", isfinite(min_rate) ? min_rate : NAN,
               SBK_UNIT_BPS);
    sbk_figure(ctx, j, ph, "ops_per_s", ops, SBK_UNIT_OPS);
    if (mix) {
        jw_int(j, "readers", z->nreaders);
        jw_int(j, "writers", g->nranks - z->nreaders);
        sbk_figure(ctx, j, ph, "read_throughput_Bps", z->nreaders ? read_sum : NAN, SBK_UNIT_BPS);
        sbk_figure(ctx, j, ph, "write_throughput_Bps", g->nranks > z->nreaders ? write_sum : NAN,
                   SBK_UNIT_BPS);
    }
}

static int iz_written_file(const sbk_ctx *ctx, int index, int *target, char *name, size_t len)
{
    if (index > 0)
        return -1;
    *target = 0;
    file_name(ctx, name, len);
    return 0;
}

static void iz_teardown(sbk_ctx *ctx, int code)
{
    (void)code;
    iz *z = ctx->state;
    if (!z)
        return;
    if (!ctx->cfg->keep && ctx->targets[0].fd >= 0)
        unlinkat(ctx->targets[0].fd, z->name, 0);
    if (z->log)
        fclose(z->log);
    matrix_free(&z->m);
    free(z->log_off);
    free(z->order);
    free(z->buf);
    free(z);
    ctx->state = NULL;
}

static const sbk_mode iozone_mode = {
    .name = "iozone",
    .about = "seed 004's IOzone: write, re-write, read, re-read, random read/write,\n"
             "backward read, record re-write, stride read, random mix over a file-size\n"
             "x record-size matrix (IOzone -a); several ranks: throughput mode",
    .features = SBK_F_READS,
    .options = iz_options,
    .opts_size = sizeof(iz_opts),
    .defaults = iz_defaults,
    .check = iz_check,
    .config_json = iz_config_json,
    .describe = iz_describe,
    .setup = iz_setup,
    .run_phase = iz_run_phase,
    .report_phase = iz_report_phase,
    .written_file = iz_written_file,
    .teardown = iz_teardown,
};
SBK_REGISTER_MODE(iozone_mode)
