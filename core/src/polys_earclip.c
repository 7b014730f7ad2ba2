/*
 * Polygons (build3d-polys.md §3): straight wall vertex removal and ear clipping of
 * one contour.
 *
 * Input: a contour's vertices (cells, counter-clockwise, x right / z up, region on
 * the left; neighbour = value of the edge to the next vertex). Output: the kept
 * vertices, then triangles (ring positions + edge neighbour values).
 *
 * Ear clipping follows O'Rourke (Computational Geometry in C, ch. 1) with exact
 * long orientation on cells: a vertex i (ring neighbours p, q) is a valid ear when
 * cross(p, i, q) > 0 and (p, q) is a diagonal (in the cone at p and at q, touched by
 * no ring edge without an endpoint at p's or q's position). The shortest squared
 * diagonal is clipped, ties to the lowest vertex index. Ear state is cached per
 * vertex; after a clip the spec retests the two neighbours and the blocked ears. A
 * blocked ear can only become valid when what blocked it changed, so this file
 * records why each ear is blocked (the start of the first blocking edge, or its
 * cone) and retests exactly the blocked ears whose blocking edge was removed or
 * whose cone changed: the same result as retesting every blocked ear, without the
 * O(n^3) cost. Typical contours have 4–100 vertices; raw fallbacks a few thousand.
 */
#include <string.h>

#include "polys_internal.h"

/* ---- straight wall vertices ---- */

/* Whether kept vertex i (ring neighbours p, q) is a straight wall vertex. */
static int straight_wall(const op_contour_vert *v, int p, int i, int q)
{
    if (v[p].neighbour != 0 || v[i].neighbour != 0)
        return 0;
    int64_t ex = v[q].x - v[p].x, ez = v[q].z - v[p].z;
    int64_t dx = v[i].x - v[p].x, dz = v[i].z - v[p].z;
    if (ex * dz - ez * dx != 0)
        return 0;
    /* Same direction: i strictly between p and q. */
    if (dx * (v[q].x - v[i].x) + dz * (v[q].z - v[i].z) <= 0)
        return 0;
    int64_t d = ex * ex + ez * ez;
    int64_t t = ex * dx + ez * dz;
    int64_t dev = (int64_t)(v[i].y - v[p].y) * d - (int64_t)(v[q].y - v[p].y) * t;
    return (dev < 0 ? -dev : dev) <= d;
}

int op__remove_straight_walls(const op_contour_vert *v, int n, int *keep, int *scratch)
{
    int *prev = scratch, *next = scratch + n, *alive = scratch + 2 * n;
    for (int i = 0; i < n; i++) {
        prev[i] = (i + n - 1) % n;
        next[i] = (i + 1) % n;
        alive[i] = 1;
    }
    /* Repeatedly remove the lowest-index removable vertex. A removal changes only the
     * status of its two neighbours, so the scan resumes at the lowest of them. */
    int count = n;
    int i = 0;
    while (i < n && count > 3) {
        if (!alive[i] || !straight_wall(v, prev[i], i, next[i])) {
            i++;
            continue;
        }
        int p = prev[i], q = next[i];
        next[p] = q;
        prev[q] = p;
        alive[i] = 0;
        count--;
        int resume = i + 1;
        if (p < resume && count > 3 && straight_wall(v, prev[p], p, next[p]))
            resume = p;
        if (q < resume && count > 3 && straight_wall(v, prev[q], q, next[q]))
            resume = q;
        i = resume;
    }
    int nk = 0;
    for (int k = 0; k < n; k++)
        if (alive[k])
            keep[nk++] = k;
    return nk;
}

/* ---- ear clipping ---- */

enum {
    EAR_VALID = -1,  /* convex and (p, q) a diagonal */
    EAR_REFLEX = -2, /* cross(p, i, q) <= 0: changes only with i's neighbours */
    EAR_CONE = -3,   /* (p, q) outside the cone at p or q */
    EAR_DEAD = -4    /* clipped */
    /* >= 0: blocked by the ring edge starting at that vertex */
};

typedef struct ring {
    int n;
    const int32_t *x, *z;
    int *prev, *next;
} ring;

static int64_t cross_r(const ring *r, int a, int b, int c)
{
    return op__cross(r->x[a], r->z[a], r->x[b], r->z[b], r->x[c], r->z[c]);
}

static int same_pos(const ring *r, int a, int b)
{
    return r->x[a] == r->x[b] && r->z[a] == r->z[b];
}

/* c lies on the closed segment a b (both coordinate ranges, so that a zero-length
 * segment holds only its own point). */
static int between(const ring *r, int a, int b, int c)
{
    if (cross_r(r, a, b, c) != 0)
        return 0;
    int32_t x0 = r->x[a] < r->x[b] ? r->x[a] : r->x[b], x1 = r->x[a] ^ r->x[b] ^ x0;
    int32_t z0 = r->z[a] < r->z[b] ? r->z[a] : r->z[b], z1 = r->z[a] ^ r->z[b] ^ z0;
    return x0 <= r->x[c] && r->x[c] <= x1 && z0 <= r->z[c] && r->z[c] <= z1;
}

/* Segments a b and c d cross properly or an endpoint of one lies on the other. */
static int intersect(const ring *r, int a, int b, int c, int d)
{
    int64_t abc = cross_r(r, a, b, c), abd = cross_r(r, a, b, d);
    int64_t cda = cross_r(r, c, d, a), cdb = cross_r(r, c, d, b);
    if (abc != 0 && abd != 0 && cda != 0 && cdb != 0)
        return ((abc > 0) != (abd > 0)) && ((cda > 0) != (cdb > 0));
    return between(r, a, b, c) || between(r, a, b, d) || between(r, c, d, a) || between(r, c, d, b);
}

/* b lies in the cone at a formed by a's ring neighbours (O'Rourke's InCone). */
static int in_cone(const ring *r, int a, int b)
{
    int a0 = r->prev[a], a1 = r->next[a];
    if (cross_r(r, a, a1, a0) >= 0) /* convex at a */
        return cross_r(r, a, b, a0) > 0 && cross_r(r, b, a, a1) > 0;
    return !(cross_r(r, a, b, a1) >= 0 && cross_r(r, b, a, a0) >= 0);
}

/* EAR_VALID if (a, b) is a diagonal of the current ring, EAR_CONE, or the start of
 * the first ring edge (from a) that touches it. A zero-length (a, b) (a spike of the
 * ring: the two neighbours of a vertex at one position, left over where a contour
 * touches itself) has no direction to test against a cone; it is a diagonal unless an
 * edge passes through the point. Only the degenerate fallback can meet it, since a
 * spike has cross 0 (see the test pinch_corner_is_one_vertex). */
static int diagonal(const ring *r, int a, int b)
{
    if (!same_pos(r, a, b) && (!in_cone(r, a, b) || !in_cone(r, b, a)))
        return EAR_CONE;
    /* Two closed segments meet only where their closed boxes do: an edge whose box misses
     * the diagonal's cannot touch it, and skipping it leaves the first edge that does. */
    const int32_t *x = r->x, *z = r->z;
    int32_t x0 = x[a] < x[b] ? x[a] : x[b], x1 = x[a] ^ x[b] ^ x0;
    int32_t z0 = z[a] < z[b] ? z[a] : z[b], z1 = z[a] ^ z[b] ^ z0;
    int c = a;
    int32_t xc = x[c], zc = z[c];
    do {
        int c1 = r->next[c];
        int32_t xn = x[c1], zn = z[c1];
        /* Both ends below x0 is the larger end below it (and so on): min and max compile to
         * conditional moves, so the box test takes no branch (the && pairs took one per
         * pair, taken as the ring's shape goes: a fifth of them mispredicted). */
        int32_t ex0 = xc < xn ? xc : xn, ex1 = xc < xn ? xn : xc;
        int32_t ez0 = zc < zn ? zc : zn, ez1 = zc < zn ? zn : zc;
        int miss = (ex1 < x0) | (ex0 > x1) | (ez1 < z0) | (ez0 > z1);
        if (!miss && !same_pos(r, c, a) && !same_pos(r, c, b) && !same_pos(r, c1, a) &&
            !same_pos(r, c1, b) && intersect(r, a, b, c, c1))
            return c;
        c = c1;
        xc = xn;
        zc = zn;
    } while (c != a);
    return EAR_VALID;
}

static int ear_state(const ring *r, int i)
{
    int p = r->prev[i], q = r->next[i];
    if (cross_r(r, p, i, q) <= 0)
        return EAR_REFLEX;
    return diagonal(r, p, q);
}

static int64_t diag_len2(const ring *r, int i)
{
    int p = r->prev[i], q = r->next[i];
    int64_t dx = (int64_t)r->x[q] - r->x[p], dz = (int64_t)r->z[q] - r->z[p];
    return dx * dx + dz * dz;
}

/* The valid ear with the shortest diagonal (lowest index on ties), or -1. */
static int best_ear(const ring *r, const int *st)
{
    int best = -1;
    int64_t best_d2 = 0;
    for (int i = 0; i < r->n; i++) {
        if (st[i] != EAR_VALID)
            continue;
        int64_t d2 = diag_len2(r, i);
        if (best < 0 || d2 < best_d2) {
            best = i;
            best_d2 = d2;
        }
    }
    return best;
}

/* No valid ear: the first vertex from head with cross >= 0 and a diagonal, else head. */
static int degenerate_ear(const ring *r, int head, int alive)
{
    int i = head;
    for (int k = 0; k < alive; k++, i = r->next[i]) {
        int p = r->prev[i], q = r->next[i];
        if (cross_r(r, p, i, q) >= 0 && diagonal(r, p, q) == EAR_VALID)
            return i;
    }
    return head;
}

/* After clipping c (former neighbours p, q): retest p and q, and the blocked ears
 * whose blocking edge (p -> c or c -> q) is gone or whose cone (at p or q) changed. */
static void update_states(const ring *r, int *st, int c, int p, int q)
{
    int pp = r->prev[p], nq = r->next[q];
    for (int j = 0; j < r->n; j++) {
        int s = st[j];
        if (j == p || j == q)
            st[j] = ear_state(r, j);
        else if (s == c || s == p || (s == EAR_CONE && (j == pp || j == nq)))
            st[j] = ear_state(r, j);
    }
}

/* Triangle (a, b, c) with edge values nb[a], nb[b], nc, if its float32 orientation is
 * positive. */
static void emit(const float *fx, const float *fz, const int32_t *nb, int a, int b, int c,
                 int32_t nc, op__tri *tris, int *ntris)
{
    if (op__orient_f32(fx[a], fz[a], fx[b], fz[b], fx[c], fz[c]) <= 0)
        return;
    op__tri *t = &tris[(*ntris)++];
    t->v[0] = a;
    t->v[1] = b;
    t->v[2] = c;
    t->nb[0] = nb[a];
    t->nb[1] = nb[b];
    t->nb[2] = nc;
}

op_status op__earclip(int n, const int32_t *x, const int32_t *z, const float *fx, const float *fz,
                      const int32_t *nb_in, op_arena *scratch, op__tri *tris, int *ntris,
                      int *degenerate, op_err *err)
{
    size_t bytes = (size_t)n * (4 * sizeof(int) + sizeof(int32_t));
    int *mem = op_arena_alloc(scratch, bytes);
    if (!mem)
        return op_err_set(err, OP_ENOMEM, "polys: ear clipping needs %zu bytes", bytes);
    ring r = {n, x, z, mem, mem + n};
    int *st = mem + 2 * n;
    int32_t *nb = (int32_t *)(mem + 3 * n);
    for (int i = 0; i < n; i++) {
        r.prev[i] = (i + n - 1) % n;
        r.next[i] = (i + 1) % n;
        nb[i] = nb_in[i];
    }
    for (int i = 0; i < n; i++)
        st[i] = ear_state(&r, i);
    *ntris = 0;
    int head = 0, alive = n;
    while (alive > 3) {
        int c = best_ear(&r, st);
        if (c < 0) {
            c = degenerate_ear(&r, head, alive);
            (*degenerate)++;
        }
        int p = r.prev[c], q = r.next[c];
        emit(fx, fz, nb, p, c, q, OP_EDGE_INTERNAL, tris, ntris);
        r.next[p] = q;
        r.prev[q] = p;
        nb[p] = OP_EDGE_INTERNAL;
        st[c] = EAR_DEAD;
        alive--;
        head = q; /* O'Rourke: the head moves to the clipped vertex's successor */
        if (alive > 3)
            update_states(&r, st, c, p, q);
    }
    int a = head, b = r.next[a], c = r.next[b];
    emit(fx, fz, nb, a, b, c, nb[c], tris, ntris);
    return OP_OK;
}
