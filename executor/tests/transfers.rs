//! `bind` and `read` through the reused staging buffer: sizes that make it grow, sizes
//! smaller than it after it grew, a transfer larger than the largest staging buffer kept
//! (so it goes in pieces), and runs in between, against the reference interpreter.

mod common;

use cmdgraph_executor::vk::transfers::KEPT_STAGING;
use cmdgraph_interp::Interpreter;
use common::*;

/// 3 floats, 70 001 floats (larger than the smallest staging buffer), 1000 floats.
fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @tiny : f32[3]
usm @wide : f32[70001]
usm @wide_out : f32[70001]
usm @mid : f32[1000]

graph @g {{
  %s = kernel @scale range(70001) args(@wide, @wide_out, 3.0)
}}
"
    )
}

#[test]
fn binds_and_reads_of_growing_and_shrinking_sizes_round_trip_and_order_with_runs() {
    let ir = ir();
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let e = ex.finalize("g").unwrap();
    let module = cmdgraph_ir::text::parse(&ir).unwrap();
    let mut it = Interpreter::new(&module).unwrap();
    let ie = it.finalize("g").unwrap();
    // Three rounds: small, then large (the staging buffer grows), then small again (it is
    // reused at its larger size), each with a run that must see the bind before it and be
    // seen by the read after it.
    for round in 0..3u64 {
        let tiny = random(3, 10 + round);
        let wide = random(70001, 20 + round);
        let mid = random(1000, 30 + round);
        for (name, v) in [("tiny", &tiny), ("wide", &wide), ("mid", &mid)] {
            ex.bind(name, &f32_bytes(v)).unwrap();
            it.bind(name, &f32_bytes(v)).unwrap();
        }
        ex.run(e).unwrap();
        it.run(ie).unwrap();
        for name in ["tiny", "mid", "wide", "wide_out"] {
            let got = ex.read(name).unwrap();
            assert_eq!(got, it.read(name).unwrap(), "{name} in round {round}");
            let mut into = vec![0u8; got.len()];
            ex.read_into(name, &mut into).unwrap();
            assert_eq!(into, got, "read_into of {name} in round {round}");
        }
        assert_eq!(ex.read_as::<f32>("tiny").unwrap(), tiny);
        assert_eq!(ex.read_as::<f32>("wide_out").unwrap()[70000], wide[70000] * 3.0);
    }
    no_messages(&ex);
}

#[test]
fn a_transfer_larger_than_the_kept_staging_buffer_goes_in_pieces() {
    // Two whole pieces and a ragged third, so both the piece offsets and the short tail count.
    let n = (2 * KEPT_STAGING / 4 + 1027) as usize;
    let ir = format!("{KERNELS_IR}\nusm @big : f32[{n}]\n\ngraph @g {{\n  %e = empty\n}}\n");
    let mut ex = executor(bundle(&ir, vec![], vec![]));
    let data = f32_bytes(&random(n, 7));
    ex.bind("big", &data).unwrap();
    let back = ex.read("big").unwrap();
    // Compared piece by piece so a failure names the piece, not a 128 MiB diff.
    for (i, (a, b)) in back.chunks(KEPT_STAGING as usize).zip(data.chunks(KEPT_STAGING as usize)).enumerate() {
        assert!(a == b, "piece {i} came back different");
    }
    assert_eq!(back.len(), data.len());
    let mut into = vec![0u8; data.len()];
    ex.read_into("big", &mut into).unwrap();
    assert!(into == data, "read_into differs");
    no_messages(&ex);
}
