//! A fast path for the node statements that large graphs are made of.
//!
//! A generated or printed graph is mostly lines like
//! `%k3 = kernel @axpy range(4096) args(%m3, @u1, 0.5) after(%k2)`, and reading them token by
//! token through the general parser (a lexer call, a result and a kind test per token) was
//! most of the cost of parsing such a graph. This file reads the common canonical forms
//! straight from the source bytes:
//!
//! ```text
//! %n = empty | kernel @k range(N, ...) args(arg, ...) | memcpy ptr, ptr, N
//!    | memset ptr, N, N | async_malloc T[N] [device|shared|host] [zero_init] | async_free %m
//!    [after(%a, %b, ...)]
//! arg := %dyn | ptr | literal [: T]        ptr := @mem [+ N] | %alloc [+ N]
//! ```
//!
//! with spaces between tokens, and gives up (`Ok(false)`, having changed nothing) on
//! anything else: other commands, `on`, `device(N)`, `via`, a line break or a comment inside the
//! statement, a long name, a number the one-pass lexer does not take, and every name that
//! does not resolve. The general path then parses the statement, so the fast path never
//! reports an error and never decides what is valid: it only produces, for the statements
//! it takes, what the general path produces (the same node, edges, spans, symbol uses in the
//! same order, and lexer state), and both finish through [`Parser::finish_node`]. The tests
//! parse every example both ways and compare.

use super::graph::{GraphScope, Local, NodeStmt, StmtBuffers};
use super::resolve::{handle, ItemKind};
use super::{PResult, Parser};
use crate::arena::Handle;
use crate::graph::{Arg, ArgValue, EdgeKind, Graph, KernelCommand, Launch, MemRef, Node, NodeKind, Pointer};
use crate::module::UsmKind;
use crate::span::Span;
use crate::text::lexer::{ident_end, is_ident_start, name_end, short_number, Number, Token};
use crate::text::MAX_NAME_LEN;
use crate::types::{LitValue, Literal, ScalarType, Type};

/// Reads the tokens of the canonical forms from the source; every method returns `None`
/// where the general path must take over.
struct Cursor<'s> {
    src: &'s str,
    /// Where reading goes on.
    at: usize,
    /// The end of the last token read.
    end: usize,
}

impl<'s> Cursor<'s> {
    fn bytes(&self) -> &'s [u8] {
        self.src.as_bytes()
    }

    /// Skips spaces (only: a line break, a tab or a comment leaves the fast path).
    fn spaces(&mut self) {
        while self.bytes().get(self.at) == Some(&b' ') {
            self.at += 1;
        }
    }

    /// The token start after spaces.
    fn start(&mut self) -> usize {
        self.spaces();
        self.at
    }

    /// Takes the one-byte token `b`.
    fn punct(&mut self, b: u8) -> Option<()> {
        let at = self.start();
        (self.bytes().get(at) == Some(&b)).then(|| self.took(at + 1))
    }

    /// Takes the one-byte token `b` if it is next.
    fn eat(&mut self, b: u8) -> bool {
        self.punct(b).is_some()
    }

    fn took(&mut self, end: usize) {
        self.at = end;
        self.end = end;
    }

    /// Takes a `@name` (`sigil` `@`) or `%name`: the name without the sigil and the span.
    fn name(&mut self, sigil: u8) -> Option<(&'s str, Span)> {
        let at = self.start();
        if self.bytes().get(at) != Some(&sigil) {
            return None;
        }
        let end = name_end(self.bytes(), at + 1);
        // Empty and too long names are errors, which are the general path's to report.
        if end == at + 1 || end - at - 1 > MAX_NAME_LEN {
            return None;
        }
        self.took(end);
        Some((self.src.get(at + 1..end)?, Span::new(at, end)))
    }

    /// Takes a word: its text and span.
    fn word(&mut self) -> Option<(&'s str, Span)> {
        let at = self.start();
        let first = *self.bytes().get(at)?;
        // `x"..."` is a byte string.
        if !is_ident_start(first) || (first == b'x' && self.bytes().get(at + 1) == Some(&b'"')) {
            return None;
        }
        let end = ident_end(self.bytes(), at + 1);
        let text = self.src.get(at..end)?;
        // `inf` and `nan` are numbers, for the general path.
        if text == "inf" || text == "nan" {
            return None;
        }
        self.took(end);
        Some((text, Span::new(at, end)))
    }

    /// Takes the keyword `kw`.
    fn keyword(&mut self, kw: &str) -> Option<()> {
        let (word, _) = self.word()?;
        (word == kw).then_some(())
    }

    /// Takes a number of the one-pass form.
    fn number(&mut self) -> Option<(Number, Span)> {
        let at = self.start();
        let (number, end) = short_number(self.bytes(), at)?;
        self.took(end);
        Some((number, Span::new(at, end)))
    }

    /// Takes an integer that fits `T` (out of range is an error: the general path's).
    fn int<T: TryFrom<i128>>(&mut self) -> Option<T> {
        match self.number()? {
            (Number::Int(v), _) => T::try_from(v).ok(),
            (Number::Float(_), _) => None,
        }
    }

    /// The word that starts the next token, past every kind of trivia, without taking it,
    /// and whether only spaces come before it: what decides whether an optional part
    /// follows (`after`, `zero_init`, ...), as the general path decides it.
    fn next_word(&self) -> (Option<&'s str>, bool) {
        let bytes = self.bytes();
        let mut at = self.at;
        let mut same_line = true;
        loop {
            match bytes.get(at) {
                Some(b' ') => at += 1,
                Some(b'\t' | b'\r' | b'\n') => {
                    same_line = false;
                    at += 1;
                }
                Some(b'/') if bytes.get(at + 1) == Some(&b'/') => {
                    same_line = false;
                    at = bytes
                        .get(at..)
                        .and_then(|r| r.iter().position(|&b| b == b'\n'))
                        .map_or(bytes.len(), |i| at + i);
                }
                _ => break,
            }
        }
        let word = match bytes.get(at) {
            Some(&b) if is_ident_start(b) => self.src.get(at..ident_end(bytes, at + 1)),
            _ => None,
        };
        (word, same_line)
    }
}

/// A module-level name the statement uses: interned while reading, and recorded as used
/// only once the statement is taken (in reading order, as the general path records them).
type Use = (usize, ItemKind, Span);

impl<'s> Parser<'s> {
    /// Parses the node statement that starts with `first` (a `%name`, peeked, with no
    /// comment before it) if it has one of the forms above; `Ok(false)`, with nothing
    /// changed, if not.
    pub(super) fn fast_node_stmt(
        &mut self,
        graph: &mut Graph,
        scope: &mut GraphScope<'s>,
        bufs: &mut StmtBuffers,
        first: Token,
    ) -> PResult<bool> {
        if !self.fast_path || !self.lex.comments.is_empty() {
            return Ok(false);
        }
        let mut uses: Vec<Use> = Vec::new();
        let mut cur = Cursor { src: self.lex.source(), at: first.span.end as usize, end: first.span.end as usize };
        let Some(kind) = self.fast_statement(&mut cur, graph, scope, bufs, &mut uses) else {
            return Ok(false);
        };
        // Taken: what the general path would have done while reading it.
        for (index, kind, span) in uses {
            self.syms.note_use(index, kind, span);
        }
        self.peeked = None;
        self.lex.resume_at(cur.end);
        self.prev_end = cur.end as u32;
        self.hint = super::graph::NODE_HINT;
        let name = self.name_of(first);
        let node = NodeStmt {
            name,
            name_span: first.span,
            kind,
            resolved: true,
            queue: None,
            device: None,
            comments: Default::default(),
        };
        self.finish_node(graph, scope, bufs, node)?;
        self.fast_taken += 1;
        Ok(true)
    }

    /// Reads `= command [after(...)]`, filling `bufs` as the general path does.
    fn fast_statement(
        &mut self,
        cur: &mut Cursor<'s>,
        graph: &Graph,
        scope: &GraphScope<'s>,
        bufs: &mut StmtBuffers,
        uses: &mut Vec<Use>,
    ) -> Option<NodeKind> {
        cur.punct(b'=')?;
        let spans = &mut bufs.spans;
        spans.launch = None;
        spans.args.clear();
        spans.items.clear();
        let (command, _) = cur.word()?;
        let kind = match command {
            "empty" => NodeKind::Empty,
            "kernel" => {
                let kernel = self.fast_global(cur, ItemKind::Kernel, uses)?;
                let start = cur.start();
                cur.keyword("range")?;
                cur.punct(b'(')?;
                let mut dims = vec![cur.int::<u64>()?];
                while cur.eat(b',') {
                    dims.push(cur.int::<u64>()?);
                }
                cur.punct(b')')?;
                spans.launch = Some(Span::new(start, cur.end));
                cur.keyword("args")?;
                cur.punct(b'(')?;
                let mut args = Vec::new();
                if !cur.eat(b')') {
                    loop {
                        let start = cur.start();
                        args.push(self.fast_arg(cur, graph, scope, uses)?);
                        spans.args.push(Span::new(start, cur.end));
                        if cur.eat(b')') {
                            break;
                        }
                        cur.punct(b',')?;
                    }
                }
                NodeKind::Kernel(KernelCommand { kernel, launch: Launch::Range(dims), args })
            }
            "memcpy" => {
                let dst = self.fast_pointer(cur, graph, scope, uses)?;
                cur.punct(b',')?;
                let src = self.fast_pointer(cur, graph, scope, uses)?;
                cur.punct(b',')?;
                NodeKind::Memcpy { dst, src, bytes: cur.int()? }
            }
            "memset" => {
                let dst = self.fast_pointer(cur, graph, scope, uses)?;
                cur.punct(b',')?;
                let value = cur.int()?;
                cur.punct(b',')?;
                NodeKind::Memset { dst, value, bytes: cur.int()? }
            }
            "async_malloc" => {
                let (word, _) = cur.word()?;
                let elem = Type::scalar(ScalarType::from_keyword(word)?);
                cur.punct(b'[')?;
                let count = cur.int()?;
                cur.punct(b']')?;
                let mut kind = UsmKind::Device;
                if let Some(usm) = fast_optional(cur, UsmKind::from_keyword)? {
                    // `device(N)` is the node's device, for the general path.
                    if cur.bytes().get(cur.end) == Some(&b'(') {
                        return None;
                    }
                    kind = usm;
                }
                let zero_init = fast_optional(cur, |w| (w == "zero_init").then_some(()))?.is_some();
                NodeKind::AsyncMalloc { elem, count, kind, zero_init }
            }
            "async_free" => NodeKind::AsyncFree { alloc: fast_node(cur, scope)? },
            _ => return None,
        };
        // `on @queue` and `device(N)` are for the general path; `after(...)` is read here.
        bufs.deps.clear();
        let after = match fast_optional(cur, |w| matches!(w, "on" | "device" | "after").then_some(w == "after"))? {
            Some(true) => true,
            Some(false) => return None,
            None => false,
        };
        if after {
            cur.punct(b'(')?;
            loop {
                let start = cur.start();
                let node = fast_node(cur, scope)?;
                bufs.deps.push((node, EdgeKind::DependsOn, Span::new(start, cur.end)));
                if cur.eat(b')') {
                    break;
                }
                cur.punct(b',')?;
            }
            // `via` would follow a name.
        }
        Some(kind)
    }

    /// A `@name` of a module item of `kind`, defined already (the usual order; a name used
    /// before its definition is for the general path): its handle.
    fn fast_global<T>(&mut self, cur: &mut Cursor<'s>, kind: ItemKind, uses: &mut Vec<Use>) -> Option<Handle<T>> {
        let (name, span) = cur.name(b'@')?;
        let index = self.syms.intern(name);
        let defined = self.syms.defined_as(index, kind)?;
        uses.push((index, kind, span));
        Some(handle(defined))
    }

    /// `ptr := @mem ['+' N] | %alloc ['+' N]`.
    fn fast_pointer(
        &mut self,
        cur: &mut Cursor<'s>,
        graph: &Graph,
        scope: &GraphScope<'s>,
        uses: &mut Vec<Use>,
    ) -> Option<Pointer> {
        let base = if cur.bytes().get(cur.start()) == Some(&b'@') {
            MemRef::Memory(self.fast_global(cur, ItemKind::Memory, uses)?)
        } else {
            MemRef::Alloc(fast_alloc(cur, graph, scope)?)
        };
        let offset = if cur.eat(b'+') { cur.int()? } else { 0 };
        Some(Pointer { base, offset })
    }

    /// `arg := %dyn | ptr | literal [':' T]`.
    fn fast_arg(
        &mut self,
        cur: &mut Cursor<'s>,
        graph: &Graph,
        scope: &GraphScope<'s>,
        uses: &mut Vec<Use>,
    ) -> Option<Arg> {
        let at = cur.start();
        match cur.bytes().get(at) {
            Some(b'@') => return Some(Arg::Value(ArgValue::Pointer(self.fast_pointer(cur, graph, scope, uses)?))),
            Some(b'%') => {
                let save = (cur.at, cur.end);
                let (name, _) = cur.name(b'%')?;
                if let Some(&(Local::Dyn(p), _)) = scope.locals.get(name) {
                    return Some(Arg::Dyn(p));
                }
                (cur.at, cur.end) = save;
                return Some(Arg::Value(ArgValue::Pointer(self.fast_pointer(cur, graph, scope, uses)?)));
            }
            _ => {}
        }
        let value = match cur.word() {
            Some(("true", _)) => LitValue::Bool(true),
            Some(("false", _)) => LitValue::Bool(false),
            Some(_) => return None,
            None => match cur.number()? {
                (Number::Int(v), _) => LitValue::Int(v),
                (Number::Float(f), _) => LitValue::Float(f),
            },
        };
        let ty = if cur.eat(b':') {
            let (word, _) = cur.word()?;
            Some(ScalarType::from_keyword(word)?)
        } else {
            None
        };
        Some(Arg::Value(ArgValue::Scalar(Literal { value, ty })))
    }
}

/// A `%name` of a node defined earlier in the graph.
fn fast_node(cur: &mut Cursor<'_>, scope: &GraphScope<'_>) -> Option<Handle<Node>> {
    let (name, _) = cur.name(b'%')?;
    match scope.locals.get(name) {
        Some(&(Local::Node(h), _)) => Some(h),
        _ => None,
    }
}

/// A `%name` of an `async_malloc` node defined earlier in the graph.
fn fast_alloc(cur: &mut Cursor<'_>, graph: &Graph, scope: &GraphScope<'_>) -> Option<Handle<Node>> {
    let node = fast_node(cur, scope)?;
    matches!(graph.nodes.try_get(node).map(|n| &n.kind), Some(NodeKind::AsyncMalloc { .. })).then_some(node)
}

/// An optional word that `accept` takes: `Some(Some(_))` taken, `Some(None)` not there (the
/// next token, past any trivia, is no such word), `None` there but not on the same line (for
/// the general path).
fn fast_optional<T>(cur: &mut Cursor<'_>, accept: impl Fn(&str) -> Option<T>) -> Option<Option<T>> {
    let (word, same_line) = cur.next_word();
    let Some(value) = word.and_then(&accept) else { return Some(None) };
    if !same_line {
        return None;
    }
    cur.word()?;
    Some(Some(value))
}

#[cfg(test)]
mod tests;
