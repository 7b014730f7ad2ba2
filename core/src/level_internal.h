/* The prepared level (build.h) as the tile pipeline sees it. */
#ifndef ONEPATH_LEVEL_INTERNAL_H
#define ONEPATH_LEVEL_INTERNAL_H

#include "onepath/build.h"

struct op_level {
    op_soup soup; /* borrowed arrays */
    op_settings settings;
    const op_volume *vols; /* borrowed */
    int nvols;
    op_tile_grid grid;
    op_span_settings span;
    op_tile_rect rect;
    float bmin[3], bmax[3];
    uint32_t *bin_start; /* tile count + 1: triangles of tile k are bin_ids[bin_start[k]..[k+1]) */
    uint32_t *bin_ids;
    op_arena *arena; /* the level's own memory (bins) */
};

#endif
