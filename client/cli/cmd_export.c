/*
 * onepath export LEVEL --obj FILE.obj | --detour FILE | --detour-tiles DIR.
 *
 * --obj: the mesh as a Wavefront OBJ in world coordinates, per tile layer an object of
 * its polygons (`o tile_TX_TZ_L`) and an object of its detail triangles
 * (`o tile_TX_TZ_L_detail`), faces wound counter-clockwise seen from above in OBJ's
 * right-handed y-up frame (normals +y). Vertices are written per object (polygon
 * vertices, then for the detail the polygon's vertices and extras), so each object
 * stands alone when imported (Blender makes one mesh object per `o`).
 * --detour: RecastDemo's navmesh set (docs/spec/detour-export.md §5) built by the core;
 * --detour-tiles: one file of Detour tile data per tile cell (tile_TX_TZ.dtile) and the
 * set's dtNavMeshParams (navmesh.params), §5.3. The Detour header's agent height, radius
 * and climb come from the settings: with --tiles DIR, pass the bake's own with --set.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_common.h"
#include "cli_mesh.h"
#include "onepath/detour.h"

typedef struct export_opts {
    cli_mesh_opts mo;
    const char *obj;
    const char *detour;
    const char *detour_tiles;
} export_opts;

static int usage(void)
{
    fprintf(stderr, "usage: onepath export LEVEL.obj|gen:KIND:SIZE:SEED [--obj FILE.obj]\n"
                    "                      [--detour FILE] [--detour-tiles DIR]\n"
                    "                      [--set key=value ...] [--threads N] [--tiles DIR]\n");
    return 2;
}

static int parse(int argc, char **argv, export_opts *o)
{
    memset(o, 0, sizeof *o);
    cli_mesh_opts_init(&o->mo);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage();
        if ((r = cli_mesh_parse(&o->mo, argc, argv, &i)) != 0) {
            if (r < 0)
                return 2;
        } else if (!strcmp(a, "--obj") && i + 1 < argc)
            o->obj = argv[++i];
        else if (!strcmp(a, "--detour") && i + 1 < argc)
            o->detour = argv[++i];
        else if (!strcmp(a, "--detour-tiles") && i + 1 < argc)
            o->detour_tiles = argv[++i];
        else {
            fprintf(stderr, "onepath: export: unknown or incomplete option '%s'\n", a);
            return usage();
        }
    }
    if ((!o->obj && !o->detour && !o->detour_tiles) || (!o->mo.level && !o->mo.tiles_dir))
        return usage();
    return 0;
}

static void put_v(FILE *f, const double w[3])
{
    fprintf(f, "v %.9g %.9g %.9g\n", w[0], w[1], w[2]);
}

/* Polygons of tile t: its vertices then one face per polygon, its vertices in reverse
 * order: tiles wind counter-clockwise with x right and z up (navmesh-format.md §4), which
 * seen from +y in OBJ's right-handed frame is clockwise. Returns vertices written. */
static long write_polys(FILE *f, const op_tile *t, long base)
{
    fprintf(f, "o tile_%d_%d_%d\n", t->tx, t->tz, t->layer);
    for (int v = 0; v < t->nverts; v++) {
        double w[3];
        op_tile_world_vert(t, v, w);
        put_v(f, w);
    }
    for (int p = 0; p < t->npolys; p++) {
        int n = op_tile_poly_nverts(t, p);
        fputc('f', f);
        for (int k = n - 1; k >= 0; k--)
            fprintf(f, " %ld", base + 1 + t->polys[(size_t)p * t->nvp + k]);
        fputc('\n', f);
    }
    return t->nverts;
}

/* Detail triangles of tile t, per polygon its vertices and extras then its triangles,
 * reversed as the polygons are. */
static long write_detail(FILE *f, const op_tile *t, long base)
{
    long written = 0;
    fprintf(f, "o tile_%d_%d_%d_detail\n", t->tx, t->tz, t->layer);
    for (int p = 0; p < t->npolys; p++) {
        int n = op_tile_poly_nverts(t, p);
        const uint32_t *dm = &t->dmeshes[4 * (size_t)p];
        for (int k = 0; k < n; k++) {
            double w[3];
            op_tile_world_vert(t, t->polys[(size_t)p * t->nvp + k], w);
            put_v(f, w);
        }
        for (uint32_t k = 0; k < dm[1]; k++) {
            const float *d = &t->dverts[3 * ((size_t)dm[0] + k)];
            double w[3] = {t->origin[0] + d[0], t->origin[1] + d[1], t->origin[2] + d[2]};
            put_v(f, w);
        }
        for (uint32_t k = 0; k < dm[3]; k++) {
            const uint8_t *tri = &t->dtris[4 * ((size_t)dm[2] + k)];
            fprintf(f, "f %ld %ld %ld\n", base + written + 1 + tri[0], base + written + 1 + tri[2],
                    base + written + 1 + tri[1]);
        }
        written += n + (long)dm[1];
    }
    return written;
}

static int write_obj(const export_opts *o, const op_mesh *m)
{
    FILE *f = fopen(o->obj, "w");
    if (!f) {
        fprintf(stderr, "onepath: cannot write %s: %s\n", o->obj, strerror(errno));
        return 1;
    }
    fprintf(f, "# onepath export: %d tile layers, %ld polygons\n", op_mesh_tile_count(m),
            op_mesh_poly_count(m));
    long base = 0;
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        base += write_polys(f, t, base);
        base += write_detail(f, t, base);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "onepath: writing %s failed: %s\n", o->obj, strerror(errno));
        return 1;
    }
    return 0;
}

/* Writes n bytes to path; prints the error. */
static int write_bytes(const char *path, const uint8_t *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "onepath: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t put = fwrite(d, 1, n, f);
    int bad = ferror(f) || put != n;
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "onepath: writing %s failed: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

static int write_detour_tiles(const char *dir, const op_detour_set *set)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "onepath: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char path[4096];
    uint8_t params[OP_DETOUR_PARAMS_SIZE];
    op_detour_params_write(&set->params, params);
    snprintf(path, sizeof path, "%s/navmesh.params", dir);
    if (write_bytes(path, params, sizeof params))
        return 1;
    for (int i = 0; i < set->ntiles; i++) {
        const op_detour_tile *t = &set->tiles[i];
        snprintf(path, sizeof path, "%s/tile_%d_%d.dtile", dir, t->tx, t->tz);
        if (write_bytes(path, t->data, t->size))
            return 1;
    }
    return 0;
}

static int write_detour(const export_opts *o, const op_mesh *m)
{
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_detour_set set;
    op_err e;
    int rc = 1;
    if (!out || !scratch)
        fprintf(stderr, "onepath: out of memory\n");
    else if (op_detour_set_build(m, out, scratch, &set, &e) != OP_OK)
        fprintf(stderr, "onepath: export --detour: %s\n", e.msg);
    else if (!(o->detour && write_bytes(o->detour, set.bytes, set.size)) &&
             !(o->detour_tiles && write_detour_tiles(o->detour_tiles, &set))) {
        printf("detour: %d tiles, %zu bytes, room for %d polygons a tile (%d tile + %d polygon "
               "bits)\n",
               set.ntiles, set.size, set.params.max_polys, set.params.tile_bits,
               set.params.poly_bits);
        rc = 0;
    }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return rc;
}

int op_cmd_export(int argc, char **argv)
{
    export_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    op_mesh *m = NULL;
    if (cli_mesh_load(&o.mo, &m))
        return 1;
    if (o.obj && !(rc = write_obj(&o, m)))
        printf("wrote %s: %d tile layers, %ld polygons\n", o.obj, op_mesh_tile_count(m),
               op_mesh_poly_count(m));
    if (!rc && (o.detour || o.detour_tiles))
        rc = write_detour(&o, m);
    op_mesh_destroy(m);
    return rc;
}
