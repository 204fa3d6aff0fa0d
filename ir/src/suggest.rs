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

/// The kernel-language op for a spelling of it from another IR (LLVM, MLIR, SPIR-V, PTX,
/// C): a type letter before or after the op (`addf`, `fadd`, `iadd`, `sdiv`, `fmin`) or a
/// different word (`multiply`, `fptosi`, `muladd`). `None` for a word not recognised: the
/// caller then falls back to [`closest`].
pub fn op_alias(word: &str) -> Option<&'static str> {
    const TYPED: &[&str] = &[
        "add", "sub", "mul", "div", "rem", "neg", "abs", "min", "max", "pow", "sqrt", "rsqrt", "exp", "log", "sin",
        "cos", "tanh", "floor", "ceil", "fma", "and", "or", "xor", "not", "shl", "shr", "eq", "ne", "lt", "le", "gt",
        "ge",
    ];
    const WORDS: &[(&str, &str)] = &[
        ("multiply", "mul"),
        ("mult", "mul"),
        ("times", "mul"),
        ("subtract", "sub"),
        ("minus", "sub"),
        ("plus", "add"),
        ("sum", "add"),
        ("divide", "div"),
        ("quot", "div"),
        ("mod", "rem"),
        ("modulo", "rem"),
        ("negate", "neg"),
        ("fabs", "abs"),
        ("minimum", "min"),
        ("maximum", "max"),
        ("power", "pow"),
        ("mad", "fma"),
        ("muladd", "fma"),
        ("fmuladd", "fma"),
        ("lshr", "shr"),
        ("ashr", "shr"),
        ("sar", "shr"),
        ("shift_left", "shl"),
        ("shift_right", "shr"),
        ("lsl", "shl"),
        ("lsr", "shr"),
        ("asr", "shr"),
        ("icmp", "eq"),
        ("fcmp", "eq"),
        ("cmp", "eq"),
        ("equal", "eq"),
        ("neq", "ne"),
        ("sel", "select"),
        ("cond", "select"),
        ("ternary", "select"),
        ("convert", "cast"),
        ("bitcast", "cast"),
        ("trunc", "cast"),
        ("zext", "cast"),
        ("sext", "cast"),
        ("fpext", "cast"),
        ("fptrunc", "cast"),
        ("fptosi", "cast"),
        ("fptoui", "cast"),
        ("sitofp", "cast"),
        ("uitofp", "cast"),
        ("broadcast", "splat"),
        ("extractelement", "extract"),
        ("insertelement", "insert"),
        ("barrier", "group_barrier"),
        ("syncthreads", "group_barrier"),
        ("loop", "for"),
        ("while", "for"),
        ("return", "yield"),
        ("constant", "const"),
        ("thread_id", "global_id"),
        ("tid", "global_id"),
    ];
    let word = word.to_ascii_lowercase();
    if let Some(&(_, op)) = WORDS.iter().find(|(w, _)| *w == word) {
        return Some(op);
    }
    // `add_f32`, `add.f32`, `addf`, `fadd`, `iadd`, `sdiv`, `umin`: the op with its type.
    let base = word.split(['_', '.']).next().unwrap_or(&word);
    let stripped = [Some(base), base.strip_suffix(['f', 'i', 'u', 's']), base.strip_prefix(['f', 'i', 'u', 's'])];
    for w in stripped.into_iter().flatten() {
        if let Some(op) = TYPED.iter().find(|op| **op == w) {
            return Some(op);
        }
    }
    None
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
    fn op_spellings_of_other_irs_map_to_the_op() {
        use super::op_alias;
        for (word, op) in [
            ("addf", "add"),
            ("fadd", "add"),
            ("iadd", "add"),
            ("mulf", "mul"),
            ("FMul", "mul"),
            ("subi", "sub"),
            ("sdiv", "div"),
            ("urem", "rem"),
            ("fmin", "min"),
            ("add_f32", "add"),
            ("mul.f16", "mul"),
            ("multiply", "mul"),
            ("muladd", "fma"),
            ("fptosi", "cast"),
            ("barrier", "group_barrier"),
            ("ashr", "shr"),
        ] {
            assert_eq!(op_alias(word), Some(op), "{word}");
        }
        // Not a spelling of any op: the caller falls back to the nearest keyword.
        for word in ["graph", "frobnicate", "f", "addition_table", "fsub2"] {
            assert_eq!(op_alias(word), None, "{word}");
        }
    }

    #[test]
    fn containment_wins_and_short_names_are_not_found_inside_others() {
        assert_eq!(closest("inline", ["dead-node-elimination", "inline-subgraphs"]), Some("inline-subgraphs"));
        assert_eq!(closest("fused.p.q", ["fused.p.q.r"]), Some("fused.p.q.r"));
        // `x` is inside `idx` but too short to count; `id` is one edit away.
        assert_eq!(closest("idx", ["x", "id"]), Some("id"));
    }
}
