/* Shared helpers of the onepath tool. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "onepath/hfio.h"
#include "onepath/input_file.h"
#include "onepath/levelgen.h"
#include "onepath/limits.h"
#include "onepath/obj.h"
#include "onepath/rebuild.h"
#include "onepath/volumes_json.h"

/* The tool's input size bound (--max-input-bytes, main.c): one process, one command. */
static size_t cli_max_input = OP_DEFAULT_MAX_INPUT_BYTES;

void cli_set_max_input_bytes(size_t max)
{
    cli_max_input = max;
}

size_t cli_max_input_bytes(void)
{
    return cli_max_input;
}

/* Prints a reader's error; a size limit names the flag that moves it. */
static void print_input_error(op_status st, const op_err *e)
{
    if (st == OP_ERANGE && strstr(e->msg, "the limit of"))
        fprintf(stderr, "onepath: %s (raise it with --max-input-bytes)\n", e->msg);
    else
        fprintf(stderr, "onepath: %s\n", e->msg);
}

int cli_read_input(const char *path, const char *what, op_arena *a, uint8_t **data, size_t *len)
{
    op_err e;
    op_status st = op_input_file_read(path, what, cli_max_input, a, data, len, &e);
    if (st != OP_OK) {
        print_input_error(st, &e);
        return 1;
    }
    return 0;
}

int cli_load_level(const char *spec, op_arena *a, op_soup *soup)
{
    op_err e;
    op_err_clear(&e);
    if (strncmp(spec, "gen:", 4) == 0) {
        char kind[32];
        int size = 0;
        unsigned long long seed = 0;
        if (sscanf(spec + 4, "%31[a-z]:%d:%llu", kind, &size, &seed) != 3) {
            fprintf(stderr, "onepath: '%s' is not gen:KIND:SIZE:SEED\n", spec);
            return 1;
        }
        if (op_levelgen(kind, size, (uint64_t)seed, a, soup, &e) != OP_OK) {
            fprintf(stderr, "onepath: %s: %s\n", spec, e.msg);
            return 1;
        }
        return 0;
    }
    op_status st = op_obj_read_file_max(spec, cli_max_input, a, soup, &e);
    if (st != OP_OK) {
        /* The reader's messages already name the file. */
        print_input_error(st, &e);
        return 1;
    }
    return 0;
}

int cli_read_volumes(const char *path, op_arena *a, op_volume **vols, int *nvols)
{
    op_err e;
    *vols = NULL;
    *nvols = 0;
    if (!path)
        return 0;
    /* Bounded by the smaller of the volumes file's own OP_MAX_VOLUMES_FILE and
     * --max-input-bytes. */
    uint8_t *text;
    size_t len;
    op_arena *tmp = op_arena_create(0);
    if (!tmp)
        return fprintf(stderr, "onepath: out of memory\n"), 1;
    size_t max = cli_max_input < OP_MAX_VOLUMES_FILE ? cli_max_input : OP_MAX_VOLUMES_FILE;
    op_status st = op_input_file_read(path, "volumes", max, tmp, &text, &len, &e);
    if (st != OP_OK) {
        print_input_error(st, &e);
        op_arena_destroy(tmp);
        return 1;
    }
    st = op_volumes_json_parse((const char *)text, len, path, a, vols, nvols, &e);
    op_arena_destroy(tmp);
    if (st != OP_OK || op_volumes_sort(*vols, *nvols, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s\n", e.msg);
        return 1;
    }
    return 0;
}

int cli_open_level(const char *spec, const op_settings *s, op_arena *a, op_level **lvl)
{
    return cli_open_level_vols(spec, s, NULL, 0, a, lvl);
}

int cli_open_level_vols(const char *spec, const op_settings *s, const op_volume *vols, int nvols,
                        op_arena *a, op_level **lvl)
{
    op_err e;
    op_err_clear(&e);
    *lvl = NULL;
    op_input_kind kind = OP_INPUT_OTHER;
    if (strncmp(spec, "gen:", 4) != 0 && op_input_sniff_file(spec, &kind, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s\n", e.msg);
        return 1;
    }
    op_status st;
    if (kind == OP_INPUT_HEIGHTFIELD) {
        op_hf_input hf;
        if ((st = op_hf_read_file_max(spec, cli_max_input, a, &hf, &e)) != OP_OK) {
            print_input_error(st, &e);
            return 1;
        }
        st = op_level_create_hf(&hf, s, vols, nvols, lvl, &e);
    } else if (kind == OP_INPUT_CHUNK) {
        op_voxel_chunk vc;
        if ((st = op_chunk_read_file_max(spec, cli_max_input, a, &vc, &e)) != OP_OK) {
            print_input_error(st, &e);
            return 1;
        }
        st = op_level_create_chunk(&vc, s, vols, nvols, lvl, &e);
    } else {
        op_soup soup;
        if (cli_load_level(spec, a, &soup))
            return 1;
        st = op_level_create(&soup, s, vols, nvols, lvl, &e);
    }
    if (st != OP_OK) {
        fprintf(stderr, "onepath: %s: %s\n", spec, e.msg);
        return 1;
    }
    return 0;
}

int cli_apply_set(op_settings *s, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        fprintf(stderr, "onepath: --set wants key=value, got '%s'\n", kv);
        return 1;
    }
    char key[64];
    size_t n = (size_t)(eq - kv);
    if (n >= sizeof key) {
        fprintf(stderr, "onepath: --set key too long in '%s'\n", kv);
        return 1;
    }
    memcpy(key, kv, n);
    key[n] = '\0';
    op_err e;
    if (op_settings_set(s, key, eq + 1, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s\n", e.msg);
        return 1;
    }
    return 0;
}

int cli_parse_tile(const char *text, int *tx, int *tz)
{
    char *end;
    errno = 0;
    long a = strtol(text, &end, 10);
    if (end == text || *end != ',' || errno)
        return 1;
    const char *p = end + 1;
    long b = strtol(p, &end, 10);
    if (end == p || *end || errno || a < -2147483647L || a > 2147483647L || b < -2147483647L ||
        b > 2147483647L)
        return 1;
    *tx = (int)a;
    *tz = (int)b;
    return 0;
}

int cli_parse_int(const char *opt, const char *text, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "onepath: %s wants an integer in %d..%d, got '%s'\n", opt, lo, hi, text);
        return 1;
    }
    *out = (int)v;
    return 0;
}

double cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}
