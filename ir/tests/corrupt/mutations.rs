//! Deterministic corruptions of `.cgir` text, shared by `ir/tests/corrupt.rs` (library, under
//! `catch_unwind`) and `cli/tests/corrupt_inputs.rs` (the `cmdgraph` binary).
//!
//! Everything is derived from the input and a fixed seed, so a failure names a mutant that
//! the next run produces again. `Budget` caps how many mutants of each family one source gives
//! (evenly spaced samples, so long files are covered end to end without quadratic cost).

#![allow(dead_code)] // each test crate uses a different subset

/// One corrupted input and a description precise enough to rebuild it by hand.
pub struct Mutant {
    /// What was done, e.g. `truncate at 812` or `flip 3 bytes (seed 7, case 12)`.
    pub what: String,
    /// The corrupted bytes (not always UTF-8).
    pub bytes: Vec<u8>,
}

/// How many mutants of each family to derive from one source.
#[derive(Clone, Copy)]
pub struct Budget {
    /// Truncation points (evenly spaced, always including 0, 1 and len - 1).
    pub truncations: usize,
    /// Lines deleted (one at a time).
    pub line_deletions: usize,
    /// Lines duplicated (one at a time).
    pub line_duplications: usize,
    /// Random byte flips (1 to 4 bytes each).
    pub byte_flips: usize,
    /// Random line splices (a random line inserted before another).
    pub splices: usize,
}

/// Whether `b` can be part of a name, keyword or number.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'%' | b'@' | b'$' | b'.' | b'-')
}

/// Keyword swaps that usually keep the text parseable but change its meaning.
const WORD_SWAPS: &[(&str, &str)] = &[
    ("read", "write"),
    ("write", "read"),
    ("read_write", "read"),
    ("no_init", "read"),
    ("f32", "u32"),
    ("u32", "f32"),
    ("i32", "f32"),
    ("in_order", ""),
    ("zero_init", ""),
    ("assume_buffer_outlives_graph", "updatable"),
    ("local_id", "global_id"),
    ("add", "sub"),
    ("lt", "gt"),
    ("async_free", "async_malloc"),
];

/// Numbers a literal is replaced with, in turn: zero, one, odd, past `u32`, negative.
const NUMBER_SWAPS: &[&str] = &["0", "1", "3", "4294967296", "-1", "65537"];

/// Up to `count` semantic edits of `src` (see [`edit_sites`]), evenly spread over the file.
pub fn edits(src: &str, count: usize) -> Vec<Mutant> {
    let sites = edit_sites(src);
    spread(sites.len(), count)
        .into_iter()
        .map(|i| {
            let (start, end, with, what) = &sites[i];
            let text = format!("{}{with}{}", &src[..*start], &src[*end..]);
            Mutant { what: format!("edit: {what}"), bytes: text.into_bytes() }
        })
        .collect()
}

/// Places where a small semantic edit applies: `(start, end, replacement, description)`.
/// Integer literals are replaced by other numbers, access modes, types and a few
/// keywords are swapped, and each `after(...)` list and `via` tag is dropped. Most results
/// still parse, so these reach the verifier, unlike most byte-level damage.
pub fn edit_sites(src: &str) -> Vec<(usize, usize, String, String)> {
    let b = src.as_bytes();
    let mut sites = Vec::new();
    let mut i = 0;
    let mut numbers = 0;
    while i < b.len() {
        if !is_word_byte(b[i]) || (i > 0 && is_word_byte(b[i - 1])) {
            i += 1;
            continue;
        }
        let end = i + b[i..].iter().take_while(|c| is_word_byte(**c)).count();
        let word = &src[i..end];
        if word.bytes().all(|c| c.is_ascii_digit()) {
            let with = NUMBER_SWAPS[numbers % NUMBER_SWAPS.len()];
            numbers += 1;
            sites.push((i, end, with.to_string(), format!("number {word} at byte {i} -> {with}")));
        } else if let Some((_, with)) = WORD_SWAPS.iter().find(|(w, _)| *w == word) {
            sites.push((i, end, with.to_string(), format!("`{word}` at byte {i} -> `{with}`")));
        } else if word == "after" && b.get(end) == Some(&b'(') {
            let close = src[end..].find(')').map_or(b.len(), |c| end + c + 1);
            let start = if i > 0 && b[i - 1] == b' ' { i - 1 } else { i };
            sites.push((start, close, String::new(), format!("drop the after(...) at byte {i}")));
        } else if word == "via" {
            let next = end + 1 + b.get(end + 1..).map_or(0, |r| r.iter().take_while(|c| is_word_byte(**c)).count());
            let start = if i > 0 && b[i - 1] == b' ' { i - 1 } else { i };
            sites.push((start, next, String::new(), format!("drop the `via` tag at byte {i}")));
        }
        i = end;
    }
    sites
}

/// splitmix64: tiny, good enough, and identical on every platform.
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// `count` indices spread evenly over `0..len`.
fn spread(len: usize, count: usize) -> Vec<usize> {
    if len == 0 || count == 0 {
        return Vec::new();
    }
    if count >= len {
        return (0..len).collect();
    }
    let mut out: Vec<usize> = (0..count).map(|i| i * len / count).collect();
    out.push(len - 1);
    out.dedup();
    out
}

/// Lines of `src` with their terminators kept, so joining them gives `src` back.
fn lines(src: &str) -> Vec<&str> {
    src.split_inclusive('\n').collect()
}

/// Every family of per-source mutation, within `budget`.
pub fn mutants(src: &str, seed: u64, budget: Budget) -> Vec<Mutant> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();

    for at in spread(bytes.len(), budget.truncations) {
        out.push(Mutant { what: format!("truncate at byte {at}"), bytes: bytes[..at].to_vec() });
    }

    let ls = lines(src);
    for i in spread(ls.len(), budget.line_deletions) {
        let text: String = ls.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, l)| *l).collect();
        out.push(Mutant { what: format!("delete line {}", i + 1), bytes: text.into_bytes() });
    }
    for i in spread(ls.len(), budget.line_duplications) {
        let mut text = String::new();
        for (j, l) in ls.iter().enumerate() {
            text.push_str(l);
            if j == i {
                text.push_str(l);
            }
        }
        out.push(Mutant { what: format!("duplicate line {}", i + 1), bytes: text.into_bytes() });
    }

    let mut rng = Rng::new(seed);
    for case in 0..budget.byte_flips {
        let mut b = bytes.to_vec();
        if b.is_empty() {
            break;
        }
        let flips = 1 + rng.below(4);
        for _ in 0..flips {
            let at = rng.below(b.len());
            // Mostly printable ASCII (what a typo makes), sometimes any byte.
            b[at] = if rng.below(4) == 0 { rng.below(256) as u8 } else { 0x20 + rng.below(0x5f) as u8 };
        }
        out.push(Mutant { what: format!("flip {flips} bytes (seed {seed}, case {case})"), bytes: b });
    }

    for case in 0..budget.splices {
        if ls.is_empty() {
            break;
        }
        let from = rng.below(ls.len());
        let to = rng.below(ls.len());
        let mut text = String::new();
        for (j, l) in ls.iter().enumerate() {
            if j == to {
                text.push_str(ls[from]);
            }
            text.push_str(l);
        }
        out.push(Mutant {
            what: format!("insert line {} before line {} (seed {seed}, case {case})", from + 1, to + 1),
            bytes: text.into_bytes(),
        });
    }
    out
}

/// `depth` nested `if` regions inside a kernel, closed properly.
pub fn nested_ifs(depth: usize) -> String {
    let mut s = String::from("kernel @k(%x: buf<f32, write>) {\n  %c = const true : bool\n");
    s.push_str(&"if %c {\n".repeat(depth));
    s.push_str("%i = global_id 0\n");
    s.push_str(&"}\n".repeat(depth));
    s.push_str("}\n");
    s
}

/// `depth` nested `for` regions with a carried value each, closed properly.
pub fn nested_fors(depth: usize) -> String {
    let mut s = String::from(
        "kernel @k(%x: buf<f32, write>) {\n  %z = const 0 : u32\n  %o = const 1 : u32\n  %f = const 0.0 : f32\n",
    );
    for d in 0..depth {
        s.push_str(&format!("%r{d} = for %i{d} = %z to %o step %o carry(%a{d} = %f) {{\n"));
    }
    for d in (0..depth).rev() {
        let inner = if d + 1 == depth { format!("%a{d}") } else { format!("%r{}", d + 1) };
        s.push_str(&format!("yield {inner}\n}}\n"));
    }
    s.push_str("}\n");
    s
}

/// Inputs that are hostile regardless of any example: single lines of `big` bytes (1 MB in
/// the library test), deep nesting, random bytes, invalid UTF-8. `random_cases` random
/// buffers of up to `random_len` bytes.
pub fn hostile(seed: u64, big: usize, random_cases: usize, random_len: usize) -> Vec<Mutant> {
    const MB: usize = 1 << 20;
    let mb = if big >= MB { "1 MB".to_string() } else { format!("{} KB", big >> 10) };
    let mut out = Vec::new();
    let mut push = |what: &str, bytes: Vec<u8>| out.push(Mutant { what: what.to_string(), bytes });

    push("empty file", Vec::new());
    push(&format!("{mb} comment line"), format!("// {}\n", "x".repeat(big)).into_bytes());
    push(&format!("{mb} line of `a`"), "a".repeat(big).into_bytes());
    push(&format!("{mb} global name"), format!("usm @{} : f32[4]\n", "n".repeat(big)).into_bytes());
    push(&format!("{mb} integer literal"), format!("usm @x : f32[{}]\n", "9".repeat(big)).into_bytes());
    push(&format!("{mb} float literal"), format!("device_global @g : f32[1] = [1.{}]\n", "5".repeat(big)).into_bytes());
    push(&format!("{mb} string"), format!("kernel @k() spirv \"{}\" entry \"main\"\n", "s".repeat(big)).into_bytes());
    push(&format!("{mb} unterminated string"), format!("kernel @k() spirv \"{}", "s".repeat(big)).into_bytes());
    push(
        &format!("{mb} byte string"),
        format!("graph @g {{\n  dyn %r = x\"{}\"\n}}\n", "ab".repeat(big / 2)).into_bytes(),
    );
    let mut nodes = String::from("graph @g {");
    let mut i = 0;
    while nodes.len() < big {
        nodes.push_str(&format!(" %n{i} = empty"));
        if i > 0 {
            nodes.push_str(&format!(" after(%n{})", i - 1));
        }
        i += 1;
    }
    nodes.push_str(" }\n");
    push(&format!("{mb} graph on one line"), nodes.into_bytes());
    push(&format!("{mb} of `(`"), "(".repeat(big).into_bytes());

    for depth in [255, 256, 257, 10_000] {
        push(&format!("{depth} nested if regions"), nested_ifs(depth).into_bytes());
        push(&format!("{depth} nested for regions"), nested_fors(depth).into_bytes());
    }
    let deep = 10_000;
    push(
        "10000 unclosed if regions",
        nested_ifs(deep).split("%i = global_id").next().unwrap_or("").as_bytes().to_vec(),
    );
    push(
        "10000 nested `(` in args",
        format!("graph @g {{\n  %k = kernel @k range(4) args({}\n}}\n", "(".repeat(deep)).into_bytes(),
    );
    push("10000 nested `[`", format!("usm @x : f32{}\n", "[".repeat(deep)).into_bytes());
    push("10000 nested `{`", format!("graph @g {}\n", "{".repeat(deep)).into_bytes());
    push("10000 nested `<`", format!("kernel @k(%x: buf{}) {{}}\n", "<".repeat(deep)).into_bytes());
    push(
        "10000 balanced `{}` in a kernel",
        format!("kernel @k() {}{}\n", "{".repeat(deep), "}".repeat(deep)).into_bytes(),
    );
    push(
        "10000 nested vec types",
        format!("usm @x : {}f32{}[4]\n", "vec4<".repeat(deep), ">".repeat(deep)).into_bytes(),
    );

    push("lone continuation byte", vec![0x80]);
    push("invalid UTF-8 in a comment", b"// caf\xe9\nusm @x : f32[4]\n".to_vec());
    push("invalid UTF-8 in a name", b"usm @x\xff\xfe : f32[4]\n".to_vec());
    push("truncated multi-byte char", b"graph @g {\n  %n = host_task \"\xe2\x82".to_vec());
    push("UTF-16 BOM", b"\xff\xfeu\x00s\x00m\x00".to_vec());
    push("UTF-8 BOM", b"\xef\xbb\xbfusm @x : f32[4]\n".to_vec());
    push("NUL bytes", b"usm @x\0 : f32[4]\0\n".to_vec());
    push("overlong encoding", b"usm @\xc0\xaf : f32[4]\n".to_vec());
    push("surrogate half", b"usm @\xed\xa0\x80 : f32[4]\n".to_vec());

    // Bytes that make up `.cgir` tokens, so random text gets past the lexer now and then.
    const TOKEN_BYTES: &[u8] = b" \n%@(){}[]<>,:=+-.0123456789abcdefgiklmnoprstuvxy_\"/";
    let mut rng = Rng::new(seed);
    for case in 0..random_cases {
        let len = rng.below(random_len + 1);
        let ascii = case % 2 == 0;
        let bytes = (0..len)
            .map(|_| if ascii { TOKEN_BYTES[rng.below(TOKEN_BYTES.len())] } else { rng.below(256) as u8 })
            .collect();
        push(&format!("random {} bytes (seed {seed}, case {case})", if ascii { "token" } else { "binary" }), bytes);
    }
    out
}
