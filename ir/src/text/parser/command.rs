//! Commands (what a node or a dynamic command group alternative does), launches, kernel
//! arguments, dynamic parameter values and pointers.

use super::graph::{suggest_local, GraphScope, Local};
use super::items::unknown;
use super::resolve::{handle, ItemKind};
use super::{PResult, ParseError, Parser};
use crate::arena::Handle;
use crate::comm::{CommCommand, CommOp, ReduceOp};
use crate::graph::{
    Accessor, Arg, ArgValue, CondKind, Graph, HostTaskCommand, KernelCommand, Launch, MemAccess, MemRef, Node,
    NodeKind, Pointer,
};
use crate::span::Span;
use crate::text::keyword::Kw;
use crate::text::lexer::TokenKind;
use crate::types::Literal;

const COMMANDS: &str = "empty, kernel, memcpy, memset, memfill, prefetch, memadvise, barrier, host_task, native, \
                        subgraph, async_malloc, async_free, dynamic, if, while, switch, send, recv, allreduce";

/// Spans of the parts of a command that diagnostics point at.
#[derive(Default)]
pub(super) struct CommandSpans {
    /// The launch of a kernel command.
    pub launch: Option<Span>,
    /// Each kernel argument.
    pub args: Vec<Span>,
    /// Each entry of an `access(...)` or `wait(...)` list.
    pub items: Vec<Span>,
}

impl<'s> Parser<'s> {
    /// `command := 'empty' | 'kernel' ... | 'memcpy' ... | ...`
    /// `spans` is cleared and filled; callers reuse one across statements to save
    /// allocations.
    pub(super) fn command(
        &mut self,
        graph: &Graph,
        scope: &GraphScope<'s>,
        spans: &mut CommandSpans,
    ) -> PResult<NodeKind> {
        let (word, t) = self.expect_word("a command")?;
        spans.launch = None;
        spans.args.clear();
        spans.items.clear();
        let kind = match t.kw {
            Kw::Empty => NodeKind::Empty,
            Kw::Kernel => {
                self.hint = "a kernel command is `kernel @k <launch> args(<arg>, ...)`, \
                             with launch `single_task`, `range(N, ...)` or `nd_range(global(...), local(...))`";
                NodeKind::Kernel(self.kernel_command(graph, scope, spans)?)
            }
            Kw::Memcpy => {
                self.hint = "a copy is `memcpy <dst>, <src>, <bytes>`, e.g. `memcpy @dst + 64, @src, 4096`";
                let dst = self.pointer(graph, scope)?;
                self.expect(TokenKind::Comma)?;
                let src = self.pointer(graph, scope)?;
                self.expect(TokenKind::Comma)?;
                let bytes = self.expect_u64("a byte count")?;
                NodeKind::Memcpy { dst, src, bytes }
            }
            Kw::Memset => {
                self.hint = "a memset is `memset <dst>, <byte value>, <bytes>`";
                let dst = self.pointer(graph, scope)?;
                self.expect(TokenKind::Comma)?;
                let value = self.int_in("a byte value", "0..=255")?;
                self.expect(TokenKind::Comma)?;
                let bytes = self.expect_u64("a byte count")?;
                NodeKind::Memset { dst, value, bytes }
            }
            Kw::Memfill => {
                self.hint = "a fill is `memfill <dst>, <pattern> : <scalar type>, <count>`";
                let dst = self.pointer(graph, scope)?;
                self.expect(TokenKind::Comma)?;
                let (value, _) = self.literal()?;
                self.expect(TokenKind::Colon)?;
                let ty = Some(self.scalar()?);
                self.expect(TokenKind::Comma)?;
                let count = self.expect_u64("a pattern count")?;
                NodeKind::Memfill { dst, pattern: Literal { value, ty }, count }
            }
            Kw::Prefetch => {
                self.hint = "a prefetch is `prefetch <ptr>, <bytes>`";
                let ptr = self.pointer(graph, scope)?;
                self.expect(TokenKind::Comma)?;
                let bytes = self.expect_u64("a byte count")?;
                NodeKind::Prefetch { ptr, bytes }
            }
            Kw::Memadvise => {
                self.hint = "a memadvise is `memadvise <ptr>, <bytes>, <advice>`";
                let ptr = self.pointer(graph, scope)?;
                self.expect(TokenKind::Comma)?;
                let bytes = self.expect_u64("a byte count")?;
                self.expect(TokenKind::Comma)?;
                let advice = self.int_in("an advice value", "-2147483648..=2147483647")?;
                NodeKind::Memadvise { ptr, bytes, advice }
            }
            Kw::Send | Kw::Recv => {
                self.hint = "a send is `send <ptr>, <bytes> to(<rank>) tag(<tag>)`, a receive \
                             `recv <ptr>, <bytes> from(<rank>) tag(<tag>)`";
                let ptr = self.pointer(graph, scope)?;
                self.expect(TokenKind::Comma)?;
                let bytes = self.expect_u64("a byte count")?;
                let send = t.kw == Kw::Send;
                self.expect_keyword(if send { Kw::To } else { Kw::From })?;
                self.expect(TokenKind::LParen)?;
                let peer = self.int_in("a rank", "0..=4294967295")?;
                self.expect(TokenKind::RParen)?;
                self.expect_keyword(Kw::Tag)?;
                self.expect(TokenKind::LParen)?;
                let tag = self.int_in("a tag", "0..=4294967295")?;
                self.expect(TokenKind::RParen)?;
                let op = if send { CommOp::Send { peer, tag } } else { CommOp::Recv { peer, tag } };
                NodeKind::Comm(CommCommand { op, ptr, bytes })
            }
            Kw::Allreduce => {
                self.hint = "an all-reduce is `allreduce sum|min|max <ptr>, <bytes>`";
                let t = self.peek()?;
                let op = (t.kind == TokenKind::Ident).then(|| ReduceOp::from_keyword(self.text(t))).flatten();
                let Some(op) = op else { return Err(self.unexpected(t, "`sum`, `min` or `max`")) };
                self.bump()?;
                let ptr = self.pointer(graph, scope)?;
                self.expect(TokenKind::Comma)?;
                let bytes = self.expect_u64("a byte count")?;
                NodeKind::Comm(CommCommand { op: CommOp::AllReduce(op), ptr, bytes })
            }
            Kw::Barrier => {
                self.hint = "a barrier is `barrier [wait(%a, %b, ...)]`";
                let mut wait = Vec::new();
                if self.eat_keyword(Kw::Wait)? {
                    self.paren_list(|p| {
                        let start = p.peek()?.span.start as usize;
                        let node = p.node_ref(graph, scope)?;
                        spans.items.push(Span::new(start, p.prev_end as usize));
                        wait.extend(node);
                        Ok(())
                    })?;
                }
                NodeKind::Barrier { wait }
            }
            Kw::HostTask | Kw::Native => {
                self.hint = "a host task is `host_task \"callback\" [access(@x read, %t write)]` \
                             (`native` likewise)";
                let callback = self.expect_string("a callback name (a string)")?;
                let access = self.access_list(graph, scope, spans)?;
                let task = HostTaskCommand { callback, access };
                if t.kw == Kw::Native {
                    NodeKind::Native(task)
                } else {
                    NodeKind::HostTask(task)
                }
            }
            Kw::If | Kw::While | Kw::Switch => {
                self.hint = "a conditional node is `if @c then @a [else @b]`, `while @c do @body` or \
                             `switch @c cases(@b0, @b1, ...)`, `@c` a u32 of module memory (`@flags + 4`)";
                let cond = self.pointer(graph, scope)?;
                let mut bodies = Vec::new();
                let mut body = |p: &mut Self| -> PResult<()> {
                    let (name, span) = p.expect_global("a body graph (`@name`)")?;
                    bodies.push(p.syms.reference(ItemKind::Graph, name, span));
                    Ok(())
                };
                let kind = match t.kw {
                    Kw::If => {
                        self.expect_keyword(Kw::Then)?;
                        body(self)?;
                        if self.eat_keyword(Kw::Else)? {
                            body(self)?;
                        }
                        CondKind::If
                    }
                    Kw::While => {
                        self.expect_keyword(Kw::Do)?;
                        body(self)?;
                        CondKind::While
                    }
                    _ => {
                        self.expect_keyword(Kw::Cases)?;
                        self.paren_list(|p| body(p))?;
                        CondKind::Switch
                    }
                };
                NodeKind::Conditional { kind, cond, bodies }
            }
            Kw::Subgraph => {
                self.hint = "a sub-graph node is `subgraph @graph`";
                let (name, span) = self.expect_global("a graph name (`@name`)")?;
                NodeKind::Subgraph { graph: self.syms.reference(ItemKind::Graph, name, span) }
            }
            Kw::AsyncMalloc => {
                self.hint = "an allocation is `async_malloc T[N] [device|shared|host] [zero_init]`";
                let elem = self.ty()?;
                self.expect(TokenKind::LBracket)?;
                let count = self.expect_u64("an element count")?;
                self.expect(TokenKind::RBracket)?;
                let kind = self.usm_kind()?;
                let zero_init = self.eat_keyword(Kw::ZeroInit)?;
                NodeKind::AsyncMalloc { elem, count, kind, zero_init }
            }
            Kw::AsyncFree => {
                self.hint = "a free is `async_free %allocation`";
                NodeKind::AsyncFree { alloc: self.node_ref(graph, scope)?.unwrap_or(handle(0)) }
            }
            Kw::Dynamic => {
                self.hint = "a dynamic node is `dynamic %command_group`";
                let (name, span) = self.expect_local("a dynamic command group name (`%name`)")?;
                let dcg = match scope.locals.get(name) {
                    Some(&(Local::Dcg(h), _)) => h,
                    found => {
                        self.error(match found {
                            Some(&(other, def)) => ParseError::WrongKind {
                                name: format!("%{name}"),
                                expected: "a dynamic command group",
                                found: other.describe(graph),
                                span,
                                def,
                            },
                            None => ParseError::Undefined {
                                kind: "dynamic command group",
                                name: format!("%{name}"),
                                help: "define it earlier in the same graph: `dcg %name active(0) { ... }`",
                                suggestion: suggest_local(scope, name),
                                span,
                            },
                        });
                        handle(0)
                    }
                };
                NodeKind::Dynamic { dcg }
            }
            _ => return Err(unknown("command", word, COMMANDS, t.span)),
        };
        Ok(kind)
    }

    /// `'kernel' GLOBAL launch 'args' '(' (arg (',' arg)*)? ')'` after the keyword.
    fn kernel_command(
        &mut self,
        graph: &Graph,
        scope: &GraphScope<'s>,
        spans: &mut CommandSpans,
    ) -> PResult<KernelCommand> {
        let (name, span) = self.expect_global("a kernel name (`@name`)")?;
        let kernel = self.syms.reference(ItemKind::Kernel, name, span);
        let start = self.peek()?.span.start as usize;
        let launch = self.launch()?;
        spans.launch = Some(Span::new(start, self.prev_end as usize));
        self.expect_keyword(Kw::Args)?;
        self.expect(TokenKind::LParen)?;
        let mut args = Vec::new();
        if !self.eat(TokenKind::RParen)? {
            loop {
                let start = self.peek()?.span.start as usize;
                args.push(self.arg(graph, scope)?);
                spans.args.push(Span::new(start, self.prev_end as usize));
                if self.eat(TokenKind::Comma)? {
                    continue;
                }
                let t = self.peek()?;
                if t.kind != TokenKind::RParen {
                    return Err(self.unexpected(t, "`,` or `)`"));
                }
                self.bump()?;
                break;
            }
        }
        Ok(KernelCommand { kernel, launch, args })
    }

    /// `launch := single_task | range(INTS) | nd_range(global(INTS), local(INTS)[, offset(INTS)])`
    fn launch(&mut self) -> PResult<Launch> {
        let (word, t) = self.expect_word("a launch (`single_task`, `range(...)` or `nd_range(...)`)")?;
        let dim = |p: &mut Self| p.expect_u64("a size");
        match t.kw {
            Kw::SingleTask => Ok(Launch::SingleTask),
            Kw::Range => Ok(Launch::Range(self.paren_list(dim)?)),
            Kw::NdRange => {
                self.expect(TokenKind::LParen)?;
                self.expect_keyword(Kw::Global)?;
                let global = self.paren_list(dim)?;
                self.expect(TokenKind::Comma)?;
                self.expect_keyword(Kw::Local)?;
                let local = self.paren_list(dim)?;
                let mut offset = Vec::new();
                if self.eat(TokenKind::Comma)? {
                    self.expect_keyword(Kw::Offset)?;
                    offset = self.paren_list(dim)?;
                }
                self.expect(TokenKind::RParen)?;
                Ok(Launch::NdRange { global, local, offset })
            }
            _ => Err(unknown("launch", word, "single_task, range, nd_range", t.span)),
        }
    }

    /// `arg := value | LOCAL`: a `%name` naming a dynamic parameter registers the slot with it.
    fn arg(&mut self, graph: &Graph, scope: &GraphScope<'s>) -> PResult<Arg> {
        let t = self.peek()?;
        if t.kind == TokenKind::Local {
            let name = self.name_of(t);
            let error = match scope.locals.get(name) {
                Some(&(Local::Dyn(p), _)) => {
                    self.bump()?;
                    return Ok(Arg::Dyn(p));
                }
                Some(&(Local::Node(h), _)) if is_alloc(graph, h) => {
                    return Ok(Arg::Value(ArgValue::Pointer(self.pointer(graph, scope)?)));
                }
                Some(&(local, def)) => ParseError::WrongKind {
                    name: format!("%{name}"),
                    expected: "a dynamic parameter or an async_malloc node",
                    found: local.describe(graph),
                    span: t.span,
                    def,
                },
                None => ParseError::Undefined {
                    kind: "dynamic parameter or allocation",
                    name: format!("%{name}"),
                    help: "a `%name` argument names an earlier `dyn` parameter or `async_malloc` node \
                           of the same graph",
                    suggestion: suggest_local(scope, name),
                    span: t.span,
                },
            };
            self.error(error);
            // Skip the rest of the argument so that a bad name reports one error, not two.
            self.bump()?;
            if self.eat(TokenKind::Plus)? {
                self.expect_u64("a byte offset")?;
            }
            return Ok(Arg::Value(ArgValue::Pointer(Pointer { base: MemRef::Alloc(handle(0)), offset: 0 })));
        }
        Ok(Arg::Value(self.arg_value(graph, scope, false)?))
    }

    /// `value := lit (':' scalar)? | ptr | acc(...) | BYTES | 'local' type '[' INT ']'`.
    /// In a `dyn` statement (`typed_scalar`) a scalar must carry its type.
    pub(super) fn arg_value(&mut self, graph: &Graph, scope: &GraphScope<'s>, typed_scalar: bool) -> PResult<ArgValue> {
        let t = self.peek()?;
        match t.kind {
            TokenKind::Global | TokenKind::Local => Ok(ArgValue::Pointer(self.pointer(graph, scope)?)),
            TokenKind::Bytes => {
                self.bump()?;
                Ok(ArgValue::Bytes(self.lex.take_bytes(t.index)))
            }
            TokenKind::Ident if t.kw == Kw::Acc => Ok(ArgValue::Accessor(self.accessor(graph, scope)?)),
            TokenKind::Ident if t.kw == Kw::Local => {
                self.bump()?;
                let elem = self.ty()?;
                self.expect(TokenKind::LBracket)?;
                let count = self.expect_u64("an element count")?;
                self.expect(TokenKind::RBracket)?;
                Ok(ArgValue::Local { elem, count })
            }
            _ if self.at_literal()? => {
                let (value, _) = self.literal()?;
                let ty = if typed_scalar {
                    let t = self.peek()?;
                    if t.kind != TokenKind::Colon {
                        let mut e = self.missing_at_line_end(t, "`:` and the scalar's type");
                        if let ParseError::Unexpected { help, .. } = &mut *e {
                            *help = "a dynamic parameter's scalar value carries its type: `dyn %a = 2.0 : f32`";
                        }
                        return Err(e);
                    }
                    self.bump()?;
                    Some(self.scalar()?)
                } else if self.eat(TokenKind::Colon)? {
                    Some(self.scalar()?)
                } else {
                    None
                };
                Ok(ArgValue::Scalar(Literal { value, ty }))
            }
            _ => Err(self.unexpected(
                t,
                "a value (a literal, a pointer `@x`/`%t`, `acc(...)`, a byte string `x\"..\"` or `local T[N]`)",
            )),
        }
    }

    /// `ptr := memref ('+' INT)?`
    fn pointer(&mut self, graph: &Graph, scope: &GraphScope<'s>) -> PResult<Pointer> {
        let base = self.mem_ref(graph, scope)?;
        let offset = if self.eat(TokenKind::Plus)? { self.expect_u64("a byte offset")? } else { 0 };
        Ok(Pointer { base, offset })
    }

    /// `memref := GLOBAL | LOCAL`: module memory or an `async_malloc` node.
    fn mem_ref(&mut self, graph: &Graph, scope: &GraphScope<'s>) -> PResult<MemRef> {
        let t = self.peek()?;
        match t.kind {
            TokenKind::Global => {
                self.bump()?;
                Ok(MemRef::Memory(self.syms.reference(ItemKind::Memory, self.name_of(t), t.span)))
            }
            TokenKind::Local => {
                self.bump()?;
                let name = self.name_of(t);
                match scope.locals.get(name) {
                    Some(&(Local::Node(h), _)) if is_alloc(graph, h) => return Ok(MemRef::Alloc(h)),
                    Some(&(local, def)) => self.error(wrong_memory(name, local.describe(graph), t.span, def)),
                    None => self.error(ParseError::Undefined {
                        kind: "allocation",
                        name: format!("%{name}"),
                        help: "a `%name` pointer names an earlier `async_malloc` node of the same graph \
                               (module memory is `@name`)",
                        suggestion: suggest_local(scope, name),
                        span: t.span,
                    }),
                }
                Ok(MemRef::Alloc(handle(0)))
            }
            _ => Err(self.unexpected(t, "memory (`@name` or an `async_malloc` node `%name`)")),
        }
    }

    /// `'acc' '(' memref ('[' INT '..' INT ']')? ',' access ')'`
    fn accessor(&mut self, graph: &Graph, scope: &GraphScope<'s>) -> PResult<Accessor> {
        self.bump()?;
        self.expect(TokenKind::LParen)?;
        let buffer = self.mem_ref(graph, scope)?;
        let mut range = None;
        if self.eat(TokenKind::LBracket)? {
            let lo = self.expect_u64("a first element")?;
            self.expect(TokenKind::DotDot)?;
            let hi = self.expect_u64("an end element")?;
            self.expect(TokenKind::RBracket)?;
            range = Some((lo, hi));
        }
        self.expect(TokenKind::Comma)?;
        let mode = self.access()?;
        self.expect(TokenKind::RParen)?;
        Ok(Accessor { buffer, mode, range })
    }

    /// `access_list := 'access' '(' memref access (',' memref access)* ')'`, optional.
    fn access_list(
        &mut self,
        graph: &Graph,
        scope: &GraphScope<'s>,
        spans: &mut CommandSpans,
    ) -> PResult<Vec<MemAccess>> {
        if !self.eat_keyword(Kw::Access)? {
            return Ok(Vec::new());
        }
        self.paren_list(|p| {
            let start = p.peek()?.span.start as usize;
            let mem = p.mem_ref(graph, scope)?;
            let mode = p.access()?;
            spans.items.push(Span::new(start, p.prev_end as usize));
            Ok(MemAccess { mem, mode })
        })
    }
}

/// Whether `node` is an `async_malloc` node (whose name is also its pointer).
fn is_alloc(graph: &Graph, node: Handle<Node>) -> bool {
    matches!(graph.nodes.try_get(node).map(|n| &n.kind), Some(NodeKind::AsyncMalloc { .. }))
}

/// A `%name` used as memory that is not an `async_malloc` node.
fn wrong_memory(name: &str, found: &'static str, span: Span, def: Span) -> ParseError {
    ParseError::WrongKind {
        name: format!("%{name}"),
        expected: "memory (`@name` or an `async_malloc` node)",
        found,
        span,
        def,
    }
}
