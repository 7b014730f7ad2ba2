/*
 * onepath side of the benchmark: the core's stage functions per tile.
 */
#ifndef ONEPATH_BENCH_ONEPATH_SIDE_H
#define ONEPATH_BENCH_ONEPATH_SIDE_H

#include "bench.h"

/*
 * Builds every tile of lv with the onepath core (op_tile_spans_build, op_regions_build,
 * op_contours_build, op_polys_build, op_detail_build), stopping after `upto`. Memory
 * comes from two arenas per worker (output, scratch), reset per tile; res->heap_peak
 * is the sum of their peaks. Returns 0, or -1 with err filled.
 */
int bench_onepath_build(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                        int threads, bench_result *res, char *err, size_t errlen);

#endif
