/*
 * onepath fetch --url URL --level L --out DIR: every tile layer of a level, written as
 * DIR/tile_<tx>_<tz>_<layer>.optile (the names of `onepath bake --out`), fetched with
 * tile.range pages (waiting pages, protocol §4 rule 2a: half the timeout, at most 10 s,
 * so a level not built yet comes in a few calls). Prints the same summary hash as
 * `onepath bake`.
 * --format detour: every tile cell in Detour form (protocol §4.2b), written as
 * DIR/tile_<tx>_<tz>.dtile with DIR/navmesh.params: the files of `onepath export
 * --detour-tiles`, byte for byte.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "onepath/detour.h"
#include "onepath/hash.h"
#include "remote_common.h"

static int usage(void)
{
    fprintf(stderr, "usage: onepath fetch --url URL --level L --out DIR [--format native|detour]"
                    " [--timeout MS]\n");
    return 2;
}

/* The Detour tiles of the level, then navmesh.params as the offline export derives them
 * (detour-export.md §2.3): the grid origin, the tile size, the cells and the largest
 * polygon count. */
static int fetch_detour(op_client *c, const remote_opts *o, const op_client_level_info *li)
{
    op_err e;
    int ntiles = 0, max_polys = 0;
    size_t bytes = 0;
    int after[2], *ap = NULL, more = li->tiles[0] <= li->tiles[2];
    while (more) {
        op_client_detour_range rg;
        if (op_client_tile_range_wait_detour(c, o->level, li->tiles, ap, 0,
                                             op_client_range_wait_for(o->timeout_ms), o->timeout_ms,
                                             &rg, &e) != OP_OK)
            return remote_fail(o->level, &e);
        for (int i = 0; i < rg.ntiles; i++) {
            const op_client_detour_tile *t = &rg.tiles[i];
            if (!t->data)
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/tile_%d_%d.dtile", o->out_dir, t->tx, t->tz);
            if (t->len < OP_DETOUR_HEADER_SIZE) {
                fprintf(stderr, "onepath: tile (%d, %d): %zu Detour bytes, not a tile\n", t->tx,
                        t->tz, t->len);
                op_client_detour_range_free(&rg);
                return 1;
            }
            if (file_write(path, t->data, t->len)) {
                op_client_detour_range_free(&rg);
                return 1;
            }
            /* polyCount: int32 LE at 24 (detour-export.md §3.2) */
            const uint8_t *d = t->data + 24;
            int np = (int)((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
                           (uint32_t)d[3] << 24);
            max_polys = np > max_polys ? np : max_polys;
            ntiles++;
            bytes += t->len;
        }
        more = rg.has_next;
        after[0] = rg.next[0];
        after[1] = rg.next[1];
        ap = after;
        op_client_detour_range_free(&rg);
    }
    if (ntiles == 0) {
        fprintf(stderr, "onepath: level '%s' has no tiles to write in Detour form\n", o->level);
        return 1;
    }
    op_detour_params p;
    if (op_detour_params_make(li->grid_origin[0], li->grid_origin[1], li->tile_size, ntiles,
                              max_polys, &p, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s\n", e.msg);
        return 1;
    }
    uint8_t params[OP_DETOUR_PARAMS_SIZE];
    op_detour_params_write(&p, params);
    char path[4096];
    snprintf(path, sizeof path, "%s/navmesh.params", o->out_dir);
    if (file_write(path, params, sizeof params))
        return 1;
    printf("fetched %s version %llu in Detour form: %d tiles, %zu bytes, room for %d polygons a "
           "tile (%d tile + %d polygon bits)\n",
           o->level, (unsigned long long)li->version, ntiles, bytes, p.max_polys, p.tile_bits,
           p.poly_bits);
    return 0;
}

int op_cmd_fetch(int argc, char **argv)
{
    remote_opts o;
    remote_opts_init(&o);
    int detour = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            const char *f = argv[++i];
            if (!strcmp(f, "detour"))
                detour = 1;
            else if (strcmp(f, "native")) {
                fprintf(stderr, "onepath: --format %s: not native or detour\n", f);
                return 2;
            }
            continue;
        }
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
    if (detour) {
        rc = fetch_detour(c, &o, &li);
        goto done;
    }
    long tiles = 0, layers = 0;
    size_t bytes = 0;
    uint64_t h = OP_HASH_INIT;
    int after[2], *ap = NULL, more = li.tiles[0] <= li.tiles[2];
    while (more) {
        op_client_tile_range rg;
        if (op_client_tile_range_wait(c, o.level, li.tiles, ap, 0,
                                      op_client_range_wait_for(o.timeout_ms), o.timeout_ms, &rg,
                                      &e) != OP_OK) {
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
