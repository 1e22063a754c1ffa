"""Sessions: device arrays round trips, modules, launches, sync, and the
session's failures."""

from __future__ import annotations

import pathlib
import time
from typing import Iterator, List, Tuple

import numpy as np
import pytest

import gpulease
from gpulease import Client, Lease, Session

from gltest import Daemon


@pytest.fixture
def lease(client: Client) -> Iterator[Lease]:
    with client.lease("32MiB", ttl=120) as lease:
        yield lease


@pytest.fixture
def session(lease: Lease) -> Iterator[Session]:
    with lease.session() as s:
        yield s


def _random(shape: "int | Tuple[int, ...]", dtype: "type | str", seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint8,
                                   np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                                   np.complex64, np.bool_])
@pytest.mark.parametrize("shape", [1, 7, 1000, (3, 4, 5), (1 << 18) + 3])
def test_round_trip(session: Session, dtype: type, shape: "int | Tuple[int, ...]") -> None:
    host = _random(shape, dtype)
    d = session.to_device(host)
    assert d.shape == host.shape and d.dtype == host.dtype and d.nbytes == host.nbytes
    assert d.size == host.size
    back = d.to_host()
    assert back.dtype == host.dtype and back.shape == host.shape
    assert np.array_equal(back.view(np.uint8), host.view(np.uint8))  # bit for bit
    d.free()


def test_empty_array_and_scalar(session: Session) -> None:
    d = session.to_device(np.zeros((0, 4), np.float32))
    assert d.shape == (0, 4) and d.nbytes == 0
    assert d.to_host().shape == (0, 4)
    s = session.to_device(np.float64(2.5))
    assert s.shape == () and s.to_host() == 2.5


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 3, 5, 4097, 100_001])
def test_zeros(session: Session, dtype: type, n: int) -> None:
    # Fill the lease's memory with ones first, so that zeros() must clear.
    junk = session.to_device(np.full(n * 8, 0xFF, np.uint8))
    junk.free()
    z = session.zeros(n, dtype)
    out = z.to_host()
    assert out.dtype == np.dtype(dtype) and out.shape == (n,)
    assert not out.view(np.uint8).any()


def test_empty_then_copy_from_host(session: Session) -> None:
    d = session.empty((10, 10), np.int32)
    assert d.shape == (10, 10) and d.dtype == np.int32
    src = np.arange(100, dtype=np.int32).reshape(10, 10)
    d.copy_from_host(src)
    assert np.array_equal(d.to_host(), src)
    d.copy_from_host(src.T)  # another layout, the same shape
    assert np.array_equal(d.to_host(), src.T)
    d.copy_from_host(np.ones((10, 10)))  # cast to the array's dtype
    assert np.array_equal(d.to_host(), np.ones((10, 10), np.int32))
    with pytest.raises(ValueError, match="shape"):
        d.copy_from_host(np.zeros(100, np.int32))


def test_non_contiguous_input(session: Session) -> None:
    m = np.arange(48, dtype=np.float64).reshape(6, 8)
    for view in (m.T, m[::2, 1::3]):
        assert np.array_equal(session.to_device(view).to_host(), view)


def _progress_case(daemon: Daemon, no_local: bool) -> None:
    with gpulease.connect(daemon.addr, pin_sha256=daemon.pin, no_local=no_local) as c:
        with c.lease("72MiB", ttl=120) as lease, lease.session() as s:
            total = 64 << 20
            host = np.random.default_rng(64).integers(0, 255, total, dtype=np.uint8)
            seen: List[Tuple[int, int]] = []
            d = s.to_device(host, progress=lambda done, tot: seen.append((done, tot)))
            assert seen and seen[-1] == (total, total)
            assert all(t == total for _, t in seen)
            assert [done for done, _ in seen] == sorted(done for done, _ in seen)
            back_seen: List[Tuple[int, int]] = []
            back = d.to_host(progress=lambda done, tot: back_seen.append((done, tot)))
            assert back_seen and back_seen[-1] == (total, total)
            assert np.array_equal(back, host)
            if no_local:
                # Over QUIC the upload reports after each 8 MiB chunk (8 of
                # them), or, where the daemon has stripe ports, after each
                # chunk of the caller's own stripe and once more at the
                # end. A striped read may finish its own stripe's one chunk
                # last: it is only sure to report the end.
                assert len(seen) >= 2 and seen[0][0] < total
                assert [done for done, _ in back_seen] == sorted(done for done, _ in back_seen)


@pytest.mark.parametrize("no_local", [False, True], ids=["local-or-quic", "quic"])
def test_64mib_with_progress(daemon: Daemon, no_local: bool) -> None:
    _progress_case(daemon, no_local)


def test_progress_bar_and_errors(session: Session, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("tqdm")
    host = np.arange(3 << 20, dtype=np.uint8)
    d = session.to_device(host, progress=True)
    assert np.array_equal(d.to_host(progress=True), host)

    def boom(done: int, total: int) -> None:
        raise RuntimeError("stop the bar")

    with pytest.raises(RuntimeError, match="stop the bar"):
        d.to_host(progress=boom)
    # The session is fine afterwards, and no callback lingers.
    assert np.array_equal(d.to_host(), host)
    with pytest.raises(TypeError, match="progress"):
        d.to_host(progress="yes")  # type: ignore[arg-type]


def test_module_kernel_launch_sync(session: Session, kernels: pathlib.Path) -> None:
    n = 100_000
    rng = np.random.default_rng(7)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    da, db, dc = session.to_device(a), session.to_device(b), session.empty(n, np.float32)
    add = session.load_module(kernels / "vector_add.ptx")
    scale = session.load_module((kernels / "scale.ptx").read_text())
    assert add.format == "PTX" and add.kernel_names == ["vector_add"]
    k = add.vector_add
    assert k is add.get_function("vector_add")  # looked up once
    assert isinstance(k, gpulease.Kernel) and k.name == "vector_add"
    assert k.params is not None
    assert [p.type for p in k.params] == [".u64", ".u64", ".u64", ".u32"]
    assert k.info.max_threads_per_block >= 256
    assert k.info.param_sizes in (None, (8, 8, 8, 4))
    grid = (n + 255) // 256
    k[grid, 256](da, db, dc, np.int32(n))       # numpy scalar
    scale.scale[grid, 256](dc, 2.0, n)           # Python float/int via the PTX types
    scale.scale[(grid, 1), (256, 1, 1)](dc, np.float32(0.5), n // 2)
    session.sync()
    want = (a + b) * np.float32(2)
    want[: n // 2] *= np.float32(0.5)
    assert np.array_equal(dc.to_host(), want)


def test_launch_shared_mem_forms(session: Session, kernels: pathlib.Path) -> None:
    x = session.to_device(np.ones(64, np.float32))
    scale = session.load_module(kernels / "scale.ptx").scale
    scale[1, 64, 0](x, 3.0, 64)
    scale[1, 64](x, 2.0, 64, shared_mem=128)
    scale.launch(1, 64, x, 0.5, 64)
    session.sync()
    assert np.array_equal(x.to_host(), np.full(64, 3.0, np.float32))


def test_iota_pipeline(session: Session, kernels: pathlib.Path) -> None:
    # Several launches queued, then one sync, then a read: stream order.
    out = session.zeros(1024, np.float32)
    iota = session.load_module(kernels / "iota.ptx").iota
    scale = session.load_module(kernels / "scale.ptx").scale
    iota[4, 256](out)
    for _ in range(10):
        scale[4, 256](out, 2.0, 1024)
    session.sync()
    assert np.array_equal(out.to_host(), np.arange(1, 1025, dtype=np.float32) * np.float32(1024))


def test_module_sources(lease: Lease, client: Client, kernels: pathlib.Path) -> None:
    with lease.session() as s:
        first = s.load_module(kernels / "spin.ptx")
        assert first.source in ("loaded", "disk cache")
        again = s.load_module(kernels / "spin.ptx")
        assert again.source == "in context"
        with lease.session() as s2:  # another session of the lease's context
            assert s2.load_module(kernels / "spin.ptx").source == "in context"
    with lease.session() as s:  # closing the sessions unloaded it; the disk cache has it
        assert s.load_module(kernels / "spin.ptx").source in ("loaded", "disk cache")
    with client.lease("1MiB", ttl=10) as other, other.session() as s:
        # A new context: loaded now, or compiled earlier and found on disk.
        assert s.load_module(kernels / "spin.ptx").source in ("loaded", "disk cache")


def test_launch_argument_errors(session: Session, kernels: pathlib.Path) -> None:
    x = session.zeros(8, np.float32)
    scale = session.load_module(kernels / "scale.ptx").scale
    with pytest.raises(TypeError, match="takes 3 parameters, got 2"):
        scale[1, 8](x, 2.0)
    with pytest.raises(TypeError, match="host numpy array.*to_device"):
        scale[1, 8](np.zeros(8, np.float32), 2.0, 8)
    with pytest.raises(TypeError, match="integer parameter"):
        scale[1, 8](x, 2.0, 8.0)
    with pytest.raises(TypeError, match="device array \\(a pointer\\)"):
        scale[1, 8](x, x, 8)
    with pytest.raises(TypeError, match="launch as kernel"):
        scale[1](x, 2.0, 8)
    with pytest.raises(ValueError):
        scale[0, 8](x, 2.0, 8)
    session.sync()  # nothing was sent


# -- failures ----------------------------------------------------------------

def test_unknown_kernel(session: Session, kernels: pathlib.Path) -> None:
    mod = session.load_module(kernels / "scale.ptx")
    # The emulated device says "no kernel named 'scal'", the driver
    # "function 'scal' not found in module (CUDA_ERROR_NOT_FOUND)".
    with pytest.raises(gpulease.NotFound, match="'scal'"):
        mod.get_function("scal")
    with pytest.raises(AttributeError, match="its kernels: scale"):
        mod.scal
    assert not hasattr(mod, "vector_add")
    session.sync()  # the lookup's failure was acknowledged: the session goes on
    x = session.to_device(np.ones(4, np.float32))
    mod.scale[1, 4](x, 4.0, 4)
    session.sync()
    assert np.array_equal(x.to_host(), np.full(4, 4.0, np.float32))


def test_load_failed_then_the_session_goes_on(session: Session) -> None:
    with pytest.raises(gpulease.LoadFailed):
        session.load_module(".version 8.0\n.target sm_80\n.address_size 64\n"
                            ".visible .entry k()\n{\n\tnot_an_op;\n\tret;\n}\n")
    # The emulated device: "not a PTX module"; the driver: "CUDA_ERROR_INVALID_IMAGE".
    with pytest.raises(gpulease.LoadFailed, match="not a PTX module|CUDA_ERROR_INVALID_IMAGE"):
        session.load_module(b"garbage\n")
    session.sync()
    assert np.array_equal(session.to_device(np.arange(3)).to_host(), np.arange(3))


def test_capacity_exceeded_in_a_session(session: Session) -> None:
    with pytest.raises(gpulease.CapacityExceeded, match="bytes free"):
        session.empty(64 << 20, np.uint8)  # the lease has 32 MiB
    session.sync()
    assert session.zeros(16).to_host().sum() == 0


def test_cubin_module_on_the_emulated_device(session: Session, emulated_only: None) -> None:
    with pytest.raises(gpulease.Unsupported, match="cubin"):
        session.load_module(b"\x7fELF\x02\x01\x01" + bytes(57))


def test_launch_failed_out_of_bounds(lease: Lease, kernels: pathlib.Path) -> None:
    s = lease.session()
    d = s.zeros(4, np.uint32)
    s.load_module(kernels / "oob.ptx").oob[1, 1](d)  # returns at once
    with pytest.raises(gpulease.LaunchFailed, match="CUDA_ERROR_ILLEGAL_ADDRESS") as info:
        s.sync()
    assert info.value.op == "LAUNCH" and info.value.seq is not None and info.value.seq > 0
    # The context is lost: this session cannot go on, a new one can.
    with pytest.raises(gpulease.LaunchFailed, match="context was lost"):
        s.acknowledge()
    s.close()
    with lease.session() as s2:
        x = s2.to_device(np.arange(5, dtype=np.float32))
        s2.load_module(kernels / "scale.ptx").scale[1, 8](x, 3.0, 5)
        s2.sync()
        assert np.array_equal(x.to_host(), np.arange(5, dtype=np.float32) * 3)


def test_invalid_handle(lease: Lease, kernels: pathlib.Path) -> None:
    with lease.session() as s, lease.session() as other:
        mine, theirs = s.zeros(4), other.zeros(4)
        scale = s.load_module(kernels / "scale.ptx").scale
        scale[1, 4](theirs, 2.0, 4)  # another session's buffer
        with pytest.raises(gpulease.InvalidHandle, match="not a buffer of session") as info:
            s.sync()
        assert info.value.op == "LAUNCH"
        with pytest.raises(gpulease.InvalidHandle):  # later ops fail fast with it
            s.sync()
        s.acknowledge()
        s.sync()
        scale[1, 4](mine, 2.0, 4)
        s.sync()
        # A freed array is refused before anything is sent.
        mine.free()
        mine.free()  # twice is harmless
        with pytest.raises(gpulease.InvalidHandle, match="freed"):
            mine.to_host()
        with pytest.raises(gpulease.InvalidHandle, match="freed"):
            scale[1, 4](mine, 2.0, 4)


def test_timeout_on_a_kernel_that_spins(daemon: Daemon, kernels: pathlib.Path) -> None:
    with gpulease.connect(daemon.addr, pin_sha256=daemon.pin, timeout=1.0) as c:
        with c.lease("1MiB", ttl=30) as lease:
            s = lease.session()
            flag = s.zeros(1, np.uint64)
            s.load_module(kernels / "spin.ptx").spin[1, 1](flag)  # never ends on its own
            t0 = time.monotonic()
            with pytest.raises(gpulease.Timeout) as info:
                s.sync()
            assert 0.9 < time.monotonic() - t0 < 10
            assert isinstance(info.value, TimeoutError)
        # Leaving the block freed the lease (the daemon ended its worker).
        with pytest.raises((gpulease.NotFound, gpulease.LeaseExpired)):
            c.attach(lease.id, lease.secret)


def test_closed_session_and_lease_free_closes_sessions(client: Client,
                                                       kernels: pathlib.Path) -> None:
    lease = client.lease("2MiB", ttl=30)
    s = lease.session()
    d = s.zeros(4)
    lease.free()  # closes the lease's open sessions first
    assert s.closed
    with pytest.raises(ValueError, match="session is closed"):
        s.sync()
    with pytest.raises(ValueError, match="session is closed"):
        d.to_host()
    s.close()  # harmless
    d.free()


def test_session_on_a_freed_lease(client: Client) -> None:
    with client.lease("1MiB", ttl=10) as lease:
        pass
    with pytest.raises(gpulease.NotFound):
        lease.session()


def test_client_close_closes_sessions(daemon: Daemon) -> None:
    c = gpulease.connect(daemon.addr, pin_sha256=daemon.pin)
    lease = c.lease("1MiB", ttl=30)
    s = lease.session()
    c.close()
    assert s.closed
    with pytest.raises(gpulease.Disconnected):
        lease.query()
    with gpulease.connect(daemon.addr, pin_sha256=daemon.pin) as c2:
        c2.attach(lease.id, lease.secret).free()
