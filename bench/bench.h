/*
 * Shared types of the side-by-side benchmark (onepath against Recast 1.5.1).
 *
 * A level is a triangle soup (float xyz vertices, int triangle indices). Each side
 * builds every tile of the level once per run and reports the time of each stage
 * group, summed over tiles, plus counts that show both built comparable meshes.
 * Plain C so that both the C++ Recast side and the C driver include it.
 */
#ifndef ONEPATH_BENCH_H
#define ONEPATH_BENCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stage groups, in pipeline order. BENCH_PREPARE is once per level (bounds, tile
 * grid, each tile's triangles binned: op_level_create on our side, the same binning
 * written out on Recast's); the others are summed over tiles. */
typedef enum bench_stage {
    BENCH_PREPARE = 0,
    BENCH_SPANS,    /* rasterize + 3 filters + compact + erode + distance */
    BENCH_REGIONS,  /* partition (and, on our side, the tile border cut) */
    BENCH_CONTOURS, /* trace + simplify */
    BENCH_POLYS,    /* polygons */
    BENCH_DETAIL,   /* height detail */
    BENCH_TILE,     /* tile data (dtCreateNavMeshData / op_tile_assemble + op_tile_encode) */
    BENCH_NSTAGES
} bench_stage;

/* How far a run goes: the last stage group built (later groups are skipped). */
typedef enum bench_upto {
    BENCH_UPTO_SPANS = 0,
    BENCH_UPTO_REGIONS,
    BENCH_UPTO_CONTOURS,
    BENCH_UPTO_ALL
} bench_upto;

const char *bench_stage_name(bench_stage s);

/* A loaded level: the soup's arrays live in `arena` (an op_arena). */
typedef struct bench_level {
    char name[256];
    const float *verts; /* nverts * 3 */
    int nverts;
    const int *tris; /* ntris * 3 */
    int ntris;
    void *arena;
} bench_level;

/* spec: an OBJ path (op_obj_read_file) or "gen:KIND:SIZE[:SEED]" (op_levelgen, seed
 * 1 by default). Both sides build from the same arrays. Returns 0, or -1 with err. */
int bench_level_load(const char *spec, bench_level *lv, char *err, size_t errlen);
void bench_level_free(bench_level *lv);

typedef struct bench_result {
    double ms[BENCH_NSTAGES]; /* per stage group, summed over tiles (and threads) */
    double wall_ms;           /* the whole run, wall clock */
    double cpu_ms;            /* the whole run, process CPU time (set by the driver) */
    int tiles_total;          /* tiles of the grid */
    int tiles_built;          /* tiles that produced a mesh (or, upto < all, a stage result) */
    int tile_layers;          /* tile data blocks (onepath: layers of the built tiles) */
    long spans;               /* compact spans, summed over tiles */
    long regions;             /* regions, summed over tiles (border excluded) */
    long contours;
    long polys;
    long verts;
    long detail_tris;
    size_t tile_bytes; /* tile data bytes, summed */
    size_t heap_peak;  /* peak bytes of the per-tile working memory (own allocator count;
                          the level's triangle bins excluded on both sides) */
    unsigned missing;  /* bit (1u << stage): this side does not time that stage group */
} bench_result;

struct op_settings;

/* One side's build of a whole level: every tile once, threads >= 1 workers.
 * workers: NULL, or that side's kept worker threads for `threads` (below); with NULL
 * the build starts its own threads and ends them. Fills res (zeroed first). Returns
 * 0, or -1 with a message in err. Both sides (recast_side.h, onepath_side.h) have
 * this shape. */
typedef int (*bench_build_fn)(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                              int threads, void *workers, bench_result *res, char *err,
                              size_t errlen);

/* A side's worker threads kept across builds, as a daemon or a bake farm keeps them:
 * threads - 1 threads that sleep between builds (the calling thread is the first
 * worker). NULL when they cannot be had. Ours: an op_pool; Recast's: std::threads. */
typedef void *(*bench_workers_new_fn)(int threads);
typedef void (*bench_workers_free_fn)(void *workers);

/* Monotonic clock in milliseconds (clock_gettime CLOCK_MONOTONIC). */
double bench_now_ms(void);

#ifdef __cplusplus
}
#endif

#endif
