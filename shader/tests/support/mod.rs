//! Test helpers: translate a shader, wrap the kernel in a module, run it on the interpreter.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::Path;

use cmdgraph_interp::Interpreter;
use cmdgraph_shader::{translate, Lang, Translated};

/// A shader under `tests/shaders/`, by file name; the language comes from the extension.
pub fn shader(file: &str) -> (Lang, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shaders").join(file);
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let lang = if file.ends_with(".wgsl") { Lang::Wgsl } else { Lang::Glsl };
    (lang, src)
}

/// Translates `file`'s entry point `main` (twice, checking the text is the same) and checks
/// the kernel parses and verifies on its own.
pub fn translated(file: &str) -> Translated {
    let (lang, src) = shader(file);
    let t = translate(lang, &src, "main", "k").unwrap_or_else(|e| panic!("{file}: {e}"));
    let again = translate(lang, &src, "main", "k").unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(t.text, again.text, "{file}: translation is not deterministic");
    t
}

/// An argument of the launch.
pub enum Arg<'a> {
    F32s(&'a [f32]),
    U32s(&'a [u32]),
    /// An output buffer of this many elements (f32).
    OutF32(usize),
    /// An output buffer of this many elements (u32).
    OutU32(usize),
    F32(f32),
    U32(u32),
    I32(i32),
    /// Memory of element type `ty` (IR text) holding `count` elements, from raw bytes.
    Bytes(&'static str, usize, Vec<u8>),
}

/// Runs kernel `t` with `launch` (e.g. `range(64)`) on `args` (one per parameter, in order);
/// returns the contents of every buffer argument afterwards, as raw little-endian bytes.
pub fn run(file: &str, t: &Translated, launch: &str, args: &[Arg]) -> Vec<Vec<u8>> {
    assert_eq!(args.len(), t.params.len(), "{file}: one argument per parameter\n{}", t.text);
    let mut text = t.text.clone();
    text.push('\n');
    let mut names = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a {
            Arg::F32s(v) => {
                let _ = writeln!(text, "usm @m{i} : f32[{}]", v.len());
                names.push(format!("@m{i}"));
            }
            Arg::OutF32(n) => {
                let _ = writeln!(text, "usm @m{i} : f32[{n}]");
                names.push(format!("@m{i}"));
            }
            Arg::U32s(v) => {
                let _ = writeln!(text, "usm @m{i} : u32[{}]", v.len());
                names.push(format!("@m{i}"));
            }
            Arg::OutU32(n) => {
                let _ = writeln!(text, "usm @m{i} : u32[{n}]");
                names.push(format!("@m{i}"));
            }
            Arg::Bytes(ty, count, _) => {
                let _ = writeln!(text, "usm @m{i} : {ty}[{count}]");
                names.push(format!("@m{i}"));
            }
            Arg::F32(v) => names.push(format!("{:?} : f32", f64::from(*v))),
            Arg::U32(v) => names.push(format!("{v} : u32")),
            Arg::I32(v) => names.push(format!("{v} : i32")),
        }
    }
    let _ = writeln!(text, "\ngraph @g {{\n  %n = kernel @k {launch} args({})\n}}", names.join(", "));
    let module = cmdgraph_ir::text::parse(&text).unwrap_or_else(|e| panic!("{file}: parse: {e:?}\n{text}"));
    cmdgraph_ir::verify::verify(&module).unwrap_or_else(|e| panic!("{file}: verify: {e:?}\n{text}"));
    let mut interp = Interpreter::new(&module).unwrap_or_else(|e| panic!("{file}: {e}"));
    for (i, a) in args.iter().enumerate() {
        let name = format!("m{i}");
        match a {
            Arg::F32s(v) => interp.bind_as::<f32>(&name, v).unwrap_or_else(|e| panic!("{e}")),
            Arg::U32s(v) => interp.bind_as::<u32>(&name, v).unwrap_or_else(|e| panic!("{e}")),
            Arg::Bytes(_, _, b) => interp.bind(&name, b).unwrap_or_else(|e| panic!("{e}")),
            _ => {}
        }
    }
    let exec = interp.finalize("g").unwrap_or_else(|e| panic!("{file}: finalize: {e}"));
    interp.run(exec).unwrap_or_else(|e| panic!("{file}: run: {e}\n{text}"));
    args.iter()
        .enumerate()
        .map(|(i, a)| match a {
            Arg::F32(_) | Arg::U32(_) | Arg::I32(_) => Vec::new(),
            _ => interp.read(&format!("m{i}")).unwrap_or_else(|e| panic!("{e}")).to_vec(),
        })
        .collect()
}

/// Little-endian bytes of 32-bit values.
pub fn bytes_of<T: Copy>(values: &[T], to: impl Fn(T) -> [u8; 4]) -> Vec<u8> {
    values.iter().flat_map(|&v| to(v)).collect()
}

pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

pub fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Bit-exact comparison of float outputs (NaNs compare equal to NaNs).
pub fn assert_same(file: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{file}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{file}: element {i}: got {g:?}, want {w:?}");
    }
}

/// A small deterministic generator of full-precision floats.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [lo, hi) with every mantissa bit random (not multiples of 1/16).
    pub fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (f64::from(lo) + u * f64::from(hi - lo)) as f32
    }

    pub fn f32s(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32_in(lo, hi)).collect()
    }
}

/// The IR's `min`/`max`: the non-NaN operand, `-0` below `+0`.
pub fn ir_min(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

pub fn ir_max(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b || (a == b && b.is_sign_negative()) {
        a
    } else {
        b
    }
}
