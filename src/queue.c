/* Queued asynchronous I/O: the engine-independent part.
 *
 * The wrappers count data requests in flight the same way for every engine, from the
 * submission call until their completion is reaped, and integrate that count over
 * time (the integral is the sum of every request's time in flight; divided by the
 * elapsed time it is the mean depth, by Little's law).  sbk_stream_run is the loop
 * diskperf and jovian share: keep `depth` requests in flight, refill a slot as soon as
 * its completion is reaped, stamp or verify each block, fsync at the end. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

int sbk_queue_open(sbk_ctx *ctx, sbk_queue *q, unsigned entries)
{
    memset(q, 0, sizeof *q);
    q->engine = sbk_engine_at(ctx->cfg->engine);
    q->entries = entries;
    int err = q->engine->init(q, entries);
    if (err == 0) {
        q->last_change = sbk_now();
        return 0;
    }
    char refusal[400];
    if (q->engine->refused && q->engine->refused(err, refusal, sizeof refusal)) {
        q->engine = NULL;
        return sbk_fail(ctx, SBK_ENOURING, err, "setup", 0, "%s", refusal);
    }
    q->engine = NULL;
    return sbk_fail(ctx, SBK_EINTERNAL, err, "setup", 0, "cannot set up %s with %u entries: %s",
                    sbk_engine_name(ctx->cfg->engine), entries, strerror(err));
}

static void account(sbk_queue *q)
{
    double now = sbk_now();
    q->inflight_area += (double)q->inflight * (now - q->last_change);
    q->last_change = now;
}

int sbk_queue_submit(sbk_queue *q, const sbk_io *ios, unsigned n, int wait)
{
    if (sbk_stop_signal)
        return EINTR; /* nothing new after the signal; what is in flight is reaped */
    account(q);
    int err = q->engine->submit(q, ios, n, wait);
    if (err)
        return err;
    for (unsigned i = 0; i < n; i++)
        q->inflight += ios[i].op != SBK_IO_FSYNC;
    if (q->inflight > q->inflight_max)
        q->inflight_max = q->inflight;
    return 0;
}

int sbk_queue_reap(sbk_queue *q, sbk_done *out, unsigned max, unsigned min, unsigned *got)
{
    int err = q->engine->reap(q, out, max, min, got);
    account(q);
    for (unsigned i = 0; i < *got; i++)
        q->inflight -= out[i].op != SBK_IO_FSYNC;
    return err;
}

void sbk_queue_reset_counters(sbk_queue *q)
{
    q->inflight_max = q->inflight;
    q->inflight_area = 0;
    q->last_change = sbk_now();
}

void sbk_queue_close(sbk_queue *q)
{
    if (q->engine)
        q->engine->fini(q);
    q->engine = NULL;
}

/* ---- the streaming loop ---- */
static void locate(const sbk_stream *s, uint64_t b, int *file, uint64_t *offset)
{
    uint64_t j = b / (uint64_t)s->ndirs, d = b % (uint64_t)s->ndirs;
    uint64_t k = j % (uint64_t)s->nowners, l = j / (uint64_t)s->nowners;
    *file = (int)(k * (uint64_t)s->ndirs + d);
    *offset = l * s->block;
}

static void io_failed(sbk_ctx *ctx, const sbk_stream *s, int file, uint64_t offset, int err,
                      size_t got, uint64_t bytes)
{
    const char *what = s->write ? "write" : "read";
    if (err == EINVAL && ctx->cfg->direct)
        sbk_fail(ctx, SBK_ENODIRECT, err, s->phase, bytes,
                 "the file system of %s refuses O_DIRECT transfers (EINVAL); defeat the cache "
                 "with --fadvise or --scan-file instead",
                 s->path[file]);
    else if (err)
        sbk_fail(ctx, sbk_code_for_errno(err), err, s->phase, bytes, "%s %s at byte %llu: %s", what,
                 s->path[file], (unsigned long long)offset, strerror(err));
    else if (s->write)
        sbk_fail(ctx, SBK_EIO, EIO, s->phase, bytes,
                 "write %s at byte %llu: the system wrote "
                 "nothing and gave no error",
                 s->path[file], (unsigned long long)offset);
    else
        sbk_fail(ctx, SBK_EIO, ENODATA, s->phase, bytes,
                 "read %s at byte %llu: %zu of %zu bytes "
                 "(the file is shorter than expected)",
                 s->path[file], (unsigned long long)offset, got, s->block);
}

/* The loop's working set: one buffer per slot (a request in flight), the slots free to
 * refill, and the arrays the queue fills. */
typedef struct {
    unsigned depth;       /* slots: requests kept in flight */
    char *bufs;           /* depth buffers of s->block bytes */
    uint64_t *slot_block; /* the block each slot moves */
    size_t *slot_done;    /* bytes of the slot's block already moved (short I/O) */
    unsigned *free_slots;
    unsigned nfree;
    sbk_done *done; /* completions reaped */
    sbk_io *batch;  /* requests to submit */
    unsigned inflight;
    uint64_t next; /* the next block to request */
    int failed;
    double start; /* the phase's timer, from the barrier */
} stream_state;

static char *slot_buffer(const sbk_stream *s, const stream_state *st, unsigned slot)
{
    return st->bufs + (size_t)slot * s->block;
}

/* Buffers and slots, untimed; writes fill every buffer once and then only restamp. */
static void stream_alloc(sbk_ctx *ctx, const sbk_stream *s, stream_state *st)
{
    unsigned depth = s->depth;
    if ((uint64_t)depth > s->nblocks)
        depth = (unsigned)s->nblocks;
    unsigned nfiles = (unsigned)(s->ndirs * s->nowners);
    unsigned slots = depth > nfiles ? depth : nfiles; /* fsync takes one per file */
    if (depth > 0) {
        st->bufs = sbk_alloc_aligned(s->align, (size_t)depth * s->block);
        st->slot_block = calloc(depth, sizeof *st->slot_block);
        st->slot_done = calloc(depth, sizeof *st->slot_done);
        st->free_slots = calloc(depth, sizeof *st->free_slots);
        st->done = calloc(slots, sizeof *st->done);
        st->batch = calloc(slots, sizeof *st->batch);
        if (!st->bufs || !st->slot_block || !st->slot_done || !st->free_slots || !st->done ||
            !st->batch) {
            sbk_fail(ctx, SBK_EINTERNAL, ENOMEM, s->phase, 0,
                     "cannot allocate %u buffers of %zu bytes", depth, s->block);
            depth = 0;
        }
    }
    if (s->write)
        for (unsigned i = 0; i < depth; i++)
            sbk_pattern_fill(s->pat, (uint64_t *)slot_buffer(s, st, i), s->block / 8, 0, 0, 0, 0);
    for (unsigned i = 0; i < depth; i++)
        st->free_slots[i] = depth - 1 - i;
    st->nfree = st->depth = depth;
}

static void stream_free(stream_state *st)
{
    free(st->bufs);
    free(st->slot_block);
    free(st->slot_done);
    free(st->free_slots);
    free(st->done);
    free(st->batch);
}

/* Requests for the next blocks, one per free slot; returns how many are in the batch. */
static unsigned stream_fill_batch(const sbk_stream *s, stream_state *st)
{
    unsigned n = 0;
    while (!st->failed && st->nfree > 0 && st->next < s->nblocks) {
        unsigned slot = st->free_slots[--st->nfree];
        int file;
        uint64_t offset;
        locate(s, st->next, &file, &offset);
        uint64_t *buf = (uint64_t *)slot_buffer(s, st, slot);
        if (s->write)
            sbk_pattern_fill(s->pat, buf, s->block / 8, s->file_id[file], s->gen, offset / 8, 1);
        st->slot_block[slot] = st->next;
        st->slot_done[slot] = 0;
        st->batch[n++] = (sbk_io){.op = s->write ? SBK_IO_WRITE : SBK_IO_READ,
                                  .fd = s->fd[file],
                                  .buf = buf,
                                  .len = s->block,
                                  .offset = offset,
                                  .tag = slot};
        st->next++;
    }
    return n;
}

/* Submits the batch's n requests; on refusal the run fails and their slots are free. */
static void stream_submit(sbk_ctx *ctx, sbk_queue *q, const sbk_stream *s, stream_state *st,
                          unsigned n, uint64_t bytes)
{
    if (n == 0)
        return;
    int err = sbk_queue_submit(q, st->batch, n, 1);
    if (err) {
        sbk_fail(ctx, sbk_code_for_errno(err), err, s->phase, bytes,
                 "submitting %u requests to %s: %s", n, q->engine->name, strerror(err));
        st->failed = 1;
        for (unsigned i = 0; i < n; i++)
            st->free_slots[st->nfree++] = (unsigned)st->batch[i].tag;
    } else {
        st->inflight += n;
    }
}

/* Accounts the reaped completions: counts and verifies whole blocks, frees their slots,
 * and puts the rest of short transfers in the batch; returns how many it put there. */
static unsigned stream_complete(sbk_ctx *ctx, const sbk_stream *s, stream_state *st, unsigned got,
                                sbk_stream_result *r)
{
    double now = sbk_now();
    unsigned nretry = 0;
    for (unsigned i = 0; i < got; i++) {
        const sbk_done *d = &st->done[i];
        unsigned slot = (unsigned)d->tag;
        int file;
        uint64_t offset;
        locate(s, st->slot_block[slot], &file, &offset);
        st->inflight--;
        size_t moved = st->slot_done[slot];
        if (!d->err && d->bytes > 0 && moved + d->bytes < s->block && !st->failed) {
            /* Short transfer: move the rest (a full disk answers the retry with
             * ENOSPC, the end of a file with 0 bytes). */
            moved = st->slot_done[slot] += d->bytes;
            st->batch[nretry++] = (sbk_io){.op = s->write ? SBK_IO_WRITE : SBK_IO_READ,
                                           .fd = s->fd[file],
                                           .buf = slot_buffer(s, st, slot) + moved,
                                           .len = s->block - moved,
                                           .offset = offset + moved,
                                           .tag = slot};
            continue;
        }
        st->free_slots[st->nfree++] = slot;
        if (d->err || moved + d->bytes != s->block) {
            if (!st->failed)
                io_failed(ctx, s, file, offset + moved, d->err, moved + d->bytes, r->bytes + moved);
            st->failed = 1;
            continue;
        }
        int dir = file % s->ndirs;
        r->bytes += s->block;
        r->dir_bytes[dir] += s->block;
        r->dir_time[dir] = now - st->start;
        r->ios++;
        if (!s->write && s->verify) {
            double v0 = sbk_now();
            sbk_verify_result vr =
                sbk_pattern_check(s->pat, (const uint64_t *)slot_buffer(s, st, slot), s->block / 8,
                                  s->file_id[file], s->gen, offset / 8);
            sbk_rec_verify(s->rec, &vr);
            r->verify += sbk_now() - v0;
        }
    }
    return nretry;
}

/* After writes: one fsync per file, all in flight together. */
static void stream_fsync(sbk_ctx *ctx, sbk_queue *q, const sbk_stream *s, stream_state *st,
                         sbk_stream_result *r)
{
    int nfiles = s->ndirs * s->nowners, n = 0;
    for (int f = 0; f < nfiles; f++)
        st->batch[n++] = (sbk_io){.op = SBK_IO_FSYNC, .fd = s->fd[f], .tag = (uint64_t)f};
    int err = sbk_queue_submit(q, st->batch, (unsigned)n, 1);
    int left = err ? 0 : n;
    if (err)
        sbk_fail(ctx, sbk_code_for_errno(err), err, s->phase, r->bytes,
                 "submitting fsync to %s: %s", q->engine->name, strerror(err));
    while (left > 0) {
        unsigned got = 0;
        err = sbk_queue_reap(q, st->done, (unsigned)n, 1, &got);
        if (err) {
            sbk_fail(ctx, SBK_EINTERNAL, err, s->phase, r->bytes, "waiting for %s: %s",
                     q->engine->name, strerror(err));
            break;
        }
        double now = sbk_now();
        for (unsigned i = 0; i < got; i++) {
            int f = (int)st->done[i].tag;
            left--;
            if (st->done[i].err)
                sbk_fail(ctx, sbk_code_for_errno(st->done[i].err), st->done[i].err, s->phase,
                         r->bytes, "fsync %s: %s", s->path[f], strerror(st->done[i].err));
            if (s->fsync == FSYNC_INSIDE)
                r->dir_time[f % s->ndirs] = now - st->start;
        }
    }
    if (s->fsync == FSYNC_INSIDE)
        r->total = sbk_now() - st->start;
}

void sbk_stream_run(sbk_ctx *ctx, sbk_queue *q, const sbk_stream *s, sbk_stream_result *r)
{
    stream_state st = {0};
    stream_alloc(ctx, s, &st);
    memset(r->dir_time, 0, (size_t)s->ndirs * sizeof *r->dir_time);
    memset(r->dir_bytes, 0, (size_t)s->ndirs * sizeof *r->dir_bytes);
    r->total = r->verify = r->latency_sum = 0;
    r->bytes = r->ios = 0;
    r->depth_max = 0;

    /* Every rank starts its timer together, after its buffers are ready. */
    MPI_Barrier(MPI_COMM_WORLD);
    sbk_queue_reset_counters(q);
    st.start = sbk_now();
    st.failed = ctx->error.code != 0;
    while (st.depth > 0 && (st.inflight > 0 || (!st.failed && st.next < s->nblocks))) {
        stream_submit(ctx, q, s, &st, stream_fill_batch(s, &st), r->bytes);
        if (st.inflight == 0)
            break;
        unsigned got = 0;
        int err = sbk_queue_reap(q, st.done, st.depth, 1, &got);
        if (err) {
            /* The engine itself failed: the requests in flight cannot be tracked. */
            sbk_fail(ctx, SBK_EINTERNAL, err, s->phase, r->bytes, "waiting for %s: %s",
                     q->engine->name, strerror(err));
            st.failed = 1;
            break;
        }
        stream_submit(ctx, q, s, &st, stream_complete(ctx, s, &st, got, r), r->bytes);
    }
    r->depth_max = q->inflight_max;
    r->latency_sum = q->inflight_area;
    r->total = sbk_now() - st.start;
    if (s->write && !st.failed && s->fsync != FSYNC_NONE && s->nblocks > 0)
        stream_fsync(ctx, q, s, &st, r);
    ctx->phase_bytes = r->bytes;
    stream_free(&st);
}
