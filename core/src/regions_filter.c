/*
 * Region filtering and numbering (build3d-regions.md §5 as amended by
 * ../shared/spec/amendments.md R1 and R2).
 *
 * Input: raw labels from a partition. Output: op_regions with ids 1..k in order of first
 * span. Steps, in order: (1) islands (R1): labels joined by a link between their spans
 * (any non-zero areas) form groups; a group with fewer than MinRegionArea spans in all is
 * removed, unless (in a tile build, chf->border > 0) one of its spans lies in the border
 * band: its extent then lies partly in a neighbouring tile, whose build keeps it too
 * (docs/spec/clarifications.md, regions 5); (2) merging (not for layers): passes over
 * labels in id order, a label below MergeRegionArea merges into the same-area neighbour it
 * shares the most links with among those that share no column with it (R2; smallest id
 * on ties), until a pass merges nothing; (3) numbering.
 *
 * Merging keeps, per live label, a small unsorted list of same-area neighbours with link
 * counts; a merge folds the absorbed label's list into the survivor's and renames it in
 * its neighbours' lists, so a merge costs the two labels' degrees, not a rescan of the
 * spans. Lists that outgrow their room are copied to a larger block of scratch. The
 * same-area labels a label shares a column with are kept as id sets resolved through the
 * merge union-find when the label's turn comes (op__idset, as the layer merge does).
 */
#include <string.h>

#include "onepath/limits.h"
#include "regions_internal.h"

typedef struct nblist {
    uint32_t *nb, *w;
    uint32_t n, cap;
} nblist;

typedef struct merge_state {
    op__labels *lab;
    op_arena *scratch;
    nblist *adj;
    op__idset *ovl; /* same-area labels sharing a column (R2), as recorded */
    uint32_t *size;
    uint32_t *parent; /* label it merged into, or itself */
} merge_state;

static void group_union(uint32_t *group, uint32_t a, uint32_t b)
{
    a = op__find_root(group, a);
    b = op__find_root(group, b);
    if (a != b) /* the smaller root stays: the result does not depend on the order */
        group[a > b ? a : b] = a < b ? a : b;
}

/* The merge graph's directed pairs, grown as the scan finds them: by an eighth while the
 * buffer extends in place (it is the scratch arena's latest allocation during the scan),
 * by doubling when it must move; never past one pair a link. */
typedef struct pair_buf {
    op_arena *a;
    uint64_t *p;
    size_t n, cap, max;
} pair_buf;

static op_status pairs_grow(pair_buf *pb, op_err *err)
{
    size_t step = pb->cap + pb->cap / 8 + 16;
    step = step > pb->max ? pb->max : step;
    if (op_arena_extend(pb->a, pb->p, step * 8)) {
        pb->cap = step;
        return OP_OK;
    }
    size_t ncap = 2 * pb->cap > pb->max ? pb->max : 2 * pb->cap;
    uint64_t *q = op_arena_grow(pb->a, pb->p, pb->n * 8, ncap * 8);
    if (!q)
        return op__regions_nomem(err, "merge pairs", ncap * 8);
    pb->p = q;
    pb->cap = ncap;
    return OP_OK;
}

/* One pass over the spans: label sizes; group joins every two labels that a link joins
 * (R1: any non-zero areas); and, when pb is not NULL, one directed pair (r << 32 | q)
 * per link to a span of another non-zero label q of the same area (the merge graph's
 * links, counted before island removal; see drop_island_pairs). */
static op_status scan_labels(const op_chf *chf, const op__labels *lab, uint32_t *size,
                             uint32_t *group, pair_buf *pb, op_err *err)
{
    /* Locals for everything read: the stores below could alias any of it (no strict
     * aliasing), and the pass is one of a rebuild's longest. */
    const uint32_t *const reg = lab->reg;
    const uint8_t *const area = lab->area;
    const uint32_t(*const links)[4] = chf->links;
    for (uint32_t s = 0, ns = chf->span_count; s < ns; s++) {
        uint32_t r = reg[s];
        size[r]++;
        if (r == 0)
            continue;
        const uint32_t *l = links[s];
        uint32_t m0 = l[0], m1 = l[1], m2 = l[2], m3 = l[3];
        /* The usual span: every link to its own label (or none). */
        if ((m0 == OP_NO_LINK || reg[m0] == r) && (m1 == OP_NO_LINK || reg[m1] == r) &&
            (m2 == OP_NO_LINK || reg[m2] == r) && (m3 == OP_NO_LINK || reg[m3] == r))
            continue;
        for (int d = 0; d < 4; d++) {
            uint32_t m = l[d];
            if (m == OP_NO_LINK)
                continue;
            uint32_t q = reg[m];
            if (q == 0 || q == r)
                continue;
            group_union(group, r, q);
            if (pb && area[q] == area[r]) {
                op_status st;
                if (pb->n == pb->cap && (st = pairs_grow(pb, err)) != OP_OK)
                    return st;
                pb->p[pb->n++] = (uint64_t)r << 32 | q;
            }
        }
    }
    return OP_OK;
}

/* A tile's border band (the chf->border cells along each side of the grid) belongs to the
 * neighbouring tiles: a group with a span there is no island (clarifications.md, regions
 * 5), as Recast keeps a region that touches its border band. Marks such labels in band.
 * Whole band rows are one span range (cells are z-major); core rows have two. */
static void mark_band_labels(const op_chf *chf, const op__labels *lab, uint8_t *band)
{
    int b = chf->border, w = chf->width, d = chf->depth;
    if (b <= 0)
        return;
    for (int z = 0; z < d; z++) {
        const uint32_t *row = &chf->cells[(size_t)z * (size_t)w];
        int band_row = z < b || z >= d - b;
        int x0 = band_row ? w : (b < w ? b : w);
        int x1 = band_row ? w : (w - b > x0 ? w - b : x0);
        for (uint32_t i = row[0]; i < row[x0]; i++)
            band[lab->reg[i]] = 1;
        for (uint32_t i = row[x1]; i < row[w]; i++)
            band[lab->reg[i]] = 1;
    }
}

/* Pairs recorded before island removal, minus those naming a removed label: exactly the
 * pairs a scan after the removal finds (a removed label's spans read as 0). */
static size_t drop_island_pairs(uint64_t *pairs, size_t np, const uint8_t *gone)
{
    size_t k = 0;
    for (size_t i = 0; i < np; i++)
        if (!gone[pairs[i] >> 32] && !gone[(uint32_t)pairs[i]])
            pairs[k++] = pairs[i];
    return k;
}

/* Islands (R1): the labels of a group with fewer than min_area spans in all and no span
 * in the band lose their spans; their size becomes 0, as a recount would give (size[0]
 * is never read). band is turned in place into "removed" per label; gsize is scratch of
 * count + 1 entries. Returns whether any went. */
static int remove_islands(const op_chf *chf, op__labels *lab, uint32_t *size, int min_area,
                          uint32_t *group, uint8_t *band, uint32_t *gsize)
{
    uint32_t n = lab->count;
    for (uint32_t r = 1; r <= n; r++) {
        uint32_t g = op__find_root(group, r);
        gsize[g] += size[r];
        band[g] |= band[r]; /* a root is its group's smallest label: r >= g */
    }
    uint8_t *gone = band;
    int any = 0;
    /* Descending, so that a root's group flags are read before its own entry turns into
     * its "removed" flag. */
    for (uint32_t r = n; r >= 1; r--) {
        uint32_t g = group[r]; /* compressed by the loop above */
        gone[r] = gsize[g] < (uint32_t)min_area && !band[g];
        if (gone[r]) {
            size[r] = 0;
            any = 1;
        }
    }
    gone[0] = 0;
    if (any)
        for (uint32_t s = 0; s < chf->span_count; s++)
            if (gone[lab->reg[s]])
                lab->reg[s] = 0;
    return any;
}

/* Adds w links to neighbour nb in list l, growing it from scratch when full. */
static op_status list_add(merge_state *ms, nblist *l, uint32_t nb, uint32_t w, op_err *err)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->nb[i] == nb) {
            l->w[i] += w;
            return OP_OK;
        }
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 4;
        uint32_t *nnb = op_arena_alloc(ms->scratch, (size_t)cap * sizeof *nnb);
        uint32_t *nw = op_arena_alloc(ms->scratch, (size_t)cap * sizeof *nw);
        if (!nnb || !nw)
            return op__regions_nomem(err, "merge lists", (size_t)cap * 8);
        if (l->n) {
            memcpy(nnb, l->nb, (size_t)l->n * sizeof *nnb);
            memcpy(nw, l->w, (size_t)l->n * sizeof *nw);
        }
        l->nb = nnb;
        l->w = nw;
        l->cap = cap;
    }
    l->nb[l->n] = nb;
    l->w[l->n++] = w;
    return OP_OK;
}

/* Removes neighbour nb from l; returns its link count (0 if absent). */
static uint32_t list_take(nblist *l, uint32_t nb)
{
    for (uint32_t i = 0; i < l->n; i++)
        if (l->nb[i] == nb) {
            uint32_t w = l->w[i];
            l->n--;
            l->nb[i] = l->nb[l->n];
            l->w[i] = l->w[l->n];
            return w;
        }
    return 0;
}

/* Merges label a into label b. */
static op_status merge_into(merge_state *ms, uint32_t a, uint32_t b, op_err *err)
{
    nblist *la = &ms->adj[a];
    list_take(&ms->adj[b], a);
    for (uint32_t i = 0; i < la->n; i++) {
        uint32_t nb = la->nb[i], w = la->w[i];
        if (nb == b)
            continue;
        list_take(&ms->adj[nb], a);
        op_status st;
        if ((st = list_add(ms, &ms->adj[nb], b, w, err)) != OP_OK ||
            (st = list_add(ms, &ms->adj[b], nb, w, err)) != OP_OK)
            return st;
    }
    la->n = 0;
    ms->size[b] += ms->size[a];
    ms->size[a] = 0;
    ms->parent[a] = b;
    return op__idset_absorb(&ms->ovl[b], &ms->ovl[a], ms->scratch, err);
}

static op_status build_lists(merge_state *ms, uint64_t *pairs, size_t np, op_err *err)
{
    op__labels *lab = ms->lab;
    op__graph g;
    op_status st = op__graph_build(pairs, np, lab->count, ms->scratch, &g, err);
    if (st != OP_OK)
        return st;
    for (uint32_t r = 0; r <= lab->count; r++) {
        nblist *l = &ms->adj[r];
        l->nb = g.nb + g.start[r];
        l->w = g.w + g.start[r];
        l->n = l->cap = g.start[r + 1] - g.start[r];
    }
    return OP_OK;
}

/* R2: the neighbour of r with the most shared links among those that share no column
 * with r (smallest id on ties), 0 when there is none. The neighbour lists hold current
 * labels (merge_into renames them); r's overlap set is resolved through the merges. */
static uint32_t merge_target(merge_state *ms, uint32_t r)
{
    const nblist *l = &ms->adj[r];
    if (l->n == 0)
        return 0;
    op__idset_resolve(&ms->ovl[r], ms->parent, r);
    uint32_t best = 0, bw = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        if (!(l->w[i] > bw || (l->w[i] == bw && l->nb[i] < best)))
            continue;
        if (op__idset_has(&ms->ovl[r], l->nb[i]))
            continue;
        best = l->nb[i];
        bw = l->w[i];
    }
    return best;
}

static op_status merge_small(merge_state *ms, uint64_t *pairs, size_t np, int merge_area,
                             op_err *err)
{
    op_status st = build_lists(ms, pairs, np, err);
    if (st != OP_OK)
        return st;
    for (int merged = 1; merged;) {
        merged = 0;
        for (uint32_t r = 1; r <= ms->lab->count; r++) {
            if (ms->size[r] == 0 || ms->size[r] >= (uint32_t)merge_area)
                continue;
            uint32_t best = merge_target(ms, r);
            if (best == 0)
                continue;
            if ((st = merge_into(ms, r, best, err)) != OP_OK)
                return st;
            merged = 1;
        }
    }
    return OP_OK;
}

/* Numbering in order of first span, each span through its label's final owner
 * (root[r], r itself without merging); one pass that also writes the result. */
static op_status number_regions(const op_chf *chf, const op__labels *lab, const uint32_t *root,
                                uint32_t *newid, op_arena *out, op_regions *res, op_err *err)
{
    op_arena_mark mark = op_arena_get_mark(out);
    uint16_t *out_reg = op_arena_alloc(out, ((size_t)chf->span_count + 1) * sizeof *out_reg);
    if (!out_reg)
        return op__regions_nomem(err, "result", (size_t)chf->span_count * 2);
    uint32_t k = 0;
    const uint32_t *const reg = lab->reg;
    for (uint32_t s = 0, ns = chf->span_count; s < ns; s++) {
        uint32_t r = root[reg[s]];
        if (r != 0 && newid[r] == 0)
            newid[r] = ++k;
        out_reg[s] = (uint16_t)newid[r];
    }
    if (k > OP_MAX_REGIONS) {
        op_arena_release(out, mark);
        return op_err_set(err, OP_ELIMIT, "regions: %u regions > OP_MAX_REGIONS (%d)", (unsigned)k,
                          OP_MAX_REGIONS);
    }
    res->span_count = chf->span_count;
    res->region_count = (int)k;
    res->reg = out_reg;
    res->region_area = op_arena_calloc(out, (size_t)k + 1, 1);
    if (!res->region_area) {
        op_arena_release(out, mark);
        return op__regions_nomem(err, "result", (size_t)chf->span_count * 2 + k + 1);
    }
    for (uint32_t r = 1; r <= lab->count; r++)
        if (newid[r] != 0)
            res->region_area[newid[r]] = lab->area[r];
    return OP_OK;
}

/* The same-area labels each label shares a column with (R2), from the labels after
 * island removal. */
static op_status overlap_sets(const op_chf *chf, merge_state *ms, op_err *err)
{
    op__labels *lab = ms->lab;
    ms->ovl = op_arena_alloc(ms->scratch, ((size_t)lab->count + 1) * sizeof *ms->ovl);
    if (!ms->ovl)
        return op__regions_nomem(err, "overlap sets", ((size_t)lab->count + 1) * sizeof *ms->ovl);
    return op__overlap_sets(chf, lab->reg, lab->area, 1, lab->count, ms->scratch, ms->ovl, err);
}

static op_status merge_step(const op_chf *chf, merge_state *ms, uint64_t *pairs, size_t np,
                            int merge_area, op_err *err)
{
    size_t nl = (size_t)ms->lab->count + 1;
    ms->adj = op_arena_calloc(ms->scratch, nl, sizeof *ms->adj);
    if (!ms->adj)
        return op__regions_nomem(err, "filter", nl * sizeof *ms->adj);
    op_status st = overlap_sets(chf, ms, err);
    if (st == OP_OK)
        st = merge_small(ms, pairs, np, merge_area, err);
    if (st != OP_OK)
        return st;
    for (uint32_t r = 1; r < nl; r++)
        op__find_root(ms->parent, r); /* compresses: parent[r] is now the root */
    return OP_OK;
}

op_status op__filter(const op_chf *chf, op__labels *lab, int min_area, int merge_area,
                     op_arena *out, op_arena *scratch, op_regions *res, op_err *err)
{
    size_t nl = (size_t)lab->count + 1;
    merge_state ms = {lab, scratch, NULL, NULL, NULL, NULL};
    uint8_t *band = op_arena_calloc(scratch, nl, 1);
    uint32_t *group = op_arena_alloc(scratch, nl * sizeof *group);
    uint32_t *gsize = op_arena_calloc(scratch, nl, sizeof *gsize);
    ms.size = op_arena_calloc(scratch, nl, sizeof *ms.size);
    ms.parent = op_arena_alloc(scratch, nl * sizeof *ms.parent);
    uint32_t *newid = op_arena_calloc(scratch, nl, sizeof *newid);
    if (!band || !group || !gsize || !ms.size || !ms.parent || !newid)
        return op__regions_nomem(err, "filter", nl * 21);
    /* Pairs start at a sixteenth of the links' bound (a tile's label boundaries hold a
     * few links in a hundred) and grow as found. */
    pair_buf pb = {scratch, NULL, 0, (size_t)chf->span_count / 4 + 64,
                   (size_t)chf->span_count * 4 + 1};
    if (merge_area > 0) {
        pb.cap = pb.cap > pb.max ? pb.max : pb.cap;
        pb.p = op_arena_alloc(scratch, pb.cap * 8);
        if (!pb.p)
            return op__regions_nomem(err, "merge pairs", pb.cap * 8);
    }
    for (uint32_t r = 0; r < nl; r++)
        group[r] = ms.parent[r] = r;
    op_status st = scan_labels(chf, lab, ms.size, group, merge_area > 0 ? &pb : NULL, err);
    if (st != OP_OK)
        return st;
    mark_band_labels(chf, lab, band);
    if (remove_islands(chf, lab, ms.size, min_area, group, band, gsize) && pb.p)
        pb.n = drop_island_pairs(pb.p, pb.n, band);
    if (merge_area > 0 && (st = merge_step(chf, &ms, pb.p, pb.n, merge_area, err)) != OP_OK)
        return st;
    return number_regions(chf, lab, ms.parent, newid, out, res, err);
}
