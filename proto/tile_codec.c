/*
 * Tile blob encoder (msgpack written directly, byte for byte what msgpack-c's packer
 * writes for the same calls) and strict decoder (a bounded cursor of our
 * own: msgpack-c's unpacker reserves memory from declared counts, and a tile blob
 * has exactly one valid shape, so a reader that expects that shape is both safer
 * and simpler). Layout: docs/spec/navmesh-format.md §2.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/hash.h"
#include "onepath/limits.h"
#include "onepath/tile_codec.h"

void op_bytes_free(op_bytes *b)
{
    if (b) {
        free(b->data);
        b->data = NULL;
        b->len = 0;
    }
}

/* ---- little-endian bulk arrays ---- */

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- encoder: msgpack written straight into one buffer of the exact size ----
 * The bytes are msgpack-c's for the same calls (its packer picks the shortest form of
 * each integer, a map16 for 17 keys, fixstr keys, bin8/16/32 by length); writing them
 * here needs no growing buffer and no staging copy of each array. */

typedef struct wbuf {
    uint8_t *p;
} wbuf;

static void put_be(wbuf *w, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--)
        *w->p++ = (uint8_t)(v >> (8 * i));
}

static void w_byte(wbuf *w, uint8_t b)
{
    *w->p++ = b;
}

static void w_key(wbuf *w, const char *k)
{
    size_t n = strlen(k); /* keys are short: fixstr */
    w_byte(w, (uint8_t)(0xa0 | n));
    memcpy(w->p, k, n);
    w->p += n;
}

/* msgpack_pack_unsigned_int / msgpack_pack_int: the shortest form. */
static void w_uint(wbuf *w, uint32_t d)
{
    if (d < 128) {
        w_byte(w, (uint8_t)d);
    } else if (d < 256) {
        w_byte(w, 0xcc);
        put_be(w, d, 1);
    } else if (d < 65536) {
        w_byte(w, 0xcd);
        put_be(w, d, 2);
    } else {
        w_byte(w, 0xce);
        put_be(w, d, 4);
    }
}

static void w_int(wbuf *w, int32_t d)
{
    if (d >= -32) {
        if (d < 0)
            w_byte(w, (uint8_t)(int8_t)d); /* negative fixint */
        else
            w_uint(w, (uint32_t)d);
    } else if (d >= -128) {
        w_byte(w, 0xd0);
        put_be(w, (uint8_t)(int8_t)d, 1);
    } else if (d >= -32768) {
        w_byte(w, 0xd1);
        put_be(w, (uint16_t)(int16_t)d, 2);
    } else {
        w_byte(w, 0xd2);
        put_be(w, (uint32_t)d, 4);
    }
}

static void w_f64(wbuf *w, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    w_byte(w, 0xcb);
    put_be(w, u, 8);
}

static size_t bin_header(size_t n)
{
    return n < 256 ? 2 : n < 65536 ? 3 : 5;
}

static void w_bin_header(wbuf *w, size_t n)
{
    if (n < 256) {
        w_byte(w, 0xc4);
        put_be(w, n, 1);
    } else if (n < 65536) {
        w_byte(w, 0xc5);
        put_be(w, n, 2);
    } else {
        w_byte(w, 0xc6);
        put_be(w, n, 4);
    }
}

static int little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* n elements of es bytes from src as a bin of little-endian values. */
static void w_bin_le(wbuf *w, const void *src, size_t n, size_t es)
{
    w_bin_header(w, n * es);
    if (little_endian() || es == 1) {
        memcpy(w->p, src, n * es);
        w->p += n * es;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (es == 2) {
            put_u16(w->p, ((const uint16_t *)src)[i]);
        } else {
            uint32_t u;
            memcpy(&u, (const uint8_t *)src + 4 * i, 4); /* float bits or uint32 */
            put_u32(w->p, u);
        }
        w->p += es;
    }
}

op_status op_tile_encode(const op_tile *t, op_bytes *out, uint64_t *hash, op_err *err)
{
    out->data = NULL;
    out->len = 0;
    size_t np = (size_t)t->npolys, nvp = (size_t)t->nvp;
    /* Every built or decoded tile has region ids; a hand-made one without them has no
     * blob (a zero id would be refused by every decoder). */
    if (np > 0 && !t->regs)
        return op_err_set(err, OP_EINVAL, "tile encode: tile (%d, %d) layer %d has no region ids",
                          t->tx, t->tz, t->layer);
    size_t bins[9] = {
        3 * (size_t)t->nverts * 4,  np * nvp * 2,         np * nvp * 2, np, np * 2, np * 2, np * 16,
        3 * (size_t)t->ndverts * 4, 4 * (size_t)t->ndtris};
    /* Besides the bins: the map header 3 bytes, the 17 keys 100, five integers at most
     * 25, the origin array and four doubles 37, the hash 9: 174 at most. */
    size_t cap = 192;
    for (int i = 0; i < 9; i++)
        cap += bin_header(bins[i]) + bins[i];
    uint8_t *buf = malloc(cap);
    if (!buf)
        return op_err_set(err, OP_ENOMEM, "tile encode: out of memory (%zu bytes)", cap);
    wbuf w = {buf};
    w_byte(&w, 0xde); /* map16 of 17 entries */
    put_be(&w, OP_TILE_KEYS, 2);
    w_key(&w, "format");
    w_uint(&w, OP_TILE_FORMAT);
    w_key(&w, "tx");
    w_int(&w, t->tx);
    w_key(&w, "tz");
    w_int(&w, t->tz);
    w_key(&w, "layer");
    w_uint(&w, (uint32_t)t->layer);
    w_key(&w, "origin");
    w_byte(&w, 0x93); /* fixarray of 3 */
    for (int i = 0; i < 3; i++)
        w_f64(&w, t->origin[i]);
    w_key(&w, "tile_size");
    w_f64(&w, t->tile_size);
    w_key(&w, "nvp");
    w_uint(&w, (uint32_t)t->nvp);
    w_key(&w, "verts");
    w_bin_le(&w, t->verts, 3 * (size_t)t->nverts, 4);
    w_key(&w, "polys");
    w_bin_le(&w, t->polys, np * nvp, 2);
    w_key(&w, "neis");
    w_bin_le(&w, t->neis, np * nvp, 2);
    w_key(&w, "areas");
    w_bin_le(&w, t->areas, np, 1);
    w_key(&w, "flags");
    w_bin_le(&w, t->flags, np, 2);
    w_key(&w, "regs");
    w_bin_le(&w, t->regs, np, 2);
    w_key(&w, "dmeshes");
    w_bin_le(&w, t->dmeshes, 4 * np, 4);
    w_key(&w, "dverts");
    w_bin_le(&w, t->dverts, 3 * (size_t)t->ndverts, 4);
    w_key(&w, "dtris");
    w_bin_le(&w, t->dtris, 4 * (size_t)t->ndtris, 1);
    uint64_t h = op_hash_bytes(buf, (size_t)(w.p - buf));
    w_key(&w, "hash");
    w_byte(&w, 0xcf); /* fix uint64 */
    put_be(&w, h, 8);
    out->len = (size_t)(w.p - buf);
    out->data = buf;
    if (hash)
        *hash = h;
    op_err_clear(err);
    return OP_OK;
}

/* ---- strict decoder ---- */

typedef struct cursor {
    const uint8_t *p;
    size_t len, off;
    op_err *err;
    const char *key; /* key being read, for messages */
} cursor;

static op_status fail(cursor *c, op_status st, const char *what)
{
    return op_err_set(c->err, st, "tile decode: byte %zu (key '%s'): %s", c->off,
                      c->key ? c->key : "-", what);
}

static int need(cursor *c, size_t n)
{
    return c->len - c->off >= n;
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

static op_status read_key(cursor *c, const char *want)
{
    c->key = want;
    size_t n = strlen(want);
    if (!need(c, 1))
        return fail(c, OP_EINCOMPLETE, "blob ends before this key");
    uint8_t t = c->p[c->off];
    if (t < 0xa0 || t > 0xbf || (size_t)(t & 0x1f) != n)
        return fail(c, OP_EPROTO, "expected this key (a short str)");
    if (!need(c, 1 + n))
        return fail(c, OP_EINCOMPLETE, "key cut short");
    if (memcmp(c->p + c->off + 1, want, n) != 0)
        return fail(c, OP_EPROTO, "another key stands where this key belongs");
    c->off += 1 + n;
    return OP_OK;
}

/* The first byte msgpack-c's msgpack_pack_int / _unsigned_int writes for x: the shortest
 * form (w_int, w_uint), the only one the decoder accepts (navmesh-format.md §2). */
static uint8_t int_tag(int64_t x)
{
    if (x >= 0)
        return x < 128 ? (uint8_t)x : x < 256 ? 0xcc : x < 65536 ? 0xcd : 0xce;
    return x >= -32 ? (uint8_t)(int8_t)x : x >= -128 ? 0xd0 : x >= -32768 ? 0xd1 : 0xd2;
}

/* A msgpack integer in its shortest form; range checked against [lo, hi] (|bounds| < 2^31). */
static op_status read_int(cursor *c, int64_t lo, int64_t hi, int64_t *v)
{
    if (!need(c, 1))
        return fail(c, OP_EINCOMPLETE, "blob ends before the value");
    uint8_t t = c->p[c->off];
    int64_t x;
    size_t n = 0;
    if (t <= 0x7f) {
        x = t;
    } else if (t >= 0xe0) {
        x = (int64_t)(int8_t)t;
    } else if (t >= 0xcc && t <= 0xd3) {
        static const int sizes[8] = {1, 2, 4, 8, 1, 2, 4, 8};
        n = (size_t)sizes[t - 0xcc];
        if (!need(c, 1 + n))
            return fail(c, OP_EINCOMPLETE, "integer cut short");
        uint64_t u = be(c->p + c->off + 1, (int)n);
        if (t <= 0xcf) {
            if (u > (uint64_t)INT64_MAX)
                return fail(c, OP_EPROTO, "integer out of range");
            x = (int64_t)u;
        } else {
            int bits = (int)n * 8;
            x = bits == 64 ? (int64_t)u : (int64_t)(u << (64 - bits)) >> (64 - bits);
        }
    } else {
        return fail(c, OP_EPROTO, "expected an integer");
    }
    if (x < lo || x > hi)
        return fail(c, OP_EPROTO, "integer out of range");
    if (t != int_tag(x))
        return fail(c, OP_EPROTO, "integer not in its shortest form");
    c->off += 1 + n;
    *v = x;
    return OP_OK;
}

static op_status read_f64(cursor *c, double *v)
{
    if (!need(c, 9))
        return fail(c, OP_EINCOMPLETE, "float64 cut short");
    if (c->p[c->off] != 0xcb)
        return fail(c, OP_EPROTO, "expected a float64");
    uint64_t u = be(c->p + c->off + 1, 8);
    memcpy(v, &u, 8);
    if (!isfinite(*v))
        return fail(c, OP_EPROTO, "float64 is not finite");
    c->off += 9;
    return OP_OK;
}

/* A bin of elements of size es; returns pointer into the buffer and the count. */
static op_status read_bin(cursor *c, size_t es, const uint8_t **data, size_t *count)
{
    if (!need(c, 1))
        return fail(c, OP_EINCOMPLETE, "blob ends before the bin");
    uint8_t t = c->p[c->off];
    int hn = t == 0xc4 ? 1 : t == 0xc5 ? 2 : t == 0xc6 ? 4 : 0;
    if (!hn)
        return fail(c, OP_EPROTO, "expected a bin");
    if (!need(c, 1 + (size_t)hn))
        return fail(c, OP_EINCOMPLETE, "bin header cut short");
    uint64_t n = be(c->p + c->off + 1, hn);
    if (n > c->len - c->off - 1 - (size_t)hn)
        return fail(c, OP_EPROTO, "bin length exceeds the bytes present");
    if ((size_t)hn != bin_header(n) - 1)
        return fail(c, OP_EPROTO, "bin header not in its shortest form");
    if (n % es != 0)
        return fail(c, OP_EPROTO, "bin length is not a multiple of its element size");
    *data = c->p + c->off + 1 + hn;
    *count = (size_t)n / es;
    c->off += 1 + (size_t)hn + (size_t)n;
    return OP_OK;
}

typedef struct raw_tile {
    const uint8_t *verts, *polys, *neis, *areas, *flags, *regs, *dmeshes, *dverts, *dtris;
    size_t nverts3, npolys_nvp, nneis, nareas, nflags, nregs, ndmeshes, ndverts3, ndtris4;
} raw_tile;

static op_status read_header(cursor *c, op_tile *t)
{
    op_status st;
    int64_t v;
    c->key = "map";
    if (!need(c, 3))
        return fail(c, OP_EINCOMPLETE, "blob shorter than its map header");
    if (c->p[0] != 0xde || c->p[1] != 0 || c->p[2] != OP_TILE_KEYS)
        return fail(c, OP_EPROTO, "not a 17-entry map (map16)");
    c->off = 3;
    if ((st = read_key(c, "format")) || (st = read_int(c, 0, 65535, &v)))
        return st;
    if (v != OP_TILE_FORMAT)
        return fail(c, OP_EPROTO,
                    v < OP_TILE_FORMAT ? "format version older than 3 (no region ids): rebuild"
                                       : "unknown format version");
    if ((st = read_key(c, "tx")) || (st = read_int(c, INT32_MIN, INT32_MAX, &v)))
        return st;
    t->tx = (int)v;
    if ((st = read_key(c, "tz")) || (st = read_int(c, INT32_MIN, INT32_MAX, &v)))
        return st;
    t->tz = (int)v;
    if ((st = read_key(c, "layer")) || (st = read_int(c, 0, OP_MAX_LAYERS - 1, &v)))
        return st;
    t->layer = (int)v;
    if ((st = read_key(c, "origin")))
        return st;
    if (!need(c, 1) || c->p[c->off] != 0x93)
        return fail(c, OP_EPROTO, "expected an array of 3 float64");
    c->off++;
    for (int i = 0; i < 3; i++)
        if ((st = read_f64(c, &t->origin[i])))
            return st;
    if ((st = read_key(c, "tile_size")) || (st = read_f64(c, &t->tile_size)))
        return st;
    if ((st = read_key(c, "nvp")) ||
        (st = read_int(c, OP_MIN_VERTS_PER_POLY, OP_MAX_VERTS_PER_POLY, &v)))
        return st;
    t->nvp = (int)v;
    return OP_OK;
}

static op_status read_arrays(cursor *c, raw_tile *r)
{
    op_status st;
    if ((st = read_key(c, "verts")) || (st = read_bin(c, 4, &r->verts, &r->nverts3)) ||
        (st = read_key(c, "polys")) || (st = read_bin(c, 2, &r->polys, &r->npolys_nvp)) ||
        (st = read_key(c, "neis")) || (st = read_bin(c, 2, &r->neis, &r->nneis)) ||
        (st = read_key(c, "areas")) || (st = read_bin(c, 1, &r->areas, &r->nareas)) ||
        (st = read_key(c, "flags")) || (st = read_bin(c, 2, &r->flags, &r->nflags)) ||
        (st = read_key(c, "regs")) || (st = read_bin(c, 2, &r->regs, &r->nregs)) ||
        (st = read_key(c, "dmeshes")) || (st = read_bin(c, 4, &r->dmeshes, &r->ndmeshes)) ||
        (st = read_key(c, "dverts")) || (st = read_bin(c, 4, &r->dverts, &r->ndverts3)) ||
        (st = read_key(c, "dtris")) || (st = read_bin(c, 1, &r->dtris, &r->ndtris4)))
        return st;
    return OP_OK;
}

static op_status check_counts(cursor *c, const op_tile *t, const raw_tile *r)
{
    c->key = "counts";
    size_t np = r->nareas;
    if (r->nverts3 % 3 || r->ndverts3 % 3 || r->ndtris4 % 4)
        return fail(c, OP_EPROTO, "vertex or triangle array length is not a whole count");
    if (r->npolys_nvp != np * (size_t)t->nvp || r->nneis != np * (size_t)t->nvp ||
        r->nflags != np || r->nregs != np || r->ndmeshes != 4 * np)
        return fail(c, OP_EPROTO, "polygon arrays disagree with the polygon count");
    if (r->nverts3 / 3 >= OP_MAX_LAYER_VERTS || np > OP_MAX_LAYER_POLYS)
        return fail(c, OP_EPROTO, "too many vertices or polygons");
    return OP_OK;
}

/* Region ids are 1..OP_MAX_REGIONS (navmesh-format.md §2 item 7): a polygon always comes
 * from a region, 0 is "no region" and 0xffff is no region id at all. */
static op_status check_regs(cursor *c, const raw_tile *r)
{
    for (size_t p = 0; p < r->nregs; p++) {
        unsigned id = get_u16(r->regs + 2 * p);
        if (id < 1 || id > OP_MAX_REGIONS)
            return op_err_set(c->err, OP_EPROTO,
                              "tile decode: key 'regs': polygon %zu region %u outside 1..%d", p, id,
                              OP_MAX_REGIONS);
    }
    return OP_OK;
}

static op_status copy_out(cursor *c, const raw_tile *r, op_arena *a, op_tile *t)
{
    size_t np = r->nareas, nvp = (size_t)t->nvp;
    t->nverts = (int)(r->nverts3 / 3);
    t->npolys = (int)np;
    t->ndverts = (int)(r->ndverts3 / 3);
    t->ndtris = (int)(r->ndtris4 / 4);
    t->verts = op_arena_alloc(a, r->nverts3 * 4);
    t->polys = op_arena_alloc(a, np * nvp * 2);
    t->neis = op_arena_alloc(a, np * nvp * 2);
    t->areas = op_arena_alloc(a, np);
    t->flags = op_arena_alloc(a, np * 2);
    t->regs = op_arena_alloc(a, np * 2 + 1);
    t->dmeshes = op_arena_alloc(a, np * 16);
    t->dverts = op_arena_alloc(a, r->ndverts3 * 4);
    t->dtris = op_arena_alloc(a, r->ndtris4);
    if (!t->verts || !t->polys || !t->neis || !t->areas || !t->flags || !t->regs || !t->dmeshes ||
        !t->dverts || !t->dtris)
        return fail(c, OP_ENOMEM, "out of memory");
    for (size_t i = 0; i < r->nverts3; i++)
        t->verts[i] = bits_float(get_u32(r->verts + 4 * i));
    for (size_t i = 0; i < np * nvp; i++) {
        t->polys[i] = get_u16(r->polys + 2 * i);
        t->neis[i] = get_u16(r->neis + 2 * i);
    }
    memcpy(t->areas, r->areas, np);
    for (size_t i = 0; i < np; i++) {
        t->flags[i] = get_u16(r->flags + 2 * i);
        t->regs[i] = get_u16(r->regs + 2 * i);
    }
    for (size_t i = 0; i < 4 * np; i++)
        t->dmeshes[i] = get_u32(r->dmeshes + 4 * i);
    for (size_t i = 0; i < r->ndverts3; i++)
        t->dverts[i] = bits_float(get_u32(r->dverts + 4 * i));
    memcpy(t->dtris, r->dtris, r->ndtris4);
    return OP_OK;
}

static op_status read_hash(cursor *c, uint64_t *hash)
{
    op_status st;
    size_t covered = c->off;
    if ((st = read_key(c, "hash")))
        return st;
    if (!need(c, 9))
        return fail(c, OP_EINCOMPLETE, "hash cut short");
    if (c->p[c->off] != 0xcf)
        return fail(c, OP_EPROTO, "expected a uint64 (0xcf)");
    uint64_t h = be(c->p + c->off + 1, 8);
    c->off += 9;
    if (c->off != c->len)
        return fail(c, OP_EPROTO, "trailing bytes after the blob");
    if (h != op_hash_bytes(c->p, covered))
        return fail(c, OP_EPROTO, "content hash does not match the bytes");
    *hash = h;
    return OP_OK;
}

op_status op_tile_decode(const void *buf, size_t len, op_arena *arena, op_tile *t, uint64_t *hash,
                         op_err *err)
{
    memset(t, 0, sizeof *t);
    if (!buf && len)
        return op_err_set(err, OP_EINVAL, "tile decode: NULL buffer");
    cursor c = {buf, len, 0, err, NULL};
    raw_tile r;
    memset(&r, 0, sizeof r);
    uint64_t h = 0;
    op_arena_mark m = op_arena_get_mark(arena);
    op_status st;
    if ((st = read_header(&c, t)) || (st = read_arrays(&c, &r)) || (st = check_counts(&c, t, &r)) ||
        (st = read_hash(&c, &h)) || (st = check_regs(&c, &r)) ||
        (st = copy_out(&c, &r, arena, t)) || (st = op_tile_validate(t, err))) {
        op_arena_release(arena, m);
        memset(t, 0, sizeof *t);
        return st;
    }
    if (hash)
        *hash = h;
    op_err_clear(err);
    return OP_OK;
}
