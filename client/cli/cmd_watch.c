/*
 * onepath watch --url URL --level L --out DIR [--wait MS] [--once]: keeps DIR equal to
 * the level's tiles. Long-polls changes.since; for each listed tile fetches its layers
 * (tile.get), writes them atomically and removes layer files that vanished. Starts
 * from version 0 (every tile with layers); when the daemon's version is older than
 * ours (the level was dropped and put again) it starts over.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "onepath/limits.h"
#include "cli_common.h"
#include "remote_common.h"

static int usage(void)
{
    fprintf(stderr, "usage: onepath watch --url URL --level L --out DIR [--wait MS] [--once]\n"
                    "                     [--timeout MS]\n");
    return 2;
}

/* Brings one listed tile in step. */
static int sync_tile(op_client *c, const remote_opts *o, const op_client_change *ch)
{
    /* A tile holds at most OP_MAX_LAYERS layers (the client refuses a reply with more). */
    int keep[OP_MAX_LAYERS], nkeep = 0;
    if (ch->nhashes > 0) {
        op_client_tile t;
        op_err e;
        op_status st = op_client_tile_get(c, o->level, ch->tx, ch->tz, o->timeout_ms, &t, &e);
        if (st == OP_ERANGE) /* gone since the list was made: the next poll reports it */
            return 0;
        if (st != OP_OK)
            return remote_fail(o->level, &e);
        for (int k = 0; k < t.nlayers && nkeep < OP_MAX_LAYERS; k++) {
            if (tile_file_write(o->out_dir, t.tx, t.tz, t.layers[k].layer, t.layers[k].blob,
                                t.layers[k].len)) {
                op_client_tile_free(&t);
                return 1;
            }
            keep[nkeep++] = t.layers[k].layer;
        }
        op_client_tile_free(&t);
    }
    return tile_files_prune(o->out_dir, ch->tx, ch->tz, keep, nkeep);
}

static void remove_all_tiles(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (!strncmp(de->d_name, "tile_", 5) && n > 7 && !strcmp(de->d_name + n - 7, ".optile")) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            unlink(path);
        }
    }
    if (d)
        closedir(d);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int op_cmd_watch(int argc, char **argv)
{
    remote_opts o;
    remote_opts_init(&o);
    int wait_ms = 30000, once = 0;
    for (int i = 0; i < argc; i++) {
        int r = remote_opt(argc, argv, &i, &o);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (!strcmp(argv[i], "--once"))
            once = 1;
        else if (!strcmp(argv[i], "--wait") && i + 1 < argc) {
            if (cli_parse_int("--wait", argv[++i], 0, 600000, &wait_ms))
                return 2;
        } else
            return usage();
    }
    if (!o.url || !o.level || !o.out_dir)
        return usage();
    op_client *c = remote_open(&o);
    if (!c || out_dir_make(o.out_dir)) {
        op_client_close(c);
        return 1;
    }
    uint64_t version = 0;
    int rc = 0;
    for (;;) {
        op_client_changes ch;
        op_err e;
        op_status st = op_client_changes_since(c, o.level, version, once ? 0 : wait_ms,
                                               o.timeout_ms + wait_ms, &ch, &e);
        if (st == OP_ERANGE) { /* our version is from an earlier life of the level */
            remove_all_tiles(o.out_dir);
            version = 0;
            continue;
        }
        if (st == OP_ENOTFOUND || st == OP_ETIMEDOUT || st == OP_EBUSY) {
            if (once) {
                rc = remote_fail(o.level, &e);
                break;
            }
            sleep_ms(500); /* the level may come (back), the daemon may restart */
            continue;
        }
        if (st != OP_OK) {
            rc = remote_fail(o.level, &e);
            break;
        }
        for (int i = 0; i < ch.ntiles && rc == 0; i++)
            rc = sync_tile(c, &o, &ch.tiles[i]);
        if (ch.ntiles)
            printf("%s: version %llu, %d tiles updated\n", o.level, (unsigned long long)ch.version,
                   ch.ntiles);
        fflush(stdout);
        version = ch.version;
        op_client_changes_free(&ch);
        if (rc || once)
            break;
    }
    op_client_close(c);
    return rc;
}
