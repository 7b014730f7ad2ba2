/*
 * Contours (../shared/spec/build3d-regions.md §6): trace each region's boundary
 * loops, simplify them, join holes to outlines. Integer arithmetic, exact
 * orientation; the error threshold compare is IEEE double.
 */
#ifndef ONEPATH_CONTOURS_H
#define ONEPATH_CONTOURS_H

#include <stdint.h>
#include "onepath/regions.h"

/* Neighbour value of an edge that leaves the grid (Contours.TileBorder). */
#define OP_TILE_BORDER (-1)

typedef struct op_contour_settings {
    double max_error;            /* cells; default 1.3 */
    int max_edge_length;         /* cells; 0 = no length split; default 12 */
    int straight_region_borders; /* default 1 */
    int border_region;           /* region id of the tile border band; 0 = none */
    int keep_raw;                /* keep raw outlines and holes in the output */
    /* Layer view (docs/spec/build3d-runtime.md §2.3), off when span_layer is NULL: only
     * spans with span_layer[s] == layer are traced, and a link to a span of another layer
     * is no link for tracing and corner heights. Such an edge's neighbour value is the
     * region of the span it links to (a layer seam, ../shared/spec/amendments.md R3), or 0
     * when that span has no region or is in border_region. span_layer has one entry per
     * span of the field. */
    const uint16_t *span_layer;
    int layer;
} op_contour_settings;

void op_contour_settings_default(op_contour_settings *cs);
op_status op_contour_settings_validate(const op_contour_settings *cs, op_err *err);

/* A contour vertex: corner (x, z) in cells, y = floor row, neighbour = value of the
 * edge from this vertex to the next (region id, 0 wall, OP_TILE_BORDER). */
typedef struct op_contour_vert {
    int32_t x, y, z, neighbour;
} op_contour_vert;

typedef struct op_raw_loop {
    op_contour_vert *verts;
    int nverts;
} op_raw_loop;

typedef struct op_contour {
    op_contour_vert *verts; /* simplified, counter-clockwise, >= 3, holes joined */
    int nverts;
    int region;
    int area;
    int nholes;             /* holes joined into this outline */
    op_raw_loop raw;        /* raw outline (keep_raw only) */
    op_raw_loop *raw_holes; /* raw holes assigned to this outline (keep_raw only) */
    int nraw_holes;
} op_contour;

typedef struct op_contour_set {
    op_contour *contours; /* ordered by region id, then discovery order */
    int count;
    int raw_fallbacks; /* RawFallbacks */
    int dropped_holes; /* DroppedHoles */
    int width, depth, border;
    double origin[3];
    double cs, ch;
} op_contour_set;

op_status op_contours_build(const op_chf *chf, const op_regions *regs,
                            const op_contour_settings *cs, op_arena *out, op_arena *scratch,
                            op_contour_set *res, op_err *err);

/* The raw boundary loops of every region in trace order (§6 Tracing), before any
 * simplification: loops[i] (one vertex per boundary edge) belongs to region region[i].
 * For tests and tools; all memory from out. */
typedef struct op_contour_trace {
    op_raw_loop *loops;
    int *region;
    int count;
} op_contour_trace;

op_status op_contours_trace(const op_chf *chf, const op_regions *regs, op_arena *out,
                            op_arena *scratch, op_contour_trace *res, op_err *err);

/* Canonical text: per contour its region, area, holes joined and vertices "x y z n"
 * (then the raw loops when kept), and the RawFallbacks / DroppedHoles counters. */
int op_contours_dump(const op_contour_set *cset, op_write_fn write, void *ctx);

#endif
