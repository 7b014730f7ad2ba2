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

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* Ascending sorts: values are totally ordered and equal ones identical, so any sort gives
 * the same array; a tile's lists are mostly a few dozen entries, where an insertion sort
 * is several times cheaper than qsort's set-up and callbacks. One definition for both
 * widths, so the two cannot drift apart. */
#define SMALL_SORT 48

#define DEFINE_SORT(T, name)                                                                       \
    static int cmp_##name(const void *a, const void *b)                                            \
    {                                                                                              \
        T x = *(const T *)a, y = *(const T *)b;                                                    \
        return (x > y) - (x < y);                                                                  \
    }                                                                                              \
    static void sort_##name(T *v, size_t n)                                                        \
    {                                                                                              \
        if (n > SMALL_SORT) {                                                                      \
            qsort(v, n, sizeof *v, cmp_##name);                                                    \
            return;                                                                                \
        }                                                                                          \
        for (size_t i = 1; i < n; i++) {                                                           \
            T x = v[i];                                                                            \
            size_t j = i;                                                                          \
            for (; j > 0 && v[j - 1] > x; j--)                                                     \
                v[j] = v[j - 1];                                                                   \
            v[j] = x;                                                                              \
        }                                                                                          \
    }

DEFINE_SORT(uint64_t, u64)
DEFINE_SORT(uint32_t, u32)

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

static int links_labels(const op_chf *chf, const uint32_t *reg, const uint8_t *area, int same_area,
                        uint32_t s, int d)
{
    uint32_t r = reg[s], m = chf->links[s][d];
    return r != 0 && m != OP_NO_LINK && reg[m] != 0 && reg[m] != r &&
           (!same_area || area[reg[m]] == area[r]);
}

op_status op__link_pairs(const op_chf *chf, const uint32_t *reg, const uint8_t *area, int same_area,
                         op_arena *scratch, uint64_t **adj, size_t *nadj, op_err *err)
{
    /* Count first: a tile of many floors has millions of spans but few linked pairs. */
    size_t na = 0;
    for (uint32_t s = 0; s < chf->span_count; s++)
        for (int d = 0; d < 4; d++)
            na += (size_t)links_labels(chf, reg, area, same_area, s, d);
    uint64_t *pa = op_arena_alloc(scratch, (na + 1) * 8);
    if (!pa)
        return op__regions_nomem(err, "label pairs", (na + 1) * 8);
    na = 0;
    for (uint32_t s = 0; s < chf->span_count; s++)
        for (int d = 0; d < 4; d++)
            if (links_labels(chf, reg, area, same_area, s, d))
                pa[na++] = (uint64_t)reg[s] << 32 | reg[chf->links[s][d]];
    *adj = pa;
    *nadj = na;
    return OP_OK;
}

/* Column sharing, collected incrementally: two labels shared by a column were already
 * found in its reference column (its -x or -z neighbour, visited earlier) when both labels
 * are there too. So only the labels a column's reference lacks ("entering") need pairing
 * with the column's labels, both ways; every shared pair is found that way, by induction
 * over the columns. The pairs are not listed and sorted (labels that change every column,
 * floors staggered around a ring, once generated 100 M pairs for 4 M distinct ones: 31 s
 * of sorting, 0.95 GB). Instead each label's entering columns are visited together, and a
 * stamp per label drops the labels already found for it: R(x) = the labels sharing a
 * column where x enters. The set of x is R(x) together with every y whose R(y) holds x.
 * Memory: the result (two ids per shared pair at most) plus O(labels + spans); time: the
 * entering spans times their column's size, as a stamp test each. */
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
 * labels, given bn, c's labelled spans. Leaves the reference marked. */
static void pick_reference(pair_cols *pc, int c, size_t bn)
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
    if (best >= 0)
        mark_column(pc, best);
    else
        pc->stamp++; /* nothing marked: every label enters */
}

/* The columns of two spans or more, in column order, into multi (room for every cell):
 * their count. Found once for the two passes of entering_columns, which then skip the
 * one-span columns of a floor without reading them again. */
static uint32_t multi_span_columns(const op_chf *chf, uint32_t *multi)
{
    uint32_t n = 0;
    const uint32_t *const cells = chf->cells;
    int c = 0;
    const int nc = chf->width * chf->depth;
#ifdef __SSE2__
    /* Four columns at once: most columns of a tile hold one span (every column of a
     * one-floor tile), and four span counts below two are one compare. The counts fit in
     * 31 bits (cells[] ascends and holds the span count), so the signed compare is exact;
     * a group with a multi-span column takes the scalar test below. */
    const __m128i one = _mm_set1_epi32(1);
    for (; c + 4 <= nc; c += 4) {
        __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)(cells + c));
        __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(cells + c + 1));
        if (_mm_movemask_epi8(_mm_cmpgt_epi32(_mm_sub_epi32(hi, lo), one)) == 0)
            continue;
        for (int k = c; k < c + 4; k++) {
            multi[n] = (uint32_t)k;
            n += cells[k + 1] - cells[k] >= 2;
        }
    }
#endif
    for (; c < nc; c++) {
        multi[n] = (uint32_t)c;
        n += cells[c + 1] - cells[c] >= 2;
    }
    return n;
}

/* Visits the entering labels of every column of multi[0 .. nmulti) (the columns of two
 * spans or more, multi_span_columns), in column order, each label once a column: counts
 * them per label (cols NULL) or writes column c into cols[at[x]++] for entering label x. */
static void entering_columns(pair_cols *pc, const uint32_t *multi, uint32_t nmulti, uint32_t *count,
                             uint32_t *at, uint32_t *cols)
{
    const op_chf *chf = pc->chf;
    for (uint32_t k = 0; k < nmulti; k++) {
        int c = (int)multi[k];
        size_t bn;
        /* A column with fewer than two labelled spans shares no pair, and cannot hold
         * both labels of a pair that a later column takes it as the reference for. */
        if ((bn = labelled(pc, c)) < 2)
            continue;
        pick_reference(pc, c, bn);
        for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
            uint32_t r = pc->reg[s];
            if (r == 0 || pc->mark[r] == pc->stamp)
                continue;
            pc->mark[r] = pc->stamp; /* a second span of r in c enters no more */
            if (cols)
                cols[at[r]++] = (uint32_t)c;
            else
                count[r]++;
        }
    }
}

/* R(x) into out (unsorted), through the stamp seen[] (seen[y] == x: y already in R(x)). */
static uint32_t shared_with(const op_chf *chf, const uint32_t *reg, const uint8_t *area,
                            int same_area, uint32_t x, const uint32_t *cols, uint32_t ncols,
                            uint32_t *seen, uint32_t *out)
{
    uint32_t n = 0;
    seen[x] = x;
    for (uint32_t i = 0; i < ncols; i++)
        for (uint32_t s = chf->cells[cols[i]]; s < chf->cells[cols[i] + 1]; s++) {
            uint32_t y = reg[s];
            if (y == 0 || seen[y] == x || (same_area && area[y] != area[x]))
                continue;
            seen[y] = x;
            out[n++] = y;
        }
    return n;
}

op_status op__overlap_sets(const op_chf *chf, const uint32_t *reg, const uint8_t *area,
                           int same_area, uint32_t count, op_arena *scratch, op__idset *sets,
                           op_err *err)
{
    size_t nl = (size_t)count + 1;
    pair_cols pc = {chf, reg, op_arena_calloc(scratch, nl, sizeof(uint32_t)), 0};
    uint32_t *ecount = op_arena_calloc(scratch, nl, sizeof *ecount);
    uint32_t *estart = op_arena_alloc(scratch, (nl + 1) * sizeof *estart);
    uint32_t *seen = op_arena_calloc(scratch, nl, sizeof *seen);
    uint32_t *row = op_arena_alloc(scratch, 2 * nl * sizeof *row);
    uint32_t *size = op_arena_calloc(scratch, nl + 1, sizeof *size);
    size_t ncells = (size_t)chf->width * (size_t)chf->depth;
    uint32_t *multi = op_arena_alloc(scratch, (ncells + 1) * sizeof *multi);
    if (!pc.mark || !ecount || !estart || !seen || !row || !size || !multi)
        return op__regions_nomem(err, "overlap sets", nl * 28 + ncells * 4);
    uint32_t nmulti = multi_span_columns(chf, multi);
    /* The entering columns of each label, grouped by label (a counting sort). */
    entering_columns(&pc, multi, nmulti, ecount, NULL, NULL);
    estart[0] = 0;
    for (uint32_t x = 0; x <= count; x++)
        estart[x + 1] = estart[x] + ecount[x];
    uint32_t *cols = op_arena_alloc(scratch, ((size_t)estart[nl] + 1) * sizeof *cols);
    uint32_t *at = ecount; /* reused as the fill cursor */
    if (!cols)
        return op__regions_nomem(err, "overlap sets", ((size_t)estart[nl] + 1) * 4);
    for (uint32_t x = 0; x <= count; x++)
        at[x] = estart[x];
    entering_columns(&pc, multi, nmulti, NULL, at, cols);
    /* Pass 1: the size of each set before deduplication, |R(x)| plus the R(y) holding x. */
    for (uint32_t x = 1; x <= count; x++) {
        uint32_t n = shared_with(chf, reg, area, same_area, x, cols + estart[x],
                                 estart[x + 1] - estart[x], seen, row);
        size[x] += n;
        for (uint32_t i = 0; i < n; i++)
            size[row[i]]++;
    }
    size_t total = 0;
    for (uint32_t x = 0; x <= count; x++)
        total += size[x];
    uint32_t *v = op_arena_alloc(scratch, (total + 1) * sizeof *v);
    if (!v)
        return op__regions_nomem(err, "overlap sets", (total + 1) * 4);
    /* Pass 2: R(x) sorted at the front of x's slot, then x appended to each y of R(x) in
     * increasing x, so every slot holds two ascending runs. */
    size_t off = 0;
    for (uint32_t x = 0; x <= count; x++) {
        sets[x].v = v + off;
        sets[x].n = 0;
        sets[x].cap = size[x];
        off += size[x];
        seen[x] = 0;
    }
    for (uint32_t x = 1; x <= count; x++) {
        uint32_t n = shared_with(chf, reg, area, same_area, x, cols + estart[x],
                                 estart[x + 1] - estart[x], seen, row);
        if (n > 1)
            sort_u32(row, n);
        /* R(x) comes before any y > x appends x: y's turn is later. Entries from y < x
         * are already in the slot: move them behind R(x). */
        op__idset *sx = &sets[x];
        memmove(sx->v + n, sx->v, (size_t)sx->n * sizeof *sx->v);
        memcpy(sx->v, row, (size_t)n * sizeof *row);
        size[x] = n; /* length of the first run */
        sx->n += n;
        for (uint32_t i = 0; i < n; i++) {
            op__idset *sy = &sets[row[i]];
            sy->v[sy->n++] = x;
        }
    }
    /* Merge the two runs of each slot, dropping repeats. */
    for (uint32_t x = 1; x <= count; x++) {
        op__idset *sx = &sets[x];
        uint32_t a = size[x], b = sx->n, i = 0, j = a, u = 0;
        while (i < a || j < b) {
            uint32_t y = j >= b || (i < a && sx->v[i] <= sx->v[j]) ? sx->v[i++] : sx->v[j++];
            if (u == 0 || row[u - 1] != y)
                row[u++] = y;
        }
        memcpy(sx->v, row, (size_t)u * sizeof *row);
        sx->n = u;
    }
    sets[0].n = 0;
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
