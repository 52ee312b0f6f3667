/* The command line: the mode registry, the core's options, parsing by option tables,
 * and --help generated from the same tables, so a mode's options are declared once. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "kernel.h"

/* ---- registry ---- */
static const sbk_mode *modes[32];
static int nmodes;

void sbk_register_mode(const sbk_mode *m)
{
    if (nmodes == (int)(sizeof modes / sizeof modes[0])) {
        fprintf(stderr, "scratchbench-kernel: internal error: too many modes\n");
        abort();
    }
    /* Keep them in name order, whatever the link order of the mode files. */
    int i = nmodes++;
    while (i > 0 && strcmp(modes[i - 1]->name, m->name) > 0) {
        modes[i] = modes[i - 1];
        i--;
    }
    modes[i] = m;
}

const sbk_mode *sbk_find_mode(const char *name)
{
    for (int i = 0; i < nmodes; i++)
        if (!strcmp(modes[i]->name, name))
            return modes[i];
    return NULL;
}

int sbk_mode_count(void) { return nmodes; }
const sbk_mode *sbk_mode_at(int i) { return i >= 0 && i < nmodes ? modes[i] : NULL; }

/* ---- sizes ---- */
int sbk_parse_size(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (!s || !*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    if (*end) {
        switch (*end) {
        case 'k':
        case 'K': shift = 10; break;
        case 'm':
        case 'M': shift = 20; break;
        case 'g':
        case 'G': shift = 30; break;
        case 't':
        case 'T': shift = 40; break;
        default: return -1;
        }
        end++;
        /* accept 4k, 4kb, 4kib */
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
        if (*end)
            return -1;
    }
    if (shift && v > (ULLONG_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

void sbk_format_size(uint64_t bytes, char *out, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    uint64_t v = bytes;
    while (u < 4 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(out, len, "%llu %s", (unsigned long long)v, units[u]);
}

/* ---- the core's options ---- */
static int parse_stonewall(const char *value, void *field, char *err, size_t len)
{
    char *end = NULL;
    double v = strtod(value, &end);
    if (!end || *end || end == value || v < 0 || v > 1e6) {
        snprintf(err, len, "expected seconds from 0 to 1e6, got '%s'", value);
        return -1;
    }
    *(double *)field = v;
    return 0;
}

static int parse_shift(const char *value, void *field, char *err, size_t len)
{
    char *end = NULL;
    if (!strcmp(value, "auto")) {
        *(int *)field = -1;
        return 0;
    }
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || !end || *end || end == value || v < 0 || v > (1 << 24)) {
        snprintf(err, len, "expected an integer from 0 to %d or 'auto', got '%s'", 1 << 24, value);
        return -1;
    }
    *(int *)field = (int)v;
    return 0;
}

static const char *const fsync_choices[] = {"inside", "outside", "none", NULL};

#define CORE(field) offsetof(sbk_config, field)
/* An option table keeps several fields a line. */
/* clang-format off */
static const sbk_option core_options[] = {
    {.name = "dir", .kind = SBK_OPT_STRINGS, .offset = CORE(dirs), .arg = "DIR",
     .help = "target directory; the kernel writes only in a new subdirectory\n"
             "(diskperf and jovian: repeat it, one per disk)"},
    {.name = "output", .kind = SBK_OPT_STRING, .offset = CORE(output), .arg = "FILE",
     .help = "write the JSON report to FILE instead of stdout"},
    {.name = "table", .kind = SBK_OPT_FLAG, .offset = CORE(table),
     .help = "print a human table on stdout (JSON then only with --output)"},
    {.name = "reps", .kind = SBK_OPT_LONG, .offset = CORE(reps), .arg = "N",
     .help = "repetitions, summarised by min/max/mean/trimmed mean [1]", .lo = 1, .hi = 100000},
    {.name = "stonewall", .kind = SBK_OPT_CUSTOM, .offset = CORE(stonewall), .arg = "SEC",
     .help = "stop writing/creating after SEC seconds [off]", .parse = parse_stonewall,
     .needs = SBK_F_STONEWALL},
    {.name = "keep", .kind = SBK_OPT_FLAG, .offset = CORE(keep),
     .help = "keep the files (the run directory is printed); a run stopped by\n"
             "SIGTERM/SIGINT removes them all the same"},
    {.name = "seed", .kind = SBK_OPT_LONG, .offset = CORE(seed), .arg = "N",
     .help = "seed of the verification pattern [1]", .hi = LONG_MAX},
    {.name = "direct", .kind = SBK_OPT_FLAG, .offset = CORE(direct),
     .help = "O_DIRECT (sizes must be multiples of the direct-I/O alignment)",
     .needs = SBK_F_READS},
    {.name = "fadvise", .kind = SBK_OPT_FLAG, .offset = CORE(fadvise),
     .help = "fsync + posix_fadvise(DONTNEED) before reading; residency reported",
     .needs = SBK_F_READS},
    {.name = "scan-file", .kind = SBK_OPT_STRING, .offset = CORE(scan_file), .arg = "FILE",
     .help = "read FILE (larger than memory) before reading, once per node", .needs = SBK_F_READS},
    {.name = "fsync", .kind = SBK_OPT_CHOICE, .offset = CORE(fsync), .arg = "inside|outside|none",
     .help = "fsync after writing, inside or outside the timers [inside]",
     .choices = fsync_choices, .needs = SBK_F_READS},
    {.name = "no-verify", .kind = SBK_OPT_CLEAR, .offset = CORE(verify),
     .help = "do not check the data read back", .needs = SBK_F_READS},
    {.name = "shift", .kind = SBK_OPT_CUSTOM, .offset = CORE(shift), .arg = "N|auto",
     .help = "rank r works on the files of rank r+N; auto = the next node [0]",
     .parse = parse_shift, .needs = SBK_F_SHIFT},
    {.name = "existing", .kind = SBK_OPT_STRING, .offset = CORE(existing), .arg = "RUNDIR",
     .help = "read the files of a run directory kept by an earlier --keep run\n"
             "(e.g. from another job or node)", .needs = SBK_F_EXISTING},
    {.name = "engine", .kind = SBK_OPT_CHOICE, .offset = CORE(engine),
     .help = "asynchronous I/O interface: io_uring (liburing) or POSIX AIO [io_uring]",
     .choices = sbk_engine_names, .needs = SBK_F_ENGINE},
    {0},
};
/* clang-format on */

const char *sbk_fsync_name(int f) { return fsync_choices[f]; }

/* ---- --help ---- */
static void print_option(FILE *f, const sbk_option *o)
{
    char head[64], choices[48] = "";
    const char *arg = o->arg;
    if (!arg && o->kind == SBK_OPT_CHOICE) {
        /* The choices themselves: a back end added to its table shows up here. */
        for (int i = 0; o->choices[i]; i++) {
            size_t used = strlen(choices);
            snprintf(choices + used, sizeof choices - used, "%s%s", i ? "|" : "", o->choices[i]);
        }
        arg = choices;
    }
    snprintf(head, sizeof head, "--%s%s%s", o->name, arg ? " " : "", arg ? arg : "");
    const char *help = o->help;
    int col = fprintf(f, "  %s", head);
    if (col > 22) {
        fputc('\n', f);
        col = 0;
    }
    fprintf(f, "%*s", 23 - col, "");
    for (const char *c = help; *c; c++) {
        fputc(*c, f);
        if (*c == '\n')
            fprintf(f, "%23s", "");
    }
    fputc('\n', f);
}

static void print_about(FILE *f, const char *about)
{
    for (const char *c = about; *c; c++) {
        fputc(*c, f);
        if (*c == '\n')
            fprintf(f, "%13s", "");
    }
    fputc('\n', f);
}

void sbk_print_help(FILE *f)
{
    fputs("usage: scratchbench-kernel MODE --dir DIR [options]\n\nModes:\n", f);
    for (int i = 0; i < nmodes; i++) {
        fprintf(f, "  %-10s ", modes[i]->name);
        print_about(f, modes[i]->about);
    }
    fputs("\nCommon options:\n", f);
    for (const sbk_option *o = core_options; o->name; o++)
        if (!o->needs)
            print_option(f, o);
    fputs("  --list-backends      the I/O back ends of --api and --engine, one a line\n"
          "  --version, --help\n",
          f);
    static const struct {
        unsigned feature;
        const char *title;
    } groups[] = {
        {SBK_F_READS, "modes that write and read back data"},
        {SBK_F_STONEWALL, "modes with a stonewall"},
        {SBK_F_SHIFT, "modes that can work on another rank's files"},
        {SBK_F_EXISTING, "modes that can read a kept run"},
        {SBK_F_ENGINE, "modes with queued asynchronous I/O"},
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        fprintf(f, "\nOptions of %s (", groups[g].title);
        int n = 0;
        for (int i = 0; i < nmodes; i++)
            if (modes[i]->features & groups[g].feature)
                fprintf(f, "%s%s", n++ ? ", " : "", modes[i]->name);
        fputs("):\n", f);
        for (const sbk_option *o = core_options; o->name; o++)
            if (o->needs == groups[g].feature)
                print_option(f, o);
    }
    for (int i = 0; i < nmodes; i++) {
        fprintf(f, "\n%s options:\n", modes[i]->name);
        for (const sbk_option *o = modes[i]->options; o && o->name; o++)
            print_option(f, o);
    }
    fputs("\nExit codes: 0 ok, 1 internal, 2 invalid arguments, 3 missing directory, 4 permission\n"
          "denied, 5 no space, 6 verification failed, 7 other I/O error, 8 O_DIRECT refused,\n"
          "9 io_uring refused, 10 stopped by SIGTERM/SIGINT (what it made is removed).\n",
          f);
}

/* ---- parsing ---- */
static char usage_error[512];

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

const char *sbk_usage_error(void) { return usage_error; }

static void join_choices(const char *const *choices, char *out, size_t len)
{
    out[0] = '\0';
    int n = 0;
    while (choices[n])
        n++;
    for (int i = 0; i < n; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s",
                 i == 0       ? ""
                 : i == n - 1 ? " or "
                              : ", ",
                 choices[i]);
    }
}

static int parse_one_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !end || *end || end == s || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_list(const sbk_option *o, const char *value, sbk_list *list)
{
    char lo[32], hi[32];
    if (o->kind == SBK_OPT_SIZES) {
        sbk_format_size((uint64_t)o->lo, lo, sizeof lo);
        sbk_format_size((uint64_t)o->hi, hi, sizeof hi);
    } else {
        snprintf(lo, sizeof lo, "%lld", o->lo);
        snprintf(hi, sizeof hi, "%lld", o->hi);
    }
    free(list->v);
    list->n = 0;
    list->v = NULL;
    size_t cap = 1;
    for (const char *c = value; *c; c++)
        cap += *c == ',';
    list->v = calloc(cap, sizeof *list->v);
    char *copy = strdup(value), *rest = copy, *tok;
    int rc = 0;
    /* strsep, not strtok: an empty element ("4,,8") is an error, not skipped */
    while (!rc && (tok = strsep(&rest, ",")) != NULL) {
        long long v;
        uint64_t size;
        if (o->kind == SBK_OPT_SIZES) {
            if (sbk_parse_size(tok, &size) || size < (uint64_t)o->lo || size > (uint64_t)o->hi)
                rc = -1;
            v = (long long)size;
        } else {
            rc = parse_one_long(tok, o->lo, o->hi, &v);
        }
        if (!rc)
            list->v[list->n++] = v;
    }
    free(copy);
    if (rc || list->n == 0)
        return bad("--%s: expected a comma list of %s from %s to %s, got '%s'", o->name,
                   o->kind == SBK_OPT_SIZES ? "sizes" : "integers", lo, hi, value);
    return 0;
}

static int set_option(const sbk_option *o, const char *value, void *base)
{
    void *field = (char *)base + o->offset;
    long long v;
    switch (o->kind) {
    case SBK_OPT_FLAG: *(int *)field = 1; return 0;
    case SBK_OPT_CLEAR: *(int *)field = 0; return 0;
    case SBK_OPT_LONG:
        if (parse_one_long(value, o->lo, o->hi, &v))
            return bad("--%s: expected an integer from %lld to %lld, got '%s'", o->name, o->lo,
                       o->hi, value);
        *(long *)field = (long)v;
        return 0;
    case SBK_OPT_SIZE: {
        uint64_t size;
        if (sbk_parse_size(value, &size) || size < (uint64_t)o->lo || size > (uint64_t)o->hi) {
            char lo[32], hi[32];
            sbk_format_size((uint64_t)o->lo, lo, sizeof lo);
            sbk_format_size((uint64_t)o->hi, hi, sizeof hi);
            return bad("--%s: expected a size from %s to %s (such as 4k, 1m, 2g), got '%s'",
                       o->name, lo, hi, value);
        }
        *(uint64_t *)field = size;
        return 0;
    }
    case SBK_OPT_LONGS:
    case SBK_OPT_SIZES: return parse_list(o, value, (sbk_list *)field);
    case SBK_OPT_DOUBLE: {
        char *end = NULL;
        double d = strtod(value, &end);
        if (!end || *end || end == value || d < (double)o->lo || d > (double)o->hi)
            return bad("--%s: expected a number from %lld to %lld, got '%s'", o->name, o->lo, o->hi,
                       value);
        *(double *)field = d;
        return 0;
    }
    case SBK_OPT_STRING: *(const char **)field = value; return 0;
    case SBK_OPT_STRINGS: {
        sbk_strings *s = field;
        const char **grown = realloc(s->v, (size_t)(s->n + 1) * sizeof *grown);
        if (!grown)
            return bad("out of memory");
        s->v = grown;
        s->v[s->n++] = value;
        return 0;
    }
    case SBK_OPT_CHOICE:
        for (int i = 0; o->choices[i]; i++)
            if (!strcmp(o->choices[i], value)) {
                *(int *)field = i;
                return 0;
            }
        {
            char list[200];
            join_choices(o->choices, list, sizeof list);
            return bad("--%s: expected %s, got '%s'", o->name, list, value);
        }
    case SBK_OPT_CUSTOM: {
        char err[300] = "";
        if (o->parse(value, field, err, sizeof err))
            return bad("--%s: %s", o->name, err);
        return 0;
    }
    }
    return bad("--%s: internal error: unknown option kind", o->name);
}

/* Which modes declare an option named `name` (for "is an option of mode X"). */
static void owners_of(const char *name, char *out, size_t len, int *count)
{
    out[0] = '\0';
    *count = 0;
    for (int i = 0; i < nmodes; i++)
        for (const sbk_option *o = modes[i]->options; o && o->name; o++)
            if (!strcmp(o->name, name)) {
                size_t used = strlen(out);
                snprintf(out + used, len - used, "%s%s", (*count)++ ? ", " : "", modes[i]->name);
            }
}

static void modes_with(unsigned feature, char *out, size_t len, int *count)
{
    out[0] = '\0';
    *count = 0;
    for (int i = 0; i < nmodes; i++)
        if (modes[i]->features & feature) {
            size_t used = strlen(out);
            snprintf(out + used, len - used, "%s%s", (*count)++ ? ", " : "", modes[i]->name);
        }
}

/* getopt_long's table: the core's options, then the mode's; val = 256 + index. */
static struct option *option_table(const sbk_mode *mode, int *ncore_out)
{
    int ncore = 0, nmine = 0;
    while (core_options[ncore].name)
        ncore++;
    while (mode->options && mode->options[nmine].name)
        nmine++;
    struct option *table = calloc((size_t)(ncore + nmine + 1), sizeof *table);
    for (int i = 0; table && i < ncore + nmine; i++) {
        const sbk_option *o = i < ncore ? &core_options[i] : &mode->options[i - ncore];
        int flag = o->kind == SBK_OPT_FLAG || o->kind == SBK_OPT_CLEAR;
        table[i] = (struct option){o->name, flag ? no_argument : required_argument, 0, 256 + i};
    }
    *ncore_out = ncore;
    return table;
}

/* An option getopt did not know (or whose value is missing): another mode's option is
 * named as such. */
static int unknown_option(const char *arg, const sbk_mode *mode)
{
    char owners[200], bare[100];
    int n;
    const char *name = arg;
    while (*name == '-')
        name++;
    snprintf(bare, sizeof bare, "%s", name);
    char *eq = strchr(bare, '=');
    if (eq)
        *eq = '\0';
    owners_of(bare, owners, sizeof owners, &n);
    if (n > 0 && strncmp(arg, "--", 2) == 0)
        return bad("--%s is an option of mode%s %s, not %s", bare, n > 1 ? "s" : "", owners,
                   mode->name);
    /* getopt_long reports a missing value as '?' too when optstring lacks ':'. */
    return bad("unknown option or missing value: '%s'", arg);
}

/* What the options together must satisfy, the core's then the mode's. */
static int check_config(const sbk_config *c, const sbk_mode *mode, void *opts)
{
    if (c->dirs.n == 0 && !c->existing)
        return bad("--dir is required: the directory to test");
    if (c->dirs.n > 1 && !(mode->features & SBK_F_MULTI_DIR)) {
        char which[200];
        int n;
        modes_with(SBK_F_MULTI_DIR, which, sizeof which, &n);
        return bad("--dir given %d times: mode %s tests one directory (%s take several)", c->dirs.n,
                   mode->name, which);
    }
    if (c->scan_file && access(c->scan_file, R_OK) != 0)
        return bad("--scan-file %s: %s", c->scan_file, strerror(errno));
    if (mode->check) {
        char err[400] = "";
        if (mode->check(c, opts, err, sizeof err))
            return bad("%s", err);
    }
    return 0;
}

int sbk_parse_args(int argc, char **argv, sbk_config *c, const sbk_mode **mode_out, void **opts_out)
{
    *c = (sbk_config){.reps = 1,
                      .seed = 1,
                      .fsync = FSYNC_INSIDE,
                      .verify = 1,
                      .engine = 0 /* the first queued engine */};
    usage_error[0] = '\0';
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return -1;
        else if (!strcmp(argv[i], "--version"))
            return -2;
        else if (!strcmp(argv[i], "--list-backends"))
            return -3;
    char names[200] = "";
    for (int i = 0; i < nmodes; i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s",
                 i == 0            ? ""
                 : i == nmodes - 1 ? " or "
                                   : ", ",
                 modes[i]->name);
    }
    if (argc < 2 || argv[1][0] == '-')
        return bad("missing MODE: expected %s as the first argument", names);
    c->mode_name = argv[1];
    const sbk_mode *mode = sbk_find_mode(c->mode_name);
    if (!mode)
        return bad("unknown mode '%s': expected %s", c->mode_name, names);
    void *opts = calloc(1, mode->opts_size ? mode->opts_size : 1);
    int ncore;
    struct option *table = option_table(mode, &ncore);
    if (!opts || !table) {
        free(opts);
        free(table);
        return bad("out of memory parsing the options");
    }
    if (mode->defaults)
        mode->defaults(opts);
    *mode_out = mode;
    *opts_out = opts;

    /* Options follow the mode: parse argv[1..] with the mode as getopt's argv[0];
     * optind = 0 makes glibc start afresh (the unit tests parse many command lines). */
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    int opt, rc = 0;
    opterr = 0;
    optind = 0;
    while (!rc && (opt = getopt_long(sub_argc, sub_argv, "", table, NULL)) != -1) {
        if (opt == '?' || opt == ':') {
            rc = unknown_option(optind - 1 < sub_argc ? sub_argv[optind - 1] : "?", mode);
            break;
        }
        int idx = opt - 256;
        const sbk_option *o = idx < ncore ? &core_options[idx] : &mode->options[idx - ncore];
        if (o->needs && !(mode->features & o->needs)) {
            char which[200];
            int n;
            modes_with(o->needs, which, sizeof which, &n);
            rc = bad("--%s is an option of mode%s %s, not %s", o->name, n > 1 ? "s" : "", which,
                     mode->name);
            break;
        }
        rc = set_option(o, optarg, idx < ncore ? (void *)c : opts);
    }
    free(table);
    if (rc)
        return rc;
    if (optind < sub_argc)
        return bad("unexpected argument '%s'", sub_argv[optind]);
    return check_config(c, mode, opts);
}
