/*
 * Contours, reuse of a rebuild entry's (docs/spec/build3d-runtime.md §5.7): which regions of
 * a build have exactly the span set of a region of the base, with neighbours that are
 * renamed base regions, so that their contours are the base's with the neighbour values
 * renamed.
 *
 * One pass over the spans pairs each span's id in the build (a) with its id in the base (b):
 * a base id is clean when all its spans carry one build id, a build id when all its spans
 * carry one base id; a region whose id is clean both ways has the span set of its partner.
 * Then the links across each candidate's spans pair its neighbours' base ids with their build
 * ids (rule 3): only the spans next to a region matter, not whether its neighbours are clean.
 */
#include <string.h>

#include "contours_internal.h"

#define UNSET (-2)

/* The base was traced on this field with these settings, in the whole-field view. */
static int fits(const op_chf *chf, const op_regions *regs, const op_contour_settings *cs,
                const op__contour_base *b)
{
    return b->cells == chf->cells && b->y == chf->y && b->links == chf->links &&
           b->span_count == chf->span_count && regs->span_count == chf->span_count && b->reg &&
           !cs->span_layer && !cs->keep_raw && b->max_error == cs->max_error &&
           b->max_edge_length == cs->max_edge_length &&
           b->straight_region_borders == cs->straight_region_borders &&
           (b->border_region == 0) == (cs->border_region == 0) && b->region_count >= 0 &&
           b->first && b->contours;
}

/* Records that ids x (of one side) and y (of the other) share a span. */
static inline void pair(int32_t *map, uint8_t *dirty, int x, int y)
{
    if (map[x] == UNSET)
        map[x] = y;
    else if (map[x] != y)
        dirty[x] = 1;
}

/* Whether the eight ids from a equal the eight from b (two 8-byte compares, one path on
 * every target). */
static inline int ids8_equal(const uint16_t *a, const uint16_t *b)
{
    uint64_t x[2], y[2];
    memcpy(x, a, sizeof x);
    memcpy(y, b, sizeof y);
    return ((x[0] ^ y[0]) | (x[1] ^ y[1])) == 0;
}

/* Whether the four ids from a equal the four from b. */
static inline int ids4_equal(const uint16_t *a, const uint16_t *b)
{
    uint64_t x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return x == y;
}

op_status op__contour_plan_make(const op_chf *chf, const op_regions *regs,
                                const op_contour_settings *cs, const op__contour_base *base,
                                op_arena *scratch, op__contour_plan *plan, op_err *err)
{
    memset(plan, 0, sizeof *plan);
    if (!fits(chf, regs, cs, base))
        return OP_OK;
    int nn = regs->region_count, nb = base->region_count;
    int32_t *n2b = op_arena_alloc(scratch, ((size_t)nn + 1) * sizeof *n2b);
    int32_t *b2n = op_arena_alloc(scratch, ((size_t)nb + 1) * sizeof *b2n);
    uint8_t *ndirty = op_arena_calloc(scratch, (size_t)nn + 1, 1);
    uint8_t *bdirty = op_arena_calloc(scratch, (size_t)nb + 1, 1);
    plan->skip = op_arena_calloc(scratch, (size_t)nn + 1, 1);
    plan->from = op_arena_alloc(scratch, ((size_t)nn + 1) * sizeof *plan->from);
    if (!n2b || !b2n || !ndirty || !bdirty || !plan->skip || !plan->from)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (reuse plan of %d regions)", nn);
    for (int i = 0; i <= nn; i++)
        n2b[i] = UNSET;
    for (int i = 0; i <= nb; i++)
        b2n[i] = UNSET;
    const uint16_t *reg = regs->reg, *breg = base->reg;
    /* Spans whose id is the same on both sides (most of them) are only counted, the ids
     * paired once after the pass; the others are paired one by one. The pass also checks the
     * build's ids against region_count (the input check, which the caller then leaves out):
     * a span whose id is the base's is at most nb (the capture's check), so only the other
     * spans compare, and the ids above nn are found among the counts. */
    int most = nn > nb ? nn : nb;
    uint32_t *same = op_arena_calloc(scratch, (size_t)most + 1, sizeof *same);
    uint32_t *cnt = op_arena_calloc(scratch, (size_t)most + 2, sizeof *cnt); /* spans a region */
    if (!same || !cnt)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (reuse plan of %d regions)", nn);
    if (base->spans) {
        /* The base's spans a region known, a span whose id is unchanged need not be read
         * alone: four spans compared at once, and the spans of base id b that keep it are
         * its spans less those that do not (counted here, in same[b] first). */
        uint32_t s = 0, n = chf->span_count;
        for (;;) {
            /* Sixteen bytes of ids a compare; the last few, and the four around a change,
             * four at a time. */
            while (n - s >= 8 && ids8_equal(reg + s, breg + s))
                s += 8;
            while (n - s >= 4 && ids4_equal(reg + s, breg + s))
                s += 4;
            if (s == n)
                break;
            uint32_t e = n - s >= 4 ? s + 4 : n;
            for (; s < e; s++) {
                int a = reg[s], b = breg[s];
                if (a == b)
                    continue;
                if (a > nn || b > nb) /* as below */
                    return OP_OK;
                cnt[a]++;
                same[b]++;
                pair(n2b, ndirty, a, b);
                pair(b2n, bdirty, b, a);
            }
        }
        for (int b = 0; b <= nb; b++)
            same[b] = base->spans[b] - same[b];
    } else {
        for (uint32_t s = 0, n = chf->span_count; s < n; s++) {
            int a = reg[s], b = breg[s];
            if (a == b) {
                same[a]++;
                continue;
            }
            if (a > nn || b > nb) /* a: not valid (the caller's check says so); b: not the base's */
                return OP_OK;
            cnt[a]++;
            pair(n2b, ndirty, a, b);
            pair(b2n, bdirty, b, a);
        }
    }
    for (int a = nn + 1; a <= nb; a++)
        if (same[a])
            return OP_OK; /* ids above region_count: the caller's check reports the first */
    plan->checked = 1;
    for (int a = 0; a <= nn; a++) {
        if (!same[a])
            continue;
        if (a > nb)
            return OP_OK;
        cnt[a] += same[a];
        pair(n2b, ndirty, a, a);
        pair(b2n, bdirty, a, a);
    }
    /* Rule 2: the regions whose span set is one base region's, with its area and role. */
    int ncand = 0;
    for (int r = 1; r <= nn; r++) {
        int b = n2b[r];
        if (ndirty[r] || b <= 0 || bdirty[b])
            continue; /* not the span set of one base region */
        if (regs->region_area[r] != base->region_area[b] ||
            (r == cs->border_region) != (b == base->border_region))
            continue;
        plan->skip[r] = 1;
        plan->from[r] = b;
        ncand++;
    }
    if (ncand == 0)
        return OP_OK;
    /* Rule 3 reads the links across each candidate's spans (the same spans in both builds).
     * With the base's list of the links across each of its regions (r's span set is b's and
     * the links are the same arrays, so the links across r are those across b), the pass
     * over the spans only marks the others for the trace, unread when copied; without it,
     * one pass collects them, bucketed by region, at most four a span, and marks the rest. */
    const uint32_t *af = base->across_first, *al = base->across;
    size_t *start = NULL, *fill = NULL;
    uint32_t *pairs = NULL;
    if (!af) {
        start = op_arena_alloc(scratch, ((size_t)nn + 2) * sizeof *start);
        fill = op_arena_alloc(scratch, ((size_t)nn + 1) * sizeof *fill);
        if (!start || !fill)
            return op_err_set(err, OP_ENOMEM, "contours: out of memory (reuse plan of %d regions)",
                              nn);
        start[0] = 0;
        for (int r = 0; r <= nn; r++)
            start[r + 1] = start[r] + (plan->skip[r] ? 4 * (size_t)cnt[r] : 0);
        memcpy(fill, start, ((size_t)nn + 1) * sizeof *fill);
        pairs = op_arena_alloc(scratch, ((size_t)start[nn + 1] + 1) * sizeof *pairs);
        if (!pairs)
            return op_err_set(err, OP_ENOMEM, "contours: out of memory (reuse plan of %d regions)",
                              nn);
    }
    int32_t *gv = op_arena_alloc(scratch, ((size_t)nb + 1) * sizeof *gv);
    int32_t *vstamp = op_arena_calloc(scratch, (size_t)nb + 1, sizeof *vstamp);
    int32_t *wstamp = op_arena_calloc(scratch, (size_t)nn + 1, sizeof *wstamp);
    uint8_t *failed = op_arena_calloc(scratch, (size_t)nn + 1, 1);
    plan->nbr = op_arena_calloc(scratch, (size_t)nn + 1, sizeof *plan->nbr);
    plan->mask = op_arena_alloc(scratch, (size_t)chf->span_count + 1);
    if (!gv || !vstamp || !wstamp || !failed || !plan->nbr || !plan->mask)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (reuse plan of %d regions)", nn);
    plan->edges = af ? op__contours_mark_except(chf, reg, plan->skip, plan->mask)
                     : op__contours_mark_pairs(chf, reg, breg, plan->skip, plan->mask, pairs, fill);
    int nfailed = 0;
    for (int r = 1; r <= nn; r++) {
        if (!plan->skip[r])
            continue;
        int b = plan->from[r], ok = 1;
        /* g_r from the pairs: one to one, 0 only with 0, areas and the border role kept. */
        size_t k0 = af ? af[b] : start[r], k1 = af ? af[b + 1] : fill[r];
        for (size_t k = k0; ok && k < k1; k++) {
            int v, w;
            if (af) {
                v = breg[al[k]];
                w = reg[al[k]];
            } else {
                v = (int)(pairs[k] >> 16);
                w = (int)(pairs[k] & 0xffff);
            }
            if (vstamp[v] == r) {
                ok = gv[v] == w;
                continue;
            }
            if (wstamp[w] == r || (v == 0) != (w == 0)) {
                ok = 0;
                continue;
            }
            vstamp[v] = r;
            wstamp[w] = r;
            gv[v] = w;
            ok = v == 0 || (regs->region_area[w] == base->region_area[v] &&
                            (v == base->border_region) == (w == cs->border_region));
        }
        /* Rule 4, and the renamed neighbour values of the copy. */
        int nv = 0;
        for (int k = base->first[b]; k < base->first[b + 1]; k++)
            nv += base->contours[k].nverts;
        int32_t *to = ok ? op_arena_alloc(scratch, ((size_t)nv + 1) * sizeof *to) : NULL;
        if (ok && !to)
            return op_err_set(err, OP_ENOMEM, "contours: out of memory (reuse plan of %d regions)",
                              nn);
        for (int k = base->first[b], i = 0; ok && k < base->first[b + 1]; k++) {
            const op_contour *c = &base->contours[k];
            for (int q = 0; ok && q < c->nverts; q++, i++) {
                int v = c->verts[q].neighbour;
                if (v == OP_TILE_BORDER || v == 0)
                    to[i] = v;
                else if (v == b)
                    to[i] = r;
                else if (v > 0 && v <= nb && vstamp[v] == r)
                    to[i] = gv[v];
                else
                    ok = 0;
            }
        }
        if (!ok) {
            plan->skip[r] = 0;
            plan->from[r] = 0;
            failed[r] = 1;
            nfailed++;
            continue;
        }
        plan->nbr[r] = to;
        plan->count++;
        plan->skipped += cnt[r];
    }
    /* The candidates that do not copy are traced: their spans get their marks now. */
    if (nfailed > 0)
        plan->edges += op__contours_mark_regions(chf, reg, failed, plan->mask);
    return OP_OK;
}
