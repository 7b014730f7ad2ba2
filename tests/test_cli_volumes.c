/*
 * `onepath bake --volumes` and `onepath inspect --volumes` (docs/spec/input-formats.md §6):
 * the baked tile files equal the library's builds with the file's volumes byte for byte, the
 * file's order does not matter, and a bad file exits 1 naming the byte and the volume.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onepath/levelgen.h"
#include "onepath/rebuild.h"
#include "onepath/tile_codec.h"
#include "onepath/volumes_json.h"
#include "op_test.h"

#define ONEPATH OP_BIN_DIR "/onepath"
#define LEVEL   "gen:multifloor:32:1"

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/op_clivol_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cli_volumes, .init = setup, .fini = teardown, .timeout = 120);

static void write_file(const char *name, const char *text)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* Runs "onepath ARGS" in dir with stdout to out.txt and stderr to err.txt; the exit code. */
static int onepath(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s > out.txt 2> err.txt", dir, ONEPATH, args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *output(const char *name)
{
    char p[128];
    size_t n;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *t = read_file(p, &n);
    cr_assert_not_null(t);
    return t;
}

/* The "hash" of a --json summary. */
static void summary_hash(char *hash)
{
    char *t = output("out.txt");
    const char *h = strstr(t, "\"hash\": \"");
    cr_assert_not_null(h, "%s", t);
    memcpy(hash, h + 9, 16);
    hash[16] = '\0';
    free(t);
}

static const char *const vols_a =
    "[{\"name\": \"door\", \"mode\": \"obstacle\", \"kind\": \"box\", \"bmin\": [8, -50, 8], "
    "\"bmax\": [11, 50, 9.6]},\n"
    " {\"name\": \"pool\", \"mode\": \"area\", \"area\": 9, \"kind\": \"cylinder\", \"center\": "
    "[20, 14], \"radius\": 3.5, \"y\": [-50, 50]},\n"
    " {\"name\": \"lane\", \"mode\": \"area\", \"area\": 0, \"kind\": \"prism\", \"points\": "
    "[[2, 20], [9.6, 20], [9.6, 24], [2, 26]], \"y\": [-50, 50]},\n"
    " {\"name\": \"car\", \"mode\": \"obstacle\", \"area\": 4, \"kind\": \"cylinder\", \"center\": "
    "[19.2, 5], \"radius\": 1.2, \"y\": [-50, 50]}]\n";

/* The same four volumes in another order. */
static char *permuted(void)
{
    const char *p[4];
    p[0] = vols_a + 1;
    for (int i = 1; i < 4; i++)
        p[i] = strstr(p[i - 1], "},\n") + 3;
    char *s = malloc(strlen(vols_a) + 8), *w = s;
    int order[4] = {3, 1, 0, 2};
    *w++ = '[';
    for (int k = 0; k < 4; k++) {
        const char *b = p[order[k]] + (order[k] ? 1 : 0), *e = strchr(b, '}');
        if (k)
            *w++ = ',';
        memcpy(w, b, (size_t)(e - b + 1));
        w += e - b + 1;
    }
    strcpy(w, "]\n");
    return s;
}

Test(cli_volumes, bake_equals_the_library_and_ignores_file_order)
{
    write_file("a.json", vols_a);
    char *perm = permuted();
    write_file("b.json", perm);
    free(perm);
    char h0[17], ha[17], hb[17];
    cr_assert_eq(onepath("bake " LEVEL " --threads 2 --json"), 0);
    summary_hash(h0);
    cr_assert_eq(onepath("bake " LEVEL " --threads 2 --json --volumes a.json --out tiles"), 0);
    summary_hash(ha);
    cr_assert_eq(onepath("bake " LEVEL " --threads 1 --json --volumes b.json"), 0);
    summary_hash(hb);
    cr_assert_str_eq(ha, hb, "file order must not matter");
    cr_assert_str_neq(h0, ha, "the volumes change the level");

    /* Every tile layer file equals the library's build with the same volumes. */
    op_arena *geo = op_arena_create(0), *out = op_arena_create(0), *scr = op_arena_create(0);
    op_soup soup;
    op_err e;
    cr_assert_eq(op_levelgen("multifloor", 32, 1, geo, &soup, &e), OP_OK, "%s", e.msg);
    op_volume *v;
    int n;
    cr_assert_eq(op_volumes_json_parse(vols_a, strlen(vols_a), "a.json", geo, &v, &n, &e), OP_OK,
                 "%s", e.msg);
    cr_assert_eq(op_volumes_sort(v, n, &e), OP_OK);
    op_settings s;
    op_settings_default(&s);
    op_level *lvl;
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &lvl, &e), OP_OK, "%s", e.msg);
    op_tile_rect r = op_level_tiles(lvl);
    int files = 0;
    for (int tz = r.tz0; tz <= r.tz1; tz++)
        for (int tx = r.tx0; tx <= r.tx1; tx++) {
            op_arena_reset(out);
            op_arena_reset(scr);
            op_tile_stages st;
            cr_assert_eq(
                op_level_build_tile(lvl, tx, tz, v, n, OP_STAGE_TILE, 0, out, scr, &st, NULL, &e),
                OP_OK, "%s", e.msg);
            for (int k = 0; k < st.ntiles; k++) {
                op_bytes b;
                uint64_t h;
                cr_assert_eq(op_tile_encode(&st.tiles[k], &b, &h, &e), OP_OK, "%s", e.msg);
                char p[160];
                snprintf(p, sizeof p, "%s/tiles/tile_%d_%d_%d.optile", dir, tx, tz,
                         st.tiles[k].layer);
                size_t len;
                char *got = read_file(p, &len);
                cr_assert_not_null(got, "%s missing", p);
                cr_assert(len == b.len && memcmp(got, b.data, len) == 0, "%s differs", p);
                free(got);
                op_bytes_free(&b);
                files++;
            }
        }
    cr_assert_gt(files, 5);
    op_level_destroy(lvl);
    op_arena_destroy(geo);
    op_arena_destroy(out);
    op_arena_destroy(scr);
}

Test(cli_volumes, a_bad_file_exits_1_naming_the_place)
{
    const char *bad = "[{\"name\": \"door\", \"mode\": \"obstacle\", \"kind\": \"box\",\n"
                      " \"bmin\": [0, 0, 0], \"bmax\": [1, 1e999, 1]}]";
    write_file("bad.json", bad);
    cr_assert_eq(onepath("bake " LEVEL " --volumes bad.json"), 1);
    char *err = output("err.txt"), want[96];
    snprintf(want, sizeof want, "bad.json: byte %d: volume 0 \"door\": bmax[1]: 1e999 is beyond",
             (int)(strstr(bad, "1e999") - bad));
    cr_assert(strstr(err, want), "%s", err);
    free(err);
    write_file("dup.json", "[{\"name\": \"d\", \"mode\": \"obstacle\", \"kind\": \"cylinder\", "
                           "\"center\": [0, 0], \"radius\": 1, \"y\": [0, 1]},"
                           "{\"name\": \"d\", \"mode\": \"obstacle\", \"kind\": \"cylinder\", "
                           "\"center\": [0, 0], \"radius\": 1, \"y\": [0, 1]}]");
    cr_assert_eq(onepath("inspect " LEVEL " --tile 1,1 --stage spans --volumes dup.json"), 1);
    err = output("err.txt");
    cr_assert(strstr(err, "volume 1 \"d\": name: repeats the name of volume 0"), "%s", err);
    free(err);
    cr_assert_eq(onepath("bake " LEVEL " --volumes missing.json"), 1);
    err = output("err.txt");
    cr_assert(strstr(err, "missing.json"), "%s", err);
    free(err);
    cr_assert_eq(onepath("bake " LEVEL " --volumes"), 2, "no file after --volumes is bad usage");
}

Test(cli_volumes, inspect_sees_the_volumes)
{
    write_file("a.json", vols_a);
    cr_assert_eq(onepath("inspect " LEVEL " --tile 0,0 --stage spans --json"), 0);
    char *plain = output("out.txt");
    cr_assert_eq(onepath("inspect " LEVEL " --tile 0,0 --stage spans --json --volumes a.json"), 0);
    char *with = output("out.txt");
    /* The door (an obstacle) lies in tile (0, 0): fewer walkable spans. */
    const char *a = strstr(plain, "\"walkable_spans\": "),
               *b = strstr(with, "\"walkable_spans\": ");
    cr_assert(a && b, "%s / %s", plain, with);
    cr_assert_gt(atol(a + 18), atol(b + 18), "%s / %s", plain, with);
    free(plain);
    free(with);
}
