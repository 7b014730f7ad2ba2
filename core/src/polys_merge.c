/*
 * Polygons (build3d-polys.md §3 Merging, Hertel & Mehlhorn 1983): merge the
 * triangles of one contour into convex polygons of at most nvp vertices.
 *
 * Input/output: an op__polyset (mesh vertex indices and edge neighbour values),
 * merged in place; polygon order is kept (a merged polygon stays at A's index, B is
 * removed and the polygons after it move up by one).
 * Each round builds a table of directed edges, then scans A, A's edges, and the
 * polygons B > A holding the reverse edge (ascending); the longest shared edge whose
 * merge is valid wins, the first found on ties. A round is O(E) plus O(nvp) per
 * candidate that could still win, and there are fewer rounds than triangles.
 * Validity: joints turn left or straight in cells (long cross products) and in
 * float32 tile-local positions (exact orientation), no repeated vertex; a joint
 * that is collinear in cells between two wall edges is removed instead (the turns
 * at its neighbours must then be >= 0 in float32).
 */
#include <string.h>

#include "onepath/limits.h"
#include "polys_internal.h"

typedef struct edge_table {
    int mask;
    int *head; /* mask + 1 buckets */
    int *next; /* per entry */
    int *poly, *edge;
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

/* Entries are pushed in descending (poly, edge) order, so each chain ascends. */
static void table_build(edge_table *t, const op__polyset *ps)
{
    for (int b = 0; b <= t->mask; b++)
        t->head[b] = -1;
    int e = 0;
    for (int p = ps->n - 1; p >= 0; p--) {
        for (int k = ps->nv[p] - 1; k >= 0; k--, e++) {
            int a = pv(ps, p, k), b = pv(ps, p, (k + 1) % ps->nv[p]);
            uint32_t h = edge_hash(a, b) & (uint32_t)t->mask;
            t->poly[e] = p;
            t->edge[e] = k;
            t->next[e] = t->head[h];
            t->head[h] = e;
        }
    }
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

typedef struct best_merge {
    int pa, pb;
    int64_t len2;
    mring ring;
} best_merge;

/* One round: the longest valid merge, first found on ties; 0 if there is none. */
static int find_best(const merge_ctx *m, const edge_table *t, best_merge *best)
{
    const op__polyset *ps = m->ps;
    mring r;
    best->pa = -1;
    for (int pa = 0; pa < ps->n; pa++) {
        for (int ka = 0; ka < ps->nv[pa]; ka++) {
            int a = pv(ps, pa, ka), b = pv(ps, pa, (ka + 1) % ps->nv[pa]);
            int64_t len2 = edge_len2(m, a, b);
            if (best->pa >= 0 && len2 <= best->len2)
                continue;
            for (int e = t->head[edge_hash(b, a) & (uint32_t)t->mask]; e >= 0; e = t->next[e]) {
                int pb = t->poly[e], kb = t->edge[e];
                if (pb <= pa || ps->nv[pa] + ps->nv[pb] - 2 > ps->nvp)
                    continue;
                if (pv(ps, pb, kb) != b || pv(ps, pb, (kb + 1) % ps->nv[pb]) != a)
                    continue;
                if (merge_valid(m, pa, ka, pb, kb, &r)) {
                    best->pa = pa;
                    best->pb = pb;
                    best->len2 = len2;
                    best->ring = r;
                    break;
                }
            }
        }
    }
    return best->pa >= 0;
}

static void apply(op__polyset *ps, const best_merge *bm)
{
    int nvp = ps->nvp, k = 0;
    int *v = &ps->v[bm->pa * nvp];
    int32_t *nb = &ps->nb[bm->pa * nvp];
    /* A removed joint's incoming edge is a wall (neighbour 0), so the edge that now
     * spans it keeps the value 0 of its start vertex. */
    for (int i = 0; i < bm->ring.n; i++) {
        if (bm->ring.gone[i])
            continue;
        v[k] = bm->ring.v[i];
        nb[k++] = bm->ring.nb[i];
    }
    ps->nv[bm->pa] = k;
    for (int i = k; i < nvp; i++) {
        v[i] = -1;
        nb[i] = OP_EDGE_INTERNAL;
    }
    int rest = ps->n - bm->pb - 1;
    memmove(&ps->v[bm->pb * nvp], &ps->v[(bm->pb + 1) * nvp], (size_t)rest * nvp * sizeof(int));
    memmove(&ps->nb[bm->pb * nvp], &ps->nb[(bm->pb + 1) * nvp],
            (size_t)rest * nvp * sizeof(int32_t));
    memmove(&ps->nv[bm->pb], &ps->nv[bm->pb + 1], (size_t)rest * sizeof(int));
    ps->n--;
}

op_status op__merge(op__polyset *ps, const int32_t *verts, const op_tile_frame *frame,
                    op_arena *scratch, op_err *err)
{
    if (ps->n < 2 || ps->nvp <= 3)
        return OP_OK;
    int ne = 0;
    for (int p = 0; p < ps->n; p++)
        ne += ps->nv[p];
    edge_table t;
    t.mask = 1;
    while (t.mask + 1 < 2 * ne)
        t.mask = 2 * t.mask + 1;
    size_t bytes = ((size_t)t.mask + 1 + 3 * (size_t)ne) * sizeof(int);
    int *mem = op_arena_alloc(scratch, bytes);
    if (!mem)
        return op_err_set(err, OP_ENOMEM, "polys: merging needs %zu bytes", bytes);
    t.head = mem;
    t.next = mem + t.mask + 1;
    t.poly = t.next + ne;
    t.edge = t.poly + ne;
    merge_ctx m = {ps, verts, frame};
    best_merge bm;
    for (;;) {
        table_build(&t, ps); /* merges never add edges: ne entries always suffice */
        if (!find_best(&m, &t, &bm))
            break;
        apply(ps, &bm);
    }
    return OP_OK;
}
