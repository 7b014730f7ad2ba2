/*
 * Straight path (docs/queries.md §5): string pulling through a corridor with the
 * funnel algorithm in the x-z plane, plus the points where the path crosses from one
 * tile layer into another. Input: a corridor (consecutive polygons neighbours), start
 * and end positions (clamped to the first and last polygon); output: the corner
 * points. Scratch: the corridor's portals (n + 1 of them). O(n) amortised restarts,
 * O(n^2) at worst.
 */
#include <math.h>
#include <string.h>

#include "query_internal.h"

typedef struct portal {
    double right[3], left[3];
    int tile_cross; /* the polygons on its two sides lie in different tile layers */
} portal;

typedef struct pull {
    const op_polyref *path;
    int n;
    const portal *pt;
    op_straight_point *pts;
    int npts, cap;
} pull;

static int same_xz(const double a[3], const double b[3])
{
    return a[0] == b[0] && a[2] == b[2];
}

/* Where the tile lines lie (queries.md §5.3): G + k·TileSize on x and z. */
typedef struct tile_lines {
    double grid[2], ts, eps;
} tile_lines;

static tile_lines lines_of(const op_mesh *m)
{
    const op_tile *t = op_mesh_tile(m, 0);
    tile_lines l = {{0.0, 0.0}, t->tile_size, ldexp(t->tile_size, -20)};
    l.grid[0] = t->origin[0] - (double)t->tx * t->tile_size;
    l.grid[1] = t->origin[2] - (double)t->tz * t->tile_size;
    return l;
}

/* A point on a tile line has one position per tile: origin + (float)TileSize in one and
 * origin' + 0 in the next, which differ by the float32 rounding of TileSize. Taken as two
 * points, the funnel turns needless corners around the gap and reads three points along
 * the line as not collinear; so x and z within eps of a line become the line's. */
static void onto_lines(const tile_lines *l, double p[3])
{
    for (int a = 0; a < 2; a++) {
        double *v = &p[2 * a], g = l->grid[a];
        double line = g + floor((*v - g) / l->ts + 0.5) * l->ts;
        if (fabs(*v - line) <= l->eps)
            *v = line;
    }
}

static void emit(pull *s, const double pos[3], unsigned flags, op_polyref poly)
{
    if (s->npts > 0) {
        op_straight_point *last = &s->pts[s->npts - 1];
        if (memcmp(last->pos, pos, 3 * sizeof(double)) == 0) {
            last->flags |= flags;
            return;
        }
    }
    if (s->npts == s->cap)
        return; /* cannot happen: cap bounds the corners and crossings */
    op_straight_point *p = &s->pts[s->npts++];
    memcpy(p->pos, pos, 3 * sizeof(double));
    p->flags = flags;
    p->poly = poly;
}

/* Points where segment a -> b crosses the tile-crossing portals strictly between portal
 * indices i0 and i1. */
static void crossings(pull *s, int i0, int i1, const double a[3], const double b[3])
{
    double d[3] = {b[0] - a[0], 0.0, b[2] - a[2]};
    for (int j = i0 + 1; j < i1; j++) {
        const portal *p = &s->pt[j];
        if (!p->tile_cross)
            continue;
        double e[3] = {p->left[0] - p->right[0], 0.0, p->left[2] - p->right[2]};
        double den = e[0] * d[2] - e[2] * d[0];
        if (den == 0.0)
            continue;
        double num = (a[0] - p->right[0]) * d[2] - (a[2] - p->right[2]) * d[0];
        double u = num / den;
        u = u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
        double q[3];
        for (int k = 0; k < 3; k++)
            q[k] = p->right[k] + (p->left[k] - p->right[k]) * u;
        emit(s, q, OP_STRAIGHT_TILE, s->path[j]);
    }
}

static void corner(pull *s, int *apex_i, double apex[3], int j, const double c[3])
{
    crossings(s, *apex_i, j, apex, c);
    emit(s, c, s->pt[j].tile_cross ? OP_STRAIGHT_TILE : 0u, s->path[j < s->n ? j : s->n - 1]);
    memcpy(apex, c, 3 * sizeof(double));
    *apex_i = j;
}

/* The funnel over portals 0..n (0 = start, n = end). */
static void funnel(pull *s)
{
    double apex[3], left[3], right[3];
    memcpy(apex, s->pt[0].right, sizeof apex);
    memcpy(left, apex, sizeof left);
    memcpy(right, apex, sizeof right);
    int ai = 0, li = 0, ri = 0;
    emit(s, apex, OP_STRAIGHT_START, s->path[0]);
    for (int i = 1; i <= s->n; i++) {
        const double *l = s->pt[i].left, *r = s->pt[i].right;
        if (op__cross_xz(apex, right, r) >= 0.0) {
            if (same_xz(apex, right) || op__cross_xz(apex, left, r) < 0.0) {
                memcpy(right, r, sizeof right);
                ri = i;
            } else {
                corner(s, &ai, apex, li, left);
                memcpy(right, apex, sizeof right);
                memcpy(left, apex, sizeof left);
                i = li = ri = ai;
                continue;
            }
        }
        if (op__cross_xz(apex, left, l) <= 0.0) {
            if (same_xz(apex, left) || op__cross_xz(apex, right, l) > 0.0) {
                memcpy(left, l, sizeof left);
                li = i;
            } else {
                corner(s, &ai, apex, ri, right);
                memcpy(right, apex, sizeof right);
                memcpy(left, apex, sizeof left);
                i = li = ri = ai;
                continue;
            }
        }
    }
    crossings(s, ai, s->n, apex, s->pt[s->n].right);
    emit(s, s->pt[s->n].right, OP_STRAIGHT_END, s->path[s->n - 1]);
}

static op_status make_portals(const op_mesh *m, const op_polyref *path, int n, const double spos[3],
                              const double epos[3], portal *pt, op_err *err)
{
    op_query_closest_point(m, path[0], spos, pt[0].right);
    memcpy(pt[0].left, pt[0].right, sizeof pt[0].left);
    pt[0].tile_cross = 0;
    for (int i = 1; i < n; i++) {
        if (!op_query_portal(m, path[i - 1], path[i], pt[i].right, pt[i].left))
            return op_err_set(err, OP_EINVAL,
                              "query: corridor polygons %d (%d, %d) and %d (%d, %d) are not "
                              "neighbours",
                              i - 1, path[i - 1].tile, path[i - 1].poly, i, path[i].tile,
                              path[i].poly);
        pt[i].tile_cross = path[i - 1].tile != path[i].tile;
    }
    op_query_closest_point(m, path[n - 1], epos, pt[n].right);
    memcpy(pt[n].left, pt[n].right, sizeof pt[n].left);
    pt[n].tile_cross = 0;
    tile_lines l = lines_of(m);
    for (int i = 0; i <= n; i++) {
        onto_lines(&l, pt[i].right);
        onto_lines(&l, pt[i].left);
    }
    return OP_OK;
}

op_status op_query_straight(const op_mesh *m, const op_polyref *path, int n, const double spos[3],
                            const double epos[3], op_arena *out, op_arena *scratch,
                            op_straight_path *sp, op_err *err)
{
    memset(sp, 0, sizeof *sp);
    if (n < 1)
        return op_err_set(err, OP_EINVAL, "query: empty corridor");
    for (int i = 0; i < n; i++) {
        const op_tile *t = op_mesh_tile(m, path[i].tile);
        if (!t || path[i].poly < 0 || path[i].poly >= t->npolys)
            return op_err_set(err, OP_EINVAL,
                              "query: corridor polygon %d (%d, %d) outside the mesh", i,
                              path[i].tile, path[i].poly);
    }
    portal *pt = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *pt);
    pull s = {path, n, pt, NULL, 0, 2 * n + 2};
    s.pts = op_arena_alloc(out, (size_t)s.cap * sizeof *s.pts);
    if (!pt || !s.pts)
        return op_err_set(err, OP_ENOMEM, "query: out of memory (straight path over %d polygons)",
                          n);
    op_status st = make_portals(m, path, n, spos, epos, pt, err);
    if (st != OP_OK)
        return st;
    funnel(&s);
    sp->npoints = s.npts;
    sp->points = s.pts;
    return OP_OK;
}
