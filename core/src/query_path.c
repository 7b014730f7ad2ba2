/*
 * Corridor search (docs/queries.md §4): A* over polygons, neighbours through in-tile
 * edges and stitched portal links, with Detour's node rules so corridors match its
 * findPath. A node is a polygon and the side it was entered from (4 per polygon); its
 * position is the midpoint of the portal it was first reached through (the start
 * position for the start) and never moves; a cheaper way in reopens even a closed node.
 * Input: a stitched mesh, a filter, two polygons and positions; output: the polygon
 * corridor (partial when the end cannot be reached). Scratch: per (polygon, side) a
 * zeroed 4-byte slot, room for a node and a heap entry. Deterministic: the heap orders
 * by f alone with strict comparisons (§4.6), neighbours in edge then link order.
 */
#include <math.h>
#include <string.h>

#include "onepath/limits.h"
#include "query_internal.h"

typedef struct node {
    double g, f, h;
    double pos[3];
    long poly;   /* dense polygon index */
    long parent; /* pool index of the parent node, -1 for the start */
    long hidx;   /* index in the heap while open */
    int state;   /* 0 new, 1 open, 2 closed */
} node;

typedef struct search {
    const op_mesh *m;
    const op_query_filter *f;
    node *nodes;   /* pool, in order of first touch (not zeroed: only touched ones are read) */
    int32_t *slot; /* per (dense polygon index, side): pool index + 1, 0 untouched (zeroed) */
    long nnodes;
    long *heap; /* pool indices */
    long nheap;
    long *base; /* dense index of each tile's polygon 0 */
    long end;
    double epos[3];
    double hscale;
    long best; /* pool index of the node nearest the end so far (§4.7) */
    double best_h;
} search;

/* The node of polygon id entered from side `side` (§4.3), created (state new) on first touch. */
static long node_of(search *s, long id, int side)
{
    size_t k = (size_t)id * OP_QUERY_SIDES + (size_t)side;
    if (s->slot[k] == 0) {
        node *n = &s->nodes[s->nnodes];
        memset(n, 0, sizeof *n);
        n->poly = id;
        n->parent = -1;
        s->slot[k] = (int32_t)++s->nnodes;
    }
    return s->slot[k] - 1;
}

/* The open set (§4.6): a binary heap on f alone; a node moves up past a parent only when
 * strictly less, and down past a child only when the child is strictly less. */
static void heap_set(search *s, long i, long n)
{
    s->heap[i] = n;
    s->nodes[n].hidx = i;
}

static void heap_up(search *s, long i, long n)
{
    double f = s->nodes[n].f;
    while (i > 0) {
        long p = (i - 1) / 2;
        if (!(s->nodes[s->heap[p]].f > f))
            break;
        heap_set(s, i, s->heap[p]);
        i = p;
    }
    heap_set(s, i, n);
}

static void heap_down(search *s, long i, long n)
{
    double f = s->nodes[n].f;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && s->nodes[s->heap[c]].f > s->nodes[s->heap[c + 1]].f)
            c++;
        if (!(s->nodes[s->heap[c]].f < f))
            break;
        heap_set(s, i, s->heap[c]);
        i = c;
    }
    heap_set(s, i, n);
}

static long heap_pop(search *s)
{
    long top = s->heap[0];
    long last = s->heap[--s->nheap];
    if (s->nheap > 0)
        heap_down(s, 0, last);
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

/* Side of a move from tile a into tile b (§4.3): 0 for a move inside one tile cell or
 * towards +x, 1 towards +z, 2 towards -x, 3 towards -z. */
static int side_of(const op_tile *ta, const op_tile *tb)
{
    if (tb->tx > ta->tx)
        return 0;
    if (tb->tz > ta->tz)
        return 1;
    if (tb->tx < ta->tx)
        return 2;
    if (tb->tz < ta->tz)
        return 3;
    return 0;
}

/* Relaxes the move from node `from` (polygon a) into polygon b through the portal. */
static void relax(search *s, long from, op_polyref a, op_polyref b, const double right[3],
                  const double left[3])
{
    long id = s->base[b.tile] + b.poly;
    long pfrom = s->nodes[from].parent;
    if (pfrom >= 0 && s->nodes[pfrom].poly == id)
        return; /* never straight back to the parent polygon */
    if (!op_query_passable(s->m, s->f, b))
        return;
    const op_tile *ta = op_mesh_tile(s->m, a.tile), *tb = op_mesh_tile(s->m, b.tile);
    long ib = node_of(s, id, side_of(ta, tb));
    node *na = &s->nodes[from], *nb = &s->nodes[ib];
    if (nb->state == 0)
        for (int i = 0; i < 3; i++) /* fixed at first touch */
            nb->pos[i] = (right[i] + left[i]) * 0.5;
    double g = na->g + op__dist3(na->pos, nb->pos) * s->f->area_cost[ta->areas[a.poly] & 63u];
    double h = 0.0;
    if (id == s->end)
        g += op__dist3(nb->pos, s->epos) * s->f->area_cost[tb->areas[b.poly] & 63u];
    else
        h = op__dist3(nb->pos, s->epos) * s->hscale;
    double f = g + h;
    if (nb->state != 0 && !(f < nb->f))
        return;
    nb->g = g;
    nb->f = f;
    nb->h = h;
    nb->parent = from;
    if (nb->state == 1) {
        heap_up(s, nb->hidx, ib);
    } else {
        nb->state = 1;
        s->nheap++;
        heap_up(s, s->nheap - 1, ib);
    }
    if (h < s->best_h) {
        s->best_h = h;
        s->best = ib;
    }
}

/* Neighbours of polygon a in edge order; per edge the in-tile polygon or the links. */
static void expand(search *s, long from)
{
    long id = s->nodes[from].poly;
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
            relax(s, from, a, b, &pw[3 * k], &pw[3 * ((k + 1) % n)]);
            continue;
        }
        const op_link *l;
        int nl = op_mesh_edge_links(s->m, a.tile, a.poly, k, &l);
        for (int q = 0; q < nl; q++) {
            op_polyref b = {l[q].nei_tile, l[q].nei_poly};
            double right[3], left[3];
            if (op_query_portal(s->m, a, b, right, left))
                relax(s, from, a, b, right, left);
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
    size_t nn = ((size_t)np + 1) * OP_QUERY_SIDES;
    s->nodes = op_arena_alloc(scratch, nn * sizeof *s->nodes);
    s->slot = op_arena_calloc(scratch, nn, sizeof *s->slot);
    s->heap = op_arena_alloc(scratch, nn * sizeof *s->heap);
    if (!s->base || !s->nodes || !s->slot || !s->heap)
        return op_err_set(err, OP_ENOMEM, "query: out of memory (path search over %ld polygons)",
                          np);
    for (int i = 0; i < nt; i++)
        s->base[i] = op_mesh_poly_index(m, (op_polyref){i, 0});
    s->base[nt] = np;
    s->hscale = OP_QUERY_H_SCALE * min_cost(s->f);
    return OP_OK;
}

static int valid_ref(const op_mesh *m, op_polyref r)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    return t && r.poly >= 0 && r.poly < t->npolys;
}

/* The corridor from the start to pool node `last`, written to path from out. */
static op_status write_path(search *s, long last, op_arena *out, op_path *path, op_err *err)
{
    int n = 0;
    for (long i = last; i >= 0; i = s->nodes[i].parent)
        n++;
    path->polys = op_arena_alloc(out, (size_t)n * sizeof *path->polys);
    if (!path->polys)
        return op_err_set(err, OP_ENOMEM, "query: out of memory (path of %d polygons)", n);
    path->npolys = n;
    path->cost = s->nodes[last].g;
    for (long i = last; i >= 0; i = s->nodes[i].parent)
        path->polys[--n] = ref_of(s, s->nodes[i].poly);
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
    long sid = op_mesh_poly_index(m, start);
    long n0 = node_of(&s, sid, 0), last = -1;
    node *nd0 = &s.nodes[n0];
    memcpy(nd0->pos, spos, sizeof nd0->pos);
    nd0->h = op__dist3(spos, epos) * s.hscale;
    nd0->f = nd0->h;
    nd0->state = 1;
    s.nheap = 1;
    heap_set(&s, 0, n0);
    s.best = n0;
    s.best_h = nd0->f;
    while (s.nheap > 0) {
        long i = heap_pop(&s);
        s.nodes[i].state = 2;
        if (s.nodes[i].poly == s.end) {
            last = i;
            break;
        }
        expand(&s, i);
    }
    path->partial = last < 0;
    return write_path(&s, last >= 0 ? last : s.best, out, path, err);
}
