//! Small user memory lives in device-local memory the host maps (`Place::Mapped`, up to
//! `MAPPED_USER_MAX` bytes): `read` and `bind` touch the mapping when nothing submitted is
//! pending, and go through a transfer ordered after the pending work otherwise. On llvmpipe
//! (validation on) every memory type is host-visible, so both paths run here: the counter
//! `Context::mapped_accesses` says which one a call took, and the values say it kept the
//! order `read` and `bind` promise ("after everything submitted so far").

mod support;

use cmdgraph_executor::{Executor, MAPPED_USER_MAX};
use support::{compile, executor};

/// `@spin` makes every work-item of a large launch loop a while (so a run is still pending
/// when the test reads), then writes `@big` and, in work-item 0, `@flag[0] = @seed[0] * 3`.
fn module(big: u64) -> cmdgraph_ir::Module {
    let text = format!(
        "kernel @spin(%seed: buf<u32, read>, %flag: buf<u32, write>, %big: buf<f32, write>, %turns: u32) {{
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %fi = cast %i to f32
  %acc = for %k = %zero to %turns step %one carry(%a = %fi) {{
    %h = const 0.5 : f32
    %q = mul %a, %h
    %b = add %q, %fi
    yield %b
  }}
  store %big[%i], %acc
  %first = eq %i, %zero
  if %first {{
    %s = load %seed[%zero]
    %three = const 3 : u32
    %v = mul %s, %three
    store %flag[%zero], %v
  }}
}}

usm @seed : u32[4]
usm @flag : u32[4]
usm @big : f32[{big}]

graph @g {{
  %k = kernel @spin range({big}) args(@seed, @flag, @big, 4000)
}}
"
    );
    cmdgraph_ir::text::parse(&text).expect("parses")
}

fn setup(big: u64) -> (Executor, cmdgraph_executor::ExecId) {
    let bundle = compile(&module(big), None).unwrap_or_else(|e| panic!("{e}"));
    let mut ex = executor(&bundle).unwrap();
    let id = ex.finalize("g").unwrap();
    (ex, id)
}

#[test]
fn small_memory_is_read_and_written_through_its_mapping_when_nothing_is_pending() {
    let (mut ex, id) = setup(1024);
    let count = |ex: &Executor| ex.context().mapped_accesses();
    let before = count(&ex);
    ex.bind_as("seed", &[5u32, 0, 0, 0]).unwrap();
    assert_eq!(count(&ex), before + 1, "a bind with nothing pending writes the mapping");
    ex.run(id).unwrap();
    ex.wait(id).unwrap();
    assert_eq!(ex.read_as::<u32>("flag").unwrap(), vec![15, 0, 0, 0]);
    assert_eq!(count(&ex), before + 2, "a read after the wait reads the mapping");
    // Byte ranges too, and the values written through the mapping reach the next run.
    ex.write_range("seed", 0, &7u32.to_le_bytes()).unwrap();
    ex.run(id).unwrap();
    ex.wait(id).unwrap();
    let mut word = [0u8; 4];
    ex.read_range_into("flag", 0, &mut word).unwrap();
    assert_eq!(u32::from_le_bytes(word), 21);
    assert_eq!(count(&ex), before + 4);
    assert!(ex.context().take_messages().is_empty());
}

#[test]
fn a_read_or_bind_while_a_run_is_pending_is_ordered_after_it_on_the_queue() {
    // 2^16 work-items of 4000 turns each: tens of milliseconds on llvmpipe.
    let (mut ex, id) = setup(1 << 16);
    ex.bind_as("seed", &[11u32, 0, 0, 0]).unwrap();
    ex.bind_as("flag", &[0u32; 4]).unwrap();
    let before = ex.context().mapped_accesses();
    ex.run(id).unwrap();
    let pending = ex.completed_runs(id).unwrap() == 0;
    // No wait: the read must still see the run's write (a read of the mapping now would
    // see 0), and the bind must come after the run read the old seed.
    let flag = ex.read_as::<u32>("flag").unwrap();
    assert_eq!(flag, vec![33, 0, 0, 0], "the read is after the run");
    ex.run(id).unwrap();
    let pending_too = ex.completed_runs(id).unwrap() < 2;
    ex.bind_as("seed", &[100u32, 0, 0, 0]).unwrap();
    ex.wait(id).unwrap();
    assert_eq!(ex.read_as::<u32>("flag").unwrap(), vec![33, 0, 0, 0], "the run read the seed before the bind");
    assert!(pending && pending_too, "the runs finished before the calls: make them longer");
    // The two calls made while runs were pending went through the queue; the read after the
    // wait read the mapping.
    assert_eq!(ex.context().mapped_accesses(), before + 1);
    assert!(ex.context().take_messages().is_empty());
}

#[test]
fn memory_past_the_mapped_size_goes_through_the_queue() {
    let big = MAPPED_USER_MAX / 4 + 64;
    let (mut ex, id) = setup(big);
    ex.bind_as("seed", &[2u32, 0, 0, 0]).unwrap();
    ex.run(id).unwrap();
    ex.wait(id).unwrap();
    let before = ex.context().mapped_accesses();
    let out = ex.read_as::<f32>("big").unwrap();
    assert_eq!(out.len() as u64, big);
    assert_eq!(ex.context().mapped_accesses(), before, "@big is larger than MAPPED_USER_MAX");
    // The values: the loop's fixed point from its start, computed the same way on the host.
    for (i, &v) in out.iter().enumerate().step_by(997) {
        let fi = i as f32;
        let want = (0..4000).fold(fi, |a, _| a * 0.5 + fi);
        assert_eq!(v, want, "@big[{i}]");
    }
    assert!(ex.context().take_messages().is_empty());
}
