//! Memory on the reference interpreter: every memory command, graph allocations (zero_init,
//! poison, pools, lifetimes), device globals, bounds and access modes.

mod interp_support;

use cmdgraph_interp::{AllocLayout, FaultKind, InterpError, PoolLayout, POISON};
use interp_support::*;

/// memset, memfill (typed patterns), memcpy (also overlapping), prefetch, memadvise, empty,
/// barrier, and a graph allocation filled and copied out.
#[test]
fn every_memory_command() {
    let mut interp = interp(
        r#"
usm @a : u32[8]
usm @b : f32[8]
usm @c : i32[4]
usm @d : u32[8]
usm @e : u32[8]
usm @out : u32[4]
usm @h : f16[4]

graph @g {
  %ms = memset @a + 4, 171, 8
  %mf = memfill @b + 4, 2.5 : f32, 3
  %mi = memfill @c, -3 : i32, 4
  %mh = memfill @h + 2, 0.5 : f16, 2
  %cp = memcpy @d + 8, @a, 16 after(%ms)
  %mv = memcpy @e + 4, @e, 12
  %pf = prefetch @a, 16 after(%cp)
  %ma = memadvise @a, 16, 1 after(%pf)
  %br = barrier
  %em = empty after(%ma, %mf, %mi, %mv, %br)
  %t = async_malloc u32[4]
  %ft = memfill %t, 7 : u32, 4 after(%t)
  %ct = memcpy @out, %t, 16 after(%ft)
  %fr = async_free %t after(%ct)
}
"#,
    );
    let e0: Vec<u32> = (1..=8).collect();
    interp.bind_as("e", &e0).unwrap();
    let exec = interp.finalize("g").unwrap();
    let stats = interp.run(exec).unwrap();
    assert_eq!(stats.order.len(), 14);

    let mut a = [0u8; 32];
    a[4..12].fill(171);
    assert_eq!(interp.read("a").unwrap(), &a[..]);
    assert_eq!(interp.read_as::<f32>("b").unwrap(), vec![0.0, 2.5, 2.5, 2.5, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(interp.read_as::<i32>("c").unwrap(), vec![-3; 4]);
    let half = cmdgraph_ir::data::half::f16::from_f32(0.5).to_bits();
    assert_eq!(interp.read_as::<u16>("h").unwrap(), vec![0, half, half, 0]);
    let mut d = [0u8; 32];
    d[8..24].copy_from_slice(&a[0..16]);
    assert_eq!(interp.read("d").unwrap(), &d[..]);
    let mut e = e0.clone();
    e.copy_within(0..3, 1); // memmove semantics
    assert_eq!(interp.read_as::<u32>("e").unwrap(), e);
    assert_eq!(interp.read_as::<u32>("out").unwrap(), vec![7; 4]);
}

const INC: &str = r#"
kernel @inc(%t: buf<u32, read_write>) {
  %i = global_id 0
  %v = load %t[%i]
  %one = const 1 : u32
  %w = add %v, %one
  store %t[%i], %w
}
usm @out : u32[4]
"#;

/// zero_init happens at finalize only: a second run sees the first run's data; a new
/// executable graph starts from zero again. Allocations without zero_init start poisoned.
#[test]
fn zero_init_only_at_finalize_and_poison() {
    let src = format!(
        "{INC}{}",
        r#"
graph @g {
  %t = async_malloc u32[4] zero_init
  %k = kernel @inc range(4) args(%t) after(%t)
  %c = memcpy @out, %t, 16 after(%k)
  %f = async_free %t after(%c)
}
graph @p {
  %t = async_malloc u32[2]
  %c = memcpy @out + 8, %t, 8 after(%t)
  %f = async_free %t after(%c)
}
graph @plain {
  %k = kernel @inc range(4) args(@out)
}
"#
    );
    let mut interp = interp(&src);
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<u32>("out").unwrap(), vec![1; 4]);
    interp.run(exec).unwrap();
    assert_eq!(interp.read_as::<u32>("out").unwrap(), vec![2; 4]);
    assert_eq!(interp.read_alloc(exec, "t").unwrap(), cmdgraph_interp::to_bytes(&[2u32; 4]));

    // A second executable of a graph with allocations while the first is alive: invalid.
    assert_eq!(interp.finalize("g"), Err(InterpError::LiveExecutable { graph: "g".into() }));
    interp.drop_exec(exec).unwrap();
    let again = interp.finalize("g").unwrap();
    interp.run(again).unwrap();
    assert_eq!(interp.read_as::<u32>("out").unwrap(), vec![1; 4]);

    // No allocations: any number of executables.
    let p1 = interp.finalize("plain").unwrap();
    let p2 = interp.finalize("plain").unwrap();
    interp.run(p1).unwrap();
    interp.run(p2).unwrap();
    assert_eq!(interp.read_as::<u32>("out").unwrap(), vec![3; 4]);

    let poisoned = interp.finalize("p").unwrap();
    interp.run(poisoned).unwrap();
    let word = u32::from_le_bytes([POISON; 4]);
    assert_eq!(interp.read_as::<u32>("out").unwrap(), vec![3, 3, word, word]);
}

/// Decision A9: an allocation without zero_init has undefined contents at the start of every
/// run, so the interpreter poisons it again each run (a memory plan may share its bytes).
#[test]
fn non_zero_init_allocation_is_poisoned_every_run() {
    let src = format!(
        "{INC}{}",
        r#"
graph @g {
  %t = async_malloc u32[4]
  %k = kernel @inc range(4) args(%t) after(%t)
  %c = memcpy @out, %t, 16 after(%k)
  %f = async_free %t after(%c)
}
"#
    );
    let word = u32::from_le_bytes([POISON; 4]);
    let mut interp = interp(&src);
    let exec = interp.finalize("g").unwrap();
    for _ in 0..3 {
        interp.run(exec).unwrap();
        // Each run increments poison once: nothing carried over from the previous run.
        assert_eq!(interp.read_as::<u32>("out").unwrap(), vec![word.wrapping_add(1); 4]);
    }
}

/// Device globals: initialised from their initialiser (rest zero), persistent across runs
/// and graphs on one device, separate per device.
#[test]
fn device_global_persists_per_device() {
    let mut interp = interp(
        r#"
device_global @counter : u32[2] = [10]
device_global @table : f32[3] = [1.5, 2.5]
usm @out : f32[3]

kernel @count(%o: buf<f32, write>) {
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %old = atomic add @counter[%zero], %one
  %tv = load @table[%i]
  store %o[%i], %tv
}

graph @g {
  %k = kernel @count range(3) args(@out)
}

graph @g1 device(1) {
  %k = kernel @count range(3) args(@out)
}

graph @g_again {
  %k = kernel @count range(3) args(@out)
}
"#,
    );
    let words = |v: &[u32]| cmdgraph_interp::to_bytes(v);
    assert_eq!(interp.read_device_global("counter", 0).unwrap(), words(&[10, 0]));
    let exec = interp.finalize("g").unwrap();
    interp.run(exec).unwrap();
    interp.run(exec).unwrap();
    assert_eq!(interp.read_device_global("counter", 0).unwrap(), words(&[16, 0]));
    assert_eq!(interp.read_as::<f32>("out").unwrap(), vec![1.5, 2.5, 0.0]);

    let other_device = interp.finalize("g1").unwrap();
    interp.run(other_device).unwrap();
    assert_eq!(interp.read_device_global("counter", 1).unwrap(), words(&[13, 0]));
    assert_eq!(interp.read_device_global("counter", 0).unwrap(), words(&[16, 0]));

    let same_device = interp.finalize("g_again").unwrap();
    interp.run(same_device).unwrap();
    assert_eq!(interp.read_device_global("counter", 0).unwrap(), words(&[19, 0]));
}

const COPY: &str = r#"
usm @x : f32[8]
usm @y : f32[8]
buffer @b : f32[8]
kernel @copy(%src: buf<f32, read>, %dst: buf<f32, write>) {
  %i = global_id 0
  %v = load %src[%i]
  store %dst[%i], %v
}
kernel @bad(%src: buf<f32, read>) {
  %i = global_id 0
  %v = load %src[%i]
  store %src[%i], %v
}
"#;

fn oob(fault: &InterpError) -> (String, Option<(String, Vec<u64>)>, FaultKind) {
    let f = fault.as_fault().unwrap_or_else(|| panic!("not a fault: {fault:?}"));
    (f.node.clone(), f.site.as_ref().map(|s| (s.op.clone(), s.work_item.clone())), f.kind.clone())
}

/// Out-of-bounds accesses are located errors: node, op, work-item, index.
#[test]
fn out_of_bounds_accesses_are_located() {
    let src = format!(
        "{COPY}{}",
        r#"
graph @oob_kernel {
  %k = kernel @copy range(9) args(@x, @y)
}
graph @oob_offset {
  %k = kernel @copy range(8) args(@x + 8, @y)
}
graph @oob_memcpy {
  %first = empty
  %c = memcpy @y + 4, @x, 32 after(%first)
}
graph @acc properties(assume_buffer_outlives_graph) {
  %k = kernel @copy range(4) args(acc(@b[2..6], read), @y)
}
graph @acc_oob properties(assume_buffer_outlives_graph) {
  %k = kernel @copy range(5) args(acc(@b[2..6], read), @y)
}
graph @mode {
  %w = kernel @bad range(8) args(@x)
}
"#
    );
    let mut interp = interp(&src);
    let bvals: Vec<f32> = (0..8).map(|i| i as f32 * 10.0).collect();
    interp.bind_as("b", &bvals).unwrap();

    let run = |interp: &mut cmdgraph_interp::Interpreter, g: &str| {
        let exec = interp.finalize(g).unwrap();
        interp.run(exec)
    };
    let err = run(&mut interp, "oob_kernel").unwrap_err();
    let memory = "@x".to_string();
    assert_eq!(
        oob(&err),
        (
            "k".into(),
            Some(("load".into(), vec![8])),
            FaultKind::IndexOutOfBounds { memory: memory.clone(), index: 8, len: 8 }
        )
    );
    let text = err.to_string();
    assert!(text.contains("%k") && text.contains("work-item (8)") && text.contains("index 8"), "{text}");

    let err = run(&mut interp, "oob_offset").unwrap_err();
    assert_eq!(
        oob(&err),
        ("k".into(), Some(("load".into(), vec![6])), FaultKind::IndexOutOfBounds { memory, index: 6, len: 6 })
    );

    let err = run(&mut interp, "oob_memcpy").unwrap_err();
    assert_eq!(
        oob(&err),
        ("c".into(), None, FaultKind::BytesOutOfBounds { memory: "@y".into(), start: 4, len: 32, size: 32 })
    );

    run(&mut interp, "acc").unwrap();
    assert_eq!(interp.read_as::<f32>("y").unwrap()[..4], bvals[2..6]);
    let err = run(&mut interp, "acc_oob").unwrap_err();
    assert_eq!(
        oob(&err),
        (
            "k".into(),
            Some(("load".into(), vec![4])),
            FaultKind::IndexOutOfBounds { memory: "@b".into(), index: 4, len: 4 }
        )
    );

    let err = run(&mut interp, "mode").unwrap_err();
    assert_eq!(
        oob(&err),
        (
            "w".into(),
            Some(("store".into(), vec![0])),
            FaultKind::AccessMode {
                memory: "@x".into(),
                attempted: "write",
                allowed: cmdgraph_ir::types::Access::Read
            }
        )
    );
}

/// Using an allocation after its free or before its malloc, and freeing twice, are located
/// errors.
#[test]
fn allocation_lifetimes_are_checked() {
    let src = format!(
        "{COPY}{}",
        r#"
graph @after_free {
  %t = async_malloc f32[8]
  %f = async_free %t after(%t)
  %k = kernel @copy range(8) args(@x, %t) after(%f)
}
graph @before_malloc {
  %t = async_malloc f32[8]
  %k = kernel @copy range(8) args(%t, @y)
  %f = async_free %t after(%k)
  edge %k -> %t
}
graph @double_free {
  %t = async_malloc f32[8]
  %f1 = async_free %t after(%t)
  %f2 = async_free %t after(%f1)
}
graph @host_after_free {
  %t = async_malloc f32[8]
  %f = async_free %t after(%t)
  %h = host_task "touch" access(%t write) after(%f)
}
graph @copy_after_free {
  %t = async_malloc f32[8]
  %f = async_free %t after(%t)
  %c = memcpy @y, %t, 4 after(%f)
}
"#
    );
    let mut interp = interp(&src);
    interp.register_callback("touch", |ctx| ctx.write("t", 0, &[1, 2, 3, 4]));
    let mut run = |g: &str| {
        let exec = interp.finalize(g).unwrap();
        interp.run(exec).unwrap_err()
    };
    let err = run("after_free");
    assert_eq!(
        oob(&err),
        (
            "k".into(),
            Some(("store".into(), vec![0])),
            FaultKind::Lifetime { memory: "%t".into(), freed_by: Some("f".into()) }
        )
    );
    assert!(err.to_string().contains("after it was freed by %f"), "{err}");
    let err = run("before_malloc");
    assert_eq!(
        oob(&err),
        ("k".into(), Some(("load".into(), vec![0])), FaultKind::Lifetime { memory: "%t".into(), freed_by: None })
    );
    let (node, _, kind) = oob(&run("double_free"));
    assert_eq!(node, "f2");
    assert!(matches!(kind, FaultKind::Other(m) if m.contains("double free")));
    let (node, _, kind) = oob(&run("host_after_free"));
    assert_eq!(node, "h");
    assert!(matches!(kind, FaultKind::Host { error: cmdgraph_interp::HostError::NotLive { .. }, .. }), "{kind:?}");
    let (node, _, kind) = oob(&run("copy_after_free"));
    assert_eq!(node, "c");
    assert_eq!(kind, FaultKind::Lifetime { memory: "%t".into(), freed_by: Some("f".into()) });
}

const POOL: &str = r#"
usm @x : f32[16]
usm @o1 : f32[16]
usm @o2 : f32[16]
kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %a
  store %y[%i], %r
}
kernel @addc(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32) {
  %i = global_id 0
  %v = load %x[%i]
  %r = add %v, %a
  store %y[%i], %r
}
// %a's lifetime ends (free) before %b's begins (malloc): they may share memory.
graph @seq {
  %a = async_malloc f32[16]
  %k1 = kernel @scale range(16) args(@x, %a, 2.0) after(%a)
  %k2 = kernel @addc range(16) args(%a, @o1, 1.0) after(%k1)
  %fa = async_free %a after(%k2)
  %b = async_malloc f32[16] after(%fa)
  %k3 = kernel @scale range(16) args(@x, %b, 3.0) after(%b)
  %k4 = kernel @addc range(16) args(%b, @o2, 1.0) after(%k3)
  %fb = async_free %b after(%k4)
}
// %a and %b are live at the same time: sharing memory is wrong.
graph @overlap {
  %a = async_malloc f32[16]
  %b = async_malloc f32[16]
  %k1 = kernel @scale range(16) args(@x, %a, 2.0) after(%a)
  %k3 = kernel @scale range(16) args(@x, %b, 3.0) after(%b, %k1)
  %k2 = kernel @addc range(16) args(%a, @o1, 1.0) after(%k3)
  %k4 = kernel @addc range(16) args(%b, @o2, 1.0) after(%k2)
  %fa = async_free %a after(%k4)
  %fb = async_free %b after(%k4)
}
"#;

/// Runs `graph` with `layout` on fresh outputs; returns (o1, o2).
fn run_pool(graph: &str, layout: Option<(u64, u64, u64)>) -> Result<(Vec<f32>, Vec<f32>), InterpError> {
    let mut interp = interp(POOL);
    let x: Vec<f32> = (0..16).map(|i| i as f32 - 4.5).collect();
    interp.bind_as("x", &x)?;
    let layout = match layout {
        None => AllocLayout::Separate,
        Some((size, a, b)) => {
            let g = interp.module().graph_by_name(graph).unwrap();
            let g = &interp.module().graphs[g];
            let mut pool = PoolLayout { size, ..Default::default() };
            pool.offsets.insert(g.node_by_name("a").unwrap(), a);
            pool.offsets.insert(g.node_by_name("b").unwrap(), b);
            AllocLayout::Pool(pool)
        }
    };
    let exec = interp.finalize_with(graph, layout)?;
    interp.run(exec)?;
    Ok((interp.read_as("o1")?, interp.read_as("o2")?))
}

/// A memory plan is checked by running it: aliasing allocations with disjoint lifetimes
/// gives the same outputs as separate storage; aliasing live ones does not.
#[test]
fn pool_layout_same_outputs_when_valid() {
    let x: Vec<f32> = (0..16).map(|i| i as f32 - 4.5).collect();
    let expected1: Vec<f32> = x.iter().map(|v| v * 2.0 + 1.0).collect();
    let expected2: Vec<f32> = x.iter().map(|v| v * 3.0 + 1.0).collect();
    assert_eq!(run_pool("seq", None).unwrap(), (expected1.clone(), expected2.clone()));
    assert_eq!(run_pool("seq", Some((64, 0, 0))).unwrap(), (expected1.clone(), expected2.clone()));
    assert_eq!(run_pool("seq", Some((256, 128, 16))).unwrap(), (expected1.clone(), expected2.clone()));
    assert_eq!(run_pool("overlap", None).unwrap(), (expected1.clone(), expected2.clone()));
    assert_eq!(run_pool("overlap", Some((128, 0, 64))).unwrap(), (expected1.clone(), expected2.clone()));
    // Aliased while both live: %b's writes clobber %a before %k2 reads it.
    assert_eq!(run_pool("overlap", Some((64, 0, 0))).unwrap(), (expected2.clone(), expected2));
}

/// Bad pool layouts are rejected at finalize.
#[test]
fn pool_layout_errors() {
    let err = run_pool("seq", Some((64, 0, 8))).unwrap_err();
    assert!(
        matches!(&err, InterpError::Invalid { node: Some(n), message, .. } if n == "b" && message.contains("outside")),
        "{err:?}"
    );
    let mut interp = interp(POOL);
    let layout = AllocLayout::Pool(PoolLayout { size: 64, ..Default::default() });
    let err = interp.finalize_with("seq", layout).unwrap_err();
    assert!(
        matches!(&err, InterpError::Invalid { node: Some(n), message, .. } if n == "a" && message.contains("no offset")),
        "{err:?}"
    );
}

/// Binding checks sizes and names.
#[test]
fn bind_and_read_errors() {
    let mut interp = interp(COPY);
    assert!(matches!(interp.bind("x", &[0; 31]), Err(InterpError::Api { .. })));
    assert!(matches!(interp.bind("nope", &[]), Err(InterpError::Api { .. })));
    assert!(matches!(interp.read("nope"), Err(InterpError::Api { .. })));
    assert!(matches!(interp.finalize("nope"), Err(InterpError::Api { .. })));
    interp.bind_as::<f32>("@x", &[1.0; 8]).unwrap();
    assert_eq!(interp.read_as::<f32>("x").unwrap(), vec![1.0; 8]);
}
