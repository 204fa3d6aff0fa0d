//! Positive control of synchronization validation (issue 18, item 5). Every executor test runs
//! with the Khronos layer's synchronization validation on and fails on any message; this file
//! shows what that setup can and cannot see. On the executor's own [`Context`] (validation on,
//! messages collected) and its [`Transfers`] (one command buffer between full barriers,
//! submitted and waited for), it records pairs of commands on one buffer with no barrier
//! between them, then the same pairs with a barrier, and reads the layer's messages.
//!
//! No [`cmdgraph_executor::BarrierPolicy`] drops barriers between conflicting commands, so the
//! pairs are recorded by hand with ash (the way `peer/` records its dispatches): a compute
//! pipeline whose one storage buffer is `x[i] += 1.0`, `vkCmdFillBuffer` and
//! `vkCmdCopyBuffer` into and out of it.
//!
//! What the layer on the development machines (Debian 12, 1.3.239, llvmpipe) reports, and
//! this test asserts ([`CAUGHT`], [`MISSED`]), in one command buffer: every pair with a
//! transfer on either side (fill or copy against a dispatch, either order, and transfer
//! against transfer; read-after-write, write-after-read and write-after-write) is a
//! `SYNC-HAZARD`; two dispatches of a kernel reading and writing the same storage buffer
//! (read-after-write and write-after-write) are **not** reported. With the
//! barrier, no pair reports anything. So "zero messages" proves the executor's barriers
//! between a transfer and a kernel, and between transfers; the ones between two kernels are
//! checked by the race detector on the recorded order instead (cli/tests/vulkan_random.rs).
//! If a newer layer starts reporting dispatch-against-dispatch, the [`MISSED`] assertion
//! fails, saying so, and the pair should move to [`CAUGHT`] (and docs/executor.md be updated).
#![allow(unsafe_code)]

mod common;

use ash::vk;
use cmdgraph_executor::vk::{Context, Transfers};
use cmdgraph_executor::ContextOptions;

/// Elements of the buffer under test (one work-group of 64).
const ELEMS: u64 = 64;
const BYTES: u64 = ELEMS * 4;

/// `x[gid] += 1.0` over the storage buffer at set 0, binding 0.
const INC: &str = r#"OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %gid %buf
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %gid BuiltIn GlobalInvocationId
OpDecorate %arr ArrayStride 4
OpDecorate %S Block
OpMemberDecorate %S 0 Offset 0
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%float = OpTypeFloat 32
%v3 = OpTypeVector %uint 3
%pin = OpTypePointer Input %v3
%gid = OpVariable %pin Input
%arr = OpTypeRuntimeArray %float
%S = OpTypeStruct %arr
%ps = OpTypePointer StorageBuffer %S
%pf = OpTypePointer StorageBuffer %float
%buf = OpVariable %ps StorageBuffer
%c0 = OpConstant %uint 0
%one = OpConstant %float 1
%main = OpFunction %void None %fn
%e = OpLabel
%g = OpLoad %v3 %gid
%i = OpCompositeExtract %uint %g 0
%p = OpAccessChain %pf %buf %c0 %i
%v = OpLoad %float %p
%r = OpFAdd %float %v %one
OpStore %p %r
OpReturn
OpFunctionEnd
"#;

/// A command on the buffer under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    /// The `x[i] += 1.0` kernel: reads and writes the buffer (a storage buffer descriptor).
    Dispatch,
    /// `vkCmdFillBuffer` of the whole buffer: a transfer write.
    Fill,
    /// `vkCmdCopyBuffer` from the buffer into the auxiliary one: a transfer read.
    CopyOut,
    /// `vkCmdCopyBuffer` from the auxiliary buffer into it: a transfer write.
    CopyIn,
}

/// Pairs (first, second) with no barrier between them that the layer reports: all 15 with a
/// transfer on one side, every one a real hazard (two copies out of the buffer both write the
/// auxiliary buffer; a copy out then a write of the buffer is write-after-read).
const CAUGHT: [(Cmd, Cmd); 15] = [
    (Cmd::Fill, Cmd::Dispatch),
    (Cmd::CopyIn, Cmd::Dispatch),
    (Cmd::CopyOut, Cmd::Dispatch),
    (Cmd::Dispatch, Cmd::Fill),
    (Cmd::Dispatch, Cmd::CopyOut),
    (Cmd::Dispatch, Cmd::CopyIn),
    (Cmd::Fill, Cmd::Fill),
    (Cmd::Fill, Cmd::CopyOut),
    (Cmd::Fill, Cmd::CopyIn),
    (Cmd::CopyOut, Cmd::Fill),
    (Cmd::CopyOut, Cmd::CopyOut),
    (Cmd::CopyOut, Cmd::CopyIn),
    (Cmd::CopyIn, Cmd::Fill),
    (Cmd::CopyIn, Cmd::CopyOut),
    (Cmd::CopyIn, Cmd::CopyIn),
];

/// Pairs it does not report (both write the buffer: a real hazard).
const MISSED: [(Cmd, Cmd); 1] = [(Cmd::Dispatch, Cmd::Dispatch)];

/// The Vulkan objects of the experiment, made with the context's device.
struct Objects {
    buf: vk::Buffer,
    aux: vk::Buffer,
    memory: Vec<vk::DeviceMemory>,
    module: vk::ShaderModule,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    pool: vk::DescriptorPool,
    set: vk::DescriptorSet,
}

impl Objects {
    /// Creates the two buffers (each with its own memory of any allowed type), the pipeline
    /// and its descriptor set pointing at the buffer under test.
    ///
    /// # Safety
    /// `d` is the live device of a context; the objects are destroyed with [`Objects::destroy`].
    unsafe fn new(d: &ash::Device, spirv: &[u32]) -> Result<Objects, vk::Result> {
        let mut memory = Vec::new();
        let buffer = |memory: &mut Vec<vk::DeviceMemory>| -> Result<vk::Buffer, vk::Result> {
            let usage = vk::BufferUsageFlags::STORAGE_BUFFER
                | vk::BufferUsageFlags::TRANSFER_SRC
                | vk::BufferUsageFlags::TRANSFER_DST;
            let b = d.create_buffer(&vk::BufferCreateInfo::default().size(BYTES).usage(usage), None)?;
            let req = d.get_buffer_memory_requirements(b);
            let info = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(req.memory_type_bits.trailing_zeros());
            let m = d.allocate_memory(&info, None)?;
            d.bind_buffer_memory(b, m, 0)?;
            memory.push(m);
            Ok(b)
        };
        let buf = buffer(&mut memory)?;
        let aux = buffer(&mut memory)?;
        let module = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(spirv), None)?;
        let bindings = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)];
        let set_layout =
            d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None)?;
        let set_layouts = [set_layout];
        let layout =
            d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts), None)?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let pipeline = d
            .create_compute_pipelines(
                vk::PipelineCache::null(),
                &[vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)],
                None,
            )
            .map_err(|(_, e)| e)?[0];
        let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: 1 }];
        let pool =
            d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None)?;
        let set = d.allocate_descriptor_sets(
            &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&set_layouts),
        )?[0];
        let infos = [vk::DescriptorBufferInfo { buffer: buf, offset: 0, range: vk::WHOLE_SIZE }];
        let write = vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .buffer_info(&infos);
        d.update_descriptor_sets(&[write], &[]);
        Ok(Objects { buf, aux, memory, module, set_layout, layout, pipeline, pool, set })
    }

    /// Records `c`.
    ///
    /// # Safety
    /// `cb` is recording, on the device that made the objects.
    unsafe fn record(&self, d: &ash::Device, cb: vk::CommandBuffer, c: Cmd) {
        let whole = [vk::BufferCopy { src_offset: 0, dst_offset: 0, size: BYTES }];
        match c {
            Cmd::Dispatch => {
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, self.pipeline);
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, self.layout, 0, &[self.set], &[]);
                d.cmd_dispatch(cb, 1, 1, 1);
            }
            Cmd::Fill => d.cmd_fill_buffer(cb, self.buf, 0, vk::WHOLE_SIZE, 0x3f80_0000),
            Cmd::CopyOut => d.cmd_copy_buffer(cb, self.buf, self.aux, &whole),
            Cmd::CopyIn => d.cmd_copy_buffer(cb, self.aux, self.buf, &whole),
        }
    }

    /// # Safety
    /// Nothing using the objects is pending.
    unsafe fn destroy(&self, d: &ash::Device) {
        d.destroy_pipeline(self.pipeline, None);
        d.destroy_descriptor_pool(self.pool, None);
        d.destroy_pipeline_layout(self.layout, None);
        d.destroy_descriptor_set_layout(self.set_layout, None);
        d.destroy_shader_module(self.module, None);
        d.destroy_buffer(self.buf, None);
        d.destroy_buffer(self.aux, None);
        for &m in &self.memory {
            d.free_memory(m, None);
        }
    }
}

/// Stages and accesses of a command, for the barrier after (source) or before (destination) it.
fn scope(c: Cmd) -> (vk::PipelineStageFlags2, vk::AccessFlags2) {
    match c {
        Cmd::Dispatch => {
            (vk::PipelineStageFlags2::COMPUTE_SHADER, vk::AccessFlags2::SHADER_READ | vk::AccessFlags2::SHADER_WRITE)
        }
        // A copy reads one of the two buffers and writes the other.
        Cmd::CopyOut | Cmd::CopyIn => {
            (vk::PipelineStageFlags2::ALL_TRANSFER, vk::AccessFlags2::TRANSFER_READ | vk::AccessFlags2::TRANSFER_WRITE)
        }
        Cmd::Fill => (vk::PipelineStageFlags2::ALL_TRANSFER, vk::AccessFlags2::TRANSFER_WRITE),
    }
}

/// Records `first`, a barrier if asked (the first command's stages and accesses before it,
/// the second's after), and `second` in one command buffer, submits it and waits; returns the
/// layer's messages.
fn pair(ctx: &Context, t: &Transfers, o: &Objects, first: Cmd, second: Cmd, barrier: bool) -> Vec<String> {
    ctx.take_messages();
    t.run(ctx, |d, cb| {
        // SAFETY: `cb` is recording on the context's device, which made `o`; the memory
        // barrier's scopes name only stages a compute queue has.
        unsafe {
            o.record(d, cb, first);
            if barrier {
                let ((ss, sa), (ds, da)) = (scope(first), scope(second));
                let mb = [vk::MemoryBarrier2::default()
                    .src_stage_mask(ss)
                    .src_access_mask(sa)
                    .dst_stage_mask(ds)
                    .dst_access_mask(da)];
                d.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&mb));
            }
            o.record(d, cb, second);
        }
    })
    .unwrap_or_else(|e| panic!("{first:?} then {second:?}: {e}"));
    ctx.take_messages()
}

/// Whether `messages` hold a synchronization hazard report.
fn hazard(messages: &[String]) -> bool {
    messages.iter().any(|m| m.contains("SYNC-HAZARD"))
}

#[test]
fn synchronization_validation_reports_unordered_transfers_and_nothing_with_barriers() {
    let ctx = Context::new(&ContextOptions { validation: true, ..Default::default() })
        .unwrap_or_else(|e| panic!("Vulkan device (llvmpipe) with validation layers: {e}"));
    assert!(ctx.validation());
    let t = Transfers::new(&ctx).unwrap_or_else(|e| panic!("{e}"));
    let spirv = common::assemble(INC);
    let mut objects = None;
    // The objects are made with the device `Transfers::run` lends (the context keeps its
    // device to the crate); the command buffer it records is submitted empty.
    t.run(&ctx, |d, _| {
        // SAFETY: the context's live device; destroyed below.
        objects = Some(unsafe { Objects::new(d, &spirv) });
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let o = objects.expect("made").unwrap_or_else(|e| panic!("creating the objects: {e}"));
    let setup = ctx.take_messages();
    assert!(setup.is_empty(), "validation messages while setting up:\n{}", setup.join("\n"));

    let mut report = Vec::new();
    for &(first, second) in &CAUGHT {
        let without = pair(&ctx, &t, &o, first, second, false);
        let with = pair(&ctx, &t, &o, first, second, true);
        report.push(format!("{first:?} -> {second:?}: {} without a barrier, {} with", without.len(), with.len()));
        assert!(
            hazard(&without),
            "{first:?} then {second:?} without a barrier: the layer reported no SYNC-HAZARD (messages: {without:?}); \
             synchronization validation is not catching what it caught before"
        );
        assert!(with.is_empty(), "{first:?} then {second:?} with a barrier: {}", with.join("\n"));
    }
    for &(first, second) in &MISSED {
        let without = pair(&ctx, &t, &o, first, second, false);
        let with = pair(&ctx, &t, &o, first, second, true);
        report.push(format!("{first:?} -> {second:?}: {} without a barrier, {} with", without.len(), with.len()));
        assert!(
            !hazard(&without),
            "{first:?} then {second:?} without a barrier is now reported: move it to CAUGHT and update \
             docs/executor.md (\"Barriers\"): {without:?}"
        );
        assert!(with.is_empty(), "{first:?} then {second:?} with a barrier: {}", with.join("\n"));
    }
    eprintln!("{}", report.join("\n"));
    t.run(&ctx, |d, _| {
        // SAFETY: every submission using the objects has completed (each run waits).
        unsafe { o.destroy(d) }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let mut t = t;
    t.destroy(&ctx);
}
