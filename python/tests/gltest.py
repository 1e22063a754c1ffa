"""Helpers of the tests: where the build is, and starting and stopping a
gpuleased (conftest.py's fixtures use them; tests that need a daemon of
their own too). Import it as `gltest`: a name no other folder's module
takes, unlike `conftest`."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import time
from dataclasses import dataclass

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent


def bin_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("GL_TEST_BIN_DIR") or REPO / "build")


@dataclass
class Daemon:
    addr: str
    pin: str
    port: int
    state_dir: pathlib.Path
    log: pathlib.Path
    emulated: bool
    process: "subprocess.Popen[bytes]"


def start_daemon(state_dir: pathlib.Path, *extra: str, emu_vram: str = "256M") -> Daemon:
    """Starts gpuleased on a free port with its state in state_dir; returns
    once its ready file says "PORT FINGERPRINT"."""
    exe = bin_dir() / "src" / "daemon" / "gpuleased"
    if not exe.exists():
        pytest.skip(f"no gpuleased at {exe} (set GL_TEST_BIN_DIR to a build directory)")
    emulated = os.environ.get("GL_TEST_DEVICE", "emu") != "cuda"
    device = ["--device", "emu", "--emu-vram", emu_vram] if emulated else ["--device", "cuda"]
    ready = state_dir / "ready"
    log = state_dir / "daemon.log"
    cmd = [str(exe), *device, "--listen", "127.0.0.1:0", "--state-dir", str(state_dir),
           "--ready-file", str(ready), "--warm-workers", "0", "--config", "none", *extra]
    logf = open(log, "wb")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)
    logf.close()
    deadline = time.monotonic() + 60
    while True:
        if ready.exists() and ready.read_text().strip():
            port_s, pin = ready.read_text().split()
            return Daemon(f"127.0.0.1:{port_s}", pin, int(port_s), state_dir, log, emulated, proc)
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"gpuleased did not start (rc {proc.returncode}):\n"
                               + log.read_text(errors="replace")[-4000:])
        time.sleep(0.05)


def stop_daemon(d: Daemon) -> None:
    if d.process.poll() is None:
        d.process.send_signal(signal.SIGTERM)
        try:
            d.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            d.process.kill()
            d.process.wait()
