"""python/examples run against the session's daemon."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import gpulease

from gltest import Daemon

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _env() -> dict:
    env = dict(os.environ)
    pkg_parent = str(pathlib.Path(gpulease.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_quickstart(daemon: Daemon, kernels: pathlib.Path) -> None:
    script = EXAMPLES / "quickstart.py"
    if not script.exists():
        pytest.skip("python/examples not here")
    r = subprocess.run([sys.executable, str(script), daemon.addr, daemon.pin,
                        str(kernels / "vector_add.ptx"), "100000"],
                       capture_output=True, text=True, env=_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert "vector_add: 100000 elements on lease" in r.stdout
    assert ", 0 wrong" in r.stdout


def test_quickstart_usage() -> None:
    script = EXAMPLES / "quickstart.py"
    if not script.exists():
        pytest.skip("python/examples not here")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(),
                       timeout=60)
    assert r.returncode == 2 and "usage:" in r.stderr
