/*
 * Building a level: the per-tile pipeline of build3d-polys.md §2 (spans, regions,
 * border cut, contours, polygons, detail, tile data) over a prepared level (soup,
 * settings, volumes, the tile range and each tile's triangles in input order).
 *
 * A tile's build depends only on the triangles inside its border-expanded box, in
 * input order, so a tile built alone equals the same tile of a full build, and
 * tiles can be built in any order on any number of threads.
 */
#ifndef ONEPATH_BUILD_H
#define ONEPATH_BUILD_H

#include "onepath/contours.h"
#include "onepath/detail.h"
#include "onepath/parallel.h"
#include "onepath/polys.h"
#include "onepath/regions.h"
#include "onepath/settings.h"
#include "onepath/spans.h"
#include "onepath/tile.h"

typedef struct op_level op_level;

/* A level's tile range (inclusive); the span stage's op_tile_range under the name the
 * build API has used since before the two met. */
typedef op_tile_range op_tile_rect;

/* Prepares a level: validates soup, settings and volumes (a volume set in name order:
 * op_volumes_check, rebuild.h), computes the tile range and bins the triangles per tile.
 * The level borrows soup and vols (keep them alive); it owns its bins. Free with
 * op_level_destroy. Builds with another volume set: op_level_build_tile (rebuild.h). */
op_status op_level_create(const op_soup *soup, const op_settings *s, const op_volume *vols,
                          int nvols, op_level **out, op_err *err);
/* The same on `threads` threads (1..OP_MAX_THREADS): the level (bounds, range, bins, every
 * error) does not depend on the thread count. */
op_status op_level_create_threads(const op_soup *soup, const op_settings *s, const op_volume *vols,
                                  int nvols, int threads, op_level **out, op_err *err);
/* The same on the workers of pool (parallel.h), which the caller keeps for the tile builds
 * that follow; OP_EBUSY while the pool runs another call, OP_EINVAL for a NULL pool. */
op_status op_level_create_pool(const op_soup *soup, const op_settings *s, const op_volume *vols,
                               int nvols, op_pool *pool, op_level **out, op_err *err);
/* Prepares a level from heightfield input (build3d-spans.md §1.8) or a voxel chunk (§1.9),
 * docs/spec/input-formats.md §5: validates the input, settings and volumes. Tile (tx, tz)
 * shows input columns tx·TileCells − B … tx·TileCells + TileCells + B − 1 (z likewise) counted
 * from the input's origin; the tile range is every tile whose core holds a column:
 * 0 … ceil(width / TileCells) − 1 by 0 … ceil(depth / TileCells) − 1 (more than OP_MAX_TILES:
 * OP_ERANGE naming the count). The level borrows the input's arrays and vols: they must
 * stay alive and unchanged (tile builds do not validate the input again). */
op_status op_level_create_hf(const op_hf_input *hf, const op_settings *s, const op_volume *vols,
                             int nvols, op_level **out, op_err *err);
op_status op_level_create_chunk(const op_voxel_chunk *vc, const op_settings *s,
                                const op_volume *vols, int nvols, op_level **out, op_err *err);
void op_level_destroy(op_level *lvl);

op_tile_rect op_level_tiles(const op_level *lvl);
const op_settings *op_level_settings(const op_level *lvl);
/* Number of tiles in the range, and the row-major index of (tx, tz) (-1 outside). */
int op_level_tile_count(const op_level *lvl);
int op_level_tile_index(const op_level *lvl, int tx, int tz);
/* World bounds of the soup's triangles; for heightfield / chunk input the box of its
 * columns and rows (cell size cs of the tile grid, row height CellHeight). */
void op_level_bounds(const op_level *lvl, float bmin[3], float bmax[3]);

/* The jobs of rect r (a part of the level's tiles; job i is tile (r.tx0 + i % w,
 * r.tz0 + i / w) with w = r.tx1 - r.tx0 + 1) heaviest first by an estimate (a soup
 * tile's binned triangles), for op_parallel_opts.order: order[0..count of r). The
 * order depends only on the level; OP_ERANGE when r is not inside the level's tiles. */
op_status op_level_job_order(const op_level *lvl, op_tile_rect r, int *order, op_err *err);

/* How far op_level_build_stages goes. */
typedef enum op_stage {
    OP_STAGE_SPANS = 0,
    OP_STAGE_REGIONS = 1,
    OP_STAGE_CONTOURS = 2,
    OP_STAGE_POLYS = 3,
    OP_STAGE_DETAIL = 4,
    OP_STAGE_TILE = 5,
} op_stage;

/* Everything one tile build produced, stage by stage (valid up to the stage asked). */
typedef struct op_tile_stages {
    int tx, tz;
    int skipped; /* no triangle of the tile may be walkable, or no region in the core */
    op_chf chf;
    op_regions regions;
    uint16_t *region_layer; /* Layers partition: each region's layer (else NULL) */
    uint16_t *span_layer;   /* Layers partition: each span's layer, decided on the field eroded
                               without volumes (build3d-runtime.md §2): the same whatever the
                               volumes; OP_NO_LAYER where that erosion leaves no floor */
    int layer_by_layer;     /* built layer by layer (docs/spec/build3d-runtime.md §2.3): the
                               contour, polygon and detail results are the last layer's */
    int border_region;
    op_contour_set contours;
    op_poly_mesh polys;
    op_detail_mesh detail;
    int min_row;
    int nlayers;
    int *poly_layer;
    int ntiles;
    op_tile *tiles;
    double stage_ms[6];   /* time spent in each op_stage (monotonic clock) */
    int detail_reused;    /* rebuilds: polygons whose detail was copied from the entry
                             (build3d-runtime.md §5.6); 0 in a build from scratch */
    int contours_reused;  /* rebuilds: regions whose contours were copied from the entry
                             (build3d-runtime.md §5.7); 0 in a build from scratch */
    int polys_reused;     /* rebuilds: contours whose polygons were copied from the entry
                             (build3d-runtime.md §5.12); 0 in a build from scratch */
    int regions_reused;   /* rebuilds: 1 when the regions (border cut included) were the
                             entry's (build3d-runtime.md §5.9; chf.dist is then NULL, not
                             computed); 0 in a build from scratch */
    int layers_reused;    /* rebuilds, partition = layers: span layers whose regions were the
                             entry's, renumbered (build3d-runtime.md §5.11); 0 when rule 9
                             took the whole stage, nothing was kept, or from scratch */
    int stretches_reused; /* rebuilds: loop stretches whose simplification was copied from
                             the entry (build3d-runtime.md §5.13); 0 in a build from scratch */
} op_tile_stages;

/* Builds tile (tx, tz) up to stage `last`; keep_raw keeps raw contour loops. Arrays
 * come from out (results) and scratch (thrown away by the caller). chf.dist (the
 * distance field) is built when last is OP_STAGE_SPANS or the partition is watershed;
 * other partitions never read it, so builds past the span stage leave it NULL. */
op_status op_level_build_stages(const op_level *lvl, int tx, int tz, op_stage last, int keep_raw,
                                op_arena *out, op_arena *scratch, op_tile_stages *st, op_err *err);

#endif
