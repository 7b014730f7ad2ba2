/*
 * The volumes file (docs/spec/input-formats.md §6): accepted files give the volumes they
 * say, bit for bit through the writer; every refusal names the byte offset, the volume's
 * index and name and the key; limits hold at N and N + 1; random damage never crashes.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onepath/limits.h"
#include "onepath/rebuild.h"
#include "onepath/volumes_json.h"
#include "op_test.h"

static const char *const good =
    "[\n"
    " {\"name\": \"door1\", \"mode\": \"obstacle\", \"kind\": \"box\",\n"
    "  \"bmin\": [1, -0.5, 2.25], \"bmax\": [3e0, 2, 4.125]},\n"
    " {\"kind\": \"cylinder\", \"name\": \"pool\", \"mode\": \"area\", \"area\": 7,\n"
    "  \"center\": [-5.5, 6], \"radius\": 1.5, \"y\": [0, 1]},\n"
    " {\"name\": \"road\", \"mode\": \"area\", \"area\": 0, \"kind\": \"prism\",\n"
    "  \"points\": [[0, 0], [4, 0], [4, 4], [0, 4]], \"y\": [-1, 1e1]},\n"
    " {\"name\": \"crate\\u002d2\", \"mode\": \"obstacle\", \"area\": 5, \"kind\": \"box\",\n"
    "  \"bmin\": [0.1, 0.2, 0.30000000000000004], \"bmax\": [1, 1, 1]}\n"
    "]\n";

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static int to_buf(void *ctx, const char *d, size_t n)
{
    buf *b = ctx;
    if (b->n + n + 1 > b->cap) {
        b->cap = 2 * (b->n + n + 1);
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static op_status parse(const char *text, op_arena *a, op_volume **v, int *n, op_err *e)
{
    return op_volumes_json_parse(text, strlen(text), "t.json", a, v, n, e);
}

Test(volumes_json, a_good_file_says_what_it_holds)
{
    op_arena *a = op_arena_create(0);
    op_volume *v;
    int n;
    op_err e;
    cr_assert_eq(parse(good, a, &v, &n, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(n, 4);
    cr_assert_str_eq(v[0].name, "door1");
    cr_assert(v[0].kind == OP_VOLUME_BOX && v[0].mode == OP_VOLUME_OBSTACLE && v[0].area == 0);
    cr_assert(v[0].bmin[0] == 1 && v[0].bmin[1] == -0.5 && v[0].bmin[2] == 2.25);
    cr_assert(v[0].bmax[0] == 3 && v[0].bmax[1] == 2 && v[0].bmax[2] == 4.125);
    cr_assert(v[1].kind == OP_VOLUME_CYLINDER && v[1].mode == OP_VOLUME_AREA && v[1].area == 7);
    cr_assert(v[1].bmin[0] == -5.5 && v[1].bmin[2] == 6 && v[1].bmax[0] == 1.5);
    cr_assert(v[1].bmin[1] == 0 && v[1].bmax[1] == 1);
    cr_assert(v[2].kind == OP_VOLUME_PRISM && v[2].npts == 4 && v[2].pts[4] == 4);
    cr_assert(v[2].area == 0 && v[2].bmin[1] == -1 && v[2].bmax[1] == 10);
    cr_assert_str_eq(v[3].name, "crate-2");
    cr_assert_eq(v[3].area, 5);
    cr_assert(v[3].bmin[2] == 0.1 + 0.2, "nearest double");

    /* write -> parse gives the same volumes bit for bit, and the same text again. */
    buf b1 = {0}, b2 = {0};
    cr_assert_eq(op_volumes_json_write(v, n, to_buf, &b1, &e), OP_OK, "%s", e.msg);
    op_volume *w;
    int m;
    cr_assert_eq(parse(b1.p, a, &w, &m, &e), OP_OK, "%s\n%s", e.msg, b1.p);
    cr_assert_eq(m, n);
    cr_assert_eq(memcmp(v, w, (size_t)n * sizeof *v), 0);
    cr_assert_eq(op_volumes_json_write(w, m, to_buf, &b2, &e), OP_OK);
    cr_assert_str_eq(b1.p, b2.p);
    /* Sorted, any file order gives the same set. */
    cr_assert_eq(op_volumes_sort(v, n, &e), OP_OK);
    cr_assert_eq(op_volumes_check(v, n, &e), OP_OK, "%s", e.msg);
    cr_assert_str_eq(v[0].name, "crate-2");
    free(b1.p);
    free(b2.p);
    /* The empty array. */
    cr_assert_eq(parse(" [ ] ", a, &v, &n, &e), OP_OK);
    cr_assert(n == 0 && v == NULL);
    buf b3 = {0};
    cr_assert_eq(op_volumes_json_write(NULL, 0, to_buf, &b3, &e), OP_OK);
    cr_assert_str_eq(b3.p, "[]\n");
    free(b3.p);
    op_arena_destroy(a);
}

/* Random valid volumes survive write -> parse bit for bit (17 significant digits). */
Test(volumes_json, random_volumes_round_trip)
{
    op_arena *a = op_arena_create(0);
    op_test_rng g = {3};
    enum { N = 300 };
    op_volume *v = calloc(N, sizeof *v);
    for (int i = 0; i < N; i++) {
        snprintf(v[i].name, sizeof v[i].name, "v%d", i);
        v[i].kind = (op_volume_kind)(i % 3);
        v[i].mode = (op_volume_mode)((i / 3) % 2);
        v[i].area = op_test_rand_int(&g, 0, 63);
        double s = pow(10.0, op_test_rand_int(&g, -300, 12));
        double x = (op_test_rand01(&g) - 0.5) * (s < 1e12 ? s : 1e12);
        v[i].bmin[0] = x, v[i].bmin[1] = -x * 0.5 - 1.0, v[i].bmin[2] = -0.0;
        v[i].bmax[0] = fabs(x) + 1e-300, v[i].bmax[1] = fabs(x), v[i].bmax[2] = 1.0 / 3.0;
        v[i].npts = 3;
        v[i].pts[0] = 0, v[i].pts[1] = 0, v[i].pts[2] = 1.0 / 7.0, v[i].pts[3] = 0;
        v[i].pts[4] = 0, v[i].pts[5] = 2.0 / 3.0;
        if (v[i].kind == OP_VOLUME_BOX && v[i].bmin[0] > v[i].bmax[0])
            v[i].bmin[0] = -v[i].bmax[0];
    }
    op_err e;
    for (int i = 0; i < N; i++)
        cr_assert_eq(op_volume_validate(&v[i], &e), OP_OK, "%d: %s", i, e.msg);
    buf b = {0};
    cr_assert_eq(op_volumes_json_write(v, N, to_buf, &b, &e), OP_OK, "%s", e.msg);
    op_volume *w;
    int m;
    cr_assert_eq(parse(b.p, a, &w, &m, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(m, N);
    for (int i = 0; i < N; i++) {
        /* Fields a kind does not use are not written: compare what the kind reads. */
        op_volume x = v[i];
        if (x.kind != OP_VOLUME_PRISM) {
            x.npts = 0;
            memset(x.pts, 0, sizeof x.pts);
        }
        if (x.kind != OP_VOLUME_BOX)
            x.bmin[2] = x.kind == OP_VOLUME_CYLINDER ? x.bmin[2] : 0, x.bmax[2] = 0;
        if (x.kind == OP_VOLUME_PRISM)
            x.bmin[0] = x.bmin[2] = x.bmax[0] = 0;
        if (x.kind == OP_VOLUME_CYLINDER)
            x.bmax[2] = 0;
        cr_assert_eq(memcmp(&x, &w[i], sizeof x), 0, "volume %d", i);
    }
    free(b.p);
    free(v);
    op_arena_destroy(a);
}

/* at: the refusal's byte offset is where this substring first starts in text (NULL: not
 * checked; "$" the end of the text; a leading "2:" its second occurrence). */
typedef struct bad_case {
    const char *text;
    op_status code;
    const char *at;
    const char *says[3];
} bad_case;

#define OBJ_BOX                                                                                    \
    "\"mode\": \"area\", \"area\": 3, \"kind\": \"box\", \"bmin\": [0,0,0], \"bmax\": [1,1,1]"

static const bad_case bad[] = {
    {"", OP_EINVAL, "$", {"expected '['", "end of the text"}},
    {"{}", OP_EINVAL, "{", {"expected '['"}},
    {"\xef\xbb\xbf[]", OP_EINVAL, "\xef", {"0xef"}},
    {"[] x", OP_EINVAL, "x", {"more text after the array"}},
    {"[{}]", OP_EINVAL, "{", {"volume 0", "missing \"name\""}},
    {"[{\"name\": \"a\"}]", OP_EINVAL, "{", {"volume 0 \"a\"", "missing \"mode\""}},
    {"[{\"name\": \"a\", " OBJ_BOX ", \"size\": 3}]",
     OP_EINVAL,
     "\"size",
     {"volume 0 \"a\"", "unknown key \"size\""}},
    {"[{\"name\": \"a\", " OBJ_BOX ", \"area\": 4}]",
     OP_EINVAL,
     "3:\"area",
     {"key \"area\" repeats"}},
    {"[{\"name\": \"a\", " OBJ_BOX ", \"radius\": 4}]",
     OP_EINVAL,
     "\"radius",
     {"key \"radius\" is not used by a box"}},
    {"[{\"name\": \"a\", \"mode\": \"area\", \"kind\": \"box\", \"bmin\": [0,0,0], \"bmax\": "
     "[1,1,1]}]",
     OP_EINVAL,
     "{",
     {"volume 0 \"a\"", "missing \"area\" (required for mode \"area\")"}},
    {"[{\"name\": \"a\", \"mode\": \"obstacle\", \"kind\": \"cylinder\", \"center\": [0,0], "
     "\"y\": [0,1]}]",
     OP_EINVAL,
     "{",
     {"missing \"radius\" (required for a cylinder)"}},
    {"[{\"name\": \"a\", \"mode\": \"wall\"}]",
     OP_EINVAL,
     "\"wall",
     {"mode: \"wall\" is not \"area\" or \"obstacle\""}},
    {"[{\"name\": \"a\", \"kind\": \"sphere\"}]",
     OP_EINVAL,
     "\"sphere",
     {"kind: \"sphere\" is not"}},
    {"[{\"name\": \"a\", \"area\": 64}]", OP_ERANGE, "64", {"area: 64 is outside [0, 63]"}},
    {"[{\"name\": \"a\", \"area\": 3.0}]", OP_EINVAL, "3.0", {"area: expected an integer"}},
    {"[{\"name\": \"a\", \"area\": true}]",
     OP_EINVAL,
     "true",
     {"area: expected an integer, found 't'"}},
    {"[{\"name\": \"a\", \"bmin\": [0, 1e999, 0]}]",
     OP_ERANGE,
     "1e999",
     {"bmin[1]: 1e999 is beyond the largest double"}},
    {"[{\"name\": \"a\", \"bmin\": [0, -2e12, 0]}]",
     OP_ERANGE,
     "-2e12",
     {"bmin[1]: -2000000000000 is beyond +-2^40"}},
    {"[{\"name\": \"a\", \"bmin\": [0, NaN, 0]}]",
     OP_EINVAL,
     "NaN",
     {"bmin[1]: expected a number"}},
    {"[{\"name\": \"a\", \"bmin\": [0, 1]}]", OP_EINVAL, "]}", {"bmin: expected ',' (3 numbers)"}},
    {"[{\"name\": \"a\", \"bmin\": [0, 1, 2, 3]}]",
     OP_EINVAL,
     ", 3",
     {"bmin: expected ']' after 3"}},
    {"[{\"name\": \"a\", \"bmin\": [01, 1, 2]}]",
     OP_EINVAL,
     "1, 1",
     {"bmin: expected ','", "found '1'"}},
    {"[{\"name\": \"a\", \"bmin\": [1., 1, 2]}]", OP_EINVAL, ", 1, 2", {"digit must follow"}},
    {"[{\"name\": \"a\", \"bmin\": [1e+, 1, 2]}]", OP_EINVAL, ", 1, 2", {"exponent has no digits"}},
    {"[{\"name\": \"a\", \"radius\": 0}]", OP_ERANGE, "0}", {"radius: 0 is not in (0, 2^40]"}},
    {"[{\"name\": \"a\", \"radius\": -1}]", OP_ERANGE, "-1", {"radius: -1 is not in"}},
    {"[{\"name\": \".a\"}]", OP_EINVAL, "\".a", {"name: \".a\" is not"}},
    {"[{\"name\": \"a b\"}]", OP_EINVAL, "\"a b", {"name: \"a b\" is not"}},
    {"[{\"name\": \"a\\u00e9\"}]", OP_EINVAL, "\\u", {"only \\u0001..\\u007f"}},
    {"[{\"name\": \"a\\u0000\"}]", OP_EINVAL, "\\u", {"only \\u0001"}},
    {"[{\"name\": \"a\\x\"}]", OP_EINVAL, "\\x", {"unknown escape \\x"}},
    {"[{\"name\": \"a\tb\"}]", OP_EINVAL, "\t", {"control byte 0x09"}},
    {"[{\"name\": \"caf\xc3\xa9\"}]", OP_EINVAL, "\xc3", {"0xc3: strings are ASCII"}},
    {"[{\"name\": \"abc", OP_EINVAL, "$", {"ends inside a string"}},
    {"[{\"name\": \"a\", " OBJ_BOX "}", OP_EINVAL, "$", {"expected ',' or ']'", "end of the text"}},
    {"[{\"name\": \"a\", " OBJ_BOX "},]", OP_EINVAL, "3:]", {"volume 1", "expected '{'"}},
    {"[{\"name\": \"a\", \"mode\": \"area\", \"area\": 3, \"kind\": \"box\", \"bmin\": [2,0,0], "
     "\"bmax\": [1,1,1]}]",
     OP_ERANGE,
     "\"bmin",
     {"volume 0 \"a\"", "bmin[0] = 2 > bmax[0] = 1"}},
    {"[{\"name\": \"a\", \"mode\": \"area\", \"area\": 3, \"kind\": \"prism\", \"y\": [2, 1], "
     "\"points\": [[0,0],[1,0],[0,1]]}]",
     OP_ERANGE,
     "\"y",
     {"y: ymin 2 > ymax 1"}},
    {"[{\"name\": \"a\", \"mode\": \"area\", \"area\": 3, \"kind\": \"prism\", \"y\": [0, 1], "
     "\"points\": [[0,0],[1,0]]}]",
     OP_ERANGE,
     "\"points",
     {"points: 2 points, a prism needs 3..64"}},
    {"[{\"name\": \"a\", \"mode\": \"area\", \"area\": 3, \"kind\": \"prism\", \"y\": [0, 1], "
     "\"points\": [[0,0],[0,1],[1,0]]}]",
     OP_EINVAL,
     "{",
     {"volume 0 \"a\"", "counter-clockwise"}},
    {"[{\"name\": \"a\", " OBJ_BOX "}, {\"name\": \"b\", " OBJ_BOX "}, {\"name\": \"a\", " OBJ_BOX
     "}]",
     OP_EINVAL,
     "3:\"name",
     {"volume 2 \"a\": name: repeats the name of volume 0"}},
};

/* The offset bad_case.at designates (see there). */
static size_t offset_of(const bad_case *c)
{
    if (strcmp(c->at, "$") == 0)
        return strlen(c->text);
    int nth = 1;
    const char *tok = c->at;
    if (tok[0] >= '2' && tok[0] <= '9' && tok[1] == ':')
        nth = tok[0] - '0', tok += 2;
    const char *p = c->text - 1;
    for (int k = 0; k < nth; k++) {
        p = strstr(p + 1, tok);
        cr_assert_not_null(p, "'%s' not in '%s'", tok, c->text);
    }
    return (size_t)(p - c->text);
}

Test(volumes_json, every_refusal_names_the_place)
{
    op_arena *a = op_arena_create(0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        op_volume *v = (op_volume *)a;
        int n = 5;
        op_err e;
        size_t used = op_arena_used(a);
        op_status st = parse(bad[i].text, a, &v, &n, &e);
        cr_assert_eq(st, bad[i].code, "case %zu (%s): %s", i, bad[i].text, e.msg);
        cr_assert(v == NULL && n == 0, "case %zu", i);
        cr_assert_eq(op_arena_used(a), used, "case %zu leaves nothing allocated", i);
        char at[48];
        snprintf(at, sizeof at, "t.json: byte %zu: ", offset_of(&bad[i]));
        cr_assert(strncmp(e.msg, at, strlen(at)) == 0, "case %zu: '%s' does not start '%s'", i,
                  e.msg, at);
        for (int k = 0; k < 3 && bad[i].says[k]; k++)
            cr_assert(strstr(e.msg, bad[i].says[k]), "case %zu: '%s' lacks '%s'", i, e.msg,
                      bad[i].says[k]);
    }
    op_arena_destroy(a);
}

static char *repeat(const char *head, const char *unit, long times, const char *tail)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * (size_t)times + tl + 1), *p = s;
    memcpy(p, head, hl), p += hl;
    for (long i = 0; i < times; i++)
        memcpy(p, unit, ul), p += ul;
    memcpy(p, tail, tl + 1);
    return s;
}

Test(volumes_json, limits_at_n_and_n_plus_1)
{
    op_arena *a = op_arena_create(0);
    op_volume *v;
    int n;
    op_err e;
    /* 64 points (a regular polygon) accepted; a million points stop at the 65th. */
    char *pts = malloc(64 * 64), *p = pts;
    for (int i = 0; i < 64; i++) {
        double t = i * (6.283185307179586 / 64);
        p += sprintf(p, "%s[%.17g, %.17g]", i ? "," : "", 10 * cos(t), 10 * sin(t));
    }
    char *t64 = malloc(strlen(pts) + 200);
    sprintf(t64,
            "[{\"name\": \"p\", \"mode\": \"area\", \"area\": 1, \"kind\": \"prism\", "
            "\"y\": [0, 1], \"points\": [%s]}]",
            pts);
    cr_assert_eq(parse(t64, a, &v, &n, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(v[0].npts, 64);
    char *tm = repeat("[{\"name\": \"p\", \"points\": [[0,0]", ",[1,2]", 1000000, "]}]");
    cr_assert_eq(parse(tm, a, &v, &n, &e), OP_ELIMIT);
    cr_assert(strstr(e.msg, "volume 0 \"p\": points: more than 64 points"), "%s", e.msg);
    /* A name of 64 bytes is accepted, of 10 kB refused at its 65th byte. */
    char *n64 = repeat("[{\"name\": \"", "x", 64, "\", " OBJ_BOX "}]");
    cr_assert_eq(parse(n64, a, &v, &n, &e), OP_OK, "%s", e.msg);
    char *n10k = repeat("[{\"name\": \"", "x", 10000, "\", " OBJ_BOX "}]");
    cr_assert_eq(parse(n10k, a, &v, &n, &e), OP_EINVAL);
    char want[80];
    snprintf(want, sizeof want, "byte %d: volume 0: name: string longer than 64 bytes",
             (int)strlen("[{\"name\": \"") + 64);
    cr_assert(strstr(e.msg, want), "%s", e.msg);
    /* OP_MAX_VOLUMES objects accepted, one more refused. */
    buf b = {0};
    to_buf(&b, "[", 1);
    for (int i = 0; i <= OP_MAX_VOLUMES; i++) {
        char one[160];
        int k = snprintf(one, sizeof one, "%s{\"name\": \"v%d\", " OBJ_BOX "}", i ? "," : "", i);
        if (i == OP_MAX_VOLUMES) {
            char *all = malloc(b.n + 2);
            memcpy(all, b.p, b.n);
            memcpy(all + b.n, "]", 2);
            cr_assert_eq(parse(all, a, &v, &n, &e), OP_OK, "%s", e.msg);
            cr_assert_eq(n, OP_MAX_VOLUMES);
            free(all);
        }
        to_buf(&b, one, (size_t)k);
    }
    to_buf(&b, "]", 1);
    cr_assert_eq(parse(b.p, a, &v, &n, &e), OP_ELIMIT);
    cr_assert(strstr(e.msg, "more than 65536 volumes"), "%s", e.msg);
    /* A text beyond the size limit is refused unread. */
    cr_assert_eq(op_volumes_json_parse(b.p, OP_MAX_VOLUMES_FILE + 1u, "t.json", a, &v, &n, &e),
                 OP_ERANGE);
    free(b.p);
    free(pts), free(t64), free(tm), free(n64), free(n10k);
    op_arena_destroy(a);
}

Test(volumes_json, files)
{
    op_arena *a = op_arena_create(0);
    op_volume *v;
    int n;
    op_err e;
    cr_assert_eq(op_volumes_json_read_file("/nonexistent/v.json", a, &v, &n, &e), OP_EIO);
    cr_assert(strstr(e.msg, "/nonexistent/v.json"), "%s", e.msg);
    char path[] = "/tmp/op_vjson_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, good, strlen(good)), (ssize_t)strlen(good));
    cr_assert_eq(op_volumes_json_read_file(path, a, &v, &n, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(n, 4);
    cr_assert_eq(ftruncate(fd, OP_MAX_VOLUMES_FILE + 1), 0);
    cr_assert_eq(op_volumes_json_read_file(path, a, &v, &n, &e), OP_ERANGE);
    close(fd);
    unlink(path);
    op_arena_destroy(a);
}

/* Seeded random damage to a good file: a clear refusal or a set that validates. */
Test(volumes_json, damaged_files_never_crash, .timeout = 120)
{
    op_arena *a = op_arena_create(0);
    op_test_rng g = {11};
    size_t len = strlen(good);
    char *t = malloc(len + 1);
    int accepted = 0;
    static const char bytes[] = "[]{},:\"\\-+.eE0123456789 \nabtu";
    for (int round = 0; round < 20000; round++) {
        memcpy(t, good, len + 1);
        int edits = op_test_rand_int(&g, 1, 4);
        size_t n = len;
        for (int k = 0; k < edits; k++) {
            if (n == 0)
                break;
            size_t at = (size_t)op_test_rand_int(&g, 0, (int)n - 1);
            int what = op_test_rand_int(&g, 0, 2);
            if (what == 0)
                t[at] = bytes[op_test_rand_int(&g, 0, (int)sizeof bytes - 2)];
            else if (what == 1)
                t[at] = (char)op_test_rand_int(&g, 0, 255);
            else
                n = at; /* cut */
        }
        op_volume *v;
        int nv;
        op_err e;
        op_arena_reset(a);
        op_status st = op_volumes_json_parse(t, n, "t.json", a, &v, &nv, &e);
        if (st == OP_OK) {
            accepted++;
            for (int i = 0; i < nv; i++)
                cr_assert_eq(op_volume_validate(&v[i], &e), OP_OK, "%s", e.msg);
        } else {
            cr_assert(strncmp(e.msg, "t.json: byte ", 13) == 0, "%s", e.msg);
        }
    }
    cr_assert_gt(accepted, 10);
    free(t);
    op_arena_destroy(a);
}
