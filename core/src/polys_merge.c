/*
 * Polygons (build3d-polys.md §3 Merging, Hertel & Mehlhorn 1983): merge the
 * triangles of one contour into convex polygons of at most nvp vertices.
 *
 * Input/output: an op__polyset (mesh vertex indices and edge neighbour values),
 * merged in place; polygon order is kept (a merged polygon stays at A's slot, B's slot
 * dies, and the live slots are moved up in order at the end).
 * Each round takes the longest shared edge whose merge is valid, the first in (A, A's
 * edge, B, B's edge) order on ties. The candidates live in a heap kept across rounds
 * (merge_rounds says why that gives the round's choice) over a hash table of the live
 * polygons' directed edges: O(E log E) for a contour of E edges.
 * Validity: joints turn left or straight in cells (long cross products) and in
 * float32 tile-local positions (exact orientation), no repeated vertex; a joint
 * that is collinear in cells between two wall edges is removed instead (the turns
 * at its neighbours must then be >= 0 in float32).
 */
#include <string.h>

#include "onepath/limits.h"
#include "polys_internal.h"

/* Directed edges of the live polygons, chained per hash bucket of (from, to). A
 * polygon's entries are killed when it changes or goes; the new polygon's are appended,
 * and the table is built again from the live polygons when it is full (live edges never
 * exceed the first count: a merge removes at least two). */
typedef struct edge_table {
    int mask, n, cap;
    int *head;     /* mask + 1 buckets */
    int *next;     /* per entry */
    int *poly, *k; /* per entry: polygon slot and edge index, poly -1 once killed */
    int *ent;      /* per polygon slot and edge: its entry */
} edge_table;

typedef struct merge_ctx {
    op__polyset *ps;
    const int32_t *verts;
    const op_tile_frame *frame;
} merge_ctx;

static uint32_t edge_hash(int a, int b)
{
    return (uint32_t)a * 0x9e3779b1u ^ (uint32_t)b * 0x85ebca6bu;
}

static int pv(const op__polyset *ps, int p, int k)
{
    return ps->v[p * ps->nvp + k];
}

static int pv_next(const op__polyset *ps, int p, int k)
{
    return ps->v[p * ps->nvp + (k + 1 < ps->nv[p] ? k + 1 : 0)];
}

static void table_add_poly(edge_table *t, const op__polyset *ps, int p)
{
    for (int k = 0; k < ps->nv[p]; k++) {
        int e = t->n++;
        uint32_t h = edge_hash(pv(ps, p, k), pv_next(ps, p, k)) & (uint32_t)t->mask;
        t->poly[e] = p;
        t->k[e] = k;
        t->next[e] = t->head[h];
        t->head[h] = e;
        t->ent[p * ps->nvp + k] = e;
    }
}

static void table_kill_poly(edge_table *t, const op__polyset *ps, int p)
{
    for (int k = 0; k < ps->nv[p]; k++)
        t->poly[t->ent[p * ps->nvp + k]] = -1;
}

static void table_fill(edge_table *t, const op__polyset *ps, const uint8_t *alive)
{
    for (int b = 0; b <= t->mask; b++)
        t->head[b] = -1;
    t->n = 0;
    for (int p = 0; p < ps->n; p++)
        if (alive[p])
            table_add_poly(t, ps, p);
}

static int64_t vcross(const merge_ctx *m, int a, int b, int c)
{
    const int32_t *v = m->verts;
    return op__cross(v[3 * a], v[3 * a + 2], v[3 * b], v[3 * b + 2], v[3 * c], v[3 * c + 2]);
}

static int64_t vdot(const merge_ctx *m, int a, int b, int c)
{
    const int32_t *v = m->verts;
    return (int64_t)(v[3 * b] - v[3 * a]) * (v[3 * c] - v[3 * b]) +
           (int64_t)(v[3 * b + 2] - v[3 * a + 2]) * (v[3 * c + 2] - v[3 * b + 2]);
}

static int vorient_f32(const merge_ctx *m, int a, int b, int c)
{
    const int32_t *v = m->verts;
    const op_tile_frame *f = m->frame;
    return op__orient_f32(op_tile_local(f, v[3 * a]), op_tile_local(f, v[3 * a + 2]),
                          op_tile_local(f, v[3 * b]), op_tile_local(f, v[3 * b + 2]),
                          op_tile_local(f, v[3 * c]), op_tile_local(f, v[3 * c + 2]));
}

/* A merged ring: vertices and edge neighbour values, 'gone' marks removed joints. */
typedef struct mring {
    int n;
    int v[2 * OP_MAX_VERTS_PER_POLY];
    int32_t nb[2 * OP_MAX_VERTS_PER_POLY];
    int gone[2 * OP_MAX_VERTS_PER_POLY];
} mring;

/* A rotated to start at b and end at a, then B's vertices after a up to before b. */
static void ring_join(const op__polyset *ps, int pa, int ka, int pb, int kb, mring *r)
{
    int na = ps->nv[pa], nb = ps->nv[pb];
    const int *va = &ps->v[pa * ps->nvp], *vb = &ps->v[pb * ps->nvp];
    const int32_t *ea = &ps->nb[pa * ps->nvp], *eb = &ps->nb[pb * ps->nvp];
    r->n = 0;
    for (int i = 0; i < na; i++) {
        int j = (ka + 1 + i) % na;
        r->v[r->n] = va[j];
        r->nb[r->n] = ea[j];
        r->gone[r->n++] = 0;
    }
    r->nb[na - 1] = eb[(kb + 1) % nb]; /* a -> w is B's edge */
    for (int i = 2; i < nb; i++) {
        int j = (kb + i) % nb;
        r->v[r->n] = vb[j];
        r->nb[r->n] = eb[j];
        r->gone[r->n++] = 0;
    }
}

/* Cell test at the joint at position i: 0 right turn, 1 keep, 2 remove (wall-collinear). */
static int joint_cells(const merge_ctx *m, const mring *r, int i)
{
    int ip = (i + r->n - 1) % r->n, in = (i + 1) % r->n;
    int64_t c = vcross(m, r->v[ip], r->v[i], r->v[in]);
    if (c < 0)
        return 0;
    if (c == 0 && r->nb[ip] == 0 && r->nb[i] == 0 && vdot(m, r->v[ip], r->v[i], r->v[in]) > 0)
        return 2;
    return 1;
}

static int live_step(const mring *r, int i, int dir)
{
    do
        i = (i + r->n + dir) % r->n;
    while (r->gone[i]);
    return i;
}

/* Float32 turn at live position i of the ring (removed joints skipped) is >= 0. */
static int turn_ok_f32(const merge_ctx *m, const mring *r, int i)
{
    int ip = live_step(r, i, -1), in = live_step(r, i, 1);
    return vorient_f32(m, r->v[ip], r->v[i], r->v[in]) >= 0;
}

/* Validity of joining A's edge ka with B's edge kb (build3d-polys.md §3); on success
 * r holds the merged ring with removed joints marked. */
static int merge_valid(const merge_ctx *m, int pa, int ka, int pb, int kb, mring *r)
{
    ring_join(m->ps, pa, ka, pb, kb, r);
    for (int i = 0; i < r->n; i++)
        for (int j = i + 1; j < r->n; j++)
            if (r->v[i] == r->v[j])
                return 0;
    const int joint[2] = {0, m->ps->nv[pa] - 1}; /* b, a */
    int kind[2];
    for (int k = 0; k < 2; k++) {
        kind[k] = joint_cells(m, r, joint[k]);
        if (kind[k] == 0)
            return 0;
    }
    int live = r->n;
    for (int k = 0; k < 2; k++)
        if (kind[k] == 2) {
            r->gone[joint[k]] = 1;
            live--;
        }
    if (live < 3)
        return 0;
    for (int k = 0; k < 2; k++) {
        if (kind[k] == 1 && !turn_ok_f32(m, r, joint[k]))
            return 0;
        if (kind[k] == 2 && (!turn_ok_f32(m, r, live_step(r, joint[k], -1)) ||
                             !turn_ok_f32(m, r, live_step(r, joint[k], 1))))
            return 0;
    }
    return 1;
}

static int64_t edge_len2(const merge_ctx *m, int a, int b)
{
    const int32_t *v = m->verts;
    int64_t dx = v[3 * b] - v[3 * a], dz = v[3 * b + 2] - v[3 * a + 2];
    return dx * dx + dz * dz;
}

/* A candidate merge: A's edge ka against B's reverse edge kb, slots A < B, taken when
 * the two polygons had versions va and vb (a polygon's version moves when it changes). */
typedef struct cand {
    int64_t len2;
    int pa, ka, pb, kb;
    uint32_t va, vb;
} cand;

/* The order a round's search meets candidates in: the longest edge first, then A's
 * index, A's edge, B's index, B's edge (the chain order of the reverse edge). Slots keep
 * the polygons' relative order (a merge keeps A's place and only removes B). */
static int cand_before(const cand *x, const cand *y)
{
    if (x->len2 != y->len2)
        return x->len2 > y->len2;
    if (x->pa != y->pa)
        return x->pa < y->pa;
    if (x->ka != y->ka)
        return x->ka < y->ka;
    if (x->pb != y->pb)
        return x->pb < y->pb;
    return x->kb < y->kb;
}

typedef struct cand_heap {
    cand *c;
    int n, cap;
} cand_heap;

static void sift_down(cand_heap *h, int i, cand x)
{
    for (;;) {
        int l = 2 * i + 1, m = i;
        const cand *best = &x;
        if (l < h->n && cand_before(&h->c[l], best))
            m = l, best = &h->c[l];
        if (l + 1 < h->n && cand_before(&h->c[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        h->c[i] = h->c[m];
        i = m;
    }
    h->c[i] = x;
}

static cand heap_pop(cand_heap *h)
{
    cand top = h->c[0], last = h->c[--h->n];
    if (h->n > 0)
        sift_down(h, 0, last);
    return top;
}

typedef struct merge_state {
    merge_ctx m;
    edge_table t;
    cand_heap h;
    uint8_t *alive;
    uint32_t *ver;
    op_arena *scratch;
} merge_state;

static int stale(const merge_state *s, const cand *c)
{
    return !s->alive[c->pa] || !s->alive[c->pb] || s->ver[c->pa] != c->va || s->ver[c->pb] != c->vb;
}

/* A full heap first drops its stale candidates (and is heapified again); it grows only
 * when more than half of it is live. */
static op_status heap_push(merge_state *s, const cand *x, op_err *err)
{
    cand_heap *h = &s->h;
    if (h->n == h->cap) {
        int n = 0;
        for (int i = 0; i < h->n; i++)
            if (!stale(s, &h->c[i]))
                h->c[n++] = h->c[i];
        h->n = n;
        for (int i = n / 2 - 1; i >= 0; i--)
            sift_down(h, i, h->c[i]);
        if (2 * n > h->cap) {
            int cap = h->cap * 2;
            cand *c = op_arena_alloc(s->scratch, (size_t)cap * sizeof *c);
            if (!c)
                return op_err_set(err, OP_ENOMEM, "polys: merging needs %zu bytes of candidates",
                                  (size_t)cap * sizeof *c);
            memcpy(c, h->c, (size_t)n * sizeof *c);
            h->c = c;
            h->cap = cap;
        }
    }
    int i = h->n++;
    while (i > 0 && cand_before(x, &h->c[(i - 1) / 2])) {
        h->c[i] = h->c[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->c[i] = *x;
    return OP_OK;
}

/* The candidates of polygon p's edges against the live polygons holding their reverse
 * (only those after p with later_only: the first fill takes each pair from its A). */
static op_status add_cands(merge_state *s, int p, int later_only, op_err *err)
{
    const op__polyset *ps = s->m.ps;
    const edge_table *t = &s->t;
    for (int k = 0; k < ps->nv[p]; k++) {
        int a = pv(ps, p, k), b = pv_next(ps, p, k);
        int64_t len2 = edge_len2(&s->m, a, b);
        for (int e = t->head[edge_hash(b, a) & (uint32_t)t->mask]; e >= 0; e = t->next[e]) {
            int q = t->poly[e];
            if (q < 0 || q == p || (later_only && q < p) || pv(ps, q, t->k[e]) != b ||
                pv_next(ps, q, t->k[e]) != a)
                continue;
            cand c = p < q ? (cand){len2, p, k, q, t->k[e], s->ver[p], s->ver[q]}
                           : (cand){len2, q, t->k[e], p, k, s->ver[q], s->ver[p]};
            op_status st = heap_push(s, &c, err);
            if (st != OP_OK)
                return st;
        }
    }
    return OP_OK;
}

/* Writes the merged ring into A's slot (removed joints left out). */
static void write_ring(op__polyset *ps, int pa, const mring *r)
{
    int nvp = ps->nvp, k = 0;
    int *v = &ps->v[pa * nvp];
    int32_t *nb = &ps->nb[pa * nvp];
    /* A removed joint's incoming edge is a wall (neighbour 0), so the edge that now
     * spans it keeps the value 0 of its start vertex. */
    for (int i = 0; i < r->n; i++) {
        if (r->gone[i])
            continue;
        v[k] = r->v[i];
        nb[k++] = r->nb[i];
    }
    ps->nv[pa] = k;
    for (int i = k; i < nvp; i++) {
        v[i] = -1;
        nb[i] = OP_EDGE_INTERNAL;
    }
}

/* The live polygons moved up over the removed ones, in order. */
static void compact(op__polyset *ps, const uint8_t *alive)
{
    int nvp = ps->nvp, k = 0;
    for (int p = 0; p < ps->n; p++) {
        if (!alive[p])
            continue;
        if (k != p) {
            memcpy(&ps->v[k * nvp], &ps->v[p * nvp], (size_t)nvp * sizeof(int));
            memcpy(&ps->nb[k * nvp], &ps->nb[p * nvp], (size_t)nvp * sizeof(int32_t));
            ps->nv[k] = ps->nv[p];
        }
        k++;
    }
    ps->n = k;
}

/* The rounds of build3d-polys.md §3 (each takes the longest valid merge, first found in
 * A index, A edge, B order on ties), with the candidates kept in a heap across rounds
 * instead of searched afresh: a merge changes only A and B, so every other candidate
 * keeps its key and its validity (merge_valid reads the two rings alone). A popped
 * candidate whose polygons changed since it was taken is stale and dropped (the changed
 * A's candidates were pushed anew); one that is invalid stays invalid until one of its
 * polygons changes, so it is dropped too. The first valid one popped is therefore the
 * round's merge. O(E log E) for E edges instead of O(E) a round. */
static op_status merge_rounds(merge_state *s, op_err *err)
{
    op__polyset *ps = s->m.ps;
    op_status st = OP_OK;
    for (int p = 0; p < ps->n && st == OP_OK; p++)
        st = add_cands(s, p, 1, err);
    mring r;
    while (st == OP_OK && s->h.n > 0) {
        cand c = heap_pop(&s->h);
        if (stale(s, &c))
            continue;
        if (ps->nv[c.pa] + ps->nv[c.pb] - 2 > ps->nvp ||
            !merge_valid(&s->m, c.pa, c.ka, c.pb, c.kb, &r))
            continue;
        table_kill_poly(&s->t, ps, c.pa);
        table_kill_poly(&s->t, ps, c.pb);
        write_ring(ps, c.pa, &r);
        s->alive[c.pb] = 0;
        s->ver[c.pa]++;
        if (s->t.n + ps->nvp > s->t.cap)
            table_fill(&s->t, ps, s->alive);
        else
            table_add_poly(&s->t, ps, c.pa);
        st = add_cands(s, c.pa, 0, err);
    }
    return st;
}

op_status op__merge(op__polyset *ps, const int32_t *verts, const op_tile_frame *frame,
                    op_arena *scratch, op_err *err)
{
    if (ps->n < 2 || ps->nvp <= 3)
        return OP_OK;
    int ne = 0;
    for (int p = 0; p < ps->n; p++)
        ne += ps->nv[p];
    merge_state s;
    memset(&s, 0, sizeof s);
    s.m = (merge_ctx){ps, verts, frame};
    edge_table *t = &s.t;
    t->mask = 1;
    while (t->mask + 1 < 2 * ne)
        t->mask = 2 * t->mask + 1;
    /* room for the live edges (at most ne) and half as many appended before a refill: a
     * refill, O(ne), comes at most every ne / (2 nvp) merges */
    t->cap = ne + ne / 2 + ps->nvp;
    size_t nslot = (size_t)ps->n * (size_t)ps->nvp;
    size_t bytes = ((size_t)t->mask + 1 + 3 * (size_t)t->cap + nslot) * sizeof(int) +
                   (size_t)ps->n * (sizeof(uint32_t) + 1);
    int *mem = op_arena_alloc(scratch, bytes);
    s.h.cap = 16; /* grows by halves of live candidates (heap_push) */
    s.h.c = op_arena_alloc(scratch, (size_t)s.h.cap * sizeof *s.h.c);
    s.scratch = scratch;
    if (!mem || !s.h.c)
        return op_err_set(err, OP_ENOMEM, "polys: merging needs %zu bytes",
                          bytes + (size_t)s.h.cap * sizeof *s.h.c);
    t->head = mem;
    t->next = t->head + t->mask + 1;
    t->poly = t->next + t->cap;
    t->k = t->poly + t->cap;
    t->ent = t->k + t->cap;
    s.ver = (uint32_t *)(t->ent + nslot);
    s.alive = (uint8_t *)(s.ver + ps->n);
    for (int p = 0; p < ps->n; p++) {
        s.ver[p] = 0;
        s.alive[p] = 1;
    }
    table_fill(t, ps, s.alive);
    op_status st = merge_rounds(&s, err);
    if (st == OP_OK)
        compact(ps, s.alive);
    return st;
}
