/*
 * onepathd-probe: one fixed piece of RPC work, for counting instructions (valgrind
 * callgrind) on either side rather than timing it on a shared machine:
 *
 *   onepathd-probe inproc LEVEL.obj [N]     N times: op_level_create + build + encode of
 *                                           every tile of the level's range (one thread),
 *                                           as onepathd-bench's in-process whole level
 *   onepathd-probe range URL LEVEL.obj [N]  N times: level.drop + level.put of the level as
 *                                           "bench", then waiting tile.range pages until
 *                                           every tile is back
 *   onepathd-probe get URL LEVEL.obj [N]    level.put once, then N passes of tile.get of
 *                                           every tile with layers (run the daemon with
 *                                           --cache-bytes 0: every get builds)
 *   onepathd-probe tiles LEVEL.obj [N]      N passes of build + encode of every tile with
 *                                           layers in this process (the get pass's match)
 *
 * Run the daemon under callgrind (`valgrind --tool=callgrind onepathd ...`), the probe
 * beside it, then stop the daemon: the daemon's instructions for the work, its start and
 * stop counted apart (compare with N = 1 and N = 3).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onepath/build.h"
#include "onepath/client.h"
#include "onepath/obj.h"
#include "onepath/tile_codec.h"

#define TIMEOUT_MS 60000

static void die(const char *what, const op_err *e)
{
    fprintf(stderr, "%s: %s\n", what, e->msg);
    exit(1);
}

static int build_encode(op_level *lvl, int tx, int tz, op_arena *out, op_arena *scratch)
{
    op_arena_reset(out);
    op_arena_reset(scratch);
    op_tile_stages st;
    op_err e;
    if (op_level_build_stages(lvl, tx, tz, OP_STAGE_TILE, 0, out, scratch, &st, &e) != OP_OK)
        die("build", &e);
    for (int k = 0; k < st.ntiles; k++) {
        op_bytes b;
        uint64_t h;
        if (op_tile_encode(&st.tiles[k], &b, &h, &e) != OP_OK)
            die("encode", &e);
        op_bytes_free(&b);
    }
    return st.ntiles;
}

__attribute__((noinline)) static void inproc(const op_soup *soup, int n)
{
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_settings s;
    op_settings_default(&s);
    for (int r = 0; r < n; r++) {
        op_level *lvl;
        op_err e;
        if (op_level_create(soup, &s, NULL, 0, &lvl, &e) != OP_OK)
            die("level", &e);
        op_tile_range rc = op_level_tiles(lvl);
        for (int tz = rc.tz0; tz <= rc.tz1; tz++)
            for (int tx = rc.tx0; tx <= rc.tx1; tx++)
                build_encode(lvl, tx, tz, out, scratch);
        op_level_destroy(lvl);
    }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
}

static void put_level(op_client *c, const op_soup *soup)
{
    op_client_mesh m = {"level",    soup->verts,        soup->verts_len / 3,
                        soup->tris, soup->tris_len / 3, soup->areas};
    uint64_t v;
    int changed;
    op_err e;
    if (op_client_level_put(c, "bench", NULL, 0, &m, 1, TIMEOUT_MS, &v, &changed, &e) != OP_OK)
        die("level.put", &e);
}

__attribute__((noinline)) static void range(op_client *c, const op_soup *soup, op_tile_range r,
                                            int n)
{
    for (int k = 0; k < n; k++) {
        int dropped;
        op_err e;
        if (op_client_level_drop(c, "bench", TIMEOUT_MS, &dropped, &e) != OP_OK)
            die("level.drop", &e);
        put_level(c, soup);
        int rect[4] = {r.tx0, r.tz0, r.tx1, r.tz1}, after[2], has_after = 0, tiles = 0, calls = 0;
        do {
            op_client_tile_range tr;
            if (op_client_tile_range_wait(c, "bench", rect, has_after ? after : NULL, 0,
                                          op_client_range_wait_for(TIMEOUT_MS), TIMEOUT_MS, &tr,
                                          &e) != OP_OK)
                die("tile.range", &e);
            tiles += tr.ntiles;
            calls++;
            has_after = tr.has_next;
            after[0] = tr.next[0];
            after[1] = tr.next[1];
            op_client_tile_range_free(&tr);
        } while (has_after);
        printf("pass %d: %d tiles in %d calls\n", k, tiles, calls);
    }
}

/* The tiles with layers, row-major: *tx, *tz malloc'd. */
static int layered(op_level *lvl, int **tx, int **tz)
{
    op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_tile_range r = op_level_tiles(lvl);
    int cap = op_level_tile_count(lvl), n = 0;
    *tx = malloc((size_t)cap * sizeof **tx);
    *tz = malloc((size_t)cap * sizeof **tz);
    for (int z = r.tz0; z <= r.tz1; z++)
        for (int x = r.tx0; x <= r.tx1; x++)
            if (build_encode(lvl, x, z, out, scratch) > 0) {
                (*tx)[n] = x;
                (*tz)[n++] = z;
            }
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return n;
}

int main(int argc, char **argv)
{
    int remote = argc > 1 && (!strcmp(argv[1], "range") || !strcmp(argv[1], "get"));
    int local = argc > 1 && (!strcmp(argv[1], "inproc") || !strcmp(argv[1], "tiles"));
    if ((!remote && !local) || argc < (remote ? 4 : 3)) {
        fprintf(stderr, "usage: onepathd-probe inproc|tiles LEVEL.obj [N]\n"
                        "       onepathd-probe range|get URL LEVEL.obj [N]\n");
        return 2;
    }
    const char *file = argv[remote ? 3 : 2];
    int n = argc > (remote ? 4 : 3) ? atoi(argv[remote ? 4 : 3]) : 1;
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    if (op_obj_read_file(file, a, &soup, &e) != OP_OK)
        die(file, &e);
    if (!strcmp(argv[1], "inproc")) {
        inproc(&soup, n);
        op_arena_destroy(a);
        return 0;
    }
    op_settings s;
    op_settings_default(&s);
    op_level *lvl;
    if (op_level_create(&soup, &s, NULL, 0, &lvl, &e) != OP_OK)
        die("level", &e);
    int *tx = NULL, *tz = NULL, nt = strcmp(argv[1], "range") ? layered(lvl, &tx, &tz) : 0;
    if (!strcmp(argv[1], "tiles")) {
        op_arena *out = op_arena_create(0), *scratch = op_arena_create(0);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < nt; i++)
                build_encode(lvl, tx[i], tz[i], out, scratch);
        op_arena_destroy(out);
        op_arena_destroy(scratch);
    } else {
        op_client *c;
        if (op_client_open(argv[2], &c, &e) != OP_OK)
            die(argv[2], &e);
        op_client_ping_result p;
        if (op_client_ping(c, TIMEOUT_MS, &p, &e) != OP_OK)
            die("ping", &e);
        if (!strcmp(argv[1], "range")) {
            range(c, &soup, op_level_tiles(lvl), n);
        } else {
            put_level(c, &soup);
            /* Wait for the put's own builds (the daemon's background bake) to end. */
            for (;;) {
                op_client_level_info li;
                if (op_client_level_info_get(c, "bench", TIMEOUT_MS, &li, &e) != OP_OK)
                    die("level.info", &e);
                if (!li.bake_running && li.tiles_built == li.tiles_total)
                    break;
                nanosleep(&(struct timespec){0, 20000000}, NULL);
            }
            for (int k = 0; k < n; k++)
                for (int i = 0; i < nt; i++) {
                    op_client_tile t;
                    if (op_client_tile_get(c, "bench", tx[i], tz[i], TIMEOUT_MS, &t, &e) != OP_OK)
                        die("tile.get", &e);
                    op_client_tile_free(&t);
                }
            printf("%d passes of %d tile.get\n", n, nt);
        }
        op_client_close(c);
    }
    free(tx);
    free(tz);
    op_level_destroy(lvl);
    op_arena_destroy(a);
    return 0;
}
