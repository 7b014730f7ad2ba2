/*
 * onepathd's pure parts, without a socket: the latency histogram, the level file codec
 * (round trip, every flipped byte refused), the settings map and mesh checks, and the
 * reply packer (gathered writes against plain appends).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

Test(daemon_stats, buckets_are_monotonic_and_cover)
{
    uint64_t prev = 0;
    for (int b = 0; b < OPD_LAT_BUCKETS - 1; b++) {
        uint64_t up = opd_lat_bucket_upper(b);
        cr_assert_gt(up, prev, "bucket %d", b);
        /* Each bucket is at most 1/8 wider than the previous edge (plus rounding). */
        cr_assert_leq(up - prev, prev / 8 + 1, "bucket %d: %llu..%llu", b, (unsigned long long)prev,
                      (unsigned long long)up);
        prev = up;
    }
    uint64_t samples[] = {0, 1, 2, 3, 7, 100, 1000, 123456, 5000000000ull};
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        int b = opd_lat_bucket(samples[i]);
        cr_assert_leq(samples[i], opd_lat_bucket_upper(b));
        if (b > 0)
            cr_assert_gt(samples[i], opd_lat_bucket_upper(b - 1));
    }
}

/* The bucket of us by its definition: the first whose upper edge is >= us (the search
 * opd_lat_bucket made before it worked the bucket out). */
static int bucket_by_search(uint64_t us)
{
    for (int b = 0; b < OPD_LAT_BUCKETS - 1; b++)
        if (us <= opd_lat_bucket_upper(b))
            return b;
    return OPD_LAT_BUCKETS - 1;
}

Test(daemon_stats, the_worked_out_bucket_is_the_searched_one)
{
    for (uint64_t us = 0; us < 300000; us++)
        cr_assert_eq(opd_lat_bucket(us), bucket_by_search(us), "%llu us", (unsigned long long)us);
    for (int b = 0; b < OPD_LAT_BUCKETS - 1; b++) /* every edge and its neighbours */
        for (int d = -1; d <= 1; d++) {
            uint64_t us = opd_lat_bucket_upper(b) + (uint64_t)d;
            cr_assert_eq(opd_lat_bucket(us), bucket_by_search(us), "%llu us",
                         (unsigned long long)us);
        }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) { /* random values of every magnitude */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t us = x >> (x % 64);
        cr_assert_eq(opd_lat_bucket(us), bucket_by_search(us), "%llu us", (unsigned long long)us);
    }
    cr_assert_eq(opd_lat_bucket(UINT64_MAX), OPD_LAT_BUCKETS - 1);
}

Test(daemon_stats, quantiles_bound_the_samples)
{
    opd_stats s;
    opd_stats_init(&s);
    /* 90 fast requests (100 µs) and 10 slow ones (50 ms). */
    for (int i = 0; i < 90; i++)
        opd_stats_request(&s, OPD_M_TILE_GET, 1, 100);
    for (int i = 0; i < 10; i++)
        opd_stats_request(&s, OPD_M_LEVEL_PUT, i != 0, 50000);
    uint64_t p50 = opd_stats_quantile(&s, 0.5), p90 = opd_stats_quantile(&s, 0.9),
             p99 = opd_stats_quantile(&s, 0.99);
    cr_assert(p50 >= 100 && p50 <= 113, "p50 %llu", (unsigned long long)p50);
    cr_assert(p90 >= 100 && p90 <= 113, "p90 %llu", (unsigned long long)p90);
    cr_assert_eq(p99, 50000, "p99 is clipped to the max seen");
    cr_assert_eq(s.requests[OPD_M_TILE_GET], 90);
    cr_assert_eq(s.errors[OPD_M_LEVEL_PUT], 1);
    opd_stats_fini(&s);
}

static opd_mesh *mesh(const char *name, int with_areas)
{
    static const float v[12] = {0, 0, 0, 4, 0, 0, 4, 0, 4, 0, 0, 4};
    static const int32_t t[6] = {0, 2, 1, 0, 3, 2};
    static const uint8_t a[2] = {63, 5};
    opd_mesh *m;
    op_err e;
    cr_assert_eq(opd_mesh_make(name, (const uint8_t *)v, sizeof v, (const uint8_t *)t, sizeof t,
                               with_areas ? a : NULL, with_areas ? 2 : 0, &m, &e),
                 OP_OK, "%s", e.msg);
    return m;
}

/* A volume decoded from a map packed here (the daemon's own decoder). */
static opd_volume *volume(const char *name, int kind)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    op_volume v;
    memset(&v, 0, sizeof v);
    snprintf(v.name, sizeof v.name, "%s", name);
    v.kind = (op_volume_kind)kind;
    v.mode = kind == 1 ? OP_VOLUME_OBSTACLE : OP_VOLUME_AREA;
    v.area = kind == 1 ? 0 : 17;
    v.bmin[0] = 0.1 + 0.2, v.bmin[1] = -1, v.bmin[2] = 2;
    v.bmax[0] = 3, v.bmax[1] = 1, v.bmax[2] = 4;
    double p[6] = {0, 0, 1, 0, 0, 1};
    memcpy(v.pts, p, sizeof p);
    v.npts = kind == 2 ? 3 : 0;
    cr_assert_eq(opd_volume_pack(&pk, &v), 0);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    cr_assert_eq(msgpack_unpack_next(&u, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
    opd_volume *dv;
    op_err e;
    cr_assert_eq(opd_volume_decode(&u.data, NULL, &dv, &e), OP_OK, "%s", e.msg);
    cr_assert(opd_volume_equal(&dv->v, &v), "volume %s does not round-trip", name);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
    return dv;
}

Test(daemon_store, round_trip_and_every_flipped_byte_is_refused)
{
    opd_level_data ld = {0}, back;
    snprintf(ld.name, sizeof ld.name, "lvl-1");
    ld.version = 42;
    op_settings_default(&ld.settings);
    ld.settings.cell_size = 0.1 + 0.2; /* not a short decimal: must survive exactly */
    ld.settings.partition = OP_PARTITION_LAYERS;
    opd_mesh *ms[2] = {mesh("a", 1), mesh("b", 0)};
    ld.meshes = ms;
    ld.nmeshes = 2;
    opd_volume **vs = calloc(3, sizeof *vs);
    vs[0] = volume("z.pool", 1);
    vs[1] = volume("A-door", 0);
    vs[2] = volume("ramp", 2);
    op_err ve;
    cr_assert_eq(opd_vset_make(vs, 3, &ld.vols, &ve), OP_OK, "%s", ve.msg);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    op_err e;
    cr_assert_eq(opd_store_encode(&ld, &sb, &e), OP_OK);
    cr_assert_eq(opd_store_decode((const uint8_t *)sb.data, sb.size, &back, &e), OP_OK, "%s",
                 e.msg);
    cr_assert(!strcmp(back.name, "lvl-1"), "%s", back.name);
    cr_assert_eq(back.version, 42);
    cr_assert(opd_settings_equal(&back.settings, &ld.settings));
    cr_assert_eq(back.nmeshes, 2);
    for (int i = 0; i < 2; i++) {
        cr_assert(!strcmp(back.meshes[i]->name, ms[i]->name));
        cr_assert(opd_mesh_equal(back.meshes[i], ms[i]));
    }
    cr_assert(opd_vset_equal(back.vols, ld.vols), "the volumes do not round-trip");
    cr_assert_str_eq(back.vols->v[0]->v.name, "A-door"); /* bytewise name order */
    cr_assert_str_eq(back.vols->v[2]->v.name, "z.pool");
    opd_level_data_fini(&back);
    for (size_t i = 0; i < sb.size; i++) {
        sb.data[i] ^= 0x20;
        cr_assert_neq(opd_store_decode((const uint8_t *)sb.data, sb.size, &back, &e), OP_OK,
                      "flipped byte %zu accepted", i);
        sb.data[i] ^= 0x20;
    }
    for (size_t n = 0; n < sb.size; n++)
        cr_assert_neq(opd_store_decode((const uint8_t *)sb.data, n, &back, &e), OP_OK,
                      "truncation to %zu accepted", n);
    msgpack_sbuffer_destroy(&sb);
    opd_mesh_free(ms[0]);
    opd_mesh_free(ms[1]);
    opd_vset_unref(ld.vols);
}

Test(daemon_content, mesh_checks_name_the_problem)
{
    static const float v[9] = {0, 0, 0, 1, 0, 0, 1, 0, 1};
    static const int32_t bad[3] = {0, 1, 3};
    static const uint8_t area[1] = {64};
    static const int32_t ok[3] = {0, 1, 2};
    opd_mesh *m;
    op_err e;
    cr_assert_eq(
        opd_mesh_make("m", (const uint8_t *)v, 8, (const uint8_t *)ok, 12, NULL, 0, &m, &e),
        OP_EINVAL);
    cr_assert_eq(
        opd_mesh_make("m", (const uint8_t *)v, 36, (const uint8_t *)bad, 12, NULL, 0, &m, &e),
        OP_ERANGE);
    cr_assert(strstr(e.msg, "index 3"), "%s", e.msg);
    cr_assert_eq(
        opd_mesh_make("m", (const uint8_t *)v, 36, (const uint8_t *)ok, 12, area, 1, &m, &e),
        OP_ERANGE);
    cr_assert_eq(
        opd_mesh_make("m", (const uint8_t *)v, 36, (const uint8_t *)ok, 12, area, 2, &m, &e),
        OP_EINVAL);
    cr_assert_eq(
        opd_mesh_make("m", (const uint8_t *)v, 36, (const uint8_t *)ok, 12, NULL, 0, &m, &e),
        OP_OK);
    cr_assert(m->has_box);
    cr_assert(m->bmin[0] == 0.0f && m->bmax[0] == 1.0f && m->bmax[2] == 1.0f);
    opd_mesh_free(m);
}

Test(daemon_content, settings_map)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    op_settings s, t;
    op_settings_default(&s);
    s.cell_size = 0.123456789012345;
    s.min_region_area = 7;
    s.straight_region_borders = 0;
    s.partition = OP_PARTITION_MONOTONE;
    s.grid_origin_x = -1.25;
    s.grid_origin_z = 4999.1;
    opd_settings_pack(&pk, &s);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    cr_assert_eq(msgpack_unpack_next(&u, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
    op_err e;
    cr_assert_eq(opd_settings_from_map(&u.data, &t, &e), OP_OK, "%s", e.msg);
    cr_assert(opd_settings_equal(&s, &t));
    msgpack_unpacked_destroy(&u);
    /* An unknown name, a bad value. */
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_map(&pk, 1);
    op_rpc_pack_key(&pk, "cell_sise");
    msgpack_pack_double(&pk, 0.3);
    msgpack_unpacked_init(&u);
    msgpack_unpack_next(&u, sb.data, sb.size, NULL);
    cr_assert_eq(opd_settings_from_map(&u.data, &t, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "cell_sise"), "%s", e.msg);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_clear(&sb);
    msgpack_pack_map(&pk, 1);
    op_rpc_pack_key(&pk, "max_verts_per_poly");
    msgpack_pack_int(&pk, 9);
    msgpack_unpacked_init(&u);
    msgpack_unpack_next(&u, sb.data, sb.size, NULL);
    cr_assert_eq(opd_settings_from_map(&u.data, &t, &e), OP_ERANGE, "%s", e.msg);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
}

/* ---- replies (call.c): small writes gathered, large ones appended ---- */

/* One random pack step on both packers: the reply's and a plain sbuffer's (the oracle:
 * msgpack-c's own buffer, every write appended as it comes). */
static void pack_step(msgpack_packer *a, msgpack_packer *b, unsigned *seed, char *body)
{
    unsigned r = (unsigned)rand_r(seed);
    size_t len;
    switch (r % 5) {
    case 0: /* an integer: 1 to 9 bytes */
        len = (size_t)rand_r(seed);
        cr_assert_eq(msgpack_pack_uint64(a, (uint64_t)len << (r % 40)), 0);
        msgpack_pack_uint64(b, (uint64_t)len << (r % 40));
        break;
    case 1: /* a key-sized string */
        len = (size_t)rand_r(seed) % 24;
        cr_assert_eq(msgpack_pack_str_with_body(a, body, len), 0);
        msgpack_pack_str_with_body(b, body, len);
        break;
    case 2: /* a body around the gather buffer's size: it fills it exactly, or just misses */
        len = OPD_REPLY_GATHER - 2 + (size_t)rand_r(seed) % 5;
        cr_assert_eq(msgpack_pack_bin_with_body(a, body, len), 0);
        msgpack_pack_bin_with_body(b, body, len);
        break;
    case 3: /* a blob */
        len = (size_t)rand_r(seed) % 3000;
        cr_assert_eq(msgpack_pack_bin_with_body(a, body, len), 0);
        msgpack_pack_bin_with_body(b, body, len);
        break;
    default:
        cr_assert_eq(msgpack_pack_map(a, r % 70000), 0);
        msgpack_pack_map(b, r % 70000);
        break;
    }
}

Test(daemon_reply, gathered_writes_give_the_bytes_of_plain_appends)
{
    char body[3000];
    for (size_t i = 0; i < sizeof body; i++)
        body[i] = (char)(i * 131 + 7);
    for (unsigned round = 0; round < 300; round++) {
        unsigned seed = round;
        opd_reply r;
        nng_msg *m = opd_reply_begin(&r, round % 3 ? 512 : 1);
        cr_assert_not_null(m);
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pb;
        msgpack_packer_init(&pb, &sb, msgpack_sbuffer_write);
        int steps = 1 + rand_r(&seed) % 80;
        for (int s = 0; s < steps; s++) {
            unsigned what = (unsigned)rand_r(&seed) % 16;
            if (what == 0) /* room asked for mid-reply: what is gathered goes first */
                cr_assert_eq(opd_reply_reserve(&r.pk, (size_t)rand_r(&seed) % 5000), 0);
            else if (what == 1 && round % 2) { /* an error reply replaces what was packed */
                opd_reply_clear(&r);
                msgpack_sbuffer_clear(&sb);
            } else if (what == 2)
                cr_assert_eq(opd_reply_flush(&r), 0);
            else
                pack_step(&r.pk, &pb, &seed, body);
        }
        cr_assert_eq(opd_reply_end(&r), m);
        cr_assert_eq(nng_msg_len(m), sb.size, "round %u: %zu bytes, %zu appended plainly", round,
                     nng_msg_len(m), sb.size);
        cr_assert(!memcmp(nng_msg_body(m), sb.data, sb.size), "round %u: other bytes", round);
        /* Packed on after a kept head, as a parked call's run after its wake-up does. */
        size_t head = nng_msg_len(m);
        opd_reply_resume(&r, m);
        pack_step(&r.pk, &pb, &seed, body);
        pack_step(&r.pk, &pb, &seed, body);
        cr_assert_eq(opd_reply_end(&r), m);
        cr_assert_eq(nng_msg_len(m), sb.size);
        cr_assert(nng_msg_len(m) > head && !memcmp(nng_msg_body(m), sb.data, sb.size),
                  "round %u: packing on after the head", round);
        nng_msg_free(m);
        msgpack_sbuffer_destroy(&sb);
    }
}

Test(daemon_reply, a_reply_without_a_message_fails_every_write)
{
    opd_reply r;
    opd_reply_resume(&r, NULL);
    cr_assert_neq(msgpack_pack_int(&r.pk, 1), 0);
    cr_assert_neq(opd_reply_reserve(&r.pk, 10), 0);
    cr_assert_null(opd_reply_end(&r));
}
