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
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

/* Per-rank figures of one phase; all doubles so one MPI_Gather moves them. */
typedef struct {
    double open, access, sync, close, total, verify;
    double bytes, xfers, bad_words, stale_words, first_bad_byte, stonewall_hit;
} rank_rec;
#define REC_N (sizeof(rank_rec) / sizeof(double))

enum { PH_WRITE, PH_READ, PH_N };
static const char *phase_names[PH_N] = {"write", "read"};

typedef struct {
    sbk_ctx *ctx;
    const sbk_config *cfg;
    const sbk_backend *be;
    sbk_pattern pat;
    size_t xfer_bytes;
    uint64_t *buf;
    uint64_t *expect;
    long *written;        /* transfers each rank wrote in the last write (stonewall) */
} iotest;

static int owner_of(const iotest *t, int write)
{
    return write ? t->ctx->rank : (t->ctx->rank + t->ctx->shift) % t->ctx->size;
}

static void file_name(const iotest *t, int owner, char *out, size_t len)
{
    if (t->cfg->layout == LAYOUT_SHARED)
        snprintf(out, len, "iotest.shared");
    else
        snprintf(out, len, "iotest.%d", owner);
}

/* One write or read pass over this rank's transfers; accumulates into rec. */
static void xfer_pass(iotest *t, int write, uint64_t gen, int timed, rank_rec *rec)
{
    sbk_ctx *ctx = t->ctx;
    const sbk_config *c = t->cfg;
    const char *phase = timed ? phase_names[write ? PH_WRITE : PH_READ] : "prepare";
    int owner = owner_of(t, write);
    int shared = c->layout == LAYOUT_SHARED;
    uint64_t file_id = shared ? 0 : (uint64_t)owner;
    uint64_t base_word = shared ? (uint64_t)owner * (uint64_t)c->nc * (uint64_t)c->nr : 0;
    long count = write ? c->nc : t->written[owner];
    char name[64];
    file_name(t, owner, name, sizeof name);

    sbk_file f = {.fd = -1};
    double verify = 0.0, sync_time = 0.0;
    uint64_t bytes = 0;
    long done = 0;
    int stop = 0, err = 0, opened = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    double start = sbk_now();

    double t0 = start;
    err = t->be->open(ctx, name, write ? SBK_OPEN_CREATE | SBK_OPEN_WRITE : SBK_OPEN_READ,
                      shared, &f);
    rec->open += sbk_now() - t0;
    if (err == EINVAL && c->direct) {
        sbk_fail(ctx, SBK_ENODIRECT, err, phase, 0,
                 "the file system at %s refuses O_DIRECT (EINVAL); defeat the cache with "
                 "--fadvise or --scan-file instead", ctx->target);
    } else if (err) {
        sbk_fail(ctx, sbk_code_for_errno(err), err, phase, 0, "open %s/%s: %s", ctx->rundir,
                 name, strerror(err));
    } else {
        opened = 1;
    }

    t0 = sbk_now();
    for (long j = 0; j < count || c->collective; j++) {
        /* Collective transfers need every rank in every call: agree on stopping. */
        if (c->collective) {
            int mine[2] = {ctx->error.code != 0 || j >= count, 0}, all[2];
            if (write && timed && c->stonewall > 0 && sbk_now() - start >= c->stonewall)
                mine[1] = 1;
            MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            if (all[0] || all[1]) {
                stop = all[1];
                break;
            }
        } else {
            if (!opened)
                break;
            if (write && timed && c->stonewall > 0 && sbk_now() - start >= c->stonewall) {
                stop = 1;
                break;
            }
        }
        uint64_t first_word = base_word + (uint64_t)j * (uint64_t)c->nr;
        if (write)
            sbk_pattern_fill(&t->pat, t->buf, (uint64_t)c->nr, file_id, gen, first_word,
                             j > 0 && (uint64_t)c->nr % t->pat.interval == 0);
        size_t moved = 0;
        err = t->be->xfer(&f, write, t->buf, t->xfer_bytes, first_word * 8, &moved);
        bytes += moved;
        if (err) {
            if (err == EINVAL && c->direct)
                sbk_fail(ctx, SBK_ENODIRECT, err, phase, bytes,
                         "the file system at %s refuses O_DIRECT transfers (EINVAL)",
                         ctx->target);
            else
                sbk_fail(ctx, sbk_code_for_errno(err), err, phase, bytes,
                         "%s %s/%s at byte %llu: %s", write ? "write" : "read", ctx->rundir,
                         name, (unsigned long long)(first_word * 8), strerror(err));
            if (!c->collective)
                break;
            continue;
        }
        done++;
        if (!write && c->verify) {
            double v0 = sbk_now();
            sbk_verify_result r = sbk_pattern_check(&t->pat, t->buf, (uint64_t)c->nr, file_id,
                                                    gen, first_word);
            if (r.bad_words) {
                if (rec->bad_words == 0)
                    rec->first_bad_byte = (double)r.first_bad_word * 8.0;
                rec->bad_words += (double)r.bad_words;
                rec->stale_words += (double)r.stale_words;
            }
            verify += sbk_now() - v0;
        }
    }
    rec->access += sbk_now() - t0 - verify;

    if (opened && write && c->fsync != FSYNC_NONE) {
        t0 = sbk_now();
        err = t->be->sync(&f);
        sync_time = sbk_now() - t0;
        rec->sync += sync_time;
        if (err)
            sbk_fail(ctx, sbk_code_for_errno(err), err, phase, bytes, "fsync %s/%s: %s",
                     ctx->rundir, name, strerror(err));
    }
    if (opened) {
        t0 = sbk_now();
        err = t->be->close(&f);
        rec->close += sbk_now() - t0;
        if (err)
            sbk_fail(ctx, sbk_code_for_errno(err), err, phase, bytes, "close %s/%s: %s",
                     ctx->rundir, name, strerror(err));
    }
    double total = sbk_now() - start - verify;
    if (c->fsync == FSYNC_OUTSIDE)
        total -= sync_time;
    rec->total += total;
    rec->verify += verify;
    rec->bytes += (double)bytes;
    rec->xfers += (double)done;
    ctx->phase_bytes = bytes;
    if (stop)
        rec->stonewall_hit = 1;

    if (write) {
        long mine = done;
        MPI_Allgather(&mine, 1, MPI_LONG, t->written, 1, MPI_LONG, MPI_COMM_WORLD);
    }
}

/* Between write and read: push the data out of the page cache as configured. */
static void defeat_cache(iotest *t, double *resident, double *scan_s)
{
    sbk_ctx *ctx = t->ctx;
    const sbk_config *c = t->cfg;
    if (c->fadvise && ctx->error.code == 0) {
        char name[64];
        file_name(t, owner_of(t, 0), name, sizeof name);
        int fd = openat(ctx->rundir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            fsync(fd);
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            double r = sbk_resident_fraction(fd);
            if (r > *resident)
                *resident = r;
            close(fd);
        }
    }
    if (c->scan_file) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = sbk_now();
        if (ctx->node_rank == 0 && ctx->error.code == 0) {
            uint64_t bytes = 0;
            int err = sbk_scan_file(c->scan_file, &bytes);
            if (err)
                sbk_fail(ctx, SBK_EIO, err, "scan", 0, "--scan-file %s: %s", c->scan_file,
                         strerror(err));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        *scan_s += sbk_now() - t0;
    }
}

/* Rank 0: write one phase of one repetition and return its headline figures. */
static void write_phase(sbk_json *j, const sbk_ctx *ctx, const char *name, const rank_rec *all,
                        double *bw_min, double *bw_max, double *oc_frac, double *bad)
{
    int n = ctx->size;
    double *col = malloc((size_t)n * sizeof *col);
    static const char *timers[] = {"open", "access", "sync", "close", "total", "verify"};
    double bytes = 0, max_total = 0, min_total = INFINITY, max_frac = 0, bad_words = 0;
    double stale = 0, hit = 0, xfers = 0;
    for (int r = 0; r < n; r++) {
        bytes += all[r].bytes;
        xfers += all[r].xfers;
        bad_words += all[r].bad_words;
        stale += all[r].stale_words;
        hit += all[r].stonewall_hit;
        if (all[r].total > max_total) max_total = all[r].total;
        if (all[r].total < min_total) min_total = all[r].total;
        if (all[r].total > 0) {
            double frac = (all[r].open + all[r].close) / all[r].total;
            if (frac > max_frac) max_frac = frac;
        }
    }
    jw_obj(j, name);
    jw_obj(j, "per_rank");
    for (int k = 0; k < 6; k++) {
        for (int r = 0; r < n; r++)
            col[r] = ((const double *)&all[r])[k];
        jw_doubles(j, timers[k], col, (size_t)n);
    }
    for (int r = 0; r < n; r++)
        col[r] = all[r].bytes;
    jw_doubles(j, "bytes", col, (size_t)n);
    for (int r = 0; r < n; r++)
        col[r] = all[r].xfers;
    jw_doubles(j, "xfers", col, (size_t)n);
    jw_end_obj(j);
    jw_obj(j, "time_s");
    for (int k = 0; k < 6; k++) {
        for (int r = 0; r < n; r++)
            col[r] = ((const double *)&all[r])[k];
        jw_summary(j, timers[k], sbk_summarize(col, (size_t)n));
    }
    jw_end_obj(j);
    jw_num(j, "bytes", bytes);
    jw_num(j, "xfers", xfers);
    *bw_min = max_total > 0 ? bytes / max_total : NAN;
    *bw_max = min_total > 0 && isfinite(min_total) ? bytes / min_total : NAN;
    *oc_frac = max_frac;
    *bad = bad_words;
    jw_num(j, "bandwidth_min_Bps", *bw_min);
    jw_num(j, "bandwidth_max_Bps", *bw_max);
    jw_num(j, "open_close_fraction_max", max_frac);
    jw_int(j, "stonewall_hit_ranks", (long long)hit);
    jw_obj(j, "verify");
    jw_num(j, "bad_words", bad_words);
    jw_num(j, "stale_words", stale);
    jw_arr(j, "first_bad_byte");
    for (int r = 0; r < n; r++)
        if (all[r].bad_words > 0) {
            jw_obj(j, NULL);
            jw_int(j, "rank", r);
            jw_num(j, "byte", all[r].first_bad_byte);
            jw_end_obj(j);
        }
    jw_end_arr(j);
    jw_end_obj(j);
    jw_end_obj(j);
    free(col);
}

static void print_table(const sbk_ctx *ctx, double series[PH_N][3][4096], int reps,
                        const int active[PH_N])
{
    const sbk_config *c = ctx->cfg;
    printf("scratchbench-kernel iotest: %d ranks on %d node(s), %s, %s%s, NR=%ld NC=%ld NITER=%ld, "
           "%s (%s)\n", ctx->size, ctx->nnodes, c->layout == LAYOUT_FPP ? "file per process"
           : "shared file", c->api == API_MPIIO ? "MPI-IO" : "POSIX",
           c->collective ? " collective" : "", c->nr, c->nc, c->niter, ctx->target, ctx->fstype);
    printf("%-6s %8s %14s %14s %14s %14s %10s\n", "phase", "reps", "min-rate MiB/s",
           "max-rate MiB/s", "trimmed MiB/s", "stddev MiB/s", "open+close");
    for (int p = 0; p < PH_N; p++) {
        if (!active[p])
            continue;
        sbk_summary lo = sbk_summarize(series[p][0], (size_t)reps);
        sbk_summary hi = sbk_summarize(series[p][1], (size_t)reps);
        sbk_summary oc = sbk_summarize(series[p][2], (size_t)reps);
        printf("%-6s %8d %14.1f %14.1f %14.1f %14.1f %9.1f%%\n", phase_names[p], reps,
               lo.min / 1048576.0, hi.max / 1048576.0, lo.trimmed_mean / 1048576.0,
               lo.stddev / 1048576.0, 100.0 * oc.max);
    }
}

/* A kept run directory records what was written, so a later run (--existing) can
 * read and verify it: the classic way to defeat the cache is another job. */
static void write_manifest(const iotest *t, uint64_t generation)
{
    const sbk_config *c = t->cfg;
    int fd = openat(t->ctx->rundir_fd, SBK_MANIFEST, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
                    0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        fprintf(stderr, "scratchbench-kernel: warning: cannot write %s/%s: %s\n",
                t->ctx->rundir, SBK_MANIFEST, strerror(errno));
        return;
    }
    fprintf(f, "scratchbench-kernel-manifest 1\nlayout %s\nnr %ld\nnc %ld\nnranks %d\n"
            "seed %llu\ngeneration %llu\nwritten", c->layout == LAYOUT_FPP ? "fpp" : "shared",
            c->nr, c->nc, t->ctx->size, (unsigned long long)c->seed,
            (unsigned long long)generation);
    for (int r = 0; r < t->ctx->size; r++)
        fprintf(f, " %ld", t->written[r]);
    fputc('\n', f);
    fclose(f);
}

/* Rank 0 reads the manifest of --existing and checks it fits this run. */
static int read_manifest(iotest *t, uint64_t *generation)
{
    sbk_ctx *ctx = t->ctx;
    const sbk_config *c = t->cfg;
    char layout[16] = "", msg[200] = "";
    long nr = -1, nc = -1;
    int nranks = -1;
    unsigned long long seed = 0, gen = 0;
    if (ctx->rank == 0) {
        int fd = openat(ctx->rundir_fd, SBK_MANIFEST, O_RDONLY | O_NOFOLLOW);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (!f || fscanf(f, "scratchbench-kernel-manifest 1 layout %15s nr %ld nc %ld "
                         "nranks %d seed %llu generation %llu written", layout, &nr, &nc,
                         &nranks, &seed, &gen) != 6)
            snprintf(msg, sizeof msg, "unreadable");
        else if (strcmp(layout, c->layout == LAYOUT_FPP ? "fpp" : "shared"))
            snprintf(msg, sizeof msg, "written with --layout %s", layout);
        else if (nr != c->nr || nc != c->nc)
            snprintf(msg, sizeof msg, "written with --nr %ld --nc %ld", nr, nc);
        else if (nranks != ctx->size)
            snprintf(msg, sizeof msg, "written by %d ranks, read by %d", nranks, ctx->size);
        else if (seed != c->seed)
            snprintf(msg, sizeof msg, "written with --seed %llu", seed);
        for (int r = 0; !msg[0] && r < ctx->size; r++)
            if (fscanf(f, "%ld", &t->written[r]) != 1)
                snprintf(msg, sizeof msg, "its written counts are incomplete");
        if (f)
            fclose(f);
        if (msg[0])
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0, "--existing %.120s: %s/" SBK_MANIFEST
                     " does not fit this run: %s", c->existing, ctx->rundir, msg);
    }
    MPI_Bcast(&gen, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(t->written, ctx->size, MPI_LONG, 0, MPI_COMM_WORLD);
    *generation = gen;
    return sbk_agree(ctx);
}

int sbk_mode_iotest(sbk_ctx *ctx, sbk_json *j)
{
    const sbk_config *c = ctx->cfg;
    iotest t = {.ctx = ctx, .cfg = c};
    t.be = c->api == API_MPIIO ? &sbk_backend_mpiio : &sbk_backend_posix;
    t.xfer_bytes = (size_t)c->nr * 8;
    if (c->direct && t.xfer_bytes % ctx->dio_align != 0) {
        if (ctx->rank == 0)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--direct needs a transfer size (NR*8 = %zu bytes) that is a multiple of "
                     "%zu bytes, the direct-I/O alignment of %s", t.xfer_bytes, ctx->dio_align,
                     ctx->target);
        return sbk_agree(ctx);
    }
    size_t align = ctx->dio_align > 4096 ? ctx->dio_align : 4096;
    if (posix_memalign((void **)&t.buf, align, t.xfer_bytes) != 0) {
        sbk_fail(ctx, SBK_EINTERNAL, ENOMEM, "setup", 0, "cannot allocate a %zu-byte buffer",
                 t.xfer_bytes);
        return sbk_agree(ctx);
    }
    t.written = calloc((size_t)ctx->size, sizeof *t.written);
    sbk_pattern_init(&t.pat, c->seed, (uint64_t)c->nr);

    int active[PH_N] = {c->iread != 1, c->iread != 0};
    uint64_t existing_gen = 0;
    if (c->existing && read_manifest(&t, &existing_gen) != 0) {
        free(t.written);
        free(t.buf);
        return SBK_EUSAGE;
    }
    static double series[PH_N][3][4096]; /* per rep: min rate, max rate, open+close share */
    double bad_total = 0;
    rank_rec *all = ctx->rank == 0 ? calloc((size_t)ctx->size, sizeof *all) : NULL;
    int code = 0;
    int reps_done = 0;

    jw_arr(j, "repetitions");
    for (int rep = 0; rep < c->reps && code == 0; rep++) {
        rank_rec rec[PH_N];
        memset(rec, 0, sizeof rec);
        double resident = -1.0, scan_s = 0.0;
        for (long it = 0; it < c->niter && code == 0; it++) {
            uint64_t gen = c->existing ? existing_gen : (uint64_t)(rep * c->niter + it + 1);
            if (c->existing) {
                /* the data is already there */
            } else if (c->iread == 1) {
                /* Read-only runs read data written untimed just before. */
                rank_rec scratch;
                memset(&scratch, 0, sizeof scratch);
                xfer_pass(&t, 1, gen, 0, &scratch);
            } else {
                xfer_pass(&t, 1, gen, 1, &rec[PH_WRITE]);
            }
            code = sbk_agree(ctx);
            if (code == 0 && c->iread != 0) {
                defeat_cache(&t, &resident, &scan_s);
                code = sbk_agree(ctx);
                if (code == 0)
                    xfer_pass(&t, 0, gen, 1, &rec[PH_READ]);
                code = sbk_agree(ctx);
            }
        }
        double max_resident = -1.0;
        MPI_Reduce(&resident, &max_resident, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (ctx->rank == 0) {
            jw_obj(j, NULL);
            jw_int(j, "rep", rep);
            jw_bool(j, "complete", code == 0);
            jw_obj(j, "cache");
            if (c->fadvise)
                jw_num(j, "resident_fraction_after_drop", max_resident);
            if (c->scan_file)
                jw_num(j, "scan_s", scan_s);
            jw_end_obj(j);
            jw_obj(j, "phases");
        }
        for (int p = 0; p < PH_N; p++) {
            if (!active[p])
                continue;
            MPI_Gather(&rec[p], REC_N, MPI_DOUBLE, all, REC_N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (ctx->rank == 0) {
                double bad = 0;
                write_phase(j, ctx, phase_names[p], all, &series[p][0][rep], &series[p][1][rep],
                            &series[p][2][rep], &bad);
                bad_total += bad;
            }
        }
        if (ctx->rank == 0) {
            jw_end_obj(j);
            jw_end_obj(j);
        }
        reps_done = rep + 1;
    }
    if (ctx->rank == 0) {
        jw_end_arr(j);
        jw_obj(j, "summary");
        for (int p = 0; p < PH_N; p++) {
            if (!active[p])
                continue;
            jw_obj(j, phase_names[p]);
            jw_summary(j, "bandwidth_min_Bps", sbk_summarize(series[p][0], (size_t)reps_done));
            jw_summary(j, "bandwidth_max_Bps", sbk_summarize(series[p][1], (size_t)reps_done));
            jw_summary(j, "open_close_fraction_max",
                       sbk_summarize(series[p][2], (size_t)reps_done));
            jw_end_obj(j);
        }
        jw_num(j, "verify_bad_words", bad_total);
        jw_end_obj(j);
        if (c->table)
            print_table(ctx, series, reps_done, active);
    }
    int bad_any = ctx->rank == 0 && bad_total > 0;
    MPI_Bcast(&bad_any, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (code == 0 && bad_any) {
        if (ctx->rank == 0)
            sbk_fail(ctx, SBK_EVERIFY, 0, "read", 0,
                     "data verification failed: %.0f of the 64-bit words read back differ from "
                     "those written (see verify in the JSON)", bad_total);
        code = SBK_EVERIFY;
    }

    /* Clean up only the files this run created, once nobody reads them any more. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->keep && !c->existing && ctx->rank == 0 && code == 0)
        write_manifest(&t, (uint64_t)(c->reps * c->niter));
    if (!c->keep && !c->existing && ctx->rundir_fd >= 0 &&
        (c->layout == LAYOUT_FPP || ctx->rank == 0)) {
        char name[64];
        file_name(&t, ctx->rank, name, sizeof name);
        unlinkat(ctx->rundir_fd, name, 0);
    }
    free(all);
    free(t.written);
    free(t.buf);
    return code;
}
