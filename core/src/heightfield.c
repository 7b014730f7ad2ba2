/*
 * Span stage, heightfield (build3d-spans.md §3.5, §9): columns of solid spans built
 * from a log of fragments.
 *
 * Input: fragments (column, rows [smin, smax), area) from the rasterizer or from
 * op_heightfield_add_span. Output: per column a bottom-up linked list of disjoint,
 * non-touching spans whose extents are the unions of touching/overlapping fragments
 * and whose area follows the area-merge rule. Invariant after every public call:
 * each column's spans are a pure function of the SET of its fragments (never of
 * their order), so any permutation of the triangles gives the same bytes.
 *
 * Fragments stay in the log (12 bytes each, in a column list, newest first)
 * because the area rule needs them when a later fragment raises a span's top; a
 * rebuild sorts a column's fragments by smin (in a local array when few).
 * Typical tile: 2k columns, 5-20k fragments, 3-6k spans.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "heightfield_internal.h"
#include "onepath/limits.h"

op_status op_heightfield_init(op_heightfield *hf, op_arena *arena, int width, int depth, int rows,
                              const double origin[3], double cs, double ch, op_err *err)
{
    if (!hf || !arena || !origin)
        return op_err_set(err, OP_EINVAL, "heightfield: NULL argument");
    memset(hf, 0, sizeof *hf);
    if (width < 1 || depth < 1 || width > OP_MAX_GRID_SIDE || depth > OP_MAX_GRID_SIDE)
        return op_err_set(err, OP_ERANGE, "heightfield: size %d x %d is outside 1..%d", width,
                          depth, OP_MAX_GRID_SIDE);
    if (rows < 1 || rows > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE, "heightfield: rows = %d is outside 1..%d", rows,
                          OP_MAX_ROWS);
    if (!isfinite(cs) || !isfinite(ch) || !(cs > 0.0) || !(ch > 0.0))
        return op_err_set(err, OP_EINVAL, "heightfield: cell size %g / height %g is not > 0", cs,
                          ch);
    if (cs < OP_MIN_CELL_SIZE || ch < OP_MIN_CELL_SIZE || cs > OP_MAX_COORD || ch > OP_MAX_COORD)
        return op_err_set(err, OP_ERANGE,
                          "heightfield: cell size %g / height %g is outside [%g, 2^21]", cs, ch,
                          OP_MIN_CELL_SIZE);
    for (int a = 0; a < 3; a++) {
        if (!isfinite(origin[a]))
            return op_err_set(err, OP_EINVAL, "heightfield: origin %c = %g is not finite", "xyz"[a],
                              origin[a]);
        if (fabs(origin[a]) > OP_MAX_ORIGIN)
            return op_err_set(err, OP_ERANGE, "heightfield: origin %c = %g is beyond +-2^40",
                              "xyz"[a], origin[a]);
    }
    size_t ncols = (size_t)width * (size_t)depth;
    uint32_t *heads = op_arena_alloc(arena, 2 * ncols * sizeof *heads);
    if (!heads)
        return op_err_set(err, OP_ENOMEM, "heightfield: out of memory (%zu bytes of columns)",
                          2 * ncols * sizeof *heads);
    memset(heads, 0xff, 2 * ncols * sizeof *heads); /* OP_NO_SPAN everywhere */
    hf->width = width;
    hf->depth = depth;
    hf->rows = rows;
    memcpy(hf->origin, origin, sizeof hf->origin);
    hf->cs = cs;
    hf->ch = ch;
    hf->heads = heads;
    hf->frag_heads = heads + ncols;
    hf->free_list = OP_NO_SPAN;
    hf->arena = arena;
    hf->line_origin[0] = origin[0];
    hf->line_origin[1] = origin[2];
    hf->merge_threshold = -1;
    op_err_clear(err);
    return OP_OK;
}

void op_heightfield_use_grid_lines(op_heightfield *hf, double ox, double oz, int64_t gx0,
                                   int64_t gz0)
{
    hf->line_origin[0] = ox;
    hf->line_origin[1] = oz;
    hf->cell0[0] = gx0;
    hf->cell0[1] = gz0;
}

void op_heightfield_use_global_lines(op_heightfield *hf, int64_t gx0, int64_t gz0)
{
    op_heightfield_use_grid_lines(hf, 0.0, 0.0, gx0, gz0);
}

int64_t op_cell_of(double v, double origin, double cs)
{
    return op__cell_of(v, origin, cs, 1.0 / cs);
}

op_status op__hf_threshold(op_heightfield *hf, int merge_threshold, op_err *err)
{
    if (merge_threshold < 0 || merge_threshold > OP_MAX_ROWS)
        return op_err_set(err, OP_ERANGE, "heightfield: merge threshold %d is outside 0..%d",
                          merge_threshold, OP_MAX_ROWS);
    if (hf->merge_threshold >= 0 && hf->merge_threshold != merge_threshold)
        return op_err_set(err, OP_EINVAL,
                          "heightfield: merge threshold %d differs from %d used before",
                          merge_threshold, hf->merge_threshold);
    return OP_OK;
}

/* Grows an arena array to hold at least need elements: by an eighth while the array can
 * be extended in place (the common case: it is the arena's latest allocation), so a
 * tile's fragment log ends at most an eighth above its use; by doubling when it must
 * move (a copy leaves the old array behind); never past max (>= need) elements. */
static op_status grow_max(op_heightfield *hf, void **arr, uint32_t *cap, size_t need, size_t max,
                          size_t elem, const char *what, op_err *err)
{
    if (need <= *cap)
        return OP_OK;
    if (need > OP_MAX_SPANS)
        return op_err_set(err, OP_ELIMIT, "heightfield: %zu %s > OP_MAX_SPANS (%u)", need, what,
                          (unsigned)OP_MAX_SPANS);
    if (*arr) {
        size_t step = (size_t)*cap + *cap / 8;
        step = step < need ? need : step;
        step = step > max ? max : step;
        if (op_arena_extend(hf->arena, *arr, step * elem)) {
            *cap = (uint32_t)step;
            return OP_OK;
        }
    }
    size_t ncap = (size_t)*cap * 2;
    if (ncap < need)
        ncap = need;
    if (ncap < 256)
        ncap = 256;
    if (ncap > max)
        ncap = max;
    void *p = *arr ? op_arena_grow(hf->arena, *arr, (size_t)*cap * elem, ncap * elem)
                   : op_arena_alloc(hf->arena, ncap * elem);
    if (!p)
        return op_err_set(err, OP_ENOMEM, "heightfield: out of memory (%zu bytes of %s)",
                          ncap * elem, what);
    *arr = p;
    *cap = (uint32_t)ncap;
    return OP_OK;
}

static op_status grow(op_heightfield *hf, void **arr, uint32_t *cap, size_t need, size_t elem,
                      const char *what, op_err *err)
{
    return grow_max(hf, arr, cap, need, OP_MAX_SPANS, elem, what, err);
}

op_status op__hf_reserve(op_heightfield *hf, size_t n, op_err *err)
{
    void *p = hf->frags;
    op_status st = grow(hf, &p, &hf->frag_cap, (size_t)hf->frag_count + n, sizeof(op_hf_frag),
                        "fragments", err);
    hf->frags = p;
    return st;
}

/* Sorts a fragment list by smin (bottom-up merge sort on the links: O(k log k), no
 * memory). Equal smin keep any order: the rebuild does not depend on it. */
static uint32_t sort_frags(op_hf_frag *f, uint32_t head)
{
    if (head == OP_NO_SPAN || f[head].next == OP_NO_SPAN)
        return head;
    for (uint32_t width = 1;; width *= 2) {
        uint32_t p = head, tail = OP_NO_SPAN, merges = 0;
        head = OP_NO_SPAN;
        while (p != OP_NO_SPAN) {
            merges++;
            uint32_t q = p, psize = 0, qsize = width;
            while (psize < width && q != OP_NO_SPAN) {
                psize++;
                q = f[q].next;
            }
            while (psize > 0 || (qsize > 0 && q != OP_NO_SPAN)) {
                uint32_t e;
                if (psize == 0 || (qsize > 0 && q != OP_NO_SPAN && f[q].smin < f[p].smin)) {
                    e = q;
                    q = f[q].next;
                    qsize--;
                } else {
                    e = p;
                    p = f[p].next;
                    psize--;
                }
                if (tail == OP_NO_SPAN)
                    head = e;
                else
                    f[tail].next = e;
                tail = e;
            }
            p = q;
        }
        f[tail].next = OP_NO_SPAN;
        if (merges <= 1)
            return head;
    }
}

static inline __attribute__((always_inline)) uint32_t take_slot(op_heightfield *hf)
{
    uint32_t s = hf->free_list;
    if (s != OP_NO_SPAN) {
        hf->free_list = hf->spans[s].next;
        return s;
    }
    return hf->span_slots++;
}

/* Appends span [gmin, gmax) with area on top of column c (prev: its last span). */
static inline __attribute__((always_inline)) void
append_span(op_heightfield *hf, size_t c, uint32_t *prev, int gmin, int gmax, int area)
{
    uint32_t s = take_slot(hf);
    hf->spans[s].smin = (uint16_t)gmin;
    hf->spans[s].smax = (uint16_t)gmax;
    hf->spans[s].area = (uint8_t)area;
    hf->spans[s].next = OP_NO_SPAN;
    if (*prev == OP_NO_SPAN)
        hf->heads[c] = s;
    else
        hf->spans[*prev].next = s;
    *prev = s;
    hf->span_count++;
}

/* Column c's spans from its fragments sorted by smin (the links, for long columns):
 * union of touching groups; area = largest area among the group's fragments whose
 * top is within the threshold of the group's top (§3.5). */
static void build_from_links(op_heightfield *hf, size_t c, uint32_t head)
{
    const op_hf_frag *f = hf->frags;
    int thr = hf->merge_threshold;
    uint32_t prev = OP_NO_SPAN;
    for (uint32_t i = head; i != OP_NO_SPAN;) {
        int gmin = f[i].smin, gmax = f[i].smax;
        uint32_t j = f[i].next;
        while (j != OP_NO_SPAN && f[j].smin <= gmax) {
            if (f[j].smax > gmax)
                gmax = f[j].smax;
            j = f[j].next;
        }
        int area = 0;
        for (uint32_t k = i; k != j; k = f[k].next)
            if (gmax - f[k].smax <= thr && f[k].area > area)
                area = f[k].area;
        append_span(hf, c, &prev, gmin, gmax, area);
        i = j;
    }
}

/* Short columns (nearly all): the fragments as keys smin << 32 | smax << 8 | area,
 * sorted by insertion in a local array, so the groups are read without following
 * links. Sorting by the whole key orders by smin, which is all the rule needs. */
#define SHORT_COLUMN 64

/* The group of sorted keys that starts at key[i] (smin << 32 | smax << 8 | area): the keys
 * whose floors reach into the group's top so far. Its floor, top and area (the largest
 * area among the keys whose top is within thr of the group's) into *g; returns the index
 * after the group. bounded = 0 (a constant at each call): a sentinel key above every top
 * ends the scan, so the index is not tested. */
typedef struct key_group {
    int gmin, gmax, area;
} key_group;

static inline __attribute__((always_inline)) int group_of(const uint64_t *key, int i, int n,
                                                          int bounded, int thr, key_group *g)
{
    int gmin = (int)(key[i] >> 32), gmax = (int)(key[i] >> 8 & 0xffff);
    int j = i + 1;
    for (; (!bounded || j < n) && (int)(key[j] >> 32) <= gmax; j++) {
        int t = (int)(key[j] >> 8 & 0xffff);
        gmax = t > gmax ? t : gmax;
    }
    int area = (int)(key[i] & 0xff); /* a group of one: its top is the span's */
    if (j > i + 1) {
        area = 0;
        for (int k = i; k < j; k++) {
            int t = (int)(key[k] >> 8 & 0xffff), a = (int)(key[k] & 0xff);
            if (gmax - t <= thr && a > area)
                area = a;
        }
    }
    *g = (key_group){gmin, gmax, area};
    return j;
}

static void build_from_keys(op_heightfield *hf, size_t c, const uint64_t *key, int n)
{
    int thr = hf->merge_threshold;
    uint32_t prev = OP_NO_SPAN;
    for (int i = 0; i < n;) {
        key_group g;
        i = group_of(key, i, n, 1, thr, &g);
        append_span(hf, c, &prev, g.gmin, g.gmax, g.area);
    }
}

/* Makes room for n more span slots when the span array can grow as columns are rebuilt
 * (cap_max > 0: op__hf_commit's first commit), within cap_max. */
static op_status span_room(op_heightfield *hf, size_t n, size_t cap_max, op_err *err)
{
    size_t need = (size_t)hf->span_slots + n;
    if (cap_max == 0 || need <= hf->span_cap)
        return OP_OK;
    need = need > cap_max ? cap_max : need;
    void *p = hf->spans;
    op_status st = grow_max(hf, &p, &hf->span_cap, need, cap_max, sizeof(op_hf_span), "spans", err);
    hf->spans = p;
    return st;
}

/* Rebuilds column c from its fragments (§3.5), freeing its old spans first; with
 * cap_max > 0 the span array grows first to hold the column's new spans. */
static op_status rebuild_column(op_heightfield *hf, size_t c, size_t cap_max, op_err *err)
{
    op_hf_frag *f = hf->frags;
    for (uint32_t s = hf->heads[c]; s != OP_NO_SPAN;) {
        uint32_t nx = hf->spans[s].next;
        hf->spans[s].next = hf->free_list;
        hf->free_list = s;
        hf->span_count--;
        s = nx;
    }
    hf->heads[c] = OP_NO_SPAN;
    uint64_t key[SHORT_COLUMN];
    int n = 0;
    op_status st;
    for (uint32_t i = hf->frag_heads[c]; i != OP_NO_SPAN; i = f[i].next) {
        if (n == SHORT_COLUMN) {
            size_t len = 0; /* a column's spans are at most its fragments */
            for (uint32_t k = hf->frag_heads[c]; k != OP_NO_SPAN; k = f[k].next)
                len++;
            if ((st = span_room(hf, len, cap_max, err)) != OP_OK)
                return st;
            uint32_t head = sort_frags(f, hf->frag_heads[c]);
            hf->frag_heads[c] = head;
            build_from_links(hf, c, head);
            return OP_OK;
        }
        uint64_t k = (uint64_t)f[i].smin << 32 | (uint64_t)f[i].smax << 8 | f[i].area;
        int m = n++;
        while (m > 0 && key[m - 1] > k) {
            key[m] = key[m - 1];
            m--;
        }
        key[m] = k;
    }
    if ((st = span_room(hf, (size_t)n, cap_max, err)) != OP_OK)
        return st;
    build_from_keys(hf, c, key, n);
    return OP_OK;
}

/* A first commit's column c of fragments from h (no old spans, no free slot: a tile's
 * build): build_from_keys' spans written to the next slots in order, each linked to the
 * next, without the free list or a link patched per span. The keys sit between a 0 below
 * (no key is 0: smax > smin) and a sentinel smin above every top, so neither the
 * insertion nor the group scan tests its index. Columns longer than SHORT_COLUMN go to
 * rebuild_column. Inline in commit_first: as a call it saved and restored registers
 * and checked the stack guard of key[] for every column, some 20 instructions. */
static inline __attribute__((always_inline)) op_status
first_column(op_heightfield *hf, size_t c, uint32_t h, size_t cap_max, op_err *err)
{
    const op_hf_frag *f = hf->frags;
    uint64_t key[SHORT_COLUMN + 2];
    key[0] = 0;
    int n = 0;
    for (uint32_t i = h; i != OP_NO_SPAN; i = f[i].next) {
        if (n == SHORT_COLUMN)
            return rebuild_column(hf, c, cap_max, err);
        uint64_t k = (uint64_t)f[i].smin << 32 | (uint64_t)f[i].smax << 8 | f[i].area;
        int m = ++n;
        while (key[m - 1] > k) {
            key[m] = key[m - 1];
            m--;
        }
        key[m] = k;
    }
    key[n + 1] = (uint64_t)INT32_MAX << 32;
    op_status st = span_room(hf, (size_t)n, cap_max, err);
    if (st != OP_OK)
        return st;
    const int thr = hf->merge_threshold;
    op_hf_span *out = hf->spans;
    uint32_t sp0 = hf->span_slots, sp = sp0;
    for (int i = 1; i <= n;) {
        key_group g;
        i = group_of(key, i, n + 1, 0, thr, &g);
        out[sp] = (op_hf_span){(uint16_t)g.gmin, (uint16_t)g.gmax, (uint8_t)g.area, sp + 1};
        sp++;
    }
    out[sp - 1].next = OP_NO_SPAN;
    hf->heads[c] = sp0;
    hf->span_count += sp - sp0;
    hf->span_slots = sp;
    return OP_OK;
}

/* Room for n more span slots in a first commit's loop (commit_first), which keeps the
 * slot count, the span array and its capacity in locals: synced to hf for span_room,
 * reloaded after. Called only when the slots run out. */
static op_status first_room(op_heightfield *hf, uint32_t slots, size_t n, size_t cap_max,
                            op_hf_span **spans, uint32_t *cap, op_err *err)
{
    hf->span_slots = hf->span_count = slots;
    op_status st = span_room(hf, n, cap_max, err);
    *spans = hf->spans;
    *cap = hf->span_cap;
    return st;
}

/* op__hf_commit's first commit: every fragment new, no old spans, no free slot, so the
 * columns take their slots in order and the span count is the slot count. The loop keeps
 * the arrays, the slot count and the capacity in locals: the build has
 * -fno-strict-aliasing, and through hf every span stored would reload them (most columns
 * are one or two fragments, a few dozen instructions). Columns of one, two and three
 * fragments take their own paths, the others first_column. col_start (NULL without
 * its memory) gets each column's first slot. */
static op_status commit_first(op_heightfield *hf, uint32_t *col_start, size_t cap_max, op_err *err)
{
    const size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    const uint32_t *fh = hf->frag_heads;
    const op_hf_frag *fr = hf->frags;
    uint32_t *heads = hf->heads;
    op_hf_span *spans = hf->spans;
    uint32_t slots = hf->span_slots, cap = hf->span_cap;
    const int thr = hf->merge_threshold;
    op_status st = OP_OK;
    for (size_t c = 0; c < ncols; c++) {
        if (col_start)
            col_start[c] = slots;
        uint32_t h = fh[c];
        if (h == OP_NO_SPAN)
            continue;
        const op_hf_frag *f = &fr[h];
        if (f->next == OP_NO_SPAN) {
            /* One fragment (most of open ground): its one span is the fragment, with its
             * area (§3.5). */
            if (slots + 1 > cap &&
                (st = first_room(hf, slots, 1, cap_max, &spans, &cap, err)) != OP_OK)
                break;
            spans[slots] = (op_hf_span){f->smin, f->smax, f->area, OP_NO_SPAN};
            heads[c] = slots++;
            continue;
        }
        const op_hf_frag *g = &fr[f->next];
        if (g->next == OP_NO_SPAN) {
            /* Two fragments (the next most common: a floor and what stands on it or
             * hangs above, two triangles' fragments that do not fold): build_from_keys
             * for n = 2 written out, the lower smin first. */
            if (slots + 2 > cap &&
                (st = first_room(hf, slots, 2, cap_max, &spans, &cap, err)) != OP_OK)
                break;
            const op_hf_frag *lo = g->smin < f->smin ? g : f, *up = lo == g ? f : g;
            heads[c] = slots;
            if (up->smin <= lo->smax) { /* one group */
                int gmax = up->smax > lo->smax ? up->smax : lo->smax;
                int a = gmax - lo->smax <= thr ? lo->area : 0;
                int b = gmax - up->smax <= thr ? up->area : 0;
                spans[slots] =
                    (op_hf_span){lo->smin, (uint16_t)gmax, (uint8_t)(a > b ? a : b), OP_NO_SPAN};
                slots++;
            } else {
                spans[slots] = (op_hf_span){lo->smin, lo->smax, lo->area, slots + 1};
                spans[slots + 1] = (op_hf_span){up->smin, up->smax, up->area, OP_NO_SPAN};
                slots += 2;
            }
            continue;
        }
        if (fr[g->next].next == OP_NO_SPAN) {
            /* Three fragments: sorted by smin with three exchanges, then split into
             * groups at the gaps, as build_from_keys. */
            if (slots + 3 > cap &&
                (st = first_room(hf, slots, 3, cap_max, &spans, &cap, err)) != OP_OK)
                break;
            const op_hf_frag *q[3] = {f, g, &fr[g->next]}, *t;
            if (q[1]->smin < q[0]->smin)
                t = q[0], q[0] = q[1], q[1] = t;
            if (q[2]->smin < q[1]->smin)
                t = q[1], q[1] = q[2], q[2] = t;
            if (q[1]->smin < q[0]->smin)
                t = q[0], q[0] = q[1], q[1] = t;
            uint32_t sp = slots;
            for (int i = 0; i < 3;) {
                int gmax = q[i]->smax, j = i + 1;
                for (; j < 3 && q[j]->smin <= gmax; j++)
                    gmax = q[j]->smax > gmax ? q[j]->smax : gmax;
                int area = q[i]->area;
                if (j > i + 1) {
                    area = 0;
                    for (int k = i; k < j; k++)
                        if (gmax - q[k]->smax <= thr && q[k]->area > area)
                            area = q[k]->area;
                }
                spans[sp] = (op_hf_span){q[i]->smin, (uint16_t)gmax, (uint8_t)area, sp + 1};
                sp++;
                i = j;
            }
            spans[sp - 1].next = OP_NO_SPAN;
            heads[c] = slots;
            slots = sp;
            continue;
        }
        hf->span_slots = hf->span_count = slots;
        if ((st = first_column(hf, c, h, cap_max, err)) != OP_OK)
            break;
        spans = hf->spans;
        cap = hf->span_cap;
        slots = hf->span_slots;
    }
    hf->span_slots = hf->span_count = slots;
    return st;
}

int op__hf_flat(const op_heightfield *hf)
{
    size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    return hf->col_start && hf->spans && hf->col_start[ncols] == hf->span_count;
}

op_status op__hf_commit(op_heightfield *hf, uint32_t first, op_err *err)
{
    /* A rebuild frees a column's spans before it takes new slots, so the new slots
     * needed are at most the number of new fragments. A later commit reserves that many
     * up front, so that it cannot fail half-way. The first commit (no spans yet, every
     * fragment new: a tile's build) grows the array column by column instead, to the
     * spans the columns get (a tile's fragments are several times its spans where
     * triangles overlap); should a growth fail, the heightfield goes back to no spans
     * and no fragments, as it was. */
    size_t bound = (size_t)hf->span_slots + (hf->frag_count - first);
    /* (past OP_MAX_SPANS, the up-front reservation names the limit, as before) */
    int first_commit = first == 0 && hf->span_slots == 0 && bound <= OP_MAX_SPANS;
    size_t cap_max = first_commit ? bound : 0;
    size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    /* A first commit takes span slots in column order: it records where each column
     * starts (allocated before the spans, which then grow in place). Without the memory
     * the heightfield is only walked through its links. */
    hf->col_start = NULL;
    uint32_t *col_start =
        first_commit ? op_arena_alloc(hf->arena, (ncols + 1) * sizeof *col_start) : NULL;
    void *p = hf->spans;
    op_status st = grow(hf, &p, &hf->span_cap, first_commit ? (bound < 256 ? bound : 256) : bound,
                        sizeof(op_hf_span), "spans", err);
    hf->spans = p;
    if (st != OP_OK) {
        op__hf_rollback(hf, first);
        return st;
    }
    if (first_commit) {
        st = commit_first(hf, col_start, cap_max, err);
    } else {
        for (size_t c = 0; c < ncols; c++) {
            /* New fragments were pushed in front: a column is dirty iff its head is new. */
            uint32_t h = hf->frag_heads[c];
            if (h == OP_NO_SPAN || h < first)
                continue;
            if ((st = rebuild_column(hf, c, cap_max, err)) != OP_OK)
                break;
        }
    }
    if (st == OP_OK && col_start) {
        col_start[ncols] = hf->span_slots;
        hf->col_start = col_start;
    }
    if (st != OP_OK) {
        for (size_t c = 0; c < ncols; c++)
            hf->heads[c] = OP_NO_SPAN;
        hf->span_count = hf->span_slots = 0;
        hf->free_list = OP_NO_SPAN;
        op__hf_rollback(hf, first);
    }
    return st;
}

void op__hf_rollback(op_heightfield *hf, uint32_t first)
{
    size_t ncols = (size_t)hf->width * (size_t)hf->depth;
    for (size_t c = 0; c < ncols; c++) {
        uint32_t h = hf->frag_heads[c];
        while (h != OP_NO_SPAN && h >= first)
            h = hf->frags[h].next;
        hf->frag_heads[c] = h;
    }
    hf->frag_count = first;
}

op_status op_heightfield_add_span(op_heightfield *hf, int x, int z, int smin, int smax, int area,
                                  int merge_threshold, op_err *err)
{
    if (!hf || !hf->heads)
        return op_err_set(err, OP_EINVAL, "heightfield: NULL or not initialised");
    if (x < 0 || z < 0 || x >= hf->width || z >= hf->depth)
        return op_err_set(err, OP_ERANGE, "heightfield: column (%d, %d) is outside %d x %d", x, z,
                          hf->width, hf->depth);
    if (smin < 0 || smax <= smin || smax > hf->rows)
        return op_err_set(err, OP_ERANGE,
                          "heightfield: span rows [%d, %d) at (%d, %d) are empty or outside "
                          "0..%d",
                          smin, smax, x, z, hf->rows);
    if (area < 0 || area > OP_MAX_AREA)
        return op_err_set(err, OP_ERANGE, "heightfield: area %d at (%d, %d) is outside 0..%d", area,
                          x, z, OP_MAX_AREA);
    op_status st = op__hf_threshold(hf, merge_threshold, err);
    if (st == OP_OK)
        st = op__hf_reserve(hf, 1, err);
    if (st != OP_OK)
        return st;
    uint32_t first = op__hf_begin(hf);
    int old_threshold = hf->merge_threshold;
    hf->merge_threshold = merge_threshold;
    op__hf_push(hf, (uint32_t)x + (uint32_t)z * (uint32_t)hf->width, smin, smax, area);
    st = op__hf_commit(hf, first, err);
    if (st != OP_OK) {
        hf->merge_threshold = old_threshold;
        return st;
    }
    op_err_clear(err);
    return OP_OK;
}

int op_heightfield_dump(const op_heightfield *hf, op_write_fn write, void *ctx)
{
    /* Lines are batched: a tile has thousands of spans. */
    char buf[4096];
    size_t used = 0;
    for (int z = 0; z < hf->depth; z++) {
        for (int x = 0; x < hf->width; x++) {
            for (uint32_t s = hf->heads[(size_t)x + (size_t)z * (size_t)hf->width]; s != OP_NO_SPAN;
                 s = hf->spans[s].next) {
                if (used > sizeof buf - 64) {
                    if (write(ctx, buf, used))
                        return 1;
                    used = 0;
                }
                used += (size_t)snprintf(buf + used, sizeof buf - used, "%d %d %u %u %u\n", x, z,
                                         (unsigned)hf->spans[s].smin, (unsigned)hf->spans[s].smax,
                                         (unsigned)hf->spans[s].area);
            }
        }
    }
    return used ? write(ctx, buf, used) : 0;
}
