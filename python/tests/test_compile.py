"""Compiling in process gives the bytes of `cmdgraph compile`; bundles load and reject."""

import pytest

import cmdgraph
from conftest import EXAMPLES, REPO, relative, run_cli


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_compile_gives_the_cli_bytes(path, tmp_path):
    out = tmp_path / "cli.cgb"
    rc, _, err = run_cli("compile", relative(path), "-o", str(out))
    assert rc == 0, err
    bundle = cmdgraph.parse_file(relative(path)).compile()
    assert bytes(bundle) == out.read_bytes()
    assert len(bundle) == out.stat().st_size
    saved = tmp_path / "py.cgb"
    bundle.save(saved)
    assert saved.read_bytes() == out.read_bytes()
    for source in (str(out), out, out.read_bytes(), bytearray(out.read_bytes()), bundle):
        assert bytes(cmdgraph.load_bundle(source)) == out.read_bytes()


def test_pass_lists_and_opt_levels_are_the_cli_options(tmp_path):
    path = "examples/saxpy_chain.cgir"
    m = cmdgraph.parse_file(path)
    for passes, flag in (("", "--passes="), (["inline-subgraphs", "plan-memory"], "--passes=inline-subgraphs,plan-memory")):
        out = tmp_path / "cli.cgb"
        rc, _, err = run_cli("compile", path, flag, "-O0", "-o", str(out))
        assert rc == 0, err
        assert bytes(m.compile(passes, opt_level=0)) == out.read_bytes()
    assert bytes(m.compile("")) != bytes(m.compile())
    with pytest.raises(ValueError, match="no-such-pass"):
        m.compile(["no-such-pass"])
    with pytest.raises(ValueError, match="opt_level"):
        m.compile(opt_level=4)
    with pytest.raises(TypeError):
        m.compile(42)


def test_bundle_describes_itself():
    bundle = cmdgraph.parse_file("examples/saxpy_chain.cgir").compile()
    assert bundle.graphs == ["main"]
    assert len(bundle.content_hash) >= 32
    assert "graph @main" in bundle.source
    assert "graph @main" in bundle.optimized


def test_a_codegen_refusal_is_a_compile_error_with_the_cli_text(tmp_path):
    path = "lit-tests/compile/f64_math_functions_are_rejected_at_the_op.cgir"
    rc, _, err = run_cli("compile", path, "-o", str(tmp_path / "x.cgb"))
    assert rc == 1
    with pytest.raises(cmdgraph.CompileError) as info:
        cmdgraph.parse_file(path).compile()
    assert info.value.code == "E0505"
    assert str(info.value) == err


def test_compiling_a_broken_module_is_a_verify_error():
    with pytest.raises(cmdgraph.VerifyError) as info:
        cmdgraph.parse_file("lit-tests/verify/cycle.cgir").compile()
    assert info.value.code == "E0251"


def test_corrupt_bundles_are_bundle_errors(tmp_path):
    good = bytes(cmdgraph.parse_file("examples/saxpy_chain.cgir").compile())
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x40
    cases = {
        "a flipped byte": bytes(flipped),
        "truncated": good[: len(good) // 2],
        "the magic alone": good[:8],
        "empty": b"",
        "not a bundle": b"usm @x : f32[4]\n",
    }
    for what, data in cases.items():
        with pytest.raises(cmdgraph.BundleError) as info:
            cmdgraph.load_bundle(data)
        assert str(info.value).startswith("error: `<bytes>`: "), what
        assert isinstance(info.value, cmdgraph.Error)
    path = tmp_path / "bad.cgb"
    path.write_bytes(bytes(flipped))
    with pytest.raises(cmdgraph.BundleError, match="bad.cgb"):
        cmdgraph.load_bundle(path)
    with pytest.raises(OSError):
        cmdgraph.load_bundle(tmp_path / "missing.cgb")
    with pytest.raises(TypeError):
        cmdgraph.load_bundle(3.5)


def test_bundles_have_the_committed_content_hashes():
    """The modules of tests/golden/bundle-hashes.txt (the hashes CI's `cargo test` checks the
    CLI's bundles against) compile in process to bundles with the same content hash."""
    manifest = (REPO / "tests" / "golden" / "bundle-hashes.txt").read_text().splitlines()
    entries = [line.split() for line in manifest if line.strip() and not line.startswith("#")]
    assert len(entries) >= 10
    for path, want in entries:
        assert cmdgraph.parse_file(path).compile().content_hash == want, path
