"""Stateless calls (Lease.call, Client.call): numpy in, numpy out, checked
against numpy references."""

from __future__ import annotations

import pathlib
from typing import Iterator, List, Union

import numpy as np
import pytest

import gpulease
from gpulease import Client, Lease

from gltest import Daemon


@pytest.fixture
def lease(client: Client) -> Iterator[Lease]:
    with client.lease("16MiB", ttl=120) as lease:
        yield lease


def _grid(n: int, block: int = 256) -> int:
    return (n + block - 1) // block


def _ab(n: int) -> "tuple[np.ndarray, np.ndarray]":
    rng = np.random.default_rng(n)
    return (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal(n).astype(np.float32))


@pytest.mark.parametrize("n", [1, 255, 1000, 100_003])
def test_vector_add(lease: Lease, kernels: pathlib.Path, n: int) -> None:
    a, b = _ab(n)
    c = lease.call(kernels / "vector_add.ptx", "vector_add", grid=_grid(n), block=256,
                   args=[a, b, gpulease.out(n, np.float32), np.int32(n)])
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (n,)
    assert np.array_equal(c, a + b)  # float32 addition is exact on both sides


def test_scale_inout_with_python_scalars(lease: Lease, kernels: pathlib.Path) -> None:
    n = 5000
    x = np.linspace(-3, 3, n, dtype=np.float32)
    keep = x.copy()
    # 2.5 fills the .f32 parameter, n the .u32 one (read from the PTX).
    y = lease.call(kernels / "scale.ptx", "scale", grid=_grid(n), block=256,
                   args=[gpulease.inout(x), 2.5, n])
    assert np.array_equal(y, x * np.float32(2.5))
    assert np.array_equal(x, keep)  # the input array is not modified
    # n smaller than the array: only the first half is scaled.
    y = lease.call(kernels / "scale.ptx", "scale", grid=_grid(n), block=256,
                   args=[gpulease.inout(x), np.float32(-1.0), np.int32(n // 2)])
    assert np.array_equal(y[: n // 2], -x[: n // 2]) and np.array_equal(y[n // 2:], x[n // 2:])


def test_several_outputs_come_back_as_a_list(lease: Lease, kernels: pathlib.Path) -> None:
    n = 777
    a, b = _ab(n)
    res = lease.call(kernels / "vector_add.ptx", "vector_add", grid=(_grid(n),), block=(256, 1, 1),
                     args=[gpulease.inout(a), b, gpulease.out(n), n])
    assert isinstance(res, list) and len(res) == 2
    assert np.array_equal(res[0], a) and np.array_equal(res[1], a + b)


def test_out_shapes_and_dtypes(lease: Lease, kernels: pathlib.Path) -> None:
    # iota writes (float)(i + 1) at i = global thread index: 2 blocks of 64.
    img = (kernels / "iota.ptx").read_bytes()
    out = lease.call(img, "iota", grid=2, block=64, args=[gpulease.out((8, 16))])
    assert isinstance(out, np.ndarray) and out.shape == (8, 16)
    assert np.array_equal(out.ravel(), np.arange(1, 129, dtype=np.float32))
    # The same bytes seen as another dtype.
    raw = lease.call(img.decode(), "iota", grid=1, block=4, args=[gpulease.out(4, np.uint32)])
    assert np.array_equal(raw, np.arange(1, 5, dtype=np.float32).view(np.uint32))


def test_image_forms(lease: Lease, kernels: pathlib.Path) -> None:
    path = kernels / "vector_add.ptx"
    n = 300
    a, b = _ab(n)
    images: List[Union[pathlib.Path, bytes, str]] = [path, path.read_bytes(), path.read_text()]
    for image in images:
        c = lease.call(image, "vector_add", grid=_grid(n), block=256,
                       args=[a, b, gpulease.out(n), n])
        assert np.array_equal(c, a + b)


def test_input_layouts(lease: Lease, kernels: pathlib.Path) -> None:
    # Non-contiguous and 2-D inputs are sent in C order.
    m = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    t = m.T  # a view, Fortran order
    ones = np.ones((32, 64), np.float32)
    c = lease.call(kernels / "vector_add.ptx", "vector_add", grid=8, block=256,
                   args=[t, ones, gpulease.out((32, 64)), t.size])
    assert np.array_equal(c, t + 1)
    strided = np.arange(200, dtype=np.float32)[::2]
    c = lease.call(kernels / "vector_add.ptx", "vector_add", grid=1, block=128,
                   args=[strided, strided, gpulease.out(100), 100])
    assert np.array_equal(c, strided * 2)


def test_client_call_on_a_fresh_lease(client: Client, kernels: pathlib.Path) -> None:
    before = client.inventory().tenant.used_leases
    n = 4096
    a, b = _ab(n)
    c = client.call(kernels / "vector_add.ptx", "vector_add", grid=_grid(n), block=256,
                    args=[a, b, gpulease.out(n), n], ttl=30)
    assert np.array_equal(c, a + b)
    assert client.inventory().tenant.used_leases == before  # the fresh lease is gone


def test_submits_are_counted(lease: Lease, kernels: pathlib.Path) -> None:
    for _ in range(3):
        lease.call(kernels / "iota.ptx", "iota", args=[gpulease.out(1)])
    assert lease.query().submits == 3


# -- argument errors (raised before anything is sent) -------------------------

def test_argument_count_and_types(lease: Lease, kernels: pathlib.Path) -> None:
    va = kernels / "vector_add.ptx"
    a = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"takes 4 parameters \(.u64, .u64, .u64, .u32\), got 3"):
        lease.call(va, "vector_add", args=[a, a, gpulease.out(4)])
    with pytest.raises(TypeError, match="integer parameter; got the float 4.0"):
        lease.call(va, "vector_add", args=[a, a, gpulease.out(4), 4.0])
    with pytest.raises(TypeError, match=r"argument 3 is a buffer \(a pointer\), but parameter vector_add_param_3 is .u32"):
        lease.call(va, "vector_add", args=[a, a, gpulease.out(4), a])
    with pytest.raises(TypeError, match="takes 4 bytes, but int64 has 8"):
        lease.call(va, "vector_add", args=[a, a, gpulease.out(4), np.int64(4)])
    with pytest.raises(OverflowError, match="does not fit"):
        lease.call(va, "vector_add", args=[a, a, gpulease.out(4), 1 << 40])
    with pytest.raises(TypeError, match="argument 3 is a str; pass a numpy array"):
        lease.call(va, "vector_add", args=[a, a, gpulease.out(4), "4"])
    with pytest.raises(TypeError, match="args is a list"):
        lease.call(va, "vector_add", args=a)  # type: ignore[arg-type]
    with pytest.raises(gpulease.PtxError, match="its kernels: vector_add"):
        lease.call(va, "vector_sub", args=[])
    with pytest.raises(ValueError, match="retries"):
        lease.call(va, "vector_add", args=[a, a, gpulease.out(4), 4], retries=0)


def test_python_scalars_need_ptx(lease: Lease) -> None:
    cubin = b"\x7fELF\x02\x01\x01" + bytes(57)
    with pytest.raises(TypeError, match="plain Python int.*np.int32"):
        lease.call(cubin, "k", args=[np.zeros(4, np.float32), 4])


def test_negative_int_wraps_for_u32(lease: Lease, kernels: pathlib.Path) -> None:
    # vector_add's n is a C int, a .u32 in PTX: -1 passes as 0xFFFFFFFF,
    # which the kernel reads as int -1, so no element is written.
    a = np.ones(8, np.float32)
    c = lease.call(kernels / "vector_add.ptx", "vector_add", grid=1, block=8,
                   args=[a, a, gpulease.out(8), -1])
    assert np.array_equal(c, np.zeros(8, np.float32))


# -- errors from the daemon ----------------------------------------------------

BAD_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k()
{
\tbogus.instruction;
\tret;
}
"""


def test_load_failed(lease: Lease) -> None:
    with pytest.raises(gpulease.LoadFailed) as info:
        lease.call(BAD_PTX, "k", args=[])
    assert info.value.status == 3 and info.value.message


def test_launch_failed_out_of_bounds(lease: Lease, kernels: pathlib.Path) -> None:
    with pytest.raises(gpulease.LaunchFailed, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        lease.call(kernels / "oob.ptx", "oob", args=[gpulease.out(4, np.uint32)])
    # The lease lives on with a fresh context.
    n = 64
    a, b = _ab(n)
    c = lease.call(kernels / "vector_add.ptx", "vector_add", grid=1, block=64,
                   args=[a, b, gpulease.out(n), n])
    assert np.array_equal(c, a + b)


def test_buffers_larger_than_the_lease(lease: Lease, kernels: pathlib.Path) -> None:
    with pytest.raises(gpulease.InvalidArgument, match="outside the lease"):
        lease.call(kernels / "scale.ptx", "scale", args=[gpulease.out(8 << 20), 1.0, 0])


def test_cubin_on_the_emulated_device_is_unsupported(lease: Lease, emulated_only: None) -> None:
    cubin = b"\x7fELF\x02\x01\x01" + bytes(57)
    with pytest.raises(gpulease.Unsupported, match="cubin"):
        lease.call(cubin, "k", args=[np.int32(1)])
    fatbin = b"\x50\xed\x55\xba\x01\x00\x10\x00" + bytes(56)
    with pytest.raises(gpulease.Unsupported, match="fatbin"):
        lease.call(fatbin, "k", args=[np.zeros(2, np.float32), np.float32(2)])


def test_call_on_a_freed_lease(client: Client, kernels: pathlib.Path) -> None:
    with client.lease("1MiB", ttl=10) as lease:
        pass
    with pytest.raises(gpulease.NotFound):
        lease.call(kernels / "iota.ptx", "iota", args=[gpulease.out(1)])


def test_call_with_a_wrong_secret(client: Client, daemon: Daemon, kernels: pathlib.Path) -> None:
    with client.lease("1MiB", ttl=10) as lease:
        forged = client.attach(lease.id, lease.secret)
        forged._c.secret[39] ^= 0xFF  # tamper with the MAC
        with pytest.raises(gpulease.Unauthorized):
            forged.call(kernels / "iota.ptx", "iota", args=[gpulease.out(1)])
