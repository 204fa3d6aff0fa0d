//! Links SPIRV-Tools' validator (src/spirv_val.rs) statically, with the C++ runtime it
//! needs, and compiles the C++ shim around it (src/spirv_val.cpp: exceptions stop there). The library comes from Debian's `spirv-tools` package (scripts/setup.sh installs
//! it); `SPIRV_TOOLS_LIB_DIR` names another directory holding `libSPIRV-Tools.a`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SPIRV_TOOLS_LIB_DIR");
    let dir = library_dir().unwrap_or_else(|| {
        panic!(
            "libSPIRV-Tools.a not found: install Debian's spirv-tools package (`bash scripts/setup.sh` \
             does) or set SPIRV_TOOLS_LIB_DIR to the directory that holds it"
        )
    });
    println!("cargo:rerun-if-changed={}", dir.join("libSPIRV-Tools.a").display());
    println!("cargo:rerun-if-changed=src/spirv_val.cpp");
    // The shim first: it calls into SPIRV-Tools, so the static linker must see it before the
    // library (cc emits its own link line for it here).
    cc::Build::new().cpp(true).file("src/spirv_val.cpp").flag_if_supported("-std=c++17").compile("cmdgraph_spirv_val");
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static=SPIRV-Tools");
    println!("cargo:rustc-link-lib=dylib=stdc++");
}

/// The first directory holding `libSPIRV-Tools.a`: the variable, pkg-config's libdir, then
/// the usual multiarch and local directories.
fn library_dir() -> Option<PathBuf> {
    let has = |d: &Path| d.join("libSPIRV-Tools.a").is_file();
    if let Some(d) = std::env::var_os("SPIRV_TOOLS_LIB_DIR") {
        return Some(PathBuf::from(d)).filter(|d| has(d));
    }
    let pkg = Command::new("pkg-config")
        .args(["--variable=libdir", "SPIRV-Tools"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = PathBuf::from(format!("/usr/lib/{arch}-linux-gnu"));
    pkg.into_iter().chain([multiarch, "/usr/lib".into(), "/usr/local/lib".into()]).find(|d| has(d))
}
