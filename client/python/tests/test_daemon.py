"""The Python client against a running onepathd: every method, edits and long polls,
every tile decoded and hash-checked, compared byte for byte with `onepath bake --out`."""

import json
import os
import threading
import time

import pytest

import onepath
import support


def _decode_checked(layer):
    """Decodes one layer of a tile.get / tile.range result, checking its hashes: the
    reply's, the blob's own and the one computed here from the bytes."""
    blob = layer["blob"]
    t = onepath.decode_tile(blob)
    assert t.hash == layer["hash"] == onepath.content_hash(blob)
    assert t.layer == layer["layer"]
    return t


def _all_tiles(client, level):
    """{(tx, tz, layer): blob} of every tile of the level, fetched with tile.range and
    each decoded and hash-checked."""
    out = {}
    for tile in client.tiles(level):
        for layer in tile["layers"]:
            t = _decode_checked(layer)
            assert (t.tx, t.tz) == (tile["tx"], tile["tz"])
            out[(t.tx, t.tz, t.layer)] = layer["blob"]
    return out


def test_ping(client):
    r = client.ping()
    assert r["protocol"] == onepath.PROTOCOL_VERSION == 1
    assert "onepath %s" % r["version"] == support.tool("version").strip()
    assert set(r["limits"]) == {"max_message", "max_unpacked", "max_levels", "max_level_verts",
                                "max_level_tris", "cache_bytes", "rebuild_cache_bytes"}


def test_level_put_and_read_every_tile(client, dungeon):
    m = onepath.mesh("dungeon.obj", dungeon["verts"], dungeon["tris"])
    r = client.level_put("dungeon", [m])
    assert r == {"version": 1, "changed": True}
    # The same level again changes nothing (protocol.md §6).
    assert client.level_put("dungeon", [m]) == {"version": 1, "changed": False}
    assert {"level": "dungeon", "version": 1} in client.level_list()["levels"]
    info = client.level_info("dungeon")
    assert info["version"] == 1 and info["tiles_total"] > 1

    tiles = _all_tiles(client, "dungeon")
    assert tiles == dungeon["files"]  # byte for byte, and the same set of tile layers
    h = onepath.mesh_hash((k, onepath.content_hash(b)) for k, b in tiles.items())
    assert "%016x" % h == dungeon["summary"]["hash"]
    # tile.get answers the same bytes as tile.range.
    for (tx, tz), blobs in support.by_tile(dungeon["files"]).items():
        got = client.tile_get("dungeon", tx, tz)
        assert (got["tx"], got["tz"], got["version"]) == (tx, tz, 1)
        assert [layer["blob"] for layer in got["layers"]] == blobs
    # changes since 0: every tile with layers, with its hashes by layer.
    ch = client.changes_since("dungeon", 0)
    assert ch["version"] == 1
    want = {k: [onepath.content_hash(b) for b in blobs]
            for k, blobs in support.by_tile(dungeon["files"]).items()}
    assert {(c["tx"], c["tz"]): c["hashes"] for c in ch["tiles"]} == want


def test_paging_with_small_pages(client, dungeon):
    client.level_put("paged", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])])
    info = client.level_info("paged")
    full = list(client.tiles("paged"))
    pages, after = [], None
    while True:
        page = client.tile_range("paged", *info["tiles"], after=after, max_bytes=1)
        assert len(page["tiles"]) >= 1  # at least one tile per page, however small
        pages += page["tiles"]
        after = page["next"]
        if after is None:
            break
        assert after == [page["tiles"][-1]["tx"], page["tiles"][-1]["tz"]]
    assert pages == full
    assert len(full) == info["tiles_total"]


def test_waiting_page_carries_unbuilt_tiles(client, dungeon):
    # Right after the put the tiles are still being built: a waiting page (protocol.md §4
    # rule 2a) waits for them and carries the whole level, bytes as `onepath bake`.
    client.level_put("waited", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])])
    info = client.level_info("waited")
    page = client.tile_range("waited", *info["tiles"], wait=20.0)
    assert page["next"] is None
    assert len(page["tiles"]) == info["tiles_total"]
    got = {(t["tx"], t["tz"], layer["layer"]): layer["blob"]
           for t in page["tiles"] for layer in t["layers"]}
    assert got == dungeon["files"]
    with pytest.raises(onepath.InvalidArgument):
        client.tile_range("waited", *info["tiles"], wait=601)


def _expected_changes(before, after):
    """{(tx, tz): hashes} of the tiles whose layer hashes differ between two bakes, as
    changes.since must list them (protocol.md §4.3)."""
    b, a = support.by_tile(before), support.by_tile(after)
    out = {}
    for key in set(b) | set(a):
        hb = [onepath.content_hash(x) for x in b.get(key, [])]
        ha = [onepath.content_hash(x) for x in a.get(key, [])]
        if hb != ha:
            out[key] = ha
    return out


def _settled_count(client, method):
    """stats' request count of method once it stops moving: the daemon counts a request
    after its reply has left, so a count read right after a reply may lag by one."""
    last = None
    while True:
        n = client.stats()["requests"].get(method, 0)
        if n == last:
            return n
        last = n
        time.sleep(0.2)


def test_edit_long_poll_and_offline_equality(client, dungeon, workdir, daemon):
    level = "edited"
    base = client.level_put(level, [onepath.mesh("dungeon.obj", dungeon["verts"],
                                                 dungeon["tris"])])["version"]
    assert client.changes_since(level, base)["tiles"] == []  # settled, nothing newer
    # A box standing on the dungeon's floor: its top is walkable, its sides block.
    bv, bt = support.box(1.0, -20.0, 4.0, -16.0, 0.0, 1.5)
    polls_before = _settled_count(client, "changes.since")

    result = {}

    def poll():
        with onepath.Client(daemon[0], timeout=5.0) as c:
            t0 = time.monotonic()
            result["changes"] = c.changes_since(level, base, wait=20.0)
            result["seconds"] = time.monotonic() - t0

    th = threading.Thread(target=poll)
    th.start()
    time.sleep(0.5)  # the poll is parked in the daemon before the edit
    r = client.mesh_put(level, "box", bv, bt)
    assert r == {"version": base + 1, "changed": True}
    th.join(60)
    assert not th.is_alive()
    ch = result["changes"]
    assert ch["version"] == base + 1
    assert result["seconds"] < 19  # woken by the edit, not by the deadline
    # The long poll reached the daemon once: its resend time was above its wait.
    assert _settled_count(client, "changes.since") == polls_before + 1

    # The daemon's tiles are the offline bake of the same soup: meshes in name order,
    # "box" before "dungeon.obj".
    obj = os.path.join(workdir, "edited.obj")
    support.write_obj(obj, [(bv, bt), (dungeon["verts"], dungeon["tris"])])
    summary, files = support.bake(obj, os.path.join(workdir, "bake-edited"))
    tiles = _all_tiles(client, level)
    assert tiles == files
    want = _expected_changes(dungeon["files"], files)
    assert want, "the box changed no tile"
    assert {(c["tx"], c["tz"]): c["hashes"] for c in ch["tiles"]} == want
    assert [(c["tx"], c["tz"]) for c in ch["tiles"]] == sorted(want, key=lambda k: (k[1], k[0]))

    # Dropping the box restores the dungeon's tiles, and lists exactly those it restores.
    assert client.mesh_drop(level, "box") == {"version": base + 2, "changed": True}
    assert client.mesh_drop(level, "box") == {"version": base + 2, "changed": False}
    back = client.changes_since(level, base + 1, wait=10.0)
    assert {(c["tx"], c["tz"]): c["hashes"] for c in back["tiles"]} == \
        _expected_changes(files, dungeon["files"])
    assert _all_tiles(client, level) == dungeon["files"]


def test_resend_time_above_the_wait(client, dungeon, daemon):
    """A REQ context whose resend time is below a long poll's wait sends the poll again
    and again while the daemon holds it; the client's calls never do (protocol.md §1.4)."""
    import msgpack
    from onepath import _nng

    client.level_put("resend", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])])
    version = client.level_info("resend")["version"]
    req = msgpack.packb({"v": 1, "id": 7, "method": "changes.since",
                         "params": {"level": "resend", "version": version, "wait_ms": 1500}})
    sock = _nng.ReqSocket(daemon[0])
    try:
        n0 = _settled_count(client, "changes.since")
        sock.request(req, 5000, resend_ms=300)  # the wrong way: resent every 300 ms
        time.sleep(2.0)  # the copies still parked in the daemon run out their wait
        n1 = _settled_count(client, "changes.since")
    finally:
        sock.close()
    assert n1 - n0 >= 3, "a 300 ms resend time should resend a 1500 ms poll"
    client.changes_since("resend", version, wait=1.5)  # the client's way
    assert _settled_count(client, "changes.since") - n1 == 1


def _volumes_file(path, volumes):
    """Writes a volumes file (input-formats.md §6) by hand, numbers as repr (exact)."""
    def val(v):
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return json.dumps(v) if isinstance(v, str) else repr(v)
    with open(path, "w") as f:
        f.write("[\n" + ",\n".join("{" + ", ".join('"%s": %s' % (k, val(x)) for k, x in v.items())
                                     + "}" for v in volumes) + "\n]\n")


def test_volumes_put_drop_and_offline_equality(client, dungeon, workdir):
    """level.put with volumes, volume.put (a move), volume.drop: after each, every tile is
    byte for byte `onepath bake --volumes` of the same set, and changes.since lists the
    tiles whose bytes changed."""
    level = "vols"
    # On the floor at y 10.2 around (10..19, 0..4) and (10..16, -38..-35).
    door = onepath.box("door", [11.0, 9.0, 1.0], [14.0, 13.0, 3.0], mode="obstacle")
    pool = onepath.cylinder("pool", [15.0, 2.0], 1.5, [9.0, 12.0], area=7)
    ramp = onepath.prism("ramp", [[12.0, -37.0], [15.0, -37.0], [13.5, -35.5]], [9.0, 12.0],
                         mode="obstacle", area=9)
    m = onepath.mesh("dungeon.obj", dungeon["verts"], dungeon["tris"])

    def check(vols, tag):
        path = os.path.join(workdir, "%s.json" % tag)
        _volumes_file(path, vols)
        _, files = support.bake(dungeon["path"], os.path.join(workdir, "bake-" + tag),
                                volumes=path)
        assert _all_tiles(client, level) == files
        info = client.level_info(level)
        assert [v["name"] for v in info["volumes"]] == sorted(v["name"] for v in vols)
        return files

    r = client.level_put(level, [m], volumes=[ramp, door])
    assert r == {"version": 1, "changed": True}
    # The same set in another order changes nothing (protocol.md §6).
    assert client.level_put(level, [m], volumes=[door, ramp]) == {"version": 1, "changed": False}
    before = check([door, ramp], "v1")
    assert before != dungeon["files"]  # the volumes reach the floor
    info = client.level_info(level)
    assert info["volumes"][0] == {"name": "door", "mode": "obstacle", "area": 0, "kind": "box",
                                  "bmin": [11.0, 9.0, 1.0], "bmax": [14.0, 13.0, 3.0]}
    assert client.volume_put(level, pool) == {"version": 2, "changed": True}
    assert client.volume_put(level, pool) == {"version": 2, "changed": False}
    after = check([door, ramp, pool], "v2")
    assert after != before
    ch = client.changes_since(level, 1)
    assert {(c["tx"], c["tz"]): c["hashes"] for c in ch["tiles"]} == _expected_changes(before,
                                                                                      after)
    # A move is one call.
    moved = onepath.box("door", [16.0, 9.0, 1.0], [18.5, 13.0, 3.0], mode="obstacle")
    assert client.volume_put(level, moved) == {"version": 3, "changed": True}
    assert check([moved, ramp, pool], "v3") != after
    assert client.volume_drop(level, "ramp") == {"version": 4, "changed": True}
    assert client.volume_drop(level, "ramp") == {"version": 4, "changed": False}
    check([moved, pool], "v4")
    # A bad volume is refused, naming the field; nothing changes.
    with pytest.raises(onepath.OutOfRange) as ex:
        client.volume_put(level, onepath.cylinder("pool", [0.0, 0.0], 0.0, [0.0, 1.0], area=3))
    assert "radius" in str(ex.value)
    with pytest.raises(onepath.InvalidArgument) as ex:
        client.volume_put(level, dict(pool, y=[float("nan"), 1.0]))
    assert "y[0]" in str(ex.value)
    with pytest.raises(onepath.NotFound):
        client.volume_put("no-such-level", pool)
    assert client.level_info(level)["version"] == 4
    assert client.stats()["rebuild_cache"]["hits"] > 0


def test_bake_info_and_drop(client, dungeon):
    client.level_put("baked", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])],
                     {"tile_size": 19.2, "partition": "monotone", "cell_size": 0.3})
    r = client.level_bake("baked")
    assert isinstance(r["started"], bool)
    deadline = time.monotonic() + 120
    while True:
        info = client.level_info("baked")
        if info["bake"]["done"] >= info["bake"]["total"] and not info["bake"]["running"]:
            break
        assert time.monotonic() < deadline, info
        time.sleep(0.1)
    assert info["tiles_built"] == info["tiles_total"] == info["bake"]["total"]
    assert len(info["bounds"]) == 6 and info["memory"] > 0
    assert client.level_bake("baked") == {"started": False}  # complete already
    assert client.level_drop("baked") == {"dropped": True}
    assert client.level_drop("baked") == {"dropped": False}
    with pytest.raises(onepath.NotFound):
        client.level_info("baked")


def test_settings_reach_the_build(client, dungeon, workdir):
    sets = {"partition": "layers", "max_verts_per_poly": 4, "detail_sample_distance": 0}
    client.level_put("layered", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])], sets)
    summary, files = support.bake(dungeon["path"], os.path.join(workdir, "bake-layered"),
                                  ["%s=%s" % kv for kv in sets.items()])
    tiles = _all_tiles(client, "layered")
    assert tiles == files
    assert all(onepath.decode_tile(b).nvp == 4 for b in tiles.values())


def test_error_replies_carry_code_name_and_message(client, dungeon):
    with pytest.raises(onepath.NotFound) as e:
        client.tile_get("no-such-level", 0, 0)
    assert (e.value.code, e.value.name) == (8, "OP_ENOTFOUND")
    assert "no-such-level" in e.value.message and e.value.method == "tile.get"
    assert isinstance(e.value, onepath.Error) and isinstance(e.value, LookupError)

    with pytest.raises(onepath.InvalidArgument) as e:
        client.level_put("bad/name", [])
    assert (e.value.code, e.value.name) == (1, "OP_EINVAL") and "level name" in e.value.message

    client.level_put("errs", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])])
    tx0, tz0, tx1, tz1 = client.level_info("errs")["tiles"]
    with pytest.raises(onepath.OutOfRange) as e:
        client.tile_get("errs", tx1 + 5, tz0)
    assert e.value.code == 2 and e.value.name == "OP_ERANGE"
    with pytest.raises(onepath.OutOfRange):
        client.changes_since("errs", 99)  # above the level's version
    with pytest.raises(onepath.InvalidArgument) as e:
        client.level_put("errs", [], {"no_such_setting": 1})
    assert "no_such_setting" in e.value.message
    with pytest.raises(onepath.OutOfRange) as e:
        client.level_put("errs", [], {"cell_size": -1})
    assert "cell_size" in e.value.message
    with pytest.raises(onepath.OutOfRange):  # a triangle index past the vertices
        client.mesh_put("errs", "broken", [0, 0, 0, 1, 0, 0, 0, 0, 1], [0, 1, 3])
    with pytest.raises(onepath.NotFound):
        client.mesh_put("missing-level", "m", [0, 0, 0, 1, 0, 0, 0, 0, 1], [0, 1, 2])
    with pytest.raises(onepath.ProtocolError) as e:
        client.call("no.such.method")
    assert e.value.code == 6 and e.value.name == "OP_EPROTO"
    with pytest.raises(onepath.ProtocolError) as e:  # params are strict
        client.call("level.info", {"level": "errs", "typo": 1})
    assert "typo" in e.value.message
    # Nothing refused changed the level.
    assert client.level_info("errs")["version"] == 1


def test_client_side_checks():
    with pytest.raises(onepath.InvalidArgument):
        onepath.Client("bogus://nowhere")
    with onepath.Client("ipc:///nonexistent-onepath/none.sock", timeout=0.3) as c:
        t0 = time.monotonic()
        with pytest.raises(onepath.Timeout) as e:
            c.ping()
        assert time.monotonic() - t0 < 5
        assert (e.value.code, e.value.name) == (9, "OP_ETIMEDOUT")
        assert isinstance(e.value, TimeoutError)
        # A long poll's timeout must exceed its wait (the resend rule).
        with pytest.raises(onepath.InvalidArgument):
            c.changes_since("x", 0, wait=2.0, timeout=1.0)
        with pytest.raises(onepath.InvalidArgument):
            c.changes_since("x", 0, wait=601)
    with pytest.raises(onepath.InvalidArgument):
        onepath.mesh("m", [0.0, 1.0], [0, 1, 2])  # not whole triples


def test_threads_share_one_client(client, dungeon):
    client.level_put("shared", [onepath.mesh("m", dungeon["verts"], dungeon["tris"])])
    keys = sorted(support.by_tile(dungeon["files"]))
    errors, got = [], {}

    def worker(part):
        try:
            for tx, tz in part:
                got[(tx, tz)] = [l["blob"] for l in client.tile_get("shared", tx, tz)["layers"]]
        except Exception as e:  # reported below
            errors.append(e)

    ths = [threading.Thread(target=worker, args=(keys[i::4],)) for i in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(120)
    assert not errors
    assert got == support.by_tile(dungeon["files"])


def test_stats(client):
    with pytest.raises(onepath.NotFound):
        client.tile_get("not-there", 0, 0)
    s = client.stats()
    for k in ("uptime_ms", "levels", "memory", "cache", "builds", "requests", "errors",
              "latency_us"):
        assert k in s
    assert s["requests"]["ping"] >= 1 and s["errors"].get("tile.get", 0) >= 1
    assert set(s["latency_us"]) == {"p50", "p90", "p99", "max"}


def test_wire_bytes_of_protocol_md(daemon):
    """protocol.md §1.5 and its example, over a plain Unix socket (no nng at all)."""
    import socket
    import struct

    import msgpack

    path = daemon[0][len("ipc://"):]

    def read(s, n):
        b = b""
        while len(b) < n:
            chunk = s.recv(n - len(b))
            if not chunk:
                raise ConnectionError("closed after %d bytes" % len(b))
            b += chunk
        return b

    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(path)
        s.sendall(bytes.fromhex("00 53 50 00 00 30 00 00"))  # REQ0
        assert read(s, 8) == bytes.fromhex("00 53 50 00 00 31 00 00")  # REP0
        ping = bytes.fromhex("83 a1 76 01 a2 69 64 01 a6 6d 65 74 68 6f 64 a4 70 69 6e 67")
        assert msgpack.unpackb(ping) == {"v": 1, "id": 1, "method": "ping"}
        s.sendall(bytes.fromhex("01 00 00 00 00 00 00 00 18 80 00 00 01") + ping)
        assert read(s, 1) == b"\x01"
        (n,) = struct.unpack(">Q", read(s, 8))
        body = read(s, n)
        assert body[:4] == bytes.fromhex("80 00 00 01")
        assert body[4:24] == bytes.fromhex(
            "84 a1 76 01 a2 69 64 01 a2 6f 6b c3 a6 72 65 73 75 6c 74 83")
        reply = msgpack.unpackb(body[4:])
        assert reply["ok"] is True and reply["result"]["protocol"] == 1

    with socket.socket(socket.AF_UNIX) as s:  # a peer that is not REQ0 is refused
        s.settimeout(30)
        s.connect(path)
        s.sendall(bytes.fromhex("00 53 50 00 00 31 00 00"))
        with pytest.raises(ConnectionError):  # closed, not left hanging (a timeout fails)
            read(s, 8)
            s.sendall(bytes.fromhex("01 00 00 00 00 00 00 00 18 80 00 00 01") + ping)
            read(s, 1)
