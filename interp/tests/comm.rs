//! Communication nodes on the interpreter's multi-rank simulation (docs/mpi.md): halo
//! exchange against one process, all-reduce in rank order, and the ways ranks fail.

mod comm_support;

use cmdgraph_interp::ranks::{simulate, Simulation};
use cmdgraph_interp::{InterpError, Interpreter, RunOptions};
use cmdgraph_ir::text::parse;
use comm_support::{allreduce_module, random_f32, Jacobi};
use std::time::{Duration, Instant};

fn sim<'a>(module: &'a cmdgraph_ir::Module, graph: &'a str, size: u32, runs: u64) -> Simulation<'a> {
    Simulation {
        module,
        graph,
        size,
        runs,
        options: RunOptions { check_races: true, ..RunOptions::default() },
        timeout: Duration::from_secs(20),
    }
}

/// Each rank's owned rows and residual after 50 Jacobi iterations (25 runs of two sweeps).
fn jacobi(ranks: u32, field: &[f32]) -> (Vec<f32>, f32) {
    let j = Jacobi { h: 48, w: 40, ranks };
    let module = parse(&j.module()).expect("the Jacobi module parses");
    cmdgraph_ir::verify::verify(&module).expect("the Jacobi module verifies");
    let setup = |rank: u32, i: &mut Interpreter| i.bind_as("u", &j.initial(field, rank));
    let out = simulate(&sim(&module, "step", ranks, 25), &setup);
    let mut rows = Vec::new();
    let mut errs = Vec::new();
    for r in out {
        let i = r.expect("every rank runs");
        rows.extend_from_slice(j.owned(&i.read_as::<f32>("u").unwrap()));
        errs.push(f32::from_bits(i.read_as::<u32>("err").unwrap()[0]));
    }
    assert!(errs.iter().all(|e| e.to_bits() == errs[0].to_bits()), "every rank has the all-reduced residual: {errs:?}");
    (rows, errs[0])
}

#[test]
fn halo_exchange_on_two_and_three_ranks_matches_one_process_bit_for_bit() {
    let field = random_f32(7, 48 * 40);
    let (one, err1) = jacobi(1, &field);
    assert!(err1 > 0.0, "the stencil still moves after 50 sweeps");
    for ranks in [2, 3] {
        let (split, err) = jacobi(ranks, &field);
        let differ = one.iter().zip(&split).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        assert_eq!(differ, 0, "{ranks} ranks: {differ} of {} values differ from one process", one.len());
        assert_eq!(err.to_bits(), err1.to_bits(), "{ranks} ranks: the all-reduced residual");
    }
    // The exchange matters: without it the ranks' edge rows would differ.
    assert_ne!(one, field, "the sweeps change the field");
}

#[test]
fn all_reduce_combines_full_precision_floats_in_rank_order() {
    let n = 4096;
    let module = parse(&allreduce_module(n)).unwrap();
    let xs: Vec<Vec<f32>> = (0..3).map(|r| random_f32(100 + r, n as usize)).collect();
    let ms: Vec<Vec<i32>> =
        (0..3).map(|r| random_f32(200 + r, n as usize).iter().map(|v| (v * 1e6) as i32).collect()).collect();
    let setup = |rank: u32, i: &mut Interpreter| {
        i.bind_as("x", &xs[rank as usize])?;
        i.bind_as("m", &ms[rank as usize])
    };
    let out = simulate(&sim(&module, "sum", 3, 1), &setup);
    let fixed: Vec<f32> = (0..n as usize).map(|k| (xs[0][k] + xs[1][k]) + xs[2][k]).collect();
    let other: Vec<f32> = (0..n as usize).map(|k| xs[0][k] + (xs[1][k] + xs[2][k])).collect();
    let order_matters = fixed.iter().zip(&other).filter(|(a, b)| a != b).count();
    assert!(order_matters > 100, "the data must expose the summation order ({order_matters} elements differ)");
    let max: Vec<i32> = (0..n as usize).map(|k| ms[0][k].max(ms[1][k]).max(ms[2][k])).collect();
    for (rank, r) in out.into_iter().enumerate() {
        let i = r.expect("every rank runs");
        let x: Vec<f32> = i.read_as("x").unwrap();
        assert!(x.iter().zip(&fixed).all(|(a, b)| a.to_bits() == b.to_bits()), "rank {rank}: (r0 + r1) + r2");
        assert_eq!(i.read_as::<i32>("m").unwrap(), max, "rank {rank}: max");
    }
}

fn errors(out: Vec<Result<Interpreter, InterpError>>) -> Vec<String> {
    out.into_iter().map(|r| r.err().map(|e| e.to_string()).unwrap_or_default()).collect()
}

#[test]
fn a_rank_that_fails_makes_the_others_fail_naming_it_without_waiting_for_the_deadline() {
    // Rank 1's host task fails on its third run; rank 0 waits for its message then.
    let text = "usm @x : f32[4]\n\
                graph @g.r0 {\n  %s = send @x, 16 to(1) tag(0)\n  %r = recv @x, 16 from(1) tag(1) after(%s)\n}\n\
                graph @g.r1 {\n  %r = recv @x, 16 from(0) tag(0)\n  %h = host_task \"flaky\" access(@x read_write) after(%r)\n  %s = send @x, 16 to(0) tag(1) after(%h)\n}\n";
    let module = parse(text).unwrap();
    cmdgraph_ir::verify::verify(&module).unwrap();
    let setup = |rank: u32, i: &mut Interpreter| {
        if rank == 1 {
            let mut runs = 0;
            i.register_callback("flaky", move |_| {
                runs += 1;
                if runs == 3 {
                    return Err("the third run fails".into());
                }
                Ok(())
            });
        }
        Ok(())
    };
    let start = Instant::now();
    let e = errors(simulate(&Simulation { timeout: Duration::from_secs(60), ..sim(&module, "g", 2, 5) }, &setup));
    assert!(start.elapsed() < Duration::from_secs(30), "ended at once, not at the deadline");
    assert!(e[1].contains("third run fails"), "{e:?}");
    assert!(e[0].contains("%r") && e[0].contains("rank 1 ended"), "{e:?}");
}

#[test]
fn ranks_that_each_receive_first_are_a_deadlock_naming_both() {
    let text = "usm @x : f32[4]\n\
                graph @g.r0 {\n  %r = recv @x, 16 from(1) tag(0)\n  %s = send @x, 16 to(1) tag(0) after(%r)\n}\n\
                graph @g.r1 {\n  %r = recv @x, 16 from(0) tag(0)\n  %s = send @x, 16 to(0) tag(0) after(%r)\n}\n";
    let module = parse(text).unwrap();
    cmdgraph_ir::verify::verify(&module).unwrap();
    let start = Instant::now();
    let e =
        errors(simulate(&Simulation { timeout: Duration::from_secs(60), ..sim(&module, "g", 2, 1) }, &|_, _| Ok(())));
    assert!(start.elapsed() < Duration::from_secs(30));
    let all = e.join(" | ");
    assert!(all.contains("every rank is waiting"), "{all}");
    assert!(all.contains("rank 0 at %r receives from rank 1 with tag 0"), "{all}");
}

#[test]
fn unmatched_sends_and_disagreeing_all_reduces_are_located_verifier_errors() {
    let text = "usm @x : f32[4]\nusm @b : u8[4]\n\
                graph @g.r0 {\n  %s = send @x, 16 to(1) tag(3)\n  %a = allreduce sum @x, 16\n}\n\
                graph @g.r1 {\n  %r = recv @x, 8 from(0) tag(3)\n  %t = send @x, 16 to(1) tag(0)\n  %a = allreduce max @x, 16\n  %q = allreduce sum @x, 6\n}\n";
    let module = parse(text).unwrap();
    let diags = cmdgraph_ir::verify::verify(&module).unwrap_err();
    let show: Vec<String> = diags.iter().map(|d| format!("{} {} @{}", d.code, d.message, d.span.start)).collect();
    let all = show.join("\n");
    let at = |needle: &str| text.find(needle).unwrap() as u32;
    let has = |code: &str, words: &str, node: &str| {
        diags.iter().any(|d| d.code == code && d.message.contains(words) && d.span.start == at(node))
    };
    assert!(has("E0295", "receives 8 bytes with tag 3, but the matching %s of @g.r0 sends 16", "%r = recv"), "{all}");
    assert!(has("E0294", "its peer is rank 1, but @g.r1 is rank 1 of 2", "%t = send"), "{all}");
    assert!(has("E0295", "all-reduce 1 of @g.r1 is %a", "%a = allreduce max"), "{all}");
    assert!(has("E0294", "not whole f32 elements", "%q = allreduce"), "{all}");
}

#[test]
fn communication_without_a_communicator_says_how_to_run_it() {
    let module = parse(&allreduce_module(4)).unwrap();
    let mut i = Interpreter::new(&module).unwrap();
    let exec = i.finalize("sum").unwrap();
    let e = i.run(exec).unwrap_err().to_string();
    assert!(e.contains("%s") && e.contains("needs a communicator") && e.contains("--ranks"), "{e}");
}
