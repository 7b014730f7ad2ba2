/*
 * Decoders under seeded random damage (independent of the libFuzzer targets, so it runs in
 * every build and under ASan): valid tile blobs (from a generated multi-floor level baked
 * with the Layers partition) and valid RPC requests are mutated thousands of times — bit
 * flips, truncations, inserted and deleted bytes, spliced ranges, msgpack length fields set
 * huge, and (tiles) one field of the decoded tile changed and re-encoded — and every result
 * must be a refusal that says what was wrong, or an input the decoder accepts completely: a
 * tile that validates and re-encodes to exactly the same bytes, a request whose params are a
 * map. Never a crash, an over-read or a runaway allocation.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/levelgen.h"
#include "onepath/limits.h"
#include "onepath/rpc.h"
#include "onepath/tile_codec.h"
#include "op_test.h"

typedef struct buf {
    uint8_t *p;
    size_t len;
} buf;

/* ==== mutations ==== */

/* Positions of msgpack values that carry a length (str, bin, array, map) in b. Not every
 * hit is a real type byte (it may sit inside a payload), which is fine: any byte may be
 * damaged. */
static int is_length_marker(uint8_t c)
{
    return (c >= 0x80 && c <= 0xbf) || (c >= 0xc4 && c <= 0xc6) || (c >= 0xd9 && c <= 0xdb) ||
           (c >= 0xdc && c <= 0xdf);
}

/* The 32-bit form of a length-bearing type byte c and the size of c's own header. */
static uint8_t wide_type(uint8_t c, size_t *header)
{
    if (c <= 0xbf) { /* fixmap, fixarray, fixstr */
        *header = 1;
        return c <= 0x8f ? 0xdf : c <= 0x9f ? 0xdd : 0xdb;
    }
    switch (c) {
    case 0xc4:
    case 0xd9:
        *header = 2;
        break;
    case 0xc5:
    case 0xda:
    case 0xdc:
    case 0xde:
        *header = 3;
        break;
    default:
        *header = 5;
        break;
    }
    return (c <= 0xc6) ? 0xc6 : (c <= 0xdb) ? 0xdb : (c <= 0xdd) ? 0xdd : 0xdf;
}

/* Replaces the header of the value at position i by its 32-bit form declaring a huge
 * length (near 2^32, 2^31, 2^28 or 2^16), keeping the bytes that follow. */
static size_t huge_length(uint8_t *out, const uint8_t *in, size_t len, size_t i, op_test_rng *r)
{
    size_t header;
    uint8_t t = wide_type(in[i], &header);
    if (i + header > len)
        header = len - i;
    static const uint32_t huge[] = {0xffffffffu, 0x80000000u, 0x7fffffffu, 0xffffu, 0x10000000u};
    uint32_t v = huge[op_test_rand(r) % 5];
    memcpy(out, in, i);
    size_t o = i;
    out[o++] = t;
    out[o++] = (uint8_t)(v >> 24);
    out[o++] = (uint8_t)(v >> 16);
    out[o++] = (uint8_t)(v >> 8);
    out[o++] = (uint8_t)v;
    memcpy(out + o, in + i + header, len - i - header);
    return o + len - i - header;
}

/* One random mutation of in into out (capacity in.len + 64); returns the new length. */
static size_t mutate(const buf *in, uint8_t *out, op_test_rng *r)
{
    size_t len = in->len, i = (size_t)(op_test_rand(r) % (len ? len : 1));
    memcpy(out, in->p, len);
    switch (op_test_rand(r) % 7) {
    case 0: /* 1..4 bit flips */
        for (int k = op_test_rand_int(r, 1, 4); k > 0; k--)
            out[op_test_rand(r) % len] ^= (uint8_t)(1u << op_test_rand_int(r, 0, 7));
        return len;
    case 1: /* truncation */
        return (size_t)(op_test_rand(r) % len);
    case 2: { /* 1..8 random bytes inserted */
        size_t n = (size_t)op_test_rand_int(r, 1, 8);
        memmove(out + i + n, out + i, len - i);
        for (size_t k = 0; k < n; k++)
            out[i + k] = (uint8_t)op_test_rand(r);
        return len + n;
    }
    case 3: { /* a range deleted */
        size_t n = (size_t)op_test_rand_int(r, 1, 16);
        if (i + n > len)
            n = len - i;
        memmove(out + i, out + i + n, len - i - n);
        return len - n;
    }
    case 4: { /* a range copied over another place */
        size_t j = (size_t)(op_test_rand(r) % len), n = (size_t)op_test_rand_int(r, 1, 32);
        if (i + n > len)
            n = len - i;
        if (j + n > len)
            n = len - j;
        memmove(out + i, in->p + j, n);
        return len;
    }
    case 5: { /* a length field set huge */
        for (int tries = 0; tries < 64; tries++, i = (size_t)(op_test_rand(r) % len))
            if (is_length_marker(in->p[i]))
                return huge_length(out, in->p, len, i, r);
        return len;
    }
    default: /* one byte set to an edge value */
    {
        static const uint8_t edge[] = {0x00, 0x7f, 0x80, 0xc0, 0xc1, 0xcb, 0xcf, 0xd3, 0xff};
        out[i] = edge[op_test_rand(r) % sizeof edge];
        return len;
    }
    }
}

/* ==== tile blobs ==== */

#define MAX_BLOBS 64

static int make_blobs(buf *blobs)
{
    op_arena *a = op_arena_create(0), *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("multifloor", 48, 2, a, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    s.partition = OP_PARTITION_LAYERS;
    op_level *lvl;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    int n = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_tile_stages st;
            cr_assert_eq(
                op_level_build_stages(lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e), OP_OK,
                "%s", e.msg);
            for (int k = 0; k < st.ntiles && n < MAX_BLOBS; k++) {
                op_bytes b;
                cr_assert_eq(op_tile_encode(&st.tiles[k], &b, NULL, &e), OP_OK, "%s", e.msg);
                blobs[n++] = (buf){b.data, b.len};
            }
            op_arena_reset(out);
            op_arena_reset(scratch);
        }
    op_level_destroy(lvl);
    op_arena_destroy(a);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return n;
}

/* A decode either refuses with a message or accepts a tile that validates and re-encodes to
 * the same bytes (the decoder accepts only the encoder's exact layout). */
static int check_decode(const uint8_t *p, size_t len, op_arena *a)
{
    op_tile t;
    op_err e;
    uint64_t h = 0;
    e.msg[0] = '\0';
    op_status st = op_tile_decode(p, len, a, &t, &h, &e);
    if (st != OP_OK) {
        cr_assert(e.msg[0], "refusal %s without a message", op_status_name(st));
        cr_assert(st == OP_EPROTO || st == OP_EINCOMPLETE || st == OP_ENOMEM || st == OP_EINVAL ||
                      st == OP_ERANGE,
                  "unexpected %s: %s", op_status_name(st), e.msg);
        cr_assert_eq(t.npolys, 0, "tile zeroed on failure");
        return 0;
    }
    cr_assert_eq(op_tile_validate(&t, &e), OP_OK, "accepted tile does not validate: %s", e.msg);
    op_bytes b;
    uint64_t h2;
    cr_assert_eq(op_tile_encode(&t, &b, &h2, &e), OP_OK, "%s", e.msg);
    cr_assert(b.len == len && memcmp(b.data, p, len) == 0, "accepted blob does not re-encode");
    cr_assert_eq(h2, h);
    op_bytes_free(&b);
    return 1;
}

Test(decode_mutations, tile_blobs_survive_random_damage, .timeout = 120)
{
    buf blobs[MAX_BLOBS];
    int n = make_blobs(blobs);
    cr_assert_geq(n, 4);
    op_arena *a = op_arena_create(0);
    op_arena_set_limit(a, 64u << 20);
    for (int i = 0; i < n; i++)
        cr_assert(check_decode(blobs[i].p, blobs[i].len, a), "blob %d refused", i);
    op_test_rng r = {20261130};
    int accepted = 0, total = 100000;
    for (int it = 0; it < total; it++) {
        const buf *in = &blobs[op_test_rand(&r) % (uint64_t)n];
        uint8_t *m = malloc(in->len + 64);
        size_t len = mutate(in, m, &r);
        /* Exactly len bytes of heap: ASan catches any read past the end. */
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, m, len);
        accepted += check_decode(exact, len, a);
        free(exact);
        free(m);
        op_arena_reset(a);
    }
    /* Most damage must be caught (flips inside float payloads can stay valid). */
    cr_assert_lt(accepted, total / 2, "%d of %d damaged blobs accepted", accepted, total);
    for (int i = 0; i < n; i++)
        free(blobs[i].p);
    op_arena_destroy(a);
}

/* One change to a decoded tile's meaning (an index, neighbour, coordinate, detail range,
 * region id or count), so that the re-encoded blob is well-formed msgpack of a possibly broken
 * tile. */
static void damage_field(op_tile *t, op_test_rng *r)
{
    size_t np = (size_t)t->npolys, nvp = (size_t)t->nvp;
    static const float edge[] = {0.0f, -0.0f, -1.0f, 1e30f, 65536.0f, 9.6f};
    switch (op_test_rand(r) % 10) {
    case 0:
        if (t->nverts)
            t->verts[op_test_rand(r) % (3 * (uint64_t)t->nverts)] = edge[op_test_rand(r) % 6];
        break;
    case 1:
        if (np)
            t->polys[op_test_rand(r) % (np * nvp)] =
                (uint16_t)(op_test_rand(r) % ((uint64_t)t->nverts + 2));
        break;
    case 2:
        if (np)
            t->neis[op_test_rand(r) % (np * nvp)] =
                (uint16_t)(op_test_rand(r) % 3 == 0   ? 0x8000 | op_test_rand(r) % 5
                           : op_test_rand(r) % 2 == 0 ? OP_NEI_SEAM | op_test_rand(r) % 1026
                                                      : op_test_rand(r) % (np + 2));
        break;
    case 3:
        if (np)
            t->dmeshes[op_test_rand(r) % (np * 4)] = (uint32_t)op_test_rand(r) % 9;
        break;
    case 4:
        if (t->ndtris)
            t->dtris[op_test_rand(r) % (4 * (uint64_t)t->ndtris)] = (uint8_t)(op_test_rand(r) % 9);
        break;
    case 5:
        if (t->ndverts)
            t->dverts[op_test_rand(r) % (3 * (uint64_t)t->ndverts)] = edge[op_test_rand(r) % 6];
        break;
    case 6:
        t->npolys -= t->npolys > 0;
        break;
    case 7:
        t->nverts -= t->nverts > 0;
        break;
    case 8: {
        static const uint16_t ids[] = {0, 1, OP_MAX_REGIONS, 0xffff, 0x8000};
        if (np)
            t->regs[op_test_rand(r) % np] = ids[op_test_rand(r) % 5];
        break;
    }
    default:
        t->nvp = (int)(op_test_rand(r) % 8);
        break;
    }
}

Test(decode_mutations, tiles_with_damaged_fields_are_refused_or_valid, .timeout = 120)
{
    buf blobs[MAX_BLOBS];
    int n = make_blobs(blobs);
    op_arena *a = op_arena_create(0);
    op_arena_set_limit(a, 64u << 20);
    op_test_rng r = {5};
    int refused = 0, total = 20000;
    for (int it = 0; it < total; it++) {
        const buf *in = &blobs[op_test_rand(&r) % (uint64_t)n];
        op_tile t;
        op_err e;
        cr_assert_eq(op_tile_decode(in->p, in->len, a, &t, NULL, &e), OP_OK, "%s", e.msg);
        damage_field(&t, &r);
        op_bytes b;
        cr_assert_eq(op_tile_encode(&t, &b, NULL, &e), OP_OK, "%s", e.msg);
        refused += !check_decode(b.data, b.len, a);
        op_bytes_free(&b);
        op_arena_reset(a);
    }
    /* Most of these changes break a rule the validator checks. */
    cr_assert_gt(refused, total / 4, "only %d of %d damaged tiles refused", refused, total);
    for (int i = 0; i < n; i++)
        free(blobs[i].p);
    op_arena_destroy(a);
}

/* ==== RPC requests ==== */

static buf pack_request(int variant)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 4);
    op_rpc_pack_key(&pk, "v");
    msgpack_pack_int(&pk, OP_PROTOCOL_VERSION);
    op_rpc_pack_key(&pk, "id");
    msgpack_pack_uint64(&pk, 1000 + (uint64_t)variant);
    op_rpc_pack_key(&pk, "method");
    op_rpc_pack_key(&pk, variant == 0 ? "tile.get" : variant == 1 ? "level.upload" : "changes");
    op_rpc_pack_key(&pk, "params");
    if (variant == 0) {
        msgpack_pack_map(&pk, 4);
        op_rpc_pack_key(&pk, "level");
        op_rpc_pack_key(&pk, "town-1");
        op_rpc_pack_key(&pk, "tx");
        msgpack_pack_int(&pk, -3);
        op_rpc_pack_key(&pk, "tz");
        msgpack_pack_int(&pk, 70000);
        op_rpc_pack_key(&pk, "layer");
        msgpack_pack_int(&pk, 0);
    } else if (variant == 1) {
        msgpack_pack_map(&pk, 3);
        op_rpc_pack_key(&pk, "level");
        op_rpc_pack_key(&pk, "a");
        op_rpc_pack_key(&pk, "obj");
        static const char obj[] = "v 0 0 0\nv 1 0 0\nv 0 0 1\nf 1 2 3\n";
        msgpack_pack_bin_with_body(&pk, obj, sizeof obj - 1);
        op_rpc_pack_key(&pk, "settings");
        msgpack_pack_map(&pk, 2);
        op_rpc_pack_key(&pk, "cell_size");
        msgpack_pack_double(&pk, 0.3);
        op_rpc_pack_key(&pk, "tags");
        msgpack_pack_array(&pk, 3);
        msgpack_pack_nil(&pk);
        msgpack_pack_true(&pk);
        msgpack_pack_float(&pk, 1.5f);
    } else {
        msgpack_pack_map(&pk, 2);
        op_rpc_pack_key(&pk, "since");
        msgpack_pack_uint64(&pk, 0xffffffffffULL);
        op_rpc_pack_key(&pk, "wait_ms");
        msgpack_pack_int(&pk, -1);
    }
    buf b = {malloc(sb.size), sb.size};
    memcpy(b.p, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
    return b;
}

static int check_parse(const uint8_t *p, size_t len, const op_mp_limits *lim)
{
    op_rpc_request req;
    op_err e;
    e.msg[0] = '\0';
    op_status st = op_rpc_request_parse(p, len, lim, &req, &e);
    int ok = st == OP_OK;
    if (ok) {
        cr_assert(memchr(req.method, '\0', sizeof req.method), "method not terminated");
        cr_assert(req.params && req.params->type == MSGPACK_OBJECT_MAP, "params not a map");
        int64_t v;
        int present;
        (void)op_rpc_get_int(req.params, "tx", INT64_MIN, INT64_MAX, 1, &v, &present, &e);
    } else {
        cr_assert(e.msg[0], "refusal %s without a message", op_status_name(st));
    }
    op_rpc_request_fini(&req);
    return ok;
}

Test(decode_mutations, rpc_requests_survive_random_damage, .timeout = 120)
{
    buf reqs[3] = {pack_request(0), pack_request(1), pack_request(2)};
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    for (int i = 0; i < 3; i++)
        cr_assert(check_parse(reqs[i].p, reqs[i].len, &lim), "request %d refused", i);
    op_test_rng r = {77};
    for (int it = 0; it < 100000; it++) {
        const buf *in = &reqs[op_test_rand(&r) % 3];
        uint8_t *m = malloc(in->len + 64);
        size_t len = mutate(in, m, &r);
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, m, len);
        check_parse(exact, len, &lim);
        free(exact);
        free(m);
    }
    for (int i = 0; i < 3; i++)
        free(reqs[i].p);
}

/* The damage the fuzz corpus names, by hand: declared lengths beyond the bytes left are
 * refused before anything is reserved (toolchain.md: 5 bytes once reserved 8.4 GB). */
Test(decode_mutations, huge_declared_lengths_are_refused_unreserved)
{
    static const uint8_t cases[][6] = {
        {0xdd, 0x10, 0x00, 0x00, 0x00}, /* array32 of 2^28 */
        {0xdf, 0xff, 0xff, 0xff, 0xff}, /* map32 of 2^32 - 1 */
        {0xc6, 0xff, 0xff, 0xff, 0xff}, /* bin32 */
        {0xdb, 0x80, 0x00, 0x00, 0x00}, /* str32 */
        {0xdc, 0xff, 0xff, 0x00, 0x00}, /* array16 */
    };
    op_arena *a = op_arena_create(0);
    op_arena_set_limit(a, 1u << 20);
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(check_decode(cases[i], 5, a), 0);
        cr_assert_eq(check_parse(cases[i], 5, &lim), 0);
        cr_assert_lt(op_arena_peak(a), 1u << 20);
    }
    op_arena_destroy(a);
}
