/* Level generator: validity, bounds and determinism of every kind at 16, 64 and 256 m,
 * each kind's promised feature checked by brute-force sampling of the triangles
 * (walkable layers over a point, stair rises along a lane, dungeon connectivity
 * through doorways), refusals, the 1024 m terrain's size and time, `onepath gen`,
 * and hash-matrix scenarios pinning the OBJ bytes of each kind at 64 m, seed 1. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../core/src/levelgen_internal.h"
#include "onepath/build.h"
#include "onepath/hash.h"
#include "onepath/levelgen.h"
#include "onepath/mesh.h"
#include "onepath/query.h"
#include "onepath/obj.h"
#include "op_test.h"

#define COS45 0.70710678118654752  /* cos 45 degrees */
#define DEG   0.017453292519943296 /* radians per degree */

static const char *const kinds[] = {"flat",       "terrain", "stairs",  "rooms",
                                    "multifloor", "ramp",    "pillars", "furniture"};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static op_arena *arena;

static void setup(void)
{
    arena = op_arena_create(0);
}

static void teardown(void)
{
    op_arena_destroy(arena);
}

TestSuite(levelgen, .init = setup, .fini = teardown);

static op_soup gen(const char *kind, int size, uint64_t seed)
{
    op_soup s;
    op_err err;
    op_status st = op_levelgen(kind, size, seed, arena, &s, &err);
    cr_assert_eq(st, OP_OK, "%s %d %llu: %s", kind, size, (unsigned long long)seed, err.msg);
    return s;
}

static uint64_t soup_hash(const op_soup *s)
{
    uint64_t h = op_hash_bytes(s->verts, s->verts_len * sizeof(float));
    return op_hash_update(h, s->tris, s->tris_len * sizeof(int));
}

static void corner(const op_soup *s, size_t t, int k, double p[3])
{
    const float *v = &s->verts[3 * (size_t)s->tris[3 * t + (size_t)k]];
    p[0] = v[0];
    p[1] = v[1];
    p[2] = v[2];
}

/* Normal (v1 - v0) x (v2 - v0), as Recast computes it. */
static void normal(const op_soup *s, size_t t, double n[3])
{
    double a[3], b[3], c[3];
    corner(s, t, 0, a);
    corner(s, t, 1, b);
    corner(s, t, 2, c);
    double e0[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double e1[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    n[0] = e0[1] * e1[2] - e0[2] * e1[1];
    n[1] = e0[2] * e1[0] - e0[0] * e1[2];
    n[2] = e0[0] * e1[1] - e0[1] * e1[0];
}

static double slope_cos(const op_soup *s, size_t t)
{
    double n[3];
    normal(s, t, n);
    return n[1] / sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
}

/* Heights of the up-facing triangles over (x, z), merged within 1 cm, ascending. */
static int layers_at(const op_soup *s, double x, double z, double *ys, int max)
{
    int n = 0;
    for (size_t t = 0; t < s->tris_len / 3; t++) {
        double a[3], b[3], c[3], nn[3];
        corner(s, t, 0, a);
        corner(s, t, 1, b);
        corner(s, t, 2, c);
        if (x < fmin(a[0], fmin(b[0], c[0])) || x > fmax(a[0], fmax(b[0], c[0])) ||
            z < fmin(a[2], fmin(b[2], c[2])) || z > fmax(a[2], fmax(b[2], c[2])))
            continue;
        normal(s, t, nn);
        if (nn[1] <= 0)
            continue;
        /* Barycentric coordinates in XZ; nn[1] is twice the projected area. */
        double w1 = ((x - a[0]) * (c[2] - a[2]) - (z - a[2]) * (c[0] - a[0])) / -nn[1];
        double w2 = ((b[0] - a[0]) * (z - a[2]) - (b[2] - a[2]) * (x - a[0])) / -nn[1];
        double w0 = 1 - w1 - w2;
        if (w0 < -1e-9 || w1 < -1e-9 || w2 < -1e-9)
            continue;
        double y = w0 * a[1] + w1 * b[1] + w2 * c[1];
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= fabs(ys[i] - y) < 0.01;
        if (!dup && n < max)
            ys[n++] = y;
    }
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int j = i; j > 0 && ys[j] < ys[j - 1]; j--) {
            double tmp = ys[j];
            ys[j] = ys[j - 1];
            ys[j - 1] = tmp;
        }
    return n;
}

/* Valid, non-empty, inside [0, N] in x and z, no degenerate triangle, every triangle
 * facing up or vertical (no ceilings). */
static void check_basic(const char *kind, int size, const op_soup *s)
{
    op_err err;
    cr_assert_eq(op_soup_validate(s, &err), OP_OK, "%s %d: %s", kind, size, err.msg);
    cr_assert(s->tris_len > 0, "%s %d is empty", kind, size);
    for (size_t i = 0; i < s->verts_len; i += 3) {
        cr_assert(s->verts[i] >= 0 && s->verts[i] <= size, "%s %d: x %g", kind, size, s->verts[i]);
        cr_assert(s->verts[i + 2] >= 0 && s->verts[i + 2] <= size, "%s %d: z %g", kind, size,
                  s->verts[i + 2]);
        for (int a = 0; a < 3; a++) /* on the 1/64 m grid */
            cr_assert_eq(s->verts[i + a] * 64.0f, floorf(s->verts[i + a] * 64.0f));
    }
    for (size_t t = 0; t < s->tris_len / 3; t++) {
        double n[3];
        normal(s, t, n);
        cr_assert(n[0] != 0 || n[1] != 0 || n[2] != 0, "%s %d: triangle %zu degenerate", kind, size,
                  t);
        cr_assert(n[1] >= 0, "%s %d: triangle %zu faces down", kind, size, t);
    }
}

Test(levelgen, every_kind_is_valid_bounded_and_deterministic)
{
    static const int sizes[] = {16, 64, 256};
    for (size_t k = 0; k < NKINDS; k++)
        for (size_t i = 0; i < 3; i++) {
            op_arena_mark m = op_arena_get_mark(arena);
            op_soup a = gen(kinds[k], sizes[i], 1);
            check_basic(kinds[k], sizes[i], &a);
            op_soup b = gen(kinds[k], sizes[i], 1);
            cr_assert_eq(a.tris_len, b.tris_len);
            cr_assert_eq(soup_hash(&a), soup_hash(&b), "%s %d differs between runs", kinds[k],
                         sizes[i]);
            op_soup c = gen(kinds[k], sizes[i], 2);
            if (strcmp(kinds[k], "flat") != 0) /* a flat floor has nothing to vary */
                cr_assert_neq(soup_hash(&a), soup_hash(&c), "%s %d ignores the seed", kinds[k],
                              sizes[i]);
            else
                cr_assert_eq(soup_hash(&a), soup_hash(&c));
            op_arena_release(arena, m);
        }
}

Test(levelgen, sizes_that_are_not_multiples_of_the_cells)
{
    static const int sizes[] = {17, 31, 33, 47, 100};
    for (size_t k = 0; k < NKINDS; k++)
        for (size_t i = 0; i < 5; i++) {
            op_arena_mark m = op_arena_get_mark(arena);
            op_soup s = gen(kinds[k], sizes[i], 3);
            check_basic(kinds[k], sizes[i], &s);
            op_arena_release(arena, m);
        }
}

/* Projected (XZ) area of the up-facing triangles. */
static double floor_area(const op_soup *s)
{
    double area = 0;
    for (size_t t = 0; t < s->tris_len / 3; t++) {
        double n[3];
        normal(s, t, n);
        area += n[1] > 0 ? n[1] / 2 : 0;
    }
    return area;
}

Test(levelgen, flat_is_one_level_floor_covering_the_square)
{
    op_soup s = gen("flat", 37, 1);
    for (size_t i = 1; i < s.verts_len; i += 3)
        cr_assert_eq(s.verts[i], 0.0f);
    cr_assert_float_eq(floor_area(&s), 37.0 * 37.0, 1e-6);
}

Test(levelgen, terrain_has_hills_valleys_and_some_cliffs)
{
    op_soup s = gen("terrain", 256, 1);
    cr_assert_float_eq(floor_area(&s), 256.0 * 256.0, 1e-3);
    float lo = 1e9f, hi = -1e9f;
    for (size_t i = 1; i < s.verts_len; i += 3) {
        lo = fminf(lo, s.verts[i]);
        hi = fmaxf(hi, s.verts[i]);
    }
    cr_assert(lo >= 0 && hi <= 20, "heights %g..%g", lo, hi);
    cr_assert(hi - lo > 5, "relief only %g m", hi - lo);
    size_t steep = 0, n = s.tris_len / 3;
    for (size_t t = 0; t < n; t++)
        steep += slope_cos(&s, t) < COS45;
    cr_assert(steep > 0, "no slope steeper than 45 degrees");
    cr_assert(steep < n / 10, "%zu of %zu triangles are steeper than 45 degrees", steep, n);
    /* A 1 m grid above 512 m, 0.5 m below. */
    op_soup small = gen("terrain", 16, 1);
    cr_assert_eq(small.tris_len / 3, 2 * 32 * 32);
}

Test(levelgen, stairs_have_climbable_rises_and_landings)
{
    op_soup s = gen("stairs", 64, 1);
    /* Walk the first lane (z 1..4 m) along x, sampling between the 1/64 m grid lines. */
    double prev = 0, ys[8];
    int rises = 0, falls = 0;
    double run = 0, longest_raised_run = 0;
    /* The lane ends at x = 63 m, where it may drop off a ledge to the floor. */
    for (double x = 1.0 / 256; x < 63; x += 1.0 / 64) {
        int n = layers_at(&s, x, 2.5 + 1.0 / 256, ys, 8);
        cr_assert(n >= 1, "no floor at x %g", x);
        double y = ys[n - 1];
        double d = y - prev;
        if (fabs(d) > 1e-6) {
            cr_assert(fabs(d) >= 10.0 / 64 - 1e-6 && fabs(d) <= 19.0 / 64 + 1e-6,
                      "a rise of %g m at x %g", d, x);
            rises += d > 0;
            falls += d < 0;
            run = 0;
        } else if (y > 0) {
            run += 1.0 / 64;
            longest_raised_run = fmax(longest_raised_run, run);
        }
        prev = y;
    }
    cr_assert(rises >= 8, "%d rises", rises);
    cr_assert(falls >= 1, "%d falls: flights only go up", falls);
    cr_assert(longest_raised_run >= 2, "no landing (longest level run %g m)", longest_raised_run);
}

/* Tiles (1 m) of the dungeon: floor if an up-facing triangle covers the centre; walls
 * from the vertical triangles block the unit edges they cover. Every floor tile must be
 * reachable from every other without crossing a wall: rooms join through doorways. */
Test(levelgen, rooms_are_walled_and_connected_through_doorways)
{
    enum { N = 64 };
    op_soup s = gen("rooms", N, 1);
    static unsigned char floor_[N][N], wall_x[N + 1][N], wall_z[N + 1][N], seen[N][N];
    memset(wall_x, 0, sizeof wall_x);
    memset(wall_z, 0, sizeof wall_z);
    int floors = 0;
    double ys[4];
    for (int z = 0; z < N; z++)
        for (int x = 0; x < N; x++)
            floors += floor_[z][x] = layers_at(&s, x + 0.5, z + 0.5, ys, 4) > 0;
    int walls = 0;
    for (size_t t = 0; t < s.tris_len / 3; t++) {
        double n[3], a[3], b[3], c[3];
        normal(&s, t, n);
        if (n[1] != 0)
            continue;
        corner(&s, t, 0, a);
        corner(&s, t, 1, b);
        corner(&s, t, 2, c);
        cr_assert(fmax(a[1], fmax(b[1], c[1])) == 3.0, "wall not 3 m high");
        walls++;
        if (a[0] == b[0] && b[0] == c[0]) /* a wall on the line x = a[0] */
            for (int z = (int)fmin(a[2], fmin(b[2], c[2])); z < fmax(a[2], fmax(b[2], c[2])); z++)
                wall_x[(int)a[0]][z] = 1;
        else
            for (int x = (int)fmin(a[0], fmin(b[0], c[0])); x < fmax(a[0], fmax(b[0], c[0])); x++)
                wall_z[(int)a[2]][x] = 1;
    }
    cr_assert(walls > 0 && floors > 0 && floors < N * N / 2, "%d walls, %d floor tiles", walls,
              floors);
    /* Flood fill from the first floor tile. */
    static int stack[N * N][2];
    int sp = 0, reached = 0;
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < N * N && !sp; i++)
        if (floor_[i / N][i % N]) {
            stack[sp][0] = i % N, stack[sp][1] = i / N, sp++;
            seen[i / N][i % N] = 1;
        }
    while (sp) {
        sp--;
        int x = stack[sp][0], z = stack[sp][1];
        reached++;
        static const int d[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
        for (int k = 0; k < 4; k++) {
            int nx = x + d[k][0], nz = z + d[k][1];
            if (nx < 0 || nz < 0 || nx >= N || nz >= N || !floor_[nz][nx] || seen[nz][nx])
                continue;
            int blocked = d[k][0] ? wall_x[x > nx ? x : nx][z] : wall_z[z > nz ? z : nz][x];
            if (blocked)
                continue;
            seen[nz][nx] = 1;
            stack[sp][0] = nx, stack[sp][1] = nz, sp++;
        }
    }
    cr_assert_eq(reached, floors, "only %d of %d floor tiles reachable", reached, floors);
    /* Every floor tile's boundary to a non-floor tile is walled. */
    for (int z = 0; z < N; z++)
        for (int x = 0; x <= N; x++) {
            int l = x > 0 && floor_[z][x - 1], r = x < N && floor_[z][x];
            cr_assert_eq(wall_x[x][z], l != r, "edge x=%d z=%d", x, z);
        }
}

/* Sample points (between grid lines) with at least `want` walkable layers, each pair
 * at least 2 m apart (an agent fits between). */
static int stacked_points(const op_soup *s, int size, int want, double step)
{
    int count = 0;
    double ys[16];
    for (double z = 1.0 / 256; z < size; z += step)
        for (double x = 3.0 / 256; x < size; x += step) {
            int n = layers_at(s, x, z, ys, 16), apart = 1;
            for (int i = 1; i < n; i++)
                apart += ys[i] - ys[i - 1] >= 2.0;
            count += apart >= want;
        }
    return count;
}

static void check_walkable_slopes(const op_soup *s)
{
    /* Nothing meant to be walked is steeper than 45 degrees. */
    for (size_t t = 0; t < s->tris_len / 3; t++) {
        double c = slope_cos(s, t);
        cr_assert(c == 0 || c >= COS45 - 1e-9, "triangle %zu: cos %g", t, c);
    }
}

Test(levelgen, multifloor_has_floors_over_floors)
{
    op_soup s = gen("multifloor", 32, 1);
    check_walkable_slopes(&s);
    int two = stacked_points(&s, 32, 2, 0.5), total = 64 * 64;
    cr_assert(two > total / 4, "%d of %d points have two floors", two, total);
    /* Sloped (ramp) and stepped surfaces exist besides the flat ones. */
    int sloped = 0;
    for (size_t t = 0; t < s.tris_len / 3; t++) {
        double c = slope_cos(&s, t);
        sloped += c > 0 && c < 0.99;
    }
    cr_assert(sloped >= 4, "%d sloped triangles", sloped);
}

Test(levelgen, ramp_overlaps_itself)
{
    for (int size = 16; size <= 64; size *= 4) {
        op_soup s = gen("ramp", size, 1);
        check_walkable_slopes(&s);
        /* Ground plus at least two turns of the helix over one point. */
        int three = stacked_points(&s, size, 3, 0.5);
        cr_assert(three > 0, "size %d: no point with three floors", size);
    }
}

Test(levelgen, pillars_stand_on_a_floor)
{
    op_soup s = gen("pillars", 64, 1);
    int tops = 0, sides = 0;
    for (size_t t = 0; t < s.tris_len / 3; t++) {
        double c = slope_cos(&s, t), p[3];
        corner(&s, t, 0, p);
        if (c == 0)
            sides++;
        else if (p[1] > 0) {
            cr_assert(p[1] >= 0.5 && p[1] <= 6, "pillar top at %g", p[1]);
            tops++;
        }
    }
    cr_assert_eq(tops, 2 * 64 * 64 / 32);
    cr_assert_eq(sides, 8 * 64 * 64 / 32);
}

/* ===== furniture ===== */

static int furniture_layout(int size, uint64_t seed, op__lg_piece **out)
{
    int max = (size / 16) * (size / 16) * OP__LG_FURNITURE_CELL_PIECES;
    *out = op_arena_alloc(arena, (size_t)max * sizeof **out);
    cr_assert(*out);
    return op__lg_furniture_layout(size, seed, *out, max);
}

/* Whether some up-facing surface over (x, z) lies within 1/128 m of y. */
static int has_layer(const op_soup *s, double x, double z, double y)
{
    double ys[16];
    int n = layers_at(s, x, z, ys, 16);
    for (int i = 0; i < n; i++)
        if (fabs(ys[i] - y) < 1.0 / 128)
            return 1;
    return 0;
}

/* 1/64 m units: off the 0.5 m lines is off every multiple of 0.1 m and of 0.3 m. */
static int on_a_line(float v)
{
    double u = (double)v * 64.0;
    return fmod(u, 32.0) == 0.0;
}

/* The layout has every piece in every cell, each where the soup has its top, nothing of the
 * furniture on a 0.1 m (hence 0.3 m) line, and the table tops are sloped 2..10 degrees. */
Test(levelgen, furniture_has_every_piece_off_the_cell_lines)
{
    enum { N = 64 };
    op_soup s = gen("furniture", N, 1);
    op__lg_piece *pc;
    int np = furniture_layout(N, 1, &pc);
    int count[OP__LG_PIECE_KINDS] = {0};
    static const int per_cell[OP__LG_PIECE_KINDS] = {6, 1, 2, 14, 1, 2, 1, 2};
    for (int i = 0; i < np; i++) {
        const op__lg_piece *q = &pc[i];
        count[q->kind]++;
        int32_t c[4] = {q->x0, q->z0, q->x1, q->z1};
        for (int k = 0; k < 4; k++)
            cr_assert_neq(c[k] % 32, 0, "piece %d (kind %d) has a side on a 0.5 m line", i,
                          q->kind);
        cr_assert(q->x0 < q->x1 && q->z0 < q->z1 && q->ylo < q->yhi, "piece %d is empty", i);
        /* 1/256 m inside the corner, between the 1/64 m lines the layers_at test avoids. */
        double x = q->x0 / 64.0 + 1.0 / 256, z = q->z0 / 64.0 + 1.0 / 256;
        double top = q->yhi / 64.0;
        if (q->kind == OP__LG_TABLE) {
            int32_t y[4];
            op__lg_table_top(q, y);
            top = y[0] / 64.0; /* the corner's height; 1/256 m in, the slope adds < 1 mm */
        }
        cr_assert(has_layer(&s, x, z, top), "piece %d (kind %d): no surface at %g over (%g, %g)", i,
                  q->kind, top, x, z);
    }
    for (int k = 0; k < OP__LG_PIECE_KINDS; k++)
        cr_assert_eq(count[k], per_cell[k] * (N / 16) * (N / 16), "kind %d: %d pieces", k,
                     count[k]);
    int sloped = 0;
    for (size_t t = 0; t < s.tris_len / 3; t++) {
        double c = slope_cos(&s, t), p[3];
        sloped += c > cos(10.5 * DEG) && c < cos(1.5 * DEG);
        int raised = 0;
        for (int k = 0; k < 3; k++) {
            corner(&s, t, k, p);
            raised |= p[1] > 0;
        }
        for (int k = 0; k < 3 && raised; k++) {
            corner(&s, t, k, p);
            cr_assert(!on_a_line((float)p[0]) && !on_a_line((float)p[2]),
                      "triangle %zu has a vertex on a 0.1 m line: (%g, %g, %g)", t, p[0], p[1],
                      p[2]);
        }
    }
    cr_assert_eq(sloped, 2 * (N / 16) * (N / 16), "%d sloped table-top triangles", sloped);
}

static op_mesh *build_level(const op_soup *s, op_level **lvl)
{
    op_settings st;
    op_settings_default(&st);
    op_mesh *m;
    op_err e;
    cr_assert_eq(op_level_create(s, &st, NULL, 0, lvl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_mesh_build_level(*lvl, 1, &m, &e), OP_OK, "%s", e.msg);
    return m;
}

/* Spans at height y (within a row and a half) in world cell column (x, z) that have a region
 * in the built tile whose core holds the cell: walkable after the filters and erosion, and
 * not removed as an island. Tiles are built once each (the cache holds up to 8). */
typedef struct tile_cache {
    const op_level *lvl;
    op_arena *out, *scratch;
    int n, key[8][2];
    op_tile_stages st[8];
} tile_cache;

static int walkable_spans_at(tile_cache *tc, double x, double y, double z)
{
    const op_settings *set = op_level_settings(tc->lvl);
    int tx = (int)floor(x / set->tile_size), tz = (int)floor(z / set->tile_size), i;
    for (i = 0; i < tc->n && (tc->key[i][0] != tx || tc->key[i][1] != tz); i++)
        ;
    if (i == tc->n) {
        op_err e;
        cr_assert(i < 8);
        cr_assert_eq(op_level_build_stages(tc->lvl, tx, tz, OP_STAGE_REGIONS, 0, tc->out,
                                           tc->scratch, &tc->st[i], &e),
                     OP_OK, "%s", e.msg);
        op_arena_reset(tc->scratch);
        tc->key[i][0] = tx, tc->key[i][1] = tz, tc->n++;
    }
    const op_chf *c = &tc->st[i].chf;
    cr_assert(!tc->st[i].skipped, "tile %d,%d skipped", tx, tz);
    int cx = (int)floor((x - c->origin[0]) / c->cs), cz = (int)floor((z - c->origin[2]) / c->cs);
    cr_assert(cx >= c->border && cx < c->width - c->border && cz >= c->border &&
              cz < c->depth - c->border);
    int n = 0, cell = cx + cz * c->width;
    for (uint32_t sp = c->cells[cell]; sp < c->cells[cell + 1]; sp++)
        n += fabs(c->origin[1] + c->y[sp] * c->ch - y) <= 1.5 * c->ch &&
             tc->st[i].regions.reg[sp] != 0;
    return n;
}

/* Walkable cells, in metres, across the column x = const from z0 to z1 at height y. */
static double walkable_across(tile_cache *tc, double x, double y, double z0, double z1)
{
    const double cs = op_level_settings(tc->lvl)->cell_size;
    double len = 0;
    for (double z = (floor(z0 / cs) + 0.5) * cs; z < z1; z += cs)
        len += cs * walkable_spans_at(tc, x, y, z);
    return len;
}

static int path_complete(const op_mesh *m, const double a[3], const double b[3])
{
    const double half[3] = {1, 1, 1};
    op_polyref ra, rb;
    double sa[3], sb[3];
    op_path p;
    op_err e;
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    int ok = op_query_nearest(m, a, half, NULL, &ra, sa, &e) == OP_OK &&
             op_query_nearest(m, b, half, NULL, &rb, sb, &e) == OP_OK &&
             op_query_path(m, NULL, ra, sa, rb, sb, out, scratch, &p, &e) == OP_OK && !p.partial;
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return ok;
}

/* Built with the default settings (0.3 m cells, 0.6 m radius: a ledge cell and two eroded
 * cells lost on each side): every bridge keeps one or two walkable cells across it in the
 * built tiles' spans (the polygons are wider by up to the 1.3-cell contour error), and a
 * path from the ground up the stairs, over the landing and the bridge reaches deck 2, which
 * nothing else reaches. Most of the ground stays walkable. */
Test(levelgen, furniture_bridges_survive_erosion_one_or_two_cells_wide)
{
    enum { N = 32 };
    op_soup s = gen("furniture", N, 1);
    op__lg_piece *pc;
    int np = furniture_layout(N, 1, &pc), bridges = 0;
    op_level *lvl;
    op_mesh *m = build_level(&s, &lvl);
    tile_cache tc = {lvl, op_arena_create(0), op_arena_create(0), 0, {{0}}, {{0}}};
    double area = 0;
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        for (int p = 0; p < t->npolys; p++) {
            int n = op_tile_poly_nverts(t, p);
            for (int k = 0; k < n; k++) {
                const float *a = &t->verts[3 * t->polys[(size_t)p * t->nvp + k]];
                const float *b = &t->verts[3 * t->polys[(size_t)p * t->nvp + (k + 1) % n]];
                area += ((double)a[0] * b[2] - (double)a[2] * b[0]) / 2;
            }
        }
    }
    cr_assert(area > 0.5 * N * N && area < 1.2 * N * N, "walkable area %g of %d", area, N * N);
    for (int i = 0; i < np; i++) {
        if (pc[i].kind != OP__LG_BRIDGE)
            continue;
        const op__lg_piece *b = &pc[i], *p1 = &pc[i - 2], *p2 = &pc[i - 1], *foot = &pc[i - 17];
        cr_assert(p1->kind == OP__LG_PLATFORM && p2->kind == OP__LG_PLATFORM &&
                  foot->kind == OP__LG_STEP);
        /* Five cuts over the bridge's middle, away from where it widens into the decks. */
        double gap0 = p1->x1 / 64.0, gap = (p2->x0 - p1->x1) / 64.0, y = b->yhi / 64.0;
        for (int k = 0; k < 5; k++) {
            double x = gap0 + gap * (0.3 + 0.1 * k);
            double w = walkable_across(&tc, x, y, b->z0 / 64.0 - 0.5, b->z1 / 64.0 + 0.5);
            cr_assert(w > 0.3 - 1e-9 && w < 0.6 + 1e-9,
                      "bridge %d at x %g: %g m walkable across (not one or two 0.3 m cells)",
                      bridges, x, w);
        }
        double ground[3] = {(foot->x0 + foot->x1) / 128.0, 0, foot->z0 / 64.0 - 0.6};
        double top2[3] = {(p2->x0 + p2->x1) / 128.0, y, (p2->z0 + p2->z1) / 128.0};
        cr_assert(path_complete(m, ground, top2), "bridge %d: no path from (%g, %g) to (%g, %g)",
                  bridges, ground[0], ground[2], top2[0], top2[2]);
        bridges++;
    }
    cr_assert_eq(bridges, (N / 16) * (N / 16));
    op_mesh_destroy(m);
    op_level_destroy(lvl);
    op_arena_destroy(tc.out);
    op_arena_destroy(tc.scratch);
}

/* Every wall faces out of what it bounds, in the convention that makes floors face up
 * (e0 x e1): 1 cm behind its centroid lies a solid (the highest floor there is at or above
 * the centroid) or nothing at all (a rooms wall with the void behind it), and 1 cm in front
 * some floor lies below it. build3d-spans.md §3.2a gives a wall lying on a cell line to the
 * cells behind it, so a wall facing into its solid would put the solid on the floor. */
Test(levelgen, walls_face_away_from_their_solid)
{
    for (size_t k = 0; k < NKINDS; k++) {
        op_soup s = gen(kinds[k], 64, 1);
        int walls = 0;
        for (size_t t = 0; t < s.tris_len / 3; t++) {
            double n[3], a[3], b[3], c[3], ys[16];
            normal(&s, t, n);
            if (n[1] != 0)
                continue;
            corner(&s, t, 0, a);
            corner(&s, t, 1, b);
            corner(&s, t, 2, c);
            double len = sqrt(n[0] * n[0] + n[2] * n[2]), e = 0.01 / len;
            double m[3] = {(a[0] + b[0] + c[0]) / 3, (a[1] + b[1] + c[1]) / 3,
                           (a[2] + b[2] + c[2]) / 3};
            int nb = layers_at(&s, m[0] - n[0] * e, m[2] - n[2] * e, ys, 16);
            cr_assert(nb == 0 || ys[nb - 1] >= m[1],
                      "%s: wall %zu at (%g, %g, %g) faces into its solid", kinds[k], t, m[0], m[1],
                      m[2]);
            int nf = layers_at(&s, m[0] + n[0] * e, m[2] + n[2] * e, ys, 16);
            cr_assert(nf > 0 && ys[0] < m[1], "%s: wall %zu at (%g, %g, %g) faces no floor",
                      kinds[k], t, m[0], m[1], m[2]);
            walls++;
        }
        cr_assert(walls > 0 || !strcmp(kinds[k], "flat") || !strcmp(kinds[k], "terrain") ||
                      !strcmp(kinds[k], "ramp"),
                  "%s has no walls", kinds[k]);
    }
}

Test(levelgen, refusals)
{
    op_soup s;
    op_err err;
    cr_assert_eq(op_levelgen("caves", 64, 1, arena, &s, &err), OP_EINVAL);
    cr_assert(strstr(err.msg, "caves") && strstr(err.msg, OP_LEVELGEN_KINDS), "%s", err.msg);
    cr_assert_eq(op_levelgen(NULL, 64, 1, arena, &s, &err), OP_EINVAL);
    cr_assert_eq(op_levelgen("flat", 15, 1, arena, &s, &err), OP_ERANGE);
    cr_assert(strstr(err.msg, "15"), "%s", err.msg);
    cr_assert_eq(op_levelgen("flat", 1025, 1, arena, &s, &err), OP_ERANGE);
    cr_assert(strstr(err.msg, "1025"), "%s", err.msg);
    cr_assert_eq(op_levelgen("flat", -5, 1, arena, &s, &err), OP_ERANGE);
    cr_assert_eq(s.verts_len + s.tris_len, 0);
    cr_assert_eq(op_levelgen("flat", 1024, 1, arena, &s, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(op_levelgen("flat", 64, 1, NULL, &s, &err), OP_EINVAL);
    cr_assert_eq(op_levelgen("flat", 64, 1, arena, NULL, &err), OP_EINVAL);
    for (long n = 0; n < 2; n++) {
        op_arena *a = op_arena_create(0);
        op_arena_fail_after(a, n);
        cr_assert_eq(op_levelgen("rooms", 64, 1, a, &s, &err), OP_ENOMEM);
        cr_assert(strstr(err.msg, "bytes"), "%s", err.msg);
        cr_assert_eq(s.verts_len + s.tris_len, 0);
        op_arena_destroy(a);
    }
}

Test(levelgen, terrain_1024_is_millions_of_triangles_in_seconds, .timeout = 60)
{
    clock_t t0 = clock();
    op_soup s = gen("terrain", 1024, 1);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    cr_assert_eq(s.tris_len / 3, (size_t)2 * 1024 * 1024);
    cr_assert_eq(s.verts_len / 3, (size_t)1025 * 1025);
    cr_assert(secs < 10, "took %g s", secs);
    cr_assert(op_arena_used(arena) < ((size_t)64 << 20), "%zu bytes", op_arena_used(arena));
    op_err err;
    cr_assert_eq(op_soup_validate(&s, &err), OP_OK, "%s", err.msg);
}

/* ===== the OBJ bytes, pinned ===== */

static uint64_t obj_hash(const op_soup *s)
{
    uint64_t h = OP_HASH_INIT;
    op_err err;
    cr_assert_eq(op_obj_write(s, op_hash_sink_write, &h, &err), OP_OK, "%s", err.msg);
    return h;
}

Test(levelgen, hash_matrix_scenarios)
{
    for (size_t k = 0; k < NKINDS; k++) {
        op_soup a = gen(kinds[k], 64, 1);
        uint64_t h = obj_hash(&a);
        op_soup b = gen(kinds[k], 64, 1);
        cr_assert_eq(obj_hash(&b), h, "%s: two runs differ", kinds[k]);
        char name[64];
        snprintf(name, sizeof name, "build3d/gen-%s", kinds[k]);
        op_test_golden(name, h);
    }
}

/* ===== onepath gen ===== */

static int run(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/onepath %s >/dev/null 2>&1", OP_BIN_DIR, args);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Test(levelgen, onepath_gen_writes_the_generated_level)
{
    char path[] = "/tmp/test_levelgen_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof args, "gen ramp --size 32 --seed 3 --out %s", path);
    cr_assert_eq(run(args), 0);
    op_soup file, want = gen("ramp", 32, 3);
    op_err err;
    cr_assert_eq(op_obj_read_file(path, arena, &file, &err), OP_OK, "%s", err.msg);
    cr_assert_eq(soup_hash(&file), soup_hash(&want));
    unlink(path);
    cr_assert_eq(run("gen"), 2);
    cr_assert_eq(run("gen caves"), 2);
    cr_assert_eq(run("gen flat --size 8"), 2);
    cr_assert_eq(run("gen flat --size x"), 2);
    cr_assert_eq(run("gen flat --seed -1"), 2);
    cr_assert_eq(run("gen flat --size"), 2);
    cr_assert_eq(run("gen flat --bogus 1"), 2);
    cr_assert_eq(run("gen flat pillars"), 2);
    cr_assert_eq(run("gen --help"), 0);
    cr_assert_eq(run("gen flat --size 16 --out /nonexistent/dir/x.obj"), 1);
    cr_assert_eq(run("gen flat --size 16"), 0);
}
