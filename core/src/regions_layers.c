/*
 * Layer partition (build3d-regions.md §4), layer assignment (build3d-polys.md §5, first
 * bullet) and the layer-first partition of tile builds.
 *
 * Input: op_chf with mutual links. The layer partition starts from the unfiltered
 * monotone regions and merges adjacent same-area regions that share no column, in the
 * §4 order, until no pair can merge. Result: no column holds two spans of one layer
 * region, and any two adjacent same-area regions overlap. On a single-floor field every
 * adjacent same-area pair merges, so the regions are the connected components (the
 * shortcut), unless a component is below MinRegionArea (then the general code runs).
 *
 * Each region keeps two lists of region ids, restricted to its own area (merges never
 * join different areas, so other areas never matter): the regions it is linked to and
 * the regions it shares a column with. The lists hold ids as they were when recorded; a
 * merge only appends the smaller list to the larger one and records the absorbed id's
 * new owner (union-find). When a region's turn comes, its lists are resolved through the
 * union-find, sorted and deduplicated in place. So a merge costs the smaller list, not
 * the big region's (a ground floor can share columns with thousands of upper regions),
 * and a pass costs O(E log E) over the list sizes. Typical size: a few hundred monotone
 * regions per tile, a few passes.
 */
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "regions_internal.h"

/* ---- id lists ---- */

typedef struct idset {
    uint32_t *v;
    uint32_t n, cap;
} idset;

static int set_has(const idset *s, uint32_t x)
{
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->v[mid] < x)
            lo = mid + 1;
        else if (s->v[mid] > x)
            hi = mid;
        else
            return 1;
    }
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t find_root(uint32_t *parent, uint32_t r)
{
    uint32_t root = r;
    while (parent[root] != root)
        root = parent[root];
    while (parent[r] != root) {
        uint32_t next = parent[r];
        parent[r] = root;
        r = next;
    }
    return root;
}

/* Maps every id to its current region, drops self, sorts, deduplicates. */
static void set_resolve(idset *s, uint32_t *parent, uint32_t self)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t r = find_root(parent, s->v[i]);
        if (r != self)
            s->v[n++] = r;
    }
    qsort(s->v, n, sizeof *s->v, cmp_u32);
    uint32_t u = 0;
    for (uint32_t i = 0; i < n; i++)
        if (u == 0 || s->v[u - 1] != s->v[i])
            s->v[u++] = s->v[i];
    s->n = u;
}

/* Moves b's ids into a (b is emptied); the longer list's storage is kept. */
static op_status set_absorb(idset *a, idset *b, op_arena *scratch, op_err *err)
{
    if (b->n > a->n) {
        idset t = *a;
        *a = *b;
        *b = t;
    }
    if (a->n + b->n > a->cap) {
        uint32_t cap = 2 * (a->n + b->n);
        uint32_t *v = op_arena_alloc(scratch, (size_t)cap * sizeof *v);
        if (!v)
            return op__regions_nomem(err, "layer lists", (size_t)cap * 4);
        memcpy(v, a->v, (size_t)a->n * sizeof *v);
        a->v = v;
        a->cap = cap;
    }
    memcpy(a->v + a->n, b->v, (size_t)b->n * sizeof *b->v);
    a->n += b->n;
    b->n = 0;
    return OP_OK;
}

/* ---- pair collection ---- */

/* Links between different labels (same area only when same_area) and column sharing
 * between different labels, as directed pairs. Either output may be NULL. */
static op_status collect_pairs(const op_chf *chf, const uint32_t *reg, const uint8_t *area,
                               int same_area, op_arena *scratch, uint64_t **adj, size_t *nadj,
                               uint64_t **ovl, size_t *novl, op_err *err)
{
    size_t na = 0, no = 0, cap_o = 0;
    for (int c = 0; c < chf->width * chf->depth; c++) {
        size_t k = chf->cells[c + 1] - chf->cells[c];
        cap_o += k * (k - (k > 0));
    }
    uint64_t *pa = op_arena_alloc(scratch, ((size_t)chf->span_count * 4 + 1) * 8);
    uint64_t *po = op_arena_alloc(scratch, (cap_o + 1) * 8);
    if (!pa || !po)
        return op__regions_nomem(err, "layer pairs", ((size_t)chf->span_count * 4 + cap_o) * 8);
    for (int c = 0; c < chf->width * chf->depth; c++)
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
            uint32_t r = reg[s];
            if (r == 0)
                continue;
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[s][d];
                if (m != OP_NO_LINK && reg[m] != 0 && reg[m] != r &&
                    (!same_area || area[reg[m]] == area[r]))
                    pa[na++] = (uint64_t)r << 32 | reg[m];
            }
            for (uint32_t t = chf->cells[c]; t < chf->cells[c + 1]; t++)
                if (t != s && reg[t] != 0 && reg[t] != r && (!same_area || area[reg[t]] == area[r]))
                    po[no++] = (uint64_t)r << 32 | reg[t];
        }
    *adj = pa;
    *nadj = na;
    *ovl = po;
    *novl = no;
    return OP_OK;
}

/* ---- the general merge loop ---- */

typedef struct layer_state {
    op__labels *lab;
    op_arena *scratch;
    idset *adj, *ovl;
    uint8_t *alive;
    uint32_t *parent;
} layer_state;

static op_status graph_sets(uint64_t *pairs, size_t n, uint32_t count, op_arena *scratch,
                            idset *sets, op_err *err)
{
    op__graph g;
    op_status st = op__graph_build(pairs, n, count, scratch, &g, err);
    if (st != OP_OK)
        return st;
    for (uint32_t r = 0; r <= count; r++) {
        sets[r].v = g.nb + g.start[r];
        sets[r].n = sets[r].cap = g.start[r + 1] - g.start[r];
    }
    return OP_OK;
}

/* Merges d into k (k < d): same area, linked, no shared column. */
static op_status merge_layer(layer_state *ls, uint32_t k, uint32_t d, op_err *err)
{
    op_status st = set_absorb(&ls->adj[k], &ls->adj[d], ls->scratch, err);
    if (st == OP_OK)
        st = set_absorb(&ls->ovl[k], &ls->ovl[d], ls->scratch, err);
    ls->alive[d] = 0;
    ls->parent[d] = k;
    return st;
}

/* §4: repeat passes; for each live a in id order, the first adjacent b (id order, same
 * area) that does not overlap a merges with a (larger id into smaller), then on to the
 * next a. */
static op_status merge_loop(layer_state *ls, op_err *err)
{
    uint32_t count = ls->lab->count;
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t a = 1; a <= count; a++) {
            if (!ls->alive[a])
                continue;
            set_resolve(&ls->adj[a], ls->parent, a);
            if (ls->adj[a].n == 0)
                continue;
            set_resolve(&ls->ovl[a], ls->parent, a);
            for (uint32_t i = 0; i < ls->adj[a].n; i++) {
                uint32_t b = ls->adj[a].v[i];
                if (set_has(&ls->ovl[a], b))
                    continue;
                op_status st = a < b ? merge_layer(ls, a, b, err) : merge_layer(ls, b, a, err);
                if (st != OP_OK)
                    return st;
                changed = 1;
                break;
            }
        }
    }
    return OP_OK;
}

static op_status layers_general(const op_chf *chf, op_arena *scratch, op__labels *lab, op_err *err)
{
    op_status st = op__monotone(chf, scratch, lab, err);
    if (st != OP_OK)
        return st;
    size_t nl = (size_t)lab->count + 1;
    layer_state ls = {lab, scratch, NULL, NULL, NULL, NULL};
    ls.adj = op_arena_alloc(scratch, nl * sizeof *ls.adj);
    ls.ovl = op_arena_alloc(scratch, nl * sizeof *ls.ovl);
    ls.alive = op_arena_alloc(scratch, nl);
    ls.parent = op_arena_alloc(scratch, nl * sizeof *ls.parent);
    if (!ls.adj || !ls.ovl || !ls.alive || !ls.parent)
        return op__regions_nomem(err, "layers", nl * (2 * sizeof(idset) + 5));
    for (uint32_t r = 0; r < nl; r++) {
        ls.alive[r] = 1;
        ls.parent[r] = r;
    }
    uint64_t *pa, *po;
    size_t na, no;
    if ((st = collect_pairs(chf, lab->reg, lab->area, 1, scratch, &pa, &na, &po, &no, err)) ||
        (st = graph_sets(pa, na, lab->count, scratch, ls.adj, err)) ||
        (st = graph_sets(po, no, lab->count, scratch, ls.ovl, err)) || (st = merge_loop(&ls, err)))
        return st;
    for (uint32_t s = 0; s < chf->span_count; s++)
        lab->reg[s] = find_root(ls.parent, lab->reg[s]);
    return OP_OK;
}

/* ---- the shortcut ---- */

static int single_floor(const op_chf *chf)
{
    for (int c = 0; c < chf->width * chf->depth; c++) {
        int walkable = 0;
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
            walkable += chf->areas[s] != 0;
        if (walkable > 1)
            return 0;
    }
    return 1;
}

op_status op__layers(const op_chf *chf, int min_region_area, int force_general, op_arena *scratch,
                     op__labels *lab, op_err *err)
{
    if (!force_general && single_floor(chf)) {
        op_status st = op__components(chf, NULL, scratch, lab, err);
        if (st != OP_OK)
            return st;
        uint32_t *size = op_arena_calloc(scratch, (size_t)lab->count + 1, sizeof *size);
        if (!size)
            return op__regions_nomem(err, "layers", ((size_t)lab->count + 1) * 4);
        for (uint32_t s = 0; s < chf->span_count; s++)
            size[lab->reg[s]]++;
        int small = 0;
        for (uint32_t r = 1; r <= lab->count; r++)
            small |= size[r] < (uint32_t)min_region_area;
        if (!small)
            return OP_OK;
    }
    return layers_general(chf, scratch, lab, err);
}

/* ---- layer assignment (build3d-polys.md §5) ---- */

op_status op_regions_assign_layers(const op_chf *chf, const op_regions *r, op_arena *scratch,
                                   uint16_t *layer, int *nlayers, op_err *err)
{
    if (!chf || !r || !scratch || !layer || !nlayers || r->span_count != chf->span_count)
        return op_err_set(err, OP_EINVAL, "regions: bad arguments to assign_layers");
    uint32_t count = (uint32_t)r->region_count;
    uint32_t *reg = op_arena_alloc(scratch, ((size_t)chf->span_count + 1) * sizeof *reg);
    idset *adj = op_arena_alloc(scratch, ((size_t)count + 1) * sizeof *adj);
    idset *ovl = op_arena_alloc(scratch, ((size_t)count + 1) * sizeof *ovl);
    uint32_t *taken = op_arena_calloc(scratch, OP_MAX_LAYERS + 1, sizeof *taken);
    if (!reg || !adj || !ovl || !taken)
        return op__regions_nomem(err, "assign layers", (size_t)chf->span_count * 4);
    for (uint32_t s = 0; s < chf->span_count; s++)
        reg[s] = r->reg[s];
    uint64_t *pa, *po;
    size_t na, no;
    op_status st;
    if ((st = collect_pairs(chf, reg, NULL, 0, scratch, &pa, &na, &po, &no, err)) ||
        (st = graph_sets(pa, na, count, scratch, adj, err)) ||
        (st = graph_sets(po, no, count, scratch, ovl, err)))
        return st;
    int nl = 0;
    layer[0] = OP_NO_LAYER;
    for (uint32_t id = 1; id <= count; id++) {
        /* taken[L] == id: a region already on L shares a column with id. */
        for (uint32_t i = 0; i < ovl[id].n && ovl[id].v[i] < id; i++)
            taken[layer[ovl[id].v[i]]] = id;
        int best = -1;
        for (uint32_t i = 0; i < adj[id].n && adj[id].v[i] < id; i++) {
            int l = layer[adj[id].v[i]];
            if (taken[l] != id && (best < 0 || l < best))
                best = l;
        }
        if (best < 0)
            for (best = 0; best < nl && taken[best] == id;)
                best++;
        if (best >= OP_MAX_LAYERS)
            return op_err_set(err, OP_ELIMIT, "regions: region %u needs layer %d > OP_MAX_LAYERS",
                              (unsigned)id, best + 1);
        if (best == nl)
            nl++;
        layer[id] = (uint16_t)best;
    }
    *nlayers = nl;
    return OP_OK;
}

/* ---- layer-first partition ---- */

/* Step 1 on a single-floor field: the layer regions are the components (the shortcut,
 * every island kept) and no two of them share a column, so the assignment puts every
 * region on layer 0: each span's layer is 0 when walkable, OP_NO_LAYER otherwise, and
 * one layer is used if any span is walkable. */
static op_status single_floor_layers(const op_chf *g, op_arena *out, uint16_t **span_layer,
                                     int *nlayers, op_err *err)
{
    uint16_t *sl = op_arena_alloc(out, ((size_t)g->span_count + 1) * sizeof *sl);
    if (!sl)
        return op__regions_nomem(err, "span layers", (size_t)g->span_count * 2);
    int any = 0;
    for (uint32_t s = 0; s < g->span_count; s++) {
        sl[s] = g->areas[s] != 0 ? 0 : OP_NO_LAYER;
        any |= g->areas[s] != 0;
    }
    *span_layer = sl;
    *nlayers = any;
    return OP_OK;
}

op_status op_regions_span_layers(const op_chf *geometry_chf, op_arena *out, op_arena *scratch,
                                 uint16_t **span_layer, int *nlayers, op_err *err)
{
    const op_chf *g = geometry_chf;
    if (!g || !out || !scratch || !span_layer || !nlayers || !g->cells || !g->links || !g->areas)
        return op_err_set(err, OP_EINVAL, "regions: bad arguments to span_layers");
    if (single_floor(g))
        return single_floor_layers(g, out, span_layer, nlayers, err);
    op__labels lab;
    op_regions regs;
    op_status st;
    /* Every island kept: MinRegionArea 0 removes nothing and keeps the shortcut. */
    if ((st = op__layers(g, 0, 0, scratch, &lab, err)) ||
        (st = op__filter(g, &lab, 0, 0, scratch, scratch, &regs, err)))
        return st;
    uint16_t *layer = op_arena_alloc(scratch, ((size_t)regs.region_count + 1) * sizeof *layer);
    uint16_t *sl = op_arena_alloc(out, ((size_t)g->span_count + 1) * sizeof *sl);
    if (!layer || !sl)
        return op__regions_nomem(err, "span layers", (size_t)g->span_count * 2);
    if ((st = op_regions_assign_layers(g, &regs, scratch, layer, nlayers, err)))
        return st;
    for (uint32_t s = 0; s < g->span_count; s++)
        sl[s] = layer[regs.reg[s]];
    *span_layer = sl;
    return OP_OK;
}

op_status op_regions_build_from_layers(const op_chf *chf, const uint16_t *span_layer,
                                       int min_region_area, op_arena *out, op_arena *scratch,
                                       op_regions *res, uint16_t **region_layer, op_err *err)
{
    if (!chf || !span_layer || !out || !scratch || !res || !region_layer || !chf->cells ||
        !chf->links || !chf->areas)
        return op_err_set(err, OP_EINVAL, "regions: bad arguments to build_from_layers");
    if (min_region_area < 0)
        return op_err_set(err, OP_ERANGE, "regions: min_region_area = %d < 0", min_region_area);
    op__labels lab;
    op_status st;
    if ((st = op__components(chf, span_layer, scratch, &lab, err)) ||
        (st = op__filter(chf, &lab, min_region_area, 0, out, scratch, res, err)))
        return st;
    uint16_t *rl = op_arena_alloc(out, ((size_t)res->region_count + 1) * sizeof *rl);
    if (!rl)
        return op__regions_nomem(err, "region layers", ((size_t)res->region_count + 1) * 2);
    rl[0] = OP_NO_LAYER;
    for (uint32_t s = 0; s < chf->span_count; s++)
        if (res->reg[s] != 0)
            rl[res->reg[s]] = span_layer[s];
    *region_layer = rl;
    return OP_OK;
}

op_status op_regions_build_layer_first(const op_chf *geometry_chf, const op_chf *chf,
                                       const op_region_settings *rs, op_arena *out,
                                       op_arena *scratch, op_regions *res, uint16_t **region_layer,
                                       op_err *err)
{
    op_status st;
    if (!geometry_chf || !chf)
        return op_err_set(err, OP_EINVAL, "regions: NULL compact heightfield");
    if (geometry_chf->width != chf->width || geometry_chf->depth != chf->depth ||
        geometry_chf->span_count != chf->span_count)
        return op_err_set(err, OP_EINVAL,
                          "regions: geometry field %dx%d with %u spans differs from %dx%d with %u",
                          geometry_chf->width, geometry_chf->depth,
                          (unsigned)geometry_chf->span_count, chf->width, chf->depth,
                          (unsigned)chf->span_count);
    if ((st = op_region_settings_validate(rs, err)) != OP_OK)
        return st;
    uint16_t *span_layer;
    int nlayers;
    if ((st = op_regions_span_layers(geometry_chf, scratch, scratch, &span_layer, &nlayers, err)))
        return st;
    return op_regions_build_from_layers(chf, span_layer, rs->min_region_area, out, scratch, res,
                                        region_layer, err);
}
