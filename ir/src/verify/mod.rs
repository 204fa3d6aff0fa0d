//! The verifier: every invariant a [`Module`] must satisfy before any later stage runs.
//!
//! [`verify`] runs after parsing and, under `--verify-each`, after every pass. It never
//! panics, whatever the module holds (API-built modules may hold dangling handles), and
//! reports every violation it finds, sorted by source position, as a [`Diagnostic`] with a
//! stable code. [`check`] returns the structured [`VerifyError`]s instead.
//!
//! # Invariants
//!
//! Structure and names (module and graph):
//! - E0200 every handle is in range: kernels, memory objects, graphs, nodes, edges, queues,
//!   dynamic parameters and command groups, ops and values.
//! - E0201 no name is defined twice in a namespace: kernels, memory objects and graphs share
//!   one; a graph's nodes, dynamic parameters and command groups share one; its queues have
//!   one; kernel parameters and values have E0301.
//! - E0202 every name is spellable: `[A-Za-z0-9_.$-]+`, at most 1024 bytes.
//! - E0203 the module item list lists each kernel, memory object and graph exactly once; a
//!   graph body lists each queue, dynamic parameter, command group and node exactly once,
//!   nodes in creation (arena) order.
//! - E0204 a graph statement only names nodes, dynamic parameters, command groups and queues
//!   of earlier statements.
//! - E0205 every type has 1 to 4 lanes.
//! - E0206 memory objects, graph allocations and work-group memory have at least one
//!   element and a byte size that fits 64 bits.
//! - E0207 a `device_global` initialiser has at most one literal per element, each fitting
//!   the element type.
//!
//! Kernel commands (kernel nodes and kernel alternatives):
//! - E0210 as many arguments as the kernel has parameters.
//! - E0211 each argument's kind suits its parameter: a value parameter takes a scalar
//!   literal or raw bytes, `buf<T, a>` a pointer or accessor, `local<T>` work-group memory.
//! - E0212 a scalar literal fits the parameter's (scalar) type, and a type written on it is
//!   the parameter's; a dynamic scalar fits its own type.
//! - E0213 pointer, accessor and work-group memory element types equal the parameter's.
//! - E0214 an accessor's mode satisfies the parameter's access (`Access::satisfies`).
//! - E0215 accessors only name `buffer` memory.
//! - E0216 kernel pointer arguments, memset, prefetch and memadvise need USM memory or a
//!   graph allocation, not a buffer (memcpy and memfill also take buffers, as SYCL's copy
//!   and fill do with accessors).
//! - E0217 a `device_global` is never an operand of a graph command: kernel pointer or
//!   accessor arguments, dynamic parameter values, memory commands, host task and native
//!   access lists (§22 #59: device_global copy/memcpy in a graph is invalid; host access is
//!   undefined, 003).
//! - E0218 raw bytes are exactly as long as the parameter's type.
//! - E0219 a kernel with a `local<T>` parameter is launched with an `nd_range`;
//! - E0229 so is a kernel using a work-group op: `group_barrier`, `local`, `local_id`,
//!   `group_id`, `local_range` or `group_range` (`range` and `single_task` launches have no
//!   work-group; SYCL's `item` has none of these). One error per launch, E0219 first; it
//!   points at the launch, with the parameter or the first such op (source order) as a
//!   secondary location. Each kernel is scanned once, however many nodes launch it.
//!   A builtin of a dimension the launch does not have (`global_id 2` in a 1-D launch) is
//!   not an error: it reads as id 0 and size 1 (docs/ir.md, Execution semantics), so one
//!   kernel can serve launches of several dimensionalities.
//! - E0220 a dynamic scalar parameter carries its type.
//! - E0221 a dynamic parameter is not registered on a node recorded from a queue (§22 #40).
//! - E0222 a pointer's offset lies inside its memory.
//! - E0223 a kernel pointer argument's offset is a multiple of the parameter's element size.
//! - E0224 launch ids and sizes fit the `u32` builtins: each size is below 2^32 and each
//!   offset + size at most 2^32.
//! - E0209 a launch has at most [`crate::graph::MAX_LAUNCH_WORK_ITEMS`] (2^32) work-items:
//!   a linear id in the `u32` builtins, and a buffer's `u32` element count, reach no
//!   further. Checked on kernel nodes and kernel alternatives; the bundle loader verifies
//!   its IR, so a bundle carrying such a launch is refused too.
//! - E0225 `range` and `nd_range` have 1 to 3 dimensions;
//! - E0226 no launch size is zero;
//! - E0227 an `nd_range`'s local size (and offset, if written) has the global's
//!   dimensionality;
//! - E0228 each local size divides its global size.
//!
//! Memory commands and accessors:
//! - E0230 memcpy (source and destination), memset, memfill, prefetch and memadvise byte
//!   ranges, and accessor element ranges, lie inside their memory objects.
//! - E0231 a memcpy's source and destination ranges do not overlap.
//! - E0232 an accessor range `[lo..hi]` is not empty.
//! - E0233 a memfill pattern carries its type and fits it.
//! - E0234 a graph using a buffer (accessor argument, dynamic accessor parameter, command
//!   group alternative, host task or native access, memcpy or memfill) has
//!   `assume_buffer_outlives_graph` (§22 #6, #12, #53).
//!
//! Graph-owned allocations (000 §8.4.3):
//! - E0240 `async_malloc` kind is `device` (§22 #7, #56).
//! - E0241 `async_free` frees an `async_malloc` node of the same graph.
//! - E0242 a pointer naming a node names an `async_malloc` node.
//! - E0243 an allocation is freed at most once.
//! - E0244 every use (command operand, registered dynamic parameter holding the pointer,
//!   any alternative of a `dynamic` node, host task or native access) is reached from the
//!   `async_malloc` in the happens-before relation;
//! - E0245 no use is reached from the `async_free` (use after free);
//! - E0246 every use reaches the `async_free`;
//! - E0247 the `async_free` is reached from the `async_malloc`.
//!
//!   One missing edge is reported once: users and frees after a user that E0244 already
//!   reports, users before one that E0246 reports, and a free before which such a user
//!   sits get no error of their own (alloc.rs, within a linear work budget).
//!
//! Edges:
//! - E0250 no edge joins a node to itself (§22 #19).
//! - E0251 the edges form no cycle (§22 #20). Reported once, at the first edge in creation
//!   order that closes a cycle (the one `make_edge` would have refused), with the cycle.
//!   **`no_cycle_check`**: the spec skips the check and makes a cyclic graph undefined
//!   behaviour; cmdgraph rejects cycles in every graph anyway, because every later stage
//!   (scheduling, fusion, memory planning, update) needs a DAG. The message says so.
//! - E0252 edge provenance agrees with the statements: `make_edge` edges are created by
//!   exactly one `edge` statement, every other edge with its destination node, and walking
//!   the body creates the edges in creation (arena) order.
//! - E0253 an edge is created after both of its endpoints (recorded nodes only have
//!   backward edges).
//! - E0254 a `via in_order` edge joins two nodes recorded from one `in_order` queue.
//! - E0255 a `via event` edge does not start at a node of a `discard_events` queue (§22 #48).
//! - E0256 a `via barrier` edge enters a barrier, or leaves one to a node of its queue.
//! - E0257 a `via transitive` edge enters a node recorded from a queue.
//! - E0258 a `via accessor` edge joins two nodes accessing a common buffer, one of them
//!   writing it. (Missing accessor edges are data races: E0280.)
//! - E0259 on an `in_order` queue, each node recorded from it is ordered after (reached
//!   from) the previous node recorded from it, in creation order. The parser does not
//!   derive these edges (the text states every edge, so that printing stays the exact
//!   inverse of parsing); a missing one is reported with `after(%prev via in_order)` as
//!   the fix. Reachability suffices, so that a pass removing a node in between keeps the
//!   order valid.
//!
//! Barriers:
//! - E0260 a barrier node has a queue (`on @q`): explicit barriers are invalid (§22 #58).
//! - E0261 every node in a barrier's wait list is a direct predecessor of the barrier.
//!
//! Sub-graphs:
//! - E0265 a graph does not contain itself, directly or through nested sub-graphs.
//! - E0266 a sub-graph has no graph-owned allocations (§22 #37, #39, #57).
//! - E0267 a sub-graph has its parent's device and context (§22 #38).
//! - E0268 sub-graphs nest at most 256 levels deep (a graph is level 1, the graphs its
//!   `subgraph` nodes run level 2, ...), like regions (E0331). Reported once per outermost
//!   graph of a chain that is too deep, at the `subgraph` node opening level 257.
//!
//! Dynamic parameters and command groups:
//! - E0270 a command group has at least one alternative (§22 #14);
//! - E0271 its active index is in range (§22 #16);
//! - E0272 each alternative is a kernel or a host task (§22 #13);
//! - E0273 all alternatives have one command type (§22 #15);
//! - E0274 all alternatives make the same buffer accessor requirements (buffer, mode), so
//!   that switching cannot change the edges (§22 #11);
//! - E0275 a `dynamic` node is not recorded from a queue (command groups are explicit-API
//!   only, §22 #9, 000 §11.3).
//! - Dynamic parameters can only be registered with kernel arguments: the data model has no
//!   way to register one elsewhere, and the parser rejects a dynamic parameter named as the
//!   operand of any other command (§22 #8). An unused dynamic parameter is fine. Each
//!   registered slot is checked like an argument (E0211-E0218, E0223).
//!
//! Data races (races.rs):
//! - E0280 no two commands without happens-before between them (no path either way) touch
//!   overlapping bytes of one memory with at least one writing them. Footprints: memcpy,
//!   memset and memfill byte ranges; host task and native access lists (whole memory);
//!   kernels through the footprint of their launch (element ranges exact where the index
//!   intervals are known, docs/footprint.md) on the bytes their pointer or accessor
//!   arguments bind; `dynamic` nodes through every alternative; `subgraph` nodes through
//!   their graph's commands. Both nodes, the memory, the ranges and the edge to add are
//!   reported. [`VerifyOptions::allow_races`] (`--allow-races`) makes these warnings. Only
//!   checked on acyclic graphs (a cycle is E0251).
//!
//! Kernels:
//! - E0300 an IR body's first values are its parameters, in order, with their names and
//!   types.
//! - E0301 each value name is defined once per kernel (parameters included).
//! - E0302 each op appears once in the region tree.
//! - E0303 each value is defined once, by the op (loop, carried slot) its definition records.
//! - E0304 SSA dominance: a use is in the region of its definition, after it, or in a region
//!   nested there.
//! - E0305 each op defines as many results as it produces; E0306 of the types it produces.
//! - E0307 memory values (`buf`, `local`) are only used as the memory of load, store and
//!   atomic; E0308 that memory is a buffer or local value or a `device_global`.
//! - E0309 a constant's literal fits its type.
//! - E0310 builtin dimensions are 0 to 2.
//! - E0311 binary ops, `fma`, comparisons and `select` branches take one operand type.
//! - E0312 math ops, `pow` and `fma` take floats; `not`, `and`, `or`, `xor` integers or bool;
//!   `shl`, `shr` integers; arithmetic, `neg`, `abs` and ordering comparisons no bool.
//! - E0313 a `select` condition is `bool` or a bool vector of the operands' width.
//! - E0314 `cast` keeps the lane count.
//! - E0315 `extract`/`insert` lanes are inside the vector;
//! - E0316 `splat` makes a vector of its scalar operand's type, `extract`/`insert` take
//!   vectors (and a scalar of the lane type), `vec` takes 2 to 4 scalars.
//! - E0317 memory indices are integer scalars.
//! - E0318 stored, atomic and expected values have the memory's element type (this covers
//!   `device_global` element types).
//! - E0319 loads need readable memory, stores writable memory;
//! - E0320 atomics on a buffer need `read_write`;
//! - E0321 atomics take the element types `kernel::atomic_scalar` allows;
//! - E0322 only `cmpxchg` takes an expected value, and it does.
//! - E0323 `for` bounds, step and variable have one integer type;
//! - E0324 carried values have their initial values' types.
//! - E0325 `yield` is the last op of a `for` body with carried values or of an `if` region
//!   with results, and nowhere else;
//! - E0326 it yields one value per result, of the result's type;
//! - E0327 such regions end with `yield`.
//! - E0328 an `if` condition is a `bool` scalar; E0329 an `if` with results has `else`.
//! - E0330 `local` ops are at the kernel's top level.
//! - E0331 regions nest at most 256 deep.
//! - E0332 a `local` op allocates at least one element.
//! - E0333 no kernel is still WGSL or GLSL source (front ends translate it first).
//! - E0334 subgroup ops take 32-bit scalars and vectors (`and`/`or`/`xor` integers, moves
//!   also `bool`), `bool` conditions and `u32` lane indices (crate::subgroup).
//! - E0340 a `call` passes one argument per parameter, of its type (a buffer with at
//!   least the parameter's access); E0341 no function calls itself, directly or not;
//!   E0342 a function with results ends with `return` of them, and `return` stands nowhere
//!   else; E0343 functions allocate no `local` memory (function.rs).
//! - E0344 `bitcast` keeps the lane count and the scalar width, and takes no `bool`.
//! - E0345 a `loop` body ends with `yield` of a `bool` scalar condition, then (E0326) one
//!   value per carried value of its type (E0324: carried values have their initial
//!   values' types).
//! - `group_barrier` is accepted anywhere: a barrier not reached by every work-item of the
//!   group (inside divergent control flow) is undefined behaviour, as in SYCL, and not
//!   diagnosed.
//!
//! Warnings (modules accepted, but likely not meant) are [`warnings`]'s, not `verify`'s:
//! W0290 an `updatable` graph with graph-owned allocations, which whole-graph update never
//! accepts.
//!
//! Not checked here: properties of executable graphs (update, profiling), whole-graph
//! update compatibility, and whether `all_leaves`
//! edges and the edges of a barrier without a wait list come from exactly the leaves of the
//! graph (or queue) when their node was created: passes that remove nodes change those
//! leaves, and the edges, not their derivation, are what the IR keeps.
//!
//! Left to run time (the interpreter, the executor), because they depend on the device or
//! on values: work-group size and work-group memory limits (the interpreter runs groups of
//! up to 65536 work-items and 64 MiB; Vulkan devices allow less and say so when queried),
//! memory object and expanded graph sizes the host can hold, out-of-bounds indices, loop
//! steps that are not positive, barriers under divergent control flow (undefined
//! behaviour), dynamic parameter updates, and running external SPIR-V bodies.

mod alloc;
mod args;
mod batch;
mod comm;
mod conditional;
mod control;
mod ctx;
mod cycle;
mod dcg;
mod devices;
mod diagnostic;
mod edges;
mod error;
mod function;
mod graph;
mod kernel;
mod memory;
mod names;
mod namespace;
mod needs;
mod order;
mod races;
mod reach;
mod subgraph;
mod topo;
mod types;
mod uses;
mod warnings;

pub use error::VerifyError;
pub use warnings::{warnings, UPDATABLE_WITH_ALLOCATIONS};

use crate::diag::Diagnostic;
use crate::module::Module;

/// What the verifier accepts beyond the invariants. `Default` is the strict verifier
/// ([`verify`], [`check`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// Data races (E0280) are warnings, not errors: for programs whose races are meant
    /// (SYCL does not forbid racy graphs; `--allow-races` on the command line).
    pub allow_races: bool,
}

/// Verifies a module: `Ok(())`, or every violation found, sorted by source position.
pub fn verify(module: &Module) -> Result<(), Vec<Diagnostic>> {
    verify_with(module, &VerifyOptions::default())
}

/// [`verify`] under `options`. Diagnostics it demotes to warnings (allowed races) come
/// back in the `Err` list with [`crate::diag::Severity::Warning`]; the module is rejected
/// only if some diagnostic is an error.
pub fn verify_with(module: &Module, options: &VerifyOptions) -> Result<(), Vec<Diagnostic>> {
    let errors = check_all(module);
    if errors.is_empty() {
        return Ok(());
    }
    Err(errors
        .iter()
        .map(|e| {
            let d = e.to_diagnostic();
            if options.allow_races && e.is_race() {
                crate::diag::Diagnostic { severity: crate::diag::Severity::Warning, ..d }
            } else {
                d
            }
        })
        .collect())
}

/// Every violated invariant of a module, sorted by the start of their primary spans
/// (entities without a span last, in the order found).
pub fn check(module: &Module) -> Vec<VerifyError> {
    check_all(module)
}

/// [`check`] under `options`: allowed races are not violations and are left out.
pub fn check_with(module: &Module, options: &VerifyOptions) -> Vec<VerifyError> {
    let mut errors = check_all(module);
    if options.allow_races {
        errors.retain(|e| !e.is_race());
    }
    errors
}

impl VerifyError {
    /// Whether this is a data race (E0280), which [`VerifyOptions::allow_races`] allows.
    pub fn is_race(&self) -> bool {
        matches!(self, VerifyError::DataRace { .. })
    }
}

fn check_all(module: &Module) -> Vec<VerifyError> {
    let mut errors = Vec::new();
    names::check_module(module, &mut errors);
    memory::check_memories(module, &mut errors);
    for (h, k) in module.kernels.iter() {
        kernel::check_kernel(module, h, k, &mut errors);
    }
    function::check_functions(module, &mut errors);
    // Once per kernel, not per launch: a kernel may be launched by 10^5 nodes.
    let needs = needs::summarize(module);
    for (h, g) in module.graphs.iter() {
        graph::check_graph(module, &needs, h, g, &mut errors);
    }
    subgraph::check(module, &mut errors);
    devices::check(module, &mut errors);
    comm::check_ranks(module, &mut errors);
    // Stable: errors at one position keep the order in which the checks found them.
    errors.sort_by_cached_key(|e| e.span().start);
    // One op can break one rule through two operands (`add %buf, %buf`): say it once. Without
    // a span, equal errors may come from different places, so they are all kept.
    errors.dedup_by(|a, b| a == b && a.span().is_defined());
    errors
}
