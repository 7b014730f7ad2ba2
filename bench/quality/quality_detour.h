/*
 * Detour side of the quality benchmark: counts, coverage, nearest polygon and path
 * queries on the dtNavMesh that bench_recast_build_navmesh (../recast_side.h) built.
 * Callable from C; the mesh and query handles are opaque.
 */
#ifndef ONEPATH_BENCH_QUALITY_DETOUR_H
#define ONEPATH_BENCH_QUALITY_DETOUR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Polygons, polygon vertices and coverage (sum of polygon areas projected on the x-z
 * plane) over every tile of the navmesh. */
void qd_counts(const void *navmesh, long *polys, long *verts, double *coverage);

/* A dtNavMeshQuery over the navmesh with max_nodes search nodes (<= 65535 in Detour
 * 1.5.1); NULL on failure. */
void *qd_query_create(const void *navmesh, int max_nodes);
void qd_query_free(void *q);

/* findNearestPoly with the default filter: 1 and the polygon id and nearest point when
 * found, 0 otherwise. */
int qd_nearest(void *q, const double pos[3], const double half[3], unsigned long long *ref,
               double nearest[3]);

/* findPath between two snapped points with the default filter: 1 when the path is
 * complete (ends at the end polygon), 0 when partial or failed; *out_of_nodes is set
 * when the search ran out of nodes. */
int qd_path_complete(void *q, unsigned long long a, const double pa[3], unsigned long long b,
                     const double pb[3], int *out_of_nodes);

/* The last k polygons (at most) of findPath's corridor: per polygon tile x, tile y,
 * vertex centroid x, z, lowest and highest vertex y (6 doubles). Returns the count. */
int qd_path_tail(void *q, unsigned long long a, const double pa[3], unsigned long long b,
                 const double pb[3], int k, double *out);

/* Coverage per tile: grid[tile y * w + tile x] += the tile's polygon area (x-z plane). */
void qd_tile_coverage(const void *navmesh, int w, int h, double *grid);

/* Calls fn with every ground polygon's vertices projected on x-z (x0, z0, x1, z1, ...). */
void qd_each_poly(const void *navmesh, void (*fn)(void *ctx, const double *xz, int n), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
