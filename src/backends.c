/* The kernel's I/O back ends, chosen by name, as IOR's available_aiori[] and fio's
 * engines.  Two kinds, one table each: synchronous back ends (one transfer per call:
 * iotest's --api, iozone, selfscale) and queued engines (requests kept in flight:
 * --engine of diskperf and jovian).  The first entry of each table is the default.
 *
 * Adding a back end: its file (backend_NAME.c, defining an sbk_backend or an
 * sbk_engine), its name in the extern line and its line in the table below, and its
 * row in SCHEMA.md's table of back ends.  --api and --engine accept it, --help lists it,
 * --list-backends prints it and tests/test_kernel.py checks SCHEMA.md lists it. */
#include <string.h>

#include "kernel.h"

extern const sbk_backend sbk_backend_posix, sbk_backend_mpiio;
extern const sbk_engine sbk_engine_uring, sbk_engine_aio;

static const sbk_backend *const sync_backends[] = {
    &sbk_backend_posix,
    &sbk_backend_mpiio,
};

static const sbk_engine *const queued_engines[] = {
    &sbk_engine_uring,
    &sbk_engine_aio,
};

#define COUNT(table) ((int)(sizeof(table) / sizeof(table)[0]))

/* The names in table order, NULL-terminated: the choices of --api and --engine. */
const char *sbk_backend_names[COUNT(sync_backends) + 1];
const char *sbk_engine_names[COUNT(queued_engines) + 1];

__attribute__((constructor)) static void name_backends(void)
{
    for (int i = 0; i < COUNT(sync_backends); i++)
        sbk_backend_names[i] = sync_backends[i]->name;
    for (int i = 0; i < COUNT(queued_engines); i++)
        sbk_engine_names[i] = queued_engines[i]->name;
}

const sbk_backend *sbk_backend_at(int index)
{
    return index >= 0 && index < COUNT(sync_backends) ? sync_backends[index] : NULL;
}

const sbk_backend *sbk_find_backend(const char *name)
{
    for (int i = 0; i < COUNT(sync_backends); i++)
        if (!strcmp(sync_backends[i]->name, name))
            return sync_backends[i];
    return NULL;
}

const sbk_engine *sbk_engine_at(int index)
{
    return index >= 0 && index < COUNT(queued_engines) ? queued_engines[index] : NULL;
}

const char *sbk_engine_name(int index)
{
    const sbk_engine *e = sbk_engine_at(index);
    return e ? e->name : "?";
}

void sbk_list_backends(FILE *f)
{
    for (int i = 0; i < COUNT(sync_backends); i++)
        fprintf(f, "sync\t%s\t%s\n", sync_backends[i]->name, sync_backends[i]->about);
    for (int i = 0; i < COUNT(queued_engines); i++)
        fprintf(f, "queued\t%s\t%s\n", queued_engines[i]->name, queued_engines[i]->about);
}
