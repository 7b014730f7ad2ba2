/* libonepath-client internals: building requests and reading replies. */
#ifndef OP_CLIENT_INTERNAL_H
#define OP_CLIENT_INTERNAL_H

#include <msgpack.h>
#include <nng/nng.h>

#include "onepath/client.h"
#include "onepath/rpc.h"

/* A request being packed: the packer writes into sb. */
typedef struct op_creq {
    msgpack_sbuffer sb;
    msgpack_packer pk;
} op_creq;

/* Starts {v, id, method, params: map of nparams}. */
void op_creq_begin(op_client *c, op_creq *q, const char *method, int nparams);
void op_creq_fini(op_creq *q);

/* Marks c a fleet member's client: its errors name its URL (op_fleet_member_open). */
void op_client_name_member(op_client *c);
/* st, with err's message prefixed "URL: " when c names its member and the message does
 * not name it yet. */
op_status op_client_named(const op_client *c, op_status st, op_err *err);

/* A decoded ok reply: result points into un, and its strings and bins into msg. */
typedef struct op_creply {
    msgpack_unpacked un;
    nng_msg *msg;
    const msgpack_object *result;
} op_creply;

/* Sends q and decodes the reply: OP_OK with r->result a map, or the daemon's error
 * (code and message), or a transport / decoding error. Finalises q. */
op_status op_client_call(op_client *c, op_creq *q, int timeout_ms, op_creply *r, op_err *err);
void op_creply_fini(op_creply *r);

/* Result field getters: OP_EPROTO naming the key when missing or mistyped. */
op_status op_cget_u64(const msgpack_object *m, const char *key, uint64_t *out, op_err *err);
op_status op_cget_i64(const msgpack_object *m, const char *key, int64_t *out, op_err *err);
op_status op_cget_bool(const msgpack_object *m, const char *key, int *out, op_err *err);

/* {version, <flag>} of an edit's result (version NULL: only the flag). */
op_status op_cedit_result(const op_creply *r, const char *flag, uint64_t *version, int *changed,
                          op_err *err);
/* Sends an edit's request q and reads its {version, changed}. Finalises q. */
op_status op_cedit_call(op_client *c, op_creq *q, int timeout_ms, uint64_t *version, int *changed,
                        op_err *err);
/* Packs a volume map (protocol §3.5). */
void op_cpack_volume(msgpack_packer *pk, const op_client_volume *v);
/* Reads a volume map of a reply. */
op_status op_cread_volume(const msgpack_object *m, op_client_volume *v, op_err *err);

#endif
