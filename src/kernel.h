/* scratchbench-kernel: the interface between the core, the modes and the backends.
 *
 * The core (run.c, options.c, core.c, workdir.c) owns the command line, the run
 * directories, repetitions, phases and their timers, the gathers over ranks, the
 * statistics, cache defeat, verification tallies, the manifest of kept runs, the JSON
 * report and the --table.  A mode is one file (mode_*.c) that registers an sbk_mode:
 * its name, its options, and hooks that plan its phases and move its bytes.  Back ends
 * (backend_*.c, listed in backends.c's tables, chosen by name) only move bytes:
 * synchronous ones (POSIX, MPI-IO) for iotest, iozone and selfscale, queued
 * asynchronous ones (io_uring, POSIX AIO) for diskperf and jovian.
 */
#ifndef SBK_KERNEL_H
#define SBK_KERNEL_H

#include <mpi.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SBK_VERSION "0.2.0"
#define SBK_SCHEMA_VERSION "1.3"

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
    SBK_ENOURING = 9,  /* the kernel refuses io_uring (disabled, seccomp, too old) */
    SBK_ESTOPPED = 10, /* stopped by SIGTERM/SIGINT (scancel, a time limit): cleaned up */
};

typedef enum { FSYNC_INSIDE, FSYNC_OUTSIDE, FSYNC_NONE } sbk_fsync;

typedef struct sbk_ctx sbk_ctx;
typedef struct sbk_json sbk_json;

/* ---- options (options.c) ----
 * A table of options per mode (and one for the core); the core parses, checks ranges,
 * prints --help and names the mode an option belongs to when it is misplaced. */
typedef enum {
    SBK_OPT_FLAG,    /* int field = 1 */
    SBK_OPT_CLEAR,   /* int field = 0 (e.g. --no-verify) */
    SBK_OPT_LONG,    /* long field within [lo, hi] */
    SBK_OPT_SIZE,    /* uint64_t bytes within [lo, hi]; suffixes k, m, g, t (powers of 1024) */
    SBK_OPT_LONGS,   /* sbk_list of integers within [lo, hi], comma separated */
    SBK_OPT_SIZES,   /* sbk_list of sizes within [lo, hi], comma separated */
    SBK_OPT_DOUBLE,  /* double within [lo, hi] */
    SBK_OPT_STRING,  /* const char * */
    SBK_OPT_STRINGS, /* sbk_strings: the option may repeat */
    SBK_OPT_CHOICE,  /* int field = index into choices */
    SBK_OPT_CUSTOM,  /* parse() fills the field */
} sbk_opt_kind;

typedef struct sbk_list {
    size_t n;
    long long *v;
} sbk_list;

typedef struct sbk_strings {
    int n;
    const char **v;
} sbk_strings;

typedef struct sbk_option {
    const char *name;
    sbk_opt_kind kind;
    size_t offset;    /* of the field in the mode's (or the core's) option struct */
    const char *arg;  /* placeholder in --help, NULL for flags */
    const char *help; /* '\n' continues on the next help line */
    long long lo, hi;
    const char *const *choices; /* SBK_OPT_CHOICE: NULL-terminated */
    /* SBK_OPT_CUSTOM: returns 0, or writes a message (without the option name) to err */
    int (*parse)(const char *value, void *field, char *err, size_t len);
    unsigned needs; /* core options: the mode features they need */
} sbk_option;

struct sbk_config;
struct sbk_mode;
/* The command line (options.c): returns 0, SBK_EUSAGE (message in sbk_usage_error()),
 * or -1 for --help, -2 for --version and -3 for --list-backends. */
int sbk_parse_args(int argc, char **argv, struct sbk_config *c, const struct sbk_mode **mode,
                   void **opts);
const char *sbk_usage_error(void);
void sbk_print_help(FILE *f);
const char *sbk_fsync_name(int fsync);

/* Sizes: 4096, 4k, 1m, 2g (binary multiples); returns 0 or -1. */
int sbk_parse_size(const char *s, uint64_t *out);
/* "1 MiB", "4 KiB", "12345 B": the largest binary unit that divides the size. */
void sbk_format_size(uint64_t bytes, char *out, size_t len);

/* Mode features: what the core offers a mode (and which common options it accepts). */
enum {
    SBK_F_MULTI_DIR = 1, /* --dir may repeat: one target directory per disk */
    SBK_F_READS = 2,     /* writes data and reads it back: cache defeat, --no-verify, --fsync */
    SBK_F_SHIFT = 4,     /* --shift: rank r works on the files of rank r+N */
    SBK_F_STONEWALL = 8, /* --stonewall */
    SBK_F_EXISTING = 16, /* --keep writes a manifest that --existing reads */
    SBK_F_ENGINE = 32,   /* --engine: queued asynchronous I/O */
};

/* The core's options, common to every mode. */
typedef struct sbk_config {
    const char *mode_name;
    sbk_strings dirs;
    const char *output; /* JSON file, NULL = stdout */
    int table;          /* human table on stdout */
    long reps;
    double stonewall; /* seconds, 0 = off */
    int keep;
    long seed;
    /* cache defeat and data checks */
    int direct;
    int fadvise;
    const char *scan_file;
    int shift; /* read another rank's data; -1 = auto (next node) */
    int fsync; /* sbk_fsync */
    int verify;
    const char *existing; /* read a run directory kept by an earlier --keep run */
    int engine;           /* index into the queued engines' table (backends.c) */
} sbk_config;

/* ---- phases, records, gathers ---- */
enum {
    SBK_TIMER, /* seconds per rank: per_rank array and time_s statistics over ranks */
    SBK_TOTAL, /* exact integer per rank: per_rank array and the total over ranks */
    SBK_COUNT, /* exact integer per rank: per_rank array only */
};
typedef struct sbk_field {
    const char *name;
    int kind;
} sbk_field;

enum {
    SBK_PH_REPORT = 1,       /* timed and reported (else preparation, e.g. iotest --iread 1) */
    SBK_PH_DEFEAT_CACHE = 2, /* the core defeats the cache before it (a read after a write) */
    SBK_PH_STONEWALL = 4,    /* reports stonewall_hit_ranks */
    SBK_PH_DATA = 8,         /* moves data: reports verify (words that failed verification) */
};

typedef struct sbk_phase {
    char name[48]; /* its key under repetitions[].phases and summary */
    int kind;      /* the mode's own tag */
    unsigned flags;
    long long arg[4];        /* the mode's parameters of this phase */
    const sbk_field *fields; /* per-rank figures; the mode owns the array */
    int nfields;
} sbk_phase;

/* One rank's figures of one phase in one repetition; timers accumulate over
 * iterations.  time[i] is used for SBK_TIMER fields, count[i] for the others. */
typedef struct sbk_rec {
    double *time;
    uint64_t *count;
    uint64_t bad_words, stale_words;
    int64_t first_bad_byte; /* -1 if none */
    int stonewall_hit;
    /* Rank 0: the wall clock (Unix seconds) when the phase's first iteration started,
     * after its barrier, and when its last ended on every rank; a system monitor's
     * samples (the block device's statistics) are cut to the phase with them. */
    double window_unix_s[2];
} sbk_rec;

/* Rank 0's view of one phase after the gather: column [field][rank]. */
typedef struct sbk_gathered {
    int nranks;
    double **time;
    uint64_t **count;
    uint64_t *bad_words, *stale_words;
    int64_t *first_bad_byte;
    int *stonewall_hit;
} sbk_gathered;
double sbk_col_max(const sbk_gathered *g, int field);
double sbk_col_min(const sbk_gathered *g, int field);
uint64_t sbk_col_sum(const sbk_gathered *g, int field);

/* Units of figures, for the --table. */
enum { SBK_UNIT_BPS, SBK_UNIT_OPS, SBK_UNIT_FRACTION, SBK_UNIT_SECONDS, SBK_UNIT_NONE };

/* Rank 0, in report_phase: write a figure and keep it for the summary over repetitions. */
void sbk_figure(sbk_ctx *ctx, sbk_json *j, const sbk_phase *ph, const char *key, double value,
                int unit);

/* ---- the manifest of a kept run (run.c) ---- */
typedef struct sbk_manifest sbk_manifest;
const char *sbk_manifest_get(const sbk_manifest *m, const char *key); /* NULL if absent */

/* ---- modes ---- */
typedef struct sbk_mode {
    const char *name;
    const char *about; /* --help: what the mode measures; '\n' continues */
    unsigned features;
    const sbk_option *options; /* terminated by {0} */
    size_t opts_size;
    void (*defaults)(void *opts);
    /* Cross-option checks after parsing (no MPI yet): 0, or a message in err. */
    int (*check)(const sbk_config *cfg, const void *opts, char *err, size_t len);
    /* Its keys in the report's config object. */
    void (*config_json)(const sbk_ctx *ctx, sbk_json *j);
    /* The --table title after "scratchbench-kernel MODE: N ranks on M node(s), ". */
    void (*describe)(const sbk_ctx *ctx, char *buf, size_t len);
    /* Collective: make its state, plan its phases (sbk_plan_add); returns sbk_agree(). */
    int (*setup)(sbk_ctx *ctx);
    /* One rank runs one phase (timers from the barrier the core placed before it);
     * errors go to sbk_fail.  Collective calls inside must be reached by every rank. */
    void (*run_phase)(sbk_ctx *ctx, const sbk_phase *ph, sbk_rec *rec);
    /* Rank 0: the mode's figures of a phase, from the gathered records. */
    void (*report_phase)(sbk_ctx *ctx, const sbk_phase *ph, const sbk_gathered *g, sbk_json *j);
    /* Files this rank writes, for cache defeat: fills target index and name, returns 0
     * while index names a file, -1 after the last. */
    int (*written_file)(const sbk_ctx *ctx, int index, int *target, char *name, size_t len);
    /* Collective, after each repetition (last = no repetition follows). */
    void (*end_rep)(sbk_ctx *ctx, int last);
    /* Collective, at the end: remove what it created unless --keep; free its state. */
    void (*teardown)(sbk_ctx *ctx, int code);
    /* SBK_F_EXISTING: "key value" lines that identify the data and its state... */
    void (*manifest_write)(const sbk_ctx *ctx, FILE *f);
    /* ...and, on every rank, check a kept run fits this one (0, or a message). */
    int (*manifest_read)(sbk_ctx *ctx, const sbk_manifest *m, char *msg, size_t len);
} sbk_mode;

void sbk_register_mode(const sbk_mode *m);
const sbk_mode *sbk_find_mode(const char *name);
int sbk_mode_count(void);
const sbk_mode *sbk_mode_at(int i); /* in name order */
/* A mode file ends with SBK_REGISTER_MODE(its sbk_mode variable). */
#define SBK_REGISTER_MODE(var)                                                                     \
    __attribute__((constructor)) static void sbk_register_##var(void) { sbk_register_mode(&(var)); }

/* ---- the run (run.c) ---- */
void sbk_plan_add(sbk_ctx *ctx, const sbk_phase *ph); /* copied */
int sbk_run(sbk_ctx *ctx, sbk_json *j);               /* collective: the repetition loop */
/* Collective: a parsed command line run from start to finished report (rank 0 writes
 * it to out); returns the exit code.  main() and the unit tests' harness both call
 * it, so what they run cannot drift apart.  ctx holds rank and size. */
int sbk_run_report(sbk_ctx *ctx, const sbk_config *cfg, const sbk_mode *mode, void *opts,
                   FILE *out);
int sbk_stonewall_reached(const sbk_ctx *ctx, double phase_start);
/* Verification tallies of one checked buffer into the phase record. */
struct sbk_verify_result;
void sbk_rec_verify(sbk_rec *rec, const struct sbk_verify_result *r);

/* ---- targets and the core context ---- */
typedef struct sbk_target {
    char path[4096];   /* resolved --dir */
    char rundir[4096]; /* the unique run directory inside it */
    int fd;            /* of rundir */
    int created;       /* this rank made rundir (rank 0, or a node leader if not shared) */
    int shared;        /* every node saw the run directory rank 0 made */
    size_t dio_align;
    char fstype[32];
} sbk_target;

/* The first error a rank met; gathered to rank 0 for the report. */
typedef struct sbk_error {
    int code; /* enum sbk_exit */
    int err;  /* errno */
    int rank;
    uint64_t bytes_done; /* bytes this rank had moved in the failing phase */
    char phase[48];
    char message[240];
} sbk_error;

struct sbk_run_state;

struct sbk_ctx {
    const sbk_config *cfg;
    const sbk_mode *mode;
    const void *opts; /* the mode's options */
    void *state;      /* the mode's state */
    int rank, size;
    int node_index, nnodes, node_rank, ranks_per_node;
    int *node_of;           /* node index of every rank (every rank holds it) */
    char (*node_names)[64]; /* node name of every rank */
    char node[64];          /* scheduler node name, else host name */
    char host[64];
    int ntargets;
    sbk_target *targets;
    int shift;            /* effective shift */
    sbk_error error;      /* this rank's first error, code 0 if none */
    uint64_t phase_bytes; /* bytes this rank moved in its latest phase */
    /* the loop's position, set by the core */
    long iterations; /* passes over the plan per repetition (iotest's NITER) */
    int rep;
    long iter;
    uint64_t generation; /* of the data written in this pass; from the manifest with --existing */
    struct sbk_run_state *run;
};

/* ---- statistics (stats.c) ---- */
typedef struct sbk_summary {
    size_t n;
    double min, max, mean, trimmed_mean, stddev, cv;
} sbk_summary;
sbk_summary sbk_summarize(const double *values, size_t n);

/* ---- splitmix64 (Steele, Lea and Flood): the kernel's one hash and random stream ----
 * Inline: the pattern stamps every few words with it, so a call would cost speed. */
static inline uint64_t sbk_mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}
/* The next value of a splitmix64 stream: advances *state. */
static inline uint64_t sbk_splitmix_next(uint64_t *state)
{
    uint64_t x = *state;
    *state += 0x9E3779B97F4A7C15ULL;
    return sbk_mix64(x);
}

/* ---- data pattern (pattern.c) ----
 * Every `interval`-th 64-bit word of a file holds a stamp of (seed, file, generation,
 * word index); the others hold a fill that depends on the seed only.  A block at
 * the wrong offset, from an earlier generation (stale) or damaged fails the check. */
typedef struct sbk_pattern {
    uint64_t seed;
    uint64_t interval; /* power of two, 1..64 */
    uint64_t fill[64];
} sbk_pattern;
typedef struct sbk_verify_result {
    uint64_t bad_words;
    uint64_t stale_words;   /* bad words holding the stamp of the previous generation */
    int64_t first_bad_word; /* -1 if none */
} sbk_verify_result;
void sbk_pattern_init(sbk_pattern *p, uint64_t seed, uint64_t words_per_xfer);
uint64_t sbk_stamp(const sbk_pattern *p, uint64_t file, uint64_t gen, uint64_t word);
void sbk_pattern_fill(const sbk_pattern *p, uint64_t *buf, uint64_t nwords, uint64_t file,
                      uint64_t gen, uint64_t first_word, int stamps_only);
sbk_verify_result sbk_pattern_check(const sbk_pattern *p, const uint64_t *buf, uint64_t nwords,
                                    uint64_t file, uint64_t gen, uint64_t first_word);

/* ---- JSON writer (json.c) ---- */
struct sbk_json {
    FILE *f;
    int depth;
    int first[64];
};
void jw_begin(sbk_json *j, FILE *f);
void jw_obj(sbk_json *j, const char *key);
void jw_arr(sbk_json *j, const char *key);
void jw_end_obj(sbk_json *j);
void jw_end_arr(sbk_json *j);
void jw_str(sbk_json *j, const char *key, const char *value);
void jw_num(sbk_json *j, const char *key, double value); /* measured values; NaN -> null */
void jw_int(sbk_json *j, const char *key, long long value);
void jw_uint(sbk_json *j, const char *key, uint64_t value); /* counts: exact */
void jw_bool(sbk_json *j, const char *key, int value);
void jw_null(sbk_json *j, const char *key);
void jw_summary(sbk_json *j, const char *key, sbk_summary s);
void jw_doubles(sbk_json *j, const char *key, const double *v, size_t n);
void jw_unix_times(sbk_json *j, const char *key, const double *v, size_t n);
void jw_uints(sbk_json *j, const char *key, const uint64_t *v, size_t n);
void jw_finish(sbk_json *j);

/* ---- run directories and safety (workdir.c) ---- */
int sbk_workdir_open(sbk_ctx *ctx);  /* collective */
int sbk_workdir_close(sbk_ctx *ctx); /* collective: remove what we made */
/* Path of name inside target t's run directory; 0 or ENAMETOOLONG. */
int sbk_path(const sbk_ctx *ctx, int t, char *out, size_t len, const char *name);
#define SBK_MANIFEST "sbk.manifest"

/* ---- file system facts and cache defeat (fsinfo.c) ---- */
void sbk_fsinfo(const char *dir, char *fstype, size_t len, size_t *dio_align);
double sbk_resident_fraction(int fd); /* via mincore; -1 if unknown */
int sbk_scan_file(const char *path, uint64_t *bytes);
uint64_t sbk_node_memory(void); /* bytes of RAM of this node */

/* ---- errors and small helpers (core.c) ---- */
int sbk_fail(sbk_ctx *ctx, int code, int err, const char *phase, uint64_t bytes_done,
             const char *fmt, ...) __attribute__((format(printf, 6, 7)));
int sbk_code_for_errno(int err);
int sbk_agree(sbk_ctx *ctx); /* collective: max error code over ranks */
/* Set by SIGTERM/SIGINT (a scheduler's scancel or time limit).  Every transfer and every
 * stonewall check looks at it, so a rank stops within one request, the mode removes what
 * it made and the report says why: the scheduler's SIGKILL follows only seconds later. */
extern volatile sig_atomic_t sbk_stop_signal;
void sbk_catch_stop_signals(void);
int sbk_stopped(sbk_ctx *ctx);         /* the signal came: record it, return 1 */
const char *sbk_reason_name(int code); /* exit code -> the JSON's exit_reason */
double sbk_now(void);
void sbk_identify_node(sbk_ctx *ctx);                       /* collective */
void sbk_write_header(sbk_json *j, const sbk_ctx *ctx);     /* collective (gathers hosts) */
void sbk_write_errors(sbk_json *j, sbk_ctx *ctx, int code); /* collective */
void *sbk_alloc_aligned(size_t align, size_t bytes);        /* NULL on failure */

/* ---- back ends (backends.c holds the tables; backend_*.c one back end each) ----
 * Chosen by name: --api (synchronous) and --engine (queued), the first of each table
 * being the default; --list-backends prints both tables. */
enum { SBK_OPEN_CREATE = 1, SBK_OPEN_WRITE = 2, SBK_OPEN_READ = 4 };
typedef struct sbk_file {
    int fd;
    MPI_File fh;
    int collective;
    int dir_fd; /* MPI-IO: the run directory, to tell a full file system from
                              the generic I/O error an implementation reports for it */
} sbk_file;
/* What a synchronous back end can do beyond the interface's minimum. */
enum { SBK_BE_DIRECT = 1, SBK_BE_COLLECTIVE = 2 };
typedef struct sbk_backend {
    const char *name;
    const char *title; /* in the --table's title: "POSIX" */
    const char *about; /* one line, for --list-backends and SCHEMA.md */
    unsigned caps;     /* SBK_BE_*: O_DIRECT (--direct), collective transfers */
    /* All return 0 or an errno value.  Files live in target 0's run directory. */
    int (*open)(const sbk_ctx *ctx, const char *name, int flags, int shared, int collective,
                sbk_file *f);
    int (*xfer)(sbk_file *f, int write, void *buf, size_t len, uint64_t offset, size_t *done);
    int (*sync)(sbk_file *f);
    int (*close)(sbk_file *f);
} sbk_backend;
extern const char *sbk_backend_names[];                /* NULL-terminated, table order */
const sbk_backend *sbk_backend_at(int index);          /* NULL past the end */
const sbk_backend *sbk_find_backend(const char *name); /* NULL if unknown */

/* Queued asynchronous I/O (queue.c, backend_uring.c, backend_aio.c): one queue per
 * rank; the core's wrappers count requests in flight the same way for every engine:
 * from submission until the completion is reaped. */
enum { SBK_IO_READ, SBK_IO_WRITE, SBK_IO_FSYNC };
typedef struct sbk_io {
    int op;
    int fd;
    void *buf;
    size_t len;
    uint64_t offset;
    uint64_t tag; /* returned with the completion; below 2^63 */
} sbk_io;
typedef struct sbk_done {
    uint64_t tag;
    int op;  /* SBK_IO_* of the request */
    int err; /* errno, 0 if it succeeded */
    size_t bytes;
} sbk_done;
typedef struct sbk_queue sbk_queue;
typedef struct sbk_engine {
    const char *name;
    const char *about;                           /* one line, for --list-backends and SCHEMA.md */
    int (*init)(sbk_queue *q, unsigned entries); /* errno */
    /* errno; all n in flight after; wait: the caller reaps next, so the engine may wait
     * for one completion in the same system call */
    int (*submit)(sbk_queue *q, const sbk_io *ios, unsigned n, int wait);
    /* Waits for at least min completions (0: none), returns up to max in *got. */
    int (*reap)(sbk_queue *q, sbk_done *out, unsigned max, unsigned min, unsigned *got);
    void (*fini)(sbk_queue *q);
    /* Optional: init's err means this host refuses the engine; fills msg with the cause
     * and the fallback and returns 1 (the run exits SBK_ENOURING), else returns 0. */
    int (*refused)(int err, char *msg, size_t len);
} sbk_engine;
extern const char *sbk_engine_names[];      /* NULL-terminated, table order */
const sbk_engine *sbk_engine_at(int index); /* NULL past the end */
const char *sbk_engine_name(int index);
void sbk_list_backends(FILE *f); /* "kind<TAB>name<TAB>about" lines */
struct sbk_queue {
    const sbk_engine *engine;
    void *impl;
    unsigned entries;
    unsigned inflight; /* data requests submitted and not yet reaped */
    unsigned inflight_max;
    double inflight_area; /* integral of inflight over time: the sum of request latencies */
    double last_change;
};
/* Opens a queue of the configured engine; on refusal fails with SBK_ENOURING and a
 * message that names the cause and the fallback.  Returns 0 or the error code. */
int sbk_queue_open(sbk_ctx *ctx, sbk_queue *q, unsigned entries);
int sbk_queue_submit(sbk_queue *q, const sbk_io *ios, unsigned n, int wait);
int sbk_queue_reap(sbk_queue *q, sbk_done *out, unsigned max, unsigned min, unsigned *got);
void sbk_queue_reset_counters(sbk_queue *q);
void sbk_queue_close(sbk_queue *q);

/* Streaming through a queue (diskperf, jovian): nblocks blocks over the files of
 * nowners owners x ndirs directories (file k*ndirs + d).  Block b belongs to request
 * j = b / ndirs, directory d = b % ndirs, owner k = j % nowners, at offset
 * (j / nowners) * block: consecutive blocks visit every directory, so every disk is
 * busy, and consecutive requests visit every owner.  Writes stamp the pattern, reads
 * verify it.  Every rank calls it once per phase (it holds a barrier before the
 * timers start), with nblocks = 0 when it has no part in the phase. */
typedef struct sbk_stream {
    int write;
    int ndirs, nowners;
    const int *fd;           /* per file */
    const uint64_t *file_id; /* per file: its pattern identity */
    const char *const *path; /* per file: for messages */
    uint64_t nblocks;
    size_t block;   /* bytes, a multiple of 512 */
    size_t align;   /* of the buffers */
    unsigned depth; /* data requests kept in flight */
    uint64_t gen;
    const sbk_pattern *pat;
    int verify;
    sbk_rec *rec; /* verification tallies go here */
    int fsync;    /* sbk_fsync, after writes: one fsync per file, in parallel */
    const char *phase;
} sbk_stream;
typedef struct sbk_stream_result {
    double total;        /* s, barrier to the last completion (and fsync if inside) */
    double verify;       /* s spent verifying, inside total (overlaps I/O in flight) */
    double *dir_time;    /* per directory: to its last completion; caller's array */
    uint64_t *dir_bytes; /* per directory; caller's array */
    uint64_t bytes, ios;
    unsigned depth_max; /* data requests in flight at most */
    double latency_sum; /* s, the sum of every data request's time in flight */
} sbk_stream_result;
void sbk_stream_run(sbk_ctx *ctx, sbk_queue *q, const sbk_stream *s, sbk_stream_result *r);

#endif
