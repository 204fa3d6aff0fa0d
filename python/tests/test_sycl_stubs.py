"""The stubs of cmdgraph.sycl (`sycl.pyi`) describe the module that is there: every class,
method, property and function exists with the same parameters and has a docstring."""

import ast
import inspect

from cmdgraph import sycl
from test_stubs import PACKAGE, runtime_parameters
from test_stubs import parameters as plain_parameters


def parameters(node):
    """`test_stubs.parameters` with `*args` where the stub has it."""
    out = plain_parameters(node)
    a = node.args
    if a.vararg is not None:
        at = len([p for p in a.posonlyargs + a.args if p.arg != "self"])
        out.insert(at, (a.vararg.arg, "positional", False))
    return out


def test_the_sycl_stubs_match_the_module():
    tree = ast.parse((PACKAGE / "sycl.pyi").read_text())
    checked = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            assert runtime_parameters(getattr(sycl, node.name)) == parameters(node), node.name
            assert getattr(sycl, node.name).__doc__, node.name
            checked += 1
        elif isinstance(node, ast.ClassDef):
            cls = getattr(sycl, node.name)
            assert cls.__doc__, node.name
            for item in node.body:
                if not isinstance(item, ast.FunctionDef):
                    continue
                what = f"{node.name}.{item.name}"
                assert hasattr(cls, item.name), what
                if any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
                    assert isinstance(inspect.getattr_static(cls, item.name), type(sycl.Usm.name)), what
                elif item.name == "__init__":
                    assert runtime_parameters(cls) == parameters(item), what
                elif not item.name.startswith("__"):
                    assert runtime_parameters(getattr(cls, item.name)) == parameters(item), what
                    assert getattr(cls, item.name).__doc__, what
                checked += 1
    assert checked >= 100, checked
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert names <= set(sycl.__all__)
