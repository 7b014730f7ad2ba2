/*
 * The span stage (docs/spec/build3d-spans.md): triangles → heightfield of span
 * columns → filters → compact heightfield with mutual links → area volumes →
 * erosion → exact distance field.
 *
 * Directions: 0 = -x, 1 = +z, 2 = +x, 3 = -z (op_dir_dx / op_dir_dz).
 * Span index order: cells z-major (index = x + z * width), spans bottom up.
 */
#ifndef ONEPATH_SPANS_H
#define ONEPATH_SPANS_H

#include <stdint.h>
#include "onepath/arena.h"
#include "onepath/input.h"
#include "onepath/settings.h"
#include "onepath/status.h"
#include "onepath/hash.h"

#define OP_NO_SPAN 0xffffffffu
#define OP_NO_LINK 0xffffffffu

static inline int op_dir_dx(int d)
{
    return (d == 0) ? -1 : (d == 2) ? 1 : 0;
}
static inline int op_dir_dz(int d)
{
    return (d == 1) ? 1 : (d == 3) ? -1 : 0;
}

/* ---- heightfield (solid spans) ---- */

typedef struct op_hf_span {
    uint16_t smin, smax; /* solid rows [smin, smax) */
    uint8_t area;        /* area id of the span's top surface */
    uint32_t next;       /* next span up in the column, or OP_NO_SPAN */
} op_hf_span;

typedef struct op_heightfield {
    int width, depth; /* cells along x and z */
    int rows;         /* rows available: span tops are <= rows */
    double origin[3]; /* world position of cell (0, 0)'s minimum corner, row 0 */
    double cs, ch;    /* cell size and row height actually used */
    uint32_t *heads;  /* width * depth: lowest span of each column or OP_NO_SPAN */
    op_hf_span *spans;
    uint32_t span_count, span_cap;
    uint32_t free_list; /* recycled span slots (merges), OP_NO_SPAN if none */
    op_arena *arena;    /* where spans grow */
} op_heightfield;

/* Creates an empty heightfield in arena. Checks width/depth in [1, OP_MAX_GRID_SIDE],
 * rows in [1, OP_MAX_ROWS], cs/ch > 0 and finite. */
op_status op_heightfield_init(op_heightfield *hf, op_arena *arena, int width, int depth, int rows,
                              const double origin[3], double cs, double ch, op_err *err);

/* Adds a span to column (x, z), merging with spans it overlaps or touches
 * (build3d-spans.md §3); merge_threshold applies to the area rule. */
op_status op_heightfield_add_span(op_heightfield *hf, int x, int z, int smin, int smax, int area,
                                  int merge_threshold, op_err *err);

/* ---- classification and rasterization (§2, §3) ---- */

/* Writes one area per triangle: the soup's area (or 63) when the triangle passes
 * the walkable slope test, else 0. areas_out has tris_len / 3 entries. */
void op_classify_triangles(const op_soup *soup, float slope_cos, uint8_t *areas_out);

/* MayBeWalkable (build3d-polys.md §1): len > 0 && ny >= (cos - 1e-3) * len, double cross product.
 */
int op_triangle_may_be_walkable(const float *v0, const float *v1, const float *v2, float slope_cos);

/* Rasterizes the triangles tris[0..ntris) (indices into verts) with per-triangle
 * areas into hf, in input order (§3). */
op_status op_rasterize(op_heightfield *hf, const float *verts, const int *tris,
                       const uint8_t *areas, size_t ntris, int merge_threshold, op_err *err);

/* ---- filters (§4), in the order a build runs them ---- */
void op_filter_low_hanging(op_heightfield *hf, int walkable_climb);
void op_filter_ledges(op_heightfield *hf, int walkable_height, int walkable_climb);
void op_filter_low_height(op_heightfield *hf, int walkable_height);

/* ---- compact heightfield (§5) ---- */

typedef struct op_chf {
    int width, depth;
    int border; /* border band width in cells on each side (0 outside tile builds) */
    int walkable_height, walkable_climb;
    int rows;
    double origin[3];
    double cs, ch;
    uint32_t span_count;
    uint32_t *cells;      /* width * depth + 1: spans of cell c are [cells[c], cells[c+1]) */
    uint16_t *y;          /* floor row of each span (top of its solid span) */
    uint16_t *h;          /* open rows above the floor, capped at 0xffff */
    uint32_t (*links)[4]; /* mutual neighbour span per direction, or OP_NO_LINK */
    uint8_t *areas;       /* area id per span, 0 = not walkable */
    uint32_t *dist;       /* distance field (§8) or NULL until op_distance_build */
} op_chf;

/* Compacts hf's open spans into chf (allocated in out) with mutual links. */
op_status op_chf_build(const op_heightfield *hf, int walkable_height, int walkable_climb,
                       op_arena *out, op_chf *chf, op_err *err);

/* ---- area volumes (§6) ---- */

typedef enum op_volume_kind {
    OP_VOLUME_BOX = 0,
    OP_VOLUME_CYLINDER = 1,
    OP_VOLUME_PRISM = 2,
} op_volume_kind;

#define OP_MAX_PRISM_VERTS 64

typedef struct op_volume {
    op_volume_kind kind;
    int area; /* area id written, [0, 63] */
    /* box: bmin/bmax; cylinder: centre (x, z) in bmin[0], bmin[2], radius in bmax[0],
     * y range [bmin[1], bmax[1]]; prism: convex polygon pts (x, z pairs, counter-clockwise),
     * y range [bmin[1], bmax[1]]. */
    double bmin[3], bmax[3];
    int npts;
    double pts[OP_MAX_PRISM_VERTS * 2];
} op_volume;

op_status op_volume_validate(const op_volume *v, op_err *err);
/* Applies volumes in array order (a later volume wins). */
op_status op_volumes_apply(op_chf *chf, const op_volume *vols, int nvols, op_err *err);

/* ---- erosion and distance (§7, §8) ---- */

/* Marks walkable spans within radius (cells) of a boundary unwalkable (§7). */
op_status op_erode(op_chf *chf, int radius, op_arena *scratch, op_err *err);

/* Exact shortest-path distance to the boundary (§8): orthogonal step 2, diagonal
 * step 3, no cap. Fills chf->dist from out. */
op_status op_distance_build(op_chf *chf, op_arena *out, op_arena *scratch, op_err *err);

/* The same distance field written to dist (span_count entries, caller's memory); chf is
 * not changed. Scratch: 4 bytes a span, released before returning. Used by erosion. */
op_status op_distance_compute(const op_chf *chf, uint32_t *dist, op_arena *scratch, op_err *err);

/* How op_distance_compute gets there; every method gives the same field (§8 rule 5).
 * SWEEPS (the default): a forward and a backward pass and a check, then Dijkstra from
 * the spans the check still lowers (usually none). DIJKSTRA: Dijkstra from all boundary
 * spans. BACKWARD_ONLY: SWEEPS without the forward pass, so that the repair has much to
 * do. The last two exist for tests and benchmarks. */
typedef enum op_distance_method {
    OP_DISTANCE_SWEEPS = 0,
    OP_DISTANCE_DIJKSTRA = 1,
    OP_DISTANCE_BACKWARD_ONLY = 2,
} op_distance_method;

op_status op_distance_compute_method(const op_chf *chf, uint32_t *dist, op_distance_method method,
                                     op_arena *scratch, op_err *err);

/* ---- the whole stage for one tile ---- */

/* The span stage of tile (tx, tz) of a soup: triangle selection, heightfield of the
 * tile's build grid (with its border band), rasterize, filters, compaction, volumes,
 * erosion and distance. chf->border is the tile grid's border. */
op_status op_tile_spans_build(const op_soup *soup, const op_settings *s, int tx, int tz,
                              const op_volume *vols, int nvols, op_arena *out, op_arena *scratch,
                              op_chf *chf, op_err *err);

/* Canonical text dump of a heightfield / compact heightfield (one line per span). */
int op_heightfield_dump(const op_heightfield *hf, op_write_fn write, void *ctx);
int op_chf_dump(const op_chf *chf, op_write_fn write, void *ctx);

#endif
