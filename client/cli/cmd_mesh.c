/*
 * onepath mesh put|drop --url URL --level L ...: one mesh of a level on onepathd, the rest
 * of the level left as it is (protocol §3: mesh.put, mesh.drop; `put` replaces the whole
 * level).
 *   put LEVEL.obj|gen:KIND:SIZE:SEED [--name NAME]  adds the mesh NAME (default: the file's
 *                  base name, as `onepath put` names it) or replaces the mesh of that name;
 *   drop NAME      removes one mesh (idempotent: "unchanged" when there was none).
 * The level's tiles then equal `onepath bake` of its meshes concatenated in name order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "remote_common.h"

static int usage(void)
{
    fprintf(stderr, "usage: onepath mesh put --url URL --level L LEVEL.obj|gen:KIND:SIZE:SEED\n"
                    "                        [--name NAME] [--timeout MS]\n"
                    "       onepath mesh drop --url URL --level L NAME [--timeout MS]\n"
                    "put adds one mesh to an existing level, or replaces the mesh of its name (by\n"
                    "default the file's base name, as `onepath put` names it); drop removes one.\n"
                    "The level's other meshes, settings and volumes stay as they are.\n"
                    "--url: URL, URL,URL,... or @FILE, default $ONEPATH_URL (a fleet: the member\n"
                    "       rendezvous hashing of the level's name picks)\n");
    return 2;
}

static int m_put(remote_opts *o, const char *file, const char *name)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_client *c = NULL;
    int rc = 1;
    if (!a) {
        fprintf(stderr, "onepath: out of memory\n");
        return 1;
    }
    /* The file is read (and refused, naming it) before anything is dialed or sent. */
    if (cli_load_level(file, a, &soup) || !(c = remote_open(o)))
        goto done;
    op_client_mesh m = remote_mesh(file, name, &soup);
    uint64_t version;
    int changed;
    op_err e;
    if (op_client_mesh_put(c, o->level, &m, o->timeout_ms, &version, &changed, &e) != OP_OK) {
        rc = remote_fail(o->level, &e);
        goto done;
    }
    printf("%s: version %" PRIu64 " (%s), mesh %s put: %zu vertices, %zu triangles\n", o->level,
           version, changed ? "changed" : "unchanged", m.name, m.nverts, m.ntris);
    rc = 0;
done:
    op_client_close(c);
    op_arena_destroy(a);
    return rc;
}

static int m_drop(remote_opts *o, const char *name)
{
    op_client *c = remote_open(o);
    if (!c)
        return 1;
    uint64_t version;
    int changed;
    op_err e;
    int rc = 0;
    if (op_client_mesh_drop(c, o->level, name, o->timeout_ms, &version, &changed, &e) != OP_OK)
        rc = remote_fail(o->level, &e);
    else if (changed)
        printf("%s: version %" PRIu64 " (changed), mesh %s dropped\n", o->level, version, name);
    else
        printf("%s: version %" PRIu64 " (unchanged), the level has no mesh %s\n", o->level, version,
               name);
    op_client_close(c);
    return rc;
}

int op_cmd_mesh(int argc, char **argv)
{
    if (argc < 1 || (strcmp(argv[0], "put") && strcmp(argv[0], "drop")))
        return usage();
    int put = !strcmp(argv[0], "put");
    remote_opts o;
    remote_opts_init(&o);
    const char *arg = NULL, *name = NULL;
    for (int i = 1; i < argc; i++) {
        int r = remote_opt(argc, argv, &i, &o);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (put && !strcmp(argv[i], "--name") && i + 1 < argc)
            name = argv[++i];
        else if (argv[i][0] != '-' && !arg)
            arg = argv[i];
        else
            return usage();
    }
    if (!o.level || !arg || (name && !*name))
        return usage();
    return put ? m_put(&o, arg, name) : m_drop(&o, arg);
}
