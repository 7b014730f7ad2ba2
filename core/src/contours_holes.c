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
 * All tests are exact 64-bit orientations. Cost per hole: O(m + E) when the
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

/* Bounding box of a loop: x0, z0, x1, z1. */
typedef struct box {
    int32_t x0, z0, x1, z1;
} box;

static box box_of(op__ring r)
{
    box b = {r.v[0].x, r.v[0].z, r.v[0].x, r.v[0].z};
    for (int i = 1; i < r.n; i++) {
        b.x0 = r.v[i].x < b.x0 ? r.v[i].x : b.x0;
        b.z0 = r.v[i].z < b.z0 ? r.v[i].z : b.z0;
        b.x1 = r.v[i].x > b.x1 ? r.v[i].x : b.x1;
        b.z1 = r.v[i].z > b.z1 ? r.v[i].z : b.z1;
    }
    return b;
}

/* Holes whose box misses the bridge's box cannot touch it. */
static int box_misses(const box *b, const op_contour_vert *p, const op_contour_vert *q)
{
    return (p->x < b->x0 && q->x < b->x0) || (p->x > b->x1 && q->x > b->x1) ||
           (p->z < b->z0 && q->z < b->z0) || (p->z > b->z1 && q->z > b->z1);
}

/* Whether the bridge from hole h's vertex pi to dst[qi] is accepted. */
static int bridge_ok(const op_contour_vert *dst, int m, const op__ring *holes, const box *boxes,
                     int h, int nh, int pi, int qi)
{
    const op_contour_vert *p = &holes[h].v[pi], *q = &dst[qi];
    if (!in_cone(holes[h].v, holes[h].n, pi, q) || !in_cone(dst, m, qi, p) ||
        !ring_clear(dst, m, p, q))
        return 0;
    for (int k = h; k < nh; k++)
        if (!box_misses(&boxes[k], p, q) && !ring_clear(holes[k].v, holes[k].n, p, q))
            return 0;
    return 1;
}

/* The outline vertex to bridge hole h's vertex pi to, or -1. Candidates are tried by
 * (squared distance, index): the nearest alone first (usually accepted), then the rest
 * off a heap. */
static int find_bridge(const op_contour_vert *dst, int m, const op__ring *holes, const box *boxes,
                       int h, int nh, int pi, candidate *cand)
{
    const op_contour_vert *p = &holes[h].v[pi];
    int nearest = -1;
    for (int i = 0; i < m; i++) {
        int64_t dx = (int64_t)dst[i].x - p->x, dz = (int64_t)dst[i].z - p->z;
        cand[i] = (candidate){dx * dx + dz * dz, i};
        if (nearest < 0 || cand[i].d2 < cand[nearest].d2)
            nearest = i;
    }
    if (nearest < 0 || bridge_ok(dst, m, holes, boxes, h, nh, pi, nearest))
        return nearest;
    int nc = m;
    cand[nearest] = cand[--nc];
    for (int i = nc / 2 - 1; i >= 0; i--)
        sift_down(cand, nc, i);
    while (nc > 0) {
        int qi = cand[0].i;
        if (bridge_ok(dst, m, holes, boxes, h, nh, pi, qi))
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
    box *boxes = op_arena_alloc(scratch, (size_t)nh * sizeof *boxes + 1);
    if (!cand || !boxes)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (%zu bridge candidates)", cap);
    for (int h = 0; h < nh; h++)
        boxes[h] = box_of(holes[h]);
    memcpy(dst, outline.v, (size_t)outline.n * sizeof *dst);
    int m = outline.n;
    *joined = 0;
    for (int h = 0; h < nh; h++) {
        int pi = op__leftmost(holes[h].v, holes[h].n);
        int qi = find_bridge(dst, m, holes, boxes, h, nh, pi, cand);
        if (qi < 0)
            continue;
        m = splice(dst, m, qi, holes[h], pi, region);
        (*joined)++;
    }
    op_arena_release(scratch, mark);
    *ndst = m;
    return OP_OK;
}
