/* Volumes inside the core: the apply and validate halves of op_volumes_apply, so that a
 * tile build validates its volume set once and applies each mode at its own step. */
#ifndef ONEPATH_VOLUMES_INTERNAL_H
#define ONEPATH_VOLUMES_INTERNAL_H

#include <stdint.h>

#include "onepath/spans.h"

/* Every volume of vols[0..nvols) valid (§6.2), messages naming the index. */
op_status op__volumes_validate(const op_volume *vols, int nvols, op_err *err);

/* Applies the volumes of `mode` in array order to a validated array; returns nonzero when an
 * area changed (chf->dist is then NULL). box, when not NULL, gets the cells (x0, z0, x1, z1),
 * inclusive, that bound every changed span (width, depth, -1, -1 when none), so that a
 * rebuild's erosion update only scans the cells an edit can reach. */
int op__volumes_apply_valid(op_chf *chf, const op_volume *vols, int nvols, op_volume_mode mode,
                            int box[4]);

/* The XZ bounding box of a valid volume (§6.4): lo/hi = (x, z). */
void op__volume_xz_bounds(const op_volume *v, double lo[2], double hi[2]);

/* idx[0..n) := 0..n-1 sorted by name bytewise, ties by index (a stable bottom-up merge
 * sort); tmp holds n more entries. */
void op__volume_order(const op_volume *v, int n, int32_t *idx, int32_t *tmp);

#endif
