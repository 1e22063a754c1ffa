"""Reads the parameter lists of PTX kernels (``.entry`` directives).

gpulease needs a kernel's parameter types to pass plain Python numbers to
it (a ``.f32`` parameter takes ``2.5`` as float32, a ``.u64`` one ``7`` as
a 64-bit integer), and to check the arguments of a launch against it. It
reads the PTX that nvcc, numba and Triton write::

    .visible .entry vector_add(
        .param .u64 vector_add_param_0,            // nvcc: pointers are .u64
        .param .u32 vector_add_param_3
    )
    .visible .entry add_kernel(
        .param .u64 .ptr .global .align 1 add_kernel_param_0,   // Triton
        .param .align 8 .b8 s_param_1[16]                        // a struct by value
    )
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

__all__ = ["PtxError", "PtxParam", "ptx_kernels", "ptx_params"]

PtxText = Union[str, bytes]


class PtxError(ValueError):
    """PTX that gpulease cannot read, or a kernel name it does not hold
    (the message lists the kernels it does hold)."""


# Size in bytes of every PTX type a kernel parameter may have.
_TYPE_SIZES: Dict[str, int] = {
    ".b8": 1, ".u8": 1, ".s8": 1,
    ".b16": 2, ".u16": 2, ".s16": 2, ".f16": 2, ".bf16": 2,
    ".b32": 4, ".u32": 4, ".s32": 4, ".f32": 4, ".f16x2": 4, ".bf16x2": 4,
    ".b64": 8, ".u64": 8, ".s64": 8, ".f64": 8,
    ".b128": 16,
}

# numpy dtype a plain Python number becomes for a parameter of the type.
_TYPE_DTYPES: Dict[str, str] = {
    ".b8": "uint8", ".u8": "uint8", ".s8": "int8",
    ".b16": "uint16", ".u16": "uint16", ".s16": "int16", ".f16": "float16",
    ".b32": "uint32", ".u32": "uint32", ".s32": "int32", ".f32": "float32",
    ".b64": "uint64", ".u64": "uint64", ".s64": "int64", ".f64": "float64",
}

_STATE_SPACES = {".global", ".const", ".local", ".shared"}

_COMMENT_RE = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_IDENT = r"[A-Za-z_$%][\w$]*"
_ENTRY_RE = re.compile(r"\.entry\s+(" + _IDENT + r")\s*(\(([^)]*)\))?")
_NAME_RE = re.compile(r"^(" + _IDENT + r")\s*(?:\[\s*(\d*)\s*\])?$")


@dataclass(frozen=True)
class PtxParam:
    """One kernel parameter, as the ``.entry`` directive declares it.

    Attributes:
        name: the parameter's name (``vector_add_param_0``).
        type: its PTX type, with the dot (``".u64"``, ``".f32"``, ``".b8"``).
        count: the array length for ``name[N]`` (a struct passed by value),
            else None.
        size: bytes the parameter takes (type size x count).
        align: its alignment in bytes (``.align N`` before the type, else
            the type's size).
        is_pointer: True when declared ``.ptr`` (Triton writes pointers so;
            nvcc and numba declare plain ``.u64``).
        state_space: for ``.ptr``: the pointee's state space
            (``".global"``...), else None.
        ptr_align: for ``.ptr``: the pointee's ``.align``, else None.
    """

    name: str
    type: str
    count: Optional[int]
    size: int
    align: int
    is_pointer: bool = False
    state_space: Optional[str] = None
    ptr_align: Optional[int] = None

    @property
    def dtype(self) -> Optional[np.dtype[Any]]:
        """The numpy dtype of a scalar parameter (``.f32`` -> float32,
        ``.s64`` -> int64, ``.b32`` -> uint32); None for an array
        (``.b8 x[16]``) or a type numpy lacks (``.bf16``)."""
        if self.count is not None or self.type not in _TYPE_DTYPES:
            return None
        return np.dtype(_TYPE_DTYPES[self.type])

    @property
    def is_float(self) -> bool:
        """True for a floating-point type (.f16, .bf16, .f32, .f64)."""
        return self.type.startswith((".f", ".bf")) and self.count is None


def _text(ptx: PtxText) -> str:
    if isinstance(ptx, (bytes, bytearray, memoryview)):
        return bytes(ptx).decode("utf-8", "replace")
    if isinstance(ptx, str):
        return ptx
    raise TypeError(f"PTX is str or bytes, not {type(ptx).__name__}")


def _parse_param(decl: str, kernel: str) -> PtxParam:
    tokens = decl.split()
    if not tokens or tokens[0] != ".param":
        raise PtxError(f"kernel {kernel}: cannot read parameter {decl!r} (no .param)")
    # The name (and its [N]) is what follows the last dotted token.
    i = 1
    align: Optional[int] = None
    ptr_align: Optional[int] = None
    ptype: Optional[str] = None
    is_ptr = False
    space: Optional[str] = None
    while i < len(tokens) and tokens[i].startswith("."):
        tok = tokens[i]
        if tok == ".align":
            if i + 1 >= len(tokens) or not tokens[i + 1].isdigit():
                raise PtxError(f"kernel {kernel}: .align without a number in {decl!r}")
            if is_ptr:
                ptr_align = int(tokens[i + 1])
            else:
                align = int(tokens[i + 1])
            i += 2
            continue
        if tok == ".ptr":
            is_ptr = True
        elif tok in _STATE_SPACES:
            space = tok
        elif tok in _TYPE_SIZES:
            ptype = tok
        elif tok in (".texref", ".samplerref", ".surfref"):
            ptype = tok
        else:
            raise PtxError(f"kernel {kernel}: unknown token {tok} in parameter {decl!r}")
        i += 1
    if ptype is None:
        raise PtxError(f"kernel {kernel}: parameter {decl!r} has no type")
    m = _NAME_RE.match(" ".join(tokens[i:]))
    if m is None:
        raise PtxError(f"kernel {kernel}: cannot read the name of parameter {decl!r}")
    count = int(m.group(2)) if m.group(2) else None
    if m.group(2) == "":
        raise PtxError(f"kernel {kernel}: parameter {decl!r} is an array without a length")
    tsize = _TYPE_SIZES.get(ptype, 8)
    return PtxParam(name=m.group(1), type=ptype, count=count, size=tsize * (count or 1),
                    align=align if align is not None else tsize, is_pointer=is_ptr,
                    state_space=space, ptr_align=ptr_align)


@lru_cache(maxsize=64)
def _entries(text: str) -> Tuple[Tuple[str, Tuple[PtxParam, ...]], ...]:
    clean = _COMMENT_RE.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", text)
    out = []
    for m in _ENTRY_RE.finditer(clean):
        name, body = m.group(1), m.group(3)
        params: List[PtxParam] = []
        if body is not None and body.strip():
            for decl in body.split(","):
                params.append(_parse_param(decl.strip(), name))
        out.append((name, tuple(params)))
    return tuple(out)


def ptx_kernels(ptx: PtxText) -> List[str]:
    """The names of the kernels (``.entry``, also ``.visible .entry``) in
    PTX text (str or bytes), in the order they appear."""
    return [name for name, _ in _entries(_text(ptx))]


def ptx_params(ptx: PtxText, kernel_name: str) -> List[PtxParam]:
    """The parameters of kernel ``kernel_name`` in PTX text (str or bytes),
    in order: name, PTX type, array length, size and alignment in bytes,
    ``.ptr`` attributes. Raises PtxError when the PTX has no such kernel
    (naming the kernels it has) or a parameter cannot be read."""
    entries = _entries(_text(ptx))
    for name, params in entries:
        if name == kernel_name:
            return list(params)
    names = ", ".join(n for n, _ in entries)
    if not names:
        raise PtxError(f"no kernel {kernel_name!r}: the PTX has no .entry at all")
    raise PtxError(f"no kernel {kernel_name!r} in the PTX; its kernels: {names}")
