"""Client pools: one job over many daemons (gpulease_pool, docs/scale-out.md).

A :class:`Pool` is a set of daemons (nodes) from a list, a nodes file or
DNS SRV records. :meth:`Pool.map` runs one kernel over the chunks of an
input on all of them: it leases VRAM on the nodes (a lease serves many
chunks), runs each chunk with one submit, retries a chunk elsewhere when
its node is lost, and gathers the outputs in chunk order::

    x = np.arange(1_000_000, dtype=np.uint32)
    with gpulease.Pool(["gpu1:5701", "gpu2:5701"], ca_file="ca.pem") as pool:
        y = pool.map(pathlib.Path("chunk_mix.ptx"), "chunk_mix", x, chunk=250_000,
                     grid=1000, block=256,
                     args=[gpulease.IN, gpulease.OUT, gpulease.CHUNK_BYTES,
                           gpulease.CHUNK_INDEX, np.uint32(250_000)])
        print(pool.last_stats.retries, [n.chunks for n in pool.last_stats.nodes])

Not to be confused with :meth:`Client.warm_pool` (:class:`WarmPoolInfo`), one
daemon's warm workers.
"""

from __future__ import annotations

import enum
import math
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._lib import ffi, lib
from ._params import DTypeLike, InOut, Out, input_array, is_scalar, scalar_bytes
from ._util import DimLike, ImageLike, dims, load_image
from .client import Inventory, _gpu_info, _str, _tenant_info
from .errors import Disconnected, GpuleaseError, check, error_for
from .ptx import PtxParam, ptx_params

__all__ = ["CHUNK_BYTES", "CHUNK_INDEX", "IN", "OUT", "ChunkArg", "MapNodeStats", "MapStats",
           "Pool", "PoolNode"]

_U32 = 0xFFFFFFFF
_LEASE_CLASSES = {"isolated": 0, "shared": 1}

#: A node of :class:`Pool`: "HOST:PORT", or ("HOST:PORT", PIN_SHA256).
NodeLike = Union[str, Tuple[str, Optional[str]]]
#: progress: a callable(done_chunks, total_chunks), True for a tqdm bar, or None/False.
MapProgress = Union[None, bool, Callable[[int, int], Any]]


class ChunkArg(enum.Enum):
    """A kernel parameter of :meth:`Pool.map` that the chunk fills in; use
    the module's constants :data:`IN`, :data:`OUT`, :data:`CHUNK_BYTES`
    and :data:`CHUNK_INDEX`."""

    IN = 1     # GPULEASE_MAP_IN: pointer to the chunk's input slice
    OUT = 2    # GPULEASE_MAP_OUT: pointer to the chunk's output slice
    BYTES = 3  # GPULEASE_MAP_BYTES: u32, the chunk's input bytes
    INDEX = 4  # GPULEASE_MAP_INDEX: u32, the chunk's index from 0

    def __repr__(self) -> str:
        return "gpulease." + {1: "IN", 2: "OUT", 3: "CHUNK_BYTES", 4: "CHUNK_INDEX"}[self.value]

    __str__ = __repr__


#: A device pointer to the chunk's input slice (a ``.u64`` parameter).
IN = ChunkArg.IN
#: A device pointer to the chunk's output slice (``out_per_chunk`` elements
#: of ``out_dtype``; a ``.u64`` parameter).
OUT = ChunkArg.OUT
#: The chunk's input size in BYTES as a u32 (the last chunk may be short).
CHUNK_BYTES = ChunkArg.BYTES
#: The chunk's index, 0 .. chunks - 1, as a u32.
CHUNK_INDEX = ChunkArg.INDEX

_POINTER_KINDS = (ChunkArg.IN, ChunkArg.OUT)


@dataclass(frozen=True)
class PoolNode:
    """One node of a pool as :meth:`Pool.inventory` found it
    (gpulease_pool_node).

    Attributes:
        addr: "HOST:PORT" as listed or resolved from SRV records.
        up: True when the node answered now.
        status: 0 (OK) when up, else the gpulease_status number of why it
            could not be read (see ``status_name`` and ``error``).
        message: the library's or the node's message when down, else "".
        inventory: the node's GPUs and the caller's tenant when up, else
            None.
    """

    addr: str
    up: bool
    status: int
    message: str
    inventory: Optional[Inventory]

    @property
    def status_name(self) -> str:
        """``"OK"``, or the status's name (``"DISCONNECTED"``, ``"TLS_FAILED"``)."""
        from .errors import status_name

        return status_name(self.status)

    @property
    def error(self) -> Optional[GpuleaseError]:
        """Why the node is down, as the exception object; None when up."""
        return None if self.status == 0 else error_for(self.status, self.message)


@dataclass(frozen=True)
class MapNodeStats:
    """What one node did in a map (gpulease_map_node_stats).

    Attributes:
        addr: "HOST:PORT".
        chunks: chunks it completed.
        retries: chunks that failed there and went back to the queue.
        failures: failed ops there (submits, lease allocations, connections).
        leases: leases it granted.
        bytes_in: input bytes sent to it; bytes_out: output bytes read from it.
        seconds: time its chunks' submits took, summed over its leases.
    """

    addr: str
    chunks: int
    retries: int
    failures: int
    leases: int
    bytes_in: int
    bytes_out: int
    seconds: float


@dataclass(frozen=True)
class MapStats:
    """What a map did (gpulease_map_stats), also when it failed
    (:attr:`Pool.last_stats`).

    Attributes:
        chunks: chunks in the job; done: chunks completed.
        retries: chunk tries that failed and were retried.
        backups: chunks run twice at the end of the job, a backup copy on
            another node of one that ran long; the first to finish counts.
        seconds: the job's wall time.
        chunk_p50_ms, chunk_p99_ms: a completed chunk's submit time in
            milliseconds, median and 99th percentile (0 when none completed).
        nodes: every node of the job, in the pool's order.
    """

    chunks: int
    done: int
    retries: int
    backups: int
    seconds: float
    chunk_p50_ms: float
    chunk_p99_ms: float
    nodes: List[MapNodeStats]

    @property
    def chunks_per_s(self) -> float:
        """Chunks completed a second of the job's wall time."""
        return self.done / self.seconds if self.seconds > 0 else 0.0


def _inventory(inv: Any) -> Inventory:
    n = min(int(inv.gpu_count), lib.GPULEASE_MAX_GPUS)
    return Inventory(driver_version=_str(inv.driver_version), max_ttl_s=inv.max_ttl_s,
                     gpus=[_gpu_info(inv.gpus[i]) for i in range(n)],
                     tenant=_tenant_info(inv.tenant))


def _map_stats(s: Any) -> MapStats:
    nodes = []
    if s.nodes != ffi.NULL:
        for i in range(int(s.node_count)):
            x = s.nodes[i]
            nodes.append(MapNodeStats(addr=_str(x.addr), chunks=int(x.chunks),
                                      retries=int(x.retries), failures=int(x.failures),
                                      leases=int(x.leases), bytes_in=int(x.bytes_in),
                                      bytes_out=int(x.bytes_out), seconds=float(x.seconds)))
    return MapStats(chunks=int(s.chunks), done=int(s.done), retries=int(s.retries),
                    backups=int(s.backups), seconds=float(s.seconds), chunk_p50_ms=float(s.chunk_p50_ms),
                    chunk_p99_ms=float(s.chunk_p99_ms), nodes=nodes)


def _positive_u32(value: Any, what: str, unit: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _U32:
        raise ValueError(f"{what} must be {unit}, 1..{_U32}; got {value!r}")
    return value


def _millis(seconds: float, what: str) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or \
            not seconds > 0 or math.isinf(seconds):
        raise ValueError(f"{what} must be a positive number of seconds, got {seconds!r}")
    ms = max(1, int(math.ceil(seconds * 1000)))
    if ms > _U32:
        raise ValueError(f"{what} {seconds} s is too long")
    return ms


class _MapProgress:
    """Routes the library's progress calls of one map (from its threads,
    one at a time) to a callable or a tqdm bar; keeps the first exception
    the callable raised, so none reaches the C caller."""

    def __init__(self, progress: MapProgress) -> None:
        self.error: Optional[BaseException] = None
        self._bar: Any = None
        self._fn: Optional[Callable[[int, int], Any]] = None
        self._tqdm: Any = None
        if progress is True:
            try:
                from tqdm.auto import tqdm
            except ImportError as e:  # pragma: no cover - depends on the machine
                raise ImportError("progress=True needs tqdm (pip install tqdm, or "
                                  "apt-get install python3-tqdm)") from e
            self._tqdm = tqdm
        elif callable(progress):
            self._fn = progress
        elif progress not in (None, False):
            raise TypeError("progress is a callable(done_chunks, total_chunks), True or None")

    @property
    def active(self) -> bool:
        return self._tqdm is not None or self._fn is not None

    def open(self, total: int) -> None:
        if self._tqdm is not None:
            self._bar = self._tqdm(total=total, unit="chunk", desc="pool map")

    def __call__(self, done: int, total: int, user: Any) -> None:
        if self.error is not None:
            return
        try:
            if self._bar is not None:
                self._bar.update(int(done) - self._bar.n)
            elif self._fn is not None:
                self._fn(int(done), int(total))
        except BaseException as e:  # re-raised once the map returns
            self.error = e

    def on_error(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.error is None and exc is not None:
            self.error = exc

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _node_lines(nodes: Sequence[NodeLike]) -> Tuple[List[str], bool]:
    """The entries of a node list as nodes-file lines; whether any has a pin."""
    lines: List[str] = []
    pinned = False
    for i, item in enumerate(nodes):
        pin: Optional[str] = None
        if isinstance(item, tuple):
            if len(item) != 2:
                raise ValueError(f"nodes[{i}]: a tuple is (\"HOST:PORT\", PIN_SHA256), got {item!r}")
            addr, pin = item
        else:
            addr = item
        if not isinstance(addr, str) or (pin is not None and not isinstance(pin, str)):
            raise TypeError(f"nodes[{i}] is \"HOST:PORT\" or (\"HOST:PORT\", PIN_SHA256), "
                            f"not {item!r}")
        addr = addr.strip()
        if not addr or re.search(r"[\s,#]", addr) or (pin is not None and re.search(r"[\s#]", pin)):
            raise ValueError(f"nodes[{i}]: {item!r} is not \"HOST:PORT\" (or with a pin)")
        if pin:
            pinned = True
            lines.append(f"{addr} {pin}")
        else:
            lines.append(addr)
    if not lines:
        raise ValueError("nodes is empty: give at least one \"HOST:PORT\"")
    return lines, pinned


class Pool:
    """A pool of gpuleased nodes for one job over many daemons
    (gpulease_pool). Exactly one of ``nodes``, ``nodes_file`` and ``srv``
    says where the nodes come from. No connection is made here: nodes are
    first contacted by :meth:`map` or :meth:`inventory`.

    Args:
        nodes: a list of "HOST:PORT" (or "[IPv6]:PORT"), each verified as
            the connect options below say; an entry may be a tuple
            ("HOST:PORT", PIN_SHA256) whose pin replaces ``pin_sha256``,
            ``ca_file`` and ``insecure`` for that node (as a nodes file's
            line). A str is a comma-separated list.
        nodes_file: a file with a node a line, "HOST:PORT [PIN-SHA256]";
            blank lines and ``#`` comments are skipped.
        srv: a DNS SRV name ("_gpulease._udp.gpuleased.gpu.svc.cluster.local");
            every target:port it lists is a node, re-resolved every
            ``srv_refresh`` seconds and by :meth:`refresh`.
        dns_server: "IP:PORT" of the DNS server to ask for ``srv`` (None:
            the system's, /etc/resolv.conf).
        pin_sha256, ca_file, insecure, cert_file, key_file, token: how to
            verify and identify to every node, as :func:`gpulease.connect`
            (``token`` defaults to ``$GPULEASE_TOKEN``).
        timeout: seconds to wait for each reply and each handshake (None:
            the library's default); a submit in flight on a node that
            stopped answering fails (and its chunk is retried) after it.
        max_leases_per_node: leases held at once on one node (default 4);
            max_leases: in all (default 64). Each is a connection and a
            thread of :meth:`map`.
        lease_class: "isolated" (a CUDA context of its own) or "shared"
            (a few MiB instead of a context).
        lease_ttl: the leases' TTL in seconds (renewed while a map runs).
        srv_refresh: seconds between resolutions of ``srv``.
    Raises ValueError for none or several sources, a bad option or an empty
    node list; InvalidArgument (a bad HOST:PORT or pin, naming the file and
    line or the ``nodes`` entry), NotFound (an unreadable nodes file, an SRV
    name that does not resolve or lists no target).

    A context manager that closes the pool. A pool is used by one thread at
    a time: calls from several threads take turns (a lock).
    """

    def __init__(self, nodes: Union[Sequence[NodeLike], str, None] = None, *,
                 nodes_file: Union[str, "os.PathLike[str]", None] = None,
                 srv: Optional[str] = None, dns_server: Optional[str] = None,
                 pin_sha256: Optional[str] = None, ca_file: Optional[str] = None,
                 insecure: bool = False, cert_file: Optional[str] = None,
                 key_file: Optional[str] = None, token: Optional[str] = None,
                 timeout: Optional[float] = None, max_leases_per_node: int = 4,
                 max_leases: int = 64, lease_class: str = "isolated", lease_ttl: int = 60,
                 srv_refresh: int = 30) -> None:
        self._ptr: Any = None
        self._lock = threading.RLock()
        #: The stats of the last :meth:`map` that reached the library
        #: (also when it failed), else None.
        self.last_stats: Optional[MapStats] = None
        sources = sum(x is not None for x in (nodes, nodes_file, srv))
        if sources != 1:
            raise ValueError("give exactly one of nodes, nodes_file and srv "
                             f"(got {sources})")
        if dns_server is not None and srv is None:
            raise ValueError("dns_server goes with srv")
        if lease_class not in _LEASE_CLASSES:
            raise ValueError(f"lease_class {lease_class!r}: a pool's leases are "
                             f"{' or '.join(_LEASE_CLASSES)}")
        per_node = _positive_u32(max_leases_per_node, "max_leases_per_node", "a count")
        total = _positive_u32(max_leases, "max_leases", "a count")
        ttl = _positive_u32(lease_ttl, "lease_ttl", "whole seconds (an int)")
        refresh = _positive_u32(srv_refresh, "srv_refresh", "whole seconds (an int)")
        timeout_ms = None if timeout is None else _millis(timeout, "timeout")
        if token is None:
            token = os.environ.get("GPULEASE_TOKEN") or None

        keep: List[Any] = []

        def cstr(value: Union[str, "os.PathLike[str]", None]) -> Any:
            if value is None:
                return ffi.NULL
            s = ffi.new("char[]", os.fsencode(value))
            keep.append(s)
            return s

        co = ffi.new("gpulease_connect_options *")
        lib.gpulease_connect_options_default(co)
        co.pin_sha256 = cstr(pin_sha256)
        co.ca_file = cstr(ca_file)
        co.insecure = 1 if insecure else 0
        co.cert_file = cstr(cert_file)
        co.key_file = cstr(key_file)
        co.bearer_token = cstr(token)
        if timeout_ms is not None:
            co.timeout_ms = timeout_ms
        po = ffi.new("gpulease_pool_options *")
        lib.gpulease_pool_options_default(po)
        po.connect = co
        po.max_leases_per_node = per_node
        po.max_leases = total
        po.lease_class = _LEASE_CLASSES[lease_class]
        po.lease_ttl_s = ttl
        po.srv_refresh_s = refresh
        tmp_file: Optional[str] = None
        if nodes is not None:
            items: List[NodeLike] = [x for x in nodes.split(",") if x.strip()] \
                if isinstance(nodes, str) else list(nodes)
            lines, pinned = _node_lines(items)
            if pinned:
                # Per-node pins travel as a nodes file (read by
                # gpulease_pool_open only, then removed).
                fd, tmp_file = tempfile.mkstemp(prefix="gpulease-nodes-", text=True)
                with os.fdopen(fd, "w") as f:
                    f.write("\n".join(lines) + "\n")
                po.nodes_file = cstr(tmp_file)
            else:
                po.nodes = cstr(",".join(lines))
            self._source = f"{len(lines)} node(s)"
        elif nodes_file is not None:
            po.nodes_file = cstr(nodes_file)
            self._source = f"nodes file {os.fspath(nodes_file)}"
        else:
            assert srv is not None
            po.srv_name = cstr(srv)
            po.dns_server = cstr(dns_server)
            self._source = f"SRV {srv}"
        out = ffi.new("gpulease_pool **")
        err = ffi.new("gpulease_error *")
        try:
            st = lib.gpulease_pool_open(po, out, err)
        finally:
            if tmp_file is not None:
                os.unlink(tmp_file)
        if st != 0 and tmp_file is not None:
            # Name the list's entry, not the temporary file's line.
            msg = ffi.string(err.message).decode("utf-8", "replace")
            msg = re.sub(re.escape(tmp_file) + r":(\d+): ",
                         lambda m: f"nodes[{int(m.group(1)) - 1}]: ", msg)
            raise error_for(st, msg)
        check(st, err)
        self._ptr = ffi.gc(out[0], lib.gpulease_pool_close)

    # -- plumbing --------------------------------------------------------
    def _handle(self) -> Any:
        if self._ptr is None:
            raise Disconnected(lib.GPULEASE_DISCONNECTED, "the pool is closed")
        return self._ptr

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._ptr is None

    # -- nodes -----------------------------------------------------------
    def inventory(self) -> List[PoolNode]:
        """Reads every node's inventory, all at once (a thread each; an SRV
        name is re-resolved first when due). A node that cannot be reached
        is listed down (``up`` False, ``status``, ``message``), and is not
        an error.

        Returns a list of :class:`PoolNode` in the pool's order.
        Raises NoMemory; Disconnected when the pool is closed."""
        pnodes = ffi.new("gpulease_pool_node **")
        count = ffi.new("size_t *")
        err = ffi.new("gpulease_error *")
        with self._lock:
            check(lib.gpulease_pool_inventory(self._handle(), pnodes, count, err), err)
        try:
            result = []
            for i in range(int(count[0])):
                x = pnodes[0][i]
                up = bool(x.up)
                result.append(PoolNode(addr=_str(x.addr), up=up, status=int(x.status),
                                       message=_str(x.message),
                                       inventory=_inventory(x.inventory) if up else None))
            return result
        finally:
            lib.gpulease_pool_nodes_release(pnodes[0], count[0])

    def refresh(self) -> None:
        """Re-resolves the pool's SRV name now: nodes it no longer lists
        are dropped, new ones used from the next map on. A pool made from a
        list or a file keeps its nodes (a no-op).

        Raises NotFound (the name does not resolve: the nodes are kept),
        NoMemory."""
        err = ffi.new("gpulease_error *")
        with self._lock:
            check(lib.gpulease_pool_refresh(self._handle(), err), err)

    # -- the job ---------------------------------------------------------
    def map(self, image: ImageLike, kernel: str, input: Any, chunk: int,
            out_per_chunk: Optional[int] = None, out_dtype: DTypeLike = None, *,
            grid: DimLike = 1, block: DimLike = 1, args: Sequence[Any] = (),
            shared_mem: int = 0, attempts: int = 3, deadline: Optional[float] = None,
            progress: MapProgress = None) -> npt.NDArray[Any]:
        """Runs ``kernel`` once per chunk of ``input`` on the pool's nodes
        and gathers the outputs in chunk order (gpulease_pool_map).

        The input is cut into ``nchunks = ceil(input.size / chunk)`` chunks
        of ``chunk`` elements (the last one holds the rest). Each chunk runs
        as one submit on a lease of some node: its input slice is copied in,
        the kernel runs with ``grid`` x ``block``, and ``out_per_chunk``
        elements of ``out_dtype`` are read back from its output slice. A
        chunk whose node is lost, whose lease ends or whose worker faults is
        retried on another node (up to ``attempts`` tries); a kernel's own
        error (LOAD_FAILED, LAUNCH_FAILED, INVALID_ARGUMENT ...) ends the job.

        Contract: the kernel must be idempotent (a retried chunk may have
        run, in part or whole, on another node) and must write every output
        element it means to return (an output slice holds what an earlier
        chunk on that lease left there: it is not zeroed).

        Args:
            image: the module: bytes (PTX, cubin or fatbin), PTX text (str)
                or a path-like to a file.
            kernel: the kernel's (mangled) name.
            input: a numpy array of any dtype and shape, taken in C order as
                ``input.size`` elements (a non-contiguous array is copied
                first), or a bytes-like object (elements of uint8). Not empty.
            chunk: elements of the input per chunk (``chunk * itemsize``
                bytes, at most 4 GiB - 1).
            out_per_chunk: elements of ``out_dtype`` each chunk returns
                (default: ``chunk``; 0: no output).
            out_dtype: the output's dtype (default: the input's dtype, so
                an element-wise kernel gets back what it was given).
            grid, block: blocks a chunk and threads a block, an int or a
                tuple of 1 to 3 ints; the same for every chunk.
            args: the kernel's parameters in order:
                - :data:`gpulease.IN`, :data:`gpulease.OUT`: device pointers
                  to the chunk's input and output slices;
                - :data:`gpulease.CHUNK_BYTES`: the chunk's input size in
                  bytes (u32; the last chunk may be short);
                - :data:`gpulease.CHUNK_INDEX`: the chunk's index (u32);
                - a numpy scalar (``np.uint32(250)``): by value, its own
                  bytes; a plain int or float takes the type of the
                  kernel's PTX parameter, as in :meth:`Lease.call` (a
                  TypeError for cubin and fatbin images).
            shared_mem: bytes of dynamic shared memory a block.
            attempts: tries per chunk, the first included (1: no retry).
            deadline: the whole job's bound in seconds (None: the library's
                default, 600 s). At the deadline the map takes no more
                chunks and raises Timeout once the submits in flight end.
            progress: ``callable(done_chunks, total_chunks)`` called after
                each chunk (from the map's threads, one call at a time; it
                must not use the pool; what it raises is re-raised after
                the map), ``True`` for a tqdm bar, or None.
        Returns a numpy array of shape ``(nchunks * out_per_chunk,)`` and
        dtype ``out_dtype``: chunk i's output at ``[i * out_per_chunk:
        (i + 1) * out_per_chunk]``.

        :attr:`last_stats` holds the job's :class:`MapStats`, also when it
        raises (None when it failed before reaching the library). The call
        holds the pool's lock and cannot be interrupted (Ctrl-C is seen once
        it returns): ``deadline`` bounds it.
        Raises TypeError for arguments that do not fit the kernel's PTX
        parameters or the map's kinds, ValueError for a bad chunk, size or
        option; Disconnected (no node could be reached, or all stayed
        down), CapacityExceeded (no node has room for a lease of a chunk's
        slices), Timeout (the deadline), the first non-retried status of a
        chunk (LoadFailed, LaunchFailed ... with the node's message), or the
        last status of a chunk that failed ``attempts`` times; the message
        names the chunk and the node. InvalidArgument for a chunk or output
        the library refuses."""
        self.last_stats = None
        img = load_image(image)
        g, b = dims(grid, "grid"), dims(block, "block")
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 1000:
            raise ValueError(f"attempts is the most tries per chunk, 1..1000; got {attempts!r}")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, int) or \
                not 0 <= shared_mem <= _U32:
            raise ValueError(f"shared_mem must be bytes, 0..{_U32}; got {shared_mem!r}")
        deadline_ms = 0 if deadline is None else _millis(deadline, "deadline")
        if isinstance(args, (np.ndarray, Out, InOut)) or not isinstance(args, (list, tuple)):
            raise TypeError("args is a list (or tuple) of the kernel's parameters")

        arr = _input(input)
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ValueError(f"chunk is the input's elements per chunk, at least 1; got {chunk!r}")
        chunk = int(chunk)
        if out_per_chunk is None:
            out_per_chunk = chunk
        if isinstance(out_per_chunk, bool) or not isinstance(out_per_chunk, (int, np.integer)) \
                or out_per_chunk < 0:
            raise ValueError(f"out_per_chunk is elements (0 or more); got {out_per_chunk!r}")
        out_per_chunk = int(out_per_chunk)
        odt = arr.dtype if out_dtype is None else np.dtype(out_dtype)
        if odt.hasobject:
            raise TypeError("the output cannot hold Python objects")
        if arr.nbytes == 0:
            raise ValueError("the input is empty: no chunk to run")
        nchunks = -(-arr.size // chunk)
        c_args, keep = _map_args(args, img.ptx, kernel)
        output = np.empty(nchunks * out_per_chunk, odt)
        sink = _MapProgress(progress)

        desc = ffi.new("gpulease_map_desc *")
        lib.gpulease_map_desc_default(desc)
        image_buf = ffi.from_buffer(img.data)
        kname = ffi.new("char[]", kernel.encode("utf-8"))
        in_buf = ffi.from_buffer(arr)
        desc.image = image_buf
        desc.image_size = len(img.data)
        desc.format = img.format
        desc.kernel = kname
        desc.grid = list(g)
        desc.block = list(b)
        desc.shared_mem_bytes = shared_mem
        desc.args = c_args
        desc.arg_count = len(args)
        desc.input = in_buf
        desc.input_bytes = arr.nbytes
        desc.chunk_bytes = chunk * arr.itemsize
        out_bytes = out_per_chunk * odt.itemsize
        out_buf = ffi.from_buffer(output, require_writable=True) if output.nbytes else ffi.NULL
        desc.output = out_buf
        desc.output_bytes_per_chunk = out_bytes
        desc.max_attempts = attempts
        desc.deadline_ms = deadline_ms
        cb: Any = None
        if sink.active:
            # Kept alive (a local) until gpulease_pool_map returns; cffi
            # takes the GIL in the library's threads.
            cb = ffi.callback("gpulease_map_progress_fn", sink, onerror=sink.on_error)
            desc.progress = cb
        # desc borrows these for the call; they live as long as this frame.
        keep.extend((image_buf, kname, in_buf, out_buf, cb))
        stats = ffi.new("gpulease_map_stats *")
        lib.gpulease_map_stats_init(stats)
        err = ffi.new("gpulease_error *")
        with self._lock:
            h = self._handle()
            sink.open(nchunks)
            try:
                st = lib.gpulease_pool_map(h, desc, stats, err)
            finally:
                sink.close()
        try:
            self.last_stats = _map_stats(stats)
        finally:
            lib.gpulease_map_stats_release(stats)
        check(st, err)
        if sink.error is not None:
            raise sink.error
        return output

    # -- life ------------------------------------------------------------
    def close(self) -> None:
        """Frees the pool (the leases of a finished map are already freed).
        Waits for a map running in another thread. Closing twice is
        harmless."""
        with self._lock:
            ptr, self._ptr = self._ptr, None
            if ptr is not None:
                ffi.release(ptr)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<gpulease.Pool {self._source}{' closed' if self.closed else ''}>"


def _input(value: Any) -> npt.NDArray[Any]:
    """The map's input as a C-contiguous array (no copy when it is one)."""
    if isinstance(value, (bytes, bytearray)):
        return np.frombuffer(value, dtype=np.uint8)
    if isinstance(value, memoryview):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("the input cannot hold Python objects")
        return np.ascontiguousarray(value)
    if isinstance(value, (Out, InOut)):
        raise TypeError("the input is a numpy array or bytes-like, not an output marker")
    return input_array(value)


def _map_args(args: Sequence[Any], ptx: Optional[str], kernel: str) -> Tuple[Any, List[Any]]:
    """The gpulease_map_arg array of a map's args, checked against the
    kernel's PTX parameters when the image is PTX."""
    params: Optional[List[PtxParam]] = None
    if ptx is not None:
        params = ptx_params(ptx, kernel)
        if len(params) != len(args):
            raise TypeError(f"kernel {kernel} takes {len(params)} parameters "
                            f"({', '.join(p.type for p in params) or 'none'}), "
                            f"got {len(args)} arguments")
    c_args = ffi.new("gpulease_map_arg[]", max(len(args), 1))
    keep: List[Any] = [c_args]
    for i, a in enumerate(args):
        p = params[i] if params is not None else None
        ca = c_args[i]
        if isinstance(a, ChunkArg):
            want = 8 if a in _POINTER_KINDS else 4
            if p is not None and p.size != want:
                what = "a pointer" if want == 8 else "a u32"
                raise TypeError(f"kernel {kernel}: argument {i} is {a!r} ({what}, {want} bytes), "
                                f"but parameter {p.name} is {p.type} ({p.size} bytes)")
            ca.kind = a.value
        elif isinstance(a, (np.ndarray, Out, InOut, bytes, bytearray, memoryview)):
            raise TypeError(f"kernel {kernel}: argument {i} is a buffer; a map's buffers are "
                            "the chunk's slices, gpulease.IN and gpulease.OUT")
        elif is_scalar(a):
            data = scalar_bytes(a, p, ptx is not None, kernel, i)
            if not 1 <= len(data) <= lib.GPULEASE_MAX_SCALAR_BYTES:
                raise TypeError(f"kernel {kernel}: argument {i} has {len(data)} bytes; a "
                                f"by-value parameter has 1..{lib.GPULEASE_MAX_SCALAR_BYTES}")
            ca.kind = lib.GPULEASE_MAP_SCALAR
            ca.size = len(data)
            ffi.memmove(ca.value, data, len(data))
        else:
            raise TypeError(f"kernel {kernel}: argument {i} is a {type(a).__name__}; pass "
                            "gpulease.IN, gpulease.OUT, gpulease.CHUNK_BYTES, "
                            "gpulease.CHUNK_INDEX or a scalar")
    return c_args, keep
