"""Connections to a gpuleased daemon, its inventory, and new leases."""

from __future__ import annotations

import math
import os
import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union

from ._cdef import ANY_GPU
from ._lib import ffi, lib
from ._util import DimLike, ImageLike, SizeLike, parse_size
from .errors import Disconnected, check
from .kout import KernelOutputHandler, make_callback
from .lease import Lease, run_call

if TYPE_CHECKING:
    import numpy.typing as npt

    from .session import Session

__all__ = ["AdmissionInfo", "Client", "GpuInfo", "Inventory", "PoolInfo", "TenantInfo",
           "WarmPoolInfo", "connect", "library_version"]

LEASE_CLASSES = ("isolated", "shared", "device", "partition")


def library_version() -> Tuple[int, int, int]:
    """The version of the libgpulease loaded (gpulease_version()), as
    (major, minor, patch); :data:`gpulease.__version__` is the package's."""
    v = ffi.new("uint32_t[3]")
    lib.gpulease_version(v, v + 1, v + 2)
    return (int(v[0]), int(v[1]), int(v[2]))


def _str(chars: Any) -> str:
    return str(ffi.string(chars).decode("utf-8", "replace"))


def _limit(value: int, all_ones: int) -> Optional[int]:
    return None if value == all_ones else int(value)


@dataclass(frozen=True)
class GpuInfo:
    """One GPU of the node (gpulease_gpu_info). Sizes in bytes.

    Attributes:
        index: the daemon's GPU index (NVML order).
        uuid: ``"GPU-xxxxxxxx-..."``.
        name: e.g. ``"NVIDIA H100 80GB HBM3"``, or the emulated device's.
        cc_major, cc_minor: compute capability (9, 0).
        sm_count: streaming multiprocessors (0: unknown).
        total_vram_bytes, free_vram_bytes (as NVML reports now),
        leased_vram_bytes (granted to live leases).
        active_leases: live leases on the GPU.
        flags: GPULEASE_GPU_* bits (see ``emulated``, ``mig``, ``fenced``).
        context_overhead_bytes: VRAM a CUDA context takes beyond a lease's
            size (0 for the emulated device).
        ptx_isa_driver: the newest PTX ISA version (major, minor) the
            node's driver loads for it ((9, 9) on the emulated device:
            every 9.x); (0, 0) when unknown.
        ptx_isa_nvjitlink: the newest through nvJitLink, which compiles
            PTX newer than the driver takes; (0, 0) when the node has none.
    """

    index: int
    uuid: str
    name: str
    cc_major: int
    cc_minor: int
    sm_count: int
    total_vram_bytes: int
    free_vram_bytes: int
    leased_vram_bytes: int
    active_leases: int
    flags: int
    context_overhead_bytes: int
    ptx_isa_driver: Tuple[int, int] = (0, 0)
    ptx_isa_nvjitlink: Tuple[int, int] = (0, 0)

    @property
    def compute_capability(self) -> Tuple[int, int]:
        """(major, minor), e.g. (9, 0)."""
        return (self.cc_major, self.cc_minor)

    @property
    def emulated(self) -> bool:
        """True for the daemon's emulated device (PTX run on the CPU)."""
        return bool(self.flags & lib.GPULEASE_GPU_EMULATED)

    @property
    def mig(self) -> bool:
        """True for a GPU in MIG mode (partition leases only)."""
        return bool(self.flags & lib.GPULEASE_GPU_MIG)

    @property
    def fenced(self) -> bool:
        """True while the GPU takes no new leases (a worker's teardown
        failed)."""
        return bool(self.flags & lib.GPULEASE_GPU_FENCED)

    @property
    def sm_targets(self) -> Tuple[str, ...]:
        """The SM targets it runs: ("sm_90", "sm_90a"), the second where
        the GPU has an arch-specific target."""
        t = f"sm_{self.cc_major}{self.cc_minor}"
        if self.flags & lib.GPULEASE_GPU_ARCH_SPECIFIC:
            return (t, t + "a")
        return (t,)


@dataclass(frozen=True)
class TenantInfo:
    """The caller's tenant as the daemon sees it (gpulease_tenant_info):
    its quota and its use now. A quota of None is no limit.

    Attributes:
        name: the tenant's name ("" for an anonymous caller).
        flags: GPULEASE_TENANT_* bits (see ``admin``, ``listed``).
        quota_vram_bytes: VRAM of all its live leases together (bytes).
        quota_leases, quota_sessions: live leases, live sessions.
        quota_max_ttl_s: the longest TTL of one lease (seconds).
        quota_gpu_seconds_per_hour: lease-seconds in any hour.
        used_vram_bytes, used_leases, used_sessions, used_gpu_seconds (in
        the last hour): its use now.
    """

    name: str
    flags: int
    quota_vram_bytes: Optional[int]
    quota_leases: Optional[int]
    quota_sessions: Optional[int]
    quota_max_ttl_s: Optional[int]
    quota_gpu_seconds_per_hour: Optional[int]
    used_vram_bytes: int
    used_leases: int
    used_sessions: int
    used_gpu_seconds: int

    @property
    def admin(self) -> bool:
        """True when the tenant may revoke any lease and unfence GPUs."""
        return bool(self.flags & lib.GPULEASE_TENANT_ADMIN)

    @property
    def listed(self) -> bool:
        """True when the tenant is named in the daemon's tenants file."""
        return bool(self.flags & lib.GPULEASE_TENANT_LISTED)


@dataclass(frozen=True)
class Inventory:
    """The node's GPUs and the caller's tenant (gpulease_inventory).

    Attributes:
        driver_version: the NVIDIA driver's version ("" with no driver).
        max_ttl_s: the longest lease TTL the daemon grants (seconds).
        gpus: the node's GPUs, in index order.
        tenant: the caller's tenant, quota and use.
    """

    driver_version: str
    max_ttl_s: int
    gpus: List[GpuInfo]
    tenant: TenantInfo


@dataclass(frozen=True)
class WarmPoolInfo:
    """The warm workers of one GPU (gpuleased --warm-workers): the warm
    pool's size (``target``), the workers ready now and those starting.
    Not the client pool (:class:`gpulease.Pool`, many daemons)."""

    index: int
    target: int
    ready: int
    starting: int


@dataclass(frozen=True)
class AdmissionInfo:
    """One GPU's admission of isolated CUDA contexts (gpuleased
    --max-isolated-contexts): the contexts of their own it may hold
    (``limit``, ``learned`` when the driver's refusal lowered it), those it
    holds now (``held``: ``leased``, ``warm``, ``spare`` and
    ``tearing_down`` together) and the LEASE_ALLOCs waiting for one
    (``queued``)."""

    index: int
    limit: int
    learned: bool
    held: int
    leased: int
    warm: int
    spare: int
    tearing_down: int
    queued: int


#: Deprecated (0.2, removed in 0.3): the old name of :class:`WarmPoolInfo`.
PoolInfo = WarmPoolInfo


def _gpu_info(g: Any) -> GpuInfo:
    return GpuInfo(
        index=g.index, uuid=_str(g.uuid), name=_str(g.name), cc_major=g.cc_major,
        cc_minor=g.cc_minor, sm_count=g.sm_count, total_vram_bytes=g.total_vram_bytes,
        free_vram_bytes=g.free_vram_bytes, leased_vram_bytes=g.leased_vram_bytes,
        active_leases=g.active_leases, flags=g.flags,
        context_overhead_bytes=g.context_overhead_bytes,
        ptx_isa_driver=(g.ptx_isa_driver_major, g.ptx_isa_driver_minor),
        ptx_isa_nvjitlink=(g.ptx_isa_nvjitlink_major, g.ptx_isa_nvjitlink_minor))


def _tenant_info(t: Any) -> TenantInfo:
    u32, u64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
    return TenantInfo(
        name=_str(t.name), flags=t.flags,
        quota_vram_bytes=_limit(t.quota_vram_bytes, u64),
        quota_leases=_limit(t.quota_leases, u32),
        quota_sessions=_limit(t.quota_sessions, u32),
        quota_max_ttl_s=_limit(t.quota_max_ttl_s, u32),
        quota_gpu_seconds_per_hour=_limit(t.quota_gpu_seconds_per_hour, u64),
        used_vram_bytes=t.used_vram_bytes, used_leases=t.used_leases,
        used_sessions=t.used_sessions, used_gpu_seconds=t.used_gpu_seconds)


class Client:
    """A connection to a gpuleased daemon (gpulease_client): one QUIC
    connection. Make one with :func:`connect`; close it with
    :meth:`close` or a ``with`` block. Closing closes the client's open
    sessions but frees no lease: leases live on the daemon until freed or
    expired.

    Calls on one client are serialised by a lock, so a client may be shared
    by threads (they take turns); give each thread its own client for
    parallel work.
    """

    def __init__(self, ptr: Any, opts: Any, keep: List[Any], addr: str) -> None:
        self._ptr = ffi.gc(ptr, lib.gpulease_client_close)
        self._opts = opts  # gpulease_connect_options *, for renewers
        self._keep = keep  # the C strings opts points to
        self._addr = addr
        self._lock = threading.RLock()
        self._sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()
        self._kout_cb: Any = None  # the cffi callback the library holds

    def set_kernel_output(self, handler: KernelOutputHandler) -> None:
        """Where the kernels' printf output of this client's later calls
        goes (gpulease_client_set_kernel_output): a callable taking a
        :class:`gpulease.KernelOutput`, called on the calling thread before
        :meth:`Lease.call` or :meth:`Session.sync` returns; "stderr" to
        write it to sys.stderr; None to ask for none (the daemon then keeps
        a lease's output pending, up to 64 KiB, for a later call that
        asks). The text of a failed device-side assert is not delivered
        here: it is in the LaunchFailed error's message. ValueError for any
        other handler."""
        cb = make_callback(handler)
        with self._lock:
            lib.gpulease_client_set_kernel_output(self._handle(), cb if cb is not None else ffi.NULL,
                                                  ffi.NULL)
            self._kout_cb = cb

    @property
    def addr(self) -> str:
        """The daemon's address as given to :func:`connect`."""
        return self._addr

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._ptr is None

    def _handle(self) -> Any:
        if self._ptr is None:
            raise Disconnected(lib.GPULEASE_DISCONNECTED, "the client is closed")
        return self._ptr

    def inventory(self) -> Inventory:
        """The node's GPUs and the caller's tenant (GET_INVENTORY).

        Raises Disconnected, Timeout, ProtocolError, or a daemon status."""
        inv = ffi.new("gpulease_inventory *")
        lib.gpulease_inventory_init(inv)
        err = ffi.new("gpulease_error *")
        with self._lock:
            check(lib.gpulease_inventory_get(self._handle(), inv, err), err)
        return Inventory(driver_version=_str(inv.driver_version), max_ttl_s=inv.max_ttl_s,
                         gpus=[_gpu_info(inv.gpus[i]) for i in range(inv.gpu_count)],
                         tenant=_tenant_info(inv.tenant))

    def warm_pool(self) -> List[WarmPoolInfo]:
        """The daemon's warm-worker pool of every GPU (POOL_INFO,
        gpulease_warm_pool_get): its size and the workers ready and
        starting.

        Raises Unsupported from a daemon without warm workers, Disconnected,
        Timeout, ProtocolError."""
        info = ffi.new("gpulease_warm_pool_info *")
        lib.gpulease_warm_pool_info_init(info)
        err = ffi.new("gpulease_error *")
        with self._lock:
            check(lib.gpulease_warm_pool_get(self._handle(), info, err), err)
        return [WarmPoolInfo(index=g.index, target=g.target, ready=g.ready, starting=g.starting)
                for g in (info.gpus[i] for i in range(info.gpu_count))]

    def admission(self) -> List[AdmissionInfo]:
        """Each GPU's admission of isolated CUDA contexts (GET_INVENTORY
        with flags bit 0, gpulease_admission_get): its limit, the contexts
        it holds and the requests waiting for one.

        Raises Unsupported from a daemon older than 0.2, Disconnected,
        Timeout, ProtocolError."""
        info = ffi.new("gpulease_admission_info *")
        lib.gpulease_admission_info_init(info)
        err = ffi.new("gpulease_error *")
        with self._lock:
            check(lib.gpulease_admission_get(self._handle(), info, err), err)
        return [AdmissionInfo(index=i, limit=g.max_isolated_contexts,
                              learned=bool(g.flags & 1), held=g.isolated_contexts,
                              leased=g.leased, warm=g.warm, spare=g.spare,
                              tearing_down=g.tearing_down, queued=g.queued)
                for i, g in ((i, info.gpus[i]) for i in range(info.gpu_count))]

    def pool(self) -> List[WarmPoolInfo]:
        """Deprecated (0.2, removed in 0.3): :meth:`warm_pool` under its old
        name; warns with DeprecationWarning."""
        warnings.warn("Client.pool() is deprecated: use Client.warm_pool()", DeprecationWarning,
                      stacklevel=2)
        return self.warm_pool()

    def lease(self, vram: SizeLike, ttl: int = 60, gpu: Union[int, str, None] = None,
              lease_class: str = "isolated", renew: bool = False) -> Lease:
        """Leases VRAM on a GPU of the node (LEASE_ALLOC).

        Args:
            vram: bytes, as an int or a string such as "1GiB", "512MiB",
                "64M" (K/M/G/T and KiB...TiB: powers of 1024; KB, MB, GB:
                powers of 1000).
            ttl: time to live in seconds (1 .. the daemon's max_ttl_s).
            gpu: the GPU's index, or its UUID as the inventory gives it
                ("GPU-9c95...", "EMU-1"); None: where the daemon's
                placement puts it (gpuleased --placement).
            lease_class: "isolated" (default: a CUDA context of its own),
                "shared", "device" (the whole GPU) or "partition" (a MIG
                instance); see gpulease.h.
            renew: True to keep the lease alive with the library's renewer
                thread (it renews for ``ttl`` seconds at two thirds of it)
                until the lease is freed or its ``with`` block ends.
        Returns a :class:`Lease`, a context manager that frees it.
        Raises InvalidArgument (zero size or TTL, a TTL above the maximum,
        limits on a shared lease), CapacityExceeded, NoDevice, Busy,
        Unsupported, QuotaExceeded, the connection errors; ValueError for
        an unknown lease class or a bad size, or a UUID no GPU of the
        node has."""
        size = parse_size(vram)
        if isinstance(gpu, str):
            gpus = self.inventory().gpus
            match = [g.index for g in gpus if g.uuid == gpu]
            if not match:
                raise ValueError(f"no GPU with UUID {gpu!r} on this node (its GPUs: "
                                 f"{', '.join(g.uuid for g in gpus) or 'none'})")
            gpu = match[0]
        if lease_class not in LEASE_CLASSES:
            raise ValueError(f"lease_class {lease_class!r} is not one of {', '.join(LEASE_CLASSES)}")
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 <= ttl <= 0xFFFFFFFF:
            raise ValueError(f"ttl must be whole seconds (an int), got {ttl!r}")
        opts = ffi.new("gpulease_lease_opts *")
        lib.gpulease_lease_opts_default(opts)
        opts.lease_class = LEASE_CLASSES.index(lease_class)
        c = ffi.new("gpulease_lease *")
        err = ffi.new("gpulease_error *")
        with self._lock:
            check(lib.gpulease_lease_alloc_opts(self._handle(), ANY_GPU if gpu is None else int(gpu),
                                                size, ttl, opts, c, err), err)
        lease = Lease(self, c)
        if renew:
            try:
                lease._start_renewer()
            except BaseException:
                try:
                    lease.free()
                except Exception:
                    pass
                raise
        return lease

    def attach(self, lease_id: int, secret: Union[str, bytes]) -> Lease:
        """A :class:`Lease` object for an existing lease, from its id and
        secret (80 hex digits, or the 40 bytes), e.g. one made with the
        ``gpulease`` CLI. It queries the lease (LEASE_QUERY) to fill in its
        state, so a wrong secret raises Unauthorized here, an unknown lease
        NotFound, an expired one LeaseExpired. ValueError for a secret that
        is not 80 hex digits or 40 bytes."""
        c = ffi.new("gpulease_lease *")
        c.id = int(lease_id)
        if isinstance(secret, str):
            if lib.gpulease_secret_from_hex(secret.encode("ascii", "replace"), c.secret) != 0:
                raise ValueError("a lease secret is 80 hex digits")
        else:
            raw = bytes(secret)
            if len(raw) != lib.GPULEASE_SECRET_BYTES:
                raise ValueError(f"a lease secret is {lib.GPULEASE_SECRET_BYTES} bytes")
            ffi.memmove(c.secret, raw, len(raw))
        lease = Lease(self, c)
        lease.query()
        return lease

    def call(self, image: ImageLike, kernel: str, grid: DimLike = 1, block: DimLike = 1,
             args: Sequence[Any] = (), shared_mem: int = 0, retries: int = 4, ttl: int = 60,
             gpu: Optional[int] = None) -> Union[npt.NDArray[Any], List[npt.NDArray[Any]]]:
        """Runs a kernel as a pure function on a fresh lease of just the
        VRAM the call needs, freed afterwards (gpulease_call with no
        lease). ``ttl`` (seconds) bounds the fresh lease, ``gpu`` picks its
        GPU (None: any). Everything else as :meth:`Lease.call`."""
        return run_call(self, None, image, kernel, grid, block, args, shared_mem, retries,
                        ttl, gpu)

    def close(self) -> None:
        """Closes the client's open sessions (freeing their buffers and
        modules) and the connection. Leases are not freed. Closing twice is
        harmless."""
        with self._lock:
            if self._ptr is None:
                return
            for s in list(self._sessions):
                try:
                    s.close()
                except Exception:
                    pass
            ptr, self._ptr = self._ptr, None
            ffi.release(ptr)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<gpulease.Client {self._addr}{' closed' if self.closed else ''}>"


def connect(addr: str, *, pin_sha256: Optional[str] = None, ca_file: Optional[str] = None,
            insecure: bool = False, cert_file: Optional[str] = None,
            key_file: Optional[str] = None, token: Optional[str] = None,
            timeout: float = 30.0, no_local: bool = False,
            kernel_output: KernelOutputHandler = "stderr") -> Client:
    """Connects to a gpuleased daemon over QUIC with TLS 1.3
    (gpulease_client_connect).

    Args:
        addr: "HOST:PORT", "[IPv6]:PORT" or "HOST" (port 5701).
        pin_sha256: the SHA-256 fingerprint of the daemon's certificate (64
            hex digits, colons allowed), as gpuleased prints it.
        ca_file: a PEM file of CA certificates the daemon's must chain to.
        insecure: True to skip verifying the daemon (encryption only).
            With none of these three, the system's trust store is used.
        cert_file, key_file: a client certificate and key (PEM) for a
            daemon with ``--auth mtls``.
        token: a bearer token for a daemon with ``--auth token``; default
            ``$GPULEASE_TOKEN`` when set.
        timeout: seconds to wait for each reply and for the handshake.
        no_local: True to move every transfer over QUIC, never through
            shared memory with a daemon on this machine (by default
            transfers of 1 MiB and more to a daemon on the same machine
            take its local socket when its file mode admits the caller).
        kernel_output: where the kernels' printf text goes: "stderr" (the
            default), a callable taking a :class:`gpulease.KernelOutput`, or
            None; see :meth:`Client.set_kernel_output`.
    Returns a :class:`Client` (a context manager that closes it).
    Raises InvalidArgument (bad address, unreadable certificate or key),
    Disconnected (cannot reach the daemon), TlsFailed (verification
    failed), Unauthorized (unknown token), Unsupported (a token for a daemon
    without tokens); ValueError for a timeout that is not positive."""
    if not (timeout > 0) or math.isinf(timeout):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    timeout_ms = max(1, int(math.ceil(timeout * 1000)))
    if timeout_ms > 0xFFFFFFFF:
        raise ValueError(f"timeout {timeout} s is too long")
    if token is None:
        token = os.environ.get("GPULEASE_TOKEN") or None
    opts = ffi.new("gpulease_connect_options *")
    lib.gpulease_connect_options_default(opts)
    keep: List[Any] = []

    def cstr(value: Optional[str]) -> Any:
        if value is None:
            return ffi.NULL
        s = ffi.new("char[]", os.fsencode(value))
        keep.append(s)
        return s

    opts.addr = cstr(addr)
    opts.pin_sha256 = cstr(pin_sha256)
    opts.ca_file = cstr(ca_file)
    opts.insecure = 1 if insecure else 0
    opts.cert_file = cstr(cert_file)
    opts.key_file = cstr(key_file)
    opts.bearer_token = cstr(token)
    opts.timeout_ms = timeout_ms
    opts.no_local = 1 if no_local else 0
    out = ffi.new("gpulease_client **")
    err = ffi.new("gpulease_error *")
    cb = make_callback(kernel_output)  # ValueError before connecting
    check(lib.gpulease_client_connect(opts, out, err), err)
    client = Client(out[0], opts, keep, addr)
    if cb is not None:
        lib.gpulease_client_set_kernel_output(client._ptr, cb, ffi.NULL)
        client._kout_cb = cb
    return client
