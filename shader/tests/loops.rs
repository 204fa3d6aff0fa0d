//! General loops (`while`, `loop`, `do`-`while`, `break`, `continue`, `break if`,
//! compare-exchange retry loops): translated to the IR's `loop`, run on the interpreter and
//! compared with the same computation in Rust.

mod support;

use support::{assert_same, f32s, run, translated, u32s, Arg, Rng};

/// Collatz steps of `v` (0 for 1) and the doubling `do`-`while` of collatz.wgsl/.comp.
fn collatz_reference(v: u32) -> [u32; 2] {
    let (mut n, mut steps) = (v, 0u32);
    while n != 1 {
        n = if n & 1 == 1 { 3 * n + 1 } else { n / 2 };
        steps += 1;
    }
    let (mut d, mut rounds) = (v, 0u32);
    loop {
        d *= 2;
        rounds += 1;
        if d > 1000 {
            break;
        }
    }
    [steps, rounds * 10000 + d]
}

fn collatz(file: &str) {
    let t = translated(file);
    assert!(t.text.contains(" = loop carry("), "{}", t.text);
    assert!(!t.text.contains(" = for %"), "{}", t.text);
    let mut rng = Rng::new(11);
    // 1 ..= 200: trip counts from 0 to over 100, different in every lane of a group.
    let x: Vec<u32> = (0..128).map(|_| 1 + (rng.next() % 200) as u32).collect();
    let out = run(file, &t, "nd_range(global(128), local(64))", &[Arg::U32s(&x), Arg::OutU32(256)]);
    let want: Vec<u32> = x.iter().flat_map(|&v| collatz_reference(v)).collect();
    assert_eq!(u32s(&out[1]), want, "{file}\n{}", t.text);
}

#[test]
fn while_and_break_if_loops_match_reference_wgsl() {
    collatz("collatz.wgsl");
}

#[test]
fn while_and_do_while_loops_match_reference_glsl() {
    collatz("collatz.comp");
}

fn break_for_reference(x: &[f32]) -> [f32; 2] {
    let (mut acc, mut seen) = (0.0f32, 0u32);
    for &v in &x[..16] {
        if v < 0.0 {
            if seen > 2 {
                break;
            }
            acc -= 1.0;
            continue;
        }
        seen += 1;
        if v > 4.0 {
            continue;
        }
        acc += v;
    }
    let (mut n, mut m, mut k) = (16u32, 0.0f32, 0u32);
    while k < n {
        let v = x[k as usize];
        if v < 1.0 {
            n -= 2;
        }
        m = support::ir_max(m, v);
        k += 1;
    }
    [acc, m + n as f32]
}

fn break_for(file: &str) {
    let t = translated(file);
    assert!(t.text.contains(" = loop carry("), "{}", t.text);
    let mut rng = Rng::new(12);
    let x = rng.f32s(64 * 16, -2.0, 6.0);
    let out = run(file, &t, "range(64)", &[Arg::F32s(&x), Arg::OutF32(128)]);
    let want: Vec<f32> = (0..64).flat_map(|i| break_for_reference(&x[i * 16..])).collect();
    assert_same(file, &f32s(&out[1]), &want);
}

#[test]
fn break_and_continue_in_nested_ifs_match_reference_wgsl() {
    break_for("break_for.wgsl");
}

#[test]
fn break_and_continue_in_nested_ifs_match_reference_glsl() {
    break_for("break_for.comp");
}

#[test]
fn compare_exchange_retry_loops_add_every_value() {
    let file = "cas_loop.wgsl";
    let t = translated(file);
    assert!(t.text.contains("atomic cmpxchg"), "{}", t.text);
    let mut rng = Rng::new(13);
    let x: Vec<u32> = (0..256).map(|_| (rng.next() % 100_000) as u32).collect();
    let out = run(
        file,
        &t,
        "nd_range(global(256), local(64))",
        &[Arg::U32s(&x), Arg::Bytes("u32", 4, vec![0; 16]), Arg::Bytes("u32", 1, vec![0; 4])],
    );
    let mut want = [0u32; 4];
    for (i, v) in x.iter().enumerate() {
        want[i % 4] = want[i % 4].wrapping_add(*v);
    }
    assert_eq!(u32s(&out[1]), want, "{}", t.text);
    assert_eq!(u32s(&out[2]), [256], "{}", t.text);
}

#[test]
fn counted_for_loops_stay_for_loops() {
    // What tile-contractions recognises: a counted loop without early exits is a `for`.
    let t = translated("sum_loop.wgsl");
    assert!(t.text.contains(" = for %") && !t.text.contains("loop"), "{}", t.text);
}

fn collatz_limited(v: u32) -> u32 {
    let (mut n, mut i) = (v, 0u32);
    while n > 1 {
        if n % 2 == 0 {
            n /= 2;
        } else {
            if n >= 1000 {
                return u32::MAX;
            }
            n = 3 * n + 1;
        }
        i += 1;
    }
    i
}

fn factor(t: u32) -> u32 {
    for a in 1..10 {
        for b in 1..10 {
            if a * b == t {
                return a * 100 + b;
            }
        }
    }
    0
}

#[test]
fn returns_from_inside_loops_match_reference() {
    let file = "return_in_loop.wgsl";
    let t = translated(file);
    assert!(t.text.contains(" = loop carry("), "{}", t.text);
    let mut rng = Rng::new(14);
    let x: Vec<u32> = (0..128).map(|_| (rng.next() % 3000) as u32).collect();
    let out = run(file, &t, "nd_range(global(128), local(64))", &[Arg::U32s(&x), Arg::OutU32(384)]);
    let want: Vec<u32> = x.iter().flat_map(|&v| [collatz_limited(v), factor(v % 90), v % 7 + 100]).collect();
    assert_eq!(u32s(&out[1]), want, "{}", t.text);
}

#[test]
fn continue_in_a_switch_restarts_the_loop() {
    let file = "switch_continue.wgsl";
    let t = translated(file);
    assert!(t.text.contains(" = loop carry("), "{}", t.text);
    let mut rng = Rng::new(15);
    let x: Vec<u32> = (0..64 * 8).map(|_| (rng.next() % 1000) as u32).collect();
    let out = run(file, &t, "range(64)", &[Arg::U32s(&x), Arg::OutU32(64)]);
    let want: Vec<u32> = (0..64)
        .map(|i| {
            let mut acc = 0u32;
            for k in 0..8 {
                match x[i * 8 + k] % 3 {
                    0 => continue,
                    1 => acc += 1,
                    _ => acc += 10,
                }
                acc += 100;
            }
            acc
        })
        .collect();
    assert_eq!(u32s(&out[1]), want, "{}", t.text);
}
