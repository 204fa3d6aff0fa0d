//! The copy kernel (executor/src/vk/copy.rs) against the reference interpreter, on llvmpipe
//! with validation (synchronization included) on: `memcpy` nodes of 16- and 4-byte alignment,
//! between user memory and graph allocations, next to kernels that produce and consume their
//! bytes, a pattern fill copied from the pattern buffer, byte-granular copies (the byte
//! kernel) beside independent copies that write the neighbouring bytes, and what it must leave
//! to `vkCmdCopyBuffer` (overlapping copies). Each choice is counted through
//! `Executor::copy_paths`, so the kernel path really runs. Also: the checked-in SPIR-V is its
//! assembly, assembled, and passes `spirv-val`.

mod common;

use cmdgraph_executor::{BarrierPolicy, CopyPath, CopyPolicy, RecordOptions, VulkanObjects};
use cmdgraph_interp::Interpreter;
use common::*;
use std::process::Command;

const N: usize = 20_011;

/// Every kind of copy in one graph. `%t` is a graph allocation the scale kernel writes and a
/// copy reads; `%v4` (16-byte aligned) and `%v1` (4-byte aligned) take the kernel; `%odd` (byte
/// offsets) takes the byte kernel, and `%plain` copies what it wrote; `%pat` fills f64s, a pattern
/// `vkCmdFillBuffer` cannot repeat; `%after` reads what `%v4` wrote; `%ends` (offsets 4 and
/// 20: the same remainder modulo 16, 70 004 bytes) runs as 16-byte elements between 4-byte
/// ends, three dispatches side by side, into memory whose other bytes stay.
fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @a : f32[{N}]
usm @b : f32[{N}]
usm @c : f32[{N}]
usm @d : f32[{N}]
usm @e : f32[{N}]
usm @f : f32[{N}]
usm @wide : f64[999]

graph @g {{
  %t = async_malloc f32[{N}] device
  %k = kernel @scale range({N}) args(@a, %t, 3.0) after(%t)
  %v4 = memcpy @b + 16, %t + 32, 64000 after(%k)
  %v1 = memcpy @c + 4, @a + 8, 60000
  %odd = memcpy @d + 1, @a + 3, 4001
  %plain = memcpy @e + 4, @d, 40000 after(%odd)
  %pat = memfill @wide + 8, 0.1 : f64, 997
  %ends = memcpy @f + 4, @a + 20, 70004
  %after = kernel @scale range({N}) args(@b, @a, 0.5) after(%v4, %v1)
  %f = async_free %t after(%v4)
}}
"
    )
}

/// Every memory object's name and bytes.
type Memories = Vec<(String, Vec<u8>)>;

/// Runs `@g` twice with random inputs under `options`; returns every memory object's bytes
/// and the copy paths, after checking there were no validation messages.
fn run(options: RecordOptions) -> (Memories, Vec<(String, CopyPath)>, VulkanObjects) {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    ex.set_record_options(options);
    let id = ex.finalize("g").unwrap();
    let paths = ex.copy_paths(id).unwrap();
    for (i, name) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
        ex.bind(name, &f32_bytes(&random(N, 40 + i as u64))).unwrap();
    }
    ex.run(id).unwrap();
    ex.run(id).unwrap();
    ex.wait(id).unwrap();
    let out = ["a", "b", "c", "d", "e", "f", "wide"].iter().map(|n| (n.to_string(), ex.read(n).unwrap())).collect();
    no_messages(&ex);
    (out, paths, ex.vulkan_objects(id).unwrap())
}

fn interpreted() -> Memories {
    let ir = ir();
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    for (i, name) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
        it.bind(name, &f32_bytes(&random(N, 40 + i as u64))).unwrap();
    }
    let id = it.finalize("g").unwrap();
    it.run(id).unwrap();
    it.run(id).unwrap();
    ["a", "b", "c", "d", "e", "f", "wide"].iter().map(|n| (n.to_string(), it.read(n).unwrap().to_vec())).collect()
}

fn assert_same(got: &[(String, Vec<u8>)], want: &[(String, Vec<u8>)], what: &str) {
    for ((name, g), (_, w)) in got.iter().zip(want) {
        assert!(g == w, "{what}: @{name} differs from the interpreter");
    }
}

#[test]
fn kernel_copies_match_the_interpreter_and_each_copy_takes_the_path_it_can() {
    let want = interpreted();
    let (got, paths, objects) = run(RecordOptions { copies: CopyPolicy::Shader, ..Default::default() });
    assert_same(&got, &want, "copy kernel");
    let path = |n: &str| paths.iter().find(|(p, _)| p == n).map(|(_, p)| *p);
    assert_eq!(path("v4"), Some(CopyPath::Kernel { elem: 16 }));
    assert_eq!(path("v1"), Some(CopyPath::Kernel { elem: 4 }));
    assert_eq!(path("odd"), Some(CopyPath::Kernel { elem: 1 }), "byte offsets take the byte kernel");
    assert_eq!(path("plain"), Some(CopyPath::Kernel { elem: 4 }));
    assert!(matches!(path("pat"), Some(CopyPath::Kernel { .. })), "{paths:?}");
    assert_eq!(path("ends"), Some(CopyPath::KernelWithEnds), "same remainder modulo 16, 4-byte aligned");
    assert_eq!(paths.len(), 6, "{paths:?}");
    // One set per pair of windows (%v4, %v1, %odd, %plain, %pat, and %ends' three parts),
    // beside the two kernel launches' sets. Three more pipelines (llvmpipe stores bytes).
    assert_eq!(objects.descriptor_sets, 2 + 5 + 3, "{objects:?}");
    assert_eq!(objects.pipelines, 3 + 3, "{objects:?}");
}

#[test]
fn one_group_loops_over_every_element_with_the_same_result() {
    // One work-group of 256 invocations for 16 000 elements: each invocation takes about
    // fifteen steps of four elements and then the tail, the grid-stride loop a big copy on a
    // GPU runs (more than 65 535 groups' worth), here at a size llvmpipe runs quickly.
    let want = interpreted();
    let (got, paths, _) = run(RecordOptions { copies: CopyPolicy::Shader, copy_groups: 1, ..Default::default() });
    assert_same(&got, &want, "one group");
    let kernel = |p: &CopyPath| matches!(p, CopyPath::Kernel { .. } | CopyPath::KernelWithEnds);
    assert_eq!(paths.iter().filter(|(_, p)| kernel(p)).count(), 6);
}

#[test]
fn transfer_policy_and_auto_on_a_cpu_device_use_the_copy_command() {
    let want = interpreted();
    for copies in [CopyPolicy::Transfer, CopyPolicy::Auto] {
        let (got, paths, objects) = run(RecordOptions { copies, ..Default::default() });
        assert_same(&got, &want, &format!("{copies:?}"));
        assert!(paths.iter().all(|(_, p)| *p == CopyPath::Transfer), "{copies:?}: {paths:?}");
        assert_eq!(objects.pipelines, 3, "{copies:?}: no copy kernels made");
    }
}

/// The copy kernels and the conditional nodes' predicate kernel (vk/predicate.rs): each
/// checked-in module is its assembly, assembled, and passes `spirv-val`.
#[test]
fn the_checked_in_spirv_is_its_assembly_and_valid() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/vk");
    let tmp = tempfile::tempdir().unwrap();
    let modules = cmdgraph_executor::vk::copy::spirv()
        .map(|(name, bytes)| (src.join("copy"), name, bytes))
        .into_iter()
        .chain([(src.join("predicate"), "pred", cmdgraph_executor::vk::predicate::spirv())]);
    for (dir, name, bytes) in modules {
        let out = tmp.path().join(format!("{name}.spv"));
        let asm = Command::new("spirv-as")
            .args(["--target-env", "vulkan1.1"])
            .arg(dir.join(format!("{name}.spvasm")))
            .arg("-o")
            .arg(&out)
            .output()
            .expect("spirv-as runs (SPIRV-Tools, installed by scripts/setup.sh)");
        assert!(asm.status.success(), "{name}: {}", String::from_utf8_lossy(&asm.stderr));
        assert!(std::fs::read(&out).unwrap() == bytes, "{name}.spv is not {name}.spvasm assembled: re-assemble it");
        let val = Command::new("spirv-val").args(["--target-env", "vulkan1.1"]).arg(&out).output().unwrap();
        assert!(val.status.success(), "{name}: {}", String::from_utf8_lossy(&val.stderr));
    }
}

/// A fill of one graph allocation, a kernel writing another, and a kernel copy out of a
/// third, all independent in one stage: with barriers only where memory conflicts, and with
/// barriers only between stages, the validation layer (which takes a bound descriptor's whole
/// range as accessed) must see no hazard. A copy window over the whole pool failed this.
#[test]
fn a_kernel_copy_from_the_pool_does_not_touch_the_other_allocations_of_its_stage() {
    let ir = format!(
        "{KERNELS_IR}
usm @out : f32[257]

graph @g {{
  %a = async_malloc f32[257] zero_init
  %b = async_malloc f32[257]
  %c = async_malloc f32[300]
  %fill = memfill %b, 1.5 : f32, 257 after(%b)
  %ramp = kernel @ramp range(300) args(%c) after(%c)
  %copy = memcpy @out + 16, %a + 32, 912 after(%a)
  %fa = async_free %a after(%copy)
  %fb = async_free %b after(%fill)
  %fc = async_free %c after(%ramp)
}}
"
    );
    for barriers in [BarrierPolicy::Conflicts, BarrierPolicy::Stages] {
        let mut ex = executor(bundle(&ir, vec![], vec![]));
        ex.set_record_options(RecordOptions { copies: CopyPolicy::Shader, barriers, ..Default::default() });
        let id = ex.finalize("g").unwrap();
        assert_eq!(ex.copy_paths(id).unwrap(), vec![("copy".to_string(), CopyPath::Kernel { elem: 16 })]);
        ex.run(id).unwrap();
        ex.wait(id).unwrap();
        assert_eq!(ex.read_as::<f32>("out").unwrap(), vec![0.0; 257], "{barriers:?}");
        no_messages(&ex);
    }
}

/// Byte-granular copies: every pair of source and destination offsets modulo 4, lengths from
/// one byte (inside one word) to whole multiples of the kernel's four-word steps, all
/// independent in one stage and packed into one destination with gaps of 0 to 3 bytes, so
/// the neighbouring bytes of each copy belong to another copy or to nobody. Under validation
/// (synchronization included) the destination must equal the interpreter's byte for byte,
/// with one group (every invocation loops over many steps) and with as many as the copies
/// want, and every copy must take the byte kernel.
#[test]
fn byte_granular_copies_take_the_byte_kernel_and_leave_their_neighbours_alone() {
    const SRC: usize = 40_000;
    const DST: usize = 60_000;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |m: u64| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % m
    };
    let mut nodes = String::new();
    let mut at = 1u64; // destination byte offset of the next copy
    let mut count = 0;
    let mut lens: Vec<u64> = (1..=13).collect();
    lens.extend([31, 64, 1023, 4099, 16_385, 60_001 / 4]);
    for (i, len) in lens.iter().enumerate() {
        for rel in 0..4u64 {
            let src = (4 * next(((SRC as u64 * 4) - len - 8) / 4)) + (at + rel) % 4;
            if at + len + 3 > DST as u64 * 4 {
                break;
            }
            let _ = std::fmt::Write::write_fmt(
                &mut nodes,
                format_args!("  %c{i}_{rel} = memcpy @dst + {at}, @src + {src}, {len}\n"),
            );
            count += 1;
            at += len + next(4);
        }
    }
    let ir = format!(
        "{KERNELS_IR}
usm @src : f32[{SRC}]
usm @dst : f32[{DST}]

graph @g {{
{nodes}}}
"
    );
    let src = f32_bytes(&random(SRC, 7));
    let dst = f32_bytes(&random(DST, 8));
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    it.bind("src", &src).unwrap();
    it.bind("dst", &dst).unwrap();
    let id = it.finalize("g").unwrap();
    it.run(id).unwrap();
    let want = it.read("dst").unwrap().to_vec();
    assert!(want != dst, "the copies change the destination");
    for copy_groups in [1, u32::MAX] {
        let mut ex = executor(bundle(&ir, vec![], vec![]));
        ex.set_record_options(RecordOptions { copies: CopyPolicy::Shader, copy_groups, ..Default::default() });
        let id = ex.finalize("g").unwrap();
        let paths = ex.copy_paths(id).unwrap();
        assert_eq!(paths.len(), count);
        let bytes = paths.iter().filter(|(_, p)| *p == CopyPath::Kernel { elem: 1 }).count();
        // The copies whose offsets and length are all multiples of 4 take the word kernels.
        assert!(bytes >= count - 8, "{bytes} of {count} copies took the byte kernel: {paths:?}");
        ex.bind("src", &src).unwrap();
        ex.bind("dst", &dst).unwrap();
        ex.run(id).unwrap();
        ex.wait(id).unwrap();
        let got = ex.read("dst").unwrap();
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!("copy_groups {copy_groups}: byte {i} of @dst is {} where the interpreter has {}", got[i], want[i]);
        }
        no_messages(&ex);
    }
}
