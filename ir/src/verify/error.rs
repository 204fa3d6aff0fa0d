//! [`VerifyError`]: one variant per invariant the verifier checks, each with its spans.
//!
//! The variants carry what the message needs (names are printed with their sigil, `@x`
//! or `%n`) so that tests can match on structure; [`VerifyError::to_diagnostic`] (in
//! `diagnostic.rs`) turns one into a located, human-readable [`crate::diag::Diagnostic`].

use crate::span::Span;

/// A violated invariant. Graph-level invariants have codes `E02xx`, kernel-level ones
/// `E03xx`; see the module documentation of [`crate::verify`] for the full list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifyError {
    // ----- structure and names (module and graph) -----
    /// E0200: a handle points past the end of its arena.
    DanglingHandle {
        /// What kind of entity the handle should name (`node`, `memory object`, ...).
        what: &'static str,
        /// The zero-based index it holds.
        index: usize,
        /// Where the handle is held.
        span: Span,
    },
    /// E0201: two entities of one namespace share a name.
    DuplicateName {
        /// The kind of the second definition.
        kind: &'static str,
        /// The name with its sigil.
        name: String,
        /// The second definition.
        span: Span,
        /// The first definition.
        first: Span,
    },
    /// E0202: a name is empty, too long or has characters the text format cannot spell.
    InvalidName {
        /// The kind of entity.
        kind: &'static str,
        /// The name as stored (without sigil).
        name: String,
        /// The entity.
        span: Span,
    },
    /// E0203: the module item list or a graph body does not list an entity exactly once,
    /// or lists nodes out of creation order.
    OrderList {
        /// `module items` or `graph body`.
        list: &'static str,
        /// The entity, with its sigil.
        entity: String,
        /// What is wrong.
        problem: &'static str,
        /// The entity.
        span: Span,
    },
    /// E0204: a graph statement names a node, dynamic parameter, command group or queue
    /// defined after it.
    UseBeforeDefinition {
        /// The name used, with its sigil.
        name: String,
        /// The statement using it.
        span: Span,
        /// Its definition.
        def: Span,
    },
    /// E0205: a vector type with a lane count other than 1..=4.
    InvalidType {
        /// The lane count.
        lanes: u8,
        /// The entity with the type.
        span: Span,
    },
    /// E0206: a memory object, graph allocation or work-group memory of zero elements, or
    /// one whose byte size overflows.
    BadSize {
        /// What is sized.
        what: String,
        /// Element count.
        count: u64,
        /// The entity.
        span: Span,
    },
    /// E0207: a `device_global` initialiser longer than the variable, or an element that
    /// does not fit the element type.
    DeviceGlobalInit {
        /// The variable, `@g`.
        name: String,
        /// What is wrong.
        problem: String,
        /// The declaration.
        span: Span,
    },

    // ----- kernel arguments -----
    /// E0210: a kernel command passes a different number of arguments than the kernel has
    /// parameters.
    ArgCount {
        /// The kernel, `@k`.
        kernel: String,
        /// Number of parameters.
        expected: usize,
        /// Number of arguments.
        found: usize,
        /// The command.
        span: Span,
        /// The kernel definition.
        kernel_span: Span,
    },
    /// E0211: an argument of a kind the parameter does not take (a pointer for a scalar,
    /// raw bytes for a buffer, work-group memory for a value, ...).
    ArgKind {
        /// The parameter, `%p`.
        param: String,
        /// The parameter's type as written.
        expected: String,
        /// What was passed (`a pointer`, `an accessor`, ...).
        found: &'static str,
        /// The argument.
        span: Span,
        /// The parameter.
        param_span: Span,
    },
    /// E0212: a scalar literal that does not fit its parameter or its own written type.
    ScalarArg {
        /// What is wrong.
        problem: String,
        /// The argument.
        span: Span,
        /// The parameter (undefined when the literal's own type is at fault).
        param_span: Span,
    },
    /// E0213: a pointer, accessor or work-group memory argument whose element type is not
    /// the parameter's.
    ArgElemType {
        /// The parameter, `%p`.
        param: String,
        /// The parameter's element type.
        expected: String,
        /// The memory's element type.
        found: String,
        /// The argument.
        span: Span,
        /// The parameter.
        param_span: Span,
    },
    /// E0214: an accessor whose mode does not give the access the parameter declares.
    ArgAccess {
        /// The parameter, `%p`.
        param: String,
        /// The parameter's access.
        expected: &'static str,
        /// The accessor's mode.
        found: &'static str,
        /// The argument.
        span: Span,
        /// The parameter.
        param_span: Span,
    },
    /// E0215: an accessor on memory that is not a `buffer`.
    AccessorNotBuffer {
        /// The memory, `@x` or `%t`.
        name: String,
        /// Its kind (`usm`, `graph allocation`).
        kind: &'static str,
        /// The accessor.
        span: Span,
    },
    /// E0216: a USM pointer is required (kernel pointer argument, memset, prefetch,
    /// memadvise) but the memory is a `buffer`.
    PointerToBuffer {
        /// Where the pointer is used.
        context: &'static str,
        /// The buffer, `@b`.
        name: String,
        /// The pointer.
        span: Span,
    },
    /// E0217: a `device_global` used as an operand of a graph command (§22 #59).
    DeviceGlobalOperand {
        /// The variable, `@g`.
        name: String,
        /// Where it is used.
        context: &'static str,
        /// The operand.
        span: Span,
    },
    /// E0218: raw bytes whose length is not the size of the parameter's type.
    RawBytesSize {
        /// The parameter's size in bytes.
        expected: u64,
        /// The number of bytes passed.
        found: usize,
        /// The argument.
        span: Span,
        /// The parameter.
        param_span: Span,
    },
    /// E0219: work-group memory (a `local<T>` parameter) in a kernel not launched with an
    /// `nd_range`.
    LocalNeedsNdRange {
        /// The kernel, `@k`.
        kernel: String,
        /// The launch.
        span: Span,
        /// The `local<T>` parameter.
        param_span: Span,
    },
    /// E0220: a dynamic scalar parameter whose literal has no type.
    DynScalarUntyped {
        /// The parameter, `%p`.
        name: String,
        /// Its definition.
        span: Span,
    },
    /// E0221: a dynamic parameter registered on a node recorded from a queue (§22 #40).
    DynOnRecordedNode {
        /// The parameter, `%p`.
        param: String,
        /// The queue, `@q`.
        queue: String,
        /// The argument.
        span: Span,
        /// The parameter's definition.
        param_span: Span,
    },
    /// E0222: a pointer whose byte offset lies past the end of its memory.
    PointerOutOfBounds {
        /// The memory.
        name: String,
        /// The offset.
        offset: u64,
        /// The memory's size in bytes.
        size: u64,
        /// The pointer.
        span: Span,
    },
    /// E0223: a kernel pointer argument whose offset is not a multiple of the parameter's
    /// element size.
    PointerMisaligned {
        /// The offset.
        offset: u64,
        /// The element size.
        align: u64,
        /// The argument.
        span: Span,
    },

    // ----- launches -----
    /// E0224: a launch whose ids or sizes do not fit the `u32` builtins.
    LaunchTooLarge {
        /// What is too large.
        problem: String,
        /// The launch.
        span: Span,
    },
    /// E0209: a launch of more work-items than [`crate::graph::MAX_LAUNCH_WORK_ITEMS`].
    LaunchWork {
        /// The sizes, as `X x Y x Z`.
        sizes: String,
        /// Their product (`None`: past 64 bits).
        items: Option<u64>,
        /// The launch.
        span: Span,
    },
    /// E0225: a `range` or `nd_range` with no dimension or more than three.
    LaunchDims {
        /// The number of dimensions written.
        dims: usize,
        /// The launch.
        span: Span,
    },
    /// E0226: a zero size in a launch.
    LaunchZero {
        /// `global`, `local` or `range`.
        what: &'static str,
        /// The dimension.
        dim: usize,
        /// The launch.
        span: Span,
    },
    /// E0227: an `nd_range` whose local size or offset has a different dimensionality
    /// than its global size.
    NdRangeDims {
        /// `local` or `offset`.
        what: &'static str,
        /// Global dimensions.
        global: usize,
        /// The other part's dimensions.
        found: usize,
        /// The launch.
        span: Span,
    },
    /// E0228: an `nd_range` whose local size does not divide its global size.
    NdRangeIndivisible {
        /// The dimension.
        dim: usize,
        /// Global size in it.
        global: u64,
        /// Local size in it.
        local: u64,
        /// The launch.
        span: Span,
    },
    /// E0229: a kernel launched with `range` or `single_task` that uses a work-group op
    /// (`group_barrier`, `local`, or the `local_id`, `group_id`, `local_range`,
    /// `group_range` builtins).
    GroupOpNeedsNdRange {
        /// The kernel, `@k`.
        kernel: String,
        /// The launch kind (`range` or `single_task`).
        launch: &'static str,
        /// The op's keyword.
        op: &'static str,
        /// The launch.
        span: Span,
        /// The op in the kernel body.
        op_span: Span,
    },

    // ----- memory commands -----
    /// E0230: a byte or element range past the end of its memory.
    RangeOutOfBounds {
        /// What the range is (`memcpy destination`, `accessor`, ...).
        what: &'static str,
        /// The memory.
        name: String,
        /// Start of the range.
        start: u64,
        /// End of the range (exclusive); `None` when it overflows.
        end: Option<u64>,
        /// Size of the memory in the same unit.
        size: u64,
        /// `bytes` or `elements`.
        unit: &'static str,
        /// The command.
        span: Span,
    },
    /// E0231: a memcpy whose source and destination ranges overlap.
    MemcpyOverlap {
        /// The memory.
        name: String,
        /// Destination offset.
        dst: u64,
        /// Source offset.
        src: u64,
        /// Byte count.
        bytes: u64,
        /// The command.
        span: Span,
    },
    /// E0232: an accessor range `[lo..hi]` that is empty or reversed.
    AccessorRange {
        /// Low bound.
        lo: u64,
        /// High bound.
        hi: u64,
        /// The accessor.
        span: Span,
    },
    /// E0233: a memfill pattern with no type, or that does not fit its type.
    MemfillPattern {
        /// What is wrong.
        problem: String,
        /// The command.
        span: Span,
    },
    /// E0294: a communication node's operand that cannot work (its peer, or the type or
    /// alignment of an all-reduce).
    CommOperand {
        /// The node, `%n`.
        node: String,
        /// What is wrong.
        problem: String,
        /// What to do.
        help: String,
        /// The node.
        span: Span,
    },
    /// E0295: across a module's rank graphs, a send without its receive (or one of another
    /// size), or all-reduces the ranks do not agree on.
    CommUnmatched {
        /// What does not match, naming both sides.
        problem: String,
        /// What to do.
        help: String,
        /// The node left unmatched.
        span: Span,
    },
    /// E0234: a buffer used by a graph without `assume_buffer_outlives_graph` (§22 #6, #12,
    /// #53).
    BufferWithoutAssume {
        /// The buffer, `@b`.
        buffer: String,
        /// The graph, `@g`.
        graph: String,
        /// The use.
        span: Span,
    },

    // ----- graph-owned allocations -----
    /// E0240: an `async_malloc` whose pool kind is not `device` (§22 #7, #56).
    AllocKindNotDevice {
        /// The kind written.
        kind: &'static str,
        /// The node.
        span: Span,
    },
    /// E0241: an `async_free` of a node that is not an `async_malloc` of this graph.
    FreeOfForeignMemory {
        /// The node named.
        name: String,
        /// The free.
        span: Span,
        /// The node named.
        target: Span,
    },
    /// E0242: a pointer naming a node that is not an `async_malloc`.
    NotAnAllocation {
        /// The node named.
        name: String,
        /// The use.
        span: Span,
        /// The node named.
        target: Span,
    },
    /// E0243: two `async_free` nodes free one allocation.
    DoubleFree {
        /// The allocation, `%t`.
        alloc: String,
        /// The second free.
        span: Span,
        /// The first free.
        first: Span,
    },
    /// E0244: a node uses a graph allocation but is not ordered after its `async_malloc`.
    UseBeforeMalloc {
        /// The allocation, `%t`.
        alloc: String,
        /// The using node, `%n`.
        user: String,
        /// The use.
        span: Span,
        /// The `async_malloc`.
        malloc: Span,
    },
    /// E0245: a node uses a graph allocation and is ordered after its `async_free`.
    UseAfterFree {
        /// The allocation.
        alloc: String,
        /// The using node.
        user: String,
        /// The use.
        span: Span,
        /// The `async_free`.
        free: Span,
    },
    /// E0246: a node uses a graph allocation but is not ordered before its `async_free`.
    UseNotBeforeFree {
        /// The allocation.
        alloc: String,
        /// The using node.
        user: String,
        /// The use.
        span: Span,
        /// The `async_free`.
        free: Span,
    },
    /// E0247: an `async_free` not ordered after its `async_malloc`.
    FreeNotAfterMalloc {
        /// The allocation.
        alloc: String,
        /// The free.
        span: Span,
        /// The `async_malloc`.
        malloc: Span,
    },

    // ----- edges -----
    /// E0250: an edge from a node to itself (§22 #19).
    SelfEdge {
        /// The node.
        node: String,
        /// The edge.
        span: Span,
    },
    /// E0251: the edges form a cycle (§22 #20).
    Cycle {
        /// The nodes around the cycle, starting and ending at the same node.
        cycle: Vec<String>,
        /// Whether the graph has `no_cycle_check`.
        no_cycle_check: bool,
        /// The edge that closed the cycle (the first, in creation order, that did).
        span: Span,
    },
    /// E0252: edge provenance disagrees with the statements that create edges.
    EdgeProvenance {
        /// The edge, `%a -> %b`.
        edge: String,
        /// What is wrong.
        problem: String,
        /// The edge.
        span: Span,
    },
    /// E0253: an edge created before one of its endpoint nodes.
    EdgeBeforeEndpoint {
        /// The edge.
        edge: String,
        /// The endpoint created later.
        node: String,
        /// The edge.
        span: Span,
        /// The endpoint.
        node_span: Span,
    },
    /// E0254: a `via in_order` edge whose endpoints are not consecutive submissions of one
    /// in-order queue.
    InOrderEdge {
        /// The edge.
        edge: String,
        /// What is wrong.
        problem: String,
        /// The edge.
        span: Span,
    },
    /// E0255: a `via event` edge from a node recorded on a `discard_events` queue (§22 #48).
    EventFromDiscardQueue {
        /// The edge.
        edge: String,
        /// The queue.
        queue: String,
        /// The edge.
        span: Span,
    },
    /// E0256: a `via barrier` edge that neither enters a barrier nor leaves one to a
    /// later submission on the barrier's queue.
    BarrierEdge {
        /// The edge.
        edge: String,
        /// The edge.
        span: Span,
    },
    /// E0257: a `via transitive` edge into a node that was not recorded from a queue.
    TransitiveEdge {
        /// The edge.
        edge: String,
        /// The edge.
        span: Span,
    },
    /// E0258: a `via accessor` edge between nodes with no conflicting buffer access.
    AccessorEdge {
        /// The edge.
        edge: String,
        /// The edge.
        span: Span,
    },

    /// E0259: a submission to an `in_order` queue that is not ordered after the previous
    /// submission to that queue.
    InOrderUnordered {
        /// The queue, `@q`.
        queue: String,
        /// The previous submission, `%a`.
        prev: String,
        /// This submission, `%b`.
        node: String,
        /// This submission.
        span: Span,
        /// The previous submission.
        prev_span: Span,
    },

    // ----- data races -----
    /// E0280: two commands with no happens-before between them touch overlapping bytes of
    /// one memory, at least one writing them.
    DataRace {
        /// The memory, `@x` or `%t`.
        memory: String,
        /// The command created first, `%a`.
        first: String,
        /// Whether it writes the bytes.
        first_writes: bool,
        /// The bytes it touches, `[lo, hi)`.
        first_bytes: (u64, u64),
        /// The command created later, `%b`.
        second: String,
        /// Whether it writes the bytes.
        second_writes: bool,
        /// The bytes it touches, `[lo, hi)`.
        second_bytes: (u64, u64),
        /// The memory's element size in bytes and type, to show element ranges.
        elem: (u64, String),
        /// The edge that orders them, as a fix-it.
        fix: String,
        /// The command created later.
        span: Span,
        /// The command created first.
        first_span: Span,
    },

    // ----- barriers -----
    /// E0260: a barrier with no queue (added through the explicit API, §22 #58).
    BarrierWithoutQueue {
        /// The node.
        node: String,
        /// The node.
        span: Span,
    },
    /// E0261: a barrier waits on a node that is not its predecessor.
    BarrierWaitNotPredecessor {
        /// The barrier.
        barrier: String,
        /// The waited-on node.
        waited: String,
        /// The wait-list entry.
        span: Span,
    },

    // ----- sub-graphs -----
    /// E0265: a sub-graph that contains its parent (directly or through nested sub-graphs).
    SubgraphRecursion {
        /// The graphs around the loop, starting and ending at the same one.
        chain: Vec<String>,
        /// The sub-graph node.
        span: Span,
    },
    /// E0266: a sub-graph with graph-owned allocations (§22 #37, #39, #57).
    SubgraphWithAllocations {
        /// The child graph.
        child: String,
        /// The sub-graph node.
        span: Span,
        /// An `async_malloc` in the child.
        alloc: Span,
    },
    /// E0267: a sub-graph on another device or context (§22 #38).
    SubgraphDeviceMismatch {
        /// The child graph.
        child: String,
        /// Parent (device, context).
        parent: (u32, u32),
        /// Child (device, context).
        found: (u32, u32),
        /// The sub-graph node.
        span: Span,
    },
    /// E0268: sub-graphs nested more than 256 levels deep (the graph that contains them
    /// counts as level 1).
    SubgraphNestingTooDeep {
        /// The graphs of the deepest chain, outermost first.
        chain: Vec<String>,
        /// The `subgraph` node that opens the level past the limit.
        span: Span,
        /// The outermost `subgraph` node of the chain.
        outer: Span,
    },

    // ----- conditional nodes -----
    /// E0285: a conditional node's condition is not a `u32` word of module memory.
    ConditionWord {
        /// What is wrong with it.
        problem: String,
        /// The conditional node.
        span: Span,
    },
    /// E0286: a `while` body that no node of (its nodes, nested bodies and sub-graphs) can
    /// write the condition's memory: the loop would run zero times or forever.
    WhileNeverWrites {
        /// The condition, as written.
        cond: String,
        /// The body graph.
        body: String,
        /// The `while` node.
        span: Span,
    },

    // ----- devices (docs/multi-device.md) -----
    /// E0290: `device(N)` on a node that runs nothing on a device.
    DeviceOnHostNode {
        /// The node.
        node: String,
        /// Its type.
        kind: &'static str,
        /// The node.
        span: Span,
    },
    /// E0291: a node touches memory that lives on another device.
    MemoryOnOtherDevice {
        /// The node.
        node: String,
        /// The device it runs on.
        device: u32,
        /// What of it names the memory (an argument, the destination, ...).
        what: &'static str,
        /// The memory, as written.
        memory: String,
        /// The device the memory lives on (or is used on first, for a `device_global`).
        home: u32,
        /// What to do.
        help: String,
        /// The argument or the node.
        span: Span,
    },
    /// E0292: a node writes `replicated` memory (only the application's binds write it).
    ReplicatedWrite {
        /// The node.
        node: String,
        /// The memory.
        memory: String,
        /// The argument or the node.
        span: Span,
    },
    /// E0293: a node of a conditional node's body runs on another device than the node.
    BodyOnOtherDevice {
        /// The conditional node.
        node: String,
        /// Its device.
        device: u32,
        /// The body graph.
        body: String,
        /// The body's node.
        inner: String,
        /// That node's device.
        other: u32,
        /// The conditional node.
        span: Span,
    },

    // ----- dynamic command groups -----
    /// E0270: a dynamic command group with no alternative (§22 #14).
    DcgEmpty {
        /// The group.
        name: String,
        /// The group.
        span: Span,
    },
    /// E0271: an active index out of range (§22 #16).
    DcgActiveOutOfRange {
        /// The group.
        name: String,
        /// The index.
        active: u32,
        /// Number of alternatives.
        len: usize,
        /// The group.
        span: Span,
    },
    /// E0272: an alternative that is neither a kernel nor a host task (§22 #13).
    DcgBadAlternative {
        /// The group.
        name: String,
        /// The alternative's index.
        alt: u32,
        /// The command written.
        command: &'static str,
        /// The alternative.
        span: Span,
    },
    /// E0273: alternatives of different command types (§22 #15).
    DcgMixedTypes {
        /// The group.
        name: String,
        /// The alternative's index.
        alt: u32,
        /// The first alternative's type.
        expected: &'static str,
        /// This alternative's type.
        found: &'static str,
        /// The alternative.
        span: Span,
    },
    /// E0274: alternatives with different buffer accessor requirements, which would give
    /// different dependencies (§22 #11).
    DcgAccessorMismatch {
        /// The group.
        name: String,
        /// The alternative's index.
        alt: u32,
        /// The requirements of alternative 0.
        expected: String,
        /// Its requirements.
        found: String,
        /// The alternative.
        span: Span,
    },
    /// E0275: a `dynamic` node recorded from a queue (command groups are explicit-API only,
    /// §22 #9).
    DcgOnRecordedNode {
        /// The node.
        node: String,
        /// The queue.
        queue: String,
        /// The node.
        span: Span,
    },

    // ----- kernels -----
    /// E0300: a kernel parameter whose body value is missing or disagrees with it.
    ParamValueMismatch {
        /// The parameter.
        param: String,
        /// What is wrong.
        problem: &'static str,
        /// The parameter.
        span: Span,
    },
    /// E0301: two values of one kernel share a name.
    DuplicateValueName {
        /// The name, `%v`.
        name: String,
        /// The second definition.
        span: Span,
        /// The first definition.
        first: Span,
    },
    /// E0302: an op listed in more than one place of the region tree.
    OpListedTwice {
        /// The op's keyword.
        op: &'static str,
        /// The op.
        span: Span,
    },
    /// E0303: a value defined twice, or whose recorded definition is not the op that
    /// defines it.
    ValueDefinition {
        /// The value.
        name: String,
        /// What is wrong.
        problem: &'static str,
        /// The defining op.
        span: Span,
    },
    /// E0304: a value used where its definition does not dominate the use.
    ValueNotInScope {
        /// The value.
        name: String,
        /// Whether it is defined later (false: in a region that has ended, or nowhere).
        later: bool,
        /// The use.
        span: Span,
        /// Its definition.
        def: Span,
    },
    /// E0305: an op with the wrong number of results.
    ResultCount {
        /// The op's keyword.
        op: &'static str,
        /// Results it defines.
        expected: usize,
        /// Results written.
        found: usize,
        /// The op.
        span: Span,
    },
    /// E0306: a result whose recorded type is not the type the op produces.
    ResultType {
        /// The result.
        name: String,
        /// The type the op produces.
        expected: String,
        /// The recorded type.
        found: String,
        /// The op.
        span: Span,
    },
    /// E0307: a memory value (`buf` or `local`) used as a data operand.
    NotData {
        /// The value.
        name: String,
        /// The op.
        span: Span,
    },
    /// E0308: a data value (or a non-`device_global` module memory) used as the memory of a
    /// load, store or atomic.
    NotMemory {
        /// The value or memory.
        name: String,
        /// The op.
        span: Span,
    },
    /// E0309: a constant whose literal does not fit its type.
    ConstLiteral {
        /// What is wrong.
        problem: String,
        /// The op.
        span: Span,
    },
    /// E0310: a builtin dimension above 2.
    BuiltinDim {
        /// The builtin.
        builtin: &'static str,
        /// The dimension.
        dim: u8,
        /// The op.
        span: Span,
    },
    /// E0311: operands that must share one type do not.
    OperandTypesDiffer {
        /// The op's keyword.
        op: &'static str,
        /// The types found, in operand order.
        types: Vec<String>,
        /// The op.
        span: Span,
    },
    /// E0312: an operand of a type class the op does not take (math on integers, bitwise on
    /// floats, arithmetic on bool, ...).
    OperandClass {
        /// The op's keyword.
        op: &'static str,
        /// What it takes.
        required: &'static str,
        /// The type found.
        found: String,
        /// The op.
        span: Span,
    },
    /// E0313: a `select` condition that is not `bool` or a bool vector of the operands' width.
    SelectCondition {
        /// The condition's type.
        found: String,
        /// The operands' type.
        operands: String,
        /// The op.
        span: Span,
    },
    /// E0314: a `cast` that changes the lane count.
    CastLanes {
        /// From.
        from: String,
        /// To.
        to: String,
        /// The op.
        span: Span,
    },
    /// E0315: a lane number past the end of the vector.
    LaneOutOfRange {
        /// The op's keyword.
        op: &'static str,
        /// The lane.
        lane: u8,
        /// The vector type.
        ty: String,
        /// The op.
        span: Span,
    },
    /// E0316: a vector op given operands of the wrong shape.
    VectorShape {
        /// The op's keyword.
        op: &'static str,
        /// What is wrong.
        problem: String,
        /// The op.
        span: Span,
    },
    /// E0317: a memory index that is not an integer scalar.
    IndexNotInteger {
        /// The index's type.
        found: String,
        /// The op.
        span: Span,
    },
    /// E0318: a stored, atomic or expected value whose type is not the memory's element type.
    MemoryValueType {
        /// The op's keyword.
        op: &'static str,
        /// The element type.
        expected: String,
        /// The value's type.
        found: String,
        /// The op.
        span: Span,
    },
    /// E0319: a load from memory that is not readable or a store to memory that is not
    /// writable.
    MemoryAccess {
        /// The op's keyword.
        op: &'static str,
        /// The memory.
        name: String,
        /// Its access.
        access: &'static str,
        /// The op.
        span: Span,
    },
    /// E0320: an atomic on a buffer that is not `read_write`.
    AtomicAccess {
        /// The memory.
        name: String,
        /// Its access.
        access: &'static str,
        /// The op.
        span: Span,
    },
    /// E0321: an atomic on an element type it does not support.
    AtomicType {
        /// The atomic op.
        op: &'static str,
        /// The element type.
        ty: String,
        /// The op.
        span: Span,
    },
    /// E0322: `cmpxchg` without an expected value, or another atomic with one.
    AtomicOperands {
        /// The atomic op.
        op: &'static str,
        /// The op.
        span: Span,
    },
    /// E0323: `for` bounds, step and variable not of one integer type.
    ForBounds {
        /// What is wrong.
        problem: String,
        /// The op.
        span: Span,
    },
    /// E0324: a loop-carried value whose type differs from its initial value's, or whose
    /// recorded definition is wrong.
    CarriedType {
        /// The carried value.
        name: String,
        /// What is wrong.
        problem: String,
        /// The op.
        span: Span,
    },
    /// E0325: a `yield` that is not the last op of a `for`/`if` region with results.
    YieldPlacement {
        /// What is wrong.
        problem: &'static str,
        /// The yield.
        span: Span,
    },
    /// E0326: a `yield` whose values do not match the region's results.
    YieldMismatch {
        /// What is wrong.
        problem: String,
        /// The yield.
        span: Span,
    },
    /// E0327: a region with results that does not end with `yield`.
    MissingYield {
        /// `for` or `if`.
        op: &'static str,
        /// Which region (`body`, `then`, `else`).
        region: &'static str,
        /// The `for`/`if`.
        span: Span,
    },
    /// E0328: an `if` condition that is not a `bool` scalar.
    IfCondition {
        /// The condition's type.
        found: String,
        /// The op.
        span: Span,
    },
    /// E0329: an `if` with results but no `else`.
    IfMissingElse {
        /// The op.
        span: Span,
    },
    /// E0330: a `local` op inside a `for` or `if` region.
    LocalNotTopLevel {
        /// The op.
        span: Span,
    },
    /// E0331: regions nested deeper than the limit (256).
    NestingTooDeep {
        /// The op that opens the region past the limit.
        span: Span,
    },
    /// E0332: a `local` op of zero elements.
    EmptyLocal {
        /// The op.
        span: Span,
    },
    /// E0334: a subgroup op's operand of a type it does not take.
    SubgroupOperand {
        /// The op's keyword.
        op: &'static str,
        /// What is wrong.
        problem: String,
        /// The op.
        span: Span,
    },
    /// E0344: a `bitcast` between types of different lane counts or scalar widths, or of
    /// `bool`.
    Bitcast {
        /// The operand's type.
        from: String,
        /// The result type.
        to: String,
        /// What is wrong.
        problem: &'static str,
        /// The op.
        span: Span,
    },
    /// E0340: a `call` whose arguments do not match the function's parameters.
    CallArgs {
        /// What is wrong.
        problem: String,
        /// The call.
        span: Span,
    },
    /// E0341: a function that calls itself, directly or through others.
    Recursion {
        /// The cycle, `@f -> @g -> @f`.
        chain: String,
        /// The call that closes it.
        span: Span,
    },
    /// E0342: a misplaced `return`, a missing one, or one of the wrong values.
    ReturnPlacement {
        /// What is wrong.
        problem: String,
        /// The `return` (or the function, when it has none).
        span: Span,
    },
    /// E0343: a `local` op in a function.
    LocalInFunction {
        /// The op.
        span: Span,
    },
    /// E0345: a `loop` body whose `yield` does not start with a `bool` scalar condition.
    LoopCondition {
        /// The condition's type, or `missing`.
        found: String,
        /// The `yield`.
        span: Span,
    },
    /// E0333: a kernel still in WGSL or GLSL (not translated where the module was loaded).
    UntranslatedShader {
        /// The kernel.
        kernel: String,
        /// `wgsl` or `glsl`.
        lang: &'static str,
        /// The kernel.
        span: Span,
    },
}
