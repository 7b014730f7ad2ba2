/*
 * Small level generator of the benchmark (--gen KIND:SIZE), a stand-in for the
 * core's op_levelgen until that is merged. Deterministic: the same kind and size
 * give the same soup on every machine (integer lattice, sin/cos of exact inputs
 * rounded to float, no random numbers).
 *   flat:SIZE     a SIZE x SIZE wu floor of 1 wu quads with a grid of pillars
 *   terrain:SIZE  a SIZE x SIZE wu rolling height field of 1 wu quads
 *   stairs:SIZE   flights of steps (0.25 wu risers) with landings, over SIZE wu
 */
#ifndef ONEPATH_BENCH_GENLEVEL_H
#define ONEPATH_BENCH_GENLEVEL_H

#include <stddef.h>
#include "bench.h"

/* spec is "KIND:SIZE", SIZE in world units (8..4096). Returns 0, or -1 with err. */
int bench_gen_level(const char *spec, bench_level *lv, char *err, size_t errlen);

#endif
