"""A request larger than the daemon's --max-message is refused by the client, LimitError
naming both sizes, instead of being dropped unread and timing out (protocol.md §1.3,
issue 16). At --max-message 2048 a request of 2048 bytes with nng's 4-byte id still
reaches the daemon (its error reply proves it was read); one byte more is refused."""

import os
import subprocess
import time

import msgpack
import pytest

import onepath
import support


@pytest.fixture
def small_daemon(tmp_path):
    url = "ipc://%s/d.sock" % tmp_path
    log = open(os.path.join(tmp_path, "onepathd.log"), "w")
    proc = subprocess.Popen(
        [os.path.join(support.bin_dir(), "onepathd"), "--listen", url, "--threads", "1",
         "--max-message", "2048"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    c = onepath.Client(url, timeout=1.0)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                c.ping()
                break
            except onepath.Timeout:
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    raise RuntimeError("onepathd did not come up: see %s" % tmp_path)
    finally:
        c.close()
    yield url
    proc.terminate()
    proc.wait(timeout=60)
    log.close()


def _sized_name(total):
    """A level name whose level.drop request packs to `total` bytes."""
    for n in range(total):  # the str header grows with the name: search, do not compute
        size = len(msgpack.packb({"v": 1, "id": 2, "method": "level.drop",
                                  "params": {"level": "x" * n}}, use_bin_type=True))
        if size == total:
            return "x" * n
    raise AssertionError("no name packs to %d bytes" % total)


def test_request_past_max_message_is_limit_error(small_daemon):
    with onepath.Client(small_daemon, timeout=10.0) as c:
        # Request ids stay below 128 here (one byte each), so sizes do not depend on them.
        name = _sized_name(2044)
        with pytest.raises(onepath.Error) as e:
            c.level_drop(name)  # read by the daemon: its error reply (not a level name)
        assert not isinstance(e.value, (onepath.Timeout, onepath.LimitError)), e.value
        t0 = time.monotonic()
        with pytest.raises(onepath.LimitError) as e:
            c.level_drop(name + "x")
        assert time.monotonic() - t0 < 5, "a refusal, not a timeout"
        assert "2049 bytes" in str(e.value) and "--max-message of 2048" in str(e.value)
        assert c.ping()["limits"]["max_message"] == 2048
