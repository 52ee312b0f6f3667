/* The repetition loop every mode runs in.
 *
 * A mode plans its phases once (sbk_plan_add); the core then runs, per repetition and
 * per iteration, each phase between barriers, defeats the cache before the phases that
 * read what an earlier one wrote, agrees on errors, gathers each phase's per-rank
 * record to rank 0, writes the phase (per-rank arrays, statistics over ranks, totals,
 * the mode's figures, stonewall and verification tallies), keeps the figures the mode
 * marks for the summary over repetitions, and finally writes the summary, the --table
 * and, for kept runs, the manifest that --existing reads. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel.h"

typedef struct series {
    char phase[48];
    char figure[48];
    int unit;
    double *v;
    size_t n, cap;
} series;

struct sbk_run_state {
    sbk_phase *plan;
    int nplan, plan_cap;
    series *series;
    int nseries, series_cap;
    int keep_figures; /* the repetition being reported completed */
};

struct sbk_manifest {
    int n;
    char **key, **value;
};

static struct sbk_run_state *state_of(sbk_ctx *ctx)
{
    if (!ctx->run)
        ctx->run = calloc(1, sizeof *ctx->run);
    return ctx->run;
}

void sbk_plan_add(sbk_ctx *ctx, const sbk_phase *ph)
{
    struct sbk_run_state *rs = state_of(ctx);
    if (rs->nplan == rs->plan_cap) {
        rs->plan_cap = rs->plan_cap ? 2 * rs->plan_cap : 8;
        rs->plan = realloc(rs->plan, (size_t)rs->plan_cap * sizeof *rs->plan);
    }
    rs->plan[rs->nplan++] = *ph;
}

int sbk_stonewall_reached(const sbk_ctx *ctx, double phase_start)
{
    return sbk_stop_signal ||
           (ctx->cfg->stonewall > 0 && sbk_now() - phase_start >= ctx->cfg->stonewall);
}

void sbk_rec_verify(sbk_rec *rec, const sbk_verify_result *r)
{
    if (!r->bad_words)
        return;
    if (rec->bad_words == 0)
        rec->first_bad_byte = r->first_bad_word * 8;
    rec->bad_words += r->bad_words;
    rec->stale_words += r->stale_words;
}

double sbk_col_max(const sbk_gathered *g, int field)
{
    double m = 0;
    for (int r = 0; r < g->nranks; r++)
        if (g->time[field][r] > m)
            m = g->time[field][r];
    return m;
}

double sbk_col_min(const sbk_gathered *g, int field)
{
    double m = INFINITY;
    for (int r = 0; r < g->nranks; r++)
        if (g->time[field][r] < m)
            m = g->time[field][r];
    return m;
}

uint64_t sbk_col_sum(const sbk_gathered *g, int field)
{
    uint64_t s = 0;
    for (int r = 0; r < g->nranks; r++)
        s += g->count[field][r];
    return s;
}

void sbk_figure(sbk_ctx *ctx, sbk_json *j, const sbk_phase *ph, const char *key, double value,
                int unit)
{
    jw_num(j, key, value);
    struct sbk_run_state *rs = state_of(ctx);
    if (!rs->keep_figures)
        return;
    series *s = NULL;
    for (int i = 0; i < rs->nseries && !s; i++)
        if (!strcmp(rs->series[i].phase, ph->name) && !strcmp(rs->series[i].figure, key))
            s = &rs->series[i];
    if (!s) {
        if (rs->nseries == rs->series_cap) {
            rs->series_cap = rs->series_cap ? 2 * rs->series_cap : 16;
            rs->series = realloc(rs->series, (size_t)rs->series_cap * sizeof *rs->series);
        }
        s = &rs->series[rs->nseries++];
        memset(s, 0, sizeof *s);
        snprintf(s->phase, sizeof s->phase, "%s", ph->name);
        snprintf(s->figure, sizeof s->figure, "%s", key);
        s->unit = unit;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = value;
}

/* ---- records ---- */
static sbk_rec *new_records(const struct sbk_run_state *rs)
{
    sbk_rec *recs = calloc((size_t)rs->nplan, sizeof *recs);
    for (int p = 0; p < rs->nplan; p++) {
        size_t n = (size_t)rs->plan[p].nfields;
        recs[p].time = calloc(n ? n : 1, sizeof(double));
        recs[p].count = calloc(n ? n : 1, sizeof(uint64_t));
    }
    return recs;
}

/* The wall clock, as a system monitor's samples are stamped (Python's time.time()). */
static double unix_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void clear_records(const struct sbk_run_state *rs, sbk_rec *recs)
{
    for (int p = 0; p < rs->nplan; p++) {
        size_t n = (size_t)rs->plan[p].nfields;
        memset(recs[p].time, 0, (n ? n : 1) * sizeof(double));
        memset(recs[p].count, 0, (n ? n : 1) * sizeof(uint64_t));
        recs[p].bad_words = recs[p].stale_words = 0;
        recs[p].first_bad_byte = -1;
        recs[p].stonewall_hit = 0;
        recs[p].window_unix_s[0] = recs[p].window_unix_s[1] = 0.0;
    }
}

static void free_records(const struct sbk_run_state *rs, sbk_rec *recs)
{
    for (int p = 0; p < rs->nplan; p++) {
        free(recs[p].time);
        free(recs[p].count);
    }
    free(recs);
}

/* Collective: gather one phase to rank 0 and write it there; returns its bad words. */
static uint64_t gather_and_report(sbk_ctx *ctx, const sbk_phase *ph, const sbk_rec *rec,
                                  sbk_json *j)
{
    int n = ctx->size, nf = ph->nfields, nc = nf + 4;
    double *times = ctx->rank == 0 ? calloc((size_t)(n * (nf ? nf : 1)), sizeof *times) : NULL;
    uint64_t *counts = ctx->rank == 0 ? calloc((size_t)(n * nc), sizeof *counts) : NULL;
    uint64_t *mine = calloc((size_t)nc, sizeof *mine);
    memcpy(mine, rec->count, (size_t)nf * sizeof *mine);
    mine[nf] = rec->bad_words;
    mine[nf + 1] = rec->stale_words;
    mine[nf + 2] = (uint64_t)(rec->first_bad_byte + 1);
    mine[nf + 3] = (uint64_t)rec->stonewall_hit;
    MPI_Gather(rec->time, nf, MPI_DOUBLE, times, nf, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(mine, nc, MPI_UINT64_T, counts, nc, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    free(mine);
    if (ctx->rank != 0)
        return 0;

    /* Columns [field][rank]. */
    sbk_gathered g = {.nranks = n};
    g.time = calloc((size_t)(nf ? nf : 1), sizeof *g.time);
    g.count = calloc((size_t)(nf ? nf : 1), sizeof *g.count);
    for (int f = 0; f < nf; f++) {
        g.time[f] = calloc((size_t)n, sizeof(double));
        g.count[f] = calloc((size_t)n, sizeof(uint64_t));
        for (int r = 0; r < n; r++) {
            g.time[f][r] = times[r * nf + f];
            g.count[f][r] = counts[r * nc + f];
        }
    }
    g.bad_words = calloc((size_t)n, sizeof *g.bad_words);
    g.stale_words = calloc((size_t)n, sizeof *g.stale_words);
    g.first_bad_byte = calloc((size_t)n, sizeof *g.first_bad_byte);
    g.stonewall_hit = calloc((size_t)n, sizeof *g.stonewall_hit);
    uint64_t bad = 0, stale = 0;
    int hit = 0;
    for (int r = 0; r < n; r++) {
        g.bad_words[r] = counts[r * nc + nf];
        g.stale_words[r] = counts[r * nc + nf + 1];
        g.first_bad_byte[r] = (int64_t)counts[r * nc + nf + 2] - 1;
        g.stonewall_hit[r] = (int)counts[r * nc + nf + 3];
        bad += g.bad_words[r];
        stale += g.stale_words[r];
        hit += g.stonewall_hit[r] != 0;
    }

    jw_obj(j, ph->name);
    jw_obj(j, "per_rank");
    for (int f = 0; f < nf; f++)
        if (ph->fields[f].kind == SBK_TIMER)
            jw_doubles(j, ph->fields[f].name, g.time[f], (size_t)n);
        else
            jw_uints(j, ph->fields[f].name, g.count[f], (size_t)n);
    jw_end_obj(j);
    int timers = 0;
    for (int f = 0; f < nf; f++)
        timers += ph->fields[f].kind == SBK_TIMER;
    if (timers) {
        jw_obj(j, "time_s");
        for (int f = 0; f < nf; f++)
            if (ph->fields[f].kind == SBK_TIMER)
                jw_summary(j, ph->fields[f].name, sbk_summarize(g.time[f], (size_t)n));
        jw_end_obj(j);
    }
    for (int f = 0; f < nf; f++)
        if (ph->fields[f].kind == SBK_TOTAL)
            jw_uint(j, ph->fields[f].name, sbk_col_sum(&g, f));
    if (ctx->mode->report_phase)
        ctx->mode->report_phase(ctx, ph, &g, j);
    if (ph->flags & SBK_PH_STONEWALL)
        jw_int(j, "stonewall_hit_ranks", hit);
    jw_unix_times(j, "window_unix_s", rec->window_unix_s, 2);
    if (ph->flags & SBK_PH_DATA) {
        jw_obj(j, "verify");
        jw_uint(j, "bad_words", bad);
        jw_uint(j, "stale_words", stale);
        jw_arr(j, "first_bad_byte");
        for (int r = 0; r < n; r++)
            if (g.bad_words[r] > 0) {
                jw_obj(j, NULL);
                jw_int(j, "rank", r);
                jw_int(j, "byte", (long long)g.first_bad_byte[r]);
                jw_end_obj(j);
            }
        jw_end_arr(j);
        jw_end_obj(j);
    }
    jw_end_obj(j);

    for (int f = 0; f < nf; f++) {
        free(g.time[f]);
        free(g.count[f]);
    }
    free(g.time);
    free(g.count);
    free(g.bad_words);
    free(g.stale_words);
    free(g.first_bad_byte);
    free(g.stonewall_hit);
    free(times);
    free(counts);
    return bad;
}

/* ---- cache defeat: between a phase that writes and one that reads it back ---- */
static void defeat_cache(sbk_ctx *ctx, double *resident, double *scan_s)
{
    const sbk_config *c = ctx->cfg;
    if (c->fadvise && ctx->error.code == 0 && ctx->mode->written_file) {
        /* Each rank drops the files it wrote: their pages are cached on its node. */
        char name[256];
        int t = 0;
        for (int i = 0; ctx->mode->written_file(ctx, i, &t, name, sizeof name) == 0; i++) {
            int fd = openat(ctx->targets[t].fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0)
                continue;
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

/* ---- the manifest of a kept run ---- */
#define MANIFEST_HEADER "scratchbench-kernel-manifest 2"

const char *sbk_manifest_get(const sbk_manifest *m, const char *key)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->key[i], key))
            return m->value[i];
    return NULL;
}

/* Collective: rank 0 writes the manifest of a kept run directory.  A manifest that
 * cannot be written (the data filled the file system to its last block) fails the run
 * with the errno's code: a kept directory without one is of no use to a later
 * --existing, and "no space" tells the caller to try a smaller data set. */
static int write_manifest(sbk_ctx *ctx)
{
    sbk_target *t = &ctx->targets[0];
    if (ctx->rank == 0) {
        int fd = openat(t->fd, SBK_MANIFEST, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        int err = f ? 0 : errno;
        if (f) {
            fprintf(f, MANIFEST_HEADER "\nmode %s\nnranks %d\nseed %ld\ngeneration %llu\n",
                    ctx->mode->name, ctx->size, ctx->cfg->seed,
                    (unsigned long long)ctx->generation);
            if (ctx->mode->manifest_write)
                ctx->mode->manifest_write(ctx, f);
            if (fflush(f) != 0 || fsync(fileno(f)) != 0)
                err = errno;
            if (fclose(f) != 0 && !err)
                err = errno;
            if (err)
                unlinkat(t->fd, SBK_MANIFEST, 0);
        } else if (fd >= 0) {
            close(fd);
        }
        if (err)
            sbk_fail(ctx, sbk_code_for_errno(err), err, "keep", 0,
                     "cannot write %s/%s, so the kept data could not be used again: %s", t->rundir,
                     SBK_MANIFEST, strerror(err));
    }
    return sbk_agree(ctx);
}

/* Collective: rank 0 reads the manifest, every rank parses the same text. */
static int read_manifest(sbk_ctx *ctx)
{
    sbk_target *t = &ctx->targets[0];
    char *text = NULL;
    long len = 0;
    if (ctx->rank == 0) {
        int fd = openat(t->fd, SBK_MANIFEST, O_RDONLY | O_NOFOLLOW);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        text = calloc(1 << 16, 1);
        if (f) {
            len = (long)fread(text, 1, (1 << 16) - 1, f);
            fclose(f);
        }
    }
    MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (ctx->rank != 0)
        text = calloc((size_t)len + 1, 1);
    MPI_Bcast(text, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
    text[len] = '\0';

    sbk_manifest m = {0};
    char msg[200] = "";
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    if (!line || strcmp(line, MANIFEST_HEADER) != 0)
        snprintf(msg, sizeof msg, "unreadable, or written by another version of the kernel");
    for (line = strtok_r(NULL, "\n", &save); line && !msg[0]; line = strtok_r(NULL, "\n", &save)) {
        char *space = strchr(line, ' ');
        m.key = realloc(m.key, (size_t)(m.n + 1) * sizeof *m.key);
        m.value = realloc(m.value, (size_t)(m.n + 1) * sizeof *m.value);
        if (space)
            *space = '\0';
        m.key[m.n] = line;
        m.value[m.n] = space ? space + 1 : line + strlen(line);
        m.n++;
    }
    const char *v;
    if (!msg[0] && (!(v = sbk_manifest_get(&m, "mode")) || strcmp(v, ctx->mode->name)))
        snprintf(msg, sizeof msg, "written by mode %s", v ? v : "?");
    if (!msg[0] && (!(v = sbk_manifest_get(&m, "nranks")) || atoi(v) != ctx->size))
        snprintf(msg, sizeof msg, "written by %s ranks, read by %d", v ? v : "?", ctx->size);
    if (!msg[0] && (!(v = sbk_manifest_get(&m, "seed")) || atol(v) != ctx->cfg->seed))
        snprintf(msg, sizeof msg, "written with --seed %s", v ? v : "?");
    if (!msg[0] && !(v = sbk_manifest_get(&m, "generation")))
        snprintf(msg, sizeof msg, "it has no generation");
    if (!msg[0])
        ctx->generation = strtoull(v, NULL, 10);
    if (!msg[0] && ctx->mode->manifest_read)
        ctx->mode->manifest_read(ctx, &m, msg, sizeof msg);
    if (msg[0] && ctx->rank == 0)
        sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                 "--existing %.120s: %s/" SBK_MANIFEST " does not fit this run: %s",
                 ctx->cfg->existing, t->rundir, msg);
    free(m.key);
    free(m.value);
    free(text);
    return sbk_agree(ctx);
}

/* ---- summary and table (rank 0) ---- */
static void write_summary(const struct sbk_run_state *rs, sbk_json *j, uint64_t bad_total)
{
    jw_obj(j, "summary");
    for (int i = 0; i < rs->nseries; i++) {
        const series *s = &rs->series[i];
        if (i == 0 || strcmp(s->phase, rs->series[i - 1].phase)) {
            /* Series are kept in the order of the first repetition: phase by phase. */
            if (i)
                jw_end_obj(j);
            jw_obj(j, s->phase);
        }
        jw_summary(j, s->figure, sbk_summarize(s->v, s->n));
    }
    if (rs->nseries)
        jw_end_obj(j);
    jw_uint(j, "verify_bad_words", bad_total);
    jw_end_obj(j);
}

static void print_table(const sbk_ctx *ctx, const struct sbk_run_state *rs)
{
    static const struct {
        const char *name;
        double scale;
    } units[] = {{"MiB/s", 1.0 / 1048576.0}, {"ops/s", 1.0}, {"%", 100.0}, {"s", 1.0}, {"", 1.0}};
    char what[400] = "";
    if (ctx->mode->describe)
        ctx->mode->describe(ctx, what, sizeof what);
    printf("scratchbench-kernel %s: %d ranks on %d node(s), %s\n", ctx->mode->name, ctx->size,
           ctx->nnodes, what);
    printf("%-22s %-26s %-6s %5s %11s %11s %11s %11s %7s\n", "phase", "figure", "unit", "reps",
           "min", "max", "trimmed", "stddev", "cv");
    for (int i = 0; i < rs->nseries; i++) {
        const series *s = &rs->series[i];
        sbk_summary sum = sbk_summarize(s->v, s->n);
        double k = units[s->unit].scale;
        printf("%-22s %-26s %-6s %5zu %11.5g %11.5g %11.5g %11.5g %6.1f%%\n", s->phase, s->figure,
               units[s->unit].name, sum.n, sum.min * k, sum.max * k, sum.trimmed_mean * k,
               sum.stddev * k, 100.0 * (isfinite(sum.cv) ? sum.cv : 0.0));
    }
}

/* ---- the loop ---- */
/* One repetition: every iteration's phases in plan order (the cache defeated before the
 * phases that ask), then its JSON record with the phases that ran.  Returns the code
 * every rank agreed on. */
static int run_repetition(sbk_ctx *ctx, struct sbk_run_state *rs, sbk_rec *recs, int *ran,
                          sbk_json *j, uint64_t *bad_total)
{
    const sbk_config *c = ctx->cfg;
    const sbk_mode *m = ctx->mode;
    int code = 0;
    clear_records(rs, recs);
    memset(ran, 0, (size_t)(rs->nplan ? rs->nplan : 1) * sizeof *ran);
    double resident = -1.0, scan_s = 0.0;
    for (long it = 0; it < ctx->iterations && code == 0; it++) {
        ctx->iter = it;
        if (!c->existing)
            ctx->generation = (uint64_t)(ctx->rep * ctx->iterations + it + 1);
        for (int p = 0; p < rs->nplan && code == 0; p++) {
            if (rs->plan[p].flags & SBK_PH_DEFEAT_CACHE) {
                defeat_cache(ctx, &resident, &scan_s);
                if ((code = sbk_agree(ctx)))
                    break;
            }
            ctx->phase_bytes = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            if (it == 0)
                recs[p].window_unix_s[0] = unix_now();
            m->run_phase(ctx, &rs->plan[p], &recs[p]);
            ran[p] = 1;
            sbk_stopped(ctx);
            code = sbk_agree(ctx); /* collective: every rank has ended the phase */
            recs[p].window_unix_s[1] = unix_now();
        }
    }
    double max_resident = -1.0;
    MPI_Reduce(&resident, &max_resident, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    rs->keep_figures = code == 0;
    jw_obj(j, NULL);
    jw_int(j, "rep", ctx->rep);
    jw_bool(j, "complete", code == 0);
    if (m->features & SBK_F_READS) {
        jw_obj(j, "cache");
        if (c->fadvise)
            jw_num(j, "resident_fraction_after_drop", max_resident);
        if (c->scan_file)
            jw_num(j, "scan_s", scan_s);
        jw_end_obj(j);
    }
    jw_obj(j, "phases");
    for (int p = 0; p < rs->nplan; p++)
        if (ran[p] && (rs->plan[p].flags & SBK_PH_REPORT))
            *bad_total += gather_and_report(ctx, &rs->plan[p], &recs[p], j);
    jw_end_obj(j);
    jw_end_obj(j);
    return code;
}

/* After the repetitions: the summary, a verification failure of any rank as the run's
 * code, and the table when asked.  Returns the run's code. */
static int finish_run(sbk_ctx *ctx, struct sbk_run_state *rs, sbk_json *j, int code,
                      uint64_t bad_total)
{
    if (ctx->rank == 0)
        write_summary(rs, j, bad_total);
    int bad_any = ctx->rank == 0 && bad_total > 0;
    MPI_Bcast(&bad_any, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (code == 0 && bad_any) {
        if (ctx->rank == 0)
            sbk_fail(ctx, SBK_EVERIFY, 0, "read", 0,
                     "data verification failed: %llu of the 64-bit words read back differ "
                     "from those written (see verify in the JSON)",
                     (unsigned long long)bad_total);
        code = SBK_EVERIFY;
    }
    if (ctx->rank == 0 && ctx->cfg->table) {
        print_table(ctx, rs);
        if (code)
            printf("FAILED (exit %d, %s): the figures above are of the %d complete "
                   "repetition(s) only; the JSON's errors say which rank failed where\n",
                   code, sbk_reason_name(code), ctx->rep + (code == SBK_EVERIFY));
    }
    return code;
}

int sbk_run(sbk_ctx *ctx, sbk_json *j)
{
    const sbk_config *c = ctx->cfg;
    const sbk_mode *m = ctx->mode;
    struct sbk_run_state *rs = state_of(ctx);
    ctx->iterations = 1;
    int code = m->setup ? m->setup(ctx) : 0;
    if (code == 0 && c->existing)
        code = read_manifest(ctx);
    if (code) {
        if (m->teardown)
            m->teardown(ctx, code);
        return code;
    }

    sbk_rec *recs = new_records(rs);
    int *ran = calloc((size_t)(rs->nplan ? rs->nplan : 1), sizeof *ran);
    uint64_t bad_total = 0;
    jw_arr(j, "repetitions");
    for (int rep = 0; rep < c->reps && code == 0; rep++) {
        ctx->rep = rep;
        code = run_repetition(ctx, rs, recs, ran, j, &bad_total);
        if (m->end_rep)
            m->end_rep(ctx, rep + 1 >= c->reps || code != 0);
    }
    jw_end_arr(j);
    free_records(rs, recs);
    free(ran);

    code = finish_run(ctx, rs, j, code, bad_total);
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->keep && (m->features & SBK_F_EXISTING) && !c->existing && code == 0)
        code = write_manifest(ctx);
    if (m->teardown)
        m->teardown(ctx, code);

    for (int i = 0; i < rs->nseries; i++)
        free(rs->series[i].v);
    free(rs->series);
    free(rs->plan);
    free(rs);
    ctx->run = NULL;
    return code;
}

int sbk_run_report(sbk_ctx *ctx, const sbk_config *cfg, const sbk_mode *mode, void *opts, FILE *out)
{
    ctx->cfg = cfg;
    ctx->mode = mode;
    ctx->opts = opts;
    sbk_identify_node(ctx);
    if (cfg->shift == -1)
        ctx->shift = ctx->nnodes > 1 ? ctx->ranks_per_node : 0;
    else
        ctx->shift = cfg->shift % ctx->size;
    sbk_json j;
    jw_begin(&j, ctx->rank == 0 ? out : NULL);
    int code = sbk_workdir_open(ctx);
    jw_obj(&j, NULL);
    sbk_write_header(&j, ctx);
    if (code == 0)
        code = sbk_run(ctx, &j);
    sbk_workdir_close(ctx);
    jw_bool(&j, "complete", code == 0 || code == SBK_EVERIFY);
    sbk_write_errors(&j, ctx, code);
    jw_end_obj(&j);
    jw_finish(&j);
    free(ctx->targets);
    free(ctx->node_of);
    free(ctx->node_names);
    ctx->targets = NULL;
    ctx->node_of = NULL;
    ctx->node_names = NULL;
    return code;
}
