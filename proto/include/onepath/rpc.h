/*
 * RPC messages of onepathd (docs/spec/protocol.md §2): parsing a request (bounded
 * pre-scan, then msgpack-c), strict access to its params, and writing replies.
 */
#ifndef ONEPATH_RPC_H
#define ONEPATH_RPC_H

#include <msgpack.h>
#include <stdint.h>

#include "onepath/mpscan.h"
#include "onepath/status.h"

#define OP_PROTOCOL_VERSION 1
#define OP_RPC_METHOD_MAX   32

/* A parsed request. str/bin values point into the request buffer, objects into
 * `unpacked`: keep both alive while the request is handled; op_rpc_request_fini frees. */
typedef struct op_rpc_request {
    int has_id;
    uint64_t id;
    char method[OP_RPC_METHOD_MAX];
    const msgpack_object *params; /* a map (an empty map when the request has none) */
    int has_token;                /* the request carried `token` (protocol.md §2.7) */
    const char *token;            /* into the request buffer, token_len bytes, not terminated */
    size_t token_len;
    msgpack_unpacked unpacked;
    msgpack_object empty;
} op_rpc_request;

/* Parses buf (scanned first with lim). On failure the request's id is still filled
 * when it could be read, so the error reply can echo it; fini must be called either way. */
op_status op_rpc_request_parse(const void *buf, size_t len, const op_mp_limits *lim,
                               op_rpc_request *req, op_err *err);
void op_rpc_request_fini(op_rpc_request *req);

/* ---- params (all names are checked against the allowed list first) ---- */

/* OP_EPROTO naming the first key of params not in allowed (NULL-terminated), a
 * duplicate key or a non-str key. */
op_status op_rpc_check_keys(const msgpack_object *params, const char *const *allowed, op_err *err);
/* The value of key, or NULL when absent. */
const msgpack_object *op_rpc_get(const msgpack_object *map, const char *key);

/* Typed getters: a missing key is OP_EPROTO "missing 'key'" unless optional (then
 * *present = 0 and OP_OK); a wrong type or range is OP_EPROTO / OP_ERANGE naming the key. */
op_status op_rpc_get_int(const msgpack_object *map, const char *key, int64_t lo, int64_t hi,
                         int optional, int64_t *out, int *present, op_err *err);
op_status op_rpc_get_str(const msgpack_object *map, const char *key, int optional, const char **s,
                         size_t *len, op_err *err);
op_status op_rpc_get_bin(const msgpack_object *map, const char *key, int optional,
                         const uint8_t **data, size_t *len, op_err *err);
op_status op_rpc_get_type(const msgpack_object *map, const char *key, msgpack_object_type type,
                          int optional, const msgpack_object **out, op_err *err);

/* A name per protocol.md §3.1 (1..64 of [A-Za-z0-9._-], not starting with '.'),
 * copied NUL-terminated into out (65 bytes). OP_EINVAL naming what. */
op_status op_rpc_name(const char *s, size_t len, const char *what, char out[65], op_err *err);

/* ---- replies ---- */

/* Starts an ok reply: packs v, id, ok = true and the key "result"; the caller then
 * packs the result value (a map). */
int op_rpc_reply_ok(msgpack_packer *pk, const op_rpc_request *req);
/* Packs a whole error reply. req may be NULL (no id). */
int op_rpc_reply_error(msgpack_packer *pk, const op_rpc_request *req, op_status code,
                       const char *message);

/* Packs a str key (strlen). */
int op_rpc_pack_key(msgpack_packer *pk, const char *key);

#endif
