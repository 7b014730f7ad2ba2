/*
 * Span stage, erosion (docs/spec/build3d-spans.md §7): op_chf right after compaction →
 * the same op_chf with every walkable span closer than the agent radius to a boundary
 * made unwalkable (area 0), so that the mesh keeps the agent's centre off walls.
 *
 * The distance is the exact one of §8 (not Recast's two-pass chamfer, which can
 * overestimate behind obstacles), computed into scratch (4 + 4 bytes a span and the
 * bucket queue, released before returning) only as far as the threshold: a Dijkstra
 * from the boundary stopped at level 2 * radius, which touches only the spans near a
 * boundary. Every span's fate is decided from the distance field before any
 * area changes, so the result does not depend on visiting order.
 */
#include "onepath/limits.h"
#include "onepath/spans.h"

op_status op_erode(op_chf *chf, int radius, op_arena *scratch, op_err *err)
{
    if (radius < 0)
        return op_err_set(err, OP_ERANGE, "spans: erosion: radius = %d is negative", radius);
    if (radius == 0 || chf->span_count == 0)
        return OP_OK;
    op_arena_mark mark = op_arena_get_mark(scratch);
    size_t bytes = (size_t)chf->span_count * sizeof(uint32_t);
    uint32_t *dist = op_arena_alloc(scratch, bytes);
    if (!dist)
        return op_err_set(err, OP_ENOMEM, "spans: erosion: out of memory for %zu bytes of scratch",
                          bytes);
    /* 2 * radius in 64 bits: any int radius is accepted and cannot overflow; it is at
     * most 2^32 - 2, so it fits the bounded distance's uint32 limit. Only distances
     * below the threshold matter, and those are exact. */
    uint64_t threshold = 2u * (uint64_t)radius;
    op_status st = op_distance_compute_below(chf, dist, (uint32_t)threshold, scratch, err);
    if (st != OP_OK) {
        op_arena_release(scratch, mark);
        return st;
    }
    int changed = 0;
    for (uint32_t s = 0; s < chf->span_count; s++)
        if (chf->areas[s] != OP_NULL_AREA && dist[s] < threshold) {
            chf->areas[s] = OP_NULL_AREA;
            changed = 1;
        }
    if (changed)
        chf->dist = NULL; /* areas changed: a distance field built before is stale */
    op_arena_release(scratch, mark);
    return OP_OK;
}
