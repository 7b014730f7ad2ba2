/*
 * Internals of the level generator (levelgen.c, levelgen_structures.c): the
 * two-pass mesh builder, the PRNG and the shape helpers. Not part of the API.
 *
 * Coordinates are integers in 1/64 m (OP__LG_Q per metre); a level of size N spans
 * [0, 64 N] in x and z. Floats are made by one exact division (|value| < 2^24).
 */
#ifndef OP_LEVELGEN_INTERNAL_H
#define OP_LEVELGEN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "onepath/arena.h"
#include "onepath/status.h"

#define OP__LG_Q 64 /* coordinate units per metre */

/* Counting pass (verts == NULL): only nv / nt advance. Filling pass: arrays sized by
 * the counting pass of the same generator, so writes stay in bounds. */
typedef struct op__lg_builder {
    size_t nv, nt;
    float *verts;
    int *tris;
} op__lg_builder;

typedef struct op__lg_rng {
    uint64_t s;
} op__lg_rng;

uint64_t op__lg_next(op__lg_rng *r);
/* Uniform integer in [lo, hi] (hi >= lo). */
int32_t op__lg_range(op__lg_rng *r, int32_t lo, int32_t hi);
/* A stateless 64-bit mix (splitmix64 finaliser) for lattice noise. */
uint64_t op__lg_mix(uint64_t x);

int op__lg_vert(op__lg_builder *b, int32_t x, int32_t y, int32_t z);
void op__lg_tri(op__lg_builder *b, int a, int c, int d);
/* Up-facing quad over [x0, x1] x [z0, z1] with heights at (x0,z0), (x0,z1), (x1,z1), (x1,z0). */
void op__lg_quad_up(op__lg_builder *b, int32_t x0, int32_t z0, int32_t x1, int32_t z1, int32_t y00,
                    int32_t y01, int32_t y11, int32_t y10);
void op__lg_floor(op__lg_builder *b, int32_t x0, int32_t z0, int32_t x1, int32_t z1, int32_t y);
/* Vertical quad from (xa, za) to (xb, zb), heights y0..y1. Its normal (v1 - v0) x (v2 - v0),
 * the convention that makes floors face up, points to the left of a -> b seen from above
 * (x right, z up): walking +x it faces +z. That is the side it is seen from; the solid it
 * bounds lies on the right (build3d-spans.md §3.2a gives a wall on a cell line to that side). */
void op__lg_wall(op__lg_builder *b, int32_t xa, int32_t za, int32_t xb, int32_t zb, int32_t y0,
                 int32_t y1);
/* The same from y0 up to ya at a and yb at b (the side of a sloped slab). */
void op__lg_wall_sloped(op__lg_builder *b, int32_t xa, int32_t za, int32_t xb, int32_t zb,
                        int32_t y0, int32_t ya, int32_t yb);
/* Box without a bottom: top face (up) and four sides. */
void op__lg_box(op__lg_builder *b, int32_t x0, int32_t z0, int32_t x1, int32_t z1, int32_t y0,
                int32_t y1);

/* One kind: emits its geometry into b; scratch is for temporary arrays. */
typedef op_status (*op__lg_kind_fn)(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch,
                                    op_err *err);

op_status op__lg_stairs(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch, op_err *err);
op_status op__lg_rooms(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch, op_err *err);
op_status op__lg_multifloor(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch,
                            op_err *err);
op_status op__lg_ramp(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch, op_err *err);
op_status op__lg_furniture(op__lg_builder *b, int size, uint64_t seed, op_arena *scratch,
                           op_err *err);

/* The furniture kind's layout (levelgen_furniture.c): boxes in 1/64 m, ylo..yhi their
 * vertical extent (a table: its top's lowest and highest corner; a bridge or a platform: its
 * slab, the platform's posts reaching down from it to the ground). */
enum {
    OP__LG_PILLAR,
    OP__LG_TABLE,
    OP__LG_BENCH,
    OP__LG_STEP,
    OP__LG_LANDING,
    OP__LG_PLATFORM,
    OP__LG_BRIDGE,
    OP__LG_WALL,
    OP__LG_PIECE_KINDS
};
#define OP__LG_FURNITURE_CELL_PIECES 32 /* pieces of one 16 m cell (29 today) */

typedef struct op__lg_piece {
    int kind;
    int32_t x0, z0, x1, z1;
    int32_t ylo, yhi;
    int32_t shape; /* tables: bit 0 tilt along z (else x), bit 1 the high side first */
} op__lg_piece;

/* Writes the pieces of every 16 m cell (row-major cells) to pieces[0..max); returns the
 * count (at most max). The same (size, seed) gives the same layout: the generator emits it. */
int op__lg_furniture_layout(int size, uint64_t seed, op__lg_piece *pieces, int max);
/* Top heights of a table at its corners (x0,z0), (x0,z1), (x1,z1), (x1,z0). */
void op__lg_table_top(const op__lg_piece *t, int32_t y[4]);

#endif
