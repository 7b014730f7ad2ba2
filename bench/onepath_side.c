/*
 * onepath side of the side-by-side benchmark: the real build API, as `onepath bake`
 * calls it (client/cli/cmd_bake.c).
 *
 * Input: a triangle soup and settings. Output: stage times, mesh counts, tile data
 * bytes and the peak bytes of the workers' arenas.
 *   prepare   op_level_create_pool (or _threads) on the build's workers (validation, world-aligned
 *             tile range, triangle bins), as bake
 *   order     with several workers, op_level_job_order (heaviest tiles first), as bake;
 *             inside the wall time
 *   per tile  op_level_build_stages(..., last, ...) on op_parallel_for's workers, last
 *             = OP_STAGE_SPANS / REGIONS / CONTOURS / TILE; its stage_ms[] gives
 *             spans, regions (border cut included), contours, polys, detail, tile
 *             (layer split + op_tile_assemble)
 *   tile data op_tile_encode of every layer of the tile (timed into "tile", as
 *             Recast's dtCreateNavMeshData), the blob freed untimed right after.
 * Results go to a slot per tile index and are summed in index order, so nothing
 * depends on which worker built which tile. Freeing (op_level_destroy, blobs, arena
 * resets) is not timed, as Recast's frees are not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onepath/build.h"
#include "onepath/parallel.h"
#include "onepath/tile_codec.h"
#include "onepath_side.h"

/* What one tile build left behind. */
typedef struct tile_slot {
    double ms[BENCH_NSTAGES];
    long spans, regions, contours, polys, verts, dtris;
    int built, layers;
    size_t bytes;
    const op_arena *worker; /* the worker's out arena: tells workers apart for the peak */
    size_t peak;            /* that worker's arena peaks so far, plus this tile's blobs */
    const op_arena *ran_on; /* (sched) the worker's out arena, set on every run */
    double t0, t1, cpu;     /* (sched) start and end from the section's start, thread CPU */
} tile_slot;

typedef struct side_job {
    const op_level *lvl;
    op_tile_rect rect;
    op_stage last;
    tile_slot *slots;
    int timed;       /* record each job's clocks (bench_onepath_build_sched) */
    double start_ms; /* the section's start (CLOCK_MONOTONIC) */
} side_job;

/* CPU time of the calling thread, or of the process, in ms. */
static double clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static const op_stage stage_of_upto[] = {OP_STAGE_SPANS, OP_STAGE_REGIONS, OP_STAGE_CONTOURS,
                                         OP_STAGE_TILE};

/* Distinct regions the tile's spans carry, the border region excluded (not timed). */
static long count_regions(const op_tile_stages *st, op_arena *scratch)
{
    uint8_t *seen = op_arena_calloc(scratch, (size_t)st->regions.region_count + 1, 1);
    long n = 0;
    for (uint32_t i = 0; seen && i < st->chf.span_count; i++) {
        int r = st->regions.reg[i];
        if (r != 0 && r != st->border_region && r <= st->regions.region_count && !seen[r]) {
            seen[r] = 1;
            n++;
        }
    }
    return n;
}

/* Encodes every layer of the tile (timed), counts and frees the blobs (not timed). */
static op_status encode_layers(const op_tile_stages *st, tile_slot *r, size_t *blob_bytes,
                               op_err *err)
{
    for (int k = 0; k < st->ntiles; k++) {
        op_bytes b = {0};
        uint64_t h;
        double t0 = bench_now_ms();
        op_status s = op_tile_encode(&st->tiles[k], &b, &h, err);
        r->ms[BENCH_TILE] += bench_now_ms() - t0;
        if (s != OP_OK)
            return s;
        r->bytes += b.len;
        *blob_bytes += b.len;
        r->polys += st->tiles[k].npolys;
        op_bytes_free(&b);
    }
    r->layers = st->ntiles;
    return OP_OK;
}

static void count_tile(const op_tile_stages *st, op_stage last, op_arena *scratch, tile_slot *r)
{
    r->spans = st->skipped ? 0 : (long)st->chf.span_count;
    if (last >= OP_STAGE_REGIONS && !st->skipped)
        r->regions = count_regions(st, scratch);
    if (last >= OP_STAGE_CONTOURS && !st->skipped)
        r->contours = st->contours.count;
    if (last == OP_STAGE_TILE && !st->skipped) {
        r->verts = st->polys.nverts;
        r->dtris = st->detail.ntris;
    }
    if (last == OP_STAGE_SPANS)
        r->built = !st->skipped && st->chf.span_count > 0;
    else if (last == OP_STAGE_REGIONS)
        r->built = !st->skipped;
    else if (last == OP_STAGE_CONTOURS)
        r->built = !st->skipped && st->contours.count > 0;
}

static op_status build_tile(side_job *j, tile_slot *r, int i, op_arena *out, op_arena *scratch,
                            op_err *err)
{
    int w = j->rect.tx1 - j->rect.tx0 + 1;
    op_tile_stages st;
    op_status s = op_level_build_stages(j->lvl, j->rect.tx0 + i % w, j->rect.tz0 + i / w, j->last,
                                        0, out, scratch, &st, err);
    for (int k = OP_STAGE_SPANS; k <= OP_STAGE_TILE; k++)
        r->ms[BENCH_SPANS + k] = st.stage_ms[k];
    if (s != OP_OK)
        return s;
    size_t blobs = 0;
    if (j->last == OP_STAGE_TILE && !st.skipped) {
        if ((s = encode_layers(&st, r, &blobs, err)) != OP_OK)
            return s;
        r->built = r->polys > 0;
    }
    r->worker = out;
    r->peak = op_arena_peak(out) + op_arena_peak(scratch) + blobs;
    count_tile(&st, j->last, scratch, r);
    return OP_OK;
}

/* Makespan of the jobs' CPU times list-scheduled on w workers in order (NULL: index
 * order): each job goes to the worker free first (the lowest on ties). */
static double list_schedule(const tile_slot *slots, int n, const int *order, int w)
{
    double free_at[BENCH_MAX_WORKERS] = {0.0}, end = 0.0;
    for (int k = 0; k < n; k++) {
        int best = 0;
        for (int q = 1; q < w; q++)
            best = free_at[q] < free_at[best] ? q : best;
        free_at[best] += slots[order ? order[k] : k].cpu;
        end = free_at[best] > end ? free_at[best] : end;
    }
    return end;
}

static const tile_slot *g_sort_slots; /* qsort's context (the bench is single-threaded here) */

static int by_cpu_desc(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    double x = g_sort_slots[a].cpu, y = g_sort_slots[b].cpu;
    return x > y ? -1 : x < y ? 1 : (a > b) - (a < b);
}

/* The three simulated makespans (not timed: after the build). */
static void simulate(const op_level *lvl, op_tile_rect rect, const tile_slot *slots, int n,
                     const int *order, int threads, bench_sched *sc)
{
    int w = threads > 1 ? threads : 2;
    w = w > n ? (n > 0 ? n : 1) : w;
    w = w > BENCH_MAX_WORKERS ? BENCH_MAX_WORKERS : w;
    sc->sim_threads = w;
    int *tmp = malloc((size_t)(n > 0 ? n : 1) * sizeof *tmp);
    if (!tmp)
        return;
    op_err e;
    const int *cost = order;
    if (!cost && n > 1 && op_level_job_order(lvl, rect, tmp, &e) == OP_OK)
        cost = tmp;
    sc->sim_cost_ms = list_schedule(slots, n, cost, w);
    sc->sim_index_ms = list_schedule(slots, n, NULL, w);
    for (int i = 0; i < n; i++)
        tmp[i] = i;
    g_sort_slots = slots;
    qsort(tmp, (size_t)n, sizeof *tmp, by_cpu_desc);
    sc->sim_oracle_ms = list_schedule(slots, n, tmp, w);
    free(tmp);
}

static op_status build_one(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    side_job *j = user;
    tile_slot *r = &j->slots[i];
    if (!j->timed)
        return build_tile(j, r, i, out, scratch, err);
    double c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID), t0 = bench_now_ms();
    op_status s = build_tile(j, r, i, out, scratch, err);
    r->t1 = bench_now_ms() - j->start_ms;
    r->cpu = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
    r->t0 = t0 - j->start_ms;
    r->ran_on = out;
    return s;
}

/* Per worker (told apart by their out arenas, numbered by their first job's start), the
 * jobs' times; the longest job by thread CPU, and its place in the claim order. */
static void sum_sched(const tile_slot *slots, int n, const int *order, bench_sched *sc)
{
    const op_arena *ids[BENCH_MAX_WORKERS];
    int nw = 0;
    sc->longest_index = -1;
    for (int i = 0; i < n; i++) {
        const tile_slot *r = &slots[i];
        if (!r->ran_on)
            continue;
        int w = 0;
        while (w < nw && ids[w] != r->ran_on)
            w++;
        if (w == nw) {
            if (nw == BENCH_MAX_WORKERS)
                continue;
            ids[nw] = r->ran_on;
            sc->w[nw++] = (bench_worker_use){0, 0, 0.0, 0.0, r->t0, r->t1};
        }
        bench_worker_use *u = &sc->w[w];
        u->jobs++;
        u->built += r->built;
        u->busy_cpu_ms += r->cpu;
        u->busy_wall_ms += r->t1 - r->t0;
        u->first_ms = r->t0 < u->first_ms ? r->t0 : u->first_ms;
        u->last_ms = r->t1 > u->last_ms ? r->t1 : u->last_ms;
        sc->sum_cpu_ms += r->cpu;
        sc->sum_wall_ms += r->t1 - r->t0;
        if (sc->longest_index < 0 || r->cpu > sc->longest_cpu_ms) {
            sc->longest_index = i;
            sc->longest_cpu_ms = r->cpu;
            sc->longest_wall_ms = r->t1 - r->t0;
            sc->longest_start_ms = r->t0;
        }
    }
    sc->workers = nw;
    for (int a = 1; a < nw; a++) /* by first start: insertion sort, a few workers */
        for (int b = a; b > 0 && sc->w[b].first_ms < sc->w[b - 1].first_ms; b--) {
            bench_worker_use t = sc->w[b];
            sc->w[b] = sc->w[b - 1];
            sc->w[b - 1] = t;
        }
    sc->longest_rank = sc->longest_index;
    for (int k = 0; order && k < n; k++)
        if (order[k] == sc->longest_index)
            sc->longest_rank = k;
}

/* Sums the slots in index order; the heap peak is the sum over workers of each
 * worker's largest arena peak (arenas keep their peak across resets). */
static void sum_slots(const tile_slot *slots, int n, bench_result *res)
{
    const op_arena *workers[OP_MAX_THREADS];
    size_t peaks[OP_MAX_THREADS];
    int nw = 0;
    for (int i = 0; i < n; i++) {
        const tile_slot *r = &slots[i];
        for (int k = BENCH_SPANS; k < BENCH_NSTAGES; k++)
            res->ms[k] += r->ms[k];
        res->tiles_built += r->built;
        res->tile_layers += r->layers;
        res->spans += r->spans;
        res->regions += r->regions;
        res->contours += r->contours;
        res->polys += r->polys;
        res->verts += r->verts;
        res->detail_tris += r->dtris;
        res->tile_bytes += r->bytes;
        if (!r->worker)
            continue;
        int w = 0;
        while (w < nw && workers[w] != r->worker)
            w++;
        if (w == nw && nw < OP_MAX_THREADS) {
            workers[nw] = r->worker;
            peaks[nw++] = 0;
        }
        if (w < nw && r->peak > peaks[w])
            peaks[w] = r->peak;
    }
    for (int w = 0; w < nw; w++)
        res->heap_peak += peaks[w];
}

void *bench_onepath_workers_new(int threads)
{
    op_pool *p = NULL;
    op_err e;
    return op_pool_create(threads, &p, &e) == OP_OK ? p : NULL;
}

void bench_onepath_workers_free(void *workers)
{
    op_pool_destroy(workers);
}

int bench_onepath_build(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                        int threads, void *workers, bench_result *res, char *err, size_t errlen)
{
    return bench_onepath_build_sched(lv, s, upto, threads, workers, BENCH_ORDER_AUTO, res, NULL,
                                     err, errlen);
}

int bench_onepath_build_sched(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                              int threads, void *workers, bench_order om, bench_result *res,
                              bench_sched *sc, char *err, size_t errlen)
{
    op_pool *pool = workers;
    memset(res, 0, sizeof *res);
    if (sc)
        memset(sc, 0, sizeof *sc);
    op_soup soup = {lv->verts, (size_t)lv->nverts * 3, lv->tris, (size_t)lv->ntris * 3, NULL};
    op_level *lvl = NULL;
    op_err e;
    op_err_clear(&e);
    double c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID), p0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
    double t0 = bench_now_ms();
    op_status ls = pool ? op_level_create_pool(&soup, s, NULL, 0, pool, &lvl, &e)
                        : op_level_create_threads(&soup, s, NULL, 0, threads, &lvl, &e);
    if (ls != OP_OK) {
        snprintf(err, errlen, "onepath: %s: %s", lv->name, e.msg);
        return -1;
    }
    res->ms[BENCH_PREPARE] = bench_now_ms() - t0;
    if (sc) {
        sc->prepare_wall_ms = res->ms[BENCH_PREPARE];
        sc->prepare_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
        sc->prepare_proc_cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - p0;
    }
    int n = op_level_tile_count(lvl);
    side_job j = {lvl,
                  op_level_tiles(lvl),
                  stage_of_upto[upto],
                  calloc((size_t)n, sizeof(tile_slot)),
                  sc != NULL,
                  0.0};
    int by_cost = om == BENCH_ORDER_COST || (om == BENCH_ORDER_AUTO && threads > 1);
    int *order = by_cost && n > 1 ? malloc((size_t)n * sizeof *order) : NULL;
    res->tiles_total = n;
    int rc = -1;
    if (!j.slots || (by_cost && n > 1 && !order)) {
        snprintf(err, errlen, "onepath: out of memory for %d tile results", n);
    } else {
        /* As bake: heaviest tiles first when there are several workers (its run_jobs);
         * --order changes that. */
        op_parallel_opts po = {threads, NULL, NULL, pool};
        t0 = bench_now_ms();
        c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
        op_status st = order ? op_level_job_order(lvl, j.rect, order, &e) : OP_OK;
        j.start_ms = bench_now_ms();
        if (sc) {
            sc->order_wall_ms = j.start_ms - t0;
            sc->order_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
            p0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
        }
        if (st == OP_OK)
            st = op_parallel_for_ordered(n, &po, order, build_one, &j, &e);
        double t1 = bench_now_ms();
        if (sc) {
            sc->section_wall_ms = t1 - j.start_ms;
            sc->section_proc_cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - p0;
            c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
        }
        res->wall_ms = t1 - t0 + res->ms[BENCH_PREPARE];
        if (st != OP_OK)
            snprintf(err, errlen, "onepath: %s: %s", lv->name, e.msg);
        else
            rc = 0;
        sum_slots(j.slots, n, res);
        if (sc) {
            sc->assemble_wall_ms = bench_now_ms() - t1;
            sc->assemble_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
            sc->threads = threads < n ? threads : (n > 0 ? n : 1);
            sum_sched(j.slots, n, order, sc);
            simulate(lvl, j.rect, j.slots, n, order, threads, sc);
            int jobs = 0;
            for (int w = 0; w < sc->workers; w++)
                jobs += sc->w[w].jobs;
            if (rc == 0 && jobs != n) { /* every job ran once, on one of the workers */
                snprintf(err, errlen, "onepath: %s: the workers ran %d jobs of %d", lv->name, jobs,
                         n);
                rc = -1;
            }
        }
    }
    free(order);
    free(j.slots);
    op_level_destroy(lvl);
    return rc;
}
