/*
 * libFuzzer target for onepathd's volume map (daemon/volumes.c, protocol.md §3.5): the
 * bounded pre-scan, msgpack-c, then opd_volume_decode. Any input ends as a refusal (its
 * message starts with the volume's name once it was read) or as a valid volume, which
 * must pack and decode back to an equal volume with the same XZ box.
 *   build-fuzz/bin/fuzz_volume_map tests/fuzz/corpus/volume_map
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "onepath/mpscan.h"
#include "onepath/rebuild.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static opd_volume *decode(const char *buf, size_t len, op_status *st)
{
    op_mp_limits lim;
    op_mp_limits_default(&lim);
    lim.max_bytes = len;
    op_err err;
    opd_volume *v = NULL;
    if ((*st = op_mp_scan(buf, len, &lim, &err)) != OP_OK)
        return NULL;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    *st = OP_EPROTO;
    if (msgpack_unpack_next(&u, buf, len, &off) == MSGPACK_UNPACK_SUCCESS &&
        (*st = opd_volume_decode(&u.data, "fuzz", &v, &err)) != OP_OK &&
        strncmp(err.msg, "fuzz", 4) != 0)
        abort(); /* every refusal of the decoder says where the map is */
    msgpack_unpacked_destroy(&u);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    op_status st;
    opd_volume *v = decode((const char *)data, size, &st);
    if (!v)
        return 0;
    if (op_volume_validate(&v->v, NULL) != OP_OK || !op_volume_name_valid(v->v.name))
        abort();
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    if (opd_volume_pack(&pk, &v->v) != 0)
        abort();
    opd_volume *w = decode(sb.data, sb.size, &st);
    if (!w || !opd_volume_equal(&v->v, &w->v) || strcmp(v->v.name, w->v.name) ||
        memcmp(v->lo, w->lo, sizeof v->lo) || memcmp(v->hi, w->hi, sizeof v->hi))
        abort();
    opd_volume_free(w);
    opd_volume_free(v);
    msgpack_sbuffer_destroy(&sb);
    return 0;
}
