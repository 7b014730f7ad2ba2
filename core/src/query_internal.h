/* Helpers shared by the query files (query.c, query_path.c, query_straight.c). */
#ifndef OP_QUERY_INTERNAL_H
#define OP_QUERY_INTERNAL_H

#include "onepath/query.h"

/* (b - a) x (c - a) in the x-z plane: > 0 when c is left of a -> b (counter-clockwise
 * seen from above, x right, z up). */
static inline double op__cross_xz(const double a[3], const double b[3], const double c[3])
{
    return (b[0] - a[0]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[0] - a[0]);
}

/* World vertices of polygon r: n vertices into v (OP_MAX_VERTS_PER_POLY * 3). */
int op__poly_world(const op_mesh *m, op_polyref r, double *v);

/* 3-D distance. */
double op__dist3(const double a[3], const double b[3]);

#endif
