/*
 * onepathd leaf services every layer may use, because they call nothing of the daemon:
 * the monotonic clock, the log (one line per write, under the log lock) and the wake-up
 * of the loop thread (a uv_async_send on the handle main.c made).
 */
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "daemon.h"

uint64_t opd_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void opd_daemon_wake(opd_daemon *d)
{
    if (d->wake)
        uv_async_send(d->wake);
}

/* Longest log line written in one piece; a longer one (a long error message) is
 * written in parts, still under the lock. */
#define OPD_LOG_LINE 512

/* Appends s to buf (at *n, capacity cap) as a JSON string body: quotes, backslashes and
 * control characters escaped, bytes >= 0x80 passed through (the log is ASCII but for
 * names a client chose, which are [A-Za-z0-9._-]). Stops at the capacity. */
static void json_escape(char *buf, size_t *n, size_t cap, const char *s)
{
    for (; *s && *n + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            buf[(*n)++] = '\\';
            buf[(*n)++] = (char)ch;
        } else if (ch < 0x20) {
            *n += (size_t)snprintf(buf + *n, cap - *n, "\\u%04x", ch);
        } else {
            buf[(*n)++] = (char)ch;
        }
    }
}

static size_t stamp(char *line, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(line, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000);
    return n;
}

static void write_line(opd_daemon *d, const char *line, size_t n)
{
    pthread_mutex_lock(&d->log_mu);
    FILE *f = d->log ? d->log : stderr;
    fwrite(line, 1, n, f);
    fflush(f);
    pthread_mutex_unlock(&d->log_mu);
}

/* A JSON log line: {"time", then the fields} (each field a key and a string value;
 * number fields are given already formatted, with a leading '#'). */
static void write_json(opd_daemon *d, const char *time, const char *const *kv, int nkv)
{
    char line[OPD_LOG_LINE * 2];
    size_t n = 0, cap = sizeof line - 3;
    n += (size_t)snprintf(line, cap, "{\"time\": \"%s\"", time);
    for (int i = 0; i + 1 < nkv && n < cap; i += 2) {
        const char *v = kv[i + 1];
        n += (size_t)snprintf(line + n, cap - n, ", \"%s\": ", kv[i]);
        if (n >= cap)
            break;
        if (v[0] == '#') {
            n += (size_t)snprintf(line + n, cap - n, "%s", v + 1);
        } else {
            line[n++] = '"';
            json_escape(line, &n, cap - 1, v);
            line[n++] = '"';
        }
    }
    if (n > cap)
        n = cap;
    line[n++] = '}';
    line[n++] = '\n';
    write_line(d, line, n);
}

void opd_log(opd_daemon *d, const char *fmt, ...)
{
    /* The line is formatted here, outside the lock, and written with one write (an
     * unbuffered stderr would otherwise take one per part). */
    char line[OPD_LOG_LINE];
    size_t n = stamp(line, sizeof line);
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    if (d->cfg.log_json) {
        char msg[OPD_LOG_LINE];
        vsnprintf(msg, sizeof msg, fmt, ap);
        line[n] = '\0';
        /* "OP-ID rest": the id is the event, the rest its message. */
        const char *kv[4] = {"message", msg, NULL, NULL};
        char id[64];
        size_t k = 0;
        while (msg[k] && msg[k] != ' ' && k + 1 < sizeof id)
            k++;
        if (!strncmp(msg, "OP-", 3) && k + 1 < sizeof id) {
            memcpy(id, msg, k);
            id[k] = '\0';
            kv[0] = "event";
            kv[1] = id;
            kv[2] = "message";
            kv[3] = msg[k] ? msg + k + 1 : "";
        }
        write_json(d, line, kv, kv[2] ? 4 : 2);
        va_end(ap2);
        va_end(ap);
        return;
    }
    line[n++] = ' ';
    int m = vsnprintf(line + n, sizeof line - n, fmt, ap);
    int whole = m >= 0 && (size_t)m + 1 < sizeof line - n;
    if (whole) {
        line[n + (size_t)m] = '\n';
        write_line(d, line, n + (size_t)m + 1);
    } else {
        pthread_mutex_lock(&d->log_mu);
        FILE *f = d->log ? d->log : stderr;
        fwrite(line, 1, n, f);
        vfprintf(f, fmt, ap2);
        fputc('\n', f);
        fflush(f);
        pthread_mutex_unlock(&d->log_mu);
    }
    va_end(ap2);
    va_end(ap);
}

void opd_log_request(opd_daemon *d, const char *method, const char *level, double ms,
                     const char *status, const char *via)
{
    if (!d->cfg.log_json) {
        if (via)
            opd_log(d, "%s level=%s ms=%.3f %s via=%s", method, level, ms, status, via);
        else
            opd_log(d, "%s level=%s ms=%.3f %s", method, level, ms, status);
        return;
    }
    char time[64], num[64];
    stamp(time, sizeof time);
    snprintf(num, sizeof num, "#%.3f", ms);
    const char *kv[10] = {"method", method,   "level", level, "ms",
                          num,      "status", status,  "via", via};
    write_json(d, time, kv, via ? 10 : 8);
}
