//! Printing kernels: the header and the ops of the body.

use super::{name_in, Printer, INVALID};
use crate::kernel::{
    Body, Function, Kernel, KernelBody, MemBase, Op, OpKind, ParamType, Region, ShaderSource, SpirvInterface, V,
};

/// Regions nested deeper than this are not printed. The parser never builds more than
/// [`crate::text::MAX_NESTING`] levels; this bound only keeps a module built through the
/// API with a region cycle from exhausting the stack.
const MAX_PRINT_DEPTH: usize = 4 * crate::text::MAX_NESTING;

impl Printer<'_> {
    pub(super) fn kernel(&mut self, k: &Kernel) {
        self.item_comment_lines(&k.comments);
        self.out.push_str("kernel ");
        self.header(k);
        self.definition(k);
    }

    /// `func @name(params) -> T, ... { body }`
    pub(super) fn function(&mut self, f: &Function) {
        self.item_comment_lines(&f.def.comments);
        self.out.push_str("func ");
        self.header(&f.def);
        if !f.results.is_empty() {
            self.out.push_str(" ->");
            for (i, t) in f.results.iter().enumerate() {
                self.out.push_str(if i > 0 { ", " } else { " " });
                self.ty(*t);
            }
        }
        self.definition(&f.def);
    }

    /// `@name(params)`
    fn header(&mut self, k: &Kernel) {
        self.global(&k.name);
        self.out.push('(');
        for (i, p) in k.params.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.local(&p.name);
            self.out.push_str(": ");
            match p.ty {
                ParamType::Value(t) => self.ty(t),
                ParamType::Buffer { elem, access } => {
                    self.out.push_str("buf<");
                    self.ty(elem);
                    self.out.push_str(", ");
                    self.out.push_str(access.keyword());
                    self.out.push('>');
                }
                ParamType::Local { elem } => {
                    self.out.push_str("local<");
                    self.ty(elem);
                    self.out.push('>');
                }
            }
        }
        self.out.push(')');
    }

    /// The body (or external source) and the comments at the end of the line.
    fn definition(&mut self, k: &Kernel) {
        match &k.body {
            KernelBody::Ir(body) => {
                self.out.push_str(" {\n");
                self.region(body, &body.entry, 1);
                self.out.push('}');
            }
            KernelBody::Spirv { path, entry, interface } => {
                self.out.push_str(" spirv ");
                self.string(path);
                self.out.push_str(" entry ");
                self.string(entry);
                if *interface == SpirvInterface::Bindings {
                    self.out.push_str(" bindings");
                }
            }
            KernelBody::Shader { lang, source: ShaderSource::File(path), entry } => {
                self.out.push(' ');
                self.out.push_str(lang.keyword());
                self.out.push(' ');
                self.string(path);
                self.out.push_str(" entry ");
                self.string(entry);
            }
            KernelBody::Shader { lang, source: ShaderSource::Inline(text), entry } => {
                self.out.push(' ');
                self.out.push_str(lang.keyword());
                self.out.push_str(" entry ");
                self.string(entry);
                // Raw, as written (the lexer's `"""` strings have no escapes).
                self.out.push_str(" \"\"\"");
                self.out.push_str(text);
                self.out.push_str("\"\"\"");
            }
        }
        self.end_line(&k.comments);
    }

    /// The ops and closing comments of a region, at `level`; the caller writes the braces.
    fn region(&mut self, body: &Body, region: &Region, level: usize) {
        if level > MAX_PRINT_DEPTH {
            self.indent(level);
            self.out.push_str("// regions nested too deep to print\n");
            return;
        }
        for &op in &region.ops {
            match body.ops.try_get(op) {
                Some(o) => self.op(body, o, level),
                None => {
                    self.indent(level);
                    self.out.push_str(INVALID);
                    self.out.push('\n');
                }
            }
        }
        self.comment_lines(level, &region.closing_comments);
    }

    fn value(&mut self, body: &Body, v: V) {
        self.local(name_in(&body.values, v, |v| &v.name));
    }

    /// `%a, %b`
    fn values(&mut self, body: &Body, vs: &[V]) {
        for (i, v) in vs.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(body, *v);
        }
    }

    /// `%buf[%i]` / `@g[%i]`
    fn element(&mut self, body: &Body, mem: MemBase, index: V) {
        match mem {
            MemBase::Value(v) => self.value(body, v),
            MemBase::Global(g) => self.global(name_in(&self.module.memories, g, |m| &m.name)),
        }
        self.out.push('[');
        self.value(body, index);
        self.out.push(']');
    }

    fn op(&mut self, body: &Body, op: &Op, level: usize) {
        self.comment_lines(level, &op.comments.leading);
        self.indent(level);
        if !op.results.is_empty() {
            self.values(body, &op.results);
            self.out.push_str(" = ");
        }
        match &op.kind {
            OpKind::Const(lit, t) => {
                self.out.push_str("const ");
                self.lit_value(lit.value);
                self.out.push_str(" : ");
                self.ty(*t);
            }
            OpKind::Builtin(b, dim) => {
                self.out.push_str(b.keyword());
                self.out.push(' ');
                self.u64(u64::from(*dim));
            }
            OpKind::Unary(u, a) => {
                self.out.push_str(u.keyword());
                self.out.push(' ');
                self.value(body, *a);
            }
            OpKind::Binary(b, x, y) => self.keyword_operands(body, b.keyword(), &[*x, *y]),
            OpKind::Cmp(c, x, y) => self.keyword_operands(body, c.keyword(), &[*x, *y]),
            OpKind::Fma(a, b, c) => self.keyword_operands(body, "fma", &[*a, *b, *c]),
            OpKind::Select(c, a, b) => self.keyword_operands(body, "select", &[*c, *a, *b]),
            OpKind::Bitcast(a, t) => {
                self.out.push_str("bitcast ");
                self.value(body, *a);
                self.out.push_str(" to ");
                self.ty(*t);
            }
            OpKind::Cast(a, t) => {
                self.out.push_str("cast ");
                self.value(body, *a);
                self.out.push_str(" to ");
                self.ty(*t);
            }
            OpKind::Splat(a, t) => {
                self.out.push_str("splat ");
                self.value(body, *a);
                self.out.push_str(" : ");
                self.ty(*t);
            }
            OpKind::Extract(v, lane) => {
                self.out.push_str("extract ");
                self.value(body, *v);
                self.out.push_str(", ");
                self.u64(u64::from(*lane));
            }
            OpKind::Insert(v, lane, s) => {
                self.out.push_str("insert ");
                self.value(body, *v);
                self.out.push_str(", ");
                self.u64(u64::from(*lane));
                self.out.push_str(", ");
                self.value(body, *s);
            }
            OpKind::Construct(parts) => self.keyword_operands(body, "vec", parts),
            OpKind::Len(mem) => {
                self.out.push_str("len ");
                match *mem {
                    MemBase::Value(v) => self.value(body, v),
                    MemBase::Global(g) => self.global(name_in(&self.module.memories, g, |m| &m.name)),
                }
            }
            OpKind::Load { mem, index } => {
                self.out.push_str("load ");
                self.element(body, *mem, *index);
            }
            OpKind::Store { mem, index, value } => {
                self.out.push_str("store ");
                self.element(body, *mem, *index);
                self.out.push_str(", ");
                self.value(body, *value);
            }
            OpKind::Atomic { op, mem, index, value, expected } => {
                self.out.push_str("atomic ");
                self.out.push_str(op.keyword());
                self.out.push(' ');
                self.element(body, *mem, *index);
                if let Some(e) = expected {
                    self.out.push_str(", ");
                    self.value(body, *e);
                }
                self.out.push_str(", ");
                self.value(body, *value);
            }
            OpKind::GroupBarrier => self.out.push_str("group_barrier"),
            OpKind::Subgroup(sg) => {
                let keyword = match sg {
                    crate::subgroup::SubgroupOp::Arith { collective, op, .. } => {
                        format!("{} {}", collective.keyword(), op.keyword())
                    }
                    other => other.keyword().to_string(),
                };
                self.keyword_operands(body, &keyword, &sg.operands());
            }
            OpKind::LocalAlloc { elem, count } => {
                self.out.push_str("local ");
                self.array(*elem, *count);
            }
            OpKind::Yield(vs) => self.keyword_operands(body, "yield", vs),
            OpKind::Return(vs) => self.keyword_operands(body, "return", vs),
            OpKind::Call { func, args } => {
                self.out.push_str("call ");
                self.global(name_in(&self.module.functions, *func, |f| &f.def.name));
                self.out.push('(');
                self.values(body, args);
                self.out.push(')');
            }
            OpKind::For { var, lo, hi, step, carried, body: region } => {
                self.out.push_str("for ");
                self.value(body, *var);
                self.out.push_str(" = ");
                self.value(body, *lo);
                self.out.push_str(" to ");
                self.value(body, *hi);
                self.out.push_str(" step ");
                self.value(body, *step);
                self.carry(body, carried);
                self.block(body, region, level);
            }
            OpKind::Loop { carried, body: region } => {
                self.out.push_str("loop");
                self.carry(body, carried);
                self.block(body, region, level);
            }
            OpKind::If { cond, result_types, then_region, else_region } => {
                self.out.push_str("if ");
                self.value(body, *cond);
                if !result_types.is_empty() {
                    self.out.push_str(" -> ");
                    for (i, t) in result_types.iter().enumerate() {
                        if i > 0 {
                            self.out.push_str(", ");
                        }
                        self.ty(*t);
                    }
                }
                self.block(body, then_region, level);
                if let Some(else_region) = else_region {
                    self.out.push_str(" else");
                    self.block(body, else_region, level);
                }
            }
        }
        self.end_line(&op.comments);
    }

    /// ` carry(%a = %init, ...)`, or nothing without carried values.
    fn carry(&mut self, body: &Body, carried: &[(V, V)]) {
        if carried.is_empty() {
            return;
        }
        self.out.push_str(" carry(");
        for (i, (inner, init)) in carried.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value(body, *inner);
            self.out.push_str(" = ");
            self.value(body, *init);
        }
        self.out.push(')');
    }

    /// ` {` region `}` with the closing brace at `level`.
    fn block(&mut self, body: &Body, region: &Region, level: usize) {
        self.out.push_str(" {\n");
        self.region(body, region, level + 1);
        self.indent(level);
        self.out.push('}');
    }

    /// `keyword %a, %b, ...`
    fn keyword_operands(&mut self, body: &Body, keyword: &str, vs: &[V]) {
        self.out.push_str(keyword);
        if !vs.is_empty() {
            self.out.push(' ');
            self.values(body, vs);
        }
    }
}
