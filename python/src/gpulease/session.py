"""Sessions: device arrays and modules that stay on the leased GPU between
kernels, and kernels launched on them in order, like one CUDA stream.

::

    with lease.session() as s:
        x = s.to_device(np.arange(1 << 20, dtype=np.float32))
        mod = s.load_module(pathlib.Path("scale.ptx"))
        mod.scale[4096, 256](x, 2.0, x.size)     # queued, returns at once
        s.sync()                                 # waits; raises the first failure
        y = x.to_host()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._lib import ffi, lib
from ._params import DTypeLike, ShapeLike, _shape, is_scalar, scalar_bytes
from ._util import DimLike, ImageLike, dims, load_image
from .errors import InvalidHandle, LeaseExpired, NotFound, check, error_for
from .ptx import PtxParam, ptx_kernels, ptx_params

if TYPE_CHECKING:
    from .lease import Lease

__all__ = ["DeviceArray", "FuncInfo", "Kernel", "Module", "Session"]

#: progress: a callable(done_bytes, total_bytes), True for a tqdm bar, or None.
Progress = Union[None, bool, Callable[[int, int], Any]]

_SOURCES = {0: "loaded", 1: "in context", 2: "disk cache"}


class _ProgressSink:
    """Routes the library's progress calls of one transfer to a callable or
    a tqdm bar, and keeps the first exception the callable raised."""

    def __init__(self, progress: Progress, total: int, desc: str) -> None:
        self.error: Optional[BaseException] = None
        self._bar: Any = None
        self._fn: Optional[Callable[[int, int], Any]] = None
        if progress is True:
            try:
                from tqdm.auto import tqdm
            except ImportError as e:  # pragma: no cover - depends on the machine
                raise ImportError("progress=True needs tqdm (pip install tqdm, or "
                                  "apt-get install python3-tqdm)") from e
            self._bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc)
        elif callable(progress):
            self._fn = progress
        elif progress not in (None, False):
            raise TypeError("progress is a callable(done_bytes, total_bytes), True or None")

    @property
    def active(self) -> bool:
        return self._bar is not None or self._fn is not None

    def __call__(self, done: int, total: int) -> None:
        if self.error is not None:
            return
        try:
            if self._bar is not None:
                self._bar.update(done - self._bar.n)
            elif self._fn is not None:
                self._fn(int(done), int(total))
        except BaseException as e:  # re-raised once the transfer returns
            self.error = e

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@dataclass(frozen=True)
class FuncInfo:
    """A kernel's attributes, as the driver reports them (gpulease_func_info).

    Attributes:
        num_regs: registers a thread.
        max_threads_per_block: the most threads a block may have.
        static_shared_bytes: statically allocated shared memory (bytes).
        local_bytes: local memory a thread (bytes).
        const_bytes: user constant memory (bytes).
        ptx_version: e.g. 80 for PTX ISA 8.0.
        binary_version: e.g. 90 for sm_90.
        param_sizes: the parameters' sizes in bytes, or None when the
            driver cannot tell.
    """

    num_regs: int
    max_threads_per_block: int
    static_shared_bytes: int
    local_bytes: int
    const_bytes: int
    ptx_version: int
    binary_version: int
    param_sizes: Optional[Tuple[int, ...]]


class Session:
    """A session on a lease (gpulease_session), from :meth:`Lease.session`:
    device arrays and modules that stay on the GPU between kernels. Ops run
    on the daemon in the order they were issued; launches, memsets and
    frees return without waiting, and their failures surface at
    :meth:`sync` (or the next call that waits) as the session's failure,
    which stays until :meth:`acknowledge`.

    The calls that wait for the daemon (:meth:`empty`, :meth:`zeros`,
    :meth:`to_device`, :meth:`load_module`, :meth:`Module.get_function`)
    raise their own failure and acknowledge it, so the session goes on
    after the exception; a failure of a pipelined op (a launch that
    faulted, a bad handle) stays the session's until :meth:`acknowledge`,
    and every later op fails fast with it.

    A context manager that closes the session (freeing its buffers and
    modules on the GPU). A session is used from one thread at a time.
    """

    def __init__(self, lease: "Lease") -> None:
        self._lease = lease
        self._client = lease.client
        self._sink: Optional[_ProgressSink] = None
        out = ffi.new("gpulease_session **")
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            check(lib.gpulease_session_open(self._client._handle(), lease._c, out, err), err)
        self._ptr: Any = out[0]
        self._client._sessions.add(self)
        # One C callback for the session's lifetime; it forwards to the
        # transfer under way (see _transfer).
        self._cb = ffi.callback("gpulease_progress_fn", self._on_progress)

    # -- plumbing --------------------------------------------------------
    def _handle(self) -> Any:
        if self._ptr is None:
            raise ValueError("the session is closed")
        self._client._handle()
        return self._ptr

    def _check_own(self, st: int, err: Any, op: str) -> None:
        """Raises the failure of a waiting op (MEM_ALLOC, MODULE_LOAD,
        FUNC_INFO). The daemon made it the session's failure; the caller
        gets it as this exception, so it is acknowledged here and the
        session goes on. A failure of an earlier op (the status this op
        failed fast with) stays."""
        if st == 0:
            return
        e = error_for(st, ffi.string(err.message).decode("utf-8", "replace"))
        if st >= 100:
            raise e  # the client's own (connection, timeout): nothing on the daemon to clear
        failure = ffi.new("gpulease_op_failure *")
        lib.gpulease_op_failure_init(failure)
        err2 = ffi.new("gpulease_error *")
        h = self._ptr
        if lib.gpulease_session_sync(h, failure, err2) != 0 and failure.status == st and \
                ffi.string(failure.op_name).decode("ascii", "replace") == op:
            lib.gpulease_session_acknowledge(h, failure.seq, err2)
        raise e

    def _on_progress(self, done: int, total: int, user: Any) -> None:
        sink = self._sink
        if sink is not None:
            sink(done, total)

    def _transfer(self, fn: Callable[..., int], buffer: int, ptr: Any, nbytes: int,
                  progress: Progress, desc: str) -> None:
        sink = _ProgressSink(progress, nbytes, desc)
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            h = self._handle()
            if sink.active:
                self._sink = sink
                lib.gpulease_session_set_progress(h, self._cb, ffi.NULL)
            try:
                st = fn(h, buffer, 0, ptr, nbytes, err)
            finally:
                if sink.active:
                    lib.gpulease_session_set_progress(h, ffi.NULL, ffi.NULL)
                    self._sink = None
                sink.close()
        check(st, err)
        if sink.error is not None:
            raise sink.error

    @property
    def lease(self) -> "Lease":
        """The lease the session is on."""
        return self._lease

    @property
    def id(self) -> int:
        """The session's id on the daemon."""
        return int(lib.gpulease_session_id(self._handle()))

    @property
    def closed(self) -> bool:
        """True once the session is closed."""
        return self._ptr is None

    # -- memory ----------------------------------------------------------
    def _alloc(self, nbytes: int) -> int:
        out = ffi.new("gpulease_buffer *")
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            self._check_own(lib.gpulease_mem_alloc(self._handle(), max(1, nbytes), out, err),
                            err, "MEM_ALLOC")
        return int(out[0])

    def empty(self, shape: ShapeLike, dtype: DTypeLike = np.float32) -> "DeviceArray":
        """A device array of ``shape`` (an int or a tuple) and ``dtype``
        (default float32), uninitialised (MEM_ALLOC: zeros, or this lease's
        own earlier data). Raises CapacityExceeded when the lease's VRAM
        cannot hold it (the message gives the free bytes), InvalidArgument,
        the session's failure, the connection errors."""
        shp, dt = _shape(shape), np.dtype(dtype)
        if dt.hasobject:
            raise TypeError("a device array cannot hold Python objects")
        nbytes = int(np.prod(shp, dtype=np.int64)) * dt.itemsize
        return DeviceArray(self, self._alloc(nbytes), shp, dt)

    def zeros(self, shape: ShapeLike, dtype: DTypeLike = np.float32) -> "DeviceArray":
        """As :meth:`empty`, then set to zero on the GPU (MEMSET,
        pipelined: no extra round trip)."""
        d = self.empty(shape, dtype)
        if d.nbytes:
            width = 4 if d.nbytes % 4 == 0 else 2 if d.nbytes % 2 == 0 else 1
            err = ffi.new("gpulease_error *")
            with self._client._lock:
                check(lib.gpulease_mem_set(self._handle(), d.handle, 0, width, 0,
                                           d.nbytes // width, err), err)
        return d

    def to_device(self, array: Any, progress: Progress = None) -> "DeviceArray":
        """Copies a numpy array (any shape, any non-object dtype; made
        C-contiguous) to a new device array of the same shape and dtype
        (MEM_ALLOC, then MEM_WRITE in chunks of 8 MiB).

        Args:
            array: the data (anything ``np.asarray`` takes).
            progress: ``callable(done_bytes, total_bytes)`` called after
                each chunk, ``True`` for a tqdm progress bar, or None.
        Raises CapacityExceeded, WriteFailed, the session's failure, the
        connection errors, and what the progress callable raised."""
        host = np.asarray(array, order="C")
        if host.dtype.hasobject:
            raise TypeError("a device array cannot hold Python objects")
        d = DeviceArray(self, self._alloc(host.nbytes), host.shape, host.dtype)
        if host.nbytes:
            try:
                d.copy_from_host(host, progress=progress)
            except BaseException:
                try:
                    d.free()
                except Exception:
                    pass
                raise
        return d

    # -- modules ---------------------------------------------------------
    def load_module(self, image: ImageLike) -> "Module":
        """Loads a module into the session (MODULE_LOAD): PTX (bytes or
        str), a cubin or a fatbin (bytes), or a path-like to a file of
        any. ``Module.source`` tells where the daemon found it. Raises
        LoadFailed (with the JIT log), Unsupported (e.g. cubin on the
        emulated device, or an instruction it lacks), TooLarge,
        InvalidArgument, the session's failure, the connection errors."""
        img = load_image(image)
        out = ffi.new("gpulease_module *")
        source = ffi.new("gpulease_module_source *")
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            self._check_own(lib.gpulease_module_load(self._handle(), img.data, len(img.data),
                                                     img.format, out, source, err),
                            err, "MODULE_LOAD")
        return Module(self, int(out[0]), _SOURCES.get(int(source[0]), "unknown"), img.format,
                      img.ptx)

    # -- ordering and failures -------------------------------------------
    def kernel_output(self) -> None:
        """Hands the lease's pending kernel output to the client's handler
        now (KERNEL_OUTPUT), after the session's earlier ops, as
        :meth:`sync` does after its SYNC; for output sooner than the next
        sync. Nothing without a handler. Raises the lease's and session's
        errors and the connection errors."""
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            check(lib.gpulease_session_kernel_output(self._handle(), err), err)

    def sync(self) -> None:
        """Waits until every earlier op of the session has finished on the
        GPU (SYNC), then raises the session's failure, if any: the
        exception of its status (e.g. LaunchFailed naming
        CUDA_ERROR_ILLEGAL_ADDRESS, InvalidHandle), with ``op`` (the failed
        op's name, "LAUNCH") and ``seq`` (its sequence number) set. The
        failure stays until :meth:`acknowledge`. Also raises the connection
        errors."""
        failure = ffi.new("gpulease_op_failure *")
        lib.gpulease_op_failure_init(failure)
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            st = lib.gpulease_session_sync(self._handle(), failure, err)
        if st != 0:
            e = error_for(st, ffi.string(err.message).decode("utf-8", "replace"))
            if failure.status != 0:
                e.op = ffi.string(failure.op_name).decode("ascii", "replace")
                e.seq = int(failure.seq)
            raise e

    def acknowledge(self, seq: Optional[int] = None) -> None:
        """Acknowledges the session's failure (that of op ``seq``; None:
        whichever failed), so that later ops run again. Waits like
        :meth:`sync`. Raises the status of a failure still unacknowledged,
        LaunchFailed when the failure lost the lease's CUDA context (open a
        new session then), the connection errors."""
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            check(lib.gpulease_session_acknowledge(
                self._handle(), 0xFFFFFFFFFFFFFFFF if seq is None else int(seq), err), err)

    def flush(self) -> None:
        """Sends the launches and other pipelined ops the library still
        batches, without waiting for them. Raises the connection errors."""
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            check(lib.gpulease_session_flush(self._handle(), err), err)

    def close(self) -> None:
        """Closes the session (SESSION_CLOSE, after its earlier ops),
        freeing its buffers and modules on the GPU. Closing twice is
        harmless. Raises the daemon's answer (NotFound when the session or
        the lease is gone already) and the connection errors; the session
        is closed in any case."""
        if self._ptr is None:
            return
        err = ffi.new("gpulease_error *")
        with self._client._lock:
            ptr, self._ptr = self._ptr, None
            self._client._sessions.discard(self)
            self._lease._sessions.discard(self)
            if self._client._ptr is None:
                return  # the client closed it already
            st = lib.gpulease_session_close(ptr, err)
        check(st, err)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self.close()
        except (NotFound, LeaseExpired):
            pass  # the lease, and with it the session, is gone already
        except Exception:
            if exc_type is None:
                raise

    def __repr__(self) -> str:
        return f"<gpulease.Session lease={self._lease.id}{' closed' if self.closed else ''}>"


class DeviceArray:
    """An array in the lease's VRAM (a session buffer), made by
    :meth:`Session.to_device`, :meth:`Session.empty` or
    :meth:`Session.zeros`. Passed to a kernel, it is the buffer's device
    pointer.

    Attributes:
        shape: tuple of ints; dtype: numpy dtype; size: elements;
        nbytes: bytes; handle: the buffer's handle on the daemon.
    """

    def __init__(self, session: Session, handle: int, shape: Tuple[int, ...],
                 dtype: np.dtype[Any]) -> None:
        self.session = session
        self.handle = handle
        self.shape: Tuple[int, ...] = tuple(shape)
        self.dtype: np.dtype[Any] = np.dtype(dtype)
        self.size: int = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes: int = self.size * self.dtype.itemsize
        self._freed = False

    def _check(self) -> None:
        if self._freed:
            raise InvalidHandle(lib.GPULEASE_INVALID_HANDLE, "the device array was freed")

    def to_host(self, progress: Progress = None) -> npt.NDArray[Any]:
        """Copies the array back into a new numpy array of its shape and
        dtype, after every earlier op of the session has finished
        (MEM_READ). ``progress`` as in :meth:`Session.to_device`. Raises
        InvalidHandle (freed), ReadFailed, the session's failure, the
        connection errors."""
        self._check()
        host = np.empty(self.shape, self.dtype)
        if self.nbytes:
            self.session._transfer(lib.gpulease_mem_read, self.handle,
                                   ffi.from_buffer(host, require_writable=True), self.nbytes,
                                   progress, "from device")
        return host

    def copy_from_host(self, array: Any, progress: Progress = None) -> None:
        """Overwrites the array with ``array``'s values (cast to this
        dtype; the shape must be the same) (MEM_WRITE). ``progress`` as in
        :meth:`Session.to_device`. Raises ValueError for another shape,
        InvalidHandle (freed), WriteFailed, the session's failure, the
        connection errors."""
        self._check()
        host = np.asarray(array, dtype=self.dtype, order="C")
        if host.shape != self.shape:
            raise ValueError(f"shape {host.shape} does not match the device array's {self.shape}")
        if self.nbytes:
            self.session._transfer(lib.gpulease_mem_write, self.handle, ffi.from_buffer(host),
                                   self.nbytes, progress, "to device")

    def free(self) -> None:
        """Frees the buffer once the session's earlier ops are done
        (MEM_FREE, pipelined). Freeing twice is harmless."""
        if self._freed or self.session.closed:
            self._freed = True
            return
        err = ffi.new("gpulease_error *")
        with self.session._client._lock:
            check(lib.gpulease_mem_free(self.session._handle(), self.handle, err), err)
        self._freed = True

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d device array")
        return self.shape[0]

    def __repr__(self) -> str:
        return (f"<gpulease.DeviceArray shape={self.shape} dtype={self.dtype}"
                f"{' freed' if self._freed else ''}>")


class Module:
    """A module loaded in a session (:meth:`Session.load_module`). Its
    kernels are attributes (``mod.vector_add``) or
    ``mod.get_function("vector_add")``.

    Attributes:
        handle: the module's handle on the daemon.
        source: where the daemon found it: "loaded" (loaded now), "in
            context" (already loaded in the lease's context), "disk cache"
            (PTX compiled earlier, from the daemon's cache).
        format: "PTX", "cubin" or "fatbin".
        ptx: the PTX text, or None for a cubin or fatbin.
    """

    def __init__(self, session: Session, handle: int, source: str, fmt: int,
                 ptx: Optional[str]) -> None:
        self.session = session
        self.handle = handle
        self.source = source
        self.format = {lib.GPULEASE_IMAGE_PTX: "PTX", lib.GPULEASE_IMAGE_CUBIN: "cubin",
                       lib.GPULEASE_IMAGE_FATBIN: "fatbin"}.get(fmt, "unknown")
        self.ptx = ptx
        self._kernels: Dict[str, Kernel] = {}

    @property
    def kernel_names(self) -> Optional[List[str]]:
        """The names of the module's kernels (from its PTX), or None for a
        cubin or fatbin."""
        return ptx_kernels(self.ptx) if self.ptx is not None else None

    def get_function(self, name: str) -> "Kernel":
        """The kernel ``name`` (mangled unless extern "C") (FUNC_INFO),
        with its attributes. Raises NotFound when the module has no such
        kernel, InvalidHandle (unloaded), the session's failure, the
        connection errors."""
        k = self._kernels.get(name)
        if k is not None:
            return k
        out = ffi.new("gpulease_function *")
        info = ffi.new("gpulease_func_info *")
        lib.gpulease_func_info_init(info)
        err = ffi.new("gpulease_error *")
        s = self.session
        with s._client._lock:
            s._check_own(lib.gpulease_function_get(s._handle(), self.handle, name.encode("utf-8"),
                                                   out, info, err), err, "FUNC_INFO")
        sizes = (tuple(int(info.param_sizes[i]) for i in range(info.param_count))
                 if info.param_count >= 0 else None)
        fi = FuncInfo(num_regs=info.num_regs, max_threads_per_block=info.max_threads_per_block,
                      static_shared_bytes=info.static_shared_bytes, local_bytes=info.local_bytes,
                      const_bytes=info.const_bytes, ptx_version=info.ptx_version,
                      binary_version=info.binary_version, param_sizes=sizes)
        params = ptx_params(self.ptx, name) if self.ptx is not None else None
        k = Kernel(self, name, int(out[0]), fi, params)
        self._kernels[name] = k
        return k

    def __getattr__(self, name: str) -> "Kernel":
        if name.startswith("_"):
            raise AttributeError(name)
        if self.ptx is not None and name not in ptx_kernels(self.ptx):
            raise AttributeError(f"module has no kernel {name!r}; its kernels: "
                                 f"{', '.join(ptx_kernels(self.ptx)) or 'none'}")
        try:
            return self.get_function(name)
        except NotFound as e:
            raise AttributeError(f"module has no kernel {name!r} ({e})") from e

    def unload(self) -> None:
        """Unloads the module (MODULE_UNLOAD, pipelined); its kernels become
        invalid handles."""
        err = ffi.new("gpulease_error *")
        s = self.session
        with s._client._lock:
            check(lib.gpulease_module_unload(s._handle(), self.handle, err), err)
        self._kernels.clear()

    def __repr__(self) -> str:
        return f"<gpulease.Module {self.format} source={self.source!r}>"


class Kernel:
    """A kernel of a loaded module. Launch it numba-style::

        kernel[grid, block](*args)                 # or [grid, block, shared_mem]
        kernel[grid, block](*args, shared_mem=1024)

    grid and block are ints or tuples of 1 to 3 ints. Arguments: a
    :class:`DeviceArray` is its buffer's pointer; a numpy scalar is a
    by-value parameter of its size; a plain int or float takes the PTX
    parameter's type (TypeError for cubin and fatbin modules). Launches are
    pipelined: errors of the kernel surface at :meth:`Session.sync`.

    Attributes:
        name: the kernel's name; handle: its function handle;
        info: its :class:`FuncInfo`; params: its PTX parameters
        (list of :class:`PtxParam`), or None for cubin and fatbin.
    """

    def __init__(self, module: Module, name: str, handle: int, info: FuncInfo,
                 params: Optional[List[PtxParam]]) -> None:
        self.module = module
        self.name = name
        self.handle = handle
        self.info = info
        self.params = params

    def __getitem__(self, config: Any) -> Callable[..., None]:
        if not isinstance(config, tuple) or len(config) not in (2, 3):
            raise TypeError("launch as kernel[grid, block](*args) or "
                            "kernel[grid, block, shared_mem](*args)")
        grid, block = config[0], config[1]
        default_shared = int(config[2]) if len(config) == 3 else 0

        def launch(*args: Any, shared_mem: int = default_shared) -> None:
            self.launch(grid, block, *args, shared_mem=shared_mem)

        return launch

    def launch(self, grid: DimLike, block: DimLike, *args: Any, shared_mem: int = 0) -> None:
        """Queues a launch (LAUNCH, pipelined: returns once sent) with
        ``grid`` blocks of ``block`` threads and ``shared_mem`` bytes of
        dynamic shared memory a block. Raises TypeError for arguments that
        do not fit the kernel's parameters, InvalidHandle for a freed
        device array, the session's failure, the connection errors."""
        g, b = dims(grid, "grid"), dims(block, "block")
        if isinstance(shared_mem, bool) or not 0 <= int(shared_mem) <= 0xFFFFFFFF:
            raise ValueError(f"shared_mem must be bytes, 0..4294967295; got {shared_mem!r}")
        c_args = _session_args(self, args)
        err = ffi.new("gpulease_error *")
        s = self.module.session
        with s._client._lock:
            check(lib.gpulease_launch(s._handle(), self.handle, list(g), list(b), int(shared_mem),
                                      c_args, len(args), err), err)

    def __repr__(self) -> str:
        return f"<gpulease.Kernel {self.name}>"


def _session_args(kernel: Kernel, args: Sequence[Any]) -> Any:
    params = kernel.params
    sizes = kernel.info.param_sizes
    expected = len(params) if params is not None else (len(sizes) if sizes is not None else None)
    if expected is not None and expected != len(args):
        raise TypeError(f"kernel {kernel.name} takes {expected} parameters, got {len(args)} arguments")
    if len(args) > lib.GPULEASE_MAX_PARAMS:
        raise TypeError(f"kernel {kernel.name}: at most {lib.GPULEASE_MAX_PARAMS} parameters")
    c_args = ffi.new("gpulease_arg[]", max(1, len(args)))
    for i, a in enumerate(args):
        p = params[i] if params is not None else None
        size = p.size if p is not None else (sizes[i] if sizes is not None else None)
        ca = c_args[i]
        if isinstance(a, DeviceArray):
            a._check()
            if size is not None and size != 8:
                raise TypeError(f"kernel {kernel.name}: argument {i} is a device array (a pointer), "
                                f"but the parameter has {size} bytes")
            ca.kind = lib.GPULEASE_ARG_BUFFER
            ca.buffer = a.handle
            ca.offset = 0
        elif isinstance(a, np.ndarray):
            raise TypeError(f"kernel {kernel.name}: argument {i} is a host numpy array; copy it "
                            "to the GPU first with session.to_device(array)")
        elif is_scalar(a):
            data = scalar_bytes(a, p, params is not None, kernel.name, i)
            if size is not None and len(data) != size:
                raise TypeError(f"kernel {kernel.name}: argument {i} has {len(data)} bytes, the "
                                f"parameter {size}")
            if not 1 <= len(data) <= lib.GPULEASE_MAX_SCALAR_BYTES:
                raise TypeError(f"kernel {kernel.name}: argument {i} has {len(data)} bytes; a "
                                f"by-value parameter has 1..{lib.GPULEASE_MAX_SCALAR_BYTES}")
            ca.kind = lib.GPULEASE_ARG_SCALAR
            ca.size = len(data)
            ffi.memmove(ca.value, data, len(data))
        else:
            raise TypeError(f"kernel {kernel.name}: argument {i} is a {type(a).__name__}; pass a "
                            "DeviceArray or a scalar")
    return c_args

