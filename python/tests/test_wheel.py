"""The wheel installs into a fresh virtual environment and works without the checkout."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

SCRIPT = """
import cmdgraph, numpy as np, sys
assert "site-packages" in cmdgraph.__file__, cmdgraph.__file__
m = cmdgraph.parse(sys.stdin.read(), filename="saxpy.cgir")
exe = cmdgraph.Device().load(m.compile())
x = np.arange(1024, dtype=np.float32)
out = exe.run({"x": x, "y": np.ones(1024, np.float32), "z": np.zeros(1024, np.float32)})
assert out["y"].dtype == np.float32 and out["y"].shape == (1024,)
print(cmdgraph.__version__, exe.device_name)
"""

MODULE = """
kernel @twice(%x: buf<f32, read>, %y: buf<f32, read_write>) {
  %i = global_id 0
  %a = load %x[%i]
  %b = add %a, %a
  store %y[%i], %b
}
usm @x : f32[1024]
usm @y : f32[1024]
usm @z : f32[1024]
graph @main {
  %k = kernel @twice range(1024) args(@x, @y)
}
"""


def wheel():
    given = os.environ.get("CMDGRAPH_WHEEL")
    if given:
        return Path(given)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    found = sorted((target / "wheels").glob("cmdgraph-*.whl"), key=lambda p: p.stat().st_mtime)
    if not found:
        pytest.skip("no wheel: run scripts/setup.sh (maturin build) or set CMDGRAPH_WHEEL")
    return found[-1]


def test_the_wheel_installs_into_a_fresh_venv_and_runs_outside_the_checkout(tmp_path):
    whl = wheel()
    assert whl.exists(), whl
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    # ensurepip's own output says why a venv could not be made (a full disk, say).
    assert made.returncode == 0, made.stdout + made.stderr
    py = venv / "bin" / "python"
    # numpy comes from the index (PyPI), as for any user.
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(whl)], check=True, timeout=600)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(py), "-c", SCRIPT], input=MODULE, text=True, cwd=outside, env=env, capture_output=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    version, device = done.stdout.strip().split(" ", 1)
    assert version and device
