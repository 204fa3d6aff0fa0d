//! The loader validates SPIR-V in process (SPIRV-Tools, Vulkan 1.3) after its structural
//! walk: modules that are well-formed word streams but not valid SPIR-V are refused before
//! any Vulkan call, naming the kernel and the validator's reason.

mod common;

use cmdgraph_executor::{load, ExecError};
use cmdgraph_ir::bundle::Bundle;
use common::*;

const IR_TAIL: &str =
    "usm @x : f32[16]\nusm @y : f32[16]\ngraph @g {\n  %k = kernel @scale range(16) args(@x, @y, 3.0)\n}\n";

const OP_ACCESS_CHAIN: u32 = 65;
const OP_FMUL: u32 = 133;

fn scale_bundle() -> Bundle {
    bundle(&format!("{KERNELS_IR}\n{IR_TAIL}"), vec![], vec![])
}

/// Word index of the first instruction with `opcode` in kernel `@scale`'s module.
fn find(b: &Bundle, opcode: u32) -> usize {
    let words = &b.kernels.iter().find(|k| k.kernel == "scale").unwrap().spirv;
    let mut at = 5;
    while at < words.len() {
        if words[at] & 0xffff == opcode {
            return at;
        }
        at += (words[at] >> 16) as usize;
    }
    panic!("no opcode {opcode} in @scale");
}

fn scale_words(b: &mut Bundle) -> &mut Vec<u32> {
    &mut b.kernels.iter_mut().find(|k| k.kernel == "scale").unwrap().spirv
}

fn refused(b: Bundle) -> String {
    match load::check(b) {
        Err(e @ ExecError::Spirv { .. }) => {
            let m = e.to_string();
            assert!(m.contains("@scale") || m.contains("scale"), "{m}");
            m
        }
        Err(e) => panic!("refused, but not as SPIR-V: {e:?}"),
        Ok(_) => panic!("the module was accepted"),
    }
}

#[test]
fn the_unmodified_module_is_accepted() {
    load::check(scale_bundle()).expect("a compiled module passes validation");
}

#[test]
fn an_access_chain_operand_id_of_zero_is_refused() {
    // The `run_bundle` fuzz target's crash: this reached vkCreateComputePipelines and
    // segfaulted llvmpipe while the loader only walked the words.
    let mut b = scale_bundle();
    let at = find(&b, OP_ACCESS_CHAIN);
    scale_words(&mut b)[at + 3] = 0;
    let m = refused(b);
    assert!(m.contains("SPIR-V validation (Vulkan 1.3)"), "{m}");
}

#[test]
fn an_operand_nothing_defines_is_refused() {
    let mut b = scale_bundle();
    let at = find(&b, OP_FMUL);
    let words = scale_words(&mut b);
    let fresh = words[3];
    words[3] += 1;
    words[at + 4] = fresh;
    let m = refused(b);
    assert!(m.contains("has not been defined"), "{m}");
}

#[test]
fn an_operand_of_the_wrong_type_is_refused() {
    // OpFMul's operand replaced by its own result type id: defined, but a type, not a value.
    let mut b = scale_bundle();
    let at = find(&b, OP_FMUL);
    let words = scale_words(&mut b);
    words[at + 4] = words[at + 1];
    let m = refused(b);
    assert!(m.contains("SPIR-V validation (Vulkan 1.3)"), "{m}");
}

#[test]
fn a_truncated_function_is_refused() {
    // Dropping the trailing OpFunctionEnd keeps the word stream well-formed instruction by
    // instruction; the walk requires it last, so this is the walk's refusal.
    let mut b = scale_bundle();
    scale_words(&mut b).pop();
    refused(b);
}
