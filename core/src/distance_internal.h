/* Distance fields inside the core: updating one after spans joined the boundary, which a
 * cached rebuild (tile_volumes.c) uses instead of recomputing the whole field. */
#ifndef ONEPATH_DISTANCE_INTERNAL_H
#define ONEPATH_DISTANCE_INTERNAL_H

#include "onepath/spans.h"

/* dist holds the exact distance field (build3d-spans.md §8) of chf's links for some set of
 * boundary spans (all OP__UNSET = 0xffffffff: the empty set). The spans seeds[0..nseeds)
 * join that set: afterwards every span whose distance to the union is below limit holds it
 * exactly, every other span some path length >= limit (or its old value). Distance to a
 * union is the minimum of the distances, so a Dijkstra from the seeds that only lowers
 * values reaches exactly the spans that change. Seeds are distinct. Scratch: the bucket ring
 * (about 8 bytes a span), released before returning. */
op_status op__distance_add_boundary(const op_chf *chf, uint32_t *dist, uint32_t *seeds,
                                    uint32_t nseeds, uint32_t limit, op_arena *scratch,
                                    op_err *err);

#endif
