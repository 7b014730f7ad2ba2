/*
 * Contours, private: the steps of op_contours_build shared between contours.c
 * (entry, output), contours_trace.c, contours_simplify.c and contours_holes.c.
 * Loops are arrays of op_contour_vert; a vertex's neighbour describes the edge to
 * the next vertex; every loop has its region on the left (x right, z up).
 */
#ifndef ONEPATH_CONTOURS_INTERNAL_H
#define ONEPATH_CONTOURS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "onepath/contours.h"

/* All raw loops of a field in trace order: loop i is verts[start[i] .. start[i + 1]). */
typedef struct op__loops {
    op_contour_vert *verts;
    size_t *start; /* count + 1 entries */
    int *region;
    int count;
} op__loops;

/* §6 Tracing. verts come from verts_arena (out when the caller keeps raw loops),
 * the index arrays from scratch. cs (may be NULL: every span, no seams) selects the
 * layer view of op_contour_settings. */
op_status op__contours_trace(const op_chf *chf, const op_regions *regs,
                             const op_contour_settings *cs, op_arena *verts_arena,
                             op_arena *scratch, op__loops *res, op_err *err);

/* The marks of op__contours_trace in the whole field's view (cs without a layer view) on every
 * span: bits d and d + 4 when link d is missing or leads to another region, none without a
 * region. Returns the boundary edges marked. */
size_t op__contours_mark_whole(const op_chf *chf, const uint16_t *reg, uint8_t *mask);

/* One pass over the spans for a reuse plan: the span of a region r with cand[r] gets no marks
 * and appends, for each of its links to a span t of another region, breg[t] << 16 | reg[t] at
 * pairs[fill[r]++] (the links across r, §5.7 rule 3); every other span gets its marks as
 * op__contours_trace's. Returns the boundary edges marked. */
size_t op__contours_mark_pairs(const op_chf *chf, const uint16_t *reg, const uint16_t *breg,
                               const uint8_t *cand, uint8_t *mask, uint32_t *pairs, size_t *fill);

/* The marks of op__contours_trace on every span whose region r has neither skip[r] nor r = 0
 * (those get none, and their links are not read). Returns the boundary edges marked. */
size_t op__contours_mark_except(const op_chf *chf, const uint16_t *reg, const uint8_t *skip,
                                uint8_t *mask);

/* The links across each region of reg (ids 0..region_count, §5.7 rule 3): for region b
 * (1..region_count), across[first[b] .. first[b + 1]) are the spans t = links[s][d], in order
 * of s then d, of every link from a span s of b to a span of another id. Arrays from out
 * (first: region_count + 3 entries). */
op_status op__contours_across(const op_chf *chf, const uint16_t *reg, int region_count,
                              op_arena *out, uint32_t **first, uint32_t **across, op_err *err);

/* Marks the spans of the regions r with which[r] (candidates that did not copy after all).
 * Returns their boundary edges. */
size_t op__contours_mark_regions(const op_chf *chf, const uint16_t *reg, const uint8_t *which,
                                 uint8_t *mask);

/* op__contours_trace of the whole field (cs without a layer view) on marks made already, leaving
 * out the loops of every region r with skip[r] != 0: mask holds every span's marks but the
 * skipped regions' (none), total the boundary edges marked, skipped the skipped regions' spans.
 * The other loops are those op__contours_trace gives, in the same order. */
op_status op__contours_trace_marked(const op_chf *chf, const op_regions *regs, const uint8_t *skip,
                                    uint8_t *mask, size_t total, size_t skipped,
                                    op_arena *verts_arena, op_arena *scratch, op__loops *res,
                                    op_err *err);

/* Simplified stretches of a capture's contour stage, kept in a rebuild entry
 * (docs/spec/build3d-runtime.md §5.13; contours_stretch.c has the layout). Read only. */
typedef struct op__stretch_set {
    double e2;     /* MaxError squared of the pass that refined them */
    int64_t edge2; /* MaxEdgeLength squared (0: no split) */
    int count;
    uint32_t mask;
    const uint32_t *hash, *first, *kfirst, *kept;
    const int32_t *slot;
    const uint16_t *pts;
    const uint8_t *wall;
} op__stretch_set;

/* A capture's record of the stretches it refined (arrays sized by op__stretch_rec_init). */
typedef struct op__stretch_rec {
    double e2;
    int64_t edge2;
    int count;
    size_t cap;
    uint32_t *hash, *first, *kfirst, *kept;
    uint8_t *wall;
    uint16_t *pts;
} op__stretch_rec;

/* Stretches shorter than this (b - a, in raw vertices) are neither recorded nor looked up:
 * their refinement costs about what the lookup would. */
#define OP__STRETCH_MIN 4

/* Room for the stretches of loops of raw_verts vertices in all, from arena. */
op_status op__stretch_rec_init(op__stretch_rec *r, size_t raw_verts, double e2, int64_t edge2,
                               op_arena *arena, op_err *err);
/* Records stretch a -> b (b unwrapped, b - a >= OP__STRETCH_MIN) of loop v (n vertices) with
 * its wall flag and the keep flags its refinement left (indexed mod n). */
void op__stretch_rec_add(op__stretch_rec *r, const op_contour_vert *v, int n, int a, int b,
                         int wall, const uint8_t *keep);
/* Bytes op__stretch_pack needs (alignment included). */
size_t op__stretch_bytes(const op__stretch_rec *r);
/* Lays r out in mem (op__stretch_bytes(r) bytes) and returns the set there. */
const op__stretch_set *op__stretch_pack(const op__stretch_rec *r, void *mem);
/* §5.13: when s holds stretch a -> b of loop v with the same points, wall flag and pass
 * settings (e2, edge2), sets keep[] over its inner vertices as its refinement did and
 * returns 1; else 0 (keep untouched). */
int op__stretch_find(const op__stretch_set *s, double e2, int64_t edge2, const op_contour_vert *v,
                     int n, int a, int b, int wall, uint8_t *keep);

/* One contour build's result by region, kept in a rebuild entry so that a rebuild can copy
 * the contours of a region the edit provably left alone (docs/spec/build3d-runtime.md §5.7).
 * Every pointer is the entry's. */
typedef struct op__contour_base {
    const uint32_t *cells; /* the field traced: a rebuild's chf holds these very arrays */
    const uint16_t *y;
    const uint32_t (*links)[4];
    uint32_t span_count;
    const uint16_t *reg; /* region per span (after the border cut), each <= region_count */
    int region_count;    /* ids 1..region_count, the border band's included */
    const uint8_t *region_area;
    double max_error;
    int max_edge_length, straight_region_borders, border_region;
    const op_contour *contours;   /* every contour (border region's too), by region, verts here */
    const int *first;             /* region_count + 2: region b's contours [first[b], first[b+1]) */
    const int *fallbacks;         /* region_count + 1: RawFallbacks counted for region b */
    const int *dropped;           /* region_count + 1: DroppedHoles counted for region b */
    const uint32_t *spans;        /* region_count + 1: the spans of id b in reg (0 too), or NULL */
    const uint32_t *across_first; /* op__contours_across of reg (with spans), or NULL */
    const uint32_t *across;
    const op__stretch_set *stretches; /* §5.13, or NULL */
} op__contour_base;

/* The regions of a build whose contours are the base's (§5.7), from scratch. */
typedef struct op__contour_plan {
    uint8_t *skip;  /* region_count + 1: 1 when region r is copied */
    int *from;      /* region_count + 1: the base region r copies */
    int32_t **nbr;  /* region_count + 1: for a copied region r, the neighbour values of its
                       base contours' vertices renamed by g_r (§5.7), in the base's order */
    int count;      /* regions copied */
    uint8_t *mask;  /* with count > 0: the trace's marks of every span not copied */
    size_t edges;   /* their boundary edges */
    size_t skipped; /* the copied regions' spans */
    int checked;    /* 1: every span's id was found at most region_count (the input check) */
} op__contour_plan;

/* Decides which regions copy their contours (contours_reuse.c); count 0 when none or when
 * base does not fit (another field, other settings, a layer view, keep_raw). checked 1 when
 * its pass over the spans found every id of regs at most region_count (0: not known, the
 * caller checks). */
op_status op__contour_plan_make(const op_chf *chf, const op_regions *regs,
                                const op_contour_settings *cs, const op__contour_base *base,
                                op_arena *scratch, op__contour_plan *plan, op_err *err);

/* What a contour build counted per region (op__contours_build_reuse's record). */
typedef struct op__contour_record {
    int *first;     /* region_count + 2 */
    int *fallbacks; /* region_count + 1 */
    int *dropped;   /* region_count + 1 */
    /* In: when want_stretches, the build records its refined stretches (§5.13) in stretches
     * (arrays from out). */
    int want_stretches;
    op__stretch_rec stretches;
    int *stretches_reused; /* in: when not NULL, counts the stretches copied (§5.13) */
} op__contour_record;

/* op_contours_build, copying (with its neighbour values renamed) the contours of every region
 * that meets §5.7 (base NULL: none; only without a layer view and keep_raw); *reused (when
 * not NULL) gets the number of regions copied. rec (when not NULL) receives the per-region
 * counts, arrays from out. */
op_status op__contours_build_reuse(const op_chf *chf, const op_regions *regs,
                                   const op_contour_settings *cs, const op__contour_base *base,
                                   int *reused, op__contour_record *rec, op_arena *out,
                                   op_arena *scratch, op_contour_set *res, op_err *err);

/* Exact orientation of c against a -> b: > 0 when c is left of (counter-clockwise from) it. */
static inline int64_t op__orient(const op_contour_vert *a, const op_contour_vert *b,
                                 const op_contour_vert *c)
{
    return ((int64_t)b->x - a->x) * ((int64_t)c->z - a->z) -
           ((int64_t)b->z - a->z) * ((int64_t)c->x - a->x);
}

static inline int op__same_xz(const op_contour_vert *a, const op_contour_vert *b)
{
    return a->x == b->x && a->z == b->z;
}

/* Lexicographic (x, z) order: < 0, 0, > 0. */
static inline int op__cmp_xz(const op_contour_vert *a, const op_contour_vert *b)
{
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    if (a->z != b->z)
        return a->z < b->z ? -1 : 1;
    return 0;
}

/* Twice the signed area (shoelace), positive for counter-clockwise loops. */
int64_t op__loop_area2(const op_contour_vert *v, int n);

/* Sets *crosses when two edges of the loop cross properly (strictly inside both). */
op_status op__loop_crosses(const op_contour_vert *v, int n, op_arena *scratch, int *crosses,
                           op_err *err);

/* What simplification needs besides the loop. stretches (rebuilds) and rec (captures) may
 * be NULL; reused (when not NULL) counts the stretches taken from stretches. */
typedef struct op__simplify_ctx {
    const op_contour_settings *cs;
    const op_regions *regs;
    op_arena *scratch;
    op_err *err;
    const op__stretch_set *stretches;
    op__stretch_rec *rec;
    int *reused;
} op__simplify_ctx;

/* §6 simplification of one raw loop of region `region` (steps 1-3 with both fallbacks).
 * Writes at most n vertices to out; *nout gets the count, *fallback 1 when the raw loop
 * had to be used (RawFallbacks). */
op_status op__simplify_loop(const op__simplify_ctx *ctx, const op_contour_vert *raw, int n,
                            int64_t raw_area2, int region, op_contour_vert *out, int *nout,
                            int *fallback);

/* A loop given by pointer and length. */
typedef struct op__ring {
    const op_contour_vert *v;
    int n;
} op__ring;

/* Index of the leftmost vertex (smallest x, then z, then index). */
int op__leftmost(const op_contour_vert *v, int n);

/* Nonzero winding or on the boundary. */
int op__point_in_loop(const op_contour_vert *v, int n, const op_contour_vert *p);

/* §6 Holes: joins holes[0..nh) (already in join order) into outline, writing the merged
 * loop to dst (capacity outline.n + sum of hole lengths + 2 * nh). *ndst gets its length,
 * *joined how many holes were joined (the others are dropped: no bridge). */
op_status op__join_holes(op__ring outline, const op__ring *holes, int nh, int region,
                         op_contour_vert *dst, int *ndst, int *joined, op_arena *scratch,
                         op_err *err);

#endif
