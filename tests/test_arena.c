/* Arenas: alignment, growth, marks, reset, limits and the fail-after test hook. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "onepath/arena.h"

Test(arena, aligned_distinct_and_writable)
{
    op_arena *a = op_arena_create(256);
    cr_assert(a);
    unsigned char *prev = NULL;
    for (int i = 0; i < 1000; i++) {
        size_t n = (size_t)(i % 97);
        unsigned char *p = op_arena_alloc(a, n);
        cr_assert(p);
        cr_assert_eq((uintptr_t)p % 16, 0);
        memset(p, i & 0xff, n);
        cr_assert_neq(p, prev);
        prev = p;
    }
    cr_assert(op_arena_used(a) >= 1000 * 16);
    op_arena_destroy(a);
}

Test(arena, grow_keeps_contents)
{
    op_arena *a = op_arena_create(1024);
    int *v = op_arena_alloc(a, 4 * sizeof(int));
    for (int i = 0; i < 4; i++)
        v[i] = i;
    for (size_t n = 4; n < 10000; n *= 2) {
        v = op_arena_grow(a, v, n * sizeof(int), 2 * n * sizeof(int));
        cr_assert(v);
        for (size_t i = n; i < 2 * n; i++)
            v[i] = (int)i;
    }
    for (int i = 0; i < 8192; i++)
        cr_assert_eq(v[i], i);
    op_arena_destroy(a);
}

Test(arena, calloc_zeroes_and_refuses_overflow)
{
    op_arena *a = op_arena_create(0);
    unsigned char *p = op_arena_calloc(a, 100, 3);
    for (int i = 0; i < 300; i++)
        cr_assert_eq(p[i], 0);
    cr_assert_null(op_arena_calloc(a, SIZE_MAX / 2, 4));
    op_arena_destroy(a);
}

Test(arena, mark_release_and_reset)
{
    op_arena *a = op_arena_create(128);
    op_arena_alloc(a, 100);
    size_t before = op_arena_used(a);
    op_arena_mark m = op_arena_get_mark(a);
    for (int i = 0; i < 50; i++)
        cr_assert(op_arena_alloc(a, 200));
    op_arena_release(a, m);
    cr_assert_eq(op_arena_used(a), before);
    size_t peak = op_arena_peak(a);
    cr_assert(peak >= 50 * 200);
    op_arena_reset(a);
    cr_assert_eq(op_arena_used(a), 0);
    /* After a reset, the peak fits in one block. */
    for (int i = 0; i < 50; i++)
        cr_assert(op_arena_alloc(a, 200));
    op_arena_destroy(a);
}

Test(arena, limit_and_fail_after)
{
    op_arena *a = op_arena_create(1024);
    op_arena_set_limit(a, 4096);
    cr_assert(op_arena_alloc(a, 512));
    cr_assert_null(op_arena_alloc(a, 8192));
    op_arena_destroy(a);

    a = op_arena_create(0);
    op_arena_fail_after(a, 3);
    cr_assert(op_arena_alloc(a, 8));
    cr_assert(op_arena_alloc(a, 8));
    cr_assert(op_arena_alloc(a, 8));
    cr_assert_null(op_arena_alloc(a, 8));
    op_arena_destroy(a);
}

Test(arena, extend_in_place_only)
{
    op_arena *a = op_arena_create(1024);
    unsigned char *p = op_arena_alloc(a, 100);
    cr_assert(p);
    memset(p, 7, 100);
    size_t used = op_arena_used(a);
    /* The latest allocation grows in place: same pointer, contents kept, use counted. */
    cr_assert_eq(op_arena_extend(a, p, 400), p);
    cr_assert_eq(p[99], 7);
    cr_assert_eq(op_arena_used(a), used + 288); /* 112 -> 400 bytes (16-aligned) */
    cr_assert_geq(op_arena_peak(a), op_arena_used(a));
    /* Past the block, or not the latest allocation: NULL, nothing changes. */
    cr_assert_null(op_arena_extend(a, p, 4096));
    cr_assert_eq(op_arena_used(a), used + 288);
    unsigned char *q = op_arena_alloc(a, 16);
    cr_assert(q);
    cr_assert_null(op_arena_extend(a, p, 500));
    cr_assert_null(op_arena_extend(a, NULL, 16));
    cr_assert_eq(op_arena_extend(a, q, 32), q);
    /* The test hook fails an extension as it fails an allocation. */
    op_arena_fail_after(a, 0);
    cr_assert_null(op_arena_extend(a, q, 48));
    op_arena_destroy(a);
}

/* The head block's fast path (op_arena_alloc) against what the slow path defines: a block
 * filled to its last byte before a new one is taken, 16 bytes for size 0, NULL for sizes
 * whose rounding wraps, use and peak counted on every call. */
Test(arena, fast_path_fills_the_block_exactly)
{
    op_arena *a = op_arena_create(256);
    unsigned char *p0 = op_arena_alloc(a, 1); /* the first block: 256 usable bytes */
    cr_assert(p0);
    for (size_t i = 1; i < 16; i++) {
        unsigned char *p = op_arena_alloc(a, i % 2 ? 16 : 0);
        cr_assert_eq(p, p0 + 16 * i, "allocation %zu not next in the block", i);
        cr_assert_eq(op_arena_used(a), 16 * (i + 1));
        cr_assert_eq(op_arena_peak(a), 16 * (i + 1));
    }
    /* The block is full: the next allocation comes from a new one. */
    unsigned char *q = op_arena_alloc(a, 1);
    cr_assert(q);
    cr_assert(q < p0 || q >= p0 + 256, "allocation past the end of a full block");
    cr_assert_eq(op_arena_used(a), 17 * 16);
    cr_assert_eq(op_arena_peak(a), 17 * 16);
    /* Sizes whose 16-byte rounding wraps are refused, with room in the head or not. */
    cr_assert_null(op_arena_alloc(a, SIZE_MAX));
    cr_assert_null(op_arena_alloc(a, SIZE_MAX - 8));
    cr_assert_eq(op_arena_used(a), 17 * 16);
    /* The hook counts allocations made from the head block too. */
    op_arena_fail_after(a, 1);
    cr_assert(op_arena_alloc(a, 16));
    cr_assert_null(op_arena_alloc(a, 16));
    op_arena_destroy(a);
}
