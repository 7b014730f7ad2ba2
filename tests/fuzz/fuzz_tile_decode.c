/*
 * libFuzzer target for the tile blob decoder (proto/include/onepath/tile_codec.h,
 * docs/spec/navmesh-format.md):
 *   build-fuzz/bin/fuzz_tile_decode tests/fuzz/corpus/tile
 * Any input ends as a refusal, or as a tile that validates and that the encoder turns
 * back into exactly the input bytes with the same content hash (the decoder accepts only
 * the exact layout the encoder writes). Memory is capped at 64 MiB.
 *
 * Random bytes rarely get past the msgpack layout, so a custom mutator also damages the
 * meaning: it decodes the input, changes one field or array element of the tile (indices,
 * neighbours, coordinates, detail ranges, counts) and re-encodes it, which drives the
 * validator (op_tile_validate) with well-formed blobs of broken tiles.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/tile_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

static uint32_t next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static float damaged_float(uint32_t *r, float v, float ts)
{
    static const float edge[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e30f, -1e-30f, 65536.0f};
    switch (next(r) % 4) {
    case 0:
        return edge[next(r) % 7];
    case 1:
        return ts;
    case 2:
        return v + (float)((int)(next(r) % 5) - 2) * 0.25f;
    default: {
        uint32_t u;
        memcpy(&u, &v, 4);
        u ^= 1u << (next(r) % 32);
        memcpy(&v, &u, 4);
        return v;
    }
    }
}

/* One semantic change to a decoded tile. */
static void damage(op_tile *t, uint32_t *r)
{
    size_t np = (size_t)t->npolys, nvp = (size_t)t->nvp;
    uint16_t small = (uint16_t)(next(r) % ((unsigned)t->nverts + 2));
    switch (next(r) % 11) {
    case 0:
        if (t->nverts)
            t->verts[next(r) % (3 * (unsigned)t->nverts)] =
                damaged_float(r, t->verts[0], (float)t->tile_size);
        break;
    case 1:
        if (np)
            t->polys[next(r) % (np * nvp)] = next(r) % 4 ? small : 0xffff;
        break;
    case 2:
        if (np)
            t->neis[next(r) % (np * nvp)] =
                (uint16_t)(next(r) % 4 == 0   ? 0x8000 | (next(r) % 5)
                           : next(r) % 3 == 0 ? 0xc000 | (next(r) % 1026) /* seams (§3) */
                           : next(r) % 2 == 0 ? next(r) % (np + 2)
                                              : next(r));
        break;
    case 3:
        if (np)
            t->areas[next(r) % np] = (uint8_t)next(r);
        break;
    case 4:
        if (np)
            t->dmeshes[next(r) % (np * 4)] = next(r) % 2 ? next(r) % 8 : next(r);
        break;
    case 5:
        if (t->ndverts)
            t->dverts[next(r) % (3 * (unsigned)t->ndverts)] =
                damaged_float(r, t->dverts[0], (float)t->tile_size);
        break;
    case 6:
        if (t->ndtris)
            t->dtris[next(r) % (4 * (unsigned)t->ndtris)] = (uint8_t)(next(r) % 8);
        break;
    case 7:
        if (t->npolys)
            t->npolys--;
        break;
    case 8:
        if (t->nverts)
            t->nverts--;
        break;
    case 9:
        t->nvp = (int)(next(r) % 8);
        break;
    default:
        t->layer = (int)(next(r) % 3) - 1;
        t->tile_size = damaged_float(r, (float)t->tile_size, 0.0f);
        break;
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint32_t r = seed | 1;
    if (next(&r) % 2)
        return LLVMFuzzerMutate(data, size, max_size);
    op_arena *a = op_arena_create(0);
    if (!a)
        return LLVMFuzzerMutate(data, size, max_size);
    op_arena_set_limit(a, 64u << 20);
    op_tile t;
    op_err err;
    size_t out = 0;
    if (op_tile_decode(data, size, a, &t, NULL, &err) == OP_OK) {
        damage(&t, &r);
        op_bytes b;
        if (op_tile_encode(&t, &b, NULL, &err) == OP_OK) {
            if (b.len <= max_size) {
                memcpy(data, b.data, b.len);
                out = b.len;
            }
            op_bytes_free(&b);
        }
    }
    op_arena_destroy(a);
    return out ? out : LLVMFuzzerMutate(data, size, max_size);
}

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
