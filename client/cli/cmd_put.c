/*
 * onepath put LEVEL.obj --url URL --level NAME [--set key=value ...] [--mesh NAME]:
 * uploads a level as one mesh (named after the file unless --mesh) with level.put, so
 * the daemon's tiles equal `onepath bake LEVEL.obj --set ...`.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "remote_common.h"

#define MAX_SETS 64

static int usage(void)
{
    fprintf(stderr, "usage: onepath put LEVEL.obj|gen:KIND:SIZE:SEED --url URL --level NAME\n"
                    "                   [--set key=value ...] [--mesh NAME] [--timeout MS]\n");
    return 2;
}

int op_cmd_put(int argc, char **argv)
{
    remote_opts o;
    remote_opts_init(&o);
    op_client_setting sets[MAX_SETS];
    char keys[MAX_SETS][64];
    int nsets = 0;
    const char *file = NULL, *mesh = NULL;
    for (int i = 0; i < argc; i++) {
        int r = remote_opt(argc, argv, &i, &o);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < MAX_SETS) {
            const char *kv = argv[++i], *eq = strchr(kv, '=');
            if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof keys[0]) {
                fprintf(stderr, "onepath: --set wants key=value, got '%s'\n", kv);
                return 2;
            }
            memcpy(keys[nsets], kv, (size_t)(eq - kv));
            keys[nsets][eq - kv] = '\0';
            sets[nsets] = (op_client_setting){keys[nsets], eq + 1};
            nsets++;
        } else if (!strcmp(argv[i], "--mesh") && i + 1 < argc) {
            mesh = argv[++i];
        } else if (argv[i][0] != '-' && !file) {
            file = argv[i];
        } else {
            return usage();
        }
    }
    if (!file || !o.level || !o.url)
        return usage();
    op_arena *a = op_arena_create(0);
    op_soup soup;
    int rc = 1;
    op_client *c = NULL;
    if (!a || cli_load_level(file, a, &soup) || !(c = remote_open(&o)))
        goto done;
    op_client_mesh m = remote_mesh(file, mesh, &soup);
    uint64_t version;
    int changed;
    op_err e;
    if (op_client_level_put(c, o.level, sets, nsets, &m, 1, o.timeout_ms, &version, &changed, &e) !=
        OP_OK) {
        rc = remote_fail(o.level, &e);
        goto done;
    }
    printf("%s: version %llu (%s), mesh %s: %zu vertices, %zu triangles\n", o.level,
           (unsigned long long)version, changed ? "changed" : "unchanged", m.name, m.nverts,
           m.ntris);
    rc = 0;
done:
    op_client_close(c);
    op_arena_destroy(a);
    return rc;
}
