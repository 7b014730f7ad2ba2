"""Errors: the op_status codes of onepath (core/include/onepath/status.h, fixed forever
because they travel in replies) and one exception class per code.

Every exception carries code (int), name ("OP_ENOTFOUND") and message (what was wrong,
as the daemon or the client said it). A daemon's error reply raises the class of its
code; transport failures raise Timeout (OP_ETIMEDOUT) or InputOutputError (OP_EIO) as
the C client does; a reply that does not follow the protocol raises ProtocolError.
"""

# The codes, as OP_STATUS_MAP of status.h.
OP_OK = 0
OP_EINVAL = 1
OP_ERANGE = 2
OP_ELIMIT = 3
OP_ENOMEM = 4
OP_EIO = 5
OP_EPROTO = 6
OP_EINCOMPLETE = 7
OP_ENOTFOUND = 8
OP_ETIMEDOUT = 9
OP_EBUSY = 10
OP_EINTERNAL = 11
OP_EPERM = 12

# (code, name, short text) of every code.
STATUS = (
    (OP_OK, "OP_OK", "ok"),
    (OP_EINVAL, "OP_EINVAL", "bad argument"),
    (OP_ERANGE, "OP_ERANGE", "value out of range"),
    (OP_ELIMIT, "OP_ELIMIT", "limit met while building"),
    (OP_ENOMEM, "OP_ENOMEM", "out of memory"),
    (OP_EIO, "OP_EIO", "input/output error"),
    (OP_EPROTO, "OP_EPROTO", "malformed message"),
    (OP_EINCOMPLETE, "OP_EINCOMPLETE", "incomplete message"),
    (OP_ENOTFOUND, "OP_ENOTFOUND", "not found"),
    (OP_ETIMEDOUT, "OP_ETIMEDOUT", "timed out"),
    (OP_EBUSY, "OP_EBUSY", "busy"),
    (OP_EINTERNAL, "OP_EINTERNAL", "internal error"),
    (OP_EPERM, "OP_EPERM", "permission denied"),
)
_NAMES = {code: name for code, name, _ in STATUS}


def status_name(code):
    """"OP_EINVAL" etc.; "OP_UNKNOWN" for a code outside the list."""
    return _NAMES.get(code, "OP_UNKNOWN")


class Error(Exception):
    """Base of every onepath error."""

    code = None

    def __init__(self, message, code=None, name=None, method=None):
        if code is None:
            code = type(self).code if type(self).code is not None else OP_EINTERNAL
        self.code = code
        self.name = name or status_name(code)
        self.message = message
        self.method = method
        super().__init__("%s: %s" % (self.name, message))


class InvalidArgument(Error, ValueError):
    code = OP_EINVAL


class OutOfRange(Error, ValueError):
    code = OP_ERANGE


class LimitError(Error):
    code = OP_ELIMIT


class OutOfMemory(Error, MemoryError):
    code = OP_ENOMEM


class InputOutputError(Error, OSError):
    code = OP_EIO


class ProtocolError(Error):
    code = OP_EPROTO


class Incomplete(Error):
    code = OP_EINCOMPLETE


class NotFound(Error, LookupError):
    code = OP_ENOTFOUND


class Timeout(Error, TimeoutError):
    code = OP_ETIMEDOUT


class Busy(Error):
    code = OP_EBUSY


class InternalError(Error):
    code = OP_EINTERNAL


class PermissionDenied(Error, PermissionError):
    """A missing or wrong token (onepathd --token-file), or a token file others may read."""
    code = OP_EPERM


_CLASSES = {c.code: c for c in (InvalidArgument, OutOfRange, LimitError, OutOfMemory,
                                InputOutputError, ProtocolError, Incomplete, NotFound,
                                Timeout, Busy, InternalError, PermissionDenied)}


def error_for(code, message, name=None, method=None):
    """The exception of code (Error itself for a code this client does not know)."""
    cls = _CLASSES.get(code, Error)
    return cls(message, code=code, name=name, method=method)
