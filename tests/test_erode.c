/*
 * Erosion (build3d-spans.md §7): a walkable span whose exact distance (§8) is below
 * 2 * radius becomes area 0. Expected results come from the geometry of hand-made
 * strips (ring index) and, on random fields, from the brute-force distance oracle.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/spans.h"
#include "op_fields.h"
#include "op_test.h"

static op_chf *from_rows(op_arena *a, const char *const *rows, int depth)
{
    return op_test_field_from_text(a, rows, depth);
}

static op_chf *strip(op_arena *a, int length, int width)
{
    char **lines = calloc((size_t)width, sizeof *lines);
    for (int z = 0; z < width; z++) {
        lines[z] = calloc((size_t)length + 1, 1);
        memset(lines[z], '#', (size_t)length);
    }
    op_chf *chf = from_rows(a, (const char *const *)lines, width);
    for (int z = 0; z < width; z++)
        free(lines[z]);
    free(lines);
    return chf;
}

static void erode(op_chf *chf, int radius, op_arena *scratch)
{
    op_err e;
    cr_assert_eq(op_erode(chf, radius, scratch, &e), OP_OK, "%s", e.msg);
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

Test(erode, strips_of_width_3_4_5)
{
    /* In a full block the distance is 2 * (ring index), so a span survives radius r
     * exactly when its ring index is at least r. */
    const int length = 12;
    for (int width = 3; width <= 5; width++)
        for (int radius = 0; radius <= 3; radius++) {
            op_arena *a = op_arena_create(0);
            op_chf *chf = strip(a, length, width);
            erode(chf, radius, a);
            int kept = 0;
            for (int z = 0; z < width; z++)
                for (int x = 0; x < length; x++) {
                    int ring = imin(imin(x, z), imin(length - 1 - x, width - 1 - z));
                    int want = ring >= radius ? 63 : 0;
                    uint32_t s = chf->cells[x + z * length];
                    cr_assert_eq(chf->areas[s], want, "width %d radius %d (%d, %d)", width, radius,
                                 x, z);
                    kept += want != 0;
                }
            /* The cases the brief names, spelled out. */
            if (radius == 0)
                cr_assert_eq(kept, length * width);
            if (radius == 1)
                cr_assert_eq(kept, (length - 2) * (width - 2));
            if (radius == 2)
                cr_assert_eq(kept, width == 5 ? length - 4 : 0);
            op_arena_destroy(a);
        }
}

Test(erode, one_cell_corridor_disappears_at_radius_1)
{
    const char *pic[] = {
        "#####.....#####", "#####.....#####", "###############",
        "#####.....#####", "#####.....#####",
    };
    op_arena *a = op_arena_create(0);
    op_chf *chf = from_rows(a, pic, 5);
    erode(chf, 1, a);
    for (int x = 5; x < 10; x++)
        cr_assert_eq(chf->areas[chf->cells[x + 2 * 15]], 0, "corridor cell %d survives", x);
    /* The rooms' interiors stay: (1..3, 1..3) and (11..13, 1..3); the rooms' cells next to
     * the corridor mouth (x = 4, 10) are boundary (their corridor-side links are missing
     * in rows 1 and 3). */
    int kept = 0;
    for (uint32_t s = 0; s < chf->span_count; s++)
        kept += chf->areas[s] != 0;
    cr_assert_eq(kept, 2 * 9 + 2, "kept %d", kept); /* + (4,2) and (10,2), linked all round */
    cr_assert_eq(chf->areas[chf->cells[4 + 2 * 15]], 63);
    cr_assert_eq(chf->areas[chf->cells[10 + 2 * 15]], 63);
    op_arena_destroy(a);
}

Test(erode, equals_the_rule_on_random_fields)
{
    for (uint64_t seed = 1; seed <= 200; seed++) {
        op_test_rng rng = {seed * 2654435761u};
        int w = op_test_rand_int(&rng, 1, 20), d = op_test_rand_int(&rng, 1, 20);
        int radius = op_test_rand_int(&rng, 0, 4);
        op_arena *a = op_arena_create(0);
        op_chf *chf = op_test_field_random(a, &rng, w, d, op_test_rand_int(&rng, 1, 3), 3);
        uint32_t *want = malloc((chf->span_count + 1) * sizeof *want);
        uint8_t *before = malloc(chf->span_count + 1);
        memcpy(before, chf->areas, chf->span_count);
        op_test_brute_distance(chf, want);
        erode(chf, radius, a);
        for (uint32_t s = 0; s < chf->span_count; s++) {
            int expect = want[s] < 2u * (uint32_t)radius ? 0 : before[s];
            cr_assert_eq(chf->areas[s], expect, "seed %llu span %u", (unsigned long long)seed, s);
        }
        free(want);
        free(before);
        op_arena_destroy(a);
    }
}

Test(erode, other_areas_are_kept_and_stale_distance_is_dropped)
{
    const char *pic[] = {"1111122222", "1111122222", "1111122222", "1111122222", "1111122222"};
    op_arena *a = op_arena_create(0);
    op_chf *chf = from_rows(a, pic, 5);
    op_err e;
    cr_assert_eq(op_distance_build(chf, a, a, &e), OP_OK);
    erode(chf, 1, a);
    cr_assert_null(chf->dist, "erosion changed areas: the old distance field is stale");
    /* Different walkable areas are not a boundary: the seam survives. */
    cr_assert_eq(chf->areas[chf->cells[4 + 2 * 10]], 1);
    cr_assert_eq(chf->areas[chf->cells[5 + 2 * 10]], 2);
    cr_assert_eq(chf->areas[chf->cells[0]], 0);
    /* Radius 0 changes nothing and keeps a built distance field. */
    cr_assert_eq(op_distance_build(chf, a, a, &e), OP_OK);
    erode(chf, 0, a);
    cr_assert_not_null(chf->dist);
    op_arena_destroy(a);
}

Test(erode, huge_radius_erodes_everything_without_overflow)
{
    op_arena *a = op_arena_create(0);
    op_chf *chf = strip(a, 50, 50);
    erode(chf, 0x7fffffff, a);
    for (uint32_t s = 0; s < chf->span_count; s++)
        cr_assert_eq(chf->areas[s], 0);
    op_arena_destroy(a);
}

Test(erode, negative_radius_is_refused)
{
    op_arena *a = op_arena_create(0);
    op_chf *chf = strip(a, 5, 5);
    op_err e;
    cr_assert_eq(op_erode(chf, -1, a, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "radius = -1"), "%s", e.msg);
    op_arena_destroy(a);
}

Test(erode, allocation_failure_returns_enomem_and_changes_nothing)
{
    op_arena *fa = op_arena_create(0);
    op_chf *chf = strip(fa, 30, 30);
    for (long k = 0; k < 2; k++) {
        op_arena *scratch = op_arena_create(0);
        op_arena_fail_after(scratch, k);
        op_err e;
        cr_assert_eq(op_erode(chf, 2, scratch, &e), OP_ENOMEM);
        cr_assert(strstr(e.msg, "bytes"), "%s", e.msg);
        cr_assert_eq(op_arena_used(scratch), 0);
        op_arena_destroy(scratch);
    }
    for (uint32_t s = 0; s < chf->span_count; s++)
        cr_assert_eq(chf->areas[s], 63);
    op_arena_destroy(fa);
}
