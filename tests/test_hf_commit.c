/*
 * A heightfield's first commit (build3d-spans.md §3.5), what every tile build runs: its
 * columns of one, two and three fragments take their own paths (heightfield.c), the
 * others first_column's sorted keys, and those past 64 fragments the linked rebuild; a
 * later commit rebuilds the columns it touched from sorted keys (build_from_keys).
 * Each is checked against §3.5 written out here on the fragments as pushed: sorted by
 * smin, touching fragments (smin <= the group's top) united, the area the largest among
 * the group's fragments whose top is within the threshold of the group's top (0 when
 * none is).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../core/src/heightfield_internal.h"
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

TestSuite(hf_commit, .init = setup, .fini = teardown);

typedef struct rfrag {
    int smin, smax, area;
} rfrag;

static int by_smin(const void *a, const void *b)
{
    const rfrag *x = a, *y = b;
    return (x->smin > y->smin) - (x->smin < y->smin);
}

/* §3.5 on n fragments: the spans into out, their number returned. */
static int rule_spans(rfrag *f, int n, int thr, rfrag *out)
{
    qsort(f, (size_t)n, sizeof *f, by_smin);
    int m = 0;
    for (int i = 0; i < n;) {
        int gmax = f[i].smax, j = i + 1;
        for (; j < n && f[j].smin <= gmax; j++)
            gmax = f[j].smax > gmax ? f[j].smax : gmax;
        int area = 0;
        for (int k = i; k < j; k++)
            if (gmax - f[k].smax <= thr && f[k].area > area)
                area = f[k].area;
        out[m++] = (rfrag){f[i].smin, gmax, area};
        i = j;
    }
    return m;
}

#define MAXF 100

/* Random fields of columns with 0 to 12 fragments (mostly one to three), heights in a
 * few rows so that they overlap, touch (smin = the other's smax) or leave a gap of one,
 * areas among a few values so that pushes fold and groups mix areas; with longs, one
 * column in ten gets 60 to MAXF pushes of areas in turn (which do not fold), so that
 * columns of more than the short-column limit (64, heightfield.c) take the linked rebuild.
 * Returns the columns that reached the commit with exactly two fragments (and counts
 * those with three in *three, those past 64 in *many). */
static long one_field(op_test_rng *r, int longs, long *three, long *many)
{
    int w = op_test_rand_int(r, 1, 9), d = op_test_rand_int(r, 1, 9), rows = 40;
    double o[3] = {0, 0, 0};
    op_heightfield hf;
    op_err e;
    cr_assert_eq(op_heightfield_init(&hf, arena, w, d, rows, o, 1, 1, &e), OP_OK, "%s", e.msg);
    int thr = op_test_rand_int(r, 0, 3);
    cr_assert_eq(op__hf_threshold(&hf, thr, &e), OP_OK, "%s", e.msg);
    hf.merge_threshold = thr; /* as op_rasterize_ids sets it */
    int ncols = w * d;
    rfrag(*pushed)[MAXF] = op_arena_alloc(arena, (size_t)ncols * sizeof *pushed);
    int *np = op_arena_alloc(arena, (size_t)ncols * sizeof *np);
    cr_assert(pushed && np);
    cr_assert_eq(op__hf_reserve(&hf, (size_t)ncols * MAXF, &e), OP_OK, "%s", e.msg);
    uint32_t first = op__hf_begin(&hf);
    cr_assert_eq(first, 0);
    static const int areas[4] = {0, 1, 63, 63};
    for (int c = 0; c < ncols; c++) {
        int k = op_test_rand_int(r, 0, 9);
        int n = k == 0 ? 0 : (k < 3 ? 1 : (k < 6 ? 2 : (k < 8 ? 3 : op_test_rand_int(r, 3, 12))));
        int alternate = longs && op_test_rand_int(r, 0, 9) == 0;
        if (alternate)
            n = op_test_rand_int(r, 60, MAXF);
        int base = op_test_rand_int(r, 0, 20);
        np[c] = n;
        for (int i = 0; i < n; i++) {
            int smin = base + op_test_rand_int(r, 0, 8);
            int smax = smin + op_test_rand_int(r, 1, 6);
            int area = op_test_rand_int(r, 0, 4) == 4 ? op_test_rand_int(r, 2, 62)
                                                      : areas[op_test_rand_int(r, 0, 3)];
            if (alternate) /* three areas in turn: never the area of the two before, no fold */
                area = i % 3 == 1 ? 2 + 60 * op_test_rand_int(r, 0, 1) : 1 + i % 3;
            pushed[c][i] = (rfrag){smin, smax, area};
            op__hf_push(&hf, (uint32_t)c, smin, smax, area);
        }
    }
    long two = 0;
    for (int c = 0; c < ncols; c++) {
        int n = 0;
        for (uint32_t i = hf.frag_heads[c]; i != OP_NO_SPAN; i = hf.frags[i].next)
            n++;
        two += n == 2;
        *three += n == 3;
        *many += n > 64;
    }
    cr_assert_eq(op__hf_commit(&hf, first, &e), OP_OK, "%s", e.msg);
    if (hf.frag_count == 0) /* no span: nothing laid out (no span array) */
        return two;
    cr_assert(op__hf_flat(&hf), "a first commit lays the columns out in order");
    uint32_t total = 0;
    for (int c = 0; c < ncols; c++) {
        rfrag want[MAXF];
        int m = rule_spans(pushed[c], np[c], thr, want), k = 0;
        cr_assert_eq(hf.col_start[c], total, "column %d starts at %u, not %u", c, hf.col_start[c],
                     total);
        for (uint32_t s = hf.heads[c]; s != OP_NO_SPAN; s = hf.spans[s].next, k++) {
            cr_assert_lt(k, m, "column %d: more spans than the rule's %d", c, m);
            cr_assert_eq(s, total + (uint32_t)k, "column %d span %d is not in its slot", c, k);
            const op_hf_span *sp = &hf.spans[s];
            cr_assert(sp->smin == want[k].smin && sp->smax == want[k].smax &&
                          sp->area == want[k].area,
                      "column %d (%d fragments, threshold %d) span %d: [%d, %d) area %d, the "
                      "rule [%d, %d) area %d",
                      c, np[c], thr, k, sp->smin, sp->smax, sp->area, want[k].smin, want[k].smax,
                      want[k].area);
        }
        cr_assert_eq(k, m, "column %d: %d spans, the rule gives %d", c, k, m);
        total += (uint32_t)m;
    }
    cr_assert_eq(hf.col_start[ncols], total);
    cr_assert_eq(hf.span_count, total);
    return two;
}

Test(hf_commit, first_commit_follows_the_merge_rule)
{
    op_test_rng rng = {20261207};
    long two = 0, three = 0, many = 0;
    for (int field_no = 0; field_no < 3000; field_no++) {
        two += one_field(&rng, 0, &three, &many);
        op_arena_reset(arena);
    }
    cr_assert_gt(two, 20000, "only %ld columns of two fragments", two);
    cr_assert_gt(three, 10000, "only %ld columns of three fragments", three);
}

Test(hf_commit, long_columns_follow_the_merge_rule)
{
    op_test_rng rng = {20261208};
    long three = 0, many = 0;
    for (int field_no = 0; field_no < 600; field_no++) {
        (void)one_field(&rng, 1, &three, &many);
        op_arena_reset(arena);
    }
    cr_assert_gt(many, 300, "only %ld columns of more than 64 fragments", many);
}

/* Later commits (a tile's triangles committed in more than one call): each commit after
 * the first rebuilds the columns it touched from all their fragments, through
 * rebuild_column's sorted keys (build_from_keys). After every commit, every column's
 * spans must be §3.5 on all the fragments pushed to it so far. */
Test(hf_commit, later_commits_follow_the_merge_rule)
{
    op_test_rng rng = {20261209};
    static const int areas[4] = {0, 1, 63, 63};
    long rebuilt = 0; /* columns of two or more fragments rebuilt by a later commit */
    for (int field_no = 0; field_no < 800; field_no++) {
        int w = op_test_rand_int(&rng, 1, 6), d = op_test_rand_int(&rng, 1, 6), rows = 40;
        double o[3] = {0, 0, 0};
        op_heightfield hf;
        op_err e;
        cr_assert_eq(op_heightfield_init(&hf, arena, w, d, rows, o, 1, 1, &e), OP_OK, "%s", e.msg);
        int thr = op_test_rand_int(&rng, 0, 3);
        cr_assert_eq(op__hf_threshold(&hf, thr, &e), OP_OK, "%s", e.msg);
        hf.merge_threshold = thr;
        int ncols = w * d;
        rfrag(*pushed)[MAXF] = op_arena_alloc(arena, (size_t)ncols * sizeof *pushed);
        int *np = op_arena_calloc(arena, (size_t)ncols, sizeof *np);
        cr_assert(pushed && np);
        int commits = op_test_rand_int(&rng, 2, 4);
        for (int b = 0; b < commits; b++) {
            cr_assert_eq(op__hf_reserve(&hf, (size_t)ncols * 12, &e), OP_OK, "%s", e.msg);
            uint32_t first = op__hf_begin(&hf);
            int *touched = op_arena_calloc(arena, (size_t)ncols, sizeof *touched);
            for (int c = 0; c < ncols; c++) {
                int n = op_test_rand_int(&rng, 0, 3) == 0 ? 0 : op_test_rand_int(&rng, 1, 8);
                if (np[c] + n > 40)
                    n = 0;
                int base = op_test_rand_int(&rng, 0, 20);
                for (int i = 0; i < n; i++) {
                    int smin = base + op_test_rand_int(&rng, 0, 8);
                    int smax = smin + op_test_rand_int(&rng, 1, 6);
                    int area = areas[op_test_rand_int(&rng, 0, 3)];
                    pushed[c][np[c]++] = (rfrag){smin, smax, area};
                    op__hf_push(&hf, (uint32_t)c, smin, smax, area);
                }
                touched[c] = n > 0;
            }
            cr_assert_eq(op__hf_commit(&hf, first, &e), OP_OK, "%s", e.msg);
            for (int c = 0; c < ncols; c++) {
                rfrag all[MAXF], want[MAXF];
                memcpy(all, pushed[c], (size_t)np[c] * sizeof *all);
                int m = rule_spans(all, np[c], thr, want), k = 0;
                rebuilt += b > 0 && touched[c] && np[c] >= 2;
                for (uint32_t s = hf.heads[c]; s != OP_NO_SPAN; s = hf.spans[s].next, k++) {
                    cr_assert_lt(k, m, "commit %d column %d: more spans than the rule's %d", b, c,
                                 m);
                    const op_hf_span *sp = &hf.spans[s];
                    cr_assert(sp->smin == want[k].smin && sp->smax == want[k].smax &&
                                  sp->area == want[k].area,
                              "commit %d column %d (%d fragments, threshold %d) span %d: [%d, "
                              "%d) area %d, the rule [%d, %d) area %d",
                              b, c, np[c], thr, k, sp->smin, sp->smax, sp->area, want[k].smin,
                              want[k].smax, want[k].area);
                }
                cr_assert_eq(k, m, "commit %d column %d: %d spans, the rule gives %d", b, c, k, m);
            }
        }
        op_arena_reset(arena);
    }
    cr_assert_gt(rebuilt, 5000, "only %ld columns rebuilt by a later commit", rebuilt);
}

/* op__hf_push folds a fragment into the column's first or second fragment of the same
 * call (heightfield_internal.h): walls and floors meeting in a column interleave their
 * fragments, so the one to fold into is often the second. A fold must leave §3.5's spans
 * (checked against the rule on every fragment pushed) and must never reach a fragment of
 * an earlier call (the commit rebuilds only the columns whose head is new). The counts
 * check that folds below the head happen: a column pushed A, B, A' with A' overlapping A
 * and B of another area keeps two fragments. */
Test(hf_commit, pushes_fold_below_the_head)
{
    op_heightfield hf;
    op_err e;
    double o[3] = {0, 0, 0};
    cr_assert_eq(op_heightfield_init(&hf, arena, 2, 1, 40, o, 1, 1, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op__hf_threshold(&hf, 1, &e), OP_OK, "%s", e.msg);
    hf.merge_threshold = 1;
    cr_assert_eq(op__hf_reserve(&hf, 16, &e), OP_OK, "%s", e.msg);
    uint32_t first = op__hf_begin(&hf);
    op__hf_push(&hf, 0, 0, 3, 63);  /* A */
    op__hf_push(&hf, 0, 10, 12, 0); /* B, another area */
    op__hf_push(&hf, 0, 3, 5, 63);  /* touches A: folds into it, below the head */
    op__hf_push(&hf, 0, 20, 22, 1); /* C */
    op__hf_push(&hf, 0, 2, 4, 63);  /* A is third now: a new fragment */
    cr_assert_eq(hf.frag_count, 4, "%u fragments, not 4", hf.frag_count);
    cr_assert_eq(op__hf_commit(&hf, first, &e), OP_OK, "%s", e.msg);
    /* A later call: its first fragment in column 0 must not fold into the last call's. */
    cr_assert_eq(op__hf_reserve(&hf, 16, &e), OP_OK, "%s", e.msg);
    first = op__hf_begin(&hf);
    op__hf_push(&hf, 1, 0, 2, 1);   /* another column first */
    op__hf_push(&hf, 0, 21, 25, 1); /* overlaps C (head of the last call): new */
    op__hf_push(&hf, 0, 4, 6, 63);  /* overlaps A and the last call's [2, 4): new */
    cr_assert_eq(hf.frag_count, 7, "%u fragments, not 7", hf.frag_count);
    cr_assert_eq(op__hf_commit(&hf, first, &e), OP_OK, "%s", e.msg);
    static const op_hf_span want[3] = {{0, 6, 63, 0}, {10, 12, 0, 0}, {20, 25, 1, 0}};
    int k = 0;
    for (uint32_t s = hf.heads[0]; s != OP_NO_SPAN; s = hf.spans[s].next, k++) {
        cr_assert_lt(k, 3);
        cr_assert(hf.spans[s].smin == want[k].smin && hf.spans[s].smax == want[k].smax &&
                      hf.spans[s].area == want[k].area,
                  "span %d: [%d, %d) area %d", k, hf.spans[s].smin, hf.spans[s].smax,
                  hf.spans[s].area);
    }
    cr_assert_eq(k, 3);

    /* Random columns of two interleaved areas over several calls, against the rule. */
    op_test_rng rng = {20261210};
    long pushes = 0, kept = 0;
    for (int field_no = 0; field_no < 400; field_no++) {
        op_arena_reset(arena);
        int w = op_test_rand_int(&rng, 1, 5), rows = 40, thr = op_test_rand_int(&rng, 0, 2);
        cr_assert_eq(op_heightfield_init(&hf, arena, w, 1, rows, o, 1, 1, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op__hf_threshold(&hf, thr, &e), OP_OK, "%s", e.msg);
        hf.merge_threshold = thr;
        rfrag(*pushed)[MAXF] = op_arena_alloc(arena, (size_t)w * sizeof *pushed);
        int *np = op_arena_calloc(arena, (size_t)w, sizeof *np);
        cr_assert(pushed && np);
        int calls = op_test_rand_int(&rng, 1, 3);
        for (int b = 0; b < calls; b++) {
            cr_assert_eq(op__hf_reserve(&hf, (size_t)w * 10, &e), OP_OK, "%s", e.msg);
            first = op__hf_begin(&hf);
            uint32_t before = hf.frag_count;
            int n = op_test_rand_int(&rng, 0, 10 * w);
            for (int i = 0; i < n; i++) {
                int c = op_test_rand_int(&rng, 0, w - 1);
                if (np[c] >= MAXF)
                    continue;
                /* a floor around row 8 and a wall from 0 to 20, each in pieces */
                int wall = op_test_rand_int(&rng, 0, 1);
                int smin = wall ? op_test_rand_int(&rng, 0, 18) : op_test_rand_int(&rng, 5, 9);
                int smax = smin + op_test_rand_int(&rng, 1, wall ? 4 : 2);
                int area = wall ? 0 : 63;
                pushed[c][np[c]++] = (rfrag){smin, smax, area};
                op__hf_push(&hf, (uint32_t)c, smin, smax, area);
                pushes++;
            }
            kept += hf.frag_count - before;
            cr_assert_eq(op__hf_commit(&hf, first, &e), OP_OK, "%s", e.msg);
            for (int c = 0; c < w; c++) {
                rfrag all[MAXF], rule[MAXF];
                memcpy(all, pushed[c], (size_t)np[c] * sizeof *all);
                int m = rule_spans(all, np[c], thr, rule), j = 0;
                for (uint32_t s = hf.heads[c]; s != OP_NO_SPAN; s = hf.spans[s].next, j++) {
                    cr_assert_lt(j, m, "field %d call %d column %d: more spans than %d", field_no,
                                 b, c, m);
                    const op_hf_span *sp = &hf.spans[s];
                    cr_assert(sp->smin == rule[j].smin && sp->smax == rule[j].smax &&
                                  sp->area == rule[j].area,
                              "field %d call %d column %d span %d: [%d, %d) area %d, the rule "
                              "[%d, %d) area %d",
                              field_no, b, c, j, sp->smin, sp->smax, sp->area, rule[j].smin,
                              rule[j].smax, rule[j].area);
                }
                cr_assert_eq(j, m, "field %d call %d column %d: %d spans, the rule %d", field_no, b,
                             c, j, m);
            }
        }
    }
    cr_assert_gt(pushes, 2000);
    cr_assert_lt(kept, pushes * 3 / 4, "%ld of %ld pushes kept: too few folds", kept, pushes);
}
