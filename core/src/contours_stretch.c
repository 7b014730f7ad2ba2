/*
 * Reuse of simplified stretches (docs/spec/build3d-runtime.md §5.13): the record a capture
 * makes of the stretches its simplification refined, and the lookup a rebuild makes of a
 * stretch of a loop it traced again.
 *
 * A stretch is the run of a raw loop between two consecutive vertices kept by step 1 of
 * build3d-regions.md §6 (portals, band corners, or the two extreme vertices). Its
 * refinement (step 2) reads the (x, z) of its raw vertices, whether it is a wall (every
 * vertex of a stretch but its end has the neighbour value of its start), MaxError and
 * MaxEdgeLength, and nothing else; so a stretch of a rebuild with the same points, the same
 * wall flag and the same two settings keeps the same inner vertices as the recorded one.
 * An obstacle in a floor region changes its loop near the obstacle only: the stretches away
 * from it come out of the trace as they were.
 *
 * Layout: stretch i has first[i + 1] - first[i] points pts[2 * first[i] ..] (x, z pairs of uint16,
 * its start to its end, in loop order), and its inner points kept by the refinement are
 * kept[kfirst[i] .. kfirst[i + 1]) (offsets from its start, increasing); hash[i] is
 * stretch_hash of it; slot is an open addressing table of stretch indices + 1 (0 empty)
 * by hash, mask + 1 entries.
 */
#include <string.h>

#include "contours_internal.h"

static uint32_t mix(uint32_t h, uint32_t v)
{
    return (h ^ v) * 16777619u;
}

/* The key of stretch a -> b (b unwrapped) of loop v (n vertices): its length, wall flag and
 * two ends, so that a lookup that misses costs no walk over the points; a hit compares them
 * all. */
static uint32_t stretch_hash(const op_contour_vert *v, int n, int a, int b, int wall)
{
    const op_contour_vert *s = &v[a % n], *e = &v[b % n];
    uint32_t h = mix(mix(2166136261u, (uint32_t)(b - a)), (uint32_t)wall);
    h = mix(mix(h, (uint32_t)s->x), (uint32_t)s->z);
    h = mix(mix(h, (uint32_t)e->x), (uint32_t)e->z);
    return h ^ (h >> 16);
}

op_status op__stretch_rec_init(op__stretch_rec *r, size_t raw_verts, double e2, int64_t edge2,
                               op_arena *arena, op_err *err)
{
    /* A loop of m vertices has at most m stretches with m + (its stretches) points in all. */
    memset(r, 0, sizeof *r);
    r->e2 = e2;
    r->edge2 = edge2;
    r->cap = raw_verts;
    r->hash = op_arena_alloc(arena, (raw_verts + 1) * sizeof *r->hash);
    r->first = op_arena_alloc(arena, (raw_verts + 2) * sizeof *r->first);
    r->wall = op_arena_alloc(arena, raw_verts + 1);
    r->pts = op_arena_alloc(arena, (2 * raw_verts + 1) * 2 * sizeof *r->pts);
    r->kfirst = op_arena_alloc(arena, (raw_verts + 2) * sizeof *r->kfirst);
    r->kept = op_arena_alloc(arena, (raw_verts + 1) * sizeof *r->kept);
    if (!r->hash || !r->first || !r->wall || !r->pts || !r->kfirst || !r->kept)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (stretch record, %zu vertices)",
                          raw_verts);
    r->first[0] = r->kfirst[0] = 0;
    return OP_OK;
}

void op__stretch_rec_add(op__stretch_rec *r, const op_contour_vert *v, int n, int a, int b,
                         int wall, const uint8_t *keep)
{
    size_t at = r->first[r->count];
    if ((size_t)r->count >= r->cap || at + (size_t)(b - a + 1) > 2 * r->cap)
        return; /* cannot happen within the bounds of init; a missing record only costs time */
    size_t kat = r->kfirst[r->count];
    for (int k = a, i = a % n; k <= b; k++, i = i + 1 == n ? 0 : i + 1)
        if (v[i].x < 0 || v[i].x > UINT16_MAX || v[i].z < 0 || v[i].z > UINT16_MAX)
            return; /* not a cell corner of a grid below 65536 cells: not kept */
    for (int k = a, i = a % n; k <= b; k++, i = i + 1 == n ? 0 : i + 1, at++) {
        r->pts[2 * at] = (uint16_t)v[i].x;
        r->pts[2 * at + 1] = (uint16_t)v[i].z;
        if (k > a && k < b && keep[i])
            r->kept[kat++] = (uint32_t)(k - a);
    }
    r->hash[r->count] = stretch_hash(v, n, a, b, wall);
    r->wall[r->count] = (uint8_t)wall;
    r->count++;
    r->first[r->count] = (uint32_t)at;
    r->kfirst[r->count] = (uint32_t)kat;
}

static uint32_t slots_for(int count)
{
    uint32_t s = 16;
    while (s < 2u * (uint32_t)count)
        s *= 2;
    return s;
}

size_t op__stretch_bytes(const op__stretch_rec *r)
{
    if (!r->first)
        return sizeof(op__stretch_set) + 16; /* nothing recorded: an empty set */
    size_t pts = r->first[r->count], kept = r->kfirst[r->count];
    return sizeof(op__stretch_set) + (size_t)r->count * 13 + 8 + pts * 4 + kept * 4 +
           (size_t)slots_for(r->count) * 4 + 8 * 8;
}

/* Bump allocation in the block at *at, aligned to 8. */
static void *take(unsigned char **at, size_t n)
{
    unsigned char *p = (unsigned char *)(((uintptr_t)*at + 7) & ~(uintptr_t)7);
    *at = p + n;
    return p;
}

const op__stretch_set *op__stretch_pack(const op__stretch_rec *r, void *mem)
{
    unsigned char *at = mem;
    op__stretch_set *s = take(&at, sizeof *s);
    if (!r->first) { /* the contour stage never ran its simplification: nothing recorded */
        memset(s, 0, sizeof *s);
        return s;
    }
    size_t pts = r->first[r->count];
    uint32_t nslots = slots_for(r->count);
    uint32_t *hash = take(&at, (size_t)r->count * 4);
    uint32_t *first = take(&at, ((size_t)r->count + 1) * 4);
    int32_t *slot = take(&at, (size_t)nslots * 4);
    uint16_t *p = take(&at, pts * 4);
    size_t kept = r->kfirst[r->count];
    uint32_t *kfirst = take(&at, ((size_t)r->count + 1) * 4);
    uint32_t *kl = take(&at, kept * 4);
    uint8_t *wall = take(&at, (size_t)r->count);
    memcpy(hash, r->hash, (size_t)r->count * 4);
    memcpy(first, r->first, ((size_t)r->count + 1) * 4);
    memcpy(p, r->pts, pts * 4);
    memcpy(kfirst, r->kfirst, ((size_t)r->count + 1) * 4);
    memcpy(kl, r->kept, kept * 4);
    memcpy(wall, r->wall, (size_t)r->count);
    memset(slot, 0, (size_t)nslots * 4);
    for (int i = 0; i < r->count; i++) {
        uint32_t j = hash[i] & (nslots - 1);
        while (slot[j])
            j = (j + 1) & (nslots - 1);
        slot[j] = i + 1;
    }
    *s = (op__stretch_set){r->e2,  r->edge2, r->count, nslots - 1, hash, first,
                           kfirst, kl,       slot,     p,          wall};
    return s;
}

int op__stretch_find(const op__stretch_set *s, double e2, int64_t edge2, const op_contour_vert *v,
                     int n, int a, int b, int wall, uint8_t *keep)
{
    if (!s || s->count == 0 || s->e2 != e2 || s->edge2 != edge2)
        return 0;
    uint32_t h = stretch_hash(v, n, a, b, wall);
    for (uint32_t j = h & s->mask; s->slot[j]; j = (j + 1) & s->mask) {
        int i = s->slot[j] - 1;
        if (s->hash[i] != h || s->wall[i] != wall ||
            s->first[i + 1] - s->first[i] != (uint32_t)(b - a + 1))
            continue;
        const uint16_t *p = &s->pts[2 * (size_t)s->first[i]];
        int k = 0, len = b - a, a0 = a % n;
        if (a0 + len < n) { /* no wrap: one run of the loop */
            const op_contour_vert *q = &v[a0];
            while (k <= len && (int32_t)p[2 * k] == q[k].x && (int32_t)p[2 * k + 1] == q[k].z)
                k++;
        } else {
            for (int idx = a0; k <= len; k++, idx = idx + 1 == n ? 0 : idx + 1)
                if ((int32_t)p[2 * k] != v[idx].x || (int32_t)p[2 * k + 1] != v[idx].z)
                    break;
        }
        if (k <= len)
            continue;
        /* The same inputs: the recorded refinement's inner vertices (the ends are kept, the
         * other inner vertices were not kept by step 1 and stay so). */
        for (uint32_t j = s->kfirst[i]; j < s->kfirst[i + 1]; j++)
            keep[(a0 + (int)s->kept[j]) % n] = 1;
        return 1;
    }
    return 0;
}
