/*
 * Height detail (../shared/spec/build3d-polys.md §4): a small triangle mesh per
 * polygon that follows the heightfield within detail_max_error.
 * Coordinates are tile-local float32 (op_tile_local).
 */
#ifndef ONEPATH_DETAIL_H
#define ONEPATH_DETAIL_H

#include <stdint.h>
#include "onepath/polys.h"

/* Triangles of one polygon's detail mesh. Beyond: OP_ELIMIT naming the polygon and the
 * count (build3d-polys.md §6, "a polygon's detail triangles"). Vertices per polygon are
 * capped at OP_MAX_DETAIL_VERTS (limits.h) by refinement, and a triangulation of n
 * vertices has at most 2n - 5 triangles, so this limit is never met by a build: it
 * guards the format (counts are uint32, triangle vertex indices are bytes). */
#define OP_MAX_DETAIL_TRIS 512
_Static_assert(2 * 255 - 5 < OP_MAX_DETAIL_TRIS, "a full detail mesh always fits");

typedef struct op_detail_settings {
    double sample_distance; /* wu; detail is off when sample_distance / cs <= 0.9 */
    double max_error;       /* wu */
    int walkable_climb;     /* rows (NearestRow search reach) */
} op_detail_settings;

typedef struct op_detail_mesh {
    int npolys;
    uint32_t *meshes; /* npolys * 4: first extra vertex, extra vertex count, first triangle,
                         triangle count */
    int nverts;
    float *verts; /* nverts * 3 extra vertices (tile-local x, y, z), creation order */
    int ntris;
    uint8_t *tris; /* ntris * 4: vertex indices a, b, c (0..n-1 polygon vertices, then the
                      polygon's extras) and the edge-flag byte (bit k: edge k on the boundary) */
} op_detail_mesh;

/* Builds the detail of every polygon of mesh against chf/regs; min_row is the tile's
 * lowest vertex row (LocalY origin). Output arrays come from out; scratch is returned to
 * its state on entry. Errors: OP_EINVAL (NULL, region count mismatch, frame sizes),
 * OP_ERANGE (settings), OP_ELIMIT (a polygon with more than OP_MAX_DETAIL_TRIS
 * triangles, or one whose Delaunay flips outgrow a stack of 2^19 edges: "detail: polygon
 * P flip stack over N"), OP_ENOMEM. */
op_status op_detail_build(const op_poly_mesh *mesh, const op_chf *chf, const op_regions *regs,
                          const op_detail_settings *ds, int min_row, op_arena *out,
                          op_arena *scratch, op_detail_mesh *dm, op_err *err);

/* Canonical text dump (floats as their bit patterns); returns the first nonzero write. */
int op_detail_dump(const op_detail_mesh *dm, op_write_fn write, void *ctx);

#endif
