/*
 * onepath volume put|drop|list --url URL --level L ...: a level's volumes on onepathd
 * (protocol §3.5: volume.put, volume.drop and the `volumes` of level.info).
 *   put FILE.json  reads a volumes file (docs/spec/input-formats.md §6; the whole file is
 *                  checked before anything is sent) and puts each of its volumes, in name
 *                  order: one volume.put each (add or replace, idempotent);
 *   drop NAME      removes one volume (idempotent: "unchanged" when there was none);
 *   list           prints the level's volumes as a volumes file (a JSON array, one object
 *                  a line, numbers with 17 significant digits), which `put` reads back.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "onepath/arena.h"
#include "remote_common.h"

static int usage(void)
{
    fprintf(stderr, "usage: onepath volume put --url URL --level L FILE.json [--timeout MS]\n"
                    "       onepath volume drop --url URL --level L NAME [--timeout MS]\n"
                    "       onepath volume list --url URL --level L [--timeout MS]\n"
                    "put sends every volume of a volumes file (the JSON array bake reads);\n"
                    "list prints the level's volumes in that format.\n");
    return 2;
}

static void print_numbers(const char *key, const double *v, int n)
{
    printf(", \"%s\": [", key);
    for (int i = 0; i < n; i++)
        printf("%s%.17g", i ? ", " : "", v[i]);
    printf("]");
}

/* One object of the volumes file, keys in the file's order (name, mode, area, kind, shape). */
static void print_volume(const op_client_volume *v, int last)
{
    static const char *const kinds[3] = {"box", "cylinder", "prism"};
    printf("  {\"name\": \"%s\", \"mode\": \"%s\", \"area\": %d, \"kind\": \"%s\"", v->name,
           v->mode == OP_CLIENT_VOLUME_OBSTACLE ? "obstacle" : "area", v->area < 0 ? 0 : v->area,
           kinds[v->kind]);
    if (v->kind == OP_CLIENT_VOLUME_BOX) {
        print_numbers("bmin", v->bmin, 3);
        print_numbers("bmax", v->bmax, 3);
    } else if (v->kind == OP_CLIENT_VOLUME_CYLINDER) {
        print_numbers("center", v->center, 2);
        printf(", \"radius\": %.17g", v->radius);
        print_numbers("y", v->y, 2);
    } else {
        printf(", \"points\": [");
        for (int i = 0; i < v->npoints; i++)
            printf("%s[%.17g, %.17g]", i ? ", " : "", v->points[i][0], v->points[i][1]);
        printf("]");
        print_numbers("y", v->y, 2);
    }
    printf("}%s\n", last ? "" : ",");
}

static int v_list(op_client *c, const remote_opts *o)
{
    op_client_volumes vs;
    op_err e;
    if (op_client_volumes_get(c, o->level, o->timeout_ms, &vs, &e) != OP_OK)
        return remote_fail(o->level, &e);
    printf("[\n");
    for (int i = 0; i < vs.n; i++)
        print_volume(&vs.v[i], i == vs.n - 1);
    printf("]\n");
    op_client_volumes_free(&vs);
    return 0;
}

static int v_drop(op_client *c, const remote_opts *o, const char *name)
{
    uint64_t version;
    int changed;
    op_err e;
    if (op_client_volume_drop(c, o->level, name, o->timeout_ms, &version, &changed, &e) != OP_OK)
        return remote_fail(name, &e);
    printf("%s: version %" PRIu64 " (%s), volume %s dropped\n", o->level, version,
           changed ? "changed" : "unchanged", name);
    return 0;
}

/* The core's volume as the client sends it (an obstacle's area 0 is sent: the same). */
static op_client_volume to_client(const op_volume *v)
{
    op_client_volume c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%.64s", v->name);
    c.mode = v->mode == OP_VOLUME_OBSTACLE ? OP_CLIENT_VOLUME_OBSTACLE : OP_CLIENT_VOLUME_AREA;
    c.area = v->area;
    c.kind = (op_client_volume_kind)v->kind;
    memcpy(c.bmin, v->bmin, sizeof c.bmin);
    memcpy(c.bmax, v->bmax, sizeof c.bmax);
    c.center[0] = v->bmin[0];
    c.center[1] = v->bmin[2];
    c.radius = v->bmax[0];
    c.y[0] = v->bmin[1];
    c.y[1] = v->bmax[1];
    c.npoints = v->kind == OP_VOLUME_PRISM ? v->npts : 0;
    for (int i = 0; i < c.npoints; i++) {
        c.points[i][0] = v->pts[2 * i];
        c.points[i][1] = v->pts[2 * i + 1];
    }
    return c;
}

/* Sends the volumes read from path (v_read), one volume.put each. */
static int v_put(op_client *c, const remote_opts *o, const char *path, const op_volume *vols, int n)
{
    int rc = 0;
    int changed_n = 0;
    uint64_t version = 0;
    for (int i = 0; i < n && !rc; i++) {
        op_client_volume cv = to_client(&vols[i]);
        int changed;
        op_err e;
        if (op_client_volume_put(c, o->level, &cv, o->timeout_ms, &version, &changed, &e) != OP_OK)
            rc = remote_fail(vols[i].name, &e);
        else
            printf("%s: version %" PRIu64 " (%s), volume %s put\n", o->level, version,
                   changed ? "changed" : "unchanged", vols[i].name);
        changed_n += !rc && changed;
    }
    if (!rc)
        printf("%s: %d volumes put from %s, %d changed the level\n", o->level, n, path, changed_n);
    return rc;
}

/* Reads and checks a volumes file into a (created here; NULL on failure, named on stderr). */
static op_arena *v_read(const char *path, op_volume **vols, int *n)
{
    op_arena *a = op_arena_create(0);
    if (!a) {
        fprintf(stderr, "onepath: out of memory\n");
        return NULL;
    }
    if (cli_read_volumes(path, a, vols, n)) {
        op_arena_destroy(a);
        return NULL;
    }
    return a;
}

int op_cmd_volume(int argc, char **argv)
{
    if (argc < 1 || (strcmp(argv[0], "drop") && strcmp(argv[0], "list") && strcmp(argv[0], "put")))
        return usage();
    remote_opts o;
    remote_opts_init(&o);
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        int r = remote_opt(argc, argv, &i, &o);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (argv[i][0] != '-' && !name && strcmp(argv[0], "list"))
            name = argv[i];
        else
            return usage();
    }
    if (!o.level || (strcmp(argv[0], "list") && !name))
        return usage();
    /* The file is read before dialing: a connection dropped during nng's handshake can
     * leave an nng 1.5.2 listener deaf to every later connection (docs/spec/protocol.md
     * §1.7), so a bad file must not open one. */
    op_volume *vols = NULL;
    int nvols = 0;
    op_arena *a = NULL;
    if (!strcmp(argv[0], "put") && !(a = v_read(name, &vols, &nvols)))
        return 1;
    op_client *c = remote_open(&o);
    if (!c) {
        op_arena_destroy(a);
        return 1;
    }
    int rc = !strcmp(argv[0], "list")   ? v_list(c, &o)
             : !strcmp(argv[0], "drop") ? v_drop(c, &o, name)
                                        : v_put(c, &o, name, vols, nvols);
    op_client_close(c);
    op_arena_destroy(a);
    return rc;
}
