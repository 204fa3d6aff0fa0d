//! Which kernels are element-wise, so one invocation can handle 4 work-items with
//! `<4 x T>` loads and stores (docs/codegen.md, "Vectorization"), and the marker by which
//! a module says how many work-items one invocation handles (docs/abi.md, "Items per
//! invocation").

use crate::layout::Layout;
use crate::Variant;
use cmdgraph_ir::kernel::{Body, Builtin, MemBase, OpKind, V};
use cmdgraph_ir::{ScalarType, ValueDef, ValueType};

/// Work-items per invocation of a vectorized kernel.
pub const ITEMS_PER_INVOCATION: u32 = 4;

/// The `OpModuleProcessed` string by which a module records how many work-items one
/// invocation handles; one definition for codegen and the loader, in the bundle's ABI.
pub use cmdgraph_ir::bundle::ITEMS_PER_INVOCATION_MARKER;

const OP_MODULE_PROCESSED: u32 = 330;

/// Opcodes of the layout sections before the annotations (SPIR-V 2.4: capabilities,
/// extensions, imports, memory model, entry points, execution modes, debug strings, names,
/// `OpModuleProcessed`), which the marker goes after.
fn before_annotations(opcode: u32) -> bool {
    matches!(opcode, 2..=7 | 10 | 11 | 14..=17 | 330 | 331)
}

/// `words` with the marker saying `items` work-items per invocation: an `OpModuleProcessed`
/// at the end of the debug section (SPIR-V 1.1 and later; codegen emits 1.6). Words that
/// are not a module come back unchanged (the loader then refuses them for what they are).
pub fn mark_items_per_invocation(words: &[u32], items: u32) -> Vec<u32> {
    mark_processed(words, &format!("{ITEMS_PER_INVOCATION_MARKER}{items}"))
}

/// `words` with an `OpModuleProcessed "text"` after the module's last debug instruction
/// (after the markers added before it, so their order is the calls' order); words that are
/// not a module come back unchanged.
pub(crate) fn mark_processed(words: &[u32], text: &str) -> Vec<u32> {
    let mut at = 5;
    while let Some(&w) = words.get(at) {
        let count = (w >> 16) as usize;
        if count == 0 || !before_annotations(w & 0xffff) {
            break;
        }
        at += count;
    }
    if at > words.len() {
        return words.to_vec();
    }
    let mut text = text.as_bytes().to_vec();
    // A literal string is nul-terminated and padded to whole words.
    text.resize(text.len() / 4 * 4 + 4, 0);
    let mut out = Vec::with_capacity(words.len() + 1 + text.len() / 4);
    out.extend_from_slice(&words[..at]);
    out.push(((1 + text.len() as u32 / 4) << 16) | OP_MODULE_PROCESSED);
    out.extend(text.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
    out.extend_from_slice(&words[at..]);
    out
}

/// The work-items per invocation that `processed` (a module's `OpModuleProcessed` strings,
/// in order) records: `Ok(None)` without a marker; an error for two markers or one whose
/// number does not parse.
pub fn marked_items_per_invocation(processed: &[String]) -> Result<Option<u32>, String> {
    let mut found = None;
    for text in processed {
        let Some(n) = text.strip_prefix(ITEMS_PER_INVOCATION_MARKER) else { continue };
        if found.is_some() {
            return Err("two items-per-invocation markers (OpModuleProcessed)".into());
        }
        let n = n.parse::<u32>().map_err(|_| format!("OpModuleProcessed \"{text}\" is not a number of items"))?;
        found = Some(n);
    }
    Ok(found)
}

/// Whether the kernel is element-wise: a 1-D launch; straight-line code on scalars; the
/// only builtins are `global_id 0` and `global_range`; every load and store indexes a
/// 32-bit non-bool buffer or device global with `global_id 0`; no atomics, barriers,
/// work-group memory, loops or branches.
pub fn element_wise(body: &Body, layout: &Layout, variant: &Variant) -> bool {
    if variant.dims != 1 {
        return false;
    }
    let is_gid = |v: V| match body.values.try_get(v).map(|x| x.def) {
        Some(ValueDef::Result(op, 0)) => {
            matches!(body.ops.try_get(op).map(|o| &o.kind), Some(OpKind::Builtin(Builtin::GlobalId, 0)))
        }
        _ => false,
    };
    let word_elem = |mem: MemBase| -> bool {
        let elem = match mem {
            MemBase::Global(g) => layout
                .globals
                .iter()
                .find(|(h, _)| *h == g)
                .and_then(|(_, s)| layout.slots.get(*s as usize))
                .map(|s| s.elem),
            MemBase::Value(v) => match body.values.try_get(v).map(|x| x.ty) {
                Some(ValueType::Buffer { elem, .. }) => Some(elem),
                _ => None,
            },
        };
        elem.is_some_and(|e| e.lanes == 1 && matches!(e.scalar, ScalarType::F32 | ScalarType::I32 | ScalarType::U32))
    };
    let scalar_values = body.values.iter().all(|(_, v)| match v.ty {
        ValueType::Data(t) => t.lanes == 1,
        ValueType::Buffer { .. } => true,
        ValueType::Local { .. } => false,
    });
    let mut touches_memory = false;
    let ops_ok = body.entry.ops.iter().all(|&h| {
        let Some(op) = body.ops.try_get(h) else { return false };
        match &op.kind {
            OpKind::Const(..)
            | OpKind::Unary(..)
            | OpKind::Binary(..)
            | OpKind::Fma(..)
            | OpKind::Cmp(..)
            | OpKind::Select(..)
            | OpKind::Cast(..)
            | OpKind::Bitcast(..) => true,
            OpKind::Builtin(Builtin::GlobalId, 0) | OpKind::Builtin(Builtin::GlobalRange, _) => true,
            OpKind::Load { mem, index } | OpKind::Store { mem, index, .. } => {
                touches_memory = true;
                is_gid(*index) && word_elem(*mem)
            }
            _ => false,
        }
    });
    scalar_values && ops_ok && touches_memory && body.ops.len() == body.entry.ops.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal module header plus `OpCapability Shader`, `OpName %1 "a"`, `OpDecorate %1 ...`.
    fn module() -> Vec<u32> {
        vec![0x0723_0203, 0x0001_0600, 0, 8, 0, (2 << 16) | 17, 1, (3 << 16) | 5, 1, 0x61, (3 << 16) | 71, 1, 2]
    }

    #[test]
    fn the_marker_goes_after_the_names_and_reads_back() {
        let marked = mark_items_per_invocation(&module(), 4);
        // Capability (2 words), name (3), then the marker, then the decoration.
        assert_eq!(marked[10] & 0xffff, OP_MODULE_PROCESSED);
        let count = (marked[10] >> 16) as usize;
        assert_eq!(marked[10 + count] & 0xffff, 71);
        let bytes: Vec<u8> = marked[11..10 + count].iter().flat_map(|w| w.to_le_bytes()).collect();
        let text: String = bytes.iter().take_while(|&&b| b != 0).map(|&b| b as char).collect();
        assert_eq!(text, "cmdgraph items_per_invocation 4");
        assert_eq!(marked_items_per_invocation(std::slice::from_ref(&text)), Ok(Some(4)));
        assert_eq!(marked_items_per_invocation(&["other".into()]), Ok(None));
        assert!(marked_items_per_invocation(&[text.clone(), text]).is_err());
        assert!(marked_items_per_invocation(&["cmdgraph items_per_invocation x".into()]).is_err());
        // Not a module: unchanged, never a panic.
        assert_eq!(mark_items_per_invocation(&[1, 2], 4), vec![1, 2]);
        assert_eq!(mark_items_per_invocation(&[0x0723_0203, 0, 0, 0, 0, 0xffff_0011], 4).len(), 6);
    }
}
