/*
 * Helpers of the tests that write raw requests (protocol.md §2), for the cases a client
 * would refuse to send: header-only, for the tests that link msgpack.
 */
#ifndef OP_RPC_TEST_H
#define OP_RPC_TEST_H

#include <msgpack.h>
#include <stdint.h>

#include "onepath/rpc.h"

/* Opens a request map of nkeys keys and packs the first three: v (1), id, method. */
static inline void opt_pack_head(msgpack_packer *pk, uint32_t nkeys, uint64_t id,
                                 const char *method)
{
    msgpack_pack_map(pk, nkeys);
    op_rpc_pack_key(pk, "v");
    msgpack_pack_int(pk, 1);
    op_rpc_pack_key(pk, "id");
    msgpack_pack_uint64(pk, id);
    op_rpc_pack_key(pk, "method");
    op_rpc_pack_key(pk, method);
}

#endif
