"""A fleet of three onepathd on ipc:// (protocol.md §11): 30 levels put through the CLI
with all three members, each found on exactly the member the rule names (level.list of
every member), every tile equal to the offline bake; one member killed: only its levels
fail, with an error naming it; restarted on its data directory: everything back."""

import os
import signal
import subprocess
import time

import pytest

import onepath
import support

KINDS = ("flat", "stairs", "rooms", "ramp", "pillars", "terrain")
NLEVELS = 30


def _start(url, data, log):
    return subprocess.Popen(
        [os.path.join(support.bin_dir(), "onepathd"), "--listen", url, "--data-dir", data,
         "--no-fsync", "--threads", "1", "--request-threads", "1"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)


def _wait_up(url, proc, workdir):
    c = onepath.Client(url, timeout=1.0)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                return c.ping()
            except onepath.Timeout:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("onepathd %s did not come up: see %s" % (url, workdir))
    finally:
        c.close()


@pytest.fixture(scope="module")
def fleet(workdir):
    d = os.path.join(workdir, "fleet")
    os.makedirs(d, exist_ok=True)
    members = ["ipc://%s/m%d.sock" % (d, i) for i in range(3)]
    log = open(os.path.join(d, "daemons.log"), "a")
    procs = {}
    for i, m in enumerate(members):
        procs[m] = _start(m, os.path.join(d, "data%d" % i), log)
    for m in members:
        _wait_up(m, procs[m], d)
    state = {"dir": d, "members": members, "procs": procs, "log": log}
    yield state
    for m, p in procs.items():
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs.values():
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
    log.close()


@pytest.fixture(scope="module")
def levels(fleet):
    """{level name: {(tx, tz): [layer blobs]} of its offline bake}, 30 levels over six
    generated geometries, each put with `onepath put --url A,B --url C` (one list
    given two ways)."""
    d = fleet["dir"]
    bakes = {}
    for k in KINDS:
        obj = os.path.join(d, "%s.obj" % k)
        support.tool("gen", k, "--size", "16", "--seed", "3", "--out", obj)
        _, files = support.bake(obj, os.path.join(d, "bake-" + k))
        bakes[k] = (obj, support.by_tile(files))
        assert bakes[k][1], "the %s level bakes to no tile" % k
    m = fleet["members"]
    out = {}
    for i in range(NLEVELS):
        name = "fleet-level-%02d" % i
        obj, tiles = bakes[KINDS[i % len(KINDS)]]
        support.tool("put", obj, "--level", name, "--url", "%s,%s" % (m[0], m[1]),
                     "--url", m[2], "--timeout", "120000")
        out[name] = tiles
    return out


def test_each_level_on_the_member_the_rule_names(fleet, levels):
    m = fleet["members"]
    want = {mem: sorted(l for l in levels if onepath.pick(m, l) == mem) for mem in m}
    # Thirty names over three members: every member holds some (not a placement that
    # sends all to one).
    assert all(want[mem] for mem in m), want
    with onepath.Fleet(m, timeout=60.0) as f:
        held = f.level_list()
    for mem in m:
        got = sorted(e["level"] for e in held[mem]["levels"])
        assert got == want[mem], mem


def test_every_tile_equals_the_offline_bake(fleet, levels):
    with onepath.Fleet(fleet["members"], timeout=120.0) as f:
        for name, want in levels.items():
            got = {(t["tx"], t["tz"]): [ly["blob"] for ly in t["layers"]]
                   for t in f.tiles(name) if t["layers"]}
            assert got == want, name


def test_an_error_reply_names_its_member(fleet, levels):
    """A daemon's error reply says which member sent it: the Python Fleet (the exception's
    member and message) and the CLI given the fleet (stderr)."""
    m = fleet["members"]
    who = onepath.pick(m, "no-such-level")
    with onepath.Fleet(m, timeout=60.0) as f:
        with pytest.raises(onepath.NotFound) as ei:
            f.level_info("no-such-level")
    assert ei.value.member == who, ei.value.member
    assert who in str(ei.value) and "no-such-level" in str(ei.value), str(ei.value)
    bin_ = os.path.join(support.bin_dir(), "onepath")
    for args in (["remote", "level-info"], ["mesh", "drop", "quad"]):
        r = subprocess.run([bin_] + args + ["--url", ",".join(m), "--level", "no-such-level"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert r.returncode == 1, (args, r.stderr)
        assert who.encode() in r.stderr and b"OP_ENOTFOUND" in r.stderr, (args, r.stderr)
    # `onepath mesh` finds a level's member as every client does: a drop of a mesh the
    # level lacks reaches the level (no OP_ENOTFOUND from another member).
    name = sorted(levels)[0]
    r = subprocess.run([bin_, "mesh", "drop", "no-such-mesh", "--url", ",".join(m), "--level",
                        name], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0 and b"has no mesh no-such-mesh" in r.stdout, r.stderr


def test_a_killed_member_fails_only_its_levels_then_comes_back(fleet, levels):
    m = fleet["members"]
    dead = m[1]
    fleet["procs"][dead].kill()
    fleet["procs"][dead].wait(timeout=30)
    mine = [l for l in levels if onepath.pick(m, l) == dead]
    assert mine
    with onepath.Fleet(m, timeout=1.0) as f:
        for name, want in levels.items():
            tx, tz = sorted(want)[0]
            if name in mine:
                with pytest.raises((onepath.Timeout, onepath.InputOutputError)) as ei:
                    f.tile_get(name, tx, tz)
                assert dead in str(ei.value), str(ei.value)
                assert ei.value.member == dead
            else:
                t = f.tile_get(name, tx, tz, timeout=60.0)
                assert [ly["blob"] for ly in t["layers"]] == want[(tx, tz)], name
    # The CLI says which member did not answer, and serves the others.
    cli = [os.path.join(support.bin_dir(), "onepath"), "remote", "level-info", "--url",
           ",".join(m), "--timeout", "1000", "--level"]
    r = subprocess.run(cli + [mine[0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode != 0 and dead.encode() in r.stderr, r.stderr
    other = next(l for l in levels if l not in mine)
    r = subprocess.run(cli[:-2] + ["30000", "--level", other], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr

    # Restarted on its data directory: its levels are back, byte for byte.
    fleet["procs"][dead] = _start(dead, os.path.join(fleet["dir"], "data1"), fleet["log"])
    _wait_up(dead, fleet["procs"][dead], fleet["dir"])
    with onepath.Fleet(m, timeout=120.0) as f:
        for name, want in levels.items():
            got = {(t["tx"], t["tz"]): [ly["blob"] for ly in t["layers"]]
                   for t in f.tiles(name) if t["layers"]}
            assert got == want, name


def test_level_less_commands_run_on_every_member(fleet, tmp_path):
    m = fleet["members"]
    f = tmp_path / "fleet.txt"
    f.write_text("# the test's fleet\n%s\n\n%s\n" % (m[0], m[2]))
    out = support.tool("remote", "ping", "--url", "@%s" % f, "--url", m[1])
    heads = [ln[3:] for ln in out.splitlines() if ln.startswith("== ")]
    assert heads == [m[0], m[2], m[1]], out
    r = subprocess.run([os.path.join(support.bin_dir(), "onepath"), "remote", "ping", "--url",
                        "%s,%s" % (m[0], m[0])], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode != 0 and b"twice" in r.stderr, r.stderr
