"""The README's Python quick start, run exactly as written: its python
block, from the repository's root (the paths it names), with
GPULEASE_ADDR and GPULEASE_PIN naming the test daemon as its shell block
exports them."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[3]


def quick_start() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "the README's Python section has no python block"
    return blocks[0]


def test_readme_quick_start(daemon, kernels) -> None:
    env = dict(os.environ, GPULEASE_ADDR=daemon.addr, GPULEASE_PIN=daemon.pin)
    # The quick start names build/kernels/; the tests' build may be another.
    code = quick_start().replace("build/kernels/", f"{kernels}/")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=300)
    print(r.stdout, r.stderr)
    assert r.returncode == 0
    assert r.stdout.strip()  # the GPU's name
