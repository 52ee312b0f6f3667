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

void sbk_stream_run(sbk_ctx *ctx, sbk_queue *q, const sbk_stream *s, sbk_stream_result *r)
{
    unsigned depth = s->depth;
    if ((uint64_t)depth > s->nblocks)
        depth = (unsigned)s->nblocks;
    int nfiles = s->ndirs * s->nowners;
    char *bufs = NULL;
    uint64_t *slot_block = NULL;
    size_t *slot_done = NULL; /* bytes of the slot's block already moved (short I/O) */
    unsigned *free_slots = NULL;
    sbk_done *done = NULL;
    sbk_io *batch = NULL;
    if (depth > 0) {
        bufs = sbk_alloc_aligned(s->align, (size_t)depth * s->block);
        slot_block = calloc(depth, sizeof *slot_block);
        slot_done = calloc(depth, sizeof *slot_done);
        free_slots = calloc(depth, sizeof *free_slots);
        done = calloc(depth > (unsigned)nfiles ? depth : (unsigned)nfiles, sizeof *done);
        batch = calloc(depth > (unsigned)nfiles ? depth : (unsigned)nfiles, sizeof *batch);
        if (!bufs || !slot_block || !slot_done || !free_slots || !done || !batch) {
            sbk_fail(ctx, SBK_EINTERNAL, ENOMEM, s->phase, 0,
                     "cannot allocate %u buffers of %zu bytes", depth, s->block);
            depth = 0;
        }
    }
    uint64_t words = s->block / 8;
    /* Writes: fill every buffer once, untimed; each block then only restamps. */
    if (s->write)
        for (unsigned i = 0; i < depth; i++)
            sbk_pattern_fill(s->pat, (uint64_t *)(bufs + (size_t)i * s->block), words, 0, 0, 0, 0);
    for (unsigned i = 0; i < depth; i++)
        free_slots[i] = depth - 1 - i;
    unsigned nfree = depth;
    memset(r->dir_time, 0, (size_t)s->ndirs * sizeof *r->dir_time);
    memset(r->dir_bytes, 0, (size_t)s->ndirs * sizeof *r->dir_bytes);
    r->total = r->verify = r->latency_sum = 0;
    r->bytes = r->ios = 0;
    r->depth_max = 0;

    /* Every rank starts its timer together, after its buffers are ready. */
    MPI_Barrier(MPI_COMM_WORLD);
    sbk_queue_reset_counters(q);
    double start = sbk_now();
    uint64_t next = 0;
    int failed = ctx->error.code != 0;
    unsigned inflight = 0;
    while (depth > 0 && (inflight > 0 || (!failed && next < s->nblocks))) {
        unsigned n = 0;
        while (!failed && nfree > 0 && next < s->nblocks) {
            unsigned slot = free_slots[--nfree];
            int file;
            uint64_t offset;
            locate(s, next, &file, &offset);
            uint64_t *buf = (uint64_t *)(bufs + (size_t)slot * s->block);
            if (s->write)
                sbk_pattern_fill(s->pat, buf, words, s->file_id[file], s->gen, offset / 8, 1);
            slot_block[slot] = next;
            slot_done[slot] = 0;
            batch[n++] = (sbk_io){.op = s->write ? SBK_IO_WRITE : SBK_IO_READ,
                                  .fd = s->fd[file],
                                  .buf = buf,
                                  .len = s->block,
                                  .offset = offset,
                                  .tag = slot};
            next++;
        }
        if (n > 0) {
            int err = sbk_queue_submit(q, batch, n, 1);
            if (err) {
                sbk_fail(ctx, sbk_code_for_errno(err), err, s->phase, r->bytes,
                         "submitting %u requests to %s: %s", n, q->engine->name, strerror(err));
                failed = 1;
                for (unsigned i = 0; i < n; i++)
                    free_slots[nfree++] = (unsigned)batch[i].tag;
            } else {
                inflight += n;
            }
        }
        if (inflight == 0)
            break;
        unsigned got = 0;
        int err = sbk_queue_reap(q, done, depth, 1, &got);
        if (err) {
            /* The engine itself failed: the requests in flight cannot be tracked. */
            sbk_fail(ctx, SBK_EINTERNAL, err, s->phase, r->bytes, "waiting for %s: %s",
                     q->engine->name, strerror(err));
            failed = 1;
            break;
        }
        double now = sbk_now();
        unsigned nretry = 0;
        for (unsigned i = 0; i < got; i++) {
            unsigned slot = (unsigned)done[i].tag;
            int file;
            uint64_t offset;
            locate(s, slot_block[slot], &file, &offset);
            inflight--;
            if (!done[i].err && done[i].bytes > 0 && slot_done[slot] + done[i].bytes < s->block &&
                !failed) {
                /* Short transfer: move the rest (a full disk answers the retry with
                 * ENOSPC, the end of a file with 0 bytes). */
                slot_done[slot] += done[i].bytes;
                char *buf = bufs + (size_t)slot * s->block;
                batch[nretry++] = (sbk_io){.op = s->write ? SBK_IO_WRITE : SBK_IO_READ,
                                           .fd = s->fd[file],
                                           .buf = buf + slot_done[slot],
                                           .len = s->block - slot_done[slot],
                                           .offset = offset + slot_done[slot],
                                           .tag = slot};
                continue;
            }
            free_slots[nfree++] = slot;
            if (done[i].err || slot_done[slot] + done[i].bytes != s->block) {
                if (!failed)
                    io_failed(ctx, s, file, offset + slot_done[slot], done[i].err,
                              slot_done[slot] + done[i].bytes, r->bytes + slot_done[slot]);
                failed = 1;
                continue;
            }
            int d = file % s->ndirs;
            r->bytes += s->block;
            r->dir_bytes[d] += s->block;
            r->dir_time[d] = now - start;
            r->ios++;
            if (!s->write && s->verify) {
                double v0 = sbk_now();
                sbk_verify_result vr =
                    sbk_pattern_check(s->pat, (uint64_t *)(bufs + (size_t)slot * s->block), words,
                                      s->file_id[file], s->gen, offset / 8);
                sbk_rec_verify(s->rec, &vr);
                r->verify += sbk_now() - v0;
            }
        }
        if (nretry > 0) {
            int serr = sbk_queue_submit(q, batch, nretry, 1);
            if (serr) {
                sbk_fail(ctx, sbk_code_for_errno(serr), serr, s->phase, r->bytes,
                         "submitting %u requests to %s: %s", nretry, q->engine->name,
                         strerror(serr));
                failed = 1;
                for (unsigned i = 0; i < nretry; i++)
                    free_slots[nfree++] = (unsigned)batch[i].tag;
            } else {
                inflight += nretry;
            }
        }
    }
    r->depth_max = q->inflight_max;
    r->latency_sum = q->inflight_area;
    r->total = sbk_now() - start;

    if (s->write && !failed && s->fsync != FSYNC_NONE && s->nblocks > 0) {
        int n = 0;
        for (int f = 0; f < nfiles; f++)
            batch[n++] = (sbk_io){.op = SBK_IO_FSYNC, .fd = s->fd[f], .tag = (uint64_t)f};
        int err = sbk_queue_submit(q, batch, (unsigned)n, 1);
        int left = err ? 0 : n;
        if (err)
            sbk_fail(ctx, sbk_code_for_errno(err), err, s->phase, r->bytes,
                     "submitting fsync to %s: %s", q->engine->name, strerror(err));
        while (left > 0) {
            unsigned got = 0;
            err = sbk_queue_reap(q, done, (unsigned)n, 1, &got);
            if (err) {
                sbk_fail(ctx, SBK_EINTERNAL, err, s->phase, r->bytes, "waiting for %s: %s",
                         q->engine->name, strerror(err));
                break;
            }
            double now = sbk_now();
            for (unsigned i = 0; i < got; i++) {
                int f = (int)done[i].tag;
                left--;
                if (done[i].err)
                    sbk_fail(ctx, sbk_code_for_errno(done[i].err), done[i].err, s->phase, r->bytes,
                             "fsync %s: %s", s->path[f], strerror(done[i].err));
                if (s->fsync == FSYNC_INSIDE)
                    r->dir_time[f % s->ndirs] = now - start;
            }
        }
        if (s->fsync == FSYNC_INSIDE)
            r->total = sbk_now() - start;
    }
    ctx->phase_bytes = r->bytes;
    free(bufs);
    free(slot_block);
    free(slot_done);
    free(free_slots);
    free(done);
    free(batch);
}
