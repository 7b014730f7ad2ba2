/*
 * Level generator, entry and open-ground kinds (onepath/levelgen.h): flat, terrain,
 * pillars, plus the builder, PRNG and shape helpers the structured kinds
 * (levelgen_structures.c) share.
 *
 * Input: kind name, size N in metres (16..1024), 64-bit seed. Output: a soup in
 * [0, N] x [0, N] (x, z) whose bytes depend on nothing but the inputs: integer
 * arithmetic only (splitmix64, integer value noise with a polynomial fade), every
 * coordinate a multiple of 1/64 m. Each kind runs twice, counting then filling, so
 * the output arrays are exactly sized. Typical sizes: a few thousand triangles at
 * 64 m; terrain at 1024 m is 1025^2 vertices and 2.1M triangles.
 */
#include <string.h>

#include "levelgen_internal.h"
#include "onepath/levelgen.h"

#define Q OP__LG_Q

/* ===== PRNG and builder ===== */

uint64_t op__lg_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t op__lg_next(op__lg_rng *r)
{
    return op__lg_mix(r->s += 0x9e3779b97f4a7c15ULL);
}

int32_t op__lg_range(op__lg_rng *r, int32_t lo, int32_t hi)
{
    return lo + (int32_t)(op__lg_next(r) % (uint64_t)((int64_t)hi - lo + 1));
}

int op__lg_vert(op__lg_builder *b, int32_t x, int32_t y, int32_t z)
{
    if (b->verts) {
        float *v = &b->verts[3 * b->nv];
        v[0] = (float)x / (float)Q; /* exact: |x| < 2^24 and Q a power of two */
        v[1] = (float)y / (float)Q;
        v[2] = (float)z / (float)Q;
    }
    return (int)b->nv++;
}

void op__lg_tri(op__lg_builder *b, int a, int c, int d)
{
    if (b->tris) {
        int *t = &b->tris[3 * b->nt];
        t[0] = a;
        t[1] = c;
        t[2] = d;
    }
    b->nt++;
}

void op__lg_quad_up(op__lg_builder *b, int32_t x0, int32_t z0, int32_t x1, int32_t z1, int32_t y00,
                    int32_t y01, int32_t y11, int32_t y10)
{
    /* (x0,z0), (x0,z1), (x1,z1), (x1,z0) with x0 < x1, z0 < z1: both triangles have a
     * normal with y = dx * dz > 0. */
    int a = op__lg_vert(b, x0, y00, z0);
    int c = op__lg_vert(b, x0, y01, z1);
    int d = op__lg_vert(b, x1, y11, z1);
    int e = op__lg_vert(b, x1, y10, z0);
    op__lg_tri(b, a, c, d);
    op__lg_tri(b, a, d, e);
}

void op__lg_floor(op__lg_builder *b, int32_t x0, int32_t z0, int32_t x1, int32_t z1, int32_t y)
{
    op__lg_quad_up(b, x0, z0, x1, z1, y, y, y, y);
}

void op__lg_wall_sloped(op__lg_builder *b, int32_t xa, int32_t za, int32_t xb, int32_t zb,
                        int32_t y0, int32_t ya, int32_t yb)
{
    int a = op__lg_vert(b, xa, y0, za);
    int c = op__lg_vert(b, xb, y0, zb);
    int d = op__lg_vert(b, xb, yb, zb);
    int e = op__lg_vert(b, xa, ya, za);
    op__lg_tri(b, a, c, d);
    op__lg_tri(b, a, d, e);
}

void op__lg_wall(op__lg_builder *b, int32_t xa, int32_t za, int32_t xb, int32_t zb, int32_t y0,
                 int32_t y1)
{
    op__lg_wall_sloped(b, xa, za, xb, zb, y0, y1, y1);
}

void op__lg_box(op__lg_builder *b, int32_t x0, int32_t z0, int32_t x1, int32_t z1, int32_t y0,
                int32_t y1)
{
    /* Sides clockwise seen from above, so that each faces out of the box like its top. */
    op__lg_floor(b, x0, z0, x1, z1, y1);
    op__lg_wall(b, x1, z0, x0, z0, y0, y1);
    op__lg_wall(b, x1, z1, x1, z0, y0, y1);
    op__lg_wall(b, x0, z1, x1, z1, y0, y1);
    op__lg_wall(b, x0, z0, x0, z1, y0, y1);
}

/* ===== flat ===== */

static op_status gen_flat(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch,
                          op_err *err)
{
    (void)seed;
    (void)scratch;
    (void)err;
    int32_t n = size * Q, step = 4 * Q;
    for (int32_t z = 0; z < n; z += step)
        for (int32_t x = 0; x < n; x += step)
            op__lg_floor(b, x, z, x + step < n ? x + step : n, z + step < n ? z + step : n, 0);
    return OP_OK;
}

/* ===== terrain: integer value noise ===== */

/* Floor of v / 2^s without relying on how >> treats negative values. */
static int64_t asr(int64_t v, int s)
{
    return v >= 0 ? v >> s : -((-v + ((int64_t)1 << s) - 1) >> s);
}

/* Value noise with lattice spacing `spacing` (coordinate units), in [0, 65535]. */
static int64_t noise(uint64_t seed, int octave, int32_t x, int32_t z, int32_t spacing)
{
    int32_t ix = x / spacing, iz = z / spacing;
    int64_t tx = ((int64_t)(x % spacing) << 16) / spacing,
            tz = ((int64_t)(z % spacing) << 16) / spacing;
    int64_t v[4];
    for (int k = 0; k < 4; k++) {
        uint64_t h = seed ^ ((uint64_t)(uint32_t)octave << 56) ^
                     ((uint64_t)(uint32_t)(ix + (k & 1)) << 28) ^
                     (uint64_t)(uint32_t)(iz + (k >> 1));
        v[k] = (int64_t)(op__lg_mix(h * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL) >> 48);
    }
    /* Fade 3t^2 - 2t^3 in 16.16 fixed point (t < 2^16, so no overflow in int64). */
    int64_t sx = (tx * tx * (3 * 65536 - 2 * tx)) >> 32;
    int64_t sz = (tz * tz * (3 * 65536 - 2 * tz)) >> 32;
    int64_t a = v[0] + asr((v[1] - v[0]) * sx, 16);
    int64_t c = v[2] + asr((v[3] - v[2]) * sx, 16);
    return a + asr((c - a) * sz, 16);
}

/* Height (coordinate units) at a grid point: three octaves of rolling hills and a
 * cliff layer whose fade is 12 times steeper (3 m drops over 2-3 m). */
static int32_t terrain_height(uint64_t seed, int32_t x, int32_t z)
{
    int64_t h = noise(seed, 0, x, z, 64 * Q) * (12 * Q) >> 16;
    h += noise(seed, 1, x, z, 16 * Q) * (4 * Q) >> 16;
    h += noise(seed, 2, x, z, 4 * Q) * (Q / 2) >> 16;
    int64_t c = (noise(seed, 3, x, z, 32 * Q) - 32768) * 12;
    c = c < 0 ? 0 : c > 65535 ? 65535 : c;
    h += c * (3 * Q) >> 16;
    return (int32_t)h;
}

static op_status gen_terrain(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch,
                             op_err *err)
{
    (void)scratch;
    (void)err;
    int32_t step = size <= 512 ? Q / 2 : Q;
    int32_t cells = size * Q / step;
    size_t base = b->nv;
    for (int32_t k = 0; k <= cells; k++)
        for (int32_t i = 0; i <= cells; i++) {
            int32_t x = i * step, z = k * step;
            op__lg_vert(b, x, b->verts ? terrain_height(seed, x, z) : 0, z);
        }
    for (int32_t k = 0; k < cells; k++)
        for (int32_t i = 0; i < cells; i++) {
            int a = (int)(base + (size_t)k * (size_t)(cells + 1) + (size_t)i);
            int c = a + cells + 1; /* (i, k + 1) */
            op__lg_tri(b, a, c, c + 1);
            op__lg_tri(b, a, c + 1, a + 1);
        }
    return OP_OK;
}

/* ===== pillars ===== */

static op_status gen_pillars(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch,
                             op_err *err)
{
    (void)scratch;
    (void)err;
    op__lg_rng r = {seed ^ 0x70696c6c617273ULL};
    int32_t n = size * Q;
    gen_flat(b, size, seed, scratch, err);
    int count = size * size / 32;
    for (int i = 0; i < count; i++) {
        int32_t w = op__lg_range(&r, Q / 2, 3 * Q), d = op__lg_range(&r, Q / 2, 3 * Q);
        int32_t h = op__lg_range(&r, Q / 2, 6 * Q);
        int32_t x = op__lg_range(&r, 0, n - w), z = op__lg_range(&r, 0, n - d);
        op__lg_box(b, x, z, x + w, z + d, 0, h);
    }
    return OP_OK;
}

/* ===== entry ===== */

typedef struct kind_entry {
    const char *name;
    op__lg_kind_fn fn;
} kind_entry;

static const kind_entry kinds[] = {
    {"flat", gen_flat},       {"terrain", gen_terrain},          {"stairs", op__lg_stairs},
    {"rooms", op__lg_rooms},  {"multifloor", op__lg_multifloor}, {"ramp", op__lg_ramp},
    {"pillars", gen_pillars}, {"furniture", op__lg_furniture},
};

static op_status find_kind(const char *kind, op__lg_kind_fn *fn, op_err *err)
{
    for (size_t i = 0; kind && i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kind, kinds[i].name)) {
            *fn = kinds[i].fn;
            return OP_OK;
        }
    return op_err_set(err, OP_EINVAL, "levelgen: unknown kind '%.40s' (kinds: %s)",
                      kind ? kind : "(null)", OP_LEVELGEN_KINDS);
}

/* Runs the kind once to count, allocates, runs it again to fill. */
static op_status build(op__lg_kind_fn fn, int size, uint64_t seed, op_arena *out, op_arena *scratch,
                       op_soup *soup, op_err *err)
{
    op__lg_builder b = {0, 0, NULL, NULL};
    op_arena_mark m = op_arena_get_mark(scratch);
    op_status st = fn(&b, size, seed, scratch, err);
    op_arena_release(scratch, m);
    if (st != OP_OK)
        return st;
    size_t nv = b.nv, nt = b.nt;
    if (nv > (size_t)INT32_MAX)
        return op_err_set(err, OP_ELIMIT, "levelgen: %zu vertices exceed int indices", nv);
    float *verts = op_arena_alloc(out, nv * 3 * sizeof(float));
    int *tris = verts ? op_arena_alloc(out, nt * 3 * sizeof(int)) : NULL;
    if (!tris)
        return op_err_set(err, OP_ENOMEM, "levelgen: out of memory for %zu bytes",
                          nv * 3 * sizeof(float) + nt * 3 * sizeof(int));
    b.nv = b.nt = 0;
    b.verts = verts;
    b.tris = tris;
    st = fn(&b, size, seed, scratch, err);
    if (st != OP_OK)
        return st;
    if (b.nv != nv || b.nt != nt)
        return op_err_set(err, OP_EINTERNAL, "levelgen: passes disagree (%zu/%zu vertices)", b.nv,
                          nv);
    soup->verts = verts;
    soup->verts_len = 3 * nv;
    soup->tris = tris;
    soup->tris_len = 3 * nt;
    soup->areas = NULL;
    return OP_OK;
}

op_status op_levelgen(const char *kind, int size_m, uint64_t seed, op_arena *out, op_soup *soup,
                      op_err *err)
{
    if (soup)
        memset(soup, 0, sizeof *soup);
    if (!out || !soup)
        return op_err_set(err, OP_EINVAL, "levelgen: NULL argument");
    op__lg_kind_fn fn = NULL;
    op_status st = find_kind(kind, &fn, err);
    if (st != OP_OK)
        return st;
    if (size_m < OP_LEVELGEN_MIN_SIZE || size_m > OP_LEVELGEN_MAX_SIZE)
        return op_err_set(err, OP_ERANGE, "levelgen: size %d m is outside %d..%d", size_m,
                          OP_LEVELGEN_MIN_SIZE, OP_LEVELGEN_MAX_SIZE);
    op_arena *scratch = op_arena_create(0);
    if (!scratch)
        return op_err_set(err, OP_ENOMEM, "levelgen: out of memory for the scratch arena");
    st = build(fn, size_m, seed, out, scratch, soup, err);
    op_arena_destroy(scratch);
    if (st != OP_OK) {
        memset(soup, 0, sizeof *soup);
        return st;
    }
    op_err_clear(err);
    return OP_OK;
}
