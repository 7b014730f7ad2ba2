/*
 * Span stage, canonical text of a compact heightfield (docs/spec/build3d-spans.md §5):
 * one line per span in span index order, "x z y h area l0 l1 l2 l3 dist\n", links as
 * span indices or -1, dist -1 while no distance field is built. Decimal integers
 * only, so the bytes (and the hash-matrix hashes over them) are the same everywhere.
 * Written through a small stack buffer; the sink's nonzero return aborts the dump.
 */
#include <stdio.h>

#include "onepath/spans.h"

#define OP__DUMP_BUF  4096
#define OP__DUMP_LINE 128 /* longest line: 10 numbers of at most 11 characters each */

static long long link_value(uint32_t l)
{
    return l == OP_NO_LINK ? -1 : (long long)l;
}

int op_chf_dump(const op_chf *chf, op_write_fn write, void *ctx)
{
    char buf[OP__DUMP_BUF];
    size_t used = 0;
    for (int z = 0; z < chf->depth; z++)
        for (int x = 0; x < chf->width; x++) {
            int c = x + z * chf->width;
            for (uint32_t s = chf->cells[c]; s < chf->cells[c + 1]; s++) {
                if (used + OP__DUMP_LINE > sizeof buf) {
                    int rc = write(ctx, buf, used);
                    if (rc)
                        return rc;
                    used = 0;
                }
                const uint32_t *l = chf->links[s];
                long long dist = chf->dist ? (long long)chf->dist[s] : -1;
                used += (size_t)snprintf(
                    buf + used, sizeof buf - used, "%d %d %u %u %u %lld %lld %lld %lld %lld\n", x,
                    z, (unsigned)chf->y[s], (unsigned)chf->h[s], (unsigned)chf->areas[s],
                    link_value(l[0]), link_value(l[1]), link_value(l[2]), link_value(l[3]), dist);
            }
        }
    return used ? write(ctx, buf, used) : 0;
}
