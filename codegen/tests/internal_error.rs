//! A failure inside code generation — LLVM failing on the module codegen wrote, or
//! `spirv-val` rejecting the SPIR-V it made — is an internal compiler error: it says so and
//! asks for a report, names the kernel once, and locates it in the source; a tool that cannot
//! be run at all is not one. Forced here with a stand-in `llc` (`CMDGRAPH_LLC`), in one test
//! because the variable is process-wide.

use cmdgraph_codegen::bundle::{compile_module, CompileError, Llvm};
use cmdgraph_codegen::{compile_kernel, module_variants, CodegenError, Options};
use std::path::PathBuf;

const SRC: &str = "\
kernel @left_sum(%u: buf<f32, read>, %y: buf<f32, write>) {
  %i = global_id 0
  %v = load %u[%i]
  store %y[%i], %v
}

usm @u : f32[1024]
usm @y : f32[1024]

graph @g {
  %k = kernel @left_sum range(1024) args(@u, @y)
}
";

/// An executable shell script `name` with `body`, in a fresh directory of this process.
fn script(name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("cmdgraph-internal-error-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn compile_with_llc(llc: &std::path::Path) -> (Result<(), CodegenError>, Result<(), CompileError>) {
    std::env::set_var("CMDGRAPH_LLC", llc);
    let module = cmdgraph_ir::text::parse(SRC).expect("parses");
    let (k, v) = module_variants(&module).expect("variants").remove(0);
    let kernel = compile_kernel(&module, k, &v, &Options::default()).map(|_| ());
    let bundle = compile_module(&module, &[], &Options::default(), &Llvm).map(|_| ());
    std::env::remove_var("CMDGRAPH_LLC");
    (kernel, bundle)
}

#[test]
fn codegen_failures_are_internal_errors_at_the_kernel() {
    // spirv-val rejects what "llc" made: a bare header without a memory model.
    let header = script(
        "llc-header-only",
        "cat > /dev/null\nprintf '\\003\\002\\043\\007\\000\\006\\001\\000\\000\\000\\000\\000\\001\\000\\000\\000\\000\\000\\000\\000'",
    );
    let (kernel, bundle) = compile_with_llc(&header);
    let e = kernel.expect_err("invalid SPIR-V is refused");
    assert!(e.is_internal(), "{e:?}");
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "internal compiler error: kernel @left_sum: spirv-val rejected the generated SPIR-V at -O2 (work-group \
         256x1x1); please report this cmdgraph bug with the input file"
    );
    assert!(text.contains("\n  error: line 0: Missing required OpMemoryModel instruction."), "{text}");
    assert_eq!(text.matches("left_sum").count(), 1, "the kernel is named once: {text}");
    // Located at the kernel keyword, line 1, with the validator's message in the help.
    let d = e.diagnostic().expect("a located diagnostic");
    let rendered = d.render("issue16.cgir", SRC);
    assert!(
        rendered.starts_with("error[E0599]: internal compiler error: kernel @left_sum: spirv-val rejected"),
        "{rendered}"
    );
    assert!(rendered.contains("issue16.cgir:1:1"), "{rendered}");
    assert!(rendered.contains("Missing required OpMemoryModel"), "{rendered}");
    assert_eq!(rendered.matches("please report").count(), 1, "{rendered}");

    // The same through the bundle writer: the launch first, the kernel once, and the
    // diagnostic also points at the launch.
    let e = bundle.expect_err("the bundle is refused");
    assert!(e.is_internal(), "{e:?}");
    let text = e.to_string();
    assert!(text.starts_with("@g %k: internal compiler error: kernel @left_sum: spirv-val rejected"), "{text}");
    assert_eq!(text.matches("left_sum").count(), 1, "the kernel is named once: {text}");
    let rendered = e.diagnostic().expect("located").render("issue16.cgir", SRC);
    assert!(rendered.contains("issue16.cgir:1:1") && rendered.contains("@g %k launches it"), "{rendered}");

    // LLVM itself failing (here: emission) is internal too.
    let failing = script("llc-failing", "cat > /dev/null\necho 'LLVM ERROR: something broke' >&2\nexit 1");
    let (kernel, _) = compile_with_llc(&failing);
    let e = kernel.expect_err("failed emission is refused");
    assert!(e.is_internal(), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with("internal compiler error: kernel @left_sum: LLVM failed on the generated module at -O2"),
        "{text}"
    );
    assert!(text.contains("LLVM ERROR: something broke"), "{text}");

    // An llc that cannot be run is the installation, not a bug.
    let (kernel, _) = compile_with_llc(std::path::Path::new("/nonexistent/llc"));
    let e = kernel.expect_err("no llc");
    assert!(!e.is_internal() && e.diagnostic().is_none(), "{e:?}");
    assert!(e.to_string().contains("cannot run /nonexistent/llc"), "{e}");

    if let Some(dir) = header.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
