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

/* One node of the corridor search's pool (query_path.c), for the node-by-node comparison
 * with Detour's findPath (tests/test_detour.cpp): state 1 open, 2 closed; parent is a pool
 * index, -1 for the start. */
typedef struct op__path_node {
    op_polyref poly;
    int side, state;
    float pos[3], g, f;
    long parent;
} op__path_node;

/* op_query_path with the default filter, returning the search's node pool in order of
 * first touch (Detour's dtNodePool order) in out. */
op_status op__query_path_nodes(const op_mesh *m, op_polyref start, const double spos[3],
                               op_polyref end, const double epos[3], op_arena *out,
                               op_arena *scratch, op__path_node **nodes, long *nnodes, op_err *err);

#endif
