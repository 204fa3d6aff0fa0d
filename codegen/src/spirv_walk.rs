//! Walking the instructions of a SPIR-V module, for the word-level fix-ups applied after
//! LLVM's backend (barrier.rs, cmpxchg.rs, float_controls.rs).

/// Words of the module header before the first instruction.
pub(crate) const HEADER_WORDS: usize = 5;

/// Every instruction as (start word, opcode, word count); `None` when the stream is
/// malformed (a zero word count, or one running past the end), which the fix-ups answer by
/// leaving the module as it is.
pub(crate) fn instructions(words: &[u32]) -> Option<Vec<(usize, u32, usize)>> {
    let mut out = Vec::new();
    let mut at = HEADER_WORDS;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 || at + count > words.len() {
            return None;
        }
        out.push((at, words[at] & 0xffff, count));
        at += count;
    }
    Some(out)
}
