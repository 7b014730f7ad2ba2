/*
 * libonepath-client methods: one function per protocol method (docs/spec/protocol.md
 * §4). Each packs its params, calls, and copies the result into plain structs, so a
 * result never points into a reply buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "onepath/limits.h"

static void key(op_creq *q, const char *k)
{
    op_rpc_pack_key(&q->pk, k);
}

static void str_param(op_creq *q, const char *k, const char *v)
{
    key(q, k);
    op_rpc_pack_key(&q->pk, v);
}

static void int_param(op_creq *q, const char *k, int64_t v)
{
    key(q, k);
    msgpack_pack_int64(&q->pk, v);
}

/* A bin of little-endian 32-bit values (protocol §2.4). */
static void pack_le32(msgpack_packer *pk, const void *src, size_t count)
{
    const uint8_t *p = src;
    msgpack_pack_bin(pk, count * 4);
    const uint32_t one = 1;
    uint8_t low;
    memcpy(&low, &one, 1);
    if (low == 1) { /* a little-endian host: the values' bytes are the wire's already */
        msgpack_pack_bin_body(pk, p, count * 4);
        return;
    }
    uint8_t buf[4096];
    size_t i = 0;
    while (i < count) {
        size_t n = 0;
        for (; i < count && n + 4 <= sizeof buf; i++, n += 4) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            buf[n] = (uint8_t)u;
            buf[n + 1] = (uint8_t)(u >> 8);
            buf[n + 2] = (uint8_t)(u >> 16);
            buf[n + 3] = (uint8_t)(u >> 24);
        }
        msgpack_pack_bin_body(pk, buf, n);
    }
}

/* name, verts, tris, areas? of a mesh (without the map header). */
static void pack_mesh_fields(op_creq *q, const op_client_mesh *m)
{
    str_param(q, "name", m->name);
    key(q, "verts");
    pack_le32(&q->pk, m->verts, m->nverts * 3);
    key(q, "tris");
    pack_le32(&q->pk, m->tris, m->ntris * 3);
    if (m->areas) {
        key(q, "areas");
        msgpack_pack_bin_with_body(&q->pk, m->areas, m->ntris);
    }
}

/* A setting value: an integer or a number when it reads fully as one, else a string. */
static void pack_setting(msgpack_packer *pk, const char *v)
{
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (*v && !*end && !errno) {
        msgpack_pack_int64(pk, i);
        return;
    }
    errno = 0;
    double d = strtod(v, &end);
    if (*v && !*end && !errno) {
        msgpack_pack_double(pk, d);
        return;
    }
    op_rpc_pack_key(pk, v);
}

op_status op_cedit_result(const op_creply *r, const char *flag, uint64_t *version, int *changed,
                          op_err *err)
{
    op_status st = OP_OK;
    if (version)
        st = op_cget_u64(r->result, "version", version, err);
    if (st == OP_OK)
        st = op_cget_bool(r->result, flag, changed, err);
    return st;
}

op_status op_cedit_call(op_client *c, op_creq *q, int timeout_ms, uint64_t *version, int *changed,
                        op_err *err)
{
    op_creply r;
    op_status st = op_client_call(c, q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    st = op_cedit_result(&r, "changed", version, changed, err);
    op_creply_fini(&r);
    return op_client_named(c, st, err);
}

op_status op_client_ping(op_client *c, int timeout_ms, op_client_ping_result *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    op_creq q;
    op_creply r;
    op_creq_begin(c, &q, "ping", 0);
    op_status st = op_client_call(c, &q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    const char *s;
    size_t n;
    int64_t proto;
    const msgpack_object *lim;
    if ((st = op_rpc_get_str(r.result, "version", 0, &s, &n, err)) == OP_OK &&
        (st = op_cget_i64(r.result, "protocol", &proto, err)) == OP_OK &&
        (st = op_rpc_get_type(r.result, "limits", MSGPACK_OBJECT_MAP, 0, &lim, err)) == OP_OK) {
        snprintf(out->version, sizeof out->version, "%.*s", (int)n, s);
        out->protocol = (int)proto;
        op_cget_u64(lim, "max_message", &out->max_message, err);
        op_cget_u64(lim, "max_levels", &out->max_levels, err);
        op_cget_u64(lim, "max_level_verts", &out->max_level_verts, err);
        op_cget_u64(lim, "max_level_tris", &out->max_level_tris, err);
        st = op_cget_u64(lim, "cache_bytes", &out->cache_bytes, err);
    }
    op_creply_fini(&r);
    return op_client_named(c, st, err);
}

op_status op_client_level_put_volumes(op_client *c, const char *level,
                                      const op_client_setting *settings, int nsettings,
                                      const op_client_mesh *meshes, int nmeshes,
                                      const op_client_volume *volumes, int nvolumes, int timeout_ms,
                                      uint64_t *version, int *changed, op_err *err)
{
    op_creq q;
    op_creq_begin(c, &q, "level.put", volumes ? 4 : 3);
    str_param(&q, "level", level);
    key(&q, "settings");
    msgpack_pack_map(&q.pk, (size_t)nsettings);
    for (int i = 0; i < nsettings; i++) {
        key(&q, settings[i].key);
        pack_setting(&q.pk, settings[i].value);
    }
    key(&q, "meshes");
    msgpack_pack_array(&q.pk, (size_t)nmeshes);
    for (int i = 0; i < nmeshes; i++) {
        msgpack_pack_map(&q.pk, meshes[i].areas ? 4 : 3);
        pack_mesh_fields(&q, &meshes[i]);
    }
    if (volumes) {
        key(&q, "volumes");
        msgpack_pack_array(&q.pk, (size_t)nvolumes);
        for (int i = 0; i < nvolumes; i++)
            op_cpack_volume(&q.pk, &volumes[i]);
    }
    return op_cedit_call(c, &q, timeout_ms, version, changed, err);
}

op_status op_client_level_put(op_client *c, const char *level, const op_client_setting *settings,
                              int nsettings, const op_client_mesh *meshes, int nmeshes,
                              int timeout_ms, uint64_t *version, int *changed, op_err *err)
{
    return op_client_level_put_volumes(c, level, settings, nsettings, meshes, nmeshes, NULL, 0,
                                       timeout_ms, version, changed, err);
}

/* A method whose only param is the level and whose result is one bool. */
static op_status level_bool_call(op_client *c, const char *method, const char *level,
                                 const char *key, int timeout_ms, int *out, op_err *err)
{
    op_creq q;
    op_creply r;
    op_creq_begin(c, &q, method, 1);
    str_param(&q, "level", level);
    op_status st = op_client_call(c, &q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    st = op_cget_bool(r.result, key, out, err);
    op_creply_fini(&r);
    return op_client_named(c, st, err);
}

op_status op_client_level_drop(op_client *c, const char *level, int timeout_ms, int *dropped,
                               op_err *err)
{
    return level_bool_call(c, "level.drop", level, "dropped", timeout_ms, dropped, err);
}

op_status op_client_mesh_put(op_client *c, const char *level, const op_client_mesh *mesh,
                             int timeout_ms, uint64_t *version, int *changed, op_err *err)
{
    op_creq q;
    op_creq_begin(c, &q, "mesh.put", mesh->areas ? 5 : 4);
    str_param(&q, "level", level);
    pack_mesh_fields(&q, mesh);
    return op_cedit_call(c, &q, timeout_ms, version, changed, err);
}

op_status op_client_mesh_drop(op_client *c, const char *level, const char *mesh, int timeout_ms,
                              uint64_t *version, int *changed, op_err *err)
{
    op_creq q;
    op_creq_begin(c, &q, "mesh.drop", 2);
    str_param(&q, "level", level);
    str_param(&q, "name", mesh);
    return op_cedit_call(c, &q, timeout_ms, version, changed, err);
}

op_status op_client_level_list_get(op_client *c, int timeout_ms, op_client_level_list *out,
                                   op_err *err)
{
    memset(out, 0, sizeof *out);
    op_creq q;
    op_creply r;
    op_creq_begin(c, &q, "level.list", 0);
    op_status st = op_client_call(c, &q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    const msgpack_object *a;
    if ((st = op_rpc_get_type(r.result, "levels", MSGPACK_OBJECT_ARRAY, 0, &a, err)) == OP_OK) {
        uint32_t n = a->via.array.size;
        out->levels = calloc(n ? n : 1, sizeof *out->levels);
        if (!out->levels)
            st = op_err_set(err, OP_ENOMEM, "client: out of memory");
        for (uint32_t i = 0; st == OP_OK && i < n; i++) {
            const char *s;
            size_t len;
            if ((st = op_rpc_get_str(&a->via.array.ptr[i], "level", 0, &s, &len, err)) == OP_OK)
                st = op_cget_u64(&a->via.array.ptr[i], "version", &out->levels[i].version, err);
            if (st == OP_OK)
                snprintf(out->levels[i].level, sizeof out->levels[i].level, "%.*s",
                         (int)(len > 64 ? 64 : len), s);
            out->n = (int)i + 1;
        }
    }
    op_creply_fini(&r);
    if (st != OP_OK)
        op_client_level_list_free(out);
    return op_client_named(c, st, err);
}

void op_client_level_list_free(op_client_level_list *l)
{
    free(l->levels);
    l->levels = NULL;
    l->n = 0;
}

/* A number (int or float) under key k. */
static op_status num_value(const msgpack_object *m, const char *k, double *d, op_err *err)
{
    const msgpack_object *v = op_rpc_get(m, k);
    if (!v ||
        (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER && v->type != MSGPACK_OBJECT_NEGATIVE_INTEGER &&
         v->type != MSGPACK_OBJECT_FLOAT32 && v->type != MSGPACK_OBJECT_FLOAT64))
        return op_err_set(err, OP_EPROTO, "client: result '%s' is not a number", k);
    *d = v->type == MSGPACK_OBJECT_POSITIVE_INTEGER   ? (double)v->via.u64
         : v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? (double)v->via.i64
                                                      : v->via.f64;
    return OP_OK;
}

static op_status int_array(const msgpack_object *m, const char *k, int n, double *d, int *i,
                           op_err *err)
{
    const msgpack_object *a = op_rpc_get(m, k);
    if (!a || a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size != (uint32_t)n)
        return op_err_set(err, OP_EPROTO, "client: result '%s' is not an array of %d", k, n);
    for (int j = 0; j < n; j++) {
        const msgpack_object *v = &a->via.array.ptr[j];
        double x = v->type == MSGPACK_OBJECT_POSITIVE_INTEGER   ? (double)v->via.u64
                   : v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? (double)v->via.i64
                                                                : v->via.f64;
        if (d)
            d[j] = x;
        if (i)
            i[j] = (int)x;
    }
    return OP_OK;
}

op_status op_client_level_info_get(op_client *c, const char *level, int timeout_ms,
                                   op_client_level_info *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    op_creq q;
    op_creply r;
    op_creq_begin(c, &q, "level.info", 1);
    str_param(&q, "level", level);
    op_status st = op_client_call(c, &q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    const msgpack_object *b;
    if ((st = op_cget_u64(r.result, "version", &out->version, err)) == OP_OK &&
        (st = int_array(r.result, "bounds", 6, out->bounds, NULL, err)) == OP_OK &&
        (st = int_array(r.result, "tiles", 4, NULL, out->tiles, err)) == OP_OK &&
        (st = int_array(r.result, "grid_origin", 2, out->grid_origin, NULL, err)) == OP_OK &&
        (st = op_cget_i64(r.result, "tiles_total", &out->tiles_total, err)) == OP_OK &&
        (st = op_cget_i64(r.result, "tiles_built", &out->tiles_built, err)) == OP_OK &&
        (st = op_cget_u64(r.result, "memory", &out->memory, err)) == OP_OK &&
        (st = op_rpc_get_type(r.result, "bake", MSGPACK_OBJECT_MAP, 0, &b, err)) == OP_OK &&
        (st = op_cget_bool(b, "running", &out->bake_running, err)) == OP_OK &&
        (st = op_cget_i64(b, "done", &out->bake_done, err)) == OP_OK)
        st = op_cget_i64(b, "total", &out->bake_total, err);
    double ts[1] = {0};
    if (st == OP_OK && op_rpc_get(r.result, "tile_size") &&
        (st = num_value(r.result, "tile_size", ts, err)) == OP_OK)
        out->tile_size = ts[0];
    op_creply_fini(&r);
    return op_client_named(c, st, err);
}

op_status op_client_level_bake(op_client *c, const char *level, int timeout_ms, int *started,
                               op_err *err)
{
    return level_bool_call(c, "level.bake", level, "started", timeout_ms, started, err);
}

/* ---- tiles ---- */

void op_client_tile_free(op_client_tile *t)
{
    for (int i = 0; t->layers && i < t->nlayers; i++)
        free(t->layers[i].blob);
    free(t->layers);
    memset(t, 0, sizeof *t);
}

static op_status read_tile(const msgpack_object *m, op_client_tile *t, op_err *err)
{
    memset(t, 0, sizeof *t);
    int64_t tx, tz;
    const msgpack_object *a;
    op_status st;
    if ((st = op_cget_u64(m, "version", &t->version, err)) != OP_OK ||
        (st = op_cget_i64(m, "tx", &tx, err)) != OP_OK ||
        (st = op_cget_i64(m, "tz", &tz, err)) != OP_OK ||
        (st = op_rpc_get_type(m, "layers", MSGPACK_OBJECT_ARRAY, 0, &a, err)) != OP_OK)
        return st;
    t->tx = (int)tx;
    t->tz = (int)tz;
    uint32_t n = a->via.array.size;
    if (n > OP_MAX_LAYERS)
        return op_err_set(err, OP_EPROTO, "client: tile (%d, %d) with %u layers, more than %d",
                          t->tx, t->tz, n, OP_MAX_LAYERS);
    t->layers = calloc(n ? n : 1, sizeof *t->layers);
    if (!t->layers)
        return op_err_set(err, OP_ENOMEM, "client: out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *l = &a->via.array.ptr[i];
        op_client_layer *y = &t->layers[i];
        int64_t layer;
        const uint8_t *blob;
        size_t len;
        if ((st = op_cget_i64(l, "layer", &layer, err)) != OP_OK ||
            (st = op_cget_u64(l, "hash", &y->hash, err)) != OP_OK ||
            (st = op_rpc_get_bin(l, "blob", 0, &blob, &len, err)) != OP_OK)
            break;
        if (layer < 0 || layer >= OP_MAX_LAYERS) {
            st = op_err_set(err, OP_EPROTO, "client: tile (%d, %d) layer %lld outside 0..%d", t->tx,
                            t->tz, (long long)layer, OP_MAX_LAYERS - 1);
            break;
        }
        y->layer = (int)layer;
        y->blob = malloc(len ? len : 1);
        if (!y->blob) {
            st = op_err_set(err, OP_ENOMEM, "client: out of memory for a %zu-byte blob", len);
            break;
        }
        memcpy(y->blob, blob, len);
        y->len = len;
        t->nlayers = (int)i + 1;
    }
    if (st != OP_OK)
        op_client_tile_free(t);
    return st;
}

static op_status read_detour(const msgpack_object *m, op_client_detour_tile *t, op_err *err);

/* A tile reader of either form, for the calls both forms share. */
typedef op_status (*tile_reader)(const msgpack_object *m, void *tile, op_err *err);

static op_status read_tile_any(const msgpack_object *m, void *t, op_err *err)
{
    return read_tile(m, t, err);
}

static op_status read_detour_any(const msgpack_object *m, void *t, op_err *err)
{
    return read_detour(m, t, err);
}

/* A tile.get call, native or Detour form (the tile read by rd into out). */
static op_status tile_get(op_client *c, const char *level, int tx, int tz, int detour,
                          int timeout_ms, tile_reader rd, void *out, op_err *err)
{
    op_creq q;
    op_creq_begin(c, &q, "tile.get", 3 + detour);
    str_param(&q, "level", level);
    int_param(&q, "tx", tx);
    int_param(&q, "tz", tz);
    if (detour)
        str_param(&q, "format", "detour");
    op_creply r;
    op_status st = op_client_call(c, &q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    st = rd(r.result, out, err);
    op_creply_fini(&r);
    return op_client_named(c, st, err);
}

op_status op_client_tile_get(op_client *c, const char *level, int tx, int tz, int timeout_ms,
                             op_client_tile *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    return tile_get(c, level, tx, tz, 0, timeout_ms, read_tile_any, out, err);
}

void op_client_tile_range_free(op_client_tile_range *rg)
{
    for (int i = 0; rg->tiles && i < rg->ntiles; i++)
        op_client_tile_free(&rg->tiles[i]);
    free(rg->tiles);
    memset(rg, 0, sizeof *rg);
}

/* A tile.range call, native or Detour form: the request both forms share. */
static op_status range_call_once(op_client *c, const char *level, const int rect[4],
                                 const int *after, size_t max_bytes, int wait_ms, int detour,
                                 int timeout_ms, op_creply *r, op_err *err)
{
    op_creq q;
    op_creq_begin(c, &q, "tile.range",
                  5 + detour + (after != NULL) + (max_bytes > 0) + (wait_ms > 0));
    str_param(&q, "level", level);
    static const char *const names[4] = {"tx0", "tz0", "tx1", "tz1"};
    for (int i = 0; i < 4; i++)
        int_param(&q, names[i], rect[i]);
    if (detour)
        str_param(&q, "format", "detour");
    if (after) {
        key(&q, "after");
        msgpack_pack_array(&q.pk, 2);
        msgpack_pack_int(&q.pk, after[0]);
        msgpack_pack_int(&q.pk, after[1]);
    }
    if (max_bytes > 0) {
        key(&q, "max_bytes");
        msgpack_pack_uint64(&q.pk, max_bytes);
    }
    if (wait_ms > 0)
        int_param(&q, "wait_ms", wait_ms);
    return op_client_call(c, &q, timeout_ms, r, err);
}

/* A daemon from before waiting pages refuses wait_ms as an unknown key (protocol §4
 * rule 2a): the same call without it is then the old page. */
static op_status range_call(op_client *c, const char *level, const int rect[4], const int *after,
                            size_t max_bytes, int wait_ms, int detour, int timeout_ms, op_creply *r,
                            op_err *err)
{
    op_status st =
        range_call_once(c, level, rect, after, max_bytes, wait_ms, detour, timeout_ms, r, err);
    if (st == OP_EPROTO && wait_ms > 0 && strstr(err->msg, "unknown key 'wait_ms'"))
        st = range_call_once(c, level, rect, after, max_bytes, 0, detour, timeout_ms, r, err);
    return st;
}

/* A tile.range reply's optional `next` [tx, tz]: where the following page starts. */
static op_status range_next(const op_creply *r, int *has_next, int next[2], op_err *err)
{
    const msgpack_object *nx = op_rpc_get(r->result, "next");
    if (!nx || nx->type != MSGPACK_OBJECT_ARRAY)
        return OP_OK;
    *has_next = 1;
    return int_array(r->result, "next", 2, NULL, next, err);
}

/* A tile.range page's tiles (elem bytes each, read by rd) and its `next`. The tiles read
 * before a failure stay in *tiles, *ntiles, for the caller to free. */
static op_status range_read(const op_creply *r, size_t elem, tile_reader rd, void **tiles,
                            int *ntiles, int *has_next, int next[2], op_err *err)
{
    const msgpack_object *a;
    op_status st = op_rpc_get_type(r->result, "tiles", MSGPACK_OBJECT_ARRAY, 0, &a, err);
    if (st != OP_OK)
        return st;
    uint32_t n = a->via.array.size;
    if (!(*tiles = calloc(n ? n : 1, elem)))
        return op_err_set(err, OP_ENOMEM, "client: out of memory");
    for (uint32_t i = 0; i < n; i++) {
        if ((st = rd(&a->via.array.ptr[i], (char *)*tiles + i * elem, err)) != OP_OK)
            return st;
        *ntiles = (int)i + 1;
    }
    return range_next(r, has_next, next, err);
}

/* One tile.range page, called and read: the plain and the Detour form differ only in
 * the element reader. A failed call is returned as the transport named it; a reply that
 * does not read is named after the member that sent it. */
static op_status range_fetch(op_client *c, const char *level, const int rect[4], const int *after,
                             size_t max_bytes, int wait_ms, int detour, int timeout_ms, size_t elem,
                             tile_reader rd, void **tiles, int *ntiles, int *has_next, int next[2],
                             op_err *err)
{
    op_creply r;
    op_status st =
        range_call(c, level, rect, after, max_bytes, wait_ms, detour, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    st = range_read(&r, elem, rd, tiles, ntiles, has_next, next, err);
    op_creply_fini(&r);
    return op_client_named(c, st, err);
}

op_status op_client_tile_range_get(op_client *c, const char *level, const int rect[4],
                                   const int *after, size_t max_bytes, int timeout_ms,
                                   op_client_tile_range *out, op_err *err)
{
    return op_client_tile_range_wait(c, level, rect, after, max_bytes, 0, timeout_ms, out, err);
}

op_status op_client_tile_range_wait(op_client *c, const char *level, const int rect[4],
                                    const int *after, size_t max_bytes, int wait_ms, int timeout_ms,
                                    op_client_tile_range *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    void *tiles = NULL;
    op_status st =
        range_fetch(c, level, rect, after, max_bytes, wait_ms, 0, timeout_ms, sizeof *out->tiles,
                    read_tile_any, &tiles, &out->ntiles, &out->has_next, out->next, err);
    out->tiles = tiles;
    if (st != OP_OK)
        op_client_tile_range_free(out);
    return st;
}

/* A result's 'hashes' array (one uint64 a layer, so at most OP_MAX_LAYERS) into *out
 * (the caller's free function frees it on any return) and *n. */
static op_status read_hashes(const msgpack_object *a, uint64_t **out, int *n, op_err *err)
{
    uint32_t len = a->via.array.size;
    if (len > OP_MAX_LAYERS)
        return op_err_set(err, OP_EPROTO, "client: result 'hashes' has %u entries, more than %d",
                          len, OP_MAX_LAYERS);
    *out = calloc(len ? len : 1, sizeof **out);
    if (!*out)
        return op_err_set(err, OP_ENOMEM, "client: out of memory for %u hashes", len);
    for (uint32_t i = 0; i < len; i++) {
        const msgpack_object *h = &a->via.array.ptr[i];
        if (h->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
            return op_err_set(err, OP_EPROTO, "client: result 'hashes[%u]' is not a uint64", i);
        (*out)[i] = h->via.u64;
    }
    *n = (int)len;
    return OP_OK;
}

/* ---- tiles in Detour form ---- */

void op_client_detour_tile_free(op_client_detour_tile *t)
{
    free(t->hashes);
    free(t->data);
    memset(t, 0, sizeof *t);
}

static op_status read_detour(const msgpack_object *m, op_client_detour_tile *t, op_err *err)
{
    memset(t, 0, sizeof *t);
    int64_t tx, tz;
    const msgpack_object *a, *d = op_rpc_get(m, "data");
    const char *f;
    size_t flen;
    op_status st;
    if ((st = op_cget_u64(m, "version", &t->version, err)) != OP_OK ||
        (st = op_cget_i64(m, "tx", &tx, err)) != OP_OK ||
        (st = op_cget_i64(m, "tz", &tz, err)) != OP_OK ||
        (st = op_rpc_get_str(m, "format", 0, &f, &flen, err)) != OP_OK ||
        (st = op_rpc_get_type(m, "hashes", MSGPACK_OBJECT_ARRAY, 0, &a, err)) != OP_OK)
        return st;
    if (flen != 6 || memcmp(f, "detour", 6))
        return op_err_set(err, OP_EPROTO, "client: result 'format' is not \"detour\"");
    if (!d || (d->type != MSGPACK_OBJECT_BIN && d->type != MSGPACK_OBJECT_NIL))
        return op_err_set(err, OP_EPROTO, "client: result 'data' is not bin or nil");
    t->tx = (int)tx;
    t->tz = (int)tz;
    if ((st = read_hashes(a, &t->hashes, &t->nhashes, err)) != OP_OK) {
        op_client_detour_tile_free(t);
        return st;
    }
    if (d->type == MSGPACK_OBJECT_BIN) {
        size_t len = d->via.bin.size;
        if (!(t->data = malloc(len ? len : 1))) {
            op_client_detour_tile_free(t);
            return op_err_set(err, OP_ENOMEM, "client: out of memory for %zu Detour bytes", len);
        }
        memcpy(t->data, d->via.bin.ptr, len);
        t->len = len;
    }
    return OP_OK;
}

op_status op_client_tile_get_detour(op_client *c, const char *level, int tx, int tz, int timeout_ms,
                                    op_client_detour_tile *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    return tile_get(c, level, tx, tz, 1, timeout_ms, read_detour_any, out, err);
}

void op_client_detour_range_free(op_client_detour_range *rg)
{
    for (int i = 0; rg->tiles && i < rg->ntiles; i++)
        op_client_detour_tile_free(&rg->tiles[i]);
    free(rg->tiles);
    memset(rg, 0, sizeof *rg);
}

op_status op_client_tile_range_get_detour(op_client *c, const char *level, const int rect[4],
                                          const int *after, size_t max_bytes, int timeout_ms,
                                          op_client_detour_range *out, op_err *err)
{
    return op_client_tile_range_wait_detour(c, level, rect, after, max_bytes, 0, timeout_ms, out,
                                            err);
}

op_status op_client_tile_range_wait_detour(op_client *c, const char *level, const int rect[4],
                                           const int *after, size_t max_bytes, int wait_ms,
                                           int timeout_ms, op_client_detour_range *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    void *tiles = NULL;
    op_status st =
        range_fetch(c, level, rect, after, max_bytes, wait_ms, 1, timeout_ms, sizeof *out->tiles,
                    read_detour_any, &tiles, &out->ntiles, &out->has_next, out->next, err);
    out->tiles = tiles;
    if (st != OP_OK)
        op_client_detour_range_free(out);
    return st;
}

/* ---- changes ---- */

void op_client_changes_free(op_client_changes *ch)
{
    for (int i = 0; ch->tiles && i < ch->ntiles; i++)
        free(ch->tiles[i].hashes);
    free(ch->tiles);
    memset(ch, 0, sizeof *ch);
}

static op_status read_change(const msgpack_object *m, op_client_change *t, op_err *err)
{
    int64_t tx, tz;
    const msgpack_object *a;
    op_status st;
    if ((st = op_cget_i64(m, "tx", &tx, err)) != OP_OK ||
        (st = op_cget_i64(m, "tz", &tz, err)) != OP_OK ||
        (st = op_rpc_get_type(m, "hashes", MSGPACK_OBJECT_ARRAY, 0, &a, err)) != OP_OK)
        return st;
    t->tx = (int)tx;
    t->tz = (int)tz;
    return read_hashes(a, &t->hashes, &t->nhashes, err);
}

op_status op_client_changes_since(op_client *c, const char *level, uint64_t version, int wait_ms,
                                  int timeout_ms, op_client_changes *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    op_creq q;
    op_creply r;
    op_creq_begin(c, &q, "changes.since", wait_ms > 0 ? 3 : 2);
    str_param(&q, "level", level);
    key(&q, "version");
    msgpack_pack_uint64(&q.pk, version);
    if (wait_ms > 0)
        int_param(&q, "wait_ms", wait_ms);
    op_status st = op_client_call(c, &q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    const msgpack_object *a;
    if ((st = op_cget_u64(r.result, "version", &out->version, err)) == OP_OK &&
        (st = op_rpc_get_type(r.result, "tiles", MSGPACK_OBJECT_ARRAY, 0, &a, err)) == OP_OK) {
        uint32_t n = a->via.array.size;
        out->tiles = calloc(n ? n : 1, sizeof *out->tiles);
        if (!out->tiles)
            st = op_err_set(err, OP_ENOMEM, "client: out of memory");
        for (uint32_t i = 0; st == OP_OK && i < n; i++) {
            out->ntiles = (int)i + 1;
            st = read_change(&a->via.array.ptr[i], &out->tiles[i], err);
        }
    }
    op_creply_fini(&r);
    if (st != OP_OK)
        op_client_changes_free(out);
    return op_client_named(c, st, err);
}

/* ---- stats ---- */

static uint64_t sum_map(const msgpack_object *m)
{
    uint64_t s = 0;
    for (uint32_t i = 0; m && m->type == MSGPACK_OBJECT_MAP && i < m->via.map.size; i++)
        if (m->via.map.ptr[i].val.type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            s += m->via.map.ptr[i].val.via.u64;
    return s;
}

op_status op_client_stats_get(op_client *c, int timeout_ms, op_client_stats *out, op_err *err)
{
    memset(out, 0, sizeof *out);
    op_creq q;
    op_creply r;
    op_creq_begin(c, &q, "stats", 0);
    op_status st = op_client_call(c, &q, timeout_ms, &r, err);
    if (st != OP_OK)
        return st;
    const msgpack_object *cache, *lat;
    if ((st = op_cget_u64(r.result, "uptime_ms", &out->uptime_ms, err)) == OP_OK &&
        (st = op_cget_i64(r.result, "levels", &out->levels, err)) == OP_OK &&
        (st = op_cget_u64(r.result, "memory", &out->memory, err)) == OP_OK &&
        (st = op_rpc_get_type(r.result, "cache", MSGPACK_OBJECT_MAP, 0, &cache, err)) == OP_OK &&
        (st = op_rpc_get_type(r.result, "latency_us", MSGPACK_OBJECT_MAP, 0, &lat, err)) == OP_OK) {
        op_cget_u64(cache, "hits", &out->cache_hits, err);
        op_cget_u64(cache, "misses", &out->cache_misses, err);
        op_cget_u64(cache, "evictions", &out->cache_evictions, err);
        op_cget_u64(cache, "bytes", &out->cache_bytes, err);
        op_cget_u64(lat, "p50", &out->p50_us, err);
        op_cget_u64(lat, "p90", &out->p90_us, err);
        op_cget_u64(lat, "p99", &out->p99_us, err);
        op_cget_u64(lat, "max", &out->max_us, err);
        op_cget_u64(r.result, "builds", &out->builds, err);
        out->requests = sum_map(op_rpc_get(r.result, "requests"));
        out->errors = sum_map(op_rpc_get(r.result, "errors"));
        op_err_clear(err);
    }
    op_creply_fini(&r);
    return op_client_named(c, st, err);
}

int op_client_range_wait_for(int timeout_ms)
{
    int w = timeout_ms / 2;
    return w > 10000 ? 10000 : (w < 0 ? 0 : w);
}
