/*
 * Internal to the span stage's rasterization half (heightfield.c, rasterize.c,
 * tile_build.c): the fragment log of a heightfield and its column rebuild.
 */
#ifndef ONEPATH_HEIGHTFIELD_INTERNAL_H
#define ONEPATH_HEIGHTFIELD_INTERNAL_H

#include <math.h>

#include "onepath/spans.h"
#include "onepath/tile_lines.h"

/* floor and ceil without libm calls (x86-64 has no rounding instruction in its
 * baseline): exact; |x| >= 2^52 is integral already. */
static inline double op__floor(double x)
{
    if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
        return x;
    double t = (double)(int64_t)x;
    return t > x ? t - 1.0 : t;
}
static inline double op__ceil(double x)
{
    if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
        return x;
    double t = (double)(int64_t)x;
    return t < x ? t + 1.0 : t;
}

/* §2's classification, inline for the level's scan (one call a triangle was a fifth of
 * its cost); op_triangle_walkable is this. float32 throughout, as
 * rcMarkWalkableTriangles: e0 = v1 - v0, e1 = v2 - v0, n = e0 x e1; the operations and
 * their order are normative (docs/spec/build3d-spans.md §2). */
static inline int op__triangle_walkable(const float *v0, const float *v1, const float *v2,
                                        float slope_cos)
{
    float e0x = v1[0] - v0[0], e0y = v1[1] - v0[1], e0z = v1[2] - v0[2];
    float e1x = v2[0] - v0[0], e1y = v2[1] - v0[1], e1z = v2[2] - v0[2];
    float nx = e0y * e1z - e0z * e1y;
    float ny = e0z * e1x - e0x * e1z;
    float nz = e0x * e1y - e0y * e1x;
    float len2 = nx * nx + ny * ny + nz * nz;
    if (!(len2 > 0.0f))
        return 0; /* degenerate: Recast's 0 * inf = NaN fails the test as well */
    float d = 1.0f / sqrtf(len2);
    return ny * d > slope_cos;
}

/* CellOf (§1.2) from an estimate with 1/cs, corrected against the lines themselves.
 * Inputs are bounded (coordinates, origins, cs >= OP_MIN_CELL_SIZE), so the estimate
 * is within one or two cells; the clamp only keeps the conversion defined. */
static inline int64_t op__cell_of(double v, double origin, double cs, double inv_cs)
{
    double q = (v - origin) * inv_cs;
    q = q > 4e15 ? 4e15 : (q < -4e15 ? -4e15 : q);
    int64_t k = (int64_t)q;
    while (origin + (double)k * cs > v)
        k--;
    while (origin + (double)(k + 1) * cs <= v)
        k++;
    return k;
}

/* Heightfield and voxel-chunk input count their tiles from their own origin, one column a
 * cell (§1.8, §1.9): a grid origin cannot move their lines. OP_EINVAL naming the setting
 * and `what` unless both grid origins are 0. */
static inline op_status op__columns_grid_origin(const op_settings *s, const char *what, op_err *err)
{
    if (s->grid_origin_x == 0.0 && s->grid_origin_z == 0.0)
        return OP_OK;
    return op_err_set(err, OP_EINVAL,
                      "%s: grid_origin_x = %g, grid_origin_z = %g: the grid origin applies to "
                      "triangle soups; %s input places its tiles at its own origin",
                      what, s->grid_origin_x, s->grid_origin_z, what);
}

/* Checks/fixes the heightfield's merge threshold (§3.5). */
op_status op__hf_threshold(op_heightfield *hf, int merge_threshold, op_err *err);

/* Makes room for n more fragments. */
op_status op__hf_reserve(op_heightfield *hf, size_t n, op_err *err);

/* Starts adding fragments: returns the index of the first one of this call. */
static inline uint32_t op__hf_begin(op_heightfield *hf)
{
    hf->frag_first = hf->frag_count;
    return hf->frag_count;
}

/* The fragment log's fields a run of pushes uses (the rasterizer's rows: a row's
 * fragments), taken out of hf once per run rather than through hf for every fragment
 * (the build has -fno-strict-aliasing, so a store into a fragment obliges gcc to read
 * hf's fields again). In the flattened raster_tri these end up in stack slots all the
 * same (docs/benchmarks.md, push18); the gain is small, the point is one copy of the
 * folding rule for every caller. A cursor is valid from op__hf_cursor_open until the log
 * changes by other means (op__hf_reserve moves frags, op__hf_begin moves frag_first);
 * op__hf_cursor_close writes its count back, which every reader of frag_count needs
 * first. */
typedef struct op__hf_cursor {
    op_hf_frag *frags;
    uint32_t *heads;
    uint32_t first, count;
} op__hf_cursor;

static inline op__hf_cursor op__hf_cursor_open(const op_heightfield *hf)
{
    op__hf_cursor c = {hf->frags, hf->frag_heads, hf->frag_first, hf->frag_count};
    return c;
}

static inline void op__hf_cursor_close(op_heightfield *hf, const op__hf_cursor *c)
{
    hf->frag_count = c->count;
}

/* Appends a fragment to column col; room must have been reserved. A fragment that
 * overlaps or touches the column's latest fragment of this call with the same area is
 * folded into it, and so is one whose area differs from that latest fragment's but not
 * from the one below it (also of this call): the union of two such fragments gives the
 * same spans and areas (§3.5: it joins the same group and qualifies iff one of them did).
 * Walls and floors meeting in a column interleave their triangles' fragments, so the
 * latest alone misses many folds (dungeon: 143k fragments with it, 119k with the one
 * below, 109k with all of the column's). Only fragments of this call: a commit rebuilds
 * the columns whose head is new, and a failed one drops this call's fragments
 * (op__hf_rollback) and must find the older ones as they were. */
static inline void op__hf_cursor_push(op__hf_cursor *c, uint32_t col, int smin, int smax, int area)
{
    /* h + 1 > first is h != OP_NO_SPAN && h >= first in one compare: OP_NO_SPAN + 1
     * wraps to 0, and first <= count < OP_NO_SPAN. */
    _Static_assert(OP_NO_SPAN == UINT32_MAX, "the wrap below needs OP_NO_SPAN + 1 == 0");
    uint32_t h = c->heads[col];
    if ((uint32_t)(h + 1u) > c->first) {
        op_hf_frag *g = &c->frags[h];
        if (g->area != area) {
            /* A fragment of another area on top (a wall's over a floor's): the one below
             * may be of this area. */
            uint32_t u = g->next;
            if ((uint32_t)(u + 1u) > c->first)
                g = &c->frags[u];
        }
        if (g->area == area && smin <= g->smax && g->smin <= smax) {
            /* Selects, not branches: which end grows follows the geometry. */
            const int lo = g->smin, hi = g->smax;
            g->smin = (uint16_t)(smin < lo ? smin : lo);
            g->smax = (uint16_t)(smax > hi ? smax : hi);
            return;
        }
    }
    uint32_t i = c->count++;
    op_hf_frag *f = &c->frags[i];
    f->smin = (uint16_t)smin;
    f->smax = (uint16_t)smax;
    f->area = (uint8_t)area;
    f->next = h;
    c->heads[col] = i;
}

/* One fragment through a cursor of its own (callers that push one at a time). */
static inline void op__hf_push(op_heightfield *hf, uint32_t col, int smin, int smax, int area)
{
    op__hf_cursor c = op__hf_cursor_open(hf);
    op__hf_cursor_push(&c, col, smin, smax, area);
    op__hf_cursor_close(hf, &c);
}

/* Rebuilds every column that received fragments with index >= first (§3.5). Makes
 * room for the spans first; on failure drops those fragments and leaves hf as it was. */
op_status op__hf_commit(op_heightfield *hf, uint32_t first, op_err *err);

/* Whether hf->col_start is set and ends at span_count (spans.h): the compaction then
 * reads columns as arrays. A heightfield edited by hand must clear col_start. */
int op__hf_flat(const op_heightfield *hf);

/* Drops the fragments with index >= first (an error after op__hf_push). */
void op__hf_rollback(op_heightfield *hf, uint32_t first);

#endif
