/* The prepared level (build.h) as the tile pipeline sees it. */
#ifndef ONEPATH_LEVEL_INTERNAL_H
#define ONEPATH_LEVEL_INTERNAL_H

#include "onepath/build.h"

/* What a level was made from (build.h). */
typedef enum op_level_kind {
    OP_LEVEL_SOUP = 0,
    OP_LEVEL_HEIGHTFIELD = 1,
    OP_LEVEL_CHUNK = 2,
} op_level_kind;

struct op_level {
    op_level_kind kind;
    op_soup soup;         /* OP_LEVEL_SOUP: borrowed arrays */
    op_hf_input hf;       /* OP_LEVEL_HEIGHTFIELD: borrowed arrays */
    op_voxel_chunk chunk; /* OP_LEVEL_CHUNK: borrowed voxels */
    op_settings settings;
    const op_volume *vols; /* borrowed */
    int nvols;
    op_tile_grid grid;
    op_span_settings span;
    op_tile_rect rect;
    float bmin[3], bmax[3];
    /* Soup levels only (NULL otherwise): */
    uint32_t *bin_start; /* tile count + 1: triangles of tile k are bin_ids[bin_start[k]..[k+1]) */
    uint32_t *bin_ids;
    op_arena *arena; /* the level's own memory (bins) */
};

#endif
