/*
 * onepath side of the benchmark: the core's build API per tile, as `onepath bake`.
 */
#ifndef ONEPATH_BENCH_ONEPATH_SIDE_H
#define ONEPATH_BENCH_ONEPATH_SIDE_H

#include "bench.h"

/*
 * Builds every tile of lv with op_level_create + op_level_build_stages (on
 * op_parallel_for with `threads` workers: the pool `workers`, or threads of the
 * build's own when NULL), stopping after `upto`; with upto = all,
 * every tile layer is also encoded (op_tile_encode). res->heap_peak sums the
 * workers' arena peaks and blob bytes. Returns 0, or -1 with err filled.
 */
int bench_onepath_build(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                        int threads, void *workers, bench_result *res, char *err, size_t errlen);
/* An op_pool of `threads` (bench_workers_new_fn), and its free. */
void *bench_onepath_workers_new(int threads);
void bench_onepath_workers_free(void *workers);

#endif
