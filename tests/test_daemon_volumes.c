/*
 * onepathd volumes (protocol §3.5, §4-§6; build3d-runtime.md §4, §5), against daemons
 * started here:
 *   - random sequences of 200 volume and mesh edits (every kind, both modes, areas,
 *     moves, drops, overlaps, volumes on tile lines, idempotent puts, level.put with
 *     volumes), for every partition, on two daemons at once: one with the rebuild cache,
 *     one with --rebuild-cache-bytes 0. After every step each daemon serves every tile
 *     byte for byte as a fresh offline bake of the level as it then is (op_level_create
 *     with the volume set, as `onepath bake --volumes`), changes.since lists exactly the
 *     tiles whose bytes differ from the bake before the step, level.info lists the
 *     volumes; the cached daemon rebuilt every tile of a volume edit from its base (its
 *     stats), the other never did;
 *   - the rebuild cache: its budget reported by ping, its figures by stats; a volume edit
 *     rebuilds from the bases when they are cached and from scratch when the budget
 *     evicted them, to the same bytes.
 */
#include <math.h>
#include <msgpack.h>

#include "onepath/levelgen.h"
#include "onepath/rebuild.h"
#include "onepath/rpc.h"
#include "op_daemon_test.h"
#include "op_rpc_test.h"
#include "op_test.h"

#define LEVEL  "vol"
#define NSLOTS 8

/* Names whose bytewise order is not their natural order. */
static const char *const slot_names[NSLOTS] = {"A.gate", "Z-car", "a_zone", "door1",
                                               "door10", "door2", "w.1",    "w.10"};

/* ---- stats read raw (the rebuild cache's figures) ---- */

typedef struct rstats {
    uint64_t builds, hits, misses, evictions, bytes;
    uint64_t limit; /* ping's rebuild_cache_bytes */
} rstats;

static const msgpack_object *field(const msgpack_object *m, const char *k)
{
    const msgpack_object *o = op_rpc_get(m, k);
    cr_assert_not_null(o, "no '%s' in the reply", k);
    return o;
}

/* The result map of a raw call of `method` (no params); u holds it. */
static const msgpack_object *raw_result(op_client *c, const char *method, msgpack_unpacked *u,
                                        uint8_t **raw)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    opt_pack_head(&pk, 3, 7, method);
    size_t n;
    op_err e;
    cr_assert_eq(op_client_call_raw(c, sb.data, sb.size, OPT_TIMEOUT_MS, raw, &n, &e), OP_OK, "%s",
                 e.msg);
    msgpack_sbuffer_destroy(&sb);
    msgpack_unpacked_init(u);
    size_t off = 0;
    cr_assert_eq(msgpack_unpack_next(u, (const char *)*raw, n, &off), MSGPACK_UNPACK_SUCCESS);
    cr_assert(field(&u->data, "ok")->via.boolean, "%s failed", method);
    return field(&u->data, "result");
}

static rstats rebuild_stats(op_client *c)
{
    rstats r;
    msgpack_unpacked u;
    uint8_t *raw;
    const msgpack_object *res = raw_result(c, "stats", &u, &raw);
    const msgpack_object *rc = field(res, "rebuild_cache");
    r.builds = field(res, "builds")->via.u64;
    r.hits = field(rc, "hits")->via.u64;
    r.misses = field(rc, "misses")->via.u64;
    r.evictions = field(rc, "evictions")->via.u64;
    r.bytes = field(rc, "bytes")->via.u64;
    msgpack_unpacked_destroy(&u);
    free(raw);
    res = raw_result(c, "ping", &u, &raw);
    r.limit = field(field(res, "limits"), "rebuild_cache_bytes")->via.u64;
    msgpack_unpacked_destroy(&u);
    free(raw);
    return r;
}

/* ---- the level: a generated multi-floor ground, two small meshes, named volumes ---- */

typedef struct world {
    op_arena *geo;
    op_soup ground;
    op_settings s;
    op_client_setting cs[4];
    int ncs;
    double (*floors)[3]; /* points of walkable floors, where volumes go */
    int nfloors;
    float bmin[3], bmax[3];
    opt_soup crate, deck; /* nv == 0: absent */
    op_volume vol[NSLOTS];
    int present[NSLOTS];
} world;

/* moved: the tile grid starts off the world origin (grid_origin_x, _z), so that cells and
 * tile lines are not at multiples of cs from 0. */
static void world_open(world *w, op_partition p, int moved)
{
    memset(w, 0, sizeof *w);
    w->geo = op_arena_create(0);
    op_err e;
    cr_assert_eq(op_levelgen("multifloor", 16, 1, w->geo, &w->ground, &e), OP_OK, "%s", e.msg);
    op_settings_default(&w->s);
    w->s.tile_size = 4.8;
    w->s.partition = p;
    w->cs[w->ncs++] = (op_client_setting){"tile_size", "4.8"};
    w->cs[w->ncs++] = (op_client_setting){"partition", op_partition_name(p)};
    if (moved) {
        op_err se;
        cr_assert_eq(op_settings_set(&w->s, "grid_origin_x", "1.7", &se), OP_OK, "%s", se.msg);
        cr_assert_eq(op_settings_set(&w->s, "grid_origin_z", "-0.95", &se), OP_OK, "%s", se.msg);
        w->cs[w->ncs++] = (op_client_setting){"grid_origin_x", "1.7"};
        w->cs[w->ncs++] = (op_client_setting){"grid_origin_z", "-0.95"};
    }
    op_level *lvl;
    cr_assert_eq(op_level_create(&w->ground, &w->s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_level_bounds(lvl, w->bmin, w->bmax);
    op_tile_rect r = op_level_tiles(lvl);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    int cap = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_tile_stages st;
            cr_assert_eq(
                op_level_build_stages(lvl, tx, tz, OP_STAGE_SPANS, 0, out, scratch, &st, &e), OP_OK,
                "%s", e.msg);
            const op_chf *c = &st.chf;
            for (int z = c->border; z < c->depth - c->border; z++)
                for (int x = c->border; x < c->width - c->border; x++)
                    for (uint32_t i = c->cells[x + z * c->width];
                         i < c->cells[x + z * c->width + 1]; i++) {
                        if (!c->areas[i] || i % 5)
                            continue;
                        if (w->nfloors == cap) {
                            cap = cap * 2 + 256;
                            w->floors = realloc(w->floors, (size_t)cap * sizeof *w->floors);
                        }
                        double *f = w->floors[w->nfloors++];
                        f[0] = c->origin[0] + (x + 0.5) * c->cs;
                        f[1] = c->origin[1] + c->y[i] * c->ch;
                        f[2] = c->origin[2] + (z + 0.5) * c->cs;
                    }
            op_arena_reset(out);
            op_arena_reset(scratch);
        }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_level_destroy(lvl);
    cr_assert_gt(w->nfloors, 50);
}

static void world_close(world *w)
{
    op_arena_destroy(w->geo);
    free(w->floors);
    opt_soup_free(&w->crate);
    opt_soup_free(&w->deck);
}

static void append(opt_soup *out, const float *v, size_t nv, const int *t, size_t nt)
{
    int base = (int)out->nv;
    for (size_t i = 0; i < nv; i++)
        opt_soup_vert(out, v[3 * i], v[3 * i + 1], v[3 * i + 2]);
    for (size_t i = 0; i < nt; i++)
        opt_soup_tri(out, t[3 * i] + base, t[3 * i + 1] + base, t[3 * i + 2] + base);
}

/* The present volumes in name order. */
static int sorted_volumes(const world *w, op_volume *out)
{
    int n = 0;
    for (int k = 0; k < NSLOTS; k++)
        if (w->present[k])
            out[n++] = w->vol[k];
    op_err e;
    cr_assert_eq(op_volumes_sort(out, n, &e), OP_OK, "%s", e.msg);
    return n;
}

/* A fresh offline bake of the level as it is: meshes in name order ("crate" < "deck" <
 * "ground"), the volume set sorted by name. */
static void bake(const world *w, opt_ref *ref)
{
    opt_soup all = {0};
    append(&all, w->crate.v, w->crate.nv, w->crate.t, w->crate.nt);
    append(&all, w->deck.v, w->deck.nv, w->deck.t, w->deck.nt);
    append(&all, w->ground.verts, w->ground.verts_len / 3, w->ground.tris, w->ground.tris_len / 3);
    op_soup soup = {all.v, 3 * all.nv, all.t, 3 * all.nt, NULL};
    op_volume v[NSLOTS];
    int n = sorted_volumes(w, v);
    opt_ref_bake_volumes(&soup, &w->s, v, n, ref);
    opt_soup_free(&all);
}

static double rnd(op_test_rng *g, double lo, double hi)
{
    return lo + (hi - lo) * op_test_rand01(g);
}

/* Now and then x (axis 0) or z (axis 1) snapped to a tile line. */
static double maybe_line(op_test_rng *g, const world *w, double x, int axis)
{
    if (op_test_rand_int(g, 0, 3) != 0)
        return x;
    double o = axis ? w->s.grid_origin_z : w->s.grid_origin_x;
    return o + floor((x - o) / w->s.tile_size + 0.5) * w->s.tile_size;
}

/* A random volume of every kind and mode, placed on a floor of the level. */
static void random_volume(op_test_rng *g, const world *w, const char *name, op_volume *v)
{
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    v->kind = (op_volume_kind)op_test_rand_int(g, 0, 2);
    v->mode = (op_volume_mode)op_test_rand_int(g, 0, 1);
    v->area = v->mode == OP_VOLUME_OBSTACLE
                  ? (op_test_rand_int(g, 0, 4) == 0 ? op_test_rand_int(g, 1, 63) : 0)
                  : op_test_rand_int(g, 0, 63);
    const double *f = w->floors[op_test_rand_int(g, 0, w->nfloors - 1)];
    double cx = f[0] + rnd(g, -0.5, 0.5), cz = f[2] + rnd(g, -0.5, 0.5);
    double size = rnd(g, 0.3, 3.0);
    double y0 = f[1] - rnd(g, 0.0, 2.0), y1 = f[1] + rnd(g, -0.3, 2.5);
    if (y1 < y0)
        y1 = y0;
    if (op_test_rand_int(g, 0, 4) == 0)
        y0 = w->bmin[1] - 5.0, y1 = w->bmax[1] + 5.0;
    v->bmin[1] = y0;
    v->bmax[1] = y1;
    if (v->kind == OP_VOLUME_BOX) {
        v->bmin[0] = maybe_line(g, w, cx - size * rnd(g, 0.2, 1.0), 0);
        v->bmax[0] = maybe_line(g, w, cx + size * rnd(g, 0.2, 1.0), 0);
        v->bmin[2] = maybe_line(g, w, cz - size * rnd(g, 0.2, 1.0), 1);
        v->bmax[2] = maybe_line(g, w, cz + size * rnd(g, 0.2, 1.0), 1);
        if (v->bmin[0] > v->bmax[0])
            v->bmin[0] = v->bmax[0];
        if (v->bmin[2] > v->bmax[2])
            v->bmin[2] = v->bmax[2];
    } else if (v->kind == OP_VOLUME_CYLINDER) {
        v->bmin[0] = maybe_line(g, w, cx, 0);
        v->bmin[2] = maybe_line(g, w, cz, 1);
        v->bmax[0] = size;
    } else {
        /* Points on an ellipse at increasing angles: convex, counter-clockwise. */
        int n = op_test_rand_int(g, 3, 8);
        double t[8];
        for (int i = 0; i < n; i++)
            t[i] = rnd(g, 0.0, 6.283185307179586);
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
                double x = t[j];
                t[j] = t[j - 1];
                t[j - 1] = x;
            }
        double rz = size * rnd(g, 0.3, 1.0);
        v->npts = n;
        for (int i = 0; i < n; i++) {
            v->pts[2 * i] = cx + size * cos(t[i]);
            v->pts[2 * i + 1] = cz + rz * sin(t[i]);
        }
        if (op_volume_validate(v, NULL) != OP_OK) { /* angles too close: a triangle */
            v->npts = 3;
            double p[6] = {cx, cz, cx + size, cz, cx, cz + size};
            memcpy(v->pts, p, sizeof p);
        }
    }
    op_err e;
    cr_assert_eq(op_volume_validate(v, &e), OP_OK, "%s", e.msg);
}

/* A crate (a closed box) or a deck (a quad) at a random place. */
static void random_mesh(op_test_rng *g, const world *w, int deck, opt_soup *s)
{
    opt_soup_free(s);
    const double *f = w->floors[op_test_rand_int(g, 0, w->nfloors - 1)];
    float x = (float)floor(f[0] * 4) / 4, z = (float)floor(f[2] * 4) / 4;
    float sx = (float)op_test_rand_int(g, 2, 10) / 4, sz = (float)op_test_rand_int(g, 2, 10) / 4;
    float y = (float)floor(f[1] * 4) / 4;
    if (deck)
        opt_soup_quad(s, x, z, x + sx, z + sz, y + (float)op_test_rand_int(g, 2, 12) / 4);
    else
        opt_soup_box(s, x, z, x + sx, z + sz, y - 0.5f, y + (float)op_test_rand_int(g, 1, 8) / 4);
}

/* Protocol §6.1's equality: mode, kind, area and the coordinates the kind uses, bit for
 * bit (written out here, independent of the daemon's). */
static int vol_equal(const op_volume *a, const op_volume *b)
{
    if (strcmp(a->name, b->name) || a->kind != b->kind || a->mode != b->mode ||
        a->area != b->area || memcmp(&a->bmin[1], &b->bmin[1], 8) ||
        memcmp(&a->bmax[1], &b->bmax[1], 8))
        return 0;
    if (a->kind == OP_VOLUME_BOX)
        return !memcmp(a->bmin, b->bmin, 24) && !memcmp(a->bmax, b->bmax, 24);
    if (a->kind == OP_VOLUME_CYLINDER)
        return !memcmp(&a->bmin[0], &b->bmin[0], 8) && !memcmp(&a->bmin[2], &b->bmin[2], 8) &&
               !memcmp(&a->bmax[0], &b->bmax[0], 8);
    return a->npts == b->npts && !memcmp(a->pts, b->pts, 16 * (size_t)a->npts);
}

static int soup_equal(const opt_soup *a, const opt_soup *b)
{
    return a->nv == b->nv && a->nt == b->nt &&
           (a->nv == 0 || !memcmp(a->v, b->v, a->nv * 3 * sizeof *a->v)) &&
           (a->nt == 0 || !memcmp(a->t, b->t, a->nt * 3 * sizeof *a->t));
}

static void soup_copy(opt_soup *dst, const opt_soup *src)
{
    opt_soup_free(dst);
    append(dst, src->v, src->nv, src->t, src->nt);
}

/* ---- the daemons ---- */

enum { CACHED, UNCACHED, NDAEMONS };

typedef struct side {
    opt_daemon d;
    op_client *c;
} side;

/* The level's meshes and volumes as the client sends them. */
typedef struct wire {
    op_client_mesh m[3];
    int nm;
    op_client_volume v[NSLOTS];
    int nv;
} wire;

static void to_wire(const world *w, op_test_rng *g, wire *out)
{
    memset(out, 0, sizeof *out);
    out->m[out->nm++] = (op_client_mesh){"ground",
                                         w->ground.verts,
                                         w->ground.verts_len / 3,
                                         (const int32_t *)w->ground.tris,
                                         w->ground.tris_len / 3,
                                         NULL};
    if (w->crate.nv)
        out->m[out->nm++] = opt_mesh("crate", &w->crate);
    if (w->deck.nv)
        out->m[out->nm++] = opt_mesh("deck", &w->deck);
    for (int k = 0; k < NSLOTS; k++)
        if (w->present[k])
            out->v[out->nv++] = opt_client_volume(&w->vol[k], op_test_rand_int(g, 0, 1));
    /* Any order: the level sorts (protocol §6.1). */
    for (int i = out->nv - 1; i > 0; i--) {
        int j = op_test_rand_int(g, 0, i);
        op_client_volume t = out->v[i];
        out->v[i] = out->v[j];
        out->v[j] = t;
    }
}

static void level_put(side *sd, const world *w, const wire *wr, uint64_t want_v, int want_changed)
{
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put_volumes(sd->c, LEVEL, w->cs, w->ncs, wr->m, wr->nm, wr->v,
                                             wr->nv, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "level.put: %s", e.msg);
    cr_assert(v == want_v && changed == want_changed, "level.put: version %llu changed %d",
              (unsigned long long)v, changed);
}

/* level.info's volumes are the level's, in name order, field for field. */
static void check_volumes(op_client *c, const world *w, uint64_t want_v)
{
    op_volume v[NSLOTS];
    int n = sorted_volumes(w, v);
    op_client_volumes got;
    op_err e;
    cr_assert_eq(op_client_volumes_get(c, LEVEL, OPT_TIMEOUT_MS, &got, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(got.version, want_v);
    cr_assert_eq(got.n, n, "level.info lists %d volumes, the level has %d", got.n, n);
    for (int i = 0; i < n; i++) {
        op_client_volume want = opt_client_volume(&v[i], 0);
        cr_assert(opt_client_volume_equal(&got.v[i], &want), "level.info: volume %s differs",
                  want.name);
    }
    op_client_volumes_free(&got);
}

typedef struct tally {
    int volume_edits, mesh_edits, unchanged, level_puts;
    uint64_t rebuilt_from_base;
    int tiles_changed_by_volumes; /* tiles whose bytes a volume edit changed */
} tally;

/* One step: an edit drawn from g, applied to w and to both daemons; returns whether it
 * changed the level and whether it was a volume edit (*volume_only). */
static int step(op_test_rng *g, world *w, side *sd, uint64_t ver, int *volume_only, tally *t)
{
    int r = op_test_rand_int(g, 0, 99), k = op_test_rand_int(g, 0, NSLOTS - 1);
    uint64_t v;
    int changed = 0, want = 0;
    op_err e;
    *volume_only = 0;
    if (r < 66) {
        /* volume.put: new, moved or reshaped (r < 50), an exact copy of another volume's
         * shape (r < 56), or the volume as it is (idempotent); volume.drop (r >= 56). */
        op_volume nv;
        if (r < 50 || r >= 56) {
            random_volume(g, w, slot_names[k], &nv);
        } else {
            int o = op_test_rand_int(g, 0, NSLOTS - 1);
            if (w->present[o] && r < 53) {
                nv = w->vol[o];
                snprintf(nv.name, sizeof nv.name, "%s", slot_names[k]);
            } else if (w->present[k]) {
                nv = w->vol[k];
            } else {
                random_volume(g, w, slot_names[k], &nv);
            }
        }
        if (r < 56 || op_test_rand_int(g, 0, 1)) {
            want = !w->present[k] || !vol_equal(&w->vol[k], &nv);
            op_client_volume cv = opt_client_volume(&nv, op_test_rand_int(g, 0, 1));
            for (int i = 0; i < NDAEMONS; i++) {
                cr_assert_eq(
                    op_client_volume_put(sd[i].c, LEVEL, &cv, OPT_TIMEOUT_MS, &v, &changed, &e),
                    OP_OK, "volume.put %s: %s", nv.name, e.msg);
                cr_assert(changed == want && v == ver + (uint64_t)want,
                          "volume.put %s: changed %d version %llu", nv.name, changed,
                          (unsigned long long)v);
            }
            w->vol[k] = nv;
            w->present[k] = 1;
        } else {
            want = w->present[k];
            for (int i = 0; i < NDAEMONS; i++) {
                cr_assert_eq(op_client_volume_drop(sd[i].c, LEVEL, slot_names[k], OPT_TIMEOUT_MS,
                                                   &v, &changed, &e),
                             OP_OK, "volume.drop: %s", e.msg);
                cr_assert(changed == want && v == ver + (uint64_t)want);
            }
            w->present[k] = 0;
        }
        *volume_only = 1;
        t->volume_edits += want;
    } else if (r < 94) {
        /* mesh.put or mesh.drop of the crate or the deck */
        int deck = r >= 82;
        opt_soup *s = deck ? &w->deck : &w->crate;
        const char *name = deck ? "deck" : "crate";
        if (r % 4 == 0) {
            want = s->nv > 0;
            for (int i = 0; i < NDAEMONS; i++) {
                cr_assert_eq(
                    op_client_mesh_drop(sd[i].c, LEVEL, name, OPT_TIMEOUT_MS, &v, &changed, &e),
                    OP_OK, "%s", e.msg);
                cr_assert(changed == want && v == ver + (uint64_t)want);
            }
            opt_soup_free(s);
        } else {
            opt_soup ns = {0};
            random_mesh(g, w, deck, &ns);
            want = !soup_equal(s, &ns);
            op_client_mesh m = opt_mesh(name, &ns);
            for (int i = 0; i < NDAEMONS; i++) {
                cr_assert_eq(
                    op_client_mesh_put(sd[i].c, LEVEL, &m, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK,
                    "%s", e.msg);
                cr_assert(changed == want && v == ver + (uint64_t)want);
            }
            soup_copy(s, &ns);
            opt_soup_free(&ns);
        }
        t->mesh_edits += want;
    } else {
        /* level.put of the level as it is (in another order: unchanged) or with another
         * volume set (changed unless the draw gave the same set) */
        op_volume old[NSLOTS], now[NSLOTS];
        int nold = sorted_volumes(w, old);
        if (r >= 97)
            for (int j = 0; j < NSLOTS; j++)
                if (op_test_rand_int(g, 0, 2) == 0) {
                    w->present[j] = !w->present[j];
                    if (w->present[j])
                        random_volume(g, w, slot_names[j], &w->vol[j]);
                }
        int nnow = sorted_volumes(w, now);
        want = nold != nnow;
        for (int j = 0; j < nnow && !want; j++)
            want = !vol_equal(&old[j], &now[j]);
        wire wr;
        to_wire(w, g, &wr);
        for (int i = 0; i < NDAEMONS; i++)
            level_put(&sd[i], w, &wr, ver + (uint64_t)want, want);
        t->level_puts++;
    }
    t->unchanged += !want;
    return want;
}

static void sequence(op_partition p, int moved, int steps, uint64_t seed)
{
    world w;
    world_open(&w, p, moved);
    op_test_rng g = {seed};
    side sd[NDAEMONS];
    const char *const cached[] = {"--no-fsync", NULL};
    const char *const uncached[] = {"--no-fsync", "--rebuild-cache-bytes", "0", NULL};
    for (int i = 0; i < NDAEMONS; i++) {
        opt_daemon_init(&sd[i].d);
        opt_daemon_start(&sd[i].d, i == CACHED ? cached : uncached);
        sd[i].c = opt_connect(&sd[i].d);
    }
    cr_assert_eq(rebuild_stats(sd[CACHED].c).limit, (uint64_t)256 << 20);
    cr_assert_eq(rebuild_stats(sd[UNCACHED].c).limit, 0);
    /* Created with three volumes. */
    for (int k = 0; k < 3; k++) {
        random_volume(&g, &w, slot_names[k], &w.vol[k]);
        w.present[k] = 1;
    }
    wire wr;
    to_wire(&w, &g, &wr);
    for (int i = 0; i < NDAEMONS; i++)
        level_put(&sd[i], &w, &wr, 1, 1);
    opt_ref prev, cur, empty = {0};
    bake(&w, &prev);
    uint64_t ver = 1;
    for (int i = 0; i < NDAEMONS; i++) {
        opt_check_changes(sd[i].c, LEVEL, 0, &empty, &prev);
        opt_check_level(sd[i].c, LEVEL, &prev);
    }
    tally t = {0};
    for (int s = 0; s < steps; s++) {
        rstats before[NDAEMONS];
        for (int i = 0; i < NDAEMONS; i++)
            before[i] = rebuild_stats(sd[i].c);
        int volume_only;
        int changed = step(&g, &w, sd, ver, &volume_only, &t);
        if (!changed) {
            op_client_changes ch;
            op_err e;
            for (int i = 0; i < NDAEMONS; i++) {
                cr_assert_eq(
                    op_client_changes_since(sd[i].c, LEVEL, ver, 0, OPT_TIMEOUT_MS, &ch, &e),
                    OP_OK);
                cr_assert_eq(ch.ntiles, 0, "step %d changed nothing, yet lists tiles", s);
                op_client_changes_free(&ch);
            }
            continue;
        }
        ver++;
        bake(&w, &cur);
        for (int i = 0; volume_only && i < cur.n; i++)
            t.tiles_changed_by_volumes += opt_ref_differs(&prev, &cur, cur.t[i].tx, cur.t[i].tz);
        for (int i = 0; i < NDAEMONS; i++) {
            opt_check_changes(sd[i].c, LEVEL, ver - 1, &prev, &cur);
            opt_check_level(sd[i].c, LEVEL, &cur);
            rstats after = rebuild_stats(sd[i].c);
            uint64_t built = after.builds - before[i].builds;
            uint64_t hits = after.hits - before[i].hits;
            if (i == UNCACHED)
                cr_assert(after.hits == 0 && after.misses == 0 && after.bytes == 0,
                          "step %d: the uncached daemon used a rebuild cache", s);
            else if (volume_only)
                /* No tile's geometry changed and nothing was evicted: every tile the
                 * volume edit rebuilt came from its base. */
                cr_assert(hits == built && after.evictions == 0,
                          "step %d: %llu of %llu tiles rebuilt from their base", s,
                          (unsigned long long)hits, (unsigned long long)built);
            if (i == CACHED && volume_only)
                t.rebuilt_from_base += hits;
        }
        check_volumes(sd[CACHED].c, &w, ver);
        opt_ref_free(&prev);
        prev = cur;
    }
    cr_assert_gt(t.volume_edits, steps / 3);
    cr_assert_gt(t.mesh_edits, steps / 10);
    cr_assert_gt(t.unchanged, 0);
    cr_assert_gt(t.rebuilt_from_base, (uint64_t)t.volume_edits, "few rebuilds from bases");
    cr_assert_gt(t.tiles_changed_by_volumes, t.volume_edits, "the volumes changed few tiles");
    fprintf(stderr,
            "%s: %d steps, version %llu: %d volume edits (%d tiles changed), %d mesh edits, %d "
            "level.put, %d unchanged; %llu tiles rebuilt from their base\n",
            op_partition_name(p), steps, (unsigned long long)ver, t.volume_edits,
            t.tiles_changed_by_volumes, t.mesh_edits, t.level_puts, t.unchanged,
            (unsigned long long)t.rebuilt_from_base);
    opt_ref_free(&prev);
    for (int i = 0; i < NDAEMONS; i++) {
        op_client_close(sd[i].c);
        cr_assert_eq(opt_daemon_stop(&sd[i].d), 0);
        opt_daemon_cleanup(&sd[i].d);
    }
    world_close(&w);
}

Test(daemon_volumes, sequence_watershed, .timeout = 600)
{
    sequence(OP_PARTITION_WATERSHED, 0, 200, 0x5eed0001);
}

Test(daemon_volumes, sequence_monotone, .timeout = 600)
{
    sequence(OP_PARTITION_MONOTONE, 1, 200, 0x5eed0002);
}

Test(daemon_volumes, sequence_layers, .timeout = 600)
{
    sequence(OP_PARTITION_LAYERS, 0, 200, 0x5eed0003);
}

/* ---- the rebuild cache's two paths ---- */

/* A level with an obstacle, then the obstacle moved: rebuilt from the bases (cache on)
 * or from scratch (their bases evicted by a budget of one byte), the same bytes. */
static void moved_obstacle(const char *budget, int want_from_base)
{
    world w;
    world_open(&w, OP_PARTITION_WATERSHED, 0);
    op_test_rng g = {77};
    side sd;
    opt_daemon_init(&sd.d);
    const char *const extra[] = {"--no-fsync", "--rebuild-cache-bytes", budget, NULL};
    opt_daemon_start(&sd.d, extra);
    sd.c = opt_connect(&sd.d);
    w.present[0] = 1;
    random_volume(&g, &w, "door", &w.vol[0]);
    w.vol[0].mode = OP_VOLUME_OBSTACLE;
    w.vol[0].area = 0;
    wire wr;
    to_wire(&w, &g, &wr);
    level_put(&sd, &w, &wr, 1, 1);
    opt_ref ref, ref2;
    bake(&w, &ref);
    opt_check_level(sd.c, LEVEL, &ref);
    rstats s0 = rebuild_stats(sd.c);
    cr_assert_eq(s0.misses, (uint64_t)ref.n, "every tile built from scratch once");
    cr_assert_eq(s0.hits, 0);
    /* Move it until some tile changes. */
    uint64_t v;
    int changed, moves = 0;
    op_err e;
    do {
        op_volume nv;
        random_volume(&g, &w, "door", &nv);
        nv.mode = OP_VOLUME_OBSTACLE;
        nv.area = 0;
        w.vol[0] = nv;
        op_client_volume cv = opt_client_volume(&nv, 1);
        cr_assert_eq(op_client_volume_put(sd.c, LEVEL, &cv, OPT_TIMEOUT_MS, &v, &changed, &e),
                     OP_OK, "%s", e.msg);
        cr_assert(changed);
        bake(&w, &ref2);
        opt_check_changes(sd.c, LEVEL, v - 1, &ref, &ref2);
        opt_check_level(sd.c, LEVEL, &ref2);
        int differ = 0;
        for (int i = 0; i < ref.n; i++)
            differ |= opt_ref_differs(&ref, &ref2, ref.t[i].tx, ref.t[i].tz);
        opt_ref_free(&ref);
        ref = ref2;
        moves++;
        if (differ)
            break;
    } while (moves < 20);
    cr_assert_lt(moves, 20, "no move changed a tile");
    rstats s1 = rebuild_stats(sd.c);
    uint64_t built = s1.builds - s0.builds;
    cr_assert_gt(built, 0);
    if (want_from_base) {
        cr_assert_eq(s1.hits - s0.hits, built, "%llu of %llu from the base",
                     (unsigned long long)(s1.hits - s0.hits), (unsigned long long)built);
        cr_assert_eq(s1.misses, s0.misses);
        cr_assert_eq(s1.evictions, 0);
        cr_assert_gt(s1.bytes, 0);
    } else {
        /* One byte: only the newest base stays; each rebuilt tile found its base gone. */
        cr_assert_gt(s0.evictions, 0);
        cr_assert_leq(s1.hits - s0.hits, 1);
        cr_assert_geq(s1.misses - s0.misses, built - 1);
    }
    fprintf(stderr, "budget %s: %d moves, %llu builds, %llu from the base, %llu evictions\n",
            budget, moves, (unsigned long long)built, (unsigned long long)(s1.hits - s0.hits),
            (unsigned long long)s1.evictions);
    opt_ref_free(&ref);
    op_client_close(sd.c);
    cr_assert_eq(opt_daemon_stop(&sd.d), 0);
    opt_daemon_cleanup(&sd.d);
    world_close(&w);
}

Test(daemon_volumes, volume_edit_rebuilds_from_cached_bases, .timeout = 120)
{
    moved_obstacle("64M", 1);
}

Test(daemon_volumes, evicted_bases_rebuild_from_scratch_to_the_same_bytes, .timeout = 120)
{
    moved_obstacle("1", 0);
}
