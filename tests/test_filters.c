/*
 * Span filters (build3d-spans.md §4): the boundary of every comparison, computed by
 * hand from the rules (Recast 1.6.0's comparisons), and the order of the passes.
 */
#include <criterion/criterion.h>

#include "onepath/limits.h"
#include "onepath/spans.h"
#include "op_test.h"

static op_arena *arena;

static void setup(void)
{
    arena = op_arena_create(0);
}
static void teardown(void)
{
    op_arena_destroy(arena);
}

TestSuite(filters, .init = setup, .fini = teardown);

static op_heightfield field(int w, int d, int rows)
{
    op_heightfield hf;
    op_err e;
    double o[3] = {0, 0, 0};
    cr_assert_eq(op_heightfield_init(&hf, arena, w, d, rows, o, 1, 1, &e), OP_OK, "%s", e.msg);
    return hf;
}

static void add(op_heightfield *hf, int x, int z, int smin, int smax, int area)
{
    op_err e;
    cr_assert_eq(op_heightfield_add_span(hf, x, z, smin, smax, area, 0, &e), OP_OK, "%s", e.msg);
}

/* Area of the k-th span (bottom up) of column (x, z). */
static int area_of(const op_heightfield *hf, int x, int z, int k)
{
    uint32_t s = hf->heads[x + z * hf->width];
    while (k-- > 0)
        s = hf->spans[s].next;
    cr_assert_neq(s, OP_NO_SPAN);
    return hf->spans[s].area;
}

/* ---- low-hanging obstacles (§4.1) ---- */

Test(filters, low_hanging_at_climb_and_climb_plus_one)
{
    op_heightfield hf = field(3, 1, 100);
    add(&hf, 0, 0, 0, 5, 63);
    add(&hf, 0, 0, 6, 8, 0); /* top 8 - 5 = 3 = climb: raised, takes area 63 */
    add(&hf, 1, 0, 0, 5, 63);
    add(&hf, 1, 0, 6, 9, 0); /* 4 = climb + 1: stays */
    add(&hf, 2, 0, 0, 5, 17);
    add(&hf, 2, 0, 6, 8, 0);  /* raised to 17 */
    add(&hf, 2, 0, 9, 11, 0); /* the span below was not walkable before the pass: stays */
    op_filter_low_hanging(&hf, 3);
    cr_assert_eq(area_of(&hf, 0, 0, 1), 63);
    cr_assert_eq(area_of(&hf, 1, 0, 1), 0);
    cr_assert_eq(area_of(&hf, 2, 0, 1), 17);
    cr_assert_eq(area_of(&hf, 2, 0, 2), 0);
    cr_assert_eq(area_of(&hf, 2, 0, 0), 17);
}

Test(filters, low_hanging_keeps_walkable_areas)
{
    op_heightfield hf = field(1, 1, 100);
    add(&hf, 0, 0, 0, 5, 9);
    add(&hf, 0, 0, 6, 7, 4); /* walkable already: its own area stays */
    op_filter_low_hanging(&hf, 3);
    cr_assert_eq(area_of(&hf, 0, 0, 1), 4);
}

/* ---- ledges (§4.2) ---- */

/* A 3 x 3 field: the centre column holds `center` spans, the others floor 10
 * ([0, 10) walkable) unless replaced by `n` spans in column (2, 1) (direction 2). */
static op_heightfield ring(const int (*nspans)[3], int nn, int center_top)
{
    op_heightfield hf = field(3, 3, 200);
    for (int z = 0; z < 3; z++)
        for (int x = 0; x < 3; x++) {
            if (x == 1 && z == 1)
                add(&hf, x, z, 0, center_top, 63);
            else if (!(x == 2 && z == 1))
                add(&hf, x, z, 0, 10, 63);
        }
    for (int i = 0; i < nn; i++)
        add(&hf, 2, 1, nspans[i][0], nspans[i][1], nspans[i][2]);
    return hf;
}

Test(filters, ledge_drop_exactly_climb_is_not_a_ledge)
{
    const int wh = 4, climb = 2;
    int n1[1][3] = {{0, 8, 63}}; /* floor 8: drop 2 = climb */
    op_heightfield hf = ring(n1, 1, 10);
    op_filter_ledges(&hf, wh, climb);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 63);
    int n2[1][3] = {{0, 7, 63}}; /* drop 3 = climb + 1: ledge */
    hf = ring(n2, 1, 10);
    op_filter_ledges(&hf, wh, climb);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 0);
    /* The neighbour's own area does not matter, only its floor. */
    int n3[1][3] = {{0, 8, 0}};
    hf = ring(n3, 1, 10);
    op_filter_ledges(&hf, wh, climb);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 63);
}

Test(filters, ledge_grid_edge_and_empty_column)
{
    op_heightfield hf = ring(NULL, 0, 10); /* column (2, 1) empty: a drop to -infinity */
    op_filter_ledges(&hf, 4, 2);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 0);
    /* Every border column touches the outside of the grid. */
    int n[1][3] = {{0, 10, 63}};
    hf = ring(n, 1, 10);
    op_filter_ledges(&hf, 4, 2);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 63);
    for (int z = 0; z < 3; z++)
        for (int x = 0; x < 3; x++)
            if (x != 1 || z != 1)
                cr_assert_eq(area_of(&hf, x, z, 0), 0, "(%d, %d)", x, z);
}

Test(filters, ledge_steep_accessible_range)
{
    /* Neighbour floors 8 and 12 (both within climb 2 of 10): range 12 - 8 = 4 > 2. */
    op_heightfield hf = field(3, 3, 200);
    for (int z = 0; z < 3; z++)
        for (int x = 0; x < 3; x++)
            add(&hf, x, z, 0, (x == 0 && z == 1) ? 8 : (x == 2 && z == 1) ? 12 : 10, 63);
    op_filter_ledges(&hf, 4, 2);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 0);
    /* 9 and 11: range 2 = climb: kept. */
    hf = field(3, 3, 200);
    for (int z = 0; z < 3; z++)
        for (int x = 0; x < 3; x++)
            add(&hf, x, z, 0, (x == 0 && z == 1) ? 9 : (x == 2 && z == 1) ? 11 : 10, 63);
    op_filter_ledges(&hf, 4, 2);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 63);
}

Test(filters, ledge_ignores_neighbours_without_room)
{
    const int wh = 4, climb = 2;
    /* Neighbour: floor 5 under a ceiling at 12: overlap min(sky, 12) - max(10, 5) = 2 < 4,
     * so the deep floor is no drop; above it the wall top at 30 is out of climb. The
     * space under its lowest span ends at row 0: min(sky, 0) - 10 < 4. */
    int n1[2][3] = {{0, 5, 63}, {12, 30, 63}};
    op_heightfield hf = ring(n1, 2, 10);
    op_filter_ledges(&hf, wh, climb);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 63);
    /* Ceiling at 14: overlap exactly 4 = walkable_height counts: drop 5 -> ledge. */
    int n2[2][3] = {{0, 5, 63}, {14, 30, 63}};
    hf = ring(n2, 2, 10);
    op_filter_ledges(&hf, wh, climb);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 0);
    /* Open space under the neighbour's lowest span: lowest span at 13 leaves
     * min(sky, 13) - 10 = 3 < 4 (no drop); at 14 it is 4 (a drop). */
    int n3[1][3] = {{13, 30, 63}};
    hf = ring(n3, 1, 10);
    op_filter_ledges(&hf, wh, climb);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 63);
    int n4[1][3] = {{14, 30, 63}};
    hf = ring(n4, 1, 10);
    op_filter_ledges(&hf, wh, climb);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 0);
}

Test(filters, ledge_skips_unwalkable_spans)
{
    op_heightfield hf = field(1, 1, 100);
    add(&hf, 0, 0, 0, 10, 0);
    op_filter_ledges(&hf, 4, 2);
    cr_assert_eq(area_of(&hf, 0, 0, 0), 0);
}

/* ---- low height (§4.3) ---- */

Test(filters, low_height_exactly_walkable_height_is_kept)
{
    op_heightfield hf = field(2, 1, OP_MAX_ROWS);
    add(&hf, 0, 0, 0, 10, 63);
    add(&hf, 0, 0, 14, 20, 63); /* 14 - 10 = 4 = walkable height: kept */
    add(&hf, 1, 0, 0, 10, 63);
    add(&hf, 1, 0, 13, 20, 63); /* 3: removed */
    op_filter_low_height(&hf, 4);
    cr_assert_eq(area_of(&hf, 0, 0, 0), 63);
    cr_assert_eq(area_of(&hf, 1, 0, 0), 0);
    cr_assert_eq(area_of(&hf, 0, 0, 1), 63); /* open sky above */
    /* The sky is row 65535: a top at 65532 has 3 rows. */
    hf = field(1, 1, OP_MAX_ROWS);
    add(&hf, 0, 0, 65500, 65532, 63);
    op_filter_low_height(&hf, 4);
    cr_assert_eq(area_of(&hf, 0, 0, 0), 0);
    hf = field(1, 1, OP_MAX_ROWS);
    add(&hf, 0, 0, 65500, 65531, 63);
    op_filter_low_height(&hf, 4);
    cr_assert_eq(area_of(&hf, 0, 0, 0), 63);
}

Test(filters, filters_run_low_hanging_before_low_height)
{
    /* Centre column: floor 12 of a thin slab [11, 12) (area 0) over [0, 10). Run in
     * order, the slab is raised first (12 - 10 <= climb), then the floor under it is
     * removed for lack of room; with low height first the slab would stay 0. */
    op_heightfield hf = field(3, 3, 100);
    for (int z = 0; z < 3; z++)
        for (int x = 0; x < 3; x++)
            if (x == 1 && z == 1) {
                add(&hf, x, z, 0, 10, 63);
                add(&hf, x, z, 11, 12, 0);
            } else {
                add(&hf, x, z, 0, 12, 63);
            }
    op_filters_apply(&hf, 4, 2);
    cr_assert_eq(area_of(&hf, 1, 1, 0), 0);
    cr_assert_eq(area_of(&hf, 1, 1, 1), 63);
    /* Extents are never changed by filters. */
    uint32_t s = hf.heads[4];
    cr_assert_eq(hf.spans[s].smin, 0);
    cr_assert_eq(hf.spans[s].smax, 10);
}

/* a through the three passes in order, b through op_filters_apply. */
static void filter_both(op_heightfield *a, op_heightfield *b, int wh, int wc)
{
    op_filter_low_hanging(a, wc);
    op_filter_ledges(a, wh, wc);
    op_filter_low_height(a, wh);
    op_filters_apply(b, wh, wc);
}

/* a and b (the same spans) hold the same areas, span by span; returns the walkable ones. */
static int same_areas(const op_heightfield *a, const op_heightfield *b, int field_no)
{
    int walkable = 0;
    for (int c = 0; c < a->width * a->depth; c++) {
        uint32_t sa = a->heads[c], sb = b->heads[c];
        for (; sa != OP_NO_SPAN && sb != OP_NO_SPAN;
             sa = a->spans[sa].next, sb = b->spans[sb].next) {
            cr_assert_eq(a->spans[sa].smax, b->spans[sb].smax);
            cr_assert_eq(a->spans[sa].area, b->spans[sb].area,
                         "field %d column %d span top %d: passes %d, apply %d", field_no, c,
                         a->spans[sa].smax, a->spans[sa].area, b->spans[sb].area);
            walkable += a->spans[sa].area != 0;
        }
        cr_assert(sa == OP_NO_SPAN && sb == OP_NO_SPAN);
    }
    return walkable;
}

/* op_filters_apply walks the spans once; it must give exactly what the three passes
 * give one after the other (§4: each reads the state before it). Random columns of
 * up to four spans with areas 0, 63 and others, heights near the thresholds. */
Test(filters, filters_apply_equals_the_three_passes_in_order)
{
    op_test_rng rng = {20261130};
    for (int field_no = 0; field_no < 400; field_no++) {
        int w = op_test_rand_int(&rng, 1, 7), d = op_test_rand_int(&rng, 1, 7);
        int wh = op_test_rand_int(&rng, 1, 8), wc = op_test_rand_int(&rng, 0, 5);
        op_heightfield a = field(w, d, 60), b = field(w, d, 60);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int n = op_test_rand_int(&rng, 0, 4), y = op_test_rand_int(&rng, 0, 6);
                for (int k = 0; k < n && y < 58; k++) {
                    int h = op_test_rand_int(&rng, 1, 6);
                    int top = y + h > 60 ? 60 : y + h;
                    int r = op_test_rand_int(&rng, 0, 9);
                    int area = r < 4 ? 0 : (r < 8 ? 63 : op_test_rand_int(&rng, 1, 62));
                    add(&a, x, z, y, top, area);
                    add(&b, x, z, y, top, area);
                    y = top + op_test_rand_int(&rng, 1, wh + 3);
                }
            }
        filter_both(&a, &b, wh, wc);
        same_areas(&a, &b, field_no);
        op_arena_reset(arena);
    }
}

/* The same on tall columns (up to 40 spans, the stacked floors where op_filters_apply
 * keeps a cursor per neighbour instead of scanning its whole column): spans of every
 * height and gap near walkable_height, so the neighbour spans that leave no room lie
 * below, between and above the ones that do. */
Test(filters, filters_apply_equals_the_three_passes_on_tall_columns)
{
    op_test_rng rng = {20261202};
    int walkable = 0; /* spans compared that stayed walkable */
    for (int field_no = 0; field_no < 150; field_no++) {
        int w = op_test_rand_int(&rng, 3, 6), d = op_test_rand_int(&rng, 3, 6);
        int wh = op_test_rand_int(&rng, 1, 8), wc = op_test_rand_int(&rng, 0, 5);
        op_heightfield a = field(w, d, 600), b = field(w, d, 600);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int n = op_test_rand_int(&rng, 0, 40), y = op_test_rand_int(&rng, 0, 6);
                for (int k = 0; k < n && y < 590; k++) {
                    int top = y + op_test_rand_int(&rng, 1, 6);
                    top = top > 600 ? 600 : top;
                    int r = op_test_rand_int(&rng, 0, 9);
                    int area = r < 3 ? 0 : (r < 8 ? 63 : op_test_rand_int(&rng, 1, 62));
                    add(&a, x, z, y, top, area);
                    add(&b, x, z, y, top, area);
                    y = top + op_test_rand_int(&rng, 1, wh + 4);
                }
            }
        filter_both(&a, &b, wh, wc);
        walkable += same_areas(&a, &b, field_no);
        op_arena_reset(arena);
    }
    cr_assert_gt(walkable, 1000, "only %d walkable spans compared", walkable);
}

/* The same on open flat ground, where op_filters_apply answers "not a ledge" without the
 * neighbour tests: one-span columns whose floors come from two or three values (so many
 * cells have four neighbours at their very floor), some multi-span and empty columns, and
 * floors near the sky (rows up to OP_MAX_ROWS, walkable heights that do not fit above
 * them), where the neighbours leave no room. */
Test(filters, filters_apply_equals_the_three_passes_on_flat_ground)
{
    op_test_rng rng = {20261203};
    int flat = 0; /* walkable spans with four one-span neighbours at their floor */
    for (int field_no = 0; field_no < 300; field_no++) {
        int w = op_test_rand_int(&rng, 3, 9), d = op_test_rand_int(&rng, 3, 9);
        int high = field_no % 3 == 0, rows = high ? OP_MAX_ROWS : 60;
        int wh = high ? op_test_rand_int(&rng, 1, 12) : op_test_rand_int(&rng, 1, 8);
        int wc = op_test_rand_int(&rng, 0, 4);
        int base =
            high ? OP_MAX_ROWS - op_test_rand_int(&rng, 1, 10) : op_test_rand_int(&rng, 14, 40);
        int levels[3] = {base, base - op_test_rand_int(&rng, 0, wc + 1),
                         base - op_test_rand_int(&rng, 0, 2 * wc + 3)};
        op_heightfield a = field(w, d, rows), b = field(w, d, rows);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int r = op_test_rand_int(&rng, 0, 19);
                if (r == 0)
                    continue; /* empty */
                int top = levels[r < 14 ? 0 : (r < 17 ? 1 : 2)];
                int area = op_test_rand_int(&rng, 0, 9) == 0 ? 0 : 63;
                if (r == 19 && top > 8) { /* a span under the floor: two in the column */
                    add(&a, x, z, 0, 2, 63);
                    add(&b, x, z, 0, 2, 63);
                }
                add(&a, x, z, top - 2 < 0 ? 0 : top - 2, top, area);
                add(&b, x, z, top - 2 < 0 ? 0 : top - 2, top, area);
            }
        filter_both(&a, &b, wh, wc);
        for (int z = 1; z + 1 < d; z++)
            for (int x = 1; x + 1 < w; x++) {
                int c = x + z * w, n[4] = {c - 1, c + w, c + 1, c - w}, ok = 1;
                uint32_t s = a.heads[c];
                ok = s != OP_NO_SPAN && a.spans[s].next == OP_NO_SPAN;
                for (int k = 0; k < 4 && ok; k++) {
                    uint32_t t = a.heads[n[k]];
                    ok = t != OP_NO_SPAN && a.spans[t].next == OP_NO_SPAN &&
                         a.spans[t].smax == a.spans[s].smax;
                }
                flat += ok && b.spans[b.heads[c]].area != 0;
            }
        same_areas(&a, &b, field_no);
        op_arena_reset(arena);
    }
    cr_assert_gt(flat, 500, "only %d flat walkable spans", flat);
}

/* The same on stacked floors: columns copied from one template of floors and slabs,
 * some exactly (the same opening next door, which op_filters_apply settles without its
 * loop), some with one floor or one ceiling moved by a row or two, some cut short, some
 * with a shelf in an opening (the same floor next door, but not the same opening). */
Test(filters, filters_apply_equals_the_three_passes_on_stacked_floors)
{
    op_test_rng rng = {20261204};
    int same = 0; /* walkable spans with a neighbour span of the same floor and ceiling */
    for (int field_no = 0; field_no < 300; field_no++) {
        int w = op_test_rand_int(&rng, 3, 8), d = op_test_rand_int(&rng, 3, 8);
        int wh = op_test_rand_int(&rng, 1, 8), wc = op_test_rand_int(&rng, 0, 4);
        int nfl = op_test_rand_int(&rng, 2, 6), lo[6], hi[6], y = op_test_rand_int(&rng, 0, 4);
        for (int k = 0; k < nfl; k++) { /* slab k occupies [lo, hi) */
            lo[k] = y;
            hi[k] = y + op_test_rand_int(&rng, 1, 3);
            y = hi[k] + op_test_rand_int(&rng, 1, wh + 4);
        }
        op_heightfield a = field(w, d, y + 8), b = field(w, d, y + 8);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int r = op_test_rand_int(&rng, 0, 9), n = nfl;
                if (r == 9)
                    n = op_test_rand_int(&rng, 0, nfl); /* cut short */
                int moved = r >= 6 && r < 9 ? op_test_rand_int(&rng, 0, n - 1) : -1;
                for (int k = 0; k < n; k++) {
                    int s0 = lo[k], s1 = hi[k];
                    if (k == moved) {
                        int dy = op_test_rand_int(&rng, -2, 2);
                        int lim0 = k ? hi[k - 1] + 1 : 0, lim1 = k + 1 < n ? lo[k + 1] : y + 8;
                        if (op_test_rand_int(&rng, 0, 1))
                            s0 = s0 + dy >= lim0 && s0 + dy < s1 ? s0 + dy : s0;
                        else
                            s1 = s1 + dy > s0 && s1 + dy < lim1 ? s1 + dy : s1;
                    }
                    int area = op_test_rand_int(&rng, 0, 7) == 0 ? 0 : 63;
                    add(&a, x, z, s0, s1, area);
                    add(&b, x, z, s0, s1, area);
                    /* A shelf in the opening above (r == 5): next door, the same floor
                     * with a lower ceiling and another floor within reach. */
                    int top = k + 1 < n ? lo[k + 1] : y + 8;
                    if (r == 5 && k != moved && top - s1 >= 3) {
                        int g = op_test_rand_int(&rng, 1, top - s1 - 2);
                        add(&a, x, z, s1 + g, s1 + g + 1, 63);
                        add(&b, x, z, s1 + g, s1 + g + 1, 63);
                    }
                }
            }
        filter_both(&a, &b, wh, wc);
        for (int z = 1; z + 1 < d; z++)
            for (int x = 1; x + 1 < w; x++)
                for (uint32_t s = a.heads[x + z * w]; s != OP_NO_SPAN; s = a.spans[s].next) {
                    uint32_t t = a.heads[x + 1 + z * w];
                    for (; t != OP_NO_SPAN; t = a.spans[t].next)
                        if (a.spans[t].smax == a.spans[s].smax && a.spans[s].next != OP_NO_SPAN &&
                            a.spans[t].next != OP_NO_SPAN &&
                            a.spans[a.spans[t].next].smin == a.spans[a.spans[s].next].smin)
                            same += a.spans[s].area != 0;
                }
        same_areas(&a, &b, field_no);
        op_arena_reset(arena);
    }
    cr_assert_gt(same, 500, "only %d walkable spans with the same opening next door", same);
}

/* The same on rooms (dungeon.obj's columns): a floor slab under a ceiling slab, floors
 * within and beyond the climb of each other, ceilings from walkable_height - 3 to
 * 2 walkable_height + 3 above them, some thin shelves in the opening and some columns
 * short of a span, so that next door a span's cursor often stops at a room whose
 * ceiling is within walkable_height of this one's or above it (ledge_towards_from's
 * one-iteration case), and sometimes at one whose next span up is still in reach. */
Test(filters, filters_apply_equals_the_three_passes_on_rooms)
{
    op_test_rng rng = {20261207};
    int near = 0; /* walkable inner spans with such a room next door that is not the same */
    for (int field_no = 0; field_no < 400; field_no++) {
        int w = op_test_rand_int(&rng, 3, 8), d = op_test_rand_int(&rng, 3, 8);
        int wh = op_test_rand_int(&rng, 1, 8), wc = op_test_rand_int(&rng, 0, 4);
        int base = wc + op_test_rand_int(&rng, 6, 10), rows = base + 2 * wc + 40;
        op_heightfield a = field(w, d, rows), b = field(w, d, rows);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int r = op_test_rand_int(&rng, 0, 19);
                if (r == 0)
                    continue; /* empty */
                int f = base + op_test_rand_int(&rng, -wc - 2, wc + 2);
                int g = f + wh + op_test_rand_int(&rng, -3, wh + 3);
                g = g <= f ? f + 1 : g;
                int g1 = g + op_test_rand_int(&rng, 1, 3);
                int area = op_test_rand_int(&rng, 0, 7) == 0 ? 0 : 63;
                int f0 = f - op_test_rand_int(&rng, 1, 3);
                add(&a, x, z, f0, f, area);
                add(&b, x, z, f0, f, area);
                if (r == 1)
                    continue; /* no ceiling */
                area = op_test_rand_int(&rng, 0, 3) == 0 ? 0 : 63;
                add(&a, x, z, g, g1, area);
                add(&b, x, z, g, g1, area);
                if (r <= 4 && g - f >= 3) { /* a shelf of one or two rows in the room */
                    int s0 = op_test_rand_int(&rng, f + 1, g - 2);
                    int s1 = s0 + op_test_rand_int(&rng, 1, g - 1 - s0 < 2 ? g - 1 - s0 : 2);
                    add(&a, x, z, s0, s1, 63);
                    add(&b, x, z, s0, s1, 63);
                }
            }
        /* Count the case before the filters change the areas. */
        for (int z = 1; z + 1 < d; z++)
            for (int x = 1; x + 1 < w; x++)
                for (uint32_t s = a.heads[x + z * w]; s != OP_NO_SPAN; s = a.spans[s].next) {
                    uint32_t sn = a.spans[s].next;
                    int fl = a.spans[s].smax,
                        cl = sn == OP_NO_SPAN ? OP_SPAN_SKY : a.spans[sn].smin;
                    if (a.spans[s].area == 0 || cl - fl < wh)
                        continue;
                    const int nc[4] = {-1, w, 1, -w};
                    for (int k = 0; k < 4; k++)
                        for (uint32_t t = a.heads[x + z * w + nc[k]]; t != OP_NO_SPAN;
                             t = a.spans[t].next) {
                            uint32_t tn = a.spans[t].next;
                            int nf = a.spans[t].smax,
                                ncl = tn == OP_NO_SPAN ? OP_SPAN_SKY : a.spans[tn].smin;
                            near += ncl - fl >= wh && ncl + wh >= cl && (nf != fl || ncl != cl) &&
                                    nf - fl <= wc && fl - nf <= wc;
                        }
                }
        filter_both(&a, &b, wh, wc);
        same_areas(&a, &b, field_no);
        op_arena_reset(arena);
    }
    cr_assert_gt(near, 2000, "only %d walkable spans with a near room next door", near);
}

/* The same on level floors under clutter: nearly every column's lowest span tops out at
 * one floor, and above it a low slab (clearance from none to past walkable_height), a
 * step within or beyond the climb, a roof, or nothing, so that a span's four neighbour
 * cursors often sit at its own floor while their columns hold more (op_filters_apply
 * then keeps the span without its four tests, filter.c's flat ground). Counts those
 * spans (walkable, room above, four neighbours with the same lowest top, one with more
 * than one span). */
Test(filters, filters_apply_equals_the_three_passes_on_level_floors)
{
    op_test_rng rng = {20261209};
    int level = 0;
    for (int field_no = 0; field_no < 1000; field_no++) {
        int w = op_test_rand_int(&rng, 3, 9), d = op_test_rand_int(&rng, 3, 9);
        int wh = op_test_rand_int(&rng, 1, 8), wc = op_test_rand_int(&rng, 0, 4);
        int f = wc + op_test_rand_int(&rng, 4, 8), rows = f + 2 * wh + 3 * wc + 30;
        op_heightfield a = field(w, d, rows), b = field(w, d, rows);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int r = op_test_rand_int(&rng, 0, 15);
                if (r == 0)
                    continue; /* empty */
                int fl = r == 1 ? f + op_test_rand_int(&rng, -wc - 1, wc + 1) : f;
                int area = op_test_rand_int(&rng, 0, 7) == 0 ? 0 : 63;
                int f0 = fl - op_test_rand_int(&rng, 1, 3);
                add(&a, x, z, f0, fl, area);
                add(&b, x, z, f0, fl, area);
                int kind = op_test_rand_int(&rng, 0, 4);
                int s0 = fl + op_test_rand_int(&rng, 1, wh + 1), s1 = 0;
                if (kind == 1) /* a low slab: its top within or beyond the climb */
                    s1 = s0 + op_test_rand_int(&rng, 1, wc + 2);
                else if (kind == 2) /* a roof */
                    s1 = s0 + op_test_rand_int(&rng, 1, 3), s0 += wh;
                else if (kind == 3) /* a step: its top within or beyond the climb of fl */
                    s0 = fl + op_test_rand_int(&rng, 1, wc + 1),
                    s1 = fl + op_test_rand_int(&rng, 0, wc + 2), s1 = s1 <= s0 ? s0 + 1 : s1;
                if (s1 > s0) {
                    area = op_test_rand_int(&rng, 0, 3) == 0 ? 0 : 63;
                    add(&a, x, z, s0, s1, area);
                    add(&b, x, z, s0, s1, area);
                }
            }
        for (int z = 1; z + 1 < d; z++)
            for (int x = 1; x + 1 < w; x++) {
                uint32_t s = a.heads[x + z * w];
                if (s == OP_NO_SPAN || a.spans[s].area == 0)
                    continue;
                uint32_t sn = a.spans[s].next;
                int fl = a.spans[s].smax, cl = sn == OP_NO_SPAN ? OP_SPAN_SKY : a.spans[sn].smin;
                const int nc[4] = {-1, w, 1, -w};
                int same = cl - fl >= wh, more = 0;
                for (int k = 0; k < 4; k++) {
                    uint32_t t = a.heads[x + z * w + nc[k]];
                    same &= t != OP_NO_SPAN && a.spans[t].smax == fl;
                    more |= t != OP_NO_SPAN && a.spans[t].next != OP_NO_SPAN;
                }
                level += same && more;
            }
        filter_both(&a, &b, wh, wc);
        same_areas(&a, &b, field_no);
        op_arena_reset(arena);
    }
    cr_assert_gt(level, 3000, "only %d spans at their neighbours' floor among clutter", level);
}

/* The same on one-span ground, where op_filters_apply tests four cells of a row at once
 * (filter.c; test_filters_scalar runs this suite on the scalar test): rows of 3 to 14
 * cells (whole blocks of four and the cells left over), nearly every column one span,
 * floors within a few rows of each other (steps within and beyond the climb), some
 * slabs floating over the ground (a neighbour's underside at or past walkable_height
 * above the floor), some empty or two-span columns among them, and fields near the sky
 * where the span's own clearance or a neighbour's room runs out. */
Test(filters, filters_apply_equals_the_three_passes_on_one_span_ground)
{
    op_test_rng rng = {20261207};
    int fast = 0; /* inner one-span cells with four one-span neighbours */
    int cleared = 0, kept = 0;
    for (int field_no = 0; field_no < 600; field_no++) {
        int w = op_test_rand_int(&rng, 3, 14), d = op_test_rand_int(&rng, 3, 9);
        int high = field_no % 4 == 0, rows = high ? OP_MAX_ROWS : 80;
        int wh = high ? op_test_rand_int(&rng, 1, 14) : op_test_rand_int(&rng, 1, 10);
        int wc = op_test_rand_int(&rng, 0, 5);
        int base =
            high ? OP_MAX_ROWS - op_test_rand_int(&rng, 1, 16) : op_test_rand_int(&rng, 20, 40);
        op_heightfield a = field(w, d, rows), b = field(w, d, rows);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int r = op_test_rand_int(&rng, 0, 39);
                if (r == 0)
                    continue; /* empty */
                int top = base + op_test_rand_int(&rng, -(wc + 2), wc + 2);
                if (r <= 3 && !high) /* a slab floating over the floor */
                    top = base + op_test_rand_int(&rng, wh - 1, wh + 6);
                top = top > rows ? rows : top;
                int bottom = top - op_test_rand_int(&rng, 1, 3);
                bottom = bottom < 0 ? 0 : bottom;
                int area = op_test_rand_int(&rng, 0, 7) == 0 ? 0 : 63;
                if (r == 39 && bottom > 3) { /* a span under the floor: two in the column */
                    add(&a, x, z, 0, 1, 63);
                    add(&b, x, z, 0, 1, 63);
                }
                add(&a, x, z, bottom, top, area);
                add(&b, x, z, bottom, top, area);
            }
        for (int z = 1; z + 1 < d; z++)
            for (int x = 1; x + 1 < w; x++) {
                int c = x + z * w, n[5] = {c, c - 1, c + w, c + 1, c - w}, ok = 1;
                for (int k = 0; k < 5 && ok; k++)
                    ok = a.heads[n[k]] != OP_NO_SPAN && a.spans[a.heads[n[k]]].next == OP_NO_SPAN;
                fast += ok;
            }
        filter_both(&a, &b, wh, wc);
        for (int c = 0; c < w * d; c++)
            if (b.heads[c] != OP_NO_SPAN) {
                kept += b.spans[b.heads[c]].area != 0;
                cleared += b.spans[b.heads[c]].area == 0;
            }
        same_areas(&a, &b, field_no);
        op_arena_reset(arena);
    }
    cr_assert_gt(fast, 10000, "only %d one-span cells among one-span neighbours", fast);
    cr_assert_gt(kept, 1000, "only %d walkable spans kept", kept);
    cr_assert_gt(cleared, 3000, "only %d spans cleared", cleared);
}

/* The same beside walls, steps up and raised floors: op_filters_apply keeps a span
 * without its four tests when every neighbour column's lowest floor is at least the
 * span's and the open space under that column's lowest span is below walkable_height
 * (filter.c, "no drop next door"). Columns hold a floor at f (or a step a few rows up or
 * down), and some of them a wall instead (solid from below f to far above), a slab
 * raised so that its underside is walkable_height - 1, walkable_height or
 * walkable_height + 1 above f, or a roof over the floor; with two_spans most columns get
 * a second span (walk_all's fields), else most hold one (walk_blocks'). Counts the spans
 * that meet the shortcut's test with a neighbour above their floor, and those with a
 * neighbour's underside exactly walkable_height above (a drop, not the shortcut). */
static void walls_and_steps(int two_spans, uint64_t seed)
{
    op_test_rng rng = {seed};
    int broad = 0, at_height = 0;
    for (int field_no = 0; field_no < 1500; field_no++) {
        int w = op_test_rand_int(&rng, 3, 9), d = op_test_rand_int(&rng, 3, 9);
        int wh = op_test_rand_int(&rng, 1, 6), wc = op_test_rand_int(&rng, 0, 3);
        int f = wc + 4, rows = f + 3 * wh + 3 * wc + 40;
        op_heightfield a = field(w, d, rows), b = field(w, d, rows);
        for (int z = 0; z < d; z++)
            for (int x = 0; x < w; x++) {
                int r = op_test_rand_int(&rng, 0, 11), area = op_test_rand_int(&rng, 0, 9) ? 63 : 0;
                int s0, s1;
                if (r == 0) {
                    continue;        /* empty */
                } else if (r <= 2) { /* a wall */
                    s0 = f - op_test_rand_int(&rng, 1, 3),
                    s1 = f + 20 + op_test_rand_int(&rng, 0, 5);
                } else if (r == 3) { /* a raised slab: underside near walkable_height above f */
                    s0 = f + wh + op_test_rand_int(&rng, -1, 1),
                    s1 = s0 + op_test_rand_int(&rng, 1, 3);
                } else { /* a floor at f, or a step up or down */
                    int fl = r <= 5 ? f + op_test_rand_int(&rng, -wc - 1, wc + 2) : f;
                    s0 = fl - op_test_rand_int(&rng, 1, 3), s1 = fl;
                }
                add(&a, x, z, s0, s1, area);
                add(&b, x, z, s0, s1, area);
                if (two_spans ? op_test_rand_int(&rng, 0, 3) != 0
                              : op_test_rand_int(&rng, 0, 7) == 0) {
                    int t0 = s1 + op_test_rand_int(&rng, 1, wh + 2),
                        t1 = t0 + op_test_rand_int(&rng, 1, 3);
                    add(&a, x, z, t0, t1, op_test_rand_int(&rng, 0, 3) ? 63 : 0);
                    add(&b, x, z, t0, t1, op_test_rand_int(&rng, 0, 3) ? 63 : 0);
                }
            }
        /* b's second spans took areas of their own draw: copy a's areas to b */
        for (int c = 0; c < w * d; c++)
            for (uint32_t sa = a.heads[c], sb = b.heads[c]; sa != OP_NO_SPAN;
                 sa = a.spans[sa].next, sb = b.spans[sb].next)
                b.spans[sb].area = a.spans[sa].area;
        for (int z = 1; z + 1 < d; z++)
            for (int x = 1; x + 1 < w; x++) {
                uint32_t s = a.heads[x + z * w];
                if (s == OP_NO_SPAN || a.spans[s].area == 0)
                    continue;
                uint32_t sn = a.spans[s].next;
                int fl = a.spans[s].smax, cl = sn == OP_NO_SPAN ? OP_SPAN_SKY : a.spans[sn].smin;
                if (cl - fl < wh)
                    continue;
                const int nc[4] = {-1, w, 1, -w};
                int ok = 1, above = 0, exact = 0;
                for (int k = 0; k < 4; k++) {
                    uint32_t t = a.heads[x + z * w + nc[k]];
                    ok &= t != OP_NO_SPAN && a.spans[t].smax >= fl && a.spans[t].smin - fl < wh;
                    above |= t != OP_NO_SPAN && a.spans[t].smax > fl;
                    exact |= t != OP_NO_SPAN && a.spans[t].smin - fl == wh;
                }
                broad += ok && above;
                at_height += exact;
            }
        filter_both(&a, &b, wh, wc);
        same_areas(&a, &b, field_no);
        op_arena_reset(arena);
    }
    cr_assert_gt(broad, 2000, "only %d spans kept beside walls or steps up", broad);
    cr_assert_gt(at_height, 1000, "only %d spans beside an underside at walkable_height",
                 at_height);
}

Test(filters, filters_apply_equals_the_three_passes_beside_walls_and_steps)
{
    walls_and_steps(1, 20261211);
    walls_and_steps(0, 20261212);
}
