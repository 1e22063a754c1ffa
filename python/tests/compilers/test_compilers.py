"""Kernels from Python's GPU compilers, run through gpulease.

numba_axpy.ptx and triton_add.ptx are what numba-cuda's compile_ptx and
Triton's compile made of kernels.py (generate.py remakes them); they run on
every machine, the emulated device included. Where numba-cuda or Triton is
installed (and can compile: numba needs a CUDA toolkit's NVVM), the same
kernels are also compiled afresh and run.
"""

from __future__ import annotations

import math
import pathlib
from typing import Any, List

import numpy as np
import pytest

import gpulease

HERE = pathlib.Path(__file__).resolve().parent
N = 3000  # not a multiple of the block: the kernels' bounds checks matter


def numba_array_args(array: Any, n: int, itemsize: int) -> List[Any]:
    """The 7 kernel parameters numba passes for a 1-D array (ptx_params
    shows them): meminfo, parent, nitems, itemsize, data, shape, stride.
    Only data (the array itself, or a DeviceArray) and the sizes matter to
    a kernel; meminfo and parent are host-side and null here."""
    return [np.uint64(0), np.uint64(0), np.int64(n), np.int64(itemsize), array,
            np.int64(n), np.int64(itemsize)]


def numba_entry(ptx: str) -> str:
    (name,) = gpulease.ptx_kernels(ptx)
    return name


def run_axpy(client: gpulease.Client, ptx: str) -> None:
    name = numba_entry(ptx)
    params = gpulease.ptx_params(ptx, name)
    # Two arrays of 7 parameters, then a (float32) and n (int32).
    assert len(params) == 16
    assert [p.size for p in params[:7]] == [8] * 7
    assert (params[14].type, params[15].type) == (".f32", ".u32") or params[14].size == 4
    x = np.linspace(-3, 3, N).astype(np.float32)
    y = np.arange(N, dtype=np.float32)
    # numba fuses a * x + out into one FMA (one rounding): the product of
    # two floats is exact in float64, so this is the fused result.
    want = (np.float64(2.5) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
    grid, block = math.ceil(N / 128), 128
    with client.lease("16MiB", ttl=60) as lease:
        got = lease.call(ptx, name, grid=grid, block=block,
                         args=[*numba_array_args(gpulease.inout(y), N, 4),
                               *numba_array_args(x, N, 4), np.float32(2.5), np.int32(N)])
        assert np.array_equal(got, want)
        with lease.session() as s:
            d_out, d_x = s.to_device(y), s.to_device(x)
            kernel = s.load_module(ptx).get_function(name)
            kernel[grid, block](*numba_array_args(d_out, N, 4), *numba_array_args(d_x, N, 4),
                                np.float32(2.5), np.int32(N))
            s.sync()
            assert np.array_equal(d_out.to_host(), want)


def run_triton_add(client: gpulease.Client, ptx: str, block_elems: int, warps: int) -> None:
    params = gpulease.ptx_params(ptx, "add_kernel")
    # x, y, out, n, then Triton's global and profile scratch pointers.
    assert len(params) == 6 and params[3].size == 4
    x = np.random.default_rng(7).standard_normal(N).astype(np.float32)
    y = np.arange(N, dtype=np.float32)
    grid, block = math.ceil(N / block_elems), 32 * warps
    with client.lease("16MiB", ttl=60) as lease:
        got = lease.call(ptx, "add_kernel", grid=grid, block=block,
                         args=[x, y, gpulease.out(N, np.float32), np.int32(N),
                               np.uint64(0), np.uint64(0)])
        assert np.array_equal(got, x + y)
        with lease.session() as s:
            dx, dy, dout = s.to_device(x), s.to_device(y), s.empty(N, np.float32)
            s.load_module(ptx).add_kernel[grid, block](dx, dy, dout, np.int32(N),
                                                      np.uint64(0), np.uint64(0))
            s.sync()
            assert np.array_equal(dout.to_host(), x + y)


def test_numba_ptx(client: gpulease.Client) -> None:
    run_axpy(client, (HERE / "numba_axpy.ptx").read_text())


def test_triton_ptx(client: gpulease.Client) -> None:
    from kernels import TRITON_BLOCK, TRITON_WARPS

    run_triton_add(client, (HERE / "triton_add.ptx").read_text(), TRITON_BLOCK, TRITON_WARPS)


def test_numba_compiled_now(client: gpulease.Client) -> None:
    cuda = pytest.importorskip("numba.cuda")
    from kernels import AXPY_SIGNATURE, axpy_numba

    try:
        ptx, _ = cuda.compile_ptx(axpy_numba(), AXPY_SIGNATURE(), cc=(7, 5))
    except Exception as e:  # no NVVM (no CUDA toolkit) here
        pytest.skip(f"numba cannot compile here: {e}")
    run_axpy(client, ptx)


def test_triton_compiled_now(client: gpulease.Client) -> None:
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernels import TRITON_BLOCK, TRITON_SIGNATURE, TRITON_WARPS, add_kernel_triton

    src = ASTSource(fn=add_kernel_triton(), signature=TRITON_SIGNATURE,
                    constexprs={"BLOCK": TRITON_BLOCK})
    k = triton.compile(src, target=GPUTarget("cuda", 80, 32))
    run_triton_add(client, k.asm["ptx"], TRITON_BLOCK, k.metadata.num_warps)
