/*
 * onepath: bake navigation meshes from level geometry. Subcommands live one per
 * file (cmd_<name>.c); this file only dispatches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_common.h"
#include "onepath/version.h"

static int cmd_version(int argc, char **argv)
{
    if (argc > 0 && argv[0][0] == '-') {
        fprintf(stderr, "usage: onepath version\n");
        return 2;
    }
    printf("onepath %s\n", OP_VERSION_STRING);
    return 0;
}

static const op_cli_command commands[] = {
    {"version", cmd_version, "print the version"},
    {"bake", op_cmd_bake, "build every tile of a level (or one with --tile)"},
    {"inspect", op_cmd_inspect, "build one tile up to a stage and show its counts or a dump"},
    {"verify", op_cmd_verify, "decode and validate baked tile files"},
    {"remote", op_cmd_remote, "one onepathd method: ping, level-list, level-info, tile-get, ..."},
    {"put", op_cmd_put, "upload a level (OBJ) to onepathd"},
    {"fetch", op_cmd_fetch, "download every tile of a level from onepathd"},
    {"watch", op_cmd_watch, "keep a directory in step with a level's tiles on onepathd"},
    {"gen", op_cmd_gen, "write a generated test level as OBJ"},
    {"path", op_cmd_path, "corridor and straight path between two points"},
    {"render", op_cmd_render, "top-down SVG of the mesh (and a path)"},
    {"export", op_cmd_export, "write the mesh as OBJ or as a Detour navmesh set"},
    {"mesh", op_cmd_mesh, "one mesh of a level on onepathd: put, drop"},
    {"volume", op_cmd_volume, "a level's volumes on onepathd: put, drop, list"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: onepath COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\noptions of every command:\n"
               "  --max-input-bytes N  read no input file larger than N bytes (default 2 GiB);\n"
               "                       directories, devices and FIFOs are refused\n");
    fprintf(f, "\n'onepath COMMAND --help' describes one command; 'onepath --version' prints "
               "the version.\nThe commands that talk to onepathd take --url URL, default "
               "$ONEPATH_URL, and\n--token-file FILE (the daemon's shared token, mode 0600), "
               "default $ONEPATH_TOKEN_FILE.\n");
}

/* Does a command's argument list ask for its help (--help or -h before any "--")? */
static int asks_help(int argc, char **argv)
{
    for (int i = 0; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

/* Takes --max-input-bytes N (or =N) out of argv[from..argc), wherever it stands, so that
 * every command's file inputs share one bound. Returns the new argc, or -1 (printed). */
static int take_max_input(int argc, char **argv, int from)
{
    int w = from;
    for (int r = from; r < argc; r++) {
        const char *v = NULL;
        if (!strcmp(argv[r], "--max-input-bytes")) {
            if (r + 1 >= argc) {
                fprintf(stderr, "onepath: --max-input-bytes wants a value\n");
                return -1;
            }
            v = argv[++r];
        } else if (!strncmp(argv[r], "--max-input-bytes=", 18)) {
            v = argv[r] + 18;
        } else {
            argv[w++] = argv[r];
            continue;
        }
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || end == v || *end || n == 0 || v[0] == '-' ||
            n > (unsigned long long)SIZE_MAX / 2) {
            fprintf(stderr, "onepath: --max-input-bytes '%s' is not a byte count in [1, %zu]\n", v,
                    (size_t)SIZE_MAX / 2);
            return -1;
        }
        cli_set_max_input_bytes((size_t)n);
    }
    argv[w] = NULL;
    return w;
}

int main(int argc, char **argv)
{
    if ((argc = take_max_input(argc, argv, 1)) < 0)
        return 2;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return cmd_version(0, NULL);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            if (asks_help(argc - 2, argv + 2)) {
                /* Asked for, the usage is the output: stdout, exit 0. The commands print
                 * it to stderr with exit 2 when it answers bad usage. */
                fflush(stderr);
                if (dup2(1, 2) < 0)
                    return 2;
                int rc = commands[i].fn(argc - 2, argv + 2);
                return rc == 2 ? 0 : rc;
            }
            return commands[i].fn(argc - 2, argv + 2);
        }
    fprintf(stderr, "onepath: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
