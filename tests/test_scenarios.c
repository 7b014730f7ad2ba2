/*
 * Hash-matrix scenarios of the whole tile pipeline (build3d-regions.md §8,
 * build3d-polys.md §9) and tile-validator coverage.
 *
 * Scenarios (each computed at 1 and 2 threads through op_parallel_for, asserted equal,
 * then compared with the pinned hash; pin with OP_UPDATE_GOLDEN=1):
 *   build3d/regions-contours-terrain  region and contour dumps of every tile of
 *                                     generated terrain 128, default settings;
 *   build3d/polys                     polygon and detail dumps of every tile of seeded
 *                                     random soups (bumpy ground, platforms, ramps, loose
 *                                     triangles) and of generated stairs;
 *   build3d/mesh-levels               tile blob hashes in key order of generated rooms,
 *                                     multifloor and ramp (64 m) under three settings.
 * Validator: every tile of every generated kind at 64, 128 and 256 m (512 m for a few
 * kinds) passes op_tile_validate, and so does every tile of seeded random soups built to
 * break things (slopes, overlaps, degenerate, huge and tiny triangles, far from the
 * origin); the only errors such a build may report are the §6 limits (OP_ELIMIT or
 * OP_ERANGE with a message naming the tile).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/build.h"
#include "onepath/hash.h"
#include "onepath/levelgen.h"
#include "onepath/parallel.h"
#include "onepath/tile_codec.h"
#include "op_test.h"

/* ---- per-tile jobs ---- */

typedef enum run_mode {
    MODE_REGIONS_CONTOURS, /* regions + contours dumps */
    MODE_POLYS_DETAIL,     /* polys + detail dumps */
    MODE_BLOBS,            /* (key, blob hash) per tile layer, every layer validated */
} run_mode;

typedef struct tile_result {
    op_status status;
    char msg[OP_ERR_MSG_MAX];
    uint64_t hash;
    int layers, polys;
} tile_result;

typedef struct level_run {
    const op_level *lvl;
    run_mode mode;
    tile_result *res; /* one per tile, row-major */
} level_run;

static int write_str(uint64_t *h, const char *s)
{
    return op_hash_sink_write(h, s, strlen(s));
}

/* Each tile layer is validated on its own (besides the assembler's check), its key is
 * the tile's, and its blob hash goes into the tile's hash with the key. */
static op_status blob_hashes(const op_tile_stages *st, tile_result *r, op_err *err)
{
    for (int k = 0; k < st->ntiles; k++) {
        const op_tile *t = &st->tiles[k];
        op_err ve;
        op_status s = op_tile_validate(t, &ve);
        if (s != OP_OK)
            return op_err_set(err, OP_EINTERNAL, "validator: tile (%d, %d) layer %d: %s", st->tx,
                              st->tz, t->layer, ve.msg);
        if (t->tx != st->tx || t->tz != st->tz || (k > 0 && t->layer <= st->tiles[k - 1].layer))
            return op_err_set(err, OP_EINTERNAL, "tile (%d, %d): layer %d has key (%d, %d, %d)",
                              st->tx, st->tz, k, t->tx, t->tz, t->layer);
        op_bytes b;
        uint64_t bh;
        if ((s = op_tile_encode(t, &b, &bh, err)) != OP_OK)
            return s;
        op_bytes_free(&b);
        int32_t key[3] = {t->tx, t->tz, t->layer};
        r->hash = op_hash_update(r->hash, key, sizeof key);
        r->hash = op_hash_update(r->hash, &bh, sizeof bh);
        r->polys += t->npolys;
    }
    r->layers = st->ntiles;
    return OP_OK;
}

static op_status tile_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    level_run *lr = user;
    tile_result *r = &lr->res[i];
    op_tile_rect rect = op_level_tiles(lr->lvl);
    int w = rect.tx1 - rect.tx0 + 1;
    int tx = rect.tx0 + i % w, tz = rect.tz0 + i / w;
    static const op_stage last[] = {OP_STAGE_CONTOURS, OP_STAGE_DETAIL, OP_STAGE_TILE};
    op_tile_stages st;
    op_err e;
    r->hash = OP_HASH_INIT;
    r->status = op_level_build_stages(lr->lvl, tx, tz, last[lr->mode], 0, out, scratch, &st, &e);
    if (r->status != OP_OK) {
        /* Recorded, not returned: the caller decides which errors are allowed. */
        snprintf(r->msg, sizeof r->msg, "%s", e.msg);
        return OP_OK;
    }
    char head[64];
    snprintf(head, sizeof head, "tile %d %d%s\n", tx, tz, st.skipped ? " skipped" : "");
    write_str(&r->hash, head);
    if (st.skipped)
        return OP_OK;
    int bad = 0;
    switch (lr->mode) {
    case MODE_REGIONS_CONTOURS:
        bad = op_regions_dump(&st.chf, &st.regions, op_hash_sink_write, &r->hash) ||
              op_contours_dump(&st.contours, op_hash_sink_write, &r->hash);
        break;
    case MODE_POLYS_DETAIL:
        bad = op_polys_dump(&st.polys, op_hash_sink_write, &r->hash) ||
              op_detail_dump(&st.detail, op_hash_sink_write, &r->hash);
        r->polys = st.polys.npolys;
        break;
    case MODE_BLOBS:
        return blob_hashes(&st, r, err);
    }
    return bad ? op_err_set(err, OP_EIO, "tile (%d, %d): dump failed", tx, tz) : OP_OK;
}

/* Runs every tile of lvl; returns the hash of the tile hashes in row-major order. */
static uint64_t run_level(const op_level *lvl, run_mode mode, int threads, tile_result **keep)
{
    int n = op_level_tile_count(lvl);
    level_run lr = {lvl, mode, calloc((size_t)n + 1, sizeof(tile_result))};
    op_parallel_opts o = {threads, NULL, NULL, NULL};
    op_err e;
    cr_assert_eq(op_parallel_for(n, &o, tile_job, &lr, &e), OP_OK, "%s", e.msg);
    uint64_t h = OP_HASH_INIT;
    for (int i = 0; i < n; i++)
        h = op_hash_update(h, &lr.res[i].hash, sizeof lr.res[i].hash);
    if (keep)
        *keep = lr.res;
    else
        free(lr.res);
    return h;
}

/* Every tile built without error. Returns the polygon count. */
static long assert_all_ok(const op_level *lvl, const tile_result *res, const char *name)
{
    long polys = 0;
    for (int i = 0; i < op_level_tile_count(lvl); i++) {
        cr_assert_eq(res[i].status, OP_OK, "%s: tile %d: %s", name, i, res[i].msg);
        polys += res[i].polys;
    }
    return polys;
}

/* The scenario hash of one level: the same at 1 and 2 threads, every tile ok. */
static uint64_t level_hash(const op_soup *soup, const op_settings *s, run_mode mode,
                           const char *name, long *polys)
{
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, s, NULL, 0, &lvl, &e), OP_OK, "%s: %s", name, e.msg);
    tile_result *res;
    uint64_t h1 = run_level(lvl, mode, 1, &res);
    uint64_t h2 = run_level(lvl, mode, 2, NULL);
    cr_assert_eq(h1, h2, "%s: 2 threads differ from 1", name);
    long p = assert_all_ok(lvl, res, name);
    if (polys)
        *polys += p;
    free(res);
    op_level_destroy(lvl);
    return h1;
}

static void gen(const char *kind, int size, uint64_t seed, op_arena *a, op_soup *soup)
{
    op_err e;
    cr_assert_eq(op_levelgen(kind, size, seed, a, soup, &e), OP_OK, "%s %d: %s", kind, size, e.msg);
}

/* ---- seeded random soups ---- */

typedef struct soup_buf {
    float *v;
    int *t;
    size_t nv, nt, capv, capt; /* floats, ints */
} soup_buf;

static int add_vert(soup_buf *b, double x, double y, double z)
{
    if (b->nv + 3 > b->capv) {
        b->capv = b->capv ? 2 * b->capv : 3072;
        b->v = realloc(b->v, b->capv * sizeof *b->v);
    }
    b->v[b->nv++] = (float)x;
    b->v[b->nv++] = (float)y;
    b->v[b->nv++] = (float)z;
    return (int)(b->nv / 3 - 1);
}

static void add_tri(soup_buf *b, int i, int j, int k)
{
    if (b->nt + 3 > b->capt) {
        b->capt = b->capt ? 2 * b->capt : 3072;
        b->t = realloc(b->t, b->capt * sizeof *b->t);
    }
    b->t[b->nt++] = i;
    b->t[b->nt++] = j;
    b->t[b->nt++] = k;
}

/* Quad a b c d (counter-clockwise seen from above gives an upward normal). */
static void add_quad(soup_buf *b, const double q[4][3])
{
    int i[4];
    for (int k = 0; k < 4; k++)
        i[k] = add_vert(b, q[k][0], q[k][1], q[k][2]);
    add_tri(b, i[0], i[2], i[1]);
    add_tri(b, i[0], i[3], i[2]);
}

static void add_box(soup_buf *b, double x0, double z0, double x1, double z1, double y0, double y1)
{
    const double top[4][3] = {{x0, y1, z0}, {x1, y1, z0}, {x1, y1, z1}, {x0, y1, z1}};
    add_quad(b, top);
    const double side[4][4][3] = {
        {{x0, y0, z0}, {x1, y0, z0}, {x1, y1, z0}, {x0, y1, z0}},
        {{x1, y0, z0}, {x1, y0, z1}, {x1, y1, z1}, {x1, y1, z0}},
        {{x1, y0, z1}, {x0, y0, z1}, {x0, y1, z1}, {x1, y1, z1}},
        {{x0, y0, z1}, {x0, y0, z0}, {x0, y1, z0}, {x0, y1, z1}},
    };
    for (int k = 0; k < 4; k++)
        add_quad(b, side[k]);
}

/* A plausible level of size x size metres at (ox, oz): a bumpy ground of 1 m quads,
 * platforms, ramps of random slope, and loose random triangles. */
static void soup_field(soup_buf *b, op_test_rng *rng, double ox, double oz, int size)
{
    int n = size;
    int base = (int)(b->nv / 3);
    for (int z = 0; z <= n; z++)
        for (int x = 0; x <= n; x++)
            add_vert(b, ox + x, op_test_rand_int(rng, 0, 6) * 0.0625, oz + z);
    for (int z = 0; z < n; z++)
        for (int x = 0; x < n; x++) {
            int a = base + x + z * (n + 1);
            add_tri(b, a, a + n + 1, a + 1);
            add_tri(b, a + 1, a + n + 1, a + n + 2);
        }
    for (int k = op_test_rand_int(rng, 2, 6); k > 0; k--) {
        double x = ox + op_test_rand_int(rng, 0, size - 4),
               z = oz + op_test_rand_int(rng, 0, size - 4);
        double w = op_test_rand_int(rng, 2, 12), d = op_test_rand_int(rng, 2, 12);
        add_box(b, x, z, x + w, z + d, 0, 0.25 * op_test_rand_int(rng, 1, 14));
    }
    for (int k = op_test_rand_int(rng, 1, 4); k > 0; k--) {
        double x = ox + op_test_rand_int(rng, 0, size - 8),
               z = oz + op_test_rand_int(rng, 0, size - 8);
        double len = op_test_rand_int(rng, 3, 8), h = len * op_test_rand01(rng) * 1.2;
        const double q[4][3] = {{x, 0.1, z}, {x + 2, 0.1, z}, {x + 2, h, z + len}, {x, h, z + len}};
        add_quad(b, q);
    }
    for (int k = op_test_rand_int(rng, 5, 20); k > 0; k--) {
        int i[3];
        for (int c = 0; c < 3; c++) {
            /* Drawn z, y, x: the order x86-64 gcc evaluated the three draws in when they
             * were arguments of one call (unspecified in C; aarch64 gcc went x, y, z and
             * made other soups), which the pinned build3d/polys hash holds. */
            double z = oz + op_test_rand01(rng) * size, y = op_test_rand01(rng) * 3.0;
            i[c] = add_vert(b, ox + op_test_rand01(rng) * size, y, z);
        }
        add_tri(b, i[0], i[1], i[2]);
    }
}

static op_soup soup_of(const soup_buf *b)
{
    op_soup s = {b->v, b->nv, b->t, b->nt, NULL};
    return s;
}

static void soup_free(soup_buf *b)
{
    free(b->v);
    free(b->t);
    memset(b, 0, sizeof *b);
}

/* ---- scenarios ---- */

Test(scenarios, regions_contours_terrain, .timeout = 300)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("terrain", 128, 1, a, &soup);
    op_settings s;
    op_settings_default(&s);
    uint64_t h = level_hash(&soup, &s, MODE_REGIONS_CONTOURS, "terrain 128", NULL);
    cr_assert_eq(level_hash(&soup, &s, MODE_REGIONS_CONTOURS, "terrain 128", NULL), h,
                 "second run differs");
    op_test_golden("build3d/regions-contours-terrain", h);
    op_arena_destroy(a);
}

Test(scenarios, polys, .timeout = 300)
{
    op_settings s;
    op_settings_default(&s);
    uint64_t h = OP_HASH_INIT;
    long polys = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        op_test_rng rng = {seed * 7919};
        soup_buf b = {0};
        soup_field(&b, &rng, 0.0, 0.0, 24);
        op_soup soup = soup_of(&b);
        char name[64];
        snprintf(name, sizeof name, "random field %d", (int)seed);
        uint64_t x = level_hash(&soup, &s, MODE_POLYS_DETAIL, name, &polys);
        cr_assert_eq(level_hash(&soup, &s, MODE_POLYS_DETAIL, name, NULL), x, "%s: rerun", name);
        h = op_hash_update(h, &x, sizeof x);
        soup_free(&b);
    }
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen("stairs", 64, 3, a, &soup);
    uint64_t x = level_hash(&soup, &s, MODE_POLYS_DETAIL, "stairs 64", &polys);
    h = op_hash_update(h, &x, sizeof x);
    op_arena_destroy(a);
    cr_assert_gt(polys, 100, "only %ld polygons", polys);
    op_test_golden("build3d/polys", h);
}

Test(scenarios, mesh_levels, .timeout = 300)
{
    static const char *const kinds[] = {"rooms", "multifloor", "ramp"};
    op_settings set[3];
    op_settings_default(&set[0]);
    op_settings_default(&set[1]);
    set[1].cell_size = 0.15;
    set[1].cell_height = 0.1;
    op_settings_default(&set[2]);
    set[2].partition = OP_PARTITION_MONOTONE;
    set[2].max_verts_per_poly = 3;
    uint64_t h = OP_HASH_INIT, per[3][3];
    for (int k = 0; k < 3; k++) {
        op_arena *a = op_arena_create(0);
        op_soup soup;
        gen(kinds[k], 64, 1, a, &soup);
        for (int v = 0; v < 3; v++) {
            char name[64];
            snprintf(name, sizeof name, "%s 64 settings %d", kinds[k], v);
            long polys = 0;
            per[k][v] = level_hash(&soup, &set[v], MODE_BLOBS, name, &polys);
            cr_assert_gt(polys, 0, "%s: no polygon", name);
            h = op_hash_update(h, &per[k][v], sizeof per[k][v]);
        }
        /* The three settings really build different meshes. */
        cr_assert_neq(per[k][0], per[k][1], "%s: finer cells changed nothing", kinds[k]);
        cr_assert_neq(per[k][0], per[k][2], "%s: monotone/3 changed nothing", kinds[k]);
        op_arena_destroy(a);
    }
    op_test_golden("build3d/mesh-levels", h);
}

/* ---- validator coverage ---- */

static void validate_generated(const char *kind, int size)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    gen(kind, size, 1, a, &soup);
    op_settings s;
    op_settings_default(&s);
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    tile_result *res;
    run_level(lvl, MODE_BLOBS, 2, &res);
    char name[64];
    snprintf(name, sizeof name, "%s %d", kind, size);
    cr_assert_gt(assert_all_ok(lvl, res, name), 0, "%s: no polygon", name);
    free(res);
    op_level_destroy(lvl);
    op_arena_destroy(a);
}

static const char *const all_kinds[] = {"flat",       "terrain", "stairs", "rooms",
                                        "multifloor", "ramp",    "pillars"};

Test(validator, generated_kinds_64_128_256, .timeout = 300)
{
    for (int size = 64; size <= 256; size *= 2)
        for (size_t k = 0; k < sizeof all_kinds / sizeof all_kinds[0]; k++)
            validate_generated(all_kinds[k], size);
}

Test(validator, generated_kinds_512, .timeout = 300)
{
    static const char *const big[] = {"terrain", "rooms", "multifloor", "ramp"};
    for (size_t k = 0; k < sizeof big / sizeof big[0]; k++)
        validate_generated(big[k], 512);
}

/* Soups built to break things, in a box of `size` metres at (ox, oy, oz). */
static void soup_hostile(soup_buf *b, op_test_rng *rng, double ox, double oy, double oz, int size)
{
    soup_field(b, rng, ox, oz, size);
    for (int k = op_test_rand_int(rng, 40, 120); k > 0; k--) {
        int kind = op_test_rand_int(rng, 0, 7);
        double cx = ox + op_test_rand01(rng) * size, cz = oz + op_test_rand01(rng) * size;
        double cy = oy + op_test_rand01(rng) * 6.0;
        double r = kind == 0   ? 1e-4 * op_test_rand01(rng)         /* tiny */
                   : kind == 1 ? size * (0.5 + op_test_rand01(rng)) /* huge */
                               : 0.2 + op_test_rand01(rng) * 4.0;
        double p[3][3];
        for (int c = 0; c < 3; c++) {
            p[c][0] = cx + (op_test_rand01(rng) - 0.5) * 2 * r;
            p[c][1] = cy + (op_test_rand01(rng) - 0.5) * 2 * r * op_test_rand01(rng);
            p[c][2] = cz + (op_test_rand01(rng) - 0.5) * 2 * r;
        }
        if (kind == 2) /* degenerate: a repeated vertex */
            memcpy(p[2], p[op_test_rand_int(rng, 0, 1)], sizeof p[2]);
        if (kind == 3) /* degenerate: collinear */
            for (int c = 0; c < 3; c++)
                p[2][c] = p[0][c] + (p[1][c] - p[0][c]) * 2.0;
        if (kind == 4) /* a steep slope near the walkable limit */
            p[2][1] = p[0][1] + r * (0.8 + 0.4 * op_test_rand01(rng));
        if (kind == 5 && op_test_rand_int(rng, 0, 3) == 0) /* a very tall sliver */
            p[1][1] = oy + 15000.0 * op_test_rand01(rng);
        int i[3];
        for (int c = 0; c < 3; c++)
            i[c] = add_vert(b, p[c][0], p[c][1], p[c][2]);
        add_tri(b, i[0], i[1], i[2]);
        if (kind == 6) /* the same triangle again: exact overlap */
            add_tri(b, i[0], i[1], i[2]);
        if (kind == 7) /* upside down */
            add_tri(b, i[2], i[1], i[0]);
    }
}

/* Every tile either builds and validates, or reports a §6 limit naming itself. */
static void check_hostile(const op_soup *soup, const op_settings *s, const char *name, long *built,
                          long *limited, char (*seen)[OP_ERR_MSG_MAX])
{
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create(soup, s, NULL, 0, &lvl, &e), OP_OK, "%s: %s", name, e.msg);
    tile_result *res;
    run_level(lvl, MODE_BLOBS, 2, &res);
    op_tile_rect r = op_level_tiles(lvl);
    int w = r.tx1 - r.tx0 + 1;
    for (int i = 0; i < op_level_tile_count(lvl); i++) {
        if (res[i].status == OP_OK) {
            *built += res[i].layers > 0;
            continue;
        }
        char want[64];
        snprintf(want, sizeof want, "tile (%d, %d)", r.tx0 + i % w, r.tz0 + i / w);
        cr_assert(res[i].status == OP_ELIMIT || res[i].status == OP_ERANGE, "%s: tile %s: %s: %s",
                  name, want, op_status_name(res[i].status), res[i].msg);
        cr_assert(strstr(res[i].msg, want), "%s: error does not name %s: %s", name, want,
                  res[i].msg);
        if (!seen[res[i].status == OP_ELIMIT][0])
            snprintf(seen[res[i].status == OP_ELIMIT], OP_ERR_MSG_MAX, "%s", res[i].msg);
        (*limited)++;
    }
    free(res);
    op_level_destroy(lvl);
}

Test(validator, hostile_random_soups, .timeout = 300)
{
    static const double origins[][3] = {{0, 0, 0},
                                        {5000.5, -3.25, 4999.75},
                                        {-123456.25, 200, 654321.5},
                                        {1048000, -1000, -1048000}};
    long built = 0, limited = 0;
    char seen[2][OP_ERR_MSG_MAX] = {"", ""}; /* a first OP_ERANGE and OP_ELIMIT message */
    /* OP_HOSTILE_SEEDS=N explores more seeds (a longer run when hunting bugs). */
    const char *env = getenv("OP_HOSTILE_SEEDS");
    int nseeds = env ? atoi(env) : 24;
    for (int seed = 1; seed <= nseeds; seed++) {
        const double *o = origins[seed % 4];
        op_test_rng rng = {(uint64_t)seed * 104729};
        soup_buf b = {0};
        soup_hostile(&b, &rng, o[0], o[1], o[2], 32);
        op_soup soup = soup_of(&b);
        op_settings s;
        op_settings_default(&s);
        char name[96];
        snprintf(name, sizeof name, "hostile soup %d at (%g, %g, %g)", seed, o[0], o[1], o[2]);
        check_hostile(&soup, &s, name, &built, &limited, seen);
        /* A small vertical reach limit turns tall tiles into §6 limit errors; other
         * settings vary with the seed. */
        s.max_local_extent = 6.0;
        s.partition = (op_partition)(seed % 3);
        switch (seed / 3 % 4) {
        case 1: /* fine cells */
            s.cell_size = 0.1;
            s.cell_height = 0.05;
            s.tile_size = 4.8;
            break;
        case 2: /* a point agent that climbs nothing; no detail; triangles only */
            s.agent_radius = 0.0;
            s.agent_max_climb = 0.0;
            s.detail_sample_distance = 0.0;
            s.max_verts_per_poly = 3;
            break;
        case 3: /* no region filtering, no contour error, no edge split, steep slopes */
            s.min_region_area = 0;
            s.merge_region_area = 0;
            s.contour_max_error = 0.0;
            s.max_edge_length = 0.0;
            s.agent_max_slope = 80.0;
            break;
        }
        check_hostile(&soup, &s, name, &built, &limited, seen);
        soup_free(&b);
    }
    cr_log_info("hostile soups: %ld tile builds with polygons, %ld limit errors (e.g. \"%s\", "
                "\"%s\")",
                built, limited, seen[0], seen[1]);
    cr_assert_gt(built, 200);
    cr_assert(seen[0][0] && seen[1][0], "both limits met: \"%s\", \"%s\"", seen[0], seen[1]);
}
