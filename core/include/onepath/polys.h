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

/* Padding of a tile layer's uint16 vertex indices (op_tile.polys, the tile format). */
#define OP_POLY_NULL 0xffffu
/* Padding of a polygon mesh's uint32 vertex indices (op_poly_mesh.polys). The mesh of a
 * tile built in one piece holds every layer, so its indices pass 16 bits; its vertex
 * count is bounded by OP_MAX_TILE_MESH_VERTS (limits.h), each layer's by
 * OP_MAX_LAYER_VERTS. */
#define OP_POLY_MESH_NULL 0xffffffffu
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
/* The same at fractional cells and rows (detail edge points and samples,
 * build3d-polys.md §4): equal to the int forms at whole values. */
float op_tile_local_at(const op_tile_frame *f, double c);
float op_tile_local_y_at(const op_tile_frame *f, double row, int min_row);

typedef struct op_poly_mesh {
    int nverts;
    int32_t *verts; /* nverts * 3: x, row, z (cell corner coordinates, floor row), welded,
                       in order of first appearance. Every contour vertex left after the
                       straight-wall removal is here, even when no polygon uses it (a
                       triangle that was not emitted, a wall-collinear joint removed by a
                       merge): later stages select the vertices their polygons use. */
    int npolys;
    int nvp;                 /* max vertices per polygon */
    uint32_t *polys;         /* npolys * nvp vertex indices, unused slots OP_POLY_MESH_NULL */
    int32_t *edge_neighbour; /* npolys * nvp: edge k (vertex k -> k+1) comes from a contour edge
                                with this neighbour value (region id, 0 wall, OP_TILE_BORDER;
                                an edge spanning a removed wall-collinear joint is 0), or is a
                                diagonal, OP_EDGE_INTERNAL (normally shared with another
                                polygon of the contour; unpaired when the triangle across was
                                not emitted). Unused slots hold OP_EDGE_INTERNAL. */
    uint16_t *regs;          /* region per polygon (the contour's) */
    uint8_t *areas;          /* area id per polygon (the contour's) */
    int degenerate_ears;     /* DegenerateEars counter */
    op_tile_frame frame;
} op_poly_mesh;

/* Polygonizes every contour of cset (in contour order) with at most nvp vertices per
 * polygon (3..OP_MAX_VERTS_PER_POLY). Output arrays come from out; scratch is restored
 * to its mark on return. Errors: OP_EINVAL (NULL argument, a contour with fewer than 3
 * vertices, bad frame), OP_ERANGE (nvp out of range; a cell coordinate at or beyond
 * 2^20, a row beyond +-OP_MAX_ROWS; a region or area out of range), OP_ELIMIT (more than
 * OP_MAX_TILE_MESH_VERTS vertices), OP_ENOMEM. On error *mesh is zeroed. */
op_status op_polys_build(const op_contour_set *cset, const op_tile_frame *frame, int nvp,
                         op_arena *out, op_arena *scratch, op_poly_mesh *mesh, op_err *err);

/* Canonical text dump (hash-matrix scenarios): a header line
 * "polys nvp N verts V polys P degenerate D", one line "v i x row z" per vertex, and one
 * line "p i reg R area A : v/nb ..." per polygon (vertex index / edge neighbour value).
 * Returns the first nonzero value of write, else 0. */
int op_polys_dump(const op_poly_mesh *mesh, op_write_fn write, void *ctx);

#endif
