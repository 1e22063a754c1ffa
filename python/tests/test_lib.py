"""Loading libgpulease, and the small conversions (sizes, dimensions,
images). No daemon needed."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
from typing import List, Union

import numpy as np
import pytest

import gpulease
from gpulease import _lib
from gpulease._util import dims, load_image, parse_size


def _import_in_subprocess(env_lib: "str | None") -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("GPULEASE_LIBRARY", None)
    if env_lib is not None:
        env["GPULEASE_LIBRARY"] = env_lib
    # The package as this test process found it (source tree or installed).
    pkg_parent = str(pathlib.Path(gpulease.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", "import gpulease; print(gpulease.LIBRARY_PATH)"],
                          capture_output=True, text=True, env=env)


def test_library_from_environment() -> None:
    if os.environ.get("GPULEASE_LIBRARY"):
        assert gpulease.LIBRARY_PATH == os.environ["GPULEASE_LIBRARY"]
    assert gpulease.status_name(7) == "LEASE_EXPIRED"


def _elf_soname(path: pathlib.Path) -> "str | None":
    """DT_SONAME of a 64-bit little-endian ELF shared object, read from its
    SHT_DYNAMIC section and the string table that section links to."""
    import struct
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, path
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    for _name, kind, _f, _a, off, size, link, _i, _al, entsize in sections:
        if kind != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[link][4]
        for at in range(off, off + size, entsize or 16):
            tag, val = struct.unpack_from("<qQ", data, at)
            if tag == 0:
                break
            if tag == 14:  # DT_SONAME
                return data[strtab + val:data.index(b"\0", strtab + val)].decode()
    return None


def test_soname_is_the_loaders() -> None:
    """The library loaded carries the soname the loader looks for
    (libgpulease.so.1 since 0.2.0 changed the structs' layout): a system
    or bundled libgpulease.so.0, 0.1's layout, is never taken for it."""
    assert _lib.SONAME == "libgpulease.so.1"
    assert _lib.BUNDLED.name == _lib.SONAME
    lib_file = pathlib.Path(gpulease.LIBRARY_PATH)
    if not lib_file.is_file():
        pytest.skip("the loaded library is not a file path")
    assert _elf_soname(lib_file.resolve()) == _lib.SONAME


def test_import_error_names_all_three_places() -> None:
    r = _import_in_subprocess("/nonexistent/libgpulease.so.1")
    assert r.returncode != 0
    assert "ImportError" in r.stderr
    assert "$GPULEASE_LIBRARY=/nonexistent/libgpulease.so.1" in r.stderr
    assert "bundled" in r.stderr and "_lib/libgpulease.so.1" in r.stderr
    assert "system libgpulease.so.1" in r.stderr


def test_without_environment_bundled_or_system() -> None:
    r = _import_in_subprocess(None)
    if r.returncode == 0:
        # A bundled or system library was found; it is one of those two.
        where = r.stdout.strip()
        assert where == "libgpulease.so.1" or where.endswith("/_lib/libgpulease.so.1")
    else:
        assert "$GPULEASE_LIBRARY: not set" in r.stderr
        assert "bundled" in r.stderr and "system libgpulease.so.1" in r.stderr


@pytest.mark.parametrize("text,value", [
    (4096, 4096), ("4096", 4096), ("64M", 64 << 20), ("512MiB", 512 << 20), ("1GiB", 1 << 30),
    ("1G", 1 << 30), ("2k", 2048), ("1.5KiB", 1536), ("1MB", 10**6), ("3 GB", 3 * 10**9),
    ("1TiB", 1 << 40), ("0", 0), ("7b", 7),
])
def test_parse_size(text: "int | str", value: int) -> None:
    assert parse_size(text) == value


@pytest.mark.parametrize("bad", ["", "M", "1.3B", "12 parsecs", "-1", "1e9"])
def test_parse_size_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)


def test_parse_size_types() -> None:
    with pytest.raises(TypeError):
        parse_size(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse_size(True)
    with pytest.raises(ValueError):
        parse_size(-5)


def test_dims() -> None:
    assert dims(7, "grid") == (7, 1, 1)
    assert dims(np.int64(3), "grid") == (3, 1, 1)
    assert dims((4,), "grid") == (4, 1, 1)
    assert dims((4, 5), "grid") == (4, 5, 1)
    assert dims([2, 3, 4], "block") == (2, 3, 4)
    with pytest.raises(ValueError, match="block has 4 dimensions"):
        dims((1, 2, 3, 4), "block")
    with pytest.raises(ValueError, match="grid dimension 0"):
        dims(0, "grid")
    with pytest.raises(ValueError):
        dims(1 << 32, "grid")
    with pytest.raises(TypeError):
        dims(2.0, "grid")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        dims((2.0,), "grid")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        dims(True, "grid")


def test_load_image(tmp_path: pathlib.Path) -> None:
    ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n ret;\n}\n"
    images: List[Union[str, bytes, bytearray]] = [ptx, ptx.encode(), bytearray(ptx.encode())]
    for image in images:
        img = load_image(image)
        assert img.format_name == "PTX" and img.ptx == ptx and img.data == ptx.encode()
    f = tmp_path / "k.ptx"
    f.write_text(ptx)
    assert load_image(f).ptx == ptx
    assert load_image(b"\x7fELF\x02\x01" + bytes(58)).format_name == "cubin"
    assert load_image(b"\x50\xed\x55\xba\x01\x00" + bytes(10)).format_name == "fatbin"
    assert load_image(b"\x7fELF").ptx is None
    with pytest.raises(TypeError, match="pathlib.Path"):
        load_image(str(f))  # a str is PTX text, not a file name
    with pytest.raises(TypeError):
        load_image(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        load_image(b"")
    with pytest.raises(OSError):
        load_image(tmp_path / "missing.ptx")


def test_out_and_inout() -> None:
    o = gpulease.out(10)
    assert o.shape == (10,) and o.dtype == np.float32 and o.nbytes == 40
    o = gpulease.out((2, 3), np.int64)
    assert o.shape == (2, 3) and o.nbytes == 48
    a = np.arange(6).reshape(2, 3).T  # not contiguous
    io = gpulease.inout(a)
    assert io.array.flags.c_contiguous and np.array_equal(io.array, a)
    assert io.array is not a
    with pytest.raises(ValueError):
        gpulease.out(-1)
    with pytest.raises(TypeError):
        gpulease.out(3, object)
    with pytest.raises(TypeError):
        gpulease.inout(np.array([object()]))


def test_bundled_library_is_found(tmp_path: pathlib.Path) -> None:
    """The wheel's layout: gpulease/_lib/libgpulease.so.1 next to the
    package's modules (the _lib folder beside _lib.py), no environment."""
    lib_file = pathlib.Path(gpulease.LIBRARY_PATH)
    if not lib_file.is_file():
        pytest.skip("the loaded library is not a file path")
    pkg = tmp_path / "gpulease"
    shutil.copytree(pathlib.Path(gpulease.__file__).resolve().parent, pkg,
                    ignore=shutil.ignore_patterns("__pycache__", "_lib"))
    (pkg / "_lib").mkdir()
    shutil.copy(lib_file.resolve(), pkg / "_lib" / "libgpulease.so.1")
    # The package first; what else the path had (cffi may live there) after.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("GPULEASE_LIBRARY", None)
    r = subprocess.run([sys.executable, "-c",
                        "import gpulease; print(gpulease.LIBRARY_PATH); "
                        "print(gpulease.status_name(16))"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(pkg / "_lib" / "libgpulease.so.1"), "INVALID_HANDLE"]


def test_cuda_driver_comes_with_the_bundled_library() -> None:
    """The wheel carries the gpulease CUDA driver, gpulease/_lib/gpulease/
    libcuda.so.1: it loads with the bundled libgpulease (its RUNPATH is
    $ORIGIN/..), answers cuDriverGetVersion, and without a lease in the
    environment cuInit says CUDA_ERROR_NO_DEVICE (100), never a crash."""
    if not _lib.BUNDLED.exists():
        pytest.skip("not an installed wheel: no bundled libraries")
    d = gpulease.cuda_driver_dir()
    assert d is not None
    shim = pathlib.Path(d) / "libcuda.so.1"
    assert _elf_soname(shim) == "libcuda.so.1"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPULEASE_") and k != "LD_LIBRARY_PATH"}
    code = ("import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); v = ctypes.c_int(0); "
            "print(l.cuDriverGetVersion(ctypes.byref(v)), v.value, l.cuInit(0))")
    r = subprocess.run([sys.executable, "-c", code, str(shim)], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "13000", "100"]
    assert "gpulease exec" in r.stderr
