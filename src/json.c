/* A small streaming JSON writer: the kernel has no dependencies beyond MPI. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "kernel.h"

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*c < 0x20)
                fprintf(f, "\\u%04x", *c);
            else
                fputc(*c, f);
        }
    }
    fputc('"', f);
}

/* Comma, newline and indentation before a value, then its key if any. */
static void sep(sbk_json *j, const char *key)
{
    if (j->depth > 0) {
        fputs(j->first[j->depth] ? "\n" : ",\n", j->f);
        j->first[j->depth] = 0;
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->f);
    }
    if (key) {
        put_string(j->f, key);
        fputs(": ", j->f);
    }
}

void jw_begin(sbk_json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->first[0] = 1;
}

static void open_container(sbk_json *j, const char *key, char c)
{
    if (!j->f)
        return;
    sep(j, key);
    fputc(c, j->f);
    j->depth++;
    j->first[j->depth] = 1;
}

static void close_container(sbk_json *j, char c)
{
    if (!j->f)
        return;
    int empty = j->first[j->depth];
    j->depth--;
    if (!empty) {
        fputc('\n', j->f);
        for (int i = 0; i < j->depth; i++)
            fputs("  ", j->f);
    }
    fputc(c, j->f);
}

void jw_obj(sbk_json *j, const char *key) { open_container(j, key, '{'); }
void jw_arr(sbk_json *j, const char *key) { open_container(j, key, '['); }
void jw_end_obj(sbk_json *j) { close_container(j, '}'); }
void jw_end_arr(sbk_json *j) { close_container(j, ']'); }

void jw_str(sbk_json *j, const char *key, const char *value)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    if (value)
        put_string(j->f, value);
    else
        fputs("null", j->f);
}

void jw_num(sbk_json *j, const char *key, double value)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    if (isfinite(value))
        fprintf(j->f, "%.9g", value);
    else
        fputs("null", j->f);
}

void jw_int(sbk_json *j, const char *key, long long value)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    fprintf(j->f, "%lld", value);
}

void jw_uint(sbk_json *j, const char *key, uint64_t value)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    fprintf(j->f, "%" PRIu64, value);
}

void jw_bool(sbk_json *j, const char *key, int value)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    fputs(value ? "true" : "false", j->f);
}

void jw_null(sbk_json *j, const char *key)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    fputs("null", j->f);
}

void jw_summary(sbk_json *j, const char *key, sbk_summary s)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    jw_obj(j, key);
    jw_uint(j, "n", s.n);
    jw_num(j, "min", s.min);
    jw_num(j, "max", s.max);
    jw_num(j, "mean", s.mean);
    jw_num(j, "trimmed_mean", s.trimmed_mean);
    jw_num(j, "stddev", s.stddev);
    jw_num(j, "cv", s.cv);
    jw_end_obj(j);
}

/* Wall-clock instants (Unix seconds) to the microsecond: nine significant digits
 * would round them to whole seconds. */
void jw_unix_times(sbk_json *j, const char *key, const double *v, size_t n)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    fputc('[', j->f);
    for (size_t i = 0; i < n; i++)
        fprintf(j->f, i ? ", %.6f" : "%.6f", v[i]);
    fputc(']', j->f);
}

void jw_doubles(sbk_json *j, const char *key, const double *v, size_t n)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    fputc('[', j->f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", j->f);
        if (isfinite(v[i]))
            fprintf(j->f, "%.9g", v[i]);
        else
            fputs("null", j->f);
    }
    fputc(']', j->f);
}

void jw_uints(sbk_json *j, const char *key, const uint64_t *v, size_t n)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    sep(j, key);
    fputc('[', j->f);
    for (size_t i = 0; i < n; i++)
        fprintf(j->f, "%s%" PRIu64, i ? ", " : "", v[i]);
    fputc(']', j->f);
}

void jw_finish(sbk_json *j)
{
    if (!j->f)
        return; /* ranks other than 0 write nothing */
    fputc('\n', j->f);
    fflush(j->f);
}
