/*
 * libFuzzer target for RPC request parsing (proto/include/onepath/rpc.h,
 * docs/spec/protocol.md): the bounded pre-scan, then msgpack-c.
 *   build-fuzz/bin/fuzz_rpc_request tests/fuzz/corpus/rpc
 * Any input ends as a refusal that says what was wrong, or as a request whose method is
 * a terminated string and whose params are a map; the typed getters are then exercised
 * on every key. fini is called either way (LeakSanitizer checks it frees everything).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads every param with every getter: each returns a status and never crashes. */
static void poke_params(const msgpack_object *params)
{
    static const char *const none[] = {NULL};
    op_err err;
    (void)op_rpc_check_keys(params, none, &err);
    for (uint32_t i = 0; i < params->via.map.size; i++) {
        const msgpack_object *k = &params->via.map.ptr[i].key;
        if (k->type != MSGPACK_OBJECT_STR || k->via.str.size >= 64)
            continue;
        char key[64];
        memcpy(key, k->via.str.ptr, k->via.str.size);
        key[k->via.str.size] = '\0';
        int64_t v;
        int present;
        const char *s;
        const uint8_t *b;
        size_t n;
        (void)op_rpc_get_int(params, key, INT64_MIN, INT64_MAX, 1, &v, &present, &err);
        (void)op_rpc_get_str(params, key, 1, &s, &n, &err);
        (void)op_rpc_get_bin(params, key, 1, &b, &n, &err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    op_rpc_request req;
    op_err err;
    op_status st = op_rpc_request_parse(data, size, &lim, &req, &err);
    if (st == OP_OK) {
        if (memchr(req.method, '\0', sizeof req.method) == NULL || !req.params ||
            req.params->type != MSGPACK_OBJECT_MAP)
            abort();
        poke_params(req.params);
    } else if (err.msg[0] == '\0') {
        abort();
    }
    op_rpc_request_fini(&req);
    return 0;
}
