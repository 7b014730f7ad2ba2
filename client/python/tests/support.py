"""Helpers of the Python client's tests: the built programs, an exact OBJ reader, OBJ
writing and offline bakes. Nothing here uses the onepath package under test."""

import json
import os
import struct
import subprocess
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def bin_dir():
    d = os.environ.get("ONEPATH_BIN_DIR") or os.path.join(SOURCE, "build", "bin")
    for prog in ("onepath", "onepathd"):
        if not os.access(os.path.join(d, prog), os.X_OK):
            raise RuntimeError("no %s in %s: set ONEPATH_BIN_DIR to the build's bin/" % (prog, d))
    return d


def tool(*args, **kw):
    """Runs the built `onepath` with args; returns its stdout (text)."""
    out = subprocess.run([os.path.join(bin_dir(), "onepath")] + [str(a) for a in args],
                         check=True, stdout=subprocess.PIPE, **kw)
    return out.stdout.decode()


def shared_level(name):
    d = os.environ.get("ONEPATH_SHARED_DIR") or os.path.join(SOURCE, "..", "shared")
    path = os.path.join(d, "levels", name)
    if not os.path.exists(path):
        raise RuntimeError("no %s: set ONEPATH_SHARED_DIR to the shared/ folder" % path)
    return path


def _f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _bits_f32(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def f32(text):
    """The decimal text rounded correctly to the nearest float32, ties to even, as the
    OBJ reader does (obj.h): float(text) rounds to double first, so the float32 nearest
    to that double may be off by one ulp; the exact rational decides between the
    neighbours."""
    q = Fraction(text)
    u = _f32_bits(float(text))
    best = None
    for cand in (u - 1, u, u + 1):
        if cand < 0 or (cand & 0x7FFFFFFF) >= 0x7F800000:
            continue
        v = _bits_f32(cand)
        if (v < 0) != (q < 0) and v != 0:
            continue
        d = abs(Fraction(v) - q)
        if best is None or d < best[0] or (d == best[0] and cand % 2 == 0):
            best = (d, cand, v)
    return best[2]


def read_obj(path):
    """(verts, tris) of an OBJ file as the onepath reader makes them: flat float32
    coordinates and fan-triangulated faces (0-based indices)."""
    verts, tris = [], []
    with open(path, "rb") as f:
        for raw in f:
            line = raw.split(b"#", 1)[0].replace(b"\r", b" ").split()
            if not line:
                continue
            if line[0] == b"v":
                verts.extend(f32(t.decode()) for t in line[1:4])
            elif line[0] == b"f":
                idx = []
                for c in line[1:]:
                    i = int(c.split(b"/")[0])
                    idx.append(i - 1 if i > 0 else len(verts) // 3 + i)
                for k in range(1, len(idx) - 1):
                    tris.extend((idx[0], idx[k], idx[k + 1]))
    return verts, tris


def write_obj(path, meshes):
    """Writes the soup of meshes [(verts, tris)], in the given order, as one OBJ: the
    soup a daemon level of these meshes (in name order) builds from. repr of a float32
    value read back as float32 is that value."""
    with open(path, "w") as f:
        base = 0
        for verts, tris in meshes:
            for i in range(0, len(verts), 3):
                f.write("v %r %r %r\n" % tuple(verts[i:i + 3]))
            for i in range(0, len(tris), 3):
                f.write("f %d %d %d\n" % tuple(base + t + 1 for t in tris[i:i + 3]))
            base += len(verts) // 3


def bake(level, out_dir, sets=(), volumes=None):
    """`onepath bake LEVEL --out DIR --json [--volumes FILE]`: (summary dict,
    {(tx, tz, layer): bytes}). volumes: a path to a volumes file (input-formats.md §6)."""
    args = ["bake", level, "--out", out_dir, "--json"]
    for s in sets:
        args += ["--set", s]
    if volumes:
        args += ["--volumes", volumes]
    summary = json.loads(tool(*args))
    files = {}
    for name in os.listdir(out_dir):
        if not (name.startswith("tile_") and name.endswith(".optile")):
            continue  # the bake's manifest (docs/spec/bake-output.md)
        tx, tz, layer = (int(x) for x in name[len("tile_"):-len(".optile")].split("_"))
        with open(os.path.join(out_dir, name), "rb") as f:
            files[(tx, tz, layer)] = f.read()
    return summary, files


def by_tile(files):
    """{(tx, tz): [blob of layer 0, 1, ...]} of a bake's files."""
    out = {}
    for (tx, tz, layer) in sorted(files, key=lambda k: k[2]):
        out.setdefault((tx, tz), []).append(files[(tx, tz, layer)])
    return out


def box(x0, z0, x1, z1, y0, y1):
    """A closed axis-aligned box as (verts, tris), faces outward (top faces up)."""
    v = []
    for y in (y0, y1):
        for x, z in ((x0, z0), (x1, z0), (x1, z1), (x0, z1)):
            v += [f32(repr(float(x))), f32(repr(float(y))), f32(repr(float(z)))]
    quads = [(4, 7, 6, 5), (0, 1, 2, 3), (0, 4, 5, 1), (1, 5, 6, 2), (2, 6, 7, 3), (3, 7, 4, 0)]
    t = []
    for a, b, c, d in quads:
        t += [a, b, c, a, c, d]
    return v, t
