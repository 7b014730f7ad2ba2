/*
 * The span stage (docs/spec/build3d-spans.md): triangles → heightfield of span
 * columns → filters → compact heightfield with mutual links → obstacle volumes →
 * erosion → area volumes → exact distance field.
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

/* One fragment: what one triangle (or one input span) left in one column (§3.5).
 * Fragments are kept so that a column's spans are always a pure function of the
 * SET of its fragments, whatever the order they arrived in. */
typedef struct op_hf_frag {
    uint16_t smin, smax; /* rows [smin, smax) */
    uint8_t area;
    uint32_t next; /* next fragment of the column (in no particular order) */
} op_hf_frag;

typedef struct op_heightfield {
    int width, depth; /* cells along x and z */
    int rows;         /* rows available: span tops are <= rows */
    double origin[3]; /* world position of cell (0, 0)'s minimum corner, row 0 */
    double cs, ch;    /* cell size and row height actually used */
    /* Walk columns through heads/next. A heightfield filled by one call (every tile
     * build) stores its spans column by column, bottom up, in spans[0, span_count);
     * later additions reuse freed slots, so then spans[] may hold free slots. */
    uint32_t *heads; /* width * depth: lowest span of each column or OP_NO_SPAN */
    op_hf_span *spans;
    uint32_t span_count; /* live spans (in columns) */
    uint32_t span_cap;   /* slots allocated in spans */
    uint32_t free_list;  /* recycled span slots (column rebuilds), OP_NO_SPAN if none */
    op_arena *arena;     /* where spans and fragments grow */
    /* Cell boundary lines (§1.1-§1.2): line k along x is line_origin[0] + (cell0[0] + k) * cs,
     * along z likewise with index 1. A plain heightfield has line_origin = origin's
     * x/z and cell0 = 0; a tile grid has line_origin = the grid origin and cell0 = its
     * global cell. */
    double line_origin[2];
    int64_t cell0[2];
    /* Fragments (§3.5). */
    op_hf_frag *frags;
    uint32_t frag_count, frag_cap;
    uint32_t *frag_heads; /* width * depth: first fragment of each column */
    uint32_t span_slots;  /* slots of spans ever used (live + free list) */
    uint32_t frag_first;  /* first fragment of the call in progress */
    int merge_threshold;  /* rows; -1 until the first fragment fixes it */
    /* Set by the first commit of fragments into an empty heightfield (every tile build),
     * NULL after any later one: column c's spans are spans[col_start[c], col_start[c+1]),
     * bottom up (each one's next is the following slot, the top's OP_NO_SPAN), and
     * col_start[width * depth] = span_count. The compaction then reads columns as arrays
     * (without it, it walks and checks the links). Code that edits spans by hand (other
     * than their areas) sets it to NULL. */
    uint32_t *col_start;
} op_heightfield;

/* Creates an empty heightfield in arena. Checks width/depth in [1, OP_MAX_GRID_SIDE],
 * rows in [1, OP_MAX_ROWS], cs and ch in [OP_MIN_CELL_SIZE, 2^21], origin finite and
 * within +-OP_MAX_ORIGIN (OP_ERANGE / OP_EINVAL naming the value). */
op_status op_heightfield_init(op_heightfield *hf, op_arena *arena, int width, int depth, int rows,
                              const double origin[3], double cs, double ch, op_err *err);

/* Makes hf's cell boundaries the world lines ox + (gx0 + x) * cs and oz + (gz0 + z) * cs
 * (tile grids with their grid origin, §1.1), so that neighbouring tiles clip against the
 * same lines. Call before any fragment is added. use_global_lines is the grid origin 0. */
void op_heightfield_use_grid_lines(op_heightfield *hf, double ox, double oz, int64_t gx0,
                                   int64_t gz0);
void op_heightfield_use_global_lines(op_heightfield *hf, int64_t gx0, int64_t gz0);

/* Adds a fragment [smin, smax) with area to column (x, z) and rebuilds the column
 * (§3.5): fragments that overlap or touch merge; the area rule uses merge_threshold,
 * which must be the same for every fragment of a heightfield (OP_EINVAL otherwise).
 * Range errors (OP_ERANGE) name the value. On any error hf is unchanged. */
op_status op_heightfield_add_span(op_heightfield *hf, int x, int z, int smin, int smax, int area,
                                  int merge_threshold, op_err *err);

/* Global index of the cell that holds coordinate v when line k is origin + k * cs:
 * the k with origin + k*cs <= v < origin + (k+1)*cs (double products, §1.2). */
int64_t op_cell_of(double v, double origin, double cs);

/* ---- classification and rasterization (§2, §3) ---- */

/* Writes one area per triangle: the soup's area (or 63) when the triangle passes
 * the walkable slope test (§2.1), else 0. areas_out has tris_len / 3 entries.
 * The soup must be valid (op_soup_validate). */
void op_classify_triangles(const op_soup *soup, float slope_cos, uint8_t *areas_out);

/* The walkable slope test of §2.1 (float32 normal, y > slope_cos). */
int op_triangle_walkable(const float *v0, const float *v1, const float *v2, float slope_cos);

/* MayBeWalkable (build3d-polys.md §1): len > 0 && ny >= (cos - 1e-3) * len, double cross product.
 */
int op_triangle_may_be_walkable(const float *v0, const float *v1, const float *v2, float slope_cos);

/* Rasterizes the triangles tris[0..3*ntris) (indices into verts, nverts vertices)
 * with per-triangle areas into hf (§3). Validates every triangle first (non-finite
 * coordinate OP_EINVAL, coordinate beyond +-2^21, index or area out of range OP_ERANGE,
 * each naming the triangle/vertex and value); on any error hf is unchanged. */
op_status op_rasterize(op_heightfield *hf, const float *verts, size_t nverts, const int *tris,
                       const uint8_t *areas, size_t ntris, int merge_threshold, op_err *err);

/* As op_rasterize for the soup triangles ids[0..n) (areas[i] belongs to ids[i]).
 * The soup must be valid. */
op_status op_rasterize_ids(op_heightfield *hf, const op_soup *soup, const uint32_t *ids, size_t n,
                           const uint8_t *areas, int merge_threshold, op_err *err);

/* Calls fn for every cell of hf's grid in which the triangle leaves a fragment
 * (§3.2-§3.3), in row-major order (z, then x), with the double y range of the
 * cell's point set (before rows, §3.4). For tests and tools; the rasterizer uses the same code. */
typedef void (*op_fragment_fn)(void *ctx, int x, int z, double ymin, double ymax);
void op_triangle_fragments(const op_heightfield *hf, const float *v0, const float *v1,
                           const float *v2, op_fragment_fn fn, void *ctx);

/* ---- filters (§4), in the order a build runs them ---- */
void op_filter_low_hanging(op_heightfield *hf, int walkable_climb);
void op_filter_ledges(op_heightfield *hf, int walkable_height, int walkable_climb);
void op_filter_low_height(op_heightfield *hf, int walkable_height);
/* The three in the §4 order. */
void op_filters_apply(op_heightfield *hf, int walkable_height, int walkable_climb);

/* ---- tiles (§1) ---- */

/* A soup's tile range (§1.4): tiles tx0..tx1 x tz0..tz1, inclusive. */
typedef struct op_tile_range {
    int tx0, tz0, tx1, tz1;
} op_tile_range;

/* The tile range of a valid soup; more than OP_MAX_TILES tiles: OP_ERANGE naming the count. */
op_status op_soup_tile_range(const op_soup *soup, const op_settings *s, op_tile_range *r,
                             op_err *err);

/* The tiles triangle t of a valid soup belongs to (§1.5), clamped to r; returns 0 when
 * the clamped rectangle is empty. */
int op_triangle_tiles(const op_soup *soup, size_t t, const op_tile_grid *g, const op_tile_range *r,
                      op_tile_range *out);

/* The triangles of tile (tx, tz), in input order (§1.5): *ids allocated in out. */
op_status op_tile_select(const op_soup *soup, const op_settings *s, const op_tile_range *r, int tx,
                         int tz, op_arena *out, uint32_t **ids, size_t *n, op_err *err);

/* The triangles of every tile of r in one pass: tile (tx, tz) has
 * ids[offsets[i] .. offsets[i+1]) with i = (tz - r->tz0) * (r->tx1 - r->tx0 + 1) + (tx - r->tx0),
 * in input order; the same lists as op_tile_select. Both arrays from out; temporaries
 * (16 bytes a triangle) from scratch, released before returning. */
op_status op_tile_buckets(const op_soup *soup, const op_settings *s, const op_tile_range *r,
                          op_arena *out, op_arena *scratch, uint32_t **offsets, uint32_t **ids,
                          op_err *err);

/* The heightfield of tile (tx, tz) of a soup, filtered (§1, §2, §3, §4): selection,
 * skip rule, y0 and rows, classification, rasterization, filters. When the tile is
 * skipped (§1.6) *skipped is 1 and hf is an empty heightfield of the tile's grid
 * (no spans, rows 1, y0 0). hf's memory comes from out, temporaries from scratch. */
op_status op_tile_heightfield_build(const op_soup *soup, const op_settings *s, int tx, int tz,
                                    op_arena *out, op_arena *scratch, op_heightfield *hf,
                                    int *skipped, op_err *err);

/* op_tile_heightfield_build for a soup already validated (and settings too) whose
 * tile selection ids[0..n) was already made (op_tile_select / op_tile_buckets): what
 * a full build calls per tile. */
op_status op_tile_heightfield_build_ids(const op_soup *soup, const op_settings *s, int tx, int tz,
                                        const uint32_t *ids, size_t n, op_arena *out,
                                        op_arena *scratch, op_heightfield *hf, int *skipped,
                                        op_err *err);

/* The same for heightfield input (§1.8) and voxel-chunk input (§1.9). Never skipped. */
op_status op_tile_heightfield_build_hf(const op_hf_input *in, const op_settings *s, int tx, int tz,
                                       op_arena *out, op_heightfield *hf, op_err *err);
op_status op_tile_heightfield_build_chunk(const op_voxel_chunk *in, const op_settings *s, int tx,
                                          int tz, op_arena *out, op_heightfield *hf, op_err *err);
/* The same for an input and settings already validated (op_level_create_hf / _chunk): what a
 * full build calls per tile, so that a tile costs its own columns, not a pass over the whole
 * input. */
op_status op_tile_heightfield_build_hf_valid(const op_hf_input *in, const op_settings *s, int tx,
                                             int tz, op_arena *out, op_heightfield *hf,
                                             op_err *err);
op_status op_tile_heightfield_build_chunk_valid(const op_voxel_chunk *in, const op_settings *s,
                                                int tx, int tz, op_arena *out, op_heightfield *hf,
                                                op_err *err);

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

/* ---- volumes (§6): areas and obstacles ---- */

typedef enum op_volume_kind {
    OP_VOLUME_BOX = 0,
    OP_VOLUME_CYLINDER = 1,
    OP_VOLUME_PRISM = 2,
} op_volume_kind;

/* Area volumes mark the spans inside them after erosion; obstacles take the spans under
 * them before erosion, which then widens them by the agent radius (§6.5-§6.6). */
typedef enum op_volume_mode {
    OP_VOLUME_AREA = 0,
    OP_VOLUME_OBSTACLE = 1,
} op_volume_mode;

#define OP_MAX_PRISM_VERTS 64
/* Bytes of a volume name (protocol.md §3.1 form; build3d-runtime.md §4.1). */
#define OP_MAX_VOLUME_NAME 64

typedef struct op_volume {
    /* NUL-terminated. A level's volumes need distinct valid names in ascending order
     * (rebuild.h, op_volumes_check); the span stage ignores names except in messages. */
    char name[OP_MAX_VOLUME_NAME + 1];
    op_volume_kind kind;
    op_volume_mode mode;
    int area; /* area id written, [0, 63]; obstacles usually 0 */
    /* box: bmin/bmax; cylinder: centre (x, z) in bmin[0], bmin[2], radius in bmax[0],
     * y range [bmin[1], bmax[1]]; prism: convex polygon pts (x, z pairs, counter-clockwise),
     * y range [bmin[1], bmax[1]]. */
    double bmin[3], bmax[3];
    int npts;
    double pts[OP_MAX_PRISM_VERTS * 2];
} op_volume;

/* §6.2: kind, mode, area, coordinates, shape. The name is not checked here. */
op_status op_volume_validate(const op_volume *v, op_err *err);
/* Validates every volume, then applies those of `mode` in array order (§6.5-§6.6): after
 * compaction for OP_VOLUME_OBSTACLE, after erosion for OP_VOLUME_AREA. A refused array
 * changes nothing. */
op_status op_volumes_apply(op_chf *chf, const op_volume *vols, int nvols, op_volume_mode mode,
                           op_err *err);

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

/* The distances below limit only: afterwards a span whose exact distance is below limit
 * holds it, every other span holds some value >= limit. Dijkstra from the boundary
 * stopped at level limit, so the cost grows with limit, not with the field (erosion asks
 * for limit 2 * radius). Scratch as op_distance_compute, plus the bucket queue. */
op_status op_distance_compute_below(const op_chf *chf, uint32_t *dist, uint32_t limit,
                                    op_arena *scratch, op_err *err);

/* ---- the whole stage for one tile ---- */

/* The span stage of tile (tx, tz) of a soup: op_tile_heightfield_build, then
 * compaction, obstacles, erosion, area volumes (each in array order) and distance (§1.10).
 * chf->border is the tile grid's border. A skipped tile (§1.6) gives a chf with span_count 0. */
op_status op_tile_spans_build(const op_soup *soup, const op_settings *s, int tx, int tz,
                              const op_volume *vols, int nvols, op_arena *out, op_arena *scratch,
                              op_chf *chf, op_err *err);

/* Canonical text dump of a heightfield / compact heightfield (one line per span). */
int op_heightfield_dump(const op_heightfield *hf, op_write_fn write, void *ctx);
int op_chf_dump(const op_chf *chf, op_write_fn write, void *ctx);

#endif
