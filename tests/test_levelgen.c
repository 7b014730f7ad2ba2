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

#include "onepath/hash.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"
#include "op_test.h"

#define COS45 0.70710678118654752 /* cos 45 degrees */

static const char *const kinds[] = {"flat",       "terrain", "stairs", "rooms",
                                    "multifloor", "ramp",    "pillars"};
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
