/*
 * Loading a mesh for the query commands: a level built with op_mesh_build_level, or
 * the tile blobs of a directory (`onepath bake --out DIR`) decoded and stitched. The
 * blobs' tile size and nvp override the settings so that a bake made with other
 * settings still loads.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_common.h"
#include "cli_mesh.h"
#include "onepath/build.h"
#include "onepath/parallel.h"
#include "onepath/tile_codec.h"

void cli_mesh_opts_init(cli_mesh_opts *o)
{
    memset(o, 0, sizeof *o);
    op_settings_default(&o->s);
    o->threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (o->threads < 1)
        o->threads = 1;
}

int cli_mesh_parse(cli_mesh_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    int more = *i + 1 < argc;
    if (!strcmp(a, "--set") && more)
        return cli_apply_set(&o->s, argv[++*i]) ? -1 : 1;
    if (!strcmp(a, "--threads") && more)
        return cli_parse_int("--threads", argv[++*i], 1, OP_MAX_THREADS, &o->threads) ? -1 : 1;
    if (!strcmp(a, "--tiles") && more) {
        o->tiles_dir = argv[++*i];
        return 1;
    }
    if (a[0] != '-' && !o->level) {
        o->level = a;
        return 1;
    }
    return 0;
}

int cli_parse_point(const char *text, double p[3])
{
    const char *s = text;
    for (int k = 0; k < 3; k++) {
        char *end;
        errno = 0;
        p[k] = strtod(s, &end);
        if (end == s || errno || !isfinite(p[k]) || *end != (k < 2 ? ',' : '\0'))
            return 1;
        s = end + 1;
    }
    return 0;
}

static int build_level(const cli_mesh_opts *o, op_mesh **out)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_level *lvl = NULL;
    op_err e;
    int rc = 1;
    if (!a || cli_load_level(o->level, a, &soup))
        goto done;
    if (op_level_create(&soup, &o->s, NULL, 0, &lvl, &e) != OP_OK ||
        op_mesh_build_level(lvl, o->threads, out, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s: %s\n", o->level, e.msg);
        goto done;
    }
    rc = 0;
done:
    op_level_destroy(lvl);
    op_arena_destroy(a);
    return rc;
}

static int add_blob(const cli_mesh_opts *o, const char *path, op_mesh **m, op_arena *a)
{
    op_err e;
    op_tile t;
    uint8_t *data;
    size_t len;
    op_arena *tmp = op_arena_create(0);
    if (!tmp || cli_read_input(path, "tile", tmp, &data, &len)) {
        op_arena_destroy(tmp);
        return 1;
    }
    op_status st = op_tile_decode(data, len, a, &t, NULL, &e);
    op_arena_destroy(tmp);
    if (st == OP_OK && !*m) {
        op_settings s = o->s;
        s.tile_size = t.tile_size;
        s.max_verts_per_poly = t.nvp;
        st = op_mesh_create(&s, m, &e);
    }
    if (st == OP_OK)
        st = op_mesh_add_tile(*m, &t, &e);
    if (st != OP_OK) {
        fprintf(stderr, "onepath: %s: %s\n", path, e.msg);
        return 1;
    }
    return 0;
}

static int read_tiles(const cli_mesh_opts *o, op_mesh **out)
{
    DIR *d = opendir(o->tiles_dir);
    if (!d) {
        fprintf(stderr, "onepath: cannot open %s: %s\n", o->tiles_dir, strerror(errno));
        return 1;
    }
    op_arena *a = op_arena_create(0);
    op_mesh *m = NULL;
    int rc = a ? 0 : 1;
    struct dirent *de;
    while (!rc && (de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 7 || strcmp(de->d_name + n - 7, ".optile") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", o->tiles_dir, de->d_name);
        rc = add_blob(o, path, &m, a);
        op_arena_reset(a); /* the mesh copied the tile */
    }
    closedir(d);
    op_arena_destroy(a);
    op_err e;
    if (!rc && !m) {
        fprintf(stderr, "onepath: %s holds no .optile blobs\n", o->tiles_dir);
        rc = 1;
    }
    if (!rc && op_mesh_stitch(m, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s: %s\n", o->tiles_dir, e.msg);
        rc = 1;
    }
    if (rc)
        op_mesh_destroy(m);
    else
        *out = m;
    return rc;
}

int cli_mesh_load(const cli_mesh_opts *o, op_mesh **out)
{
    *out = NULL;
    if (o->tiles_dir)
        return read_tiles(o, out);
    if (!o->level) {
        fprintf(stderr, "onepath: no level given (LEVEL.obj, gen:KIND:SIZE:SEED or --tiles DIR)\n");
        return 1;
    }
    return build_level(o, out);
}
