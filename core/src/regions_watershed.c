/*
 * Watershed partition (build3d-regions.md §2), before the §5 filter.
 *
 * Input: op_chf with mutual links and its exact distance field. Output: raw labels
 * (op__labels). Walkable spans are taken level by level from the largest distance down;
 * within a level, ties are in span-index order. Each level first grows the existing
 * regions in synchronous rounds, then turns what is left into new basins.
 *
 * Cost: a counting sort by distance buckets the spans once (distances are at most a few
 * times the grid side), and every growth round only revisits the spans next to the
 * previous round's joins (a frontier), so the whole pass is linear in the span count
 * plus the largest distance.
 */
#include <string.h>

#include "regions_internal.h"

/* Walkable spans ordered by distance descending, then span index ascending; level L's
 * spans are order[lstart[L] .. lstart[L + 1]). */
#define NOT_WALKABLE 0xffffffffu /* distances are below: at most a few times the grid side */

typedef struct levels {
    uint32_t *order;
    uint32_t *lstart; /* maxd + 2 entries */
    uint32_t *lvl;    /* per span: its distance when walkable, else NOT_WALKABLE */
    uint32_t maxd;
    uint32_t n;
} levels;

/* The buckets of the distances up to cap (cap + 2 entries of lstart) and every span's level,
 * counted in one pass; 0 (nothing counted past the levels) when some walkable span lies
 * farther than cap. */
static int count_levels(const op_chf *chf, uint32_t cap, levels *lv)
{
    const uint8_t *const areas = chf->areas;
    const uint32_t *const dist = chf->dist;
    const uint32_t ns = chf->span_count;
    uint32_t *const lstart = lv->lstart, *const lvl = lv->lvl;
    uint32_t maxd = 0, n = 0;
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t d = areas[s] != 0 ? dist[s] : NOT_WALKABLE;
        lvl[s] = d;
        if (d == NOT_WALKABLE)
            continue;
        if (d > cap)
            return 0;
        n++;
        maxd = d > maxd ? d : maxd;
        lstart[d + 1]++;
    }
    lv->maxd = maxd;
    lv->n = n;
    return 1;
}

/* A bound on the distances, from the grid alone: a walkable span's walk along its -x links
 * reaches a boundary span (a missing link at the latest in column 0) within width - 1 steps
 * of cost 2, so its distance (the least over all paths, build3d-spans.md §8) is at most
 * 2 (width - 1). A field whose distances exceed it anyway (one made by hand) is counted by
 * the two passes. */
static uint32_t distance_cap(const op_chf *chf)
{
    return chf->width > 0 ? 2 * ((uint32_t)chf->width - 1) : 0;
}

static op_status sort_levels(const op_chf *chf, op_arena *scratch, levels *lv, op_err *err)
{
    const uint8_t *const areas = chf->areas;
    const uint32_t *const dist = chf->dist;
    const uint32_t ns = chf->span_count;
    uint32_t cap = distance_cap(chf);
    lv->lvl = op_arena_alloc(scratch, ((size_t)ns + 1) * sizeof *lv->lvl);
    lv->lstart = op_arena_calloc(scratch, (size_t)cap + 2, sizeof *lv->lstart);
    if (!lv->lvl || !lv->lstart)
        return op__regions_nomem(err, "watershed levels", ((size_t)cap + ns + 3) * 4);
    if (!count_levels(chf, cap, lv)) {
        /* Past the bound: the largest distance first, then the buckets. */
        uint32_t maxd = 0;
        for (uint32_t s = 0; s < ns; s++)
            if (areas[s] != 0 && dist[s] > maxd)
                maxd = dist[s];
        lv->lstart = op_arena_calloc(scratch, (size_t)maxd + 2, sizeof *lv->lstart);
        if (!lv->lstart)
            return op__regions_nomem(err, "watershed levels", ((size_t)maxd + 2) * 4);
        if (!count_levels(chf, maxd, lv))
            return op_err_set(err, OP_EINTERNAL, "regions: watershed levels miscounted");
    }
    uint32_t maxd = lv->maxd, n = lv->n;
    lv->order = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *lv->order);
    if (!lv->order)
        return op__regions_nomem(err, "watershed levels", ((size_t)n + 1) * 4);
    uint32_t *const lstart = lv->lstart, *const order = lv->order, *const lvl = lv->lvl;
    for (uint32_t d = 0; d <= maxd; d++)
        lstart[d + 1] += lstart[d];
    /* Scatter in index order: each bucket stays in span-index order. lstart[d] is used as
     * the bucket's fill pointer and restored afterwards. */
    for (uint32_t s = 0; s < ns; s++)
        if (lvl[s] != NOT_WALKABLE)
            order[lstart[lvl[s]]++] = s;
    for (uint32_t d = maxd + 1; d > 0; d--)
        lstart[d] = lstart[d - 1];
    lstart[0] = 0;
    return OP_OK;
}

typedef struct ws_state {
    const op_chf *chf;
    op__labels *lab;
    uint32_t *cand, *next; /* growth frontier (current and next round) */
    uint32_t *joins;       /* span, region pairs decided in the round */
    uint32_t *lvl;         /* levels.lvl; level + 1 while a span of the level is queued */
} ws_state;

/* The loops below read the field through these locals: the build compiles without strict
 * aliasing, so every store to a label would otherwise reload each pointer. */

/* Smallest region among s's neighbours with a region and s's area, 0 if none. */
static inline uint32_t best_neighbour_region(const uint32_t (*links)[4], const uint8_t *areas,
                                             const uint32_t *reg, uint32_t s)
{
    const uint32_t *l = links[s];
    uint8_t area = areas[s];
    uint32_t best = 0;
    /* Unrolled by hand: gcc -O2 keeps the four-trip loop. */
#define OP__WS_NEIGHBOUR(d)                                                                        \
    do {                                                                                           \
        uint32_t m = l[d];                                                                         \
        if (m != OP_NO_LINK) {                                                                     \
            uint32_t r = reg[m];                                                                   \
            if (r != 0 && (best == 0 || r < best) && areas[m] == area)                             \
                best = r;                                                                          \
        }                                                                                          \
    } while (0)
    OP__WS_NEIGHBOUR(0);
    OP__WS_NEIGHBOUR(1);
    OP__WS_NEIGHBOUR(2);
    OP__WS_NEIGHBOUR(3);
#undef OP__WS_NEIGHBOUR
    return best;
}

/* Growth of level L: synchronous rounds over a frontier. The candidates of a round are
 * judged on the state at its start (joins are applied after all are decided), so their
 * order does not change the result; they are kept in discovery order. */
static void grow_level(ws_state *w, const uint32_t *spans, uint32_t nspans, uint32_t level)
{
    const op_chf *chf = w->chf;
    const uint32_t(*const links)[4] = chf->links;
    const uint8_t *const areas = chf->areas;
    uint32_t *const lvl = w->lvl;
    uint32_t *const reg = w->lab->reg;
    uint32_t *const joins = w->joins;
    uint32_t *cand = w->cand, *next = w->next;
    uint32_t ncand = nspans;
    memcpy(cand, spans, (size_t)nspans * sizeof *spans);
    while (ncand > 0) {
        uint32_t nj = 0;
        for (uint32_t i = 0; i < ncand; i++) {
            uint32_t s = cand[i];
            /* A queued span is marked level + 1 (no level's value while this level grows, and
             * above every later one) so that a round queues it once; judged now, it may be
             * queued again by a later round. */
            lvl[s] = level;
            if (reg[s] != 0)
                continue;
            uint32_t r = best_neighbour_region(links, areas, reg, s);
            if (r != 0) {
                joins[2 * nj] = s;
                joins[2 * nj + 1] = r;
                nj++;
            }
        }
        for (uint32_t j = 0; j < nj; j++)
            reg[joins[2 * j]] = joins[2 * j + 1];
        /* Next candidates: unassigned spans of this level next to a span that joined. */
        uint32_t nnext = 0;
        for (uint32_t j = 0; j < nj; j++) {
            const uint32_t *l = links[joins[2 * j]];
#define OP__WS_QUEUE(d)                                                                            \
    do {                                                                                           \
        uint32_t m = l[d];                                                                         \
        if (m != OP_NO_LINK && reg[m] == 0 && lvl[m] == level) {                                   \
            lvl[m] = level + 1;                                                                    \
            next[nnext++] = m;                                                                     \
        }                                                                                          \
    } while (0)
            OP__WS_QUEUE(0);
            OP__WS_QUEUE(1);
            OP__WS_QUEUE(2);
            OP__WS_QUEUE(3);
#undef OP__WS_QUEUE
        }
        uint32_t *t = cand;
        cand = next;
        next = t;
        ncand = nnext;
    }
    w->cand = cand;
    w->next = next;
}

/* Basins: each still-unassigned span of the level, in index order, starts a new region
 * and floods its connected unassigned spans of the same area and level. */
static void basins_level(ws_state *w, const uint32_t *spans, uint32_t nspans, uint32_t level)
{
    const op_chf *chf = w->chf;
    const uint32_t(*const links)[4] = chf->links;
    const uint8_t *const areas = chf->areas;
    const uint32_t *const dist = chf->dist;
    op__labels *lab = w->lab;
    uint32_t *const reg = lab->reg;
    uint32_t *const queue = w->next;
    uint32_t count = lab->count;
    for (uint32_t i = 0; i < nspans; i++) {
        uint32_t s = spans[i];
        if (reg[s] != 0)
            continue;
        uint32_t id = ++count, head = 0, tail = 0;
        lab->area[id] = areas[s];
        reg[s] = id;
        queue[tail++] = s;
        while (head < tail) {
            uint32_t c = queue[head++];
            const uint32_t *l = links[c];
            for (int d = 0; d < 4; d++) {
                uint32_t m = l[d];
                if (m == OP_NO_LINK || reg[m] != 0 || areas[m] != areas[c] || dist[m] != level)
                    continue;
                reg[m] = id;
                queue[tail++] = m;
            }
        }
    }
    lab->count = count;
}

op_status op__watershed(const op_chf *chf, op_arena *scratch, op__labels *lab, op_err *err)
{
    levels lv = {0}; /* gcc -O3 cannot see that sort_levels sets it on every OP_OK path */
    op_status st = sort_levels(chf, scratch, &lv, err);
    if (st != OP_OK)
        return st;
    size_t n1 = (size_t)lv.n + 1, ns = (size_t)chf->span_count + 1;
    ws_state w = {chf, lab, NULL, NULL, NULL, lv.lvl};
    lab->reg = op_arena_calloc(scratch, ns, sizeof *lab->reg);
    lab->area = op_arena_alloc(scratch, n1);
    lab->count = 0;
    w.cand = op_arena_alloc(scratch, n1 * sizeof *w.cand);
    w.next = op_arena_alloc(scratch, n1 * sizeof *w.next);
    w.joins = op_arena_alloc(scratch, 2 * n1 * sizeof *w.joins);
    if (!lab->reg || !lab->area || !w.cand || !w.next || !w.joins)
        return op__regions_nomem(err, "watershed", ns * 4 + n1 * 17);
    lab->area[0] = 0;
    for (uint32_t l = lv.maxd + 1; l-- > 0;) {
        const uint32_t *spans = lv.order + lv.lstart[l];
        uint32_t nspans = lv.lstart[l + 1] - lv.lstart[l];
        if (nspans == 0)
            continue;
        grow_level(&w, spans, nspans, l);
        basins_level(&w, spans, nspans, l);
    }
    return OP_OK;
}
