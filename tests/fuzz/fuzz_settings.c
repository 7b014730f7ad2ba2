/*
 * libFuzzer target for the settings decoders: onepathd's settings map
 * (opd_settings_from_map, daemon/content.c, protocol.md §3.3) and the --set key=value text
 * (op_settings_set, core/src/settings.c, as cli_apply_set splits it).
 *   byte 0 even: the rest is one msgpack value, decoded as a settings map
 *   byte 0 odd:  the rest is text, one key=value a line, each applied in turn, then
 *                op_settings_validate
 * Properties: every refusal carries a message; accepted settings validate, and pack to a
 * map that decodes to equal settings that pack to the same bytes.
 *   build-fuzz/bin/fuzz_settings tests/fuzz/corpus/settings
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "onepath/mpscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static op_status from_map(const char *buf, size_t len, op_settings *s)
{
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    lim.max_bytes = len;
    op_err err = {OP_OK, {0}};
    op_status st = op_mp_scan(buf, len, &lim, &err);
    if (st != OP_OK)
        return st;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    st = OP_EPROTO;
    if (msgpack_unpack_next(&u, buf, len, &off) == MSGPACK_UNPACK_SUCCESS &&
        (st = opd_settings_from_map(&u.data, s, &err)) != OP_OK && err.msg[0] == '\0')
        abort(); /* a refusal must say what was wrong */
    msgpack_unpacked_destroy(&u);
    return st;
}

static op_status from_text(const char *buf, size_t len, op_settings *s)
{
    op_settings_default(s);
    op_err err = {OP_OK, {0}};
    size_t at = 0;
    while (at < len) {
        const char *nl = memchr(buf + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
        char line[256];
        if (n >= sizeof line)
            return OP_EINVAL;
        memcpy(line, buf + at, n);
        line[n] = '\0';
        at += n + 1;
        if (strlen(line) != n)
            return OP_EINVAL; /* a NUL: not one C string (argv cannot hold it) */
        const char *eq = strchr(line, '=');
        if (!eq || eq == line || (size_t)(eq - line) >= 64)
            return OP_EINVAL;
        char key[64];
        memcpy(key, line, (size_t)(eq - line));
        key[eq - line] = '\0';
        op_settings before = *s;
        op_status st = op_settings_set(s, key, eq + 1, &err);
        if (st != OP_OK) {
            if (err.msg[0] == '\0' || memcmp(&before, s, sizeof before) != 0)
                abort(); /* refused with a message, the settings unchanged */
            return st;
        }
    }
    op_status st = op_settings_validate(s, &err);
    if (st != OP_OK && err.msg[0] == '\0')
        abort();
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    op_settings s;
    const char *buf = (const char *)data + 1;
    op_status st = data[0] & 1 ? from_text(buf, size - 1, &s) : from_map(buf, size - 1, &s);
    if (st != OP_OK)
        return 0;
    if (op_settings_validate(&s, NULL) != OP_OK)
        abort();
    msgpack_sbuffer a, b;
    msgpack_sbuffer_init(&a);
    msgpack_sbuffer_init(&b);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &a, msgpack_sbuffer_write);
    if (opd_settings_pack(&pk, &s) != 0)
        abort();
    op_settings t;
    if (from_map(a.data, a.size, &t) != OP_OK || !opd_settings_equal(&s, &t))
        abort();
    msgpack_packer_init(&pk, &b, msgpack_sbuffer_write);
    if (opd_settings_pack(&pk, &t) != 0 || a.size != b.size || memcmp(a.data, b.data, a.size))
        abort();
    msgpack_sbuffer_destroy(&a);
    msgpack_sbuffer_destroy(&b);
    return 0;
}
