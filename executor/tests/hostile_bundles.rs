//! Hostile bundles (issue 18): each test changes exactly one field of a good bundle, of the
//! kind that crashed llvmpipe or computed wrong results silently before, and checks that the
//! loader refuses it with a message naming the field. The content hash is not the defence
//! here (an attacker recomputes it), so these go through `load::check` directly.

mod common;

use cmdgraph_executor::{load, ContextOptions, ExecError, Executor};
use cmdgraph_ir::bundle::{Bundle, GraphPlan, LaunchVariant, MemorySlot, PoolPlan};
use common::*;

/// Two temporaries that reuse offset 0 one after the other (`%t` freed before `%u` is
/// allocated) and one, `%v`, unordered with both and live to the end, at offset 256.
const GRAPH: &str = "
usm @x : f32[64]
usm @y : f32[64]
usm @z : f32[64]
graph @g {
  %t = async_malloc f32[64] device
  %k = kernel @ramp range(64) args(%t) after(%t)
  %c = memcpy @x, %t, 256 after(%k)
  %f = async_free %t after(%c)
  %u = async_malloc f32[64] device after(%f)
  %m = kernel @scale range(64) args(@x, %u, 2.0) after(%u)
  %d = memcpy @y, %u, 256 after(%m)
  %e = async_free %u after(%d)
  %v = async_malloc f32[64] device
  %n = kernel @ramp range(64) args(%v) after(%v)
  %w = memcpy @z, %v, 256 after(%n)
}
";

/// Index of each kernel in `common::bundle`'s list.
const ADD2_V: u32 = 0;
const RAMP_V: u32 = 1;
const SCALE_V: u32 = 2;

fn good() -> Bundle {
    let plan = GraphPlan {
        name: "g".into(),
        segments: vec![],
        memory: PoolPlan {
            size: 512,
            alignment: 256,
            offsets: vec![("t".into(), 0), ("u".into(), 0), ("v".into(), 256)],
            report: String::new(),
        },
        origins: vec![],
        launches: vec![
            LaunchVariant { node: "k".into(), alternative: None, kernel: RAMP_V },
            LaunchVariant { node: "m".into(), alternative: None, kernel: SCALE_V },
            LaunchVariant { node: "n".into(), alternative: None, kernel: RAMP_V },
        ],
    };
    bundle(&format!("{KERNELS_IR}{GRAPH}"), vec![], vec![plan])
}

/// The loader's error for `b`, which must be refused.
fn refused(b: Bundle) -> String {
    match load::check(b) {
        Ok(_) => panic!("the tampered bundle loaded"),
        Err(e) => e.to_string(),
    }
}

/// Asserts the refusal of `b` mentions every one of `parts`.
fn assert_refused(b: Bundle, parts: &[&str]) {
    let e = refused(b);
    for p in parts {
        assert!(e.contains(p), "`{p}` not in: {e}");
    }
}

/// The word index of the first instruction with `opcode` whose operands satisfy `pick`.
fn find(words: &[u32], opcode: u32, pick: impl Fn(&[u32]) -> bool) -> usize {
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if words[at] & 0xffff == opcode && pick(&words[at + 1..at + count]) {
            return at;
        }
        at += count;
    }
    panic!("no instruction with opcode {opcode}");
}

const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const OP_CONSTANT: u32 = 43;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const OP_FUNCTION: u32 = 54;
const OP_VARIABLE: u32 = 59;
const DESCRIPTOR_SET: u32 = 34;
const BINDING: u32 = 33;
const BLOCK: u32 = 2;
const OFFSET: u32 = 35;
const LOCAL_SIZE: u32 = 17;
const STORAGE_PUSH_CONSTANT: u32 = 9;

/// One instruction: the word count and opcode word, then `operands`.
fn op(opcode: u32, operands: &[u32]) -> Vec<u32> {
    let mut w = vec![((operands.len() as u32 + 1) << 16) | opcode];
    w.extend_from_slice(operands);
    w
}

/// Asserts that `words` is valid SPIR-V for Vulkan 1.3 to `spirv-val`, as `common::assemble`
/// checks the kernels it builds: a patched module that the validator refuses could be refused
/// by the loader's SPIR-V validation before it reaches the check a test is about.
fn assert_valid_spirv(words: &[u32]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("patched.spv");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&bin, bytes).expect("write spv");
    let val = std::process::Command::new("spirv-val")
        .args(["--target-env", "vulkan1.3"])
        .arg(&bin)
        .output()
        .expect("spirv-val (SPIRV-Tools) must be installed");
    assert!(val.status.success(), "the patched module is invalid SPIR-V: {}", String::from_utf8_lossy(&val.stderr));
}

/// Positive control: the untampered bundle loads, runs, and computes the ramp (the two
/// temporaries sharing offset 0 are fine: one is freed before the other is allocated).
#[test]
fn the_untampered_bundle_loads_and_runs() {
    let mut ex = executor(good());
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    let ramp: Vec<f32> = (0..64).map(|i| i as f32).collect();
    assert_eq!(ex.read_as::<f32>("x").unwrap(), ramp);
    assert_eq!(ex.read_as::<f32>("y").unwrap(), ramp.iter().map(|v| v * 2.0).collect::<Vec<_>>());
    assert_eq!(ex.read_as::<f32>("z").unwrap(), ramp);
    no_messages(&ex);
}

#[test]
fn spirv_descriptor_set_other_than_0() {
    let mut b = good();
    let w = &mut b.kernels[RAMP_V as usize].spirv;
    let at = find(w, OP_DECORATE, |o| o[1] == DESCRIPTOR_SET);
    w[at + 3] = 1;
    assert_refused(b, &["kernel @ramp", "DescriptorSet 1; only set 0 is bound", "variant 1"]);
}

#[test]
fn spirv_binding_outside_the_layout() {
    let mut b = good();
    // @ramp has one memory slot: bindings 0 and 1.
    let w = &mut b.kernels[RAMP_V as usize].spirv;
    let at = find(w, OP_DECORATE, |o| o[1] == BINDING && o[2] == 1);
    w[at + 3] = 2;
    assert_refused(b, &["kernel @ramp", "Binding 2", "bindings 0..2"]);
}

#[test]
fn spirv_member_decoration_past_the_struct() {
    let mut b = good();
    let w = &mut b.kernels[RAMP_V as usize].spirv;
    let at = find(w, OP_MEMBER_DECORATE, |_| true);
    w[at + 2] = 3;
    assert_refused(b, &["kernel @ramp", "names member 3 of", "a struct of 1"]);
}

#[test]
fn spirv_access_chain_index_past_the_struct() {
    let mut b = good();
    // `%c0`, the index every access chain uses for the block's one member, becomes 5.
    let w = &mut b.kernels[RAMP_V as usize].spirv;
    let at = find(w, OP_CONSTANT, |o| o[2] == 0);
    w[at + 3] = 5;
    assert_refused(b, &["kernel @ramp", "access chain", "selects member 5", "a struct of 1"]);
}

#[test]
fn spirv_entry_point_missing_or_not_compute() {
    let mut b = good();
    b.kernels[RAMP_V as usize].entry = "other".into();
    assert_refused(b, &["kernel @ramp", "no GLCompute entry point named `other`"]);
    let mut b = good();
    let w = &mut b.kernels[RAMP_V as usize].spirv;
    let at = find(w, OP_ENTRY_POINT, |_| true);
    w[at + 1] = 0; // Vertex
    assert_refused(b, &["kernel @ramp", "entry point `main` has execution model 0, not GLCompute"]);
}

#[test]
fn workgroup_size_beyond_portable_limits() {
    // LocalSize 1024 1024 64 in the SPIR-V and in the bundle (they agree): refused by size.
    let mut b = good();
    let k = &mut b.kernels[RAMP_V as usize];
    let at = find(&k.spirv, OP_EXECUTION_MODE, |o| o[1] == 17);
    k.spirv[at + 3..at + 6].copy_from_slice(&[1024, 1024, 64]);
    k.workgroup_size = [1024, 1024, 64];
    assert_refused(b, &["kernel @ramp: workgroup_size [1024, 1024, 64] outside the portable limits"]);
}

#[test]
fn spirv_instruction_past_the_end_and_ids_past_the_bound() {
    let mut b = good();
    let w = &mut b.kernels[RAMP_V as usize].spirv;
    let last = w.len() - 1; // OpFunctionEnd, one word
    w[last] = (5 << 16) | 56;
    assert_refused(b, &["kernel @ramp", "runs past the end"]);
    let mut b = good();
    b.kernels[RAMP_V as usize].spirv[3] = 4;
    assert_refused(b, &["kernel @ramp", "not in 1..4 (the header's bound)"]);
}

/// Found by the `run_bundle` fuzz target: a bound of 2^31 - 512 passed every other check
/// and crashed llvmpipe inside `vkCreateComputePipelines`.
#[test]
fn spirv_id_bound_above_the_universal_limit() {
    let mut b = good();
    b.kernels[RAMP_V as usize].spirv[3] = 2_147_483_136;
    assert_refused(b, &["kernel @ramp", "id bound 2147483136 is above SPIR-V's limit of 4194303"]);
    // The limit itself is allowed.
    let mut b = good();
    b.kernels[RAMP_V as usize].spirv[3] = 0x3F_FFFF;
    assert!(cmdgraph_executor::load::check(b).is_ok(), "a bound at the limit loads");
}

#[test]
fn layout_value_field_overlapping_a_buffer_field() {
    let mut b = good();
    // @scale: %in at 32, %out at 40 (offset and count words), %s at 48; %s onto %out's count.
    b.kernels[SCALE_V as usize].layout.fields[2].offset = 44;
    assert_refused(b, &["kernel @scale: field 1 and field 2 overlap at byte 44", "(variant 2)"]);
}

#[test]
fn layout_field_misaligned_or_past_the_block() {
    let mut b = good();
    b.kernels[SCALE_V as usize].layout.fields[2].offset = 46;
    assert_refused(b, &["kernel @scale", "field 2 (%s) at offset 46", "not aligned to 4"]);
    let mut b = good();
    b.kernels[SCALE_V as usize].layout.fields[2].offset = 52;
    assert_refused(b, &["kernel @scale", "field 2 (%s) at offset 52 (4 bytes) ends past the block of 52 bytes"]);
}

#[test]
fn layout_swapped_buffer_slots() {
    let mut b = good();
    let f = &mut b.kernels[SCALE_V as usize].layout.fields;
    let (a, c) = (f[0].kind.clone(), f[1].kind.clone());
    f[0].kind = c;
    f[1].kind = a;
    assert_refused(b, &["kernel @scale", "field 0", "does not fit parameter %in"]);
}

#[test]
fn layout_second_slot_for_one_parameter() {
    let mut b = good();
    b.kernels[RAMP_V as usize].layout.slots.push(MemorySlot::Param { param: 0, writes: true });
    assert_refused(b, &["kernel @ramp", "slot 1 (binding 2) is not the slot of field 0"]);
}

#[test]
fn loop_predicate_slot_misplaced_or_reading_no_word() {
    // @ramp's %out is a buffer of f32: not where a loop's condition word can be read.
    let mut b = good();
    b.kernels[RAMP_V as usize].layout.slots.push(MemorySlot::LoopPredicate { condition_param: 0 });
    assert_refused(b, &["kernel @ramp", "slot 1 (binding 2) reads a loop's condition through parameter 0"]);
    // @scale's %s is a value.
    let mut b = good();
    b.kernels[SCALE_V as usize].layout.slots.push(MemorySlot::LoopPredicate { condition_param: 2 });
    assert_refused(b, &["kernel @scale", "through parameter 2, which is not a buffer of u32 or i32"]);
    let mut b = good();
    let slots = &mut b.kernels[RAMP_V as usize].layout.slots;
    slots.push(MemorySlot::LoopPredicate { condition_param: 0 });
    slots.push(MemorySlot::Predicate);
    assert_refused(b, &["kernel @ramp", "slot 1 (binding 2) is a predicate but not the last slot"]);
}

#[test]
fn items_per_invocation_out_of_range() {
    let mut b = good();
    b.kernels[RAMP_V as usize].items_per_invocation = 1 << 31;
    assert_refused(b, &["kernel @ramp: items_per_invocation 2147483648", "(variant 1)"]);
    let mut b = good();
    b.kernels[RAMP_V as usize].items_per_invocation = 3;
    assert_refused(b, &["items_per_invocation 3"]);
}

#[test]
fn launch_table_names_a_missing_node() {
    let mut b = good();
    b.graphs[0].launches[0].node = "nope".into();
    assert_refused(b, &["@g: launches[0]", "node %nope is not in the graph"]);
}

#[test]
fn launch_table_gives_another_kernels_variant() {
    let mut b = good();
    b.graphs[0].launches[1].kernel = ADD2_V;
    assert_refused(b, &["@g: launches[1]", "%m runs @scale, but variant 0 is one of @add2"]);
    let mut b = good();
    b.graphs[0].launches[1].kernel = 99;
    assert_refused(b, &["@g: launches[1]", "variant 99 of 3 compiled kernels"]);
}

#[test]
fn launch_table_duplicate_or_alternative_of_a_kernel_node() {
    let mut b = good();
    b.graphs[0].launches[2].node = "k".into();
    assert_refused(b, &["@g: launches[2]", "second entry for %k"]);
    let mut b = good();
    b.graphs[0].launches[0].alternative = Some(0);
    assert_refused(b, &["@g: launches[0]", "alternative 0 of %k, which is not a dynamic node"]);
}

#[test]
fn memory_plan_offset_outside_the_pool() {
    let mut b = good();
    b.graphs[0].memory.offsets[2].1 = 512;
    assert_refused(b, &["@g: memory plan", "%v at offset 512 (256 bytes) ends past the pool of 512 bytes"]);
}

#[test]
fn memory_plan_offset_misaligned() {
    let mut b = good();
    b.graphs[0].memory.offsets[2].1 = 260;
    assert_refused(b, &["@g: memory plan", "%v at offset 260, not a multiple of the alignment 256"]);
}

#[test]
fn memory_plan_names_an_allocation_twice_or_another_node() {
    let mut b = good();
    b.graphs[0].memory.offsets[1].0 = "t".into();
    assert_refused(b, &["@g: memory plan", "offsets[1] places %t a second time"]);
    let mut b = good();
    b.graphs[0].memory.offsets[1].0 = "k".into();
    assert_refused(b, &["@g: memory plan", "offsets[1] names %k, not an async_malloc"]);
}

#[test]
fn memory_plan_overlapping_live_allocations() {
    let mut b = good();
    // %v is unordered with %t and %u: it cannot share their bytes.
    b.graphs[0].memory.offsets[2].1 = 0;
    assert_refused(b, &["@g: memory plan", "%v [0, 256)", "overlap", "both can be live at once"]);
    // A partial overlap is found too.
    let mut b = good();
    b.graphs[0].memory.size = 768;
    b.graphs[0].memory.alignment = 128;
    b.graphs[0].memory.offsets[2].1 = 128;
    assert_refused(b, &["@g: memory plan", "%v [128, 384)", "both can be live at once"]);
}

#[test]
fn memory_plan_zero_init_allocation_shares_bytes() {
    let ir = format!(
        "{KERNELS_IR}{}",
        GRAPH.replace("%u = async_malloc f32[64] device", "%u = async_malloc f32[64] device zero_init")
    );
    let mut b = good();
    b.source = ir.clone();
    b.optimized = ir;
    assert_refused(b, &["@g: memory plan", "a zero_init allocation shares no bytes"]);
}

#[test]
fn spirv_push_constant_variable() {
    let mut b = good();
    // An unused push-constant block added to @ramp, built so that spirv-val accepts it
    // (`Block` struct with an explicit offset; unused, so not required in the entry point's
    // interface): the pipeline layout has no push-constant range, so only the loader's own
    // check stands between it and the driver.
    let w = &mut b.kernels[RAMP_V as usize].spirv;
    let bound = w[3];
    let (pc_type, pc_ptr, pc_var) = (bound, bound + 1, bound + 2);
    w[3] = bound + 3;
    let uint = w[find(w, OP_TYPE_INT, |o| o[1] == 32 && o[2] == 0) + 1];
    // Types and the variable go right before the first function (after every type and
    // global, %uint included), the decorations before the first decoration; the later
    // position first, so that the earlier one stays where it was found.
    let globals = [
        op(OP_TYPE_STRUCT, &[pc_type, uint]),
        op(OP_TYPE_POINTER, &[pc_ptr, STORAGE_PUSH_CONSTANT, pc_type]),
        op(OP_VARIABLE, &[pc_ptr, pc_var, STORAGE_PUSH_CONSTANT]),
    ]
    .concat();
    let at = find(w, OP_FUNCTION, |_| true);
    w.splice(at..at, globals);
    let decorations = [op(OP_DECORATE, &[pc_type, BLOCK]), op(OP_MEMBER_DECORATE, &[pc_type, 0, OFFSET, 0])].concat();
    let at = find(w, OP_DECORATE, |_| true);
    w.splice(at..at, decorations);
    assert_valid_spirv(w);
    assert_refused(
        b,
        &[
            "kernel @ramp",
            &format!("%{pc_var} is a PushConstant variable; the pipeline layout has no push constants"),
            "(variant 1)",
        ],
    );
}

/// `Executor::new` checks each variant's `workgroup_size` against the device's own
/// `maxComputeWorkGroupSize` and `maxComputeWorkGroupInvocations` before creating pipelines.
/// The test device, llvmpipe, has limits [1024, 1024, 1024] and 1024: at or above the
/// portable ones the loader checks ([1024, 1024, 64], 1024 in all), so no size the loader
/// accepts exceeds them. The check is reached instead by changing the checked bundle
/// (`Loaded::bundle` is public, so an embedding application can do the same) to the
/// smallest sizes past llvmpipe's limits: 41x25x1 (1025 invocations, every dimension
/// within) and 1x1x1025 (the z dimension, past the portable 64 as well).
#[test]
fn workgroup_size_beyond_the_devices_limits() {
    for wg in [[41, 25, 1], [1, 1, 1025]] {
        let mut loaded = load::check(good()).expect("the untampered bundle loads");
        let k = &mut loaded.bundle.kernels[RAMP_V as usize];
        // The SPIR-V's LocalSize agrees, as the loader requires of a bundle it reads.
        let at = find(&k.spirv, OP_EXECUTION_MODE, |o| o[1] == LOCAL_SIZE);
        k.spirv[at + 3..at + 6].copy_from_slice(&wg);
        k.workgroup_size = wg;
        match Executor::new(loaded, &ContextOptions { validation: true, ..Default::default() }) {
            Ok(_) => panic!("workgroup_size {wg:?} passed the device's limits"),
            Err(e) => {
                assert!(matches!(e, ExecError::Bundle(_)), "{e:?}");
                let e = e.to_string();
                let want = format!("kernel @ramp: workgroup_size {wg:?} exceeds the device's maxComputeWorkGroupSize");
                for p in [want.as_str(), "maxComputeWorkGroupInvocations", "(variant 1)"] {
                    assert!(e.contains(p), "`{p}` not in: {e}");
                }
            }
        }
    }
}

/// A second graph with two dynamic command groups, one of a kernel and one of a host task
/// (the verifier requires one group's alternatives to be all kernels or all host tasks).
const DCG_GRAPH: &str = "
graph @h {
  dcg %pick active(0) {
    kernel @ramp range(64) args(@x)
  }
  dcg %hosts active(0) {
    host_task \"seen\" access(@x read)
  }
  %d = dynamic %pick
  %e = dynamic %hosts after(%d)
}
";

/// [`good`] with the graph @h of [`DCG_GRAPH`] and its plan, whose launch table is `launches`.
fn with_dcg(launches: Vec<LaunchVariant>) -> Bundle {
    let mut b = good();
    b.source = format!("{KERNELS_IR}{GRAPH}{DCG_GRAPH}");
    b.optimized = b.source.clone();
    b.graphs.push(GraphPlan {
        name: "h".into(),
        segments: vec![],
        memory: PoolPlan { size: 0, alignment: 256, offsets: vec![], report: String::new() },
        origins: vec![],
        launches,
    });
    b
}

#[test]
fn plan_for_an_unknown_graph_or_a_second_plan_for_one_graph() {
    let mut b = good();
    b.graphs[0].name = "nope".into();
    assert_refused(b, &["plan for unknown graph @nope"]);
    // Two plans for @g: which one finalize would use is not the bundle's to leave open.
    let mut b = good();
    let second = b.graphs[0].clone();
    b.graphs.push(second);
    assert_refused(b, &["two plans for graph @g"]);
}

#[test]
fn launch_table_entries_for_a_dynamic_node() {
    let entry = |node: &str, alternative| LaunchVariant { node: node.into(), alternative, kernel: RAMP_V };
    // Positive control: %d's alternative 0 (the kernel) with a variant of @ramp loads.
    if let Err(e) = load::check(with_dcg(vec![entry("d", Some(0))])) {
        panic!("the dcg's kernel alternative does not load: {e}");
    }
    assert_refused(with_dcg(vec![entry("e", Some(0))]), &["@h: launches[0]", "alternative 0 of %e is not a kernel"]);
    assert_refused(with_dcg(vec![entry("d", Some(1))]), &["@h: launches[0]", "%d has no alternative 1"]);
    assert_refused(
        with_dcg(vec![entry("d", None)]),
        &["@h: launches[0]", "%d is a dynamic node: the entry needs an alternative"],
    );
}

#[test]
fn launch_table_names_a_node_that_is_not_a_kernel() {
    let mut b = good();
    b.graphs[0].launches[0].node = "c".into(); // a memcpy
    assert_refused(b, &["@g: launches[0]", "%c is not a kernel node"]);
}

#[test]
fn memory_plan_alignment_not_a_power_of_two() {
    for alignment in [0, 3, 384] {
        let mut b = good();
        b.graphs[0].memory.alignment = alignment;
        assert_refused(b, &["@g: memory plan", &format!("alignment {alignment} is not a power of two")]);
    }
}

/// A graph of `n` allocations in one chain (`%a{i}` freed before `%a{i+1}` is allocated),
/// `%a{i}` of 256·(i+1) bytes, all at offset 0: a correct plan (every pair is ordered), in
/// which every allocation overlaps every earlier one, so the lifetime check searches from
/// each earlier allocation's free to each later malloc: about n³/3 visits in all.
fn chain(n: usize) -> Bundle {
    let mut graph = String::from("graph @e {\n");
    for i in 0..n {
        let after = if i == 0 { String::new() } else { format!(" after(%f{})", i - 1) };
        graph += &format!("  %a{i} = async_malloc f32[{}] device{after}\n", 64 * (i + 1));
        graph += &format!("  %f{i} = async_free %a{i} after(%a{i})\n");
    }
    graph += "}\n";
    let plan = GraphPlan {
        name: "e".into(),
        segments: vec![],
        memory: PoolPlan {
            size: 256 * n as u64,
            alignment: 256,
            offsets: (0..n).map(|i| (format!("a{i}"), 0)).collect(),
            report: String::new(),
        },
        origins: vec![],
        launches: vec![],
    };
    bundle(&format!("{KERNELS_IR}{graph}"), vec![], vec![plan])
}

/// The lifetime check's work budget (docs/abi.md: 64 × (nodes + edges) + 10^6 visits): a
/// plan that needs more is refused as too entangled to check rather than stalling the load.
/// 256 chained allocations need about 5.6·10^6 visits against a budget of about 1.07·10^6;
/// 32 of them (about 10^4) load, so the refusal is the budget's and not a conflict.
#[test]
fn memory_plan_too_entangled_for_the_budget() {
    if let Err(e) = load::check(chain(32)) {
        panic!("a small chain of the same shape does not load: {e}");
    }
    assert_refused(
        chain(256),
        &["@e: memory plan", "too many overlapping allocations to check within the loader's budget"],
    );
}

/// The executor's error kinds: SPIR-V problems are `Spirv`, the rest `Bundle`.
#[test]
fn error_kinds() {
    let mut b = good();
    b.kernels[RAMP_V as usize].entry = "other".into();
    assert!(matches!(load::check(b), Err(ExecError::Spirv { .. })));
    let mut b = good();
    b.graphs[0].launches[0].node = "nope".into();
    assert!(matches!(load::check(b), Err(ExecError::Bundle(_))));
}
