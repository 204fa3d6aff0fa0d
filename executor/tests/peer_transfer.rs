//! The hand-recorded transfer peers (`peer::transfer`): a copy of random bytes and a fill
//! with a word, byte for byte, under validation with synchronization validation.

use cmdgraph_executor::peer::transfer::{TransferOp, TransferPeer};
use cmdgraph_executor::vk::Context;
use cmdgraph_executor::ContextOptions;

const BYTES: u64 = 1 << 20;

/// Deterministic pseudo-random bytes (splitmix64).
fn random_bytes(n: usize, mut seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(n);
    out
}

fn first_difference(got: &[u8], want: &[u8]) -> Option<usize> {
    if got.len() != want.len() {
        return Some(got.len().min(want.len()));
    }
    got.iter().zip(want).position(|(a, b)| a != b)
}

fn context() -> Context {
    Context::new(&ContextOptions { validation: true, ..Default::default() })
        .unwrap_or_else(|e| panic!("Vulkan device (llvmpipe) with validation layers: {e}"))
}

#[test]
fn copy_and_fill_are_exact_without_validation_messages() {
    let ctx = context();
    let input = random_bytes(BYTES as usize, 15);
    let mut copy = TransferPeer::new(&ctx, TransferOp::Copy, BYTES).unwrap_or_else(|e| panic!("{e}"));
    copy.write_src(&ctx, &input).unwrap_or_else(|e| panic!("{e}"));
    // Twice: the second run's writes must be ordered after the first's (sync validation).
    for _ in 0..2 {
        copy.run(&ctx).unwrap_or_else(|e| panic!("{e}"));
    }
    let got = copy.read_dst(&ctx).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first_difference(&got, &input), None, "copy differs from its source");

    let word = 0x5A3C_F00Du32;
    let mut fill = TransferPeer::new(&ctx, TransferOp::Fill(word), BYTES).unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..2 {
        fill.run(&ctx).unwrap_or_else(|e| panic!("{e}"));
    }
    let want: Vec<u8> = word.to_le_bytes().iter().copied().cycle().take(BYTES as usize).collect();
    let got = fill.read_dst(&ctx).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first_difference(&got, &want), None, "fill differs from the word");

    // Timestamps where the queue has them; the facts name the queue family and memory.
    for p in [&copy, &fill] {
        let ns = p.gpu_ns(&ctx).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ns.is_some(), ctx.timestamp_bits() > 0);
    }
    let d = copy.describe();
    assert!(d.contains("queue family") && d.contains("memory type"), "{d}");
    assert!(!copy.facts().queue_flags.is_empty(), "{d}");
    assert!(fill.write_src(&ctx, &input).is_err(), "a fill has no source");

    copy.destroy(&ctx);
    fill.destroy(&ctx);
    let m = ctx.take_messages();
    assert!(m.is_empty(), "validation messages:\n{}", m.join("\n"));
}

#[test]
fn sizes_that_fill_cannot_take_are_refused() {
    let ctx = context();
    for bytes in [0, 6] {
        assert!(TransferPeer::new(&ctx, TransferOp::Fill(1), bytes).is_err(), "{bytes} bytes");
    }
    assert!(ctx.take_messages().is_empty());
}

#[test]
fn queue_stamps_enclose_the_work_submitted_between_them() {
    use cmdgraph_executor::peer::stamps::QueueStamps;
    let ctx = context();
    if ctx.timestamp_bits() == 0 {
        assert!(QueueStamps::new(&ctx).is_err(), "a queue without timestamps is refused");
        return;
    }
    let mut stamps = QueueStamps::new(&ctx).unwrap_or_else(|e| panic!("{e}"));
    assert!(stamps.close(&ctx).is_err(), "a close without an open is refused");
    let mut fill = TransferPeer::new(&ctx, TransferOp::Fill(7), BYTES).unwrap_or_else(|e| panic!("{e}"));
    for round in 0..2 {
        stamps.open(&ctx).unwrap_or_else(|e| panic!("{e}"));
        assert!(stamps.open(&ctx).is_err(), "a second open is refused");
        for _ in 0..3 {
            fill.run(&ctx).unwrap_or_else(|e| panic!("{e}"));
        }
        let between = stamps.close(&ctx).unwrap_or_else(|e| panic!("{e}"));
        // The last fill ran between the stamps: its own two timestamps lie inside them.
        let last = fill.gpu_ns(&ctx).unwrap_or_else(|e| panic!("{e}")).unwrap_or(u64::MAX);
        assert!(between >= last, "round {round}: {between} ns between the stamps, the last fill alone {last} ns");
    }
    // Destroying open stamps closes them first.
    stamps.open(&ctx).unwrap_or_else(|e| panic!("{e}"));
    stamps.destroy(&ctx);
    fill.destroy(&ctx);
    let m = ctx.take_messages();
    assert!(m.is_empty(), "validation messages:\n{}", m.join("\n"));
}
