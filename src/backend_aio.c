/* POSIX AIO engine (glibc): the fallback where io_uring is refused.  glibc serves
 * aio_* requests with a pool of threads doing pread/pwrite and serialises the requests
 * of one file descriptor, so the device sees at most one request per file at a time;
 * the depth counted is the application's (requests submitted and not yet reaped). */
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

typedef struct {
    unsigned n;
    struct aiocb *cb;
    int *busy;
    int *op;
    uint64_t *tag;
    const struct aiocb **wait;
} aio_impl;

static int aio_init_engine(sbk_queue *q, unsigned entries)
{
    aio_impl *a = calloc(1, sizeof *a);
    if (!a)
        return ENOMEM;
    a->n = entries;
    a->cb = calloc(entries, sizeof *a->cb);
    a->busy = calloc(entries, sizeof *a->busy);
    a->op = calloc(entries, sizeof *a->op);
    a->tag = calloc(entries, sizeof *a->tag);
    a->wait = calloc(entries, sizeof *a->wait);
    if (!a->cb || !a->busy || !a->op || !a->tag || !a->wait) {
        free(a->cb), free(a->busy), free(a->op), free(a->tag), free(a->wait), free(a);
        return ENOMEM;
    }
    q->impl = a;
    return 0;
}

static int aio_submit_engine(sbk_queue *q, const sbk_io *ios, unsigned n, int wait)
{
    (void)wait; /* aio_suspend in reap does the waiting */
    aio_impl *a = q->impl;
    unsigned slot = 0;
    for (unsigned i = 0; i < n; i++) {
        while (slot < a->n && a->busy[slot])
            slot++;
        if (slot == a->n)
            return EBUSY; /* more requests than slots: a caller's error */
        struct aiocb *cb = &a->cb[slot];
        memset(cb, 0, sizeof *cb);
        cb->aio_fildes = ios[i].fd;
        cb->aio_buf = ios[i].buf;
        cb->aio_nbytes = ios[i].len;
        cb->aio_offset = (off_t)ios[i].offset;
        cb->aio_sigevent.sigev_notify = SIGEV_NONE;
        int rc = ios[i].op == SBK_IO_WRITE  ? aio_write(cb)
                 : ios[i].op == SBK_IO_READ ? aio_read(cb)
                                            : aio_fsync(O_SYNC, cb);
        if (rc != 0)
            return errno;
        a->busy[slot] = 1;
        a->op[slot] = ios[i].op;
        a->tag[slot] = ios[i].tag;
    }
    return 0;
}

static int aio_reap_engine(sbk_queue *q, sbk_done *out, unsigned max, unsigned min, unsigned *got)
{
    aio_impl *a = q->impl;
    *got = 0;
    for (;;) {
        unsigned waiting = 0;
        for (unsigned s = 0; s < a->n && *got < max; s++) {
            if (!a->busy[s])
                continue;
            int e = aio_error(&a->cb[s]);
            if (e == EINPROGRESS) {
                a->wait[waiting++] = &a->cb[s];
                continue;
            }
            ssize_t res = aio_return(&a->cb[s]);
            sbk_done *d = &out[(*got)++];
            d->tag = a->tag[s];
            d->op = a->op[s];
            d->err = e;
            d->bytes = res > 0 ? (size_t)res : 0;
            a->busy[s] = 0;
        }
        if (*got >= min || *got >= max || waiting == 0)
            return 0;
        if (aio_suspend(a->wait, (int)waiting, NULL) != 0 && errno != EINTR && errno != EAGAIN)
            return errno;
    }
}

static void aio_fini_engine(sbk_queue *q)
{
    aio_impl *a = q->impl;
    free(a->cb), free(a->busy), free(a->op), free(a->tag), free(a->wait), free(a);
    q->impl = NULL;
}

const sbk_engine sbk_engine_aio = {
    .name = "aio",
    .about = "POSIX AIO (glibc's thread pool): the fallback where io_uring is refused",
    .init = aio_init_engine,
    .submit = aio_submit_engine,
    .reap = aio_reap_engine,
    .fini = aio_fini_engine,
};
