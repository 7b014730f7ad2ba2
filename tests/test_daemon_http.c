/*
 * The pieces of onepathd's HTTP side that parse untrusted text (docs/spec/http.md): the
 * --http / --metrics address, the file a GET path names, and the per-method latency
 * buckets the metrics expose. The server itself is tested from outside
 * (tests/viewer/test_http.py).
 */
#define _DEFAULT_SOURCE /* mkdtemp, realpath, symlink */
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"

Test(daemon_http, addresses)
{
    char url[300];
    int lb = -1;
    cr_assert_eq(opd_http_addr("127.0.0.1:7412", url, sizeof url, &lb), 0);
    cr_assert_str_eq(url, "http://127.0.0.1:7412");
    cr_assert_eq(lb, 1);
    cr_assert_eq(opd_http_addr("127.8.9.10:0", url, sizeof url, &lb), 0);
    cr_assert_eq(lb, 1);
    cr_assert_eq(opd_http_addr("localhost:80", url, sizeof url, &lb), 0);
    cr_assert_eq(lb, 1);
    cr_assert_eq(opd_http_addr("[::1]:9411", url, sizeof url, &lb), 0);
    cr_assert_str_eq(url, "http://[::1]:9411");
    cr_assert_eq(lb, 1);
    const char *remote[] = {"0.0.0.0:1",    "[::]:1",        "10.1.2.3:80",
                            "128.0.0.1:80", "example.com:1", "localhost.example:1"};
    for (size_t i = 0; i < sizeof remote / sizeof remote[0]; i++) {
        cr_assert_eq(opd_http_addr(remote[i], url, sizeof url, &lb), 0, "%s", remote[i]);
        cr_assert_eq(lb, 0, "%s is not loopback", remote[i]);
    }
    const char *bad[] = {"",
                         ":",
                         "7412",
                         "127.0.0.1",
                         "127.0.0.1:",
                         ":80",
                         "127.0.0.1:65536",
                         "127.0.0.1:-1",
                         "127.0.0.1:8x",
                         "[::1:80",
                         "[zz]:80",
                         "[]:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(opd_http_addr(bad[i], url, sizeof url, &lb), -1, "'%s' accepted", bad[i]);
}

/* A viewer folder with one page, a subfolder, and a link out of it. */
static void make_root(char *root, size_t n)
{
    snprintf(root, n, "/tmp/opd-http-unit-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/index.html", root);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("<!doctype html>", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/sub", root);
    cr_assert_eq(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/sub/a.js", root);
    f = fopen(p, "w");
    fputs("x", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/out.html", root);
    cr_assert_eq(symlink("/etc/passwd", p), 0);
}

static void remove_root(const char *root)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
}

Test(daemon_http, file_paths)
{
    char root[64], out[PATH_MAX], real[PATH_MAX];
    make_root(root, sizeof root);
    cr_assert_not_null(realpath(root, real));
    cr_assert_eq(opd_http_file_path(root, NULL, "/", out, sizeof out), 0);
    cr_assert(strstr(out, "/index.html") && !strncmp(out, real, strlen(real)));
    cr_assert_eq(opd_http_file_path(root, NULL, "/sub/a.js", out, sizeof out), 0);
    cr_assert_eq(opd_http_file_path(root, NULL, "/nope.js", out, sizeof out), 404);
    cr_assert_eq(opd_http_file_path(root, NULL, "/sub", out, sizeof out), 0); /* a directory: */
    void *data;
    size_t len;
    cr_assert_eq(opd_http_file_read(out, 1 << 20, &data, &len), 404); /* ... not served */
    cr_assert_eq(opd_http_file_path(root, NULL, "/out.html", out, sizeof out), 404);
    cr_assert_eq(opd_http_file_path(root, NULL, "/three/x.js", out, sizeof out), 404); /* none */
    cr_assert_eq(opd_http_file_path(root, root, "/three/index.html", out, sizeof out), 0);
    const char *bad[] = {"",
                         "index.html",
                         "/..",
                         "/../etc/passwd",
                         "/sub/../index.html",
                         "/./index.html",
                         "/.hidden",
                         "//index.html",
                         "/sub/",
                         "/%2e%2e/x",
                         "/index%2ehtml",
                         "/a\\b",
                         "/a b",
                         "/three/../index.html",
                         "/three/",
                         "/three//x",
                         "/sub/.",
                         "/\x01",
                         "/\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(opd_http_file_path(root, root, bad[i], out, sizeof out), 400, "'%s'", bad[i]);
    char longp[600];
    memset(longp, 'a', sizeof longp);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    cr_assert_eq(opd_http_file_path(root, NULL, longp, out, sizeof out), 400); /* segment > 255 */
    remove_root(root);
}

/* Random paths over the alphabet that matters: whatever is accepted lies in the folder. */
Test(daemon_http, random_paths_stay_inside)
{
    char root[64], out[PATH_MAX], real[PATH_MAX];
    make_root(root, sizeof root);
    cr_assert_not_null(realpath(root, real));
    static const char alphabet[] = "./%2eE\\ab-_sub/index.htmlout";
    unsigned seed = 12345;
    int accepted = 0;
    for (int i = 0; i < 20000; i++) {
        char p[24];
        int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 20;
        p[0] = '/';
        for (int k = 1; k < n; k++)
            p[k] = alphabet[((seed = seed * 1103515245u + 12345u) >> 16) % (sizeof alphabet - 1)];
        p[n] = '\0';
        int st = opd_http_file_path(root, root, p, out, sizeof out);
        cr_assert(st == 0 || st == 400 || st == 404 || st == 414, "%s: %d", p, st);
        if (st == 0) {
            accepted++;
            cr_assert(!strncmp(out, real, strlen(real)) && out[strlen(real)] == '/', "%s -> %s", p,
                      out);
            cr_assert_null(strstr(p, ".."), "%s", p);
        }
    }
    cr_assert_gt(accepted, 0);
    remove_root(root);
}

Test(daemon_http, coarse_latency_buckets)
{
    for (int k = 0; k + 1 < OPD_LAT_COARSE; k++)
        cr_assert_lt(opd_lat_coarse_upper(k), opd_lat_coarse_upper(k + 1));
    cr_assert_eq(opd_lat_coarse_upper(0), 8u);
    cr_assert_eq(opd_lat_coarse_upper(OPD_LAT_COARSE - 1), UINT64_MAX);
    /* Every coarse edge is a fine bucket's edge, so the metrics' buckets are exact. */
    for (int k = 0; k + 1 < OPD_LAT_COARSE; k++) {
        int b = opd_lat_bucket(opd_lat_coarse_upper(k));
        cr_assert_eq(opd_lat_bucket_upper(b), opd_lat_coarse_upper(k), "edge %d", k);
    }
    opd_stats s;
    opd_stats_init(&s);
    opd_stats_request(&s, OPD_M_PATH, 1, 8);
    opd_stats_request(&s, OPD_M_PATH, 0, 9);
    opd_stats_request(&s, OPD_M_PATH, 1, 1000000000);
    cr_assert_eq(s.m_lat[OPD_M_PATH][0], 1);
    cr_assert_eq(s.m_lat[OPD_M_PATH][1], 1);
    cr_assert_eq(s.m_lat[OPD_M_PATH][OPD_LAT_COARSE - 1], 1);
    cr_assert_eq(s.m_lat_sum_us[OPD_M_PATH], 8u + 9u + 1000000000u);
    cr_assert_eq(s.errors[OPD_M_PATH], 1);
    opd_stats_fini(&s);
}
