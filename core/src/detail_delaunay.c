/*
 * Height detail, triangulation steps (build3d-polys.md §4): ear clipping of the hull
 * ring, Lawson flips to a locally Delaunay triangulation, and greedy refinement by
 * inserting the interior sample of largest height error.
 *
 * Input/output: op__dt (at most 255 vertices, 512 triangles). All decisions use the
 * exact predicates of predicates.c on the float32-derived positions, so the result is
 * the same on every machine. A directed-edge map (256 x 256 entries: 3 * t + k) gives
 * neighbours in O(1); it is cleared after each polygon.
 * Invariants: triangles are stored counter-clockwise as (tri[0], tri[1], tri[2]) with
 * edge k from tri[k] to tri[(k+1) % 3]; the edge map holds exactly the current
 * triangles' directed edges.
 * Typical sizes: polygons of 3-6 vertices, tens of extra vertices.
 */
#include <math.h>
#include <string.h>

#include "detail_internal.h"
#include "predicates.h"

static int orient(const op__dt *dt, int a, int b, int c)
{
    return op__orient2d(dt->x[a], dt->z[a], dt->x[b], dt->z[b], dt->x[c], dt->z[c]);
}

static int orient_pt(const op__dt *dt, int a, int b, double px, double pz)
{
    return op__orient2d(dt->x[a], dt->z[a], dt->x[b], dt->z[b], px, pz);
}

static uint16_t *edge_at(op__dt *dt, int a, int b)
{
    return &dt->edge[(size_t)a * 256u + (size_t)b];
}

static void edges_set(op__dt *dt, int t)
{
    for (int k = 0; k < 3; k++)
        *edge_at(dt, dt->tri[t][k], dt->tri[t][(k + 1) % 3]) = (uint16_t)(3 * t + k);
}

static void edges_unset(op__dt *dt, int t)
{
    for (int k = 0; k < 3; k++) {
        uint16_t *e = edge_at(dt, dt->tri[t][k], dt->tri[t][(k + 1) % 3]);
        if (*e == (uint16_t)(3 * t + k))
            *e = OP__DT_NONE;
    }
}

static void set_tri(op__dt *dt, int t, int a, int b, int c)
{
    dt->tri[t][0] = (uint8_t)a;
    dt->tri[t][1] = (uint8_t)b;
    dt->tri[t][2] = (uint8_t)c;
    edges_set(dt, t);
    dt->changed[t] = 1;
}

static void push(op__dt *dt, int a, int b)
{
    if (dt->nstack >= dt->stack_cap) {
        dt->overflow = 1;
        return;
    }
    dt->stack[dt->nstack][0] = (uint8_t)a;
    dt->stack[dt->nstack][1] = (uint8_t)b;
    dt->nstack++;
}

/* ---- ear clipping ---- */

/* No remaining ring vertex other than p, i, q lies in the closed triangle p, i, q. */
static int ear_empty(const op__dt *dt, const uint8_t *ring, const int *next, int p, int i, int q)
{
    for (int j = next[q]; j != p; j = next[j]) {
        int v = ring[j];
        if (orient(dt, ring[p], ring[i], v) >= 0 && orient(dt, ring[i], ring[q], v) >= 0 &&
            orient(dt, ring[q], ring[p], v) >= 0)
            return 0;
    }
    return 1;
}

/* First ear from head: strict (orientation > 0) or relaxed (>= 0); -1 if none. */
static int find_ear(const op__dt *dt, const uint8_t *ring, const int *prev, const int *next,
                    int head, int cnt, int strict)
{
    int i = head;
    for (int step = 0; step < cnt; step++, i = next[i]) {
        int o = orient(dt, ring[prev[i]], ring[i], ring[next[i]]);
        if ((strict ? o > 0 : o >= 0) && ear_empty(dt, ring, next, prev[i], i, next[i]))
            return i;
    }
    return -1;
}

static void add_tri(op__dt *dt, int a, int b, int c)
{
    dt->tri[dt->nt][0] = (uint8_t)a;
    dt->tri[dt->nt][1] = (uint8_t)b;
    dt->tri[dt->nt][2] = (uint8_t)c;
    dt->nt++;
}

static void ear_clip(op__dt *dt, const uint8_t *ring, int m)
{
    int prev[OP__DT_MAXV], next[OP__DT_MAXV];
    for (int i = 0; i < m; i++) {
        prev[i] = (i + m - 1) % m;
        next[i] = (i + 1) % m;
    }
    int head = 0, cnt = m;
    dt->nt = 0;
    while (cnt > 3) {
        int ear = find_ear(dt, ring, prev, next, head, cnt, 1);
        if (ear < 0)
            ear = find_ear(dt, ring, prev, next, head, cnt, 0);
        if (ear < 0)
            ear = head; /* forced */
        add_tri(dt, ring[prev[ear]], ring[ear], ring[next[ear]]);
        next[prev[ear]] = next[ear];
        prev[next[ear]] = prev[ear];
        if (ear == head)
            head = next[ear];
        cnt--;
    }
    if (cnt == 3)
        add_tri(dt, ring[prev[head]], ring[head], ring[next[head]]);
}

/* ---- Lawson flips ---- */

/* Third vertex of the triangle holding directed edge e = 3t + k. */
static int apex(const op__dt *dt, uint16_t e)
{
    return dt->tri[e / 3][(e % 3 + 2) % 3];
}

/* Flips edge a->b when the quad a, d, b, c is strictly convex and d lies strictly
 * inside the circle through a, b, c. */
static void legalize_edge(op__dt *dt, int a, int b)
{
    uint16_t e1 = *edge_at(dt, a, b), e2 = *edge_at(dt, b, a);
    if (e1 == OP__DT_NONE || e2 == OP__DT_NONE)
        return;
    int c = apex(dt, e1), d = apex(dt, e2);
    if (orient(dt, a, b, c) <= 0 || orient(dt, b, a, d) <= 0 || orient(dt, a, d, c) <= 0 ||
        orient(dt, b, c, d) <= 0)
        return;
    if (op__incircle(dt->x[a], dt->z[a], dt->x[b], dt->z[b], dt->x[c], dt->z[c], dt->x[d],
                     dt->z[d]) <= 0)
        return;
    int t1 = e1 / 3, t2 = e2 / 3;
    edges_unset(dt, t1);
    edges_unset(dt, t2);
    set_tri(dt, t1, a, d, c);
    set_tri(dt, t2, b, c, d);
    push(dt, a, d);
    push(dt, d, b);
    push(dt, b, c);
    push(dt, c, a);
}

static void legalize(op__dt *dt)
{
    while (dt->nstack > 0) {
        dt->nstack--;
        legalize_edge(dt, dt->stack[dt->nstack][0], dt->stack[dt->nstack][1]);
    }
}

void op__dt_hull(op__dt *dt, const uint8_t *ring, int m)
{
    ear_clip(dt, ring, m);
    for (int t = 0; t < dt->nt; t++)
        edges_set(dt, t);
    /* Every interior edge once (at its first triangle in triangle/edge order), LIFO. */
    dt->nstack = 0;
    for (int t = 0; t < dt->nt; t++)
        for (int k = 0; k < 3; k++) {
            int a = dt->tri[t][k], b = dt->tri[t][(k + 1) % 3];
            uint16_t o = *edge_at(dt, b, a);
            if (o != OP__DT_NONE && o / 3 > t)
                push(dt, a, b);
        }
    legalize(dt);
}

void op__dt_ready_rows(op__dt *dt)
{
    for (; dt->rows_ready < dt->nv; dt->rows_ready++)
        memset(&dt->edge[(size_t)dt->rows_ready * 256u], 0xff, 256 * sizeof *dt->edge);
}

void op__dt_clear(op__dt *dt)
{
    for (int t = 0; t < dt->nt; t++)
        for (int k = 0; k < 3; k++)
            *edge_at(dt, dt->tri[t][k], dt->tri[t][(k + 1) % 3]) = OP__DT_NONE;
}

/* ---- refinement ---- */

/* Height of the plane through triangle t at (px, pz), double. */
static double plane_height(const op__dt *dt, int t, double px, double pz)
{
    int a = dt->tri[t][0], b = dt->tri[t][1], c = dt->tri[t][2];
    double bx = dt->x[b] - dt->x[a], bz = dt->z[b] - dt->z[a];
    double cx = dt->x[c] - dt->x[a], cz = dt->z[c] - dt->z[a];
    double qx = px - dt->x[a], qz = pz - dt->z[a];
    double det = bx * cz - cx * bz;
    if (det == 0.0)
        return dt->y[a];
    double u = (qx * cz - cx * qz) / det;
    double v = (bx * qz - qx * bz) / det;
    return dt->y[a] + u * (dt->y[b] - dt->y[a]) + v * (dt->y[c] - dt->y[a]);
}

/* First triangle (by id) containing the point, boundary included; triangles of zero
 * area contain nothing. -1 if none. */
static int locate(const op__dt *dt, double px, double pz)
{
    for (int t = 0; t < dt->nt; t++) {
        int a = dt->tri[t][0], b = dt->tri[t][1], c = dt->tri[t][2];
        if (orient_pt(dt, a, b, px, pz) >= 0 && orient_pt(dt, b, c, px, pz) >= 0 &&
            orient_pt(dt, c, a, px, pz) >= 0 && orient(dt, a, b, c) > 0)
            return t;
    }
    return -1;
}

static void measure(const op__dt *dt, op__samples *s, int i)
{
    int t = locate(dt, s->x[i], s->z[i]);
    s->tri[i] = (int16_t)t;
    s->err[i] = t < 0 ? 0.0 : fabs(s->y[i] - plane_height(dt, t, s->x[i], s->z[i]));
}

static int add_vertex(op__dt *dt, const op__samples *s, int i)
{
    int v = dt->nv++;
    op__dt_ready_rows(dt);
    dt->x[v] = s->x[i];
    dt->y[v] = s->y[i];
    dt->z[v] = s->z[i];
    return v;
}

/* Splits interior edge k of triangle t (a->b, apex c; neighbour b->a with apex d) at
 * the new vertex. */
static void split_edge(op__dt *dt, const op__samples *s, int i, int t, int k)
{
    int a = dt->tri[t][k], b = dt->tri[t][(k + 1) % 3], c = dt->tri[t][(k + 2) % 3];
    uint16_t e2 = *edge_at(dt, b, a);
    int t2 = e2 / 3, d = apex(dt, e2);
    int p = add_vertex(dt, s, i);
    edges_unset(dt, t);
    edges_unset(dt, t2);
    int t3 = dt->nt, t4 = dt->nt + 1;
    dt->nt += 2;
    set_tri(dt, t, a, p, c);
    set_tri(dt, t3, p, b, c);
    set_tri(dt, t2, b, p, d);
    set_tri(dt, t4, p, a, d);
    push(dt, b, c);
    push(dt, c, a);
    push(dt, a, d);
    push(dt, d, b);
}

static void split_inside(op__dt *dt, const op__samples *s, int i, int t)
{
    int a = dt->tri[t][0], b = dt->tri[t][1], c = dt->tri[t][2];
    int p = add_vertex(dt, s, i);
    edges_unset(dt, t);
    int t3 = dt->nt, t4 = dt->nt + 1;
    dt->nt += 2;
    set_tri(dt, t, a, b, p);
    set_tri(dt, t3, b, c, p);
    set_tri(dt, t4, c, a, p);
    push(dt, a, b);
    push(dt, b, c);
    push(dt, c, a);
}

/* Inserts sample i (located in its triangle) and legalizes; returns 0 when dropped (on
 * a vertex or on a hull edge). */
static int insert(op__dt *dt, const op__samples *s, int i)
{
    int t = s->tri[i];
    int zero = 0, k = -1;
    for (int j = 0; j < 3; j++)
        if (orient_pt(dt, dt->tri[t][j], dt->tri[t][(j + 1) % 3], s->x[i], s->z[i]) == 0) {
            zero++;
            k = j;
        }
    if (zero >= 2 || dt->nt + 2 > OP__DT_MAXT)
        return 0;
    if (zero == 1) {
        if (*edge_at(dt, dt->tri[t][(k + 1) % 3], dt->tri[t][k]) == OP__DT_NONE)
            return 0;
        split_edge(dt, s, i, t, k);
    } else {
        split_inside(dt, s, i, t);
    }
    legalize(dt);
    return 1;
}

static int worst_sample(const op__samples *s)
{
    int best = -1;
    for (int i = 0; i < s->n; i++)
        if (s->tri[i] >= 0 && (best < 0 || s->err[i] > s->err[best]))
            best = i;
    return best;
}

void op__dt_refine(op__dt *dt, op__samples *s, double max_error)
{
    for (int i = 0; i < s->n; i++)
        measure(dt, s, i);
    while (dt->nv < OP__DT_MAXV) {
        int i = worst_sample(s);
        if (i < 0 || !(s->err[i] > max_error))
            break;
        for (int t = 0; t < dt->nt; t++)
            dt->changed[t] = 0;
        int done = insert(dt, s, i);
        s->tri[i] = -1;
        if (!done)
            continue;
        for (int j = 0; j < s->n; j++)
            if (s->tri[j] >= 0 && dt->changed[s->tri[j]])
                measure(dt, s, j);
    }
}
