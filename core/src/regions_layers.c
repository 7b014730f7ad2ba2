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
#if defined(__SSE2__) && !defined(OP_REGIONS_SCALAR)
#include <emmintrin.h>
#endif

#include "onepath/limits.h"
#include "regions_internal.h"

/* ---- the general merge loop ---- */

typedef struct layer_state {
    op__labels *lab;
    op_arena *scratch;
    op__idset *adj, *ovl;
    uint8_t *alive;
    uint32_t *parent;
} layer_state;

/* Merges d into k (k < d): same area, linked, no shared column. */
static op_status merge_layer(layer_state *ls, uint32_t k, uint32_t d, op_err *err)
{
    op_status st = op__idset_absorb(&ls->adj[k], &ls->adj[d], ls->scratch, err);
    if (st == OP_OK)
        st = op__idset_absorb(&ls->ovl[k], &ls->ovl[d], ls->scratch, err);
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
            op__idset_resolve(&ls->adj[a], ls->parent, a);
            if (ls->adj[a].n == 0)
                continue;
            op__idset_resolve(&ls->ovl[a], ls->parent, a);
            for (uint32_t i = 0; i < ls->adj[a].n; i++) {
                uint32_t b = ls->adj[a].v[i];
                if (op__idset_has(&ls->ovl[a], b))
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
        return op__regions_nomem(err, "layers", nl * (2 * sizeof(op__idset) + 5));
    for (uint32_t r = 0; r < nl; r++) {
        ls.alive[r] = 1;
        ls.parent[r] = r;
    }
    uint64_t *pa;
    size_t na;
    if ((st = op__link_pairs(chf, lab->reg, lab->area, 1, scratch, &pa, &na, err)) ||
        (st = op__idset_graph(pa, na, lab->count, scratch, ls.adj, err)) ||
        (st = op__overlap_sets(chf, lab->reg, lab->area, 1, lab->count, scratch, ls.ovl, err)) ||
        (st = merge_loop(&ls, err)))
        return st;
    for (uint32_t s = 0; s < chf->span_count; s++)
        lab->reg[s] = op__find_root(ls.parent, lab->reg[s]);
    return OP_OK;
}

/* ---- the shortcut ---- */

static int single_floor(const op_chf *chf)
{
    const uint32_t *cells = chf->cells;
    for (int c = 0; c < chf->width * chf->depth; c++) {
        if (cells[c + 1] - cells[c] < 2) /* most cells: nothing to count */
            continue;
        int walkable = 0;
        for (uint32_t s = cells[c]; s < cells[c + 1]; s++)
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
    op__idset *adj = op_arena_alloc(scratch, ((size_t)count + 1) * sizeof *adj);
    op__idset *ovl = op_arena_alloc(scratch, ((size_t)count + 1) * sizeof *ovl);
    uint32_t *taken = op_arena_calloc(scratch, OP_MAX_LAYERS + 1, sizeof *taken);
    if (!reg || !adj || !ovl || !taken)
        return op__regions_nomem(err, "assign layers", (size_t)chf->span_count * 4);
    for (uint32_t s = 0; s < chf->span_count; s++) {
        reg[s] = r->reg[s];
        if (reg[s] > count)
            return op_err_set(err, OP_EINVAL, "regions: span %u has region %u > region count %u",
                              (unsigned)s, (unsigned)reg[s], (unsigned)count);
    }
    uint64_t *pa;
    size_t na;
    op_status st;
    if ((st = op__link_pairs(chf, reg, NULL, 0, scratch, &pa, &na, err)) ||
        (st = op__idset_graph(pa, na, count, scratch, adj, err)) ||
        (st = op__overlap_sets(chf, reg, NULL, 0, count, scratch, ovl, err)))
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
    /* Count first: the walkable spans of one column lie in distinct regions that share
     * that column, so each needs its own layer (§4, §5). A column of more than
     * OP_MAX_LAYERS of them is refused here, in O(spans), before the overlap pairs, which
     * grow with the square of a column's spans (1,025 stacked floors: gigabytes). */
    for (int c = 0; c < g->width * g->depth; c++) {
        if (g->cells[c + 1] - g->cells[c] <= OP_MAX_LAYERS)
            continue;
        int walkable = 0;
        for (uint32_t s = g->cells[c]; s < g->cells[c + 1]; s++)
            walkable += g->areas[s] != 0;
        if (walkable > OP_MAX_LAYERS)
            return op_err_set(err, OP_ELIMIT,
                              "regions: column (%d, %d) holds %d walkable spans, each on its own "
                              "layer: more than OP_MAX_LAYERS (%d) layers",
                              c % g->width, c / g->width, walkable, OP_MAX_LAYERS);
    }
    if (single_floor(g))
        return single_floor_layers(g, out, span_layer, nlayers, err);
    op__labels lab;
    op_regions regs;
    op_status st;
    /* Every island kept: MinRegionArea 0 removes nothing. Not single-floor, so the
     * shortcut does not apply: go to the general merge without testing again. */
    if ((st = op__layers(g, 0, 1, scratch, &lab, err)) ||
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

/* Layer-first labelling in one flood (build3d-regions.md §4 "Layer-first partition", §5
 * with R1, no merging): the same labels as op__components(key) followed by op__filter
 * (min_area, 0), which tests/test_regions_layers.c compares it with, without their second
 * and third passes over the spans. Components are flooded in span index order, so their ids
 * are their first spans' order, which is the order §5.3 numbers the survivors in. While a
 * component is flooded, a link from it to a span of an earlier component joins their R1
 * groups (any non-zero areas); a link to a walkable span not yet labelled is seen again
 * from that span's component (links are mutual), so every link between two components
 * joins them once the flood is over, as the filter's scan does. Sizes are the flood's
 * queue lengths; band spans are marked from the band's span ranges alone.
 *
 * Two label widths, one flood: uint16 labels written straight into the result's region
 * array (label_layers16, every tile in practice), and uint32 labels in scratch for a tile
 * of more than 0xffff components (label_layers32). The flood and the band are one macro
 * each, expanded with the label type; the grouping and numbering are number_components. */

/* Per component (at most one a span): first span, size (then its number), R1 group parent. */
typedef struct components {
    uint32_t *queue, *start, *size, *parent;
    uint32_t count;
} components;

static int components_alloc(components *c, uint32_t n, op_arena *scratch)
{
    c->queue = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *c->queue);
    c->start = op_arena_alloc(scratch, ((size_t)n + 2) * sizeof *c->start);
    c->size = op_arena_alloc(scratch, ((size_t)n + 2) * sizeof *c->size);
    c->parent = op_arena_alloc(scratch, ((size_t)n + 2) * sizeof *c->parent);
    c->count = 0;
    if (c->parent)
        c->parent[0] = 0;
    return c->queue && c->start && c->size && c->parent;
}

/* One link of the flood (OP__FLOOD_COMPONENT), written out per direction. */
#define OP__FLOOD_LINK(LAB_T, lab, d)                                                              \
    do {                                                                                           \
        uint32_t m = l[d], q;                                                                      \
        if (m == OP_NO_LINK || (q = (lab)[m]) == id)                                               \
            break;                                                                                 \
        if (q == 0) {                                                                              \
            if (areas[m] == ac && key[m] == kc) {                                                  \
                (lab)[m] = (LAB_T)id;                                                              \
                queue[tail++] = m;                                                                 \
            }                                                                                      \
            break;                                                                                 \
        }                                                                                          \
        uint32_t x = op__find_root(parent, id), y = op__find_root(parent, q);                      \
        if (x != y) /* the smaller root stays, as in the filter */                                 \
            parent[x > y ? x : y] = x < y ? x : y;                                                 \
    } while (0)

/* Floods component c->count + 1 from span s into lab (of type LAB_T). No test of
 * areas[m] == 0: only walkable spans get a label (the scan starts components on them, the
 * flood takes spans of ac != 0), so a labelled m is walkable, and an unlabelled one of area
 * 0 fails areas[m] == ac. */
#define OP__FLOOD_COMPONENT(LAB_T, c, lab, s)                                                      \
    do {                                                                                           \
        const uint32_t id = ++(c)->count;                                                          \
        uint32_t head = 0, tail = 0, *queue = (c)->queue, *parent = (c)->parent;                   \
        (c)->start[id] = (s);                                                                      \
        parent[id] = id;                                                                           \
        (lab)[s] = (LAB_T)id;                                                                      \
        queue[tail++] = (s);                                                                       \
        while (head < tail) {                                                                      \
            uint32_t cur = queue[head++];                                                          \
            const uint32_t *l = links[cur];                                                        \
            uint8_t ac = areas[cur];                                                               \
            uint16_t kc = key[cur];                                                                \
            OP__FLOOD_LINK(LAB_T, lab, 0);                                                         \
            OP__FLOOD_LINK(LAB_T, lab, 1);                                                         \
            OP__FLOOD_LINK(LAB_T, lab, 2);                                                         \
            OP__FLOOD_LINK(LAB_T, lab, 3);                                                         \
        }                                                                                          \
        (c)->size[id] = tail;                                                                      \
    } while (0)

/* band[label] = 1 for the labels of the band's spans (clarifications.md regions 5:
 * chf->border cells on each side), read off each row's span ranges. */
#define OP__MARK_BAND(chf, lab, band)                                                              \
    do {                                                                                           \
        int b_ = (chf)->border, w_ = (chf)->width, d_ = (chf)->depth;                              \
        for (int z = 0; b_ > 0 && z < d_; z++) {                                                   \
            const uint32_t *row = &(chf)->cells[(size_t)z * (size_t)w_];                           \
            int band_row = z < b_ || z >= d_ - b_;                                                 \
            int x0 = band_row ? w_ : (b_ < w_ ? b_ : w_);                                          \
            int x1 = band_row ? w_ : (w_ - b_ > x0 ? w_ - b_ : x0);                                \
            for (uint32_t i = row[0]; i < row[x0]; i++)                                            \
                (band)[(lab)[i]] = 1;                                                              \
            for (uint32_t i = row[x1]; i < row[w_]; i++)                                           \
                (band)[(lab)[i]] = 1;                                                              \
        }                                                                                          \
    } while (0)

/* Islands: a group's root is its smallest component, so it is summed into before any later
 * member reads it; then each survivor is numbered in component (first span) order. size[]
 * becomes the number (0: removed). Returns the survivors' count. */
static uint32_t number_components(components *c, uint32_t *gsize, uint8_t *band, int min_area)
{
    for (uint32_t r = 1; r <= c->count; r++) {
        uint32_t g = op__find_root(c->parent, r);
        gsize[g] += c->size[r];
        band[g] |= band[r];
    }
    uint32_t k = 0;
    uint32_t *newid = c->size;
    newid[0] = 0;
    for (uint32_t r = 1; r <= c->count; r++) {
        uint32_t g = c->parent[r]; /* compressed by the loop above */
        newid[r] = gsize[g] < (uint32_t)min_area && !band[g] ? 0 : ++k;
    }
    return k;
}

/* The result's per-region arrays (area, layer) from the numbered components. */
static void region_arrays(const components *c, const uint8_t *areas, const uint16_t *key,
                          uint8_t *rarea, uint16_t *rl)
{
    const uint32_t *newid = c->size;
    rl[0] = OP_NO_LAYER;
    for (uint32_t r = 1; r <= c->count; r++)
        if (newid[r]) {
            rarea[newid[r]] = areas[c->start[r]];
            rl[newid[r]] = key[c->start[r]];
        }
}

OP_COLD static op_status too_many_regions(uint32_t k, op_err *err)
{
    return op_err_set(err, OP_ELIMIT, "regions: %u regions > OP_MAX_REGIONS (%d)", (unsigned)k,
                      OP_MAX_REGIONS);
}

static op_status label_layers32(const op_chf *chf, const uint16_t *key, int min_area, op_arena *out,
                                op_arena *scratch, op_regions *res, uint16_t **region_layer,
                                op_err *err)
{
    /* Arrays are sized by the span count, not by the walkable spans: counting those would
     * be one more pass over the spans. */
    const uint32_t n = chf->span_count;
    const uint32_t(*const links)[4] = chf->links;
    const uint8_t *const areas = chf->areas;
    uint32_t *lab = op_arena_calloc(scratch, (size_t)n + 1, sizeof *lab);
    components c;
    if (!components_alloc(&c, n, scratch) || !lab)
        return op__regions_nomem(err, "components", (size_t)n * 20);
    for (uint32_t s = 0; s < n; s++)
        if (areas[s] != 0 && lab[s] == 0)
            OP__FLOOD_COMPONENT(uint32_t, &c, lab, s);
    uint32_t *gsize = op_arena_calloc(scratch, (size_t)c.count + 1, sizeof *gsize);
    uint8_t *band = op_arena_calloc(scratch, (size_t)c.count + 1, 1);
    if (!gsize || !band)
        return op__regions_nomem(err, "components", (size_t)c.count * 5);
    OP__MARK_BAND(chf, lab, band);
    uint32_t k = number_components(&c, gsize, band, min_area);
    if (k > OP_MAX_REGIONS)
        return too_many_regions(k, err);
    op_arena_mark mark = op_arena_get_mark(out);
    uint16_t *reg = op_arena_alloc(out, ((size_t)n + 1) * sizeof *reg);
    uint8_t *rarea = op_arena_calloc(out, (size_t)k + 1, 1);
    uint16_t *rl = op_arena_alloc(out, ((size_t)k + 1) * sizeof *rl);
    if (!reg || !rarea || !rl) {
        op_arena_release(out, mark);
        return op__regions_nomem(err, "result", (size_t)n * 2 + (size_t)k * 3 + 3);
    }
    for (uint32_t s = 0; s < n; s++)
        reg[s] = (uint16_t)c.size[lab[s]];
    region_arrays(&c, areas, key, rarea, rl);
    res->span_count = n;
    res->region_count = (int)k;
    res->reg = reg;
    res->region_area = rarea;
    *region_layer = rl;
    return OP_OK;
}

/* Whether none of the eight spans from s starts a component (a walkable span, area != 0,
 * not labelled yet). With SSE2 one compare of the eight labels and the eight areas, widened
 * to 16 bits, with zero; OP_REGIONS_SCALAR (and targets without SSE2) test them one by one.
 * Integer compares only: the same answer on every target. */
#if defined(__SSE2__) && !defined(OP_REGIONS_SCALAR)
static inline int no_start8(const uint8_t *areas, const uint16_t *lab)
{
    const __m128i z = _mm_setzero_si128();
    __m128i l = _mm_loadu_si128((const __m128i *)(const void *)lab);
    __m128i a = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)(const void *)areas), z);
    return _mm_movemask_epi8(_mm_andnot_si128(_mm_cmpeq_epi16(a, z), _mm_cmpeq_epi16(l, z))) == 0;
}
#else
static inline int no_start8(const uint8_t *areas, const uint16_t *lab)
{
    int any = 0;
    for (int i = 0; i < 8; i++)
        any |= (areas[i] != 0) & (lab[i] == 0);
    return !any;
}
#endif

/* The labels flooded straight into the result's uint16 region array: component ids become
 * region ids in place, so a tile whose components all survive (the numbering of §5.3 is then
 * the identity, ids being flood order) needs no pass mapping labels to regions, and the
 * array cleared before the flood is half as wide. *wide is set (and nothing is kept in out)
 * when more than 0xffff components would not fit the array: the caller then runs
 * label_layers32. */
static op_status label_layers16(const op_chf *chf, const uint16_t *key, int min_area, op_arena *out,
                                op_arena *scratch, op_regions *res, uint16_t **region_layer,
                                int *wide, op_err *err)
{
    const uint32_t n = chf->span_count;
    const uint32_t(*const links)[4] = chf->links;
    const uint8_t *const areas = chf->areas;
    *wide = 0;
    op_arena_mark mark = op_arena_get_mark(out);
    uint16_t *lab = op_arena_calloc(out, (size_t)n + 1, sizeof *lab);
    components c;
    if (!components_alloc(&c, n, scratch) || !lab) {
        op_arena_release(out, mark);
        return op__regions_nomem(err, "components", (size_t)n * 20);
    }
    /* The starts in index order: eight spans at a time passed over when none is one (after
     * the first floods most spans are labelled); a block that holds one is scanned span by
     * span, each span read again after the floods from the earlier ones. */
    for (uint32_t s = 0; s < n;) {
        if (n - s >= 8 && no_start8(areas + s, lab + s)) {
            s += 8;
            continue;
        }
        for (uint32_t e = n - s >= 8 ? s + 8 : n; s < e; s++) {
            if (areas[s] == 0 || lab[s] != 0)
                continue;
            if (c.count == 0xffffu) {
                op_arena_release(out, mark);
                *wide = 1;
                return OP_OK;
            }
            OP__FLOOD_COMPONENT(uint16_t, &c, lab, s);
        }
    }
    uint32_t *gsize = op_arena_calloc(scratch, (size_t)c.count + 1, sizeof *gsize);
    uint8_t *band = op_arena_calloc(scratch, (size_t)c.count + 1, 1);
    if (!gsize || !band) {
        op_arena_release(out, mark);
        return op__regions_nomem(err, "components", (size_t)c.count * 5);
    }
    OP__MARK_BAND(chf, lab, band);
    uint32_t k = number_components(&c, gsize, band, min_area);
    if (k > OP_MAX_REGIONS) {
        op_arena_release(out, mark);
        return too_many_regions(k, err);
    }
    uint8_t *rarea = op_arena_calloc(out, (size_t)k + 1, 1);
    uint16_t *rl = op_arena_alloc(out, ((size_t)k + 1) * sizeof *rl);
    if (!rarea || !rl) {
        op_arena_release(out, mark);
        return op__regions_nomem(err, "result", (size_t)n * 2 + (size_t)k * 3 + 3);
    }
    /* k == count: every component survived and the numbering is the identity (each
     * survivor is numbered by its rank, and all are ranked). */
    if (k != c.count)
        for (uint32_t s = 0; s < n; s++)
            lab[s] = (uint16_t)c.size[lab[s]];
    region_arrays(&c, areas, key, rarea, rl);
    res->span_count = n;
    res->region_count = (int)k;
    res->reg = lab;
    res->region_area = rarea;
    *region_layer = rl;
    return OP_OK;
}

#undef OP__FLOOD_COMPONENT
#undef OP__FLOOD_LINK
#undef OP__MARK_BAND

op_status op_regions_build_from_layers(const op_chf *chf, const uint16_t *span_layer,
                                       int min_region_area, op_arena *out, op_arena *scratch,
                                       op_regions *res, uint16_t **region_layer, op_err *err)
{
    if (!chf || !span_layer || !out || !scratch || !res || !region_layer || !chf->cells ||
        !chf->links || !chf->areas)
        return op_err_set(err, OP_EINVAL, "regions: bad arguments to build_from_layers");
    if (min_region_area < 0)
        return op_err_set(err, OP_ERANGE, "regions: min_region_area = %d < 0", min_region_area);
    int wide;
    op_status st = label_layers16(chf, span_layer, min_region_area, out, scratch, res, region_layer,
                                  &wide, err);
    if (st != OP_OK || !wide)
        return st;
    return label_layers32(chf, span_layer, min_region_area, out, scratch, res, region_layer, err);
}

op_status op__regions_build_from_layers_wide(const op_chf *chf, const uint16_t *span_layer,
                                             int min_region_area, op_arena *out, op_arena *scratch,
                                             op_regions *res, uint16_t **region_layer, op_err *err)
{
    return label_layers32(chf, span_layer, min_region_area, out, scratch, res, region_layer, err);
}

op_status op__regions_build_from_layers_two_step(const op_chf *chf, const uint16_t *span_layer,
                                                 int min_region_area, op_arena *out,
                                                 op_arena *scratch, op_regions *res,
                                                 uint16_t **region_layer, op_err *err)
{
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
