//! [`VerifyError::to_diagnostic`]: the code, message, caret label, secondary locations and
//! help of every invariant. Codes are stable and documented in docs/ir.md.

use super::ctx::plural;
use super::error::VerifyError;
use super::subgraph::MAX_SUBGRAPH_LEVELS;
use crate::diag::Diagnostic;
use crate::graph::MAX_LAUNCH_WORK_ITEMS;
use crate::span::Span;

/// A cycle as `%a -> %b -> %a`; a long one keeps its ends (`%a -> ... (998 more) -> %a`).
fn show_cycle(cycle: &[String]) -> String {
    show_chain(cycle, " -> ")
}

/// A chain of names joined by `sep`; a long one keeps its ends (`a sep ... (998 more) sep b`).
fn show_chain(chain: &[String], sep: &str) -> String {
    const ENDS: usize = 8;
    if chain.len() <= 2 * ENDS {
        return chain.join(sep);
    }
    let head = chain[..ENDS].join(sep);
    let tail = chain[chain.len() - ENDS..].join(sep);
    format!("{head}{sep}... ({} more){sep}{tail}", chain.len() - 2 * ENDS)
}

/// `elements 4..8 of f32 (bytes 16..32)`, or the bytes alone when they do not fall on
/// element boundaries.
fn show_bytes((lo, hi): (u64, u64), (size, ty): &(u64, String)) -> String {
    if *size > 1 && lo % size == 0 && hi % size == 0 {
        format!("elements {}..{} of {ty} (bytes {lo}..{hi})", lo / size, hi / size)
    } else {
        format!("bytes {lo}..{hi}")
    }
}

/// Builds a diagnostic from its parts.
fn diag(code: &'static str, message: String, span: Span, label: &str, help: &str) -> Diagnostic {
    Diagnostic::error(code, message, span).with_label(label).with_help(help)
}

impl VerifyError {
    /// The stable code of this error (`E02xx` graph, `E03xx` kernel).
    pub fn code(&self) -> &'static str {
        self.to_diagnostic().code
    }

    /// The primary location.
    pub fn span(&self) -> Span {
        self.to_diagnostic().span
    }

    /// The error as a located diagnostic with a help line.
    pub fn to_diagnostic(&self) -> Diagnostic {
        use VerifyError as E;
        match self {
            E::DanglingHandle { what, index, span } => diag(
                "E0200",
                format!("dangling handle: {what} #{index} does not exist"),
                *span,
                "refers to a missing entity",
                "a module built through the API holds a handle from another arena or a removed entity; rebuild it",
            ),
            E::DuplicateName { kind, name, span, first } => diag(
                "E0201",
                format!("{kind} {name} is defined more than once"),
                *span,
                "second definition",
                "rename one of them; a name is defined once per namespace",
            )
            .with_secondary(*first, "first defined here"),
            E::InvalidName { kind, name, span } => diag(
                "E0202",
                // Escaped, since the name may hold what cannot be shown (a newline, `"`).
                format!("{kind} name `{}` cannot be written in the text format", name.escape_debug()),
                *span,
                "invalid name",
                "use 1 to 1024 characters from [A-Za-z0-9_.$-]",
            ),
            E::OrderList { list, entity, problem, span } => diag(
                "E0203",
                format!("{entity} {problem} in the {list}"),
                *span,
                "listing inconsistent",
                "keep the item and statement lists in step with the arenas (one entry per entity, nodes in creation order)",
            ),
            E::UseBeforeDefinition { name, span, def } => diag(
                "E0204",
                format!("{name} is used before the statement that defines it"),
                *span,
                "used here",
                "move the definition before its first use",
            )
            .with_secondary(*def, "defined here"),
            E::InvalidType { lanes, span } => diag(
                "E0205",
                format!("a vector type has {lanes} lanes"),
                *span,
                "invalid type",
                "types are scalars or vec2, vec3, vec4",
            ),
            E::BadSize { what, count, span } => diag(
                "E0206",
                if *count == 0 {
                    format!("{what} has zero elements")
                } else {
                    format!("{what} of {count} elements is too large: its byte size overflows")
                },
                *span,
                "bad size",
                "give it at least one element and a byte size below 2^64",
            ),
            E::DeviceGlobalInit { name, problem, span } => diag(
                "E0207",
                format!("device_global {name}: {problem}"),
                *span,
                "bad initialiser",
                "give at most one literal per element, each fitting the element type",
            ),
            E::ArgCount { kernel, expected, found, span, kernel_span } => diag(
                "E0210",
                format!(
                    "kernel {kernel} takes {} but {found} {} given",
                    plural(*expected as u64, "argument"),
                    if *found == 1 { "is" } else { "are" }
                ),
                *span,
                "wrong argument count",
                "pass one argument per kernel parameter, in order",
            )
            .with_secondary(*kernel_span, "kernel defined here"),
            E::ArgKind { param, expected, found, span, param_span } => diag(
                "E0211",
                format!("parameter {param} of type {expected} cannot take {found}"),
                *span,
                "wrong kind of argument",
                "pass a scalar or raw bytes for a value, a pointer or acc(...) for buf<...>, `local T[N]` for local<...>",
            )
            .with_secondary(*param_span, "parameter declared here"),
            E::ScalarArg { problem, span, param_span } => {
                diag("E0212", format!("bad scalar argument: {problem}"), *span, "does not fit", "write a literal of the parameter's type, in range")
                    .with_secondary(*param_span, "parameter declared here")
            }
            E::ArgElemType { param, expected, found, span, param_span } => diag(
                "E0213",
                format!("parameter {param} has element type {expected} but the argument's memory holds {found}"),
                *span,
                "element type mismatch",
                "pass memory whose element type is the parameter's",
            )
            .with_secondary(*param_span, "parameter declared here"),
            E::ArgAccess { param, expected, found, span, param_span } => diag(
                "E0214",
                format!("parameter {param} needs {expected} access but the accessor is {found}"),
                *span,
                "access mode too weak",
                "use an accessor mode that gives the access the parameter declares",
            )
            .with_secondary(*param_span, "parameter declared here"),
            E::AccessorNotBuffer { name, kind, span } => diag(
                "E0215",
                format!("accessor on {name}, which is {kind}, not a buffer"),
                *span,
                "not a buffer",
                "accessors only reach `buffer` memory; pass USM memory and graph allocations as pointers",
            ),
            E::PointerToBuffer { context, name, span } => diag(
                "E0216",
                format!("{context} needs a USM pointer but {name} is a buffer"),
                *span,
                "buffer used as a pointer",
                "reach a buffer through acc(...), or use usm memory",
            ),
            E::DeviceGlobalOperand { name, context, span } => diag(
                "E0217",
                format!("device_global {name} cannot be used as {context}"),
                *span,
                "device_global in a graph command",
                "copying to or from a device_global in a graph is invalid (000 §8.11.5); read or write it from a kernel body with `load @g[...]`",
            ),
            E::RawBytesSize { expected, found, span, param_span } => diag(
                "E0218",
                format!("raw argument has {found} bytes but the parameter's type has {expected}"),
                *span,
                "wrong size",
                "give exactly as many bytes as the parameter's type occupies",
            )
            .with_secondary(*param_span, "parameter declared here"),
            E::LocalNeedsNdRange { kernel, span, param_span } => diag(
                "E0219",
                format!("kernel {kernel} uses work-group memory but is not launched with an nd_range"),
                *span,
                "no work-group size",
                "launch it with nd_range(global(...), local(...))",
            )
            .with_secondary(*param_span, "work-group memory parameter declared here"),
            E::DynScalarUntyped { name, span } => diag(
                "E0220",
                format!("dynamic scalar parameter {name} has no type"),
                *span,
                "untyped literal",
                "write the type after the literal, e.g. `dyn %a = 2.0 : f32`",
            ),
            E::DynOnRecordedNode { param, queue, span, param_span } => diag(
                "E0221",
                format!("dynamic parameter {param} is registered on a node recorded from queue {queue}"),
                *span,
                "registered on a recorded node",
                "dynamic parameters are explicit-API only (000 §8.5.5): add the node without `on`, or pass a plain value",
            )
            .with_secondary(*param_span, "parameter defined here"),
            E::PointerOutOfBounds { name, offset, size, span } => diag(
                "E0222",
                format!("pointer offset {offset} is past the end of {name} ({size} bytes)"),
                *span,
                "out of bounds",
                "use an offset inside the memory object",
            ),
            E::PointerMisaligned { offset, align, span } => diag(
                "E0223",
                format!("pointer offset {offset} is not a multiple of the element size {align}"),
                *span,
                "misaligned",
                "offset pointer arguments by whole elements",
            ),
            E::LaunchTooLarge { problem, span } => diag(
                "E0224",
                format!("launch too large: {problem}"),
                *span,
                "too large",
                "builtin ids and sizes are u32: keep every size below 2^32 and offset + size at most 2^32",
            ),
            E::LaunchWork { sizes, items, span } => diag(
                "E0209",
                match items {
                    Some(n) => format!(
                        "launch of {sizes} = {n} work-items is above the bound of {MAX_LAUNCH_WORK_ITEMS} (2^32) per launch"
                    ),
                    None => format!(
                        "launch of {sizes} work-items (past 2^64) is above the bound of {MAX_LAUNCH_WORK_ITEMS} (2^32) per launch"
                    ),
                },
                *span,
                "too much work for one launch",
                "ids and buffer element counts are u32, so no kernel can index more work-items: split the work over several launches or give each work-item several elements",
            ),
            E::LaunchDims { dims, span } => diag(
                "E0225",
                format!("a launch has {dims} dimensions"),
                *span,
                "bad dimensions",
                "give 1, 2 or 3 sizes",
            ),
            E::LaunchZero { what, dim, span } => diag(
                "E0226",
                format!("{what} size of dimension {dim} is zero"),
                *span,
                "zero size",
                "every launch size must be at least 1",
            ),
            E::NdRangeDims { what, global, found, span } => diag(
                "E0227",
                format!("nd_range has {global} global dimensions but {found} {what} dimensions"),
                *span,
                "dimension mismatch",
                "give local and offset sizes for exactly the global dimensions",
            ),
            E::NdRangeIndivisible { dim, global, local, span } => diag(
                "E0228",
                format!("local size {local} does not divide global size {global} in dimension {dim}"),
                *span,
                "not divisible",
                "choose a work-group size that divides the global size",
            ),
            E::GroupOpNeedsNdRange { kernel, launch, op, span, op_span } => diag(
                "E0229",
                format!("kernel {kernel} uses `{op}` but is launched with {launch}, which has no work-groups"),
                *span,
                "no work-group",
                "launch it with nd_range(global(...), local(...)), or remove the work-group op from the kernel",
            )
            .with_secondary(*op_span, format!("`{op}` needs a work-group")),
            E::RangeOutOfBounds { what, name, start, end, size, unit, span } => diag(
                "E0230",
                match end {
                    Some(end) => format!("{what} [{start}, {end}) is outside {name} ({size} {unit})"),
                    None => format!("{what} starting at {start} overflows and is outside {name} ({size} {unit})"),
                },
                *span,
                "out of bounds",
                "keep the range inside the memory object",
            ),
            E::MemcpyOverlap { name, dst, src, bytes, span } => diag(
                "E0231",
                format!("memcpy of {bytes} bytes within {name} overlaps: destination at {dst}, source at {src}"),
                *span,
                "overlapping copy",
                "copy between disjoint ranges, or through a temporary",
            ),
            E::AccessorRange { lo, hi, span } => diag(
                "E0232",
                format!("accessor range [{lo}..{hi}] is empty"),
                *span,
                "empty range",
                "write the range as [lo..hi] with lo < hi",
            ),
            E::MemfillPattern { problem, span } => diag(
                "E0233",
                format!("bad memfill pattern: {problem}"),
                *span,
                "bad pattern",
                "write the pattern with its type, e.g. `1.5 : f32`",
            ),
            E::CommOperand { node, problem, help, span } => {
                diag("E0294", format!("communication node {node}: {problem}"), *span, "bad operand", help)
            }
            E::CommUnmatched { problem, help, span } => diag("E0295", problem.clone(), *span, "unmatched", help),
            E::BufferWithoutAssume { buffer, graph, span } => diag(
                "E0234",
                format!("buffer {buffer} is used in graph {graph}, which lacks assume_buffer_outlives_graph"),
                *span,
                "buffer use",
                "add `properties(assume_buffer_outlives_graph)` to the graph, or use usm memory",
            ),
            E::AllocKindNotDevice { kind, span } => diag(
                "E0240",
                format!("graph allocation of kind {kind}: only device allocations are supported"),
                *span,
                "not a device allocation",
                "remove the kind (graph-owned memory is always `device`, 000 §8.4.3)",
            ),
            E::FreeOfForeignMemory { name, span, target } => diag(
                "E0241",
                format!("async_free of {name}, which is not an async_malloc of this graph"),
                *span,
                "frees memory the graph does not own",
                "free only the result of an async_malloc node of the same graph",
            )
            .with_secondary(*target, "not an allocation"),
            E::NotAnAllocation { name, span, target } => diag(
                "E0242",
                format!("{name} is used as memory but is not an async_malloc node"),
                *span,
                "not an allocation",
                "name a module memory object, or an async_malloc node",
            )
            .with_secondary(*target, "defined here"),
            E::DoubleFree { alloc, span, first } => diag(
                "E0243",
                format!("graph allocation {alloc} is freed twice"),
                *span,
                "second async_free",
                "free each allocation once",
            )
            .with_secondary(*first, "first freed here"),
            E::UseBeforeMalloc { alloc, user, span, malloc } => diag(
                "E0244",
                format!("{user} uses graph allocation {alloc} but is not ordered after its async_malloc"),
                *span,
                "may run before the allocation exists",
                "add an edge (after(...)) from the async_malloc, directly or through other nodes",
            )
            .with_secondary(*malloc, "allocated here"),
            E::UseAfterFree { alloc, user, span, free } => diag(
                "E0245",
                format!("{user} uses graph allocation {alloc} after its async_free"),
                *span,
                "use after free",
                "order the use before the async_free, or free later",
            )
            .with_secondary(*free, "freed here"),
            E::UseNotBeforeFree { alloc, user, span, free } => diag(
                "E0246",
                format!("{user} uses graph allocation {alloc} but is not ordered before its async_free"),
                *span,
                "may run after the free",
                "add an edge from this node to the async_free, directly or through other nodes",
            )
            .with_secondary(*free, "freed here"),
            E::FreeNotAfterMalloc { alloc, span, malloc } => diag(
                "E0247",
                format!("async_free of {alloc} is not ordered after its async_malloc"),
                *span,
                "may free before allocating",
                "add an edge from the async_malloc (or a later user) to the async_free",
            )
            .with_secondary(*malloc, "allocated here"),
            E::SelfEdge { node, span } => diag(
                "E0250",
                format!("edge from {node} to itself"),
                *span,
                "self edge",
                "a node cannot depend on itself (make_edge with src == dest is invalid); remove the edge",
            ),
            E::Cycle { cycle, no_cycle_check, span } => diag(
                "E0251",
                format!("the graph has a cycle: {}", show_cycle(cycle)),
                *span,
                "this edge closes the cycle",
                if *no_cycle_check {
                    "the graph has no_cycle_check, so SYCL skips this check and a cyclic graph is undefined behaviour; cmdgraph still rejects it because scheduling needs a DAG: remove this edge"
                } else {
                    "make_edge rejects an edge that closes a cycle; remove this edge"
                },
            ),
            E::EdgeProvenance { edge, problem, span } => diag(
                "E0252",
                format!("edge {edge} {problem}"),
                *span,
                "inconsistent provenance",
                "make_edge edges come from `edge` statements, all others are created with their destination node, in creation order",
            ),
            E::EdgeBeforeEndpoint { edge, node, span, node_span } => diag(
                "E0253",
                format!("edge {edge} is created before its endpoint {node}"),
                *span,
                "endpoint does not exist yet",
                "an edge can only join nodes created before it",
            )
            .with_secondary(*node_span, "created here"),
            E::InOrderEdge { edge, problem, span } => diag(
                "E0254",
                format!("in_order edge {edge}: {problem}"),
                *span,
                "not an in-order chain",
                "`via in_order` joins two submissions of one in_order queue; record both `on` that queue, or use another provenance",
            ),
            E::EventFromDiscardQueue { edge, queue, span } => diag(
                "E0255",
                format!("event edge {edge} uses an event of queue {queue}, which discards its events"),
                *span,
                "discarded event",
                "events of a discard_events queue cannot form edges (000 §8.11.6); use another dependency",
            ),
            E::BarrierEdge { edge, span } => diag(
                "E0256",
                format!("barrier edge {edge} neither enters a barrier nor leaves one on the same queue"),
                *span,
                "not a barrier edge",
                "`via barrier` edges go into a barrier, or from it to a later node recorded on its queue",
            ),
            E::TransitiveEdge { edge, span } => diag(
                "E0257",
                format!("transitive edge {edge} goes into a node not recorded from a queue"),
                *span,
                "not recorded",
                "`via transitive` edges enter the first submission of a transitively recording queue: add `on @queue`",
            ),
            E::AccessorEdge { edge, span } => diag(
                "E0258",
                format!("accessor edge {edge} joins nodes with no conflicting buffer access"),
                *span,
                "no data dependency",
                "accessor edges come from two commands accessing one buffer, at least one writing; use another provenance",
            ),
            E::InOrderUnordered { queue, prev, node, span, prev_span } => diag(
                "E0259",
                format!("{node} is recorded on in_order queue {queue} but is not ordered after {prev}, the previous submission"),
                *span,
                "missing in-order edge",
                &format!("add `{prev} via in_order` to the `after(...)` of {node}"),
            )
            .with_secondary(*prev_span, format!("previous submission to {queue}")),
            E::DataRace {
                memory,
                first,
                first_writes,
                first_bytes,
                second,
                second_writes,
                second_bytes,
                elem,
                fix,
                span,
                first_span,
            } => {
                let verb = |w: bool| if w { "writes" } else { "reads" };
                let overlap = (first_bytes.0.max(second_bytes.0), first_bytes.1.min(second_bytes.1));
                diag(
                    "E0280",
                    format!(
                        "data race on {memory}: {first} {} {} and {second} {} {}, with no order between them",
                        verb(*first_writes),
                        show_bytes(*first_bytes, elem),
                        verb(*second_writes),
                        show_bytes(*second_bytes, elem),
                    ),
                    *span,
                    &format!("{} {}, unordered with {first}", verb(*second_writes), show_bytes(overlap, elem)),
                    &format!("{fix} to order them; `--allow-races` (`VerifyOptions::allow_races`) accepts a race that is meant"),
                )
                .with_secondary(*first_span, format!("{} {memory} here", verb(*first_writes)))
            }
            E::BarrierWithoutQueue { node, span } => diag(
                "E0260",
                format!("barrier {node} has no queue"),
                *span,
                "explicit barrier",
                "barriers only come from queue recording (000 §8.11.7): add `on @queue`, or use an empty node",
            ),
            E::BarrierWaitNotPredecessor { barrier, waited, span } => diag(
                "E0261",
                format!("barrier {barrier} waits on {waited}, which is not its predecessor"),
                *span,
                "missing edge",
                "add the barrier edge, e.g. `after(%n via barrier)`",
            ),
            E::ConditionWord { problem, span } => diag(
                "E0285",
                format!("the condition of a conditional node must be a u32 of module memory: {problem}"),
                *span,
                "condition",
                "point at a `u32` element of a `usm`, `buffer` or `device_global` object, e.g. `while @flags + 4 do @body`",
            ),
            E::WhileNeverWrites { cond, body, span } => diag(
                "E0286",
                format!("no node of the body {body} can write the condition {cond}: the loop runs zero times or forever"),
                *span,
                "`while` whose body never changes its condition",
                "have a kernel, copy, fill or host task in the body write the condition word (docs/conditional.md)",
            ),
            E::DeviceOnHostNode { node, kind, span } => diag(
                "E0290",
                format!("{kind} node {node} runs on no device, so it takes no `device(N)`"),
                *span,
                "`device` on a node that runs nothing on a device",
                "remove `device(N)`: kernels, copies, fills, allocations and conditional nodes run on a device (docs/multi-device.md)",
            ),
            E::MemoryOnOtherDevice { node, device, what, memory, home, help, span } => diag(
                "E0291",
                format!("{node} runs on device {device}, but {what} ({memory}) {} on device {home}", if what.starts_with("both") { "live" } else { "lives" }),
                *span,
                "memory of another device",
                help,
            ),
            E::ReplicatedWrite { node, memory, span } => diag(
                "E0292",
                format!("{node} writes {memory}, which is replicated: each device has a copy that only the application's binds write"),
                *span,
                "write to replicated memory",
                "give the memory a `home(N)` and copy it to the devices that read it, or write it from the application before the run",
            ),
            E::BodyOnOtherDevice { node, device, body, inner, other, span } => diag(
                "E0293",
                format!("conditional node {node} runs on device {device}, but {inner} of its body {body} runs on device {other}"),
                *span,
                "body on another device",
                &format!("a body runs on its node's device: write `device({device})` on the nodes of {body}"),
            ),
            E::SubgraphRecursion { chain, span } => diag(
                "E0265",
                format!("sub-graph recursion: {}", chain.join(" contains ")),
                *span,
                "contains itself",
                "a graph cannot contain itself through sub-graphs",
            ),
            E::SubgraphWithAllocations { child, span, alloc } => diag(
                "E0266",
                format!("graph {child} has graph-owned allocations and cannot be a sub-graph"),
                *span,
                "sub-graph with allocations",
                "move the allocations out of the child graph (000 §8.4.3)",
            )
            .with_secondary(*alloc, "allocation in the child"),
            E::SubgraphDeviceMismatch { child, parent, found, span } => diag(
                "E0267",
                format!(
                    "graph {child} is on device {} context {} but its parent is on device {} context {}",
                    found.0, found.1, parent.0, parent.1
                ),
                *span,
                "device or context mismatch",
                "a sub-graph must have its parent's device and context",
            ),
            E::SubgraphNestingTooDeep { chain, span, outer } => diag(
                "E0268",
                format!(
                    "sub-graphs nest {} levels deep, more than {MAX_SUBGRAPH_LEVELS}: {}",
                    chain.len(),
                    show_chain(chain, " contains ")
                ),
                *span,
                "opens the level past the limit",
                "flatten the nesting: inline some sub-graphs into their parents",
            )
            .with_secondary(*outer, "outermost sub-graph node of the chain"),
            E::DcgEmpty { name, span } => diag(
                "E0270",
                format!("dynamic command group {name} has no alternatives"),
                *span,
                "empty",
                "give at least one kernel or host_task",
            ),
            E::DcgActiveOutOfRange { name, active, len, span } => diag(
                "E0271",
                format!("dynamic command group {name} activates alternative {active} but has {len}"),
                *span,
                "index out of range",
                "use an active index below the number of alternatives",
            ),
            E::DcgBadAlternative { name, alt, command, span } => diag(
                "E0272",
                format!("alternative {alt} of dynamic command group {name} is a {command}"),
                *span,
                "not a kernel or host_task",
                "alternatives can only be kernels or host tasks",
            ),
            E::DcgMixedTypes { name, alt, expected, found, span } => diag(
                "E0273",
                format!("alternative {alt} of dynamic command group {name} is a {found} but the first is a {expected}"),
                *span,
                "mixed command types",
                "all alternatives must have one command type",
            ),
            E::DcgAccessorMismatch { name, alt, expected, found, span } => diag(
                "E0274",
                format!(
                    "alternative {alt} of dynamic command group {name} requires buffers {{{found}}} but alternative 0 requires {{{expected}}}"
                ),
                *span,
                "different dependencies",
                "alternatives must make the same accessor requirements, so switching cannot change the graph's edges",
            ),
            E::DcgOnRecordedNode { node, queue, span } => diag(
                "E0275",
                format!("dynamic node {node} is recorded from queue {queue}"),
                *span,
                "recorded dynamic command group",
                "dynamic command groups are explicit-API only: remove `on`",
            ),
            E::ParamValueMismatch { param, problem, span } => diag(
                "E0300",
                format!("kernel parameter {param} {problem}"),
                *span,
                "parameter and body disagree",
                "the first values of a body are its parameters, in order, with their names and types",
            ),
            E::DuplicateValueName { name, span, first } => diag(
                "E0301",
                format!("value {name} is defined more than once in this kernel"),
                *span,
                "second definition",
                "each value name is defined once per kernel (SSA); rename one",
            )
            .with_secondary(*first, "first defined here"),
            E::OpListedTwice { op, span } => diag(
                "E0302",
                format!("`{op}` op appears more than once in the region tree"),
                *span,
                "listed twice",
                "each op belongs to exactly one region, once",
            ),
            E::ValueDefinition { name, problem, span } => diag(
                "E0303",
                format!("value {name} {problem}"),
                *span,
                "bad definition",
                "each value is defined once, by the op that records it",
            ),
            E::ValueNotInScope { name, later, span, def } => diag(
                "E0304",
                if *later {
                    format!("value {name} is used before its definition")
                } else {
                    format!("value {name} is used outside the region that defines it")
                },
                *span,
                "not in scope",
                "a value is visible after its definition in its region and in regions nested there",
            )
            .with_secondary(*def, "defined here"),
            E::ResultCount { op, expected, found, span } => diag(
                "E0305",
                format!("`{op}` defines {expected} results but {found} are written"),
                *span,
                "wrong result count",
                "write one result name per value the op produces",
            ),
            E::ResultType { name, expected, found, span } => diag(
                "E0306",
                format!("result {name} is recorded as {found} but the op produces {expected}"),
                *span,
                "wrong result type",
                "record the type the op produces",
            ),
            E::NotData { name, span } => diag(
                "E0307",
                format!("{name} is memory, not a value"),
                *span,
                "memory used as a value",
                "load an element first: `%v = load %buf[%i]`",
            ),
            E::NotMemory { name, span } => diag(
                "E0308",
                format!("{name} is not memory a kernel can load from or store to"),
                *span,
                "not memory",
                "use a buf or local parameter, a `local` op result, or a device_global",
            ),
            E::ConstLiteral { problem, span } => {
                diag("E0309", format!("bad constant: {problem}"), *span, "does not fit", "write a literal of the constant's type, in range")
            }
            E::BuiltinDim { builtin, dim, span } => diag(
                "E0310",
                format!("`{builtin}` of dimension {dim}: dimensions are 0, 1 and 2"),
                *span,
                "no such dimension",
                "use a dimension from 0 to 2",
            ),
            E::OperandTypesDiffer { op, types, span } => diag(
                "E0311",
                format!("operands of `{op}` have different types: {}", types.join(", ")),
                *span,
                "type mismatch",
                "convert operands to one type with `cast`",
            ),
            E::OperandClass { op, required, found, span } => diag(
                "E0312",
                format!("`{op}` takes {required}, not {found}"),
                *span,
                "wrong operand type",
                "convert the operand with `cast`, or use another op",
            ),
            E::SelectCondition { found, operands, span } => diag(
                "E0313",
                format!("select condition is {found} but must be bool or a bool vector matching {operands}"),
                *span,
                "bad condition",
                "compute the condition with a comparison",
            ),
            E::CastLanes { from, to, span } => diag(
                "E0314",
                format!("cast from {from} to {to} changes the number of lanes"),
                *span,
                "lane count changes",
                "cast keeps lanes; use splat, extract or vec to change them",
            ),
            E::LaneOutOfRange { op, lane, ty, span } => diag(
                "E0315",
                format!("`{op}` of lane {lane} of {ty}"),
                *span,
                "no such lane",
                "lanes count from 0",
            ),
            E::VectorShape { op, problem, span } => {
                diag("E0316", format!("`{op}`: {problem}"), *span, "wrong shape", "check the operand and result shapes of the vector op")
            }
            E::IndexNotInteger { found, span } => diag(
                "E0317",
                format!("memory index is {found}, not an integer"),
                *span,
                "bad index",
                "index memory with an integer scalar (cast it if needed)",
            ),
            E::MemoryValueType { op, expected, found, span } => diag(
                "E0318",
                format!("`{op}` of a {found} value into memory of {expected}"),
                *span,
                "element type mismatch",
                "the value must have the memory's element type",
            ),
            E::MemoryAccess { op, name, access, span } => diag(
                "E0319",
                format!("`{op}` on {name}, which has {access} access"),
                *span,
                "access not allowed",
                "loads need read or read_write access, stores write, read_write or no_init",
            ),
            E::AtomicAccess { name, access, span } => diag(
                "E0320",
                format!("atomic on {name}, which has {access} access"),
                *span,
                "needs read_write",
                "declare the parameter buf<T, read_write>",
            ),
            E::AtomicType { op, ty, span } => diag(
                "E0321",
                format!("atomic {op} is not available on {ty}"),
                *span,
                "unsupported element type",
                "atomics take i32, u32, i64, u64, and f32 for add, min, max and xchg",
            ),
            E::AtomicOperands { op, span } => diag(
                "E0322",
                if *op == "cmpxchg" {
                    "atomic cmpxchg needs an expected value".to_string()
                } else {
                    format!("atomic {op} takes no expected value")
                },
                *span,
                "wrong operands",
                "only cmpxchg takes an expected value",
            ),
            E::ForBounds { problem, span } => {
                diag("E0323", format!("bad `for` bounds: {problem}"), *span, "bad bounds", "use one integer type for lo, hi, step and the loop variable")
            }
            E::CarriedType { name, problem, span } => diag(
                "E0324",
                format!("loop-carried value {name} {problem}"),
                *span,
                "bad carried value",
                "a carried value has its initial value's type",
            ),
            E::YieldPlacement { problem, span } => {
                diag("E0325", problem.to_string(), *span, "misplaced yield", "end a `for` with carried values, or an `if` with results, with one `yield`")
            }
            E::YieldMismatch { problem, span } => {
                diag("E0326", format!("`yield` {problem}"), *span, "does not match", "yield one value per result, of the result's type")
            }
            E::MissingYield { op, region, span } => diag(
                "E0327",
                format!("the {region} region of this `{op}` does not end with `yield`"),
                *span,
                "missing yield",
                "end the region with `yield` of its results",
            ),
            E::IfCondition { found, span } => {
                diag("E0328", format!("`if` condition is {found}, not bool"), *span, "bad condition", "compute a bool with a comparison")
            }
            E::IfMissingElse { span } => diag(
                "E0329",
                "`if` with results has no `else` region".to_string(),
                *span,
                "missing else",
                "add an `else` region yielding the results",
            ),
            E::LocalNotTopLevel { span } => diag(
                "E0330",
                "`local` inside a `for` or `if` region".to_string(),
                *span,
                "not at top level",
                "allocate work-group memory at the top level of the kernel",
            ),
            E::NestingTooDeep { span } => diag(
                "E0331",
                "regions are nested more than 256 deep".to_string(),
                *span,
                "too deep",
                "flatten the control flow",
            ),
            E::EmptyLocal { span } => diag(
                "E0332",
                "`local` allocates zero elements (or too many bytes)".to_string(),
                *span,
                "bad size",
                "allocate at least one element",
            ),
            E::SubgroupOperand { op, problem, span } => diag(
                "E0334",
                format!("`{op}`: {problem}"),
                *span,
                "operand type",
                "subgroup ops take 32-bit scalars and vectors (docs/ir.md, \"Subgroups\")",
            ),
            E::Bitcast { from, to, problem, span } => diag(
                "E0344",
                format!("`bitcast` from {from} to {to} {problem}"),
                *span,
                "bad bitcast",
                "a bitcast reads the same bits as another type: same lane count and scalar width (`u32` <-> `f32` <-> `i32`, `u64` <-> `f64`, `u16` <-> `f16`); use `cast` to convert values",
            ),
            E::CallArgs { problem, span } => diag(
                "E0340",
                format!("call: {problem}"),
                *span,
                "bad call",
                "pass one argument per parameter, of its type (a buffer with at least the parameter's access)",
            ),
            E::Recursion { chain, span } => diag(
                "E0341",
                format!("recursive call: {chain}"),
                *span,
                "closes the cycle",
                "calls are inlined, so a function cannot call itself, directly or through others; use a `for` loop",
            ),
            E::ReturnPlacement { problem, span } => diag(
                "E0342",
                problem.clone(),
                *span,
                "bad return",
                "a function with results ends its body with `return %a, ...`, one value of each result type",
            ),
            E::LocalInFunction { span } => diag(
                "E0343",
                "`local` in a function".to_string(),
                *span,
                "work-group memory in a function",
                "allocate work-group memory in the kernel and pass it to the function as a `local<T>` parameter",
            ),
            E::LoopCondition { found, span } => diag(
                "E0345",
                format!("`loop` condition (the first value of its `yield`) is {found}, not bool"),
                *span,
                "bad condition",
                "end the body with `yield %again, ...` where %again is a bool: true runs the body again",
            ),
            E::UntranslatedShader { kernel, lang, span } => diag(
                "E0333",
                format!("kernel @{kernel} is {lang} source that was not translated into the kernel language"),
                *span,
                "not translated",
                "load the module through the `cmdgraph` CLI or `cmdgraph_shader::resolve`, which translate shaders before verifying",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::VerifyError;
    use crate::span::Span;

    #[test]
    fn an_unwritable_name_is_shown_escaped_not_as_rust_debug_text() {
        let e = VerifyError::InvalidName { kind: "node", name: "a\nb\"c".into(), span: Span::new(0, 1) };
        assert_eq!(e.to_diagnostic().message, "node name `a\\nb\\\"c` cannot be written in the text format");
    }
}
