/*
 * onepath render, colours and the legend (render.h): the fill of each colour mode and the
 * legend panel that names every colour in the picture (area ids present, the largest
 * connected part and what is unreachable from it, the height ramp with its values), then
 * the line styles and how many polygons are shown. Entries count only the shown polygons.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onepath/hash.h"
#include "render.h"

/* Area ids other than walkable: ten distinct colours (Tableau 10), by id. */
static const char *const area_palette[] = {"#59a14f", "#f28e2b", "#e15759", "#76b7b2", "#edc948",
                                           "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#4e79a7"};
#define WALKABLE_COLOUR "#8fbcd4"
#define ISLAND_COLOUR   "#e8452c"
#define LINE            17.0 /* legend line height, px */

static int is_walkable_area(const render_scene *sc, unsigned area)
{
    return area == 63u || area == (unsigned)sc->o->mo.s.area;
}

static const char *area_colour(const render_scene *sc, unsigned area)
{
    return is_walkable_area(sc, area) ? WALKABLE_COLOUR : area_palette[area % 10];
}

/* The height ramp (ColorBrewer RdYlBu: blue low, red high) at t in [0, 1]. */
static const unsigned char ramp_stops[5][3] = {
    {44, 123, 182}, {171, 217, 233}, {255, 255, 191}, {253, 174, 97}, {215, 25, 28}};

static void ramp(double t, char out[8])
{
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    double s = t * 4;
    int i = s >= 4 ? 3 : (int)s;
    double f = s - i;
    unsigned c[3];
    for (int k = 0; k < 3; k++)
        c[k] = (unsigned)lround(ramp_stops[i][k] + (ramp_stops[i + 1][k] - ramp_stops[i][k]) * f);
    snprintf(out, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static unsigned poly_area_id(const render_scene *sc, long i)
{
    const render_poly *p = &sc->polys[i];
    return op_mesh_tile(sc->m, p->ref.tile)->areas[p->ref.poly];
}

/* Area and connectivity colours are shaded by height, so that floors over floors part:
 * the lowest shown polygons get 70 % of the colour (mixed with black), the highest all of
 * it. Nothing is shaded when the shown heights span less than SHADE_MIN_SPAN. */
#define SHADE_MIN_SPAN 0.5
#define SHADE_LOW      0.70

static int shaded(const render_scene *sc)
{
    return sc->nshown && sc->yhi - sc->ylo >= SHADE_MIN_SPAN;
}

static void shade(const char *hex, double t, char out[8])
{
    unsigned c[3];
    sscanf(hex, "#%02x%02x%02x", &c[0], &c[1], &c[2]);
    double k = SHADE_LOW + (1 - SHADE_LOW) * (t < 0 ? 0 : t > 1 ? 1 : t);
    snprintf(out, 8, "#%02x%02x%02x", (unsigned)lround(c[0] * k), (unsigned)lround(c[1] * k),
             (unsigned)lround(c[2] * k));
}

static void shade_by_height(const render_scene *sc, const char *hex, double y, char out[8])
{
    if (shaded(sc))
        shade(hex, (y - sc->ylo) / (sc->yhi - sc->ylo), out);
    else
        snprintf(out, 8, "%s", hex);
}

void render_fill(const render_scene *sc, long i, char out[8])
{
    const render_poly *p = &sc->polys[i];
    const op_tile *t = op_mesh_tile(sc->m, p->ref.tile);
    switch (sc->o->colour) {
    case RENDER_AREA:
        shade_by_height(sc, area_colour(sc, poly_area_id(sc, i)), p->y, out);
        return;
    case RENDER_CONNECTIVITY:
        shade_by_height(sc, p->part == sc->largest ? WALKABLE_COLOUR : ISLAND_COLOUR, p->y, out);
        return;
    case RENDER_HEIGHT:
        ramp(sc->yhi > sc->ylo ? (p->y - sc->ylo) / (sc->yhi - sc->ylo) : 0.5, out);
        return;
    case RENDER_REGION: {
        int32_t key[4] = {t->tx, t->tz, t->layer, t->regs ? t->regs[p->ref.poly] : p->ref.poly};
        uint64_t h = op_hash_bytes(key, sizeof key);
        snprintf(out, 8, "#%02x%02x%02x", (unsigned)(96 + (h & 127)),
                 (unsigned)(96 + ((h >> 8) & 127)), (unsigned)(96 + ((h >> 16) & 127)));
        return;
    }
    }
}

static void swatch(FILE *f, double x, double y, const char *fill, const char *value,
                   const char *text)
{
    fprintf(f,
            "<g class=\"legend-entry\" data-value=\"%s\"><rect x=\"%.1f\" y=\"%.1f\" "
            "width=\"14\" height=\"12\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.6\"/>"
            "<text x=\"%.1f\" y=\"%.1f\">%s</text></g>\n",
            value, x, y - 10, fill, x + 20, y, text);
}

static double legend_area(FILE *f, const render_scene *sc, double x, double y)
{
    long count[64] = {0};
    double area[64] = {0};
    for (long k = 0; k < sc->nshown; k++) {
        unsigned a = poly_area_id(sc, sc->shown[k]) & 63u;
        count[a]++;
        area[a] += sc->polys[sc->shown[k]].area;
    }
    for (unsigned a = 0; a < 64; a++) {
        if (!count[a])
            continue;
        char value[8], text[128];
        snprintf(value, sizeof value, "%u", a);
        snprintf(text, sizeof text, "%s %u: %ld polygons, %.0f m\xc2\xb2",
                 is_walkable_area(sc, a) ? "walkable, area" : "area", a, count[a], area[a]);
        swatch(f, x, y, area_colour(sc, a), value, text);
        y += LINE;
    }
    return y;
}

static double legend_parts(FILE *f, const render_scene *sc, double x, double y)
{
    long polys[2] = {0}, parts = 0;
    double area[2] = {0};
    char *seen = calloc((size_t)sc->nparts + 1, 1);
    for (long k = 0; k < sc->nshown && seen; k++) {
        const render_poly *p = &sc->polys[sc->shown[k]];
        int island = p->part != sc->largest;
        polys[island]++;
        area[island] += p->area;
        parts += island && !seen[p->part];
        seen[p->part] = 1;
    }
    free(seen);
    char text[160];
    if (polys[0]) {
        snprintf(text, sizeof text, "largest connected part: %ld polygons, %.0f m\xc2\xb2",
                 polys[0], area[0]);
        swatch(f, x, y, WALKABLE_COLOUR, "largest", text);
        y += LINE;
    }
    if (polys[1]) {
        snprintf(text, sizeof text, "unreachable from it: %ld parts, %ld polygons, %.0f m\xc2\xb2",
                 parts, polys[1], area[1]);
        swatch(f, x, y, ISLAND_COLOUR, "unreachable", text);
        y += LINE;
    }
    return y;
}

static double legend_ramp(FILE *f, const render_scene *sc, double x, double y)
{
    const double h = 120;
    fprintf(f, "<defs><linearGradient id=\"ramp\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">");
    for (int k = 0; k < 5; k++)
        fprintf(f, "<stop offset=\"%.2f\" stop-color=\"rgb(%u,%u,%u)\"/>", k / 4.0,
                ramp_stops[k][0], ramp_stops[k][1], ramp_stops[k][2]);
    fprintf(f,
            "</linearGradient></defs>\n<g class=\"legend-entry\" data-value=\"ramp\">"
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"%.0f\" fill=\"url(#ramp)\" "
            "stroke=\"#333\" stroke-width=\"0.6\"/>\n",
            x, y - 10, h);
    double lo = sc->nshown ? sc->ylo : 0, hi = sc->nshown ? sc->yhi : 0;
    for (int k = 0; k <= 4; k++) {
        double ty = y - 10 + h - h * k / 4.0;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">%.2f m</text>\n",
                x + 16, ty, x + 21, ty, x + 25, ty + 4, lo + (hi - lo) * k / 4.0);
    }
    fprintf(f, "</g>\n");
    return y + h + 6;
}

/* A legend row: a short line drawn with `style`, then text. Returns the next row's y. */
static double line_key(FILE *f, double x, double y, const char *style, const char *text)
{
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/><text x=\"%.1f\" "
            "y=\"%.1f\">%s</text>\n",
            x, y - 4, x + 14, y - 4, style, x + 20, y, text);
    return y + LINE;
}

/* The shading key: the walkable colour from the lowest to the highest shown height. */
static double legend_shade(FILE *f, const render_scene *sc, double x, double y)
{
    char lo[8], hi[8];
    shade(WALKABLE_COLOUR, 0, lo);
    shade(WALKABLE_COLOUR, 1, hi);
    y += 6;
    fprintf(f,
            "<defs><linearGradient id=\"shade\"><stop offset=\"0\" stop-color=\"%s\"/>"
            "<stop offset=\"1\" stop-color=\"%s\"/></linearGradient></defs>\n"
            "<g id=\"shade-key\"><rect x=\"%.1f\" y=\"%.1f\" width=\"60\" height=\"12\" "
            "fill=\"url(#shade)\" stroke=\"#333\" stroke-width=\"0.6\"/><text x=\"%.1f\" "
            "y=\"%.1f\">darker is lower: %.2f m \xe2\x80\xa6 %.2f m</text></g>\n",
            lo, hi, x, y - 10, x + 66, y, sc->ylo, sc->yhi);
    return y + LINE;
}

double render_legend(FILE *f, const render_scene *sc, double x, double y0, int tiles_labelled)
{
    static const char *const headings[] = {
        "Colour: area id of the polygon", "Colour: what an agent can reach",
        "Colour: mean height of the polygon", "Colour: region (one per tile layer, no meaning)"};
    double y = y0 + 14;
    fprintf(f,
            "<g id=\"legend\" font-size=\"12\">\n<text x=\"%.1f\" y=\"%.1f\" "
            "font-weight=\"bold\">%s</text>\n",
            x, y, headings[sc->o->colour]);
    y += LINE + 4;
    if (sc->o->colour == RENDER_AREA)
        y = legend_area(f, sc, x, y);
    else if (sc->o->colour == RENDER_CONNECTIVITY)
        y = legend_parts(f, sc, x, y);
    else if (sc->o->colour == RENDER_HEIGHT)
        y = legend_ramp(f, sc, x, y);
    if (sc->o->colour != RENDER_HEIGHT && sc->o->colour != RENDER_REGION && shaded(sc))
        y = legend_shade(f, sc, x, y);
    y += 10;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">Lines</text>\n", x, y);
    y += LINE;
    y = line_key(f, x, y, "stroke=\"#222\" stroke-width=\"1.6\"",
                 "edge with nothing across (wall, drop)");
    if (sc->o->grid)
        y = line_key(f, x, y, "stroke=\"#555\" stroke-dasharray=\"4 3\"",
                     tiles_labelled ? "tile border; label tx,tz (layers)"
                                    : "tile border (too small to label: crop with --bounds)");
    if (sc->o->have_path) {
        y = line_key(f, x, y, "stroke=\"#1a1a1a\" stroke-width=\"2.5\"",
                     "path (magenta: partial); blue dots: tile crossings");
        y = line_key(f, x, y, "stroke=\"#f5b800\" stroke-width=\"2.2\"",
                     "its corridor of polygons");
    }
    y += 6;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#444\">%ld of %ld polygons shown%s</text>\n", x,
            y, sc->nshown, sc->npolys, sc->o->have_y ? " (in the height range)" : "");
    fprintf(f, "</g>\n");
    return y + 6 - y0;
}
