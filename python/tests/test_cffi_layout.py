"""The cffi declarations against the C compiler's view of gpulease.h:
every struct's size, alignment and field offsets, every constant, and every
function's prototype (redeclared after the header: a mismatch does not
compile). Skips only where no C compiler (or no header) is present."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

import gpulease
from gpulease._cdef import ANY_GPU, CDEF
from gpulease._lib import ffi, lib

from gltest import REPO

INCLUDE = REPO / "include"


def _compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler")
    if not (INCLUDE / "gpulease" / "gpulease.h").exists():
        pytest.skip(f"no gpulease.h under {INCLUDE}")
    return cc


def _run_c(tmp_path: Path, source: str) -> str:
    cc = _compiler()
    src, exe = tmp_path / "probe.c", tmp_path / "probe"
    src.write_text(source)
    r = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", f"-I{INCLUDE}", str(src), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def _structs() -> List[str]:
    names = []
    for name in ffi.list_types()[0]:
        t = ffi.typeof(name)
        if t.kind == "struct" and t.fields is not None:
            names.append(name)
    return sorted(names)


def _layout_lines() -> Tuple[List[str], Dict[str, int]]:
    """C statements printing "key value" lines, and cffi's value of each
    key."""
    lines: List[str] = []
    want: Dict[str, int] = {}

    def emit(key: str, c_expr: str, value: int) -> None:
        lines.append(f'  printf("%s %zu\\n", "{key}", (size_t)({c_expr}));')
        want[key] = value

    for name in _structs():
        t = ffi.typeof(name)
        emit(f"sizeof({name})", f"sizeof({name})", ffi.sizeof(t))
        emit(f"alignof({name})", f"_Alignof({name})", ffi.alignof(t))
        for fname, f in t.fields:
            emit(f"{name}.{fname}@", f"offsetof({name}, {fname})", f.offset)
            emit(f"{name}.{fname}#", f"sizeof((({name} *)0)->{fname})", ffi.sizeof(f.type))
            # A nested (anonymous) struct, or an array of one: its fields too.
            item = f.type.item if f.type.kind == "array" else f.type
            if item.kind == "struct" and item.fields is not None:
                elem = f"(({name} *)0)->{fname}" + ("[0]" if f.type.kind == "array" else "")
                for sub, sf in item.fields:
                    emit(f"{name}.{fname}.{sub}@",
                         f"(char *)&{elem}.{sub} - (char *)&{elem}", sf.offset)
    for enum in ("gpulease_status", "gpulease_lease_class", "gpulease_image_format",
                 "gpulease_param_kind", "gpulease_module_source", "gpulease_arg_kind",
                 "gpulease_call_arg_kind", "gpulease_map_arg_kind"):
        emit(f"sizeof({enum})", f"sizeof({enum})", ffi.sizeof(enum))
    return lines, want


def test_struct_layouts_match_the_compiler(tmp_path: Path) -> None:
    lines, want = _layout_lines()
    # The public API's structs, opaque ones (client, session, renewer) aside.
    assert set(_structs()) >= {
        "gpulease_error", "gpulease_connect_options", "gpulease_gpu_info", "gpulease_tenant_info",
        "gpulease_inventory", "gpulease_warm_pool_info", "gpulease_admission_info",
        "gpulease_gpu_admission", "gpulease_lease", "gpulease_lease_opts",
        "gpulease_param", "gpulease_submit_desc", "gpulease_submit_result",
        "gpulease_op_failure", "gpulease_func_info", "gpulease_arg", "gpulease_launch_attrs",
        "gpulease_burst_launch", "gpulease_call_arg", "gpulease_call_desc",
        "gpulease_pool_options", "gpulease_pool_node", "gpulease_map_arg", "gpulease_map_desc",
        "gpulease_map_node_stats", "gpulease_map_stats"}
    out = _run_c(tmp_path, "#include <gpulease/gpulease.h>\n#include <stddef.h>\n"
                           "#include <stdio.h>\nint main(void) {\n" + "\n".join(lines)
                 + "\n  return 0;\n}\n")
    got = dict((k, int(v)) for k, v in (line.rsplit(" ", 1) for line in out.splitlines()))
    mismatches = {k: (want[k], got.get(k)) for k in want if got.get(k) != want[k]}
    assert not mismatches, f"cffi vs C (cffi, C): {mismatches}"


def test_constants_match_the_header(tmp_path: Path) -> None:
    names = sorted(n for n in dir(lib) if n.startswith("GPULEASE_")
                   and isinstance(getattr(lib, n), int))
    assert "GPULEASE_QUOTA_EXCEEDED" in names and "GPULEASE_MAX_GPUS" in names
    body = "\n".join(f'  printf("%s %lld\\n", "{n}", (long long)({n}));' for n in names)
    body += '\n  printf("GPULEASE_ANY_GPU %lld\\n", (long long)GPULEASE_ANY_GPU);'
    out = _run_c(tmp_path, "#include <gpulease/gpulease.h>\n#include <stdio.h>\n"
                           "int main(void) {\n" + body + "\n  return 0;\n}\n")
    got = dict((k, int(v)) for k, v in (line.split() for line in out.splitlines()))
    for n in names:
        assert got[n] == getattr(lib, n), n
    assert got["GPULEASE_ANY_GPU"] == ANY_GPU


def _prototypes() -> List[str]:
    text = re.sub(r"\s+", " ", re.sub(r"(?m)^#.*$", "", CDEF))
    decls = [d.strip() + ";" for d in text.split(";")]
    return [d for d in decls if d.endswith(");") and not d.startswith("typedef")
            and "(" in d and "{" not in d]


def test_function_prototypes_match_the_header(tmp_path: Path) -> None:
    protos = _prototypes()
    assert len(protos) >= 60
    # Redeclaring a function with another type is a compile error.
    _run_c(tmp_path, "#include <gpulease/gpulease.h>\n" + "\n".join(protos)
           + "\nint main(void) { return 0; }\n")


def test_library_exports_every_declared_function() -> None:
    for proto in _prototypes():
        name = re.search(r"(\w+)\s*\(", proto).group(1)  # type: ignore[union-attr]
        assert callable(getattr(lib, name)), name


def test_package_exports() -> None:
    for name in gpulease.__all__:
        assert hasattr(gpulease, name), name
    assert gpulease.__version__
    assert "library_version" in gpulease.__all__


def test_versions_agree() -> None:
    # The package, its pyproject.toml, the header's GPULEASE_VERSION_* and
    # the library loaded (gpulease_version()) are one release.
    want = tuple(int(x) for x in gpulease.__version__.split("."))
    assert gpulease.library_version() == want
    assert (lib.GPULEASE_VERSION_MAJOR, lib.GPULEASE_VERSION_MINOR,
            lib.GPULEASE_VERSION_PATCH) == want
    assert ffi.string(lib.gpulease_version(ffi.NULL, ffi.NULL, ffi.NULL)).decode() == \
        gpulease.__version__
    pyproject = REPO / "python" / "pyproject.toml"
    if pyproject.exists():  # a source tree (not an installed wheel alone)
        m = re.search(r'(?m)^version = "([^"]+)"', pyproject.read_text())
        assert m and m.group(1) == gpulease.__version__
    assert (Path(gpulease.__file__).parent / "py.typed").exists()
    assert "connect(" in (gpulease.__doc__ or "")
