//! The differential kernel fuzzer (cli/tests/kernel_fuzz.rs, docs/reliability.md): random
//! well-typed kernels ([`gen`]) batched into modules, each module verified, compiled at -O0
//! to -O3 (codegen validates every SPIR-V module with spirv-val), run on Vulkan with
//! validation on and on the reference interpreter with the same full-precision inputs, and
//! every output compared per kernel.

pub mod gen;
pub mod outline;
pub mod reduce;
pub mod remote;

use super::{executor, same, Rng};
use cmdgraph_codegen::bundle::{compile_module, Llvm};
use cmdgraph_codegen::Options;
use cmdgraph_interp::{Denormals, FmaRounding, Interpreter, RunOptions, SubgroupSize};
use cmdgraph_ir::data::half::f16;
use cmdgraph_ir::{ScalarType, Type};
use gen::{GenOptions, Kernel, Role, Ty, S};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// The chance, in percent, that a kernel gets a run of its ops outlined into a function.
const OUTLINE_PERCENT: u64 = 35;

/// Most kernel op executions per interpreter run (a generator bug, not a hang, if exceeded).
const FUEL: u64 = 1 << 28;

/// The seed of kernel `index` of a run with base seed `base`.
pub fn kernel_seed(base: u64, index: u64) -> u64 {
    (base << 32) ^ index
}

/// One kernel of a batch.
pub struct Entry {
    pub index: u64,
    pub seed: u64,
    pub kernel: Kernel,
}

impl Entry {
    fn name(&self) -> String {
        format!("k{}", self.index)
    }
    /// Memory object bound to a parameter.
    pub fn memory(&self, p: &gen::Param) -> String {
        match p.role {
            Role::Input => format!("@in_{}", p.ty.mangle()),
            _ => format!("@{}_{}", self.name(), &p.name[1..]),
        }
    }
    /// The kernel, its memory and its launch, as a module of its own.
    pub fn module_text(&self) -> String {
        module_text(std::slice::from_ref(self))
    }
}

/// A module holding every kernel of `batch` and one graph `@g` launching each once (no edges:
/// the kernels share only read-only inputs).
pub fn module_text(batch: &[Entry]) -> String {
    let mut out = String::new();
    let mut inputs = BTreeMap::new();
    for e in batch {
        out.push_str(&e.kernel.text);
        out.push('\n');
    }
    for e in batch {
        for p in &e.kernel.params {
            if p.role == Role::Input {
                inputs.insert(e.memory(p), (p.ty, e.kernel.count(p)));
            } else {
                let _ = writeln!(out, "usm {} : {}[{}]", e.memory(p), p.ty.text(), e.kernel.count(p));
            }
        }
    }
    for (name, (ty, n)) in &inputs {
        let _ = writeln!(out, "usm {name} : {}[{n}]", ty.text());
    }
    out.push_str("\ngraph @g {\n");
    for e in batch {
        let args: Vec<String> = e.kernel.params.iter().map(|p| e.memory(p)).collect();
        let _ = writeln!(out, "  %n{} = kernel @{} {} args({})", e.index, e.name(), e.kernel.launch, args.join(", "));
    }
    out.push_str("}\n");
    out
}

fn scalar(s: S) -> ScalarType {
    match s {
        S::Bool => ScalarType::Bool,
        S::I8 => ScalarType::I8,
        S::U8 => ScalarType::U8,
        S::I16 => ScalarType::I16,
        S::U16 => ScalarType::U16,
        S::I32 => ScalarType::I32,
        S::U32 => ScalarType::U32,
        S::I64 => ScalarType::I64,
        S::U64 => ScalarType::U64,
        S::F16 => ScalarType::F16,
        S::F32 => ScalarType::F32,
        S::F64 => ScalarType::F64,
    }
}

fn ir_type(t: Ty) -> Type {
    Type { scalar: scalar(t.s), lanes: t.n }
}

/// A full-precision `f32`: mostly uniform in [-8, 8) with every mantissa bit random, and
/// small integers, multiples of 1/16, special values (zeros, infinities, NaN, huge, tiny) and
/// arbitrary bit patterns.
fn random_f32(rng: &mut Rng) -> f32 {
    match rng.below(20) {
        0..=9 => ((rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 16.0 - 8.0) as f32,
        10..=12 => rng.below(17) as f32 - 8.0,
        13 => (rng.below(257) as f32 - 128.0) / 16.0,
        14..=15 => [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e30, -1e30, f32::MAX, 0.5, 3e-20]
            [rng.below(10) as usize],
        _ => {
            // Any bit pattern but subnormals (see docs/reliability.md, kernel fuzzer).
            let b = rng.next() as u32;
            let f = f32::from_bits(b);
            if f.is_subnormal() {
                0.0
            } else {
                f
            }
        }
    }
}

/// A full-precision `f64`, drawn as [`random_f32`] draws (every significand bit random),
/// with `f64`'s own special values and bit patterns, subnormals included: the interpreter
/// keeps `f64` subnormals in both denormal rules (docs/ir.md), as llvmpipe does.
fn random_f64(rng: &mut Rng) -> f64 {
    match rng.below(20) {
        0..=9 => (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 16.0 - 8.0,
        10..=12 => rng.below(17) as f64 - 8.0,
        13 => (rng.below(257) as f64 - 128.0) / 16.0,
        14..=15 => [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e300, -1e300, f64::MAX, 0.5, 3e-310]
            [rng.below(10) as usize],
        _ => f64::from_bits(rng.next()),
    }
}

fn random_int(rng: &mut Rng) -> u64 {
    match rng.below(10) {
        0..=3 => rng.below(33),
        4 => {
            [0, 1, u64::MAX, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 1 << 63, (1 << 63) - 1, 0x7f, 0x80, 0x7fff, 0x8000]
                [rng.below(12) as usize]
        }
        _ => rng.next(),
    }
}

/// Bytes for `count` elements of `ty` in the role `role`.
fn bytes(ty: Ty, count: u64, role: Role, rng: &mut Rng) -> Vec<u8> {
    let lanes = if ty.n == 3 { 4 } else { u64::from(ty.n) };
    let mut out = Vec::with_capacity(ty.size() * count as usize);
    for _ in 0..count * lanes {
        match ty.s {
            S::Bool => out.push(rng.below(2) as u8),
            S::I8 | S::U8 => out.push(random_int(rng) as u8),
            S::I16 | S::U16 => out.extend_from_slice(&(random_int(rng) as u16).to_le_bytes()),
            S::I32 | S::U32 => out.extend_from_slice(&(random_int(rng) as u32).to_le_bytes()),
            S::I64 | S::U64 => out.extend_from_slice(&random_int(rng).to_le_bytes()),
            S::F16 => {
                let h = f16::from_f32(random_f32(rng));
                let h = if h.to_f32() != 0.0 && h.to_f32().abs() < 6.2e-5 { f16::from_f32(0.0) } else { h };
                out.extend_from_slice(&h.to_bits().to_le_bytes())
            }
            S::F32 if role == Role::FloatAtomic => out.extend_from_slice(&(rng.below(33) as f32 - 16.0).to_le_bytes()),
            S::F32 => out.extend_from_slice(&random_f32(rng).to_le_bytes()),
            S::F64 => out.extend_from_slice(&random_f64(rng).to_le_bytes()),
        }
    }
    out
}

/// A memory object: name, bytes bound, element type, role, owning kernel's position.
type Mem = (String, Vec<u8>, Ty, Role, Option<usize>);

/// Every memory object of a batch with its bytes, element type and whether it is compared
/// (and how): `(name, bytes, type, role, kernel position in the batch)`.
fn memories(batch: &[Entry], seed: u64) -> Vec<Mem> {
    let mut rng = Rng(seed ^ 0x5eed);
    let mut out: Vec<Mem> = Vec::new();
    for (i, e) in batch.iter().enumerate() {
        for p in &e.kernel.params {
            let name = e.memory(p);
            if out.iter().any(|m| m.0 == name) {
                continue;
            }
            let b = bytes(p.ty, e.kernel.count(p), p.role, &mut rng);
            let owner = if p.role == Role::Input { None } else { Some(i) };
            out.push((name, b, p.ty, p.role, owner));
        }
    }
    out
}

/// One failure: which kernel, at which level, what, and how to reproduce it.
#[derive(Clone, Debug)]
pub struct Failure {
    pub index: u64,
    pub opt: Option<u8>,
    pub message: String,
    pub text: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = self.opt.map(|o| format!(" at -O{o}")).unwrap_or_default();
        writeln!(
            f,
            "kernel #{}{level} (rerun: CMDGRAPH_FUZZ_ONLY={} with the same CMDGRAPH_FUZZ_SEED): {}",
            self.index, self.index, self.message
        )?;
        write!(f, "{}", self.text)
    }
}

/// Totals of a run.
#[derive(Default)]
pub struct Stats {
    pub kernels: u64,
    pub modules: u64,
    pub compiled: u64,
    pub compared: u64,
    pub features: BTreeMap<&'static str, (u64, u64)>,
    pub failures: Vec<Failure>,
    pub gen_time: Duration,
    pub interp_time: Duration,
    pub compile_time: Duration,
    pub vulkan_time: Duration,
    /// Kernel runs with `fma` whose outputs matched only one rounding rule, by rule.
    pub fma_rules: BTreeMap<&'static str, u64>,
    /// Kernel runs whose outputs matched only with `f32` subnormals flushed
    /// (`Denormals::Flush`, docs/ir.md "Float precision").
    pub flushed: u64,
}

/// The fuzzer's configuration.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub base_seed: u64,
    pub gen: GenOptions,
}

/// What one batch run gave: per kernel position (`None`: the whole batch), the failures.
type Outcome = Result<(), Vec<(Option<usize>, String)>>;

/// One combination of the float rules a conforming device may follow.
type Rule = (FmaRounding, Denormals);

/// The interpreter's outputs under each rule combination the batch needs.
type Wants = Vec<(Rule, BTreeMap<String, Vec<u8>>)>;

/// `(fma once, denormals flush)`.
fn rule_name((fma, denormals): Rule) -> String {
    format!("(fma {}, denormals {})", fma.name(), denormals.name())
}

/// Where the device's outputs of a batch come from.
#[derive(Clone, Copy, Debug)]
pub enum Device<'a> {
    /// Compile here and run on this machine's default Vulkan device, validation on.
    Local,
    /// Compile here and write the bundle and inputs under this folder for another machine
    /// (the GPU machine) to run; compare nothing (`remote.rs`).
    Export(&'a std::path::Path),
    /// Read the outputs another machine wrote under this folder (`remote.rs`); compile nothing.
    Import(&'a std::path::Path),
}

/// What a device gave for a batch at one level: every memory object's bytes after the run,
/// and the validation layer's messages.
pub struct DeviceRun {
    pub outputs: BTreeMap<String, Vec<u8>>,
    pub messages: Vec<String>,
}

/// Compiles `module` at -O`opt` to bundle bytes, as `cmdgraph compile -O` with no pass does.
pub fn compile_at(module: &cmdgraph_ir::Module, opt: u8, stats: &mut Stats) -> Result<Vec<u8>, String> {
    let t = Instant::now();
    let compiled = compile_module(module, &[], &Options { opt_level: opt }, &Llvm);
    stats.compile_time += t.elapsed();
    let bundle = compiled.map_err(|e| e.to_string()).and_then(|(b, _)| b.to_bytes().map_err(|e| e.to_string()));
    let bundle = bundle.map_err(|e| format!("compile: {e}"))?;
    stats.compiled += 1;
    Ok(bundle)
}

/// The subgroup size of the device the batches are compared on, and whether that device's
/// float subgroup collectives combine lanes in the interpreter's order (llvmpipe's, lane by
/// lane): `CMDGRAPH_FUZZ_SUBGROUP_SIZE` for batches another machine runs (scripts/gpu-fuzz.sh
/// sets 32, NVIDIA's; their order is not modelled), else this machine's default device
/// (8 and in order when there is none: llvmpipe, the CI device).
pub fn subgroup_target() -> (u32, bool) {
    static TARGET: std::sync::OnceLock<(u32, bool)> = std::sync::OnceLock::new();
    *TARGET.get_or_init(|| {
        if let Some(n) = std::env::var("CMDGRAPH_FUZZ_SUBGROUP_SIZE").ok().and_then(|v| v.parse().ok()) {
            return (n, false);
        }
        let opts = cmdgraph_executor::ContextOptions::default();
        match cmdgraph_executor::vk::context::Context::new(&opts) {
            Ok(ctx) => (ctx.subgroup_size(), ctx.is_llvmpipe()),
            Err(_) => (SubgroupSize::default().0, true),
        }
    })
}

/// Runs the batch at -O`opt` on this machine's default Vulkan device.
fn run_local(module: &cmdgraph_ir::Module, mems: &[Mem], opt: u8, stats: &mut Stats) -> Result<DeviceRun, String> {
    let bundle = compile_at(module, opt, stats)?;
    let t = Instant::now();
    let result = (|| {
        let mut ex = executor(&bundle).map_err(|e| format!("load: {e}"))?;
        for (name, b, ..) in mems {
            ex.bind(name, b).map_err(|e| format!("bind {name}: {e}"))?;
        }
        ex.finalize("g")
            .and_then(|id| ex.run(id))
            .and_then(|_| ex.wait_idle())
            .map_err(|e| format!("vulkan run: {e}"))?;
        let mut outputs = BTreeMap::new();
        for (name, ..) in mems {
            outputs.insert(name.clone(), ex.read(name).map_err(|e| format!("read {name}: {e}"))?);
        }
        Ok(DeviceRun { outputs, messages: ex.context().take_messages() })
    })();
    stats.vulkan_time += t.elapsed();
    result
}

/// Compares what the device gave with the interpreter's outputs `wants`: each kernel's
/// outputs must all match those of one rule combination (a conforming device rounds `fma`
/// once or twice, and keeps or flushes `f32` subnormals); any validation message fails the
/// batch.
fn compare(run: &DeviceRun, mems: &[Mem], wants: &Wants, stats: &mut Stats) -> Outcome {
    // Per kernel position, per rule: the first mismatch.
    let mut errs: BTreeMap<usize, Vec<Option<String>>> = BTreeMap::new();
    for (name, _, ty, role, owner) in mems {
        let Some(owner) = owner else { continue };
        let Some(got) = run.outputs.get(name) else {
            return Err(vec![(None, format!("the device gave no {name}"))]);
        };
        let slot = errs.entry(*owner).or_insert_with(|| vec![None; wants.len()]);
        for (r, (_, want)) in wants.iter().enumerate() {
            if let Err(e) = same(name, ir_type(*ty), got, &want[name], *role == Role::Approx) {
                slot[r].get_or_insert(e);
            }
        }
    }
    let fma_rules = wants.iter().filter(|w| w.0 .1 == Denormals::Preserve).count();
    let mut bad = Vec::new();
    for (owner, per_rule) in errs {
        let ok: Vec<Rule> = per_rule.iter().zip(wants).filter(|(e, _)| e.is_none()).map(|(_, w)| w.0).collect();
        if ok.is_empty() {
            let msgs: Vec<String> = per_rule
                .iter()
                .zip(wants)
                .filter_map(|(e, w)| e.as_ref().map(|e| format!("{} {e}", rule_name(w.0))))
                .collect();
            bad.push((Some(owner), msgs.join("; ")));
            continue;
        }
        let fmas: std::collections::BTreeSet<&str> = ok.iter().map(|r| r.0.name()).collect();
        if fma_rules > 1 && fmas.len() == 1 {
            *stats.fma_rules.entry(ok[0].0.name()).or_default() += 1;
        }
        if ok.iter().all(|r| r.1 == Denormals::Flush) {
            stats.flushed += 1;
        }
    }
    if let Some(first) = run.messages.first() {
        bad.push((None, format!("{} validation messages, first: {first}", run.messages.len())));
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(bad)
    }
}

/// A batch made ready to run: its module, memory and the interpreter's outputs.
pub struct Prepared {
    pub text: String,
    pub module: cmdgraph_ir::Module,
    mems: Vec<Mem>,
    wants: Wants,
}

impl Prepared {
    /// The interpreter's bytes of memory object `name` after the run (`fma` rounded once,
    /// subnormals kept).
    pub fn expected(&self, name: &str) -> Option<&[u8]> {
        self.wants.first()?.1.get(name).map(Vec::as_slice)
    }
    /// The interpreter's bytes of memory object `name` after the run under one rule
    /// combination (`None` when the batch was not run under it: `fma` twice without `fma`).
    pub fn expected_under(&self, fma: FmaRounding, denormals: Denormals, name: &str) -> Option<&[u8]> {
        self.wants.iter().find(|w| w.0 == (fma, denormals))?.1.get(name).map(Vec::as_slice)
    }
    /// Every memory object's name (`@in_f32`, `@k7_o_u32`, ...).
    pub fn objects(&self) -> impl Iterator<Item = &str> {
        self.mems.iter().map(|m| m.0.as_str())
    }
    /// The bytes bound to memory object `name` before the run.
    pub fn bound(&self, name: &str) -> Option<&[u8]> {
        self.mems.iter().find(|m| m.0 == name).map(|m| m.1.as_slice())
    }
}

/// The bytes every memory object of `batch` starts with, as the run gave them: a kernel
/// cut out of its batch (the reducer) runs with these rather than inputs drawn for it alone,
/// since a failure can need its batch's values (seed 7 #677).
pub struct BatchMemory(Vec<Mem>);

/// The memory `batch` runs with (`run` draws it the same way).
pub fn batch_memory(batch: &[Entry]) -> BatchMemory {
    BatchMemory(memories(batch, batch.first().map(|e| e.seed).unwrap_or(0)))
}

/// Parses, verifies and interprets `batch`. An error here is the generator's (or, for a
/// reduced kernel, a reduction step that broke the kernel).
pub fn prepare(batch: &[Entry], stats: &mut Stats) -> Result<Prepared, String> {
    prepare_with(batch, None, stats)
}

/// `prepare`, with each memory object that `from` has (same name and size) starting with
/// `from`'s bytes.
pub fn prepare_with(batch: &[Entry], from: Option<&BatchMemory>, stats: &mut Stats) -> Result<Prepared, String> {
    let text = module_text(batch);
    let render = |d: Vec<cmdgraph_ir::diag::Diagnostic>, text: &str| -> String {
        d.iter().map(|d| d.render("fuzz.cgir", text)).collect::<Vec<_>>().join("\n")
    };
    let mut module =
        cmdgraph_ir::text::parse(&text).map_err(|d| format!("the batch does not parse:\n{}", render(d, &text)))?;
    cmdgraph_ir::verify::verify(&module).map_err(|d| format!("the batch does not verify:\n{}", render(d, &text)))?;
    let seed = batch.first().map(|e| e.seed).unwrap_or(0);
    // Some kernels call a function holding a run of their ops (outline.rs); the module is
    // then what its text reads back as.
    let outlined = outline::outline(&mut module, &mut Rng(seed ^ 0x0071_1e5e), OUTLINE_PERCENT);
    let text = if outlined > 0 {
        let printed = cmdgraph_ir::text::print(&module);
        module = cmdgraph_ir::text::parse(&printed)
            .map_err(|d| format!("the outlined batch does not parse:\n{}", render(d, &printed)))?;
        cmdgraph_ir::verify::verify(&module)
            .map_err(|d| format!("the outlined batch does not verify:\n{}", render(d, &printed)))?;
        let c = stats.features.entry("call (a run of ops outlined into a function)").or_default();
        c.0 += outlined;
        c.1 += outlined;
        printed
    } else {
        text
    };
    let mut mems = memories(batch, seed);
    for m in &mut mems {
        if let Some(f) = from.and_then(|f| f.0.iter().find(|f| f.0 == m.0 && f.1.len() == m.1.len())) {
            m.1.clone_from(&f.1);
        }
    }
    // The oracle, under each fma rule when the batch has an fma, with subnormals kept and
    // flushed.
    let fmas: &[FmaRounding] = if text.contains(" fma ") { &FmaRounding::ALL } else { &[FmaRounding::Once] };
    let rules = Denormals::ALL.iter().flat_map(|&d| fmas.iter().map(move |&f| (f, d)));
    let t = Instant::now();
    let wants: Result<Wants, String> = rules
        .map(|(fma, denormals)| {
            let mut it = Interpreter::new(&module).map_err(|e| e.to_string())?;
            for (name, b, ..) in &mems {
                it.bind(name, b).map_err(|e| format!("bind {name}: {e}"))?;
            }
            let id = it.finalize("g").map_err(|e| e.to_string())?;
            let subgroup_size = SubgroupSize(subgroup_target().0);
            it.run_with(id, &RunOptions { fuel: Some(FUEL), fma, denormals, subgroup_size, ..RunOptions::default() })
                .map_err(|e| e.to_string())?;
            let out: Result<BTreeMap<_, _>, String> =
                mems.iter().map(|m| Ok((m.0.clone(), it.read(&m.0).map_err(|e| e.to_string())?.to_vec()))).collect();
            Ok(((fma, denormals), out?))
        })
        .collect();
    stats.interp_time += t.elapsed();
    let wants = wants.map_err(|e| format!("the interpreter fails: {e}"))?;
    Ok(Prepared { text, module, mems, wants })
}

/// Runs a prepared batch at -O`opt` on `device` and compares: `Ok` also when exported.
pub fn trial(p: &Prepared, batch: &[Entry], opt: u8, device: Device, stats: &mut Stats) -> Outcome {
    let run = match device {
        Device::Local => run_local(&p.module, &p.mems, opt, stats),
        Device::Export(dir) => {
            let bundle = compile_at(&p.module, opt, stats).map_err(|e| vec![(None, e)])?;
            let names: Vec<(&str, &[u8])> = p.mems.iter().map(|m| (m.0.as_str(), m.1.as_slice())).collect();
            return remote::export(dir, batch[0].index, opt, &p.text, &bundle, &names).map_err(|e| vec![(None, e)]);
        }
        Device::Import(dir) => remote::import(dir, batch[0].index, opt),
    };
    match run {
        Ok(run) => compare(&run, &p.mems, &p.wants, stats),
        Err(e) => Err(vec![(None, e)]),
    }
}

/// Runs one batch; failures are added to `stats`. A batch failure that names no kernel is
/// retried kernel by kernel to find the culprit.
pub fn run_batch(batch: &[Entry], stats: &mut Stats, levels: &[u8], device: Device) {
    let p = prepare(batch, stats).unwrap_or_else(|e| panic!("generator bug: {e}\n{}", module_text(batch)));
    stats.modules += 1;
    for &opt in levels {
        let Err(bad) = trial(&p, batch, opt, device, stats) else {
            continue;
        };
        let mut named: BTreeMap<usize, String> = BTreeMap::new();
        let mut anonymous = Vec::new();
        for (owner, e) in bad {
            match owner {
                Some(i) => {
                    named.entry(i).or_insert(e);
                }
                None => anonymous.push(e),
            }
        }
        // Files from another machine name their batch by its first kernel: no retries there.
        if !anonymous.is_empty() && batch.len() > 1 && matches!(device, Device::Local) {
            // Find the kernels that fail alone.
            let before = stats.failures.len();
            for e in batch {
                run_batch(std::slice::from_ref(e), stats, &[opt], device);
            }
            if stats.failures.len() == before {
                stats.failures.push(Failure {
                    index: batch[0].index,
                    opt: Some(opt),
                    message: format!("the batch fails, no kernel alone: {}", anonymous.join("; ")),
                    text: p.text.clone(),
                });
            }
            continue;
        }
        for e in anonymous {
            stats.failures.push(Failure { index: batch[0].index, opt: Some(opt), message: e, text: p.text.clone() });
        }
        for (i, e) in named {
            let entry = &batch[i];
            stats.failures.push(Failure { index: entry.index, opt: Some(opt), message: e, text: entry.module_text() });
        }
    }
}

/// Generates kernels `first..first + count` and runs them in batches of `per_module`.
pub fn run(cfg: &Config, indices: &[u64], per_module: usize, device: Device, stats: &mut Stats) {
    for chunk in indices.chunks(per_module.max(1)) {
        let t = Instant::now();
        let batch: Vec<Entry> = chunk
            .iter()
            .map(|&index| {
                let seed = kernel_seed(cfg.base_seed, index);
                let kernel = gen::kernel(seed, &format!("k{index}"), cfg.gen);
                Entry { index, seed, kernel }
            })
            .collect();
        stats.gen_time += t.elapsed();
        for e in &batch {
            for (f, n) in &e.kernel.features {
                let c = stats.features.entry(f).or_default();
                c.0 += 1;
                c.1 += n;
            }
        }
        stats.kernels += batch.len() as u64;
        let failures = stats.failures.len();
        run_batch(&batch, stats, &[0, 1, 2, 3], device);
        stats.compared += (batch.len() as u64 * 4).saturating_sub((stats.failures.len() - failures) as u64);
    }
}
