/* jovian mode: seed 001's Jovian-2 placements of readers relative to writers.
 *
 * A request is stripe size x number of target directories (one stripe per disk, all
 * in flight together, so every disk is busy); every client moves a fixed amount of
 * data.  Each placement is a write phase then, after the cache defeat (--scan-file is
 * seed 001's flush), a read phase:
 *   local         every rank writes its data and reads it back on its own node;
 *   one-to-many   the ranks on the other nodes than rank 0's (the servers) write the
 *                 client's data, request j on server j mod S; rank 0 alone reads it;
 *   many-to-many  every rank writes its data and reads the data of a rank on the next
 *                 node (same position among that node's ranks).
 * Placement comes from the node names the core gathers, never from rank numbers, and
 * reads verify that the data is the owner's, so a reader of the wrong rank's files
 * fails.  Other nodes' files are read through the file system, so the directories
 * must be shared between nodes for the last two placements.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel.h"

enum { PL_LOCAL, PL_ONE_TO_MANY, PL_MANY_TO_MANY, PL_N };
static const char *const placement_names[PL_N] = {"local", "one-to-many", "many-to-many"};
static const char *const placement_keys[PL_N] = {"local", "one_to_many", "many_to_many"};

typedef struct {
    uint64_t stripe_size, data_per_client;
    int placements;
    long inflight;
} jv_opts;

static int parse_placements(const char *value, void *field, char *err, size_t len)
{
    int mask = 0;
    char *copy = strdup(value), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int p = 0; p < PL_N; p++)
            if (!strcmp(tok, placement_names[p])) {
                mask |= 1 << p;
                found = 1;
            }
        if (!found) {
            snprintf(err, len,
                     "unknown placement '%s': expected a comma list of local,"
                     "one-to-many,many-to-many",
                     tok);
            free(copy);
            return -1;
        }
    }
    free(copy);
    if (!mask) {
        snprintf(err, len, "expected at least one of local,one-to-many,many-to-many");
        return -1;
    }
    *(int *)field = mask;
    return 0;
}

#define OPT(f) offsetof(jv_opts, f)
/* An option table keeps several fields a line. */
/* clang-format off */
static const sbk_option jv_options[] = {
    {.name = "stripe-size", .kind = SBK_OPT_SIZE, .offset = OPT(stripe_size), .arg = "SIZE",
     .help = "bytes per directory in each request; a request is stripe size\n"
             "x number of directories [64k]", .lo = 512, .hi = 1L << 30},
    {.name = "data-per-client", .kind = SBK_OPT_SIZE, .offset = OPT(data_per_client),
     .arg = "SIZE", .help = "bytes every client moves, in whole requests [64m]", .lo = 512,
     .hi = 1LL << 50},
    {.name = "placement", .kind = SBK_OPT_CUSTOM, .offset = OPT(placements), .arg = "LIST",
     .help = "comma list of local, one-to-many, many-to-many (the last two\n"
             "need ranks on 2 nodes) [all three]", .parse = parse_placements},
    {.name = "inflight", .kind = SBK_OPT_LONG, .offset = OPT(inflight), .arg = "N",
     .help = "requests a client keeps in flight [1]", .lo = 1, .hi = 1024},
    {0},
};
/* clang-format on */

static void jv_defaults(void *p)
{
    *(jv_opts *)p = (jv_opts){.stripe_size = 64 << 10,
                              .data_per_client = 64 << 20,
                              .placements = (1 << PL_N) - 1,
                              .inflight = 1};
}

static int jv_check(const sbk_config *c, const void *p, char *err, size_t len)
{
    const jv_opts *o = p;
    uint64_t request = o->stripe_size * (uint64_t)(c->dirs.n > 0 ? c->dirs.n : 1);
    char a[32], b[32];
    sbk_format_size(o->stripe_size, a, sizeof a);
    if (o->stripe_size % 512)
        snprintf(err, len, "--stripe-size %s is not a multiple of 512 bytes", a);
    else if (o->data_per_client < request) {
        sbk_format_size(request, b, sizeof b);
        snprintf(err, len,
                 "--data-per-client is smaller than one request (stripe %s x %d "
                 "directories = %s)",
                 a, c->dirs.n, b);
    }
    return err[0] != '\0';
}

enum { F_TOTAL, F_VERIFY, F_BYTES, F_REQUESTS, F_N };
static const sbk_field jv_fields[F_N] = {
    {"total", SBK_TIMER}, {"verify", SBK_TIMER}, {"bytes", SBK_TOTAL}, {"requests", SBK_TOTAL}};

typedef struct {
    const jv_opts *o;
    int ndirs;
    uint64_t request, nreq; /* bytes per request; requests per client */
    sbk_queue q;
    int queue_open;
    sbk_pattern pat;
    size_t align;
    int *servers, nservers; /* one-to-many: ranks off rank 0's node */
    int *peer;              /* many-to-many: whose data each rank reads */
    int *fd;                /* files of the current phase, owner k x directory d */
    uint64_t *file_id;
    char **path;
    int nfiles_max;
    double *dir_time;
    uint64_t *dir_bytes;
} jv;

static uint64_t requests_per_client(const sbk_ctx *ctx, const jv_opts *o)
{
    return o->data_per_client / (o->stripe_size * (uint64_t)ctx->ntargets);
}

static void jv_config_json(const sbk_ctx *ctx, sbk_json *j)
{
    const jv_opts *o = ctx->opts;
    uint64_t request = o->stripe_size * (uint64_t)ctx->ntargets;
    jw_uint(j, "stripe_size", o->stripe_size);
    jw_uint(j, "request_size", request);
    jw_uint(j, "data_per_client", o->data_per_client);
    jw_uint(j, "bytes_per_client", requests_per_client(ctx, o) * request);
    jw_int(j, "inflight_requests", o->inflight);
    jw_arr(j, "placements");
    for (int p = 0; p < PL_N; p++)
        if (o->placements & (1 << p))
            jw_str(j, NULL, placement_names[p]);
    jw_end_arr(j);
}

static void jv_describe(const sbk_ctx *ctx, char *buf, size_t len)
{
    const jv_opts *o = ctx->opts;
    char stripe[32], data[32];
    sbk_format_size(o->stripe_size, stripe, sizeof stripe);
    sbk_format_size(o->data_per_client, data, sizeof data);
    snprintf(buf, len, "%d director%s, stripe %s, %s per client, %s, first %s (%s)", ctx->ntargets,
             ctx->ntargets == 1 ? "y" : "ies", stripe, data, sbk_engine_name(ctx->cfg->engine),
             ctx->targets[0].path, ctx->targets[0].fstype);
}

/* Requests server k of S holds of the client's nreq (request j sits on server j mod S). */
static uint64_t held_by(uint64_t nreq, int k, int nservers)
{
    return nreq / (uint64_t)nservers + ((uint64_t)k < nreq % (uint64_t)nservers);
}

static int jv_setup(sbk_ctx *ctx)
{
    const jv_opts *o = ctx->opts;
    jv *v = calloc(1, sizeof *v);
    ctx->state = v;
    v->o = o;
    v->ndirs = ctx->ntargets;
    v->request = o->stripe_size * (uint64_t)v->ndirs;
    v->nreq = requests_per_client(ctx, o);
    for (int p = PL_ONE_TO_MANY; p < PL_N; p++)
        if ((o->placements & (1 << p)) && ctx->nnodes < 2 && ctx->rank == 0)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--placement %s needs ranks on at "
                     "least 2 nodes; this run has %d node (use --placement local, or more "
                     "nodes)",
                     placement_names[p], ctx->nnodes);
    for (int t = 0; t < ctx->ntargets && ctx->error.code == 0; t++) {
        if (!ctx->targets[t].shared && (o->placements & ~(1 << PL_LOCAL)) && ctx->rank == 0)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--placement one-to-many and "
                     "many-to-many read other nodes' files, but %s is not shared between "
                     "nodes",
                     ctx->targets[t].path);
        if (ctx->cfg->direct && o->stripe_size % ctx->targets[t].dio_align && ctx->rank == 0)
            sbk_fail(ctx, SBK_EUSAGE, EINVAL, "setup", 0,
                     "--direct needs a stripe size that "
                     "is a multiple of %zu bytes, the direct-I/O alignment of %s",
                     ctx->targets[t].dio_align, ctx->targets[t].path);
    }
    int code = sbk_agree(ctx);
    if (code)
        return code;

    /* Servers of one-to-many, peers of many-to-many: by node, not by rank number. */
    v->servers = calloc((size_t)ctx->size, sizeof *v->servers);
    v->peer = calloc((size_t)ctx->size, sizeof *v->peer);
    for (int r = 0; r < ctx->size; r++)
        if (ctx->node_of[r] != ctx->node_of[0])
            v->servers[v->nservers++] = r;
    for (int r = 0; r < ctx->size; r++) {
        int next = (ctx->node_of[r] + 1) % ctx->nnodes, position = 0, count = 0;
        for (int q = 0; q < r; q++)
            position += ctx->node_of[q] == ctx->node_of[r];
        for (int q = 0; q < ctx->size; q++)
            count += ctx->node_of[q] == next;
        int want = position % count;
        for (int q = 0; q < ctx->size; q++)
            if (ctx->node_of[q] == next && want-- == 0) {
                v->peer[r] = q;
                break;
            }
    }

    v->align = 4096;
    for (int t = 0; t < v->ndirs; t++)
        if (ctx->targets[t].dio_align > v->align)
            v->align = ctx->targets[t].dio_align;
    unsigned entries = (unsigned)o->inflight * (unsigned)v->ndirs;
    if (sbk_queue_open(ctx, &v->q, entries) == 0)
        v->queue_open = 1;
    sbk_pattern_init(&v->pat, (uint64_t)ctx->cfg->seed, 64);
    v->nfiles_max = (v->nservers > 1 ? v->nservers : 1) * v->ndirs;
    v->fd = calloc((size_t)v->nfiles_max, sizeof *v->fd);
    v->file_id = calloc((size_t)v->nfiles_max, sizeof *v->file_id);
    v->path = calloc((size_t)v->nfiles_max, sizeof *v->path);
    for (int f = 0; f < v->nfiles_max; f++) {
        v->fd[f] = -1;
        v->path[f] = malloc(4200);
    }
    v->dir_time = calloc((size_t)v->ndirs, sizeof *v->dir_time);
    v->dir_bytes = calloc((size_t)v->ndirs, sizeof *v->dir_bytes);
    for (int p = 0; p < PL_N; p++)
        if (o->placements & (1 << p))
            for (int write = 1; write >= 0; write--) {
                sbk_phase ph = {.kind = write,
                                .fields = jv_fields,
                                .nfields = F_N,
                                .flags = SBK_PH_REPORT | SBK_PH_DATA |
                                         (write ? 0u : (unsigned)SBK_PH_DEFEAT_CACHE),
                                .arg = {p}};
                snprintf(ph.name, sizeof ph.name, "%s_%s", write ? "write" : "read",
                         placement_keys[p]);
                sbk_plan_add(ctx, &ph);
            }
    return sbk_agree(ctx);
}

/* The owners whose files this rank touches in a phase, and how many requests. */
static int owners_of(const sbk_ctx *ctx, const jv *v, int placement, int write, int *owners,
                     uint64_t *nreq)
{
    int r = ctx->rank;
    *nreq = v->nreq;
    if (placement == PL_ONE_TO_MANY) {
        if (write) {
            for (int k = 0; k < v->nservers; k++)
                if (v->servers[k] == r) {
                    owners[0] = r;
                    *nreq = held_by(v->nreq, k, v->nservers);
                    return 1;
                }
            *nreq = 0;
            return 0;
        }
        if (r != 0) {
            *nreq = 0;
            return 0;
        }
        memcpy(owners, v->servers, (size_t)v->nservers * sizeof *owners);
        return v->nservers;
    }
    owners[0] = placement == PL_MANY_TO_MANY && !write ? v->peer[r] : r;
    return 1;
}

static void file_name(int owner, char *out, size_t len) { snprintf(out, len, "jovian.%d", owner); }

static void close_files(jv *v)
{
    for (int f = 0; f < v->nfiles_max; f++)
        if (v->fd[f] >= 0) {
            close(v->fd[f]);
            v->fd[f] = -1;
        }
}

static void jv_run_phase(sbk_ctx *ctx, const sbk_phase *ph, sbk_rec *rec)
{
    jv *v = ctx->state;
    int write = ph->kind, placement = (int)ph->arg[0];
    int *owners = calloc((size_t)ctx->size, sizeof *owners);
    uint64_t nreq = 0;
    int nowners = owners_of(ctx, v, placement, write, owners, &nreq);
    int flags = O_NOFOLLOW | O_CLOEXEC | (write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) |
                (ctx->cfg->direct ? O_DIRECT : 0);
    for (int k = 0; k < nowners && ctx->error.code == 0; k++)
        for (int d = 0; d < v->ndirs && ctx->error.code == 0; d++) {
            int f = k * v->ndirs + d;
            char name[64];
            file_name(owners[k], name, sizeof name);
            sbk_path(ctx, d, v->path[f], 4200, name);
            v->file_id[f] = (uint64_t)owners[k] * (uint64_t)v->ndirs + (uint64_t)d;
            v->fd[f] = openat(ctx->targets[d].fd, name, flags, 0644);
            if (v->fd[f] < 0 && errno == EINVAL && ctx->cfg->direct)
                sbk_fail(ctx, SBK_ENODIRECT, errno, ph->name, 0,
                         "the file system at %s refuses "
                         "O_DIRECT (EINVAL); defeat the cache with --scan-file instead",
                         ctx->targets[d].path);
            else if (v->fd[f] < 0)
                sbk_fail(ctx, sbk_code_for_errno(errno), errno, ph->name, 0, "open %s: %s",
                         v->path[f], strerror(errno));
        }
    int ok = ctx->error.code == 0 && v->queue_open;
    sbk_stream s = {.write = write,
                    .ndirs = v->ndirs,
                    .nowners = nowners > 0 ? nowners : 1,
                    .fd = v->fd,
                    .file_id = v->file_id,
                    .path = (const char *const *)v->path,
                    .nblocks = ok && nowners > 0 ? nreq * (uint64_t)v->ndirs : 0,
                    .block = v->o->stripe_size,
                    .align = v->align,
                    .depth = (unsigned)v->o->inflight * (unsigned)v->ndirs,
                    .gen = (ctx->generation - 1) * PL_N + (uint64_t)placement + 1,
                    .pat = &v->pat,
                    .verify = ctx->cfg->verify,
                    .rec = rec,
                    .fsync = ctx->cfg->fsync,
                    .phase = ph->name};
    sbk_stream_result r = {.dir_time = v->dir_time, .dir_bytes = v->dir_bytes};
    sbk_stream_run(ctx, &v->q, &s, &r);
    close_files(v);
    free(owners);
    rec->time[F_TOTAL] += r.total;
    rec->time[F_VERIFY] += r.verify;
    rec->count[F_BYTES] += r.bytes;
    rec->count[F_REQUESTS] += r.ios / (uint64_t)v->ndirs;
}

static void jv_report_phase(sbk_ctx *ctx, const sbk_phase *ph, const sbk_gathered *g, sbk_json *j)
{
    const jv *v = ctx->state;
    int write = ph->kind, placement = (int)ph->arg[0];
    double slowest = sbk_col_max(g, F_TOTAL), rank_min = INFINITY;
    int active = 0;
    for (int r = 0; r < g->nranks; r++)
        if (g->count[F_BYTES][r] > 0) {
            active++;
            double rate =
                g->time[F_TOTAL][r] > 0 ? (double)g->count[F_BYTES][r] / g->time[F_TOTAL][r] : NAN;
            if (rate < rank_min)
                rank_min = rate;
        }
    jw_str(j, "placement", placement_names[placement]);
    jw_int(j, write ? "writers" : "readers", active);
    jw_uint(j, "request_size", v->request);
    sbk_figure(ctx, j, ph, "bandwidth_Bps",
               slowest > 0 ? (double)sbk_col_sum(g, F_BYTES) / slowest : NAN, SBK_UNIT_BPS);
    sbk_figure(ctx, j, ph, "bandwidth_per_rank_min_Bps", active ? rank_min : NAN, SBK_UNIT_BPS);
    if (write)
        return;
    /* Who read whose data, by node: what the placement promises, in the report. */
    int *owners = calloc((size_t)ctx->size, sizeof *owners);
    jw_arr(j, "sources");
    for (int r = 0; r < g->nranks; r++) {
        int n = 0;
        if (placement == PL_ONE_TO_MANY) {
            if (r == 0) {
                memcpy(owners, v->servers, (size_t)v->nservers * sizeof *owners);
                n = v->nservers;
            }
        } else {
            owners[0] = placement == PL_MANY_TO_MANY ? v->peer[r] : r;
            n = 1;
        }
        if (n == 0)
            continue;
        jw_obj(j, NULL);
        jw_int(j, "rank", r);
        jw_str(j, "node", ctx->node_names[r]);
        jw_arr(j, "owners");
        for (int k = 0; k < n; k++)
            jw_int(j, NULL, owners[k]);
        jw_end_arr(j);
        jw_arr(j, "owner_nodes");
        for (int k = 0; k < n; k++)
            jw_str(j, NULL, ctx->node_names[owners[k]]);
        jw_end_arr(j);
        jw_uint(j, "bytes", g->count[F_BYTES][r]);
        jw_end_obj(j);
    }
    jw_end_arr(j);
    free(owners);
}

static int jv_written_file(const sbk_ctx *ctx, int index, int *target, char *name, size_t len)
{
    if (index >= ctx->ntargets)
        return -1;
    *target = index;
    file_name(ctx->rank, name, len);
    return 0;
}

static void jv_teardown(sbk_ctx *ctx, int code)
{
    (void)code;
    jv *v = ctx->state;
    if (!v)
        return;
    /* Readers are done with every file only after this barrier. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (v->fd)
        close_files(v);
    if (v->queue_open)
        sbk_queue_close(&v->q);
    char name[64];
    file_name(ctx->rank, name, sizeof name);
    for (int t = 0; t < ctx->ntargets && !ctx->cfg->keep; t++)
        if (ctx->targets[t].fd >= 0)
            unlinkat(ctx->targets[t].fd, name, 0);
    for (int f = 0; v->path && f < v->nfiles_max; f++)
        free(v->path[f]);
    free(v->path);
    free(v->fd);
    free(v->file_id);
    free(v->servers);
    free(v->peer);
    free(v->dir_time);
    free(v->dir_bytes);
    free(v);
    ctx->state = NULL;
}

static const sbk_mode jovian_mode = {
    .name = "jovian",
    .about = "seed 001's Jovian-2: local, one-to-many and many-to-many placement of\n"
             "readers relative to writers; request = stripe x directories",
    .features = SBK_F_MULTI_DIR | SBK_F_READS | SBK_F_ENGINE,
    .options = jv_options,
    .opts_size = sizeof(jv_opts),
    .defaults = jv_defaults,
    .check = jv_check,
    .config_json = jv_config_json,
    .describe = jv_describe,
    .setup = jv_setup,
    .run_phase = jv_run_phase,
    .report_phase = jv_report_phase,
    .written_file = jv_written_file,
    .teardown = jv_teardown,
};
SBK_REGISTER_MODE(jovian_mode)
