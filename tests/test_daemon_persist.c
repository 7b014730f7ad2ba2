/*
 * onepathd persistence (protocol §7): a clean restart and a kill -9 in the middle of a
 * stream of edits (mesh puts and drops, volume puts and drops, with the journal compacted
 * all along) lose no acknowledged edit; a mesh edit appends a record and leaves the
 * snapshot alone; a corrupt level file is logged and skipped while the other levels load.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "op_daemon_test.h"

#define NEDITS 400

/* Edit i (1-based) puts mesh "m<i % 3>" as a box whose place depends on i. */
static void edit_soup(int i, opt_soup *s)
{
    memset(s, 0, sizeof *s);
    float x = (float)((i * 7) % 25), z = (float)((i * 13) % 25);
    opt_soup_box(s, x, z, x + 2.0f, z + 2.0f, 0.0f, 0.5f + (float)(i % 4));
}

/* The soup of parts[0..n) in that order (protocol §3.2), appended to out; frees the parts. */
static void concat(opt_soup *parts, int n, opt_soup *out)
{
    for (int p = 0; p < n; p++) {
        int base = (int)out->nv;
        for (size_t k = 0; k < parts[p].nv; k++)
            opt_soup_vert(out, parts[p].v[3 * k], parts[p].v[3 * k + 1], parts[p].v[3 * k + 2]);
        for (size_t k = 0; k < parts[p].nt; k++)
            opt_soup_tri(out, parts[p].t[3 * k] + base, parts[p].t[3 * k + 1] + base,
                         parts[p].t[3 * k + 2] + base);
        opt_soup_free(&parts[p]);
    }
}

/* The level after `n` edits: floor plus, per mesh slot, the last edit that wrote it. */
static void state_soup(int n, opt_soup *out)
{
    memset(out, 0, sizeof *out);
    opt_soup parts[4] = {{0}};
    opt_soup_quad(&parts[0], 0, 0, 30, 30, 0); /* "floor" sorts before "m0".."m2" */
    for (int slot = 0; slot < 3; slot++)
        for (int i = n; i >= 1; i--)
            if (i % 3 == slot) {
                edit_soup(i, &parts[slot + 1]);
                break;
            }
    concat(parts, 4, out);
}

static void check_state(op_client *c, int n)
{
    opt_soup s;
    state_soup(n, &s);
    op_soup soup = {s.v, 3 * s.nv, s.t, 3 * s.nt, NULL};
    op_settings st;
    op_settings_default(&st);
    opt_ref ref;
    opt_ref_bake(&soup, &st, &ref);
    opt_check_level(c, "crash", &ref);
    opt_ref_free(&ref);
    opt_soup_free(&s);
}

static void put_floor(op_client *c)
{
    opt_soup f = {0};
    opt_soup_quad(&f, 0, 0, 30, 30, 0);
    op_client_mesh m = opt_mesh("floor", &f);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_level_put(c, "crash", NULL, 0, &m, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
                 OP_OK, "%s", e.msg);
    cr_assert_eq(v, 1);
    opt_soup_free(&f);
}

typedef struct editor {
    const char *url;
    atomic_int acked; /* edits acknowledged */
    /* The call that ended the stream (read after the join): which edit, its status, the
     * version it returned and its message (the kill's OP_EIO / OP_ETIMEDOUT, or not). */
    int last_edit;
    op_status last_st;
    uint64_t last_version;
    char last_msg[OP_ERR_MSG_MAX];
} editor;

/* Keeps what ended an editor's stream. */
static void editor_stop(editor *ed, int i, op_status st, uint64_t v, const op_err *e)
{
    ed->last_edit = i;
    ed->last_st = st;
    ed->last_version = v;
    snprintf(ed->last_msg, sizeof ed->last_msg, "%s", st != OP_OK ? e->msg : "");
}

static void *edit_loop(void *arg)
{
    editor *ed = arg;
    op_client *c;
    op_err e;
    if (op_client_open(ed->url, &c, &e) != OP_OK)
        return NULL;
    for (int i = 1; i <= NEDITS; i++) {
        opt_soup s;
        edit_soup(i, &s);
        char name[8];
        snprintf(name, sizeof name, "m%d", i % 3);
        op_client_mesh m = opt_mesh(name, &s);
        uint64_t v;
        int changed;
        op_status st = op_client_mesh_put(c, "crash", &m, 2000, &v, &changed, &e);
        opt_soup_free(&s);
        if (st != OP_OK || v != (uint64_t)i + 1) {
            editor_stop(ed, i, st, v, &e);
            break;
        }
        atomic_store(&ed->acked, i);
    }
    op_client_close(c);
    return NULL;
}

Test(daemon_persist, kill9_during_edits_loses_no_acknowledged_edit, .timeout = 120)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_log_on_failure(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_floor(c);
    editor ed = {.url = d.url};
    pthread_t th;
    pthread_create(&th, NULL, edit_loop, &ed);
    /* Kill once some edits are acknowledged, while more are in flight. */
    for (int i = 0; i < 2000 && atomic_load(&ed.acked) < 12; i++)
        opt_sleep_ms(5);
    opt_daemon_kill9(&d);
    pthread_join(th, NULL);
    int acked = atomic_load(&ed.acked);
    cr_assert_geq(acked, 12,
                  "only %d edits acknowledged; edit %d ended the stream: %s (%d), "
                  "version %llu: %s",
                  acked, ed.last_edit, op_status_name(ed.last_st), (int)ed.last_st,
                  (unsigned long long)ed.last_version, ed.last_msg);
    cr_assert_lt(acked, NEDITS, "the kill came after the last edit");
    opt_daemon_start(&d, NULL);
    op_client_level_info li;
    op_err e;
    cr_assert_eq(op_client_level_info_get(c, "crash", OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    /* Version 1 is the level.put; edit i made version i + 1. The edit in flight at the
     * kill may or may not have reached the disk, never a later one. */
    int n = (int)li.version - 1;
    cr_assert(n == acked || n == acked + 1, "version %llu after %d acknowledged edits",
              (unsigned long long)li.version, acked);
    check_state(c, n);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_log_done();
    opt_daemon_cleanup(&d);
}

/* ---- a stream of puts and drops, compacted all along ---- */

/* Edit i (1-based) of the mixed stream: every fifth edit drops mesh "m<i % 3>" when the
 * stream before it left that mesh there, every other edit puts it (edit_soup(i)). So every
 * edit changes the level and edit i makes version i + 1. present[] is the state after n. */
static int mixed_is_drop(int i, const int present[3])
{
    return i % 5 == 0 && present[i % 3];
}

static void mixed_state(int n, int present[3], int last_put[3])
{
    for (int k = 0; k < 3; k++)
        present[k] = last_put[k] = 0;
    for (int i = 1; i <= n; i++) {
        int drop = mixed_is_drop(i, present);
        present[i % 3] = !drop;
        if (!drop)
            last_put[i % 3] = i;
    }
}

static void mixed_check(op_client *c, int n)
{
    int present[3], last_put[3];
    mixed_state(n, present, last_put);
    opt_soup out = {0}, parts[4] = {{0}};
    opt_soup_quad(&parts[0], 0, 0, 30, 30, 0);
    for (int k = 0; k < 3; k++)
        if (present[k])
            edit_soup(last_put[k], &parts[k + 1]);
    concat(parts, 4, &out);
    op_soup soup = {out.v, 3 * out.nv, out.t, 3 * out.nt, NULL};
    op_settings st;
    op_settings_default(&st);
    opt_ref ref;
    opt_ref_bake(&soup, &st, &ref);
    opt_check_level(c, "crash", &ref);
    opt_ref_free(&ref);
    opt_soup_free(&out);
}

static void *mixed_loop(void *arg)
{
    editor *ed = arg;
    op_client *c;
    op_err e;
    if (op_client_open(ed->url, &c, &e) != OP_OK)
        return NULL;
    int present[3] = {0, 0, 0};
    for (int i = 1; i <= NEDITS; i++) {
        char name[8];
        snprintf(name, sizeof name, "m%d", i % 3);
        uint64_t v;
        int changed, drop = mixed_is_drop(i, present);
        op_status st;
        if (drop) {
            st = op_client_mesh_drop(c, "crash", name, 2000, &v, &changed, &e);
        } else {
            opt_soup s;
            edit_soup(i, &s);
            op_client_mesh m = opt_mesh(name, &s);
            st = op_client_mesh_put(c, "crash", &m, 2000, &v, &changed, &e);
            opt_soup_free(&s);
        }
        if (st != OP_OK || v != (uint64_t)i + 1 || !changed) {
            editor_stop(ed, i, st, v, &e);
            break;
        }
        present[i % 3] = !drop;
        atomic_store(&ed->acked, i);
    }
    op_client_close(c);
    return NULL;
}

/* Three kills of a daemon compacting every journal longer than its snapshot (several times
 * a second here), each during a fresh stream of `loop`'s edits at a later point of it; after
 * each restart `check` sees the stream's first n edits, n the edits acknowledged or one
 * more (the one in flight). A compaction must have run. Returns with the daemon running
 * (*d, *c). */
static void kill_rounds(opt_daemon *d, op_client **c, void *(*loop)(void *),
                        void (*check)(op_client *, int), int first, int step)
{
    opt_daemon_init(d);
    opt_daemon_log_on_failure(d);
    const char *const extra[] = {"--compact-bytes", "0", NULL};
    opt_daemon_start(d, extra);
    *c = opt_connect(d);
    put_floor(*c);
    int done = 0;
    for (int round = 0; round < 3; round++) {
        editor ed = {.url = d->url};
        /* The stream restarts at edit 1 of a fresh level each round. */
        if (round > 0) {
            int dropped;
            op_err e;
            cr_assert_eq(op_client_level_drop(*c, "crash", OPT_TIMEOUT_MS, &dropped, &e), OP_OK);
            put_floor(*c);
        }
        pthread_t th;
        pthread_create(&th, NULL, loop, &ed);
        int target = first + step * round;
        for (int i = 0; i < 4000 && atomic_load(&ed.acked) < target; i++)
            opt_sleep_ms(2);
        opt_daemon_kill9(d);
        pthread_join(th, NULL);
        int acked = atomic_load(&ed.acked);
        cr_assert_geq(acked, target,
                      "round %d: only %d edits acknowledged; edit %d ended the stream: %s (%d), "
                      "version %llu: %s",
                      round, acked, ed.last_edit, op_status_name(ed.last_st), (int)ed.last_st,
                      (unsigned long long)ed.last_version, ed.last_msg);
        cr_assert_lt(acked, NEDITS, "round %d: the kill came after the last edit", round);
        opt_daemon_start(d, extra);
        op_client_level_info li;
        op_err e;
        cr_assert_eq(op_client_level_info_get(*c, "crash", OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s",
                     e.msg);
        int n = (int)li.version - 1;
        cr_assert(n == acked || n == acked + 1, "round %d: version %llu after %d acknowledged",
                  round, (unsigned long long)li.version, acked);
        check(*c, n);
        done += acked;
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "grep -q 'OP-COMPACT level' '%s'", d->log);
    cr_assert_eq(system(cmd), 0, "no compaction ran during %d edits", done);
}

Test(daemon_persist, kill9_during_edits_and_compactions_loses_no_acknowledged_edit, .timeout = 240)
{
    opt_daemon d;
    op_client *c;
    kill_rounds(&d, &c, mixed_loop, mixed_check, 20, 35);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_log_done();
    opt_daemon_cleanup(&d);
}

/* ---- a stream of volume edits (and some mesh puts), compacted all along ---- */

#define NVSLOTS 4

/* Volume slot k's shape as edit i writes it: kind by i % 3, mode by i % 2, on the floor. */
static void edit_volume(int i, op_volume *v)
{
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "vol.%d", i % NVSLOTS);
    double cx = 2 + (i * 7) % 26, cz = 2 + (i * 11) % 26;
    v->kind = (op_volume_kind)(i % 3);
    v->mode = (op_volume_mode)(i % 2);
    v->area = v->mode == OP_VOLUME_AREA ? 1 + i % 60 : 0;
    v->bmin[1] = -1;
    v->bmax[1] = 2;
    if (v->kind == OP_VOLUME_BOX) {
        v->bmin[0] = cx - 1, v->bmin[2] = cz - 1.5;
        v->bmax[0] = cx + 1, v->bmax[2] = cz + 0.5;
    } else if (v->kind == OP_VOLUME_CYLINDER) {
        v->bmin[0] = cx, v->bmin[2] = cz, v->bmax[0] = 1 + 0.25 * (i % 4);
    } else {
        double p[6] = {cx - 1, cz - 1, cx + 1.5, cz - 1, cx, cz + 1.25};
        memcpy(v->pts, p, sizeof p);
        v->npts = 3;
    }
}

/* Edit i (1-based): every ninth puts mesh "m0" (edit_soup(i)); of the others, every
 * fifth drops volume slot i % 4 when it is there; the rest put it (edit_volume(i)). Every
 * edit changes the level: edit i makes version i + 1. */
typedef struct vstate {
    int present[NVSLOTS];
    op_volume vol[NVSLOTS];
    int mesh; /* the edit of the last m0 put, 0: none */
} vstate;

static int vedit_kind(int i, const vstate *s) /* 0 mesh put, 1 volume put, 2 volume drop */
{
    if (i % 9 == 0)
        return 0;
    return i % 5 == 0 && s->present[i % NVSLOTS] ? 2 : 1;
}

static void vstate_at(int n, vstate *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 1; i <= n; i++) {
        int k = vedit_kind(i, s);
        if (k == 0)
            s->mesh = i;
        else if (k == 2)
            s->present[i % NVSLOTS] = 0;
        else {
            edit_volume(i, &s->vol[i % NVSLOTS]);
            s->present[i % NVSLOTS] = 1;
        }
    }
}

static void vstate_check(op_client *c, int n)
{
    vstate s;
    vstate_at(n, &s);
    opt_soup out = {0}, parts[2] = {{0}};
    opt_soup_quad(&parts[0], 0, 0, 30, 30, 0); /* "floor" sorts before "m0" */
    if (s.mesh)
        edit_soup(s.mesh, &parts[1]);
    concat(parts, 2, &out);
    op_volume v[NVSLOTS];
    int nv = 0;
    for (int k = 0; k < NVSLOTS; k++) /* "vol.0" < "vol.1" < ...: already in name order */
        if (s.present[k])
            v[nv++] = s.vol[k];
    op_client_volumes got;
    op_err e;
    cr_assert_eq(op_client_volumes_get(c, "crash", OPT_TIMEOUT_MS, &got, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(got.n, nv, "after edit %d: %d volumes, want %d", n, got.n, nv);
    for (int i = 0; i < nv; i++) {
        op_client_volume w = opt_client_volume(&v[i], 0);
        cr_assert(opt_client_volume_equal(&got.v[i], &w), "after edit %d: volume %s differs", n,
                  w.name);
    }
    op_client_volumes_free(&got);
    op_soup soup = {out.v, 3 * out.nv, out.t, 3 * out.nt, NULL};
    op_settings st;
    op_settings_default(&st);
    opt_ref ref;
    opt_ref_bake_volumes(&soup, &st, v, nv, &ref);
    opt_check_level(c, "crash", &ref);
    opt_ref_free(&ref);
    opt_soup_free(&out);
}

static void *volume_loop(void *arg)
{
    editor *ed = arg;
    op_client *c;
    op_err e;
    if (op_client_open(ed->url, &c, &e) != OP_OK)
        return NULL;
    vstate s;
    memset(&s, 0, sizeof s);
    for (int i = 1; i <= NEDITS; i++) {
        uint64_t v;
        int changed, kind = vedit_kind(i, &s);
        op_status st;
        char name[16];
        snprintf(name, sizeof name, "vol.%d", i % NVSLOTS);
        if (kind == 0) {
            opt_soup m;
            edit_soup(i, &m);
            op_client_mesh cm = opt_mesh("m0", &m);
            st = op_client_mesh_put(c, "crash", &cm, 2000, &v, &changed, &e);
            opt_soup_free(&m);
        } else if (kind == 2) {
            st = op_client_volume_drop(c, "crash", name, 2000, &v, &changed, &e);
            s.present[i % NVSLOTS] = 0;
        } else {
            op_volume vol;
            edit_volume(i, &vol);
            op_client_volume cv = opt_client_volume(&vol, i % 4 == 0);
            st = op_client_volume_put(c, "crash", &cv, 2000, &v, &changed, &e);
            s.present[i % NVSLOTS] = 1;
        }
        if (st != OP_OK || v != (uint64_t)i + 1 || !changed) {
            editor_stop(ed, i, st, v, &e);
            break;
        }
        atomic_store(&ed->acked, i);
    }
    op_client_close(c);
    return NULL;
}

Test(daemon_persist, kill9_during_volume_edits_and_compactions_loses_no_acknowledged_edit,
     .timeout = 240)
{
    opt_daemon d;
    op_client *c;
    kill_rounds(&d, &c, volume_loop, vstate_check, 25, 40);
    /* A clean restart keeps the volumes too (they are in the snapshot and the journal). */
    op_client_level_info li;
    op_err e;
    cr_assert_eq(op_client_level_info_get(c, "crash", OPT_TIMEOUT_MS, &li, &e), OP_OK);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    const char *const extra[] = {"--compact-bytes", "0", NULL};
    opt_daemon_start(&d, extra);
    vstate_check(c, (int)li.version - 1);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_log_done();
    opt_daemon_cleanup(&d);
}

/* What the kill -9 tests leave when they fail (opt_daemon_log_on_failure): a process that
 * ends before opt_daemon_log_done (as a failed assertion ends a test) shows the daemon's
 * log and stderr in its output before its directories go; one that got to its end shows
 * nothing. Children of this test stand in for the failed and the passed test. */
Test(daemon_persist, a_kill9_test_that_fails_shows_the_daemon_log, .timeout = 30)
{
    opt_daemon d;
    opt_daemon_init(&d);
    char err[400];
    snprintf(err, sizeof err, "%s/stderr", d.dir);
    FILE *f = fopen(d.log, "w");
    cr_assert_not_null(f);
    fputs("2026-12-07T00:00:00.000Z OP-READY the-log-marker\n", f);
    fclose(f);
    cr_assert_not_null(f = fopen(err, "w"));
    fputs("the-stderr-marker\n", f);
    fclose(f);
    for (int done = 0; done < 2; done++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            dup2(fds[1], 2);
            close(fds[0]);
            opt_daemon_log_on_failure(&d);
            if (done)
                opt_daemon_log_done();
            exit(1);
        }
        close(fds[1]);
        char buf[20000];
        size_t n = 0;
        ssize_t k;
        while (n < sizeof buf - 1 && (k = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0)
            n += (size_t)k;
        buf[n] = '\0';
        close(fds[0]);
        waitpid(pid, NULL, 0);
        if (done) {
            cr_assert(!strstr(buf, "the-log-marker"), "a test at its end showed the log:\n%s", buf);
        } else {
            cr_assert(strstr(buf, "the-log-marker"), "no log in the output:\n%s", buf);
            cr_assert(strstr(buf, "the-stderr-marker"), "no stderr in the output:\n%s", buf);
        }
        /* The child's exit removed the directory (opt_daemon_init's atexit, after the log
         * was shown): made again for the next child. */
        struct stat sb;
        if (stat(d.dir, &sb) != 0) {
            cr_assert_eq(mkdir(d.dir, 0700), 0);
            cr_assert_not_null(f = fopen(d.log, "w"));
            fputs("2026-12-07T00:00:00.000Z OP-READY the-log-marker\n", f);
            fclose(f);
            cr_assert_not_null(f = fopen(err, "w"));
            fputs("the-stderr-marker\n", f);
            fclose(f);
        }
    }
    opt_daemon_cleanup(&d);
}

static void stat_file(const opt_daemon *d, const char *name, struct stat *sb)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", d->data, name);
    cr_assert_eq(stat(path, sb), 0, "no %s", path);
}

Test(daemon_persist, a_mesh_edit_appends_a_record_and_leaves_the_snapshot, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    /* A level of some size (a 60 m terrain) beside the small meshes edited. */
    opt_soup big = {0};
    for (int z = 0; z < 60; z++)
        for (int x = 0; x < 60; x++)
            opt_soup_quad(&big, (float)x, (float)z, (float)x + 1, (float)z + 1,
                          0.05f * (float)((x * 7 + z * 3) % 5));
    op_client_mesh ground = opt_mesh("ground", &big);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(
        op_client_level_put(c, "crash", NULL, 0, &ground, 1, OPT_TIMEOUT_MS, &v, &changed, &e),
        OP_OK, "%s", e.msg);
    struct stat s0, j0, s1, j1;
    stat_file(&d, "crash.oplevel", &s0);
    stat_file(&d, "crash.opjournal", &j0);
    cr_assert_eq(s0.st_mode & 0777, 0600);
    cr_assert_eq(j0.st_mode & 0777, 0600);
    size_t mesh_bytes = 0;
    for (int i = 1; i <= 10; i++) {
        opt_soup s;
        edit_soup(i, &s);
        op_client_mesh m = opt_mesh("crate", &s);
        mesh_bytes += s.nv * 12 + s.nt * 12;
        cr_assert_eq(op_client_mesh_put(c, "crash", &m, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK);
        opt_soup_free(&s);
    }
    cr_assert_eq(op_client_mesh_drop(c, "crash", "crate", OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK);
    stat_file(&d, "crash.oplevel", &s1);
    stat_file(&d, "crash.opjournal", &j1);
    cr_assert(s1.st_ino == s0.st_ino && s1.st_size == s0.st_size &&
                  s1.st_mtim.tv_sec == s0.st_mtim.tv_sec &&
                  s1.st_mtim.tv_nsec == s0.st_mtim.tv_nsec,
              "a mesh edit rewrote the snapshot");
    off_t grew = j1.st_size - j0.st_size;
    /* Each record: the mesh's bytes, its names and keys, 12 bytes of framing. */
    cr_assert(grew > (off_t)mesh_bytes && grew < (off_t)mesh_bytes + 11 * 120,
              "the journal grew %lld bytes for %zu bytes of meshes", (long long)grew, mesh_bytes);
    cr_assert_lt(grew, s0.st_size / 4, "the records are not small beside the snapshot");
    /* And the edits are there after a restart. */
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_start(&d, NULL);
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(c, "crash", OPT_TIMEOUT_MS, &li, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(li.version, 12);
    op_soup soup = {big.v, 3 * big.nv, big.t, 3 * big.nt, NULL};
    op_settings st;
    op_settings_default(&st);
    opt_ref ref;
    opt_ref_bake(&soup, &st, &ref);
    opt_check_level(c, "crash", &ref);
    opt_ref_free(&ref);
    opt_soup_free(&big);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

Test(daemon_persist, restart_keeps_levels_and_skips_corrupt_files, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_floor(c);
    for (int i = 1; i <= 4; i++) {
        opt_soup s;
        edit_soup(i, &s);
        char name[8];
        snprintf(name, sizeof name, "m%d", i % 3);
        op_client_mesh m = opt_mesh(name, &s);
        uint64_t v;
        int changed;
        op_err e;
        cr_assert_eq(op_client_mesh_put(c, "crash", &m, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK);
        opt_soup_free(&s);
    }
    cr_assert_eq(opt_daemon_stop(&d), 0, "SIGTERM must drain and exit 0");
    /* A corrupt file and a truncated copy of a good one beside the good one. */
    char path[400], cmd[2400];
    snprintf(path, sizeof path, "%s/junk.oplevel", d.data);
    FILE *f = fopen(path, "wb");
    fputs("OPLEVEL1 this is not a level", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "head -c 100 '%s/crash.oplevel' > '%s/cut.oplevel'", d.data, d.data);
    cr_assert_eq(system(cmd), 0);
    opt_daemon_start(&d, NULL);
    op_client_level_list l;
    op_err e;
    cr_assert_eq(op_client_level_list_get(c, OPT_TIMEOUT_MS, &l, &e), OP_OK);
    cr_assert_eq(l.n, 1);
    cr_assert(!strcmp(l.levels[0].level, "crash"), "%s", l.levels[0].level);
    cr_assert_eq(l.levels[0].version, 5);
    op_client_level_list_free(&l);
    check_state(c, 4);
    snprintf(cmd, sizeof cmd, "grep -c OP-STORE-SKIP '%s' | grep -qx 2", d.log);
    cr_assert_eq(system(cmd), 0, "two skipped files must be logged");
    /* Both corrupt files are set aside with their bytes, not left to be overwritten. */
    snprintf(cmd, sizeof cmd,
             "test ! -e '%s/junk.oplevel' && grep -qx 'OPLEVEL1 this is not a level' "
             "'%s/junk.oplevel.corrupt-1' && test $(wc -c < '%s/cut.oplevel.corrupt-1') = 100 && "
             "grep -c OP-STORE-QUARANTINE '%s' | grep -qx 2",
             d.data, d.data, d.data, d.log);
    cr_assert_eq(system(cmd), 0, "corrupt files must be quarantined with their bytes");
    /* Dropping removes the file: the level does not come back. */
    int dropped;
    cr_assert_eq(op_client_level_drop(c, "crash", OPT_TIMEOUT_MS, &dropped, &e), OP_OK);
    cr_assert(dropped);
    cr_assert_eq(op_client_level_drop(c, "crash", OPT_TIMEOUT_MS, &dropped, &e), OP_OK);
    cr_assert(!dropped);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_start(&d, NULL);
    cr_assert_eq(op_client_level_list_get(c, OPT_TIMEOUT_MS, &l, &e), OP_OK);
    cr_assert_eq(l.n, 0);
    op_client_level_list_free(&l);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

typedef struct poller {
    const char *url;
    op_status st;
    int ntiles;
} poller;

static void *long_poll(void *arg)
{
    poller *p = arg;
    op_client *c;
    op_err e;
    op_client_changes ch;
    if ((p->st = op_client_open(p->url, &c, &e)) != OP_OK)
        return NULL;
    p->st = op_client_changes_since(c, "crash", 1, 20000, OPT_TIMEOUT_MS + 20000, &ch, &e);
    if (p->st == OP_OK) {
        p->ntiles = ch.ntiles;
        op_client_changes_free(&ch);
    }
    op_client_close(c);
    return NULL;
}

Test(daemon_persist, sigterm_answers_parked_polls_and_sighup_reopens_the_log, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_floor(c);
    /* SIGHUP: the log is reopened (as logrotate needs after renaming it). */
    char moved[400], cmd[1200];
    snprintf(moved, sizeof moved, "%s.1", d.log);
    cr_assert_eq(rename(d.log, moved), 0);
    kill(d.pid, SIGHUP);
    opt_sleep_ms(200);
    op_client_ping_result p;
    op_err e;
    cr_assert_eq(op_client_ping(c, OPT_TIMEOUT_MS, &p, &e), OP_OK);
    /* The line is written once the reply is out: allow it a moment. */
    snprintf(cmd, sizeof cmd, "grep -q 'ping level=- ms=.* ok' '%s'", d.log);
    int found = 0;
    for (int i = 0; i < 100 && !found; i++) {
        found = system(cmd) == 0;
        if (!found)
            opt_sleep_ms(20);
    }
    cr_assert(found, "the reopened log has no request line");
    /* A long poll parked when SIGTERM comes is answered at once; the daemon exits 0. */
    poller pl = {d.url, OP_EINTERNAL, -1};
    pthread_t th;
    pthread_create(&th, NULL, long_poll, &pl);
    opt_sleep_ms(300);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    pthread_join(th, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert_eq(pl.st, OP_OK);
    cr_assert_eq(pl.ntiles, 0);
    cr_assert_lt(t1.tv_sec - t0.tv_sec, 5, "the drain waited for the poll's deadline");
    op_client_close(c);
    opt_daemon_cleanup(&d);
}

/* Two daemons on one data directory would both replay, append and compact its files and
 * lose each other's acknowledged edits: the second must refuse to start, naming the first. */
Test(daemon_persist, a_second_daemon_on_the_same_data_dir_exits_naming_the_holder, .timeout = 60)
{
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_floor(c);
    char cmd[1600], out[400], line[512] = "";
    snprintf(out, sizeof out, "%s/second.err", d.dir);
    snprintf(cmd, sizeof cmd,
             "timeout 20 '%s/onepathd' --listen 'ipc://%s/s2.ipc' --data-dir '%s' "
             "--threads 1 2>'%s'",
             OP_BIN_DIR, d.dir, d.data, out);
    int status = system(cmd);
    cr_assert(WIFEXITED(status), "the second daemon must exit by itself");
    cr_assert_eq(WEXITSTATUS(status), 1, "the second daemon must exit 1, got %d",
                 WEXITSTATUS(status));
    FILE *f = fopen(out, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(line, sizeof line, f));
    fclose(f);
    char want[64];
    snprintf(want, sizeof want, "pid %ld", (long)d.pid);
    cr_assert(strstr(line, want) && strstr(line, d.data), "message must name %s and %s: %s", want,
              d.data, line);
    /* The first is untouched and still serves; once it is gone the directory is free. */
    check_state(c, 0);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_start(&d, NULL);
    check_state(c, 0);
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}

static unsigned mode_of(const char *path)
{
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0, "stat %s", path);
    return (unsigned)(sb.st_mode & 07777);
}

/* Under umask 000 the socket, log and data files must still not be open to every local
 * user: socket 0660 (or --socket-mode), log and data files 0600, the data dir 0700. */
Test(daemon_persist, files_and_socket_keep_their_modes_under_umask_000, .timeout = 60)
{
    umask(0);
    opt_daemon d;
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
    op_client *c = opt_connect(&d);
    put_floor(c);
    opt_soup s;
    edit_soup(1, &s);
    op_client_mesh m = opt_mesh("m1", &s);
    uint64_t v;
    int changed;
    op_err e;
    cr_assert_eq(op_client_mesh_put(c, "crash", &m, OPT_TIMEOUT_MS, &v, &changed, &e), OP_OK);
    opt_soup_free(&s);
    char path[400];
    snprintf(path, sizeof path, "%s/s.ipc", d.dir);
    cr_assert_eq(mode_of(path), 0660, "socket mode %o", mode_of(path));
    cr_assert_eq(mode_of(d.log), 0600, "log mode %o", mode_of(d.log));
    cr_assert_eq(mode_of(d.data), 0700, "data dir mode %o", mode_of(d.data));
    snprintf(path, sizeof path, "%s/crash.oplevel", d.data);
    cr_assert_eq(mode_of(path), 0600, "level file mode %o", mode_of(path));
    snprintf(path, sizeof path, "%s/.onepathd.lock", d.data);
    cr_assert_eq(mode_of(path), 0600, "lock file mode %o", mode_of(path));
    cr_assert_eq(opt_daemon_stop(&d), 0);
    const char *const extra[] = {"--socket-mode", "0600", NULL};
    opt_daemon_start(&d, extra);
    snprintf(path, sizeof path, "%s/s.ipc", d.dir);
    cr_assert_eq(mode_of(path), 0600, "--socket-mode 0600 gave %o", mode_of(path));
    op_client_close(c);
    cr_assert_eq(opt_daemon_stop(&d), 0);
    opt_daemon_cleanup(&d);
}
