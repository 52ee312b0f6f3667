/* File system facts (type, direct-I/O alignment) and the cache-defeat helpers that
 * need Linux headers.  <linux/stat.h> carries struct statx with the DIO fields that
 * glibc 2.36 lacks, so statx is called through syscall() here. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/stat.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel.h"

static const struct {
    unsigned long magic;
    const char *name;
} fs_names[] = {
    {0xEF53, "ext4"},       {0x58465342, "xfs"},    {0x01021994, "tmpfs"}, {0x6969, "nfs"},
    {0x0BD00BD0, "lustre"}, {0x47504653, "gpfs"},   {0x9123683E, "btrfs"}, {0x794C7630, "overlay"},
    {0x19830326, "beegfs"}, {0x00C36400, "ceph"},   {0x2FC12FC1, "zfs"},   {0xFF534D42, "cifs"},
    {0x65735546, "fuse"},   {0x13661366, "cramfs"}, {0x5346544E, "ntfs"},  {0x4D44, "vfat"},
    {0xAAD7AAEA, "panfs"},  {0x858458F6, "ramfs"},
};

void sbk_fsinfo(const char *dir, char *fstype, size_t len, size_t *dio_align)
{
    struct statfs sfs;
    snprintf(fstype, len, "unknown");
    if (statfs(dir, &sfs) == 0) {
        snprintf(fstype, len, "0x%lx", (unsigned long)sfs.f_type);
        for (size_t i = 0; i < sizeof fs_names / sizeof fs_names[0]; i++)
            if ((unsigned long)sfs.f_type == fs_names[i].magic)
                snprintf(fstype, len, "%s", fs_names[i].name);
    }
    /* Linux 6.1+ reports the direct-I/O alignment; older kernels and file systems
     * that do not report it get the conservative 4096. */
    *dio_align = 4096;
    struct statx stx;
    memset(&stx, 0, sizeof stx);
    if (syscall(SYS_statx, AT_FDCWD, dir, 0, STATX_DIOALIGN, &stx) == 0 &&
        (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align > 0) {
        size_t a = stx.stx_dio_offset_align;
        if (stx.stx_dio_mem_align > a)
            a = stx.stx_dio_mem_align;
        *dio_align = a < 4096 ? 4096 : a;
    }
}

double sbk_resident_fraction(int fd)
{
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0)
        return size == 0 ? 0.0 : -1.0;
    long page = sysconf(_SC_PAGESIZE);
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        return -1.0;
    size_t pages = ((size_t)size + (size_t)page - 1) / (size_t)page;
    unsigned char vec[4096];
    size_t resident = 0;
    for (size_t first = 0; first < pages; first += sizeof vec) {
        size_t n = pages - first < sizeof vec ? pages - first : sizeof vec;
        size_t bytes = n * (size_t)page;
        if (first * (size_t)page + bytes > (size_t)size)
            bytes = (size_t)size - first * (size_t)page;
        if (mincore((char *)map + first * (size_t)page, bytes, vec) != 0) {
            munmap(map, (size_t)size);
            return -1.0;
        }
        for (size_t i = 0; i < n; i++)
            resident += vec[i] & 1;
    }
    munmap(map, (size_t)size);
    return (double)resident / (double)pages;
}

int sbk_scan_file(const char *path, uint64_t *bytes)
{
    static char buf[4 << 20];
    *bytes = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return errno;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            int e = errno;
            close(fd);
            return e;
        }
        if (n == 0)
            break;
        *bytes += (uint64_t)n;
    }
    close(fd);
    return 0;
}

uint64_t sbk_node_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}
