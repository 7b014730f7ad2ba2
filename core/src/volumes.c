/*
 * Span stage, volumes (docs/spec/build3d-spans.md §6): op_chf plus an array of volumes
 * (box, cylinder, convex prism; world units) → the same op_chf with the area of every
 * walkable span a volume of the asked mode takes replaced by the volume's area, volumes in
 * array order. Obstacles run right after compaction and take the spans whose agent space
 * they meet; area volumes run after erosion and take the spans whose floor they contain.
 *
 * All volumes are validated before any area changes. A span is tested at its cell
 * centre and floor height, in double. Cell centres and floor heights are monotone in the
 * cell / row index, so each volume's candidate cells (its XZ bounding box) and rows (its
 * vertical test) are found by binary search and only those cells are visited: the work is
 * proportional to the spans under the volumes, not to the grid. Typical: 0..100 volumes
 * a tile, each covering a few hundred cells.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onepath/limits.h"
#include "onepath/spans.h"
#include "volumes_internal.h"

static const char *const kind_names[] = {"box", "cylinder", "prism"};

/* Which volume a validation message is about: its name is formatted only when a check
 * fails (validation runs on every volume of every rebuild; formatting is most of its cost). */
typedef struct vwho {
    const op_volume *v;
    int index; /* position in its array, or -1 */
} vwho;

/* 'volume 3 "door1" (box)' into buf: the prefix of every validation message. */
static const char *volume_name(const op_volume *v, int index, char *buf, size_t n)
{
    const char *k = kind_names[v->kind];
    char idx[16] = "";
    if (index >= 0)
        snprintf(idx, sizeof idx, " %d", index);
    if (v->name[0])
        snprintf(buf, n, "volume%s \"%.*s\" (%s)", idx, OP_MAX_VOLUME_NAME, v->name, k);
    else
        snprintf(buf, n, "volume%s (%s)", idx, k);
    return buf;
}

/* op_err_set with the message "volumes: <who>: <fmt...>". */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static op_status
fail(op_err *err, op_status status, const vwho *w, const char *fmt, ...)
{
    char who[128], rest[OP_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rest, sizeof rest, fmt, ap);
    va_end(ap);
    return op_err_set(err, status, "volumes: %s: %s", volume_name(w->v, w->index, who, sizeof who),
                      rest);
}

static op_status check_finite(const op_volume *v, const vwho *who, op_err *err)
{
    static const char *const names[6] = {"bmin[0]", "bmin[1]", "bmin[2]",
                                         "bmax[0]", "bmax[1]", "bmax[2]"};
    /* Fields each kind reads: box all six, cylinder x/z centre, y range, radius. */
    static const int used[3][6] = {{1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 0}, {0, 1, 0, 0, 1, 0}};
    for (int i = 0; i < 6; i++) {
        double x = i < 3 ? v->bmin[i] : v->bmax[i - 3];
        if (!used[v->kind][i])
            continue;
        if (!isfinite(x))
            return fail(err, OP_EINVAL, who, "%s = %g is not finite", names[i], x);
        if (fabs(x) > OP_MAX_ORIGIN)
            return fail(err, OP_ERANGE, who, "%s = %g is beyond +-%g", names[i], x, OP_MAX_ORIGIN);
    }
    return OP_OK;
}

/* Edge i of a prism: pts[i+1] - pts[i] (cyclic). */
static void prism_edge(const op_volume *v, int i, double e[2])
{
    int j = (i + 1) % v->npts;
    e[0] = v->pts[2 * j] - v->pts[2 * i];
    e[1] = v->pts[2 * j + 1] - v->pts[2 * i + 1];
}

/* Direction in [0, pi) (z up, x right) → 1; [pi, 2 pi) → 0. */
static int upper_half(const double e[2])
{
    return e[1] > 0.0 || (e[1] == 0.0 && e[0] > 0.0);
}

/* §6 rule 3: convex and counter-clockwise means no zero edge, every turn left or straight
 * (never back), and the edge directions go round exactly once. */
static op_status check_prism(const op_volume *v, const vwho *who, op_err *err)
{
    if (v->npts < 3 || v->npts > OP_MAX_PRISM_VERTS)
        return fail(err, OP_ERANGE, who, "npts = %d outside [3, %d]", v->npts, OP_MAX_PRISM_VERTS);
    for (int i = 0; i < 2 * v->npts; i++) {
        if (!isfinite(v->pts[i]))
            return fail(err, OP_EINVAL, who, "pts[%d] = %g is not finite", i, v->pts[i]);
        if (fabs(v->pts[i]) > OP_MAX_ORIGIN)
            return fail(err, OP_ERANGE, who, "pts[%d] = %g is beyond +-%g", i, v->pts[i],
                        OP_MAX_ORIGIN);
    }
    int wraps = 0;
    for (int i = 0; i < v->npts; i++) {
        double a[2], b[2];
        prism_edge(v, i, a);
        prism_edge(v, (i + 1) % v->npts, b);
        if (a[0] == 0.0 && a[1] == 0.0)
            return fail(err, OP_EINVAL, who, "pts point %d repeats point %d", (i + 1) % v->npts, i);
        double cross = a[0] * b[1] - a[1] * b[0];
        double dot = a[0] * b[0] + a[1] * b[1];
        if (cross < 0.0 || (cross == 0.0 && dot < 0.0))
            return fail(err, OP_EINVAL, who,
                        "pts turn right or back at point %d (not convex and "
                        "counter-clockwise)",
                        (i + 1) % v->npts);
        wraps += !upper_half(a) && upper_half(b);
    }
    if (wraps != 1)
        return fail(err, OP_EINVAL, who, "pts wind %d times round (must be once)", wraps);
    return OP_OK;
}

static op_status validate_one(const op_volume *v, int index, op_err *err)
{
    if ((int)v->kind < OP_VOLUME_BOX || (int)v->kind > OP_VOLUME_PRISM) {
        if (index >= 0)
            return op_err_set(err, OP_EINVAL, "volumes: volume %d: kind = %d is unknown", index,
                              (int)v->kind);
        return op_err_set(err, OP_EINVAL, "volumes: kind = %d is unknown", (int)v->kind);
    }
    const vwho w = {v, index}, *who = &w;
    if ((int)v->mode != OP_VOLUME_AREA && (int)v->mode != OP_VOLUME_OBSTACLE)
        return fail(err, OP_EINVAL, who, "mode = %d is unknown", (int)v->mode);
    if (v->area < 0 || v->area > OP_MAX_AREA)
        return fail(err, OP_ERANGE, who, "area = %d outside [0, %d]", v->area, OP_MAX_AREA);
    op_status st = check_finite(v, who, err);
    if (st != OP_OK)
        return st;
    if (v->bmin[1] > v->bmax[1])
        return fail(err, OP_ERANGE, who, "ymin bmin[1] = %g > ymax bmax[1] = %g", v->bmin[1],
                    v->bmax[1]);
    if (v->kind == OP_VOLUME_BOX) {
        for (int i = 0; i < 3; i += 2)
            if (v->bmin[i] > v->bmax[i])
                return fail(err, OP_ERANGE, who, "bmin[%d] = %g > bmax[%d] = %g", i, v->bmin[i], i,
                            v->bmax[i]);
    } else if (v->kind == OP_VOLUME_CYLINDER) {
        if (!(v->bmax[0] > 0.0))
            return fail(err, OP_ERANGE, who, "radius bmax[0] = %g is not > 0", v->bmax[0]);
    } else {
        return check_prism(v, who, err);
    }
    return OP_OK;
}

op_status op_volume_validate(const op_volume *v, op_err *err)
{
    if (!v)
        return op_err_set(err, OP_EINVAL, "volumes: volume is NULL");
    return validate_one(v, -1, err);
}

/* ---- inside tests (§6 rules 4–6) ---- */

static double cell_centre(double origin, int i, double cs)
{
    return origin + ((double)i + 0.5) * cs;
}

/* The XZ bounding box every test starts with (rule 4). */
void op__volume_xz_bounds(const op_volume *v, double lo[2], double hi[2])
{
    if (v->kind == OP_VOLUME_BOX) {
        lo[0] = v->bmin[0], lo[1] = v->bmin[2];
        hi[0] = v->bmax[0], hi[1] = v->bmax[2];
    } else if (v->kind == OP_VOLUME_CYLINDER) {
        double r = v->bmax[0];
        lo[0] = v->bmin[0] - r, lo[1] = v->bmin[2] - r;
        hi[0] = v->bmin[0] + r, hi[1] = v->bmin[2] + r;
    } else {
        lo[0] = hi[0] = v->pts[0];
        lo[1] = hi[1] = v->pts[1];
        for (int i = 1; i < v->npts; i++)
            for (int k = 0; k < 2; k++) {
                double p = v->pts[2 * i + k];
                lo[k] = p < lo[k] ? p : lo[k];
                hi[k] = p > hi[k] ? p : hi[k];
            }
    }
}

static int inside_shape(const op_volume *v, double px, double pz)
{
    if (v->kind == OP_VOLUME_CYLINDER) {
        double dx = px - v->bmin[0], dz = pz - v->bmin[2];
        return dx * dx + dz * dz <= v->bmax[0] * v->bmax[0];
    }
    if (v->kind == OP_VOLUME_PRISM) {
        for (int i = 0; i < v->npts; i++) {
            double e[2];
            prism_edge(v, i, e);
            double ax = v->pts[2 * i], az = v->pts[2 * i + 1];
            if (e[0] * (pz - az) - e[1] * (px - ax) < 0.0)
                return 0;
        }
    }
    return 1; /* box: the bounding box test was the whole test */
}

/* First index i in [0, n] with origin + (i + 0.5) * cs >= lo (n if none): the centres
 * are non-decreasing in i, so binary search finds it exactly. */
static int first_centre_at_least(double origin, double cs, int n, double lo)
{
    int a = 0, b = n;
    while (a < b) {
        int m = a + (b - a) / 2;
        if (cell_centre(origin, m, cs) >= lo)
            b = m;
        else
            a = m + 1;
    }
    return a;
}

/* One past the last index with centre <= hi. */
static int end_centre_at_most(double origin, double cs, int n, double hi)
{
    int a = 0, b = n;
    while (a < b) {
        int m = a + (b - a) / 2;
        if (cell_centre(origin, m, cs) <= hi)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

/* First row m in [0, OP_MAX_ROWS + 1] with origin_y + (m + lift) * ch > y (strict) or >= y
 * (inclusive): floor heights are increasing in the row, so binary search finds it. */
static int first_row_above(const op_chf *chf, int lift, double y, int strict)
{
    int a = 0, b = OP_MAX_ROWS + 1;
    while (a < b) {
        int m = a + (b - a) / 2;
        double h = chf->origin[1] + (double)(m + lift) * chf->ch;
        if (strict ? h > y : h >= y)
            b = m;
        else
            a = m + 1;
    }
    return a;
}

/* Rows [*y0, *y1) a volume takes (§6.5): an area volume the floors py in [ymin, ymax]; an
 * obstacle the floors py <= ymax whose head py + walkable_height rows is above ymin. */
static void row_range(const op_chf *chf, const op_volume *v, int *y0, int *y1)
{
    if (v->mode == OP_VOLUME_OBSTACLE)
        *y0 = first_row_above(chf, chf->walkable_height, v->bmin[1], 1);
    else
        *y0 = first_row_above(chf, 0, v->bmin[1], 0);
    *y1 = first_row_above(chf, 0, v->bmax[1], 1);
}

/* box, when not NULL, widens to the cells [box[0], box[2]] x [box[1], box[3]] (x, z) of
 * every span changed. */
static int apply_one(op_chf *chf, const op_volume *v, int *box)
{
    double lo[2], hi[2];
    int y0, y1, changed = 0;
    op__volume_xz_bounds(v, lo, hi);
    row_range(chf, v, &y0, &y1);
    int x0 = first_centre_at_least(chf->origin[0], chf->cs, chf->width, lo[0]);
    int x1 = end_centre_at_most(chf->origin[0], chf->cs, chf->width, hi[0]);
    int z0 = first_centre_at_least(chf->origin[2], chf->cs, chf->depth, lo[1]);
    int z1 = end_centre_at_most(chf->origin[2], chf->cs, chf->depth, hi[1]);
    for (int z = z0; z < z1; z++)
        for (int x = x0; x < x1; x++) {
            int c = x + z * chf->width, cell_changed = 0;
            if (chf->cells[c] == chf->cells[c + 1])
                continue;
            double px = cell_centre(chf->origin[0], x, chf->cs);
            double pz = cell_centre(chf->origin[2], z, chf->cs);
            if (!inside_shape(v, px, pz))
                continue;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++)
                if (chf->areas[s] != OP_NULL_AREA && chf->y[s] >= y0 && chf->y[s] < y1 &&
                    chf->areas[s] != (uint8_t)v->area) {
                    chf->areas[s] = (uint8_t)v->area;
                    cell_changed = 1;
                }
            if (cell_changed && box) {
                box[0] = x < box[0] ? x : box[0];
                box[1] = z < box[1] ? z : box[1];
                box[2] = x > box[2] ? x : box[2];
                box[3] = z > box[3] ? z : box[3];
            }
            changed |= cell_changed;
        }
    return changed;
}

int op__volumes_apply_valid(op_chf *chf, const op_volume *vols, int nvols, op_volume_mode mode,
                            int box[4])
{
    int changed = 0;
    if (box)
        box[0] = chf->width, box[1] = chf->depth, box[2] = box[3] = -1;
    for (int i = 0; i < nvols; i++)
        if (vols[i].mode == mode)
            changed |= apply_one(chf, &vols[i], box);
    if (changed)
        chf->dist = NULL; /* areas changed: a distance field built before is stale */
    return changed;
}

op_status op__volumes_validate(const op_volume *vols, int nvols, op_err *err)
{
    if (nvols < 0)
        return op_err_set(err, OP_EINVAL, "volumes: nvols = %d is negative", nvols);
    if (nvols > 0 && !vols)
        return op_err_set(err, OP_EINVAL, "volumes: vols is NULL with nvols = %d", nvols);
    for (int i = 0; i < nvols; i++) {
        op_status st = validate_one(&vols[i], i, err);
        if (st != OP_OK)
            return st;
    }
    return OP_OK;
}

op_status op_volumes_apply(op_chf *chf, const op_volume *vols, int nvols, op_volume_mode mode,
                           op_err *err)
{
    op_status st = op__volumes_validate(vols, nvols, err);
    if (st != OP_OK)
        return st;
    if ((int)mode != OP_VOLUME_AREA && (int)mode != OP_VOLUME_OBSTACLE)
        return op_err_set(err, OP_EINVAL, "volumes: mode = %d is unknown", (int)mode);
    op__volumes_apply_valid(chf, vols, nvols, mode, NULL);
    return OP_OK;
}
