/* scratchbench-kernel: argument handling, MPI set-up, dispatch to a mode, JSON out. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

static const char usage_text[] =
    "usage: scratchbench-kernel MODE --dir DIR [options]\n"
    "\n"
    "Modes:\n"
    "  iotest     seed 002's IOTest: NR 64-bit values per transfer, NC transfers, NITER\n"
    "             iterations; write, read or both; open/access/sync/close timed apart\n"
    "  metadata   open/close at scale, stat, and deletion cost with parallel removers\n"
    "\n"
    "Common options:\n"
    "  --dir DIR            target directory; the kernel writes only in a new subdirectory\n"
    "  --output FILE        write the JSON report to FILE instead of stdout\n"
    "  --table              print a human table on stdout (JSON then only with --output)\n"
    "  --reps N             repetitions, summarised by min/max/mean/trimmed mean [1]\n"
    "  --stonewall SEC      stop writing/creating after SEC seconds [off]\n"
    "  --keep               keep the files (the run directory is printed)\n"
    "  --seed N             seed of the verification pattern [1]\n"
    "  --version, --help\n"
    "\n"
    "iotest options:\n"
    "  --nr N               64-bit values per transfer [131072 = 1 MiB]\n"
    "  --nc N               transfers per rank and iteration [16]\n"
    "  --niter N            iterations, timers accumulate [1]\n"
    "  --iread 0|1|2        0 write, 1 read (written untimed first), 2 write then read [2]\n"
    "  --layout fpp|shared  file per process or one shared file [fpp]\n"
    "  --api posix|mpiio    I/O interface [posix]\n"
    "  --collective         collective MPI-IO transfers (with --api mpiio)\n"
    "  --fsync inside|outside|none\n"
    "                       fsync after writing, inside or outside the timers [inside]\n"
    "  --direct             O_DIRECT (POSIX; transfer size must match the alignment)\n"
    "  --fadvise            fsync + posix_fadvise(DONTNEED) before reading; residency reported\n"
    "  --scan-file FILE     read FILE (larger than memory) before reading, once per node\n"
    "  --shift N|auto       rank r reads the data of rank r+N; auto = the next node [0]\n"
    "  --no-verify          do not check the data read back\n"
    "  --existing RUNDIR    with --iread 1: read the files of a run directory kept by an\n"
    "                       earlier --iread 0 --keep run (e.g. from another job or node)\n"
    "\n"
    "metadata options:\n"
    "  --files N            files per rank [1000]\n"
    "  --dir-per-rank       one directory per rank instead of one shared directory\n"
    "  --phases LIST        comma list of create,open,stat,remove [all]\n"
    "  --removers K         threads per rank that unlink in parallel [1]\n"
    "  --file-size BYTES    bytes written into each created file [0]\n"
    "\n"
    "Exit codes: 0 ok, 1 internal, 2 invalid arguments, 3 missing directory, 4 permission\n"
    "denied, 5 no space, 6 verification failed, 7 other I/O error, 8 O_DIRECT refused.\n";

enum {
    O_DIR = 256, O_OUTPUT, O_TABLE, O_REPS, O_STONEWALL, O_KEEP, O_SEED, O_VERSION, O_HELP,
    O_NR, O_NC, O_NITER, O_IREAD, O_LAYOUT, O_API, O_COLLECTIVE, O_FSYNC, O_DIRECT,
    O_FADVISE, O_SCAN, O_SHIFT, O_NOVERIFY, O_EXISTING,
    O_FILES, O_DIRPERRANK, O_PHASES, O_REMOVERS, O_FILESIZE,
};

static const struct option long_options[] = {
    {"dir", required_argument, 0, O_DIR},
    {"output", required_argument, 0, O_OUTPUT},
    {"table", no_argument, 0, O_TABLE},
    {"reps", required_argument, 0, O_REPS},
    {"stonewall", required_argument, 0, O_STONEWALL},
    {"keep", no_argument, 0, O_KEEP},
    {"seed", required_argument, 0, O_SEED},
    {"version", no_argument, 0, O_VERSION},
    {"help", no_argument, 0, O_HELP},
    {"nr", required_argument, 0, O_NR},
    {"nc", required_argument, 0, O_NC},
    {"niter", required_argument, 0, O_NITER},
    {"iread", required_argument, 0, O_IREAD},
    {"layout", required_argument, 0, O_LAYOUT},
    {"api", required_argument, 0, O_API},
    {"collective", no_argument, 0, O_COLLECTIVE},
    {"fsync", required_argument, 0, O_FSYNC},
    {"direct", no_argument, 0, O_DIRECT},
    {"fadvise", no_argument, 0, O_FADVISE},
    {"scan-file", required_argument, 0, O_SCAN},
    {"shift", required_argument, 0, O_SHIFT},
    {"no-verify", no_argument, 0, O_NOVERIFY},
    {"existing", required_argument, 0, O_EXISTING},
    {"files", required_argument, 0, O_FILES},
    {"dir-per-rank", no_argument, 0, O_DIRPERRANK},
    {"phases", required_argument, 0, O_PHASES},
    {"removers", required_argument, 0, O_REMOVERS},
    {"file-size", required_argument, 0, O_FILESIZE},
    {0, 0, 0, 0},
};

static char usage_error[400];

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
    if (!usage_error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(usage_error, sizeof usage_error, fmt, ap);
        va_end(ap);
    }
    return SBK_EUSAGE;
}

static int parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi)
        return bad("--%s: expected an integer from %ld to %ld, got '%s'", opt, lo, hi, s);
    *out = v;
    return 0;
}

static int is_iotest_option(int id) { return id >= O_NR && id <= O_EXISTING; }
static int is_metadata_option(int id) { return id >= O_FILES && id <= O_FILESIZE; }

/* Returns 0, SBK_EUSAGE, or -1 for --help/--version (print and exit 0). */
static int parse_args(int argc, char **argv, sbk_config *c)
{
    *c = (sbk_config){.reps = 1, .seed = 1, .shift = 0, .fsync = FSYNC_INSIDE, .verify = 1,
                      .nr = 131072, .nc = 16, .niter = 1, .iread = 2, .layout = LAYOUT_FPP,
                      .api = API_POSIX, .files = 1000, .phases = 15, .removers = 1};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return -1;
        else if (!strcmp(argv[i], "--version"))
            return -2;
    if (argc < 2 || argv[1][0] == '-')
        return bad("missing MODE: expected iotest or metadata as the first argument");
    c->mode = argv[1];
    int iotest = !strcmp(c->mode, "iotest"), metadata = !strcmp(c->mode, "metadata");
    if (!iotest && !metadata)
        return bad("unknown mode '%s': expected iotest or metadata", c->mode);

    long v;
    int opt, rc = 0;
    opterr = 0;
    optind = 2;
    while ((opt = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
        if (opt == '?' || opt == ':') {
            const char *arg = optind - 1 < argc ? argv[optind - 1] : "?";
            /* getopt_long reports a missing value as '?' too when optstring lacks ':'. */
            return bad("unknown option or missing value: '%s'", arg);
        }
        const char *name = NULL;
        for (const struct option *o = long_options; o->name; o++)
            if (o->val == opt)
                name = o->name;
        if (is_iotest_option(opt) && !iotest)
            return bad("--%s is an option of mode iotest, not %s", name, c->mode);
        if (is_metadata_option(opt) && !metadata)
            return bad("--%s is an option of mode metadata, not %s", name, c->mode);
        switch (opt) {
        case O_DIR: c->dir = optarg; break;
        case O_OUTPUT: c->output = optarg; break;
        case O_TABLE: c->table = 1; break;
        case O_REPS: rc = parse_long(name, optarg, 1, 4096, &v); c->reps = (int)v; break;
        case O_STONEWALL: {
            char *end = NULL;
            c->stonewall = strtod(optarg, &end);
            if (!end || *end || end == optarg || c->stonewall < 0 || c->stonewall > 1e6)
                return bad("--stonewall: expected seconds from 0 to 1e6, got '%s'", optarg);
            break;
        }
        case O_KEEP: c->keep = 1; break;
        case O_SEED: rc = parse_long(name, optarg, 0, LONG_MAX, &v); c->seed = (uint64_t)v; break;
        case O_NR: rc = parse_long(name, optarg, 1, 1L << 27, &v); c->nr = v; break;
        case O_NC: rc = parse_long(name, optarg, 1, 1L << 40, &v); c->nc = v; break;
        case O_NITER: rc = parse_long(name, optarg, 1, 1000000, &v); c->niter = v; break;
        case O_IREAD: rc = parse_long(name, optarg, 0, 2, &v); c->iread = (int)v; break;
        case O_LAYOUT:
            if (!strcmp(optarg, "fpp")) c->layout = LAYOUT_FPP;
            else if (!strcmp(optarg, "shared")) c->layout = LAYOUT_SHARED;
            else return bad("--layout: expected fpp or shared, got '%s'", optarg);
            break;
        case O_API:
            if (!strcmp(optarg, "posix")) c->api = API_POSIX;
            else if (!strcmp(optarg, "mpiio")) c->api = API_MPIIO;
            else return bad("--api: expected posix or mpiio, got '%s'", optarg);
            break;
        case O_COLLECTIVE: c->collective = 1; break;
        case O_FSYNC:
            if (!strcmp(optarg, "inside")) c->fsync = FSYNC_INSIDE;
            else if (!strcmp(optarg, "outside")) c->fsync = FSYNC_OUTSIDE;
            else if (!strcmp(optarg, "none")) c->fsync = FSYNC_NONE;
            else return bad("--fsync: expected inside, outside or none, got '%s'", optarg);
            break;
        case O_DIRECT: c->direct = 1; break;
        case O_FADVISE: c->fadvise = 1; break;
        case O_SCAN: c->scan_file = optarg; break;
        case O_SHIFT:
            if (!strcmp(optarg, "auto")) c->shift = -1;
            else { rc = parse_long(name, optarg, 0, 1 << 24, &v); c->shift = (int)v; }
            break;
        case O_NOVERIFY: c->verify = 0; break;
        case O_EXISTING: c->existing = optarg; break;
        case O_FILES: rc = parse_long(name, optarg, 1, 1L << 32, &v); c->files = v; break;
        case O_DIRPERRANK: c->dir_per_rank = 1; break;
        case O_PHASES: {
            c->phases = 0;
            char *copy = strdup(optarg), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (!strcmp(tok, "create")) c->phases |= MD_CREATE;
                else if (!strcmp(tok, "open")) c->phases |= MD_OPEN;
                else if (!strcmp(tok, "stat")) c->phases |= MD_STAT;
                else if (!strcmp(tok, "remove")) c->phases |= MD_REMOVE;
                else {
                    rc = bad("--phases: unknown phase '%s': expected a comma list of create,"
                             "open,stat,remove", tok);
                }
            }
            free(copy);
            break;
        }
        case O_REMOVERS: rc = parse_long(name, optarg, 1, 256, &v); c->removers = (int)v; break;
        case O_FILESIZE: rc = parse_long(name, optarg, 0, 1L << 30, &v); c->file_size = v; break;
        }
        if (rc)
            return rc;
    }
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    if (!c->dir && !c->existing)
        return bad("--dir is required: the directory to test");
    if (c->collective && c->api != API_MPIIO)
        return bad("--collective needs --api mpiio");
    if (c->direct && c->api != API_POSIX)
        return bad("--direct works with --api posix only (MPI-IO has no portable O_DIRECT)");
    if (metadata && c->phases && !(c->phases & MD_CREATE))
        return bad("--phases: 'create' is required, the other phases work on the files it "
                   "makes");
    if (c->existing && c->iread != 1)
        return bad("--existing needs --iread 1: it reads data an earlier run wrote");
    if (metadata && !c->phases)
        return bad("--phases: expected at least one phase");
    if (c->scan_file && access(c->scan_file, R_OK) != 0)
        return bad("--scan-file %s: %s", c->scan_file, strerror(errno));
    return 0;
}

/* Node identity: the scheduler's node name when there is one, since several
 * Slurm nodes can share one host. */
static void identify_node(sbk_ctx *ctx)
{
    gethostname(ctx->host, sizeof ctx->host - 1);
    const char *node = getenv("SLURMD_NODENAME");
    snprintf(ctx->node, sizeof ctx->node, "%s", node && *node ? node : ctx->host);
    char *all = malloc((size_t)ctx->size * 64);
    char mine[64];
    memset(mine, 0, sizeof mine);
    memcpy(mine, ctx->node, strnlen(ctx->node, 63));
    MPI_Allgather(mine, 64, MPI_CHAR, all, 64, MPI_CHAR, MPI_COMM_WORLD);
    ctx->nnodes = 0;
    ctx->node_rank = 0;
    ctx->ranks_per_node = 0;
    ctx->node_index = -1;
    for (int r = 0; r < ctx->size; r++) {
        int seen = 0;
        for (int q = 0; q < r; q++)
            if (!strncmp(all + 64 * q, all + 64 * r, 64)) {
                seen = 1;
                break;
            }
        if (!seen) {
            if (!strncmp(all + 64 * r, mine, 64))
                ctx->node_index = ctx->nnodes;
            ctx->nnodes++;
        }
        if (!strncmp(all + 64 * r, mine, 64)) {
            if (r < ctx->rank)
                ctx->node_rank++;
            ctx->ranks_per_node++;
        }
    }
    free(all);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    sbk_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.rundir_fd = -1;
    snprintf(ctx.fstype, sizeof ctx.fstype, "unknown");
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);

    sbk_config cfg;
    int rc = parse_args(argc, argv, &cfg);
    if (rc < 0) {
        if (ctx.rank == 0)
            fputs(rc == -1 ? usage_text : "scratchbench-kernel " SBK_VERSION
                  " (output schema " SBK_SCHEMA_VERSION ")\n", stdout);
        MPI_Finalize();
        return 0;
    }
    if (rc) {
        if (ctx.rank == 0)
            fprintf(stderr, "scratchbench-kernel: error: %s (see --help)\n", usage_error);
        MPI_Finalize();
        return rc;
    }
    ctx.cfg = &cfg;
    identify_node(&ctx);
    if (cfg.shift == -1)
        ctx.shift = ctx.nnodes > 1 ? ctx.ranks_per_node : 0;
    else
        ctx.shift = cfg.shift % ctx.size;

    /* Open the report file first: a bad --output should fail before any I/O. */
    FILE *out = stdout;
    int out_err = 0;
    if (ctx.rank == 0) {
        if (cfg.output)
            out = fopen(cfg.output, "w");
        else if (cfg.table)
            out = fopen("/dev/null", "w");
        if (!out)
            out_err = errno;
    }
    MPI_Bcast(&out_err, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (out_err) {
        if (ctx.rank == 0)
            fprintf(stderr, "scratchbench-kernel: error: --output %s: %s\n", cfg.output,
                    strerror(out_err));
        MPI_Finalize();
        return SBK_EUSAGE;
    }

    sbk_json j;
    jw_begin(&j, ctx.rank == 0 ? out : NULL);
    int code = sbk_workdir_open(&ctx);
    char **hosts = sbk_gather_hosts(&ctx);
    if (ctx.rank == 0) {
        jw_obj(&j, NULL);
        sbk_write_header(&j, &ctx, (const char *const *)hosts);
    }
    sbk_free_hosts(&ctx, hosts);
    if (code == 0)
        code = !strcmp(cfg.mode, "iotest") ? sbk_mode_iotest(&ctx, &j)
                                           : sbk_mode_metadata(&ctx, &j);
    if (ctx.rundir[0])
        sbk_workdir_close(&ctx);
    if (ctx.rank == 0)
        jw_bool(&j, "complete", code == 0 || code == SBK_EVERIFY);
    sbk_write_errors(&j, &ctx, code);
    if (ctx.rank == 0) {
        jw_end_obj(&j);
        jw_finish(&j);
        if (out != stdout)
            fclose(out);
    }
    MPI_Finalize();
    return code;
}
