/*
 * Queries on a stitched mesh (docs/queries.md is the normative text): the nearest
 * polygon to a point, the height of the mesh at a point, a corridor of polygons
 * between two points (A*), and the straight path through a corridor (funnel).
 *
 * Positions are world coordinates in double. Queries never change the mesh, so any
 * number may run at once on one mesh; each takes its own arenas: `out` for what it
 * returns (the caller keeps or releases it), `scratch` for what it throws away.
 */
#ifndef ONEPATH_QUERY_H
#define ONEPATH_QUERY_H

#include "onepath/mesh.h"

#define OP_QUERY_AREAS 64
/* Corridor search (docs/queries.md §4): nodes per polygon (one per side it is entered
 * from) and the heuristic scale. */
#define OP_QUERY_SIDES   4
#define OP_QUERY_H_SCALE 0.999

/* Which polygons a query may use, and what walking over each area costs. */
typedef struct op_query_filter {
    double area_cost[OP_QUERY_AREAS]; /* cost per world unit walked in a polygon of this
                                         area; < 0 or not finite: the area is impassable */
    unsigned include_flags;           /* a polygon passes when (flags & include) != 0 */
    unsigned exclude_flags;           /* ... and (flags & exclude) == 0 */
} op_query_filter;

/* Every area costs 1, include 0xffff, exclude 0. */
void op_query_filter_default(op_query_filter *f);
/* Whether polygon r passes the filter (flags and a passable area). */
int op_query_passable(const op_mesh *m, const op_query_filter *f, op_polyref r);

/* The nearest polygon to pos among those whose bounds meet the box pos ± half
 * (queries.md §2). f may be NULL (the default filter). On success *ref and nearest
 * (the closest point of that polygon, may be NULL) are set; OP_ENOTFOUND when no
 * polygon qualifies (*ref = {-1, -1}). */
op_status op_query_nearest(const op_mesh *m, const double pos[3], const double half[3],
                           const op_query_filter *f, op_polyref *ref, double nearest[3],
                           op_err *err);

/* The point of polygon r closest to pos (queries.md §2). */
void op_query_closest_point(const op_mesh *m, op_polyref r, const double pos[3], double out[3]);

/* Height of polygon r's detail surface at (x, z) (queries.md §3). OP_ENOTFOUND when
 * (x, z) is outside the polygon; *y is still set from the nearest boundary point. */
op_status op_query_poly_height(const op_mesh *m, op_polyref r, double x, double z, double *y,
                               op_err *err);

/* Height of the mesh at (pos x, pos z): among polygons containing (x, z) whose height
 * there lies in [pos y - half_y, pos y + half_y], the one nearest pos y (queries.md
 * §3). OP_ENOTFOUND when none. ref may be NULL. */
op_status op_query_height(const op_mesh *m, const double pos[3], double half_y,
                          const op_query_filter *f, op_polyref *ref, double *y, op_err *err);

/* A corridor of polygons (queries.md §4). */
typedef struct op_path {
    int npolys;
    op_polyref *polys; /* from `out`; polys[0] = start */
    int partial;       /* 1: the end was not reached; the corridor ends at the polygon
                          nearest to the end position */
    double cost;       /* cost of the corridor to its last polygon's node position (a
                          float32 value: the search computes as Detour does, queries.md §4) */
} op_path;

/* A* from polygon start (at spos) to polygon end (at epos) over in-tile adjacency and
 * stitched links, by Detour's findPath rules and float32 arithmetic (queries.md §4). OP_EINVAL for
 * refs outside the mesh or an unstitched mesh. */
op_status op_query_path(const op_mesh *m, const op_query_filter *f, op_polyref start,
                        const double spos[3], op_polyref end, const double epos[3], op_arena *out,
                        op_arena *scratch, op_path *path, op_err *err);

/* Straight path point flags. */
#define OP_STRAIGHT_START 1u /* the start position */
#define OP_STRAIGHT_END   2u /* the end position (clamped to the last polygon) */
#define OP_STRAIGHT_TILE  4u /* the path crosses from one tile layer into another here */

typedef struct op_straight_point {
    double pos[3];
    unsigned flags;
    op_polyref poly; /* the polygon the path enters at this point (the last one at the end) */
} op_straight_point;

typedef struct op_straight_path {
    int npoints;
    op_straight_point *points; /* from `out` */
} op_straight_path;

/* String pulling through corridor path[0..n) from spos to epos (queries.md §5).
 * Consecutive polygons must be neighbours (OP_EINVAL naming the pair otherwise). */
op_status op_query_straight(const op_mesh *m, const op_polyref *path, int n, const double spos[3],
                            const double epos[3], op_arena *out, op_arena *scratch,
                            op_straight_path *sp, op_err *err);

/* The portal between neighbouring polygons a and b as seen leaving a: its right and
 * left end in world coordinates (the first connecting edge of a in edge order, then
 * link order). Returns 0 when a and b are not neighbours. */
int op_query_portal(const op_mesh *m, op_polyref a, op_polyref b, double right[3], double left[3]);

#endif
