/*
 * onepathd tile methods (protocol §4.1, §4.2a): tile.get and tile.range. A ready tile is
 * packed from its cached blobs under the level's lock (copied once, into the reply
 * message); a tile that is not ready parks the call on the tile (single flight,
 * tiles.c) and the call runs again when the build lands. tile.range returns the ready
 * prefix of its rectangle in pages and queues the builds of the tiles after it.
 */
#include "level.h"

/* tile.range replies stop adding tiles past this many blob bytes unless asked. */
#define OPD_RANGE_DEFAULT_BYTES ((size_t)8 << 20)
/* Tile builds queued ahead of a tile.range reader (per build thread). */
#define OPD_RANGE_PREFETCH 2

static op_status range_error(const opd_level *lv, int tx, int tz, op_err *err)
{
    const opd_snap *s = lv->sn;
    if (!s->has_tiles)
        return op_err_set(err, OP_ERANGE, "tile (%d, %d): level '%s' has no tiles", tx, tz,
                          lv->name);
    return op_err_set(err, OP_ERANGE, "tile (%d, %d) is outside level '%s' tiles %d..%d x %d..%d",
                      tx, tz, lv->name, s->rect.tx0, s->rect.tx1, s->rect.tz0, s->rect.tz1);
}

static op_status build_error(const opd_tile *t, op_err *err)
{
    return op_err_set(err, t->err_status, "%s", t->err_msg ? t->err_msg : "build failed");
}

/* Packs one tile.get result map from a ready tile, NULL: a tile of the range without an
 * entry, which has no layers (level.h) (level lock held). */
static int pack_tile(msgpack_packer *pk, const opd_level *lv, int tx, int tz, const opd_tile *t)
{
    int nl = t ? t->nl : 0;
    /* The blobs are copied once, into the reply message: make room for them first. */
    int p = opd_reply_reserve(pk, (t ? t->blobs.bytes : 0) + 64 + 48 * (size_t)nl);
    p |= msgpack_pack_map(pk, 4);
    p |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, lv->version);
    p |= op_rpc_pack_key(pk, "tx") | msgpack_pack_int(pk, tx);
    p |= op_rpc_pack_key(pk, "tz") | msgpack_pack_int(pk, tz);
    p |= op_rpc_pack_key(pk, "layers") | msgpack_pack_array(pk, (size_t)nl);
    const op_bytes *blobs = t ? t->blobs.data : NULL;
    for (int k = 0; k < nl; k++) {
        p |= msgpack_pack_map(pk, 3);
        p |= op_rpc_pack_key(pk, "layer") | msgpack_pack_int(pk, t->layers[k]);
        p |= op_rpc_pack_key(pk, "hash") | msgpack_pack_uint64(pk, t->hashes[k]);
        p |= op_rpc_pack_key(pk, "blob") |
             msgpack_pack_bin_with_body(pk, blobs[k].data, blobs[k].len);
    }
    return p;
}

static op_status tile_get(opd_call *c, int tx, int tz, msgpack_packer *pk, op_err *err)
{
    opd_daemon *d = c->d;
    opd_level *lv = opd_registry_find_live(d->reg, c->level, err);
    if (!lv)
        return err->status;
    op_status st = OP_OK;
    opd_tile_job *here = NULL;
    pthread_mutex_lock(&lv->mu);
    int in = opd_snap_in_rect(lv->sn, tx, tz);
    opd_tile *t = in ? opd_level_tile(lv, tx, tz) : NULL;
    if (!in) {
        st = range_error(lv, tx, tz, err);
    } else if (!t) {
        opd_stats_cache(&d->stats, OPD_CACHE_BLOBS, 1, 0, 0);
        if (pack_tile(pk, lv, tx, tz, NULL))
            st = op_err_set(err, OP_ENOMEM, "tile.get: out of memory");
    } else if (!opd_tile_ready(t)) {
        opd_stats_cache(&d->stats, OPD_CACHE_BLOBS, 0, 1, 0);
        here = opd_tile_park(lv, t, &c->wait, !c->woken);
        st = OPD_PARKED;
    } else if (t->err_status != OP_OK) {
        st = build_error(t, err);
    } else {
        opd_stats_cache(&d->stats, OPD_CACHE_BLOBS, 1, 0, 0);
        if (pack_tile(pk, lv, tx, tz, t))
            st = op_err_set(err, OP_ENOMEM, "tile.get: out of memory");
        opd_cache_touch(d->cache, &t->blobs);
    }
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    /* The build answers c (and whoever else waits): c is not ours after this. */
    if (here)
        opd_tile_build_here(here);
    return st;
}

op_status opd_m_tile_get(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "tx", "tz", NULL};
    int tx, tz;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_param_i32(p, "tx", &tx, err)) != OP_OK ||
        (st = opd_param_i32(p, "tz", &tz, err)) != OP_OK)
        return st;
    return tile_get(c, tx, tz, pk, err);
}

/* ===== tile.range ===== */

/* Row-major successor of (tx, tz) inside rc; 0 when none. */
static int next_tile(const int rc[4], int *tx, int *tz)
{
    if (*tx < rc[2]) {
        (*tx)++;
        return 1;
    }
    if (*tz < rc[3]) {
        *tx = rc[0];
        (*tz)++;
        return 1;
    }
    return 0;
}

/* The asked rectangle clipped to the level's range; 0 when nothing is left. */
static int clip_rect(const opd_snap *s, const int req[4], int rc[4])
{
    if (!s->has_tiles)
        return 0;
    rc[0] = req[0] > s->rect.tx0 ? req[0] : s->rect.tx0;
    rc[1] = req[1] > s->rect.tz0 ? req[1] : s->rect.tz0;
    rc[2] = req[2] < s->rect.tx1 ? req[2] : s->rect.tx1;
    rc[3] = req[3] < s->rect.tz1 ? req[3] : s->rect.tz1;
    return rc[0] <= rc[2] && rc[1] <= rc[3];
}

/* The first tile to return: the rectangle's first, or the row-major successor of after
 * inside it; 0 when none is left. */
static int range_start(const int rc[4], const int *after, int *tx, int *tz)
{
    *tx = rc[0];
    *tz = rc[1];
    if (!after || after[1] < rc[1])
        return 1;
    if (after[1] > rc[3])
        return 0;
    *tz = after[1];
    if (after[0] < rc[0])
        return 1;
    if (after[0] >= rc[2]) {
        *tz = after[1] + 1;
        return after[1] < rc[3];
    }
    *tx = after[0] + 1;
    return 1;
}

/* Queues builds of the next tiles from (tx, tz) so that the next page finds them ready. */
static void prefetch(opd_level *lv, const int rc[4], int tx, int tz)
{
    for (int k = 0; k < OPD_RANGE_PREFETCH * lv->d->cfg.threads; k++) {
        opd_tile *u = opd_level_tile(lv, tx, tz);
        if (u && !opd_tile_ready(u))
            opd_tile_start_build(lv, u);
        if (!next_tile(rc, &tx, &tz))
            break;
    }
}

typedef struct page {
    int tx, tz; /* first tile */
    int n;      /* tiles in the page */
    int more;   /* tiles remain after it */
    int lastx, lastz;
} page;

/* Counts the ready prefix from (pg->tx, pg->tz) within max_bytes (at least one tile),
 * parking c on the first tile when it is not ready. */
static op_status range_page(opd_call *c, opd_level *lv, const int rc[4], size_t max_bytes, page *pg,
                            op_err *err)
{
    int ex = pg->tx, ez = pg->tz;
    size_t bytes = 0;
    while (pg->more) {
        /* rc is inside the range: a tile without an entry has no layers (level.h). */
        opd_tile *t = opd_level_tile(lv, ex, ez);
        if (t && !opd_tile_ready(t)) {
            prefetch(lv, rc, ex, ez);
            if (pg->n > 0)
                return OP_OK;
            opd_stats_cache(&c->d->stats, OPD_CACHE_BLOBS, 0, 1, 0);
            opd_tile_park(lv, t, &c->wait, 0);
            return OPD_PARKED;
        }
        if (t && t->err_status != OP_OK)
            return pg->n ? OP_OK : build_error(t, err);
        size_t tb = t ? t->blobs.bytes : 0;
        if (pg->n > 0 && bytes + tb > max_bytes)
            return OP_OK;
        bytes += tb;
        pg->n++;
        pg->lastx = ex;
        pg->lastz = ez;
        pg->more = next_tile(rc, &ex, &ez);
    }
    return OP_OK;
}

static int pack_page(opd_daemon *d, opd_level *lv, const int rc[4], const page *pg,
                     msgpack_packer *pk)
{
    int p = msgpack_pack_map(pk, 2) | op_rpc_pack_key(pk, "tiles");
    p |= msgpack_pack_array(pk, (size_t)pg->n);
    int tx = pg->tx, tz = pg->tz;
    for (int i = 0; i < pg->n; i++) {
        opd_tile *t = opd_level_tile(lv, tx, tz);
        p |= pack_tile(pk, lv, tx, tz, t);
        if (t)
            opd_cache_touch(d->cache, &t->blobs);
        next_tile(rc, &tx, &tz);
    }
    if (pg->n)
        opd_stats_cache(&d->stats, OPD_CACHE_BLOBS, pg->n, 0, 0);
    p |= op_rpc_pack_key(pk, "next");
    if (pg->n > 0 && pg->more)
        p |= msgpack_pack_array(pk, 2) | msgpack_pack_int(pk, pg->lastx) |
             msgpack_pack_int(pk, pg->lastz);
    else
        p |= msgpack_pack_nil(pk);
    return p;
}

static op_status tile_range(opd_call *c, const int req[4], const int *after, size_t max_bytes,
                            msgpack_packer *pk, op_err *err)
{
    opd_level *lv = opd_registry_find_live(c->d->reg, c->level, err);
    if (!lv)
        return err->status;
    pthread_mutex_lock(&lv->mu);
    int rc[4] = {0, 0, -1, -1}; /* set by clip_rect when anything is left */
    page pg = {0};
    pg.more = clip_rect(lv->sn, req, rc) && range_start(rc, after, &pg.tx, &pg.tz);
    op_status st = range_page(c, lv, rc, max_bytes, &pg, err);
    if (st == OP_OK && pack_page(c->d, lv, rc, &pg, pk))
        st = op_err_set(err, OP_ENOMEM, "tile.range: out of memory");
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    return st;
}

op_status opd_m_tile_range(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "tx0",   "tz0",       "tx1",
                                          "tz1",   "after", "max_bytes", NULL};
    int rc[4], after[2], has_after, has_max;
    int64_t max_bytes = (int64_t)OPD_RANGE_DEFAULT_BYTES;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_param_i32(p, "tx0", &rc[0], err)) != OP_OK ||
        (st = opd_param_i32(p, "tz0", &rc[1], err)) != OP_OK ||
        (st = opd_param_i32(p, "tx1", &rc[2], err)) != OP_OK ||
        (st = opd_param_i32(p, "tz1", &rc[3], err)) != OP_OK ||
        (st = opd_param_pair(p, "after", after, &has_after, err)) != OP_OK ||
        (st = op_rpc_get_int(p, "max_bytes", 1, INT64_MAX, 1, &max_bytes, &has_max, err)) != OP_OK)
        return st;
    if (!has_max)
        max_bytes = (int64_t)OPD_RANGE_DEFAULT_BYTES;
    if (rc[0] > rc[2] || rc[1] > rc[3])
        return op_err_set(err, OP_ERANGE, "tile.range: empty rectangle %d..%d x %d..%d", rc[0],
                          rc[2], rc[1], rc[3]);
    return tile_range(c, rc, has_after ? after : NULL, (size_t)max_bytes, pk, err);
}
