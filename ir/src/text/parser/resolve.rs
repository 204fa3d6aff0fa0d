//! Module-level names: kernels, memory objects and graphs may be used before their
//! definition.
//!
//! Each distinct `@name` referenced or defined at module level gets a symbol number; a
//! reference is stored as a provisional handle holding that number. Once every item is
//! parsed, [`Symbols::resolve`] reports names that are undefined or of the wrong kind and
//! rewrites every provisional handle to the real arena handle in one walk over the module.

use super::names::NameMap;
use super::ParseError;
use crate::arena::Handle;
use crate::graph::{Accessor, Alternative, Arg, ArgValue, Graph, KernelCommand, MemRef, NodeKind, Pointer};
use crate::kernel::{Kernel, KernelBody, MemBase, OpKind};
use crate::module::{MemoryObject, Module};
use crate::span::Span;

/// The three kinds of module items, which share one namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ItemKind {
    Kernel,
    Memory,
    Graph,
}

impl ItemKind {
    fn index(self) -> usize {
        self as usize
    }

    fn noun(self) -> &'static str {
        match self {
            ItemKind::Kernel => "kernel",
            ItemKind::Memory => "memory object",
            ItemKind::Graph => "graph",
        }
    }

    fn with_article(self) -> &'static str {
        match self {
            ItemKind::Kernel => "a kernel",
            ItemKind::Memory => "a memory object",
            ItemKind::Graph => "a graph",
        }
    }

    fn help(self) -> &'static str {
        match self {
            ItemKind::Kernel => "define it at module level: `kernel @name(%p: T, ...) { ... }`",
            ItemKind::Memory => {
                "declare it at module level: `usm @x : f32[N]`, `buffer @b : f32[N]` or `device_global @g : T[N]`"
            }
            ItemKind::Graph => "define it at module level: `graph @name { ... }`",
        }
    }
}

const KINDS: [ItemKind; 3] = [ItemKind::Kernel, ItemKind::Memory, ItemKind::Graph];

/// A handle for `index`. Indices here count items or names of an input of at most 1 GiB,
/// far below the `u32::MAX - 1` a handle holds, so clamping never changes them.
pub(super) fn handle<T>(index: usize) -> Handle<T> {
    Handle::from_usize(index.min(u32::MAX as usize - 2)).expect("a clamped index always fits a handle")
}

struct Sym {
    /// Kind, arena index and name span of the first definition.
    def: Option<(ItemKind, usize, Span)>,
    /// The first reference of each kind, for "undefined" errors.
    first_use: [Option<Span>; 3],
}

/// The module-level symbol table; a name's entry number is its symbol number.
#[derive(Default)]
pub(super) struct Symbols<'s> {
    map: NameMap<'s, Sym>,
}

impl<'s> Symbols<'s> {
    fn intern(&mut self, name: &'s str) -> usize {
        self.map.insert_with(name, || Sym { def: None, first_use: [None; 3] }).unwrap_or_else(|e| e)
    }

    /// A provisional handle for a reference to `name` as a `kind`.
    pub fn reference<T>(&mut self, kind: ItemKind, name: &'s str, span: Span) -> Handle<T> {
        let index = self.intern(name);
        if let Some(sym) = self.map.entry_mut(index) {
            sym.first_use[kind.index()].get_or_insert(span);
        }
        handle(index)
    }

    /// Defines `name` as item `index` of `kind`'s arena; a second definition is an error.
    pub fn define(&mut self, kind: ItemKind, name: &'s str, index: usize, span: Span) -> Result<(), ParseError> {
        let sym = self.intern(name);
        let Some(sym) = self.map.entry_mut(sym) else { return Ok(()) };
        match sym.def {
            Some((_, _, first)) => Err(ParseError::Duplicate { name: format!("@{name}"), span, first }),
            None => {
                sym.def = Some((kind, index, span));
                Ok(())
            }
        }
    }

    /// Reports undefined and wrong-kind references, then (if there is no error at all)
    /// rewrites every provisional handle in `module`.
    pub fn resolve(&self, module: &mut Module, errors: &mut Vec<ParseError>) {
        let n = self.map.len();
        let mut maps = Maps { kernels: vec![None; n], memories: vec![None; n], graphs: vec![None; n] };
        for (i, (name, sym)) in self.map.iter().enumerate() {
            if let Some((kind, index, _)) = sym.def {
                match kind {
                    ItemKind::Kernel => maps.kernels[i] = Some(handle(index)),
                    ItemKind::Memory => maps.memories[i] = Some(handle(index)),
                    ItemKind::Graph => maps.graphs[i] = Some(handle(index)),
                }
            }
            for kind in KINDS {
                let Some(span) = sym.first_use[kind.index()] else { continue };
                match sym.def {
                    None => errors.push(ParseError::Undefined {
                        kind: kind.noun(),
                        name: format!("@{name}"),
                        help: kind.help(),
                        span,
                    }),
                    Some((found, _, def)) if found != kind => errors.push(ParseError::WrongKind {
                        name: format!("@{name}"),
                        expected: kind.with_article(),
                        found: found.with_article(),
                        span,
                        def,
                    }),
                    Some(_) => {}
                }
            }
        }
        if errors.is_empty() {
            maps.module(module);
        }
    }
}

/// Symbol number to real handle, per kind.
struct Maps {
    kernels: Vec<Option<Handle<Kernel>>>,
    memories: Vec<Option<Handle<MemoryObject>>>,
    graphs: Vec<Option<Handle<Graph>>>,
}

fn lookup<T>(map: &[Option<Handle<T>>], h: Handle<T>) -> Handle<T> {
    map.get(h.index()).copied().flatten().unwrap_or(h)
}

impl Maps {
    fn module(&self, module: &mut Module) {
        for (_, graph) in module.graphs.iter_mut() {
            for (_, node) in graph.nodes.iter_mut() {
                self.node_kind(&mut node.kind);
            }
            for (_, param) in graph.dyn_params.iter_mut() {
                self.arg_value(&mut param.value);
            }
            for (_, dcg) in graph.dcgs.iter_mut() {
                for alt in &mut dcg.alternatives {
                    match alt {
                        Alternative::Kernel(cmd) => self.command(cmd),
                        Alternative::HostTask(task) => task.access.iter_mut().for_each(|a| self.mem_ref(&mut a.mem)),
                        Alternative::Other(kind) => self.node_kind(kind),
                    }
                }
            }
        }
        for (_, kernel) in module.kernels.iter_mut() {
            let KernelBody::Ir(body) = &mut kernel.body else { continue };
            for (_, op) in body.ops.iter_mut() {
                match &mut op.kind {
                    OpKind::Load { mem, .. } | OpKind::Store { mem, .. } | OpKind::Atomic { mem, .. } => {
                        if let MemBase::Global(g) = mem {
                            *g = lookup(&self.memories, *g);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn node_kind(&self, kind: &mut NodeKind) {
        match kind {
            NodeKind::Kernel(cmd) => self.command(cmd),
            NodeKind::Memcpy { dst, src, .. } => {
                self.pointer(dst);
                self.pointer(src);
            }
            NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => self.pointer(dst),
            NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } => self.pointer(ptr),
            NodeKind::HostTask(task) | NodeKind::Native(task) => {
                task.access.iter_mut().for_each(|a| self.mem_ref(&mut a.mem))
            }
            NodeKind::Subgraph { graph } => *graph = lookup(&self.graphs, *graph),
            NodeKind::Empty
            | NodeKind::Barrier { .. }
            | NodeKind::AsyncMalloc { .. }
            | NodeKind::AsyncFree { .. }
            | NodeKind::Dynamic { .. } => {}
        }
    }

    fn command(&self, cmd: &mut KernelCommand) {
        cmd.kernel = lookup(&self.kernels, cmd.kernel);
        for arg in &mut cmd.args {
            if let Arg::Value(value) = arg {
                self.arg_value(value);
            }
        }
    }

    fn arg_value(&self, value: &mut ArgValue) {
        match value {
            ArgValue::Pointer(p) => self.pointer(p),
            ArgValue::Accessor(Accessor { buffer, .. }) => self.mem_ref(buffer),
            ArgValue::Scalar(_) | ArgValue::Bytes(_) | ArgValue::Local { .. } => {}
        }
    }

    fn pointer(&self, p: &mut Pointer) {
        self.mem_ref(&mut p.base);
    }

    fn mem_ref(&self, m: &mut MemRef) {
        if let MemRef::Memory(h) = m {
            *h = lookup(&self.memories, *h);
        }
    }
}
