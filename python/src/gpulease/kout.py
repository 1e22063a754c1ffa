"""Kernel output: what a lease's kernels printed with CUDA's device-side
``printf`` (gpulease_client_set_kernel_output, docs/protocol.md "Kernel
output").

A client hands it to a handler after each call that runs or waits for
kernels (:meth:`Lease.call`, :meth:`Session.sync`,
:meth:`Session.kernel_output`): by default it is written to
``sys.stderr``, as a local CUDA program's printf reaches its console.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from ._lib import ffi, lib


@dataclass(frozen=True)
class KernelOutput:
    """One delivery of a lease's kernel output.

    lease_id: the lease whose kernels printed.
    data: the bytes as the kernels printed them, in order (not necessarily
        UTF-8, not necessarily whole lines).
    dropped: bytes lost over the lease's bound (64 KiB pending) since the
        last delivery (0: none).
    discarded: True for a lease of class shared: its worker serves other
        leases too, so its kernels' output is not captured at all.
    """
    lease_id: int
    data: bytes
    dropped: int
    discarded: bool

    @property
    def text(self) -> str:
        """``data`` decoded as UTF-8 (undecodable bytes replaced)."""
        return self.data.decode("utf-8", "replace")


#: A handler: a callable taking one KernelOutput; "stderr" (the default of
#: :func:`gpulease.connect`) to write it to sys.stderr; None to ask for none.
KernelOutputHandler = Union[Callable[[KernelOutput], Any], str, None]


def write_stderr(out: KernelOutput) -> None:
    """The "stderr" handler: the text as it is, then a note in brackets for
    dropped bytes or a shared lease's discarded output."""
    err = sys.stderr
    if out.data:
        err.write(out.text)
    if out.dropped:
        err.write(f"[gpulease: {out.dropped} bytes of kernel output dropped: a lease keeps at "
                  f"most 64 KiB until it is delivered]\n")
    if out.discarded:
        err.write("[gpulease: kernel output is not captured on a lease of class shared]\n")
    err.flush()


def make_callback(handler: KernelOutputHandler) -> Optional[Any]:
    """The cffi callback for handler (None for None). The caller keeps it
    alive as long as the library may call it. ValueError for a handler that
    is neither callable, "stderr" nor None."""
    if handler is None:
        return None
    if handler == "stderr":
        fn: Callable[[KernelOutput], Any] = write_stderr
    elif callable(handler):
        fn = handler
    else:
        raise ValueError(f"kernel_output must be a callable, 'stderr' or None, got {handler!r}")

    def on_output(user: Any, lease_id: int, text: Any, length: int, dropped: int,
                  flags: int) -> None:
        out = KernelOutput(lease_id=int(lease_id),
                           data=bytes(ffi.buffer(text, length)) if length else b"",
                           dropped=int(dropped),
                           discarded=bool(flags & lib.GPULEASE_KOUT_DISCARDED))
        try:
            fn(out)
        except Exception:  # never into C: reported like an unraisable error
            traceback.print_exc()

    return ffi.callback("gpulease_kernel_output_fn", on_output)
