"""Fixtures of the Python client's tests: onepathd (the built binary) on an ipc socket
in a temporary directory, and the dungeon level with its offline bake."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import onepath  # noqa: E402  (the package under test, from client/python)
import support  # noqa: E402


@pytest.fixture(scope="session")
def workdir():
    # Short and under /tmp: an ipc:// path must fit in a sockaddr_un (108 bytes).
    d = tempfile.mkdtemp(prefix="op-py-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def daemon(workdir):
    """(url, process) of a running onepathd; stopped with SIGTERM at the end, which must
    exit 0."""
    url = "ipc://%s/d.sock" % workdir
    log = open(os.path.join(workdir, "onepathd.log"), "w")
    proc = subprocess.Popen(
        [os.path.join(support.bin_dir(), "onepathd"), "--listen", url, "--data-dir",
         os.path.join(workdir, "data"), "--no-fsync", "--threads", "2"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    c = onepath.Client(url, timeout=1.0)
    deadline = time.monotonic() + 60
    while True:
        try:
            c.ping()
            break
        except onepath.Timeout:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("onepathd did not come up: see %s/onepathd.log" % workdir)
    c.close()
    yield url, proc
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    log.close()
    assert rc == 0, "onepathd exited %s after SIGTERM" % rc


@pytest.fixture
def client(daemon):
    c = onepath.Client(daemon[0], timeout=120.0)
    yield c
    c.close()


@pytest.fixture(scope="session")
def dungeon(workdir):
    """The dungeon's soup as the OBJ reader reads it, and its offline bake."""
    path = support.shared_level("dungeon.obj")
    verts, tris = support.read_obj(path)
    summary, files = support.bake(path, os.path.join(workdir, "bake-dungeon"))
    return {"path": path, "verts": verts, "tris": tris, "summary": summary, "files": files}
