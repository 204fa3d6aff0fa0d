"""Writes arith32.cgir and moves32.cgir into DIR: the kernels of the subgroup lit tests
(lit-tests/run/subgroup_*), launched over 192 work-items in shapes that suit subgroups of 32
(work-groups of 64, of 48 with a partial subgroup of 16, and 2-D 32x3 and 64x3)."""
import importlib.util
import os
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
spec = importlib.util.spec_from_file_location("g", os.path.join(root, "lit-tests/run/Inputs/subgroup_gen.py"))
g = importlib.util.module_from_spec(spec)
spec.loader.exec_module(g)
out = sys.argv[1]
N = 192
launches = {"a": ("", "global(192), local(64)"), "b": ("", "global(192), local(48)"),
            "c": ("_2d", "global(32, 6), local(32, 3)"), "d": ("_2d", "global(64, 3), local(64, 3)")}
inputs = ["usm @fx : f32[192]", "usm @ix : i32[192]", "usm @ux : u32[192]"]

mem = list(inputs)
for s in "abcd":
    mem += [f"usm @of_{s} : f32[{N * 12}]", f"usm @oi_{s} : i32[{N * 21}]", f"usm @ou_{s} : u32[{N * 21}]"]
gr = ["graph @main {", "  %fill = kernel @fill range(192) args(@fx, @ix, @ux, 7)"]
for s, (sfx, nd) in launches.items():
    for t, ty in (("f", "f32"), ("i", "i32"), ("u", "u32")):
        gr.append(f"  %{t}{s} = kernel @{ty}{sfx} nd_range({nd}) args(@{t}x, @o{t}_{s}) after(%fill)")
gr.append("}")
open(os.path.join(out, "arith32.cgir"), "w").write(g.arith_test() + "\n" + "\n".join(mem) + "\n\n" + "\n".join(gr) + "\n")

lit = os.path.join(root, "lit-tests/run/subgroup_broadcast_shuffle_ballot_and_votes_match_the_interpreter.cgir")
t = open(lit).read()
kernels = t[t.index("kernel @fill"):t.index("usm @fx")]
mem = list(inputs)
for s in "abcd":
    mem += [f"usm @of_{s} : f32[{N * 6}]", f"usm @oi_{s} : i32[{N * 6}]", f"usm @ou_{s} : u32[{N * 6}]"]
    mem += [f"usm @b{x}_{s} : u32[{N * 12}]" for x in "fiu"]
gr = ["graph @main {", "  %fill = kernel @fill range(192) args(@fx, @ix, @ux, 11)"]
for s, (sfx, nd) in launches.items():
    for x, ty in (("f", "f32"), ("i", "i32"), ("u", "u32")):
        gr.append(f"  %{x}{s} = kernel @{ty}{sfx} nd_range({nd}) args(@{x}x, @o{x}_{s}, @b{x}_{s}) after(%fill)")
gr.append("}")
open(os.path.join(out, "moves32.cgir"), "w").write(kernels + "\n".join(mem) + "\n\n" + "\n".join(gr) + "\n")
