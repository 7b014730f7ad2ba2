/*
 * Internal interface of the polygon stage (build3d-polys.md §3), shared by
 * polygonize.c (entry, welding), polys_earclip.c (straight walls, ear clipping),
 * polys_merge.c (Hertel–Mehlhorn merging) and polys_exact.c (exact float32
 * orientation). Not part of the public API.
 */
#ifndef OP_POLYS_INTERNAL_H
#define OP_POLYS_INTERNAL_H

#include <stdint.h>

#include "onepath/arena.h"
#include "onepath/polys.h"

#include "predicates.h"

/* Exact sign (-1, 0, 1) of the orientation of float32 points a, b, c (counter-clockwise
 * positive, x right, z up). Floats widen to double exactly; one exact predicate serves
 * the whole core (predicates.c). */
static inline int op__orient_f32(float ax, float az, float bx, float bz, float cx, float cz)
{
    return op__orient2d(ax, az, bx, bz, cx, cz);
}

/* Cross product (b - a) x (c - a) on cell coordinates; exact for |coordinates| < 2^30. */
static inline int64_t op__cross(int64_t ax, int64_t az, int64_t bx, int64_t bz, int64_t cx,
                                int64_t cz)
{
    return (bx - ax) * (cz - az) - (cx - ax) * (bz - az);
}

/* Straight wall vertices: writes the indices of the vertices of v[0..n) that survive
 * into keep (ascending) and returns their count. scratch holds 3n ints. */
int op__remove_straight_walls(const op_contour_vert *v, int n, int *keep, int *scratch);

/* A triangle of the ear clipper: ring positions and the neighbour value of its edges
 * (edge k from v[k] to v[k+1]; OP_EDGE_INTERNAL for diagonals). */
typedef struct op__tri {
    int v[3];
    int32_t nb[3];
} op__tri;

/* Ear-clips the ring of n >= 3 vertices (cells x[i], z[i]; float32 local fx[i], fz[i];
 * nb[i] = neighbour of the edge i -> i+1). Writes at most n - 2 triangles into tris and
 * their count into *ntris; adds the DegenerateEars count to *degenerate. */
op_status op__earclip(int n, const int32_t *x, const int32_t *z, const float *fx, const float *fz,
                      const int32_t *nb, op_arena *scratch, op__tri *tris, int *ntris,
                      int *degenerate, op_err *err);

/* The polygons of one contour while merging: n polygons of up to nvp vertex indices
 * (mesh vertices), nv[i] used slots, nb[i * nvp + k] the neighbour of edge k. */
typedef struct op__polyset {
    int n, nvp;
    int *v;
    int32_t *nb;
    int *nv;
} op__polyset;

/* Merges the polygons of ps in place (build3d-polys.md §3 Merging). verts are the mesh
 * vertices (x, row, z per vertex). */
op_status op__merge(op__polyset *ps, const int32_t *verts, const op_tile_frame *frame,
                    op_arena *scratch, op_err *err);

/* One base contour's polygons in contour-local form (docs/spec/build3d-runtime.md §5.12):
 * what a rebuild needs to copy them onto a contour of the same geometry. */
typedef struct op__poly_base_contour {
    const op_contour_vert *verts; /* the base contour's vertices (kept in the entry) */
    int nverts;                   /* 0: not recorded (never matches) */
    uint32_t hash;                /* of nverts and every (x, y, z) in order */
    int nk, kept_at;              /* kept vertices: keep[], weld_rep[], same_nb[] at kept_at */
    int npolys, polys_at;         /* poly_nv[polys_at ...], poly_v / poly_e at nvp times it */
    int degenerate;               /* its DegenerateEars */
} op__poly_base_contour;

/* The polygon stage of one build, by contour (§5.12). Arrays are the record's owner's. */
typedef struct op__poly_base {
    op_tile_frame frame;
    int nvp, count;
    op__poly_base_contour *contours;
    int *order;        /* contour indices by (hash, index) */
    int32_t *keep;     /* kept vertex j -> its contour vertex index */
    int32_t *weld_rep; /* smallest kept index welded to the same mesh vertex as j */
    int32_t *same_nb;  /* smallest kept index with the same neighbour value as j */
    uint8_t *poly_nv;
    int32_t *poly_v;      /* local kept indices (weld representatives), -1 in unused slots */
    int32_t *poly_e;      /* -1: OP_EDGE_INTERNAL, else a kept index whose neighbour value the edge
                             carries */
    size_t nkept, npolys; /* array lengths */
} op__poly_base;

/* op_polys_build, copying the polygons of every contour that meets §5.12 against base (NULL:
 * none); *reused (when not NULL) gets the number of contours copied. rec (when not NULL)
 * receives this build's record, arrays from rec_arena, verts pointing into cset. */
op_status op__polys_build_reuse(const op_contour_set *cset, const op_tile_frame *frame, int nvp,
                                const op__poly_base *base, int *reused, op__poly_base *rec,
                                op_arena *rec_arena, op_arena *out, op_arena *scratch,
                                op_poly_mesh *mesh, op_err *err);

#endif
