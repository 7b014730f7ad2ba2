/*
 * onepath render LEVEL --out FILE.svg: a top-down map of the mesh that a level designer
 * reads without help (render.h): colour by area, connectivity or height with a legend,
 * axes and a scale bar in metres, tile borders and labels, a title with the level and its
 * settings; --y-range shows one floor, --bounds crops, --path draws a path. The picture is
 * a pure function of the mesh and the options, the same on every run.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "render.h"

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: onepath render LEVEL.obj|gen:KIND:SIZE:SEED|--tiles DIR --out FILE.svg\n"
               "         [--color area|connectivity|height|region] [--y-range MIN,MAX]\n"
               "         [--bounds X0,Z0,X1,Z1] [--grid on|off] [--path X,Y,Z:X,Y,Z]\n"
               "         [--set key=value ...] [--threads N]\n"
               "\n"
               "  --color area          polygons by area id, named in the legend (default)\n"
               "  --color connectivity  the largest connected part in blue, everything an agent\n"
               "                        cannot reach from it in red\n"
               "  --color height        a blue-to-red ramp over the shown polygons' mean height\n"
               "  --color region        one colour per region of a tile layer (debugging)\n"
               "  --y-range MIN,MAX     only polygons whose mean height is in [MIN, MAX] m\n"
               "  --bounds X0,Z0,X1,Z1  draw only this world rectangle (m)\n"
               "  --grid off            no tile borders and labels\n"
               "Polygons are drawn lowest first, so upper floors cover lower ones.\n");
    return rc;
}

/* "A,B[,C,D]": n finite numbers separated by commas. */
static int parse_numbers(const char *text, int n, double *v)
{
    const char *s = text;
    for (int k = 0; k < n; k++) {
        char *end;
        errno = 0;
        v[k] = strtod(s, &end);
        if (end == s || errno || !isfinite(v[k]) || *end != (k < n - 1 ? ',' : '\0'))
            return 1;
        s = end + 1;
    }
    return 0;
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

static int parse_colour(const char *c, render_opts *o)
{
    static const char *const names[] = {"area", "connectivity", "height", "region"};
    for (int k = 0; k < 4; k++)
        if (!strcmp(c, names[k])) {
            o->colour = (render_colour)k;
            return 0;
        }
    fprintf(stderr, "onepath: --color wants area, connectivity, height or region, got '%s'\n", c);
    return 2;
}

/* One option of render's own at argv[*i] (with its value). Returns 0, or 2 (printed). */
static int parse_own(int argc, char **argv, int *i, render_opts *o)
{
    const char *a = argv[*i];
    if (*i + 1 >= argc) {
        fprintf(stderr, "onepath: render: unknown or incomplete option '%s'\n", a);
        return 2;
    }
    const char *v = argv[++*i];
    if (!strcmp(a, "--out")) {
        o->out = v;
    } else if (!strcmp(a, "--color")) {
        return parse_colour(v, o);
    } else if (!strcmp(a, "--grid")) {
        if (strcmp(v, "on") && strcmp(v, "off")) {
            fprintf(stderr, "onepath: --grid wants on or off, got '%s'\n", v);
            return 2;
        }
        o->grid = !strcmp(v, "on");
    } else if (!strcmp(a, "--y-range")) {
        double y[2];
        if (parse_numbers(v, 2, y) || y[0] > y[1]) {
            fprintf(stderr, "onepath: --y-range wants MIN,MAX with MIN <= MAX, got '%s'\n", v);
            return 2;
        }
        o->have_y = 1;
        o->ymin = y[0];
        o->ymax = y[1];
    } else if (!strcmp(a, "--bounds")) {
        double *b = o->bounds;
        if (parse_numbers(v, 4, b) || b[0] >= b[2] || b[1] >= b[3]) {
            fprintf(stderr,
                    "onepath: --bounds wants X0,Z0,X1,Z1 with X0 < X1 and Z0 < Z1, "
                    "got '%s'\n",
                    v);
            return 2;
        }
        o->have_bounds = 1;
    } else if (!strcmp(a, "--path")) {
        if (parse_path(v, o)) {
            fprintf(stderr, "onepath: --path wants X,Y,Z:X,Y,Z, got '%s'\n", v);
            return 2;
        }
        o->have_path = 1;
    } else {
        fprintf(stderr, "onepath: render: unknown option '%s'\n", a);
        return 2;
    }
    return 0;
}

static int parse(int argc, char **argv, render_opts *o)
{
    memset(o, 0, sizeof *o);
    cli_mesh_opts_init(&o->mo);
    o->grid = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int r;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout, 1);
        if ((r = cli_mesh_parse(&o->mo, argc, argv, &i)) != 0) {
            if (r < 0)
                return 2;
        } else if ((r = parse_own(argc, argv, &i, o)) != 0) {
            return r;
        }
    }
    if (!o->out || (!o->mo.level && !o->mo.tiles_dir))
        return usage(stderr, 2);
    return 0;
}

int op_cmd_render(int argc, char **argv)
{
    render_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    op_mesh *m = NULL;
    if (cli_mesh_load(&o.mo, &m))
        return 1;
    render_scene sc;
    if (render_scene_build(&sc, m, &o)) {
        fprintf(stderr, "onepath: render: out of memory\n");
        rc = 1;
    } else {
        rc = render_write_svg(&sc);
    }
    if (!rc)
        printf("wrote %s: %d tile layers, %ld polygons, %ld shown\n", o.out, op_mesh_tile_count(m),
               op_mesh_poly_count(m), sc.nshown);
    render_scene_free(&sc);
    op_mesh_destroy(m);
    return rc;
}
