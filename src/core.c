/* Errors that every rank agrees on, node identity, and the JSON header and trailer. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel.h"

double sbk_now(void) { return MPI_Wtime(); }

volatile sig_atomic_t sbk_stop_signal = 0;

static void on_stop_signal(int signo) { sbk_stop_signal = signo; }

void sbk_catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

int sbk_stopped(sbk_ctx *ctx)
{
    if (!sbk_stop_signal)
        return 0;
    sbk_fail(ctx, SBK_ESTOPPED, EINTR, "signal", ctx->phase_bytes, "stopped by signal %d",
             (int)sbk_stop_signal);
    return 1;
}

/* I/O buffers from 64 KiB up sit on transparent huge pages where the system allows
 * them (MADV_HUGEPAGE, THP "madvise" or "always").  A buffer of 4 KiB pages scattered
 * in physical memory is one DMA segment per page, and a device that takes fewer
 * segments per request than that (virtio-blk: 254) splits every O_DIRECT transfer of
 * 1 MiB in two: measured at 0.7x fio's read bandwidth (issue 28).  The buffer is
 * touched here, so the huge page is faulted in before any timer starts; where huge
 * pages are refused it is a plain page-aligned buffer. */
enum { HUGE_PAGE = 2 << 20, HUGE_FROM = 64 << 10 };

void *sbk_alloc_aligned(size_t align, size_t bytes)
{
    void *p = NULL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    if (bytes < HUGE_FROM || align > HUGE_PAGE)
        return posix_memalign(&p, align, bytes ? bytes : align) == 0 ? p : NULL;
    size_t whole = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, HUGE_PAGE, whole) != 0)
        return NULL;
    madvise(p, whole, MADV_HUGEPAGE);
    memset(p, 0, whole);
    return p;
}

int sbk_code_for_errno(int err)
{
    switch (err) {
    case ENOSPC:
    case EDQUOT: return SBK_ENOSPACE;
    case EACCES:
    case EPERM:
    case EROFS: return SBK_EPERM;
    default: return SBK_EIO;
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
    if (sbk_stop_signal && err == EINTR) {
        /* A transfer refused after SIGTERM: the signal is the cause, not an I/O error. */
        ctx->error.code = code = SBK_ESTOPPED;
        snprintf(ctx->error.message, sizeof ctx->error.message,
                 "stopped by signal %d%s%s (the scheduler cancelled the job or its time "
                 "limit came); the files made so far are removed",
                 (int)sbk_stop_signal, strcmp(phase, "signal") ? " in phase " : "",
                 strcmp(phase, "signal") ? phase : "");
    }
    return code;
}

int sbk_agree(sbk_ctx *ctx)
{
    int global = 0;
    MPI_Allreduce(&ctx->error.code, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return global;
}

/* Node identity: the scheduler's node name when there is one, since several Slurm
 * nodes can share one host.  Every rank learns every rank's node, so modes can place
 * readers relative to writers by node (jovian) and the core can name nodes. */
void sbk_identify_node(sbk_ctx *ctx)
{
    gethostname(ctx->host, sizeof ctx->host - 1);
    const char *node = getenv("SLURMD_NODENAME");
    snprintf(ctx->node, sizeof ctx->node, "%s", node && *node ? node : ctx->host);
    ctx->node_names = calloc((size_t)ctx->size, sizeof *ctx->node_names);
    ctx->node_of = calloc((size_t)ctx->size, sizeof *ctx->node_of);
    char mine[64];
    memset(mine, 0, sizeof mine);
    memcpy(mine, ctx->node, strnlen(ctx->node, 63));
    MPI_Allgather(mine, 64, MPI_CHAR, ctx->node_names, 64, MPI_CHAR, MPI_COMM_WORLD);
    ctx->nnodes = 0;
    ctx->node_rank = 0;
    ctx->ranks_per_node = 0;
    ctx->node_index = -1;
    for (int r = 0; r < ctx->size; r++) {
        int first = r;
        for (int q = 0; q < r; q++)
            if (!strncmp(ctx->node_names[q], ctx->node_names[r], 64)) {
                first = q;
                break;
            }
        ctx->node_of[r] = first == r ? ctx->nnodes++ : ctx->node_of[first];
        if (!strncmp(ctx->node_names[r], mine, 64)) {
            if (r < ctx->rank)
                ctx->node_rank++;
            ctx->ranks_per_node++;
        }
    }
    ctx->node_index = ctx->node_of[ctx->rank];
}

/* Host names of every rank, gathered to rank 0 (NULL elsewhere). */
static char (*gather_hosts(const sbk_ctx *ctx))[64]
{
    char(*all)[64] = ctx->rank == 0 ? calloc((size_t)ctx->size, sizeof *all) : NULL;
    char mine[64];
    memset(mine, 0, sizeof mine);
    memcpy(mine, ctx->host, strnlen(ctx->host, 63));
    MPI_Gather(mine, 64, MPI_CHAR, all, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
    return all;
}

static void write_target(sbk_json *j, const char *key, const sbk_target *t, const char *dir)
{
    jw_obj(j, key);
    jw_str(j, "target", t && t->path[0] ? t->path : dir);
    jw_str(j, "run_dir", t && t->rundir[0] ? t->rundir : NULL);
    jw_str(j, "type", t ? t->fstype : "unknown");
    jw_int(j, "dio_alignment", t ? (long long)t->dio_align : 0);
    if (t && t->rundir[0])
        jw_bool(j, "shared", t->shared);
    jw_end_obj(j);
}

void sbk_write_header(sbk_json *j, const sbk_ctx *ctx)
{
    const sbk_config *c = ctx->cfg;
    const sbk_mode *m = ctx->mode;
    char(*hosts)[64] = gather_hosts(ctx);
    if (ctx->rank != 0)
        return;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    lib[strcspn(lib, "\n,")] = '\0';
    const char *first_dir = c->dirs.n ? c->dirs.v[0] : NULL;

    jw_str(j, "schema_version", SBK_SCHEMA_VERSION);
    jw_obj(j, "tool");
    jw_str(j, "name", "scratchbench-kernel");
    jw_str(j, "version", SBK_VERSION);
    jw_end_obj(j);
    jw_str(j, "mode", m->name);

    jw_obj(j, "config");
    jw_str(j, "dir", first_dir);
    if (m->features & SBK_F_MULTI_DIR) {
        jw_arr(j, "dirs");
        for (int i = 0; i < c->dirs.n; i++)
            jw_str(j, NULL, c->dirs.v[i]);
        jw_end_arr(j);
    }
    jw_int(j, "reps", c->reps);
    jw_num(j, "stonewall_s", c->stonewall);
    jw_bool(j, "keep", c->keep);
    jw_int(j, "seed", (long long)c->seed);
    if (m->config_json)
        m->config_json(ctx, j);
    if (m->features & SBK_F_READS)
        jw_bool(j, "verify", c->verify);
    if (m->features & SBK_F_EXISTING)
        jw_str(j, "existing", c->existing);
    if (m->features & SBK_F_ENGINE)
        jw_str(j, "engine", sbk_engine_name(c->engine));
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
    jw_str(j, "fsync", sbk_fsync_name(c->fsync));
    jw_end_obj(j);

    jw_obj(j, "mpi");
    jw_str(j, "library", lib);
    jw_int(j, "nranks", ctx->size);
    jw_int(j, "nnodes", ctx->nnodes);
    jw_int(j, "ranks_per_node", ctx->ranks_per_node);
    jw_end_obj(j);

    jw_arr(j, "ranks");
    for (int r = 0; r < ctx->size; r++) {
        jw_obj(j, NULL);
        jw_int(j, "rank", r);
        jw_str(j, "node", ctx->node_names[r]);
        jw_str(j, "host", hosts[r]);
        jw_end_obj(j);
    }
    jw_end_arr(j);
    free(hosts);

    write_target(j, "filesystem", ctx->ntargets ? &ctx->targets[0] : NULL,
                 first_dir ? first_dir : c->existing);
    jw_arr(j, "targets");
    for (int t = 0; t < ctx->ntargets; t++)
        write_target(j, NULL, &ctx->targets[t], NULL);
    jw_end_arr(j);
}

const char *sbk_reason_name(int code)
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
    case SBK_ENOURING: return "io-uring-refused";
    case SBK_ESTOPPED: return "stopped-by-signal";
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
    jw_str(j, "exit_reason", sbk_reason_name(code));
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
        jw_str(j, "reason", sbk_reason_name(all[r].code));
        jw_str(j, "message", all[r].message);
        jw_uint(j, "bytes_done", all[r].bytes_done);
        jw_end_obj(j);
    }
    jw_end_arr(j);
    if (first >= 0) {
        jw_uint(j, "bytes_before_failure", bytes_before);
        /* One line for the person at the terminal; the JSON has every rank's. */
        if (all[first].code == SBK_ENOSPACE)
            fprintf(stderr,
                    "scratchbench-kernel: error: %s (%llu bytes written by all ranks "
                    "before the failure)\n",
                    all[first].message, (unsigned long long)bytes_before);
        else
            fprintf(stderr, "scratchbench-kernel: error: %s\n", all[first].message);
    }
    free(all);
}
