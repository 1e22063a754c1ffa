"""gpulease.Pool: one map over three daemons of the emulated device (one of
them with --emu-gpus 3), as tests/cli/test_pool.sh does for the CLI: the
output against a numpy reference, the stats, the lease classes, the
errors (a kernel's, no node, no room, the deadline), progress, the
inventory, and a daemon killed during a map."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Iterator, List, Tuple

import numpy as np
import pytest

import gpulease
from gltest import Daemon, bin_dir, start_daemon, stop_daemon

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
CW = 250          # words a chunk
WORDS = 249_999   # 1,000 chunks, the last one 249 words (996 bytes)
MIX_ARGS = [gpulease.IN, gpulease.OUT, gpulease.CHUNK_BYTES, gpulease.CHUNK_INDEX, np.uint32(CW)]


@pytest.fixture(scope="module")
def nodes() -> Iterator[List[Daemon]]:
    """Three daemons (64 MiB each; the first with 3 GPUs): 5 GPUs in all."""
    if os.environ.get("GL_TEST_DEVICE", "emu") == "cuda":
        pytest.skip("emulated GPUs only")
    started: List[Daemon] = []
    try:
        for extra in (("--emu-gpus", "3"), (), ()):
            tmp = pathlib.Path(tempfile.mkdtemp(prefix="gl-pytest-pool-"))
            started.append(start_daemon(tmp, *extra, emu_vram="64M"))
        yield started
    finally:
        for d in started:
            stop_daemon(d)
            shutil.rmtree(d.state_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def chunk_mix() -> pathlib.Path:
    ptx = bin_dir() / "kernels" / "chunk_mix.ptx"
    if not ptx.exists():
        pytest.skip(f"no {ptx} (set GL_TEST_BIN_DIR to a build directory)")
    return ptx


def pinned(ds: List[Daemon]) -> List[Tuple[str, str]]:
    return [(d.addr, d.pin) for d in ds]


def mix_input(words: int = WORDS) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.integers(0, 2**32, size=words, dtype=np.uint64).astype(np.uint32)


def mix_reference(x: np.ndarray, cw: int = CW) -> np.ndarray:
    """chunk_mix on the CPU: out[i] = in[i] * 2654435761 + index, 0 past
    the chunk's words."""
    nch = -(-x.size // cw)
    ref = np.zeros(nch * cw, dtype=np.uint32)
    for c in range(nch):
        s = x[c * cw:(c + 1) * cw].astype(np.uint64)
        ref[c * cw:c * cw + s.size] = ((s * 2654435761 + c) & 0xFFFFFFFF).astype(np.uint32)
    return ref


def leases_left(ds: List[Daemon]) -> int:
    total = 0
    for d in ds:
        with gpulease.connect(d.addr, pin_sha256=d.pin) as c:
            total += sum(g.active_leases for g in c.inventory().gpus)
    return total


# ---- maps ------------------------------------------------------------------

def test_map_matches_the_reference(nodes: List[Daemon], chunk_mix: pathlib.Path) -> None:
    x = mix_input()
    with gpulease.Pool(pinned(nodes)) as pool:
        y = pool.map(chunk_mix, "chunk_mix", x, CW, grid=1, block=256, args=MIX_ARGS)
        s = pool.last_stats
    assert y.dtype == np.uint32 and y.shape == (1000 * CW,)
    assert np.array_equal(y, mix_reference(x))
    assert s is not None
    assert (s.chunks, s.done, s.retries) == (1000, 1000, 0)
    assert [n.addr for n in s.nodes] == [d.addr for d in nodes]
    assert sum(n.chunks for n in s.nodes) == s.chunks
    assert all(n.chunks > 0 and n.leases >= 1 and n.failures == 0 for n in s.nodes)
    assert sum(n.bytes_in for n in s.nodes) == x.nbytes
    assert sum(n.bytes_out for n in s.nodes) == y.nbytes
    assert s.seconds > 0 and 0 < s.chunk_p50_ms <= s.chunk_p99_ms and s.chunks_per_s > 0
    assert leases_left(nodes) == 0


def test_shared_leases_and_a_tqdm_bar(nodes: List[Daemon], chunk_mix: pathlib.Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    x = mix_input()
    with gpulease.Pool(pinned(nodes), lease_class="shared") as pool:
        y = pool.map(chunk_mix, "chunk_mix", x, CW, block=256, args=MIX_ARGS, progress=True)
        assert pool.last_stats is not None and pool.last_stats.done == 1000
    assert np.array_equal(y, mix_reference(x))
    assert "1000/1000" in capsys.readouterr().err
    assert leases_left(nodes) == 0


def test_output_dtype_size_and_plain_scalars(nodes: List[Daemon], chunk_mix: pathlib.Path) -> None:
    x = mix_input(10 * CW - 3)
    ref = mix_reference(x)
    with gpulease.Pool(pinned(nodes), max_leases=2) as pool:
        # The same bytes as uint16 (2 elements a word); a plain int takes
        # the PTX parameter's type (.u32).
        y = pool.map(chunk_mix, "chunk_mix", x, CW, out_per_chunk=2 * CW, out_dtype=np.uint16,
                     block=256, args=MIX_ARGS[:4] + [CW])
        assert y.dtype == np.uint16 and y.shape == (10 * 2 * CW,)
        assert np.array_equal(y.view(np.uint32), ref)
        # Only the first 100 words of each chunk (out_words 100: the kernel
        # writes no more than the output slice holds).
        z = pool.map(chunk_mix, "chunk_mix", x, CW, out_per_chunk=100, block=256,
                     args=MIX_ARGS[:4] + [np.uint32(100)])
        assert np.array_equal(z.reshape(10, 100), ref.reshape(10, CW)[:, :100])
        # A strided input is copied to C order first; bytes in, uint8 out.
        big = np.zeros(2 * x.size, np.uint32)
        big[::2] = x
        assert np.array_equal(pool.map(chunk_mix, "chunk_mix", big[::2], CW, block=256,
                                       args=MIX_ARGS), ref)
        b = pool.map(chunk_mix, "chunk_mix", x.tobytes(), 4 * CW, block=256, args=MIX_ARGS)
        assert b.dtype == np.uint8 and np.array_equal(b.view(np.uint32), ref)


def test_node_list_forms(nodes: List[Daemon], chunk_mix: pathlib.Path,
                         tmp_path: pathlib.Path) -> None:
    x = mix_input(4 * CW)
    ref = mix_reference(x)
    d = nodes[1]
    with gpulease.Pool([d.addr], pin_sha256=d.pin) as pool:
        assert np.array_equal(pool.map(chunk_mix, "chunk_mix", x, CW, block=256,
                                       args=MIX_ARGS), ref)
        pool.refresh()  # a list keeps its nodes
    f = tmp_path / "nodes"
    f.write_text("# the test's nodes\n\n" + "".join(f"{d.addr} {d.pin}\n" for d in nodes))
    with gpulease.Pool(nodes_file=f) as pool:
        assert [n.addr for n in pool.inventory()] == [d.addr for d in nodes]
    with gpulease.Pool(",".join(d.addr for d in nodes), insecure=True) as pool:
        assert all(n.up for n in pool.inventory())


# ---- errors ----------------------------------------------------------------

def test_a_kernel_error_is_not_retried(nodes: List[Daemon]) -> None:
    kernels = bin_dir() / "kernels"
    x = mix_input(20 * CW)
    # Isolated leases: a fault loses only its own lease's context. (Shared
    # leases of a GPU share one: a fault there fails the chunks in flight
    # on its neighbours too, and those are retried before the job ends.)
    with gpulease.Pool(pinned(nodes), lease_class="isolated") as pool:
        with pytest.raises(gpulease.LaunchFailed,
                           match=r"chunk \d+ on 127\.0\.0\.1:\d+: LAUNCH_FAILED: .*"
                                 r"CUDA_ERROR_ILLEGAL_ADDRESS") as info:
            pool.map(kernels / "oob.ptx", "oob", x, CW, args=[gpulease.IN])
        assert info.value.status == 4
        s = pool.last_stats
        assert s is not None and s.retries == 0 and s.done < s.chunks == 20
        assert sum(n.retries for n in s.nodes) == 0
        bad = (".version 8.0\n.target sm_80\n.address_size 64\n"
               ".visible .entry k(.param .u64 k_param_0)\n{\n\tbogus.instruction;\n\tret;\n}\n")
        with pytest.raises(gpulease.LoadFailed, match=r"chunk \d+ on 127\.0\.0\.1:\d+: "):
            pool.map(bad, "k", x, CW, args=[gpulease.IN])
        assert pool.last_stats is not None and pool.last_stats.retries == 0
    with gpulease.Pool(pinned(nodes), lease_class="shared") as pool:
        with pytest.raises(gpulease.LoadFailed, match=r"chunk \d+ on 127\.0\.0\.1:\d+: "):
            pool.map(bad, "k", x, CW, args=[gpulease.IN])
        assert pool.last_stats is not None and pool.last_stats.retries == 0
    assert leases_left(nodes) == 0


def test_no_reachable_node(chunk_mix: pathlib.Path) -> None:
    with gpulease.Pool(["127.0.0.1:1", "127.0.0.1:2"], insecure=True, timeout=1) as pool:
        with pytest.raises(gpulease.Disconnected, match=r"no reachable node: 127\.0\.0\.1:1: "):
            pool.map(chunk_mix, "chunk_mix", mix_input(1000), CW, args=MIX_ARGS)
        assert pool.last_stats is not None and pool.last_stats.done == 0
        inv = pool.inventory()  # down nodes are listed, not an error
        assert [(n.addr, n.up, n.inventory) for n in inv] == \
            [("127.0.0.1:1", False, None), ("127.0.0.1:2", False, None)]
        assert all(n.status != 0 and n.status_name != "OK" and n.message for n in inv)
        assert isinstance(inv[0].error, gpulease.GpuleaseError)


def test_a_chunk_too_big_for_any_node(nodes: List[Daemon], chunk_mix: pathlib.Path) -> None:
    # 200 MB chunks: a lease of a chunk's slices fits no 64 MiB GPU.
    with gpulease.Pool(pinned(nodes), lease_class="shared") as pool:
        with pytest.raises(gpulease.CapacityExceeded,
                           match=r"no node has room for a lease of \d+ bytes"):
            pool.map(chunk_mix, "chunk_mix", mix_input(1000), 50_000_000, out_per_chunk=CW,
                     args=MIX_ARGS)
        assert pool.last_stats is not None and pool.last_stats.done == 0


def test_the_deadline(nodes: List[Daemon], chunk_mix: pathlib.Path) -> None:
    with gpulease.Pool(pinned(nodes), max_leases=1) as pool:
        with pytest.raises(gpulease.Timeout, match=r"deadline of 50 ms passed with \d+ of 1000 "
                                                   r"chunks done") as info:
            pool.map(chunk_mix, "chunk_mix", mix_input(), CW, block=256, args=MIX_ARGS,
                     deadline=0.05)
        assert isinstance(info.value, TimeoutError)
        s = pool.last_stats
        assert s is not None and s.chunks == 1000 and s.done < 1000
    assert leases_left(nodes) == 0


def test_python_side_errors(nodes: List[Daemon], chunk_mix: pathlib.Path) -> None:
    d = nodes[0]
    with pytest.raises(ValueError, match="exactly one of nodes, nodes_file and srv"):
        gpulease.Pool()
    with pytest.raises(ValueError, match="exactly one of"):
        gpulease.Pool([d.addr], srv="_gpulease._udp.x")
    with pytest.raises(ValueError, match="nodes is empty"):
        gpulease.Pool([])
    with pytest.raises(ValueError, match="isolated or shared"):
        gpulease.Pool([d.addr], lease_class="device")
    with pytest.raises(ValueError, match="max_leases_per_node"):
        gpulease.Pool([d.addr], max_leases_per_node=0)
    with pytest.raises(ValueError, match="dns_server goes with srv"):
        gpulease.Pool([d.addr], dns_server="127.0.0.1:53")
    with pytest.raises(gpulease.InvalidArgument, match=r"nodes\[1\]: '127\.0\.0\.1:99999' is not "
                                                       r"HOST:PORT"):
        gpulease.Pool([(d.addr, d.pin), ("127.0.0.1:99999", d.pin)])
    with pytest.raises(gpulease.InvalidArgument, match="is not a SHA-256 pin"):
        gpulease.Pool([(d.addr, "nope")])
    with pytest.raises(gpulease.NotFound, match="nodes file"):
        gpulease.Pool(nodes_file="/nonexistent/nodes")
    x = mix_input(1000)
    with gpulease.Pool(pinned(nodes)) as pool:
        with pytest.raises(TypeError, match="takes 5 parameters"):
            pool.map(chunk_mix, "chunk_mix", x, CW, args=MIX_ARGS[:4])
        with pytest.raises(TypeError, match=r"argument 2 is gpulease\.IN \(a pointer"):
            pool.map(chunk_mix, "chunk_mix", x, CW, args=[gpulease.IN, gpulease.OUT, gpulease.IN,
                                                          gpulease.CHUNK_INDEX, CW])
        with pytest.raises(TypeError, match="a map's buffers are the chunk's slices"):
            pool.map(chunk_mix, "chunk_mix", x, CW, args=[x] + MIX_ARGS[1:])
        with pytest.raises(TypeError, match="takes 4 bytes"):
            pool.map(chunk_mix, "chunk_mix", x, CW, args=MIX_ARGS[:4] + [np.uint64(CW)])
        with pytest.raises(ValueError, match="chunk is the input's elements"):
            pool.map(chunk_mix, "chunk_mix", x, 0, args=MIX_ARGS)
        with pytest.raises(ValueError, match="input is empty"):
            pool.map(chunk_mix, "chunk_mix", np.zeros(0, np.uint32), CW, args=MIX_ARGS)
        with pytest.raises(ValueError, match="deadline"):
            pool.map(chunk_mix, "chunk_mix", x, CW, args=MIX_ARGS, deadline=0)
        with pytest.raises(TypeError, match="progress is a callable"):
            pool.map(chunk_mix, "chunk_mix", x, CW, args=MIX_ARGS, progress="yes")
        assert pool.last_stats is None  # none of these reached the library
        with pytest.raises(gpulease.InvalidArgument, match="output_bytes_per_chunk is 0"):
            pool.map(chunk_mix, "chunk_mix", x, CW, out_per_chunk=0, args=MIX_ARGS)
        assert pool.last_stats is not None and pool.last_stats.chunks == 0
    assert pool.closed and "closed" in repr(pool)
    pool.close()  # twice is harmless
    with pytest.raises(gpulease.Disconnected, match="the pool is closed"):
        pool.inventory()
    with pytest.raises(gpulease.Disconnected, match="the pool is closed"):
        pool.map(chunk_mix, "chunk_mix", x, CW, args=MIX_ARGS)


# ---- progress and inventory ------------------------------------------------

def test_progress_callable(nodes: List[Daemon], chunk_mix: pathlib.Path) -> None:
    calls: List[Tuple[int, int]] = []
    threads = set()

    def progress(done: int, total: int) -> None:
        calls.append((done, total))
        threads.add(threading.get_ident())

    x = mix_input()
    with gpulease.Pool(pinned(nodes), lease_class="shared") as pool:
        y = pool.map(chunk_mix, "chunk_mix", x, CW, block=256, args=MIX_ARGS, progress=progress)
        assert np.array_equal(y, mix_reference(x))
        assert calls[-1] == (1000, 1000) and len(calls) == 1000
        assert [c[0] for c in calls] == list(range(1, 1001))
        assert all(t == 1000 for _, t in calls)
        assert threading.get_ident() not in threads  # the library's threads

        def failing(done: int, total: int) -> None:
            if done == 10:
                raise KeyError("from the callback")

        # What the callable raises comes back after the map, which ran on.
        with pytest.raises(KeyError, match="from the callback"):
            pool.map(chunk_mix, "chunk_mix", x, CW, block=256, args=MIX_ARGS, progress=failing)
        assert pool.last_stats is not None and pool.last_stats.done == 1000


def test_inventory(nodes: List[Daemon]) -> None:
    with gpulease.Pool(pinned(nodes)) as pool:
        inv = pool.inventory()
    assert [n.addr for n in inv] == [d.addr for d in nodes]
    assert all(n.up and n.status == 0 and n.status_name == "OK" and n.message == ""
               and n.error is None for n in inv)
    assert all(isinstance(n.inventory, gpulease.Inventory) for n in inv)
    assert [len(n.inventory.gpus) for n in inv if n.inventory] == [3, 1, 1]
    assert sum(len(n.inventory.gpus) for n in inv if n.inventory) == 5
    first = inv[0].inventory
    assert first is not None and [g.uuid for g in first.gpus] == ["EMU-0", "EMU-1", "EMU-2"]
    assert all(g.emulated and g.total_vram_bytes == 64 << 20 for g in first.gpus)


# ---- a node lost ------------------------------------------------------------

def test_a_daemon_killed_during_a_map(nodes: List[Daemon], chunk_mix: pathlib.Path) -> None:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="gl-pytest-pool-victim-"))
    victim = start_daemon(tmp, emu_vram="64M")
    mapping = threading.Event()
    killed_mid_map: List[bool] = []

    def kill_when_busy() -> None:
        # Once the map holds a lease on the victim (its slot then submits
        # chunk after chunk), ~0.2 s later: SIGKILL.
        with gpulease.connect(victim.addr, pin_sha256=victim.pin) as c:
            for _ in range(1500):
                if sum(g.active_leases for g in c.inventory().gpus) >= 1:
                    break
                time.sleep(0.02)
        time.sleep(0.2)
        killed_mid_map.append(mapping.is_set())
        victim.process.kill()

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    try:
        x = mix_input()
        # One lease a node, so the job runs long enough to be cut into. A
        # submit in flight on the killed node is retried elsewhere once the
        # client sees the daemon gone, or, at the end of the job, finished
        # by a backup copy on another node; the default reply timeout
        # (30 s) is never waited out.
        with gpulease.Pool(pinned(nodes[1:]) + [(victim.addr, victim.pin)],
                           max_leases_per_node=1) as pool:
            mapping.set()
            killer.start()
            y = pool.map(chunk_mix, "chunk_mix", x, CW, block=256, args=MIX_ARGS, attempts=5)
            mapping.clear()
            s = pool.last_stats
        killer.join(timeout=60)
        assert killed_mid_map == [True], "the map ended before the victim was killed"
        assert np.array_equal(y, mix_reference(x))
        assert s is not None and s.done == 1000 and s.retries + s.backups >= 1
        assert s.seconds < 10, s
        lost = s.nodes[-1]
        assert lost.addr == victim.addr
        assert (lost.failures >= 1 and lost.retries >= 1) or s.backups >= 1, s
        assert sum(n.chunks for n in s.nodes) == 1000
        assert leases_left(nodes[1:]) == 0
    finally:
        killer.join(timeout=60)
        stop_daemon(victim)
        shutil.rmtree(tmp, ignore_errors=True)


# ---- the example --------------------------------------------------------------

def test_example_pool_map(nodes: List[Daemon], chunk_mix: pathlib.Path) -> None:
    script = EXAMPLES / "pool_map.py"
    if not script.exists():
        pytest.skip("python/examples not here")
    env = dict(os.environ)
    pkg_parent = str(pathlib.Path(gpulease.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    env["GPULEASE_NODES"] = ",".join(f"{d.addr}={d.pin}" for d in nodes)
    r = subprocess.run([sys.executable, str(script), str(chunk_mix)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "pool map: 1000 of 1000 chunks in" in r.stdout
    assert "0 wrong" in r.stdout
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 2 and "usage:" in r.stderr
