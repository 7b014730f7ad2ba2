"""A client of onepathd (docs/spec/protocol.md): nng REQ/REP through ctypes, msgpack
through python3-msgpack.

Client(url) dials tcp://HOST:PORT or ipc:///PATH (in the background: the daemon may
start later). Each RPC method has one method here, named after it (level.put ->
level_put), taking the method's params as arguments and returning its result map as a
dict (str keys, bin values as bytes). Every method takes timeout= (seconds, default the
client's); an error reply raises the exception of its code (onepath.errors).

Adding a method is a few lines: one `call` with its params, e.g.

    def level_drop(self, level, *, timeout=None):
        return self.call("level.drop", _params(level=level), timeout=timeout)

Thread-safe: every call opens its own nng context, so calls from several threads are in
flight at once on one connection.

A daemon started with --token-file wants its token in every request (protocol.md §2.7):
Client(url, token_file="/etc/onepath/token") or Client(url, token="..."); without one it
answers PermissionDenied (OP_EPERM). read_token_file(path) reads such a file by the
daemon's rules.
"""

import array
import errno
import itertools
import math
import os
import stat
import sys
import time

import msgpack

from . import _nng
from .errors import (Error, InputOutputError, InvalidArgument, LimitError, OutOfMemory,
                     PermissionDenied, ProtocolError, Timeout, error_for)

PROTOCOL_VERSION = 1
MAX_WAIT_MS = 600000  # changes.since and tile.range wait_ms bound (protocol.md §4)
# Added to a long poll's wait when the caller gives no timeout: the reply also waits for
# the rebuild of the edits so far (protocol.md §4.3).
LONG_POLL_MARGIN = 30.0


TOKEN_MIN, TOKEN_MAX = 16, 256  # bytes (proto/include/onepath/token.h)


def check_token(token, what="client"):
    """token as bytes, if it is a valid token (16..256 printable ASCII bytes, no space);
    else InvalidArgument."""
    if isinstance(token, str):
        try:
            token = token.encode("ascii")
        except UnicodeEncodeError:
            raise InvalidArgument("%s: the token is not ASCII" % what) from None
    if not isinstance(token, bytes):
        raise InvalidArgument("%s: the token must be str or bytes" % what)
    if not TOKEN_MIN <= len(token) <= TOKEN_MAX:
        raise InvalidArgument("%s: the token has %d bytes, not %d..%d"
                              % (what, len(token), TOKEN_MIN, TOKEN_MAX))
    for i, c in enumerate(token):
        if not 0x21 <= c <= 0x7E:
            raise InvalidArgument("%s: the token has byte 0x%02x at %d (allowed: printable "
                                  "ASCII, no space)" % (what, c, i))
    return token


def read_token_file(path):
    """The token in path, read as onepathd reads its --token-file: a regular file (a
    symbolic link is not followed, else InvalidArgument) that the group and others cannot
    access (0600 or stricter, else PermissionDenied naming it), not empty (InvalidArgument),
    at most 258 bytes (else LimitError), the token less one trailing "\n" or "\r\n".
    No error message quotes the token."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InvalidArgument("token file %s: is a symbolic link" % path) from None
        raise InputOutputError("token file %s: %s" % (path, e.strerror)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InvalidArgument("token file %s is not a regular file" % path)
        if st.st_mode & 0o077:
            raise PermissionDenied(
                "token file %s has mode %04o: the group or others may access it; it must be "
                "0600 or stricter (chmod 600 %s)" % (path, stat.S_IMODE(st.st_mode), path))
        data = b""
        while len(data) < TOKEN_MAX + 3:
            chunk = os.read(fd, TOKEN_MAX + 3 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) >= TOKEN_MAX + 3:
        raise LimitError("token file %s is longer than %d bytes (a token is %d..%d bytes)"
                         % (path, TOKEN_MAX + 2, TOKEN_MIN, TOKEN_MAX))
    if not data:
        raise InvalidArgument("token file %s is empty (a token is %d..%d bytes)"
                              % (path, TOKEN_MIN, TOKEN_MAX))
    # One trailing newline ("\n" or "\r\n") is not part of the token; nothing else is
    # stripped (a second newline or a lone "\r" is refused by check_token).
    if data.endswith(b"\r\n"):
        data = data[:-2]
    elif data.endswith(b"\n"):
        data = data[:-1]
    return check_token(data, "token file %s" % path)


def _params(**kw):
    """A params map without the optional arguments left as None."""
    return {k: v for k, v in kw.items() if v is not None}


def _flat(values):
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(v)
        else:
            out.append(v)
    return out


def _le32_bin(values, typecode, what):
    """A bin of little-endian 32-bit values (protocol.md §2.4) from bytes (taken as
    already packed), a numpy array, or a sequence of numbers or of triples."""
    if isinstance(values, (bytes, bytearray, memoryview)):
        return bytes(values)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(values, np.ndarray):
        return values.astype("<f4" if typecode == "f" else "<i4").tobytes()
    a = array.array(typecode)
    assert a.itemsize == 4
    try:
        a.extend(_flat(values))
    except (TypeError, OverflowError) as e:
        raise InvalidArgument("%s: %s" % (what, e)) from None
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()


def mesh(name, verts, tris, areas=None):
    """One mesh of a level as level.put and mesh.put send it: verts (x, y, z floats, sent
    as float32), tris (vertex index triples, int32), areas (None or one id 0..63 per
    triangle). Each may be flat or a sequence of triples, bytes already packed
    little-endian, or a numpy array."""
    v = _le32_bin(verts, "f", "mesh %r verts" % name)
    t = _le32_bin(tris, "i", "mesh %r tris" % name)
    if len(v) % 12 or len(t) % 12:
        raise InvalidArgument("mesh %r: verts and tris must be whole triples" % name)
    m = {"name": name, "verts": v, "tris": t}
    if areas is not None:
        try:
            m["areas"] = bytes(areas)
        except (TypeError, ValueError) as e:
            raise InvalidArgument("mesh %r areas: %s" % (name, e)) from None
    return m


def _volume(name, kind, mode, area, shape):
    if mode not in ("area", "obstacle"):
        raise InvalidArgument("volume %r: mode must be 'area' or 'obstacle'" % (name,))
    v = {"name": name, "mode": mode, "kind": kind}
    if area is not None:
        v["area"] = int(area)
    elif mode == "area":
        raise InvalidArgument("volume %r: an area volume needs an area (0..63)" % (name,))
    for k, val in shape.items():
        v[k] = [float(x) for x in val] if isinstance(val, (list, tuple)) else float(val)
    return v


def box(name, bmin, bmax, mode="area", area=None):
    """A box volume map (protocol.md §3.5): bmin, bmax are [x, y, z]. area defaults to
    0 for an obstacle and must be given for an area volume."""
    return _volume(name, "box", mode, area, {"bmin": bmin, "bmax": bmax})


def cylinder(name, center, radius, y, mode="area", area=None):
    """A cylinder volume map: center [x, z], radius, y [ymin, ymax]."""
    return _volume(name, "cylinder", mode, area, {"center": center, "radius": radius, "y": y})


def prism(name, points, y, mode="area", area=None):
    """A convex prism volume map: points [[x, z], ...] counter-clockwise (3..64), y
    [ymin, ymax]."""
    v = _volume(name, "prism", mode, area, {"y": y})
    v["points"] = [[float(x), float(z)] for x, z in points]
    return v


def _as_mesh(m):
    if isinstance(m, dict):
        return mesh(m["name"], m["verts"], m["tris"], m.get("areas"))
    return mesh(*m)


class Client:
    """A connection to one onepathd. timeout: the default per request, in seconds."""

    def __init__(self, url, timeout=30.0, libnng=None, token=None, token_file=None):
        if not timeout or timeout <= 0:
            raise InvalidArgument("timeout must be > 0 seconds")
        if token is not None and token_file is not None:
            raise InvalidArgument("give token or token_file, not both")
        # Read before dialing: a bad token file fails here, with nothing to close.
        self._token = (check_token(token) if token is not None else
                       read_token_file(token_file) if token_file is not None else None)
        self.url = url
        self.timeout = float(timeout)
        self._ids = itertools.count(1)
        self._max_message = None  # the daemon's --max-message, asked once (call())
        try:
            self._sock = _nng.ReqSocket(url, _nng.load(libnng) if libnng else None)
        except _nng.NngError as e:
            bad = e.rv in (_nng.NNG_EADDRINVAL, _nng.NNG_ENOTSUP, _nng.NNG_EINVAL)
            cls = InvalidArgument if bad else InputOutputError
            raise cls("client: %s" % e) from None

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- the transport ----

    def call(self, method, params=None, *, timeout=None):
        """Sends one request and returns its result map; raises the error reply's
        exception. params: a dict (omitted when None)."""
        t = self.timeout if timeout is None else float(timeout)
        if not t > 0:
            raise InvalidArgument("timeout must be > 0 seconds")
        rid = next(self._ids)
        req = {"v": PROTOCOL_VERSION, "id": rid, "method": method}
        if self._token is not None:
            req["token"] = self._token.decode("ascii")
        if params is not None:
            req["params"] = params
        data = msgpack.packb(req, use_bin_type=True)
        deadline = time.monotonic() + t
        self._check_size(method, len(data), t)
        t = deadline - time.monotonic()
        if t <= 0:
            raise Timeout("client: %s: timed out asking the daemon's limits" % method,
                          method=method)
        try:
            raw = self._sock.request(data, max(1, int(math.ceil(t * 1000))))
        except _nng.NngError as e:
            if e.rv == _nng.NNG_ETIMEDOUT:
                raise Timeout("client: %s %s: %s" % (method, e.what, e), method=method) from None
            if e.rv == _nng.NNG_ENOMEM:
                raise OutOfMemory("client: %s: %s" % (method, e), method=method) from None
            raise InputOutputError("client: %s: %s" % (method, e), method=method) from None
        return _reply(raw, rid, method)

    # A request larger than the daemon's --max-message is dropped with its connection,
    # unread, and resent on every reconnect until the timeout (protocol.md §1.3): refused
    # here, naming both sizes. The limit is asked once (a ping within the call's timeout),
    # only for a request past 1024 bytes (the smallest --max-message) with nng's 4-byte id.
    _REQ_HEADER = 4
    _MIN_MAX_MESSAGE = 1024

    def _check_size(self, method, n, timeout):
        wire = n + self._REQ_HEADER
        if wire <= self._MIN_MAX_MESSAGE:
            return
        if self._max_message is None:
            try:
                lim = self.call("ping", timeout=timeout)["limits"]["max_message"]
            except Timeout:
                raise
            except (Error, KeyError, TypeError):
                return  # the daemon could not say: send, as before
            if isinstance(lim, int) and lim >= self._MIN_MAX_MESSAGE:
                self._max_message = lim
        if self._max_message is not None and wire > self._max_message:
            raise LimitError(
                "client: %s: the request is %d bytes (with nng's 4-byte header), more than "
                "the daemon's --max-message of %d bytes: not sent (the daemon would drop it "
                "unread)" % (self.url, wire, self._max_message), method=method)

    # ---- one method per RPC method (protocol.md §4) ----

    def ping(self, *, timeout=None):
        """version, protocol, limits."""
        return self.call("ping", timeout=timeout)

    def level_put(self, level, meshes, settings=None, volumes=None, *, timeout=None):
        """Creates or replaces a level. meshes: mesh() dicts, dicts with name, verts,
        tris (and areas), or (name, verts, tris[, areas]) tuples. settings: a dict of
        setting names to numbers, bools or str (protocol.md §3.3). volumes: volume maps
        (box(), cylinder(), prism(), or dicts of protocol.md §3.5); None: none.
        -> version, changed."""
        params = {"level": level, "settings": dict(settings or {}),
                  "meshes": [_as_mesh(m) for m in meshes]}
        if volumes is not None:
            params["volumes"] = [dict(v) for v in volumes]
        return self.call("level.put", params, timeout=timeout)

    def level_drop(self, level, *, timeout=None):
        """-> dropped."""
        return self.call("level.drop", _params(level=level), timeout=timeout)

    def level_list(self, *, timeout=None):
        """-> levels: [{level, version}] sorted by name."""
        return self.call("level.list", timeout=timeout)

    def level_info(self, level, *, timeout=None):
        """-> version, bounds, tiles [tx0, tz0, tx1, tz1], grid_origin [x, z], tile_size,
        tiles_total, tiles_built, memory, bake {running, done, total}, volumes (volume maps
        in name order)."""
        return self.call("level.info", _params(level=level), timeout=timeout)

    def mesh_put(self, level, name, verts, tris, areas=None, *, timeout=None):
        """Adds or replaces one mesh of a level. -> version, changed."""
        m = mesh(name, verts, tris, areas)
        return self.call("mesh.put", dict(m, level=level), timeout=timeout)

    def mesh_drop(self, level, name, *, timeout=None):
        """-> version, changed."""
        return self.call("mesh.drop", _params(level=level, name=name), timeout=timeout)

    def volume_put(self, level, volume, *, timeout=None):
        """Adds a volume or replaces the volume of its name (a move is one call).
        volume: box(), cylinder(), prism() or a dict of protocol.md §3.5.
        -> version, changed."""
        return self.call("volume.put", {"level": level, "volume": dict(volume)},
                         timeout=timeout)

    def volume_drop(self, level, name, *, timeout=None):
        """-> version, changed (false when there was no such volume)."""
        return self.call("volume.drop", _params(level=level, name=name), timeout=timeout)

    def tile_get(self, level, tx, tz, *, format=None, timeout=None):
        """-> version, tx, tz, layers: [{layer, hash, blob}] (decode with decode_tile).
        format="detour" (protocol.md §4.2b): -> version, tx, tz, format, hashes (of the
        native layers), data (the Detour tile data dtNavMesh::addTile loads, bytes; None
        when the tile has no layers)."""
        return self.call("tile.get", _params(level=level, tx=tx, tz=tz, format=format),
                         timeout=timeout)

    def tile_range(self, level, tx0, tz0, tx1, tz1, *, after=None, max_bytes=None,
                   format=None, wait=0.0, timeout=None):
        """One page of tiles in row-major order. -> tiles, next ([tx, tz] to pass as
        after, or None when done). format as tile_get. wait (seconds, up to 600): a
        waiting page (protocol.md §4 rule 2a), which waits that long after the request
        for the builds of its tiles and so carries many tiles of a level not built yet;
        keep it well under the timeout. A daemon that does not know wait_ms is asked
        again without it."""
        wait_ms = int(round(float(wait) * 1000))
        if not 0 <= wait_ms <= MAX_WAIT_MS:
            raise InvalidArgument("tile_range: wait %r s outside 0..600" % wait)
        params = _params(level=level, tx0=tx0, tz0=tz0, tx1=tx1, tz1=tz1,
                         after=list(after) if after is not None else None,
                         max_bytes=max_bytes, format=format, wait_ms=wait_ms or None)
        try:
            return self.call("tile.range", params, timeout=timeout)
        except ProtocolError as e:
            if "wait_ms" not in params or "unknown key 'wait_ms'" not in e.message:
                raise
        del params["wait_ms"]
        return self.call("tile.range", params, timeout=timeout)

    def level_bake(self, level, *, timeout=None):
        """Builds every tile not cached, in the background. -> started."""
        return self.call("level.bake", _params(level=level), timeout=timeout)

    def changes_since(self, level, version, *, wait=0.0, timeout=None):
        """The tiles whose bytes changed after version. wait (seconds, up to 600): how
        long the daemon may hold the request when nothing changed (a long poll). The
        request's timeout, and with it the REQ resend time, must exceed the wait
        (protocol.md §1.4); it defaults to the wait plus LONG_POLL_MARGIN.
        -> version, tiles: [{tx, tz, hashes}]."""
        wait_ms = int(round(float(wait) * 1000))
        if not 0 <= wait_ms <= MAX_WAIT_MS:
            raise InvalidArgument("changes_since: wait %r s outside 0..600" % wait)
        if timeout is None:
            timeout = wait_ms / 1000.0 + max(self.timeout, LONG_POLL_MARGIN)
        elif float(timeout) * 1000 <= wait_ms:
            raise InvalidArgument("changes_since: timeout %r s must exceed the wait %r s"
                                  % (timeout, wait))
        return self.call("changes.since",
                         _params(level=level, version=version, wait_ms=wait_ms or None),
                         timeout=timeout)

    def stats(self, *, timeout=None):
        """uptime_ms, levels, memory, cache, builds, requests, errors, latency_us."""
        return self.call("stats", timeout=timeout)

    # ---- conveniences over the methods ----

    def tiles(self, level, rect=None, *, max_bytes=None, format=None, timeout=None):
        """Every tile of rect (tx0, tz0, tx1, tz1; default the level's range) in
        row-major order, one tile.get-shaped dict at a time, paging with tile.range
        (waiting pages: half the timeout, at most 10 s, as libonepath-client's fetch)."""
        if rect is None:
            rect = self.level_info(level, timeout=timeout)["tiles"]
            if rect[0] > rect[2] or rect[1] > rect[3]:
                return
        t = self.timeout if timeout is None else float(timeout)
        wait = min(t / 2, 10.0)
        after = None
        while True:
            page = self.tile_range(level, *rect, after=after, max_bytes=max_bytes,
                                   format=format, wait=wait, timeout=timeout)
            yield from page["tiles"]
            after = page["next"]
            if after is None:
                return


def _reply(raw, rid, method):
    """The result map of a reply (protocol.md §2.2), or the error reply's exception."""
    try:
        rep = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except Exception as e:  # msgpack raises several types for malformed input
        raise ProtocolError("client: %s: malformed reply: %s" % (method, e),
                            method=method) from None
    if not isinstance(rep, dict) or rep.get("v") != PROTOCOL_VERSION:
        raise ProtocolError("client: %s: reply is not a version 1 map" % method, method=method)
    if rep.get("id") != rid:
        raise ProtocolError("client: %s: reply id %r, request id %d" % (method, rep.get("id"), rid),
                            method=method)
    ok = rep.get("ok")
    if ok is True and isinstance(rep.get("result"), dict):
        return rep["result"]
    err = rep.get("error")
    if ok is False and isinstance(err, dict) and isinstance(err.get("code"), int):
        raise error_for(err["code"], str(err.get("message", "")), name=err.get("name"),
                        method=method)
    raise ProtocolError("client: %s: reply has neither a result nor an error" % method,
                        method=method)
