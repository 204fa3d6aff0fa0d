//! `cmdgraph abi`: print the shader declarations that match a kernel's signature (the
//! argument block at binding 0 with each field at its offset, one storage buffer per `buf`
//! parameter; or ordinary bindings), for writing an external kernel in GLSL or HLSL without
//! computing the layout by hand.

use crate::exit::{Failure, Outcome};
use crate::io;
use cmdgraph_codegen::external::{decls, decls_hlsl, E_INTERFACE};
use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::{KernelBody, SpirvInterface};
use std::path::PathBuf;

const EXAMPLES: &str = "\
Examples:
  cmdgraph abi app.cgir --kernel scale            GLSL declarations for @scale's signature
  cmdgraph abi app.cgir --kernel @scale -o scale.glsl
  cmdgraph abi app.cgir --kernel scale --bindings   ordinary bindings (`spirv ... bindings`)
  cmdgraph abi app.cgir --kernel scale --lang hlsl  HLSL (glslangValidator -D -V, dxc -spirv)
  glslangValidator -V --target-env vulkan1.3 scale.comp -o scale.spv   (after pasting them)";

/// The shading language to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// GLSL 4.50 for glslang (`glslangValidator -V`, `glslc`).
    Glsl,
    /// HLSL for glslang's HLSL front end (`glslangValidator -D -V`) or `dxc -spirv`.
    Hlsl,
}

/// Arguments of `cmdgraph abi`.
#[derive(clap::Args)]
#[command(after_help = EXAMPLES)]
pub struct AbiArgs {
    /// The module declaring the kernel; `-` reads stdin.
    #[arg(value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// The kernel whose signature to print (`scale` or `@scale`).
    #[arg(long, value_name = "NAME")]
    pub kernel: String,
    /// The language of the declarations.
    #[arg(long, value_enum, default_value_t = Lang::Glsl, value_name = "LANG")]
    pub lang: Lang,
    /// Print ordinary bindings (a storage buffer per buffer parameter, the values in a
    /// push-constant block: what `spirv "f.spv" entry "main" bindings` takes) even where the
    /// kernel declares the argument block; a kernel declared with `bindings` gets them anyway.
    #[arg(long)]
    pub bindings: bool,
    /// Write to OUT instead of stdout; OUT is replaced only once the output is complete.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// Runs `cmdgraph abi`.
pub fn run(args: &AbiArgs) -> Outcome {
    let input = io::read_input(&args.input)?;
    let module = super::parse(&input)?;
    super::print_warnings(&super::verify(&input, &module)?);
    let bare = args.kernel.strip_prefix('@').unwrap_or(&args.kernel);
    let Some(h) = module.kernel_by_name(bare) else {
        let known: Vec<String> = module.kernels.iter().map(|(_, k)| format!("@{}", k.name)).collect();
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        return Err(Failure::Rejected(format!(
            "error: `{}` has no kernel named `@{bare}` (its kernels: {known})\n",
            input.name
        )));
    };
    let kernel = &module.kernels[h];
    let bindings =
        args.bindings || matches!(kernel.body, KernelBody::Spirv { interface: SpirvInterface::Bindings, .. });
    let text = match (args.lang, bindings) {
        (Lang::Glsl, false) => decls::glsl(kernel),
        (Lang::Glsl, true) => decls::glsl_bindings(kernel),
        (Lang::Hlsl, false) => decls_hlsl::hlsl(kernel),
        (Lang::Hlsl, true) => decls_hlsl::hlsl_bindings(kernel),
    };
    let text = text.map_err(|issues| {
        let span = module.kernels.span(h);
        let diagnostics: Vec<Diagnostic> = issues
            .into_iter()
            .map(|i| {
                Diagnostic::error(E_INTERFACE, i.message, span).with_label(format!("kernel @{bare}")).with_help(i.help)
            })
            .collect();
        super::reject(&input, &diagnostics)
    })?;
    io::write_output(args.output.as_deref(), &text)
}
