"""Kernel arguments: output markers (:func:`out`, :func:`inout`) and the
conversion of scalars to the bytes of a kernel parameter."""

from __future__ import annotations

import operator
from typing import Any, Optional, Sequence, SupportsIndex, Tuple, Union

import numpy as np
import numpy.typing as npt

from .ptx import PtxParam

ShapeLike = Union[SupportsIndex, Sequence[SupportsIndex]]
DTypeLike = Any


class Out:
    """An output buffer of a stateless call (see :func:`out`)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def nbytes(self) -> int:
        """Bytes of the buffer."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"gpulease.out({self.shape}, {self.dtype})"


class InOut:
    """An input that is also an output of a stateless call (see
    :func:`inout`)."""

    __slots__ = ("array",)

    def __init__(self, array: npt.NDArray[Any]) -> None:
        self.array = array

    def __repr__(self) -> str:
        return f"gpulease.inout(<{self.array.shape} {self.array.dtype}>)"


def _shape(shape_or_n: ShapeLike) -> Tuple[int, ...]:
    if isinstance(shape_or_n, bool):
        raise TypeError("a shape is an int or a tuple of ints, not bool")
    if isinstance(shape_or_n, SupportsIndex) and not isinstance(shape_or_n, Sequence):
        shape: Tuple[int, ...] = (operator.index(shape_or_n),)
    else:
        shape = tuple(operator.index(d) for d in shape_or_n)
    if any(d < 0 for d in shape):
        raise ValueError(f"shape {shape} has a negative dimension")
    return shape


def out(shape_or_n: ShapeLike, dtype: DTypeLike = np.float32) -> Out:
    """Marks an output buffer of :meth:`Lease.call`: the kernel gets a
    pointer to ``prod(shape) * itemsize`` bytes of zeroed device memory,
    read back afterwards into a new numpy array of that shape and dtype.

    Args:
        shape_or_n: element count (int) or shape (tuple of ints).
        dtype: numpy dtype of the elements (default float32).
    Raises ValueError for a negative dimension, TypeError for an object
    dtype."""
    dt = np.dtype(dtype)
    if dt.hasobject:
        raise TypeError("an output buffer cannot hold Python objects")
    return Out(_shape(shape_or_n), dt)


def inout(array: Any) -> InOut:
    """Marks an input that the kernel also writes, for :meth:`Lease.call`:
    the array's bytes are copied in, the kernel gets a pointer to them, and
    the buffer is read back into a new array of the same shape and dtype
    (the array passed in is not modified).

    Raises TypeError for an object dtype."""
    arr = np.array(array, copy=True, order="C")
    if arr.dtype.hasobject:
        raise TypeError("an in-out buffer cannot hold Python objects")
    return InOut(arr)


def input_array(value: Any) -> npt.NDArray[Any]:
    """A C-contiguous array of the value's bytes for an input buffer."""
    arr = np.asarray(value, order="C")
    if arr.dtype.hasobject:
        raise TypeError("an input buffer cannot hold Python objects")
    return arr


def _where(kernel: str, index: int, param: Optional[PtxParam]) -> str:
    name = f" ({param.name}, {param.type}{'[%d]' % param.count if param.count else ''})" if param else ""
    return f"kernel {kernel}: argument {index}{name}"


def is_scalar(value: Any) -> bool:
    """True for what becomes a by-value parameter: a numpy scalar or a
    plain bool, int or float."""
    return isinstance(value, (np.generic, int, float))


def scalar_bytes(value: Any, param: Optional[PtxParam], ptx_known: bool, kernel: str,
                 index: int) -> bytes:
    """The bytes of a by-value kernel parameter.

    A numpy scalar (``np.int32(5)``, ``np.float32(2.5)``, a structured
    ``np.void``) passes its own bytes. A plain Python int or float takes the
    type of the PTX parameter (``param``; .f32 -> float32, .s64 -> int64,
    .u32 -> uint32, where a negative int wraps as in C). Raises TypeError
    when the type cannot be known (``ptx_known`` False: a cubin or fatbin),
    does not fit the parameter, or is a float for an integer parameter;
    OverflowError for an int out of the parameter's range."""
    where = _where(kernel, index, param)
    if isinstance(value, np.generic):
        data = value.tobytes()
        if param is not None and len(data) != param.size:
            raise TypeError(f"{where} takes {param.size} bytes, but {type(value).__name__} "
                            f"has {len(data)}")
        return data
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{where}: cannot pass {type(value).__name__} to a kernel; use a numpy "
                        "array (a buffer), gpulease.out/inout, or a numpy scalar such as np.int32(5)")
    if not ptx_known:
        raise TypeError(f"{where} is a plain Python {type(value).__name__}, whose size the "
                        "kernel's image (cubin or fatbin) does not tell: pass a numpy scalar "
                        "of the parameter's type, e.g. np.int32(5) or np.float32(2.5)")
    if param is None:
        raise TypeError(f"{where}: the kernel has no such parameter")
    dt = param.dtype
    if dt is None:
        raise TypeError(f"{where}: a plain Python {type(value).__name__} cannot fill a "
                        f"{param.type}{'[%d]' % param.count if param.count else ''} parameter; "
                        "pass a numpy scalar of its size (a structured np.void for an array)")
    if dt.kind == "f":
        return np.array(value, dtype=dt).tobytes()
    if isinstance(value, float):
        raise TypeError(f"{where} is an integer parameter; got the float {value!r}")
    v = int(value)
    bits = dt.itemsize * 8
    lo = -(1 << (bits - 1))
    hi = (1 << bits) - 1 if dt.kind == "u" else (1 << (bits - 1)) - 1
    if dt.kind == "u" and v < 0:
        # C's int parameters are .u32/.b32 in nvcc's PTX: take negative
        # values of the same width as two's complement.
        hi_signed = (1 << (bits - 1)) - 1
        if not lo <= v <= hi_signed:
            raise OverflowError(f"{where}: {v} does not fit {bits} bits")
        v &= (1 << bits) - 1
    elif not lo <= v <= hi:
        raise OverflowError(f"{where}: {v} does not fit {param.type}")
    return v.to_bytes(dt.itemsize, "little", signed=v < 0)
