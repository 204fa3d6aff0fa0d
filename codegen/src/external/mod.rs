//! External SPIR-V kernels (`kernel @k(...) spirv "f.spv" entry "main"`): read, validated
//! by `spirv-val`, reflected, checked against their IR signature and packed like codegen's
//! kernels (docs/abi.md, "External SPIR-V kernels").
//!
//! [`load`] does all of it for a source module before packaging and reports every problem as
//! a [`Diagnostic`] at the kernel (or the launch) in the source text; [`WithExternal`] is the
//! [`KernelCompiler`] that hands the loaded modules to
//! [`compile_module`](crate::bundle::compile_module) and everything else to the inner
//! compiler. The SPIR-V words go into the bundle exactly as the file holds them.

mod check;
pub mod decls;
pub mod decls_hlsl;
mod layouts;
mod rebind;
pub mod reflect;

pub(crate) use check::dims;
pub use check::{check, Interface, Issue};

use crate::bundle::KernelCompiler;
use crate::{validate, CodegenError, Options, Variant};
use cmdgraph_ir::bundle::CompiledKernel;
use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::{Arg, Handle, Kernel, KernelBody, Launch, Module, Span, SpirvInterface};
use std::path::Path;

/// Diagnostic code: the `.spv` file cannot be read.
pub const E_READ: &str = "E0501";
/// Diagnostic code: the file is not valid Vulkan SPIR-V (malformed, or `spirv-val` rejects it).
pub const E_INVALID: &str = "E0502";
/// Diagnostic code: the module's interface does not match the kernel's IR signature.
pub const E_INTERFACE: &str = "E0503";
/// Diagnostic code: a launch asks for a work-group size other than the module's `LocalSize`.
pub const E_LAUNCH: &str = "E0504";

/// The external kernels of a module, each checked and packed (sorted by kernel name).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Externals {
    kernels: Vec<CompiledKernel>,
}

impl Externals {
    /// The packed kernel named `name` (without `@`).
    pub fn get(&self, name: &str) -> Option<&CompiledKernel> {
        self.kernels.iter().find(|k| k.kernel == name)
    }

    /// Every packed kernel, by name.
    pub fn kernels(&self) -> &[CompiledKernel] {
        &self.kernels
    }
}

/// Reads, validates, reflects and checks every external kernel of `module` (paths relative to
/// `base`, the directory of the `.cgir` file), and checks every launch of one against its
/// `LocalSize`. All problems are returned, each located in the module's source text.
pub fn load(module: &Module, base: &Path) -> Result<Externals, Vec<Diagnostic>> {
    let mut kernels = Vec::new();
    let mut diagnostics = Vec::new();
    for (h, k) in module.kernels.iter() {
        let KernelBody::Spirv { path, entry, interface } = &k.body else { continue };
        let span = module.kernels.span(h);
        match load_one(k, path, entry, *interface, &base.join(path), span) {
            Ok(c) => kernels.push(c),
            Err(mut d) => diagnostics.append(&mut d),
        }
    }
    kernels.sort_by(|a, b| a.kernel.cmp(&b.kernel));
    let externals = Externals { kernels };
    check_launches(module, &externals, &mut diagnostics);
    if diagnostics.is_empty() {
        Ok(externals)
    } else {
        Err(diagnostics)
    }
}

fn load_one(
    k: &Kernel,
    path: &str,
    entry: &str,
    interface: SpirvInterface,
    file: &Path,
    span: Span,
) -> Result<CompiledKernel, Vec<Diagnostic>> {
    let at = |code: &'static str, message: String, help: String| {
        vec![Diagnostic::error(code, message, span).with_label(format!("kernel @{}", k.name)).with_help(help)]
    };
    let bytes = std::fs::read(file).map_err(|e| {
        at(
            E_READ,
            format!("cannot read \"{path}\": {e}"),
            format!("the path is relative to the .cgir file: {}", file.display()),
        )
    })?;
    let not_spirv = |why: String| {
        at(
            E_INVALID,
            format!("\"{path}\" is not a SPIR-V module: {why}"),
            "assemble it with spirv-as, or check the file is complete".into(),
        )
    };
    let words = reflect::words_of(&bytes).map_err(|e| not_spirv(e.0))?;
    // Layout decorations on work-group types mean nothing and Vulkan forbids them; older
    // compilers write them (layouts.rs).
    let words = layouts::strip_workgroup_layouts(&words).unwrap_or(words);
    let reflection = reflect::reflect(&words).map_err(|e| not_spirv(e.0))?;
    let validated = |words: &[u32], what: &str| match validate::validate(words) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(message)) => Err(at(
            E_INVALID,
            format!("{what} does not pass spirv-val --target-env vulkan1.3"),
            message.lines().take(4).collect::<Vec<_>>().join(" | "),
        )),
        Err(other) => Err(at(E_INVALID, format!("{what} could not be validated"), other.to_string())),
    };
    validated(&words, &format!("\"{path}\""))?;
    let interface_issues = |issues: Vec<Issue>| {
        issues
            .into_iter()
            .map(|i| {
                Diagnostic::error(E_INTERFACE, format!("\"{path}\": {}", i.message), span)
                    .with_label(format!("kernel @{}", k.name))
                    .with_help(i.help)
            })
            .collect::<Vec<_>>()
    };
    let (words, reflection) = match interface {
        SpirvInterface::ArgumentBlock => match rebind::modernize(&words).map_err(|i| interface_issues(vec![i]))? {
            None => (words, reflection),
            Some(modern) => {
                validated(&modern, &format!("\"{path}\" with its storage buffers modernized (a cmdgraph bug)"))?;
                let reflection = reflect::reflect(&modern).map_err(|e| not_spirv(e.0))?;
                (modern, reflection)
            }
        },
        SpirvInterface::Bindings => {
            let rebound = rebind::rebind(k, &words, &reflection).map_err(interface_issues)?;
            // What reaches the bundle is the rewritten module: validated and checked again.
            validated(&rebound, &format!("\"{path}\" rebound to the argument block (a cmdgraph bug)"))?;
            let reflection = reflect::reflect(&rebound).map_err(|e| not_spirv(e.0))?;
            (rebound, reflection)
        }
    };
    let interface = check(k, entry, &reflection).map_err(interface_issues)?;
    Ok(CompiledKernel {
        kernel: k.name.clone(),
        entry: entry.to_string(),
        workgroup_size: interface.workgroup_size,
        // The module's marker: what its code handles, which the loader holds the bundle to.
        items_per_invocation: interface.items_per_invocation,
        spirv: words,
        layout: interface.layout,
    })
}

/// The work-group size a launch of an external kernel asks for, when it names one.
fn asked(launch: &Launch) -> Option<[u64; 3]> {
    match launch {
        Launch::NdRange { local, .. } => {
            let mut size = [1u64; 3];
            for (s, &l) in size.iter_mut().zip(local) {
                *s = l;
            }
            Some(size)
        }
        _ => None,
    }
}

/// A launch of an external kernel with an `nd_range` local size other than its `LocalSize`.
fn launch_mismatch(externals: &Externals, name: &str, launch: &Launch) -> Option<(String, String)> {
    let k = externals.get(name)?;
    let local = asked(launch)?;
    if local.iter().zip(k.workgroup_size).any(|(&a, b)| a != u64::from(b)) {
        let [x, y, z] = k.workgroup_size;
        return Some((
            format!(
                "kernel @{name} runs with work-group size {}, its module's LocalSize is ({x}, {y}, {z})",
                dims(&local)
            ),
            format!(
                "an external kernel's work-group size is fixed by its SPIR-V: launch it with local({x}{}) \
                 or a `range`",
                if z > 1 {
                    format!(", {y}, {z}")
                } else if y > 1 {
                    format!(", {y}")
                } else {
                    String::new()
                }
            ),
        ));
    }
    None
}

/// A launch with a global offset of a kernel with ordinary bindings, which has no way to read
/// it (Vulkan's `GlobalInvocationId` starts at 0).
fn offset_unseen(k: &Kernel, launch: &Launch) -> Option<(String, String)> {
    let KernelBody::Spirv { interface: SpirvInterface::Bindings, .. } = k.body else { return None };
    let Launch::NdRange { offset, .. } = launch else { return None };
    offset.iter().any(|&o| o != 0).then(|| {
        (
            format!("kernel @{} has ordinary bindings and runs with a global offset", k.name),
            "a shader with ordinary bindings cannot read the offset (its GlobalInvocationId starts at 0): \
             launch it without `offset(...)`, or pass the offset as a scalar parameter"
                .to_string(),
        )
    })
}

fn check_launches(module: &Module, externals: &Externals, diagnostics: &mut Vec<Diagnostic>) {
    for (_, graph) in module.graphs.iter() {
        for (h, node) in graph.nodes.iter() {
            for (_, cmd) in graph.kernel_commands(h) {
                let Some(k) = module.kernels.try_get(cmd.kernel) else { continue };
                if let Some((message, help)) =
                    launch_mismatch(externals, &k.name, &cmd.launch).or_else(|| offset_unseen(k, &cmd.launch))
                {
                    diagnostics.push(
                        Diagnostic::error(E_LAUNCH, message, graph.nodes.span(h))
                            .with_label(format!("node %{}", node.name))
                            .with_secondary(module.kernels.span(cmd.kernel), "the external kernel")
                            .with_help(help),
                    );
                }
            }
        }
    }
}

/// A [`KernelCompiler`] that packs the external kernels of [`load`] and passes every other
/// kernel to `inner`.
pub struct WithExternal<'a> {
    /// The compiler of kernel-language bodies (normally [`crate::bundle::Llvm`]).
    pub inner: &'a dyn KernelCompiler,
    /// What [`load`] returned for the module.
    pub external: &'a Externals,
}

fn external(module: &Module, kernel: Handle<Kernel>) -> Option<&Kernel> {
    module.kernels.try_get(kernel).filter(|k| matches!(k.body, KernelBody::Spirv { .. }))
}

impl KernelCompiler for WithExternal<'_> {
    fn choose_variant(
        &self,
        module: &Module,
        kernel: Handle<Kernel>,
        launch: &Launch,
        args: &[Arg],
    ) -> Result<Variant, CodegenError> {
        let Some(k) = external(module, kernel) else { return self.inner.choose_variant(module, kernel, launch, args) };
        let c = self.external.get(&k.name).ok_or_else(|| CodegenError::launch(&k.name, not_loaded()))?;
        if let Some((message, _)) = launch_mismatch(self.external, &k.name, launch) {
            // The error names the kernel itself.
            let message = message.strip_prefix(&format!("kernel @{} ", k.name)).unwrap_or(&message).to_string();
            return Err(CodegenError::launch(&k.name, message));
        }
        // One variant whatever the launch: the module is what it is.
        Ok(Variant {
            workgroup_size: c.workgroup_size,
            dims: 0,
            local_capacity: Vec::new(),
            predicated: false,
            loop_tail: None,
        })
    }

    fn compile_kernel(
        &self,
        module: &Module,
        kernel: Handle<Kernel>,
        variant: &Variant,
        options: &Options,
    ) -> Result<CompiledKernel, CodegenError> {
        let Some(k) = external(module, kernel) else {
            return self.inner.compile_kernel(module, kernel, variant, options);
        };
        self.external.get(&k.name).cloned().ok_or_else(|| CodegenError::launch(&k.name, not_loaded()))
    }
}

fn not_loaded() -> String {
    "the external kernel was not loaded (codegen::external::load)".to_string()
}
