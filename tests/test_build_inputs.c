/*
 * Levels from heightfield and voxel-chunk input (build3d-spans.md §1.8/§1.9,
 * docs/spec/input-formats.md §5): a two-storey building with a ramp and a walkable roof,
 * generated here as a voxel chunk and baked with the Layers partition. Every tile validates,
 * a tile built alone equals the full build's, 1 and 2 threads give the same bytes, the
 * hash-matrix scenario build3d/mesh-layers-chunk pins the result. The same building as a
 * heightfield (each maximal voxel run one span) must give the very same tiles, and shifted
 * up by origin y the same tiles shifted; a file written and read back, and `onepath bake`
 * / `onepath inspect` on chunk and heightfield files, give the same results. A heightfield
 * terrain with a bridge (watershed partition, origin off the cell lines) checks the same
 * independence properties on its own.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onepath/build.h"
#include "onepath/hash.h"
#include "onepath/hfio.h"
#include "onepath/limits.h"
#include "onepath/parallel.h"
#include "onepath/tile_codec.h"
#include "op_test.h"

/* ==== the building ==== */

/* 80 x 40 x 64 voxels (3 x 2 tiles of 32 cells at the default 0.3 m cells, 0.2 m rows):
 *   ground: a slab of rows 0-1 everywhere (floor at row 2);
 *   building x 10..69, z 8..55: outer walls rows 2-35 with a doorway (rows 2-13) in the
 *   west and south walls; upper floor slab rows 18-19 (floor at row 20) except the
 *   stairwell above the ramp; roof slab rows 34-35 (floor at row 36);
 *   ramp x 20..37, z 12..17: column x = 20 + t solid up to row 3 + t (area 10), reaching
 *   the upper floor's surface at x = 37, which joins the slab at x = 38;
 *   an interior wall on the upper floor at x = 50 with a doorway at z 30..33. */
#define SX 80
#define SY 40
#define SZ 64

static void solid(uint8_t *v, int x, int z, int j0, int j1, int area)
{
    for (int j = j0; j < j1; j++)
        v[((size_t)z * SX + (size_t)x) * SY + (size_t)j] = (uint8_t)area;
}

static int in_building(int x, int z)
{
    return x >= 10 && x <= 69 && z >= 8 && z <= 55;
}

static int on_outer_wall(int x, int z)
{
    return in_building(x, z) && (x == 10 || x == 69 || z == 8 || z == 55);
}

static int in_stairwell(int x, int z)
{
    return x >= 20 && x <= 37 && z >= 12 && z <= 17;
}

static uint8_t *make_building(void)
{
    uint8_t *v = calloc((size_t)SX * SY * SZ, 1);
    cr_assert(v);
    for (int z = 0; z < SZ; z++)
        for (int x = 0; x < SX; x++) {
            solid(v, x, z, 0, 2, 63);
            if (!in_building(x, z))
                continue;
            if (on_outer_wall(x, z)) {
                int door = (x == 10 && z >= 30 && z <= 34) || (z == 8 && x >= 40 && x <= 44);
                solid(v, x, z, door ? 14 : 2, 36, 63);
                continue;
            }
            if (!in_stairwell(x, z))
                solid(v, x, z, 18, 20, 63);
            if (in_stairwell(x, z))
                solid(v, x, z, 2, 3 + (x - 20), 10);
            if (x == 50 && !(z >= 30 && z <= 33))
                solid(v, x, z, 20, 34, 63);
            solid(v, x, z, 34, 36, 63);
        }
    return v;
}

static op_voxel_chunk building_chunk(const uint8_t *v)
{
    return (op_voxel_chunk){SX, SY, SZ, -4.5, 12.0, v};
}

/* The chunk as heightfield input: each maximal run of non-empty voxels is one span with
 * its top voxel's area (what §1.9 says a chunk column becomes). */
typedef struct hf_store {
    op_hf_input hf;
    uint32_t *col_start;
    op_span_in *spans;
} hf_store;

static void chunk_to_hf(const op_voxel_chunk *vc, double origin_y, hf_store *out)
{
    size_t ncols = (size_t)vc->sx * vc->sz, n = 0;
    out->col_start = malloc((ncols + 1) * sizeof *out->col_start);
    out->spans = malloc(ncols * (size_t)vc->sy * sizeof *out->spans);
    for (size_t c = 0; c < ncols; c++) {
        out->col_start[c] = (uint32_t)n;
        const uint8_t *a = vc->areas + c * (size_t)vc->sy;
        for (int j = 0; j < vc->sy;) {
            if (!a[j]) {
                j++;
                continue;
            }
            int j0 = j;
            while (j < vc->sy && a[j])
                j++;
            out->spans[n++] = (op_span_in){(uint16_t)j0, (uint16_t)j, a[j - 1]};
        }
    }
    out->col_start[ncols] = (uint32_t)n;
    out->hf = (op_hf_input){vc->sx,   vc->sz,       vc->sy,         vc->origin_x,
                            origin_y, vc->origin_z, out->col_start, out->spans};
}

/* ==== building every tile ==== */

#define MAX_LAYERS 8

typedef struct tile_res {
    int nlayers;
    uint64_t hash[MAX_LAYERS];
    op_bytes blob[MAX_LAYERS];
} tile_res;

typedef struct full_build {
    const op_level *lvl;
    tile_res *res;
} full_build;

/* Tile i (row-major) of lvl: each layer validated, encoded and hashed into *t. */
static op_status build_tile(const op_level *lvl, int i, op_arena *out, op_arena *scratch,
                            tile_res *t, op_err *err)
{
    op_tile_rect r = op_level_tiles(lvl);
    int w = r.tx1 - r.tx0 + 1;
    op_tile_stages st;
    op_status s = op_level_build_stages(lvl, r.tx0 + i % w, r.tz0 + i / w, OP_STAGE_TILE, 0, out,
                                        scratch, &st, err);
    if (s != OP_OK)
        return s;
    if (st.ntiles > MAX_LAYERS)
        return op_err_set(err, OP_ELIMIT, "test: %d layers", st.ntiles);
    for (int k = 0; k < st.ntiles; k++) {
        if ((s = op_tile_validate(&st.tiles[k], err)) != OP_OK ||
            (s = op_tile_encode(&st.tiles[k], &t->blob[k], &t->hash[k], err)) != OP_OK)
            return s;
        t->nlayers = k + 1;
    }
    return OP_OK;
}

static op_status tile_job(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    full_build *fb = user;
    return build_tile(fb->lvl, i, out, scratch, &fb->res[i], err);
}

static void free_res(tile_res *res, int n)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < res[i].nlayers; k++)
            op_bytes_free(&res[i].blob[k]);
    free(res);
}

/* Builds every tile at `threads` threads; returns the scenario hash: the tiles' content
 * hashes (8 bytes little-endian each) in key order (row-major tiles, then layers), as
 * `onepath bake` prints it. */
static uint64_t build_all(const op_level *lvl, int threads, tile_res **keep)
{
    int n = op_level_tile_count(lvl);
    full_build fb = {lvl, calloc((size_t)n, sizeof(tile_res))};
    op_parallel_opts o = {threads, NULL, NULL, NULL};
    op_err e;
    cr_assert_eq(op_parallel_for(n, &o, tile_job, &fb, &e), OP_OK, "%d threads: %s", threads,
                 e.msg);
    uint64_t h = OP_HASH_INIT;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < fb.res[i].nlayers; k++) {
            uint8_t le[8];
            for (int b = 0; b < 8; b++)
                le[b] = (uint8_t)(fb.res[i].hash[k] >> (8 * b));
            h = op_hash_update(h, le, 8);
        }
    if (keep)
        *keep = fb.res;
    else
        free_res(fb.res, n);
    return h;
}

static void layers_settings(op_settings *s)
{
    op_settings_default(s);
    s->partition = OP_PARTITION_LAYERS;
}

static op_level *chunk_level(const op_voxel_chunk *vc, const op_settings *s)
{
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create_chunk(vc, s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    return lvl;
}

/* ==== tests ==== */

Test(build_inputs, chunk_tile_range_is_the_tiles_whose_core_holds_a_column)
{
    uint8_t *v = make_building();
    op_voxel_chunk vc = building_chunk(v);
    op_settings s;
    layers_settings(&s);
    op_level *lvl = chunk_level(&vc, &s);
    op_tile_rect r = op_level_tiles(lvl);
    /* 80 columns / 32 = 2.5 -> tiles 0..2; 64 / 32 -> 0..1. */
    cr_assert(r.tx0 == 0 && r.tx1 == 2 && r.tz0 == 0 && r.tz1 == 1, "%d..%d x %d..%d", r.tx0, r.tx1,
              r.tz0, r.tz1);
    float bmin[3], bmax[3];
    op_level_bounds(lvl, bmin, bmax);
    cr_assert(bmin[0] == -4.5f && bmin[1] == 0.0f && bmin[2] == 12.0f);
    cr_assert(fabsf(bmax[0] - (-4.5f + 24.0f)) < 1e-4f && fabsf(bmax[1] - 8.0f) < 1e-4f &&
              fabsf(bmax[2] - (12.0f + 19.2f)) < 1e-4f);
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_tile_stages st;
    op_err e;
    cr_assert_eq(op_level_build_stages(lvl, 3, 0, OP_STAGE_TILE, 0, out, scratch, &st, &e),
                 OP_ERANGE);
    cr_assert(strstr(e.msg, "tile (3, 0) is outside"), "%s", e.msg);
    cr_assert_eq(op_level_build_stages(lvl, -1, 0, OP_STAGE_TILE, 0, out, scratch, &st, &e),
                 OP_ERANGE);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_level_destroy(lvl);
    free(v);
}

Test(build_inputs, chunk_building_layers_validate_and_are_thread_and_tile_independent,
     .timeout = 120)
{
    uint8_t *v = make_building();
    op_voxel_chunk vc = building_chunk(v);
    op_settings s;
    layers_settings(&s);
    op_level *lvl = chunk_level(&vc, &s);
    int n = op_level_tile_count(lvl);
    tile_res *ref;
    uint64_t h1 = build_all(lvl, 1, &ref);
    cr_assert_eq(build_all(lvl, 2, NULL), h1, "2 threads differ from 1");
    cr_assert_eq(build_all(lvl, 1, NULL), h1, "a second build differs");
    /* Every tile alone, in fresh arenas, in reverse order: the same bytes. */
    full_build one = {lvl, calloc((size_t)n, sizeof(tile_res))};
    int max_layers = 0;
    for (int i = n - 1; i >= 0; i--) {
        op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
        op_err e;
        cr_assert_eq(tile_job(&one, i, out, scratch, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(one.res[i].nlayers, ref[i].nlayers, "tile %d layer count", i);
        for (int k = 0; k < ref[i].nlayers; k++) {
            cr_assert_eq(one.res[i].blob[k].len, ref[i].blob[k].len);
            cr_assert_eq(memcmp(one.res[i].blob[k].data, ref[i].blob[k].data, ref[i].blob[k].len),
                         0, "tile %d layer %d alone differs", i, k);
        }
        if (ref[i].nlayers > max_layers)
            max_layers = ref[i].nlayers;
        op_arena_destroy(out);
        op_arena_destroy(scratch);
    }
    /* Ground, upper floor and roof overlap: some tile has at least three layers. */
    cr_assert_geq(max_layers, 3, "max %d layers", max_layers);
    free_res(one.res, n);
    free_res(ref, n);
    op_test_golden("build3d/mesh-layers-chunk", h1);
    op_level_destroy(lvl);
    free(v);
}

/* The walkable surfaces sit where the voxels put them (y0 = 0, row height 0.2): polygons at
 * rows 2 (ground), 20 (upper floor) and 36 (roof), the ramp's area id kept, and the tiles
 * placed from the chunk's origin. */
Test(build_inputs, chunk_surfaces_are_at_their_voxel_rows)
{
    uint8_t *v = make_building();
    op_voxel_chunk vc = building_chunk(v);
    op_settings s;
    layers_settings(&s);
    op_level *lvl = chunk_level(&vc, &s);
    int seen[3] = {0, 0, 0}, ramp = 0;
    static const double floor_y[3] = {0.4, 4.0, 7.2};
    op_tile_rect r = op_level_tiles(lvl);
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
            op_tile_stages st;
            op_err e;
            cr_assert_eq(
                op_level_build_stages(lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e), OP_OK,
                "%s", e.msg);
            for (int k = 0; k < st.ntiles; k++) {
                const op_tile *t = &st.tiles[k];
                /* Tiles are counted from the chunk's origin (build3d-spans.md §1.8). */
                cr_assert(t->origin[0] == -4.5 + tx * 9.6 && t->origin[2] == 12.0 + tz * 9.6,
                          "tile (%d, %d) origin %.17g, %.17g", tx, tz, t->origin[0], t->origin[2]);
                for (int p = 0; p < t->npolys; p++) {
                    ramp |= t->areas[p] == 10;
                    if (t->areas[p] != 63)
                        continue;
                    double y = t->origin[1] + t->verts[3 * t->polys[(size_t)p * t->nvp] + 1];
                    for (int f = 0; f < 3; f++)
                        seen[f] |= fabs(y - floor_y[f]) < 0.25;
                }
            }
            op_arena_destroy(out);
            op_arena_destroy(scratch);
        }
    cr_assert(seen[0] && seen[1] && seen[2], "ground %d upper %d roof %d", seen[0], seen[1],
              seen[2]);
    cr_assert(ramp, "no polygon of the ramp's area 10");
    op_level_destroy(lvl);
    free(v);
}

/* The same building as heightfield input gives the same tiles (origin y 0), and with
 * origin y = 3 the same tiles with OriginY raised by 3. */
Test(build_inputs, heightfield_input_equals_the_chunk, .timeout = 120)
{
    uint8_t *v = make_building();
    op_voxel_chunk vc = building_chunk(v);
    op_settings s;
    layers_settings(&s);
    op_level *cl = chunk_level(&vc, &s);
    tile_res *cres;
    uint64_t hc = build_all(cl, 2, &cres);
    hf_store hs;
    chunk_to_hf(&vc, 0.0, &hs);
    op_level *hl;
    op_err e;
    cr_assert_eq(op_level_create_hf(&hs.hf, &s, NULL, 0, &hl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_tile_count(hl), op_level_tile_count(cl));
    cr_assert_eq(build_all(hl, 2, NULL), hc, "heightfield level differs from the chunk level");
    op_level_destroy(hl);
    hs.hf.origin_y = 3.0;
    cr_assert_eq(op_level_create_hf(&hs.hf, &s, NULL, 0, &hl, &e), OP_OK, "%s", e.msg);
    int n = op_level_tile_count(hl);
    op_arena *a = op_arena_create(0);
    for (int i = 0; i < n; i++) {
        tile_res one = {0};
        op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
        cr_assert_eq(build_tile(hl, i, out, scratch, &one, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(one.nlayers, cres[i].nlayers);
        for (int k = 0; k < cres[i].nlayers; k++) {
            op_tile up, base;
            cr_assert_eq(op_tile_decode(one.blob[k].data, one.blob[k].len, a, &up, NULL, &e), OP_OK,
                         "%s", e.msg);
            cr_assert_eq(
                op_tile_decode(cres[i].blob[k].data, cres[i].blob[k].len, a, &base, NULL, &e),
                OP_OK, "%s", e.msg);
            cr_assert(fabs(up.origin[1] - (base.origin[1] + 3.0)) < 1e-9, "%.17g vs %.17g",
                      up.origin[1], base.origin[1]);
            cr_assert(up.npolys == base.npolys && up.nverts == base.nverts);
            cr_assert_eq(memcmp(up.verts, base.verts, (size_t)up.nverts * 12), 0);
            cr_assert_eq(memcmp(up.polys, base.polys, (size_t)up.npolys * up.nvp * 2), 0);
        }
        for (int k = 0; k < one.nlayers; k++)
            op_bytes_free(&one.blob[k]);
        op_arena_destroy(out);
        op_arena_destroy(scratch);
    }
    op_arena_destroy(a);
    op_level_destroy(hl);
    op_level_destroy(cl);
    free_res(cres, n);
    free(hs.col_start);
    free(hs.spans);
    free(v);
}

/* A rolling terrain of 75 x 50 columns (floor rows 6..34) with a bridge deck 40 rows above
 * it (z 15..30, x 10..60), from an origin off the cell lines. */
static void make_terrain(hf_store *out)
{
    const int w = 75, d = 50;
    out->col_start = malloc((size_t)(w * d + 1) * sizeof *out->col_start);
    out->spans = malloc((size_t)(w * d * 2) * sizeof *out->spans);
    uint32_t n = 0;
    for (int k = 0; k < d; k++)
        for (int i = 0; i < w; i++) {
            out->col_start[k * w + i] = n;
            int h = 20 + (int)lround(8.0 * sin(i / 9.0) + 6.0 * cos(k / 7.0));
            out->spans[n++] = (op_span_in){0, (uint16_t)h, 63};
            if (k >= 15 && k <= 30 && i >= 10 && i <= 60)
                out->spans[n++] = (op_span_in){(uint16_t)(h + 40), (uint16_t)(h + 42), 63};
        }
    out->col_start[w * d] = n;
    out->hf = (op_hf_input){w, d, 120, -37.3, 5.1, 100.7, out->col_start, out->spans};
}

Test(build_inputs, heightfield_terrain_validates_and_is_thread_and_tile_independent, .timeout = 120)
{
    hf_store hs;
    make_terrain(&hs);
    op_settings s;
    op_settings_default(&s);
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create_hf(&hs.hf, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    cr_assert(r.tx0 == 0 && r.tx1 == 2 && r.tz0 == 0 && r.tz1 == 1);
    int n = op_level_tile_count(lvl);
    tile_res *ref;
    uint64_t h1 = build_all(lvl, 1, &ref);
    cr_assert_eq(build_all(lvl, 2, NULL), h1, "2 threads differ from 1");
    int deck = 0;
    for (int i = n - 1; i >= 0; i--) {
        tile_res one = {0};
        op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
        cr_assert_eq(build_tile(lvl, i, out, scratch, &one, &e), OP_OK, "%s", e.msg);
        cr_assert_eq(one.nlayers, ref[i].nlayers);
        for (int k = 0; k < one.nlayers; k++) {
            cr_assert_eq(one.hash[k], ref[i].hash[k], "tile %d alone differs", i);
            op_tile t;
            cr_assert_eq(op_tile_decode(one.blob[k].data, one.blob[k].len, out, &t, NULL, &e),
                         OP_OK, "%s", e.msg);
            /* The deck's floor is at least 48 rows up (y >= 5.1 + 9.6); the terrain's at
             * most 34 (y <= 5.1 + 6.8). */
            for (int p = 0; p < t.npolys; p++)
                deck |= t.origin[1] + t.verts[3 * t.polys[(size_t)p * t.nvp] + 1] > 13.0;
            /* Tile origins follow the input's own origin (§1.8): tile tx starts at
             * origin_x + tx * tile_size. */
            int tx = i % 3, tz = i / 3;
            cr_assert(fabs(t.origin[0] - (-37.3 + tx * 9.6)) < 1e-9 &&
                          fabs(t.origin[2] - (100.7 + tz * 9.6)) < 1e-9,
                      "tile (%d, %d) origin %.17g, %.17g", tx, tz, t.origin[0], t.origin[2]);
            op_bytes_free(&one.blob[k]);
        }
        op_arena_destroy(out);
        op_arena_destroy(scratch);
    }
    cr_assert(deck, "no polygon on the bridge deck");
    free_res(ref, n);
    op_level_destroy(lvl);
    free(hs.col_start);
    free(hs.spans);
}

static int file_sink(void *ctx, const char *data, size_t len)
{
    return fwrite(data, 1, len, ctx) == len ? 0 : -1;
}

/* Runs `onepath ARGS` (stderr too) into out; returns its exit status. */
static int run_cli(char *out, size_t cap, const char *fmt, ...)
{
    char args[1024], cmd[1400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s/onepath %s 2>&1", OP_BIN_DIR, args);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "%s", cmd);
    size_t got = fread(out, 1, cap - 1, p);
    out[got] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Written to a file, read back and baked (in process and by `onepath bake`): the same hash. */
Test(build_inputs, chunk_file_bakes_to_the_same_hash, .timeout = 120)
{
    uint8_t *v = make_building();
    op_voxel_chunk vc = building_chunk(v);
    op_settings s;
    layers_settings(&s);
    op_level *lvl = chunk_level(&vc, &s);
    uint64_t h = build_all(lvl, 2, NULL);
    op_level_destroy(lvl);
    char path[256];
    snprintf(path, sizeof path, "/tmp/op_test_build_inputs_%ld.opvc", (long)getpid());
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    op_err e;
    cr_assert_eq(op_chunk_write(&vc, file_sink, f, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(fclose(f), 0);
    op_arena *a = op_arena_create(0);
    op_voxel_chunk back;
    cr_assert_eq(op_chunk_read_file(path, a, &back, &e), OP_OK, "%s", e.msg);
    lvl = chunk_level(&back, &s);
    cr_assert_eq(build_all(lvl, 1, NULL), h);
    op_level_destroy(lvl);
    char out[2048], want[64];
    snprintf(want, sizeof want, "\"hash\": \"%016llx\"", (unsigned long long)h);
    cr_assert_eq(
        run_cli(out, sizeof out, "bake %s --set partition=layers --threads 2 --json", path), 0,
        "%s", out);
    cr_assert(strstr(out, want), "%s lacks %s", out, want);
    /* The same building as a heightfield file bakes to the same hash. */
    hf_store hs;
    chunk_to_hf(&vc, 0.0, &hs);
    char hpath[256];
    snprintf(hpath, sizeof hpath, "/tmp/op_test_build_inputs_%ld.ophf", (long)getpid());
    f = fopen(hpath, "wb");
    cr_assert(f);
    cr_assert_eq(op_hf_write(&hs.hf, file_sink, f, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(run_cli(out, sizeof out, "bake %s --set partition=layers --json", hpath), 0, "%s",
                 out);
    cr_assert(strstr(out, want), "%s lacks %s", out, want);
    /* inspect reads both, and counts tile (1, 1)'s layers as the build does. */
    lvl = chunk_level(&vc, &s);
    op_arena *o = op_arena_create(0), *sc = op_arena_create(0);
    op_tile_stages st;
    cr_assert_eq(op_level_build_stages(lvl, 1, 1, OP_STAGE_TILE, 0, o, sc, &st, &e), OP_OK, "%s",
                 e.msg);
    char layers[32];
    snprintf(layers, sizeof layers, "\"layers\": %d}", st.ntiles);
    const char *files[2] = {path, hpath};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(run_cli(out, sizeof out,
                             "inspect %s --tile 1,1 --stage tile --set "
                             "partition=layers --json",
                             files[i]),
                     0, "%s", out);
        cr_assert(strstr(out, layers), "%s lacks %s", out, layers);
    }
    /* A damaged file: exit 1 and the reader's message with its offset. */
    f = fopen(hpath, "r+b");
    cr_assert(f);
    cr_assert_eq(fseek(f, 8, SEEK_SET), 0);
    cr_assert_eq(fputc(0, f), 0);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(run_cli(out, sizeof out, "bake %s", hpath), 1, "%s", out);
    cr_assert(strstr(out, "heightfield file: offset 8: width"), "%s", out);
    op_arena_destroy(o);
    op_arena_destroy(sc);
    op_level_destroy(lvl);
    remove(hpath);
    free(hs.col_start);
    free(hs.spans);
    remove(path);
    op_arena_destroy(a);
    free(v);
}

/* ==== level refusals and limits ==== */

Test(build_inputs, level_refuses_invalid_inputs)
{
    op_settings s;
    op_settings_default(&s);
    op_level *lvl = (op_level *)&s;
    op_err e;
    uint8_t areas[4] = {0, 64, 0, 0};
    op_voxel_chunk vc = {1, 2, 2, 0, 0, areas};
    cr_assert_eq(op_level_create_chunk(&vc, &s, NULL, 0, &lvl, &e), OP_ERANGE);
    cr_assert_null(lvl);
    cr_assert(strstr(e.msg, "area 64"), "%s", e.msg);
    uint32_t cs[2] = {0, 1};
    op_span_in sp[1] = {{3, 3, 63}};
    op_hf_input hf = {1, 1, 8, 0, 0, 0, cs, sp};
    cr_assert_eq(op_level_create_hf(&hf, &s, NULL, 0, &lvl, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "heightfield"), "%s", e.msg);
    sp[0].smax = 4;
    s.cell_size = -1;
    cr_assert_eq(op_level_create_hf(&hf, &s, NULL, 0, &lvl, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "cell_size"), "%s", e.msg);
    op_settings_default(&s);
    cr_assert_eq(op_level_create_hf(&hf, &s, NULL, -1, &lvl, &e), OP_EINVAL);
    /* Columns input places its tiles at its own origin: no grid origin (spans §1.8). */
    s.grid_origin_z = 0.5;
    cr_assert_eq(op_level_create_hf(&hf, &s, NULL, 0, &lvl, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "grid_origin_z = 0.5"), "%s", e.msg);
    areas[1] = 63;
    cr_assert_eq(op_level_create_chunk(&vc, &s, NULL, 0, &lvl, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "voxel chunk"), "%s", e.msg);
    op_arena *a = op_arena_create(0);
    op_heightfield h;
    cr_assert_eq(op_tile_heightfield_build_hf(&hf, &s, 0, 0, a, &h, &e), OP_EINVAL);
    cr_assert_eq(op_tile_heightfield_build_chunk(&vc, &s, 0, 0, a, &h, &e), OP_EINVAL);
    op_arena_destroy(a);
    s.grid_origin_z = 0.0;
    cr_assert_eq(op_level_create_hf(&hf, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_level_destroy(lvl);
}

/* Tiles of a columns input at N (1024 x 1024 tiles of one cell) and N + 1 (1025 x 1024). */
Test(build_inputs, tile_count_limit_at_n_and_n_plus_1)
{
    op_settings s;
    op_settings_default(&s);
    s.tile_size = s.cell_size; /* TileCells = 1 */
    size_t ncols = 1025u * 1024u;
    uint32_t *cs = calloc(ncols + 1, sizeof *cs);
    op_span_in sp[1];
    op_hf_input hf = {1024, 1024, 4, 0, 0, 0, cs, sp};
    op_level *lvl;
    op_err e;
    cr_assert_eq(op_level_create_hf(&hf, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_tile_count(lvl), OP_MAX_TILES);
    op_level_destroy(lvl);
    hf.width = 1025;
    cr_assert_eq(op_level_create_hf(&hf, &s, NULL, 0, &lvl, &e), OP_ERANGE);
    cr_assert(strstr(e.msg, "1025 x 1024 = 1049600 tiles > 1048576"), "%s", e.msg);
    uint8_t *areas = calloc(ncols, 1);
    op_voxel_chunk vc = {1024, 1, 1025, 0, 0, areas};
    cr_assert_eq(op_level_create_chunk(&vc, &s, NULL, 0, &lvl, &e), OP_ERANGE);
    vc.sz = 1024;
    cr_assert_eq(op_level_create_chunk(&vc, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_level_destroy(lvl);
    free(areas);
    free(cs);
}
