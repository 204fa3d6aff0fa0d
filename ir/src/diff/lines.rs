//! A unified diff of two texts by lines, for kernel bodies: every hunk, with context.
//!
//! Kernel bodies are short (tens to hundreds of lines), so the edit script is a longest
//! common subsequence over the lines between the common prefix and suffix, by dynamic
//! programming. Past [`MAX_CELLS`] table cells (two bodies of thousands of differing lines)
//! the middle is shown as removed then added whole rather than spending quadratic time.
//! The script is deterministic: on ties, removals come before additions.

/// Lines of context around each change, as `diff -u` shows.
pub(crate) const CONTEXT: usize = 3;

/// The largest LCS table computed: 4 MiB of `u32` cells.
const MAX_CELLS: usize = 1 << 20;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Same,
    Removed,
    Added,
}

/// The hunks of a unified diff of `a` and `b` (lines numbered from `first_line`), each a
/// `@@ -a,n +b,m @@` header followed by its lines marked ` `, `-` or `+`; with the counts of
/// removed and added lines. Empty when the texts are equal.
pub(crate) fn unified(a: &[&str], b: &[&str], first_line: usize) -> (Vec<String>, usize, usize) {
    let script = edit_script(a, b);
    let removed = script.iter().filter(|o| **o == Op::Removed).count();
    let added = script.iter().filter(|o| **o == Op::Added).count();
    if removed + added == 0 {
        return (Vec::new(), 0, 0);
    }
    // Each step with its position in `a` and `b` before it.
    let mut steps = Vec::with_capacity(script.len());
    let (mut i, mut j) = (0, 0);
    for op in script {
        steps.push((op, i, j));
        match op {
            Op::Same => {
                i += 1;
                j += 1;
            }
            Op::Removed => i += 1,
            Op::Added => j += 1,
        }
    }
    let changes: Vec<usize> = steps.iter().enumerate().filter(|(_, s)| s.0 != Op::Same).map(|(k, _)| k).collect();
    // Group changes whose context overlaps (at most 2 * CONTEXT equal lines between).
    let mut out = Vec::new();
    let mut k = 0;
    while k < changes.len() {
        let mut last = changes[k];
        let mut next = k + 1;
        while next < changes.len() && changes[next] - last <= 2 * CONTEXT + 1 {
            last = changes[next];
            next += 1;
        }
        let start = changes[k].saturating_sub(CONTEXT);
        let end = (last + CONTEXT + 1).min(steps.len());
        let hunk = &steps[start..end];
        let (_, a0, b0) = hunk[0];
        let a_len = hunk.iter().filter(|s| s.0 != Op::Added).count();
        let b_len = hunk.iter().filter(|s| s.0 != Op::Removed).count();
        // `diff -u` numbers an empty side by the line before it.
        let at = |start: usize, len: usize| if len == 0 { start + first_line - 1 } else { start + first_line };
        out.push(format!("@@ -{},{a_len} +{},{b_len} @@", at(a0, a_len), at(b0, b_len)));
        for &(op, i, j) in hunk {
            out.push(match op {
                Op::Same => format!(" {}", a.get(i).copied().unwrap_or("")),
                Op::Removed => format!("-{}", a.get(i).copied().unwrap_or("")),
                Op::Added => format!("+{}", b.get(j).copied().unwrap_or("")),
            });
        }
        k = next;
    }
    (out, removed, added)
}

/// The steps turning `a` into `b`.
fn edit_script(a: &[&str], b: &[&str]) -> Vec<Op> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a_rest, b_rest) = (&a[prefix..], &b[prefix..]);
    let suffix = a_rest.iter().rev().zip(b_rest.iter().rev()).take_while(|(x, y)| x == y).count();
    let (ma, mb) = (&a_rest[..a_rest.len() - suffix], &b_rest[..b_rest.len() - suffix]);
    let mut script = vec![Op::Same; prefix];
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) > MAX_CELLS || n == 0 || m == 0 {
        script.extend(std::iter::repeat_n(Op::Removed, n));
        script.extend(std::iter::repeat_n(Op::Added, m));
    } else {
        // lcs[i][j]: the LCS length of ma[i..] and mb[j..].
        let w = m + 1;
        let mut lcs = vec![0u32; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && ma[i] == mb[j] {
                script.push(Op::Same);
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                script.push(Op::Removed);
                i += 1;
            } else {
                script.push(Op::Added);
                j += 1;
            }
        }
    }
    script.extend(std::iter::repeat_n(Op::Same, suffix));
    script
}

#[cfg(test)]
mod tests {
    use super::unified;

    fn lines(s: &str) -> Vec<&str> {
        s.lines().collect()
    }

    #[test]
    fn every_hunk_is_shown_with_three_lines_of_context() {
        let a: Vec<String> = (1..=20).map(|i| format!("l{i}")).collect();
        let mut b = a.clone();
        b[2] = "L3".into();
        b[16] = "L17".into();
        b.insert(17, "new".into());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let b: Vec<&str> = b.iter().map(String::as_str).collect();
        let (hunks, removed, added) = unified(&a, &b, 1);
        assert_eq!((removed, added), (2, 3));
        let text = hunks.join("\n");
        assert_eq!(
            text,
            "@@ -1,6 +1,6 @@\n l1\n l2\n-l3\n+L3\n l4\n l5\n l6\n\
             @@ -14,7 +14,8 @@\n l14\n l15\n l16\n-l17\n+L17\n+new\n l18\n l19\n l20"
        );
    }

    #[test]
    fn changes_close_together_share_a_hunk_and_numbers_follow_first_line() {
        let a = lines("a\nb\nc\nd\ne\nf\ng\nh\ni");
        let b = lines("a\nB\nc\nd\ne\nf\ng\nH\ni");
        let (hunks, _, _) = unified(&a, &b, 2);
        assert_eq!(hunks.iter().filter(|h| h.starts_with("@@")).count(), 1);
        assert_eq!(hunks[0], "@@ -2,9 +2,9 @@");
        assert_eq!(unified(&a, &a, 1), (Vec::new(), 0, 0));
    }

    #[test]
    fn pure_insertion_and_removal_number_the_empty_side_by_the_line_before() {
        let (hunks, _, _) = unified(&lines("a\nb"), &lines("a\nx\nb"), 1);
        assert_eq!(hunks, ["@@ -1,2 +1,3 @@", " a", "+x", " b"]);
        let (hunks, removed, added) = unified(&["only"], &[], 1);
        assert_eq!((hunks[0].as_str(), removed, added), ("@@ -1,1 +0,0 @@", 1, 0));
    }
}
