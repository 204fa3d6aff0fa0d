//! Loading a bundle: format version, content, IR, kernel layouts and SPIR-V, all checked
//! before anything reaches Vulkan. Any malformed or truncated input is an [`ExecError`].

use crate::error::{ExecError, Result};
use crate::spirv;
use cmdgraph_ir::bundle::{ArgFieldKind, Bundle, BundleError, CompiledKernel, MemorySlot, FORMAT_VERSION};
use cmdgraph_ir::kernel::ParamType;
use cmdgraph_ir::Module;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Largest argument block accepted (a sanity bound far above any real kernel's).
const MAX_BLOCK_BYTES: u32 = 1 << 16;

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
}

/// One graph's launch table: node name (without `%`) → (alternative, variant index) pairs.
pub type LaunchTable = HashMap<String, Vec<(Option<u32>, u32)>>;

impl Loaded {
    /// The bundle's source module, parsed and verified the first time it is asked for
    /// (whole-graph and node updates); an error names the module.
    pub fn source(&self) -> Result<&Module> {
        let parsed = self.source.get_or_init(|| {
            let m = cmdgraph_ir::text::parse(&self.bundle.source).map_err(|d| format!("source: {}", first(&d)))?;
            cmdgraph_ir::verify::verify(&m).map_err(|d| format!("source: {}", first(&d)))?;
            Ok(m)
        });
        parsed.as_ref().map_err(|e| ExecError::Ir(e.clone()))
    }
}

/// Reads a bundle file (as `Bundle::to_bytes` writes it, content hash included) and checks
/// it: format version, lengths, hash, payload, then everything [`check`] checks. Linear in
/// the file; the source module is parsed only when an update needs it ([`Loaded::source`]).
pub fn load_bytes(bytes: &[u8]) -> Result<Loaded> {
    let bundle = parse(bytes)?;
    check(bundle)
}

/// Checks an in-memory bundle (as [`load_str`] does after parsing).
pub fn check(bundle: Bundle) -> Result<Loaded> {
    if bundle.format_version != FORMAT_VERSION {
        return Err(ExecError::Version { found: bundle.format_version, expected: FORMAT_VERSION });
    }
    let module = cmdgraph_ir::text::parse(&bundle.optimized).map_err(|d| ExecError::Ir(first(&d)))?;
    cmdgraph_ir::verify::verify(&module).map_err(|d| ExecError::Ir(first(&d)))?;
    for k in &bundle.kernels {
        check_kernel(&module, k)?;
    }
    for plan in &bundle.graphs {
        if module.graph_by_name(&plan.name).is_none() {
            return Err(ExecError::Bundle(format!("plan for unknown graph @{}", plan.name)));
        }
    }
    let launches = bundle
        .graphs
        .iter()
        .map(|p| {
            let mut table: LaunchTable = HashMap::with_capacity(p.launches.len());
            for l in &p.launches {
                table.entry(l.node.trim_start_matches('%').to_string()).or_default().push((l.alternative, l.kernel));
            }
            table
        })
        .collect();
    Ok(Loaded { bundle, module, source: OnceLock::new(), launches })
}

fn first(d: &[cmdgraph_ir::diag::Diagnostic]) -> String {
    d.first().map(|d| d.message.clone()).unwrap_or_else(|| "no diagnostic".into())
}

/// Reads the file with [`Bundle::from_bytes`]: the format version first (a different
/// version, format 1's RON text included, is reported as such), then the lengths and the
/// body, then the SHA-256 content hash, then the payload.
fn parse(bytes: &[u8]) -> Result<Bundle> {
    Bundle::from_bytes(bytes).map_err(|e| match e {
        BundleError::Version { found, expected } => ExecError::Version { found, expected },
        BundleError::HashMismatch { found, computed } => {
            ExecError::Hash(format!("the file says {found}, its content hashes to {computed}"))
        }
        BundleError::Inconsistent { message } => ExecError::Bundle(message),
        BundleError::NotABundle { message } => ExecError::Malformed(format!("not a cmdgraph bundle: {message}")),
        BundleError::Malformed { message } | BundleError::Serialize { message } => ExecError::Malformed(message),
    })
}

/// Checks one compiled kernel against its IR signature and the ABI (docs/abi.md).
fn check_kernel(module: &Module, k: &CompiledKernel) -> Result<()> {
    let bad = |m: String| ExecError::Bundle(format!("kernel @{}: {m}", k.kernel));
    let handle = module.kernel_by_name(&k.kernel).ok_or_else(|| bad("not in the IR".into()))?;
    let kernel = &module.kernels[handle];
    let l = &k.layout;
    if l.block_size < 32 || l.block_size > MAX_BLOCK_BYTES || !l.block_size.is_multiple_of(4) {
        return Err(bad(format!("argument block of {} bytes", l.block_size)));
    }
    if k.workgroup_size.contains(&0) || k.items_per_invocation == 0 {
        return Err(bad(format!(
            "work-group size {:?}, {} items per invocation",
            k.workgroup_size, k.items_per_invocation
        )));
    }
    if l.fields.len() != kernel.params.len() {
        return Err(bad(format!("{} fields for {} parameters", l.fields.len(), kernel.params.len())));
    }
    for (i, (field, param)) in l.fields.iter().zip(&kernel.params).enumerate() {
        let (bytes, ok) = match (&field.kind, &param.ty) {
            (ArgFieldKind::Value { bytes }, ParamType::Value(_)) => (*bytes, *bytes > 0 && *bytes <= 32),
            (ArgFieldKind::Buffer { slot, elem_bytes }, ParamType::Buffer { elem, .. }) => {
                let slot_ok = matches!(l.slots.get(*slot as usize),
                    Some(MemorySlot::Param { param, .. }) if *param as usize == i);
                (8, slot_ok && u64::from(*elem_bytes) == elem.size())
            }
            (ArgFieldKind::Local { elem_bytes, .. }, ParamType::Local { elem }) => {
                (4, u64::from(*elem_bytes) == elem.size())
            }
            _ => (0, false),
        };
        let end = field.offset.checked_add(bytes).filter(|&e| e <= l.block_size);
        if !ok || end.is_none() || field.offset < 32 || !field.offset.is_multiple_of(4) {
            return Err(bad(format!(
                "field {i} ({:?} at {}) does not fit parameter %{}",
                field.kind, field.offset, param.name
            )));
        }
    }
    for (i, slot) in l.slots.iter().enumerate() {
        match slot {
            MemorySlot::Param { param, .. } => {
                if !matches!(kernel.params.get(*param as usize).map(|p| p.ty), Some(ParamType::Buffer { .. })) {
                    return Err(bad(format!("slot {i} names parameter {param}, not a buffer")));
                }
            }
            MemorySlot::DeviceGlobal { name, .. } => {
                let global = module.memory_by_name(name).map(|h| &module.memories[h].kind);
                if !matches!(global, Some(cmdgraph_ir::MemoryKind::DeviceGlobal(_))) {
                    return Err(bad(format!("slot {i} names @{name}, not a device_global")));
                }
            }
        }
    }
    spirv::check(&k.kernel, &k.spirv, &k.entry, k.workgroup_size)
}
