/*
 * DetourTileCache 1.5.1 side of the rebuild benchmark (tilecache_side.cpp is C++), the way
 * RecastDemo's Sample_TempObstacles uses it: every tile rasterized once into heightfield
 * layers (rcBuildHeightfieldLayers), each layer stored in the tile cache, navmesh tiles built
 * from the layers; an obstacle edit is addObstacle / removeObstacle and update() until the
 * cache reports itself up to date.
 *
 * The tile grid is ours (world-aligned, build3d-spans.md §1.1): the cache's origin is the
 * level's first tile corner, so an obstacle touches the same tiles on both sides, and each
 * tile is rasterized from our selection of its triangles (op_tile_buckets: the tile widened
 * by the border), which is what Recast's demo selects too.
 *
 * Compression: the layers are stored uncompressed (a copying "compressor"), which makes every
 * TileCache rebuild as fast as it can be (no decompression); the size a compressor would
 * store is measured on the side with zlib at level 1, which packs these layers at least as
 * tightly as the demo's FastLZ.
 */
#ifndef ONEPATH_BENCH_TILECACHE_SIDE_H
#define ONEPATH_BENCH_TILECACHE_SIDE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The core's headers have no C++ guards of their own. */
#include "onepath/input.h"
#include "onepath/settings.h"
#include "onepath/spans.h"

typedef struct tc_side tc_side;

typedef struct tc_sizes {
    int tiles;         /* tiles with at least one layer */
    int layers;        /* layers stored */
    size_t raw_bytes;  /* layer data as stored (header + heights, areas, cons) */
    size_t zlib_bytes; /* the same, payload compressed by zlib level 1 */
    double prepare_ms; /* rasterization, layers, navmesh tiles: the whole preprocessing */
} tc_sizes;

/* Builds the cache of tiles r (inclusive) of soup; tile (tx, tz) gets the triangles
 * ids[offsets[i] .. offsets[i+1]) with i its row-major index in r. NULL with err filled on
 * failure. */
tc_side *tc_side_create(const op_soup *soup, const op_settings *s, op_tile_range r,
                        const uint32_t *offsets, const uint32_t *ids, tc_sizes *sizes, char *err,
                        size_t errlen);

/* A cylinder obstacle standing on pos (its bottom centre), then update() until up to date.
 * Returns the milliseconds from the call to up to date; *touched the tiles (columns) it
 * rebuilt, *layers the layers (compressed tiles) those held. */
double tc_side_add(tc_side *tc, const float pos[3], float radius, float height, unsigned *ref,
                   int *touched, int *layers);
/* Removes it, then update() until up to date; milliseconds. */
double tc_side_remove(tc_side *tc, unsigned ref);

/* The same edit as tc_side_add, untimed, and removed again: the highest use of the cache's
 * linear allocator (the scratch of every tile build) while its tiles were rebuilt, bytes. */
size_t tc_side_add_footprint(tc_side *tc, const float pos[3], float radius, float height);

void tc_side_free(tc_side *tc);

#ifdef __cplusplus
}
#endif

#endif
