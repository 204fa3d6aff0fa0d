//! Epilogue fusion: the element-wise kernels that consume a contraction's result through
//! graph-owned temporaries (an MLP layer's bias add, activation and residual add) run inside
//! its tiled kernel, on each output while it is still in a register. The result temporary,
//! and each temporary between two of those kernels, is then never written or read: its
//! `async_malloc` and `async_free` go, and so do the kernels' launches.
//!
//! A chain member is a kernel node over a 1-D `range(N)`, `N` the contraction's outputs,
//! whose body is one region of element-wise operations (those `fuse-kernels` accepts, and
//! loads at any index): it has one `global_id 0`, loads the previous temporary once, at that
//! index, and stores only at that index. The contraction's result index must map its launch
//! one to one onto `0..N` (`row · n0 + col` or `col · n1 + row`), so the member's work-item
//! for element `e` is the tiled kernel's output `e`. Each temporary is pointed at (offset 0)
//! by its producer and its one consumer only, besides its `async_malloc` and `async_free`s.
//! A member continues the chain when it stores exactly once, into such a temporary.
//!
//! In the tiled kernel the members run one after another on each finished output, in the
//! work-item that computed it, exactly as they ran on that element: the same operations in
//! the same order, so every result keeps its bits. What makes the reordering across elements
//! sound is checked: no memory the chain finally writes is read by the contraction or by a
//! member at another element's index (a gather), and no node outside the chain lies on a
//! path between two members (contracting them would make a cycle).
//!
//! Each member becomes a function (its body, with the temporary's load and `global_id 0` as
//! parameters and its temporary store as the returned value) that the tiled kernel calls on
//! each output; [`cmdgraph_ir::inline`] then inlines the calls.

use super::recognise::Contraction;
use crate::fuse::legality::is_elementwise_value_op;
use cmdgraph_ir::graph::{Arg, ArgValue, Graph, Launch, MemRef, NodeKind};
use cmdgraph_ir::kernel::{Builtin, KernelBody, MemBase, OpKind, ParamType, ValueDef};
use cmdgraph_ir::module::Item;
use cmdgraph_ir::{Handle, Kernel, Module, Node};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

/// Most element-wise kernels one contraction takes in.
const MAX_MEMBERS: usize = 8;
/// Most nodes the search for a path around the chain visits before it gives up.
const SEARCH_LIMIT: usize = 4096;

/// One element-wise kernel of a chain.
#[derive(Clone, Debug)]
pub struct Member {
    /// Its node.
    pub node: Handle<Node>,
    /// Its kernel.
    pub kernel: Handle<Kernel>,
    /// The parameter it loads the previous temporary through.
    pub input: u32,
    /// The parameter it stores the next temporary through (`None` for the last member).
    pub output: Option<u32>,
    /// Its kernel's parameter count.
    params: u32,
    /// What its body loads and stores, and the name of its `global_id 0`.
    shape: Shape,
    /// Name of the temporary's loaded value, and (with `output`) of the stored value.
    loaded: String,
    stored: Option<String>,
}

/// The element-wise kernels after a contraction that run in its tiled kernel.
#[derive(Clone, Debug)]
pub struct Chain {
    /// Members in order.
    pub members: Vec<Member>,
    /// The dying temporaries' `async_malloc` and `async_free` nodes.
    pub bypass: Vec<Handle<Node>>,
}

/// What the chain search needs of a graph, built once per graph: who names each graph-owned
/// allocation (the nodes whose commands point at it, not its `async_free`s), its
/// `async_free`s, and each node's successors and predecessors.
pub struct Users {
    named_by: HashMap<Handle<Node>, Vec<Handle<Node>>>,
    frees: HashMap<Handle<Node>, Vec<Handle<Node>>>,
    succs: HashMap<Handle<Node>, Vec<Handle<Node>>>,
    preds: HashMap<Handle<Node>, Vec<Handle<Node>>>,
}

impl Users {
    /// The users of every allocation of `graph`, and its edges by node.
    pub fn of(graph: &Graph) -> Users {
        let mut named_by: HashMap<Handle<Node>, Vec<Handle<Node>>> = HashMap::new();
        let mut frees: HashMap<Handle<Node>, Vec<Handle<Node>>> = HashMap::new();
        let mut succs: HashMap<Handle<Node>, Vec<Handle<Node>>> = HashMap::new();
        let mut preds: HashMap<Handle<Node>, Vec<Handle<Node>>> = HashMap::new();
        for (_, e) in graph.edges.iter() {
            succs.entry(e.from).or_default().push(e.to);
            preds.entry(e.to).or_default().push(e.from);
        }
        for (h, node) in graph.nodes.iter() {
            if let NodeKind::AsyncFree { alloc } = node.kind {
                frees.entry(alloc).or_default().push(h);
                continue;
            }
            let mut seen = BTreeSet::new();
            for m in cmdgraph_ir::edit::referenced_nodes(graph, &node.kind) {
                if seen.insert(m) {
                    named_by.entry(m).or_default().push(h);
                }
            }
        }
        Users { named_by, frees, succs, preds }
    }
}

/// What a member's body does, found by [`shape`].
#[derive(Clone, Debug)]
struct Shape {
    /// The name of its `global_id 0`.
    gid: String,
    /// Per buffer parameter, each load through it: whether at `global_id 0`, and the loaded
    /// value's name.
    loads: HashMap<u32, Vec<(bool, String)>>,
    /// Likewise each store, with the stored value's name.
    stores: HashMap<u32, Vec<(bool, String)>>,
}

/// The shape of an element-wise body: top-level ops only, each one `fuse-kernels` accepts
/// or a load or store through a buffer parameter, and exactly one `global_id 0`.
fn shape(kernel: &Kernel) -> Option<Shape> {
    let KernelBody::Ir(body) = &kernel.body else { return None };
    let param_of = |mem: &MemBase| match mem {
        MemBase::Value(v) => match body.values.try_get(*v)?.def {
            ValueDef::Param(i) => Some(i),
            _ => None,
        },
        MemBase::Global(_) => None,
    };
    let name = |v: cmdgraph_ir::kernel::V| body.values.try_get(v).map(|x| format!("%{}", x.name));
    let mut gid = None;
    let mut gid_value = None;
    let mut loads: HashMap<u32, Vec<(bool, String)>> = HashMap::new();
    let mut stores: HashMap<u32, Vec<(bool, String)>> = HashMap::new();
    for &h in &body.entry.ops {
        let op = body.ops.try_get(h)?;
        match &op.kind {
            OpKind::Builtin(Builtin::GlobalId, 0) => {
                if gid.is_some() {
                    return None;
                }
                let [r] = op.results[..] else { return None };
                gid = Some(name(r)?);
                gid_value = Some(r);
            }
            OpKind::Load { mem, index } => {
                let [r] = op.results[..] else { return None };
                let at_gid = Some(*index) == gid_value;
                loads.entry(param_of(mem)?).or_default().push((at_gid, name(r)?));
            }
            OpKind::Store { mem, index, value } => {
                let at_gid = Some(*index) == gid_value;
                stores.entry(param_of(mem)?).or_default().push((at_gid, name(*value)?));
            }
            other if is_elementwise_value_op(other) => {}
            _ => return None,
        }
    }
    Some(Shape { gid: gid?, loads, stores })
}

/// The allocation an argument points at from its start.
fn temp_of(arg: &Arg) -> Option<Handle<Node>> {
    match arg {
        Arg::Value(ArgValue::Pointer(p)) if p.offset == 0 => match p.base {
            MemRef::Alloc(h) => Some(h),
            MemRef::Memory(_) => None,
        },
        _ => None,
    }
}

/// The memory an argument names, if any.
fn mem_of(arg: &Arg) -> Option<MemRef> {
    match arg {
        Arg::Value(ArgValue::Pointer(p)) => Some(p.base),
        Arg::Value(ArgValue::Accessor(a)) => Some(a.buffer),
        _ => None,
    }
}

/// The chain after contraction node `node` (command `args`), or why there is none.
pub fn find(
    module: &Module,
    graph: &Graph,
    users: &Users,
    node: Handle<Node>,
    args: &[Arg],
    c: &Contraction,
) -> Result<Chain, String> {
    let outputs = c.n0 * c.n1;
    let idx = c.c.index;
    let one_to_one = idx.c == 0 && ((idx.g0 == 1 && idx.g1 == c.n0 as i128) || (idx.g1 == 1 && idx.g0 == c.n1 as i128));
    if !one_to_one {
        return Err("its result index does not map the launch one to one onto 0..N".into());
    }
    if !graph.dcgs.is_empty() {
        return Err("the graph has dynamic command groups".into());
    }
    if args.iter().any(|a| matches!(a, Arg::Dyn(_))) {
        return Err("an argument is a dynamic parameter".into());
    }
    let mut temp = args.get(c.c.param as usize).and_then(temp_of).ok_or("its result is not a graph allocation")?;
    let mut producer = node;
    let mut chain = Chain { members: Vec::new(), bypass: Vec::new() };
    while chain.members.len() < MAX_MEMBERS {
        let Some(member) = next_member(module, graph, users, producer, temp, outputs)? else { break };
        // The previous member stores into `temp` for this one.
        if let Some(prev) = chain.members.last_mut() {
            let Some((p, stored)) = prev_output(graph, prev, temp) else { break };
            prev.output = Some(p);
            prev.stored = Some(stored);
        }
        chain.bypass.push(temp);
        chain.bypass.extend(users.frees.get(&temp).into_iter().flatten().copied());
        producer = member.node;
        chain.members.push(member);
        // Continue through the one temporary this member stores into, if any.
        let last = chain.members.last().expect("just pushed");
        let Some(next) = single_temp_store(graph, last) else { break };
        temp = next;
    }
    if chain.members.is_empty() {
        return Err("no element-wise kernel reads its result alone".into());
    }
    check_memory(graph, args, c, &chain)?;
    check_kept_args(graph, args, c, &chain)?;
    check_paths(graph, users, node, &chain)?;
    Ok(chain)
}

/// No argument the fused kernel keeps names a dying temporary (one passed twice, say): its
/// allocation goes, so the argument would dangle.
fn check_kept_args(graph: &Graph, args: &[Arg], c: &Contraction, chain: &Chain) -> Result<(), String> {
    let dying = |a: &Arg| mem_of(a).is_some_and(|m| matches!(m, MemRef::Alloc(h) if chain.bypass.contains(&h)));
    let contraction = args.iter().enumerate().any(|(i, a)| i as u32 != c.c.param && dying(a));
    let members = chain.members.iter().any(|m| match &graph.nodes[m.node].kind {
        NodeKind::Kernel(cmd) => cmd.args.iter().enumerate().any(|(i, a)| kept(m, i as u32) && dying(a)),
        _ => true,
    });
    if contraction || members {
        return Err("a temporary of the chain is also passed as another argument".into());
    }
    Ok(())
}

/// The one kernel besides `producer` that names `temp`, if it can be a member.
fn next_member(
    module: &Module,
    graph: &Graph,
    users: &Users,
    producer: Handle<Node>,
    temp: Handle<Node>,
    outputs: u64,
) -> Result<Option<Member>, String> {
    match graph.nodes.try_get(temp).map(|n| &n.kind) {
        Some(NodeKind::AsyncMalloc { count, zero_init: false, .. }) if *count >= outputs => {}
        _ => return Ok(None),
    }
    let named: Vec<Handle<Node>> =
        users.named_by.get(&temp).into_iter().flatten().copied().filter(|&h| h != producer).collect();
    let [e] = named[..] else { return Ok(None) };
    let NodeKind::Kernel(cmd) = &graph.nodes[e].kind else { return Ok(None) };
    if cmd.launch != Launch::Range(vec![outputs]) || cmd.args.iter().any(|a| matches!(a, Arg::Dyn(_))) {
        return Ok(None);
    }
    let Some(kernel) = module.kernels.try_get(cmd.kernel) else { return Ok(None) };
    if kernel.params.iter().any(|p| matches!(p.ty, ParamType::Local { .. })) {
        return Ok(None);
    }
    let Some(sh) = shape(kernel) else { return Ok(None) };
    let through: Vec<u32> =
        (0..cmd.args.len() as u32).filter(|&i| temp_of(&cmd.args[i as usize]) == Some(temp)).collect();
    let [input] = through[..] else { return Ok(None) };
    let loaded = match sh.loads.get(&input).map(Vec::as_slice) {
        Some([(true, name)]) => name.clone(),
        _ => return Ok(None),
    };
    if sh.stores.contains_key(&input) || sh.stores.values().flatten().any(|(at_gid, _)| !at_gid) {
        return Ok(None);
    }
    let params = kernel.params.len() as u32;
    Ok(Some(Member { node: e, kernel: cmd.kernel, input, output: None, params, shape: sh, loaded, stored: None }))
}

/// The parameter and stored value through which member `m` stores `temp` (its only store).
fn prev_output(graph: &Graph, m: &Member, temp: Handle<Node>) -> Option<(u32, String)> {
    let NodeKind::Kernel(cmd) = &graph.nodes[m.node].kind else { return None };
    let sh = &m.shape;
    let p = (0..cmd.args.len() as u32).find(|&i| temp_of(&cmd.args[i as usize]) == Some(temp))?;
    match sh.stores.get(&p).map(Vec::as_slice) {
        Some([(true, v)]) if sh.stores.len() == 1 && !sh.loads.contains_key(&p) => Some((p, v.clone())),
        _ => None,
    }
}

/// The temporary member `m` stores into, when that is its only store.
fn single_temp_store(graph: &Graph, m: &Member) -> Option<Handle<Node>> {
    let NodeKind::Kernel(cmd) = &graph.nodes[m.node].kind else { return None };
    let [(p, stores)] = m.shape.stores.iter().collect::<Vec<_>>()[..] else { return None };
    if stores.len() != 1 {
        return None;
    }
    temp_of(cmd.args.get(*p as usize)?)
}

/// No memory the chain finally writes is read by the contraction or gathered by a member.
fn check_memory(graph: &Graph, args: &[Arg], c: &Contraction, chain: &Chain) -> Result<(), String> {
    let last = chain.members.last().expect("a chain has members");
    let NodeKind::Kernel(cmd) = &graph.nodes[last.node].kind else { return Err("a member is not a kernel".into()) };
    let written: Vec<MemRef> =
        last.shape.stores.keys().filter_map(|&p| cmd.args.get(p as usize).and_then(mem_of)).collect();
    let mut read: Vec<MemRef> =
        [c.a.param, c.b.param].iter().filter_map(|&p| args.get(p as usize).and_then(mem_of)).collect();
    for m in &chain.members {
        let NodeKind::Kernel(cmd) = &graph.nodes[m.node].kind else { return Err("a member is not a kernel".into()) };
        for (p, loads) in &m.shape.loads {
            if loads.iter().any(|(at_gid, _)| !at_gid) {
                read.extend(cmd.args.get(*p as usize).and_then(mem_of));
            }
        }
    }
    match read.iter().find(|m| written.contains(m)) {
        Some(_) => Err("the chain writes memory the contraction reads or a member gathers from".into()),
        None => Ok(()),
    }
}

/// No node outside the chain (or its dying allocations) lies on a path between two of its
/// nodes: contracting them into one node would make a cycle.
fn check_paths(graph: &Graph, users: &Users, start: Handle<Node>, chain: &Chain) -> Result<(), String> {
    let members: BTreeSet<Handle<Node>> = chain.members.iter().map(|m| m.node).chain([start]).collect();
    let reach = |next: &HashMap<Handle<Node>, Vec<Handle<Node>>>| -> Result<BTreeSet<Handle<Node>>, String> {
        let mut seen: BTreeSet<Handle<Node>> = members.clone();
        let mut stack: Vec<Handle<Node>> = members.iter().copied().collect();
        while let Some(v) = stack.pop() {
            for &w in next.get(&v).into_iter().flatten() {
                if seen.insert(w) {
                    if seen.len() > SEARCH_LIMIT {
                        return Err("the graph around the chain is too large to search".into());
                    }
                    stack.push(w);
                }
            }
        }
        Ok(seen)
    };
    let (after, before) = (reach(&users.succs)?, reach(&users.preds)?);
    let between = after.intersection(&before).find(|v| !members.contains(v) && !chain.bypass.contains(v));
    match between {
        Some(v) => Err(format!("%{} lies on a path between two of its nodes", graph.nodes[*v].name)),
        None => Ok(()),
    }
}

/// The tiled kernel's parameters and arguments with the chain: the contraction's but its
/// result, then each member's but its temporaries (named `%m<j>p<i>`).
pub fn params_and_args(
    module: &Module,
    graph: &Graph,
    kernel: &Kernel,
    args: &[Arg],
    c: &Contraction,
    chain: &Chain,
) -> (Vec<(String, ParamType)>, Vec<Arg>) {
    let mut header = Vec::new();
    let mut out = Vec::new();
    for (i, p) in kernel.params.iter().enumerate() {
        if i as u32 != c.c.param {
            header.push((super::tiled::param(i as u32), p.ty));
            out.push(args[i].clone());
        }
    }
    for (j, m) in chain.members.iter().enumerate() {
        let NodeKind::Kernel(cmd) = &graph.nodes[m.node].kind else { continue };
        for (i, p) in module.kernels[m.kernel].params.iter().enumerate() {
            if kept(m, i as u32) {
                header.push((format!("%m{j}p{i}"), p.ty));
                out.push(cmd.args[i].clone());
            }
        }
    }
    (header, out)
}

fn kept(m: &Member, i: u32) -> bool {
    i != m.input && Some(i) != m.output
}

/// The functions the members become (`@e<j>`, named only in the text the pass parses), as
/// module text.
pub fn functions_text(module: &Module, chain: &Chain) -> String {
    let mut out = String::new();
    for (j, m) in chain.members.iter().enumerate() {
        let kernel = &module.kernels[m.kernel];
        let elem = |p: u32| match kernel.params.get(p as usize).map(|p| p.ty) {
            Some(ParamType::Buffer { elem, .. }) => elem.to_string(),
            _ => "f32".to_string(),
        };
        let mut params = vec![format!("{}: {}", m.loaded, elem(m.input)), format!("{}: u32", m.shape.gid)];
        for (i, p) in kernel.params.iter().enumerate() {
            if kept(m, i as u32) {
                params.push(format!("%{}: {}", p.name, p.ty));
            }
        }
        let result = m.output.map(|p| format!(" -> {}", elem(p))).unwrap_or_default();
        let _ = writeln!(out, "func @e{j}({}){result} {{", params.join(", "));
        let input = format!("%{}", kernel.params[m.input as usize].name);
        let output = m.output.map(|p| format!("store %{}[", kernel.params[p as usize].name));
        let drop = |line: &str| {
            line.starts_with(&format!("{} = global_id 0", m.shape.gid))
                || line.starts_with(&format!("{} = load {input}[", m.loaded))
                || output.as_ref().is_some_and(|s| line.starts_with(s.as_str()))
        };
        for line in body_lines(kernel) {
            if !drop(line.trim()) {
                let _ = writeln!(out, "{line}");
            }
        }
        if let Some(v) = &m.stored {
            let _ = writeln!(out, "  return {v}");
        }
        let _ = writeln!(out, "}}\n");
    }
    out
}

/// The lines of a kernel's body as the printer writes it (without its header and brace).
fn body_lines(kernel: &Kernel) -> Vec<String> {
    let mut m = Module::default();
    let h = m.kernels.append(kernel.clone(), cmdgraph_ir::Span::UNDEFINED);
    m.items.push(Item::Kernel(h));
    let text = cmdgraph_ir::text::print(&m);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("kernel ")).map_or(0, |i| i + 1);
    let end = lines.iter().rposition(|l| *l == "}").unwrap_or(lines.len());
    lines[start..end.max(start)].iter().map(|l| l.to_string()).collect()
}

/// Emits the chain on output `value` at result index `at`: each member's call on the
/// previous one's result.
pub(super) fn emit(o: &mut String, n: &mut super::tiled::Names, chain: &Chain, at: &str, value: &str) {
    let mut current = value.to_string();
    for (j, m) in chain.members.iter().enumerate() {
        let mut args = vec![current.clone(), at.to_string()];
        // The parameters were declared in params_and_args's order.
        for i in 0..m.params {
            if kept(m, i) {
                args.push(format!("%m{j}p{i}"));
            }
        }
        if m.output.is_some() {
            let r = n.next();
            let _ = writeln!(o, "{r} = call @e{j}({})", args.join(", "));
            current = r;
        } else {
            let _ = writeln!(o, "call @e{j}({})", args.join(", "));
        }
    }
}
