/*
 * Contours, step 1: tracing (build3d-regions.md §6 "Edges", "Tracing").
 *
 * Input: op_chf (mutual links) and op_regions. Output: every boundary loop of every
 * region, in trace order (loops start at the first unvisited boundary edge in span
 * index, then direction order), one raw vertex per boundary edge: its start corner,
 * the corner's height and the edge's neighbour value.
 *
 * Invariants: the walk is a permutation of the (span, dir) states of one region
 * (links are mutual), so every loop closes and every boundary edge is in exactly one
 * loop; the loops of a region have signed areas summing to twice its span count.
 * Typical size: a 48x48-cell tile has a few thousand boundary edges.
 */
#include <limits.h>
#include <string.h>
#if defined(__SSE2__) && !defined(OP_CONTOURS_SCALAR)
#include <emmintrin.h>
#endif

#include "contours_internal.h"

/* Start corner of the edge in direction d of cell (x, z), region on the left. */
static const int corner_dx[4] = {0, 1, 1, 0};
static const int corner_dz[4] = {1, 1, 0, 0};

/* What the trace sees: the whole field, or one layer of it (op_contour_settings'
 * layer view). */
typedef struct view {
    const op_chf *chf;
    const uint16_t *reg;
    const uint16_t *key; /* span layers, NULL: every span */
    uint16_t layer;
    int32_t border_region; /* a seam never leads into the band */
} view;

/* A span belongs to a layer view's layer when it has a region and that span layer
 * (build3d-runtime.md §2.3.1). */
static inline int visible(const view *v, uint32_t s)
{
    return v->reg[s] != 0 && (!v->key || v->key[s] == v->layer);
}

/* Whether the link from traced span s to span t stays in the view. */
static inline int in_view(const view *v, uint32_t s, uint32_t t)
{
    return !v->key || (v->reg[t] != 0 && v->key[t] == v->key[s]);
}

/* The link of traced span s in d, or OP_NO_LINK when it leaves the view. */
static inline uint32_t link_in(const view *v, uint32_t s, int d)
{
    uint32_t t = v->chf->links[s][d];
    return (t == OP_NO_LINK || in_view(v, s, t)) ? t : OP_NO_LINK;
}

/* Region of the neighbour in d; 0 for no link inside the grid; OP_TILE_BORDER outside.
 * In a layer view a link to another layer gives that span's region, a layer seam
 * (amendments.md R3), or 0 when it is the band's or none. */
static inline int32_t neighbour_value(const view *v, uint32_t s, int x, int z, int d)
{
    const op_chf *chf = v->chf;
    uint32_t t = chf->links[s][d];
    if (t != OP_NO_LINK) {
        if (!in_view(v, s, t)) /* a seam into a region of another layer, else none */
            return (v->key[t] == OP_NO_LAYER || v->reg[t] == v->border_region) ? 0 : v->reg[t];
        return v->reg[t];
    }
    int nx = x + op_dir_dx(d), nz = z + op_dir_dz(d);
    if (nx < 0 || nz < 0 || nx >= chf->width || nz >= chf->depth)
        return OP_TILE_BORDER;
    return 0;
}

/* Highest floor among s and the spans linked around the start corner of edge d: the
 * two edge neighbours and the diagonal one, reached through either of them. */
static inline int corner_y(const view *v, uint32_t s, int d)
{
    const op_chf *chf = v->chf;
    int d1 = (d + 1) & 3;
    int y = chf->y[s];
    uint32_t a = link_in(v, s, d), b = link_in(v, s, d1);
    if (a != OP_NO_LINK) {
        y = chf->y[a] > y ? chf->y[a] : y;
        uint32_t c = link_in(v, a, d1);
        if (c != OP_NO_LINK && chf->y[c] > y)
            y = chf->y[c];
    }
    if (b != OP_NO_LINK) {
        y = chf->y[b] > y ? chf->y[b] : y;
        uint32_t c = link_in(v, b, d);
        if (c != OP_NO_LINK && chf->y[c] > y)
            y = chf->y[c];
    }
    return y;
}

/* Boundary edges per 4-bit mask. */
static const uint8_t edge_count[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};

/* Bit d set: a span of region r != 0 with links l has no neighbour in r in direction d. */
static inline uint32_t boundary_bits_scalar(const uint32_t l[4], const uint16_t *reg, uint32_t r)
{
    uint32_t t0 = l[0], t1 = l[1], t2 = l[2], t3 = l[3];
    return (uint32_t)(t0 == OP_NO_LINK || reg[t0] != r) |
           (uint32_t)(t1 == OP_NO_LINK || reg[t1] != r) << 1 |
           (uint32_t)(t2 == OP_NO_LINK || reg[t2] != r) << 2 |
           (uint32_t)(t3 == OP_NO_LINK || reg[t3] != r) << 3;
}

/* The same bits. Most spans have all four links (no edge on a wall or the tile's side): one
 * compare of the four links against OP_NO_LINK finds them, and their four neighbour ids go
 * into one vector, compared with r at once and turned into the four bits by one mask
 * (about 18 instructions a span, against 25 to 30 for four tests and branches). A span
 * with a missing link takes the scalar test, which reads no region id through it. Integer
 * compares only: the bits are those of boundary_bits_scalar on every target.
 * OP_CONTOURS_SCALAR selects the scalar test everywhere (targets without SSE2 have it). */
#if defined(__SSE2__) && !defined(OP_CONTOURS_SCALAR)
static inline uint32_t boundary_bits(const uint32_t l[4], const uint16_t *reg, uint32_t r)
{
    __m128i lv = _mm_loadu_si128((const __m128i *)(const void *)l);
    if (_mm_movemask_epi8(_mm_cmpeq_epi32(lv, _mm_set1_epi32(-1))) != 0)
        return boundary_bits_scalar(l, reg, r);
    /* Words 0..3: the neighbours' ids, 4..7 zero (never r, which is not 0). */
    __m128i v = _mm_cvtsi32_si128(reg[l[0]]);
    v = _mm_insert_epi16(v, reg[l[1]], 1);
    v = _mm_insert_epi16(v, reg[l[2]], 2);
    v = _mm_insert_epi16(v, reg[l[3]], 3);
    __m128i eq = _mm_cmpeq_epi16(v, _mm_set1_epi16((short)r));
    return ~(uint32_t)_mm_movemask_epi8(_mm_packs_epi16(eq, eq)) & 0xfu;
}
#else
static inline uint32_t boundary_bits(const uint32_t l[4], const uint16_t *reg, uint32_t r)
{
    return boundary_bits_scalar(l, reg, r);
}
#endif

/* Marks span s of region r (its boundary bits, both as "to walk" and "not walked yet") and
 * returns its boundary edge count. */
static inline size_t mark_span(const uint32_t (*links)[4], const uint16_t *reg, uint32_t s,
                               uint32_t r, uint8_t *mask)
{
    uint32_t m = boundary_bits(links[s], reg, r);
    mask[s] = (uint8_t)(m | (m << 4));
    return edge_count[m];
}

/* mark_span, or no marks for a span without a region. */
static inline size_t mark_one(const uint32_t (*links)[4], const uint16_t *reg, uint32_t s,
                              uint8_t *mask)
{
    uint32_t r = reg[s];
    if (r == 0) {
        mask[s] = 0;
        return 0;
    }
    return mark_span(links, reg, s, r, mask);
}

/* mark_one, or no marks for a span of a copied region (its links unread). */
static inline size_t mark_unless(const uint32_t (*links)[4], const uint16_t *reg,
                                 const uint8_t *skip, uint32_t s, uint8_t *mask)
{
    uint32_t r = reg[s];
    /* Copied regions first: most spans are theirs, and their links are not read. */
    if (skip[r] || r == 0) {
        mask[s] = 0;
        return 0;
    }
    return mark_span(links, reg, s, r, mask);
}

/* Edges in the low nibbles of eight mark bytes (w: mark bytes of spans s .. s + 7, byte i
 * span s + i): the nibbles' bits summed by the usual halving sums, integers only. */
static inline size_t edges8(uint64_t w)
{
    uint64_t x = w & 0x0f0f0f0f0f0f0f0fu;
    x = x - ((x >> 1) & 0x0505050505050505u);
    x = (x & 0x0303030303030303u) + ((x >> 2) & 0x0303030303030303u);
    return (size_t)((x * 0x0101010101010101u) >> 56);
}

#if defined(__SSE2__) && !defined(OP_CONTOURS_SCALAR)
/* The marks of spans s .. s + 7 when they lie in a row of cells of one span each (open
 * ground, most of a tile): span s + i then links to s + i - 1 in -x and s + i + 1 in +x, and
 * to l1 + i in +z and l3 + i in -z (the rows beside, laid out alike), l1 and l3 span s's own
 * links. When the links are exactly these (all present: eight compares of four links against
 * a vector stepped by one), each direction's eight neighbour ids are eight consecutive ids,
 * one vector load, and the eight spans' bits are four 16-bit compares with their own ids,
 * those of a span without a region cleared: the bits of boundary_bits_scalar, span by span
 * (integer compares only; the ids read are those the scalar test reads, through links that
 * exist). Returns 1 with the eight marks in *marks (byte i span s + i's); returns 0 for any
 * other links. Needs s >= 1 and s + 8 <= span count. */
static inline int row8_marks(const uint32_t (*links)[4], const uint16_t *reg, uint32_t s,
                             uint64_t *marks)
{
    const __m128i *l = (const __m128i *)(const void *)links[s];
    __m128i first = _mm_loadu_si128(l);
    if (_mm_movemask_epi8(_mm_cmpeq_epi32(first, _mm_set1_epi32(-1))) != 0)
        return 0;
    uint32_t l1 = links[s][1], l3 = links[s][3];
    /* Lanes in direction order: -x, +z, +x, -z. */
    __m128i want = _mm_set_epi32((int)l3, (int)(s + 1), (int)l1, (int)(s - 1));
    __m128i ok = _mm_cmpeq_epi32(first, want);
    const __m128i one = _mm_set1_epi32(1);
    for (int i = 1; i < 8; i++) {
        want = _mm_add_epi32(want, one);
        ok = _mm_and_si128(ok, _mm_cmpeq_epi32(_mm_loadu_si128(l + i), want));
    }
    if (_mm_movemask_epi8(ok) != 0xffff)
        return 0;
    __m128i own = _mm_loadu_si128((const __m128i *)(const void *)(reg + s));
    __m128i e0 =
        _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(const void *)(reg + s - 1)), own);
    __m128i e1 = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(const void *)(reg + l1)), own);
    __m128i e2 =
        _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(const void *)(reg + s + 1)), own);
    __m128i e3 = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(const void *)(reg + l3)), own);
    /* Bit d and bit d + 4 (to walk, not walked yet) where direction d's id differs. */
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_andnot_si128(e0, _mm_set1_epi16(0x11)),
                                          _mm_andnot_si128(e1, _mm_set1_epi16(0x22))),
                             _mm_or_si128(_mm_andnot_si128(e2, _mm_set1_epi16(0x44)),
                                          _mm_andnot_si128(e3, _mm_set1_epi16(0x88))));
    m = _mm_andnot_si128(_mm_cmpeq_epi16(own, _mm_setzero_si128()), m);
    _mm_storel_epi64((__m128i *)(void *)marks, _mm_packus_epi16(m, m));
    return 1;
}

/* row8_marks stored at mask[s ..], their edges added to *total. */
static inline int mark_row8(const uint32_t (*links)[4], const uint16_t *reg, uint32_t s,
                            uint8_t *mask, size_t *total)
{
    uint64_t w;
    if (!row8_marks(links, reg, s, &w))
        return 0;
    memcpy(mask + s, &w, sizeof w);
    *total += edges8(w);
    return 1;
}

/* The span by span marks of an eight the vector marks refused go unrolled: as an inner loop,
 * its setup and a count and branch a span cost about as much again as the refused test itself
 * (multifloor:64, whose eights mostly hold cells of several spans and are refused:
 * docs/benchmarks.md, rbc20). */
#define OP_UNROLL8 _Pragma("GCC unroll 8")

/* Whether the eight ids at reg[s .. s + 7] all equal reg[s]. */
static inline int ids8_same(const uint16_t *reg, uint32_t s)
{
    __m128i own = _mm_loadu_si128((const __m128i *)(const void *)(reg + s));
    return _mm_movemask_epi8(_mm_cmpeq_epi16(own, _mm_set1_epi16((short)reg[s]))) == 0xffff;
}
#endif

/* Low nibble: boundary edges; high nibble: boundary edges not yet traced. Returns the
 * number of boundary edges. An edge is a boundary when the neighbour value differs from
 * the span's region; in the whole-field view that is "no link, or a link to another
 * region" (OP_TILE_BORDER and 0 never equal a region id), which needs no cell position,
 * so that view (every build's and every rebuild's) takes a flat loop over the spans, out
 * of line (inlined into the trace, it ran short of registers), with what it reads in
 * locals (mask is bytes, which may alias anything). */
__attribute__((noinline)) size_t op__contours_mark_whole(const op_chf *chf, const uint16_t *reg,
                                                         uint8_t *mask)
{
    const uint32_t(*const links)[4] = chf->links;
    size_t total = 0;
    const uint32_t ns = chf->span_count;
    uint32_t s = 0;
#if defined(__SSE2__) && !defined(OP_CONTOURS_SCALAR)
    /* Span 0 alone (a row's -x link is s - 1), then eight spans of a row of one-span cells at
     * once, any other eight span by span; the last few below. */
    if (ns >= 9) {
        total += mark_one(links, reg, 0, mask);
        for (s = 1; ns - s >= 8; s += 8)
            if (!mark_row8(links, reg, s, mask, &total)) {
                OP_UNROLL8
                for (uint32_t i = 0; i < 8; i++)
                    total += mark_one(links, reg, s + i, mask);
            }
    }
#endif
    for (; s < ns; s++)
        total += mark_one(links, reg, s, mask);
    return total;
}

size_t op__contours_mark_pairs(const op_chf *chf, const uint16_t *reg, const uint16_t *breg,
                               const uint8_t *cand, uint8_t *mask, uint32_t *pairs, size_t *fill)
{
    const uint32_t(*const links)[4] = chf->links;
    size_t total = 0;
    for (uint32_t s = 0, ns = chf->span_count; s < ns; s++) {
        uint32_t r = reg[s];
        /* No region: no marks and no pairs, whether cand[0] is set or not. */
        if (r == 0) {
            mask[s] = 0;
            continue;
        }
        uint32_t m = boundary_bits(links[s], reg, r);
        if (cand[r]) {
            mask[s] = 0;
            /* The boundary edges with a link are the links across the region. */
            for (uint32_t bits = m; bits; bits &= bits - 1) {
                uint32_t t = links[s][__builtin_ctz(bits)];
                if (t != OP_NO_LINK)
                    pairs[fill[r]++] = (uint32_t)breg[t] << 16 | reg[t];
            }
            continue;
        }
        mask[s] = (uint8_t)(m | (m << 4));
        total += edge_count[m];
    }
    return total;
}

size_t op__contours_mark_except(const op_chf *chf, const uint16_t *reg, const uint8_t *skip,
                                uint8_t *mask)
{
    const uint32_t(*const links)[4] = chf->links;
    size_t total = 0;
    const uint32_t ns = chf->span_count;
    uint32_t s = 0;
#if defined(__SSE2__) && !defined(OP_CONTOURS_SCALAR)
    /* Eight spans of one id at once: a copied region's (or none) get no marks, a traced
     * region's in a row of one-span cells mark_row8's; any other eight span by span. (Eight
     * of several ids through a per-span skip lookup, or three ids compared, cost more on
     * terrain:512 than the span by span test: docs/benchmarks.md, rbc19.) */
    if (ns >= 9) {
        total += mark_unless(links, reg, skip, 0, mask);
        for (s = 1; ns - s >= 8; s += 8) {
            uint32_t r = reg[s];
            if (ids8_same(reg, s)) {
                if (skip[r] || r == 0) {
                    memset(mask + s, 0, 8);
                    continue;
                }
                if (mark_row8(links, reg, s, mask, &total))
                    continue;
            }
            OP_UNROLL8
            for (uint32_t i = 0; i < 8; i++)
                total += mark_unless(links, reg, skip, s + i, mask);
        }
    }
#endif
    for (; s < ns; s++)
        total += mark_unless(links, reg, skip, s, mask);
    return total;
}

op_status op__contours_across(const op_chf *chf, const uint16_t *reg, int region_count,
                              op_arena *out, uint32_t **first, uint32_t **across, op_err *err)
{
    const uint32_t(*const links)[4] = chf->links;
    const uint32_t ns = chf->span_count;
    /* A counting sort by region: counts at f[r + 2], then f[r + 1] is r's next free slot,
     * which ends as r + 1's start. */
    uint32_t *f = op_arena_calloc(out, (size_t)region_count + 3, sizeof *f);
    if (!f)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (links across %d regions)",
                          region_count);
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t r = reg[s];
        if (r == 0)
            continue;
        for (uint32_t bits = boundary_bits(links[s], reg, r); bits; bits &= bits - 1)
            if (links[s][__builtin_ctz(bits)] != OP_NO_LINK)
                f[r + 2]++;
    }
    for (int r = 2; r <= region_count + 2; r++)
        f[r] += f[r - 1];
    uint32_t *a = op_arena_alloc(out, ((size_t)f[region_count + 2] + 1) * sizeof *a);
    if (!a)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (%u links across regions)",
                          f[region_count + 2]);
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t r = reg[s];
        if (r == 0)
            continue;
        for (uint32_t bits = boundary_bits(links[s], reg, r); bits; bits &= bits - 1) {
            uint32_t t = links[s][__builtin_ctz(bits)];
            if (t != OP_NO_LINK)
                a[f[r + 1]++] = t;
        }
    }
    *first = f;
    *across = a;
    return OP_OK;
}

size_t op__contours_mark_regions(const op_chf *chf, const uint16_t *reg, const uint8_t *which,
                                 uint8_t *mask)
{
    const uint32_t(*const links)[4] = chf->links;
    size_t total = 0;
    for (uint32_t s = 0, ns = chf->span_count; s < ns; s++) {
        uint32_t r = reg[s];
        if (!which[r])
            continue;
        total += mark_span(links, reg, s, r, mask);
    }
    return total;
}

static size_t mark_boundaries(const view *v, uint8_t *mask)
{
    if (!v->key)
        return op__contours_mark_whole(v->chf, v->reg, mask);
    const op_chf *chf = v->chf;
    const uint32_t *const cells = chf->cells;
    const uint16_t *const reg = v->reg;
    const int width = chf->width, depth = chf->depth;
    size_t total = 0;
    for (int z = 0, c = 0; z < depth; z++)
        for (int x = 0; x < width; x++, c++) {
            for (uint32_t s = cells[c], e = cells[c + 1]; s < e; s++) {
                uint8_t m = 0;
                if (visible(v, s)) {
                    for (int d = 0; d < 4; d++)
                        if (neighbour_value(v, s, x, z, d) != (int32_t)reg[s])
                            m |= (uint8_t)(1u << d);
                }
                mask[s] = (uint8_t)(m | (m << 4));
                total += edge_count[m];
            }
        }
    return total;
}

/* The cell of span s: the last c with cells[c] <= s (cells[c + 1] > s then follows). */
static int cell_of(const op_chf *chf, uint32_t s)
{
    int lo = 0, hi = chf->width * chf->depth - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (chf->cells[mid] <= s)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

typedef struct tracer {
    const view *v;
    uint8_t *mask;
    op_contour_vert *verts;
    size_t nverts, cap;
} tracer;

/* Walks one loop from (s, d) in cell (x, z). Returns 0 when the walk does not close
 * within every state of the field (links that are not mutual). whole (a constant in each
 * caller): the view is the whole field's, so that every layer test folds away. */
static inline __attribute__((always_inline)) int walk_loop_in(tracer *t, uint32_t s, int d, int x,
                                                              int z, int whole)
{
    /* The view is copied: stores to the byte mask could alias it, and it would be reloaded
     * at every step. */
    view v = *t->v;
    if (whole)
        v.key = NULL;
    uint8_t *const mask = t->mask;
    op_contour_vert *const verts = t->verts;
    const size_t cap = t->cap;
    size_t nverts = t->nverts;
    const uint32_t s0 = s;
    const int d0 = d;
    const int32_t r = v.reg[s];
    uint64_t guard = 4 * (uint64_t)v.chf->span_count + 4;
    int closed = 1;
    do {
        if (mask[s] & (1u << d)) {
            if (nverts == cap) {
                closed = 0;
                break;
            }
            op_contour_vert *cv = &verts[nverts++];
            cv->x = x + corner_dx[d];
            cv->z = z + corner_dz[d];
            cv->y = corner_y(&v, s, d);
            cv->neighbour = neighbour_value(&v, s, x, z, d);
            mask[s] &= (uint8_t) ~(1u << (d + 4));
            d = (d + 3) & 3;
        } else {
            s = link_in(&v, s, d);
            x += op_dir_dx(d);
            z += op_dir_dz(d);
            d = (d + 1) & 3;
            if (s == OP_NO_LINK || v.reg[s] != r) {
                closed = 0;
                break;
            }
        }
        if (--guard == 0) {
            closed = 0;
            break;
        }
    } while (s != s0 || d != d0);
    t->nverts = nverts;
    return closed;
}

static int walk_loop(tracer *t, uint32_t s, int d, int x, int z)
{
    return t->v->key ? walk_loop_in(t, s, d, x, z, 0) : walk_loop_in(t, s, d, x, z, 1);
}

/* Whether none of the eight spans' marks from m has an untraced edge (a high nibble bit). */
static inline int none_untraced8(const uint8_t *m)
{
    uint64_t w;
    memcpy(&w, m, sizeof w);
    return (w & 0xf0f0f0f0f0f0f0f0u) == 0;
}

/* marked: the marks of every span not skipped are in mask already (op__contours_mark_pairs),
 * total their boundary edges and skipped the skipped spans. */
static op_status trace(const op_chf *chf, const op_regions *regs, const op_contour_settings *cs,
                       const uint8_t *skip, uint8_t *marked, size_t total, size_t skipped,
                       op_arena *verts_arena, op_arena *scratch, op__loops *res, op_err *err)
{
    memset(res, 0, sizeof *res);
    const uint16_t *reg = regs->reg;
    view v = {chf, reg, cs ? cs->span_layer : NULL, cs ? (uint16_t)cs->layer : 0,
              cs ? cs->border_region : 0};
    uint8_t *mask = marked ? marked : op_arena_alloc(scratch, (size_t)chf->span_count + 1);
    if (!mask)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (%zu bytes of edge marks)",
                          (size_t)chf->span_count + 1);
    if (!marked)
        total = mark_boundaries(&v, mask);
    if (skip && total + 4 * skipped > INT_MAX) {
        /* The limit is the whole field's: count the skipped regions' edges too (their spans
         * are marked again, then cleared). */
        size_t all = op__contours_mark_whole(chf, reg, mask);
        for (uint32_t s = 0; s < chf->span_count; s++)
            if (skip[reg[s]])
                mask[s] = 0;
        if (all > INT_MAX)
            return op_err_set(err, OP_ELIMIT, "contours: %zu boundary edges > %d", all, INT_MAX);
    }
    if (total > INT_MAX)
        return op_err_set(err, OP_ELIMIT, "contours: %zu boundary edges > %d", total, INT_MAX);
    /* A loop has at least two edges: on one floor four, but spans of several floors
     * around two corners can close a loop along one edge and back. */
    size_t max_loops = total / 2 + 1;
    tracer t = {&v, mask, NULL, 0, total};
    t.verts = op_arena_alloc(verts_arena, (total + 1) * sizeof *t.verts);
    res->start = op_arena_alloc(scratch, (max_loops + 1) * sizeof *res->start);
    res->region = op_arena_alloc(scratch, max_loops * sizeof *res->region);
    if (!t.verts || !res->start || !res->region)
        return op_err_set(err, OP_ENOMEM, "contours: out of memory (%zu raw vertices)", total);
    int count = 0;
    /* Loops start in span index order; the cell of a start is looked up (a few per tile). */
    for (uint32_t s = 0, ns = chf->span_count; s < ns; s++) {
        /* Most spans have no edge to trace (inside a region, or copied): eight at a time. */
        while (ns - s >= 8 && none_untraced8(mask + s))
            s += 8;
        if (s == ns)
            break;
        if (!(mask[s] >> 4))
            continue;
        while (mask[s] >> 4) {
            int d = 0;
            while (!(mask[s] & (1u << (d + 4))))
                d++;
            int c = cell_of(chf, s);
            res->start[count] = t.nverts;
            res->region[count] = reg[s];
            if (!walk_loop(&t, s, d, c % chf->width, c / chf->width))
                return op_err_set(err, OP_EINVAL,
                                  "contours: the loop from span %u direction %d does not "
                                  "close (links not mutual?)",
                                  s, d);
            count++;
        }
    }
    res->start[count] = t.nverts;
    res->verts = t.verts;
    res->count = count;
    return OP_OK;
}

op_status op__contours_trace(const op_chf *chf, const op_regions *regs,
                             const op_contour_settings *cs, op_arena *verts_arena,
                             op_arena *scratch, op__loops *res, op_err *err)
{
    return trace(chf, regs, cs, NULL, NULL, 0, 0, verts_arena, scratch, res, err);
}

op_status op__contours_trace_marked(const op_chf *chf, const op_regions *regs, const uint8_t *skip,
                                    uint8_t *mask, size_t total, size_t skipped,
                                    op_arena *verts_arena, op_arena *scratch, op__loops *res,
                                    op_err *err)
{
    return trace(chf, regs, NULL, skip, mask, total, skipped, verts_arena, scratch, res, err);
}
