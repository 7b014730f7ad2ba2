/*
 * The reuse plan's passes over the spans (contours_trace.c: op__contours_mark_pairs,
 * op__contours_mark_regions, op__contours_mark_except, and the capture's op__contours_across)
 * against the rule written out here span by span: bit d of a
 * span of region r != 0 is set when link d is OP_NO_LINK or leads to a span whose id is not
 * r (build3d-regions.md §6 "Edges", the whole field's view), the high nibble repeats it, and
 * a candidate region's span gets no marks but one pair per link across it, in direction
 * order. The passes take a vector path for spans with all four links and the scalar test
 * otherwise; the random fields mix both in every proportion, and the ids reach 0xffff (a
 * compare of 16-bit lanes that sign-extended or truncated would show there). The grid fields
 * are laid out as a tile's (cells z-major, spans of a cell in a row), mostly one span a cell,
 * so that runs of eight spans whose links are their row neighbours' and the rows beside
 * (the eight-span path of mark_whole and mark_except) meet every kind of break: a missing
 * or moved link in any of the eight, a cell of two spans or none, a row's end, an id change.
 * Grids of mostly two-span cells (stacked floors, ids alternating span by span) send most
 * eights to the span by span marks of a refused eight, at every offset in the field.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/src/contours_internal.h"

TestSuite(contour_marks, .timeout = 60);

/* A small deterministic generator (xorshift32): the fields are the same on every run. */
static uint32_t next(uint32_t *st)
{
    uint32_t x = *st;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *st = x;
}

typedef struct field {
    op_chf chf;
    uint32_t (*links)[4];
    uint16_t *reg, *breg;
    uint8_t *cand; /* 0x10000 entries: indexed by any id */
    uint32_t n;
} field;

/* n spans; ids from a pool of nid values (ids near 0xffff and 0x8000 among them), a link
 * missing with probability miss/16, a link to a span of the same id with probability 3/4. */
static void make_field(field *f, uint32_t n, int nid, int miss, uint32_t seed)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    f->links = calloc(n, sizeof *f->links);
    f->reg = calloc(n, sizeof *f->reg);
    f->breg = calloc(n, sizeof *f->breg);
    f->cand = calloc(0x10000, 1);
    cr_assert(f->links && f->reg && f->breg && f->cand);
    uint32_t st = seed * 2654435761u + 1;
    static const uint16_t special[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff, 2, 3};
    uint16_t pool[16];
    for (int i = 0; i < nid; i++)
        pool[i] =
            i < (int)(sizeof special / sizeof *special) ? special[i] : (uint16_t)(next(&st) | 1);
    for (uint32_t s = 0; s < n; s++) {
        /* Runs of one id, as regions are laid out in span order. */
        f->reg[s] = (s > 0 && next(&st) % 8 != 0) ? f->reg[s - 1] : pool[next(&st) % nid];
        f->breg[s] = (uint16_t)next(&st);
    }
    for (uint32_t s = 0; s < n; s++)
        for (int d = 0; d < 4; d++) {
            uint32_t u = next(&st);
            if ((int)(u % 16) < miss) {
                f->links[s][d] = OP_NO_LINK;
                continue;
            }
            uint32_t t = next(&st) % n;
            if (u / 16 % 4 != 0) /* look near s for a span of its own id */
                for (uint32_t k = 0; k < 8; k++) {
                    uint32_t c = (s + k) % n;
                    if (f->reg[c] == f->reg[s] && c != s) {
                        t = c;
                        break;
                    }
                }
            f->links[s][d] = t;
        }
    for (int i = 0; i < nid; i++)
        f->cand[pool[i]] = (uint8_t)(next(&st) % 3 == 0);
    f->chf.span_count = n;
    f->chf.links = f->links;
}

static void free_field(field *f)
{
    free(f->links);
    free(f->reg);
    free(f->breg);
    free(f->cand);
}

/* The rule, span by span. */
static uint32_t rule_bits(const field *f, uint32_t s)
{
    uint32_t r = f->reg[s], m = 0;
    if (r == 0)
        return 0;
    for (int d = 0; d < 4; d++) {
        uint32_t t = f->links[s][d];
        if (t == OP_NO_LINK || f->reg[t] != r)
            m |= 1u << d;
    }
    return m;
}

static void check_pairs(const field *f)
{
    const uint32_t n = f->n;
    /* Buckets by id, 4 a span of a candidate, in id order (as the plan lays them out). */
    size_t *start = calloc(0x10001, sizeof *start), *fill = calloc(0x10000, sizeof *fill);
    size_t *want_fill = calloc(0x10000, sizeof *want_fill);
    uint32_t *cnt = calloc(0x10000, sizeof *cnt);
    cr_assert(start && fill && want_fill && cnt);
    for (uint32_t s = 0; s < n; s++)
        cnt[f->reg[s]]++;
    for (int r = 0; r < 0x10000; r++)
        start[r + 1] = start[r] + (f->cand[r] ? 4 * (size_t)cnt[r] : 0);
    memcpy(fill, start, 0x10000 * sizeof *fill);
    memcpy(want_fill, start, 0x10000 * sizeof *fill);
    uint32_t *pairs = calloc(start[0x10000] + 1, sizeof *pairs);
    uint32_t *want = calloc(start[0x10000] + 1, sizeof *want);
    uint8_t *mask = malloc(n + 1), *want_mask = malloc(n + 1);
    cr_assert(pairs && want && mask && want_mask);
    size_t want_total = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t r = f->reg[s], m = rule_bits(f, s);
        if (f->cand[r]) {
            want_mask[s] = 0;
            for (int d = 0; d < 4; d++) {
                uint32_t t = f->links[s][d];
                if ((m >> d & 1) && t != OP_NO_LINK)
                    want[want_fill[r]++] = (uint32_t)f->breg[t] << 16 | f->reg[t];
            }
            continue;
        }
        want_mask[s] = (uint8_t)(m | m << 4);
        want_total += (size_t)__builtin_popcount(m);
    }
    memset(mask, 0xaa, n + 1); /* every mark is written, none left as it was */
    size_t total = op__contours_mark_pairs(&f->chf, f->reg, f->breg, f->cand, mask, pairs, fill);
    cr_assert_eq(total, want_total);
    for (uint32_t s = 0; s < n; s++)
        cr_assert_eq(mask[s], want_mask[s], "span %u (id %u): marks %#x, the rule %#x", s,
                     f->reg[s], mask[s], want_mask[s]);
    cr_assert(memcmp(fill, want_fill, 0x10000 * sizeof *fill) == 0);
    cr_assert(memcmp(pairs, want, start[0x10000] * sizeof *pairs) == 0);

    /* The marks of the regions with which[r]: the candidates, as the plan marks its failures
     * (never id 0, which has no region). */
    uint8_t cand0 = f->cand[0];
    f->cand[0] = 0;
    memset(mask, 0xaa, n + 1);
    size_t rt = op__contours_mark_regions(&f->chf, f->reg, f->cand, mask), want_rt = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t m = rule_bits(f, s);
        if (!f->cand[f->reg[s]]) {
            cr_assert_eq(mask[s], 0xaa, "span %u left as it was", s);
            continue;
        }
        want_rt += (size_t)__builtin_popcount(m);
        cr_assert_eq(mask[s], (uint8_t)(m | m << 4), "span %u (id %u)", s, f->reg[s]);
    }
    cr_assert_eq(rt, want_rt);
    f->cand[0] = cand0;

    /* The marks of every span but the candidates' and id 0's, links of those unread. */
    memset(mask, 0xaa, n + 1);
    size_t et = op__contours_mark_except(&f->chf, f->reg, f->cand, mask), want_et = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t r = f->reg[s], m = rule_bits(f, s);
        if (r == 0 || f->cand[r]) {
            cr_assert_eq(mask[s], 0, "span %u (id %u) marked", s, r);
            continue;
        }
        want_et += (size_t)__builtin_popcount(m);
        cr_assert_eq(mask[s], (uint8_t)(m | m << 4), "span %u (id %u)", s, r);
    }
    cr_assert_eq(et, want_et);

    /* The whole field's marks (every build's trace): every span's, none for id 0. */
    memset(mask, 0xaa, n + 1);
    size_t wt = op__contours_mark_whole(&f->chf, f->reg, mask), want_wt = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t m = rule_bits(f, s);
        want_wt += (size_t)__builtin_popcount(m);
        cr_assert_eq(mask[s], (uint8_t)(m | m << 4), "span %u (id %u): marks %#x, the rule %#x", s,
                     f->reg[s], mask[s], (unsigned)(m | m << 4));
    }
    cr_assert_eq(wt, want_wt);

    /* The links across each id: the far spans of the boundary links with a link, by id,
     * then span, then direction (the pairs above are these read through breg and reg). */
    op_arena *a = op_arena_create(0);
    uint32_t *af, *al;
    op_err e;
    cr_assert_eq(op__contours_across(&f->chf, f->reg, 0xffff, a, &af, &al, &e), OP_OK, "%s", e.msg);
    /* Expected: a counting sort of the links across, span by span, by id. */
    uint32_t *wf = calloc(0x10002, sizeof *wf), *wl = calloc(4 * (size_t)n + 1, sizeof *wl);
    cr_assert(wf && wl);
    for (uint32_t s = 0; s < n; s++)
        for (int d = 0; d < 4; d++)
            if (f->reg[s] != 0 && (rule_bits(f, s) >> d & 1) && f->links[s][d] != OP_NO_LINK)
                wf[f->reg[s] + 1]++;
    for (uint32_t r = 1; r <= 0x10000; r++)
        wf[r] += wf[r - 1];
    uint32_t *at = calloc(0x10001, sizeof *at);
    cr_assert(at);
    memcpy(at, wf, 0x10001 * sizeof *at);
    for (uint32_t s = 0; s < n; s++)
        for (int d = 0; d < 4; d++)
            if (f->reg[s] != 0 && (rule_bits(f, s) >> d & 1) && f->links[s][d] != OP_NO_LINK)
                wl[at[f->reg[s]]++] = f->links[s][d];
    for (uint32_t r = 1; r <= 0x10000; r++)
        cr_assert_eq(af[r], wf[r], "id %u starts at %u, want %u", r, af[r], wf[r]);
    size_t k = wf[0x10000];
    cr_assert(memcmp(al, wl, k * sizeof *al) == 0, "links across differ");
    free(wf);
    free(wl);
    free(at);
    cr_assert_eq(af[0x10000], k);
    op_arena_destroy(a);
    free(start);
    free(fill);
    free(want_fill);
    free(cnt);
    free(pairs);
    free(want);
    free(mask);
    free(want_mask);
}

Test(contour_marks, marks_and_pairs_follow_the_rule_on_random_fields)
{
    uint32_t seed = 1;
    for (int miss = 0; miss <= 16; miss += 2)
        for (int nid = 2; nid <= 16; nid += 7)
            for (int rep = 0; rep < 4; rep++) {
                field f;
                make_field(&f, 1 + (uint32_t)(rep * 97 + nid * 13 + miss), nid, miss, seed++);
                check_pairs(&f);
                free_field(&f);
            }
}

/* Every span's four links present and every neighbour in its own region but one: each
 * direction alone, each id of the pool, so a lane compared in the wrong place shows. */
Test(contour_marks, one_foreign_neighbour_in_each_direction)
{
    static const uint16_t ids[] = {1, 2, 0x7fff, 0x8000, 0xffff};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        for (size_t j = 0; j < sizeof ids / sizeof *ids; j++)
            for (int d = 0; d < 4; d++) {
                field f;
                make_field(&f, 8, 2, 0, 7);
                for (uint32_t s = 0; s < 8; s++) {
                    f.reg[s] = s == 7 ? ids[j] : ids[i];
                    for (int e = 0; e < 4; e++)
                        f.links[s][e] = (s + 1 + (uint32_t)e) % 7;
                }
                f.links[3][d] = 7;
                memset(f.cand, 0, 0x10000);
                f.cand[ids[j]] = 1; /* span 7 alone pairs, span 3 is marked */
                if (i == j)
                    f.cand[ids[j]] = 0;
                check_pairs(&f);
                free_field(&f);
            }
}

/* A w x d grid of cells, z-major; a cell holds one span, or none with probability p0/64 or
 * two with p2/64; a link goes to a span of the neighbour cell (the first, or either of two),
 * missing with probability miss/64 (none outside the grid or to an empty cell); ids copy the
 * cell at -z or -x mostly (regions as areas), from the pool otherwise; one link in
 * moved/256 points at a random span instead. */
static void make_grid(field *f, int w, int d, int p0, int p2, int miss, int moved, int nid,
                      uint32_t seed)
{
    memset(f, 0, sizeof *f);
    uint32_t st = seed * 2246822519u + 7;
    int nc = w * d;
    uint32_t *cells = calloc((size_t)nc + 1, sizeof *cells);
    cr_assert(cells);
    for (int c = 0; c < nc; c++) {
        uint32_t u = next(&st) % 64;
        cells[c + 1] = cells[c] + ((int)u < p0 ? 0 : (int)u < p0 + p2 ? 2 : 1);
    }
    uint32_t n = cells[nc];
    f->n = n;
    f->links = calloc((size_t)n + 1, sizeof *f->links);
    f->reg = calloc((size_t)n + 1, sizeof *f->reg);
    f->breg = calloc((size_t)n + 1, sizeof *f->breg);
    f->cand = calloc(0x10000, 1);
    cr_assert(f->links && f->reg && f->breg && f->cand);
    static const uint16_t special[] = {0, 1, 0x7fff, 0x8000, 0xffff, 0x8001, 0xfffe, 2, 3};
    uint16_t pool[16];
    for (int i = 0; i < nid; i++)
        pool[i] =
            i < (int)(sizeof special / sizeof *special) ? special[i] : (uint16_t)(next(&st) | 1);
    for (int z = 0; z < d; z++)
        for (int x = 0; x < w; x++) {
            int c = x + z * w;
            for (uint32_t s = cells[c]; s < cells[c + 1]; s++) {
                uint32_t u = next(&st) % 16;
                uint32_t k = s - cells[c];
                if (u < 9 && z > 0 && cells[c - w] + k < cells[c - w + 1])
                    f->reg[s] = f->reg[cells[c - w] + k];
                else if (u < 14 && x > 0 && cells[c - 1] + k < cells[c])
                    f->reg[s] = f->reg[cells[c - 1] + k];
                else
                    f->reg[s] = pool[next(&st) % nid];
                f->breg[s] = (uint16_t)next(&st);
                for (int e = 0; e < 4; e++) {
                    int nx = x + op_dir_dx(e), nz = z + op_dir_dz(e);
                    f->links[s][e] = OP_NO_LINK;
                    if (nx < 0 || nz < 0 || nx >= w || nz >= d)
                        continue;
                    int o = nx + nz * w;
                    uint32_t cnt = cells[o + 1] - cells[o];
                    if (cnt == 0 || (int)(next(&st) % 64) < miss)
                        continue;
                    f->links[s][e] = cells[o] + next(&st) % cnt;
                    if ((int)(next(&st) % 256) < moved)
                        f->links[s][e] = next(&st) % n;
                }
            }
        }
    for (int i = 0; i < nid; i++)
        f->cand[pool[i]] = (uint8_t)(next(&st) % 3 == 0);
    f->chf.span_count = n;
    f->chf.links = f->links;
    f->chf.width = w;
    f->chf.depth = d;
    free(cells);
}

Test(contour_marks, marks_follow_the_rule_on_grids_of_one_span_cells)
{
    uint32_t seed = 1;
    static const int widths[] = {1, 2, 7, 8, 9, 17, 44};
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
        for (int miss = 0; miss <= 8; miss += 4)
            for (int holes = 0; holes <= 4; holes += 2)
                for (int nid = 2; nid <= 9; nid += 7)
                    for (int rep = 0; rep < 2; rep++) {
                        field f;
                        int w = widths[wi], d = 1 + (rep * 5 + nid + miss) % 13;
                        make_grid(&f, w, d, holes, holes, miss, rep * 2, nid, seed++);
                        check_pairs(&f);
                        free_field(&f);
                    }
}

/* Stacked floors: mostly cells of two spans (each floor's ids copied from the cells beside, so
 * that ids alternate span by span), with runs of one-span cells and empty cells, so that
 * refused eights (mixed ids, or one id without a row's links) lie next to accepted ones and
 * the field's end falls at many offsets in an eight (random cells, several widths and depths). */
Test(contour_marks, marks_follow_the_rule_on_grids_of_stacked_floors)
{
    uint32_t seed = 1000;
    static const int two[] = {16, 40, 60};
    for (size_t ti = 0; ti < sizeof two / sizeof *two; ti++)
        for (int w = 5; w <= 21; w += 4)
            for (int miss = 0; miss <= 4; miss += 4)
                for (int rep = 0; rep < 4; rep++) {
                    field f;
                    make_grid(&f, w, 3 + rep * 3, 2, two[ti], miss, rep & 1, 9, seed++);
                    check_pairs(&f);
                    free_field(&f);
                }
}

/* One long run of one-span cells of one region: every eight-span block takes the vector
 * path; then each link of each span in turn moved by one span (a block that must refuse)
 * and each span's id changed alone (a lane of its own). */
Test(contour_marks, each_break_of_a_row_of_one_span_cells)
{
    field f;
    make_grid(&f, 24, 6, 0, 0, 0, 0, 2, 5);
    for (uint32_t s = 0; s < f.n; s++)
        f.reg[s] = 0x8000;
    memset(f.cand, 0, 0x10000);
    check_pairs(&f);
    for (uint32_t s = 24; s < 24 + 18; s++)
        for (int e = 0; e < 4; e++) {
            uint32_t keep = f.links[s][e];
            if (keep == OP_NO_LINK)
                continue;
            f.links[s][e] = keep + 1 < f.n ? keep + 1 : keep - 1;
            check_pairs(&f);
            f.links[s][e] = OP_NO_LINK;
            check_pairs(&f);
            f.links[s][e] = keep;
        }
    /* A missing link followed, in the next seven spans, by links to spans 0, 1, ... (the
     * run a missing link, OP_NO_LINK = 0xffffffff, would start if stepped by one): the
     * eight-span path must refuse it (it would read ids through the missing link), at each
     * block start and just off it. */
    for (uint32_t s = 7; s <= 10; s++)
        for (int e = 1; e <= 3; e += 2) {
            uint32_t keep[8];
            for (uint32_t i = 0; i < 8; i++) {
                keep[i] = f.links[s + i][e];
                f.links[s + i][e] = i == 0 ? OP_NO_LINK : i - 1;
            }
            check_pairs(&f);
            for (uint32_t i = 0; i < 8; i++)
                f.links[s + i][e] = keep[i];
        }
    static const uint16_t ids[] = {0, 1, 0x7fff, 0xffff};
    for (uint32_t s = 20; s < 60; s++)
        for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
            uint16_t keep = f.reg[s];
            f.reg[s] = ids[i];
            f.cand[ids[i]] = (uint8_t)(s & 1);
            check_pairs(&f);
            f.cand[ids[i]] = 0;
            f.reg[s] = keep;
        }
    free_field(&f);
}
