"""Small conversions the public modules share: byte sizes ("1GiB"), launch
dimensions, and module images (bytes, PTX text or a file)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
import operator
from typing import List, Optional, Sequence, SupportsIndex, Tuple, Union

from ._lib import lib

SizeLike = Union[int, str]
DimLike = Union[SupportsIndex, Sequence[SupportsIndex]]
ImageLike = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]

_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kb": 1000, "kib": 1 << 10,
    "m": 1 << 20, "mb": 1000**2, "mib": 1 << 20,
    "g": 1 << 30, "gb": 1000**3, "gib": 1 << 30,
    "t": 1 << 40, "tb": 1000**4, "tib": 1 << 40,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(size: SizeLike) -> int:
    """Bytes from an int or a string such as ``"1GiB"``, ``"512MiB"``,
    ``"64M"``, ``"4096"``. K, M, G, T and KiB ... TiB are powers of 1024
    (as gpuleased's ``--emu-vram 64M``), KB, MB, GB, TB powers of 1000.
    Raises ValueError for a negative, fractional-byte or unparsable size,
    TypeError for another type."""
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        raise TypeError(f"a size is an int (bytes) or a string like '512MiB', not {type(size).__name__}")
    if isinstance(size, int):
        if size < 0:
            raise ValueError(f"size {size} is negative")
        return size
    m = _SIZE_RE.match(size)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise ValueError(f"cannot read {size!r} as a size: use bytes or a number with "
                         "K/M/G/T, KiB/MiB/GiB/TiB or KB/MB/GB/TB")
    assert unit is not None
    value = float(m.group(1)) * _UNITS[unit]
    if value != int(value):
        raise ValueError(f"size {size!r} is not a whole number of bytes")
    return int(value)


def dims(value: DimLike, what: str) -> Tuple[int, int, int]:
    """(x, y, z) from an int or a sequence of 1 to 3 ints, each 1..2**32-1;
    missing dimensions are 1. Raises TypeError or ValueError naming
    ``what`` ("grid", "block")."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, not bool")
    items: Sequence[object]
    if isinstance(value, (tuple, list)):
        items = value
    elif isinstance(value, SupportsIndex) and not isinstance(value, Sequence):
        items = (operator.index(value),)
    else:
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, not {type(value).__name__}")
    if not 1 <= len(items) <= 3:
        raise ValueError(f"{what} has {len(items)} dimensions; 1 to 3 are allowed")
    out: List[int] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, SupportsIndex):
            raise TypeError(f"{what} dimensions must be ints, got {item!r}")
        v = operator.index(item)
        if not 1 <= v <= 0xFFFFFFFF:
            raise ValueError(f"{what} dimension {v} is out of range 1..4294967295")
        out.append(v)
    while len(out) < 3:
        out.append(1)
    return out[0], out[1], out[2]


@dataclass(frozen=True)
class Image:
    """A module image ready for the library: its bytes, its
    gpulease_image_format, and its text when it is PTX."""

    data: bytes
    format: int
    ptx: Optional[str]

    @property
    def format_name(self) -> str:
        return {lib.GPULEASE_IMAGE_PTX: "PTX", lib.GPULEASE_IMAGE_CUBIN: "cubin",
                lib.GPULEASE_IMAGE_FATBIN: "fatbin"}.get(self.format, "unknown")


_FATBIN_MAGIC = b"\x50\xed\x55\xba"  # 0xBA55ED50, little-endian


def load_image(image: ImageLike) -> Image:
    """Reads a module image: ``bytes`` (PTX, cubin or fatbin), ``str`` (PTX
    text) or a path-like (a file holding any of them). The format is told
    by the bytes: an ELF header is a cubin, 0xBA55ED50 a fatbin, anything
    else PTX. Raises TypeError for another type (or for a ``str`` that
    names a file instead of holding PTX: pass a ``pathlib.Path``) and
    OSError when the file cannot be read."""
    if isinstance(image, str):
        if ".entry" not in image and "\n" not in image and os.path.isfile(image):
            raise TypeError(f"{image!r} is a file name, but a str image is PTX text: "
                            "pass pathlib.Path(...) to read the file")
        data = image.encode("utf-8")
    elif isinstance(image, (bytes, bytearray, memoryview)):
        data = bytes(image)
    elif isinstance(image, os.PathLike):
        with open(image, "rb") as f:
            data = f.read()
    else:
        raise TypeError("a module image is bytes, PTX text (str) or a path-like, "
                        f"not {type(image).__name__}")
    if not data:
        raise ValueError("the module image is empty")
    if data[:4] == b"\x7fELF":
        return Image(data, lib.GPULEASE_IMAGE_CUBIN, None)
    if data[:4] == _FATBIN_MAGIC:
        return Image(data, lib.GPULEASE_IMAGE_FATBIN, None)
    return Image(data, lib.GPULEASE_IMAGE_PTX, data.decode("utf-8", "replace"))
