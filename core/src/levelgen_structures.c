/*
 * Level generator, built kinds (onepath/levelgen.h): stairs, rooms, multifloor, ramp.
 *
 * Input: size N (metres), seed; output: triangles emitted into the two-pass builder
 * (levelgen_internal.h), all inside [0, N] in x and z, coordinates in 1/64 m. Each
 * kind draws from its own splitmix64 stream, so kinds do not share random sequences.
 * Typical sizes at 1024 m: stairs ~3.1M, rooms ~170k, multifloor ~800k, ramp ~60k
 * triangles.
 */
#include "levelgen_internal.h"

#define Q OP__LG_Q

/* ===== stairs: lanes of flights going up and down, landings between ===== */

/* One lane [z0, z1] from x = 1 m to N - 1 m. Steps and landings are solid boxes
 * from the floor, so every riser is a vertical face of one rise. */
static void stairs_lane(op__lg_builder *b, op__lg_rng *r, int32_t n, int32_t z0, int32_t z1)
{
    int32_t x = Q, y = 0, end = n - Q;
    while (x < end) {
        /* Up from the floor, down from above 6 m, otherwise either way. */
        int up = y == 0 ? 1 : y > 6 * Q ? 0 : (int)(op__lg_next(r) & 1);
        int32_t steps = op__lg_range(r, 4, 12);
        int32_t rise = op__lg_range(r, 10, 19);  /* 0.16 .. 0.30 m */
        int32_t tread = op__lg_range(r, 19, 26); /* 0.30 .. 0.41 m */
        for (int32_t s = 0; s < steps && x + tread <= end; s++) {
            int32_t ny = up ? y + rise : y - rise;
            if (ny <= 0) {
                y = 0;
                break;
            }
            op__lg_box(b, x, z0, x + tread, z1, 0, ny);
            x += tread;
            y = ny;
        }
        int32_t land = op__lg_range(r, 2 * Q, 4 * Q);
        if (land > end - x)
            land = end - x;
        if (land > 0 && y > 0)
            op__lg_box(b, x, z0, x + land, z1, 0, y);
        x += land;
    }
}

op_status op__lg_stairs(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch, op_err *err)
{
    (void)scratch;
    (void)err;
    op__lg_rng r = {seed ^ 0x7374616972730000ULL};
    int32_t n = size * Q;
    op__lg_floor(b, 0, 0, n, n, 0);
    /* Lanes 3 m wide every 5 m, 1 m from the edges. */
    for (int32_t z0 = Q; z0 + 3 * Q <= n - Q; z0 += 5 * Q)
        stairs_lane(b, &r, n, z0, z0 + 3 * Q);
    return OP_OK;
}

/* ===== rooms: a dungeon on a 1 m tile map ===== */

typedef struct room {
    int32_t x0, z0, x1, z1; /* tiles [x0, x1) x [z0, z1) */
} room;

static void mark(uint8_t *map, int32_t t, int32_t x0, int32_t z0, int32_t x1, int32_t z1)
{
    for (int32_t z = z0; z < z1; z++)
        for (int32_t x = x0; x < x1; x++)
            map[(size_t)z * (size_t)t + (size_t)x] = 1;
}

/* An L-shaped corridor 2 tiles wide: along x at a's centre row, then along z at b's
 * centre column. Where it meets a room the room's wall gets a doorway. */
static void corridor(uint8_t *map, int32_t t, const room *a, const room *c)
{
    int32_t ax = (a->x0 + a->x1) / 2 - 1, az = (a->z0 + a->z1) / 2 - 1;
    int32_t bx = (c->x0 + c->x1) / 2 - 1, bz = (c->z0 + c->z1) / 2 - 1;
    mark(map, t, ax < bx ? ax : bx, az, (ax > bx ? ax : bx) + 2, az + 2);
    mark(map, t, bx, az < bz ? az : bz, bx + 2, (az > bz ? az : bz) + 2);
}

static int is_floor(const uint8_t *map, int32_t t, int32_t x, int32_t z)
{
    return x >= 0 && z >= 0 && x < t && z < t && map[(size_t)z * (size_t)t + (size_t)x];
}

/* Floors as runs along x; walls (3 m) on every floor/non-floor edge, merged into runs. */
static void rooms_mesh(op__lg_builder *b, const uint8_t *map, int32_t t)
{
    const int32_t wall = 3 * Q;
    for (int32_t z = 0; z < t; z++)
        for (int32_t x = 0; x < t;) {
            if (!is_floor(map, t, x, z)) {
                x++;
                continue;
            }
            int32_t x0 = x;
            while (x < t && is_floor(map, t, x, z))
                x++;
            op__lg_floor(b, x0 * Q, z * Q, x * Q, (z + 1) * Q, 0);
        }
    /* Each wall faces the floor it bounds (op__lg_wall: it faces the left of its direction),
     * so the solid behind it is on the side without floor; a run ends where that side changes. */
    for (int32_t z = 0; z <= t; z++) /* edges along x between rows z - 1 and z */
        for (int32_t x = 0; x < t;) {
            int up = is_floor(map, t, x, z);
            if (is_floor(map, t, x, z - 1) == up) {
                x++;
                continue;
            }
            int32_t x0 = x;
            while (x < t && is_floor(map, t, x, z - 1) != up && is_floor(map, t, x, z) == up)
                x++;
            if (up) /* floor on +z: walk +x */
                op__lg_wall(b, x0 * Q, z * Q, x * Q, z * Q, 0, wall);
            else
                op__lg_wall(b, x * Q, z * Q, x0 * Q, z * Q, 0, wall);
        }
    for (int32_t x = 0; x <= t; x++) /* edges along z between columns x - 1 and x */
        for (int32_t z = 0; z < t;) {
            int right = is_floor(map, t, x, z);
            if (is_floor(map, t, x - 1, z) == right) {
                z++;
                continue;
            }
            int32_t z0 = z;
            while (z < t && is_floor(map, t, x - 1, z) != right && is_floor(map, t, x, z) == right)
                z++;
            if (right) /* floor on +x: walk -z */
                op__lg_wall(b, x * Q, z * Q, x * Q, z0 * Q, 0, wall);
            else
                op__lg_wall(b, x * Q, z0 * Q, x * Q, z * Q, 0, wall);
        }
}

op_status op__lg_rooms(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch, op_err *err)
{
    op__lg_rng r = {seed ^ 0x726f6f6d73000000ULL};
    int32_t t = size, nc = size / 16;
    uint8_t *map = op_arena_calloc(scratch, (size_t)t * (size_t)t, 1);
    room *rooms = op_arena_alloc(scratch, (size_t)nc * (size_t)nc * sizeof(room));
    if (!map || !rooms)
        return op_err_set(err, OP_ENOMEM,
                          "levelgen: out of memory for a %d x %d tile map (%zu bytes)", t, t,
                          (size_t)t * (size_t)t + (size_t)nc * (size_t)nc * sizeof(room));
    /* One room of 6..12 m a side inside each 16 m cell, 1 m from the cell's edges. */
    for (int32_t cz = 0; cz < nc; cz++)
        for (int32_t cx = 0; cx < nc; cx++) {
            room *m = &rooms[cz * nc + cx];
            int32_t w = op__lg_range(&r, 6, 12), d = op__lg_range(&r, 6, 12);
            m->x0 = 16 * cx + op__lg_range(&r, 1, 15 - w);
            m->z0 = 16 * cz + op__lg_range(&r, 1, 15 - d);
            m->x1 = m->x0 + w;
            m->z1 = m->z0 + d;
            mark(map, t, m->x0, m->z0, m->x1, m->z1);
        }
    /* Each row is a chain; rows join through column 0 and, at random, elsewhere. */
    for (int32_t cz = 0; cz < nc; cz++)
        for (int32_t cx = 0; cx < nc; cx++) {
            const room *m = &rooms[cz * nc + cx];
            if (cx + 1 < nc)
                corridor(map, t, m, m + 1);
            if (cz + 1 < nc && (cx == 0 || (op__lg_next(&r) & 1)))
                corridor(map, t, m, m + nc);
        }
    rooms_mesh(b, map, t);
    return OP_OK;
}

/* ===== multifloor: decks over a ground floor, a bridge, a ramp and stairs ===== */

/* One 16 m cell at (ox, oz): decks A (x 1..7) and B (x 9..15) over z 7..15, 3.5..5 m
 * up, 0.25 m thick; a 2 m bridge between them; a ramp up to one deck and 16 steps up to
 * the other, both from z = 0.5 m to the deck edge at z = 7 m. */
static void multifloor_cell(op__lg_builder *b, op__lg_rng *r, int32_t ox, int32_t oz)
{
    int32_t h = op__lg_range(r, 7, 10) * (Q / 2), t = Q / 4;
    int ramp_left = (int)(op__lg_next(r) & 1);
    op__lg_box(b, ox + 1 * Q, oz + 7 * Q, ox + 7 * Q, oz + 15 * Q, h - t, h);
    op__lg_box(b, ox + 9 * Q, oz + 7 * Q, ox + 15 * Q, oz + 15 * Q, h - t, h);
    int32_t bz = op__lg_range(r, 8, 13) * Q; /* the bridge, somewhere along the decks */
    op__lg_box(b, ox + 7 * Q, oz + bz, ox + 9 * Q, oz + bz + 2 * Q, h - t, h);
    int32_t rx0 = ox + (ramp_left ? 2 : 10) * Q, rx1 = rx0 + 4 * Q;
    int32_t sx0 = ox + (ramp_left ? 10 : 2) * Q, sx1 = sx0 + 4 * Q;
    int32_t z0 = oz + Q / 2, z1 = oz + 7 * Q;
    op__lg_quad_up(b, rx0, z0, rx1, z1, 0, h, h, 0); /* at most 5 m over 6.5 m: 38 deg */
    for (int side = 0; side < 2; side++) {
        int32_t x = side ? rx1 : rx0;
        /* One call per statement: argument evaluation order differs between compilers. */
        int v0 = op__lg_vert(b, x, 0, z0);
        int v1 = op__lg_vert(b, x, 0, z1);
        int v2 = op__lg_vert(b, x, h, z1);
        /* Each side faces away from the wedge under the ramp: -x at rx0, +x at rx1. */
        if (side)
            op__lg_tri(b, v0, v2, v1);
        else
            op__lg_tri(b, v0, v1, v2);
    }
    const int32_t steps = 16, tread = (z1 - z0) / steps; /* 6.5 m / 16 = 26 units */
    for (int32_t s = 0; s < steps; s++)
        op__lg_box(b, sx0, z0 + s * tread, sx1, z0 + (s + 1) * tread, 0, (s + 1) * h / steps);
}

op_status op__lg_multifloor(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch,
                            op_err *err)
{
    (void)scratch;
    (void)err;
    op__lg_rng r = {seed ^ 0x6d756c7469000000ULL};
    int32_t n = size * Q, nc = size / 16;
    op__lg_floor(b, 0, 0, n, n, 0);
    for (int32_t cz = 0; cz < nc; cz++)
        for (int32_t cx = 0; cx < nc; cx++)
            multifloor_cell(b, &r, cx * 16 * Q, cz * 16 * Q);
    return OP_OK;
}

/* ===== ramp: square parking-garage helices ===== */

/* A helix around a square core centred at (c, c) + (ox, oz): per turn four flat
 * corner landings and four straight sides each rising `rise`; a turn climbs 4.5 m,
 * so every turn lies 4.5 m over the one below. */
static void helix(op__lg_builder *b, int32_t cx, int32_t cz, int32_t ro, int32_t ri, int turns)
{
    const int32_t rise = 72; /* 1.125 m per side, 4.5 m per turn */
    int32_t y = 0;
    op__lg_box(b, cx - ri, cz - ri, cx + ri, cz + ri, 0, turns * 4 * rise + Q);
    for (int t = 0; t < turns; t++) {
        if (y > 0) /* the first landing is the ground floor itself */
            op__lg_floor(b, cx - ro, cz - ro, cx - ri, cz - ri, y);
        op__lg_quad_up(b, cx - ri, cz - ro, cx + ri, cz - ri, y, y, y + rise, y + rise);
        y += rise;
        op__lg_floor(b, cx + ri, cz - ro, cx + ro, cz - ri, y);
        op__lg_quad_up(b, cx + ri, cz - ri, cx + ro, cz + ri, y, y + rise, y + rise, y);
        y += rise;
        op__lg_floor(b, cx + ri, cz + ri, cx + ro, cz + ro, y);
        op__lg_quad_up(b, cx - ri, cz + ri, cx + ri, cz + ro, y + rise, y + rise, y, y);
        y += rise;
        op__lg_floor(b, cx - ro, cz + ri, cx - ri, cz + ro, y);
        op__lg_quad_up(b, cx - ro, cz - ri, cx - ri, cz + ri, y + rise, y, y, y + rise);
        y += rise;
    }
    op__lg_floor(b, cx - ro, cz - ro, cx - ri, cz - ri, y); /* the top landing */
}

op_status op__lg_ramp(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch, op_err *err)
{
    (void)scratch;
    (void)err;
    op__lg_rng r = {seed ^ 0x72616d7000000000ULL};
    int32_t n = size * Q;
    int32_t cell = size < 32 ? size : 32, nc = size / cell;
    int32_t half = cell * Q / 2, ro = half - Q, ri = ro - (cell >= 32 ? 4 : 3) * Q;
    op__lg_floor(b, 0, 0, n, n, 0);
    for (int32_t cz = 0; cz < nc; cz++)
        for (int32_t cx = 0; cx < nc; cx++)
            helix(b, cx * cell * Q + half, cz * cell * Q + half, ro, ri,
                  (int)op__lg_range(&r, 2, 4));
    return OP_OK;
}
