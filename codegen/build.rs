//! Links LLVM 22 for inkwell, whose llvm-sys is built with `no-llvm-linking`.
//!
//! Release builds link LLVM's static libraries, so the CLI, the bench binary and the Python
//! wheel run where LLVM is not installed. Debug builds link Debian's shared `libLLVM`: with
//! static LLVM every test binary carried about 70 MB of it, and the workspace's test binaries
//! filled the CI machine's disk (stop 55's CI failed linking with ENOSPC). The environment
//! variable `CMDGRAPH_LLVM_LINK` (`static` or `shared`) overrides the profile's choice: a debug
//! CLI carried to a machine without LLVM (scripts/gpu-examples.sh) is linked statically.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CMDGRAPH_LLVM_LINK");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
    let config = llvm_config();
    let link_static = match env::var("CMDGRAPH_LLVM_LINK").as_deref() {
        Ok("static") => true,
        Ok("shared") => false,
        Ok(other) => panic!("CMDGRAPH_LLVM_LINK={other}: set it to `static` or `shared`, or unset it"),
        Err(_) => env::var("PROFILE").as_deref() == Ok("release"),
    };
    let (mode, kind) = if link_static { ("--link-static", "static") } else { ("--link-shared", "dylib") };

    println!("cargo:rustc-link-search=native={}", query(&config, &["--libdir"]));
    for file in query(&config, &[mode, "--libnames"]).split_whitespace() {
        println!("cargo:rustc-link-lib={kind}={}", library_stem(file));
    }
    for flag in query(&config, &[mode, "--system-libs"]).split_whitespace() {
        if let Some(name) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={name}");
        } else {
            // Debian's LLVM names some system libraries by path (`/usr/lib/.../libz3.so`).
            let path = Path::new(flag);
            let (Some(dir), Some(file)) = (path.parent(), path.file_name().and_then(|f| f.to_str())) else {
                panic!("llvm-config --system-libs printed `{flag}`, neither -l<name> nor a library path");
            };
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=dylib={}", library_stem(file));
        }
    }
    // LLVM is C++; its static libraries need the C++ runtime (the shared one names it itself).
    if link_static {
        println!("cargo:rustc-link-lib=dylib=stdc++");
    }
}

/// `llvm-config` of LLVM 22: under `LLVM_SYS_221_PREFIX` (scripts/env.sh sets it), as llvm-sys
/// finds it, or Debian's `llvm-config-22` on the path.
fn llvm_config() -> PathBuf {
    match env::var_os("LLVM_SYS_221_PREFIX") {
        Some(prefix) => Path::new(&prefix).join("bin").join("llvm-config"),
        None => PathBuf::from("llvm-config-22"),
    }
}

fn query(config: &Path, args: &[&str]) -> String {
    let output = Command::new(config).args(args).output().unwrap_or_else(|err| {
        panic!("cannot run {}: {err}; install LLVM 22 (scripts/setup.sh) and source scripts/env.sh", config.display())
    });
    assert!(
        output.status.success(),
        "{} {} failed: {}",
        config.display(),
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("llvm-config prints UTF-8").trim().to_owned()
}

/// `libLLVMCore.a` → `LLVMCore`, `libLLVM-22.so` → `LLVM-22`, `libz3.so.4` → `z3`.
fn library_stem(file: &str) -> &str {
    let stem = file.strip_prefix("lib").unwrap_or(file);
    let end = stem.find(".so").or_else(|| stem.strip_suffix(".a").map(str::len));
    end.map_or(stem, |end| &stem[..end])
}
