//! Kernel execution on the reference interpreter: numerics against plain Rust computations.

mod interp_support;

use cmdgraph_interp::{FaultKind, InterpError, Interpreter};
use cmdgraph_ir::data::half::f16;
use cmdgraph_ir::types::{Access, LitValue, ScalarType, Type};
use cmdgraph_ir::{Arg, ArgValue, Launch, Module, ParamType};
use interp_support::*;

/// Three saxpy launches chained by edges, each with its own `a`.
#[test]
fn saxpy_chain_matches_rust() {
    let n = 5000;
    let mut m = Module::default();
    let k = add_kernel(&mut m, saxpy_kernel());
    let x = usm(&mut m, "x", F32, n);
    let y = usm(&mut m, "y", F32, n);
    let mut g = GB::new("main");
    let a = [2.0f32, -0.5, 3.25];
    let k0 = g.node("k0", kernel_node(k, range(&[n]), vec![ptr(x), ptr(y), f32_arg(a[0] as f64)]), &[]);
    let k1 = g.node("k1", kernel_node(k, range(&[n]), vec![ptr(x), ptr(y), f32_arg(a[1] as f64)]), &[k0]);
    g.node("k2", kernel_node(k, range(&[n]), vec![ptr(x), ptr(y), f32_arg(a[2] as f64)]), &[k1]);
    add_graph(&mut m, g.finish());

    let xs = inputs(n as usize, 1);
    let mut ys = inputs(n as usize, 2);
    let mut interp = Interpreter::new(&m).unwrap();
    interp.bind_as("x", &xs).unwrap();
    interp.bind_as("y", &ys).unwrap();
    let exec = interp.finalize("main").unwrap();
    let stats = interp.run(exec).unwrap();
    assert_eq!(stats.order, vec!["k0", "k1", "k2"]);
    assert_eq!(stats.work_items, 3 * n);
    for a in a {
        for (y, x) in ys.iter_mut().zip(&xs) {
            *y += a * *x;
        }
    }
    assert_eq!(interp.read_as::<f32>("y").unwrap(), ys);
}

/// A 5-point stencil over a 2D range, with `if`/`else` on the border.
#[test]
fn stencil_2d_matches_rust() {
    let (h, w) = (13u64, 17u64);
    let mut kb = KB::new("stencil");
    let inp = kb.buf("in", F32, Access::Read);
    let out = kb.buf("out", F32, Access::Write);
    let r = kb.gid(0);
    let c = kb.gid(1);
    let zero = kb.u32(0);
    let one = kb.u32(1);
    let wv = kb.u32(w as u32);
    let hm1 = kb.u32(h as u32 - 1);
    let wm1 = kb.u32(w as u32 - 1);
    let quarter = kb.f32(0.25);
    let c0 = kb.cmp(Cmp::Gt, r, zero);
    let c1 = kb.cmp(Cmp::Lt, r, hm1);
    let c2 = kb.cmp(Cmp::Gt, c, zero);
    let c3 = kb.cmp(Cmp::Lt, c, wm1);
    let b01 = kb.bin(Bin::And, c0, c1);
    let b23 = kb.bin(Bin::And, c2, c3);
    let interior = kb.bin(Bin::And, b01, b23);
    let row = kb.mul(r, wv);
    let idx = kb.add(row, c);
    kb.if_(
        interior,
        &[],
        |kb| {
            let up = kb.sub(idx, wv);
            let down = kb.add(idx, wv);
            let left = kb.sub(idx, one);
            let right = kb.add(idx, one);
            let vu = kb.load(inp, up);
            let vd = kb.load(inp, down);
            let vl = kb.load(inp, left);
            let vr = kb.load(inp, right);
            let vc = kb.load(inp, idx);
            let s1 = kb.add(vu, vd);
            let s2 = kb.add(s1, vl);
            let s3 = kb.add(s2, vr);
            let avg = kb.mul(s3, quarter);
            let res = kb.sub(avg, vc);
            kb.store(out, idx, res);
            vec![]
        },
        Some(Box::new(|kb: &mut KB| {
            let v = kb.load(inp, idx);
            kb.store(out, idx, v);
            vec![]
        })),
    );
    let mut m = Module::default();
    let k = add_kernel(&mut m, kb.finish());
    let i = usm(&mut m, "in", F32, h * w);
    let o = usm(&mut m, "out", F32, h * w);
    let mut g = GB::new("main");
    g.node("st", kernel_node(k, range(&[h, w]), vec![ptr(i), ptr(o)]), &[]);
    add_graph(&mut m, g.finish());

    let input = inputs((h * w) as usize, 3);
    let mut interp = Interpreter::new(&m).unwrap();
    interp.bind_as("in", &input).unwrap();
    let exec = interp.finalize("main").unwrap();
    interp.run(exec).unwrap();
    let (h, w) = (h as usize, w as usize);
    let mut expected = input.clone();
    for r in 1..h - 1 {
        for c in 1..w - 1 {
            let at = |rr: usize, cc: usize| input[rr * w + cc];
            let s = at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1);
            expected[r * w + c] = s * 0.25 - at(r, c);
        }
    }
    assert_eq!(interp.read_as::<f32>("out").unwrap(), expected);
}

/// Tiled matmul: one tile in a `local` op, the other in a `local<f32>` parameter, loads
/// separated from use by barriers, a loop over tiles carrying the accumulator.
#[test]
fn tiled_matmul_matches_naive() {
    let (mm, nn, kk, t) = (12u64, 8u64, 16u64, 4u64);
    let mut kb = KB::new("matmul");
    let a = kb.buf("a", F32, Access::Read);
    let b = kb.buf("b", F32, Access::Read);
    let c = kb.buf("c", F32, Access::Write);
    let bs = kb.param("bs", ParamType::Local { elem: F32 });
    let as_ = kb.local(F32, t * t);
    let row = kb.gid(0);
    let col = kb.gid(1);
    let lr = kb.lid(0);
    let lc = kb.lid(1);
    let tv = kb.u32(t as u32);
    let kv = kb.u32(kk as u32);
    let nv = kb.u32(nn as u32);
    let zero = kb.u32(0);
    let one = kb.u32(1);
    let tiles = kb.u32((kk / t) as u32);
    let fzero = kb.f32(0.0);
    let lr_t = kb.mul(lr, tv);
    let tile_slot = kb.add(lr_t, lc);
    let acc = kb.for_(zero, tiles, one, &[fzero], |kb, tile, carried| {
        let tt = kb.mul(tile, tv);
        let rk = kb.mul(row, kv);
        let a_col = kb.add(tt, lc);
        let a_idx = kb.add(rk, a_col);
        let av = kb.load(a, a_idx);
        kb.store(as_, tile_slot, av);
        let b_row = kb.add(tt, lr);
        let b_rn = kb.mul(b_row, nv);
        let b_idx = kb.add(b_rn, col);
        let bv = kb.load(b, b_idx);
        kb.store(bs, tile_slot, bv);
        kb.barrier();
        let inner = kb.for_(zero, tv, one, &[carried[0]], |kb, k, acc| {
            let ai = kb.add(lr_t, k);
            let kt = kb.mul(k, tv);
            let bi = kb.add(kt, lc);
            let x = kb.load(as_, ai);
            let y = kb.load(bs, bi);
            let p = kb.mul(x, y);
            vec![kb.add(acc[0], p)]
        });
        kb.barrier();
        inner
    });
    let rn = kb.mul(row, nv);
    let c_idx = kb.add(rn, col);
    kb.store(c, c_idx, acc[0]);
    let mut m = Module::default();
    let k = add_kernel(&mut m, kb.finish());
    let ha = usm(&mut m, "a", F32, mm * kk);
    let hb = usm(&mut m, "b", F32, kk * nn);
    let hc = usm(&mut m, "c", F32, mm * nn);
    let mut g = GB::new("main");
    let local = Arg::Value(ArgValue::Local { elem: F32, count: t * t });
    g.node("mm", kernel_node(k, nd(&[mm, nn], &[t, t]), vec![ptr(ha), ptr(hb), ptr(hc), local]), &[]);
    add_graph(&mut m, g.finish());

    let av = inputs((mm * kk) as usize, 4);
    let bv = inputs((kk * nn) as usize, 5);
    let mut interp = Interpreter::new(&m).unwrap();
    interp.bind_as("a", &av).unwrap();
    interp.bind_as("b", &bv).unwrap();
    let exec = interp.finalize("main").unwrap();
    interp.run(exec).unwrap();
    let (mm, nn, kk) = (mm as usize, nn as usize, kk as usize);
    let mut expected = vec![0f32; mm * nn];
    for i in 0..mm {
        for j in 0..nn {
            let mut acc = 0f32;
            for k in 0..kk {
                acc += av[i * kk + k] * bv[k * nn + j];
            }
            expected[i * nn + j] = acc;
        }
    }
    assert_eq!(interp.read_as::<f32>("c").unwrap(), expected);
}

/// Work-group tree reduction in local memory, then atomics: f32 add of the group sums, u32
/// add counting work-items, i32 max, and cmpxchg electing exactly one winner per slot.
#[test]
fn tree_reduction_and_atomics() {
    let (n, l) = (256u64, 32u64);
    let slots = 4u64;
    let mut kb = KB::new("reduce");
    let inp = kb.buf("in", F32, Access::Read);
    let ints = kb.buf("ints", I32, Access::Read);
    let partial = kb.buf("partial", F32, Access::Write);
    let total = kb.buf("total", F32, Access::ReadWrite);
    let count = kb.buf("count", U32, Access::ReadWrite);
    let maxv = kb.buf("maxv", I32, Access::ReadWrite);
    let flag = kb.buf("flag", U32, Access::ReadWrite);
    let won = kb.buf("won", U32, Access::Write);
    let scratch = kb.local(F32, l);
    let gid = kb.gid(0);
    let lid = kb.lid(0);
    let grp = kb.builtin(B::GroupId, 0);
    let zero = kb.u32(0);
    let one = kb.u32(1);
    let lv = kb.u32(l as u32);
    let levels = kb.u32(l.trailing_zeros());
    let v = kb.load(inp, gid);
    kb.store(scratch, lid, v);
    kb.barrier();
    kb.for_(zero, levels, one, &[], |kb, k, _| {
        let k1 = kb.add(k, one);
        let s = kb.bin(Bin::Shr, lv, k1);
        let active = kb.cmp(Cmp::Lt, lid, s);
        kb.if_(
            active,
            &[],
            |kb| {
                let other = kb.add(lid, s);
                let x = kb.load(scratch, lid);
                let y = kb.load(scratch, other);
                let sum = kb.add(x, y);
                kb.store(scratch, lid, sum);
                vec![]
            },
            None,
        );
        kb.barrier();
        vec![]
    });
    let is_leader = kb.cmp(Cmp::Eq, lid, zero);
    kb.if_(
        is_leader,
        &[],
        |kb| {
            let s = kb.load(scratch, zero);
            kb.store(partial, grp, s);
            kb.atomic(Atomic::Add, total, zero, s);
            vec![]
        },
        None,
    );
    kb.atomic(Atomic::Add, count, zero, one);
    let iv = kb.load(ints, gid);
    kb.atomic(Atomic::Max, maxv, zero, iv);
    let sv = kb.u32(slots as u32);
    let slot = kb.bin(Bin::Rem, gid, sv);
    let ticket = kb.add(gid, one);
    let old = kb.cmpxchg(flag, slot, zero, ticket);
    let w = kb.cmp(Cmp::Eq, old, zero);
    let wu = kb.cast(w, U32);
    kb.store(won, gid, wu);

    let mut m = Module::default();
    let k = add_kernel(&mut m, kb.finish());
    let names = [("in", F32, n), ("ints", I32, n), ("partial", F32, n / l), ("total", F32, 1), ("count", U32, 1)];
    let mut args: Vec<Arg> = names.iter().map(|(name, ty, c)| ptr(usm(&mut m, name, *ty, *c))).collect();
    for (name, ty, c) in [("maxv", I32, 1), ("flag", U32, slots), ("won", U32, n)] {
        args.push(ptr(usm(&mut m, name, ty, c)));
    }
    let mut g = GB::new("main");
    g.node("red", kernel_node(k, nd(&[n], &[l]), args), &[]);
    add_graph(&mut m, g.finish());

    let input = inputs(n as usize, 6);
    let int_input: Vec<i32> = input.iter().map(|x| (x * 1000.0) as i32).collect();
    let mut interp = Interpreter::new(&m).unwrap();
    interp.bind_as("in", &input).unwrap();
    interp.bind_as("ints", &int_input).unwrap();
    interp.bind_as("maxv", &[i32::MIN]).unwrap();
    let exec = interp.finalize("main").unwrap();
    interp.run(exec).unwrap();

    let mut expected_partial = Vec::new();
    for group in input.chunks(l as usize) {
        let mut s = group.to_vec();
        let mut stride = l as usize / 2;
        while stride > 0 {
            for i in 0..stride {
                s[i] += s[i + stride];
            }
            stride /= 2;
        }
        expected_partial.push(s[0]);
    }
    let expected_total = expected_partial.iter().fold(0f32, |acc, x| acc + x);
    assert_eq!(interp.read_as::<f32>("partial").unwrap(), expected_partial);
    assert_eq!(interp.read_as::<f32>("total").unwrap(), vec![expected_total]);
    assert_eq!(interp.read_as::<u32>("count").unwrap(), vec![n as u32]);
    assert_eq!(interp.read_as::<i32>("maxv").unwrap(), vec![*int_input.iter().max().unwrap()]);
    let won: Vec<u32> = interp.read_as("won").unwrap();
    let flag: Vec<u32> = interp.read_as("flag").unwrap();
    for (s, holder) in flag.iter().enumerate() {
        let winners: Vec<usize> = (0..n as usize).filter(|i| i % slots as usize == s && won[*i] == 1).collect();
        assert_eq!(winners.len(), 1, "slot {s}");
        assert_eq!(*holder, winners[0] as u32 + 1, "slot {s} holds the winner's ticket");
    }
}

/// Builtins of an nd_range with an offset, and of a single_task.
#[test]
fn nd_range_offset_and_single_task_builtins() {
    let (g0, g1, l0, l1, o0, o1) = (6u64, 4u64, 3u64, 2u64, 5u64, 1u64);
    let mut kb = KB::new("ids");
    let out = kb.buf("out", U32, Access::Write);
    let ranges = kb.buf("ranges", U32, Access::Write);
    let x = kb.gid(0);
    let y = kb.gid(1);
    let lx = kb.lid(0);
    let ly = kb.lid(1);
    let gx = kb.builtin(B::GroupId, 0);
    let gy = kb.builtin(B::GroupId, 1);
    let k10 = kb.u32(10);
    let k100 = kb.u32(100);
    let ox = kb.u32(o0 as u32);
    let oy = kb.u32(o1 as u32);
    let gw = kb.u32(g1 as u32);
    // value = ((((gx*10 + gy)*10 + lx)*10 + ly)*100 + x)*100 + y
    let mut v = gx;
    for part in [gy, lx, ly] {
        let t = kb.mul(v, k10);
        v = kb.add(t, part);
    }
    for part in [x, y] {
        let t = kb.mul(v, k100);
        v = kb.add(t, part);
    }
    let rx = kb.sub(x, ox);
    let ry = kb.sub(y, oy);
    let rxw = kb.mul(rx, gw);
    let idx = kb.add(rxw, ry);
    kb.store(out, idx, v);
    let zero = kb.u32(0);
    let is_first = kb.cmp(Cmp::Eq, idx, zero);
    kb.if_(
        is_first,
        &[],
        |kb| {
            let mut slot = 0;
            for b in [B::GlobalRange, B::LocalRange, B::GroupRange] {
                for d in 0..3u8 {
                    let val = kb.builtin(b, d);
                    let i = kb.u32(slot);
                    kb.store(ranges, i, val);
                    slot += 1;
                }
            }
            vec![]
        },
        None,
    );
    let mut m = Module::default();
    let k = add_kernel(&mut m, kb.finish());
    let o = usm(&mut m, "out", U32, g0 * g1);
    let r = usm(&mut m, "ranges", U32, 9);
    let mut kb = KB::new("single");
    let s = kb.buf("s", U32, Access::Write);
    let zero = kb.u32(0);
    let one = kb.u32(1);
    let id = kb.gid(0);
    let rng = kb.builtin(B::GlobalRange, 0);
    let id7 = kb.u32(7);
    let sum = kb.add(id, id7);
    kb.store(s, zero, sum);
    kb.store(s, one, rng);
    let single = add_kernel(&mut m, kb.finish());
    let sbuf = usm(&mut m, "s", U32, 2);
    let mut g = GB::new("main");
    let launch = Launch::NdRange { global: vec![g0, g1], local: vec![l0, l1], offset: vec![o0, o1] };
    g.node("ids", kernel_node(k, launch, vec![ptr(o), ptr(r)]), &[]);
    g.node("one", kernel_node(single, Launch::SingleTask, vec![ptr(sbuf)]), &[]);
    add_graph(&mut m, g.finish());

    let mut interp = Interpreter::new(&m).unwrap();
    let exec = interp.finalize("main").unwrap();
    let stats = interp.run(exec).unwrap();
    assert_eq!(stats.work_items, g0 * g1 + 1);
    let mut expected = vec![0u32; (g0 * g1) as usize];
    for x in o0..o0 + g0 {
        for y in o1..o1 + g1 {
            let (lx, ly) = ((x - o0) % l0, (y - o1) % l1);
            let (gx, gy) = ((x - o0) / l0, (y - o1) / l1);
            let v = ((((gx * 10 + gy) * 10 + lx) * 10 + ly) * 100 + x) * 100 + y;
            expected[((x - o0) * g1 + (y - o1)) as usize] = v as u32;
        }
    }
    assert_eq!(interp.read_as::<u32>("out").unwrap(), expected);
    let gr = [g0, g1, 1, l0, l1, 1, g0 / l0, g1 / l1, 1].map(|v| v as u32);
    assert_eq!(interp.read_as::<u32>("ranges").unwrap(), gr.to_vec());
    assert_eq!(interp.read_as::<u32>("s").unwrap(), vec![7, 1]);
}

/// Integer, float, f16, cast and vector semantics as docs/interpreter.md states them.
#[test]
fn scalar_and_vector_semantics() {
    let mut kb = KB::new("sem");
    let iout = kb.buf("iout", I32, Access::Write);
    let fout = kb.buf("fout", F32, Access::Write);
    let hout = kb.buf("hout", Type::scalar(ScalarType::F16), Access::Write);
    let vout = kb.buf("vout", Type::vector(ScalarType::F32, 4), Access::ReadWrite);
    let mut slot = 0u32;
    let mut put_i = |kb: &mut KB, v| {
        let i = kb.u32(slot);
        kb.store(iout, i, v);
        slot += 1;
    };
    let seven = kb.i32(7);
    let m7 = kb.i32(-7);
    let zero = kb.i32(0);
    let two = kb.i32(2);
    let min = kb.i32(i32::MIN);
    let m1 = kb.i32(-1);
    let thirty_three = kb.i32(33);
    let r = kb.bin(Bin::Div, seven, zero);
    put_i(&mut kb, r); // 0
    let r = kb.bin(Bin::Rem, seven, zero);
    put_i(&mut kb, r); // 0
    let r = kb.bin(Bin::Div, m7, two);
    put_i(&mut kb, r); // -3
    let r = kb.bin(Bin::Rem, m7, two);
    put_i(&mut kb, r); // -1
    let r = kb.bin(Bin::Div, min, m1);
    put_i(&mut kb, r); // MIN
    let r = kb.bin(Bin::Shl, seven, thirty_three);
    put_i(&mut kb, r); // 14
    let r = kb.bin(Bin::Shr, m7, two);
    put_i(&mut kb, r); // -2 (arithmetic)
    let r = kb.un(Un::Abs, min);
    put_i(&mut kb, r); // MIN (wrapping)
    let big = kb.f32(3.0e9);
    let r = kb.cast(big, I32);
    put_i(&mut kb, r); // saturates to MAX
    let neg = kb.f32(-2.75);
    let r = kb.cast(neg, I32);
    put_i(&mut kb, r); // -2
    let nan = kb.konst(LitValue::Float(f64::NAN), F32);
    let r = kb.cast(nan, I32);
    put_i(&mut kb, r); // 0
    let mx = kb.konst(LitValue::Int(u32::MAX as i128), U32);
    let r = kb.cast(mx, I32);
    put_i(&mut kb, r); // -1 (wraps)
    let t = kb.cmp(Cmp::Lt, m7, two);
    let r = kb.cast(t, I32);
    put_i(&mut kb, r); // 1

    let mut fslot = 0u32;
    let mut put_f = |kb: &mut KB, v| {
        let i = kb.u32(fslot);
        kb.store(fout, i, v);
        fslot += 1;
    };
    let a = kb.f32(0.1);
    let b = kb.f32(0.7);
    let c = kb.f32(-0.07);
    let r = kb.fma(a, b, c);
    put_f(&mut kb, r);
    let r = kb.un(Un::Rsqrt, b);
    put_f(&mut kb, r);
    let r = kb.bin(Bin::Min, nan, a);
    put_f(&mut kb, r); // 0.1
    let r = kb.bin(Bin::Rem, b, a);
    put_f(&mut kb, r);
    let r = kb.bin(Bin::Pow, b, a);
    put_f(&mut kb, r);
    let r = kb.un(Un::Tanh, c);
    put_f(&mut kb, r);
    let fz = kb.f32(0.0);
    let r = kb.bin(Bin::Div, a, fz);
    put_f(&mut kb, r); // inf

    let f16t = Type::scalar(ScalarType::F16);
    let h1 = kb.konst(LitValue::Float(1.0), f16t);
    let h3 = kb.konst(LitValue::Float(3.0), f16t);
    let third = kb.bin(Bin::Div, h1, h3);
    let z = kb.u32(0);
    kb.store(hout, z, third);
    let s = kb.un(Un::Sqrt, h3);
    let o = kb.u32(1);
    kb.store(hout, o, s);
    let big16 = kb.konst(LitValue::Float(60000.0), f16t);
    let ov = kb.add(big16, big16);
    let tw = kb.u32(2);
    kb.store(hout, tw, ov); // inf

    // vectors: v = load vout[0]; w = v * splat(2) ; w.y = 9 ; m = w > splat(3) ; store select(m, w, v) at 1
    let zi = kb.u32(0);
    let v4 = Type::vector(ScalarType::F32, 4);
    let v = kb.load(vout, zi);
    let two_f = kb.f32(2.0);
    let two4 = kb.splat(two_f, v4);
    let w = kb.mul(v, two4);
    let nine = kb.f32(9.0);
    let w = kb.insert(w, 1, nine);
    let three = kb.f32(3.0);
    let three4 = kb.splat(three, v4);
    let msk = kb.cmp(Cmp::Gt, w, three4);
    let sel = kb.select(msk, w, v);
    let oi = kb.u32(1);
    kb.store(vout, oi, sel);
    let e2 = kb.extract(sel, 2);
    let e0 = kb.extract(v, 0);
    let built = kb.vec(&[e2, e0, nine, three]);
    let ti = kb.u32(2);
    kb.store(vout, ti, built);

    let mut m = Module::default();
    let k = add_kernel(&mut m, kb.finish());
    let hi = usm(&mut m, "iout", I32, 13);
    let hf = usm(&mut m, "fout", F32, 7);
    let hh = usm(&mut m, "hout", f16t, 3);
    let hv = usm(&mut m, "vout", v4, 3);
    let mut g = GB::new("main");
    g.node("sem", kernel_node(k, Launch::SingleTask, vec![ptr(hi), ptr(hf), ptr(hh), ptr(hv)]), &[]);
    add_graph(&mut m, g.finish());

    let mut interp = Interpreter::new(&m).unwrap();
    interp.bind_as::<f32>("vout", &[1.0, 2.0, 0.5, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
    let exec = interp.finalize("main").unwrap();
    interp.run(exec).unwrap();
    assert_eq!(
        interp.read_as::<i32>("iout").unwrap(),
        vec![0, 0, -3, -1, i32::MIN, 14, -2, i32::MIN, i32::MAX, -2, 0, -1, 1]
    );
    let (a, b, c) = (0.1f32, 0.7f32, -0.07f32);
    let expected_f = vec![a.mul_add(b, c), 1.0 / b.sqrt(), a, b % a, b.powf(a), c.tanh(), f32::INFINITY];
    assert_eq!(interp.read_as::<f32>("fout").unwrap(), expected_f);
    let h = interp.read_as::<f16>("hout").unwrap();
    assert_eq!(h, vec![f16::from_f32(1.0 / 3.0), f16::from_f32(3f32.sqrt()), f16::INFINITY]);
    let v = [1.0f32, 2.0, 0.5, 4.0];
    let w = [2.0f32, 9.0, 1.0, 8.0];
    let sel: Vec<f32> = (0..4).map(|i| if w[i] > 3.0 { w[i] } else { v[i] }).collect();
    let mut expected_v = v.to_vec();
    expected_v.extend(&sel);
    expected_v.extend([sel[2], v[0], 9.0, 3.0]);
    assert_eq!(interp.read_as::<f32>("vout").unwrap(), expected_v);
}

/// A vec3 element is 16 bytes apart; a store writes its 12 data bytes and leaves the pad.
#[test]
fn vec3_stride_and_padding() {
    let v3 = Type::vector(ScalarType::U32, 3);
    let mut kb = KB::new("v3");
    let out = kb.buf("out", v3, Access::Write);
    let one = kb.u32(1);
    let a = kb.u32(0x0102_0304);
    let v = kb.splat(a, v3);
    kb.store(out, one, v);
    let mut m = Module::default();
    let k = add_kernel(&mut m, kb.finish());
    let o = usm(&mut m, "out", v3, 2);
    let mut g = GB::new("main");
    g.node("k", kernel_node(k, Launch::SingleTask, vec![ptr(o)]), &[]);
    add_graph(&mut m, g.finish());
    let mut interp = Interpreter::new(&m).unwrap();
    interp.bind("out", &[0xEE; 32]).unwrap();
    let exec = interp.finalize("main").unwrap();
    interp.run(exec).unwrap();
    let mut expected = [0xEEu8; 32];
    for lane in 0..3 {
        expected[16 + 4 * lane..16 + 4 * lane + 4].copy_from_slice(&0x0102_0304u32.to_le_bytes());
    }
    assert_eq!(interp.read("out").unwrap(), &expected[..]);
}

/// Local memory or barriers need an nd_range; a barrier under divergent control flow is
/// reported with its work-items.
#[test]
fn range_launch_restrictions_and_divergent_barrier() {
    let mut m = Module::default();
    let mut kb = KB::new("uses_local");
    let out = kb.buf("out", F32, Access::Write);
    let t = kb.local(F32, 4);
    let i = kb.gid(0);
    let v = kb.load(t, i);
    kb.store(out, i, v);
    let k = add_kernel(&mut m, kb.finish());
    let mut kb = KB::new("divergent");
    let lid = kb.lid(0);
    let two = kb.u32(2);
    let c = kb.cmp(Cmp::Lt, lid, two);
    kb.if_(
        c,
        &[],
        |kb| {
            kb.barrier();
            vec![]
        },
        None,
    );
    let d = add_kernel(&mut m, kb.finish());
    let o = usm(&mut m, "out", F32, 4);
    let mut g = GB::new("bad_range");
    g.node("loc", kernel_node(k, range(&[4]), vec![ptr(o)]), &[]);
    add_graph(&mut m, g.finish());
    let mut g = GB::new("diverge");
    g.node("div", kernel_node(d, nd(&[8], &[4]), vec![]), &[]);
    add_graph(&mut m, g.finish());

    let mut interp = Interpreter::new(&m).unwrap();
    let exec = interp.finalize("bad_range").unwrap();
    match interp.run(exec) {
        Err(InterpError::Invalid { node: Some(node), message, .. }) => {
            assert_eq!(node, "loc");
            assert!(message.contains("nd_range"), "{message}");
        }
        other => panic!("expected an invalid-launch error, got {other:?}"),
    }
    let exec = interp.finalize("diverge").unwrap();
    let err = interp.run(exec).unwrap_err();
    let fault = err.as_fault().expect("a fault");
    assert_eq!(fault.node, "div");
    let site = fault.site.as_ref().expect("a kernel site");
    assert_eq!(site.op, "group_barrier");
    assert_eq!(site.work_item, vec![0]);
    match &fault.kind {
        FaultKind::Other(msg) => assert!(msg.contains("divergent") && msg.contains("(2)"), "{msg}"),
        k => panic!("{k:?}"),
    }
}

/// Scalars arrive from raw bytes too, and a literal that does not fit (a bool for an f32)
/// is an error.
#[test]
fn raw_bytes_argument_and_bad_literal() {
    let mut m = Module::default();
    let k = add_kernel(&mut m, scale_kernel());
    let x = usm(&mut m, "x", F32, 4);
    let y = usm(&mut m, "y", F32, 4);
    let mut g = GB::new("raw");
    let raw = Arg::Value(ArgValue::Bytes(1.5f32.to_le_bytes().to_vec()));
    g.node("k", kernel_node(k, range(&[4]), vec![ptr(x), ptr(y), raw]), &[]);
    add_graph(&mut m, g.finish());
    let mut g = GB::new("bad");
    let flag = Arg::Value(ArgValue::Scalar(cmdgraph_ir::types::Literal { value: LitValue::Bool(true), ty: None }));
    g.node("k", kernel_node(k, range(&[4]), vec![ptr(x), ptr(y), flag]), &[]);
    add_graph(&mut m, g.finish());
    let mut interp = Interpreter::new(&m).unwrap();
    interp.bind_as::<f32>("x", &[1.0, 2.0, 3.0, -4.0]).unwrap();
    let exec = interp.finalize("raw").unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap(), vec![1.5, 3.0, 4.5, -6.0]);
    let exec = interp.finalize("bad").unwrap();
    assert!(matches!(interp.run(exec), Err(InterpError::Invalid { .. })));
}

/// Regions nested as deep as docs/ir.md allows (256) run in a test thread's default stack.
#[test]
fn deepest_legal_nesting_runs() {
    let depth = 255;
    let mut kb = KB::new("deep");
    let out = kb.buf("out", U32, Access::ReadWrite);
    let zero = kb.u32(0);
    let one = kb.u32(1);
    let t = kb.cmp(Cmp::Eq, zero, zero);
    fn nest(kb: &mut KB, left: usize, t: V, out: V, zero: V, one: V) {
        if left == 0 {
            kb.atomic(Atomic::Add, out, zero, one);
            return;
        }
        if left.is_multiple_of(2) {
            kb.if_(
                t,
                &[],
                |kb| {
                    nest(kb, left - 1, t, out, zero, one);
                    vec![]
                },
                None,
            );
        } else {
            kb.for_(zero, one, one, &[], |kb, _, _| {
                nest(kb, left - 1, t, out, zero, one);
                vec![]
            });
        }
    }
    nest(&mut kb, depth, t, out, zero, one);
    let mut m = Module::default();
    let k = add_kernel(&mut m, kb.finish());
    let o = usm(&mut m, "out", U32, 1);
    let mut g = GB::new("main");
    g.node("deep", kernel_node(k, range(&[300]), vec![ptr(o)]), &[]);
    add_graph(&mut m, g.finish());
    let mut interp = Interpreter::new(&m).unwrap();
    let exec = interp.finalize("main").unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<u32>("out").unwrap(), vec![300]);
}
