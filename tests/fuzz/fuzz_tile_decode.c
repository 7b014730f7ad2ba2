/*
 * libFuzzer target for the tile blob decoder (proto/include/onepath/tile_codec.h,
 * docs/spec/navmesh-format.md):
 *   build-fuzz/bin/fuzz_tile_decode tests/fuzz/corpus/tile
 * Any input ends as a refusal, or as a tile that validates and that the encoder turns
 * back into exactly the input bytes with the same content hash (the decoder accepts only
 * the exact layout the encoder writes). Memory is capped at 64 MiB.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/tile_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    op_arena *a = op_arena_create(0);
    if (!a)
        return 0;
    op_arena_set_limit(a, 64u << 20);
    op_tile t;
    op_err err;
    uint64_t h = 0;
    op_status st = op_tile_decode(data, size, a, &t, &h, &err);
    if (st == OP_OK) {
        if (op_tile_validate(&t, &err) != OP_OK)
            abort();
        op_bytes b;
        uint64_t h2 = 0;
        if (op_tile_encode(&t, &b, &h2, &err) != OP_OK)
            abort();
        if (b.len != size || memcmp(b.data, data, size) != 0 || h2 != h)
            abort();
        op_bytes_free(&b);
    } else if (st == OP_OK || err.msg[0] == '\0') {
        abort(); /* a refusal always says what was wrong */
    }
    op_arena_destroy(a);
    return 0;
}
