/*
 * onepath side of the side-by-side benchmark.
 *
 * Input: a triangle soup and settings. Output: stage times summed over tiles, mesh
 * counts and the peak bytes of the arenas. Per tile, one function per stage group,
 * the same groups as recast_side.cpp:
 *   spans    op_tile_spans_build (triangle selection, rasterize, filters, compact,
 *            volumes (none here), erosion, distance)
 *   regions  op_regions_build, then the tile border cut of build3d-polys.md §2.3
 *   contours op_contours_build (contours of the border region dropped)
 *   polys    op_polys_build
 *   detail   op_detail_build
 *   tile     not available yet (no tile assembler in the core): reported as missing
 * Each worker owns an output and a scratch arena; scratch is reset after every
 * stage, both after every tile (resets are not timed, as Recast's frees are not).
 *
 * The tile grid: tiles of tile_size wu from the soup's minimum corner, enough to
 * cover its bounds (as RecastDemo's grid). If the core later exports its own tile
 * range (build3d-polys.md §1, "the soup's tile range"), use that instead.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/arena.h"
#include "onepath/contours.h"
#include "onepath/detail.h"
#include "onepath/input.h"
#include "onepath/limits.h"
#include "onepath/polys.h"
#include "onepath/regions.h"
#include "onepath/settings.h"
#include "onepath/spans.h"
#include "onepath_side.h"

typedef struct side_level {
    const bench_level *lv;
    const op_settings *s;
    op_soup soup;
    op_tile_grid grid;
    op_span_settings span;
    int tw, th;
    bench_upto upto;
    atomic_int next; /* next tile index to build, row-major */
} side_level;

typedef struct side_worker {
    side_level *L;
    op_arena *out, *scratch;
    bench_result r;
    int failed;
    char err[320];
} side_worker;

/* One tile's intermediate results, all in the worker's output arena. */
typedef struct side_tile {
    int tx, tz;
    op_chf chf;
    op_regions regs;
    int border_region;
    op_contour_set cset;
    op_poly_mesh mesh;
    op_detail_mesh dm;
} side_tile;

static int fail(side_worker *w, const side_tile *t, const char *stage, const op_err *e)
{
    snprintf(w->err, sizeof w->err, "onepath: tile (%d, %d): %s: %s", t->tx, t->tz, stage,
             e->msg[0] ? e->msg : op_status_name(e->status));
    w->failed = 1;
    return -1;
}

/* ===== stage groups ===== */

/* 1 = empty tile (no walkable span). */
static int stage_spans(side_worker *w, side_tile *t)
{
    op_err e;
    op_err_clear(&e);
    double t0 = bench_now_ms();
    op_status st = op_tile_spans_build(&w->L->soup, w->L->s, t->tx, t->tz, NULL, 0, w->out,
                                       w->scratch, &t->chf, &e);
    w->r.ms[BENCH_SPANS] += bench_now_ms() - t0;
    op_arena_reset(w->scratch);
    if (st != OP_OK)
        return fail(w, t, "spans", &e);
    w->r.spans += t->chf.span_count;
    return t->chf.span_count == 0 ? 1 : 0;
}

/*
 * The border cut (build3d-polys.md §2.3): spans with a region outside the tile's
 * core cells move to region borderId = count + 1. 1 = no region inside the core.
 * The core will own this step (tile stage); until then the bench does it here and
 * counts it in "regions".
 */
static int cut_border(side_worker *w, side_tile *t)
{
    const op_chf *c = &t->chf;
    op_regions *r = &t->regs;
    const int b = c->border, lo = b, hi_x = c->width - b, hi_z = c->depth - b;
    const int border_id = r->region_count + 1;
    int inside = 0;
    for (int z = 0; z < c->depth; z++) {
        for (int x = 0; x < c->width; x++) {
            const int cell = x + z * c->width;
            const int core = x >= lo && x < hi_x && z >= lo && z < hi_z;
            for (uint32_t i = c->cells[cell]; i < c->cells[cell + 1]; i++) {
                if (r->reg[i] == 0)
                    continue;
                if (core)
                    inside = 1;
                else
                    r->reg[i] = (uint16_t)border_id;
            }
        }
    }
    uint8_t *areas = op_arena_alloc(w->out, (size_t)border_id + 1);
    if (!areas) {
        snprintf(w->err, sizeof w->err, "onepath: tile (%d, %d): border cut: out of memory", t->tx,
                 t->tz);
        w->failed = 1;
        return -1;
    }
    memcpy(areas, r->region_area, (size_t)border_id);
    areas[border_id] = OP_NULL_AREA;
    r->region_area = areas;
    r->region_count = border_id;
    t->border_region = border_id;
    return inside ? 0 : 1;
}

/* Distinct regions the tile's spans carry, the border region excluded (not timed). */
static long count_regions(side_worker *w, const side_tile *t)
{
    uint8_t *seen = op_arena_calloc(w->scratch, (size_t)t->regs.region_count + 1, 1);
    long n = 0;
    for (uint32_t i = 0; seen && i < t->chf.span_count; i++) {
        int r = t->regs.reg[i];
        if (r != 0 && r != t->border_region && r <= t->regs.region_count && !seen[r]) {
            seen[r] = 1;
            n++;
        }
    }
    op_arena_reset(w->scratch);
    return n;
}

/* 1 = empty tile. */
static int stage_regions(side_worker *w, side_tile *t)
{
    op_region_settings rs;
    op_region_settings_default(&rs);
    rs.partition = w->L->s->partition;
    rs.min_region_area = w->L->s->min_region_area;
    rs.merge_region_area = w->L->s->merge_region_area;
    op_err e;
    op_err_clear(&e);
    double t0 = bench_now_ms();
    op_status st = op_regions_build(&t->chf, &rs, w->out, w->scratch, &t->regs, &e);
    int rc = (st == OP_OK) ? cut_border(w, t) : 0;
    w->r.ms[BENCH_REGIONS] += bench_now_ms() - t0;
    op_arena_reset(w->scratch);
    if (st != OP_OK)
        return fail(w, t, "regions", &e);
    if (rc >= 0)
        w->r.regions += count_regions(w, t);
    return rc;
}

/* Drops contours of the border region, in case the contour stage keeps them. */
static void drop_border_contours(op_contour_set *cs, int border_region)
{
    int n = 0;
    for (int i = 0; i < cs->count; i++)
        if (cs->contours[i].region != border_region)
            cs->contours[n++] = cs->contours[i];
    cs->count = n;
}

/* 1 = no contours. */
static int stage_contours(side_worker *w, side_tile *t)
{
    const op_settings *s = w->L->s;
    op_contour_settings cs;
    op_contour_settings_default(&cs);
    cs.max_error = s->contour_max_error;
    cs.max_edge_length = (int)(s->max_edge_length / s->cell_size + 0.5);
    cs.straight_region_borders = s->straight_region_borders;
    cs.border_region = t->border_region;
    op_err e;
    op_err_clear(&e);
    double t0 = bench_now_ms();
    op_status st = op_contours_build(&t->chf, &t->regs, &cs, w->out, w->scratch, &t->cset, &e);
    if (st == OP_OK)
        drop_border_contours(&t->cset, t->border_region);
    w->r.ms[BENCH_CONTOURS] += bench_now_ms() - t0;
    op_arena_reset(w->scratch);
    if (st != OP_OK)
        return fail(w, t, "contours", &e);
    w->r.contours += t->cset.count;
    return t->cset.count == 0 ? 1 : 0;
}

/* 1 = no polygons. */
static int stage_polys(side_worker *w, side_tile *t)
{
    const side_level *L = w->L;
    op_tile_frame f = {
        .border = L->grid.border,
        .tile_cells = L->grid.tile_cells,
        .cs = L->grid.cs,
        .tile_size = L->s->tile_size,
        .ch = L->s->cell_height,
    };
    op_err e;
    op_err_clear(&e);
    double t0 = bench_now_ms();
    op_status st =
        op_polys_build(&t->cset, &f, L->s->max_verts_per_poly, w->out, w->scratch, &t->mesh, &e);
    w->r.ms[BENCH_POLYS] += bench_now_ms() - t0;
    op_arena_reset(w->scratch);
    if (st != OP_OK)
        return fail(w, t, "polys", &e);
    w->r.polys += t->mesh.npolys;
    w->r.verts += t->mesh.nverts;
    return t->mesh.npolys == 0 ? 1 : 0;
}

static int stage_detail(side_worker *w, side_tile *t)
{
    op_detail_settings ds = {
        .sample_distance = w->L->s->detail_sample_distance,
        .max_error = w->L->s->detail_max_error,
        .walkable_climb = w->L->span.walkable_climb,
    };
    op_err e;
    op_err_clear(&e);
    double t0 = bench_now_ms();
    int min_row = t->mesh.nverts > 0 ? t->mesh.verts[1] : 0;
    for (int i = 1; i < t->mesh.nverts; i++)
        if (t->mesh.verts[3 * i + 1] < min_row)
            min_row = t->mesh.verts[3 * i + 1];
    op_status st =
        op_detail_build(&t->mesh, &t->chf, &t->regs, &ds, min_row, w->out, w->scratch, &t->dm, &e);
    w->r.ms[BENCH_DETAIL] += bench_now_ms() - t0;
    op_arena_reset(w->scratch);
    if (st != OP_OK)
        return fail(w, t, "detail", &e);
    w->r.detail_tris += t->dm.ntris;
    return 0;
}

/* ===== tiles and workers ===== */

static int build_tile(side_worker *w, int tx, int tz)
{
    side_tile t;
    memset(&t, 0, sizeof t);
    t.tx = tx;
    t.tz = tz;
    const bench_upto upto = w->L->upto;
    int rc = stage_spans(w, &t);
    if (rc == 0 && upto > BENCH_UPTO_SPANS)
        rc = stage_regions(w, &t);
    if (rc == 0 && upto > BENCH_UPTO_REGIONS)
        rc = stage_contours(w, &t);
    if (rc == 0 && upto > BENCH_UPTO_CONTOURS) {
        rc = stage_polys(w, &t);
        if (rc == 0)
            rc = stage_detail(w, &t);
    }
    if (rc == 0)
        w->r.tiles_built++;
    op_arena_reset(w->out);
    op_arena_reset(w->scratch);
    return rc < 0 ? -1 : 0;
}

static void *worker_run(void *arg)
{
    side_worker *w = arg;
    const int n = w->L->tw * w->L->th;
    for (int i = atomic_fetch_add(&w->L->next, 1); i < n && !w->failed;
         i = atomic_fetch_add(&w->L->next, 1))
        build_tile(w, i % w->L->tw, i / w->L->tw);
    return NULL;
}

static void add_result(bench_result *to, const bench_result *r)
{
    for (int k = 0; k < BENCH_NSTAGES; k++)
        to->ms[k] += r->ms[k];
    to->tiles_built += r->tiles_built;
    to->spans += r->spans;
    to->regions += r->regions;
    to->contours += r->contours;
    to->polys += r->polys;
    to->verts += r->verts;
    to->detail_tris += r->detail_tris;
    to->tile_bytes += r->tile_bytes;
}

static int level_init(side_level *L, const bench_level *lv, const op_settings *s, bench_upto upto,
                      char *err, size_t errlen)
{
    memset(L, 0, sizeof *L);
    L->lv = lv;
    L->s = s;
    L->upto = upto;
    L->soup.verts = lv->verts;
    L->soup.verts_len = (size_t)lv->nverts * 3;
    L->soup.tris = lv->tris;
    L->soup.tris_len = (size_t)lv->ntris * 3;
    op_err e;
    op_err_clear(&e);
    if (op_settings_validate(s, &e) != OP_OK || op_soup_validate(&L->soup, &e) != OP_OK) {
        snprintf(err, errlen, "onepath: %s: %s", lv->name, e.msg);
        return -1;
    }
    op_tile_grid_derive(s, &L->grid);
    op_span_settings_derive(s, &L->span);
    float bmin[3], bmax[3];
    op_soup_bounds(&L->soup, bmin, bmax);
    L->tw = (int)ceil(((double)bmax[0] - bmin[0]) / s->tile_size);
    L->th = (int)ceil(((double)bmax[2] - bmin[2]) / s->tile_size);
    L->tw = L->tw < 1 ? 1 : L->tw;
    L->th = L->th < 1 ? 1 : L->th;
    atomic_init(&L->next, 0);
    return 0;
}

int bench_onepath_build(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                        int threads, bench_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->missing = (1u << BENCH_SELECT) | (1u << BENCH_TILE);
    side_level L;
    if (level_init(&L, lv, s, upto, err, errlen) != 0)
        return -1;
    res->tiles_total = L.tw * L.th;
    threads = threads < 1 ? 1 : threads;
    side_worker *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    int rc = (ws && tids) ? 0 : -1;
    for (int i = 0; i < threads && rc == 0; i++) {
        ws[i].L = &L;
        ws[i].out = op_arena_create(0);
        ws[i].scratch = op_arena_create(0);
        rc = (ws[i].out && ws[i].scratch) ? 0 : -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "onepath: out of memory for %d workers", threads);
    } else {
        double t0 = bench_now_ms();
        int started = 0; /* workers 1.. run on threads, worker 0 on this one */
        while (started + 1 < threads &&
               pthread_create(&tids[started + 1], NULL, worker_run, &ws[started + 1]) == 0)
            started++;
        worker_run(&ws[0]);
        for (int i = 1; i <= started; i++)
            pthread_join(tids[i], NULL);
        res->wall_ms = bench_now_ms() - t0;
    }
    for (int i = 0; ws && i < threads; i++) {
        if (rc == 0 && ws[i].failed) {
            snprintf(err, errlen, "%s", ws[i].err);
            rc = -1;
        }
        add_result(res, &ws[i].r);
        if (ws[i].out)
            res->heap_peak += op_arena_peak(ws[i].out);
        if (ws[i].scratch)
            res->heap_peak += op_arena_peak(ws[i].scratch);
        if (ws[i].out)
            op_arena_destroy(ws[i].out);
        if (ws[i].scratch)
            op_arena_destroy(ws[i].scratch);
    }
    free(ws);
    free(tids);
    return rc;
}
