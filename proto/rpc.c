/*
 * Request parsing and reply writing (protocol.md §2). Every request is scanned
 * by op_mp_scan before msgpack-c sees it, so declared counts never exceed the bytes
 * present and the unpacker's reservation stays proportional to the message.
 */
#include <string.h>

#include "onepath/rpc.h"

static const char *const request_keys[] = {"v", "method", "params", "id", "token", NULL};

static int key_is(const msgpack_object *k, const char *s)
{
    size_t n = strlen(s);
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
           memcmp(k->via.str.ptr, s, n) == 0;
}

const msgpack_object *op_rpc_get(const msgpack_object *map, const char *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP)
        return NULL;
    for (uint32_t i = 0; i < map->via.map.size; i++)
        if (key_is(&map->via.map.ptr[i].key, key))
            return &map->via.map.ptr[i].val;
    return NULL;
}

op_status op_rpc_check_keys(const msgpack_object *params, const char *const *allowed, op_err *err)
{
    if (params->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "params must be a map");
    const msgpack_object_kv *kv = params->via.map.ptr;
    for (uint32_t i = 0; i < params->via.map.size; i++) {
        const msgpack_object *k = &kv[i].key;
        if (k->type != MSGPACK_OBJECT_STR)
            return op_err_set(err, OP_EPROTO, "key %u is not a str", i);
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = key_is(k, *a);
        if (!ok)
            return op_err_set(err, OP_EPROTO, "unknown key '%.*s'",
                              (int)(k->via.str.size > 64 ? 64 : k->via.str.size), k->via.str.ptr);
        for (uint32_t j = 0; j < i; j++)
            if (kv[j].key.via.str.size == k->via.str.size &&
                memcmp(kv[j].key.via.str.ptr, k->via.str.ptr, k->via.str.size) == 0)
                return op_err_set(err, OP_EPROTO, "duplicate key '%.*s'",
                                  (int)(k->via.str.size > 64 ? 64 : k->via.str.size),
                                  k->via.str.ptr);
    }
    return OP_OK;
}

static op_status missing(const char *key, int optional, op_err *err)
{
    if (optional)
        return OP_OK;
    return op_err_set(err, OP_EPROTO, "missing '%s'", key);
}

op_status op_rpc_get_int(const msgpack_object *map, const char *key, int64_t lo, int64_t hi,
                         int optional, int64_t *out, int *present, op_err *err)
{
    const msgpack_object *v = op_rpc_get(map, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return missing(key, optional, err);
    int64_t x;
    if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (v->via.u64 > (uint64_t)INT64_MAX)
            return op_err_set(err, OP_ERANGE, "'%s' = %llu is outside %lld..%lld", key,
                              (unsigned long long)v->via.u64, (long long)lo, (long long)hi);
        x = (int64_t)v->via.u64;
    } else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        x = v->via.i64;
    } else {
        return op_err_set(err, OP_EPROTO, "'%s' must be an integer", key);
    }
    if (x < lo || x > hi)
        return op_err_set(err, OP_ERANGE, "'%s' = %lld is outside %lld..%lld", key, (long long)x,
                          (long long)lo, (long long)hi);
    *out = x;
    return OP_OK;
}

op_status op_rpc_get_type(const msgpack_object *map, const char *key, msgpack_object_type type,
                          int optional, const msgpack_object **out, op_err *err)
{
    const msgpack_object *v = op_rpc_get(map, key);
    *out = v;
    if (!v)
        return missing(key, optional, err);
    if (v->type != type)
        return op_err_set(err, OP_EPROTO, "'%s' has the wrong type", key);
    return OP_OK;
}

op_status op_rpc_get_str(const msgpack_object *map, const char *key, int optional, const char **s,
                         size_t *len, op_err *err)
{
    const msgpack_object *v;
    op_status st = op_rpc_get_type(map, key, MSGPACK_OBJECT_STR, optional, &v, err);
    *s = v ? v->via.str.ptr : NULL;
    *len = v ? v->via.str.size : 0;
    return st;
}

op_status op_rpc_get_bin(const msgpack_object *map, const char *key, int optional,
                         const uint8_t **data, size_t *len, op_err *err)
{
    const msgpack_object *v;
    op_status st = op_rpc_get_type(map, key, MSGPACK_OBJECT_BIN, optional, &v, err);
    *data = v ? (const uint8_t *)v->via.bin.ptr : NULL;
    *len = v ? v->via.bin.size : 0;
    return st;
}

op_status op_rpc_name(const char *s, size_t len, const char *what, char out[65], op_err *err)
{
    if (len < 1 || len > 64)
        return op_err_set(err, OP_EINVAL, "%s name has %zu bytes, not 1..64", what, len);
    if (s[0] == '.')
        return op_err_set(err, OP_EINVAL, "%s name '%.*s' starts with '.'", what, (int)len, s);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (!ok)
            return op_err_set(err, OP_EINVAL,
                              "%s name has byte 0x%02x at %zu (allowed: "
                              "A-Z a-z 0-9 . _ -)",
                              what, c, i);
    }
    memcpy(out, s, len);
    out[len] = '\0';
    return OP_OK;
}

static op_status parse_top(op_rpc_request *req, const msgpack_object *top, op_err *err)
{
    if (top->type != MSGPACK_OBJECT_MAP)
        return op_err_set(err, OP_EPROTO, "request must be a map");
    /* Read the id first so that every later error can echo it. */
    const msgpack_object *id = op_rpc_get(top, "id");
    if (id && id->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        req->has_id = 1;
        req->id = id->via.u64;
    }
    op_status st = op_rpc_check_keys(top, request_keys, err);
    if (st != OP_OK)
        return st;
    if (id && id->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        return op_err_set(err, OP_EPROTO, "'id' must be an unsigned integer");
    int64_t v;
    if ((st = op_rpc_get_int(top, "v", 0, INT64_MAX, 0, &v, NULL, err)) != OP_OK)
        return st;
    if (v != OP_PROTOCOL_VERSION)
        return op_err_set(err, OP_EPROTO, "protocol version %lld is not %d", (long long)v,
                          OP_PROTOCOL_VERSION);
    const char *m;
    size_t mlen;
    if ((st = op_rpc_get_str(top, "method", 0, &m, &mlen, err)) != OP_OK)
        return st;
    if (mlen == 0 || mlen >= OP_RPC_METHOD_MAX || memchr(m, '\0', mlen))
        return op_err_set(err, OP_EPROTO, "'method' must be 1..%d bytes", OP_RPC_METHOD_MAX - 1);
    memcpy(req->method, m, mlen);
    req->method[mlen] = '\0';
    const msgpack_object *params;
    if ((st = op_rpc_get_type(top, "params", MSGPACK_OBJECT_MAP, 1, &params, err)) != OP_OK)
        return st;
    req->params = params ? params : &req->empty;
    /* The token is only read here; whether it is needed and right is the daemon's to say
     * (a daemon without --token-file ignores it). */
    const msgpack_object *token;
    if ((st = op_rpc_get_type(top, "token", MSGPACK_OBJECT_STR, 1, &token, err)) != OP_OK)
        return st;
    if (token) {
        req->has_token = 1;
        req->token = token->via.str.ptr;
        req->token_len = token->via.str.size;
    }
    return OP_OK;
}

op_status op_rpc_request_parse(const void *buf, size_t len, const op_mp_limits *lim,
                               op_rpc_request *req, op_err *err)
{
    memset(req, 0, sizeof *req);
    msgpack_unpacked_init(&req->unpacked);
    req->empty.type = MSGPACK_OBJECT_MAP;
    req->params = &req->empty;
    op_status st = op_mp_scan(buf, len, lim, err);
    if (st != OP_OK)
        return st;
    size_t off = 0;
    msgpack_unpack_return r = msgpack_unpack_next(&req->unpacked, buf, len, &off);
    if (r == MSGPACK_UNPACK_NOMEM_ERROR)
        return op_err_set(err, OP_ENOMEM, "request: out of memory unpacking %zu bytes", len);
    if (r != MSGPACK_UNPACK_SUCCESS || off != len)
        return op_err_set(err, OP_EPROTO, "request: not one msgpack value");
    return parse_top(req, &req->unpacked.data, err);
}

void op_rpc_request_fini(op_rpc_request *req)
{
    msgpack_unpacked_destroy(&req->unpacked);
}

int op_rpc_pack_key(msgpack_packer *pk, const char *key)
{
    return msgpack_pack_str_with_body(pk, key, strlen(key));
}

static int pack_head(msgpack_packer *pk, const op_rpc_request *req, int ok)
{
    int rc = msgpack_pack_map(pk, 4);
    rc |= op_rpc_pack_key(pk, "v") | msgpack_pack_unsigned_int(pk, OP_PROTOCOL_VERSION);
    rc |= op_rpc_pack_key(pk, "id");
    rc |= (req && req->has_id) ? msgpack_pack_uint64(pk, req->id) : msgpack_pack_nil(pk);
    rc |= op_rpc_pack_key(pk, "ok") | (ok ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
    return rc;
}

int op_rpc_reply_ok(msgpack_packer *pk, const op_rpc_request *req)
{
    return pack_head(pk, req, 1) | op_rpc_pack_key(pk, "result");
}

int op_rpc_reply_error(msgpack_packer *pk, const op_rpc_request *req, op_status code,
                       const char *message)
{
    int rc = pack_head(pk, req, 0) | op_rpc_pack_key(pk, "error");
    rc |= msgpack_pack_map(pk, 3);
    rc |= op_rpc_pack_key(pk, "code") | msgpack_pack_unsigned_int(pk, (unsigned)code);
    rc |= op_rpc_pack_key(pk, "name") | op_rpc_pack_key(pk, op_status_name(code));
    rc |= op_rpc_pack_key(pk, "message") | op_rpc_pack_key(pk, message ? message : "");
    return rc;
}
