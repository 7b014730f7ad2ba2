/*
 * `onepath render`, run as a user would, checked on the structure of its SVG (not its
 * pixels) against what the test computes itself from the same mesh: one polygon element
 * per mesh polygon (in the --y-range, meeting the --bounds), drawn lowest first; legend
 * entries exactly for the areas present (hand-made tiles with three area ids and an
 * island); the scale bar's length in pixels over the drawing's scale (measured from a
 * polygon's own vertices) equal to its label; a label per tile cell; --grid off; refusals.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onepath/build.h"
#include "onepath/levelgen.h"
#include "onepath/mesh.h"
#include "onepath/tile_codec.h"
#include "op_handmesh.h"

/* ===== running the tool ===== */

static int render(const char *args, char *svg_path, size_t n)
{
    snprintf(svg_path, n, "/tmp/op_render_%d.svg", (int)getpid());
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s/onepath render %s --out %s >/dev/null 2>&1", OP_BIN_DIR, args,
             svg_path);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static char *render_svg(const char *args)
{
    char path[256];
    cr_assert_eq(render(args, path, sizeof path), 0, "render %s failed", args);
    char *s = slurp(path);
    remove(path);
    return s;
}

/* ===== a small SVG reader: tags in document order, attributes, text ===== */

/* The next start tag `<name ...` at or after p that has attribute cls (NULL: any). */
static const char *next_tag(const char *p, const char *name, const char *cls)
{
    char open[64];
    snprintf(open, sizeof open, "<%s ", name);
    for (p = strstr(p, open); p; p = strstr(p + 1, open)) {
        if (!cls)
            return p;
        const char *end = strchr(p, '>'), *c = strstr(p, cls);
        if (c && c < end)
            return p;
    }
    return NULL;
}

/* Attribute name="value" of the tag at p, copied to out; 0 when absent. */
static int attr(const char *p, const char *name, char *out, size_t n)
{
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *end = strchr(p, '>'), *a = strstr(p, key);
    if (!a || a > end)
        return 0;
    a += strlen(key);
    const char *q = strchr(a, '"');
    size_t len = (size_t)(q - a) < n - 1 ? (size_t)(q - a) : n - 1;
    memcpy(out, a, len);
    out[len] = '\0';
    return 1;
}

static double attr_num(const char *p, const char *name)
{
    char v[64];
    cr_assert(attr(p, name, v, sizeof v), "no %s", name);
    return atof(v);
}

/* Text after the tag at p, up to the next '<'. */
static void text_of(const char *p, char *out, size_t n)
{
    const char *a = strchr(p, '>') + 1, *b = strchr(a, '<');
    size_t len = (size_t)(b - a) < n - 1 ? (size_t)(b - a) : n - 1;
    memcpy(out, a, len);
    out[len] = '\0';
}

static int count_tags(const char *svg, const char *name, const char *cls)
{
    int n = 0;
    for (const char *p = next_tag(svg, name, cls); p; p = next_tag(p + 1, name, cls))
        n++;
    return n;
}

/* ===== the same mesh, built here ===== */

static op_mesh *build(const char *kind, int size, const char *set)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_settings s;
    op_err e;
    op_settings_default(&s);
    if (set) {
        char key[64];
        const char *eq = strchr(set, '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - set), set);
        cr_assert_eq(op_settings_set(&s, key, eq + 1, &e), OP_OK, "%s", e.msg);
    }
    cr_assert_eq(op_levelgen(kind, size, 1, a, &soup, &e), OP_OK, "%s", e.msg);
    op_level *lvl;
    op_mesh *m;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_mesh_build_level(lvl, 1, &m, &e), OP_OK, "%s", e.msg);
    op_level_destroy(lvl);
    op_arena_destroy(a);
    return m;
}

static double mean_y(const op_mesh *m, int tile, int p, double box[4])
{
    const op_tile *t = op_mesh_tile(m, tile);
    int n = op_tile_poly_nverts(t, p);
    double y = 0;
    box[0] = box[1] = 1e300;
    box[2] = box[3] = -1e300;
    for (int k = 0; k < n; k++) {
        double w[3];
        op_tile_world_vert(t, t->polys[(size_t)p * t->nvp + k], w);
        y += w[1] / n;
        box[0] = fmin(box[0], w[0]), box[1] = fmin(box[1], w[2]);
        box[2] = fmax(box[2], w[0]), box[3] = fmax(box[3], w[2]);
    }
    return y;
}

/* The polygon element's mesh polygon: data-key "tx,tz,layer,poly". */
static void key_of(const op_mesh *m, const char *tag, int *tile, int *poly)
{
    char key[64];
    int tx, tz, layer;
    cr_assert(attr(tag, "data-key", key, sizeof key));
    cr_assert_eq(sscanf(key, "%d,%d,%d,%d", &tx, &tz, &layer, poly), 4, "%s", key);
    *tile = op_mesh_find_tile(m, tx, tz, layer);
    cr_assert(*tile >= 0 && *poly < op_mesh_tile(m, *tile)->npolys, "no polygon %s", key);
}

/* Pixels per metre of the drawing, from the polygon element's own points against the
 * mesh's world vertices (the first and the farthest from it), and x right, z up. */
static double drawing_scale(const op_mesh *m, const char *tag)
{
    int tile, p;
    key_of(m, tag, &tile, &p);
    const op_tile *t = op_mesh_tile(m, tile);
    char pts[1024];
    cr_assert(attr(tag, "points", pts, sizeof pts));
    double sx[8], sy[8], w[8][3];
    int n = op_tile_poly_nverts(t, p);
    const char *s = pts;
    for (int k = 0; k < n; k++) {
        int used;
        cr_assert_eq(sscanf(s, "%lf,%lf%n", &sx[k], &sy[k], &used), 2);
        s += used;
        op_tile_world_vert(t, t->polys[(size_t)p * t->nvp + k], w[k]);
    }
    int far = 1;
    for (int k = 2; k < n; k++)
        if (hypot(w[k][0] - w[0][0], w[k][2] - w[0][2]) >
            hypot(w[far][0] - w[0][0], w[far][2] - w[0][2]))
            far = k;
    double dw = hypot(w[far][0] - w[0][0], w[far][2] - w[0][2]);
    double scale = hypot(sx[far] - sx[0], sy[far] - sy[0]) / dw;
    cr_assert(dw > 0.5, "polygon too small to measure");
    /* x grows right, z grows up: pixel deltas are +dx and -dz times the scale (0.01 px). */
    cr_assert(fabs((sx[far] - sx[0]) - scale * (w[far][0] - w[0][0])) < 0.02);
    cr_assert(fabs((sy[far] - sy[0]) + scale * (w[far][2] - w[0][2])) < 0.02);
    return scale;
}

/* ===== tests ===== */

Test(cli_render, one_polygon_element_per_polygon_lowest_first_with_scale_and_tiles)
{
    char *svg = render_svg("gen:furniture:32:1 --threads 2");
    op_mesh *m = build("furniture", 32, NULL);
    cr_assert_eq(count_tags(svg, "polygon", "class=\"poly\""), op_mesh_poly_count(m));
    double last = -1e300;
    for (const char *p = next_tag(svg, "polygon", "class=\"poly\""); p;
         p = next_tag(p + 1, "polygon", "class=\"poly\"")) {
        int tile, poly;
        double box[4];
        key_of(m, p, &tile, &poly);
        double y = mean_y(m, tile, poly, box);
        cr_assert(fabs(attr_num(p, "data-y") - y) < 1e-3);
        cr_assert(y >= last - 1e-9, "polygons not drawn lowest first");
        last = y;
    }
    /* The scale bar: its line's length in pixels at the drawing's scale is its label. */
    double scale = drawing_scale(m, next_tag(svg, "polygon", "class=\"poly\""));
    const char *bar = strstr(svg, "id=\"scale-bar\"");
    cr_assert_not_null(bar);
    const char *line = next_tag(bar, "line", "scale-line"), *label = next_tag(bar, "text", NULL);
    char text[64];
    text_of(label, text, sizeof text);
    double metres = atof(text);
    cr_assert(strstr(text, " m") && metres > 0, "label '%s'", text);
    double len_px = attr_num(line, "x2") - attr_num(line, "x1");
    cr_assert(fabs(len_px / scale - metres) < 1e-3 * metres, "bar %g px = %g m, label %s", len_px,
              len_px / scale, text);
    /* A label per tile cell. */
    for (int i = 0; i < op_mesh_tile_count(m); i++) {
        const op_tile *t = op_mesh_tile(m, i);
        char want[64];
        snprintf(want, sizeof want, "data-tile=\"%d,%d\"", t->tx, t->tz);
        cr_assert_eq(count_tags(svg, "text", want), 1, "tile %d,%d: no single label", t->tx, t->tz);
    }
    /* Axes in metres and a title naming the level and the cell size. */
    cr_assert_gt(count_tags(svg, "text", "tick-x"), 3);
    cr_assert_gt(count_tags(svg, "text", "tick-z"), 3);
    const char *title = next_tag(svg, "text", "id=\"title\""),
               *set = strstr(svg, "id=\"settings\"");
    cr_assert(title && set);
    text_of(title, text, sizeof text);
    cr_assert(strstr(text, "gen:furniture:32:1"), "%s", text);
    cr_assert(strstr(set, "cell 0.30"));
    op_mesh_destroy(m);
    free(svg);
}

Test(cli_render, y_range_shows_one_floor)
{
    char *svg = render_svg("gen:multifloor:32:1 --y-range 3,6 --color height");
    op_mesh *m = build("multifloor", 32, NULL);
    long want = 0;
    for (int i = 0; i < op_mesh_tile_count(m); i++)
        for (int p = 0; p < op_mesh_tile(m, i)->npolys; p++) {
            double box[4], y = mean_y(m, i, p, box);
            want += y >= 3 && y <= 6;
        }
    cr_assert(want > 0 && want < op_mesh_poly_count(m), "%ld of %ld", want, op_mesh_poly_count(m));
    cr_assert_eq(count_tags(svg, "polygon", "class=\"poly\""), want);
    for (const char *p = next_tag(svg, "polygon", "class=\"poly\""); p;
         p = next_tag(p + 1, "polygon", "class=\"poly\"")) {
        double y = attr_num(p, "data-y");
        cr_assert(y >= 3 && y <= 6, "polygon at %g drawn", y);
    }
    cr_assert_eq(count_tags(svg, "g", "class=\"legend-entry\" data-value=\"ramp\""), 1);
    op_mesh_destroy(m);
    free(svg);
}

Test(cli_render, bounds_crop_to_what_meets_them)
{
    const double b[4] = {5, 12, 21, 27};
    char *svg = render_svg("gen:furniture:32:1 --bounds 5,12,21,27");
    op_mesh *m = build("furniture", 32, NULL);
    long want = 0;
    for (int i = 0; i < op_mesh_tile_count(m); i++)
        for (int p = 0; p < op_mesh_tile(m, i)->npolys; p++) {
            double box[4];
            mean_y(m, i, p, box);
            int meets = box[2] >= b[0] && box[0] <= b[2] && box[3] >= b[1] && box[1] <= b[3];
            char key[64];
            const op_tile *t = op_mesh_tile(m, i);
            snprintf(key, sizeof key, "data-key=\"%d,%d,%d,%d\"", t->tx, t->tz, t->layer, p);
            cr_assert_eq(count_tags(svg, "polygon", key), meets, "polygon %s", key);
            want += meets;
        }
    cr_assert(want > 0 && want < op_mesh_poly_count(m));
    /* The scale still holds, and the tiles labelled are those the bounds meet. */
    double scale = drawing_scale(m, next_tag(svg, "polygon", "class=\"poly\""));
    /* 900 px over the 16 m side, to the 0.01 px the points are written in. */
    cr_assert(fabs(scale - 900.0 / 16) < 1e-4 * scale, "scale %g px/m", scale);
    cr_assert_eq(count_tags(svg, "text", "data-tile=\"0,0\""), 0, "tile 0,0 lies outside");
    cr_assert_eq(count_tags(svg, "text", "data-tile=\"1,1\""), 1);
    op_mesh_destroy(m);
    free(svg);
}

Test(cli_render, grid_off_draws_no_tiles)
{
    char *svg = render_svg("gen:furniture:16:1 --grid off");
    cr_assert_eq(count_tags(svg, "text", "tile-label"), 0);
    cr_assert_null(strstr(svg, "id=\"grid\""));
    free(svg);
    svg = render_svg("gen:furniture:16:1");
    cr_assert_gt(count_tags(svg, "text", "tile-label"), 0);
    cr_assert_not_null(strstr(svg, "id=\"grid\""));
    free(svg);
}

Test(cli_render, walkable_area_setting_names_the_legend_entry)
{
    char *svg = render_svg("gen:furniture:16:1 --set area=7");
    cr_assert_eq(count_tags(svg, "g", "class=\"legend-entry\""), 1);
    const char *e = next_tag(svg, "g", "data-value=\"7\"");
    cr_assert_not_null(e);
    cr_assert_not_null(strstr(e, "walkable, area 7"));
    free(svg);
}

/* Tile (0, 0) of hand-made polygons: two squares of areas 63 and 5 sharing an edge, a
 * triangle of area 1 beside them; and an island square of area 5 on its own. */
static void write_hand_tiles(const char *dir)
{
    static const float v[] = {0, 0,    0, 4, 0, 0, 4, 0, 4, 0, 0, 4, 8, 0, 0, 8, 0,
                              4, 9.5f, 0, 2, 6, 0, 7, 9, 0, 7, 9, 0, 9, 6, 0, 9};
    static const int p[] = {0, 1, 2, 3,  -1, -1, 1, 4, 5, 2,  -1, -1,
                            4, 6, 5, -1, -1, -1, 7, 8, 9, 10, -1, -1};
    static const int areas[] = {63, 5, 1, 5};
    op_arena *a = op_arena_create(0);
    op_tile t;
    cr_assert_eq(hm_tile(a, 0, 0, 0, 10.0, 0.0, v, 11, p, 4, areas, &t), 0);
    op_bytes b;
    op_err e;
    cr_assert_eq(op_tile_encode(&t, &b, NULL, &e), OP_OK, "%s", e.msg);
    char path[512];
    snprintf(path, sizeof path, "%s/0_0_0.optile", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b.data, 1, b.len, f), b.len);
    fclose(f);
    op_bytes_free(&b);
    op_arena_destroy(a);
}

static int has_entry(const char *svg, const char *value)
{
    char want[64];
    snprintf(want, sizeof want, "data-value=\"%s\"", value);
    return count_tags(svg, "g", want);
}

static void fill_of(const char *svg, const char *key, char *out, size_t n)
{
    char want[64];
    snprintf(want, sizeof want, "data-key=\"%s\"", key);
    const char *p = next_tag(svg, "polygon", want);
    cr_assert_not_null(p, "%s", key);
    cr_assert(attr(p, "fill", out, n));
}

Test(cli_render, legend_names_exactly_the_areas_and_the_island)
{
    char dir[] = "/tmp/op_render_tiles_XXXXXX", args[256];
    cr_assert_not_null(mkdtemp(dir));
    write_hand_tiles(dir);
    snprintf(args, sizeof args, "--tiles %s", dir);
    char *svg = render_svg(args);
    cr_assert_eq(count_tags(svg, "polygon", "class=\"poly\""), 4);
    cr_assert_eq(count_tags(svg, "g", "class=\"legend-entry\""), 3);
    cr_assert(has_entry(svg, "1") && has_entry(svg, "5") && has_entry(svg, "63"));
    cr_assert(strstr(svg, "area 5: 2 polygons"), "area 5's entry counts its two polygons");
    char f0[16], f1[16], f3[16];
    fill_of(svg, "0,0,0,1", f0, sizeof f0);
    fill_of(svg, "0,0,0,3", f1, sizeof f1);
    cr_assert_str_eq(f0, f1, "one area, one colour");
    free(svg);
    snprintf(args, sizeof args, "--tiles %s --color connectivity", dir);
    svg = render_svg(args);
    cr_assert_eq(count_tags(svg, "g", "class=\"legend-entry\""), 2);
    cr_assert(has_entry(svg, "largest") && has_entry(svg, "unreachable"));
    cr_assert(strstr(svg, "unreachable from it: 1 parts, 1 polygons"), "the island is counted");
    fill_of(svg, "0,0,0,0", f0, sizeof f0);
    fill_of(svg, "0,0,0,2", f1, sizeof f1);
    fill_of(svg, "0,0,0,3", f3, sizeof f3);
    cr_assert_str_eq(f0, f1, "the connected polygons share a colour");
    cr_assert_str_neq(f0, f3, "the island stands out");
    free(svg);
    char path[512];
    snprintf(path, sizeof path, "%s/0_0_0.optile", dir);
    remove(path);
    rmdir(dir);
}

Test(cli_render, refusals)
{
    static const char *const bad[] = {
        "gen:flat:16:1 --y-range 5,1",      "gen:flat:16:1 --y-range 1",
        "gen:flat:16:1 --bounds 1,1,0,2",   "gen:flat:16:1 --bounds 1,1,2",
        "gen:flat:16:1 --color rainbow",    "gen:flat:16:1 --grid maybe",
        "gen:flat:16:1 --bounds 0,0,nan,1", "gen:flat:16:1 --y-range",
    };
    char path[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(render(bad[i], path, sizeof path), 2, "%s", bad[i]);
    remove(path);
}
