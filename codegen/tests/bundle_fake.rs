//! Packaging with a stand-in kernel compiler: the bundle writer's own work (variants chosen
//! per launch and per dynamic alternative, each compiled once, launch tables, schedule,
//! memory plan, origins, determinism) on every example, without LLVM. The stand-in returns
//! recognisable words instead of SPIR-V; real SPIR-V is tested with the real compiler.

use cmdgraph_codegen::bundle::{compile_module, CompileError, KernelCompiler};
use cmdgraph_codegen::{CodegenError, Options, Variant};
use cmdgraph_ir::bundle::{ArgLayout, Bundle, CompiledKernel, Segment};
use cmdgraph_ir::{Alternative, Arg, ArgValue, Handle, Kernel, Launch, Module, NodeKind, Span};
use cmdgraph_passes::{lookup, PassInfo, DEFAULT_PIPELINE};
use std::cell::RefCell;
use std::collections::BTreeSet;

/// Range launches get 64 (or the size, if smaller) in dimension 0; nd_range launches their
/// local size. Records every compile call.
#[derive(Default)]
struct Fake {
    compiled: RefCell<Vec<(String, Variant)>>,
    fail_on: Option<&'static str>,
}

impl KernelCompiler for Fake {
    fn choose_variant(
        &self,
        _: &Module,
        _: Handle<Kernel>,
        launch: &Launch,
        args: &[Arg],
    ) -> Result<Variant, CodegenError> {
        let mut wg = [1u32; 3];
        match launch {
            Launch::SingleTask => {}
            Launch::Range(r) => wg[0] = r.first().copied().unwrap_or(1).min(64) as u32,
            Launch::NdRange { local, .. } => {
                for (d, l) in local.iter().enumerate().take(3) {
                    wg[d] = *l as u32;
                }
            }
        }
        let local_capacity = args
            .iter()
            .filter_map(|a| match a {
                Arg::Value(ArgValue::Local { count, .. }) => Some(*count),
                _ => None,
            })
            .collect();
        Ok(Variant {
            workgroup_size: wg,
            dims: launch.dims() as u8,
            local_capacity,
            predicated: false,
            loop_tail: None,
        })
    }

    fn compile_kernel(
        &self,
        m: &Module,
        k: Handle<Kernel>,
        v: &Variant,
        _: &Options,
    ) -> Result<CompiledKernel, CodegenError> {
        let name = m.kernels[k].name.clone();
        if self.fail_on == Some(name.as_str()) {
            return Err(CodegenError::Unsupported {
                kernel: name,
                op: None,
                span: Span::UNDEFINED,
                message: "no luck".into(),
            });
        }
        self.compiled.borrow_mut().push((name.clone(), v.clone()));
        let mut spirv = vec![0x0723_0203];
        spirv.extend(name.bytes().map(u32::from));
        spirv.extend(v.workgroup_size);
        spirv.extend(v.local_capacity.iter().map(|c| *c as u32));
        Ok(CompiledKernel {
            kernel: name.clone(),
            entry: name,
            workgroup_size: v.workgroup_size,
            items_per_invocation: 1,
            spirv,
            layout: ArgLayout::default(),
        })
    }
}

fn examples() -> Vec<(String, Module)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut files: Vec<_> = std::fs::read_dir(dir).expect("examples").map(|e| e.expect("entry").path()).collect();
    files.sort();
    files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cgir"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read");
            let m = cmdgraph_ir::text::parse(&text).unwrap_or_else(|_| panic!("{} parses", p.display()));
            (p.display().to_string(), m)
        })
        .collect()
}

fn default_pipeline() -> Vec<&'static PassInfo> {
    DEFAULT_PIPELINE.iter().filter_map(|n| lookup(n)).collect()
}

#[test]
fn every_example_packages_deterministically_and_reads_back() {
    for (name, m) in examples() {
        let (a, _) = compile_module(&m, &default_pipeline(), &Options::default(), &Fake::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let (b, _) = compile_module(&m, &default_pipeline(), &Options::default(), &Fake::default()).expect("again");
        let text = a.to_bytes().expect("ron");
        assert_eq!(text, b.to_bytes().expect("ron"), "{name}: two compiles differ");
        assert_eq!(Bundle::from_bytes(&text).expect("reads back"), a, "{name}");
        assert_eq!(a.pipeline, DEFAULT_PIPELINE.join(","));
    }
}

#[test]
fn every_launch_and_alternative_has_its_variant_and_each_variant_is_compiled_once() {
    for (name, m) in examples() {
        let fake = Fake::default();
        let (bundle, report) = compile_module(&m, &default_pipeline(), &Options::default(), &fake)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let compiled = fake.compiled.borrow();
        let distinct: BTreeSet<_> = compiled.iter().collect();
        assert_eq!(distinct.len(), compiled.len(), "{name}: a variant compiled twice");
        assert_eq!(bundle.kernels.len(), compiled.len());
        assert_eq!(report.kernels.len(), compiled.len());
        let keys: Vec<_> = bundle.kernels.iter().map(|k| (k.kernel.clone(), k.workgroup_size)).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "{name}: kernels not sorted by name then size");

        let optimized = cmdgraph_ir::text::parse(&bundle.optimized).expect("optimized parses");
        for ((_, g), plan) in optimized.graphs.iter().zip(&bundle.graphs) {
            assert_eq!(g.name, plan.name);
            let mut expected = Vec::new();
            for (_, n) in g.nodes.iter() {
                match &n.kind {
                    NodeKind::Kernel(cmd) => expected.push((n.name.clone(), None, cmd.kernel)),
                    NodeKind::Dynamic { dcg } => {
                        for (i, alt) in g.dcgs[*dcg].alternatives.iter().enumerate() {
                            if let Alternative::Kernel(cmd) = alt {
                                expected.push((n.name.clone(), Some(i as u32), cmd.kernel));
                            }
                        }
                    }
                    _ => {}
                }
            }
            assert_eq!(plan.launches.len(), expected.len(), "{name} @{}", g.name);
            for (l, (node, alt, kernel)) in plan.launches.iter().zip(&expected) {
                assert_eq!((&l.node, l.alternative), (node, *alt));
                let k = &bundle.kernels[l.kernel as usize];
                assert_eq!(k.kernel, optimized.kernels[*kernel].name, "{name} %{node}: wrong kernel");
            }
            // Every scheduled name is a node of the optimized graph.
            for seg in &plan.segments {
                let names: Vec<&String> = match seg {
                    Segment::Device { stages } => stages.iter().flatten().collect(),
                    Segment::Host { node } => vec![node],
                };
                for n in names {
                    assert!(g.node_by_name(n).is_some(), "{name}: scheduled %{n} is not in @{}", g.name);
                }
            }
        }
    }
}

#[test]
fn dynamic_alternatives_get_variants_even_when_inactive() {
    let (_, m) = examples().into_iter().find(|(n, _)| n.ends_with("dynamic_update.cgir")).expect("example");
    let (bundle, _) = compile_module(&m, &default_pipeline(), &Options::default(), &Fake::default()).expect("compiles");
    let alts: Vec<_> = bundle.graphs.iter().flat_map(|g| &g.launches).filter(|l| l.alternative.is_some()).collect();
    assert!(alts.len() >= 3, "{alts:?}");
    let names: BTreeSet<_> = alts.iter().map(|l| bundle.kernels[l.kernel as usize].kernel.as_str()).collect();
    assert!(names.len() >= 3, "each alternative's kernel is compiled: {names:?}");
}

#[test]
fn memory_plan_comes_from_plan_memory_and_is_naive_without_it() {
    let (_, m) = examples().into_iter().find(|(n, _)| n.ends_with("temporaries_host_task.cgir")).expect("example");
    let (planned, _) =
        compile_module(&m, &default_pipeline(), &Options::default(), &Fake::default()).expect("compiles");
    let (naive, _) = compile_module(&m, &[], &Options::default(), &Fake::default()).expect("compiles");
    let (p, n) = (&planned.graphs[0].memory, &naive.graphs[0].memory);
    assert_eq!(n.offsets, vec![("samples".to_string(), 0), ("bins".to_string(), 262144)]);
    assert_eq!(n.size, 262144 + 1024);
    assert!(p.report.contains("memory plan @histogram_pipeline"), "{}", p.report);
    assert!(n.report.contains("naive layout"), "{}", n.report);
    assert_eq!(p.offsets.len(), 2);
    assert!(p.size <= n.size);
    assert_eq!(naive.pipeline, "");
    // The host task splits the schedule.
    assert!(planned.graphs[0].segments.iter().any(|s| matches!(s, Segment::Host { node } if node == "pick")));
}

#[test]
fn inlined_nodes_name_their_source_nodes() {
    let (_, m) = examples().into_iter().find(|(n, _)| n.ends_with("subgraph.cgir")).expect("example");
    // Inlining alone: later passes (fusion) add origins of their own, named otherwise.
    let inline = [lookup("inline-subgraphs").expect("registered")];
    let (bundle, _) = compile_module(&m, &inline, &Options::default(), &Fake::default()).expect("compiles");
    let origins: Vec<_> = bundle.graphs.iter().flat_map(|g| &g.origins).collect();
    assert!(!origins.is_empty());
    for o in origins {
        assert!(o.node.contains('.'), "{}", o.node);
        assert!(o.sources.iter().all(|(g, _)| g == "child"), "{o:?}");
    }
}

#[test]
fn kernel_errors_name_the_node_and_kernel() {
    let (_, m) = examples().into_iter().find(|(n, _)| n.ends_with("saxpy_chain.cgir")).expect("example");
    let kernel = m.kernels.iter().next().map(|(_, k)| k.name.clone()).expect("a kernel");
    let fake = Fake { fail_on: Some(Box::leak(kernel.clone().into_boxed_str())), ..Fake::default() };
    // No passes: with the default pipeline the chain is fused and the failing kernel is gone.
    match compile_module(&m, &[], &Options::default(), &fake) {
        Err(e @ CompileError::Codegen { .. }) => {
            let text = e.to_string();
            assert!(text.contains(&format!("kernel @{kernel}: no luck")), "{text}");
            assert_eq!(text.matches(&format!("@{kernel}")).count(), 1, "the kernel is named once: {text}");
            assert!(!e.is_internal(), "{text}");
            assert!(text.starts_with('@') && text.contains(" %"), "{text}");
        }
        other => panic!("expected a kernel error, got {other:?}"),
    }
}

#[test]
fn an_invalid_module_is_refused_before_any_pass() {
    let m = cmdgraph_ir::text::parse("graph @g {\n  %a = empty\n  edge %a -> %a\n}\n").expect("parses");
    assert!(matches!(
        compile_module(&m, &default_pipeline(), &Options::default(), &Fake::default()),
        Err(CompileError::Invalid(_))
    ));
}
