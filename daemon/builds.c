/*
 * onepathd builds: where a tile builds and how. Builds run on the build pool (--threads
 * workers, each with its own arenas), or one at a time on the nng thread that received
 * the tile.get (so an on-demand read crosses no thread hand-off; the other nng threads
 * keep answering cached reads). What to build and what to do with the result is the
 * caller's (tiles.c): this file knows no level, only snapshots.
 *
 * How: a tile's bytes depend only on the triangles its selection takes, in the soup's
 * order (build3d-runtime.md §1), so the build makes the tile's own soup, the triangles
 * of every part's list for the tile in part (name) order, and prepares a level over it
 * (op_level_create, which selects them again, exactly as for the whole soup). Two
 * degenerate "anchor" triangles beyond the tile's build grid, on either side, make the
 * little level's tile range cover the tile without being selected by it (both checked;
 * should either check fail, near the coordinate limit, the tile is built from the whole
 * soup instead). Then the two calls `onepath bake` makes per tile: the blobs are
 * byte-identical to an offline bake of the level.
 *
 * Volumes: a build gets only the volumes whose reach holds its tile (build3d-runtime.md
 * §4.5; the reach widened by one more cell than the core's, so the subset holds every
 * volume that can matter). A rebuild from a tile's base needs no triangle at all: the
 * level it runs on is the two anchors alone, which give the tile's grid and settings.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "level.h"

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

/* A soup made for one build (malloc'd arrays). */
typedef struct tile_soup {
    float *v;
    int *t;
    uint8_t *a;
    op_soup soup;
} tile_soup;

static void tile_soup_free(tile_soup *ts)
{
    free(ts->v);
    free(ts->t);
    free(ts->a);
}

static op_status tile_soup_alloc(tile_soup *ts, size_t nv, size_t nt, int areas, op_err *err)
{
    memset(ts, 0, sizeof *ts);
    ts->v = malloc((nv ? nv : 1) * 3 * sizeof(float));
    ts->t = malloc((nt ? nt : 1) * 3 * sizeof(int));
    ts->a = areas ? malloc(nt ? nt : 1) : NULL;
    if (!ts->v || !ts->t || (areas && !ts->a)) {
        tile_soup_free(ts);
        return op_err_set(err, OP_ENOMEM, "build: out of memory for %zu triangles", nt);
    }
    ts->soup = (op_soup){ts->v, 3 * nv, ts->t, 3 * nt, ts->a};
    return OP_OK;
}

/* Area of a part's triangle in the level's soup: its own, 63 when it has none but some
 * other mesh has areas (protocol §3.2's soup). */
static uint8_t part_area(const opd_part *p, size_t t)
{
    return p->areas ? p->areas[t] : 63;
}

/* The whole soup of the snapshot (the fall-back). */
static op_status whole_soup(const opd_snap *sn, tile_soup *ts, op_err *err)
{
    op_status st = tile_soup_alloc(ts, sn->nv, sn->nt, sn->any_areas, err);
    size_t vb = 0, tb = 0;
    for (int i = 0; st == OP_OK && i < sn->nparts; i++) {
        const opd_part *p = sn->parts[i];
        memcpy(ts->v + 3 * vb, p->verts, p->nv * 3 * sizeof(float));
        for (size_t k = 0; k < 3 * p->nt; k++)
            ts->t[3 * tb + k] = p->tris[k] + (int)vb;
        for (size_t k = 0; ts->a && k < p->nt; k++)
            ts->a[tb + k] = part_area(p, k);
        vb += p->nv;
        tb += p->nt;
    }
    return st;
}

/* An anchor: a degenerate triangle at cell (cx, cz) of the grid. */
static void anchor(tile_soup *ts, size_t i, const op_tile_grid *g, int64_t cx, int64_t cz)
{
    for (int k = 0; k < 3; k++) {
        ts->v[9 * i + 3 * (size_t)k] = (float)(g->origin_x + ((double)cx + 0.5) * g->cs);
        ts->v[9 * i + 3 * (size_t)k + 1] = 0.0f;
        ts->v[9 * i + 3 * (size_t)k + 2] = (float)(g->origin_z + ((double)cz + 0.5) * g->cs);
        ts->t[3 * i + (size_t)k] = (int)(3 * i) + k;
    }
    if (ts->a)
        ts->a[i] = 0;
}

/* The tile's own soup: its triangles (three vertices each) and the two anchors. */
static op_status tile_soup_make(const opd_snap *sn, int tx, int tz, const op_tile_grid *g,
                                tile_soup *ts, op_err *err)
{
    size_t n = 0, k, most = 0;
    for (int i = 0; i < sn->nparts; i++) {
        k = opd_part_tile(sn->parts[i], tx, tz, NULL);
        n += k;
        most = k > most ? k : most;
    }
    op_status st = tile_soup_alloc(ts, 3 * (n + 2), n + 2, sn->any_areas, err);
    uint32_t *ids = st == OP_OK ? malloc((most ? most : 1) * sizeof *ids) : NULL;
    if (st == OP_OK && !ids) {
        tile_soup_free(ts);
        memset(ts, 0, sizeof *ts);
        st = op_err_set(err, OP_ENOMEM, "build: out of memory for %zu triangles", most);
    }
    size_t at = 0;
    for (int i = 0; st == OP_OK && i < sn->nparts; i++) {
        const opd_part *p = sn->parts[i];
        k = opd_part_tile(p, tx, tz, ids);
        for (size_t j = 0; j < k; j++, at++) {
            for (int c = 0; c < 3; c++) {
                const float *src = &p->verts[3 * (size_t)p->tris[3 * (size_t)ids[j] + (size_t)c]];
                memcpy(&ts->v[9 * at + 3 * (size_t)c], src, 3 * sizeof(float));
                ts->t[3 * at + (size_t)c] = (int)(3 * at) + c;
            }
            if (ts->a)
                ts->a[at] = part_area(p, ids[j]);
        }
    }
    free(ids);
    if (st != OP_OK)
        return st;
    /* Cells c of an anchor meet tile t's build grid iff t*TC - B <= c <= t*TC + TC + B - 1
     * (op_triangle_tiles): two cells and a tile beyond it on each side. */
    int64_t tc = g->tile_cells, b = g->border;
    anchor(ts, n, g, (int64_t)tx * tc - b - tc - 2, (int64_t)tz * tc - b - tc - 2);
    anchor(ts, n + 1, g, ((int64_t)tx + 2) * tc + b + 2, ((int64_t)tz + 2) * tc + b + 2);
    return OP_OK;
}

/* Whether the little level is the tile's: its range covers the tile and no anchor is
 * selected by it. */
static int tile_level_ok(const tile_soup *ts, const op_level *lvl, const op_tile_grid *g, int tx,
                         int tz)
{
    op_tile_rect r = op_level_tiles(lvl);
    if (tx < r.tx0 || tx > r.tx1 || tz < r.tz0 || tz > r.tz1)
        return 0;
    size_t n = ts->soup.tris_len / 3;
    for (size_t i = n - 2; i < n; i++) {
        op_tile_range a;
        if (op_triangle_tiles(&ts->soup, i, g, &r, &a) && tx >= a.tx0 && tx <= a.tx1 &&
            tz >= a.tz0 && tz <= a.tz1)
            return 0;
    }
    return 1;
}

/* A level of the two anchors alone, for a rebuild from a base (NULL when it does not
 * cover the tile). */
static op_level *anchors_level(const opd_snap *sn, int tx, int tz, const op_tile_grid *g,
                               tile_soup *ts)
{
    op_err e;
    if (tile_soup_alloc(ts, 6, 2, 0, &e) != OP_OK)
        return NULL;
    int64_t tc = g->tile_cells, b = g->border;
    anchor(ts, 0, g, (int64_t)tx * tc - b - tc - 2, (int64_t)tz * tc - b - tc - 2);
    anchor(ts, 1, g, ((int64_t)tx + 2) * tc + b + 2, ((int64_t)tz + 2) * tc + b + 2);
    op_level *lvl = NULL;
    if (op_level_create(&ts->soup, &sn->settings, NULL, 0, &lvl, &e) == OP_OK &&
        !tile_level_ok(ts, lvl, g, tx, tz)) {
        op_level_destroy(lvl);
        lvl = NULL;
    }
    if (!lvl)
        tile_soup_free(ts);
    return lvl;
}

/* A level to build tile (tx, tz) of sn from, over ts (kept alive by the caller). */
static op_status tile_level(const opd_snap *sn, int tx, int tz, tile_soup *ts, op_level **lvl,
                            op_err *err)
{
    op_tile_grid g;
    op_tile_grid_derive(&sn->settings, &g);
    op_status st = tile_soup_make(sn, tx, tz, &g, ts, err);
    if (st != OP_OK)
        return st;
    op_err e;
    if (op_level_create(&ts->soup, &sn->settings, NULL, 0, lvl, &e) == OP_OK) {
        if (tile_level_ok(ts, *lvl, &g, tx, tz))
            return OP_OK;
        op_level_destroy(*lvl);
    }
    *lvl = NULL;
    tile_soup_free(ts);
    if ((st = whole_soup(sn, ts, err)) != OP_OK)
        return st;
    return op_level_create(&ts->soup, &sn->settings, NULL, 0, lvl, err);
}

void opd_build_result_free(opd_build_result *b)
{
    free(b->layers);
    free(b->hashes);
    opd_blobs_free(b->blobs, b->nl);
    op_rebuild_entry_free(b->captured);
}

/* The tile's stages with vols: from base on the anchors' level when it can, else from the
 * tile's soup (capturing its base when asked). */
static op_status build_stages(const opd_snap *sn, int tx, int tz, const op_rebuild_entry *base,
                              int capture, const op_volume *vols, int nvols, op_arena *out,
                              op_arena *scratch, op_tile_stages *st, tile_soup *ts, op_level **lvl,
                              opd_build_result *b, op_err *e)
{
    op_tile_grid g;
    op_tile_grid_derive(&sn->settings, &g);
    if (base && (*lvl = anchors_level(sn, tx, tz, &g, ts)) != NULL) {
        op_status s =
            op_level_rebuild_tile(*lvl, base, vols, nvols, OP_STAGE_TILE, 0, out, scratch, st, e);
        if (s == OP_OK || s == OP_ENOMEM) {
            b->from_base = s == OP_OK;
            return s;
        }
        /* An entry that does not fit the level cannot be its tile's: build afresh. */
        op_level_destroy(*lvl);
        *lvl = NULL;
        tile_soup_free(ts);
        memset(ts, 0, sizeof *ts);
        op_arena_reset(out);
        op_arena_reset(scratch);
    }
    op_status s = tile_level(sn, tx, tz, ts, lvl, e);
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
