/*
 * onepath inspect LEVEL --tile TX,TZ --stage STAGE [--set k=v ...] [--json | --dump]
 * (LEVEL: an OBJ, heightfield or voxel-chunk file, or gen:KIND:SIZE:SEED):
 * builds one tile up to a stage and prints the counts a person debugging a navmesh
 * wants, as text (--json: one JSON object), or a canonical text dump of that stage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_common.h"
#include "onepath/build.h"

static const char *const stage_names[] = {"spans", "regions", "contours",
                                          "polys", "detail",  "tile"};

static int usage(void)
{
    fprintf(stderr,
            "usage: onepath inspect LEVEL --tile TX,TZ --stage "
            "spans|regions|contours|polys|detail|tile\n"
            "                       [--set key=value ...] [--volumes FILE.json] [--json | --dump]\n"
            "Prints the tile's counts after the stage as text; --json prints them as one JSON\n"
            "object, --dump prints the stage's canonical text dump.\n");
    return 2;
}

static int write_stdout(void *ctx, const char *data, size_t len)
{
    (void)ctx;
    return fwrite(data, 1, len, stdout) == len ? 0 : -1;
}

static int dump_stage(const op_tile_stages *st, op_stage stage)
{
    switch (stage) {
    case OP_STAGE_SPANS:
        return op_chf_dump(&st->chf, write_stdout, NULL);
    case OP_STAGE_REGIONS:
        return op_regions_dump(&st->chf, &st->regions, write_stdout, NULL);
    case OP_STAGE_CONTOURS:
        return op_contours_dump(&st->contours, write_stdout, NULL);
    case OP_STAGE_POLYS:
        return op_polys_dump(&st->polys, write_stdout, NULL);
    default:
        return op_detail_dump(&st->detail, write_stdout, NULL);
    }
}

/* Regions of the tile: region ids that still have spans, the border band not counted. */
static int tile_regions(const op_tile_stages *st)
{
    if (st->skipped || !st->regions.reg)
        return 0;
    int n = st->border_region > 0 ? st->border_region : st->regions.region_count + 1;
    uint8_t *seen = calloc((size_t)n + 1, 1);
    int count = 0;
    for (uint32_t i = 0; seen && i < st->chf.span_count; i++) {
        int r = st->regions.reg[i];
        if (r > 0 && r < n && !seen[r]) {
            seen[r] = 1;
            count++;
        }
    }
    free(seen);
    return count;
}

/* One count of the tile: its JSON key and the label of the text form. */
typedef struct count {
    const char *key, *label;
    long long v;
} count;

/* The counts up to stage, in the order both forms print them. */
static int collect_counts(const op_tile_stages *st, op_stage stage, count *c)
{
    int n = 0, sk = st->skipped;
    uint32_t walkable = 0;
    for (uint32_t i = 0; i < st->chf.span_count; i++)
        walkable += st->chf.areas[i] != 0;
    c[n++] = (count){"spans", "spans", st->chf.span_count};
    c[n++] = (count){"walkable_spans", "walkable spans", walkable};
    if (stage >= OP_STAGE_REGIONS)
        c[n++] = (count){"regions", "regions", tile_regions(st)};
    if (stage >= OP_STAGE_CONTOURS) {
        const op_contour_set *cs = &st->contours;
        int holes = 0, verts = 0;
        for (int i = 0; !sk && i < cs->count; i++) {
            holes += cs->contours[i].nholes;
            verts += cs->contours[i].nverts;
        }
        c[n++] = (count){"contours", "contours", sk ? 0 : cs->count};
        c[n++] = (count){"holes", "holes", holes};
        c[n++] = (count){"vertices", "contour vertices", verts};
        c[n++] = (count){"raw_fallbacks", "raw fallbacks", sk ? 0 : cs->raw_fallbacks};
        c[n++] = (count){"dropped_holes", "dropped holes", sk ? 0 : cs->dropped_holes};
    }
    if (stage >= OP_STAGE_POLYS) {
        c[n++] = (count){"polygons", "polygons", sk ? 0 : st->polys.npolys};
        c[n++] = (count){"poly_vertices", "polygon vertices", sk ? 0 : st->polys.nverts};
        c[n++] = (count){"degenerate_ears", "degenerate ears", sk ? 0 : st->polys.degenerate_ears};
    }
    if (stage >= OP_STAGE_DETAIL) {
        c[n++] = (count){"detail_vertices", "detail vertices", sk ? 0 : st->detail.nverts};
        c[n++] = (count){"detail_triangles", "detail triangles", sk ? 0 : st->detail.ntris};
    }
    if (stage >= OP_STAGE_TILE)
        c[n++] = (count){"layers", "layers", sk ? 0 : st->ntiles};
    return n;
}

/* --json: one object a machine reads; otherwise aligned "label  value" lines a person reads. */
static void print_counts(const op_tile_stages *st, op_stage stage, int json)
{
    count c[16];
    int n = collect_counts(st, stage, c);
    if (json) {
        printf("{\"tile\": [%d, %d], \"skipped\": %s", st->tx, st->tz,
               st->skipped ? "true" : "false");
        for (int i = 0; i < n; i++)
            printf(", \"%s\": %lld", c[i].key, c[i].v);
        printf("}\n");
        return;
    }
    printf("tile %d,%d, up to stage %s%s\n", st->tx, st->tz, stage_names[stage],
           st->skipped ? ": skipped (no walkable triangle, or no region in the tile)" : "");
    for (int i = 0; i < n; i++)
        printf("  %-18s %lld\n", c[i].label, c[i].v);
}

int op_cmd_inspect(int argc, char **argv)
{
    const char *level = NULL, *volumes = NULL;
    int tx = 0, tz = 0, have_tile = 0, json = 0, dump = 0, stage = -1;
    op_settings s;
    op_settings_default(&s);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--tile") && more) {
            if (cli_parse_tile(argv[++i], &tx, &tz))
                return usage();
            have_tile = 1;
        } else if (!strcmp(a, "--stage") && more) {
            const char *v = argv[++i];
            for (int k = 0; k < 6; k++)
                if (!strcmp(v, stage_names[k]))
                    stage = k;
            if (stage < 0) {
                fprintf(stderr, "onepath: unknown stage '%s'\n", v);
                return usage();
            }
        } else if (!strcmp(a, "--set") && more) {
            if (cli_apply_set(&s, argv[++i]))
                return 2;
        } else if (!strcmp(a, "--volumes") && more) {
            volumes = argv[++i];
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--dump")) {
            dump = 1;
        } else if (a[0] == '-' || level) {
            return usage();
        } else {
            level = a;
        }
    }
    if (!level || !have_tile || stage < 0 || (json && dump))
        return usage();
    op_arena *a = op_arena_create(0), *out = op_arena_create(0), *scratch = op_arena_create(0);
    op_level *lvl = NULL;
    op_err e;
    op_tile_stages st;
    int rc = 1;
    op_volume *vols;
    int nvols;
    if (!a || !out || !scratch || cli_read_volumes(volumes, a, &vols, &nvols) ||
        cli_open_level_vols(level, &s, vols, nvols, a, &lvl))
        goto done;
    if (op_level_build_stages(lvl, tx, tz, (op_stage)stage, 1, out, scratch, &st, &e) != OP_OK) {
        fprintf(stderr, "onepath: %s: %s\n", level, e.msg);
        goto done;
    }
    if (dump)
        rc = (st.skipped || dump_stage(&st, (op_stage)stage) == 0) ? 0 : 1;
    else {
        print_counts(&st, (op_stage)stage, json);
        rc = 0;
    }
done:
    op_level_destroy(lvl);
    op_arena_destroy(a);
    op_arena_destroy(out);
    op_arena_destroy(scratch);
    return rc;
}
