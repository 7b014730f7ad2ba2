/* Exact predicates (core/src/predicates.c) against a slow exact reference: __int128
 * arithmetic on integers obtained by scaling the float32 inputs by 2^23. Inputs are
 * float32 values that are multiples of 2^-23 below 32 in magnitude, so scaled they are
 * integers below 2^28 and the degree-4 in-circle determinant stays below 2^121. */
#include <criterion/criterion.h>
#include <math.h>

#include "../core/src/predicates.h"
#include "op_test.h"

typedef __int128 i128;

static long long scaled(float f)
{
    double s = ldexp((double)f, 23);
    cr_assert(s == floor(s) && fabs(s) < 4294967296.0, "input %a not on the 2^-23 grid", f);
    return (long long)s;
}

static int sign128(i128 v)
{
    return (v > 0) - (v < 0);
}

static int ref_orient(const float *p)
{
    i128 ax = scaled(p[0]), ay = scaled(p[1]), bx = scaled(p[2]), by = scaled(p[3]),
         cx = scaled(p[4]), cy = scaled(p[5]);
    return sign128((bx - ax) * (cy - ay) - (by - ay) * (cx - ax));
}

static int ref_incircle(const float *p)
{
    i128 v[8];
    for (int i = 0; i < 8; i++)
        v[i] = scaled(p[i]);
    i128 adx = v[0] - v[6], ady = v[1] - v[7], bdx = v[2] - v[6], bdy = v[3] - v[7];
    i128 cdx = v[4] - v[6], cdy = v[5] - v[7];
    i128 al = adx * adx + ady * ady, bl = bdx * bdx + bdy * bdy, cl = cdx * cdx + cdy * cdy;
    return sign128(al * (bdx * cdy - cdx * bdy) + bl * (cdx * ady - adx * cdy) +
                   cl * (adx * bdy - bdx * ady));
}

static int got_orient(const float *p)
{
    return op__orient2d(p[0], p[1], p[2], p[3], p[4], p[5]);
}

static int got_incircle(const float *p)
{
    return op__incircle(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
}

/* Rounds to float32 and snaps to the 2^-23 grid (a float below 32 in magnitude that is
 * at least 1 is on the grid already). */
static float snap(double v)
{
    return (float)ldexp(nearbyint(ldexp((double)(float)v, 23)), -23);
}

static float rnd(op_test_rng *r, double lo, double hi)
{
    return snap(lo + (hi - lo) * op_test_rand01(r));
}

static void check(const float *p, const char *what, int i)
{
    cr_assert_eq(got_orient(p), ref_orient(p), "%s %d: orient(%a %a %a %a %a %a)", what, i, p[0],
                 p[1], p[2], p[3], p[4], p[5]);
    cr_assert_eq(got_incircle(p), ref_incircle(p), "%s %d: incircle", what, i);
}

Test(predicates, random_points_agree_with_int128)
{
    op_test_rng r = {1};
    for (int i = 0; i < 100000; i++) {
        float p[8];
        for (int k = 0; k < 8; k++)
            p[k] = rnd(&r, -31.0, 31.0);
        check(p, "random", i);
    }
}

Test(predicates, nearly_collinear_points_agree)
{
    op_test_rng r = {2};
    int zeros = 0, nonzero = 0;
    for (int i = 0; i < 100000; i++) {
        float p[8];
        /* ends on a 2^-4 grid and t = j / 16: the third point is exactly collinear */
        for (int k = 0; k < 4; k++)
            p[k] = snap(ldexp(op_test_rand_int(&r, -240, 240), -4));
        double t = op_test_rand_int(&r, -8, 24) / 16.0;
        p[4] = snap(p[0] + (p[2] - p[0]) * t);
        p[5] = snap(p[1] + (p[3] - p[1]) * t);
        /* nudge by a few grid steps sometimes */
        int nudge = op_test_rand_int(&r, -2, 2);
        p[5] = snap((double)p[5] + ldexp(nudge, -23));
        p[6] = rnd(&r, -15.0, 15.0);
        p[7] = rnd(&r, -15.0, 15.0);
        check(p, "collinear", i);
        if (ref_orient(p) == 0)
            zeros++;
        else
            nonzero++;
    }
    cr_assert(zeros > 1000 && nonzero > 1000, "zeros %d nonzero %d", zeros, nonzero);
}

/* A zero can only come from the exact path (the filter never returns 0), so the zero
 * counts below prove the exact path ran. */
Test(predicates, cocircular_points_agree)
{
    /* Pythagorean points on circles of radius 5, 25, 65, scaled and shifted by dyadic
     * amounts (exactly cocircular), then perturbed by a grid step. */
    static const int pts[][2] = {{5, 0},   {3, 4},   {0, 5},    {-4, 3},  {-5, 0},   {-3, -4},
                                 {4, -3},  {7, 24},  {15, 20},  {-24, 7}, {25, 0},   {-20, -15},
                                 {33, 56}, {63, 16}, {-39, 52}, {-65, 0}, {25, -60}, {0, -65}};
    static const int radius[] = {5, 5, 5, 5, 5, 5, 5, 25, 25, 25, 25, 25, 65, 65, 65, 65, 65, 65};
    op_test_rng r = {3};
    int zeros = 0;
    for (int i = 0; i < 50000; i++) {
        int set = op_test_rand_int(&r, 0, 2);
        int lo = set == 0 ? 0 : set == 1 ? 7 : 12, hi = set == 0 ? 6 : set == 1 ? 11 : 17;
        (void)radius;
        double scale = ldexp(1.0, op_test_rand_int(&r, -6, -2));
        double ox = ldexp(op_test_rand_int(&r, -200, 200), -6);
        double oy = ldexp(op_test_rand_int(&r, -200, 200), -6);
        float p[8];
        for (int k = 0; k < 4; k++) {
            int j = op_test_rand_int(&r, lo, hi);
            p[2 * k] = snap(ox + pts[j][0] * scale);
            p[2 * k + 1] = snap(oy + pts[j][1] * scale);
        }
        if (op_test_rand_int(&r, 0, 3) == 0)
            p[7] = snap((double)p[7] + ldexp(op_test_rand_int(&r, -1, 1), -23));
        check(p, "cocircular", i);
        zeros += ref_incircle(p) == 0;
    }
    cr_assert(zeros > 5000, "only %d cocircular cases", zeros);
}

Test(predicates, tile_local_values_agree)
{
    /* Local(c) = (float)(c * cs) for several cell sizes, on the 2^-23 grid for c*cs >= 1. */
    static const double sizes[] = {0.3, 0.1, 0.25, 0.29999999, 1.0 / 3.0};
    op_test_rng r = {4};
    for (int i = 0; i < 50000; i++) {
        double cs = sizes[i % 5];
        float p[8];
        for (int k = 0; k < 8; k++) {
            int c = op_test_rand_int(&r, 4, 80);
            p[k] = snap((double)(float)(c * cs));
        }
        check(p, "local", i);
    }
}

Test(predicates, symmetries_hold_on_wide_exponents)
{
    /* Outside the reference's range: orientation flips sign under a swap, is invariant
     * under rotation; in-circle flips under a swap of two of a, b, c. */
    op_test_rng r = {5};
    for (int i = 0; i < 20000; i++) {
        double p[8];
        for (int k = 0; k < 8; k++)
            p[k] = (double)(float)ldexp(op_test_rand01(&r) - 0.5, op_test_rand_int(&r, -30, 20));
        if (i % 2)
            p[4] = p[0], p[5] = p[1] * 1.0;
        int o = op__orient2d(p[0], p[1], p[2], p[3], p[4], p[5]);
        cr_assert_eq(op__orient2d(p[2], p[3], p[4], p[5], p[0], p[1]), o);
        cr_assert_eq(op__orient2d(p[2], p[3], p[0], p[1], p[4], p[5]), -o);
        int c = op__incircle(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
        cr_assert_eq(op__incircle(p[2], p[3], p[4], p[5], p[0], p[1], p[6], p[7]), c);
        cr_assert_eq(op__incircle(p[2], p[3], p[0], p[1], p[4], p[5], p[6], p[7]), -c);
    }
    /* A classic failure of plain doubles: points almost on a line far from the origin. */
    cr_assert_eq(op__orient2d(0.5, 0.5, 12.0, 12.0, 24.0, 24.0), 0);
    cr_assert_eq(op__orient2d(0.5, 0.5, 12.0, 12.0, 24.0, nextafter(24.0, 25.0)), 1);
    cr_assert_eq(op__orient2d(0.5, 0.5, 12.0, 12.0, 24.0, nextafter(24.0, 23.0)), -1);
}
