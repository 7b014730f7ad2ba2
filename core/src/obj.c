/*
 * OBJ reader and writer (onepath/obj.h): text in, op_soup out, and back.
 *
 * Input: untrusted bytes. Output: a soup whose arrays come from the caller's arena,
 * sized exactly by a counting pass (the pass only splits lines and counts, so it
 * cannot fail; the parsing pass then checks everything). Typical sizes: the shared
 * levels are 5k-10k triangles; a generated 1024 m terrain is ~2M triangles, ~60 MB
 * of text.
 *
 * Invariants: no byte beyond len is read; a line is at most OP_OBJ_MAX_LINE bytes;
 * every index stored is in [0, vertices so far); every stored coordinate is finite
 * and within +-OP_MAX_COORD. Number conversion in both directions uses exact integer
 * arithmetic (a small fixed-size bignum), so results do not depend on the libc, the
 * locale or the FPU; a double fast path is used only where IEEE double arithmetic is
 * provably exact and correctly rounded (FLT_EVAL_METHOD == 0).
 */
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <math.h>

#include "onepath/limits.h"
#include "onepath/input_file.h"
#include "onepath/obj.h"

/* ===== a small unsigned bignum: 32-bit limbs, little-endian, fixed capacity ===== */

/* 768 bits: the largest comparison is (2^25) * 10^175 ~ 2^606 (see parse_slow). */
#define BN_LIMBS 24

typedef struct bn {
    uint32_t l[BN_LIMBS];
    int n;   /* limbs in use, no leading zero limbs */
    int ovf; /* set if a result did not fit (never for the bounded inputs used here) */
} bn;

static void bn_set(bn *a, uint64_t v)
{
    a->n = 0;
    a->ovf = 0;
    while (v) {
        a->l[a->n++] = (uint32_t)v;
        v >>= 32;
    }
}

static void bn_mul_add(bn *a, uint32_t m, uint32_t add)
{
    uint64_t carry = add;
    for (int i = 0; i < a->n; i++) {
        uint64_t t = (uint64_t)a->l[i] * m + carry;
        a->l[i] = (uint32_t)t;
        carry = t >> 32;
    }
    if (carry) {
        if (a->n == BN_LIMBS)
            a->ovf = 1;
        else
            a->l[a->n++] = (uint32_t)carry;
    }
}

static void bn_mul_pow(bn *a, uint32_t base, uint32_t big, int big_exp, int e)
{
    /* big = base^big_exp fits in 32 bits: multiply in big steps, then single ones. */
    for (; e >= big_exp; e -= big_exp)
        bn_mul_add(a, big, 0);
    for (; e > 0; e--)
        bn_mul_add(a, base, 0);
}

static void bn_mul_pow10(bn *a, int e)
{
    bn_mul_pow(a, 10, 1000000000u, 9, e);
}

static void bn_mul_pow5(bn *a, int e)
{
    bn_mul_pow(a, 5, 1220703125u, 13, e);
}

static void bn_shl(bn *a, int bits)
{
    if (a->n == 0 || bits == 0)
        return;
    int limbs = bits / 32, sh = bits % 32;
    int n = a->n + limbs + 1;
    if (n > BN_LIMBS) {
        /* Only a leading zero limb may be dropped. */
        uint32_t top = sh ? a->l[a->n - 1] >> (32 - sh) : 0;
        if (n - 1 > BN_LIMBS || top) {
            a->ovf = 1;
            return;
        }
        n = BN_LIMBS + 1;
    }
    for (int i = n - 1; i >= 0; i--) {
        int s = i - limbs;
        uint32_t hi = (s >= 0 && s < a->n) ? a->l[s] : 0;
        uint32_t lo = (s - 1 >= 0 && s - 1 < a->n) ? a->l[s - 1] : 0;
        uint32_t v = sh ? (hi << sh) | (lo >> (32 - sh)) : hi;
        if (i < BN_LIMBS)
            a->l[i] = v;
    }
    a->n = n > BN_LIMBS ? BN_LIMBS : n;
    while (a->n && !a->l[a->n - 1])
        a->n--;
}

static int bn_cmp(const bn *a, const bn *b)
{
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    for (int i = a->n - 1; i >= 0; i--)
        if (a->l[i] != b->l[i])
            return a->l[i] < b->l[i] ? -1 : 1;
    return 0;
}

/* a /= d, returns the remainder. */
static uint32_t bn_divmod(bn *a, uint32_t d)
{
    uint64_t r = 0;
    for (int i = a->n - 1; i >= 0; i--) {
        uint64_t cur = (r << 32) | a->l[i];
        a->l[i] = (uint32_t)(cur / d);
        r = cur % d;
    }
    while (a->n && !a->l[a->n - 1])
        a->n--;
    return (uint32_t)r;
}

/* ===== decimal -> float, correctly rounded ===== */

/* Significant digits kept. A float's halfway point has at most ~112 significant digits,
 * so with 128 kept digits the dropped ones only matter as a "more follows" bit. */
#define DEC_MAX_DIGITS 128

typedef struct dec {
    int neg;
    int nd;     /* kept significant digits, dig[0] != 0 unless nd == 0 */
    int e10;    /* value = D * 10^e10, D the integer of the kept digits */
    int sticky; /* nonzero digits were dropped after the kept ones */
    unsigned char dig[DEC_MAX_DIGITS];
} dec;

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

static int match_word(const char *s, size_t len, const char *w)
{
    size_t n = strlen(w);
    if (len != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(s[i]) != w[i])
            return 0;
    return 1;
}

/* Returns 0 ok (finite syntax), 1 for inf, 2 for nan, -1 malformed. */
static int dec_scan(const char *s, size_t len, dec *d)
{
    size_t i = 0;
    d->neg = 0;
    d->nd = 0;
    d->e10 = 0;
    d->sticky = 0;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        d->neg = s[i++] == '-';
    if (match_word(s + i, len - i, "inf") || match_word(s + i, len - i, "infinity"))
        return 1;
    if (match_word(s + i, len - i, "nan"))
        return 2;
    int ndigits = 0, seen_point = 0;
    for (; i < len; i++) {
        char c = s[i];
        if (c == '.' && !seen_point) {
            seen_point = 1;
            continue;
        }
        if (!is_digit(c))
            break;
        ndigits++;
        int v = c - '0';
        if (d->nd == 0 && v == 0) {
            if (seen_point)
                d->e10--; /* a leading zero after the point scales the value */
            continue;
        }
        if (d->nd < DEC_MAX_DIGITS) {
            d->dig[d->nd++] = (unsigned char)v;
            if (seen_point)
                d->e10--;
        } else {
            d->sticky |= v != 0;
            if (!seen_point)
                d->e10++;
        }
    }
    if (ndigits == 0)
        return -1;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        if (i == len || !is_digit(s[i]))
            return -1;
        long ex = 0;
        for (; i < len && is_digit(s[i]); i++)
            if (ex < 1000000)
                ex = ex * 10 + (s[i] - '0'); /* saturates far beyond any float */
        d->e10 += (int)(eneg ? -ex : ex);
    }
    return i == len ? 0 : -1;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Sign of x - m where m is the midpoint between the positive floats u and u + 1. */
static int cmp_mid(const dec *d, const bn *D, uint32_t u)
{
    uint32_t ef = u >> 23, frac = u & 0x7fffff;
    uint32_t mb = ef ? frac | 0x800000 : frac;
    int eb = ef ? (int)ef - 150 : -149;
    bn L = *D, R;
    bn_set(&R, 2 * (uint64_t)mb + 1); /* m = (2 mb + 1) 2^(eb - 1) */
    if (d->e10 >= 0)
        bn_mul_pow10(&L, d->e10);
    else
        bn_mul_pow10(&R, -d->e10);
    if (eb - 1 >= 0)
        bn_shl(&R, eb - 1);
    else
        bn_shl(&L, 1 - eb);
    int c = bn_cmp(&L, &R);
    return (c == 0 && d->sticky) ? 1 : c;
}

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A nearby float's bits from double arithmetic (any small error is fixed later). */
static uint32_t guess_bits(const dec *d)
{
    uint64_t m = 0;
    int used = d->nd < 19 ? d->nd : 19;
    for (int i = 0; i < used; i++)
        m = m * 10 + d->dig[i];
    double g = (double)m;
    int e = d->e10 + (d->nd - used);
    for (; e > 0; e -= e > 22 ? 22 : e)
        g *= pow10_exact[e > 22 ? 22 : e];
    for (; e<0; e += -e> 22 ? 22 : -e)
        g /= pow10_exact[-e > 22 ? 22 : -e];
    if (!(g < (double)FLT_MAX))
        return 0x7f7fffff;
    return float_bits((float)g) & 0x7fffffff;
}

/* Exact rounding: walk from the guess to the float whose rounding interval holds x. */
static float dec_to_float_slow(const dec *d, int *overflow)
{
    bn D;
    bn_set(&D, 0);
    for (int i = 0; i < d->nd; i++)
        bn_mul_add(&D, 10, d->dig[i]);
    uint32_t u = guess_bits(d);
    for (;;) {
        if (u > 0) {
            int c = cmp_mid(d, &D, u - 1);
            if (c < 0 || (c == 0 && (u & 1))) {
                u--;
                continue;
            }
        }
        int c = cmp_mid(d, &D, u);
        if (c > 0 || (c == 0 && (u & 1))) {
            if (u + 1 == 0x7f800000) {
                *overflow = 1;
                return 0.0f;
            }
            u++;
            continue;
        }
        return bits_float(u);
    }
}

/* Fast path: D < 2^53 and 10^|e| exact, so one IEEE double operation is correctly
 * rounded; converting to float is then correct unless the double is exactly a float
 * midpoint (double rounding), which goes to the slow path. */
static int dec_to_float_fast(const dec *d, float *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    if (d->sticky || d->nd > 15 || d->e10 < -22 || d->e10 > 22)
        return 0;
    uint64_t m = 0;
    for (int i = 0; i < d->nd; i++)
        m = m * 10 + d->dig[i];
    double r = (double)m;
    r = d->e10 >= 0 ? r * pow10_exact[d->e10] : r / pow10_exact[-d->e10];
    if (!(r >= (double)FLT_MIN && r <= (double)FLT_MAX))
        return 0;
    uint64_t b;
    memcpy(&b, &r, sizeof b);
    if ((b & 0x1fffffffULL) == 0x10000000ULL)
        return 0;
    *out = (float)r;
    return 1;
#else
    (void)d;
    (void)out;
    return 0;
#endif
}

int op_obj_parse_float(const char *s, size_t len, float *v)
{
    dec d;
    int k = dec_scan(s, len, &d);
    if (k < 0)
        return -1;
    float f;
    int overflow = 0;
    if (k == 1) {
        f = INFINITY;
    } else if (k == 2) {
        f = bits_float(0x7fc00000);
    } else if (d.nd == 0 || d.e10 + d.nd - 1 < -47) {
        f = 0.0f; /* below half the smallest subnormal (~7e-46) */
    } else if (d.e10 + d.nd - 1 > 38) {
        f = INFINITY; /* at least 1e39 > FLT_MAX */
    } else if (!dec_to_float_fast(&d, &f)) {
        f = dec_to_float_slow(&d, &overflow);
        if (overflow)
            f = INFINITY;
    }
    *v = d.neg ? -f : f;
    return 0;
}

/* ===== float -> decimal, exact, 9 significant digits ===== */

/* The exact decimal digits of a positive finite float: value = dg * 10^e10. */
static int exact_digits(uint32_t u, char dg[160], int *e10)
{
    uint32_t ef = u >> 23, frac = u & 0x7fffff;
    uint32_t mb = ef ? frac | 0x800000 : frac;
    int eb = ef ? (int)ef - 150 : -149;
    bn N; /* mb 2^eb = N 10^e10: N = mb 2^eb, or mb 5^-eb with e10 = eb */
    bn_set(&N, mb);
    *e10 = 0;
    if (eb >= 0) {
        bn_shl(&N, eb);
    } else {
        bn_mul_pow5(&N, -eb);
        *e10 = eb;
    }
    char rev[160]; /* at most 112 digits (mb 5^149), in chunks of 9 */
    int nd = 0;
    while (N.n) {
        uint32_t r = bn_divmod(&N, 1000000000u);
        for (int k = 0; k < 9; k++) {
            rev[nd++] = (char)('0' + r % 10);
            r /= 10;
        }
    }
    while (nd > 1 && rev[nd - 1] == '0')
        nd--;
    for (int i = 0; i < nd; i++)
        dg[i] = rev[nd - 1 - i];
    return nd;
}

/* Rounds dg to 9 significant digits (ties to even), drops trailing zeros. */
static int round9(char *dg, int nd, int *e10)
{
    if (nd > 9) {
        int up = dg[9] > '5';
        if (dg[9] == '5') {
            int rest = 0;
            for (int i = 10; i < nd; i++)
                rest |= dg[i] != '0';
            up = rest || ((dg[8] - '0') & 1);
        }
        *e10 += nd - 9;
        nd = 9;
        if (up) {
            int i = 8;
            while (i >= 0 && dg[i] == '9')
                dg[i--] = '0';
            if (i >= 0) {
                dg[i]++;
            } else {
                dg[0] = '1'; /* 999999999 + 1: one more power of ten */
                (*e10)++;
            }
        }
    }
    while (nd > 1 && dg[nd - 1] == '0') {
        nd--;
        (*e10)++;
    }
    return nd;
}

/* dg * 10^e10 in fixed notation (no exponent). */
static size_t print_fixed(const char *dg, int nd, int e10, char *out)
{
    size_t n = 0;
    if (e10 >= 0) {
        memcpy(out, dg, (size_t)nd);
        n = (size_t)nd;
        for (int i = 0; i < e10; i++)
            out[n++] = '0';
    } else if (nd > -e10) {
        int ip = nd + e10;
        memcpy(out, dg, (size_t)ip);
        n = (size_t)ip;
        out[n++] = '.';
        memcpy(out + n, dg + ip, (size_t)(nd - ip));
        n += (size_t)(nd - ip);
    } else {
        out[n++] = '0';
        out[n++] = '.';
        for (int i = 0; i < -e10 - nd; i++)
            out[n++] = '0';
        memcpy(out + n, dg, (size_t)nd);
        n += (size_t)nd;
    }
    return n;
}

size_t op_obj_format_float(float v, char *out)
{
    uint32_t u = float_bits(v);
    size_t n = 0;
    if ((u & 0x7f800000) == 0x7f800000) {
        strcpy(out, (u & 0x7fffff) ? "nan" : (u >> 31) ? "-inf" : "inf");
        return strlen(out);
    }
    if (u >> 31)
        out[n++] = '-';
    u &= 0x7fffffff;
    if (u == 0) {
        out[n++] = '0';
    } else {
        char dg[160];
        int e10;
        int nd = exact_digits(u, dg, &e10);
        nd = round9(dg, nd, &e10);
        n += print_fixed(dg, nd, e10, out + n);
    }
    out[n] = '\0';
    return n;
}

/* ===== the reader ===== */

typedef struct reader {
    const char *buf;
    size_t len;
    size_t line_no;
    /* counting pass: upper bounds; parsing pass: the arrays and their fill */
    int counting;
    size_t nv, nt; /* vertices and triangles so far */
    float *verts;
    int *tris;
    op_err *err;
} reader;

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Next white-space separated token of [*p, end); 0 at the end. */
static int next_token(const char **p, const char *end, const char **tok, size_t *tlen)
{
    const char *s = *p;
    while (s < end && is_space(*s))
        s++;
    if (s == end) {
        *p = s;
        return 0;
    }
    const char *t = s;
    while (s < end && !is_space(*s))
        s++;
    *tok = t;
    *tlen = (size_t)(s - t);
    *p = s;
    return 1;
}

/* A token for a message: at most 24 bytes, unprintable bytes as '?'. */
static const char *clip(const char *tok, size_t len, char out[32])
{
    size_t n = len < 24 ? len : 24;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)tok[i];
        out[i] = (c >= 32 && c < 127) ? (char)c : '?';
    }
    if (len > n) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return out;
}

static op_status parse_vertex(reader *r, const char *p, const char *end)
{
    static const char *const names[7] = {"x",          "y",          "z",         "w",
                                         "5th number", "6th number", "7th number"};
    float xyz[3];
    int count = 0;
    const char *tok;
    size_t tlen;
    char cl[32];
    while (next_token(&p, end, &tok, &tlen)) {
        if (count == 7)
            return op_err_set(r->err, OP_EINVAL,
                              "obj: line %zu: vertex has more than 7 numbers (x y z [w] or "
                              "x y z r g b [a])",
                              r->line_no);
        float v;
        if (op_obj_parse_float(tok, tlen, &v) != 0)
            return op_err_set(r->err, OP_EINVAL, "obj: line %zu: vertex %s '%s' is not a number",
                              r->line_no, names[count], clip(tok, tlen, cl));
        if (!isfinite(v))
            return op_err_set(r->err, OP_EINVAL,
                              "obj: line %zu: vertex %s '%s' is not finite (or beyond the float "
                              "range)",
                              r->line_no, names[count], clip(tok, tlen, cl));
        if (count < 3) {
            if (v > (float)OP_MAX_COORD || v < -(float)OP_MAX_COORD)
                return op_err_set(r->err, OP_ERANGE,
                                  "obj: line %zu: vertex %s = %s is beyond +-2^21", r->line_no,
                                  names[count], clip(tok, tlen, cl));
            xyz[count] = v;
        }
        count++;
    }
    if (count < 3)
        return op_err_set(r->err, OP_EINVAL,
                          "obj: line %zu: vertex has %d coordinate%s, needs x y z", r->line_no,
                          count, count == 1 ? "" : "s");
    if (r->nv >= (size_t)INT32_MAX)
        return op_err_set(r->err, OP_EINVAL, "obj: line %zu: more than %d vertices", r->line_no,
                          INT32_MAX);
    memcpy(&r->verts[3 * r->nv], xyz, sizeof xyz);
    r->nv++;
    return OP_OK;
}

/* An optional integer [+-]digits at *p; 1 if present (saturated to +-2^40). */
static int scan_int(const char **p, const char *end, long long *v)
{
    const char *s = *p;
    int neg = 0;
    if (s < end && (*s == '+' || *s == '-'))
        neg = *s++ == '-';
    if (s == end || !is_digit(*s))
        return 0;
    long long x = 0;
    for (; s < end && is_digit(*s); s++)
        if (x < (1LL << 40))
            x = x * 10 + (*s - '0');
    *v = neg ? -x : x;
    *p = s;
    return 1;
}

/* One corner 'i', 'i/t', 'i//n' or 'i/t/n' -> 0-based vertex index. */
static op_status parse_corner(reader *r, const char *tok, size_t tlen, int corner, int *index)
{
    const char *p = tok, *end = tok + tlen;
    long long i, t;
    char cl[32];
    int ok = scan_int(&p, end, &i);
    if (ok && p < end && *p == '/') {
        p++;
        int has_t = scan_int(&p, end, &t);
        if (p < end && *p == '/') {
            p++;
            ok = scan_int(&p, end, &t);
        } else {
            ok = has_t;
        }
    }
    if (!ok || p != end)
        return op_err_set(r->err, OP_EINVAL,
                          "obj: line %zu: face corner %d '%s' is not i, i/t, i//n or i/t/n",
                          r->line_no, corner, clip(tok, tlen, cl));
    if (i == 0)
        return op_err_set(r->err, OP_EINVAL,
                          "obj: line %zu: face corner %d has index 0 (OBJ indices start at 1)",
                          r->line_no, corner);
    long long z = i > 0 ? i - 1 : (long long)r->nv + i;
    if (z < 0 || z >= (long long)r->nv)
        return op_err_set(r->err, OP_EINVAL,
                          "obj: line %zu: face corner %d index %lld is outside the %zu vertices "
                          "read so far",
                          r->line_no, corner, i, r->nv);
    *index = (int)z;
    return OP_OK;
}

static op_status parse_face(reader *r, const char *p, const char *end)
{
    const char *tok;
    size_t tlen;
    int corners = 0, first = 0, prev = 0;
    while (next_token(&p, end, &tok, &tlen)) {
        int ix = 0;
        op_status st = parse_corner(r, tok, tlen, corners + 1, &ix);
        if (st != OP_OK)
            return st;
        if (corners == 0) {
            first = ix;
        } else if (corners >= 2) {
            int *t = &r->tris[3 * r->nt++];
            t[0] = first;
            t[1] = prev;
            t[2] = ix;
        }
        prev = ix;
        corners++;
    }
    if (corners < 3) {
        return op_err_set(r->err, OP_EINVAL,
                          "obj: line %zu: face has %d corner%s, needs at least 3", r->line_no,
                          corners, corners == 1 ? "" : "s");
    }
    return OP_OK;
}

/* The counting pass: upper bounds of vertices and triangles, no checks. */
static void count_line(reader *r, const char *p, const char *end)
{
    const char *kw, *tok;
    size_t klen, tlen;
    if (!next_token(&p, end, &kw, &klen))
        return;
    if (klen == 1 && kw[0] == 'v') {
        r->nv++;
    } else if (klen == 1 && kw[0] == 'f') {
        size_t n = 0;
        while (next_token(&p, end, &tok, &tlen))
            n++;
        if (n >= 3)
            r->nt += n - 2;
    }
}

static op_status parse_line(reader *r, const char *p, const char *end)
{
    const char *kw;
    size_t klen;
    if (!next_token(&p, end, &kw, &klen))
        return OP_OK;
    if (klen == 1 && kw[0] == 'v')
        return parse_vertex(r, p, end);
    if (klen == 1 && kw[0] == 'f')
        return parse_face(r, p, end);
    return OP_OK; /* vn, vt, g, o, s, usemtl, mtllib, l, p, ...: not geometry we use */
}

/* Splits the buffer into lines and hands each (without its comment) to the pass. */
static op_status run_pass(reader *r)
{
    size_t pos = 0;
    if (r->len >= 3 && memcmp(r->buf, "\xef\xbb\xbf", 3) == 0)
        pos = 3; /* a UTF-8 byte order mark */
    r->line_no = 0;
    while (pos < r->len) {
        const char *s = r->buf + pos;
        const char *nl = memchr(s, '\n', r->len - pos);
        size_t llen = nl ? (size_t)(nl - s) : r->len - pos;
        pos += llen + (nl ? 1 : 0);
        r->line_no++;
        if (r->counting) {
            if (llen > OP_OBJ_MAX_LINE || memchr(s, '\0', llen))
                return OP_OK; /* the parsing pass reports it */
        } else {
            if (llen > OP_OBJ_MAX_LINE)
                return op_err_set(r->err, OP_EINVAL,
                                  "obj: line %zu is longer than %d bytes (OP_OBJ_MAX_LINE)",
                                  r->line_no, OP_OBJ_MAX_LINE);
            const char *nul = memchr(s, '\0', llen);
            if (nul)
                return op_err_set(r->err, OP_EINVAL, "obj: line %zu: NUL byte at column %zu",
                                  r->line_no, (size_t)(nul - s) + 1);
        }
        const char *hash = memchr(s, '#', llen);
        const char *end = hash ? hash : s + llen;
        if (r->counting) {
            count_line(r, s, end);
        } else {
            op_status st = parse_line(r, s, end);
            if (st != OP_OK)
                return st;
        }
    }
    return OP_OK;
}

op_status op_obj_parse(const char *buf, size_t len, op_arena *out, op_soup *soup, op_err *err)
{
    if (soup)
        memset(soup, 0, sizeof *soup);
    if (!soup || !out || (!buf && len))
        return op_err_set(err, OP_EINVAL, "obj: NULL argument");
    reader r = {buf, len, 0, 1, 0, 0, NULL, NULL, err};
    run_pass(&r);
    size_t nv = r.nv, nt = r.nt;
    if (nv > SIZE_MAX / (3 * sizeof(float)) || nt > SIZE_MAX / (3 * sizeof(int)))
        return op_err_set(err, OP_ENOMEM, "obj: %zu vertices / %zu triangles overflow", nv, nt);
    r.verts = op_arena_alloc(out, nv * 3 * sizeof(float));
    if (!r.verts)
        return op_err_set(err, OP_ENOMEM, "obj: out of memory for %zu bytes of vertices",
                          nv * 3 * sizeof(float));
    r.tris = op_arena_alloc(out, nt * 3 * sizeof(int));
    if (!r.tris)
        return op_err_set(err, OP_ENOMEM, "obj: out of memory for %zu bytes of triangles",
                          nt * 3 * sizeof(int));
    r.counting = 0;
    r.nv = r.nt = 0;
    op_status st = run_pass(&r);
    if (st != OP_OK)
        return st;
    if (r.nv > nv || r.nt > nt) /* the passes split lines and tokens the same way */
        return op_err_set(err, OP_EINTERNAL, "obj: counting pass disagrees");
    soup->verts = r.verts;
    soup->verts_len = 3 * r.nv;
    soup->tris = r.tris;
    soup->tris_len = 3 * r.nt;
    soup->areas = NULL;
    op_err_clear(err);
    return OP_OK;
}

op_status op_obj_read_file(const char *path, op_arena *out, op_soup *soup, op_err *err)
{
    return op_obj_read_file_max(path, OP_DEFAULT_MAX_INPUT_BYTES, out, soup, err);
}

op_status op_obj_read_file_max(const char *path, size_t max, op_arena *out, op_soup *soup,
                               op_err *err)
{
    if (soup)
        memset(soup, 0, sizeof *soup);
    if (!path)
        return op_err_set(err, OP_EINVAL, "obj: NULL path");
    op_arena *tmp = op_arena_create(0);
    if (!tmp)
        return op_err_set(err, OP_ENOMEM, "obj: out of memory reading %s", path);
    uint8_t *buf;
    size_t len;
    op_status st = op_input_file_read(path, "obj", max, tmp, &buf, &len, err);
    if (st == OP_OK) {
        st = op_obj_parse((const char *)buf, len, out, soup, err);
        if (st != OP_OK && err) {
            /* Name the file as well as the line. */
            char msg[OP_ERR_MSG_MAX];
            memcpy(msg, err->msg, sizeof msg);
            op_err_set(err, st, "%s: %s", path, msg);
        }
    }
    op_arena_destroy(tmp);
    return st;
}

/* ===== the writer ===== */

typedef struct wbuf {
    char b[8192];
    size_t n;
    op_write_fn write;
    void *ctx;
    int failed;
} wbuf;

static void wflush(wbuf *w)
{
    if (w->n && !w->failed && w->write(w->ctx, w->b, w->n) != 0)
        w->failed = 1;
    w->n = 0;
}

static void wput(wbuf *w, const char *s, size_t n)
{
    if (w->n + n > sizeof w->b)
        wflush(w);
    memcpy(w->b + w->n, s, n);
    w->n += n;
}

static size_t fmt_u64(uint64_t v, char *out)
{
    char rev[24];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = rev[n - 1 - i];
    return n;
}

op_status op_obj_write(const op_soup *soup, op_write_fn write, void *ctx, op_err *err)
{
    op_status st = op_soup_validate(soup, err);
    if (st != OP_OK)
        return st;
    if (!write)
        return op_err_set(err, OP_EINVAL, "obj: NULL writer");
    wbuf w;
    w.n = 0;
    w.write = write;
    w.ctx = ctx;
    w.failed = 0;
    char line[4 * OP_OBJ_FLOAT_MAX + 16];
    size_t n = 0;
    n += (size_t)snprintf(line, sizeof line, "# onepath obj: ");
    n += fmt_u64(soup->verts_len / 3, line + n);
    memcpy(line + n, " vertices, ", 11);
    n += 11;
    n += fmt_u64(soup->tris_len / 3, line + n);
    memcpy(line + n, " triangles\n", 11);
    wput(&w, line, n + 11);
    for (size_t i = 0; i < soup->verts_len; i += 3) {
        n = 0;
        line[n++] = 'v';
        for (int a = 0; a < 3; a++) {
            line[n++] = ' ';
            n += op_obj_format_float(soup->verts[i + a], line + n);
        }
        line[n++] = '\n';
        wput(&w, line, n);
    }
    for (size_t i = 0; i < soup->tris_len; i += 3) {
        n = 0;
        line[n++] = 'f';
        for (int a = 0; a < 3; a++) {
            line[n++] = ' ';
            n += fmt_u64((uint64_t)soup->tris[i + a] + 1, line + n);
        }
        line[n++] = '\n';
        wput(&w, line, n);
    }
    wflush(&w);
    if (w.failed)
        return op_err_set(err, OP_EIO, "obj: write failed");
    op_err_clear(err);
    return OP_OK;
}
