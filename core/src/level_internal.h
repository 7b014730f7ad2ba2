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
    const uint32_t *bin_ids; /* the level's own, or the caller's (op_level_create_tile) */
    /* Per triangle: OP__TRI_COPY when its key (vertex bits in order and input area) equals
     * an earlier triangle's, else its area after classification (§3.1: 0 when not
     * walkable). A tile build reads it instead of classifying and hashing per tile; NULL
     * (levels of one tile, unbinned soups) makes the build classify its own triangles. */
    uint8_t *tri_class;
    /* Per bin (with bin_start): the lowest and highest vertex y of its triangles, so that a
     * tile build finds y0 and rows (build3d-spans.md §1.3) without reading its triangles'
     * vertices; NULL (levels of one tile, unbinned soups): the build reads them. */
    const float *bin_y;
    op_arena *arena;     /* the level's own memory (bins) */
    uint32_t one_bin[2]; /* bin_start of a level of one tile (op_level_create_tile*) */
    float one_y[2];      /* bin_y of a level of one tile with triangles (their y range) */
    int soup_checked;    /* the whole soup was validated (op_level_create*, _unbinned) */
};

#define OP__TRI_COPY 0xffu

/* What a tile's build computed before any volume (docs/spec/build3d-runtime.md §5.1): the
 * base a volume-only rebuild starts from. A fresh build fills it in its arenas; a rebuild
 * entry (rebuild.c) holds a copy. */
typedef struct op__tile_base {
    int skipped;                /* build3d-spans.md §1.6: no spans, every build skipped */
    op_chf chf;                 /* after compaction, border set: areas before erosion */
    const uint8_t *eroded;      /* areas after erosion without volumes, or NULL (not yet) */
    const uint16_t *span_layer; /* partition = layers: span layers (§2.1), or NULL (not yet) */
    const uint32_t *dist;       /* partition = watershed, in a captured base: the distance
                                   field of the eroded areas (§8), or NULL */
    const struct op__detail_base *detail;    /* in an entry: the detail a build from this base
                                                computed (§5.6, detail_internal.h), or NULL */
    const struct op__contour_base *contours; /* in an entry: the contours a build from this
                                                base computed (§5.7), or NULL */
    const struct op__region_base *regions;   /* in an entry: the regions a build from this
                                                base computed (§5.9), or NULL */
    const struct op__poly_base *polys;       /* in an entry: the polygons a build from this
                                                base computed, by contour (§5.12), or NULL */
} op__tile_base;

struct op_rebuild_entry;
/* The base an entry keeps (tests read what the capture recorded), or NULL for NULL. */
const op__tile_base *op__rebuild_entry_base(const struct op_rebuild_entry *e);
/* Prefetches the entry up to its clearances, its last array, which no rebuild stage reads
 * (rebuild.c, called by op_level_rebuild_tile); returns the cache lines (64 bytes) it asked
 * for from e on: the clearances' offset rounded up (a skipped tile's entry: its bytes). */
size_t op__rebuild_entry_prefetch(const struct op_rebuild_entry *e);

/* The span stage of tile (tx, tz) of l up to the regions' input (tile_volumes.c).
 * cached == NULL: from scratch; *base receives the tile's base (complete, eroded areas and
 * span layers included, when want_base). cached != NULL: from that base (complete). Then
 * obstacles, erosion, area volumes and (when needed) distance into st->chf, from out.
 * With last > OP_STAGE_SPANS and cached->regions, st->regions_reused = 1 when the regions
 * stage may take the entry's regions (§5.9 rules 1-3); the distance field is then not
 * computed (chf.dist NULL). vols must be a validated set. */
op_status op__tile_spans(const op_level *l, int tx, int tz, const op_volume *vols, int nvols,
                         const op__tile_base *cached, int want_base, op__tile_base *base,
                         op_stage last, op_arena *out, op_arena *scratch, op_tile_stages *st,
                         op_err *err);

/* op_tile_heightfield_build_ids on l's soup and settings with l's triangle classes
 * (tri_class) and bin heights (bin_y), out = scratch: the same heightfield, except that a
 * skipped tile's is zeroed (no grid: nothing reads it). ids, n: the tile's bin. */
op_status op__tile_heightfield_build_level(const op_level *l, int tx, int tz, const uint32_t *ids,
                                           size_t n, op_arena *scratch, op_heightfield *hf,
                                           int *skipped, op_err *err);

/* op_level_build_stages with an explicit volume set and an optional cached base; base_out
 * (when not NULL) receives the base the build used, valid while out lives. */
op_status op__tile_build(const op_level *l, int tx, int tz, const op_volume *vols, int nvols,
                         const op__tile_base *cached, op__tile_base *base_out, op_stage last,
                         int keep_raw, op_arena *out, op_arena *scratch, op_tile_stages *st,
                         op_err *err);

/* Names tile (tx, tz), and layer when >= 0, at the front of err's message (a stage's
 * error that does not know its tile) unless it names a tile already; returns st, and
 * leaves err alone when st is OP_OK. */
OP_COLD op_status op__tile_err(op_status st, int tx, int tz, int layer, op_err *err);

#endif
