/*
 * onepathd tile methods (protocol §4.1, §4.2a, §4.2b): tile.get and tile.range. A ready
 * tile is packed from its cached blobs under the level's lock (copied once, into the reply
 * message); a tile that is not ready parks the call on the tile (single flight,
 * tiles.c) and the call runs again when the build lands. tile.range returns the ready
 * prefix of its rectangle in pages and queues the builds of the tiles after it; with
 * wait_ms it parks on the page's next unbuilt tile too, until its deadline, so one page
 * carries many tiles of a level not built yet.
 * format "detour": the cell's Detour tile data (detour-export.md §3), made from the
 * cached blobs on its first request and kept after them in the same cache entry, so it
 * lives, counts and is evicted with them and goes when a rebuild replaces them.
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"
#include "onepath/detour.h"

/* tile.range replies stop adding tiles past this many blob bytes unless asked. */
#define OPD_RANGE_DEFAULT_BYTES ((size_t)8 << 20)
/* Tile builds queued ahead of a tile.range reader (per build thread). */
#define OPD_RANGE_PREFETCH 2
/* A waiting tile.range page (wait_ms > 0) waits for no more builds once it holds this many
 * tiles (protocol §4 rule 2a): each wake-up counts the page again from its start. */
#define OPD_RANGE_WAIT_TILES 1024

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

typedef enum tile_format { FORMAT_NATIVE, FORMAT_DETOUR } tile_format;

/* The optional `format` param: "native" (the default) or "detour". */
static op_status param_format(const msgpack_object *p, tile_format *f, op_err *err)
{
    const char *s;
    size_t len;
    op_status st = op_rpc_get_str(p, "format", 1, &s, &len, err);
    *f = FORMAT_NATIVE;
    if (st != OP_OK || !s)
        return st;
    if (len == 6 && !memcmp(s, "native", 6))
        return OP_OK;
    if (len == 6 && !memcmp(s, "detour", 6)) {
        *f = FORMAT_DETOUR;
        return OP_OK;
    }
    /* Echo at most 32 bytes, printable ASCII only. */
    char shown[33];
    size_t n = len > 32 ? 32 : len;
    for (size_t i = 0; i < n; i++)
        shown[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    shown[n] = '\0';
    return op_err_set(err, OP_EINVAL, "format '%s%s' is not \"native\" or \"detour\"", shown,
                      len > 32 ? "..." : "");
}

/* The Detour data of ready tile t (level lock held): NULL in *out when the cell has no
 * layers. Made from the cached blobs on first use (decoded, then op_detour_tile_data
 * with the snapshot's settings: the function the offline export runs per cell) and
 * kept in the blob entry after them; *grew says the cache grew (evict once unlocked). */
static op_status detour_data(opd_daemon *d, opd_level *lv, opd_tile *t, const op_bytes **out,
                             int *grew, op_err *err)
{
    *out = NULL;
    if (t->nl == 0)
        return OP_OK;
    op_bytes *blobs = t->blobs.data;
    if (t->blobs.n > t->nl) {
        *out = &blobs[t->nl];
        return OP_OK;
    }
    op_arena *a = op_arena_create(0), *scratch = op_arena_create(0);
    op_tile *tiles = a ? op_arena_alloc(a, sizeof *tiles * (size_t)t->nl) : NULL;
    const op_tile **ptrs = a ? op_arena_alloc(a, sizeof *ptrs * (size_t)t->nl) : NULL;
    op_status st = OP_OK;
    op_err e;
    if (!scratch || !tiles || !ptrs)
        st = op_err_set(&e, OP_ENOMEM, "out of memory");
    for (int k = 0; st == OP_OK && k < t->nl; k++) {
        st = op_tile_decode(blobs[k].data, blobs[k].len, a, &tiles[k], NULL, &e);
        ptrs[k] = &tiles[k];
    }
    uint8_t *data = NULL;
    size_t size = 0;
    int npolys;
    if (st == OP_OK)
        st = op_detour_tile_data(ptrs, t->nl, &lv->sn->settings, a, scratch, &data, &size, &npolys,
                                 &e);
    op_bytes copy = {NULL, size};
    if (st == OP_OK && !(copy.data = malloc(size ? size : 1)))
        st = op_err_set(&e, OP_ENOMEM, "out of memory (%zu bytes)", size);
    if (st == OP_OK)
        memcpy(copy.data, data, size);
    op_arena_destroy(a);
    op_arena_destroy(scratch);
    op_bytes *more = NULL;
    if (st == OP_OK && !(more = realloc(blobs, sizeof *more * (size_t)(t->nl + 1)))) {
        free(copy.data);
        st = op_err_set(&e, OP_ENOMEM, "out of memory");
    }
    if (st != OP_OK)
        return op_err_set(err, st, "tile (%d, %d) in Detour form: %s", t->tx, t->tz, e.msg);
    more[t->nl] = copy;
    opd_cache_grow(d->cache, &t->blobs, more, t->nl + 1, copy.len);
    *grew = 1;
    *out = &more[t->nl];
    return OP_OK;
}

/* Packs one tile.get result map in Detour form (protocol §4.2b; level lock held). */
static int pack_detour(msgpack_packer *pk, const opd_level *lv, int tx, int tz, const opd_tile *t,
                       const op_bytes *data)
{
    int nl = t ? t->nl : 0;
    int p = opd_reply_reserve(pk, (data ? data->len : 0) + 96 + 9 * (size_t)nl);
    p |= msgpack_pack_map(pk, 6);
    p |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, lv->version);
    p |= op_rpc_pack_key(pk, "tx") | msgpack_pack_int(pk, tx);
    p |= op_rpc_pack_key(pk, "tz") | msgpack_pack_int(pk, tz);
    p |= op_rpc_pack_key(pk, "format") | msgpack_pack_str_with_body(pk, "detour", 6);
    p |= op_rpc_pack_key(pk, "hashes") | msgpack_pack_array(pk, (size_t)nl);
    for (int k = 0; k < nl; k++)
        p |= msgpack_pack_uint64(pk, t->hashes[k]);
    p |= op_rpc_pack_key(pk, "data");
    if (data)
        p |= msgpack_pack_bin_with_body(pk, data->data, data->len);
    else
        p |= msgpack_pack_nil(pk);
    return p;
}

/* The bytes of a ready tile's native blobs (its cache entry may hold its Detour data too);
 * NULL: a tile without an entry, no layers (level.h). */
static size_t native_bytes(const opd_tile *t)
{
    size_t n = 0;
    const op_bytes *blobs = t ? t->blobs.data : NULL;
    for (int k = 0; t && k < t->nl; k++)
        n += blobs[k].len;
    return n;
}

/* Packs one tile.get result map from a ready tile, NULL: a tile of the range without an
 * entry, which has no layers (level.h) (level lock held). */
static int pack_tile(msgpack_packer *pk, const opd_level *lv, int tx, int tz, const opd_tile *t)
{
    int nl = t ? t->nl : 0;
    /* The blobs are copied once, into the reply message: make room for them first. */
    int p = opd_reply_reserve(pk, native_bytes(t) + 64 + 48 * (size_t)nl);
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

static op_status tile_get(opd_call *c, int tx, int tz, tile_format f, msgpack_packer *pk,
                          op_err *err)
{
    opd_daemon *d = c->d;
    opd_level *lv = opd_registry_find_live(d->reg, c->level, err);
    if (!lv)
        return err->status;
    op_status st = OP_OK;
    opd_tile_job *here = NULL;
    int grew = 0;
    const op_bytes *data = NULL;
    pthread_mutex_lock(&lv->mu);
    int in = opd_snap_in_rect(lv->sn, tx, tz);
    opd_tile *t = in ? opd_level_tile(lv, tx, tz) : NULL;
    if (!in) {
        st = range_error(lv, tx, tz, err);
    } else if (!t) {
        opd_stats_cache(&d->stats, OPD_CACHE_BLOBS, 1, 0, 0);
        if (f == FORMAT_DETOUR ? pack_detour(pk, lv, tx, tz, NULL, NULL)
                               : pack_tile(pk, lv, tx, tz, NULL))
            st = op_err_set(err, OP_ENOMEM, "tile.get: out of memory");
    } else if (!opd_tile_ready(t)) {
        opd_stats_cache(&d->stats, OPD_CACHE_BLOBS, 0, 1, 0);
        here = opd_tile_park(lv, t, &c->wait, !c->woken);
        st = OPD_PARKED;
    } else if (t->err_status != OP_OK) {
        st = build_error(t, err);
    } else if (f == FORMAT_DETOUR && (st = detour_data(d, lv, t, &data, &grew, err)) != OP_OK) {
        /* named by detour_data */
    } else {
        opd_stats_cache(&d->stats, OPD_CACHE_BLOBS, 1, 0, 0);
        if (f == FORMAT_DETOUR ? pack_detour(pk, lv, tx, tz, t, data)
                               : pack_tile(pk, lv, tx, tz, t))
            st = op_err_set(err, OP_ENOMEM, "tile.get: out of memory");
        opd_cache_touch(d->cache, &t->blobs);
    }
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    if (grew)
        opd_cache_evict(d->cache);
    /* The build answers c (and whoever else waits): c is not ours after this. */
    if (here)
        opd_tile_build_here(here);
    return st;
}

op_status opd_m_tile_get(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "tx", "tz", "format", NULL};
    int tx, tz;
    tile_format f;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_param_i32(p, "tx", &tx, err)) != OP_OK ||
        (st = opd_param_i32(p, "tz", &tz, err)) != OP_OK ||
        (st = param_format(p, &f, err)) != OP_OK)
        return st;
    return tile_get(c, tx, tz, f, pk, err);
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
    size_t bytes; /* blob bytes of its tiles (native or Detour, as asked) */
    size_t layers;
} page;

/* Whether a waiting page (rule 2a) may wait for the build of its next tile: before its
 * deadline, with room under max_bytes, fewer than OPD_RANGE_WAIT_TILES tiles, its blobs
 * under half the blob cache (the tiles it holds must stay cached until it is packed), and
 * not while the daemon drains (the page is sent with what it has). */
static int page_may_wait(opd_call *c, const page *pg, size_t bytes, size_t max_bytes,
                         int64_t wait_ns)
{
    return !atomic_load(&c->d->stopping) && pg->n < OPD_RANGE_WAIT_TILES && bytes < max_bytes &&
           bytes < opd_cache_budget(c->d->cache) / 2 &&
           (int64_t)(opd_now_ns() - c->t0_ns) < wait_ns;
}

/* Counts the ready prefix from (pg->tx, pg->tz) within max_bytes (at least one tile),
 * parking c on the first tile when it is not ready. With a deadline (wait_ns > 0, the
 * request's wait_ms), c also parks on a later tile that is not ready while the deadline
 * has not passed, the page has room and holds fewer than OPD_RANGE_WAIT_TILES tiles: the
 * call runs again from the start when that tile lands, and finds the page longer. */
static op_status range_page(opd_call *c, opd_level *lv, const int rc[4], size_t max_bytes,
                            int64_t wait_ns, tile_format f, page *pg, int *grew, op_err *err)
{
    int ex = pg->tx, ez = pg->tz;
    size_t bytes = 0;
    while (pg->more) {
        /* rc is inside the range: a tile without an entry has no layers (level.h). */
        opd_tile *t = opd_level_tile(lv, ex, ez);
        if (t && !opd_tile_ready(t)) {
            prefetch(lv, rc, ex, ez);
            if (pg->n > 0 && !(wait_ns > 0 && page_may_wait(c, pg, bytes, max_bytes, wait_ns)))
                return OP_OK;
            if (pg->n == 0)
                opd_stats_cache(&c->d->stats, OPD_CACHE_BLOBS, 0, 1, 0);
            opd_tile_park(lv, t, &c->wait, 0);
            return OPD_PARKED;
        }
        if (t && t->err_status != OP_OK)
            return pg->n ? OP_OK : build_error(t, err);
        size_t tb = native_bytes(t);
        if (f == FORMAT_DETOUR && t) {
            /* A cell Detour refuses ends the page before it, as a failed build does. */
            const op_bytes *data;
            op_status st = detour_data(c->d, lv, t, &data, grew, err);
            if (st != OP_OK)
                return pg->n ? (op_err_clear(err), OP_OK) : st;
            tb = data ? data->len : 0;
        }
        if (pg->n > 0 && bytes + tb > max_bytes)
            return OP_OK;
        bytes += tb;
        pg->bytes = bytes;
        pg->layers += t ? (size_t)t->nl : 0;
        pg->n++;
        pg->lastx = ex;
        pg->lastz = ez;
        pg->more = next_tile(rc, &ex, &ez);
    }
    return OP_OK;
}

static int pack_page(opd_daemon *d, opd_level *lv, const int rc[4], const page *pg, tile_format f,
                     msgpack_packer *pk)
{
    /* Room for the whole page at once: growing the message tile by tile copied all that
     * was packed before each tile (nng grows a message to the size asked). */
    if (opd_reply_reserve(pk, pg->bytes + 128 + 160 * (size_t)pg->n + 64 * (size_t)pg->layers))
        return -1;
    int p = msgpack_pack_map(pk, 2) | op_rpc_pack_key(pk, "tiles");
    p |= msgpack_pack_array(pk, (size_t)pg->n);
    int tx = pg->tx, tz = pg->tz;
    for (int i = 0; i < pg->n; i++) {
        opd_tile *t = opd_level_tile(lv, tx, tz);
        if (f == FORMAT_DETOUR) /* made by range_page: the entry's last item */
            p |=
                pack_detour(pk, lv, tx, tz, t,
                            t && t->nl ? &((const op_bytes *)t->blobs.data)[t->blobs.n - 1] : NULL);
        else
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
                            int64_t wait_ns, tile_format f, msgpack_packer *pk, op_err *err)
{
    opd_level *lv = opd_registry_find_live(c->d->reg, c->level, err);
    if (!lv)
        return err->status;
    pthread_mutex_lock(&lv->mu);
    int rc[4] = {0, 0, -1, -1}; /* set by clip_rect when anything is left */
    page pg = {0};
    pg.more = clip_rect(lv->sn, req, rc) && range_start(rc, after, &pg.tx, &pg.tz);
    int grew = 0;
    op_status st = range_page(c, lv, rc, max_bytes, wait_ns, f, &pg, &grew, err);
    if (st == OP_OK && pack_page(c->d, lv, rc, &pg, f, pk))
        st = op_err_set(err, OP_ENOMEM, "tile.range: out of memory");
    pthread_mutex_unlock(&lv->mu);
    opd_level_unref(lv);
    if (grew)
        opd_cache_evict(c->d->cache);
    return st;
}

op_status opd_m_tile_range(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "tx0",       "tz0",    "tx1",     "tz1",
                                          "after", "max_bytes", "format", "wait_ms", NULL};
    int rc[4], after[2], has_after, has_max;
    tile_format f;
    int64_t max_bytes = (int64_t)OPD_RANGE_DEFAULT_BYTES, wait_ms = 0;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = opd_param_i32(p, "tx0", &rc[0], err)) != OP_OK ||
        (st = opd_param_i32(p, "tz0", &rc[1], err)) != OP_OK ||
        (st = opd_param_i32(p, "tx1", &rc[2], err)) != OP_OK ||
        (st = opd_param_i32(p, "tz1", &rc[3], err)) != OP_OK ||
        (st = opd_param_pair(p, "after", after, &has_after, err)) != OP_OK ||
        (st = op_rpc_get_int(p, "max_bytes", 1, INT64_MAX, 1, &max_bytes, &has_max, err)) !=
            OP_OK ||
        (st = param_format(p, &f, err)) != OP_OK ||
        (st = op_rpc_get_int(p, "wait_ms", 0, OPD_MAX_WAIT_MS, 1, &wait_ms, NULL, err)) != OP_OK)
        return st;
    if (!has_max)
        max_bytes = (int64_t)OPD_RANGE_DEFAULT_BYTES;
    if (rc[0] > rc[2] || rc[1] > rc[3])
        return op_err_set(err, OP_ERANGE, "tile.range: empty rectangle %d..%d x %d..%d", rc[0],
                          rc[2], rc[1], rc[3]);
    return tile_range(c, rc, has_after ? after : NULL, (size_t)max_bytes, wait_ms * 1000000, f, pk,
                      err);
}
