/*
 * Span stage, distance field (docs/spec/build3d-spans.md §8): op_chf with mutual links
 * and areas → per span, the exact shortest-path distance to the nearest boundary span
 * (orthogonal step 2, diagonal step 3, no cap), as uint32.
 *
 * Method (only the result is normative):
 * 1. Boundary spans get 0, all others "unset".
 * 2. Sweeps, sequential in memory like Recast's chamfer passes: forward in span index
 *    order pulling from the neighbours of lower index (-x, -z, and the diagonals
 *    (-x,-z), (+x,-z) both ways round), backward pulling from the others, then a forward
 *    check that records every span it still lowers. Every value is the length of a real
 *    path, so it never drops below the true distance.
 * 3. Repair: Dijkstra from the recorded spans. When it ends every step s -> t satisfies
 *    dist[t] <= dist[s] + cost (see sweep()), which with 2. makes every value exact. On
 *    ordinary fields the check records nothing (none of the random test fields needed a
 *    repair); the repair is what keeps odd geometry exact, at worst one full Dijkstra.
 * The Dijkstra uses a bucket queue: weights are 2 and 3, so while level L is settled
 * only levels L+2 and L+3 receive spans and a ring of four buckets suffices. A span
 * first queued at L0+3 can later be lowered only to L0+2 (any later offer is at least
 * L+2 >= L0+2), so it is queued at most twice; the stale entry is skipped when its level
 * comes (dist[s] != level). O(spans) time (plus sorting the recorded spans); scratch
 * 4 bytes a span, and up to about 16 more when a repair runs. Typical: 10^3..10^6 spans a
 * tile. On the same fields this is about 1.5-2x faster than Recast's
 * rcBuildDistanceField (two chamfer passes and a box blur), which is also approximate.
 *
 * Bound: a component of linked spans always holds a boundary span (its span of least x
 * lacks a -x neighbour in the component), and orthogonal steps alone reach it, so a
 * distance is at most 2 * (span_count - 1) <= 2 * (OP_MAX_SPANS - 1) < 2^32 - 3:
 * tentative values (settled + 3) never wrap; sweeps add in 64 bits to unset values.
 */
#include <stdlib.h>
#include <string.h>

#include "onepath/limits.h"
#include "onepath/spans.h"
#include "distance_internal.h"

#define OP__UNSET 0xffffffffu

_Static_assert(2ull * (OP_MAX_SPANS - 1) + 3 < 0xffffffffull,
               "distances and tentative distances fit in uint32 below the unset marker");

/* Span indices queued at one level, in chunks of OP__CHUNK entries taken from a shared
 * pool: reading a bucket is a sequential scan. Before a span is settled, the buckets it
 * can feed get room for all its possible offers (OP__OFFERS), so an offer is written
 * without a branch: the entry is stored and the fill advances only when it improved
 * the distance. Which offers improve is data-dependent, and mispredicted branches were
 * the main cost. At most 2 * span_count entries are ever queued, so
 * 2 * span_count / (OP__CHUNK - OP__OFFERS) + 6 chunks always suffice (a chunk is closed
 * with fewer than OP__OFFERS free entries, and each of the four live buckets holds one
 * partly filled chunk). */
#define OP__CHUNK  512u
#define OP__OFFERS 12u /* offers of one settled span: 4 orthogonal, 8 diagonal */

typedef struct bucket {
    uint32_t first, last; /* chunk indices, OP__UNSET when empty */
    uint32_t fill;        /* entries used in the last chunk */
} bucket;

typedef struct bucket_ring {
    bucket b[4];
    uint32_t *store;      /* nchunks * OP__CHUNK span indices */
    uint32_t *chunk_next; /* per chunk: next chunk of its bucket, or of the free list */
    uint32_t *chunk_fill; /* per closed chunk: entries used */
    uint32_t free_chunk;
} bucket_ring;

static const bucket empty_bucket = {OP__UNSET, OP__UNSET, 0};

/* Room for OP__OFFERS entries in the last chunk of the bucket of level; returns where
 * the chunk's entries start. */
static uint32_t *reserve(bucket_ring *q, uint32_t level)
{
    bucket *b = &q->b[level & 3];
    if (b->last == OP__UNSET || b->fill + OP__OFFERS > OP__CHUNK) {
        uint32_t c = q->free_chunk;
        q->free_chunk = q->chunk_next[c];
        q->chunk_next[c] = OP__UNSET;
        if (b->last == OP__UNSET) {
            b->first = c;
        } else {
            q->chunk_fill[b->last] = b->fill;
            q->chunk_next[b->last] = c;
        }
        b->last = c;
        b->fill = 0;
    }
    return q->store + (size_t)b->last * OP__CHUNK;
}

/* dist[s] = min(dist[s], v), queueing s at v when that lowered it (chunk[*fill]); no
 * branch. Returns the new distance. */
static uint32_t offer(uint32_t *dist, uint32_t *chunk, uint32_t *fill, uint32_t s, uint32_t v)
{
    uint32_t old = dist[s];
    uint32_t better = old > v;
    uint32_t now = better ? v : old;
    dist[s] = now;
    chunk[*fill] = s;
    *fill += better;
    return now;
}

/* Settles span s at level L: orthogonal steps (L+2) and diagonal ones (L+3), a link in
 * d then a link in d+1 or d-1 from there (both ways round). After m's orthogonal step
 * dist[m] <= L+2; when dist[m] <= L+1, m's own orthogonal steps give every q at most
 * L+3, so the diagonals through m cannot improve anything and are skipped (about half
 * the diagonals on an open floor), without changing any final distance. */
static void settle_span(const op_chf *chf, bucket_ring *q, uint32_t *dist, uint32_t s,
                        uint32_t level)
{
    uint32_t *c2 = reserve(q, level + 2), *c3 = reserve(q, level + 3);
    bucket *b2 = &q->b[(level + 2) & 3], *b3 = &q->b[(level + 3) & 3];
    uint32_t f2 = b2->fill, f3 = b3->fill;
    const uint32_t *l = chf->links[s];
    for (int d = 0; d < 4; d++) {
        uint32_t m = l[d];
        if (m == OP_NO_LINK || offer(dist, c2, &f2, m, level + 2) < level + 2)
            continue;
        uint32_t q1 = chf->links[m][(d + 1) & 3], q2 = chf->links[m][(d + 3) & 3];
        if (q1 != OP_NO_LINK)
            offer(dist, c3, &f3, q1, level + 3);
        if (q2 != OP_NO_LINK)
            offer(dist, c3, &f3, q2, level + 3);
    }
    b2->fill = f2;
    b3->fill = f3;
}

static uint32_t chunk_len(const bucket_ring *q, const bucket *b, uint32_t c)
{
    return c == b->last ? b->fill : q->chunk_fill[c];
}

/* Settles the bucket of one level (skipping stale entries), then returns its chunks to
 * the pool. */
static void settle_level(const op_chf *chf, bucket_ring *q, uint32_t *dist, uint32_t level)
{
    bucket cur = q->b[level & 3];
    q->b[level & 3] = empty_bucket;
    if (cur.first == OP__UNSET)
        return;
    for (uint32_t c = cur.first; c != OP__UNSET; c = q->chunk_next[c]) {
        const uint32_t *e = q->store + (size_t)c * OP__CHUNK;
        uint32_t n = chunk_len(q, &cur, c);
        for (uint32_t i = 0; i < n; i++)
            if (dist[e[i]] == level)
                settle_span(chf, q, dist, e[i], level);
    }
    q->chunk_next[cur.last] = q->free_chunk;
    q->free_chunk = cur.first;
}

static int ring_empty(const bucket_ring *q)
{
    for (int b = 0; b < 4; b++)
        if (q->b[b].first != OP__UNSET && (q->b[b].first != q->b[b].last || q->b[b].fill > 0))
            return 0;
    return 1;
}

/* ---- boundary and sweeps ---- */

/* §8 rule 1: spans of area 0 or with a missing link get 0, and, as links are mutual, so
 * does every span an area-0 span links to (exactly the spans linking to an area-0 span).
 * Everything else starts at OP__UNSET. */
static void mark_boundary(const op_chf *chf, uint32_t *dist)
{
    uint32_t n = chf->span_count;
    memset(dist, 0xff, (size_t)n * sizeof *dist);
    for (uint32_t s = 0; s < n; s++) {
        const uint32_t *l = chf->links[s];
        if (chf->areas[s] == OP_NULL_AREA) {
            dist[s] = 0;
            for (int d = 0; d < 4; d++)
                if (l[d] != OP_NO_LINK)
                    dist[l[d]] = 0;
        } else if (l[0] == OP_NO_LINK || l[1] == OP_NO_LINK || l[2] == OP_NO_LINK ||
                   l[3] == OP_NO_LINK) {
            dist[s] = 0;
        }
    }
}

static inline uint32_t min_plus(uint32_t v, uint32_t d, uint32_t w)
{
    uint64_t c = (uint64_t)d + w;
    return c < v ? (uint32_t)c : v;
}

/* v lowered by the steps of one quadrant: the orthogonal step in d1 and the diagonal
 * (d1, d2) both ways round. Steps are symmetric, so pulling from a neighbour is the same
 * as the neighbour's step to s. */
static inline uint32_t pull_quadrant(const op_chf *chf, const uint32_t *dist, uint32_t s, int d1,
                                     int d2, uint32_t v)
{
    const uint32_t *l = chf->links[s];
    if (l[d1] != OP_NO_LINK) {
        v = min_plus(v, dist[l[d1]], 2);
        uint32_t t = chf->links[l[d1]][d2];
        if (t != OP_NO_LINK)
            v = min_plus(v, dist[t], 3);
    }
    if (l[d2] != OP_NO_LINK) {
        uint32_t t = chf->links[l[d2]][d1];
        if (t != OP_NO_LINK)
            v = min_plus(v, dist[t], 3);
    }
    return v;
}

/* The neighbours of lower span index are those at -x, -z, (-x,-z) and (+x,-z) (cells are
 * z-major); a forward sweep pulls from them, a backward sweep from the others. */
static inline uint32_t pull_earlier(const op_chf *chf, const uint32_t *dist, uint32_t s, uint32_t v)
{
    return pull_quadrant(chf, dist, s, 3, 2, pull_quadrant(chf, dist, s, 0, 3, v));
}

static inline uint32_t pull_later(const op_chf *chf, const uint32_t *dist, uint32_t s, uint32_t v)
{
    return pull_quadrant(chf, dist, s, 1, 0, pull_quadrant(chf, dist, s, 2, 1, v));
}

/* Forward sweep (unless skipped), backward sweep, then a forward check that records
 * every span it still lowers (in changed[], returning the count). After the backward
 * sweep each span satisfies dist <= neighbour + step for its later neighbours, after the
 * check for its earlier ones; a neighbour lowered since is recorded, and the repair
 * settles it. The forward sweep only makes the check find (almost always) nothing. */
static uint32_t sweep(const op_chf *chf, uint32_t *dist, uint32_t *changed, int forward)
{
    uint32_t n = chf->span_count, count = 0;
    for (uint32_t s = 0; forward && s < n; s++)
        if (dist[s] != 0)
            dist[s] = pull_earlier(chf, dist, s, dist[s]);
    for (uint32_t s = n; s-- > 0;)
        if (dist[s] != 0)
            dist[s] = pull_later(chf, dist, s, dist[s]);
    for (uint32_t s = 0; s < n; s++) {
        if (dist[s] == 0)
            continue;
        uint32_t v = pull_earlier(chf, dist, s, dist[s]);
        if (v < dist[s]) {
            dist[s] = v;
            changed[count++] = s;
        }
    }
    return count;
}

/* ---- repair: Dijkstra from a set of spans ---- */

static int key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Orders seeds by distance (then span index: keys are unique, so qsort's order is
 * fully determined). keys: scratch for n entries. */
static void sort_seeds(uint32_t *seeds, uint32_t n, const uint32_t *dist, uint64_t *keys)
{
    for (uint32_t i = 0; i < n; i++)
        keys[i] = (uint64_t)dist[seeds[i]] << 32 | seeds[i];
    qsort(keys, n, sizeof *keys, key_cmp);
    for (uint32_t i = 0; i < n; i++)
        seeds[i] = (uint32_t)keys[i];
}

/* Dijkstra from the seeds (sorted by distance) with the bucket ring: seeds join at their
 * level, settled spans queue their offers at L+2 and L+3. When nothing is queued the
 * level jumps to the next seed. Stale entries (distance lowered since) are skipped.
 * Levels from limit - 2 on are not settled (their offers are >= limit): distances
 * below limit are exact, the others are path lengths (or unset) >= limit. Levels stay
 * below 2^32 - 3 (see the bound above), so level + 2 does not wrap. */
static void repair(const op_chf *chf, bucket_ring *q, uint32_t *dist, const uint32_t *seeds,
                   uint32_t nseeds, uint32_t limit)
{
    uint32_t next = 0;
    for (uint32_t level = nseeds ? dist[seeds[0]] : 0; level + 2 < limit; level++) {
        if (ring_empty(q)) {
            while (next < nseeds && dist[seeds[next]] < level) /* lowered and settled */
                next++;
            if (next == nseeds)
                break;
            if (dist[seeds[next]] > level)
                level = dist[seeds[next]];
        }
        for (; next < nseeds && dist[seeds[next]] <= level; next++)
            if (dist[seeds[next]] == level)
                settle_span(chf, q, dist, seeds[next], level);
        settle_level(chf, q, dist, level);
    }
}

static op_status ring_init(bucket_ring *q, uint32_t n, op_arena *scratch, op_err *err)
{
    uint32_t nchunks = (uint32_t)(2 * (uint64_t)n / (OP__CHUNK - OP__OFFERS)) + 6;
    size_t bytes = (size_t)nchunks * (OP__CHUNK + 2) * sizeof(uint32_t);
    q->store = op_arena_alloc(scratch, (size_t)nchunks * OP__CHUNK * sizeof *q->store);
    q->chunk_next = q->store ? op_arena_alloc(scratch, nchunks * sizeof *q->chunk_next) : NULL;
    q->chunk_fill = q->chunk_next ? op_arena_alloc(scratch, nchunks * sizeof *q->chunk_fill) : NULL;
    if (!q->chunk_fill)
        return op_err_set(err, OP_ENOMEM, "spans: distance: out of memory for %zu bytes of scratch",
                          bytes);
    for (uint32_t c = 0; c < nchunks; c++)
        q->chunk_next[c] = c + 1 < nchunks ? c + 1 : OP__UNSET;
    q->free_chunk = 0;
    for (int b = 0; b < 4; b++)
        q->b[b] = empty_bucket;
    return OP_OK;
}

/* Seeds for the plain method: every boundary span, at level 0, in span index order. */
static uint32_t boundary_seeds(const uint32_t *dist, uint32_t n, uint32_t *seeds)
{
    uint32_t k = 0;
    for (uint32_t s = 0; s < n; s++)
        if (dist[s] == 0)
            seeds[k++] = s;
    return k;
}

op_status op_distance_compute_method(const op_chf *chf, uint32_t *dist, op_distance_method method,
                                     op_arena *scratch, op_err *err)
{
    uint32_t n = chf->span_count;
    op_arena_mark mark = op_arena_get_mark(scratch);
    size_t bytes = (size_t)n * sizeof(uint32_t);
    uint32_t *seeds = op_arena_alloc(scratch, bytes);
    if (!seeds)
        return op_err_set(err, OP_ENOMEM, "spans: distance: out of memory for %zu bytes of scratch",
                          bytes);
    mark_boundary(chf, dist);
    uint32_t nseeds;
    if (method == OP_DISTANCE_DIJKSTRA) {
        nseeds = boundary_seeds(dist, n, seeds);
    } else {
        nseeds = sweep(chf, dist, seeds, method == OP_DISTANCE_SWEEPS);
        if (nseeds > 0) {
            uint64_t *keys = op_arena_alloc(scratch, (size_t)nseeds * sizeof *keys);
            if (!keys) {
                op_arena_release(scratch, mark);
                return op_err_set(err, OP_ENOMEM,
                                  "spans: distance: out of memory for %zu bytes of scratch",
                                  (size_t)nseeds * sizeof *keys);
            }
            sort_seeds(seeds, nseeds, dist, keys);
        }
    }
    op_status st = OP_OK;
    if (nseeds > 0) {
        bucket_ring q;
        st = ring_init(&q, n, scratch, err);
        if (st == OP_OK)
            repair(chf, &q, dist, seeds, nseeds, OP__UNSET);
    }
    op_arena_release(scratch, mark);
    return st;
}

op_status op_distance_compute_below(const op_chf *chf, uint32_t *dist, uint32_t limit,
                                    op_arena *scratch, op_err *err)
{
    uint32_t n = chf->span_count;
    op_arena_mark mark = op_arena_get_mark(scratch);
    size_t bytes = (size_t)n * sizeof(uint32_t);
    uint32_t *seeds = op_arena_alloc(scratch, bytes);
    if (!seeds)
        return op_err_set(err, OP_ENOMEM, "spans: distance: out of memory for %zu bytes of scratch",
                          bytes);
    mark_boundary(chf, dist);
    uint32_t nseeds = boundary_seeds(dist, n, seeds);
    op_status st = OP_OK;
    if (nseeds > 0 && limit > 0) {
        bucket_ring q;
        st = ring_init(&q, n, scratch, err);
        if (st == OP_OK)
            repair(chf, &q, dist, seeds, nseeds, limit);
    }
    op_arena_release(scratch, mark);
    return st;
}

op_status op_distance_compute(const op_chf *chf, uint32_t *dist, op_arena *scratch, op_err *err)
{
    return op_distance_compute_method(chf, dist, OP_DISTANCE_SWEEPS, scratch, err);
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

/* ---- updates: spans joining the boundary ---- */

op_status op__distance_add_boundary(const op_chf *chf, uint32_t *dist, uint32_t *seeds,
                                    uint32_t nseeds, uint32_t limit, op_arena *scratch, op_err *err)
{
    if (nseeds == 0)
        return OP_OK;
    for (uint32_t i = 0; i < nseeds; i++)
        dist[seeds[i]] = 0;
    op_arena_mark mark = op_arena_get_mark(scratch);
    bucket_ring q;
    op_status st = ring_init(&q, chf->span_count, scratch, err);
    /* All seeds are at level 0, so they are already in order. The settle rule's skipped
     * diagonals stay valid: a span not lowered here keeps a distance of the exact field
     * it started from, which bounds its diagonal neighbours the same way. */
    if (st == OP_OK)
        repair(chf, &q, dist, seeds, nseeds, limit);
    op_arena_release(scratch, mark);
    return st;
}
