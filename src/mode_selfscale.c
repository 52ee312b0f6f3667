/* selfscale mode: one or more points of seed 003's self-scaling workload (Chen and
 * Patterson): uniqueBytes, sizeMean, readFrac, seqFrac, processNum.
 *
 * Every node keeps one data file; the ranks of a node share it.  At setup the file is
 * written once with the verification pattern (untimed, then synced and dropped from the
 * page cache, so every run starts from the same cold cache).  Each point is a phase:
 * the first processNum ranks (spread over the nodes) issue synchronous requests one
 * after another, for a warm-up and then a timed window (or a fixed number of requests):
 *   - a request's size is uniform over the multiples of the unit (512 bytes, or the
 *     direct-I/O alignment with --direct) from sizeMean - d to sizeMean + d, where
 *     d = spread x sizeMean rounded down to a unit: the mean is sizeMean;
 *   - it is a read with probability readFrac, else a write;
 *   - it continues where the rank's previous request ended with probability seqFrac
 *     (wrapping to 0 at uniqueBytes), else it starts at a unit-aligned offset drawn
 *     uniformly so that it ends within the first uniqueBytes of the file.
 * The request stream of a rank is a function of --seed, the point, the rank and the
 * repetition only, so a run is reproducible from its seed.  The page-cache residency
 * of the footprint (the first uniqueBytes of the node's file) is measured before and
 * after each point: the cache state is part of the workload, never defeated.  Writes
 * store the pattern of their offset, so every sampled read verifies whatever order
 * the writes came in.  The search over points (focal values, sweeps, prediction) is
 * the harness's (scratchbench/selfscale.py); --keep and --existing let it keep the
 * data between launches, and --discard removes it at the end.  With --append, a
 * write-only sequential point writes a new file of each rank instead (a job's output
 * grows its file: on ext4 a 4 KiB request extending a file costs twice one rewriting a
 * cached page), emptied whenever it reaches uniqueBytes, outside the window.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kernel.h"

#define SS_UNIT 512u        /* offsets and sizes are multiples of this (buffered I/O) */
#define SS_VERIFY_EVERY 16u /* every 16th read of a rank is verified (outside the timers) */
/* The stream reads the clock about once a millisecond of requests, at most every 64th
 * request: a clock read (36 ns here) every request was a twentieth of a cached 1 KiB
 * read's time, charged to the file system. */
#define SS_CLOCK_SPAN_S 1e-3
#define SS_CLOCK_STRIDE_MAX 64u
#define SS_PREPARE_BLOCK (4u << 20)
#define SS_PREPARE_FLUSH (256ull << 20)

typedef struct {
    uint64_t unique_bytes, size_mean;
    double read_frac, seq_frac;
    long process_num;
} ss_point;

typedef struct {
    int n;
    ss_point *v;
} ss_points;

typedef struct {
    ss_points points;
    double duration, warmup, spread;
    long requests;
    uint64_t prepare, prime_limit;
    int discard, progress, prime, append;
} ss_opts;

/* --point U:S:R:Q:P, e.g. 1g:64k:0.5:0.25:2 */
static int parse_point(const char *value, void *field, char *err, size_t len)
{
    ss_points *pts = field;
    ss_point p = {0};
    char *copy = strdup(value), *rest = copy, *tok[6] = {0};
    int n = 0;
    while (n < 6 && (tok[n] = strsep(&rest, ":")) != NULL)
        n++;
    char *end = NULL;
    int rc = -1;
    if (n != 5)
        snprintf(err, len,
                 "expected uniqueBytes:sizeMean:readFrac:seqFrac:processNum "
                 "(such as 1g:64k:0.5:0.5:2), got '%s'",
                 value);
    else if (sbk_parse_size(tok[0], &p.unique_bytes) || p.unique_bytes < SS_UNIT)
        snprintf(err, len,
                 "uniqueBytes '%s': expected a size of at least 512 bytes "
                 "(such as 64m, 2g)",
                 tok[0]);
    else if (sbk_parse_size(tok[1], &p.size_mean) || p.size_mean < SS_UNIT ||
             p.size_mean > (1ULL << 30))
        snprintf(err, len, "sizeMean '%s': expected a size from 512 bytes to 1 GiB", tok[1]);
    else if ((p.read_frac = strtod(tok[2], &end), !end || *end || end == tok[2]) ||
             !(p.read_frac >= 0.0 && p.read_frac <= 1.0))
        snprintf(err, len, "readFrac '%s': expected a fraction from 0 to 1", tok[2]);
    else if ((p.seq_frac = strtod(tok[3], &end), !end || *end || end == tok[3]) ||
             !(p.seq_frac >= 0.0 && p.seq_frac <= 1.0))
        snprintf(err, len, "seqFrac '%s': expected a fraction from 0 to 1", tok[3]);
    else if ((p.process_num = strtol(tok[4], &end, 10), !end || *end || end == tok[4]) ||
             p.process_num < 1 || p.process_num > (1L << 24))
        snprintf(err, len, "processNum '%s': expected an integer of at least 1", tok[4]);
    else
        rc = 0;
    free(copy);
    if (rc)
        return rc;
    ss_point *grown = realloc(pts->v, (size_t)(pts->n + 1) * sizeof *grown);
    if (!grown) {
        snprintf(err, len, "out of memory");
        return -1;
    }
    pts->v = grown;
    pts->v[pts->n++] = p;
    return 0;
}

#define OPT(f) offsetof(ss_opts, f)
/* An option table keeps several fields a line. */
/* clang-format off */
static const sbk_option ss_options[] = {
    {.name = "point", .kind = SBK_OPT_CUSTOM, .offset = OPT(points), .arg = "U:S:R:Q:P",
     .help = "a workload point, repeatable: uniqueBytes (bytes the workload\n"
             "touches per node), sizeMean (mean request size), readFrac,\n"
             "seqFrac, processNum (ranks issuing requests), e.g. 1g:64k:0.5:0.5:2",
     .parse = parse_point},
    {.name = "duration", .kind = SBK_OPT_DOUBLE, .offset = OPT(duration), .arg = "SEC",
     .help = "timed window of each point [2]", .lo = 0, .hi = 86400},
    {.name = "warmup", .kind = SBK_OPT_DOUBLE, .offset = OPT(warmup), .arg = "SEC",
     .help = "requests issued before the window, not counted [0.5]", .lo = 0, .hi = 3600},
    {.name = "requests", .kind = SBK_OPT_LONG, .offset = OPT(requests), .arg = "N",
     .help = "a fixed number of requests per active rank instead of --duration\n"
             "(the whole stream is then reproducible) [0 = use --duration]",
     .lo = 0, .hi = 1LL << 40},
    {.name = "size-spread", .kind = SBK_OPT_DOUBLE, .offset = OPT(spread), .arg = "F",
     .help = "request sizes are uniform within sizeMean x (1 +- F), in\n"
             "multiples of 512 bytes [0.5]", .lo = 0, .hi = 1},
    {.name = "prepare", .kind = SBK_OPT_SIZE, .offset = OPT(prepare), .arg = "SIZE",
     .help = "bytes of data written per node at setup (untimed), at least\n"
             "every point's uniqueBytes [the largest uniqueBytes]", .lo = 0, .hi = 1LL << 50},
    {.name = "discard", .kind = SBK_OPT_FLAG, .offset = OPT(discard),
     .help = "with --existing: remove the kept data and its run directory at\nthe end"},
    {.name = "prime", .kind = SBK_OPT_FLAG, .offset = OPT(prime),
     .help = "set each point's cache state first (untimed): the footprint's\n"
             "first --prime-limit bytes are read once when less than 90% of them\n"
             "is cached (the point starts in its steady cache state, not cold),\n"
             "the rest is dropped from the page cache (whatever the points before\n"
             "left there of it)"},
    {.name = "prime-limit", .kind = SBK_OPT_SIZE, .offset = OPT(prime_limit), .arg = "SIZE",
     .help = "the bytes of a footprint --prime keeps cached; the rest it drops\n"
             "[half the node's memory]", .lo = 0, .hi = 1LL << 50},
    {.name = "append", .kind = SBK_OPT_FLAG, .offset = OPT(append),
     .help = "write-only sequential points (readFrac 0, seqFrac 1) extend a new\n"
             "file of each rank, as a job writes its output, instead of\n"
             "rewriting the data; emptied at uniqueBytes outside the window"},
    {.name = "progress", .kind = SBK_OPT_FLAG, .offset = OPT(progress),
     .help = "one line per point on stderr as it completes"},
    {0},
};
/* clang-format on */

static void ss_defaults(void *p)
{
    *(ss_opts *)p = (ss_opts){.duration = 2.0, .warmup = 0.5, .spread = 0.5};
}

static uint64_t largest_unique(const ss_opts *o)
{
    uint64_t m = 0;
    for (int i = 0; i < o->points.n; i++)
        if (o->points.v[i].unique_bytes > m)
            m = o->points.v[i].unique_bytes;
    return m;
}

static uint64_t round_down(uint64_t v, uint64_t unit) { return v / unit * unit; }

/* A barrier that sleeps while it waits: ranks without requests in a point must not
 * spin in MPI's busy-polling barrier on the cores the active ranks need. */
static void idle_barrier(void)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done) {
            struct timespec pause = {0, 1000000}; /* 1 ms */
            nanosleep(&pause, NULL);
        }
    }
}

/* The sizes of a point: [lo, hi] in units, mean sizeMean rounded to a unit. */
static void size_range(const ss_point *p, double spread, uint64_t unit, uint64_t *lo, uint64_t *hi)
{
    uint64_t mean = (p->size_mean + unit / 2) / unit;
    if (mean < 1)
        mean = 1;
    uint64_t d = (uint64_t)(spread * (double)(mean * unit)) / unit;
    if (d >= mean)
        d = mean - 1;
    *lo = mean - d;
    *hi = mean + d;
}

/* Whether a point writes --append's new file rather than the data. */
static int appends(const ss_opts *o, const ss_point *p)
{
    return o->append && p->read_frac == 0.0 && p->seq_frac == 1.0;
}

static int ss_check(const sbk_config *c, const void *p, char *err, size_t len)
{
    const ss_opts *o = p;
    if (o->points.n == 0 && !(c->existing && o->discard))
        snprintf(err, len,
                 "--point is required: at least one workload point "
                 "uniqueBytes:sizeMean:readFrac:seqFrac:processNum");
    else if (!(o->duration > 0) && o->requests == 0)
        snprintf(err, len, "--duration must be more than 0 seconds (or give --requests N)");
    else if (!(o->spread < 1.0))
        snprintf(err, len, "--size-spread must be below 1 (sizes stay positive), got %g",
                 o->spread);
    else if (o->prime_limit && !o->prime)
        snprintf(err, len, "--prime-limit needs --prime: it bounds what --prime reads");
    else if (o->discard && !c->existing)
        snprintf(err, len, "--discard needs --existing: it removes the data a --keep run kept");
    else if (o->prepare && c->existing)
        snprintf(err, len,
                 "--prepare and --existing exclude each other: the kept data is "
                 "already written");
    else if (o->prepare && o->prepare < largest_unique(o))
        snprintf(err, len,
                 "--prepare %llu bytes is less than the largest uniqueBytes %llu: "
                 "the workload would read data never written",
                 (unsigned long long)o->prepare, (unsigned long long)largest_unique(o));
    else if (c->fadvise || c->scan_file)
        snprintf(err, len,
                 "--fadvise and --scan-file do not apply to selfscale: the page "
                 "cache is part of its workload (uniqueBytes)");
    int appending = 0;
    for (int i = 0; i < o->points.n; i++)
        appending |= appends(o, &o->points.v[i]);
    if (!err[0] && o->append && !appending)
        snprintf(err, len,
                 "--append: no --point is write-only and sequential (readFrac 0, "
                 "seqFrac 1): nothing would append");
    for (int i = 0; i < o->points.n && !err[0]; i++) {
        uint64_t lo, hi;
        size_range(&o->points.v[i], o->spread, SS_UNIT, &lo, &hi);
        if (hi * SS_UNIT > o->points.v[i].unique_bytes)
            snprintf(err, len,
                     "--point %d: requests up to %llu bytes (sizeMean x (1 + "
                     "spread)) do not fit in uniqueBytes %llu",
                     i + 1, (unsigned long long)(hi * SS_UNIT),
                     (unsigned long long)o->points.v[i].unique_bytes);
    }
    return err[0] != '\0';
}

/* --prime's bound: a footprint's first bytes up to it are read to the cache, the rest
 * dropped from it */
static uint64_t prime_limit(const ss_opts *o)
{
    return o->prime_limit ? o->prime_limit : sbk_node_memory() / 2;
}

/* Per-rank fields of a point. */
enum {
    F_WINDOW,
    F_VERIFY,
    F_FSYNC,
    F_PRIME,
    F_BYTES,
    F_REQUESTS,
    F_READS,
    F_READ_BYTES,
    F_SEQ,
    F_ACTIVE,
    F_PRIMED,
    F_DROPPED,
    F_RES_FOUND,
    F_RES_BEFORE,
    F_RES_AFTER,
    F_FOOTPRINT,
    F_DIGEST,
    F_N
};
static const sbk_field ss_fields[F_N] = {
    {"window", SBK_TIMER},
    {"verify", SBK_TIMER},
    {"fsync", SBK_TIMER},
    {"prime", SBK_TIMER},
    {"bytes", SBK_TOTAL},
    {"requests", SBK_TOTAL},
    {"read_requests", SBK_TOTAL},
    {"read_bytes", SBK_TOTAL},
    {"sequential_requests", SBK_TOTAL},
    {"active", SBK_TOTAL},
    {"primed_bytes", SBK_TOTAL},
    {"dropped_bytes", SBK_TOTAL},
    {"resident_pages_found", SBK_COUNT},
    {"resident_pages_before", SBK_COUNT},
    {"resident_pages_after", SBK_COUNT},
    {"footprint_pages", SBK_COUNT},
    {"request_digest", SBK_COUNT},
};

typedef struct {
    const ss_opts *o;
    /* The measured requests go through the posix back end; its descriptor of the
     * node's data file also serves mincore and --prime, which are POSIX by nature. */
    const sbk_backend *be;
    sbk_file file;
    uint64_t unit;
    uint64_t data_bytes; /* bytes of data in each node's file */
    uint64_t *buf;
    size_t buf_bytes;
    sbk_pattern pat;
    int active_index; /* position among the ranks that issue requests */
} ss_state;

static void data_name(const sbk_ctx *ctx, char *out, size_t len)
{
    snprintf(out, len, "selfscale.data.%d", ctx->node_index);
}

/* ---- the request stream: splitmix64, a function of (seed, point, rank, rep) ---- */
typedef struct {
    uint64_t state;
} ss_rng;

static uint64_t rng_next(ss_rng *r) { return sbk_splitmix_next(&r->state); }

static double rng_unit(ss_rng *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }

/* Uniform in [0, n); n > 0.  The modulo bias is below 2^-40 for n < 2^24 units. */
static uint64_t rng_below(ss_rng *r, uint64_t n) { return rng_next(r) % n; }

static uint64_t stream_seed(const sbk_ctx *ctx, const ss_point *p, int rep)
{
    uint64_t h = sbk_mix64((uint64_t)ctx->cfg->seed);
    uint64_t parts[] = {p->unique_bytes,
                        p->size_mean,
                        (uint64_t)(p->read_frac * 1e9),
                        (uint64_t)(p->seq_frac * 1e9),
                        (uint64_t)p->process_num,
                        (uint64_t)ctx->rank,
                        (uint64_t)rep};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        h = sbk_mix64(h ^ parts[i]);
    return h;
}

/* ---- options in the report ---- */
static void ss_config_json(const sbk_ctx *ctx, sbk_json *j)
{
    const ss_opts *o = ctx->opts;
    jw_num(j, "duration_s", o->requests ? NAN : o->duration);
    jw_num(j, "warmup_s", o->warmup);
    jw_int(j, "requests_per_rank", o->requests);
    jw_num(j, "size_spread", o->spread);
    jw_bool(j, "append", o->append);
    jw_str(j, "size_distribution",
           "uniform over multiples of the unit within "
           "sizeMean x (1 +- size_spread)");
    jw_int(j, "unit",
           ctx->cfg->direct && ctx->ntargets ? (long long)ctx->targets[0].dio_align : SS_UNIT);
    jw_int(j, "verify_every_reads", SS_VERIFY_EVERY);
    jw_uint(j, "node_memory_bytes", sbk_node_memory());
    jw_uint(j, "prepare_bytes",
            ctx->cfg->existing ? 0
            : o->prepare       ? o->prepare
                               : largest_unique(o));
    jw_bool(j, "discard", o->discard);
    jw_bool(j, "prime", o->prime);
    jw_uint(j, "prime_limit_bytes", o->prime ? prime_limit(o) : 0);
    jw_arr(j, "points");
    for (int i = 0; i < o->points.n; i++) {
        const ss_point *p = &o->points.v[i];
        jw_obj(j, NULL);
        jw_uint(j, "unique_bytes", p->unique_bytes);
        jw_uint(j, "size_mean", p->size_mean);
        jw_num(j, "read_frac", p->read_frac);
        jw_num(j, "seq_frac", p->seq_frac);
        jw_int(j, "process_num", p->process_num);
        jw_end_obj(j);
    }
    jw_end_arr(j);
}

static void ss_describe(const sbk_ctx *ctx, char *buf, size_t len)
{
    const ss_opts *o = ctx->opts;
    snprintf(buf, len, "%d point%s, %s, %s (%s)", o->points.n, o->points.n == 1 ? "" : "s",
             o->requests ? "fixed request counts" : "timed windows", ctx->targets[0].path,
             ctx->targets[0].fstype);
}

/* ---- preparation: the node's data file, written once, untimed ---- */
static void prepare_data(sbk_ctx *ctx, ss_state *s)
{
    char name[64];
    data_name(ctx, name, sizeof name);
    MPI_Comm node_comm;
    MPI_Comm_split(MPI_COMM_WORLD, ctx->node_index, ctx->rank, &node_comm);
    if (ctx->node_rank == 0) {
        int fd = openat(ctx->targets[0].fd, name,
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
            sbk_fail(ctx, sbk_code_for_errno(errno), errno, "prepare", 0, "create %s/%s: %s",
                     ctx->targets[0].rundir, name, strerror(errno));
        else
            close(fd);
    }
    MPI_Barrier(node_comm);
    int ok = ctx->error.code == 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, node_comm);
    /* The node's ranks write contiguous shares of whole blocks. */
    uint64_t blocks = (s->data_bytes + SS_PREPARE_BLOCK - 1) / SS_PREPARE_BLOCK;
    uint64_t per = (blocks + (uint64_t)ctx->ranks_per_node - 1) / (uint64_t)ctx->ranks_per_node;
    uint64_t first = per * (uint64_t)ctx->node_rank, last = first + per;
    if (last > blocks)
        last = blocks;
    uint64_t *block = ok ? sbk_alloc_aligned(4096, SS_PREPARE_BLOCK) : NULL;
    int fd = ok ? openat(ctx->targets[0].fd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (ok && (fd < 0 || !block))
        sbk_fail(ctx, fd < 0 ? sbk_code_for_errno(errno) : SBK_EINTERNAL, fd < 0 ? errno : ENOMEM,
                 "prepare", 0, "open %s/%s: %s", ctx->targets[0].rundir, name,
                 fd < 0 ? strerror(errno) : "no memory for a block");
    uint64_t done = 0, flushed_from = first * SS_PREPARE_BLOCK;
    for (uint64_t b = first; b < last && ctx->error.code == 0 && !sbk_stopped(ctx); b++) {
        uint64_t off = b * SS_PREPARE_BLOCK;
        size_t n = (size_t)(s->data_bytes - off < SS_PREPARE_BLOCK ? s->data_bytes - off
                                                                   : SS_PREPARE_BLOCK);
        sbk_pattern_fill(&s->pat, block, n / 8, (uint64_t)ctx->node_index, 1, off / 8, b > first);
        ssize_t w = pwrite(fd, block, n, (off_t)off);
        if (w != (ssize_t)n) {
            int e = w < 0 ? errno : ENOSPC;
            sbk_fail(ctx, sbk_code_for_errno(e), e, "prepare", done,
                     "write %s/%s at byte "
                     "%llu: %s",
                     ctx->targets[0].rundir, name, (unsigned long long)off, strerror(e));
            break;
        }
        done += n;
        /* Flush as it goes and drop what is written: the cache is not flooded, and
         * every run starts from the same cold cache. */
        if (off + n - flushed_from >= SS_PREPARE_FLUSH || b + 1 == last) {
            fdatasync(fd);
            posix_fadvise(fd, (off_t)flushed_from, (off_t)(off + n - flushed_from),
                          POSIX_FADV_DONTNEED);
            flushed_from = off + n;
        }
    }
    if (fd >= 0)
        close(fd);
    free(block);
    ctx->phase_bytes = done;
    MPI_Comm_free(&node_comm);
}

static int ss_setup(sbk_ctx *ctx)
{
    const ss_opts *o = ctx->opts;
    const sbk_config *c = ctx->cfg;
    ss_state *s = calloc(1, sizeof *s);
    ctx->state = s;
    s->o = o;
    s->be = sbk_find_backend("posix");
    s->file.fd = -1;
    s->unit = c->direct ? ctx->targets[0].dio_align : SS_UNIT;
    s->data_bytes = o->prepare ? o->prepare : largest_unique(o);
    s->data_bytes = round_down(s->data_bytes, s->unit);
    s->active_index = ctx->node_rank * ctx->nnodes + ctx->node_index;
    sbk_pattern_init(&s->pat, (uint64_t)c->seed, 64);

    uint64_t max_size = 0;
    for (int i = 0; i < o->points.n && ctx->error.code == 0; i++) {
        const ss_point *p = &o->points.v[i];
        uint64_t lo, hi;
        size_range(p, o->spread, s->unit, &lo, &hi);
        if (hi * s->unit > max_size)
            max_size = hi * s->unit;
        if (ctx->rank != 0)
            continue;
        if (p->process_num > ctx->size)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--point %d: processNum %ld is more "
                     "than the %d ranks launched",
                     i + 1, p->process_num, ctx->size);
        else if (c->direct && p->size_mean < s->unit)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--point %d: --direct needs a "
                     "sizeMean of at least %llu bytes, the direct-I/O alignment of %s",
                     i + 1, (unsigned long long)s->unit, ctx->targets[0].path);
        else if (hi * s->unit > round_down(p->unique_bytes, s->unit))
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--point %d: requests up to %llu "
                     "bytes do not fit in uniqueBytes %llu (in units of %llu bytes)",
                     i + 1, (unsigned long long)(hi * s->unit), (unsigned long long)p->unique_bytes,
                     (unsigned long long)s->unit);
    }
    int code = sbk_agree(ctx);
    if (code)
        return code;
    /* at least a preparation block: --prime reads through it */
    s->buf_bytes = max_size > SS_PREPARE_BLOCK ? (size_t)max_size : SS_PREPARE_BLOCK;
    s->buf = sbk_alloc_aligned(ctx->targets[0].dio_align, s->buf_bytes);
    if (!s->buf)
        sbk_fail(ctx, SBK_EINTERNAL, ENOMEM, "setup", 0, "cannot allocate a %zu-byte buffer",
                 s->buf_bytes);
    else /* the fill never changes: writes only restamp (offsets are whole stamp intervals) */
        sbk_pattern_fill(&s->pat, s->buf, s->buf_bytes / 8, 0, 1, 0, 0);
    if ((code = sbk_agree(ctx)))
        return code;

    if (!c->existing && o->points.n) {
        double t0 = sbk_now();
        prepare_data(ctx, s);
        uint64_t mine = ctx->phase_bytes, total = 0;
        MPI_Reduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        if ((code = sbk_agree(ctx)))
            return code;
        if (o->progress && ctx->rank == 0) {
            char size[32];
            sbk_format_size(s->data_bytes, size, sizeof size);
            fprintf(stderr, "selfscale: wrote %s of data on each of %d node(s) in %.1f s\n", size,
                    ctx->nnodes, sbk_now() - t0);
        }
    }
    if (o->points.n) {
        char name[64];
        data_name(ctx, name, sizeof name);
        /* O_RDWR, and O_DIRECT with --direct */
        int err = s->be->open(ctx, name, SBK_OPEN_READ | SBK_OPEN_WRITE, 0, 0, &s->file);
        if (err == EINVAL && c->direct)
            sbk_fail(ctx, SBK_ENODIRECT, err, "setup", 0,
                     "the file system at %s refuses "
                     "O_DIRECT (EINVAL)",
                     ctx->targets[0].path);
        else if (err)
            sbk_fail(ctx, sbk_code_for_errno(err), err, "setup", 0, "open %s/%s: %s",
                     ctx->targets[0].rundir, name, strerror(err));
    }
    if ((code = sbk_agree(ctx)))
        return code;

    for (int i = 0; i < o->points.n; i++) {
        sbk_phase ph = {
            .kind = i, .fields = ss_fields, .nfields = F_N, .flags = SBK_PH_REPORT | SBK_PH_DATA};
        snprintf(ph.name, sizeof ph.name, "p%d", i);
        sbk_plan_add(ctx, &ph);
    }
    return sbk_agree(ctx);
}

/* Resident pages among the first `bytes` of the node's file (node leaders only).
 * mincore looks up every page: over an 18 GiB footprint that is 0.8 s on a loaded
 * node, twice a point.  Beyond SS_RESIDENCY_STRETCHES stretches of 16 MiB (1 GiB),
 * it looks at that many stretches spread evenly over the footprint and scales up:
 * within 1/64 of the truth whatever the layout of the resident pages. */
#define SS_RESIDENCY_STRETCHES 64u
static void residency(const sbk_ctx *ctx, const ss_state *s, uint64_t bytes, uint64_t *resident,
                      uint64_t *pages)
{
    *resident = *pages = 0;
    if (ctx->node_rank != 0 || s->file.fd < 0)
        return;
    long page = sysconf(_SC_PAGESIZE);
    uint64_t n = (bytes + (uint64_t)page - 1) / (uint64_t)page;
    void *map = mmap(NULL, (size_t)bytes, PROT_READ, MAP_SHARED, s->file.fd, 0);
    if (map == MAP_FAILED)
        return;
    unsigned char vec[4096];
    uint64_t stretches = (n + sizeof vec - 1) / sizeof vec, looked = 0, seen = 0;
    uint64_t visit = stretches > SS_RESIDENCY_STRETCHES ? SS_RESIDENCY_STRETCHES : stretches;
    for (uint64_t i = 0; i < visit; i++) {
        uint64_t first = (stretches == visit ? i : i * stretches / visit) * sizeof vec;
        uint64_t k = n - first < sizeof vec ? n - first : sizeof vec;
        uint64_t span = k * (uint64_t)page;
        if ((first * (uint64_t)page) + span > bytes)
            span = bytes - first * (uint64_t)page;
        if (mincore((char *)map + first * (uint64_t)page, (size_t)span, vec) != 0)
            break;
        for (uint64_t j = 0; j < k; j++)
            seen += vec[j] & 1;
        looked += k;
    }
    munmap(map, (size_t)bytes);
    if (looked == 0)
        return;
    *resident = looked == n ? seen : (uint64_t)((double)seen * (double)n / (double)looked + 0.5);
    *pages = n;
}

/* whether this rank sets the points' cache state: --prime's node leaders, on a file the
 * page cache serves */
static int sets_cache_state(const sbk_ctx *ctx, const ss_state *s)
{
    return s->o->prime && !ctx->cfg->direct && ctx->node_rank == 0 && s->file.fd >= 0;
}

/* --prime: node leaders read the footprint's first --prime-limit bytes once,
 * sequentially, when less than 90% of them is cached (`resident` of `pages`: the whole
 * footprint's, looked at again only for the limit's part of a larger one); returns the
 * bytes read. */
static uint64_t prime_footprint(sbk_ctx *ctx, ss_state *s, uint64_t bytes, uint64_t resident,
                                uint64_t pages)
{
    if (!sets_cache_state(ctx, s))
        return 0;
    if (bytes > prime_limit(s->o)) {
        bytes = prime_limit(s->o);
        residency(ctx, s, bytes, &resident, &pages);
    }
    if (pages && resident * 10 >= pages * 9)
        return 0;
    uint64_t done = 0;
    size_t chunk = SS_PREPARE_BLOCK;
    while (done < bytes && !sbk_stopped(ctx)) {
        size_t n = (size_t)(bytes - done < chunk ? bytes - done : chunk);
        ssize_t got = pread(s->file.fd, s->buf, n, (off_t)done);
        if (got <= 0) {
            sbk_fail(ctx, got < 0 ? sbk_code_for_errno(errno) : SBK_EIO, got < 0 ? errno : EIO,
                     "prime", done, "read %s/selfscale.data.%d at %llu: %s", ctx->targets[0].rundir,
                     ctx->node_index, (unsigned long long)done,
                     got < 0 ? strerror(errno) : "end of file");
            break;
        }
        done += (uint64_t)got;
    }
    /* the buffer holds data read back: restore the fill the writes restamp */
    sbk_pattern_fill(&s->pat, s->buf, s->buf_bytes / 8, 0, 1, 0, 0);
    return done;
}

/* --prime, past its limit: node leaders drop the rest of the footprint from the page
 * cache, whose share of it otherwise depends on the points before (a 18 GiB point here
 * ran at 1.2-2.9 GB/s 92-97% cached, at 3.5-7.1 GB/s 98-99% cached); returns the bytes
 * dropped.  The points' writes were written back after each (--fsync outside), so the
 * pages are clean and drop; dirty ones would stay, and mincore says so. */
static uint64_t drop_past_limit(sbk_ctx *ctx, ss_state *s, uint64_t bytes)
{
    uint64_t from = prime_limit(s->o);
    if (!sets_cache_state(ctx, s) || bytes <= from)
        return 0;
    int e = posix_fadvise(s->file.fd, (off_t)from, (off_t)(bytes - from), POSIX_FADV_DONTNEED);
    if (e) {
        sbk_fail(ctx, sbk_code_for_errno(e), e, "prime", 0,
                 "drop %s/selfscale.data.%d from the page cache: %s", ctx->targets[0].rundir,
                 ctx->node_index, strerror(e));
        return 0;
    }
    return bytes - from;
}

/* What one rank did in a point's timed window; `emptying`: seconds of --append's
 * truncations, kept out of the window as the verification is. */
typedef struct {
    uint64_t bytes, requests, reads, read_bytes, seq, digest;
    double verify, emptying, window, fsync_time;
} ss_tally;

static void append_name(const sbk_ctx *ctx, char *out, size_t len)
{
    snprintf(out, len, "selfscale.append.%d", ctx->rank);
}

/* --append: opens the rank's new file, empty, into *f; 0 or an errno. */
static int open_append(sbk_ctx *ctx, const ss_state *s, sbk_file *f)
{
    char name[64];
    append_name(ctx, name, sizeof name);
    int e = s->be->open(ctx, name, SBK_OPEN_CREATE | SBK_OPEN_WRITE, 0, 0, f);
    if (!e && ftruncate(f->fd, 0) != 0)
        e = errno;
    return e;
}

/* The point's request stream on one active rank: a warm-up, then requests until the
 * duration (or the request count) is reached, the verification of sampled reads left out
 * of the window; write-back after it, inside the window or not as asked. */
static void ss_stream(sbk_ctx *ctx, ss_state *s, const sbk_phase *ph, uint64_t unique, sbk_rec *rec,
                      ss_tally *t)
{
    const ss_opts *o = s->o;
    const ss_point *p = &o->points.v[ph->kind];
    const char *phase = ph->name;
    uint64_t lo, hi;
    size_range(p, o->spread, s->unit, &lo, &hi);
    uint64_t offsets = unique / s->unit; /* unit positions in the footprint */
    ss_rng rng = {stream_seed(ctx, p, ctx->rep)};
    uint64_t prev_end = UINT64_MAX, nreads_all = 0;
    int wrote = 0, appending = appends(o, p);
    sbk_file appended = {.fd = -1}, *file = &s->file;
    char name[64]; /* the file the requests go to, for error messages */
    (appending ? append_name : data_name)(ctx, name, sizeof name);
    if (appending) {
        int e = open_append(ctx, s, &appended);
        if (e) {
            sbk_fail(ctx, sbk_code_for_errno(e), e, phase, 0, "open %s/%s (--append): %s",
                     ctx->targets[0].rundir, name, strerror(e));
            return;
        }
        file = &appended;
    }
    double start = sbk_now(), window_start = start, clocked = start;
    int measuring = o->warmup <= 0.0;
    uint64_t clocked_at = 0, next_clock = 0; /* requests at the last clock read, the next */
    for (uint64_t k = 0;; k++) {
        if (sbk_stop_signal)
            break; /* SIGTERM: the core records it after the phase */
        if (measuring && o->requests && t->requests >= (uint64_t)o->requests)
            break;
        if (k >= next_clock) {
            double now = sbk_now();
            if (!measuring && now - start >= o->warmup) {
                measuring = 1;
                window_start = now;
                t->verify = t->emptying = 0.0;
            }
            if (measuring && !o->requests &&
                now - window_start - t->verify - t->emptying >= o->duration)
                break;
            /* the next read after as many requests as took SS_CLOCK_SPAN_S at the rate
             * just seen: a stream that slows down overruns its window by at most 64
             * requests, and the window is timed to its end all the same */
            double each = k > clocked_at ? (now - clocked) / (double)(k - clocked_at)
                                         : SS_CLOCK_SPAN_S; /* none yet: read it again next */
            uint64_t stride = each * SS_CLOCK_STRIDE_MAX > SS_CLOCK_SPAN_S
                                  ? (uint64_t)(SS_CLOCK_SPAN_S / each)
                                  : SS_CLOCK_STRIDE_MAX;
            clocked = now;
            clocked_at = k;
            next_clock = k + (stride > 0 ? stride : 1u);
        }
        uint64_t units = lo + (hi > lo ? rng_below(&rng, hi - lo + 1) : 0);
        uint64_t size = units * s->unit;
        int is_read = rng_unit(&rng) < p->read_frac;
        int is_seq = prev_end != UINT64_MAX && rng_unit(&rng) < p->seq_frac;
        uint64_t off;
        if (appending || is_seq) { /* on from the last request, from 0 past uniqueBytes */
            off = prev_end != UINT64_MAX && prev_end + size <= unique ? prev_end : 0;
            if (appending && off == 0 && prev_end != UINT64_MAX) { /* empty the file again */
                double e0 = sbk_now();
                if (ftruncate(appended.fd, 0) != 0) {
                    sbk_fail(ctx, sbk_code_for_errno(errno), errno, phase, t->bytes,
                             "empty %s/%s (--append): %s", ctx->targets[0].rundir, name,
                             strerror(errno));
                    break;
                }
                t->emptying += sbk_now() - e0;
            }
        } else
            off = rng_below(&rng, offsets - units + 1) * s->unit;
        prev_end = off + size;
        if (!is_read)
            sbk_pattern_fill(&s->pat, s->buf, size / 8, (uint64_t)ctx->node_index, 1, off / 8, 1);
        size_t moved = 0;
        int e = s->be->xfer(file, !is_read, s->buf, (size_t)size, off, &moved);
        if (e) {
            sbk_fail(ctx, e == EINVAL && ctx->cfg->direct ? SBK_ENODIRECT : sbk_code_for_errno(e),
                     e, phase, t->bytes, "%s %llu bytes at %llu of %s/%s: %s",
                     is_read ? "read" : "write", (unsigned long long)size, (unsigned long long)off,
                     ctx->targets[0].rundir, name, e == ENODATA ? "short transfer" : strerror(e));
            break;
        }
        wrote |= !is_read;
        if (is_read && nreads_all++ % SS_VERIFY_EVERY == 0 && ctx->cfg->verify) {
            double v0 = sbk_now();
            sbk_verify_result r =
                sbk_pattern_check(&s->pat, s->buf, size / 8, (uint64_t)ctx->node_index, 1, off / 8);
            sbk_rec_verify(rec, &r);
            t->verify += sbk_now() - v0;
            if (r.bad_words) /* restore the fill for later writes */
                sbk_pattern_fill(&s->pat, s->buf, s->buf_bytes / 8, 0, 1, 0, 0);
        }
        if (!measuring)
            continue;
        t->bytes += size;
        t->requests++;
        if (is_read) {
            t->reads++;
            t->read_bytes += size;
        }
        t->seq += (uint64_t)is_seq;
        t->digest = sbk_mix64(t->digest ^ off ^ (size << 40) ^ (uint64_t)is_read << 63);
    }
    t->window = sbk_now() - window_start - t->verify - t->emptying;
    if (wrote && ctx->cfg->fsync != FSYNC_NONE && ctx->error.code == 0) {
        double f0 = sbk_now();
        int e = s->be->sync(file);
        if (e)
            sbk_fail(ctx, sbk_code_for_errno(e), e, phase, t->bytes, "fsync %s/%s: %s",
                     ctx->targets[0].rundir, name, strerror(e));
        t->fsync_time = sbk_now() - f0;
        if (ctx->cfg->fsync == FSYNC_INSIDE)
            t->window += t->fsync_time;
    }
    if (appending) { /* the file is this point's alone: removed after it, untimed */
        s->be->close(&appended);
        unlinkat(ctx->targets[0].fd, name, 0);
    }
}

/* Rank 0 says each point's throughput as it is measured (--progress). */
static void ss_say_progress(sbk_ctx *ctx, const sbk_phase *ph, const ss_point *p, const ss_tally *t)
{
    const ss_opts *o = ((ss_state *)ctx->state)->o;
    double slowest = 0;
    uint64_t all = 0;
    MPI_Reduce(&t->window, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t->bytes, &all, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (ctx->rank != 0)
        return;
    char u[32], m[32];
    sbk_format_size(p->unique_bytes, u, sizeof u);
    sbk_format_size(p->size_mean, m, sizeof m);
    fprintf(stderr,
            "selfscale: point %d/%d rep %d: uniqueBytes %s, sizeMean %s, "
            "readFrac %.2f, seqFrac %.2f, processNum %ld: %.1f MiB/s\n",
            ph->kind + 1, o->points.n, ctx->rep + 1, u, m, p->read_frac, p->seq_frac,
            p->process_num, slowest > 0 ? (double)all / slowest / 1048576.0 : 0.0);
}

static void ss_run_phase(sbk_ctx *ctx, const sbk_phase *ph, sbk_rec *rec)
{
    ss_state *s = ctx->state;
    const ss_point *p = &s->o->points.v[ph->kind];
    uint64_t unique = round_down(p->unique_bytes, s->unit);
    int active = s->active_index < p->process_num;
    int active_count = 0;
    MPI_Allreduce(&active, &active_count, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (active_count != p->process_num && ctx->rank == 0)
        sbk_fail(ctx, SBK_EUSAGE, EINVAL, ph->name, 0,
                 "processNum %ld cannot be placed evenly "
                 "over %d node(s) with %d ranks each",
                 p->process_num, ctx->nnodes, ctx->ranks_per_node);

    uint64_t found = 0, before = 0, pages = 0;
    residency(ctx, s, unique, &found, &pages);
    before = found;
    double prime_start = sbk_now();
    uint64_t primed = prime_footprint(ctx, s, unique, found, pages);
    uint64_t dropped = drop_past_limit(ctx, s, unique);
    if (primed)
        rec->time[F_PRIME] += sbk_now() - prime_start;
    if (primed || dropped)
        residency(ctx, s, unique, &before, &pages);
    idle_barrier();

    ss_tally t = {.digest = sbk_mix64((uint64_t)ctx->cfg->seed)};
    if (active && ctx->error.code == 0)
        ss_stream(ctx, s, ph, unique, rec, &t);
    idle_barrier();
    uint64_t after = 0;
    residency(ctx, s, unique, &after, &pages);
    rec->time[F_WINDOW] += t.window;
    rec->time[F_VERIFY] += t.verify;
    rec->time[F_FSYNC] += t.fsync_time;
    rec->count[F_BYTES] += t.bytes;
    rec->count[F_REQUESTS] += t.requests;
    rec->count[F_READS] += t.reads;
    rec->count[F_READ_BYTES] += t.read_bytes;
    rec->count[F_SEQ] += t.seq;
    rec->count[F_ACTIVE] += (uint64_t)active;
    rec->count[F_PRIMED] += primed;
    rec->count[F_DROPPED] += dropped;
    rec->count[F_RES_FOUND] = found;
    rec->count[F_RES_BEFORE] = before;
    rec->count[F_RES_AFTER] = after;
    rec->count[F_FOOTPRINT] = pages;
    rec->count[F_DIGEST] = active ? t.digest : 0;
    ctx->phase_bytes = t.bytes;
    if (s->o->progress)
        ss_say_progress(ctx, ph, p, &t);
}

static void ss_report_phase(sbk_ctx *ctx, const sbk_phase *ph, const sbk_gathered *g, sbk_json *j)
{
    const ss_state *s = ctx->state;
    const ss_point *p = &s->o->points.v[ph->kind];
    uint64_t lo, hi;
    size_range(p, s->o->spread, s->unit, &lo, &hi);
    double slowest = sbk_col_max(g, F_WINDOW);
    uint64_t bytes = sbk_col_sum(g, F_BYTES), requests = sbk_col_sum(g, F_REQUESTS);
    uint64_t found = 0, before = 0, after = 0, pages = 0;
    for (int r = 0; r < g->nranks; r++) {
        found += g->count[F_RES_FOUND][r];
        before += g->count[F_RES_BEFORE][r];
        after += g->count[F_RES_AFTER][r];
        pages += g->count[F_FOOTPRINT][r];
    }
    jw_uint(j, "unique_bytes", round_down(p->unique_bytes, s->unit));
    jw_uint(j, "size_mean", (lo + hi) / 2 * s->unit);
    jw_uint(j, "size_min", lo * s->unit);
    jw_uint(j, "size_max", hi * s->unit);
    jw_bool(j, "appended", appends(s->o, p));
    jw_num(j, "read_frac", p->read_frac);
    jw_num(j, "seq_frac", p->seq_frac);
    jw_int(j, "process_num", p->process_num);
    sbk_figure(ctx, j, ph, "throughput_Bps", slowest > 0 ? (double)bytes / slowest : NAN,
               SBK_UNIT_BPS);
    sbk_figure(ctx, j, ph, "requests_per_s", slowest > 0 ? (double)requests / slowest : NAN,
               SBK_UNIT_OPS);
    jw_obj(j, "measured");
    jw_num(j, "read_frac", requests ? (double)sbk_col_sum(g, F_READS) / (double)requests : NAN);
    jw_num(j, "seq_frac", requests ? (double)sbk_col_sum(g, F_SEQ) / (double)requests : NAN);
    jw_num(j, "size_mean", requests ? (double)bytes / (double)requests : NAN);
    jw_num(j, "window_s", slowest);
    jw_end_obj(j);
    /* The page cache held this share of the footprint when the point began (before
     * --prime: after a new open, what the file system kept across it), before its
     * timed window and after it (summed over the nodes' files). */
    sbk_figure(ctx, j, ph, "resident_fraction_found", pages ? (double)found / (double)pages : NAN,
               SBK_UNIT_FRACTION);
    sbk_figure(ctx, j, ph, "resident_fraction_before", pages ? (double)before / (double)pages : NAN,
               SBK_UNIT_FRACTION);
    sbk_figure(ctx, j, ph, "resident_fraction_after", pages ? (double)after / (double)pages : NAN,
               SBK_UNIT_FRACTION);
    /* --prime's read, a first pass over what the cache did not hold: the nodes read
     * in parallel, so their bytes over the slowest node's time */
    uint64_t primed = sbk_col_sum(g, F_PRIMED);
    double prime_s = sbk_col_max(g, F_PRIME);
    sbk_figure(ctx, j, ph, "prime_Bps", primed && prime_s > 0 ? (double)primed / prime_s : NAN,
               SBK_UNIT_BPS);
}

static void ss_manifest_write(const sbk_ctx *ctx, FILE *f)
{
    const ss_state *s = ctx->state;
    fprintf(f, "data_bytes %llu\nnodes %d\nunit %llu\n", (unsigned long long)s->data_bytes,
            ctx->nnodes, (unsigned long long)s->unit);
}

static int ss_manifest_read(sbk_ctx *ctx, const sbk_manifest *m, char *msg, size_t len)
{
    ss_state *s = ctx->state;
    const char *data = sbk_manifest_get(m, "data_bytes"), *nodes = sbk_manifest_get(m, "nodes");
    if (!data || !nodes)
        snprintf(msg, len, "unreadable");
    else if (atoi(nodes) != ctx->nnodes)
        snprintf(msg, len, "written on %s node(s), read on %d", nodes, ctx->nnodes);
    else {
        s->data_bytes = strtoull(data, NULL, 10);
        for (int i = 0; i < s->o->points.n && !msg[0]; i++)
            if (round_down(s->o->points.v[i].unique_bytes, s->unit) > s->data_bytes) {
                char have[32], want[32];
                sbk_format_size(s->data_bytes, have, sizeof have);
                sbk_format_size(s->o->points.v[i].unique_bytes, want, sizeof want);
                snprintf(msg, len,
                         "holds %s of data per node, less than uniqueBytes %s "
                         "(--point %d)",
                         have, want, i + 1);
            }
    }
    return msg[0] != '\0';
}

static void ss_teardown(sbk_ctx *ctx, int code)
{
    ss_state *s = ctx->state;
    if (!s)
        return;
    if (s->file.fd >= 0)
        s->be->close(&s->file);
    const sbk_config *c = ctx->cfg;
    /* A first launch stopped by a signal removes its data even with --keep: nobody would
     * know to discard a half-written data file. */
    int remove_data = c->existing ? s->o->discard : (!c->keep || code == SBK_ESTOPPED);
    MPI_Barrier(MPI_COMM_WORLD);
    if (remove_data && ctx->targets[0].fd >= 0 && ctx->node_rank == 0) {
        char name[64];
        data_name(ctx, name, sizeof name);
        unlinkat(ctx->targets[0].fd, name, 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* --discard: the kept run directory is ours (a selfscale run made it and its
     * manifest says so); remove the manifest and the directory if nothing else is in. */
    if (remove_data && c->existing && ctx->rank == 0 && ctx->targets[0].fd >= 0) {
        unlinkat(ctx->targets[0].fd, SBK_MANIFEST, 0);
        if (rmdir(ctx->targets[0].rundir) != 0)
            fprintf(stderr, "scratchbench-kernel: warning: left %s in place (%s)\n",
                    ctx->targets[0].rundir, strerror(errno));
    }
    free(s->buf);
    free(s);
    ctx->state = NULL;
}

static const sbk_mode selfscale_mode = {
    .name = "selfscale",
    .about = "seed 003's self-scaling workload (Chen and Patterson): points of\n"
             "uniqueBytes, sizeMean, readFrac, seqFrac, processNum; throughput\n"
             "and requests/s, the page-cache state of the footprint recorded",
    .features = SBK_F_READS | SBK_F_EXISTING,
    .options = ss_options,
    .opts_size = sizeof(ss_opts),
    .defaults = ss_defaults,
    .check = ss_check,
    .config_json = ss_config_json,
    .describe = ss_describe,
    .setup = ss_setup,
    .run_phase = ss_run_phase,
    .report_phase = ss_report_phase,
    .teardown = ss_teardown,
    .manifest_write = ss_manifest_write,
    .manifest_read = ss_manifest_read,
};
SBK_REGISTER_MODE(selfscale_mode)
