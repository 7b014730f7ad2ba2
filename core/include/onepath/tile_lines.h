/*
 * Tile lines: which tiles of a level's grid a coordinate falls in, decided exactly as the
 * bake decides them (level binning, op_triangle_tiles, op_tile_select), so that code
 * outside the core (the daemon's per-mesh binning) gets the same tiles bit for bit.
 */
#ifndef ONEPATH_TILE_LINES_H
#define ONEPATH_TILE_LINES_H

#include <stdint.h>

#include "onepath/spans.h"

/* The last tile whose grid line k·TC + off (off = +B or -B) is at or left of v:
 * the largest k with w(k·TC + off) <= v, w(c) = origin + c·cs being cell c's low line
 * (CellOf, build3d-spans.md §1.2). Since cell(v) >= c iff w(c) <= v, this is
 * floor((cell(v) - off) / TC) without finding the cell first.
 * The estimate e = (v - (origin + off·cs)) / (cs·TC) decides alone when it is more
 * than MARGIN from an integer: v is valid (|v| <= 2^21; |origin| <= 2^15, |off·cs|
 * < 2^14 by the settings' limits, cs·TC >= 2^-10), so |e| < 2^32, e is within
 * 2^-18 of the exact quotient and each w(c) within 2^-31 of the exact line (2^-21
 * in units of e): far less than MARGIN = 2^-12 either way. Near an integer (a
 * vertex on or beside a tile line, common in game geometry) the lines decide,
 * starting from the estimate. Callers check v first (a valid soup, or the box test
 * of level.c's scan): nothing here guards against NaN or huge values. */
typedef struct op_axis_grid {
    double origin, cs, inv_tcs; /* inv_tcs = 1 / (cs·TC) */
    double from[2];             /* origin + off·cs for off = +B, -B */
    int64_t tc, border;
} op_axis_grid;

#define OP_TILE_MARGIN (1.0 / 4096.0)

static inline void op_axis_grid_init(op_axis_grid *a, const op_tile_grid *g, double origin)
{
    a->origin = origin;
    a->cs = g->cs;
    a->inv_tcs = 1.0 / (g->cs * (double)g->tile_cells);
    a->from[0] = origin + (double)g->border * g->cs;
    a->from[1] = origin - (double)g->border * g->cs;
    a->tc = g->tile_cells;
    a->border = g->border;
}

static inline double op_axis_line(const op_axis_grid *a, int64_t c)
{
    return a->origin + (double)c * a->cs;
}

static inline int32_t op_last_tile_at(const op_axis_grid *a, float v, int minus)
{
    double e = ((double)v - a->from[minus]) * a->inv_tcs;
    int64_t k = (int64_t)e;
    k -= (double)k > e;
    double f = e - (double)k;
    if (f > OP_TILE_MARGIN && f < 1.0 - OP_TILE_MARGIN)
        return (int32_t)k;
    int64_t off = minus ? -a->border : a->border;
    while (op_axis_line(a, k * a->tc + off) > v)
        k--;
    while (op_axis_line(a, (k + 1) * a->tc + off) <= v)
        k++;
    return (int32_t)k;
}

#endif
