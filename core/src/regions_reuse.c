/*
 * Reuse of a capture build's regions (docs/spec/build3d-runtime.md §5.9): a rebuild whose
 * regions stage would read exactly what the capture's read (the same field arrays, frame,
 * span layers and settings, byte-equal areas) gets the capture's regions after the border
 * cut, copied, instead of running the partition, the filter and the cut.
 */
#include <string.h>

#include "onepath/limits.h"
#include "regions_internal.h"

/* Rules 1 and 2. */
static int field_fits(const op__region_base *b, const op_chf *chf, const uint16_t *span_layer,
                      const op_region_settings *rs, int tile_cells)
{
    if (!b || !b->reg || !chf || !rs)
        return 0;
    /* Rule 1: the entry's field (its arrays, so its spans, floors and links) and frame. */
    if (chf->cells != b->cells || chf->y != b->y ||
        (const void *)chf->links != (const void *)b->links || chf->span_count != b->span_count ||
        chf->width != b->width || chf->depth != b->depth || chf->border != b->border ||
        tile_cells != b->tile_cells || span_layer != b->span_layer)
        return 0;
    /* Rule 2: the region settings. */
    return rs->partition == b->rs.partition && rs->min_region_area == b->rs.min_region_area &&
           rs->merge_region_area == b->rs.merge_region_area;
}

/* Rules 1-3. The distance field (watershed) needs no test of its own: it is a function of
 * the links and the areas (build3d-spans.md §8), both compared here. */
int op__regions_base_fits(const op__region_base *b, const op_chf *chf, const uint16_t *span_layer,
                          const op_region_settings *rs, int tile_cells)
{
    if (!field_fits(b, chf, span_layer, rs, tile_cells))
        return 0;
    /* Rule 3: every span's area, walkable or not, core or border band. */
    return memcmp(chf->areas, b->areas, chf->span_count) == 0;
}

static void *copy(op_arena *out, const void *src, size_t n)
{
    void *p = op_arena_alloc(out, n + 1);
    if (p && n)
        memcpy(p, src, n);
    return p;
}

op_status op__regions_from_base(const op__region_base *b, op_arena *out, op_regions *res,
                                uint16_t **region_layer, int *border_region)
{
    uint16_t *reg = copy(out, b->reg, (size_t)b->span_count * sizeof *reg);
    uint8_t *area = copy(out, b->region_area, (size_t)b->region_count + 1);
    uint16_t *rl =
        b->region_layer ? copy(out, b->region_layer, (size_t)b->nregion_layer * sizeof *rl) : NULL;
    if (!reg || !area || (b->region_layer && !rl))
        return OP_ENOMEM;
    res->span_count = b->span_count;
    res->reg = reg;
    res->region_count = b->region_count;
    res->region_area = area;
    *region_layer = rl;
    *border_region = b->border_region;
    return OP_OK;
}

/* ---- §5.11: regions of unchanged, settled span layers ---- */

/* Runs BODY with [i0, i1) set to each span range of chf's border band as the island filter
 * sees it (R1, clarifications.md regions 5: chf->border cells on each side). */
#define OP__BAND_RANGES(chf, BODY)                                                                 \
    do {                                                                                           \
        int b_ = (chf)->border, w_ = (chf)->width, d_ = (chf)->depth;                              \
        for (int z_ = 0; z_ < d_; z_++) {                                                          \
            const uint32_t *row_ = &(chf)->cells[(size_t)z_ * (size_t)w_];                         \
            int band_row_ = z_ < b_ || z_ >= d_ - b_;                                              \
            int x0_ = band_row_ ? w_ : (b_ < w_ ? b_ : w_);                                        \
            int x1_ = band_row_ ? w_ : (w_ - b_ > x0_ ? w_ - b_ : x0_);                            \
            uint32_t i0, i1;                                                                       \
            i0 = row_[0], i1 = row_[x0_];                                                          \
            BODY;                                                                                  \
            i0 = row_[x1_], i1 = row_[w_];                                                         \
            BODY;                                                                                  \
        }                                                                                          \
    } while (0)

op_status op__region_layers_record(const op_chf *chf, const uint16_t *span_layer,
                                   const op_regions *cut, int border_region, int min_area,
                                   op_arena *scratch, uint32_t **first, uint8_t **settled,
                                   int *nlayers, op_err *err)
{
    *first = NULL;
    *settled = NULL;
    *nlayers = 0;
    uint32_t n = chf->span_count;
    int nl = 0;
    for (uint32_t s = 0; s < n; s++)
        if (span_layer[s] != OP_NO_LAYER && span_layer[s] + 1 > nl)
            nl = span_layer[s] + 1;
    op__labels lab;
    op_status st = op__components(chf, span_layer, scratch, &lab, err);
    if (st != OP_OK)
        return st;
    size_t nlab = (size_t)lab.count + 1;
    uint32_t *start = op_arena_calloc(scratch, nlab, sizeof *start);
    uint32_t *size = op_arena_calloc(scratch, nlab, sizeof *size);
    uint8_t *band = op_arena_calloc(scratch, nlab, 1);
    uint32_t *fst = op_arena_calloc(scratch, (size_t)border_region + 1, sizeof *fst);
    uint8_t *set = op_arena_alloc(scratch, (size_t)nl + 1);
    if (!start || !size || !band || !fst || !set)
        return op__regions_nomem(err, "region layers", nlab * 9);
    for (uint32_t s = n; s-- > 0;) { /* descending: start[] ends at the smallest span */
        uint32_t r = lab.reg[s];
        start[r] = s;
        size[r]++;
    }
    OP__BAND_RANGES(chf, for (uint32_t i = i0; i < i1; i++) band[lab.reg[i]] = 1);
    memset(set, 1, (size_t)nl + 1);
    /* The survivors are the labels whose spans kept a region (island removal takes whole
     * labels); with layers each is one region, numbered in label (= first span) order. */
    int k = 0;
    for (uint32_t r = 1; r < nlab; r++) {
        uint16_t L = span_layer[start[r]];
        if (L != OP_NO_LAYER && size[r] < (uint32_t)min_area && !band[r])
            set[L] = 0;
        if (cut->reg[start[r]] == 0)
            continue;
        if (++k >= border_region)
            return OP_OK; /* not the labelling's regions: keep nothing */
        fst[k] = start[r];
    }
    if (k != border_region - 1)
        return OP_OK;
    *first = fst;
    *settled = set;
    *nlayers = nl;
    return OP_OK;
}

op_status op__region_layers_spans(const uint16_t *span_layer, uint32_t n, int nlayers,
                                  op_arena *scratch, uint32_t **start, uint16_t **spans,
                                  op_err *err)
{
    *start = NULL;
    *spans = NULL;
    if (n > 0x10000u)
        return OP_OK;
    uint32_t *st = op_arena_calloc(scratch, (size_t)nlayers + 2, sizeof *st);
    if (!st)
        return op__regions_nomem(err, "layer spans", ((size_t)nlayers + 2) * 4);
    /* A counting sort: st[L + 1] counts layer L's spans, then the prefix sums. */
    for (uint32_t s = 0; s < n; s++)
        if (span_layer[s] < nlayers)
            st[span_layer[s] + 1]++;
    for (int L = 1; L <= nlayers; L++)
        st[L] += st[L - 1];
    uint16_t *sp = op_arena_alloc(scratch, ((size_t)st[nlayers] + 1) * sizeof *sp);
    uint32_t *fill = op_arena_alloc(scratch, ((size_t)nlayers + 1) * sizeof *fill);
    if (!sp || !fill)
        return op__regions_nomem(err, "layer spans", (size_t)st[nlayers] * 4);
    memcpy(fill, st, (size_t)nlayers * sizeof *fill);
    for (uint32_t s = 0; s < n; s++)
        if (span_layer[s] < nlayers)
            sp[fill[span_layer[s]]++] = (uint16_t)s;
    *start = st;
    *spans = sp;
    return OP_OK;
}

int op__regions_layers_fit(const op__region_base *b, const op_chf *chf, const uint16_t *span_layer,
                           const op_region_settings *rs, int tile_cells)
{
    return b && b->first && b->settled && span_layer && rs &&
           rs->partition == OP_PARTITION_LAYERS && field_fits(b, chf, span_layer, rs, tile_cells);
}

/* Union-find over component ids; the smaller root stays. */
static uint32_t root_of(uint32_t *p, uint32_t r)
{
    while (p[r] != r) {
        p[r] = p[p[r]];
        r = p[r];
    }
    return r;
}

enum { ANCHORED = 1, IN_BAND = 2 };

op_status op__regions_layers_local(const op__region_base *b, const op_chf *chf, int min_area,
                                   int tile_cells, op_arena *out, op_arena *scratch,
                                   op_regions *res, uint16_t **region_layer, int *border_region,
                                   int *skipped, int *kept, uint16_t **kept_from, op_err *err)
{
    *kept = 0;
    if (kept_from)
        *kept_from = NULL;
    const uint32_t n = chf->span_count;
    const int nl = b->nlayers;
    const uint16_t *const sl = b->span_layer;
    const uint8_t *const areas = chf->areas;
    const uint32_t(*const links)[4] = chf->links;
    /* keep[L]: settled and no area of L changed; keep[nl] stands for "no layer" (never). */
    uint8_t *keep = op_arena_alloc(scratch, (size_t)nl + 1);
    if (!keep)
        return op__regions_nomem(err, "region layers", (size_t)nl + 1);
    memcpy(keep, b->settled, (size_t)nl);
    keep[nl] = 0;
    int nkept = 0;
    for (int L = 0; L < nl; L++)
        nkept += keep[L];
    /* The compare stops as soon as no layer is left to keep (a one-floor tile under an
     * obstacle: at its first changed span). */
    for (uint32_t s0 = 0; s0 < n && nkept > 0; s0 += 64) {
        uint32_t s1 = n - s0 < 64 ? n : s0 + 64;
        if (memcmp(areas + s0, b->areas + s0, s1 - s0) == 0)
            continue;
        for (uint32_t s = s0; s < s1; s++)
            if (areas[s] != b->areas[s] && sl[s] < nl && keep[sl[s]]) {
                keep[sl[s]] = 0;
                nkept--;
            }
    }
    if (nkept == 0)
        return OP_OK;
        /* Class of a span: kept (its layer's regions are the base's) or relabelled. */
#define OP__KEPT(s) (sl[s] < nl && keep[sl[s]])
    /* Steps 1 and 2 in one flood: components of the relabelled walkable spans (flood starts
     * in index order), and while each is flooded its links to other components (R1 groups:
     * links are mutual, so a link to a component flooded later is seen from that one) and
     * to walkable spans of kept layers (anchors). Component arrays are bounded by the span
     * count. */
    uint32_t *lab = op_arena_calloc(scratch, (size_t)n + 1, sizeof *lab);
    uint32_t *queue = op_arena_alloc(scratch, ((size_t)n + 1) * sizeof *queue);
    uint32_t *start = op_arena_alloc(scratch, ((size_t)n + 2) * sizeof *start);
    uint32_t *parent = op_arena_alloc(scratch, ((size_t)n + 2) * sizeof *parent);
    uint32_t *size = op_arena_alloc(scratch, ((size_t)n + 2) * sizeof *size);
    uint8_t *flag = op_arena_alloc(scratch, (size_t)n + 2);
    if (!lab || !queue || !start || !parent || !size || !flag)
        return op__regions_nomem(err, "region layers", (size_t)n * 21);
    uint32_t count = 0, tail = 0;
    parent[0] = 0;
    flag[0] = 0;
    /* Flood starts: the walkable relabelled spans in index order. A span without a layer
     * is never walkable here (§2.2), so when one span layer is relabelled (one floor
     * changed) they are among that layer's spans, which the entry lists in index order:
     * the spans of kept layers and those without a layer are not visited. */
    int nrel = 0, rel = -1;
    for (int L = 0; L < nl; L++)
        if (!keep[L]) {
            nrel++;
            rel = L;
        }
    const uint16_t *list = NULL;
    uint32_t nstart = n;
    if (nrel == 1 && b->layer_start && b->layer_spans) {
        list = b->layer_spans + b->layer_start[rel];
        nstart = b->layer_start[rel + 1] - b->layer_start[rel];
    }
    for (uint32_t i = 0; i < nstart; i++) {
        uint32_t s = list ? list[i] : i;
        /* A listed span is of the relabelled layer: no kept test. */
        if (areas[s] == 0 || lab[s] != 0 || (!list && OP__KEPT(s)))
            continue;
        uint32_t id = ++count, head = tail, h0 = tail;
        uint8_t fl = 0;
        start[id] = s;
        parent[id] = id;
        lab[s] = id;
        queue[tail++] = s;
        while (head < tail) {
            uint32_t c = queue[head++];
            const uint32_t *l = links[c];
            uint8_t ac = areas[c];
            uint16_t kc = sl[c];
            /* The usual link first: to a span already in this component. */
#define OP__VISIT(d)                                                                               \
    do {                                                                                           \
        uint32_t m = l[d], q;                                                                      \
        if (m == OP_NO_LINK || (q = lab[m]) == id || areas[m] == 0)                                \
            break;                                                                                 \
        if (q == 0) {                                                                              \
            if (areas[m] == ac && sl[m] == kc) {                                                   \
                lab[m] = id;                                                                       \
                queue[tail++] = m;                                                                 \
            } else if (OP__KEPT(m)) {                                                              \
                fl |= ANCHORED;                                                                    \
            } /* else a relabelled span flooded later: it sees this link back */                   \
            break;                                                                                 \
        }                                                                                          \
        uint32_t x = root_of(parent, id), y = root_of(parent, q);                                  \
        if (x != y)                                                                                \
            parent[x > y ? x : y] = x < y ? x : y;                                                 \
    } while (0)
            OP__VISIT(0);
            OP__VISIT(1);
            OP__VISIT(2);
            OP__VISIT(3);
#undef OP__VISIT
        }
        size[id] = tail - h0;
        flag[id] = fl;
    }
    size_t nc = (size_t)count + 1;
    uint32_t *gsize = op_arena_calloc(scratch, nc, sizeof *gsize);
    uint8_t *gflag = op_arena_calloc(scratch, nc, 1);
    uint32_t *newid = op_arena_calloc(scratch, nc, sizeof *newid);
    uint32_t *fb = op_arena_calloc(scratch, (size_t)b->border_region + 1, sizeof *fb);
    if (!gsize || !gflag || !newid || !fb)
        return op__regions_nomem(err, "region layers", nc * 9);
    OP__BAND_RANGES(chf, for (uint32_t i = i0; i < i1; i++) flag[lab[i]] |= IN_BAND);
    for (uint32_t r = 1; r < nc; r++) {
        uint32_t g = root_of(parent, r);
        gsize[g] += size[r];
        gflag[g] |= flag[r];
    }
    /* Step 3: numbering by first span, kept base regions and surviving components merged
     * (both lists are already in first-span order). */
    const uint16_t *rlb = b->region_layer;
    uint32_t k = 0, j = 1;
    for (int r = 1; r <= b->border_region; r++) {
        int base_next = r < b->border_region && rlb[r] < nl && keep[rlb[r]];
        if (r < b->border_region && !base_next)
            continue;
        for (; j < nc && (r == b->border_region || start[j] < b->first[r]); j++) {
            uint32_t g = root_of(parent, j);
            if ((gflag[g] & (ANCHORED | IN_BAND)) || gsize[g] >= (uint32_t)min_area)
                newid[j] = ++k;
        }
        if (base_next)
            fb[r] = ++k;
    }
    if (k + 1 > OP_MAX_REGIONS)
        return OP_OK; /* the full path reports the limit */
    /* Step 4: the cut, each row's core range as tile_pipeline.c's cut_border takes it. */
    uint16_t *reg = op_arena_alloc(out, ((size_t)n + 1) * sizeof *reg);
    uint8_t *rarea = op_arena_calloc(out, (size_t)k + 2, 1);
    uint16_t *rl = op_arena_alloc(out, ((size_t)k + 1) * sizeof *rl);
    uint16_t *from = kept_from ? op_arena_calloc(out, (size_t)k + 2, sizeof *from) : NULL;
    if (!reg || !rarea || !rl || (kept_from && !from))
        return op__regions_nomem(err, "region layers", (size_t)n * 2 + k * 3);
    const uint16_t border_id = (uint16_t)(k + 1);
    const uint16_t *const breg = b->reg;
    /* A kept span's region through its base id (every walkable span of a kept layer has
     * one, the layer being settled): bmap[b] = b's new number for a kept region, the border
     * region for the base's; 0 for the others, which no kept span holds. A relabelled
     * walkable span's through its component (0 when removed); unwalkable spans have none. */
    uint16_t *bmap = op_arena_alloc(scratch, ((size_t)b->border_region + 1) * sizeof *bmap);
    if (!bmap)
        return op__regions_nomem(err, "region layers", (size_t)b->border_region * 2);
    for (int r = 0; r < b->border_region; r++)
        bmap[r] = (uint16_t)fb[r];
    bmap[b->border_region] = border_id;
    int bb = chf->border, inside = 0;
    for (int z = 0; z < chf->depth; z++) {
        const uint32_t *row = &chf->cells[(size_t)z * (size_t)chf->width];
        int core_row = z >= bb && z < bb + tile_cells && chf->width > bb;
        int x0 = core_row ? bb : chf->width;
        int x1 =
            core_row ? (bb + tile_cells < chf->width ? bb + tile_cells : chf->width) : chf->width;
        for (uint32_t s = row[0]; s < row[x0]; s++) /* band */
            reg[s] = areas[s] == 0 ? 0 : lab[s] ? (newid[lab[s]] ? border_id : 0) : bmap[breg[s]];
        for (uint32_t s = row[x0]; s < row[x1]; s++) { /* core */
            uint16_t v = areas[s] == 0 ? 0 : lab[s] ? (uint16_t)newid[lab[s]] : bmap[breg[s]];
            inside |= v != 0;
            reg[s] = v;
        }
        for (uint32_t s = row[x1]; s < row[chf->width]; s++) /* band */
            reg[s] = areas[s] == 0 ? 0 : lab[s] ? (newid[lab[s]] ? border_id : 0) : bmap[breg[s]];
    }
#undef OP__KEPT
    rl[0] = OP_NO_LAYER;
    for (int r = 1; r < b->border_region; r++)
        if (fb[r]) {
            rl[fb[r]] = rlb[r];
            rarea[fb[r]] = b->region_area[r];
            if (from)
                from[fb[r]] = (uint16_t)r;
        }
    for (uint32_t r = 1; r < nc; r++)
        if (newid[r]) {
            rl[newid[r]] = sl[start[r]];
            rarea[newid[r]] = areas[start[r]];
        }
    res->span_count = n;
    res->reg = reg;
    res->region_count = border_id;
    res->region_area = rarea;
    *region_layer = rl;
    *border_region = border_id;
    *skipped = !inside;
    *kept = nkept;
    if (kept_from)
        *kept_from = from;
    return OP_OK;
}
