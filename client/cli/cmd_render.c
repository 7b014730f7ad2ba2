/*
 * onepath render LEVEL --out FILE.svg: a top-down SVG of the mesh (x right, z up):
 * polygons filled by region or by area, tile cell borders, and optionally a path
 * (corridor outlined, straight path drawn, tile crossings marked). Colours come from
 * a fixed hash of (tile key, region) so that a picture is the same on every run.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "cli_mesh.h"
#include "onepath/hash.h"
#include "onepath/query.h"

#define RENDER_SIZE   1600.0 /* px along the longer side */
#define RENDER_MARGIN 10.0

typedef struct render_opts {
    cli_mesh_opts mo;
    const char *out;
    int by_area, have_path;
    double from[3], to[3];
} render_opts;

typedef struct view {
    double x0, z1, scale;
    double w, h;
} view;

static int usage(void)
{
    fprintf(stderr, "usage: onepath render LEVEL.obj|gen:KIND:SIZE:SEED --out FILE.svg\n"
                    "                      [--path X,Y,Z:X,Y,Z] [--color region|area]\n"
                    "                      [--set key=value ...] [--threads N] [--tiles DIR]\n");
    return 2;
}

static int parse_path(const char *text, render_opts *o)
{
    char a[256];
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : 0;
    if (!colon || n >= sizeof a)
        return 1;
    memcpy(a, text, n);
    a[n] = '\0';
    return cli_parse_point(a, o->from) || cli_parse_point(colon + 1, o->to);
}

static int parse(int argc, char **argv, render_opts *o)
{
    memset(o, 0, sizeof *o);
    cli_mesh_opts_init(&o->mo);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc, r;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage();
        if ((r = cli_mesh_parse(&o->mo, argc, argv, &i)) != 0) {
            if (r < 0)
                return 2;
        } else if (!strcmp(a, "--out") && more)
            o->out = argv[++i];
        else if (!strcmp(a, "--color") && more) {
            const char *c = argv[++i];
            if (strcmp(c, "region") && strcmp(c, "area")) {
                fprintf(stderr, "onepath: --color wants region or area, got '%s'\n", c);
                return 2;
            }
            o->by_area = !strcmp(c, "area");
        } else if (!strcmp(a, "--path") && more) {
            if (parse_path(argv[++i], o)) {
                fprintf(stderr, "onepath: --path wants X,Y,Z:X,Y,Z, got '%s'\n", argv[i]);
                return 2;
            }
            o->have_path = 1;
        } else {
            fprintf(stderr, "onepath: render: unknown or incomplete option '%s'\n", a);
            return usage();
        }
    }
    if (!o->out || (!o->mo.level && !o->mo.tiles_dir))
        return usage();
    return 0;
}

static void make_view(const op_mesh *m, view *v)
{
    double x0 = INFINITY, x1 = -INFINITY, z0 = INFINITY, z1 = -INFINITY;
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        x0 = fmin(x0, t->origin[0]);
        z0 = fmin(z0, t->origin[2]);
        x1 = fmax(x1, t->origin[0] + t->tile_size);
        z1 = fmax(z1, t->origin[2] + t->tile_size);
    }
    double span = fmax(x1 - x0, z1 - z0);
    v->scale = RENDER_SIZE / (span > 0 ? span : 1.0);
    v->x0 = x0;
    v->z1 = z1;
    v->w = (x1 - x0) * v->scale + 2 * RENDER_MARGIN;
    v->h = (z1 - z0) * v->scale + 2 * RENDER_MARGIN;
}

static double px(const view *v, double x)
{
    return (x - v->x0) * v->scale + RENDER_MARGIN;
}
static double pz(const view *v, double z)
{
    return (v->z1 - z) * v->scale + RENDER_MARGIN;
}

static void colour(const op_tile *t, int p, int by_area, char out[8])
{
    static const char *const area_cols[] = {"#444444", "#4e79a7", "#f28e2b", "#e15759",
                                            "#76b7b2", "#59a14f", "#edc948", "#b07aa1"};
    if (by_area) {
        unsigned a = t->areas[p];
        snprintf(out, 8, "%s", a == 63 ? "#8fbcd4" : area_cols[a % 8]);
        return;
    }
    int32_t key[4] = {t->tx, t->tz, t->layer, t->regs ? t->regs[p] : p};
    uint64_t h = op_hash_bytes(key, sizeof key);
    /* light colours: each channel in 96..223 */
    snprintf(out, 8, "#%02x%02x%02x", (unsigned)(96 + (h & 127)), (unsigned)(96 + ((h >> 8) & 127)),
             (unsigned)(96 + ((h >> 16) & 127)));
}

static void poly_points(FILE *f, const view *v, const op_mesh *m, op_polyref r)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    int n = op_tile_poly_nverts(t, r.poly);
    for (int k = 0; k < n; k++) {
        double w[3];
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + k], w);
        fprintf(f, "%s%.2f,%.2f", k ? " " : "", px(v, w[0]), pz(v, w[2]));
    }
}

static void draw_mesh(FILE *f, const view *v, const op_mesh *m, int by_area)
{
    fprintf(f, "<g stroke=\"#333\" stroke-width=\"0.4\" fill-opacity=\"0.85\">\n");
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        for (int p = 0; p < t->npolys; p++) {
            char col[8];
            colour(t, p, by_area, col);
            fprintf(f, "<polygon fill=\"%s\" points=\"", col);
            poly_points(f, v, m, (op_polyref){i, p});
            fprintf(f, "\"/>\n");
        }
    }
    fprintf(f, "</g>\n<g stroke=\"#000\" stroke-width=\"1\" fill=\"none\" "
               "stroke-dasharray=\"4 3\">\n");
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        if (t->layer != 0 && i > 0 && op_mesh_tile(m, i - 1)->tx == t->tx &&
            op_mesh_tile(m, i - 1)->tz == t->tz)
            continue; /* one border per tile cell */
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n",
                px(v, t->origin[0]), pz(v, t->origin[2] + t->tile_size), t->tile_size * v->scale,
                t->tile_size * v->scale);
    }
    fprintf(f, "</g>\n");
}

static int draw_path(FILE *f, const view *v, const op_mesh *m, const render_opts *o)
{
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    const double half[3] = {2, 4, 2};
    op_polyref rs, re;
    double s[3], g[3];
    op_path p;
    op_straight_path sp;
    op_err e;
    int rc = 1;
    if (!out || !scratch)
        goto done;
    if (op_query_nearest(m, o->from, half, NULL, &rs, s, &e) != OP_OK ||
        op_query_nearest(m, o->to, half, NULL, &re, g, &e) != OP_OK ||
        op_query_path(m, NULL, rs, s, re, g, out, scratch, &p, &e) != OP_OK ||
        op_query_straight(m, p.polys, p.npolys, s, g, out, scratch, &sp, &e) != OP_OK) {
        fprintf(stderr, "onepath: render: path: %s\n", e.msg);
        goto done;
    }
    fprintf(f,
            "<g fill=\"#ffe08a\" fill-opacity=\"0.6\" stroke=\"#b58900\" stroke-width=\"0.8\">\n");
    for (int i = 0; i < p.npolys; i++) {
        fprintf(f, "<polygon points=\"");
        poly_points(f, v, m, p.polys[i]);
        fprintf(f, "\"/>\n");
    }
    fprintf(f, "</g>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" points=\"",
            p.partial ? "#d33682" : "#dc322f");
    for (int i = 0; i < sp.npoints; i++)
        fprintf(f, "%s%.2f,%.2f", i ? " " : "", px(v, sp.points[i].pos[0]),
                pz(v, sp.points[i].pos[2]));
    fprintf(f, "\"/>\n");
    for (int i = 0; i < sp.npoints; i++) {
        const op_straight_point *q = &sp.points[i];
        const char *c = (q->flags & OP_STRAIGHT_TILE) ? "#268bd2" : "#dc322f";
        fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%s\" fill=\"%s\"/>\n", px(v, q->pos[0]),
                pz(v, q->pos[2]), (q->flags & OP_STRAIGHT_TILE) ? "4" : "3", c);
    }
    rc = 0;
done:
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return rc;
}

static int write_svg(const render_opts *o, const op_mesh *m)
{
    FILE *f = fopen(o->out, "w");
    if (!f) {
        fprintf(stderr, "onepath: cannot write %s: %s\n", o->out, strerror(errno));
        return 1;
    }
    view v;
    make_view(m, &v);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.2f %.2f\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            v.w, v.h, v.w, v.h);
    draw_mesh(f, &v, m, o->by_area);
    int rc = o->have_path ? draw_path(f, &v, m, o) : 0;
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "onepath: writing %s failed: %s\n", o->out, strerror(errno));
        rc = 1;
    }
    return rc;
}

int op_cmd_render(int argc, char **argv)
{
    render_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    op_mesh *m = NULL;
    if (cli_mesh_load(&o.mo, &m))
        return 1;
    rc = write_svg(&o, m);
    if (!rc)
        printf("wrote %s: %d tile layers, %ld polygons\n", o.out, op_mesh_tile_count(m),
               op_mesh_poly_count(m));
    op_mesh_destroy(m);
    return rc;
}
