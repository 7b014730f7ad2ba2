/*
 * Small shared pieces of the benchmark: the monotonic clock, stage names, and the
 * level loader. Levels come from the core's own readers (op_obj_read_file,
 * op_levelgen), so both sides build from exactly the triangles `onepath bake` reads.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "onepath/arena.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "bench.h"

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

const char *bench_stage_name(bench_stage s)
{
    static const char *const names[BENCH_NSTAGES] = {
        "prepare", "spans", "regions", "contours", "polys", "detail", "tile",
    };
    return ((unsigned)s < BENCH_NSTAGES) ? names[s] : "?";
}

/* "KIND:SIZE[:SEED]" through op_levelgen. */
static op_status gen_level(const char *spec, op_arena *a, op_soup *soup, op_err *e)
{
    char kind[32];
    int size = 0;
    unsigned long long seed = 1;
    int n = sscanf(spec, "%31[a-z]:%d:%llu", kind, &size, &seed);
    if (n < 2)
        return op_err_set(e, OP_EINVAL, "'%s' is not KIND:SIZE[:SEED]", spec);
    return op_levelgen(kind, size, (uint64_t)seed, a, soup, e);
}

int bench_level_load(const char *spec, bench_level *lv, char *err, size_t errlen)
{
    memset(lv, 0, sizeof *lv);
    snprintf(lv->name, sizeof lv->name, "%s", spec);
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    op_err_clear(&e);
    op_status st;
    if (!a)
        st = op_err_set(&e, OP_ENOMEM, "out of memory");
    else if (strncmp(spec, "gen:", 4) == 0)
        st = gen_level(spec + 4, a, &soup, &e);
    else
        st = op_obj_read_file(spec, a, &soup, &e);
    if (st == OP_OK && (soup.verts_len / 3 > 0x7fffffff || soup.tris_len / 3 > 0x7fffffff))
        st = op_err_set(&e, OP_ERANGE, "too many triangles for the bench (int counts)");
    if (st != OP_OK) {
        snprintf(err, errlen, "%s: %s", spec, e.msg[0] ? e.msg : op_status_name(st));
        op_arena_destroy(a);
        return -1;
    }
    lv->verts = soup.verts;
    lv->nverts = (int)(soup.verts_len / 3);
    lv->tris = soup.tris;
    lv->ntris = (int)(soup.tris_len / 3);
    lv->arena = a;
    return 0;
}

void bench_level_free(bench_level *lv)
{
    op_arena_destroy(lv->arena);
    memset(lv, 0, sizeof *lv);
}
