/* diskperf mode: seed 000's diskperf, with the follow-up its author never ran.
 *
 * Each rank writes one file in every target directory (one per disk) with queued
 * asynchronous writes, a fixed number of them in flight, round robin over the
 * directories so every disk is busy; then a barrier, the cache defeat, and the same
 * with reads.  One run sweeps block sizes x queue depths (each point its own pair of
 * phases), and the depth actually reached in flight is counted and reported with the
 * mean depth.  Files are a fixed size, or together larger than the node's memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

typedef struct {
    uint64_t bytes;
    int beyond_memory;
} file_size_opt;

typedef struct {
    sbk_list block_sizes, queue_depths;
    file_size_opt file_size;
    int preallocate;
} dp_opts;

static int parse_file_size(const char *value, void *field, char *err, size_t len)
{
    file_size_opt *f = field;
    if (!strcmp(value, "memory")) {
        f->beyond_memory = 1;
        return 0;
    }
    if (sbk_parse_size(value, &f->bytes) || f->bytes == 0) {
        snprintf(err, len, "expected a size (such as 64m, 2g) or 'memory', got '%s'", value);
        return -1;
    }
    f->beyond_memory = 0;
    return 0;
}

#define OPT(f) offsetof(dp_opts, f)
/* An option table keeps several fields a line. */
/* clang-format off */
static const sbk_option dp_options[] = {
    {.name = "block-sizes", .kind = SBK_OPT_SIZES, .offset = OPT(block_sizes), .arg = "LIST",
     .help = "comma list of block sizes, multiples of 512 [4k,64k,1m]", .lo = 512,
     .hi = 1L << 30},
    {.name = "queue-depths", .kind = SBK_OPT_LONGS, .offset = OPT(queue_depths), .arg = "LIST",
     .help = "comma list of requests kept in flight per rank [1,4,16,32]", .lo = 1, .hi = 4096},
    {.name = "file-size", .kind = SBK_OPT_CUSTOM, .offset = OPT(file_size), .arg = "SIZE|memory",
     .help = "bytes per file (one file per rank and directory), a multiple of\n"
             "every block size; 'memory': the files of a node together 10%\n"
             "larger than its memory, as seed 000 advises [64m]",
     .parse = parse_file_size},
    {.name = "preallocate", .kind = SBK_OPT_FLAG, .offset = OPT(preallocate),
     .help = "lay every file out with fallocate before its write phase, outside\n"
             "the timers, as fio does by default: on ext4 and XFS a direct\n"
             "write that extends its file holds the file's lock until it\n"
             "completes, so a new file's writes reach the device one or two\n"
             "at a time whatever the queue depth"},
    {0},
};
/* clang-format on */

static void set_list(sbk_list *l, const long long *v, size_t n)
{
    l->v = calloc(n, sizeof *l->v);
    memcpy(l->v, v, n * sizeof *v);
    l->n = n;
}

static void dp_defaults(void *p)
{
    dp_opts *o = p;
    static const long long sizes[] = {4096, 65536, 1048576}, depths[] = {1, 4, 16, 32};
    set_list(&o->block_sizes, sizes, 3);
    set_list(&o->queue_depths, depths, 4);
    o->file_size.bytes = 64ULL << 20;
}

static long long max_of(const sbk_list *l)
{
    long long m = 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] > m)
            m = l->v[i];
    return m;
}

/* The file size: explicit, or the node's files together 10% larger than its memory,
 * rounded up to whole blocks of the largest size. */
static uint64_t file_size_of(const sbk_ctx *ctx, const dp_opts *o)
{
    if (!o->file_size.beyond_memory)
        return o->file_size.bytes;
    uint64_t per_node = sbk_node_memory() + sbk_node_memory() / 10;
    uint64_t files = (uint64_t)ctx->ranks_per_node * (uint64_t)(ctx->ntargets ? ctx->ntargets : 1);
    uint64_t bs = (uint64_t)max_of(&o->block_sizes);
    return (per_node / files + bs - 1) / bs * bs;
}

static int dp_check(const sbk_config *c, const void *p, char *err, size_t len)
{
    const dp_opts *o = p;
    for (size_t i = 0; i < o->block_sizes.n && !err[0]; i++) {
        uint64_t bs = (uint64_t)o->block_sizes.v[i];
        char a[32], b[32];
        sbk_format_size(bs, a, sizeof a);
        if (bs % 512)
            snprintf(err, len, "--block-sizes: %s is not a multiple of 512 bytes", a);
        else if (!o->file_size.beyond_memory && o->file_size.bytes % bs) {
            sbk_format_size(o->file_size.bytes, b, sizeof b);
            snprintf(err, len, "--file-size %s is not a multiple of the block size %s", b, a);
        }
    }
    /* Enough blocks to fill the deepest queue, or the depth could never be reached. */
    uint64_t dirs = c->dirs.n > 0 ? (uint64_t)c->dirs.n : 1;
    if (!err[0] && !o->file_size.beyond_memory) {
        uint64_t blocks = o->file_size.bytes / (uint64_t)max_of(&o->block_sizes) * dirs;
        if (blocks < (uint64_t)max_of(&o->queue_depths)) {
            char a[32], b[32];
            sbk_format_size(o->file_size.bytes, a, sizeof a);
            sbk_format_size((uint64_t)max_of(&o->block_sizes), b, sizeof b);
            snprintf(err, len,
                     "--file-size %s holds %llu blocks of %s over %llu directories, "
                     "fewer than the queue depth %lld: the queue could never fill",
                     a, (unsigned long long)blocks, b, (unsigned long long)dirs,
                     max_of(&o->queue_depths));
        }
    }
    return err[0] != '\0';
}

typedef struct {
    const dp_opts *o;
    uint64_t file_size;
    int ndirs;
    sbk_queue q;
    int queue_open;
    sbk_pattern pat;
    int *fd;
    uint64_t *file_id;
    char **path;
    sbk_field *fields; /* total, verify, latency_sum, dir<i>; bytes, ios, depth_max, dir<i>_bytes */
    int nfields;
    char **field_names;
    double *dir_time;
    uint64_t *dir_bytes;
    size_t align;
} dp;

/* Field layout: timers then counts; per directory one of each. */
enum { F_TOTAL, F_VERIFY, F_LATENCY, F_DIR0 };
static int f_bytes(const dp *d) { return F_DIR0 + d->ndirs; }
static int f_ios(const dp *d) { return F_DIR0 + d->ndirs + 1; }
static int f_depth(const dp *d) { return F_DIR0 + d->ndirs + 2; }
static int f_dir_bytes(const dp *d, int i) { return F_DIR0 + d->ndirs + 3 + i; }

static void file_name(const sbk_ctx *ctx, char *out, size_t len)
{
    snprintf(out, len, "diskperf.%d", ctx->rank);
}

static void dp_config_json(const sbk_ctx *ctx, sbk_json *j)
{
    const dp_opts *o = ctx->opts;
    jw_arr(j, "block_sizes");
    for (size_t i = 0; i < o->block_sizes.n; i++)
        jw_int(j, NULL, o->block_sizes.v[i]);
    jw_end_arr(j);
    jw_arr(j, "queue_depths");
    for (size_t i = 0; i < o->queue_depths.n; i++)
        jw_int(j, NULL, o->queue_depths.v[i]);
    jw_end_arr(j);
    jw_str(j, "file_size_rule", o->file_size.beyond_memory ? "memory" : "explicit");
    if (o->file_size.beyond_memory)
        jw_uint(j, "node_memory_bytes", sbk_node_memory());
    jw_uint(j, "file_size", file_size_of(ctx, o));
    jw_bool(j, "preallocate", o->preallocate);
}

static void dp_describe(const sbk_ctx *ctx, char *buf, size_t len)
{
    const dp *d = ctx->state;
    char size[32];
    sbk_format_size(d ? d->file_size : 0, size, sizeof size);
    snprintf(buf, len, "%d director%s, files of %s, %s%s, first %s (%s)", ctx->ntargets,
             ctx->ntargets == 1 ? "y" : "ies", size, sbk_engine_name(ctx->cfg->engine),
             ctx->cfg->direct ? ", O_DIRECT" : "", ctx->targets[0].path, ctx->targets[0].fstype);
}

static int dp_setup(sbk_ctx *ctx)
{
    const dp_opts *o = ctx->opts;
    dp *d = calloc(1, sizeof *d);
    ctx->state = d;
    d->o = o;
    d->ndirs = ctx->ntargets;
    d->file_size = file_size_of(ctx, o);
    d->align = 4096;
    for (int t = 0; t < d->ndirs; t++) {
        if (ctx->targets[t].dio_align > d->align)
            d->align = ctx->targets[t].dio_align;
        for (size_t i = 0; ctx->cfg->direct && i < o->block_sizes.n; i++)
            if ((uint64_t)o->block_sizes.v[i] % ctx->targets[t].dio_align) {
                char a[32];
                sbk_format_size((uint64_t)o->block_sizes.v[i], a, sizeof a);
                if (ctx->rank == 0)
                    sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                             "--direct needs block sizes that are multiples of %zu bytes, the "
                             "direct-I/O alignment of %s (got %s)",
                             ctx->targets[t].dio_align, ctx->targets[t].path, a);
                break;
            }
    }
    int code = sbk_agree(ctx);
    if (code)
        return code;

    unsigned entries = (unsigned)max_of(&o->queue_depths);
    if (entries < (unsigned)d->ndirs)
        entries = (unsigned)d->ndirs; /* the fsyncs at the end go in parallel */
    if (sbk_queue_open(ctx, &d->q, entries) == 0)
        d->queue_open = 1;
    sbk_pattern_init(&d->pat, (uint64_t)ctx->cfg->seed, 64);
    d->fd = calloc((size_t)d->ndirs, sizeof *d->fd);
    d->file_id = calloc((size_t)d->ndirs, sizeof *d->file_id);
    d->path = calloc((size_t)d->ndirs, sizeof *d->path);
    d->dir_time = calloc((size_t)d->ndirs, sizeof *d->dir_time);
    d->dir_bytes = calloc((size_t)d->ndirs, sizeof *d->dir_bytes);
    char name[64];
    file_name(ctx, name, sizeof name);
    for (int t = 0; t < d->ndirs; t++) {
        d->fd[t] = -1;
        d->file_id[t] = (uint64_t)ctx->rank * (uint64_t)d->ndirs + (uint64_t)t;
        d->path[t] = malloc(4200);
        sbk_path(ctx, t, d->path[t], 4200, name);
    }

    /* Fields: three timers, one per directory, then the counts. */
    d->nfields = F_DIR0 + 2 * d->ndirs + 3;
    d->fields = calloc((size_t)d->nfields, sizeof *d->fields);
    d->field_names = calloc((size_t)d->nfields, sizeof *d->field_names);
    static const char *fixed[] = {"total", "verify", "latency_sum"};
    for (int f = 0; f < d->nfields; f++) {
        char fname[48];
        if (f < F_DIR0)
            snprintf(fname, sizeof fname, "%s", fixed[f]);
        else if (f < F_DIR0 + d->ndirs)
            snprintf(fname, sizeof fname, "dir%d", f - F_DIR0);
        else if (f == f_bytes(d))
            snprintf(fname, sizeof fname, "bytes");
        else if (f == f_ios(d))
            snprintf(fname, sizeof fname, "ios");
        else if (f == f_depth(d))
            snprintf(fname, sizeof fname, "depth_max");
        else
            snprintf(fname, sizeof fname, "dir%d_bytes", f - f_dir_bytes(d, 0));
        d->field_names[f] = strdup(fname);
        d->fields[f].name = d->field_names[f];
        d->fields[f].kind = f < f_bytes(d) ? SBK_TIMER : f == f_depth(d) ? SBK_COUNT : SBK_TOTAL;
    }
    for (size_t b = 0; b < o->block_sizes.n; b++)
        for (size_t q = 0; q < o->queue_depths.n; q++)
            for (int write = 1; write >= 0; write--) {
                sbk_phase ph = {.kind = write,
                                .fields = d->fields,
                                .nfields = d->nfields,
                                .flags = SBK_PH_REPORT | SBK_PH_DATA |
                                         (write ? 0u : (unsigned)SBK_PH_DEFEAT_CACHE),
                                .arg = {o->block_sizes.v[b], o->queue_depths.v[q],
                                        (long long)(b * o->queue_depths.n + q)}};
                snprintf(ph.name, sizeof ph.name, "%s_bs%lld_qd%lld", write ? "write" : "read",
                         o->block_sizes.v[b], o->queue_depths.v[q]);
                sbk_plan_add(ctx, &ph);
            }
    return sbk_agree(ctx);
}

static void close_files(dp *d)
{
    for (int t = 0; t < d->ndirs; t++)
        if (d->fd[t] >= 0) {
            close(d->fd[t]);
            d->fd[t] = -1;
        }
}

/* --preallocate: the whole file laid out as unwritten extents (size set), so the timed
 * writes fill it without extending it.  A file system without fallocate fails the run:
 * the figures would otherwise be of a workload the site did not ask for. */
static void preallocate(sbk_ctx *ctx, const sbk_phase *ph, const dp *d, int t)
{
    if (fallocate(d->fd[t], 0, 0, (off_t)d->file_size) == 0)
        return;
    if (errno == EOPNOTSUPP || errno == ENOSYS)
        sbk_fail(ctx, SBK_EUSAGE, errno, ph->name, 0,
                 "--preallocate: the file system at %s (%s) cannot fallocate; run without it",
                 ctx->targets[t].path, ctx->targets[t].fstype);
    else
        sbk_fail(ctx, sbk_code_for_errno(errno), errno, ph->name, 0, "fallocate %s: %s", d->path[t],
                 strerror(errno));
}

static void dp_run_phase(sbk_ctx *ctx, const sbk_phase *ph, sbk_rec *rec)
{
    dp *d = ctx->state;
    int write = ph->kind;
    size_t bs = (size_t)ph->arg[0];
    unsigned depth = (unsigned)ph->arg[1];
    uint64_t npoints = d->o->block_sizes.n * d->o->queue_depths.n;
    char name[64];
    file_name(ctx, name, sizeof name);
    int flags = O_NOFOLLOW | O_CLOEXEC | (write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) |
                (ctx->cfg->direct ? O_DIRECT : 0);
    for (int t = 0; t < d->ndirs && ctx->error.code == 0; t++) {
        d->fd[t] = openat(ctx->targets[t].fd, name, flags, 0644);
        if (d->fd[t] < 0 && errno == EINVAL && ctx->cfg->direct)
            sbk_fail(ctx, SBK_ENODIRECT, errno, ph->name, 0,
                     "the file system at %s refuses "
                     "O_DIRECT (EINVAL); defeat the cache with --fadvise, --scan-file or "
                     "--file-size memory instead",
                     ctx->targets[t].path);
        else if (d->fd[t] < 0)
            sbk_fail(ctx, sbk_code_for_errno(errno), errno, ph->name, 0, "open %s: %s", d->path[t],
                     strerror(errno));
    }
    for (int t = 0; write && d->o->preallocate && t < d->ndirs && ctx->error.code == 0; t++)
        preallocate(ctx, ph, d, t);
    int ok = ctx->error.code == 0 && d->queue_open;
    sbk_stream s = {.write = write,
                    .ndirs = d->ndirs,
                    .nowners = 1,
                    .fd = d->fd,
                    .file_id = d->file_id,
                    .path = (const char *const *)d->path,
                    .nblocks = ok ? d->file_size / bs * (uint64_t)d->ndirs : 0,
                    .block = bs,
                    .align = d->align,
                    .depth = depth,
                    /* every point writes a new generation, so stale data is caught */
                    .gen = (ctx->generation - 1) * npoints + (uint64_t)ph->arg[2] + 1,
                    .pat = &d->pat,
                    .verify = ctx->cfg->verify,
                    .rec = rec,
                    .fsync = ctx->cfg->fsync,
                    .phase = ph->name};
    sbk_stream_result r = {.dir_time = d->dir_time, .dir_bytes = d->dir_bytes};
    sbk_stream_run(ctx, &d->q, &s, &r);
    close_files(d);
    rec->time[F_TOTAL] += r.total;
    rec->time[F_VERIFY] += r.verify;
    rec->time[F_LATENCY] += r.latency_sum;
    for (int t = 0; t < d->ndirs; t++) {
        rec->time[F_DIR0 + t] += d->dir_time[t];
        rec->count[f_dir_bytes(d, t)] += d->dir_bytes[t];
    }
    rec->count[f_bytes(d)] += r.bytes;
    rec->count[f_ios(d)] += r.ios;
    if (r.depth_max > rec->count[f_depth(d)])
        rec->count[f_depth(d)] = r.depth_max;
}

static void dp_report_phase(sbk_ctx *ctx, const sbk_phase *ph, const sbk_gathered *g, sbk_json *j)
{
    const dp *d = ctx->state;
    double slowest = sbk_col_max(g, F_TOTAL);
    uint64_t bytes = sbk_col_sum(g, f_bytes(d)), ios = sbk_col_sum(g, f_ios(d));
    uint64_t reached = UINT64_MAX;
    double depth_mean = 0, latency = 0;
    int active = 0;
    for (int r = 0; r < g->nranks; r++) {
        if (g->count[f_depth(d)][r] < reached)
            reached = g->count[f_depth(d)][r];
        latency += g->time[F_LATENCY][r];
        if (g->time[F_TOTAL][r] > 0) {
            depth_mean += g->time[F_LATENCY][r] / g->time[F_TOTAL][r];
            active++;
        }
    }
    jw_int(j, "block_size", ph->arg[0]);
    jw_int(j, "queue_depth", ph->arg[1]);
    jw_uint(j, "queue_depth_reached", reached == UINT64_MAX ? 0 : reached);
    sbk_figure(ctx, j, ph, "bandwidth_Bps", slowest > 0 ? (double)bytes / slowest : NAN,
               SBK_UNIT_BPS);
    sbk_figure(ctx, j, ph, "iops", slowest > 0 ? (double)ios / slowest : NAN, SBK_UNIT_OPS);
    sbk_figure(ctx, j, ph, "queue_depth_mean", active ? depth_mean / active : NAN, SBK_UNIT_NONE);
    sbk_figure(ctx, j, ph, "latency_mean_s", ios ? latency / (double)ios : NAN, SBK_UNIT_SECONDS);
    jw_arr(j, "per_dir");
    for (int t = 0; t < d->ndirs; t++) {
        double dir_slowest = sbk_col_max(g, F_DIR0 + t);
        uint64_t dir_bytes = sbk_col_sum(g, f_dir_bytes(d, t));
        jw_obj(j, NULL);
        jw_str(j, "dir", ctx->targets[t].path);
        jw_uint(j, "bytes", dir_bytes);
        jw_num(j, "bandwidth_Bps", dir_slowest > 0 ? (double)dir_bytes / dir_slowest : NAN);
        jw_end_obj(j);
    }
    jw_end_arr(j);
    for (int t = 0; t < d->ndirs; t++) {
        char key[48];
        double dir_slowest = sbk_col_max(g, F_DIR0 + t);
        snprintf(key, sizeof key, "dir%d_bandwidth_Bps", t);
        sbk_figure(ctx, j, ph, key,
                   dir_slowest > 0 ? (double)sbk_col_sum(g, f_dir_bytes(d, t)) / dir_slowest : NAN,
                   SBK_UNIT_BPS);
    }
}

static int dp_written_file(const sbk_ctx *ctx, int index, int *target, char *name, size_t len)
{
    if (index >= ctx->ntargets)
        return -1;
    *target = index;
    file_name(ctx, name, len);
    return 0;
}

static void dp_teardown(sbk_ctx *ctx, int code)
{
    (void)code;
    dp *d = ctx->state;
    if (!d)
        return;
    if (d->fd)
        close_files(d);
    if (d->queue_open)
        sbk_queue_close(&d->q);
    char name[64];
    file_name(ctx, name, sizeof name);
    for (int t = 0; t < ctx->ntargets && !ctx->cfg->keep; t++)
        if (ctx->targets[t].fd >= 0)
            unlinkat(ctx->targets[t].fd, name, 0);
    for (int t = 0; d->path && t < d->ndirs; t++)
        free(d->path[t]);
    for (int f = 0; d->field_names && f < d->nfields; f++)
        free(d->field_names[f]);
    free(d->field_names);
    free(d->fields);
    free(d->path);
    free(d->fd);
    free(d->file_id);
    free(d->dir_time);
    free(d->dir_bytes);
    free(d);
    ctx->state = NULL;
}

static const sbk_mode diskperf_mode = {
    .name = "diskperf",
    .about = "seed 000's diskperf: queued asynchronous writes, a barrier, reads, over\n"
             "several directories (disks) at once; sweeps block sizes x queue depths",
    .features = SBK_F_MULTI_DIR | SBK_F_READS | SBK_F_ENGINE,
    .options = dp_options,
    .opts_size = sizeof(dp_opts),
    .defaults = dp_defaults,
    .check = dp_check,
    .config_json = dp_config_json,
    .describe = dp_describe,
    .setup = dp_setup,
    .run_phase = dp_run_phase,
    .report_phase = dp_report_phase,
    .written_file = dp_written_file,
    .teardown = dp_teardown,
};
SBK_REGISTER_MODE(diskperf_mode)
