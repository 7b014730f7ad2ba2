/*
 * Test-only helpers for the contour tests: a region labeller independent of the
 * regions stage, region ids assigned by hand, and independent measures of fields,
 * loops and contours.
 */
#ifndef TEST_CONTOURS_SUPPORT_H
#define TEST_CONTOURS_SUPPORT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/contours.h"
#include "op_fields.h"

/* Cell (x, z) of every span. */
static inline void span_cells(const op_chf *chf, int *sx, int *sz)
{
    for (int z = 0; z < chf->depth; z++)
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
                sx[s] = x;
                sz[s] = z;
            }
        }
}

/* A jagged block id, so that same-area regions meet along staircases. */
static inline int block_of(int x, int z, int bw, int bd)
{
    if (bw <= 0)
        return 0;
    return ((x + z / 2) / bw) * 4096 + (z + x / 3) / bd;
}

/* Connected components of linked walkable spans with the same area (and the same
 * block when bw > 0), ids in order of first span. */
static inline op_regions *label_regions(op_arena *a, const op_chf *chf, int bw, int bd)
{
    uint32_t n = chf->span_count;
    op_regions *r = op_arena_calloc(a, 1, sizeof *r);
    r->span_count = n;
    r->reg = op_arena_calloc(a, n + 1, sizeof *r->reg);
    int *sx = malloc((n + 1) * sizeof *sx), *sz = malloc((n + 1) * sizeof *sz);
    uint32_t *queue = malloc((n + 1) * sizeof *queue);
    span_cells(chf, sx, sz);
    int next = 0;
    uint8_t areas[65536];
    for (uint32_t s = 0; s < n; s++) {
        if (chf->areas[s] == 0 || r->reg[s] != 0)
            continue;
        next++;
        areas[next] = chf->areas[s];
        r->reg[s] = (uint16_t)next;
        uint32_t head = 0, tail = 0;
        queue[tail++] = s;
        while (head < tail) {
            uint32_t t = queue[head++];
            for (int d = 0; d < 4; d++) {
                uint32_t u = chf->links[t][d];
                if (u == OP_NO_LINK || r->reg[u] != 0 || chf->areas[u] != chf->areas[s] ||
                    block_of(sx[u], sz[u], bw, bd) != block_of(sx[s], sz[s], bw, bd))
                    continue;
                r->reg[u] = (uint16_t)next;
                queue[tail++] = u;
            }
        }
    }
    r->region_count = next;
    r->region_area = op_arena_calloc(a, (size_t)next + 1, 1);
    memcpy(r->region_area + 1, areas + 1, (size_t)next);
    free(sx);
    free(sz);
    free(queue);
    return r;
}

/* Regions given per span (0 = none); the area of a region is its first span's. */
static inline op_regions *regions_from_ids(op_arena *a, const op_chf *chf, const int *ids)
{
    op_regions *r = op_arena_calloc(a, 1, sizeof *r);
    r->span_count = chf->span_count;
    r->reg = op_arena_calloc(a, chf->span_count + 1, sizeof *r->reg);
    int most = 0;
    for (uint32_t s = 0; s < chf->span_count; s++) {
        r->reg[s] = (uint16_t)ids[s];
        most = ids[s] > most ? ids[s] : most;
    }
    r->region_count = most;
    r->region_area = op_arena_calloc(a, (size_t)most + 1, 1);
    for (uint32_t s = chf->span_count; s-- > 0;)
        if (ids[s] > 0)
            r->region_area[ids[s]] = chf->areas[s];
    return r;
}

static inline int64_t area2(const op_contour_vert *v, int n)
{
    int64_t a = 0;
    for (int i = 0; i < n; i++) {
        const op_contour_vert *p = &v[i], *q = &v[(i + 1) % n];
        a += (int64_t)p->x * q->z - (int64_t)q->x * p->z;
    }
    return a;
}

/* Squared distance from p to segment a b, in double. */
static inline double dist2_seg(const op_contour_vert *a, const op_contour_vert *b,
                               const op_contour_vert *p)
{
    double dx = b->x - a->x, dz = b->z - a->z, px = p->x - a->x, pz = p->z - a->z;
    double len = dx * dx + dz * dz;
    double t = len > 0 ? (px * dx + pz * dz) / len : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double ex = px - t * dx, ez = pz - t * dz;
    return ex * ex + ez * ez;
}

#endif
