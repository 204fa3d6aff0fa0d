#!/usr/bin/env bash
# Installs what cmdgraph needs on a Debian 12 machine that already has Rust. Idempotent: when
# every package is present it touches nothing (no apt-get update, no network).
#
#   bash scripts/setup.sh
#
# Packages and why:
#   llvm-22-tools llvm-22-dev libpolly-22-dev libzstd-dev  LLVM 22 (SPIR-V backend) for codegen,
#                                                         and lit/FileCheck/not for lit-tests/
#   graphviz                                              `dot`, to check every DOT we write
#   spirv-tools                                           spirv-val / spirv-dis
#   glslang-tools glslc                                   glslangValidator and glslc (shaderc): GLSL and HLSL
#                                                         external kernels (examples/kernels/*.comp, *.hlsl;
#                                                         cli/tests/vulkan_glsl.rs)
#   mesa-vulkan-drivers libvulkan1                        llvmpipe, a Vulkan 1.3 device on the CPU
#   vulkan-validationlayers vulkan-tools                  validation in tests, vulkaninfo
#   python3                                               lit is a Python program
#   gcc g++                                               the C API's examples and header checks
#   libvulkan-dev                                         Vulkan headers for examples/capi/interop.c
#                                                         (capi/tests/c_example.rs, test.sh)
#   python3-venv                                          the virtual environment of the Python package
#                                                         (python/, docs/python.md)
#   mpich libmpich-dev libclang-dev                       MPI for communication nodes (cmdgraph-mpi, the
#                                                         cli's `mpi` feature, docs/mpi.md): mpiexec and
#                                                         MPICH's headers, and libclang for rsmpi's bindgen
# clang is not needed: libFuzzer (fuzz/) and every -sys crate build with the machine's gcc.
set -euo pipefail

PACKAGES=(
  llvm-22-tools llvm-22-dev libpolly-22-dev libzstd-dev
  graphviz spirv-tools glslang-tools glslc
  mesa-vulkan-drivers libvulkan1 vulkan-validationlayers vulkan-tools
  python3 gcc g++ libvulkan-dev python3-venv
  mpich libmpich-dev libclang-dev
)

die() {
  echo "setup.sh: error: $*" >&2
  exit 1
}

installed() {
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = "installed" ]
}

# /dev/null must be the null device. Before `cmdgraph -o` wrote through devices, `-o /dev/null`
# (a lit test) renamed a regular file over it as root; every later read of /dev/null (cargo's
# `rustc -` probe among them) then read old output, and cargo cached the failed probe in the
# target directory. A machine left that way is repaired here (root or sudo), or setup stops.
if [ ! -c /dev/null ]; then
  echo "setup.sh: /dev/null is not the null device (a regular file?): recreating it" >&2
  NULL_SUDO=()
  [ "$(id -u)" -eq 0 ] || NULL_SUDO=(sudo)
  "${NULL_SUDO[@]}" mknod -m 666 /dev/null.cmdgraph-new c 1 3 && "${NULL_SUDO[@]}" mv -f /dev/null.cmdgraph-new /dev/null \
    || die "/dev/null is not a character device and could not be recreated (mknod -m 666 /dev/null c 1 3)"
  rm -f "${CARGO_TARGET_DIR:-target}/.rustc_info.json"
fi

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script expects Debian 12 (bookworm)"

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "not root and no sudo: install ${missing[*]} by hand"
    SUDO=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q || die "apt-get update failed"
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" \
    || die "apt-get install ${missing[*]} failed"
  for p in "${missing[@]}"; do
    installed "$p" || die "package $p is still missing after apt-get install"
  done
else
  echo "setup.sh: all ${#PACKAGES[@]} Debian packages present"
fi

# The Rust side comes with the machine (rustup, stable): check it rather than install it.
command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (rustup, stable toolchain) first"
cargo fmt --version >/dev/null 2>&1 || die "rustfmt missing: rustup component add rustfmt"
cargo clippy --version >/dev/null 2>&1 || die "clippy missing: rustup component add clippy"

# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
for tool in lit FileCheck not llvm-config dot spirv-val; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not on PATH after setup (PATH=$PATH)"
done

# The Python package (python/, docs/python.md): a virtual environment `.venv` (CMDGRAPH_VENV
# overrides it) with maturin, numpy and pytest (pip installs only what is missing), and the
# `cmdgraph` wheel (abi3, CPython 3.9+) built in release mode into TARGET/wheels and
# installed into it. cargo rebuilds only what changed, so a second run takes seconds.
# CMDGRAPH_SETUP_PYTHON=0 skips it (no venv, no pip, no release build): demo.sh and bench.sh run
# this script too and need none of it.
if [ "${CMDGRAPH_SETUP_PYTHON:-1}" = "0" ]; then
  echo "setup.sh: the Python package skipped (CMDGRAPH_SETUP_PYTHON=0)"
  exit 0
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${CMDGRAPH_VENV:-${repo}/.venv}"
if [ ! -x "${venv}/bin/python" ]; then
  echo "setup.sh: creating the virtual environment ${venv}"
  python3 -m venv "$venv" || die "python3 -m venv ${venv} failed (Debian: apt-get install python3-venv)"
fi
py_missing=()
for p in maturin numpy pytest; do
  "${venv}/bin/python" -m pip show -q "$p" >/dev/null 2>&1 || py_missing+=("$p")
done
if [ "${#py_missing[@]}" -gt 0 ]; then
  echo "setup.sh: pip install ${py_missing[*]} into ${venv}"
  "${venv}/bin/python" -m pip install -q "${py_missing[@]}" || die "pip install ${py_missing[*]} failed"
fi
wheel_dir="$(cd "$repo" && mkdir -p "${CARGO_TARGET_DIR:-target}/wheels" && cd "${CARGO_TARGET_DIR:-target}/wheels" && pwd)"
rm -f "${wheel_dir}"/cmdgraph-*.whl
wheel_start=$SECONDS
# --compatibility linux: the wheel is for this machine (it links the system's libzstd and
# libffi through LLVM); --strip: without debug info it is a fifth of the size.
(cd "$repo" && "${venv}/bin/maturin" build --release --strip --compatibility linux -q \
  -m python/Cargo.toml -o "$wheel_dir") || die "maturin build of the Python package failed"
wheels=("${wheel_dir}"/cmdgraph-*.whl)
[ -e "${wheels[0]}" ] || die "maturin wrote no wheel into ${wheel_dir}"
"${venv}/bin/python" -m pip install -q --force-reinstall --no-deps "${wheels[0]}" || die "pip install ${wheels[0]} failed"
echo "setup.sh: built and installed $(basename "${wheels[0]}") into ${venv} in $((SECONDS - wheel_start)) s"
