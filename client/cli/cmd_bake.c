/*
 * onepath bake: a full build of a level, tiles in parallel, assembled in row-major
 * order; optional blob files per tile layer; a summary (text or --json).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_common.h"
#include "onepath/build.h"
#include "onepath/cpus.h"
#include "onepath/hash.h"
#include "onepath/hfio.h"
#include "onepath/parallel.h"
#include "onepath/tile_codec.h"
#include "manifest.h"
#include "remote_common.h"

/* Layers kept per tile in a bake result; more is an error naming the tile. */
#define OP_MAX_LAYERS_PER_RESULT 64

typedef struct tile_out {
    int tx, tz;
    int nlayers;
    int layer[OP_MAX_LAYERS_PER_RESULT];
    op_bytes blob[OP_MAX_LAYERS_PER_RESULT];
    uint64_t hash[OP_MAX_LAYERS_PER_RESULT];
    long polys, verts, dtris;
    double coverage;
} tile_out;

typedef struct bake_job {
    const op_level *lvl;
    op_tile_rect rect;
    int single; /* build only (stx, stz) */
    int stx, stz;
    tile_out *res; /* one per job index */
} bake_job;

static double poly_area(const op_tile *t, int p)
{
    const uint16_t *pv = &t->polys[(size_t)p * t->nvp];
    double a = 0.0;
    int n = 0;
    while (n < t->nvp && pv[n] != OP_POLY_NULL)
        n++;
    for (int k = 0; k < n; k++) {
        const float *u = &t->verts[3 * pv[k]], *v = &t->verts[3 * pv[(k + 1) % n]];
        a += (double)u[0] * v[2] - (double)v[0] * u[2];
    }
    return a * 0.5;
}

static op_status bake_one(void *user, int i, op_arena *out, op_arena *scratch, op_err *err)
{
    bake_job *j = user;
    tile_out *r = &j->res[i];
    int w = j->rect.tx1 - j->rect.tx0 + 1;
    r->tx = j->single ? j->stx : j->rect.tx0 + i % w;
    r->tz = j->single ? j->stz : j->rect.tz0 + i / w;
    op_tile_stages st;
    op_status s =
        op_level_build_stages(j->lvl, r->tx, r->tz, OP_STAGE_TILE, 0, out, scratch, &st, err);
    if (s != OP_OK)
        return s;
    if (st.ntiles > OP_MAX_LAYERS_PER_RESULT)
        return op_err_set(err, OP_ELIMIT, "bake: tile (%d, %d) has %d layers > %d", r->tx, r->tz,
                          st.ntiles, OP_MAX_LAYERS_PER_RESULT);
    for (int k = 0; k < st.ntiles; k++) {
        const op_tile *t = &st.tiles[k];
        if ((s = op_tile_encode(t, &r->blob[k], &r->hash[k], err)) != OP_OK)
            return s;
        r->layer[k] = t->layer;
        r->nlayers = k + 1;
        r->polys += t->npolys;
        r->verts += t->nverts;
        r->dtris += t->ndtris;
        for (int p = 0; p < t->npolys; p++)
            r->coverage += poly_area(t, p);
    }
    return OP_OK;
}

static void progress(void *ctx, int done, int total)
{
    (void)ctx;
    int width = 40, filled = (int)((long)done * width / (total ? total : 1));
    fprintf(stderr, "\r[%.*s%*s] %d/%d tiles", filled, "########################################",
            width - filled, "", done, total);
    if (done == total)
        fputc('\n', stderr);
}

/* The bake's summary hash: the layer hashes folded in order (also the manifest's). */
static uint64_t summary_hash(const bake_job *j, int n)
{
    uint64_t h = OP_HASH_INIT;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < j->res[i].nlayers; k++)
            h = hash_fold(h, j->res[i].hash[k]);
    return h;
}

typedef struct bake_opts {
    const char *level;
    const char *out_dir;
    const char *volumes; /* --volumes FILE.json */
    int threads, json, single, stx, stz;
    int shard, nshards;                     /* --shard I/N: only the I-th of N bands of tile rows */
    const char *sets[OP_MANIFEST_MAX_SETS]; /* --set texts, for the manifest */
    int nsets;
    op_settings s;
} bake_opts;

static int usage(void)
{
    fprintf(stderr,
            "usage: onepath bake [LEVEL | gen:KIND:SIZE:SEED] [--set key=value ...]\n"
            "                    [--threads N] [--tile TX,TZ | --shard I/N] [--out DIR] [--json]\n"
            "                    [--volumes FILE.json]\n"
            "LEVEL is an OBJ file, a heightfield (OPHF) or a voxel chunk (OPVC) file\n"
            "(docs/spec/input-formats.md), told apart by their first bytes.\n"
            "--volumes reads box, cylinder and prism volumes (areas and obstacles) from a JSON\n"
            "array (docs/spec/input-formats.md §6).\n"
            "--shard I/N bakes only band I (0-based) of N equal bands of tile rows; the\n"
            "bands' --out files together are exactly the files of the whole bake.\n"
            "With no level, bakes the bundled default (%s).\n",
            OP_CLI_DEFAULT_LEVEL);
    return 2;
}

static int parse(int argc, char **argv, bake_opts *o)
{
    memset(o, 0, sizeof *o);
    op_settings_default(&o->s);
    o->threads = op_cpu_count(); /* affinity and cgroup quota, not the machine's count */
    if (o->threads > OP_MAX_THREADS)
        o->threads = OP_MAX_THREADS;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage();
        if (!strcmp(a, "--json"))
            o->json = 1;
        else if (!strcmp(a, "--set") && more) {
            if (cli_apply_set(&o->s, argv[++i]))
                return 2;
        } else if (!strcmp(a, "--threads") && more) {
            if (cli_parse_int("--threads", argv[++i], 1, OP_MAX_THREADS, &o->threads))
                return 2;
        } else if (!strcmp(a, "--tile") && more) {
            if (cli_parse_tile(argv[++i], &o->stx, &o->stz)) {
                fprintf(stderr, "onepath: --tile wants TX,TZ, got '%s'\n", argv[i]);
                return 2;
            }
            o->single = 1;
        } else if (!strcmp(a, "--shard") && more) {
            if (sscanf(argv[++i], "%d/%d", &o->shard, &o->nshards) != 2 || o->nshards < 1 ||
                o->shard < 0 || o->shard >= o->nshards) {
                fprintf(stderr, "onepath: --shard wants I/N with 0 <= I < N, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--out") && more)
            o->out_dir = argv[++i];
        else if (!strcmp(a, "--volumes") && more)
            o->volumes = argv[++i];
        else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "onepath: bake: unknown or incomplete option '%s'\n", a);
            return usage();
        } else if (!o->level)
            o->level = a;
        else
            return usage();
    }
    if (!o->level)
        o->level = OP_CLI_DEFAULT_LEVEL;
    return 0;
}

static void print_summary(const bake_opts *o, const bake_job *j, int n, double ms)
{
    long tiles = 0, layers = 0, polys = 0, verts = 0, dtris = 0;
    size_t bytes = 0;
    double coverage = 0.0;
    uint64_t h = summary_hash(j, n);
    for (int i = 0; i < n; i++) {
        const tile_out *r = &j->res[i];
        tiles += r->nlayers > 0;
        layers += r->nlayers;
        polys += r->polys;
        verts += r->verts;
        dtris += r->dtris;
        coverage += r->coverage;
        for (int k = 0; k < r->nlayers; k++)
            bytes += r->blob[k].len;
    }
    if (o->json) {
        printf("{\"level\": ");
        cli_json_str(stdout, o->level);
        printf(", \"tiles\": %ld, \"layers\": %ld, \"polygons\": %ld, \"vertices\": %ld, "
               "\"detail_triangles\": %ld, \"coverage\": %.3f, \"build_ms\": %.1f, "
               "\"bytes\": %zu, \"threads\": %d, \"hash\": \"%016llx\"}\n",
               tiles, layers, polys, verts, dtris, coverage, ms, bytes, o->threads,
               (unsigned long long)h);
    } else {
        printf("baked %s: %ld tiles, %ld layers, %ld polygons, %ld vertices, %ld detail "
               "triangles\ncoverage %.1f m2, %zu bytes, %.1f ms on %d threads, hash %016llx\n",
               o->level, tiles, layers, polys, verts, dtris, coverage, bytes, ms, o->threads,
               (unsigned long long)h);
    }
}

/* cli_open_level, a soup level prepared on the bake's workers (the level does not
 * depend on their number); *prep_ms is the preparation's time (not the reading's). */
static int open_level(const bake_opts *o, op_pool *pool, op_arena *a, op_level **lvl,
                      double *prep_ms)
{
    op_err e;
    op_input_kind kind = OP_INPUT_OTHER;
    *prep_ms = 0.0;
    if (strncmp(o->level, "gen:", 4) != 0 && op_input_sniff_file(o->level, &kind, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s\n", e.msg);
        return 1;
    }
    op_volume *vols;
    int nvols;
    if (cli_read_volumes(o->volumes, a, &vols, &nvols))
        return 1;
    if (kind == OP_INPUT_HEIGHTFIELD || kind == OP_INPUT_CHUNK)
        return cli_open_level_vols(o->level, &o->s, vols, nvols, a, lvl);
    op_soup soup;
    if (cli_load_level(o->level, a, &soup))
        return 1;
    double t0 = cli_now_ms();
    if (op_level_create_pool(&soup, &o->s, vols, nvols, pool, lvl, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s: %s\n", o->level, e.msg);
        return 1;
    }
    *prep_ms = cli_now_ms() - t0;
    return 0;
}

/* All jobs, heaviest first on several threads (a long tile started last would leave
 * the other workers idle); results still go to each job's own slot. */
static op_status run_jobs(bake_job *j, int n, const op_parallel_opts *po, op_err *e)
{
    if (po->threads <= 1 || n <= 1 || j->single)
        return op_parallel_for(n, po, bake_one, j, e);
    int *order = malloc((size_t)n * sizeof *order);
    if (!order)
        return op_err_set(e, OP_ENOMEM, "bake: out of memory (job order)");
    op_status st = op_level_job_order(j->lvl, j->rect, order, e);
    if (st == OP_OK)
        st = op_parallel_for_ordered(n, po, order, bake_one, j, e);
    free(order);
    return st;
}

/* Was (tx, tz, layer) written by this bake? */
static int written(const bake_job *j, int n, int tx, int tz, int layer)
{
    int w = j->rect.tx1 - j->rect.tx0 + 1;
    for (int i = 0; i < n; i++) {
        const tile_out *r = &j->res[i];
        if (j->single ? (r->tx != tx || r->tz != tz)
                      : (i != (tz - j->rect.tz0) * w + (tx - j->rect.tx0) || tx < j->rect.tx0 ||
                         tx > j->rect.tx1))
            continue;
        for (int k = 0; k < r->nlayers; k++)
            if (r->layer[k] == layer)
                return 1;
    }
    return 0;
}

/* Removes the tile files of this bake's scope that it did not write (bake-output.md §1.3):
 * every one for a full bake, those of the shard's rows, or the other layers of --tile. */
static int remove_stale(const bake_opts *o, const bake_job *j, int n)
{
    DIR *d = opendir(o->out_dir);
    if (!d) {
        fprintf(stderr, "onepath: cannot open %s: %s\n", o->out_dir, strerror(errno));
        return 1;
    }
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        int tx, tz, layer, len = 0;
        if (sscanf(de->d_name, "tile_%d_%d_%d.optile%n", &tx, &tz, &layer, &len) != 3 ||
            de->d_name[len] || len == 0)
            continue;
        int scope = j->single        ? (tx == j->stx && tz == j->stz)
                    : o->nshards > 1 ? (tz >= j->rect.tz0 && tz <= j->rect.tz1)
                                     : 1;
        if (!scope || written(j, n, tx, tz, layer))
            continue;
        char path[4352];
        snprintf(path, sizeof path, "%s/%s", o->out_dir, de->d_name);
        if (unlink(path) != 0 && errno != ENOENT) {
            fprintf(stderr, "onepath: cannot remove stale %s: %s\n", path, strerror(errno));
            rc = 1;
        }
    }
    closedir(d);
    return rc;
}

/* The tile files (each written to a temporary name and renamed), the stale ones removed,
 * and, for a full or shard bake, the manifest last (docs/spec/bake-output.md). */
static int write_out(const bake_opts *o, const bake_job *j, int n, const op_level *lvl)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < j->res[i].nlayers; k++)
            if (tile_file_write(o->out_dir, j->res[i].tx, j->res[i].tz, j->res[i].layer[k],
                                j->res[i].blob[k].data, j->res[i].blob[k].len))
                return 1;
    if (remove_stale(o, j, n))
        return 1;
    if (j->single)
        return 0;
    op_tile_rect g = op_level_tiles(lvl);
    manifest_head h = {.level = o->level,
                       .sets = o->sets,
                       .nsets = o->nsets,
                       .grid = {g.tx0, g.tz0, g.tx1, g.tz1},
                       .shard = o->nshards > 1 ? o->shard : 0,
                       .nshards = o->nshards > 1 ? o->nshards : 1,
                       .row0 = j->rect.tz0,
                       .row1 = j->rect.tz1};
    if (!strncmp(o->level, "gen:", 4))
        h.input = op_hash_bytes(o->level, strlen(o->level));
    else if (manifest_hash_file(o->level, &h.input))
        return 1;
    if (o->volumes && (h.has_volumes = 1) && manifest_hash_file(o->volumes, &h.volumes))
        return 1;
    if (manifest_remove_stale(o->out_dir, h.nshards))
        return 1;
    FILE *f = manifest_begin(o->out_dir, &h);
    if (!f)
        return 1;
    long lines = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < j->res[i].nlayers; k++, lines++) {
            char name[128];
            snprintf(name, sizeof name, "tile_%d_%d_%d.optile", j->res[i].tx, j->res[i].tz,
                     j->res[i].layer[k]);
            manifest_tile(f, name, j->res[i].blob[k].len,
                          op_hash_bytes(j->res[i].blob[k].data, j->res[i].blob[k].len));
        }
    return manifest_finish(f, o->out_dir, &h, summary_hash(j, n), lines);
}

int op_cmd_bake(int argc, char **argv)
{
    bake_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    op_arena *a = op_arena_create(0);
    op_level *lvl = NULL;
    op_err e;
    bake_job j = {0};
    int n = 0;
    rc = 1;
    double prep_ms = 0.0;
    /* One set of workers for the preparation and the tiles; its start is part of the
     * build's time. */
    op_pool *pool = NULL;
    double tp = cli_now_ms();
    if (op_pool_create(o.threads, &pool, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s\n", e.msg);
        goto done;
    }
    double pool_ms = cli_now_ms() - tp;
    if (!a || open_level(&o, pool, a, &lvl, &prep_ms))
        goto done;
    prep_ms += pool_ms;
    j.lvl = lvl;
    j.rect = op_level_tiles(lvl);
    j.single = o.single;
    j.stx = o.stx;
    j.stz = o.stz;
    n = o.single ? 1 : op_level_tile_count(lvl);
    if (o.nshards > 1 && !o.single) {
        /* Band `shard` of the tile rows: rows tz0 + floor(k * R / N) for k = shard, shard + 1. */
        long rows = j.rect.tz1 - j.rect.tz0 + 1, z0 = j.rect.tz0;
        j.rect.tz0 = (int)(z0 + o.shard * rows / o.nshards);
        j.rect.tz1 = (int)(z0 + (o.shard + 1) * rows / o.nshards - 1);
        n = j.rect.tz1 < j.rect.tz0 ? 0
                                    : (j.rect.tx1 - j.rect.tx0 + 1) * (j.rect.tz1 - j.rect.tz0 + 1);
    }
    j.res = calloc((size_t)(n ? n : 1), sizeof *j.res);
    if (!j.res) {
        fprintf(stderr, "onepath: out of memory\n");
        goto done;
    }
    if (o.out_dir && mkdir(o.out_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "onepath: cannot create %s: %s\n", o.out_dir, strerror(errno));
        goto done;
    }
    op_parallel_opts po = {o.threads, (!o.json && isatty(2)) ? progress : NULL, NULL, pool};
    double t0 = cli_now_ms();
    if (run_jobs(&j, n, &po, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s: %s\n", o.level, e.msg);
        goto done;
    }
    double ms = prep_ms + (cli_now_ms() - t0); /* preparation and tiles */
    if (o.out_dir && write_out(&o, &j, n, lvl))
        goto done;
    print_summary(&o, &j, n, ms);
    rc = 0;
done:
    for (int i = 0; j.res && i < n; i++)
        for (int k = 0; k < j.res[i].nlayers; k++)
            op_bytes_free(&j.res[i].blob[k]);
    free(j.res);
    op_level_destroy(lvl);
    op_pool_destroy(pool);
    op_arena_destroy(a);
    return rc;
}
