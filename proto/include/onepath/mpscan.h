/*
 * A bounded pre-scan of untrusted msgpack bytes. msgpack-c reserves memory from
 * declared array/map counts before the elements arrive (a 5-byte message can make
 * it reserve gigabytes: ../shared/notes/toolchain.md), so every message is scanned
 * with this first: it walks the bytes without allocating and refuses a message
 * whose declared lengths exceed the bytes that remain, whose nesting or item count
 * is over the caps, or that has trailing bytes.
 */
#ifndef ONEPATH_MPSCAN_H
#define ONEPATH_MPSCAN_H

#include <stddef.h>
#include "onepath/status.h"

typedef struct op_mp_limits {
    size_t max_bytes; /* whole message */
    int max_depth;    /* nesting of arrays and maps (the top value is depth 1) */
    size_t max_items; /* values in the whole message, counting every key and element */
    /* Bytes msgpack-c's unpacker will hold for the message: OP_MP_VALUE_BYTES a value
     * (every array element and map key or value is one msgpack_object in its zone; str
     * and bin point into the message). Bounds the amplification of a message of tiny
     * values (16 MiB of nils would unpack to 400 MB). */
    size_t max_unpacked;
    const char
        *unpacked_name; /* how the refusal names max_unpacked (a flag); NULL: "max_unpacked" */
} op_mp_limits;

/* What one value costs unpacked: sizeof(msgpack_object) on this platform. */
size_t op_mp_value_bytes(void);

/* Defaults: 64 MiB, depth 16, 16 Mi items, 256 MiB unpacked. */
void op_mp_limits_default(op_mp_limits *lim);

/* OP_OK when buf[0..len) is exactly one well-formed msgpack value within lim;
 * OP_EINCOMPLETE when the bytes end inside the value; OP_EPROTO for a bad type byte,
 * trailing bytes or a declared length the remaining bytes cannot hold; OP_ELIMIT
 * when a cap is exceeded. The message names the offset and what was wrong. */
op_status op_mp_scan(const void *buf, size_t len, const op_mp_limits *lim, op_err *err);

#endif
