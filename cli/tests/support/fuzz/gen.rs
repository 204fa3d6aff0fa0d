//! Random well-typed kernels for the differential kernel fuzzer (cli/tests/kernel_fuzz.rs).
//!
//! One kernel per call of [`kernel`], written as IR text: nested `if` (with and without
//! results), `for` (constant and data-dependent bounds, with and without carried values) and
//! general `loop`s (data-dependent trip counts of 1 to 8, carried data; gen/general_loop.rs),
//! loads at guarded (`if %x < %n`) and computed (`rem`/`and`/`min` of arithmetic on ids and
//! data) indices, stores to the work-item's own output slots, work-group memory and
//! `group_barrier` under `nd_range` launches, integer atomics (shared slots with an
//! order-independent op per slot, per-item slots with every op and the old value used), `f32`
//! atomic adds of small integers (exact in any order), integer and float arithmetic, vectors,
//! casts, and the math functions whose device precision differs (results stored straight to
//! their own buffer, compared with docs/codegen.md's tolerance).
//!
//! Rules that keep the interpreter and a conforming device in agreement by construction:
//!
//! - every index is in bounds: `rem`/`and`/`min` against the length, a guard, or an own slot
//!   (`gid * SLOTS + (x & 3)`), so no work-item writes another's global output;
//! - `group_barrier` only where control is uniform: at the top level, or inside a `for` with
//!   constant bounds at such a place, which is bracketed by barriers so every iteration starts
//!   in the same work-group-memory phase;
//! - work-group memory in phases between barriers: *write* (each item stores and loads only
//!   its own slots `lid` and `lid + L`), *read* (any slot, no store), *atomic* (only the
//!   order-independent op of each slot);
//! - shared atomics use one op class per slot (`add`/`sub`, `and`, `or`, `xor`, `min`, `max`),
//!   so the final value does not depend on the order, and their old value is never used;
//!   `f32` atomic adds add integers below 16 to integer-valued slots (exact);
//! - values of inexact ops (`div`/`rem` on floats, `sqrt`, `exp`, ..., and `fma` unless its
//!   rounding is modelled) never reach control flow, an index, a cast or an exact output:
//!   they are computed from clamped operands and stored at once.

mod general_loop;
mod subgroup;

use super::super::Rng;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Scalar types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum S {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    F32,
    F64,
}

impl S {
    pub fn name(self) -> &'static str {
        match self {
            S::Bool => "bool",
            S::I8 => "i8",
            S::U8 => "u8",
            S::I16 => "i16",
            S::U16 => "u16",
            S::I32 => "i32",
            S::U32 => "u32",
            S::I64 => "i64",
            S::U64 => "u64",
            S::F16 => "f16",
            S::F32 => "f32",
            S::F64 => "f64",
        }
    }
    pub fn float(self) -> bool {
        matches!(self, S::F16 | S::F32 | S::F64)
    }
    pub fn int(self) -> bool {
        matches!(self, S::I8 | S::U8 | S::I16 | S::U16 | S::I32 | S::U32 | S::I64 | S::U64)
    }
    pub fn signed(self) -> bool {
        matches!(self, S::I8 | S::I16 | S::I32 | S::I64)
    }
    /// Whether this is an 8- or 16-bit integer.
    pub fn narrow(self) -> bool {
        matches!(self, S::I8 | S::U8 | S::I16 | S::U16)
    }
    /// Bytes in memory.
    pub fn size(self) -> usize {
        match self {
            S::Bool | S::I8 | S::U8 => 1,
            S::I16 | S::U16 | S::F16 => 2,
            S::I32 | S::U32 | S::F32 => 4,
            S::I64 | S::U64 | S::F64 => 8,
        }
    }
}

/// A scalar or vector type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ty {
    pub s: S,
    pub n: u8,
}

impl Ty {
    pub const fn sc(s: S) -> Ty {
        Ty { s, n: 1 }
    }
    pub fn text(self) -> String {
        if self.n == 1 {
            self.s.name().to_string()
        } else {
            format!("vec{}<{}>", self.n, self.s.name())
        }
    }
    /// For memory-object names.
    pub fn mangle(self) -> String {
        if self.n == 1 {
            self.s.name().to_string()
        } else {
            format!("v{}{}", self.n, self.s.name())
        }
    }
    /// Bytes of one element in memory (vec3 takes 4 lanes).
    pub fn size(self) -> usize {
        self.s.size() * if self.n == 3 { 4 } else { self.n as usize }
    }
}

const U32: Ty = Ty::sc(S::U32);
const I32: Ty = Ty::sc(S::I32);
const F32: Ty = Ty::sc(S::F32);
const BOOL: Ty = Ty::sc(S::Bool);

/// Elements of every input buffer (a power of two, at least the largest launch).
pub const INPUT_LEN: u64 = 256;
/// Output slots per work-item in every output buffer.
pub const SLOTS: u64 = 4;
/// Slots of a shared integer atomic buffer: 6 op classes x 4.
const ATOMIC_SLOTS: u64 = 24;
/// Slots of a shared `f32` atomic buffer.
const FATOMIC_SLOTS: u64 = 4;

/// What a kernel parameter is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Read-only input shared by every kernel of a module (`@in_<ty>`).
    Input,
    /// Exact output: compared bit for bit (zero signs and NaN payloads aside).
    Output,
    /// Output of inexact float ops: compared with the math tolerance.
    Approx,
    /// Per-item atomic slots (random integers).
    ItemAtomic,
    /// Shared integer atomic slots (random integers).
    SharedAtomic,
    /// Shared `f32` atomic slots (small integers).
    FloatAtomic,
}

/// One buffer parameter of a generated kernel.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub ty: Ty,
    pub role: Role,
}

/// A generated kernel.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// `kernel @name(...) { ... }`.
    pub text: String,
    /// Buffer parameters in order.
    pub params: Vec<Param>,
    /// `range(..)` or `nd_range(..)`.
    pub launch: String,
    /// Work-items launched.
    pub items: u64,
    /// Features, with how often each occurs in the kernel.
    pub features: BTreeMap<&'static str, u64>,
}

impl Kernel {
    /// Elements of the memory object bound to a parameter.
    pub fn count(&self, p: &Param) -> u64 {
        match p.role {
            Role::Input => INPUT_LEN,
            Role::Output | Role::Approx | Role::ItemAtomic => self.items * SLOTS,
            Role::SharedAtomic => ATOMIC_SLOTS,
            Role::FloatAtomic => FATOMIC_SLOTS,
        }
    }
}

/// Generator options.
#[derive(Clone, Copy, Debug)]
pub struct GenOptions {
    /// Whether `fma` results are compared exactly (the interpreter models the device's
    /// rounding); otherwise `fma` is an inexact op.
    pub fma_exact: bool,
    /// Whether kernels rely on `local` memory starting at zero (docs/ir.md) instead of
    /// zeroing it themselves first: off by default while codegen does not zero it
    /// (docs/reliability.md, kernel fuzzer, finding 2).
    pub implicit_zero: bool,
    /// Whether atomics may sit inside `for` bodies: off by default, llvmpipe drops the
    /// atomics of a loop's last iteration (docs/reliability.md, kernel fuzzer, finding 3).
    pub loop_atomics: bool,
    /// Whether to keep out what llvmpipe's constant folding gets wrong, each case shown
    /// exact on an H200 (docs/reliability.md, kernel fuzzer, finding 5): a float `mul` or
    /// `fma` factor computed from constants alone, loop results started from them included
    /// (llvmpipe folds `x * 0.0` to `+0` for a zero it can fold, also when `x` is infinite
    /// or NaN), a math function of such a value, a float-to-integer cast of a float cast of
    /// a 64-bit integer, through `abs`/`neg`/`floor`/`ceil` too (llvmpipe folds the pair away,
    /// returning the integer unrounded). (A 64-bit `abs` of a sign-extended constant, once
    /// kept out too, is now right: codegen works around llvmpipe's signed 64-bit orderings.)
    /// On by default only when the kernels run on llvmpipe; kernels for other devices keep
    /// them all.
    pub llvmpipe_safe: bool,
}

#[derive(Clone, Debug)]
struct Val {
    name: String,
    ty: Ty,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Write,
    Read,
    Atomic,
}

#[derive(Clone, Debug)]
struct Local {
    name: String,
    ty: Ty,
    len: u64,
    /// Atomic arrays (phases atomic/read) or data arrays (write/read).
    atomic: bool,
    phase: Phase,
}

struct G<'r> {
    rng: &'r mut Rng,
    out: String,
    ind: usize,
    scopes: Vec<Vec<Val>>,
    n: usize,
    nd: bool,
    /// Local size (nd_range) for own-slot indexing of work-group memory.
    lsize: u64,
    /// Whether a barrier may be placed here (uniform control flow in an nd_range kernel).
    barrier_ok: bool,
    depth: usize,
    budget: i64,
    params: Vec<Param>,
    locals: Vec<Local>,
    feats: BTreeMap<&'static str, u64>,
    opts: GenOptions,
    /// Recursion guard for value construction.
    rec: usize,
    straight: bool,
    /// `for` bodies around the current point.
    loops: usize,
    /// Values that are a float cast of a 64-bit integer (`llvmpipe_safe`).
    from_wide_int: std::collections::BTreeSet<String>,
    /// Values computed from constants alone, which a driver may fold (`llvmpipe_safe`).
    from_constants: std::collections::BTreeSet<String>,
}

const SCALARS: [S; 11] = [S::I8, S::U8, S::I16, S::U16, S::I32, S::U32, S::I64, S::U64, S::F16, S::F32, S::F64];
const LANES: [S; 6] = [S::F32, S::I32, S::U32, S::I8, S::U16, S::F64];

fn float_lit(rng: &mut Rng, s: S) -> String {
    let v: f64 = match rng.below(12) {
        0 => 0.0,
        1 => -0.0,
        2 => 1.0,
        3 => -1.5,
        4 => 0.75,
        5 => 2.0,
        6 => 1e30,
        7 => -3.0e-20,
        _ => {
            let k = rng.below(2001) as f64 - 1000.0;
            k / 64.0
        }
    };
    let v = if s == S::F16 { f64::from(cmdgraph_ir::data::half::f16::from_f64(v).to_f32()) } else { v };
    let v = if s == S::F16 && v.is_infinite() { 1.0 } else { v };
    let t = format!("{v:?}");
    if t.contains('.') || t.contains('e') || t.contains("inf") || t.contains("nan") {
        t
    } else {
        format!("{t}.0")
    }
}

fn int_lit(rng: &mut Rng, s: S) -> String {
    let small = (rng.below(34) as i64) - 2;
    match (rng.below(8), s) {
        (0, S::I8) => i8::MIN.to_string(),
        (0, S::U8) => u8::MAX.to_string(),
        (0, S::I16) => i16::MIN.to_string(),
        (0, S::U16) => u16::MAX.to_string(),
        (1, S::I8) => i8::MAX.to_string(),
        (1, S::U8) => 0x80.to_string(),
        (1, S::I16) => i16::MAX.to_string(),
        (1, S::U16) => 0x8000.to_string(),
        (2, S::I8 | S::U8) => rng.below(1 << 7).to_string(),
        (2, S::I16 | S::U16) => rng.below(1 << 15).to_string(),
        (0, S::I32) => i32::MIN.to_string(),
        (0, S::U32) => u32::MAX.to_string(),
        (0, S::I64) => i64::MIN.to_string(),
        (0, S::U64) => u64::MAX.to_string(),
        (1, S::I32) => i32::MAX.to_string(),
        (1, S::U32) => 0x8000_0000u32.to_string(),
        (1, S::I64) => i64::MAX.to_string(),
        (1, S::U64) => (1u64 << 63).to_string(),
        (2, _) => (rng.below(1 << 20)).to_string(),
        (_, S::U8 | S::U16 | S::U32 | S::U64) => small.unsigned_abs().to_string(),
        (_, _) => small.to_string(),
    }
}

impl G<'_> {
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.rng.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.rng.below(100) < percent
    }
    fn feat(&mut self, f: &'static str) {
        *self.feats.entry(f).or_default() += 1;
    }
    fn emit(&mut self, line: &str) {
        self.track_constants(line);
        for _ in 0..self.ind {
            self.out.push_str("  ");
        }
        self.out.push_str(line);
        self.out.push('\n');
        self.budget -= 1;
    }
    /// Records whether the value `line` defines is computed from constants alone: a
    /// `const`, or an op whose operands all are (a `select` or an `if` whose condition is:
    /// a driver folds it to one side), or a comparison of a value with itself.
    fn track_constants(&mut self, line: &str) {
        self.track_loop_constants(line);
        let Some((def, rhs)) = line.split_once(" = ") else { return };
        if !def.starts_with('%') || def.contains(' ') {
            return;
        }
        let mut words = rhs.split([' ', ',', '[', ']']).filter(|w| !w.is_empty());
        let op = words.next().unwrap_or("");
        let operands: Vec<&str> = words.filter(|w| w.starts_with('%')).collect();
        let known = |w: &&str| self.from_constants.contains(*w);
        let folded = match op {
            "const" => true,
            "select" | "if" => operands.first().is_some_and(known),
            "load" | "atomic" | "local" | "global_id" | "local_id" | "group_id" | "global_range" => false,
            // `lt %x, %x` folds to `false` (and `sub`/`xor` of integers to 0) whatever `%x`.
            "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "sub" | "xor"
                if operands.len() == 2 && operands[0] == operands[1] =>
            {
                true
            }
            _ => !operands.is_empty() && operands.iter().all(known),
        };
        if folded {
            self.from_constants.insert(def.to_string());
        }
        // A float of a 64-bit integer stays one through these (the fold sees through them).
        if matches!(op, "abs" | "neg" | "floor" | "ceil") && operands.iter().any(|w| self.from_wide_int.contains(*w)) {
            self.from_wide_int.insert(def.to_string());
        }
    }
    /// A `for` whose carried value starts from constants: the carried value and the loop's
    /// result count as computed from constants (a driver folds a loop it can count).
    fn track_loop_constants(&mut self, line: &str) {
        let Some((defs, rhs)) = line.split_once(" = for ").or_else(|| Some(("", line.strip_prefix("for ")?))) else {
            return;
        };
        // `%i = LO to HI step S`: with constant bounds the induction variable is one too.
        let bounds: Vec<&str> = rhs.split(" carry(").next().unwrap_or("").split(' ').collect();
        if let [var, "=", lo, "to", hi, "step", step, ..] = bounds[..] {
            if [lo, hi, step].iter().all(|w| self.from_constants.contains(*w)) {
                self.from_constants.insert(var.to_string());
            }
        }
        let Some(carry) = rhs.split_once("carry(").map(|(_, c)| c.trim_end_matches(" {").trim_end_matches(')')) else {
            return;
        };
        let results: Vec<&str> = defs.split(", ").map(str::trim).filter(|d| !d.is_empty()).collect();
        for (i, pair) in carry.split(", ").enumerate() {
            let Some((carried, init)) = pair.split_once(" = ") else { continue };
            if self.from_constants.contains(init.trim()) {
                self.from_constants.insert(carried.trim().to_string());
                if let Some(r) = results.get(i) {
                    self.from_constants.insert(r.to_string());
                }
            }
        }
    }
    /// Whether llvmpipe-safe generation keeps `v` out of a float product or a math function.
    fn foldable(&self, v: &str) -> bool {
        self.opts.llvmpipe_safe && self.from_constants.contains(v)
    }
    fn fresh(&mut self, prefix: &str) -> String {
        self.n += 1;
        format!("%{prefix}{}", self.n)
    }
    fn push(&mut self, name: &str, ty: Ty) {
        self.scopes.last_mut().expect("a scope").push(Val { name: name.to_string(), ty });
    }
    fn param(&mut self, role: Role, ty: Ty) -> String {
        let prefix = match role {
            Role::Input => "in",
            Role::Output => "o",
            Role::Approx => "ax",
            Role::ItemAtomic => "pa",
            Role::SharedAtomic => "sa",
            Role::FloatAtomic => "fa",
        };
        let name = format!("%{prefix}_{}", ty.mangle());
        if !self.params.iter().any(|p| p.name == name) {
            self.params.push(Param { name: name.clone(), ty, role });
        }
        name
    }
    fn existing(&mut self, ty: Ty) -> Option<String> {
        let all: Vec<&Val> = self.scopes.iter().flatten().filter(|v| v.ty == ty).collect();
        if all.is_empty() {
            return None;
        }
        // Prefer recent values (they carry more computation).
        let k = all.len() as u64;
        let i = if self.rng.below(2) == 0 { k - 1 - self.rng.below(k.min(4)) } else { self.rng.below(k) };
        Some(all[i as usize].name.clone())
    }

    fn random_ty(&mut self) -> Ty {
        match self.rng.below(10) {
            0..=6 => Ty::sc(*self.pick(&SCALARS)),
            _ => {
                let s = *self.pick(&LANES);
                Ty { s, n: 2 + self.rng.below(3) as u8 }
            }
        }
    }

    fn constant(&mut self, ty: Ty) -> String {
        let lit = match ty.s {
            S::Bool => if self.rng.below(2) == 0 { "true" } else { "false" }.to_string(),
            s if s.float() => float_lit(self.rng, s),
            s => int_lit(self.rng, s),
        };
        let v = self.fresh("c");
        self.emit(&format!("{v} = const {lit} : {}", ty.text()));
        self.push(&v, ty);
        v
    }

    fn const_u32(&mut self, x: u64) -> String {
        let v = self.fresh("c");
        self.emit(&format!("{v} = const {x} : u32"));
        v
    }

    /// A value of `ty`: an existing one, or a new one.
    fn val(&mut self, ty: Ty) -> String {
        if self.rec < 4 && self.chance(75) {
            if let Some(v) = self.existing(ty) {
                return v;
            }
        }
        self.make(ty)
    }

    /// A new value of `ty` from a constant, a load, a cast, a vector op or a comparison.
    fn make(&mut self, ty: Ty) -> String {
        if self.rec >= 4 {
            return self.constant(ty);
        }
        self.rec += 1;
        let v = match (ty.s, self.rng.below(10)) {
            (S::Bool, _) if ty.n == 1 => self.cond(),
            (S::Bool, _) => {
                let t = Ty { s: *self.pick(&LANES), n: ty.n };
                self.compare(t)
            }
            (_, 0..=1) => self.constant(ty),
            (_, 2..=5) if !(ty.s == S::F16 && ty.n > 1) => self.load_input(ty),
            (_, 6..=7) => self.cast_to(ty),
            (_, _) if ty.n > 1 => {
                let sv = Ty::sc(ty.s);
                let r = self.fresh("v");
                if self.chance(50) {
                    let x = self.val(sv);
                    self.emit(&format!("{r} = splat {x} : {}", ty.text()));
                    self.feat("vector splat");
                } else {
                    let parts: Vec<String> = (0..ty.n).map(|_| self.val(sv)).collect();
                    self.emit(&format!("{r} = vec {}", parts.join(", ")));
                    self.feat("vector vec");
                }
                self.push(&r, ty);
                r
            }
            _ => self.compute(ty),
        };
        self.rec -= 1;
        v
    }

    /// An in-bounds index into `len` elements (a power of two) from data and ids.
    fn index(&mut self, len: u64) -> String {
        let ity = *self.pick(&[S::U32, S::U32, S::U32, S::I32, S::U64, S::I64]);
        let x = if self.chance(40) {
            // Arithmetic on ids.
            let gid = self.existing(U32).unwrap_or_else(|| "%gid".to_string());
            let k_n = 1 + self.rng.below(37);
            let k = self.const_u32(k_n);
            let m = self.fresh("v");
            let op = *self.pick(&["mul", "add", "xor", "sub"]);
            self.emit(&format!("{m} = {op} {gid}, {k}"));
            self.push(&m, U32);
            m
        } else {
            self.val(Ty::sc(ity))
        };
        // The value in the index type.
        let xt = self.ty_of(&x).unwrap_or(U32);
        let xi = if xt.s == ity {
            x
        } else {
            let c = self.fresh("v");
            self.emit(&format!("{c} = cast {x} to {}", ity.name()));
            c
        };
        let r = self.fresh("ix");
        let lim = self.fresh("c");
        let form = if ity.signed() { 0 } else { self.rng.below(3) };
        match form {
            0 => {
                self.emit(&format!("{lim} = const {} : {}", len - 1, ity.name()));
                self.emit(&format!("{r} = and {xi}, {lim}"));
                self.feat("index and");
            }
            1 => {
                self.emit(&format!("{lim} = const {len} : {}", ity.name()));
                self.emit(&format!("{r} = rem {xi}, {lim}"));
                self.feat("index rem");
            }
            _ => {
                self.emit(&format!("{lim} = const {} : {}", len - 1, ity.name()));
                self.emit(&format!("{r} = min {xi}, {lim}"));
                self.feat("index min");
            }
        }
        r
    }

    fn ty_of(&self, name: &str) -> Option<Ty> {
        self.scopes.iter().flatten().rev().find(|v| v.name == name).map(|v| v.ty)
    }

    /// A load of an input of `ty` at a computed, guarded or direct index.
    fn load_input(&mut self, ty: Ty) -> String {
        let buf = self.param(Role::Input, ty);
        let r = self.fresh("l");
        match self.rng.below(6) {
            0 => {
                // Guarded: if %x < %n { load } else { another value }.
                let x = self.val(U32);
                let n = self.const_u32(INPUT_LEN);
                let c = self.fresh("g");
                self.emit(&format!("{c} = lt {x}, {n}"));
                let other = self.val(ty);
                self.emit(&format!("{r} = if {c} -> {} {{", ty.text()));
                self.ind += 1;
                let t = self.fresh("l");
                self.emit(&format!("{t} = load {buf}[{x}]"));
                self.emit(&format!("yield {t}"));
                self.ind -= 1;
                self.emit("} else {");
                self.ind += 1;
                self.emit(&format!("yield {other}"));
                self.ind -= 1;
                self.emit("}");
                self.feat("index guarded");
            }
            1 => {
                self.emit(&format!("{r} = load {buf}[%gid]"));
                self.feat("index global_id");
            }
            _ => {
                let ix = self.index(INPUT_LEN);
                self.emit(&format!("{r} = load {buf}[{ix}]"));
            }
        }
        self.push(&r, ty);
        self.feat("load");
        r
    }

    /// A cast to `ty` from a value of another type with the same lanes.
    fn cast_to(&mut self, ty: Ty) -> String {
        if ty.s != S::Bool && self.chance(25) {
            return self.bitcast_to(ty);
        }
        let from = if ty.n == 1 {
            match self.rng.below(8) {
                0 => S::Bool,
                _ => *self.pick(&SCALARS),
            }
        } else {
            match self.rng.below(5) {
                0 => S::Bool,
                _ => *self.pick(&LANES),
            }
        };
        let fty = Ty { s: from, n: ty.n };
        if fty == ty {
            return self.compute(ty);
        }
        let x = self.val(fty);
        let to_int = !ty.s.float() && ty.s != S::Bool;
        if self.opts.llvmpipe_safe && to_int && self.from_wide_int.contains(&x) {
            return self.compute(ty);
        }
        let r = self.fresh("v");
        self.emit(&format!("{r} = cast {x} to {}", ty.text()));
        self.push(&r, ty);
        if matches!(from, S::I64 | S::U64) && ty.s.float() {
            self.from_wide_int.insert(r.clone());
        }
        self.feat(match (from.float(), ty.s.float(), from == S::Bool) {
            (_, _, true) => "cast from bool",
            (true, true, _) => "cast float to float",
            (true, false, _) => "cast float to int (saturating)",
            (false, true, _) => "cast int to float",
            (false, false, _) => "cast int to int (wrapping)",
        });
        if ty.s == S::Bool {
            self.feat("cast to bool");
        }
        if ty.n > 1 {
            self.feat("vector cast");
        }
        r
    }

    /// A bitcast to `ty` from another type of its width. A float source is a fresh load:
    /// a NaN a float op made has the device's payload (docs/ir.md), which a bitcast to an
    /// integer would expose; loaded bits are the input's.
    fn bitcast_to(&mut self, ty: Ty) -> String {
        let same_width: Vec<S> = SCALARS
            .iter()
            .copied()
            .filter(|s| *s != ty.s && s.size() == ty.s.size() && (ty.n == 1 || LANES.contains(s) || *s == S::U32))
            .collect();
        if same_width.is_empty() {
            return self.compute(ty);
        }
        let from = *self.pick(&same_width);
        let fty = Ty { s: from, n: ty.n };
        let x = if from.float() && !(from == S::F16 && ty.n > 1) { self.load_input(fty) } else { self.val(fty) };
        let r = self.fresh("v");
        self.emit(&format!("{r} = bitcast {x} to {}", ty.text()));
        self.push(&r, ty);
        self.feat(match (from.float(), ty.s.float()) {
            (true, false) => "bitcast float to int",
            (false, true) => "bitcast int to float",
            _ => "bitcast int to int",
        });
        if ty.n > 1 {
            self.feat("vector bitcast");
        }
        r
    }

    /// A comparison of two values of `ty`: `bool` with its lanes.
    fn compare(&mut self, ty: Ty) -> String {
        let a = self.val(ty);
        let b = self.val(ty);
        let op = *self.pick(&["eq", "ne", "lt", "le", "gt", "ge"]);
        let r = self.fresh("b");
        self.emit(&format!("{r} = {op} {a}, {b}"));
        self.push(&r, Ty { s: S::Bool, n: ty.n });
        self.feat(if ty.s.float() { "compare float" } else { "compare int" });
        r
    }

    /// A `bool` scalar.
    fn cond(&mut self) -> String {
        match self.rng.below(6) {
            0 => {
                let a = self.val(BOOL);
                let b = self.val(BOOL);
                let op = *self.pick(&["and", "or", "xor"]);
                let r = self.fresh("b");
                self.emit(&format!("{r} = {op} {a}, {b}"));
                self.push(&r, BOOL);
                self.feat("bool logic");
                r
            }
            1 => {
                let t = Ty::sc(*self.pick(&[S::I32, S::U32, S::U64]));
                let x = self.val(t);
                let r = self.fresh("b");
                self.emit(&format!("{r} = cast {x} to bool"));
                self.push(&r, BOOL);
                self.feat("cast to bool");
                r
            }
            2 => {
                // Divergent on the work-item id.
                let k_n = 1 + self.rng.below(5);
                let k = self.const_u32(k_n);
                let m = self.fresh("v");
                self.emit(&format!("{m} = rem %gid, {k}"));
                let z_n = self.rng.below(2);
                let z = self.const_u32(z_n);
                let r = self.fresh("b");
                self.emit(&format!("{r} = eq {m}, {z}"));
                self.push(&r, BOOL);
                r
            }
            _ => {
                let t = Ty::sc(*self.pick(&SCALARS));
                self.compare(t)
            }
        }
    }

    /// A new value of `ty` by arithmetic, select, extract or insert.
    fn compute(&mut self, ty: Ty) -> String {
        let r = self.fresh("v");
        let choice = self.rng.below(10);
        if ty.s == S::Bool {
            return if ty.n == 1 { self.cond() } else { self.compare(Ty { s: S::F32, n: ty.n }) };
        }
        if ty.n == 1 && matches!(ty.s, S::F32 | S::I32 | S::U32) && choice == 0 {
            // Extract a lane.
            let n = 2 + self.rng.below(3) as u8;
            let v = self.val(Ty { s: ty.s, n });
            let lane = self.rng.below(u64::from(n));
            self.emit(&format!("{r} = extract {v}, {lane}"));
            self.push(&r, ty);
            self.feat("vector extract");
            return r;
        }
        if ty.n > 1 && choice == 0 {
            let v = self.val(ty);
            let s = self.val(Ty::sc(ty.s));
            let lane = self.rng.below(u64::from(ty.n));
            self.emit(&format!("{r} = insert {v}, {lane}, {s}"));
            self.push(&r, ty);
            self.feat("vector insert");
            return r;
        }
        if choice == 1 {
            let c = if ty.n == 1 && self.chance(50) {
                self.cond()
            } else {
                let t = Ty { s: *self.pick(&[S::F32, S::I32, S::U32]), n: ty.n };
                let t = if t.n == 1 { Ty::sc(*self.pick(&SCALARS)) } else { t };
                self.compare(t)
            };
            let a = self.val(ty);
            let b = self.val(ty);
            self.emit(&format!("{r} = select {c}, {a}, {b}"));
            self.push(&r, ty);
            self.feat(if ty.n > 1 { "select vector" } else { "select" });
            return r;
        }
        let float = ty.s.float();
        if float && self.opts.fma_exact && choice == 2 {
            let a = self.val(ty);
            let b = self.val(ty);
            let c = self.val(ty);
            if self.foldable(&a) || self.foldable(&b) {
                self.emit(&format!("{r} = add {a}, {c}"));
            } else if ty.s == S::F16 {
                // f16 fma rounds through f32 on the device (docs/codegen.md): not exact.
                self.emit(&format!("{r} = mul {a}, {b}"));
            } else {
                self.emit(&format!("{r} = fma {a}, {b}, {c}"));
                self.feat("fma (exact)");
            }
            self.push(&r, ty);
            return r;
        }
        if choice <= 3 {
            let ops: &[&str] = if float { &["neg", "abs", "floor", "ceil"] } else { &["neg", "not", "abs"] };
            let op = *self.pick(ops);
            let a = self.val(ty);
            self.emit(&format!("{r} = {op} {a}"));
        } else {
            let ops: &[&str] = if float {
                &["add", "sub", "mul", "min", "max"]
            } else {
                &["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"]
            };
            let op = *self.pick(ops);
            let a = self.val(ty);
            let b = self.val(ty);
            let op = if float && op == "mul" && (self.foldable(&a) || self.foldable(&b)) { "add" } else { op };
            self.emit(&format!("{r} = {op} {a}, {b}"));
            if !float {
                match op {
                    "div" | "rem" => self.feat("int div/rem"),
                    "shl" | "shr" => self.feat("int shift"),
                    _ => {}
                }
            }
        }
        self.feat(if float { "float arith" } else { "int arith" });
        if ty.s == S::F16 {
            self.feat("f16");
        }
        if ty.s == S::F64 {
            self.feat("f64");
        }
        if ty.s.narrow() {
            self.feat("8/16-bit int");
        }
        if matches!(ty.s, S::I64 | S::U64) {
            self.feat("64-bit int");
        }
        if ty.n > 1 {
            self.feat("vector arith");
        }
        self.push(&r, ty);
        r
    }

    /// `gid * SLOTS + (x & 3)`: one of the work-item's own output slots.
    fn own_slot(&mut self) -> String {
        let x = self.val(U32);
        let m = self.const_u32(SLOTS - 1);
        let a = self.fresh("v");
        self.emit(&format!("{a} = and {x}, {m}"));
        let r = self.fresh("ix");
        self.emit(&format!("{r} = add %base, {a}"));
        r
    }

    /// A recent value that can be stored (no bool), from the innermost scopes outwards.
    fn recent(&mut self) -> Option<Val> {
        let all: Vec<&Val> = self.scopes.iter().flatten().filter(|v| v.ty.s != S::Bool).collect();
        let k = all.len() as u64;
        if k == 0 {
            return None;
        }
        Some(all[(k - 1 - self.rng.below(k.min(3))) as usize].clone())
    }

    fn store_output(&mut self) {
        let (ty, v) = match self.recent() {
            Some(v) if self.chance(75) => (v.ty, v.name),
            _ => {
                let ty = self.random_ty();
                (ty, self.val(ty))
            }
        };
        let buf = self.param(Role::Output, ty);
        let ix = self.own_slot();
        self.emit(&format!("store {buf}[{ix}], {v}"));
        self.feat("store");
    }

    /// An inexact float op on clamped operands, stored at once to the approx output.
    fn approx(&mut self) {
        let x = self.val(F32);
        let x = if self.foldable(&x) { self.load_input(F32) } else { x };
        let clamp = |g: &mut Self, v: &str, lo: f64, hi: f64| -> String {
            let (a, b, c, d) = (g.fresh("m"), g.fresh("m"), g.fresh("m"), g.fresh("m"));
            g.emit(&format!("{a} = const {lo:?} : f32"));
            g.emit(&format!("{b} = const {hi:?} : f32"));
            g.emit(&format!("{c} = max {v}, {a}"));
            g.emit(&format!("{d} = min {c}, {b}"));
            d
        };
        let r = self.fresh("m");
        let op = *self.pick(&["sqrt", "rsqrt", "exp", "log", "sin", "cos", "tanh", "pow", "div", "rem", "fma"]);
        let op = if op == "fma" && self.opts.fma_exact { "div" } else { op };
        match op {
            "sqrt" | "rsqrt" | "log" => {
                let c = clamp(self, &x, -1e6, 1e6);
                let a = self.fresh("m");
                self.emit(&format!("{a} = abs {c}"));
                let h = self.fresh("m");
                self.emit(&format!("{h} = const 0.5 : f32"));
                let b = self.fresh("m");
                self.emit(&format!("{b} = add {a}, {h}"));
                self.emit(&format!("{r} = {op} {b}"));
            }
            "exp" | "tanh" => {
                let c = clamp(self, &x, -8.0, 8.0);
                self.emit(&format!("{r} = {op} {c}"));
            }
            "sin" | "cos" => {
                let c = clamp(self, &x, -3.0, 3.0);
                self.emit(&format!("{r} = {op} {c}"));
            }
            "pow" => {
                let c = clamp(self, &x, 0.5, 4.0);
                let y = self.val(F32);
                let e = clamp(self, &y, -3.0, 3.0);
                self.emit(&format!("{r} = pow {c}, {e}"));
            }
            "fma" => {
                let a = clamp(self, &x, -8.0, 8.0);
                let y = self.val(F32);
                let b = clamp(self, &y, -8.0, 8.0);
                let z = self.val(F32);
                let c = clamp(self, &z, -64.0, 64.0);
                self.emit(&format!("{r} = fma {a}, {b}, {c}"));
            }
            _ => {
                // div, rem: a divisor away from zero; `rem` of a small dividend (the device's
                // x - y * trunc(x / y) loses ulp(x) to cancellation).
                let bound = if op == "rem" { 64.0 } else { 1e6 };
                let c = clamp(self, &x, -bound, bound);
                let y = self.val(F32);
                let d = clamp(self, &y, -8.0, 8.0);
                let a = self.fresh("m");
                self.emit(&format!("{a} = abs {d}"));
                let h = self.fresh("m");
                self.emit(&format!("{h} = const 0.5 : f32"));
                let b = self.fresh("m");
                self.emit(&format!("{b} = add {a}, {h}"));
                self.emit(&format!("{r} = {op} {c}, {b}"));
            }
        }
        let buf = self.param(Role::Approx, F32);
        let ix = self.own_slot();
        self.emit(&format!("store {buf}[{ix}], {r}"));
        self.feat(match op {
            "div" | "rem" => "float div/rem (tolerance)",
            "fma" => "fma (tolerance)",
            _ => "math function (tolerance)",
        });
    }

    fn atomic(&mut self) {
        let ity = Ty::sc(*self.pick(&[S::U32, S::I32]));
        let r = self.fresh("a");
        match self.rng.below(10) {
            0..=3 => {
                // Shared slots, one order-independent op class per slot.
                let buf = self.param(Role::SharedAtomic, ity);
                let class = self.rng.below(6);
                let op = match class {
                    0 => *self.pick(&["add", "sub"]),
                    1 => "and",
                    2 => "or",
                    3 => "xor",
                    4 => "min",
                    _ => "max",
                };
                let x = self.val(U32);
                let m = self.const_u32(3);
                let a = self.fresh("v");
                self.emit(&format!("{a} = and {x}, {m}"));
                let b = self.const_u32(class * 4);
                let ix = self.fresh("ix");
                self.emit(&format!("{ix} = add {a}, {b}"));
                let v = self.val(ity);
                self.emit(&format!("{r} = atomic {op} {buf}[{ix}], {v}"));
                self.feat("atomic shared int");
            }
            4..=5 => {
                // f32 add of a small integer.
                let buf = self.param(Role::FloatAtomic, F32);
                let x = self.val(U32);
                let m = self.const_u32(15);
                let a = self.fresh("v");
                self.emit(&format!("{a} = and {x}, {m}"));
                let f = self.fresh("v");
                self.emit(&format!("{f} = cast {a} to f32"));
                let y = self.val(U32);
                let k = self.const_u32(FATOMIC_SLOTS - 1);
                let ix = self.fresh("ix");
                self.emit(&format!("{ix} = and {y}, {k}"));
                self.emit(&format!("{r} = atomic add {buf}[{ix}], {f}"));
                self.feat("atomic f32 add");
            }
            _ => {
                // The item's own slots: any op, the old value used.
                let buf = self.param(Role::ItemAtomic, ity);
                let ix = self.own_slot();
                let op = *self.pick(&["add", "sub", "min", "max", "and", "or", "xor", "xchg", "cmpxchg"]);
                let v = self.val(ity);
                if op == "cmpxchg" {
                    let e = self.val(ity);
                    self.emit(&format!("{r} = atomic cmpxchg {buf}[{ix}], {e}, {v}"));
                    self.feat("atomic cmpxchg");
                } else {
                    self.emit(&format!("{r} = atomic {op} {buf}[{ix}], {v}"));
                }
                self.push(&r, ity);
                self.feat("atomic per-item (old value used)");
            }
        }
    }

    /// An access to work-group memory allowed in its current phase.
    fn local_access(&mut self) {
        if self.locals.is_empty() {
            return;
        }
        let i = self.rng.below(self.locals.len() as u64) as usize;
        let l = self.locals[i].clone();
        match l.phase {
            Phase::Write => {
                let own = if self.chance(50) {
                    "%lid".to_string()
                } else {
                    let k = self.const_u32(self.lsize);
                    let r = self.fresh("ix");
                    self.emit(&format!("{r} = add %lid, {k}"));
                    r
                };
                if self.chance(70) {
                    let v = self.val(l.ty);
                    self.emit(&format!("store {}[{own}], {v}", l.name));
                    self.feat("local store");
                } else {
                    let r = self.fresh("l");
                    self.emit(&format!("{r} = load {}[{own}]", l.name));
                    self.push(&r, l.ty);
                    self.feat("local load");
                }
            }
            Phase::Read => {
                let ix = self.index(l.len);
                let r = self.fresh("l");
                self.emit(&format!("{r} = load {}[{ix}]", l.name));
                self.push(&r, l.ty);
                self.feat("local load");
            }
            Phase::Atomic if self.loops > 0 && !self.opts.loop_atomics => {}
            Phase::Atomic => {
                let r = self.fresh("a");
                let x = self.val(U32);
                if l.ty.s == S::F32 {
                    let m = self.const_u32(15);
                    let a = self.fresh("v");
                    self.emit(&format!("{a} = and {x}, {m}"));
                    let f = self.fresh("v");
                    self.emit(&format!("{f} = cast {a} to f32"));
                    let y = self.val(U32);
                    let k = self.const_u32(l.len - 1);
                    let ix = self.fresh("ix");
                    self.emit(&format!("{ix} = and {y}, {k}"));
                    self.emit(&format!("{r} = atomic add {}[{ix}], {f}", l.name));
                    self.feat("atomic local f32 add");
                } else {
                    let class = self.rng.below(6);
                    let op = match class {
                        0 => *self.pick(&["add", "sub"]),
                        1 => "and",
                        2 => "or",
                        3 => "xor",
                        4 => "min",
                        _ => "max",
                    };
                    let m = self.const_u32(3);
                    let a = self.fresh("v");
                    self.emit(&format!("{a} = and {x}, {m}"));
                    let b = self.const_u32(class * 4);
                    let ix = self.fresh("ix");
                    self.emit(&format!("{ix} = add {a}, {b}"));
                    let v = self.val(l.ty);
                    self.emit(&format!("{r} = atomic {op} {}[{ix}], {v}", l.name));
                    self.feat("atomic local int");
                }
            }
        }
    }

    fn barrier(&mut self) {
        self.emit("group_barrier");
        self.feat("group_barrier");
        for i in 0..self.locals.len() {
            let p = if self.locals[i].atomic {
                if self.chance(50) {
                    Phase::Atomic
                } else {
                    Phase::Read
                }
            } else if self.chance(50) {
                Phase::Write
            } else {
                Phase::Read
            };
            self.locals[i].phase = p;
        }
    }

    fn block(&mut self, stmts: u64) {
        for _ in 0..stmts {
            if self.budget <= 0 {
                break;
            }
            self.stmt();
        }
    }

    fn stmt(&mut self) {
        let nested = self.depth < 3 && self.budget > 20 && !self.straight;
        match self.rng.below(21) {
            0..=5 => {
                let ty = self.random_ty();
                self.compute(ty);
            }
            6..=7 => self.store_output(),
            8 => {
                let ty = self.random_ty();
                self.make(ty);
            }
            9..=10 if nested => self.if_(),
            11..=12 if nested => self.for_(),
            13 if !self.straight && (self.loops == 0 || self.opts.loop_atomics) => self.atomic(),
            14..=15 if self.nd => self.local_access(),
            16 if self.barrier_ok => self.barrier(),
            17 => self.approx(),
            18 if self.nd => self.subgroup(),
            19 if nested => self.general_loop(),
            _ => {
                let ty = self.random_ty();
                self.compute(ty);
            }
        }
    }

    fn yields(&mut self, tys: &[Ty]) {
        if tys.is_empty() {
            return;
        }
        let vs: Vec<String> = tys.iter().map(|&t| self.val(t)).collect();
        self.emit(&format!("yield {}", vs.join(", ")));
    }

    fn region(&mut self, stmts: u64, results: &[Ty]) {
        self.ind += 1;
        self.depth += 1;
        self.scopes.push(Vec::new());
        self.block(stmts);
        if self.chance(50) {
            self.store_output();
        }
        self.yields(results);
        self.scopes.pop();
        self.depth -= 1;
        self.ind -= 1;
    }

    fn if_(&mut self) {
        let c = self.cond();
        let saved = self.barrier_ok;
        self.barrier_ok = false;
        self.feat("if");
        if self.depth > 0 {
            self.feat("nested control flow");
        }
        let nres = if self.chance(50) { 1 + self.rng.below(3) } else { 0 };
        let tys: Vec<Ty> = (0..nres).map(|_| self.random_ty()).collect();
        let names: Vec<String> = tys.iter().map(|_| self.fresh("r")).collect();
        if tys.is_empty() {
            self.emit(&format!("if {c} {{"));
        } else {
            self.feat("if with results");
            let list: Vec<String> = tys.iter().map(|t| t.text()).collect();
            self.emit(&format!("{} = if {c} -> {} {{", names.join(", "), list.join(", ")));
        }
        let s = 1 + self.rng.below(5);
        self.region(s, &tys);
        if !tys.is_empty() || self.chance(50) {
            self.emit("} else {");
            let s = 1 + self.rng.below(5);
            self.region(s, &tys);
        }
        self.emit("}");
        for (n, t) in names.iter().zip(&tys) {
            self.push(n, *t);
        }
        self.barrier_ok = saved;
    }

    fn for_(&mut self) {
        let ity = Ty::sc(*self.pick(&[S::U32, S::U32, S::I32]));
        let uniform = self.chance(50);
        let lo = self.fresh("c");
        let lo_v: i64 = if ity.s == S::I32 { self.rng.below(7) as i64 - 3 } else { self.rng.below(3) as i64 };
        self.emit(&format!("{lo} = const {lo_v} : {}", ity.text()));
        let hi = if uniform {
            let hi = self.fresh("c");
            let v = lo_v + self.rng.below(6) as i64;
            self.emit(&format!("{hi} = const {v} : {}", ity.text()));
            hi
        } else {
            // Data-dependent trip count 0..=7 past lo.
            let x = self.val(U32);
            let m = self.const_u32(7);
            let a = self.fresh("v");
            self.emit(&format!("{a} = and {x}, {m}"));
            let a = if ity.s == S::U32 {
                a
            } else {
                let c = self.fresh("v");
                self.emit(&format!("{c} = cast {a} to {}", ity.text()));
                c
            };
            let hi = self.fresh("v");
            self.emit(&format!("{hi} = add {a}, {lo}"));
            self.feat("for with data-dependent bounds");
            hi
        };
        let step = self.fresh("c");
        let sv = 1 + self.rng.below(2);
        self.emit(&format!("{step} = const {sv} : {}", ity.text()));
        let ncarry = if self.chance(60) { 1 + self.rng.below(3) } else { 0 };
        let tys: Vec<Ty> = (0..ncarry).map(|_| self.random_ty()).collect();
        let inits: Vec<String> = tys.iter().map(|&t| self.val(t)).collect();
        let carries: Vec<String> = tys.iter().map(|_| self.fresh("k")).collect();
        let results: Vec<String> = tys.iter().map(|_| self.fresh("r")).collect();
        let k = self.fresh("i");
        let saved = self.barrier_ok;
        let barrier_loop = uniform && self.barrier_ok && !self.locals.is_empty() && self.chance(60);
        if barrier_loop {
            self.barrier();
        }
        let phases: Vec<Phase> = self.locals.iter().map(|l| l.phase).collect();
        self.barrier_ok = barrier_loop;
        let head = format!("for {k} = {lo} to {hi} step {step}");
        if tys.is_empty() {
            self.emit(&format!("{head} {{"));
        } else {
            let c: Vec<String> = carries.iter().zip(&inits).map(|(c, i)| format!("{c} = {i}")).collect();
            self.emit(&format!("{} = {head} carry({}) {{", results.join(", "), c.join(", ")));
            self.feat("for with carried values");
        }
        self.feat("for");
        if self.depth > 0 {
            self.feat("nested control flow");
        }
        self.ind += 1;
        self.depth += 1;
        self.loops += 1;
        self.scopes.push(Vec::new());
        self.push(&k, ity);
        for (c, t) in carries.iter().zip(&tys) {
            self.push(c, *t);
        }
        let s = 1 + self.rng.below(6);
        self.block(s);
        if self.chance(50) {
            self.store_output();
        }
        if barrier_loop {
            // Back to the phases every iteration starts in.
            self.emit("group_barrier");
            self.feat("group_barrier in a loop");
            for (l, p) in self.locals.iter_mut().zip(&phases) {
                l.phase = *p;
            }
        }
        self.yields(&tys);
        self.scopes.pop();
        self.loops -= 1;
        self.depth -= 1;
        self.ind -= 1;
        self.emit("}");
        for (n, t) in results.iter().zip(&tys) {
            self.push(n, *t);
        }
        self.barrier_ok = saved;
    }
}

/// A random kernel named `name` from `seed`.
pub fn kernel(seed: u64, name: &str, opts: GenOptions) -> Kernel {
    let mut rng = Rng(seed);
    let nd = rng.below(2) == 0;
    let straight = rng.below(10) == 0;
    let (launch, items, lsize) = if nd {
        let l = [1u64, 2, 4, 8, 16, 32, 64, 3, 24][rng.below(9) as usize];
        let groups = 1 + rng.below(3);
        (format!("nd_range(global({}), local({l}))", l * groups), l * groups, l)
    } else {
        let r = 1 + rng.below(200);
        (format!("range({r})"), r, 1)
    };
    let mut g = G {
        rng: &mut rng,
        out: String::new(),
        ind: 1,
        scopes: vec![Vec::new()],
        n: 0,
        nd,
        lsize,
        barrier_ok: nd,
        depth: 0,
        budget: 60,
        params: Vec::new(),
        locals: Vec::new(),
        feats: BTreeMap::new(),
        opts,
        rec: 0,
        straight,
        loops: 0,
        from_wide_int: std::collections::BTreeSet::new(),
        from_constants: std::collections::BTreeSet::new(),
    };
    g.feat(if nd { "nd_range launch" } else { "range launch" });
    if straight {
        g.feat("straight-line kernel");
    }
    g.emit("%gid = global_id 0");
    g.push("%gid", U32);
    let s = g.const_u32(SLOTS);
    g.emit(&format!("%base = mul %gid, {s}"));
    if nd {
        g.emit("%lid = local_id 0");
        g.push("%lid", U32);
        if g.chance(50) {
            g.emit("%grp = group_id 0");
            g.push("%grp", U32);
        }
        for i in 0..g.rng.below(3) {
            let atomic = g.chance(40);
            let ty = if atomic {
                *g.pick(&[U32, I32, F32])
            } else {
                *g.pick(&[F32, U32, I32, Ty { s: S::F32, n: 4 }, Ty { s: S::I32, n: 2 }])
            };
            let len = if atomic {
                if ty.s == S::F32 {
                    FATOMIC_SLOTS
                } else {
                    ATOMIC_SLOTS
                }
            } else {
                2 * lsize
            };
            let name = format!("%t{i}");
            g.emit(&format!("{name} = local {}[{len}]", ty.text()));
            let phase = match (atomic, g.chance(50)) {
                (true, true) => Phase::Atomic,
                (false, true) => Phase::Write,
                _ => Phase::Read,
            };
            if !opts.implicit_zero {
                // Zero it explicitly: `for %z = %lid to len step lsize { store 0 }`.
                let (z, hi, st, i) = (g.fresh("c"), g.fresh("c"), g.fresh("c"), g.fresh("z"));
                let zero = if ty.s == S::F32 { "0.0" } else { "0" };
                g.emit(&format!("{z} = const {zero} : {}", ty.text()));
                g.emit(&format!("{hi} = const {len} : u32"));
                g.emit(&format!("{st} = const {lsize} : u32"));
                g.emit(&format!("for {i} = %lid to {hi} step {st} {{"));
                g.emit(&format!("  store {name}[{i}], {z}"));
                g.emit("}");
            }
            g.locals.push(Local { name, ty, len, atomic, phase });
            g.feat(if atomic { "local memory (atomics)" } else { "local memory (data)" });
        }
        if !opts.implicit_zero && !g.locals.is_empty() {
            g.emit("group_barrier");
        }
    } else if g.chance(30) {
        g.emit("%gr = global_range 0");
        g.push("%gr", U32);
    }
    let stmts = 6 + g.rng.below(14);
    g.block(stmts);
    // The last values reach an output.
    for _ in 0..3 {
        g.store_output();
    }
    let body = std::mem::take(&mut g.out);
    let params = std::mem::take(&mut g.params);
    let feats = std::mem::take(&mut g.feats);
    let mut text = String::new();
    let plist: Vec<String> = params
        .iter()
        .map(|p| {
            let access = match p.role {
                Role::Input => "read",
                Role::Output | Role::Approx => "write",
                _ => "read_write",
            };
            format!("{}: buf<{}, {access}>", p.name, p.ty.text())
        })
        .collect();
    let _ = writeln!(text, "kernel @{name}({}) {{", plist.join(", "));
    text.push_str(&body);
    text.push_str("}\n");
    Kernel { text, params, launch, items, features: feats }
}
