/*
 * onepathd snapshots: the build input of one level version, made once per edit and then
 * only read. A snapshot is the level's settings and one part per mesh, in name order
 * (protocol §3.2); a part is a mesh prepared for builds: its vertices and triangles
 * decoded from little endian, and for every tile its triangles can reach (build3d-polys.md
 * §1.5, op_triangle_tiles, not clamped to any range) the list of those triangles in input
 * order. A tile of the level's soup therefore selects exactly the concatenation, over
 * the parts in name order, of the part's list for that tile (builds.c makes the tile's
 * soup from it), and an edit prepares only the mesh it puts: the other parts are shared
 * with the previous snapshot, so the cost of a mesh.put follows the mesh, not the level.
 * A snapshot also holds the level's volume set (shared: a mesh edit keeps it, a volume
 * edit keeps every part and brings a new set).
 * Parts and snapshots are reference counted and immutable: an edit never waits for a
 * build and a build never sees a half-made level.
 * Typical: 1..10^3 parts of 10^2..10^7 triangles; about 40 bytes a triangle.
 */
#include <stdlib.h>
#include <string.h>

#include "level.h"

/* The clamp handed to op_triangle_tiles: wider than any valid soup's tiles (coordinates
 * within +-2^21, cells of at least OP_MIN_CELL_SIZE), so nothing is clipped. */
#define OPD_TILES_UNBOUNDED (1 << 30)

static float le_float(const uint8_t *p)
{
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int32_t le_int(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* ===== parts ===== */

void opd_part_ref(opd_part *p)
{
    atomic_fetch_add(&p->refs, 1);
}

void opd_part_unref(opd_part *p)
{
    if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    free(p->verts);
    free(p->tris);
    free(p->off);
    free(p->ids);
    opd_mesh_free(p->mesh);
    free(p);
}

/* The part's soup decoded and checked as a level's soup is (coordinates, areas). */
static op_status part_decode(opd_part *p, const opd_mesh *m, op_err *err)
{
    p->nv = m->verts_len / 12;
    p->nt = m->tris_len / 12;
    p->verts = malloc((p->nv ? p->nv : 1) * 3 * sizeof(float));
    p->tris = malloc((p->nt ? p->nt : 1) * 3 * sizeof(int));
    if (!p->verts || !p->tris)
        return op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory for %zu vertices", m->name,
                          p->nv);
    for (size_t k = 0; k < 3 * p->nv; k++)
        p->verts[k] = le_float(m->verts + 4 * k);
    for (size_t k = 0; k < 3 * p->nt; k++)
        p->tris[k] = le_int(m->tris + 4 * k);
    p->areas = m->areas;
    p->soup = (op_soup){p->verts, 3 * p->nv, p->tris, 3 * p->nt, p->areas};
    op_err e;
    if (op_soup_validate(&p->soup, &e) != OP_OK)
        return op_err_set(err, e.status, "mesh '%s': %s", m->name, e.msg);
    p->has_box = m->has_box;
    memcpy(p->bmin, m->bmin, sizeof p->bmin);
    memcpy(p->bmax, m->bmax, sizeof p->bmax);
    return OP_OK;
}

/* Each triangle's tiles, the part's rectangle (their union) and the per-tile lists. */
static op_status part_bin(opd_part *p, const op_settings *s, const char *name, op_err *err)
{
    op_tile_range own;
    op_err e;
    /* The mesh alone must fit in the tile limit (a level holding it spans at least as many
     * tiles); this also checks the grid's cell size. */
    if (op_soup_tile_range(&p->soup, s, &own, &e) != OP_OK)
        return op_err_set(err, e.status, "mesh '%s': %s", name, e.msg);
    op_tile_grid g;
    op_tile_grid_derive(s, &g);
    const op_tile_range wide = {-OPD_TILES_UNBOUNDED, -OPD_TILES_UNBOUNDED, OPD_TILES_UNBOUNDED,
                                OPD_TILES_UNBOUNDED};
    op_tile_range *tr = malloc(p->nt * sizeof *tr);
    if (!tr)
        return op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", name);
    for (size_t t = 0; t < p->nt; t++) {
        op_triangle_tiles(&p->soup, t, &g, &wide, &tr[t]);
        op_tile_range *r = &p->rect, *q = &tr[t];
        if (t == 0)
            *r = *q;
        r->tx0 = q->tx0 < r->tx0 ? q->tx0 : r->tx0;
        r->tz0 = q->tz0 < r->tz0 ? q->tz0 : r->tz0;
        r->tx1 = q->tx1 > r->tx1 ? q->tx1 : r->tx1;
        r->tz1 = q->tz1 > r->tz1 ? q->tz1 : r->tz1;
    }
    size_t w = (size_t)(p->rect.tx1 - p->rect.tx0 + 1), h = (size_t)(p->rect.tz1 - p->rect.tz0 + 1);
    uint64_t pairs = 0;
    for (size_t t = 0; t < p->nt; t++)
        pairs += (uint64_t)(tr[t].tx1 - tr[t].tx0 + 1) * (uint64_t)(tr[t].tz1 - tr[t].tz0 + 1);
    op_status st = OP_OK;
    if (pairs > UINT32_MAX)
        st = op_err_set(err, OP_ELIMIT, "mesh '%s': %llu (triangle, tile) pairs > 2^32 - 1", name,
                        (unsigned long long)pairs);
    else if (!(p->off = calloc(w * h + 1, sizeof *p->off)) ||
             !(p->ids = malloc((pairs ? pairs : 1) * sizeof *p->ids)))
        st = op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory for %llu tile entries", name,
                        (unsigned long long)pairs);
    for (size_t t = 0; st == OP_OK && t < p->nt; t++)
        for (int z = tr[t].tz0; z <= tr[t].tz1; z++)
            for (int x = tr[t].tx0; x <= tr[t].tx1; x++)
                p->off[(size_t)(z - p->rect.tz0) * w + (size_t)(x - p->rect.tx0) + 1]++;
    for (size_t i = 0; st == OP_OK && i < w * h; i++)
        p->off[i + 1] += p->off[i];
    /* Filled in triangle order, so each list is in input order; off[i] walks up to the
     * next list's start and is put back after. */
    for (size_t t = 0; st == OP_OK && t < p->nt; t++)
        for (int z = tr[t].tz0; z <= tr[t].tz1; z++)
            for (int x = tr[t].tx0; x <= tr[t].tx1; x++)
                p->ids[p->off[(size_t)(z - p->rect.tz0) * w + (size_t)(x - p->rect.tx0)]++] =
                    (uint32_t)t;
    for (size_t i = w * h; st == OP_OK && i > 0; i--)
        p->off[i] = p->off[i - 1];
    if (st == OP_OK)
        p->off[0] = 0;
    free(tr);
    p->bytes = sizeof *p + p->nv * 12 + p->nt * 12 + (w * h + 1) * 4 + (size_t)pairs * 4;
    return st;
}

op_status opd_part_make(const opd_mesh *m, const op_settings *s, opd_part **out, op_err *err)
{
    *out = NULL;
    opd_part *p = calloc(1, sizeof *p);
    if (!p)
        return op_err_set(err, OP_ENOMEM, "mesh '%s': out of memory", m->name);
    atomic_init(&p->refs, 1);
    snprintf(p->name, sizeof p->name, "%s", m->name);
    /* areas point into the mesh, which the part keeps. */
    p->mesh = opd_mesh_ref((opd_mesh *)m);
    op_status st = part_decode(p, m, err);
    if (st == OP_OK && p->nt > 0)
        st = part_bin(p, s, m->name, err);
    if (st != OP_OK) {
        opd_part_unref(p);
        return st;
    }
    *out = p;
    return OP_OK;
}

const uint32_t *opd_part_tile(const opd_part *p, int tx, int tz, size_t *n)
{
    *n = 0;
    if (p->nt == 0 || tx < p->rect.tx0 || tx > p->rect.tx1 || tz < p->rect.tz0 || tz > p->rect.tz1)
        return NULL;
    size_t w = (size_t)(p->rect.tx1 - p->rect.tx0 + 1);
    size_t i = (size_t)(tz - p->rect.tz0) * w + (size_t)(tx - p->rect.tx0);
    *n = p->off[i + 1] - p->off[i];
    return p->ids + p->off[i];
}

/* ===== snapshots ===== */

void opd_snap_ref(opd_snap *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void opd_snap_unref(opd_snap *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (int i = 0; i < s->nparts; i++)
        opd_part_unref(s->parts[i]);
    free(s->parts);
    opd_vset_unref(s->vols);
    free(s);
}

/* The level's tile range: the soup's bounds (the union of the parts' boxes, first one
 * winning ties as op_soup_bounds) through op_soup_tile_range. */
static op_status snap_range(opd_snap *s, op_err *err)
{
    int any = 0;
    for (int i = 0; i < s->nparts; i++) {
        const opd_part *p = s->parts[i];
        if (!p->has_box)
            continue;
        for (int a = 0; a < 3; a++) {
            s->bmin[a] = (!any || p->bmin[a] < s->bmin[a]) ? p->bmin[a] : s->bmin[a];
            s->bmax[a] = (!any || p->bmax[a] > s->bmax[a]) ? p->bmax[a] : s->bmax[a];
        }
        any = 1;
    }
    if (!any)
        return OP_OK;
    float v[6] = {s->bmin[0], s->bmin[1], s->bmin[2], s->bmax[0], s->bmax[1], s->bmax[2]};
    int t[3] = {0, 1, 1};
    op_soup corners = {v, 6, t, 3, NULL};
    op_status st = op_soup_tile_range(&corners, &s->settings, &s->rect, err);
    if (st == OP_OK)
        s->has_tiles = 1;
    return st;
}

op_status opd_snap_make(const opd_config *cfg, const op_settings *st, opd_part **parts, int n,
                        opd_vset *vols, uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    opd_snap *s = calloc(1, sizeof *s);
    if (!s) {
        for (int i = 0; i < n; i++)
            opd_part_unref(parts[i]);
        free(parts);
        opd_vset_unref(vols);
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    }
    atomic_init(&s->refs, 1);
    s->version = version;
    s->settings = *st;
    s->parts = parts;
    s->nparts = n;
    s->vols = vols;
    s->bytes = vols ? vols->bytes : 0;
    for (int i = 0; i < n; i++) {
        s->nv += parts[i]->nv;
        s->nt += parts[i]->nt;
        s->any_areas |= parts[i]->areas != NULL;
        s->bytes += parts[i]->bytes;
    }
    op_status rc = OP_OK;
    if (s->nv > cfg->max_level_verts)
        rc = op_err_set(err, OP_ELIMIT, "level: %zu vertices > --max-level-verts %zu", s->nv,
                        cfg->max_level_verts);
    else if (s->nt > cfg->max_level_tris)
        rc = op_err_set(err, OP_ELIMIT, "level: %zu triangles > --max-level-tris %zu", s->nt,
                        cfg->max_level_tris);
    else if (s->nt > 0xffffffffu)
        rc = op_err_set(err, OP_ERANGE, "level: %zu triangles > 2^32 - 1", s->nt);
    else
        rc = snap_range(s, err);
    if (rc != OP_OK) {
        opd_snap_unref(s);
        return rc;
    }
    *out = s;
    return OP_OK;
}

op_status opd_snap_from_meshes(const opd_config *cfg, const op_settings *st, opd_mesh *const *m,
                               int n, opd_vset *vols, uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    op_status rc = op_settings_validate(st, err);
    if (rc != OP_OK)
        return rc;
    opd_part **parts = calloc((size_t)n + 1, sizeof *parts);
    if (!parts)
        return op_err_set(err, OP_ENOMEM, "level: out of memory for %d meshes", n);
    for (int i = 0; i < n && rc == OP_OK; i++)
        rc = opd_part_make(m[i], st, &parts[i], err);
    if (rc != OP_OK) {
        for (int i = 0; i < n; i++)
            opd_part_unref(parts[i]);
        free(parts);
        return rc;
    }
    return opd_snap_make(cfg, st, parts, n, opd_vset_ref(vols), version, out, err);
}

op_status opd_snap_edit(const opd_config *cfg, const opd_snap *old, const opd_mesh *m,
                        const char *drop, uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    opd_part *np = NULL;
    op_status rc = m ? opd_part_make(m, &old->settings, &np, err) : OP_OK;
    if (rc != OP_OK)
        return rc;
    const char *name = m ? m->name : drop;
    opd_part **parts = calloc((size_t)old->nparts + 1, sizeof *parts);
    if (!parts) {
        opd_part_unref(np);
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    }
    int k = 0;
    for (int i = 0; i < old->nparts; i++) {
        opd_part *p = old->parts[i];
        if (np && strcmp(np->name, p->name) < 0) {
            parts[k++] = np;
            np = NULL;
        }
        if (strcmp(p->name, name) == 0)
            continue;
        opd_part_ref(p);
        parts[k++] = p;
    }
    if (np)
        parts[k++] = np;
    return opd_snap_make(cfg, &old->settings, parts, k, opd_vset_ref(old->vols), version, out, err);
}

op_status opd_snap_volumes(const opd_config *cfg, const opd_snap *old, opd_vset *vols,
                           uint64_t version, opd_snap **out, op_err *err)
{
    *out = NULL;
    opd_part **parts = calloc((size_t)old->nparts + 1, sizeof *parts);
    if (!parts)
        return op_err_set(err, OP_ENOMEM, "level: out of memory");
    for (int i = 0; i < old->nparts; i++) {
        opd_part_ref(old->parts[i]);
        parts[i] = old->parts[i];
    }
    return opd_snap_make(cfg, &old->settings, parts, old->nparts, opd_vset_ref(vols), version, out,
                         err);
}

int opd_snap_in_rect(const opd_snap *s, int tx, int tz)
{
    return s && s->has_tiles && tx >= s->rect.tx0 && tx <= s->rect.tx1 && tz >= s->rect.tz0 &&
           tz <= s->rect.tz1;
}

int opd_snap_tiles(const opd_snap *s)
{
    return s->has_tiles ? (s->rect.tx1 - s->rect.tx0 + 1) * (s->rect.tz1 - s->rect.tz0 + 1) : 0;
}
