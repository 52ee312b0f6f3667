/* io_uring engine through Debian's liburing: one ring per rank, requests prepared as
 * plain IORING_OP_READ/WRITE/FSYNC (what fio's io_uring engine does by default), a batch
 * submitted in calls of up to 8, the last of which waits for the next completion, and
 * completions reaped without copying.  Task work runs only when the rank asks for
 * completions (DEFER_TASKRUN, Linux 6.1+; older kernels get the plain ring), so after
 * a wake-up the reap asks once more for what came in meanwhile, as fio's submit-then-
 * reap loop does. */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

#define FSYNC_BIT (1ULL << 63)
/* Requests per submitting call.  A refill of 16 or 32 sequential 4 KiB requests in one
 * call reaches the block layer as one plug: merged into one or two device requests that
 * complete together, so the queue drained before each refill.  In calls of 8, the kernel
 * and fio (--iodepth_batch_submit=8) alike wrote 14-28% faster into a laid-out file at
 * those depths on virtio-blk; 1 MiB requests and reads were unchanged (docs/benchmarks.md,
 * "Calls of 8").  ci/benchmarks/diskperf_vs_fio.py has fio submit the same way. */
#define SUBMIT_CALL_MAX 8

static int uring_init(sbk_queue *q, unsigned entries)
{
    struct io_uring *ring = calloc(1, sizeof *ring);
    if (!ring)
        return ENOMEM;
    /* The newest flags first; EINVAL means an older kernel: try the next set. */
    static const unsigned flag_sets[] = {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
                                         IORING_SETUP_COOP_TASKRUN, 0};
    int rc = -EINVAL;
    for (size_t i = 0; i < sizeof flag_sets / sizeof flag_sets[0] && rc == -EINVAL; i++)
        rc = io_uring_queue_init(entries, ring, flag_sets[i]);
    if (rc < 0) {
        free(ring);
        return -rc;
    }
    q->impl = ring;
    return 0;
}

/* Sends every prepared request (and with wait, waits for one completion); errno. */
static int uring_send(struct io_uring *ring, int wait)
{
    while (io_uring_sq_ready(ring) > 0) {
        int rc = wait ? io_uring_submit_and_wait(ring, 1) : io_uring_submit(ring);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN)
            return -rc;
    }
    return 0;
}

static int uring_submit(sbk_queue *q, const sbk_io *ios, unsigned n, int wait)
{
    struct io_uring *ring = q->impl;
    for (unsigned i = 0; i < n; i++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
        if (!sqe)
            return EBUSY; /* more requests than the ring holds: a caller's error */
        const sbk_io *io = &ios[i];
        if (io->op == SBK_IO_WRITE)
            io_uring_prep_write(sqe, io->fd, io->buf, (unsigned)io->len, io->offset);
        else if (io->op == SBK_IO_READ)
            io_uring_prep_read(sqe, io->fd, io->buf, (unsigned)io->len, io->offset);
        else
            io_uring_prep_fsync(sqe, io->fd, 0);
        io_uring_sqe_set_data64(sqe, io->tag | (io->op == SBK_IO_FSYNC ? FSYNC_BIT : 0));
        int last = i + 1 == n;
        if (last || io_uring_sq_ready(ring) >= SUBMIT_CALL_MAX) {
            int err = uring_send(ring, wait && last);
            if (err)
                return err;
        }
    }
    return 0;
}

static int uring_reap(sbk_queue *q, sbk_done *out, unsigned max, unsigned min, unsigned *got)
{
    struct io_uring *ring = q->impl;
    *got = 0;
    int flushed = 0;
    while (*got < max) {
        struct io_uring_cqe *cqe = NULL;
        int rc = *got < min ? io_uring_wait_cqe(ring, &cqe) : io_uring_peek_cqe(ring, &cqe);
        if (rc == -EAGAIN && !flushed && *got < q->inflight) {
            /* With DEFER_TASKRUN a completion reaches the ring only when the rank enters
             * the kernel: the ones that came in while it woke are posted now, so the
             * refill goes out as one batch rather than a request per wake-up (writes
             * into fallocated space complete one by one from a kernel worker). */
            flushed = 1;
            io_uring_get_events(ring);
            rc = io_uring_peek_cqe(ring, &cqe);
        }
        if (rc == -EINTR)
            continue;
        if (rc == -EAGAIN)
            break;
        if (rc < 0)
            return -rc;
        uint64_t data = io_uring_cqe_get_data64(cqe);
        sbk_done *d = &out[(*got)++];
        d->tag = data & ~FSYNC_BIT;
        d->op = data & FSYNC_BIT ? SBK_IO_FSYNC : SBK_IO_READ;
        d->err = cqe->res < 0 ? -cqe->res : 0;
        d->bytes = cqe->res > 0 ? (size_t)cqe->res : 0;
        io_uring_cqe_seen(ring, cqe);
    }
    return 0;
}

static void uring_fini(sbk_queue *q)
{
    io_uring_queue_exit(q->impl);
    free(q->impl);
    q->impl = NULL;
}

/* The host refuses io_uring (rather than the ring failing for want of a resource):
 * say why, when the kernel tells, and name the fallback. */
static int uring_refused(int err, char *msg, size_t len)
{
    char why[120] = "";
    FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
    int disabled = 0;
    if (f) {
        if (fscanf(f, "%d", &disabled) == 1 && disabled > 0)
            snprintf(why, sizeof why, "; /proc/sys/kernel/io_uring_disabled is %d", disabled);
        fclose(f);
    }
    if (!why[0] && (err == EPERM || err == EACCES))
        snprintf(why, sizeof why, "; a seccomp filter (as in containers) may block it");
    if (!why[0] && err == ENOMEM)
        snprintf(why, sizeof why, "; the locked-memory limit (ulimit -l) may be too small");
    if (!why[0] && err == ENOSYS)
        snprintf(why, sizeof why, "; this kernel has no io_uring");
    snprintf(msg, len,
             "io_uring is refused here (io_uring_setup: %s%s): run with --engine aio "
             "for POSIX AIO",
             strerror(err), why);
    return 1;
}

const sbk_engine sbk_engine_uring = {
    .name = "io_uring",
    .about = "io_uring through liburing: plain read/write/fsync, up to 8 requests per system call",
    .init = uring_init,
    .submit = uring_submit,
    .reap = uring_reap,
    .fini = uring_fini,
    .refused = uring_refused,
};
