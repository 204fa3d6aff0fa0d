//! The canonical printer: the exact inverse of the parser.
//!
//! Everything is written with `push_str` into one `String` (no `format!` per token), so a
//! large graph prints at memory speed. The printer never panics, even on a module built
//! through the API with dangling handles: those print as `<invalid>` (which does not parse
//! back, and is the verifier's business).

mod graph;
mod kernel;

use crate::arena::{Arena, Handle};
use crate::module::{
    Comments, DeviceGlobal, Home, HostAccess, InitMode, Item, MemoryKind, MemoryObject, Module, UsmKind,
};
use crate::types::{LitValue, Literal, Type};

/// Text printed for a handle that points nowhere.
const INVALID: &str = "<invalid>";

/// Prints a whole module.
pub(super) fn print_module(module: &Module) -> String {
    let mut p = Printer { out: String::with_capacity(4096), module };
    let mut previous: Option<Item> = None;
    for item in &module.items {
        // A blank line between items, except inside a run of memory declarations.
        let kept = item_comments(module, *item).is_some_and(|c| c.blank_before);
        match (previous, item) {
            (Some(Item::Memory(_)), Item::Memory(_)) if kept => p.out.push('\n'),
            (None, _) | (Some(Item::Memory(_)), Item::Memory(_)) => {}
            _ => p.out.push('\n'),
        }
        previous = Some(*item);
        match *item {
            Item::Kernel(h) => {
                if let Some(k) = module.kernels.try_get(h) {
                    p.kernel(k);
                }
            }
            Item::Function(h) => {
                if let Some(f) = module.functions.try_get(h) {
                    p.function(f);
                }
            }
            Item::Memory(h) => {
                if let Some(m) = module.memories.try_get(h) {
                    p.memory(m);
                }
            }
            Item::Graph(h) => {
                if let Some(g) = module.graphs.try_get(h) {
                    p.graph(g);
                }
            }
        }
    }
    if !module.trailing_comments.is_empty() && !module.items.is_empty() {
        p.out.push('\n');
    }
    p.comment_lines(0, &module.trailing_comments);
    p.out
}

/// The comments of item `item`, if it exists.
fn item_comments(module: &Module, item: Item) -> Option<&Comments> {
    match item {
        Item::Kernel(h) => module.kernels.try_get(h).map(|k| &k.comments),
        Item::Function(h) => module.functions.try_get(h).map(|f| &f.def.comments),
        Item::Memory(h) => module.memories.try_get(h).map(|m| &m.comments),
        Item::Graph(h) => module.graphs.try_get(h).map(|g| &g.comments),
    }
}

/// The output and the module names are looked up in.
pub(super) struct Printer<'m> {
    out: String,
    module: &'m Module,
}

/// The name of arena element `h`, or [`INVALID`].
fn name_in<'a, T>(arena: &'a Arena<T>, h: Handle<T>, name: impl Fn(&'a T) -> &'a str) -> &'a str {
    arena.try_get(h).map_or(INVALID, name)
}

impl Printer<'_> {
    fn indent(&mut self, level: usize) {
        for _ in 0..level {
            self.out.push_str("  ");
        }
    }

    /// An item's leading comments, and the blank line the user wrote after them.
    fn item_comment_lines(&mut self, comments: &Comments) {
        self.comment_lines(0, &comments.leading);
        if comments.blank_after_leading && !comments.leading.is_empty() {
            self.out.push('\n');
        }
    }

    /// Whole-line comments at `level`.
    fn comment_lines(&mut self, level: usize, lines: &[String]) {
        for line in lines {
            self.indent(level);
            self.out.push_str("//");
            self.out.push_str(line);
            self.out.push('\n');
        }
    }

    /// The trailing comment, if any, and the end of the line.
    fn end_line(&mut self, comments: &Comments) {
        if let Some(text) = &comments.trailing {
            self.out.push_str(" //");
            self.out.push_str(text);
        }
        self.out.push('\n');
    }

    fn u64(&mut self, mut v: u64) {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        // Only ASCII digits were written.
        self.out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or("0"));
    }

    fn i128(&mut self, v: i128) {
        if v < 0 {
            self.out.push('-');
        }
        let magnitude = v.unsigned_abs();
        match u64::try_from(magnitude) {
            Ok(small) => self.u64(small),
            Err(_) => self.out.push_str(&magnitude.to_string()),
        }
    }

    /// A comma-separated list of integers.
    fn u64_list(&mut self, values: &[u64]) {
        for (i, v) in values.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.u64(*v);
        }
    }

    fn f64(&mut self, v: f64) {
        // `{:?}` is the shortest text that reads back to the same f64, except that NaN
        // prints as `NaN`; the language spells it `nan`.
        if v.is_nan() {
            self.out.push_str("nan");
        } else {
            self.out.push_str(&format!("{v:?}"));
        }
    }

    fn lit_value(&mut self, value: LitValue) {
        match value {
            LitValue::Bool(b) => self.out.push_str(if b { "true" } else { "false" }),
            LitValue::Int(i) => self.i128(i),
            LitValue::Float(f) => self.f64(f),
        }
    }

    /// A literal with its type, if written: `3.0`, `7 : u32`.
    fn literal(&mut self, lit: &Literal) {
        self.lit_value(lit.value);
        if let Some(ty) = lit.ty {
            self.out.push_str(" : ");
            self.out.push_str(ty.keyword());
        }
    }

    fn ty(&mut self, t: Type) {
        if t.lanes == 1 {
            self.out.push_str(t.scalar.keyword());
        } else {
            self.out.push_str("vec");
            self.u64(u64::from(t.lanes));
            self.out.push('<');
            self.out.push_str(t.scalar.keyword());
            self.out.push('>');
        }
    }

    /// `T[N]`
    fn array(&mut self, elem: Type, count: u64) {
        self.ty(elem);
        self.out.push('[');
        self.u64(count);
        self.out.push(']');
    }

    fn global(&mut self, name: &str) {
        self.out.push('@');
        self.out.push_str(name);
    }

    fn local(&mut self, name: &str) {
        self.out.push('%');
        self.out.push_str(name);
    }

    /// A string literal with `\\ \" \n \t` escaped and other control characters as `\u{X}`.
    fn string(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '\\' => self.out.push_str("\\\\"),
                '"' => self.out.push_str("\\\""),
                '\n' => self.out.push_str("\\n"),
                '\t' => self.out.push_str("\\t"),
                c if c.is_control() => self.out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }

    /// `x"0a0b"`: lowercase pairs, no spaces.
    fn bytes(&mut self, bytes: &[u8]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.out.push_str("x\"");
        for &b in bytes {
            self.out.push(HEX[usize::from(b >> 4)] as char);
            self.out.push(HEX[usize::from(b & 15)] as char);
        }
        self.out.push('"');
    }

    fn memory(&mut self, m: &MemoryObject) {
        self.item_comment_lines(&m.comments);
        self.out.push_str(match m.kind {
            MemoryKind::Usm(_) => "usm ",
            MemoryKind::Buffer => "buffer ",
            MemoryKind::DeviceGlobal(_) => "device_global ",
        });
        self.global(&m.name);
        self.out.push_str(" : ");
        self.array(m.elem, m.count);
        match &m.kind {
            MemoryKind::Usm(UsmKind::Device) | MemoryKind::Buffer => {}
            MemoryKind::Usm(kind) => {
                self.out.push(' ');
                self.out.push_str(kind.keyword());
            }
            MemoryKind::DeviceGlobal(dg) => self.device_global(dg),
        }
        match m.home {
            Home::Graph => {}
            Home::Device(d) => {
                self.out.push_str(" home(");
                self.u64(u64::from(d));
                self.out.push(')');
            }
            Home::Replicated => self.out.push_str(" replicated"),
            Home::Host => self.out.push_str(" home(host)"),
        }
        self.end_line(&m.comments);
    }

    /// `= [..]` and `properties(..)` of a device_global, in canonical order.
    fn device_global(&mut self, dg: &DeviceGlobal) {
        if !dg.init.is_empty() {
            self.out.push_str(" = [");
            for (i, lit) in dg.init.iter().enumerate() {
                if i > 0 {
                    self.out.push_str(", ");
                }
                self.literal(lit);
            }
            self.out.push(']');
        }
        let mut props: Vec<&str> = Vec::new();
        if dg.device_image_scope {
            props.push("device_image_scope");
        }
        if dg.implement_in_csr {
            props.push("implement_in_csr");
        }
        if let Some(access) = dg.host_access {
            props.push(match access {
                HostAccess::Read => "host_access(read)",
                HostAccess::Write => "host_access(write)",
                HostAccess::ReadWrite => "host_access(read_write)",
                HostAccess::None => "host_access(none)",
            });
        }
        if let Some(mode) = dg.init_mode {
            props.push(match mode {
                InitMode::Reprogram => "init_mode(reprogram)",
                InitMode::Reset => "init_mode(reset)",
            });
        }
        if !props.is_empty() {
            self.out.push_str(" properties(");
            self.out.push_str(&props.join(", "));
            self.out.push(')');
        }
    }
}

#[cfg(test)]
mod tests;
