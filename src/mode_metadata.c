/* metadata mode: seed 002's open/close-at-scale and clean-up findings.
 *
 * N files per rank, in one shared directory or one directory per rank, PATH_DEPTH
 * directories below the run directory.  Phases, each between barriers: create (open
 * O_CREAT|O_EXCL, optional write, close), open (open and close an existing file), stat,
 * remove (unlink, by k threads per rank, since seed 002 watched 4 parallel rm reach
 * about 3 deletions/s).  Lookup "path" passes each call the file's full path, as
 * applications and mdtest do, so every call walks PATH_DEPTH + the target's depth
 * components; lookup "handle" calls openat/fstatat/unlinkat on the directory's
 * descriptor, which measures the file system without the path walk.  Per phase: each
 * rank's time, the rate of the slowest rank times the number of ranks (as mdtest reports
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
static const char *const phase_names[P_N] = {"create", "open", "stat", "remove"};
enum { LOOKUP_PATH, LOOKUP_HANDLE };
static const char *const lookups[] = {"path", "handle", NULL};

typedef struct {
    long files, removers, file_size, path_depth;
    int dir_per_rank, phases, lookup;
} md_opts;

static int parse_phases(const char *value, void *field, char *err, size_t len)
{
    int mask = 0;
    char *copy = strdup(value), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int p = 0; p < P_N; p++)
            if (!strcmp(tok, phase_names[p])) {
                mask |= 1 << p;
                found = 1;
            }
        if (!found) {
            snprintf(err, len,
                     "unknown phase '%s': expected a comma list of create,open,stat,"
                     "remove",
                     tok);
            free(copy);
            return -1;
        }
    }
    free(copy);
    *(int *)field = mask;
    return 0;
}

#define OPT(f) offsetof(md_opts, f)
/* An option table keeps several fields a line. */
/* clang-format off */
static const sbk_option md_options[] = {
    {.name = "files", .kind = SBK_OPT_LONG, .offset = OPT(files), .arg = "N",
     .help = "files per rank [1000]", .lo = 1, .hi = 1L << 32},
    {.name = "dir-per-rank", .kind = SBK_OPT_FLAG, .offset = OPT(dir_per_rank),
     .help = "one directory per rank instead of one shared directory"},
    {.name = "lookup", .kind = SBK_OPT_CHOICE, .offset = OPT(lookup), .arg = "path|handle",
     .help = "path: every call gets the file's full path (open, stat, unlink),\n"
             "as applications and mdtest do; handle: openat/fstatat/unlinkat\n"
             "on the directory's descriptor, no path walk [path]", .choices = lookups},
    {.name = "path-depth", .kind = SBK_OPT_LONG, .offset = OPT(path_depth), .arg = "N",
     .help = "directories between the run directory and each file (with\n"
             "--dir-per-rank the last is the rank's own) [2]", .hi = 64},
    {.name = "phases", .kind = SBK_OPT_CUSTOM, .offset = OPT(phases), .arg = "LIST",
     .help = "comma list of create,open,stat,remove [all]", .parse = parse_phases},
    {.name = "removers", .kind = SBK_OPT_LONG, .offset = OPT(removers), .arg = "K",
     .help = "threads per rank that unlink in parallel [1]", .lo = 1, .hi = 256},
    {.name = "file-size", .kind = SBK_OPT_LONG, .offset = OPT(file_size), .arg = "BYTES",
     .help = "bytes written into each created file [0]", .hi = 1L << 30},
    {0},
};
/* clang-format on */

static void md_defaults(void *p)
{
    *(md_opts *)p = (md_opts){.files = 1000,
                              .phases = (1 << P_N) - 1,
                              .removers = 1,
                              .path_depth = 2,
                              .lookup = LOOKUP_PATH};
}

static int md_check(const sbk_config *c, const void *p, char *err, size_t len)
{
    (void)c;
    const md_opts *o = p;
    if (!o->phases)
        snprintf(err, len, "--phases: expected at least one phase");
    else if (!(o->phases & (1 << P_CREATE)))
        snprintf(err, len,
                 "--phases: 'create' is required, the other phases work on the files "
                 "it makes");
    else if (o->dir_per_rank && o->path_depth < 1)
        snprintf(err, len,
                 "--path-depth 0 leaves no room for --dir-per-rank's directories: "
                 "expected at least 1");
    return err[0] != '\0';
}

enum { F_TIME, F_ITEMS, F_N };
static const sbk_field md_fields[F_N] = {{"time", SBK_TIMER}, {"items", SBK_TOTAL}};

typedef struct {
    const md_opts *o;
    char rel[4096];         /* this rank's directory relative to the run directory, "" = itself */
    char prefix[8200];      /* full path of this rank's directory, with a trailing '/' */
    char peer_prefix[8200]; /* the same for the rank whose files open and stat visit */
    int dirfd, peer_dirfd;  /* lookup handle */
    int made_chain;         /* shared directories made (rank 0) */
    int made_own;           /* this rank's directory made */
    long created;           /* files of this rank that exist now */
    long *created_all;      /* created, every rank's, after the create phase */
    char *data;             /* file contents for --file-size */
} md;

static void item_name(int rank, long i, char *out, size_t len)
{
    snprintf(out, len, "f.%d.%ld", rank, i);
}

/* The shared directories p1/.../pK (K = depth, or depth-1 with a directory per rank). */
static int shared_levels(const md_opts *o)
{
    return o->dir_per_rank ? (int)o->path_depth - 1 : (int)o->path_depth;
}

static void rank_dir(const md *m, int rank, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int l = 1; l <= shared_levels(m->o); l++)
        used += (size_t)snprintf(out + used, len - used, "%sp%d", l > 1 ? "/" : "", l);
    if (m->o->dir_per_rank)
        snprintf(out + used, len - used, "%sd.%d", used ? "/" : "", rank);
}

static void md_config_json(const sbk_ctx *ctx, sbk_json *j)
{
    const md_opts *o = ctx->opts;
    jw_int(j, "files_per_rank", o->files);
    jw_str(j, "dir_layout", o->dir_per_rank ? "dir-per-rank" : "shared-dir");
    jw_str(j, "lookup", lookups[o->lookup]);
    jw_int(j, "path_depth", o->path_depth);
    if (ctx->targets && ctx->targets[0].rundir[0]) {
        /* What a lookup walks: rank 0's first file, as every call names it. */
        char dir[4096], path[8500];
        md tmp = {.o = o};
        rank_dir(&tmp, 0, dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s%sf.0.0", ctx->targets[0].rundir, dir, dir[0] ? "/" : "");
        jw_str(j, "example_path", path);
        int components = 0;
        for (const char *c = path; *c; c++)
            components += *c == '/';
        jw_int(j, "path_components", components);
    }
    jw_arr(j, "phases");
    for (int i = 0; i < P_N; i++)
        if (o->phases & (1 << i))
            jw_str(j, NULL, phase_names[i]);
    jw_end_arr(j);
    jw_int(j, "removers", o->removers);
    jw_int(j, "file_size", o->file_size);
}

static void md_describe(const sbk_ctx *ctx, char *buf, size_t len)
{
    const md_opts *o = ctx->opts;
    snprintf(buf, len, "%ld files per rank, %s, %s lookup at depth %ld, %s (%s)", o->files,
             o->dir_per_rank ? "directory per rank" : "one shared directory", lookups[o->lookup],
             o->path_depth, ctx->targets[0].path, ctx->targets[0].fstype);
}

/* The directories the files live in, made fresh (untimed): rank 0 the shared levels
 * p1/.../pK, then each rank its own d.<rank>; then every rank's handles on them.
 * Collective; returns sbk_agree(). */
static int make_dirs(sbk_ctx *ctx)
{
    md *m = ctx->state;
    const md_opts *o = m->o;
    const sbk_target *t = &ctx->targets[0];
    if (ctx->rank == 0) {
        char dir[4096] = "";
        for (int l = 1; l <= shared_levels(o) && ctx->error.code == 0; l++) {
            size_t used = strlen(dir);
            snprintf(dir + used, sizeof dir - used, "%sp%d", l > 1 ? "/" : "", l);
            if (mkdirat(t->fd, dir, 0755) != 0)
                sbk_fail(ctx, sbk_code_for_errno(errno), errno, "setup", 0, "mkdir %s/%s: %s",
                         t->rundir, dir, strerror(errno));
            else
                m->made_chain = l;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rank_dir(m, ctx->rank, m->rel, sizeof m->rel);
    if (o->dir_per_rank && ctx->error.code == 0) {
        if (mkdirat(t->fd, m->rel, 0755) != 0)
            sbk_fail(ctx, sbk_code_for_errno(errno), errno, "setup", 0, "mkdir %s/%s: %s",
                     t->rundir, m->rel, strerror(errno));
        else
            m->made_own = 1;
    }
    int code = sbk_agree(ctx);
    if (code)
        return code;
    int peer = (ctx->rank + ctx->shift) % ctx->size;
    char peer_rel[4096];
    rank_dir(m, peer, peer_rel, sizeof peer_rel);
    snprintf(m->prefix, sizeof m->prefix, "%s/%s%s", t->rundir, m->rel, m->rel[0] ? "/" : "");
    snprintf(m->peer_prefix, sizeof m->peer_prefix, "%s/%s%s", t->rundir, peer_rel,
             peer_rel[0] ? "/" : "");
    if (o->lookup == LOOKUP_HANDLE) {
        m->dirfd = m->rel[0] ? openat(t->fd, m->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW) : t->fd;
        m->peer_dirfd =
            peer_rel[0] ? openat(t->fd, peer_rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW) : t->fd;
        if (m->dirfd < 0 || m->peer_dirfd < 0)
            sbk_fail(ctx, sbk_code_for_errno(errno), errno, "setup", 0, "open %s: %s", m->prefix,
                     strerror(errno));
    }
    return sbk_agree(ctx);
}

/* Collective: close the handles and remove the directories make_dirs made (empty by
 * now: their files are removed first). */
static void remove_dirs(sbk_ctx *ctx)
{
    md *m = ctx->state;
    const sbk_target *t = &ctx->targets[0];
    if (m->dirfd >= 0 && m->dirfd != t->fd)
        close(m->dirfd);
    if (m->peer_dirfd >= 0 && m->peer_dirfd != t->fd)
        close(m->peer_dirfd);
    m->dirfd = m->peer_dirfd = -1;
    if (m->made_own)
        unlinkat(t->fd, m->rel, AT_REMOVEDIR);
    m->made_own = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (ctx->rank == 0)
        for (int l = m->made_chain; l >= 1; l--) {
            char dir[4096] = "";
            for (int k = 1; k <= l; k++) {
                size_t used = strlen(dir);
                snprintf(dir + used, sizeof dir - used, "%sp%d", k > 1 ? "/" : "", k);
            }
            unlinkat(t->fd, dir, AT_REMOVEDIR);
        }
    m->made_chain = 0;
    MPI_Barrier(MPI_COMM_WORLD);
}

static int md_setup(sbk_ctx *ctx)
{
    const md_opts *o = ctx->opts;
    md *m = calloc(1, sizeof *m);
    ctx->state = m;
    m->o = o;
    m->dirfd = m->peer_dirfd = -1;
    m->created_all = calloc((size_t)ctx->size, sizeof *m->created_all);
    if (o->file_size > 0) {
        m->data = malloc((size_t)o->file_size);
        memset(m->data, 0x5a, (size_t)o->file_size);
    }
    int code = make_dirs(ctx);
    if (code)
        return code;
    for (int p = 0; p < P_N; p++)
        if (o->phases & (1 << p)) {
            sbk_phase ph = {.kind = p,
                            .fields = md_fields,
                            .nfields = F_N,
                            .flags = SBK_PH_REPORT | (p == P_CREATE ? SBK_PH_STONEWALL : 0u)};
            snprintf(ph.name, sizeof ph.name, "%s", phase_names[p]);
            sbk_plan_add(ctx, &ph);
        }
    return sbk_agree(ctx);
}

/* The name a call passes: a full path, or a name relative to a directory handle. */
static const char *lookup_name(const md *m, int peer, int rank, long i, char *buf, size_t len)
{
    if (m->o->lookup == LOOKUP_HANDLE) {
        item_name(rank, i, buf, len);
    } else {
        const char *prefix = peer ? m->peer_prefix : m->prefix;
        size_t n = strlen(prefix);
        memcpy(buf, prefix, n);
        item_name(rank, i, buf + n, len - n);
    }
    return buf;
}

static int lookup_dir(const md *m, int peer)
{
    return m->o->lookup == LOOKUP_HANDLE ? (peer ? m->peer_dirfd : m->dirfd) : AT_FDCWD;
}

typedef struct {
    const md *m;
    int rank;
    long first, step, count;
    long removed;
    int err;
    char where[8300];
} remover;

static void *remove_some(void *arg)
{
    remover *r = arg;
    char name[8300];
    int dir = lookup_dir(r->m, 0);
    for (long i = r->first; i < r->count; i += r->step) {
        if (unlinkat(dir, lookup_name(r->m, 0, r->rank, i, name, sizeof name), 0) != 0) {
            r->err = errno;
            snprintf(r->where, sizeof r->where, "%s", name);
            break;
        }
        r->removed++;
    }
    return NULL;
}

/* Each phase's loop returns the files it handled; a failure is recorded by sbk_fail and
 * ends the loop (the files created so far stay counted for the clean-up). */
static long md_create(sbk_ctx *ctx, md *m, const char *pname, sbk_rec *rec, double start)
{
    const md_opts *o = m->o;
    char name[8300];
    long done = 0;
    int dir = lookup_dir(m, 0);
    for (long i = 0; i < o->files; i++) {
        if (sbk_stonewall_reached(ctx, start)) {
            rec->stonewall_hit = 1;
            break;
        }
        lookup_name(m, 0, ctx->rank, i, name, sizeof name);
        int fd = openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
            sbk_fail(ctx, sbk_code_for_errno(errno), errno, pname, 0, "create %s%s: %s",
                     o->lookup == LOOKUP_HANDLE ? m->prefix : "", name, strerror(errno));
            break;
        }
        m->created++;
        if (o->file_size > 0) {
            ssize_t n = write(fd, m->data, (size_t)o->file_size);
            if (n != (ssize_t)o->file_size) {
                int e = n < 0 ? errno : ENOSPC;
                sbk_fail(ctx, sbk_code_for_errno(e), e, pname,
                         (uint64_t)done * (uint64_t)o->file_size, "write %s%s: %s",
                         o->lookup == LOOKUP_HANDLE ? m->prefix : "", name, strerror(e));
                close(fd);
                break;
            }
        }
        if (close(fd) != 0) {
            sbk_fail(ctx, sbk_code_for_errno(errno), errno, pname, 0, "close %s: %s", name,
                     strerror(errno));
            break;
        }
        done++;
    }
    return done;
}

/* Open and close, or stat, every file of the peer rank (the shifted one). */
static long md_visit(sbk_ctx *ctx, md *m, const char *pname, int stat_only)
{
    int peer = (ctx->rank + ctx->shift) % ctx->size;
    long peer_files = m->created_all[peer];
    char name[8300];
    long done = 0;
    int dir = lookup_dir(m, 1);
    for (long i = 0; i < peer_files; i++) {
        lookup_name(m, 1, peer, i, name, sizeof name);
        int failed;
        if (stat_only) {
            struct stat st;
            failed = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0;
        } else {
            int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            failed = fd < 0 || close(fd) != 0;
        }
        if (failed) {
            sbk_fail(ctx, sbk_code_for_errno(errno), errno, pname, 0, "%s %s: %s",
                     stat_only ? "stat" : "open", name, strerror(errno));
            break;
        }
        done++;
    }
    return done;
}

/* Remove this rank's files with o->removers threads, each every k-th file. */
static long md_remove(sbk_ctx *ctx, md *m, const char *pname)
{
    int k = (int)m->o->removers;
    long done = 0;
    remover *rs = calloc((size_t)k, sizeof *rs);
    pthread_t *th = calloc((size_t)k, sizeof *th);
    if (!rs || !th) {
        sbk_fail(ctx, SBK_EINTERNAL, ENOMEM, pname, 0, "cannot allocate %d removers", k);
        free(rs);
        free(th);
        return 0;
    }
    for (int i = 0; i < k; i++) {
        rs[i] = (remover){.m = m, .rank = ctx->rank, .first = i, .step = k, .count = m->created};
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
            sbk_fail(ctx, sbk_code_for_errno(rs[i].err), rs[i].err, pname, 0, "remove %s: %s",
                     rs[i].where, strerror(rs[i].err));
    }
    /* Files not removed stay counted so the final clean-up finds them. */
    if (done == m->created)
        m->created = 0;
    free(rs);
    free(th);
    return done;
}

static void md_run_phase(sbk_ctx *ctx, const sbk_phase *ph, sbk_rec *rec)
{
    md *m = ctx->state;
    long done = 0;
    double start = sbk_now();
    if (ctx->error.code == 0) {
        switch (ph->kind) {
        case P_CREATE: done = md_create(ctx, m, ph->name, rec, start); break;
        case P_OPEN:
        case P_STAT: done = md_visit(ctx, m, ph->name, ph->kind == P_STAT); break;
        case P_REMOVE: done = md_remove(ctx, m, ph->name); break;
        }
    }
    rec->time[F_TIME] += sbk_now() - start;
    rec->count[F_ITEMS] += (uint64_t)done;
    if (ph->kind == P_CREATE) {
        ctx->phase_bytes = (uint64_t)done * (uint64_t)m->o->file_size;
        /* open and stat may visit another rank's files: they need its count. */
        MPI_Allgather(&m->created, 1, MPI_LONG, m->created_all, 1, MPI_LONG, MPI_COMM_WORLD);
    }
}

static void md_report_phase(sbk_ctx *ctx, const sbk_phase *ph, const sbk_gathered *g, sbk_json *j)
{
    const md_opts *o = ctx->opts;
    int n = g->nranks;
    double *rates = calloc((size_t)n, sizeof *rates);
    for (int r = 0; r < n; r++)
        rates[r] = g->time[F_TIME][r] > 0 ? (double)g->count[F_ITEMS][r] / g->time[F_TIME][r] : NAN;
    jw_summary(j, "rate_per_rank_ops", sbk_summarize(rates, (size_t)n));
    free(rates);
    double slowest = sbk_col_max(g, F_TIME);
    sbk_figure(ctx, j, ph, "rate_ops",
               slowest > 0 ? (double)sbk_col_sum(g, F_ITEMS) / slowest : NAN, SBK_UNIT_OPS);
    if (ph->kind == P_REMOVE)
        jw_int(j, "removers", o->removers);
}

/* Untimed clean-up between repetitions and at the end. */
static void remove_created(sbk_ctx *ctx)
{
    md *m = ctx->state;
    char name[8300];
    int dir = lookup_dir(m, 0);
    for (long i = 0; i < m->created; i++)
        unlinkat(dir, lookup_name(m, 0, ctx->rank, i, name, sizeof name), 0);
    m->created = 0;
}

/* Each repetition creates its files in directories made fresh for it, as a job's new
 * directory or each of mdtest's iterations does: a directory that already held the
 * files of the repetition before has grown its blocks and index, and creations in it
 * run faster (about 1.5x on ext4) than a job would see.  With --path-depth 0 and one
 * shared directory the files sit in the run directory itself, which stays. */
static void md_end_rep(sbk_ctx *ctx, int last)
{
    if (last && ctx->cfg->keep)
        return;
    remove_created(ctx);
    if (!last) {
        remove_dirs(ctx);
        make_dirs(ctx);
    }
}

static void md_teardown(sbk_ctx *ctx, int code)
{
    (void)code;
    md *m = ctx->state;
    if (!m)
        return;
    const sbk_target *t = &ctx->targets[0];
    if (!ctx->cfg->keep) {
        remove_created(ctx);
        remove_dirs(ctx);
    } else {
        if (m->dirfd >= 0 && m->dirfd != t->fd)
            close(m->dirfd);
        if (m->peer_dirfd >= 0 && m->peer_dirfd != t->fd)
            close(m->peer_dirfd);
    }
    free(m->created_all);
    free(m->data);
    free(m);
    ctx->state = NULL;
}

static const sbk_mode metadata_mode = {
    .name = "metadata",
    .about = "open/close at scale, stat, and deletion cost with parallel removers,\n"
             "by full paths of a set depth (as applications do) or directory handles",
    .features = SBK_F_STONEWALL | SBK_F_SHIFT,
    .options = md_options,
    .opts_size = sizeof(md_opts),
    .defaults = md_defaults,
    .check = md_check,
    .config_json = md_config_json,
    .describe = md_describe,
    .setup = md_setup,
    .run_phase = md_run_phase,
    .report_phase = md_report_phase,
    .end_rep = md_end_rep,
    .teardown = md_teardown,
};
SBK_REGISTER_MODE(metadata_mode)
