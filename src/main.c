/* scratchbench-kernel: MPI set-up, the command line, the run directories, the report.
 * Modes register themselves (mode_*.c); nothing here names one. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

/* The whole report in one write() where the file system allows (a short write goes on). */
static void write_report(int fd, const char *report, size_t len, const char *name)
{
    if (fd < 0)
        return;
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, report + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "scratchbench-kernel: error: writing the report to %s: %s\n",
                    name ? name : "standard output", n < 0 ? strerror(errno) : "no progress");
            return;
        }
        done += (size_t)n;
    }
}

int main(int argc, char **argv)
{
    int provided;
    /* A SIGTERM (scancel, a time limit) that comes while MPI starts up, which can take
     * seconds on a loaded node, waits blocked until our handler is in place, so the run
     * still stops cleanly; threads MPI starts inherit the mask and never take it. */
    sigset_t stop_signals, before;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigprocmask(SIG_BLOCK, &stop_signals, &before);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    sbk_catch_stop_signals();
    sigprocmask(SIG_SETMASK, &before, NULL);
    sbk_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);

    sbk_config cfg;
    const sbk_mode *mode = NULL;
    void *opts = NULL;
    int rc = sbk_parse_args(argc, argv, &cfg, &mode, &opts);
    if (rc < 0) {
        if (ctx.rank == 0) {
            if (rc == -1)
                sbk_print_help(stdout);
            else if (rc == -3)
                sbk_list_backends(stdout);
            else
                fputs("scratchbench-kernel " SBK_VERSION " (output schema " SBK_SCHEMA_VERSION
                      ")\n",
                      stdout);
        }
        MPI_Finalize();
        return 0;
    }
    if (rc) {
        if (ctx.rank == 0)
            fprintf(stderr, "scratchbench-kernel: error: %s (see --help)\n", sbk_usage_error());
        MPI_Finalize();
        return rc;
    }

    /* Open the report file first: a bad --output should fail before any I/O.  The report
     * is composed in memory and written with one write() to an O_APPEND descriptor, so
     * that copies of the kernel started by a launcher whose PMI does not match the MPI
     * library leave whole reports one after the other (which the parser names), never
     * one report overwriting part of another. */
    int out_fd = -1, out_err = 0;
    char *report = NULL;
    size_t report_len = 0;
    FILE *out = NULL;
    if (ctx.rank == 0) {
        if (cfg.output) {
            out_fd = open(cfg.output, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
            if (out_fd < 0)
                out_err = errno;
        }
        if (!out_err && !(out = open_memstream(&report, &report_len)))
            out_err = errno;
    }
    MPI_Bcast(&out_err, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (out_err) {
        if (ctx.rank == 0)
            fprintf(stderr, "scratchbench-kernel: error: --output %s: %s\n",
                    cfg.output ? cfg.output : "(memory)", strerror(out_err));
        MPI_Finalize();
        return SBK_EUSAGE;
    }

    int code = sbk_run_report(&ctx, &cfg, mode, opts, out);
    if (ctx.rank == 0) {
        fclose(out);
        write_report(cfg.output ? out_fd : (cfg.table ? -1 : STDOUT_FILENO), report, report_len,
                     cfg.output);
        if (out_fd >= 0)
            close(out_fd);
        free(report);
    }
    free(opts);
    free((void *)cfg.dirs.v);
    MPI_Finalize();
    return code;
}
