/*
 * `onepath gen KIND [--size N] [--seed S] [--out FILE]`: writes a generated level
 * (onepath/levelgen.h) as OBJ to FILE or stdout. The bytes depend only on the
 * arguments, on every machine.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "onepath/levelgen.h"
#include "onepath/obj.h"

static void gen_usage(FILE *f)
{
    fprintf(f,
            "usage: onepath gen KIND [--size N] [--seed S] [--out FILE]\n"
            "\n"
            "Writes a generated level as OBJ (stdout unless --out).\n"
            "  KIND        one of: %s\n"
            "  --size N    width and depth in metres, %d..%d (default 64)\n"
            "  --seed S    unsigned 64-bit seed (default 1)\n"
            "  --out FILE  write to FILE instead of stdout\n",
            OP_LEVELGEN_KINDS, OP_LEVELGEN_MIN_SIZE, OP_LEVELGEN_MAX_SIZE);
}

static int parse_u64(const char *s, uint64_t *v)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *v = (uint64_t)x;
    return 0;
}

static int file_write(void *ctx, const char *data, size_t len)
{
    return fwrite(data, 1, len, (FILE *)ctx) == len ? 0 : -1;
}

typedef struct gen_args {
    const char *kind, *out;
    uint64_t size, seed;
} gen_args;

/* Returns 0 ok, 1 for --help (printed), 2 bad usage (message printed). */
static int parse_args(int argc, char **argv, gen_args *a)
{
    a->kind = a->out = NULL;
    a->size = 64;
    a->seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            gen_usage(stdout);
            return 1;
        }
        int has_value = i + 1 < argc;
        if (!strcmp(arg, "--size") || !strcmp(arg, "--seed") || !strcmp(arg, "--out")) {
            if (!has_value) {
                fprintf(stderr, "onepath gen: %s needs a value\n", arg);
                return 2;
            }
            const char *v = argv[++i];
            if (!strcmp(arg, "--out")) {
                a->out = v;
            } else if (parse_u64(v, !strcmp(arg, "--size") ? &a->size : &a->seed) != 0) {
                fprintf(stderr, "onepath gen: %s '%s' is not an unsigned integer\n", arg, v);
                return 2;
            }
        } else if (arg[0] == '-' && arg[1]) {
            fprintf(stderr, "onepath gen: unknown option '%s'\n", arg);
            return 2;
        } else if (!a->kind) {
            a->kind = arg;
        } else {
            fprintf(stderr, "onepath gen: unexpected argument '%s'\n", arg);
            return 2;
        }
    }
    if (!a->kind) {
        fprintf(stderr, "onepath gen: missing KIND\n");
        gen_usage(stderr);
        return 2;
    }
    return 0;
}

int op_cmd_gen(int argc, char **argv)
{
    gen_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : 2;
    if (a.size < OP_LEVELGEN_MIN_SIZE || a.size > OP_LEVELGEN_MAX_SIZE) {
        fprintf(stderr, "onepath gen: --size %llu is outside %d..%d\n", (unsigned long long)a.size,
                OP_LEVELGEN_MIN_SIZE, OP_LEVELGEN_MAX_SIZE);
        return 2;
    }
    int size = (int)a.size;
    op_arena *arena = op_arena_create(0);
    if (!arena) {
        fprintf(stderr, "onepath gen: out of memory\n");
        return 1;
    }
    op_soup soup;
    op_err err;
    op_status st = op_levelgen(a.kind, size, a.seed, arena, &soup, &err);
    if (st != OP_OK) {
        fprintf(stderr, "onepath gen: %s\n", err.msg);
        op_arena_destroy(arena);
        return (st == OP_EINVAL || st == OP_ERANGE) ? 2 : 1;
    }
    FILE *f = a.out ? fopen(a.out, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "onepath gen: cannot open %s: %s\n", a.out, strerror(errno));
        op_arena_destroy(arena);
        return 1;
    }
    st = op_obj_write(&soup, file_write, f, &err);
    int close_failed = a.out ? fclose(f) != 0 : fflush(f) != 0;
    op_arena_destroy(arena);
    if (st != OP_OK || close_failed) {
        fprintf(stderr, "onepath gen: writing %s failed: %s\n", a.out ? a.out : "stdout",
                st != OP_OK ? err.msg : strerror(errno));
        return 1;
    }
    return 0;
}
