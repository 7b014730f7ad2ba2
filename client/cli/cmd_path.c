/*
 * onepath path LEVEL --from X,Y,Z --to X,Y,Z: builds the level's mesh, snaps both
 * points to their nearest polygons (docs/queries.md §2), finds the corridor (§4) and
 * the straight path (§5), and prints them (text or --json).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "cli_mesh.h"
#include "onepath/query.h"

typedef struct path_opts {
    cli_mesh_opts mo;
    double from[3], to[3], half[3];
    int have_from, have_to, json;
} path_opts;

static int usage(void)
{
    fprintf(stderr,
            "usage: onepath path LEVEL.obj|gen:KIND:SIZE:SEED --from X,Y,Z --to X,Y,Z\n"
            "                    [--extents X,Y,Z] [--set key=value ...] [--threads N]\n"
            "                    [--tiles DIR] [--json]\n"
            "Snaps both points to the nearest polygon within the extents (default 2,4,2),\n"
            "prints the polygon corridor and the straight path (tile crossings flagged).\n");
    return 2;
}

static int point_opt(const char *opt, const char *text, double p[3])
{
    if (cli_parse_point(text, p)) {
        fprintf(stderr, "onepath: %s wants X,Y,Z, got '%s'\n", opt, text);
        return 1;
    }
    return 0;
}

static int parse(int argc, char **argv, path_opts *o)
{
    memset(o, 0, sizeof *o);
    cli_mesh_opts_init(&o->mo);
    o->half[0] = 2.0;
    o->half[1] = 4.0;
    o->half[2] = 2.0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc, r;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage();
        if ((r = cli_mesh_parse(&o->mo, argc, argv, &i)) != 0) {
            if (r < 0)
                return 2;
        } else if (!strcmp(a, "--json"))
            o->json = 1;
        else if (!strcmp(a, "--from") && more) {
            if (point_opt(a, argv[++i], o->from))
                return 2;
            o->have_from = 1;
        } else if (!strcmp(a, "--to") && more) {
            if (point_opt(a, argv[++i], o->to))
                return 2;
            o->have_to = 1;
        } else if (!strcmp(a, "--extents") && more) {
            if (point_opt(a, argv[++i], o->half))
                return 2;
        } else {
            fprintf(stderr, "onepath: path: unknown or incomplete option '%s'\n", a);
            return usage();
        }
    }
    if (!o->have_from || !o->have_to || (!o->mo.level && !o->mo.tiles_dir))
        return usage();
    return 0;
}

static void flag_names(unsigned f, char *buf, size_t n, int json)
{
    const char *names[3] = {"start", "end", "tile"};
    buf[0] = '\0';
    size_t len = 0;
    for (int b = 0; b < 3; b++)
        if (f & (1u << b))
            len += (size_t)snprintf(buf + len, n - len, json ? "%s\"%s\"" : "%s%s",
                                    len ? (json ? ", " : " ") : "", names[b]);
}

static void print_text(const op_mesh *m, const op_path *p, const op_straight_path *sp,
                       const double s[3], const double e[3])
{
    printf("from (%.3f, %.3f, %.3f) to (%.3f, %.3f, %.3f)\n", s[0], s[1], s[2], e[0], e[1], e[2]);
    printf("corridor: %d polygons%s, cost %.3f\n", p->npolys, p->partial ? " (PARTIAL)" : "",
           p->cost);
    for (int i = 0; i < p->npolys; i++) {
        const op_tile *t = op_mesh_tile(m, p->polys[i].tile);
        printf("  %3d  tile (%d, %d) layer %d  poly %d  area %u\n", i, t->tx, t->tz, t->layer,
               p->polys[i].poly, t->areas[p->polys[i].poly]);
    }
    printf("straight path: %d points\n", sp->npoints);
    for (int i = 0; i < sp->npoints; i++) {
        char fl[64];
        flag_names(sp->points[i].flags, fl, sizeof fl, 0);
        const double *q = sp->points[i].pos;
        printf("  %3d  (%.3f, %.3f, %.3f)  %s\n", i, q[0], q[1], q[2], fl);
    }
}

static void print_json(const op_mesh *m, const op_path *p, const op_straight_path *sp,
                       const double s[3], const double e[3])
{
    printf("{\"from\": [%.6f, %.6f, %.6f], \"to\": [%.6f, %.6f, %.6f], \"partial\": %s, "
           "\"cost\": %.6f, \"corridor\": [",
           s[0], s[1], s[2], e[0], e[1], e[2], p->partial ? "true" : "false", p->cost);
    for (int i = 0; i < p->npolys; i++) {
        const op_tile *t = op_mesh_tile(m, p->polys[i].tile);
        printf("%s{\"tx\": %d, \"tz\": %d, \"layer\": %d, \"poly\": %d, \"area\": %u}",
               i ? ", " : "", t->tx, t->tz, t->layer, p->polys[i].poly, t->areas[p->polys[i].poly]);
    }
    printf("], \"straight\": [");
    for (int i = 0; i < sp->npoints; i++) {
        char fl[64];
        flag_names(sp->points[i].flags, fl, sizeof fl, 1);
        const double *q = sp->points[i].pos;
        printf("%s{\"pos\": [%.6f, %.6f, %.6f], \"flags\": [%s]}", i ? ", " : "", q[0], q[1], q[2],
               fl);
    }
    printf("]}\n");
}

/* Snaps, searches and pulls; prints. */
static int run(const path_opts *o, const op_mesh *m, op_arena *out, op_arena *scratch)
{
    op_err e;
    op_polyref rs, re;
    double s[3], g[3];
    if (op_query_nearest(m, o->from, o->half, NULL, &rs, s, &e) != OP_OK ||
        op_query_nearest(m, o->to, o->half, NULL, &re, g, &e) != OP_OK) {
        fprintf(stderr, "onepath: path: %s\n", e.msg);
        return 1;
    }
    op_path p;
    op_straight_path sp;
    if (op_query_path(m, NULL, rs, s, re, g, out, scratch, &p, &e) != OP_OK ||
        op_query_straight(m, p.polys, p.npolys, s, g, out, scratch, &sp, &e) != OP_OK) {
        fprintf(stderr, "onepath: path: %s\n", e.msg);
        return 1;
    }
    if (o->json)
        print_json(m, &p, &sp, s, g);
    else
        print_text(m, &p, &sp, s, g);
    return 0;
}

int op_cmd_path(int argc, char **argv)
{
    path_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    op_mesh *m = NULL;
    if (cli_mesh_load(&o.mo, &m))
        return 1;
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    rc = (out && scratch) ? run(&o, m, out, scratch) : 1;
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    op_mesh_destroy(m);
    return rc;
}
