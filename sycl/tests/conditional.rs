//! cmdgraph's conditional-node extension of the SYCL-like API (docs/conditional.md):
//! `ext_cmdgraph_if`, `ext_cmdgraph_while` and `ext_cmdgraph_switch` add nodes whose bodies
//! are executable graphs, run on the interpreter, and by scripts/test.sh also on Vulkan from
//! bundles compiled at finalize (validation on, host reads compared with the interpreter's);
//! what they build prints and parses back; bad conditions and bodies are errors before
//! anything runs.

mod common;

use cmdgraph_sycl::*;
use common::*;

const COUNTDOWN: &str = "kernel @countdown(%c: buf<u32, read_write>) {
  %z = const 0 : u32
  %one = const 1 : u32
  %n = load %c[%z]
  %n1 = sub %n, %one
  store %c[%z], %n1
}
";

#[test]
fn while_if_and_switch_nodes_run_their_bodies_as_the_words_say() {
    let env = Env::new();
    env.ctx.register_kernels_from_text(COUNTDOWN).unwrap();
    let x = env.usm_f32(&[1.5, 2.25, 3.125, 4.0625]);
    let flags = Usm::device::<u32>(&env.ctx, 3).unwrap();
    // The loop body: x += 1, then the loop's word counts down.
    let body = env.graph(GraphProps::none());
    let inc = body.add(|h| h.parallel_for(&env.kernel("increment"), 4, args![&x]), NodeProps::none()).unwrap();
    body.add(|h| h.single_task(&env.kernel("countdown"), args![&flags]), NodeProps::depends_on(&[&inc])).unwrap();
    let body = body.finalize(FinalizeProps::none()).unwrap();
    let plus = env.graph(GraphProps::none());
    plus.add(|h| h.parallel_for(&env.kernel("increment"), 4, args![&x]), NodeProps::none()).unwrap();
    let plus = plus.finalize(FinalizeProps::none()).unwrap();
    let nothing = env.graph(GraphProps::none()).finalize(FinalizeProps::none()).unwrap();

    let g = env.graph(GraphProps::none());
    let w = g.add(|h| h.ext_cmdgraph_while(&flags.at(0), &body), NodeProps::none()).unwrap();
    let i = g.add(|h| h.ext_cmdgraph_if(&flags.at(1), &plus, Some(&nothing)), NodeProps::depends_on(&[&w])).unwrap();
    let s = g.add(|h| h.ext_cmdgraph_switch(&flags.at(2), &[&nothing, &plus]), NodeProps::depends_on(&[&i])).unwrap();
    assert_eq!([&w, &i, &s].map(Node::get_type), [NodeType::Conditional; 3]);
    let text = roundtrip(&g);
    for form in [" = while @", " = if @", " else @", " = switch @"] {
        assert!(text.contains(form), "no `{form}` in:\n{text}");
    }
    let exec = g.finalize(FinalizeProps::none()).unwrap();
    let q = env.queue(QueueProps::none());
    // 3 rounds, then the `if` adds 1 (flags[1] = 1), the `switch` adds 1 (case 1).
    for (words, adds) in [([3u32, 1, 1], 5.0f32), ([0, 0, 0], 0.0), ([1, 0, 7], 1.0)] {
        x.write(&[1.5f32, 2.25, 3.125, 4.0625]).unwrap();
        flags.write(&words).unwrap();
        q.ext_oneapi_graph(&exec, &[]).unwrap();
        q.wait().unwrap();
        let want: Vec<f32> = [1.5f32, 2.25, 3.125, 4.0625].iter().map(|v| v + adds).collect();
        assert_eq!(x.read::<f32>().unwrap(), want, "words {words:?}");
        assert_eq!(flags.read::<u32>().unwrap()[0], 0, "the loop counted its word down");
    }
}

#[test]
fn a_condition_that_is_not_a_u32_is_refused() {
    let env = Env::new();
    let x = env.usm_f32(&[0.0; 4]);
    let body = env.graph(GraphProps::none()).finalize(FinalizeProps::none()).unwrap();
    let g = env.graph(GraphProps::none());
    let err = g.add(|h| h.ext_cmdgraph_if(&x.at(0), &body, None), NodeProps::none()).expect_err("f32 word");
    assert!(err.to_string().contains("must point at a u32"), "{err}");
}

/// An updatable graph with a `while` node: a dynamic parameter gives the loop its count
/// through a kernel before it, and reaches the executable graph only when that node is
/// updated (scripts/test.sh runs this on Vulkan too, where the update re-writes the
/// kernel's argument block beside the recorded loop).
#[test]
fn a_parameter_update_changes_the_rounds_of_a_loop_after_it() {
    let env = Env::new();
    env.ctx
        .register_kernels_from_text(&format!(
            "{COUNTDOWN}
kernel @set_word(%c: buf<u32, write>, %v: u32) {{
  %z = const 0 : u32
  store %c[%z], %v
}}
"
        ))
        .unwrap();
    let x = env.usm_f32(&[1.5, 2.25, 3.125, 4.0625]);
    let flags = Usm::device::<u32>(&env.ctx, 1).unwrap();
    let body = env.graph(GraphProps::none());
    let inc = body.add(|h| h.parallel_for(&env.kernel("increment"), 4, args![&x]), NodeProps::none()).unwrap();
    body.add(|h| h.single_task(&env.kernel("countdown"), args![&flags]), NodeProps::depends_on(&[&inc])).unwrap();
    let body = body.finalize(FinalizeProps::none()).unwrap();
    let g = env.graph(GraphProps::none());
    let count = DynamicParameter::new(&g, 3u32).unwrap();
    let set = g.add(|h| h.single_task(&env.kernel("set_word"), args![&flags, &count]), NodeProps::none()).unwrap();
    g.add(|h| h.ext_cmdgraph_while(&flags.at(0), &body), NodeProps::depends_on(&[&set])).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    let q = env.queue(QueueProps::none());
    let start = [1.5f32, 2.25, 3.125, 4.0625];
    let run = |rounds: f32| {
        x.write(&start).unwrap();
        q.ext_oneapi_graph(&exec, &[]).unwrap();
        q.wait().unwrap();
        let want: Vec<f32> = start.iter().map(|v| v + rounds).collect();
        assert_eq!(x.read::<f32>().unwrap(), want, "{rounds} rounds");
        assert_eq!(flags.read::<u32>().unwrap()[0], 0);
    };
    run(3.0);
    count.update(7u32).unwrap();
    run(3.0);
    exec.update_node(&set).unwrap();
    run(7.0);
    count.update(0u32).unwrap();
    exec.update_node(&set).unwrap();
    run(0.0);
}
