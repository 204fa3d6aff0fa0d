//! A small writer of textual LLVM IR: fresh names, blocks, declarations.

use std::collections::BTreeSet;

/// An LLVM value: its type and its operand text (`%t3`, `0x3FF0000000000000`, `true`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Val {
    /// LLVM type text.
    pub ty: String,
    /// Operand text.
    pub v: String,
}

impl Val {
    /// A value of type `ty` spelled `v`.
    pub fn new(ty: impl Into<String>, v: impl Into<String>) -> Val {
        Val { ty: ty.into(), v: v.into() }
    }

    /// `ty v`, as an operand with its type.
    pub fn typed(&self) -> String {
        format!("{} {}", self.ty, self.v)
    }
}

/// The function being written plus the module-level lines it needs.
#[derive(Default)]
pub(crate) struct IrWriter {
    /// Module-level globals, in creation order.
    pub globals: Vec<String>,
    /// Function declarations (sorted, deduplicated).
    pub decls: BTreeSet<String>,
    /// The function body lines.
    pub body: Vec<String>,
    next: u32,
    next_label: u32,
    /// The block instructions are appended to.
    pub block: String,
}

impl IrWriter {
    /// A fresh local name.
    pub fn tmp(&mut self) -> String {
        self.next += 1;
        format!("%t{}", self.next)
    }

    /// A fresh block label with a readable prefix.
    pub fn label(&mut self, prefix: &str) -> String {
        self.next_label += 1;
        format!("{prefix}{}", self.next_label)
    }

    /// Appends `%t = rhs` and returns the result as a `ty` value.
    pub fn emit(&mut self, ty: &str, rhs: String) -> Val {
        let name = self.tmp();
        self.body.push(format!("  {name} = {rhs}"));
        Val::new(ty, name)
    }

    /// Appends an instruction without a result.
    pub fn inst(&mut self, text: String) {
        self.body.push(format!("  {text}"));
    }

    /// Starts block `label`.
    pub fn start(&mut self, label: &str) {
        self.body.push(format!("{label}:"));
        self.block = label.to_string();
    }

    /// Appends a placeholder line, returning its index for [`IrWriter::patch`].
    pub fn placeholder(&mut self) -> usize {
        self.body.push(String::new());
        self.body.len() - 1
    }

    /// Replaces a placeholder line.
    pub fn patch(&mut self, at: usize, text: String) {
        if let Some(line) = self.body.get_mut(at) {
            *line = text;
        }
    }

    /// Adds a declaration.
    pub fn declare(&mut self, decl: String) {
        self.decls.insert(decl);
    }

    /// Calls `ret name(args)`, declaring it; returns the result.
    pub fn call(&mut self, ret: &str, name: &str, args: &[Val]) -> Val {
        let params: Vec<&str> = args.iter().map(|a| a.ty.as_str()).collect();
        self.declare(format!("declare {ret} @{name}({})", params.join(", ")));
        let operands: Vec<String> = args.iter().map(Val::typed).collect();
        self.emit(ret, format!("call {ret} @{name}({})", operands.join(", ")))
    }

    /// Calls a `void` function.
    pub fn call_void(&mut self, name: &str, args: &[Val]) {
        let params: Vec<&str> = args.iter().map(|a| a.ty.as_str()).collect();
        self.declare(format!("declare void @{name}({})", params.join(", ")));
        let operands: Vec<String> = args.iter().map(Val::typed).collect();
        self.inst(format!("call void @{name}({})", operands.join(", ")));
    }

    /// A private constant C string global; returns its name.
    pub fn cstring(&mut self, text: &str) -> String {
        let name = format!("@__cg_str{}", self.globals.len());
        self.globals.push(format!("{name} = private unnamed_addr constant [{} x i8] c\"{text}\\00\"", text.len() + 1));
        name
    }
}
