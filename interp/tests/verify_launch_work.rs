//! The work of one launch is bounded (E0209, issue 18): at most
//! [`MAX_LAUNCH_WORK_ITEMS`] = 2^32 work-items, on kernel nodes and kernel alternatives,
//! each with its near miss at exactly the bound; the interpreter refuses what the verifier
//! refuses.

#[path = "../../ir/tests/verify_support/mod.rs"]
mod verify_support;

use cmdgraph_interp::{InterpError, Interpreter};
use cmdgraph_ir::{Launch, MAX_LAUNCH_WORK_ITEMS};
use verify_support::{expect_clean, expect_error, parse};

/// A kernel node `%n` on line 8 launching `@k` with `{launch}`; the launch starts at column 18.
fn node_src(launch: &str) -> String {
    format!(
        "kernel @k(%x: buf<u32, read_write>) {{
  %i = global_id 0
  store %x[%i], %i
}}
usm @x : u32[64]
graph @g {{
  %ok = kernel @k range(64) args(@x)
  %n = kernel @k {launch} args(@x) after(%ok)
}}
"
    )
}

const AT: (usize, usize) = (8, 18);

#[test]
fn the_bound_is_two_to_the_32() {
    assert_eq!(MAX_LAUNCH_WORK_ITEMS, 4_294_967_296);
    assert_eq!(Launch::Range(vec![16776960, 65535]).work_items(), Some(1_099_478_073_600));
    assert!(!Launch::Range(vec![16776960, 65535]).within_work_bound());
    assert!(Launch::Range(vec![65536, 65536]).within_work_bound());
    assert!(!Launch::Range(vec![65536, 65537]).within_work_bound());
    assert_eq!(Launch::Range(vec![u64::MAX, 2]).work_items(), None);
    assert!(!Launch::Range(vec![u64::MAX, 2]).within_work_bound());
    assert_eq!(Launch::SingleTask.work_items(), Some(1));
    let nd = Launch::NdRange { global: vec![1 << 16, 1 << 16, 2], local: vec![16, 16, 1], offset: vec![] };
    assert_eq!(nd.work_items(), Some(1 << 33));
}

#[test]
fn a_launch_above_two_to_the_32_work_items_is_refused_at_the_launch() {
    let cases = [
        // (bad, near miss at or below the bound)
        ("range(16776960, 65535)", "range(65536, 65536)"),
        ("range(65536, 65537)", "range(65536, 65536)"),
        ("range(2048, 2048, 1025)", "range(2048, 2048, 1024)"),
        ("nd_range(global(65536, 65536, 2), local(16, 16, 1))", "nd_range(global(65536, 65536, 1), local(16, 16, 1))"),
        (
            "nd_range(global(65536, 65538), local(16, 2), offset(0, 4))",
            "nd_range(global(65536, 65536), local(16, 2), offset(0, 4))",
        ),
        // Past 64 bits: one diagnostic, E0209 (E0224 is only the per-dimension u32 rule).
        ("range(4294967295, 4294967295, 2)", "range(4294967295, 1)"),
    ];
    for (bad, good) in cases {
        let src = node_src(bad);
        expect_error(&src, "E0209", AT.0, AT.1);
        expect_clean(&node_src(good));
    }
}

#[test]
fn the_message_names_the_sizes_and_the_bound() {
    let src = node_src("range(16776960, 65535)");
    let d = cmdgraph_ir::verify::verify(&parse(&src)).unwrap_err();
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].message,
        "launch of 16776960 x 65535 = 1099478073600 work-items is above the bound of 4294967296 (2^32) per launch"
    );
    let span = d[0].span;
    assert_eq!(&src[span.start as usize..span.end as usize], "range(16776960, 65535)");
    let src = node_src("range(4294967295, 4294967295, 2)");
    let d = cmdgraph_ir::verify::verify(&parse(&src)).unwrap_err();
    assert!(d[0].message.contains("past 2^64"), "{}", d[0].message);
}

#[test]
fn a_command_group_alternative_is_bounded_too() {
    let src = |launch: &str| {
        format!(
            "kernel @k(%x: buf<u32, read_write>) {{
  %i = global_id 0
  store %x[%i], %i
}}
usm @x : u32[64]
graph @g {{
  dcg %d active(0) {{
    kernel @k range(64) args(@x)
    kernel @k {launch} args(@x)
  }}
  %n = dynamic %d
}}
"
        )
    };
    expect_error(&src("range(1048576, 4097)"), "E0209", 9, 5);
    expect_clean(&src("range(1048576, 4096)"));
}

#[test]
fn the_interpreter_refuses_what_the_verifier_refuses() {
    for bad in ["range(16776960, 65535)", "range(65536, 65537)", "range(4294967295, 4294967295, 2)"] {
        let m = parse(&node_src(bad));
        let r = Interpreter::new(&m).and_then(|mut i| {
            let e = i.finalize("g")?;
            i.run(e).map(|_| ())
        });
        assert!(matches!(r, Err(InterpError::Invalid { .. })), "{bad}: {r:?}");
    }
}
