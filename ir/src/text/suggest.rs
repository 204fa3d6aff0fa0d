//! "Did you mean": the defined name closest to an undefined one, for E0101's help.

/// The candidate closest to `name` (both without sigils): one that differs only in case,
/// else the one at the smallest edit distance if that distance is at most a third of the
/// name (2 are always allowed). Ties go to the first candidate, so the answer is
/// deterministic for a given input.
pub(crate) fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let limit = (name.chars().count() / 3).max(2);
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == name {
            continue;
        }
        let d = if c.eq_ignore_ascii_case(name) { 0 } else { edit_distance(name, c, limit) };
        if d <= limit && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c.to_string())
}

/// Levenshtein distance over chars, or `limit + 1` once it must exceed `limit` (length
/// difference), so a large graph's names are mostly skipped at once.
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
        assert_eq!(closest("saxyp", names), Some("saxpy".into()));
        assert_eq!(closest("Output", names), Some("output".into()));
        assert_eq!(closest("matmul", names), None);
        assert_eq!(closest("scale", names), None, "the name itself is never suggested");
    }
}
