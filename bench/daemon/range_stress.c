/*
 * onepathd-range-stress: hunts a tile.range reply that does not decode (a reply once came
 * back 106 bytes long, cut inside a value). Starts its own onepathd (next to this binary,
 * --threads THREADS), puts one level, then for SECONDS runs at once:
 *   - READERS clients fetching the level's whole range page by page with tile.range,
 *     plain and waiting pages (wait_ms), the default max_bytes and small ones;
 *   - one client dropping and putting the level again (as onepathd-bench's whole-level
 *     phase does) or putting an extra mesh (an edit racing the pages);
 *   - two clients of tile.get.
 * Any reply that is not the protocol's (a decode error of the client, anything but the
 * level being gone while it is dropped) is printed with its page and counted; the exit
 * status is 1 when there was one.
 *
 *   onepathd-range-stress LEVEL.obj|gen:KIND:SIZE [SECONDS [READERS [THREADS]]]
 * OP_STRESS_DAEMON=PATH runs that onepathd instead (a sanitizer build's); OP_STRESS_KEEP=1
 * keeps its directory (the log) after a clean run too.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "onepath/build.h"
#include "onepath/client.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"

#define TIMEOUT_MS 60000

typedef struct stress {
    const char *url;
    op_soup soup;
    int rect[4];
    atomic_int stop;
    atomic_long pages, tiles, bad, puts, gets;
} stress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static op_client *open_ready(const char *url)
{
    op_client *c;
    op_err e;
    if (op_client_open(url, &c, &e) != OP_OK)
        exit((fprintf(stderr, "%s\n", e.msg), 1));
    op_client_ping_result p;
    for (int i = 0; i < 100; i++)
        if (op_client_ping(c, 200, &p, &e) == OP_OK)
            return c;
    exit((fprintf(stderr, "ping %s: %s\n", url, e.msg), 1));
}

static op_status put_level(op_client *c, const stress *s, op_err *e)
{
    op_client_mesh m = {"level",      s->soup.verts,        s->soup.verts_len / 3,
                        s->soup.tris, s->soup.tris_len / 3, s->soup.areas};
    uint64_t v;
    int changed;
    return op_client_level_put(c, "stress", NULL, 0, &m, 1, TIMEOUT_MS, &v, &changed, e);
}

/* A reply error the protocol allows while the level is dropped and put again. */
static int expected(op_status st)
{
    return st == OP_ENOTFOUND;
}

typedef struct reader {
    stress *s;
    int id;
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    stress *s = r->s;
    op_client *c = open_ready(s->url);
    unsigned seed = 77u * (unsigned)r->id + 1;
    while (!atomic_load(&s->stop)) {
        seed = seed * 1103515245u + 12345u;
        int wait_ms = (seed >> 8) % 2 ? 2000 : 0;
        size_t max_bytes = (seed >> 12) % 3 == 0 ? 0 : 1 + (seed >> 14) % 60000;
        int after[2], has_after = 0;
        for (;;) {
            op_client_tile_range tr;
            op_err e;
            op_status st = op_client_tile_range_wait(c, "stress", s->rect, has_after ? after : NULL,
                                                     max_bytes, wait_ms, TIMEOUT_MS, &tr, &e);
            if (st != OP_OK) {
                if (!expected(st)) {
                    atomic_fetch_add(&s->bad, 1);
                    fprintf(stderr,
                            "BAD reader %d: tile.range after %s(%d, %d) max_bytes %zu wait_ms %d: "
                            "status %d: %s\n",
                            r->id, has_after ? "" : "none ", after[0], after[1], max_bytes, wait_ms,
                            (int)st, e.msg);
                }
                break;
            }
            atomic_fetch_add(&s->pages, 1);
            atomic_fetch_add(&s->tiles, tr.ntiles);
            has_after = tr.has_next;
            after[0] = tr.next[0];
            after[1] = tr.next[1];
            op_client_tile_range_free(&tr);
            if (!has_after || atomic_load(&s->stop))
                break;
        }
    }
    op_client_close(c);
    return NULL;
}

static void *getter_main(void *arg)
{
    reader *r = arg;
    stress *s = r->s;
    op_client *c = open_ready(s->url);
    unsigned seed = 31u * (unsigned)r->id + 7;
    int w = s->rect[2] - s->rect[0] + 1, h = s->rect[3] - s->rect[1] + 1;
    while (!atomic_load(&s->stop)) {
        seed = seed * 1103515245u + 12345u;
        int tx = s->rect[0] + (int)((seed >> 8) % (unsigned)w);
        int tz = s->rect[1] + (int)((seed >> 16) % (unsigned)h);
        op_client_tile t;
        op_err e;
        op_status st = op_client_tile_get(c, "stress", tx, tz, TIMEOUT_MS, &t, &e);
        if (st == OP_OK) {
            op_client_tile_free(&t);
            atomic_fetch_add(&s->gets, 1);
        } else if (!expected(st)) {
            atomic_fetch_add(&s->bad, 1);
            fprintf(stderr, "BAD getter %d: tile.get (%d, %d): status %d: %s\n", r->id, tx, tz,
                    (int)st, e.msg);
        }
    }
    op_client_close(c);
    return NULL;
}

/* Drops and puts the level again, or puts an extra mesh, in turn. */
static void *editor_main(void *arg)
{
    stress *s = arg;
    op_client *c = open_ready(s->url);
    float v[12] = {0, 0, 0, 4, 0, 0, 4, 0, 4, 0, 0, 4};
    int t[6] = {0, 1, 2, 0, 2, 3};
    for (int k = 0; !atomic_load(&s->stop); k++) {
        op_err e;
        op_status st;
        if (k % 3 == 0) {
            int dropped;
            st = op_client_level_drop(c, "stress", TIMEOUT_MS, &dropped, &e);
            if (st == OP_OK)
                st = put_level(c, s, &e);
        } else {
            for (int i = 0; i < 4; i++)
                v[3 * i + 1] = (float)(k % 5) * 0.25f;
            op_client_mesh m = {"extra", v, 4, t, 2, NULL};
            uint64_t ver;
            int changed;
            st = op_client_mesh_put(c, "stress", &m, TIMEOUT_MS, &ver, &changed, &e);
        }
        if (st != OP_OK && !expected(st)) {
            atomic_fetch_add(&s->bad, 1);
            fprintf(stderr, "BAD editor: edit %d: status %d: %s\n", k, (int)st, e.msg);
        }
        atomic_fetch_add(&s->puts, 1);
        struct timespec ts = {0, 150 * 1000000L};
        nanosleep(&ts, NULL);
    }
    op_client_close(c);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return fprintf(stderr, "usage: %s LEVEL [SECONDS [READERS [THREADS]]]\n", argv[0]), 2;
    double seconds = argc > 2 ? atof(argv[2]) : 30;
    int nreaders = argc > 3 ? atoi(argv[3]) : 4;
    const char *threads = argc > 4 ? argv[4] : "1";
    if (nreaders < 1 || nreaders > 64)
        return fprintf(stderr, "readers 1..64\n"), 2;
    stress s;
    memset(&s, 0, sizeof s);
    op_arena *a = op_arena_create(0);
    op_err e;
    op_status st;
    if (!strncmp(argv[1], "gen:", 4)) {
        char kind[32];
        int size;
        if (sscanf(argv[1] + 4, "%31[a-z]:%d", kind, &size) != 2)
            return fprintf(stderr, "bad level %s\n", argv[1]), 2;
        st = op_levelgen(kind, size, 1, a, &s.soup, &e);
    } else {
        st = op_obj_read_file(argv[1], a, &s.soup, &e);
    }
    op_settings set;
    op_settings_default(&set);
    op_level *lvl = NULL;
    if (st != OP_OK || op_level_create(&s.soup, &set, NULL, 0, &lvl, &e) != OP_OK)
        return fprintf(stderr, "%s: %s\n", argv[1], e.msg), 1;
    op_tile_range r = op_level_tiles(lvl);
    int rect[4] = {r.tx0, r.tz0, r.tx1, r.tz1};
    memcpy(s.rect, rect, sizeof rect);

    char dir[] = "/tmp/opd-stress-XXXXXX", bin[4096], url[300], data[300], log[300];
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 1;
    const char *slash = strrchr(argv[0], '/');
    snprintf(bin, sizeof bin, "%.*s/onepathd", slash ? (int)(slash - argv[0]) : 1,
             slash ? argv[0] : ".");
    if (getenv("OP_STRESS_DAEMON")) /* another build's onepathd (TSan, ASan) */
        snprintf(bin, sizeof bin, "%s", getenv("OP_STRESS_DAEMON"));
    snprintf(url, sizeof url, "ipc://%s/s.ipc", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    pid_t pid = fork();
    if (pid == 0) {
        execl(bin, bin, "--listen", url, "--data-dir", data, "--log", log, "--no-fsync",
              "--threads", threads, (char *)NULL);
        perror(bin);
        _exit(127);
    }
    s.url = url;
    op_client *c = open_ready(url);
    if (put_level(c, &s, &e) != OP_OK)
        return fprintf(stderr, "level.put: %s\n", e.msg), 1;
    op_client_close(c);

    pthread_t th[70];
    reader rd[70];
    int n = 0;
    for (int i = 0; i < nreaders; i++, n++) {
        rd[n] = (reader){&s, i};
        pthread_create(&th[n], NULL, reader_main, &rd[n]);
    }
    for (int i = 0; i < 2; i++, n++) {
        rd[n] = (reader){&s, 100 + i};
        pthread_create(&th[n], NULL, getter_main, &rd[n]);
    }
    pthread_t ed;
    pthread_create(&ed, NULL, editor_main, &s);
    double t0 = now_s();
    while (now_s() - t0 < seconds && atomic_load(&s.bad) == 0) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    atomic_store(&s.stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_join(ed, NULL);
    kill(pid, SIGTERM);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("%.0f s: %ld pages, %ld tiles, %ld gets, %ld edits, %ld bad; daemon exit %d (log %s)\n",
           now_s() - t0, atomic_load(&s.pages), atomic_load(&s.tiles), atomic_load(&s.gets),
           atomic_load(&s.puts), atomic_load(&s.bad),
           WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status), log);
    if (atomic_load(&s.bad) == 0 && !getenv("OP_STRESS_KEEP")) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    op_level_destroy(lvl);
    op_arena_destroy(a);
    return atomic_load(&s.bad) ? 1 : 0;
}
