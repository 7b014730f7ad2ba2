/*
 * onepathd-volume-bench: what a volume edit costs over ipc, from volume.put to the tile
 * being current, beside the same rebuild in process (docs/benchmarks.md, "onepathd volume
 * edits"). Starts its own onepathd (next to this binary) on an ipc:// socket with a real
 * data directory (fsync on unless --no-fsync), uploads the level as one mesh, waits for its
 * bake (which captures every tile's rebuild base), then at each edit site (the walkable
 * floor nearest a tile's centre, spread over the level, as onepath-rebuild-bench picks them):
 *   ipc         volume.put of an obstacle cylinder (radius 1 m, from 0.5 m under the floor to
 *               1.5 m above it) acknowledged (journaled, fsynced, tiles marked), then
 *               changes.since until it lists the edit's tiles (their rebuild from the base);
 *               then volume.drop of it, the same;
 *   in process  op_level_rebuild_tile of every tile of op_level_volume_tiles from its entry
 *               with {obstacle} (and {} for the drop), each layer encoded: the same work
 *               without the daemon, the transport or the disk.
 * The two sides alternate per site (A B, then B A). Reported: p50 / p99 / max over the
 * sites, the daemon's own time per volume.put (its request log), the tiles it rebuilt and
 * how many of those came from their base (stats rebuild_cache).
 *
 *   onepathd-volume-bench [--level PATH | --gen KIND:SIZE[:SEED]] [--edits N]
 *                         [--set key=value]... [--radius R] [--no-fsync]
 */
#include <msgpack.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "onepath/client.h"
#include "onepath/rebuild.h"
#include "onepath/rpc.h"
#include "onepath/tile_codec.h"
#include "spawn.h"

#define TIMEOUT_MS 600000

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "onepathd-volume-bench: %s: %s\n", what, msg);
    exit(1);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-quantile (nearest rank) of v[0..n), sorted in place. */
static double pct(double *v, int n, double p)
{
    if (n == 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

typedef struct site {
    int tx, tz;
    double x, y, z;
} site;

typedef struct inproc {
    op_level *lvl;
    op_tile_rect r;
    op_rebuild_entry **ent; /* per tile, captured on first use */
    op_arena *out, *scratch;
} inproc;

static int tile_index(const inproc *p, int tx, int tz)
{
    return (tz - p->r.tz0) * (p->r.tx1 - p->r.tx0 + 1) + (tx - p->r.tx0);
}

/* Up to want sites: tiles whose centre has a walkable floor within a quarter tile. */
static int pick_sites(inproc *p, site *out, int want)
{
    int w = p->r.tx1 - p->r.tx0 + 1, n = w * (p->r.tz1 - p->r.tz0 + 1), nall = 0;
    site *all = malloc((size_t)n * sizeof *all);
    for (int i = 0; i < n; i++) {
        int tx = p->r.tx0 + i % w, tz = p->r.tz0 + i / w;
        op_arena_reset(p->out);
        op_arena_reset(p->scratch);
        op_tile_stages st;
        op_err e;
        if (op_level_build_stages(p->lvl, tx, tz, OP_STAGE_SPANS, 0, p->out, p->scratch, &st, &e) !=
                OP_OK ||
            st.skipped)
            continue;
        const op_chf *c = &st.chf;
        int best = -1, bx = 0, bz = 0, q = (c->width - 2 * c->border) / 4;
        uint32_t bk = 0;
        for (int dz = -q; dz <= q; dz++)
            for (int dx = -q; dx <= q; dx++) {
                int cx = c->width / 2 + dx, cz = c->depth / 2 + dz, cell = cx + cz * c->width;
                for (uint32_t k = c->cells[cell]; k < c->cells[cell + 1]; k++)
                    if (c->areas[k] && (best < 0 || dx * dx + dz * dz < best)) {
                        best = dx * dx + dz * dz, bx = cx, bz = cz, bk = k;
                        break;
                    }
            }
        if (best < 0)
            continue;
        all[nall++] = (site){tx, tz, c->origin[0] + (bx + 0.5) * c->cs,
                             c->origin[1] + c->y[bk] * c->ch, c->origin[2] + (bz + 0.5) * c->cs};
    }
    int got = 0;
    for (int k = 0; k < want && k < nall; k++)
        out[got++] = all[(long)k * nall / (want < nall ? want : nall)];
    free(all);
    return got;
}

static void encode(const op_tile_stages *st)
{
    for (int k = 0; k < st->ntiles; k++) {
        op_bytes b;
        uint64_t h;
        op_err e;
        if (op_tile_encode(&st->tiles[k], &b, &h, &e) == OP_OK)
            op_bytes_free(&b);
    }
}

/* Captures the entries of v's tiles that have none yet (untimed). */
static void capture(inproc *p, const op_volume *v)
{
    op_tile_rect r;
    if (!op_level_volume_tiles(p->lvl, v, &r))
        return;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_rebuild_entry **en = &p->ent[tile_index(p, tx, tz)];
            if (*en)
                continue;
            op_arena_reset(p->out);
            op_arena_reset(p->scratch);
            op_tile_stages st;
            op_err e;
            if (op_level_build_tile(p->lvl, tx, tz, NULL, 0, OP_STAGE_TILE, 0, p->out, p->scratch,
                                    &st, en, &e) != OP_OK)
                die("capture", e.msg);
        }
}

/* Rebuilds v's tiles from their entries with set[0..n), encoded; ms, *tiles rebuilt. */
static double rebuild(inproc *p, const op_volume *v, const op_volume *set, int n, int *tiles)
{
    op_tile_rect r;
    *tiles = 0;
    double t0 = bench_now_ms();
    if (!op_level_volume_tiles(p->lvl, v, &r))
        return 0.0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_arena_reset(p->out);
            op_arena_reset(p->scratch);
            op_tile_stages st;
            op_err e;
            if (op_level_rebuild_tile(p->lvl, p->ent[tile_index(p, tx, tz)], set, n, OP_STAGE_TILE,
                                      0, p->out, p->scratch, &st, &e) != OP_OK)
                die("rebuild", e.msg);
            encode(&st);
            ++*tiles;
        }
    return bench_now_ms() - t0;
}

/* stats: builds and the rebuild cache's hits (raw: the C client has no field for them). */
static void rebuild_stats(op_client *c, uint64_t *builds, uint64_t *hits)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    op_rpc_pack_key(&pk, "v");
    msgpack_pack_int(&pk, 1);
    op_rpc_pack_key(&pk, "id");
    msgpack_pack_int(&pk, 1);
    op_rpc_pack_key(&pk, "method");
    op_rpc_pack_key(&pk, "stats");
    uint8_t *raw;
    size_t n;
    op_err e;
    if (op_client_call_raw(c, sb.data, sb.size, TIMEOUT_MS, &raw, &n, &e) != OP_OK)
        die("stats", e.msg);
    msgpack_sbuffer_destroy(&sb);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    *builds = *hits = 0;
    if (msgpack_unpack_next(&u, (const char *)raw, n, &off) == MSGPACK_UNPACK_SUCCESS) {
        const msgpack_object *res = op_rpc_get(&u.data, "result");
        const msgpack_object *b = res ? op_rpc_get(res, "builds") : NULL;
        const msgpack_object *rc = res ? op_rpc_get(res, "rebuild_cache") : NULL;
        const msgpack_object *h = rc ? op_rpc_get(rc, "hits") : NULL;
        *builds = b ? b->via.u64 : 0;
        *hits = h ? h->via.u64 : 0;
    }
    msgpack_unpacked_destroy(&u);
    free(raw);
}

static op_client_volume obstacle(const site *s, double radius)
{
    op_client_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "obstacle");
    v.mode = OP_CLIENT_VOLUME_OBSTACLE;
    v.area = 0;
    v.kind = OP_CLIENT_VOLUME_CYLINDER;
    v.center[0] = s->x;
    v.center[1] = s->z;
    v.radius = radius;
    v.y[0] = s->y - 0.5;
    v.y[1] = s->y + 1.5;
    return v;
}

static op_volume core_volume(const op_client_volume *c)
{
    op_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", c->name);
    v.kind = OP_VOLUME_CYLINDER;
    v.mode = OP_VOLUME_OBSTACLE;
    v.bmin[0] = c->center[0];
    v.bmin[2] = c->center[1];
    v.bmax[0] = c->radius;
    v.bmin[1] = c->y[0];
    v.bmax[1] = c->y[1];
    return v;
}

/* The daemon's own times (ms, receive to reply) of `method` from its request log. */
static int log_times(const char *log, const char *method, double *out, int max)
{
    char key[64];
    snprintf(key, sizeof key, " %s level=bench ms=", method);
    FILE *f = fopen(log, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f) && n < max) {
        const char *p = strstr(line, key);
        if (p)
            out[n++] = atof(p + strlen(key));
    }
    if (f)
        fclose(f);
    return n;
}

typedef struct series {
    double *v;
    int n;
} series;

static void row(const char *what, series *s)
{
    printf("| %s | %.2f | %.2f | %.2f |\n", what, pct(s->v, s->n, 0.5), pct(s->v, s->n, 0.99),
           pct(s->v, s->n, 1.0));
}

int main(int argc, char **argv)
{
    const char *spec = NULL;
    int edits = 41, no_fsync = 0;
    double radius = 1.0;
    op_settings s;
    op_settings_default(&s);
    char sets[512] = "";
    for (int i = 1; i < argc; i++) {
        op_err e;
        if (!strcmp(argv[i], "--level") && i + 1 < argc)
            spec = argv[++i];
        else if (!strcmp(argv[i], "--gen") && i + 1 < argc) {
            static char gen[128];
            snprintf(gen, sizeof gen, "gen:%s", argv[++i]);
            spec = gen;
        } else if (!strcmp(argv[i], "--edits") && i + 1 < argc)
            edits = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--radius") && i + 1 < argc)
            radius = atof(argv[++i]);
        else if (!strcmp(argv[i], "--no-fsync"))
            no_fsync = 1;
        else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            char kv[256];
            snprintf(kv, sizeof kv, "%s", argv[++i]);
            char *eq = strchr(kv, '=');
            if (!eq)
                die("--set", "wants key=value");
            *eq = '\0';
            if (op_settings_set(&s, kv, eq + 1, &e) != OP_OK)
                die("--set", e.msg);
            size_t at = strlen(sets);
            snprintf(sets + at, sizeof sets - at, "%s%s=%s", at ? "," : "", kv, eq + 1);
        } else {
            fprintf(stderr,
                    "usage: %s [--level PATH | --gen KIND:SIZE[:SEED]] [--edits N] "
                    "[--set key=value]... [--radius R] [--no-fsync]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!spec)
        spec = OP_BENCH_DEFAULT_LEVEL;
    if (edits < 1 || radius <= 0)
        die("arguments", "--edits >= 1 and --radius > 0");
    char err[512];
    bench_level bl;
    if (bench_level_load(spec, &bl, err, sizeof err))
        die(spec, err);
    op_soup soup = {bl.verts, 3 * (size_t)bl.nverts, bl.tris, 3 * (size_t)bl.ntris, NULL};

    /* In process: the level, its sites. */
    inproc p = {0};
    op_err e;
    if (op_level_create(&soup, &s, NULL, 0, &p.lvl, &e) != OP_OK)
        die("level", e.msg);
    p.r = op_level_tiles(p.lvl);
    p.ent = calloc((size_t)op_level_tile_count(p.lvl), sizeof *p.ent);
    p.out = op_arena_create(0);
    p.scratch = op_arena_create(0);
    site *sites = malloc((size_t)edits * sizeof *sites);
    int ns = pick_sites(&p, sites, edits);
    if (ns == 0)
        die(spec, "no walkable tile centre");

    /* The daemon. */
    bench_daemon d;
    if (bench_daemon_start(&d, argv[0], "onepathd-volume-bench", no_fsync))
        return 1;
    op_client *c;
    op_client_ping_result pr;
    if (op_client_open(d.url, &c, &e) != OP_OK || op_client_ping(c, 10000, &pr, &e) != OP_OK)
        die("onepathd", e.msg);
    /* The same settings as text (op_client_setting): the ones given, the rest default. */
    op_client_setting cs[32];
    int ncs = 0;
    char sbuf[512];
    snprintf(sbuf, sizeof sbuf, "%s", sets);
    for (char *tok = strtok(sbuf, ","); tok && ncs < 32; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        *eq = '\0';
        cs[ncs++] = (op_client_setting){tok, eq + 1};
    }
    op_client_mesh ground = {"ground", bl.verts,         (size_t)bl.nverts,
                             bl.tris,  (size_t)bl.ntris, NULL};
    uint64_t ver;
    int changed;
    double t0 = bench_now_ms();
    if (op_client_level_put(c, "bench", cs, ncs, &ground, 1, TIMEOUT_MS, &ver, &changed, &e) !=
        OP_OK)
        die("level.put", e.msg);
    op_client_changes ch;
    if (op_client_changes_since(c, "bench", 0, 0, TIMEOUT_MS, &ch, &e) != OP_OK)
        die("changes.since", e.msg);
    double bake_ms = bench_now_ms() - t0;
    op_client_changes_free(&ch);

    series ack = {calloc((size_t)ns, sizeof(double)), 0}, cur = {calloc((size_t)ns, 8), 0},
           tot = {calloc((size_t)ns, 8), 0}, dtot = {calloc((size_t)ns, 8), 0},
           inp = {calloc((size_t)ns, 8), 0}, inpd = {calloc((size_t)ns, 8), 0};
    int listed = 0, inp_tiles = 0;
    uint64_t b0, h0, b1, h1;
    rebuild_stats(c, &b0, &h0);
    for (int k = -1; k < ns; k++) { /* k = -1: an untimed warm-up at the first site */
        const site *st = &sites[k < 0 ? 0 : k];
        op_client_volume cv = obstacle(st, radius);
        op_volume v = core_volume(&cv);
        capture(&p, &v);
        for (int side = 0; side < 2; side++) {
            int ipc = (side == 0) == (k % 2 == 0);
            if (ipc) {
                double a0 = bench_now_ms();
                if (op_client_volume_put(c, "bench", &cv, TIMEOUT_MS, &ver, &changed, &e) != OP_OK)
                    die("volume.put", e.msg);
                double a1 = bench_now_ms();
                if (op_client_changes_since(c, "bench", ver - 1, 0, TIMEOUT_MS, &ch, &e) != OP_OK)
                    die("changes.since", e.msg);
                double a2 = bench_now_ms();
                int nl = ch.ntiles;
                op_client_changes_free(&ch);
                if (op_client_volume_drop(c, "bench", "obstacle", TIMEOUT_MS, &ver, &changed, &e) !=
                        OP_OK ||
                    op_client_changes_since(c, "bench", ver - 1, 0, TIMEOUT_MS, &ch, &e) != OP_OK)
                    die("volume.drop", e.msg);
                double a3 = bench_now_ms();
                op_client_changes_free(&ch);
                if (k >= 0) {
                    ack.v[ack.n++] = a1 - a0;
                    cur.v[cur.n++] = a2 - a1;
                    tot.v[tot.n++] = a2 - a0;
                    dtot.v[dtot.n++] = a3 - a2;
                    listed += nl;
                }
            } else {
                int nt;
                double ms = rebuild(&p, &v, &v, 1, &nt);
                double msd = rebuild(&p, &v, NULL, 0, &nt);
                if (k >= 0) {
                    inp.v[inp.n++] = ms;
                    inpd.v[inpd.n++] = msd;
                    inp_tiles += nt;
                }
            }
        }
    }
    rebuild_stats(c, &b1, &h1);
    double *own = calloc((size_t)ns + 2, sizeof *own);
    series daemon = {own, log_times(d.log, "volume.put", own, ns + 1)};
    if (daemon.n > ns) { /* the warm-up's first */
        memmove(own, own + 1, (size_t)ns * sizeof *own);
        daemon.n = ns;
    }

    op_tile_rect r = p.r;
    printf("## %s (%d triangles, %d tiles, tile %d cells%s%s, %d sites, fsync %s)\n\n", spec,
           bl.ntris, (r.tx1 - r.tx0 + 1) * (r.tz1 - r.tz0 + 1),
           (int)(s.tile_size / s.cell_size + 0.5), sets[0] ? ", " : "", sets, ns,
           no_fsync ? "off" : "on");
    printf("level.put and bake until changes.since answers: %.0f ms\n\n", bake_ms);
    printf("| obstacle edit (cylinder r %.1f m), ms | p50 | p99 | max |\n|---|---|---|---|\n",
           radius);
    row("volume.put acknowledged (ipc)", &ack);
    row("in the daemon (its log: receive to reply)", &daemon);
    row("then tile current (changes.since lists it)", &cur);
    row("**volume.put → tile current**", &tot);
    row("volume.drop → tile current", &dtot);
    row("in process: rebuild from the entries, encoded (add)", &inp);
    row("in process: the same (drop)", &inpd);
    printf("\ntiles a edit: daemon rebuilt %.2f (%llu of %llu from their base), changes.since "
           "listed %.2f; in process %.2f (op_level_volume_tiles)\n\n",
           (double)(b1 - b0) / (2.0 * (ns + 1)), (unsigned long long)(h1 - h0),
           (unsigned long long)(b1 - b0), (double)listed / ns, (double)inp_tiles / ns);

    op_client_close(c);
    bench_daemon_stop(&d);
    for (int i = 0; i < op_level_tile_count(p.lvl); i++)
        op_rebuild_entry_free(p.ent[i]);
    free(p.ent);
    op_arena_destroy(p.out);
    op_arena_destroy(p.scratch);
    op_level_destroy(p.lvl);
    free(sites);
    free(ack.v), free(cur.v), free(tot.v), free(dtot.v), free(inp.v), free(inpd.v), free(own);
    bench_level_free(&bl);
    return 0;
}
