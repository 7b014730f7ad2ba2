/*
 * onepath verify DIR: decodes and validates every baked tile blob (*.optile) in DIR;
 * the file name must match the blob's key; with manifests, checks that the directory is the
 * complete, unchanged output of one bake (docs/spec/bake-output.md §3). Exit 0 when all
 * pass, 1 otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "manifest.h"
#include "onepath/tile_codec.h"

/* Blobs larger than this are refused unread (a tile blob is a few hundred KB at most). */
#define OP_VERIFY_MAX_FILE (256u << 20)

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_file(const char *path, unsigned char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= OP_VERIFY_MAX_FILE) {
            free(buf);
            buf = NULL;
            errno = EFBIG;
            break;
        }
        unsigned char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return -1;
    }
    *data = buf;
    *len = n;
    return 0;
}

static int verify_one(const char *dir, const char *name, op_arena *a)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unsigned char *data = NULL;
    size_t len = 0;
    if (read_file(path, &data, &len) != 0) {
        printf("FAIL %s: cannot read: %s\n", name, strerror(errno));
        return 1;
    }
    op_tile t;
    op_err e;
    uint64_t h = 0;
    int bad = 0;
    if (op_tile_decode(data, len, a, &t, &h, &e) != OP_OK) {
        printf("FAIL %s: %s\n", name, e.msg);
        bad = 1;
    } else {
        char want[128];
        snprintf(want, sizeof want, "tile_%d_%d_%d.optile", t.tx, t.tz, t.layer);
        if (strcmp(want, name) != 0) {
            printf("FAIL %s: blob holds tile (%d, %d) layer %d\n", name, t.tx, t.tz, t.layer);
            bad = 1;
        }
    }
    free(data);
    return bad;
}

int op_cmd_verify(int argc, char **argv)
{
    if (argc != 1 || argv[0][0] == '-') {
        fprintf(stderr, "usage: onepath verify DIR\n");
        return 2;
    }
    const char *dir = argv[0];
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "onepath: cannot open %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 8 || strcmp(de->d_name + l - 7, ".optile") != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn) {
                rc = 1;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = 1;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc) {
        fprintf(stderr, "onepath: out of memory listing %s\n", dir);
    } else {
        qsort(names, n, sizeof *names, cmp_str);
        op_arena *a = op_arena_create(0);
        unsigned char *bad = calloc(n ? n : 1, 1);
        size_t failed = 0;
        for (size_t i = 0; a && bad && i < n; i++) {
            op_arena_reset(a);
            bad[i] = (unsigned char)verify_one(dir, names[i], a);
        }
        op_arena_destroy(a);
        int manifests = 0;
        size_t offences = bad ? manifest_verify(dir, names, n, bad, &manifests) : 1;
        for (size_t i = 0; bad && i < n; i++)
            failed += bad[i];
        free(bad);
        printf("verify: %zu tiles; %zu valid, %zu invalid\n", n, n - failed, failed);
        if (manifests)
            printf("verify: %d manifest%s, %s\n", manifests, manifests == 1 ? "" : "s",
                   offences ? "INCOMPLETE or changed" : "complete: every tile listed and equal");
        else
            printf("verify: no manifest (tiles checked one by one only)\n");
        rc = (failed || offences || n == 0) ? 1 : 0;
        if (n == 0)
            fprintf(stderr, "onepath: no .optile files in %s\n", dir);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
