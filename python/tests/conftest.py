"""Fixtures: a real gpuleased for the whole test session.

The daemon is $GL_TEST_BIN_DIR/src/daemon/gpuleased (default: the
repository's build/), on the emulated device with 256 MiB of VRAM, or on
the node's GPUs with GL_TEST_DEVICE=cuda. Kernels are
$GL_TEST_BIN_DIR/kernels/*.ptx. Without a daemon binary the tests that need
one are skipped (the others still run).
"""

from __future__ import annotations

import pathlib
import shutil
import sys
import tempfile
from typing import Iterator

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import gpulease  # noqa: E402
from gltest import Daemon, bin_dir, start_daemon, stop_daemon  # noqa: E402


@pytest.fixture(scope="session")
def daemon() -> Iterator[Daemon]:
    """The session's daemon (emulated device with 256 MiB unless
    GL_TEST_DEVICE=cuda)."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="gl-pytest-"))
    d = start_daemon(tmp)
    try:
        yield d
    finally:
        stop_daemon(d)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def client(daemon: Daemon) -> Iterator[gpulease.Client]:
    """A fresh client of the session's daemon, closed after the test."""
    c = gpulease.connect(daemon.addr, pin_sha256=daemon.pin)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="session")
def kernels() -> pathlib.Path:
    """The folder of the build's PTX kernels (iota, vector_add, scale, oob,
    spin)."""
    k = bin_dir() / "kernels"
    if not (k / "vector_add.ptx").exists():
        pytest.skip(f"no PTX kernels in {k} (set GL_TEST_BIN_DIR to a build directory)")
    return k


@pytest.fixture
def emulated_only(daemon: Daemon) -> None:
    """Skips a test that holds for the emulated device only."""
    if not daemon.emulated:
        pytest.skip("emulated device only")
