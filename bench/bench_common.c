/*
 * Small shared pieces of the benchmark: the monotonic clock and stage names.
 */
#include <time.h>

#include "bench.h"

double bench_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

const char *bench_stage_name(bench_stage s)
{
    static const char *const names[BENCH_NSTAGES] = {
        "select", "spans", "regions", "contours", "polys", "detail", "tile",
    };
    return ((unsigned)s < BENCH_NSTAGES) ? names[s] : "?";
}
