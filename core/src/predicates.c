/*
 * Exact orientation and in-circle predicates (internal; used by the height detail
 * and available to any stage that needs exact signs on float32-derived doubles).
 *
 * Input: doubles (in practice float32 tile-local coordinates widened to double).
 * Output: the exact sign of the determinant.
 * Method: the determinant is first evaluated in plain double with Shewchuk's a-priori
 * error bound ("Adaptive Precision Floating-Point Arithmetic and Fast Robust Geometric
 * Predicates", 1997, bounds A); when the result is within the bound it is recomputed
 * exactly as a floating-point expansion (a sum of non-overlapping doubles, kept in
 * increasing magnitude with zeros eliminated), whose sign is the sign of its largest
 * component. Exactness needs no overflow (|inputs| below about 2^250) and no underflow
 * of the products; float32 inputs cannot underflow: a product of four differences of
 * float32 values is at least 2^-596 in magnitude when non-zero.
 * Typical cost: the filter decides almost all calls; near-degenerate inputs (grid
 * points on one circle, collinear edge points) take the exact path, whose expansions
 * stay short for float32 inputs (differences and products are mostly exact in one
 * double, and zero components are dropped).
 * Requires round-to-nearest IEEE double without contraction (-ffp-contract=off).
 */
#include <math.h>

#include "predicates.h"

#define EPS           1.1102230246251565e-16 /* 2^-53 */
#define SPLITTER      134217729.0            /* 2^27 + 1 */
#define CCW_ERRBOUND  OP__CCW_ERRBOUND
#define ICC_ERRBOUND  ((10.0 + 96.0 * EPS) * EPS)
#define ORIENT_EXPLEN 16
#define ICC_EXPLEN    1536

/* x + y = a + b exactly, x = fl(a + b). */
static void two_sum(double a, double b, double *x, double *y)
{
    double s = a + b;
    double bv = s - a;
    double av = s - bv;
    *x = s;
    *y = (a - av) + (b - bv);
}

/* x + y = a - b exactly. */
static void two_diff(double a, double b, double *x, double *y)
{
    double s = a - b;
    double bv = a - s;
    double av = s + bv;
    *x = s;
    *y = (a - av) + (bv - b);
}

/* x + y = a + b exactly when |a| >= |b|. */
static void fast_two_sum(double a, double b, double *x, double *y)
{
    double s = a + b;
    *x = s;
    *y = b - (s - a);
}

/* a = hi + lo with both halves of at most 26 significant bits (Dekker). */
static void split(double a, double *hi, double *lo)
{
    double c = SPLITTER * a;
    double big = c - a;
    *hi = c - big;
    *lo = a - *hi;
}

/* x + y = a * b exactly. */
static void two_product(double a, double b, double *x, double *y)
{
    double p = a * b;
    double ahi, alo, bhi, blo;
    split(a, &ahi, &alo);
    split(b, &bhi, &blo);
    double e1 = p - ahi * bhi;
    double e2 = e1 - alo * bhi;
    double e3 = e2 - ahi * blo;
    *x = p;
    *y = alo * blo - e3;
}

/* h = e + b; h may alias e. Returns the length (>= 1). */
static int grow_expansion(int elen, const double *e, double b, double *h)
{
    double q = b;
    int n = 0;
    for (int i = 0; i < elen; i++) {
        double hh;
        two_sum(q, e[i], &q, &hh);
        if (hh != 0.0)
            h[n++] = hh;
    }
    if (q != 0.0 || n == 0)
        h[n++] = q;
    return n;
}

/* h = e + f by repeated growth (h must not alias f; h may alias e). */
static int expansion_sum(int elen, const double *e, int flen, const double *f, double *h)
{
    int n = elen;
    if (h != e)
        for (int i = 0; i < elen; i++)
            h[i] = e[i];
    for (int j = 0; j < flen; j++)
        n = grow_expansion(n, h, f[j], h);
    return n;
}

/* h = e * b (h must not alias e). */
static int scale_expansion(int elen, const double *e, double b, double *h)
{
    double q, hh;
    int n = 0;
    two_product(e[0], b, &q, &hh);
    if (hh != 0.0)
        h[n++] = hh;
    for (int i = 1; i < elen; i++) {
        double p1, p0, sum;
        two_product(e[i], b, &p1, &p0);
        two_sum(q, p0, &sum, &hh);
        if (hh != 0.0)
            h[n++] = hh;
        fast_two_sum(p1, sum, &q, &hh);
        if (hh != 0.0)
            h[n++] = hh;
    }
    if (q != 0.0 || n == 0)
        h[n++] = q;
    return n;
}

/* h = e * f; tmp needs 2 * elen doubles, h (elen * flen * 2) must not alias e or f. */
static int expansion_product(int elen, const double *e, int flen, const double *f, double *tmp,
                             double *h)
{
    int n = 1;
    h[0] = 0.0;
    for (int j = 0; j < flen; j++) {
        int t = scale_expansion(elen, e, f[j], tmp);
        n = expansion_sum(n, h, t, tmp, h);
    }
    return n;
}

static int expansion_sign(int n, const double *e)
{
    double top = e[n - 1];
    return (top > 0.0) - (top < 0.0);
}

/* h = e - f (negates f in place into h's tail). */
static int expansion_diff(int elen, const double *e, int flen, const double *f, double *h)
{
    double neg[ICC_EXPLEN];
    for (int j = 0; j < flen; j++)
        neg[j] = -f[j];
    return expansion_sum(elen, e, flen, neg, h);
}

static int orient_exact(double ax, double ay, double bx, double by, double cx, double cy)
{
    double acx[2], bcy[2], acy[2], bcx[2], tmp[4], l[8], r[8], det[ORIENT_EXPLEN];
    two_diff(ax, cx, &acx[1], &acx[0]);
    two_diff(by, cy, &bcy[1], &bcy[0]);
    two_diff(ay, cy, &acy[1], &acy[0]);
    two_diff(bx, cx, &bcx[1], &bcx[0]);
    int nl = expansion_product(2, acx, 2, bcy, tmp, l);
    int nr = expansion_product(2, acy, 2, bcx, tmp, r);
    int n = expansion_diff(nl, l, nr, r, det);
    return expansion_sign(n, det);
}

int op__orient2d(double ax, double ay, double bx, double by, double cx, double cy)
{
    double detleft = (ax - cx) * (by - cy);
    double detright = (ay - cy) * (bx - cx);
    double det = detleft - detright;
    double bound = CCW_ERRBOUND * (fabs(detleft) + fabs(detright));
    if (det > bound)
        return 1;
    if (-det > bound)
        return -1;
    return orient_exact(ax, ay, bx, by, cx, cy);
}

/* Exact p * q - r * s for 2-component differences; out needs 16 doubles. */
static int cross_exact(const double *p, const double *q, const double *r, const double *s,
                       double *out)
{
    double tmp[4], l[8], rr[8];
    int nl = expansion_product(2, p, 2, q, tmp, l);
    int nr = expansion_product(2, r, 2, s, tmp, rr);
    return expansion_diff(nl, l, nr, rr, out);
}

/* Exact (x^2 + y^2); out needs 16 doubles. */
static int lift_exact(const double *x, const double *y, double *out)
{
    double tmp[4], xx[8], yy[8];
    int nx = expansion_product(2, x, 2, x, tmp, xx);
    int ny = expansion_product(2, y, 2, y, tmp, yy);
    return expansion_sum(nx, xx, ny, yy, out);
}

static int incircle_exact(const double *p)
{
    /* p: ax, ay, bx, by, cx, cy, dx, dy. Rows a, b, c relative to d. */
    double d[3][2][2]; /* d[i][axis] as 2-component expansions */
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++)
            two_diff(p[2 * i + k], p[6 + k], &d[i][k][1], &d[i][k][0]);
    double total[ICC_EXPLEN], part[512], tmp[32];
    int n = 1;
    total[0] = 0.0;
    for (int i = 0; i < 3; i++) {
        const double(*u)[2] = d[(i + 1) % 3];
        const double(*w)[2] = d[(i + 2) % 3];
        double cr[16], lift[16];
        int nc = cross_exact(u[0], w[1], w[0], u[1], cr);
        int nlift = lift_exact(d[i][0], d[i][1], lift);
        int np = expansion_product(nlift, lift, nc, cr, tmp, part);
        n = expansion_sum(n, total, np, part, total);
    }
    return expansion_sign(n, total);
}

int op__incircle(double ax, double ay, double bx, double by, double cx, double cy, double dx,
                 double dy)
{
    double adx = ax - dx, bdx = bx - dx, cdx = cx - dx;
    double ady = ay - dy, bdy = by - dy, cdy = cy - dy;
    double bdxcdy = bdx * cdy, cdxbdy = cdx * bdy;
    double alift = adx * adx + ady * ady;
    double cdxady = cdx * ady, adxcdy = adx * cdy;
    double blift = bdx * bdx + bdy * bdy;
    double adxbdy = adx * bdy, bdxady = bdx * ady;
    double clift = cdx * cdx + cdy * cdy;
    double det = alift * (bdxcdy - cdxbdy) + blift * (cdxady - adxcdy) + clift * (adxbdy - bdxady);
    double perm = (fabs(bdxcdy) + fabs(cdxbdy)) * alift + (fabs(cdxady) + fabs(adxcdy)) * blift +
                  (fabs(adxbdy) + fabs(bdxady)) * clift;
    double bound = ICC_ERRBOUND * perm;
    if (det > bound)
        return 1;
    if (-det > bound)
        return -1;
    const double p[8] = {ax, ay, bx, by, cx, cy, dx, dy};
    return incircle_exact(p);
}
