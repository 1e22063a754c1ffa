"""Loads libgpulease through cffi (ABI mode: nothing is compiled).

Where the library comes from, first match wins:

1. ``$GPULEASE_LIBRARY``, a path to ``libgpulease.so.1`` (when set, it is
   the only candidate: a typo there should not silently load another
   copy);
2. the copy bundled in the wheel, ``gpulease/_lib/libgpulease.so.1``;
3. the system's ``libgpulease.so.1`` (the dynamic loader's search path:
   the Debian package, ``LD_LIBRARY_PATH``).

When none loads, importing :mod:`gpulease` raises ImportError naming all
three and why each failed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List, Optional, Tuple

import cffi

from ._cdef import CDEF

SONAME = "libgpulease.so.1"
ENV_VAR = "GPULEASE_LIBRARY"
BUNDLED = Path(__file__).resolve().parent / "_lib" / SONAME

ffi = cffi.FFI()
ffi.cdef(CDEF)


def _load() -> Tuple[Any, str]:
    """Opens the library; returns it and where it came from."""
    tried: List[str] = []
    env = os.environ.get(ENV_VAR)
    if env:
        try:
            return ffi.dlopen(env), env
        except OSError as e:
            tried.append(f"${ENV_VAR}={env}: {e}")
    else:
        tried.append(f"${ENV_VAR}: not set")
        if BUNDLED.exists():
            try:
                return ffi.dlopen(str(BUNDLED)), str(BUNDLED)
            except OSError as e:
                tried.append(f"bundled {BUNDLED}: {e}")
        else:
            tried.append(f"bundled {BUNDLED}: not present")
        try:
            return ffi.dlopen(SONAME), SONAME
        except OSError as e:
            tried.append(f"system {SONAME}: {e}")
    if env:
        tried.append(f"bundled {BUNDLED}: not tried, ${ENV_VAR} is set")
        tried.append(f"system {SONAME}: not tried, ${ENV_VAR} is set")
    raise ImportError("gpulease: cannot load libgpulease; tried:\n  " + "\n  ".join(tried))


lib, LIBRARY_PATH = _load()

#: The wheel's CUDA driver library (src/cuda, docs/cuda-driver.md).
CUDA_DRIVER = Path(__file__).resolve().parent / "_lib" / "gpulease" / "libcuda.so.1"


def cuda_driver_dir() -> Optional[str]:
    """The directory holding the gpulease CUDA driver, ``libcuda.so.1``,
    bundled in the wheel: put it first on ``LD_LIBRARY_PATH`` of a CUDA
    program, with a lease in ``GPULEASE_ADDR``, ``GPULEASE_LEASE`` and
    ``GPULEASE_SECRET``, to run the program on the leased GPU
    (docs/cuda-driver.md, "Without the wrapper"). None when this copy of
    the package has none."""
    return str(CUDA_DRIVER.parent) if CUDA_DRIVER.exists() else None
