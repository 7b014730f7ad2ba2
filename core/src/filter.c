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
#include <string.h>

#include "onepath/arena.h"
#include "onepath/limits.h"
#include "onepath/spans.h"

#if defined(__SSE2__) && !defined(OP_FILTERS_SCALAR)
#include <emmintrin.h>
#endif

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
 * and the next span, read once per span rather than once per use. Past the top, floor
 * is -1 and ceiling SKY, as for a top span (see ledge_towards_from's skip). */
typedef struct col_pos {
    uint32_t n, next;
    int floor, ceiling;
} col_pos;

static inline void pos_at(const op_heightfield *hf, col_pos *p, uint32_t n)
{
    p->n = n;
    if (n == OP_NO_SPAN) {
        p->floor = -1; /* no floor: read by the flat-ground test, equal to none */
        p->ceiling = SKY;
        p->next = OP_NO_SPAN; /* read by cursors_rest */
        return;
    }
    const op_hf_span *s = &hf->spans[n];
    p->floor = s->smax;
    p->next = s->next;
    p->ceiling = p->next == OP_NO_SPAN ? SKY : (int)hf->spans[p->next].smin;
}

/* One neighbour span (floor nfloor, ceiling nceiling) against the span (floor, ceiling),
 * as ledge_towards' loop takes it: END when it and every span above it leave no room
 * (ceiling - nfloor < walkable_height: floors rise up the column), LEDGE when the opening
 * between them is a drop beyond the climb, NEXT otherwise (too little room, or a floor
 * within the climb, recorded in lo / hi). The cursor walks and the one-span walk share it. */
enum { NEIGHBOUR_NEXT, NEIGHBOUR_LEDGE, NEIGHBOUR_END };

static inline int neighbour_span(int nfloor, int nceiling, int floor, int ceiling,
                                 int walkable_height, int walkable_climb, int *lo, int *hi)
{
    if (ceiling - nfloor < walkable_height)
        return NEIGHBOUR_END;
    int top = nceiling < ceiling ? nceiling : ceiling;
    int bot = nfloor > floor ? nfloor : floor;
    if (top - bot < walkable_height)
        return NEIGHBOUR_NEXT;
    int diff = nfloor - floor;
    if (diff < -walkable_climb)
        return NEIGHBOUR_LEDGE;
    if (diff <= walkable_climb) {
        *lo = nfloor < *lo ? nfloor : *lo;
        *hi = nfloor > *hi ? nfloor : *hi;
    }
    return NEIGHBOUR_NEXT;
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
    /* The open space under the neighbour's lowest span (low: its smin) reaches the
     * walkable height: min(low, ceiling) - floor >= walkable_height, where the span's own
     * ceiling - floor >= walkable_height always holds here (§4.3 cleared it otherwise). */
    if (low - floor >= walkable_height)
        return 1;
    /* The skip never reaches past the top: a tested span has ceiling - floor >=
     * walkable_height (§4.3 first), so floor <= SKY - walkable_height and a top span
     * (ceiling SKY) leaves it room; an empty column returned above (low = SKY). So it
     * does not test cur->n (past the top it would stop anyway, at ceiling SKY). */
    while (cur->ceiling - floor < walkable_height)
        pos_at(hf, cur, cur->next);
    /* The same opening next door (stacked floors and ceilings at equal heights): a
     * neighbour at diff 0, and the next one up starts above this ceiling, so the loop
     * below would end there with nothing to say. The cursor is at a span here (see the
     * skip), so one branch on both equalities does (three mispredicted more, hf19). */
    if ((cur->floor == floor) & (cur->ceiling == ceiling))
        return 0;
    /* A neighbour span whose ceiling is at least ceiling - walkable_height: the next
     * span up has its floor above its smin, that ceiling, so ceiling - that floor <
     * walkable_height and the loop below would stop there (no next span: the ceiling is
     * SKY). Its one iteration, without reading the next span: rooms next door with a
     * floor within the climb or another ceiling, roofs at other heights (dungeon). */
    if (cur->n != OP_NO_SPAN && cur->ceiling + walkable_height >= ceiling)
        return neighbour_span(cur->floor, cur->ceiling, floor, ceiling, walkable_height,
                              walkable_climb, lo, hi) == NEIGHBOUR_LEDGE;
    for (col_pos p = *cur; p.n != OP_NO_SPAN; pos_at(hf, &p, p.next)) {
        int r = neighbour_span(p.floor, p.ceiling, floor, ceiling, walkable_height, walkable_climb,
                               lo, hi);
        if (r == NEIGHBOUR_LEDGE)
            return 1;
        if (r == NEIGHBOUR_END)
            break;
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
    if (low - floor >= walkable_height) /* as in ledge_towards_from */
        return 1;
    if (SKY - floor < walkable_height)
        return 0;
    return neighbour_span(nfloor, SKY, floor, ceiling, walkable_height, walkable_climb, lo, hi) ==
           NEIGHBOUR_LEDGE;
}

/* ledge_or_steep for a span of an inner cell, with the column walk's four cursors and
 * lowest smins (west, north, east, south as ledge_or_steep visits them); all_one: each
 * of the four columns holds exactly one span (the cursors then stay unused). */
static inline __attribute__((always_inline)) int
ledge_or_steep_from(const op_heightfield *hf, col_pos cur[4], const int low[4], int all_one,
                    int floor, int ceiling, int walkable_height, int walkable_climb)
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

/* The rest of four cursors whose n and floor are set (walk_column's lazy start), as
 * pos_at sets them; returns whether each column holds exactly one span. Unrolled, with
 * & for &&: the loop's and the test's branches mispredicted 17k times a dungeon bake
 * (docs/benchmarks.md, hf19); pos_at sets next for an empty column too. */
static inline __attribute__((always_inline)) int cursors_rest(const op_heightfield *hf,
                                                              col_pos cur[4])
{
    int all_one = 1;
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        pos_at(hf, &cur[k], cur[k].n);
        all_one &= (cur[k].n != OP_NO_SPAN) & (cur[k].next == OP_NO_SPAN);
    }
    return all_one;
}

/* The three passes in one walk up column (x, z), c = x + z * w. It gives what they give
 * one after the other: the low-hanging rule needs, for a span, only the span below's
 * walkability before the pass and its area after it (kept here in locals, untouched by
 * the later rules); the ledge rule then sees the span's area after the low-hanging rule
 * and reads only heights elsewhere; the low-height rule reads only heights, and a span it
 * clears needs no ledge test. Columns are independent (a column's areas are read by no
 * other column's walk), so they may be walked in any order. */
/* gcc (12, -O2) sees the cursors' ceiling and next read unset once this is a function of
 * its own: pos_at sets them whenever it sets n to a span, and they are read only then. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/* inner: the cell is off the grid's edge (the callers know it from their loops; an edge
 * cell's walkable spans are all ledges). lazy (a constant at each call): the first ledge test of
 * the column reads only the lowest floors next door, what its flat-ground test needs, and the rest
 * of the cursors (cursors_rest) waits for the first full test. walk_all's fields (rooms, storeys:
 * few one-span cells) settle most tests as flat ground and gain (dungeon -1.3 M Ir); walk_blocks'
 * (open ground, stairs) mostly test in full and lost (stairs:256 +30 M), so they set the cursors up
 * at once. Whether lazy or not, the cursors are the same when a full test reads them. (partial is a
 * flag of its own: folded into ready, as a third value, it changed gcc's registers in walk_blocks'
 * eager copy, stairs +20 M.) */
static inline __attribute__((always_inline)) void walk_column(op_heightfield *hf, int x, int z,
                                                              int inner, int lazy,
                                                              int walkable_height,
                                                              int walkable_climb)
{
    const int w = hf->width;
    int below_walkable = 0, below_area = OP_NULL_AREA, below_top = 0;
    size_t c = (size_t)x + (size_t)z * (size_t)w;
    uint32_t i = hf->heads[c];
    if (i == OP_NO_SPAN)
        return;
    col_pos cur[4];                                  /* set by the first ledge test (see below) */
    int low[4], all_one = 1, ready = 0, partial = 0; /* partial: lazy, set up in part */
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
                        if (lazy) { /* the floor as pos_at sets it, and the low */
                            const uint32_t n = hf->heads[nc[k]];
                            cur[k].n = n;
                            cur[k].floor = n == OP_NO_SPAN ? -1 : (int)hf->spans[n].smax;
                            low[k] = n == OP_NO_SPAN ? SKY : (int)hf->spans[n].smin;
                        } else {
                            pos_at(hf, &cur[k], hf->heads[nc[k]]);
                            low[k] = cur[k].n == OP_NO_SPAN ? SKY : (int)hf->spans[cur[k].n].smin;
                            all_one &= cur[k].n != OP_NO_SPAN && cur[k].next == OP_NO_SPAN;
                        }
                    }
                    ready = 1;
                    partial = lazy;
                }
                /* No drop next door: each of the four cursors at a floor at least this
                 * one, and each neighbour column's open space under its lowest span
                 * (from this floor up to the column's lowest smin, low) below the
                 * walkable height. Every span below a cursor was skipped (no room above
                 * a floor at most this one, so none above this one); every span the
                 * test would look at has a floor at least this one (diff >= 0: no
                 * drop), the space under the column does not reach, and the floors it
                 * records are within the climb above this one (lo = floor,
                 * hi <= floor + climb: not steep). Never a ledge, never steep,
                 * whatever the settings and ceilings: ledge_or_steep_from's answer
                 * without its four tests. The cursors it would have moved are moved by
                 * a later span's test, to the same place (the skip depends only on that
                 * span's floor). It takes flat ground, open or under roofs (a cursor at
                 * this very floor: its smin, at least low, is below the floor), and
                 * floors beside walls, steps up and raised floors. An empty
                 * neighbour's cursor has floor -1, never a span's (and low SKY). */
                int flat = 1;
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++)
                    flat &= (cur[k].floor >= floor) & (low[k] - floor < walkable_height);
                if (!flat) {
                    if (lazy && partial) {
                        all_one = cursors_rest(hf, cur);
                        partial = 0;
                    }
                    if (ledge_or_steep_from(hf, cur, low, all_one, floor, ceiling, walkable_height,
                                            walkable_climb))
                        area = OP_NULL_AREA; /* §4.2 */
                }
            }
        }
        s->area = (uint8_t)area;
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* ---- one-span cells among one-span neighbours, four at a time ----
 *
 * Most cells of open ground hold one span, and so do their four neighbours. Such a
 * span has the sky above (ceiling SKY) and nothing below (the low-hanging rule does not
 * apply), so its walk reduces to: cleared when SKY - floor < walkable_height (§4.3), else
 * cleared when ledge_or_steep_from's all_one test says a ledge (§4.2; an unwalkable span
 * stays unwalkable either way). That needs only each column's one floor and lowest smin,
 * read here from two flat arrays made once (a column is read by itself and four
 * neighbours), and it is the same integer test in every lane, so four cells of a row go
 * through it at once. */

/* Row z of the field into fl and lw (indexed by x): fl[x] the top of column x's one
 * span, or -1 when it holds none or more than one; lw[x] the bottom of its lowest span,
 * SKY when empty. Returns the row's one-span columns. */
static int one_span_row(const op_heightfield *hf, int z, int32_t *fl, int32_t *lw)
{
    const size_t c0 = (size_t)z * (size_t)hf->width;
    int ones = 0;
    for (int x = 0; x < hf->width; x++) {
        uint32_t n = hf->heads[c0 + (size_t)x];
        if (n == OP_NO_SPAN) {
            fl[x] = -1;
            lw[x] = SKY;
            continue;
        }
        const op_hf_span *s = &hf->spans[n];
        fl[x] = s->next == OP_NO_SPAN ? (int32_t)s->smax : -1;
        lw[x] = s->smin;
        ones += s->next == OP_NO_SPAN;
    }
    return ones;
}

/* Rows z - 1, z and z + 1 of fl and lw (one_span_row's), for the cells of row z. */
typedef struct rows3 {
    const int32_t *fl[3], *lw[3];
} rows3;

/* Inner cell x of row z: 1 in *fast when it and its four neighbours hold one span each,
 * and then the return value says whether its span is cleared. The neighbours are taken
 * in ledge_or_steep's order (-x, +z, +x, -z). */
static inline int one_span_cleared(const rows3 *r, size_t x, int walkable_height,
                                   int walkable_climb, int *fast)
{
    const int f = r->fl[1][x];
    const int nf[4] = {r->fl[1][x - 1], r->fl[2][x], r->fl[1][x + 1], r->fl[0][x]};
    *fast = (f | nf[0] | nf[1] | nf[2] | nf[3]) >= 0;
    if (!*fast)
        return 0;
    if (SKY - f < walkable_height)
        return 1; /* §4.3 */
    const int nl[4] = {r->lw[1][x - 1], r->lw[2][x], r->lw[1][x + 1], r->lw[0][x]};
    int lo = f, hi = f;
    for (int k = 0; k < 4; k++)
        if (ledge_towards_one(nl[k], nf[k], f, SKY, walkable_height, walkable_climb, &lo, &hi))
            return 1;
    return hi - lo > walkable_climb;
}

/* Inner cells x .. x + 3 of row z: bit j of *fast and *cleared as one_span_cleared of
 * x + j. OP_FILTERS_SCALAR selects the scalar test everywhere (targets without SSE2 have
 * it). */
#if defined(__SSE2__) && !defined(OP_FILTERS_SCALAR)
static inline __m128i ld4(const int32_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* m ? a : b, lane by lane (m all ones or all zeros). */
static inline __m128i pick(__m128i m, __m128i a, __m128i b)
{
    return _mm_or_si128(_mm_and_si128(m, a), _mm_andnot_si128(m, b));
}

/* one_span_cleared's test in four lanes of 32-bit integers, every comparison rewritten
 * as a greater-than on the same values (x - y >= k as x - y > k - 1, SKY - x < k as
 * x > SKY - k; nothing overflows: heights are 0..SKY, walkable_height 1..SKY, the climb
 * 0..SKY), its early returns as masks or'ed into the answer: an early return only
 * skipped updates of lo and hi that no longer mattered (the answer was 1 whatever they
 * held), so every lane gets one_span_cleared's answer. */
static inline void one_span_cleared4(const rows3 *r, size_t x, int walkable_height,
                                     int walkable_climb, unsigned *fast, unsigned *cleared)
{
    const __m128i f = ld4(r->fl[1] + x);
    const __m128i nf[4] = {ld4(r->fl[1] + x - 1), ld4(r->fl[2] + x), ld4(r->fl[1] + x + 1),
                           ld4(r->fl[0] + x)};
    const __m128i nl[4] = {ld4(r->lw[1] + x - 1), ld4(r->lw[2] + x), ld4(r->lw[1] + x + 1),
                           ld4(r->lw[0] + x)};
    __m128i all =
        _mm_or_si128(_mm_or_si128(f, nf[0]), _mm_or_si128(_mm_or_si128(nf[1], nf[2]), nf[3]));
    const __m128i ok = _mm_cmpgt_epi32(all, _mm_set1_epi32(-1));
    const __m128i top = _mm_set1_epi32(SKY - walkable_height);
    const __m128i wh1 = _mm_set1_epi32(walkable_height - 1);
    const __m128i climb = _mm_set1_epi32(walkable_climb), nclimb = _mm_set1_epi32(-walkable_climb);
    const __m128i noroom = _mm_cmpgt_epi32(f, top); /* §4.3, and no neighbour is used */
    __m128i out = noroom, lo = f, hi = f;
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m128i n = nf[k], diff = _mm_sub_epi32(n, f);
        /* the open space under the neighbour's span reaches the walkable height */
        out = _mm_or_si128(out, _mm_cmpgt_epi32(_mm_sub_epi32(nl[k], f), wh1));
        const __m128i bot = pick(_mm_cmpgt_epi32(n, f), n, f);
        const __m128i unused = _mm_or_si128(noroom, _mm_cmpgt_epi32(bot, top));
        out = _mm_or_si128(out, _mm_andnot_si128(unused, _mm_cmplt_epi32(diff, nclimb)));
        const __m128i out_of_reach = _mm_or_si128(unused, _mm_cmpgt_epi32(diff, climb));
        lo = pick(_mm_andnot_si128(out_of_reach, _mm_cmplt_epi32(n, lo)), n, lo);
        hi = pick(_mm_andnot_si128(out_of_reach, _mm_cmpgt_epi32(n, hi)), n, hi);
    }
    out = _mm_or_si128(out, _mm_cmpgt_epi32(_mm_sub_epi32(hi, lo), climb));
    *fast = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(ok));
    *cleared = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_and_si128(ok, out)));
}
#else
static inline void one_span_cleared4(const rows3 *r, size_t x, int walkable_height,
                                     int walkable_climb, unsigned *fast, unsigned *cleared)
{
    *fast = *cleared = 0;
    for (int j = 0; j < 4; j++) {
        int f;
        int k = one_span_cleared(r, x + (size_t)j, walkable_height, walkable_climb, &f);
        *fast |= (unsigned)f << j;
        *cleared |= (unsigned)k << j;
    }
}
#endif

/* Whether one-span columns make at least half of every eighth row: the rows of other
 * fields (rooms under ceilings, storeys, mostly empty grids) would pay for fl and lw and
 * find few cells to test at once. */
static int mostly_one_span(const op_heightfield *hf)
{
    size_t cols = 0, ones = 0;
    for (int z = 0; z < hf->depth; z += 8)
        for (size_t c = (size_t)z * (size_t)hf->width, e = c + (size_t)hf->width; c < e; c++) {
            uint32_t n = hf->heads[c];
            ones += n != OP_NO_SPAN && hf->spans[n].next == OP_NO_SPAN;
            cols++;
        }
    return 2 * ones >= cols;
}

/* What op_filters_apply does with an inner cell of a mostly one-span row. */
enum { WALK = 0, KEEP = 1, CLEAR = 2 };

/* A row's cells 1 .. w - 2 sorted into WALK (walk_column), KEEP and CLEAR (its one span). */
static void one_span_verdicts(const rows3 *r, int w, int walkable_height, int walkable_climb,
                              uint8_t *v)
{
    int x = 1;
    for (; x + 4 <= w - 1; x += 4) {
        unsigned fast, cleared;
        one_span_cleared4(r, (size_t)x, walkable_height, walkable_climb, &fast, &cleared);
        for (int j = 0; j < 4; j++)
            v[x + j] = (uint8_t)((fast >> j & 1) + (cleared >> j & 1));
    }
    for (; x < w - 1; x++) {
        int fast;
        int cleared = one_span_cleared(r, (size_t)x, walkable_height, walkable_climb, &fast);
        v[x] = (uint8_t)(fast + (fast & cleared));
    }
}

/* Every column walked (fields of few one-span cells), walk_column inline in its loop. */
static __attribute__((noinline)) void walk_all(op_heightfield *field, int walkable_height,
                                               int walkable_climb)
{
    /* A local copy of the header (the walk changes only span areas): the build has
     * -fno-strict-aliasing and an area is a byte, so through field every area stored
     * would reload the arrays' pointers before the next read. */
    op_heightfield copy = *field, *hf = &copy;
    const int w = hf->width, d = hf->depth;
    for (int z = 0; z < d; z++) {
        /* A cell on the grid's edge has a neighbour outside, a drop: every walkable span
         * of it is a ledge (§4.2). The inner cells' walk is a copy of its own. */
        if (z == 0 || z == d - 1 || w < 3) {
            for (int x = 0; x < w; x++)
                walk_column(hf, x, z, 0, 1, walkable_height, walkable_climb);
            continue;
        }
        walk_column(hf, 0, z, 0, 1, walkable_height, walkable_climb);
        for (int x = 1; x < w - 1; x++)
            walk_column(hf, x, z, 1, 1, walkable_height, walkable_climb);
        walk_column(hf, w - 1, z, 0, 1, walkable_height, walkable_climb);
    }
}

/* walk_all with the one-span cells of rows of mostly one-span cells tested four at a
 * time. fl and lw hold three rows each (3w entries: row z in the third z % 3), v one row's
 * verdicts. */
static __attribute__((noinline)) void walk_blocks(op_heightfield *field, int32_t *fl, int32_t *lw,
                                                  uint8_t *v, int walkable_height,
                                                  int walkable_climb)
{
    op_heightfield copy = *field, *hf = &copy; /* as in walk_all */
    const int w = hf->width, d = hf->depth;
    const size_t W = (size_t)w;
    /* Row z + 1 is made when row z comes (rows z - 1 and z are there already). */
    (void)one_span_row(hf, 0, fl, lw);
    int next = one_span_row(hf, 1, fl + W, lw + W);
    for (int x = 0; x < w; x++)
        walk_column(hf, x, 0, 0, 0, walkable_height, walkable_climb);
    for (int z = 1; z < d; z++) {
        int blocks = 0;
        if (z < d - 1) {
            int here = next;
            size_t below = (size_t)((z + 1) % 3) * W;
            next = one_span_row(hf, z + 1, fl + below, lw + below);
            blocks = 2 * here >= w;
        }
        if (blocks) {
            size_t up = (size_t)((z - 1) % 3) * W, at = (size_t)(z % 3) * W,
                   below = (size_t)((z + 1) % 3) * W;
            const rows3 r = {{fl + up, fl + at, fl + below}, {lw + up, lw + at, lw + below}};
            one_span_verdicts(&r, w, walkable_height, walkable_climb, v);
        } else {
            memset(v, WALK, W);
        }
        v[0] = v[w - 1] = WALK;
        for (int x = 0; x < w; x++) {
            if (v[x] == WALK)
                walk_column(hf, x, z, x > 0 && z < d - 1 && x < w - 1, /* z >= 1 */
                            0, walkable_height, walkable_climb);
            else if (v[x] == CLEAR)
                hf->spans[hf->heads[(size_t)x + (size_t)z * W]].area = OP_NULL_AREA;
        }
    }
}

/* The three passes (walk_column), with the one-span cells of inner rows four at a time
 * in a field and rows of mostly one-span cells (elsewhere the test would find few;
 * either way gives the same areas). */
void op_filters_apply(op_heightfield *hf, int walkable_height, int walkable_climb)
{
    const int w = hf->width, d = hf->depth;
    op_arena_mark m = op_arena_get_mark(hf->arena);
    /* three rows of fl and lw, one of verdicts: a few hundred bytes to a few KiB */
    int32_t *fl = w >= 3 && d >= 3 && mostly_one_span(hf)
                      ? op_arena_alloc(hf->arena, 6 * (size_t)w * sizeof *fl + (size_t)w)
                      : NULL;
    if (fl) /* else no memory, no inner cell, or few one-span cells */
        walk_blocks(hf, fl, fl + 3 * (size_t)w, (uint8_t *)(fl + 6 * (size_t)w), walkable_height,
                    walkable_climb);
    else
        walk_all(hf, walkable_height, walkable_climb);
    op_arena_release(hf->arena, m);
}
