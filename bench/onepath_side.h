/*
 * onepath side of the benchmark: the core's build API per tile, as `onepath bake`.
 */
#ifndef ONEPATH_BENCH_ONEPATH_SIDE_H
#define ONEPATH_BENCH_ONEPATH_SIDE_H

#include "bench.h"

/* What the workers of one threaded build did (bench_onepath_build_sched): per worker
 * its jobs and the time inside them, and the serial parts around the tile section.
 * CPU times are CLOCK_THREAD_CPUTIME_ID (the calling thread's own), wall times
 * CLOCK_MONOTONIC; "section" is the op_parallel_for_ordered call of the tiles. */
#define BENCH_MAX_WORKERS 256

typedef struct bench_worker_use {
    int jobs;            /* tile jobs it ran (empty tiles included) */
    int built;           /* of which tiles with a mesh */
    double busy_cpu_ms;  /* thread CPU inside its jobs */
    double busy_wall_ms; /* wall inside its jobs */
    double first_ms;     /* start of its first job, from the section's start */
    double last_ms;      /* end of its last job, from the section's start */
} bench_worker_use;

typedef struct bench_sched {
    int threads;                           /* workers of the section (at most the job count) */
    int workers;                           /* workers that ran at least one job */
    bench_worker_use w[BENCH_MAX_WORKERS]; /* by first job's start */
    double prepare_wall_ms;     /* op_level_create_*: validation, bounds, triangle bins */
    double prepare_cpu_ms;      /* the calling thread's CPU in it */
    double prepare_proc_cpu_ms; /* the process's CPU in it (all threads, spinning included) */
    double order_wall_ms, order_cpu_ms;          /* op_level_job_order (several workers) */
    double section_wall_ms, section_proc_cpu_ms; /* the tile jobs, start to the last back */
    double assemble_wall_ms, assemble_cpu_ms;    /* results summed in index order */
    double sum_cpu_ms, sum_wall_ms;              /* over all jobs */
    double longest_cpu_ms, longest_wall_ms;      /* the job of the largest thread CPU */
    int longest_index;                           /* its tile index */
    int longest_rank;                            /* its place in the claim order (0: first) */
    double longest_start_ms;                     /* when it started, from the section's start */
    /* These jobs' thread CPU times list-scheduled on sim_threads workers (each job to the
     * first free worker, no waits), in bake's heaviest-first order, in index order and in
     * the order of the measured times (the best a claim order can do): their makespans. */
    int sim_threads; /* the build's workers, or 2 for a one-worker build */
    double sim_cost_ms, sim_index_ms, sim_oracle_ms;
} bench_sched;

/*
 * Builds every tile of lv with op_level_create + op_level_build_stages (on
 * op_parallel_for with `threads` workers: the pool `workers`, or threads of the
 * build's own when NULL), stopping after `upto`; with upto = all,
 * every tile layer is also encoded (op_tile_encode). res->heap_peak sums the
 * workers' arena peaks and blob bytes. Returns 0, or -1 with err filled.
 */
int bench_onepath_build(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                        int threads, void *workers, bench_result *res, char *err, size_t errlen);
/* Claim order of the tile jobs: as bake (heaviest first with several workers, index
 * order with one), always index order, or always heaviest first. */
typedef enum bench_order { BENCH_ORDER_AUTO = 0, BENCH_ORDER_INDEX, BENCH_ORDER_COST } bench_order;

/* The same, also filling *sched (when not NULL) with what each worker did (the jobs
 * read two clocks more each, a few hundred ns), the jobs claimed in `order`. */
int bench_onepath_build_sched(const bench_level *lv, const struct op_settings *s, bench_upto upto,
                              int threads, void *workers, bench_order order, bench_result *res,
                              bench_sched *sched, char *err, size_t errlen);
/* An op_pool of `threads` (bench_workers_new_fn), and its free. */
void *bench_onepath_workers_new(int threads);
void bench_onepath_workers_free(void *workers);

#endif
