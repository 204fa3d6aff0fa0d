"""The type stubs describe the module that is there: every function, class, method and
property of `_cmdgraph.pyi` exists, with the same parameters, and the wheel ships the stubs
and `py.typed`."""

import ast
import inspect
from pathlib import Path

import cmdgraph
from cmdgraph import _cmdgraph

PACKAGE = Path(cmdgraph.__file__).parent


def stub():
    return ast.parse((PACKAGE / "_cmdgraph.pyi").read_text())


def parameters(node):
    """(name, kind, has a default) of a stub function's parameters, without `self`."""
    a = node.args
    out = [(p.arg, "positional", False) for p in a.posonlyargs + a.args]
    for i, d in enumerate(reversed(a.defaults)):
        name, kind, _ = out[len(out) - 1 - i]
        out[len(out) - 1 - i] = (name, kind, True)
    out += [(p.arg, "keyword", d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return [p for p in out if p[0] != "self"]


def runtime_parameters(obj):
    out = []
    for p in inspect.signature(obj).parameters.values():
        kind = "keyword" if p.kind == p.KEYWORD_ONLY else "positional"
        out.append((p.name, kind, p.default is not p.empty))
    return [p for p in out if p[0] != "self"]


def test_the_package_ships_its_stubs_and_marker():
    assert (PACKAGE / "_cmdgraph.pyi").is_file()
    assert (PACKAGE / "py.typed").is_file()


def typing_only(node):
    """A stub class that describes what callers pass (a `Protocol`), not a class of the module."""
    return isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "Protocol" for b in node.bases)


def test_every_stub_matches_the_module():
    checked = 0
    for node in (n for n in stub().body if not typing_only(n)):
        if isinstance(node, ast.FunctionDef):
            assert runtime_parameters(getattr(_cmdgraph, node.name)) == parameters(node), node.name
            checked += 1
        elif isinstance(node, ast.ClassDef):
            cls = getattr(_cmdgraph, node.name)
            assert cls.__doc__, node.name
            for item in node.body:
                if not isinstance(item, ast.FunctionDef):
                    continue
                what = f"{node.name}.{item.name}"
                assert hasattr(cls, item.name), what
                if any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list):
                    assert isinstance(inspect.getattr_static(cls, item.name), type(cmdgraph.Module.graphs)), what
                elif item.name == "__init__":
                    assert runtime_parameters(cls) == parameters(item), what
                elif not item.name.startswith("__"):
                    assert runtime_parameters(getattr(cls, item.name)) == parameters(item), what
                    assert getattr(cls, item.name).__doc__, what
                checked += 1
    assert checked >= 30, checked
    exported = {n.name for n in stub().body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not typing_only(n)}
    assert exported <= set(cmdgraph.__all__)
