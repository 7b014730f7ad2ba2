/*
 * The `onepath` command-line tool, run as a child process (the built binary in
 * OP_BIN_DIR) in a fresh temporary directory: bake (summary, --json keys, --out files,
 * --tile equals the full bake's bytes, thread count does not change the hash), verify
 * (passes baked files, names a corrupted one), inspect (per-stage JSON keys, --set,
 * --dump reproducible), gen (byte-identical output), and the exit codes: 0 ok, 1 failed
 * work (missing file, malformed OBJ, naming the file and line), 2 bad usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onepath/build.h"
#include "onepath/obj.h"
#include "onepath/tile_codec.h"
#include "op_test.h"

#define ONEPATH OP_BIN_DIR "/onepath"

/* ---- files and processes ---- */

typedef struct run_result {
    int rc; /* exit code, or -1 when the child did not exit normally */
    char *out, *err;
    size_t out_len, err_len;
} run_result;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* Runs onepath with args (NULL-terminated) in dir; stdout and stderr captured. */
static run_result run_in(const char *dir, const char *const *args)
{
    char outp[4096], errp[4096];
    snprintf(outp, sizeof outp, "%s/.stdout", dir);
    snprintf(errp, sizeof errp, "%s/.stderr", dir);
    const char *argv[64];
    int n = 0;
    argv[n++] = ONEPATH;
    while (args[n - 1] && n < 63) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    cr_assert_eq(access(ONEPATH, X_OK), 0,
                 "%s is missing: build the whole tree (target onepath_cli) before this test",
                 ONEPATH);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork failed");
    if (pid == 0) {
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || chdir(dir) != 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(127);
        execv(ONEPATH, (char *const *)argv);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    run_result r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(outp, &r.out_len);
    r.err = slurp(errp, &r.err_len);
    unlink(outp);
    unlink(errp);
    return r;
}

static void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
}

static char tmpdir[256];

static void make_tmpdir(void)
{
    op_test_tmpdir(tmpdir, sizeof tmpdir, "onepath_cli_");
}

static void drop_tmpdir(void)
{
    if (tmpdir[0])
        op_test_remove_tree(tmpdir);
}

static run_result run(const char *const *args)
{
    return run_in(tmpdir, args);
}

/* Sorted .optile names of dir; returns the count. */
static int list_tiles(const char *dir, char names[][64], int max)
{
    DIR *d = opendir(dir);
    cr_assert(d, "cannot open %s", dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 7 && !strcmp(de->d_name + l - 7, ".optile")) {
            cr_assert_lt(n, max);
            cr_assert_lt(l, 64, "tile file name too long: %s", de->d_name);
            memcpy(names[n++], de->d_name, l + 1);
        }
    }
    closedir(d);
    qsort(names, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
    return n;
}

/* ---- a flat JSON object reader (what the tool prints: one object, one line) ---- */

#define MAX_KEYS 32

typedef struct json_obj {
    int n;
    char key[MAX_KEYS][40];
    char val[MAX_KEYS][128]; /* the value's text (strings without quotes) */
} json_obj;

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Parses a JSON string at p (escapes kept as they are); returns the char after it. */
static const char *json_string(const char *p, char *dst, size_t cap)
{
    cr_assert_eq(*p, '"', "expected a string at '%.20s'", p);
    size_t n = 0;
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1])
            p++;
        if (n + 1 < cap)
            dst[n++] = *p;
    }
    cr_assert_eq(*p, '"', "unterminated string");
    dst[n] = '\0';
    return p + 1;
}

/* The whole text must be exactly one object and a newline. */
static json_obj json_parse(const char *text)
{
    json_obj o;
    memset(&o, 0, sizeof o);
    const char *p = skip_ws(text);
    cr_assert_eq(*p, '{', "not a JSON object: %s", text);
    p = skip_ws(p + 1);
    while (*p != '}') {
        cr_assert_lt(o.n, MAX_KEYS);
        p = skip_ws(json_string(p, o.key[o.n], sizeof o.key[0]));
        cr_assert_eq(*p, ':', "missing ':' in %s", text);
        p = skip_ws(p + 1);
        if (*p == '"') {
            p = json_string(p, o.val[o.n], sizeof o.val[0]);
        } else {
            const char *v = p;
            int depth = 0;
            while (*p && (depth > 0 || (*p != ',' && *p != '}'))) {
                depth += (*p == '[') - (*p == ']');
                p++;
            }
            size_t len = (size_t)(p - v);
            cr_assert(len > 0 && len < sizeof o.val[0], "bad value in %s", text);
            memcpy(o.val[o.n], v, len);
            o.val[o.n][len] = '\0';
        }
        for (int k = 0; k < o.n; k++)
            cr_assert_str_neq(o.key[k], o.key[o.n], "key %s twice", o.key[k]);
        o.n++;
        p = skip_ws(p);
        if (*p == ',')
            p = skip_ws(p + 1);
        else
            cr_assert_eq(*p, '}', "expected ',' or '}' at '%.20s'", p);
    }
    cr_assert_str_eq(p, "}\n", "more than one object: %s", text);
    return o;
}

static const char *json_get(const json_obj *o, const char *key)
{
    for (int k = 0; k < o->n; k++)
        if (!strcmp(o->key[k], key))
            return o->val[k];
    return NULL;
}

/* A number value (asserted present and numeric). */
static double json_num(const json_obj *o, const char *key)
{
    const char *v = json_get(o, key);
    cr_assert(v, "key %s missing", key);
    char *end;
    double d = strtod(v, &end);
    cr_assert(end != v && *end == '\0', "key %s is not a number: %s", key, v);
    return d;
}

/* ---- tests ---- */

static const char *dungeon(void)
{
    return op_test_level("dungeon.obj");
}

/* The library's own build of one dungeon tile (default settings) up to `last`, in
 * arenas the caller destroys; the level is returned too. */
typedef struct lib_build {
    op_arena *geo, *out, *scratch;
    op_level *lvl;
    op_tile_stages st;
} lib_build;

static void lib_build_tile(lib_build *b, int tx, int tz, op_stage last)
{
    op_settings s;
    op_settings_default(&s);
    op_soup soup;
    op_err e;
    b->geo = op_arena_create(0);
    b->out = op_arena_create(0);
    b->scratch = op_arena_create(0);
    cr_assert_eq(op_obj_read_file(dungeon(), b->geo, &soup, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_create(&soup, &s, NULL, 0, &b->lvl, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_level_build_stages(b->lvl, tx, tz, last, 1, b->out, b->scratch, &b->st, &e),
                 OP_OK, "%s", e.msg);
}

static void lib_build_free(lib_build *b)
{
    op_level_destroy(b->lvl);
    op_arena_destroy(b->geo);
    op_arena_destroy(b->out);
    op_arena_destroy(b->scratch);
}

TestSuite(cli, .init = make_tmpdir, .fini = drop_tmpdir, .timeout = 120);

Test(cli, bake_without_arguments_prints_a_summary)
{
    const char *args[] = {"bake", NULL};
    run_result r = run(args);
    cr_assert_eq(r.rc, 0, "rc %d: %s", r.rc, r.err);
    cr_assert(strstr(r.out, "baked ") && strstr(r.out, " tiles") && strstr(r.out, "hash "),
              "no summary: %s", r.out);
    run_free(&r);
}

Test(cli, bake_json_has_every_key_and_the_hash_ignores_threads)
{
    static const char *const keys[] = {
        "tiles",    "layers",   "polygons", "vertices", "detail_triangles",
        "coverage", "build_ms", "bytes",    "hash"};
    char hash[2][64];
    for (int t = 0; t < 2; t++) {
        const char *args[] = {"bake", dungeon(), "--json", "--threads", t ? "2" : "1", NULL};
        run_result r = run(args);
        cr_assert_eq(r.rc, 0, "rc %d: %s", r.rc, r.err);
        json_obj o = json_parse(r.out);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            cr_assert(json_get(&o, keys[k]), "key %s missing in %s", keys[k], r.out);
        cr_assert_gt(json_num(&o, "tiles"), 0);
        cr_assert_geq(json_num(&o, "layers"), json_num(&o, "tiles"));
        cr_assert_gt(json_num(&o, "polygons"), 0);
        cr_assert_gt(json_num(&o, "vertices"), 2);
        cr_assert_gt(json_num(&o, "coverage"), 0);
        cr_assert_gt(json_num(&o, "bytes"), 0);
        const char *h = json_get(&o, "hash");
        cr_assert_eq(strlen(h), 16, "hash %s", h);
        cr_assert_eq(strspn(h, "0123456789abcdef"), 16, "hash %s", h);
        snprintf(hash[t], sizeof hash[t], "%s", h);
        run_free(&r);
    }
    cr_assert_str_eq(hash[0], hash[1], "--threads 1 and 2 give different hashes");
}

static char names_full[512][64], names_one[512][64];

Test(cli, bake_out_verify_single_tile_and_corruption)
{
    char dir[512], dir2[512];
    snprintf(dir, sizeof dir, "%s/full", tmpdir);
    snprintf(dir2, sizeof dir2, "%s/one", tmpdir);
    const char *bake[] = {"bake", dungeon(), "--out", dir, "--json", NULL};
    run_result r = run(bake);
    cr_assert_eq(r.rc, 0, "rc %d: %s", r.rc, r.err);
    json_obj o = json_parse(r.out);
    int n = list_tiles(dir, names_full, 512);
    cr_assert_eq(n, (int)json_num(&o, "layers"), "%d files for %s layers", n,
                 json_get(&o, "layers"));
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        int tx, tz, layer;
        char tail[16];
        cr_assert_eq(sscanf(names_full[i], "tile_%d_%d_%d%15s", &tx, &tz, &layer, tail), 4,
                     "file name %s", names_full[i]);
        cr_assert_str_eq(tail, ".optile");
        char path[1024];
        snprintf(path, sizeof path, "%s/%.63s", dir, names_full[i]);
        struct stat sb;
        cr_assert_eq(stat(path, &sb), 0);
        total += (size_t)sb.st_size;
    }
    cr_assert_eq((double)total, json_num(&o, "bytes"), "files hold %zu bytes", total);
    run_free(&r);

    /* The files are the library's blobs: tile (tx, tz) built in-process and encoded gives
     * the same bytes, layer by layer. Checked on a few tiles. */
    for (int i = 0; i < n; i += 1 + n / 5) {
        int tx, tz, layer;
        cr_assert_eq(sscanf(names_full[i], "tile_%d_%d_%d", &tx, &tz, &layer), 3);
        lib_build b;
        lib_build_tile(&b, tx, tz, OP_STAGE_TILE);
        const op_tile *t = NULL;
        for (int k = 0; k < b.st.ntiles; k++)
            if (b.st.tiles[k].layer == layer)
                t = &b.st.tiles[k];
        cr_assert(t, "%s: the library builds no such layer", names_full[i]);
        op_bytes blob;
        op_err e;
        cr_assert_eq(op_tile_encode(t, &blob, NULL, &e), OP_OK, "%s", e.msg);
        char path[1024];
        snprintf(path, sizeof path, "%s/%.63s", dir, names_full[i]);
        size_t len;
        char *file = slurp(path, &len);
        cr_assert(len == blob.len && !memcmp(file, blob.data, len),
                  "%s differs from the library's blob", names_full[i]);
        free(file);
        op_bytes_free(&blob);
        lib_build_free(&b);
    }

    const char *verify[] = {"verify", dir, NULL};
    r = run(verify);
    cr_assert_eq(r.rc, 0, "verify rc %d: %s%s", r.rc, r.out, r.err);
    char want[128];
    snprintf(want, sizeof want, "%d tiles; %d valid, 0 invalid", n, n);
    cr_assert(strstr(r.out, want), "verify says: %s", r.out);
    run_free(&r);

    /* One tile alone writes the same bytes as the full bake (a tile in the middle of
     * the list, every layer of it). */
    int tx, tz;
    cr_assert_eq(sscanf(names_full[n / 2], "tile_%d_%d_", &tx, &tz), 2);
    char tile[64];
    snprintf(tile, sizeof tile, "%d,%d", tx, tz);
    const char *one[] = {"bake", dungeon(), "--tile", tile, "--out", dir2, NULL};
    r = run(one);
    cr_assert_eq(r.rc, 0, "rc %d: %s", r.rc, r.err);
    run_free(&r);
    int m = list_tiles(dir2, names_one, 512);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "tile_%d_%d_", tx, tz);
    int expected = 0;
    for (int i = 0; i < n; i++)
        expected += !strncmp(names_full[i], prefix, strlen(prefix));
    cr_assert_eq(m, expected, "--tile %s wrote %d files, the full bake %d", tile, m, expected);
    for (int i = 0; i < m; i++) {
        char pa[1024], pb[1024];
        snprintf(pa, sizeof pa, "%s/%.63s", dir, names_one[i]);
        snprintf(pb, sizeof pb, "%s/%.63s", dir2, names_one[i]);
        size_t la, lb;
        char *a = slurp(pa, &la), *b = slurp(pb, &lb);
        cr_assert(la == lb && !memcmp(a, b, la), "%s differs between full and single bake",
                  names_one[i]);
        free(a);
        free(b);
    }

    /* Corrupt one byte of one file: verify fails and names that file only. */
    const char *victim = names_full[n - 1];
    char vp[1024];
    snprintf(vp, sizeof vp, "%s/%s", dir, victim);
    size_t vl;
    char *bytes = slurp(vp, &vl);
    bytes[vl / 2] ^= 0x41;
    spit(vp, bytes, vl);
    free(bytes);
    r = run(verify);
    cr_assert_eq(r.rc, 1, "verify of a corrupted file: rc %d: %s", r.rc, r.out);
    char fail[128];
    snprintf(fail, sizeof fail, "FAIL %s", victim);
    cr_assert(strstr(r.out, fail), "verify does not name %s: %s", victim, r.out);
    int fails = 0;
    for (const char *q = r.out; (q = strstr(q, "FAIL ")); q++)
        fails++;
    cr_assert_eq(fails, 1, "verify names %d files: %s", fails, r.out);
    snprintf(want, sizeof want, "%d valid, 1 invalid", n - 1);
    cr_assert(strstr(r.out, want), "verify says: %s", r.out);
    run_free(&r);
}

static const char *dir_find(void)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/find", tmpdir);
    return dir;
}

/* A dungeon tile with contours (found from the bake's file names; the files stay in
 * dir_find()). */
static void busy_tile(char *tile, size_t cap)
{
    const char *dir = dir_find();
    const char *bake[] = {"bake", dungeon(), "--out", dir, NULL};
    run_result r = run(bake);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    run_free(&r);
    int n = list_tiles(dir, names_full, 512), tx, tz;
    cr_assert_gt(n, 0);
    cr_assert_eq(sscanf(names_full[n / 2], "tile_%d_%d_", &tx, &tz), 2);
    snprintf(tile, cap, "%d,%d", tx, tz);
}

static json_obj inspect_json(const char *tile, const char *stage, const char *set)
{
    const char *args[] = {"inspect", dungeon(), "--tile", tile,
                          "--stage", stage,     "--json", set ? "--set" : NULL,
                          set,       NULL};
    run_result r = run(args);
    cr_assert_eq(r.rc, 0, "inspect %s: rc %d: %s", stage, r.rc, r.err);
    json_obj o = json_parse(r.out);
    run_free(&r);
    return o;
}

Test(cli, inspect_prints_each_stage_keys)
{
    char tile[64];
    busy_tile(tile, sizeof tile);
    static const char *const region_keys[] = {"regions"};
    static const char *const contour_keys[] = {"contours", "holes", "vertices", "raw_fallbacks",
                                               "dropped_holes"};
    for (int stage = 0; stage < 3; stage++) {
        static const char *const names[] = {"spans", "regions", "contours"};
        json_obj o = inspect_json(tile, names[stage], NULL);
        cr_assert_gt(json_num(&o, "spans"), 0, "%s: spans", names[stage]);
        cr_assert_eq(json_get(&o, "polygons"), NULL, "%s: polygons present", names[stage]);
        cr_assert_eq(!!json_get(&o, region_keys[0]), stage >= 1, "%s: key regions", names[stage]);
        if (stage >= 1)
            cr_assert_gt(json_num(&o, "regions"), 0);
        for (size_t k = 0; k < sizeof contour_keys / sizeof contour_keys[0]; k++)
            cr_assert_eq(!!json_get(&o, contour_keys[k]), stage == 2, "%s: key %s", names[stage],
                         contour_keys[k]);
        /* The counts are the library's for that tile and stage. */
        int tx, tz;
        cr_assert_eq(sscanf(tile, "%d,%d", &tx, &tz), 2);
        lib_build b;
        lib_build_tile(&b, tx, tz, (op_stage)stage);
        cr_assert_eq(json_num(&o, "spans"), (double)b.st.chf.span_count, "%s: spans", names[stage]);
        if (stage >= 1) {
            /* Regions of the tile: ids with spans, the border band not counted. */
            int count = 0;
            for (int id = 1; id < b.st.border_region; id++) {
                uint32_t i = 0;
                while (i < b.st.chf.span_count && b.st.regions.reg[i] != id)
                    i++;
                count += i < b.st.chf.span_count;
            }
            cr_assert_eq(json_num(&o, "regions"), (double)count, "%s: regions", names[stage]);
        }
        if (stage == 2) {
            int holes = 0, verts = 0;
            for (int c = 0; c < b.st.contours.count; c++) {
                holes += b.st.contours.contours[c].nholes;
                verts += b.st.contours.contours[c].nverts;
            }
            cr_assert_eq(json_num(&o, "contours"), (double)b.st.contours.count);
            cr_assert_eq(json_num(&o, "holes"), (double)holes);
            cr_assert_eq(json_num(&o, "vertices"), (double)verts);
            cr_assert_eq(json_num(&o, "raw_fallbacks"), (double)b.st.contours.raw_fallbacks);
            cr_assert_eq(json_num(&o, "dropped_holes"), (double)b.st.contours.dropped_holes);
        }
        lib_build_free(&b);
        if (stage == 2) {
            cr_assert_gt(json_num(&o, "contours"), 0);
            cr_assert_geq(json_num(&o, "vertices"), 3 * json_num(&o, "contours"));
            cr_assert_geq(json_num(&o, "holes"), 0);
            cr_assert_geq(json_num(&o, "raw_fallbacks"), 0);
            cr_assert_geq(json_num(&o, "dropped_holes"), 0);
        }
    }
}

/* Without --json, inspect prints text for a person: a heading naming the tile and the
 * stage, then one "label  value" line per count, with the values --json prints in its
 * order (the JSON keys spelt out: vertices of contours, of polygons, ...). */
Test(cli, inspect_prints_text_unless_json)
{
    char tile[64];
    busy_tile(tile, sizeof tile);
    static const char *const names[] = {"spans", "regions", "contours", "polys", "detail", "tile"};
    for (int stage = 0; stage < 6; stage++) {
        json_obj o = inspect_json(tile, names[stage], NULL);
        const char *args[] = {"inspect", dungeon(), "--tile", tile, "--stage", names[stage], NULL};
        run_result r = run(args);
        cr_assert_eq(r.rc, 0, "inspect %s: rc %d: %s", names[stage], r.rc, r.err);
        cr_assert_null(strchr(r.out, '{'), "%s: the text form looks like JSON: %s", names[stage],
                       r.out);
        char head[128];
        snprintf(head, sizeof head, "tile %s, up to stage %s\n", tile, names[stage]);
        cr_assert(!strncmp(r.out, head, strlen(head)), "%s: heading is not '%s': %s", names[stage],
                  head, r.out);
        /* Every JSON count but tile and skipped, in order, one line each. */
        const char *p = r.out + strlen(head);
        int lines = 0;
        for (int k = 0; k < o.n; k++) {
            if (!strcmp(o.key[k], "tile") || !strcmp(o.key[k], "skipped"))
                continue;
            const char *nl = strchr(p, '\n');
            cr_assert(nl, "%s: no line for %s in %s", names[stage], o.key[k], r.out);
            char line[128], label[64], want[64];
            snprintf(line, sizeof line, "%.*s", (int)(nl - p), p);
            const char *sp = strrchr(line, ' ');
            cr_assert(sp, "%s: line '%s'", names[stage], line);
            cr_assert_str_eq(sp + 1, o.val[k], "%s: %s is %s in JSON, text says '%s'", names[stage],
                             o.key[k], o.val[k], line);
            /* The label spells the key's words (its last word at least). */
            snprintf(want, sizeof want, "%s",
                     strrchr(o.key[k], '_') ? strrchr(o.key[k], '_') + 1 : o.key[k]);
            snprintf(label, sizeof label, "%.*s", (int)(sp - line), line);
            cr_assert(strstr(label, want), "%s: label '%s' does not say %s", names[stage], label,
                      o.key[k]);
            p = nl + 1;
            lines++;
        }
        cr_assert_str_eq(p, "", "%s: text after the counts: %s", names[stage], p);
        cr_assert_geq(lines, 2 + (stage >= 1) + 5 * (stage >= 2));
        run_free(&r);
    }
}

static char *inspect_dump(const char *tile, const char *stage, const char *set)
{
    const char *args[] = {"inspect", dungeon(), "--tile", tile,
                          "--stage", stage,     "--dump", set ? "--set" : NULL,
                          set,       NULL};
    run_result r = run(args);
    cr_assert_eq(r.rc, 0, "inspect --dump %s: rc %d: %s", stage, r.rc, r.err);
    cr_assert_gt(r.out_len, 0);
    free(r.err);
    return r.out;
}

Test(cli, inspect_dump_is_canonical_and_set_changes_it)
{
    char tile[64];
    busy_tile(tile, sizeof tile);
    static const char *const stages[] = {"spans", "regions", "contours"};
    for (int s = 0; s < 3; s++) {
        char *a = inspect_dump(tile, stages[s], NULL), *b = inspect_dump(tile, stages[s], NULL);
        cr_assert_str_eq(a, b, "two --dump runs of %s differ", stages[s]);
        free(a);
        free(b);
    }
    /* --set merge_region_area=0 changes the regions of some tile (a tile of one region
     * may come out the same); the default set explicitly changes none. (On the dungeon's
     * small tiles monotone and watershed regions agree everywhere since islands are
     * groups, amendments.md R1.) */
    int n = list_tiles(dir_find(), names_one, 512), differ = 0;
    for (int i = 0; i < n && !differ; i++) {
        int tx, tz;
        cr_assert_eq(sscanf(names_one[i], "tile_%d_%d_", &tx, &tz), 2);
        snprintf(tile, sizeof tile, "%d,%d", tx, tz);
        char *w = inspect_dump(tile, "regions", NULL);
        char *m = inspect_dump(tile, "regions", "merge_region_area=0");
        char *w2 = inspect_dump(tile, "regions", "partition=watershed");
        cr_assert_str_eq(w, w2, "tile %s: --set partition=watershed changed the regions", tile);
        differ = strcmp(w, m) != 0;
        free(w);
        free(m);
        free(w2);
    }
    cr_assert(differ, "merge_region_area=0 gives the same regions as 400 on all %d tiles", n);
}

Test(cli, gen_output_is_byte_identical)
{
    static const char *const kinds[] = {"terrain", "rooms", "ramp"};
    for (int k = 0; k < 3; k++) {
        const char *args[] = {"gen", kinds[k], "--size", "32", "--seed", "7", NULL};
        run_result a = run(args), b = run(args);
        cr_assert_eq(a.rc, 0, "%s", a.err);
        cr_assert_eq(b.rc, 0, "%s", b.err);
        cr_assert(a.out_len > 100 && strstr(a.out, "\nv ") && strstr(a.out, "\nf "),
                  "gen %s: not an OBJ", kinds[k]);
        cr_assert(a.out_len == b.out_len && !memcmp(a.out, b.out, a.out_len),
                  "gen %s: two runs differ", kinds[k]);
        const char *other[] = {"gen", kinds[k], "--size", "32", "--seed", "8", NULL};
        run_result c = run(other);
        cr_assert(c.out_len != a.out_len || memcmp(a.out, c.out, a.out_len),
                  "gen %s: seeds 7 and 8 give the same level", kinds[k]);
        run_free(&a);
        run_free(&b);
        run_free(&c);
    }
    /* --out writes the same bytes as stdout. */
    char path[512];
    snprintf(path, sizeof path, "%s/g.obj", tmpdir);
    const char *to_stdout[] = {"gen", "stairs", "--size", "32", NULL};
    const char *to_file[] = {"gen", "stairs", "--size", "32", "--out", path, NULL};
    run_result a = run(to_stdout), b = run(to_file);
    cr_assert_eq(b.rc, 0, "%s", b.err);
    size_t len;
    char *file = slurp(path, &len);
    cr_assert(len == a.out_len && !memcmp(file, a.out, len), "--out differs from stdout");
    free(file);
    run_free(&a);
    run_free(&b);
}

Test(cli, bad_usage_exits_2_with_a_message)
{
    const char *lvl = dungeon();
    const char *const cases[][8] = {
        {"frobnicate", NULL},
        {NULL},
        {"bake", "--threads", "0", NULL},
        {"bake", "--tile", "x", NULL},
        {"bake", "--set", "no_such_key=1", NULL},
        {"bake", "--set", "cell_size", NULL},
        {"bake", "--bogus", NULL},
        {"inspect", NULL},
        {"inspect", lvl, "--tile", "0,0", NULL},
        {"inspect", lvl, "--tile", "0,0", "--stage", "nonsense", NULL},
        {"verify", NULL},
        {"gen", NULL},
        {"gen", "no_such_kind", NULL},
        {"gen", "flat", "--size", "5", NULL},
        {"gen", "flat", "--seed", "-1", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result r = run(cases[i]);
        cr_assert_eq(r.rc, 2, "case %zu (%s %s): rc %d, stderr %s", i,
                     cases[i][0] ? cases[i][0] : "", cases[i][0] && cases[i][1] ? cases[i][1] : "",
                     r.rc, r.err);
        cr_assert_gt(r.err_len, 0, "case %zu: no message", i);
        run_free(&r);
    }
}

Test(cli, missing_file_and_malformed_obj_exit_1_naming_them)
{
    char missing[512], bad[512];
    snprintf(missing, sizeof missing, "%s/no_such_level.obj", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad.obj", tmpdir);
    const char *text = "# three lines\nv 0 0 0\nv 1 0 zero\nf 1 2 1\n";
    spit(bad, text, strlen(text));
    const char *m1[] = {"bake", missing, NULL};
    const char *m2[] = {"inspect", missing, "--tile", "0,0", "--stage", "spans", "--json", NULL};
    const char *b1[] = {"bake", bad, NULL};
    const char *b2[] = {"inspect", bad, "--tile", "0,0", "--stage", "spans", "--json", NULL};
    const char *const *cases[] = {m1, m2, b1, b2};
    for (int i = 0; i < 4; i++) {
        run_result r = run(cases[i]);
        const char *path = i < 2 ? missing : bad;
        cr_assert_eq(r.rc, 1, "case %d: rc %d, stderr %s", i, r.rc, r.err);
        cr_assert(strstr(r.err, path), "case %d: message does not name %s: %s", i, path, r.err);
        if (i >= 2)
            cr_assert(strstr(r.err, "line 3"), "case %d: message does not name line 3: %s", i,
                      r.err);
        cr_assert_eq(r.out_len, 0, "case %d: printed a result: %s", i, r.out);
        run_free(&r);
    }
    const char *v[] = {"verify", missing, NULL};
    run_result r = run(v);
    cr_assert_eq(r.rc, 1, "verify of a missing directory: rc %d", r.rc);
    cr_assert(strstr(r.err, missing), "verify does not name %s: %s", missing, r.err);
    run_free(&r);
}

/* ---- bake manifests (docs/spec/bake-output.md) ---- */

static int count_str(const char *s, const char *what)
{
    int n = 0;
    for (const char *q = s; (q = strstr(q, what)); q++)
        n++;
    return n;
}

static void bake_into(const char *level, const char *dir, const char *shard)
{
    const char *args[] = {"bake", level, "--out", dir, shard ? "--shard" : NULL, shard, NULL};
    run_result r = run(args);
    cr_assert_eq(r.rc, 0, "bake %s: rc %d: %s", shard ? shard : "", r.rc, r.err);
    run_free(&r);
}

/* verify DIR: its exit code, and stdout in out (caller frees). */
static int verify_dir(const char *dir, char **out)
{
    const char *args[] = {"verify", dir, NULL};
    run_result r = run(args);
    *out = r.out;
    free(r.err);
    return r.rc;
}

static char names_a[512][64], names_b[512][64];

Test(cli, manifest_names_missing_extra_and_changed_tiles)
{
    char dir[512], path[1024], *out;
    snprintf(dir, sizeof dir, "%s/m", tmpdir);
    bake_into("gen:rooms:64:1", dir, NULL);
    int n = list_tiles(dir, names_a, 512);
    cr_assert_gt(n, 4);
    snprintf(path, sizeof path, "%s/manifest.optm", dir);
    size_t len;
    char *man = slurp(path, &len);
    cr_assert(!strncmp(man, "onepath-manifest 1\n", 19), "manifest: %s", man);
    cr_assert_eq(count_str(man, "\ntile "), n, "manifest lists other tiles than the %d files", n);
    /* Every file's length and FNV-1a hash, computed here, are on its line. */
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%.63s", dir, names_a[i]);
        size_t fl;
        char *bytes = slurp(path, &fl);
        uint64_t h = 0xcbf29ce484222325ULL;
        for (size_t k = 0; k < fl; k++)
            h = (h ^ (unsigned char)bytes[k]) * 0x100000001b3ULL;
        free(bytes);
        char line[256];
        snprintf(line, sizeof line, "\ntile %.63s %zu %016llx\n", names_a[i], fl,
                 (unsigned long long)h);
        cr_assert(strstr(man, line), "no line %s", line + 1);
    }
    free(man);
    cr_assert_eq(verify_dir(dir, &out), 0, "%s", out);
    cr_assert(strstr(out, "complete"), "%s", out);
    free(out);

    /* A tile removed: missing, named. */
    snprintf(path, sizeof path, "%s/%.63s", dir, names_a[1]);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(verify_dir(dir, &out), 1, "%s", out);
    char want[256];
    snprintf(want, sizeof want, "FAIL %.63s: missing", names_a[1]);
    cr_assert(strstr(out, want), "%s", out);
    free(out);

    /* Bake again: the tile is back, and a stale file of the same level is removed. */
    snprintf(path, sizeof path, "%s/tile_999_999_0.optile", dir);
    spit(path, "x", 1);
    bake_into("gen:rooms:64:1", dir, NULL);
    cr_assert_eq(access(path, F_OK), -1, "a stale tile file survived the bake");
    cr_assert_eq(verify_dir(dir, &out), 0, "%s", out);
    free(out);

    /* An extra valid tile (a copy under another key's name would fail decode; copy the
     * bytes of a tile of another level into a free name of the grid instead). */
    char other[512];
    snprintf(other, sizeof other, "%s/other", tmpdir);
    bake_into("gen:rooms:96:1", other, NULL);
    int m = list_tiles(other, names_b, 512);
    cr_assert_gt(m, n, "the bigger level has more tiles");
    int extra = -1;
    for (int i = 0; i < m && extra < 0; i++) {
        int found = 0;
        for (int k = 0; k < n; k++)
            found |= !strcmp(names_a[k], names_b[i]);
        if (!found)
            extra = i;
    }
    cr_assert_geq(extra, 0);
    char src[1024];
    snprintf(src, sizeof src, "%s/%.63s", other, names_b[extra]);
    snprintf(path, sizeof path, "%s/%.63s", dir, names_b[extra]);
    size_t el;
    char *eb = slurp(src, &el);
    spit(path, eb, el);
    free(eb);
    cr_assert_eq(verify_dir(dir, &out), 1, "%s", out);
    snprintf(want, sizeof want, "FAIL %.63s: extra", names_b[extra]);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert_eq(count_str(out, "FAIL "), 1, "%s", out);
    free(out);
    cr_assert_eq(unlink(path), 0);

    /* A valid tile of another level under a name of this one: decodes, but changed. */
    const char *shared_name = names_a[0];
    snprintf(src, sizeof src, "%s/%.63s", other, shared_name);
    snprintf(path, sizeof path, "%s/%.63s", dir, shared_name);
    size_t a_len, b_len;
    char *ab = slurp(path, &a_len), *bb = slurp(src, &b_len);
    int differ = a_len != b_len || memcmp(ab, bb, a_len);
    free(ab);
    if (differ) {
        spit(path, bb, b_len);
        cr_assert_eq(verify_dir(dir, &out), 1, "%s", out);
        snprintf(want, sizeof want, "FAIL %.63s: changed", shared_name);
        cr_assert(strstr(out, want), "%s", out);
        free(out);
    }
    free(bb);
}

Test(cli, shards_merge_to_the_full_bake_and_a_lost_shard_fails)
{
    char full[512], sh[512], *out;
    snprintf(full, sizeof full, "%s/full", tmpdir);
    snprintf(sh, sizeof sh, "%s/sh", tmpdir);
    bake_into("gen:rooms:64:1", full, NULL);
    const char *shards[] = {"0/3", "1/3", "2/3"};
    for (int i = 0; i < 3; i++)
        bake_into("gen:rooms:64:1", sh, shards[i]);
    int n = list_tiles(full, names_a, 512), m = list_tiles(sh, names_b, 512);
    cr_assert_eq(n, m, "shards wrote %d files, the full bake %d", m, n);
    for (int i = 0; i < n; i++) {
        cr_assert_str_eq(names_a[i], names_b[i]);
        char pa[1024], pb[1024];
        snprintf(pa, sizeof pa, "%s/%.63s", full, names_a[i]);
        snprintf(pb, sizeof pb, "%s/%.63s", sh, names_b[i]);
        size_t la, lb;
        char *a = slurp(pa, &la), *b = slurp(pb, &lb);
        cr_assert(la == lb && !memcmp(a, b, la), "%s differs", names_a[i]);
        free(a);
        free(b);
    }
    cr_assert_eq(verify_dir(sh, &out), 0, "%s", out);
    cr_assert(strstr(out, "3 manifests, complete"), "%s", out);
    free(out);

    /* A lost shard (its manifest and its files, as when its job never ran). */
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest_shard_1_of_3.optm", sh);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(verify_dir(sh, &out), 1, "%s", out);
    cr_assert(strstr(out, "shard 1 of 3 missing"), "%s", out);
    free(out);

    /* A shard of another level's bake in the same directory. */
    bake_into("gen:rooms:64:2", sh, "1/3");
    cr_assert_eq(verify_dir(sh, &out), 1, "%s", out);
    cr_assert(strstr(out, "another bake"), "%s", out);
    free(out);

    /* A truncated manifest. */
    bake_into("gen:rooms:64:1", sh, "1/3");
    cr_assert_eq(verify_dir(sh, &out), 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/manifest_shard_2_of_3.optm", sh);
    size_t len;
    char *text = slurp(path, &len);
    spit(path, text, len / 2);
    free(text);
    cr_assert_eq(verify_dir(sh, &out), 1, "%s", out);
    cr_assert(strstr(out, "FAIL manifest_shard_2_of_3.optm"), "%s", out);
    free(out);
}

/* ---- conventions: --help, --version, ONEPATH_URL ---- */

Test(cli, every_command_help_is_on_stdout_with_exit_0)
{
    const char *top[] = {"--help", NULL};
    run_result r = run(top);
    cr_assert_eq(r.rc, 0);
    /* The command names, as the top-level help lists them ("  NAME  summary"). */
    char names[32][32];
    int n = 0;
    for (const char *p = r.out; (p = strstr(p, "\n  ")) && n < 32; p++) {
        if (sscanf(p + 3, "%31[a-z]", names[n]) == 1 && p[3] != ' ')
            n++;
    }
    run_free(&r);
    cr_assert_geq(n, 12, "only %d commands in onepath --help", n);
    for (int i = 0; i < n; i++) {
        for (int h = 0; h < 2; h++) {
            const char *args[] = {names[i], h ? "-h" : "--help", NULL};
            r = run(args);
            cr_assert_eq(r.rc, 0, "onepath %s %s: exit %d", names[i], args[1], r.rc);
            cr_assert(strstr(r.out, "usage: onepath"), "onepath %s %s: no usage on stdout: %s",
                      names[i], args[1], r.out);
            cr_assert_eq(r.err_len, 0, "onepath %s %s wrote to stderr: %s", names[i], args[1],
                         r.err);
            run_free(&r);
        }
    }
    /* Bad usage still goes to stderr with exit 2. */
    const char *bad[] = {"bake", "--no-such-flag", NULL};
    r = run(bad);
    cr_assert_eq(r.rc, 2);
    cr_assert(strstr(r.err, "usage:"), "%s", r.err);
    run_free(&r);
}

Test(cli, version_flag_and_command_agree)
{
    const char *a[] = {"--version", NULL}, *b[] = {"version", NULL};
    run_result r1 = run(a), r2 = run(b);
    cr_assert_eq(r1.rc, 0);
    cr_assert(!strncmp(r1.out, "onepath ", 8) && r1.out_len > 9, "%s", r1.out);
    cr_assert_str_eq(r1.out, r2.out);
    run_free(&r1);
    run_free(&r2);
}

Test(cli, onepath_url_is_the_default_url)
{
    const char *ping[] = {"remote", "ping", "--timeout", "200", NULL};
    unsetenv("ONEPATH_URL");
    run_result r = run(ping);
    cr_assert_eq(r.rc, 1);
    cr_assert(strstr(r.err, "is required"), "%s", r.err);
    run_free(&r);
    /* With the variable the command tries that URL (no daemon there: it times out). */
    setenv("ONEPATH_URL", "ipc:///tmp/onepath-cli-test-no-such.sock", 1);
    r = run(ping);
    cr_assert_eq(r.rc, 1);
    cr_assert(!strstr(r.err, "is required") && strstr(r.err, "ping"), "%s", r.err);
    run_free(&r);
    unsetenv("ONEPATH_URL");
}

Test(cli, progress_plain_json_none_off_a_terminal)
{
    const char *plain[] = {"bake", "gen:rooms:64:1", "--progress", "plain", NULL};
    run_result r = run(plain);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    /* stderr is a file here: the last line is the whole bake. */
    int tiles = 0;
    cr_assert(strstr(r.err, "bake: "), "no progress line: %s", r.err);
    const char *last = r.err, *q;
    while ((q = strstr(last + 1, "bake: ")))
        last = q;
    int done = -1, total = -2;
    cr_assert_eq(sscanf(last, "bake: %d/%d tiles", &done, &total), 2, "%s", r.err);
    cr_assert_eq(done, total, "%s", r.err);
    tiles = total;
    cr_assert_gt(tiles, 0);
    run_free(&r);

    const char *json[] = {"bake", "gen:rooms:64:1", "--progress", "json", NULL};
    r = run(json);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    const char *d = strstr(r.err, "{\"done\": ");
    cr_assert(d, "no JSON progress: %s", r.err);
    cr_assert_eq(sscanf(d, "{\"done\": %d, \"total\": %d", &done, &total), 2, "%s", r.err);
    cr_assert_eq(total, tiles);
    run_free(&r);

    const char *none[] = {"bake", "gen:rooms:64:1", "--progress", "none", NULL};
    r = run(none);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_eq(r.err_len, 0, "--progress none wrote: %s", r.err);
    run_free(&r);

    const char *bad[] = {"bake", "--progress", "loud", NULL};
    r = run(bad);
    cr_assert_eq(r.rc, 2);
    cr_assert(strstr(r.err, "--progress"), "%s", r.err);
    run_free(&r);
}

/* A 20 x 20 floor: faces "1 2 3" and "3 2 4" point up (e0 x e1 has +y), reversed down. */
static void floor_obj(const char *path, int down, int wall)
{
    char text[512];
    if (wall) /* the same square standing upright: steeper than any slope */
        snprintf(text, sizeof text, "v 0 0 0\nv 0 20 0\nv 20 0 0\nv 20 20 0\nf 1 2 3\nf 3 2 4\n");
    else
        snprintf(text, sizeof text, "v 0 0 0\nv 0 0 20\nv 20 0 0\nv 20 0 20\n%s",
                 down ? "f 1 3 2\nf 3 4 2\n" : "f 1 2 3\nf 3 2 4\n");
    spit(path, text, strlen(text));
}

Test(cli, no_walkable_surface_warns_with_the_likely_cause)
{
    char path[512];
    snprintf(path, sizeof path, "%s/floor.obj", tmpdir);
    const char *args[] = {"bake", path, "--progress", "none", NULL};
    floor_obj(path, 0, 0);
    run_result r = run(args);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(!strstr(r.err, "warning"), "an upward floor warns: %s", r.err);
    run_free(&r);

    floor_obj(path, 1, 0);
    r = run(args);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "no walkable surface") && strstr(r.err, "point down"),
              "a floor facing down: %s", r.err);
    run_free(&r);

    floor_obj(path, 0, 1);
    r = run(args);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.err, "no walkable surface") && strstr(r.err, "slope"), "a wall: %s", r.err);
    run_free(&r);

    /* Units: the floor in millimetres-as-metres terms, far smaller than a cell. */
    const char *tiny[] = {"bake", path, "--progress", "none", "--set", "cell_size=10", NULL};
    floor_obj(path, 0, 0);
    r = run(tiny);
    if (r.rc == 0 && strstr(r.err, "no walkable surface"))
        cr_assert(strstr(r.err, "units"), "a level of two cells: %s", r.err);
    run_free(&r);
}

/* ---- README.md documents every command ---- */

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Whether text[0..len) holds w as a whole word (no word character either side). */
static int has_word(const char *text, size_t len, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = text; p + n <= text + len && (p = strstr(p, w)); p++)
        if ((p == text || !word_char(p[-1])) && !word_char(p[n]))
            return 1;
    return 0;
}

/* Whether a line of readme holds "onepath CMD" and the word sub. */
static int line_has(const char *readme, const char *cmd, const char *sub)
{
    char head[64];
    snprintf(head, sizeof head, "onepath %s ", cmd);
    for (const char *l = readme; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        char *line = strndup(l, len);
        int ok = strstr(line, head) && has_word(line, len, sub);
        free(line);
        if (ok)
            return 1;
        l += len + (nl != NULL);
    }
    return 0;
}

/* Every command of `onepath --help`, every subcommand of its usage (onepath remote
 * ping|level-list ...) and every flag of its --help appear in README.md. */
Test(cli, readme_documents_every_command)
{
    char *readme = slurp(OP_DOCS_DIR "/../README.md", NULL);
    size_t rlen = strlen(readme);
    run_result top = run((const char *const[]){"--help", NULL});
    cr_assert_eq(top.rc, 0);
    int ncmds = 0, nsubs = 0, nflags = 0;
    const char *p = strstr(top.out, "commands:\n");
    cr_assert(p, "%s", top.out);
    for (p += 10; *p == ' ' && p[1] == ' ' && word_char(p[2]);) {
        char cmd[32];
        cr_assert_eq(sscanf(p, " %31s", cmd), 1);
        p = strchr(p, '\n') + 1;
        ncmds++;
        char want[64];
        snprintf(want, sizeof want, "onepath %s", cmd);
        cr_expect(has_word(readme, rlen, want), "README.md never shows '%s'", want);
        run_result h = run((const char *const[]){cmd, "--help", NULL});
        cr_assert_eq(h.rc, 0, "%s --help: rc %d", cmd, h.rc);
        /* Subcommands: "onepath CMD a|b|c" with a lowercase first word. */
        char head[64];
        int hl = snprintf(head, sizeof head, "onepath %s ", cmd);
        for (const char *u = h.out; (u = strstr(u, head)); u += hl) {
            const char *w = u + hl;
            if (*w < 'a' || *w > 'z')
                continue;
            size_t n = strcspn(w, " \n");
            char subs[128];
            snprintf(subs, sizeof subs, "%.*s", (int)(n < 127 ? n : 127), w);
            for (char *save, *s = strtok_r(subs, "|", &save); s; s = strtok_r(NULL, "|", &save)) {
                cr_expect(line_has(readme, cmd, s), "README.md has no line 'onepath %s ... %s'",
                          cmd, s);
                nsubs++;
            }
        }
        /* Flags. */
        for (const char *f = h.out; (f = strstr(f, "--")); f += 2) {
            if (f[2] < 'a' || f[2] > 'z')
                continue;
            char flag[64];
            size_t n = 2;
            while (n < sizeof flag - 1 && word_char(f[n]))
                n++;
            snprintf(flag, sizeof flag, "%.*s", (int)n, f);
            cr_expect(has_word(readme, rlen, flag), "README.md does not describe '%s %s'", cmd,
                      flag);
            nflags++;
        }
        run_free(&h);
    }
    /* The parse found the commands (not a help text that changed shape under it). */
    cr_assert_geq(ncmds, 14, "%d commands in onepath --help", ncmds);
    cr_assert_geq(nsubs, 10, "%d subcommands", nsubs);
    cr_assert_geq(nflags, 40, "%d flags", nflags);
    run_free(&top);
    free(readme);
}
