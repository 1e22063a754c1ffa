"""Kernel output (device-side printf) in the Python package, against the
session's daemon: a handler gets what a lease's kernels printed, from
Lease.call and from Session.sync / Session.kernel_output; "stderr" writes
it there; None asks for none; an assert is LaunchFailed with its text.
Kernels: tests/emu/kprint/kprint.ptx of the repository."""

from __future__ import annotations

import pathlib
from typing import List

import numpy as np
import pytest

import gpulease
from gpulease import Client, KernelOutput

from gltest import Daemon

PTX = pathlib.Path(__file__).resolve().parents[2] / "tests" / "emu" / "kprint" / "kprint.ptx"


@pytest.fixture
def ptx() -> bytes:
    if not PTX.exists():
        pytest.skip(f"no {PTX}")
    return PTX.read_bytes()


def test_call_hands_output_to_the_handler(daemon: Daemon, ptx: bytes) -> None:
    got: List[KernelOutput] = []
    with gpulease.connect(daemon.addr, pin_sha256=daemon.pin, kernel_output=got.append) as c:
        with c.lease("1MiB", ttl=60) as lease:
            ret = lease.call(ptx, "hello", grid=2, block=2, args=[gpulease.out(4, np.int32)])
            assert list(ret) == [2, 2, 2, 2]
            assert len(got) == 1
            assert got[0].lease_id == lease.id
            assert got[0].text == "".join(f"hello from thread {t} of block {b}\n"
                                          for b in range(2) for t in range(2))
            assert got[0].dropped == 0 and not got[0].discarded


def test_session_sync_and_kernel_output(client: Client, ptx: bytes) -> None:
    got: List[KernelOutput] = []
    client.set_kernel_output(got.append)
    with client.lease("1MiB", ttl=60) as lease:
        with lease.session() as s:
            k = s.load_module(ptx).get_function("lines")
            k.launch(1, 1, np.int32(3))
            s.sync()
            assert b"".join(o.data for o in got) == b"".join(
                b"line %07d ..\n" % i for i in range(3))
            got.clear()
            k.launch(1, 1, np.int32(1))
            s.kernel_output()
            assert [o.text for o in got] == ["line 0000000 ..\n"]
            got.clear()
            s.sync()
            assert got == []  # delivered once


def test_stderr_and_none(daemon: Daemon, ptx: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    with gpulease.connect(daemon.addr, pin_sha256=daemon.pin) as c:  # default: stderr
        with c.lease("1MiB", ttl=60) as lease:
            lease.call(ptx, "lines", args=[np.int32(2)])
            assert capsys.readouterr().err == "line 0000000 ..\nline 0000001 ..\n"
            c.set_kernel_output(None)
            lease.call(ptx, "lines", args=[np.int32(1)])
            assert capsys.readouterr().err == ""
            # what was not asked for waits on the lease
            got: List[KernelOutput] = []
            c.set_kernel_output(got.append)
            lease.call(ptx, "lines", args=[np.int32(1)])
            assert "".join(o.text for o in got) == "line 0000000 ..\nline 0000000 ..\n"
    with pytest.raises(ValueError):
        gpulease.connect(daemon.addr, pin_sha256=daemon.pin, kernel_output="stdout")


def test_assert_is_launch_failed_with_its_text(client: Client, ptx: bytes) -> None:
    with client.lease("1MiB", ttl=60) as lease:
        p = np.zeros(4, np.int32)
        p[2] = 1
        with pytest.raises(gpulease.LaunchFailed) as e:
            lease.call(ptx, "check", block=4, args=[p])
        assert "CUDA_ERROR_ASSERT" in str(e.value)
        assert ("block: [0,0,0], thread: [2,0,0] Assertion "
                "`p[blockIdx.x * blockDim.x + threadIdx.x] == 0` failed.") in str(e.value)
