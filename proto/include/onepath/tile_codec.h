/*
 * The tile blob (docs/spec/navmesh-format.md §2): one encoder for the offline build
 * and the daemon, and a strict decoder that never trusts its input.
 */
#ifndef ONEPATH_TILE_CODEC_H
#define ONEPATH_TILE_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include "onepath/arena.h"
#include "onepath/tile.h"

/* Format version (docs/spec/navmesh-format.md §2); 2 since layer seams (§3, §6), 3 since
 * polygon region ids (`regs`). The decoder reads only this version. */
#define OP_TILE_FORMAT 3
/* Entries of the blob's map. */
#define OP_TILE_KEYS 17

/* A malloc'd byte string; free with op_bytes_free. */
typedef struct op_bytes {
    uint8_t *data;
    size_t len;
} op_bytes;

void op_bytes_free(op_bytes *b);

/* Encodes t. On success *out owns a new buffer (caller frees with op_bytes_free) and
 * *hash (if not NULL) is the blob's content hash. On failure *out is empty. */
op_status op_tile_encode(const op_tile *t, op_bytes *out, uint64_t *hash, op_err *err);

/* Decodes a blob into t, arrays from arena (t points into it, not into buf). Refuses
 * anything but the exact layout (OP_EPROTO / OP_EINCOMPLETE naming the key or offset),
 * then runs op_tile_validate. On failure t is zeroed. */
op_status op_tile_decode(const void *buf, size_t len, op_arena *arena, op_tile *t, uint64_t *hash,
                         op_err *err);

#endif
