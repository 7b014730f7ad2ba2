/*
 * The shared token (onepathd --token-file, protocol.md §2.7, docs/security.md): the file's
 * rules (op_token_read_file), the constant-time comparison, a daemon that wants a token
 * refusing requests without it or with another (OP_EPERM, nothing changed) and accepting the
 * right one from the C client and the CLI (--token-file, $ONEPATH_TOKEN_FILE), a token
 * file others may read refused at start-up naming it, and a daemon without a token
 * serving as before (a token sent to it is ignored).
 */
#include <errno.h>
#include <msgpack.h>
#include <sys/stat.h>

#include "op_daemon_test.h"
#include "op_rpc_test.h"
#include "onepath/rpc.h"
#include "onepath/token.h"

/* 43 bytes, as `head -c 32 /dev/urandom | base64` gives (less the padding). */
#define TOKEN  "q7Zr3xVb0Lk9mWc2Ht5YpNs8Ud1Ae6Gj4Ro0Kf7Xw2M"
#define OTHER  "q7Zr3xVb0Lk9mWc2Ht5YpNs8Ud1Ae6Gj4Ro0Kf7Xw2N" /* the last byte differs */
#define SHORTR "q7Zr3xVb0Lk9mWc2Ht5YpNs8Ud1Ae6Gj4Ro0Kf7Xw2"  /* a prefix of TOKEN */

static void write_file(const char *path, const char *text, mode_t mode)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert(fd >= 0, "cannot create %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    cr_assert_eq(chmod(path, mode), 0, "chmod %s: %s", path, strerror(errno));
}

static char scratch[256];

static void scratch_init(void)
{
    snprintf(scratch, sizeof scratch, "/tmp/opd-token-XXXXXX");
    cr_assert_not_null(mkdtemp(scratch));
}

static void scratch_fini(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", scratch);
}

static op_status read_token(const char *text, mode_t mode, char *out, size_t *len, op_err *e)
{
    char path[300];
    snprintf(path, sizeof path, "%s/token", scratch);
    write_file(path, text, mode);
    return op_token_read_file(path, out, len, e);
}

Test(token, file_rules, .init = scratch_init, .fini = scratch_fini)
{
    char tok[OP_TOKEN_MAX + 1];
    size_t len;
    op_err e;
    cr_assert_eq(read_token(TOKEN "\n", 0600, tok, &len, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(len, strlen(TOKEN));
    cr_assert_str_eq(tok, TOKEN);
    cr_assert_eq(read_token(TOKEN "\r\n", 0400, tok, &len, &e), OP_OK, "%s", e.msg);
    cr_assert_str_eq(tok, TOKEN);
    cr_assert_eq(read_token(TOKEN, 0600, tok, &len, &e), OP_OK, "%s", e.msg);
    cr_assert_str_eq(tok, TOKEN);

    /* Group or others may read it (or have any access to it): refused, naming the file and
     * its mode, and nothing of it is returned. */
    static const mode_t open_modes[] = {0644, 0640, 0604, 0660, 0606, 0610, 0601, 0666};
    for (size_t i = 0; i < sizeof open_modes / sizeof open_modes[0]; i++) {
        char mode[8];
        snprintf(mode, sizeof mode, "%04o", (unsigned)open_modes[i]);
        cr_assert_eq(read_token(TOKEN "\n", open_modes[i], tok, &len, &e), OP_EPERM, "%s", mode);
        cr_assert(strstr(e.msg, scratch) && strstr(e.msg, mode), "%s", e.msg);
        cr_assert_eq(len, 0);
        cr_assert_str_eq(tok, "");
    }

    /* Too short, a space inside, two lines, empty. */
    cr_assert_eq(read_token("0123456789abcde\n", 0600, tok, &len, &e), OP_EINVAL, "%s", e.msg);
    cr_assert_eq(read_token("0123456789abcdef\n", 0600, tok, &len, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(read_token("0123456789 abcdef\n", 0600, tok, &len, &e), OP_EINVAL);
    cr_assert_eq(read_token(TOKEN "\n" TOKEN "\n", 0600, tok, &len, &e), OP_EINVAL);
    cr_assert_eq(read_token("", 0600, tok, &len, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, scratch) && strstr(e.msg, "is empty"), "%s", e.msg);
    cr_assert_eq(read_token("\n", 0600, tok, &len, &e), OP_EINVAL, "%s", e.msg);
    /* Exactly one newline is stripped: a second one, or a lone "\r", stays and is refused. */
    cr_assert_eq(read_token(TOKEN "\n\n", 0600, tok, &len, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "0x0a"), "%s", e.msg);
    cr_assert_eq(read_token(TOKEN "\r", 0600, tok, &len, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "0x0d"), "%s", e.msg);
    cr_assert_eq(read_token(TOKEN "\r\r\n", 0600, tok, &len, &e), OP_EINVAL);
    /* No refusal quotes the token. */
    cr_assert_eq(read_token(TOKEN " \n", 0600, tok, &len, &e), OP_EINVAL);
    cr_assert_null(strstr(e.msg, TOKEN), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "Xw2M"), "%s", e.msg);

    /* OP_TOKEN_MAX bytes and a newline fit; one more byte is OP_ELIMIT. */
    char big[OP_TOKEN_MAX + 8];
    memset(big, 'k', OP_TOKEN_MAX);
    strcpy(big + OP_TOKEN_MAX, "\r\n");
    cr_assert_eq(read_token(big, 0600, tok, &len, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(len, OP_TOKEN_MAX);
    memset(big, 'k', OP_TOKEN_MAX + 1);
    strcpy(big + OP_TOKEN_MAX + 1, "\r\n");
    cr_assert_eq(read_token(big, 0600, tok, &len, &e), OP_ELIMIT, "%s", e.msg);
    cr_assert(strstr(e.msg, scratch) && strstr(e.msg, "longer than 258 bytes"), "%s", e.msg);
    /* OP_TOKEN_MAX + 1 bytes with no newline: too long a token (not a limit of the file). */
    memset(big, 'k', OP_TOKEN_MAX + 1);
    big[OP_TOKEN_MAX + 1] = '\0';
    cr_assert_eq(read_token(big, 0600, tok, &len, &e), OP_EINVAL, "%s", e.msg);
    cr_assert(strstr(e.msg, "257 bytes"), "%s", e.msg);
    /* A file far past the bound: refused after reading 259 bytes of it. */
    char huge[1 << 16];
    memset(huge, 'k', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    cr_assert_eq(read_token(huge, 0600, tok, &len, &e), OP_ELIMIT, "%s", e.msg);

    /* Not a regular file, a symbolic link, missing: refused without hanging. */
    char path[300], link[300];
    snprintf(path, sizeof path, "%s/fifo", scratch);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_eq(op_token_read_file(path, tok, &len, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "not a regular file"), "%s", e.msg);
    cr_assert_eq(op_token_read_file(scratch, tok, &len, &e), OP_EINVAL); /* a directory */
    cr_assert(strstr(e.msg, "not a regular file"), "%s", e.msg);
    cr_assert_eq(op_token_read_file("/dev/null", tok, &len, &e), OP_EINVAL); /* a device */
    cr_assert(strstr(e.msg, "not a regular file"), "%s", e.msg);
    snprintf(path, sizeof path, "%s/token", scratch);
    write_file(path, TOKEN "\n", 0600);
    snprintf(link, sizeof link, "%s/link", scratch);
    cr_assert_eq(symlink(path, link), 0);
    cr_assert_eq(op_token_read_file(link, tok, &len, &e), OP_EINVAL);
    cr_assert(strstr(e.msg, "symbolic link"), "%s", e.msg);
    snprintf(path, sizeof path, "%s/missing", scratch);
    cr_assert_eq(op_token_read_file(path, tok, &len, &e), OP_EIO);
}

Test(token, comparison)
{
    cr_assert(op_token_equal(TOKEN, strlen(TOKEN), TOKEN, strlen(TOKEN)));
    cr_assert(!op_token_equal(TOKEN, strlen(TOKEN), OTHER, strlen(OTHER)));
    cr_assert(!op_token_equal(TOKEN, strlen(TOKEN), SHORTR, strlen(SHORTR)));
    cr_assert(!op_token_equal(SHORTR, strlen(SHORTR), TOKEN, strlen(TOKEN)));
    cr_assert(!op_token_equal(TOKEN, strlen(TOKEN), "", 0));
    char big[OP_TOKEN_MAX + 2];
    memset(big, 'k', sizeof big);
    /* Equal in their first OP_TOKEN_MAX bytes, but longer than any token. */
    cr_assert(!op_token_equal(big, OP_TOKEN_MAX, big, OP_TOKEN_MAX + 1));
    cr_assert(op_token_equal(big, OP_TOKEN_MAX, big, OP_TOKEN_MAX));
}

/* ---- the daemon ---- */

static opt_daemon d;
static char token_path[400];

static void start_with_token(void)
{
    opt_daemon_init(&d);
    snprintf(token_path, sizeof token_path, "%s/token", d.dir);
    write_file(token_path, TOKEN "\n", 0600);
    const char *extra[] = {"--token-file", token_path, NULL};
    opt_daemon_start(&d, extra);
}

static void stop(void)
{
    cr_assert_eq(opt_daemon_stop(&d), 0, "onepathd did not exit cleanly");
    opt_daemon_cleanup(&d);
}

static op_client *client_with(const char *token)
{
    op_client *c = opt_connect(&d);
    op_err e;
    if (token)
        cr_assert_eq(op_client_set_token(c, token, strlen(token), &e), OP_OK, "%s", e.msg);
    return c;
}

static op_status put(op_client *c, const char *level, op_err *e)
{
    opt_soup floor = {0};
    opt_soup_quad(&floor, 0, 0, 8, 8, 0);
    op_client_mesh fm = opt_mesh("floor", &floor);
    uint64_t v;
    int changed;
    op_status st = op_client_level_put(c, level, NULL, 0, &fm, 1, OPT_TIMEOUT_MS, &v, &changed, e);
    opt_soup_free(&floor);
    return st;
}

static int level_count(op_client *c)
{
    op_client_level_list l;
    op_err e;
    cr_assert_eq(op_client_level_list_get(c, OPT_TIMEOUT_MS, &l, &e), OP_OK, "%s", e.msg);
    int n = l.n;
    op_client_level_list_free(&l);
    return n;
}

/* A raw request {v, id, method: ping} with `token` as given (a str, or an int). */
static int raw_ping_code(op_client *c, const char *token, int token_as_int)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    opt_pack_head(&pk, 4, 7, "ping");
    op_rpc_pack_key(&pk, "token");
    if (token_as_int)
        msgpack_pack_int(&pk, 42);
    else
        msgpack_pack_str_with_body(&pk, token, strlen(token));
    uint8_t *raw;
    size_t n;
    op_err e;
    cr_assert_eq(op_client_call_raw(c, sb.data, sb.size, OPT_TIMEOUT_MS, &raw, &n, &e), OP_OK, "%s",
                 e.msg);
    msgpack_sbuffer_destroy(&sb);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    cr_assert_eq(msgpack_unpack_next(&u, (const char *)raw, n, &off), MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *ok = op_rpc_get(&u.data, "ok");
    int code = 0;
    if (!ok->via.boolean)
        code = (int)op_rpc_get(op_rpc_get(&u.data, "error"), "code")->via.u64;
    msgpack_unpacked_destroy(&u);
    free(raw);
    return code;
}

Test(token, wrong_or_missing_tokens_are_refused, .init = start_with_token, .fini = stop,
     .timeout = 120)
{
    op_client *none = client_with(NULL), *wrong = client_with(OTHER), *prefix = client_with(SHORTR),
              *right = client_with(TOKEN);
    op_client_ping_result p;
    op_err e;
    cr_assert_eq(op_client_ping(none, OPT_TIMEOUT_MS, &p, &e), OP_EPERM, "%s", e.msg);
    cr_assert(strstr(e.msg, "token"), "%s", e.msg);
    cr_assert_eq(op_client_ping(wrong, OPT_TIMEOUT_MS, &p, &e), OP_EPERM, "%s", e.msg);
    cr_assert_str_eq(e.msg, "wrong token");
    cr_assert_eq(op_client_ping(prefix, OPT_TIMEOUT_MS, &p, &e), OP_EPERM, "%s", e.msg);

    /* An edit with a wrong token changes nothing; the right token's edit is served. */
    cr_assert_eq(put(wrong, "a", &e), OP_EPERM, "%s", e.msg);
    cr_assert_eq(put(none, "a", &e), OP_EPERM, "%s", e.msg);
    cr_assert_eq(level_count(right), 0);
    cr_assert_eq(put(right, "a", &e), OP_OK, "%s", e.msg);
    cr_assert_eq(level_count(right), 1);
    cr_assert_eq(op_client_ping(right, OPT_TIMEOUT_MS, &p, &e), OP_OK, "%s", e.msg);

    /* An unknown method is not revealed before the token is checked. */
    cr_assert_eq(raw_ping_code(none, OTHER, 0), OP_EPERM);
    cr_assert_eq(raw_ping_code(none, TOKEN, 0), OP_OK);
    cr_assert_eq(raw_ping_code(none, "", 0), OP_EPERM);
    cr_assert_eq(raw_ping_code(none, NULL, 1), OP_EPROTO); /* not a str */

    /* The request log names the refusals. */
    op_client_close(none);
    op_client_close(wrong);
    op_client_close(prefix);
    op_client_close(right);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "grep -c 'OP_EPERM' '%s' | grep -qx '[5-9]'", d.log);
    cr_assert_eq(system(cmd), 0, "the log does not hold the refusals: %s", d.log);
    /* ... and neither the token nor the wrong ones sent (their common prefix). */
    snprintf(cmd, sizeof cmd, "grep -q 'q7Zr3xVb0Lk9' '%s'", d.log);
    cr_assert_neq(system(cmd), 0, "the log quotes a token: %s", d.log);
}

Test(token, the_cli_sends_the_token_file, .init = start_with_token, .fini = stop, .timeout = 120)
{
    char cmd[1500], bad[400];
    /* Without a token: exit 1 naming OP_EPERM. */
    snprintf(cmd, sizeof cmd,
             "env -u ONEPATH_TOKEN_FILE %s/onepath remote ping --url '%s' 2>&1 "
             "| grep -q OP_EPERM",
             OP_BIN_DIR, d.url);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd,
             "env -u ONEPATH_TOKEN_FILE %s/onepath remote ping --url '%s' "
             ">/dev/null 2>&1",
             OP_BIN_DIR, d.url);
    cr_assert_eq(WEXITSTATUS(system(cmd)), 1, "%s", cmd);
    /* --token-file, then $ONEPATH_TOKEN_FILE. */
    snprintf(cmd, sizeof cmd, "%s/onepath remote ping --url '%s' --token-file '%s' >/dev/null",
             OP_BIN_DIR, d.url, token_path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd,
             "ONEPATH_TOKEN_FILE='%s' %s/onepath remote level-list --url '%s' "
             ">/dev/null",
             token_path, OP_BIN_DIR, d.url);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    /* A wrong token, and a token file others may read (refused by the CLI before it sends). */
    snprintf(bad, sizeof bad, "%s/other", d.dir);
    write_file(bad, OTHER "\n", 0600);
    snprintf(cmd, sizeof cmd,
             "%s/onepath remote ping --url '%s' --token-file '%s' 2>&1 | "
             "grep -q 'wrong token'",
             OP_BIN_DIR, d.url, bad);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    cr_assert_eq(chmod(bad, 0644), 0);
    snprintf(cmd, sizeof cmd,
             "%s/onepath remote ping --url '%s' --token-file '%s' 2>&1 | "
             "grep -q '0644'",
             OP_BIN_DIR, d.url, bad);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Runs onepathd with args until it exits (it must, within 10 s): its status and stderr.
 * Not inlined: gcc -O3 unrolls the copy loop over a caller's constant array and warns of
 * reads past its NULL that never happen (-Warray-bounds). */
static __attribute__((noinline)) int run_daemon(const char *const *args, char *err_out, size_t cap)
{
    char errpath[400];
    snprintf(errpath, sizeof errpath, "%s/stderr", scratch);
    char bin[512];
    snprintf(bin, sizeof bin, "%s/onepathd", OP_BIN_DIR);
    const char *argv[16] = {bin};
    int n = 1;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    double t0 = opt_now_ms();
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (opt_now_ms() - t0 > 10000) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("onepathd did not exit (it started with a bad token file)");
        }
        opt_sleep_ms(10);
    }
    FILE *f = fopen(errpath, "rb");
    size_t got = f ? fread(err_out, 1, cap - 1, f) : 0;
    err_out[got] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Each bad token file stops the start (exit 2, before anything listens) with a message that
 * names the file, says what is wrong and never quotes the token. */
Test(token, a_bad_token_file_stops_the_start, .init = scratch_init, .fini = scratch_fini,
     .timeout = 120)
{
    char path[300], url[400], sock[400], err[2048];
    snprintf(path, sizeof path, "%s/token", scratch);
    snprintf(url, sizeof url, "ipc://%s/s.ipc", scratch);
    snprintf(sock, sizeof sock, "%s/s.ipc", scratch);
    char big[OP_TOKEN_MAX + 8];
    memset(big, 'k', OP_TOKEN_MAX + 1);
    strcpy(big + OP_TOKEN_MAX + 1, "\r\n");
    enum { PLAIN, DIR_, FIFO_, LINK, MISSING };
    static const struct {
        int kind;
        const char *text;
        mode_t mode;
        const char *says, *status;
    } cases[] = {
        {PLAIN, TOKEN "\n", 0644, "0644", "OP_EPERM"}, /* others may read it */
        {PLAIN, TOKEN "\n", 0640, "0640", "OP_EPERM"}, /* the group may read it */
        {PLAIN, TOKEN "\n", 0604, "0604", "OP_EPERM"},
        {PLAIN, "", 0600, "is empty", "OP_EINVAL"},
        {PLAIN, "\n", 0600, "0 bytes", "OP_EINVAL"},
        {PLAIN, "short\n", 0600, "5 bytes", "OP_EINVAL"},
        {PLAIN, NULL /* big */, 0600, "longer than 258 bytes", "OP_ELIMIT"},
        {PLAIN, TOKEN " x\n", 0600, "0x20", "OP_EINVAL"},
        {DIR_, NULL, 0700, "not a regular file", "OP_EINVAL"},
        {FIFO_, NULL, 0600, "not a regular file", "OP_EINVAL"}, /* and no hang */
        {LINK, NULL, 0600, "symbolic link", "OP_EINVAL"},
        {MISSING, NULL, 0, "No such file", "OP_EIO"},
    };
    const char *args[] = {"--listen", url, "--token-file", path, NULL};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char target[320];
        snprintf(target, sizeof target, "%s/target", scratch);
        unlink(path);
        unlink(target);
        rmdir(path);
        switch (cases[i].kind) {
        case PLAIN:
            write_file(path, cases[i].text ? cases[i].text : big, cases[i].mode);
            break;
        case DIR_:
            cr_assert_eq(mkdir(path, cases[i].mode), 0);
            break;
        case FIFO_:
            cr_assert_eq(mkfifo(path, cases[i].mode), 0);
            break;
        case LINK:
            write_file(target, TOKEN "\n", 0600);
            cr_assert_eq(symlink(target, path), 0);
            break;
        case MISSING:
            break;
        }
        cr_assert_eq(run_daemon(args, err, sizeof err), 2, "case %zu: %s", i, err);
        cr_assert(strstr(err, "--token-file") && strstr(err, path) && strstr(err, cases[i].says) &&
                      strstr(err, cases[i].status),
                  "case %zu: want '%s' (%s): %s", i, cases[i].says, cases[i].status, err);
        cr_assert_null(strstr(err, "Xw2M"), "case %zu quotes the token: %s", i, err);
        cr_assert_neq(access(sock, F_OK), 0, "case %zu: onepathd listened before refusing", i);
    }
    unlink(path);
    rmdir(path);
}

static void start_plain(void)
{
    opt_daemon_init(&d);
    opt_daemon_start(&d, NULL);
}

Test(token, no_token_configured_serves_as_before, .init = start_plain, .fini = stop, .timeout = 120)
{
    op_client *none = client_with(NULL), *some = client_with(TOKEN);
    op_client_ping_result p;
    op_err e;
    cr_assert_eq(op_client_ping(none, OPT_TIMEOUT_MS, &p, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(put(none, "a", &e), OP_OK, "%s", e.msg);
    /* A token sent to a daemon that wants none is ignored. */
    cr_assert_eq(op_client_ping(some, OPT_TIMEOUT_MS, &p, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(put(some, "b", &e), OP_OK, "%s", e.msg);
    cr_assert_eq(level_count(none), 2);
    op_client_close(none);
    op_client_close(some);
}

Test(token, the_client_refuses_a_bad_token)
{
    op_client *c;
    op_err e;
    cr_assert_eq(op_client_open("ipc:///tmp/opd-token-nowhere.ipc", &c, &e), OP_OK, "%s", e.msg);
    cr_assert_eq(op_client_set_token(c, "short", 5, &e), OP_EINVAL);
    cr_assert_eq(op_client_set_token(c, TOKEN " x", strlen(TOKEN) + 2, &e), OP_EINVAL);
    cr_assert_eq(op_client_set_token_file(c, "/nonexistent/token", &e), OP_EIO);
    cr_assert_eq(op_client_set_token(c, TOKEN, strlen(TOKEN), &e), OP_OK, "%s", e.msg);
    op_client_close(c);
}
