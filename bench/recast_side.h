/*
 * Recast 1.5.1 side of the benchmark, callable from C (recast_side.cpp is C++).
 */
#ifndef ONEPATH_BENCH_RECAST_SIDE_H
#define ONEPATH_BENCH_RECAST_SIDE_H

#include "bench.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Builds every tile of lv with Recast and Detour, the way RecastDemo's Sample_TileMesh
 * does (tile grid over the level bounds, border walkableRadius + 3, watershed /
 * monotone / layer regions per s->partition), stopping after `upto`. Stage times go
 * to res->ms; heap is counted through rcAllocSetCustom / dtAllocSetCustom (process
 * wide: do not run two Recast builds at once). Returns 0, or -1 with err filled.
 */
int bench_recast_build(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                       int threads, void *workers, bench_result *res, char *err, size_t errlen);
/* threads - 1 std::threads kept for bench_recast_build (bench_workers_new_fn), and
 * their free. */
void *bench_recast_workers_new(int threads);
void bench_recast_workers_free(void *workers);

/*
 * Quality runs (bench/quality): the same build with upto = all, keeping every tile's
 * Detour data and adding it (row-major) to a new dtNavMesh, tile ids and polygon ids
 * sized as Sample_TileMesh sizes them. *navmesh is a dtNavMesh* (opaque to C), freed
 * with bench_recast_navmesh_free. Returns 0, or -1 with err filled.
 */
int bench_recast_build_navmesh(const bench_level *lv, const struct op_settings *s, int threads,
                               bench_result *res, void **navmesh, char *err, size_t errlen);
void bench_recast_navmesh_free(void *navmesh);

#ifdef __cplusplus
}
#endif

#endif
