/*
 * onepathd changes.since (protocol §4.3): the params and the reply map; which tiles are
 * listed, and when, is changes.c's.
 */
#include "level.h"

static int pack_changes(msgpack_packer *pk, const opd_changes *ch)
{
    int p = msgpack_pack_map(pk, 2);
    p |= op_rpc_pack_key(pk, "version") | msgpack_pack_uint64(pk, ch->version);
    p |= op_rpc_pack_key(pk, "tiles") | msgpack_pack_array(pk, ch->n);
    for (size_t i = 0; i < ch->n; i++) {
        const opd_change *t = &ch->tiles[i];
        p |= msgpack_pack_map(pk, 3);
        p |= op_rpc_pack_key(pk, "tx") | msgpack_pack_int(pk, t->tx);
        p |= op_rpc_pack_key(pk, "tz") | msgpack_pack_int(pk, t->tz);
        p |= op_rpc_pack_key(pk, "hashes") | msgpack_pack_array(pk, (size_t)t->nl);
        for (int k = 0; k < t->nl; k++)
            p |= msgpack_pack_uint64(pk, t->hashes[k]);
    }
    return p;
}

op_status opd_m_changes_since(opd_call *c, const msgpack_object *p, msgpack_packer *pk, op_err *err)
{
    static const char *const allowed[] = {"level", "version", "wait_ms", NULL};
    int64_t version, wait_ms = 0;
    op_status st;
    if ((st = opd_param_keys(p, allowed, err)) != OP_OK ||
        (st = opd_param_name(p, "level", "level", c->level, err)) != OP_OK ||
        (st = op_rpc_get_int(p, "version", 0, INT64_MAX, 0, &version, NULL, err)) != OP_OK ||
        (st = op_rpc_get_int(p, "wait_ms", 0, OPD_MAX_WAIT_MS, 1, &wait_ms, NULL, err)) != OP_OK)
        return st;
    if (wait_ms > 0 && c->wait.deadline_ns == 0)
        c->wait.deadline_ns = (int64_t)c->t0_ns + wait_ms * 1000000;
    opd_changes ch;
    st = opd_changes_since(c->d->reg, c->level, (uint64_t)version, &c->wait, &ch, err);
    if (st != OP_OK)
        return st;
    if (pack_changes(pk, &ch))
        st = op_err_set(err, OP_ENOMEM, "changes.since: out of memory");
    opd_changes_free(&ch);
    return st;
}
