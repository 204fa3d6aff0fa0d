"""The IR from Python: text, diagnostics and DOT are the CLI's, byte for byte."""

import pytest

import cmdgraph
from conftest import EXAMPLES, REPO, relative, run_cli

# Broken modules (and a few accepted with warnings) of the lit suite, valid UTF-8 (the CLI
# reports other bytes as E0000; Python cannot hold them in a str).
VERIFY_CASES = [
    p
    for d in ("verify", "parse")
    for p in sorted((REPO / "lit-tests" / d).glob("*.cgir"))
    if p.read_bytes().decode("utf-8", errors="replace") == p.read_bytes().decode("utf-8", errors="ignore")
]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_print_parse_round_trip_is_the_cli_fmt(path):
    m = cmdgraph.parse_file(relative(path))
    text = m.text()
    assert str(m) == text
    assert cmdgraph.parse(text).text() == text
    rc, out, err = run_cli("fmt", relative(path))
    assert rc == 0, err
    assert text == out.decode()


@pytest.mark.parametrize("path", VERIFY_CASES, ids=lambda p: p.name)
def test_verify_gives_the_cli_diagnostics(path):
    """Every module of lit-tests/verify and lit-tests/parse: the exception's text is what
    `cmdgraph verify FILE` prints, its code the first error's."""
    rc, _, err = run_cli("verify", relative(path))
    try:
        warnings = cmdgraph.parse_file(relative(path)).verify()
    except cmdgraph.Error as e:
        assert rc == 1, f"the CLI accepted it: {err}"
        assert str(e) == err
        assert e.message == err
        assert isinstance(e, (cmdgraph.ParseError, cmdgraph.VerifyError))
        assert e.code is not None and e.code in err
        assert err.startswith(f"error[{e.code}]")
        assert f"{relative(path)}:" in err
    else:
        assert rc == 0, f"Python accepted what the CLI rejects: {err}"
        assert warnings == err


def test_a_parse_error_is_located():
    with pytest.raises(cmdgraph.ParseError) as info:
        cmdgraph.parse("usm @x : f32[4]\ngraph @g {\n  %a = frobnicate\n}\n", filename="bad.cgir")
    e = info.value
    assert e.code is not None and e.code.startswith("E0")
    assert "bad.cgir:3:" in str(e)
    assert isinstance(e, cmdgraph.Error)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_dot_is_the_cli_dot(path):
    m = cmdgraph.parse_file(relative(path))
    rc, out, err = run_cli("dot", relative(path))
    assert rc == 0, err
    assert m.dot() == out.decode()
    for graph in m.graphs:
        rc, out, err = run_cli("dot", "--graph", graph, "--verbose", relative(path))
        assert rc == 0, err
        assert m.dot(graph, verbose=True) == out.decode()


def test_dot_of_an_unknown_graph_is_a_value_error():
    m = cmdgraph.parse_file("examples/reduction.cgir")
    with pytest.raises(ValueError, match="no graph named `@nope`"):
        m.dot("nope")


def test_svg_for_jupyter():
    svg = cmdgraph.parse_file("examples/reduction.cgir")._repr_svg_()
    assert svg is not None and "<svg" in svg and "</svg>" in svg
    broken = cmdgraph.parse_file("lit-tests/verify/cycle.cgir")
    assert broken._repr_svg_() is None
