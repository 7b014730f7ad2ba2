/*
 * onepath remote SUBCOMMAND --url URL ...: one protocol method from the shell.
 *   ping | level-list | level-info --level L | level-drop --level L
 *   tile-get --level L --tile TX,TZ [--out DIR] | bake --level L [--wait]
 *   changes --level L [--since V] [--wait MS] | stats
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_common.h"
#include "onepath/fleet.h"
#include "remote_common.h"

typedef struct rargs {
    remote_opts o;
    int tx, tz, has_tile;
    uint64_t since;
    int wait_ms, wait;
    int json; /* stats --json */
} rargs;

static int usage(void)
{
    fprintf(stderr,
            "usage: onepath remote ping|level-list --url URL\n"
            "       onepath remote stats --url URL [--json]\n"
            "       onepath remote level-info|level-drop --url URL --level L\n"
            "       onepath remote tile-get --url URL --level L --tile TX,TZ [--out DIR]\n"
            "       onepath remote bake --url URL --level L [--wait]\n"
            "       onepath remote changes --url URL --level L [--since V] [--wait MS]\n"
            "common: [--timeout MS] (default %d) [--token-file FILE] (default "
            "$ONEPATH_TOKEN_FILE)\n"
            "--url: URL, URL,URL,... or @FILE (one URL a line), repeatable: a fleet, each level\n"
            "       on the member rendezvous hashing of its name picks (protocol.md 11)\n",
            OP_CLI_TIMEOUT_MS);
    return 2;
}

static int r_ping(op_client *c, const rargs *a)
{
    op_client_ping_result p;
    op_err e;
    if (op_client_ping(c, a->o.timeout_ms, &p, &e) != OP_OK)
        return remote_fail("ping", &e);
    printf("onepathd %s, protocol %d, max_message %" PRIu64 ", max_levels %" PRIu64
           ", max_level_verts %" PRIu64 ", max_level_tris %" PRIu64 ", cache_bytes %" PRIu64 "\n",
           p.version, p.protocol, p.max_message, p.max_levels, p.max_level_verts, p.max_level_tris,
           p.cache_bytes);
    return 0;
}

static int r_list(op_client *c, const rargs *a)
{
    op_client_level_list l;
    op_err e;
    if (op_client_level_list_get(c, a->o.timeout_ms, &l, &e) != OP_OK)
        return remote_fail("level.list", &e);
    for (int i = 0; i < l.n; i++)
        printf("%s %" PRIu64 "\n", l.levels[i].level, l.levels[i].version);
    op_client_level_list_free(&l);
    return 0;
}

static int r_info(op_client *c, const rargs *a)
{
    op_client_level_info i;
    op_err e;
    if (op_client_level_info_get(c, a->o.level, a->o.timeout_ms, &i, &e) != OP_OK)
        return remote_fail(a->o.level, &e);
    printf("%s: version %" PRIu64 ", bounds (%g %g %g)..(%g %g %g), tiles %d..%d x %d..%d "
           "(%lld built of %lld), memory %" PRIu64 ", bake %s %lld/%lld\n",
           a->o.level, i.version, i.bounds[0], i.bounds[1], i.bounds[2], i.bounds[3], i.bounds[4],
           i.bounds[5], i.tiles[0], i.tiles[2], i.tiles[1], i.tiles[3], (long long)i.tiles_built,
           (long long)i.tiles_total, i.memory, i.bake_running ? "running" : "idle",
           (long long)i.bake_done, (long long)i.bake_total);
    return 0;
}

static int r_drop(op_client *c, const rargs *a)
{
    int dropped;
    op_err e;
    if (op_client_level_drop(c, a->o.level, a->o.timeout_ms, &dropped, &e) != OP_OK)
        return remote_fail(a->o.level, &e);
    printf("%s: %s\n", a->o.level, dropped ? "dropped" : "not there");
    return 0;
}

static int r_tile(op_client *c, const rargs *a)
{
    op_client_tile t;
    op_err e;
    if (!a->has_tile)
        return usage();
    if (op_client_tile_get(c, a->o.level, a->tx, a->tz, a->o.timeout_ms, &t, &e) != OP_OK)
        return remote_fail(a->o.level, &e);
    int rc = a->o.out_dir ? out_dir_make(a->o.out_dir) : 0;
    printf("tile (%d, %d) version %" PRIu64 ": %d layers\n", t.tx, t.tz, t.version, t.nlayers);
    for (int k = 0; k < t.nlayers && !rc; k++) {
        printf("  layer %d: %zu bytes, hash %016" PRIx64 "\n", t.layers[k].layer, t.layers[k].len,
               t.layers[k].hash);
        if (a->o.out_dir)
            rc = tile_file_write(a->o.out_dir, t.tx, t.tz, t.layers[k].layer, t.layers[k].blob,
                                 t.layers[k].len);
    }
    op_client_tile_free(&t);
    return rc;
}

static int r_bake(op_client *c, const rargs *a)
{
    int started;
    op_err e;
    if (op_client_level_bake(c, a->o.level, a->o.timeout_ms, &started, &e) != OP_OK)
        return remote_fail(a->o.level, &e);
    printf("%s: bake %s\n", a->o.level, started ? "started" : "already complete or running");
    for (;;) {
        op_client_level_info i;
        if (op_client_level_info_get(c, a->o.level, a->o.timeout_ms, &i, &e) != OP_OK)
            return remote_fail(a->o.level, &e);
        printf("%s: %lld/%lld tiles built\n", a->o.level, (long long)i.bake_done,
               (long long)i.bake_total);
        if (!a->wait || i.bake_done >= i.bake_total)
            return 0;
        struct timespec ts = {0, 200000000L};
        nanosleep(&ts, NULL);
    }
}

static int r_changes(op_client *c, const rargs *a)
{
    op_client_changes ch;
    op_err e;
    if (op_client_changes_since(c, a->o.level, a->since, a->wait_ms, a->o.timeout_ms + a->wait_ms,
                                &ch, &e) != OP_OK)
        return remote_fail(a->o.level, &e);
    printf("version %" PRIu64 ": %d tiles\n", ch.version, ch.ntiles);
    for (int i = 0; i < ch.ntiles; i++) {
        printf("  (%d, %d)", ch.tiles[i].tx, ch.tiles[i].tz);
        for (int k = 0; k < ch.tiles[i].nhashes; k++)
            printf(" %016" PRIx64, ch.tiles[i].hashes[k]);
        printf("%s\n", ch.tiles[i].nhashes ? "" : " (no layers)");
    }
    op_client_changes_free(&ch);
    return 0;
}

static int r_stats(op_client *c, const rargs *a)
{
    op_client_stats s;
    op_err e;
    if (op_client_stats_get(c, a->o.timeout_ms, &s, &e) != OP_OK)
        return remote_fail("stats", &e);
    if (a->json) {
        /* The stats result's shape (protocol §4), totals for the per-method maps. */
        printf("{\"uptime_ms\": %" PRIu64 ", \"levels\": %lld, \"memory\": %" PRIu64
               ", \"cache\": {\"hits\": %" PRIu64 ", \"misses\": %" PRIu64
               ", \"evictions\": %" PRIu64 ", \"bytes\": %" PRIu64 "}, \"builds\": %" PRIu64
               ", \"requests\": %" PRIu64 ", \"errors\": %" PRIu64
               ", \"latency_us\": {\"p50\": %" PRIu64 ", \"p90\": %" PRIu64 ", \"p99\": %" PRIu64
               ", \"max\": %" PRIu64 "}}\n",
               s.uptime_ms, (long long)s.levels, s.memory, s.cache_hits, s.cache_misses,
               s.cache_evictions, s.cache_bytes, s.builds, s.requests, s.errors, s.p50_us, s.p90_us,
               s.p99_us, s.max_us);
        return 0;
    }
    printf("uptime %" PRIu64 " ms, %lld levels, memory %" PRIu64 " bytes\n"
           "cache: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64 " evictions, %" PRIu64
           " bytes\ntile builds %" PRIu64 ", requests %" PRIu64 ", errors %" PRIu64 "\n"
           "latency us: p50 %" PRIu64 ", p90 %" PRIu64 ", p99 %" PRIu64 ", max %" PRIu64 "\n",
           s.uptime_ms, (long long)s.levels, s.memory, s.cache_hits, s.cache_misses,
           s.cache_evictions, s.cache_bytes, s.builds, s.requests, s.errors, s.p50_us, s.p90_us,
           s.p99_us, s.max_us);
    return 0;
}

typedef struct sub {
    const char *name;
    int (*fn)(op_client *, const rargs *);
    int needs_level;
} sub;

static const sub subs[] = {
    {"ping", r_ping, 0},       {"level-list", r_list, 0}, {"level-info", r_info, 1},
    {"level-drop", r_drop, 1}, {"tile-get", r_tile, 1},   {"bake", r_bake, 1},
    {"changes", r_changes, 1}, {"stats", r_stats, 0},
};

static int parse(int argc, char **argv, rargs *a)
{
    for (int i = 1; i < argc; i++) {
        int r = remote_opt(argc, argv, &i, &a->o);
        if (r < 0)
            return 2;
        if (r)
            continue;
        const char *s = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(s, "--tile") && more) {
            if (cli_parse_tile(argv[++i], &a->tx, &a->tz))
                return usage();
            a->has_tile = 1;
        } else if (!strcmp(s, "--since") && more) {
            a->since = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(s, "--wait") && more && argv[i + 1][0] != '-') {
            if (cli_parse_int("--wait", argv[++i], 0, 600000, &a->wait_ms))
                return 2;
        } else if (!strcmp(s, "--wait")) {
            a->wait = 1;
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else {
            return usage();
        }
    }
    return 0;
}

int op_cmd_remote(int argc, char **argv)
{
    rargs a = {0};
    remote_opts_init(&a.o);
    if (argc < 1)
        return usage();
    const sub *s = NULL;
    for (size_t i = 0; i < sizeof subs / sizeof subs[0] && !s; i++)
        if (!strcmp(argv[0], subs[i].name))
            s = &subs[i];
    if (!s || parse(argc, argv, &a))
        return usage();
    if (s->needs_level && !a.o.level) {
        fprintf(stderr, "onepath: remote %s needs --level L\n", s->name);
        return 2;
    }
    if (!s->needs_level && !a.o.level && a.o.url) {
        /* Every member in turn, each under a line naming it when there are several. */
        char **m;
        int n, rc = 0;
        if (remote_members(&a.o, &m, &n))
            return 1;
        for (int i = 0; i < n; i++) {
            if (n > 1 && !a.json)
                printf("== %s\n", m[i]);
            fflush(stdout);
            op_client *c = remote_open_url(&a.o, m[i]);
            if (!c) {
                rc = 1;
                continue;
            }
            if (s->fn(c, &a))
                rc = 1;
            op_client_close(c);
        }
        op_fleet_members_free(m, n);
        return rc;
    }
    op_client *c = remote_open(&a.o);
    if (!c)
        return 1;
    int rc = s->fn(c, &a);
    op_client_close(c);
    return rc;
}
