/*
 * Corridor search (docs/queries.md §4): A* over polygons, neighbours through in-tile
 * edges and stitched portal links. A node is a polygon; its position is the midpoint
 * of the portal it was last entered through (the start position for the start).
 * Input: a stitched mesh, a filter, two polygons and positions; output: the polygon
 * corridor (partial when the end cannot be reached). Scratch: per polygon of the mesh
 * a zeroed 4-byte slot, a node (g, f, parent, position, state) for each polygon the
 * search touches, and a binary heap of at most one entry per relaxation. Deterministic: heap order
 * is (f, dense polygon index).
 */
#include <math.h>
#include <string.h>

#include "onepath/limits.h"
#include "query_internal.h"

typedef struct node {
    double g, f, h;
    double pos[3];
    long parent; /* dense index, -1 for the start */
    int state;   /* 0 new, 1 open, 2 closed */
} node;

typedef struct heap_ent {
    double f;
    long id;
} heap_ent;

typedef struct search {
    const op_mesh *m;
    const op_query_filter *f;
    node *nodes;   /* pool, in order of first touch (not zeroed: only touched ones are read) */
    int32_t *slot; /* per dense polygon index: pool index + 1, 0 untouched (zeroed) */
    long nnodes;
    heap_ent *heap;
    long nheap, cap;
    long *base; /* dense index of each tile's polygon 0 */
    long end;
    double epos[3];
    double hscale;
} search;

/* The node of polygon id, created (state new) on first touch. */
static node *node_of(search *s, long id)
{
    if (s->slot[id] == 0) {
        node *n = &s->nodes[s->nnodes];
        memset(n, 0, sizeof *n);
        n->parent = -1;
        s->slot[id] = (int32_t)++s->nnodes;
    }
    return &s->nodes[s->slot[id] - 1];
}

static int ent_less(const heap_ent *a, const heap_ent *b)
{
    return a->f < b->f || (a->f == b->f && a->id < b->id);
}

static void heap_push(search *s, double f, long id)
{
    long i = s->nheap++;
    heap_ent e = {f, id};
    while (i > 0) {
        long p = (i - 1) / 2;
        if (!ent_less(&e, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

static heap_ent heap_pop(search *s)
{
    heap_ent top = s->heap[0], e = s->heap[--s->nheap];
    long i = 0, n = s->nheap;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ent_less(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ent_less(&s->heap[c], &e))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n > 0)
        s->heap[i] = e;
    return top;
}

static op_polyref ref_of(const search *s, long id)
{
    int lo = 0, hi = op_mesh_tile_count(s->m) - 1;
    while (lo < hi) { /* last tile whose base <= id */
        int mid = lo + (hi - lo + 1) / 2;
        if (s->base[mid] <= id)
            lo = mid;
        else
            hi = mid - 1;
    }
    op_polyref r = {lo, (int)(id - s->base[lo])};
    return r;
}

/* Relaxes the move from node `from` (polygon a) into polygon b through the portal. */
static void relax(search *s, long from, op_polyref a, op_polyref b, const double right[3],
                  const double left[3])
{
    long id = s->base[b.tile] + b.poly;
    node *na = node_of(s, from), *nb = node_of(s, id);
    if (nb->state == 2 || !op_query_passable(s->m, s->f, b))
        return;
    const op_tile *ta = op_mesh_tile(s->m, a.tile), *tb = op_mesh_tile(s->m, b.tile);
    double mid[3];
    for (int i = 0; i < 3; i++)
        mid[i] = (right[i] + left[i]) * 0.5;
    double g = na->g + op__dist3(na->pos, mid) * s->f->area_cost[ta->areas[a.poly] & 63u];
    double h = op__dist3(mid, s->epos);
    if (id == s->end)
        g += h * s->f->area_cost[tb->areas[b.poly] & 63u];
    double f = g + (id == s->end ? 0.0 : h * s->hscale);
    if (nb->state == 1 && !(g < nb->g))
        return;
    nb->g = g;
    nb->f = f;
    nb->h = h;
    memcpy(nb->pos, mid, sizeof mid);
    nb->parent = from;
    nb->state = 1;
    heap_push(s, f, id);
}

/* Neighbours of polygon a in edge order; per edge the in-tile polygon or the links. */
static void expand(search *s, long id)
{
    op_polyref a = ref_of(s, id);
    const op_tile *t = op_mesh_tile(s->m, a.tile);
    double pw[3 * OP_MAX_VERTS_PER_POLY];
    int n = op__poly_world(s->m, a, pw);
    for (int k = 0; k < n; k++) {
        uint16_t v = t->neis[(size_t)a.poly * t->nvp + k];
        if (v == OP_NEI_WALL)
            continue;
        if (!(v & OP_NEI_PORTAL)) {
            op_polyref b = {a.tile, (int)v - 1};
            relax(s, id, a, b, &pw[3 * k], &pw[3 * ((k + 1) % n)]);
            continue;
        }
        const op_link *l;
        int nl = op_mesh_edge_links(s->m, a.tile, a.poly, k, &l);
        for (int q = 0; q < nl; q++) {
            op_polyref b = {l[q].nei_tile, l[q].nei_poly};
            double right[3], left[3];
            if (op_query_portal(s->m, a, b, right, left))
                relax(s, id, a, b, right, left);
        }
    }
}

static double min_cost(const op_query_filter *f)
{
    double c = INFINITY;
    for (int a = 0; a < OP_QUERY_AREAS; a++)
        if (f->area_cost[a] >= 0.0 && f->area_cost[a] < c)
            c = f->area_cost[a];
    return isfinite(c) ? c : 0.0;
}

static op_status setup(search *s, op_arena *scratch, op_err *err)
{
    const op_mesh *m = s->m;
    int nt = op_mesh_tile_count(m);
    long np = op_mesh_poly_count(m);
    s->base = op_arena_alloc(scratch, ((size_t)nt + 1) * sizeof *s->base);
    s->nodes = op_arena_alloc(scratch, ((size_t)np + 1) * sizeof *s->nodes);
    s->slot = op_arena_calloc(scratch, (size_t)np + 1, sizeof *s->slot);
    s->cap = np * OP_MAX_VERTS_PER_POLY + op_mesh_link_count(m) + 1;
    s->heap = op_arena_alloc(scratch, (size_t)s->cap * sizeof *s->heap);
    if (!s->base || !s->nodes || !s->slot || !s->heap)
        return op_err_set(err, OP_ENOMEM, "query: out of memory (path search over %ld polygons)",
                          np);
    for (int i = 0; i < nt; i++)
        s->base[i] = op_mesh_poly_index(m, (op_polyref){i, 0});
    s->base[nt] = np;
    s->hscale = min_cost(s->f);
    return OP_OK;
}

static int valid_ref(const op_mesh *m, op_polyref r)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    return t && r.poly >= 0 && r.poly < t->npolys;
}

/* The corridor from the start to node `last`, written to path from out. */
static op_status write_path(search *s, long last, op_arena *out, op_path *path, op_err *err)
{
    int n = 0;
    for (long i = last; i >= 0; i = node_of(s, i)->parent)
        n++;
    path->polys = op_arena_alloc(out, (size_t)n * sizeof *path->polys);
    if (!path->polys)
        return op_err_set(err, OP_ENOMEM, "query: out of memory (path of %d polygons)", n);
    path->npolys = n;
    path->cost = node_of(s, last)->g;
    for (long i = last; i >= 0; i = node_of(s, i)->parent)
        path->polys[--n] = ref_of(s, i);
    return OP_OK;
}

op_status op_query_path(const op_mesh *m, const op_query_filter *f, op_polyref start,
                        const double spos[3], op_polyref end, const double epos[3], op_arena *out,
                        op_arena *scratch, op_path *path, op_err *err)
{
    memset(path, 0, sizeof *path);
    if (!op_mesh_is_stitched(m))
        return op_err_set(err, OP_EINVAL, "query: the mesh is not stitched");
    if (!valid_ref(m, start) || !valid_ref(m, end))
        return op_err_set(err, OP_EINVAL,
                          "query: polygon ref (%d, %d) or (%d, %d) outside the mesh", start.tile,
                          start.poly, end.tile, end.poly);
    op_query_filter def;
    if (!f) {
        op_query_filter_default(&def);
        f = &def;
    }
    search s = {.m = m, .f = f};
    op_status st = setup(&s, scratch, err);
    if (st != OP_OK)
        return st;
    memcpy(s.epos, epos, sizeof s.epos);
    s.end = op_mesh_poly_index(m, end);
    long sid = op_mesh_poly_index(m, start), best = sid;
    node *n0 = node_of(&s, sid);
    memcpy(n0->pos, spos, sizeof n0->pos);
    n0->h = op__dist3(spos, epos);
    n0->f = n0->h * s.hscale;
    n0->parent = -1;
    n0->state = 1;
    heap_push(&s, n0->f, sid);
    while (s.nheap > 0) {
        heap_ent e = heap_pop(&s);
        node *nd = node_of(&s, e.id);
        if (nd->state == 2 || e.f != nd->f)
            continue; /* stale entry */
        nd->state = 2;
        if (e.id == s.end) {
            best = e.id;
            break;
        }
        const node *nb = node_of(&s, best);
        if (nd->h < nb->h || (nd->h == nb->h && (nd->g < nb->g || (nd->g == nb->g && e.id < best))))
            best = e.id;
        expand(&s, e.id);
    }
    path->partial = best != s.end;
    return write_path(&s, best, out, path, err);
}
