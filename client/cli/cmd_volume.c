/*
 * onepath volume drop|list --url URL --level L ...: a level's volumes on onepathd
 * (protocol §3.5, volume.drop and the `volumes` of level.info).
 *   drop NAME   removes one volume (idempotent: "unchanged" when there was none);
 *   list        prints the level's volumes as a volumes file (docs/spec/input-formats.md
 *               §6: a JSON array, one object a line, numbers with 17 significant digits).
 * `volume put FILE.json` joins them once the core's volumes-file reader is on main.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "remote_common.h"

static int usage(void)
{
    fprintf(stderr, "usage: onepath volume drop --url URL --level L NAME [--timeout MS]\n"
                    "       onepath volume list --url URL --level L [--timeout MS]\n");
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

int op_cmd_volume(int argc, char **argv)
{
    if (argc < 1 || (strcmp(argv[0], "drop") && strcmp(argv[0], "list")))
        return usage();
    remote_opts o = {.timeout_ms = OP_CLI_TIMEOUT_MS};
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        int r = remote_opt(argc, argv, &i, &o);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (argv[i][0] != '-' && !name && !strcmp(argv[0], "drop"))
            name = argv[i];
        else
            return usage();
    }
    if (!o.level || (!strcmp(argv[0], "drop") && !name))
        return usage();
    op_client *c = remote_open(&o);
    if (!c)
        return 1;
    int rc = !strcmp(argv[0], "list") ? v_list(c, &o) : v_drop(c, &o, name);
    op_client_close(c);
    return rc;
}
