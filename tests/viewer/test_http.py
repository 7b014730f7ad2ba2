"""onepathd --http against bad input (docs/spec/http.md §2, §4): every path that is not
one of the page's files gets 4xx and never a byte of a file outside the page's folder or
three.js's; methods other than GET/HEAD (files) and POST (/rpc) get 405; POST /rpc
answers the protocol's reads, refuses edits (403) unless --http-edit, and maps errors to
4xx; a non-loopback address is refused without --http-remote."""
import socket
import time
import json
import os
import subprocess
import tempfile
import unittest

from support import BIN, SHARED, Daemon, get, http, rpc

PASSWD = b"root:"  # the first bytes of /etc/passwd: must never be served


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("--http", "127.0.0.1:0")
        cls.port = cls.d.http_port
        cls.d.put("gen:stairs:16:1", "stairs")

    @classmethod
    def tearDownClass(cls):
        # A clean drain (exit 0; under ASan also no leak) after all the bad input.
        rc = cls.d.stop()
        if rc != 0:
            raise AssertionError(f"onepathd exited {rc}")

    def status(self, path, method="GET", **kw):
        st, _, body = get(self.port, path, method, **kw)
        self.assertNotIn(PASSWD, body, path)
        return st

    def test_files_served(self):
        for path, kind in (("/", "text/html"), ("/viewer.js", "text/javascript"),
                           ("/three/build/three.module.js", "text/javascript"),
                           ("/three/examples/jsm/controls/OrbitControls.js", "text/javascript"),
                           ("/viewer.json", "application/json")):
            st, h, body = get(self.port, path)
            self.assertEqual(st, 200, path)
            self.assertTrue(h["content-type"].startswith(kind), (path, h))
            self.assertGreater(len(body), 0, path)
        # HEAD: the headers of GET, no body.
        st, h, body = get(self.port, "/viewer.js", "HEAD")
        self.assertEqual((st, body), (200, b""))

    def test_unknown_paths(self):
        for path in ("/nope.html", "/three/nope.js", "/etc/passwd", "/a/b/c",
                     "/index.html/x", "/rpc/x", "/metrics"):
            self.assertEqual(self.status(path), 404, path)

    def test_traversal(self):
        for path in ("/../../../../etc/passwd", "/three/../../../../../etc/passwd",
                     "/three/build/../../../../../../etc/passwd", "/./index.html", "/.hidden",
                     "//etc/passwd", "/three//build/three.module.js", "/three/", "/viewer.js/", "/a\\..\\..\\etc\\passwd"):
            self.assertEqual(self.status(path), 400, path)

    def test_encoded_traversal(self):
        for path in ("/%2e%2e/%2e%2e/etc/passwd", "/three/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                     "/three/..%2f..%2f..%2fetc%2fpasswd", "/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
                     "/index%2ehtml", "/three/build/three.module.js%00.png", "/%252e%252e/etc"):
            self.assertEqual(self.status(path), 400, path)

    def test_absolute_and_odd_uris(self):
        for uri in ("http://127.0.0.1/etc/passwd", "*", "etc/passwd"):
            st = self.status(uri)
            self.assertIsNotNone(st, uri)
            self.assertTrue(400 <= st < 500, (uri, st))

    def test_link_out_of_the_tree(self):
        root = tempfile.mkdtemp(prefix="onepath-www-")
        try:
            with open(os.path.join(root, "index.html"), "w") as f:
                f.write("<!doctype html><title>t</title>")
            os.symlink("/etc/passwd", os.path.join(root, "passwd.html"))
            d = Daemon("--http", "127.0.0.1:0", "--http-root", root)
            try:
                st, _, body = get(d.http_port, "/passwd.html")
                self.assertEqual(st, 404)
                self.assertNotIn(PASSWD, body)
                self.assertEqual(get(d.http_port, "/")[0], 200)
            finally:
                d.stop()
        finally:
            subprocess.run(["rm", "-rf", root], check=False)

    def test_methods(self):
        for m in ("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "BREW"):
            self.assertEqual(self.status("/", m), 405, m)
            self.assertEqual(self.status("/rpc", m), 405, m)
        self.assertEqual(self.status("/rpc", "GET"), 405)
        self.assertEqual(self.status("/", "POST"), 405)
        st, h, _ = get(self.port, "/rpc")
        self.assertEqual(h.get("allow"), "POST")

    def test_huge_headers(self):
        # The front reads each request head with its own bound, 8160 bytes (http.md §1.4): a
        # longer head gets 431 with a text body, however it is long (one huge line or many
        # lines), and the daemon serves on. A head of exactly the bound still passes.
        for n in (9000, 70000, 1 << 20):
            raw = (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nX-Big: ".encode() +
                   b"a" * n + b"\r\n\r\n")
            st, _, body = http(self.port, raw)
            self.assertEqual(st, 431, n)
            self.assertIn(b"8160", body)
        raw = (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n".encode() +
               b"".join(b"X-H%d: v\r\n" % i for i in range(3000)) + b"\r\n")
        self.assertEqual(http(self.port, raw)[0], 431)
        head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nX-Pad: ".encode()
        fit = head + b"a" * (8160 - len(head) - 4) + b"\r\n\r\n"
        self.assertEqual(len(fit), 8160)
        self.assertEqual(http(self.port, fit)[0], 200)
        self.assertEqual(http(self.port, fit[:-4] + b"a\r\n\r\n")[0], 431)
        self.assertEqual(get(self.port, "/")[0], 200)
        self.assertTrue(self.d.alive())

    def test_slow_head(self):
        # A head that does not arrive within 10 s gets 408 (a client cannot hold a
        # connection open by trickling its head).
        s = socket.create_connection(("127.0.0.1", self.port), timeout=20)
        try:
            s.sendall(b"GET / HTTP/1.1\r\n")
            t0 = time.monotonic()
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            took = time.monotonic() - t0
        finally:
            s.close()
        self.assertTrue(data.startswith(b"HTTP/1.1 408 "), data[:40])
        self.assertGreater(took, 8)
        self.assertLess(took, 15)
        self.assertEqual(get(self.port, "/")[0], 200)

    def test_keepalive_heads_each_checked(self):
        # Every request passes the front: the response says Connection: close, so a second
        # head on the same connection is never handed on unchecked.
        st, h, _ = get(self.port, "/", headers={"Connection": "keep-alive"})
        self.assertEqual(st, 200)
        self.assertEqual(h.get("connection"), "close")

    def test_bad_request_lines(self):
        # nng answers another HTTP version 505, a 1.1 request without Host 400, and
        # closes on what is not HTTP.
        self.assertEqual(http(self.port, b"GET / HTTP/2.0\r\nHost: x\r\n\r\n")[0], 505)
        for raw in (b"GET /\r\n\r\n", b"\x16\x03\x01\x00\xa5", b"GET / HTTP/1.1\r\n\r\n"):
            st, _, body = http(self.port, raw)
            self.assertTrue(st is None or 400 <= st < 500, (raw, st))
            self.assertNotIn(PASSWD, body)
        self.assertTrue(self.d.alive())

    def test_host_header(self):
        for host in ("evil.example", f"evil.example:{self.port}", "127.0.0.1:1", "localhost.evil:80"):
            self.assertEqual(self.status("/", headers={"Host": host}), 403, host)
        self.assertEqual(self.status("/", headers={"Host": f"localhost:{self.port}"}), 200)

    def test_rpc_reads(self):
        st, r = rpc(self.port, "level.list", {})
        self.assertEqual(st, 200)
        self.assertTrue(r["ok"])
        self.assertEqual([l["level"] for l in r["result"]["levels"]], ["stairs"])
        st, r = rpc(self.port, "level.info", {"level": "stairs"})
        self.assertEqual((st, r["ok"]), (200, True))

    def test_rpc_errors(self):
        for level in ("..", "../etc", "a/b", "%2e%2e", "", ".x"):
            st, r = rpc(self.port, "level.info", {"level": level})
            self.assertEqual(st, 400, level)
            self.assertEqual(r["error"]["name"], "OP_EINVAL", level)
        st, r = rpc(self.port, "level.info", {"level": "nope"})
        self.assertEqual((st, r["error"]["name"]), (404, "OP_ENOTFOUND"))
        st, r = rpc(self.port, "no.such", {})
        self.assertEqual((st, r["error"]["name"]), (400, "OP_EPROTO"))
        st, r = rpc(self.port, "level.info", {"level": "stairs", "typo": 1})
        self.assertEqual((st, r["error"]["name"]), (400, "OP_EPROTO"))
        # Not msgpack, truncated msgpack, no body, another content type.
        st, h, _ = get(self.port, "/rpc", "POST", {"Content-Type": "application/msgpack"}, b"\xdd\x10\x00\x00\x00")
        self.assertEqual(st, 400)
        self.assertEqual(get(self.port, "/rpc", "POST", {"Content-Type": "application/msgpack"})[0], 400)
        self.assertEqual(get(self.port, "/rpc", "POST", {"Content-Type": "text/plain"}, b"\x80")[0], 415)

    def test_rpc_edits_refused(self):
        for method, params in (("level.put", {"level": "x", "settings": {}, "meshes": []}),
                               ("level.drop", {"level": "stairs"}),
                               ("mesh.drop", {"level": "stairs", "name": "m"}),
                               ("level.bake", {"level": "stairs"}),
                               ("volume.put", {"level": "stairs", "volume": {}}),
                               ("volume.drop", {"level": "stairs", "name": "v"})):
            st, r = rpc(self.port, method, params)
            # volume.* are 403 once the daemon knows them (unknown methods are 400).
            self.assertIn(st, (403, 400), method)
            self.assertFalse(r["ok"], method)
        self.assertTrue(rpc(self.port, "level.info", {"level": "stairs"})[1]["ok"])

    def test_path_params(self):
        for params in ({"level": "stairs"}, {"level": "stairs", "from": [0, 0], "to": [1, 1, 1]},
                       {"level": "stairs", "from": [0, 0, "x"], "to": [1, 1, 1]},
                       {"level": "stairs", "from": [0, 0, 1e300], "to": [1, 1, 1]},
                       {"level": "stairs", "from": [0, 0, 0], "to": [1, 1, 1], "extents": [-1, 1, 1]},
                       {"level": "stairs", "from": [0, 0, 0], "to": [1, 1, 1], "x": 1}):
            st, r = rpc(self.port, "path", params)
            self.assertEqual(st, 400, params)
            self.assertIn(r["error"]["name"], ("OP_EPROTO", "OP_ERANGE"), params)
        st, r = rpc(self.port, "path", {"level": "stairs", "from": [500, 0, 500], "to": [1, 0, 1]})
        self.assertEqual((st, r["error"]["name"]), (404, "OP_ENOTFOUND"))
        self.assertIn("from", r["error"]["message"])

    def test_path_waits_for_tiles(self):
        # Right after level.put no tile is built: path builds them, waits, and answers what
        # `onepath path` answers.
        level = "gen:rooms:48:2"
        d = Daemon("--http", "127.0.0.1:0")
        try:
            d.put(level, "rooms")
            st, r = rpc(d.http_port, "path", {"level": "rooms", "from": [6.0, 0.0, 6.0],
                                              "to": [40.0, 0.0, 40.0], "extents": [4, 8, 4]})
            self.assertEqual(st, 200, r)
            cli = json.loads(d.cli("path", level, "--from", "6,0,6", "--to", "40,0,40",
                                   "--extents", "4,8,4", "--json").stdout)
            key = lambda c: (c["tx"], c["tz"], c["layer"], c["poly"])
            self.assertEqual([key(c) for c in r["result"]["corridor"]], [key(c) for c in cli["corridor"]])
            self.assertEqual(r["result"]["partial"], cli["partial"])
            self.assertAlmostEqual(r["result"]["cost"], cli["cost"], places=5)
        finally:
            d.stop()

    def test_body_over_max_message(self):
        d = Daemon("--http", "127.0.0.1:0", "--max-message", "4K")
        try:
            st, _, _ = get(d.http_port, "/rpc", "POST", {"Content-Type": "application/msgpack"},
                           b"\x80" * 5000)
            self.assertTrue(st is None or 400 <= st < 500, st)
            self.assertTrue(d.alive())
        finally:
            d.stop()


class Addresses(unittest.TestCase):
    def refused(self, *args):
        r = subprocess.run([os.path.join(BIN, "onepathd"), "--listen", "ipc:///tmp/onepath-http-refused.sock",
                            "--no-fsync", *args], capture_output=True, text=True, timeout=30)
        return r

    def test_non_loopback_refused(self):
        for flag in ("--http", "--metrics"):
            for addr in ("0.0.0.0:0", "[::]:0", "192.0.2.1:7412", "example.com:80"):
                r = self.refused(flag, addr)
                self.assertNotEqual(r.returncode, 0, (flag, addr))
                self.assertIn("--http-remote", r.stderr + r.stdout, (flag, addr))

    def test_bad_addresses(self):
        for addr in ("7412", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:x", ":7412", "[::1:7412"):
            r = self.refused("--http", addr)
            self.assertNotEqual(r.returncode, 0, addr)
            self.assertIn("HOST:PORT", r.stderr + r.stdout, addr)

    def test_remote_flag(self):
        d = Daemon("--http", "0.0.0.0:0", "--http-remote")
        try:
            # Only loopback traffic: the wildcard listener answers on 127.0.0.1 too, and
            # a remote listener takes any Host.
            st, _, _ = get(d.http_port, "/", headers={"Host": "viewer.example"})
            self.assertEqual(st, 200)
        finally:
            d.stop()


class Token(unittest.TestCase):
    """--token-file over POST /rpc (http.md §3.6): 403 OP_EPERM without the token or with
    another, before the method is looked at; served with it; the page's files and
    /viewer.json need none; no log line quotes a token."""
    TOKEN = "Hq4vT9sLw2Xe7Kb0Nz5Rm8Pa3Uc6Yf1J"

    @classmethod
    def setUpClass(cls):
        cls.tdir = tempfile.mkdtemp(prefix="onepath-http-token-")
        cls.token_file = os.path.join(cls.tdir, "token")
        fd = os.open(cls.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (cls.TOKEN + "\n").encode())
        os.close(fd)
        cls.d = Daemon("--http", "127.0.0.1:0", "--token-file", cls.token_file)
        cls.port = cls.d.http_port

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        subprocess.run(["rm", "-rf", cls.tdir], check=False)
        if rc != 0:
            raise AssertionError(f"onepathd exited {rc}")

    def test_refused_without_the_token(self):
        for token in (None, "", self.TOKEN[:-1], self.TOKEN[:-1] + "K", self.TOKEN + "x"):
            for method, params in (("ping", {}), ("level.list", {}), ("no.such", {}),
                                   ("level.info", {"level": "../x"})):
                st, r = rpc(self.port, method, params, token=token)
                self.assertEqual((st, r["error"]["name"]), (403, "OP_EPERM"), (token, method))
                self.assertNotIn(self.TOKEN[:10], r["error"]["message"])
        st, r = rpc(self.port, "ping", {}, token=7)  # not a str: malformed
        self.assertEqual((st, r["error"]["name"]), (400, "OP_EPROTO"))

    def test_served_with_the_token(self):
        st, r = rpc(self.port, "level.list", {}, token=self.TOKEN)
        self.assertEqual((st, r["ok"]), (200, True))
        st, r = rpc(self.port, "no.such", {}, token=self.TOKEN)
        self.assertEqual((st, r["error"]["name"]), (400, "OP_EPROTO"))
        for path in ("/", "/viewer.js", "/viewer.json"):
            self.assertEqual(get(self.port, path)[0], 200, path)

    def test_log_quotes_no_token(self):
        rpc(self.port, "ping", {}, token=self.TOKEN)
        rpc(self.port, "ping", {}, token=self.TOKEN[:-1] + "K")
        # The request log is written as requests finish: wait for both lines.
        deadline = time.time() + 10
        while self.d.log_text().count("via=http") < 2 and time.time() < deadline:
            time.sleep(0.05)
        text = self.d.log_text()
        self.assertIn("OP_EPERM", text)
        self.assertNotIn(self.TOKEN[:10], text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
