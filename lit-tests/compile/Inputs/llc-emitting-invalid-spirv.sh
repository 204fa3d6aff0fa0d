#!/bin/sh
# A stand-in for LLVM 22's llc (CMDGRAPH_LLC) that reads the module and "emits" a bare SPIR-V
# 1.6 header, which spirv-val rejects (no OpMemoryModel): codegen's output failing validation.
cat > /dev/null
printf '\003\002\043\007\000\006\001\000\000\000\000\000\001\000\000\000\000\000\000\000'
