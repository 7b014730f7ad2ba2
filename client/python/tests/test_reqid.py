"""The Python client across nng 1.5.2's request-id wrap (protocol.md §1.8): a REQ socket
whose ids pass 0xffffffff sends requests the daemon gets cut short and refuses; the
client must see the reply for what it is, send the request again on a fresh socket and
succeed. nng draws a socket's first id with getrandom: a client process runs with a
getrandom of its own (LD_PRELOAD) that hands out a chosen value while OP_TEST_NNG_RANDOM
is set, so its socket starts three ids before the wrap."""

import os
import subprocess
import sys
import textwrap

import pytest

_SHIM = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    const char *v = getenv("OP_TEST_NNG_RANDOM");
    if (v && len == 4) {
        uint32_t x = (uint32_t)strtoul(v, NULL, 0);
        memcpy(buf, &x, 4);
        return 4;
    }
    return syscall(SYS_getrandom, buf, len, flags);
}
"""

_CLIENT = textwrap.dedent("""
    import os, sys
    import onepath
    # nng's first id: random % 2^31 + 2^31, so 0x7ffffffd starts at 0xfffffffd.
    os.environ["OP_TEST_NNG_RANDOM"] = "0x7ffffffd"
    c = onepath.Client(sys.argv[1], timeout=60.0)
    del os.environ["OP_TEST_NNG_RANDOM"]
    for i in range(12):
        assert c.ping()["protocol"] == 1, i
    c.level_put("reqid", [onepath.mesh("floor", [0, 0, 0, 20, 0, 0, 20, 0, 20, 0, 0, 20],
                                       [0, 1, 2, 0, 2, 3])])
    n = sum(1 for _ in c.tiles("reqid"))
    assert n > 0
    c.close()
    print("ok", n)
""")


def test_calls_across_the_request_id_wrap_succeed(daemon, tmp_path):
    shim = tmp_path / "getrandom.so"
    src = tmp_path / "getrandom.c"
    src.write_text(_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(shim), str(src)], check=True)
    env = dict(os.environ)
    env["LD_PRELOAD"] = str(shim)
    env["PYTHONPATH"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    r = subprocess.run([sys.executable, "-c", _CLIENT, daemon[0]], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr


def test_past_wrap_knows_the_reply():
    from onepath import _nng
    req = b"\x84\xa1v\x01\xa2id\x05\xa6method\xa4ping\xa6params\x80"
    reply = b"\x84\xa1v\x01\xa2id\x05\xa2ok\xc3\xa6result\x80"
    assert not _nng.past_wrap(req, reply)
    assert _nng.past_wrap(req, req[:4] + reply)
    assert not _nng.past_wrap(req, b"")
