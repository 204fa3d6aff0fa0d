//! Runs a module both ways — compiled to a bundle and executed on Vulkan (validation and
//! synchronization validation on), and on the reference interpreter — with the same inputs
//! and the same host callbacks, and compares every user memory object and device global
//! under docs/ir.md's "Float precision" rules: bit-exact where a conforming device must be
//! exact, `fma` rounded once or twice (a second interpreter runs with
//! `FmaRounding::Twice`), `f32` subnormals kept or flushed (a third runs with
//! `Denormals::Flush`, what the H200 computes), and within [`same`]'s stated tolerance for
//! kernels using operations a device need not round correctly.
#![allow(dead_code)]

use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::Options;
use cmdgraph_executor::{BarrierPolicy, ContextOptions, DeviceChoice, Executor, RecordOptions};
use cmdgraph_interp::{Denormals, FmaRounding, Interpreter, RunOptions};
use cmdgraph_ir::edit;
use cmdgraph_ir::{KernelBody, MemRef, MemoryKind, Module, NodeKind, OpKind, ScalarType, Type};
use cmdgraph_passes::{lookup, PassInfo, DEFAULT_PIPELINE};
use std::collections::{BTreeMap, BTreeSet};

pub mod fuzz;
pub mod gen;

/// A small deterministic generator (SplitMix64), so failures reproduce from the seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The pass list of a pipeline: `None` is the default pipeline, `Some("")` no pass.
pub fn passes(pipeline: Option<&str>) -> Vec<&'static PassInfo> {
    match pipeline {
        None => DEFAULT_PIPELINE.iter().filter_map(|n| lookup(n)).collect(),
        Some(list) => list.split(',').filter(|s| !s.is_empty()).map(|n| lookup(n).expect("known pass")).collect(),
    }
}

/// Runs the passes `names` on `module` with `devices` devices and transfers priced at
/// `bytes_per_us` (verifying after each); the context with every pass's statistics summed.
pub fn run_passes(
    module: &mut Module,
    names: &[&str],
    devices: u32,
    bytes_per_us: u64,
) -> cmdgraph_passes::PassContext {
    use cmdgraph_passes::pipeline::{run_pipeline, RunOptions};
    let passes: Vec<_> = names.iter().filter_map(|n| cmdgraph_passes::lookup(n)).collect();
    let mut ctx = cmdgraph_passes::PassContext::default();
    ctx.options.devices = Some(devices);
    ctx.options.transfer_bytes_per_us = Some(bytes_per_us);
    let options = RunOptions { verify_each: true, ..RunOptions::default() };
    let report = run_pipeline(module, &passes, &options, &mut ctx, &mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    for p in &report.passes {
        for (name, value) in &p.stats {
            *ctx.stats.entry(name).or_insert(0) += value;
        }
    }
    ctx
}

/// Compiles `module` with `pipeline` to bundle bytes, as `cmdgraph compile` does.
pub fn compile(module: &Module, pipeline: Option<&str>) -> Result<Vec<u8>, String> {
    let (bundle, _) =
        compile_module(module, &passes(pipeline), &Options::default(), &Llvm).map_err(|e| e.to_string())?;
    bundle.to_bytes().map_err(|e| e.to_string())
}

/// A fresh executor on the default device with validation on.
pub fn executor(bundle: &[u8]) -> Result<Executor, String> {
    let loaded = cmdgraph_executor::load_bytes(bundle).map_err(|e| e.to_string())?;
    Executor::new(loaded, &ContextOptions { validation: true, device: DeviceChoice::Default, ..Default::default() })
        .map_err(|e| e.to_string())
}

/// Random bytes for `count` elements of `ty`: floats uniform in [-4, 4) with every
/// significand bit random (drawn with 53 bits, then rounded to the type), integers in
/// `0..1024`, bools 0 or 1. Full-precision floats make products and sums inexact, so the
/// tests see how a device rounds (`fma` rounded twice, say); see [`summable_bytes`] for
/// data that float atomics add up.
pub fn random_bytes(ty: Type, count: u64, rng: &mut Rng) -> Vec<u8> {
    element_bytes(ty, count, rng, |rng| (rng.next() >> 11) as f64 * 2f64.powi(-53) * 8.0 - 4.0)
}

/// Like [`random_bytes`], but floats are multiples of 1/16 in [-4, 4]: sums of up to 2^18
/// of them are exact, so `f32` `atomic add` gives the same bits in any order. Float addition
/// is not associative, and the order in which work-items' atomics land is the device's, so
/// the harness gives such data to every memory a kernel with a float `atomic add` reads
/// ([`summable_memories`]); a sum of full-precision data may differ from the
/// interpreter's (work-item order) by up to n·2^-24·Σ|x| on any device.
pub fn summable_bytes(ty: Type, count: u64, rng: &mut Rng) -> Vec<u8> {
    element_bytes(ty, count, rng, |rng| (rng.below(129) as i64 - 64) as f64 / 16.0)
}

fn element_bytes(ty: Type, count: u64, rng: &mut Rng, float: impl Fn(&mut Rng) -> f64) -> Vec<u8> {
    let lanes = if ty.lanes == 3 { 4 } else { u64::from(ty.lanes) };
    let mut out = Vec::with_capacity((ty.size() * count) as usize);
    for _ in 0..count * lanes {
        match ty.scalar {
            ScalarType::Bool => out.push((rng.below(1024) & 1) as u8),
            // Narrow integers take the low bits: every value of the type.
            ScalarType::I8 | ScalarType::U8 => out.push(rng.below(1024) as u8),
            ScalarType::I16 | ScalarType::U16 => out.extend_from_slice(&(rng.below(1024) as u16).to_le_bytes()),
            ScalarType::I32 | ScalarType::U32 => out.extend_from_slice(&(rng.below(1024) as u32).to_le_bytes()),
            ScalarType::I64 | ScalarType::U64 => out.extend_from_slice(&rng.below(1024).to_le_bytes()),
            ScalarType::F16 => out
                .extend_from_slice(&cmdgraph_ir::data::half::f16::from_f32(float(rng) as f32).to_bits().to_le_bytes()),
            ScalarType::F32 => out.extend_from_slice(&(float(rng) as f32).to_le_bytes()),
            ScalarType::F64 => out.extend_from_slice(&float(rng).to_le_bytes()),
        }
    }
    out
}

/// The memory objects that a kernel with an `f32` `atomic add` gets as an argument (in
/// any graph): they get [`summable_bytes`].
pub fn summable_memories(module: &Module) -> BTreeSet<String> {
    use cmdgraph_ir::graph::{Arg, ArgValue};
    use cmdgraph_ir::kernel::{AtomicOp, ValueType};
    let adds = |k: &cmdgraph_ir::Kernel| match &k.body {
        KernelBody::Ir(body) => body.ops.iter().any(|(_, op)| match op.kind {
            OpKind::Atomic { op: AtomicOp::Add, value, .. } => {
                matches!(body.values.try_get(value).map(|v| &v.ty), Some(ValueType::Data(t)) if t.scalar.is_float())
            }
            _ => false,
        }),
        KernelBody::Spirv { .. } | KernelBody::Shader { .. } => false,
    };
    let mut out = BTreeSet::new();
    for (_, graph) in module.graphs.iter() {
        for (_, node) in graph.nodes.iter() {
            let NodeKind::Kernel(cmd) = &node.kind else { continue };
            if !module.kernels.try_get(cmd.kernel).is_some_and(adds) {
                continue;
            }
            for a in &cmd.args {
                let mem = match a {
                    Arg::Value(ArgValue::Pointer(p)) => p.base,
                    Arg::Value(ArgValue::Accessor(a)) => a.buffer,
                    _ => continue,
                };
                if let MemRef::Memory(h) = mem {
                    if let Some(m) = module.memories.try_get(h) {
                        out.insert(m.name.clone());
                    }
                }
            }
        }
    }
    out
}

/// Whether any kernel of `module` has an `fma`.
pub fn uses_fma(module: &Module) -> bool {
    module.kernels.iter().any(|(_, k)| match &k.body {
        KernelBody::Ir(body) => body.ops.iter().any(|(_, op)| matches!(op.kind, OpKind::Fma(..))),
        KernelBody::Spirv { .. } | KernelBody::Shader { .. } => false,
    })
}

/// Whether any kernel of `module` has a float op (arithmetic, `fma`, comparison, cast) on
/// `f32` values: the ops whose subnormals a device may flush (docs/ir.md, "Float precision").
pub fn uses_f32_float_ops(module: &Module) -> bool {
    let f32_value = |body: &cmdgraph_ir::kernel::Body, v| matches!(body.values.try_get(v).map(|x| &x.ty), Some(cmdgraph_ir::kernel::ValueType::Data(t)) if t.scalar == ScalarType::F32);
    module.kernels.iter().any(|(_, k)| match &k.body {
        KernelBody::Ir(body) => body.ops.iter().any(|(_, op)| match op.kind {
            OpKind::Unary(_, a) | OpKind::Binary(_, a, _) | OpKind::Fma(a, ..) | OpKind::Cmp(_, a, _) => {
                f32_value(body, a)
            }
            OpKind::Cast(a, t) => f32_value(body, a) || t.scalar == ScalarType::F32,
            _ => false,
        }),
        KernelBody::Spirv { .. } | KernelBody::Shader { .. } => false,
    })
}

/// Whether any kernel of `module` uses a math function whose device precision differs from
/// the interpreter's (docs/codegen.md, "Deviations from the interpreter").
pub fn uses_inexact_math(module: &Module) -> bool {
    use cmdgraph_ir::kernel::{BinaryOp, UnaryOp};
    module.kernels.iter().any(|(_, k)| match &k.body {
        KernelBody::Ir(body) => body.ops.iter().any(|(_, op)| match op.kind {
            OpKind::Unary(u, _) => u.float_only() && !matches!(u, UnaryOp::Floor | UnaryOp::Ceil),
            OpKind::Binary(b, ..) => b == BinaryOp::Pow,
            _ => false,
        }),
        KernelBody::Spirv { .. } | KernelBody::Shader { .. } => true,
    })
}

/// One `(memory name, mode writes?, type, count)` per declared access of a callback.
type Access = Vec<(String, bool, bool, Type, u64)>;

/// The access lists of every host task and native command, by callback name.
fn callbacks(module: &Module) -> BTreeMap<String, Access> {
    let mut out = BTreeMap::new();
    for (_, graph) in module.graphs.iter() {
        for (_, node) in graph.nodes.iter() {
            let cmd = match &node.kind {
                NodeKind::HostTask(c) | NodeKind::Native(c) => c,
                _ => continue,
            };
            let list = cmd
                .access
                .iter()
                .filter_map(|a| match a.mem {
                    MemRef::Memory(h) => {
                        let m = module.memories.try_get(h)?;
                        Some((m.name.clone(), a.mode.reads(), a.mode.writes(), m.elem, m.count))
                    }
                    MemRef::Alloc(_) => None,
                })
                .collect();
            out.insert(cmd.callback.clone(), list);
        }
    }
    out
}

/// What the generic host callback writes: every written object gets values seeded by a
/// hash of everything it reads, so a wrong read shows in the output.
/// Memories in `summable` get [`summable_bytes`].
fn host_effect(reads: &[Vec<u8>], writes: &[(Type, u64, bool)]) -> Vec<Vec<u8>> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in reads.iter().flatten() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    let mut rng = Rng(h);
    writes
        .iter()
        .map(
            |&(ty, n, summable)| {
                if summable {
                    summable_bytes(ty, n, &mut rng)
                } else {
                    random_bytes(ty, n, &mut rng)
                }
            },
        )
        .collect()
}

/// `bytes` of elements of `ty` with every float NaN made the quiet NaN and every zero `+0`:
/// what a host callback hashes ([`host_effect`]). [`same`] accepts any NaN for any NaN and
/// either zero for either (docs/ir.md, "Float precision"), so a callback must not tell them
/// apart: hashing the raw bytes turned a sign-of-zero difference that the comparison allows
/// into a whole written object that differs.
fn canonical(ty: Type, mut bytes: Vec<u8>) -> Vec<u8> {
    match ty.scalar {
        ScalarType::F32 => {
            for c in bytes.chunks_exact_mut(4) {
                let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                let v = if v.is_nan() {
                    f32::NAN
                } else if v == 0.0 {
                    0.0
                } else {
                    v
                };
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        ScalarType::F64 => {
            for c in bytes.chunks_exact_mut(8) {
                let v = f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
                let v = if v.is_nan() {
                    f64::NAN
                } else if v == 0.0 {
                    0.0
                } else {
                    v
                };
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        ScalarType::F16 => {
            for c in bytes.chunks_exact_mut(2) {
                let v = cmdgraph_ir::data::half::f16::from_le_bytes([c[0], c[1]]);
                let v = if v.is_nan() {
                    cmdgraph_ir::data::half::f16::NAN
                } else if f32::from(v) == 0.0 {
                    cmdgraph_ir::data::half::f16::ZERO
                } else {
                    v
                };
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        _ => {}
    }
    bytes
}

/// Registers on `interp` the generic host callbacks of `source`'s host tasks.
pub fn register_interp_callbacks(interp: &mut Interpreter, source: &Module) {
    for (name, f) in host_callbacks(source) {
        interp.register_callback(&name, f);
    }
}

/// The host-task callbacks of `source`'s random graphs, one per callback name, for any
/// runtime (the interpreter, an executor, a multi-device executor): each reads what its
/// node declares it reads and writes a deterministic function of it (`host_effect`).
pub fn host_callbacks(source: &Module) -> Vec<(String, Box<cmdgraph_ir::host::HostFn>)> {
    let summable = summable_memories(source);
    callbacks(source)
        .into_iter()
        .map(|(name, a)| {
            let summable = summable.clone();
            let f: Box<cmdgraph_ir::host::HostFn> = Box::new(move |ctx| {
                let reads: Vec<Vec<u8>> = a
                    .iter()
                    .filter(|x| x.1)
                    .map(|x| ctx.read(&x.0).map(|b| canonical(x.3, b)))
                    .collect::<Result<_, _>>()?;
                let ws: Vec<_> = a.iter().filter(|x| x.2).collect();
                let out =
                    host_effect(&reads, &ws.iter().map(|x| (x.3, x.4, summable.contains(&x.0))).collect::<Vec<_>>());
                for (w, bytes) in ws.iter().zip(out) {
                    ctx.write(&w.0, 0, &bytes)?;
                }
                Ok(())
            });
            (name, f)
        })
        .collect()
}

/// Graph `graph` of `module` as the executor recorded it, from `Executor::barrier_groups`:
/// every edge dropped, then each stretch between two barriers ordered before the next one
/// (all to all) and nothing else; allocations before the first stretch and freed after the
/// last. Run with the race detector, it says whether the recorded barriers order every pair
/// of commands that touch the same bytes, one of them writing.
pub fn as_recorded(module: &Module, graph: &str, groups: &[Vec<Vec<String>>]) -> Result<Module, String> {
    let mut m = module.clone();
    let gh = m.graph_by_name(graph).ok_or_else(|| format!("no graph @{graph}"))?;
    let g = &mut m.graphs[gh];
    edit::retain(g, |_| true, |_| false).map_err(|e| e.to_string())?;
    let find = |g: &cmdgraph_ir::Graph, n: &str| g.node_by_name(n).ok_or_else(|| format!("no node %{n}"));
    let mut slots = Vec::new();
    for seg in groups {
        for group in seg {
            slots.push(group.iter().map(|n| find(g, n)).collect::<Result<Vec<_>, _>>()?);
        }
    }
    for pair in slots.windows(2) {
        for &a in &pair[0] {
            for &b in &pair[1] {
                edit::add_edge(g, a, b);
            }
        }
    }
    let kind = |g: &cmdgraph_ir::Graph, free: bool| -> Vec<_> {
        g.nodes
            .iter()
            .filter(|(_, n)| match n.kind {
                NodeKind::AsyncMalloc { .. } => !free,
                NodeKind::AsyncFree { .. } => free,
                _ => false,
            })
            .map(|(h, _)| h)
            .collect()
    };
    let (mallocs, frees) = (kind(g, false), kind(g, true));
    for &a in &mallocs {
        for &b in slots.first().into_iter().flatten().chain(&frees) {
            edit::add_edge(g, a, b);
        }
    }
    for &a in slots.last().into_iter().flatten() {
        for &b in &frees {
            edit::add_edge(g, a, b);
        }
    }
    Ok(m)
}

/// An update of an executable between runs ([`Both::run_updated`]).
#[derive(Clone, Debug)]
pub enum Update {
    /// `update_param` of a dynamic parameter of the root graph.
    Param(String, cmdgraph_ir::ArgValue),
    /// `set_active` of a dynamic command group of the root graph.
    Active(String, u32),
}

impl Update {
    /// Makes the update on Vulkan executable `ee` and interpreter executable `ie`.
    fn apply(
        &self,
        ex: &mut Executor,
        ee: cmdgraph_executor::ExecId,
        it: &mut Interpreter,
        ie: cmdgraph_interp::ExecId,
    ) -> Result<(), String> {
        match self {
            Update::Param(p, v) => ex.update_param(ee, p, v.clone()),
            Update::Active(d, i) => ex.set_active(ee, d, *i),
        }
        .map_err(|e| format!("vulkan: {e}"))?;
        self.apply_interp(it, ie)
    }

    /// Makes the update on interpreter executable `ie`.
    fn apply_interp(&self, it: &mut Interpreter, ie: cmdgraph_interp::ExecId) -> Result<(), String> {
        match self {
            Update::Param(p, v) => it.update_param(ie, p, v.clone()),
            Update::Active(d, i) => it.set_active(ie, d, *i),
        }
        .map_err(|e| format!("interp: {e}"))
    }
}

/// A run of one module both ways.
pub struct Both {
    pub ex: Executor,
    /// The interpreter with `fma` rounded once (the kernel language).
    pub interp: Interpreter,
    /// With `fma` rounded twice, when the module has an `fma` (docs/ir.md, "Float
    /// precision": a conforming device may round the product first; llvmpipe does). Its user
    /// memory is reset to `interp`'s after every comparison.
    pub twice: Option<Interpreter>,
    /// Memory objects compared in modules with an `fma`, by the `fma` rule they matched:
    /// `[once only, twice only, both]` (equal results). A device that rounds `fma` one way
    /// never shows the other.
    pub fma_matched: [usize; 3],
    /// With `f32` subnormals flushed (`fma` rounded once), when the module has `f32` float
    /// ops (docs/ir.md, "Float precision": a device may flush them; the H200 does). Its user
    /// memory is reset to `interp`'s after every comparison.
    pub flush: Option<Interpreter>,
    /// Memory objects that matched only the `flush` interpreter.
    pub flush_matched: usize,
    pub module: Module,
    /// Whether floats are compared with [`same`]'s tolerance (kernels using operations a
    /// conforming device need not round correctly).
    pub float_tol: bool,
    /// Pipeline barriers between commands over every graph run: as recorded (barriers where
    /// memory conflicts), and as a barrier at every stage boundary would have recorded them.
    pub barriers: (u64, u64),
    /// Graphs whose recorded order was checked race-free on the interpreter.
    pub recorded_checked: usize,
}

impl Both {
    /// Loads `bundle` on Vulkan and `source` on the interpreter, binds the same random
    /// inputs to every user memory object and registers the same generic host callbacks.
    pub fn new(source: &Module, bundle: &[u8], seed: u64) -> Result<Both, String> {
        let mut ex = executor(bundle)?;
        let mut interp = Interpreter::new(source).map_err(|e| e.to_string())?;
        let mut twice =
            if uses_fma(source) { Some(Interpreter::new(source).map_err(|e| e.to_string())?) } else { None };
        let mut flush =
            if uses_f32_float_ops(source) { Some(Interpreter::new(source).map_err(|e| e.to_string())?) } else { None };
        let summable = summable_memories(source);
        let mut rng = Rng(seed);
        for (_, m) in source.memories.iter() {
            if matches!(m.kind, MemoryKind::DeviceGlobal(_)) {
                continue;
            }
            let bytes = if summable.contains(&m.name) {
                summable_bytes(m.elem, m.count, &mut rng)
            } else {
                random_bytes(m.elem, m.count, &mut rng)
            };
            interp.bind(&m.name, &bytes).map_err(|e| format!("interp bind @{}: {e}", m.name))?;
            for t in twice.iter_mut().chain(flush.iter_mut()) {
                t.bind(&m.name, &bytes).map_err(|e| format!("interp bind @{}: {e}", m.name))?;
            }
            ex.bind(&m.name, &bytes).map_err(|e| format!("vulkan bind @{}: {e}", m.name))?;
        }
        register_interp_callbacks(&mut interp, source);
        for t in twice.iter_mut().chain(flush.iter_mut()) {
            register_interp_callbacks(t, source);
        }
        for (name, f) in host_callbacks(source) {
            ex.register_callback(&name, f);
        }
        Ok(Both {
            ex,
            interp,
            twice,
            fma_matched: [0; 3],
            flush,
            flush_matched: 0,
            module: source.clone(),
            float_tol: uses_inexact_math(source),
            barriers: (0, 0),
            recorded_checked: 0,
        })
    }

    /// Finalizes `graph` on both sides and runs it `runs` times, comparing everything after
    /// each run. Returns the number of objects compared.
    pub fn run(&mut self, graph: &str, runs: usize) -> Result<usize, String> {
        self.run_updated(graph, runs, &[])
    }

    /// [`Both::run`], making `updates` on both sides (and the `fma`-twice interpreter)
    /// before every run but the first: an executable's updates reach Vulkan and the
    /// interpreter alike.
    pub fn run_updated(&mut self, graph: &str, runs: usize, updates: &[Update]) -> Result<usize, String> {
        let ie = self.interp.finalize(graph).map_err(|e| format!("interp finalize @{graph}: {e}"))?;
        let ee = self.ex.finalize(graph).map_err(|e| format!("vulkan finalize @{graph}: {e}"))?;
        self.barriers.0 += self.ex.barriers(ee).map_err(|e| e.to_string())?;
        self.check_recorded_order(graph, ee)?;
        // The same graph with a barrier at every stage boundary, only to count them.
        let options = self.ex.record_options();
        self.ex.set_record_options(RecordOptions { barriers: BarrierPolicy::Stages, ..options });
        let staged = self.ex.finalize(graph).map_err(|e| format!("vulkan finalize @{graph} (stages): {e}"));
        self.ex.set_record_options(options);
        let staged = staged?;
        self.barriers.1 += self.ex.barriers(staged).map_err(|e| e.to_string())?;
        self.ex.drop_exec(staged).map_err(|e| e.to_string())?;
        let te = match &mut self.twice {
            Some(t) => Some(t.finalize(graph).map_err(|e| format!("interp (fma twice) finalize @{graph}: {e}"))?),
            None => None,
        };
        let fe = match &mut self.flush {
            Some(t) => Some(t.finalize(graph).map_err(|e| format!("interp (flush) finalize @{graph}: {e}"))?),
            None => None,
        };
        let mut compared = 0;
        for r in 0..runs {
            if r > 0 {
                for u in updates {
                    u.apply(&mut self.ex, ee, &mut self.interp, ie)
                        .map_err(|e| format!("update {u:?} before run {r} of @{graph}: {e}"))?;
                    if let (Some(t), Some(te)) = (&mut self.twice, te) {
                        u.apply_interp(t, te)
                            .map_err(|e| format!("update {u:?} (fma twice) before run {r} of @{graph}: {e}"))?;
                    }
                    if let (Some(t), Some(fe)) = (&mut self.flush, fe) {
                        u.apply_interp(t, fe)
                            .map_err(|e| format!("update {u:?} (flush) before run {r} of @{graph}: {e}"))?;
                    }
                }
            }
            self.interp.run(ie).map_err(|e| format!("interp run {r} of @{graph}: {e}"))?;
            if let (Some(t), Some(te)) = (&mut self.twice, te) {
                let opts = RunOptions { fma: FmaRounding::Twice, ..RunOptions::default() };
                t.run_with(te, &opts).map_err(|e| format!("interp (fma twice) run {r} of @{graph}: {e}"))?;
            }
            if let (Some(t), Some(fe)) = (&mut self.flush, fe) {
                let opts = RunOptions { denormals: Denormals::Flush, ..RunOptions::default() };
                t.run_with(fe, &opts).map_err(|e| format!("interp (flush) run {r} of @{graph}: {e}"))?;
            }
            self.ex.run(ee).map_err(|e| format!("vulkan run {r} of @{graph}: {e}"))?;
            compared += self.compare().map_err(|e| format!("after run {r} of @{graph}: {e}"))?;
        }
        self.ex.drop_exec(ee).map_err(|e| e.to_string())?;
        self.interp.drop_exec(ie).map_err(|e| e.to_string())?;
        if let (Some(t), Some(te)) = (&mut self.twice, te) {
            t.drop_exec(te).map_err(|e| e.to_string())?;
        }
        if let (Some(t), Some(fe)) = (&mut self.flush, fe) {
            t.drop_exec(fe).map_err(|e| e.to_string())?;
        }
        Ok(compared)
    }

    /// Runs graph `graph` ordered only as executable `ee` recorded it (see [`as_recorded`])
    /// on the interpreter, from the interpreter's current user memory, with the race
    /// detector: the executor's barriers must leave no two commands that touch the same bytes
    /// (one writing) unordered. This is the check for what the validation layer cannot see
    /// (it does not report hazards between two dispatches).
    fn check_recorded_order(&mut self, graph: &str, ee: cmdgraph_executor::ExecId) -> Result<(), String> {
        // The interpreter runs only kernel-language bodies (an external SPIR-V kernel's twin
        // lives in the source module, under other node names after optimization).
        if self.ex.module().kernels.iter().any(|(_, k)| matches!(k.body, KernelBody::Spirv { .. })) {
            return Ok(());
        }
        let groups = self.ex.barrier_groups(ee).map_err(|e| e.to_string())?;
        let recorded = as_recorded(self.ex.module(), graph, &groups)?;
        let mut it = Interpreter::new(&recorded).map_err(|e| format!("as recorded: {e}"))?;
        for (_, m) in recorded.memories.iter() {
            if !matches!(m.kind, MemoryKind::DeviceGlobal(_)) {
                let bytes = self.interp.read(&m.name).map_err(|e| e.to_string())?.to_vec();
                it.bind(&m.name, &bytes).map_err(|e| e.to_string())?;
            }
        }
        register_interp_callbacks(&mut it, &self.module);
        let ie = it.finalize(graph).map_err(|e| format!("as recorded: finalize @{graph}: {e}"))?;
        let stats = it
            .run_with(ie, &RunOptions { check_races: true, ..RunOptions::default() })
            .map_err(|e| format!("as recorded: run @{graph}: {e}"))?;
        if let Some(r) = stats.races.first() {
            return Err(format!("@{graph} as recorded ({groups:?}) races: {r}"));
        }
        self.recorded_checked += 1;
        Ok(())
    }

    /// Compares every user memory object and every device global (on the devices of the
    /// module's graphs) with the interpreter's, accepting either `fma` rule (see
    /// [`Both::twice`]) or `f32` subnormals flushed ([`Both::flush`]); fails on any
    /// validation message.
    pub fn compare(&mut self) -> Result<usize, String> {
        self.ex.wait_idle().map_err(|e| e.to_string())?;
        let mut devices: Vec<u32> = self.module.graphs.iter().map(|(_, g)| g.device).collect();
        devices.sort_unstable();
        devices.dedup();
        let mut n = 0;
        for (_, m) in self.module.memories.iter() {
            let user = !matches!(m.kind, MemoryKind::DeviceGlobal(_));
            // (what, Vulkan, fma once, fma twice, subnormals flushed)
            let mut sets = Vec::new();
            if user {
                let got = self.ex.read(&m.name).map_err(|e| e.to_string())?;
                let want = self.interp.read(&m.name).map_err(|e| e.to_string())?.to_vec();
                let alt = match &self.twice {
                    Some(t) => Some(t.read(&m.name).map_err(|e| e.to_string())?.to_vec()),
                    None => None,
                };
                let flushed = match &self.flush {
                    Some(t) => Some(t.read(&m.name).map_err(|e| e.to_string())?.to_vec()),
                    None => None,
                };
                sets.push((format!("@{}", m.name), got, want, alt, flushed));
            } else {
                for &d in &devices {
                    let got = self.ex.read_device_global(&m.name, d).map_err(|e| e.to_string())?;
                    let want = self.interp.read_device_global(&m.name, d).map_err(|e| e.to_string())?;
                    let alt = match &self.twice {
                        Some(t) => Some(t.read_device_global(&m.name, d).map_err(|e| e.to_string())?),
                        None => None,
                    };
                    let flushed = match &self.flush {
                        Some(t) => Some(t.read_device_global(&m.name, d).map_err(|e| e.to_string())?),
                        None => None,
                    };
                    sets.push((format!("device_global @{} on device {d}", m.name), got, want, alt, flushed));
                }
            }
            for (what, got, want, alt, flushed) in sets {
                let once = same(&what, m.elem, &got, &want, self.float_tol);
                let twice = alt.as_ref().map(|alt| same(&what, m.elem, &got, alt, self.float_tol));
                let flush = || flushed.as_ref().map(|f| same(&what, m.elem, &got, f, self.float_tol));
                match (once, twice) {
                    (Ok(()), None) => {}
                    (Ok(()), Some(Ok(()))) => self.fma_matched[2] += 1,
                    (Ok(()), Some(Err(_))) => self.fma_matched[0] += 1,
                    (Err(_), Some(Ok(()))) => self.fma_matched[1] += 1,
                    (Err(e), None) if flushed.is_none() => return Err(e),
                    (Err(e), twice) => match flush() {
                        Some(Ok(())) => self.flush_matched += 1,
                        flushed => {
                            let mut why = format!("{e} (fma rounded once)");
                            if let Some(Err(e2)) = twice {
                                why.push_str(&format!("; with fma rounded twice: {e2}"));
                            }
                            if let Some(Err(e3)) = flushed {
                                why.push_str(&format!("; with f32 subnormals flushed: {e3}"));
                            }
                            return Err(why);
                        }
                    },
                }
                if user {
                    if got != want {
                        // Tolerated differences (zero signs, math precision, fma rounding)
                        // would grow through later graphs of the same state: continue
                        // from the interpreter's bytes.
                        self.ex.bind(&m.name, &want).map_err(|e| e.to_string())?;
                    }
                    if let (Some(t), Some(alt)) = (&mut self.twice, &alt) {
                        if *alt != want {
                            t.bind(&m.name, &want).map_err(|e| e.to_string())?;
                        }
                    }
                    if let (Some(t), Some(f)) = (&mut self.flush, &flushed) {
                        if *f != want {
                            t.bind(&m.name, &want).map_err(|e| e.to_string())?;
                        }
                    }
                }
                n += 1;
            }
        }
        let msgs = self.ex.context().take_messages();
        if !msgs.is_empty() {
            return Err(format!("{} validation messages, first: {}", msgs.len(), msgs[0]));
        }
        Ok(n)
    }
}

/// Tolerance for float results of kernels using operations a conforming device need not
/// round correctly (docs/ir.md, "Float precision"; docs/codegen.md, "Deviations"): relative
/// 2^-12 (2^11 `f32` ulp), absolute 2^-12 below 1.
pub const MATH_REL_TOL: f64 = 1.0 / 4096.0;

/// `f16` results within this many `f16` ulp also pass the tolerance: the device computes
/// `f16` math in `f32` and rounds it, so one ulp of difference in `f32` can be one in `f16`.
pub const F16_ULP_TOL: f64 = 2.0;

/// Compares two images of memory of element type `ty`: bit-exact, or within
/// [`MATH_REL_TOL`] (and [`F16_ULP_TOL`]) for floats when `tol`. The sign of a float zero and
/// NaN signs and payloads are not compared (see `zeros` and `nans`).
pub fn same(what: &str, ty: Type, got: &[u8], want: &[u8], tol: bool) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} bytes on Vulkan, {} on the interpreter", got.len(), want.len()));
    }
    if got == want {
        return Ok(());
    }
    let es = ty.scalar.size() as usize;
    let lanes = if ty.lanes == 3 { 4 } else { ty.lanes as usize };
    let mut bad = 0;
    let mut first = None;
    for (i, (g, w)) in got.chunks(es).zip(want.chunks(es)).enumerate() {
        if g == w || (ty.lanes == 3 && i % lanes == 3) || zeros(ty.scalar, g, w) || nans(ty.scalar, g, w) {
            continue;
        }
        let ok = tol
            && match ty.scalar {
                ScalarType::F32 => close(
                    f64::from(f32::from_le_bytes(g.try_into().unwrap_or([0; 4]))),
                    f64::from(f32::from_le_bytes(w.try_into().unwrap_or([0; 4]))),
                ),
                ScalarType::F64 => close(
                    f64::from_le_bytes(g.try_into().unwrap_or([0; 8])),
                    f64::from_le_bytes(w.try_into().unwrap_or([0; 8])),
                ),
                ScalarType::F16 => {
                    let h = |b: &[u8]| cmdgraph_ir::data::half::f16::from_le_bytes(b.try_into().unwrap_or([0; 2]));
                    let (g, w) = (h(g), h(w));
                    close(f64::from(g), f64::from(w)) || {
                        // One f16 ulp at w: the gap to the next f16 away from zero.
                        let next = cmdgraph_ir::data::half::f16::from_bits((w.to_bits() & 0x7fff) + 1);
                        let ulp = f64::from(next) - f64::from(w).abs();
                        (f64::from(g) - f64::from(w)).abs() <= F16_ULP_TOL * ulp
                    }
                }
                _ => false,
            };
        if !ok {
            bad += 1;
            first.get_or_insert((i, g.to_vec(), w.to_vec()));
        }
    }
    match first {
        None => Ok(()),
        Some((i, g, w)) => Err(format!(
            "{what}: {bad} elements differ; first at scalar {i}: Vulkan {} interpreter {}",
            show(ty.scalar, &g),
            show(ty.scalar, &w)
        )),
    }
}

/// `+0` against `-0`: llvmpipe folds `x * 0.0` to `+0` even under
/// `SignedZeroInfNanPreserve` (docs/codegen.md, "Deviations"), so the sign of a float zero
/// is not compared.
fn zeros(s: ScalarType, g: &[u8], w: &[u8]) -> bool {
    let magnitude = |b: &[u8]| match s {
        ScalarType::F32 | ScalarType::F64 => {
            b.iter().rev().enumerate().all(|(i, &x)| if i == 0 { x & 0x7f == 0 } else { x == 0 })
        }
        ScalarType::F16 => b.len() == 2 && b[0] == 0 && b[1] & 0x7f == 0,
        _ => false,
    };
    magnitude(g) && magnitude(w)
}

/// Two NaNs: SPIR-V keeps no NaN sign or payload (`neg` of a NaN may not flip its sign).
fn nans(s: ScalarType, g: &[u8], w: &[u8]) -> bool {
    let nan = |b: &[u8]| match (s, b.len()) {
        (ScalarType::F32, 4) => f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_nan(),
        (ScalarType::F16, 2) => cmdgraph_ir::data::half::f16::from_le_bytes([b[0], b[1]]).is_nan(),
        (ScalarType::F64, 8) => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]).is_nan(),
        _ => false,
    };
    nan(g) && nan(w)
}

fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a - b).abs() <= MATH_REL_TOL * b.abs().max(1.0)
}

fn show(s: ScalarType, b: &[u8]) -> String {
    match (s, b.len()) {
        (ScalarType::F32, 4) => format!(
            "{:?} ({:#010x})",
            f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        ),
        (ScalarType::F16, 2) => format!(
            "{} ({:#06x})",
            cmdgraph_ir::data::half::f16::from_le_bytes([b[0], b[1]]),
            u16::from_le_bytes([b[0], b[1]])
        ),
        (ScalarType::F64, 8) => {
            let x = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            format!("{:?} ({x:#018x})", f64::from_bits(x))
        }
        _ => format!("{b:02x?}"),
    }
}
