/*
 * onepath render: a top-down map of a mesh for a level designer. cmd_render.c parses the
 * options and loads the mesh, render_scene.c decides what is drawn and in which colour
 * (connected parts, height range, areas), render_svg.c writes the SVG (title, axes and a
 * scale bar in world units, tile grid and labels, legend, polygons lowest first, walls).
 *
 * The SVG's structure is part of the contract (tests/test_cli_render.c parses it): one
 * <polygon class="poly" data-key="tx,tz,layer,poly"> per drawn mesh polygon, lowest first;
 * <g class="legend-entry" data-value="..."> per legend entry; <g id="scale-bar"> with a
 * <line class="scale-line"> and a <text class="scale-label">N m</text>; one
 * <text class="tile-label" data-tile="tx,tz"> per labelled tile cell.
 */
#ifndef OP_RENDER_H
#define OP_RENDER_H

#include <stdio.h>

#include "cli_mesh.h"
#include "onepath/mesh.h"

typedef enum render_colour {
    RENDER_AREA = 0,     /* by area id, with a legend of the ids present */
    RENDER_CONNECTIVITY, /* the largest connected part vs everything unreachable from it */
    RENDER_HEIGHT,       /* a colour ramp over the shown height range */
    RENDER_REGION,       /* one colour per region of a tile layer (debugging) */
} render_colour;

typedef struct render_opts {
    cli_mesh_opts mo;
    const char *out;
    render_colour colour;
    int grid; /* tile borders and labels; --grid off clears it */
    int have_y, have_bounds, have_path;
    double ymin, ymax; /* --y-range: polygons whose mean height lies in [ymin, ymax] */
    double bounds[4];  /* --bounds x0,z0,x1,z1 */
    double from[3], to[3];
} render_opts;

/* One mesh polygon, as the picture needs it. */
typedef struct render_poly {
    op_polyref ref;
    double y;      /* mean world height of its vertices */
    double area;   /* projected (XZ) area, m^2 */
    double box[4]; /* XZ bounds x0, z0, x1, z1 */
    int part;      /* connected part (in-tile neighbours and stitched links) */
} render_poly;

typedef struct render_scene {
    const op_mesh *m;
    const render_opts *o;
    long npolys;
    render_poly *polys; /* every polygon, in dense index order */
    long nshown;
    long *shown; /* drawn polygons: in the y-range and the view, lowest first */
    int nparts;
    int largest;       /* the part with the largest area (lowest index on ties) */
    double *part_area; /* per part */
    long *part_polys;
    double view[4];  /* world XZ window drawn: x0, z0, x1, z1 */
    double ylo, yhi; /* height range of the shown polygons */
} render_scene;

/* Computes polygons, parts, the view and the shown set. Returns 0, or 1 out of memory. */
int render_scene_build(render_scene *sc, const op_mesh *m, const render_opts *o);
void render_scene_free(render_scene *sc);

/* Fill colour "#rrggbb" of polygon i (dense index) in the scene's colour mode. */
void render_fill(const render_scene *sc, long i, char out[8]);

/* Whether edge k of polygon r has nothing across it (no in-tile neighbour, no link). */
int render_edge_is_wall(const op_mesh *m, op_polyref r, int k);

/* Legend of the colour mode at (x, y) px, about 340 px wide; tiles_labelled says whether the
 * tile cells are large enough to carry labels. Returns its height in px. */
double render_legend(FILE *f, const render_scene *sc, double x, double y, int tiles_labelled);

/* Writes the SVG to o->out; prints errors. Returns 0 on success. */
int render_write_svg(const render_scene *sc);

#endif
