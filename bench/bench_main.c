/*
 * onepath-bench: onepath against Recast 1.5.1, side by side, on the same levels in
 * the same process run.
 *
 *   onepath-bench [--level PATH]... [--gen KIND:SIZE[:SEED]]... [--stage
 * spans|regions|contours|all]
 *                 [--reps N] [--threads N] [--also-threads N] [--set key=value]... [--json]
 *                 [--recast-only | --onepath-only] [--no-mem] [--fresh-threads] [--workers]
 *                 [--order auto|index|cost]
 *
 * Per level: one untimed warm-up build of each side, then N reps alternating
 * onepath, Recast, onepath, Recast ... Each stage group's time is the median over
 * reps; the total is the median of the per-rep totals over the stage groups both
 * sides time. The ratio is onepath / Recast (below 1: onepath is faster).
 * Memory: each side's own allocator count (Recast's alloc hooks, onepath's arena
 * peaks), and the peak RSS of a fresh child process (this program re-executed with
 * --mem-child) that loads the level and builds it once with that side only.
 * --also-threads N: each rep also builds both sides with N workers (after the
 * --threads builds, same alternation) and reports their median wall times and the
 * speed-up wall(--threads) / wall(N).
 * Threads: each side keeps its workers for the whole run (made before the warm-up,
 * one set per side and thread count: ours an op_pool, Recast's std::threads), as a
 * daemon or a bake farm does; --fresh-threads makes every build start and end its
 * own, as a one-shot `onepath bake` does.
 * --workers: our side also reports, per thread count, what each worker did (busy thread
 * CPU and wall inside tile jobs, idle time, jobs), the longest tile against the
 * critical-path bound max(longest, sum / workers), and the serial parts around the tile
 * section; medians over reps, worker rows from the last rep. --order index|cost: our
 * side claims its tiles in index order, or heaviest first, whatever the thread count
 * (auto, the default: as bake, heaviest first with several workers).
 * Output: a table on stdout, or one JSON document with --json.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onepath/levelgen.h"
#include "onepath/settings.h"
#include "bench.h"
#include "onepath_side.h"
#include "recast_side.h"

#define MAX_LEVELS 64
#define MAX_SETS   64
#define MAX_REPS   1000

enum { SIDE_OURS = 0, SIDE_RECAST = 1, NSIDES = 2 };
static const char *const side_names[NSIDES] = {"onepath", "recast"};

typedef struct options {
    const char *levels[MAX_LEVELS]; /* "PATH" or "gen:KIND:SIZE" */
    int nlevels;
    const char *sets[MAX_SETS]; /* key=value, passed on to --mem-child */
    int nsets;
    const char *stage_arg;
    bench_upto upto;
    int reps, threads, threads2, json, recast_only, onepath_only, mem, fresh, workers;
    bench_order order;     /* our side's claim order (--order) */
    const char *mem_child; /* side name in a --mem-child process, else NULL */
    op_settings settings;
    char gen_specs[MAX_LEVELS][300]; /* storage of the "gen:" level specs */
} options;

/* Figures of one build's schedule (bench_sched), machine-independent where possible. */
enum {
    SF_PREP_WALL,  /* level preparation, wall ms */
    SF_PREP_CPU,   /* its CPU on the calling thread, ms */
    SF_ORDER,      /* job order, thread CPU ms */
    SF_ASSEMBLE,   /* result assembly, thread CPU ms */
    SF_SUM_CPU,    /* thread CPU of all tile jobs, ms */
    SF_LONGEST,    /* the longest job's thread CPU, ms */
    SF_BOUND,      /* critical-path bound max(longest, sum / workers), CPU ms */
    SF_MAX_BUSY,   /* the busiest worker's CPU in jobs, ms */
    SF_BALANCE,    /* max busy / mean busy (CPU) */
    SF_SCHED,      /* max busy / bound: what the schedule lost (1: nothing) */
    SF_WALL,       /* the tile section, wall ms */
    SF_WALL_BOUND, /* section wall / max(longest wall, sum wall / workers) */
    SF_IDLE,       /* mean over workers of section wall - busy wall, ms */
    SF_IDLE_SHARE, /* that / section wall */
    SF_STRETCH,    /* sum wall / sum CPU inside jobs (1 on a quiet host) */
    SF_START,      /* latest first job start of a worker, from the section's start, ms */
    SF_SPREAD,     /* last back minus first back of the workers' last jobs, ms */
    SF_TAIL,       /* section end minus the last job's end (the return to the caller), ms */
    SF_SIM_COST,   /* list schedule in bake's order on sim_threads workers, over its bound */
    SF_SIM_INDEX,  /* the same in index order */
    SF_SIM_ORACLE, /* the same in the order of the measured times */
    SF_PATH,       /* CPU critical path: prep CPU + order + max busy + assembly, ms */
    SF_SERIAL,     /* (prep CPU + order + assembly) / path */
    SF_N
};
static const char *const sf_names[SF_N] = {"prepare_wall_ms",
                                           "prepare_cpu_ms",
                                           "order_cpu_ms",
                                           "assemble_cpu_ms",
                                           "tiles_cpu_ms",
                                           "longest_tile_cpu_ms",
                                           "bound_cpu_ms",
                                           "max_busy_cpu_ms",
                                           "balance",
                                           "sched_loss",
                                           "section_wall_ms",
                                           "section_wall_over_bound",
                                           "idle_ms",
                                           "idle_share",
                                           "stretch",
                                           "start_delay_ms",
                                           "end_spread_ms",
                                           "return_ms",
                                           "sim_cost_over_bound",
                                           "sim_index_over_bound",
                                           "sim_oracle_over_bound",
                                           "path_cpu_ms",
                                           "serial_share"};

static void sched_figures(const bench_sched *sc, double f[SF_N])
{
    int w = sc->threads > 0 ? sc->threads : 1;
    double max_busy = 0.0, max_wall = 0.0, idle = 0.0, start = 0.0, end0 = 0.0, end1 = 0.0;
    for (int k = 0; k < sc->workers; k++) {
        start = sc->w[k].first_ms > start ? sc->w[k].first_ms : start;
        end0 = k == 0 || sc->w[k].last_ms < end0 ? sc->w[k].last_ms : end0;
        end1 = sc->w[k].last_ms > end1 ? sc->w[k].last_ms : end1;
        max_busy = sc->w[k].busy_cpu_ms > max_busy ? sc->w[k].busy_cpu_ms : max_busy;
        idle += sc->section_wall_ms - sc->w[k].busy_wall_ms;
    }
    idle += (double)(w - sc->workers) * sc->section_wall_ms; /* workers that got no job */
    double mean = sc->sum_cpu_ms / w;
    double bound = sc->longest_cpu_ms > mean ? sc->longest_cpu_ms : mean;
    max_wall = sc->sum_wall_ms / w;
    max_wall = sc->longest_wall_ms > max_wall ? sc->longest_wall_ms : max_wall;
    f[SF_PREP_WALL] = sc->prepare_wall_ms;
    f[SF_PREP_CPU] = sc->prepare_cpu_ms;
    f[SF_ORDER] = sc->order_cpu_ms;
    f[SF_ASSEMBLE] = sc->assemble_cpu_ms;
    f[SF_SUM_CPU] = sc->sum_cpu_ms;
    f[SF_LONGEST] = sc->longest_cpu_ms;
    f[SF_BOUND] = bound;
    f[SF_MAX_BUSY] = max_busy;
    f[SF_BALANCE] = mean > 0.0 ? max_busy / mean : 0.0;
    f[SF_SCHED] = bound > 0.0 ? max_busy / bound : 0.0;
    f[SF_WALL] = sc->section_wall_ms;
    f[SF_WALL_BOUND] = max_wall > 0.0 ? sc->section_wall_ms / max_wall : 0.0;
    f[SF_IDLE] = idle / w;
    f[SF_IDLE_SHARE] = sc->section_wall_ms > 0.0 ? idle / w / sc->section_wall_ms : 0.0;
    f[SF_STRETCH] = sc->sum_cpu_ms > 0.0 ? sc->sum_wall_ms / sc->sum_cpu_ms : 0.0;
    double sb = sc->sum_cpu_ms / (sc->sim_threads > 0 ? sc->sim_threads : 1);
    sb = sc->longest_cpu_ms > sb ? sc->longest_cpu_ms : sb;
    f[SF_SIM_COST] = sb > 0.0 ? sc->sim_cost_ms / sb : 0.0;
    f[SF_SIM_INDEX] = sb > 0.0 ? sc->sim_index_ms / sb : 0.0;
    f[SF_SIM_ORACLE] = sb > 0.0 ? sc->sim_oracle_ms / sb : 0.0;
    f[SF_START] = start;
    f[SF_SPREAD] = end1 - end0;
    f[SF_TAIL] = sc->section_wall_ms - end1;
    double serial = sc->prepare_cpu_ms + sc->order_cpu_ms + sc->assemble_cpu_ms;
    f[SF_PATH] = serial + max_busy;
    f[SF_SERIAL] = f[SF_PATH] > 0.0 ? serial / f[SF_PATH] : 0.0;
}

/* What one side measured on one level. */
typedef struct side_stats {
    int ok;        /* built without error */
    char err[320]; /* why not */
    bench_result last;
    double med_ms[BENCH_NSTAGES];
    double med_total, med_wall;
    double med_wall2;  /* median wall time with --also-threads workers (0: not run) */
    double med_cpu;    /* median process CPU time of a whole build (all threads) */
    long maxrss_kb;    /* child's peak RSS, -1 unknown */
    long base_rss_kb;  /* child's RSS after loading, before building */
    size_t child_heap; /* allocator peak seen by the child */
    /* --workers (our side): [0] --threads builds, [1] --also-threads builds */
    double sched_med[2][SF_N]; /* medians over reps */
    bench_sched sched_last[2]; /* the last rep's build */
} side_stats;

/* ===== options ===== */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: onepath-bench [--level PATH]... [--gen KIND:SIZE[:SEED]]...\n"
            "         [--stage spans|regions|contours|all] [--reps N] [--threads N]\n"
            "         [--also-threads N]\n"
            "         [--set key=value]... [--json] [--recast-only | --onepath-only] [--no-mem]\n"
            "         [--fresh-threads] [--workers] [--order auto|index|cost]\n"
            "KIND:SIZE[:SEED]: op_levelgen (kinds " OP_LEVELGEN_KINDS "; SIZE 16..1024 m,\n"
            "  SEED 1 by default). Default level:\n"
            "  " OP_BENCH_DEFAULT_LEVEL "\n");
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_stage(const char *s, bench_upto *u)
{
    static const char *const names[] = {"spans", "regions", "contours", "all"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            *u = (bench_upto)i;
            return 0;
        }
    }
    return -1;
}

/* --set key=value: one op_settings field. */
static int parse_set(const char *v, op_settings *s)
{
    char key[64];
    const char *eq = strchr(v, '=');
    if (!eq || (size_t)(eq - v) >= sizeof key)
        return -1;
    memcpy(key, v, (size_t)(eq - v));
    key[eq - v] = '\0';
    op_err e;
    op_err_clear(&e);
    if (op_settings_set(s, key, eq + 1, &e) == OP_OK)
        return 0;
    fprintf(stderr, "onepath-bench: %s\n", e.msg);
    return -1;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->reps = 5;
    o->threads = 1;
    o->mem = 1;
    o->upto = BENCH_UPTO_ALL;
    o->stage_arg = "all";
    op_settings_default(&o->settings);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = (i + 1 < argc) ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--json") || !strcmp(a, "--recast-only") || !strcmp(a, "--no-mem") ||
            !strcmp(a, "--onepath-only") || !strcmp(a, "--fresh-threads") ||
            !strcmp(a, "--workers")) {
            o->workers |= !strcmp(a, "--workers");
            o->fresh |= !strcmp(a, "--fresh-threads");
            o->onepath_only |= !strcmp(a, "--onepath-only");
            o->json |= !strcmp(a, "--json");
            o->recast_only |= !strcmp(a, "--recast-only");
            o->mem &= !!strcmp(a, "--no-mem");
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (!v) {
            fprintf(stderr, "onepath-bench: %s needs a value\n", a);
            return -1;
        }
        i++;
        if ((!strcmp(a, "--level") || !strcmp(a, "--gen")) && o->nlevels < MAX_LEVELS) {
            if (!strcmp(a, "--gen")) {
                snprintf(o->gen_specs[o->nlevels], sizeof o->gen_specs[0], "gen:%s", v);
                v = o->gen_specs[o->nlevels];
            }
            o->levels[o->nlevels++] = v;
        } else if (!strcmp(a, "--stage")) {
            bad = parse_stage(v, &o->upto);
            o->stage_arg = v;
        } else if (!strcmp(a, "--reps")) {
            bad = parse_int(v, 1, MAX_REPS, &o->reps);
        } else if (!strcmp(a, "--threads")) {
            bad = parse_int(v, 1, 256, &o->threads);
        } else if (!strcmp(a, "--also-threads")) {
            bad = parse_int(v, 1, 256, &o->threads2);
        } else if (!strcmp(a, "--order")) {
            bad = strcmp(v, "auto") && strcmp(v, "index") && strcmp(v, "cost");
            o->order = !strcmp(v, "index")  ? BENCH_ORDER_INDEX
                       : !strcmp(v, "cost") ? BENCH_ORDER_COST
                                            : BENCH_ORDER_AUTO;
        } else if (!strcmp(a, "--mem-child")) {
            o->mem_child = v;
        } else if (!strcmp(a, "--set") && o->nsets < MAX_SETS) {
            bad = parse_set(v, &o->settings);
            o->sets[o->nsets++] = v;
        } else {
            bad = 1;
        }
        if (bad) {
            fprintf(stderr, "onepath-bench: bad option %s %s\n", a, v);
            return -1;
        }
    }
    op_err e;
    op_err_clear(&e);
    if (op_settings_validate(&o->settings, &e) != OP_OK) {
        fprintf(stderr, "onepath-bench: settings: %s\n", e.msg);
        return -1;
    }
    if (o->nlevels == 0)
        o->levels[o->nlevels++] = OP_BENCH_DEFAULT_LEVEL;
    if (o->recast_only && o->onepath_only) {
        fprintf(stderr, "onepath-bench: --recast-only and --onepath-only exclude each other\n");
        return -1;
    }
    return 0;
}

static bench_build_fn side_fn(int side)
{
    return side == SIDE_RECAST ? bench_recast_build : bench_onepath_build;
}

static void *workers_new(int side, int threads)
{
    return side == SIDE_RECAST ? bench_recast_workers_new(threads)
                               : bench_onepath_workers_new(threads);
}

static void workers_free(int side, void *w)
{
    if (side == SIDE_RECAST)
        bench_recast_workers_free(w);
    else
        bench_onepath_workers_free(w);
}

/* ===== statistics ===== */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The last stage group a run builds. */
static int last_stage(bench_upto upto)
{
    return (upto == BENCH_UPTO_ALL) ? BENCH_TILE : BENCH_SPANS + (int)upto;
}

/* Stage groups the run builds and both sides time (prepare..). */
static unsigned common_stages(const side_stats *st, bench_upto upto)
{
    unsigned m = 0;
    for (int k = BENCH_PREPARE; k <= last_stage(upto); k++)
        m |= 1u << k;
    for (int s = 0; s < NSIDES; s++)
        if (st[s].ok)
            m &= ~st[s].last.missing;
    return m;
}

static double total_of(const bench_result *r, unsigned stages)
{
    double t = 0.0;
    for (int k = 0; k < BENCH_NSTAGES; k++)
        if (stages & (1u << k))
            t += r->ms[k];
    return t;
}

/* ===== memory: one fresh child process per side ===== */

static long rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* A "Key:  N kB" line of /proc/self/status, -1 when absent. */
static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && v < 0 && fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* Resets the peak RSS (VmHWM) to the current RSS (Linux: "5" to clear_refs), so that
 * the build's peak is not hidden by a larger peak of loading or generating the level. */
static int reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int bad = fputs("5", f) < 0;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

/* In the child: build once with one side, print "base_kb peak_kb heap": the RSS after
 * loading and the peak RSS during the build (VmRSS and VmHWM after a peak reset; where
 * that is not possible, ru_maxrss before and after). */
static int mem_child_main(const options *o)
{
    int side = !strcmp(o->mem_child, "recast") ? SIDE_RECAST : SIDE_OURS;
    bench_build_fn fn = side_fn(side);
    bench_level lv;
    char err[320];
    bench_result r;
    if (!fn || bench_level_load(o->levels[0], &lv, err, sizeof err) != 0)
        return 1;
    int hwm = reset_peak_rss() == 0 && status_kb("VmHWM") > 0;
    long base = hwm ? status_kb("VmRSS") : rss_kb();
    int rc = fn(&lv, &o->settings, o->upto, o->threads, NULL, &r, err, sizeof err);
    printf("%ld %ld %zu\n", base, hwm ? status_kb("VmHWM") : rss_kb(), r.heap_peak);
    bench_level_free(&lv);
    return rc == 0 ? 0 : 1;
}

static void measure_child(const options *o, const char *level, int side, side_stats *st)
{
    st->maxrss_kb = st->base_rss_kb = -1;
    const char *argv[16 + 2 * MAX_SETS];
    char threads[16];
    int n = 0;
    snprintf(threads, sizeof threads, "%d", o->threads);
    argv[n++] = "onepath-bench";
    argv[n++] = "--mem-child";
    argv[n++] = side_names[side];
    argv[n++] = strncmp(level, "gen:", 4) ? "--level" : "--gen";
    argv[n++] = strncmp(level, "gen:", 4) ? level : level + 4;
    argv[n++] = "--stage";
    argv[n++] = o->stage_arg;
    argv[n++] = "--threads";
    argv[n++] = threads;
    for (int i = 0; i < o->nsets; i++) {
        argv[n++] = "--set";
        argv[n++] = o->sets[i];
    }
    argv[n] = NULL;
    int fd[2];
    if (pipe(fd) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    char buf[128] = "";
    FILE *f = (pid > 0) ? fdopen(fd[0], "r") : NULL;
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = '\0';
        fclose(f);
    } else {
        close(fd[0]);
    }
    int status = 0;
    if (pid > 0)
        waitpid(pid, &status, 0);
    if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        sscanf(buf, "%ld %ld %zu", &st->base_rss_kb, &st->maxrss_kb, &st->child_heap);
}

/* ===== one level ===== */

/* Per-rep samples of one side. */
typedef struct side_samples {
    double ms[BENCH_NSTAGES][MAX_REPS];
    double total[MAX_REPS], wall[MAX_REPS], wall2[MAX_REPS], cpu[MAX_REPS];
    double sched[2][SF_N][MAX_REPS]; /* --workers: per thread count set, per figure */
} side_samples;

/* CPU time of the process (all threads), in ms: less disturbed than wall time by
 * other processes on a shared machine. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* One build of side s; on failure st->ok drops to 0 and the message is printed. With
 * sched (our side only), what the workers did. */
static int build_sched(const options *o, const bench_level *lv, int s, int threads, void *workers,
                       side_stats *st, bench_result *out, bench_sched *sched)
{
    bench_result r;
    double c0 = cpu_ms();
    int rc =
        (sched || o->order != BENCH_ORDER_AUTO) && s == SIDE_OURS
            ? bench_onepath_build_sched(lv, &o->settings, o->upto, threads, workers, o->order, &r,
                                        sched, st->err, sizeof st->err)
            : side_fn(s)(lv, &o->settings, o->upto, threads, workers, &r, st->err, sizeof st->err);
    r.cpu_ms = cpu_ms() - c0;
    if (rc != 0) {
        if (st->ok)
            fprintf(stderr, "onepath-bench: %s: %s\n", side_names[s], st->err);
        st->ok = 0;
        return -1;
    }
    *out = r;
    return 0;
}

static int build_once(const options *o, const bench_level *lv, int s, int threads, void *workers,
                      side_stats *st, bench_result *out)
{
    return build_sched(o, lv, s, threads, workers, st, out, NULL);
}

/* A timed build of set k (0: --threads, 1: --also-threads), its schedule kept with
 * --workers on our side. */
static int build_rep(const options *o, const bench_level *lv, int s, int k, void *workers,
                     side_stats *st, side_samples *x, int rep, bench_result *out)
{
    int threads = k ? o->threads2 : o->threads;
    bench_sched *sc = o->workers && s == SIDE_OURS ? &st->sched_last[k] : NULL;
    if (build_sched(o, lv, s, threads, workers, st, out, sc) != 0)
        return -1;
    if (sc) {
        double f[SF_N];
        sched_figures(sc, f);
        for (int i = 0; i < SF_N; i++)
            x->sched[k][i][rep] = f[i];
    }
    return 0;
}

static void take_medians(const options *o, side_samples *x, side_stats *st)
{
    for (int k = 0; k < BENCH_NSTAGES; k++)
        st->med_ms[k] = median(x->ms[k], o->reps);
    st->med_total = median(x->total, o->reps);
    st->med_wall = median(x->wall, o->reps);
    st->med_cpu = median(x->cpu, o->reps);
    st->med_wall2 = o->threads2 ? median(x->wall2, o->reps) : 0.0;
    for (int k = 0; o->workers && k < (o->threads2 ? 2 : 1); k++)
        for (int i = 0; i < SF_N; i++)
            st->sched_med[k][i] = median(x->sched[k][i], o->reps);
}

/* Warm-up, then reps alternating the sides (A B A B ...), then the memory children.
 * Returns the stage groups summed in the totals. */
static unsigned run_level(const options *o, const bench_level *lv, side_stats st[NSIDES])
{
    const int active[NSIDES] = {!o->recast_only, !o->onepath_only};
    side_samples *x = calloc(NSIDES, sizeof *x);
    void *w1[NSIDES] = {NULL, NULL}, *w2[NSIDES] = {NULL, NULL}; /* kept workers */
    memset(st, 0, NSIDES * sizeof *st);
    for (int s = 0; s < NSIDES; s++) { /* untimed: pages in code and data */
        st[s].ok = active[s] && x != NULL;
        if (st[s].ok && !o->fresh) {
            w1[s] = workers_new(s, o->threads);
            w2[s] = o->threads2 ? workers_new(s, o->threads2) : NULL;
            if (!w1[s] || (o->threads2 && !w2[s])) {
                fprintf(stderr, "onepath-bench: %s: cannot start the worker threads\n",
                        side_names[s]);
                st[s].ok = 0;
            }
        }
        if (st[s].ok)
            build_once(o, lv, s, o->threads, w1[s], &st[s], &st[s].last);
        bench_result warm;
        if (st[s].ok && o->threads2) /* the second set of workers warms up as well */
            build_once(o, lv, s, o->threads2, w2[s], &st[s], &warm);
        else if (active[s] && !x) /* (it printed for every run without --also-threads) */
            fprintf(stderr, "onepath-bench: out of memory for samples\n");
    }
    unsigned common = common_stages(st, o->upto);
    for (int rep = 0; rep < o->reps; rep++) {
        for (int s = 0; s < NSIDES; s++) {
            if (!st[s].ok || build_rep(o, lv, s, 0, w1[s], &st[s], &x[s], rep, &st[s].last) != 0)
                continue;
            for (int k = 0; k < BENCH_NSTAGES; k++)
                x[s].ms[k][rep] = st[s].last.ms[k];
            x[s].total[rep] = total_of(&st[s].last, common);
            x[s].wall[rep] = st[s].last.wall_ms;
            x[s].cpu[rep] = st[s].last.cpu_ms;
        }
        for (int s = 0; s < NSIDES && o->threads2; s++) {
            bench_result r;
            if (st[s].ok && build_rep(o, lv, s, 1, w2[s], &st[s], &x[s], rep, &r) == 0)
                x[s].wall2[rep] = r.wall_ms;
        }
    }
    for (int s = 0; s < NSIDES; s++) {
        workers_free(s, w1[s]);
        workers_free(s, w2[s]);
        st[s].maxrss_kb = st[s].base_rss_kb = -1;
        if (!st[s].ok)
            continue;
        take_medians(o, &x[s], &st[s]);
        if (o->mem)
            measure_child(o, lv->name, s, &st[s]);
    }
    free(x);
    return common;
}

/* ===== output ===== */

static int shown(const side_stats *st, int s, int k)
{
    return st[s].ok && !(st[s].last.missing & (1u << k));
}

static void fmt_ms(char *buf, size_t n, const side_stats *st, int s, int k, int active)
{
    if (!active)
        snprintf(buf, n, "skipped");
    else if (!st[s].ok)
        snprintf(buf, n, "failed");
    else if (!shown(st, s, k))
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, "%.2f", st[s].med_ms[k]);
}

/* Our side's total or wall cell. */
static void fmt_sum(char *buf, size_t n, const side_stats *st, double v, int active)
{
    if (!active)
        snprintf(buf, n, "skipped");
    else if (!st[SIDE_OURS].ok)
        snprintf(buf, n, "failed");
    else
        snprintf(buf, n, "%.2f", v);
}

static void fmt_ratio(char *buf, size_t n, double a, double b, int ok)
{
    if (ok && b > 0.0)
        snprintf(buf, n, "%.2f", a / b);
    else
        snprintf(buf, n, "-");
}

/* --workers, table form: each thread count set, then the two sets against each other. */
static void print_sched(const options *o, const side_stats *st)
{
    int sets = o->threads2 ? 2 : 1;
    for (int k = 0; k < sets; k++) {
        const double *f = st->sched_med[k];
        const bench_sched *sc = &st->sched_last[k];
        printf("onepath  %d worker(s), medians of %d reps (CPU: thread CPU time):\n",
               k ? o->threads2 : o->threads, o->reps);
        printf("  serial   prepare %.2f ms wall, %.2f ms CPU (calling thread); order %.3f, "
               "assembly %.3f ms CPU; %.1f %% of the CPU critical path %.2f ms\n",
               f[SF_PREP_WALL], f[SF_PREP_CPU], f[SF_ORDER], f[SF_ASSEMBLE], 100.0 * f[SF_SERIAL],
               f[SF_PATH]);
        printf("  tiles    sum %.2f ms CPU; longest %.2f ms CPU (last rep: tile %d, claimed "
               "#%d, started at %.2f ms); bound max(longest, sum/%d) %.2f ms\n",
               f[SF_SUM_CPU], f[SF_LONGEST], sc->longest_index, sc->longest_rank + 1,
               sc->longest_start_ms, sc->threads, f[SF_BOUND]);
        printf("  balance  busiest %.2f ms CPU: max/mean %.3f, %.3fx the bound; section "
               "%.2f ms wall = %.3fx its wall bound; idle %.2f ms a worker (%.1f %%); "
               "stretch wall/CPU in jobs %.3f\n",
               f[SF_MAX_BUSY], f[SF_BALANCE], f[SF_SCHED], f[SF_WALL], f[SF_WALL_BOUND], f[SF_IDLE],
               100.0 * f[SF_IDLE_SHARE], f[SF_STRETCH]);
        printf("  wall     last worker's first job at %.3f ms, workers' ends %.3f ms apart, "
               "return to the caller %.3f ms after the last job\n",
               f[SF_START], f[SF_SPREAD], f[SF_TAIL]);
        printf("  order    these jobs' CPU times list-scheduled on %d workers, makespan over "
               "the bound: heaviest first (bake) %.4f, index order %.4f, by measured time "
               "%.4f\n",
               sc->sim_threads, f[SF_SIM_COST], f[SF_SIM_INDEX], f[SF_SIM_ORACLE]);
        for (int w = 0; w < sc->workers; w++)
            printf("  worker %d jobs %d (%d with a mesh), busy %.2f ms CPU, %.2f ms wall, "
                   "first job at %.2f, last back at %.2f of %.2f ms (last rep)\n",
                   w, sc->w[w].jobs, sc->w[w].built, sc->w[w].busy_cpu_ms, sc->w[w].busy_wall_ms,
                   sc->w[w].first_ms, sc->w[w].last_ms, sc->section_wall_ms);
    }
    if (sets == 2) {
        const double *a = st->sched_med[0], *b = st->sched_med[1];
        printf("  %d against %d workers: tile CPU x%.3f (per-tile inflation); CPU critical "
               "path %.2f / %.2f ms: modelled speed-up %.3f\n",
               o->threads2, o->threads, a[SF_SUM_CPU] > 0 ? b[SF_SUM_CPU] / a[SF_SUM_CPU] : 0.0,
               a[SF_PATH], b[SF_PATH], b[SF_PATH] > 0 ? a[SF_PATH] / b[SF_PATH] : 0.0);
    }
}

static void json_sched(const options *o, const side_stats *st)
{
    int sets = o->threads2 ? 2 : 1;
    printf(",\"workers\":{");
    for (int k = 0; k < sets; k++) {
        const bench_sched *sc = &st->sched_last[k];
        printf("%s\"threads_%d\":{", k ? "," : "", k ? o->threads2 : o->threads);
        for (int i = 0; i < SF_N; i++)
            printf("\"%s\":%.4f,", sf_names[i], st->sched_med[k][i]);
        printf("\"longest_tile\":%d,\"longest_rank\":%d,\"per_worker\":[", sc->longest_index,
               sc->longest_rank);
        for (int w = 0; w < sc->workers; w++)
            printf("%s{\"jobs\":%d,\"built\":%d,\"busy_cpu_ms\":%.4f,\"busy_wall_ms\":%.4f,"
                   "\"first_ms\":%.4f,\"last_ms\":%.4f}",
                   w ? "," : "", sc->w[w].jobs, sc->w[w].built, sc->w[w].busy_cpu_ms,
                   sc->w[w].busy_wall_ms, sc->w[w].first_ms, sc->w[w].last_ms);
        printf("]}");
    }
    if (sets == 2) {
        const double *a = st->sched_med[0], *b = st->sched_med[1];
        printf(",\"tile_cpu_inflation\":%.4f,\"modelled_speedup\":%.4f",
               a[SF_SUM_CPU] > 0 ? b[SF_SUM_CPU] / a[SF_SUM_CPU] : 0.0,
               b[SF_PATH] > 0 ? a[SF_PATH] / b[SF_PATH] : 0.0);
    }
    printf("}");
}

static void print_table(const options *o, const bench_level *lv, const side_stats *st,
                        unsigned common, int ours_active)
{
    char a[32], b[32], r[32];
    char tiles[32] = "skipped";
    if (ours_active && st[SIDE_OURS].ok)
        snprintf(tiles, sizeof tiles, "%d", st[SIDE_OURS].last.tiles_total);
    printf("\n%s: %d triangles, %d tiles (onepath %s), stage %s, reps %d, threads %d\n", lv->name,
           lv->ntris, st[SIDE_RECAST].last.tiles_total, tiles, o->stage_arg, o->reps, o->threads);
    printf("%-22s %12s %12s %8s\n", "stage (median ms)", "onepath", "recast", "ratio");
    for (int k = 0; k <= last_stage(o->upto); k++) {
        fmt_ms(a, sizeof a, st, SIDE_OURS, k, ours_active);
        fmt_ms(b, sizeof b, st, SIDE_RECAST, k, !o->onepath_only);
        fmt_ratio(r, sizeof r, st[SIDE_OURS].med_ms[k], st[SIDE_RECAST].med_ms[k],
                  ours_active && shown(st, SIDE_OURS, k) && shown(st, SIDE_RECAST, k));
        printf("%-22s %12s %12s %8s\n", bench_stage_name((bench_stage)k), a, b, r);
    }
    int both = ours_active && st[SIDE_OURS].ok && st[SIDE_RECAST].ok;
    char stages[96] = "";
    for (int k = BENCH_PREPARE; k < BENCH_NSTAGES; k++)
        if (common & (1u << k))
            snprintf(stages + strlen(stages), sizeof stages - strlen(stages), "%s%s",
                     stages[0] ? "+" : "", bench_stage_name((bench_stage)k));
    fmt_sum(a, sizeof a, st, st[SIDE_OURS].med_total, ours_active);
    fmt_ratio(r, sizeof r, st[SIDE_OURS].med_total, st[SIDE_RECAST].med_total, both);
    printf("%-22s %12s %12.2f %8s   (%s)\n", "total", a, st[SIDE_RECAST].med_total, r, stages);
    fmt_sum(a, sizeof a, st, st[SIDE_OURS].med_wall, ours_active);
    fmt_ratio(r, sizeof r, st[SIDE_OURS].med_wall, st[SIDE_RECAST].med_wall, both);
    printf("%-22s %12s %12.2f %8s   (whole run, all stages each side builds)\n", "wall", a,
           st[SIDE_RECAST].med_wall, r);
    fmt_sum(a, sizeof a, st, st[SIDE_OURS].med_cpu, ours_active);
    fmt_ratio(r, sizeof r, st[SIDE_OURS].med_cpu, st[SIDE_RECAST].med_cpu, both);
    printf("%-22s %12s %12.2f %8s   (process CPU time of the whole run)\n", "cpu", a,
           st[SIDE_RECAST].med_cpu, r);
    if (o->threads2 && both)
        printf("%-22s %12.2f %12.2f %8.2f   (wall, %d workers; speed-up over %d: onepath %.2f, "
               "recast %.2f)\n",
               "wall threads", st[SIDE_OURS].med_wall2, st[SIDE_RECAST].med_wall2,
               st[SIDE_OURS].med_wall2 / st[SIDE_RECAST].med_wall2, o->threads2, o->threads,
               st[SIDE_OURS].med_wall / st[SIDE_OURS].med_wall2,
               st[SIDE_RECAST].med_wall / st[SIDE_RECAST].med_wall2);
    else if (o->threads2) /* one side only (profiling): its own speed-up */
        for (int s = 0; s < NSIDES; s++)
            if (st[s].ok && (s == SIDE_RECAST || ours_active))
                printf("%-22s %12.2f   (wall, %d workers; %s speed-up over %d: %.2f)\n",
                       "wall threads", st[s].med_wall2, o->threads2, side_names[s], o->threads,
                       st[s].med_wall / st[s].med_wall2);
    for (int s = 0; s < NSIDES; s++) {
        if (!st[s].ok)
            continue;
        const bench_result *x = &st[s].last;
        printf("%-8s tiles %d/%d (%d data)  spans %ld  regions %ld  contours %ld  polys %ld  "
               "verts %ld  detail tris %ld  tile bytes %zu\n",
               side_names[s], x->tiles_built, x->tiles_total, x->tile_layers, x->spans, x->regions,
               x->contours, x->polys, x->verts, x->detail_tris, x->tile_bytes);
        printf("%-8s heap peak %.1f KiB (own allocator); child max RSS %ld KiB (%ld KiB after "
               "loading)\n",
               side_names[s], (double)x->heap_peak / 1024.0, st[s].maxrss_kb, st[s].base_rss_kb);
    }
    if (o->workers && ours_active && st[SIDE_OURS].ok)
        print_sched(o, &st[SIDE_OURS]);
}

static void json_side(const options *o, const side_stats *st, int s, int active)
{
    bench_upto upto = o->upto;
    int threads2 = o->threads2;
    printf("\"%s\":{", side_names[s]);
    if (!active || !st[s].ok) {
        printf("\"status\":\"%s\"}", active ? "failed" : "skipped");
        return;
    }
    const bench_result *x = &st[s].last;
    printf("\"status\":\"ok\",\"median_ms\":{");
    int first = 1;
    for (int k = 0; k <= last_stage(upto); k++) {
        if (x->missing & (1u << k))
            continue;
        printf("%s\"%s\":%.4f", first ? "" : ",", bench_stage_name((bench_stage)k),
               st[s].med_ms[k]);
        first = 0;
    }
    printf("}");
    if (threads2)
        printf(",\"wall_ms_threads_%d\":%.4f,\"speedup\":%.4f", threads2, st[s].med_wall2,
               st[s].med_wall / st[s].med_wall2);
    printf(",\"cpu_ms\":%.4f", st[s].med_cpu);
    printf(",\"total_ms\":%.4f,\"wall_ms\":%.4f,\"tiles_total\":%d,\"tiles_built\":%d,"
           "\"tile_layers\":%d,\"spans\":%ld,\"regions\":%ld,\"contours\":%ld,\"polys\":%ld,"
           "\"verts\":%ld,"
           "\"detail_tris\":%ld,\"tile_bytes\":%zu,\"heap_peak\":%zu,\"child_maxrss_kb\":%ld,"
           "\"child_base_rss_kb\":%ld",
           st[s].med_total, st[s].med_wall, x->tiles_total, x->tiles_built, x->tile_layers,
           x->spans, x->regions, x->contours, x->polys, x->verts, x->detail_tris, x->tile_bytes,
           x->heap_peak, st[s].maxrss_kb, st[s].base_rss_kb);
    if (o->workers && s == SIDE_OURS)
        json_sched(o, &st[s]);
    printf("}");
}

static void print_json(const options *o, const bench_level *lv, const side_stats *st,
                       unsigned common, int ours_active, int first)
{
    printf("%s{\"level\":\"%s\",\"triangles\":%d,\"stage\":\"%s\",\"reps\":%d,\"threads\":%d,",
           first ? "" : ",", lv->name, lv->ntris, o->stage_arg, o->reps, o->threads);
    printf("\"total_stages\":[");
    for (int k = BENCH_PREPARE, n = 0; k < BENCH_NSTAGES; k++)
        if (common & (1u << k))
            printf("%s\"%s\"", n++ ? "," : "", bench_stage_name((bench_stage)k));
    printf("],");
    json_side(o, st, SIDE_OURS, ours_active);
    printf(",");
    json_side(o, st, SIDE_RECAST, !o->onepath_only);
    printf(",\"ratio\":{");
    int both = ours_active && st[SIDE_OURS].ok && st[SIDE_RECAST].ok, n = 0;
    for (int k = BENCH_PREPARE; both && k <= last_stage(o->upto); k++)
        if (shown(st, SIDE_OURS, k) && shown(st, SIDE_RECAST, k) && st[SIDE_RECAST].med_ms[k] > 0)
            printf("%s\"%s\":%.4f", n++ ? "," : "", bench_stage_name((bench_stage)k),
                   st[SIDE_OURS].med_ms[k] / st[SIDE_RECAST].med_ms[k]);
    if (both && st[SIDE_RECAST].med_cpu > 0)
        printf("%s\"cpu\":%.4f", n++ ? "," : "", st[SIDE_OURS].med_cpu / st[SIDE_RECAST].med_cpu);
    if (both && st[SIDE_RECAST].med_total > 0)
        printf("%s\"total\":%.4f", n ? "," : "",
               st[SIDE_OURS].med_total / st[SIDE_RECAST].med_total);
    printf("}}");
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o) != 0) {
        usage(stderr);
        return 2;
    }
    if (o.mem_child)
        return mem_child_main(&o);
    int ours_active = !o.recast_only;
    int failed = 0, printed = 0;
    if (o.json)
        printf("{\"bench\":\"onepath-bench\",\"levels\":[");
    for (int i = 0; i < o.nlevels; i++) {
        bench_level lv;
        char err[320];
        if (bench_level_load(o.levels[i], &lv, err, sizeof err) != 0) {
            fprintf(stderr, "onepath-bench: %s\n", err);
            failed = 1;
            continue;
        }
        side_stats st[NSIDES];
        unsigned common = run_level(&o, &lv, st);
        failed |= (!o.onepath_only && !st[SIDE_RECAST].ok) || (ours_active && !st[SIDE_OURS].ok);
        if (o.json)
            print_json(&o, &lv, st, common, ours_active, printed++ == 0);
        else
            print_table(&o, &lv, st, common, ours_active);
        bench_level_free(&lv);
    }
    if (o.json)
        printf("]}\n");
    return failed ? 1 : 0;
}
