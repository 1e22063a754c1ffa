"""gpulease: lease a slice of a remote NVIDIA GPU and run CUDA kernels
(PTX, cubin, fatbin) on it, numpy arrays in and numpy arrays out, through
libgpulease (no CUDA toolkit or driver on the client)::

    import numpy as np, pathlib, gpulease

    ptx = pathlib.Path("vector_add.ptx")
    a = np.arange(1000, dtype=np.float32); b = np.ones(1000, np.float32)
    with gpulease.connect("gpu-node:5701", pin_sha256="3f9a...") as client:
        with client.lease("64MiB", ttl=60) as lease:
            c = lease.call(ptx, "vector_add", grid=4, block=256,
                           args=[a, b, gpulease.out(1000, np.float32), 1000])
    assert np.array_equal(c, a + b)

``lease.session()`` keeps arrays and modules on the GPU between kernels
(``s.to_device``, ``s.load_module``, ``mod.kernel[grid, block](...)``,
``s.sync()``). :class:`Pool` runs one kernel over the chunks of an input
on many daemons (``pool.map(image, kernel, x, chunk, args=[gpulease.IN,
gpulease.OUT, ...])``). Failures raise subclasses of
:class:`GpuleaseError`, one per status of gpulease.h. The library is ``$GPULEASE_LIBRARY``, else the copy
bundled in the wheel, else the system's ``libgpulease.so.1``. The wheel
also carries the gpulease CUDA driver (``libcuda.so.1``, in
:func:`cuda_driver_dir`), on which unmodified CUDA programs run on a lease.
"""

from ._lib import LIBRARY_PATH, cuda_driver_dir
from ._params import InOut, Out, inout, out
from ._util import parse_size
from .client import (AdmissionInfo, Client, GpuInfo, Inventory, PoolInfo, TenantInfo,
                     WarmPoolInfo, connect, library_version)
from .errors import (
    ERROR_CLASSES,
    Busy,
    CapacityExceeded,
    Disconnected,
    GpuleaseError,
    Internal,
    InvalidArgument,
    InvalidHandle,
    LaunchFailed,
    LeaseExpired,
    LoadFailed,
    Malformed,
    MissingSeq,
    NoDevice,
    NoMemory,
    NotFound,
    ProtocolError,
    QuotaExceeded,
    ReadFailed,
    TlsFailed,
    Timeout,
    TooLarge,
    Unauthorized,
    Unsupported,
    WriteFailed,
    error_for,
    status_name,
)
from .kout import KernelOutput
from .lease import Lease
from .pool import CHUNK_BYTES, CHUNK_INDEX, IN, OUT, MapNodeStats, MapStats, Pool, PoolNode
from .ptx import PtxError, PtxParam, ptx_kernels, ptx_params
from .session import DeviceArray, FuncInfo, Kernel, Module, Session

__version__ = "0.2.0"

__all__ = [
    "LIBRARY_PATH", "__version__", "library_version", "cuda_driver_dir",
    "connect", "Client", "Lease", "Session", "DeviceArray", "Module", "Kernel",
    "Inventory", "GpuInfo", "TenantInfo", "WarmPoolInfo", "PoolInfo", "AdmissionInfo", "FuncInfo",
    "KernelOutput",
    "Pool", "PoolNode", "MapStats", "MapNodeStats", "IN", "OUT", "CHUNK_BYTES", "CHUNK_INDEX",
    "out", "inout", "Out", "InOut", "parse_size",
    "ptx_params", "ptx_kernels", "PtxParam", "PtxError",
    "GpuleaseError", "ERROR_CLASSES", "error_for", "status_name",
    "InvalidArgument", "Unauthorized", "LoadFailed", "LaunchFailed", "NotFound", "ReadFailed",
    "LeaseExpired", "CapacityExceeded", "Unsupported", "NoDevice", "Malformed", "TooLarge",
    "Busy", "WriteFailed", "Internal", "InvalidHandle", "MissingSeq", "QuotaExceeded",
    "Disconnected", "TlsFailed", "ProtocolError", "NoMemory", "Timeout",
]
