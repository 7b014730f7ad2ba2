/*
 * Polygons (build3d-polys.md §3): the exact orientation of three float32 points,
 * used for the emission check of ear clipping and the validity of merges.
 *
 * Method. Expand the determinant into six products of float32 coordinates:
 *   orient = bx*cz - bx*az - ax*cz - bz*cx + bz*ax + az*cx.
 * A float32 has a 24-bit significand and exponents in [-149, 127], so the product
 * of two float32 values has at most 48 significant bits and a magnitude in
 * [2^-298, 2^256]: every product is exact in double (53 bits, no underflow, no
 * overflow). The six exact doubles are summed into a nonoverlapping expansion with
 * Knuth's TwoSum (Shewchuk's Grow-Expansion), which is exact under round-to-nearest
 * as long as nothing overflows (six terms below 2^256 cannot). The sign of a
 * nonoverlapping expansion is the sign of its largest nonzero component. This needs
 * IEEE double arithmetic without contraction or excess precision: the build uses
 * -ffp-contract=off and SSE2 (or any strict IEEE double target).
 * No assumption on the range of the inputs is needed (tile-local values are within
 * a few thousand units, but the proof above holds for every finite float32).
 */
#include "polys_internal.h"

/* Knuth's TwoSum: s + e == a + b exactly, s = fl(a + b). */
static void two_sum(double a, double b, double *s, double *e)
{
    double x = a + b;
    double bv = x - a;
    double av = x - bv;
    *s = x;
    *e = (a - av) + (b - bv);
}

int op__orient_f32(float ax, float az, float bx, float bz, float cx, float cz)
{
    /* Exact products (see the file comment). */
    const double t[6] = {
        (double)bx * (double)cz,    -((double)bx * (double)az), -((double)ax * (double)cz),
        -((double)bz * (double)cx), (double)bz * (double)ax,    (double)az * (double)cx,
    };
    double h[6];
    int m = 0;
    /* Grow-Expansion: h[0..m) stays nonoverlapping, increasing in magnitude (zeros kept). */
    for (int k = 0; k < 6; k++) {
        double q = t[k];
        for (int i = 0; i < m; i++)
            two_sum(q, h[i], &q, &h[i]);
        h[m++] = q;
    }
    for (int i = m - 1; i >= 0; i--) {
        if (h[i] > 0.0)
            return 1;
        if (h[i] < 0.0)
            return -1;
    }
    return 0;
}
