"""What the HTTP, metrics and viewer tests share: onepathd started as a child with --http
or --metrics on an ephemeral loopback port (read back from its log), the onepath CLI,
raw HTTP requests, a PNG reader and a decoder of tile blobs (the Python client's, which
is the standard library only)."""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

BIN = os.environ.get("ONEPATH_BIN_DIR", "build/bin")
SHARED = os.environ.get("ONEPATH_SHARED_DIR", "../shared")
ARTEFACTS = os.environ.get("ONEPATH_ARTEFACTS", tempfile.gettempdir())
sys.path.insert(0, os.environ.get("ONEPATH_PYTHON_CLIENT", "client/python"))


class Daemon:
    def __init__(self, *args, wait_ready=True):
        self.dir = tempfile.mkdtemp(prefix="onepath-http-test-")
        self.url = f"ipc://{self.dir}/onepathd.sock"
        self.log = os.path.join(self.dir, "onepathd.log")
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "onepathd"), "--listen", self.url, "--log", self.log,
             "--no-fsync", *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        self.http_port = self.metrics_port = None
        if wait_ready:
            self._wait_ready()

    def _wait_ready(self):
        deadline = time.time() + 30
        while time.time() < deadline:
            text = self.log_text()
            if "OP-READY" in text:
                for line in text.splitlines():
                    if line.startswith("{"):  # --log-format json
                        x = json.loads(line)
                        line = f"{x.get('event', '')} {x.get('message', '')}"
                    for ev in ("OP-HTTP", "OP-METRICS"):
                        if f"{ev} http://" in line:
                            port = int(line.split(f"{ev} http://")[1].split("/")[0].rsplit(":", 1)[1])
                            if ev == "OP-HTTP":
                                self.http_port = port
                            else:
                                self.metrics_port = port
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"onepathd exited {self.proc.returncode}: {self.log_text()}")
            time.sleep(0.05)
        raise TimeoutError("onepathd did not start")

    def log_text(self):
        if getattr(self, "final_log", None) is not None:
            return self.final_log
        try:
            with open(self.log, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def cli(self, *args, check=True):
        r = subprocess.run([os.path.join(BIN, "onepath"), *args], capture_output=True, text=True,
                           timeout=300)
        if check and r.returncode != 0:
            raise RuntimeError(f"onepath {' '.join(args)}: {r.returncode}: {r.stderr}")
        return r

    def put(self, level, name, *extra):
        return self.cli("put", level, "--url", self.url, "--level", name, "--timeout", "120000",
                        *extra)

    def alive(self):
        return self.proc.poll() is None and self.cli("remote", "ping", "--url", self.url,
                                                     check=False).returncode == 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()
        self.final_log = self.log_text()  # log_text() after stop: what it wrote
        subprocess.run(["rm", "-rf", self.dir], check=False)
        return self.proc.returncode


def http(port, raw, timeout=10):
    """Sends raw request bytes; returns (status or None when closed without one, headers,
    body)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        while True:
            try:
                chunk = s.recv(1 << 16)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            data += chunk
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip())
                if len(rest) >= length:
                    break
    finally:
        s.close()
    if not data:
        return None, {}, b""
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, rest


def get(port, path, method="GET", headers=None, body=b""):
    h = {"Host": f"127.0.0.1:{port}", "Connection": "close"}
    h.update(headers or {})
    if body:
        h["Content-Length"] = str(len(body))
    raw = f"{method} {path} HTTP/1.1\r\n".encode() + b"".join(
        f"{k}: {v}\r\n".encode() for k, v in h.items()) + b"\r\n" + body
    return http(port, raw)


# ---- a minimal msgpack for POST /rpc (the protocol's requests and replies) ----

def mp_pack(v):
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return (bytes([0xa0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(v, (list, tuple)):
        return bytes([0x90 | len(v)]) + b"".join(mp_pack(x) for x in v)
    if isinstance(v, dict):
        return bytes([0x80 | len(v)]) + b"".join(mp_pack(k) + mp_pack(x) for k, x in v.items())
    raise TypeError(v)


def mp_unpack(b):
    """Decodes one msgpack value (every type a reply may hold); bin as bytes."""
    pos = 0

    def take(n):
        nonlocal pos
        if pos + n > len(b):
            raise ValueError("msgpack: truncated")
        out = b[pos:pos + n]
        pos += n
        return out

    def val():
        t = take(1)[0]
        if t < 0x80:
            return t
        if t >= 0xe0:
            return t - 256
        if 0x80 <= t <= 0x8f:
            return {val(): val() for _ in range(t & 15)}
        if 0x90 <= t <= 0x9f:
            return [val() for _ in range(t & 15)]
        if 0xa0 <= t <= 0xbf:
            return take(t & 31).decode()
        simple = {0xc0: None, 0xc2: False, 0xc3: True}
        if t in simple:
            return simple[t]
        ints = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h",
                0xd2: ">i", 0xd3: ">q", 0xca: ">f", 0xcb: ">d"}
        if t in ints:
            f = ints[t]
            return struct.unpack(f, take(struct.calcsize(f)))[0]
        lens = {0xc4: (">B", "bin"), 0xc5: (">H", "bin"), 0xc6: (">I", "bin"),
                0xd9: (">B", "str"), 0xda: (">H", "str"), 0xdb: (">I", "str"),
                0xdc: (">H", "arr"), 0xdd: (">I", "arr"), 0xde: (">H", "map"),
                0xdf: (">I", "map")}
        if t in lens:
            f, kind = lens[t]
            n = struct.unpack(f, take(struct.calcsize(f)))[0]
            if kind == "bin":
                return bytes(take(n))
            if kind == "str":
                return take(n).decode()
            if kind == "arr":
                return [val() for _ in range(n)]
            return {val(): val() for _ in range(n)}
        raise ValueError(f"msgpack: type {t:#x}")

    v = val()
    if pos != len(b):
        raise ValueError("msgpack: trailing bytes")
    return v


def rpc(port, method, params, headers=None, token=None):
    """POST /rpc (with `token` when given, protocol §2.7); returns (HTTP status, reply map,
    or the body when it is not msgpack)."""
    req = {"v": 1, "id": 7, "method": method, "params": params}
    if token is not None:
        req["token"] = token
    body = mp_pack(req)
    h = {"Content-Type": "application/msgpack"}
    h.update(headers or {})
    status, hdrs, data = get(port, "/rpc", "POST", h, body)
    return status, (mp_unpack(data) if hdrs.get("content-type") == "application/msgpack" else data)


# ---- PNG (8-bit RGB/RGBA, the screenshots Chromium writes) ----

def png_pixels(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]
