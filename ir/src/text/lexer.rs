//! The lexer: source text to tokens with byte spans, on demand.
//!
//! Tokens are produced one at a time (the parser looks one token ahead), so a large graph
//! is never held as a token vector. Comments are trivia: they are queued in
//! [`Lexer::comments`] as the lexer passes them, and the parser attaches them to the items,
//! statements and ops around them. Strings and byte strings are decoded here, once, into
//! side tables that the tokens index.

use super::error::ParseError;
use super::keyword::Kw;
use super::{MAX_NAME_LEN, MAX_NESTING};
use crate::span::Span;
use std::collections::VecDeque;

/// What a token is. Names and identifiers keep their text in the source (the token's
/// span); the value of a number is [`Lexer::number`] while the number is the last token
/// lexed; strings and byte strings index [`Lexer::strings`] / [`Lexer::byte_strings`].
/// Without payloads a token is 16 bytes, and results carrying one are returned in
/// registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// `@name`
    Global,
    /// `%name`
    Local,
    /// A keyword or identifier.
    Ident,
    /// An integer literal.
    Int,
    /// A float literal (including `inf`, `-inf`, `nan`).
    Float,
    /// A string literal, decoded into `strings[token.index]`.
    Str,
    /// A byte string literal, decoded into `byte_strings[token.index]`.
    Bytes,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `,`
    Comma,
    /// `:`
    Colon,
    /// `=`
    Eq,
    /// `+`
    Plus,
    /// `->`
    Arrow,
    /// `..`
    DotDot,
    /// The end of the input.
    Eof,
}

/// The value of a number token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Number {
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
}

/// A token and where it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// For an identifier, the structural keyword it is (or [`Kw::None`]).
    pub kw: Kw,
    /// For a string or byte string, its index in the side table.
    pub index: u32,
    /// Its bytes in the source.
    pub span: Span,
}

impl Token {
    /// A token without keyword or index.
    fn new(kind: TokenKind, span: Span) -> Token {
        Token { kind, kw: Kw::None, index: 0, span }
    }
}

/// A `//` comment.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Comment<'s> {
    /// The text after `//`, without the line break (and without trailing `\r`).
    pub text: &'s str,
    /// From `//` to the end of the text.
    pub span: Span,
    /// Whether only whitespace precedes it on its line (a whole-line comment). A comment
    /// that is not on its own line trails the token before it.
    pub own_line: bool,
}

/// The on-demand lexer.
pub(crate) struct Lexer<'s> {
    src: &'s str,
    pos: usize,
    depth: usize,
    /// Whether a token has been produced (comments before the first one are on their own
    /// line whatever precedes them, e.g. a byte order mark).
    after_token: bool,
    /// Line breaks counted so far: `(position, line breaks before it, line breaks in all)`.
    lines: Option<(usize, usize, usize)>,
    /// Comments passed over and not yet claimed by the parser, in source order.
    pub comments: VecDeque<Comment<'s>>,
    /// The value of the last number token lexed. The parser reads it while that token is
    /// the one it peeks at (it never lexes past a number before reading its value).
    pub number: Number,
    /// Decoded string literals.
    pub strings: Vec<String>,
    /// Decoded byte string literals.
    pub byte_strings: Vec<Vec<u8>>,
    /// Errors that did not stop lexing (a too-long name, an out-of-range integer).
    pub errors: Vec<ParseError>,
}

/// A lexing result; the error is boxed so that the common `Ok` path moves little data.
pub(crate) type LexResult<T> = Result<T, Box<ParseError>>;

/// An error result.
pub(crate) fn fail<T>(error: ParseError) -> LexResult<T> {
    Err(Box::new(error))
}

/// Character class bit: may appear in a `@name` / `%name`.
const NAME: u8 = 1;
/// Character class bit: may continue an identifier.
const IDENT: u8 = 2;
/// Character class bit: whitespace (a space, a tab, a line break).
const SPACE: u8 = 4;
/// Character class bit: a one-byte punctuation token, whatever follows it.
const PUNCT: u8 = 8;
/// Character class bit: starts a `@name` or `%name`.
const SIGIL: u8 = 16;
/// Character class bit: may start an identifier (or a byte string `x"..."`).
const WORD: u8 = 32;
/// Character class bit: a decimal digit.
const DIGIT: u8 = 64;

/// Character classes by byte, so that classifying or scanning is one load per byte.
static CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut class = 0;
        if b.is_ascii_alphanumeric() || b == b'_' {
            class |= NAME | IDENT;
        } else if b == b'.' || b == b'$' || b == b'-' {
            class |= NAME;
        }
        if matches!(b, b' ' | b'\t' | b'\r' | b'\n') {
            class |= SPACE;
        }
        if punct_kind(b).is_some() {
            class |= PUNCT;
        }
        if b == b'@' || b == b'%' {
            class |= SIGIL;
        }
        if b.is_ascii_alphabetic() || b == b'_' {
            class |= WORD;
        }
        if b.is_ascii_digit() {
            class |= DIGIT;
        }
        table[i] = class;
        i += 1;
    }
    table
};

/// The token of a one-byte punctuation character.
const fn punct_kind(b: u8) -> Option<TokenKind> {
    Some(match b {
        b'(' => TokenKind::LParen,
        b')' => TokenKind::RParen,
        b'{' => TokenKind::LBrace,
        b'}' => TokenKind::RBrace,
        b'[' => TokenKind::LBracket,
        b']' => TokenKind::RBracket,
        b'<' => TokenKind::Lt,
        b'>' => TokenKind::Gt,
        b',' => TokenKind::Comma,
        b':' => TokenKind::Colon,
        b'=' => TokenKind::Eq,
        b'+' => TokenKind::Plus,
        _ => return None,
    })
}

/// One-byte punctuation tokens by byte (`Eof` for the other bytes), and how each changes
/// the nesting depth.
static PUNCT_TOKEN: [(TokenKind, i8); 256] = {
    let mut table = [(TokenKind::Eof, 0i8); 256];
    let mut i = 0;
    while i < 256 {
        if let Some(kind) = punct_kind(i as u8) {
            let depth = match i as u8 {
                b'(' | b'{' | b'[' => 1,
                b')' | b'}' | b']' => -1,
                _ => 0,
            };
            table[i] = (kind, depth);
        }
        i += 1;
    }
    table
};

/// The end of the `@name` / `%name` whose name starts at `at` (the sigil is before it).
pub(crate) fn name_end(bytes: &[u8], at: usize) -> usize {
    scan(bytes, at, NAME)
}

/// The end of the identifier whose second byte is at `at`.
pub(crate) fn ident_end(bytes: &[u8], at: usize) -> usize {
    scan(bytes, at, IDENT)
}

/// The first index at or after `at` whose byte is not of `class`.
fn scan(bytes: &[u8], mut at: usize, class: u8) -> usize {
    while let Some(&b) = bytes.get(at) {
        if CLASS[usize::from(b)] & class == 0 {
            break;
        }
        at += 1;
    }
    at
}

/// `[-]digits` or `[-]digits.digits` at `start` with at most 15 digits in all and ended by
/// neither a word character nor `.`: the numbers printed graphs are made of, valued in one
/// pass; returns the value and where the number ends. The values are those of the general
/// path: an integer is exact, and a float is the quotient of two exactly represented numbers
/// (a mantissa below 2^53 and a power of ten up to 10^15), which IEEE division rounds
/// correctly, as parsing the text does. `None` leaves everything else (hex, exponents, long
/// literals, errors) to the general path.
pub(crate) fn short_number(bytes: &[u8], start: usize) -> Option<(Number, usize)> {
    const MAX_DIGITS: usize = 15;
    const POW10: [f64; MAX_DIGITS + 1] =
        [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
    let negative = bytes.get(start) == Some(&b'-');
    let mut at = start + usize::from(negative);
    let mut mantissa: u64 = 0;
    let mut digits = 0;
    let mut point = None;
    loop {
        match bytes.get(at) {
            Some(&b) if b.is_ascii_digit() => {
                if digits == MAX_DIGITS {
                    return None;
                }
                mantissa = mantissa * 10 + u64::from(b - b'0');
                digits += 1;
            }
            Some(b'.') if point.is_none() && bytes.get(at + 1).is_some_and(u8::is_ascii_digit) => point = Some(digits),
            _ => break,
        }
        at += 1;
    }
    if digits == 0 || bytes.get(at).is_some_and(|&b| b == b'.' || is_ident_byte(b)) {
        return None;
    }
    let number = match point {
        None => {
            let value = i128::from(mantissa);
            Number::Int(if negative { -value } else { value })
        }
        Some(whole) => {
            let value = mantissa as f64 / POW10.get(digits - whole).copied()?;
            Number::Float(if negative { -value } else { value })
        }
    };
    Some((number, at))
}

/// Whether `b` may start an identifier.
pub(crate) fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// Whether `b` may continue an identifier.
pub(crate) fn is_ident_byte(b: u8) -> bool {
    CLASS[usize::from(b)] & IDENT != 0
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

impl<'s> Lexer<'s> {
    /// A lexer at the start of `src`.
    ///
    /// A source beyond [`super::MAX_FILE_SIZE`] lexes as empty: the parser reports it as
    /// too large before lexing, and the bound keeps every offset within a `u32` span. A
    /// leading byte order mark (which some editors write) is skipped.
    pub fn new(src: &'s str) -> Lexer<'s> {
        let src = if src.len() > super::MAX_FILE_SIZE { "" } else { src };
        let pos = if src.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
        Lexer {
            src,
            pos,
            depth: 0,
            after_token: false,
            lines: None,
            comments: VecDeque::new(),
            number: Number::Int(0),
            strings: Vec::new(),
            byte_strings: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The source text.
    pub fn source(&self) -> &'s str {
        self.src
    }

    /// Goes on lexing at `pos`, the end of tokens the parser read from the source itself
    /// (see `parser/fast.rs`): at least the current position, on a token boundary, with
    /// brackets balanced in between.
    pub fn resume_at(&mut self, pos: usize) {
        self.pos = pos.max(self.pos);
    }

    /// The decoded value of string token `index`, taken out of the side table. Values are
    /// taken in order right after their token, so the table stays a few entries long
    /// (taken, now empty, entries at its end are dropped; an untaken empty string reads
    /// back as the same empty string).
    pub fn take_string(&mut self, index: u32) -> String {
        let value = self.strings.get_mut(index as usize).map(std::mem::take).unwrap_or_default();
        while self.strings.last().is_some_and(String::is_empty) {
            self.strings.pop();
        }
        value
    }

    /// The decoded value of byte string token `index`, like [`Lexer::take_string`].
    pub fn take_bytes(&mut self, index: u32) -> Vec<u8> {
        let value = self.byte_strings.get_mut(index as usize).map(std::mem::take).unwrap_or_default();
        while self.byte_strings.last().is_some_and(Vec::is_empty) {
            self.byte_strings.pop();
        }
        value
    }

    /// Line breaks after the current position: an upper bound on the statements still to
    /// come in canonical text, which the parser sizes its tables with. Counted on demand, a
    /// wide byte count over the text not counted before (the whole source once in all).
    pub fn lines_left(&mut self) -> usize {
        // Byte counters per chunk of 255 bytes, which the compiler turns into wide compares.
        fn count(bytes: &[u8]) -> usize {
            let chunk = |c: &[u8]| usize::from(c.iter().fold(0u8, |n, &b| n.wrapping_add(u8::from(b == b'\n'))));
            bytes.chunks(255).map(chunk).sum()
        }
        let bytes = self.src.as_bytes();
        let (at, before, total) = *self.lines.get_or_insert_with(|| (0, 0, count(bytes)));
        let pos = self.pos.max(at);
        let before = before + count(bytes.get(at..pos).unwrap_or(&[]));
        self.lines = Some((pos, before, total));
        total.saturating_sub(before)
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    fn span(&self, start: usize) -> Span {
        // Offsets fit `u32`: `new` refuses sources beyond `MAX_FILE_SIZE` (1 GiB).
        Span { start: start as u32, end: self.pos as u32 }
    }

    /// Skips whitespace and queues comments.
    #[inline]
    fn skip_trivia(&mut self) {
        let bytes = self.src.as_bytes();
        let from = self.pos;
        let mut pos = from;
        loop {
            while let Some(&b) = bytes.get(pos) {
                if CLASS[usize::from(b)] & SPACE == 0 {
                    break;
                }
                pos += 1;
            }
            if bytes.get(pos) == Some(&b'/') && bytes.get(pos + 1) == Some(&b'/') {
                pos = self.comment(from, pos);
            } else {
                break;
            }
        }
        self.pos = pos;
    }

    /// Queues the comment starting at `start` (its `//`), in the trivia that starts at
    /// `from` (where the previous token ended); returns where its line ends.
    #[cold]
    #[inline(never)]
    fn comment(&mut self, from: usize, start: usize) -> usize {
        let bytes = self.src.as_bytes();
        let end = bytes
            .get(start..)
            .and_then(|rest| rest.iter().position(|&c| c == b'\n'))
            .map_or(bytes.len(), |i| start + i);
        // Windows line ends: `\r` belongs to the line break, not to the comment.
        let text = self.src.get(start + 2..end).unwrap_or("").trim_end_matches('\r');
        let span = Span::new(start, start + 2 + text.len());
        // Whether only whitespace precedes it on its line: no token yet, or a line break
        // since the last one (looked for here rather than tracked byte by byte, since
        // comments are rare and whitespace is not).
        let own_line = !self.after_token || bytes.get(from..start).is_some_and(|gap| gap.contains(&b'\n'));
        self.comments.push_back(Comment { text, span, own_line });
        end
    }

    /// The next token; [`TokenKind::Eof`] at the end, forever.
    pub fn next_token(&mut self) -> LexResult<Token> {
        let bytes = self.src.as_bytes();
        self.skip_trivia();
        self.after_token = true;
        let start = self.pos;
        let Some(&b) = bytes.get(start) else {
            return Ok(Token::new(TokenKind::Eof, Span::new(start, start)));
        };
        // The frequent starts first, each a test of one class bit.
        let class = CLASS[usize::from(b)];
        if class & PUNCT != 0 {
            let (kind, depth) = PUNCT_TOKEN[usize::from(b)];
            self.pos = start + 1;
            let span = self.span(start);
            if depth > 0 {
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return fail(ParseError::TooDeep { span });
                }
            } else if depth < 0 {
                self.depth = self.depth.saturating_sub(1);
            }
            return Ok(Token::new(kind, span));
        }
        if class & SIGIL != 0 {
            return self.name(start, b);
        }
        if class & WORD != 0 && !(b == b'x' && bytes.get(start + 1) == Some(&b'"')) {
            return Ok(self.word(start));
        }
        if class & DIGIT != 0 {
            return self.number(start);
        }
        self.other(start, b)
    }

    /// The tokens that start with a byte [`Lexer::next_token`] does not handle itself.
    #[inline(never)]
    fn other(&mut self, start: usize, b: u8) -> LexResult<Token> {
        let (kind, len) = match b {
            b'"' => return self.string(start),
            b'x' => return self.byte_string(start),
            b'-' => match self.byte(start + 1) {
                Some(b'>') => (TokenKind::Arrow, 2),
                Some(b'0'..=b'9') => return self.number(start),
                Some(c) if is_ident_start(c) => return self.negative_word(start),
                _ => return fail(ParseError::UnexpectedChar { ch: '-', span: Span::new(start, start + 1) }),
            },
            b'.' if self.byte(start + 1) == Some(b'.') => (TokenKind::DotDot, 2),
            _ => return self.unexpected_char(start),
        };
        self.pos = start + len;
        Ok(Token::new(kind, self.span(start)))
    }

    #[cold]
    fn unexpected_char(&self, start: usize) -> LexResult<Token> {
        let ch = self.src.get(start..).and_then(|s| s.chars().next()).unwrap_or('\u{fffd}');
        fail(ParseError::UnexpectedChar { ch, span: Span::new(start, start + ch.len_utf8()) })
    }

    fn name(&mut self, start: usize, sigil: u8) -> LexResult<Token> {
        let end = scan(self.src.as_bytes(), start + 1, NAME);
        if end == start + 1 {
            return fail(ParseError::EmptyName { sigil: sigil as char, span: Span::new(start, start + 1) });
        }
        self.pos = end;
        let span = self.span(start);
        let len = end - start - 1;
        if len > MAX_NAME_LEN {
            self.errors.push(ParseError::NameTooLong { len, span });
        }
        let kind = if sigil == b'@' { TokenKind::Global } else { TokenKind::Local };
        Ok(Token::new(kind, span))
    }

    fn word(&mut self, start: usize) -> Token {
        let bytes = self.src.as_bytes();
        let end = scan(bytes, start + 1, IDENT);
        self.pos = end;
        let span = self.span(start);
        match bytes.get(start..end) {
            Some(b"inf") => self.number_token(Number::Float(f64::INFINITY), span),
            Some(b"nan") => self.number_token(Number::Float(f64::NAN), span),
            word => Token { kind: TokenKind::Ident, kw: Kw::of(word.unwrap_or_default()), index: 0, span },
        }
    }

    /// `-` directly followed by a word: only `-inf` is a token.
    #[inline(never)]
    fn negative_word(&mut self, start: usize) -> LexResult<Token> {
        let word = self.word(start + 1);
        match (word.kind, self.number) {
            (TokenKind::Float, Number::Float(f)) if f.is_infinite() => {
                Ok(self.number_token(Number::Float(f64::NEG_INFINITY), self.span(start)))
            }
            _ => fail(ParseError::UnexpectedChar { ch: '-', span: Span::new(start, start + 1) }),
        }
    }

    #[inline(never)]
    fn number(&mut self, start: usize) -> LexResult<Token> {
        if let Some(token) = self.short_number_token(start) {
            return Ok(token);
        }
        let bytes = self.src.as_bytes();
        let negative = bytes.get(start) == Some(&b'-');
        let digits_start = if negative { start + 1 } else { start };
        let mut end = digits_start;
        let result = if bytes.get(end) == Some(&b'0') && bytes.get(end + 1) == Some(&b'x') {
            end += 2;
            let hex_start = end;
            while bytes.get(end).is_some_and(|b| b.is_ascii_hexdigit()) {
                end += 1;
            }
            if end == hex_start {
                self.pos = end;
                return fail(ParseError::InvalidNumber { reason: "`0x` needs hex digits", span: self.span(start) });
            }
            self.int_value(&self.src[hex_start..end], 16, negative)
        } else {
            let mut is_float = false;
            while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
                is_float = true;
                end += 1;
                while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                    end += 1;
                }
            }
            if matches!(bytes.get(end), Some(b'e' | b'E')) {
                let mut exp = end + 1;
                if matches!(bytes.get(exp), Some(b'+' | b'-')) {
                    exp += 1;
                }
                if bytes.get(exp).is_some_and(u8::is_ascii_digit) {
                    is_float = true;
                    end = exp;
                    while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                        end += 1;
                    }
                }
            }
            if is_float {
                self.src[start..end].parse::<f64>().map(Number::Float).map_err(|_| "malformed float")
            } else {
                self.int_value(&self.src[digits_start..end], 10, negative)
            }
        };
        // `12abc`, `1.5.2`, `1e`: a number must not run into a word or another fraction.
        if bytes.get(end).is_some_and(|&b| is_ident_byte(b))
            || (bytes.get(end) == Some(&b'.') && bytes.get(end + 1) != Some(&b'.'))
        {
            while bytes.get(end).is_some_and(|&b| is_ident_byte(b) || b == b'.') {
                end += 1;
            }
            self.pos = end;
            return fail(ParseError::InvalidNumber {
                reason: "a number must be followed by a space or punctuation",
                span: self.span(start),
            });
        }
        self.pos = end;
        let span = self.span(start);
        match result {
            Ok(number) => Ok(self.number_token(number, span)),
            Err(reason) => {
                // The literal is well delimited: report it and go on with a zero.
                self.errors.push(ParseError::InvalidNumber { reason, span });
                Ok(self.number_token(Number::Int(0), span))
            }
        }
    }

    /// A number token, its value kept in [`Lexer::number`].
    fn number_token(&mut self, number: Number, span: Span) -> Token {
        self.number = number;
        let kind = match number {
            Number::Int(_) => TokenKind::Int,
            Number::Float(_) => TokenKind::Float,
        };
        Token::new(kind, span)
    }

    /// [`short_number`] at `start`, as a token.
    fn short_number_token(&mut self, start: usize) -> Option<Token> {
        let (number, end) = short_number(self.src.as_bytes(), start)?;
        self.pos = end;
        Some(self.number_token(number, self.span(start)))
    }

    fn int_value(&self, digits: &str, radix: u32, negative: bool) -> Result<Number, &'static str> {
        // The digits were checked by the caller; accumulate them directly (`from_str_radix`
        // on `u128` was a visible part of lexing a large graph).
        let mut magnitude: u128 = 0;
        for b in digits.bytes() {
            let digit = u128::from(hex_value(b).ok_or("malformed integer")?);
            magnitude = magnitude
                .checked_mul(u128::from(radix))
                .and_then(|m| m.checked_add(digit))
                .ok_or("integer does not fit in 128 bits")?;
        }
        let value = if negative { 0i128.checked_sub_unsigned(magnitude) } else { i128::try_from(magnitude).ok() };
        value.map(Number::Int).ok_or("integer does not fit in 128 bits")
    }

    #[inline(never)]
    fn string(&mut self, start: usize) -> LexResult<Token> {
        let bytes = self.src.as_bytes();
        if bytes.get(start + 1..start + 3) == Some(b"\"\"") {
            return self.raw_string(start);
        }
        let mut out = String::new();
        let mut i = start + 1;
        let mut chunk = i;
        loop {
            match bytes.get(i) {
                None | Some(b'\n') => {
                    self.pos = i;
                    return fail(ParseError::UnterminatedString { span: self.span(start) });
                }
                Some(b'"') => {
                    out.push_str(&self.src[chunk..i]);
                    i += 1;
                    break;
                }
                Some(b'\\') => {
                    out.push_str(&self.src[chunk..i]);
                    let (ch, len) = self.escape(i)?;
                    out.push(ch);
                    i += len;
                    chunk = i;
                }
                Some(_) => i += 1,
            }
        }
        self.pos = i;
        let index = u32::try_from(self.strings.len()).unwrap_or(u32::MAX);
        self.strings.push(out);
        Ok(Token { kind: TokenKind::Str, kw: Kw::None, index, span: self.span(start) })
    }

    /// `"""...."""`: raw text over any number of lines, no escapes (an inline shader's
    /// source); it ends at the first `"""`.
    fn raw_string(&mut self, start: usize) -> LexResult<Token> {
        let from = start + 3;
        let Some(len) = self.src.get(from..).and_then(|rest| rest.find("\"\"\"")) else {
            self.pos = self.src.len();
            return fail(ParseError::UnterminatedString { span: self.span(start) });
        };
        let text = self.src[from..from + len].to_string();
        self.pos = from + len + 3;
        let index = u32::try_from(self.strings.len()).unwrap_or(u32::MAX);
        self.strings.push(text);
        Ok(Token { kind: TokenKind::Str, kw: Kw::None, index, span: self.span(start) })
    }

    /// Decodes the escape at `at` (a `\`); returns the character and the escape's length.
    fn escape(&self, at: usize) -> LexResult<(char, usize)> {
        let bytes = self.src.as_bytes();
        let simple = |c| Ok((c, 2));
        match bytes.get(at + 1) {
            Some(b'\\') => simple('\\'),
            Some(b'"') => simple('"'),
            Some(b'n') => simple('\n'),
            Some(b't') => simple('\t'),
            Some(b'u') => {
                let invalid = |reason, end: usize| ParseError::InvalidEscape { reason, span: Span::new(at, end) };
                if bytes.get(at + 2) != Some(&b'{') {
                    return fail(invalid("`\\u` must be followed by `{`", at + 2));
                }
                let digits = at + 3;
                let mut end = digits;
                while bytes.get(end).is_some_and(u8::is_ascii_hexdigit) {
                    end += 1;
                }
                if bytes.get(end) != Some(&b'}') {
                    return fail(invalid("`\\u{` must be followed by hex digits and `}`", end.min(bytes.len())));
                }
                if end == digits || end - digits > 6 {
                    return fail(invalid("`\\u{...}` takes 1 to 6 hex digits", end + 1));
                }
                let code = u32::from_str_radix(&self.src[digits..end], 16).unwrap_or(u32::MAX);
                match char::from_u32(code) {
                    Some(c) => Ok((c, end + 1 - at)),
                    None => fail(invalid("not a Unicode scalar value", end + 1)),
                }
            }
            _ => {
                let len = self.src[at + 1..].chars().next().map_or(1, |c| 1 + c.len_utf8());
                fail(ParseError::InvalidEscape { reason: "unknown escape", span: Span::new(at, at + len) })
            }
        }
    }

    #[inline(never)]
    fn byte_string(&mut self, start: usize) -> LexResult<Token> {
        let bytes = self.src.as_bytes();
        let mut out = Vec::new();
        let mut i = start + 2;
        loop {
            match bytes.get(i) {
                None | Some(b'\n') => {
                    self.pos = i;
                    return fail(ParseError::UnterminatedString { span: self.span(start) });
                }
                Some(b'"') => break,
                Some(b' ') => i += 1,
                Some(&b) => {
                    let Some(hi) = hex_value(b) else {
                        let len = self.src[i..].chars().next().map_or(1, char::len_utf8);
                        return fail(ParseError::InvalidBytes {
                            reason: "only hex digits and spaces are allowed",
                            span: Span::new(i, i + len),
                        });
                    };
                    let Some(lo) = bytes.get(i + 1).and_then(|&b| hex_value(b)) else {
                        return fail(ParseError::InvalidBytes {
                            reason: "hex digits must come in pairs",
                            span: Span::new(i, i + 1),
                        });
                    };
                    out.push(hi << 4 | lo);
                    i += 2;
                }
            }
        }
        self.pos = i + 1;
        let index = u32::try_from(self.byte_strings.len()).unwrap_or(u32::MAX);
        self.byte_strings.push(out);
        Ok(Token { kind: TokenKind::Bytes, kw: Kw::None, index, span: self.span(start) })
    }
}

#[cfg(test)]
mod tests;
