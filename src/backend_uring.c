/* io_uring engine through Debian's liburing: one ring per rank, requests prepared as
 * plain IORING_OP_READ/WRITE/FSYNC (what fio's io_uring engine does by default), a batch
 * submitted in calls of up to 4, the last of which waits for the next completion, and
 * completions reaped without copying.  Task work runs only when the rank enters the
 * kernel (DEFER_TASKRUN, Linux 6.1+; older kernels get the plain ring): that last call
 * posts every completion that came in meanwhile, and the reap takes them all. */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

#define FSYNC_BIT (1ULL << 63)
/* Requests per submitting call.  A call's sequential requests reach the block layer as
 * one plug and merge into one device request; a device that serves several requests at
 * once (virtio-blk here) is kept busier by more, smaller ones.  A whole refill in one call
 * left the device idle between refills; calls of 8 wrote 4 KiB blocks at depth 16 into a
 * laid-out file 6% slower than fio, whose commits carry about 4; calls of 4, for both
 * programs, 15% faster than calls of 8 and at parity with fio (docs/benchmarks.md, "Calls
 * of 8" and "Calls of 4").  ci/benchmarks/diskperf_vs_fio.py has fio submit the same way. */
#define SUBMIT_CALL_MAX 4
#define STRINGIFY(x) #x
#define AS_TEXT(x) STRINGIFY(x) /* the number, for --list-backends */

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
    while (*got < max) {
        struct io_uring_cqe *cqe = NULL;
        int rc = *got < min ? io_uring_wait_cqe(ring, &cqe) : io_uring_peek_cqe(ring, &cqe);
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
    .about = "io_uring through liburing: plain read/write/fsync, up to " AS_TEXT(
        SUBMIT_CALL_MAX) " requests per system call",
    .init = uring_init,
    .submit = uring_submit,
    .reap = uring_reap,
    .fini = uring_fini,
    .refused = uring_refused,
};
