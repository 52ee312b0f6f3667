/* POSIX backend: pread/pwrite on descriptors opened relative to the run directory. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "kernel.h"

static int posix_open(const sbk_ctx *ctx, const char *name, int flags, int shared, int collective,
                      sbk_file *f)
{
    (void)shared;
    (void)collective;
    int oflags = O_NOFOLLOW | O_CLOEXEC;
    oflags |= (flags & SBK_OPEN_WRITE) ? ((flags & SBK_OPEN_READ) ? O_RDWR : O_WRONLY) : O_RDONLY;
    if (flags & SBK_OPEN_CREATE)
        oflags |= O_CREAT;
    if (ctx->cfg->direct)
        oflags |= O_DIRECT;
    f->fd = openat(ctx->targets[0].fd, name, oflags, 0644);
    return f->fd < 0 ? errno : 0;
}

static int posix_xfer(sbk_file *f, int write, void *buf, size_t len, uint64_t offset, size_t *done)
{
    *done = 0;
    if (sbk_stop_signal)
        return EINTR;
    while (*done < len) {
        ssize_t n = write ? pwrite(f->fd, (char *)buf + *done, len - *done, (off_t)(offset + *done))
                          : pread(f->fd, (char *)buf + *done, len - *done, (off_t)(offset + *done));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return write ? EIO : ENODATA; /* short file: data we expected is missing */
        *done += (size_t)n;
    }
    return 0;
}

static int posix_sync(sbk_file *f) { return fsync(f->fd) == 0 ? 0 : errno; }

static int posix_close(sbk_file *f)
{
    int rc = close(f->fd) == 0 ? 0 : errno;
    f->fd = -1;
    return rc;
}

const sbk_backend sbk_backend_posix = {
    .name = "posix",
    .title = "POSIX",
    .about = "pread/pwrite on file descriptors (O_DIRECT with --direct)",
    .caps = SBK_BE_DIRECT,
    .open = posix_open,
    .xfer = posix_xfer,
    .sync = posix_sync,
    .close = posix_close,
};
