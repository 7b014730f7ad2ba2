/*
 * Contours (build3d-regions.md §6, §7): the entry point, hole assignment, output and
 * the canonical dump.
 *
 * Input: op_chf (mutual links) and op_regions (region per span, region areas).
 * Output: op_contour_set, one contour per outline ordered by region id then discovery
 * order, holes joined, counter-clockwise, >= 3 vertices; optionally the raw loops.
 * Steps: trace (contours_trace.c) -> simplify every loop (contours_simplify.c) ->
 * assign holes to the smallest containing outline of their region -> join them
 * (contours_holes.c) -> copy to the output arena.
 * Invariants: every region with spans gets at least one contour (its loops' areas sum
 * to twice its span count, so one is positive). Typical size: tens of contours and a
 * few thousand vertices per tile; scratch is O(boundary edges).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contours_internal.h"
#include "onepath/limits.h"

void op_contour_settings_default(op_contour_settings *cs)
{
    memset(cs, 0, sizeof *cs);
    cs->max_error = 1.3;
    cs->max_edge_length = 12;
    cs->straight_region_borders = 1;
    cs->border_region = 0;
    cs->keep_raw = 0;
}

op_status op_contour_settings_validate(const op_contour_settings *cs, op_err *err)
{
    if (!cs)
        return op_err_set(err, OP_EINVAL, "contours: settings NULL");
    if (!isfinite(cs->max_error))
        return op_err_set(err, OP_EINVAL, "contours: max_error = %g is not finite", cs->max_error);
    if (cs->max_error < 0)
        return op_err_set(err, OP_ERANGE, "contours: max_error = %.17g < 0", cs->max_error);
    if (cs->max_edge_length < 0)
        return op_err_set(err, OP_ERANGE, "contours: max_edge_length = %d < 0",
                          cs->max_edge_length);
    if (cs->straight_region_borders != 0 && cs->straight_region_borders != 1)
        return op_err_set(err, OP_ERANGE, "contours: straight_region_borders = %d is not 0 or 1",
                          cs->straight_region_borders);
    if (cs->border_region < 0 || cs->border_region > OP_MAX_REGIONS)
        return op_err_set(err, OP_ERANGE, "contours: border_region = %d is outside [0, %d]",
                          cs->border_region, OP_MAX_REGIONS);
    if (cs->keep_raw != 0 && cs->keep_raw != 1)
        return op_err_set(err, OP_ERANGE, "contours: keep_raw = %d is not 0 or 1", cs->keep_raw);
    if (cs->span_layer && (cs->layer < 0 || cs->layer >= OP_MAX_LAYERS))
        return op_err_set(err, OP_ERANGE, "contours: layer = %d is outside [0, %d)", cs->layer,
                          OP_MAX_LAYERS);
    op_err_clear(err);
    return OP_OK;
}

static op_status check_input(const op_chf *chf, const op_regions *regs, op_err *err)
{
    if (!chf || !regs)
        return op_err_set(err, OP_EINVAL, "contours: %s is NULL", chf ? "regions" : "field");
    if (regs->span_count != chf->span_count)
        return op_err_set(err, OP_EINVAL, "contours: regions cover %u spans, the field has %u",
                          regs->span_count, chf->span_count);
    if (regs->region_count < 0 || regs->region_count > OP_MAX_REGIONS)
        return op_err_set(err, OP_ERANGE, "contours: region_count = %d is outside [0, %d]",
                          regs->region_count, OP_MAX_REGIONS);
    if (chf->span_count > 0 && (!regs->reg || !regs->region_area))
        return op_err_set(err, OP_EINVAL, "contours: regions without arrays");
    return OP_OK;
}

/* Every span's id at most region_count: a pass of its own, unless a reuse plan's pass made
 * the check on the way (op__contour_plan.checked). */
static op_status check_ids(const op_chf *chf, const op_regions *regs, op_err *err)
{
    for (uint32_t s = 0; s < chf->span_count; s++)
        if (regs->reg[s] > regs->region_count)
            return op_err_set(err, OP_EINVAL, "contours: span %u has region %d > region_count %d",
                              s, regs->reg[s], regs->region_count);
    return OP_OK;
}

/* Everything the build carries between its steps. */
typedef struct build {
    const op_chf *chf;
    const op_regions *regs;
    const op_contour_settings *cs;
    op_arena *out, *scratch;
    op_err *err;
    op__loops loops;
    int64_t *raw_area2;
    int64_t *simp_area2;
    op_contour_vert *simp; /* simplified loops, loop i at loops.start[i] */
    int *nsimp;
    int *owner;  /* hole -> slot of its outline among its region's outlines, -1 = dropped */
    int *order;  /* loops by region, then discovery */
    int *rstart; /* region_count + 2: region r's loops are order[rstart[r] .. rstart[r + 1]) */
    op_contour_set *res;
    int *fallbacks, *dropped; /* region_count + 1: the counts of res charged to each region */
    int *first;               /* region_count + 2: region r's contours in res */
    const op__contour_base *base;
    const op__contour_plan *plan;     /* regions copied from base, or NULL */
    const op__stretch_set *stretches; /* §5.13: the base's, or NULL */
    op__contour_record *rec;          /* the caller's record, or NULL */
} build;

OP_COLD static op_status nomem(build *b, const char *what, size_t bytes)
{
    return op_err_set(b->err, OP_ENOMEM, "contours: out of memory (%zu bytes, %s)", bytes, what);
}

static op_status simplify_all(build *b)
{
    int n = b->loops.count;
    size_t total = b->loops.start[n];
    b->raw_area2 = op_arena_alloc(b->scratch, (size_t)n * sizeof *b->raw_area2 + 1);
    b->simp_area2 = op_arena_alloc(b->scratch, (size_t)n * sizeof *b->simp_area2 + 1);
    b->nsimp = op_arena_alloc(b->scratch, (size_t)n * sizeof *b->nsimp + 1);
    b->simp = op_arena_alloc(b->scratch, (total + 1) * sizeof *b->simp);
    if (!b->raw_area2 || !b->simp_area2 || !b->nsimp || !b->simp)
        return nomem(b, "simplified loops", (total + 1) * sizeof *b->simp);
    /* §5.13: a rebuild looks its stretches up in the base's record, whatever else of the
     * base fits (the refinement of a stretch reads its points and two settings only); a
     * capture records its own. */
    op__simplify_ctx ctx = {b->cs,
                            b->regs,
                            b->scratch,
                            b->err,
                            b->stretches,
                            NULL,
                            b->rec ? b->rec->stretches_reused : NULL};
    if (b->rec && b->rec->want_stretches) {
        const op_contour_settings *cs = b->cs;
        op_status st = op__stretch_rec_init(
            &b->rec->stretches, total, cs->max_error * cs->max_error,
            (int64_t)cs->max_edge_length * cs->max_edge_length, b->out, b->err);
        if (st != OP_OK)
            return st;
        ctx.rec = &b->rec->stretches;
    }
    for (int i = 0; i < n; i++) {
        const op_contour_vert *raw = &b->loops.verts[b->loops.start[i]];
        int len = (int)(b->loops.start[i + 1] - b->loops.start[i]);
        int fallback = 0;
        b->raw_area2[i] = op__loop_area2(raw, len);
        op_status st = op__simplify_loop(&ctx, raw, len, b->raw_area2[i], b->loops.region[i],
                                         &b->simp[b->loops.start[i]], &b->nsimp[i], &fallback);
        if (st != OP_OK)
            return st;
        b->res->raw_fallbacks += fallback;
        b->fallbacks[b->loops.region[i]] += fallback;
        b->simp_area2[i] = op__loop_area2(&b->simp[b->loops.start[i]], b->nsimp[i]);
    }
    return OP_OK;
}

/* Counting sort of the loops by region (stable: discovery order within a region). */
static op_status group_by_region(build *b)
{
    int n = b->loops.count, rc = b->regs->region_count;
    b->order = op_arena_alloc(b->scratch, (size_t)n * sizeof *b->order + 1);
    b->rstart = op_arena_calloc(b->scratch, (size_t)rc + 2, sizeof *b->rstart);
    b->owner = op_arena_alloc(b->scratch, (size_t)n * sizeof *b->owner + 1);
    if (!b->order || !b->rstart || !b->owner)
        return nomem(b, "loop order", (size_t)n * sizeof *b->order);
    for (int i = 0; i < n; i++)
        b->rstart[b->loops.region[i] + 1]++;
    for (int r = 0; r <= rc; r++)
        b->rstart[r + 1] += b->rstart[r];
    int *fill = op_arena_alloc(b->scratch, ((size_t)rc + 1) * sizeof *fill);
    if (!fill)
        return nomem(b, "loop order", ((size_t)rc + 1) * sizeof *fill);
    memcpy(fill, b->rstart, ((size_t)rc + 1) * sizeof *fill);
    for (int i = 0; i < n; i++)
        b->order[fill[b->loops.region[i]]++] = i;
    return OP_OK;
}

static const op_contour_vert *simp_of(const build *b, int i)
{
    return &b->simp[b->loops.start[i]];
}

/* The smallest outline (of outl[0..nout), by simplified area, lowest index on ties)
 * containing hole h's leftmost vertex: its slot, or -1. */
static int owner_of(const build *b, const int *outl, int nout, int h)
{
    const op_contour_vert *p = &simp_of(b, h)[op__leftmost(simp_of(b, h), b->nsimp[h])];
    int best = -1;
    for (int i = 0; i < nout; i++) {
        int o = outl[i];
        if (best >= 0 && b->simp_area2[o] >= b->simp_area2[outl[best]])
            continue;
        if (op__point_in_loop(simp_of(b, o), b->nsimp[o], p))
            best = i;
    }
    return best;
}

/* Join order: leftmost vertex (x, z) of the version being joined, then discovery. */
typedef struct hole_key {
    op_contour_vert p;
    int i;
} hole_key;

static int key_before(const hole_key *a, const hole_key *b)
{
    int c = op__cmp_xz(&a->p, &b->p);
    return c ? c < 0 : a->i < b->i;
}

/* Bottom-up merge sort (qsort may call malloc); the result is in a or tmp. */
static hole_key *sort_keys(hole_key *a, hole_key *tmp, int n)
{
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = key_before(&a[j], &a[i]) ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        hole_key *t = a;
        a = tmp;
        tmp = t;
    }
    return a;
}

static op__ring ring_of(const build *b, int i, int raw)
{
    if (raw)
        return (op__ring){&b->loops.verts[b->loops.start[i]],
                          (int)(b->loops.start[i + 1] - b->loops.start[i])};
    return (op__ring){simp_of(b, i), b->nsimp[i]};
}

/* Joins the outline's holes (simplified or raw versions) into dst. */
static op_status join_version(build *b, int o, const int *holes, int nh, int raw, hole_key *keys,
                              op__ring *rings, op_contour_vert *dst, int *m, int *joined)
{
    for (int k = 0; k < nh; k++) {
        op__ring h = ring_of(b, holes[k], raw);
        keys[k] = (hole_key){h.v[op__leftmost(h.v, h.n)], holes[k]};
    }
    const hole_key *sorted = sort_keys(keys, keys + nh, nh);
    for (int k = 0; k < nh; k++)
        rings[k] = ring_of(b, sorted[k].i, raw);
    return op__join_holes(ring_of(b, o, raw), rings, nh, b->loops.region[o], dst, m, joined,
                          b->scratch, b->err);
}

/* Builds the contour of outline o with its holes (loop indices, discovery order). */
static op_status build_outline(build *b, int o, const int *holes, int nh, op_contour *c)
{
    size_t cap = (size_t)(b->loops.start[o + 1] - b->loops.start[o]) + 2 * (size_t)nh;
    for (int k = 0; k < nh; k++)
        cap += b->loops.start[holes[k] + 1] - b->loops.start[holes[k]];
    op_arena_mark mark = op_arena_get_mark(b->scratch);
    op_contour_vert *dst = op_arena_alloc(b->scratch, cap * sizeof *dst);
    hole_key *keys = op_arena_alloc(b->scratch, 2 * (size_t)nh * sizeof *keys + 1);
    op__ring *rings = op_arena_alloc(b->scratch, (size_t)nh * sizeof *rings + 1);
    if (!dst || !keys || !rings)
        return nomem(b, "joined loop", cap * sizeof *dst);
    int m = 0, joined = 0, raw = 0, crosses = 0;
    op_status st = join_version(b, o, holes, nh, 0, keys, rings, dst, &m, &joined);
    if (st == OP_OK && joined > 0)
        st = op__loop_crosses(dst, m, b->scratch, &crosses, b->err);
    if (st == OP_OK && crosses) {
        raw = 1;
        b->res->raw_fallbacks++;
        b->fallbacks[b->loops.region[o]]++;
        st = join_version(b, o, holes, nh, 1, keys, rings, dst, &m, &joined);
    }
    if (st != OP_OK)
        return st;
    if (joined > 0 && op__loop_area2(dst, m) <= 0) {
        /* Holes that cancel the outline (a region overlapping itself): all dropped. */
        op__ring ring = ring_of(b, o, raw);
        memcpy(dst, ring.v, (size_t)ring.n * sizeof *dst);
        m = ring.n;
        joined = 0;
    }
    b->res->dropped_holes += nh - joined;
    b->dropped[b->loops.region[o]] += nh - joined;
    c->verts = op_arena_alloc(b->out, (size_t)m * sizeof *c->verts);
    if (!c->verts)
        return nomem(b, "contour vertices", (size_t)m * sizeof *c->verts);
    memcpy(c->verts, dst, (size_t)m * sizeof *dst);
    c->nverts = m;
    c->nholes = joined;
    op_arena_release(b->scratch, mark);
    return OP_OK;
}

static op_status keep_raw_loops(build *b, int o, const int *holes, int nh, op_contour *c)
{
    c->raw = (op_raw_loop){&b->loops.verts[b->loops.start[o]],
                           (int)(b->loops.start[o + 1] - b->loops.start[o])};
    c->raw_holes = op_arena_alloc(b->out, (size_t)nh * sizeof *c->raw_holes + 1);
    if (!c->raw_holes)
        return nomem(b, "raw holes", (size_t)nh * sizeof *c->raw_holes);
    for (int k = 0; k < nh; k++) {
        op__ring h = ring_of(b, holes[k], 1);
        c->raw_holes[k] = (op_raw_loop){(op_contour_vert *)h.v, h.n};
    }
    c->nraw_holes = nh;
    return OP_OK;
}

/* Splits region r's loops into outlines (outl) and holes grouped by owner slot, in
 * discovery order: the holes of outline i are grouped[first[i] .. first[i + 1]). */
static int group_holes(build *b, int r, int *outl, int *grouped, int *first)
{
    int nout = 0;
    for (int k = b->rstart[r]; k < b->rstart[r + 1]; k++)
        if (b->raw_area2[b->order[k]] > 0)
            outl[nout++] = b->order[k];
    memset(first, 0, ((size_t)nout + 2) * sizeof *first);
    for (int k = b->rstart[r]; k < b->rstart[r + 1]; k++) {
        int h = b->order[k];
        if (b->raw_area2[h] > 0)
            continue;
        b->owner[h] = owner_of(b, outl, nout, h);
        if (b->owner[h] < 0) {
            b->res->dropped_holes++; /* no outline of its region contains it */
            b->dropped[r]++;
        } else
            first[b->owner[h] + 2]++;
    }
    for (int i = 0; i < nout; i++)
        first[i + 2] += first[i + 1];
    for (int k = b->rstart[r]; k < b->rstart[r + 1]; k++) {
        int h = b->order[k];
        if (b->raw_area2[h] <= 0 && b->owner[h] >= 0)
            grouped[first[b->owner[h] + 1]++] = h;
    }
    return nout;
}

/* The contours of region r, appended at res->contours[res->count]. */
static op_status build_region(build *b, int r, int *buf)
{
    int n = b->rstart[r + 1] - b->rstart[r];
    int *outl = buf, *grouped = buf + n, *first = buf + 2 * n;
    int nout = group_holes(b, r, outl, grouped, first);
    for (int i = 0; i < nout; i++) {
        const int *holes = grouped + first[i];
        int nh = first[i + 1] - first[i];
        op_contour *c = &b->res->contours[b->res->count++];
        memset(c, 0, sizeof *c);
        c->region = r;
        c->area = b->regs->region_area[r];
        op_status st = build_outline(b, outl[i], holes, nh, c);
        if (st == OP_OK && b->cs->keep_raw)
            st = keep_raw_loops(b, outl[i], holes, nh, c);
        if (st != OP_OK)
            return st;
    }
    return OP_OK;
}

/* Region r's contours copied from base region `from`, neighbour values renamed
 * (build3d-runtime.md §5.7), appended at res->contours[res->count]. */
static op_status copy_region(build *b, int r, int from)
{
    const op__contour_base *cb = b->base;
    const int32_t *nbr = b->plan->nbr[r];
    for (int k = cb->first[from]; k < cb->first[from + 1]; k++) {
        const op_contour *bc = &cb->contours[k];
        op_contour *c = &b->res->contours[b->res->count++];
        memset(c, 0, sizeof *c);
        c->region = r;
        c->area = b->regs->region_area[r];
        c->nholes = bc->nholes;
        c->nverts = bc->nverts;
        c->verts = op_arena_alloc(b->out, (size_t)bc->nverts * sizeof *c->verts + 1);
        if (!c->verts)
            return nomem(b, "contour vertices", (size_t)bc->nverts * sizeof *c->verts);
        for (int i = 0; i < bc->nverts; i++) {
            c->verts[i] = bc->verts[i];
            c->verts[i].neighbour = *nbr++;
        }
    }
    b->res->raw_fallbacks += cb->fallbacks[from];
    b->res->dropped_holes += cb->dropped[from];
    b->fallbacks[r] += cb->fallbacks[from];
    b->dropped[r] += cb->dropped[from];
    return OP_OK;
}

static op_status assemble(build *b)
{
    int outlines = 0, most = 0;
    for (int i = 0; i < b->loops.count; i++)
        outlines += b->raw_area2[i] > 0;
    for (int r = 1; b->plan && r <= b->regs->region_count; r++)
        if (b->plan->skip[r])
            outlines += b->base->first[b->plan->from[r] + 1] - b->base->first[b->plan->from[r]];
    for (int r = 1; r <= b->regs->region_count; r++)
        most = b->rstart[r + 1] - b->rstart[r] > most ? b->rstart[r + 1] - b->rstart[r] : most;
    b->res->contours = op_arena_calloc(b->out, (size_t)outlines + 1, sizeof *b->res->contours);
    int *holes = op_arena_alloc(b->scratch, (3 * (size_t)most + 2) * sizeof *holes);
    if (!b->res->contours || !holes)
        return nomem(b, "contours", ((size_t)outlines + 1) * sizeof *b->res->contours);
    for (int r = 1; r <= b->regs->region_count; r++) {
        b->first[r] = b->res->count;
        op_status st = b->plan && b->plan->skip[r] ? copy_region(b, r, b->plan->from[r])
                                                   : build_region(b, r, holes);
        if (st != OP_OK)
            return st;
    }
    b->first[0] = 0;
    b->first[b->regs->region_count + 1] = b->res->count;
    return OP_OK;
}

op_status op__contours_build_reuse(const op_chf *chf, const op_regions *regs,
                                   const op_contour_settings *cs, const op__contour_base *base,
                                   int *reused, op__contour_record *rec, op_arena *out,
                                   op_arena *scratch, op_contour_set *res, op_err *err)
{
    if (reused)
        *reused = 0;
    if (!res || !out || !scratch)
        return op_err_set(err, OP_EINVAL, "contours: NULL %s", !res ? "result" : "arena");
    memset(res, 0, sizeof *res);
    op_status st = op_contour_settings_validate(cs, err);
    if (st == OP_OK)
        st = check_input(chf, regs, err);
    if (st == OP_OK && !base)
        st = check_ids(chf, regs, err);
    if (st != OP_OK)
        return st;
    res->width = chf->width;
    res->depth = chf->depth;
    res->border = chf->border;
    memcpy(res->origin, chf->origin, sizeof res->origin);
    res->cs = chf->cs;
    res->ch = chf->ch;
    build b;
    memset(&b, 0, sizeof b);
    b.chf = chf;
    b.regs = regs;
    b.cs = cs;
    b.out = out;
    b.scratch = scratch;
    b.err = err;
    b.res = res;
    b.rec = rec;
    b.stretches = base ? base->stretches : NULL;
    size_t nr = (size_t)regs->region_count + 2;
    b.fallbacks = op_arena_calloc(rec ? out : scratch, nr, sizeof *b.fallbacks);
    b.dropped = op_arena_calloc(rec ? out : scratch, nr, sizeof *b.dropped);
    b.first = op_arena_calloc(rec ? out : scratch, nr, sizeof *b.first);
    if (!b.fallbacks || !b.dropped || !b.first)
        return nomem(&b, "region counts", 3 * nr * sizeof(int));
    op__contour_plan plan;
    if (base && (st = op__contour_plan_make(chf, regs, cs, base, scratch, &plan, err)) != OP_OK)
        return st;
    if (base && !plan.checked && (st = check_ids(chf, regs, err)) != OP_OK) {
        memset(res, 0, sizeof *res);
        return st;
    }
    if (base && plan.count > 0) {
        b.base = base;
        b.plan = &plan;
        if (reused)
            *reused = plan.count;
        st = op__contours_trace_marked(chf, regs, plan.skip, plan.mask, plan.edges, plan.skipped,
                                       scratch, scratch, &b.loops, err);
    } else {
        st =
            op__contours_trace(chf, regs, cs, cs->keep_raw ? out : scratch, scratch, &b.loops, err);
    }
    if (st == OP_OK)
        st = simplify_all(&b);
    if (st == OP_OK)
        st = group_by_region(&b);
    if (st == OP_OK)
        st = assemble(&b);
    if (st != OP_OK) {
        memset(res, 0, sizeof *res);
        return st;
    }
    if (rec)
        rec->first = b.first, rec->fallbacks = b.fallbacks, rec->dropped = b.dropped;
    op_err_clear(err);
    return OP_OK;
}

op_status op_contours_build(const op_chf *chf, const op_regions *regs,
                            const op_contour_settings *cs, op_arena *out, op_arena *scratch,
                            op_contour_set *res, op_err *err)
{
    return op__contours_build_reuse(chf, regs, cs, NULL, NULL, NULL, out, scratch, res, err);
}

op_status op_contours_trace(const op_chf *chf, const op_regions *regs, op_arena *out,
                            op_arena *scratch, op_contour_trace *res, op_err *err)
{
    if (!res || !out || !scratch)
        return op_err_set(err, OP_EINVAL, "contours: NULL %s", !res ? "result" : "arena");
    memset(res, 0, sizeof *res);
    op_status st = check_input(chf, regs, err);
    if (st == OP_OK)
        st = check_ids(chf, regs, err);
    op__loops loops;
    if (st == OP_OK)
        st = op__contours_trace(chf, regs, NULL, out, scratch, &loops, err);
    if (st != OP_OK)
        return st;
    res->loops = op_arena_alloc(out, (size_t)loops.count * sizeof *res->loops + 1);
    res->region = op_arena_alloc(out, (size_t)loops.count * sizeof *res->region + 1);
    if (!res->loops || !res->region)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (%d raw loops)", loops.count);
    for (int i = 0; i < loops.count; i++) {
        res->loops[i] =
            (op_raw_loop){&loops.verts[loops.start[i]], (int)(loops.start[i + 1] - loops.start[i])};
        res->region[i] = loops.region[i];
    }
    res->count = loops.count;
    op_err_clear(err);
    return OP_OK;
}

/* ---- canonical dump ---- */

static int put(op_write_fn write, void *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int put(op_write_fn write, void *ctx, const char *fmt, ...)
{
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return write(ctx, buf, (size_t)n);
}

static int put_loop(op_write_fn write, void *ctx, const char *tag, const op_contour_vert *v, int n)
{
    if (put(write, ctx, "%s %d\n", tag, n))
        return 1;
    for (int i = 0; i < n; i++)
        if (put(write, ctx, "%d %d %d %d\n", v[i].x, v[i].y, v[i].z, v[i].neighbour))
            return 1;
    return 0;
}

int op_contours_dump(const op_contour_set *cset, op_write_fn write, void *ctx)
{
    if (put(write, ctx, "contours %d grid %d %d border %d\n", cset->count, cset->width, cset->depth,
            cset->border))
        return 1;
    for (int i = 0; i < cset->count; i++) {
        const op_contour *c = &cset->contours[i];
        if (put(write, ctx, "contour %d region %d area %d holes %d\n", i, c->region, c->area,
                c->nholes) ||
            put_loop(write, ctx, "verts", c->verts, c->nverts))
            return 1;
        if (c->raw.verts && put_loop(write, ctx, "raw", c->raw.verts, c->raw.nverts))
            return 1;
        for (int k = 0; k < c->nraw_holes; k++)
            if (put_loop(write, ctx, "rawhole", c->raw_holes[k].verts, c->raw_holes[k].nverts))
                return 1;
    }
    return put(write, ctx, "raw_fallbacks %d dropped_holes %d\n", cset->raw_fallbacks,
               cset->dropped_holes);
}
