/*
 * Polygons (../shared/spec/build3d-polys.md §3): contours → convex polygons of at
 * most nvp vertices, per contour: straight wall vertices removed, ear clipping with
 * the shortest diagonal, welding, Hertel–Mehlhorn merging. Cell coordinates of the
 * tile's build grid; float32 tile-local positions via op_tile_local.
 */
#ifndef ONEPATH_POLYS_H
#define ONEPATH_POLYS_H

#include <stdint.h>
#include "onepath/contours.h"

#define OP_POLY_NULL 0xffffu
/* Vertices of one poly mesh: indices are uint16 with OP_POLY_NULL reserved. Beyond:
 * OP_ELIMIT naming the count. */
#define OP_POLY_MAX_VERTS 0xffff
/* edge_neighbour value of an edge shared by two polygons of one contour. */
#define OP_EDGE_INTERNAL (-2)

/* How cell coordinates of a build grid map to stored tile-local float32 values
 * (TileCoordinates.Local of build3d-polys.md §4). */
typedef struct op_tile_frame {
    int border;       /* B */
    int tile_cells;   /* TileCells */
    double cs;        /* tile_size / tile_cells */
    double tile_size; /* wu */
    double ch;        /* row height */
} op_tile_frame;

/* Local(c): 0 for c = B, (float)tile_size for c = B + tile_cells, else (float)((c - B) * cs). */
float op_tile_local(const op_tile_frame *f, int c);
/* LocalY(row) = (float)((row - min_row) * ch). */
float op_tile_local_y(const op_tile_frame *f, int row, int min_row);

typedef struct op_poly_mesh {
    int nverts;
    int32_t *verts; /* nverts * 3: x, row, z (cell corner coordinates, floor row) */
    int npolys;
    int nvp;                 /* max vertices per polygon */
    uint16_t *polys;         /* npolys * nvp vertex indices, unused slots OP_POLY_NULL */
    int32_t *edge_neighbour; /* npolys * nvp: edge k (vertex k -> k+1) comes from a contour edge
                                with this neighbour value (region id, 0 wall, OP_TILE_BORDER),
                                or OP_EDGE_INTERNAL */
    uint16_t *regs;          /* region per polygon */
    uint8_t *areas;          /* area id per polygon (the contour's) */
    int degenerate_ears;     /* DegenerateEars counter */
    op_tile_frame frame;
} op_poly_mesh;

/* Polygonizes every contour of cset (in contour order) with at most nvp vertices per
 * polygon (3..OP_MAX_VERTS_PER_POLY). */
op_status op_polys_build(const op_contour_set *cset, const op_tile_frame *frame, int nvp,
                         op_arena *out, op_arena *scratch, op_poly_mesh *mesh, op_err *err);

int op_polys_dump(const op_poly_mesh *mesh, op_write_fn write, void *ctx);

#endif
