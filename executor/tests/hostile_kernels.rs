//! Hostile kernels (issue 28): SPIR-V that `spirv-val` accepts but that crashed llvmpipe or
//! reached the driver with what only the validation layer refuses. Each test edits the words
//! of a good bundle's kernel, checks the loader refuses it naming the kernel and what is
//! wrong, and runs a near miss on llvmpipe with validation on.

mod common;

use cmdgraph_executor::load;
use cmdgraph_executor::spirv::MAX_INVOCATION_MEMORY;
use cmdgraph_ir::bundle::Bundle;
use common::*;

const GRAPH: &str = "
usm @x : f32[64]
usm @y : f32[64]
graph @g {
  %k = kernel @ramp range(64) args(@x)
  %m = kernel @scale range(64) args(@x, @y, 2.5) after(%k)
}
";

/// Index of each kernel in `common::bundle`'s list.
const RAMP_V: usize = 1;
const SCALE_V: usize = 2;

fn good() -> Bundle {
    bundle(&format!("{KERNELS_IR}{GRAPH}"), vec![], vec![])
}

const OP_NAME: u32 = 5;
const OP_TYPE_INT: u32 = 21;
const OP_TYPE_FLOAT: u32 = 22;
const OP_TYPE_VECTOR: u32 = 23;
const OP_TYPE_ARRAY: u32 = 28;
const OP_TYPE_STRUCT: u32 = 30;
const OP_TYPE_POINTER: u32 = 32;
const OP_CONSTANT: u32 = 43;
const OP_FUNCTION: u32 = 54;
const OP_VARIABLE: u32 = 59;
const OP_LOAD: u32 = 61;
const OP_STORE: u32 = 62;
const OP_ACCESS_CHAIN: u32 = 65;
const OP_DECORATE: u32 = 71;
const OP_LABEL: u32 = 248;
const STORAGE_PRIVATE: u32 = 6;
const STORAGE_FUNCTION: u32 = 7;
const MEMORY_ALIGNED: u32 = 2;

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

/// One instruction: the word count and opcode word, then `operands`.
fn op(opcode: u32, operands: &[u32]) -> Vec<u32> {
    let mut w = vec![((operands.len() as u32 + 1) << 16) | opcode];
    w.extend_from_slice(operands);
    w
}

/// `OpName %id "name"`.
fn name(id: u32, name: &str) -> Vec<u32> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.resize(name.len() / 4 * 4 + 4, 0);
    let mut operands = vec![id];
    operands.extend(bytes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
    op(OP_NAME, &operands)
}

/// `n` fresh ids of `words` (the header's bound grows).
fn fresh<const N: usize>(words: &mut [u32]) -> [u32; N] {
    let first = words[3];
    words[3] += N as u32;
    std::array::from_fn(|i| first + i as u32)
}

/// Asserts `words` is valid SPIR-V for Vulkan 1.3 to `spirv-val`: what the loader refuses
/// here, the validator alone would let through to the driver.
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

fn refusal(b: Bundle) -> String {
    match load::check(b) {
        Ok(_) => panic!("the tampered bundle loaded"),
        Err(e) => e.to_string(),
    }
}

fn assert_contains(e: &str, parts: &[&str]) {
    for p in parts {
        assert!(e.contains(p), "`{p}` not in: {e}");
    }
}

/// Runs `b` on llvmpipe with validation and checks @x is the ramp and @y 2.5 times it.
fn runs_correctly(b: Bundle) {
    let mut ex = executor(b);
    let e = ex.finalize("g").unwrap();
    ex.run(e).unwrap();
    let ramp: Vec<f32> = (0..64).map(|i| i as f32).collect();
    assert_eq!(ex.read_as::<f32>("x").unwrap(), ramp);
    assert_eq!(ex.read_as::<f32>("y").unwrap(), ramp.iter().map(|v| v * 2.5).collect::<Vec<_>>());
    no_messages(&ex);
}

/// @ramp with a `Function` array of `len` floats named `%scratch`, written at the output's
/// index with the value the kernel stores, so the driver cannot drop it.
fn ramp_with_function_array(len: u32) -> Bundle {
    let mut b = good();
    let w = &mut b.kernels[RAMP_V].spirv;
    let [len_id, arr, ptr_arr, ptr_elem, var, elem] = fresh::<6>(w);
    let uint = w[find(w, OP_TYPE_INT, |o| o[1] == 32) + 1];
    let float = w[find(w, OP_TYPE_FLOAT, |_| true) + 1];
    // The kernel's one store: `OpStore %pout %r`, %pout indexing the buffer with %x0.
    let store = find(w, OP_STORE, |_| true);
    let (pout, r) = (w[store + 1], w[store + 2]);
    let chain = find(w, OP_ACCESS_CHAIN, |o| o[1] == pout);
    let index = w[chain + (w[chain] >> 16) as usize - 1];
    // Later positions first, so that the earlier ones stay where they were found.
    let write = [op(OP_ACCESS_CHAIN, &[ptr_elem, elem, var, index]), op(OP_STORE, &[elem, r])].concat();
    w.splice(store..store, write);
    let function = find(w, OP_FUNCTION, |_| true);
    let label = find(w, OP_LABEL, |_| true);
    w.splice(label + 2..label + 2, op(OP_VARIABLE, &[ptr_arr, var, STORAGE_FUNCTION]));
    let types = [
        op(OP_CONSTANT, &[uint, len_id, len]),
        op(OP_TYPE_ARRAY, &[arr, float, len_id]),
        op(OP_TYPE_POINTER, &[ptr_arr, STORAGE_FUNCTION, arr]),
        op(OP_TYPE_POINTER, &[ptr_elem, STORAGE_FUNCTION, float]),
    ]
    .concat();
    w.splice(function..function, types);
    let decorate = find(w, OP_DECORATE, |_| true);
    w.splice(decorate..decorate, name(var, "scratch"));
    assert_valid_spirv(w);
    b
}

/// The repro: a 2^30-float `Function` array, a few words of SPIR-V, crashed
/// pipeline creation on llvmpipe (a worker thread's stack) or exhausted memory. The loader
/// refuses it, naming the kernel, the variable and its function; at the bound it runs.
#[test]
fn function_array_of_2_30_floats_is_refused_at_load() {
    let e = refusal(ramp_with_function_array(1 << 30));
    assert_contains(
        &e,
        &[
            "kernel @ramp: invalid SPIR-V: 4294967296 bytes of Function and Private memory per invocation",
            &format!("more than the {MAX_INVOCATION_MEMORY} a bundle may declare"),
            "the largest is the Function variable %scratch (id ",
            "of function %",
            "4294967296 bytes",
            "(variant 1)",
        ],
    );
    let e = refusal(ramp_with_function_array((MAX_INVOCATION_MEMORY / 4) as u32 + 1));
    assert_contains(&e, &[&format!("{} bytes of Function and Private memory", MAX_INVOCATION_MEMORY + 4)]);
    // Near miss: 64 KiB per invocation makes its pipeline and runs on llvmpipe.
    runs_correctly(ramp_with_function_array((MAX_INVOCATION_MEMORY / 4) as u32));
}

/// @scale with a module-scope `Private` variable `%table` of type
/// `array<array<struct { f32, vec3<f32> }, inner>, outer>` (32 bytes per struct: the
/// 3-vector aligned to 16), and an `OpName` on nothing else.
fn scale_with_private_table(inner: u32, outer: u32) -> Bundle {
    let mut b = good();
    let w = &mut b.kernels[SCALE_V].spirv;
    let [c_in, c_out, v3, st, arr_in, arr_out, ptr, var] = fresh::<8>(w);
    let uint = w[find(w, OP_TYPE_INT, |o| o[1] == 32) + 1];
    let float = w[find(w, OP_TYPE_FLOAT, |_| true) + 1];
    let function = find(w, OP_FUNCTION, |_| true);
    let globals = [
        op(OP_CONSTANT, &[uint, c_in, inner]),
        op(OP_CONSTANT, &[uint, c_out, outer]),
        op(OP_TYPE_VECTOR, &[v3, float, 3]),
        op(OP_TYPE_STRUCT, &[st, float, v3]),
        op(OP_TYPE_ARRAY, &[arr_in, st, c_in]),
        op(OP_TYPE_ARRAY, &[arr_out, arr_in, c_out]),
        op(OP_TYPE_POINTER, &[ptr, STORAGE_PRIVATE, arr_out]),
        op(OP_VARIABLE, &[ptr, var, STORAGE_PRIVATE]),
    ]
    .concat();
    w.splice(function..function, globals);
    let decorate = find(w, OP_DECORATE, |_| true);
    w.splice(decorate..decorate, name(var, "table"));
    assert_valid_spirv(w);
    b
}

/// Arrays of arrays of structs are sized as the driver lays them out: 32-byte structs, so
/// 64 x 32 of them are the bound exactly and 64 x 33 are past it.
#[test]
fn private_arrays_of_arrays_of_structs_are_counted() {
    let e = refusal(scale_with_private_table(32, 65));
    assert_contains(
        &e,
        &[
            "kernel @scale: invalid SPIR-V: 66560 bytes of Function and Private memory per invocation",
            "the largest is the Private variable %table (id ",
            "66560 bytes: put large arrays in a buffer or in work-group memory",
            "(variant 2)",
        ],
    );
    assert!(!e.contains("of function"), "a Private variable belongs to no function: {e}");
    load::check(scale_with_private_table(32, 64)).expect("64 KiB of Private memory loads");
}

/// Adds the memory operand `Aligned align` to the first `opcode` of kernel `v` of `b`
/// without memory operands: an `OpStore`, or an `OpLoad` of an `f32` (from a buffer).
fn add_aligned(b: &mut Bundle, v: usize, opcode: u32, align: u32) {
    let w = &mut b.kernels[v].spirv;
    let float = w[find(w, OP_TYPE_FLOAT, |_| true) + 1];
    let at = find(w, opcode, |o| if opcode == OP_LOAD { o.len() == 3 && o[0] == float } else { o.len() == 2 });
    let count = (w[at] >> 16) as usize;
    w[at] += 2 << 16;
    w.splice(at + count..at + count, [MEMORY_ALIGNED, align]);
    assert_valid_spirv(w);
}

/// [`good`] with `Aligned align` added to the first `opcode` of kernel `v` ([`add_aligned`]).
fn aligned(v: usize, opcode: u32, align: u32) -> Bundle {
    let mut b = good();
    add_aligned(&mut b, v, opcode, align);
    b
}

/// SPIR-V requires an `Aligned` literal to be a power of two; Debian 12's SPIRV-Tools does
/// not check it, and `Aligned 3` reached the driver, refused only by the validation layer.
/// The loader refuses it on stores and loads; a power of two that holds runs.
#[test]
fn aligned_memory_operand_not_a_power_of_two_is_refused_at_load() {
    let e = refusal(aligned(RAMP_V, OP_STORE, 3));
    assert_contains(
        &e,
        &["kernel @ramp: invalid SPIR-V: OpStore at word ", "has the memory operand Aligned 3, not a power of two"],
    );
    assert_contains(&e, &["(variant 1)"]);
    let e = refusal(aligned(SCALE_V, OP_LOAD, 12));
    assert_contains(&e, &["kernel @scale: invalid SPIR-V: OpLoad at word ", "Aligned 12, not a power of two"]);
    let e = refusal(aligned(RAMP_V, OP_STORE, 0));
    assert_contains(&e, &["Aligned 0, not a power of two"]);
    // Near miss: every f32 access is 4-byte aligned.
    let mut b = aligned(RAMP_V, OP_STORE, 4);
    add_aligned(&mut b, SCALE_V, OP_LOAD, 4);
    add_aligned(&mut b, SCALE_V, OP_STORE, 4);
    runs_correctly(b);
}
