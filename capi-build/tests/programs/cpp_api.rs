//! tests/cpp/api_tour.cpp: what the dotp port does not use of the C++ header (queue
//! recording with an in-order queue and a host-task lambda, dynamic parameters and command
//! groups, empty nodes, graph allocations, `make_edge`, sub-graphs, updates,
//! `sycl::exception` with its errc, and a `while` conditional node on an interpreter queue), compiled with `c++ -std=c++17 -Wall -Wextra -Wpedantic
//! -Werror`, run on the default Vulkan device with validation on; every printed value is
//! compared bit for bit with the same arithmetic in Rust.
use crate::support::*;
use std::process::Command;

fn hex(v: &[f32]) -> String {
    v.iter().map(|f| format!(" {:08x}", f.to_bits())).collect()
}

#[test]
fn the_cpp_header_tour_matches_rust() {
    cargo_build("cmdgraph-capi-build", &["--lib"]);
    let libs = profile_dir();
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = dir.path().join("api_tour");
    run(Command::new("c++")
        .args(["-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I"])
        .arg(root().join("capi-build/include"))
        .arg(root().join("capi-build/tests/cpp/api_tour.cpp"))
        .arg("-L")
        .arg(&libs)
        .arg("-lcmdgraph_build")
        .arg(format!("-Wl,-rpath,{}", libs.display()))
        .arg("-o")
        .arg(&exe));
    let (stdout, stderr) = run(Command::new(&exe).env("CMDGRAPH_VK_VALIDATION", "1"));
    assert!(!stderr.contains("validation"), "the validation layer reported:\n{stderr}");

    let mut x = Vec::new();
    let mut v = 1.0f32;
    for _ in 0..8 {
        v *= 1.1;
        x.push(v);
    }
    let map = |f: &dyn Fn(f32) -> f32| x.iter().map(|&e| f(e)).collect::<Vec<f32>>();
    let recorded = map(&|e| 1.0 + (0.3 * e) * 2.0);
    let run1_w = map(&|e| -(3.0 * (0.5 * e)));
    let mut run1_x = x.clone();
    run1_x[0] = 2.5;
    run1_x[1] = 2.5;
    let run2_w = map(&|e| -(3.0 + 0.25 * e));
    let want = [
        "recorded 3".to_string(),
        format!("recorded_z{}", hex(&recorded)),
        "types kernel kernel empty async_malloc memcpy subgraph".to_string(),
        "enum 1 1 1".to_string(),
        format!("run1_w{}", hex(&run1_w)),
        format!("run1_x{}", hex(&run1_x)),
        format!("run2_w{}", hex(&run2_w)),
        "cycle invalid 8".to_string(),
        "build build".to_string(),
        "update sycl invalid".to_string(),
        "while conditional".to_string(),
        format!("while_x{}", hex(&map(&|e| 0.3 * (0.3 * (0.3 * e))))),
    ];
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(got, want, "stdout:\n{stdout}");
}
