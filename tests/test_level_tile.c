/*
 * One tile's level (op_level_create_tile, onepath/level.h). Oracles: op_level_create of the
 * whole soup, whose tile builds must come out byte for byte the same from the tile's own
 * level over op_tile_select's list; op_triangle_tiles, whose selection the one-tile check
 * must reproduce exactly on random triangles laid on and around the tile's grid lines; and
 * hand-made bad lists and soups, each named.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/src/level_internal.h"
#include "onepath/build.h"
#include "onepath/level.h"
#include "onepath/levelgen.h"
#include "onepath/tile_codec.h"

/* The encoded layers of tile (tx, tz) of l: their count, hashes and total bytes. */
typedef struct tile_out {
    int n;
    uint64_t hash[8];
    size_t bytes;
} tile_out;

static tile_out build(const op_level *l, int tx, int tz)
{
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_tile_stages st;
    op_err e;
    cr_assert_eq(op_level_build_stages(l, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e), OP_OK,
                 "%s", e.msg);
    tile_out r = {st.ntiles, {0}, 0};
    cr_assert_leq(st.ntiles, 8);
    for (int k = 0; k < st.ntiles; k++) {
        op_bytes b;
        cr_assert_eq(op_tile_encode(&st.tiles[k], &b, &r.hash[k], &e), OP_OK, "%s", e.msg);
        r.bytes += b.len;
        op_bytes_free(&b);
    }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return r;
}

/* Every tile of soup's range (and a ring of tiles around it) built from its own level
 * equals the whole level's tile; returns the tiles with layers. */
static int same_as_whole(const op_soup *soup, const op_settings *s)
{
    op_err e;
    op_level *whole, *unbinned, *classed;
    cr_assert_eq(op_level_create(soup, s, NULL, 0, &whole, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_create_unbinned(soup, s, NULL, 0, &unbinned, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_tile_count(unbinned), 0);
    /* An unbinned level given the classes (op_level_classify): the binned level's, triangle
     * for triangle (level.c's phases 1 and 6 are the oracle). */
    cr_assert_eq(op_level_create_unbinned(soup, s, NULL, 0, &classed, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_classify(classed, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_classify(whole, &e), OP_OK, "%s", e.msg); /* has them: no-op */
    cr_assert(classed->tri_class && whole->tri_class && !unbinned->tri_class);
    cr_assert(!memcmp(classed->tri_class, whole->tri_class, soup->tris_len / 3),
              "op_level_classify's classes are not op_level_create's");
    op_tile_rect r = op_level_tiles(whole);
    op_arena *a = op_arena_create(0);
    int layered = 0;
    for (int tz = r.tz0 - 1; tz <= r.tz1 + 1; tz++)
        for (int tx = r.tx0 - 1; tx <= r.tx1 + 1; tx++) {
            uint32_t *ids;
            size_t n;
            op_tile_range wide = {r.tx0 - 1, r.tz0 - 1, r.tx1 + 1, r.tz1 + 1};
            cr_assert_eq(op_tile_select(soup, s, &wide, tx, tz, a, &ids, &n, &e), OP_OK, "%s",
                         e.msg);
            op_level *one;
            cr_assert_eq(op_level_create_tile(soup, s, NULL, 0, tx, tz, ids, n, &one, &e), OP_OK,
                         "tile (%d, %d): %s", tx, tz, e.msg);
            op_tile_rect t = op_level_tiles(one);
            cr_assert(t.tx0 == tx && t.tx1 == tx && t.tz0 == tz && t.tz1 == tz);
            tile_out got = build(one, tx, tz);
            /* The same level over a soup checked once: from the unbinned level and from the
             * whole one. */
            for (int k = 0; k < 3; k++) {
                op_level *of, *base = k == 0 ? unbinned : k == 1 ? whole : classed;
                cr_assert_eq(op_level_create_tile_of(base, tx, tz, ids, n, &of, &e), OP_OK,
                             "tile (%d, %d): %s", tx, tz, e.msg);
                /* It builds from the base's classes, when the base has them. */
                cr_assert_eq(of->tri_class, base->tri_class);
                tile_out again = build(of, tx, tz);
                cr_assert(again.n == got.n && again.bytes == got.bytes &&
                              !memcmp(again.hash, got.hash, sizeof got.hash),
                          "tile (%d, %d) differs from op_level_create_tile's", tx, tz);
                float b0[3], b1[3], c0[3], c1[3];
                op_level_bounds(of, b0, b1);
                op_level_bounds(one, c0, c1);
                cr_assert(!memcmp(b0, c0, sizeof b0) && !memcmp(b1, c1, sizeof b1));
                op_level_destroy(of);
            }
            int inside = tx >= r.tx0 && tx <= r.tx1 && tz >= r.tz0 && tz <= r.tz1;
            if (inside) {
                tile_out want = build(whole, tx, tz);
                cr_assert_eq(got.n, want.n, "tile (%d, %d): %d layers, want %d", tx, tz, got.n,
                             want.n);
                cr_assert_eq(got.bytes, want.bytes, "tile (%d, %d)", tx, tz);
                for (int k = 0; k < got.n; k++)
                    cr_assert_eq(got.hash[k], want.hash[k], "tile (%d, %d) layer %d", tx, tz, k);
                layered += got.n > 0;
            } else {
                cr_assert_eq(got.n, 0, "tile (%d, %d) outside the level has layers", tx, tz);
            }
            op_level_destroy(one);
            op_arena_reset(a);
        }
    op_arena_destroy(a);
    op_level_destroy(whole);
    op_level_destroy(unbinned);
    op_level_destroy(classed);
    return layered;
}

Test(level_tile, tiles_equal_the_whole_levels)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("rooms", 48, 1, a, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    cr_assert_gt(same_as_whole(&soup, &s), 4);
    /* A moved grid and a soup off the origin, below zero: other cell lines, negative tiles. */
    float *v = op_arena_alloc(a, soup.verts_len * sizeof *v);
    for (size_t i = 0; i < soup.verts_len; i++)
        v[i] = soup.verts[i] - (i % 3 == 1 ? 0.0f : 1000.37f);
    op_soup moved = soup;
    moved.verts = v;
    s.grid_origin_x = 0.61;
    s.grid_origin_z = -1.13;
    cr_assert_gt(same_as_whole(&moved, &s), 4);
    op_arena_destroy(a);
}

Test(level_tile, terrain_with_areas_equals_the_whole_level)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("terrain", 64, 7, a, &soup, &e), OP_OK, "%s", e.msg);
    size_t nt = soup.tris_len / 3;
    uint8_t *areas = op_arena_alloc(a, nt);
    for (size_t t = 0; t < nt; t++)
        areas[t] = (uint8_t)(t % 7 == 0 ? 5 : 63);
    soup.areas = areas;
    op_settings s;
    op_settings_default(&s);
    cr_assert_gt(same_as_whole(&soup, &s), 4);
    op_arena_destroy(a);
}

/* A soup with copies: every fifth triangle of a generated level again, later in the soup,
 * with the same vertices (a copy; a build keeps the first), and near copies that are not
 * (another area, its vertices in another order, a zero of the other sign); steep faces
 * among them (class 0). */
Test(level_tile, copies_and_classes_equal_the_whole_level)
{
    op_arena *a = op_arena_create(0);
    op_soup src;
    op_err e;
    cr_assert_eq(op_levelgen("stairs", 48, 3, a, &src, &e), OP_OK, "%s", e.msg);
    size_t nt = src.tris_len / 3, extra = nt / 5 + 3, all = nt + extra;
    float *v = op_arena_alloc(a, (src.verts_len + 9 * extra) * sizeof *v);
    int *t = op_arena_alloc(a, 3 * all * sizeof *t);
    uint8_t *ar = op_arena_alloc(a, all);
    memcpy(v, src.verts, src.verts_len * sizeof *v);
    memcpy(t, src.tris, src.tris_len * sizeof *t);
    for (size_t i = 0; i < nt; i++)
        ar[i] = (uint8_t)(i % 11 == 0 ? 7 : 63);
    size_t nv = src.verts_len / 3;
    for (size_t k = 0; k < extra; k++) {
        size_t from = (k * 5) % nt, to = nt + k;
        for (int c = 0; c < 3; c++) {
            int src_c = k % 4 == 2 ? (c + 1) % 3 : c; /* rotated: not a copy */
            memcpy(&v[3 * (nv + 3 * k + (size_t)c)], &v[3 * (size_t)t[3 * from + (size_t)src_c]],
                   3 * sizeof *v);
            t[3 * to + (size_t)c] = (int)(nv + 3 * k + (size_t)c);
        }
        ar[to] = (uint8_t)(k % 4 == 1 ? (ar[from] == 63 ? 5 : 63) : ar[from]);
        if (k % 4 == 3) /* a zero of the other sign, else an exact copy */
            for (int c = 0; c < 9; c++)
                if (v[3 * nv + 9 * k + (size_t)c] == 0.0f) {
                    v[3 * nv + 9 * k + (size_t)c] = -v[3 * nv + 9 * k + (size_t)c];
                    break;
                }
    }
    op_soup soup = {v, src.verts_len + 9 * extra, t, 3 * all, ar};
    op_settings s;
    op_settings_default(&s);
    cr_assert_gt(same_as_whole(&soup, &s), 4);
    /* Copies were there to find. */
    op_level *l;
    cr_assert_eq(op_level_create_unbinned(&soup, &s, NULL, 0, &l, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_classify(l, &e), OP_OK, "%s", e.msg);
    size_t copies = 0, flat = 0;
    for (size_t i = 0; i < all; i++) {
        copies += l->tri_class[i] == OP__TRI_COPY;
        flat += l->tri_class[i] == 0;
    }
    cr_assert_geq(copies, extra / 4, "%zu copies", copies);
    cr_assert_gt(flat, 0);
    op_level_destroy(l);
    /* Only an unbinned or binned soup level takes classes. */
    cr_assert_eq(op_level_classify(NULL, &e), OP_EINVAL);
    op_arena_destroy(a);
}

/* xorshift64*: the test's own generator. */
static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ull;
}

Test(level_tile, selection_check_is_op_triangle_tiles)
{
    op_settings s;
    op_settings_default(&s);
    s.grid_origin_x = 0.25;
    s.grid_origin_z = -0.5;
    op_tile_grid g;
    op_tile_grid_derive(&s, &g);
    enum { N = 4000 };
    float *v = malloc(N * 9 * sizeof *v);
    int *t = malloc(N * 3 * sizeof *t);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    /* Tiles -1..1: coordinates on grid lines (exactly, and one float step either side) and
     * anywhere, around the lines a tile's selection turns on. */
    for (int i = 0; i < 9 * N; i++) {
        double o = i % 3 == 2 ? g.origin_z : g.origin_x;
        uint64_t r = rng_next(&x);
        long c = (long)(r % (uint64_t)(4 * g.tile_cells)) - 2 * g.tile_cells;
        float w = (float)(o + (double)c * g.cs);
        switch ((r >> 40) % 4) {
        case 0:
            break;
        case 1:
            w = nextafterf(w, -INFINITY);
            break;
        case 2:
            w = nextafterf(w, INFINITY);
            break;
        default:
            w += (float)((double)((r >> 20) % 1000) / 1000.0 * g.cs);
        }
        v[i] = i % 3 == 1 ? (float)((r >> 8) % 8) : w;
    }
    for (int i = 0; i < 3 * N; i++)
        t[i] = i;
    op_soup soup = {v, 9 * N, t, 3 * N, NULL};
    const op_tile_range wide = {-100, -100, 100, 100};
    int selected = 0, refused = 0;
    for (int tz = -2; tz <= 2; tz++)
        for (int tx = -2; tx <= 2; tx++)
            for (uint32_t k = 0; k < N; k++) {
                op_tile_range r;
                int want = op_triangle_tiles(&soup, k, &g, &wide, &r) && tx >= r.tx0 &&
                           tx <= r.tx1 && tz >= r.tz0 && tz <= r.tz1;
                op_level *l;
                op_err e;
                op_status st = op_level_create_tile(&soup, &s, NULL, 0, tx, tz, &k, 1, &l, &e);
                cr_assert_eq(st, want ? OP_OK : OP_EINVAL, "triangle %u tile (%d, %d): %s", k, tx,
                             tz, st ? e.msg : "accepted");
                if (st == OP_OK)
                    op_level_destroy(l);
                else
                    cr_assert(strstr(e.msg, "is not one of the tile's"), "%s", e.msg);
                selected += want;
                refused += !want;
            }
    cr_assert_gt(selected, 1000);
    cr_assert_gt(refused, 1000);
    free(v);
    free(t);
}

/* A 2-triangle soup on tile (0, 0) of the default grid. */
static float sv[12] = {1, 0, 1, 3, 0, 1, 1, 0, 3, 3, 0, 3};
static int stri[6] = {0, 1, 2, 1, 3, 2};

static void refused(const op_soup *soup, const op_settings *s, int tx, int tz, const uint32_t *ids,
                    size_t n, op_status want, const char *needle)
{
    op_level *l = (op_level *)&l;
    op_err e;
    op_status st = op_level_create_tile(soup, s, NULL, 0, tx, tz, ids, n, &l, &e);
    cr_assert_eq(st, want, "got %d (%s), want %d", st, st ? e.msg : "", want);
    cr_assert_null(l);
    cr_assert(strstr(e.msg, needle), "'%s' does not say '%s'", e.msg, needle);
}

Test(level_tile, bad_lists_and_soups_are_named)
{
    op_settings s;
    op_settings_default(&s);
    op_soup soup = {sv, 12, stri, 6, NULL};
    uint32_t both[2] = {0, 1}, back[2] = {1, 0}, twice[2] = {1, 1}, far[1] = {2};
    refused(&soup, &s, 0, 0, NULL, 2, OP_EINVAL, "NULL triangle ids");
    refused(&soup, &s, 0, 0, far, 1, OP_ERANGE, "triangle id 2 (entry 0) is outside [0, 2)");
    refused(&soup, &s, 0, 0, back, 2, OP_EINVAL, "not increasing at entry 1 (0 after 1)");
    refused(&soup, &s, 0, 0, twice, 2, OP_EINVAL, "not increasing at entry 1 (1 after 1)");
    refused(&soup, &s, 5, 0, both, 2, OP_EINVAL, "triangle 0 is not one of the tile's");
    refused(&soup, &s, 100000000, 0, NULL, 0, OP_ERANGE, "no triangle within +-2^21");
    refused(&soup, &s, 0, -100000000, NULL, 0, OP_ERANGE, "no triangle within +-2^21");
    float bad[12];
    memcpy(bad, sv, sizeof bad);
    bad[4] = NAN;
    op_soup nan_soup = {bad, 12, stri, 6, NULL};
    refused(&nan_soup, &s, 0, 0, both, 2, OP_EINVAL, "triangle 0 vertex 1 y = nan is not finite");
    bad[4] = 0;
    bad[9] = 3e6f;
    refused(&nan_soup, &s, 0, 0, both, 2, OP_ERANGE, "triangle 1 vertex 3 x = 3000000 is beyond");
    int badix[6] = {0, 1, 2, 1, 4, 2};
    op_soup ix_soup = {sv, 12, badix, 6, NULL};
    refused(&ix_soup, &s, 0, 0, both, 2, OP_ERANGE, "triangle 1 index 4 is outside [0, 4)");
    uint8_t areas[2] = {63, 64};
    op_soup area_soup = {sv, 12, stri, 6, areas};
    refused(&area_soup, &s, 0, 0, both, 2, OP_ERANGE, "triangle 1 area 64 is above 63");
    op_soup ragged = {sv, 11, stri, 6, NULL};
    refused(&ragged, &s, 0, 0, both, 2, OP_EINVAL, "not a multiple of 3");
    op_settings bs = s;
    bs.cell_size = -1;
    refused(&soup, &bs, 0, 0, both, 2, OP_ERANGE, "cell_size");
    /* The soup's triangles that are not listed are never read. */
    int unread[6] = {0, 1, 2, -7, 99, 5};
    op_soup partly = {sv, 12, unread, 6, NULL};
    op_level *l;
    op_err e;
    cr_assert_eq(op_level_create_tile(&partly, &s, NULL, 0, 0, 0, both, 1, &l, &e), OP_OK, "%s",
                 e.msg);
    op_level_destroy(l);
}

Test(level_tile, bounds_and_an_empty_tile)
{
    op_settings s;
    op_settings_default(&s);
    op_soup soup = {sv, 12, stri, 6, NULL};
    uint32_t both[2] = {0, 1};
    op_level *l;
    op_err e;
    cr_assert_eq(op_level_create_tile(&soup, &s, NULL, 0, 0, 0, both, 2, &l, &e), OP_OK, "%s",
                 e.msg);
    float lo[3], hi[3];
    op_level_bounds(l, lo, hi);
    cr_assert(lo[0] == 1 && lo[1] == 0 && lo[2] == 1 && hi[0] == 3 && hi[1] == 0 && hi[2] == 3);
    cr_assert_eq(op_level_tile_count(l), 1);
    cr_assert_eq(op_level_tile_index(l, 0, 0), 0);
    cr_assert_eq(op_level_tile_index(l, 1, 0), -1);
    op_level_destroy(l);
    /* No triangle: a level of the tile all the same, which builds to no layers. */
    op_soup none = {NULL, 0, NULL, 0, NULL};
    cr_assert_eq(op_level_create_tile(&none, &s, NULL, 0, -3, 2, NULL, 0, &l, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(build(l, -3, 2).n, 0);
    op_level_destroy(l);
}

Test(level_tile, unbinned_bases_and_their_refusals)
{
    op_settings s;
    op_settings_default(&s);
    op_soup soup = {sv, 12, stri, 6, NULL};
    uint32_t both[2] = {0, 1}, back[2] = {1, 0};
    op_level *base, *l = NULL;
    op_err e;
    cr_assert_eq(op_level_create_unbinned(&soup, &s, NULL, 0, &base, &e), OP_OK, "%s", e.msg);
    float lo[3], hi[3];
    op_level_bounds(base, lo, hi);
    cr_assert(lo[0] == 0 && lo[2] == 0 && hi[0] == 0 && hi[2] == 0);
    /* No tile of its own: a build is refused, named. */
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_tile_stages st;
    cr_assert_eq(op_level_build_stages(base, 0, 0, OP_STAGE_TILE, 0, out, scratch, &st, &e),
                 OP_ERANGE);
    cr_assert(strstr(e.msg, "outside the level's tiles"), "%s", e.msg);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    /* Lists are still checked; the selection too. */
    cr_assert_eq(op_level_create_tile_of(base, 0, 0, back, 2, &l, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "not increasing at entry 1"), "%s", e.msg);
    cr_assert_eq(op_level_create_tile_of(base, 4, 0, both, 2, &l, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "triangle 0 is not one of the tile's"), "%s", e.msg);
    cr_assert_eq(op_level_create_tile_of(base, 0, 0, NULL, 1, &l, &e), OP_EINVAL);
    cr_assert_null(l);
    /* A base whose soup was not checked whole, and none. */
    op_level *one;
    cr_assert_eq(op_level_create_tile(&soup, &s, NULL, 0, 0, 0, both, 1, &one, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(op_level_create_tile_of(one, 0, 0, both, 2, &l, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "not checked whole"), "%s", e.msg);
    cr_assert_eq(op_level_create_tile_of(NULL, 0, 0, both, 2, &l, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "NULL base level"), "%s", e.msg);
    op_level_destroy(one);
    cr_assert_eq(op_level_create_tile_of(base, 0, 0, both, 2, &l, &e), OP_OK, "%s", e.msg);
    op_level_destroy(l);
    op_level_destroy(base);
    /* The unbinned level checks the soup first, then the settings. */
    float bad[12];
    memcpy(bad, sv, sizeof bad);
    bad[7] = INFINITY;
    op_soup inf = {bad, 12, stri, 6, NULL};
    op_settings bs = s;
    bs.cell_size = -1;
    cr_assert_eq(op_level_create_unbinned(&inf, &bs, NULL, 0, &base, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "vertex 2 y = inf is not finite"), "%s", e.msg);
    cr_assert_null(base);
    cr_assert_eq(op_level_create_unbinned(&soup, &bs, NULL, 0, &base, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "cell_size"), "%s", e.msg);
}
