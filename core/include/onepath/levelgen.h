/*
 * Deterministic level generator: test and benchmark levels of any size from a kind,
 * a size and a seed. The same (kind, size, seed) gives the same soup bytes on every
 * machine and compiler: the generator uses only integer arithmetic (its own
 * splitmix64 PRNG and integer value noise) and every coordinate is a multiple of
 * 1/64 m, stored exactly as a float. No libm call is involved.
 *
 * A level of size N spans [0, N] metres in x and z (y is up). Kinds:
 *   flat       one floor at y = 0 (4 m quads).
 *   terrain    hills and valleys: integer value noise on a grid (0.5 m, 1 m above
 *              512 m), heights 0..~20 m, mostly walkable slopes with some cliffs.
 *   stairs     a floor with lanes of stair flights (risers 0.15..0.30 m) going up
 *              and down with landings between them.
 *   rooms      a dungeon: rooms on a grid of 16 m cells, corridors between
 *              neighbouring rooms, floors plus 3 m wall quads with doorway gaps.
 *   multifloor per 16 m cell: ground floor, two decks 3.5..5 m up over it joined by
 *              a bridge, a ramp up to one deck and a flight of stairs up to the other.
 *   ramp       per 32 m cell (one cell for smaller levels): a square parking-garage
 *              helix of 2..4 turns around a core, overlapping itself each turn, on a
 *              ground floor.
 *   pillars    a floor with a field of boxes (0.5..3 m wide, 0.5..6 m tall).
 *   furniture  per 16 m cell, furnished halls as RecastDemo's meshes have them: two rows
 *              of pillars 1.84..2.05 m apart, a table on thin legs with a top sloped 2..10
 *              degrees between two benches, a wall with a narrow doorway, a stair of two
 *              flights turning at a landing up to a deck on posts, and a 2.0..2.08 m
 *              bridge to a second deck. Every piece lies off the 0.1 m lines (so off any
 *              0.1, 0.2, 0.3 or 0.5 m cell line): one to two cells survive erosion in its
 *              gaps and on its bridges at the default settings, as the grid falls.
 * Walkable surfaces face up (their normal, (v1 - v0) x (v2 - v0), has y > 0).
 *
 * Refusals: an unknown kind → OP_EINVAL listing the kinds; size outside
 * [OP_LEVELGEN_MIN_SIZE, OP_LEVELGEN_MAX_SIZE] → OP_ERANGE; out exhausted → OP_ENOMEM.
 * Output: the soup's arrays come from out (exactly sized: every kind runs once to
 * count and once to fill); areas is NULL. Scratch (the rooms kind's tile map) comes
 * from a temporary arena freed before returning. On failure *soup is zeroed.
 * Typical sizes: 1024 m terrain is ~2.1M triangles (~38 MB), generated in about a second.
 */
#ifndef ONEPATH_LEVELGEN_H
#define ONEPATH_LEVELGEN_H

#include <stdint.h>

#include "onepath/arena.h"
#include "onepath/input.h"
#include "onepath/status.h"

#define OP_LEVELGEN_MIN_SIZE 16
#define OP_LEVELGEN_MAX_SIZE 1024

/* The kinds, comma separated, for messages and --help. */
#define OP_LEVELGEN_KINDS "flat, terrain, stairs, rooms, multifloor, ramp, pillars, furniture"

op_status op_levelgen(const char *kind, int size_m, uint64_t seed, op_arena *out, op_soup *soup,
                      op_err *err);

#endif
