/* scratchbench-kernel: shared types of the core, the modes and the backends.
 *
 * The core owns phases, timers, statistics, cache defeat, verification, the run
 * directory and the JSON output; modes (iotest, metadata) only say which files to
 * touch in which order; backends (POSIX, MPI-IO) only move bytes.
 */
#ifndef SBK_KERNEL_H
#define SBK_KERNEL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SBK_VERSION "0.1.0"
#define SBK_SCHEMA_VERSION "1.0"

/* Exit codes: documented in SCHEMA.md; the ReFrame checks map them to causes. */
enum sbk_exit {
    SBK_OK = 0,
    SBK_EINTERNAL = 1, /* MPI or internal failure */
    SBK_EUSAGE = 2,    /* invalid arguments */
    SBK_ENODIR = 3,    /* target directory missing or not a directory */
    SBK_EPERM = 4,     /* permission denied */
    SBK_ENOSPACE = 5,  /* file system full or quota exceeded */
    SBK_EVERIFY = 6,   /* data read back differs from data written */
    SBK_EIO = 7,       /* any other I/O error */
    SBK_ENODIRECT = 8, /* the file system refuses O_DIRECT */
};

typedef enum { API_POSIX, API_MPIIO } sbk_api;
typedef enum { LAYOUT_FPP, LAYOUT_SHARED } sbk_layout;
typedef enum { FSYNC_INSIDE, FSYNC_OUTSIDE, FSYNC_NONE } sbk_fsync;

/* Metadata phases, in the order they run. */
enum { MD_CREATE = 1, MD_OPEN = 2, MD_STAT = 4, MD_REMOVE = 8 };

typedef struct sbk_config {
    const char *mode;
    const char *dir;
    const char *output;    /* JSON file, NULL = stdout */
    int table;             /* human table on stdout */
    int reps;
    double stonewall;      /* seconds, 0 = off */
    int keep;
    uint64_t seed;
    /* cache defeat */
    int direct;
    int fadvise;
    const char *scan_file;
    int shift;             /* read another rank's data; -1 = auto (next node) */
    sbk_fsync fsync;
    int verify;
    const char *existing;  /* read a run directory kept by an earlier --keep run */
    /* iotest */
    long nr, nc, niter;
    int iread;
    sbk_layout layout;
    sbk_api api;
    int collective;
    /* metadata */
    long files;
    int dir_per_rank;
    int phases;
    int removers;
    long file_size;
} sbk_config;

/* The first error a rank met; gathered to rank 0 for the report. */
typedef struct sbk_error {
    int code;              /* enum sbk_exit */
    int err;               /* errno */
    int rank;
    uint64_t bytes_done;   /* bytes this rank had moved in the failing phase */
    char phase[16];
    char message[200];
} sbk_error;

typedef struct sbk_ctx {
    const sbk_config *cfg;
    int rank, size;
    int node_index, nnodes, node_rank, ranks_per_node;
    char node[64];         /* scheduler node name, else host name */
    char host[64];
    char target[4096];     /* resolved target directory */
    char rundir[4096];     /* the unique run directory inside it */
    int rundir_fd;
    int rundir_created;
    size_t dio_align;
    char fstype[32];
    int shift;             /* effective shift */
    sbk_error error;       /* this rank's first error, code 0 if none */
    uint64_t phase_bytes;  /* bytes this rank moved in its latest phase */
} sbk_ctx;

/* ---- statistics (stats.c) ---- */
typedef struct sbk_summary {
    size_t n;
    double min, max, mean, trimmed_mean, stddev, cv;
} sbk_summary;
sbk_summary sbk_summarize(const double *values, size_t n);

/* ---- data pattern (pattern.c) ----
 * Every `interval`-th 64-bit word of a file holds a stamp of (seed, file, generation,
 * word index); the others hold a fill that depends on the seed only.  A block at
 * the wrong offset, from an earlier generation (stale) or damaged fails the check. */
typedef struct sbk_pattern {
    uint64_t seed;
    uint64_t interval;     /* power of two, 1..64 */
    uint64_t fill[64];
} sbk_pattern;
typedef struct sbk_verify_result {
    uint64_t bad_words;
    uint64_t stale_words;  /* bad words holding the stamp of the previous generation */
    int64_t first_bad_word; /* -1 if none */
} sbk_verify_result;
void sbk_pattern_init(sbk_pattern *p, uint64_t seed, uint64_t words_per_xfer);
uint64_t sbk_stamp(const sbk_pattern *p, uint64_t file, uint64_t gen, uint64_t word);
void sbk_pattern_fill(const sbk_pattern *p, uint64_t *buf, uint64_t nwords, uint64_t file,
                      uint64_t gen, uint64_t first_word, int stamps_only);
sbk_verify_result sbk_pattern_check(const sbk_pattern *p, const uint64_t *buf, uint64_t nwords,
                                    uint64_t file, uint64_t gen, uint64_t first_word);

/* ---- JSON writer (json.c) ---- */
typedef struct sbk_json {
    FILE *f;
    int depth;
    int first[64];
} sbk_json;
void jw_begin(sbk_json *j, FILE *f);
void jw_obj(sbk_json *j, const char *key);
void jw_arr(sbk_json *j, const char *key);
void jw_end_obj(sbk_json *j);
void jw_end_arr(sbk_json *j);
void jw_str(sbk_json *j, const char *key, const char *value);
void jw_num(sbk_json *j, const char *key, double value);
void jw_int(sbk_json *j, const char *key, long long value);
void jw_bool(sbk_json *j, const char *key, int value);
void jw_null(sbk_json *j, const char *key);
void jw_summary(sbk_json *j, const char *key, sbk_summary s);
void jw_doubles(sbk_json *j, const char *key, const double *v, size_t n);
void jw_finish(sbk_json *j);

/* ---- run directory and safety (workdir.c) ---- */
int sbk_workdir_open(sbk_ctx *ctx);           /* collective */
int sbk_workdir_close(sbk_ctx *ctx);          /* collective: remove what we made */
int sbk_path(const sbk_ctx *ctx, char *out, size_t len, const char *name);
#define SBK_MANIFEST "sbk.manifest"

/* ---- file system facts and cache defeat (fsinfo.c) ---- */
void sbk_fsinfo(const char *dir, char *fstype, size_t len, size_t *dio_align);
double sbk_resident_fraction(int fd);          /* via mincore; -1 if unknown */
int sbk_scan_file(const char *path, uint64_t *bytes);

/* ---- errors (core.c) ---- */
int sbk_fail(sbk_ctx *ctx, int code, int err, const char *phase, uint64_t bytes_done,
             const char *fmt, ...) __attribute__((format(printf, 6, 7)));
int sbk_code_for_errno(int err);
int sbk_agree(sbk_ctx *ctx);                   /* collective: max error code over ranks */
double sbk_now(void);

/* ---- backends (backend_*.c) ---- */
enum { SBK_OPEN_CREATE = 1, SBK_OPEN_WRITE = 2, SBK_OPEN_READ = 4 };
typedef struct sbk_file {
    int fd;
    MPI_File fh;
    int collective;
} sbk_file;
typedef struct sbk_backend {
    const char *name;
    /* All return 0 or an errno value. */
    int (*open)(const sbk_ctx *ctx, const char *name, int flags, int shared, sbk_file *f);
    int (*xfer)(sbk_file *f, int write, void *buf, size_t len, uint64_t offset, size_t *done);
    int (*sync)(sbk_file *f);
    int (*close)(sbk_file *f);
    int (*fd)(sbk_file *f);  /* POSIX descriptor for fadvise/mincore, -1 if none */
} sbk_backend;
extern const sbk_backend sbk_backend_posix;
extern const sbk_backend sbk_backend_mpiio;

/* ---- output helpers shared by the modes (core.c) ---- */
void sbk_write_header(sbk_json *j, const sbk_ctx *ctx, const char *const *hosts);
void sbk_write_errors(sbk_json *j, sbk_ctx *ctx, int code);
char **sbk_gather_hosts(const sbk_ctx *ctx);
void sbk_free_hosts(const sbk_ctx *ctx, char **hosts);

/* ---- modes ---- */
int sbk_mode_iotest(sbk_ctx *ctx, sbk_json *j);
int sbk_mode_metadata(sbk_ctx *ctx, sbk_json *j);

#endif
