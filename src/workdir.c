/* The run directory: the only place the kernel writes.
 *
 * Rank 0 resolves the target, refuses "/" and non-directories, and makes a fresh
 * subdirectory with mkdir (which fails rather than reuse an existing one).  Every
 * file is opened relative to that directory's descriptor with O_NOFOLLOW, and
 * removal uses unlinkat on names the kernel generated, so a planted symlink can
 * neither redirect a write nor a delete outside it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernel.h"

int sbk_path(const sbk_ctx *ctx, char *out, size_t len, const char *name)
{
    int n = snprintf(out, len, "%s/%s", ctx->rundir, name);
    return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

int sbk_workdir_open(sbk_ctx *ctx)
{
    const char *dir = ctx->cfg->dir;
    struct {
        int code, err;
        char rundir[4096];
        char target[4096];
        char msg[200];
    } shared;
    memset(&shared, 0, sizeof shared);

    if (ctx->rank == 0 && ctx->cfg->existing) {
        /* Reading a kept run directory: it becomes the run directory, but it is not
         * ours, so nothing in it is ever removed. */
        char resolved[PATH_MAX], manifest[PATH_MAX + 32];
        struct stat st;
        if (!realpath(ctx->cfg->existing, resolved) || stat(resolved, &st) != 0 ||
            !S_ISDIR(st.st_mode)) {
            shared.err = errno ? errno : ENOTDIR;
            shared.code = SBK_ENODIR;
            snprintf(shared.msg, sizeof shared.msg, "--existing %.120s: not a directory (%s)",
                     ctx->cfg->existing, strerror(shared.err));
        } else if (snprintf(manifest, sizeof manifest, "%s/" SBK_MANIFEST, resolved) > 0 &&
                   access(manifest, R_OK) != 0) {
            shared.err = errno;
            shared.code = SBK_EUSAGE;
            snprintf(shared.msg, sizeof shared.msg, "--existing %.120s: no " SBK_MANIFEST
                     " inside, so not a run directory kept by --keep", ctx->cfg->existing);
        } else {
            snprintf(shared.rundir, sizeof shared.rundir, "%s", resolved);
            char *slash = strrchr(resolved, '/');
            if (slash && slash != resolved)
                *slash = '\0';
            snprintf(shared.target, sizeof shared.target, "%s", resolved);
        }
    } else if (ctx->rank == 0) {
        struct stat st;
        char resolved[PATH_MAX];
        if (!realpath(dir, resolved) || stat(resolved, &st) != 0) {
            shared.err = errno;
            shared.code = errno == EACCES ? SBK_EPERM : SBK_ENODIR;
            snprintf(shared.msg, sizeof shared.msg, "target directory %.120s: %s", dir,
                     strerror(shared.err));
        } else if (!S_ISDIR(st.st_mode)) {
            shared.err = ENOTDIR;
            shared.code = SBK_ENODIR;
            snprintf(shared.msg, sizeof shared.msg, "target %.120s is not a directory", dir);
        } else if (strcmp(resolved, "/") == 0) {
            shared.err = EINVAL;
            shared.code = SBK_EUSAGE;
            snprintf(shared.msg, sizeof shared.msg,
                     "refusing to write in the root directory (--dir %.120s)", dir);
        } else {
            snprintf(shared.target, sizeof shared.target, "%s", resolved);
            char stamp[32];
            time_t now = time(NULL);
            struct tm tm;
            gmtime_r(&now, &tm);
            strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
            const char *job = getenv("SLURM_JOB_ID");
            if (!job)
                job = getenv("LSB_JOBID");
            int n = snprintf(shared.rundir, sizeof shared.rundir, "%s/sbk.%s.%s.%.20s.%ld",
                             resolved, ctx->cfg->mode, stamp, job ? job : "nojob",
                             (long)getpid());
            if (n < 0 || (size_t)n >= sizeof shared.rundir) {
                shared.err = ENAMETOOLONG;
                shared.code = SBK_EUSAGE;
                snprintf(shared.msg, sizeof shared.msg, "--dir path is too long");
                shared.rundir[0] = '\0';
            } else if (mkdir(shared.rundir, 0755) != 0) {
                shared.err = errno;
                shared.code = sbk_code_for_errno(errno);
                snprintf(shared.msg, sizeof shared.msg, "cannot create a run directory in %.120s: %s",
                         resolved, strerror(shared.err));
                shared.rundir[0] = '\0';
            }
        }
    }
    MPI_Bcast(&shared, sizeof shared, MPI_BYTE, 0, MPI_COMM_WORLD);
    snprintf(ctx->target, sizeof ctx->target, "%s", shared.target);
    snprintf(ctx->rundir, sizeof ctx->rundir, "%s", shared.rundir);
    ctx->rundir_created = shared.rundir[0] != '\0' && !ctx->cfg->existing;
    if (shared.code) {
        if (ctx->rank == 0)
            sbk_fail(ctx, shared.code, shared.err, "setup", 0, "%s", shared.msg);
        return shared.code;
    }
    sbk_fsinfo(ctx->rundir, ctx->fstype, sizeof ctx->fstype, &ctx->dio_align);
    ctx->rundir_fd = open(ctx->rundir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (ctx->rundir_fd < 0)
        sbk_fail(ctx, sbk_code_for_errno(errno), errno, "setup", 0, "cannot open %.120s: %s",
                 ctx->rundir, strerror(errno));
    return sbk_agree(ctx);
}

int sbk_workdir_close(sbk_ctx *ctx)
{
    int rc = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (ctx->rundir_fd >= 0)
        close(ctx->rundir_fd);
    ctx->rundir_fd = -1;
    if (ctx->rank == 0 && ctx->rundir_created) {
        if (ctx->cfg->keep) {
            fprintf(stderr, "scratchbench-kernel: kept the files in %s\n", ctx->rundir);
        } else if (rmdir(ctx->rundir) != 0) {
            /* Not empty: something we did not create is inside, or a phase failed
             * before its files were removed.  Leave it for a person to look at. */
            fprintf(stderr, "scratchbench-kernel: warning: left %s in place (%s)\n",
                    ctx->rundir, strerror(errno));
            rc = errno;
        }
    }
    return rc;
}
