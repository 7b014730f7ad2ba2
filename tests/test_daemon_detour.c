/*
 * onepathd's Detour form (protocol §4.2b) is the offline export, byte for byte: every tile
 * of the shared dungeon and of a generated multi-floor level, fetched with tile.range
 * (small pages) and tile.get in format "detour", equals the file that `onepath export
 * LEVEL --detour-tiles DIR` writes for it, and `onepath fetch --format detour` writes the
 * export's directory, navmesh.params included. An unknown format is refused with its named
 * error. After a volume edit the Detour tiles follow the new native tiles: they equal the
 * export of the edited level's offline bake (op_level in-process, blobs exported by the
 * CLI), and some differ from before (so a stale cache would fail the test).
 */
#include <dirent.h>
#include <msgpack.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "op_daemon_test.h"
#include "op_test.h"
#include "onepath/levelgen.h"
#include "onepath/mesh.h"
#include "onepath/obj.h"
#include "onepath/rpc.h"

/* The whole file, or NULL when it does not exist. */
static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(size > 0 ? (size_t)size : 1);
    cr_assert_not_null(d);
    *n = fread(d, 1, (size_t)size, f);
    fclose(f);
    cr_assert_eq(*n, (size_t)size);
    return d;
}

static void run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    cr_assert_eq(system(cmd), 0, "failed: %s", cmd);
}

static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0;
    size_t ls = strlen(suffix);
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        n += e->d_name[0] != '.' && l > ls && !strcmp(e->d_name + l - ls, suffix);
    }
    closedir(d);
    return n;
}

static void put_soup_set(op_client *c, const char *level, const op_soup *soup,
                         const op_client_setting *sets, int nsets)
{
    op_client_mesh m = {"m",
                        soup->verts,
                        soup->verts_len / 3,
                        (const int32_t *)soup->tris,
                        soup->tris_len / 3,
                        soup->areas};
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(
        op_client_level_put(c, level, sets, nsets, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK,
        "%s", e.msg);
}

static void put_soup(op_client *c, const char *level, const op_soup *soup)
{
    put_soup_set(c, level, soup, NULL, 0);
}

/* Tiles of several layers compared by check_against_dir (this test process). */
static int multi_layer_tiles;

/* Every tile of the level in Detour form equals its file DIR/tile_TX_TZ.dtile (a tile
 * without data has none), by tile.range pages of at most page_bytes and by tile.get; the
 * hashes are the native layers'. Returns the tiles with data. */
static int check_against_dir(op_client *c, const char *level, const char *dir, size_t page_bytes)
{
    op_err e;
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, level, OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    cr_assert_leq(li.tiles[0], li.tiles[2]);
    int after[2], *ap = NULL, more = 1, with_data = 0, seen = 0, pages = 0;
    while (more) {
        op_client_detour_range rg;
        cr_assert_eq(op_client_tile_range_get_detour(c, level, li.tiles, ap, page_bytes,
                                                     OPT_TIMEOUT_MS, &rg, &e),
                     OP_OK, "%s", e.msg);
        cr_assert_geq(rg.ntiles, 1);
        for (int i = 0; i < rg.ntiles; i++) {
            const op_client_detour_tile *t = &rg.tiles[i];
            char path[512];
            snprintf(path, sizeof path, "%s/tile_%d_%d.dtile", dir, t->tx, t->tz);
            size_t n = 0;
            uint8_t *want = read_all(path, &n);
            if (!want) {
                cr_assert_null(t->data,
                               "tile (%d, %d): the daemon has Detour data, the export none", t->tx,
                               t->tz);
                cr_assert_eq(t->nhashes, 0);
            } else {
                cr_assert_not_null(t->data, "tile (%d, %d): the export has data, the daemon none",
                                   t->tx, t->tz);
                cr_assert(t->len == n && !memcmp(t->data, want, n),
                          "tile (%d, %d): %zu Detour bytes from the daemon, %zu in %s differ",
                          t->tx, t->tz, t->len, n, path);
                cr_assert_gt(t->nhashes, 0);
                multi_layer_tiles += t->nhashes > 1;
                with_data++;
            }
            /* The native layers it was made from. */
            op_client_tile nt;
            cr_assert_eq(op_client_tile_get(c, level, t->tx, t->tz, OPT_TIMEOUT_MS, &nt, &e), OP_OK,
                         "%s", e.msg);
            cr_assert_eq(nt.nlayers, t->nhashes);
            for (int k = 0; k < nt.nlayers; k++)
                cr_assert_eq(nt.layers[k].hash, t->hashes[k]);
            op_client_tile_free(&nt);
            /* tile.get in Detour form: the same bytes. */
            op_client_detour_tile g;
            cr_assert_eq(op_client_tile_get_detour(c, level, t->tx, t->tz, OPT_TIMEOUT_MS, &g, &e),
                         OP_OK, "%s", e.msg);
            cr_assert(g.len == t->len && (!g.len || !memcmp(g.data, t->data, g.len)));
            cr_assert_eq(g.version, t->version);
            op_client_detour_tile_free(&g);
            free(want);
            seen++;
        }
        pages++;
        more = rg.has_next;
        after[0] = rg.next[0];
        after[1] = rg.next[1];
        ap = after;
        op_client_detour_range_free(&rg);
    }
    cr_assert_eq(seen, (li.tiles[2] - li.tiles[0] + 1) * (li.tiles[3] - li.tiles[1] + 1));
    cr_assert_eq(with_data, count_files(dir, ".dtile"), "the export has tiles the daemon lacks");
    if (page_bytes > 0 && seen > 1)
        cr_assert_gt(pages, 1, "max_bytes %zu made one page", page_bytes);
    return with_data;
}

/* Two directories hold the same files (names of `--detour-tiles`), byte for byte. */
static void check_same_dir(const char *a, const char *b)
{
    DIR *d = opendir(a);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char pa[1024], pb[1024];
        snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
        size_t na, nb;
        uint8_t *x = read_all(pa, &na), *y = read_all(pb, &nb);
        cr_assert_not_null(y, "%s is missing", pb);
        cr_assert(na == nb && !memcmp(x, y, na), "%s and %s differ", pa, pb);
        free(x);
        free(y);
        n++;
    }
    closedir(d);
    cr_assert_eq(n, count_files(b, ""), "%s has files %s lacks", b, a);
}

/* Native pages count native bytes only, also once a tile's entry holds its Detour data:
 * a page of max_bytes = the native bytes of the first k tiles with layers holds them all. */
static void check_native_pages(op_client *c, const char *level)
{
    op_err e;
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, level, OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    op_client_tile_range all;
    cr_assert_eq(op_client_tile_range_get(c, level, li.tiles, NULL, (size_t)1 << 30, OPT_TIMEOUT_MS,
                                          &all, &e),
                 OP_OK, "%s", e.msg);
    size_t bytes = 0;
    int k = 0, with_layers = 0;
    for (; k < all.ntiles && with_layers < 3; k++) {
        with_layers += all.tiles[k].nlayers > 0;
        for (int l = 0; l < all.tiles[k].nlayers; l++)
            bytes += all.tiles[k].layers[l].len;
    }
    cr_assert_eq(with_layers, 3);
    op_client_tile_range pg;
    cr_assert_eq(op_client_tile_range_get(c, level, li.tiles, NULL, bytes, OPT_TIMEOUT_MS, &pg, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_geq(pg.ntiles, k, "max_bytes %zu (the native bytes of %d tiles) gave %d tiles", bytes,
                  k, pg.ntiles);
    op_client_tile_range_free(&pg);
    op_client_tile_range_free(&all);
}

/* Puts the level (with partition, when not NULL), exports it offline with the CLI, and
 * compares every tile both ways (through the library and through `onepath fetch --format
 * detour`). */
static void check_level(const char *cli_level, const op_soup *soup, const char *partition,
                        int min_tiles)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    op_client_setting set = {"partition", partition};
    put_soup_set(c, "lv", soup, &set, partition != NULL);
    char exp[400], got[400], opt[64] = "";
    if (partition)
        snprintf(opt, sizeof opt, "--set partition=%s", partition);
    snprintf(exp, sizeof exp, "%s/export", d.dir);
    snprintf(got, sizeof got, "%s/fetched", d.dir);
    run("%s/onepath export '%s' %s --detour-tiles '%s' > /dev/null", OP_BIN_DIR, cli_level, opt,
        exp);
    int n = check_against_dir(c, "lv", exp, 16384);
    cr_assert_geq(n, min_tiles, "only %d Detour tiles", n);
    /* Again, now from the cache: the same bytes. */
    cr_assert_eq(check_against_dir(c, "lv", exp, 0), n);
    check_native_pages(c, "lv");
    run("%s/onepath fetch --url '%s' --level lv --out '%s' --format detour > /dev/null", OP_BIN_DIR,
        d.url, got);
    check_same_dir(exp, got);
    fprintf(stderr, "%s: %d Detour tiles equal the export (%d compared with several layers)\n",
            cli_level, n, multi_layer_tiles);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

Test(daemon_detour, dungeon_equals_offline_export, .timeout = 300)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    const char *path = op_test_level("dungeon.obj");
    cr_assert_eq(op_obj_read_file(path, a, &soup, &e), OP_OK, "%s", e.msg);
    check_level(path, &soup, NULL, 20);
    op_arena_destroy(a);
}

Test(daemon_detour, multifloor_layers_equal_offline_export, .timeout = 300)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("multifloor", 48, 1, a, &soup, &e), OP_OK, "%s", e.msg);
    /* The layers partition gives cells of several layers (one Detour tile each). */
    check_level("gen:multifloor:48:1", &soup, "layers", 4);
    cr_assert_gt(multi_layer_tiles, 0, "no tile of several layers was compared");
    op_arena_destroy(a);
}

/* ---- refusals ---- */

typedef struct raw_reply {
    int ok, code;
    char msg[256];
    uint8_t *bytes;
    size_t n;
} raw_reply;

/* Sends {v, id, method, params {level, tx, tz | tx0..tz1, format}}; format_kind 0: omitted,
 * 1: the str fmt, 2: the int 5. */
static void raw_tile_call(op_client *c, const char *method, const int *rect, int format_kind,
                          const char *fmt, raw_reply *r)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int range = !strcmp(method, "tile.range");
    msgpack_pack_map(&pk, 4);
    op_rpc_pack_key(&pk, "v");
    msgpack_pack_int(&pk, 1);
    op_rpc_pack_key(&pk, "id");
    msgpack_pack_int(&pk, 7);
    op_rpc_pack_key(&pk, "method");
    msgpack_pack_str_with_body(&pk, method, strlen(method));
    op_rpc_pack_key(&pk, "params");
    msgpack_pack_map(&pk, (range ? 5 : 3) + (format_kind != 0));
    op_rpc_pack_key(&pk, "level");
    msgpack_pack_str_with_body(&pk, "lv", 2);
    static const char *const keys[2][4] = {{"tx", "tz"}, {"tx0", "tz0", "tx1", "tz1"}};
    for (int i = 0; i < (range ? 4 : 2); i++) {
        op_rpc_pack_key(&pk, keys[range][i]);
        msgpack_pack_int(&pk, rect[i]);
    }
    if (format_kind) {
        op_rpc_pack_key(&pk, "format");
        if (format_kind == 1)
            msgpack_pack_str_with_body(&pk, fmt, strlen(fmt));
        else
            msgpack_pack_int(&pk, 5);
    }
    memset(r, 0, sizeof *r);
    op_err e;
    cr_assert_eq(op_client_call_raw(c, sb.data, sb.size, OPT_TIMEOUT_MS, &r->bytes, &r->n, &e),
                 OP_OK, "%s", e.msg);
    msgpack_sbuffer_destroy(&sb);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    cr_assert_eq(msgpack_unpack_next(&u, (const char *)r->bytes, r->n, &off),
                 MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *top = &u.data;
    r->ok = op_rpc_get(top, "ok")->via.boolean;
    if (!r->ok) {
        const msgpack_object *err = op_rpc_get(top, "error");
        r->code = (int)op_rpc_get(err, "code")->via.u64;
        const msgpack_object *m = op_rpc_get(err, "message");
        const msgpack_object *name = op_rpc_get(err, "name");
        cr_assert(name->via.str.size == strlen(op_status_name(r->code)) &&
                  !memcmp(name->via.str.ptr, op_status_name(r->code), name->via.str.size));
        snprintf(r->msg, sizeof r->msg, "%.*s", (int)m->via.str.size, m->via.str.ptr);
    }
    msgpack_unpacked_destroy(&u);
}

Test(daemon_detour, bad_format_refused_with_its_error, .timeout = 120)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("rooms", 24, 3, a, &soup, &e), OP_OK, "%s", e.msg);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_soup(c, "lv", &soup);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "lv", OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    const char *methods[2] = {"tile.get", "tile.range"};
    for (int m = 0; m < 2; m++) {
        raw_reply r;
        raw_tile_call(c, methods[m], li.tiles, 1, "tiles", &r);
        cr_assert(!r.ok && r.code == OP_EINVAL, "%s format 'tiles': %d %s", methods[m], r.code,
                  r.msg);
        cr_assert(strstr(r.msg, "format 'tiles' is not"), "%s", r.msg);
        free(r.bytes);
        raw_tile_call(c, methods[m], li.tiles, 1, "DETOUR", &r);
        cr_assert(!r.ok && r.code == OP_EINVAL && strstr(r.msg, "'DETOUR'"), "%s", r.msg);
        free(r.bytes);
        /* A long value with control bytes is cut and never echoed raw. */
        raw_tile_call(c, methods[m], li.tiles, 1,
                      "\x01\x02xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                      &r);
        cr_assert(!r.ok && r.code == OP_EINVAL && strstr(r.msg, "'??xxx") &&
                      strstr(r.msg, "...'") && !strchr(r.msg, '\x01'),
                  "%s", r.msg);
        free(r.bytes);
        raw_tile_call(c, methods[m], li.tiles, 2, NULL, &r);
        cr_assert(!r.ok && r.code == OP_EPROTO && strstr(r.msg, "format"), "%s: %d %s", methods[m],
                  r.code, r.msg);
        free(r.bytes);
        /* "native" is the default: the same reply, byte for byte. */
        raw_reply x, y;
        raw_tile_call(c, methods[m], li.tiles, 0, NULL, &x);
        raw_tile_call(c, methods[m], li.tiles, 1, "native", &y);
        cr_assert(x.ok && y.ok);
        cr_assert(x.n == y.n && !memcmp(x.bytes, y.bytes, x.n), "%s: native differs from default",
                  methods[m]);
        free(x.bytes);
        free(y.bytes);
    }
    /* The daemon still serves. */
    op_client_detour_tile t;
    cr_assert_eq(
        op_client_tile_get_detour(c, "lv", li.tiles[0], li.tiles[1], OPT_TIMEOUT_MS, &t, &e), OP_OK,
        "%s", e.msg);
    op_client_detour_tile_free(&t);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    op_arena_destroy(a);
}

/* ---- edits ---- */

/* Writes the reference bake's blobs as `onepath bake --out` names them. */
static void write_blobs(const opt_ref *ref, const char *dir)
{
    cr_assert_eq(mkdir(dir, 0755), 0, "%s", dir);
    for (int i = 0; i < ref->n; i++)
        for (int k = 0; k < ref->t[i].nl; k++) {
            char path[512];
            snprintf(path, sizeof path, "%s/tile_%d_%d_%d.optile", dir, ref->t[i].tx, ref->t[i].tz,
                     ref->t[i].layer[k]);
            FILE *f = fopen(path, "wb");
            cr_assert_not_null(f);
            cr_assert_eq(fwrite(ref->t[i].blob[k].data, 1, ref->t[i].blob[k].len, f),
                         ref->t[i].blob[k].len);
            cr_assert_eq(fclose(f), 0);
        }
}

/* Tiles whose files differ between two export directories (or exist in one only). */
static int count_differing(const char *a, const char *b, const op_client_level_info *li)
{
    int n = 0;
    for (int tz = li->tiles[1]; tz <= li->tiles[3]; tz++)
        for (int tx = li->tiles[0]; tx <= li->tiles[2]; tx++) {
            char pa[512], pb[512];
            snprintf(pa, sizeof pa, "%s/tile_%d_%d.dtile", a, tx, tz);
            snprintf(pb, sizeof pb, "%s/tile_%d_%d.dtile", b, tx, tz);
            size_t na = 0, nb = 0;
            uint8_t *x = read_all(pa, &na), *y = read_all(pb, &nb);
            n += (!x) != (!y) || na != nb || (x && memcmp(x, y, na));
            free(x);
            free(y);
        }
    return n;
}

Test(daemon_detour, detour_follows_an_edit, .timeout = 300)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("rooms", 32, 9, a, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s;
    op_settings_default(&s);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_soup(c, "lv", &soup);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "lv", OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);

    /* Before: the export of the offline bake's blobs; every Detour tile fetched (cached). */
    char blobs0[400], exp0[400], blobs1[400], exp1[400];
    snprintf(blobs0, sizeof blobs0, "%s/blobs0", d.dir);
    snprintf(exp0, sizeof exp0, "%s/export0", d.dir);
    snprintf(blobs1, sizeof blobs1, "%s/blobs1", d.dir);
    snprintf(exp1, sizeof exp1, "%s/export1", d.dir);
    opt_ref r0, r1;
    opt_ref_bake(&soup, &s, &r0);
    write_blobs(&r0, blobs0);
    run("%s/onepath export --tiles '%s' --detour-tiles '%s' > /dev/null", OP_BIN_DIR, blobs0, exp0);
    int n0 = check_against_dir(c, "lv", exp0, 0);

    /* An obstacle on walkable ground: around the first polygon of the middle tile. */
    const opt_ref_tile *mid = &r0.t[r0.n / 2];
    for (int i = r0.n / 2; mid->nl == 0 && i < r0.n; i++)
        mid = &r0.t[i];
    cr_assert_gt(mid->nl, 0);
    op_tile pt;
    cr_assert_eq(op_tile_decode(mid->blob[0].data, mid->blob[0].len, a, &pt, NULL, &e), OP_OK, "%s",
                 e.msg);
    double w[3];
    op_tile_world_vert(&pt, pt.polys[0], w);
    op_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "wall");
    v.kind = OP_VOLUME_BOX;
    v.mode = OP_VOLUME_OBSTACLE;
    double cx = w[0], cz = w[2];
    double box[6] = {cx - 5, li.bounds[1] - 1, cz - 5, cx + 5, li.bounds[4] + 1, cz + 5};
    memcpy(v.bmin, box, sizeof v.bmin);
    memcpy(v.bmax, box + 3, sizeof v.bmax);
    op_client_volume cv = opt_client_volume(&v, 0);
    uint64_t ver;
    int changed;
    cr_assert_eq(op_client_volume_put(c, "lv", &cv, OPT_TIMEOUT_MS, &ver, &changed, &e), OP_OK,
                 "%s", e.msg);
    cr_assert(changed);
    opt_ref_bake_volumes(&soup, &s, &v, 1, &r1);
    opt_check_changes(c, "lv", 1, &r0, &r1);

    /* After: the export of the edited level's offline bake. */
    write_blobs(&r1, blobs1);
    run("%s/onepath export --tiles '%s' --detour-tiles '%s' > /dev/null", OP_BIN_DIR, blobs1, exp1);
    int changed_tiles = count_differing(exp0, exp1, &li);
    cr_assert_gt(changed_tiles, 0, "the obstacle changed no Detour tile");
    int n1 = check_against_dir(c, "lv", exp1, 0);
    fprintf(stderr, "edit: %d then %d Detour tiles, %d changed, each equal to the export\n", n0, n1,
            changed_tiles);
    opt_ref_free(&r0);
    opt_ref_free(&r1);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    op_arena_destroy(a);
}

/* ---- the cache ---- */

/* Sums the native and the Detour bytes of every tile (which also makes them cached). */
static void level_bytes(op_client *c, const char *level, size_t *native, size_t *detour)
{
    op_err e;
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, level, OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    *native = 0;
    if (detour)
        *detour = 0;
    for (int tz = li.tiles[1]; tz <= li.tiles[3]; tz++)
        for (int tx = li.tiles[0]; tx <= li.tiles[2]; tx++) {
            op_client_tile t;
            cr_assert_eq(op_client_tile_get(c, level, tx, tz, OPT_TIMEOUT_MS, &t, &e), OP_OK, "%s",
                         e.msg);
            for (int k = 0; k < t.nlayers; k++)
                *native += t.layers[k].len;
            op_client_tile_free(&t);
            if (detour) {
                op_client_detour_tile d;
                cr_assert_eq(op_client_tile_get_detour(c, level, tx, tz, OPT_TIMEOUT_MS, &d, &e),
                             OP_OK, "%s", e.msg);
                *detour += d.len;
                op_client_detour_tile_free(&d);
            }
        }
}

static op_client_stats stats_of(op_client *c)
{
    op_client_stats st;
    op_err e;
    cr_assert_eq(op_client_stats_get(c, OPT_TIMEOUT_MS, &st, &e), OP_OK, "%s", e.msg);
    return st;
}

/* The Detour bytes count in the blob cache beside the blobs (stats cache.bytes), and a
 * small --cache-bytes evicts them with the blobs: every tile still comes back equal to
 * the export. */
Test(daemon_detour, detour_bytes_share_the_blob_cache, .timeout = 300)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    const char *path = op_test_level("dungeon.obj");
    cr_assert_eq(op_obj_read_file(path, a, &soup, &e), OP_OK, "%s", e.msg);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_soup(c, "lv", &soup);
    size_t native, detour, native2;
    level_bytes(c, "lv", &native, NULL);
    cr_assert_eq(stats_of(c).cache_bytes, native);
    level_bytes(c, "lv", &native2, &detour);
    cr_assert_eq(native2, native);
    cr_assert_gt(detour, 0);
    op_client_stats st = stats_of(c);
    cr_assert_eq(st.cache_bytes, native + detour, "cache %llu bytes, blobs %zu + Detour %zu",
                 (unsigned long long)st.cache_bytes, native, detour);
    cr_assert_eq(st.cache_evictions, 0);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);

    /* A budget of a tenth of it. */
    char budget[32];
    snprintf(budget, sizeof budget, "%zu", (native + detour) / 10);
    const char *extra[] = {"--cache-bytes", budget, NULL};
    opt_daemon_init(&d);
    opt_daemon_start(&d, extra);
    c = opt_connect(&d);
    put_soup(c, "lv", &soup);
    char exp[400];
    snprintf(exp, sizeof exp, "%s/export", d.dir);
    run("%s/onepath export '%s' --detour-tiles '%s' > /dev/null", OP_BIN_DIR, path, exp);
    int n = check_against_dir(c, "lv", exp, 0);
    st = stats_of(c);
    cr_assert_gt(st.cache_evictions, 0);
    fprintf(stderr,
            "cache: blobs %zu + Detour %zu bytes counted together; budget %s: %llu evictions, "
            "%d tiles still equal the export\n",
            native, detour, budget, (unsigned long long)st.cache_evictions, n);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    op_arena_destroy(a);
}

/* A level.put that changes only what the Detour header carries (agent_height on an open
 * flat level: the native tiles stay the same) lists every tile in changes.since, and the
 * Detour tiles equal the export with the new setting. */
Test(daemon_detour, settings_only_level_put_lists_detour_changes, .timeout = 300)
{
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("flat", 32, 1, a, &soup, &e), OP_OK, "%s", e.msg);
    op_settings s0, s1;
    op_settings_default(&s0);
    s1 = s0;
    cr_assert_eq(op_settings_set(&s1, "agent_height", "2.5", &e), OP_OK, "%s", e.msg);
    opt_ref r0, r1;
    opt_ref_bake(&soup, &s0, &r0);
    opt_ref_bake(&soup, &s1, &r1);
    for (int i = 0; i < r0.n; i++)
        cr_assert(!opt_ref_differs(&r0, &r1, r0.t[i].tx, r0.t[i].tz),
                  "agent_height changed native tile (%d, %d): pick another level", r0.t[i].tx,
                  r0.t[i].tz);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_soup(c, "lv", &soup);
    char exp0[400], exp1[400];
    snprintf(exp0, sizeof exp0, "%s/export0", d.dir);
    snprintf(exp1, sizeof exp1, "%s/export1", d.dir);
    run("%s/onepath export gen:flat:32:1 --detour-tiles '%s' > /dev/null", OP_BIN_DIR, exp0);
    run("%s/onepath export gen:flat:32:1 --set agent_height=2.5 --detour-tiles '%s' > /dev/null",
        OP_BIN_DIR, exp1);
    int n = check_against_dir(c, "lv", exp0, 0);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "lv", OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(count_differing(exp0, exp1, &li), n, "the header should differ in every tile");

    op_client_setting set = {"agent_height", "2.5"};
    put_soup_set(c, "lv", &soup, &set, 1);
    op_client_changes ch;
    cr_assert_eq(op_client_changes_since(c, "lv", 1, 0, OPT_TIMEOUT_MS, &ch, &e), OP_OK, "%s",
                 e.msg);
    int listed = 0;
    for (int i = 0; i < ch.ntiles; i++) {
        const opt_ref_tile *r = opt_ref_find(&r1, ch.tiles[i].tx, ch.tiles[i].tz);
        cr_assert(r && r->nl > 0 && ch.tiles[i].nhashes == r->nl);
        for (int k = 0; k < r->nl; k++)
            cr_assert_eq(ch.tiles[i].hashes[k], r->hash[k]);
        listed++;
    }
    op_client_changes_free(&ch);
    cr_assert_eq(listed, n, "changes.since lists %d of the %d tiles whose Detour bytes changed",
                 listed, n);
    cr_assert_eq(check_against_dir(c, "lv", exp1, 0), n);
    fprintf(stderr, "agent_height only: native tiles the same, %d Detour tiles listed and new\n",
            n);
    opt_ref_free(&r0);
    opt_ref_free(&r1);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    op_arena_destroy(a);
}
