#!/usr/bin/env bash
# The Python package on the GPU machine (issue 31; ../shared/GPU.md): a Python program compiles
# a graph in process, runs it on the H200, prints the device name and checks every output
# against the interpreter; then bench/python/overhead.py measures a run from Python against the
# Rust API in the same process and writes its section into $OUT/performance.md.
#
#   bash scripts/gpu-python.sh prepare     # here: the wheel, and llc/spirv-val with their
#                                          #   libraries (in-process compile runs them), -> .bin/
#   bash scripts/gpu-python.sh device      # there: install into a scratch dir, run, benchmark
#   bash scripts/gpu-python.sh merge FILE  # here: FILE's python-overhead-gpu section into
#                                          #   docs/performance.md
#
# The machine has CPython with NumPy but no LLVM 22 and no SPIRV-Tools: `prepare` packs Debian's
# `llc` (LLVM 22) and `spirv-val` with the shared libraries they load. Carry `.gl` and `.bin`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

prepare() {
  . scripts/env.sh
  local venv=${CMDGRAPH_VENV:-.venv}
  rm -rf .bin/py .bin/py.tar.xz && mkdir -p .bin/py/lib .bin/py/bin .bin/py/site
  "${venv}/bin/maturin" build --release --strip --compatibility linux -q -m python/Cargo.toml -o .bin/py
  # The wheel unpacked (a zip compresses worse than the tar below), for PYTHONPATH there.
  unzip -q -o .bin/py/cmdgraph-*.whl -d .bin/py/site
  rm -f .bin/py/cmdgraph-*.whl
  cp /usr/lib/llvm-22/bin/llc "$(command -v spirv-val)" .bin/py/bin/
  # Every library llc, libLLVM, spirv-val and the extension load, but the C runtime's.
  for f in /usr/lib/llvm-22/bin/llc "$(command -v spirv-val)" /usr/lib/llvm-22/lib/libLLVM.so.22.1 \
    .bin/py/site/cmdgraph/_cmdgraph*.so; do
    ldd "$f" | awk '$3 ~ /^\// {print $3}'
  done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | while read -r lib; do
    cp -L "$lib" .bin/py/lib/
  done
  # One solid stream with a dictionary larger than libLLVM: the carried paths must stay under
  # 64 MiB together.
  tar -C .bin -cf - py | xz -T1 -9e --lzma2=preset=9e,dict=192MiB > .bin/py.tar.xz
  rm -rf .bin/py
  du -sh .bin/py.tar.xz
}

device() {
  local out=${OUT:-.}
  local root=/tmp/cmdgraph-py
  rm -rf "$root" && mkdir -p "$root"
  xz -d -c .bin/py.tar.xz | tar -C "$root" -xf -
  export PYTHONPATH="$root/py/site" LD_LIBRARY_PATH="$root/py/lib:${LD_LIBRARY_PATH:-}"
  export CMDGRAPH_LLC="$root/py/bin/llc" PATH="$root/py/bin:$PATH"
  python3 --version
  python3 - <<'PY'
import numpy as np
import cmdgraph

m = cmdgraph.parse_file("examples/saxpy_chain.cgir")
m.verify()
bundle = m.compile()
device = cmdgraph.Device()
print("device:", device.name, f"({device.kind})")
rng = np.random.default_rng(0)
inputs = {name: rng.random(65536, dtype=np.float32) for name in ("x", "y", "z")}
exe = device.load(bundle)
out = exe.run(inputs)
ref = m.interpret(inputs)
for name in sorted(out):
    same = np.array_equal(out[name], ref[name])
    print(f"{name}: {out[name].dtype}[{out[name].size}] {'matches' if same else 'DIFFERS FROM'} the interpreter")
    assert same, name
print("compiled in process, ran on", exe.device_name)

# DLPack with PyTorch (docs/python.md "Other array libraries"): CPU tensors in, without a
# copy; results out to torch without a copy; a CUDA tensor refused naming the memory object.
try:
    import torch
except ImportError:
    torch = None
if torch is None:
    print("dlpack: PyTorch is not installed here: not checked")
else:
    tensors = {name: torch.from_numpy(a.copy()) for name, a in inputs.items()}
    out = exe.run(tensors)
    for name in sorted(out):
        assert np.array_equal(out[name], ref[name]), f"torch input {name}"
        t = torch.from_dlpack(out[name])
        assert t.data_ptr() == out[name].ctypes.data, f"torch.from_dlpack copied {name}"
    print(f"dlpack: torch {torch.__version__} CPU tensors in and torch.from_dlpack out match, without copies")
    if torch.cuda.is_available():
        try:
            exe.run({"x": torch.rand(65536, device="cuda")})
            raise AssertionError("a CUDA tensor was accepted")
        except TypeError as e:
            assert "@x" in str(e) and "CUDA" in str(e), e
            print("dlpack: a CUDA tensor is refused:", e)
PY
  cp docs/performance.md "$out/performance.md"
  python3 bench/python/overhead.py --suffix gpu --write-to "$out/performance.md"
}

merge() {
  local file=$1
  python3 - "$file" <<'PY'
import sys
from pathlib import Path
name = "python-overhead-gpu"
begin, end = f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"
src = Path(sys.argv[1]).read_text()
section = begin + src.split(begin, 1)[1].split(end, 1)[0] + end
doc = Path("docs/performance.md")
text = doc.read_text()
if begin in text:
    head, rest = text.split(begin, 1)
    text = head + section + rest.split(end, 1)[1]
else:
    text = text.rstrip("\n") + "\n\n" + section + "\n"
doc.write_text(text)
print("merged", name)
PY
}

case "${1:-}" in
  prepare) prepare ;;
  device) device ;;
  merge) merge "$2" ;;
  *) echo "usage: $0 prepare|device|merge FILE" >&2; exit 2 ;;
esac
