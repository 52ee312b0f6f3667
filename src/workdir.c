/* Run directories: the only places the kernel writes.
 *
 * Rank 0 resolves every --dir, refuses "/", non-directories and a directory given
 * twice, and makes a fresh subdirectory in each with mkdir (which fails rather than
 * reuse an existing one).  A directory that is not shared between nodes (node-local
 * disks such as /localscratch) does not show rank 0's run directory on other nodes:
 * there the first rank of the node makes the same one, and removes it at the end.
 * Every file is opened relative to a run directory's descriptor with O_NOFOLLOW (or,
 * in the metadata mode's path lookup, by a full path through directories the kernel
 * made), and removal uses names the kernel generated, so a planted symlink can neither
 * redirect a write nor a delete outside it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernel.h"

int sbk_path(const sbk_ctx *ctx, int t, char *out, size_t len, const char *name)
{
    int n = snprintf(out, len, "%s/%s", ctx->targets[t].rundir, name);
    return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

typedef struct {
    int code, err;
    char msg[240];
} setup_status;

__attribute__((format(printf, 4, 5))) static void set_status(setup_status *s, int code, int err,
                                                             const char *fmt, ...)
{
    if (s->code)
        return;
    s->code = code;
    s->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg, sizeof s->msg, fmt, ap);
    va_end(ap);
}

/* Rank 0: resolve and check one --dir into t->path. */
static void resolve_target(const char *dir, sbk_target *t, setup_status *s)
{
    struct stat st;
    char resolved[PATH_MAX];
    if (!realpath(dir, resolved) || stat(resolved, &st) != 0)
        set_status(s, errno == EACCES ? SBK_EPERM : SBK_ENODIR, errno,
                   "target directory %.120s: %s", dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        set_status(s, SBK_ENODIR, ENOTDIR, "target %.120s is not a directory", dir);
    else if (strcmp(resolved, "/") == 0)
        set_status(s, SBK_EUSAGE, EINVAL, "refusing to write in the root directory (--dir %.120s)",
                   dir);
    else
        snprintf(t->path, sizeof t->path, "%s", resolved);
}

static void open_existing(const sbk_config *c, sbk_target *t, setup_status *s)
{
    /* Reading a kept run directory: it becomes the run directory, but it is not ours,
     * so nothing in it is ever removed. */
    char resolved[PATH_MAX], manifest[PATH_MAX + 32];
    struct stat st;
    errno = 0;
    if (!realpath(c->existing, resolved) || stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
        int e = errno ? errno : ENOTDIR;
        set_status(s, SBK_ENODIR, e, "--existing %.120s: not a directory (%s)", c->existing,
                   strerror(e));
        return;
    }
    snprintf(manifest, sizeof manifest, "%s/" SBK_MANIFEST, resolved);
    if (access(manifest, R_OK) != 0) {
        set_status(s, SBK_EUSAGE, errno,
                   "--existing %.120s: no " SBK_MANIFEST " inside, so "
                   "not a run directory kept by --keep",
                   c->existing);
        return;
    }
    snprintf(t->rundir, sizeof t->rundir, "%s", resolved);
    char *slash = strrchr(resolved, '/');
    if (slash && slash != resolved)
        *slash = '\0';
    snprintf(t->path, sizeof t->path, "%s", resolved);
}

static void make_rundirs(const sbk_ctx *ctx, sbk_target *ts, int n, setup_status *s)
{
    const sbk_config *c = ctx->cfg;
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    const char *job = getenv("SLURM_JOB_ID");
    if (!job)
        job = getenv("LSB_JOBID");
    int made = 0;
    for (int i = 0; i < n && !s->code; i++) {
        resolve_target(c->dirs.v[i], &ts[i], s);
        for (int k = 0; k < i && !s->code; k++)
            if (!strcmp(ts[k].path, ts[i].path))
                set_status(s, SBK_EUSAGE, EINVAL, "--dir %.100s is given twice (as %.100s)",
                           c->dirs.v[i], c->dirs.v[k]);
        if (s->code)
            break;
        int len = snprintf(ts[i].rundir, sizeof ts[i].rundir, "%s/sbk.%s.%s.%.20s.%ld", ts[i].path,
                           ctx->mode->name, stamp, job ? job : "nojob", (long)getpid());
        if (len < 0 || (size_t)len >= sizeof ts[i].rundir) {
            ts[i].rundir[0] = '\0';
            set_status(s, SBK_EUSAGE, ENAMETOOLONG, "--dir %.120s: path is too long", c->dirs.v[i]);
        } else if (mkdir(ts[i].rundir, 0755) != 0) {
            int e = errno;
            ts[i].rundir[0] = '\0';
            set_status(s, sbk_code_for_errno(e), e, "cannot create a run directory in %.120s: %s",
                       ts[i].path, strerror(e));
        } else {
            made++;
        }
    }
    if (s->code)
        /* Undo: a run that cannot start leaves nothing behind. */
        for (int i = 0; i < made; i++) {
            rmdir(ts[i].rundir);
            ts[i].rundir[0] = '\0';
        }
}

int sbk_workdir_open(sbk_ctx *ctx)
{
    const sbk_config *c = ctx->cfg;
    int n = c->existing ? 1 : c->dirs.n;
    setup_status status;
    memset(&status, 0, sizeof status);
    ctx->ntargets = n;
    ctx->targets = calloc((size_t)n, sizeof *ctx->targets);
    for (int i = 0; i < n; i++) {
        ctx->targets[i].fd = -1;
        snprintf(ctx->targets[i].fstype, sizeof ctx->targets[i].fstype, "unknown");
    }
    if (ctx->rank == 0) {
        if (c->existing)
            open_existing(c, &ctx->targets[0], &status);
        else
            make_rundirs(ctx, ctx->targets, n, &status);
    }
    MPI_Bcast(&status, sizeof status, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        MPI_Bcast(ctx->targets[i].path, sizeof ctx->targets[i].path, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Bcast(ctx->targets[i].rundir, sizeof ctx->targets[i].rundir, MPI_CHAR, 0,
                  MPI_COMM_WORLD);
        ctx->targets[i].created = ctx->rank == 0 && !c->existing && ctx->targets[i].rundir[0];
    }
    if (status.code) {
        if (ctx->rank == 0)
            sbk_fail(ctx, status.code, status.err, "setup", 0, "%s", status.msg);
        return status.code;
    }

    for (int i = 0; i < n; i++) {
        sbk_target *t = &ctx->targets[i];
        t->fd = open(t->rundir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int missing = t->fd < 0 && errno == ENOENT && !c->existing, err = errno;
        int node_missing = 0, any_missing = 0;
        /* A node that does not see rank 0's run directory has its own disk there. */
        MPI_Allreduce(&missing, &any_missing, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any_missing) {
            MPI_Comm node_comm;
            MPI_Comm_split(MPI_COMM_WORLD, ctx->node_index, ctx->rank, &node_comm);
            MPI_Allreduce(&missing, &node_missing, 1, MPI_INT, MPI_MAX, node_comm);
            if (node_missing && ctx->node_rank == 0) {
                struct stat st;
                if (stat(t->path, &st) != 0 || !S_ISDIR(st.st_mode))
                    sbk_fail(ctx, SBK_ENODIR, errno ? errno : ENOTDIR, "setup", 0,
                             "target directory %.120s is missing on node %s", t->path, ctx->node);
                else if (mkdir(t->rundir, 0755) != 0)
                    sbk_fail(ctx, sbk_code_for_errno(errno), errno, "setup", 0,
                             "cannot create a run directory in %.120s on node %s: %s", t->path,
                             ctx->node, strerror(errno));
                else
                    t->created = 1;
            }
            MPI_Barrier(node_comm);
            MPI_Comm_free(&node_comm);
            if (missing && ctx->error.code == 0) {
                t->fd = open(t->rundir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                err = errno;
            }
        }
        t->shared = !any_missing;
        if (t->fd < 0 && ctx->error.code == 0)
            sbk_fail(ctx, sbk_code_for_errno(err), err, "setup", 0, "cannot open %.120s: %s",
                     t->rundir, strerror(err));
        sbk_fsinfo(t->rundir, t->fstype, sizeof t->fstype, &t->dio_align);
    }
    return sbk_agree(ctx);
}

int sbk_workdir_close(sbk_ctx *ctx)
{
    int rc = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < ctx->ntargets; i++) {
        sbk_target *t = &ctx->targets[i];
        if (t->fd >= 0)
            close(t->fd);
        t->fd = -1;
        if (!t->created)
            continue;
        if (ctx->cfg->keep && !sbk_stop_signal) {
            if (ctx->rank == 0)
                fprintf(stderr, "scratchbench-kernel: kept the files in %s\n", t->rundir);
        } else if (rmdir(t->rundir) != 0) {
            /* Not empty: something we did not create is inside, or a phase failed
             * before its files were removed.  Leave it for a person to look at. */
            fprintf(stderr, "scratchbench-kernel: warning: left %s in place (%s)\n", t->rundir,
                    strerror(errno));
            rc = errno;
        }
    }
    return rc;
}
