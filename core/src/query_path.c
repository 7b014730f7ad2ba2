/*
 * Corridor search (docs/queries.md §4): A* over polygons, neighbours through in-tile
 * edges and stitched portal links, with the rules and the arithmetic of Detour's findPath,
 * so that corridors are Detour's on the exported mesh. A node is a polygon and the side it
 * was entered from (4 per polygon); its position is the midpoint of the portal it was first
 * reached through (the start position for the start), in Detour's float32 frame and with
 * the portal's ends quantised as Detour's link limits are, and never moves; a cheaper way
 * in reopens even a closed node. Costs are IEEE single operations in Detour's order.
 * Input: a stitched mesh, a filter, two polygons and positions; output: the polygon
 * corridor (partial when the end cannot be reached). Scratch: per (polygon, side) a
 * zeroed 4-byte slot, room for a node and a heap entry. Deterministic: the heap is
 * Detour's (strict comparisons, §4.6), neighbours in Detour's link-list order (§4.1).
 */
#include <math.h>
#include <string.h>

#include "detour_internal.h"
#include "onepath/limits.h"
#include "query_internal.h"

typedef struct node {
    float g, f, h;
    float pos[3];
    long poly;   /* dense polygon index */
    long parent; /* pool index of the parent node, -1 for the start */
    long hidx;   /* index in the heap while open */
    int side;    /* §4.3 */
    int state;   /* 0 new, 1 open, 2 closed */
} node;

/* One neighbour of the polygon being expanded, in §4.1 order. */
typedef struct step {
    op_polyref b;
    int edge;         /* onepath edge of the expanded polygon */
    const op_link *l; /* the portal link; NULL for an in-tile edge or a layer seam */
    int side;         /* §4.3 */
} step;

typedef struct search {
    const op_mesh *m;
    const op_query_filter *f;
    op_arena *scratch;
    node *nodes;   /* pool, in order of first touch (not zeroed: only touched ones are read) */
    int32_t *slot; /* per (dense polygon index, side): pool index + 1, 0 untouched (zeroed) */
    long nnodes;
    long *heap; /* pool indices */
    long nheap;
    long *base; /* dense index of each tile's polygon 0 */
    long end;
    float epos[3];
    float hscale;
    long best; /* pool index of the node nearest the end so far (§4.7) */
    float best_h;
    step *steps; /* neighbour list of the polygon being expanded */
    int nsteps, cap;
    int oom;
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
        n->side = side;
        s->slot[k] = (int32_t)++s->nnodes;
    }
    return s->slot[k] - 1;
}

/* The open set (§4.6), Detour's dtNodeQueue: a binary heap on f alone; a node moves up past
 * a parent only when the parent is strictly greater; a pop moves the hole from the root
 * down to a leaf (towards the right child only when it is strictly smaller) and then moves
 * the last entry up from there. */
static void heap_set(search *s, long i, long n)
{
    s->heap[i] = n;
    s->nodes[n].hidx = i;
}

static void heap_up(search *s, long i, long n)
{
    float f = s->nodes[n].f;
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
    for (long c = 2 * i + 1; c < s->nheap; c = 2 * i + 1) {
        if (c + 1 < s->nheap && s->nodes[s->heap[c]].f > s->nodes[s->heap[c + 1]].f)
            c++;
        heap_set(s, i, s->heap[c]);
        i = c;
    }
    heap_up(s, i, n);
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

/* Detour's float32 world position of vertex v of tile t (detour-export.md §2.1). */
static void detour_vert(const op_mesh *m, const op_tile *t, int v, float out[3])
{
    const op_settings *st = op_mesh_settings(m);
    double grid[2] = {op__detour_grid(t, 0, st->grid_origin_x),
                      op__detour_grid(t, 2, st->grid_origin_z)};
    for (int i = 0; i < 3; i++)
        out[i] = (float)op__detour_coord(t, grid[i / 2], i, t->verts[3 * (size_t)v + i]);
}

/* Ends of edge k of polygon p of tile t in Detour's float32 frame. */
static void detour_edge(const op_mesh *m, const op_tile *t, int p, int k, float a[3], float b[3])
{
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    int n = op_tile_poly_nverts(t, p);
    detour_vert(m, t, pv[k], a);
    detour_vert(m, t, pv[(k + 1) % n], b);
}

static float lerpf(float a, float b, float t)
{
    return a + (b - a) * t;
}

static float clamp01(float v)
{
    return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
}

/* The node position of a move from polygon a into the neighbour of step st (§4.3):
 * Detour's getEdgeMidPoint. Detour's edge runs from onepath's edge end d0 to its start d1
 * (detour-export.md §3.3); a portal link keeps its overlap as two byte fractions of that
 * edge (connectExtLinks, truncated), and the portal is the edge clamped to them unless
 * they are 0 and 255. In-tile edges and layer seams are Detour in-tile links: the whole
 * edge. */
static void portal_mid(const search *s, op_polyref a, const step *st, float mid[3])
{
    const op_tile *t = op_mesh_tile(s->m, a.tile);
    float d0[3], d1[3], l[3], r[3];
    detour_edge(s->m, t, a.poly, st->edge, d1, d0);
    memcpy(l, d0, sizeof l);
    memcpy(r, d1, sizeof r);
    if (st->l) {
        int ax = st->l->axis;
        float b0[3], b1[3];
        detour_edge(s->m, op_mesh_tile(s->m, st->b.tile), st->b.poly, st->l->nei_edge, b0, b1);
        float amin = d0[ax] < d1[ax] ? d0[ax] : d1[ax], amax = d0[ax] < d1[ax] ? d1[ax] : d0[ax];
        float bmin = b0[ax] < b1[ax] ? b0[ax] : b1[ax], bmax = b0[ax] < b1[ax] ? b1[ax] : b0[ax];
        float c0 = amin > bmin ? amin : bmin, c1 = amax < bmax ? amax : bmax;
        float tmin = (c0 - d0[ax]) / (d1[ax] - d0[ax]);
        float tmax = (c1 - d0[ax]) / (d1[ax] - d0[ax]);
        if (tmin > tmax) {
            float tmp = tmin;
            tmin = tmax;
            tmax = tmp;
        }
        unsigned qmin = (unsigned char)(clamp01(tmin) * 255.0f);
        unsigned qmax = (unsigned char)(clamp01(tmax) * 255.0f);
        if (qmin != 0 || qmax != 255) {
            const float q = 1.0f / 255.0f;
            float t0 = (float)qmin * q, t1 = (float)qmax * q;
            for (int i = 0; i < 3; i++) {
                l[i] = lerpf(d0[i], d1[i], t0);
                r[i] = lerpf(d0[i], d1[i], t1);
            }
        }
    }
    for (int i = 0; i < 3; i++)
        mid[i] = (l[i] + r[i]) * 0.5f;
}

/* Detour's dtVdist in float32. */
static float distf(const float a[3], const float b[3])
{
    float dx = b[0] - a[0], dy = b[1] - a[1], dz = b[2] - a[2];
    return sqrtf(dx * dx + dy * dy + dz * dz);
}

/* Relaxes the move from node `from` (polygon a) along step st (§4.6). */
static void relax(search *s, long from, op_polyref a, const step *st)
{
    op_polyref b = st->b;
    long id = s->base[b.tile] + b.poly;
    long pfrom = s->nodes[from].parent;
    if (pfrom >= 0 && s->nodes[pfrom].poly == id)
        return; /* never straight back to the parent polygon */
    if (!op_query_passable(s->m, s->f, b))
        return;
    const op_tile *ta = op_mesh_tile(s->m, a.tile), *tb = op_mesh_tile(s->m, b.tile);
    long ib = node_of(s, id, st->side);
    node *na = &s->nodes[from], *nb = &s->nodes[ib];
    if (nb->state == 0) { /* fixed at first touch, through the first step into b */
        int first = 0;
        while (s->steps[first].b.tile != b.tile || s->steps[first].b.poly != b.poly)
            first++;
        portal_mid(s, a, &s->steps[first], nb->pos);
    }
    float g = na->g + distf(na->pos, nb->pos) * (float)s->f->area_cost[ta->areas[a.poly] & 63u];
    float h = 0.0f;
    if (id == s->end)
        g = g + distf(nb->pos, s->epos) * (float)s->f->area_cost[tb->areas[b.poly] & 63u];
    else
        h = distf(nb->pos, s->epos) * s->hscale;
    float f = g + h;
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

static int add_step(search *s, op_polyref b, int edge, const op_link *l, int side)
{
    if (s->nsteps == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        step *n = op_arena_alloc(s->scratch, (size_t)cap * sizeof *n);
        if (!n)
            return s->oom = 1, 0;
        if (s->nsteps)
            memcpy(n, s->steps, (size_t)s->nsteps * sizeof *n);
        s->steps = n;
        s->cap = cap;
    }
    step st = {b, edge, l, side};
    s->steps[s->nsteps++] = st;
    return 1;
}

/* The neighbours of polygon a in Detour's link-list order (§4.1): the portal links by the
 * side they cross, +z, +x, −z, −x (addTile in key order creates them −x, −z, +x, +z and
 * prepends each), per side the edges in edge order and per edge the linked polygons last
 * first; then the in-tile edges and layer seams, last edge first (connectIntLinks, in
 * Detour's reversed edge order). */
static int neighbours(search *s, op_polyref a)
{
    static const int side_order[4] = {1, 2, 3, 0};
    const op_tile *t = op_mesh_tile(s->m, a.tile);
    int n = op_tile_poly_nverts(t, a.poly);
    const uint16_t *nv = &t->neis[(size_t)a.poly * t->nvp];
    s->nsteps = 0;
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < n; k++) {
            if (!(nv[k] & OP_NEI_PORTAL) || OP_NEI_IS_SEAM(nv[k]) ||
                (int)(nv[k] & 3u) != side_order[d])
                continue;
            const op_link *l;
            int nl = op_mesh_edge_links(s->m, a.tile, a.poly, k, &l);
            for (int q = nl - 1; q >= 0; q--) {
                op_polyref b = {l[q].nei_tile, l[q].nei_poly};
                if (!add_step(s, b, k, &l[q], side_of(t, op_mesh_tile(s->m, b.tile))))
                    return 0;
            }
        }
    for (int k = n - 1; k >= 0; k--) {
        if (nv[k] == OP_NEI_WALL || (nv[k] & OP_NEI_PORTAL && !OP_NEI_IS_SEAM(nv[k])))
            continue;
        if (!(nv[k] & OP_NEI_PORTAL)) {
            if (!add_step(s, (op_polyref){a.tile, (int)nv[k] - 1}, k, NULL, 0))
                return 0;
            continue;
        }
        const op_link *l;
        int nl = op_mesh_edge_links(s->m, a.tile, a.poly, k, &l);
        for (int q = 0; q < nl; q++)
            if (!add_step(s, (op_polyref){l[q].nei_tile, l[q].nei_poly}, k, NULL, 0))
                return 0;
    }
    return 1;
}

static int expand(search *s, long from)
{
    op_polyref a = ref_of(s, s->nodes[from].poly);
    if (!neighbours(s, a))
        return 0;
    for (int i = 0; i < s->nsteps; i++)
        relax(s, from, a, &s->steps[i]);
    return 1;
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
    s->scratch = scratch;
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
    /* Detour's H_SCALE (0.999f) times the cheapest area cost, in float32 (exactly 0.999f
     * for unit costs). */
    s->hscale = (float)OP_QUERY_H_SCALE * (float)min_cost(s->f);
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

/* The search; s->m and s->f set, f not NULL. Leaves the pool in s; *last the end's node or -1. */
static op_status run(search *s, op_polyref start, const double spos[3], op_polyref end,
                     const double epos[3], op_arena *scratch, long *last, op_err *err)
{
    const op_mesh *m = s->m;
    if (!op_mesh_is_stitched(m))
        return op_err_set(err, OP_EINVAL, "query: the mesh is not stitched");
    if (!valid_ref(m, start) || !valid_ref(m, end))
        return op_err_set(err, OP_EINVAL,
                          "query: polygon ref (%d, %d) or (%d, %d) outside the mesh", start.tile,
                          start.poly, end.tile, end.poly);
    op_status st = setup(s, scratch, err);
    if (st != OP_OK)
        return st;
    for (int i = 0; i < 3; i++)
        s->epos[i] = (float)epos[i];
    s->end = op_mesh_poly_index(m, end);
    long sid = op_mesh_poly_index(m, start);
    long n0 = node_of(s, sid, 0);
    *last = -1;
    node *nd0 = &s->nodes[n0];
    for (int i = 0; i < 3; i++)
        nd0->pos[i] = (float)spos[i];
    nd0->h = distf(nd0->pos, s->epos) * s->hscale;
    nd0->f = nd0->h;
    nd0->state = 1;
    s->nheap = 1;
    heap_set(s, 0, n0);
    s->best = n0;
    s->best_h = nd0->f;
    while (s->nheap > 0) {
        long i = heap_pop(s);
        s->nodes[i].state = 2;
        if (s->nodes[i].poly == s->end) {
            *last = i;
            break;
        }
        if (!expand(s, i))
            return op_err_set(err, OP_ENOMEM, "query: out of memory (neighbour list)");
    }
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
    long last;
    op_status st = run(&s, start, spos, end, epos, scratch, &last, err);
    if (st != OP_OK)
        return st;
    path->partial = last < 0;
    return write_path(&s, last >= 0 ? last : s.best, out, path, err);
}

op_status op__query_path_nodes(const op_mesh *m, op_polyref start, const double spos[3],
                               op_polyref end, const double epos[3], op_arena *out,
                               op_arena *scratch, op__path_node **nodes, long *nnodes, op_err *err)
{
    op_query_filter f;
    op_query_filter_default(&f);
    search s = {.m = m, .f = &f};
    long last;
    op_status st = run(&s, start, spos, end, epos, scratch, &last, err);
    if (st != OP_OK)
        return st;
    *nodes = op_arena_alloc(out, ((size_t)s.nnodes + 1) * sizeof **nodes);
    if (!*nodes)
        return op_err_set(err, OP_ENOMEM, "query: out of memory (%ld nodes)", s.nnodes);
    for (long i = 0; i < s.nnodes; i++) {
        const node *n = &s.nodes[i];
        op__path_node o = {ref_of(&s, n->poly),
                           n->side,
                           n->state,
                           {n->pos[0], n->pos[1], n->pos[2]},
                           n->g,
                           n->f,
                           n->parent};
        (*nodes)[i] = o;
    }
    *nnodes = s.nnodes;
    return OP_OK;
}
