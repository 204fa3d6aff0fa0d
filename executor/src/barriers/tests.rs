use super::*;

fn span(buffer: usize, lo: u64, hi: u64) -> Span {
    Span { target: Target::User(buffer), lo, hi }
}

fn cmd(work: Work, reads: Vec<Span>, writes: Vec<Span>) -> Effect {
    Effect { work, reads, writes }
}

/// A command of `work` that reads and writes bytes [lo, hi) of buffer 0.
fn rw(work: Work, lo: u64, hi: u64) -> Effect {
    cmd(work, vec![span(0, lo, hi)], vec![span(0, lo, hi)])
}

fn barriers(effects: &[Effect], policy: BarrierPolicy) -> Vec<usize> {
    let starts = vec![true; effects.len()];
    let p = plan(effects, &starts, policy);
    (0..effects.len()).filter(|&i| p.before[i].is_some()).collect()
}

use vk::AccessFlags2 as A;
use vk::PipelineStageFlags2 as S;

#[test]
fn masks_for_every_pair_of_command_kinds() {
    let c = rw(Work::Compute, 0, 64);
    let t = rw(Work::Transfer, 0, 64);
    let cases = [
        (&c, &c, S::COMPUTE_SHADER, A::SHADER_WRITE, S::COMPUTE_SHADER, A::SHADER_READ | A::SHADER_WRITE),
        (&c, &t, S::COMPUTE_SHADER, A::SHADER_WRITE, S::ALL_TRANSFER, A::TRANSFER_READ | A::TRANSFER_WRITE),
        (&t, &c, S::ALL_TRANSFER, A::TRANSFER_WRITE, S::COMPUTE_SHADER, A::SHADER_READ | A::SHADER_WRITE),
        (&t, &t, S::ALL_TRANSFER, A::TRANSFER_WRITE, S::ALL_TRANSFER, A::TRANSFER_READ | A::TRANSFER_WRITE),
    ];
    for (i, (a, b, ss, sa, ds, da)) in cases.into_iter().enumerate() {
        let p = plan(&[a.clone(), b.clone()], &[true, true], BarrierPolicy::Conflicts);
        let m = p.before[1].unwrap_or_else(|| panic!("case {i}: no barrier between conflicting commands"));
        assert_eq!((m.src_stage, m.src_access, m.dst_stage, m.dst_access), (ss, sa, ds, da), "case {i}");
        // Never ALL_COMMANDS, never the indirect-command stage, between the executor's own work.
        for s in [m.src_stage, m.dst_stage, p.opening.src_stage, p.opening.dst_stage, p.closing.src_stage] {
            assert!(!s.intersects(S::ALL_COMMANDS | S::DRAW_INDIRECT), "case {i}: {s:?}");
        }
        assert!(!m.dst_access.contains(A::INDIRECT_COMMAND_READ));
    }
}

#[test]
fn a_reader_makes_nothing_available() {
    // Write-after-read: the barrier waits for the read (execution) but has no writes to flush.
    let read = cmd(Work::Compute, vec![span(0, 0, 64)], vec![]);
    let write = cmd(Work::Transfer, vec![], vec![span(0, 0, 64)]);
    let p = plan(&[read, write], &[true, true], BarrierPolicy::Conflicts);
    let m = p.before[1].unwrap_or_else(|| panic!("WAR needs a barrier"));
    assert_eq!((m.src_stage, m.src_access), (S::COMPUTE_SHADER, A::NONE));
    assert_eq!(m.dst_stage, S::ALL_TRANSFER);
}

#[test]
fn native_commands_are_ordered_against_everything() {
    let native = cmd(Work::Native, vec![], vec![]);
    let far = rw(Work::Compute, 4096, 8192);
    let effects = [rw(Work::Compute, 0, 64), native, far.clone(), far];
    // Before the native command and after it, whatever memory; the last two conflict too.
    assert_eq!(barriers(&effects, BarrierPolicy::Conflicts), vec![1, 2, 3]);
    let p = plan(&effects, &[true; 4], BarrierPolicy::Conflicts);
    assert_eq!(p.before[1].map(|m| m.dst_stage), Some(S::ALL_COMMANDS));
    assert_eq!(p.before[2].map(|m| m.src_stage), Some(S::ALL_COMMANDS));
    assert_eq!(p.opening.src_stage, S::ALL_COMMANDS);
}

#[test]
fn conflicts_need_a_write_and_shared_bytes() {
    let r = |b, lo, hi| cmd(Work::Compute, vec![span(b, lo, hi)], vec![]);
    let w = |b, lo, hi| cmd(Work::Compute, vec![], vec![span(b, lo, hi)]);
    let pol = BarrierPolicy::Conflicts;
    assert_eq!(barriers(&[w(0, 0, 64), r(0, 32, 96)], pol), vec![1], "read after write");
    assert_eq!(barriers(&[r(0, 0, 64), w(0, 63, 64)], pol), vec![1], "write after read");
    assert_eq!(barriers(&[w(0, 0, 64), w(0, 0, 1)], pol), vec![1], "write after write");
    assert!(barriers(&[r(0, 0, 64), r(0, 0, 64)], pol).is_empty(), "two reads");
    assert!(barriers(&[w(0, 0, 64), w(0, 64, 128)], pol).is_empty(), "adjacent ranges");
    assert!(barriers(&[w(0, 0, 64), w(1, 0, 64)], pol).is_empty(), "other buffer");
    assert!(barriers(&[w(0, 0, 64), r(0, 10, 10)], pol).is_empty(), "empty range");
    let pool = |lo, hi| Span { target: Target::Pool, lo, hi };
    let g = |n: &str| Span { target: Target::Global(n.into()), lo: 0, hi: u64::MAX };
    let a = cmd(Work::Compute, vec![pool(0, 256)], vec![g("a")]);
    let b = cmd(Work::Compute, vec![pool(128, 512)], vec![g("b")]);
    assert!(barriers(&[a.clone(), b], pol).is_empty(), "pool reads, distinct globals");
    let c = cmd(Work::Transfer, vec![g("a")], vec![]);
    assert_eq!(barriers(&[a, c], pol), vec![1], "global read after write");
    // Kernels against transfers compare whole buffers (the descriptor's view).
    let k = cmd(Work::Compute, vec![], vec![span(0, 0, 64)]);
    let t = cmd(Work::Transfer, vec![], vec![span(0, 128, 192)]);
    assert_eq!(barriers(&[k.clone(), t.clone()], pol), vec![1], "kernel then copy, one buffer");
    assert_eq!(barriers(&[t, k], pol), vec![1], "copy then kernel, one buffer");
    let t2 = cmd(Work::Transfer, vec![span(1, 0, 64)], vec![span(2, 0, 64)]);
    assert!(barriers(&[w(0, 0, 64), t2], pol).is_empty(), "kernel and copy on other buffers");
}

#[test]
fn a_barrier_forgets_what_came_before_it() {
    // 0 writes A, 1 reads A (barrier), 2 writes B: B was not touched since the barrier.
    let effects = [
        cmd(Work::Compute, vec![], vec![span(0, 0, 64)]),
        cmd(Work::Compute, vec![span(0, 0, 64)], vec![span(1, 0, 64)]),
        cmd(Work::Compute, vec![], vec![span(2, 0, 64)]),
        cmd(Work::Compute, vec![span(1, 0, 4)], vec![]),
    ];
    assert_eq!(barriers(&effects, BarrierPolicy::Conflicts), vec![1, 3]);
}

#[test]
fn chain_wide_and_stage_policies() {
    let chain: Vec<Effect> = (0..50).map(|_| rw(Work::Compute, 0, 256)).collect();
    assert_eq!(barriers(&chain, BarrierPolicy::Conflicts), (1..50).collect::<Vec<_>>());
    let wide: Vec<Effect> = (0..1000).map(|i| rw(Work::Compute, i * 256, (i + 1) * 256)).collect();
    assert!(barriers(&wide, BarrierPolicy::Conflicts).is_empty());
    // Disjoint slices in rounds of 8 stages: the stage policy cuts at every stage start,
    // conflicts at none.
    let starts: Vec<bool> = (0..wide.len()).map(|i| i % 8 == 0).collect();
    let stage_plan = plan(&wide, &starts, BarrierPolicy::Stages);
    assert_eq!(stage_plan.inner(), 124);
    assert_eq!(plan(&wide, &starts, BarrierPolicy::Conflicts).inner(), 0);
    let full = plan(&wide, &starts, BarrierPolicy::Full);
    assert_eq!(full.inner(), 124);
    assert!(full.before.iter().flatten().all(|m| *m == Masks::FULL));
    // A barrier's destination covers every command up to the next barrier.
    let other = cmd(Work::Compute, vec![span(1, 0, 64)], vec![span(1, 0, 64)]);
    let mixed = [rw(Work::Compute, 0, 64), rw(Work::Transfer, 0, 64), other];
    let p = plan(&mixed, &[true; 3], BarrierPolicy::Conflicts);
    assert_eq!(p.before[1].map(|m| m.dst_stage), Some(S::ALL_TRANSFER | S::COMPUTE_SHADER));
    assert_eq!(p.before[2], None);
}

#[test]
fn merged_ranges_still_find_every_overlap() {
    // Many disjoint writes, then one read reaching only into the gap between two of them.
    let mut effects: Vec<Effect> =
        (0..100).map(|i| cmd(Work::Compute, vec![], vec![span(0, i * 100, i * 100 + 50)])).collect();
    effects.push(cmd(Work::Compute, vec![span(0, 1050, 1100)], vec![]));
    assert!(barriers(&effects, BarrierPolicy::Conflicts).is_empty());
    effects.push(cmd(Work::Compute, vec![span(0, 1099, 1101)], vec![]));
    assert_eq!(barriers(&effects, BarrierPolicy::Conflicts), vec![101]);
    // Overlapping writes merge into one range; a read inside the union conflicts.
    let mut p = Pending::default();
    for (lo, hi) in [(10, 20), (30, 40), (15, 35), (40, 41)] {
        p.add(&cmd(Work::Compute, vec![], vec![span(0, lo, hi)]));
    }
    assert_eq!(p.compute.writes.get(&Target::User(0)).map(|m| m.len()), Some(1));
    assert!(p.conflicts(&cmd(Work::Compute, vec![span(0, 40, 41)], vec![])));
    assert!(!p.conflicts(&cmd(Work::Compute, vec![span(0, 41, 90)], vec![])));
}

#[test]
fn pairwise_conflicts_agree_with_the_planner() {
    let cases = [
        rw(Work::Compute, 0, 64),
        rw(Work::Compute, 32, 96),
        rw(Work::Compute, 64, 128),
        cmd(Work::Compute, vec![span(0, 0, 64)], vec![]),
        cmd(Work::Compute, vec![span(0, 16, 32)], vec![]),
        cmd(Work::Transfer, vec![], vec![span(0, 200, 300)]),
        cmd(Work::Transfer, vec![span(1, 0, 8)], vec![span(2, 0, 8)]),
        cmd(Work::Native, vec![], vec![]),
    ];
    for (i, a) in cases.iter().enumerate() {
        for (j, b) in cases.iter().enumerate() {
            let planned = barriers(&[a.clone(), b.clone()], BarrierPolicy::Conflicts) == vec![1];
            assert_eq!(a.conflicts_with(b), planned, "{i} against {j}");
            assert_eq!(a.conflicts_with(b), b.conflicts_with(a), "{i} and {j}: symmetric");
        }
    }
}

#[test]
fn a_smaller_footprint_is_within_the_old_one() {
    let old = rw(Work::Compute, 0, 256);
    assert!(rw(Work::Compute, 0, 128).within(&old));
    assert!(rw(Work::Compute, 0, 256).within(&old));
    assert!(!rw(Work::Compute, 0, 512).within(&old));
    assert!(!rw(Work::Transfer, 0, 128).within(&old));
    let read_only = cmd(Work::Compute, vec![span(0, 0, 256)], vec![]);
    assert!(!rw(Work::Compute, 0, 64).within(&read_only), "a new write is not within reads");
    assert!(read_only.within(&old));
}

#[test]
fn the_stretch_index_agrees_with_pairwise_conflicts() {
    // Stretches of commands over two buffers; for each position and many probe effects, the
    // index must answer what checking the probe against every other command of the stretch
    // answers.
    let mut effects = Vec::new();
    for i in 0..40u64 {
        let (lo, hi) = ((i * 37) % 300, (i * 37) % 300 + 10 + i % 50);
        effects.push(match i % 5 {
            0 => cmd(Work::Compute, vec![span(0, lo, hi)], vec![]),
            1 => cmd(Work::Compute, vec![], vec![span((i % 2) as usize, lo, hi)]),
            2 => cmd(Work::Transfer, vec![span(1, lo, hi)], vec![span(2, lo, hi)]),
            3 => rw(Work::Compute, lo + 400, hi + 400),
            _ => cmd(Work::Compute, vec![span(0, lo, hi)], vec![span(3, 0, 4)]),
        });
    }
    let starts = vec![true; effects.len()];
    let p = plan(&effects, &starts, BarrierPolicy::Conflicts);
    let index = SegmentIndex::new(&effects, &p);
    let stretch: Vec<usize> = (0..effects.len())
        .scan(0, |s, i| {
            if i > 0 && p.before[i].is_some() {
                *s += 1;
            }
            Some(*s)
        })
        .collect();
    let mut checked = 0;
    for pos in 0..effects.len() {
        for probe in 0..60u64 {
            let (lo, hi) = ((probe * 53) % 500, (probe * 53) % 500 + 1 + probe % 40);
            let e = match probe % 4 {
                0 => cmd(Work::Compute, vec![span(0, lo, hi)], vec![]),
                1 => cmd(Work::Compute, vec![], vec![span((probe % 3) as usize, lo, hi)]),
                2 => cmd(Work::Transfer, vec![span(0, lo, hi)], vec![]),
                _ => cmd(Work::Transfer, vec![], vec![span(2, lo, hi)]),
            };
            let want =
                (0..effects.len()).any(|q| q != pos && stretch[q] == stretch[pos] && e.conflicts_with(&effects[q]));
            assert_eq!(index.conflicts(pos, &e), want, "position {pos}, probe {probe}");
            checked += usize::from(want);
        }
    }
    assert!(checked > 100, "the probes must hit conflicts too ({checked})");
}
