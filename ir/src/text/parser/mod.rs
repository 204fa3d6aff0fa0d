//! The recursive-descent parser: tokens to a [`Module`].
//!
//! One pass over the tokens builds the module. Module-level names may be used before their
//! definition, so references to kernels, memory objects and graphs get provisional handles
//! (one per distinct name, see [`resolve`]) that are rewritten to the real ones once every
//! item is parsed; kernel value types, which depend on `device_global` element types, are
//! computed after that ([`infer`]). Graph-local and kernel-local names must be defined
//! before use and are resolved on the spot through hash maps.
//!
//! Errors: the first syntax error ends parsing (what follows it cannot be trusted);
//! undefined or duplicate names are recorded and parsing goes on with a placeholder, so one
//! run reports many of them. A module with any error is never returned, so placeholders are
//! never seen.

mod command;
mod fast;
mod graph;
mod infer;
mod items;
mod kernel;
mod names;
mod resolve;
#[cfg(test)]
mod tests;

use super::error::ParseError;
use super::keyword::Kw;
use super::lexer::{Lexer, Number, Token, TokenKind};
use crate::module::{Comments, Module};
use crate::span::Span;
use crate::types::{Access, LitValue, ScalarType, Type};
use items::unknown;
use resolve::Symbols;

/// Stop collecting recoverable errors after this many: a file this broken needs fixing
/// from the top anyway.
const MAX_ERRORS: usize = 64;

/// The result of a parsing step; `Err` is a syntax error that ends parsing.
type PResult<T> = Result<T, Box<ParseError>>;

/// Parses, resolves and types a whole module.
pub(crate) fn parse_module(source: &str) -> Result<Module, Vec<ParseError>> {
    parse_module_with(source, true).0
}

/// [`parse_module`], with or without the fast path for node statements (`fast.rs`), and
/// how many statements the fast path took: its tests compare the two ways.
fn parse_module_with(source: &str, fast_path: bool) -> (Result<Module, Vec<ParseError>>, usize) {
    if source.len() > super::MAX_FILE_SIZE {
        return (Err(vec![ParseError::FileTooLarge { len: source.len() }]), 0);
    }
    let mut parser = Parser::new(source);
    parser.fast_path = fast_path;
    let result = parser.run();
    (result, parser.fast_taken)
}

impl Parser<'_> {
    /// Parses the whole source (see [`parse_module`]).
    fn run(&mut self) -> Result<Module, Vec<ParseError>> {
        let parser = self;
        let outcome = parser.module();
        let mut errors = std::mem::take(&mut parser.errors);
        errors.append(&mut parser.lex.errors);
        match outcome {
            Ok(()) => {
                // Every item was parsed, so undefined module-level names are real findings even
                // when other errors were found: report them too.
                let mut module = std::mem::take(&mut parser.module);
                parser.syms.resolve(&mut module, &mut errors);
                if errors.is_empty() {
                    infer::infer_module(&mut module);
                    return Ok(module);
                }
            }
            Err(fatal) => errors.push(*fatal),
        }
        errors.sort_by_key(|e| e.span().start);
        errors.truncate(MAX_ERRORS);
        Err(errors)
    }
}

/// Parser state shared by the item, graph and kernel parsers.
pub(crate) struct Parser<'s> {
    lex: Lexer<'s>,
    peeked: Option<Token>,
    /// End of the last consumed token.
    prev_end: u32,
    /// Recoverable errors so far.
    errors: Vec<ParseError>,
    module: Module,
    syms: Symbols<'s>,
    /// The syntax of the construct being parsed, shown as help on syntax errors.
    hint: &'static str,
    /// Whether node statements of the common forms are read by `fast.rs` (always, except
    /// in the tests that compare both paths).
    fast_path: bool,
    /// Node statements the fast path took.
    fast_taken: usize,
}

impl<'s> Parser<'s> {
    fn new(source: &'s str) -> Parser<'s> {
        Parser {
            lex: Lexer::new(source),
            peeked: None,
            prev_end: 0,
            errors: Vec::new(),
            module: Module::default(),
            syms: Symbols::default(),
            hint: "see docs/ir.md for the syntax",
            fast_path: true,
            fast_taken: 0,
        }
    }

    /// Records a recoverable error.
    fn error(&mut self, error: ParseError) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(error);
        }
    }

    /// Turns the "undefined" errors recorded since `from` for names of `kinds` (sigil
    /// `sigil`) into "defined later" ones where `defined` now finds the name: graph-local
    /// names and kernel values must come before their uses, and a name the scope learns
    /// later is a misplaced definition, not a missing one (no "did you mean").
    fn defined_later(
        &mut self,
        from: usize,
        sigil: char,
        kinds: &[&str],
        defined: impl Fn(&str) -> Option<Span>,
        user: impl Fn(Span) -> Option<String>,
    ) {
        let source = self.lex.source();
        for error in self.errors.iter_mut().skip(from) {
            let ParseError::Undefined { kind, name, span, .. } = error else { continue };
            let Some(bare) = name.strip_prefix(sigil) else { continue };
            if !kinds.contains(kind) {
                continue;
            }
            let Some(def) = defined(bare) else { continue };
            let line = source.get(..def.start as usize).unwrap_or("").matches('\n').count() + 1;
            let user = user(*span);
            *error = ParseError::DefinedLater { kind, name: std::mem::take(name), span: *span, def, line, user };
        }
    }

    /// The error for a block opened by `open` (described by `what`) if `t`, the token where
    /// its next statement or op should start, cannot be one: the end of the file, or an
    /// item keyword at the very start of a line (items are not indented; statements and
    /// ops are), which means the block's `}` was forgotten. The error points at the `{`,
    /// where the fix goes, rather than calling the next item an unknown op or statement.
    fn unclosed(&self, t: Token, open: Span, what: impl FnOnce() -> String) -> Option<Box<ParseError>> {
        let src = self.lex.source();
        let at_line_start = t.span.start == 0 || src.as_bytes().get(t.span.start as usize - 1) == Some(&b'\n');
        let item = t.kind == TokenKind::Ident
            && at_line_start
            && matches!(t.kw, Kw::Kernel | Kw::Func | Kw::Graph | Kw::Usm | Kw::Buffer | Kw::DeviceGlobal);
        let found = match t.kind {
            TokenKind::Eof => "end of file".to_string(),
            _ if item => {
                let line = src.get(..t.span.start as usize).unwrap_or("").matches('\n').count() + 1;
                format!("`{}` on line {line}", self.text(t))
            }
            _ => return None,
        };
        Some(Box::new(ParseError::Unclosed { what: what(), found, span: open, at: t.span }))
    }

    /// The next token, without consuming it.
    fn peek(&mut self) -> PResult<Token> {
        match self.peeked {
            Some(t) => Ok(t),
            None => {
                let t = self.lex.next_token()?;
                self.peeked = Some(t);
                Ok(t)
            }
        }
    }

    /// Consumes and returns the next token.
    fn bump(&mut self) -> PResult<Token> {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lex.next_token()?,
        };
        self.prev_end = t.span.end;
        Ok(t)
    }

    /// The source text of a token.
    fn text(&self, t: Token) -> &'s str {
        self.lex.source().get(t.span.range()).unwrap_or("")
    }

    /// The name of a `@name` / `%name` token, without the sigil.
    fn name_of(&self, t: Token) -> &'s str {
        self.text(t).get(1..).unwrap_or("")
    }

    /// Whether the next token is the keyword `kw`.
    fn at_keyword(&mut self, kw: Kw) -> PResult<bool> {
        let t = self.peek()?;
        Ok(t.kind == TokenKind::Ident && t.kw == kw)
    }

    /// Consumes the keyword `kw` if it is next.
    fn eat_keyword(&mut self, kw: Kw) -> PResult<bool> {
        if self.at_keyword(kw)? {
            self.bump()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Consumes the keyword `kw` or fails.
    fn expect_keyword(&mut self, kw: Kw) -> PResult<Token> {
        let t = self.peek()?;
        if t.kind == TokenKind::Ident && t.kw == kw {
            return self.bump();
        }
        Err(self.unexpected(t, &format!("`{}`", kw.text())))
    }

    /// Consumes a token of kind `kind` if it is next.
    fn eat(&mut self, kind: TokenKind) -> PResult<bool> {
        if self.peek()?.kind == kind {
            self.bump()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Consumes a token of kind `kind` (punctuation) or fails.
    fn expect(&mut self, kind: TokenKind) -> PResult<Token> {
        let t = self.peek()?;
        if t.kind == kind {
            return self.bump();
        }
        let expected = format!("`{}`", punct_text(kind));
        // A missing `}` or `{` is a missing block, which the next line's token shows best.
        if matches!(kind, TokenKind::RBrace | TokenKind::LBrace) || t.kind == TokenKind::Eof {
            return Err(self.unexpected(t, &expected));
        }
        Err(self.missing_at_line_end(t, &expected))
    }

    /// Consumes a word (keyword or identifier) and returns it with its token.
    fn expect_word(&mut self, what: &str) -> PResult<(&'s str, Token)> {
        let t = self.peek()?;
        if t.kind == TokenKind::Ident {
            self.bump()?;
            return Ok((self.text(t), t));
        }
        Err(self.unexpected(t, what))
    }

    /// Consumes a `@name`.
    fn expect_global(&mut self, what: &str) -> PResult<(&'s str, Span)> {
        let t = self.peek()?;
        if t.kind == TokenKind::Global {
            self.bump()?;
            return Ok((self.name_of(t), t.span));
        }
        Err(self.unexpected(t, what))
    }

    /// Consumes a `%name`.
    fn expect_local(&mut self, what: &str) -> PResult<(&'s str, Span)> {
        let t = self.peek()?;
        if t.kind == TokenKind::Local {
            self.bump()?;
            return Ok((self.name_of(t), t.span));
        }
        Err(self.unexpected(t, what))
    }

    /// Consumes a string literal and returns its decoded value.
    fn expect_string(&mut self, what: &str) -> PResult<String> {
        let t = self.peek()?;
        if t.kind == TokenKind::Str {
            self.bump()?;
            return Ok(self.lex.take_string(t.index));
        }
        Err(self.unexpected(t, what))
    }

    /// Consumes an integer literal.
    fn expect_int(&mut self, what: &str) -> PResult<(i128, Span)> {
        let t = self.peek()?;
        if let (TokenKind::Int, Number::Int(v)) = (t.kind, self.lex.number) {
            self.bump()?;
            return Ok((v, t.span));
        }
        Err(self.unexpected(t, what))
    }

    /// Consumes an integer that must fit `T`; `what` names the field, `range` its bounds.
    fn int_in<T: TryFrom<i128>>(&mut self, what: &'static str, range: &'static str) -> PResult<T> {
        let (v, span) = self.expect_int(what)?;
        T::try_from(v).map_err(|_| Box::new(ParseError::OutOfRange { what, range, span }))
    }

    /// Consumes a non-negative integer that fits `u64`.
    fn expect_u64(&mut self, what: &'static str) -> PResult<u64> {
        self.int_in(what, "0..=18446744073709551615")
    }

    /// Consumes a non-negative integer that fits `u32`.
    fn expect_u32(&mut self, what: &'static str) -> PResult<u32> {
        self.int_in(what, "0..=4294967295")
    }

    /// The error for an unexpected token `t` where `expected` was allowed.
    /// The error for an unexpected token `t` where `expected` was allowed.
    fn unexpected(&self, t: Token, expected: &str) -> Box<ParseError> {
        Box::new(ParseError::Unexpected {
            expected: expected.to_string(),
            found: self.describe(t),
            help: self.hint,
            span: t.span,
        })
    }

    /// [`Parser::unexpected`] for something that continues the construct on the line
    /// before (a `:` and type, a `)`, ...): when a line break separates `t` from the token
    /// before, the thing was missing at the end of that line, so the error points there
    /// (zero width, "expected here") and names where `t` is, not at the next line's token.
    fn missing_at_line_end(&self, t: Token, expected: &str) -> Box<ParseError> {
        let src = self.lex.source();
        let gap = src.get(self.prev_end as usize..t.span.start as usize).unwrap_or("");
        let (found, span) = if self.prev_end > 0 && gap.contains('\n') {
            let line = src.get(..t.span.start as usize).unwrap_or("").matches('\n').count() + 1;
            let at = self.prev_end as usize;
            (format!("{} on line {line}", self.describe(t)), Span::new(at, at))
        } else {
            (self.describe(t), t.span)
        };
        Box::new(ParseError::Unexpected { expected: expected.to_string(), found, help: self.hint, span })
    }

    /// A short description of a token for "found ..." messages.
    fn describe(&self, t: Token) -> String {
        let text = self.text(t);
        let short: String = text.chars().take(40).collect();
        let ellipsis = if short.len() < text.len() { "..." } else { "" };
        match t.kind {
            TokenKind::Eof => "end of file".to_string(),
            TokenKind::Global | TokenKind::Local => format!("name `{short}{ellipsis}`"),
            TokenKind::Ident => format!("`{short}{ellipsis}`"),
            TokenKind::Int => format!("integer `{short}{ellipsis}`"),
            TokenKind::Float => format!("float `{short}{ellipsis}`"),
            TokenKind::Str => "a string".to_string(),
            TokenKind::Bytes => "a byte string".to_string(),
            kind => format!("`{}`", punct_text(kind)),
        }
    }

    // ---- comments ----

    /// Takes every unclaimed comment before the next token, which the caller has just
    /// peeked at (so the lexer has passed them): the leading comments of the item,
    /// statement or op that starts there.
    /// Whether the source has a blank line between the end of the previous token and `next`
    /// (or the first comment queued before it).
    fn blank_line_before(&self, next: Token) -> bool {
        let first = self.lex.comments.front().map_or(next.span.start, |c| c.span.start);
        let gap = self.lex.source().get(self.prev_end as usize..first as usize).unwrap_or("");
        gap.bytes().filter(|&b| b == b'\n').nth(1).is_some()
    }

    fn leading_comments(&mut self) -> Comments {
        if self.lex.comments.is_empty() {
            return Comments::default();
        }
        let leading = self.lex.comments.drain(..).map(|c| c.text.to_string()).collect();
        Comments { leading, ..Comments::default() }
    }

    /// Finishes the comments of an entity whose last token was just consumed: comments
    /// left inside it (where nothing can hold them, e.g. inside an argument list) join its
    /// leading comments, and a comment after it on the same line is its trailing comment.
    fn finish_comments(&mut self, comments: &mut Comments) -> PResult<()> {
        let end = self.prev_end;
        self.peek()?;
        if self.lex.comments.is_empty() {
            return Ok(());
        }
        while self.lex.comments.front().is_some_and(|c| c.span.start < end) {
            if let Some(c) = self.lex.comments.pop_front() {
                comments.leading.push(c.text.to_string());
            }
        }
        if self.lex.comments.front().is_some_and(|c| !c.own_line) {
            comments.trailing = self.lex.comments.pop_front().map(|c| c.text.to_string());
        }
        Ok(())
    }

    /// Takes every unclaimed comment before the next token (a closing `}`).
    fn closing_comments(&mut self) -> PResult<Vec<String>> {
        self.peek()?;
        Ok(self.lex.comments.drain(..).map(|c| c.text.to_string()).collect())
    }

    // ---- shared grammar pieces ----

    /// `scalar`
    fn scalar(&mut self) -> PResult<ScalarType> {
        let (word, t) = self.expect_word("a scalar type")?;
        ScalarType::from_keyword(word)
            .ok_or_else(|| unknown("scalar type", word, "bool, i32, u32, i64, u64, f16, f32", t.span))
    }

    /// `type := scalar | vec2<scalar> | vec3<scalar> | vec4<scalar>`
    fn ty(&mut self) -> PResult<Type> {
        let (word, t) = self.expect_word("a type")?;
        if let Some(s) = ScalarType::from_keyword(word) {
            return Ok(Type::scalar(s));
        }
        let lanes = match word {
            "vec2" => 2,
            "vec3" => 3,
            "vec4" => 4,
            _ => {
                return Err(unknown(
                    "type",
                    word,
                    "bool, i32, u32, i64, u64, f16, f32, vec2<T>, vec3<T>, vec4<T>",
                    t.span,
                ))
            }
        };
        self.expect(TokenKind::Lt)?;
        let scalar = self.scalar()?;
        self.expect(TokenKind::Gt)?;
        Ok(Type::vector(scalar, lanes))
    }

    /// `access := read | write | read_write | no_init`
    fn access(&mut self) -> PResult<Access> {
        let (word, t) = self.expect_word("an access mode")?;
        Access::from_keyword(word)
            .ok_or_else(|| unknown("access mode", word, "read, write, read_write, no_init", t.span))
    }

    /// Whether the next token starts a literal.
    fn at_literal(&mut self) -> PResult<bool> {
        let t = self.peek()?;
        Ok(match t.kind {
            TokenKind::Int | TokenKind::Float => true,
            TokenKind::Ident => matches!(t.kw, Kw::True | Kw::False),
            _ => false,
        })
    }

    /// `lit := INT | FLOAT | true | false`
    fn literal(&mut self) -> PResult<(LitValue, Span)> {
        let t = self.peek()?;
        let value = match (t.kind, t.kw, self.lex.number) {
            (TokenKind::Int, _, Number::Int(v)) => LitValue::Int(v),
            (TokenKind::Float, _, Number::Float(f)) => LitValue::Float(f),
            (TokenKind::Ident, Kw::True, _) => LitValue::Bool(true),
            (TokenKind::Ident, Kw::False, _) => LitValue::Bool(false),
            _ => return Err(self.unexpected(t, "a literal (integer, float, `true` or `false`)")),
        };
        self.bump()?;
        Ok((value, t.span))
    }

    /// `'(' item (',' item)* ')'` with at least one item.
    fn paren_list<T>(&mut self, mut item: impl FnMut(&mut Self) -> PResult<T>) -> PResult<Vec<T>> {
        self.expect(TokenKind::LParen)?;
        let mut out = vec![item(self)?];
        while self.eat(TokenKind::Comma)? {
            out.push(item(self)?);
        }
        self.expect(TokenKind::RParen)?;
        Ok(out)
    }
}

/// The spelling of a punctuation token kind.
fn punct_text(kind: TokenKind) -> &'static str {
    match kind {
        TokenKind::LParen => "(",
        TokenKind::RParen => ")",
        TokenKind::LBrace => "{",
        TokenKind::RBrace => "}",
        TokenKind::LBracket => "[",
        TokenKind::RBracket => "]",
        TokenKind::Lt => "<",
        TokenKind::Gt => ">",
        TokenKind::Comma => ",",
        TokenKind::Colon => ":",
        TokenKind::Eq => "=",
        TokenKind::Plus => "+",
        TokenKind::Arrow => "->",
        TokenKind::DotDot => "..",
        TokenKind::Eof => "end of file",
        TokenKind::Global => "@name",
        TokenKind::Local => "%name",
        TokenKind::Ident => "identifier",
        TokenKind::Int => "integer",
        TokenKind::Float => "float",
        TokenKind::Str => "string",
        TokenKind::Bytes => "byte string",
    }
}
