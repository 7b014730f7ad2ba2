/*
 * A prepared level: validated input and settings, the tile range, and for a soup each
 * tile's triangles in input order (build3d-polys.md §1 selection), binned once so that a
 * tile build reads only its own triangles. Typical: 10^4..10^7 triangles, 10..10^6
 * tiles; the bins hold one uint32 per (triangle, tile) pair. Heightfield and voxel-chunk
 * levels (input-formats.md §5) need no bins: a tile reads its columns directly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "heightfield_internal.h"
#include "level_internal.h"
#include "parallel_internal.h"
#include "onepath/level.h"
#include "onepath/limits.h"
#include "onepath/parallel.h"
#include "onepath/rebuild.h"

/* The part every kind of level shares: settings and volumes validated, the level
 * allocated with its grid and span settings. */
static op_status level_new(const op_settings *s, const op_volume *vols, int nvols, op_level **out,
                           op_err *err)
{
    op_status st;
    if ((st = op_settings_validate(s, err)) != OP_OK)
        return st;
    /* Named, valid, in name order (build3d-runtime.md §4.2). */
    if ((st = op_volumes_check(vols, nvols, err)) != OP_OK)
        return st;
    op_level *l = calloc(1, sizeof *l);
    if (!l || !(l->arena = op_arena_create(0))) {
        free(l);
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    }
    /* The level's block is taken first, below the binning's temporaries: freeing those
     * then leaves free memory at the top of the heap (where the tile workers' arenas
     * find it) rather than a hole under a block that lives as long as the level. */
    op_arena_reset(l->arena);
    l->settings = *s;
    l->vols = vols;
    l->nvols = nvols;
    op_tile_grid_derive(s, &l->grid);
    op_span_settings_derive(s, &l->span);
    *out = l;
    return OP_OK;
}

/* ---- soup levels: validation, bounds and bins, on one or more threads ----
 *
 * The triangles are cut into contiguous chunks, one job each (op_parallel_for):
 *   1. check the chunk's vertices, areas and triangle indices; the bounds of the
 *      vertices its triangles use, and each triangle's tiles (the range is not known yet);
 *   2. (serial) merge the bounds in chunk order, the tile range;
 *   3. each triangle's tiles clamped to the range, counted into the chunk's own counts;
 *   4. (serial) prefix sums over (tile, chunk) in that order give each chunk's first
 *      slot in each bin;
 *   5. each chunk writes its triangles into its slots, in input order (and keeps each
 *      triangle's lowest and highest vertex y in its rectangle);
 *   6. the bins, split into ranges of about equal entries, mark the copies of earlier
 *      triangles (each triangle in its home bin only, see chunk_copies) and take their
 *      triangles' lowest and highest y (the tile builds' y0 and rows).
 * So every bin holds its triangles in input order and the level is the same for any
 * number of chunks or threads. One chunk (one thread) needs no per-chunk counts. */

/* Below this many triangles a chunk is not worth a job. */
#define BIN_CHUNK_MIN 2048
/* Below this many triangles a chunk of the per-tile counting (phases 3, 5) is not
 * worth a job: a pool call costs tens of microseconds on a VM, a triangle's count and
 * fill about 30 ns (dungeon.obj, 10k triangles, 2 workers: 2 chunks instead of 1 took
 * the serial prepare from 0.52 to 0.44 ms; 2048 gave no more). */
#define BIN_COUNT_MIN 4096
/* Chunks per thread: a worker that wakes late finds chunks left to take. */
#define BIN_CHUNKS_PER_THREAD 4

typedef struct bin_chunk {
    size_t t0, t1;   /* triangles [t0, t1) */
    size_t v0, v1;   /* vertices [v0, v1) to check */
    uint32_t *count; /* per tile: the chunk's triangles, then its write cursor */
    uint64_t pairs;
    int bad; /* the chunk holds an invalid vertex, index or area */
    float bmin[3], bmax[3];
} bin_chunk;

typedef struct tri_rect {
    int32_t x0, z0, x1, z1; /* phase 1: world tiles; phase 3 on: clamped to the range and
                               relative to it, x0 > x1 when none is left; from phase 5's
                               fill of the triangle on, x1 and z1 hold the bits of its lowest
                               and highest vertex y (phase 6 reads them and x0, z0) */
} tri_rect;

typedef struct binning {
    const op_soup *soup;
    op_tile_grid grid;
    op_tile_range range;
    size_t ntx, ntiles;
    int nchunks;
    bin_chunk *chunks;
    tri_rect *rect;
    uint32_t *off, *ids;
    uint8_t *tri_class; /* phase 1: each triangle's area after classification */
    uint32_t *hash;     /* phase 1: each triangle's key hash (phase 6) */
    float *bin_y;       /* phase 6: each bin's lowest and highest vertex y (the level's) */
    /* Phase 6: chunk i marks the copies of bins [copy_from[i], copy_from[i + 1]) with
     * its own table of copy_cap[i] slots at copy_slots + copy_at[i]. */
    uint32_t *copy_from, *copy_slots;
    size_t *copy_at, *copy_cap;
    float slope_cos;
    int phase;     /* 1, 3, 5 or 6 */
    op_pool *pool; /* the caller's workers, or NULL: threads of each phase's own */
} binning;

/* The chunk's vertices (finite, within +-2^21) and areas; its triangles' indices are
 * checked by the scan. 1 when something is wrong. */
static int chunk_check(const op_soup *soup, bin_chunk *c)
{
    for (size_t i = 3 * c->v0; i < 3 * c->v1; i++) {
        float v = soup->verts[i];
        if (!(v >= -(float)OP_MAX_COORD && v <= (float)OP_MAX_COORD))
            return 1; /* NaN, infinite or beyond the limit */
    }
    if (soup->areas)
        for (size_t t = c->t0; t < c->t1; t++)
            if (soup->areas[t] > OP_MAX_AREA)
                return 1;
    return 0;
}

/* The tiles whose build grid a box from lo..hi (one axis) can touch, unclamped:
 * floor((cell(lo) - B) / TC) .. floor((cell(hi) + B) / TC), as op_triangle_tiles. */
static inline void axis_tiles(float lo, float hi, const op_axis_grid *a, int32_t *t0, int32_t *t1)
{
    *t0 = op_last_tile_at(a, lo, 0);
    *t1 = op_last_tile_at(a, hi, 1);
}

/* One pass over the chunk's triangles: their indices checked, the bounds of the
 * vertices they use (the first one seen winning ties, as op_soup_bounds, so that merging
 * chunks in order gives its result) and each triangle's tiles before the range is known
 * (clamped in phase 3). 1 when an index or a coordinate is bad. */
static inline int bad_indices(const int *ti, uint32_t lim)
{
    /* A negative index is 2^31 or more as uint32_t, beyond lim (see index_limit): one
     * test and one branch for the three. */
    return ((uint32_t)ti[0] >= lim) | ((uint32_t)ti[1] >= lim) | ((uint32_t)ti[2] >= lim);
}

/* The bound for bad_indices: the vertex count, at most 2^31 (every int index at or
 * above 0 is below it then, and no negative one is). */
static uint32_t index_limit(size_t nv)
{
    return nv < 0x80000000u ? (uint32_t)nv : 0x80000000u;
}

/* A triangle's key: its three vertices' float32 bits in order and its input area
 * (tile_build.c's drop_copies has the same). */
static void tri_key(const float *const q[3], uint32_t area, uint32_t key[10])
{
    for (int k = 0; k < 3; k++)
        memcpy(&key[3 * k], q[k], 3 * sizeof(float));
    key[9] = area;
}

/* A hash of tri_key's ten words, taken as five 64-bit words straight from the vertices
 * (only the speed of phase 6 depends on it: keys are compared in full). One multiply a
 * word; the final fold brings the high bits, which depend on every word's every bit,
 * down to the low ones the tables probe with. */
static inline uint32_t tri_hash(const float *p0, const float *p1, const float *p2, uint32_t area)
{
    uint32_t w[10];
    memcpy(&w[0], p0, 3 * sizeof(float));
    memcpy(&w[3], p1, 3 * sizeof(float));
    memcpy(&w[6], p2, 3 * sizeof(float));
    w[9] = area;
    uint64_t h = 0x9e3779b97f4a7c15u;
#pragma GCC unroll 5
    for (int j = 0; j < 10; j += 2)
        h = (h ^ ((uint64_t)w[j] | (uint64_t)w[j + 1] << 32)) * 0xff51afd7ed558ccdu;
    h ^= h >> 29;
    return (uint32_t)(h ^ h >> 32);
}

static int chunk_scan(const binning *b, bin_chunk *c)
{
    const float *v = b->soup->verts;
    const int *ix = b->soup->tris;
    const uint8_t *areas = b->soup->areas;
    uint32_t lim = index_limit(b->soup->verts_len / 3);
    const float M = (float)OP_MAX_COORD, slope_cos = b->slope_cos;
    if (bad_indices(&ix[3 * c->t0], lim))
        return 1;
    const float *p = &v[3 * (size_t)ix[3 * c->t0]];
    float bx0 = p[0], by0 = p[1], bz0 = p[2], bx1 = bx0, by1 = by0, bz1 = bz0;
    const op_tile_grid *g = &b->grid;
    int tiles = g->cs >= OP_MIN_CELL_SIZE; /* else phase 2 reports the cell size */
    op_axis_grid ax, az;
    op_axis_grid_init(&ax, g, g->origin_x);
    op_axis_grid_init(&az, g, g->origin_z);
    tri_rect *rect = b->rect;
    uint8_t *tri_class = b->tri_class;
    uint32_t *hash = b->hash;
    for (size_t t = c->t0; t < c->t1; t++) {
        const int *ti = &ix[3 * t];
        if (bad_indices(ti, lim))
            return 1;
        const float *p0 = &v[3 * (size_t)ti[0]], *p1 = &v[3 * (size_t)ti[1]],
                    *p2 = &v[3 * (size_t)ti[2]];
        float x0 = p0[0], x1 = p0[0], z0 = p0[2], z1 = p0[2];
        x0 = p1[0] < x0 ? p1[0] : x0;
        x1 = p1[0] > x1 ? p1[0] : x1;
        z0 = p1[2] < z0 ? p1[2] : z0;
        z1 = p1[2] > z1 ? p1[2] : z1;
        x0 = p2[0] < x0 ? p2[0] : x0;
        x1 = p2[0] > x1 ? p2[0] : x1;
        z0 = p2[2] < z0 ? p2[2] : z0;
        z1 = p2[2] > z1 ? p2[2] : z1;
        float y0 = p0[1], y1 = p0[1];
        y0 = p1[1] < y0 ? p1[1] : y0;
        y1 = p1[1] > y1 ? p1[1] : y1;
        y0 = p2[1] < y0 ? p2[1] : y0;
        y1 = p2[1] > y1 ? p2[1] : y1;
        /* A vertex of another chunk's range may be bad (NaN fails this too): the cell
         * arithmetic only ever sees valid coordinates. */
        if (!(x0 >= -M && x1 <= M && z0 >= -M && z1 <= M))
            return 1;
        /* The bounds from the triangle's box: a running min (max) that keeps the first
         * of equal values (a -0 before a +0) gives the same over the box ends in
         * triangle order as over every vertex in order. */
        bx0 = x0 < bx0 ? x0 : bx0;
        bx1 = x1 > bx1 ? x1 : bx1;
        by0 = y0 < by0 ? y0 : by0;
        by1 = y1 > by1 ? y1 : by1;
        bz0 = z0 < bz0 ? z0 : bz0;
        bz1 = z1 > bz1 ? z1 : bz1;
        if (tiles) {
            tri_rect *r = &rect[t];
            axis_tiles(x0, x1, &ax, &r->x0, &r->x1);
            axis_tiles(z0, z1, &az, &r->z0, &r->z1);
        }
        uint32_t area = areas ? areas[t] : OP_WALKABLE_AREA;
        tri_class[t] = (uint8_t)(op__triangle_walkable(p0, p1, p2, slope_cos) ? area : 0);
        hash[t] = tri_hash(p0, p1, p2, area);
    }
    float bb[6] = {bx0, by0, bz0, bx1, by1, bz1};
    memcpy(c->bmin, bb, sizeof c->bmin);
    memcpy(c->bmax, bb + 3, sizeof c->bmax);
    return 0;
}

/* Phase 3: each triangle's tiles clamped to the range, relative to it, and counted. */
static void chunk_count(binning *b, bin_chunk *c)
{
    const op_tile_range *r = &b->range;
    uint32_t *count = c->count;
    size_t ntx = b->ntx;
    uint64_t pairs = 0;
    for (size_t t = c->t0; t < c->t1; t++) {
        tri_rect *q = &b->rect[t];
        q->x0 = (q->x0 < r->tx0 ? r->tx0 : q->x0) - r->tx0;
        q->x1 = (q->x1 > r->tx1 ? r->tx1 : q->x1) - r->tx0;
        q->z0 = (q->z0 < r->tz0 ? r->tz0 : q->z0) - r->tz0;
        q->z1 = (q->z1 > r->tz1 ? r->tz1 : q->z1) - r->tz0;
        if (q->x0 > q->x1 || q->z0 > q->z1) {
            q->x0 = 1; /* no tile: the fill loops run zero times */
            q->x1 = 0;
            continue;
        }
        if (q->x0 == q->x1 && q->z0 == q->z1) { /* one tile, most triangles */
            count[(size_t)q->z0 * ntx + (size_t)q->x0]++;
            pairs++;
            continue;
        }
        for (int32_t tz = q->z0; tz <= q->z1; tz++)
            for (int32_t tx = q->x0; tx <= q->x1; tx++)
                count[(size_t)tz * ntx + (size_t)tx]++;
        pairs += (uint64_t)(q->x1 - q->x0 + 1) * (uint64_t)(q->z1 - q->z0 + 1);
    }
    c->pairs = pairs;
}

/* The triangle's lowest and highest vertex y into q's x1 and z1 (their bits), once the
 * fill no longer needs them: phase 6 folds them per bin without a vertex gather per
 * triangle and tile, and without memory of their own. */
static inline void keep_heights(const binning *b, size_t t, tri_rect *q)
{
    const float *v = b->soup->verts;
    const int *ti = &b->soup->tris[3 * t];
    float y0 = v[3 * (size_t)ti[0] + 1], y1 = y0, y = v[3 * (size_t)ti[1] + 1];
    y0 = y < y0 ? y : y0;
    y1 = y > y1 ? y : y1;
    y = v[3 * (size_t)ti[2] + 1];
    y0 = y < y0 ? y : y0;
    y1 = y > y1 ? y : y1;
    memcpy(&q->x1, &y0, sizeof y0);
    memcpy(&q->z1, &y1, sizeof y1);
}

static void chunk_fill(binning *b, bin_chunk *c)
{
    uint32_t *cur = c->count, *ids = b->ids;
    size_t ntx = b->ntx;
    for (size_t t = c->t0; t < c->t1; t++) {
        tri_rect *q = &b->rect[t];
        if (q->x0 == q->x1 && q->z0 == q->z1) { /* one tile, as in chunk_count */
            ids[cur[(size_t)q->z0 * ntx + (size_t)q->x0]++] = (uint32_t)t;
        } else {
            for (int32_t tz = q->z0; tz <= q->z1; tz++)
                for (int32_t tx = q->x0; tx <= q->x1; tx++)
                    ids[cur[(size_t)tz * ntx + (size_t)tx]++] = (uint32_t)t;
        }
        keep_heights(b, t, q);
    }
}

/* Phase 6: every triangle whose key equals an earlier one's is marked OP__TRI_COPY, so
 * that every bin keeps the first occurrence of each key, which is what a tile build keeps
 * (tile_build.c). Equal keys mean equal vertices, so equal tile rectangles: a triangle is
 * looked at only in its home bin (the first of its rectangle), which holds every copy of
 * it, in id order. A table per bin (probed by the phase-1 hashes, keys compared in full)
 * stays in cache, and the bins split among the workers; each triangle is written by the
 * one job that owns its home bin. */
static int same_key(const binning *b, uint32_t t, uint32_t u)
{
    const float *v = b->soup->verts;
    const int *ix = b->soup->tris;
    const float *q[3], *r[3];
    for (int k = 0; k < 3; k++) {
        q[k] = &v[3 * (size_t)ix[3 * (size_t)t + (size_t)k]];
        r[k] = &v[3 * (size_t)ix[3 * (size_t)u + (size_t)k]];
    }
    uint32_t kt[10], ku[10];
    tri_key(q, b->soup->areas ? b->soup->areas[t] : OP_WALKABLE_AREA, kt);
    tri_key(r, b->soup->areas ? b->soup->areas[u] : OP_WALKABLE_AREA, ku);
    return !memcmp(kt, ku, sizeof kt);
}

/* Slots for a bin of n entries: a power of two above n (and at least 16). Only the
 * entries at home go in, so some slot stays empty and the load stays about the share
 * of triangles at home, below 1; clearing twice the slots, as before, cost more than
 * the longer probes save (callgrind, docs/benchmarks.md). */
static size_t copy_slots_for(size_t n)
{
    size_t cap = 16;
    while (cap <= n)
        cap *= 2;
    return cap;
}

/* Triangle t's lowest and highest vertex y, as keep_heights left them. */
static inline void kept_heights(const binning *b, uint32_t t, float *lo, float *hi)
{
    memcpy(lo, &b->rect[t].x1, sizeof *lo);
    memcpy(hi, &b->rect[t].z1, sizeof *hi);
}

static void chunk_copies(binning *b, int i)
{
    uint32_t *slot = b->copy_slots + b->copy_at[i];
    for (uint32_t k = b->copy_from[i]; k < b->copy_from[i + 1]; k++) {
        uint32_t a = b->off[k], e = b->off[k + 1];
        /* The bin's lowest and highest vertex y (0, 0 for none), folded on the way: what a
         * tile build would find over its triangles' vertices (tile_build.c's soup_rows).
         * Only the values matter (y0 is lo - CellHeight and rows come from hi - y0, the
         * same for -0 and +0), and a minimum (maximum) of floats is exact, so this is
         * soup_rows' lo and hi to the bit. */
        float lo = 0.0f, hi = 0.0f;
        if (a < e)
            kept_heights(b, b->ids[a], &lo, &hi);
        if (e - a < 2) { /* one triangle: no copy */
            b->bin_y[2 * (size_t)k] = lo;
            b->bin_y[2 * (size_t)k + 1] = hi;
            continue;
        }
        int32_t tx = (int32_t)(k % b->ntx), tz = (int32_t)(k / b->ntx);
        size_t cap = copy_slots_for(e - a);
        memset(slot, 0xff, cap * sizeof *slot);
        for (uint32_t j = a; j < e; j++) {
            uint32_t t = b->ids[j];
            float yl, yh;
            kept_heights(b, t, &yl, &yh);
            lo = yl < lo ? yl : lo;
            hi = yh > hi ? yh : hi;
            if (b->rect[t].x0 != tx || b->rect[t].z0 != tz)
                continue; /* its home is another bin */
            uint32_t h = b->hash[t];
            size_t at = h & (cap - 1);
            int copy = 0;
            for (; slot[at] != 0xffffffffu; at = (at + 1) & (cap - 1)) {
                uint32_t u = slot[at];
                if (b->hash[u] == h && same_key(b, t, u)) {
                    copy = 1;
                    break;
                }
            }
            if (copy)
                b->tri_class[t] = OP__TRI_COPY;
            else
                slot[at] = t;
        }
        b->bin_y[2 * (size_t)k] = lo;
        b->bin_y[2 * (size_t)k + 1] = hi;
    }
}

/* Phase 6's chunks: bins split where the entries before them reach an equal share, each
 * chunk's table sized for its largest bin. */
static op_status copy_chunks(binning *b, op_arena *scratch, op_err *err)
{
    int n = b->nchunks;
    uint64_t total = b->off[b->ntiles];
    b->copy_from = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *b->copy_from);
    b->copy_at = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *b->copy_at);
    b->copy_cap = op_arena_alloc(scratch, (size_t)n * sizeof *b->copy_cap);
    if (!b->copy_from || !b->copy_at || !b->copy_cap)
        return op_err_set(err, OP_ENOMEM, "level: out of memory (copy chunks)");
    uint32_t k = 0;
    for (int i = 0; i <= n; i++) {
        uint64_t want = total * (uint64_t)i / (uint64_t)n;
        while (k < b->ntiles && b->off[k] < want)
            k++;
        b->copy_from[i] = i == n ? (uint32_t)b->ntiles : k;
    }
    size_t slots = 0;
    for (int i = 0; i < n; i++) {
        size_t most = 0;
        for (uint32_t t = b->copy_from[i]; t < b->copy_from[i + 1]; t++)
            most = b->off[t + 1] - b->off[t] > most ? b->off[t + 1] - b->off[t] : most;
        b->copy_at[i] = slots;
        b->copy_cap[i] = copy_slots_for(most);
        slots += b->copy_cap[i];
    }
    b->copy_slots = op_arena_alloc(scratch, slots * sizeof *b->copy_slots);
    if (!b->copy_slots)
        return op_err_set(err, OP_ENOMEM, "level: out of memory (%zu bytes of copies)",
                          slots * sizeof *b->copy_slots);
    return OP_OK;
}

static op_status bin_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    (void)out;
    (void)scratch;
    (void)err;
    binning *b = user;
    bin_chunk *c = &b->chunks[i];
    if (b->phase == 1) {
        c->bad = chunk_check(b->soup, c);
        if (!c->bad && c->t1 > c->t0)
            c->bad = chunk_scan(b, c);
    } else if (b->phase == 3) {
        chunk_count(b, c);
    } else if (b->phase == 5) {
        chunk_fill(b, c);
    } else {
        chunk_copies(b, i);
    }
    return OP_OK;
}

static op_status run_phase(binning *b, int phase, int threads, op_err *err)
{
    b->phase = phase;
    if (b->nchunks == 1)
        return bin_job(b, 0, NULL, NULL, err);
    op_parallel_opts po = {threads, NULL, NULL, b->pool};
    return op_parallel_for(b->nchunks, &po, bin_job, b, err);
}

/* Phase 2: the chunks' bounds in order (ties keep the earlier chunk's value), then
 * the tile range as op_soup_tile_range computes it. */
static op_status merge_bounds(binning *b, float bmin[3], float bmax[3], op_err *err)
{
    for (int i = 0; i < b->nchunks; i++) {
        const bin_chunk *c = &b->chunks[i];
        for (int a = 0; a < 3; a++) {
            bmin[a] = (i == 0 || c->bmin[a] < bmin[a]) ? c->bmin[a] : bmin[a];
            bmax[a] = (i == 0 || c->bmax[a] > bmax[a]) ? c->bmax[a] : bmax[a];
        }
    }
    op_tile_grid *g = &b->grid;
    if (!(g->cs >= OP_MIN_CELL_SIZE))
        return op_err_set(err, OP_ERANGE,
                          "tiles: cell size tile_size / tile_cells = %g is below %g", g->cs,
                          OP_MIN_CELL_SIZE);
    int64_t t[4] = {
        op_cell_of(bmin[0], g->origin_x, g->cs), op_cell_of(bmin[2], g->origin_z, g->cs),
        op_cell_of(bmax[0], g->origin_x, g->cs), op_cell_of(bmax[2], g->origin_z, g->cs)};
    for (int k = 0; k < 4; k++) /* floor division by the tile's cells */
        t[k] = t[k] / g->tile_cells - (t[k] % g->tile_cells != 0 && t[k] < 0);
    int64_t count = (t[2] - t[0] + 1) * (t[3] - t[1] + 1);
    if (count > OP_MAX_TILES)
        return op_err_set(err, OP_ERANGE, "tiles: the soup spans %lld tiles > %d", (long long)count,
                          OP_MAX_TILES);
    b->range = (op_tile_range){(int)t[0], (int)t[1], (int)t[2], (int)t[3]};
    b->ntx = (size_t)(t[2] - t[0] + 1);
    b->ntiles = (size_t)count;
    return OP_OK;
}

/* Phase 4: bin starts and each chunk's first slot in each bin. */
static op_status prefix_sums(binning *b, op_arena *arena, op_err *err)
{
    uint64_t total = 0;
    for (int i = 0; i < b->nchunks; i++)
        total += b->chunks[i].pairs;
    if (total > 0xffffffffu)
        return op_err_set(err, OP_ELIMIT, "tiles: %llu triangle-tile pairs exceed 2^32",
                          (unsigned long long)total);
    b->off = op_arena_alloc(arena, (b->ntiles + 1) * sizeof *b->off);
    b->ids = op_arena_alloc(arena, (total ? (size_t)total : 1) * sizeof *b->ids);
    if (!b->off || !b->ids)
        return op_err_set(err, OP_ENOMEM, "tiles: out of memory (%zu bytes of triangle ids)",
                          (size_t)total * sizeof *b->ids + (b->ntiles + 1) * sizeof *b->off);
    uint32_t run = 0;
    for (size_t k = 0; k < b->ntiles; k++) {
        b->off[k] = run;
        for (int i = 0; i < b->nchunks; i++) {
            uint32_t n = b->chunks[i].count[k];
            b->chunks[i].count[k] = run;
            run += n;
        }
    }
    b->off[b->ntiles] = run;
    return OP_OK;
}

/* Chunks: one per thread, each of at least BIN_CHUNK_MIN triangles, vertices split
 * alike. With no triangle, one chunk checks the vertices. */
static op_status make_chunks(binning *b, int threads, op_arena *scratch, op_err *err)
{
    size_t ntris = b->soup->tris_len / 3, nverts = b->soup->verts_len / 3;
    size_t n = ntris / BIN_CHUNK_MIN,
           most = threads > 1 ? (size_t)threads * BIN_CHUNKS_PER_THREAD : 1;
    n = n < 1 ? 1 : (n > most ? most : n);
    b->nchunks = (int)n;
    b->chunks = op_arena_calloc(scratch, n, sizeof *b->chunks);
    b->rect = op_arena_alloc(scratch, (ntris ? ntris : 1) * sizeof *b->rect);
    b->hash = op_arena_alloc(scratch, (ntris ? ntris : 1) * sizeof *b->hash);
    if (!b->chunks || !b->rect || !b->hash)
        return op_err_set(err, OP_ENOMEM, "level: out of memory (%zu bytes of tile rectangles)",
                          ntris * sizeof *b->rect);
    for (size_t i = 0; i < n; i++) {
        bin_chunk *c = &b->chunks[i];
        c->t0 = ntris * i / n;
        c->t1 = ntris * (i + 1) / n;
        c->v0 = nverts * i / n;
        c->v1 = nverts * (i + 1) / n;
    }
    return OP_OK;
}

/* Phases 3 and 5 count per chunk and tile: with many tiles and few triangles a chunk
 * (ntiles + 1 counts) would outweigh its triangles, so the chunks are merged until the
 * counts take no more than the tile rectangles (16 bytes a triangle); and they are
 * cheaper than the scan, so a chunk of fewer than BIN_COUNT_MIN triangles is not worth
 * the hand-over to the workers. Any chunking gives the same bins. */
static void regroup_chunks(binning *b)
{
    size_t ntris = b->soup->tris_len / 3, most = 4 * ntris / (b->ntiles + 1);
    if (most > ntris / BIN_COUNT_MIN)
        most = ntris / BIN_COUNT_MIN;
    size_t n = (size_t)b->nchunks;
    if (n <= 1 || n <= most)
        return;
    n = most < 1 ? 1 : most;
    for (size_t i = 0; i < n; i++) {
        b->chunks[i].t0 = ntris * i / n;
        b->chunks[i].t1 = ntris * (i + 1) / n;
    }
    b->nchunks = (int)n;
}

static op_status chunk_counts(binning *b, op_arena *scratch, op_err *err)
{
    regroup_chunks(b);
    for (int i = 0; i < b->nchunks; i++) {
        b->chunks[i].count = op_arena_calloc(scratch, b->ntiles + 1, sizeof(uint32_t));
        if (!b->chunks[i].count)
            return op_err_set(err, OP_ENOMEM, "tiles: out of memory (%zu bytes of offsets)",
                              (b->ntiles + 1) * sizeof(uint32_t));
    }
    return OP_OK;
}

/* Phase 1 on its own: run before the settings are checked, so that a bad soup is
 * reported first whatever else is wrong (as op_soup_validate always was). */
static op_status check_soup(binning *b, int threads, op_arena *scratch, op_err *err)
{
    op_status st = make_chunks(b, threads, scratch, err);
    if (st == OP_OK)
        st = run_phase(b, 1, threads, err);
    for (int i = 0; st == OP_OK && i < b->nchunks; i++)
        if (b->chunks[i].bad) /* the serial check names the first offender */
            return op_soup_validate(b->soup, err);
    if (st == OP_OK && b->soup->tris_len == 0) { /* bounds of all vertices; one chunk */
        op_soup_bounds(b->soup, b->chunks[0].bmin, b->chunks[0].bmax);
        b->nchunks = 1;
    }
    return st;
}

/* The level's two floats a bin (phase 6 fills them), kept for the tile builds. */
static op_status bin_y_alloc(binning *b, op_arena *arena, op_err *err)
{
    b->bin_y = op_arena_alloc(arena, 2 * b->ntiles * sizeof *b->bin_y);
    if (!b->bin_y)
        return op_err_set(err, OP_ENOMEM, "tiles: out of memory (%zu bytes of bin heights)",
                          2 * b->ntiles * sizeof *b->bin_y);
    return OP_OK;
}

/* Phases 2 to 6: bounds, tile range, bins and copies of a checked soup (see above). */
static op_status bin_soup(op_level *l, binning *b, int threads, op_arena *scratch, op_err *err)
{
    op_status st;
    if ((st = merge_bounds(b, l->bmin, l->bmax, err)) != OP_OK ||
        (st = chunk_counts(b, scratch, err)) != OP_OK ||
        (st = run_phase(b, 3, threads, err)) != OP_OK ||
        (st = prefix_sums(b, l->arena, err)) != OP_OK ||
        (st = run_phase(b, 5, threads, err)) != OP_OK ||
        (st = bin_y_alloc(b, l->arena, err)) != OP_OK ||
        (st = copy_chunks(b, scratch, err)) != OP_OK ||
        (st = run_phase(b, 6, threads, err)) != OP_OK)
        return st;
    l->rect = b->range;
    l->bin_start = b->off;
    l->bin_ids = b->ids;
    l->bin_y = b->bin_y;
    return OP_OK;
}

static op_status soup_level(const op_soup *soup, const op_settings *s, const op_volume *vols,
                            int nvols, int threads, op_pool *pool, op_level **out, op_err *err);

op_status op_level_create(const op_soup *soup, const op_settings *s, const op_volume *vols,
                          int nvols, op_level **out, op_err *err)
{
    return op_level_create_threads(soup, s, vols, nvols, 1, out, err);
}

op_status op_level_create_threads(const op_soup *soup, const op_settings *s, const op_volume *vols,
                                  int nvols, int threads, op_level **out, op_err *err)
{
    *out = NULL;
    if (threads < 1 || threads > OP_MAX_THREADS)
        return op_err_set(err, OP_ERANGE, "level: threads = %d outside 1..%d", threads,
                          OP_MAX_THREADS);
    return soup_level(soup, s, vols, nvols, threads, NULL, out, err);
}

op_status op_level_create_pool(const op_soup *soup, const op_settings *s, const op_volume *vols,
                               int nvols, op_pool *pool, op_level **out, op_err *err)
{
    *out = NULL;
    if (!pool)
        return op_err_set(err, OP_EINVAL, "level: NULL pool");
    return soup_level(soup, s, vols, nvols, op_pool_threads(pool), pool, out, err);
}

static op_status soup_level(const op_soup *soup, const op_settings *s, const op_volume *vols,
                            int nvols, int threads, op_pool *pool, op_level **out, op_err *err)
{
    if (!soup || soup->verts_len % 3 != 0 || soup->tris_len % 3 != 0 ||
        (soup->verts_len && !soup->verts) || (soup->tris_len && !soup->tris))
        return op_soup_validate(soup, err); /* the shape checks and their messages */
    /* The scan bins with the settings' grid, so the level (settings, volumes) comes
     * first; a bad soup is still the error reported when both are bad. */
    op_level *l = NULL;
    op_err lerr;
    op_status st = level_new(s, vols, nvols, &l, &lerr);
    if (st != OP_OK) {
        op_status vs = op_soup_validate(soup, err);
        if (vs != OP_OK)
            return vs;
        if (err)
            *err = lerr;
        return st;
    }
    l->kind = OP_LEVEL_SOUP;
    l->soup = *soup;
    /* The binning's temporaries (a tile rectangle per triangle) live only here: in the
     * pool's spare arena when there is one and it is free (warm memory), else in one
     * of their own. */
    op_arena *spare = pool ? op__pool_take_arena(pool) : NULL;
    op_arena *scratch = spare ? spare : op_arena_create(0);
    binning b = {0};
    b.soup = soup;
    b.pool = pool;
    b.grid = l->grid;
    b.slope_cos = l->span.slope_cos;
    b.tri_class = l->tri_class = op_arena_alloc(l->arena, soup->tris_len / 3 + 1);
    st = !l->tri_class ? op_err_set(err, OP_ENOMEM, "level: out of memory (triangle classes)")
         : scratch     ? check_soup(&b, threads, scratch, err)
                       : op_err_set(err, OP_ENOMEM, "level: out of memory");
    if (st == OP_OK && soup->tris_len / 3 > 0xffffffffu)
        st = op_err_set(err, OP_ERANGE, "level: %zu triangles > 2^32 - 1", soup->tris_len / 3);
    if (st == OP_OK)
        st = bin_soup(l, &b, threads, scratch, err);
    if (spare)
        op__pool_give_arena(pool, spare);
    else
        op_arena_destroy(scratch);
    if (st != OP_OK) {
        op_level_destroy(l);
        return st;
    }
    l->soup_checked = 1;
    *out = l;
    op_err_clear(err);
    return OP_OK;
}

/* ---- one tile's level (level.h) ---- */

/* World coordinate w(c) = origin + c·cs of grid line c on one axis: the expression
 * op__cell_of compares a coordinate with, monotone in c, so cell(v) >= c iff w(c) <= v. */
static double grid_line(double origin, double cs, int64_t c)
{
    return origin + (double)c * cs;
}

/* Tile t's build grid on one axis as two world coordinates: a box lo..hi has tile t among
 * its tiles (op_triangle_tiles: floor((cell(lo) - B) / TC) <= t <= floor((cell(hi) + B) /
 * TC)) iff cell(lo) < t·TC + TC + B and cell(hi) >= t·TC − B, that is iff lo < *below and
 * hi >= *from. */
static void tile_lines(const op_tile_grid *g, double origin, int t, double *from, double *below)
{
    int64_t tc = g->tile_cells, b = g->border;
    *from = grid_line(origin, g->cs, (int64_t)t * tc - b);
    *below = grid_line(origin, g->cs, (int64_t)t * tc + tc + b);
}

/* What is wrong with listed triangle id of soup (its indices, vertices and area by
 * op_soup_validate's rules; failing none, its tiles miss the tile), named in err: the
 * slow path of tile_scan. */
static op_status tile_triangle_error(const op_soup *soup, uint32_t id, int tx, int tz, op_err *err)
{
    static const char axis[3] = {'x', 'y', 'z'};
    const int *ix = &soup->tris[3 * (size_t)id];
    size_t nv = soup->verts_len / 3;
    for (int k = 0; k < 3; k++)
        if (ix[k] < 0 || (size_t)ix[k] >= nv)
            return op_err_set(err, OP_ERANGE,
                              "level tile (%d, %d): triangle %u index %d is outside [0, %zu) "
                              "vertices",
                              tx, tz, id, ix[k], nv);
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++)
        for (int a = 0; a < 3; a++) {
            float v = soup->verts[3 * (size_t)ix[k] + (size_t)a];
            if (!(v >= -(float)OP_MAX_COORD && v <= (float)OP_MAX_COORD)) {
                int finite = isfinite(v);
                return op_err_set(err, finite ? OP_ERANGE : OP_EINVAL,
                                  "level tile (%d, %d): triangle %u vertex %d %c = %.9g is %s", tx,
                                  tz, id, ix[k], axis[a], (double)v,
                                  finite ? "beyond +-2^21" : "not finite");
            }
            lo[a] = (k == 0 || v < lo[a]) ? v : lo[a];
            hi[a] = (k == 0 || v > hi[a]) ? v : hi[a];
        }
    if (soup->areas && soup->areas[id] > OP_MAX_AREA)
        return op_err_set(err, OP_ERANGE, "level tile (%d, %d): triangle %u area %u is above %d",
                          tx, tz, id, (unsigned)soup->areas[id], OP_MAX_AREA);
    return op_err_set(err, OP_EINVAL,
                      "level tile (%d, %d): triangle %u is not one of the tile's (its box x "
                      "%.9g..%.9g, z %.9g..%.9g misses the tile's build grid)",
                      tx, tz, id, (double)lo[0], (double)hi[0], (double)lo[2], (double)hi[2]);
}

static inline float min3(float a, float b, float c)
{
    float m = b < a ? b : a;
    return c < m ? c : m;
}

static inline float max3(float a, float b, float c)
{
    float m = b > a ? b : a;
    return c > m ? c : m;
}

/* The listed triangles, checked (id order and range; indices, coordinates and areas unless
 * the soup was checked whole; each selected by the tile's lines) with few branches a
 * triangle; the bounds of their vertices into bb (min xyz, max xyz). The first bad one
 * named by the slow path. */
static op_status tile_scan(const op_soup *soup, const uint32_t *ids, size_t n,
                           const double lines[4], int tx, int tz, int checked, float bb[6],
                           op_err *err)
{
    const float *v = soup->verts;
    const int *tri = soup->tris;
    size_t nv = soup->verts_len / 3, ntris = soup->tris_len / 3;
    float b0 = bb[0], b1 = bb[1], b2 = bb[2], b3 = bb[3], b4 = bb[4], b5 = bb[5];
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ids[i];
        if (id >= ntris)
            return op_err_set(err, OP_ERANGE,
                              "level tile (%d, %d): triangle id %u (entry %zu) is outside [0, "
                              "%zu) triangles",
                              tx, tz, id, i, ntris);
        if (i > 0 && id <= ids[i - 1])
            return op_err_set(err, OP_EINVAL,
                              "level tile (%d, %d): triangle ids not increasing at entry %zu (%u "
                              "after %u)",
                              tx, tz, i, id, ids[i - 1]);
        const int *ix = &tri[3 * (size_t)id];
        int ok = checked || (((size_t)(unsigned)ix[0] < nv) & ((size_t)(unsigned)ix[1] < nv) &
                             ((size_t)(unsigned)ix[2] < nv));
        if (!ok)
            return tile_triangle_error(soup, id, tx, tz, err);
        const float *p0 = &v[3 * (size_t)ix[0]], *p1 = &v[3 * (size_t)ix[1]],
                    *p2 = &v[3 * (size_t)ix[2]];
        float x0 = min3(p0[0], p1[0], p2[0]), x1 = max3(p0[0], p1[0], p2[0]);
        float y0 = min3(p0[1], p1[1], p2[1]), y1 = max3(p0[1], p1[1], p2[1]);
        float z0 = min3(p0[2], p1[2], p2[2]), z1 = max3(p0[2], p1[2], p2[2]);
        /* Every coordinate within +-2^21: the box within it (an infinity widens the box)
         * and no NaN (which the box may not hold, but their sum does). */
        if (!checked) {
            const float m = (float)OP_MAX_COORD;
            float sum = p0[0] + p0[1] + p0[2] + p1[0] + p1[1] + p1[2] + p2[0] + p2[1] + p2[2];
            ok = (x0 >= -m) & (x1 <= m) & (y0 >= -m) & (y1 <= m) & (z0 >= -m) & (z1 <= m) &
                 (sum == sum) & (!soup->areas || soup->areas[id] <= OP_MAX_AREA);
        }
        ok &= ((double)x1 >= lines[0]) & ((double)x0 < lines[1]) & ((double)z1 >= lines[2]) &
              ((double)z0 < lines[3]);
        if (!ok)
            return tile_triangle_error(soup, id, tx, tz, err);
        int first = i == 0;
        b0 = first || x0 < b0 ? x0 : b0;
        b1 = first || y0 < b1 ? y0 : b1;
        b2 = first || z0 < b2 ? z0 : b2;
        b3 = first || x1 > b3 ? x1 : b3;
        b4 = first || y1 > b4 ? y1 : b4;
        b5 = first || z1 > b5 ? z1 : b5;
    }
    float out[6] = {b0, b1, b2, b3, b4, b5};
    memcpy(bb, out, sizeof out);
    return OP_OK;
}

/* Whether tile t (one axis) is one a box of valid coordinates can have. */
static int tile_reachable(const op_tile_grid *g, double origin, int t)
{
    int64_t tc = g->tile_cells;
    int64_t c0 = op_cell_of(-OP_MAX_COORD, origin, g->cs) - g->border,
            c1 = op_cell_of(OP_MAX_COORD, origin, g->cs) + g->border;
    int64_t t0 = c0 / tc - (c0 % tc != 0 && c0 < 0), t1 = c1 / tc - (c1 % tc != 0 && c1 < 0);
    return t >= t0 && t <= t1;
}

/* Makes l (soup, settings and grid set) the level of tile (tx, tz) alone over ids[0 .. n);
 * checked: the soup was validated whole (only ids and the selection are checked); known:
 * NULL, or the bounds tile_scan would give (min xyz, max xyz; n > 0), which the caller
 * vouches for with the list, so that nothing a triangle is read. */
static op_status one_tile(op_level *l, int tx, int tz, const uint32_t *ids, size_t n, int checked,
                          const float *known, op_err *err)
{
    const op_tile_grid *g = &l->grid;
    if (n && !ids)
        return op_err_set(err, OP_EINVAL, "level tile (%d, %d): NULL triangle ids, %zu of them", tx,
                          tz, n);
    if (n > 0xffffffffu)
        return op_err_set(err, OP_ERANGE, "level tile (%d, %d): %zu triangles > 2^32 - 1", tx, tz,
                          n);
    if (!(g->cs >= OP_MIN_CELL_SIZE))
        return op_err_set(err, OP_ERANGE,
                          "tiles: cell size tile_size / tile_cells = %g is below %g", g->cs,
                          OP_MIN_CELL_SIZE);
    if (!tile_reachable(g, g->origin_x, tx) || !tile_reachable(g, g->origin_z, tz))
        return op_err_set(err, OP_ERANGE,
                          "level tile (%d, %d): no triangle within +-2^21 reaches this tile", tx,
                          tz);
    double lines[4];
    tile_lines(g, g->origin_x, tx, &lines[0], &lines[1]);
    tile_lines(g, g->origin_z, tz, &lines[2], &lines[3]);
    /* No triangle: the corner of the tile's core cells. */
    float bb[6] = {0};
    bb[0] = bb[3] = (float)grid_line(g->origin_x, g->cs, (int64_t)tx * g->tile_cells);
    bb[2] = bb[5] = (float)grid_line(g->origin_z, g->cs, (int64_t)tz * g->tile_cells);
    if (known) {
        memcpy(bb, known, sizeof bb);
    } else {
        op_status st = tile_scan(&l->soup, ids, n, lines, tx, tz, checked, bb, err);
        if (st != OP_OK)
            return st;
    }
    l->kind = OP_LEVEL_SOUP;
    l->rect = (op_tile_rect){tx, tz, tx, tz};
    memcpy(l->bmin, bb, sizeof l->bmin);
    memcpy(l->bmax, bb + 3, sizeof l->bmax);
    l->one_bin[0] = 0;
    l->one_bin[1] = (uint32_t)n;
    l->bin_start = l->one_bin;
    l->bin_ids = ids;
    if (n > 0) {
        /* The listed triangles' lowest and highest vertex y: the values soup_rows finds
         * over the same vertices (a min / max of floats is exact; -0 and +0 give the same
         * y0 and rows), so the build takes them as a binned level's bin_y. */
        l->one_y[0] = bb[1];
        l->one_y[1] = bb[4];
        l->bin_y = l->one_y;
    }
    op_err_clear(err);
    return OP_OK;
}

static int soup_shape_ok(const op_soup *soup)
{
    return soup && soup->verts_len % 3 == 0 && soup->tris_len % 3 == 0 &&
           (!soup->verts_len || soup->verts) && (!soup->tris_len || soup->tris);
}

op_status op_level_create_tile(const op_soup *soup, const op_settings *s, const op_volume *vols,
                               int nvols, int tx, int tz, const uint32_t *ids, size_t n,
                               op_level **out, op_err *err)
{
    *out = NULL;
    if (!soup_shape_ok(soup))
        return op_soup_validate(soup, err); /* the shape checks and their messages */
    op_level *l = NULL;
    op_status st = level_new(s, vols, nvols, &l, err);
    if (st != OP_OK)
        return st;
    l->soup = *soup;
    if ((st = one_tile(l, tx, tz, ids, n, 0, NULL, err)) != OP_OK) {
        op_level_destroy(l);
        return st;
    }
    *out = l;
    return OP_OK;
}

op_status op_level_create_unbinned(const op_soup *soup, const op_settings *s, const op_volume *vols,
                                   int nvols, op_level **out, op_err *err)
{
    *out = NULL;
    op_status st = op_soup_validate(soup, err);
    op_level *l = NULL;
    if (st == OP_OK)
        st = level_new(s, vols, nvols, &l, err);
    if (st != OP_OK)
        return st;
    l->kind = OP_LEVEL_SOUP;
    l->soup = *soup;
    l->rect = (op_tile_rect){0, 0, -1, -1}; /* no tile of its own, no bounds (0) */
    l->soup_checked = 1;
    *out = l;
    op_err_clear(err);
    return OP_OK;
}

/* op_level_create_tile_of, with known bounds (NULL: scanned). */
static op_status tile_of(const op_level *base, int tx, int tz, const uint32_t *ids, size_t n,
                         const float *known, op_level **out, op_err *err)
{
    *out = NULL;
    if (!base || base->kind != OP_LEVEL_SOUP || !base->soup_checked)
        return op_err_set(err, OP_EINVAL, "level tile (%d, %d): %s", tx, tz,
                          !base ? "NULL base level"
                                : "the base level's soup was not checked whole (a soup level of "
                                  "op_level_create or op_level_create_unbinned is)");
    /* The base's settings and volumes were validated when it was made; nothing of the
     * level's own but the struct (no arena). */
    op_level *l = calloc(1, sizeof *l);
    if (!l)
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    l->settings = base->settings;
    l->vols = base->vols;
    l->nvols = base->nvols;
    l->grid = base->grid;
    l->span = base->span;
    l->soup = base->soup;
    /* Classes are per triangle of the soup, copies marked against the whole soup: a copy
     * (equal key, so equal vertices) is in every tile its first occurrence is in, so the
     * marks are the tile's own (base's, borrowed; NULL: the build classifies). */
    l->tri_class = base->tri_class;
    op_status st = one_tile(l, tx, tz, ids, n, 1, known, err);
    if (st != OP_OK) {
        op_level_destroy(l);
        return st;
    }
    *out = l;
    return OP_OK;
}

op_status op_level_create_tile_of(const op_level *base, int tx, int tz, const uint32_t *ids,
                                  size_t n, op_level **out, op_err *err)
{
    return tile_of(base, tx, tz, ids, n, NULL, out, err);
}

op_status op_level_create_tile_known(const op_level *base, int tx, int tz, const uint32_t *ids,
                                     size_t n, const float bmin[3], const float bmax[3],
                                     op_level **out, op_err *err)
{
    if (n == 0 || !bmin || !bmax) /* no triangle: the corner, as op_level_create_tile_of */
        return tile_of(base, tx, tz, ids, n, NULL, out, err);
    float known[6] = {bmin[0], bmin[1], bmin[2], bmax[0], bmax[1], bmax[2]};
    return tile_of(base, tx, tz, ids, n, known, out, err);
}

op_status op_level_classify(op_level *l, op_err *err)
{
    if (!l || l->kind != OP_LEVEL_SOUP || !l->soup_checked || !l->arena)
        return op_err_set(err, OP_EINVAL, "level classify: %s",
                          !l ? "NULL level" : "not a soup level checked whole with bins or none");
    if (l->tri_class) {
        op_err_clear(err);
        return OP_OK;
    }
    const op_soup *soup = &l->soup;
    size_t nt = soup->tris_len / 3;
    if (nt > 0xffffffffu)
        return op_err_set(err, OP_ERANGE, "level: %zu triangles > 2^32 - 1", nt);
    /* Twice the triangles' slots at least: every triangle may go in (copies do not). */
    size_t cap = 16;
    while (cap < 2 * nt)
        cap *= 2;
    uint8_t *cls = op_arena_alloc(l->arena, nt + 1);
    uint32_t *slot = malloc(cap * sizeof *slot), *hslot = malloc(cap * sizeof *hslot);
    if (!cls || !slot || !hslot) {
        free(slot);
        free(hslot);
        return op_err_set(err, OP_ENOMEM, "level: out of memory (triangle classes of %zu)", nt);
    }
    memset(slot, 0xff, cap * sizeof *slot);
    const float *v = soup->verts;
    const int *ix = soup->tris;
    const float slope_cos = l->span.slope_cos;
    for (size_t t = 0; t < nt; t++) {
        const float *q[3] = {&v[3 * (size_t)ix[3 * t]], &v[3 * (size_t)ix[3 * t + 1]],
                             &v[3 * (size_t)ix[3 * t + 2]]};
        uint32_t area = soup->areas ? soup->areas[t] : OP_WALKABLE_AREA;
        /* chunk_scan's class, chunk_copies' marks (over the whole soup, in input order). */
        cls[t] = (uint8_t)(op__triangle_walkable(q[0], q[1], q[2], slope_cos) ? area : 0);
        uint32_t h = tri_hash(q[0], q[1], q[2], area), key[10];
        int keyed = 0; /* the key is made on the first equal hash only */
        size_t at = h & (cap - 1);
        for (; slot[at] != 0xffffffffu; at = (at + 1) & (cap - 1)) {
            if (hslot[at] != h)
                continue;
            if (!keyed)
                tri_key(q, area, key);
            keyed = 1;
            uint32_t u = slot[at], other[10];
            const float *r[3] = {&v[3 * (size_t)ix[3 * (size_t)u]],
                                 &v[3 * (size_t)ix[3 * (size_t)u + 1]],
                                 &v[3 * (size_t)ix[3 * (size_t)u + 2]]};
            tri_key(r, soup->areas ? soup->areas[u] : OP_WALKABLE_AREA, other);
            if (!memcmp(key, other, sizeof key))
                break;
        }
        if (slot[at] != 0xffffffffu) {
            cls[t] = OP__TRI_COPY;
        } else {
            slot[at] = (uint32_t)t;
            hslot[at] = h;
        }
    }
    free(slot);
    free(hslot);
    l->tri_class = cls;
    op_err_clear(err);
    return OP_OK;
}

/* Tile range and bounds of a columns input (width x depth columns, rows rows from
 * (ox, oy, oz)): every tile whose core cells tx·TC … tx·TC + TC − 1 hold a column. */
static op_status columns_level(op_level *l, int width, int depth, int rows, double ox, double oy,
                               double oz, op_err *err)
{
    op_status st = op__columns_grid_origin(
        &l->settings, l->kind == OP_LEVEL_CHUNK ? "voxel chunk" : "heightfield", err);
    if (st != OP_OK)
        return st;
    int tc = l->grid.tile_cells;
    int nx = (width + tc - 1) / tc, nz = (depth + tc - 1) / tc;
    if ((long long)nx * nz > OP_MAX_TILES)
        return op_err_set(err, OP_ERANGE, "level: %d x %d = %lld tiles > %d", nx, nz,
                          (long long)nx * nz, OP_MAX_TILES);
    l->rect = (op_tile_rect){0, 0, nx - 1, nz - 1};
    double cs = l->grid.cs, ch = l->settings.cell_height;
    l->bmin[0] = (float)ox;
    l->bmin[1] = (float)oy;
    l->bmin[2] = (float)oz;
    l->bmax[0] = (float)(ox + width * cs);
    l->bmax[1] = (float)(oy + rows * ch);
    l->bmax[2] = (float)(oz + depth * cs);
    return OP_OK;
}

op_status op_level_create_hf(const op_hf_input *hf, const op_settings *s, const op_volume *vols,
                             int nvols, op_level **out, op_err *err)
{
    *out = NULL;
    op_status st;
    op_level *l;
    if ((st = op_hf_input_validate(hf, err)) != OP_OK ||
        (st = level_new(s, vols, nvols, &l, err)) != OP_OK)
        return st;
    l->kind = OP_LEVEL_HEIGHTFIELD;
    l->hf = *hf;
    if ((st = columns_level(l, hf->width, hf->depth, hf->rows, hf->origin_x, hf->origin_y,
                            hf->origin_z, err)) != OP_OK) {
        op_level_destroy(l);
        return st;
    }
    *out = l;
    op_err_clear(err);
    return OP_OK;
}

op_status op_level_create_chunk(const op_voxel_chunk *vc, const op_settings *s,
                                const op_volume *vols, int nvols, op_level **out, op_err *err)
{
    *out = NULL;
    op_status st;
    op_level *l;
    if ((st = op_voxel_chunk_validate(vc, err)) != OP_OK ||
        (st = level_new(s, vols, nvols, &l, err)) != OP_OK)
        return st;
    l->kind = OP_LEVEL_CHUNK;
    l->chunk = *vc;
    if ((st = columns_level(l, vc->sx, vc->sz, vc->sy, vc->origin_x, 0.0, vc->origin_z, err)) !=
        OP_OK) {
        op_level_destroy(l);
        return st;
    }
    *out = l;
    op_err_clear(err);
    return OP_OK;
}

void op_level_destroy(op_level *l)
{
    if (!l)
        return;
    op_arena_destroy(l->arena);
    free(l);
}

op_tile_rect op_level_tiles(const op_level *l)
{
    return l->rect;
}

const op_settings *op_level_settings(const op_level *l)
{
    return &l->settings;
}

int op_level_tile_count(const op_level *l)
{
    return (l->rect.tx1 - l->rect.tx0 + 1) * (l->rect.tz1 - l->rect.tz0 + 1);
}

int op_level_tile_index(const op_level *l, int tx, int tz)
{
    if (tx < l->rect.tx0 || tx > l->rect.tx1 || tz < l->rect.tz0 || tz > l->rect.tz1)
        return -1;
    return (tz - l->rect.tz0) * (l->rect.tx1 - l->rect.tx0 + 1) + (tx - l->rect.tx0);
}

void op_level_bounds(const op_level *l, float bmin[3], float bmax[3])
{
    memcpy(bmin, l->bmin, sizeof l->bmin);
    memcpy(bmax, l->bmax, sizeof l->bmax);
}

/* 0 for 0, else 2 floor(log2 c) + 1 + the bit below the top one: steps of 1.5x / 1.33x. */
static uint32_t cost_step(uint32_t c)
{
    if (c == 0)
        return 0;
    uint32_t k = 0;
    while (k < 31 && (c >> (k + 1)) != 0)
        k++;
    return 2 * k + 1 + (k > 0 ? (c >> (k - 1)) & 1 : 0);
}

op_status op_level_job_order(const op_level *l, op_tile_rect r, int *order, op_err *err)
{
    if (r.tx0 > r.tx1 || r.tz0 > r.tz1 || op_level_tile_index(l, r.tx0, r.tz0) < 0 ||
        op_level_tile_index(l, r.tx1, r.tz1) < 0)
        return op_err_set(err, OP_ERANGE,
                          "level: jobs %d..%d x %d..%d are not inside %d..%d x %d..%d", r.tx0,
                          r.tx1, r.tz0, r.tz1, l->rect.tx0, l->rect.tx1, l->rect.tz0, l->rect.tz1);
    int w = r.tx1 - r.tx0 + 1, n = w * (r.tz1 - r.tz0 + 1);
    uint32_t *cost = malloc((size_t)n * sizeof *cost);
    if (!cost)
        return op_err_set(err, OP_ENOMEM, "level: out of memory (%zu bytes of job costs)",
                          (size_t)n * sizeof *cost);
    /* A tile's build time grows with its triangles (rasterization leads), so a job's
     * cost is its bin's size, coarsely: in steps of about 1.5x. Tiles of one step keep
     * the row-major order, and with it the locality of neighbouring tiles' triangles
     * (sorting terrain:256's near-equal bins exactly scattered the jobs and cost 4 %
     * more CPU); columns inputs have tiles of one size. */
    for (int i = 0; i < n; i++) {
        int k = op_level_tile_index(l, r.tx0 + i % w, r.tz0 + i / w);
        cost[i] = l->bin_start ? cost_step(l->bin_start[k + 1] - l->bin_start[k]) : 1;
    }
    op_status st = op_parallel_order_by_cost(n, cost, order, err);
    free(cost);
    return st;
}
