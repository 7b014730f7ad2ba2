/*
 * Test-only helpers for the regions tests: seeded fields with their brute-force distance
 * field, invariant checks of a partition, and a second, naive implementation of
 * build3d-regions.md §2–§5 written straight from the text (rescans instead of frontiers,
 * dense matrices instead of sets, relabelling instead of lists) to compare against.
 * Included by the test_regions*.c files only; everything is static.
 */
#ifndef REGIONS_ORACLE_H
#define REGIONS_ORACLE_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/regions.h"
#include "op_fields.h"
#include "op_test.h"

/* ---- fields ---- */

static void with_distance(op_arena *a, op_chf *chf)
{
    chf->dist = op_arena_alloc(a, ((size_t)chf->span_count + 1) * sizeof *chf->dist);
    op_test_brute_distance(chf, chf->dist);
}

static op_chf *random_field(op_arena *a, uint64_t seed, int w, int d, int floors, int nareas)
{
    op_test_rng rng = {seed};
    op_chf *chf = op_test_field_random(a, &rng, w, d, floors, nareas);
    with_distance(a, chf);
    return chf;
}

/* Storeys: floor f at row 20 f + (x + 2 z) / 6 (neighbours differ by at most one row),
 * floor 0 everywhere but random rectangular obstacles, upper floors in random rectangles,
 * one ramp climbing from floor 0 to floor 1, areas in patches with a few area-0 spans.
 * Open floors give deep distance fields and large regions; the ramp and the stacked
 * floors give overlapping, connected regions. Distance field filled. */
static op_chf *storey_field(op_arena *a, uint64_t seed, int w, int d, int floors, int nareas)
{
    op_test_rng rng = {seed};
    int nc = w * d;
    uint8_t *has = calloc((size_t)nc * floors, 1);
    int *yy = calloc((size_t)nc * floors, sizeof *yy);
    for (int c = 0; c < nc; c++)
        has[c * floors] = 1;
    for (int f = 0; f < floors; f++) {
        int nrect = f == 0 ? 3 : 4;
        for (int i = 0; i < nrect; i++) {
            int x0 = op_test_rand_int(&rng, 0, w - 1), z0 = op_test_rand_int(&rng, 0, d - 1);
            int x1 = x0 + op_test_rand_int(&rng, 2, w / 2),
                z1 = z0 + op_test_rand_int(&rng, 2, d / 2);
            for (int z = z0; z < z1 && z < d; z++)
                for (int x = x0; x < x1 && x < w; x++)
                    has[(x + z * w) * floors + f] = f != 0;
        }
    }
    for (int c = 0; c < nc; c++)
        for (int f = 0; f < floors; f++)
            yy[c * floors + f] = 20 * f + (c % w + 2 * (c / w)) / 6;
    if (floors > 1 && w > 24) {
        int z0 = op_test_rand_int(&rng, 0, d - 3), x0 = op_test_rand_int(&rng, 0, w - 22);
        for (int z = z0; z < z0 + 3; z++)
            for (int x = x0; x < x0 + 20; x++) {
                int c = x + z * w;
                has[c * floors] = 1;
                yy[c * floors] += x - x0;
                for (int f = 1; f < floors; f++)
                    has[c * floors + f] = 0;
            }
        for (int z = z0; z < z0 + 3; z++)
            for (int x = x0 + 20; x < w && x < x0 + 26; x++)
                has[(x + z * w) * floors + 1] = 1;
    }
    int *counts = calloc((size_t)nc, sizeof *counts);
    op_test_span *spans = calloc((size_t)nc * floors + 1, sizeof *spans);
    int k = 0;
    for (int c = 0; c < nc; c++)
        for (int f = 0; f < floors; f++) {
            if (!has[c * floors + f])
                continue;
            int g = f + 1;
            while (g < floors && !has[c * floors + g])
                g++;
            int y = yy[c * floors + f];
            int h = g < floors ? yy[c * floors + g] - y - 2 : 200;
            int x = c % w, z = c / w;
            int area = 1 + (x / 9 + z / 7 + f) % nareas;
            if (op_test_rand_int(&rng, 0, 99) == 0)
                area = 0;
            spans[k++] = (op_test_span){y, h, area};
            counts[c]++;
        }
    op_chf *chf = op_test_field(a, w, d, counts, spans, 4, 2);
    free(has);
    free(yy);
    free(counts);
    free(spans);
    with_distance(a, chf);
    return chf;
}

static op_chf *text_field(op_arena *a, const char *const *lines, int depth)
{
    op_chf *chf = op_test_field_from_text(a, lines, depth);
    with_distance(a, chf);
    return chf;
}

static op_status build_regions(const op_chf *chf, op_partition p, int min_area, int merge_area,
                               op_arena *out, op_regions *res)
{
    op_region_settings rs;
    op_region_settings_default(&rs);
    rs.partition = p;
    rs.min_region_area = min_area;
    rs.merge_region_area = merge_area;
    op_arena *scratch = op_arena_create(0);
    op_err e;
    op_status st = op_regions_build(chf, &rs, out, scratch, res, &e);
    cr_assert_eq(st, OP_OK, "%s", e.msg);
    op_arena_destroy(scratch);
    return st;
}

/* ---- invariants ---- */

/* Region sizes (region_count + 1 entries, malloc). */
static uint32_t *region_sizes(const op_regions *r)
{
    uint32_t *size = calloc((size_t)r->region_count + 1, sizeof *size);
    for (uint32_t s = 0; s < r->span_count; s++)
        size[r->reg[s]]++;
    return size;
}

/* Components of walkable spans over links (any area); returns labels (malloc). */
static uint32_t *walkable_components(const op_chf *chf, uint32_t *ncomp)
{
    uint32_t n = chf->span_count, k = 0;
    uint32_t *comp = calloc((size_t)n + 1, sizeof *comp);
    uint32_t *stack = malloc(((size_t)n + 1) * sizeof *stack);
    for (uint32_t s = 0; s < n; s++) {
        if (chf->areas[s] == 0 || comp[s])
            continue;
        uint32_t top = 0;
        comp[s] = ++k;
        stack[top++] = s;
        while (top) {
            uint32_t c = stack[--top];
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[c][d];
                if (m != OP_NO_LINK && chf->areas[m] != 0 && !comp[m]) {
                    comp[m] = k;
                    stack[top++] = m;
                }
            }
        }
    }
    free(stack);
    *ncomp = k;
    return comp;
}

/* Per span: 1 when its cell lies in the tile border band (the chf->border cells along
 * each side of the grid; clarifications.md, regions 5), written cell by cell (malloc). */
static uint8_t *band_spans(const op_chf *chf)
{
    uint8_t *band = calloc((size_t)chf->span_count + 1, 1);
    int b = chf->border;
    for (int z = 0; z < chf->depth; z++)
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            int in = x < b || z < b || x >= chf->width - b || z >= chf->depth - b;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                band[s] = (uint8_t)in;
        }
    return band;
}

/* Every rule of §5 and the region definition that can be checked on the result alone. */
static void check_partition(const op_chf *chf, const op_regions *r, int min_area, int merge_area,
                            op_partition p)
{
    uint32_t n = chf->span_count;
    cr_assert_eq(r->span_count, n);
    cr_assert(r->region_count >= 0);
    /* Numbering: ids 1..k in order of first span, every id used. */
    uint32_t next = 1;
    uint8_t *seen = calloc((size_t)r->region_count + 2, 1);
    for (uint32_t s = 0; s < n; s++) {
        uint32_t id = r->reg[s];
        cr_assert(id <= (uint32_t)r->region_count, "span %u region %u", s, id);
        if (chf->areas[s] == 0)
            cr_assert_eq(id, 0, "area-0 span %u has region %u", s, id);
        if (id == 0)
            continue;
        cr_assert_eq(r->region_area[id], chf->areas[s], "span %u area differs from region %u", s,
                     id);
        if (!seen[id]) {
            cr_assert_eq(id, next, "region %u first seen before %u", id, next);
            seen[id] = 1;
            next++;
        }
    }
    cr_assert_eq(next - 1, (uint32_t)r->region_count);
    free(seen);
    /* Connectivity: a flood from a region's first span inside the region reaches all. */
    uint32_t *size = region_sizes(r);
    uint8_t *vis = calloc((size_t)n + 1, 1);
    uint32_t *stack = malloc(((size_t)n + 1) * sizeof *stack);
    for (uint32_t s = 0; s < n; s++) {
        uint32_t id = r->reg[s];
        if (id == 0 || vis[s])
            continue;
        uint32_t top = 0, cnt = 1;
        vis[s] = 1;
        stack[top++] = s;
        while (top) {
            uint32_t c = stack[--top];
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[c][d];
                if (m != OP_NO_LINK && r->reg[m] == id && !vis[m]) {
                    vis[m] = 1;
                    cnt++;
                    stack[top++] = m;
                }
            }
        }
        cr_assert_eq(cnt, size[id], "region %u is not connected (%u of %u)", id, cnt, size[id]);
    }
    free(vis);
    free(stack);
    /* Region 0 on walkable spans (R1 of ../shared/spec/amendments.md): exactly the whole
     * walkable components (linked, any areas: every walkable span has a label before §5,
     * so a component is a group of labels) below MinRegionArea with no span in the tile
     * border band. */
    uint32_t ncomp;
    uint32_t *comp = walkable_components(chf, &ncomp);
    uint32_t *csize = calloc((size_t)ncomp + 1, sizeof *csize);
    uint32_t *czero = calloc((size_t)ncomp + 1, sizeof *czero);
    uint8_t *cband = calloc((size_t)ncomp + 1, 1);
    uint8_t *band = band_spans(chf);
    for (uint32_t s = 0; s < n; s++) {
        if (!comp[s])
            continue;
        csize[comp[s]]++;
        czero[comp[s]] += r->reg[s] == 0;
        cband[comp[s]] |= band[s];
    }
    for (uint32_t c = 1; c <= ncomp; c++) {
        int island = csize[c] < (uint32_t)min_area && !cband[c];
        cr_assert_eq(czero[c], island ? csize[c] : 0,
                     "component %u (%u spans, band %d): %u spans without region", c, csize[c],
                     cband[c], czero[c]);
    }
    /* Single-area components: after merging (or for layers on a single floor) they are
     * either removed or hold regions; with merging on a component below MergeRegionArea
     * ends as one region. */
    free(comp);
    free(csize);
    free(czero);
    free(cband);
    free(band);
    /* Merging (with R2): no region below MergeRegionArea keeps a same-area neighbour that
     * shares no column with it. */
    if (p != OP_PARTITION_LAYERS && merge_area > 0) {
        uint32_t k = (uint32_t)r->region_count;
        uint8_t *ovl = calloc((size_t)(k + 1) * (k + 1), 1);
        for (int c = 0; c < chf->width * chf->depth; c++)
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                for (uint32_t t = chf->cells[c]; t < chf->cells[c + 1]; t++)
                    ovl[r->reg[s] * (k + 1) + r->reg[t]] = 1;
        for (uint32_t s = 0; s < n; s++) {
            uint32_t id = r->reg[s];
            if (id == 0 || size[id] >= (uint32_t)merge_area)
                continue;
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[s][d];
                if (m != OP_NO_LINK && r->reg[m] != 0 && r->reg[m] != id &&
                    chf->areas[m] == chf->areas[s])
                    cr_assert(ovl[id * (k + 1) + r->reg[m]],
                              "small region %u (%u spans) keeps same-area neighbour %u, which "
                              "does not overlap it",
                              id, size[id], r->reg[m]);
            }
        }
        free(ovl);
    }
    free(size);
}

/* Layers: no column holds two spans of one region; adjacent same-area regions overlap. */
static void check_layers(const op_chf *chf, const op_regions *r)
{
    uint32_t k = (uint32_t)r->region_count;
    uint8_t *ovl = calloc((size_t)(k + 1) * (k + 1), 1);
    for (int c = 0; c < chf->width * chf->depth; c++)
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
            for (uint32_t t = chf->cells[c]; t < chf->cells[c + 1]; t++) {
                if (s == t || r->reg[s] == 0)
                    continue;
                cr_assert_neq(r->reg[s], r->reg[t], "column %d holds two spans of region %u", c,
                              r->reg[s]);
                ovl[r->reg[s] * (k + 1) + r->reg[t]] = 1;
            }
    for (uint32_t s = 0; s < chf->span_count; s++)
        for (int d = 0; d < 4; d++) {
            uint32_t m = chf->links[s][d];
            if (m == OP_NO_LINK || r->reg[s] == 0 || r->reg[m] == 0 || r->reg[m] == r->reg[s] ||
                chf->areas[m] != chf->areas[s])
                continue;
            cr_assert(ovl[r->reg[s] * (k + 1) + r->reg[m]],
                      "adjacent same-area regions %u and %u do not overlap", r->reg[s], r->reg[m]);
        }
    free(ovl);
}

static void assert_same_regions(const op_regions *a, const op_regions *b, const char *what)
{
    cr_assert_eq(a->span_count, b->span_count, "%s", what);
    cr_assert_eq(a->region_count, b->region_count, "%s: %d vs %d regions", what, a->region_count,
                 b->region_count);
    for (uint32_t s = 0; s < a->span_count; s++)
        cr_assert_eq(a->reg[s], b->reg[s], "%s: span %u: %u vs %u", what, s, a->reg[s], b->reg[s]);
    for (int i = 1; i <= a->region_count; i++)
        cr_assert_eq(a->region_area[i], b->region_area[i], "%s: area of %d", what, i);
}

/* ---- the naive oracle (§2–§5 read literally) ---- */

typedef struct naive {
    uint32_t *reg; /* per span */
    uint32_t count;
    int area[1 << 16]; /* per label; the oracle only runs on small fields */
} naive;

static const op_chf *naive_sort_chf;

static int naive_cmp(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint32_t da = naive_sort_chf->dist[a], db = naive_sort_chf->dist[b];
    if (da != db)
        return da > db ? -1 : 1;
    return (a > b) - (a < b);
}

static void naive_watershed(const op_chf *chf, naive *nv)
{
    uint32_t n = chf->span_count, nw = 0;
    uint32_t *order = malloc(((size_t)n + 1) * sizeof *order);
    for (uint32_t s = 0; s < n; s++)
        if (chf->areas[s])
            order[nw++] = s;
    naive_sort_chf = chf;
    qsort(order, nw, sizeof *order, naive_cmp);
    nv->reg = calloc((size_t)n + 1, sizeof *nv->reg);
    nv->count = 0;
    uint32_t *joined_round = calloc((size_t)n + 1, sizeof *joined_round);
    uint32_t *decide = malloc(((size_t)n + 1) * sizeof *decide);
    uint32_t round = 0;
    for (uint32_t i = 0; i < nw;) {
        uint32_t L = chf->dist[order[i]], j = i;
        while (j < nw && chf->dist[order[j]] == L)
            j++;
        /* Growth: every round rescans the whole level. */
        for (int first = 1;; first = 0) {
            round++;
            int any = 0;
            for (uint32_t q = i; q < j; q++) {
                uint32_t s = order[q];
                decide[s] = 0;
                if (nv->reg[s])
                    continue;
                int cand = first;
                for (int d = 0; d < 4 && !cand; d++) {
                    uint32_t m = chf->links[s][d];
                    cand = m != OP_NO_LINK && joined_round[m] == round - 1;
                }
                if (!cand)
                    continue;
                for (int d = 0; d < 4; d++) {
                    uint32_t m = chf->links[s][d];
                    if (m != OP_NO_LINK && nv->reg[m] && chf->areas[m] == chf->areas[s] &&
                        (decide[s] == 0 || nv->reg[m] < decide[s]))
                        decide[s] = nv->reg[m];
                }
            }
            for (uint32_t q = i; q < j; q++) {
                uint32_t s = order[q];
                if (!nv->reg[s] && decide[s]) {
                    nv->reg[s] = decide[s];
                    joined_round[s] = round;
                    any = 1;
                }
            }
            if (!any)
                break;
        }
        /* Basins: repeated sweeps instead of a queue. */
        for (uint32_t q = i; q < j; q++) {
            uint32_t s = order[q];
            if (nv->reg[s])
                continue;
            uint32_t id = ++nv->count;
            nv->area[id] = chf->areas[s];
            nv->reg[s] = id;
            for (int grew = 1; grew;) {
                grew = 0;
                for (uint32_t t = i; t < j; t++) {
                    uint32_t u = order[t];
                    if (nv->reg[u] != id)
                        continue;
                    for (int d = 0; d < 4; d++) {
                        uint32_t m = chf->links[u][d];
                        if (m != OP_NO_LINK && !nv->reg[m] && chf->areas[m] == chf->areas[u] &&
                            chf->areas[m] && chf->dist[m] == L) {
                            nv->reg[m] = id;
                            grew = 1;
                        }
                    }
                }
            }
        }
        i = j;
    }
    free(order);
    free(joined_round);
    free(decide);
}

static void naive_monotone(const op_chf *chf, naive *nv)
{
    uint32_t n = chf->span_count;
    nv->reg = calloc((size_t)n + 1, sizeof *nv->reg);
    nv->count = 0;
    uint32_t *sweep = malloc(((size_t)n + 1) * sizeof *sweep);
    int maxsw = 4 * chf->width * 8 + 16;
    for (int z = 0; z < chf->depth; z++) {
        uint32_t nsw = 0;
        uint32_t *sw_area = calloc((size_t)maxsw, sizeof *sw_area);
        /* regions seen below each sweep: a small dense list */
        uint32_t(*seen)[64] = calloc((size_t)maxsw, sizeof *seen);
        int *nseen = calloc((size_t)maxsw, sizeof *nseen);
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
                if (!chf->areas[s])
                    continue;
                uint32_t p = chf->links[s][0];
                if (p != OP_NO_LINK && chf->areas[p] == chf->areas[s])
                    sweep[s] = sweep[p];
                else {
                    sweep[s] = nsw;
                    sw_area[nsw++] = chf->areas[s];
                    cr_assert(nsw < (uint32_t)maxsw);
                }
                uint32_t q = chf->links[s][3];
                if (q != OP_NO_LINK && chf->areas[q] == chf->areas[s] && nv->reg[q]) {
                    uint32_t w = sweep[s];
                    int dup = 0;
                    for (int i = 0; i < nseen[w]; i++)
                        dup |= seen[w][i] == nv->reg[q];
                    if (!dup) {
                        cr_assert(nseen[w] < 64);
                        seen[w][nseen[w]++] = nv->reg[q];
                    }
                }
            }
        }
        uint32_t *id = calloc((size_t)nsw + 1, sizeof *id);
        for (uint32_t w = 0; w < nsw; w++) {
            int cont = nseen[w] == 1;
            for (uint32_t o = 0; o < nsw && cont; o++)
                for (int i = 0; i < nseen[o] && o != w; i++)
                    if (seen[o][i] == seen[w][0])
                        cont = 0;
            if (cont)
                id[w] = seen[w][0];
            else {
                id[w] = ++nv->count;
                nv->area[id[w]] = (int)sw_area[w];
            }
        }
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                if (chf->areas[s])
                    nv->reg[s] = id[sweep[s]];
        }
        free(id);
        free(sw_area);
        free(seen);
        free(nseen);
    }
    free(sweep);
}

static void naive_layers(const op_chf *chf, naive *nv)
{
    naive_monotone(chf, nv);
    uint32_t k = nv->count, k1 = k + 1;
    uint8_t *adj = calloc((size_t)k1 * k1, 1), *ovl = calloc((size_t)k1 * k1, 1);
    uint8_t *alive = malloc(k1);
    memset(alive, 1, k1);
    for (int c = 0; c < chf->width * chf->depth; c++)
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
            for (uint32_t t = chf->cells[c]; t < chf->cells[c + 1]; t++)
                if (nv->reg[s] && nv->reg[t] && nv->reg[s] != nv->reg[t])
                    ovl[nv->reg[s] * k1 + nv->reg[t]] = 1;
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[s][d];
                if (m != OP_NO_LINK && nv->reg[s] && nv->reg[m] && nv->reg[s] != nv->reg[m])
                    adj[nv->reg[s] * k1 + nv->reg[m]] = 1;
            }
        }
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t a = 1; a <= k; a++) {
            if (!alive[a])
                continue;
            for (uint32_t b = 1; b <= k; b++) {
                if (!alive[b] || b == a || !adj[a * k1 + b] || nv->area[b] != nv->area[a] ||
                    ovl[a * k1 + b])
                    continue;
                uint32_t keep = a < b ? a : b, gone = a < b ? b : a;
                for (uint32_t x = 1; x <= k; x++) {
                    adj[keep * k1 + x] |= adj[gone * k1 + x];
                    adj[x * k1 + keep] |= adj[x * k1 + gone];
                    ovl[keep * k1 + x] |= ovl[gone * k1 + x];
                    ovl[x * k1 + keep] |= ovl[x * k1 + gone];
                }
                adj[keep * k1 + keep] = 0;
                alive[gone] = 0;
                for (uint32_t s = 0; s < chf->span_count; s++)
                    if (nv->reg[s] == gone)
                        nv->reg[s] = keep;
                changed = 1;
                break;
            }
        }
    }
    free(adj);
    free(ovl);
    free(alive);
}

/* §5 by rescanning the spans for every question. */
static void naive_filter(const op_chf *chf, naive *nv, int min_area, int merge_area,
                         op_regions *res)
{
    uint32_t n = chf->span_count, k = nv->count;
    uint32_t *size = calloc((size_t)k + 1, sizeof *size);
    uint8_t *island = calloc((size_t)k + 1, 1);
    uint8_t *band = band_spans(chf);
    for (uint32_t s = 0; s < n; s++)
        size[nv->reg[s]]++;
    /* R1: groups of regions connected through links (any areas), by a flood over a dense
     * region graph; a group below MinRegionArea with no span in the band goes. */
    uint8_t *conn = calloc((size_t)(k + 1) * (k + 1), 1);
    uint8_t *rband = calloc((size_t)k + 1, 1);
    for (uint32_t s = 0; s < n; s++) {
        uint32_t r = nv->reg[s];
        rband[r] |= band[s];
        for (int d = 0; d < 4 && r; d++) {
            uint32_t m = chf->links[s][d];
            if (m != OP_NO_LINK && nv->reg[m] && nv->reg[m] != r)
                conn[r * (k + 1) + nv->reg[m]] = 1;
        }
    }
    uint32_t *grp = calloc((size_t)k + 1, sizeof *grp), *queue = malloc(((size_t)k + 1) * 4);
    for (uint32_t r = 1; r <= k; r++) {
        if (grp[r] || size[r] == 0)
            continue;
        uint32_t head = 0, tail = 0, total = 0;
        int reaches = 0;
        grp[r] = r;
        queue[tail++] = r;
        while (head < tail) {
            uint32_t q = queue[head++];
            total += size[q];
            reaches |= rband[q];
            for (uint32_t o = 1; o <= k; o++)
                if (conn[q * (k + 1) + o] && !grp[o]) {
                    grp[o] = r;
                    queue[tail++] = o;
                }
        }
        for (uint32_t i = 0; i < tail; i++)
            island[queue[i]] = total < (uint32_t)min_area && !reaches;
    }
    free(conn);
    free(rband);
    free(grp);
    free(queue);
    free(band);
    for (uint32_t s = 0; s < n; s++)
        if (island[nv->reg[s]])
            nv->reg[s] = 0;
    uint32_t *links = calloc((size_t)k + 1, sizeof *links);
    uint8_t *over = calloc((size_t)k + 1, 1);
    for (int merged = merge_area > 0; merged;) {
        merged = 0;
        for (uint32_t r = 1; r <= k; r++) {
            uint32_t sz = 0;
            for (uint32_t s = 0; s < n; s++)
                sz += nv->reg[s] == r;
            if (sz == 0 || sz >= (uint32_t)merge_area)
                continue;
            memset(links, 0, ((size_t)k + 1) * sizeof *links);
            for (uint32_t s = 0; s < n; s++)
                for (int d = 0; d < 4 && nv->reg[s] == r; d++) {
                    uint32_t m = chf->links[s][d];
                    if (m != OP_NO_LINK && nv->reg[m] && nv->reg[m] != r &&
                        chf->areas[m] == chf->areas[s])
                        links[nv->reg[m]]++;
                }
            /* R2: a neighbour holding a span in a column of r is no candidate. */
            memset(over, 0, (size_t)k + 1);
            for (int c = 0; c < chf->width * chf->depth; c++) {
                int mine = 0;
                for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                    mine |= nv->reg[s] == r;
                for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1] && mine; s++)
                    over[nv->reg[s]] = 1;
            }
            uint32_t best = 0;
            for (uint32_t o = 1; o <= k; o++)
                if (!over[o] && links[o] > links[best])
                    best = o;
            if (best == 0)
                continue;
            for (uint32_t s = 0; s < n; s++)
                if (nv->reg[s] == r)
                    nv->reg[s] = best;
            merged = 1;
        }
    }
    uint32_t *newid = calloc((size_t)k + 1, sizeof *newid);
    uint32_t next = 0;
    for (uint32_t s = 0; s < n; s++)
        if (nv->reg[s] && !newid[nv->reg[s]])
            newid[nv->reg[s]] = ++next;
    res->span_count = n;
    res->region_count = (int)next;
    res->reg = calloc((size_t)n + 1, sizeof *res->reg);
    res->region_area = calloc((size_t)next + 1, 1);
    for (uint32_t s = 0; s < n; s++) {
        res->reg[s] = (uint16_t)newid[nv->reg[s]];
        if (nv->reg[s])
            res->region_area[newid[nv->reg[s]]] = (uint8_t)nv->area[nv->reg[s]];
    }
    free(size);
    free(island);
    free(links);
    free(over);
    free(newid);
    free(nv->reg);
}

static void naive_regions(const op_chf *chf, op_partition p, int min_area, int merge_area,
                          op_regions *res)
{
    naive *nv = calloc(1, sizeof *nv);
    if (p == OP_PARTITION_WATERSHED)
        naive_watershed(chf, nv);
    else if (p == OP_PARTITION_MONOTONE)
        naive_monotone(chf, nv);
    else
        naive_layers(chf, nv);
    naive_filter(chf, nv, min_area, p == OP_PARTITION_LAYERS ? 0 : merge_area, res);
    free(nv);
}

static void naive_free(op_regions *r)
{
    free(r->reg);
    free(r->region_area);
}

#endif
