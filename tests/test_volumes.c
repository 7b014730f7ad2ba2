/*
 * Area volumes (build3d-spans.md §6): box, cylinder and convex prism, tested at cell
 * centres with the boundary inside, floor heights within [ymin, ymax], only walkable spans
 * changed, later volumes winning, and every refusal naming its field. Fields use cs = 1
 * and ch = 0.25 (exact in binary), so boundary cases are exact and expected sets are
 * computed in integers; random volumes are checked against a direct all-span scan.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "onepath/spans.h"
#include "op_fields.h"
#include "op_test.h"

/* A w x d single-floor field (area 63, floor row 0), cell centres at (x + 0.5 + ox). */
static op_chf *grid(op_arena *a, int w, int d, double ox, double oz)
{
    char **lines = calloc((size_t)d, sizeof *lines);
    for (int z = 0; z < d; z++) {
        lines[z] = calloc((size_t)w + 1, 1);
        memset(lines[z], '#', (size_t)w);
    }
    op_chf *chf = op_test_field_from_text(a, (const char *const *)lines, d);
    for (int z = 0; z < d; z++)
        free(lines[z]);
    free(lines);
    chf->cs = 1.0;
    chf->ch = 0.25;
    chf->origin[0] = ox;
    chf->origin[1] = 0.0;
    chf->origin[2] = oz;
    return chf;
}

static op_volume box(double x0, double y0, double z0, double x1, double y1, double z1, int area)
{
    op_volume v;
    memset(&v, 0, sizeof v);
    v.kind = OP_VOLUME_BOX;
    v.area = area;
    v.bmin[0] = x0, v.bmin[1] = y0, v.bmin[2] = z0;
    v.bmax[0] = x1, v.bmax[1] = y1, v.bmax[2] = z1;
    return v;
}

static op_volume cylinder(double cx, double cz, double r, double y0, double y1, int area)
{
    op_volume v;
    memset(&v, 0, sizeof v);
    v.kind = OP_VOLUME_CYLINDER;
    v.area = area;
    v.bmin[0] = cx, v.bmin[2] = cz, v.bmax[0] = r;
    v.bmin[1] = y0, v.bmax[1] = y1;
    return v;
}

static op_volume prism(const double *pts, int n, double y0, double y1, int area)
{
    op_volume v;
    memset(&v, 0, sizeof v);
    v.kind = OP_VOLUME_PRISM;
    v.area = area;
    v.npts = n;
    memcpy(v.pts, pts, (size_t)n * 2 * sizeof *pts);
    v.bmin[1] = y0, v.bmax[1] = y1;
    return v;
}

static void apply(op_chf *chf, const op_volume *v, int n)
{
    op_err e;
    cr_assert_eq(op_volumes_apply(chf, v, n, OP_VOLUME_AREA, &e), OP_OK, "%s", e.msg);
}

static int area_at(const op_chf *chf, int x, int z)
{
    return chf->areas[chf->cells[x + z * chf->width]];
}

Test(volumes, box_includes_cell_centres_on_its_boundary)
{
    op_arena *a = op_arena_create(0);
    op_chf *chf = grid(a, 8, 8, 0.0, 0.0);
    op_volume v = box(2.5, -1.0, 1.5, 4.5, 1.0, 1.5, 7); /* centres x 2.5..4.5, z 1.5 exactly */
    apply(chf, &v, 1);
    for (int z = 0; z < 8; z++)
        for (int x = 0; x < 8; x++) {
            int in = x >= 2 && x <= 4 && z == 1;
            cr_assert_eq(area_at(chf, x, z), in ? 7 : 63, "(%d, %d)", x, z);
        }
    /* Just past a centre excludes it. */
    op_chf *f2 = grid(a, 8, 8, 0.0, 0.0);
    op_volume v2 = box(nextafter(2.5, 3.0), -1.0, 0.0, nextafter(4.5, 4.0), 1.0, 8.0, 9);
    apply(f2, &v2, 1);
    for (int x = 0; x < 8; x++)
        cr_assert_eq(area_at(f2, x, 0), x == 3 ? 9 : 63, "x %d", x);
    op_arena_destroy(a);
}

Test(volumes, box_with_negative_origin_and_outside_the_grid)
{
    op_arena *a = op_arena_create(0);
    op_chf *chf = grid(a, 6, 6, -3.0, -3.0); /* centres -2.5 .. 2.5 */
    op_volume v[2] = {box(-100.0, -1.0, -100.0, -2.5, 1.0, 100.0, 4),
                      box(10.0, -1.0, 10.0, 20.0, 1.0, 20.0, 5)};
    apply(chf, v, 2);
    for (int z = 0; z < 6; z++)
        for (int x = 0; x < 6; x++)
            cr_assert_eq(area_at(chf, x, z), x == 0 ? 4 : 63, "(%d, %d)", x, z);
    op_arena_destroy(a);
}

Test(volumes, floor_height_edges_are_inclusive)
{
    /* One cell, floors at rows 4, 20, 40 (world 1.0, 5.0, 10.0 with ch 0.25). */
    op_arena *a = op_arena_create(0);
    int counts[1] = {3};
    op_test_span sp[3] = {{4, 10, 63}, {20, 10, 63}, {40, 100, 63}};
    struct {
        double y0, y1;
        int want[3];
    } cases[] = {
        {1.0, 1.0, {1, 0, 0}},
        {1.0, 5.0, {1, 1, 0}},
        {nextafter(1.0, 2.0), 10.0, {0, 1, 1}},
        {5.0, nextafter(10.0, 0.0), {0, 1, 0}},
        {-5.0, 0.99, {0, 0, 0}},
        {10.0, 1e9, {0, 0, 1}},
    };
    for (int i = 0; i < 6; i++) {
        op_chf *chf = op_test_field(a, 1, 1, counts, sp, 2, 1);
        chf->cs = 1.0, chf->ch = 0.25;
        op_volume v = box(0.0, cases[i].y0, 0.0, 1.0, cases[i].y1, 1.0, 3);
        apply(chf, &v, 1);
        for (int s = 0; s < 3; s++)
            cr_assert_eq(chf->areas[s], cases[i].want[s] ? 3 : 63, "case %d span %d", i, s);
    }
    /* origin_y shifts the floors. */
    op_chf *chf = op_test_field(a, 1, 1, counts, sp, 2, 1);
    chf->ch = 0.25;
    chf->origin[1] = -1.0;
    op_volume v = box(-1e3, 0.0, -1e3, 1e3, 0.0, 1e3, 3); /* row 4 is now at 0.0 */
    apply(chf, &v, 1);
    cr_assert_eq(chf->areas[0], 3);
    cr_assert_eq(chf->areas[1], 63);
    op_arena_destroy(a);
}

Test(volumes, cylinder_includes_its_circle)
{
    /* Centre at cell (5, 5)'s centre: a cell is inside iff dx^2 + dz^2 <= r^2 in cells. */
    double radii[] = {1.0, 3.0, 5.0, 2.5};
    for (int i = 0; i < 4; i++) {
        op_arena *a = op_arena_create(0);
        op_chf *chf = grid(a, 11, 11, 0.0, 0.0);
        op_volume v = cylinder(5.5, 5.5, radii[i], -1.0, 1.0, 11);
        apply(chf, &v, 1);
        int n = 0;
        for (int z = 0; z < 11; z++)
            for (int x = 0; x < 11; x++) {
                int dx = x - 5, dz = z - 5;
                int in = 4 * (dx * dx + dz * dz) <= (int)(4 * radii[i] * radii[i]);
                cr_assert_eq(area_at(chf, x, z), in ? 11 : 63, "r %g (%d, %d)", radii[i], x, z);
                n += in;
            }
        if (radii[i] == 5.0)
            cr_assert_eq(n, 81); /* lattice points in a radius-5 disc, (3,4) on the circle */
        op_arena_destroy(a);
    }
}

Test(volumes, prism_includes_its_edges)
{
    /* Triangle (0,0) (4,0) (0,4), counter-clockwise; centres at integers (origin -0.5). */
    op_arena *a = op_arena_create(0);
    op_chf *chf = grid(a, 7, 7, -0.5, -0.5);
    double tri[] = {0, 0, 4, 0, 0, 4};
    op_volume v = prism(tri, 3, -1.0, 1.0, 12);
    apply(chf, &v, 1);
    for (int z = 0; z < 7; z++)
        for (int x = 0; x < 7; x++) {
            int in = x + z <= 4;
            cr_assert_eq(area_at(chf, x, z), in ? 12 : 63, "(%d, %d)", x, z);
        }
    /* A square with a collinear extra point is still convex. */
    op_chf *f2 = grid(a, 7, 7, -0.5, -0.5);
    double sq[] = {1, 1, 3, 1, 5, 1, 5, 4, 1, 4};
    op_volume v2 = prism(sq, 5, -1.0, 1.0, 13);
    apply(f2, &v2, 1);
    for (int z = 0; z < 7; z++)
        for (int x = 0; x < 7; x++) {
            int in = x >= 1 && x <= 5 && z >= 1 && z <= 4;
            cr_assert_eq(area_at(f2, x, z), in ? 13 : 63, "(%d, %d)", x, z);
        }
    op_arena_destroy(a);
}

Test(volumes, later_volume_wins_and_area_zero_is_final)
{
    op_arena *a = op_arena_create(0);
    op_volume v[2] = {box(0.0, -1.0, 0.0, 4.0, 1.0, 4.0, 5), box(2.0, -1.0, 0.0, 6.0, 1.0, 4.0, 7)};
    op_chf *chf = grid(a, 6, 1, 0.0, 0.0);
    apply(chf, v, 2);
    int want1[6] = {5, 5, 7, 7, 7, 7};
    for (int x = 0; x < 6; x++)
        cr_assert_eq(area_at(chf, x, 0), want1[x], "x %d", x);
    op_volume r[2] = {v[1], v[0]};
    op_chf *f2 = grid(a, 6, 1, 0.0, 0.0);
    apply(f2, r, 2);
    int want2[6] = {5, 5, 5, 5, 7, 7};
    for (int x = 0; x < 6; x++)
        cr_assert_eq(area_at(f2, x, 0), want2[x], "x %d", x);
    /* An area-0 volume makes spans unwalkable; a later volume does not bring them back. */
    op_volume z[2] = {box(0.0, -1.0, 0.0, 3.0, 1.0, 1.0, 0), box(0.0, -1.0, 0.0, 6.0, 1.0, 1.0, 9)};
    op_chf *f3 = grid(a, 6, 1, 0.0, 0.0);
    apply(f3, z, 2);
    int want3[6] = {0, 0, 0, 9, 9, 9};
    for (int x = 0; x < 6; x++)
        cr_assert_eq(area_at(f3, x, 0), want3[x], "x %d", x);
    op_arena_destroy(a);
}

Test(volumes, unwalkable_spans_are_untouched)
{
    const char *pic[] = {"#0#0", "0#0#"};
    op_arena *a = op_arena_create(0);
    op_chf *chf = op_test_field_from_text(a, pic, 2);
    chf->cs = 1.0;
    op_volume v = box(-10.0, -10.0, -10.0, 10.0, 10.0, 10.0, 21);
    apply(chf, &v, 1);
    for (int z = 0; z < 2; z++)
        for (int x = 0; x < 4; x++)
            cr_assert_eq(area_at(chf, x, z), pic[z][x] == '0' ? 0 : 21);
    op_arena_destroy(a);
}

Test(volumes, distance_field_is_dropped_only_when_an_area_changes)
{
    op_arena *a = op_arena_create(0);
    op_chf *chf = grid(a, 4, 4, 0.0, 0.0);
    op_err e;
    cr_assert_eq(op_distance_build(chf, a, a, &e), OP_OK);
    op_volume miss = box(50.0, -1.0, 50.0, 60.0, 1.0, 60.0, 3);
    apply(chf, &miss, 1);
    cr_assert_not_null(chf->dist);
    op_volume hit = box(0.0, -1.0, 0.0, 1.0, 1.0, 1.0, 3);
    apply(chf, &hit, 1);
    cr_assert_null(chf->dist);
    op_arena_destroy(a);
}

/* ---- the rule applied directly to every span, against random volumes ---- */

static int inside_direct(const op_chf *chf, const op_volume *v, int x, int z, int y)
{
    double px = chf->origin[0] + ((double)x + 0.5) * chf->cs;
    double pz = chf->origin[2] + ((double)z + 0.5) * chf->cs;
    double py = chf->origin[1] + (double)y * chf->ch;
    if (py < v->bmin[1] || py > v->bmax[1])
        return 0;
    if (v->kind == OP_VOLUME_BOX)
        return px >= v->bmin[0] && px <= v->bmax[0] && pz >= v->bmin[2] && pz <= v->bmax[2];
    if (v->kind == OP_VOLUME_CYLINDER) {
        double r = v->bmax[0], dx = px - v->bmin[0], dz = pz - v->bmin[2];
        if (px < v->bmin[0] - r || px > v->bmin[0] + r || pz < v->bmin[2] - r ||
            pz > v->bmin[2] + r)
            return 0;
        return dx * dx + dz * dz <= r * r;
    }
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (int i = 0; i < v->npts; i++)
        for (int k = 0; k < 2; k++) {
            lo[k] = fmin(lo[k], v->pts[2 * i + k]);
            hi[k] = fmax(hi[k], v->pts[2 * i + k]);
        }
    if (px < lo[0] || px > hi[0] || pz < lo[1] || pz > hi[1])
        return 0;
    for (int i = 0; i < v->npts; i++) {
        int j = (i + 1) % v->npts;
        double ax = v->pts[2 * i], az = v->pts[2 * i + 1];
        double ex = v->pts[2 * j] - ax, ez = v->pts[2 * j + 1] - az;
        if (ex * (pz - az) - ez * (px - ax) < 0.0)
            return 0;
    }
    return 1;
}

static op_volume random_volume(op_test_rng *rng)
{
    double cx = op_test_rand01(rng) * 12.0 - 2.0, cz = op_test_rand01(rng) * 12.0 - 2.0;
    double y0 = op_test_rand01(rng) * 8.0, y1 = y0 + op_test_rand01(rng) * 10.0;
    int area = op_test_rand_int(rng, 0, 63);
    int kind = op_test_rand_int(rng, 0, 2);
    if (kind == 0)
        return box(cx, y0, cz, cx + op_test_rand01(rng) * 6.0, y1, cz + op_test_rand01(rng) * 6.0,
                   area);
    if (kind == 1)
        return cylinder(cx, cz, 0.1 + op_test_rand01(rng) * 5.0, y0, y1, area);
    /* A convex polygon: points on a circle at increasing angles. */
    int n = op_test_rand_int(rng, 3, 9);
    double r = 0.5 + op_test_rand01(rng) * 5.0, pts[18];
    for (int i = 0; i < n; i++) {
        double t = (i + op_test_rand01(rng) * 0.9) * (6.283185307179586 / n);
        pts[2 * i] = cx + r * cos(t);
        pts[2 * i + 1] = cz + r * sin(t);
    }
    return prism(pts, n, y0, y1, area);
}

Test(volumes, random_volumes_equal_the_direct_rule)
{
    for (uint64_t seed = 1; seed <= 300; seed++) {
        op_test_rng rng = {seed * 40503};
        op_arena *a = op_arena_create(0);
        int w = op_test_rand_int(&rng, 1, 16), d = op_test_rand_int(&rng, 1, 16);
        op_chf *chf = op_test_field_random(a, &rng, w, d, 3, 4);
        chf->cs = 0.1 + op_test_rand01(&rng);
        chf->ch = 0.05 + op_test_rand01(&rng) * 0.2;
        chf->origin[0] = op_test_rand01(&rng) * 4.0 - 2.0;
        chf->origin[1] = -op_test_rand01(&rng) * 4.0;
        chf->origin[2] = op_test_rand01(&rng) * 4.0 - 2.0;
        int nv = op_test_rand_int(&rng, 1, 5);
        op_volume v[5];
        for (int i = 0; i < nv; i++) {
            v[i] = random_volume(&rng);
            op_err e;
            cr_assert_eq(op_volume_validate(&v[i], &e), OP_OK, "seed %llu: %s",
                         (unsigned long long)seed, e.msg);
        }
        uint8_t *want = malloc(chf->span_count + 1);
        memcpy(want, chf->areas, chf->span_count);
        for (int i = 0; i < nv; i++)
            for (int c = 0; c < w * d; c++)
                for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                    if (want[s] != 0 && inside_direct(chf, &v[i], c % w, c / w, chf->y[s]))
                        want[s] = (uint8_t)v[i].area;
        apply(chf, v, nv);
        for (uint32_t s = 0; s < chf->span_count; s++)
            cr_assert_eq(chf->areas[s], want[s], "seed %llu span %u", (unsigned long long)seed, s);
        free(want);
        op_arena_destroy(a);
    }
}

/* ---- refusals ---- */

static void expect_refusal(const op_volume *v, op_status want, const char *field)
{
    op_err e;
    cr_assert_eq(op_volume_validate(v, &e), want, "%s accepted or wrong code: %s", field, e.msg);
    cr_assert(strstr(e.msg, field), "message '%s' does not name %s", e.msg, field);
    /* op_volumes_apply refuses the whole array first and names the index. */
    op_arena *a = op_arena_create(0);
    op_chf *chf = grid(a, 4, 4, 0.0, 0.0);
    op_volume vs[2] = {box(-9.0, -9.0, -9.0, 9.0, 9.0, 9.0, 3), *v};
    cr_assert_eq(op_volumes_apply(chf, vs, 2, OP_VOLUME_AREA, &e), want);
    cr_assert(strstr(e.msg, "volume 1") && strstr(e.msg, field), "%s", e.msg);
    for (uint32_t s = 0; s < chf->span_count; s++)
        cr_assert_eq(chf->areas[s], 63, "nothing changes before validation passes");
    op_arena_destroy(a);
}

Test(volumes, bad_volumes_are_refused_naming_the_field)
{
    op_volume v = box(0, 0, 0, 1, 1, 1, 64);
    expect_refusal(&v, OP_ERANGE, "area = 64");
    v = box(0, 0, 0, 1, 1, 1, -1);
    expect_refusal(&v, OP_ERANGE, "area = -1");
    v = box(0, 2, 0, 1, 1, 1, 3);
    expect_refusal(&v, OP_ERANGE, "bmin[1]");
    v = box(2, 0, 0, 1, 1, 1, 3);
    expect_refusal(&v, OP_ERANGE, "bmin[0]");
    v = box(0, 0, 2, 1, 1, 1, 3);
    expect_refusal(&v, OP_ERANGE, "bmin[2]");
    v = box(NAN, 0, 0, 1, 1, 1, 3);
    expect_refusal(&v, OP_EINVAL, "bmin[0] = nan");
    v = box(0, 0, 0, 1, INFINITY, 1, 3);
    expect_refusal(&v, OP_EINVAL, "bmax[1] = inf");
    v = box(0, 0, 0, 1, 1, 1, 3);
    v.kind = (op_volume_kind)7;
    expect_refusal(&v, OP_EINVAL, "kind = 7");
    v = cylinder(0, 0, 0.0, 0, 1, 3);
    expect_refusal(&v, OP_ERANGE, "radius");
    v = cylinder(0, 0, -2.0, 0, 1, 3);
    expect_refusal(&v, OP_ERANGE, "radius bmax[0] = -2");
    v = cylinder(0, 0, NAN, 0, 1, 3);
    expect_refusal(&v, OP_EINVAL, "bmax[0] = nan");
    v = cylinder(0, 0, 1, 2, 1, 3);
    expect_refusal(&v, OP_ERANGE, "ymin");
    double tri[] = {0, 0, 4, 0, 0, 4};
    v = prism(tri, 2, 0, 1, 3);
    expect_refusal(&v, OP_ERANGE, "npts = 2");
    v = prism(tri, 3, 0, 1, 3);
    v.npts = 65;
    expect_refusal(&v, OP_ERANGE, "npts = 65");
    double cw[] = {0, 0, 0, 4, 4, 0};
    v = prism(cw, 3, 0, 1, 3);
    expect_refusal(&v, OP_EINVAL, "counter-clockwise");
    double dart[] = {0, 0, 4, 0, 1, 1, 0, 4};
    v = prism(dart, 4, 0, 1, 3);
    expect_refusal(&v, OP_EINVAL, "at point 2");
    double rep[] = {0, 0, 4, 0, 4, 0, 0, 4};
    v = prism(rep, 4, 0, 1, 3);
    expect_refusal(&v, OP_EINVAL, "repeats");
    double line[] = {0, 0, 1, 0, 2, 0};
    v = prism(line, 3, 0, 1, 3);
    expect_refusal(&v, OP_EINVAL, "back at point");
    /* A pentagram turns left at every point but goes round twice. */
    double star[10];
    for (int i = 0; i < 5; i++) {
        double t = i * 2 * (6.283185307179586 / 5);
        star[2 * i] = cos(t), star[2 * i + 1] = sin(t);
    }
    v = prism(star, 5, 0, 1, 3);
    expect_refusal(&v, OP_EINVAL, "wind 2 times");
    v = prism(tri, 3, 0, 1, 3);
    v.pts[3] = NAN;
    expect_refusal(&v, OP_EINVAL, "pts[3] = nan");
    v = prism(tri, 3, 1, 0, 3);
    expect_refusal(&v, OP_ERANGE, "bmin[1] = 1");
}

Test(volumes, limits_are_accepted_at_n)
{
    op_err e;
    double pts[2 * OP_MAX_PRISM_VERTS];
    for (int i = 0; i < OP_MAX_PRISM_VERTS; i++) {
        double t = i * (6.283185307179586 / OP_MAX_PRISM_VERTS);
        pts[2 * i] = 10.0 * cos(t), pts[2 * i + 1] = 10.0 * sin(t);
    }
    op_volume v = prism(pts, OP_MAX_PRISM_VERTS, 0, 1, 63);
    cr_assert_eq(op_volume_validate(&v, &e), OP_OK, "%s", e.msg);
    v = prism(pts, 3, 0, 0, 0); /* npts 3, area 0, ymin = ymax */
    cr_assert_eq(op_volume_validate(&v, &e), OP_OK, "%s", e.msg);
    v = cylinder(0, 0, 4.9e-324, 0, 0, 1); /* the least positive radius */
    cr_assert_eq(op_volume_validate(&v, &e), OP_OK, "%s", e.msg);
    v = box(1, 1, 1, 1, 1, 1, 1); /* a point */
    cr_assert_eq(op_volume_validate(&v, &e), OP_OK, "%s", e.msg);
}

Test(volumes, bad_arrays_are_refused)
{
    op_arena *a = op_arena_create(0);
    op_chf *chf = grid(a, 2, 2, 0, 0);
    op_err e;
    cr_assert_eq(op_volumes_apply(chf, NULL, -1, OP_VOLUME_AREA, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "nvols = -1"), "%s", e.msg);
    cr_assert_eq(op_volumes_apply(chf, NULL, 2, OP_VOLUME_AREA, &e), OP_EINVAL);
    cr_assert_eq(op_volumes_apply(chf, NULL, 0, OP_VOLUME_AREA, &e), OP_OK);
    cr_assert_eq(op_volume_validate(NULL, &e), OP_EINVAL);
    op_arena_destroy(a);
}

/* ---- modes (§6.5-§6.6) ---- */

static op_volume obstacle(op_volume v)
{
    v.mode = OP_VOLUME_OBSTACLE;
    return v;
}

Test(volumes, obstacle_takes_the_floors_whose_agent_space_it_meets)
{
    /* One cell, floors at rows 4, 20, 40 (world 1.0, 5.0, 10.0); walkable_height 8 rows
     * (2.0 wu): an agent on the floor at 1.0 fills [1.0, 3.0). */
    op_arena *a = op_arena_create(0);
    int counts[1] = {3};
    op_test_span sp[3] = {{4, 10, 63}, {20, 10, 63}, {40, 100, 63}};
    struct {
        double y0, y1;
        int want[3];
    } cases[] = {
        {1.0, 1.0, {1, 0, 0}},                 /* a floor inside the range */
        {nextafter(3.0, 0.0), 4.0, {1, 0, 0}}, /* hangs just under the head */
        {3.0, 4.0, {0, 0, 0}},                 /* exactly the agent's height of room */
        {0.0, nextafter(1.0, 0.0), {0, 0, 0}}, /* below the floor: the agent stands on it */
        {2.0, 6.0, {1, 1, 0}},                 /* from above the first floor into the second */
        {6.5, 7.0, {0, 1, 0}},                 /* a beam 1.5 wu above the second floor */
        {-1e9, 1e9, {1, 1, 1}},
    };
    for (int i = 0; i < 7; i++) {
        op_chf *chf = op_test_field(a, 1, 1, counts, sp, 8, 1);
        chf->cs = 1.0, chf->ch = 0.25;
        op_volume v = obstacle(box(0.0, cases[i].y0, 0.0, 1.0, cases[i].y1, 1.0, 0));
        op_err e;
        cr_assert_eq(op_volumes_apply(chf, &v, 1, OP_VOLUME_OBSTACLE, &e), OP_OK, "%s", e.msg);
        for (int s = 0; s < 3; s++)
            cr_assert_eq(chf->areas[s], cases[i].want[s] ? 0 : 63, "case %d span %d", i, s);
        /* The same shape as an area volume takes only floors inside its range. */
        op_chf *f2 = op_test_field(a, 1, 1, counts, sp, 8, 1);
        f2->cs = 1.0, f2->ch = 0.25;
        v.mode = OP_VOLUME_AREA;
        v.area = 5;
        cr_assert_eq(op_volumes_apply(f2, &v, 1, OP_VOLUME_AREA, &e), OP_OK, "%s", e.msg);
        double fy[3] = {1.0, 5.0, 10.0};
        for (int s = 0; s < 3; s++) {
            int in = fy[s] >= cases[i].y0 && fy[s] <= cases[i].y1;
            cr_assert_eq(f2->areas[s], in ? 5 : 63, "area case %d span %d", i, s);
        }
    }
    op_arena_destroy(a);
}

Test(volumes, each_mode_applies_only_its_own_volumes)
{
    op_arena *a = op_arena_create(0);
    op_chf *chf = grid(a, 6, 1, 0.0, 0.0);
    op_volume v[3] = {box(0, -1, 0, 1.9, 1, 1, 4), obstacle(box(2, -1, 0, 3.9, 1, 1, 0)),
                      obstacle(box(4, -1, 0, 6, 1, 1, 9))};
    op_err e;
    cr_assert_eq(op_volumes_apply(chf, v, 3, OP_VOLUME_OBSTACLE, &e), OP_OK, "%s", e.msg);
    int want1[6] = {63, 63, 0, 0, 9, 9};
    for (int x = 0; x < 6; x++)
        cr_assert_eq(area_at(chf, x, 0), want1[x], "obstacles x %d", x);
    cr_assert_eq(op_volumes_apply(chf, v, 3, OP_VOLUME_AREA, &e), OP_OK, "%s", e.msg);
    int want2[6] = {4, 4, 0, 0, 9, 9};
    for (int x = 0; x < 6; x++)
        cr_assert_eq(area_at(chf, x, 0), want2[x], "areas x %d", x);
    cr_assert_eq(op_volumes_apply(chf, v, 3, (op_volume_mode)2, &e), OP_EINVAL);
    op_arena_destroy(a);
}

static int in_hole(int x, int z)
{
    return x >= 9 && x <= 11 && z >= 9 && z <= 11;
}

/* §8 by brute force on an open n x n floor with (hole) or without the 3 x 3 hole of
 * area-0 spans: boundary spans are those with an orthogonal neighbour in the hole or
 * outside the grid; the distance is the least octile cost (2 a straight step, 3 a
 * diagonal one) to one of them. */
static int brute_dist(int n, int hole, int x, int z)
{
    int best = 1 << 30;
    for (int bz = 0; bz < n; bz++)
        for (int bx = 0; bx < n; bx++) {
            if (hole && in_hole(bx, bz))
                continue;
            int edge = bx == 0 || bz == 0 || bx == n - 1 || bz == n - 1;
            int near = hole && (in_hole(bx - 1, bz) || in_hole(bx + 1, bz) || in_hole(bx, bz - 1) ||
                                in_hole(bx, bz + 1));
            if (!edge && !near)
                continue;
            int dx = abs(bx - x), dz = abs(bz - z);
            int lo = dx < dz ? dx : dz, hi = dx < dz ? dz : dx;
            int c = 3 * lo + 2 * (hi - lo);
            best = c < best ? c : best;
        }
    return best;
}

/* An obstacle applied before erosion grows by the radius; an area-0 area volume after
 * erosion does not (§6 intro, §7). */
Test(volumes, obstacle_is_widened_by_erosion_area_volume_is_not)
{
    op_arena *a = op_arena_create(0);
    op_err e;
    const int n = 21, r = 2;
    op_volume ob = obstacle(box(9.5, -1, 9.5, 11.5, 1, 11.5, 0)); /* cells 9..11 */
    op_chf *f1 = grid(a, n, n, 0.0, 0.0);
    cr_assert_eq(op_volumes_apply(f1, &ob, 1, OP_VOLUME_OBSTACLE, &e), OP_OK);
    cr_assert_eq(op_erode(f1, r, a, &e), OP_OK);
    op_volume av = box(9.5, -1, 9.5, 11.5, 1, 11.5, 0);
    op_chf *f2 = grid(a, n, n, 0.0, 0.0);
    cr_assert_eq(op_erode(f2, r, a, &e), OP_OK);
    cr_assert_eq(op_volumes_apply(f2, &av, 1, OP_VOLUME_AREA, &e), OP_OK);
    int widened = 0;
    for (int z = 0; z < n; z++)
        for (int x = 0; x < n; x++) {
            int w1 = !in_hole(x, z) && brute_dist(n, 1, x, z) >= 2 * r;
            int w2 = !in_hole(x, z) && brute_dist(n, 0, x, z) >= 2 * r;
            cr_assert_eq(area_at(f1, x, z) != 0, w1, "obstacle (%d, %d)", x, z);
            cr_assert_eq(area_at(f2, x, z) != 0, w2, "area volume (%d, %d)", x, z);
            widened += w2 && !w1;
        }
    /* The 7 x 7 square two cells round the hole, less the hole and the four corners (at
     * distance 5 from the nearest boundary span). */
    cr_assert_eq(widened, 7 * 7 - 9 - 4);
    op_arena_destroy(a);
}

Test(volumes, mode_and_magnitude_are_validated)
{
    op_volume v = box(0, 0, 0, 1, 1, 1, 3);
    v.mode = (op_volume_mode)5;
    expect_refusal(&v, OP_EINVAL, "mode = 5");
    v = box(0, 0, 0, 1, 1, 1, 3);
    v.bmax[2] = 2e12;
    expect_refusal(&v, OP_ERANGE, "bmax[2] = 2e+12");
    v = cylinder(0, 0, 1.2e12, 0, 1, 3);
    expect_refusal(&v, OP_ERANGE, "bmax[0]");
    double tri[] = {0, 0, 4, 0, 0, 4};
    v = prism(tri, 3, 0, 1, 3);
    v.pts[4] = -3e12;
    expect_refusal(&v, OP_ERANGE, "pts[4]");
    /* At the bound itself: accepted. */
    op_err e;
    v = box(-OP_MAX_ORIGIN, 0, 0, OP_MAX_ORIGIN, 1, 1, 3);
    cr_assert_eq(op_volume_validate(&v, &e), OP_OK, "%s", e.msg);
    /* Messages carry the name when there is one. */
    v = box(0, 0, 0, 1, 1, 1, 64);
    strcpy(v.name, "door1");
    cr_assert_eq(op_volume_validate(&v, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "\"door1\"") && strstr(e.msg, "area = 64"), "%s", e.msg);
}

/* The whole message, prefix included, for each check that names the volume: validation
 * formats the name only on failure (volumes.c), so this pins that the deferred prefix is
 * the one every message had, 'volumes: volume I "NAME" (KIND): ', for each kind, with and
 * without an index and a name. The expected strings are written out here, not derived. */
Test(volumes, refusal_messages_whole)
{
    op_err e;
    op_volume v = box(0, 0, 0, 1, 1, 1, 64);
    strcpy(v.name, "door1");
    cr_assert_eq(op_volume_validate(&v, &e), OP_ERANGE);
    cr_assert_str_eq(e.msg, "volumes: volume \"door1\" (box): area = 64 outside [0, 63]");
    v = cylinder(0, 0, -1, 0, 1, 3);
    cr_assert_eq(op_volume_validate(&v, &e), OP_ERANGE);
    cr_assert_str_eq(e.msg, "volumes: volume (cylinder): radius bmax[0] = -1 is not > 0");
    double tri[] = {0, 0, 0, 4, 4, 0}; /* clockwise */
    v = prism(tri, 3, 0, 1, 3);
    strcpy(v.name, "p");
    op_arena *a = op_arena_create(0);
    op_chf *chf = grid(a, 4, 4, 0.0, 0.0);
    op_volume vs[3] = {box(-9.0, -9.0, -9.0, 9.0, 9.0, 9.0, 3),
                       box(-9.0, -9.0, -9.0, 9.0, 9.0, 9.0, 3), v};
    cr_assert_eq(op_volumes_apply(chf, vs, 3, OP_VOLUME_AREA, &e), OP_EINVAL);
    cr_assert_str_eq(e.msg, "volumes: volume 2 \"p\" (prism): pts turn right or back at point 1 "
                            "(not convex and counter-clockwise)");
    vs[1].bmin[1] = 10.0;
    cr_assert_eq(op_volumes_apply(chf, vs, 3, OP_VOLUME_AREA, &e), OP_ERANGE);
    cr_assert_str_eq(e.msg, "volumes: volume 1 (box): ymin bmin[1] = 10 > ymax bmax[1] = 9");
    op_arena_destroy(a);
}
