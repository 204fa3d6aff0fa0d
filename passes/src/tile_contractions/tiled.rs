//! The tiled kernel that replaces a recognised contraction: written in the kernel
//! language (so the verifier, the interpreter, `--explain`, DOT and diff see it like any
//! other kernel), specialised to the launch's constant sizes.
//!
//! A work-group of `lx × ly` work-items computes a `bn × bm` block of the output
//! (`bn = lx·rn` along dimension 0, `bm = ly·rm` along dimension 1): each work-item keeps
//! `rm × rn` running values in registers, for the outputs `(col0 + tx + q·lx, row0 + ty + p·ly)`
//! (strided, so a warp's reads of the column tile are consecutive and its reads of the row
//! tile are broadcasts). The trip range is walked `tk` steps at a time: the work-group copies
//! the `bm × tk` slice of `a` and the `tk × bn` slice of `b` into work-group memory (each
//! work-item a few elements, consecutive work-items on consecutive addresses of whichever
//! index moves by one), synchronises, and every work-item runs the `tk` steps on its
//! registers. A last, shorter stage takes the `trips mod tk` remaining steps.
//!
//! Each output still sees the same steps in the same order, starting from the same initial
//! value, with the same combine (`fma`, or `mul` then `add`): the result is bit-identical to
//! the one-work-item-per-output loop, which the tests check on the interpreter and Vulkan.

use super::recognise::{Access, Combine, Contraction};
use cmdgraph_ir::kernel::ParamType;
use std::fmt::Write as _;

/// A tiling of one contraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// Work-items along dimension 0 (columns).
    pub lx: u64,
    /// Work-items along dimension 1 (rows).
    pub ly: u64,
    /// Outputs per work-item along dimension 0.
    pub rn: u64,
    /// Outputs per work-item along dimension 1.
    pub rm: u64,
    /// Trip steps per stage.
    pub tk: u64,
    /// Each work-item owns 4 × 4 consecutive outputs and reads its slices as `vec4`s
    /// ([`super::vec4`]); otherwise its outputs are strided by the work-group size.
    pub vec4: bool,
}

/// Work-groups the choice aims for at least: most multiprocessors of a large GPU (132 on
/// an H100) get one, without knowing the device at compile time.
const GROUPS_WANTED: u64 = 96;

/// Register blocks tried in order for contractions with many rows: (lx, ly, rm, rn).
/// Measured on an H200 (docs/performance.md, mlp): at 256 × 1024 × 1024, 16 × 8 work-items
/// of 4 × 4 outputs (32 × 64 per group, 128 groups) took 35 µs; 16 × 16 of 2 × 2 took
/// 48 µs, 16 × 16 of 4 × 4 (64 groups) 52 µs, 8 × 8 of 4 × 4 38 µs. With the `vec4` slices
/// (super::vec4) 16 × 8 of 4 × 4 takes 33 µs; the same with 64 steps per stage 32.5 µs,
/// 8 × 16 39 µs, 32 × 4 40 µs, 8 × 8 43.5 µs, 16 × 16 48.5 µs (2026-11-29, the suite's
/// matmul time over 4 layers divided by 4).
const BLOCKS: [(u64, u64, u64, u64); 4] = [(16, 8, 4, 4), (16, 16, 2, 2), (8, 8, 2, 2), (8, 8, 1, 1)];

impl Tiling {
    /// Columns per work-group.
    pub fn bn(&self) -> u64 {
        self.lx * self.rn
    }
    /// Rows per work-group.
    pub fn bm(&self) -> u64 {
        self.ly * self.rm
    }
    /// Work-items per work-group.
    pub fn threads(&self) -> u64 {
        self.lx * self.ly
    }
    /// Work-groups along dimension 0 and 1.
    pub fn groups(&self, c: &Contraction) -> (u64, u64) {
        (c.n0.div_ceil(self.bn()), c.n1.div_ceil(self.bm()))
    }

    /// The tiling for `c`, or `None` when the contraction is too small to gain (fewer
    /// than 64 outputs or 16 steps).
    ///
    /// Many rows (dimension 1 ≥ 32): the first of [`BLOCKS`] that gives
    /// [`GROUPS_WANTED`] work-groups (else the last), 32 steps per stage. Few rows (a
    /// small batch): 64 work-items of one output each, all the rows in one group, and 128
    /// steps per stage, since there are few outputs to spread and the steps are the work
    /// (8 × 512 × 512 on the H200: 8.5 µs, against 15 µs with 256 work-items and 32 steps).
    pub fn choose(c: &Contraction) -> Option<Tiling> {
        if c.n0 * c.n1 < 64 || c.trips < 16 {
            return None;
        }
        if c.n1 < 32 {
            let ly = c.n1.next_power_of_two().min(8);
            return Some(Tiling { lx: 64 / ly, ly, rm: 1, rn: 1, tk: 128, vec4: false });
        }
        let mut t = Tiling { lx: 8, ly: 8, rm: 1, rn: 1, tk: 32, vec4: false };
        for (lx, ly, rm, rn) in BLOCKS {
            t = Tiling { lx, ly, rm, rn, tk: 32, vec4: false };
            let (g0, g1) = t.groups(c);
            if g0 * g1 >= GROUPS_WANTED {
                break;
            }
        }
        // 4 × 4 blocks over whole work-group tiles read their slices as vec4s.
        t.vec4 = t.rm == 4 && t.rn == 4 && c.n0.is_multiple_of(t.bn()) && c.n1.is_multiple_of(t.bm());
        Some(t)
    }
}

/// Fresh value names (`%v0`, `%v1`, ...): every name is defined once per kernel.
pub(super) struct Names(pub(super) u32);

impl Names {
    pub(super) fn next(&mut self) -> String {
        self.0 += 1;
        format!("%v{}", self.0)
    }
}

/// Writes `%r = const x : u32` and returns `%r` (constants are re-stated where used: the
/// text stays local and LLVM folds them).
pub(super) fn konst(out: &mut String, n: &mut Names, x: u64) -> String {
    let r = n.next();
    let _ = writeln!(out, "{r} = const {} : u32", x & 0xffff_ffff);
    r
}

pub(super) fn bin(out: &mut String, n: &mut Names, op: &str, a: &str, b: &str) -> String {
    let r = n.next();
    let _ = writeln!(out, "{r} = {op} {a}, {b}");
    r
}

/// `base + coef * x`, skipping the multiply for 0 and 1.
fn axpy(out: &mut String, n: &mut Names, base: &str, coef: i128, x: &str) -> String {
    match coef {
        0 => base.to_string(),
        1 => bin(out, n, "add", base, x),
        _ => {
            let k = konst(out, n, coef as u64);
            let m = bin(out, n, "mul", x, &k);
            bin(out, n, "add", base, &m)
        }
    }
}

/// The element index of `acc` at dimension-0 id `j`, dimension-1 id `i`, trip `t`
/// (each `None` when the access does not use it).
pub(super) fn index(
    out: &mut String,
    n: &mut Names,
    acc: &Access,
    j: Option<&str>,
    i: Option<&str>,
    t: Option<&str>,
) -> String {
    let mut s = konst(out, n, acc.index.c as u64);
    if let Some(j) = j {
        s = axpy(out, n, &s, acc.index.g0, j);
    }
    if let Some(i) = i {
        s = axpy(out, n, &s, acc.index.g1, i);
    }
    if let Some(t) = t {
        s = axpy(out, n, &s, acc.index.t, t);
    }
    s
}

/// The text of the kernel `name` computing `c` with tiling `t`. Its parameters are the
/// original kernel's (`params`, named `%p0`, `%p1`, ...), so the node keeps its arguments:
/// an update may rebind its buffers (docs/passes.md, tile-contractions).
pub fn kernel_text(name: &str, c: &Contraction, t: &Tiling, params: &[ParamType]) -> String {
    let header: Vec<(String, ParamType)> = params.iter().enumerate().map(|(i, &ty)| (param(i as u32), ty)).collect();
    let result = param(c.c.param);
    let emit = |o: &mut String, _: &mut Names, at: &str, v: &str| {
        let _ = writeln!(o, "store {result}[{at}], {v}");
    };
    kernel_text_with(name, c, t, &Ending { header, emit: &emit })
}

/// How a tiled kernel is declared and what it does with each finished output.
pub(super) struct Ending<'a> {
    /// Its parameters, in order: names and types.
    pub header: Vec<(String, ParamType)>,
    /// Emits what happens to the finished output `value` whose result index is `at`
    /// (a store into the result parameter, or an epilogue's calls).
    pub emit: Output<'a>,
}

/// Emits the handling of one finished output: (text, names, result index, value).
pub(super) type Output<'a> = &'a dyn Fn(&mut String, &mut Names, &str, &str);

/// [`kernel_text`] with another parameter list and output handling ([`Ending`]).
pub(super) fn kernel_text_with(name: &str, c: &Contraction, t: &Tiling, end: &Ending) -> String {
    if t.vec4 {
        return super::vec4::kernel_text(name, c, t, end);
    }
    let mut o = String::new();
    let mut n = Names(0);
    header(&mut o, name, &end.header);
    let (bm, bn, tk) = (t.bm(), t.bn(), t.tk);
    // Consecutive work-items copy consecutive steps when the step moves the index by one
    // (coalesced reads); then their writes are `pitch` floats apart, and the pitch is padded
    // by one so that they fall in different banks.
    let a_along = c.a.index.t == 1;
    let b_along = c.b.index.t == 1 && c.b.index.g0 != 1;
    let pitch = |rows: u64, along: bool| if along { rows + 1 } else { rows };
    let (pa, pb) = (pitch(bm, a_along), pitch(bn, b_along));
    let _ = writeln!(o, "%as = local f32[{}]", pa * tk);
    let _ = writeln!(o, "%bs = local f32[{}]", pb * tk);
    let (tid, col0, row0) = prologue(&mut o, &mut n, c, t);
    let p = Params { c, t, tid: &tid, col0: &col0, row0: &row0, pa, pb };
    let a = Slice { along_k: a_along, rows: bm, pitch: pa, tk, limit: c.n1, origin: &row0, acc: &c.a, row_dim: 1 };
    let b = Slice { along_k: b_along, rows: bn, pitch: pb, tk, limit: c.n0, origin: &col0, acc: &c.b, row_dim: 0 };
    let ca = chunks(&mut o, &mut n, &p, &a);
    let cb = chunks(&mut o, &mut n, &p, &b);
    let load = |o: &mut String, n: &mut Names, base: &str, steps: u64| {
        let mut v = load_chunks(o, n, &a, &ca, base, steps);
        v.extend(load_chunks(o, n, &b, &cb, base, steps));
        v
    };
    let store_slices = |o: &mut String, n: &mut Names, v: &[String]| {
        store_chunks(o, n, &a, &ca, &v[..ca.len()]);
        store_chunks(o, n, &b, &cb, &v[ca.len()..]);
    };
    let steps = |o: &mut String, n: &mut Names, steps: u64, accs: &[String]| compute(o, n, &p, steps, accs);
    let ops = StageOps { ty: "f32", zero: "%fz", load: &load, store: &store_slices, compute: &steps };
    let accs = stage_loop(&mut o, &mut n, c.trips, tk, (t.rm * t.rn) as usize, &ops);
    store(&mut o, &mut n, &p, &accs, end.emit);
    o.push_str("}\n");
    indent(&o)
}

/// `kernel @name(%p0: ..., %p1: ...) {`.
pub(super) fn header(o: &mut String, name: &str, params: &[(String, ParamType)]) {
    let list: Vec<String> = params.iter().map(|(name, ty)| format!("{name}: {ty}")).collect();
    let _ = writeln!(o, "kernel @{name}({}) {{", list.join(", "));
}

/// The name of parameter `index` in the tiled kernel.
pub(super) fn param(index: u32) -> String {
    format!("%p{index}")
}

/// The ids, constants and block origins every tiling starts with, after its slices are
/// declared: returns (`tid`, `col0`, `row0`).
pub(super) fn prologue(o: &mut String, n: &mut Names, c: &Contraction, t: &Tiling) -> (String, String, String) {
    let _ = writeln!(o, "%tx = local_id 0\n%ty = local_id 1\n%gx = group_id 0\n%gy = group_id 1");
    let _ = writeln!(o, "%zero = const 0 : u32\n%one = const 1 : u32\n%fz = const 0.0 : f32");
    let _ = writeln!(o, "%init = const {:?} : f32", f64::from(c.init));
    let k = konst(o, n, t.lx);
    let tid0 = bin(o, n, "mul", "%ty", &k);
    let tid = bin(o, n, "add", &tid0, "%tx");
    let k = konst(o, n, t.bn());
    let col0 = bin(o, n, "mul", "%gx", &k);
    let k = konst(o, n, t.bm());
    let row0 = bin(o, n, "mul", "%gy", &k);
    (tid, col0, row0)
}

/// Emits `steps` steps from the slices on the running values; returns the new ones.
pub(super) type Compute<'a> = &'a dyn Fn(&mut String, &mut Names, u64, &[String]) -> Vec<String>;
/// Emits a work-item's loads of the stage starting at step `base`, `steps` long.
pub(super) type Load<'a> = &'a dyn Fn(&mut String, &mut Names, &str, u64) -> Vec<String>;

/// How a tiling moves its slices, for [`stage_loop`].
pub(super) struct StageOps<'a> {
    /// Type of a value a work-item carries from one stage's loads to its stores (`f32`,
    /// `vec4<f32>`), and its zero.
    pub ty: &'static str,
    pub zero: &'static str,
    /// The work-item's loads of the stage starting at step `base`, `steps` long.
    pub load: Load<'a>,
    /// Stores loaded values into the slices.
    pub store: &'a dyn Fn(&mut String, &mut Names, &[String]),
    /// Runs `steps` steps from the slices on the running values; returns the new ones.
    pub compute: Compute<'a>,
}

/// The stages every tiling runs: `trips / tk` full stages in a loop, then the `trips mod tk`
/// remaining steps; returns the `regs` running values.
///
/// Software pipelining: the loads of stage kt + 1 are issued before the steps of stage kt
/// run, so their latency hides behind the arithmetic; the values wait in registers (carried)
/// until the slices are free again.
pub(super) fn stage_loop(
    o: &mut String,
    n: &mut Names,
    trips: u64,
    tk: u64,
    regs: usize,
    ops: &StageOps,
) -> Vec<String> {
    let (full, rest) = (trips / tk, trips % tk);
    let mut accs: Vec<String> = vec!["%init".to_string(); regs];
    if full > 0 {
        let pre = (ops.load)(o, n, "%zero", tk);
        let carried: Vec<String> = (0..regs).map(|r| format!("%r{r}")).collect();
        let staged: Vec<String> = (0..pre.len()).map(|r| format!("%l{r}")).collect();
        let results: Vec<String> = (0..regs + pre.len()).map(|r| format!("%s{r}")).collect();
        let carry = carried
            .iter()
            .map(|r| format!("{r} = %init"))
            .chain(staged.iter().zip(&pre).map(|(l, v)| format!("{l} = {v}")))
            .collect::<Vec<_>>()
            .join(", ");
        let nt = konst(o, n, full);
        let _ = writeln!(o, "{} = for %kt = %zero to {nt} step %one carry({carry}) {{", results.join(", "));
        (ops.store)(o, n, &staged);
        let _ = writeln!(o, "group_barrier");
        let next = bin(o, n, "add", "%kt", "%one");
        let more = bin(o, n, "lt", &next, &nt);
        let k = konst(o, n, tk);
        let base = bin(o, n, "mul", &next, &k);
        let fetched: Vec<String> = (0..staged.len()).map(|_| n.next()).collect();
        let types = vec![ops.ty; fetched.len()].join(", ");
        let _ = writeln!(o, "{} = if {more} -> {types} {{", fetched.join(", "));
        let loaded = (ops.load)(o, n, &base, tk);
        let zeros = vec![ops.zero; loaded.len()].join(", ");
        let _ = writeln!(o, "yield {}\n}} else {{\nyield {zeros}\n}}", loaded.join(", "));
        let stepped = (ops.compute)(o, n, tk, &carried);
        let _ = writeln!(o, "group_barrier");
        let _ = writeln!(o, "yield {}, {}\n}}", stepped.join(", "), fetched.join(", "));
        accs = results[..regs].to_vec();
    }
    if rest > 0 {
        let base = konst(o, n, full * tk);
        let values = (ops.load)(o, n, &base, rest);
        (ops.store)(o, n, &values);
        let _ = writeln!(o, "group_barrier");
        accs = (ops.compute)(o, n, rest, &accs);
    }
    accs
}

/// `acc` combined with `a · b` as the contraction combines (`fma`, or `mul` then `add`).
pub(super) fn combine(o: &mut String, n: &mut Names, c: &Contraction, a: &str, b: &str, acc: &str) -> String {
    let v = n.next();
    match c.combine {
        Combine::Fma => {
            let _ = writeln!(o, "{v} = fma {a}, {b}, {acc}");
        }
        Combine::MulAdd => {
            let m = bin(o, n, "mul", a, b);
            let _ = writeln!(o, "{v} = add {acc}, {m}");
        }
    }
    v
}

struct Params<'a> {
    c: &'a Contraction,
    t: &'a Tiling,
    tid: &'a str,
    col0: &'a str,
    row0: &'a str,
    /// Floats between two steps of the `a` (`b`) slice in work-group memory.
    pa: u64,
    pb: u64,
}

/// The `steps` trip steps of one stage, from the slices in work-group memory, on the
/// running values `accs`; returns the new running values.
fn compute(o: &mut String, n: &mut Names, p: &Params, steps: u64, accs: &[String]) -> Vec<String> {
    let (c, t) = (p.c, p.t);
    let mut accs = accs.to_vec();
    for kk in 0..steps {
        let a: Vec<String> = (0..t.rm)
            .map(|r| {
                let k = konst(o, n, kk * p.pa + r * t.ly);
                let i = bin(o, n, "add", "%ty", &k);
                let v = n.next();
                let _ = writeln!(o, "{v} = load %as[{i}]");
                v
            })
            .collect();
        let b: Vec<String> = (0..t.rn)
            .map(|q| {
                let k = konst(o, n, kk * p.pb + q * t.lx);
                let i = bin(o, n, "add", "%tx", &k);
                let v = n.next();
                let _ = writeln!(o, "{v} = load %bs[{i}]");
                v
            })
            .collect();
        for (r, ar) in a.iter().enumerate() {
            for (q, bq) in b.iter().enumerate() {
                let slot = r * b.len() + q;
                accs[slot] = combine(o, n, c, ar, bq, &accs[slot]);
            }
        }
    }
    accs
}

/// One operand's slice: `rows` outputs along its id dimension × the stage's steps.
struct Slice<'a> {
    /// Consecutive work-items take consecutive steps (the index moves by one per step);
    /// otherwise consecutive rows.
    along_k: bool,
    rows: u64,
    /// Floats between two steps in work-group memory.
    pitch: u64,
    /// Steps per full stage.
    tk: u64,
    /// The launch size of the id dimension (rows past it are not loaded).
    limit: u64,
    /// First id of the work-group's block.
    origin: &'a str,
    acc: &'a Access,
    /// 1 for `a` (dimension-1 ids), 0 for `b`.
    row_dim: u8,
}

/// One work-item's share of a slice copy: which element it moves, where it goes in
/// work-group memory, and its guards. The same for every stage, so computed once.
struct Chunk {
    /// The step within the stage.
    kk: String,
    /// The id (row or column) it loads.
    id: String,
    /// Its place in work-group memory.
    at: String,
    /// `e < total`, when the last round of work-items overshoots the slice.
    partial: Option<String>,
    /// `id < limit`, when the launch ends inside the block.
    inside: Option<String>,
}

fn chunks(o: &mut String, n: &mut Names, p: &Params, s: &Slice) -> Vec<Chunk> {
    let t = p.t;
    let total = s.rows * t.tk;
    let mut out = Vec::new();
    let mut e_base = 0;
    while e_base < total {
        let k = konst(o, n, e_base);
        let e = bin(o, n, "add", p.tid, &k);
        let (kk, rr) = if s.along_k {
            let k = konst(o, n, t.tk);
            (bin(o, n, "rem", &e, &k), bin(o, n, "div", &e, &k))
        } else {
            let k = konst(o, n, s.rows);
            (bin(o, n, "div", &e, &k), bin(o, n, "rem", &e, &k))
        };
        let id = bin(o, n, "add", s.origin, &rr);
        let k = konst(o, n, s.pitch);
        let m = bin(o, n, "mul", &kk, &k);
        let at = bin(o, n, "add", &m, &rr);
        let partial = (e_base + t.threads() > total).then(|| {
            let k = konst(o, n, total);
            bin(o, n, "lt", &e, &k)
        });
        let inside = (!s.limit.is_multiple_of(s.rows)).then(|| {
            let k = konst(o, n, s.limit);
            bin(o, n, "lt", &id, &k)
        });
        out.push(Chunk { kk, id, at, partial, inside });
        e_base += t.threads();
    }
    out
}

/// Loads each chunk's element of the stage starting at step `base` (`steps` long); a
/// guarded-off element reads as 0 (it is never used: its row is not stored, its step not
/// run, or it is past the slice).
fn load_chunks(o: &mut String, n: &mut Names, s: &Slice, chunks: &[Chunk], base: &str, steps: u64) -> Vec<String> {
    let param = param(s.acc.param);
    let mut out = Vec::new();
    for ch in chunks {
        let step = bin(o, n, "add", base, &ch.kk);
        let (j, i) = if s.row_dim == 1 { (None, Some(ch.id.as_str())) } else { (Some(ch.id.as_str()), None) };
        let src = index(o, n, s.acc, j, i, Some(&step));
        let mut guards: Vec<String> = ch.partial.iter().chain(ch.inside.iter()).cloned().collect();
        if steps < s.tk {
            let k = konst(o, n, steps);
            guards.push(bin(o, n, "lt", &ch.kk, &k));
        }
        let v = n.next();
        match all_of(o, n, guards) {
            None => {
                let _ = writeln!(o, "{v} = load {param}[{src}]");
            }
            Some(cond) => {
                let l = n.next();
                let _ = writeln!(
                    o,
                    "{v} = if {cond} -> f32 {{\n{l} = load {param}[{src}]\nyield {l}\n}} else {{\nyield %fz\n}}"
                );
            }
        }
        out.push(v);
    }
    out
}

/// Stores loaded chunk values into the slice.
fn store_chunks(o: &mut String, n: &mut Names, s: &Slice, chunks: &[Chunk], values: &[String]) {
    let _ = n;
    let dest = if s.row_dim == 1 { "%as" } else { "%bs" };
    for (ch, v) in chunks.iter().zip(values) {
        match &ch.partial {
            None => {
                let _ = writeln!(o, "store {dest}[{}], {v}", ch.at);
            }
            Some(g) => {
                let _ = writeln!(o, "if {g} {{\nstore {dest}[{}], {v}\n}}", ch.at);
            }
        }
    }
}

/// Hands the running values to `emit` at their outputs, skipping those past the launch.
fn store(o: &mut String, n: &mut Names, p: &Params, accs: &[String], emit: Output) {
    let (c, t) = (p.c, p.t);
    for r in 0..t.rm {
        let k = konst(o, n, r * t.ly);
        let ry = bin(o, n, "add", "%ty", &k);
        let i = bin(o, n, "add", p.row0, &ry);
        for q in 0..t.rn {
            let k = konst(o, n, q * t.lx);
            let qx = bin(o, n, "add", "%tx", &k);
            let j = bin(o, n, "add", p.col0, &qx);
            let dst = index(o, n, &c.c, Some(&j), Some(&i), None);
            let v = &accs[(r * t.rn + q) as usize];
            let mut guards = Vec::new();
            if !c.n1.is_multiple_of(t.bm()) {
                let k = konst(o, n, c.n1);
                guards.push(bin(o, n, "lt", &i, &k));
            }
            if !c.n0.is_multiple_of(t.bn()) {
                let k = konst(o, n, c.n0);
                guards.push(bin(o, n, "lt", &j, &k));
            }
            match all_of(o, n, guards) {
                None => emit(o, n, &dst, v),
                Some(g) => {
                    let _ = writeln!(o, "if {g} {{");
                    emit(o, n, &dst, v);
                    let _ = writeln!(o, "}}");
                }
            }
        }
    }
}

/// The conjunction of `guards` (`and` of each in turn), or `None` when there are none.
pub(super) fn all_of(o: &mut String, n: &mut Names, guards: Vec<String>) -> Option<String> {
    guards.into_iter().reduce(|c, g| bin(o, n, "and", &c, &g))
}

/// Indents the generated text by nesting depth, as the printer would.
pub(super) fn indent(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut depth: usize = 0;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('}') {
            depth = depth.saturating_sub(1);
        }
        for _ in 0..depth {
            out.push_str("  ");
        }
        out.push_str(l);
        out.push('\n');
        if l.ends_with('{') {
            depth += 1;
        }
    }
    out
}
