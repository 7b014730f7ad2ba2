/*
 * Span stage, compaction (docs/spec/build3d-spans.md §5): op_heightfield (solid
 * spans, linked bottom up per column) → op_chf (open spans in flat arrays, cells
 * z-major, spans bottom up, with mutual links to the four neighbour cells).
 *
 * Invariants of the result: cells[] is non-decreasing with cells[w*d] = span_count;
 * within a cell floors strictly increase (for heightfields built by §3); every stored
 * link is mutual (b = links[a][d] implies links[b][(d+2)&3] = a) and b lies in the
 * neighbour cell; dist is NULL (built later by op_distance_build). A refused or failed
 * build leaves *chf zeroed and the output arena as it was.
 * Typical sizes: a tile of 40x40..300x300 cells, 1..4 floors a cell, so 10^3..10^6 spans.
 */
#include <stdlib.h>
#include <string.h>

#include "heightfield_internal.h"
#include "onepath/limits.h"
#include "onepath/spans.h"

/* Top of the open space above the highest span of a column (the sky). */
#define OP__SKY_ROW 0xffff

/* Counts the spans that become compact spans (area != 0) and checks that every column
 * is a proper chain (indices in range, no cycle), so that malformed input cannot loop. */
static op_status count_open_spans(const op_heightfield *hf, uint32_t *count, op_err *err)
{
    uint64_t total = 0;
    int ncells = hf->width * hf->depth;
    for (int c = 0; c < ncells; c++) {
        uint32_t steps = 0;
        for (uint32_t s = hf->heads[c]; s != OP_NO_SPAN; s = hf->spans[s].next) {
            if (s >= hf->span_count || ++steps > hf->span_count)
                return op_err_set(err, OP_EINVAL,
                                  "spans: compaction: column (%d, %d) has a broken span chain at "
                                  "span %u (heightfield holds %u spans)",
                                  c % hf->width, c / hf->width, s, hf->span_count);
            if (hf->spans[s].area != OP_NULL_AREA)
                total++;
        }
    }
    if (total > OP_MAX_SPANS)
        return op_err_set(err, OP_ELIMIT, "spans: compaction: %llu spans > OP_MAX_SPANS (%u)",
                          (unsigned long long)total, (unsigned)OP_MAX_SPANS);
    *count = (uint32_t)total;
    return OP_OK;
}

/* count_open_spans of a heightfield whose columns are arrays (op__hf_flat): the same
 * spans, read by index (fill_flat_linked is its fill_spans and link_cells). */
static op_status count_open_flat(const op_heightfield *hf, uint32_t *count, op_err *err)
{
    uint32_t total = 0;
    for (uint32_t s = 0; s < hf->span_count; s++)
        total += hf->spans[s].area != OP_NULL_AREA;
    if (total > OP_MAX_SPANS)
        return op_err_set(err, OP_ELIMIT, "spans: compaction: %llu spans > OP_MAX_SPANS (%u)",
                          (unsigned long long)total, (unsigned)OP_MAX_SPANS);
    *count = total;
    return OP_OK;
}

static op_status alloc_arrays(op_chf *chf, op_arena *out, op_err *err)
{
    size_t ncells = (size_t)chf->width * (size_t)chf->depth;
    size_t n = chf->span_count;
    size_t bytes =
        (ncells + 1) * sizeof *chf->cells + n * (2 * sizeof(uint16_t) + 1) + n * sizeof *chf->links;
    chf->cells = op_arena_alloc(out, (ncells + 1) * sizeof *chf->cells);
    chf->y = chf->cells ? op_arena_alloc(out, n * sizeof *chf->y) : NULL;
    chf->h = chf->y ? op_arena_alloc(out, n * sizeof *chf->h) : NULL;
    chf->areas = chf->h ? op_arena_alloc(out, n) : NULL;
    chf->links = chf->areas ? op_arena_alloc(out, n * sizeof *chf->links) : NULL;
    if (!chf->links)
        return op_err_set(err, OP_ENOMEM,
                          "spans: compaction: out of memory for %zu bytes (%u spans)", bytes,
                          chf->span_count);
    return OP_OK;
}

/* §5 rules 1–3: one compact span per solid span with area != 0; floor = smax,
 * clearance = next solid span's smin (or the sky row) - smax, clamped to [0, 0xffff]. */
static void fill_spans(const op_heightfield *hf, op_chf *chf)
{
    int ncells = hf->width * hf->depth;
    uint32_t k = 0;
    for (int c = 0; c < ncells; c++) {
        chf->cells[c] = k;
        for (uint32_t s = hf->heads[c]; s != OP_NO_SPAN; s = hf->spans[s].next) {
            const op_hf_span *sp = &hf->spans[s];
            if (sp->area == OP_NULL_AREA)
                continue;
            int top = sp->next != OP_NO_SPAN ? hf->spans[sp->next].smin : OP__SKY_ROW;
            int h = top - (int)sp->smax;
            chf->y[k] = sp->smax;
            chf->h[k] = (uint16_t)(h < 0 ? 0 : h);
            chf->areas[k] = sp->area;
            k++;
        }
    }
    chf->cells[ncells] = k;
}

/* §5 rule 4's condition, symmetric in a and b: floors within the climb and a common
 * opening of at least the walkable height. */
static inline int can_link(const op_chf *chf, uint32_t a, uint32_t b)
{
    int ya = chf->y[a], yb = chf->y[b];
    if (yb > ya + chf->walkable_climb || yb < ya - chf->walkable_climb)
        return 0;
    int ta = ya + chf->h[a], tb = yb + chf->h[b];
    int top = ta < tb ? ta : tb;
    int bot = ya > yb ? ya : yb;
    return top - bot >= chf->walkable_height;
}

/* The first span of [b0, b1) (in column order: the lowest) that a can stand next to
 * (§5 rule 4), or OP_NO_LINK. No early exit on floor order, so a hand-made column with
 * overlapping spans gets the rule's answer too; cells hold a few spans. */
static uint32_t lowest_link(const op_chf *chf, uint32_t a, uint32_t b0, uint32_t b1)
{
    for (uint32_t b = b0; b < b1; b++)
        if (can_link(chf, a, b))
            return b;
    return OP_NO_LINK;
}

/* §5 rules 4–5 for a pair of adjacent cells holding spans [a0, a1) and [b0, b1), b in
 * direction d of a: candidate links both ways, then the one-way ones dropped. Dropping
 * in place is order-independent: a dropped a → b (b's candidate is some a' ≠ a) is read
 * only by the check of a span whose candidate is a, and that span is not b, so the check
 * fails with or without it. Pairs are disjoint in the links they write, so visiting
 * cells in order visits each pair once, close in memory, with no separate pass over all
 * links. */
/* Whether the floors of [b0, b1) rise strictly (every column built from a heightfield). */
static int rising(const op_chf *chf, uint32_t b0, uint32_t b1)
{
    for (uint32_t b = b0 + 1; b < b1; b++)
        if (chf->y[b] <= chf->y[b - 1])
            return 0;
    return 1;
}

/* lowest_link on a rising column: only floors within the climb of a's can link, and they
 * are one run there, found by bisection, so the first match is lowest_link's. Deep
 * columns (a thousand floors) cost their k log k, not k^2, per neighbour pair. */
static uint32_t lowest_link_rising(const op_chf *chf, uint32_t a, uint32_t b0, uint32_t b1)
{
    int lo_y = (int)chf->y[a] - chf->walkable_climb, hi_y = (int)chf->y[a] + chf->walkable_climb;
    uint32_t lo = b0, hi = b1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int)chf->y[mid] < lo_y)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t b = lo; b < b1 && (int)chf->y[b] <= hi_y; b++)
        if (can_link(chf, a, b))
            return b;
    return OP_NO_LINK;
}

/* lowest_link_rising for every span of a rising column [a0, a1) into a rising column
 * [b0, b1), in direction d: the floors of a rise, so the first b within the climb below
 * a's floor only moves up, and one cursor walking b replaces a bisection per span. */
static void links_both_rising(op_chf *chf, uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1,
                              int d)
{
    const uint16_t *y = chf->y;
    const int climb = chf->walkable_climb;
    uint32_t p = b0;
    for (uint32_t a = a0; a < a1; a++) {
        int lo_y = (int)y[a] - climb, hi_y = (int)y[a] + climb;
        while (p < b1 && (int)y[p] < lo_y)
            p++;
        uint32_t r = OP_NO_LINK;
        for (uint32_t b = p; b < b1 && (int)y[b] <= hi_y; b++)
            if (can_link(chf, a, b)) {
                r = b;
                break;
            }
        chf->links[a][d] = r;
    }
}

/* Whether [b0, b1) has the floors of [a0, a1), one for one, and in both columns every
 * span's opening ends at or below the next span's floor (always so in a column built
 * from a heightfield; a hand-made column may hold a solid out of order above later
 * ones, and then an opening that reaches past the next floor). */
static int same_floors(const op_chf *chf, uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1)
{
    uint32_t n = a1 - a0;
    if (b1 - b0 != n)
        return 0;
    const uint16_t *y = chf->y, *h = chf->h;
    for (uint32_t i = 0; i < n; i++)
        if (y[a0 + i] != y[b0 + i])
            return 0;
    for (uint32_t i = 0; i + 1 < n; i++)
        if ((int)y[a0 + i] + h[a0 + i] > (int)y[a0 + i + 1] ||
            (int)y[b0 + i] + h[b0 + i] > (int)y[b0 + i + 1])
            return 0;
    return 1;
}

static void link_pair(op_chf *chf, uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1, int d)
{
    int o = (d + 2) & 3;
    if (same_floors(chf, a0, a1, b0, b1)) {
        /* Two columns of the same floors (stacked floors next door): a span's opening
         * ends at or below the next floor up, so it shares no height with a neighbour
         * span of another floor (floors below end under its floor, floors above start
         * over its opening), and the only candidate either way is the span of the same
         * floor. Both candidates are then each other: mutual. */
        for (uint32_t i = 0; i < a1 - a0; i++) {
            int ok = can_link(chf, a0 + i, b0 + i);
            chf->links[a0 + i][d] = ok ? b0 + i : OP_NO_LINK;
            chf->links[b0 + i][o] = ok ? a0 + i : OP_NO_LINK;
        }
        return;
    }
    int ra = rising(chf, a0, a1), rb = rising(chf, b0, b1);
    if (ra && rb) {
        links_both_rising(chf, a0, a1, b0, b1, d);
        links_both_rising(chf, b0, b1, a0, a1, o);
    } else {
        for (uint32_t a = a0; a < a1; a++)
            chf->links[a][d] =
                rb ? lowest_link_rising(chf, a, b0, b1) : lowest_link(chf, a, b0, b1);
        for (uint32_t b = b0; b < b1; b++)
            chf->links[b][o] =
                ra ? lowest_link_rising(chf, b, a0, a1) : lowest_link(chf, b, a0, a1);
    }
    for (uint32_t a = a0; a < a1; a++) {
        uint32_t b = chf->links[a][d];
        if (b != OP_NO_LINK && chf->links[b][o] != a)
            chf->links[a][d] = OP_NO_LINK;
    }
    for (uint32_t b = b0; b < b1; b++) {
        uint32_t a = chf->links[b][o];
        if (a != OP_NO_LINK && chf->links[a][d] != b)
            chf->links[b][o] = OP_NO_LINK;
    }
}

/* One pair of adjacent non-empty cells. Most cells hold one span: two single spans
 * link each other iff the symmetric condition holds (each is then the other's only
 * candidate), which is link_pair's answer without its passes. */
static inline void link_cells_pair(op_chf *chf, uint32_t a0, uint32_t a1, uint32_t b0, uint32_t b1,
                                   int d)
{
    if (a1 - a0 == 1 && b1 - b0 == 1) {
        if (can_link(chf, a0, b0)) {
            chf->links[a0][d] = b0;
            chf->links[b0][(d + 2) & 3] = a0;
        }
    } else {
        link_pair(chf, a0, a1, b0, b1, d);
    }
}

/* Every link starts as none (rule 4: outside the grid, or an empty neighbour cell, gives
 * none), then each pair of adjacent non-empty cells is linked once, through its +x and
 * +z neighbours. Tile grids are mostly empty cells, which this skips. */
static void link_cells(op_chf *chf)
{
    int w = chf->width, dep = chf->depth;
    const uint32_t *cells = chf->cells;
    memset(chf->links, 0xff, (size_t)chf->span_count * sizeof *chf->links);
    for (int z = 0; z < dep; z++)
        for (int x = 0; x < w; x++) {
            int c = x + z * w;
            uint32_t a0 = cells[c], a1 = cells[c + 1];
            if (a0 == a1)
                continue;
            if (x + 1 < w && cells[c + 2] != a1)
                link_cells_pair(chf, a0, a1, a1, cells[c + 2], 2);
            if (z + 1 < dep && cells[c + w] != cells[c + w + 1])
                link_cells_pair(chf, a0, a1, cells[c + w], cells[c + w + 1], 1);
        }
}

/* can_link on values: floors ya, yb and clearances ha, hb. */
static inline int can_link_values(int ya, int ha, int yb, int hb, int climb, int height)
{
    if (yb > ya + climb || yb < ya - climb)
        return 0;
    int ta = ya + ha, tb = yb + hb;
    int top = ta < tb ? ta : tb;
    int bot = ya > yb ? ya : yb;
    return top - bot >= height;
}

/* fill_spans and link_cells of a heightfield whose columns are arrays (op__hf_flat): the
 * same spans in the same order, read by index, and the same links, in one pass over the
 * cells: each cell's links start as none when its spans are written, and the cell is then
 * linked with its -x and -z neighbours, both written already. These are link_cells' pairs
 * with the same roles (a the lower cell, d from a to b); pairs are disjoint in the links
 * they write, so the order they are visited in does not matter (see link_pair). A pair of
 * one-span cells is link_cells_pair's first case, on the floors and clearances kept in
 * locals where it can (the cell's own, just written, and the -x cell's, from the step
 * before): through the arrays every link stored would reload them (-fno-strict-aliasing). */
static void fill_flat_linked(const op_heightfield *hf, op_chf *chf)
{
    const int w = hf->width, dep = hf->depth;
    const uint32_t *cs = hf->col_start;
    const op_hf_span *sp = hf->spans;
    /* Locals: with -fno-strict-aliasing every store would reload chf's pointers. */
    uint32_t *cells = chf->cells;
    uint16_t *y = chf->y, *hh = chf->h;
    uint8_t *areas = chf->areas;
    uint32_t(*links)[4] = chf->links;
    const int climb = chf->walkable_climb, height = chf->walkable_height;
    uint32_t k = 0;
    for (int z = 0; z < dep; z++) {
        /* the -x cell: its spans [l0, l0 + ln) (none left of x = 0), and when it holds
         * one, that span's floor and clearance (the cell's own: cy, chh) */
        uint32_t l0 = k, ln = 0;
        int ly = 0, lh = 0, cy = 0, chh = 0;
        for (int x = 0; x < w; x++) {
            int c = x + z * w;
            uint32_t a0 = k;
            cells[c] = k;
            uint32_t e = cs[c + 1];
            for (uint32_t s = cs[c]; s < e; s++) {
                if (sp[s].area == OP_NULL_AREA)
                    continue;
                int top = s + 1 < e ? sp[s + 1].smin : OP__SKY_ROW;
                int h = top - (int)sp[s].smax;
                cy = sp[s].smax;
                chh = h < 0 ? 0 : h;
                y[k] = (uint16_t)cy;
                hh[k] = (uint16_t)chh;
                areas[k] = sp[s].area;
                links[k][0] = links[k][1] = links[k][2] = links[k][3] = OP_NO_LINK;
                k++;
            }
            if (a0 == k) {
                ln = 0;
                continue;
            }
            if (ln) {
                if (ln == 1 && k - a0 == 1) {
                    if (can_link_values(ly, lh, cy, chh, climb, height)) {
                        links[l0][2] = a0;
                        links[a0][0] = l0;
                    }
                } else {
                    link_pair(chf, l0, l0 + ln, a0, k, 2);
                }
            }
            if (z > 0) {
                const uint32_t b0 = cells[c - w], b1 = cells[c - w + 1];
                if (b1 - b0 == 1 && k - a0 == 1) {
                    if (can_link_values(y[b0], hh[b0], cy, chh, climb, height)) {
                        links[b0][1] = a0;
                        links[a0][3] = b0;
                    }
                } else if (b0 != b1) {
                    link_pair(chf, b0, b1, a0, k, 1);
                }
            }
            l0 = a0;
            ln = k - a0;
            ly = cy;
            lh = chh;
        }
    }
    cells[w * dep] = k;
}

static op_status check_args(const op_heightfield *hf, int walkable_height, int walkable_climb,
                            op_err *err)
{
    if (!hf || !hf->heads || (hf->span_count && !hf->spans))
        return op_err_set(err, OP_EINVAL, "spans: compaction: heightfield is not initialised");
    if (hf->width < 1 || hf->depth < 1 || hf->width > OP_MAX_GRID_SIDE ||
        hf->depth > OP_MAX_GRID_SIDE)
        return op_err_set(err, OP_ERANGE, "spans: compaction: grid %d x %d outside [1, %d]",
                          hf->width, hf->depth, OP_MAX_GRID_SIDE);
    if (walkable_height < 1 || walkable_height > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE, "spans: compaction: walkable_height = %d outside [1, %d]",
                          walkable_height, OP_MAX_ROWS);
    if (walkable_climb < 0 || walkable_climb > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE, "spans: compaction: walkable_climb = %d outside [0, %d]",
                          walkable_climb, OP_MAX_ROWS);
    return OP_OK;
}

op_status op_chf_build(const op_heightfield *hf, int walkable_height, int walkable_climb,
                       op_arena *out, op_chf *chf, op_err *err)
{
    memset(chf, 0, sizeof *chf);
    op_status st = check_args(hf, walkable_height, walkable_climb, err);
    op_chf r = {0};
    int flat = st == OP_OK && op__hf_flat(hf);
    if (st == OP_OK)
        st = flat ? count_open_flat(hf, &r.span_count, err)
                  : count_open_spans(hf, &r.span_count, err);
    if (st != OP_OK)
        return st;
    r.width = hf->width;
    r.depth = hf->depth;
    r.walkable_height = walkable_height;
    r.walkable_climb = walkable_climb;
    r.rows = hf->rows;
    memcpy(r.origin, hf->origin, sizeof r.origin);
    r.cs = hf->cs;
    r.ch = hf->ch;
    op_arena_mark mark = op_arena_get_mark(out);
    st = alloc_arrays(&r, out, err);
    if (st != OP_OK) {
        op_arena_release(out, mark);
        return st;
    }
    if (flat) {
        fill_flat_linked(hf, &r);
    } else {
        fill_spans(hf, &r);
        link_cells(&r);
    }
    *chf = r;
    return OP_OK;
}
