# lit configuration for cmdgraph's FileCheck tests (one folder per area).
#
# Run through cargo (builds the binary, one test per .cgir file):
#   cargo test -p cmdgraph-cli --test lit [-- FILTER]
# Or directly, naming the binary:
#   cargo build -p cmdgraph-cli
#   /usr/lib/llvm-22/bin/lit -v lit-tests --param cmdgraph=target/debug/cmdgraph
#   (or CMDGRAPH_BIN=target/debug/cmdgraph lit -v lit-tests)
#
# Substitutions: %cmdgraph (the binary), %{exit} N CMD... (runs CMD, fails unless its exit
# status is exactly N; output and stdin pass through). FileCheck, not and split-file come
# from LLVM 22 (/usr/lib/llvm-22/bin, or LLVM_TOOLS_DIR).

import os
import shutil

import lit.formats

config.name = "cmdgraph"
config.suffixes = [".cgir"]
config.excludes = ["Inputs"]
# External bash (not lit's internal shell): tests use `;`, `$?` and subshells.
config.test_format = lit.formats.ShTest(True)
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

# %t files live under target/, never beside the tests.
repo_root = os.path.dirname(config.test_source_root)
config.test_exec_root = os.environ.get(
    "CMDGRAPH_LIT_OUT", os.path.join(repo_root, "target", "lit")
)

cmdgraph = lit_config.params.get("cmdgraph") or os.environ.get("CMDGRAPH_BIN")
if not cmdgraph:
    lit_config.fatal(
        "no cmdgraph binary: pass --param cmdgraph=PATH or set CMDGRAPH_BIN "
        "(cargo test -p cmdgraph-cli --test lit does this for you)"
    )
cmdgraph = os.path.abspath(cmdgraph)
if not os.access(cmdgraph, os.X_OK):
    lit_config.fatal("cmdgraph binary %r is not an executable file" % cmdgraph)

llvm_bin = os.environ.get("LLVM_TOOLS_DIR", "/usr/lib/llvm-22/bin")
path = os.pathsep.join([llvm_bin, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PATH"] = path
for tool in ["FileCheck", "not", "count", "split-file", "dot"]:
    if not shutil.which(tool, path=path):
        lit_config.fatal("%s not found on %s: run scripts/setup.sh" % (tool, path))

# Diagnostics are plain text (no colour) whatever the caller's terminal is.
config.environment["NO_COLOR"] = "1"

expect_exit = (
    "bash -c 'want=$1; shift; \"$@\"; got=$?; "
    "if [ \"$got\" -ne \"$want\" ]; then echo \"expected exit status $want, got $got\" >&2; exit 1; fi' "
    "expect-exit"
)
config.substitutions.insert(0, ("%cmdgraph", cmdgraph))
config.substitutions.insert(0, ("%{exit}", expect_exit))
