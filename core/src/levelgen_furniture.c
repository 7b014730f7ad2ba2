/*
 * Level generator, the furniture kind (onepath/levelgen.h): furnished halls of the kind
 * RecastDemo and DotRecast ship. Per 16 m cell of the level: a hall of pillars whose gaps
 * leave one-to-two-cell passages, a table (four thin legs, a slightly sloped top) between
 * two benches, a partition wall with a narrow doorway, a stair of two flights turning at a
 * landing up to a platform (a deck on posts, the ground walkable under it), and a narrow
 * bridge from that platform to a second one that nothing else reaches.
 *
 * Input: size N (metres), seed. Output: the layout (op__lg_furniture_layout: every piece of
 * every cell, cell by cell) and the triangles emitted from it, all inside [0, N] in x and z,
 * coordinates in 1/64 m. Every coordinate of a piece is off the 0.5 m lines, hence off every
 * multiple of 0.1 m and of the default 0.3 m cell: how the grid falls across a narrow
 * passage then varies from piece to piece, as on a real level (issue 13). The layout draws
 * from its own splitmix64 stream; emitting draws nothing. Typical sizes: 442 triangles per
 * 16 m cell (7,072 at 64 m, 113,152 at 256 m).
 */
#include "levelgen_internal.h"

#define Q              OP__LG_Q
#define M(metres_x100) ((int32_t)((metres_x100)*Q / 100)) /* centimetres to units */

/* The 0.5 m lines are the multiples of 32 units; moving off one moves off every 0.1 m and
 * 0.3 m line too (0.1 m = 6.4 units, 0.3 m = 19.2 units: integers only at 32 k, 96 k). */
static int32_t off_line(int32_t v)
{
    return v % 32 == 0 ? v + 1 : v;
}

/* A random coordinate in [lo, hi] cm, off the lines. */
static int32_t at(op__lg_rng *r, int lo_cm, int hi_cm)
{
    return off_line(op__lg_range(r, M(lo_cm), M(hi_cm)));
}

/* An end x0 + len, moved off the lines by lengthening. */
static int32_t end_of(int32_t x0, int32_t len)
{
    return off_line(x0 + len);
}

static op__lg_piece *push(op__lg_piece *p, int *n, int max, int kind, int32_t x0, int32_t z0,
                          int32_t x1, int32_t z1, int32_t ylo, int32_t yhi)
{
    if (*n >= max)
        return NULL;
    op__lg_piece *q = &p[(*n)++];
    *q = (op__lg_piece){kind, x0, z0, x1, z1, ylo, yhi, 0};
    return q;
}

/* Two rows of three pillars, 0.4..0.7 m square and 3..4 m tall, gaps 1.84..2.05 m: with the
 * default 0.6 m radius at 0.3 m cells such a gap keeps one or two cells after erosion. */
static void hall_pillars(op__lg_rng *r, int32_t ox, int32_t oz, op__lg_piece *p, int *n, int max)
{
    int32_t z0 = oz + at(r, 95, 130), next_z = 0;
    for (int row = 0; row < 2; row++) {
        int32_t x0 = ox + at(r, 70, 110);
        for (int col = 0; col < 3; col++) {
            int32_t w = op__lg_range(r, M(40), M(70)), d = op__lg_range(r, M(40), M(70));
            int32_t x1 = end_of(x0, w), z1 = end_of(z0, d);
            push(p, n, max, OP__LG_PILLAR, x0, z0, x1, z1, 0, op__lg_range(r, 3 * Q, 4 * Q));
            if (z1 > next_z)
                next_z = z1;
            x0 = end_of(x1, op__lg_range(r, M(184), M(205)));
        }
        z0 = end_of(next_z, op__lg_range(r, M(184), M(205)));
    }
}

/* A table 1.8..2.4 x 1.0..1.3 m, top 0.70..1.02 m up (some within the default 0.9 m climb,
 * some not) tilted by 3..14 units (about 2..10 degrees) along x or z, and two benches
 * 0.41..0.48 m high along its long sides, 0.28..0.41 m from it. */
static void hall_table(op__lg_rng *r, int32_t ox, int32_t oz, op__lg_piece *p, int *n, int max)
{
    int32_t x0 = ox + at(r, 930, 1000), z0 = oz + at(r, 220, 260);
    int32_t x1 = end_of(x0, op__lg_range(r, M(180), M(240)));
    int32_t z1 = end_of(z0, op__lg_range(r, M(100), M(130)));
    int32_t lo = op__lg_range(r, M(70), M(102)), tilt = op__lg_range(r, 3, 14);
    op__lg_piece *t = push(p, n, max, OP__LG_TABLE, x0, z0, x1, z1, lo, lo + tilt);
    if (t) /* bit 0: tilt along z (else x); bit 1: rising towards the low end */
        t->shape = (int32_t)(op__lg_next(r) & 3);
    for (int side = 0; side < 2; side++) {
        int32_t gap = op__lg_range(r, M(28), M(41)), depth = op__lg_range(r, M(34), M(45));
        int32_t bx0 = off_line(x0 + op__lg_range(r, 0, M(10)));
        int32_t bx1 = off_line(x1 - op__lg_range(r, 0, M(10)));
        int32_t h = op__lg_range(r, M(41), M(48));
        if (side == 0)
            push(p, n, max, OP__LG_BENCH, bx0, off_line(z0 - gap - depth), bx1, off_line(z0 - gap),
                 0, h);
        else
            push(p, n, max, OP__LG_BENCH, bx0, end_of(z1, gap), bx1, end_of(z1, gap + depth), 0, h);
    }
}

/* Platform zone (z 7..15.3 m of the cell): flight 1 along +z (7 steps), a square landing,
 * flight 2 along +x (7 steps) up to platform 1; a bridge 2.0..2.08 m wide (7 or 8 cells of
 * 0.3 m: one or two walkable after the ledge filter and a 2-cell erosion) from platform 1 to
 * platform 2. A wall between the hall and this zone leaves the stair's foot open and has a
 * 1.84..2.05 m doorway onto the ground under the bridge. */
static void platforms(op__lg_rng *r, int32_t ox, int32_t oz, op__lg_piece *p, int *n, int max)
{
    int32_t rise = op__lg_range(r, 10, 12), tread = op__lg_range(r, 17, 19);
    int32_t width = op__lg_range(r, M(260), M(290));
    int32_t sx0 = ox + at(r, 70, 90), sx1 = end_of(sx0, width);
    int32_t z = oz + at(r, 700, 720);
    int32_t wall_z0 = off_line(z - op__lg_range(r, M(30), M(45)));
    int32_t wall_z1 = off_line(wall_z0 - op__lg_range(r, M(16), M(22)));
    for (int k = 1; k <= 7; k++, z = off_line(z + tread))
        push(p, n, max, OP__LG_STEP, sx0, z, sx1, off_line(z + tread), 0, k * rise);
    int32_t lz0 = z, lz1 = end_of(z, width);
    push(p, n, max, OP__LG_LANDING, sx0, lz0, sx1, lz1, 0, 8 * rise);
    int32_t x = sx1;
    for (int k = 9; k <= 15; k++, x = off_line(x + tread))
        push(p, n, max, OP__LG_STEP, x, lz0, off_line(x + tread), lz1, 0, k * rise);
    int32_t h = 16 * rise, top = oz + at(r, 1520, 1530);
    int32_t p1x1 = end_of(x, op__lg_range(r, M(290), M(320)));
    int32_t p2x0 = end_of(p1x1, op__lg_range(r, M(260), M(300)));
    int32_t p2x1 = ox + at(r, 1520, 1530);
    push(p, n, max, OP__LG_PLATFORM, x, wall_z0 + Q / 2, p1x1, top, h - M(20), h);
    push(p, n, max, OP__LG_PLATFORM, p2x0, wall_z0 + Q / 2, p2x1, top, h - M(20), h);
    int32_t bz0 = oz + at(r, 1000, 1200), bz1 = end_of(bz0, op__lg_range(r, M(200), M(208)));
    /* Ends 0.1 m inside both platforms; 0.2 m thick, so the ground under it keeps > 2 m. */
    push(p, n, max, OP__LG_BRIDGE, off_line(p1x1 - M(10)), bz0, end_of(p2x0, M(10)), bz1, h - M(20),
         h);
    int32_t door0 = off_line(p1x1 + op__lg_range(r, 0, M(40)));
    int32_t door1 = end_of(door0, op__lg_range(r, M(184), M(205)));
    int32_t wall_h = op__lg_range(r, M(250), M(320));
    push(p, n, max, OP__LG_WALL, end_of(sx1, M(40)), wall_z1, door0, wall_z0, 0, wall_h);
    push(p, n, max, OP__LG_WALL, door1, wall_z1, ox + at(r, 1530, 1540), wall_z0, 0, wall_h);
}

int op__lg_furniture_layout(int size, uint64_t seed, op__lg_piece *pieces, int max)
{
    op__lg_rng r = {seed ^ 0x6675726e69747572ULL};
    int nc = size / 16, n = 0;
    for (int cz = 0; cz < nc; cz++)
        for (int cx = 0; cx < nc; cx++) {
            int32_t ox = cx * 16 * Q, oz = cz * 16 * Q;
            hall_pillars(&r, ox, oz, pieces, &n, max);
            hall_table(&r, ox, oz, pieces, &n, max);
            platforms(&r, ox, oz, pieces, &n, max);
        }
    return n;
}

void op__lg_table_top(const op__lg_piece *t, int32_t y[4])
{
    int along_z = t->shape & 1, flip = (t->shape >> 1) & 1;
    int32_t lo = flip ? t->yhi : t->ylo, hi = flip ? t->ylo : t->yhi;
    y[0] = lo;
    y[1] = along_z ? hi : lo;
    y[2] = hi;
    y[3] = along_z ? lo : hi;
}

/* Legs 0.06..0.11 m square (thinner than a cell), 4 units in from the corners, up to the
 * 3-unit slab of the top, whose sides follow its slope. */
static void emit_table(op__lg_builder *b, const op__lg_piece *t)
{
    int32_t y[4], slab = 3, leg = 4 + (t->x1 - t->x0 + t->z1 - t->z0) % 4, in = 4;
    op__lg_table_top(t, y);
    int32_t under = t->ylo - slab;
    op__lg_quad_up(b, t->x0, t->z0, t->x1, t->z1, y[0], y[1], y[2], y[3]);
    /* Clockwise seen from above, like op__lg_box's sides: each faces out of the slab. */
    op__lg_wall_sloped(b, t->x1, t->z0, t->x0, t->z0, under, y[3], y[0]);
    op__lg_wall_sloped(b, t->x1, t->z1, t->x1, t->z0, under, y[2], y[3]);
    op__lg_wall_sloped(b, t->x0, t->z1, t->x1, t->z1, under, y[1], y[2]);
    op__lg_wall_sloped(b, t->x0, t->z0, t->x0, t->z1, under, y[0], y[1]);
    int32_t lx[2] = {off_line(t->x0 + in), off_line(t->x1 - in - leg)};
    int32_t lz[2] = {off_line(t->z0 + in), off_line(t->z1 - in - leg)};
    for (int k = 0; k < 4; k++)
        op__lg_box(b, lx[k & 1], lz[k >> 1], end_of(lx[k & 1], leg), end_of(lz[k >> 1], leg), 0,
                   under);
}

/* A deck 0.2 m thick on four posts 0.3..0.41 m square, 0.1 m in from its corners: the ground
 * under it stays walkable (more than 2 m clear) and reachable between the posts. A solid box
 * that large would leave a walkable floor inside it that nothing reaches. */
static void emit_platform(op__lg_builder *b, const op__lg_piece *d)
{
    int32_t post = M(30) + (d->x1 - d->x0 + d->z1 - d->z0) % 8, in = M(10);
    int32_t px[2] = {off_line(d->x0 + in), off_line(d->x1 - in - post)};
    int32_t pz[2] = {off_line(d->z0 + in), off_line(d->z1 - in - post)};
    op__lg_box(b, d->x0, d->z0, d->x1, d->z1, d->ylo, d->yhi);
    for (int k = 0; k < 4; k++)
        op__lg_box(b, px[k & 1], pz[k >> 1], end_of(px[k & 1], post), end_of(pz[k >> 1], post), 0,
                   d->ylo);
}

op_status op__lg_furniture(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch,
                           op_err *err)
{
    int32_t n = size * Q, step = 4 * Q;
    int max = (size / 16) * (size / 16) * OP__LG_FURNITURE_CELL_PIECES;
    op__lg_piece *pieces = op_arena_alloc(scratch, (size_t)(max > 0 ? max : 1) * sizeof *pieces);
    if (!pieces)
        return op_err_set(err, OP_ENOMEM, "levelgen: out of memory for %d pieces (%zu bytes)", max,
                          (size_t)max * sizeof *pieces);
    for (int32_t z = 0; z < n; z += step) /* the ground, in 4 m quads like flat */
        for (int32_t x = 0; x < n; x += step)
            op__lg_floor(b, x, z, x + step < n ? x + step : n, z + step < n ? z + step : n, 0);
    int np = op__lg_furniture_layout(size, seed, pieces, max);
    for (int i = 0; i < np; i++) {
        const op__lg_piece *q = &pieces[i];
        if (q->kind == OP__LG_TABLE)
            emit_table(b, q);
        else if (q->kind == OP__LG_PLATFORM)
            emit_platform(b, q);
        else
            op__lg_box(b, q->x0, q->z0, q->x1, q->z1, q->ylo, q->yhi);
    }
    return OP_OK;
}
