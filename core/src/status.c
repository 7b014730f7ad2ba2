/* Status names and texts, generated from OP_STATUS_MAP; the error record. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onepath/status.h"

const char *op_status_name(int status)
{
    switch (status) {
#define OP__STATUS_NAME(name, value, text)                                                         \
    case value:                                                                                    \
        return "OP_" #name;
        OP_STATUS_MAP(OP__STATUS_NAME)
#undef OP__STATUS_NAME
    }
    return "OP_UNKNOWN";
}

const char *op_strerror(int status)
{
    switch (status) {
#define OP__STATUS_TEXT(name, value, text)                                                         \
    case value:                                                                                    \
        return text;
        OP_STATUS_MAP(OP__STATUS_TEXT)
#undef OP__STATUS_TEXT
    }
    return "unknown status";
}

void op_err_clear(op_err *err)
{
    if (err) {
        err->status = OP_OK;
        err->msg[0] = '\0';
    }
}

op_status op_err_set(op_err *err, op_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}
