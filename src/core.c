/* Errors that every rank agrees on, host names, and the JSON header and trailer. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

double sbk_now(void) { return MPI_Wtime(); }

int sbk_code_for_errno(int err)
{
    switch (err) {
    case ENOSPC:
    case EDQUOT:
        return SBK_ENOSPACE;
    case EACCES:
    case EPERM:
    case EROFS:
        return SBK_EPERM;
    default:
        return SBK_EIO;
    }
}

int sbk_fail(sbk_ctx *ctx, int code, int err, const char *phase, uint64_t bytes_done,
             const char *fmt, ...)
{
    if (ctx->error.code != 0)
        return ctx->error.code; /* keep the first cause; later ones are consequences */
    ctx->error.code = code;
    ctx->error.err = err;
    ctx->error.rank = ctx->rank;
    ctx->error.bytes_done = bytes_done;
    snprintf(ctx->error.phase, sizeof ctx->error.phase, "%s", phase);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->error.message, sizeof ctx->error.message, fmt, ap);
    va_end(ap);
    return code;
}

int sbk_agree(sbk_ctx *ctx)
{
    int global = 0;
    MPI_Allreduce(&ctx->error.code, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return global;
}

char **sbk_gather_hosts(const sbk_ctx *ctx)
{
    char *all = NULL;
    if (ctx->rank == 0)
        all = malloc((size_t)ctx->size * 128);
    char mine[128];
    memset(mine, 0, sizeof mine);
    memcpy(mine, ctx->node, strnlen(ctx->node, 63));
    memcpy(mine + 64, ctx->host, strnlen(ctx->host, 63));
    MPI_Gather(mine, 128, MPI_CHAR, all, 128, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (ctx->rank != 0)
        return NULL;
    char **hosts = malloc((size_t)ctx->size * 2 * sizeof(char *));
    for (int r = 0; r < ctx->size; r++) {
        hosts[2 * r] = strndup(all + 128 * r, 63);
        hosts[2 * r + 1] = strndup(all + 128 * r + 64, 63);
    }
    free(all);
    return hosts;
}

void sbk_free_hosts(const sbk_ctx *ctx, char **hosts)
{
    if (!hosts)
        return;
    for (int r = 0; r < 2 * ctx->size; r++)
        free(hosts[r]);
    free(hosts);
}

static const char *api_name(sbk_api a) { return a == API_MPIIO ? "mpiio" : "posix"; }
static const char *fsync_name(sbk_fsync f)
{
    return f == FSYNC_INSIDE ? "inside" : f == FSYNC_OUTSIDE ? "outside" : "none";
}

void sbk_write_header(sbk_json *j, const sbk_ctx *ctx, const char *const *hosts)
{
    const sbk_config *c = ctx->cfg;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    nl = strchr(lib, ',');
    if (nl)
        *nl = '\0';

    jw_str(j, "schema_version", SBK_SCHEMA_VERSION);
    jw_obj(j, "tool");
    jw_str(j, "name", "scratchbench-kernel");
    jw_str(j, "version", SBK_VERSION);
    jw_end_obj(j);
    jw_str(j, "mode", c->mode);

    jw_obj(j, "config");
    jw_str(j, "dir", c->dir);
    jw_int(j, "reps", c->reps);
    jw_num(j, "stonewall_s", c->stonewall);
    jw_bool(j, "keep", c->keep);
    jw_int(j, "seed", (long long)c->seed);
    if (strcmp(c->mode, "iotest") == 0) {
        jw_int(j, "nr", c->nr);
        jw_int(j, "nc", c->nc);
        jw_int(j, "niter", c->niter);
        jw_int(j, "iread", c->iread);
        jw_int(j, "transfer_bytes", c->nr * 8);
        jw_int(j, "bytes_per_rank", (long long)c->nr * 8 * c->nc);
        jw_str(j, "layout", c->layout == LAYOUT_FPP ? "fpp" : "shared");
        jw_str(j, "api", api_name(c->api));
        jw_bool(j, "collective", c->collective);
        jw_bool(j, "verify", c->verify);
        jw_str(j, "existing", c->existing);
    } else {
        jw_int(j, "files_per_rank", c->files);
        jw_str(j, "dir_layout", c->dir_per_rank ? "dir-per-rank" : "shared-dir");
        jw_arr(j, "phases");
        static const char *names[] = {"create", "open", "stat", "remove"};
        for (int i = 0; i < 4; i++)
            if (c->phases & (1 << i))
                jw_str(j, NULL, names[i]);
        jw_end_arr(j);
        jw_int(j, "removers", c->removers);
        jw_int(j, "file_size", c->file_size);
    }
    jw_end_obj(j);

    jw_obj(j, "cache_defeat");
    jw_arr(j, "methods");
    if (c->direct)
        jw_str(j, NULL, "direct");
    if (c->fadvise)
        jw_str(j, NULL, "fadvise");
    if (c->scan_file)
        jw_str(j, NULL, "scan-file");
    if (ctx->shift)
        jw_str(j, NULL, "shift");
    jw_end_arr(j);
    jw_int(j, "shift", ctx->shift);
    jw_str(j, "scan_file", c->scan_file);
    jw_str(j, "fsync", fsync_name(c->fsync));
    jw_end_obj(j);

    jw_obj(j, "mpi");
    jw_str(j, "library", lib);
    jw_int(j, "nranks", ctx->size);
    jw_int(j, "nnodes", ctx->nnodes);
    jw_int(j, "ranks_per_node", ctx->ranks_per_node);
    jw_end_obj(j);

    jw_arr(j, "ranks");
    for (int r = 0; hosts && r < ctx->size; r++) {
        jw_obj(j, NULL);
        jw_int(j, "rank", r);
        jw_str(j, "node", hosts[2 * r]);
        jw_str(j, "host", hosts[2 * r + 1]);
        jw_end_obj(j);
    }
    jw_end_arr(j);

    jw_obj(j, "filesystem");
    jw_str(j, "target", ctx->target[0] ? ctx->target : c->dir);
    jw_str(j, "run_dir", ctx->rundir[0] ? ctx->rundir : NULL);
    jw_str(j, "type", ctx->fstype);
    jw_int(j, "dio_alignment", (long long)ctx->dio_align);
    jw_end_obj(j);
}

static const char *reason_name(int code)
{
    switch (code) {
    case SBK_OK: return "ok";
    case SBK_EUSAGE: return "invalid-arguments";
    case SBK_ENODIR: return "missing-directory";
    case SBK_EPERM: return "permission-denied";
    case SBK_ENOSPACE: return "no-space";
    case SBK_EVERIFY: return "verification-failed";
    case SBK_EIO: return "io-error";
    case SBK_ENODIRECT: return "direct-io-refused";
    default: return "internal-error";
    }
}

void sbk_write_errors(sbk_json *j, sbk_ctx *ctx, int code)
{
    sbk_error *all = NULL;
    if (ctx->rank == 0)
        all = calloc((size_t)ctx->size, sizeof *all);
    /* Ranks that did not fail still report what they moved in the failing phase, so
     * "bytes written before the failure" counts every rank. */
    if (ctx->error.code == 0)
        ctx->error.bytes_done = ctx->phase_bytes;
    MPI_Gather(&ctx->error, sizeof ctx->error, MPI_BYTE, all, sizeof ctx->error, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    if (ctx->rank != 0)
        return;
    uint64_t bytes_before = 0;
    int first = -1;
    jw_int(j, "exit_code", code);
    jw_str(j, "exit_reason", reason_name(code));
    jw_arr(j, "errors");
    for (int r = 0; r < ctx->size; r++) {
        bytes_before += all[r].bytes_done;
        if (all[r].code == 0)
            continue;
        /* Report the lowest rank that met the error the run exits with. */
        if (first < 0 || (all[r].code == code && all[first].code != code))
            first = r;
        jw_obj(j, NULL);
        jw_int(j, "rank", all[r].rank);
        jw_str(j, "phase", all[r].phase);
        jw_int(j, "errno", all[r].err);
        jw_str(j, "reason", reason_name(all[r].code));
        jw_str(j, "message", all[r].message);
        jw_int(j, "bytes_done", (long long)all[r].bytes_done);
        jw_end_obj(j);
    }
    jw_end_arr(j);
    if (first >= 0) {
        jw_int(j, "bytes_before_failure", (long long)bytes_before);
        /* One line for the person at the terminal; the JSON has every rank's. */
        if (all[first].code == SBK_ENOSPACE)
            fprintf(stderr, "scratchbench-kernel: error: %s (%llu bytes written by all ranks "
                    "before the failure)\n", all[first].message,
                    (unsigned long long)bytes_before);
        else
            fprintf(stderr, "scratchbench-kernel: error: %s\n", all[first].message);
    }
    free(all);
}
