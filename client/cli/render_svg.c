/*
 * onepath render, the SVG (render.h): a title with the level and the settings that shape
 * the mesh; the plot (x right, z up, world units) clipped to the view, with the tile grid
 * and labels, the shown polygons lowest first, each followed by its walls (edges with
 * nothing across) so that an upper floor covers the floor below and its walls; axes with
 * ticks in metres; a scale bar; the legend beside the plot; and the path, if asked for.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/query.h"
#include "render.h"

#define PLOT_SIZE         900.0 /* px along the view's longer side */
#define LEFT              78.0  /* z tick labels and axis title */
#define TOP               88.0  /* three title lines */
#define BOTTOM            96.0  /* x tick labels, axis title, scale bar */
#define LEGEND_W          360.0
#define GAP               28.0
#define MIN_TILE_LABEL_PX 44.0 /* smaller tile cells are not labelled */

typedef struct frame {
    double x0, z1, scale; /* world x of the plot's left edge, z of its top; px per metre */
    double pw, ph;        /* plot size, px */
} frame;

static double px(const frame *fr, double x)
{
    return LEFT + (x - fr->x0) * fr->scale;
}

static double pz(const frame *fr, double z)
{
    return TOP + (fr->z1 - z) * fr->scale;
}

static void escaped(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
}

/* 1, 2 or 5 times a power of ten, the largest not above v. */
static double nice_step(double v)
{
    double p = pow(10, floor(log10(v))), m = v / p;
    return (m >= 5 ? 5 : m >= 2 ? 2 : 1) * p;
}

static void metres(char *out, size_t n, double v, double step)
{
    int decimals = step >= 1 ? 0 : step >= 0.1 ? 1 : 2;
    snprintf(out, n, "%.*f", decimals, fabs(v) < 1e-9 ? 0.0 : v);
}

static void title(FILE *f, const render_scene *sc)
{
    static const char *const modes[] = {"area", "connectivity", "height", "region"};
    const render_opts *o = sc->o;
    const op_settings *s = &o->mo.s;
    fprintf(f, "<text id=\"title\" x=\"%.1f\" y=\"26\" font-size=\"19\" font-weight=\"bold\">",
            LEFT);
    escaped(f, o->mo.level ? o->mo.level : o->mo.tiles_dir);
    fprintf(f, " \xe2\x80\x94 navmesh from above, colour by %s", modes[o->colour]);
    fprintf(f,
            "</text>\n<text id=\"settings\" x=\"%.1f\" y=\"48\" font-size=\"12.5\" "
            "fill=\"#333\">",
            LEFT);
    fprintf(f,
            "cell %.2f \xc3\x97 %.2f m \xc2\xb7 tile %.2f m \xc2\xb7 agent height %.2f, radius "
            "%.2f, climb %.2f m, slope %.0f\xc2\xb0 \xc2\xb7 %s \xc2\xb7 regions min %d / "
            "merge %d cells \xc2\xb7 edge error %.2f cells, length %.1f m",
            s->cell_size, s->cell_height, op_mesh_settings(sc->m)->tile_size, s->agent_height,
            s->agent_radius, s->agent_max_climb, s->agent_max_slope,
            op_partition_name(s->partition), s->min_region_area, s->merge_region_area,
            s->contour_max_error, s->max_edge_length);
    fprintf(f,
            "</text>\n<text id=\"view\" x=\"%.1f\" y=\"66\" font-size=\"12.5\" "
            "fill=\"#333\">shown: ",
            LEFT);
    if (o->have_y)
        fprintf(f, "polygons with a mean height of %.2f..%.2f m", o->ymin, o->ymax);
    else
        fprintf(f, "every floor (lower ones under upper ones)");
    fprintf(f, ", x %.1f..%.1f m, z %.1f..%.1f m%s</text>\n", sc->view[0], sc->view[2], sc->view[1],
            sc->view[3], o->have_bounds ? " (--bounds)" : "");
}

static void axes(FILE *f, const render_scene *sc, const frame *fr)
{
    const double *v = sc->view;
    double step = nice_step(fmax(v[2] - v[0], v[3] - v[1]) / 6);
    char s[32];
    fprintf(f,
            "<g id=\"axes\" font-size=\"11\" fill=\"#222\"><rect x=\"%.2f\" y=\"%.2f\" "
            "width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#222\"/>\n",
            LEFT, TOP, fr->pw, fr->ph);
    for (double x = ceil(v[0] / step) * step; x <= v[2] + 1e-9; x += step) {
        metres(s, sizeof s, x, step);
        fprintf(f,
                "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#222\"/>"
                "<text class=\"tick-x\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n",
                px(fr, x), TOP + fr->ph, px(fr, x), TOP + fr->ph + 5, px(fr, x), TOP + fr->ph + 18,
                s);
    }
    for (double z = ceil(v[1] / step) * step; z <= v[3] + 1e-9; z += step) {
        metres(s, sizeof s, z, step);
        fprintf(f,
                "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#222\"/>"
                "<text class=\"tick-z\" x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%s</text>\n",
                LEFT - 5, pz(fr, z), LEFT, pz(fr, z), LEFT - 8, pz(fr, z) + 4, s);
    }
    fprintf(f,
            "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"12\">x (m) "
            "\xe2\x86\x92</text>\n<text transform=\"translate(%.2f %.2f) rotate(-90)\" "
            "text-anchor=\"middle\" font-size=\"12\">z (m) \xe2\x86\x92</text>\n</g>\n",
            LEFT + fr->pw / 2, TOP + fr->ph + 36, 22.0, TOP + fr->ph / 2);
}

/* A bar of a round length near a fifth of the view's width, under the x axis. */
static void scale_bar(FILE *f, const render_scene *sc, const frame *fr)
{
    double len = nice_step((sc->view[2] - sc->view[0]) / 5), x = LEFT, y = TOP + fr->ph + 66;
    double w = len * fr->scale;
    char s[32];
    metres(s, sizeof s, len, len);
    fprintf(f,
            "<g id=\"scale-bar\" data-metres=\"%s\"><line class=\"scale-line\" x1=\"%.2f\" "
            "y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\" stroke-width=\"3\"/>"
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>"
            "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000\"/>"
            "<text class=\"scale-label\" x=\"%.2f\" y=\"%.2f\" font-size=\"12\" "
            "text-anchor=\"middle\">%s m</text></g>\n",
            s, x, y, x + w, y, x, y - 6, x, y + 6, x + w, y - 6, x + w, y + 6, x + w / 2, y - 8, s);
}

static int layers_of_cell(const op_mesh *m, int i)
{
    const op_tile *t = op_mesh_tile(m, i);
    int n = 1;
    while (i + n < op_mesh_tile_count(m) && op_mesh_tile(m, i + n)->tx == t->tx &&
           op_mesh_tile(m, i + n)->tz == t->tz)
        n++;
    return n;
}

/* Tile cells (tiles are in key order, so a cell's layers are consecutive) and their labels
 * at the top-left corner of their visible part. */
static void grid(FILE *f, const render_scene *sc, const frame *fr)
{
    const op_mesh *m = sc->m;
    const double *v = sc->view;
    fprintf(f, "<g id=\"grid\" fill=\"none\" stroke=\"#555\" stroke-width=\"0.8\" "
               "stroke-dasharray=\"4 3\">\n");
    for (int i = 0; i < op_mesh_tile_count(m); i += layers_of_cell(m, i)) {
        const op_tile *t = op_mesh_tile(m, i);
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/>\n",
                px(fr, t->origin[0]), pz(fr, t->origin[2] + t->tile_size), t->tile_size * fr->scale,
                t->tile_size * fr->scale);
    }
    fprintf(f, "</g>\n<g id=\"tile-labels\" font-size=\"11\" fill=\"#333\" "
               "paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"3\" "
               "stroke-opacity=\"0.8\">\n");
    for (int i = 0; i < op_mesh_tile_count(m); i += layers_of_cell(m, i)) {
        const op_tile *t = op_mesh_tile(m, i);
        double x0 = fmax(t->origin[0], v[0]), z1 = fmin(t->origin[2] + t->tile_size, v[3]);
        double x1 = fmin(t->origin[0] + t->tile_size, v[2]), z0 = fmax(t->origin[2], v[1]);
        if ((x1 - x0) * fr->scale < MIN_TILE_LABEL_PX || (z1 - z0) * fr->scale < 14)
            continue;
        int nl = layers_of_cell(m, i);
        fprintf(f, "<text class=\"tile-label\" data-tile=\"%d,%d\" x=\"%.2f\" y=\"%.2f\">%d,%d",
                t->tx, t->tz, px(fr, x0) + 3, pz(fr, z1) + 11, t->tx, t->tz);
        if (nl > 1)
            fprintf(f, " (%d layers)", nl);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
}

static void points(FILE *f, const frame *fr, const op_mesh *m, op_polyref r)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    int n = op_tile_poly_nverts(t, r.poly);
    for (int k = 0; k < n; k++) {
        double w[3];
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + k], w);
        fprintf(f, "%s%.2f,%.2f", k ? " " : "", px(fr, w[0]), pz(fr, w[2]));
    }
}

static void walls(FILE *f, const frame *fr, const op_mesh *m, op_polyref r)
{
    const op_tile *t = op_mesh_tile(m, r.tile);
    int n = op_tile_poly_nverts(t, r.poly), any = 0;
    for (int k = 0; k < n; k++) {
        if (!render_edge_is_wall(m, r, k))
            continue;
        double a[3], b[3];
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + k], a);
        op_tile_world_vert(t, t->polys[(size_t)r.poly * t->nvp + (k + 1) % n], b);
        fprintf(f, "%sM%.2f %.2fL%.2f %.2f",
                any++ ? ""
                      : "<path class=\"wall\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.4\" "
                        "stroke-linecap=\"round\" d=\"",
                px(fr, a[0]), pz(fr, a[2]), px(fr, b[0]), pz(fr, b[2]));
    }
    if (any)
        fprintf(f, "\"/>\n");
}

static void polygons(FILE *f, const render_scene *sc, const frame *fr)
{
    fprintf(f, "<g id=\"polygons\" stroke-linejoin=\"round\">\n");
    for (long k = 0; k < sc->nshown; k++) {
        const render_poly *p = &sc->polys[sc->shown[k]];
        const op_tile *t = op_mesh_tile(sc->m, p->ref.tile);
        char col[8];
        render_fill(sc, sc->shown[k], col);
        fprintf(f,
                "<polygon class=\"poly\" data-key=\"%d,%d,%d,%d\" data-area=\"%u\" "
                "data-y=\"%.3f\" fill=\"%s\" stroke=\"#fff\" stroke-opacity=\"0.55\" "
                "stroke-width=\"0.5\" points=\"",
                t->tx, t->tz, t->layer, p->ref.poly, t->areas[p->ref.poly], p->y, col);
        points(f, fr, sc->m, p->ref);
        fprintf(f, "\"/>\n");
        walls(f, fr, sc->m, p->ref);
    }
    fprintf(f, "</g>\n");
}

static int path(FILE *f, const render_scene *sc, const frame *fr)
{
    const render_opts *o = sc->o;
    const op_mesh *m = sc->m;
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
    /* Outlined, not filled: the colours under the corridor keep their meaning. */
    fprintf(f, "<g id=\"corridor\" fill=\"none\" stroke=\"#f5b800\" stroke-width=\"2.2\" "
               "stroke-linejoin=\"round\">\n");
    for (int i = 0; i < p.npolys; i++) {
        fprintf(f, "<polygon points=\"");
        points(f, fr, m, p.polys[i]);
        fprintf(f, "\"/>\n");
    }
    /* A white halo under a near-black line reads on every fill, the height ramp's red too;
     * a partial path (its end not reached) is magenta. */
    fprintf(f, "</g>\n<g id=\"path\" data-partial=\"%d\">\n", p.partial);
    for (int pass = 0; pass < 2; pass++) {
        fprintf(f,
                "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" "
                "stroke-linejoin=\"round\" points=\"",
                pass ? (p.partial ? "#c2187d" : "#1a1a1a") : "#fff", pass ? "2.5" : "6");
        for (int i = 0; i < sp.npoints; i++)
            fprintf(f, "%s%.2f,%.2f", i ? " " : "", px(fr, sp.points[i].pos[0]),
                    pz(fr, sp.points[i].pos[2]));
        fprintf(f, "\"/>\n");
    }
    for (int i = 0; i < sp.npoints; i++) {
        const op_straight_point *q = &sp.points[i];
        int tile = (q->flags & OP_STRAIGHT_TILE) != 0;
        fprintf(f,
                "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%d\" fill=\"%s\" stroke=\"#fff\" "
                "stroke-width=\"1.5\"/>\n",
                px(fr, q->pos[0]), pz(fr, q->pos[2]), tile ? 5 : 4, tile ? "#268bd2" : "#1a1a1a");
    }
    fprintf(f, "</g>\n");
    rc = 0;
done:
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return rc;
}

static void make_frame(const render_scene *sc, frame *fr)
{
    const double *v = sc->view;
    double w = v[2] - v[0], h = v[3] - v[1];
    fr->scale = PLOT_SIZE / fmax(w, h);
    fr->x0 = v[0];
    fr->z1 = v[3];
    fr->pw = w * fr->scale;
    fr->ph = h * fr->scale;
}

static int body(FILE *f, const render_scene *sc, const frame *fr)
{
    fprintf(f,
            "<defs><clipPath id=\"plot\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
            "height=\"%.2f\"/></clipPath></defs>\n<g clip-path=\"url(#plot)\">\n",
            LEFT, TOP, fr->pw, fr->ph);
    polygons(f, sc, fr);
    if (sc->o->grid)
        grid(f, sc, fr);
    int rc = sc->o->have_path ? path(f, sc, fr) : 0;
    fprintf(f, "</g>\n");
    axes(f, sc, fr);
    scale_bar(f, sc, fr);
    return rc;
}

int render_write_svg(const render_scene *sc)
{
    const char *out = sc->o->out;
    FILE *f = fopen(out, "w");
    if (!f) {
        fprintf(stderr, "onepath: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    frame fr;
    make_frame(sc, &fr);
    /* The legend goes to a scratch buffer first: its height sizes the picture. */
    char *legend = NULL;
    size_t legend_len = 0;
    FILE *lf = open_memstream(&legend, &legend_len);
    double tile = op_mesh_tile_count(sc->m) ? op_mesh_tile(sc->m, 0)->tile_size : 0;
    int labelled = tile * fr.scale >= MIN_TILE_LABEL_PX;
    double lh = lf ? render_legend(lf, sc, LEFT + fr.pw + GAP, TOP, labelled) : 0;
    if (lf)
        fclose(lf);
    double w = LEFT + fr.pw + GAP + LEGEND_W, h = TOP + fmax(fr.ph, lh) + BOTTOM;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.2f %.2f\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            ceil(w), ceil(h), w, h);
    title(f, sc);
    int rc = body(f, sc, &fr);
    if (legend)
        fwrite(legend, 1, legend_len, f);
    else
        rc = 1;
    free(legend);
    fprintf(f, "</svg>\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "onepath: writing %s failed: %s\n", out, strerror(errno));
        rc = 1;
    }
    return rc;
}
