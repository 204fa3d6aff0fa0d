"""Shared helpers of the Python tests: the repository, the `cmdgraph` CLI binary the
results are compared with, the examples, and random inputs."""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import cmdgraph

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.cgir"))


def cli_path():
    """The CLI: $CMDGRAPH_CLI, else the newest of target/{release,debug}/cmdgraph."""
    given = os.environ.get("CMDGRAPH_CLI")
    if given:
        return given
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    found = [p for p in (target / "release" / "cmdgraph", target / "debug" / "cmdgraph") if p.exists()]
    if not found:
        pytest.skip("no cmdgraph CLI binary: build it (cargo build -p cmdgraph-cli) or set CMDGRAPH_CLI")
    return str(max(found, key=lambda p: p.stat().st_mtime))


def run_cli(*args):
    """(exit code, stdout bytes, stderr text) of the CLI run in the repository root."""
    done = subprocess.run([cli_path(), *args], cwd=REPO, capture_output=True, timeout=600)
    return done.returncode, done.stdout, done.stderr.decode()


def relative(path):
    """The path as the tests give it to both the CLI and Python (diagnostics show it)."""
    return str(Path(path).relative_to(REPO))


@pytest.fixture(autouse=True)
def in_repo(monkeypatch):
    """Every test runs in the repository root, as the CLI calls do."""
    monkeypatch.chdir(REPO)


@pytest.fixture(scope="session")
def device():
    """The default Vulkan device with the validation layer on: any message it reports
    makes a load or run raise DeviceError, so it fails the test."""
    return cmdgraph.Device(validation=True)


# The dtype of each IR scalar type (docs/python.md, as `.npy` files of `cmdgraph interp`).
DTYPES = {
    "bool": "|b1", "i8": "|i1", "u8": "|u1", "i16": "<i2", "u16": "<u2", "i32": "<i4",
    "u32": "<u4", "i64": "<i8", "u64": "<u8", "f16": "<f2", "f32": "<f4", "f64": "<f8",
}


def random_inputs(module, seed, summable=False):
    """An array for every usm and buffer memory object: full-precision floats in [-4, 4)
    (multiples of 1/16 when `summable`: float atomic adds then give the same bits in any
    order), integers in [0, 1024)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, ty, kind in module.memories:
        if kind == "device_global":
            continue
        elem, count = ty[:-1].split("[")
        count = int(count)
        lanes = 1
        if elem.startswith("vec"):
            lanes = int(elem[3])
            elem = elem[elem.index("<") + 1 : -1]
        shape = (count,) if lanes == 1 else (count, lanes)
        dtype = np.dtype(DTYPES[elem])
        if dtype.kind == "f":
            if summable:
                values = rng.integers(-64, 65, size=shape) / 16.0
            else:
                values = rng.random(size=shape) * 8.0 - 4.0
            out[name] = values.astype(dtype)
        elif dtype.kind == "b":
            out[name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            out[name] = rng.integers(0, 1024, size=shape).astype(dtype)
    return out
