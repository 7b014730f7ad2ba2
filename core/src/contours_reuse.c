/*
 * Contours, reuse of a rebuild entry's (docs/spec/build3d-runtime.md §5.7): which regions of
 * a build have exactly the span set of a region of the base, with neighbours that are
 * renamed base regions, so that their contours are the base's with the neighbour values
 * renamed.
 *
 * One pass over the spans pairs each span's id in the build (a) with its id in the base (b):
 * a base id is clean when all its spans carry one build id, a build id when all its spans
 * carry one base id; a region whose id is clean both ways has the span set of its partner.
 * Then each candidate's base contours are read for the neighbour values they name.
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
    /* Spans whose id is the same on both sides (most of them) only mark the id, recorded
     * once after the pass; the others are paired one by one. */
    uint8_t *same = op_arena_calloc(scratch, (size_t)(nn > nb ? nn : nb) + 1, 1);
    if (!same)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (reuse plan of %d regions)", nn);
    for (uint32_t s = 0, n = chf->span_count; s < n; s++) {
        int a = reg[s], b = breg[s];
        if (a == b) {
            same[a] = 1;
            continue;
        }
        if (b > nb) /* cannot be the base's (its ids are checked on capture) */
            return OP_OK;
        pair(n2b, ndirty, a, b);
        pair(b2n, bdirty, b, a);
    }
    for (int a = 0; a <= (nn > nb ? nn : nb); a++) {
        if (!same[a])
            continue;
        if (a > nb)
            return OP_OK;
        pair(n2b, ndirty, a, a);
        pair(b2n, bdirty, a, a);
    }
    /* Base spans without a region have none in the build either: a neighbour value 0 of a
     * base contour (no link, or a link to such a span) is then 0 in the build too. */
    int zero_clean = !bdirty[0] && (b2n[0] == UNSET || b2n[0] == 0);
    plan->rename = b2n;
    for (int r = 1; r <= nn; r++) {
        int b = n2b[r];
        if (ndirty[r] || b <= 0 || bdirty[b])
            continue; /* not the span set of one base region */
        if (regs->region_area[r] != base->region_area[b] ||
            (r == cs->border_region) != (b == base->border_region))
            continue;
        int ok = 1;
        for (int k = base->first[b]; ok && k < base->first[b + 1]; k++) {
            const op_contour *c = &base->contours[k];
            for (int i = 0; ok && i < c->nverts; i++) {
                int v = c->verts[i].neighbour;
                if (v == OP_TILE_BORDER || v == b)
                    continue;
                if (v == 0) {
                    ok = zero_clean;
                    continue;
                }
                if (v < 0 || v > nb || bdirty[v] || b2n[v] == UNSET || b2n[v] <= 0) {
                    ok = 0;
                    continue;
                }
                int a = b2n[v];
                ok = !ndirty[a] && regs->region_area[a] == base->region_area[v] &&
                     (v == base->border_region) == (a == cs->border_region);
            }
        }
        if (!ok)
            continue;
        plan->skip[r] = 1;
        plan->from[r] = b;
        plan->count++;
    }
    return OP_OK;
}
