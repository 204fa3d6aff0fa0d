//! Loading a bundle: format version, content, IR, kernel layouts and SPIR-V, all checked
//! before anything reaches Vulkan. Any malformed or truncated input is an [`ExecError`].

use crate::error::{ExecError, Result};
use crate::spirv;
use cmdgraph_ir::bundle::signature::{BundleSignature, PublicKey};
use cmdgraph_ir::bundle::{ArgFieldKind, Bundle, BundleError, CompiledKernel, MemorySlot, FORMAT_VERSION};
use cmdgraph_ir::kernel::ParamType;
use cmdgraph_ir::Module;
use rustc_hash::FxHashMap;
use std::sync::OnceLock;

mod finalizable;
mod plan;
mod workgroup;

pub use workgroup::workgroup_bytes;

/// Largest argument block accepted (a sanity bound far above any real kernel's).
const MAX_BLOCK_BYTES: u32 = 1 << 16;

pub use cmdgraph_ir::bundle::MAX_ITEMS_PER_INVOCATION;

/// Portable work-group limits (Vulkan's required minimums for
/// `maxComputeWorkGroupSize`/`maxComputeWorkGroupInvocations`); the device's own limits
/// are checked again when the pipelines are created.
pub const MAX_WORKGROUP: [u32; 3] = [1024, 1024, 64];
/// See [`MAX_WORKGROUP`].
pub const MAX_WORKGROUP_INVOCATIONS: u32 = 1024;

/// Most work-group memory a variant may declare (its SPIR-V's `Workgroup` variables,
/// [`workgroup_bytes`]) or claim for a `local<T>` argument (its layout's capacity): 256 KiB.
/// Above every device's `maxComputeSharedMemorySize` (Vulkan requires 16 KiB; drivers report
/// 32 to 64 KiB, and the largest work-group memory of any GPU, 227 KiB on Hopper, is below
/// it), so no bundle that can run anywhere is refused, and the sizes stay far from overflow.
/// The device's own limit is checked when the executor creates the pipelines
/// (`Executor::new`).
pub const MAX_WORKGROUP_MEMORY: u64 = 1 << 18;

/// A bundle whose every part has been checked, with its optimized module parsed.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The bundle as read.
    pub bundle: Bundle,
    /// `bundle.optimized`, parsed and verified.
    pub module: Module,
    /// `bundle.source`, parsed and verified on first use ([`Loaded::source`]): only
    /// whole-graph and node updates need it (docs/semantics.md), so a load does not pay for
    /// a second module.
    source: OnceLock<std::result::Result<Module, String>>,
    /// Per graph plan of the bundle (same order): its launch table by node name without
    /// `%`, then (alternative, variant) pairs, so finalize finds a node's variant in O(1)
    /// instead of a scan of the table per node (keyed by name alone so that a lookup by
    /// `&str` allocates nothing).
    pub launches: Vec<LaunchTable>,
    /// The bundle's verified signature ([`load_bytes_with`]); `None` for an unsigned bundle
    /// or one checked in memory ([`check`]).
    pub signature: Option<BundleSignature>,
}

/// How [`load_bytes_with`] loads.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// `None` (the default): a signature is optional, and one that is present must still
    /// verify. `Some(keys)`: the bundle must be signed by one of `keys`; an unsigned bundle
    /// or one signed by another key is refused before its content is parsed. An empty list
    /// trusts no one (everything is refused) rather than turning the requirement off.
    pub trusted_keys: Option<Vec<PublicKey>>,
}

/// One graph's launch table: node name (without `%`) → (alternative, variant index) pairs.
pub type LaunchTable = FxHashMap<String, Vec<(Option<u32>, u32)>>;

impl Loaded {
    /// The bundle's source module, parsed and verified the first time it is asked for
    /// (whole-graph and node updates); an error names the module.
    pub fn source(&self) -> Result<&Module> {
        let parsed = self.source.get_or_init(|| {
            let m = cmdgraph_ir::text::parse(&self.bundle.source).map_err(|d| format!("source: {}", first(&d)))?;
            verify(&m).map_err(|e| format!("source: {e}"))?;
            Ok(m)
        });
        parsed.as_ref().map_err(|e| ExecError::Ir(e.clone()))
    }
}

impl Loaded {
    /// The compiled variant a launch of node `node` (alternative `alt` of a dynamic node)
    /// of graph `graph` runs: the bundle's launch table when it names one whose work-group
    /// size fits the launch (a range launch's size is codegen's choice), else
    /// [`variant_for`](Self::variant_for). Finalize, updates and the loader's check of every
    /// launch ([`check`]) all ask this one function.
    pub fn variant_of(
        &self,
        graph: &str,
        node: &str,
        alt: Option<u32>,
        kernel: &str,
        launch: &cmdgraph_ir::Launch,
    ) -> Result<usize> {
        let plan = self.bundle.graphs.iter().position(|p| p.name == graph);
        let entry = plan
            .and_then(|i| self.launches.get(i))
            .and_then(|table| table.get(node))
            .and_then(|entries| entries.iter().find(|(a, _)| *a == alt).map(|&(_, index)| index));
        if let Some(index) = entry {
            let k = self.bundle.kernels.get(index as usize).filter(|k| k.kernel == kernel).ok_or_else(|| {
                ExecError::Bundle(format!(
                    "@{graph}: the launch table gives %{node} variant {index}, not one of @{kernel}"
                ))
            })?;
            let (_, _, local) = crate::args::geometry(launch)?;
            if local.is_none_or(|l| l == k.workgroup_size) {
                return Ok(index as usize);
            }
        }
        self.variant_for(kernel, launch)
    }

    /// The variant of `kernel` for a launch: the one of its work-group size for `nd_range`,
    /// the first for a range launch.
    pub fn variant_for(&self, kernel: &str, launch: &cmdgraph_ir::Launch) -> Result<usize> {
        let (_, _, local) = crate::args::geometry(launch)?;
        let mut candidates = self.bundle.kernels.iter().enumerate().filter(|(_, k)| k.kernel == kernel);
        match local {
            Some(l) => candidates.find(|(_, k)| k.workgroup_size == l).map(|(i, _)| i).ok_or_else(|| {
                ExecError::Invalid(format!("@{kernel} has no compiled variant for work-group size {l:?}"))
            }),
            // A range launch leaves the work-group size to the implementation: the first
            // variant (the bundle sorts them by size).
            None => candidates
                .next()
                .map(|(i, _)| i)
                .ok_or_else(|| ExecError::Bundle(format!("no compiled variant of @{kernel}"))),
        }
    }
}

/// Reads a bundle file (as `Bundle::to_bytes` writes it, content hash included) and checks
/// it: format version, lengths, hash, payload, then everything [`check`] checks. Linear in
/// the file; the source module is parsed only when an update needs it ([`Loaded::source`]).
pub fn load_bytes(bytes: &[u8]) -> Result<Loaded> {
    load_bytes_with(bytes, &LoadOptions::default())
}

/// [`load_bytes`] with `options`: with trusted keys, the signature is required and its key
/// must be one of them (docs/bundle.md, "Signature"). Refusals are [`ExecError::Untrusted`]
/// naming the key that signed (fingerprint) and the trusted ones. The signature is checked
/// on the raw file ([`Bundle::read_framing`]: header, trailer, signature over the stated
/// content digest) before the body is decompressed or any field decoded, so an untrusted
/// file costs no more than its own bytes, whatever its payload claims.
pub fn load_bytes_with(bytes: &[u8], options: &LoadOptions) -> Result<Loaded> {
    let framed = Bundle::read_framing(bytes).map_err(from_bundle_error)?;
    let signature = framed.signature.clone();
    if let Some(trusted) = &options.trusted_keys {
        let list = || {
            let names: Vec<String> = trusted.iter().map(PublicKey::fingerprint).collect();
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        match &signature {
            None => {
                return Err(ExecError::Untrusted(format!(
                    "the bundle is not signed, and this load requires a signature by a trusted key (trusted: {})",
                    list()
                )))
            }
            Some(s) if !trusted.contains(&s.key) => {
                return Err(ExecError::Untrusted(format!(
                    "the bundle is signed by key {}, which is not trusted (trusted: {})",
                    s.key.fingerprint(),
                    list()
                )))
            }
            Some(_) => {}
        }
    }
    let bundle = framed.decode().map_err(from_bundle_error)?;
    let mut loaded = check(bundle)?;
    loaded.signature = signature;
    Ok(loaded)
}

/// Checks an in-memory bundle (as [`load_str`] does after parsing).
pub fn check(bundle: Bundle) -> Result<Loaded> {
    if bundle.format_version != FORMAT_VERSION {
        return Err(ExecError::Version { found: bundle.format_version, expected: FORMAT_VERSION });
    }
    let module = cmdgraph_ir::text::parse(&bundle.optimized).map_err(|d| ExecError::Ir(first(&d)))?;
    verify(&module).map_err(ExecError::Ir)?;
    // The compiler refuses them (E0506); a bundle made otherwise must not run one whatever
    // its condition says.
    if let Some(x) = cmdgraph_ir::conditional::not_in_bodies(&module).first() {
        let (g, n) = (&module.graphs[x.graph], &module.graphs[x.graph].nodes[x.node]);
        return Err(ExecError::Bundle(format!("@{} %{}: {}", g.name, n.name, x.reason)));
    }
    for (i, k) in bundle.kernels.iter().enumerate() {
        check_kernel(&module, i, k)?;
    }
    plan::check_plans(&bundle, &module)?;
    let launches = bundle
        .graphs
        .iter()
        .map(|p| {
            let mut table = LaunchTable::with_capacity_and_hasher(p.launches.len(), Default::default());
            for l in &p.launches {
                table.entry(l.node.trim_start_matches('%').to_string()).or_default().push((l.alternative, l.kernel));
            }
            table
        })
        .collect();
    let loaded = Loaded { bundle, module, source: OnceLock::new(), launches, signature: None };
    finalizable::check_graphs(&loaded)?;
    Ok(loaded)
}

/// The verifier's first error. Data races (E0280) are allowed: the compiler's front end
/// decided on them (`cmdgraph compile --allow-races`), and a bundle runs what it holds.
fn verify(m: &cmdgraph_ir::Module) -> std::result::Result<(), String> {
    let options = cmdgraph_ir::verify::VerifyOptions { allow_races: true };
    match cmdgraph_ir::verify::check_with(m, &options).first() {
        None => Ok(()),
        Some(e) => Err(e.to_diagnostic().message),
    }
}

fn first(d: &[cmdgraph_ir::diag::Diagnostic]) -> String {
    d.first().map(|d| d.message.clone()).unwrap_or_else(|| "no diagnostic".into())
}

/// The loader's error for a failure of [`Bundle::read_framing`] or [`Framed::decode`]
/// (`cmdgraph_ir::bundle::Framed`): the format version first (a different version, format
/// 1's RON text included, is reported as such), then the lengths, the trailer and signature,
/// the body, the SHA-256 content hash, the payload.
fn from_bundle_error(e: BundleError) -> ExecError {
    match e {
        BundleError::Version { found, expected } => ExecError::Version { found, expected },
        BundleError::HashMismatch { found, computed } => {
            ExecError::Hash(format!("the file says {found}, its content hashes to {computed}"))
        }
        BundleError::Inconsistent { message } => ExecError::Bundle(message),
        e @ BundleError::Signature { .. } => ExecError::Untrusted(e.to_string()),
        BundleError::NotABundle { message } => ExecError::Malformed(format!("not a cmdgraph bundle: {message}")),
        BundleError::Malformed { message } | BundleError::Serialize { message } => ExecError::Malformed(message),
    }
}

/// Checks one compiled kernel (entry `variant` of the bundle's list) against its IR
/// signature and the ABI (docs/abi.md): work-group size within the portable limits, items
/// per invocation, every argument field the size and alignment of its parameter, inside the
/// block and overlapping no other field, every memory slot named by exactly one field or
/// device global, then the SPIR-V ([`spirv::check_variant`]) against all of it.
fn check_kernel(module: &Module, variant: usize, k: &CompiledKernel) -> Result<()> {
    // The variant index goes last so that "kernel @k: <field>" reads the same for every variant.
    let bad = |m: String| ExecError::Bundle(format!("kernel @{}: {m} (variant {variant})", k.kernel));
    let handle = module.kernel_by_name(&k.kernel).ok_or_else(|| bad("not in the IR".into()))?;
    let kernel = &module.kernels[handle];
    let l = &k.layout;
    if l.block_size < 32 || l.block_size > MAX_BLOCK_BYTES || !l.block_size.is_multiple_of(4) {
        return Err(bad(format!("argument block of {} bytes", l.block_size)));
    }
    let wg = k.workgroup_size;
    let invocations = wg.iter().try_fold(1u32, |p, &d| p.checked_mul(d));
    if wg.contains(&0)
        || wg.iter().zip(MAX_WORKGROUP).any(|(&d, m)| d > m)
        || invocations.is_none_or(|p| p > MAX_WORKGROUP_INVOCATIONS)
    {
        return Err(bad(format!(
            "workgroup_size {wg:?} outside the portable limits (each at most {MAX_WORKGROUP:?}, \
             {MAX_WORKGROUP_INVOCATIONS} invocations)"
        )));
    }
    let items = k.items_per_invocation;
    if !items.is_power_of_two() || items > MAX_ITEMS_PER_INVOCATION {
        return Err(bad(format!(
            "items_per_invocation {items}: must be a power of two from 1 to {MAX_ITEMS_PER_INVOCATION}"
        )));
    }
    if l.fields.len() != kernel.params.len() {
        return Err(bad(format!("{} fields for {} parameters", l.fields.len(), kernel.params.len())));
    }
    // Byte ranges of the fields, for the overlap check: (start, end, field index).
    let mut ranges = Vec::with_capacity(l.fields.len());
    let mut slot_field = vec![None; l.slots.len()];
    for (i, (field, param)) in l.fields.iter().zip(&kernel.params).enumerate() {
        let (bytes, align, ok) = match (&field.kind, &param.ty) {
            (ArgFieldKind::Value { bytes }, ParamType::Value(t)) => {
                // codegen/src/layout.rs: bool is a u32; a 3-vector is aligned as a 4-vector.
                let s = if t.scalar == cmdgraph_ir::ScalarType::Bool { 4 } else { t.scalar.size() as u32 };
                let size = s * u32::from(t.lanes);
                (size, if t.lanes == 3 { 4 * s } else { size }, *bytes == size)
            }
            (ArgFieldKind::Buffer { slot, elem_bytes }, ParamType::Buffer { elem, .. }) => {
                let slot_ok = matches!(l.slots.get(*slot as usize),
                    Some(MemorySlot::Param { param, .. }) if *param as usize == i);
                if let Some(s) = slot_field.get_mut(*slot as usize) {
                    *s = Some(i);
                }
                (8, 4, slot_ok && u64::from(*elem_bytes) == elem.size())
            }
            (ArgFieldKind::Local { elem_bytes, capacity }, ParamType::Local { elem }) => {
                // The room the variant claims: an argument up to it is accepted at encode.
                let bytes = capacity.checked_mul(u64::from(*elem_bytes));
                if bytes.is_none_or(|b| b > MAX_WORKGROUP_MEMORY) {
                    return Err(bad(format!(
                        "field {i} (%{}) claims {capacity} work-group elements of {elem_bytes} bytes, more than \
                         {MAX_WORKGROUP_MEMORY} bytes of work-group memory",
                        param.name
                    )));
                }
                (4, 4, u64::from(*elem_bytes) == elem.size())
            }
            _ => (0, 1, false),
        };
        if !ok {
            return Err(bad(format!("field {i} ({:?}) does not fit parameter %{}", field.kind, param.name)));
        }
        let end = field.offset.checked_add(bytes).filter(|&e| e <= l.block_size);
        let Some(end) = end else {
            return Err(bad(format!(
                "field {i} (%{}) at offset {} ({bytes} bytes) ends past the block of {} bytes",
                param.name, field.offset, l.block_size
            )));
        };
        if field.offset < 32 || !field.offset.is_multiple_of(align) {
            return Err(bad(format!(
                "field {i} (%{}) at offset {}: inside the 32-byte header or not aligned to {align}",
                param.name, field.offset
            )));
        }
        ranges.push((field.offset, end, i));
    }
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        if let [(_, end, a), (start, _, b)] = w {
            if start < end {
                return Err(bad(format!("field {a} and field {b} overlap at byte {start} of the argument block")));
            }
        }
    }
    let mut globals = std::collections::HashSet::new();
    for (i, slot) in l.slots.iter().enumerate() {
        match slot {
            MemorySlot::Param { param, .. } => {
                if !matches!(kernel.params.get(*param as usize).map(|p| p.ty), Some(ParamType::Buffer { .. })) {
                    return Err(bad(format!("slot {i} names parameter {param}, not a buffer")));
                }
                // Two slots of one parameter would give one binding's memory to another.
                if slot_field.get(i).copied().flatten() != Some(*param as usize) {
                    return Err(bad(format!("slot {i} (binding {}) is not the slot of field {param}", i + 1)));
                }
            }
            MemorySlot::Predicate | MemorySlot::LoopPredicate { .. } => {
                // The kernel reads it as its last binding (docs/abi.md, "Predicated variants").
                if i + 1 != l.slots.len() {
                    return Err(bad(format!("slot {i} (binding {}) is a predicate but not the last slot", i + 1)));
                }
                // The condition is read through the parameter's own slot, as a 4-byte word.
                if let MemorySlot::LoopPredicate { condition_param: p } = slot {
                    let word = matches!(
                        kernel.params.get(*p as usize).map(|p| p.ty),
                        Some(ParamType::Buffer { elem, .. }) if elem.lanes == 1
                            && matches!(elem.scalar, cmdgraph_ir::ScalarType::U32 | cmdgraph_ir::ScalarType::I32)
                    );
                    if !word || !slot_field.contains(&Some(*p as usize)) {
                        return Err(bad(format!(
                            "slot {i} (binding {}) reads a loop's condition through parameter {p}, which is not a buffer of u32 or i32 with a slot",
                            i + 1
                        )));
                    }
                }
            }
            MemorySlot::DeviceGlobal { name, .. } => {
                let global = module.memory_by_name(name).map(|h| &module.memories[h].kind);
                if !matches!(global, Some(cmdgraph_ir::MemoryKind::DeviceGlobal(_))) {
                    return Err(bad(format!("slot {i} names @{name}, not a device_global")));
                }
                if !globals.insert(name.as_str()) {
                    return Err(bad(format!("slot {i} (binding {}) names @{name} a second time", i + 1)));
                }
            }
        }
    }
    let bindings = u32::try_from(l.slots.len()).ok().and_then(|n| n.checked_add(1));
    spirv::check_variant(&k.kernel, &k.spirv, &k.entry, k.workgroup_size, bindings, Some(items)).map_err(
        |e| match e {
            ExecError::Spirv { kernel, reason } => {
                ExecError::Spirv { kernel, reason: format!("{reason} (variant {variant})") }
            }
            e => e,
        },
    )?;
    // After the structural walk, so that the words are sound; the device's own limit is
    // `Executor::new`'s.
    let shared = workgroup_bytes(&k.spirv).map_err(|m| bad(format!("SPIR-V: {m}")))?;
    if shared > MAX_WORKGROUP_MEMORY {
        return Err(bad(format!(
            "{shared} bytes of work-group memory, more than the {MAX_WORKGROUP_MEMORY} bytes a bundle may declare"
        )));
    }
    Ok(())
}
