//! The tiled kernel with `vec4` slices: each work-item owns a 4 × 4 block of consecutive
//! outputs, rows `row0 + 4·ty + r` and columns `col0 + 4·tx + q` (tiled.rs strides them by
//! the work-group size), so in work-group memory its four rows of `a` and four columns of
//! `b` at one step are one `vec4<f32>` each. A step then reads two 16-byte values for its 16
//! `fma`s where the strided layout reads eight floats: with 4 × 4 blocks the strided inner
//! loop is bound by work-group memory bandwidth (two `fma` per load, where a
//! multiprocessor issues four times as many `fma` lanes as it reads floats).
//!
//! The slices are copied as `vec4`s too: each work-item builds one from four global loads
//! (four rows of `a`, or four columns of `b`, at one step) and stores it with one 16-byte
//! store. A slice whose consecutive work-items move along the steps is padded by one `vec4`
//! per step, so that their stores fall in different banks. Used only when the launch is a
//! whole number of work-group tiles (no partial tiles to guard per lane).
//!
//! The loop nest is tiled.rs's (stages of `tk` steps, the next stage's loads issued before
//! this stage's steps, a shorter last stage), and each output sees the same steps in the
//! same order from the same initial value with the same combine: bit-identical to the loop.

use super::recognise::{Access, Contraction};
use super::tiled::{
    all_of, bin, combine, header, indent, index, konst, param, prologue, stage_loop, Ending, Names, Output, StageOps,
    Tiling,
};
use std::fmt::Write as _;

/// One operand's slice in work-group memory, in `vec4`s.
struct Slice<'a> {
    /// Consecutive work-items take consecutive steps; otherwise consecutive `vec4`s of rows.
    along_k: bool,
    /// Rows (outputs along its id dimension) in the work-group's block.
    rows: u64,
    /// `vec4`s between two steps in work-group memory.
    pitch4: u64,
    origin: &'a str,
    acc: &'a Access,
    /// `%as` and `a`'s parameter (dimension-1 ids), or `%bs` and `b`'s.
    local: &'static str,
    param: String,
    row_dim: u8,
}

/// One work-item's share of a stage's slice copy: the step, the first of its four ids, its
/// place, and whether it is past the slice (the last round of work-items).
struct Chunk {
    kk: String,
    id: String,
    at: String,
    partial: Option<String>,
}

/// The text of the kernel `name` computing `c` with the `vec4` tiling `t` (`t.rm == t.rn
/// == 4`, whole tiles), declared and ending as `end` says.
pub(super) fn kernel_text(name: &str, c: &Contraction, t: &Tiling, end: &Ending) -> String {
    let mut o = String::new();
    let mut n = Names(0);
    header(&mut o, name, &end.header);
    let (bm, bn, tk) = (t.bm(), t.bn(), t.tk);
    let a_along = c.a.index.t == 1;
    let b_along = c.b.index.t == 1 && c.b.index.g0 != 1;
    let pitch4 = |rows: u64, along: bool| rows / 4 + u64::from(along);
    let (pa4, pb4) = (pitch4(bm, a_along), pitch4(bn, b_along));
    let _ = writeln!(o, "%as = local vec4<f32>[{}]", pa4 * tk);
    let _ = writeln!(o, "%bs = local vec4<f32>[{}]", pb4 * tk);
    let (tid, col0, row0) = prologue(&mut o, &mut n, c, t);
    let _ = writeln!(o, "%vz = const 0.0 : vec4<f32>");
    let a = Slice {
        along_k: a_along,
        rows: bm,
        pitch4: pa4,
        origin: &row0,
        acc: &c.a,
        local: "%as",
        param: param(c.a.param),
        row_dim: 1,
    };
    let b = Slice {
        along_k: b_along,
        rows: bn,
        pitch4: pb4,
        origin: &col0,
        acc: &c.b,
        local: "%bs",
        param: param(c.b.param),
        row_dim: 0,
    };
    let ca = chunks(&mut o, &mut n, t, &tid, &a);
    let cb = chunks(&mut o, &mut n, t, &tid, &b);
    let load = |o: &mut String, n: &mut Names, base: &str, steps: u64| {
        let mut v = load_chunks(o, n, &a, &ca, base, steps, tk);
        v.extend(load_chunks(o, n, &b, &cb, base, steps, tk));
        v
    };
    let store_slices = |o: &mut String, _: &mut Names, v: &[String]| {
        store_chunks(o, &a, &ca, &v[..ca.len()]);
        store_chunks(o, &b, &cb, &v[ca.len()..]);
    };
    let steps = |o: &mut String, n: &mut Names, steps: u64, accs: &[String]| compute(o, n, c, pa4, pb4, steps, accs);
    let ops = StageOps { ty: "vec4<f32>", zero: "%vz", load: &load, store: &store_slices, compute: &steps };
    let accs = stage_loop(&mut o, &mut n, c.trips, tk, 16, &ops);
    store(&mut o, &mut n, c, &row0, &col0, &accs, end.emit);
    o.push_str("}\n");
    indent(&o)
}

/// Each work-item's `vec4`s of a stage's slice (`rows / 4 × tk` of them, in rounds of the
/// work-group size).
fn chunks(o: &mut String, n: &mut Names, t: &Tiling, tid: &str, s: &Slice) -> Vec<Chunk> {
    let quads = s.rows / 4;
    let total = quads * t.tk;
    let mut out = Vec::new();
    let mut e_base = 0;
    while e_base < total {
        let k = konst(o, n, e_base);
        let e = bin(o, n, "add", tid, &k);
        let (kk, q) = if s.along_k {
            let k = konst(o, n, t.tk);
            (bin(o, n, "rem", &e, &k), bin(o, n, "div", &e, &k))
        } else {
            let k = konst(o, n, quads);
            (bin(o, n, "div", &e, &k), bin(o, n, "rem", &e, &k))
        };
        let four = konst(o, n, 4);
        let r = bin(o, n, "mul", &q, &four);
        let id = bin(o, n, "add", s.origin, &r);
        let k = konst(o, n, s.pitch4);
        let m = bin(o, n, "mul", &kk, &k);
        let at = bin(o, n, "add", &m, &q);
        let partial = (e_base + t.threads() > total).then(|| {
            let k = konst(o, n, total);
            bin(o, n, "lt", &e, &k)
        });
        out.push(Chunk { kk, id, at, partial });
        e_base += t.threads();
    }
    out
}

/// Each chunk's `vec4` of the stage starting at step `base` (`steps` of `tk` long): four
/// global loads; a guarded-off chunk is zeros (never used).
fn load_chunks(
    o: &mut String,
    n: &mut Names,
    s: &Slice,
    chunks: &[Chunk],
    base: &str,
    steps: u64,
    tk: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    for ch in chunks {
        let step = bin(o, n, "add", base, &ch.kk);
        let mut guards: Vec<String> = ch.partial.iter().cloned().collect();
        if steps < tk {
            let k = konst(o, n, steps);
            guards.push(bin(o, n, "lt", &ch.kk, &k));
        }
        let cond = all_of(o, n, guards);
        let v = n.next();
        if let Some(cond) = &cond {
            let _ = writeln!(o, "{v} = if {cond} -> vec4<f32> {{");
        }
        let mut lanes = Vec::with_capacity(4);
        for u in 0..4u64 {
            let k = konst(o, n, u);
            let id = bin(o, n, "add", &ch.id, &k);
            let (j, i) = if s.row_dim == 1 { (None, Some(id.as_str())) } else { (Some(id.as_str()), None) };
            let src = index(o, n, s.acc, j, i, Some(&step));
            let l = n.next();
            let _ = writeln!(o, "{l} = load {}[{src}]", s.param);
            lanes.push(l);
        }
        match cond {
            None => {
                let _ = writeln!(o, "{v} = vec {}", lanes.join(", "));
            }
            Some(_) => {
                let w = n.next();
                let _ = writeln!(o, "{w} = vec {}\nyield {w}\n}} else {{\nyield %vz\n}}", lanes.join(", "));
            }
        }
        out.push(v);
    }
    out
}

fn store_chunks(o: &mut String, s: &Slice, chunks: &[Chunk], values: &[String]) {
    for (ch, v) in chunks.iter().zip(values) {
        match &ch.partial {
            None => {
                let _ = writeln!(o, "store {}[{}], {v}", s.local, ch.at);
            }
            Some(g) => {
                let _ = writeln!(o, "if {g} {{\nstore {}[{}], {v}\n}}", s.local, ch.at);
            }
        }
    }
}

/// The `steps` steps of one stage on the 16 running values (row-major: `r · 4 + q`).
fn compute(
    o: &mut String,
    n: &mut Names,
    c: &Contraction,
    pa4: u64,
    pb4: u64,
    steps: u64,
    accs: &[String],
) -> Vec<String> {
    let mut accs = accs.to_vec();
    for kk in 0..steps {
        let k = konst(o, n, kk * pa4);
        let i = bin(o, n, "add", "%ty", &k);
        let av = n.next();
        let _ = writeln!(o, "{av} = load %as[{i}]");
        let k = konst(o, n, kk * pb4);
        let i = bin(o, n, "add", "%tx", &k);
        let bv = n.next();
        let _ = writeln!(o, "{bv} = load %bs[{i}]");
        let lanes = |o: &mut String, n: &mut Names, v: &str| -> Vec<String> {
            (0..4)
                .map(|u| {
                    let x = n.next();
                    let _ = writeln!(o, "{x} = extract {v}, {u}");
                    x
                })
                .collect()
        };
        let a = lanes(o, n, &av);
        let b = lanes(o, n, &bv);
        for (r, ar) in a.iter().enumerate() {
            for (q, bq) in b.iter().enumerate() {
                let slot = r * 4 + q;
                accs[slot] = combine(o, n, c, ar, bq, &accs[slot]);
            }
        }
    }
    accs
}

/// Hands the 16 running values to `emit` at rows `row0 + 4·ty + r`, columns `col0 + 4·tx + q`.
fn store(o: &mut String, n: &mut Names, c: &Contraction, row0: &str, col0: &str, accs: &[String], emit: Output) {
    let four = konst(o, n, 4);
    let ty4 = bin(o, n, "mul", "%ty", &four);
    let tx4 = bin(o, n, "mul", "%tx", &four);
    let rbase = bin(o, n, "add", row0, &ty4);
    let cbase = bin(o, n, "add", col0, &tx4);
    for r in 0..4u64 {
        let k = konst(o, n, r);
        let i = bin(o, n, "add", &rbase, &k);
        for q in 0..4u64 {
            let k = konst(o, n, q);
            let j = bin(o, n, "add", &cbase, &k);
            let dst = index(o, n, &c.c, Some(&j), Some(&i), None);
            emit(o, n, &dst, &accs[(r * 4 + q) as usize]);
        }
    }
}
