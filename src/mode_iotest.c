/* iotest mode: seed 002's IOTest.
 *
 * NR 64-bit values per transfer, NC transfers, NITER iterations; IREAD 0 writes,
 * 1 reads (the files are written untimed first), 2 writes then reads.  Each rank
 * times open, access, sync and close apart, and a separate total timer; bandwidth
 * is total bytes over the maximum (minimum rate) and minimum (maximum rate) total
 * time, as IOTest defines it.  Timers accumulate over iterations.  Reads verify
 * the pattern; verification time is kept out of the I/O timers.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

enum { LAYOUT_FPP, LAYOUT_SHARED };
static const char *const layouts[] = {"fpp", "shared", NULL};

typedef struct {
    long nr, nc, niter, iread;
    int layout, collective;
    int api; /* index into the synchronous back ends' table (backends.c) */
} iotest_opts;

#define OPT(f) offsetof(iotest_opts, f)
/* An option table keeps several fields a line. */
/* clang-format off */
static const sbk_option iotest_options[] = {
    {.name = "nr", .kind = SBK_OPT_LONG, .offset = OPT(nr), .arg = "N",
     .help = "64-bit values per transfer [131072 = 1 MiB]", .lo = 1, .hi = 1L << 27},
    {.name = "nc", .kind = SBK_OPT_LONG, .offset = OPT(nc), .arg = "N",
     .help = "transfers per rank and iteration [16]", .lo = 1, .hi = 1L << 40},
    {.name = "niter", .kind = SBK_OPT_LONG, .offset = OPT(niter), .arg = "N",
     .help = "iterations, timers accumulate [1]", .lo = 1, .hi = 1000000},
    {.name = "iread", .kind = SBK_OPT_LONG, .offset = OPT(iread), .arg = "0|1|2",
     .help = "0 write, 1 read (written untimed first), 2 write then read [2]", .hi = 2},
    {.name = "layout", .kind = SBK_OPT_CHOICE, .offset = OPT(layout), .arg = "fpp|shared",
     .help = "file per process or one shared file [fpp]", .choices = layouts},
    {.name = "api", .kind = SBK_OPT_CHOICE, .offset = OPT(api),
     .help = "I/O interface: a synchronous back end (--list-backends) [posix]",
     .choices = sbk_backend_names},
    {.name = "collective", .kind = SBK_OPT_FLAG, .offset = OPT(collective),
     .help = "collective MPI-IO transfers (with --api mpiio)"},
    {0},
};
/* clang-format on */

static void iotest_defaults(void *p)
{
    *(iotest_opts *)p = (iotest_opts){.nr = 131072, .nc = 16, .niter = 1, .iread = 2};
}

static int iotest_check(const sbk_config *c, const void *p, char *err, size_t len)
{
    const iotest_opts *o = p;
    unsigned caps = sbk_backend_at(o->api)->caps;
    if (o->collective && !(caps & SBK_BE_COLLECTIVE))
        snprintf(err, len, "--collective needs --api mpiio");
    else if (c->direct && !(caps & SBK_BE_DIRECT))
        snprintf(err, len,
                 "--direct works with --api posix only (MPI-IO has no portable "
                 "O_DIRECT)");
    else if (c->existing && o->iread != 1)
        snprintf(err, len, "--existing needs --iread 1: it reads data an earlier run wrote");
    return err[0] != '\0';
}

enum { F_OPEN, F_ACCESS, F_SYNC, F_CLOSE, F_TOTAL, F_VERIFY, F_BYTES, F_XFERS, F_N };
static const sbk_field iotest_fields[F_N] = {
    {"open", SBK_TIMER},  {"access", SBK_TIMER}, {"sync", SBK_TIMER},  {"close", SBK_TIMER},
    {"total", SBK_TIMER}, {"verify", SBK_TIMER}, {"bytes", SBK_TOTAL}, {"xfers", SBK_TOTAL},
};
enum { PH_WRITE, PH_READ };

typedef struct {
    const iotest_opts *o;
    const sbk_backend *be;
    sbk_pattern pat;
    size_t xfer_bytes;
    uint64_t *buf;
    long *written; /* transfers each rank wrote in the last write (stonewall) */
} iotest;

static int owner_of(const sbk_ctx *ctx, int write)
{
    return write ? ctx->rank : (ctx->rank + ctx->shift) % ctx->size;
}

static void file_name(const iotest *t, int owner, char *out, size_t len)
{
    if (t->o->layout == LAYOUT_SHARED)
        snprintf(out, len, "iotest.shared");
    else
        snprintf(out, len, "iotest.%d", owner);
}

static void iotest_config_json(const sbk_ctx *ctx, sbk_json *j)
{
    const iotest_opts *o = ctx->opts;
    jw_int(j, "nr", o->nr);
    jw_int(j, "nc", o->nc);
    jw_int(j, "niter", o->niter);
    jw_int(j, "iread", o->iread);
    jw_int(j, "transfer_bytes", o->nr * 8);
    jw_int(j, "bytes_per_rank", (long long)o->nr * 8 * o->nc);
    jw_str(j, "layout", layouts[o->layout]);
    jw_str(j, "api", sbk_backend_at(o->api)->name);
    jw_bool(j, "collective", o->collective);
}

static void iotest_describe(const sbk_ctx *ctx, char *buf, size_t len)
{
    const iotest_opts *o = ctx->opts;
    snprintf(buf, len, "%s, %s%s, NR=%ld NC=%ld NITER=%ld, %s (%s)",
             o->layout == LAYOUT_FPP ? "file per process" : "shared file",
             sbk_backend_at(o->api)->title, o->collective ? " collective" : "", o->nr, o->nc,
             o->niter, ctx->targets[0].path, ctx->targets[0].fstype);
}

static int iotest_setup(sbk_ctx *ctx)
{
    const iotest_opts *o = ctx->opts;
    iotest *t = calloc(1, sizeof *t);
    ctx->state = t;
    t->o = o;
    t->be = sbk_backend_at(o->api);
    t->xfer_bytes = (size_t)o->nr * 8;
    size_t align = ctx->targets[0].dio_align;
    if (ctx->cfg->direct && t->xfer_bytes % align != 0) {
        if (ctx->rank == 0)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--direct needs a transfer size (NR*8 = %zu bytes) that is a multiple of "
                     "%zu bytes, the direct-I/O alignment of %s",
                     t->xfer_bytes, align, ctx->targets[0].path);
        return sbk_agree(ctx);
    }
    t->buf = sbk_alloc_aligned(align, t->xfer_bytes);
    if (!t->buf)
        sbk_fail(ctx, SBK_EINTERNAL, ENOMEM, "setup", 0, "cannot allocate a %zu-byte buffer",
                 t->xfer_bytes);
    t->written = calloc((size_t)ctx->size, sizeof *t->written);
    sbk_pattern_init(&t->pat, (uint64_t)ctx->cfg->seed, (uint64_t)o->nr);
    ctx->iterations = o->niter;

    sbk_phase write = {.name = "write",
                       .kind = PH_WRITE,
                       .fields = iotest_fields,
                       .nfields = F_N,
                       .flags = SBK_PH_REPORT | SBK_PH_STONEWALL | SBK_PH_DATA};
    sbk_phase read = write;
    snprintf(read.name, sizeof read.name, "read");
    read.kind = PH_READ;
    read.flags |= SBK_PH_DEFEAT_CACHE;
    if (o->iread == 1)
        write.flags = 0; /* written untimed, only so that there is something to read */
    if (!ctx->cfg->existing)
        sbk_plan_add(ctx, &write);
    if (o->iread != 0)
        sbk_plan_add(ctx, &read);
    return sbk_agree(ctx);
}

/* One rank's pass: what it moves and what it measured so far. */
typedef struct {
    int write, timed, shared, opened;
    const char *phase; /* for messages: the phase, or "prepare" when untimed */
    char name[64];     /* the file */
    sbk_file f;
    uint64_t file_id, base_word, gen;
    long count; /* transfers to make */
    long done;  /* transfers made */
    uint64_t bytes;
    double start;  /* of the total timer */
    double verify; /* s verifying, kept out of the timers */
    int stop;      /* the stonewall stopped the pass */
} iotest_pass;

static void pass_open(sbk_ctx *ctx, iotest *t, iotest_pass *p, sbk_rec *rec)
{
    double t0 = sbk_now();
    int err = t->be->open(ctx, p->name, p->write ? SBK_OPEN_CREATE | SBK_OPEN_WRITE : SBK_OPEN_READ,
                          p->shared, t->o->collective, &p->f);
    rec->time[F_OPEN] += sbk_now() - t0;
    if (err == EINVAL && ctx->cfg->direct)
        sbk_fail(ctx, SBK_ENODIRECT, err, p->phase, 0,
                 "the file system at %s refuses O_DIRECT (EINVAL); defeat the cache with "
                 "--fadvise or --scan-file instead",
                 ctx->targets[0].path);
    else if (err)
        sbk_fail(ctx, sbk_code_for_errno(err), err, p->phase, 0, "open %s/%s: %s",
                 ctx->targets[0].rundir, p->name, strerror(err));
    else
        p->opened = 1;
}

/* Whether transfer k is not made: the count is reached, an error or the stonewall.
 * Collective transfers need every rank in every call: the ranks agree. */
static int pass_ends(sbk_ctx *ctx, const iotest *t, iotest_pass *p, long k)
{
    if (!t->o->collective) {
        if (k >= p->count || !p->opened)
            return 1;
        p->stop = p->write && p->timed && sbk_stonewall_reached(ctx, p->start);
        return p->stop;
    }
    int mine[2] = {ctx->error.code != 0 || k >= p->count,
                   p->write && p->timed && sbk_stonewall_reached(ctx, p->start)};
    int all[2];
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    p->stop = all[1];
    return all[0] || all[1];
}

/* The transfers, each a write (stamped) or a read (verified), timed as access. */
static void pass_transfers(sbk_ctx *ctx, iotest *t, iotest_pass *p, sbk_rec *rec)
{
    const iotest_opts *o = t->o;
    uint64_t nr = (uint64_t)o->nr;
    double t0 = sbk_now();
    for (long k = 0; !pass_ends(ctx, t, p, k); k++) {
        uint64_t first_word = p->base_word + (uint64_t)k * nr;
        if (p->write)
            sbk_pattern_fill(&t->pat, t->buf, nr, p->file_id, p->gen, first_word,
                             k > 0 && nr % t->pat.interval == 0);
        size_t moved = 0;
        int err = t->be->xfer(&p->f, p->write, t->buf, t->xfer_bytes, first_word * 8, &moved);
        p->bytes += moved;
        if (err) {
            if (err == EINVAL && ctx->cfg->direct)
                sbk_fail(ctx, SBK_ENODIRECT, err, p->phase, p->bytes,
                         "the file system at %s refuses O_DIRECT transfers (EINVAL)",
                         ctx->targets[0].path);
            else
                sbk_fail(ctx, sbk_code_for_errno(err), err, p->phase, p->bytes,
                         "%s %s/%s at byte %llu: %s", p->write ? "write" : "read",
                         ctx->targets[0].rundir, p->name, (unsigned long long)(first_word * 8),
                         strerror(err));
            if (!o->collective)
                break;
            continue;
        }
        p->done++;
        if (!p->write && ctx->cfg->verify) {
            double v0 = sbk_now();
            sbk_verify_result r =
                sbk_pattern_check(&t->pat, t->buf, nr, p->file_id, p->gen, first_word);
            sbk_rec_verify(rec, &r);
            p->verify += sbk_now() - v0;
        }
    }
    rec->time[F_ACCESS] += sbk_now() - t0 - p->verify;
}

/* fsync after writes (where asked) and close; returns the time fsync took. */
static double pass_close(sbk_ctx *ctx, iotest *t, iotest_pass *p, sbk_rec *rec)
{
    double sync_time = 0.0;
    if (!p->opened)
        return sync_time;
    if (p->write && ctx->cfg->fsync != FSYNC_NONE) {
        double t0 = sbk_now();
        int err = t->be->sync(&p->f);
        sync_time = sbk_now() - t0;
        rec->time[F_SYNC] += sync_time;
        if (err)
            sbk_fail(ctx, sbk_code_for_errno(err), err, p->phase, p->bytes, "fsync %s/%s: %s",
                     ctx->targets[0].rundir, p->name, strerror(err));
    }
    double t0 = sbk_now();
    int err = t->be->close(&p->f);
    rec->time[F_CLOSE] += sbk_now() - t0;
    if (err)
        sbk_fail(ctx, sbk_code_for_errno(err), err, p->phase, p->bytes, "close %s/%s: %s",
                 ctx->targets[0].rundir, p->name, strerror(err));
    return sync_time;
}

/* One write or read pass over this rank's transfers; accumulates into rec. */
static void iotest_run_phase(sbk_ctx *ctx, const sbk_phase *ph, sbk_rec *rec)
{
    iotest *t = ctx->state;
    const iotest_opts *o = t->o;
    iotest_pass p = {.write = ph->kind == PH_WRITE,
                     .timed = (ph->flags & SBK_PH_REPORT) != 0,
                     .shared = o->layout == LAYOUT_SHARED,
                     .f = {.fd = -1},
                     .gen = ctx->generation};
    p.phase = p.timed ? ph->name : "prepare";
    int owner = owner_of(ctx, p.write);
    p.file_id = p.shared ? 0 : (uint64_t)owner;
    p.base_word = p.shared ? (uint64_t)owner * (uint64_t)o->nc * (uint64_t)o->nr : 0;
    p.count = p.write ? o->nc : t->written[owner];
    file_name(t, owner, p.name, sizeof p.name);

    p.start = sbk_now();
    pass_open(ctx, t, &p, rec);
    pass_transfers(ctx, t, &p, rec);
    double sync_time = pass_close(ctx, t, &p, rec);
    double total = sbk_now() - p.start - p.verify;
    if (ctx->cfg->fsync == FSYNC_OUTSIDE)
        total -= sync_time;
    rec->time[F_TOTAL] += total;
    rec->time[F_VERIFY] += p.verify;
    rec->count[F_BYTES] += p.bytes;
    rec->count[F_XFERS] += (uint64_t)p.done;
    ctx->phase_bytes = p.bytes;
    if (p.stop)
        rec->stonewall_hit = 1;

    if (p.write) {
        long mine = p.done;
        MPI_Allgather(&mine, 1, MPI_LONG, t->written, 1, MPI_LONG, MPI_COMM_WORLD);
    }
}

static void iotest_report_phase(sbk_ctx *ctx, const sbk_phase *ph, const sbk_gathered *g,
                                sbk_json *j)
{
    double bytes = (double)sbk_col_sum(g, F_BYTES);
    double max_total = sbk_col_max(g, F_TOTAL), min_total = sbk_col_min(g, F_TOTAL);
    double max_frac = 0;
    for (int r = 0; r < g->nranks; r++)
        if (g->time[F_TOTAL][r] > 0) {
            double frac = (g->time[F_OPEN][r] + g->time[F_CLOSE][r]) / g->time[F_TOTAL][r];
            if (frac > max_frac)
                max_frac = frac;
        }
    sbk_figure(ctx, j, ph, "bandwidth_min_Bps", max_total > 0 ? bytes / max_total : NAN,
               SBK_UNIT_BPS);
    sbk_figure(ctx, j, ph, "bandwidth_max_Bps",
               min_total > 0 && isfinite(min_total) ? bytes / min_total : NAN, SBK_UNIT_BPS);
    sbk_figure(ctx, j, ph, "open_close_fraction_max", max_frac, SBK_UNIT_FRACTION);
}

static int iotest_written_file(const sbk_ctx *ctx, int index, int *target, char *name, size_t len)
{
    if (index > 0)
        return -1;
    *target = 0;
    file_name(ctx->state, ctx->rank, name, len);
    return 0;
}

/* A kept run directory records what was written, so a later run (--existing) can
 * read and verify it: the classic way to defeat the cache is another job. */
static void iotest_manifest_write(const sbk_ctx *ctx, FILE *f)
{
    const iotest *t = ctx->state;
    fprintf(f, "layout %s\nnr %ld\nnc %ld\nwritten", layouts[t->o->layout], t->o->nr, t->o->nc);
    for (int r = 0; r < ctx->size; r++)
        fprintf(f, " %ld", t->written[r]);
    fputc('\n', f);
}

static int iotest_manifest_read(sbk_ctx *ctx, const sbk_manifest *m, char *msg, size_t len)
{
    iotest *t = ctx->state;
    const char *layout = sbk_manifest_get(m, "layout"), *nr = sbk_manifest_get(m, "nr");
    const char *nc = sbk_manifest_get(m, "nc"), *written = sbk_manifest_get(m, "written");
    if (!layout || !nr || !nc || !written)
        snprintf(msg, len, "unreadable");
    else if (strcmp(layout, layouts[t->o->layout]))
        snprintf(msg, len, "written with --layout %s", layout);
    else if (atol(nr) != t->o->nr || atol(nc) != t->o->nc)
        snprintf(msg, len, "written with --nr %s --nc %s", nr, nc);
    for (int r = 0; !msg[0] && r < ctx->size; r++) {
        char *end = NULL;
        t->written[r] = strtol(written, &end, 10);
        if (end == written)
            snprintf(msg, len, "its written counts are incomplete");
        written = end;
    }
    return msg[0] != '\0';
}

static void iotest_teardown(sbk_ctx *ctx, int code)
{
    (void)code;
    iotest *t = ctx->state;
    if (!t)
        return;
    /* Remove only the files this run created, once nobody reads them any more. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (!ctx->cfg->keep && !ctx->cfg->existing && ctx->targets[0].fd >= 0 &&
        (t->o->layout == LAYOUT_FPP || ctx->rank == 0)) {
        char name[64];
        file_name(t, ctx->rank, name, sizeof name);
        unlinkat(ctx->targets[0].fd, name, 0);
    }
    free(t->written);
    free(t->buf);
    free(t);
    ctx->state = NULL;
}

static const sbk_mode iotest_mode = {
    .name = "iotest",
    .about = "seed 002's IOTest: NR 64-bit values per transfer, NC transfers, NITER\n"
             "iterations; write, read or both; open/access/sync/close timed apart",
    .features = SBK_F_READS | SBK_F_SHIFT | SBK_F_STONEWALL | SBK_F_EXISTING,
    .options = iotest_options,
    .opts_size = sizeof(iotest_opts),
    .defaults = iotest_defaults,
    .check = iotest_check,
    .config_json = iotest_config_json,
    .describe = iotest_describe,
    .setup = iotest_setup,
    .run_phase = iotest_run_phase,
    .report_phase = iotest_report_phase,
    .written_file = iotest_written_file,
    .teardown = iotest_teardown,
    .manifest_write = iotest_manifest_write,
    .manifest_read = iotest_manifest_read,
};
SBK_REGISTER_MODE(iotest_mode)
