/*
 * The project's content hash: 64-bit FNV-1a over bytes. Used for golden dumps
 * (hash-matrix scenarios), tile content hashes and mesh hashes. It is a pure
 * function of the bytes (no seed), so it is the same on every machine.
 */
#ifndef ONEPATH_HASH_H
#define ONEPATH_HASH_H

#include <stddef.h>
#include <stdint.h>

#define OP_HASH_INIT 0xcbf29ce484222325ULL

static inline uint64_t op_hash_update(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static inline uint64_t op_hash_bytes(const void *data, size_t len)
{
    return op_hash_update(OP_HASH_INIT, data, len);
}

/* Text sink used by canonical dumps: write len bytes; nonzero return aborts. */
typedef int (*op_write_fn)(void *ctx, const char *data, size_t len);

/* A sink that hashes what is written: pass op_hash_sink_write and a uint64_t* set to OP_HASH_INIT.
 */
int op_hash_sink_write(void *ctx, const char *data, size_t len);

#endif
