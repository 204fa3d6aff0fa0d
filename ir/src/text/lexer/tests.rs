use super::*;
use crate::text::keyword::Kw;

/// A token as the tests compare it: its kind, with the value of a number.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Int(i128),
    Float(f64),
    Other(TokenKind),
}

/// The token just lexed by `lexer`, as a [`Tok`].
fn tok(lexer: &Lexer<'_>, t: Token) -> Tok {
    match (t.kind, lexer.number) {
        (TokenKind::Int, Number::Int(v)) => Tok::Int(v),
        (TokenKind::Float, Number::Float(v)) => Tok::Float(v),
        (kind, _) => Tok::Other(kind),
    }
}

/// Every token of `src` with its text, or the first fatal error.
fn lex(src: &str) -> Result<Vec<(Tok, &str)>, ParseError> {
    let mut lexer = Lexer::new(src);
    let mut out = Vec::new();
    loop {
        let t = lexer.next_token().map_err(|e| *e)?;
        if t.kind == TokenKind::Eof {
            return Ok(out);
        }
        out.push((tok(&lexer, t), &src[t.span.range()]));
    }
}

fn kinds(src: &str) -> Vec<Tok> {
    lex(src).expect("lexes").into_iter().map(|(k, _)| k).collect()
}

fn int(v: i128) -> Tok {
    Tok::Int(v)
}

fn other(kind: TokenKind) -> Tok {
    Tok::Other(kind)
}

/// The fatal error for `src`, as (code, message, span).
fn fatal(src: &str) -> (&'static str, String, std::ops::Range<usize>) {
    let e = lex(src).expect_err("must fail");
    (e.code(), e.message(), e.span().range())
}

#[test]
fn names_words_and_punctuation_keep_their_spans() {
    let src = "%k0 = kernel @a.b$-c range(4) args(%x, %t) -> .. + : <>";
    let toks = lex(src).unwrap();
    let texts: Vec<&str> = toks.iter().map(|(_, t)| *t).collect();
    assert_eq!(
        texts,
        [
            "%k0", "=", "kernel", "@a.b$-c", "range", "(", "4", ")", "args", "(", "%x", ",", "%t", ")", "->", "..",
            "+", ":", "<", ">"
        ]
    );
    assert_eq!(toks[0].0, other(TokenKind::Local));
    let mut lexer = Lexer::new(src);
    let _ = lexer.next_token();
    let _ = lexer.next_token();
    assert_eq!(lexer.next_token().map(|t| t.kw).ok(), Some(Kw::Kernel));
    assert_eq!(lexer.next_token().map(|t| t.kw).ok(), Some(Kw::None));
    assert_eq!(toks[2].0, other(TokenKind::Ident));
    assert_eq!(toks[3].0, other(TokenKind::Global));
    assert_eq!(toks[14].0, other(TokenKind::Arrow));
}

#[test]
fn integers_decimal_hex_negative_and_extremes() {
    assert_eq!(kinds("42 0x2A 0x2a -7 -0x10 0"), [int(42), int(42), int(42), int(-7), int(-16), int(0)]);
    let min = "-170141183460469231731687303715884105728";
    assert_eq!(kinds(min), [int(i128::MIN)]);
    let max = "170141183460469231731687303715884105727";
    assert_eq!(kinds(max), [int(i128::MAX)]);
}

#[test]
fn integer_overflow_is_reported_and_lexing_goes_on() {
    let mut lexer = Lexer::new("170141183460469231731687303715884105728 x");
    let first = lexer.next_token().unwrap();
    assert_eq!(tok(&lexer, first), int(0));
    assert_eq!(lexer.next_token().unwrap().kind, TokenKind::Ident);
    assert_eq!(lexer.errors.len(), 1);
    assert_eq!(lexer.errors[0].code(), "E0005");
    assert_eq!(lexer.errors[0].message(), "invalid number: integer does not fit in 128 bits");
    assert_eq!(lexer.errors[0].span().range(), 0..39);
}

#[test]
fn floats_in_every_form() {
    let f = |v: f64| Tok::Float(v);
    assert_eq!(kinds("1.5 -0.25 1e-3 2.5E+8 1e21"), [f(1.5), f(-0.25), f(1e-3), f(2.5e8), f(1e21)]);
    assert_eq!(kinds("inf -inf"), [f(f64::INFINITY), f(f64::NEG_INFINITY)]);
    match kinds("nan")[..] {
        [Tok::Float(v)] => assert!(v.is_nan()),
        ref other => panic!("{other:?}"),
    }
    // `-0.0` keeps its sign.
    match kinds("-0.0")[..] {
        [Tok::Float(v)] => assert!(v == 0.0 && v.is_sign_negative()),
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn short_numbers_have_the_values_of_the_general_path() {
    // The one-pass path takes up to 15 digits; past that, and for exponents, the general
    // path does. Both must give what `str::parse` gives, bit for bit.
    let mut seed = 0x1234_5678_9abc_def0u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let digits = 1 + (next() % 18) as usize;
        let text: String = (0..digits).map(|_| char::from(b'0' + (next() % 10) as u8)).collect();
        let point = (next() % (digits as u64 + 1)) as usize;
        let sign = if next() % 2 == 0 { "-" } else { "" };
        let src = if point == 0 || point == digits {
            format!("{sign}{text}")
        } else {
            format!("{sign}{}.{}", &text[..point], &text[point..])
        };
        match kinds(&src)[..] {
            [Tok::Float(v)] => assert_eq!(v.to_bits(), src.parse::<f64>().unwrap().to_bits(), "{src}"),
            [Tok::Int(v)] => assert_eq!(v, src.parse::<i128>().unwrap(), "{src}"),
            ref other => panic!("{src}: {other:?}"),
        }
    }
    // Followed by punctuation, by `..`, and not followed by anything.
    assert_eq!(kinds("12,3)"), [int(12), other(TokenKind::Comma), int(3), other(TokenKind::RParen)]);
    assert_eq!(kinds("2.5]"), [Tok::Float(2.5), other(TokenKind::RBracket)]);
    assert_eq!(kinds("-0.5"), [Tok::Float(-0.5)]);
}

#[test]
fn a_range_is_two_integers_around_dotdot() {
    let [open, dots, close] = [TokenKind::LBracket, TokenKind::DotDot, TokenKind::RBracket].map(other);
    assert_eq!(kinds("[0..512]"), [open, int(0), dots, int(512), close]);
}

#[test]
fn malformed_numbers_are_errors() {
    assert_eq!(
        fatal("x 12abc"),
        ("E0005", "invalid number: a number must be followed by a space or punctuation".into(), 2..7)
    );
    assert_eq!(
        fatal("1.e5"),
        ("E0005", "invalid number: a number must be followed by a space or punctuation".into(), 0..4)
    );
    assert_eq!(fatal("0x"), ("E0005", "invalid number: `0x` needs hex digits".into(), 0..2));
    assert_eq!(
        fatal("1e"),
        ("E0005", "invalid number: a number must be followed by a space or punctuation".into(), 0..2)
    );
    assert_eq!(fatal("1.5.2").0, "E0005");
}

#[test]
fn strings_decode_every_escape() {
    let mut lexer = Lexer::new(r#""a\\b\"c\nd\te\u{1F600}\u{41}é""#);
    let t = lexer.next_token().unwrap();
    assert_eq!(t.kind, TokenKind::Str, "{t:?}");
    assert_eq!(lexer.take_string(t.index), "a\\b\"c\nd\te\u{1F600}Aé");
    assert!(lexer.strings.is_empty(), "taken strings leave the table");
}

#[test]
fn bad_strings_are_errors() {
    assert_eq!(fatal(r#""abc\q""#), ("E0003", "invalid escape in string: unknown escape".into(), 4..6));
    assert_eq!(fatal(r#""\u{D800}""#), ("E0003", "invalid escape in string: not a Unicode scalar value".into(), 1..9));
    assert_eq!(fatal(r#""\u{1234567}""#).0, "E0003");
    assert_eq!(fatal(r#""\u12""#).0, "E0003");
    assert_eq!(fatal("\"abc\nx\""), ("E0002", "unterminated string".into(), 0..4));
    assert_eq!(fatal("\"abc"), ("E0002", "unterminated string".into(), 0..4));
}

#[test]
fn byte_strings_take_hex_pairs_and_spaces() {
    let mut lexer = Lexer::new(r#"x"0a0B ff" x"""#);
    let t = lexer.next_token().unwrap();
    assert_eq!(t.kind, TokenKind::Bytes, "{t:?}");
    assert_eq!(lexer.take_bytes(t.index), vec![0x0a, 0x0b, 0xff]);
    let t = lexer.next_token().unwrap();
    assert_eq!(t.kind, TokenKind::Bytes, "{t:?}");
    assert_eq!(lexer.take_bytes(t.index), Vec::<u8>::new());
    assert_eq!(fatal(r#"x"0a0""#), ("E0004", "invalid byte string: hex digits must come in pairs".into(), 4..5));
    // A lone digit is reported as such, even when a stray character follows it.
    assert_eq!(fatal(r#"x"0g""#), ("E0004", "invalid byte string: hex digits must come in pairs".into(), 2..3));
    assert_eq!(
        fatal(r#"x"g0""#),
        ("E0004", "invalid byte string: only hex digits and spaces are allowed".into(), 2..3)
    );
    assert_eq!(fatal("x\"0a\n\"").0, "E0002");
}

#[test]
fn comments_are_trivia_with_their_line_position() {
    let src = "// head\n%a = empty // tail\r\n  //  indented  \r\r\n}";
    let mut lexer = Lexer::new(src);
    let mut toks = 0;
    while lexer.next_token().unwrap().kind != TokenKind::Eof {
        toks += 1;
    }
    assert_eq!(toks, 4);
    let c: Vec<(&str, bool)> = lexer.comments.iter().map(|c| (c.text, c.own_line)).collect();
    assert_eq!(c, [(" head", true), (" tail", false), ("  indented  ", true)]);
    assert_eq!(lexer.comments[0].span.range(), 0..7);
    // Before the first token every comment is on its own line; after a token, the one
    // after a line break is.
    let mut lexer = Lexer::new("  // a\n// b\nx // c\n // d // e\ny");
    while lexer.next_token().unwrap().kind != TokenKind::Eof {}
    let c: Vec<(&str, bool)> = lexer.comments.iter().map(|c| (c.text, c.own_line)).collect();
    assert_eq!(c, [(" a", true), (" b", true), (" c", false), (" d // e", true)]);
}

#[test]
fn lines_left_counts_line_breaks_after_the_position() {
    let mut lexer = Lexer::new("a\nb\n\nc\n");
    assert_eq!(lexer.lines_left(), 4);
    lexer.next_token().unwrap();
    lexer.next_token().unwrap();
    assert_eq!(lexer.lines_left(), 3);
    lexer.next_token().unwrap();
    assert_eq!(lexer.lines_left(), 1);
    lexer.next_token().unwrap();
    assert_eq!(lexer.lines_left(), 0);
}

#[test]
fn names_must_not_be_empty_or_too_long() {
    assert_eq!(fatal("@ x"), ("E0006", "`@` must be followed by a name".into(), 0..1));
    assert_eq!(fatal("% x"), ("E0006", "`%` must be followed by a name".into(), 0..1));
    let long = format!("%{}", "n".repeat(MAX_NAME_LEN + 1));
    let mut lexer = Lexer::new(&long);
    assert_eq!(lexer.next_token().unwrap().kind, TokenKind::Local);
    assert_eq!(lexer.errors.len(), 1);
    assert_eq!(lexer.errors[0].message(), "name is 1025 bytes long, more than the limit of 1024");
    let ok = format!("%{}", "n".repeat(MAX_NAME_LEN));
    let mut lexer = Lexer::new(&ok);
    lexer.next_token().unwrap();
    assert!(lexer.errors.is_empty());
}

#[test]
fn nesting_is_limited() {
    let ok = format!("{}{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
    assert!(lex(&ok).is_ok());
    let deep = "[".repeat(MAX_NESTING + 1);
    assert_eq!(fatal(&deep), ("E0008", "brackets and regions nested deeper than the limit of 256".into(), 256..257));
}

#[test]
fn stray_characters_are_errors() {
    assert_eq!(fatal("a ; b"), ("E0001", "unexpected character `;`".into(), 2..3));
    assert_eq!(fatal("é"), ("E0001", "unexpected character `é`".into(), 0..2));
    assert_eq!(fatal("a - b"), ("E0001", "unexpected character `-`".into(), 2..3));
    assert_eq!(fatal("-x"), ("E0001", "unexpected character `-`".into(), 0..1));
    assert_eq!(fatal("a / b").0, "E0001");
    assert_eq!(fatal("a . b").0, "E0001");
    assert_eq!(fatal("\u{0}").0, "E0001");
}

#[test]
fn a_leading_byte_order_mark_is_skipped() {
    let toks = lex("\u{feff}usm @x").unwrap();
    assert_eq!(toks, [(other(TokenKind::Ident), "usm"), (other(TokenKind::Global), "@x")]);
    assert_eq!(fatal("usm \u{feff}").0, "E0001");
}

#[test]
fn eof_repeats() {
    let mut lexer = Lexer::new("  ");
    assert_eq!(lexer.next_token().unwrap().kind, TokenKind::Eof);
    assert_eq!(lexer.next_token().unwrap().kind, TokenKind::Eof);
}
