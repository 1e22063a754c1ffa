"""Several GPUs of one node (a daemon with --emu-gpus 3): leases by GPU
index and by UUID, and placement across the GPUs."""

from __future__ import annotations

import pathlib
import shutil
import tempfile

import pytest

import gpulease
from gltest import start_daemon, stop_daemon


@pytest.fixture(scope="module")
def three_gpus():
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="gl-pytest-3gpu-"))
    d = start_daemon(tmp, "--emu-gpus", "3", "--placement", "spread", emu_vram="64M")
    try:
        yield d
    finally:
        stop_daemon(d)
        shutil.rmtree(tmp, ignore_errors=True)


def test_gpu_by_index_and_uuid(three_gpus) -> None:
    if not three_gpus.emulated:
        pytest.skip("emulated GPUs only")
    with gpulease.connect(three_gpus.addr, pin_sha256=three_gpus.pin) as c:
        inv = c.inventory()
        assert [g.uuid for g in inv.gpus] == ["EMU-0", "EMU-1", "EMU-2"]
        with c.lease("1MiB", ttl=30, gpu=2) as a, c.lease("1MiB", ttl=30, gpu="EMU-1") as b:
            assert (a.gpu, b.gpu) == (2, 1)
        with pytest.raises(ValueError, match=r"no GPU with UUID 'EMU-7' on this node \(its GPUs: "
                                             r"EMU-0, EMU-1, EMU-2\)"):
            c.lease("1MiB", ttl=30, gpu="EMU-7")
        with pytest.raises(gpulease.NoDevice, match="no GPU with index 5"):
            c.lease("1MiB", ttl=30, gpu=5)


def test_spread(three_gpus) -> None:
    if not three_gpus.emulated:
        pytest.skip("emulated GPUs only")
    with gpulease.connect(three_gpus.addr, pin_sha256=three_gpus.pin) as c:
        leases = [c.lease("4MiB", ttl=30) for _ in range(6)]
        try:
            assert sorted(l.gpu for l in leases) == [0, 0, 1, 1, 2, 2]
            assert [g.active_leases for g in c.inventory().gpus] == [2, 2, 2]
        finally:
            for l in leases:
                l.free()
