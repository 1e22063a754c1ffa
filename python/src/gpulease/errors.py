"""Exceptions: one class per gpulease_status of gpulease.h.

Every failure the library or the daemon reports is raised as a subclass of
:class:`GpuleaseError` that names the status, e.g. a lease whose TTL ran
out raises :class:`LeaseExpired`::

    try:
        lease.renew(60)
    except gpulease.LeaseExpired as e:
        print(e.status, e.status_name, e.message)   # 7 LEASE_EXPIRED ...

Codes below 100 come from the daemon (docs/protocol.md, "Status codes");
codes from 100 up arise in the client only. :class:`Disconnected` is also a
:class:`ConnectionError` and :class:`Timeout` a :class:`TimeoutError`.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

from ._lib import ffi, lib


class GpuleaseError(Exception):
    """A failure reported by libgpulease or the daemon.

    Attributes:
        status: the gpulease_status number (int).
        status_name: its upper-case name, e.g. ``"LEASE_EXPIRED"``.
        message: the library's or the daemon's message (may be empty).
    """

    #: The status this class stands for (None for the base class).
    STATUS: Optional[int] = None
    #: For a session's failure raised by Session.sync: the failed op's
    #: name ("LAUNCH", "MEM_WRITE") and its sequence number; else None.
    op: Optional[str] = None
    seq: Optional[int] = None

    def __init__(self, status: int, message: str = "") -> None:
        self.status: int = int(status)
        self.status_name: str = status_name(self.status)
        self.message: str = message
        text = f"{self.status_name}: {message}" if message else self.status_name
        super().__init__(text)

    def __reduce__(self) -> Any:
        return (_rebuild, (self.status, self.message))


def _rebuild(status: int, message: str) -> GpuleaseError:
    return error_for(status, message)


class InvalidArgument(GpuleaseError):
    """INVALID_ARGUMENT (1): a field of the request is out of range (a TTL
    over the daemon's maximum, a zero size, a range outside a buffer)."""

    STATUS = 1


class Unauthorized(GpuleaseError):
    """UNAUTHORIZED (2): no identity, or the lease's secret is wrong,
    expired, rotated out, revoked, another tenant's or lacks the right."""

    STATUS = 2


class LoadFailed(GpuleaseError):
    """LOAD_FAILED (3): the module image could not be loaded (the message
    carries the JIT log)."""

    STATUS = 3


class LaunchFailed(GpuleaseError):
    """LAUNCH_FAILED (4): the kernel could not be found or launched, or it
    faulted (the message names the CUDA error)."""

    STATUS = 4


class NotFound(GpuleaseError):
    """NOT_FOUND (5): no such lease (or session, or kernel)."""

    STATUS = 5


class ReadFailed(GpuleaseError):
    """READ_FAILED (6): reading device memory back failed."""

    STATUS = 6


class LeaseExpired(GpuleaseError):
    """LEASE_EXPIRED (7): the lease's TTL ran out; all it held is freed."""

    STATUS = 7


class CapacityExceeded(GpuleaseError):
    """CAPACITY_EXCEEDED (8): not enough free VRAM, or a daemon budget is
    full."""

    STATUS = 8


class Unsupported(GpuleaseError):
    """UNSUPPORTED (9): an op, protocol version or image format the daemon
    (or its device) does not support."""

    STATUS = 9


class NoDevice(GpuleaseError):
    """NO_DEVICE (10): no usable GPU, or none with the requested index."""

    STATUS = 10


class Malformed(GpuleaseError):
    """MALFORMED (11): the request frame was truncated or malformed."""

    STATUS = 11


class TooLarge(GpuleaseError):
    """TOO_LARGE (12): the request is larger than the daemon accepts."""

    STATUS = 12


class Busy(GpuleaseError):
    """BUSY (13): the daemon is overloaded, or a device lease holds the
    GPU; retry later."""

    STATUS = 13


class WriteFailed(GpuleaseError):
    """WRITE_FAILED (14): copying input bytes into device memory failed."""

    STATUS = 14


class Internal(GpuleaseError):
    """INTERNAL (15): an unexpected failure in the daemon or its worker."""

    STATUS = 15


class InvalidHandle(GpuleaseError):
    """INVALID_HANDLE (16): a buffer, module or function handle that names
    no live object of the session (freed, forged or another session's)."""

    STATUS = 16


class MissingSeq(GpuleaseError):
    """MISSING_SEQ (17): a session op with a lower sequence number never
    arrived; it became the session's failure."""

    STATUS = 17


class QuotaExceeded(GpuleaseError):
    """QUOTA_EXCEEDED (18): the tenant's quota would be exceeded (the
    message gives the limit, the use and what was asked)."""

    STATUS = 18


class Disconnected(GpuleaseError, ConnectionError):
    """DISCONNECTED (100, client side): could not connect, or the
    connection was lost or closed."""

    STATUS = 100


class TlsFailed(GpuleaseError):
    """TLS_FAILED (101, client side): the TLS handshake failed or the
    daemon's certificate did not verify (wrong pin, unknown CA)."""

    STATUS = 101


class ProtocolError(GpuleaseError):
    """PROTOCOL_ERROR (102, client side): the daemon's reply could not be
    decoded."""

    STATUS = 102


class NoMemory(GpuleaseError):
    """NO_MEMORY (103, client side): the client ran out of memory."""

    STATUS = 103


class Timeout(GpuleaseError, TimeoutError):
    """TIMEOUT (104, client side): no reply within the client's timeout."""

    STATUS = 104


#: Status number -> exception class, for every status of gpulease.h but OK.
ERROR_CLASSES: Dict[int, Type[GpuleaseError]] = {
    cls.STATUS: cls
    for cls in (
        InvalidArgument, Unauthorized, LoadFailed, LaunchFailed, NotFound, ReadFailed,
        LeaseExpired, CapacityExceeded, Unsupported, NoDevice, Malformed, TooLarge, Busy,
        WriteFailed, Internal, InvalidHandle, MissingSeq, QuotaExceeded, Disconnected,
        TlsFailed, ProtocolError, NoMemory, Timeout,
    )
    if cls.STATUS is not None
}


def status_name(status: int) -> str:
    """The upper-case name of a status number (``"LEASE_EXPIRED"``), as
    libgpulease spells it; ``"UNKNOWN"`` for a number it does not know."""
    return str(ffi.string(lib.gpulease_status_name(int(status))).decode("ascii", "replace"))


def error_for(status: int, message: str = "") -> GpuleaseError:
    """The exception for a status: an instance of its class in
    :data:`ERROR_CLASSES`, or of :class:`GpuleaseError` itself for a
    number without one."""
    cls = ERROR_CLASSES.get(int(status), GpuleaseError)
    return cls(status, message)


def check(status: int, err: Any = None) -> None:
    """Raises the exception for a gpulease_status returned by a library
    call, with the message of ``err`` (a ``gpulease_error *``, may be
    None); returns quietly for GPULEASE_OK (0)."""
    status = int(status)
    if status == 0:
        return
    message = ""
    if err is not None:
        message = ffi.string(err.message).decode("utf-8", "replace")
    raise error_for(status, message)
