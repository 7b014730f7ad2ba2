/*
 * Regions stage (build3d-regions.md §2–§5, §7): settings, the dispatcher over the three
 * partitions, the shared label graph, connected components and the canonical dump.
 *
 * Input: an op_chf whose links are mutual (OP_NO_LINK otherwise) and, for watershed, its
 * distance field. Output: op_regions, a uint16 region id per span (0 = none) numbered
 * 1..k in order of first span, and the area of each region. Every region has one area
 * and is connected through links. Typical size: a tile of 40-100 cells a side, 1-3
 * floors, 10^3-10^4 spans, tens of regions. Temporaries come from scratch, results from
 * out; no step allocates with malloc.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "regions_internal.h"

void op_region_settings_default(op_region_settings *rs)
{
    rs->partition = OP_PARTITION_WATERSHED;
    rs->min_region_area = 64;    /* 8 x 8 spans */
    rs->merge_region_area = 400; /* 20 x 20 spans */
}

/* Bounds as op_settings_validate's, so a valid op_settings gives valid region settings. */
#define OP__MAX_REGION_AREA (1 << 30)

op_status op_region_settings_validate(const op_region_settings *rs, op_err *err)
{
    if (!rs)
        return op_err_set(err, OP_EINVAL, "regions: NULL settings");
    if (rs->partition != OP_PARTITION_WATERSHED && rs->partition != OP_PARTITION_MONOTONE &&
        rs->partition != OP_PARTITION_LAYERS)
        return op_err_set(err, OP_ERANGE, "regions: partition = %d is not 0, 1 or 2",
                          (int)rs->partition);
    if (rs->min_region_area < 0 || rs->min_region_area > OP__MAX_REGION_AREA)
        return op_err_set(err, OP_ERANGE, "regions: min_region_area = %d is outside [0, %d]",
                          rs->min_region_area, OP__MAX_REGION_AREA);
    if (rs->merge_region_area < 0 || rs->merge_region_area > OP__MAX_REGION_AREA)
        return op_err_set(err, OP_ERANGE, "regions: merge_region_area = %d is outside [0, %d]",
                          rs->merge_region_area, OP__MAX_REGION_AREA);
    return OP_OK;
}

op_status op__regions_nomem(op_err *err, const char *step, size_t bytes)
{
    return op_err_set(err, OP_ENOMEM, "regions: %s: out of memory (%zu bytes)", step, bytes);
}

uint32_t op__walkable_count(const op_chf *chf)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < chf->span_count; s++)
        n += chf->areas[s] != 0;
    return n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Ascending sorts: values are totally ordered and equal ones identical, so any sort gives
 * the same array; a tile's lists are mostly a few dozen entries, where an insertion sort
 * is several times cheaper than qsort's set-up and callbacks. */
#define SMALL_SORT 48

static void sort_u64(uint64_t *v, size_t n)
{
    if (n > SMALL_SORT) {
        qsort(v, n, sizeof *v, cmp_u64);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void sort_u32(uint32_t *v, size_t n)
{
    if (n > SMALL_SORT) {
        qsort(v, n, sizeof *v, cmp_u32);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        uint32_t x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

op_status op__graph_build(uint64_t *pairs, size_t npairs, uint32_t count, op_arena *scratch,
                          op__graph *g, op_err *err)
{
    sort_u64(pairs, npairs);
    size_t nu = 0;
    for (size_t i = 0; i < npairs; i++)
        nu += (i == 0 || pairs[i] != pairs[i - 1]);
    g->start = op_arena_calloc(scratch, (size_t)count + 2, sizeof *g->start);
    g->nb = op_arena_alloc(scratch, (nu + 1) * sizeof *g->nb);
    g->w = op_arena_alloc(scratch, (nu + 1) * sizeof *g->w);
    if (!g->start || !g->nb || !g->w)
        return op__regions_nomem(err, "graph", ((size_t)count + 2 + 2 * nu) * 4);
    size_t k = 0;
    for (size_t i = 0; i < npairs; i++) {
        uint32_t a = (uint32_t)(pairs[i] >> 32), b = (uint32_t)pairs[i];
        if (i > 0 && pairs[i] == pairs[i - 1]) {
            g->w[k - 1]++;
            continue;
        }
        g->start[a + 1]++;
        g->nb[k] = b;
        g->w[k++] = 1;
    }
    for (uint32_t r = 0; r <= count; r++)
        g->start[r + 1] += g->start[r];
    return OP_OK;
}

/* ---- id sets and label pairs (the layer merge and §5.2) ---- */

int op__idset_has(const op__idset *s, uint32_t x)
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

uint32_t op__find_root(uint32_t *parent, uint32_t r)
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

void op__idset_resolve(op__idset *s, uint32_t *parent, uint32_t self)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t r = op__find_root(parent, s->v[i]);
        if (r != self)
            s->v[n++] = r;
    }
    sort_u32(s->v, n);
    uint32_t u = 0;
    for (uint32_t i = 0; i < n; i++)
        if (u == 0 || s->v[u - 1] != s->v[i])
            s->v[u++] = s->v[i];
    s->n = u;
}

op_status op__idset_absorb(op__idset *a, op__idset *b, op_arena *scratch, op_err *err)
{
    if (b->n > a->n) {
        op__idset t = *a;
        *a = *b;
        *b = t;
    }
    if (a->n + b->n > a->cap) {
        uint32_t cap = 2 * (a->n + b->n);
        uint32_t *v = op_arena_alloc(scratch, (size_t)cap * sizeof *v);
        if (!v)
            return op__regions_nomem(err, "id lists", (size_t)cap * 4);
        memcpy(v, a->v, (size_t)a->n * sizeof *v);
        a->v = v;
        a->cap = cap;
    }
    memcpy(a->v + a->n, b->v, (size_t)b->n * sizeof *b->v);
    a->n += b->n;
    b->n = 0;
    return OP_OK;
}

op_status op__idset_graph(uint64_t *pairs, size_t n, uint32_t count, op_arena *scratch,
                          op__idset *sets, op_err *err)
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

/* Column-sharing pairs, collected incrementally: a pair of labels shared by a column
 * was already collected from its reference column (its -x or -z neighbour, processed
 * earlier) when both labels are there too. So for each column only the labels that its
 * reference lacks ("entering") are paired with the column's labels, both ways. The sets
 * built from the pairs are sorted and deduplicated (op__idset_graph), so the result is
 * the same as pairing every column's k labels with each other, but the memory and time
 * follow where labels change, not every column's k^2: 1,024 stacked floors over 40 x 40
 * columns once asked 4.45 GB for 1.7 G pairs, of which 1 M are distinct. */
typedef struct pair_cols {
    const op_chf *chf;
    const uint32_t *reg;
    uint32_t *mark; /* mark[label] == stamp: the label is in the marked column */
    uint32_t stamp;
} pair_cols;

static void mark_column(pair_cols *pc, int o)
{
    const uint32_t *const reg = pc->reg;
    uint32_t *const mark = pc->mark;
    const uint32_t stamp = ++pc->stamp;
    for (uint32_t s = pc->chf->cells[o], e = pc->chf->cells[o + 1]; s < e; s++)
        mark[reg[s]] = stamp;
}

/* Labelled spans of column c whose label the marked column lacks. */
static size_t entering(const pair_cols *pc, int c)
{
    const uint32_t *const reg = pc->reg, *const mark = pc->mark;
    const uint32_t stamp = pc->stamp;
    size_t n = 0;
    for (uint32_t s = pc->chf->cells[c], e = pc->chf->cells[c + 1]; s < e; s++)
        n += reg[s] != 0 && mark[reg[s]] != stamp;
    return n;
}

/* Labelled spans of column c. */
static size_t labelled(const pair_cols *pc, int c)
{
    const uint32_t *const reg = pc->reg;
    size_t n = 0;
    for (uint32_t s = pc->chf->cells[c], e = pc->chf->cells[c + 1]; s < e; s++)
        n += reg[s] != 0;
    return n;
}

/* Column c's reference (-1: none, every label enters), the one with fewer entering
 * labels, given bn, c's labelled spans; *n_enter gets their count. Does not leave the
 * reference marked. */
static int pick_reference(pair_cols *pc, int c, size_t bn, size_t *n_enter)
{
    const op_chf *chf = pc->chf;
    int best = -1;
    int cand[2] = {c % chf->width > 0 ? c - 1 : -1, c >= chf->width ? c - chf->width : -1};
    for (int i = 0; i < 2 && bn > 0; i++) {
        if (cand[i] < 0 || chf->cells[cand[i] + 1] == chf->cells[cand[i]])
            continue;
        mark_column(pc, cand[i]);
        size_t n = entering(pc, c);
        if (n < bn) {
            bn = n;
            best = cand[i];
        }
    }
    *n_enter = bn;
    return best;
}

/* Pairs buffered before the first compaction (256 MiB). */
#define PAIRS_BUF ((size_t)32 << 20)

/* Sorts pairs[0..n) and drops repeats; returns the count left. */
static size_t unique_pairs(uint64_t *pairs, size_t n)
{
    sort_u64(pairs, n);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || pairs[i] != pairs[u - 1])
            pairs[u++] = pairs[i];
    return u;
}

op_status op__collect_pairs(const op_chf *chf, const uint32_t *reg, const uint8_t *area,
                            int same_area, op_arena *scratch, uint64_t **adj, size_t *nadj,
                            uint64_t **ovl, size_t *novl, op_err *err)
{
    size_t na = 0, no = 0, cap_o = 0;
    const int ncols = chf->width * chf->depth;
    const uint32_t *const cells = chf->cells;
    const uint32_t(*const links)[4] = chf->links;
    uint32_t maxreg = 0;
    for (uint32_t s = 0, ns = chf->span_count; s < ns; s++)
        maxreg = reg[s] > maxreg ? reg[s] : maxreg;
    pair_cols pc = {chf, reg, op_arena_calloc(scratch, (size_t)maxreg + 1, sizeof(uint32_t)), 0};
    /* The columns that add pairs, in order, and their references. */
    int *col = op_arena_alloc(scratch, ((size_t)ncols + 1) * sizeof *col);
    int *ref = op_arena_alloc(scratch, ((size_t)ncols + 1) * sizeof *ref);
    int ncol = 0;
    if (!pc.mark || !col || !ref)
        return op__regions_nomem(err, "label pairs", ((size_t)maxreg + 2 * (size_t)ncols + 3) * 4);
    /* Count first, so the pairs are allocated once. A column with fewer than two labelled
     * spans pairs nothing, whatever its reference. */
    for (int c = 0; c < ncols; c++) {
        size_t k = cells[c + 1] - cells[c], n, bn;
        if (k < 2 || (bn = labelled(&pc, c)) < 2)
            continue;
        int r = pick_reference(&pc, c, bn, &n);
        if (n == 0)
            continue;
        col[ncol] = c;
        ref[ncol++] = r;
        cap_o += 2 * n * k;
    }
    /* Labels that change every column (floors staggered around a ring) still repeat
     * pairs: past PAIRS_BUF the buffer is compacted (sorted, duplicates dropped) whenever
     * it fills, and doubled only when the distinct pairs fill half of it. */
    size_t cap = cap_o < PAIRS_BUF ? cap_o : PAIRS_BUF;
    uint64_t *pa = adj ? op_arena_alloc(scratch, ((size_t)chf->span_count * 4 + 1) * 8) : NULL;
    uint64_t *po = op_arena_alloc(scratch, (cap + 1) * 8);
    if ((adj && !pa) || !po)
        return op__regions_nomem(err, "label pairs", ((size_t)chf->span_count * 4 + cap) * 8);
    for (uint32_t s = 0, ns = chf->span_count; pa && s < ns; s++) {
        uint32_t r = reg[s];
        for (int d = 0; r != 0 && d < 4; d++) {
            uint32_t m = links[s][d];
            if (m != OP_NO_LINK && reg[m] != 0 && reg[m] != r &&
                (!same_area || area[reg[m]] == area[r]))
                pa[na++] = (uint64_t)r << 32 | reg[m];
        }
    }
    for (int i = 0; i < ncol; i++) {
        const int c = col[i];
        if (ref[i] >= 0)
            mark_column(&pc, ref[i]);
        else
            pc.stamp++; /* nothing marked: every label enters */
        const uint32_t c0 = cells[c], c1 = cells[c + 1], stamp = pc.stamp;
        size_t k2 = 2 * (size_t)(c1 - c0);
        for (uint32_t s = c0; s < c1; s++) {
            uint32_t r = reg[s];
            if (r == 0 || pc.mark[r] == stamp)
                continue;
            if (no + k2 > cap) {
                no = unique_pairs(po, no);
                if (no + k2 > cap / 2) {
                    uint64_t *grown = op_arena_alloc(scratch, (2 * cap + k2 + 1) * 8);
                    if (!grown)
                        return op__regions_nomem(err, "label pairs", (2 * cap + k2) * 8);
                    memcpy(grown, po, no * 8);
                    po = grown;
                    cap = 2 * cap + k2;
                }
            }
            for (uint32_t t = c0; t < c1; t++)
                if (t != s && reg[t] != 0 && reg[t] != r &&
                    (!same_area || area[reg[t]] == area[r])) {
                    po[no++] = (uint64_t)r << 32 | reg[t];
                    po[no++] = (uint64_t)reg[t] << 32 | r;
                }
        }
    }
    if (adj) {
        *adj = pa;
        *nadj = na;
    }
    *ovl = po;
    *novl = no;
    return OP_OK;
}

op_status op__components(const op_chf *chf, const uint16_t *key, op_arena *scratch, op__labels *lab,
                         op_err *err)
{
    uint32_t n = chf->span_count;
    uint32_t nw = op__walkable_count(chf);
    lab->reg = op_arena_calloc(scratch, (size_t)n + 1, sizeof *lab->reg);
    lab->area = op_arena_alloc(scratch, (size_t)nw + 1);
    uint32_t *queue = op_arena_alloc(scratch, ((size_t)nw + 1) * sizeof *queue);
    if (!lab->reg || !lab->area || !queue)
        return op__regions_nomem(err, "components", ((size_t)n + 5 * (size_t)nw) * 4);
    /* Flooding from each unlabelled span in index order gives the same sets as a union
     * over the -x and -z links, with ids in order of first span. The field is read through
     * locals (the label stores could alias it: no strict aliasing), the four links unrolled. */
    const uint32_t(*const links)[4] = chf->links;
    const uint8_t *const areas = chf->areas;
    uint32_t *const reg = lab->reg;
    uint32_t count = 0;
    lab->area[0] = 0;
    for (uint32_t s = 0; s < n; s++) {
        if (areas[s] == 0 || reg[s] != 0)
            continue;
        uint32_t id = ++count, head = 0, tail = 0;
        lab->area[id] = areas[s];
        reg[s] = id;
        queue[tail++] = s;
        while (head < tail) {
            uint32_t c = queue[head++];
            const uint32_t *l = links[c];
            uint8_t ac = areas[c];
            uint16_t kc = key ? key[c] : 0;
#define OP__FLOOD(d)                                                                               \
    do {                                                                                           \
        uint32_t m = l[d];                                                                         \
        if (m != OP_NO_LINK && reg[m] == 0 && areas[m] == ac && (!key || key[m] == kc)) {          \
            reg[m] = id;                                                                           \
            queue[tail++] = m;                                                                     \
        }                                                                                          \
    } while (0)
            OP__FLOOD(0);
            OP__FLOOD(1);
            OP__FLOOD(2);
            OP__FLOOD(3);
#undef OP__FLOOD
        }
    }
    lab->count = count;
    return OP_OK;
}

static op_status check_chf(const op_chf *chf, op_err *err)
{
    if (!chf || !chf->cells || (chf->span_count && (!chf->links || !chf->areas)))
        return op_err_set(err, OP_EINVAL, "regions: NULL compact heightfield or arrays");
    if (chf->width < 0 || chf->depth < 0)
        return op_err_set(err, OP_EINVAL, "regions: grid %d x %d", chf->width, chf->depth);
    return OP_OK;
}

op_status op_regions_build(const op_chf *chf, const op_region_settings *rs, op_arena *out,
                           op_arena *scratch, op_regions *res, op_err *err)
{
    op_status st;
    if (!res || !out || !scratch)
        return op_err_set(err, OP_EINVAL, "regions: NULL argument");
    if ((st = check_chf(chf, err)) != OP_OK || (st = op_region_settings_validate(rs, err)) != OP_OK)
        return st;
    op__labels lab;
    switch (rs->partition) {
    case OP_PARTITION_WATERSHED:
        if (!chf->dist)
            return op_err_set(err, OP_EINVAL, "regions: watershed needs the distance field");
        st = op__watershed(chf, scratch, &lab, err);
        break;
    case OP_PARTITION_MONOTONE:
        st = op__monotone(chf, scratch, &lab, err);
        break;
    default:
        st = op__layers(chf, rs->min_region_area, 0, scratch, &lab, err);
        break;
    }
    if (st != OP_OK)
        return st;
    int merge = rs->partition == OP_PARTITION_LAYERS ? 0 : rs->merge_region_area;
    return op__filter(chf, &lab, rs->min_region_area, merge, out, scratch, res, err);
}

op_status op__regions_build_layers_general(const op_chf *chf, const op_region_settings *rs,
                                           op_arena *out, op_arena *scratch, op_regions *res,
                                           op_err *err)
{
    op_status st;
    if ((st = check_chf(chf, err)) != OP_OK || (st = op_region_settings_validate(rs, err)) != OP_OK)
        return st;
    op__labels lab;
    if ((st = op__layers(chf, rs->min_region_area, 1, scratch, &lab, err)) != OP_OK)
        return st;
    return op__filter(chf, &lab, rs->min_region_area, 0, out, scratch, res, err);
}

/* ---- canonical dump ---- */

static int emit(op_write_fn write, void *ctx, char *buf, int len)
{
    return write(ctx, buf, (size_t)len);
}

int op_regions_dump(const op_chf *chf, const op_regions *r, op_write_fn write, void *ctx)
{
    char buf[128];
    int rc;
    rc = emit(write, ctx, buf,
              snprintf(buf, sizeof buf, "regions %d spans %" PRIu32 "\n", r->region_count,
                       r->span_count));
    for (int i = 1; i <= r->region_count && rc == 0; i++)
        rc = emit(write, ctx, buf,
                  snprintf(buf, sizeof buf, "region %d area %d\n", i, r->region_area[i]));
    for (int z = 0; z < chf->depth && rc == 0; z++)
        for (int x = 0; x < chf->width && rc == 0; x++) {
            int c = x + z * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1] && rc == 0; s++)
                rc = emit(write, ctx, buf,
                          snprintf(buf, sizeof buf, "%" PRIu32 " %d %d %d %d %d\n", s, x, z,
                                   chf->y ? chf->y[s] : 0, chf->areas[s], r->reg[s]));
        }
    return rc;
}
