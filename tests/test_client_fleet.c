/*
 * Rendezvous placement (protocol.md §11): the vectors of §11.4 read from the spec itself,
 * the minimal-movement property when a member joins or leaves, and member lists.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
