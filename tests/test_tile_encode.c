/*
 * The tile encoder writes msgpack itself: its bytes must be exactly what msgpack-c's
 * packer writes for the layout of docs/spec/navmesh-format.md §2 (the encoder's
 * original form, kept here as the oracle), for every integer form (fixint, uint8/16/32,
 * negative fixint, int8/16/32) and every bin length form (bin8/16/32).
 */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/hash.h"
#include "onepath/tile_codec.h"

static void le_bin(msgpack_packer *pk, const void *src, size_t n, size_t es)
{
    uint8_t *tmp = malloc(n * es + 1);
    const uint8_t *s = src;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = 0;
        if (es == 4) {
            memcpy(&v, s + 4 * i, 4);
        } else if (es == 2) {
            uint16_t u;
            memcpy(&u, s + 2 * i, 2);
            v = u;
        } else {
            v = s[i];
        }
        for (size_t b = 0; b < es; b++)
            tmp[es * i + b] = (uint8_t)(v >> (8 * b));
    }
    msgpack_pack_bin(pk, n * es);
    msgpack_pack_bin_body(pk, tmp, n * es);
    free(tmp);
}

static void key(msgpack_packer *pk, const char *k)
{
    msgpack_pack_str_with_body(pk, k, strlen(k));
}

/* Non-canonical variants of the layout (the decoder must refuse them). */
enum { LONG_TX = 1, LONG_AREAS_BIN = 2 };

/* The layout packed with msgpack-c (with the forms `variant` asks for). */
static void oracle_variant(const op_tile *t, msgpack_sbuffer *sb, uint64_t *hash, int variant)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    size_t np = (size_t)t->npolys, nvp = (size_t)t->nvp;
    msgpack_pack_map(&pk, 16);
    key(&pk, "format");
    msgpack_pack_unsigned_int(&pk, OP_TILE_FORMAT);
    key(&pk, "tx");
    if (variant & LONG_TX)
        msgpack_pack_fix_int32(&pk, t->tx);
    else
        msgpack_pack_int(&pk, t->tx);
    key(&pk, "tz");
    msgpack_pack_int(&pk, t->tz);
    key(&pk, "layer");
    msgpack_pack_unsigned_int(&pk, (unsigned)t->layer);
    key(&pk, "origin");
    msgpack_pack_array(&pk, 3);
    for (int i = 0; i < 3; i++)
        msgpack_pack_double(&pk, t->origin[i]);
    key(&pk, "tile_size");
    msgpack_pack_double(&pk, t->tile_size);
    key(&pk, "nvp");
    msgpack_pack_unsigned_int(&pk, (unsigned)t->nvp);
    key(&pk, "verts");
    le_bin(&pk, t->verts, 3 * (size_t)t->nverts, 4);
    key(&pk, "polys");
    le_bin(&pk, t->polys, np * nvp, 2);
    key(&pk, "neis");
    le_bin(&pk, t->neis, np * nvp, 2);
    key(&pk, "areas");
    if (variant & LONG_AREAS_BIN) {
        const uint8_t h[5] = {0xc6, (uint8_t)(np >> 24), (uint8_t)(np >> 16), (uint8_t)(np >> 8),
                              (uint8_t)np};
        msgpack_sbuffer_write(sb, (const char *)h, 5);
        msgpack_sbuffer_write(sb, (const char *)t->areas, np);
    } else {
        le_bin(&pk, t->areas, np, 1);
    }
    key(&pk, "flags");
    le_bin(&pk, t->flags, np, 2);
    key(&pk, "dmeshes");
    le_bin(&pk, t->dmeshes, 4 * np, 4);
    key(&pk, "dverts");
    le_bin(&pk, t->dverts, 3 * (size_t)t->ndverts, 4);
    key(&pk, "dtris");
    le_bin(&pk, t->dtris, 4 * (size_t)t->ndtris, 1);
    *hash = op_hash_bytes(sb->data, sb->size);
    key(&pk, "hash");
    msgpack_pack_fix_uint64(&pk, *hash);
}

static void oracle(const op_tile *t, msgpack_sbuffer *sb, uint64_t *hash)
{
    oracle_variant(t, sb, hash, 0);
}

/* A tile of the given counts with patterned contents (encode does not validate). */
static void fill(op_tile *t, int np, int nverts, int ndverts, int ndtris)
{
    memset(t, 0, sizeof *t);
    t->nvp = 6;
    t->npolys = np;
    t->nverts = nverts;
    t->ndverts = ndverts;
    t->ndtris = ndtris;
    t->verts = malloc((size_t)nverts * 12 + 1);
    t->polys = malloc((size_t)np * 12 + 1);
    t->neis = malloc((size_t)np * 12 + 1);
    t->areas = malloc((size_t)np + 1);
    t->flags = malloc((size_t)np * 2 + 1);
    t->regs = malloc((size_t)np * 2 + 1);
    t->dmeshes = malloc((size_t)np * 16 + 1);
    t->dverts = malloc((size_t)ndverts * 12 + 1);
    t->dtris = malloc((size_t)ndtris * 4 + 1);
    for (int i = 0; i < 3 * nverts; i++)
        t->verts[i] = (float)i * 0.37f - 5.0f;
    for (int i = 0; i < 6 * np; i++) {
        t->polys[i] = (uint16_t)(i * 7919u);
        t->neis[i] = (uint16_t)(i * 104729u);
    }
    for (int i = 0; i < np; i++) {
        t->areas[i] = (uint8_t)(i % 64);
        t->flags[i] = (uint16_t)(i * 31u);
        for (int k = 0; k < 4; k++)
            t->dmeshes[4 * i + k] = (uint32_t)i * 2654435761u + (uint32_t)k;
    }
    for (int i = 0; i < 3 * ndverts; i++)
        t->dverts[i] = (float)i * -1.25f;
    for (int i = 0; i < 4 * ndtris; i++)
        t->dtris[i] = (uint8_t)(i * 13);
    t->tile_size = 9.6;
    t->origin[0] = -1234.5;
    t->origin[1] = 0.1;
    t->origin[2] = 98765.25;
}

static void release(op_tile *t)
{
    free(t->verts);
    free(t->polys);
    free(t->neis);
    free(t->areas);
    free(t->flags);
    free(t->regs);
    free(t->dmeshes);
    free(t->dverts);
    free(t->dtris);
}

static void same_bytes(const op_tile *t)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    uint64_t want_h, got_h;
    oracle(t, &sb, &want_h);
    op_bytes b;
    op_err e;
    cr_assert_eq(op_tile_encode(t, &b, &got_h, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(b.len, sb.size, "tx %d tz %d layer %d np %d: length %zu, msgpack-c %zu", t->tx,
                 t->tz, t->layer, t->npolys, b.len, sb.size);
    cr_assert(memcmp(b.data, sb.data, b.len) == 0, "tx %d tz %d layer %d np %d: bytes differ",
              t->tx, t->tz, t->layer, t->npolys);
    cr_assert_eq(got_h, want_h);
    op_bytes_free(&b);
    msgpack_sbuffer_destroy(&sb);
}

Test(tile_encode, integers_in_every_msgpack_form)
{
    static const int ints[] = {0,    1,      31,     -1,     -32,       -33,      -128,
                               -129, -32768, -32769, -70000, 127,       128,      255,
                               256,  65535,  65536,  70000,  INT32_MAX, INT32_MIN};
    op_tile t;
    fill(&t, 3, 5, 2, 1);
    int n = (int)(sizeof ints / sizeof ints[0]);
    for (int i = 0; i < n; i++) {
        t.tx = ints[i];
        t.tz = ints[(i + 7) % n];
        t.layer = ints[i] >= 0 ? ints[i] : 0;
        same_bytes(&t);
    }
    release(&t);
}

Test(tile_encode, bins_of_every_length_form)
{
    /* Array byte sizes across 0, 255 | 256 (bin8 | bin16) and 65535 | 65536 (bin32). */
    static const int np[] = {0, 1, 21, 22, 255, 256, 5461, 5462, 6000};
    for (size_t i = 0; i < sizeof np / sizeof np[0]; i++) {
        op_tile t;
        fill(&t, np[i], np[i] > 0 ? 21 + np[i] : 0, np[i] * 2, np[i] * 4);
        t.tx = -3;
        t.tz = 200;
        same_bytes(&t);
        release(&t);
    }
}

/* Format 2 (layer seams) is the only version read: a format-1 blob is refused by name. */
Test(tile_encode, older_format_is_refused)
{
    op_tile t;
    fill(&t, 0, 0, 0, 0);
    op_bytes b;
    op_err e;
    cr_assert_eq(op_tile_encode(&t, &b, NULL, &e), OP_OK, "%s", e.msg);
    /* map16 header (3 bytes), fixstr "format" (7), then the version as a positive fixint */
    cr_assert_eq(b.data[10], OP_TILE_FORMAT);
    cr_assert_eq(OP_TILE_FORMAT, 2);
    b.data[10] = 1;
    op_arena *a = op_arena_create(0);
    op_tile back;
    cr_expect_eq(op_tile_decode(b.data, b.len, a, &back, NULL, &e), OP_EPROTO);
    cr_expect(strstr(e.msg, "older than 2") != NULL, "%s", e.msg);
    b.data[10] = 3;
    cr_expect_eq(op_tile_decode(b.data, b.len, a, &back, NULL, &e), OP_EPROTO);
    cr_expect(strstr(e.msg, "unknown format version") != NULL, "%s", e.msg);
    op_arena_destroy(a);
    op_bytes_free(&b);
    release(&t);
}

/* A tile has exactly one blob: the same values in a longer integer or bin header form
 * (with a matching hash) are refused. */
Test(tile_encode, longer_forms_are_refused)
{
    op_tile t;
    fill(&t, 3, 4, 0, 0);
    t.tx = 5;
    for (int v = 0; v <= (LONG_TX | LONG_AREAS_BIN); v++) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        uint64_t h;
        oracle_variant(&t, &sb, &h, v);
        op_arena *a = op_arena_create(0);
        op_tile back;
        op_err e;
        op_status st = op_tile_decode(sb.data, sb.size, a, &back, NULL, &e);
        /* The patterned tile is no valid tile: the canonical form gets past the layout to
         * the validator; a long form stops at the layout. */
        if (v == 0) {
            cr_expect_eq(st, OP_EPROTO);
            cr_expect(strstr(e.msg, "tile:") != NULL, "%s", e.msg);
        } else {
            cr_expect_eq(st, OP_EPROTO, "variant %d", v);
            cr_expect(strstr(e.msg, "shortest form") != NULL, "variant %d: %s", v, e.msg);
        }
        op_arena_destroy(a);
        msgpack_sbuffer_destroy(&sb);
    }
    release(&t);
}
