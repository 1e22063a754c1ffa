"""Connections, the inventory, leases and their context manager, the
renewer, and the errors of these, against the session's daemon."""

from __future__ import annotations

import pathlib
import shutil
import socket
import tempfile
import time
from typing import Iterator, List, Tuple, Union

import numpy as np
import pytest

import gpulease
from gpulease import Client

from gltest import Daemon, start_daemon, stop_daemon


def _gone(client: Client, lease_id: int, secret: str) -> bool:
    try:
        client.attach(lease_id, secret)
    except (gpulease.NotFound, gpulease.LeaseExpired):
        return True
    return False


def _wait_leased_bytes(client: Client, want: int, timeout: float = 10.0) -> int:
    """The GPUs' leased bytes once they reach `want` (a lease's teardown
    runs in the background), or what they are at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        got = sum(g.leased_vram_bytes for g in client.inventory().gpus)
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_inventory(client: Client, daemon: Daemon) -> None:
    inv = client.inventory()
    assert isinstance(inv, gpulease.Inventory)
    assert inv.max_ttl_s == 300
    assert len(inv.gpus) >= 1
    g = inv.gpus[0]
    assert isinstance(g, gpulease.GpuInfo)
    assert g.index == 0 and g.total_vram_bytes > 0 and g.name
    assert g.compute_capability == (g.cc_major, g.cc_minor)
    assert not g.fenced and not g.mig
    if daemon.emulated:
        assert g.emulated and g.total_vram_bytes == 256 << 20
        assert g.name == "gpulease emulated device (PTX on CPU)"
        assert (g.cc_major, g.cc_minor) == (9, 0) and g.context_overhead_bytes == 0
        assert inv.driver_version == ""
        assert g.sm_targets == ("sm_90", "sm_90a")
        assert g.ptx_isa_driver == (9, 9) and g.ptx_isa_nvjitlink == (0, 0)
    t = inv.tenant
    assert isinstance(t, gpulease.TenantInfo)
    assert t.name == "" and not t.admin and not t.listed  # anonymous on loopback
    assert t.quota_vram_bytes is None and t.quota_leases is None  # no limits
    pool = client.warm_pool()
    assert [p.index for p in pool] == [g.index for g in inv.gpus]
    assert all(isinstance(p, gpulease.WarmPoolInfo) for p in pool)
    assert all(p.target == 0 for p in pool)  # --warm-workers 0
    with pytest.warns(DeprecationWarning, match="warm_pool"):
        assert client.pool() == pool  # the old name, for one release
    assert gpulease.PoolInfo is gpulease.WarmPoolInfo
    adm = client.admission()
    assert len(adm) == len(inv.gpus)
    assert all(isinstance(a, gpulease.AdmissionInfo) for a in adm)
    assert all(a.limit == 16 and not a.learned and a.queued == 0 for a in adm)  # the default
    assert all(a.held == a.leased + a.warm + a.spare + a.tearing_down for a in adm)


def test_lease_attributes_and_query(client: Client) -> None:
    with client.lease("1MiB", ttl=30) as lease:
        assert lease.vram == 1 << 20 and lease.ttl == 30 and lease.gpu == 0
        assert 28 < lease.remaining <= 30
        assert len(lease.secret) == 80 and int(lease.secret, 16) >= 0
        assert lease.lease_class == "isolated"
        assert lease.query() is lease and lease.submits == 0
        lease.renew(45)
        assert lease.ttl == 45 and 43 < lease.remaining <= 45
        same = client.attach(lease.id, lease.secret)
        assert same.id == lease.id and same.vram == lease.vram
        assert client.attach(lease.id, bytes.fromhex(lease.secret)).id == lease.id
        inv = client.inventory()
        assert inv.gpus[0].active_leases >= 1 and inv.tenant.used_leases >= 1
    assert lease.freed


def test_lease_sizes(client: Client) -> None:
    sizes: List[Tuple[Union[int, str], int]] = [
        ("512KiB", 512 << 10), ("2M", 2 << 20), (3 * 4096, 3 * 4096)]
    for size, want in sizes:
        with client.lease(size, ttl=10) as lease:
            assert lease.vram == want


def test_context_manager_frees(client: Client) -> None:
    before = sum(g.leased_vram_bytes for g in client.inventory().gpus)
    with client.lease("4MiB", ttl=60) as lease:
        lid, secret = lease.id, lease.secret
        assert sum(g.leased_vram_bytes for g in client.inventory().gpus) == before + (4 << 20)
    assert _gone(client, lid, secret)
    assert _wait_leased_bytes(client, before) == before


def test_context_manager_frees_when_the_block_raises(client: Client) -> None:
    before = sum(g.leased_vram_bytes for g in client.inventory().gpus)
    with pytest.raises(KeyError, match="from the block"):
        with client.lease("2MiB", ttl=60) as lease:
            lid, secret = lease.id, lease.secret
            raise KeyError("from the block")
    assert lease.freed and _gone(client, lid, secret)
    assert _wait_leased_bytes(client, before) == before


def test_context_manager_when_the_lease_is_gone(client: Client) -> None:
    with client.lease("1MiB", ttl=60) as lease:
        lease.free()  # freed inside the block: the exit has nothing to do
        with pytest.raises(gpulease.NotFound):
            lease.query()
    with client.lease("1MiB", ttl=60) as lease:
        client.attach(lease.id, lease.secret).free()  # freed through another object
    with client.lease("1MiB", ttl=1) as lease:
        time.sleep(2.2)  # expired in the block
        with pytest.raises(gpulease.LeaseExpired):
            lease.query()
    with pytest.raises(ZeroDivisionError):
        with client.lease("1MiB", ttl=60) as lease:
            lease.free()
            1 / 0


def test_renewer_keeps_a_short_lease(client: Client) -> None:
    with client.lease("1MiB", ttl=2, renew=True) as lease:
        time.sleep(4.5)
        assert lease.renewing and lease.renewer_error is None
        lease.query()  # still alive after more than twice its TTL
        assert lease.ttl == 2 and lease.remaining > 0
        lid, secret = lease.id, lease.secret
    assert not lease.renewing
    assert _gone(client, lid, secret)


def test_lease_without_renewer_expires(client: Client) -> None:
    lease = client.lease("1MiB", ttl=1)
    assert lease.renewer_error is None and not lease.renewing
    time.sleep(2.2)
    with pytest.raises(gpulease.LeaseExpired) as info:
        lease.query()
    assert info.value.status == 7 and "expired" in info.value.message
    with lease:
        pass  # the exit finds it gone: not an error


def test_renewer_reports_a_lost_lease(client: Client) -> None:
    lease = client.lease("1MiB", ttl=3, renew=True)
    client.attach(lease.id, lease.secret).free()  # taken away behind the renewer's back
    deadline = time.monotonic() + 10
    while lease.renewing and time.monotonic() < deadline:
        time.sleep(0.1)
    err = lease.renewer_error
    assert isinstance(err, (gpulease.NotFound, gpulease.LeaseExpired, gpulease.Unauthorized))
    lease.__exit__(None, None, None)


def test_client_context_manager_and_closed(daemon: Daemon) -> None:
    with gpulease.connect(daemon.addr, pin_sha256=daemon.pin, timeout=5) as c:
        assert not c.closed and c.addr == daemon.addr
        c.inventory()
    assert c.closed
    with pytest.raises(gpulease.Disconnected, match="closed"):
        c.inventory()
    c.close()  # twice is harmless


def test_insecure_and_pin_with_colons(daemon: Daemon) -> None:
    with gpulease.connect(daemon.addr, insecure=True) as c:
        assert c.inventory().gpus
    pin = ":".join(daemon.pin[i:i + 2] for i in range(0, 64, 2))
    with gpulease.connect(daemon.addr, pin_sha256=pin) as c:
        assert c.inventory().gpus


# -- errors -----------------------------------------------------------------

def test_ttl_over_max_is_invalid_argument(client: Client) -> None:
    with pytest.raises(gpulease.InvalidArgument, match="ttl_s 301 out of range 1..300"):
        client.lease("1MiB", ttl=301)
    with client.lease("1MiB", ttl=10) as lease:
        with pytest.raises(gpulease.InvalidArgument):
            lease.renew(1000)
    with pytest.raises(gpulease.InvalidArgument):
        client.lease(0, ttl=10)
    with pytest.raises(ValueError):
        client.lease("1MiB", ttl=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lease_class"):
        client.lease("1MiB", ttl=10, lease_class="exclusive")


def test_not_found(client: Client) -> None:
    with client.lease("1MiB", ttl=10) as lease:
        lid, secret = lease.id, lease.secret
    with pytest.raises(gpulease.NotFound, match=f"no lease with id {lid}"):
        client.attach(lid, secret)
    with pytest.raises(gpulease.NotFound):
        lease.renew(10)
    with pytest.raises(gpulease.NotFound):
        lease.free()


def test_wrong_secret_is_unauthorized(client: Client) -> None:
    with client.lease("1MiB", ttl=30) as lease:
        wrong = lease.secret[:-1] + ("0" if lease.secret[-1] != "0" else "1")
        with pytest.raises(gpulease.Unauthorized, match="wrong secret") as info:
            client.attach(lease.id, wrong)
        assert info.value.status_name == "UNAUTHORIZED"
        lease.query()  # the right one still works
    with pytest.raises(ValueError):
        client.attach(1, "xyz")


def test_capacity_exceeded(client: Client) -> None:
    total = max(g.total_vram_bytes for g in client.inventory().gpus)
    with pytest.raises(gpulease.CapacityExceeded, match="VRAM"):
        client.lease(total + (1 << 30), ttl=5)


def test_no_device(client: Client) -> None:
    n = len(client.inventory().gpus)
    with pytest.raises(gpulease.NoDevice, match=f"no GPU with index {n + 5}"):
        client.lease("1MiB", ttl=5, gpu=n + 5)


def test_device_lease_is_busy_while_others_live(client: Client) -> None:
    with client.lease("1MiB", ttl=10, gpu=0):
        with pytest.raises(gpulease.Busy, match="device lease"):
            client.lease("1MiB", ttl=5, gpu=0, lease_class="device")


def test_partition_without_mig_is_unsupported(client: Client) -> None:
    if any(g.mig for g in client.inventory().gpus):
        pytest.skip("a GPU in MIG mode")
    with pytest.raises(gpulease.Unsupported, match="MIG"):
        client.lease("1MiB", ttl=5, lease_class="partition")


def test_shared_lease(client: Client) -> None:
    with client.lease("1MiB", ttl=10, lease_class="shared") as lease:
        assert lease.lease_class == "shared"


def _closed_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connect_to_a_closed_port_is_disconnected(daemon: Daemon) -> None:
    port = _closed_udp_port()
    t0 = time.monotonic()
    with pytest.raises(gpulease.Disconnected) as info:
        gpulease.connect(f"127.0.0.1:{port}", pin_sha256=daemon.pin, timeout=3)
    assert time.monotonic() - t0 < 10
    assert isinstance(info.value, ConnectionError) and info.value.status == 100


def test_wrong_pin_is_tls_failed(daemon: Daemon) -> None:
    with pytest.raises(gpulease.TlsFailed, match="fingerprint mismatch"):
        gpulease.connect(daemon.addr, pin_sha256="ab" * 32, timeout=5)


def test_bad_address_and_options(daemon: Daemon) -> None:
    with pytest.raises(gpulease.InvalidArgument, match="bad address"):
        gpulease.connect("no such host:x", pin_sha256=daemon.pin)
    with pytest.raises(ValueError):
        gpulease.connect(daemon.addr, pin_sha256=daemon.pin, timeout=0)
    with pytest.raises(gpulease.InvalidArgument):
        gpulease.connect(daemon.addr, pin_sha256=daemon.pin, cert_file="/nonexistent.pem",
                         key_file="/nonexistent.key")


def test_token_to_a_daemon_without_tokens(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPULEASE_TOKEN", "t" * 40)
    with pytest.raises(gpulease.Unsupported):
        gpulease.connect(daemon.addr, pin_sha256=daemon.pin)


# -- a daemon with tenants: tokens and quotas ---------------------------------

ALICE = "a1" * 24


@pytest.fixture(scope="module")
def tenant_daemon() -> Iterator[Daemon]:
    """A second daemon with --auth token and a small tenant quota (and a
    1 MiB request limit)."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="gl-pytest-tenants-"))
    (tmp / "tenants.ini").write_text(
        f"[tenant alice]\ntoken = {ALICE}\nvram = 4MiB\nleases = 2\nmax_ttl = 20\n")
    d = start_daemon(tmp, "--auth", "token", "--tenants", str(tmp / "tenants.ini"),
                     "--max-message", "1M", emu_vram="64M")
    try:
        yield d
    finally:
        stop_daemon(d)
        shutil.rmtree(tmp, ignore_errors=True)


def test_token_from_argument_and_environment(tenant_daemon: Daemon,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPULEASE_TOKEN", raising=False)
    with pytest.raises(gpulease.Unauthorized, match="no identity"):
        with gpulease.connect(tenant_daemon.addr, pin_sha256=tenant_daemon.pin) as c:
            c.inventory()
    with pytest.raises(gpulease.Unauthorized, match="unknown bearer token"):
        gpulease.connect(tenant_daemon.addr, pin_sha256=tenant_daemon.pin, token="b" * 40)
    with gpulease.connect(tenant_daemon.addr, pin_sha256=tenant_daemon.pin, token=ALICE) as c:
        assert c.inventory().tenant.name == "alice"
    monkeypatch.setenv("GPULEASE_TOKEN", ALICE)
    with gpulease.connect(tenant_daemon.addr, pin_sha256=tenant_daemon.pin) as c:
        t = c.inventory().tenant
        assert t.name == "alice" and t.listed
        assert t.quota_vram_bytes == 4 << 20 and t.quota_leases == 2 and t.quota_max_ttl_s == 20
        assert t.quota_sessions is None


def test_quota_exceeded(tenant_daemon: Daemon) -> None:
    with gpulease.connect(tenant_daemon.addr, pin_sha256=tenant_daemon.pin, token=ALICE) as c:
        with pytest.raises(gpulease.QuotaExceeded, match="VRAM quota"):
            c.lease("8MiB", ttl=5)
        with pytest.raises(gpulease.QuotaExceeded, match="max_ttl 20 s"):
            c.lease("1MiB", ttl=30)
        with c.lease("1MiB", ttl=10), c.lease("1MiB", ttl=10):
            assert c.inventory().tenant.used_leases == 2
            with pytest.raises(gpulease.QuotaExceeded):
                c.lease("1MiB", ttl=10)


def test_too_large(tenant_daemon: Daemon, kernels: pathlib.Path) -> None:
    with gpulease.connect(tenant_daemon.addr, pin_sha256=tenant_daemon.pin, token=ALICE) as c:
        with c.lease("3MiB", ttl=10) as lease:
            big = np.zeros(1 << 19, np.float32)  # 2 MiB in one GPU_SUBMIT > 1 MiB
            with pytest.raises(gpulease.TooLarge, match="larger than the daemon's limit"):
                lease.call(kernels / "scale.ptx", "scale", args=[big, 1.0, 1])
