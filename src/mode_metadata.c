/* metadata mode: seed 002's open/close-at-scale and clean-up findings.
 *
 * N files per rank, in one shared directory or one directory per rank.  Phases, each
 * between barriers: create (open O_CREAT|O_EXCL, optional write, close), open (open
 * and close an existing file), stat, remove (unlink, by k threads per rank, since
 * seed 002 watched 4 parallel rm reach about 3 deletions/s).  Per phase: each rank's
 * time, the rate of the slowest rank times the number of ranks (as mdtest reports
 * it), and min/max/mean over ranks.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel.h"

enum { P_CREATE, P_OPEN, P_STAT, P_REMOVE, P_N };
static const char *phase_names[P_N] = {"create", "open", "stat", "remove"};

typedef struct {
    sbk_ctx *ctx;
    int dirfd;            /* the directory holding this rank's files */
    char dirname[64];     /* its name inside the run directory, "" for the run directory */
    long created;         /* files of this rank that exist now */
    char *data;           /* file contents for --file-size */
} md;

static void file_name(const md *m, long i, char *out, size_t len)
{
    snprintf(out, len, "f.%d.%ld", m->ctx->rank, i);
}

typedef struct {
    md *m;
    long first, step;
    long removed;
    int err;
} remover;

static void *remove_some(void *arg)
{
    remover *r = arg;
    char name[64];
    for (long i = r->first; i < r->m->created; i += r->step) {
        file_name(r->m, i, name, sizeof name);
        if (unlinkat(r->m->dirfd, name, 0) != 0) {
            r->err = errno;
            break;
        }
        r->removed++;
    }
    return NULL;
}

/* Runs one phase on this rank; returns items done, sets *seconds. */
static long run_phase(md *m, int phase, double *seconds)
{
    sbk_ctx *ctx = m->ctx;
    const sbk_config *c = ctx->cfg;
    const char *pname = phase_names[phase];
    char name[64];
    long done = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = sbk_now();
    if (ctx->error.code == 0) {
        switch (phase) {
        case P_CREATE:
            for (long i = 0; i < c->files; i++) {
                if (c->stonewall > 0 && sbk_now() - start >= c->stonewall)
                    break;
                file_name(m, i, name, sizeof name);
                int fd = openat(m->dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW |
                                O_CLOEXEC, 0644);
                if (fd < 0) {
                    sbk_fail(ctx, sbk_code_for_errno(errno), errno, pname, 0,
                             "create %s/%s%s%s: %s", ctx->rundir, m->dirname,
                             m->dirname[0] ? "/" : "", name, strerror(errno));
                    break;
                }
                m->created++;
                if (c->file_size > 0) {
                    ssize_t n = write(fd, m->data, (size_t)c->file_size);
                    if (n != (ssize_t)c->file_size) {
                        int e = n < 0 ? errno : ENOSPC;
                        sbk_fail(ctx, sbk_code_for_errno(e), e, pname,
                                 (uint64_t)done * (uint64_t)c->file_size, "write %s/%s: %s",
                                 ctx->rundir, name, strerror(e));
                        close(fd);
                        break;
                    }
                }
                if (close(fd) != 0) {
                    sbk_fail(ctx, sbk_code_for_errno(errno), errno, pname, 0, "close %s: %s",
                             name, strerror(errno));
                    break;
                }
                done++;
            }
            break;
        case P_OPEN:
            for (long i = 0; i < m->created; i++) {
                file_name(m, i, name, sizeof name);
                int fd = openat(m->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || close(fd) != 0) {
                    sbk_fail(ctx, sbk_code_for_errno(errno), errno, pname, 0, "open %s: %s",
                             name, strerror(errno));
                    break;
                }
                done++;
            }
            break;
        case P_STAT:
            for (long i = 0; i < m->created; i++) {
                struct stat st;
                file_name(m, i, name, sizeof name);
                if (fstatat(m->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                    sbk_fail(ctx, sbk_code_for_errno(errno), errno, pname, 0, "stat %s: %s",
                             name, strerror(errno));
                    break;
                }
                done++;
            }
            break;
        case P_REMOVE: {
            int k = c->removers;
            remover *rs = calloc((size_t)k, sizeof *rs);
            pthread_t *th = calloc((size_t)k, sizeof *th);
            for (int i = 0; i < k; i++) {
                rs[i] = (remover){.m = m, .first = i, .step = k};
                if (k > 1)
                    pthread_create(&th[i], NULL, remove_some, &rs[i]);
                else
                    remove_some(&rs[i]);
            }
            for (int i = 0; i < k; i++) {
                if (k > 1)
                    pthread_join(th[i], NULL);
                done += rs[i].removed;
                if (rs[i].err)
                    sbk_fail(ctx, sbk_code_for_errno(rs[i].err), rs[i].err, pname, 0,
                             "remove in %s: %s", ctx->rundir, strerror(rs[i].err));
            }
            /* Files not removed stay counted so the final clean-up finds them. */
            if (done == m->created)
                m->created = 0;
            free(rs);
            free(th);
            break;
        }
        }
    }
    *seconds = sbk_now() - start;
    if (phase == P_CREATE)
        ctx->phase_bytes = (uint64_t)done * (uint64_t)c->file_size;
    return done;
}

/* Untimed clean-up between repetitions and at the end. */
static void remove_created(md *m)
{
    char name[64];
    for (long i = 0; i < m->created; i++) {
        file_name(m, i, name, sizeof name);
        unlinkat(m->dirfd, name, 0);
    }
    m->created = 0;
}

int sbk_mode_metadata(sbk_ctx *ctx, sbk_json *j)
{
    const sbk_config *c = ctx->cfg;
    md m = {.ctx = ctx, .dirfd = ctx->rundir_fd};
    if (c->file_size > 0) {
        m.data = malloc((size_t)c->file_size);
        memset(m.data, 0x5a, (size_t)c->file_size);
    }
    if (c->dir_per_rank) {
        snprintf(m.dirname, sizeof m.dirname, "d.%d", ctx->rank);
        if (mkdirat(ctx->rundir_fd, m.dirname, 0755) != 0)
            sbk_fail(ctx, sbk_code_for_errno(errno), errno, "setup", 0, "mkdir %s/%s: %s",
                     ctx->rundir, m.dirname, strerror(errno));
        else
            m.dirfd = openat(ctx->rundir_fd, m.dirname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    }
    int code = sbk_agree(ctx);
    double *times = ctx->rank == 0 ? calloc((size_t)ctx->size, sizeof(double)) : NULL;
    double *items = ctx->rank == 0 ? calloc((size_t)ctx->size, sizeof(double)) : NULL;
    double *rates = ctx->rank == 0 ? calloc((size_t)ctx->size, sizeof(double)) : NULL;
    static double series[P_N][4096];
    int reps_done = 0;

    if (ctx->rank == 0)
        jw_arr(j, "repetitions");
    for (int rep = 0; rep < c->reps && code == 0; rep++) {
        if (ctx->rank == 0) {
            jw_obj(j, NULL);
            jw_int(j, "rep", rep);
            jw_obj(j, "phases");
        }
        for (int p = 0; p < P_N; p++) {
            if (!(c->phases & (1 << p)))
                continue;
            double secs = 0;
            double n = (double)run_phase(&m, p, &secs);
            MPI_Gather(&secs, 1, MPI_DOUBLE, times, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            MPI_Gather(&n, 1, MPI_DOUBLE, items, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (ctx->rank == 0) {
                double total = 0, slowest = 0;
                for (int r = 0; r < ctx->size; r++) {
                    total += items[r];
                    if (times[r] > slowest)
                        slowest = times[r];
                    rates[r] = times[r] > 0 ? items[r] / times[r] : NAN;
                }
                double rate = slowest > 0 ? total / slowest : NAN;
                series[p][rep] = rate;
                jw_obj(j, phase_names[p]);
                jw_obj(j, "per_rank");
                jw_doubles(j, "time", times, (size_t)ctx->size);
                jw_doubles(j, "items", items, (size_t)ctx->size);
                jw_end_obj(j);
                jw_summary(j, "time_s", sbk_summarize(times, (size_t)ctx->size));
                jw_summary(j, "rate_per_rank_ops", sbk_summarize(rates, (size_t)ctx->size));
                jw_num(j, "items", total);
                jw_num(j, "rate_ops", rate);
                if (p == P_REMOVE)
                    jw_int(j, "removers", c->removers);
                jw_end_obj(j);
            }
            code = sbk_agree(ctx);
            if (code)
                break;
        }
        if (ctx->rank == 0) {
            jw_end_obj(j);
            jw_bool(j, "complete", code == 0);
            jw_end_obj(j);
        }
        if (rep + 1 < c->reps || !c->keep)
            remove_created(&m);
        reps_done = rep + 1;
    }
    if (ctx->rank == 0) {
        jw_end_arr(j);
        jw_obj(j, "summary");
        for (int p = 0; p < P_N; p++)
            if (c->phases & (1 << p)) {
                jw_obj(j, phase_names[p]);
                jw_summary(j, "rate_ops", sbk_summarize(series[p], (size_t)reps_done));
                jw_end_obj(j);
            }
        jw_end_obj(j);
        if (c->table) {
            printf("scratchbench-kernel metadata: %d ranks on %d node(s), %ld files per rank, %s, "
                   "%s (%s)\n", ctx->size, ctx->nnodes, c->files,
                   c->dir_per_rank ? "directory per rank" : "one shared directory", ctx->target,
                   ctx->fstype);
            printf("%-8s %6s %14s %14s %14s %10s\n", "phase", "reps", "min ops/s", "max ops/s",
                   "trimmed ops/s", "cv");
            for (int p = 0; p < P_N; p++)
                if (c->phases & (1 << p)) {
                    sbk_summary s = sbk_summarize(series[p], (size_t)reps_done);
                    printf("%-8s %6d %14.1f %14.1f %14.1f %9.1f%%\n", phase_names[p], reps_done,
                           s.min, s.max, s.trimmed_mean, 100.0 * (isfinite(s.cv) ? s.cv : 0));
                }
        }
    }
    if (code != 0 && !c->keep)
        remove_created(&m);
    if (c->dir_per_rank && m.dirfd >= 0 && m.dirfd != ctx->rundir_fd) {
        close(m.dirfd);
        if (!c->keep)
            unlinkat(ctx->rundir_fd, m.dirname, AT_REMOVEDIR);
    }
    free(times);
    free(items);
    free(rates);
    free(m.data);
    return code;
}
