/*
 * onepathd refuses bad volumes (protocol §3.5, §5.4; build3d-spans.md §6.2): every rule of
 * the volume map and of §6.2, an unknown mode or kind, NaN and infinities (a msgpack float
 * carries them), a prism of 10^6 points, a name of 10 kB, two volumes of one name in a
 * level.put, more than OP_MAX_VOLUMES; each gets the error code of its kind and a message
 * naming the field, and nothing already accepted changes: the level's version, volumes and
 * every tile are as before.
 */
#include <ctype.h>
#include <math.h>
#include <msgpack.h>

#include "onepath/limits.h"
#include "onepath/rpc.h"
#include "op_daemon_test.h"
#include "op_rpc_test.h"

#define LEVEL "bad"

/* ---- JSON-like text to msgpack, for readable cases: objects, arrays, strings, numbers
 * (with '.' or an exponent: float64; else an integer), true, false, null, and the words
 * nan, inf, -inf (float64), which JSON lacks. Duplicate keys are kept. ---- */

static const char *jskip(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

static const char *jvalue(msgpack_packer *pk, const char *p);

static const char *jcount(const char *p, char close, uint32_t *n)
{
    /* Counts the items of the container starting after p's opening bracket. */
    int depth = 0, in_str = 0;
    *n = 0;
    const char *q = jskip(p);
    if (*q == close)
        return q;
    *n = 1;
    for (; *q; q++) {
        if (in_str) {
            in_str = *q != '"';
            continue;
        }
        if (*q == '"')
            in_str = 1;
        else if (*q == '[' || *q == '{')
            depth++;
        else if (*q == ']' || *q == '}') {
            if (depth-- == 0)
                break;
        } else if (*q == ',' && depth == 0)
            (*n)++;
    }
    return q;
}

static const char *jstring(msgpack_packer *pk, const char *p)
{
    const char *q = strchr(p + 1, '"');
    cr_assert_not_null(q);
    msgpack_pack_str_with_body(pk, p + 1, (size_t)(q - p - 1));
    return q + 1;
}

static const char *jvalue(msgpack_packer *pk, const char *p)
{
    p = jskip(p);
    uint32_t n;
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        jcount(p + 1, close, &n);
        if (close == '}')
            msgpack_pack_map(pk, n);
        else
            msgpack_pack_array(pk, n);
        p = jskip(p + 1);
        for (uint32_t i = 0; i < n; i++) {
            if (close == '}') {
                p = jstring(pk, jskip(p));
                p = jskip(p);
                cr_assert_eq(*p, ':');
                p++;
            }
            p = jskip(jvalue(pk, p));
            if (*p == ',')
                p++;
        }
        p = jskip(p);
        cr_assert_eq(*p, close, "bad test text at '%s'", p);
        return p + 1;
    }
    if (*p == '"')
        return jstring(pk, p);
    if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
        (*p == 't' ? msgpack_pack_true : msgpack_pack_false)(pk);
        return p + (*p == 't' ? 4 : 5);
    }
    if (!strncmp(p, "null", 4)) {
        msgpack_pack_nil(pk);
        return p + 4;
    }
    if (!strncmp(p, "nan", 3)) {
        msgpack_pack_double(pk, NAN);
        return p + 3;
    }
    if (!strncmp(p, "inf", 3) || !strncmp(p, "-inf", 4)) {
        msgpack_pack_double(pk, *p == '-' ? -INFINITY : INFINITY);
        return p + (*p == '-' ? 4 : 3);
    }
    char *end;
    size_t len = strspn(p, "+-0123456789.eE");
    cr_assert_gt(len, 0, "bad test text at '%s'", p);
    if (memchr(p, '.', len) || memchr(p, 'e', len) || memchr(p, 'E', len))
        msgpack_pack_double(pk, strtod(p, &end));
    else
        msgpack_pack_int64(pk, strtoll(p, &end, 10));
    return p + len;
}

/* ---- requests and replies ---- */

typedef void (*value_fn)(msgpack_packer *pk, const void *ctx);

static void pack_text(msgpack_packer *pk, const void *ctx)
{
    const char *end = jskip(jvalue(pk, ctx));
    cr_assert_eq(*end, '\0', "trailing test text '%s'", end);
}

/* {v, id, method, params: {level: L, <key>: value}} */
static void request(msgpack_sbuffer *sb, const char *method, const char *level, const char *key,
                    value_fn fn, const void *ctx)
{
    msgpack_sbuffer_init(sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    opt_pack_head(&pk, 4, 42, method);
    op_rpc_pack_key(&pk, "params");
    msgpack_pack_map(&pk, key ? 2 : 1);
    op_rpc_pack_key(&pk, "level");
    op_rpc_pack_key(&pk, level);
    if (key) {
        op_rpc_pack_key(&pk, key);
        fn(&pk, ctx);
    }
}

typedef struct reply {
    int ok, code;
    char msg[OP_ERR_MSG_MAX];
} reply;

static reply send_req(op_client *c, msgpack_sbuffer *sb)
{
    reply r = {0};
    uint8_t *raw;
    size_t n;
    op_err e;
    cr_assert_eq(op_client_call_raw(c, sb->data, sb->size, OPT_TIMEOUT_MS, &raw, &n, &e), OP_OK,
                 "no reply: %s", e.msg);
    msgpack_sbuffer_destroy(sb);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    cr_assert_eq(msgpack_unpack_next(&u, (const char *)raw, n, &off), MSGPACK_UNPACK_SUCCESS);
    r.ok = op_rpc_get(&u.data, "ok")->via.boolean;
    if (!r.ok) {
        const msgpack_object *er = op_rpc_get(&u.data, "error");
        r.code = (int)op_rpc_get(er, "code")->via.u64;
        const msgpack_object *m = op_rpc_get(er, "message");
        snprintf(r.msg, sizeof r.msg, "%.*s", (int)m->via.str.size, m->via.str.ptr);
    }
    msgpack_unpacked_destroy(&u);
    free(raw);
    return r;
}

/* The reply must be the error `code` and its message hold every |-separated part of
 * `names` (the field, the volume). */
static void expect(reply r, op_status code, const char *names, const char *what)
{
    cr_assert(!r.ok, "%s: accepted", what);
    cr_assert_eq(r.code, (int)code, "%s: %s, want %s: %s", what, op_status_name(r.code),
                 op_status_name(code), r.msg);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names);
    for (char *tok = strtok(buf, "|"); tok; tok = strtok(NULL, "|"))
        cr_assert(strstr(r.msg, tok), "%s: the message '%s' does not name '%s'", what, r.msg, tok);
    cr_assert_lt(strlen(r.msg), 400, "%s: a message of %zu bytes", what, strlen(r.msg));
}

static reply volume_put_text(op_client *c, const char *level, const char *text)
{
    msgpack_sbuffer sb;
    request(&sb, "volume.put", level, "volume", pack_text, text);
    return send_req(c, &sb);
}

/* ---- the cases ---- */

typedef struct bad {
    const char *text;
    op_status code;
    const char *names;
} bad;

#define BOX   "\"kind\": \"box\", \"bmin\": [0, 0, 0], \"bmax\": [1, 1, 1]"
#define CYL   "\"kind\": \"cylinder\", \"center\": [2, 2], \"radius\": 1.5"
#define PRISM "\"kind\": \"prism\""

static const bad cases[] = {
    /* the map and its keys */
    {"[1, 2]", OP_EPROTO, "map"},
    {"{\"mode\": \"area\", \"area\": 1, " BOX "}", OP_EPROTO, "name"},
    {"{\"name\": 7, \"mode\": \"area\", \"area\": 1, " BOX "}", OP_EPROTO, "name"},
    {"{\"name\": \".hidden\", \"mode\": \"area\", \"area\": 1, " BOX "}", OP_EINVAL, "name"},
    {"{\"name\": \"a b\", \"mode\": \"area\", \"area\": 1, " BOX "}", OP_EINVAL, "name"},
    {"{\"name\": \"\", \"mode\": \"area\", \"area\": 1, " BOX "}", OP_EINVAL, "name"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"colour\": 3, " BOX "}", OP_EPROTO,
     "volume 'v'|colour"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"area\": 2, " BOX "}", OP_EPROTO,
     "volume 'v'|area"},
    {"{\"name\": \"v\", \"name\": \"w\", \"mode\": \"area\", \"area\": 1, " BOX "}", OP_EPROTO,
     "name"},
    /* mode, kind, area */
    {"{\"name\": \"v\", \"area\": 1, " BOX "}", OP_EPROTO, "volume 'v'|mode"},
    {"{\"name\": \"v\", \"mode\": \"solid\", \"area\": 1, " BOX "}", OP_EINVAL, "mode|solid"},
    {"{\"name\": \"v\", \"mode\": 1, \"area\": 1, " BOX "}", OP_EPROTO, "mode"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"sphere\"}", OP_EINVAL,
     "kind|sphere"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"bmin\": [0, 0, 0]}", OP_EPROTO, "kind"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"radius\": 2, " BOX "}", OP_EPROTO,
     "radius"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"y\": [0, 1], " BOX "}", OP_EPROTO, "y"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"bmin\": [0, 0, 0], " CYL
     ", \"y\": [0, 1]}",
     OP_EPROTO, "bmin"},
    {"{\"name\": \"v\", \"mode\": \"area\", " BOX "}", OP_EPROTO, "volume 'v'|area"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 64, " BOX "}", OP_ERANGE, "area"},
    {"{\"name\": \"v\", \"mode\": \"obstacle\", \"area\": -1, " BOX "}", OP_ERANGE, "area"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 2.0, " BOX "}", OP_EPROTO, "area"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": \"3\", " BOX "}", OP_EPROTO, "area"},
    /* box */
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [0, 0, 0]}",
     OP_EPROTO, "bmax"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [0, 0], "
     "\"bmax\": [1, 1, 1]}",
     OP_EPROTO, "bmin"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": 0, "
     "\"bmax\": [1, 1, 1]}",
     OP_EPROTO, "bmin"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [0, \"0\", "
     "0], \"bmax\": [1, 1, 1]}",
     OP_EPROTO, "bmin[1]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [0, nan, "
     "0], \"bmax\": [1, 1, 1]}",
     OP_EINVAL, "volume 'v'|bmin[1]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [0, 0, 0], "
     "\"bmax\": [inf, 1, 1]}",
     OP_EINVAL, "bmax[0]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [-inf, 0, "
     "0], \"bmax\": [1, 1, 1]}",
     OP_EINVAL, "bmin[0]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [0, 0, "
     "-2e12], \"bmax\": [1, 1, 1]}",
     OP_ERANGE, "bmin[2]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [2, 0, 0], "
     "\"bmax\": [1, 1, 1]}",
     OP_ERANGE, "bmin[0]|bmax[0]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [0, 3, 0], "
     "\"bmax\": [1, 1, 1]}",
     OP_ERANGE, "bmin[1]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"box\", \"bmin\": [0, 0, 5], "
     "\"bmax\": [1, 1, 1]}",
     OP_ERANGE, "bmin[2]"},
    /* cylinder */
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, " CYL "}", OP_EPROTO, "y"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"cylinder\", \"center\": [2, "
     "2], \"y\": [0, 1]}",
     OP_EPROTO, "radius"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"cylinder\", \"center\": [2, "
     "2], \"radius\": 0, \"y\": [0, 1]}",
     OP_ERANGE, "radius"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"cylinder\", \"center\": [2, "
     "2], \"radius\": -1.5, \"y\": [0, 1]}",
     OP_ERANGE, "radius"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"cylinder\", \"center\": [2, "
     "2], \"radius\": nan, \"y\": [0, 1]}",
     OP_EINVAL, "radius"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"cylinder\", \"center\": [nan, "
     "2], \"radius\": 1, \"y\": [0, 1]}",
     OP_EINVAL, "center[0]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, " CYL ", \"y\": [2, 1]}", OP_ERANGE, "y"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, " CYL ", \"y\": [0, inf]}", OP_EINVAL,
     "y[1]"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, " CYL ", \"y\": [0]}", OP_EPROTO, "y"},
    {"{\"name\": \"v\", \"mode\": \"area\", \"area\": 1, \"kind\": \"cylinder\", \"center\": [2, "
     "2], \"radius\": 2e12, \"y\": [0, 1]}",
     OP_ERANGE, "radius"},
    /* prism */
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM ", \"y\": [0, 1]}", OP_EPROTO, "points"},
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM ", \"points\": [[0, 0], [1, 0]], \"y\": "
     "[0, 1]}",
     OP_ERANGE, "points"},
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], [1, 0], [1]], \"y\": [0, 1]}",
     OP_EPROTO, "points[2]"},
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], 3, [1, 1]], \"y\": [0, 1]}",
     OP_EPROTO, "points[1]"},
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], [1, nan], [1, 1]], \"y\": [0, 1]}",
     OP_EINVAL, "points[1][1]"},
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], [1, 0], [3e12, 1]], \"y\": [0, 1]}",
     OP_ERANGE, "points[2][0]"},
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], [0, 1], [1, 0]], \"y\": [0, 1]}",
     OP_EINVAL, "volume 'v'|points"}, /* clockwise */
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], [1, 0], [1, 0], [0, 1]], \"y\": [0, 1]}",
     OP_EINVAL, "points"}, /* a repeated point */
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], [2, 0], [1, 0], [1, 1]], \"y\": [0, 1]}",
     OP_EINVAL, "points"}, /* turns back along an edge */
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], [2, 0], [2, 2], [0, 2], [1, 1]], \"y\": [0, 1]}",
     OP_EINVAL, "points"}, /* not convex */
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM ", \"points\": [[10, 0], [-8.09, 5.88], "
     "[3.09, -9.51], [3.09, 9.51], [-8.09, -5.88]], \"y\": [0, 1]}",
     OP_EINVAL, "points|wind"}, /* a pentagram: turns left everywhere, winds twice */
    {"{\"name\": \"v\", \"mode\": \"obstacle\", " PRISM
     ", \"points\": [[0, 0], [1, 0], [1, 1]], \"y\": [3, 1]}",
     OP_ERANGE, "y"},
};

/* A prism of n points (n > 64: refused before a point is read). */
static void pack_big_prism(msgpack_packer *pk, const void *ctx)
{
    uint32_t n = *(const uint32_t *)ctx;
    msgpack_pack_map(pk, 5);
    op_rpc_pack_key(pk, "name");
    op_rpc_pack_key(pk, "huge");
    op_rpc_pack_key(pk, "mode");
    op_rpc_pack_key(pk, "obstacle");
    op_rpc_pack_key(pk, "kind");
    op_rpc_pack_key(pk, "prism");
    op_rpc_pack_key(pk, "points");
    msgpack_pack_array(pk, n);
    for (uint32_t i = 0; i < n; i++) {
        msgpack_pack_array(pk, 2);
        msgpack_pack_double(pk, cos(i * 1e-6));
        msgpack_pack_double(pk, sin(i * 1e-6));
    }
    op_rpc_pack_key(pk, "y");
    msgpack_pack_array(pk, 2);
    msgpack_pack_double(pk, 0);
    msgpack_pack_double(pk, 1);
}

/* A box whose name is n bytes of 'a'. */
static void pack_long_name(msgpack_packer *pk, const void *ctx)
{
    size_t n = *(const size_t *)ctx;
    char *name = malloc(n);
    memset(name, 'a', n);
    msgpack_pack_map(pk, 5);
    op_rpc_pack_key(pk, "name");
    msgpack_pack_str_with_body(pk, name, n);
    jvalue(pk, "\"mode\"");
    jvalue(pk, "\"obstacle\"");
    jvalue(pk, "\"kind\"");
    jvalue(pk, "\"box\"");
    jvalue(pk, "\"bmin\"");
    jvalue(pk, "[0, 0, 0]");
    jvalue(pk, "\"bmax\"");
    jvalue(pk, "[1, 1, 1]");
    free(name);
}

/* level.put of the test level: a floor, the given volumes text (NULL: none). */
typedef struct level_put_arg {
    const opt_soup *floor;
    const char *volumes; /* JSON-like text of the array */
    int nboxes;          /* or: this many small boxes far away, named b00000... */
} level_put_arg;

static void pack_far_boxes(msgpack_packer *pk, int n)
{
    msgpack_pack_array(pk, (size_t)n);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "b%05d", i);
        msgpack_pack_map(pk, 5);
        op_rpc_pack_key(pk, "name");
        op_rpc_pack_key(pk, name);
        op_rpc_pack_key(pk, "mode");
        op_rpc_pack_key(pk, "obstacle");
        op_rpc_pack_key(pk, "kind");
        op_rpc_pack_key(pk, "box");
        op_rpc_pack_key(pk, "bmin");
        msgpack_pack_array(pk, 3);
        msgpack_pack_double(pk, 1000.0 + i);
        msgpack_pack_double(pk, 0.0);
        msgpack_pack_double(pk, 1000.0);
        op_rpc_pack_key(pk, "bmax");
        msgpack_pack_array(pk, 3);
        msgpack_pack_double(pk, 1000.5 + i);
        msgpack_pack_double(pk, 1.0);
        msgpack_pack_double(pk, 1000.5);
    }
}

static reply level_put(op_client *c, const char *level, const level_put_arg *a)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    opt_pack_head(&pk, 4, 43, "level.put");
    op_rpc_pack_key(&pk, "params");
    msgpack_pack_map(&pk, 4);
    op_rpc_pack_key(&pk, "level");
    op_rpc_pack_key(&pk, level);
    op_rpc_pack_key(&pk, "settings");
    msgpack_pack_map(&pk, 0);
    op_rpc_pack_key(&pk, "meshes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 3);
    op_rpc_pack_key(&pk, "name");
    op_rpc_pack_key(&pk, "floor");
    op_rpc_pack_key(&pk, "verts");
    msgpack_pack_bin_with_body(&pk, a->floor->v, a->floor->nv * 12);
    op_rpc_pack_key(&pk, "tris");
    msgpack_pack_bin_with_body(&pk, a->floor->t, a->floor->nt * 12);
    op_rpc_pack_key(&pk, "volumes");
    if (a->volumes)
        pack_text(&pk, a->volumes);
    else
        pack_far_boxes(&pk, a->nboxes);
    return send_req(c, &sb);
}

#define GOOD_DOOR                                                                                  \
    "{\"name\": \"door\", \"mode\": \"obstacle\", \"kind\": \"box\", \"bmin\": [4, -1, 4], "       \
    "\"bmax\": [6, 2, 6]}"
#define GOOD_POOL                                                                                  \
    "{\"name\": \"pool\", \"mode\": \"area\", \"area\": 5, \"kind\": \"cylinder\", \"center\": "   \
    "[12, 12], \"radius\": 2, \"y\": [-1, 1]}"

/* The state nothing refused may change: version, volumes, tiles. */
static void check_unchanged(op_client *c, uint64_t v, const opt_ref *ref)
{
    op_client_volumes vs;
    op_err e;
    cr_assert_eq(op_client_volumes_get(c, LEVEL, OPT_TIMEOUT_MS, &vs, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(vs.version, v, "a refused edit changed the version");
    cr_assert_eq(vs.n, 2);
    cr_assert_str_eq(vs.v[0].name, "door");
    cr_assert(vs.v[0].bmin[0] == 4 && vs.v[0].bmax[2] == 6 && vs.v[0].area == 0);
    cr_assert_str_eq(vs.v[1].name, "pool");
    cr_assert(vs.v[1].radius == 2 && vs.v[1].area == 5);
    op_client_volumes_free(&vs);
    op_client_changes ch;
    cr_assert_eq(op_client_changes_since(c, LEVEL, v, 0, OPT_TIMEOUT_MS, &ch, &e), OP_OK);
    cr_assert_eq(ch.ntiles, 0);
    op_client_changes_free(&ch);
    opt_check_level(c, LEVEL, ref);
}

Test(daemon_volumes_bad, every_bad_volume_is_refused_naming_the_field, .timeout = 300)
{
    opt_daemon d;
    opt_daemon_init(&d);
    const char *const extra[] = {"--no-fsync", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    opt_soup floor = {0};
    opt_soup_quad(&floor, 0, 0, 16, 16, 0);
    level_put_arg la = {&floor, "[" GOOD_POOL ", " GOOD_DOOR "]", 0};
    reply r = level_put(c, LEVEL, &la);
    cr_assert(r.ok, "%s", r.msg);
    /* The reference: the floor with the two volumes. */
    op_volume vols[2];
    memset(vols, 0, sizeof vols);
    snprintf(vols[0].name, sizeof vols[0].name, "door");
    vols[0].kind = OP_VOLUME_BOX;
    vols[0].mode = OP_VOLUME_OBSTACLE;
    double dmin[3] = {4, -1, 4}, dmax[3] = {6, 2, 6};
    memcpy(vols[0].bmin, dmin, sizeof dmin);
    memcpy(vols[0].bmax, dmax, sizeof dmax);
    snprintf(vols[1].name, sizeof vols[1].name, "pool");
    vols[1].kind = OP_VOLUME_CYLINDER;
    vols[1].mode = OP_VOLUME_AREA;
    vols[1].area = 5;
    vols[1].bmin[0] = vols[1].bmin[2] = 12;
    vols[1].bmax[0] = 2;
    vols[1].bmin[1] = -1;
    vols[1].bmax[1] = 1;
    op_soup soup = {floor.v, 3 * floor.nv, floor.t, 3 * floor.nt, NULL};
    op_settings s;
    op_settings_default(&s);
    opt_ref ref, plain;
    opt_ref_bake_volumes(&soup, &s, vols, 2, &ref);
    opt_ref_bake(&soup, &s, &plain);
    int differ = 0;
    for (int i = 0; i < ref.n; i++)
        differ += opt_ref_differs(&ref, &plain, ref.t[i].tx, ref.t[i].tz);
    cr_assert_gt(differ, 1, "the two volumes change no tile");
    opt_ref_free(&plain);
    check_unchanged(c, 1, &ref);

    /* volume.put of each bad map, as a new volume and as a replacement of "door". */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *text = cases[i].text;
        char what[64];
        snprintf(what, sizeof what, "case %zu", i);
        expect(volume_put_text(c, LEVEL, text), cases[i].code, cases[i].names, what);
        /* The same map inside a level.put: refused naming its index; the level stays. */
        char list[1400];
        snprintf(list, sizeof list, "[" GOOD_DOOR ", " GOOD_POOL ", %s]", text);
        level_put_arg bl = {&floor, list, 0};
        char names[128];
        snprintf(names, sizeof names, "volumes[2]|%s", cases[i].names);
        expect(level_put(c, LEVEL, &bl), cases[i].code, names, what);
    }
    /* A name of 10 kB: refused by its length, not echoed. */
    size_t long_name = 10240;
    msgpack_sbuffer sb;
    request(&sb, "volume.put", LEVEL, "volume", pack_long_name, &long_name);
    expect(send_req(c, &sb), OP_EINVAL, "name|10240 bytes", "a 10 kB name");
    /* 65 points, and 10^6 points: OP_ELIMIT before any point is read. */
    uint32_t npts = 65;
    request(&sb, "volume.put", LEVEL, "volume", pack_big_prism, &npts);
    expect(send_req(c, &sb), OP_ELIMIT, "volume 'huge'|points|65", "65 points");
    npts = 1000000;
    request(&sb, "volume.put", LEVEL, "volume", pack_big_prism, &npts);
    double t0 = opt_now_ms();
    expect(send_req(c, &sb), OP_ELIMIT, "volume 'huge'|points|1000000", "10^6 points");
    fprintf(stderr, "10^6-point prism refused in %.0f ms\n", opt_now_ms() - t0);
    /* Two volumes of one name in a level.put; a level.put's volumes not an array. */
    level_put_arg dup = {&floor, "[" GOOD_DOOR ", " GOOD_POOL ", " GOOD_DOOR "]", 0};
    expect(level_put(c, LEVEL, &dup), OP_EINVAL, "volumes[0]|volumes[2]|door", "duplicate names");
    level_put_arg notarray = {&floor, "{\"a\": 1}", 0};
    expect(level_put(c, LEVEL, &notarray), OP_EPROTO, "volumes", "volumes not an array");
    /* More than OP_MAX_VOLUMES in a level.put. */
    level_put_arg many = {&floor, NULL, OP_MAX_VOLUMES + 1};
    expect(level_put(c, LEVEL, &many), OP_ELIMIT, "OP_MAX_VOLUMES", "65537 volumes");
    /* The other params of volume.put and volume.drop. */
    request(&sb, "volume.put", LEVEL, NULL, NULL, NULL);
    expect(send_req(c, &sb), OP_EPROTO, "volume", "no volume");
    request(&sb, "volume.put", LEVEL, "extra", pack_text, "1");
    expect(send_req(c, &sb), OP_EPROTO, "extra", "an unknown param");
    request(&sb, "volume.drop", LEVEL, "name", pack_text, "\"../x\"");
    expect(send_req(c, &sb), OP_EINVAL, "name", "a bad name to drop");
    request(&sb, "volume.drop", LEVEL, "name", pack_text, "5");
    expect(send_req(c, &sb), OP_EPROTO, "name", "a name that is not a str");
    expect(volume_put_text(c, "nowhere", GOOD_POOL), OP_ENOTFOUND, "nowhere", "no such level");
    request(&sb, "volume.drop", "nowhere", "name", pack_text, "\"pool\"");
    expect(send_req(c, &sb), OP_ENOTFOUND, "nowhere", "drop on no such level");
    /* A refused level.put of a new level leaves no level. */
    level_put_arg fresh = {&floor, "[" GOOD_DOOR ", " GOOD_DOOR "]", 0};
    expect(level_put(c, "fresh", &fresh), OP_EINVAL, "door", "a new level with duplicates");
    op_client_level_info li;
    op_err e;
    cr_assert_eq(op_client_level_info_get(c, "fresh", OPT_TIMEOUT_MS, &li, &e), OP_ENOTFOUND);

    /* Nothing accepted changed, and the level still takes good edits. */
    check_unchanged(c, 1, &ref);
    r = volume_put_text(c, LEVEL, GOOD_POOL);
    cr_assert(r.ok, "%s", r.msg);
    check_unchanged(c, 1, &ref);
    opt_ref_free(&ref);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&floor);
}

Test(daemon_volumes_bad, a_level_holds_at_most_op_max_volumes, .timeout = 300)
{
    opt_daemon d;
    opt_daemon_init(&d);
    const char *const extra[] = {"--no-fsync", NULL};
    opt_daemon_start(&d, extra);
    op_client *c = opt_connect(&d);
    opt_soup floor = {0};
    opt_soup_quad(&floor, 0, 0, 16, 16, 0);
    level_put_arg full = {&floor, NULL, OP_MAX_VOLUMES};
    reply r = level_put(c, "full", &full);
    cr_assert(r.ok, "%s", r.msg);
    /* A new volume would make 65537: refused; replacing one is fine. */
    r = volume_put_text(c, "full", GOOD_POOL);
    expect(r, OP_ELIMIT, "pool|OP_MAX_VOLUMES", "a 65537th volume");
    r = volume_put_text(c, "full",
                        "{\"name\": \"b00007\", \"mode\": \"area\", \"area\": 3, \"kind\": "
                        "\"box\", \"bmin\": [2, -1, 2], \"bmax\": [3, 1, 3]}");
    cr_assert(r.ok, "%s", r.msg);
    op_client_volumes vs;
    op_err e;
    cr_assert_eq(op_client_volumes_get(c, "full", OPT_TIMEOUT_MS, &vs, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(vs.n, OP_MAX_VOLUMES);
    cr_assert_eq(vs.version, 2);
    cr_assert_str_eq(vs.v[7].name, "b00007");
    cr_assert_eq(vs.v[7].area, 3);
    op_client_volumes_free(&vs);
    /* The tiles are those of the floor with that one volume (the others are far away). */
    op_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "b00007");
    v.kind = OP_VOLUME_BOX;
    v.area = 3;
    double bmin[3] = {2, -1, 2}, bmax[3] = {3, 1, 3};
    memcpy(v.bmin, bmin, sizeof bmin);
    memcpy(v.bmax, bmax, sizeof bmax);
    op_soup soup = {floor.v, 3 * floor.nv, floor.t, 3 * floor.nt, NULL};
    op_settings s;
    op_settings_default(&s);
    opt_ref ref;
    opt_ref_bake_volumes(&soup, &s, &v, 1, &ref);
    opt_check_level(c, "full", &ref);
    opt_ref_free(&ref);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
    opt_soup_free(&floor);
}
