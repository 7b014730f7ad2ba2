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
typedef struct levels {
    uint32_t *order;
    uint32_t *lstart; /* maxd + 2 entries */
    uint32_t maxd;
    uint32_t n;
} levels;

static op_status sort_levels(const op_chf *chf, op_arena *scratch, levels *lv, op_err *err)
{
    uint32_t maxd = 0, n = 0;
    for (uint32_t s = 0; s < chf->span_count; s++)
        if (chf->areas[s] != 0) {
            n++;
            if (chf->dist[s] > maxd)
                maxd = chf->dist[s];
        }
    lv->maxd = maxd;
    lv->n = n;
    lv->lstart = op_arena_calloc(scratch, (size_t)maxd + 2, sizeof *lv->lstart);
    lv->order = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *lv->order);
    if (!lv->lstart || !lv->order)
        return op__regions_nomem(err, "watershed levels", ((size_t)maxd + n + 3) * 4);
    for (uint32_t s = 0; s < chf->span_count; s++)
        if (chf->areas[s] != 0)
            lv->lstart[chf->dist[s] + 1]++;
    for (uint32_t d = 0; d <= maxd; d++)
        lv->lstart[d + 1] += lv->lstart[d];
    /* Scatter in index order: each bucket stays in span-index order. lstart[d] is used as
     * the bucket's fill pointer and restored afterwards. */
    for (uint32_t s = 0; s < chf->span_count; s++)
        if (chf->areas[s] != 0)
            lv->order[lv->lstart[chf->dist[s]]++] = s;
    for (uint32_t d = maxd + 1; d > 0; d--)
        lv->lstart[d] = lv->lstart[d - 1];
    lv->lstart[0] = 0;
    return OP_OK;
}

typedef struct ws_state {
    const op_chf *chf;
    op__labels *lab;
    uint32_t *cand, *next; /* growth frontier (current and next round) */
    uint32_t *joins;       /* span, region pairs decided in the round */
    uint32_t *stamp;       /* per span: last round that queued it */
    uint32_t round;
} ws_state;

/* Smallest region among s's neighbours with a region and s's area, 0 if none. */
static uint32_t best_neighbour_region(const ws_state *w, uint32_t s)
{
    const op_chf *chf = w->chf;
    const uint32_t *l = chf->links[s], *reg = w->lab->reg;
    uint8_t area = chf->areas[s];
    uint32_t best = 0;
    for (int d = 0; d < 4; d++) {
        uint32_t m = l[d];
        if (m == OP_NO_LINK)
            continue;
        uint32_t r = reg[m];
        if (r != 0 && (best == 0 || r < best) && chf->areas[m] == area)
            best = r;
    }
    return best;
}

/* Growth of level L: synchronous rounds over a frontier. The candidates of a round are
 * judged on the state at its start (joins are applied after all are decided), so their
 * order does not change the result; they are kept in discovery order. */
static void grow_level(ws_state *w, const uint32_t *spans, uint32_t nspans, uint32_t level)
{
    const op_chf *chf = w->chf;
    uint32_t *reg = w->lab->reg;
    uint32_t ncand = nspans;
    memcpy(w->cand, spans, (size_t)nspans * sizeof *spans);
    while (ncand > 0) {
        uint32_t nj = 0;
        for (uint32_t i = 0; i < ncand; i++) {
            uint32_t s = w->cand[i];
            if (reg[s] != 0)
                continue;
            uint32_t r = best_neighbour_region(w, s);
            if (r != 0) {
                w->joins[2 * nj] = s;
                w->joins[2 * nj + 1] = r;
                nj++;
            }
        }
        for (uint32_t j = 0; j < nj; j++)
            reg[w->joins[2 * j]] = w->joins[2 * j + 1];
        /* Next candidates: unassigned spans of this level next to a span that joined. */
        uint32_t round = ++w->round;
        uint32_t nnext = 0;
        for (uint32_t j = 0; j < nj; j++) {
            uint32_t s = w->joins[2 * j];
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[s][d];
                if (m == OP_NO_LINK || reg[m] != 0 || chf->areas[m] == 0 || chf->dist[m] != level ||
                    w->stamp[m] == round)
                    continue;
                w->stamp[m] = round;
                w->next[nnext++] = m;
            }
        }
        uint32_t *t = w->cand;
        w->cand = w->next;
        w->next = t;
        ncand = nnext;
    }
}

/* Basins: each still-unassigned span of the level, in index order, starts a new region
 * and floods its connected unassigned spans of the same area and level. */
static void basins_level(ws_state *w, const uint32_t *spans, uint32_t nspans, uint32_t level)
{
    const op_chf *chf = w->chf;
    op__labels *lab = w->lab;
    uint32_t *queue = w->next;
    for (uint32_t i = 0; i < nspans; i++) {
        uint32_t s = spans[i];
        if (lab->reg[s] != 0)
            continue;
        uint32_t id = ++lab->count, head = 0, tail = 0;
        lab->area[id] = chf->areas[s];
        lab->reg[s] = id;
        queue[tail++] = s;
        while (head < tail) {
            uint32_t c = queue[head++];
            for (int d = 0; d < 4; d++) {
                uint32_t m = chf->links[c][d];
                if (m == OP_NO_LINK || lab->reg[m] != 0 || chf->areas[m] != chf->areas[c] ||
                    chf->dist[m] != level)
                    continue;
                lab->reg[m] = id;
                queue[tail++] = m;
            }
        }
    }
}

op_status op__watershed(const op_chf *chf, op_arena *scratch, op__labels *lab, op_err *err)
{
    levels lv;
    op_status st = sort_levels(chf, scratch, &lv, err);
    if (st != OP_OK)
        return st;
    size_t n1 = (size_t)lv.n + 1, ns = (size_t)chf->span_count + 1;
    ws_state w = {chf, lab, NULL, NULL, NULL, NULL, 0};
    lab->reg = op_arena_calloc(scratch, ns, sizeof *lab->reg);
    lab->area = op_arena_alloc(scratch, n1);
    lab->count = 0;
    w.cand = op_arena_alloc(scratch, n1 * sizeof *w.cand);
    w.next = op_arena_alloc(scratch, n1 * sizeof *w.next);
    w.joins = op_arena_alloc(scratch, 2 * n1 * sizeof *w.joins);
    w.stamp = op_arena_calloc(scratch, ns, sizeof *w.stamp);
    if (!lab->reg || !lab->area || !w.cand || !w.next || !w.joins || !w.stamp)
        return op__regions_nomem(err, "watershed", ns * 8 + n1 * 17);
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
