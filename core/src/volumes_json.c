/*
 * The volumes file (docs/spec/input-formats.md §6): JSON text → op_volume array, and back.
 *
 * A reader of exactly this schema, not a general JSON parser: it knows at every point what
 * may come next (the array, an object, a key, a number, a list of numbers), so nesting can
 * never go deeper than the schema's four levels and nothing is held but the volumes. Each
 * error names the byte offset, the volume's index and (once read) its name, and the key.
 * Input: at most OP_MAX_VOLUMES_FILE bytes, OP_MAX_VOLUMES objects, 64 points a prism.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_internal.h"
#include "onepath/limits.h"
#include "onepath/rebuild.h"
#include "onepath/volumes_json.h"
#include "volumes_internal.h"

#define MAX_NUMBER_CHARS 64

typedef struct rd {
    const char *s;
    size_t n, pos;
    const char *what;
    int vi;            /* index of the volume being read, -1 outside one */
    const char *vname; /* its name once read (nbuf), else NULL */
    const char *key;   /* the key whose value is being read */
    op_err *err;
    char nbuf[OP_MAX_VOLUME_NAME + 1];
} rd;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static op_status
fail(const rd *r, size_t at, op_status code, const char *fmt, ...)
{
    char msg[OP_ERR_MSG_MAX], who[OP_MAX_VOLUME_NAME + 48] = "", key[48] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->vi >= 0 && r->vname)
        snprintf(who, sizeof who, "volume %d \"%s\": ", r->vi, r->vname);
    else if (r->vi >= 0)
        snprintf(who, sizeof who, "volume %d: ", r->vi);
    if (r->key)
        snprintf(key, sizeof key, "%s: ", r->key);
    return op_err_set(r->err, code, "%s: byte %zu: %s%s%s", r->what, at, who, key, msg);
}

static void ws(rd *r)
{
    while (r->pos < r->n && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' || r->s[r->pos] == '\n' ||
                             r->s[r->pos] == '\r'))
        r->pos++;
}

/* What is at the cursor, for messages. */
static const char *found(const rd *r, char *buf, size_t n)
{
    if (r->pos >= r->n)
        return "the end of the text";
    unsigned char c = (unsigned char)r->s[r->pos];
    if (c > 0x20 && c < 0x7f)
        snprintf(buf, n, "'%c'", c);
    else
        snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

/* Skips whitespace; 1 when the next byte is c (consumed). */
static int accept(rd *r, char c)
{
    ws(r);
    if (r->pos < r->n && r->s[r->pos] == c) {
        r->pos++;
        return 1;
    }
    return 0;
}

static op_status expect(rd *r, char c, const char *what)
{
    if (accept(r, c))
        return OP_OK;
    char b[16];
    return fail(r, r->pos, OP_EINVAL, "expected %s, found %s", what, found(r, b, sizeof b));
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A string of at most OP_MAX_VOLUME_NAME ASCII bytes into buf (§6.3). */
static op_status string(rd *r, char buf[OP_MAX_VOLUME_NAME + 1])
{
    op_status st = expect(r, '"', "a string");
    if (st != OP_OK)
        return st;
    size_t len = 0;
    for (;;) {
        size_t at = r->pos;
        if (r->pos >= r->n)
            return fail(r, at, OP_EINVAL, "the text ends inside a string");
        unsigned char c = (unsigned char)r->s[r->pos++];
        if (c == '"')
            break;
        if (c < 0x20)
            return fail(r, at, OP_EINVAL, "control byte 0x%02x in a string", c);
        if (c >= 0x80)
            return fail(r, at, OP_EINVAL, "byte 0x%02x: strings are ASCII", c);
        if (c == '\\') {
            if (r->pos >= r->n)
                return fail(r, at, OP_EINVAL, "the text ends inside an escape");
            char e = r->s[r->pos++];
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *k = e ? strchr(from, e) : NULL;
            if (k) {
                c = (unsigned char)to[k - from];
            } else if (e == 'u') {
                int v = 0;
                for (int i = 0; i < 4; i++) {
                    int h = r->pos < r->n ? hexval(r->s[r->pos]) : -1;
                    if (h < 0)
                        return fail(r, at, OP_EINVAL, "\\u wants four hex digits");
                    v = v * 16 + h;
                    r->pos++;
                }
                if (v == 0 || v >= 0x80)
                    return fail(r, at, OP_EINVAL, "\\u%04x: only \\u0001..\\u007f are allowed", v);
                c = (unsigned char)v;
            } else {
                return fail(r, at, OP_EINVAL, "unknown escape \\%c", e > 0x20 ? e : '?');
            }
        }
        if (len == OP_MAX_VOLUME_NAME)
            return fail(r, at, OP_EINVAL, "string longer than %d bytes", OP_MAX_VOLUME_NAME);
        buf[len++] = (char)c;
    }
    buf[len] = '\0';
    return OP_OK;
}

static int digit(const rd *r, size_t i)
{
    return i < r->n && r->s[i] >= '0' && r->s[i] <= '9';
}

/* A JSON number (§6.4); integer_only refuses a fraction or exponent. */
static op_status number(rd *r, double *out, int integer_only)
{
    ws(r);
    size_t at = r->pos, i = at;
    if (i < r->n && r->s[i] == '-')
        i++;
    if (!digit(r, i)) {
        char b[16];
        r->pos = i;
        return fail(r, i, OP_EINVAL, "expected %s, found %s",
                    integer_only ? "an integer" : "a number", found(r, b, sizeof b));
    }
    if (r->s[i] == '0')
        i++;
    else
        while (digit(r, i))
            i++;
    if (i < r->n && (r->s[i] == '.' || r->s[i] == 'e' || r->s[i] == 'E') && integer_only)
        return fail(r, at, OP_EINVAL, "expected an integer (no fraction or exponent)");
    if (i < r->n && r->s[i] == '.') {
        if (!digit(r, ++i))
            return fail(r, i, OP_EINVAL, "a digit must follow the decimal point");
        while (digit(r, i))
            i++;
    }
    if (i < r->n && (r->s[i] == 'e' || r->s[i] == 'E')) {
        i++;
        if (i < r->n && (r->s[i] == '+' || r->s[i] == '-'))
            i++;
        if (!digit(r, i))
            return fail(r, i, OP_EINVAL, "the exponent has no digits");
        while (digit(r, i))
            i++;
    }
    if (i - at > MAX_NUMBER_CHARS)
        return fail(r, at, OP_EINVAL, "number longer than %d characters", MAX_NUMBER_CHARS);
    char buf[MAX_NUMBER_CHARS + 1];
    memcpy(buf, r->s + at, i - at);
    buf[i - at] = '\0';
    r->pos = i;
    /* strtod rounds to nearest; the grammar above is a subset of what it reads. */
    double v = strtod(buf, NULL);
    if (isinf(v))
        return fail(r, at, OP_ERANGE, "%s is beyond the largest double", buf);
    *out = v;
    return OP_OK;
}

/* [a, b, ...] of exactly k numbers, each within +-OP_MAX_ORIGIN; key names the array
 * ("bmin"), elements are named key[i] in messages. */
static op_status numbers(rd *r, const char *key, int k, double *out)
{
    op_status st = expect(r, '[', "'['");
    char name[40];
    for (int i = 0; st == OP_OK && i < k; i++) {
        r->key = key;
        if (i > 0 && (st = expect(r, ',', k == 2 ? "',' (2 numbers)" : "',' (3 numbers)")))
            break;
        snprintf(name, sizeof name, "%s[%d]", key, i);
        r->key = name;
        ws(r);
        size_t at = r->pos;
        if ((st = number(r, &out[i], 0)) == OP_OK && fabs(out[i]) > OP_MAX_ORIGIN)
            st = fail(r, at, OP_ERANGE, "%.17g is beyond +-2^40", out[i]);
    }
    r->key = key;
    if (st == OP_OK && !accept(r, ']')) {
        char b[16];
        st = fail(r, r->pos, OP_EINVAL, "expected ']' after %d numbers, found %s", k,
                  found(r, b, sizeof b));
    }
    return st;
}

enum { K_NAME, K_MODE, K_AREA, K_KIND, K_BMIN, K_BMAX, K_CENTER, K_RADIUS, K_POINTS, K_Y, K_N };
static const char *const key_names[K_N] = {"name", "mode",   "area",   "kind",   "bmin",
                                           "bmax", "center", "radius", "points", "y"};
/* Keys each kind uses besides name, mode, area, kind. */
static const int kind_keys[3][K_N] = {
    [OP_VOLUME_BOX] = {[K_BMIN] = 1, [K_BMAX] = 1},
    [OP_VOLUME_CYLINDER] = {[K_CENTER] = 1, [K_RADIUS] = 1, [K_Y] = 1},
    [OP_VOLUME_PRISM] = {[K_POINTS] = 1, [K_Y] = 1},
};
static const char *const kinds[3] = {"box", "cylinder", "prism"};

typedef struct obj {
    size_t at;          /* offset of '{' */
    size_t key_at[K_N]; /* offset of each key seen */
    int seen[K_N];
    char name[OP_MAX_VOLUME_NAME + 1];
    int kind, mode;
    double area, bmin[3], bmax[3], center[2], radius, y[2];
    int npts;
    double pts[OP_MAX_PRISM_VERTS * 2];
} obj;

/* A string value that must be one of opts[0..n). */
static op_status choice(rd *r, const char *const *opts, int n, int *out)
{
    ws(r);
    size_t at = r->pos;
    char buf[OP_MAX_VOLUME_NAME + 1];
    op_status st = string(r, buf);
    if (st != OP_OK)
        return st;
    for (int i = 0; i < n; i++)
        if (strcmp(buf, opts[i]) == 0) {
            *out = i;
            return OP_OK;
        }
    return fail(r, at, OP_EINVAL, "\"%s\" is not %s", buf,
                n == 2 ? "\"area\" or \"obstacle\"" : "\"box\", \"cylinder\" or \"prism\"");
}

static op_status points(rd *r, obj *o)
{
    op_status st = expect(r, '[', "'['");
    if (st != OP_OK || accept(r, ']'))
        return st;
    char key[24];
    do {
        ws(r);
        if (o->npts == OP_MAX_PRISM_VERTS)
            return fail(r, r->pos, OP_ELIMIT, "more than %d points", OP_MAX_PRISM_VERTS);
        snprintf(key, sizeof key, "points[%d]", o->npts);
        if ((st = numbers(r, key, 2, &o->pts[2 * o->npts])) != OP_OK)
            return st;
        r->key = "points";
        o->npts++;
    } while (accept(r, ','));
    return expect(r, ']', "',' or ']'");
}

static op_status value(rd *r, int k, obj *o)
{
    static const char *const modes[2] = {"area", "obstacle"};
    ws(r);
    size_t at = r->pos;
    op_status st;
    switch (k) {
    case K_NAME:
        if ((st = string(r, o->name)) != OP_OK)
            return st;
        if (!op_volume_name_valid(o->name))
            return fail(r, at, OP_EINVAL,
                        "\"%s\" is not 1..%d bytes of [A-Za-z0-9._-] not starting with '.'",
                        o->name, OP_MAX_VOLUME_NAME);
        memcpy(r->nbuf, o->name, sizeof r->nbuf);
        r->vname = r->nbuf;
        return OP_OK;
    case K_MODE:
        return choice(r, modes, 2, &o->mode);
    case K_KIND:
        return choice(r, kinds, 3, &o->kind);
    case K_AREA:
        if ((st = number(r, &o->area, 1)) != OP_OK)
            return st;
        if (o->area < 0 || o->area > OP_MAX_AREA)
            return fail(r, at, OP_ERANGE, "%.17g is outside [0, %d]", o->area, OP_MAX_AREA);
        return OP_OK;
    case K_BMIN:
        return numbers(r, "bmin", 3, o->bmin);
    case K_BMAX:
        return numbers(r, "bmax", 3, o->bmax);
    case K_CENTER:
        return numbers(r, "center", 2, o->center);
    case K_Y:
        return numbers(r, "y", 2, o->y);
    case K_RADIUS:
        if ((st = number(r, &o->radius, 0)) != OP_OK)
            return st;
        if (!(o->radius > 0.0) || o->radius > OP_MAX_ORIGIN)
            return fail(r, at, OP_ERANGE, "%.17g is not in (0, 2^40]", o->radius);
        return OP_OK;
    default:
        return points(r, o);
    }
}

/* Required keys, keys the kind does not use, ranges between fields (§6.2, in JSON terms). */
static op_status check_keys(rd *r, const obj *o)
{
    static const int always[3] = {K_NAME, K_MODE, K_KIND};
    for (int i = 0; i < 3; i++)
        if (!o->seen[always[i]])
            return fail(r, o->at, OP_EINVAL, "missing \"%s\"", key_names[always[i]]);
    if (o->mode == OP_VOLUME_AREA && !o->seen[K_AREA])
        return fail(r, o->at, OP_EINVAL, "missing \"area\" (required for mode \"area\")");
    for (int k = K_BMIN; k < K_N; k++) {
        if (o->seen[k] && !kind_keys[o->kind][k])
            return fail(r, o->key_at[k], OP_EINVAL, "key \"%s\" is not used by a %s", key_names[k],
                        kinds[o->kind]);
        if (!o->seen[k] && kind_keys[o->kind][k])
            return fail(r, o->at, OP_EINVAL, "missing \"%s\" (required for a %s)", key_names[k],
                        kinds[o->kind]);
    }
    if (o->kind == OP_VOLUME_BOX) {
        for (int i = 0; i < 3; i++)
            if (o->bmin[i] > o->bmax[i]) {
                r->key = "bmin";
                return fail(r, o->key_at[K_BMIN], OP_ERANGE, "bmin[%d] = %.17g > bmax[%d] = %.17g",
                            i, o->bmin[i], i, o->bmax[i]);
            }
    } else if (o->y[0] > o->y[1]) {
        r->key = "y";
        return fail(r, o->key_at[K_Y], OP_ERANGE, "ymin %.17g > ymax %.17g", o->y[0], o->y[1]);
    }
    if (o->kind == OP_VOLUME_PRISM && o->npts < 3) {
        r->key = "points";
        return fail(r, o->key_at[K_POINTS], OP_ERANGE, "%d points, a prism needs 3..%d", o->npts,
                    OP_MAX_PRISM_VERTS);
    }
    return OP_OK;
}

static void to_volume(const obj *o, op_volume *v)
{
    memset(v, 0, sizeof *v);
    memcpy(v->name, o->name, sizeof v->name);
    v->kind = (op_volume_kind)o->kind;
    v->mode = (op_volume_mode)o->mode;
    v->area = o->seen[K_AREA] ? (int)o->area : 0;
    if (o->kind == OP_VOLUME_BOX) {
        memcpy(v->bmin, o->bmin, sizeof v->bmin);
        memcpy(v->bmax, o->bmax, sizeof v->bmax);
        return;
    }
    v->bmin[1] = o->y[0];
    v->bmax[1] = o->y[1];
    if (o->kind == OP_VOLUME_CYLINDER) {
        v->bmin[0] = o->center[0];
        v->bmin[2] = o->center[1];
        v->bmax[0] = o->radius;
    } else {
        v->npts = o->npts;
        memcpy(v->pts, o->pts, (size_t)o->npts * 2 * sizeof *o->pts);
    }
}

static op_status object(rd *r, op_volume *v, size_t *name_at)
{
    obj o;
    memset(&o, 0, sizeof o);
    ws(r);
    o.at = r->pos;
    op_status st = expect(r, '{', "'{' (a volume)");
    if (st != OP_OK || accept(r, '}')) {
        if (st == OP_OK)
            st = fail(r, o.at, OP_EINVAL, "missing \"name\"");
        return st;
    }
    do {
        ws(r);
        size_t at = r->pos;
        char key[OP_MAX_VOLUME_NAME + 1];
        if ((st = string(r, key)) != OP_OK)
            return st;
        int k = 0;
        while (k < K_N && strcmp(key, key_names[k]) != 0)
            k++;
        if (k == K_N)
            return fail(r, at, OP_EINVAL, "unknown key \"%s\"", key);
        if (o.seen[k])
            return fail(r, at, OP_EINVAL, "key \"%s\" repeats", key);
        o.seen[k] = 1;
        o.key_at[k] = at;
        if ((st = expect(r, ':', "':'")) != OP_OK)
            return st;
        r->key = key_names[k];
        if ((st = value(r, k, &o)) != OP_OK)
            return st;
        r->key = NULL;
    } while (accept(r, ','));
    if ((st = expect(r, '}', "',' or '}'")) != OP_OK || (st = check_keys(r, &o)) != OP_OK)
        return st;
    to_volume(&o, v);
    /* Everything §6.2 asks was checked above except convexity; the core's rule decides. */
    op_err ve;
    if (op_volume_validate(v, &ve) != OP_OK) {
        const char *m = strstr(ve.msg, "): ");
        return fail(r, o.at, ve.status, "%s", m ? m + 3 : ve.msg);
    }
    *name_at = o.key_at[K_NAME];
    return OP_OK;
}

/* Two volumes of one name: the pair whose second volume comes first in the file. */
static op_status duplicates(rd *r, const op_volume *v, int n, const size_t *name_at)
{
    int32_t *idx = malloc((size_t)n * 2 * sizeof *idx + 1);
    if (!idx)
        return op_err_set(r->err, OP_ENOMEM, "%s: out of memory checking names", r->what);
    op__volume_order(v, n, idx, idx + n);
    int best = -1, first = -1;
    for (int k = 1; k < n; k++)
        if (strcmp(v[idx[k - 1]].name, v[idx[k]].name) == 0 && (best < 0 || idx[k] < best)) {
            best = idx[k];
            first = idx[k - 1];
        }
    free(idx);
    if (best < 0)
        return OP_OK;
    r->vi = best;
    memcpy(r->nbuf, v[best].name, sizeof r->nbuf);
    r->vname = r->nbuf;
    r->key = "name";
    return fail(r, name_at[best], OP_EINVAL, "repeats the name of volume %d", first);
}

op_status op_volumes_json_parse(const char *text, size_t len, const char *what, op_arena *out,
                                op_volume **vols, int *nvols, op_err *err)
{
    *vols = NULL;
    *nvols = 0;
    rd r = {text, len, 0, what ? what : "volumes", -1, NULL, NULL, err, ""};
    if (!text && len > 0)
        return op_err_set(err, OP_EINVAL, "%s: NULL text", r.what);
    if (len > OP_MAX_VOLUMES_FILE)
        return op_err_set(err, OP_ERANGE, "%s: %zu bytes, more than %u", r.what, len,
                          OP_MAX_VOLUMES_FILE);
    op_arena_mark mark = op_arena_get_mark(out);
    op_arena *tmp = op_arena_create(0);
    if (!tmp)
        return op_err_set(err, OP_ENOMEM, "%s: out of memory", r.what);
    op_volume *v = NULL;
    size_t *name_at = NULL, cap = 0;
    int n = 0;
    op_status st = expect(&r, '[', "'[' (an array of volumes)");
    if (st == OP_OK && !accept(&r, ']')) {
        do {
            ws(&r);
            if (n == OP_MAX_VOLUMES) {
                st = fail(&r, r.pos, OP_ELIMIT, "more than %d volumes", OP_MAX_VOLUMES);
                break;
            }
            if ((size_t)n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                op_volume *nv = op_arena_grow(out, v, cap * sizeof *v, nc * sizeof *v);
                size_t *na = op_arena_grow(tmp, name_at, cap * sizeof *na, nc * sizeof *na);
                if (!nv || !na) {
                    st = op_err_set(err, OP_ENOMEM, "%s: out of memory at volume %d", r.what, n);
                    break;
                }
                v = nv, name_at = na, cap = nc;
            }
            r.vi = n;
            r.vname = NULL;
            if ((st = object(&r, &v[n], &name_at[n])) != OP_OK)
                break;
            n++;
            r.vi = -1;
            r.vname = NULL;
        } while (accept(&r, ','));
        if (st == OP_OK)
            st = expect(&r, ']', "',' or ']'");
    }
    if (st == OP_OK) {
        ws(&r);
        if (r.pos < r.n)
            st = fail(&r, r.pos, OP_EINVAL, "more text after the array");
    }
    if (st == OP_OK && n > 1)
        st = duplicates(&r, v, n, name_at);
    op_arena_destroy(tmp);
    if (st != OP_OK) {
        op_arena_release(out, mark);
        return st;
    }
    *vols = n ? v : NULL;
    *nvols = n;
    return OP_OK;
}

op_status op_volumes_json_read_file(const char *path, op_arena *out, op_volume **vols, int *nvols,
                                    op_err *err)
{
    *vols = NULL;
    *nvols = 0;
    op_arena *tmp = op_arena_create(0);
    if (!tmp)
        return op_err_set(err, OP_ENOMEM, "volumes: out of memory");
    uint8_t *data;
    size_t len;
    op_status st = op__read_whole(path, "volumes", OP_MAX_VOLUMES_FILE, tmp, &data, &len, err);
    if (st == OP_OK)
        st = op_volumes_json_parse((const char *)data, len, path, out, vols, nvols, err);
    op_arena_destroy(tmp);
    return st;
}

/* ---- writer ---- */

typedef struct wr {
    op_write_fn write;
    void *ctx;
    int bad;
} wr;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
out(wr *w, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!w->bad && (n < 0 || (size_t)n >= sizeof buf || w->write(w->ctx, buf, (size_t)n) != 0))
        w->bad = 1;
}

op_status op_volumes_json_write(const op_volume *vols, int nvols, op_write_fn write, void *ctx,
                                op_err *err)
{
    static const char *const modes[2] = {"area", "obstacle"};
    op_status st = op__volumes_validate(vols, nvols, err);
    if (st != OP_OK)
        return st;
    for (int i = 0; i < nvols; i++)
        if (!op_volume_name_valid(vols[i].name))
            return op_err_set(err, OP_EINVAL, "volumes: volume %d: the name is not valid", i);
    wr w = {write, ctx, 0};
    out(&w, "[");
    for (int i = 0; i < nvols; i++) {
        const op_volume *v = &vols[i];
        out(&w, "%s\n{\"name\": \"%s\", \"mode\": \"%s\", \"area\": %d, \"kind\": \"%s\"",
            i ? "," : "", v->name, modes[v->mode], v->area, kinds[v->kind]);
        if (v->kind == OP_VOLUME_BOX) {
            out(&w, ", \"bmin\": [%.17g, %.17g, %.17g]", v->bmin[0], v->bmin[1], v->bmin[2]);
            out(&w, ", \"bmax\": [%.17g, %.17g, %.17g]", v->bmax[0], v->bmax[1], v->bmax[2]);
        } else if (v->kind == OP_VOLUME_CYLINDER) {
            out(&w, ", \"center\": [%.17g, %.17g], \"radius\": %.17g", v->bmin[0], v->bmin[2],
                v->bmax[0]);
        } else {
            out(&w, ", \"points\": [");
            for (int k = 0; k < v->npts; k++)
                out(&w, "%s[%.17g, %.17g]", k ? ", " : "", v->pts[2 * k], v->pts[2 * k + 1]);
            out(&w, "]");
        }
        if (v->kind != OP_VOLUME_BOX)
            out(&w, ", \"y\": [%.17g, %.17g]", v->bmin[1], v->bmax[1]);
        out(&w, "}");
    }
    out(&w, "%s]\n", nvols ? "\n" : "");
    return w.bad ? op_err_set(err, OP_EIO, "volumes: write failed") : OP_OK;
}
