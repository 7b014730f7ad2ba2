/*
 * Rendezvous placement (protocol.md §11): the vectors of §11.4 read from the spec itself,
 * the minimal-movement property when a member joins or leaves, and member lists. Then
 * three live daemons: each level on the member the rule names, tiles equal to the offline
 * bake, and every error (a daemon's error reply, a killed member) naming the member, in
 * the library and in the CLI.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "op_daemon_test.h"
#include "onepath/fleet.h"

static const char *k8s[3] = {"tcp://onepathd-0.onepathd:7411", "tcp://onepathd-1.onepathd:7411",
                             "tcp://onepathd-2.onepathd:7411"};

/* The text between two backquotes starting at *p, copied to out; advances *p. */
static int cell(const char **p, char *out, size_t cap)
{
    const char *a = strchr(*p, '`');
    if (!a)
        return 0;
    const char *b = strchr(a + 1, '`');
    if (!b || (size_t)(b - a - 1) >= cap)
        return 0;
    memcpy(out, a + 1, (size_t)(b - a - 1));
    out[b - a - 1] = '\0';
    *p = b + 1;
    return 1;
}

/* Calls fn on every row of the table after the marker comment. Returns the row count. */
static int table_rows(const char *marker, void (*fn)(const char *row))
{
    FILE *f = fopen(OP_DOCS_DIR "/spec/protocol.md", "r");
    cr_assert(f, "cannot open protocol.md");
    char line[1024];
    int in = 0, rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, marker)) {
            in = 1;
            continue;
        }
        if (!in)
            continue;
        if (line[0] != '|')
            break;
        if (strchr(line, '`')) {
            fn(line);
            rows++;
        }
    }
    fclose(f);
    return rows;
}

static void weight_row(const char *row)
{
    char m[256], l[256], w[64];
    const char *p = row;
    cr_assert(cell(&p, m, sizeof m) && cell(&p, l, sizeof l) && cell(&p, w, sizeof w), "%s", row);
    uint64_t want = strtoull(w, NULL, 16);
    uint64_t got = op_fleet_weight(m, l);
    cr_expect_eq(got, want, "weight(%s, %s) = 0x%016" PRIx64 ", the spec says %s", m, l, got, w);
}

static void placement_row(const char *row)
{
    char l[256];
    const char *p = row;
    cr_assert(cell(&p, l, sizeof l), "%s", row);
    int h3 = -1, h2 = -1;
    cr_assert_eq(sscanf(p, " | %d | %d |", &h3, &h2), 2, "%s", row);
    cr_expect_eq(op_fleet_pick(k8s, 3, l), h3, "level %s over three members", l);
    cr_expect_eq(op_fleet_pick(k8s, 2, l), h2, "level %s over two members", l);
}

Test(fleet, spec_vectors)
{
    cr_assert_geq(table_rows("fleet-weights", weight_row), 8);
    cr_assert_geq(table_rows("fleet-placement", placement_row), 6);
}

/* The weight by the spec's steps, written apart from the library's code. */
static uint64_t ref_weight(const char *m, const char *l)
{
    unsigned char buf[600];
    size_t n = 0, lm = strlen(m), ll = strlen(l);
    memcpy(buf, m, lm);
    n = lm;
    buf[n++] = 0;
    memcpy(buf + n, l, ll);
    n += ll;
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ buf[i]) * 1099511628211ULL;
    h += 11400714819323198485ULL;
    h = (h ^ (h >> 30)) * 13787848793156543929ULL;
    h = (h ^ (h >> 27)) * 10723151780598845931ULL;
    return h ^ (h >> 31);
}

Test(fleet, weight_follows_the_steps)
{
    char m[64], l[64];
    for (int i = 0; i < 500; i++) {
        snprintf(m, sizeof m, "ipc:///tmp/m%d.sock", i % 7);
        snprintf(l, sizeof l, "level-%d", i);
        cr_expect_eq(op_fleet_weight(m, l), ref_weight(m, l), "%s %s", m, l);
    }
}

Test(fleet, ties_and_order)
{
    /* The same member twice has equal weights: the first in byte order wins, wherever
     * listed; the order of a list does not change the holder. */
    const char *a[2] = {"tcp://b:1", "tcp://a:1"};
    cr_expect_eq(op_fleet_pick(NULL, 0, "x"), -1);
    const char *same[2] = {"tcp://a:1", "tcp://a:1"};
    cr_expect_eq(op_fleet_pick(same, 2, "x"), 0);
    char l[32];
    for (int i = 0; i < 200; i++) {
        snprintf(l, sizeof l, "l%d", i);
        const char *rev[2] = {a[1], a[0]};
        cr_expect_str_eq(a[op_fleet_pick(a, 2, l)], rev[op_fleet_pick(rev, 2, l)]);
    }
}

Test(fleet, a_new_member_takes_only_its_own_levels)
{
    const char *m[5] = {"ipc:///a", "ipc:///b", "ipc:///c", "ipc:///d", "ipc:///e"};
    char l[32];
    int moved = 0, counts[5] = {0};
    for (int i = 0; i < 4000; i++) {
        snprintf(l, sizeof l, "level-%d", i);
        int before = op_fleet_pick(m, 4, l), after = op_fleet_pick(m, 5, l);
        counts[after]++;
        if (after != before) {
            cr_expect_eq(after, 4, "%s moved from %s to %s, not to the new member", l, m[before],
                         m[after]);
            moved++;
        }
        /* Removing member 0 moves only member 0's levels. */
        int without = op_fleet_pick(m + 1, 4, l) + 1;
        if (after != 0)
            cr_expect_eq(without, after, "%s moved though its holder stayed", l);
    }
    /* About a fifth move; each member holds about a fifth (binomial, far from the bounds). */
    cr_expect(moved > 600 && moved < 1000, "%d of 4000 levels moved", moved);
    for (int i = 0; i < 5; i++)
        cr_expect(counts[i] > 600 && counts[i] < 1000, "member %d holds %d", i, counts[i]);
}

Test(fleet, member_lists)
{
    char **m = NULL;
    int n = 0;
    op_err e;
    cr_assert_eq(op_fleet_members_parse("ipc:///a, tcp://b:1 ,ipc:///c", &m, &n, &e), OP_OK, "%s",
                 e.msg);
    cr_assert_eq(n, 3);
    cr_expect_str_eq(m[1], "tcp://b:1");
    char path[] = "/tmp/op-fleet-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char *text = "# the fleet\n\n  ipc:///d  \nipc:///e\r\n# end\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char spec[64];
    snprintf(spec, sizeof spec, "@%s", path);
    cr_assert_eq(op_fleet_members_parse(spec, &m, &n, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(n, 5);
    cr_expect_str_eq(m[3], "ipc:///d");
    cr_expect_str_eq(m[4], "ipc:///e");
    op_fleet *f = NULL;
    cr_assert_eq(op_fleet_open((const char *const *)m, n, &f, &e), OP_OK, "%s", e.msg);
    cr_expect_eq(op_fleet_size(f), 5);
    const char *who = NULL;
    cr_expect_eq(op_fleet_for(f, "dungeon", &who),
                 op_fleet_client(f, op_fleet_index(f, "dungeon")));
    cr_expect_str_eq(who, m[op_fleet_pick((const char *const *)m, n, "dungeon")]);
    op_fleet_close(f);
    op_fleet_members_free(m, n);

    /* Errors name what was wrong. */
    m = NULL;
    n = 0;
    cr_expect_eq(op_fleet_members_parse("ipc:///a,,ipc:///b", &m, &n, &e), OP_EINVAL);
    cr_expect(strstr(e.msg, "empty"), "%s", e.msg);
    op_fleet_members_free(m, n);
    m = NULL;
    n = 0;
    cr_expect_eq(op_fleet_members_parse("@/nonexistent/fleet", &m, &n, &e), OP_EIO);
    cr_expect(strstr(e.msg, "/nonexistent/fleet"), "%s", e.msg);
    FILE *fp = fopen(path, "w");
    fputs("# nothing\n\n", fp);
    fclose(fp);
    cr_expect_eq(op_fleet_members_parse(spec, &m, &n, &e), OP_EINVAL);
    cr_expect(strstr(e.msg, "lists no URL"), "%s", e.msg);
    unlink(path);
    const char *dup[2] = {"ipc:///a", "ipc:///a"};
    cr_expect_eq(op_fleet_open(dup, 2, &f, &e), OP_EINVAL);
    cr_expect(strstr(e.msg, "twice"), "%s", e.msg);
    const char *bad[1] = {"nope://x"};
    cr_expect_neq(op_fleet_open(bad, 1, &f, &e), OP_OK);
    cr_expect_null(f);
}

/* ---- three live daemons ---- */

#define NLEVELS 30

/* Runs a shell command (OP_BIN_DIR first in it as %s), its stderr into err; the exit code. */
static int run_err(char *err, size_t cap, const char *fmt, const char *a, const char *b)
{
    char cmd[4096], path[] = "/tmp/op-fleet-err-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, fmt, OP_BIN_DIR, a, b);
    char full[4200];
    snprintf(full, sizeof full, "%s > /dev/null 2> %s", cmd, path);
    int rc = system(full);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(err, 1, cap - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    unlink(path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* A level of its own size per index, so that a mix-up of levels shows in the tiles. */
static void level_soup(int i, opt_soup *s)
{
    memset(s, 0, sizeof *s);
    opt_soup_quad(s, -4.0f - (float)(i % 5), -3.0f, 5.0f + (float)(i % 7), 6.0f + (float)(i % 3),
                  0.0f);
}

Test(fleet_daemons, placement_tiles_and_errors_naming_the_member, .timeout = 240)
{
    opt_daemon d[3];
    const char *urls[3];
    for (int i = 0; i < 3; i++) {
        opt_daemon_init(&d[i]);
        opt_daemon_start(&d[i], NULL);
        urls[i] = d[i].url;
    }
    op_fleet *f;
    op_err e;
    cr_assert_eq(op_fleet_open(urls, 3, &f, &e), OP_OK, "%s", e.msg);
    char names[NLEVELS][32];
    int holder[NLEVELS], held[3] = {0};
    op_settings s;
    op_settings_default(&s);
    for (int i = 0; i < NLEVELS; i++) {
        snprintf(names[i], sizeof names[i], "fleet-%02d", i);
        holder[i] = op_fleet_pick(urls, 3, names[i]);
        held[holder[i]]++;
        opt_soup soup;
        level_soup(i, &soup);
        op_client_mesh m = opt_mesh("quad", &soup);
        uint64_t v;
        int changed;
        cr_assert_eq(op_client_level_put(op_fleet_for(f, names[i], NULL), names[i], NULL, 0, &m, 1,
                                         OPT_TIMEOUT_MS, &v, &changed, &e),
                     OP_OK, "%s: %s", names[i], e.msg);
        opt_soup_free(&soup);
    }
    /* Each member holds exactly the levels the rule names (level.list of every member). */
    for (int k = 0; k < 3; k++) {
        op_client_level_list l;
        cr_assert_eq(op_client_level_list_get(op_fleet_client(f, k), OPT_TIMEOUT_MS, &l, &e), OP_OK,
                     "%s", e.msg);
        cr_expect_eq(l.n, held[k], "member %s holds %d levels, the rule names %d", urls[k], l.n,
                     held[k]);
        for (int j = 0; j < l.n; j++)
            cr_expect_eq(op_fleet_pick(urls, 3, l.levels[j].level), k, "%s holds %s", urls[k],
                         l.levels[j].level);
        op_client_level_list_free(&l);
    }
    /* Every tile equals the offline bake of its level. */
    for (int i = 0; i < NLEVELS; i++) {
        opt_soup soup;
        level_soup(i, &soup);
        op_soup os = {soup.v, 3 * soup.nv, soup.t, 3 * soup.nt, NULL};
        opt_ref ref;
        opt_ref_bake(&os, &s, &ref);
        cr_assert_gt(opt_check_level(op_fleet_for(f, names[i], NULL), names[i], &ref), 0);
        opt_ref_free(&ref);
        opt_soup_free(&soup);
    }

    /* A daemon's error reply names the member it came from, in the library... */
    const char *who;
    op_client_level_info li;
    cr_assert_eq(op_client_level_info_get(op_fleet_for(f, "no-such-level", &who), "no-such-level",
                                          OPT_TIMEOUT_MS, &li, &e),
                 OP_ENOTFOUND);
    cr_expect(strstr(e.msg, who) && strstr(e.msg, "no-such-level"), "error reply: %s", e.msg);
    /* (a client of one daemon, opened alone, keeps the daemon's message as it is) */
    op_client *alone;
    cr_assert_eq(op_client_open(who, &alone, &e), OP_OK);
    cr_assert_eq(op_client_level_info_get(alone, "no-such-level", OPT_TIMEOUT_MS, &li, &e),
                 OP_ENOTFOUND);
    cr_expect_null(strstr(e.msg, who), "%s", e.msg);
    op_client_close(alone);
    /* ... and in the CLI, given the fleet. */
    char list[800], err[4096];
    snprintf(list, sizeof list, "%s,%s,%s", urls[0], urls[1], urls[2]);
    cr_assert_eq(run_err(err, sizeof err, "%s/onepath remote level-info --url '%s' --level %s",
                         list, "no-such-level"),
                 1);
    cr_expect(strstr(err, who) && strstr(err, "OP_ENOTFOUND"), "CLI: %s", err);
    cr_assert_eq(run_err(err, sizeof err, "%s/onepath mesh drop --url '%s' --level %s quad", list,
                         "no-such-level"),
                 1);
    cr_expect(strstr(err, who) && strstr(err, "OP_ENOTFOUND"), "CLI mesh drop: %s", err);

    /* One member killed: only its levels fail, each error naming it. */
    int dead = holder[0];
    opt_daemon_kill9(&d[dead]);
    for (int i = 0; i < NLEVELS; i++) {
        op_status st = op_client_level_info_get(op_fleet_for(f, names[i], NULL), names[i],
                                                holder[i] == dead ? 500 : OPT_TIMEOUT_MS, &li, &e);
        if (holder[i] != dead) {
            cr_expect_eq(st, OP_OK, "%s on a live member: %s", names[i], e.msg);
            continue;
        }
        cr_expect(st == OP_ETIMEDOUT || st == OP_EIO, "%s on the dead member: %s", names[i],
                  op_status_name(st));
        cr_expect(strstr(e.msg, urls[dead]), "%s: the error does not name %s: %s", names[i],
                  urls[dead], e.msg);
    }
    cr_assert_eq(run_err(err, sizeof err,
                         "%s/onepath remote level-info --timeout 500 --url '%s' --level %s", list,
                         names[0]),
                 1);
    cr_expect(strstr(err, urls[dead]), "CLI, dead member: %s", err);
    /* Restarted on its data directory: its levels are back. */
    opt_daemon_start(&d[dead], NULL);
    for (int i = 0; i < NLEVELS; i++) {
        cr_expect_eq(op_client_level_info_get(op_fleet_for(f, names[i], NULL), names[i],
                                              OPT_TIMEOUT_MS, &li, &e),
                     OP_OK, "%s after the restart: %s", names[i], e.msg);
        cr_expect_eq(li.version, 1);
    }
    op_fleet_close(f);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(opt_daemon_stop(&d[i]), 0);
        opt_daemon_cleanup(&d[i]);
    }
}
