//! Waits poll the timeline value before they block (`Context::wait_spin`): a wait returns as
//! soon as the run is done, not when the polling budget is spent, and gives the same results
//! with any budget, including none and one longer than the run.

mod common;

use common::*;
use std::time::{Duration, Instant};

fn ir() -> String {
    format!(
        "{KERNELS_IR}
usm @x : f32[256]
usm @y : f32[256]

graph @g {{
  %r = kernel @ramp range(256) args(@x)
  %s = kernel @scale range(256) args(@x, @y, 2.0) after(%r)
}}
"
    )
}

#[test]
fn a_polling_wait_returns_when_the_run_is_done_and_agrees_with_a_blocking_one() {
    let mut ex = executor(bundle(&ir(), vec![], vec![]));
    assert_eq!(ex.context().wait_spin(), Duration::ZERO, "llvmpipe is a CPU device: no polling by default");
    let id = ex.finalize("g").unwrap();
    let want: Vec<f32> = (0..256).map(|i| 2.0 * i as f32).collect();
    for spin in [Duration::ZERO, Duration::from_micros(100), Duration::from_secs(30)] {
        ex.context().set_wait_spin(spin);
        assert_eq!(ex.context().wait_spin(), spin);
        ex.bind_as("y", &[0f32; 256]).unwrap();
        let t = Instant::now();
        for _ in 0..5 {
            ex.run(id).unwrap();
            ex.wait(id).unwrap();
        }
        // Five tiny runs take milliseconds; a wait that spent its 30 s budget would not.
        assert!(t.elapsed() < Duration::from_secs(10), "{spin:?}: waits took {:?}", t.elapsed());
        assert_eq!(ex.read_as::<f32>("y").unwrap(), want, "{spin:?}");
    }
    no_messages(&ex);
}

/// Argument blocks go to device-local, host-visible memory where the device has it, and the
/// context says where that heap is and whether any buffer meant for it fell back.
#[test]
fn the_context_reports_where_argument_blocks_live() {
    let mut ex = executor(bundle(&ir(), vec![], vec![]));
    let heap = ex.context().shared_heap_bytes();
    let _ = ex.finalize("g").unwrap();
    match heap {
        // llvmpipe has one (its "device" memory is the host's); a GPU with a BAR has one.
        Some(bytes) => {
            assert!(bytes > 0);
            assert_eq!(ex.context().shared_fallbacks(), 0, "two kernels' argument blocks fit in {bytes} bytes");
        }
        None => assert_eq!(ex.context().shared_fallbacks(), 0, "nothing falls back from memory that is not there"),
    }
}
