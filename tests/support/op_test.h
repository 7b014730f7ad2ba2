/*
 * Shared test helpers: golden hashes (the hash-matrix harness), paths to shared
 * levels, seeded random numbers.
 *
 * Hash-matrix scenarios: a scenario "build3d/spans-flat" pins the hash of a
 * canonical dump in tests/golden/build3d/spans-flat.hash (one line: 16 hex digits).
 * Run a test with OP_UPDATE_GOLDEN=1 to (re)write the file; changing a pinned hash
 * is a decision to explain in the commit message.
 */
#ifndef OP_TEST_H
#define OP_TEST_H

#include <stddef.h>
#include <stdint.h>

/* Compares hash with the pinned value of scenario (cr_assert); writes it instead when
 * OP_UPDATE_GOLDEN=1 is set. A missing golden file fails. */
void op_test_golden(const char *scenario, uint64_t hash);

/* Path of a shared level ("dungeon.obj" -> <shared>/levels/dungeon.obj) in a static buffer. */
const char *op_test_level(const char *name);

/* A fresh directory /tmp/<prefix>XXXXXX in buf (cr_assert on failure). */
void op_test_tmpdir(char *buf, size_t n, const char *prefix);

/* Removes path and, when it is a directory, everything below it. */
void op_test_remove_tree(const char *path);

/* Deterministic generator (splitmix64) for seeded random fields. */
typedef struct op_test_rng {
    uint64_t s;
} op_test_rng;

static inline uint64_t op_test_rand(op_test_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform integer in [lo, hi]. */
static inline int op_test_rand_int(op_test_rng *r, int lo, int hi)
{
    return lo + (int)(op_test_rand(r) % (uint64_t)(hi - lo + 1));
}

/* Uniform double in [0, 1). */
static inline double op_test_rand01(op_test_rng *r)
{
    return (double)(op_test_rand(r) >> 11) * (1.0 / 9007199254740992.0);
}

#endif
