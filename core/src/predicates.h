/*
 * Exact geometric predicates on doubles (internal to the core).
 *
 * The sign of each determinant is exact for every finite double input whose
 * magnitude stays below about 2^250 (no overflow in the products), in particular for
 * float32 values widened to double (tile-local positions). Method: a floating-point
 * filter with Shewchuk's error bounds, falling back to exact expansion arithmetic
 * (two_sum / two_product, Shewchuk 1997) written for this project.
 */
#ifndef OP_PREDICATES_H
#define OP_PREDICATES_H

/* Sign (-1, 0, 1) of (bx - ax)(cy - ay) - (by - ay)(cx - ax): 1 when a, b, c turn
 * counter-clockwise (x right, y up), 0 when collinear. */
int op__orient2d(double ax, double ay, double bx, double by, double cx, double cy);

/* op__orient2d's filter bound, (3 + 16 eps) eps with eps = 2^-53 (Shewchuk's ccwerrboundA):
 * a caller that runs the same filter inline (tile.c's check of the pipeline's own tiles)
 * decides exactly the cases op__orient2d's filter decides and asks it for the rest. */
#define OP__CCW_ERRBOUND ((3.0 + 16.0 * 1.1102230246251565e-16) * 1.1102230246251565e-16)

/* Sign (-1, 0, 1) of the in-circle determinant: 1 when d lies strictly inside the
 * circle through a, b, c given counter-clockwise (outside when they are clockwise),
 * 0 when the four points are cocircular (or a, b, c collinear and d on the line). */
int op__incircle(double ax, double ay, double bx, double by, double cx, double cy, double dx,
                 double dy);

#endif
