"""Leases: VRAM on a GPU for a time to live, and stateless calls on it."""

from __future__ import annotations

import time
import weakref
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from ._cdef import ANY_GPU
from ._lib import ffi, lib
from ._params import InOut, Out, input_array, is_scalar, scalar_bytes
from ._util import DimLike, ImageLike, dims, load_image
from .errors import GpuleaseError, LeaseExpired, NotFound, check, error_for
from .ptx import PtxParam, ptx_params

if TYPE_CHECKING:
    from .client import Client
    from .session import Session

__all__ = ["Lease"]

_CLASS_NAMES = {0: "isolated", 1: "shared", 2: "device", 3: "partition"}


class Lease:
    """A lease of VRAM on one GPU of a node (gpulease_lease), from
    :meth:`Client.lease` or :meth:`Client.attach`.

    Used as a context manager it frees the lease when the block ends, also
    when the block raises (then a lease already gone, or a failure to free
    it, does not hide the block's exception)::

        with client.lease("256MiB", ttl=60) as lease:
            c = lease.call(ptx, "vector_add", grid=4, block=256,
                           args=[a, b, gpulease.out(1000), np.int32(1000)])

    Attributes:
        id: the lease's id (int).
        gpu: the index of the GPU it is on.
        vram: bytes of VRAM it holds.
        ttl: seconds of TTL granted by the last alloc or renew.
        secret: its secret (capability token) as 80 hex digits.
        lease_class: "isolated", "shared", "device" or "partition".
        submits: kernels run by :meth:`call` (as of the last :meth:`query`).
    """

    def __init__(self, client: "Client", c_lease: Any) -> None:
        self._client = client
        self._c = c_lease  # gpulease_lease *
        self._answered = time.monotonic()
        self._renewer: Any = None
        self._freed = False
        self._sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()

    # -- state -----------------------------------------------------------
    @property
    def client(self) -> "Client":
        """The client the lease's operations go through."""
        return self._client

    @property
    def id(self) -> int:
        """The lease's id on the daemon."""
        return int(self._c.id)

    @property
    def gpu(self) -> int:
        """The index of the GPU the lease's VRAM is on."""
        return int(self._c.gpu_index)

    @property
    def vram(self) -> int:
        """Bytes of VRAM the lease holds."""
        return int(self._c.vram_bytes)

    @property
    def ttl(self) -> int:
        """Seconds of TTL granted by the last alloc, renew or query."""
        return int(self._c.ttl_s)

    @property
    def submits(self) -> int:
        """Stateless calls completed on the lease, as of the last
        :meth:`query`."""
        return int(self._c.submits)

    @property
    def lease_class(self) -> str:
        """The class granted: "isolated", "shared", "device" or "partition"."""
        return _CLASS_NAMES.get(int(self._c.lease_class), "unknown")

    @property
    def remaining(self) -> float:
        """Seconds of TTL left: the daemon's last answer to this object
        (alloc, renew or query) less the time since. Renewals by the
        renewer (``renew=True``) are not seen here; :meth:`query` reads the
        daemon's value."""
        left = float(self._c.remaining_ms) / 1000.0 - (time.monotonic() - self._answered)
        return max(0.0, left)

    @property
    def secret(self) -> str:
        """The lease's secret as 80 lower-case hex digits. Whoever holds it
        has the lease's rights: keep it like a password."""
        buf = ffi.new("char[]", 2 * lib.GPULEASE_SECRET_BYTES + 1)
        lib.gpulease_secret_to_hex(self._c.secret, buf)
        return str(ffi.string(buf).decode("ascii"))

    @property
    def freed(self) -> bool:
        """True once :meth:`free` succeeded, or found the lease gone."""
        return self._freed

    # -- operations ------------------------------------------------------
    def renew(self, ttl: int) -> None:
        """Extends the lease to expire ``ttl`` seconds from now
        (LEASE_RENEW); updates ``ttl`` and ``remaining``.

        Raises InvalidArgument (TTL 0 or above the daemon's maximum),
        NotFound, LeaseExpired, Unauthorized, QuotaExceeded, the connection
        errors."""
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 <= ttl <= 0xFFFFFFFF:
            raise ValueError(f"ttl must be whole seconds (an int), got {ttl!r}")
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            check(lib.gpulease_lease_renew(self._client._handle(), self._c, ttl, err), err)
        self._answered = time.monotonic()

    def query(self) -> "Lease":
        """Reads the lease's state from the daemon (LEASE_QUERY): ttl,
        remaining, submits ... Returns the lease itself.

        Raises NotFound (freed, or never existed), LeaseExpired,
        Unauthorized (a wrong secret), the connection errors."""
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            check(lib.gpulease_lease_query(self._client._handle(), self._c, err), err)
        self._answered = time.monotonic()
        return self

    def free(self) -> None:
        """Frees the lease now (LEASE_FREE): the daemon ends its worker and
        with it all the lease's VRAM, sessions and modules. Stops the
        renewer and closes the lease's open sessions first.

        Raises NotFound or LeaseExpired when the lease is already gone (it
        then counts as freed), Unauthorized, the connection errors."""
        self._stop_renewer()
        for s in list(self._sessions):
            try:
                s.close()
            except Exception:
                pass
        err = ffi.new("gpulease_error *")
        try:
            with self._client._lock:
                check(lib.gpulease_lease_free(self._client._handle(), self._c, err), err)
        except (NotFound, LeaseExpired):
            self._freed = True
            raise
        self._freed = True

    def _start_renewer(self) -> None:
        out = ffi.new("gpulease_renewer **")
        err = ffi.new("gpulease_error *")
        check(lib.gpulease_renewer_start(self._client._opts, self._c, 0, ffi.NULL, ffi.NULL,
                                         out, err), err)
        self._renewer = ffi.gc(out[0], lib.gpulease_renewer_stop)

    def _stop_renewer(self) -> None:
        r, self._renewer = self._renewer, None
        if r is not None:
            ffi.release(r)

    @property
    def renewing(self) -> bool:
        """True while the renewer (``renew=True``) keeps the lease alive."""
        return self._renewer is not None and lib.gpulease_renewer_status(self._renewer, ffi.NULL) == 0

    @property
    def renewer_error(self) -> Optional[GpuleaseError]:
        """Why the renewer stopped (the lease was taken back, or the daemon
        was unreachable until the lease ran out) as an exception object;
        None while it keeps the lease, or without a renewer."""
        if self._renewer is None:
            return None
        err = ffi.new("gpulease_error *")
        st = lib.gpulease_renewer_status(self._renewer, err)
        if st == 0:
            return None
        return error_for(st, ffi.string(err.message).decode("utf-8", "replace"))

    def session(self) -> "Session":
        """Opens a session on the lease (SESSION_OPEN): buffers and modules
        that stay on the GPU between kernels. A context manager that closes
        it. Raises Unauthorized, NotFound, LeaseExpired, CapacityExceeded
        (64 sessions a lease), the connection errors."""
        from .session import Session

        s = Session(self)
        self._sessions.add(s)
        return s

    def call(self, image: ImageLike, kernel: str, grid: DimLike = 1, block: DimLike = 1,
             args: Sequence[Any] = (), shared_mem: int = 0,
             retries: int = 4) -> Union[npt.NDArray[Any], List[npt.NDArray[Any]]]:
        """Runs one kernel on the lease as a pure function (gpulease_call):
        the inputs are copied in, the kernel runs, the outputs come back, in
        one round trip.

        Args:
            image: the module: bytes (PTX, cubin or fatbin), PTX text (str)
                or a path-like to a file.
            kernel: the kernel's (mangled) name.
            grid: blocks, an int or a tuple of 1 to 3 ints.
            block: threads a block, an int or a tuple of 1 to 3 ints.
            args: the kernel's parameters in order:
                - a numpy array: an input buffer (the kernel gets a pointer
                  to a copy of its bytes, C order);
                - ``gpulease.out(shape_or_n, dtype)``: an output buffer
                  (zeroed), read back into a new array;
                - ``gpulease.inout(array)``: both;
                - a numpy scalar (``np.int32(5)``, ``np.float32(2.5)``): a
                  by-value parameter of its size;
                - a plain int or float: by value, with the type of the
                  kernel's PTX parameter (``.f32`` -> float32, ``.u64`` ->
                  64 bits ...); a TypeError for cubin and fatbin images,
                  which do not say.
            shared_mem: bytes of dynamic shared memory a block.
            retries: the most attempts when the connection drops or a reply
                times out (1: no retry), with a growing backoff.
        Returns the outputs (out and inout, in argument order) as numpy
        arrays: a list, or the array itself when there is exactly one.
        Raises TypeError for arguments that do not fit the kernel's PTX
        parameters, LoadFailed (bad image, with the JIT log), LaunchFailed
        (no such kernel, a fault), InvalidArgument, CapacityExceeded (the
        buffers do not fit the lease), Unsupported, NotFound, LeaseExpired,
        Unauthorized, the connection errors."""
        return run_call(self._client, self, image, kernel, grid, block, args, shared_mem,
                        retries, 0, None)

    # -- context manager -------------------------------------------------
    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._freed:
            self._stop_renewer()
            return
        try:
            self.free()
        except (NotFound, LeaseExpired):
            pass  # already gone: nothing to free
        except Exception:
            if exc_type is None:
                raise

    def __repr__(self) -> str:
        state = " freed" if self._freed else f" ttl={self.ttl}s"
        return f"<gpulease.Lease id={self.id} gpu={self.gpu} vram={self.vram}{state}>"


def run_call(client: "Client", lease: Optional[Lease], image: ImageLike, kernel: str,
             grid: DimLike, block: DimLike, args: Sequence[Any], shared_mem: int,
             retries: int, fresh_ttl: int, fresh_gpu: Optional[int]
             ) -> Union[npt.NDArray[Any], List[npt.NDArray[Any]]]:
    """gpulease_call for Lease.call and Client.call (lease None: a fresh
    lease of ``fresh_ttl`` seconds on ``fresh_gpu``)."""
    img = load_image(image)
    g, b = dims(grid, "grid"), dims(block, "block")
    if isinstance(retries, bool) or not isinstance(retries, int) or not 1 <= retries <= 1000:
        raise ValueError(f"retries is the most attempts, 1..1000; got {retries!r}")
    if isinstance(shared_mem, bool) or not isinstance(shared_mem, int) or \
            not 0 <= shared_mem <= 0xFFFFFFFF:
        raise ValueError(f"shared_mem must be bytes, 0..4294967295; got {shared_mem!r}")
    if isinstance(args, (np.ndarray, Out, InOut)) or not isinstance(args, (list, tuple)):
        raise TypeError("args is a list (or tuple) of the kernel's parameters")
    params: Optional[List[PtxParam]] = None
    if img.ptx is not None:
        params = ptx_params(img.ptx, kernel)
        if len(params) != len(args):
            raise TypeError(f"kernel {kernel} takes {len(params)} parameters "
                            f"({', '.join(p.type for p in params) or 'none'}), "
                            f"got {len(args)} arguments")
    n = len(args)
    c_args = ffi.new("gpulease_call_arg[]", max(n, 1))
    keep: List[Any] = []
    outputs: List[npt.NDArray[Any]] = []
    for i, a in enumerate(args):
        p = params[i] if params is not None else None
        ca = c_args[i]
        if isinstance(a, (np.ndarray, Out, InOut)):
            if p is not None and p.size != 8:
                raise TypeError(f"kernel {kernel}: argument {i} is a buffer (a pointer), but "
                                f"parameter {p.name} is {p.type} ({p.size} bytes)")
            if isinstance(a, Out):
                arr = np.zeros(a.shape, a.dtype)
                ca.kind = lib.GPULEASE_CALL_OUT
                ca.out = ffi.from_buffer(arr, require_writable=True)
                outputs.append(arr)
            elif isinstance(a, InOut):
                arr = np.empty_like(a.array)
                ca.kind = lib.GPULEASE_CALL_INOUT
                src = input_array(a.array)
                keep.append(src)
                ca.data = ffi.from_buffer(src)
                ca.out = ffi.from_buffer(arr, require_writable=True)
                outputs.append(arr)
            else:
                arr = input_array(a)
                ca.kind = lib.GPULEASE_CALL_IN
                ca.data = ffi.from_buffer(arr)
            keep.append(arr)
            ca.size = arr.nbytes
        elif is_scalar(a):
            data = scalar_bytes(a, p, img.ptx is not None, kernel, i)
            if not 1 <= len(data) <= lib.GPULEASE_MAX_SCALAR_BYTES:
                raise TypeError(f"kernel {kernel}: argument {i} has {len(data)} bytes; a "
                                f"by-value parameter has 1..{lib.GPULEASE_MAX_SCALAR_BYTES}")
            buf = ffi.new("char[]", data)
            keep.append(buf)
            ca.kind = lib.GPULEASE_CALL_SCALAR
            ca.data = buf
            ca.size = len(data)
        else:
            raise TypeError(f"kernel {kernel}: argument {i} is a {type(a).__name__}; pass a numpy "
                            "array, gpulease.out(...), gpulease.inout(...) or a scalar")
    desc = ffi.new("gpulease_call_desc *")
    lib.gpulease_call_desc_default(desc)
    image_buf = ffi.from_buffer(img.data)
    kname = ffi.new("char[]", kernel.encode("utf-8"))
    desc.image = image_buf
    desc.image_size = len(img.data)
    desc.format = img.format
    desc.kernel = kname
    desc.grid = list(g)
    desc.block = list(b)
    desc.shared_mem_bytes = int(shared_mem)
    desc.args = c_args
    desc.arg_count = n
    desc.max_attempts = retries
    if lease is None:
        desc.fresh_ttl_s = fresh_ttl
        desc.fresh_gpu_index = ANY_GPU if fresh_gpu is None else int(fresh_gpu)
    err = ffi.new("gpulease_error *")
    with client._lock:
        st = lib.gpulease_call(client._handle(), ffi.NULL if lease is None else lease._c, desc,
                               ffi.NULL, err)
    check(st, err)
    if len(outputs) == 1:
        return outputs[0]
    return outputs
