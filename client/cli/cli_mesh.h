/* Loading a mesh for the path, render and export commands: a level (OBJ or gen:...)
 * built tile by tile and stitched, or a directory of baked tile blobs. */
#ifndef OP_CLI_MESH_H
#define OP_CLI_MESH_H

#include "onepath/mesh.h"
#include "onepath/settings.h"

/* Options every mesh command shares. */
typedef struct cli_mesh_opts {
    const char *level;     /* OBJ path or gen:KIND:SIZE:SEED */
    const char *tiles_dir; /* --tiles DIR: *.optile blobs instead of a build */
    int threads;
    op_settings s;
} cli_mesh_opts;

void cli_mesh_opts_init(cli_mesh_opts *o);

/* Consumes a shared option at argv[*i] (--set, --threads, --tiles) or the level
 * argument. Returns 1 if consumed, 0 if not ours, -1 on a bad value (printed). */
int cli_mesh_parse(cli_mesh_opts *o, int argc, char **argv, int *i);

/* Builds (or reads) and stitches the mesh; prints errors. Returns 0 on success; the
 * caller frees *out with op_mesh_destroy. */
int cli_mesh_load(const cli_mesh_opts *o, op_mesh **out);

/* Parses "X,Y,Z" (three finite numbers). */
int cli_parse_point(const char *text, double p[3]);

#endif
