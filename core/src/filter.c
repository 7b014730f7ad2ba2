/*
 * Span stage, filters (build3d-spans.md §4): three passes over a heightfield that
 * change area ids only (never span extents), with Recast 1.6.0's comparisons.
 *
 * Input/output: op_heightfield (spans in columns). Each pass reads only heights
 * and, for low-hanging obstacles, the areas as they were before the pass, so the
 * result does not depend on the order cells are visited. op_filters_apply (what a
 * build runs) does the three in one walk; the single passes stay for tests. Typical
 * tile: 2k columns, 3-6k spans; linear (ledges: 4 neighbour columns per walkable span).
 */
#include "onepath/limits.h"
#include "onepath/spans.h"

/* The ceiling of a column's highest span: the open sky, Recast's 0xffff (§4). */
#define SKY OP_SPAN_SKY

static inline int ceiling_of(const op_heightfield *hf, const op_hf_span *s)
{
    return s->next == OP_NO_SPAN ? SKY : (int)hf->spans[s->next].smin;
}

void op_filter_low_hanging(op_heightfield *hf, int walkable_climb)
{
    size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    for (size_t c = 0; c < ncols; c++) {
        /* "walkable" is the span below's area before this pass, so a raised span never
         * raises the one above it (§4.1). */
        int prev_walkable = 0, prev_area = OP_NULL_AREA, prev_top = 0;
        for (uint32_t i = hf->heads[c]; i != OP_NO_SPAN; i = hf->spans[i].next) {
            op_hf_span *s = &hf->spans[i];
            int walkable = s->area != OP_NULL_AREA;
            if (!walkable && prev_walkable && (int)s->smax - prev_top <= walkable_climb)
                s->area = (uint8_t)prev_area;
            prev_walkable = walkable;
            prev_area = s->area;
            prev_top = s->smax;
        }
    }
}

/* Is the span (floor, ceiling) at a ledge towards column nc, or does nc's floor
 * widen the accessible range [*lo, *hi] (§4.2)? Returns 1 for a ledge. */
static inline int ledge_towards(const op_heightfield *hf, uint32_t nc, int floor, int ceiling,
                                int walkable_height, int walkable_climb, int *lo, int *hi)
{
    uint32_t n = hf->heads[nc];
    int nceil = n == OP_NO_SPAN ? SKY : (int)hf->spans[n].smin;
    /* The open space under the neighbour's lowest span reaches down forever. */
    if ((nceil < ceiling ? nceil : ceiling) - floor >= walkable_height)
        return 1;
    for (; n != OP_NO_SPAN; n = hf->spans[n].next) {
        const op_hf_span *ns = &hf->spans[n];
        int nfloor = ns->smax, nceiling = ceiling_of(hf, ns);
        int top = nceiling < ceiling ? nceiling : ceiling;
        int bot = nfloor > floor ? nfloor : floor;
        if (top - bot < walkable_height)
            continue;
        int diff = nfloor - floor;
        if (diff < -walkable_climb)
            return 1;
        if (diff <= walkable_climb) {
            *lo = nfloor < *lo ? nfloor : *lo;
            *hi = nfloor > *hi ? nfloor : *hi;
        }
    }
    return 0;
}

/* Is the span (floor, ceiling) of cell (x, z) a ledge or on a steep slope (§4.2)? A
 * cell on the grid's edge has a neighbour outside, a drop: always a ledge. */
static inline int ledge_or_steep(const op_heightfield *hf, int x, int z, int floor, int ceiling,
                                 int walkable_height, int walkable_climb)
{
    const int w = hf->width, d = hf->depth;
    if (x == 0 || z == 0 || x == w - 1 || z == d - 1)
        return 1;
    uint32_t c = (uint32_t)x + (uint32_t)z * (uint32_t)w;
    int lo = floor, hi = floor;
    if (ledge_towards(hf, c - 1, floor, ceiling, walkable_height, walkable_climb, &lo, &hi) ||
        ledge_towards(hf, c + (uint32_t)w, floor, ceiling, walkable_height, walkable_climb, &lo,
                      &hi) ||
        ledge_towards(hf, c + 1, floor, ceiling, walkable_height, walkable_climb, &lo, &hi) ||
        ledge_towards(hf, c - (uint32_t)w, floor, ceiling, walkable_height, walkable_climb, &lo,
                      &hi))
        return 1;
    return hi - lo > walkable_climb;
}

void op_filter_ledges(op_heightfield *hf, int walkable_height, int walkable_climb)
{
    const int w = hf->width, d = hf->depth;
    for (int z = 0; z < d; z++) {
        for (int x = 0; x < w; x++) {
            for (uint32_t i = hf->heads[(size_t)x + (size_t)z * (size_t)w]; i != OP_NO_SPAN;
                 i = hf->spans[i].next) {
                op_hf_span *s = &hf->spans[i];
                if (s->area != OP_NULL_AREA && ledge_or_steep(hf, x, z, s->smax, ceiling_of(hf, s),
                                                              walkable_height, walkable_climb))
                    s->area = OP_NULL_AREA;
            }
        }
    }
}

void op_filter_low_height(op_heightfield *hf, int walkable_height)
{
    size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    for (size_t c = 0; c < ncols; c++)
        for (uint32_t i = hf->heads[c]; i != OP_NO_SPAN; i = hf->spans[i].next) {
            op_hf_span *s = &hf->spans[i];
            if (ceiling_of(hf, s) - (int)s->smax < walkable_height)
                s->area = OP_NULL_AREA;
        }
}

/* A position in a neighbour column for the walk of op_filters_apply: span n (or
 * OP_NO_SPAN past the top) with its floor, its ceiling (the next span's smin, or SKY)
 * and the next span, read once per span rather than once per use. */
typedef struct col_pos {
    uint32_t n, next;
    int floor, ceiling;
} col_pos;

static inline void pos_at(const op_heightfield *hf, col_pos *p, uint32_t n)
{
    p->n = n;
    if (n == OP_NO_SPAN) {
        p->floor = -1; /* no floor: read by the flat-ground test, equal to none */
        return;
    }
    const op_hf_span *s = &hf->spans[n];
    p->floor = s->smax;
    p->next = s->next;
    p->ceiling = p->next == OP_NO_SPAN ? SKY : (int)hf->spans[p->next].smin;
}

/* ledge_towards for a walk up one column: *cur is a cursor into a neighbour column,
 * left by the column's lower spans, and low that column's lowest smin (SKY when empty).
 * A neighbour span whose ceiling is below floor + walkable_height, or whose floor is
 * above ceiling - walkable_height, leaves no room between it and the span and is
 * skipped by ledge_towards; the first kind is a prefix of the neighbour's spans that
 * only grows as the walk goes up (floors and ceilings rise), the second a suffix. So
 * the cursor skips the prefix once per column and the loop stops at the suffix: the
 * same result, in time linear in the two columns' spans instead of their product
 * (1,025 stacked floors: seconds). */
static inline int ledge_towards_from(const op_heightfield *hf, col_pos *cur, int low, int floor,
                                     int ceiling, int walkable_height, int walkable_climb, int *lo,
                                     int *hi)
{
    if ((low < ceiling ? low : ceiling) - floor >= walkable_height)
        return 1;
    while (cur->n != OP_NO_SPAN && cur->ceiling - floor < walkable_height)
        pos_at(hf, cur, cur->next);
    /* The same opening next door (stacked floors and ceilings at equal heights): a
     * neighbour at diff 0, and the next one up starts above this ceiling, so the loop
     * below would end there with nothing to say. */
    if (cur->n != OP_NO_SPAN && cur->floor == floor && cur->ceiling == ceiling)
        return 0;
    for (col_pos p = *cur; p.n != OP_NO_SPAN; pos_at(hf, &p, p.next)) {
        int nfloor = p.floor, nceiling = p.ceiling;
        if (ceiling - nfloor < walkable_height)
            break;
        int top = nceiling < ceiling ? nceiling : ceiling;
        int bot = nfloor > floor ? nfloor : floor;
        if (top - bot < walkable_height)
            continue;
        int diff = nfloor - floor;
        if (diff < -walkable_climb)
            return 1;
        if (diff <= walkable_climb) {
            *lo = nfloor < *lo ? nfloor : *lo;
            *hi = nfloor > *hi ? nfloor : *hi;
        }
    }
    return 0;
}

/* ledge_towards_from towards a column of exactly one span (floor nfloor, lowest smin
 * low, ceiling SKY), without a cursor: its one span is skipped by the cursor iff
 * SKY - floor < walkable_height, which, floors rising up the walk, once true stays true,
 * so evaluating it afresh for each span gives the cursor's answer. Most columns of open
 * ground hold one span. */
static inline int ledge_towards_one(int low, int nfloor, int floor, int ceiling,
                                    int walkable_height, int walkable_climb, int *lo, int *hi)
{
    if ((low < ceiling ? low : ceiling) - floor >= walkable_height)
        return 1;
    if (SKY - floor < walkable_height || ceiling - nfloor < walkable_height)
        return 0;
    int bot = nfloor > floor ? nfloor : floor;
    if (ceiling - bot < walkable_height) /* top = min(SKY, ceiling) = ceiling */
        return 0;
    int diff = nfloor - floor;
    if (diff < -walkable_climb)
        return 1;
    if (diff <= walkable_climb) {
        *lo = nfloor < *lo ? nfloor : *lo;
        *hi = nfloor > *hi ? nfloor : *hi;
    }
    return 0;
}

/* ledge_or_steep for a span of an inner cell, with the column walk's four cursors and
 * lowest smins (west, north, east, south as ledge_or_steep visits them); all_one: each
 * of the four columns holds exactly one span (the cursors then stay unused). */
static inline int ledge_or_steep_from(const op_heightfield *hf, col_pos cur[4], const int low[4],
                                      int all_one, int floor, int ceiling, int walkable_height,
                                      int walkable_climb)
{
    int lo = floor, hi = floor;
    if (all_one) {
#pragma GCC unroll 4
        for (int d = 0; d < 4; d++)
            if (ledge_towards_one(low[d], cur[d].floor, floor, ceiling, walkable_height,
                                  walkable_climb, &lo, &hi))
                return 1;
        return hi - lo > walkable_climb;
    }
#pragma GCC unroll 4
    for (int d = 0; d < 4; d++)
        if (ledge_towards_from(hf, &cur[d], low[d], floor, ceiling, walkable_height, walkable_climb,
                               &lo, &hi))
            return 1;
    return hi - lo > walkable_climb;
}

/* The three passes in one walk over the spans, column by column, bottom up. It
 * gives what they give one after the other: the low-hanging rule needs, for a span,
 * only the span below's walkability before the pass and its area after it (kept
 * here in locals, untouched by the later rules); the ledge rule then sees the span's
 * area after the low-hanging rule and reads only heights elsewhere; the low-height
 * rule reads only heights, and a span it clears needs no ledge test. */
void op_filters_apply(op_heightfield *hf, int walkable_height, int walkable_climb)
{
    const int w = hf->width, d = hf->depth;
    for (int z = 0; z < d; z++) {
        for (int x = 0; x < w; x++) {
            int below_walkable = 0, below_area = OP_NULL_AREA, below_top = 0;
            size_t c = (size_t)x + (size_t)z * (size_t)w;
            uint32_t i = hf->heads[c];
            if (i == OP_NO_SPAN)
                continue;
            /* A cell on the grid's edge has a neighbour outside, a drop: every walkable
             * span of it is a ledge (§4.2). */
            const int inner = x > 0 && z > 0 && x < w - 1 && z < d - 1;
            col_pos cur[4];
            int low[4], all_one = 1, ready = 0; /* the cursors, set by the first ledge test */
            col_pos sp;
            for (pos_at(hf, &sp, i); sp.n != OP_NO_SPAN; pos_at(hf, &sp, sp.next)) {
                op_hf_span *s = &hf->spans[sp.n];
                int area = s->area, floor = sp.floor, ceiling = sp.ceiling;
                int walkable = area != OP_NULL_AREA;
                if (!walkable && below_walkable && floor - below_top <= walkable_climb)
                    area = below_area; /* §4.1 */
                below_walkable = walkable;
                below_area = area;
                below_top = floor;
                if (ceiling - floor < walkable_height)
                    area = OP_NULL_AREA; /* §4.3 */
                else if (area != OP_NULL_AREA) {
                    if (!inner) {
                        area = OP_NULL_AREA; /* §4.2 */
                    } else {
                        if (!ready) {
                            const size_t nc[4] = {c - 1, c + (size_t)w, c + 1, c - (size_t)w};
#pragma GCC unroll 4
                            for (int k = 0; k < 4; k++) {
                                pos_at(hf, &cur[k], hf->heads[nc[k]]);
                                low[k] =
                                    cur[k].n == OP_NO_SPAN ? SKY : (int)hf->spans[cur[k].n].smin;
                                all_one &= cur[k].n != OP_NO_SPAN && cur[k].next == OP_NO_SPAN;
                            }
                            ready = 1;
                        }
                        /* Open flat ground: four one-span neighbours at this very
                         * floor. Each has its underside below the floor (no drop) and
                         * either leaves no room (SKY - floor < walkable_height: ignored)
                         * or is a neighbour at diff 0 (the span's own clearance passed
                         * §4.3 above): never a ledge, never steep, whatever the settings,
                         * which is ledge_or_steep_from's answer without its four tests. */
                        int flat =
                            all_one & (((cur[0].floor ^ floor) | (cur[1].floor ^ floor) |
                                        (cur[2].floor ^ floor) | (cur[3].floor ^ floor)) == 0);
                        if (!flat && ledge_or_steep_from(hf, cur, low, all_one, floor, ceiling,
                                                         walkable_height, walkable_climb))
                            area = OP_NULL_AREA; /* §4.2 */
                    }
                }
                s->area = (uint8_t)area;
            }
        }
    }
}
