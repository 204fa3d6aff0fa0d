//! Data races (E0280) against a brute force: on random graphs of memory commands (memset and
//! memcpy byte ranges, host task access lists) with random edges, every reported race is a
//! pair of unordered commands touching overlapping bytes of the memory it names with one of
//! them writing, and each memory has a report exactly when it has such a pair.

use cmdgraph_ir::verify::{check, check_with, VerifyError, VerifyOptions};
use std::collections::BTreeSet;

/// splitmix64, so the cases do not depend on a crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}

/// One access: memory, bytes `[lo, hi)`, writes.
type Access = (usize, u64, u64, bool);

const MEMS: usize = 3;
const BYTES: u64 = 64;

/// A random graph as text, with each node's accesses and the edges `(from, to)`.
fn case(rng: &mut Rng) -> (String, Vec<Vec<Access>>, Vec<(usize, usize)>) {
    let n = 2 + rng.below(14) as usize;
    let mut text = String::new();
    for m in 0..MEMS {
        text.push_str(&format!("usm @m{m} : u32[{}]\n", BYTES / 4));
    }
    text.push_str("\ngraph @g {\n");
    let (mut accesses, mut edges) = (Vec::new(), Vec::new());
    for i in 0..n {
        let span = |rng: &mut Rng| {
            let lo = rng.below(BYTES - 1);
            (lo, 1 + rng.below(BYTES - lo))
        };
        let (cmd, acc) = match rng.below(3) {
            0 => {
                let (m, (lo, len)) = (rng.below(MEMS as u64) as usize, span(rng));
                (format!("memset @m{m} + {lo}, 0, {len}"), vec![(m, lo, lo + len, true)])
            }
            1 => {
                let (d, s) = (rng.below(MEMS as u64) as usize, rng.below(MEMS as u64 - 1) as usize);
                let s = if s >= d { s + 1 } else { s };
                let len = 1 + rng.below(BYTES / 2);
                let (dl, sl) = (rng.below(BYTES - len + 1), rng.below(BYTES - len + 1));
                (
                    format!("memcpy @m{d} + {dl}, @m{s} + {sl}, {len}"),
                    vec![(d, dl, dl + len, true), (s, sl, sl + len, false)],
                )
            }
            _ => {
                let (m, write) = (rng.below(MEMS as u64) as usize, rng.below(3) == 0);
                let mode = if write { "write" } else { "read" };
                (format!("host_task \"h\" access(@m{m} {mode})"), vec![(m, 0, BYTES, write)])
            }
        };
        let preds: BTreeSet<usize> = (0..i).filter(|_| rng.below(4) == 0).collect();
        let after = if preds.is_empty() {
            String::new()
        } else {
            format!(" after({})", preds.iter().map(|p| format!("%n{p}")).collect::<Vec<_>>().join(", "))
        };
        edges.extend(preds.iter().map(|&p| (p, i)));
        text.push_str(&format!("  %n{i} = {cmd}{after}\n"));
        accesses.push(acc);
    }
    text.push_str("}\n");
    (text, accesses, edges)
}

/// Racing pairs by memory, each pair as (smaller, larger) node index.
fn brute(accesses: &[Vec<Access>], edges: &[(usize, usize)]) -> BTreeSet<(usize, usize, usize)> {
    let n = accesses.len();
    let mut reach = vec![vec![false; n]; n];
    for &(a, b) in edges {
        reach[a][b] = true;
    }
    // Edges go forward in index order, so one pass in reverse closes them: every row below
    // `a` is closed when `a` takes its successors' rows.
    for a in (0..n).rev() {
        for b in a + 1..n {
            if reach[a][b] {
                let row = reach[b].clone();
                for (x, r) in reach[a].iter_mut().zip(row) {
                    *x |= r;
                }
            }
        }
    }
    let mut races = BTreeSet::new();
    for a in 0..n {
        for b in a + 1..n {
            if reach[a][b] {
                continue;
            }
            for &(ma, la, ha, wa) in &accesses[a] {
                for &(mb, lb, hb, wb) in &accesses[b] {
                    if ma == mb && la < hb && lb < ha && (wa || wb) {
                        races.insert((ma, a, b));
                    }
                }
            }
        }
    }
    races
}

#[test]
fn races_agree_with_a_brute_force_on_random_graphs() {
    let mut rng = Rng(20);
    let index = |name: &str| name.trim_start_matches("%n").parse::<usize>().unwrap();
    for _ in 0..400 {
        let (text, accesses, edges) = case(&mut rng);
        let m = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{d:?}\n{text}"));
        let expected = brute(&accesses, &edges);
        let errors = check(&m);
        let mut reported = BTreeSet::new();
        for e in &errors {
            let VerifyError::DataRace { memory, first, second, .. } = e else {
                panic!("not a race: {e:?}\n{text}");
            };
            let mem = memory.trim_start_matches("@m").parse::<usize>().unwrap();
            let (a, b) = (index(first), index(second));
            assert!(a < b, "pairs are told in creation order: {e:?}");
            assert!(expected.contains(&(mem, a, b)), "reported {e:?}, not a race\n{text}");
            reported.insert(mem);
        }
        let racy: BTreeSet<usize> = expected.iter().map(|&(m, _, _)| m).collect();
        assert_eq!(reported, racy, "memories with races\n{text}\nexpected {expected:?}");
        // Allowed, they are not violations.
        assert!(check_with(&m, &VerifyOptions { allow_races: true }).is_empty());
    }
}

/// Far questions (past the short search's budget) go to resumable searches: a write, a
/// chain of 3000 empty nodes, and readers at its end are ordered; cut the chain and each
/// reader races with the write.
#[test]
fn far_orders_are_found_and_far_races_reported() {
    for cut in [false, true] {
        let mut text =
            String::from("usm @x : f32[16]\n\ngraph @g {\n  %w = memset @x, 0, 64\n  %c0 = empty after(%w)\n");
        for i in 1..3000 {
            let after = if cut && i == 1500 { String::new() } else { format!(" after(%c{})", i - 1) };
            text.push_str(&format!("  %c{i} = empty{after}\n"));
        }
        for r in 0..20 {
            text.push_str(&format!("  %r{r} = host_task \"h\" access(@x read) after(%c2999)\n"));
        }
        text.push_str("}\n");
        let m = cmdgraph_ir::text::parse(&text).unwrap_or_else(|d| panic!("{d:?}"));
        let races = check(&m).iter().filter(|e| e.is_race()).count();
        assert_eq!(races, if cut { 20 } else { 0 });
    }
}
