/* MPI-IO backend: independent (_at) or collective (_at_all) transfers.  A shared
 * file is opened on MPI_COMM_WORLD, a file per process on MPI_COMM_SELF. */
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#include "kernel.h"

static int errno_of(int mpi_rc)
{
    if (mpi_rc == MPI_SUCCESS)
        return 0;
    int cls = 0;
    MPI_Error_class(mpi_rc, &cls);
    if (cls == MPI_ERR_NO_SPACE)
        return ENOSPC;
    if (cls == MPI_ERR_QUOTA)
        return EDQUOT;
    if (cls == MPI_ERR_ACCESS || cls == MPI_ERR_READ_ONLY)
        return EACCES;
    if (cls == MPI_ERR_NO_SUCH_FILE)
        return ENOENT;
    /* Implementations report a full file system as a generic I/O error class (Open MPI
     * answers MPI_ERR_IO): its message still names the cause. */
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(mpi_rc, text, &len);
    if (strstr(text, "No space left") || strstr(text, "no space"))
        return ENOSPC;
    if (strstr(text, "quota") || strstr(text, "Quota"))
        return EDQUOT;
    if (strstr(text, "Read-only") || strstr(text, "Permission denied"))
        return EACCES;
    return EIO;
}

/* Less room left than one more transfer: the write failed for want of space. */
static int filesystem_full(int dir_fd, size_t len)
{
    struct statvfs sv;
    return dir_fd >= 0 && fstatvfs(dir_fd, &sv) == 0 &&
           (uint64_t)sv.f_bavail * sv.f_frsize < (uint64_t)len;
}

static int mpiio_open(const sbk_ctx *ctx, const char *name, int flags, int shared, int collective,
                      sbk_file *f)
{
    char path[4352];
    int rc = sbk_path(ctx, 0, path, sizeof path, name);
    if (rc)
        return rc;
    int amode = (flags & SBK_OPEN_WRITE)
                    ? ((flags & SBK_OPEN_READ) ? MPI_MODE_RDWR : MPI_MODE_WRONLY)
                    : MPI_MODE_RDONLY;
    if (flags & SBK_OPEN_CREATE)
        amode |= MPI_MODE_CREATE;
    f->collective = collective;
    f->dir_fd = ctx->targets[0].fd;
    return errno_of(
        MPI_File_open(shared ? MPI_COMM_WORLD : MPI_COMM_SELF, path, amode, MPI_INFO_NULL, &f->fh));
}

static int mpiio_xfer(sbk_file *f, int write, void *buf, size_t len, uint64_t offset, size_t *done)
{
    MPI_Status st;
    int rc;
    *done = 0;
    if (sbk_stop_signal && !f->collective)
        return EINTR; /* collective calls need every rank: they stop at the next phase */
    /* len fits an int: the argument parser caps a transfer at 1 GiB. */
    if (write)
        rc = f->collective
                 ? MPI_File_write_at_all(f->fh, (MPI_Offset)offset, buf, (int)len, MPI_BYTE, &st)
                 : MPI_File_write_at(f->fh, (MPI_Offset)offset, buf, (int)len, MPI_BYTE, &st);
    else
        rc = f->collective
                 ? MPI_File_read_at_all(f->fh, (MPI_Offset)offset, buf, (int)len, MPI_BYTE, &st)
                 : MPI_File_read_at(f->fh, (MPI_Offset)offset, buf, (int)len, MPI_BYTE, &st);
    int count = 0;
    if (rc == MPI_SUCCESS)
        MPI_Get_count(&st, MPI_BYTE, &count);
    *done = count > 0 ? (size_t)count : 0;
    int err = rc == MPI_SUCCESS && *done < len ? (write ? EIO : ENODATA) : errno_of(rc);
    if (write && err == EIO && filesystem_full(f->dir_fd, len))
        return ENOSPC;
    return err;
}

static int mpiio_sync(sbk_file *f) { return errno_of(MPI_File_sync(f->fh)); }

static int mpiio_close(sbk_file *f) { return errno_of(MPI_File_close(&f->fh)); }

const sbk_backend sbk_backend_mpiio = {
    .name = "mpiio",
    .title = "MPI-IO",
    .about = "MPI-IO, independent (_at) or collective (_at_all with --collective) transfers",
    .caps = SBK_BE_COLLECTIVE,
    .open = mpiio_open,
    .xfer = mpiio_xfer,
    .sync = mpiio_sync,
    .close = mpiio_close,
};
