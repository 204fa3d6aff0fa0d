//! `cmdgraph interp --compare NAME=FILE`: is FILE (say, what `cmdgraph run` wrote for the
//! same inputs on a Vulkan device) a result the interpreter's semantics allow? The rules are
//! those of docs/ir.md ("Float precision") as docs/codegen.md ("Deviations from the
//! interpreter") applies them, tried in this order, and the one that matched is reported
//! for every object:
//!
//! 1. **exact**: the same bytes, except that the sign of a float zero and NaN signs and
//!    payloads are not compared (llvmpipe folds `x * 0.0` to `+0`);
//! 2. **fma rounded twice**: a module with `fma` is run a second time with `fma` rounded
//!    twice (`--fma twice`), and the file equals that run (a conforming device may round
//!    either way; llvmpipe rounds twice);
//! 3. **f32 subnormals flushed**: a module with `f32` float ops is run again with
//!    `Denormals::Flush` (every subnormal `f32` operand and result of a float op replaced by
//!    the zero of its sign, as a device without `DenormPreserve` may do and the H200 does),
//!    and the file equals that run; tried only where that run's bytes differ;
//! 4. **math tolerance**: a module using an op a device need not round correctly (`sqrt`,
//!    `rsqrt`, `exp`, `log`, `sin`, `cos`, `tanh`, `pow`, float `div`/`rem`) is compared
//!    within |a - b| <= 2^-12 · max(1, |b|) (or 2 `f16` ulp), against either `fma` run.
//!    `f32` subgroup `add`/`mul` reductions and scans count as such ops: a device combines
//!    the lanes in its own order (docs/ir.md, "Subgroups"); the tolerance stands in for the
//!    bound docs/ir.md gives, which needs the inputs (scripts/gpu-subgroups/check.py).
//!
//! `f32` `atomic add` has no tolerance: the device adds in its own order, so its sums equal
//! the interpreter's only when every partial sum is exact (inputs that are multiples of
//! 1/16, as scripts/make-inputs.py gives such kernels); an exact match of such a module says
//! so, and a mismatch says why it may differ.

use super::data::Layout;
use cmdgraph_ir::data::half::f16;
use cmdgraph_ir::kernel::{AtomicOp, BinaryOp, OpKind, UnaryOp, ValueType};
use cmdgraph_ir::subgroup::{GroupArith, SubgroupOp};
use cmdgraph_ir::types::ScalarType;
use cmdgraph_ir::{KernelBody, Module};
use std::collections::BTreeSet;

/// Relative tolerance of the math rule (2^11 `f32` ulp; absolute below 1).
pub const MATH_REL_TOL: f64 = 1.0 / 4096.0;

/// `f16` results within this many `f16` ulp also pass the math rule.
pub const F16_ULP_TOL: f64 = 2.0;

/// What in a module decides which rules apply.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rules {
    /// Some kernel uses `fma`.
    pub fma: bool,
    /// The ops (keywords) a device need not round correctly that some kernel uses.
    pub math: BTreeSet<&'static str>,
    /// Some kernel adds floats with `atomic add`.
    pub float_atomic_add: bool,
    /// Some kernel has a float op on `f32` values (arithmetic, `fma`, comparison, cast):
    /// the ops whose subnormals a device may flush.
    pub f32_float: bool,
}

impl Rules {
    /// The rules for the kernels of `module` and the functions they call (kernel-language
    /// bodies; external SPIR-V is not run by the interpreter).
    pub fn of(module: &Module) -> Rules {
        let mut rules = Rules::default();
        let functions = module.functions.iter().map(|(_, f)| &f.def);
        for k in module.kernels.iter().map(|(_, k)| k).chain(functions) {
            let KernelBody::Ir(body) = &k.body else { continue };
            let float =
                |v| matches!(body.values.try_get(v).map(|v| &v.ty), Some(ValueType::Data(t)) if t.scalar.is_float());
            let f32_value = |v| matches!(body.values.try_get(v).map(|v| &v.ty), Some(ValueType::Data(t)) if t.scalar == ScalarType::F32);
            for (_, op) in body.ops.iter() {
                rules.f32_float |= match op.kind {
                    OpKind::Unary(_, a) | OpKind::Binary(_, a, _) | OpKind::Fma(a, ..) | OpKind::Cmp(_, a, _) => {
                        f32_value(a)
                    }
                    OpKind::Cast(a, t) => f32_value(a) || t.scalar == ScalarType::F32,
                    OpKind::Subgroup(SubgroupOp::Arith { value, .. }) => f32_value(value),
                    _ => false,
                };
                match op.kind {
                    OpKind::Fma(..) => rules.fma = true,
                    OpKind::Unary(u, _) if u.float_only() && !matches!(u, UnaryOp::Floor | UnaryOp::Ceil) => {
                        rules.math.insert(u.keyword());
                    }
                    OpKind::Binary(b @ BinaryOp::Pow, ..) => {
                        rules.math.insert(b.keyword());
                    }
                    OpKind::Binary(b @ (BinaryOp::Div | BinaryOp::Rem), lhs, _) if float(lhs) => {
                        rules.math.insert(b.keyword());
                    }
                    OpKind::Atomic { op: AtomicOp::Add, value, .. } if float(value) => rules.float_atomic_add = true,
                    // Combined in the device's order (docs/ir.md, "Subgroups"): llvmpipe's is
                    // the interpreter's, another device's is within a bound that needs the
                    // inputs (scripts/gpu-subgroups/check.py applies it); here the math
                    // tolerance stands in for it.
                    OpKind::Subgroup(SubgroupOp::Arith { op: GroupArith::Add | GroupArith::Mul, value, .. })
                        if float(value) =>
                    {
                        rules.math.insert("f32 subgroup add/mul (in the device's order)");
                    }
                    _ => {}
                }
            }
        }
        rules
    }
}

/// How a file matched the interpreter's result.
#[derive(Debug, PartialEq)]
pub enum Matched {
    /// Every element equal; `loose` of them only up to a zero's sign or a NaN's payload;
    /// `fma_once` when the `fma`-twice run differs (so the device rounded `fma` once).
    Exact { loose: u64, fma_once: bool },
    /// Equal to the run with `fma` rounded twice (`loose` as for `Exact`).
    FmaTwice { loose: u64 },
    /// Equal to the run with `f32` subnormals flushed (`loose` as for `Exact`).
    Flushed { loose: u64 },
    /// Within the math tolerance: `differ` elements are not equal, the largest relative
    /// difference is `worst`; `twice` when against the `fma`-twice run.
    Tolerance { differ: u64, worst: f64, twice: bool },
}

/// Compares `got` (the file) with `want` (the interpreter's bytes) under one rule: exact, or
/// within the math tolerance when `tol`. `Err` gives the differing element count and the
/// first (scalar index, file value, interpreter value).
pub fn same(layout: Layout, got: &[u8], want: &[u8], tol: bool) -> Result<(u64, f64, u64), Mismatch> {
    let scalar = layout.elem.scalar;
    let es = scalar.size() as usize;
    let lanes = if layout.elem.lanes == 3 { 4 } else { layout.elem.lanes as usize };
    let (mut loose, mut differ, mut worst, mut bad) = (0u64, 0u64, 0f64, 0u64);
    let mut first = None;
    for (i, (g, w)) in got.chunks(es).zip(want.chunks(es)).enumerate() {
        if g == w || (layout.elem.lanes == 3 && i % lanes == 3) {
            continue;
        }
        let (gv, wv) = (value(scalar, g), value(scalar, w));
        match (gv, wv) {
            (Some(a), Some(b)) if (a == 0.0 && b == 0.0) || (a.is_nan() && b.is_nan()) => {
                loose += 1;
                continue;
            }
            (Some(a), Some(b)) if tol && close(scalar, a, b, w) => {
                differ += 1;
                worst = worst.max((a - b).abs() / b.abs().max(1.0));
                continue;
            }
            _ => {}
        }
        bad += 1;
        first.get_or_insert((i, show(scalar, g), show(scalar, w)));
    }
    match first {
        None => Ok((loose, worst, differ)),
        Some((index, file, interp)) => Err(Mismatch { differ: bad, index, file, interp }),
    }
}

/// Why a file is not the interpreter's result under a rule.
#[derive(Debug, PartialEq)]
pub struct Mismatch {
    /// Scalars (lanes) that differ.
    pub differ: u64,
    /// The first of them (lane index).
    pub index: usize,
    /// Its value in the file.
    pub file: String,
    /// Its value in the interpreter's memory.
    pub interp: String,
}

/// Tries the rules in order on one object: `once` is the interpreter's result, `twice` the
/// `fma`-twice run's (when the module has `fma`); the subnormal rule is left out.
#[cfg(test)]
pub fn check(rules: &Rules, layout: Layout, got: &[u8], once: &[u8], twice: Option<&[u8]>) -> Result<Matched, String> {
    check_all(rules, layout, got, once, twice, None)
}

/// [`check`], also trying `flushed`, the run with `f32` subnormals flushed (when the module
/// has `f32` float ops and that run's bytes differ from `once`).
pub fn check_all(
    rules: &Rules,
    layout: Layout,
    got: &[u8],
    once: &[u8],
    twice: Option<&[u8]>,
    flushed: Option<&[u8]>,
) -> Result<Matched, String> {
    if got.len() != once.len() {
        return Err(format!("the file has {} bytes, the interpreter's memory {}", got.len(), once.len()));
    }
    let first = match same(layout, got, once, false) {
        Ok((loose, ..)) => {
            let fma_once = twice.is_some_and(|t| same(layout, got, t, false).is_err());
            return Ok(Matched::Exact { loose, fma_once });
        }
        Err(m) => m,
    };
    if let Some(twice) = twice {
        if let Ok((loose, ..)) = same(layout, got, twice, false) {
            return Ok(Matched::FmaTwice { loose });
        }
    }
    if let Some(flushed) = flushed {
        if let Ok((loose, ..)) = same(layout, got, flushed, false) {
            return Ok(Matched::Flushed { loose });
        }
    }
    if !rules.math.is_empty() {
        if let Ok((_, worst, differ)) = same(layout, got, once, true) {
            return Ok(Matched::Tolerance { differ, worst, twice: false });
        }
        if let Some(Ok((_, worst, differ))) = twice.map(|t| same(layout, got, t, true)) {
            return Ok(Matched::Tolerance { differ, worst, twice: true });
        }
    }
    let mut tried = vec!["exact"];
    if twice.is_some() {
        tried.push("fma rounded twice");
    }
    if flushed.is_some() {
        tried.push("f32 subnormals flushed");
    }
    if !rules.math.is_empty() {
        tried.push("math tolerance 2^-12");
    }
    let mut why = format!(
        "{} scalar(s) differ; first at scalar {}: the file has {}, the interpreter {} (rules tried: {})",
        first.differ,
        first.index,
        first.file,
        first.interp,
        tried.join(", ")
    );
    if rules.float_atomic_add {
        why.push_str(
            "; the module adds floats with `atomic add`, whose order is the device's: sums equal the \
             interpreter's only when every partial sum is exact (inputs that are multiples of 1/16), \
             otherwise they may differ by up to n·2^-24·Σ|x| and are not comparable (docs/codegen.md)",
        );
    }
    Err(why)
}

/// The report line's rule text for a match.
pub fn describe(rules: &Rules, m: &Matched) -> String {
    let loose = |n: u64| {
        if n == 0 {
            String::new()
        } else {
            format!(", {n} float zero sign(s) or NaN payload(s) not compared")
        }
    };
    let atomics = if rules.float_atomic_add {
        " (the module adds f32 with `atomic add`, in the device's order: equal bits, as every order gives when each partial sum is exact)"
    } else {
        ""
    };
    match m {
        Matched::Exact { loose: n, fma_once } => {
            let fma = if *fma_once { " with fma rounded once (the twice-rounded result differs)" } else { "" };
            format!("exact{fma}{}{atomics}", loose(*n))
        }
        Matched::FmaTwice { loose: n } => {
            format!(
                "exact with fma rounded twice (the product, then the sum; docs/ir.md \"Float precision\"){}{atomics}",
                loose(*n)
            )
        }
        Matched::Flushed { loose: n } => {
            format!(
                "exact with f32 subnormals flushed to zero (a device may flush them without DenormPreserve; docs/ir.md \"Float precision\"){}{atomics}",
                loose(*n)
            )
        }
        Matched::Tolerance { differ, worst, twice } => {
            let ops: Vec<&str> = rules.math.iter().copied().collect();
            let fma = if *twice { ", fma rounded twice" } else { "" };
            format!(
                "math tolerance |a-b| <= 2^-12·max(1,|b|) for {} ({differ} scalar(s) differ, largest relative difference {worst:.3e}{fma})",
                ops.join(", ")
            )
        }
    }
}

/// A scalar's value as `f64` (floats only).
fn value(s: ScalarType, b: &[u8]) -> Option<f64> {
    match (s, b.len()) {
        (ScalarType::F32, 4) => Some(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        (ScalarType::F16, 2) => Some(f16::from_le_bytes([b[0], b[1]]).to_f64()),
        (ScalarType::F64, 8) => Some(f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])),
        _ => None,
    }
}

/// The math rule for one scalar (`w`, the interpreter's bytes, for the `f16` ulp).
fn close(s: ScalarType, a: f64, b: f64, w: &[u8]) -> bool {
    if (a - b).abs() <= MATH_REL_TOL * b.abs().max(1.0) {
        return true;
    }
    if s == ScalarType::F16 && w.len() == 2 {
        let w = f16::from_le_bytes([w[0], w[1]]);
        let next = f16::from_bits((w.to_bits() & 0x7fff) + 1);
        let ulp = next.to_f64() - w.to_f64().abs();
        return (a - b).abs() <= F16_ULP_TOL * ulp;
    }
    false
}

fn show(s: ScalarType, b: &[u8]) -> String {
    match (value(s, b), b.len()) {
        (Some(v), 4) => format!("{v:?} ({:#010x})", u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        (Some(v), 2) => format!("{v:?} ({:#06x})", u16::from_le_bytes([b[0], b[1]])),
        (Some(v), 8) => {
            format!("{v:?} ({:#018x})", u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        }
        _ => {
            let mut raw = [0u8; 8];
            raw[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
            let bits = u64::from_le_bytes(raw);
            match s {
                ScalarType::I8 => (bits as u8 as i8).to_string(),
                ScalarType::I16 => (bits as u16 as i16).to_string(),
                ScalarType::I32 => (bits as u32 as i32).to_string(),
                ScalarType::I64 => (bits as i64).to_string(),
                _ => bits.to_string(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cmdgraph_ir::types::Type;

    const F32X3: Layout = Layout { elem: Type::F32, count: 3 };

    fn bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn rules_are_tried_in_order_and_named() {
        let want = bytes(&[1.25, -0.0, 3.0]);
        let twice = bytes(&[1.25, 0.0, 3.000_000_2]);
        let none = Rules::default();
        assert_eq!(check(&none, F32X3, &want, &want, None), Ok(Matched::Exact { loose: 0, fma_once: false }));
        assert_eq!(check(&none, F32X3, &want, &want, Some(&twice)), Ok(Matched::Exact { loose: 0, fma_once: true }));
        assert_eq!(check(&none, F32X3, &want, &want, Some(&want)), Ok(Matched::Exact { loose: 0, fma_once: false }));
        // +0 for -0 only.
        assert_eq!(
            check(&none, F32X3, &bytes(&[1.25, 0.0, 3.0]), &want, None),
            Ok(Matched::Exact { loose: 1, fma_once: false })
        );
        assert_eq!(check(&none, F32X3, &twice, &want, Some(&twice)), Ok(Matched::FmaTwice { loose: 0 }));
        let near = bytes(&[1.2501, -0.0, 3.0]);
        let e = check(&none, F32X3, &near, &want, Some(&twice)).expect_err("no math rule");
        assert!(e.contains("1 scalar(s) differ; first at scalar 0") && e.contains("exact, fma rounded twice"), "{e}");
        let math = Rules { math: ["exp"].into_iter().collect(), ..Rules::default() };
        match check(&math, F32X3, &near, &want, None) {
            Ok(Matched::Tolerance { differ: 1, worst, twice: false }) => assert!(worst > 0.0 && worst < 1e-3),
            other => panic!("{other:?}"),
        }
        // Past 2^-12 relative: refused even with the math rule.
        let far = bytes(&[1.26, -0.0, 3.0]);
        assert!(check(&math, F32X3, &far, &want, None).is_err());
    }

    #[test]
    fn subnormals_flushed_are_a_rule_after_the_fma_ones() {
        let rules = Rules { f32_float: true, ..Rules::default() };
        let once = bytes(&[1.5e-39, -2.0e-40, 0.75]);
        let flushed = bytes(&[0.0, -0.0, 0.75]);
        assert_eq!(check_all(&rules, F32X3, &flushed, &once, None, Some(&flushed)), Ok(Matched::Flushed { loose: 0 }));
        assert!(describe(&rules, &Matched::Flushed { loose: 0 }).contains("subnormals flushed"));
        // Without the flushed run the file is a mismatch.
        let e = check(&rules, F32X3, &flushed, &once, None).expect_err("subnormals differ");
        assert!(e.contains("2 scalar(s) differ") && !e.contains("flushed"), "{e}");
        // A wrong value is still one, naming the rule tried.
        let wrong = bytes(&[0.0, -0.0, 0.5]);
        let e = check_all(&rules, F32X3, &wrong, &once, None, Some(&flushed)).expect_err("wrong");
        assert!(e.contains("rules tried: exact, f32 subnormals flushed"), "{e}");
    }

    #[test]
    fn a_float_atomic_add_mismatch_says_why_sums_may_differ() {
        let rules = Rules { float_atomic_add: true, ..Rules::default() };
        let e = check(&rules, F32X3, &bytes(&[1.0, 2.0, 3.5]), &bytes(&[1.0, 2.0, 3.0]), None).expect_err("differs");
        assert!(e.contains("atomic add") && e.contains("multiples of 1/16"), "{e}");
        let m = check(&rules, F32X3, &bytes(&[1.0, 2.0, 3.0]), &bytes(&[1.0, 2.0, 3.0]), None).expect("same");
        assert!(describe(&rules, &m).contains("in the device's order: equal bits"));
    }
}
