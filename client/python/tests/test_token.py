"""The shared token from Python (protocol.md §2.7): a daemon started with --token-file
refuses a request without its token or with another (PermissionDenied, OP_EPERM) and
serves Client(url, token_file=...) and Client(url, token=...); read_token_file keeps the
daemon's rules (mode 0600 or stricter, a size bound)."""

import os
import shutil
import signal
import subprocess
import time

import pytest

import onepath
import support

TOKEN = "q7Zr3xVb0Lk9mWc2Ht5YpNs8Ud1Ae6Gj4Ro0Kf7Xw2M"


def _write(path, text, mode):
    if os.path.exists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, text.encode())
    os.close(fd)
    os.chmod(path, mode)


@pytest.fixture
def token_daemon(tmp_path_factory):
    d = tmp_path_factory.mktemp("tok", numbered=True)
    # An ipc:// path must fit in a sockaddr_un: a short directory under /tmp.
    sock_dir = "/tmp/op-tok-%d" % os.getpid()
    os.makedirs(sock_dir, exist_ok=True)
    url = "ipc://%s/d.sock" % sock_dir
    token_file = str(d / "token")
    _write(token_file, TOKEN + "\n", 0o600)
    log = open(str(d / "onepathd.log"), "w")
    proc = subprocess.Popen(
        [os.path.join(support.bin_dir(), "onepathd"), "--listen", url, "--no-fsync",
         "--threads", "2", "--token-file", token_file, "--log", str(d / "requests.log")],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    c = onepath.Client(url, timeout=1.0, token_file=token_file)
    deadline = time.monotonic() + 60
    while True:
        try:
            c.ping()
            break
        except onepath.Timeout:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("onepathd did not come up: see %s" % log.name)
    c.close()
    yield url, token_file, d
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=120)
    log.close()
    shutil.rmtree(sock_dir, ignore_errors=True)
    assert rc == 0


def test_wrong_or_missing_token_is_refused(token_daemon):
    url, token_file, d = token_daemon
    with onepath.Client(url, timeout=10) as none:
        with pytest.raises(onepath.PermissionDenied) as e:
            none.ping()
        assert e.value.name == "OP_EPERM" and "token" in e.value.message
    with onepath.Client(url, timeout=10, token=TOKEN[:-1] + "N") as wrong:
        with pytest.raises(onepath.PermissionDenied, match="wrong token"):
            wrong.level_list()
        with pytest.raises(onepath.PermissionDenied):
            wrong.level_drop("a")
    # The daemon's log names the refusals and quotes no token (the right one or the wrong).
    # A request's line is written after its reply is sent: wait for the third.
    deadline = time.monotonic() + 20
    while True:
        with open(str(d / "requests.log")) as f:
            log = f.read()
        if log.count("OP_EPERM") >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert log.count("OP_EPERM") >= 3, log
    with open(str(d / "onepathd.log")) as f:
        log += f.read()
    assert TOKEN[:12] not in log


def test_right_token_is_served(token_daemon):
    url, token_file, _ = token_daemon
    with onepath.Client(url, timeout=10, token_file=token_file) as c:
        assert c.ping()["protocol"] == 1
        assert c.level_list()["levels"] == []
    with onepath.Client(url, timeout=10, token=TOKEN) as c:
        assert c.ping()["protocol"] == 1
    with onepath.Fleet([url], timeout=10, token=TOKEN) as f:
        assert f.clients[url].ping()["protocol"] == 1


def test_read_token_file_rules(tmp_path):
    p = str(tmp_path / "t")
    _write(p, TOKEN + "\r\n", 0o400)
    assert onepath.read_token_file(p) == TOKEN.encode()
    _write(p, TOKEN + "\n", 0o644)
    with pytest.raises(onepath.PermissionDenied, match="0644"):
        onepath.read_token_file(p)
    with pytest.raises(onepath.PermissionDenied):
        onepath.Client("ipc:///tmp/op-nowhere.sock", token_file=p)
    _write(p, "k" * 257 + "\r\n", 0o600)  # one byte past the largest file
    with pytest.raises(onepath.LimitError):
        onepath.read_token_file(p)
    _write(p, "short\n", 0o600)
    with pytest.raises(onepath.InvalidArgument, match="5 bytes"):
        onepath.read_token_file(p)
    for mode in (0o640, 0o604, 0o660, 0o610):  # the group or others have access
        _write(p, TOKEN + "\n", mode)
        with pytest.raises(onepath.PermissionDenied, match="%04o" % mode):
            onepath.read_token_file(p)
    _write(p, "", 0o600)
    with pytest.raises(onepath.InvalidArgument, match="is empty"):
        onepath.read_token_file(p)
    # One newline is stripped, no more; a lone "\r" is not a newline.
    _write(p, TOKEN + "\n\n", 0o600)
    with pytest.raises(onepath.InvalidArgument, match="0x0a"):
        onepath.read_token_file(p)
    _write(p, TOKEN + "\r", 0o600)
    with pytest.raises(onepath.InvalidArgument, match="0x0d"):
        onepath.read_token_file(p)
    _write(p, TOKEN, 0o600)
    assert onepath.read_token_file(p) == TOKEN.encode()
    # Not a regular file: a directory, a FIFO (without hanging), a device.
    with pytest.raises(onepath.InvalidArgument, match="not a regular file"):
        onepath.read_token_file(str(tmp_path))
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo, 0o600)
    with pytest.raises(onepath.InvalidArgument, match="not a regular file"):
        onepath.read_token_file(fifo)
    with pytest.raises(onepath.InvalidArgument, match="not a regular file"):
        onepath.read_token_file("/dev/null")
    # No refusal quotes the token.
    _write(p, TOKEN + " \n", 0o600)
    with pytest.raises(onepath.InvalidArgument) as e:
        onepath.read_token_file(p)
    assert TOKEN[:12] not in str(e.value)
    _write(p, TOKEN + "\n", 0o600)
    os.symlink(p, str(tmp_path / "link"))
    with pytest.raises(onepath.InvalidArgument, match="symbolic link"):
        onepath.read_token_file(str(tmp_path / "link"))
    with pytest.raises(onepath.InvalidArgument):
        onepath.Client("ipc:///tmp/op-nowhere.sock", token="has a space in it......")
