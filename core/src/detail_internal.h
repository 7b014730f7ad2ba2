/*
 * Height detail internals shared by detail.c (entry, output), detail_samples.c
 * (NearestRow, edge points, interior samples) and detail_delaunay.c (hull
 * triangulation, Lawson flips, refinement). build3d-polys.md §4.
 */
#ifndef OP_DETAIL_INTERNAL_H
#define OP_DETAIL_INTERNAL_H

#include <stdint.h>

#include "onepath/detail.h"

#define OP__DT_MAXV           255 /* vertices of one detail mesh (uint8 indices) */
#define OP__DT_MAXT           512 /* triangles: h + 2i - 2 <= 2 * 255 - 5 for h >= 3 hull vertices */
#define OP__DT_NONE           0xffffu
#define OP__DT_MAX_STEPS      4096  /* edges needing more steps get no edge points */
#define OP__EDGE_CACHE_POINTS 16384 /* kept edge points cached in one tile build */

/* Lawson stack entries. The stack starts small (real polygons push a few hundred entries)
 * so that a tile's scratch stays compact; a polygon that overflows it is built again from
 * the start with OP__DT_STACK_CAP entries, far above any real need. */
#define OP__DT_STACK_START 4096
#define OP__DT_STACK_CAP   (1 << 19)

/* One polygon's triangulation workspace. Vertex ids are local: polygon vertices
 * 0..npoly-1, then extras in creation order. Positions are float32 tile-local values
 * widened to double (x, y, z). */
typedef struct op__dt {
    int nv, npoly;
    double x[OP__DT_MAXV], y[OP__DT_MAXV], z[OP__DT_MAXV];
    int nt;
    uint8_t tri[OP__DT_MAXT][3]; /* counter-clockwise vertex ids; edge k = tri[k] -> tri[k+1] */
    uint16_t *edge;              /* 256 * 256: directed edge a->b -> 3 * t + k, or NONE */
    int rows_ready;              /* edge rows [0, rows_ready) are initialised (lazily) */
    uint8_t (*stack)[2];         /* Lawson LIFO stack of directed edges */
    int nstack, stack_cap;
    uint8_t changed[OP__DT_MAXT]; /* triangles touched by the current insertion */
    int overflow;                 /* stack overflow met (reported as OP_ELIMIT) */
} op__dt;

/* Interior samples of one polygon (positions float32-derived, like vertices). */
typedef struct op__samples {
    int n;
    double *x, *y, *z;
    double *err;
    int16_t *tri; /* containing triangle, or -1 when dead (inserted, dropped, not located) */
} op__samples;

/* NearestRow(x, z, expected, region) in cells; region < 0 = any. Returns 1 and the row
 * when found. */
int op__detail_nearest_row(const op_chf *chf, const uint16_t *reg, double x, double z,
                           double expected, int region, int climb, int *row);

/* Edge-point context: scratch for one edge walk (OP__DT_MAX_STEPS + 1 entries each). */
typedef struct op__edge_work {
    double *x, *z, *row;
    uint8_t *keep;
    int (*stack)[2];
    /* The kept points of the edges walked so far in the tile, by the edge's vertex ids, so
     * that an edge two computed polygons share is walked once (a walk depends on the edge's
     * end positions only). ckey NULL: no cache. A slot's key is (lo << 32 | hi) + 1 for
     * vertex ids lo < hi, 0 when empty; its points are cpts[3 * cfirst ..] (x, row, z) in
     * walk order, ccount of them. cpts holds ccap points. */
    uint64_t *ckey;
    /* op__detail_edge_steps of the ring's polygon's edges, computed once when the tile's
     * workspace was sized; NULL: computed by the walk. */
    const int32_t *psteps;
    int32_t *cfirst, *ccount;
    uint32_t cmask;
    double *cpts;
    size_t cused, ccap;
} op__edge_work;

/* Steps of the edge walk along polygon edge k (its points are 0..steps), or 0 when the
 * edge gets no edge points (not longer than sd, or over OP__DT_MAX_STEPS steps). */
int op__detail_edge_steps(const op_poly_mesh *mesh, int p, int k, int nverts, double sd);

/* Builds the hull ring of polygon p into dt (vertices) and ring (local ids, ring order).
 * with_points = 0: the polygon vertices only. Returns the ring length. */
int op__detail_ring(const op_poly_mesh *mesh, int p, int nverts, const op_chf *chf,
                    const uint16_t *reg, const op_detail_settings *ds, double sd, int min_row,
                    int with_points, op__edge_work *w, op__dt *dt, uint8_t *ring);

/* Upper bound of interior samples of polygon p. */
int op__detail_sample_bound(const op_poly_mesh *mesh, int p, int nverts, double sd);
/* Fills s (arrays sized by op__detail_sample_bound) with the interior samples. */
void op__detail_samples(const op_poly_mesh *mesh, int p, int nverts, const op_chf *chf,
                        const uint16_t *reg, const op_detail_settings *ds, double sd, int min_row,
                        op__samples *s);

/* build3d-runtime.md §5.6 rule 3: at every interior sample point of polygon p (the points
 * op__detail_samples keeps, before their height lookup), every span of the cells
 * op__detail_nearest_row visits has p's region in reg exactly when it has base_region in
 * base_reg. 1 when they all agree (always with detail off, sd <= 0.9: no samples). */
int op__detail_samples_same_membership(const op_poly_mesh *mesh, int p, int nverts,
                                       const op_chf *chf, const uint16_t *reg,
                                       const uint16_t *base_reg, int base_region, double sd);

/* Ear-clips ring (m local ids) into dt's triangles, fills the edge map, and makes every
 * interior edge locally Delaunay. */
void op__dt_hull(op__dt *dt, const uint8_t *ring, int m);
/* Inserts samples until MaxError or 255 vertices. */
void op__dt_refine(op__dt *dt, op__samples *s, double max_error);
/* Clears dt's edge map entries (for the next polygon). */
void op__dt_clear(op__dt *dt);

/* Initialises the edge map rows of vertices [rows_ready, nv) to none. The map is used
 * only by vertices < nv, and op__dt_clear leaves initialised rows all none, so a tile
 * touches only as many 512-byte rows as its largest polygon has vertices, not 128 KiB. */
void op__dt_ready_rows(op__dt *dt);

/* Lawson stack sizes of one detail build, and what the build did with them. op_detail_build
 * uses {OP__DT_STACK_START, OP__DT_STACK_CAP}; tests pass small sizes to reach the rebuild
 * after an overflow and the OP_ELIMIT of an overflow at the cap. */
typedef struct op__detail_stack {
    int start;    /* entries of the first stack, >= 0 */
    int cap;      /* entries of the stack an overflowing polygon is built again with, >= start */
    int rebuilds; /* out: polygons built again after an overflow (0 or 1: the wide stack stays) */
} op__detail_stack;

/* op_detail_build with the given stack sizes (start < 0 or cap < start: OP_EINVAL); a
 * polygon that overflows cap entries is OP_ELIMIT naming it. stack->rebuilds is set. */
op_status op__detail_build_stack(const op_poly_mesh *mesh, const op_chf *chf,
                                 const op_regions *regs, const op_detail_settings *ds, int min_row,
                                 op__detail_stack *stack, op_arena *out, op_arena *scratch,
                                 op_detail_mesh *dm, op_err *err);

/* What one detail build read and produced, kept in a rebuild entry so that a rebuild can
 * copy a polygon's detail instead of computing it (docs/spec/build3d-runtime.md §5.6).
 * Every pointer is the entry's. */
typedef struct op__detail_base {
    const uint32_t *cells; /* the field the base sampled: a rebuild's chf holds these very */
    const uint16_t *y;     /* arrays (rule 1 compares the pointers) */
    int width, depth;
    uint32_t span_count;
    const uint16_t *reg; /* span_count region ids after the border cut */
    op_poly_mesh mesh;   /* verts, polys, regs, nverts, npolys, nvp, frame (other fields 0) */
    op_detail_mesh detail;
    int min_row;
    op_detail_settings ds;
} op__detail_base;

/* op_detail_build, copying the base's detail of every polygon that meets §5.6 rules 1-3
 * (base NULL: none); *reused (when not NULL) gets the number of copied polygons.
 * kept_from (NULL: none): for each region id 0 .. regs->region_count, the base region whose
 * span set it has (§5.11, op__regions_layers_local), else 0; a polygon of such a region
 * meets rule 3 against a base polygon of that base region without the scan (rule 3a). */
op_status op__detail_build_reuse(const op_poly_mesh *mesh, const op_chf *chf,
                                 const op_regions *regs, const op_detail_settings *ds, int min_row,
                                 const op__detail_base *base, const uint16_t *kept_from,
                                 int *reused, op_arena *out, op_arena *scratch, op_detail_mesh *dm,
                                 op_err *err);

#endif
