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
#include "onepath/limits.h"
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
    msgpack_pack_map(&pk, OP_TILE_KEYS);
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
    key(&pk, "regs");
    le_bin(&pk, t->regs, np, 2);
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
        t->regs[i] = (uint16_t)(1 + (i * 40503u) % OP_MAX_REGIONS); /* 1..0xfffe */
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

/* Format 3 (region ids) is the only version read: a format-2 blob is refused by name. */
Test(tile_encode, older_format_is_refused)
{
    op_tile t;
    fill(&t, 0, 0, 0, 0);
    op_bytes b;
    op_err e;
    cr_assert_eq(op_tile_encode(&t, &b, NULL, &e), OP_OK, "%s", e.msg);
    /* map16 header (3 bytes), fixstr "format" (7), then the version as a positive fixint */
    cr_assert_eq(b.data[2], 17);
    cr_assert_eq(b.data[10], OP_TILE_FORMAT);
    cr_assert_eq(OP_TILE_FORMAT, 3);
    op_arena *a = op_arena_create(0);
    op_tile back;
    for (int v = 1; v <= 2; v++) {
        b.data[10] = (uint8_t)v;
        cr_expect_eq(op_tile_decode(b.data, b.len, a, &back, NULL, &e), OP_EPROTO);
        cr_expect(strstr(e.msg, "older than 3") != NULL, "%s", e.msg);
    }
    b.data[10] = 4;
    cr_expect_eq(op_tile_decode(b.data, b.len, a, &back, NULL, &e), OP_EPROTO);
    cr_expect(strstr(e.msg, "unknown format version") != NULL, "%s", e.msg);
    op_arena_destroy(a);
    op_bytes_free(&b);
    release(&t);
}

/* A one-triangle tile that validates, with region id reg. */
static void triangle(op_tile *t, uint16_t reg)
{
    fill(t, 1, 3, 0, 1);
    static const float v[9] = {0, 0, 0, 8, 0.5f, 0, 4, 0.25f, 8};
    memcpy(t->verts, v, sizeof v);
    for (int k = 0; k < 6; k++) {
        t->polys[k] = k < 3 ? (uint16_t)k : 0xffff;
        t->neis[k] = 0;
    }
    t->areas[0] = 63;
    t->flags[0] = 1;
    t->regs[0] = reg;
    const uint32_t dm[4] = {0, 0, 0, 1};
    memcpy(t->dmeshes, dm, sizeof dm);
    const uint8_t tri[4] = {0, 1, 2, 7};
    memcpy(t->dtris, tri, 4);
    t->origin[0] = t->origin[1] = t->origin[2] = 0.0;
}

/* Region ids come back as encoded; 0 (no region) and 0xffff (above OP_MAX_REGIONS) are
 * refused by the decoder naming the key and polygon, and by the validator. */
Test(tile_encode, region_ids_round_trip_and_are_range_checked)
{
    static const uint16_t ok[] = {1, 2, 777, OP_MAX_REGIONS};
    static const uint16_t bad[] = {0, 0xffff};
    op_arena *a = op_arena_create(0);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        op_tile t, back;
        triangle(&t, ok[i]);
        op_bytes b;
        op_err e;
        cr_assert_eq(op_tile_encode(&t, &b, NULL, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(op_tile_decode(b.data, b.len, a, &back, NULL, &e), OP_OK, "%s", e.msg);
        cr_expect_eq(back.regs[0], ok[i]);
        op_bytes_free(&b);
        release(&t);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        op_tile t, back;
        triangle(&t, bad[i]);
        op_bytes b;
        op_err e;
        cr_expect_eq(op_tile_validate(&t, &e), OP_EPROTO, "region %u", bad[i]);
        cr_expect(strstr(e.msg, "polygon 0 region") != NULL, "%s", e.msg);
        cr_assert_eq(op_tile_encode(&t, &b, NULL, &e), OP_OK, "%s", e.msg);
        cr_expect_eq(op_tile_decode(b.data, b.len, a, &back, NULL, &e), OP_EPROTO);
        cr_expect(strstr(e.msg, "key 'regs': polygon 0 region") != NULL, "%s", e.msg);
        op_bytes_free(&b);
        release(&t);
    }
    /* A regs bin one polygon short (hash recomputed): the counts disagree. */
    op_tile t, back;
    triangle(&t, 5);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    uint64_t h;
    oracle(&t, &sb, &h);
    const uint8_t want[] = {0xa4, 'r', 'e', 'g', 's', 0xc4, 0x02, 0x05, 0x00};
    size_t at = 0;
    for (size_t i = 0; !at && i + sizeof want <= sb.size; i++)
        if (memcmp(sb.data + i, want, sizeof want) == 0)
            at = i + 6; /* the bin's length byte */
    cr_assert(at != 0);
    uint8_t *cut = malloc(sb.size);
    memcpy(cut, sb.data, at);
    cut[at] = 0x00; /* bin of 0 bytes */
    size_t n = at + 1;
    memcpy(cut + n, sb.data + at + 3, sb.size - at - 3 - 9);
    n += sb.size - at - 3 - 9;
    uint64_t nh = op_hash_bytes(cut, n - 5); /* the key "hash" is 5 bytes */
    cut[n++] = 0xcf;
    for (int k = 7; k >= 0; k--)
        cut[n++] = (uint8_t)(nh >> (8 * k));
    op_err e;
    cr_expect_eq(op_tile_decode(cut, n, a, &back, NULL, &e), OP_EPROTO);
    cr_expect(strstr(e.msg, "disagree with the polygon count") != NULL, "%s", e.msg);
    free(cut);
    msgpack_sbuffer_destroy(&sb);
    release(&t);
    op_arena_destroy(a);
}

/* A hand-made tile without region ids has no blob. */
Test(tile_encode, tile_without_region_ids_is_refused)
{
    op_tile t;
    fill(&t, 2, 3, 0, 0);
    free(t.regs);
    t.regs = NULL;
    op_bytes b;
    op_err e;
    cr_expect_eq(op_tile_encode(&t, &b, NULL, &e), OP_EINVAL);
    cr_expect(strstr(e.msg, "no region ids") != NULL, "%s", e.msg);
    cr_expect(b.data == NULL && b.len == 0);
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
