//! Structural SPIR-V checks made before a module reaches the driver.
//!
//! The bundle writer runs `spirv-val`; the loader cannot (no SPIRV-Tools at run time), but a
//! driver given a truncated or corrupted module may crash, so the loader walks the words:
//! header, instruction lengths, the entry point and its `LocalSize`. A module that passes is
//! well-formed as a word stream and declares what the bundle says it does.

use crate::error::{ExecError, Result};

const MAGIC: u32 = 0x0723_0203;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_CAPABILITY: u32 = 17;
const OP_FUNCTION_END: u32 = 56;
const EXEC_MODEL_GLCOMPUTE: u32 = 5;
const MODE_LOCAL_SIZE: u32 = 17;

/// Checks `words` is a SPIR-V module with a `GLCompute` entry point named `entry` whose
/// `LocalSize` is `local_size`.
pub fn check(kernel: &str, words: &[u32], entry: &str, local_size: [u32; 3]) -> Result<()> {
    let bad = |reason: String| ExecError::Spirv { kernel: kernel.to_string(), reason };
    if words.len() < 5 {
        return Err(bad(format!("{} words, shorter than the 5-word header", words.len())));
    }
    if words[0] != MAGIC {
        return Err(bad(format!("magic number {:#010x}", words[0])));
    }
    let version = words[1];
    if version & 0xff00_00ff != 0 || !(0x0001_0000..=0x0001_0600).contains(&version) {
        return Err(bad(format!("version word {version:#010x}")));
    }
    if words[4] != 0 {
        return Err(bad("reserved header word is not 0".into()));
    }
    let bound = words[3];
    let mut entry_id = None;
    let mut local = None;
    let mut capabilities = 0usize;
    let mut last = 0;
    let mut at = 5;
    while at < words.len() {
        let word = words[at];
        let count = (word >> 16) as usize;
        let opcode = word & 0xffff;
        if count == 0 {
            return Err(bad(format!("instruction at word {at} has length 0")));
        }
        let end = at.checked_add(count).filter(|&e| e <= words.len());
        let Some(end) = end else {
            return Err(bad(format!("instruction at word {at} runs past the end ({count} words)")));
        };
        let ops = &words[at + 1..end];
        last = opcode;
        match opcode {
            OP_CAPABILITY => capabilities += 1,
            OP_ENTRY_POINT if ops.len() >= 3 && ops[0] == EXEC_MODEL_GLCOMPUTE => {
                if ops[1] >= bound {
                    return Err(bad(format!("entry point id {} is not below the bound {bound}", ops[1])));
                }
                if literal_string(&ops[2..]).as_deref() == Some(entry) {
                    entry_id = Some(ops[1]);
                }
            }
            OP_EXECUTION_MODE if ops.len() == 5 && ops[1] == MODE_LOCAL_SIZE && Some(ops[0]) == entry_id => {
                local = Some([ops[2], ops[3], ops[4]]);
            }
            _ => {}
        }
        at = end;
    }
    if capabilities == 0 {
        return Err(bad("no OpCapability".into()));
    }
    // A module with an entry point ends with a function; a missing tail is a truncation.
    if last != OP_FUNCTION_END {
        return Err(bad("does not end with OpFunctionEnd (truncated?)".into()));
    }
    if entry_id.is_none() {
        return Err(bad(format!("no GLCompute entry point named `{entry}`")));
    }
    match local {
        Some(l) if l == local_size => Ok(()),
        Some(l) => Err(bad(format!("LocalSize {l:?}, the bundle says {local_size:?}"))),
        None => Err(bad(format!("entry point `{entry}` has no LocalSize"))),
    }
}

/// Decodes a nul-terminated SPIR-V literal string; `None` if unterminated or not UTF-8.
fn literal_string(words: &[u32]) -> Option<String> {
    let mut bytes = Vec::new();
    for w in words {
        for b in w.to_le_bytes() {
            if b == 0 {
                return String::from_utf8(bytes).ok();
            }
            bytes.push(b);
        }
    }
    None
}
