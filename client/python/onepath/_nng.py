"""The part of libnng (Debian's libnng1, nng 1.5) the client needs, through ctypes.

One REQ0 socket per client; each request opens its own context, so requests from
several threads are in flight at once (the calls below block in C with the GIL
released). Only the functions of nng's stable C API are used.
"""

import ctypes
import ctypes.util
import os
import threading
import time

# nng_errno_enum (nng.h) values the client tells apart.
NNG_ENOMEM = 2
NNG_EINVAL = 3
NNG_ETIMEDOUT = 5
NNG_ECLOSED = 7
NNG_ENOTSUP = 9
NNG_EADDRINVAL = 15
NNG_EPROTO = 13

# The head every onepathd reply starts with: a map of 4, "v", protocol version 1.
_REPLY_HEAD = b"\x84\xa1v\x01"


def past_wrap(request, reply):
    """Whether reply is what a REP sends back for a request whose nng id went past
    0xffffffff (nng 1.5.2, protocol.md §1.8): the request's first four bytes, taken for a
    hop, then a whole reply, where a reply of its own has "id" after its head."""
    return len(request) >= 4 and reply[:4] == request[:4] and reply[4:8] == _REPLY_HEAD

# Largest reply accepted: a tile.range reply is at most its max_bytes plus overhead.
MAX_REPLY = 1 << 30

# How long close waits for nng_close: nng 1.5.2 can wedge it forever (protocol.md §1.7).
CLOSE_WAIT_S = 1.0


def _close_bounded(lib, sock):
    """nng_close on a daemon thread, waited for at most CLOSE_WAIT_S: a wedged close is
    left running (with its socket) instead of blocking the caller."""
    t = threading.Thread(target=lib.nng_close, args=(sock,), name="nng-close", daemon=True)
    t.start()
    t.join(CLOSE_WAIT_S)


class NngError(Exception):
    """A failed nng call: rv is nng's error number, what names the step."""

    def __init__(self, rv, what, text):
        super().__init__("%s: %s" % (what, text))
        self.rv = rv
        self.what = what


class _Socket(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32)]


class _Ctx(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32)]


_lib = None
_lib_lock = threading.Lock()


def _bind(lib):
    P = ctypes.c_void_p
    sigs = {
        "nng_req0_open": (ctypes.c_int, [ctypes.POINTER(_Socket)]),
        "nng_close": (ctypes.c_int, [_Socket]),
        "nng_dial": (ctypes.c_int, [_Socket, ctypes.c_char_p, P, ctypes.c_int]),
        "nng_socket_set_ms": (ctypes.c_int, [_Socket, ctypes.c_char_p, ctypes.c_int32]),
        "nng_socket_set_size": (ctypes.c_int, [_Socket, ctypes.c_char_p, ctypes.c_size_t]),
        "nng_ctx_open": (ctypes.c_int, [ctypes.POINTER(_Ctx), _Socket]),
        "nng_ctx_close": (ctypes.c_int, [_Ctx]),
        "nng_ctx_set_ms": (ctypes.c_int, [_Ctx, ctypes.c_char_p, ctypes.c_int32]),
        "nng_ctx_send": (None, [_Ctx, P]),
        "nng_ctx_recv": (None, [_Ctx, P]),
        "nng_aio_alloc": (ctypes.c_int, [ctypes.POINTER(P), P, P]),
        "nng_aio_free": (None, [P]),
        "nng_aio_set_timeout": (None, [P, ctypes.c_int32]),
        "nng_aio_set_msg": (None, [P, P]),
        "nng_aio_get_msg": (P, [P]),
        "nng_aio_wait": (None, [P]),
        "nng_aio_result": (ctypes.c_int, [P]),
        "nng_msg_alloc": (ctypes.c_int, [ctypes.POINTER(P), ctypes.c_size_t]),
        "nng_msg_append": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_size_t]),
        "nng_msg_body": (P, [P]),
        "nng_msg_len": (ctypes.c_size_t, [P]),
        "nng_msg_free": (None, [P]),
        "nng_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def load(path=None):
    """The bound libnng: path, else $ONEPATH_LIBNNG, else libnng.so.1 (libnng1)."""
    global _lib
    with _lib_lock:
        if path is None and _lib is not None:
            return _lib
        name = path or os.environ.get("ONEPATH_LIBNNG") or "libnng.so.1"
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            found = ctypes.util.find_library("nng")
            if path or not found:
                raise
            lib = ctypes.CDLL(found)
        lib = _bind(lib)
        if path is None:
            _lib = lib
        return lib


class ReqSocket:
    """A REQ0 socket dialled to url (the dial retries in the background). A request whose
    nng id went past 0xffffffff (protocol.md §1.8) is sent again, once, on a fresh socket,
    which new requests use from then on; the old one is closed with this one."""

    def __init__(self, url, lib=None):
        self._lib = lib or load()
        self._url = url
        self._closed = False
        self._retired = []
        self._sock_lock = threading.Lock()
        self._sock = self._open()

    def _open(self):
        lib = self._lib
        sock = _Socket()
        self._check(lib.nng_req0_open(ctypes.byref(sock)), "open")
        try:
            self._check(lib.nng_socket_set_size(sock, b"recv-size-max", MAX_REPLY),
                        "recv-size-max")
            lib.nng_socket_set_ms(sock, b"reconnect-time-min", 20)
            lib.nng_socket_set_ms(sock, b"reconnect-time-max", 500)
            # NNG_FLAG_NONBLOCK (2): a daemon may start after its client.
            self._check(lib.nng_dial(sock, self._url.encode(), None, 2), "dial " + self._url)
        except NngError:
            _close_bounded(lib, sock)
            self._closed = True
            raise
        return sock

    def _renew(self, used):
        """A fresh socket in place of used (unless another request replaced it already)."""
        with self._sock_lock:
            if self._sock is used:
                fresh = self._open()
                self._retired.append(self._sock)
                self._sock = fresh

    def _check(self, rv, what):
        if rv != 0:
            raise NngError(rv, what, self._lib.nng_strerror(rv).decode())

    def request(self, data, timeout_ms, resend_ms=None):
        """Sends data and returns the reply bytes; the whole exchange takes at most
        timeout_ms. The context's resend time is timeout_ms too (resend_ms overrides it,
        for tests only), so the request is sent again only when its connection drops,
        never while the daemon holds it (a long poll): protocol.md §1.4."""
        deadline = _now_ms() + timeout_ms
        with self._sock_lock:
            sock = self._sock
        raw = self._exchange(sock, data, timeout_ms, resend_ms)
        if not past_wrap(data, raw):
            return raw
        # Refused unrun by the daemon: safe to send again (protocol.md §1.8).
        self._renew(sock)
        left = deadline - _now_ms()
        if left <= 0:
            raise NngError(NNG_ETIMEDOUT, "receive", "timed out sending again past nng's "
                           "request-id wrap")
        with self._sock_lock:
            sock = self._sock
        raw = self._exchange(sock, data, left, resend_ms)
        if past_wrap(data, raw):
            raise NngError(NNG_EPROTO, "receive", "the request reached the daemon cut short "
                           "again, on a fresh socket (nng's request ids past 0xffffffff)")
        return raw

    def _exchange(self, sock, data, timeout_ms, resend_ms):
        if self._closed:
            raise NngError(NNG_ECLOSED, "request", "client is closed")
        lib = self._lib
        ctx = _Ctx()
        self._check(lib.nng_ctx_open(ctypes.byref(ctx), sock), "context")
        aio = ctypes.c_void_p()
        msg = ctypes.c_void_p()
        try:
            lib.nng_ctx_set_ms(ctx, b"req:resend-time", resend_ms or timeout_ms)
            self._check(lib.nng_aio_alloc(ctypes.byref(aio), None, None), "aio")
            self._check(lib.nng_msg_alloc(ctypes.byref(msg), 0), "message")
            self._check(lib.nng_msg_append(msg, data, len(data)), "message")
            deadline = _now_ms() + timeout_ms
            lib.nng_aio_set_timeout(aio, timeout_ms)
            lib.nng_aio_set_msg(aio, msg)
            lib.nng_ctx_send(ctx, aio)
            lib.nng_aio_wait(aio)
            rv = lib.nng_aio_result(aio)
            if rv != 0:
                self._check(rv, "send")  # msg is still ours: freed below
            msg = ctypes.c_void_p()  # sent: nng owns it
            left = max(1, deadline - _now_ms())
            lib.nng_aio_set_timeout(aio, left)
            lib.nng_ctx_recv(ctx, aio)
            lib.nng_aio_wait(aio)
            self._check(lib.nng_aio_result(aio), "receive")
            msg = ctypes.c_void_p(lib.nng_aio_get_msg(aio))
            n = lib.nng_msg_len(msg)
            return ctypes.string_at(lib.nng_msg_body(msg), n) if n else b""
        finally:
            if msg:
                lib.nng_msg_free(msg)
            if aio:
                lib.nng_aio_free(aio)
            lib.nng_ctx_close(ctx)

    def close(self):
        if not self._closed:
            self._closed = True
            _close_bounded(self._lib, self._sock)
            for sock in self._retired:
                _close_bounded(self._lib, sock)


def _now_ms():
    return int(time.monotonic() * 1000)
