/*
 * Hand-made and random compact heightfields for stage tests, built independently
 * of the span stage's compaction (so tests of later stages do not depend on it,
 * and the link rule is checked twice).
 *
 * Link rule (docs/spec/build3d-spans.md §5): span a in cell c links in direction d
 * to the lowest span b of the neighbour cell with
 *   min(ya + ha, yb + hb) - max(ya, yb) >= walkable_height and |yb - ya| <= walkable_climb;
 * the link is kept only when b links back to a (mutual); otherwise OP_NO_LINK.
 */
#ifndef OP_FIELDS_H
#define OP_FIELDS_H

#include "onepath/arena.h"
#include "onepath/spans.h"
#include "op_test.h"

typedef struct op_test_span {
    int y;    /* floor row */
    int h;    /* clearance rows */
    int area; /* 0 = not walkable */
} op_test_span;

/* Builds a field of width x depth cells; cell c = x + z * width holds counts[c] spans,
 * taken in order from spans (bottom up). dist is NULL. All memory from a. */
op_chf *op_test_field(op_arena *a, int width, int depth, const int *counts,
                      const op_test_span *spans, int walkable_height, int walkable_climb);

/* A single floor at row 0 from a text picture: one line per z (first line z = 0),
 * one char per x: '.' or ' ' = no span, '#' = walkable (63), '1'..'9' = that area,
 * '0' = an area-0 span. */
op_chf *op_test_field_from_text(op_arena *a, const char *const *lines, int depth);

/* Random field: each cell gets 0..max_floors spans at random heights; areas drawn
 * from 1..nareas with holes (no span) and area-0 spans mixed in. */
op_chf *op_test_field_random(op_arena *a, op_test_rng *rng, int width, int depth, int max_floors,
                             int nareas);

/* Brute-force distance field (Dijkstra over the 8-neighbourhood, weights 2 and 3,
 * diagonals through either orthogonal path), written to out (span_count entries).
 * The reference the exact distance field is tested against. */
void op_test_brute_distance(const op_chf *chf, uint32_t *out);

#endif
