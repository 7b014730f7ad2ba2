#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "op_test.h"

static void golden_path(const char *scenario, char *out, size_t n)
{
    snprintf(out, n, "%s/%s.hash", OP_GOLDEN_DIR, scenario);
}

static void make_parents(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
    }
}

void op_test_golden(const char *scenario, uint64_t hash)
{
    char path[1024];
    golden_path(scenario, path, sizeof path);
    const char *upd = getenv("OP_UPDATE_GOLDEN");
    if (upd && strcmp(upd, "1") == 0) {
        make_parents(path);
        FILE *f = fopen(path, "w");
        cr_assert(f, "cannot write %s: %s", path, strerror(errno));
        fprintf(f, "%016" PRIx64 "\n", hash);
        fclose(f);
        return;
    }
    FILE *f = fopen(path, "r");
    cr_assert(f,
              "scenario %s has no pinned hash (%s); got %016" PRIx64
              ": run with OP_UPDATE_GOLDEN=1 to pin it",
              scenario, path, hash);
    char line[64] = {0};
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    cr_assert(got, "%s is empty", path);
    uint64_t want = strtoull(line, NULL, 16);
    cr_assert_eq(hash, want, "scenario %s: hash %016" PRIx64 " != pinned %016" PRIx64, scenario,
                 hash, want);
}

const char *op_test_level(const char *name)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/levels/%s", OP_SHARED_DIR, name);
    return buf;
}

void op_test_tmpdir(char *buf, size_t n, const char *prefix)
{
    snprintf(buf, n, "/tmp/%sXXXXXX", prefix);
    cr_assert(mkdtemp(buf), "mkdtemp %s failed: %s", buf, strerror(errno));
}

void op_test_remove_tree(const char *path)
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
        op_test_remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}
