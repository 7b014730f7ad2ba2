/*
 * onepathd-edit-bench: what an edit costs on a big level. Starts its own onepathd (next
 * to this binary) on an ipc:// socket with a real data directory (fsync on, unless
 * --no-fsync), uploads a generated level of about 10^6 triangles as one mesh, waits for
 * its bake, then puts a small mesh (a box, 12 triangles, a few hundred bytes) at a new
 * place each time and reports, over ipc:
 *   - mesh.put acknowledged: p50, p99 and max of the time from request to reply (the
 *     edit journaled and fsynced, the snapshot prepared, its tiles invalidated);
 *   - tile current: from the reply until changes.since lists the edit's tiles (their
 *     rebuild);
 *   - the bytes the data directory gained per edit (the journal record), beside the
 *     snapshot's size.
 * Usage: onepathd-edit-bench [--size M] [--edits N] [--no-fsync]. Figures for
 * docs/benchmarks.md; the machine is shared, so run it on a quiet one.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onepath/client.h"
#include "onepath/levelgen.h"
#include "spawn.h"

#define TIMEOUT_MS 600000

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

static void die(const char *what, const op_err *e)
{
    fprintf(stderr, "%s: %s\n", what, e->msg);
    exit(1);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* A closed box of 12 triangles at (x, z), 1 m a side, h high. */
static void box(float x, float z, float h, float v[24], int32_t t[36])
{
    for (int i = 0; i < 8; i++) {
        v[3 * i] = x + (float)(i & 1);
        v[3 * i + 1] = (i & 4) ? h : 0.0f;
        v[3 * i + 2] = z + (float)((i >> 1) & 1);
    }
    static const int32_t f[36] = {4, 6, 7, 4, 7, 5, 0, 1, 3, 0, 3, 2, 0, 4, 5, 0, 5, 1,
                                  2, 3, 7, 2, 7, 6, 0, 2, 6, 0, 6, 4, 1, 5, 7, 1, 7, 3};
    memcpy(t, f, sizeof f);
}

int main(int argc, char **argv)
{
    int size = 354, edits = 200, no_fsync = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--edits") && i + 1 < argc)
            edits = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-fsync"))
            no_fsync = 1;
        else
            return fprintf(stderr, "usage: %s [--size M] [--edits N] [--no-fsync]\n", argv[0]), 2;
    }
    op_arena *a = op_arena_create(0);
    op_soup soup;
    op_err e;
    if (op_levelgen("terrain", size, 1, a, &soup, &e) != OP_OK)
        die("levelgen", &e);
    bench_daemon d;
    if (bench_daemon_start(&d, argv[0], "onepathd-edit-bench", no_fsync))
        return 1;
    char snap[400], jr[400];
    snprintf(snap, sizeof snap, "%s/bench.oplevel", d.data);
    snprintf(jr, sizeof jr, "%s/bench.opjournal", d.data);
    op_client *c;
    if (op_client_open(d.url, &c, &e) != OP_OK)
        die("open", &e);
    op_client_ping_result pr;
    if (op_client_ping(c, 10000, &pr, &e) != OP_OK)
        die("ping", &e);
    op_client_mesh ground = {"ground",  soup.verts,        soup.verts_len / 3,
                             soup.tris, soup.tris_len / 3, NULL};
    uint64_t v;
    int changed;
    double t0 = now_ms();
    if (op_client_level_put(c, "bench", NULL, 0, &ground, 1, TIMEOUT_MS, &v, &changed, &e) != OP_OK)
        die("level.put", &e);
    double put_ms = now_ms() - t0;
    op_client_changes ch;
    t0 = now_ms();
    if (op_client_changes_since(c, "bench", 0, 0, TIMEOUT_MS, &ch, &e) != OP_OK)
        die("changes.since", &e);
    double bake_ms = now_ms() - t0;
    int layered = ch.ntiles;
    op_client_changes_free(&ch);
    long snap_bytes = file_size(snap), jr0 = file_size(jr);
    printf("level: terrain %d m, %zu triangles, %d tiles with layers; snapshot %ld bytes\n", size,
           soup.tris_len / 3, layered, snap_bytes);
    printf("level.put acknowledged %.1f ms, bake until changes.since answers %.1f ms\n", put_ms,
           bake_ms);
    double *ack = malloc((size_t)edits * sizeof *ack), *cur = malloc((size_t)edits * sizeof *cur);
    int tiles = 0;
    for (int i = 0; i < edits; i++) {
        float bv[24];
        int32_t bt[36];
        float x = (float)((i * 37) % (size - 4)) + 1.0f, z = (float)((i * 53) % (size - 4)) + 1.0f;
        box(x, z, 1.0f + (float)(i % 3), bv, bt);
        op_client_mesh m = {"crate", bv, 8, bt, 12, NULL};
        t0 = now_ms();
        if (op_client_mesh_put(c, "bench", &m, TIMEOUT_MS, &v, &changed, &e) != OP_OK)
            die("mesh.put", &e);
        double t1 = now_ms();
        if (op_client_changes_since(c, "bench", v - 1, 0, TIMEOUT_MS, &ch, &e) != OP_OK)
            die("changes.since", &e);
        ack[i] = t1 - t0;
        cur[i] = now_ms() - t1;
        tiles += ch.ntiles;
        op_client_changes_free(&ch);
    }
    long jr1 = file_size(jr);
    /* The daemon's own time per mesh.put (receive to reply, from its log), without the
     * client's side of the round trip. */
    double *own = malloc((size_t)edits * sizeof *own);
    int nown = 0;
    FILE *lf = fopen(d.log, "r");
    char line[1024];
    while (lf && fgets(line, sizeof line, lf) && nown < edits) {
        const char *p = strstr(line, " mesh.put level=bench ms=");
        if (p)
            own[nown++] = atof(p + strlen(" mesh.put level=bench ms="));
    }
    if (lf)
        fclose(lf);
    printf("mesh.put of 12 triangles (%d edits, fsync %s):\n", edits, no_fsync ? "off" : "on");
    printf("  acknowledged        p50 %7.2f ms   p99 %7.2f ms   max %7.2f ms\n",
           pct(ack, edits, 0.5), pct(ack, edits, 0.99), pct(ack, edits, 1.0));
    if (nown > 0)
        printf("  in the daemon       p50 %7.2f ms   p99 %7.2f ms   max %7.2f ms   (its log: "
               "receive to reply)\n",
               pct(own, nown, 0.5), pct(own, nown, 0.99), pct(own, nown, 1.0));
    free(own);
    printf("  then tile current   p50 %7.2f ms   p99 %7.2f ms   max %7.2f ms   (%.1f tiles a "
           "edit)\n",
           pct(cur, edits, 0.5), pct(cur, edits, 0.99), pct(cur, edits, 1.0),
           (double)tiles / edits);
    printf("  data written: %.0f bytes per edit (journal %ld -> %ld bytes; snapshot %ld bytes, "
           "unchanged: %s)\n",
           (double)(jr1 - jr0) / edits, jr0, jr1, file_size(snap),
           file_size(snap) == snap_bytes ? "yes" : "no");
    free(ack);
    free(cur);
    op_client_close(c);
    bench_daemon_stop(&d);
    op_arena_destroy(a);
    return 0;
}
