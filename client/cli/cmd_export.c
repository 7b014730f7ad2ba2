/*
 * onepath export LEVEL --obj FILE.obj: the mesh as a Wavefront OBJ in world
 * coordinates, per tile layer a group of its polygons (`g tile_TX_TZ_L`) and a group
 * of its detail triangles (`g tile_TX_TZ_L_detail`). Vertices are written per group
 * (polygon vertices, then for the detail the polygon's vertices and extras), so each
 * group stands alone when imported.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "cli_mesh.h"

typedef struct export_opts {
    cli_mesh_opts mo;
    const char *obj;
} export_opts;

static int usage(void)
{
    fprintf(stderr, "usage: onepath export LEVEL.obj|gen:KIND:SIZE:SEED --obj FILE.obj\n"
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
        else {
            fprintf(stderr, "onepath: export: unknown or incomplete option '%s'\n", a);
            return usage();
        }
    }
    if (!o->obj || (!o->mo.level && !o->mo.tiles_dir))
        return usage();
    return 0;
}

static void put_v(FILE *f, const double w[3])
{
    fprintf(f, "v %.9g %.9g %.9g\n", w[0], w[1], w[2]);
}

/* Polygons of tile t: its vertices then one face per polygon. Returns vertices written. */
static long write_polys(FILE *f, const op_tile *t, long base)
{
    fprintf(f, "g tile_%d_%d_%d\n", t->tx, t->tz, t->layer);
    for (int v = 0; v < t->nverts; v++) {
        double w[3];
        op_tile_world_vert(t, v, w);
        put_v(f, w);
    }
    for (int p = 0; p < t->npolys; p++) {
        int n = op_tile_poly_nverts(t, p);
        fputc('f', f);
        for (int k = 0; k < n; k++)
            fprintf(f, " %ld", base + 1 + t->polys[(size_t)p * t->nvp + k]);
        fputc('\n', f);
    }
    return t->nverts;
}

/* Detail triangles of tile t, per polygon its vertices and extras then its triangles. */
static long write_detail(FILE *f, const op_tile *t, long base)
{
    long written = 0;
    fprintf(f, "g tile_%d_%d_%d_detail\n", t->tx, t->tz, t->layer);
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
            fprintf(f, "f %ld %ld %ld\n", base + written + 1 + tri[0], base + written + 1 + tri[1],
                    base + written + 1 + tri[2]);
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

int op_cmd_export(int argc, char **argv)
{
    export_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    op_mesh *m = NULL;
    if (cli_mesh_load(&o.mo, &m))
        return 1;
    rc = write_obj(&o, m);
    if (!rc)
        printf("wrote %s: %d tile layers, %ld polygons\n", o.obj, op_mesh_tile_count(m),
               op_mesh_poly_count(m));
    op_mesh_destroy(m);
    return rc;
}
