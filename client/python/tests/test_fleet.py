"""Rendezvous placement (protocol.md §11) in the Python client: the spec's vectors, read
from docs/spec/protocol.md as the C test reads them, and member lists."""

import os
import re

import pytest

import onepath
from onepath.fleet import parse_members

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs",
                    "spec", "protocol.md")
K8S = ["tcp://onepathd-%d.onepathd:7411" % i for i in range(3)]


def _rows(marker):
    lines = open(SPEC, encoding="utf-8").read().splitlines()
    start = next(i for i, ln in enumerate(lines) if marker in ln)
    out = []
    for ln in lines[start + 1:]:
        if not ln.startswith("|"):
            break
        if "`" in ln:
            out.append([c.strip() for c in ln.strip("|").split("|")])
    return out


def test_weight_vectors():
    rows = _rows("fleet-weights")
    assert len(rows) >= 8
    for m, l, w in rows:
        m, l, w = m.strip("`"), l.strip("`"), int(w.strip("`"), 16)
        assert onepath.weight(m, l) == w, (m, l)


def test_placement_vectors():
    rows = _rows("fleet-placement")
    assert len(rows) >= 6
    for l, h3, h2 in rows:
        l = l.strip("`")
        assert onepath.pick(K8S, l) == K8S[int(h3)], l
        assert onepath.pick(K8S[:2], l) == K8S[int(h2)], l


def test_splitmix_finaliser():
    # The weight's second step is SplitMix64's mix: from state 0 its first output is
    # 0xe220a8397b1dcdaf, so FNV-1a's state 0 must give that.
    h = 0
    z = (h + 0x9e3779b97f4a7c15) & (2**64 - 1)
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & (2**64 - 1)
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & (2**64 - 1)
    assert z ^ (z >> 31) == 0xe220a8397b1dcdaf


def test_new_member_moves_only_to_itself():
    m = ["ipc:///a", "ipc:///b", "ipc:///c", "ipc:///d"]
    moved = 0
    for i in range(2000):
        l = "level-%d" % i
        a, b = onepath.pick(m[:3], l), onepath.pick(m, l)
        if a != b:
            assert b == m[3], l
            moved += 1
    assert 350 < moved < 650, moved


def test_member_lists(tmp_path):
    assert parse_members(" ipc:///a ,tcp://b:1") == ["ipc:///a", "tcp://b:1"]
    f = tmp_path / "fleet"
    f.write_text("# fleet\n\nipc:///a\n  ipc:///b  \n")
    assert parse_members("@%s" % f) == ["ipc:///a", "ipc:///b"]
    with pytest.raises(onepath.InvalidArgument, match="empty"):
        parse_members("ipc:///a,,ipc:///b")
    with pytest.raises(onepath.InvalidArgument, match="nonexistent"):
        parse_members("@/nonexistent/fleet")
    f.write_text("# none\n")
    with pytest.raises(onepath.InvalidArgument, match="lists no URL"):
        parse_members("@%s" % f)
    with pytest.raises(onepath.InvalidArgument, match="twice"):
        onepath.Fleet(["ipc:///a", "ipc:///a"])
    with onepath.Fleet("ipc:///tmp/op-none-a.sock,ipc:///tmp/op-none-b.sock", timeout=0.2) as fl:
        m = fl.member_for("demo")
        with pytest.raises(onepath.Timeout, match=re.escape(m)) as ei:
            fl.level_info("demo")
        assert ei.value.member == m
