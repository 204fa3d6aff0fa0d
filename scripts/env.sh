# Sourced (never run) by the other scripts: makes LLVM 22 visible to the build and the tests.
#
# llvm-sys (through inkwell) finds LLVM through LLVM_SYS_221_PREFIX, and the lit suite needs
# `lit`, `FileCheck` and `not`, which Debian installs only under /usr/lib/llvm-22/bin.
# Nothing here persists beyond the shell that sources it.

CMDGRAPH_LLVM_PREFIX=/usr/lib/llvm-22
case ":${PATH}:" in
  *":${CMDGRAPH_LLVM_PREFIX}/bin:"*) ;;
  *) export PATH="${CMDGRAPH_LLVM_PREFIX}/bin:${PATH}" ;;
esac
export LLVM_SYS_221_PREFIX="${CMDGRAPH_LLVM_PREFIX}"
unset CMDGRAPH_LLVM_PREFIX
