//! The crate dependency rule of ARCHITECTURE.md: an application that loads bundles links the
//! executor and never LLVM; the code generator never links Vulkan. The code generator may
//! depend on `cmdgraph-passes` (it runs the pipeline and reads the memory plan when it writes a
//! bundle); neither pulls in Vulkan, which the test below checks on the resolved tree. Checked on the resolved
//! dependency tree (normal and build dependencies), so a transitive path breaks it too.

use std::process::Command;

fn dependency_names(package: &str) -> Vec<String> {
    dependency_names_with(package, &[])
}

/// The dependency names of `package` with extra `cargo tree` arguments (`--features ...`).
fn dependency_names_with(package: &str, extra: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--manifest-path", manifest, "-p", package])
        .args(extra)
        .args(["-e", "normal,build", "--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut names: Vec<String> = text.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn executor_depends_on_ir_only() {
    let names = dependency_names("cmdgraph-executor");
    let workspace: Vec<&String> = names.iter().filter(|n| n.starts_with("cmdgraph-")).collect();
    assert_eq!(workspace, ["cmdgraph-executor", "cmdgraph-ir"], "executor must depend on cmdgraph-ir only");
    for forbidden in ["inkwell", "llvm-sys", "egg"] {
        assert!(!names.iter().any(|n| n == forbidden), "executor links {forbidden}: {names:?}");
    }
}

#[test]
fn codegen_never_links_vulkan() {
    let names = dependency_names("cmdgraph-codegen");
    for forbidden in ["ash", "cmdgraph-executor"] {
        assert!(!names.iter().any(|n| n == forbidden), "codegen links {forbidden}: {names:?}");
    }
    assert!(names.iter().any(|n| n == "cmdgraph-ir"), "codegen is expected to build on cmdgraph-ir: {names:?}");
}

/// `cmdgraph-ir` is the data model and runs nothing: no other workspace crate (the reference
/// interpreter is `cmdgraph-interp`, on top of it), and the interpreter needs nothing but it.
#[test]
fn ir_is_the_base_and_the_interpreter_sits_on_it_alone() {
    let names = dependency_names("cmdgraph-ir");
    let workspace: Vec<&String> = names.iter().filter(|n| n.starts_with("cmdgraph-")).collect();
    assert_eq!(workspace, ["cmdgraph-ir"], "cmdgraph-ir must not depend on another cmdgraph crate");
    let names = dependency_names("cmdgraph-interp");
    let workspace: Vec<&String> = names.iter().filter(|n| n.starts_with("cmdgraph-")).collect();
    assert_eq!(workspace, ["cmdgraph-interp", "cmdgraph-ir"], "the interpreter builds on cmdgraph-ir only");
    for forbidden in ["inkwell", "llvm-sys", "egg", "ash"] {
        assert!(!names.iter().any(|n| n == forbidden), "the interpreter links {forbidden}: {names:?}");
    }
}

/// The SYCL API with its Vulkan devices links no LLVM (issue 19): it runs precompiled bundles
/// through the executor. Only the opt-in `jit` feature, which compiles a missing bundle at
/// finalize, brings codegen and LLVM in; checked too, so the feature cannot silently stop
/// doing what it says.
#[test]
fn sycl_links_no_llvm() {
    let names = dependency_names("cmdgraph-sycl");
    for forbidden in ["inkwell", "llvm-sys", "cmdgraph-codegen"] {
        assert!(!names.iter().any(|n| n == forbidden), "cmdgraph-sycl links {forbidden}: {names:?}");
    }
    for needed in ["cmdgraph-interp", "cmdgraph-executor", "ash"] {
        assert!(names.iter().any(|n| n == needed), "cmdgraph-sycl lacks {needed}: {names:?}");
    }
    let jit = dependency_names_with("cmdgraph-sycl", &["--features", "jit"]);
    for needed in ["cmdgraph-codegen", "inkwell"] {
        assert!(jit.iter().any(|n| n == needed), "cmdgraph-sycl with `jit` lacks {needed}: {jit:?}");
    }
}

/// The C library (issue 21) is what C and C++ applications link to load bundles: the executor,
/// the IR and the C boundary's error machinery and communicator adapter (`capi-error`,
/// `capi-comm`, shared with `libcmdgraph_build`), never LLVM, the optimizer or the
/// interpreter (those are its tests' only).
#[test]
fn the_c_library_links_the_executor_and_no_llvm() {
    let names = dependency_names("cmdgraph-capi");
    let workspace: Vec<&String> = names.iter().filter(|n| n.starts_with("cmdgraph-")).collect();
    assert_eq!(
        workspace,
        ["cmdgraph-capi", "cmdgraph-capi-comm", "cmdgraph-capi-error", "cmdgraph-executor", "cmdgraph-ir"],
        "the C library's crates"
    );
    for forbidden in ["inkwell", "llvm-sys", "egg"] {
        assert!(!names.iter().any(|n| n == forbidden), "cmdgraph-capi links {forbidden}: {names:?}");
    }
}
