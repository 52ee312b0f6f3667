/* advisor_validation.py's per-request workloads: COUNT requests of SIZE bytes, read from
 * or written to one file one after the other, as a program issuing small requests does.
 * Prints the seconds the requests alone took, as Darshan times a job's requests: `dd`,
 * which the benchmark timed before, also writes every block to /dev/null (or reads it
 * from /dev/zero), a second system call per request that the advisor does not predict.
 *
 *     request_loop read|write FILE SIZE COUNT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what, const char *path)
{
    fprintf(stderr, "request_loop: %s %s: %s\n", what, path, strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "read") && strcmp(argv[1], "write"))) {
        fprintf(stderr, "usage: request_loop read|write FILE SIZE COUNT\n");
        return 2;
    }
    int writing = !strcmp(argv[1], "write");
    const char *path = argv[2];
    char *end;
    unsigned long long size = strtoull(argv[3], &end, 10);
    unsigned long long count = strtoull(argv[4], &end, 10);
    if (size == 0 || count == 0) {
        fprintf(stderr, "request_loop: SIZE and COUNT: expected positive integers\n");
        return 2;
    }
    char *buffer = malloc(size);
    if (!buffer)
        return fail("allocating a buffer for", path);
    memset(buffer, 'x', size);
    int fd = writing ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : open(path, O_RDONLY);
    if (fd < 0)
        return fail("opening", path);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned long long i = 0; i < count; i++) {
        ssize_t moved = writing ? write(fd, buffer, size) : read(fd, buffer, size);
        if (moved != (ssize_t)size) {
            fprintf(stderr, "request_loop: request %llu of %llu bytes on %s moved %zd: %s\n", i,
                    size, path, moved,
                    moved < 0 ? strerror(errno) : moved ? "a short request" : "end of file");
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (close(fd) != 0)
        return fail("closing", path);
    printf("%.9f\n", (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    return 0;
}
