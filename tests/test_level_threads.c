/*
 * Level preparation on several threads (op_level_create_threads, op_level_create_pool)
 * and heaviest-first job
 * orders (op_parallel_for_ordered, op_parallel_order_by_cost, op_level_job_order).
 * Oracles: the serial span-stage functions (op_soup_bounds, op_soup_tile_range,
 * op_tile_buckets, op_soup_validate), which the threaded binning must reproduce
 * exactly, and hand-made cost lists.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../core/src/level_internal.h"
#include "onepath/build.h"
#include "onepath/levelgen.h"
#include "onepath/limits.h"
#include "onepath/parallel.h"
#include "op_test.h"

/* terrain:128 has 131072 triangles: up to four chunks a thread (32 at 8 threads);
 * rooms:48 a few thousand: one or two. */
static void gen(const char *kind, int size, op_arena *a, op_soup *soup)
{
    op_err e;
    cr_assert_eq(op_levelgen(kind, size, 1, a, soup, &e), OP_OK, "%s", e.msg);
}

/* The level's per-bin heights (level.c's bin_y, what a tile build takes its y0 and rows
 * from) against every vertex of every triangle of the serial bins, read directly. */
static void bin_heights_as_the_vertices_say(const op_soup *soup, const uint32_t *off,
                                            const uint32_t *ids, size_t nt, const float *bin_y,
                                            int threads)
{
    cr_assert_not_null(bin_y);
    for (size_t k = 0; k < nt; k++) {
        if (off[k] == off[k + 1])
            continue;
        float lo = INFINITY, hi = -INFINITY;
        for (uint32_t j = off[k]; j < off[k + 1]; j++)
            for (int v = 0; v < 3; v++) {
                float y = soup->verts[3 * (size_t)soup->tris[3 * (size_t)ids[j] + (size_t)v] + 1];
                lo = fminf(lo, y);
                hi = fmaxf(hi, y);
            }
        cr_assert(bin_y[2 * k] == lo && bin_y[2 * k + 1] == hi,
                  "bin %zu heights %g..%g, its vertices %g..%g at %d threads", k,
                  (double)bin_y[2 * k], (double)bin_y[2 * k + 1], (double)lo, (double)hi, threads);
    }
}

/* pool NULL: op_level_create_threads(threads); else op_level_create_pool. */
static void same_as_serial_on(const op_soup *soup, const op_settings *sp, int threads,
                              op_pool *pool)
{
    op_settings s = *sp;
    op_err e;
    op_level *l;
    if (pool)
        cr_assert_eq(op_level_create_pool(soup, &s, NULL, 0, pool, &l, &e), OP_OK, "%s", e.msg);
    else
        cr_assert_eq(op_level_create_threads(soup, &s, NULL, 0, threads, &l, &e), OP_OK, "%s",
                     e.msg);
    float bmin[3], bmax[3];
    op_soup_bounds(soup, bmin, bmax);
    cr_assert(memcmp(bmin, l->bmin, sizeof bmin) == 0 && memcmp(bmax, l->bmax, sizeof bmax) == 0,
              "bounds differ at %d threads", threads);
    op_tile_range r;
    cr_assert_eq(op_soup_tile_range(soup, &s, &r, &e), OP_OK);
    cr_assert(r.tx0 == l->rect.tx0 && r.tz0 == l->rect.tz0 && r.tx1 == l->rect.tx1 &&
              r.tz1 == l->rect.tz1);
    op_arena *a = op_arena_create(0);
    uint32_t *off, *ids;
    cr_assert_eq(op_tile_buckets(soup, &s, &r, a, a, &off, &ids, &e), OP_OK);
    size_t nt = (size_t)op_level_tile_count(l);
    cr_assert(memcmp(off, l->bin_start, (nt + 1) * sizeof *off) == 0, "bin starts differ at %d",
              threads);
    cr_assert(memcmp(ids, l->bin_ids, (size_t)off[nt] * sizeof *ids) == 0,
              "bin contents differ at %d threads", threads);
    bin_heights_as_the_vertices_say(soup, off, ids, nt, l->bin_y, threads);
    op_arena_destroy(a);
    op_level_destroy(l);
}

static void same_as_serial_with(const op_soup *soup, const op_settings *sp, int threads)
{
    same_as_serial_on(soup, sp, threads, NULL);
}

static void same_as_serial(const op_soup *soup, int threads)
{
    op_settings s;
    op_settings_default(&s);
    same_as_serial_with(soup, &s, threads);
}

Test(level_threads, bins_equal_the_serial_binning_at_any_thread_count)
{
    op_arena *a = op_arena_create(0);
    op_soup big, small;
    gen("terrain", 128, a, &big);
    gen("rooms", 48, a, &small);
    cr_assert_geq(big.tris_len / 3, 8 * 16384);
    for (int t = 1; t <= 8; t++) {
        same_as_serial(&big, t);
        same_as_serial(&small, t);
    }
    op_arena_destroy(a);
}

/* Few triangles over many tiles: the chunks are merged for the per-tile counts (a
 * chunk's counts may not outweigh its triangles); the bins must not change. */
Test(level_threads, bins_equal_the_serial_binning_with_sparse_triangles)
{
    enum { N = 40000 };
    static float v[3 * 3 * N];
    static int t[3 * N];
    op_test_rng rng = {7};
    op_settings s;
    op_settings_default(&s);
    s.tile_size = 4.0; /* spans of 2400 m: 600 x 600 tiles */
    for (int i = 0; i < N; i++) {
        double x = op_test_rand_int(&rng, 0, 2400), z = op_test_rand_int(&rng, 0, 2400);
        for (int k = 0; k < 3; k++) {
            v[9 * i + 3 * k + 0] = (float)(x + 0.5 * (k == 1) + 0.1 * op_test_rand_int(&rng, 0, 9));
            v[9 * i + 3 * k + 1] = 0.0f;
            v[9 * i + 3 * k + 2] = (float)(z + 0.5 * (k == 2));
            t[3 * i + k] = 3 * i + k;
        }
    }
    op_soup soup = {v, 3 * 3 * N, t, 3 * N, NULL};
    for (int th = 1; th <= 8; th *= 2)
        same_as_serial_with(&soup, &s, th);
    /* About 53000 tiles: three chunks of counts (their counts may not outweigh their
     * triangles), not the 16 of the scan. */
    s.tile_size = 10.5;
    same_as_serial_with(&soup, &s, 4);
}

/* One pool kept for levels of every size, one after another: its spare arena (the
 * binning's temporaries) is reused, grown and shrunk in use, and must not leak into
 * any level. */
Test(level_threads, bins_equal_the_serial_binning_on_a_kept_pool)
{
    op_arena *a = op_arena_create(0);
    op_soup big, small, flat;
    gen("terrain", 128, a, &big);
    gen("rooms", 48, a, &small);
    gen("flat", 16, a, &flat);
    op_settings s;
    op_settings_default(&s);
    for (int t = 1; t <= 3; t++) {
        op_pool *pool;
        op_err e;
        cr_assert_eq(op_pool_create(t, &pool, &e), OP_OK, "%s", e.msg);
        for (int round = 0; round < 2; round++) {
            same_as_serial_on(&small, &s, t, pool);
            same_as_serial_on(&big, &s, t, pool);
            same_as_serial_on(&flat, &s, t, pool);
            same_as_serial_on(&small, &s, t, pool);
        }
        op_pool_destroy(pool);
    }
    op_level *l = (op_level *)1;
    op_err e;
    cr_assert_eq(op_level_create_pool(&small, &s, NULL, 0, NULL, &l, &e), OP_EINVAL);
    cr_assert_null(l);
    op_arena_destroy(a);
}

/* A level prepared from a job of the pool's own call cannot use the pool: OP_EBUSY
 * (not a deadlock) when the preparation needs the workers, and the pool still works. */
typedef struct nested_level {
    op_pool *pool;
    const op_soup *soup;
    atomic_int busy;
} nested_level;

static op_status level_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    (void)i, (void)out, (void)scratch;
    nested_level *n = user;
    op_settings s;
    op_settings_default(&s);
    op_level *l = NULL;
    op_status st = op_level_create_pool(n->soup, &s, NULL, 0, n->pool, &l, err);
    op_level_destroy(l);
    if (st == OP_EBUSY)
        atomic_fetch_add(&n->busy, 1);
    return OP_OK;
}

Test(level_threads, a_level_from_the_pools_own_job_is_busy)
{
    op_arena *a = op_arena_create(0);
    op_soup big;
    gen("terrain", 128, a, &big);
    op_pool *pool;
    op_err e;
    cr_assert_eq(op_pool_create(2, &pool, &e), OP_OK, "%s", e.msg);
    nested_level n = {pool, &big, 0};
    op_parallel_opts o = {0, NULL, NULL, pool};
    cr_assert_eq(op_parallel_for(3, &o, level_job, &n, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(atomic_load(&n.busy), 3);
    op_settings s;
    op_settings_default(&s);
    same_as_serial_on(&big, &s, 2, pool);
    op_pool_destroy(pool);
    op_arena_destroy(a);
}

/* Tiny cells far from the origin (40000 triangles: 8 chunks at 2 threads, 12 at 3):
 * cell indices near 2^31, negative ones, tile borders
 * crossed by many triangles (the tile of a cell without a 64-bit division). */
Test(level_threads, bins_equal_the_serial_binning_far_out_with_tiny_cells)
{
    enum { N = 40000 };
    static float v[3 * 3 * N];
    static int t[3 * N];
    op_test_rng rng = {42};
    for (int i = 0; i < N; i++) {
        double x = 2097150.0 - 0.9 * (i % 200) / 200.0, z = -2097150.0 + 0.9 * (i / 200) / 200.0;
        for (int k = 0; k < 3; k++) {
            v[9 * i + 3 * k + 0] = (float)(x + 0.001 * op_test_rand_int(&rng, 0, 40));
            v[9 * i + 3 * k + 1] = (float)op_test_rand_int(&rng, 0, 3);
            v[9 * i + 3 * k + 2] = (float)(z + 0.001 * op_test_rand_int(&rng, 0, 40));
            t[3 * i + k] = 3 * i + k;
        }
    }
    op_soup soup = {v, 3 * 3 * N, t, 3 * N, NULL};
    op_settings s;
    op_settings_default(&s);
    s.cell_size = 0.001;
    s.cell_height = 0.001;
    s.agent_height = 0.004;
    s.agent_radius = 0.002;
    s.agent_max_climb = 0.002;
    s.tile_size = 0.032;
    for (int th = 1; th <= 3; th++)
        same_as_serial_with(&soup, &s, th);
}

/* Vertices exactly on the tile lines the binning tests (grid lines k·TC - B and
 * k·TC + B, as w(c) = origin + c·cs computes them) and one float step either side,
 * with grid origins and several tile and cell sizes: the tile of a box end from
 * its lines must be floor((cell - B) / TC) .. floor((cell + B) / TC) exactly. */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && a < 0);
}

static float near_line(op_test_rng *rng, double origin, double cs, int tc, int b)
{
    int64_t k = op_test_rand_int(rng, -40, 40);
    int64_t c = k * tc + (op_test_rand_int(rng, 0, 1) ? b : -b) + op_test_rand_int(rng, -1, 1);
    float v = (float)(origin + (double)c * cs);
    int step = op_test_rand_int(rng, -1, 1);
    return step < 0 ? nextafterf(v, -INFINITY) : (step > 0 ? nextafterf(v, INFINITY) : v);
}

Test(level_threads, bins_equal_the_serial_binning_on_and_beside_tile_lines)
{
    enum { N = 6000 };
    static float v[3 * 3 * N];
    static int t[3 * N];
    static const double sizes[][3] = {/* tile_size, cell_size, grid origin x (z = -x / 3) */
                                      {9.6, 0.3, 0.0},
                                      {10.0, 0.3, 1234.5678},
                                      {4.0, 0.25, -7.125},
                                      {0.7, 0.05, 32767.9},
                                      {32.0, 1.0, -32768.0}};
    op_test_rng rng = {2026};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        op_settings s;
        op_settings_default(&s);
        s.tile_size = sizes[si][0];
        s.cell_size = sizes[si][1];
        s.grid_origin_x = sizes[si][2];
        s.grid_origin_z = -sizes[si][2] / 3.0;
        op_tile_grid g;
        op_tile_grid_derive(&s, &g);
        for (int i = 0; i < N; i++)
            for (int k = 0; k < 3; k++) {
                v[9 * i + 3 * k + 0] = near_line(&rng, g.origin_x, g.cs, g.tile_cells, g.border);
                v[9 * i + 3 * k + 1] = (float)op_test_rand_int(&rng, 0, 2);
                v[9 * i + 3 * k + 2] = near_line(&rng, g.origin_z, g.cs, g.tile_cells, g.border);
                t[3 * i + k] = 3 * i + k;
            }
        op_soup soup = {v, 3 * 3 * N, t, 3 * N, NULL};
        /* op_triangle_tiles (the serial binning's oracle) against the definition, from
         * each box end's cell (op_cell_of) and a floor division. */
        const op_tile_range wide = {-1000000, -1000000, 1000000, 1000000};
        for (int i = 0; i < N; i++) {
            float lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
            for (int k = 0; k < 3; k++)
                for (int a = 0; a < 2; a++) {
                    float c = v[9 * i + 3 * k + 2 * a];
                    lo[a] = c < lo[a] ? c : lo[a];
                    hi[a] = c > hi[a] ? c : hi[a];
                }
            int64_t want[4];
            for (int a = 0; a < 2; a++) {
                double o = a ? g.origin_z : g.origin_x;
                want[a] = floor_div(op_cell_of(lo[a], o, g.cs) - g.border, g.tile_cells);
                want[2 + a] = floor_div(op_cell_of(hi[a], o, g.cs) + g.border, g.tile_cells);
            }
            op_tile_range got;
            op_triangle_tiles(&soup, (size_t)i, &g, &wide, &got);
            cr_assert(got.tx0 == want[0] && got.tz0 == want[1] && got.tx1 == want[2] &&
                          got.tz1 == want[3],
                      "triangle %d: tiles %d..%d, %d..%d, want %lld..%lld, %lld..%lld", i, got.tx0,
                      got.tx1, got.tz0, got.tz1, (long long)want[0], (long long)want[2],
                      (long long)want[1], (long long)want[3]);
        }
        for (int th = 1; th <= 2; th++)
            same_as_serial_with(&soup, &s, th);
    }
}

/* Signed zeros at the box ends, in random order over vertices, triangles and chunks:
 * the bounds keep the first of equal values seen (op_soup_bounds' order), bit for bit. */
Test(level_threads, bounds_keep_the_first_signed_zero)
{
    enum { N = 9000 };
    static float v[3 * 3 * N];
    static int t[3 * N];
    op_test_rng rng = {5};
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < 3 * N; i++) {
            for (int a = 0; a < 3; a++) {
                int r = op_test_rand_int(&rng, 0, 15);
                v[3 * i + a] =
                    r == 0 ? -0.0f : (r == 1 ? 0.0f : (float)op_test_rand_int(&rng, 1, 50));
            }
            t[i] = op_test_rand_int(&rng, 0, 3 * N - 1);
        }
        /* The extremes are zeros in half of the rounds (no coordinate below 0 or above 0). */
        if (round % 2)
            for (int i = 0; i < 3 * N; i++)
                for (int a = 0; a < 3; a++)
                    v[3 * i + a] = v[3 * i + a] > 0.0f ? -v[3 * i + a] : v[3 * i + a];
        op_soup soup = {v, 3 * 3 * N, t, 3 * N, NULL};
        for (int th = 1; th <= 3; th++)
            same_as_serial(&soup, th);
    }
}

/* The copy marks (OP__TRI_COPY: the key, vertex bits in order and area, of an earlier
 * triangle) against the definition, by sorting the keys: copies by index and by
 * coordinates, the same vertices in another order or with another area (not copies),
 * -0 against +0 (other bits: not copies), over many tiles, at 1 to 8 threads and on a
 * pool. */
typedef struct copy_key {
    uint32_t w[10];
    uint32_t t;
} copy_key;

static int copy_key_cmp(const void *pa, const void *pb)
{
    const copy_key *a = pa, *b = pb;
    int c = memcmp(a->w, b->w, sizeof a->w);
    return c ? c : (a->t > b->t) - (a->t < b->t);
}

Test(level_threads, copies_are_marked_as_the_sorted_keys_say)
{
    enum { NV = 3000, NT = 40000 };
    static float v[3 * NV];
    static int t[3 * NT];
    static uint8_t areas[NT];
    static copy_key keys[NT];
    op_test_rng rng = {99};
    for (int i = 0; i < NV; i++) {
        /* Vertices on a coarse lattice over 300 m, so that coordinates repeat. */
        v[3 * i + 0] = (float)op_test_rand_int(&rng, 0, 60) * 5.0f;
        v[3 * i + 1] =
            op_test_rand_int(&rng, 0, 9) == 0 ? -0.0f : (float)op_test_rand_int(&rng, 0, 1);
        v[3 * i + 2] = (float)op_test_rand_int(&rng, 0, 60) * 5.0f;
    }
    for (int i = 0; i < NT; i++) {
        int r = op_test_rand_int(&rng, 0, 9), j = i > 0 ? op_test_rand_int(&rng, 0, i - 1) : 0;
        if (i > 0 && r < 3) { /* an earlier triangle again, maybe rotated or with another area */
            int rot = r == 2 ? 1 : 0;
            for (int k = 0; k < 3; k++)
                t[3 * i + k] = t[3 * j + (k + rot) % 3];
            areas[i] = op_test_rand_int(&rng, 0, 4) == 0 ? (uint8_t)(areas[j] ^ 1) : areas[j];
        } else {
            /* Near each other, so that the triangle stays small (a few tiles). */
            int a = op_test_rand_int(&rng, 0, NV - 1);
            t[3 * i + 0] = a;
            t[3 * i + 1] = (a + op_test_rand_int(&rng, 1, 40)) % NV;
            t[3 * i + 2] = (a + op_test_rand_int(&rng, 1, 40)) % NV;
            areas[i] = (uint8_t)op_test_rand_int(&rng, 1, 3);
        }
    }
    op_soup soup = {v, 3 * NV, t, 3 * NT, areas};
    for (int i = 0; i < NT; i++) {
        for (int k = 0; k < 3; k++)
            memcpy(&keys[i].w[3 * k], &v[3 * t[3 * i + k]], 3 * sizeof(float));
        keys[i].w[9] = areas[i];
        keys[i].t = (uint32_t)i;
    }
    qsort(keys, NT, sizeof *keys, copy_key_cmp);
    static uint8_t want[NT];
    int copies = 0;
    for (int i = 0; i < NT; i++) {
        want[keys[i].t] = i > 0 && !memcmp(keys[i].w, keys[i - 1].w, sizeof keys[i].w);
        copies += want[keys[i].t];
    }
    cr_assert_gt(copies, 5000, "only %d copies", copies);
    op_settings s;
    op_settings_default(&s);
    s.tile_size = 6.0; /* 50 x 50 tiles over the lattice */
    for (int th = 0; th <= 8; th++) {
        op_pool *pool = NULL;
        op_err e;
        op_level *l;
        if (th == 0) {
            cr_assert_eq(op_pool_create(2, &pool, &e), OP_OK, "%s", e.msg);
            cr_assert_eq(op_level_create_pool(&soup, &s, NULL, 0, pool, &l, &e), OP_OK, "%s",
                         e.msg);
        } else {
            cr_assert_eq(op_level_create_threads(&soup, &s, NULL, 0, th, &l, &e), OP_OK, "%s",
                         e.msg);
        }
        for (int i = 0; i < NT; i++)
            cr_assert_eq(l->tri_class[i] == OP__TRI_COPY, want[i],
                         "triangle %d at %d threads: marked %d, a copy %d", i, th,
                         l->tri_class[i] == OP__TRI_COPY, want[i]);
        op_level_destroy(l);
        op_pool_destroy(pool);
    }
}

/* An error found by a chunk other than the first is reported as the serial check
 * reports it: vertices before indices before areas, the lowest offender first. */
static void same_error(op_soup *soup, const char *what)
{
    op_settings s;
    op_settings_default(&s);
    op_err want, got;
    op_status ws = op_soup_validate(soup, &want);
    cr_assert_neq(ws, OP_OK, "%s", what);
    for (int t = 1; t <= 8; t *= 2) {
        op_level *l = (op_level *)1;
        cr_assert_eq(op_level_create_threads(soup, &s, NULL, 0, t, &l, &got), ws, "%s", what);
        cr_assert_null(l);
        cr_assert_str_eq(got.msg, want.msg, "%s at %d threads", what, t);
    }
}

Test(level_threads, soup_errors_match_the_serial_check)
{
    op_arena *a = op_arena_create(0);
    op_soup g;
    gen("terrain", 128, a, &g);
    size_t nv = g.verts_len, nt = g.tris_len;
    float *v = malloc(nv * sizeof *v);
    int *t = malloc(nt * sizeof *t);
    uint8_t *ar = calloc(nt / 3, 1);
    memcpy(v, g.verts, nv * sizeof *v);
    memcpy(t, g.tris, nt * sizeof *t);
    op_soup soup = {v, nv, t, nt, ar};
    t[nt - 5] = (int)(nv / 3); /* an index out of range in the last chunk */
    same_error(&soup, "index");
    t[nt / 2] = -1; /* a lower one, in a middle chunk */
    same_error(&soup, "two indices");
    v[nv - 2] = 3e6f; /* a vertex beyond 2^21: reported before any index */
    same_error(&soup, "vertex and indices");
    memcpy(v, g.verts, nv * sizeof *v);
    memcpy(t, g.tris, nt * sizeof *t);
    v[nv - 1] = nanf(""); /* used by the first chunk's first triangle */
    t[0] = (int)(nv / 3 - 1);
    same_error(&soup, "NaN vertex of another chunk");
    memcpy(v, g.verts, nv * sizeof *v);
    memcpy(t, g.tris, nt * sizeof *t);
    ar[nt / 3 - 1] = 64;
    same_error(&soup, "area");
    /* A bad soup is reported before bad settings, as before. */
    op_settings s;
    op_settings_default(&s);
    s.cell_size = -1.0;
    op_err e;
    op_level *l;
    cr_assert_eq(op_level_create_threads(&soup, &s, NULL, 0, 4, &l, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "area") != NULL, "%s", e.msg);
    op_settings_default(&s);
    cr_assert_eq(op_level_create_threads(&soup, &s, NULL, 0, 0, &l, &e), OP_ERANGE);
    free(v);
    free(t);
    free(ar);
    op_arena_destroy(a);
}

Test(level_threads, order_by_cost_is_decreasing_with_ties_by_index)
{
    uint32_t cost[8] = {3, 9, 3, 0, 9, 1, 3, UINT32_MAX};
    int order[8], want[8] = {7, 1, 4, 0, 2, 6, 5, 3};
    op_err e;
    cr_assert_eq(op_parallel_order_by_cost(8, cost, order, &e), OP_OK);
    for (int k = 0; k < 8; k++)
        cr_assert_eq(order[k], want[k], "position %d", k);
}

typedef struct ord_state {
    atomic_int runs[64];
    int slot[64];
} ord_state;

static op_status ord_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    (void)out;
    (void)scratch;
    ord_state *s = user;
    atomic_fetch_add(&s->runs[i], 1);
    s->slot[i] = i * 3;
    if (i >= 20 && i % 5 == 0)
        return op_err_set(err, OP_ELIMIT, "job %d failed", i);
    return OP_OK;
}

Test(level_threads, ordered_jobs_run_once_and_report_the_lowest_failure)
{
    int order[64];
    for (int k = 0; k < 64; k++)
        order[k] = 63 - k; /* the failing indices come high to low */
    for (int t = 1; t <= 4; t++) {
        ord_state s;
        memset(&s, 0, sizeof s);
        op_parallel_opts o = {t, NULL, NULL, NULL};
        op_err e;
        cr_assert_eq(op_parallel_for_ordered(64, &o, order, ord_job, &s, &e), OP_ELIMIT);
        cr_assert_str_eq(e.msg, "job 20 failed", "%d threads: %s", t, e.msg);
        for (int i = 0; i <= 20; i++)
            cr_assert_eq(atomic_load(&s.runs[i]), 1, "index %d at %d threads", i, t);
        for (int i = 0; i < 64; i++)
            cr_assert_leq(atomic_load(&s.runs[i]), 1);
    }
    order[5] = order[6];
    op_err e;
    ord_state s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(op_parallel_for_ordered(64, NULL, order, ord_job, &s, &e), OP_EINVAL);
}

/* The documented cost step of a bin of c triangles: 0 when empty, else 2k + 1 for
 * 2^k <= c < 1.5 * 2^k and 2k + 2 for 1.5 * 2^k <= c < 2^(k+1). */
static uint32_t step_of(uint32_t c)
{
    if (c == 0)
        return 0;
    int k = 0;
    while ((uint64_t)2 << k <= c)
        k++;
    return (uint32_t)(2 * k + 1) + ((uint64_t)c * 2 >= (uint64_t)3 << k && k > 0);
}

Test(level_threads, job_order_puts_the_fullest_bins_first)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("rooms", 48, a, &soup);
    op_settings s;
    op_settings_default(&s);
    op_err e;
    op_level *l;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &l, &e), OP_OK);
    op_tile_rect r = op_level_tiles(l);
    r.tx0++; /* a part of the range, as a bake shard */
    int w = r.tx1 - r.tx0 + 1, n = w * (r.tz1 - r.tz0 + 1);
    int *order = malloc((size_t)n * sizeof *order);
    cr_assert_eq(op_level_job_order(l, r, order, &e), OP_OK, "%s", e.msg);
    char *seen = calloc((size_t)n, 1);
    uint32_t prev = UINT32_MAX;
    int prev_i = -1;
    for (int k = 0; k < n; k++) {
        int i = order[k];
        cr_assert(i >= 0 && i < n && !seen[i]);
        seen[i] = 1;
        int t = op_level_tile_index(l, r.tx0 + i % w, r.tz0 + i / w);
        uint32_t c = step_of(l->bin_start[t + 1] - l->bin_start[t]);
        cr_assert(c < prev || (c == prev && i > prev_i), "position %d", k);
        prev = c;
        prev_i = i;
    }
    r.tx1 += 1;
    cr_assert_eq(op_level_job_order(l, r, order, &e), OP_ERANGE);
    free(seen);
    free(order);
    op_level_destroy(l);
    op_arena_destroy(a);
}

/* §2's classification written out (float32, the spec's operations in its order), as the
 * oracle of the scan's inlined copy. */
static int walkable_by_the_spec(const float *a, const float *b, const float *c, float slope_cos)
{
    float e0[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    float e1[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    float n[3] = {e0[1] * e1[2] - e0[2] * e1[1], e0[2] * e1[0] - e0[0] * e1[2],
                  e0[0] * e1[1] - e0[1] * e1[0]};
    float len2 = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
    if (!(len2 > 0.0f))
        return 0;
    float d = 1.0f / sqrtf(len2);
    return n[1] * d > slope_cos;
}

/* The whole preparation against naive references on random soups: the classes (the
 * spec's float32 test, exact 45-degree slopes on an integer lattice, degenerate
 * triangles with a repeated or collinear vertex), the copies (an earlier triangle with
 * the same key, found by comparing with every earlier one; duplicates by index, by
 * coordinates, -0 against +0, with and without areas), the bins (op_tile_buckets) at 1
 * to 4 threads. Single-tile triangles (small tiles or large ones) take the scan's short
 * path, many-tile ones the general. */
Test(level_threads, classes_copies_and_bins_match_naive_references)
{
    enum { NV = 700, NT = 6000 };
    static float v[3 * NV];
    static int t[3 * NT];
    static uint8_t areas[NT], want[NT];
    op_test_rng rng = {2026};
    for (int round = 0; round < 6; round++) {
        int span = round < 3 ? 6 : 60; /* few distinct coordinates, or many */
        for (int i = 0; i < NV; i++)
            for (int a = 0; a < 3; a++) {
                int r = op_test_rand_int(&rng, 0, 19);
                v[3 * i + a] = r == 0 ? -0.0f : (float)op_test_rand_int(&rng, 0, span);
            }
        for (int i = 0; i < NT; i++) {
            int r = op_test_rand_int(&rng, 0, 9);
            if (i > 0 && r < 2) { /* an earlier triangle again, maybe with another area */
                int j = op_test_rand_int(&rng, 0, i - 1);
                memcpy(&t[3 * i], &t[3 * j], 3 * sizeof *t);
                areas[i] = op_test_rand_int(&rng, 0, 3) ? areas[j] : (uint8_t)(areas[j] ^ 2);
            } else {
                for (int k = 0; k < 3; k++)
                    t[3 * i + k] = op_test_rand_int(&rng, 0, NV - 1);
                if (r == 2) /* degenerate: a vertex twice */
                    t[3 * i + 2] = t[3 * i];
                areas[i] = (uint8_t)op_test_rand_int(&rng, 0, OP_MAX_AREA);
            }
        }
        if (round == 1) { /* a collinear triangle by coordinates */
            float line[9] = {1, 2, 3, 2, 3, 4, 4, 5, 6};
            memcpy(v, line, sizeof line);
            t[0] = 0, t[1] = 1, t[2] = 2;
        }
        for (int with_areas = 0; with_areas < 2; with_areas++) {
            op_soup soup = {v, 3 * NV, t, 3 * NT, with_areas ? areas : NULL};
            op_settings s;
            op_settings_default(&s);
            s.tile_size = round % 3 == 0 ? 200.0 : (round % 3 == 1 ? 8.0 : 1.5);
            int copies = 0;
            for (int i = 0; i < NT; i++) {
                uint32_t ki[10], kj[10];
                for (int k = 0; k < 3; k++)
                    memcpy(&ki[3 * k], &v[3 * t[3 * i + k]], 3 * sizeof(float));
                ki[9] = with_areas ? areas[i] : OP_WALKABLE_AREA;
                want[i] = 0;
                for (int j = 0; j < i && !want[i]; j++) {
                    for (int k = 0; k < 3; k++)
                        memcpy(&kj[3 * k], &v[3 * t[3 * j + k]], 3 * sizeof(float));
                    kj[9] = with_areas ? areas[j] : OP_WALKABLE_AREA;
                    want[i] = !memcmp(ki, kj, sizeof ki);
                }
                copies += want[i];
            }
            cr_assert_gt(copies, NT / 10, "only %d copies", copies);
            for (int th = 1; th <= 4; th++) {
                same_as_serial_with(&soup, &s, th);
                op_err e;
                op_level *l;
                cr_assert_eq(op_level_create_threads(&soup, &s, NULL, 0, th, &l, &e), OP_OK, "%s",
                             e.msg);
                int walkable = 0, exact = 0;
                for (int i = 0; i < NT; i++) {
                    const float *a = &v[3 * t[3 * i]], *b = &v[3 * t[3 * i + 1]],
                                *c = &v[3 * t[3 * i + 2]];
                    int w = walkable_by_the_spec(a, b, c, l->span.slope_cos);
                    /* The spec's test at >= instead: a slope of exactly the limit. */
                    float e0[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
                    float e1[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
                    float ny = e0[2] * e1[0] - e0[0] * e1[2];
                    float n2 = (e0[1] * e1[2] - e0[2] * e1[1]) * (e0[1] * e1[2] - e0[2] * e1[1]) +
                               ny * ny +
                               (e0[0] * e1[1] - e0[1] * e1[0]) * (e0[0] * e1[1] - e0[1] * e1[0]);
                    exact += n2 > 0.0f && ny * (1.0f / sqrtf(n2)) == l->span.slope_cos;
                    walkable += w;
                    int area = with_areas ? areas[i] : OP_WALKABLE_AREA;
                    int cls = want[i] ? (int)OP__TRI_COPY : (w ? area : 0);
                    cr_assert_eq(l->tri_class[i], cls, "round %d, triangle %d at %d threads", round,
                                 i, th);
                }
                cr_assert_gt(walkable, NT / 10);
                if (round < 3)
                    cr_assert_gt(exact, 0, "no slope of exactly the limit");
                op_level_destroy(l);
            }
        }
    }
}

/* The fused index test (one unsigned comparison an index) at its edges, in every
 * chunk: -1, INT_MIN, INT_MAX, the vertex count itself; the vertex count minus one is
 * fine. Errors as the serial check reports them. */
Test(level_threads, index_edges_are_reported_as_the_serial_check)
{
    op_arena *a = op_arena_create(0);
    op_soup g;
    gen("terrain", 128, a, &g);
    size_t nv = g.verts_len, nt = g.tris_len;
    int *t = malloc(nt * sizeof *t);
    op_soup soup = {g.verts, nv, t, nt, NULL};
    const int bad[] = {-1, INT_MIN, INT_MAX, (int)(nv / 3)};
    const size_t at[] = {0, 1, 2, nt / 2 + 1, nt - 1};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        for (size_t j = 0; j < sizeof at / sizeof *at; j++) {
            memcpy(t, g.tris, nt * sizeof *t);
            t[at[j]] = bad[i];
            same_error(&soup, "index edge");
        }
    memcpy(t, g.tris, nt * sizeof *t);
    t[nt - 1] = (int)(nv / 3 - 1);
    t[0] = (int)(nv / 3 - 1);
    same_as_serial(&soup, 4);
    free(t);
    op_arena_destroy(a);
}

/* A level's tile takes y0 and rows from its bin's heights (bin_y), a tile built from the
 * same triangles alone from their vertices: the same heightfield, every span of it, on
 * tiles of very different heights (hills, a deep pit, a tower) and one tile's triangles
 * split over chunks (several threads). */
Test(level_threads, level_tile_heightfields_equal_tiles_built_from_their_vertices)
{
    op_arena *a = op_arena_create(0), *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_soup soup;
    gen("stairs", 64, a, &soup);
    /* Every vertex raised or sunk by its own amount: no two tiles share a height range. */
    float *v = op_arena_alloc(a, soup.verts_len * sizeof *v);
    cr_assert_not_null(v);
    memcpy(v, soup.verts, soup.verts_len * sizeof *v);
    for (size_t i = 0; i < soup.verts_len / 3; i++)
        v[3 * i + 1] += (float)((i * 2654435761u) % 97) * 0.37f - 12.0f;
    soup.verts = v;
    op_settings s;
    op_settings_default(&s);
    for (int threads = 1; threads <= 3; threads += 2) {
        op_level *l;
        op_err e;
        cr_assert_eq(op_level_create_threads(&soup, &s, NULL, 0, threads, &l, &e), OP_OK, "%s",
                     e.msg);
        cr_assert_not_null(l->bin_y);
        op_tile_rect r = op_level_tiles(l);
        int built = 0;
        for (int tz = r.tz0; tz <= r.tz1; tz++)
            for (int tx = r.tx0; tx <= r.tx1; tx++) {
                int k = op_level_tile_index(l, tx, tz);
                const uint32_t *ids = &l->bin_ids[l->bin_start[k]];
                size_t n = l->bin_start[k + 1] - l->bin_start[k];
                op_heightfield x, y;
                int skx, sky;
                cr_assert_eq(
                    op__tile_heightfield_build_level(l, tx, tz, ids, n, scratch, &x, &skx, &e),
                    OP_OK, "%s", e.msg);
                cr_assert_eq(op_tile_heightfield_build_ids(&soup, &s, tx, tz, ids, n, out, out, &y,
                                                           &sky, &e),
                             OP_OK, "%s", e.msg);
                cr_assert_eq(skx, sky, "tile (%d, %d)", tx, tz);
                if (skx)
                    continue;
                cr_assert(x.origin[1] == y.origin[1] && x.rows == y.rows,
                          "tile (%d, %d): y0 %.9g rows %d, alone %.9g rows %d", tx, tz, x.origin[1],
                          x.rows, y.origin[1], y.rows);
                cr_assert_eq(x.span_count, y.span_count, "tile (%d, %d)", tx, tz);
                size_t cols = (size_t)x.width * (size_t)x.depth;
                for (size_t c = 0; c < cols; c++) {
                    uint32_t i = x.heads[c], j = y.heads[c];
                    for (; i != OP_NO_SPAN && j != OP_NO_SPAN;
                         i = x.spans[i].next, j = y.spans[j].next)
                        cr_assert(x.spans[i].smin == y.spans[j].smin &&
                                      x.spans[i].smax == y.spans[j].smax &&
                                      x.spans[i].area == y.spans[j].area,
                                  "tile (%d, %d) column %zu", tx, tz, c);
                    cr_assert(i == OP_NO_SPAN && j == OP_NO_SPAN, "tile (%d, %d) column %zu", tx,
                              tz, c);
                }
                built++;
                op_arena_reset(out);
                op_arena_reset(scratch);
            }
        cr_assert_gt(built, 10);
        op_level_destroy(l);
    }
    op_arena_destroy(scratch);
    op_arena_destroy(out);
    op_arena_destroy(a);
}
