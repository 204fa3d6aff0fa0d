//! `cmdgraph.Module`: a parsed module, and what the CLI's `fmt`, `verify`, `dot`, `compile`
//! and `interp` do with one, through the same library calls (cli/src/cmd/).

use crate::arrays;
use crate::bundle::Bundle;
use crate::errors::{Error, Kind, Result};
use crate::params::{self, Update};
use cmdgraph_codegen::bundle::{
    compile_module_configured, CompileError, KernelCompiler, Llvm, PipelineOptions, Progress,
};
use cmdgraph_codegen::external::{self, WithExternal};
use cmdgraph_interp::{FmaRounding, Interpreter, RunOptions};
use cmdgraph_ir::diag::{render_all, Severity};
use cmdgraph_ir::dot::{to_dot, DotOptions};
use cmdgraph_ir::graph::{Alternative, NodeKind};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};

/// A module of cmdgraph IR, parsed from text.
///
/// >>> import cmdgraph
/// >>> m = cmdgraph.parse_file("examples/saxpy_chain.cgir")
/// >>> m.verify()
/// ''
/// >>> bundle = m.compile()
#[pyclass(frozen, module = "cmdgraph._cmdgraph")]
pub struct Module {
    /// The file name diagnostics show (`<string>` unless given).
    name: String,
    /// The source text.
    source: String,
    /// As written: shader kernels stay shader kernels (what `text()` prints, as `cmdgraph fmt`).
    written: cmdgraph_ir::Module,
    /// With `wgsl`/`glsl` kernels translated (what everything else uses, as the CLI).
    module: cmdgraph_ir::Module,
}

/// Parses `text`; `filename` is the name diagnostics show and the directory shader and
/// external SPIR-V files are found in (the working directory for `<string>`).
///
/// Raises ParseError with the CLI's rendered diagnostics.
///
/// >>> m = cmdgraph.parse("usm @x : f32[4]\n", filename="x.cgir")
#[pyfunction]
#[pyo3(signature = (text, filename = "<string>"))]
pub fn parse(text: String, filename: &str) -> Result<Module> {
    Module::new(filename.to_string(), text)
}

/// Reads and parses the file at `path` (diagnostics name it as given, as the CLI does).
///
/// >>> m = cmdgraph.parse_file("examples/reduction.cgir")
#[pyfunction]
pub fn parse_file(path: PathBuf) -> PyResult<Module> {
    let text = std::fs::read_to_string(&path)
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot read `{}`: {e}", path.display())))?;
    Ok(Module::new(path.display().to_string(), text)?)
}

impl Module {
    fn new(name: String, source: String) -> Result<Module> {
        let written =
            cmdgraph_ir::text::parse(&source).map_err(|d| Error::diagnostics(Kind::Parse, &d, &name, &source))?;
        let mut module = written.clone();
        cmdgraph_shader::resolve(&mut module, &source, &base_dir(&name)).map_err(|errors| Error {
            kind: Kind::Parse,
            code: errors.first().map(|e| e.diagnostic.code.to_string()),
            message: errors.iter().map(|e| e.render(&name, &source)).collect(),
        })?;
        Ok(Module { name, source, written, module })
    }

    /// Verifies as `cmdgraph verify` does: errors raise, warnings are returned rendered.
    fn check(&self, allow_races: bool) -> Result<String> {
        let options = cmdgraph_ir::verify::VerifyOptions { allow_races };
        let mut warnings = match cmdgraph_ir::verify::verify_with(&self.module, &options) {
            Ok(()) => String::new(),
            Err(d) if d.iter().all(|d| d.severity == Severity::Warning) => render_all(&d, &self.name, &self.source),
            Err(d) => return Err(Error::diagnostics(Kind::Verify, &d, &self.name, &self.source)),
        };
        warnings.push_str(&render_all(&cmdgraph_ir::verify::warnings(&self.module), &self.name, &self.source));
        Ok(warnings)
    }

    /// External SPIR-V kernels read beside the module and checked against their signatures
    /// (E0501–E0504), as `compile` and `verify` read them.
    fn externals(&self) -> Result<external::Externals> {
        external::load(&self.module, &base_dir(&self.name))
            .map_err(|d| Error::diagnostics(Kind::Verify, &d, &self.name, &self.source))
    }

    /// The graph to run: `wanted`, or the module's only graph.
    fn pick_graph(&self, wanted: Option<&str>) -> Result<String> {
        pick_graph(&self.module, wanted, &self.name)
    }

    /// A code generation failure rendered at its location when it has one (`compile.rs`).
    fn located(&self, e: &CompileError) -> Error {
        let message = match e.diagnostic() {
            Some(d) => d.render(&self.name, &self.source),
            None => format!("error: {}: {e}\n", self.name),
        };
        let code = e.diagnostic().map(|d| d.code.to_string());
        Error { kind: Kind::Compile, code, message }
    }
}

/// The directory of file `name` (`.` for a name without one, or `<string>`).
fn base_dir(name: &str) -> PathBuf {
    match Path::new(name).parent() {
        Some(d) if !name.starts_with('<') && !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The graph to run: `wanted` (`main` or `@main`), or the module's only graph.
pub fn pick_graph(module: &cmdgraph_ir::Module, wanted: Option<&str>, file: &str) -> Result<String> {
    let names: Vec<String> = module.graphs.iter().map(|(_, g)| format!("@{}", g.name)).collect();
    let listed = if names.is_empty() { "none".to_string() } else { names.join(", ") };
    match wanted {
        Some(name) => {
            let bare = name.strip_prefix('@').unwrap_or(name);
            match module.graph_by_name(bare) {
                Some(_) => Ok(bare.to_string()),
                None => Err(Error::value(format!("`{file}` has no graph named `@{bare}` (its graphs: {listed})"))),
            }
        }
        None => match module.graphs.iter().next() {
            Some((_, g)) if names.len() == 1 => Ok(g.name.clone()),
            Some(_) => Err(Error::value(format!(
                "`{file}` has {} graphs; choose one with graph= (its graphs: {listed})",
                names.len()
            ))),
            None => Err(Error::value(format!("`{file}` has no graph to run"))),
        },
    }
}

/// Every host-task (and native command) callback name of the module.
pub fn host_callbacks(module: &cmdgraph_ir::Module) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for (_, g) in module.graphs.iter() {
        for (_, n) in g.nodes.iter() {
            if let NodeKind::HostTask(c) | NodeKind::Native(c) = &n.kind {
                names.insert(c.callback.clone());
            }
        }
        for (_, d) in g.dcgs.iter() {
            for alt in &d.alternatives {
                if let Alternative::HostTask(c) = alt {
                    names.insert(c.callback.clone());
                }
            }
        }
    }
    names
}

/// `passes=`: None (the default pipeline), a comma-separated string or a list of names.
fn pipeline(passes: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<&'static cmdgraph_passes::PassInfo>> {
    let Some(passes) = passes.filter(|p| !p.is_none()) else { return Ok(cmdgraph_passes::default_pipeline()) };
    let spec = match passes.extract::<String>() {
        Ok(s) => s,
        Err(_) => passes
            .extract::<Vec<String>>()
            .map_err(|_| Error::type_error("passes must be None, a str (\"a,b,c\") or a list of pass names"))?
            .join(","),
    };
    Ok(cmdgraph_passes::pipeline::parse_pipeline(&spec, cmdgraph_passes::REGISTRY)
        .map_err(|e| Error::value(format!("passes: {e}")))?)
}

#[pymethods]
impl Module {
    /// The canonical text (what `cmdgraph fmt` prints).
    fn text(&self) -> String {
        cmdgraph_ir::text::print(&self.written)
    }

    fn __str__(&self) -> String {
        self.text()
    }

    fn __repr__(&self) -> String {
        format!(
            "<cmdgraph.Module {:?}: {} kernel(s), {} memory object(s), {} graph(s)>",
            self.name,
            self.module.kernels.len(),
            self.module.memories.len(),
            self.module.graphs.len()
        )
    }

    /// The file name diagnostics show.
    #[getter]
    fn filename(&self) -> &str {
        &self.name
    }

    /// The graph names, without `@`.
    #[getter]
    fn graphs(&self) -> Vec<String> {
        self.module.graphs.iter().map(|(_, g)| g.name.clone()).collect()
    }

    /// The memory objects: a list of `(name, type, kind)` such as `("x", "f32[1024]", "usm")`.
    #[getter]
    fn memories(&self) -> Vec<(String, String, String)> {
        let kinds = self.module.memories.iter().map(|(_, m)| match m.kind {
            cmdgraph_ir::MemoryKind::DeviceGlobal(_) => "device_global",
            cmdgraph_ir::MemoryKind::Buffer => "buffer",
            _ => "usm",
        });
        arrays::layouts(&self.module).into_iter().zip(kinds).map(|(l, k)| (l.name, l.describe, k.to_string())).collect()
    }

    /// Verifies the module as `cmdgraph verify` does (external SPIR-V kernels included
    /// unless `external=False`). Raises VerifyError whose text is the CLI's diagnostics;
    /// returns the rendered warnings ('' when there are none).
    ///
    /// >>> cmdgraph.parse_file("examples/reduction.cgir").verify()
    /// ''
    #[pyo3(signature = (*, allow_races = false, external = true))]
    fn verify(&self, allow_races: bool, external: bool) -> Result<String> {
        let warnings = self.check(allow_races)?;
        if external {
            self.externals()?;
        }
        Ok(warnings)
    }

    /// Graphviz DOT of the verified module, as `cmdgraph dot` writes it (`graph`: one graph
    /// only; `verbose`: every operand; `legend=False`: no legend).
    ///
    /// >>> print(cmdgraph.parse_file("examples/reduction.cgir").dot()[:7])
    /// digraph
    #[pyo3(signature = (graph = None, *, verbose = false, legend = true))]
    fn dot(&self, graph: Option<&str>, verbose: bool, legend: bool) -> Result<String> {
        self.check(false)?;
        let graph = graph.map(|g| self.pick_graph(Some(g))).transpose()?;
        let opts = DotOptions { verbose, graph, legend, ..Default::default() };
        Ok(to_dot(&self.module, &opts))
    }

    /// SVG of the graphs for Jupyter, through Graphviz `dot -Tsvg`; None when `dot` is not
    /// installed or the module does not verify.
    fn _repr_svg_(&self, py: Python<'_>) -> Option<String> {
        let text = self.dot(None, false, true).ok()?;
        py.detach(|| svg(&text))
    }

    /// Compiles the module in process as `cmdgraph compile` does (verify, the pass pipeline,
    /// SPIR-V for every kernel variant) and returns the Bundle: the same bytes as
    /// `cmdgraph compile` with the same options. `passes`: None (the default pipeline), a
    /// list of pass names or a comma-separated string (`""`: none); `opt_level`: LLVM's 0-3.
    /// The GIL is released while it compiles. `progress`, a callable, is called with
    /// `(phase, done, total, what)` as the compile goes (`"verify"`, `"pass"` with the pass
    /// name, `"packaging"`, `"codegen"` with the kernel, `"finishing"`); `progress=True` draws
    /// a line on stderr once the compile takes a second. Ctrl-C (SIGINT)
    /// stops the compile at its next step and raises KeyboardInterrupt, as does any
    /// exception from `progress`; nothing is returned or written.
    ///
    /// >>> bundle = cmdgraph.parse_file("examples/saxpy_chain.cgir").compile(opt_level=2)
    /// >>> bundle.save("saxpy_chain.cgb")
    #[pyo3(signature = (passes = None, *, opt_level = 2, allow_races = false, progress = None))]
    fn compile(
        &self,
        py: Python<'_>,
        passes: Option<&Bound<'_, PyAny>>,
        opt_level: u8,
        allow_races: bool,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bundle> {
        if opt_level > 3 {
            return Err(Error::value(format!("opt_level must be 0 to 3, not {opt_level}")).into());
        }
        // As `cmdgraph compile`: a module that spans devices gets `split-devices` by default.
        let spans = self.module.graphs.iter().any(|(_, g)| cmdgraph_ir::placement::spans_devices(&self.module, g));
        let passes = match (pipeline(passes.filter(|p| !p.is_none()))?, spans && passes.is_none_or(|p| p.is_none())) {
            (list, true) => cmdgraph_passes::with_place_devices(list),
            (list, false) => list,
        };
        self.check(allow_races)?;
        let external = self.externals()?;
        // `progress=True`: the stderr line of `cmdgraph/_progress.py`; False: none.
        let progress = match progress {
            Some(p) if p.bind(py).is_instance_of::<pyo3::types::PyBool>() => match p.bind(py).is_truthy()? {
                true => Some(py.import("cmdgraph._progress")?.getattr("Line")?.call0()?.unbind()),
                false => None,
            },
            Some(p) if !p.bind(py).is_callable() => {
                return Err(Error::type_error("progress must be a callable, True or False").into())
            }
            other => other,
        };
        let stop: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
        let bytes = py.detach(|| -> Result<Vec<u8>> {
            let with_external = WithExternal { inner: &Llvm, external: &external };
            let compiler = Interruptible { inner: &with_external, stop: &stop };
            let options = cmdgraph_codegen::Options { opt_level };
            let mut on_progress = |p: Progress<'_>| report(&stop, progress.as_ref(), p);
            let compiled = compile_module_configured(
                &self.module,
                &passes,
                &PipelineOptions::default(),
                &options,
                &compiler,
                &mut on_progress,
            );
            let (bundle, _) = compiled.map_err(|e| match e {
                // The module verified above: these are refusals of the compiler (E05xx, a
                // construct Vulkan cannot express), rendered against the source as the CLI does.
                CompileError::Invalid(d) => Error::diagnostics(Kind::Compile, &d, &self.name, &self.source),
                e => self.located(&e),
            })?;
            bundle.to_bytes().map_err(|e| Error::new(Kind::Compile, format!("error: {e}\n")))
        });
        if let Some(e) = stop.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        Ok(Bundle::from_bytes(bytes?, &self.name)?)
    }

    /// Runs a graph on the reference interpreter, as `cmdgraph interp` does: `inputs` maps
    /// memory object names to NumPy arrays (checked as `Executable.run` checks them; the
    /// rest start zeroed), the graph runs `runs` times, and the result maps every `usm` and
    /// `buffer` memory object (or those named in `outputs`) to a new array. `fma`: `"once"`
    /// (the kernel language's) or `"twice"` (as a Vulkan device may round it). Host tasks
    /// run as no-ops unless `host_tasks` maps their callback names to Python callables, each
    /// called with a dict of the node's declared memory as NumPy arrays (docs/python.md,
    /// "Host tasks"). `params` (dynamic parameter to value) and `active` (dynamic command
    /// group to alternative) update the graph before the runs, as for `Executable.run`.
    /// The GIL is released while it runs.
    ///
    /// >>> x = np.random.rand(1024).astype(np.float32)
    /// >>> out = m.interpret({"x": x})
    #[allow(clippy::too_many_arguments)] // the keyword arguments of one Python method
    #[pyo3(signature = (inputs = None, *, graph = None, runs = 1, outputs = None, fma = "once", params = None, active = None, host_tasks = None))]
    fn interpret<'py>(
        &self,
        py: Python<'py>,
        inputs: Option<&Bound<'py, PyDict>>,
        graph: Option<&str>,
        runs: u32,
        outputs: Option<Vec<String>>,
        fma: &str,
        params: Option<&Bound<'py, PyDict>>,
        active: Option<&Bound<'py, PyDict>>,
        host_tasks: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let fma = match fma {
            "once" => FmaRounding::Once,
            "twice" => FmaRounding::Twice,
            other => return Err(Error::value(format!("fma must be \"once\" or \"twice\", not {other:?}")).into()),
        };
        self.check(false)?;
        let graph = self.pick_graph(graph)?;
        let updates = params::resolve(&self.module, &graph, params, active)?;
        let layouts = arrays::layouts(&self.module);
        let bound = arrays::inputs(py, &layouts, inputs)?;
        let wanted = arrays::outputs(&layouts, outputs)?;
        let owned = arrays::owned(&bound)?;
        let slices: Vec<(&str, &[u8])> = owned.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
        let host: Vec<(String, HostCallback)> = crate::host::given(host_tasks, &host_callbacks(&self.module))?
            .into_iter()
            .map(|(name, f)| (name, Box::new(crate::host::callback(f, &layouts)) as HostCallback))
            .collect();
        let run = Run { graph: &graph, bound: &slices, updates: &updates, runs, fma };
        let read = py.detach(|| self.run_interpreter(&run, wanted, host))?;
        arrays::to_dict(py, read)
    }
}

/// A host-task callback written in Python (`host_tasks=`).
pub type HostCallback = Box<
    dyn FnMut(&mut dyn cmdgraph_ir::host::HostMemory) -> std::result::Result<(), cmdgraph_ir::host::HostError> + Send,
>;

/// What one `interpret` call runs.
struct Run<'a> {
    graph: &'a str,
    bound: &'a [(&'a str, &'a [u8])],
    updates: &'a [Update],
    runs: u32,
    fma: FmaRounding,
}

impl Module {
    /// A fresh interpreter with the inputs bound and host callbacks (`host`, no-ops for the
    /// rest), the graph
    /// finalized, updated and run, then the `wanted` memory objects read.
    fn run_interpreter(
        &self,
        run: &Run<'_>,
        wanted: Vec<arrays::Layout>,
        host: Vec<(String, HostCallback)>,
    ) -> Result<Vec<(arrays::Layout, Vec<u8>)>> {
        let Run { graph, bound, updates, runs, fma } = *run;
        let fail = |e: cmdgraph_interp::InterpError| Error::new(Kind::Device, format!("error: @{graph}: {e}"));
        let mut interp = Interpreter::new(&self.module).map_err(fail)?;
        for (name, bytes) in bound {
            interp.bind(name, bytes).map_err(fail)?;
        }
        for name in host_callbacks(&self.module) {
            interp.register_callback(&name, |_| Ok(()));
        }
        for (name, f) in host {
            interp.register_callback(&name, f);
        }
        let exec = interp.finalize(graph).map_err(fail)?;
        for update in updates {
            match update {
                Update::Param { name, value } => interp.update_param(exec, name, value.clone()).map_err(fail)?,
                Update::Active { name, index } => interp.set_active(exec, name, *index).map_err(fail)?,
            }
        }
        let opts = RunOptions { fma, ..RunOptions::default() };
        for _ in 0..runs {
            interp.run_with(exec, &opts).map_err(fail)?;
        }
        wanted
            .into_iter()
            .map(|l| {
                let bytes = interp.read(&l.name).map_err(fail)?.to_vec();
                Ok((l, bytes))
            })
            .collect()
    }
}

/// `dot -Tsvg` of `text`, or None when Graphviz is missing or fails.
fn svg(text: &str) -> Option<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    // Written from a thread: a large graph's SVG fills the stdout pipe before dot has read
    // all of its input.
    let mut stdin = child.stdin.take()?;
    let input = text.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    out.status.success().then(|| String::from_utf8(out.stdout).ok()).flatten()
}

/// Called at each step of a compile (with the GIL released): takes the GIL, handles pending
/// signals (Ctrl-C raises KeyboardInterrupt here) and calls the `progress` callable; the
/// first exception is kept in `stop`, which [`Interruptible`] turns into the compile's end.
pub(crate) fn report(stop: &std::sync::Mutex<Option<PyErr>>, progress: Option<&Py<PyAny>>, p: Progress<'_>) {
    if stop.lock().map(|s| s.is_some()).unwrap_or(true) {
        return;
    }
    let (phase, done, total, what) = match p {
        Progress::Verify => ("verify", 0, 1, ""),
        Progress::Pass { index, total, name } => ("pass", index, total, name),
        Progress::Packaging => ("packaging", 0, 1, ""),
        Progress::Codegen { done, total, kernel } => ("codegen", done, total, kernel),
        Progress::Finishing => ("finishing", 0, 1, ""),
    };
    let outcome = Python::attach(|py| -> PyResult<()> {
        py.check_signals()?;
        if let Some(f) = progress {
            f.call1(py, (phase, done, total, what))?;
        }
        Ok(())
    });
    if let (Err(e), Ok(mut slot)) = (outcome, stop.lock()) {
        *slot = Some(e);
    }
}

/// A kernel compiler that refuses every further kernel once the compile is to stop
/// (Ctrl-C, or an exception from the progress callable), so the compile ends at its next
/// kernel rather than after all of them.
pub(crate) struct Interruptible<'a> {
    pub(crate) inner: &'a dyn KernelCompiler,
    pub(crate) stop: &'a std::sync::Mutex<Option<PyErr>>,
}

impl Interruptible<'_> {
    fn check(&self, kernel: &str) -> std::result::Result<(), cmdgraph_codegen::CodegenError> {
        if self.stop.lock().map(|s| s.is_some()).unwrap_or(true) {
            return Err(cmdgraph_codegen::CodegenError::Launch {
                kernel: kernel.to_string(),
                message: "the compile was interrupted".into(),
            });
        }
        Ok(())
    }
}

impl KernelCompiler for Interruptible<'_> {
    fn choose_variant(
        &self,
        module: &cmdgraph_ir::Module,
        kernel: cmdgraph_ir::Handle<cmdgraph_ir::Kernel>,
        launch: &cmdgraph_ir::Launch,
        args: &[cmdgraph_ir::Arg],
    ) -> std::result::Result<cmdgraph_codegen::Variant, cmdgraph_codegen::CodegenError> {
        self.check(&module.kernels[kernel].name)?;
        self.inner.choose_variant(module, kernel, launch, args)
    }

    fn compile_kernel(
        &self,
        module: &cmdgraph_ir::Module,
        kernel: cmdgraph_ir::Handle<cmdgraph_ir::Kernel>,
        variant: &cmdgraph_codegen::Variant,
        options: &cmdgraph_codegen::Options,
    ) -> std::result::Result<cmdgraph_ir::bundle::CompiledKernel, cmdgraph_codegen::CodegenError> {
        self.check(&module.kernels[kernel].name)?;
        self.inner.compile_kernel(module, kernel, variant, options)
    }
}
