//! SPIR-V words: validation with SPIRV-Tools, disassembly with `spirv-dis`, and removal
//! of the dead name strings LLVM leaves behind.

use crate::error::CodegenError;
use std::io::Write;
use std::process::{Command, Stdio};

/// Little-endian bytes to SPIR-V words.
pub(crate) fn words(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// SPIR-V words to little-endian bytes.
pub(crate) fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn run(tool: &str, args: &[&str], input: &[u8]) -> Result<(bool, String, String), CodegenError> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CodegenError::Tool { message: format!("cannot run {tool} (package spirv-tools): {e}") })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input).map_err(|e| CodegenError::Tool { message: format!("cannot write to {tool}: {e}") })?;
    }
    let out = child.wait_with_output().map_err(|e| CodegenError::Tool { message: format!("{tool}: {e}") })?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// Validates `words` as `spirv-val --target-env vulkan1.3` would, with SPIRV-Tools in process
/// (the `spirv-tools` crate, the library the executor's loader checks bundles with): the inner
/// `Err` is the validator's message when it rejects them (whose fault that is depends on where
/// the words came from), worded as `spirv-val` words it; the outer one says it could not run.
pub(crate) fn validate(words: &[u32]) -> Result<Result<(), String>, CodegenError> {
    use spirv_tools::val::Validator as _;
    let validator = spirv_tools::val::create(Some(spirv_tools::TargetEnv::Vulkan_1_3));
    Ok(match validator.validate(words, None) {
        Ok(()) => Ok(()),
        Err(e) => Err(match &e.diagnostic {
            Some(d) if d.notes.is_empty() => format!("error: line {}: {}", d.index, d.message.trim_end()),
            Some(d) => format!("error: line {}: {}\n{}", d.index, d.message.trim_end(), d.notes.trim_end()),
            None => format!("error: {e}"),
        }),
    })
}

/// `spirv-dis` text of `words`.
pub(crate) fn disassemble(words: &[u32]) -> Result<String, CodegenError> {
    let (ok, out, err) = run("spirv-dis", &["--no-color", "-"], &bytes(words))?;
    if ok {
        Ok(out)
    } else {
        Err(CodegenError::Tool { message: format!("spirv-dis failed: {err}") })
    }
}

const OP_CAPABILITY: u32 = 17;
const OP_NAME: u32 = 5;
const OP_TYPE_INT: u32 = 21;
const OP_VARIABLE: u32 = 59;
const OP_DECORATE: u32 = 71;
const OP_MEMBER_DECORATE: u32 = 72;
const CAP_INT8: u32 = 39;
const STORAGE_FUNCTION: u32 = 7;
const HEADER_WORDS: usize = 5;

/// The string of a literal-string operand.
fn name_text(words: &[u32]) -> String {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).take_while(|&b| b != 0).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// One instruction: its word range.
fn instructions(words: &[u32]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = HEADER_WORDS;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            break;
        }
        out.push((at, at + count));
        at += count;
    }
    out
}

/// Opcode, result id and every id-looking operand are not distinguished by this walk; it
/// only needs result ids (`id_at`) of the opcodes it removes and the uses of those ids.
fn result_id(words: &[u32], (s, e): (usize, usize)) -> Option<u32> {
    let op = words[s] & 0xffff;
    // Types (19..=39) have the result in word 1; constants, variables and most others in 2.
    match op {
        19..=39 if e > s + 1 => Some(words[s + 1]),
        41..=46 | OP_VARIABLE if e > s + 2 => Some(words[s + 2]),
        _ => None,
    }
}

/// Removes what LLVM 22's SPIR-V backend emits for the resource name strings
/// (`handlefrombinding`'s last operand): unused `Function` variables holding `i8` arrays,
/// then constants and types nothing uses any more, then the `Int8` capability when no
/// 8-bit integer type remains. Without this every kernel would require `shaderInt8`.
pub(crate) fn strip_dead_names(words: &[u32]) -> Vec<u32> {
    let mut words = words.to_vec();
    loop {
        let insts = instructions(&words);
        // Count uses of each id outside names and decorations (and outside its own
        // defining instruction).
        let mut uses = std::collections::BTreeMap::<u32, usize>::new();
        for &(s, e) in &insts {
            let op = words[s] & 0xffff;
            // Skip instructions whose operands are (mostly) literals, not ids: names,
            // decorations, capabilities, the entry point's name, execution modes, source,
            // and type/constant literals (an `OpConstant`'s value may equal an id).
            let first_id_operand = match op {
                OP_NAME | OP_DECORATE | OP_MEMBER_DECORATE | OP_CAPABILITY => continue,
                3 | 10 | 11 | 14 | 15 | 16 => continue,
                OP_TYPE_INT | 22 => continue,
                23 => 2, // OpTypeVector: component type only
                43 => {
                    // OpConstant: its result type only.
                    if let Some(&ty) = words.get(s + 1) {
                        *uses.entry(ty).or_default() += 1;
                    }
                    continue;
                }
                _ => 1,
            };
            let own = result_id(&words, (s, e));
            let end = if op == 23 { (s + 3).min(e) } else { e };
            for &w in words.get(s + first_id_operand..end).unwrap_or(&[]) {
                if Some(w) != own {
                    *uses.entry(w).or_default() += 1;
                }
            }
        }
        let named: std::collections::BTreeSet<u32> = insts
            .iter()
            .filter(|&&(s, _)| words[s] & 0xffff == OP_NAME)
            .filter(|&&(s, e)| name_text(words.get(s + 2..e).unwrap_or(&[])).starts_with("__cg_str"))
            .filter_map(|&(s, _)| words.get(s + 1).copied())
            .collect();
        let dead = |(s, e): (usize, usize), words: &[u32]| -> Option<u32> {
            let op = words[s] & 0xffff;
            let id = result_id(words, (s, e))?;
            let removable = match op {
                OP_VARIABLE => words.get(s + 3) == Some(&STORAGE_FUNCTION) && named.contains(&id),
                // Types and constants, but never void/function types or the int type of
                // 32 bits (kept for stability; only i8 arrays are expected to go).
                28 | 32 | 43 | 44 => true,
                OP_TYPE_INT => words.get(s + 2) == Some(&8),
                _ => false,
            };
            (removable && !uses.contains_key(&id)).then_some(id)
        };
        let removed: Vec<u32> = insts.iter().filter_map(|&r| dead(r, &words)).collect();
        if removed.is_empty() {
            break;
        }
        let mut out = words[..HEADER_WORDS.min(words.len())].to_vec();
        for &(s, e) in &insts {
            let op = words[s] & 0xffff;
            let target = match op {
                OP_NAME | OP_DECORATE | OP_MEMBER_DECORATE => words.get(s + 1).copied(),
                _ => result_id(&words, (s, e)),
            };
            if target.is_some_and(|t| removed.contains(&t)) {
                continue;
            }
            out.extend_from_slice(&words[s..e]);
        }
        words = out;
    }
    let insts = instructions(&words);
    let has_int8 = insts.iter().any(|&(s, _)| words[s] & 0xffff == OP_TYPE_INT && words.get(s + 2) == Some(&8));
    if has_int8 {
        return words;
    }
    let mut out = words[..HEADER_WORDS.min(words.len())].to_vec();
    for &(s, e) in &insts {
        if words[s] & 0xffff == OP_CAPABILITY && words.get(s + 1) == Some(&CAP_INT8) {
            continue;
        }
        out.extend_from_slice(&words[s..e]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cooperative-matrix modules kept as binaries (Debian's spirv-as cannot assemble
    /// them) are what their sources say, and valid: the assembler and validator here know
    /// `SPV_KHR_cooperative_matrix` as the loader's do. A truncated module is refused in
    /// `spirv-val`'s words.
    #[test]
    fn the_cooperative_matrix_modules_assemble_to_their_binaries_and_are_valid() {
        use spirv_tools::assembler::Assembler as _;
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for stem in ["executor/tests/data/cooperative_matrix_f16", "lit-tests/run/Inputs/gemm_f16_32x48x64"] {
            let text = std::fs::read_to_string(format!("{root}/{stem}.spvasm")).unwrap();
            let binary = std::fs::read(format!("{root}/{stem}.spv")).unwrap();
            let assembler = spirv_tools::assembler::create(Some(spirv_tools::TargetEnv::Vulkan_1_3));
            let assembled = assembler.assemble(&text, spirv_tools::assembler::AssemblerOptions::default()).unwrap();
            assert_eq!(assembled.as_bytes(), &binary[..], "{stem}.spv is not its .spvasm assembled");
            assert_eq!(validate(assembled.as_words()).unwrap(), Ok(()), "{stem}");
            let e = validate(&assembled.as_words()[..40]).unwrap().unwrap_err();
            assert!(e.starts_with("error: line "), "{e}");
        }
    }
}
