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
}

/// Work-groups the choice aims for at least: enough to give every multiprocessor of a
/// large GPU (132 on an H100) a group or two without knowing the device at compile time.
const GROUPS_WANTED: u64 = 256;

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

    /// The tiling for `c`: 256 work-items, rows matched to a short dimension 1, and the
    /// largest register block (4 × 4 down to 1 × 1) that still gives [`GROUPS_WANTED`]
    /// work-groups; `None` when the contraction is too small to gain (fewer than 64
    /// outputs or 16 steps).
    pub fn choose(c: &Contraction) -> Option<Tiling> {
        if c.n0 * c.n1 < 64 || c.trips < 16 {
            return None;
        }
        let ly = c.n1.next_power_of_two().clamp(1, 16);
        let lx = 256 / ly;
        let blocks: &[(u64, u64)] =
            if ly < 16 { &[(1, 4), (1, 2), (1, 1)] } else { &[(4, 4), (2, 4), (4, 2), (2, 2), (1, 2), (1, 1)] };
        let mut t = Tiling { lx, ly, rm: 1, rn: 1, tk: 16 };
        for &(rm, rn) in blocks {
            t = Tiling { lx, ly, rm, rn, tk: 16 };
            let (g0, g1) = t.groups(c);
            if g0 * g1 >= GROUPS_WANTED {
                break;
            }
        }
        // Short dimension 1: fewer outputs per group, so each stage copies more steps.
        if t.bm() * 4 <= t.threads() {
            t.tk = 32;
        }
        Some(t)
    }
}

/// Fresh value names (`%v0`, `%v1`, ...): every name is defined once per kernel.
struct Names(u32);

impl Names {
    fn next(&mut self) -> String {
        self.0 += 1;
        format!("%v{}", self.0)
    }
}

/// Writes `%r = const x : u32` and returns `%r` (constants are re-stated where used: the
/// text stays local and LLVM folds them).
fn konst(out: &mut String, n: &mut Names, x: u64) -> String {
    let r = n.next();
    let _ = writeln!(out, "{r} = const {} : u32", x & 0xffff_ffff);
    r
}

fn bin(out: &mut String, n: &mut Names, op: &str, a: &str, b: &str) -> String {
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
fn index(out: &mut String, n: &mut Names, acc: &Access, j: Option<&str>, i: Option<&str>, t: Option<&str>) -> String {
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

/// The text of the kernel `name` computing `c` with tiling `t`. Parameters: `%pa` and
/// `%pb` (read) and `%pc` (with the original result parameter's access mode `c_mode`).
pub fn kernel_text(name: &str, c: &Contraction, t: &Tiling, c_mode: &str) -> String {
    let mut o = String::new();
    let mut n = Names(0);
    let _ = writeln!(o, "kernel @{name}(%pa: buf<f32, read>, %pb: buf<f32, read>, %pc: buf<f32, {c_mode}>) {{");
    let (bm, bn, tk) = (t.bm(), t.bn(), t.tk);
    let _ = writeln!(o, "%as = local f32[{}]", bm * tk);
    let _ = writeln!(o, "%bs = local f32[{}]", bn * tk);
    let _ = writeln!(o, "%tx = local_id 0\n%ty = local_id 1\n%gx = group_id 0\n%gy = group_id 1");
    let _ = writeln!(o, "%zero = const 0 : u32\n%one = const 1 : u32");
    let _ = writeln!(o, "%init = const {:?} : f32", f64::from(c.init));
    let k = konst(&mut o, &mut n, t.lx);
    let tid0 = bin(&mut o, &mut n, "mul", "%ty", &k);
    let tid = bin(&mut o, &mut n, "add", &tid0, "%tx");
    let k = konst(&mut o, &mut n, bn);
    let col0 = bin(&mut o, &mut n, "mul", "%gx", &k);
    let k = konst(&mut o, &mut n, bm);
    let row0 = bin(&mut o, &mut n, "mul", "%gy", &k);
    let p = Params { c, t, tid: &tid, col0: &col0, row0: &row0 };
    let full = c.trips / tk;
    let rest = c.trips % tk;
    let regs = (t.rm * t.rn) as usize;
    let mut accs: Vec<String> = vec!["%init".to_string(); regs];
    if full > 0 {
        let carried: Vec<String> = (0..regs).map(|r| format!("%r{r}")).collect();
        let results: Vec<String> = (0..regs).map(|r| format!("%s{r}")).collect();
        let carry = carried.iter().map(|r| format!("{r} = %init")).collect::<Vec<_>>().join(", ");
        let nt = konst(&mut o, &mut n, full);
        let _ = writeln!(o, "{} = for %kt = %zero to {nt} step %one carry({carry}) {{", results.join(", "));
        let k = konst(&mut o, &mut n, tk);
        let base = bin(&mut o, &mut n, "mul", "%kt", &k);
        let next = stage(&mut o, &mut n, &p, &base, tk, &carried);
        let _ = writeln!(o, "yield {}\n}}", next.join(", "));
        accs = results;
    }
    if rest > 0 {
        let base = konst(&mut o, &mut n, full * tk);
        accs = stage(&mut o, &mut n, &p, &base, rest, &accs);
    }
    store(&mut o, &mut n, &p, &accs);
    o.push_str("}\n");
    indent(&o)
}

struct Params<'a> {
    c: &'a Contraction,
    t: &'a Tiling,
    tid: &'a str,
    col0: &'a str,
    row0: &'a str,
}

/// One stage: copy `steps` trip steps starting at `base` into work-group memory, then run
/// them on the running values `accs`; returns the new running values.
fn stage(o: &mut String, n: &mut Names, p: &Params, base: &str, steps: u64, accs: &[String]) -> Vec<String> {
    let (c, t) = (p.c, p.t);
    let (bm, bn) = (t.bm(), t.bn());
    // The `a` slice: bm rows × tk steps, stored at as[kk * bm + rr].
    let along_k = c.a.index.t == 1;
    copy_slice(o, n, p, base, steps, Slice { along_k, rows: bm, limit: c.n1, origin: p.row0, acc: &c.a, row_dim: 1 });
    let along_k = c.b.index.t == 1 && c.b.index.g0 != 1;
    copy_slice(o, n, p, base, steps, Slice { along_k, rows: bn, limit: c.n0, origin: p.col0, acc: &c.b, row_dim: 0 });
    let _ = writeln!(o, "group_barrier");
    let mut accs = accs.to_vec();
    for kk in 0..steps {
        let a: Vec<String> = (0..t.rm)
            .map(|r| {
                let k = konst(o, n, kk * bm + r * t.ly);
                let i = bin(o, n, "add", "%ty", &k);
                let v = n.next();
                let _ = writeln!(o, "{v} = load %as[{i}]");
                v
            })
            .collect();
        let b: Vec<String> = (0..t.rn)
            .map(|q| {
                let k = konst(o, n, kk * bn + q * t.lx);
                let i = bin(o, n, "add", "%tx", &k);
                let v = n.next();
                let _ = writeln!(o, "{v} = load %bs[{i}]");
                v
            })
            .collect();
        for r in 0..t.rm as usize {
            for q in 0..t.rn as usize {
                let slot = r * t.rn as usize + q;
                let v = n.next();
                match c.combine {
                    Combine::Fma => {
                        let _ = writeln!(o, "{v} = fma {}, {}, {}", a[r], b[q], accs[slot]);
                    }
                    Combine::MulAdd => {
                        let m = bin(o, n, "mul", &a[r], &b[q]);
                        let _ = writeln!(o, "{v} = add {}, {m}", accs[slot]);
                    }
                }
                accs[slot] = v;
            }
        }
    }
    // Nobody may overwrite the slices until every work-item has read them.
    let _ = writeln!(o, "group_barrier");
    accs
}

/// One operand's slice: `rows` outputs along its id dimension × the stage's steps.
struct Slice<'a> {
    /// Consecutive work-items take consecutive steps (the index moves by one per step);
    /// otherwise consecutive rows.
    along_k: bool,
    rows: u64,
    /// The launch size of the id dimension (rows past it are not loaded).
    limit: u64,
    /// First id of the work-group's block.
    origin: &'a str,
    acc: &'a Access,
    /// 1 for `a` (dimension-1 ids), 0 for `b`.
    row_dim: u8,
}

/// Copies a slice into `%as` (row_dim 1) or `%bs` (row_dim 0) at `[kk * rows + rr]`.
fn copy_slice(o: &mut String, n: &mut Names, p: &Params, base: &str, steps: u64, s: Slice) {
    let t = p.t;
    let total = s.rows * t.tk;
    let dest = if s.row_dim == 1 { "%as" } else { "%bs" };
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
        let step = bin(o, n, "add", base, &kk);
        let mut guards = Vec::new();
        if e_base + t.threads() > total {
            let k = konst(o, n, total);
            guards.push(bin(o, n, "lt", &e, &k));
        }
        if steps < t.tk {
            let k = konst(o, n, steps);
            guards.push(bin(o, n, "lt", &kk, &k));
        }
        if s.limit % s.rows != 0 {
            let k = konst(o, n, s.limit);
            guards.push(bin(o, n, "lt", &id, &k));
        }
        let (j, i) = if s.row_dim == 1 { (None, Some(id.as_str())) } else { (Some(id.as_str()), None) };
        let src = index(o, n, s.acc, j, i, Some(&step));
        let param = if s.row_dim == 1 { "%pa" } else { "%pb" };
        let k = konst(o, n, s.rows);
        let m = bin(o, n, "mul", &kk, &k);
        let at = bin(o, n, "add", &m, &rr);
        let mut cond: Option<String> = None;
        for g in guards {
            cond = Some(match cond {
                None => g,
                Some(c) => bin(o, n, "and", &c, &g),
            });
        }
        match cond {
            None => {
                let v = n.next();
                let _ = writeln!(o, "{v} = load {param}[{src}]\nstore {dest}[{at}], {v}");
            }
            Some(cond) => {
                let v = n.next();
                let _ = writeln!(o, "if {cond} {{\n{v} = load {param}[{src}]\nstore {dest}[{at}], {v}\n}}");
            }
        }
        e_base += t.threads();
    }
}

/// Stores the running values at their outputs, skipping those past the launch.
fn store(o: &mut String, n: &mut Names, p: &Params, accs: &[String]) {
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
            if c.n1 % t.bm() != 0 {
                let k = konst(o, n, c.n1);
                guards.push(bin(o, n, "lt", &i, &k));
            }
            if c.n0 % t.bn() != 0 {
                let k = konst(o, n, c.n0);
                guards.push(bin(o, n, "lt", &j, &k));
            }
            match guards[..] {
                [] => {
                    let _ = writeln!(o, "store %pc[{dst}], {v}");
                }
                [ref g] => {
                    let _ = writeln!(o, "if {g} {{\nstore %pc[{dst}], {v}\n}}");
                }
                [ref g, ref h] => {
                    let both = bin(o, n, "and", g, h);
                    let _ = writeln!(o, "if {both} {{\nstore %pc[{dst}], {v}\n}}");
                }
                _ => {}
            }
        }
    }
}

/// Indents the generated text by nesting depth, as the printer would.
fn indent(text: &str) -> String {
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
