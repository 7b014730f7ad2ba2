/*
 * Minimal OBJ loader of the benchmark: `v x y z` and `f a b c ...` lines only
 * (a face index may carry /vt/vn parts, which are ignored; negative indices count
 * back from the last vertex; polygons are fanned into triangles from their first
 * vertex). Everything else is skipped. Stands in for the core's op_obj_read_file
 * until that reader is merged, so the bench depends on nothing but the stages.
 */
#ifndef ONEPATH_BENCH_OBJLOAD_H
#define ONEPATH_BENCH_OBJLOAD_H

#include <stddef.h>
#include "bench.h"

/* Loads path into lv (name = path). Returns 0, or -1 with a message in err. */
int bench_obj_load(const char *path, bench_level *lv, char *err, size_t errlen);

/* Frees what a loader or generator put in lv. */
void bench_level_free(bench_level *lv);

#endif
