/*
 * Contours, step 2: simplification of one loop (build3d-regions.md §6, steps 1-3).
 *
 * Input: a raw loop (one vertex per unit boundary edge). Output: a subset of its
 * vertices in loop order: the portals (neighbour changes), the Douglas-Peucker
 * refinement of every stretch between them (region borders of the same area left as
 * chords while straight region borders are on), the wall-length split, and the
 * merging of equal consecutive vertices; then the two fallbacks (MaxError 0, raw loop).
 *
 * Invariants: the result keeps every portal and has the raw loop's orientation; a
 * stretch's decisions depend only on its two ends and its vertices, and distance ties
 * go to the smaller (x, z), so both sides of a shared boundary decide alike.
 * Cost: O(n * kept) per loop like Recast's simplifyContour; the crossing test is a
 * sort-and-sweep, near O(m log m) on real loops.
 */
#include <string.h>

#include "contours_internal.h"

int64_t op__loop_area2(const op_contour_vert *v, int n)
{
    int64_t a = 0;
    for (int i = 0, j = n - 1; i < n; j = i++)
        a += (int64_t)v[j].x * v[i].z - (int64_t)v[i].x * v[j].z;
    return a;
}

/* ---- proper crossings ---- */

static int sgn(int64_t v)
{
    return (v > 0) - (v < 0);
}

static int cross_properly(const op_contour_vert *a, const op_contour_vert *b,
                          const op_contour_vert *c, const op_contour_vert *d)
{
    return sgn(op__orient(a, b, c)) * sgn(op__orient(a, b, d)) < 0 &&
           sgn(op__orient(c, d, a)) * sgn(op__orient(c, d, b)) < 0;
}

/* An edge's extent along the sweep axis (lo, hi) and the other axis (olo, ohi). */
typedef struct edge_box {
    int32_t lo, hi, olo, ohi;
    int i;
} edge_box;

static int box_before(const edge_box *a, const edge_box *b)
{
    return a->lo < b->lo || (a->lo == b->lo && a->i < b->i);
}

/* Bottom-up merge sort by (lo, i) with a buffer of n (qsort may call malloc). */
static edge_box *sort_boxes(edge_box *a, edge_box *tmp, int n)
{
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = box_before(&a[j], &a[i]) ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        edge_box *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

#define SMALL_LOOP 12 /* below this, test every pair */

static int boxes_apart(const op_contour_vert *a, const op_contour_vert *b, const op_contour_vert *c,
                       const op_contour_vert *d)
{
    return (a->x < c->x && a->x < d->x && b->x < c->x && b->x < d->x) ||
           (a->x > c->x && a->x > d->x && b->x > c->x && b->x > d->x) ||
           (a->z < c->z && a->z < d->z && b->z < c->z && b->z < d->z) ||
           (a->z > c->z && a->z > d->z && b->z > c->z && b->z > d->z);
}

static int crosses_small(const op_contour_vert *v, int n)
{
    for (int i = 0; i < n; i++) {
        const op_contour_vert *a = &v[i], *b = &v[(i + 1) % n];
        for (int j = i + 2; j < n; j++) {
            const op_contour_vert *c = &v[j], *d = &v[(j + 1) % n];
            if (!boxes_apart(a, b, c, d) && cross_properly(a, b, c, d))
                return 1;
        }
    }
    return 0;
}

op_status op__loop_crosses(const op_contour_vert *v, int n, op_arena *scratch, int *crosses,
                           op_err *err)
{
    if (n < SMALL_LOOP) {
        *crosses = crosses_small(v, n);
        return OP_OK;
    }
    int32_t x0 = v[0].x, x1 = v[0].x, z0 = v[0].z, z1 = v[0].z;
    for (int i = 1; i < n; i++) {
        x0 = v[i].x < x0 ? v[i].x : x0;
        x1 = v[i].x > x1 ? v[i].x : x1;
        z0 = v[i].z < z0 ? v[i].z : z0;
        z1 = v[i].z > z1 ? v[i].z : z1;
    }
    int along_x = (x1 - x0) >= (z1 - z0); /* sweep the longer axis: fewer overlaps */
    op_arena_mark mark = op_arena_get_mark(scratch);
    edge_box *e = op_arena_alloc(scratch, (size_t)n * sizeof *e);
    edge_box *tmp = op_arena_alloc(scratch, (size_t)n * sizeof *tmp);
    if (!e || !tmp)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (%zu bytes, crossing test)",
                          2 * (size_t)n * sizeof *e);
    for (int i = 0; i < n; i++) {
        const op_contour_vert *a = &v[i], *b = &v[(i + 1) % n];
        int32_t ax = along_x ? a->x : a->z, bx = along_x ? b->x : b->z;
        int32_t az = along_x ? a->z : a->x, bz = along_x ? b->z : b->x;
        e[i] = (edge_box){ax < bx ? ax : bx, ax < bx ? bx : ax, az < bz ? az : bz,
                          az < bz ? bz : az, i};
    }
    e = sort_boxes(e, tmp, n);
    int found = 0;
    for (int i = 0; i < n && !found; i++)
        for (int j = i + 1; j < n && e[j].lo <= e[i].hi; j++) {
            if (e[j].olo > e[i].ohi || e[j].ohi < e[i].olo)
                continue;
            int p = e[i].i, q = e[j].i;
            if (cross_properly(&v[p], &v[(p + 1) % n], &v[q], &v[(q + 1) % n])) {
                found = 1;
                break;
            }
        }
    op_arena_release(scratch, mark);
    *crosses = found;
    return OP_OK;
}

/* ---- one simplification pass ---- */

/* Squared distance of p to the segment a b: perpendicular, or to the nearer end when
 * the foot falls outside. Integers, then one IEEE double multiply and divide. */
static double seg_dist2(const op_contour_vert *a, const op_contour_vert *b,
                        const op_contour_vert *p)
{
    int64_t dx = (int64_t)b->x - a->x, dz = (int64_t)b->z - a->z;
    int64_t qx = (int64_t)p->x - a->x, qz = (int64_t)p->z - a->z;
    int64_t t = qx * dx + qz * dz;
    if (t <= 0)
        return (double)(qx * qx + qz * qz);
    int64_t len2 = dx * dx + dz * dz;
    if (t >= len2) {
        int64_t rx = (int64_t)p->x - b->x, rz = (int64_t)p->z - b->z;
        return (double)(rx * rx + rz * rz);
    }
    double c = (double)(qx * dz - qz * dx);
    return c * c / (double)len2;
}

typedef struct pass_params {
    double e2;      /* MaxError squared */
    int64_t edge2;  /* MaxEdgeLength squared, 0 = no split */
    int straight;   /* leave same-area region borders as chords */
    int region;     /* the loop's region */
    int border_reg; /* BorderRegion */
} pass_params;

typedef struct pass_work {
    uint8_t *keep; /* n flags */
    int *stack;    /* 4n ints: pairs (a, b), b unwrapped */
    int *noted;    /* 2n ints: the stretches to record (a, b), with a record only */
} pass_work;

static int is_chord_stretch(const pass_params *pp, const op_regions *regs, int32_t nb)
{
    return pp->straight && nb > 0 && nb != pp->border_reg && nb <= regs->region_count &&
           regs->region_area[nb] == regs->region_area[pp->region];
}

/* A band vertex between two band edges that turns: a corner of the tile core. Band
 * edges lie on the tile lines, so a stretch of them turns only there; keeping the
 * corner keeps each piece on its line (docs/spec/clarifications.md, "Band corners"). */
static int band_corner(const op_contour_vert *v, int n, int i, int32_t band)
{
    const op_contour_vert *p = &v[i == 0 ? n - 1 : i - 1], *c = &v[i], *q = &v[(i + 1) % n];
    if (band <= 0 || c->neighbour != band || p->neighbour != band)
        return 0;
    return op__orient(p, c, q) != 0;
}

/* Step 1: portals (and band corners), or the lexicographically smallest and largest
 * vertices. */
static void keep_portals(const op_contour_vert *v, int n, int32_t band, uint8_t *keep)
{
    int any = 0;
    for (int i = 0; i < n; i++) {
        keep[i] =
            v[i].neighbour != v[i == 0 ? n - 1 : i - 1].neighbour || band_corner(v, n, i, band);
        any |= keep[i];
    }
    if (any)
        return;
    int lo = 0, hi = 0;
    for (int i = 1; i < n; i++) {
        if (op__cmp_xz(&v[i], &v[lo]) < 0)
            lo = i;
        if (op__cmp_xz(&v[i], &v[hi]) > 0)
            hi = i;
    }
    keep[lo] = keep[hi] = 1;
}

/* Step 2 on stretch a -> b (b unwrapped, b > a + 1): the vertex to keep, or -1. */
static int refine_pick(const op_contour_vert *v, int n, const pass_params *pp, int a, int b)
{
    const op_contour_vert *va = &v[a % n], *vb = &v[b % n];
    double best = -1.0;
    int bi = -1, bidx = 0;
    /* idx = k % n, stepped without a division per vertex */
    for (int k = a + 1, idx = (a + 1) % n; k < b; k++, idx = idx + 1 == n ? 0 : idx + 1) {
        const op_contour_vert *p = &v[idx];
        double d = seg_dist2(va, vb, p);
        if (d > best || (d == best && op__cmp_xz(p, &v[bidx]) < 0)) {
            best = d;
            bi = k;
            bidx = idx;
        }
    }
    if (best > pp->e2)
        return bi;
    if (pp->edge2 > 0 && va->neighbour == 0) {
        int64_t dx = (int64_t)vb->x - va->x, dz = (int64_t)vb->z - va->z;
        if (dx * dx + dz * dz > pp->edge2)
            return (a + b) / 2;
    }
    return -1;
}

/* One pass of steps 1-3. Returns the vertex count written to out; *chords is set when
 * the straight-border rule left a stretch with inner vertices unrefined. */
static int simplify_pass(const op_contour_vert *v, int n, const pass_params *pp,
                         const op__simplify_ctx *ctx, pass_work *w, op_contour_vert *out,
                         int *chords, int record)
{
    const op_regions *regs = ctx->regs;
    uint8_t *keep = w->keep;
    keep_portals(v, n, pp->border_reg, keep);
    int top = 0, noted = 0;
    int first = 0;
    while (!keep[first])
        first++;
    for (int a = first; a < first + n;) {
        int b = a + 1, bw = b % n; /* bw = b % n */
        while (!keep[bw]) {
            b++;
            bw = bw + 1 == n ? 0 : bw + 1;
        }
        /* §5.13: a long stretch that is refined (no chord) may be the base's; keep[] of
         * its inner vertices is then the base's refinement, and it is not refined here.
         * Its wall flag is its start's neighbour value being 0 (every vertex but its end
         * carries the start's value: a change would be a portal). */
        if (b - a >= OP__STRETCH_MIN && (ctx->stretches || (record && ctx->rec)) &&
            !is_chord_stretch(pp, regs, v[a % n].neighbour)) {
            int wall = v[a % n].neighbour == 0;
            if (op__stretch_find(ctx->stretches, pp->e2, pp->edge2, v, n, a, b, wall, keep)) {
                if (ctx->reused)
                    ++*ctx->reused;
                a = b;
                continue;
            }
            if (record && ctx->rec) {
                w->noted[noted++] = a;
                w->noted[noted++] = b;
            }
        }
        w->stack[top++] = a;
        w->stack[top++] = b;
        a = b;
    }
    *chords = 0;
    while (top > 0) {
        int b = w->stack[--top], a = w->stack[--top];
        if (b - a < 2)
            continue;
        if (is_chord_stretch(pp, regs, v[a % n].neighbour)) {
            *chords = 1;
            continue;
        }
        int m = refine_pick(v, n, pp, a, b);
        if (m < 0)
            continue;
        keep[m % n] = 1;
        w->stack[top++] = a;
        w->stack[top++] = m;
        w->stack[top++] = m;
        w->stack[top++] = b;
    }
    /* Each noted stretch's keep flags are final now: its refinement stays inside it. */
    for (int i = 0; i < noted; i += 2)
        op__stretch_rec_add(ctx->rec, v, n, w->noted[i], w->noted[i + 1],
                            v[w->noted[i] % n].neighbour == 0, keep);
    /* Step 3: merge equal consecutive vertices; the first keeps its place and takes the
     * neighbour of the last one of the run (the edge that leaves the position). */
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        if (m > 0 && op__same_xz(&out[m - 1], &v[i]))
            out[m - 1].neighbour = v[i].neighbour;
        else
            out[m++] = v[i];
    }
    while (m > 1 && op__same_xz(&out[m - 1], &out[0]))
        m--;
    return m;
}

static int degenerate(const op_contour_vert *v, int m, int64_t raw_area2)
{
    if (m < 3)
        return 1;
    int64_t a = op__loop_area2(v, m);
    return a == 0 || (a > 0) != (raw_area2 > 0);
}

op_status op__simplify_loop(const op__simplify_ctx *ctx, const op_contour_vert *raw, int n,
                            int64_t raw_area2, int region, op_contour_vert *out, int *nout,
                            int *fallback)
{
    const op_contour_settings *cs = ctx->cs;
    *fallback = 0;
    op_arena_mark mark = op_arena_get_mark(ctx->scratch);
    pass_work w;
    w.keep = op_arena_alloc(ctx->scratch, (size_t)n);
    w.stack = op_arena_alloc(ctx->scratch, (size_t)n * 4 * sizeof *w.stack);
    w.noted = ctx->rec ? op_arena_alloc(ctx->scratch, (size_t)n * 2 * sizeof *w.noted) : NULL;
    if (!w.keep || !w.stack || (ctx->rec && !w.noted))
        return op_err_set(ctx->err, OP_ENOMEM, "contours: out of memory (loop of %d vertices)", n);
    pass_params pp = {cs->max_error * cs->max_error,
                      (int64_t)cs->max_edge_length * cs->max_edge_length,
                      cs->straight_region_borders && cs->max_error > 0, region, cs->border_region};
    int chords = 0, crosses = 0;
    /* Only the first pass is recorded: its settings are the record's (§5.13). */
    int m = simplify_pass(raw, n, &pp, ctx, &w, out, &chords, 1);
    op_status st = OP_OK;
    if (degenerate(out, m, raw_area2)) {
        pass_params exact = pp;
        exact.e2 = 0.0;
        exact.straight = 0;
        m = simplify_pass(raw, n, &exact, ctx, &w, out, &chords, 0);
        *fallback = degenerate(out, m, raw_area2);
    } else if (pp.straight) {
        st = op__loop_crosses(out, m, ctx->scratch, &crosses, ctx->err);
        if (st == OP_OK && crosses) {
            /* Without any chord the refined pass gives the same loop: go raw at once. */
            *fallback = !chords;
            if (chords) {
                pass_params refined = pp;
                refined.straight = 0;
                m = simplify_pass(raw, n, &refined, ctx, &w, out, &chords, 0);
                if (degenerate(out, m, raw_area2))
                    *fallback = 1;
                else
                    st = op__loop_crosses(out, m, ctx->scratch, fallback, ctx->err);
            }
        }
    }
    if (st == OP_OK && *fallback) {
        memcpy(out, raw, (size_t)n * sizeof *out);
        m = n;
    }
    op_arena_release(ctx->scratch, mark);
    *nout = m;
    return st;
}
