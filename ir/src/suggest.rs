//! "Did you mean": the known name closest to an unknown one. One rule for every place that
//! suggests a name (undefined names in the parser, pass names, `--kernel`, `run --set`).

/// The candidate closest to `name` (both without sigils), or `None` when none is close:
/// first, in candidate order, one that equals it but for ASCII case, contains it, or (when at
/// least 3 characters long) is contained in it; else the one at the smallest edit distance if
/// that distance is at most a third of the name (2 are always allowed), ties to the first.
/// `name` itself is never suggested. Deterministic for a given candidate order.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let candidates: Vec<&str> = candidates.into_iter().filter(|c| *c != name).collect();
    let long_enough = |s: &str| s.chars().count() >= 3;
    let near = candidates.iter().find(|c| {
        c.eq_ignore_ascii_case(name)
            || (long_enough(name) && c.contains(name))
            || (long_enough(c) && name.contains(**c))
    });
    if let Some(c) = near {
        return Some(c);
    }
    let limit = (name.chars().count() / 3).max(2);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(name, c, limit);
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Levenshtein distance over chars, or `limit + 1` once it must exceed `limit` (length
/// difference), so most of a large graph's names are skipped at once.
fn edit_distance(a: &str, b: &str, limit: usize) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur[j + 1] = substitute.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn a_typo_is_found_and_a_stranger_is_not() {
        let names = ["scale", "saxpy", "output"];
        assert_eq!(closest("saxyp", names), Some("saxpy"));
        assert_eq!(closest("Output", names), Some("output"));
        assert_eq!(closest("matmul", names), None);
        assert_eq!(closest("scale", names), None, "the name itself is never suggested");
    }

    #[test]
    fn containment_wins_and_short_names_are_not_found_inside_others() {
        assert_eq!(closest("inline", ["dead-node-elimination", "inline-subgraphs"]), Some("inline-subgraphs"));
        assert_eq!(closest("fused.p.q", ["fused.p.q.r"]), Some("fused.p.q.r"));
        // `x` is inside `idx` but too short to count; `id` is one edit away.
        assert_eq!(closest("idx", ["x", "id"]), Some("id"));
    }
}
