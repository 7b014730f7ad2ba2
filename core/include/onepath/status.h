/*
 * onepath status codes and the error record every public function fills.
 *
 * The numeric values travel over msgpack (daemon replies), so they are fixed
 * forever: add new codes at the end, never renumber.
 */
#ifndef ONEPATH_STATUS_H
#define ONEPATH_STATUS_H

#include <stddef.h>

/* X(NAME, value, short text) */
#define OP_STATUS_MAP(X)                                                                           \
    X(OK, 0, "ok")                                                                                 \
    X(EINVAL, 1, "bad argument")                                                                   \
    X(ERANGE, 2, "value out of range")                                                             \
    X(ELIMIT, 3, "limit met while building")                                                       \
    X(ENOMEM, 4, "out of memory")                                                                  \
    X(EIO, 5, "input/output error")                                                                \
    X(EPROTO, 6, "malformed message")                                                              \
    X(EINCOMPLETE, 7, "incomplete message")                                                        \
    X(ENOTFOUND, 8, "not found")                                                                   \
    X(ETIMEDOUT, 9, "timed out")                                                                   \
    X(EBUSY, 10, "busy")                                                                           \
    X(EINTERNAL, 11, "internal error")                                                             \
    X(EPERM, 12, "permission denied")

typedef enum op_status {
#define OP__STATUS_ENUM(name, value, text) OP_##name = value,
    OP_STATUS_MAP(OP__STATUS_ENUM)
#undef OP__STATUS_ENUM
} op_status;

/* "OP_EINVAL" etc.; "OP_UNKNOWN" for a value outside the map. Never NULL. */
const char *op_status_name(int status);
/* The short text of a status ("bad argument"); "unknown status" outside the map. */
const char *op_strerror(int status);

#define OP_ERR_MSG_MAX 256

/*
 * The error record: a status and a message that names the offending value,
 * e.g. "soup: vertex 17 y = inf is not finite". Caller-owned, no allocation.
 */
typedef struct op_err {
    op_status status;
    char msg[OP_ERR_MSG_MAX];
} op_err;

/* Clears err (status OP_OK, empty message). err may be NULL. */
void op_err_clear(op_err *err);

/*
 * OP_COLD marks a function that only runs when something failed (an error's message, a
 * status for a caller to pass up). gcc then takes every branch that calls it as unlikely and
 * moves the blocks that prepare the call out of the function's body into its .cold part
 * (-freorder-blocks-and-partition, on at -O2): the code a build runs when it succeeds is
 * that much smaller. A rebuild of one tile runs 60-70 KB of code once, twice the 32 KB L1
 * instruction cache, so every line its error paths leave out is one miss fewer
 * (docs/benchmarks.md, branch rbcold14). Layout only: no result depends on it.
 */
#if defined(__GNUC__)
#define OP_COLD          __attribute__((cold))
#define OP_PRINTF(f, a0) __attribute__((format(printf, f, a0)))
#else
#define OP_COLD
#define OP_PRINTF(f, a0)
#endif

/*
 * Sets err->status and formats err->msg (truncated to fit, always terminated).
 * Returns status so that callers can write `return op_err_set(err, OP_EINVAL, ...)`.
 * err may be NULL: the status is still returned. Cold (OP_COLD): for failures only.
 */
OP_COLD OP_PRINTF(3, 4) op_status op_err_set(op_err *err, op_status status, const char *fmt, ...);

#endif
