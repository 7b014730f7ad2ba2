/*
 * Limits of the `onepath` tool met as the spec and limits.h state them: a tile of 80
 * stacked floors bakes (the core's OP_MAX_LAYERS is 1024; bake once stopped at 64 while
 * inspect built 65), and every file input goes through one bounded reader that refuses
 * directories, character devices and FIFOs by name and stops at --max-input-bytes.
 */
#define _DEFAULT_SOURCE
#if defined(__SANITIZE_ADDRESS__)
#define OPT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPT_ASAN 1
#endif
#endif
#ifndef OPT_ASAN
#define OPT_ASAN 0
#endif
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onepath/limits.h"

#define ONEPATH OP_BIN_DIR "/onepath"

typedef struct run_result {
    int rc;
    char err[8192];
    long maxrss_kb; /* the child's peak RSS */
    double seconds;
} run_result;

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/onepath_limits_XXXXXX");
    cr_assert(mkdtemp(tmpdir), "mkdtemp failed");
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
        remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

static void drop_tmpdir(void)
{
    if (tmpdir[0])
        remove_tree(tmpdir);
}

/* Runs onepath with args (NULL-terminated) in tmpdir, stdout discarded, stderr kept,
 * under an address-space limit of as_mb MiB (0: none). */
static run_result run(long as_mb, const char *const *args)
{
    char errp[4096];
    snprintf(errp, sizeof errp, "%s/.stderr", tmpdir);
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
        int o = open("/dev/null", O_WRONLY);
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
    r.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    FILE *f = fopen(errp, "rb");
    if (f) {
        size_t k = fread(r.err, 1, sizeof r.err - 1, f);
        r.err[k] = '\0';
        fclose(f);
    }
    unlink(errp);
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
