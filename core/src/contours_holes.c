/*
 * Contours, step 3: joining holes to outlines (build3d-regions.md §6 "Holes").
 *
 * Input: an outline (counter-clockwise) and its holes in join order (every loop has
 * its region on the left, so holes run clockwise). Output: one loop in which each
 * joined hole hangs off a bridge q -> p ... p -> q whose two edges have the region's
 * own id as neighbour.
 *
 * Candidate bridges from the hole's leftmost vertex p go to outline vertices q by
 * increasing squared distance (lowest index on ties); the first one inside both
 * interior cones that touches no edge (other than edges ending at p's or q's
 * position) of the outline, the hole or the holes still to join is taken.
 * All tests are exact 64-bit orientations. Cost per hole: O(m log m + E) when the
 * nearest candidate is accepted (m outline vertices, E edges), as Recast's merge.
 */
#include <string.h>

#include "contours_internal.h"

int op__leftmost(const op_contour_vert *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (op__cmp_xz(&v[i], &v[best]) < 0)
            best = i;
    return best;
}

static int on_segment(const op_contour_vert *a, const op_contour_vert *b, const op_contour_vert *p)
{
    /* p is collinear with a b (checked by the caller): inside the bounding box. */
    return ((p->x >= a->x && p->x <= b->x) || (p->x >= b->x && p->x <= a->x)) &&
           ((p->z >= a->z && p->z <= b->z) || (p->z >= b->z && p->z <= a->z));
}

int op__point_in_loop(const op_contour_vert *v, int n, const op_contour_vert *p)
{
    int wn = 0;
    for (int i = 0, j = n - 1; i < n; j = i++) {
        const op_contour_vert *a = &v[j], *b = &v[i];
        int64_t o = op__orient(a, b, p);
        if (o == 0 && on_segment(a, b, p))
            return 1;
        if (a->z <= p->z) {
            if (b->z > p->z && o > 0)
                wn++;
        } else if (b->z <= p->z && o < 0) {
            wn--;
        }
    }
    return wn != 0;
}

/* p strictly inside the interior cone at vertex i of loop v (interior on the left). */
static int in_cone(const op_contour_vert *v, int n, int i, const op_contour_vert *p)
{
    const op_contour_vert *u = &v[i == 0 ? n - 1 : i - 1], *c = &v[i],
                          *w = &v[i + 1 == n ? 0 : i + 1];
    int64_t a = op__orient(u, c, p), b = op__orient(c, w, p);
    if (op__orient(u, c, w) >= 0)
        return a > 0 && b > 0;
    return !(a <= 0 && b <= 0);
}

static int sgn(int64_t v)
{
    return (v > 0) - (v < 0);
}

/* Closed segments a b and c d share a point. */
static int touches(const op_contour_vert *a, const op_contour_vert *b, const op_contour_vert *c,
                   const op_contour_vert *d)
{
    int o1 = sgn(op__orient(a, b, c)), o2 = sgn(op__orient(a, b, d));
    int o3 = sgn(op__orient(c, d, a)), o4 = sgn(op__orient(c, d, b));
    if (o1 * o2 < 0 && o3 * o4 < 0)
        return 1;
    return (o1 == 0 && on_segment(a, b, c)) || (o2 == 0 && on_segment(a, b, d)) ||
           (o3 == 0 && on_segment(c, d, a)) || (o4 == 0 && on_segment(c, d, b));
}

/* The bridge p q touches no edge of ring r except edges with an end at p or q. */
static int ring_clear(const op_contour_vert *v, int n, const op_contour_vert *p,
                      const op_contour_vert *q)
{
    int32_t x0 = p->x < q->x ? p->x : q->x, x1 = p->x < q->x ? q->x : p->x;
    int32_t z0 = p->z < q->z ? p->z : q->z, z1 = p->z < q->z ? q->z : p->z;
    for (int i = 0, j = n - 1; i < n; j = i++) {
        const op_contour_vert *a = &v[j], *b = &v[i];
        if ((a->x < x0 && b->x < x0) || (a->x > x1 && b->x > x1) || (a->z < z0 && b->z < z0) ||
            (a->z > z1 && b->z > z1))
            continue;
        if (op__same_xz(a, p) || op__same_xz(b, p) || op__same_xz(a, q) || op__same_xz(b, q))
            continue;
        if (touches(p, q, a, b))
            return 0;
    }
    return 1;
}

typedef struct candidate {
    int64_t d2;
    int i;
} candidate;

static int cand_before(const candidate *a, const candidate *b)
{
    return a->d2 < b->d2 || (a->d2 == b->d2 && a->i < b->i);
}

/* Binary min-heap on (d2, index): candidates come out in the order they are tried, and
 * the usual case (the nearest is accepted) costs O(m) instead of a full sort. */
static void sift_down(candidate *h, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cand_before(&h[l], &h[m]))
            m = l;
        if (r < n && cand_before(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        candidate t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* The outline vertex to bridge hole h's vertex pi to, or -1. Candidates come off the
 * heap by distance; the cone tests run only on those popped. */
static int find_bridge(const op_contour_vert *dst, int m, const op__ring *holes, int h, int nh,
                       int pi, candidate *cand)
{
    const op__ring hole = holes[h];
    const op_contour_vert *p = &hole.v[pi];
    for (int i = 0; i < m; i++) {
        int64_t dx = (int64_t)dst[i].x - p->x, dz = (int64_t)dst[i].z - p->z;
        cand[i] = (candidate){dx * dx + dz * dz, i};
    }
    int nc = m;
    for (int i = nc / 2 - 1; i >= 0; i--)
        sift_down(cand, nc, i);
    while (nc > 0) {
        int qi = cand[0].i;
        const op_contour_vert *q = &dst[qi];
        int ok =
            in_cone(hole.v, hole.n, pi, q) && in_cone(dst, m, qi, p) && ring_clear(dst, m, p, q);
        for (int k = h; ok && k < nh; k++)
            ok = ring_clear(holes[k].v, holes[k].n, p, q);
        if (ok)
            return qi;
        cand[0] = cand[--nc];
        sift_down(cand, nc, 0);
    }
    return -1;
}

/* Splices hole (from pi round to pi again) after dst[qi]: q, p ... p, q. */
static int splice(op_contour_vert *dst, int m, int qi, op__ring hole, int pi, int region)
{
    int add = hole.n + 2;
    memmove(&dst[qi + 1 + add], &dst[qi + 1], (size_t)(m - qi - 1) * sizeof *dst);
    op_contour_vert q = dst[qi];
    dst[qi].neighbour = region;
    for (int k = 0; k <= hole.n; k++)
        dst[qi + 1 + k] = hole.v[(pi + k) % hole.n];
    dst[qi + 1 + hole.n].neighbour = region;
    dst[qi + 2 + hole.n] = q;
    return m + add;
}

op_status op__join_holes(op__ring outline, const op__ring *holes, int nh, int region,
                         op_contour_vert *dst, int *ndst, int *joined, op_arena *scratch,
                         op_err *err)
{
    size_t cap = (size_t)outline.n + 2 * (size_t)nh;
    for (int h = 0; h < nh; h++)
        cap += (size_t)holes[h].n;
    op_arena_mark mark = op_arena_get_mark(scratch);
    candidate *cand = op_arena_alloc(scratch, cap * sizeof *cand);
    if (!cand)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (%zu bridge candidates)", cap);
    memcpy(dst, outline.v, (size_t)outline.n * sizeof *dst);
    int m = outline.n;
    *joined = 0;
    for (int h = 0; h < nh; h++) {
        int pi = op__leftmost(holes[h].v, holes[h].n);
        int qi = find_bridge(dst, m, holes, h, nh, pi, cand);
        if (qi < 0)
            continue;
        m = splice(dst, m, qi, holes[h], pi, region);
        (*joined)++;
    }
    op_arena_release(scratch, mark);
    *ndst = m;
    return OP_OK;
}
