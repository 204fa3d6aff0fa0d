//! Translating every `wgsl`/`glsl` kernel of a parsed module into a kernel-language body,
//! where modules are loaded and before verification (the CLI's `parse` step calls
//! [`resolve`]). The kernel keeps the signature the user wrote; the shader's must equal it.

use crate::{translate, Lang, ShaderError};
use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::span::Span;
use cmdgraph_ir::{Kernel, KernelBody, Module, ShaderLang, ShaderSource};
use std::path::Path;

/// Largest shader file read (the same order as the IR's own input limit).
const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// A diagnostic of one kernel's translation, and the file it is located in: the shader file
/// for an error in a `wgsl "file"`'s source, else the module text (`None`).
#[derive(Debug)]
pub struct ResolveError {
    /// `(name, text)` of the shader file the span points into; `None`: the module's text.
    pub file: Option<(String, String)>,
    /// The diagnostic (E06xx, docs/kernels.md).
    pub diagnostic: Diagnostic,
}

impl ResolveError {
    /// Renders against its file, or against `module_name`/`module_text`.
    pub fn render(&self, module_name: &str, module_text: &str) -> String {
        match &self.file {
            Some((name, text)) => self.diagnostic.render(name, text),
            None => self.diagnostic.render(module_name, module_text),
        }
    }
}

/// Translates every shader kernel of `module` (parsed from `text`, whose file is in `dir`:
/// shader paths are relative to it) in place. Returns every kernel's error; the kernels that
/// translated are replaced even when another failed.
pub fn resolve(module: &mut Module, text: &str, dir: &Path) -> Result<(), Vec<ResolveError>> {
    let mut errors = Vec::new();
    let handles: Vec<_> = module.kernels.iter().map(|(h, _)| h).collect();
    for h in handles {
        let span = module.kernels.span(h);
        let Some(kernel) = module.kernels.try_get(h) else { continue };
        let KernelBody::Shader { lang, source, entry } = &kernel.body else { continue };
        match translate_kernel(kernel, *lang, source, entry, span, text, dir) {
            Ok((translated, workgroup_size)) => {
                if uses_work_groups(&translated) {
                    errors.extend(check_launches(module, h, &translated.name, workgroup_size));
                }
                if let Some(k) = module.kernels.try_get_mut(h) {
                    *k = translated;
                }
            }
            Err(e) => errors.push(*e),
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// One kernel: read, translate, parse the translation, check the signature, rename.
fn translate_kernel(
    kernel: &Kernel,
    lang: ShaderLang,
    source: &ShaderSource,
    entry: &str,
    kspan: Span,
    text: &str,
    dir: &Path,
) -> Result<(Kernel, [u32; 3]), Box<ResolveError>> {
    let in_module = |d: Diagnostic| Box::new(ResolveError { file: None, diagnostic: d });
    // The source, the file its errors are shown in, and where it starts in that file.
    let (src, file, at) = match source {
        ShaderSource::File(path) => {
            let full = dir.join(path);
            let src = read_source(&full).map_err(|why| {
                in_module(
                    Diagnostic::error(
                        "E0600",
                        format!("cannot read the {} file `{path}`: {why}", lang.keyword()),
                        kspan,
                    )
                    .with_label("this kernel's source")
                    .with_help("the path is relative to the .cgir file; check that the file exists and is UTF-8"),
                )
            })?;
            (src.clone(), Some((full.display().to_string(), src)), 0)
        }
        // The text starts after the `"""` that opens it, inside the kernel's span.
        ShaderSource::Inline(src) => {
            let ks = kspan.start as usize;
            let at = text.get(ks..kspan.end as usize).and_then(|k| k.find("\"\"\"")).map_or(ks, |i| ks + i + 3);
            (src.clone(), None, at)
        }
    };
    let lang_of = match lang {
        ShaderLang::Wgsl => Lang::Wgsl,
        ShaderLang::Glsl => Lang::Glsl,
    };
    let located = |e: ShaderError| {
        let span = Span::new(at + e.span.start, at + e.span.end);
        let mut d = Diagnostic::error("E0601", e.message.clone(), span).with_label("here");
        if !e.help.is_empty() {
            d = d.with_help(e.help.clone());
        }
        Box::new(ResolveError { file: file.clone(), diagnostic: d })
    };
    let translated = translate(lang_of, &src, entry, &kernel.name).map_err(located)?;
    let parsed = cmdgraph_ir::text::parse(&translated.text).map_err(|d| {
        in_module(
            Diagnostic::error(
                "E0603",
                format!(
                    "internal error: the translation of kernel @{} does not parse: {}",
                    kernel.name,
                    d.first().map_or("", |d| d.message.as_str())
                ),
                kspan,
            )
            .with_help("a bug in cmdgraph's shader front end: please report it with the shader"),
        )
    })?;
    let Some((_, mut body_kernel)) = parsed.kernels.into_entries().next().map(|(h, k, _)| (h, k)) else {
        return Err(in_module(Diagnostic::error("E0603", "internal error: the translation has no kernel", kspan)));
    };
    check_signature(kernel, &body_kernel, lang, entry, kspan).map_err(|d| in_module(*d))?;
    let KernelBody::Ir(mut body) = std::mem::replace(&mut body_kernel.body, KernelBody::Ir(Default::default())) else {
        return Err(in_module(Diagnostic::error(
            "E0603",
            "internal error: the translation is not a kernel-language body",
            kspan,
        )));
    };
    rename_params(&mut body, kernel);
    // The translation's spans point into its own text: show the kernel's header instead.
    let ops: Vec<_> = body.ops.handles().collect();
    for op in ops {
        body.ops.set_span(op, kspan);
    }
    let values: Vec<_> = body.values.handles().collect();
    for v in values {
        body.values.set_span(v, kspan);
    }
    let mut comments = kernel.comments.clone();
    let origin = match source {
        ShaderSource::File(path) => format!(" translated from {} \"{path}\" entry \"{entry}\"", lang.keyword()),
        ShaderSource::Inline(_) => format!(" translated from inline {} entry \"{entry}\"", lang.keyword()),
    };
    comments.leading.push(origin);
    let translated_kernel = Kernel {
        name: kernel.name.clone(),
        params: kernel.params.clone(),
        body: KernelBody::Ir(body),
        comments,
        param_spans: kernel.param_spans.clone(),
    };
    Ok((translated_kernel, translated.workgroup_size))
}

fn read_source(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(format!("larger than {} MiB", MAX_SOURCE_BYTES >> 20));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}

/// The declared parameters must be the shader's, in its order (storage buffers by group and
/// binding, then the scalars of its uniform or push-constant block).
fn check_signature(
    declared: &Kernel,
    shader: &Kernel,
    lang: ShaderLang,
    entry: &str,
    kspan: Span,
) -> Result<(), Box<Diagnostic>> {
    let shader_sig: Vec<String> = shader.params.iter().map(|p| p.ty.to_string()).collect();
    let help = format!("the {} entry point `{entry}` takes ({})", lang.keyword(), shader_sig.join(", "));
    if declared.params.len() != shader.params.len() {
        return Err(Box::new(
            Diagnostic::error(
                "E0602",
                format!(
                    "kernel @{} declares {} parameters; the shader has {}",
                    declared.name,
                    declared.params.len(),
                    shader.params.len()
                ),
                kspan,
            )
            .with_label("this signature")
            .with_help(help),
        ));
    }
    for (i, (d, s)) in declared.params.iter().zip(&shader.params).enumerate() {
        if d.ty != s.ty {
            let span = declared.param_spans.get(&(i as u32));
            return Err(Box::new(
                Diagnostic::error(
                    "E0602",
                    format!(
                        "parameter %{} is `{}`, but the shader's parameter {} (`{}`) is `{}`",
                        d.name,
                        d.ty,
                        i + 1,
                        s.name,
                        s.ty
                    ),
                    if span.is_defined() { span } else { kspan },
                )
                .with_label("does not match the shader")
                .with_help(help),
            ));
        }
    }
    Ok(())
}

/// Gives the body's parameter values the declared names, renaming any other value that
/// already has one of them.
fn rename_params(body: &mut cmdgraph_ir::kernel::Body, kernel: &Kernel) {
    let wanted: std::collections::BTreeSet<&str> = kernel.params.iter().map(|p| p.name.as_str()).collect();
    let mut taken: std::collections::BTreeSet<String> = body.values.iter().map(|(_, v)| v.name.clone()).collect();
    taken.extend(wanted.iter().map(|s| s.to_string()));
    let n = kernel.params.len();
    for (i, (_, v)) in body.values.iter_mut().enumerate() {
        if i < n {
            v.name = kernel.params[i].name.clone();
        } else if wanted.contains(v.name.as_str()) {
            let mut k = 1;
            while taken.contains(&format!("{}_{k}", v.name)) {
                k += 1;
            }
            v.name = format!("{}_{k}", v.name);
            taken.insert(v.name.clone());
        }
    }
}

/// Whether the kernel can observe its work-group: local memory, barriers, or the builtins
/// of the group (`local_id`, `group_id`, `local_range`, `group_range`).
fn uses_work_groups(kernel: &Kernel) -> bool {
    let KernelBody::Ir(body) = &kernel.body else { return false };
    body.ops.iter().any(|(_, op)| op.kind.work_group_keyword().is_some())
}

/// A kernel that sees its work-group must be launched with the shader's work-group size:
/// `nd_range` with that local size (its work-group arrays and barriers were written for it).
fn check_launches(
    module: &Module,
    kernel: cmdgraph_ir::Handle<Kernel>,
    name: &str,
    size: [u32; 3],
) -> Vec<ResolveError> {
    use cmdgraph_ir::graph::Launch;
    let mut out = Vec::new();
    let wanted = |local: &[u64]| (0..3).all(|d| local.get(d).copied().unwrap_or(1) == u64::from(size[d]));
    let shown = if size[2] > 1 {
        format!("{}, {}, {}", size[0], size[1], size[2])
    } else if size[1] > 1 {
        format!("{}, {}", size[0], size[1])
    } else {
        size[0].to_string()
    };
    for (_, graph) in module.graphs.iter() {
        for (node, _) in graph.nodes.iter() {
            for (_, cmd) in graph.kernel_commands(node).filter(|(_, c)| c.kernel == kernel) {
                if !matches!(&cmd.launch, Launch::NdRange { local, .. } if wanted(local)) {
                    let d = Diagnostic::error(
                        "E0604",
                        format!("kernel @{name} uses its work-group, and its shader's work-group size is ({shown})"),
                        graph.nodes.span(node),
                    )
                    .with_label("not launched with that work-group size")
                    .with_help(format!("launch it with `nd_range(global(...), local({shown}))`"));
                    out.push(ResolveError { file: None, diagnostic: d });
                }
            }
        }
    }
    out
}
