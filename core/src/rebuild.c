/*
 * Cached tile rebuilds (docs/spec/build3d-runtime.md §4.4, §5): the rebuild entry, one
 * malloc'd block holding a copy of a tile's base (compact heightfield before any volume, its
 * eroded areas, its span layers), the builds from scratch and from an entry with an explicit
 * volume set, and the tiles a volume can reach.
 *
 * The entry outlives every arena: a cache keeps it for as long as its budget allows, and a
 * rebuild only reads it, so one entry may serve several rebuilds at once.
 */
#include <stdlib.h>
#include <string.h>

#include "contours_internal.h"
#include "detail_internal.h"
#include "level_internal.h"
#include "onepath/rebuild.h"
#include "polys_internal.h"
#include "regions_internal.h"
#include "volumes_internal.h"

struct op_rebuild_entry {
    size_t bytes;    /* the whole allocation */
    size_t prefetch; /* its first bytes, which a rebuild reads: all but the clearances */
    int tx, tz;
    int has_layers;
    op__tile_base base;        /* pointers into this block */
    op__detail_base detail;    /* base.detail points here when the capture kept the detail */
    op__contour_base contours; /* base.contours points here when it kept the contours */
    op__region_base regions;   /* base.regions points here when it kept the regions */
    op__poly_base polys;       /* base.polys points here when it kept the polygons */
    const uint16_t *reg;       /* region per span after the border cut (all three) */
};

/* The contours the capture keeps (§5.7): the tile's contour stage run again on the build's
 * field and regions, every region's (the border band's too), with its counts per region. */
typedef struct contour_keep {
    op_contour_set set;
    op__contour_record rec;
    op_contour_settings cs;
    int with_polys; /* polys holds the polygon stage's record on set (§5.12) */
    op__poly_base polys;
    uint32_t *across_first, *across; /* §5.7: the links across each region (scratch) */
} contour_keep;

/* Rule 11's record (partition = layers), made in scratch before the entry is sized. */
typedef struct layer_keep {
    uint32_t *first; /* NULL: none */
    uint8_t *settled;
    int nlayers;
    uint32_t *lstart; /* each span layer's spans (op__region_layers_spans), or NULL */
    uint16_t *lspans;
} layer_keep;

#define ALIGN    16
#define OP__LINE 64 /* a cache line (x86-64, most arm64) */

static size_t up(size_t n)
{
    return (n + (ALIGN - 1)) & ~(size_t)(ALIGN - 1);
}

/* Copies n bytes of src to *at and advances it. */
static void *put(unsigned char **at, const void *src, size_t n)
{
    void *p = *at;
    if (n)
        memcpy(p, src, n);
    *at += up(n);
    return p;
}

/* What the capture keeps of the build's detail stage (§5.6): only a tile built in one piece
 * that ran its detail stage. */
static int keeps_detail(const op_tile_stages *st, op_stage last)
{
    return !st->skipped && !st->layer_by_layer && last >= OP_STAGE_DETAIL && st->regions.reg &&
           st->polys.npolys > 0 && st->detail.npolys == st->polys.npolys;
}

/* What the capture keeps of the contour stage (§5.7): a tile built in one piece that ran it.
 * cs gets the settings the tile pipeline's contour stage uses (tile_pipeline.c). */
static int keeps_contours(const op_level *l, const op_tile_stages *st, op_stage last,
                          op_contour_settings *cs)
{
    op_contour_settings_default(cs);
    cs->max_error = l->settings.contour_max_error;
    cs->max_edge_length = (int)(l->settings.max_edge_length / l->settings.cell_size + 0.5);
    cs->straight_region_borders = l->settings.straight_region_borders;
    cs->border_region = st->border_region;
    return !st->skipped && !st->layer_by_layer && last >= OP_STAGE_CONTOURS && st->regions.reg &&
           st->regions.region_count > 0;
}

/* What the capture keeps of the regions stage (§5.9): a tile that ran it and is not
 * skipped after the border cut. */
static int keeps_regions(const op_tile_stages *st, op_stage last)
{
    return !st->skipped && last >= OP_STAGE_REGIONS && st->regions.reg &&
           st->regions.region_count > 0 && st->border_region > 0;
}

/* The regions' areas are the eroded ones when the capture's volumes changed no area. */
static int areas_are_eroded(const op__tile_base *b, const op_tile_stages *st)
{
    return memcmp(st->chf.areas, b->eroded, st->chf.span_count) == 0;
}

static size_t region_bytes(const op__tile_base *b, const op_tile_stages *st, const layer_keep *lk)
{
    size_t n = st->chf.span_count;
    return (areas_are_eroded(b, st) ? 0 : up(n)) + up((size_t)st->regions.region_count + 1) +
           (st->region_layer ? up((size_t)st->border_region * 2) : 0) +
           (lk->first ? up((size_t)st->border_region * 4) + up((size_t)lk->nlayers) +
                            (lk->lstart ? up(((size_t)lk->nlayers + 1) * 4) +
                                              up((size_t)lk->lstart[lk->nlayers] * 2)
                                        : 0)
                      : 0);
}

static void put_regions(unsigned char **at, const op_level *l, op_rebuild_entry *e,
                        const op_tile_stages *st, const layer_keep *lk)
{
    op__region_base *b = &e->regions;
    uint32_t n = st->chf.span_count;
    memset(b, 0, sizeof *b);
    b->cells = e->base.chf.cells;
    b->y = e->base.chf.y;
    b->links = (const uint32_t(*)[4])e->base.chf.links;
    b->span_layer = e->base.span_layer;
    b->span_count = n;
    b->width = e->base.chf.width;
    b->depth = e->base.chf.depth;
    b->border = e->base.chf.border;
    b->tile_cells = l->grid.tile_cells;
    b->areas = areas_are_eroded(&e->base, st) ? e->base.eroded : put(at, st->chf.areas, n);
    b->reg = e->reg;
    b->region_count = st->regions.region_count;
    b->region_area = put(at, st->regions.region_area, (size_t)st->regions.region_count + 1);
    b->border_region = st->border_region;
    if (st->region_layer) {
        /* region_layer covers the regions below the border band's id. */
        b->nregion_layer = st->border_region;
        b->region_layer = put(at, st->region_layer, (size_t)st->border_region * 2);
    }
    b->rs.partition = l->settings.partition;
    b->rs.min_region_area = l->settings.min_region_area;
    b->rs.merge_region_area = l->settings.merge_region_area;
    if (lk->first) {
        b->first = put(at, lk->first, (size_t)st->border_region * 4);
        b->settled = put(at, lk->settled, (size_t)lk->nlayers);
        b->nlayers = lk->nlayers;
        if (lk->lstart) {
            b->layer_start = put(at, lk->lstart, ((size_t)lk->nlayers + 1) * 4);
            b->layer_spans = put(at, lk->lspans, (size_t)lk->lstart[lk->nlayers] * 2);
        }
    }
    e->base.regions = b;
}

static size_t detail_bytes(const op_tile_stages *st)
{
    const op_poly_mesh *m = &st->polys;
    const op_detail_mesh *d = &st->detail;
    return up((size_t)m->nverts * 12) + up((size_t)m->npolys * (size_t)m->nvp * 4) +
           up((size_t)m->npolys * 2) + up((size_t)m->npolys * 16) + up((size_t)d->nverts * 12) +
           up((size_t)d->ntris * 4);
}

static void put_detail(unsigned char **at, const op_level *l, op_rebuild_entry *e,
                       const op_tile_stages *st)
{
    const op_poly_mesh *m = &st->polys;
    const op_detail_mesh *d = &st->detail;
    op__detail_base *b = &e->detail;
    memset(b, 0, sizeof *b);
    b->cells = e->base.chf.cells;
    b->y = e->base.chf.y;
    b->width = e->base.chf.width;
    b->depth = e->base.chf.depth;
    b->span_count = st->chf.span_count;
    b->reg = e->reg;
    b->mesh.nverts = m->nverts;
    b->mesh.npolys = m->npolys;
    b->mesh.nvp = m->nvp;
    b->mesh.frame = m->frame;
    b->mesh.verts = put(at, m->verts, (size_t)m->nverts * 12);
    b->mesh.polys = put(at, m->polys, (size_t)m->npolys * (size_t)m->nvp * 4);
    b->mesh.regs = put(at, m->regs, (size_t)m->npolys * 2);
    b->detail.npolys = d->npolys;
    b->detail.nverts = d->nverts;
    b->detail.ntris = d->ntris;
    b->detail.meshes = put(at, d->meshes, (size_t)d->npolys * 16);
    b->detail.verts = put(at, d->verts, (size_t)d->nverts * 12);
    b->detail.tris = put(at, d->tris, (size_t)d->ntris * 4);
    b->min_row = st->min_row;
    b->ds.sample_distance = l->settings.detail_sample_distance; /* as tile_pipeline.c's */
    b->ds.max_error = l->settings.detail_max_error;
    b->ds.walkable_climb = l->span.walkable_climb;
    e->base.detail = b;
}

static size_t contour_bytes(const contour_keep *k, int nregions)
{
    size_t n = up((size_t)k->set.count * sizeof(op_contour)) +
               3 * up(((size_t)nregions + 2) * sizeof(int)) + up((size_t)nregions + 1) +
               up(((size_t)nregions + 1) * sizeof(uint32_t)) + up(((size_t)nregions + 3) * 4) +
               up(((size_t)k->across_first[nregions + 1] + 1) * 4) +
               up(op__stretch_bytes(&k->rec.stretches));
    for (int i = 0; i < k->set.count; i++)
        n += up((size_t)k->set.contours[i].nverts * sizeof(op_contour_vert));
    return n;
}

static void put_contours(unsigned char **at, op_rebuild_entry *e, const op_tile_stages *st,
                         const contour_keep *k)
{
    op__contour_base *b = &e->contours;
    int nr = st->regions.region_count;
    memset(b, 0, sizeof *b);
    b->cells = e->base.chf.cells;
    b->y = e->base.chf.y;
    b->links = (const uint32_t(*)[4])e->base.chf.links;
    b->span_count = st->chf.span_count;
    b->reg = e->reg;
    b->region_count = nr;
    b->region_area = put(at, st->regions.region_area, (size_t)nr + 1);
    b->max_error = k->cs.max_error;
    b->max_edge_length = k->cs.max_edge_length;
    b->straight_region_borders = k->cs.straight_region_borders;
    b->border_region = k->cs.border_region;
    /* §5.13: the stretches the capture's simplification refined. */
    b->stretches = op__stretch_pack(&k->rec.stretches, *at);
    *at += up(op__stretch_bytes(&k->rec.stretches));
    op_contour *c = put(at, k->set.contours, (size_t)k->set.count * sizeof *c);
    for (int i = 0; i < k->set.count; i++) {
        c[i].verts =
            put(at, k->set.contours[i].verts, (size_t)c[i].nverts * sizeof(op_contour_vert));
        c[i].raw = (op_raw_loop){NULL, 0};
        c[i].raw_holes = NULL;
        c[i].nraw_holes = 0;
    }
    b->contours = c;
    b->first = put(at, k->rec.first, ((size_t)nr + 2) * sizeof(int));
    b->fallbacks = put(at, k->rec.fallbacks, ((size_t)nr + 2) * sizeof(int));
    b->dropped = put(at, k->rec.dropped, ((size_t)nr + 2) * sizeof(int));
    b->across_first = put(at, k->across_first, ((size_t)nr + 3) * 4);
    b->across = put(at, k->across, ((size_t)k->across_first[nr + 1] + 1) * 4);
    /* Spans a region: the plan's pass then skips the spans whose id is unchanged unread. */
    uint32_t *spans = put(at, NULL, 0);
    memset(spans, 0, ((size_t)nr + 1) * sizeof *spans);
    for (uint32_t i = 0; i < st->chf.span_count; i++)
        spans[e->reg[i]]++;
    *at += up(((size_t)nr + 1) * sizeof *spans);
    b->spans = spans;
    e->base.contours = b;
}

static size_t poly_bytes(const op__poly_base *p)
{
    return up((size_t)p->count * sizeof *p->contours) + up((size_t)p->count * sizeof(int)) +
           3 * up(p->nkept * 4) + up(p->npolys) + 2 * up(p->npolys * (size_t)p->nvp * 4);
}

/* The record's contours are the polygon stage's: the kept contours of the regions below the
 * border region, in order; their vertices are the entry's copies (put_contours). */
static void put_polys(unsigned char **at, op_rebuild_entry *e, const contour_keep *k)
{
    const op__poly_base *r = &k->polys;
    op__poly_base *b = &e->polys;
    *b = *r;
    size_t nvp = (size_t)r->nvp;
    b->contours = put(at, r->contours, (size_t)r->count * sizeof *r->contours);
    b->order = put(at, r->order, (size_t)r->count * sizeof(int));
    b->keep = put(at, r->keep, r->nkept * 4);
    b->weld_rep = put(at, r->weld_rep, r->nkept * 4);
    b->same_nb = put(at, r->same_nb, r->nkept * 4);
    b->poly_nv = put(at, r->poly_nv, r->npolys);
    b->poly_v = put(at, r->poly_v, r->npolys * nvp * 4);
    b->poly_e = put(at, r->poly_e, r->npolys * nvp * 4);
    int j = 0;
    for (int i = 0; i < e->contours.first[e->contours.region_count + 1]; i++) {
        const op_contour *c = &e->contours.contours[i];
        if (c->region == e->contours.border_region)
            continue;
        if (j < b->count)
            b->contours[j].verts = b->contours[j].nverts > 0 ? c->verts : NULL;
        j++;
    }
    /* The record is of these contours, one for one (keep_polys), or it is not kept. */
    e->base.polys = j == b->count ? b : NULL;
}

static op_rebuild_entry *capture(const op_level *l, int tx, int tz, const op__tile_base *b,
                                 const op_tile_stages *st, op_stage last, const contour_keep *ck,
                                 const layer_keep *lk)
{
    const op_chf *c = &b->chf;
    size_t n = b->skipped ? 0 : c->span_count;
    size_t ncells = b->skipped ? 0 : (size_t)c->width * (size_t)c->depth + 1;
    int layers = l->settings.partition == OP_PARTITION_LAYERS;
    int dist = b->dist != NULL;
    int detail = !b->skipped && keeps_detail(st, last);
    int contours = !b->skipped && ck != NULL;
    int regions = !b->skipped && keeps_regions(st, last);
    size_t bytes = up(sizeof(op_rebuild_entry));
    if (!b->skipped)
        bytes += up(ncells * 4) + 2 * up(n * 2) + up(n * sizeof *c->links) + 2 * up(n) +
                 (layers ? up(n * 2) : 0) + (dist ? up(n * 4) : 0) +
                 (detail ? detail_bytes(st) : 0) +
                 (contours ? contour_bytes(ck, st->regions.region_count) : 0) +
                 (contours && ck->with_polys ? poly_bytes(&ck->polys) : 0) +
                 (regions ? region_bytes(b, st, lk) : 0) +
                 (detail || contours || regions ? up(n * 2) : 0);
    op_rebuild_entry *e = malloc(bytes);
    if (!e)
        return NULL;
    memset(e, 0, sizeof *e);
    e->bytes = bytes;
    e->prefetch = bytes;
    e->tx = tx;
    e->tz = tz;
    e->has_layers = layers;
    e->base.skipped = b->skipped;
    if (b->skipped)
        return e;
    /* The arrays in the order a rebuild's stages first read them (build3d-runtime.md §5.1's
     * content, laid out for the prefetch): the span stage's (cells, links, areas before and
     * after erosion, distance), the regions stage's (span layers, region ids, the regions'
     * record), the contours' (heights, then their record), the polygons' and the detail's
     * records. The prefetch asks for the lines in address order, so the misses of the first
     * stages are served first. The clearances come last and are not prefetched: no stage
     * after compaction reads them (a rebuild hands them out in st->chf only). */
    unsigned char *at = (unsigned char *)e + up(sizeof *e);
    op_chf *d = &e->base.chf;
    *d = *c;
    d->dist = NULL;
    d->cells = put(&at, c->cells, ncells * 4);
    d->links = put(&at, c->links, n * sizeof *c->links);
    d->areas = put(&at, c->areas, n);
    e->base.eroded = put(&at, b->eroded, n);
    if (dist)
        e->base.dist = put(&at, b->dist, n * 4);
    if (layers)
        e->base.span_layer = put(&at, b->span_layer, n * 2);
    if (detail || contours || regions)
        e->reg = put(&at, st->regions.reg, n * 2);
    /* The regions' record is written last (put_regions points into the heights), into the
     * room kept for it here. */
    unsigned char *regions_at = at;
    at += regions ? region_bytes(b, st, lk) : 0;
    d->y = put(&at, c->y, n * 2);
    if (contours)
        put_contours(&at, e, st, ck);
    if (contours && ck->with_polys)
        put_polys(&at, e, ck);
    if (detail)
        put_detail(&at, l, e, st);
    e->prefetch = (size_t)(at - (unsigned char *)e);
    d->h = put(&at, c->h, n * 2);
    if (regions)
        put_regions(&regions_at, l, e, st, lk);
    return e;
}

/* Rule 12's record: the polygon stage run again on the kept contours the build's polygon
 * stage read (those below the border region), recording; kept only when it gives the build's
 * mesh (it always does: the same input). */
static op_status keep_polys(const op_level *l, const op_tile_stages *st, contour_keep *k,
                            op_arena *scratch, op_err *err)
{
    const op_contour_set *all = &k->set;
    op_contour_set set = *all;
    set.contours = op_arena_alloc(scratch, ((size_t)all->count + 1) * sizeof *set.contours);
    if (!set.contours)
        return op_err_set(err, OP_ENOMEM, "rebuild: out of memory (polygon record)");
    set.count = 0;
    for (int i = 0; i < all->count; i++)
        if (all->contours[i].region != st->border_region)
            set.contours[set.count++] = all->contours[i];
    op_tile_frame f = {l->grid.border, l->grid.tile_cells, l->grid.cs, l->settings.tile_size,
                       l->settings.cell_height};
    op_poly_mesh mesh;
    op_status s = op__polys_build_reuse(&set, &f, l->settings.max_verts_per_poly, NULL, NULL,
                                        &k->polys, scratch, scratch, scratch, &mesh, err);
    if (s != OP_OK)
        return s;
    const op_poly_mesh *pm = &st->polys;
    size_t nvp = (size_t)pm->nvp;
    k->with_polys =
        mesh.nverts == pm->nverts && mesh.npolys == pm->npolys && mesh.nvp == pm->nvp &&
        (pm->npolys == 0 ||
         (memcmp(mesh.polys, pm->polys, (size_t)pm->npolys * nvp * 4) == 0 &&
          memcmp(mesh.edge_neighbour, pm->edge_neighbour, (size_t)pm->npolys * nvp * 4) == 0));
    return OP_OK;
}

op_status op_level_build_tile(const op_level *lvl, int tx, int tz, const op_volume *vols, int nvols,
                              op_stage last, int keep_raw, op_arena *out, op_arena *scratch,
                              op_tile_stages *st, op_rebuild_entry **capture_out, op_err *err)
{
    if (capture_out)
        *capture_out = NULL;
    if (!lvl || !out || !scratch || !st)
        return op_err_set(err, OP_EINVAL, "rebuild: NULL argument");
    op_status s = op_volumes_check(vols, nvols, err);
    if (s != OP_OK)
        return s;
    op__tile_base b;
    s = op__tile_build(lvl, tx, tz, vols, nvols, NULL, capture_out ? &b : NULL, last, keep_raw, out,
                       scratch, st, err);
    if (s != OP_OK || !capture_out)
        return s;
    op_arena_mark m = op_arena_get_mark(scratch);
    contour_keep ck;
    int with_contours = keeps_contours(lvl, st, last, &ck.cs);
    memset(&ck.rec, 0, sizeof ck.rec);
    ck.rec.want_stretches = 1; /* §5.13 */
    if (with_contours &&
        (s = op__contours_build_reuse(&st->chf, &st->regions, &ck.cs, NULL, NULL, &ck.rec, out,
                                      scratch, &ck.set, err)) != OP_OK) {
        op_arena_release(scratch, m);
        return op__tile_err(s, tx, tz, -1, err);
    }
    if (with_contours &&
        (s = op__contours_across(&st->chf, st->regions.reg, st->regions.region_count, scratch,
                                 &ck.across_first, &ck.across, err)) != OP_OK) {
        op_arena_release(scratch, m);
        return op__tile_err(s, tx, tz, -1, err);
    }
    ck.with_polys = 0;
    if (with_contours && last >= OP_STAGE_POLYS &&
        (s = keep_polys(lvl, st, &ck, scratch, err)) != OP_OK) {
        op_arena_release(scratch, m);
        return op__tile_err(s, tx, tz, -1, err);
    }
    layer_keep lk = {NULL, NULL, 0, NULL, NULL};
    if (!b.skipped && keeps_regions(st, last) && st->region_layer && st->span_layer &&
        ((s = op__region_layers_record(&st->chf, st->span_layer, &st->regions, st->border_region,
                                       lvl->settings.min_region_area, scratch, &lk.first,
                                       &lk.settled, &lk.nlayers, err)) != OP_OK ||
         (lk.first &&
          (s = op__region_layers_spans(st->span_layer, st->chf.span_count, lk.nlayers, scratch,
                                       &lk.lstart, &lk.lspans, err)) != OP_OK))) {
        op_arena_release(scratch, m);
        return op__tile_err(s, tx, tz, -1, err);
    }
    *capture_out = capture(lvl, tx, tz, &b, st, last, with_contours ? &ck : NULL, &lk);
    op_arena_release(scratch, m);
    if (!*capture_out)
        return op_err_set(err, OP_ENOMEM, "tile (%d, %d): out of memory (rebuild entry)", tx, tz);
    return OP_OK;
}

/* Asks for every cache line of the entry the rebuild reads (all but the clearances at its
 * end, capture) before the rebuild reads any of it. A rebuild
 * comes long after the capture (the entry is cold: in the last-level cache at best) and its
 * stages read the entry's arrays one after another, several of them in link order (floods,
 * contour walks), so on demand each line is a miss the core waits for in turn. Asked for all
 * at once, the misses overlap: on dungeon (partition = layers, 27 KB a tile) a rebuild took
 * 12 % less wall time (docs/benchmarks.md, "Cold entries"). Reads nothing, changes nothing:
 * a hint only. Returns the lines it asked for, from the entry's first byte on. */
/* The loop of op__rebuild_entry_prefetch, always inlined into its callers: a prefetch
 * writes nothing, so gcc's IPA takes a function made of prefetches alone as pure and deletes a
 * call whose result is unused (it did so to this loop once it was no longer inlined: the Ir
 * fell and the hint was gone). Inlined, the prefetches stay. */
static inline __attribute__((always_inline)) size_t prefetch_lines(const op_rebuild_entry *e)
{
    const unsigned char *p = (const unsigned char *)e;
    size_t lines = 0, off = 0;
    /* Four lines a step: the loop's own test and step cost more than the hint itself. */
    for (; off + 3 * OP__LINE < e->prefetch; off += 4 * OP__LINE, lines += 4) {
        __builtin_prefetch(p + off, 0, 3);
        __builtin_prefetch(p + off + OP__LINE, 0, 3);
        __builtin_prefetch(p + off + 2 * OP__LINE, 0, 3);
        __builtin_prefetch(p + off + 3 * OP__LINE, 0, 3);
    }
    for (; off < e->prefetch; off += OP__LINE, lines++)
        __builtin_prefetch(p + off, 0, 3);
    return lines;
}

size_t op__rebuild_entry_prefetch(const op_rebuild_entry *e)
{
    return prefetch_lines(e);
}

/* The entry must have the level's grid and agent rows: anything else cannot be its tile. */
static op_status check_fit(const op_level *l, const op_rebuild_entry *e, op_err *err)
{
    int layers = l->settings.partition == OP_PARTITION_LAYERS;
    if (op_level_tile_index(l, e->tx, e->tz) < 0)
        return op_err_set(err, OP_EINVAL, "rebuild: entry of tile (%d, %d) outside the level",
                          e->tx, e->tz);
    if (e->has_layers != layers)
        return op_err_set(err, OP_EINVAL,
                          "rebuild: entry of tile (%d, %d) %s span layers, the level's "
                          "partition is %s",
                          e->tx, e->tz, e->has_layers ? "has" : "lacks",
                          op_partition_name(l->settings.partition));
    const op_chf *c = &e->base.chf;
    if (!e->base.skipped && (c->width != l->grid.grid_cells || c->depth != l->grid.grid_cells ||
                             c->border != l->grid.border || c->cs != l->grid.cs ||
                             c->walkable_height != l->span.walkable_height ||
                             c->walkable_climb != l->span.walkable_climb))
        return op_err_set(err, OP_EINVAL,
                          "rebuild: entry of tile (%d, %d) has a %dx%d grid (border %d, agent "
                          "rows %d/%d), not the level's",
                          e->tx, e->tz, c->width, c->depth, c->border, c->walkable_height,
                          c->walkable_climb);
    return OP_OK;
}

op_status op_level_rebuild_tile(const op_level *lvl, const op_rebuild_entry *e,
                                const op_volume *vols, int nvols, op_stage last, int keep_raw,
                                op_arena *out, op_arena *scratch, op_tile_stages *st, op_err *err)
{
    if (!lvl || !e || !out || !scratch || !st)
        return op_err_set(err, OP_EINVAL, "rebuild: NULL argument");
    op_status s;
    if ((s = check_fit(lvl, e, err)) != OP_OK || (s = op_volumes_check(vols, nvols, err)) != OP_OK)
        return s;
    prefetch_lines(e);
    return op__tile_build(lvl, e->tx, e->tz, vols, nvols, &e->base, NULL, last, keep_raw, out,
                          scratch, st, err);
}

size_t op_rebuild_entry_bytes(const op_rebuild_entry *e)
{
    return e ? e->bytes : 0;
}

const op__tile_base *op__rebuild_entry_base(const op_rebuild_entry *e)
{
    return e ? &e->base : NULL;
}

void op_rebuild_entry_tile(const op_rebuild_entry *e, int *tx, int *tz)
{
    *tx = e->tx;
    *tz = e->tz;
}

void op_rebuild_entry_free(op_rebuild_entry *e)
{
    free(e);
}

/* ---- reach (§4.4) ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Tiles [*t0, *t1] whose build grid meets the cells of [lo, hi] widened by one, clamped to
 * [r0, r1]; 0 when none. */
static int axis(double lo, double hi, double origin, const op_tile_grid *g, int r0, int r1, int *t0,
                int *t1)
{
    int64_t c0 = op_cell_of(lo, origin, g->cs) - 1, c1 = op_cell_of(hi, origin, g->cs) + 1;
    int64_t a = floor_div(c0 - g->border, g->tile_cells);
    int64_t b = floor_div(c1 + g->border, g->tile_cells);
    if (a < r0)
        a = r0;
    if (b > r1)
        b = r1;
    if (a > b)
        return 0;
    *t0 = (int)a;
    *t1 = (int)b;
    return 1;
}

int op_level_volume_tiles(const op_level *lvl, const op_volume *v, op_tile_rect *r)
{
    if (!lvl || !v || !r || op_level_tile_count(lvl) <= 0 || op_volume_validate(v, NULL) != OP_OK)
        return 0;
    double lo[2], hi[2], ox = lvl->grid.origin_x, oz = lvl->grid.origin_z; /* a soup's grid */
    op__volume_xz_bounds(v, lo, hi);
    if (lvl->kind == OP_LEVEL_HEIGHTFIELD) {
        ox = lvl->hf.origin_x;
        oz = lvl->hf.origin_z;
    } else if (lvl->kind == OP_LEVEL_CHUNK) {
        ox = lvl->chunk.origin_x;
        oz = lvl->chunk.origin_z;
    }
    const op_tile_rect *t = &lvl->rect;
    return axis(lo[0], hi[0], ox, &lvl->grid, t->tx0, t->tx1, &r->tx0, &r->tx1) &&
           axis(lo[1], hi[1], oz, &lvl->grid, t->tz0, t->tz1, &r->tz0, &r->tz1);
}
