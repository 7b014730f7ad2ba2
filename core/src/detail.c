/*
 * Height detail (build3d-polys.md §4), entry and output.
 *
 * Input: the tile's polygons (op_poly_mesh, cells), the compact heightfield with region
 * ids, the detail settings and the tile's lowest vertex row. Output: op_detail_mesh, per
 * polygon the extra vertices (tile-local float32, creation order: edge points, then
 * inserted samples) and the triangles (three local vertex indices and an edge-flag byte).
 * Steps per polygon, in polygon order: hull ring (polygon vertices and edge points),
 * ear clipping and Lawson flips, interior samples, refinement (detail_samples.c,
 * detail_delaunay.c). Detail is off (the ring is the polygon alone, no samples) when
 * sd = sample_distance / cs <= 0.9.
 * Invariants: at most 255 vertices per polygon (OP_MAX_DETAIL_VERTS); more than
 * OP_MAX_DETAIL_TRIS triangles in one polygon is OP_ELIMIT.
 * Choices where §4 is silent (all deterministic, tested by hand-made cases):
 * - Fractional cells/rows (edge points, samples, interpolated rows) map to float32 by the
 *   Local/LocalY formulas extended to doubles (exact 0 / TileSize at the tile edges).
 * - Douglas–Peucker deviation: |row_k - chord row at step k|, in rows.
 * - Ear clipping keeps its head until the head itself is clipped (then its successor);
 *   an ear is emitted as (prev, ear, next), the last three as (prev(head), head, next).
 * - Lawson: the initial stack holds each interior edge once, at its first occurrence in
 *   triangle/edge order; a flip of a->b (apexes c, d) rewrites the triangles as
 *   (a, d, c) and (b, c, d) and pushes a->d, d->b, b->c, c->a.
 * - Insertion: inside t = (a, b, c) gives t = (a, b, p), new (b, c, p), (c, a, p), pushing
 *   a->b, b->c, c->a; on interior edge a->b of t (apex c) and its neighbour (apex d):
 *   t = (a, p, c), new (p, b, c), neighbour = (b, p, d), new (p, a, d), pushing b->c, c->a,
 *   a->d, d->b.
 * - Point location skips triangles of zero area (a forced/relaxed ear can make one).
 * - Detail off still runs the hull triangulation with its Lawson flips.
 * Memory: one workspace (op__dt, a 128 KiB edge map initialised row by row as vertex
 * ids come into use, the flip stack (8 KiB, widened to 1 MiB only for a polygon that
 * overflows it: op__detail_build_stack lets tests shrink both sizes), edge-walk buffers)
 * and per-polygon samples in scratch; results accumulate in scratch and are copied to
 * out at the end. Typical sizes: hundreds of polygons, a few triangles each.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onepath/limits.h"

#include "detail_internal.h"

/* Growable result arrays in scratch (doubling; the copy to out is exact-sized). */
typedef struct acc {
    float *verts;
    int nverts, vcap;
    uint8_t *tris;
    int ntris, tcap;
} acc;

typedef struct work {
    op__dt *dt;
    op__edge_work ew;
    uint8_t ring[OP__DT_MAXV];
    acc out;
    op__detail_stack *stack; /* sizes; counts the rebuilds */
    /* Per computed polygon, from sizing the workspace (work_bounds), so that the ring and
     * the samples do not compute them again: edge steps (nvp a polygon) and the sample
     * bound. NULL when no polygon is computed. */
    int32_t *steps;
    int32_t *bound;
} work;

OP_COLD static op_status nomem(op_err *err, size_t bytes)
{
    return op_err_set(err, OP_ENOMEM, "detail: out of memory (%zu bytes)", bytes);
}

static op_status check_args(const op_poly_mesh *mesh, const op_chf *chf, const op_regions *regs,
                            const op_detail_settings *ds, op_detail_mesh *dm, op_err *err)
{
    if (!mesh || !chf || !regs || !ds || !dm)
        return op_err_set(err, OP_EINVAL, "detail: NULL argument");
    if (!(isfinite(ds->sample_distance) && ds->sample_distance >= 0.0))
        return op_err_set(err, OP_ERANGE, "detail: sample_distance %g out of range",
                          ds->sample_distance);
    if (!(isfinite(ds->max_error) && ds->max_error >= 0.0))
        return op_err_set(err, OP_ERANGE, "detail: max_error %g out of range", ds->max_error);
    if (ds->walkable_climb < 0)
        return op_err_set(err, OP_ERANGE, "detail: walkable_climb %d < 0", ds->walkable_climb);
    if (!(mesh->frame.cs > 0.0 && mesh->frame.ch > 0.0))
        return op_err_set(err, OP_EINVAL, "detail: frame cs %g ch %g not positive", mesh->frame.cs,
                          mesh->frame.ch);
    if (mesh->nvp < OP_MIN_VERTS_PER_POLY || mesh->nvp > OP_MAX_VERTS_PER_POLY)
        return op_err_set(err, OP_ERANGE, "detail: %d vertices per polygon out of [%d, %d]",
                          mesh->nvp, OP_MIN_VERTS_PER_POLY, OP_MAX_VERTS_PER_POLY);
    if (mesh->nverts < 0 || mesh->nverts > OP_MAX_TILE_MESH_VERTS)
        return op_err_set(err, OP_EINVAL, "detail: %d mesh vertices outside 0..%d", mesh->nverts,
                          OP_MAX_TILE_MESH_VERTS);
    for (size_t i = 0; i < (size_t)mesh->npolys * (size_t)mesh->nvp; i++)
        if (mesh->polys[i] != OP_POLY_MESH_NULL && mesh->polys[i] >= (uint32_t)mesh->nverts)
            return op_err_set(err, OP_EINVAL, "detail: polygon %zu vertex %u >= %d vertices",
                              i / (size_t)mesh->nvp, mesh->polys[i], mesh->nverts);
    if (!regs->reg || regs->span_count != chf->span_count)
        return op_err_set(err, OP_EINVAL, "detail: %u region ids for %u spans", regs->span_count,
                          chf->span_count);
    return OP_OK;
}

static int poly_nverts(const op_poly_mesh *mesh, int p)
{
    int n = 0;
    while (n < mesh->nvp &&
           mesh->polys[(size_t)p * (size_t)mesh->nvp + (size_t)n] != OP_POLY_MESH_NULL)
        n++;
    return n;
}

/* What one tile's polygons need of the per-polygon workspace, so that its scratch is sized
 * by the tile and not by the limits: the longest edge walk (points 0..steps) and the most
 * vertices a polygon's triangulation can reach (its vertices, every point of its edge
 * walks, its interior samples; at most OP__DT_MAXV). Edge-map rows and walk arrays
 * beyond these are never touched. */
static void work_bounds(const op_poly_mesh *mesh, const int *from_base, double sd, int *max_steps,
                        int *max_verts, size_t *walked, size_t *walk_points, int32_t *psteps,
                        int32_t *pbound)
{
    int detail = sd > 0.9, steps = 0, verts = 3;
    *walked = *walk_points = 0;
    for (int p = 0; p < mesh->npolys; p++) {
        if (from_base && from_base[p] >= 0)
            continue; /* copied, not computed */
        int n = poly_nverts(mesh, p);
        if (n < 3)
            continue;
        long nv = n;
        for (int k = 0; k < n && detail; k++) {
            int ns = op__detail_edge_steps(mesh, p, k, n, sd);
            psteps[(size_t)p * (size_t)mesh->nvp + (size_t)k] = ns;
            steps = ns > steps ? ns : steps;
            nv += ns > 1 ? ns - 1 : 0;
            *walked += ns > 0;
            *walk_points += ns > 1 ? (size_t)ns - 1 : 0;
        }
        if (detail) {
            int b = op__detail_sample_bound(mesh, p, n, sd);
            pbound[p] = b;
            nv = b < 0 || b > OP__DT_MAXV ? OP__DT_MAXV : nv + b;
        }
        nv = nv > OP__DT_MAXV ? OP__DT_MAXV : nv;
        verts = (int)nv > verts ? (int)nv : verts;
    }
    *max_steps = steps;
    *max_verts = verts;
}

static op_status work_init(work *w, const op_poly_mesh *mesh, const int *from_base, double sd,
                           op__detail_stack *stack, op_arena *scratch, op_err *err)
{
    int max_steps, max_verts;
    size_t walked, walk_points;
    memset(w, 0, sizeof *w);
    w->steps =
        op_arena_alloc(scratch, ((size_t)mesh->npolys * (size_t)mesh->nvp + 1) * sizeof *w->steps);
    w->bound = op_arena_alloc(scratch, ((size_t)mesh->npolys + 1) * sizeof *w->bound);
    if (!w->steps || !w->bound)
        return nomem(err, (size_t)mesh->npolys * ((size_t)mesh->nvp + 1) * 4);
    work_bounds(mesh, from_base, sd, &max_steps, &max_verts, &walked, &walk_points, w->steps,
                w->bound);
    size_t steps = (size_t)max_steps + 1;
    size_t edge_bytes = (size_t)max_verts * 256 * sizeof(uint16_t);
    w->stack = stack;
    /* Not zeroed as a whole (8 KB a tile build): the vertex and triangle arrays are written
     * before they are read (ids below nv and nt only); the counters and the per-triangle
     * marks the refinement reads are set here. */
    w->dt = op_arena_alloc(scratch, sizeof *w->dt);
    if (!w->dt)
        return nomem(err, sizeof *w->dt);
    w->dt->nv = w->dt->npoly = w->dt->nt = 0;
    w->dt->nstack = 0;
    w->dt->overflow = 0;
    memset(w->dt->changed, 0, sizeof w->dt->changed);
    w->dt->edge = op_arena_alloc(scratch, edge_bytes);
    w->dt->stack = op_arena_alloc(scratch, (size_t)stack->start * 2);
    w->ew.x = op_arena_alloc(scratch, steps * sizeof(double));
    w->ew.z = op_arena_alloc(scratch, steps * sizeof(double));
    w->ew.row = op_arena_alloc(scratch, steps * sizeof(double));
    w->ew.keep = op_arena_alloc(scratch, steps);
    w->ew.stack = op_arena_alloc(scratch, steps * 2 * sizeof(int[2]));
    if (!w->dt->edge || !w->dt->stack || !w->ew.x || !w->ew.z || !w->ew.row || !w->ew.keep ||
        !w->ew.stack)
        return nomem(err, (size_t)stack->start * 2 + edge_bytes + steps * 41);
    /* The edge-walk cache (op__edge_work): room for every walk's points up to a cap that
     * keeps a tile's scratch small (past it, walks are simply not cached). */
    if (walked > 0) {
        uint32_t slots = 16;
        while (slots < 2 * walked)
            slots *= 2;
        w->ew.ccap = walk_points < OP__EDGE_CACHE_POINTS ? walk_points : OP__EDGE_CACHE_POINTS;
        w->ew.cmask = slots - 1;
        w->ew.ckey = op_arena_calloc(scratch, slots, sizeof *w->ew.ckey);
        w->ew.cfirst = op_arena_alloc(scratch, slots * sizeof *w->ew.cfirst);
        w->ew.ccount = op_arena_alloc(scratch, slots * sizeof *w->ew.ccount);
        w->ew.cpts = op_arena_alloc(scratch, (w->ew.ccap + 1) * 3 * sizeof(double));
        if (!w->ew.ckey || !w->ew.cfirst || !w->ew.ccount || !w->ew.cpts)
            return nomem(err, (size_t)slots * 16 + w->ew.ccap * 24);
    }
    w->dt->rows_ready = 0; /* rows are initialised as vertices appear */
    w->dt->stack_cap = stack->start;
    return OP_OK;
}

/* Samples and refinement of polygon p (samples live in scratch until the mark). */
static op_status refine_poly(work *w, const op_poly_mesh *mesh, int p, int n, const op_chf *chf,
                             const op_regions *regs, const op_detail_settings *ds, double sd,
                             int min_row, op_arena *scratch, op_err *err)
{
    int bound = w->bound[p]; /* op__detail_sample_bound(mesh, p, n, sd), from work_bounds */
    if (bound < 0)
        return op_err_set(err, OP_ELIMIT, "detail: polygon %d needs too many samples", p);
    op_arena_mark mark = op_arena_get_mark(scratch);
    op__samples s;
    size_t nb = (size_t)bound;
    s.x = op_arena_alloc(scratch, nb * sizeof(double));
    s.y = op_arena_alloc(scratch, nb * sizeof(double));
    s.z = op_arena_alloc(scratch, nb * sizeof(double));
    s.err = op_arena_alloc(scratch, nb * sizeof(double));
    s.tri = op_arena_alloc(scratch, nb * sizeof(int16_t));
    if (!s.x || !s.y || !s.z || !s.err || !s.tri)
        return nomem(err, nb * 34);
    op__detail_samples(mesh, p, n, chf, regs->reg, ds, sd, min_row, &s);
    op__dt_refine(w->dt, &s, ds->max_error);
    op_arena_release(scratch, mark);
    return OP_OK;
}

/* Makes room for need elements in *p (capacity *cap); 0 on exhaustion. */
static int grow(op_arena *a, void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 1;
    int ncap = *cap ? *cap : 256;
    while (ncap < need)
        ncap *= 2;
    void *q = *p ? op_arena_grow(a, *p, (size_t)*cap * elem, (size_t)ncap * elem)
                 : op_arena_alloc(a, (size_t)ncap * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = ncap;
    return 1;
}

/* Appends polygon p's extras and triangles (with edge flags) to the accumulators. */
static op_status emit_poly(work *w, int p, op_arena *scratch, op_detail_mesh *dm, op_err *err)
{
    op__dt *dt = w->dt;
    acc *o = &w->out;
    int extras = dt->nv - dt->npoly;
    if (dt->nt > OP_MAX_DETAIL_TRIS)
        return op_err_set(err, OP_ELIMIT, "detail: polygon %d has %d triangles > %d", p, dt->nt,
                          OP_MAX_DETAIL_TRIS);
    void *vp = o->verts, *tp = o->tris;
    if (!grow(scratch, &vp, &o->vcap, (o->nverts + extras) * 3, sizeof(float)))
        return nomem(err, (size_t)(o->nverts + extras) * 24);
    o->verts = vp;
    if (!grow(scratch, &tp, &o->tcap, (o->ntris + dt->nt) * 4, 1))
        return nomem(err, (size_t)(o->ntris + dt->nt) * 8);
    o->tris = tp;
    uint32_t *m = &dm->meshes[(size_t)p * 4];
    m[0] = (uint32_t)o->nverts;
    m[1] = (uint32_t)extras;
    m[2] = (uint32_t)o->ntris;
    m[3] = (uint32_t)dt->nt;
    for (int i = dt->npoly; i < dt->nv; i++, o->nverts++) {
        o->verts[o->nverts * 3 + 0] = (float)dt->x[i];
        o->verts[o->nverts * 3 + 1] = (float)dt->y[i];
        o->verts[o->nverts * 3 + 2] = (float)dt->z[i];
    }
    for (int i = 0; i < dt->nt; i++, o->ntris++) {
        uint8_t flags = 0;
        for (int k = 0; k < 3; k++) {
            int a = dt->tri[i][k], b = dt->tri[i][(k + 1) % 3];
            if (dt->edge[(size_t)b * 256u + (size_t)a] == OP__DT_NONE)
                flags |= (uint8_t)(1u << k);
            o->tris[o->ntris * 4 + k] = dt->tri[i][k];
        }
        o->tris[o->ntris * 4 + 3] = flags;
    }
    return OP_OK;
}

/* Ring, hull and refinement of polygon p (n >= 3 vertices) into w->dt. */
static op_status triangulate_poly(work *w, const op_poly_mesh *mesh, int p, int n,
                                  const op_chf *chf, const op_regions *regs,
                                  const op_detail_settings *ds, int min_row, op_arena *scratch,
                                  op_err *err)
{
    double sd = ds->sample_distance / mesh->frame.cs;
    int detail = sd > 0.9;
    op__dt *dt = w->dt;
    dt->nt = 0;
    dt->nv = 0;
    dt->npoly = n;
    w->ew.psteps = &w->steps[(size_t)p * (size_t)mesh->nvp];
    int m =
        op__detail_ring(mesh, p, n, chf, regs->reg, ds, sd, min_row, detail, &w->ew, dt, w->ring);
    op__dt_ready_rows(dt);
    op__dt_hull(dt, w->ring, m);
    if (detail)
        return refine_poly(w, mesh, p, n, chf, regs, ds, sd, min_row, scratch, err);
    return OP_OK;
}

/* Replaces the small Lawson stack by one of cap entries after an overflow and forgets
 * the polygon's partial triangulation (the build is deterministic, so the polygon is
 * then built again from the start with the same result). */
static op_status widen_stack(op__dt *dt, int cap, op_arena *scratch, op_err *err)
{
    op__dt_clear(dt);
    dt->stack = op_arena_alloc(scratch, (size_t)cap * 2);
    if (!dt->stack)
        return nomem(err, (size_t)cap * 2);
    dt->stack_cap = cap;
    dt->nstack = 0;
    dt->overflow = 0;
    return OP_OK;
}

static op_status build_poly(work *w, const op_poly_mesh *mesh, int p, const op_chf *chf,
                            const op_regions *regs, const op_detail_settings *ds, int min_row,
                            op_arena *scratch, op_detail_mesh *dm, op_err *err)
{
    int n = poly_nverts(mesh, p);
    op__dt *dt = w->dt;
    dt->nt = 0;
    dt->nv = 0;
    dt->npoly = n;
    if (n >= 3) {
        op_status st = triangulate_poly(w, mesh, p, n, chf, regs, ds, min_row, scratch, err);
        if (st == OP_OK && dt->overflow && dt->stack_cap < w->stack->cap) {
            w->stack->rebuilds++;
            st = widen_stack(dt, w->stack->cap, scratch, err);
            if (st == OP_OK)
                st = triangulate_poly(w, mesh, p, n, chf, regs, ds, min_row, scratch, err);
        }
        if (st != OP_OK)
            return st;
        if (dt->overflow)
            return op_err_set(err, OP_ELIMIT, "detail: polygon %d flip stack over %d", p,
                              dt->stack_cap);
    }
    op_status st = emit_poly(w, p, scratch, dm, err);
    op__dt_clear(dt);
    return st;
}

static op_status copy_out(const acc *o, op_arena *out, op_detail_mesh *dm, op_err *err)
{
    dm->nverts = o->nverts;
    dm->ntris = o->ntris;
    dm->verts = op_arena_alloc(out, (size_t)o->nverts * 3 * sizeof(float));
    dm->tris = op_arena_alloc(out, (size_t)o->ntris * 4);
    if (!dm->verts || !dm->tris)
        return nomem(err, (size_t)o->nverts * 12 + (size_t)o->ntris * 4);
    if (o->nverts)
        memcpy(dm->verts, o->verts, (size_t)o->nverts * 3 * sizeof(float));
    if (o->ntris)
        memcpy(dm->tris, o->tris, (size_t)o->ntris * 4);
    return OP_OK;
}

/* ---- reuse of a base's detail, per polygon (build3d-runtime.md §5.6) ---- */

/* Base polygons by their vertices: an open-addressing table of base indices + 1. */
typedef struct base_index {
    const op__detail_base *b;
    int *slot;
    uint32_t mask;
} base_index;

static const int32_t *vert_of(const op_poly_mesh *m, int p, int k)
{
    return &m->verts[3 * (size_t)m->polys[(size_t)p * (size_t)m->nvp + (size_t)k]];
}

static uint32_t poly_key(const op_poly_mesh *m, int p, int n)
{
    uint32_t h = 2166136261u ^ (uint32_t)n;
    for (int k = 0; k < n; k++) {
        const int32_t *v = vert_of(m, p, k);
        h = (h ^ (uint32_t)v[0]) * 16777619u;
        h = (h ^ (uint32_t)v[1]) * 16777619u;
        h = (h ^ (uint32_t)v[2]) * 16777619u;
    }
    return h ^ (h >> 15);
}

/* Rule 1: the base was computed on this field, frame, settings and minRow. */
static int base_fits(const op__detail_base *b, const op_poly_mesh *mesh, const op_chf *chf,
                     const op_regions *regs, const op_detail_settings *ds, int min_row)
{
    const op_tile_frame *f = &mesh->frame, *g = &b->mesh.frame;
    return b->cells == chf->cells && b->y == chf->y && b->width == chf->width &&
           b->depth == chf->depth && b->span_count == chf->span_count &&
           b->span_count == regs->span_count && b->reg && b->min_row == min_row &&
           b->mesh.nvp == mesh->nvp && f->border == g->border && f->tile_cells == g->tile_cells &&
           f->cs == g->cs && f->tile_size == g->tile_size && f->ch == g->ch &&
           b->ds.sample_distance == ds->sample_distance && b->ds.max_error == ds->max_error &&
           b->ds.walkable_climb == ds->walkable_climb && b->detail.npolys == b->mesh.npolys;
}

static op_status index_build(base_index *ix, const op__detail_base *b, op_arena *scratch,
                             op_err *err)
{
    uint32_t size = 16;
    while (size < 2u * (uint32_t)b->mesh.npolys)
        size *= 2;
    ix->b = b;
    ix->mask = size - 1;
    ix->slot = op_arena_calloc(scratch, size, sizeof *ix->slot);
    if (!ix->slot)
        return nomem(err, (size_t)size * sizeof *ix->slot);
    for (int q = 0; q < b->mesh.npolys; q++) {
        int n = poly_nverts(&b->mesh, q);
        if (n < 3)
            continue;
        uint32_t i = poly_key(&b->mesh, q, n) & ix->mask;
        while (ix->slot[i])
            i = (i + 1) & ix->mask;
        ix->slot[i] = q + 1;
    }
    return OP_OK;
}

/* Rule 3: at every interior sample point of p, a span of the cells its height lookup visits
 * has p's region exactly when it had q's in the base (detail_samples.c). */
static int same_membership(const op_poly_mesh *mesh, int p, int n, const op_chf *chf,
                           const uint16_t *reg, const op__detail_base *b, int q, double sd)
{
    const int32_t *v = vert_of(mesh, p, 0);
    int x0 = v[0], x1 = v[0], z0 = v[2], z1 = v[2];
    for (int k = 1; k < n; k++) {
        v = vert_of(mesh, p, k);
        x0 = v[0] < x0 ? v[0] : x0;
        x1 = v[0] > x1 ? v[0] : x1;
        z0 = v[2] < z0 ? v[2] : z0;
        z1 = v[2] > z1 ? v[2] : z1;
    }
    x0 = x0 - 1 < 0 ? 0 : x0 - 1;
    z0 = z0 - 1 < 0 ? 0 : z0 - 1;
    x1 = x1 > chf->width - 1 ? chf->width - 1 : x1;
    z1 = z1 > chf->depth - 1 ? chf->depth - 1 : z1;
    uint16_t r = mesh->regs[p], rb = b->mesh.regs[q];
    if (x0 > x1 || z0 > z1)
        return 1; /* no cell: nothing to compare */
    /* The common case first: the same id and the same ids in every span from the box's
     * first cell to its last, a superset of the spans every sample reads (the samples lie
     * strictly inside p's box, their lookups within one cell below it). */
    const uint32_t *cells = chf->cells;
    uint32_t a = cells[(size_t)z0 * (size_t)chf->width + (size_t)x0];
    uint32_t e = cells[(size_t)z1 * (size_t)chf->width + (size_t)x1 + 1];
    if (r == rb && memcmp(&reg[a], &b->reg[a], (size_t)(e - a) * sizeof *reg) == 0)
        return 1;
    return op__detail_samples_same_membership(mesh, p, n, chf, reg, b->reg, rb, sd);
}

/* The base polygon whose detail polygon p may copy (rules 2 and 3), or -1. same: the base
 * region whose span set p's region has (rule 3a), or 0 (unknown: rule 3 is scanned). */
static int find_base(const base_index *ix, const op_poly_mesh *mesh, int p, const op_chf *chf,
                     const uint16_t *reg, int same, double sd)
{
    int n = poly_nverts(mesh, p);
    if (n < 3)
        return -1;
    const op_poly_mesh *bm = &ix->b->mesh;
    for (uint32_t i = poly_key(mesh, p, n) & ix->mask; ix->slot[i]; i = (i + 1) & ix->mask) {
        int q = ix->slot[i] - 1, k = 0;
        if (poly_nverts(bm, q) != n)
            continue;
        while (k < n && memcmp(vert_of(mesh, p, k), vert_of(bm, q, k), 3 * sizeof(int32_t)) == 0)
            k++;
        /* Rule 3a: reg(s) = region(p) exactly when reg_base(s) = same, for every span. */
        if (k == n && ((same != 0 && bm->regs[q] == same) ||
                       same_membership(mesh, p, n, chf, reg, ix->b, q, sd)))
            return q;
    }
    return -1;
}

/* Appends the base's detail of polygon q as polygon p's (what emit_poly wrote for q). */
static op_status emit_copy(work *w, int p, const op_detail_mesh *bdm, int q, op_arena *scratch,
                           op_detail_mesh *dm, op_err *err)
{
    acc *o = &w->out;
    const uint32_t *bq = &bdm->meshes[(size_t)q * 4];
    int extras = (int)bq[1], nt = (int)bq[3];
    void *vp = o->verts, *tp = o->tris;
    if (!grow(scratch, &vp, &o->vcap, (o->nverts + extras) * 3, sizeof(float)))
        return nomem(err, (size_t)(o->nverts + extras) * 24);
    o->verts = vp;
    if (!grow(scratch, &tp, &o->tcap, (o->ntris + nt) * 4, 1))
        return nomem(err, (size_t)(o->ntris + nt) * 8);
    o->tris = tp;
    uint32_t *m = &dm->meshes[(size_t)p * 4];
    m[0] = (uint32_t)o->nverts;
    m[1] = (uint32_t)extras;
    m[2] = (uint32_t)o->ntris;
    m[3] = (uint32_t)nt;
    if (extras)
        memcpy(&o->verts[(size_t)o->nverts * 3], &bdm->verts[(size_t)bq[0] * 3],
               (size_t)extras * 3 * sizeof(float));
    if (nt)
        memcpy(&o->tris[(size_t)o->ntris * 4], &bdm->tris[(size_t)bq[2] * 4], (size_t)nt * 4);
    o->nverts += extras;
    o->ntris += nt;
    return OP_OK;
}

static op_status build_all(const op_poly_mesh *mesh, const op_chf *chf, const op_regions *regs,
                           const op_detail_settings *ds, int min_row, op__detail_stack *stack,
                           const op__detail_base *base, const uint16_t *kept_from, int *reused,
                           op_arena *out, op_arena *scratch, op_detail_mesh *dm, op_err *err)
{
    if (reused)
        *reused = 0;
    op_status st = check_args(mesh, chf, regs, ds, dm, err);
    if (st != OP_OK)
        return st;
    if (!stack || stack->start < 0 || stack->cap < stack->start)
        return op_err_set(err, OP_EINVAL, "detail: flip stack start %d, cap %d",
                          stack ? stack->start : -1, stack ? stack->cap : -1);
    stack->rebuilds = 0;
    memset(dm, 0, sizeof *dm);
    dm->npolys = mesh->npolys;
    dm->meshes = op_arena_calloc(out, (size_t)mesh->npolys * 4 + 1, sizeof(uint32_t));
    if (!dm->meshes)
        return nomem(err, (size_t)mesh->npolys * 16);
    op_arena_mark mark = op_arena_get_mark(scratch);
    /* from_base[p]: the base polygon whose detail p copies (§5.6), or -1 (computed). */
    int *from_base = NULL, computed = mesh->npolys;
    if (base && base_fits(base, mesh, chf, regs, ds, min_row)) {
        base_index ix = {0};
        double sd = ds->sample_distance / mesh->frame.cs; /* as triangulate_poly's */
        st = index_build(&ix, base, scratch, err);
        from_base = op_arena_alloc(scratch, ((size_t)mesh->npolys + 1) * sizeof *from_base);
        if (st == OP_OK && !from_base)
            st = nomem(err, ((size_t)mesh->npolys + 1) * sizeof *from_base);
        for (int p = 0; st == OP_OK && p < mesh->npolys; p++) {
            int r = mesh->regs[p];
            int same = kept_from && r <= regs->region_count ? kept_from[r] : 0;
            from_base[p] = find_base(&ix, mesh, p, chf, regs->reg, same, sd);
            computed -= from_base[p] >= 0;
        }
    }
    if (reused)
        *reused = mesh->npolys - computed;
    work w;
    memset(&w, 0, sizeof w);
    /* The workspace only when some polygon is computed; it is sized by those. */
    if (st == OP_OK && computed > 0)
        st = work_init(&w, mesh, from_base, ds->sample_distance / mesh->frame.cs, stack, scratch,
                       err);
    for (int p = 0; p < mesh->npolys && st == OP_OK; p++) {
        if (from_base && from_base[p] >= 0)
            st = emit_copy(&w, p, &base->detail, from_base[p], scratch, dm, err);
        else
            st = build_poly(&w, mesh, p, chf, regs, ds, min_row, scratch, dm, err);
    }
    if (st == OP_OK)
        st = copy_out(&w.out, out, dm, err);
    op_arena_release(scratch, mark);
    return st;
}

op_status op__detail_build_reuse(const op_poly_mesh *mesh, const op_chf *chf,
                                 const op_regions *regs, const op_detail_settings *ds, int min_row,
                                 const op__detail_base *base, const uint16_t *kept_from,
                                 int *reused, op_arena *out, op_arena *scratch, op_detail_mesh *dm,
                                 op_err *err)
{
    op__detail_stack stack = {OP__DT_STACK_START, OP__DT_STACK_CAP, 0};
    return build_all(mesh, chf, regs, ds, min_row, &stack, base, kept_from, reused, out, scratch,
                     dm, err);
}

op_status op__detail_build_stack(const op_poly_mesh *mesh, const op_chf *chf,
                                 const op_regions *regs, const op_detail_settings *ds, int min_row,
                                 op__detail_stack *stack, op_arena *out, op_arena *scratch,
                                 op_detail_mesh *dm, op_err *err)
{
    return build_all(mesh, chf, regs, ds, min_row, stack, NULL, NULL, NULL, out, scratch, dm, err);
}

op_status op_detail_build(const op_poly_mesh *mesh, const op_chf *chf, const op_regions *regs,
                          const op_detail_settings *ds, int min_row, op_arena *out,
                          op_arena *scratch, op_detail_mesh *dm, op_err *err)
{
    op__detail_stack stack = {OP__DT_STACK_START, OP__DT_STACK_CAP, 0};
    return op__detail_build_stack(mesh, chf, regs, ds, min_row, &stack, out, scratch, dm, err);
}

static int emitf(op_write_fn write, void *ctx, const char *fmt, ...)
{
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return write(ctx, buf, (size_t)n);
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

int op_detail_dump(const op_detail_mesh *dm, op_write_fn write, void *ctx)
{
    int rc =
        emitf(write, ctx, "detail polys %d verts %d tris %d\n", dm->npolys, dm->nverts, dm->ntris);
    for (int p = 0; p < dm->npolys && !rc; p++) {
        const uint32_t *m = &dm->meshes[(size_t)p * 4];
        rc = emitf(write, ctx, "poly %d: verts %u+%u tris %u+%u\n", p, m[0], m[1], m[2], m[3]);
        for (uint32_t i = m[0]; i < m[0] + m[1] && !rc; i++)
            rc = emitf(write, ctx, " v %08x %08x %08x\n", fbits(dm->verts[i * 3]),
                       fbits(dm->verts[i * 3 + 1]), fbits(dm->verts[i * 3 + 2]));
        for (uint32_t i = m[2]; i < m[2] + m[3] && !rc; i++)
            rc = emitf(write, ctx, " t %u %u %u %02x\n", dm->tris[i * 4], dm->tris[i * 4 + 1],
                       dm->tris[i * 4 + 2], dm->tris[i * 4 + 3]);
    }
    return rc;
}
