/*
 * Limits of the `onepath` tool met as the spec and limits.h state them: a tile of 80
 * stacked floors bakes (the core's OP_MAX_LAYERS is 1024; bake once stopped at 64 while
 * inspect built 65), and every file input goes through one bounded reader that refuses
 * directories, character devices and FIFOs by name and stops at --max-input-bytes.
 * Limits are met before the work they bound: a tile of 1,025 layers and a layer one vertex
 * past the limit are refused, naming the tile (and layer), inside a 2 GiB address space.
 */
#define _DEFAULT_SOURCE
#include "op_asan.h"
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onepath/arena.h"
#include "onepath/limits.h"
#include "onepath/tile_codec.h"
#include "op_test.h"

#define ONEPATH OP_BIN_DIR "/onepath"

typedef struct run_result {
    int rc;
    char err[8192];
    char out[8192]; /* stdout's start */
    long maxrss_kb; /* the child's peak RSS */
    double seconds;
    double cpu_seconds; /* the child's user + system time */
} run_result;

static char tmpdir[256];

static void make_tmpdir(void)
{
    op_test_tmpdir(tmpdir, sizeof tmpdir, "onepath_limits_");
}

static void drop_tmpdir(void)
{
    if (tmpdir[0])
        op_test_remove_tree(tmpdir);
}

/* Runs onepath with args (NULL-terminated) in tmpdir, stdout and stderr kept (their start),
 * under an address-space limit of as_mb MiB (0: none). */
static run_result run(long as_mb, const char *const *args)
{
    char errp[4096], outp[4096];
    snprintf(errp, sizeof errp, "%s/.stderr", tmpdir);
    snprintf(outp, sizeof outp, "%s/.stdout", tmpdir);
    const char *argv[64];
    int n = 0;
    argv[n++] = ONEPATH;
    while (args[n - 1] && n < 63) {
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    cr_assert_eq(access(ONEPATH, X_OK), 0, "%s is missing", ONEPATH);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || chdir(tmpdir) != 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(127);
        /* ASan reserves terabytes of shadow address space at start: an address-space
         * limit would stop the sanitizer, not the reader (peak RSS is still checked). */
        if (as_mb > 0 && !OPT_ASAN) {
            struct rlimit rl = {(rlim_t)as_mb << 20, (rlim_t)as_mb << 20};
            setrlimit(RLIMIT_AS, &rl);
        }
        execv(ONEPATH, (char *const *)argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    cr_assert_eq(wait4(pid, &status, 0, &ru), pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    run_result r;
    memset(&r, 0, sizeof r);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.maxrss_kb = ru.ru_maxrss;
    r.cpu_seconds = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    r.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    FILE *f = fopen(errp, "rb");
    if (f) {
        size_t k = fread(r.err, 1, sizeof r.err - 1, f);
        r.err[k] = '\0';
        fclose(f);
    }
    unlink(errp);
    f = fopen(outp, "rb");
    if (f) {
        size_t k = fread(r.out, 1, sizeof r.out - 1, f);
        r.out[k] = '\0';
        fclose(f);
    }
    unlink(outp);
    return r;
}

TestSuite(cli_limits, .init = make_tmpdir, .fini = drop_tmpdir, .timeout = 120);

/* nfloors square floors 4 wu apart (default agent height 2) inside tile (0, 0). */
static void write_stack(const char *name, int nfloors)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    for (int k = 0; k < nfloors; k++) {
        double y = 4.0 * k;
        fprintf(f, "v 2 %g 2\nv 9 %g 2\nv 9 %g 9\nv 2 %g 9\n", y, y, y, y);
    }
    for (int k = 0; k < nfloors; k++)
        fprintf(f, "f %d %d %d\nf %d %d %d\n", 4 * k + 1, 4 * k + 3, 4 * k + 2, 4 * k + 1,
                4 * k + 4, 4 * k + 3);
    fclose(f);
}

Test(cli_limits, bake_keeps_more_than_64_layers_of_one_tile)
{
    cr_assert_gt(OP_MAX_LAYERS, 80);
    write_stack("stack80.obj", 80);
    run_result r = run(0, (const char *const[]){"bake", "stack80.obj", "--set", "partition=layers",
                                                "--json", NULL});
    cr_assert_eq(r.rc, 0, "bake of 80 floors failed: %s", r.err);
    char out[4096];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    cr_assert_eq(mkdir(out, 0755), 0);
    r = run(0, (const char *const[]){"bake", "stack80.obj", "--set", "partition=layers", "--out",
                                     "out", NULL});
    cr_assert_eq(r.rc, 0, "bake --out of 80 floors failed: %s", r.err);
    int n = 0;
    DIR *d = opendir(out);
    struct dirent *de;
    while ((de = readdir(d)))
        n += strncmp(de->d_name, "tile_", 5) == 0;
    closedir(d);
    cr_assert_eq(n, 80, "%d tile files for 80 floors", n);
    /* inspect builds the same tile: the same limit everywhere. */
    r = run(0, (const char *const[]){"inspect", "stack80.obj", "--set", "partition=layers",
                                     "--tile", "0,0", "--stage", "tile", NULL});
    cr_assert_eq(r.rc, 0, "inspect of 80 floors failed: %s", r.err);
}

/* ---- the bounded input reader ---- */

static void assert_refused(const run_result *r, const char *path, const char *kind)
{
    cr_assert_eq(r->rc, 1, "exit %d for %s: %s", r->rc, path, r->err);
    cr_assert(strstr(r->err, path), "the error names no file: %s", r->err);
    cr_assert(strstr(r->err, kind), "the error says not '%s': %s", kind, r->err);
    /* RSS: the tool itself is a few MiB; reading /dev/zero once grew by 200 MB/s. */
    cr_assert_lt(r->maxrss_kb, 64 * 1024, "peak RSS %ld KiB reading %s", r->maxrss_kb, path);
    cr_assert_lt(r->seconds, 10.0, "%.1f s to refuse %s", r->seconds, path);
}

Test(cli_limits, dev_zero_is_refused_at_once_in_little_memory)
{
    run_result r = run(0, (const char *const[]){"bake", "/dev/zero", NULL});
    assert_refused(&r, "/dev/zero", "character device");
    r = run(0, (const char *const[]){"inspect", "/dev/zero", "--tile", "0,0", "--stage", "spans",
                                     NULL});
    assert_refused(&r, "/dev/zero", "character device");
}

Test(cli_limits, a_directory_is_refused_naming_it)
{
    /* Under a 512 MiB address space: asking for 2^63 bytes is no longer possible anyway. */
    run_result r = run(512, (const char *const[]){"bake", tmpdir, NULL});
    assert_refused(&r, tmpdir, "directory");
}

Test(cli_limits, a_fifo_is_refused_without_waiting_for_a_writer)
{
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s/level.obj", tmpdir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    run_result r = run(0, (const char *const[]){"bake", fifo, NULL});
    assert_refused(&r, fifo, "FIFO");
    write_stack("ok.obj", 1);
    char vols[4096];
    snprintf(vols, sizeof vols, "%s/vols.json", tmpdir);
    cr_assert_eq(mkfifo(vols, 0600), 0);
    r = run(0, (const char *const[]){"bake", "ok.obj", "--volumes", vols, NULL});
    assert_refused(&r, vols, "FIFO");
}

Test(cli_limits, max_input_bytes_bounds_every_file_and_names_the_flag)
{
    write_stack("two.obj", 2);
    char path[4096];
    snprintf(path, sizeof path, "%s/two.obj", tmpdir);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    char at[32], below[32];
    snprintf(at, sizeof at, "%lld", (long long)sb.st_size);
    snprintf(below, sizeof below, "%lld", (long long)sb.st_size - 1);
    run_result r = run(0, (const char *const[]){"bake", "two.obj", "--max-input-bytes", at, NULL});
    cr_assert_eq(r.rc, 0, "a file of exactly the limit: %s", r.err);
    r = run(0, (const char *const[]){"bake", "--max-input-bytes", below, "two.obj", NULL});
    cr_assert_eq(r.rc, 1, "one byte past the limit: exit %d", r.rc);
    cr_assert(strstr(r.err, "two.obj") && strstr(r.err, "--max-input-bytes"), "%s", r.err);
    /* The volumes file too. */
    char vols[4096];
    snprintf(vols, sizeof vols, "%s/vols.json", tmpdir);
    FILE *f = fopen(vols, "w");
    cr_assert(f);
    fprintf(f, "[%*s]\n", 4000, "");
    fclose(f);
    r = run(0, (const char *const[]){"bake", "two.obj", "--volumes", "vols.json",
                                     "--max-input-bytes=2000", NULL});
    cr_assert_eq(r.rc, 1);
    cr_assert(strstr(r.err, "vols.json") && strstr(r.err, "--max-input-bytes"), "%s", r.err);
    r = run(0, (const char *const[]){"bake", "two.obj", "--max-input-bytes", "-1", NULL});
    cr_assert_eq(r.rc, 2, "a negative limit is bad usage");
}

/* ---- limits met before the work they bound (issue 16, "limits found late") ---- */

/* A 2 GiB container: the address space the limit tests run in (not under ASan). */
#define CONTAINER_MB 2048

/* Tile size and cell size the generators below place their geometry with, passed to the
 * tool explicitly so that the expected tile is computed here, not read back. */
#define T_STACK 9.6

/* nfloors square floors 4 wu apart inside tile (tx, tz) of tile size T_STACK. */
static void write_stack_at(const char *name, int nfloors, int tx, int tz)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    double ox = tx * T_STACK, oz = tz * T_STACK;
    for (int k = 0; k < nfloors; k++) {
        double y = 4.0 * k;
        fprintf(f, "v %.3f %g %.3f\nv %.3f %g %.3f\nv %.3f %g %.3f\nv %.3f %g %.3f\n", ox + 2, y,
                oz + 2, ox + 9, y, oz + 2, ox + 9, y, oz + 9, ox + 2, y, oz + 9);
    }
    for (int k = 0; k < nfloors; k++)
        fprintf(f, "f %d %d %d\nf %d %d %d\n", 4 * k + 1, 4 * k + 3, 4 * k + 2, 4 * k + 1,
                4 * k + 4, 4 * k + 3);
    fclose(f);
}

/* The tile a world x (or z) lies in: floor(x / tile_size), as build3d-spans.md §1.4. */
static int tile_of(double v, double tile_size)
{
    double q = v / tile_size;
    int t = (int)q;
    return (double)t > q ? t - 1 : t;
}

/* Parses "tile (TX, TZ)" and, when layer is not NULL, "tile (TX, TZ) layer L" out of msg. */
static int parse_tile(const char *msg, int *tx, int *tz, int *layer)
{
    const char *p = strstr(msg, "tile (");
    if (!p)
        return 0;
    if (layer)
        return sscanf(p, "tile (%d, %d) layer %d", tx, tz, layer) == 3;
    return sscanf(p, "tile (%d, %d)", tx, tz) == 2;
}

Test(cli_limits, a_tile_of_1025_layers_is_refused_in_seconds_in_2_gib, .timeout = 600)
{
    /* 1,025 floors over the same columns: each column needs 1,025 layers. Counted before
     * the layer partition, whose overlap pairs grow with the square of the floors (this
     * input once took 232 s and 9.8 GB to reach the same error). */
    const int tx = 2, tz = -3;
    write_stack_at("stack1025.obj", OP_MAX_LAYERS + 1, tx, tz);
    run_result r = run(CONTAINER_MB,
                       (const char *const[]){"bake", "stack1025.obj", "--set", "partition=layers",
                                             "--set", "tile_size=9.6", "--threads", "1", NULL});
    cr_assert_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_assert(strstr(r.err, "OP_MAX_LAYERS"), "not the layer limit: %s", r.err);
    int etx, etz;
    cr_assert(parse_tile(r.err, &etx, &etz, NULL), "the error names no tile: %s", r.err);
    cr_assert_eq(etx, tile_of(tx * T_STACK + 2, T_STACK), "%s", r.err);
    cr_assert_eq(etz, tile_of(tz * T_STACK + 2, T_STACK), "%s", r.err);
    /* The field of 1,025 floors is a few MiB; the pairs once took gigabytes. */
    cr_assert_lt(r.maxrss_kb, 256 * 1024, "peak RSS %ld KiB", r.maxrss_kb);
    cr_assert_lt(r.seconds, 300.0, "%.1f s (a hang bound only)", r.seconds);
}

/* A tile of exactly OP_MAX_LAYERS layers is within the limits and must bake in the same
 * 2 GiB: 1,024 floors over the same columns. The layer partition's column-sharing pairs
 * were every column's k^2 (4.45 GB asked: out of memory); they now follow the columns
 * where the labels change (87 MB peak, 4 s; 44 MiB and 0.4 s of CPU since the
 * sets are read per label, docs/benchmarks.md "Staggered floors"). */
Test(cli_limits, a_tile_of_1024_layers_bakes_in_2_gib, .timeout = 600)
{
    write_stack_at("stack1024.obj", OP_MAX_LAYERS, 2, -3);
    run_result r =
        run(CONTAINER_MB,
            (const char *const[]){"bake", "stack1024.obj", "--set", "partition=layers", "--set",
                                  "tile_size=9.6", "--threads", "1", "--out", "stack1024.d", NULL});
    cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
    cr_assert(strstr(r.out, "1 tiles, 1024 layers, 1024 polygons"), "%s", r.out);
    cr_assert_lt(r.maxrss_kb, 512 * 1024, "peak RSS %ld KiB", r.maxrss_kb);
    cr_assert_lt(r.seconds, 300.0, "%.1f s (a hang bound only)", r.seconds);
}

/* Staggered floors: k annular sectors (radii 12..14 wu around (24, 24), tile size 48: one
 * tile), sector i 4 wu above sector i - 1 and spanning w of k equal angular slots from
 * slot i. A direction lies under about w sectors (plus the few whose edges a cell
 * straddles), so that is all a column holds; but at most floor(k / w) sectors are pairwise
 * apart (a circular-arc graph), so the tile needs at least ceil(k / floor(k / w)) layers.
 * The labels of a column change from one column to the next all round the ring: the
 * column-sharing sets cannot follow a neighbour's, as they do for floors stacked over the
 * same columns. */
static void write_ring(const char *name, int k, int w)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    const double pi = 3.14159265358979323846, cx = 24, cz = 24, r0 = 12, r1 = 14;
    int base = 1;
    for (int i = 0; i < k; i++) {
        double a0 = 2 * pi * i / k, a1 = 2 * pi * (i + w) / k;
        int n = (int)((a1 - a0) / (2 * pi) * 180);
        for (int j = 0; j <= n; j++) {
            double a = a0 + (a1 - a0) * j / n;
            fprintf(f, "v %.4f %.1f %.4f\nv %.4f %.1f %.4f\n", cx + r0 * cos(a), 4.0 * i,
                    cz + r0 * sin(a), cx + r1 * cos(a), 4.0 * i, cz + r1 * sin(a));
        }
        for (int j = 0; j < n; j++) {
            int p = base + 2 * j;
            fprintf(f, "f %d %d %d\nf %d %d %d\n", p, p + 2, p + 1, p + 1, p + 2, p + 3);
        }
        base += 2 * (n + 1);
    }
    fclose(f);
}

Test(cli_limits, staggered_floors_past_the_layer_limit_are_refused_in_2_gib, .timeout = 900)
{
    /* 2,100 sectors of 1,000 slots: columns of about 1,000 spans, at least 1,050 layers.
     * No column holds more than OP_MAX_LAYERS spans, so only the layer assignment can name
     * the limit. Its column-sharing pairs were every column's k^2 (out of memory asking
     * 1.2 GB, after 57 s of linking 1,000-span columns pairwise); then bounded and
     * compacted (31 s, 0.95 GB: 100 M pairs listed and sorted for 4 M distinct); now each
     * label's entering columns are read with a stamp, nothing listed twice: 2.3 s of CPU
     * and 195 MiB (docs/benchmarks.md). */
    write_ring("ring.obj", 2100, 1000);
    run_result r =
        run(CONTAINER_MB, (const char *const[]){"bake", "ring.obj", "--set", "partition=layers",
                                                "--set", "tile_size=48", "--set",
                                                "max_local_extent=100000", "--threads", "1", NULL});
    cr_assert_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_assert(strstr(r.err, "> OP_MAX_LAYERS"), "not the layer limit: %s", r.err);
    int etx, etz;
    cr_assert(parse_tile(r.err, &etx, &etz, NULL), "the error names no tile: %s", r.err);
    cr_assert_eq(etx, 0, "%s", r.err);
    cr_assert_eq(etz, 0, "%s", r.err);
    if (!OPT_ASAN) {
        cr_assert_lt(r.maxrss_kb, 400 * 1024, "peak RSS %ld KiB", r.maxrss_kb);
        cr_assert_lt(r.cpu_seconds, 10.0, "%.1f s of CPU", r.cpu_seconds);
    }
    cr_assert_lt(r.seconds, 300.0, "%.1f s (a hang bound only)", r.seconds);
}

Test(cli_limits, staggered_floors_within_the_layer_limit_bake_in_2_gib, .timeout = 600)
{
    /* 1,000 sectors of 500 slots: columns of about 500 spans, at least 500 layers, a legal
     * tile (once 5.8 s of CPU and 616 MiB, now about 1 s and 76 MiB). */
    write_ring("ring1000.obj", 1000, 500);
    run_result r =
        run(CONTAINER_MB,
            (const char *const[]){"bake", "ring1000.obj", "--set", "partition=layers", "--set",
                                  "tile_size=48", "--set", "max_local_extent=100000", "--threads",
                                  "1", "--out", "ring1000.d", NULL});
    cr_assert_eq(r.rc, 0, "exit %d: %s", r.rc, r.err);
    const char *p = strstr(r.out, "1 tiles, ");
    int layers = 0;
    cr_assert(p && sscanf(p, "1 tiles, %d layers", &layers) == 1, "%s", r.out);
    cr_assert_geq(layers, 500, "%s", r.out);
    cr_assert_leq(layers, OP_MAX_LAYERS, "%s", r.out);
    if (!OPT_ASAN) {
        cr_assert_lt(r.maxrss_kb, 256 * 1024, "peak RSS %ld KiB", r.maxrss_kb);
        cr_assert_lt(r.cpu_seconds, 10.0, "%.1f s of CPU", r.cpu_seconds);
    }
    cr_assert_lt(r.seconds, 300.0, "%.1f s (a hang bound only)", r.seconds);
}

/* Islands for the vertex limit: n x n squares of 3 x 3 cells (cell size 0.3), 4 cells
 * apart, in tile (tx, tz) of tile size 512 cells. The ledge filter leaves each square's
 * middle cell, a one-cell region whose polygon has 4 vertices of its own, so the tile's
 * layer holds 4 n^2 vertices. ground: a floor 4 wu below under all of them (the islands
 * then share every column with it, so §5 puts them on a layer of their own, layer 1:
 * the ground's region comes first, bottom up, and takes layer 0). */
#define ISL_CS   0.3
#define ISL_TILE (512 * ISL_CS)

static void write_islands(const char *name, int n, int tx, int tz, int ground)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    double ox = tx * ISL_TILE, oz = tz * ISL_TILE, e = 0.01, y = ground ? 4.0 : 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double x0 = ox + 4 * i * ISL_CS + e, z0 = oz + 4 * j * ISL_CS + e;
            double x1 = ox + (4 * i + 3) * ISL_CS - e, z1 = oz + (4 * j + 3) * ISL_CS - e;
            fprintf(f, "v %.4f %g %.4f\nv %.4f %g %.4f\nv %.4f %g %.4f\nv %.4f %g %.4f\n", x0, y,
                    z0, x1, y, z0, x1, y, z1, x0, y, z1);
        }
    if (ground)
        fprintf(f, "v %.4f 0 %.4f\nv %.4f 0 %.4f\nv %.4f 0 %.4f\nv %.4f 0 %.4f\n", ox + e, oz + e,
                ox + ISL_TILE - e, oz + e, ox + ISL_TILE - e, oz + ISL_TILE - e, ox + e,
                oz + ISL_TILE - e);
    int nq = n * n + (ground ? 1 : 0);
    for (int q = 0; q < nq; q++)
        fprintf(f, "f %d %d %d\nf %d %d %d\n", 4 * q + 1, 4 * q + 3, 4 * q + 2, 4 * q + 1,
                4 * q + 4, 4 * q + 3);
    fclose(f);
}

static const char *const ISL_SET[] = {"--set", "agent_radius=0",      "--set", "min_region_area=0",
                                      "--set", "merge_region_area=0", "--set", "tile_size=153.6",
                                      "--set", "cell_size=0.3"};

/* bake LEVEL with ISL_SET and the extra args (NULL-terminated) under CONTAINER_MB. */
static run_result bake_islands(const char *level, const char *const *extra)
{
    const char *argv[40];
    int n = 0;
    argv[n++] = "bake";
    argv[n++] = level;
    for (size_t i = 0; i < sizeof ISL_SET / sizeof *ISL_SET; i++)
        argv[n++] = ISL_SET[i];
    while (*extra && n < 38)
        argv[n++] = *extra++;
    argv[n] = NULL;
    return run(CONTAINER_MB, argv);
}

Test(cli_limits, one_layer_past_the_vertex_limit_names_its_tile_and_layer, .timeout = 300)
{
    const int tx = 1, tz = -1;
    /* 127^2 islands: 64,516 vertices, within the limit (the layer is built). */
    write_islands("isl_ok.obj", 127, tx, tz, 0);
    run_result r = bake_islands("isl_ok.obj", (const char *const[]){"--json", NULL});
    cr_assert_eq(r.rc, 0, "64,516 vertices refused: %s", r.err);
    /* 128^2 islands: 65,536 vertices, one past what uint16 indices hold. */
    write_islands("isl_over.obj", 128, tx, tz, 0);
    r = bake_islands("isl_over.obj", (const char *const[]){NULL});
    cr_assert_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_assert(strstr(r.err, "vertices"), "not the vertex limit: %s", r.err);
    int etx, etz, el;
    cr_assert(parse_tile(r.err, &etx, &etz, &el), "no tile and layer named: %s", r.err);
    cr_assert_eq(etx, tile_of(tx * ISL_TILE + 1.0, ISL_TILE), "%s", r.err);
    cr_assert_eq(etz, tile_of(tz * ISL_TILE + 1.0, ISL_TILE), "%s", r.err);
    cr_assert_eq(el, 0, "one layer per tile with partition watershed: %s", r.err);
    cr_assert_lt(r.maxrss_kb, 512 * 1024, "peak RSS %ld KiB", r.maxrss_kb);
}

Test(cli_limits, the_vertex_limit_of_an_upper_layer_names_that_layer, .timeout = 300)
{
    /* The same islands over a ground floor, partition = layers built layer by layer
     * (detail_sample_distance 0 <= 0.9 cells): layer 0 (the ground) has 4 vertices and is
     * fine, layer 1 (the islands) is one vertex past the limit. */
    const int tx = -2, tz = 3;
    write_islands("isl_ground.obj", 128, tx, tz, 1);
    run_result r =
        bake_islands("isl_ground.obj", (const char *const[]){"--set", "partition=layers", "--set",
                                                             "detail_sample_distance=0", NULL});
    cr_assert_eq(r.rc, 1, "exit %d: %s", r.rc, r.err);
    cr_assert(strstr(r.err, "vertices"), "not the vertex limit: %s", r.err);
    int etx, etz, el;
    cr_assert(parse_tile(r.err, &etx, &etz, &el), "no tile and layer named: %s", r.err);
    cr_assert_eq(etx, tile_of(tx * ISL_TILE + 1.0, ISL_TILE), "%s", r.err);
    cr_assert_eq(etz, tile_of(tz * ISL_TILE + 1.0, ISL_TILE), "%s", r.err);
    cr_assert_eq(el, 1, "the islands' layer: %s", r.err);
    cr_assert_lt(r.maxrss_kb, 512 * 1024, "peak RSS %ld KiB", r.maxrss_kb);
}

/* Floors of islands stacked 4 wu apart in tile (tx, tz): floor k (at y = 4 k) holds
 * n[k] x n[k] islands of write_islands' pattern, at the same places on every floor, so an
 * island shares its columns with the ones above and below it: with equal n, §5 puts floor
 * k on layer k (regions are visited in id order and take the lowest free layer; an island
 * with nothing below it would take layer 0). ground: a floor under the whole tile at
 * y = -4 (it comes first, bottom up, and takes layer 0; floor k then takes layer k + 1). */
static void write_island_floors(const char *name, const int *n, int nfloors, int tx, int tz,
                                int ground)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    double ox = tx * ISL_TILE, oz = tz * ISL_TILE, e = 0.01;
    int nq = 0;
    for (int k = 0; k < nfloors; k++)
        for (int i = 0; i < n[k]; i++)
            for (int j = 0; j < n[k]; j++, nq++) {
                double x0 = ox + 4 * i * ISL_CS + e, z0 = oz + 4 * j * ISL_CS + e;
                double x1 = ox + (4 * i + 3) * ISL_CS - e, z1 = oz + (4 * j + 3) * ISL_CS - e;
                double y = 4.0 * k;
                fprintf(f, "v %.4f %g %.4f\nv %.4f %g %.4f\nv %.4f %g %.4f\nv %.4f %g %.4f\n", x0,
                        y, z0, x1, y, z0, x1, y, z1, x0, y, z1);
            }
    if (ground && ++nq)
        fprintf(f, "v %.4f -4 %.4f\nv %.4f -4 %.4f\nv %.4f -4 %.4f\nv %.4f -4 %.4f\n", ox + e,
                oz + e, ox + ISL_TILE - e, oz + e, ox + ISL_TILE - e, oz + ISL_TILE - e, ox + e,
                oz + ISL_TILE - e);
    for (int q = 0; q < nq; q++)
        fprintf(f, "f %d %d %d\nf %d %d %d\n", 4 * q + 1, 4 * q + 3, 4 * q + 2, 4 * q + 1,
                4 * q + 4, 4 * q + 3);
    fclose(f);
}

/* The number after "\"key\": " in a bake's JSON line. */
static long json_long(const char *out, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(out, k);
    cr_assert(p, "no %s in %s", key, out);
    return strtol(p + strlen(k), NULL, 10);
}

static void json_hash(const char *out, char *hash, size_t n);

/* The whole of a file read into *len bytes (malloc). */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_geq(n, 0);
    rewind(f);
    unsigned char *b = malloc((size_t)n + 1);
    cr_assert(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* World height of a tile-local y. */
static double world_y(const op_tile *t, float y)
{
    return t->origin[1] + (double)y;
}

/* Tile layer a (one piece) against b (layer by layer): every field equal except the
 * vertical frame. A tile built in one piece takes OriginY from the lowest vertex row of the
 * whole tile, a layer built on its own from its own (build3d-polys.md §5 with
 * build3d-runtime.md §2.3), so OriginY and every local y differ by whole rows there; the
 * world heights must agree (rows are 0.2 wu apart, float32 rounding is far below 1e-3).
 * Returns whether the blobs are byte-identical too. */
static int same_tile(const op_tile *a, const op_tile *b, const char *name)
{
    cr_assert(a->tx == b->tx && a->tz == b->tz && a->layer == b->layer, "%s: key", name);
    cr_assert(a->origin[0] == b->origin[0] && a->origin[2] == b->origin[2], "%s: origin", name);
    cr_assert(a->tile_size == b->tile_size && a->nvp == b->nvp, "%s", name);
    cr_assert(a->nverts == b->nverts && a->npolys == b->npolys && a->ndverts == b->ndverts &&
                  a->ndtris == b->ndtris,
              "%s: counts %d/%d/%d/%d vs %d/%d/%d/%d", name, a->nverts, a->npolys, a->ndverts,
              a->ndtris, b->nverts, b->npolys, b->ndverts, b->ndtris);
    for (int i = 0; i < a->nverts; i++) {
        const float *u = &a->verts[3 * i], *v = &b->verts[3 * i];
        cr_assert(u[0] == v[0] && u[2] == v[2], "%s: vertex %d x/z", name, i);
        cr_assert(fabs(world_y(a, u[1]) - world_y(b, v[1])) < 1e-3, "%s: vertex %d y", name, i);
    }
    for (int i = 0; i < a->ndverts; i++) {
        const float *u = &a->dverts[3 * i], *v = &b->dverts[3 * i];
        cr_assert(u[0] == v[0] && u[2] == v[2], "%s: detail vertex %d x/z", name, i);
        cr_assert(fabs(world_y(a, u[1]) - world_y(b, v[1])) < 1e-3, "%s: detail vertex %d y", name,
                  i);
    }
    size_t np = (size_t)a->npolys, nn = np * (size_t)a->nvp;
    cr_assert(!memcmp(a->polys, b->polys, nn * 2) && !memcmp(a->neis, b->neis, nn * 2) &&
                  !memcmp(a->areas, b->areas, np) && !memcmp(a->flags, b->flags, np * 2) &&
                  !memcmp(a->regs, b->regs, np * 2) && !memcmp(a->dmeshes, b->dmeshes, np * 16) &&
                  !memcmp(a->dtris, b->dtris, (size_t)a->ndtris * 4),
              "%s: polygons, neighbours, areas, flags, regions or detail differ", name);
    return a->origin[1] == b->origin[1];
}

Test(cli_limits, the_vertex_limit_is_per_layer_when_a_tile_is_built_in_one_piece, .timeout = 600)
{
    /* Three floors of 127^2 islands: 64,516 vertices a layer, each within the limit, and
     * 193,548 in the tile. Built in one piece (detail_sample_distance 1.8 = 6 cells, so all
     * layers are welded into one polygon mesh) the limit once applied to their sum. The
     * floors are flat, so sampling adds no height detail: the tile must be what the
     * layer-by-layer path (sample distance 0) builds, up to the vertical frame. */
    const int tx = 1, tz = 2, n[3] = {127, 127, 127};
    write_island_floors("floors3.obj", n, 3, tx, tz, 0);
    char d1[4096], d0[4096];
    snprintf(d1, sizeof d1, "%s/one", tmpdir);
    snprintf(d0, sizeof d0, "%s/apart", tmpdir);
    cr_assert(mkdir(d1, 0755) == 0 && mkdir(d0, 0755) == 0);
    run_result one =
        bake_islands("floors3.obj", (const char *const[]){"--set", "partition=layers", "--set",
                                                          "detail_sample_distance=1.8", "--threads",
                                                          "1", "--json", "--out", "one", NULL});
    cr_assert_eq(one.rc, 0, "built in one piece: exit %d: %s", one.rc, one.err);
    cr_assert_eq(json_long(one.out, "tiles"), 1, "%s", one.out);
    cr_assert_eq(json_long(one.out, "layers"), 3, "%s", one.out);
    cr_assert_eq(json_long(one.out, "vertices"), 3L * 4 * 127 * 127, "%s", one.out);
    run_result apart =
        bake_islands("floors3.obj", (const char *const[]){"--set", "partition=layers", "--set",
                                                          "detail_sample_distance=0", "--threads",
                                                          "1", "--json", "--out", "apart", NULL});
    cr_assert_eq(apart.rc, 0, "layer by layer: exit %d: %s", apart.rc, apart.err);
    int etx = tile_of(tx * ISL_TILE + 1.0, ISL_TILE), etz = tile_of(tz * ISL_TILE + 1.0, ISL_TILE);
    int identical = 0;
    for (int layer = 0; layer < 3; layer++) {
        char name[64], p1[8192], p0[8192];
        snprintf(name, sizeof name, "tile_%d_%d_%d.optile", etx, etz, layer);
        snprintf(p1, sizeof p1, "%s/%s", d1, name);
        snprintf(p0, sizeof p0, "%s/%s", d0, name);
        size_t l1, l0;
        unsigned char *b1 = slurp(p1, &l1), *b0 = slurp(p0, &l0);
        op_arena *a = op_arena_create(0);
        op_tile t1, t0;
        op_err e;
        cr_assert_eq(op_tile_decode(b1, l1, a, &t1, NULL, &e), OP_OK, "%s: %s", p1, e.msg);
        cr_assert_eq(op_tile_decode(b0, l0, a, &t0, NULL, &e), OP_OK, "%s: %s", p0, e.msg);
        cr_assert_eq(t1.nverts, 4 * 127 * 127, "%s", name);
        int same = same_tile(&t1, &t0, name);
        /* Layer 0 holds the tile's lowest row: there the frames agree, and so do the bytes. */
        cr_assert(layer > 0 || (same && l1 == l0 && !memcmp(b1, b0, l1)), "%s: bytes", name);
        identical += same && l1 == l0 && !memcmp(b1, b0, l1);
        op_arena_destroy(a);
        free(b1);
        free(b0);
    }
    cr_assert_lt(one.maxrss_kb, 1024 * 1024, "peak RSS %ld KiB", one.maxrss_kb);
    fprintf(stderr,
            "three floors, one piece: %.2f s wall, %.2f s CPU, %ld KiB peak; layer by layer: "
            "%.2f s wall, %.2f s CPU, %ld KiB peak; %d of 3 layers byte-identical\n",
            one.seconds, one.cpu_seconds, one.maxrss_kb, apart.seconds, apart.cpu_seconds,
            apart.maxrss_kb, identical);
}

Test(cli_limits, a_middle_layer_past_the_vertex_limit_is_named_in_both_paths, .timeout = 600)
{
    /* A ground floor under floors of 128^2 and 127^2 islands: layer 1 holds 65,536
     * vertices, one past the limit; layers 0 (4 vertices) and 2 (64,516) are within it.
     * Both paths refuse the tile naming layer 1, the one-piece build before its detail
     * stage (the layer-by-layer build has built layer 0 by then). */
    const int tx = -1, tz = 0, n[2] = {128, 127};
    write_island_floors("floors_over.obj", n, 2, tx, tz, 1);
    static const char *const sd[2] = {"detail_sample_distance=1.8", "detail_sample_distance=0"};
    for (int k = 0; k < 2; k++) {
        run_result r = bake_islands("floors_over.obj",
                                    (const char *const[]){"--set", "partition=layers", "--set",
                                                          sd[k], "--threads", "1", NULL});
        cr_assert_eq(r.rc, 1, "%s: exit %d: %s", sd[k], r.rc, r.err);
        cr_assert(strstr(r.err, "65536 vertices") && strstr(r.err, "OP_MAX_LAYER_VERTS"),
                  "%s: not the layer's vertex limit: %s", sd[k], r.err);
        int etx, etz, el;
        cr_assert(parse_tile(r.err, &etx, &etz, &el), "%s: no tile and layer named: %s", sd[k],
                  r.err);
        cr_assert_eq(etx, tile_of(tx * ISL_TILE + 1.0, ISL_TILE), "%s", r.err);
        cr_assert_eq(etz, tile_of(tz * ISL_TILE + 1.0, ISL_TILE), "%s", r.err);
        cr_assert_eq(el, 1, "%s: %s", sd[k], r.err);
        cr_assert_lt(r.maxrss_kb, 1024 * 1024, "peak RSS %ld KiB", r.maxrss_kb);
        fprintf(stderr, "refused (%s): %.2f s wall, %.2f s CPU, %ld KiB peak\n", sd[k], r.seconds,
                r.cpu_seconds, r.maxrss_kb);
    }
}

/* ---- pathological geometry (issue 16) ---- */

/* ncopies copies of one 29 x 29 wu floor triangle (about 16 tiles, 4,700 cells). */
static void write_copies(const char *name, int ncopies)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "v 1 0 1\nv 30 0 1\nv 1 0 30\n");
    for (int i = 0; i < ncopies; i++)
        fputs("f 1 3 2\n", f);
    fclose(f);
}

static void json_hash(const char *out, char *hash, size_t n)
{
    const char *p = strstr(out, "\"hash\": \"");
    cr_assert(p, "no hash in %s", out);
    p += 9;
    size_t k = 0;
    while (p[k] && p[k] != '"' && k + 1 < n)
        k++;
    memcpy(hash, p, k);
    hash[k] = '\0';
}

Test(cli_limits, a_million_copies_of_one_face_cost_what_one_does, .timeout = 300)
{
    /* Rasterized once per tile, copy by copy, they took 149 s of CPU; an exact copy adds
     * no fragment, so the tiles must be the one face's. CPU time, not wall time: the
     * bound catches the per-copy rasterization (about 150 us a copy), not load. */
    write_copies("one.obj", 1);
    write_copies("million.obj", 1000000);
    const char *out1 = "--json";
    run_result a = run(0, (const char *const[]){"bake", "one.obj", out1, "--threads", "1", NULL});
    cr_assert_eq(a.rc, 0, "%s", a.err);
    run_result b =
        run(0, (const char *const[]){"bake", "million.obj", out1, "--threads", "1", NULL});
    cr_assert_eq(b.rc, 0, "%s", b.err);
    char ha[64], hb[64];
    json_hash(a.out, ha, sizeof ha);
    json_hash(b.out, hb, sizeof hb);
    cr_assert_str_eq(ha, hb, "copies changed the tiles");
    cr_assert_lt(b.cpu_seconds, 20.0, "%.1f s of CPU for 10^6 copies", b.cpu_seconds);
}
