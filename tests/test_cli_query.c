/*
 * The path, render and export commands, run as a user would (the built `onepath`
 * binary), on a flat generated floor where the answers are known: a straight line
 * from corner to corner that crosses tile lines, an SVG with one polygon element per
 * polygon, an OBJ with one face per polygon plus the detail triangles.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEVEL "gen:flat:32:1"

static char *run(const char *args, int *status)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/onepath %s 2>&1", OP_BIN_DIR, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - 1 - n, p)) > 0) {
        n += got;
        if (n + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[n] = '\0';
    *status = pclose(p);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(cli_query, path_on_a_flat_floor)
{
    int st;
    char *out = run("path " LEVEL " --from 2,0,3 --to 30,0,29 --json --threads 2", &st);
    cr_assert_eq(st, 0, "%s", out);
    cr_expect(strstr(out, "\"partial\": false") != NULL, "%s", out);
    /* On an open floor the straight path is the segment itself: start, crossings, end. */
    cr_expect_eq(count(out, "\"start\""), 1, "%s", out);
    cr_expect_eq(count(out, "\"end\""), 1, "%s", out);
    cr_expect_geq(count(out, "\"tile\""), 3, "the diagonal crosses tile lines: %s", out);
    free(out);
}

Test(cli_query, path_refusals)
{
    int st;
    char *out = run("path " LEVEL " --from 2,0 --to 30,0,30", &st);
    cr_expect_eq(WEXITSTATUS(st), 2, "%s", out);
    free(out);
    out = run("path " LEVEL " --from 200,0,200 --to 30,0,30", &st);
    cr_expect_eq(WEXITSTATUS(st), 1, "%s", out);
    cr_expect(strstr(out, "no polygon") != NULL, "%s", out);
    free(out);
}

Test(cli_query, render_and_export)
{
    char svg[256], obj[256];
    snprintf(svg, sizeof svg, "/tmp/op_cli_query_%d.svg", (int)getpid());
    snprintf(obj, sizeof obj, "/tmp/op_cli_query_%d.obj", (int)getpid());
    char args[1024];
    int st;
    snprintf(args, sizeof args, "render " LEVEL " --out %s --path 2,0,3:30,0,29 --color area", svg);
    char *out = run(args, &st);
    cr_assert_eq(st, 0, "%s", out);
    long polys = 0;
    cr_assert_eq(sscanf(strstr(out, "layers, ") + 8, "%ld", &polys), 1, "%s", out);
    free(out);
    FILE *f = fopen(svg, "r");
    cr_assert_not_null(f);
    static char text[1 << 22];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    cr_expect(strncmp(text, "<svg", 4) == 0);
    cr_expect(strstr(text, "<polyline") != NULL, "the path is drawn");
    /* mesh polygons + corridor polygons */
    cr_expect_gt(count(text, "<polygon"), polys);
    snprintf(args, sizeof args, "export " LEVEL " --obj %s", obj);
    out = run(args, &st);
    cr_assert_eq(st, 0, "%s", out);
    free(out);
    f = fopen(obj, "r");
    cr_assert_not_null(f);
    n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    int groups = count(text, "\ng tile_"), detail = count(text, "_detail\n");
    cr_expect_gt(groups, 0);
    cr_expect_eq(groups, 2 * detail, "one polygon group and one detail group per tile");
    cr_expect_gt(count(text, "\nf "), polys, "polygon faces plus detail triangles");
    remove(svg);
    remove(obj);
}

/* Baked blobs read back with --tiles give the same mesh as the level build. */
Test(cli_query, tiles_dir_matches_the_level_build)
{
    char dir[256], args[1024];
    snprintf(dir, sizeof dir, "/tmp/op_cli_query_tiles_%d", (int)getpid());
    int st;
    snprintf(args, sizeof args, "bake " LEVEL " --out %s --threads 2", dir);
    char *out = run(args, &st);
    cr_assert_eq(st, 0, "%s", out);
    free(out);
    char *a = run("path " LEVEL " --from 2,0,3 --to 30,0,29 --json", &st);
    cr_assert_eq(st, 0, "%s", a);
    snprintf(args, sizeof args, "path --tiles %s --from 2,0,3 --to 30,0,29 --json", dir);
    char *b = run(args, &st);
    cr_assert_eq(st, 0, "%s", b);
    cr_expect_str_eq(a, b);
    free(a);
    free(b);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    cr_expect_eq(system(args), 0);
}
