/*
 * A stand-in for the part of Criterion's API that test_parallel and test_level_threads use,
 * so that they also run as plain ThreadSanitizer programs (Criterion's runner cannot start
 * under TSan: tests/tsan/tsan.cmake). Tests run one after another in one process; the first
 * failed assertion prints where and exits 1.
 */
#ifndef OP_TSAN_CRITERION_LITE_H
#define OP_TSAN_CRITERION_LITE_H

#include <stddef.h>
#include <string.h>

struct criterion_test_extra_data {
    void (*init)(void);
    void (*fini)(void);
    double timeout; /* ignored: ctest's TIMEOUT bounds a hang */
};

typedef struct crl_test {
    const char *suite, *name;
    void (*fn)(void);
    struct criterion_test_extra_data extra;
    struct crl_test *next;
} crl_test;

void crl_register(crl_test *t);
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5), noreturn))
#endif
void crl_fail(const char *file, int line, const char *expr, const char *fmt, ...);

#define Test(suite, name, ...)                                                                     \
    static void suite##_##name##_fn(void);                                                         \
    static crl_test suite##_##name##_test = {                                                      \
        #suite, #name, suite##_##name##_fn, {__VA_ARGS__}, NULL};                                  \
    __attribute__((constructor)) static void suite##_##name##_reg(void)                            \
    {                                                                                              \
        crl_register(&suite##_##name##_test);                                                      \
    }                                                                                              \
    static void suite##_##name##_fn(void)

/* The message, when given, is a string literal and its arguments (as Criterion's). */
#define cr_assert(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond))                                                                               \
            crl_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__);                                  \
    } while (0)
#define cr_assert_fail(...)         crl_fail(__FILE__, __LINE__, "fail", " " __VA_ARGS__)
#define cr_assert_eq(a, b, ...)     cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...)    cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...)    cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...)    cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...)     cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...)     cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_null(p, ...)      cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...)  cr_assert((p) != NULL, __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_expect(cond, ...)        cr_assert(cond, __VA_ARGS__)
#define cr_expect_eq(a, b, ...)     cr_assert_eq(a, b, __VA_ARGS__)

#endif
