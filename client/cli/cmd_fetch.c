/*
 * onepath fetch --url URL --level L --out DIR: every tile layer of a level, written as
 * DIR/tile_<tx>_<tz>_<layer>.optile (the names of `onepath bake --out`), fetched with
 * tile.range pages. Prints the same summary hash as `onepath bake`.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "onepath/hash.h"
#include "remote_common.h"

static int usage(void)
{
    fprintf(stderr, "usage: onepath fetch --url URL --level L --out DIR [--timeout MS]\n");
    return 2;
}

int op_cmd_fetch(int argc, char **argv)
{
    remote_opts o;
    remote_opts_init(&o);
    for (int i = 0; i < argc; i++) {
        int r = remote_opt(argc, argv, &i, &o);
        if (r < 0)
            return 2;
        if (!r)
            return usage();
    }
    if (!o.url || !o.level || !o.out_dir)
        return usage();
    op_client *c = remote_open(&o);
    if (!c || out_dir_make(o.out_dir)) {
        op_client_close(c);
        return 1;
    }
    op_err e;
    op_client_level_info li;
    int rc = 1;
    if (op_client_level_info_get(c, o.level, o.timeout_ms, &li, &e) != OP_OK) {
        rc = remote_fail(o.level, &e);
        goto done;
    }
    long tiles = 0, layers = 0;
    size_t bytes = 0;
    uint64_t h = OP_HASH_INIT;
    int after[2], *ap = NULL, more = li.tiles[0] <= li.tiles[2];
    while (more) {
        op_client_tile_range rg;
        if (op_client_tile_range_get(c, o.level, li.tiles, ap, 0, o.timeout_ms, &rg, &e) != OP_OK) {
            rc = remote_fail(o.level, &e);
            goto done;
        }
        for (int i = 0; i < rg.ntiles; i++) {
            const op_client_tile *t = &rg.tiles[i];
            tiles += t->nlayers > 0;
            for (int k = 0; k < t->nlayers; k++) {
                const op_client_layer *y = &t->layers[k];
                if (tile_file_write(o.out_dir, t->tx, t->tz, y->layer, y->blob, y->len)) {
                    op_client_tile_range_free(&rg);
                    goto done;
                }
                layers++;
                bytes += y->len;
                h = hash_fold(h, y->hash);
            }
        }
        more = rg.has_next;
        after[0] = rg.next[0];
        after[1] = rg.next[1];
        ap = after;
        op_client_tile_range_free(&rg);
    }
    printf("fetched %s version %llu: %ld tiles, %ld layers, %zu bytes, hash %016llx\n", o.level,
           (unsigned long long)li.version, tiles, layers, bytes, (unsigned long long)h);
    rc = 0;
done:
    op_client_close(c);
    return rc;
}
