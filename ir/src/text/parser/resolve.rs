//! Module-level names: kernels, functions, memory objects and graphs may be used before
//! their definition.
//!
//! Each distinct `@name` referenced or defined at module level gets a symbol number; a
//! reference is stored as a provisional handle holding that number. A graph node whose
//! names are all defined when the node is parsed (the usual case: kernels and memory come
//! first) gets its real handles right away, while it is in cache ([`Symbols::resolve_now`]).
//! Once every item is parsed, [`Symbols::resolve`] reports names that are undefined or of
//! the wrong kind and rewrites the provisional handles left, in one walk over the module
//! that visits only the nodes not resolved already.

use super::names::NameMap;
use super::ParseError;
use crate::arena::Handle;
use crate::graph::{Accessor, Alternative, Arg, ArgValue, Graph, KernelCommand, MemRef, Node, NodeKind};
use crate::kernel::{Function, Kernel, KernelBody, MemBase, OpKind};
use crate::module::{MemoryObject, Module};
use crate::span::Span;

/// The four kinds of module items, which share one namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ItemKind {
    Kernel,
    Memory,
    Graph,
    Function,
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
            ItemKind::Function => "function",
        }
    }

    fn with_article(self) -> &'static str {
        match self {
            ItemKind::Kernel => "a kernel",
            ItemKind::Memory => "a memory object",
            ItemKind::Graph => "a graph",
            ItemKind::Function => "a function",
        }
    }

    fn help(self) -> &'static str {
        match self {
            ItemKind::Kernel => "define it at module level: `kernel @name(%p: T, ...) { ... }`",
            ItemKind::Memory => {
                "declare it at module level: `usm @x : f32[N]`, `buffer @b : f32[N]` or `device_global @g : T[N]`"
            }
            ItemKind::Graph => "define it at module level: `graph @name { ... }`",
            ItemKind::Function => "define it at module level: `func @name(%p: T, ...) -> T { ... return %r }`",
        }
    }
}

const KINDS: [ItemKind; 4] = [ItemKind::Kernel, ItemKind::Memory, ItemKind::Graph, ItemKind::Function];

/// A handle for `index`. Indices here count items or names of an input of at most 1 GiB,
/// far below the `u32::MAX - 1` a handle holds, so clamping never changes them.
pub(super) fn handle<T>(index: usize) -> Handle<T> {
    Handle::from_usize(index.min(u32::MAX as usize - 2)).expect("a clamped index always fits a handle")
}

struct Sym {
    /// Kind, arena index and name span of the first definition.
    def: Option<(ItemKind, usize, Span)>,
    /// The first reference of each kind, for "undefined" errors.
    first_use: [Option<Span>; 4],
}

/// The module-level symbol table; a name's entry number is its symbol number.
#[derive(Default)]
pub(super) struct Symbols<'s> {
    map: NameMap<'s, Sym>,
    /// Nodes (graph index, node) that still hold provisional handles.
    later: Vec<(usize, Handle<Node>)>,
}

impl<'s> Symbols<'s> {
    /// The symbol number of `name`. Interning a name has no effect of its own: a symbol
    /// neither referenced nor defined is never reported.
    pub fn intern(&mut self, name: &'s str) -> usize {
        self.map.insert_with(name, || Sym { def: None, first_use: [None; 4] }).unwrap_or_else(|e| e)
    }

    /// Records a reference to symbol `index` as a `kind` at `span` (the first one of each
    /// kind is where an undefined name is reported).
    pub fn note_use(&mut self, index: usize, kind: ItemKind, span: Span) {
        if let Some(sym) = self.map.entry_mut(index) {
            sym.first_use[kind.index()].get_or_insert(span);
        }
    }

    /// The arena index of symbol `index` if it is now defined as a `kind`.
    pub fn defined_as(&self, index: usize, kind: ItemKind) -> Option<usize> {
        match self.map.entry(index)?.def {
            Some((found, at, _)) if found == kind => Some(at),
            _ => None,
        }
    }

    /// A provisional handle for a reference to `name` as a `kind`.
    pub fn reference<T>(&mut self, kind: ItemKind, name: &'s str, span: Span) -> Handle<T> {
        let index = self.intern(name);
        self.note_use(index, kind, span);
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

    /// Gives `kind` its real handles if every name it references is now defined as what
    /// it is used as; otherwise leaves it as it is and returns false (the node is then
    /// resolved by [`Symbols::resolve`], after [`Symbols::later`]).
    pub fn resolve_now(&self, kind: &mut NodeKind) -> bool {
        let mut check = Now { syms: &self.map, rewrite: false, ok: true };
        walk_node_kind(kind, &mut check);
        if check.ok {
            walk_node_kind(kind, &mut Now { syms: &self.map, rewrite: true, ok: true });
        }
        check.ok
    }

    /// Records that node `node` of graph `graph` (its index in the module) was not
    /// resolved by [`Symbols::resolve_now`].
    pub fn later(&mut self, graph: usize, node: Handle<Node>) {
        self.later.push((graph, node));
    }

    /// Reports undefined and wrong-kind references, then (if there is no error at all)
    /// rewrites every provisional handle left in `module`.
    pub fn resolve(&self, module: &mut Module, errors: &mut Vec<ParseError>) {
        let n = self.map.len();
        let mut maps =
            Maps { kernels: vec![None; n], memories: vec![None; n], graphs: vec![None; n], functions: vec![None; n] };
        for (i, (name, sym)) in self.map.iter().enumerate() {
            if let Some((kind, index, _)) = sym.def {
                match kind {
                    ItemKind::Kernel => maps.kernels[i] = Some(handle(index)),
                    ItemKind::Memory => maps.memories[i] = Some(handle(index)),
                    ItemKind::Graph => maps.graphs[i] = Some(handle(index)),
                    ItemKind::Function => maps.functions[i] = Some(handle(index)),
                }
            }
            for kind in KINDS {
                let Some(span) = sym.first_use[kind.index()] else { continue };
                match sym.def {
                    None => errors.push(ParseError::Undefined {
                        kind: kind.noun(),
                        name: format!("@{name}"),
                        help: kind.help(),
                        // Defined items of the same kind only: a memory is no answer for a kernel.
                        suggestion: crate::suggest::closest(
                            name,
                            self.map.iter().filter(|(_, s)| s.def.is_some_and(|d| d.0 == kind)).map(|(n, _)| *n),
                        )
                        .map(|s| format!("@{s}")),
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
            maps.module(module, &self.later);
        }
    }
}

/// Symbol number to real handle, per kind.
struct Maps {
    kernels: Vec<Option<Handle<Kernel>>>,
    memories: Vec<Option<Handle<MemoryObject>>>,
    graphs: Vec<Option<Handle<Graph>>>,
    functions: Vec<Option<Handle<Function>>>,
}

fn lookup<T>(map: &[Option<Handle<T>>], h: Handle<T>) -> Handle<T> {
    map.get(h.index()).copied().flatten().unwrap_or(h)
}

/// What a walk over a node does with each module-level handle in it.
trait Rewrite {
    fn kernel(&mut self, h: &mut Handle<Kernel>);
    fn memory(&mut self, h: &mut Handle<MemoryObject>);
    fn graph(&mut self, h: &mut Handle<Graph>);
}

impl Rewrite for Maps {
    fn kernel(&mut self, h: &mut Handle<Kernel>) {
        *h = lookup(&self.kernels, *h);
    }

    fn memory(&mut self, h: &mut Handle<MemoryObject>) {
        *h = lookup(&self.memories, *h);
    }

    fn graph(&mut self, h: &mut Handle<Graph>) {
        *h = lookup(&self.graphs, *h);
    }
}

/// Resolution of one node while it is parsed: checks that every name is defined as what
/// it is used as (`rewrite` false), or rewrites the handles (`rewrite` true).
struct Now<'a, 's> {
    syms: &'a NameMap<'s, Sym>,
    rewrite: bool,
    ok: bool,
}

impl Now<'_, '_> {
    fn one<T>(&mut self, h: &mut Handle<T>, kind: ItemKind) {
        match self.syms.entry(h.index()).and_then(|sym| sym.def) {
            Some((found, index, _)) if found == kind => {
                if self.rewrite {
                    *h = handle(index);
                }
            }
            _ => self.ok = false,
        }
    }
}

impl Rewrite for Now<'_, '_> {
    fn kernel(&mut self, h: &mut Handle<Kernel>) {
        self.one(h, ItemKind::Kernel);
    }

    fn memory(&mut self, h: &mut Handle<MemoryObject>) {
        self.one(h, ItemKind::Memory);
    }

    fn graph(&mut self, h: &mut Handle<Graph>) {
        self.one(h, ItemKind::Graph);
    }
}

impl Maps {
    fn module(&mut self, module: &mut Module, later: &[(usize, Handle<Node>)]) {
        for &(graph, node) in later {
            let graph = module.graphs.try_get_mut(handle(graph));
            if let Some(node) = graph.and_then(|g| g.nodes.try_get_mut(node)) {
                walk_node_kind(&mut node.kind, self);
            }
        }
        for (_, graph) in module.graphs.iter_mut() {
            for (_, param) in graph.dyn_params.iter_mut() {
                walk_arg_value(&mut param.value, self);
            }
            for (_, dcg) in graph.dcgs.iter_mut() {
                for alt in &mut dcg.alternatives {
                    match alt {
                        Alternative::Kernel(cmd) => walk_command(cmd, self),
                        Alternative::HostTask(task) => {
                            task.access.iter_mut().for_each(|a| walk_mem_ref(&mut a.mem, self))
                        }
                        Alternative::Other(kind) => walk_node_kind(kind, self),
                    }
                }
            }
        }
        let Module { kernels, functions, .. } = module;
        let bodies = kernels.iter_mut().map(|(_, k)| k).chain(functions.iter_mut().map(|(_, f)| &mut f.def));
        for kernel in bodies {
            let KernelBody::Ir(body) = &mut kernel.body else { continue };
            for (_, op) in body.ops.iter_mut() {
                match &mut op.kind {
                    OpKind::Load { mem, .. }
                    | OpKind::Store { mem, .. }
                    | OpKind::Atomic { mem, .. }
                    | OpKind::Len(mem) => {
                        if let MemBase::Global(g) = mem {
                            self.memory(g);
                        }
                    }
                    OpKind::Call { func, .. } => *func = lookup(&self.functions, *func),
                    _ => {}
                }
            }
        }
    }
}

fn walk_node_kind(kind: &mut NodeKind, r: &mut impl Rewrite) {
    match kind {
        NodeKind::Kernel(cmd) => walk_command(cmd, r),
        NodeKind::Memcpy { dst, src, .. } => {
            walk_mem_ref(&mut dst.base, r);
            walk_mem_ref(&mut src.base, r);
        }
        NodeKind::Memset { dst, .. } | NodeKind::Memfill { dst, .. } => walk_mem_ref(&mut dst.base, r),
        NodeKind::Prefetch { ptr, .. } | NodeKind::Memadvise { ptr, .. } => walk_mem_ref(&mut ptr.base, r),
        NodeKind::Comm(c) => walk_mem_ref(&mut c.ptr.base, r),
        NodeKind::HostTask(task) | NodeKind::Native(task) => {
            task.access.iter_mut().for_each(|a| walk_mem_ref(&mut a.mem, r))
        }
        NodeKind::Subgraph { graph } => r.graph(graph),
        NodeKind::Conditional { cond, bodies, .. } => {
            walk_mem_ref(&mut cond.base, r);
            bodies.iter_mut().for_each(|b| r.graph(b));
        }
        NodeKind::Empty
        | NodeKind::Barrier { .. }
        | NodeKind::AsyncMalloc { .. }
        | NodeKind::AsyncFree { .. }
        | NodeKind::Dynamic { .. } => {}
    }
}

fn walk_command(cmd: &mut KernelCommand, r: &mut impl Rewrite) {
    r.kernel(&mut cmd.kernel);
    for arg in &mut cmd.args {
        if let Arg::Value(value) = arg {
            walk_arg_value(value, r);
        }
    }
}

fn walk_arg_value(value: &mut ArgValue, r: &mut impl Rewrite) {
    match value {
        ArgValue::Pointer(p) => walk_mem_ref(&mut p.base, r),
        ArgValue::Accessor(Accessor { buffer, .. }) => walk_mem_ref(buffer, r),
        ArgValue::Scalar(_) | ArgValue::Bytes(_) | ArgValue::Local { .. } => {}
    }
}

fn walk_mem_ref(m: &mut MemRef, r: &mut impl Rewrite) {
    if let MemRef::Memory(h) = m {
        r.memory(h);
    }
}
