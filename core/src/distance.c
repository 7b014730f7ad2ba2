/*
 * Span stage, distance field (docs/spec/build3d-spans.md §8): op_chf with mutual links
 * and areas → per span, the exact shortest-path distance to the nearest boundary span
 * (orthogonal step 2, diagonal step 3, no cap), as uint32.
 *
 * Method: Dijkstra from all boundary spans at once with a bucket queue. Step weights are
 * 2 and 3, so while level L is settled only levels L+2 and L+3 receive spans: a ring of
 * four buckets suffices. Each level is relaxed in two phases, all orthogonal steps
 * first, then all diagonal ones; then no span's tentative distance is ever lowered
 * after it was queued (a value L+3 could only be beaten by L+2, which only an
 * orthogonal step from level L gives), so every span is queued at most once and a
 * bucket is a singly linked list threaded through one next[] array. O(spans) time,
 * 4 bytes a span of scratch. Typical size: 10^3..10^6 spans a tile.
 *
 * Bound: a component of linked spans always holds a boundary span (its span of least x
 * lacks a -x neighbour in the component), and orthogonal steps alone reach it, so a
 * distance is at most 2 * (span_count - 1) <= 2 * (OP_MAX_SPANS - 1) < 2^32 - 3:
 * tentative values (settled + 3) never wrap.
 */
#include <string.h>

#include "onepath/limits.h"
#include "onepath/spans.h"

#define OP__UNSET 0xffffffffu

_Static_assert(2ull * (OP_MAX_SPANS - 1) + 3 < 0xffffffffull,
               "distances and tentative distances fit in uint32 below the unset marker");

typedef struct bucket_ring {
    uint32_t head[4], tail[4];
    uint32_t *next; /* span_count entries: list successor */
    uint64_t queued;
} bucket_ring;

static int is_boundary(const op_chf *chf, uint32_t s)
{
    if (chf->areas[s] == OP_NULL_AREA)
        return 1;
    for (int d = 0; d < 4; d++) {
        uint32_t n = chf->links[s][d];
        if (n == OP_NO_LINK || chf->areas[n] == OP_NULL_AREA)
            return 1;
    }
    return 0;
}

static void push(bucket_ring *q, uint32_t level, uint32_t s)
{
    int b = (int)(level & 3);
    q->next[s] = OP__UNSET;
    if (q->head[b] == OP__UNSET)
        q->head[b] = s;
    else
        q->next[q->tail[b]] = s;
    q->tail[b] = s;
    q->queued++;
}

static void relax(bucket_ring *q, uint32_t *dist, uint32_t s, uint32_t v)
{
    if (s != OP_NO_LINK && dist[s] > v) {
        dist[s] = v;
        push(q, v, s);
    }
}

static void relax_orthogonal(const op_chf *chf, bucket_ring *q, uint32_t *dist, uint32_t s,
                             uint32_t v)
{
    for (int d = 0; d < 4; d++)
        relax(q, dist, chf->links[s][d], v);
}

/* A diagonal is a link in d then a link in d+1 or d-1 from there (both ways round). */
static void relax_diagonal(const op_chf *chf, bucket_ring *q, uint32_t *dist, uint32_t s,
                           uint32_t v)
{
    for (int d = 0; d < 4; d++) {
        uint32_t m = chf->links[s][d];
        if (m == OP_NO_LINK)
            continue;
        relax(q, dist, chf->links[m][(d + 1) & 3], v);
        relax(q, dist, chf->links[m][(d + 3) & 3], v);
    }
}

/* Level 0: the boundary spans, found by a scan rather than queued. */
static void settle_boundary(const op_chf *chf, bucket_ring *q, uint32_t *dist)
{
    uint32_t n = chf->span_count;
    for (uint32_t s = 0; s < n; s++)
        dist[s] = is_boundary(chf, s) ? 0 : OP__UNSET;
    for (uint32_t s = 0; s < n; s++)
        if (dist[s] == 0)
            relax_orthogonal(chf, q, dist, s, 2);
    for (uint32_t s = 0; s < n; s++)
        if (dist[s] == 0)
            relax_diagonal(chf, q, dist, s, 3);
}

static void settle_levels(const op_chf *chf, bucket_ring *q, uint32_t *dist)
{
    for (uint32_t level = 1; q->queued > 0; level++) {
        int b = (int)(level & 3);
        uint32_t first = q->head[b];
        q->head[b] = q->tail[b] = OP__UNSET;
        for (uint32_t s = first; s != OP__UNSET; s = q->next[s]) {
            relax_orthogonal(chf, q, dist, s, level + 2);
            q->queued--;
        }
        for (uint32_t s = first; s != OP__UNSET; s = q->next[s])
            relax_diagonal(chf, q, dist, s, level + 3);
    }
}

op_status op_distance_compute(const op_chf *chf, uint32_t *dist, op_arena *scratch, op_err *err)
{
    op_arena_mark mark = op_arena_get_mark(scratch);
    bucket_ring q;
    q.next = op_arena_alloc(scratch, (size_t)chf->span_count * sizeof *q.next);
    if (!q.next)
        return op_err_set(err, OP_ENOMEM, "spans: distance: out of memory for %zu bytes of scratch",
                          (size_t)chf->span_count * sizeof *q.next);
    for (int b = 0; b < 4; b++)
        q.head[b] = q.tail[b] = OP__UNSET;
    q.queued = 0;
    settle_boundary(chf, &q, dist);
    settle_levels(chf, &q, dist);
    op_arena_release(scratch, mark);
    return OP_OK;
}

op_status op_distance_build(op_chf *chf, op_arena *out, op_arena *scratch, op_err *err)
{
    size_t bytes = (size_t)chf->span_count * sizeof *chf->dist;
    op_arena_mark mark = op_arena_get_mark(out);
    uint32_t *dist = op_arena_alloc(out, bytes);
    chf->dist = NULL;
    if (!dist)
        return op_err_set(err, OP_ENOMEM, "spans: distance: out of memory for %zu bytes", bytes);
    op_status st = op_distance_compute(chf, dist, scratch, err);
    if (st != OP_OK) {
        op_arena_release(out, mark);
        return st;
    }
    chf->dist = dist;
    return OP_OK;
}
