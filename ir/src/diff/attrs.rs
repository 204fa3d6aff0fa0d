//! What a diff compares: each entity flattened to named attributes rendered as IR text.
//!
//! Two modules never share handles, so entities are compared by what they say, not by
//! which arena slot they point at: every reference is rendered by name (`@x + 64`, `%tmp`),
//! and two attributes are equal when their texts are. A node becomes a list such as
//! `[command kernel, kernel @k, launch range(8), arg 0 @x, queue @q]`; comparing two lists by
//! attribute name gives the `old -> new` lines of the report.

use crate::arena::Handle;
use crate::comm::CommOp;
use crate::dot::label;
use crate::graph::{Alternative, Arg, DynCommandGroup, Graph, HostTaskCommand, KernelCommand, Node, NodeKind};
use crate::kernel::Kernel;
use crate::module::{Home, HostAccess, InitMode, Item, MemoryKind, MemoryObject, Module, UsmKind};
use crate::span::Span;

/// One attribute: its name (`launch`, `arg 2`, `dst`) and its value as IR text.
pub(crate) type Attr = (String, String);

/// How arguments registered with a dynamic parameter are shown.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum DynArgs {
    /// As the parameter (`%alpha`): what the statement says.
    ByName,
    /// As the parameter's current value (`2.0 : f32`): what an update would write out.
    ByValue,
}

fn attr(name: &str, value: String) -> Attr {
    (name.to_string(), value)
}

/// The command keyword of a node (`kernel`, `memcpy`, `dynamic`, ...).
pub(crate) fn command_keyword(kind: &NodeKind) -> &'static str {
    match kind {
        NodeKind::Empty => "empty",
        NodeKind::Kernel(_) => "kernel",
        NodeKind::Memcpy { .. } => "memcpy",
        NodeKind::Memset { .. } => "memset",
        NodeKind::Memfill { .. } => "memfill",
        NodeKind::Prefetch { .. } => "prefetch",
        NodeKind::Memadvise { .. } => "memadvise",
        NodeKind::Barrier { .. } => "barrier",
        NodeKind::HostTask(_) => "host_task",
        NodeKind::Native(_) => "native",
        NodeKind::Subgraph { .. } => "subgraph",
        NodeKind::AsyncMalloc { .. } => "async_malloc",
        NodeKind::AsyncFree { .. } => "async_free",
        NodeKind::Dynamic { .. } => "dynamic",
        NodeKind::Conditional { kind, .. } => kind.keyword(),
        NodeKind::Comm(c) => c.op.keyword(),
    }
}

/// The bodies of a conditional node as `@name`s.
fn body_names(module: &Module, bodies: &[Handle<Graph>]) -> Vec<String> {
    bodies.iter().map(|b| label::global(module.graphs.try_get(*b).map(|g| g.name.as_str()))).collect()
}

fn kernel_attrs(module: &Module, graph: &Graph, cmd: &KernelCommand, dyn_args: DynArgs, out: &mut Vec<Attr>) {
    out.push(attr("kernel", label::kernel_name(module, cmd)));
    out.push(attr("launch", label::launch(&cmd.launch)));
    for (i, a) in cmd.args.iter().enumerate() {
        let text = match (a, dyn_args) {
            (Arg::Dyn(p), DynArgs::ByValue) => match graph.dyn_params.try_get(*p) {
                Some(param) => label::arg_value(module, graph, &param.value),
                None => label::arg(module, graph, a),
            },
            _ => label::arg(module, graph, a),
        };
        out.push((arg_name(module, cmd.kernel, i), text));
    }
}

/// The attribute name of argument `i` of a launch of `kernel`: the kernel's parameter name
/// (`arg %scale`), which says what the value is where a position (`arg 6`) does not;
/// `arg 6` only for an argument the kernel has no parameter for (an unverified module).
pub(crate) fn arg_name(module: &Module, kernel: Handle<Kernel>, i: usize) -> String {
    match module.kernels.try_get(kernel).and_then(|k| k.params.get(i)) {
        Some(p) => format!("arg %{}", p.name),
        None => format!("arg {i}"),
    }
}

fn task_attrs(module: &Module, graph: &Graph, task: &HostTaskCommand, out: &mut Vec<Attr>) {
    out.push(attr("callback", label::string(&task.callback)));
    let access = label::access_list(module, graph, task).unwrap_or_else(|| "access()".to_string());
    out.push(attr("access", access));
}

/// The attributes of a command (without the node's queue).
pub(crate) fn command_attrs(module: &Module, graph: &Graph, kind: &NodeKind, dyn_args: DynArgs) -> Vec<Attr> {
    let mut out = vec![attr("command", command_keyword(kind).to_string())];
    let ptr = |p| label::pointer(module, graph, p);
    match kind {
        NodeKind::Empty => {}
        NodeKind::Kernel(cmd) => kernel_attrs(module, graph, cmd, dyn_args, &mut out),
        NodeKind::Memcpy { dst, src, bytes } => {
            out.extend([attr("dst", ptr(dst)), attr("src", ptr(src)), attr("bytes", bytes.to_string())]);
        }
        NodeKind::Memset { dst, value, bytes } => {
            out.extend([attr("dst", ptr(dst)), attr("value", value.to_string()), attr("bytes", bytes.to_string())]);
        }
        NodeKind::Memfill { dst, pattern, count } => {
            let pattern = label::literal(pattern);
            out.extend([attr("dst", ptr(dst)), attr("pattern", pattern), attr("count", count.to_string())]);
        }
        NodeKind::Prefetch { ptr: p, bytes } => out.extend([attr("ptr", ptr(p)), attr("bytes", bytes.to_string())]),
        NodeKind::Comm(c) => {
            out.extend([attr("ptr", ptr(&c.ptr)), attr("bytes", c.bytes.to_string())]);
            match c.op {
                CommOp::Send { peer, tag } | CommOp::Recv { peer, tag } => {
                    out.extend([attr("peer", peer.to_string()), attr("tag", tag.to_string())]);
                }
                CommOp::AllReduce(op) => out.push(attr("op", op.keyword().to_string())),
            }
        }
        NodeKind::Memadvise { ptr: p, bytes, advice } => {
            out.extend([attr("ptr", ptr(p)), attr("bytes", bytes.to_string()), attr("advice", advice.to_string())]);
        }
        NodeKind::Barrier { wait } => {
            let names: Vec<String> = wait.iter().map(|n| label::node_ref(graph, *n)).collect();
            out.push(attr("wait", format!("wait({})", names.join(", "))));
        }
        NodeKind::HostTask(task) | NodeKind::Native(task) => task_attrs(module, graph, task, &mut out),
        NodeKind::Subgraph { graph: child } => {
            out.push(attr("graph", label::global(module.graphs.try_get(*child).map(|g| g.name.as_str()))));
        }
        NodeKind::AsyncMalloc { elem, count, kind, zero_init } => {
            out.push(attr("type", format!("{elem}[{count}]")));
            out.push(attr("kind", kind.keyword().to_string()));
            out.push(attr("zero_init", zero_init.to_string()));
        }
        NodeKind::AsyncFree { alloc } => out.push(attr("alloc", label::node_ref(graph, *alloc))),
        NodeKind::Dynamic { dcg } => {
            out.push(attr("dcg", label::local(graph.dcgs.try_get(*dcg).map(|d| d.name.as_str()))));
        }
        NodeKind::Conditional { cond, bodies, .. } => {
            out.push(attr("cond", ptr(cond)));
            out.push(attr("bodies", body_names(module, bodies).join(", ")));
        }
    }
    out
}

/// The attributes of a node: its command's, then its queue.
pub(crate) fn node_attrs(module: &Module, graph: &Graph, node: &Node) -> Vec<Attr> {
    let mut out = command_attrs(module, graph, &node.kind, DynArgs::ByName);
    let queue = match node.queue {
        Some(q) => label::global(graph.queues.try_get(q).map(|q| q.name.as_str())),
        None => "(none)".to_string(),
    };
    out.push(attr("queue", queue));
    // Written only where the text says it, so single-device diffs do not change.
    if let Some(d) = node.device {
        out.push(attr("device", d.to_string()));
    }
    out
}

/// A command on one line, as the IR statement writes it (`kernel @k range(8) args(@x)`).
pub(crate) fn command_text(module: &Module, graph: &Graph, kind: &NodeKind) -> String {
    let ptr = |p| label::pointer(module, graph, p);
    match kind {
        NodeKind::Empty => "empty".to_string(),
        NodeKind::Kernel(cmd) => label::kernel_command(module, graph, cmd),
        NodeKind::Memcpy { dst, src, bytes } => format!("memcpy {}, {}, {bytes}", ptr(dst), ptr(src)),
        NodeKind::Memset { dst, value, bytes } => format!("memset {}, {value}, {bytes}", ptr(dst)),
        NodeKind::Memfill { dst, pattern, count } => {
            format!("memfill {}, {}, {count}", ptr(dst), label::literal(pattern))
        }
        NodeKind::Prefetch { ptr: p, bytes } => format!("prefetch {}, {bytes}", ptr(p)),
        NodeKind::Comm(c) => c.text(&ptr(&c.ptr)),
        NodeKind::Memadvise { ptr: p, bytes, advice } => format!("memadvise {}, {bytes}, {advice}", ptr(p)),
        NodeKind::Barrier { wait } if wait.is_empty() => "barrier".to_string(),
        NodeKind::Barrier { wait } => {
            let names: Vec<String> = wait.iter().map(|n| label::node_ref(graph, *n)).collect();
            format!("barrier wait({})", names.join(", "))
        }
        NodeKind::HostTask(task) => task_text("host_task", module, graph, task),
        NodeKind::Native(task) => task_text("native", module, graph, task),
        NodeKind::Subgraph { graph: child } => {
            format!("subgraph {}", label::global(module.graphs.try_get(*child).map(|g| g.name.as_str())))
        }
        NodeKind::AsyncMalloc { elem, count, kind, zero_init } => {
            let mut s = format!("async_malloc {elem}[{count}]");
            if *kind != UsmKind::Device {
                s.push(' ');
                s.push_str(kind.keyword());
            }
            if *zero_init {
                s.push_str(" zero_init");
            }
            s
        }
        NodeKind::AsyncFree { alloc } => format!("async_free {}", label::node_ref(graph, *alloc)),
        NodeKind::Dynamic { dcg } => {
            format!("dynamic {}", label::local(graph.dcgs.try_get(*dcg).map(|d| d.name.as_str())))
        }
        NodeKind::Conditional { kind, cond, bodies } => kind.command_text(&ptr(cond), &body_names(module, bodies)),
    }
}

fn task_text(keyword: &str, module: &Module, graph: &Graph, task: &HostTaskCommand) -> String {
    let mut s = format!("{keyword} {}", label::string(&task.callback));
    if let Some(access) = label::access_list(module, graph, task) {
        s.push(' ');
        s.push_str(&access);
    }
    s
}

/// `%n = <command> [on @q]`: a node statement without its edges (the diff lists edges on
/// their own lines).
pub(crate) fn node_text(module: &Module, graph: &Graph, node: &Node) -> String {
    let mut s = format!("%{} = {}", node.name, command_text(module, graph, &node.kind));
    if let Some(q) = node.queue {
        s.push_str(" on ");
        s.push_str(&label::global(graph.queues.try_get(q).map(|q| q.name.as_str())));
    }
    if let Some(d) = node.device {
        s.push_str(&format!(" device({d})"));
    }
    s
}

/// One alternative of a dynamic command group on one line.
pub(crate) fn alternative_text(module: &Module, graph: &Graph, alt: &Alternative) -> String {
    match alt {
        Alternative::Kernel(cmd) => label::kernel_command(module, graph, cmd),
        Alternative::HostTask(task) => task_text("host_task", module, graph, task),
        Alternative::Other(kind) => command_text(module, graph, kind),
    }
}

/// The attributes of a dynamic command group: its active index and each alternative.
pub(crate) fn dcg_attrs(module: &Module, graph: &Graph, dcg: &DynCommandGroup) -> Vec<Attr> {
    let mut out = vec![attr("active", dcg.active.to_string())];
    for (i, alt) in dcg.alternatives.iter().enumerate() {
        out.push((format!("alternative {i}"), alternative_text(module, graph, alt)));
    }
    out
}

/// `dcg %d active(i) { ... }` on one line.
pub(crate) fn dcg_text(module: &Module, graph: &Graph, dcg: &DynCommandGroup) -> String {
    let alts: Vec<String> = dcg.alternatives.iter().map(|a| alternative_text(module, graph, a)).collect();
    format!("dcg %{} active({}) {{ {} }}", dcg.name, dcg.active, alts.join("; "))
}

/// The attributes of a memory object: its type and kind (with a `device_global`'s
/// initialiser and properties).
pub(crate) fn memory_attrs(m: &MemoryObject) -> Vec<Attr> {
    let mut out = vec![attr("type", format!("{}[{}]", m.elem, m.count))];
    match &m.kind {
        MemoryKind::Usm(kind) => out.push(attr("kind", format!("usm {}", kind.keyword()))),
        MemoryKind::Buffer => out.push(attr("kind", "buffer".to_string())),
        MemoryKind::DeviceGlobal(dg) => {
            out.push(attr("kind", "device_global".to_string()));
            let init: Vec<String> = dg.init.iter().map(label::literal).collect();
            out.push(attr("init", format!("[{}]", init.join(", "))));
            let mut props = Vec::new();
            if dg.device_image_scope {
                props.push("device_image_scope".to_string());
            }
            if let Some(h) = dg.host_access {
                let word = match h {
                    HostAccess::Read => "read",
                    HostAccess::Write => "write",
                    HostAccess::ReadWrite => "read_write",
                    HostAccess::None => "none",
                };
                props.push(format!("host_access({word})"));
            }
            if let Some(i) = dg.init_mode {
                let word = match i {
                    InitMode::Reprogram => "reprogram",
                    InitMode::Reset => "reset",
                };
                props.push(format!("init_mode({word})"));
            }
            if dg.implement_in_csr {
                props.push("implement_in_csr".to_string());
            }
            out.push(attr("properties", format!("({})", props.join(", "))));
        }
    }
    match m.home {
        Home::Graph => {}
        Home::Device(d) => out.push(attr("home", d.to_string())),
        Home::Replicated => out.push(attr("home", "replicated".to_string())),
        Home::Host => out.push(attr("home", "host".to_string())),
    }
    out
}

/// `home(N)` or `replicated`; `None` when the memory has no home written.
fn home_text(home: Home) -> Option<String> {
    match home {
        Home::Graph => None,
        Home::Device(d) => Some(format!("home({d})")),
        Home::Replicated => Some("replicated".to_string()),
        Home::Host => Some("home(host)".to_string()),
    }
}

/// `usm @x : f32[1024] device`, `buffer @b : f32[16]`, `device_global @g : u32[1]`.
pub(crate) fn memory_text(m: &MemoryObject) -> String {
    let head = match &m.kind {
        MemoryKind::Usm(_) => "usm",
        MemoryKind::Buffer => "buffer",
        MemoryKind::DeviceGlobal(_) => "device_global",
    };
    let mut s = format!("{head} @{} : {}[{}]", m.name, m.elem, m.count);
    if let MemoryKind::Usm(kind) = &m.kind {
        s.push(' ');
        s.push_str(kind.keyword());
    }
    if let Some(home) = home_text(m.home) {
        s.push(' ');
        s.push_str(&home);
    }
    s
}

/// A kernel printed alone in canonical form, without comments: the text its body is
/// compared by. Other kernels are left out; memory objects are kept so that `@global`
/// operands print by name.
pub(crate) fn kernel_text(module: &Module, kernel: &Kernel) -> String {
    let mut alone =
        Module { memories: module.memories.clone(), functions: module.functions.clone(), ..Module::default() };
    let h: Handle<Kernel> = alone.kernels.append(uncommented(kernel), Span::UNDEFINED);
    alone.items.push(Item::Kernel(h));
    // Closing comments of regions are whole lines; nothing else starts with `//`.
    crate::text::print(&alone).lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// A function printed alone, as [`kernel_text`] prints a kernel.
pub(crate) fn function_text(module: &Module, f: Handle<crate::kernel::Function>) -> String {
    let mut alone =
        Module { memories: module.memories.clone(), functions: module.functions.clone(), ..Module::default() };
    if let Some(func) = alone.functions.try_get_mut(f) {
        func.def = uncommented(&func.def);
    }
    alone.items.push(Item::Function(f));
    crate::text::print(&alone).lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// `kernel` without its comments.
fn uncommented(kernel: &Kernel) -> Kernel {
    let mut k = kernel.clone();
    k.comments = Default::default();
    if let crate::kernel::KernelBody::Ir(body) = &mut k.body {
        for (_, op) in body.ops.iter_mut() {
            op.comments = Default::default();
        }
    }
    k
}
