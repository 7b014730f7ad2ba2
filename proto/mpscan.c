/*
 * Bounded msgpack pre-scan (see mpscan.h). Iterative, no allocation: a counter of
 * values still expected per nesting level, held in a fixed array sized by the
 * depth cap.
 */
#include <msgpack.h>
#include <stdint.h>

#include "onepath/mpscan.h"

#define OP_MP_HARD_DEPTH 64

void op_mp_limits_default(op_mp_limits *lim)
{
    lim->max_bytes = (size_t)64 << 20;
    lim->max_depth = 16;
    lim->max_items = (size_t)16 << 20;
    lim->max_unpacked = (size_t)256 << 20;
    lim->unpacked_name = NULL;
}

size_t op_mp_value_bytes(void)
{
    return sizeof(msgpack_object);
}

static uint64_t be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Decodes the header at p: how many header bytes, how many payload bytes follow,
 * and how many child values (arrays: n, maps: 2n). Returns 0 on a bad type byte. */
static int header(unsigned char t, const unsigned char *p, size_t avail, size_t *hdr,
                  uint64_t *payload, uint64_t *children)
{
    *payload = 0;
    *children = 0;
    *hdr = 1;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3)
        return 1;
    if (t >= 0x80 && t <= 0x8f) {
        *children = 2u * (t & 0x0f);
        return 1;
    }
    if (t >= 0x90 && t <= 0x9f) {
        *children = t & 0x0f;
        return 1;
    }
    if (t >= 0xa0 && t <= 0xbf) {
        *payload = t & 0x1f;
        return 1;
    }
    int n = 0;
    switch (t) {
    case 0xc4:
    case 0xd9:
        n = 1;
        break; /* bin8, str8 */
    case 0xc5:
    case 0xda:
        n = 2;
        break;
    case 0xc6:
    case 0xdb:
        n = 4;
        break;
    case 0xc7:
        n = 1;
        break; /* ext8: length + type byte */
    case 0xc8:
        n = 2;
        break;
    case 0xc9:
        n = 4;
        break;
    case 0xca:
        *payload = 4;
        return 1;
    case 0xcb:
        *payload = 8;
        return 1;
    case 0xcc:
    case 0xd0:
        *payload = 1;
        return 1;
    case 0xcd:
    case 0xd1:
        *payload = 2;
        return 1;
    case 0xce:
    case 0xd2:
        *payload = 4;
        return 1;
    case 0xcf:
    case 0xd3:
        *payload = 8;
        return 1;
    case 0xd4:
        *payload = 2;
        return 1; /* fixext: type + data */
    case 0xd5:
        *payload = 3;
        return 1;
    case 0xd6:
        *payload = 5;
        return 1;
    case 0xd7:
        *payload = 9;
        return 1;
    case 0xd8:
        *payload = 17;
        return 1;
    case 0xdc:
    case 0xdd:
    case 0xde:
    case 0xdf:
        break;
    default:
        return 0; /* 0xc1 is never used */
    }
    if (t >= 0xdc) {
        int cn = (t == 0xdc || t == 0xde) ? 2 : 4;
        if (avail < 1 + (size_t)cn) {
            *hdr = 1 + (size_t)cn;
            return 1;
        }
        uint64_t c = be(p + 1, cn);
        *children = (t >= 0xde) ? 2 * c : c;
        *hdr = 1 + (size_t)cn;
        return 1;
    }
    *hdr = 1 + (size_t)n;
    if (avail < *hdr)
        return 1;
    *payload = be(p + 1, n) + ((t >= 0xc7 && t <= 0xc9) ? 1 : 0);
    return 1;
}

op_status op_mp_scan(const void *buf, size_t len, const op_mp_limits *lim, op_err *err)
{
    const unsigned char *p = (const unsigned char *)buf;
    op_mp_limits def;
    if (!lim) {
        op_mp_limits_default(&def);
        lim = &def;
    }
    if (len > lim->max_bytes)
        return op_err_set(err, OP_ELIMIT, "msgpack: %zu bytes > limit %zu", len, lim->max_bytes);
    if (!p && len)
        return op_err_set(err, OP_EINVAL, "msgpack: NULL buffer");
    int max_depth = lim->max_depth < OP_MP_HARD_DEPTH ? lim->max_depth : OP_MP_HARD_DEPTH;
    uint64_t pending[OP_MP_HARD_DEPTH + 1];
    int depth = 0;
    pending[0] = 1; /* one top-level value */
    size_t off = 0, items = 0;
    size_t max_unpacked_items = lim->max_unpacked / sizeof(msgpack_object);
    while (depth >= 0) {
        if (pending[depth] == 0) {
            depth--;
            continue;
        }
        if (off >= len)
            return op_err_set(err, OP_EINCOMPLETE,
                              "msgpack: message ends at byte %zu inside a value", off);
        pending[depth]--;
        if (++items > lim->max_items)
            return op_err_set(err, OP_ELIMIT, "msgpack: more than %zu values", lim->max_items);
        if (items > max_unpacked_items)
            return op_err_set(err, OP_ELIMIT,
                              "msgpack: the message unpacks to more than %zu bytes (%s: %zu "
                              "values at byte %zu, %zu bytes each)",
                              lim->max_unpacked,
                              lim->unpacked_name ? lim->unpacked_name : "max_unpacked", items, off,
                              sizeof(msgpack_object));
        size_t hdr;
        uint64_t payload, children;
        if (!header(p[off], p + off, len - off, &hdr, &payload, &children))
            return op_err_set(err, OP_EPROTO, "msgpack: byte %zu: type 0x%02x is never used", off,
                              p[off]);
        if (hdr > len - off)
            return op_err_set(err, OP_EINCOMPLETE, "msgpack: byte %zu: header cut short", off);
        off += hdr;
        /* A fixed-size scalar cut short is an incomplete message; a declared length
         * (str, bin, ext) beyond the bytes present is a lie. */
        unsigned char t = p[off - hdr];
        int declared =
            (t >= 0xa0 && t <= 0xbf) || (t >= 0xc4 && t <= 0xc9) || (t >= 0xd9 && t <= 0xdb);
        if (payload > len - off && !declared)
            return op_err_set(err, OP_EINCOMPLETE, "msgpack: byte %zu: value cut short", off - hdr);
        if (payload > len - off)
            return op_err_set(err, OP_EPROTO,
                              "msgpack: byte %zu: declared length %llu exceeds the %zu bytes left",
                              off - hdr, (unsigned long long)payload, len - off);
        off += (size_t)payload;
        if (children) {
            /* Every child takes at least one byte: a count beyond the bytes left is a lie. */
            if (children > len - off)
                return op_err_set(
                    err, OP_EPROTO,
                    "msgpack: byte %zu: declared %llu elements exceed the %zu bytes left",
                    off - hdr, (unsigned long long)children, len - off);
            if (depth + 1 >= max_depth)
                return op_err_set(err, OP_ELIMIT, "msgpack: byte %zu: nesting deeper than %d",
                                  off - hdr, max_depth);
            pending[++depth] = children;
        }
    }
    if (off != len)
        return op_err_set(err, OP_EPROTO, "msgpack: %zu trailing bytes after the value at byte %zu",
                          len - off, off);
    op_err_clear(err);
    return OP_OK;
}
