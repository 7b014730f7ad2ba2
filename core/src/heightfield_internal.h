/*
 * Internal to the span stage's rasterization half (heightfield.c, rasterize.c,
 * tile_build.c): the fragment log of a heightfield and its column rebuild.
 */
#ifndef ONEPATH_HEIGHTFIELD_INTERNAL_H
#define ONEPATH_HEIGHTFIELD_INTERNAL_H

#include "onepath/spans.h"

/* Checks/fixes the heightfield's merge threshold (§3.5). */
op_status op__hf_threshold(op_heightfield *hf, int merge_threshold, op_err *err);

/* Makes room for n more fragments. */
op_status op__hf_reserve(op_heightfield *hf, size_t n, op_err *err);

/* Appends a fragment to column col; room must have been reserved. */
static inline void op__hf_push(op_heightfield *hf, uint32_t col, int smin, int smax, int area)
{
    uint32_t i = hf->frag_count++;
    op_hf_frag *f = &hf->frags[i];
    f->smin = (uint16_t)smin;
    f->smax = (uint16_t)smax;
    f->area = (uint8_t)area;
    f->next = hf->frag_heads[col];
    hf->frag_heads[col] = i;
}

/* Rebuilds every column that received fragments with index >= first (§3.5). Makes
 * room for the spans first; on failure drops those fragments and leaves hf as it was. */
op_status op__hf_commit(op_heightfield *hf, uint32_t first, op_err *err);

/* Drops the fragments with index >= first (an error after op__hf_push). */
void op__hf_rollback(op_heightfield *hf, uint32_t first);

#endif
