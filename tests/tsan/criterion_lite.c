/* The runner of the Criterion stand-in (criterion/criterion.h): every test, in the order of
 * the source (constructors run in reverse, so the list is reversed once). */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static crl_test *tests;
static const crl_test *running;

void crl_register(crl_test *t)
{
    t->next = tests;
    tests = t;
}

void crl_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "FAIL %s::%s %s:%d: %s:", running ? running->suite : "?",
            running ? running->name : "?", file, line, expr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

int main(void)
{
    crl_test *rev = NULL;
    while (tests) {
        crl_test *t = tests;
        tests = t->next;
        t->next = rev;
        rev = t;
    }
    int n = 0;
    for (const crl_test *t = rev; t; t = t->next, n++) {
        running = t;
        fprintf(stderr, "[RUN ] %s::%s\n", t->suite, t->name);
        if (t->extra.init)
            t->extra.init();
        t->fn();
        if (t->extra.fini)
            t->extra.fini();
    }
    fprintf(stderr, "[====] %d tests passed\n", n);
    return 0;
}
