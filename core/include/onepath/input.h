/*
 * Build inputs (build3d-polys.md §1): a triangle soup, a heightfield of span
 * columns, or a voxel chunk. Inputs are borrowed: the caller keeps them alive
 * for the duration of a call. Every input is untrusted and validated (§6).
 */
#ifndef ONEPATH_INPUT_H
#define ONEPATH_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include "onepath/status.h"

/* A triangle soup. verts_len counts floats (3 per vertex), tris_len counts ints
 * (3 per triangle). areas is optional: NULL means every triangle has area 63
 * (walkable, subject to the slope test); otherwise one id in [0, 63] per triangle,
 * 0 = never walkable. */
typedef struct op_soup {
    const float *verts;
    size_t verts_len;
    const int *tris;
    size_t tris_len;
    const uint8_t *areas;
} op_soup;

/*
 * Validates a soup (§6): lengths not multiples of three or a non-finite coordinate
 * → OP_EINVAL; a coordinate beyond ±OP_MAX_COORD, an index outside [0, nverts) or
 * an area id above 63 → OP_ERANGE. Messages name the vertex/triangle index and value.
 */
op_status op_soup_validate(const op_soup *soup, op_err *err);

/* XZ/Y bounds of the vertices used by triangles (all vertices if none). Soup must be valid. */
void op_soup_bounds(const op_soup *soup, float bmin[3], float bmax[3]);

/* One span of heightfield input: rows [smin, smax), area id. */
typedef struct op_span_in {
    uint16_t smin;
    uint16_t smax;
    uint8_t area;
} op_span_in;

/* A heightfield input: width x depth columns from (origin_x, origin_y, origin_z),
 * column (i, k) at index k * width + i holds spans [col_start[c], col_start[c+1]).
 * Spans of a column must be sorted, disjoint and below rows. The frame's cell sizes
 * are ignored (one column is one cell of the build). */
typedef struct op_hf_input {
    int width, depth, rows;
    double origin_x, origin_y, origin_z;
    const uint32_t *col_start; /* width * depth + 1 entries */
    const op_span_in *spans;
} op_hf_input;

op_status op_hf_input_validate(const op_hf_input *hf, op_err *err);

/* A voxel chunk: sx x sy x sz voxels of area ids (0 = empty), voxel (i, j, k) is
 * cell i, row j, cell k from (origin_x, 0, origin_z), stored column by column:
 * areas[(k * sx + i) * sy + j]. */
typedef struct op_voxel_chunk {
    int sx, sy, sz;
    double origin_x, origin_z;
    const uint8_t *areas;
} op_voxel_chunk;

op_status op_voxel_chunk_validate(const op_voxel_chunk *vc, op_err *err);

#endif
