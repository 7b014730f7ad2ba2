/*
 * onepathd builds: where a tile builds and how. Builds run on the build pool (--threads
 * workers, each with its own arenas), or one at a time on the nng thread that received
 * the tile.get (so an on-demand read crosses no thread hand-off; the other nng threads
 * keep answering cached reads). What to build and what to do with the result is the
 * caller's (tiles.c): this file knows no level, only snapshots.
 *
 * How: a tile's bytes depend only on the triangles its selection takes, in the soup's
 * order (build3d-runtime.md §1), and every part keeps its list for each tile (snapshot.c,
 * made once when the mesh was put). So a build prepares a level of its tile alone over
 * exactly those triangles, not binned again: for a tile whose triangles all come from one
 * part (every tile of a level of one mesh) over that part's soup, borrowed and checked
 * when the mesh was put, with the part's list and the bounds the part keeps for the tile
 * (op_level_create_tile_known: nothing of the list is read again); otherwise over a soup
 * gathered from the parts' lists in part (name) order (op_level_create_tile, which checks
 * the gathered triangles). Then the two calls `onepath bake` makes per tile: the blobs are
 * byte-identical to an offline bake of the level.
 *
 * Volumes: a build gets only the volumes whose reach holds its tile (build3d-runtime.md
 * §4.5; the reach widened by one more cell than the core's, so the subset holds every
 * volume that can matter). A rebuild from a tile's base needs no triangle at all: it runs
 * on the tile's level without triangles, which gives the tile's grid and settings.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "level.h"
#include "onepath/level.h"

struct opd_builder {
    opd_pool *pool;
    /* The one build at a time that runs on the thread that received its tile.get, with
     * its arenas; NULL arenas: none. */
    atomic_int here_busy;
    op_arena *here_out, *here_scratch;
};

opd_builder *opd_builder_create(int threads)
{
    opd_builder *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    atomic_init(&b->here_busy, 0);
    b->pool = opd_pool_create(threads);
    if (!b->pool) {
        free(b);
        return NULL;
    }
    b->here_out = op_arena_create(0);
    b->here_scratch = op_arena_create(0);
    if (!b->here_out || !b->here_scratch) { /* no builds on the receiving thread */
        op_arena_destroy(b->here_out);
        op_arena_destroy(b->here_scratch);
        b->here_out = b->here_scratch = NULL;
    }
    return b;
}

void opd_builder_destroy(opd_builder *b)
{
    if (!b)
        return;
    opd_pool_destroy(b->pool);
    op_arena_destroy(b->here_out);
    op_arena_destroy(b->here_scratch);
    free(b);
}

int opd_builder_submit(opd_builder *b, opd_job_fn fn, void *arg)
{
    return opd_pool_submit(b->pool, fn, arg);
}

size_t opd_builder_queued(opd_builder *b)
{
    return opd_pool_queued(b->pool);
}

int opd_builder_claim_here(opd_builder *b)
{
    return b->here_out && !atomic_exchange(&b->here_busy, 1);
}

void opd_builder_unclaim_here(opd_builder *b)
{
    atomic_store(&b->here_busy, 0);
}

void opd_builder_run_here(opd_builder *b, opd_job_fn fn, void *arg)
{
    fn(arg, b->here_out, b->here_scratch);
    op_arena_reset(b->here_out);
    op_arena_reset(b->here_scratch);
    opd_builder_unclaim_here(b);
}

/* ===== reach ===== */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

int opd_box_touches(const op_tile_grid *g, const opd_box *b, int tx, int tz)
{
    /* Global cells on the level's cell lines (cell c spans [o + c·cs, o + (c+1)·cs), o the
     * grid origin); the slack absorbs the rounding of this division against the core's. */
    int t[2] = {tx, tz};
    for (int i = 0; i < 2; i++) {
        double o = i ? g->origin_z : g->origin_x;
        int64_t c0 = (int64_t)floor((b->lo[i] - o) / g->cs) - b->slack - g->border;
        int64_t c1 = (int64_t)floor((b->hi[i] - o) / g->cs) + b->slack + g->border;
        if (t[i] < floor_div(c0, g->tile_cells) || t[i] > floor_div(c1, g->tile_cells))
            return 0;
    }
    return 1;
}

opd_box opd_volume_box(const opd_volume *v)
{
    opd_box b = {{v->lo[0], v->lo[1]}, {v->hi[0], v->hi[1]}, 2};
    return b;
}

/* The snapshot's volumes that reach tile (tx, tz), in name order (*out malloc'd, NULL
 * when none). */
static op_status tile_volumes(const opd_snap *sn, const op_tile_grid *g, int tx, int tz,
                              op_volume **out, int *n, op_err *err)
{
    *out = NULL;
    *n = 0;
    int total = opd_vset_count(sn->vols), k = 0;
    for (int i = 0; i < total; i++) {
        opd_box b = opd_volume_box(sn->vols->v[i]);
        k += opd_box_touches(g, &b, tx, tz);
    }
    if (k == 0)
        return OP_OK;
    op_volume *v = malloc((size_t)k * sizeof *v);
    if (!v)
        return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory for %d volumes", tx, tz, k);
    k = 0;
    for (int i = 0; i < total; i++) {
        opd_box b = opd_volume_box(sn->vols->v[i]);
        if (opd_box_touches(g, &b, tx, tz))
            v[k++] = sn->vols->v[i]->v;
    }
    *out = v;
    *n = k;
    return OP_OK;
}

/* ===== the tile's level ===== */

/* What a tile's level borrows (malloc'd arrays, freed after the build): the tile's ids
 * and, when its triangles come from more than one part, the soup gathered from them. */
typedef struct tile_soup {
    float *v;
    int *t;
    uint8_t *a;
    uint32_t *ids;
    size_t n; /* ids */
    op_soup soup;
    const opd_part *from; /* the part whose soup it is, or NULL (gathered, or none) */
} tile_soup;

static void tile_soup_free(tile_soup *ts)
{
    free(ts->v);
    free(ts->t);
    free(ts->a);
    free(ts->ids);
    memset(ts, 0, sizeof *ts);
}

/* Area of a part's triangle in the level's soup: its own, 63 when it has none but some
 * other mesh has areas (protocol §3.2's soup). */
static uint8_t part_area(const opd_part *p, size_t t)
{
    return p->areas ? p->areas[t] : 63;
}

/* The soup of tile (tx, tz) and its triangle ids in it. One part holding all the tile's
 * triangles (a level of one mesh: every tile): that part's soup, borrowed, and its list
 * for the tile (a part without areas reads as 63 = OP_WALKABLE_AREA, its area in the
 * level's soup). Several: their triangles gathered in part order, three vertices each. */
static op_status tile_soup_make(const opd_snap *sn, int tx, int tz, tile_soup *ts, op_err *err)
{
    memset(ts, 0, sizeof *ts);
    size_t n = 0, k;
    int from = -1, parts = 0;
    for (int i = 0; i < sn->nparts; i++) {
        k = opd_part_tile(sn->parts[i], tx, tz, NULL);
        n += k;
        if (k) {
            from = i;
            parts++;
        }
    }
    if (parts <= 1) {
        if (n && !(ts->ids = malloc(n * sizeof *ts->ids)))
            return op_err_set(err, OP_ENOMEM, "build: out of memory for %zu triangles", n);
        if (n)
            opd_part_tile(sn->parts[from], tx, tz, ts->ids);
        ts->from = n ? sn->parts[from] : NULL;
        ts->soup = n ? ts->from->soup : (op_soup){NULL, 0, NULL, 0, NULL};
        ts->n = n;
        return OP_OK;
    }
    ts->v = malloc(n * 9 * sizeof(float));
    ts->t = malloc(n * 3 * sizeof(int));
    ts->a = sn->any_areas ? malloc(n) : NULL;
    ts->ids = malloc(n * sizeof *ts->ids);
    if (!ts->v || !ts->t || (sn->any_areas && !ts->a) || !ts->ids) {
        tile_soup_free(ts);
        return op_err_set(err, OP_ENOMEM, "build: out of memory for %zu triangles", n);
    }
    size_t at = 0;
    for (int i = 0; i < sn->nparts; i++) {
        const opd_part *p = sn->parts[i];
        k = opd_part_tile(p, tx, tz, ts->ids);
        for (size_t j = 0; j < k; j++, at++) {
            for (int c = 0; c < 3; c++) {
                const float *src =
                    &p->verts[3 * (size_t)p->tris[3 * (size_t)ts->ids[j] + (size_t)c]];
                memcpy(&ts->v[9 * at + 3 * (size_t)c], src, 3 * sizeof(float));
                ts->t[3 * at + (size_t)c] = (int)(3 * at) + c;
            }
            if (ts->a)
                ts->a[at] = part_area(p, ts->ids[j]);
        }
    }
    for (size_t j = 0; j < n; j++)
        ts->ids[j] = (uint32_t)j;
    ts->soup = (op_soup){ts->v, 9 * n, ts->t, 3 * n, ts->a};
    ts->n = n;
    return OP_OK;
}

/* A level of tile (tx, tz) of sn alone, over ts (kept alive by the caller): the tile's
 * own triangles, checked but not binned again (op_level_create_tile). with_tris 0: no
 * triangle, for a rebuild from a base (the level gives the tile's grid and settings). */
static op_status tile_level(const opd_snap *sn, int tx, int tz, int with_tris, tile_soup *ts,
                            op_level **lvl, op_err *err)
{
    op_status st = with_tris ? tile_soup_make(sn, tx, tz, ts, err) : OP_OK;
    float bmin[3], bmax[3];
    if (st == OP_OK && ts->from && opd_part_tile_box(ts->from, tx, tz, bmin, bmax) == 1)
        /* The part's soup was checked, its lists made by the selection and their bounds
         * kept, when it was put: the level is made without reading a triangle. */
        st = op_level_create_tile_known(ts->from->whole, tx, tz, ts->ids, ts->n, bmin, bmax, lvl,
                                        err);
    else if (st == OP_OK && ts->from)
        st = op_level_create_tile_of(ts->from->whole, tx, tz, ts->ids, ts->n, lvl, err); /* scan */
    else if (st == OP_OK)
        st = op_level_create_tile(&ts->soup, &sn->settings, NULL, 0, tx, tz, ts->ids, ts->n, lvl,
                                  err);
    return st;
}

void opd_build_result_free(opd_build_result *b)
{
    free(b->layers);
    free(b->hashes);
    opd_blobs_free(b->blobs, b->nl);
    op_rebuild_entry_free(b->captured);
}

/* The tile's stages with vols: from base on a level without triangles when it can, else
 * from the tile's triangles (capturing its base when asked). */
static op_status build_stages(const opd_snap *sn, int tx, int tz, const op_rebuild_entry *base,
                              int capture, const op_volume *vols, int nvols, op_arena *out,
                              op_arena *scratch, op_tile_stages *st, tile_soup *ts, op_level **lvl,
                              opd_build_result *b, op_err *e)
{
    op_err le;
    if (base && tile_level(sn, tx, tz, 0, ts, lvl, &le) == OP_OK) {
        op_status s =
            op_level_rebuild_tile(*lvl, base, vols, nvols, OP_STAGE_TILE, 0, out, scratch, st, e);
        if (s == OP_OK || s == OP_ENOMEM) {
            b->from_base = s == OP_OK;
            return s;
        }
        /* An entry that does not fit the level cannot be its tile's: build afresh. */
        op_level_destroy(*lvl);
        *lvl = NULL;
        op_arena_reset(out);
        op_arena_reset(scratch);
    }
    op_status s = tile_level(sn, tx, tz, 1, ts, lvl, e);
    if (s == OP_OK)
        s = op_level_build_tile(*lvl, tx, tz, vols, nvols, OP_STAGE_TILE, 0, out, scratch, st,
                                capture ? &b->captured : NULL, e);
    return s;
}

void opd_build_tile(const opd_snap *sn, int tx, int tz, const op_rebuild_entry *base, int capture,
                    op_arena *out, op_arena *scratch, opd_build_result *b)
{
    op_err e;
    op_err_clear(&e);
    op_tile_stages st;
    memset(b, 0, sizeof *b);
    tile_soup ts;
    memset(&ts, 0, sizeof ts);
    op_level *lvl = NULL;
    op_volume *vols = NULL;
    int nvols = 0;
    op_tile_grid g;
    op_tile_grid_derive(&sn->settings, &g);
    if (!out || !scratch)
        b->st = op_err_set(&e, OP_ENOMEM, "tile (%d, %d): no arena", tx, tz);
    else if ((b->st = tile_volumes(sn, &g, tx, tz, &vols, &nvols, &e)) == OP_OK)
        b->st = build_stages(sn, tx, tz, base, capture, vols, nvols, out, scratch, &st, &ts, &lvl,
                             b, &e);
    int n = b->st == OP_OK ? st.ntiles : 0;
    if (b->st == OP_OK && n > 0) {
        b->layers = calloc((size_t)n, sizeof *b->layers);
        b->hashes = calloc((size_t)n, sizeof *b->hashes);
        b->blobs = calloc((size_t)n, sizeof *b->blobs);
        if (!b->layers || !b->hashes || !b->blobs)
            b->st = op_err_set(&e, OP_ENOMEM, "tile (%d, %d): out of memory", tx, tz);
    }
    for (int k = 0; b->st == OP_OK && k < n; k++) {
        b->st = op_tile_encode(&st.tiles[k], &b->blobs[k], &b->hashes[k], &e);
        b->layers[k] = st.tiles[k].layer;
        b->bytes += b->blobs[k].len;
        b->nl = k + 1;
    }
    op_level_destroy(lvl);
    tile_soup_free(&ts);
    free(vols);
    if (b->st != OP_OK) {
        opd_build_result_free(b);
        memset(b, 0, sizeof *b);
        b->st = e.status ? e.status : OP_EINTERNAL;
        snprintf(b->msg, sizeof b->msg, "%s", e.msg);
    }
}
