//! Kernels: the header, parameters, and bodies in the kernel language.
//!
//! Values are SSA: each name is defined once per kernel and is visible after its definition
//! in its region and the regions nested in it ([`KernelScope`]). Ops and values are appended
//! in pre-order: an op, then its result values, then (for `for`) the loop variable and the
//! carried values, then the ops and values of its regions. Value types are placeholders
//! here; [`super::infer`] computes them once module-level names are resolved.

mod loops;
mod subgroup;

use super::items::unknown;
use super::names::NameMap;
use super::resolve::{handle, ItemKind};
use super::{PResult, ParseError, Parser};
use crate::arena::Handle;
use crate::kernel::{
    AtomicOp, BinaryOp, Body, Builtin, CmpOp, Function, Kernel, KernelBody, MemBase, Op, OpKind, Param, ParamType,
    Region, ShaderLang, ShaderSource, SpirvInterface, UnaryOp, Value, ValueDef, ValueType, V,
};
use crate::module::{Comments, Item};
use crate::span::{Span, SpanTable};
use crate::text::keyword::Kw;
use crate::text::lexer::TokenKind;
use crate::types::{Literal, Type};

const KERNEL_HINT: &str = "a kernel is `kernel @name(%p: T, ...) { ops }` or \
                           `kernel @name(%p: T, ...) spirv \"file.spv\" entry \"main\"`";
const FUNC_HINT: &str = "a function is `func @name(%p: T, ...) -> T, ... { ops; return %r, ... }` \
                         (without `-> T`, it returns nothing and takes no `return`)";
const OP_HINT: &str = "an op is `[%r, ... =] <op> <operands>`, e.g. `%r = add %a, %b`, `store %buf[%i], %v`";
const OPS: &str = "const, global_id, local_id, group_id, global_range, local_range, group_range, neg, not, abs, \
                   sqrt, rsqrt, exp, log, sin, cos, tanh, floor, ceil, add, sub, mul, div, rem, min, max, pow, \
                   and, or, xor, shl, shr, fma, eq, ne, lt, le, gt, ge, select, cast, bitcast, splat, extract, insert, vec, \
                   load, len, store, atomic, group_barrier, local, yield, for, loop, if, call, return, subgroup_size, subgroup_id, \
                   subgroup_local_id, num_subgroups, subgroup_reduce, subgroup_inclusive_scan, \
                   subgroup_exclusive_scan, subgroup_broadcast, subgroup_broadcast_first, subgroup_shuffle, \
                   subgroup_ballot, subgroup_elect, subgroup_all, subgroup_any";

/// A parsed parameter list.
#[derive(Default)]
struct Signature<'s> {
    params: Vec<Param>,
    /// Span of each parameter, by index.
    spans: SpanTable<u32>,
    /// Each parameter's name as written, and its span.
    names: Vec<(&'s str, Span)>,
}

/// The type every value gets until [`super::infer`] runs.
const PLACEHOLDER: ValueType = ValueType::Data(Type::BOOL);

/// How many results a simple op produces.
#[derive(Clone, Copy)]
enum Arity {
    Zero,
    One,
    AtMostOne,
}

/// The names of a kernel and which of them are visible at the current point.
#[derive(Default)]
struct KernelScope<'s> {
    names: NameMap<'s, V>,
    /// By value index: whether the value is visible.
    visible: Vec<bool>,
    /// Visible values, innermost definitions last; regions truncate it when they end.
    stack: Vec<V>,
}

impl KernelScope<'_> {
    fn enter(&mut self, v: V) {
        if self.visible.len() <= v.index() {
            self.visible.resize(v.index() + 1, false);
        }
        if let Some(slot) = self.visible.get_mut(v.index()) {
            *slot = true;
        }
        self.stack.push(v);
    }

    /// Hides every value entered since the stack had `mark` entries.
    fn leave(&mut self, mark: usize) {
        for v in self.stack.drain(mark.min(self.stack.len())..) {
            if let Some(slot) = self.visible.get_mut(v.index()) {
                *slot = false;
            }
        }
    }

    fn is_visible(&self, v: V) -> bool {
        self.visible.get(v.index()).copied().unwrap_or(false)
    }
}

impl<'s> Parser<'s> {
    /// `'(' (param (',' param)*)? ')'`: a kernel's or function's parameters.
    fn params(&mut self) -> PResult<Signature<'s>> {
        let mut sig = Signature::default();
        let mut seen: NameMap<'s, Span> = NameMap::default();
        self.expect(TokenKind::LParen)?;
        if self.eat(TokenKind::RParen)? {
            return Ok(sig);
        }
        loop {
            let (pname, pspan) = self.expect_local("a parameter name (`%name`)")?;
            self.expect(TokenKind::Colon)?;
            let ty = self.param_type()?;
            let index = u32::try_from(sig.params.len()).unwrap_or(u32::MAX);
            sig.spans.insert(index, Span::new(pspan.start as usize, self.prev_end as usize));
            if let Err(e) = seen.insert_with(pname, || pspan) {
                let first = seen.entry(e).copied().unwrap_or(pspan);
                self.error(ParseError::Duplicate { name: format!("%{pname}"), span: pspan, first });
            }
            sig.params.push(Param { name: pname.to_string(), ty });
            sig.names.push((pname, pspan));
            if self.eat(TokenKind::Comma)? {
                continue;
            }
            let t = self.peek()?;
            if t.kind != TokenKind::RParen {
                return Err(self.unexpected(t, "`,` or `)`"));
            }
            self.bump()?;
            return Ok(sig);
        }
    }

    /// `func := 'func' GLOBAL '(' (param (',' param)*)? ')' ('->' type (',' type)*)? block`
    pub(super) fn func_item(&mut self, mut comments: Comments) -> PResult<()> {
        let first = self.bump()?;
        self.hint = FUNC_HINT;
        let (name, name_span) = self.expect_global("a function name (`@name`)")?;
        self.define_item(ItemKind::Function, name, self.module.functions.len(), name_span);
        let sig = self.params()?;
        let mut results = Vec::new();
        if self.eat(TokenKind::Arrow)? {
            results.push(self.ty()?);
            while self.eat(TokenKind::Comma)? {
                results.push(self.ty()?);
            }
        }
        let t = self.peek()?;
        if t.kind != TokenKind::LBrace {
            return Err(self.unexpected(t, "`{` (a function's body is in the kernel language)"));
        }
        let body = KernelBody::Ir(self.kernel_body(name, &sig.params, &sig.names, "the body of function")?);
        let span = Span::new(first.span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        let def = Kernel { name: name.to_string(), params: sig.params, body, comments, param_spans: sig.spans };
        let h = self.module.functions.append(Function { def, results }, span);
        self.module.items.push(Item::Function(h));
        Ok(())
    }

    /// `kernel := 'kernel' GLOBAL '(' (param (',' param)*)? ')' (block | spirv | shader)`
    pub(super) fn kernel_item(&mut self, mut comments: Comments) -> PResult<()> {
        let first = self.bump()?;
        self.hint = KERNEL_HINT;
        let (name, name_span) = self.expect_global("a kernel name (`@name`)")?;
        self.define_item(ItemKind::Kernel, name, self.module.kernels.len(), name_span);
        let Signature { params, spans: param_spans, names } = self.params()?;
        let t = self.peek()?;
        let body = if t.kind == TokenKind::LBrace {
            KernelBody::Ir(self.kernel_body(name, &params, &names, "the body of kernel")?)
        } else if self.eat_keyword(Kw::Spirv)? {
            let path = self.expect_string("the SPIR-V file path (a string)")?;
            self.expect_keyword(Kw::Entry)?;
            let entry = self.expect_string("the entry point name (a string)")?;
            let interface =
                if self.eat_keyword(Kw::Bindings)? { SpirvInterface::Bindings } else { SpirvInterface::ArgumentBlock };
            KernelBody::Spirv { path, entry, interface }
        } else if let Some(lang) = self.shader_lang()? {
            // `wgsl "file" entry "main"`, or inline: `wgsl entry "main" """source"""`.
            if self.eat_keyword(Kw::Entry)? {
                let entry = self.expect_string("the entry point name (a string)")?;
                let source = self.expect_string("the shader source (between `\"\"\"`)")?;
                KernelBody::Shader { lang, source: ShaderSource::Inline(source), entry }
            } else {
                let path = self.expect_string("the shader file path (a string), or `entry` for an inline shader")?;
                self.expect_keyword(Kw::Entry)?;
                let entry = self.expect_string("the entry point name (a string)")?;
                KernelBody::Shader { lang, source: ShaderSource::File(path), entry }
            }
        } else {
            return Err(self.unexpected(t, "`{`, `spirv`, `wgsl` or `glsl`"));
        };
        let span = Span::new(first.span.start as usize, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        let kernel = Kernel { name: name.to_string(), params, body, comments, param_spans };
        let h = self.module.kernels.append(kernel, span);
        self.module.items.push(Item::Kernel(h));
        Ok(())
    }

    /// `wgsl` or `glsl`, consumed; `None` (nothing consumed) for anything else.
    fn shader_lang(&mut self) -> PResult<Option<ShaderLang>> {
        Ok(if self.eat_keyword(Kw::Wgsl)? {
            Some(ShaderLang::Wgsl)
        } else if self.eat_keyword(Kw::Glsl)? {
            Some(ShaderLang::Glsl)
        } else {
            None
        })
    }

    /// `ptype := type | 'buf' '<' type ',' access '>' | 'local' '<' type '>'`
    fn param_type(&mut self) -> PResult<ParamType> {
        if self.eat_keyword(Kw::Buf)? {
            self.expect(TokenKind::Lt)?;
            let elem = self.ty()?;
            self.expect(TokenKind::Comma)?;
            let access = self.access()?;
            self.expect(TokenKind::Gt)?;
            return Ok(ParamType::Buffer { elem, access });
        }
        if self.eat_keyword(Kw::Local)? {
            self.expect(TokenKind::Lt)?;
            let elem = self.ty()?;
            self.expect(TokenKind::Gt)?;
            return Ok(ParamType::Local { elem });
        }
        Ok(ParamType::Value(self.ty()?))
    }

    /// `block := '{' op* '}'`, with the parameters as its first values.
    fn kernel_body(&mut self, name: &str, params: &[Param], names: &[(&'s str, Span)], what: &str) -> PResult<Body> {
        let mut body = Body::default();
        let mut scope = KernelScope::default();
        for (i, (param, &(name, span))) in params.iter().zip(names).enumerate() {
            let value = Value { name: param.name.clone(), ty: param.ty.into(), def: ValueDef::Param(i as u32) };
            let v = body.values.append(value, span);
            // Duplicate parameters were reported with the header; keep the first.
            let _ = scope.names.insert_with(name, || v);
            scope.enter(v);
        }
        let errors_before = self.errors.len();
        body.entry = self.region(&mut body, &mut scope, what, name)?;
        let value = |n: &str| scope.names.get(n).map(|&v| body.values.span(v));
        self.defined_later(errors_before, '%', &["value"], value, |_| None);
        Ok(body)
    }

    /// `'{' op* '}'`; values defined inside are hidden again at its end. `what` and `kernel`
    /// name the block in "missing `}`" errors.
    fn region(&mut self, body: &mut Body, scope: &mut KernelScope<'s>, what: &str, kernel: &str) -> PResult<Region> {
        let open = self.expect(TokenKind::LBrace)?.span;
        let mark = scope.stack.len();
        let mut ops = Vec::new();
        loop {
            let t = self.peek()?;
            let describe = || if kernel.is_empty() { what.to_string() } else { format!("{what} `@{kernel}`") };
            if let Some(e) = self.unclosed(t, open, describe) {
                return Err(e);
            }
            if t.kind == TokenKind::RBrace {
                let closing_comments = self.closing_comments()?;
                self.bump()?;
                scope.leave(mark);
                return Ok(Region { ops, closing_comments });
            }
            ops.push(self.op(body, scope)?);
        }
    }

    /// Defines a value name; a second definition anywhere in the kernel is an error.
    fn define_value(&mut self, body: &Body, scope: &mut KernelScope<'s>, name: &'s str, v: V, span: Span) {
        if let Err(e) = scope.names.insert_with(name, || v) {
            let first = scope.names.entry(e).map_or(span, |&first| body.values.span(first));
            self.error(ParseError::Duplicate { name: format!("%{name}"), span, first });
        }
    }

    /// Appends a value defined by `def`, registers its name and returns it (not yet visible).
    fn new_value(
        &mut self,
        body: &mut Body,
        scope: &mut KernelScope<'s>,
        (name, span): (&'s str, Span),
        def: ValueDef,
    ) -> V {
        let v = body.values.append(Value { name: name.to_string(), ty: PLACEHOLDER, def }, span);
        self.define_value(body, scope, name, v, span);
        v
    }

    /// A `%name` operand: a visible value.
    fn operand(&mut self, body: &Body, scope: &KernelScope<'s>) -> PResult<V> {
        let (name, span) = self.expect_local("a value (`%name`)")?;
        match scope.names.get(name) {
            Some(&v) if scope.is_visible(v) => return Ok(v),
            Some(&v) => self.error(ParseError::OutOfScope { name: format!("%{name}"), span, def: body.values.span(v) }),
            None => self.error(ParseError::Undefined {
                kind: "value",
                name: format!("%{name}"),
                help: "a value must be a parameter or the result of an op above, in this region or an \
                       enclosing one",
                suggestion: crate::suggest::closest(
                    name,
                    scope.names.iter().filter(|(_, v)| scope.is_visible(*v)).map(|(n, _)| *n),
                )
                .map(|s| format!("%{s}")),
                span,
            }),
        }
        Ok(handle(0))
    }

    /// `%a (',' %b)*`
    fn operands(&mut self, body: &Body, scope: &KernelScope<'s>) -> PResult<Vec<V>> {
        let mut out = vec![self.operand(body, scope)?];
        while self.eat(TokenKind::Comma)? {
            out.push(self.operand(body, scope)?);
        }
        Ok(out)
    }

    /// `op := results? body`
    fn op(&mut self, body: &mut Body, scope: &mut KernelScope<'s>) -> PResult<Handle<Op>> {
        let mut comments = self.leading_comments();
        self.hint = OP_HINT;
        let start = self.peek()?.span.start as usize;
        let mut results: Vec<(&'s str, Span)> = Vec::new();
        if self.peek()?.kind == TokenKind::Local {
            loop {
                results.push(self.expect_local("a result name (`%name`)")?);
                if !self.eat(TokenKind::Comma)? {
                    break;
                }
            }
            self.expect(TokenKind::Eq)?;
        }
        let (word, t) = self.expect_word("an op")?;
        let results_span = match (results.first(), results.last()) {
            (Some(a), Some(b)) => a.1.join(b.1),
            _ => t.span,
        };
        match t.kw {
            Kw::For => return self.for_op(body, scope, results, results_span, comments, start),
            Kw::Loop => return self.loop_op(body, scope, results, results_span, comments, start),
            Kw::If => return self.if_op(body, scope, results, results_span, comments, start),
            Kw::Call => return self.call_op(body, scope, results, comments, start),
            _ => {}
        }
        let (kind, arity) = self.simple_op(word, t.span, body, scope)?;
        let ok = match arity {
            Arity::Zero => results.is_empty(),
            Arity::One => results.len() == 1,
            Arity::AtMostOne => results.len() <= 1,
        };
        if !ok {
            let expected = match arity {
                Arity::Zero => "no result",
                Arity::One => "1 result",
                Arity::AtMostOne => "at most 1 result",
            };
            self.error(result_count(word, expected.to_string(), results.len(), results_span));
        }
        let span = Span::new(start, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        let op = body.ops.append(Op { kind, results: Vec::new(), comments }, span);
        let mut values = Vec::with_capacity(results.len());
        for (i, result) in results.into_iter().enumerate() {
            let v = self.new_value(body, scope, result, ValueDef::Result(op, i as u32));
            scope.enter(v);
            values.push(v);
        }
        body.ops[op].results = values;
        Ok(op)
    }

    /// The ops without regions, after their keyword.
    fn simple_op(&mut self, word: &str, at: Span, body: &Body, scope: &KernelScope<'s>) -> PResult<(OpKind, Arity)> {
        use Arity::{AtMostOne, One, Zero};
        if let Some(b) = Builtin::ALL.into_iter().find(|b| b.keyword() == word) {
            let (dim, span) = self.expect_int("a dimension (0, 1 or 2)")?;
            let dim = u8::try_from(dim).ok().filter(|d| *d <= 2);
            let dim =
                dim.ok_or(ParseError::OutOfRange { what: "a dimension", range: "0..=2", span }).map_err(Box::new)?;
            return Ok((OpKind::Builtin(b, dim), One));
        }
        if let Some(u) = UnaryOp::ALL.into_iter().find(|u| u.keyword() == word) {
            return Ok((OpKind::Unary(u, self.operand(body, scope)?), One));
        }
        if let Some(b) = BinaryOp::ALL.into_iter().find(|b| b.keyword() == word) {
            let (x, y) = self.two(body, scope)?;
            return Ok((OpKind::Binary(b, x, y), One));
        }
        if let Some(c) = CmpOp::ALL.into_iter().find(|c| c.keyword() == word) {
            let (x, y) = self.two(body, scope)?;
            return Ok((OpKind::Cmp(c, x, y), One));
        }
        if crate::subgroup::SubgroupOp::KEYWORDS.contains(&word) {
            return Ok((OpKind::Subgroup(self.subgroup_op(word, body, scope)?), One));
        }
        let kind = match word {
            "const" => {
                let (value, _) = self.literal()?;
                self.expect(TokenKind::Colon)?;
                (OpKind::Const(Literal { value, ty: None }, self.ty()?), One)
            }
            "fma" | "select" => {
                let (a, b) = self.two(body, scope)?;
                self.expect(TokenKind::Comma)?;
                let c = self.operand(body, scope)?;
                (if word == "fma" { OpKind::Fma(a, b, c) } else { OpKind::Select(a, b, c) }, One)
            }
            "cast" | "bitcast" => {
                let a = self.operand(body, scope)?;
                self.expect_keyword(Kw::To)?;
                let t = self.ty()?;
                (if word == "cast" { OpKind::Cast(a, t) } else { OpKind::Bitcast(a, t) }, One)
            }
            "splat" => {
                let a = self.operand(body, scope)?;
                self.expect(TokenKind::Colon)?;
                (OpKind::Splat(a, self.ty()?), One)
            }
            "extract" => {
                let v = self.operand(body, scope)?;
                self.expect(TokenKind::Comma)?;
                (OpKind::Extract(v, self.int_in("a lane index", "0..=255")?), One)
            }
            "insert" => {
                let v = self.operand(body, scope)?;
                self.expect(TokenKind::Comma)?;
                let lane = self.int_in("a lane index", "0..=255")?;
                self.expect(TokenKind::Comma)?;
                (OpKind::Insert(v, lane, self.operand(body, scope)?), One)
            }
            "vec" => (OpKind::Construct(self.operands(body, scope)?), One),
            "len" => {
                let t = self.peek()?;
                let mem = match t.kind {
                    TokenKind::Local => MemBase::Value(self.operand(body, scope)?),
                    TokenKind::Global => {
                        self.bump()?;
                        MemBase::Global(self.syms.reference(ItemKind::Memory, self.name_of(t), t.span))
                    }
                    _ => {
                        return Err(
                            self.unexpected(t, "memory (a buffer or local value `%name`, or a device_global `@name`)")
                        )
                    }
                };
                (OpKind::Len(mem), One)
            }
            "load" => {
                let (mem, index) = self.element(body, scope)?;
                (OpKind::Load { mem, index }, One)
            }
            "store" => {
                let (mem, index) = self.element(body, scope)?;
                self.expect(TokenKind::Comma)?;
                (OpKind::Store { mem, index, value: self.operand(body, scope)? }, Zero)
            }
            "atomic" => {
                let (w, t) = self.expect_word("an atomic operation")?;
                let Some(op) = AtomicOp::ALL.into_iter().find(|a| a.keyword() == w) else {
                    return Err(unknown(
                        "atomic operation",
                        w,
                        "add, sub, min, max, and, or, xor, xchg, cmpxchg",
                        t.span,
                    ));
                };
                let (mem, index) = self.element(body, scope)?;
                self.expect(TokenKind::Comma)?;
                let mut value = self.operand(body, scope)?;
                let mut expected = None;
                if op == AtomicOp::CompareExchange {
                    self.expect(TokenKind::Comma)?;
                    expected = Some(value);
                    value = self.operand(body, scope)?;
                }
                (OpKind::Atomic { op, mem, index, value, expected }, AtMostOne)
            }
            "group_barrier" => (OpKind::GroupBarrier, Zero),
            "local" => {
                let elem = self.ty()?;
                self.expect(TokenKind::LBracket)?;
                let count = self.expect_u64("an element count")?;
                self.expect(TokenKind::RBracket)?;
                (OpKind::LocalAlloc { elem, count }, One)
            }
            "yield" => (OpKind::Yield(self.operands(body, scope)?), Zero),
            "return" => (OpKind::Return(self.operands(body, scope)?), Zero),
            _ => return Err(unknown("op", word, OPS, at)),
        };
        Ok(kind)
    }

    /// `%a, %b`
    fn two(&mut self, body: &Body, scope: &KernelScope<'s>) -> PResult<(V, V)> {
        let a = self.operand(body, scope)?;
        self.expect(TokenKind::Comma)?;
        Ok((a, self.operand(body, scope)?))
    }

    /// `(%buf | @global) '[' %index ']'`
    fn element(&mut self, body: &Body, scope: &KernelScope<'s>) -> PResult<(MemBase, V)> {
        let t = self.peek()?;
        let mem = match t.kind {
            TokenKind::Local => MemBase::Value(self.operand(body, scope)?),
            TokenKind::Global => {
                self.bump()?;
                MemBase::Global(self.syms.reference(ItemKind::Memory, self.name_of(t), t.span))
            }
            _ => return Err(self.unexpected(t, "memory (a buffer or local value `%name`, or a device_global `@name`)")),
        };
        self.expect(TokenKind::LBracket)?;
        let index = self.operand(body, scope)?;
        self.expect(TokenKind::RBracket)?;
        Ok((mem, index))
    }

    /// `call @f(%a, ...)` after `call`; the results are as many as written (the verifier
    /// checks them against the function's).
    fn call_op(
        &mut self,
        body: &mut Body,
        scope: &mut KernelScope<'s>,
        results: Vec<(&'s str, Span)>,
        mut comments: Comments,
        start: usize,
    ) -> PResult<Handle<Op>> {
        self.hint = "a call is `[%r, ... =] call @function(%a, ...)`";
        let (name, span) = self.expect_global("a function name (`@name`)")?;
        let func = self.syms.reference(ItemKind::Function, name, span);
        self.expect(TokenKind::LParen)?;
        let args = if self.eat(TokenKind::RParen)? {
            Vec::new()
        } else {
            let args = self.operands(body, scope)?;
            self.expect(TokenKind::RParen)?;
            args
        };
        let span = Span::new(start, self.prev_end as usize);
        self.finish_comments(&mut comments)?;
        let op = body.ops.append(Op { kind: OpKind::Call { func, args }, results: Vec::new(), comments }, span);
        let mut values = Vec::with_capacity(results.len());
        for (i, result) in results.into_iter().enumerate() {
            let v = self.new_value(body, scope, result, ValueDef::Result(op, i as u32));
            scope.enter(v);
            values.push(v);
        }
        body.ops[op].results = values;
        Ok(op)
    }

    /// `if %c [-> T, ...] { ... } [else { ... }]` after `if`.
    fn if_op(
        &mut self,
        body: &mut Body,
        scope: &mut KernelScope<'s>,
        results: Vec<(&'s str, Span)>,
        results_span: Span,
        mut comments: Comments,
        start: usize,
    ) -> PResult<Handle<Op>> {
        self.hint = "a conditional is `[%r, ... =] if %cond [-> T, ...] { ... } [else { ... }]`";
        let cond = self.operand(body, scope)?;
        let mut result_types = Vec::new();
        if self.eat(TokenKind::Arrow)? {
            result_types.push(self.ty()?);
            while self.eat(TokenKind::Comma)? {
                result_types.push(self.ty()?);
            }
        }
        if results.len() != result_types.len() {
            let expected = match result_types.len() {
                0 => "no result (it declares no `-> T`)".to_string(),
                1 => "1 result (one per `-> T` type)".to_string(),
                n => format!("{n} results (one per `-> T` type)"),
            };
            self.error(result_count("if", expected, results.len(), results_span));
        }
        let op = body.ops.append(
            Op { kind: OpKind::GroupBarrier, results: Vec::new(), comments: Comments::default() },
            Span::UNDEFINED,
        );
        let result_values: Vec<V> = results
            .into_iter()
            .enumerate()
            .map(|(i, r)| self.new_value(body, scope, r, ValueDef::Result(op, i as u32)))
            .collect();
        let then_region = self.region(body, scope, "the `if` region", "")?;
        let else_region =
            if self.eat_keyword(Kw::Else)? { Some(self.region(body, scope, "the `else` region", "")?) } else { None };
        result_values.iter().for_each(|&v| scope.enter(v));
        body.ops.set_span(op, Span::new(start, self.prev_end as usize));
        self.finish_comments(&mut comments)?;
        body.ops[op] =
            Op { kind: OpKind::If { cond, result_types, then_region, else_region }, results: result_values, comments };
        Ok(op)
    }
}

/// A [`ParseError::ResultCount`].
fn result_count(op: &str, expected: String, found: usize, span: Span) -> ParseError {
    ParseError::ResultCount { op: op.to_string(), expected, found, span }
}
