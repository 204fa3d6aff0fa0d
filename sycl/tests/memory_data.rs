//! Memory and data from the host (issue 19 item 4): raw byte access to USM and buffers,
//! `f16` host elements, `bool` as the one 8-bit element, `copy` with buffer accessors
//! (accessor to accessor, accessor and device pointer, accessor and host memory), typed
//! dynamic-parameter updates, and the re-exported argument value types. Every result is
//! read back after running on the reference interpreter (the default runtime), from
//! seeded random full-precision data; every new call's error paths are checked too.

mod common;

use cmdgraph_ir::EdgeKind;
use cmdgraph_sycl::*;
use common::*;
use std::cell::RefCell;
use std::rc::Rc;

/// Kernels of these tests only (the shared ones are in `common`).
const MEM_KERNELS: &str = r#"
// x = x * s in f16
kernel @scale16(%x: buf<f16, read_write>, %s: f16) {
  %i = global_id 0
  %v = load %x[%i]
  %r = mul %v, %s
  store %x[%i], %r
}
"#;

fn env() -> Env {
    let env = Env::new();
    env.ctx.register_kernels_from_text(MEM_KERNELS).expect("memory test kernels register");
    env
}

/// xorshift64*: a small seeded generator, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A float in [-8, 8) with a full 24-bit significand (not a multiple of 1/16).
    fn f32(&mut self) -> f32 {
        let m = (self.next() >> 40) as f32 / (1u32 << 24) as f32;
        (m - 0.5) * 16.0
    }

    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }

    /// An `f16` with a full 11-bit significand, in [-8, 8).
    fn f16(&mut self) -> f16 {
        f16::from_f32(self.f32())
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 56) as u8).collect()
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn bits16(v: &[f16]) -> Vec<u16> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn run(env: &Env, exec: &ExecutableGraph) {
    env.queue(QueueProps::none()).ext_oneapi_graph(exec, &[]).unwrap().wait().unwrap();
}

/// An `invalid` error (row 0) whose message names `name`; returns the message.
#[track_caller]
fn invalid_naming<T: std::fmt::Debug>(r: Result<T>, name: &str) -> String {
    let m = expect_err(r, Errc::Invalid, 0);
    assert!(m.contains(&format!("`@{name}`")), "the message does not name `@{name}`: {m}");
    m
}

#[test]
fn usm_bytes_round_trip_and_feed_a_kernel() {
    let env = env();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let x = rng.f32s(16);
    let s = rng.f32();
    let ux = Usm::device::<f32>(&env.ctx, 16).unwrap();
    let uy = Usm::device::<f32>(&env.ctx, 16).unwrap();
    ux.write_bytes(0, &f32_bytes(&x)).unwrap();
    assert_eq!(bits(&ux.read::<f32>().unwrap()), bits(&x), "bytes are the elements' little-endian encoding");

    // A write at a byte offset inside an element touches exactly those bytes.
    let patch = rng.bytes(21);
    ux.write_bytes(13, &patch).unwrap();
    let mut expected = f32_bytes(&x);
    expected[13..34].copy_from_slice(&patch);
    assert_eq!(ux.read_bytes().unwrap(), expected);
    assert_eq!(ux.read_bytes_at(13, 21).unwrap(), patch);
    assert_eq!(ux.read_bytes_at(64, 0).unwrap(), Vec::<u8>::new(), "an empty range at the end is in bounds");

    // The kernel sees what the bytes say.
    let xs: Vec<f32> = expected.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let g = env.graph(GraphProps::none());
    g.add(|h| h.parallel_for(&env.kernel("scale"), 16u64, args![&ux, &uy, s]), NodeProps::none()).unwrap();
    run(&env, &g.finalize(FinalizeProps::none()).unwrap());
    let want: Vec<f32> = xs.iter().map(|v| v * s).collect();
    assert_eq!(bits(&uy.read::<f32>().unwrap()), bits(&want));
    assert_eq!(uy.read_bytes().unwrap(), f32_bytes(&want));
}

#[test]
fn usm_bytes_out_of_range_are_errors_that_write_nothing() {
    let env = env();
    let mut rng = Rng(7);
    let u = Usm::device::<f32>(&env.ctx, 16).unwrap();
    let before = rng.bytes(64);
    u.write_bytes(0, &before).unwrap();
    let m = invalid_naming(u.write_bytes(60, &[1, 2, 3, 4, 5]), u.name());
    assert!(m.contains("write_bytes") && m.contains("64 bytes"), "{m}");
    invalid_naming(u.write_bytes(u64::MAX, &[1]), u.name());
    invalid_naming(u.write_bytes(65, &[]), u.name());
    invalid_naming(u.read_bytes_at(0, 65), u.name());
    invalid_naming(u.read_bytes_at(u64::MAX, 2), u.name());
    invalid_naming(u.read_bytes_at(2, u64::MAX), u.name());
    assert_eq!(u.read_bytes().unwrap(), before, "a refused write leaves the memory as it was");
}

#[test]
fn buffer_bytes_round_trip_and_follow_host_access_rules() {
    let env = env();
    let mut rng = Rng(0x1234_5678);
    let data = rng.f32s(8);
    let b = Buffer::new(&env.ctx, Some("bytes_buf"), Type::F32, 8).unwrap();
    b.write_bytes(0, &f32_bytes(&data)).unwrap();
    assert_eq!(bits(&b.host_access::<f32>().unwrap()), bits(&data));
    let patch = rng.bytes(6);
    b.write_bytes(9, &patch).unwrap();
    assert_eq!(b.read_bytes_at(9, 6).unwrap(), patch);
    let all = b.read_bytes().unwrap();
    assert_eq!(&all[..9], &f32_bytes(&data)[..9]);
    assert_eq!(&all[15..], &f32_bytes(&data)[15..]);
    invalid_naming(b.write_bytes(30, &[0; 3]), "bytes_buf");
    invalid_naming(b.read_bytes_at(28, 5), "bytes_buf");

    // A kernel doubles it, through the interpreter: the bytes read back are the result.
    let g = env.graph(GraphProps::buffers());
    let q = env.queue(QueueProps::none());
    g.begin_recording(&q, RecordingProps::default()).unwrap();
    q.submit(|h| {
        let acc = h.access(&b, Access::ReadWrite);
        h.parallel_for(&env.kernel("double2d"), [1u64, 8], args![&acc]);
    })
    .unwrap();
    // Row 55: no host access while the recording that uses the buffer goes on.
    expect_err(b.write_bytes(0, &[0; 4]), Errc::Invalid, 55);
    expect_err(b.read_bytes(), Errc::Invalid, 55);
    expect_err(b.read_bytes_at(0, 4), Errc::Invalid, 55);
    g.end_recording();
    assert_eq!(b.read_bytes().unwrap(), all, "the refused write wrote nothing");
    run(&env, &g.finalize(FinalizeProps::none()).unwrap());
    let before: Vec<f32> = all.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let want: Vec<f32> = before.iter().map(|v| v * 2.0).collect();
    assert_eq!(b.read_bytes().unwrap(), f32_bytes(&want));
}

#[test]
fn f16_host_elements_in_usm_fill_and_kernel_arguments() {
    let env = env();
    let mut rng = Rng(0xfeed_beef);
    let x: Vec<f16> = (0..32).map(|_| rng.f16()).collect();
    let s = rng.f16();
    let pattern = rng.f16();
    let ux = Usm::device::<f16>(&env.ctx, 32).unwrap();
    assert_eq!(ux.elem(), Type::scalar(ScalarType::F16));
    ux.write(&x).unwrap();
    assert_eq!(bits16(&ux.read::<f16>().unwrap()), bits16(&x));
    assert_eq!(ux.read_bytes().unwrap(), x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    // The element type is checked both ways.
    invalid_naming(ux.read::<f32>(), ux.name());
    let uf = Usm::device::<f32>(&env.ctx, 4).unwrap();
    invalid_naming(uf.write(&[f16::ONE; 4]), uf.name());

    let filled = Usm::device::<f16>(&env.ctx, 32).unwrap();
    let g = env.graph(GraphProps::none());
    let k = g.add(|h| h.parallel_for(&env.kernel("scale16"), 32u64, args![&ux, s]), NodeProps::none()).unwrap();
    g.add(|h| h.fill(&filled, pattern, 32), NodeProps::depends_on(&[&k])).unwrap();
    let text = roundtrip(&g);
    assert!(text.contains(": f16"), "the f16 scalar keeps its type:\n{text}");
    run(&env, &g.finalize(FinalizeProps::none()).unwrap());
    // f16 arithmetic is done in f32 and rounded once; the product of two f16 is exact in f32.
    let want: Vec<f16> = x.iter().map(|v| f16::from_f32(v.to_f32() * s.to_f32())).collect();
    assert_eq!(bits16(&ux.read::<f16>().unwrap()), bits16(&want));
    assert_eq!(bits16(&filled.read::<f16>().unwrap()), vec![pattern.to_bits(); 32]);
}

#[test]
fn bool_is_the_one_byte_element_and_bytes_are_the_8_bit_view() {
    let env = env();
    let mut rng = Rng(99);
    let flags: Vec<bool> = (0..24).map(|_| rng.next() & 1 == 1).collect();
    let a = Usm::device::<bool>(&env.ctx, 24).unwrap();
    let b = Usm::device::<bool>(&env.ctx, 24).unwrap();
    a.write(&flags).unwrap();
    assert_eq!(a.read_bytes().unwrap(), flags.iter().map(|f| *f as u8).collect::<Vec<u8>>());
    // Any element type reads as bytes: a u32 allocation's bytes are its 8-bit view.
    let words = Usm::device::<u32>(&env.ctx, 2).unwrap();
    let w = [rng.next() as u32, rng.next() as u32];
    words.write(&w).unwrap();
    assert_eq!(words.read_bytes().unwrap(), w.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());

    let g = env.graph(GraphProps::none());
    g.add(|h| h.memcpy(b.at(4), a.at(0), 16), NodeProps::none()).unwrap();
    run(&env, &g.finalize(FinalizeProps::none()).unwrap());
    let mut want = vec![false; 24];
    want[4..20].copy_from_slice(&flags[..16]);
    assert_eq!(b.read::<bool>().unwrap(), want);
    assert_eq!(b.read_bytes_at(4, 16).unwrap(), flags[..16].iter().map(|f| *f as u8).collect::<Vec<u8>>());
}

#[test]
fn copy_between_accessors_in_an_explicit_graph() {
    let env = env();
    let mut rng = Rng(0xabcd);
    let a0 = rng.f32s(16);
    let b0 = rng.f32s(16);
    let a = Buffer::new(&env.ctx, Some("src"), Type::F32, 16).unwrap();
    let b = Buffer::new(&env.ctx, Some("dst"), Type::F32, 16).unwrap();
    a.write_bytes(0, &f32_bytes(&a0)).unwrap();
    b.write_bytes(0, &f32_bytes(&b0)).unwrap();

    let g = env.graph(GraphProps::buffers());
    let inc = g
        .add(
            |h| {
                let acc = h.access(&a, Access::ReadWrite);
                h.parallel_for(&env.kernel("increment"), 16u64, args![&acc]);
            },
            NodeProps::none(),
        )
        .unwrap();
    let cp = g
        .add(
            |h| {
                let src = h.access_range(&a, Access::Read, 4, 12);
                let dst = h.access_range(&b, Access::Write, 2, 12);
                h.copy(&src, &dst);
            },
            NodeProps::none(),
        )
        .unwrap();
    assert_eq!(cp.get_type(), NodeType::Memcpy);
    assert_eq!(edges(&g), vec![edge(&inc, &cp, EdgeKind::Accessor)], "the copy reads what the kernel wrote");
    let text = roundtrip(&g);
    assert!(text.contains("memcpy @dst + 8, @src + 16, 32"), "{text}");
    run(&env, &g.finalize(FinalizeProps::none()).unwrap());

    let a1: Vec<f32> = a0.iter().map(|v| v + 1.0).collect();
    let mut want = b0.clone();
    want[2..10].copy_from_slice(&a1[4..12]);
    assert_eq!(bits(&b.host_access::<f32>().unwrap()), bits(&want));
    assert_eq!(bits(&a.host_access::<f32>().unwrap()), bits(&a1));
}

#[test]
fn copy_between_accessor_and_usm_recorded_and_eager() {
    let env = env();
    let mut rng = Rng(0x5eed);
    let u0 = rng.f32s(12);
    let usm = env.usm_f32(&u0);
    let out = Usm::device::<f32>(&env.ctx, 8).unwrap();
    let b = Buffer::new(&env.ctx, Some("staged"), Type::F32, 10).unwrap();
    let b0 = rng.f32s(10);
    b.write_bytes(0, &f32_bytes(&b0)).unwrap();

    // Recorded: USM -> buffer[1..7], then buffer[0..8] -> USM (an accessor edge joins them).
    let g = env.graph(GraphProps::buffers());
    let q = env.queue(QueueProps::none());
    g.begin_recording(&q, RecordingProps::default()).unwrap();
    let e1 = q
        .submit(|h| {
            let dst = h.access_range(&b, Access::Write, 1, 7);
            h.copy_from_ptr(usm.at(3), &dst);
        })
        .unwrap();
    let e2 = q.submit(|h| h.copy_to_ptr(&b.placeholder_range(Access::Read, 0, 8), &out)).unwrap();
    g.end_recording();
    let nodes = g.get_nodes();
    assert_eq!(nodes.len(), 2);
    assert!(e1.is_recorded() && e2.is_recorded());
    assert_eq!(edges(&g), vec![edge(&nodes[0], &nodes[1], EdgeKind::Accessor)]);
    roundtrip(&g);
    run(&env, &g.finalize(FinalizeProps::none()).unwrap());
    let mut staged = b0.clone();
    staged[1..7].copy_from_slice(&u0[3..9]);
    assert_eq!(bits(&b.host_access::<f32>().unwrap()), bits(&staged));
    assert_eq!(bits(&out.read::<f32>().unwrap()), bits(&staged[..8]));

    // Eager, on an executing queue: the same two copies run at once.
    let q2 = env.queue(QueueProps::in_order());
    let fresh = rng.f32s(12);
    usm.write(&fresh).unwrap();
    q2.submit(|h| h.copy_from_ptr(&usm, &b.placeholder_range(Access::NoInit, 0, 10))).unwrap();
    assert_eq!(bits(&b.host_access::<f32>().unwrap()), bits(&fresh[..10]));
    q2.submit(|h| h.copy_to_ptr(&b.placeholder_range(Access::Read, 2, 10), &out)).unwrap();
    assert_eq!(bits(&out.read::<f32>().unwrap()), bits(&fresh[2..10]));
    // And between two buffers.
    let c = Buffer::new(&env.ctx, Some("copy_c"), Type::F32, 10).unwrap();
    q2.submit(|h| h.copy(&b.placeholder(Access::Read), &c.placeholder(Access::Write))).unwrap();
    assert_eq!(bits(&c.host_access::<f32>().unwrap()), bits(&fresh[..10]));
}

#[test]
fn host_copies_run_on_an_executing_queue_and_are_refused_in_graphs() {
    let env = env();
    let mut rng = Rng(0x0ddba11);
    let b = Buffer::new(&env.ctx, Some("hostcopy"), Type::F32, 12).unwrap();
    let b0 = rng.f32s(12);
    b.write_bytes(0, &f32_bytes(&b0)).unwrap();
    let data = rng.f32s(5);
    let q = env.queue(QueueProps::none());
    q.submit(|h| {
        let acc = h.access_range(&b, Access::Write, 6, 11);
        h.copy_from_host(&data, &acc);
    })
    .unwrap();
    let mut want = b0.clone();
    want[6..11].copy_from_slice(&data);
    assert_eq!(bits(&b.host_access::<f32>().unwrap()), bits(&want));

    let back = Rc::new(RefCell::new(vec![0.0f32; 3]));
    q.submit(|h| h.copy_to_host(&b.placeholder_range(Access::Read, 4, 10), &back)).unwrap();
    assert_eq!(bits(&back.borrow()), bits(&want[4..10]), "the destination is replaced by the range");

    // Errors on the executing queue: wrong length, wrong element type, wrong mode.
    let m = invalid_naming(q.submit(|h| h.copy_from_host(&data[..4], &b.placeholder(Access::Write))), "hostcopy");
    assert!(m.contains("4 elements") && m.contains("12"), "{m}");
    invalid_naming(q.submit(|h| h.copy_from_host(&[1u32; 12], &b.placeholder(Access::Write))), "hostcopy");
    let m = invalid_naming(q.submit(|h| h.copy_from_host(&b0, &b.placeholder(Access::Read))), "hostcopy");
    assert!(m.contains("read-only"), "{m}");
    let ints = Rc::new(RefCell::new(Vec::<i32>::new()));
    invalid_naming(q.submit(|h| h.copy_to_host(&b.placeholder(Access::Read), &ints)), "hostcopy");
    invalid_naming(q.submit(|h| h.copy_to_host(&b.placeholder(Access::Write), &back)), "hostcopy");
    assert_eq!(bits(&b.host_access::<f32>().unwrap()), bits(&want), "refused copies wrote nothing");
    assert_eq!(bits(&back.borrow()), bits(&want[4..10]));

    // In a graph, explicit or recorded: the IR's memcpy has no host operand.
    let g = env.graph(GraphProps::buffers());
    let m = expect_err(
        g.add(|h| h.copy_from_host(&data, &b.placeholder_range(Access::Write, 0, 5)), NodeProps::none()),
        Errc::FeatureNotSupported,
        0,
    );
    assert!(m.contains("`@hostcopy`") && m.contains("copy_from_ptr"), "{m}");
    let rq = env.queue(QueueProps::none());
    g.begin_recording(&rq, RecordingProps::default()).unwrap();
    let m =
        expect_err(rq.submit(|h| h.copy_to_host(&b.placeholder(Access::Read), &back)), Errc::FeatureNotSupported, 0);
    assert!(m.contains("copy_to_ptr"), "{m}");
    g.end_recording();
    assert!(g.get_nodes().is_empty());
    assert_eq!(bits(&back.borrow()), bits(&want[4..10]));
}

#[test]
fn copy_errors_name_the_buffer_and_add_no_node() {
    let env = env();
    let mut rng = Rng(31337);
    let a = Buffer::new(&env.ctx, Some("ca"), Type::F32, 8).unwrap();
    let b = Buffer::new(&env.ctx, Some("cb"), Type::F32, 8).unwrap();
    let ints = Buffer::new(&env.ctx, Some("ci"), Type::scalar(ScalarType::I32), 8).unwrap();
    a.write_bytes(0, &f32_bytes(&rng.f32s(8))).unwrap();
    let g = env.graph(GraphProps::buffers());
    let add = |f: Box<dyn FnOnce(&mut Handler)>| g.add(f, NodeProps::none());

    let m = invalid_naming(add(Box::new(|h| h.copy(&a.placeholder(Access::Read), &b.placeholder(Access::Read)))), "cb");
    assert!(m.contains("read-only"), "{m}");
    let m =
        invalid_naming(add(Box::new(|h| h.copy(&a.placeholder(Access::Write), &b.placeholder(Access::Write)))), "ca");
    assert!(m.contains("cannot be read"), "{m}");
    invalid_naming(add(Box::new(|h| h.copy(&a.placeholder(Access::Read), &ints.placeholder(Access::Write)))), "ci");
    let m = invalid_naming(
        add(Box::new(|h| h.copy(&a.placeholder(Access::Read), &b.placeholder_range(Access::Write, 0, 4)))),
        "cb",
    );
    assert!(m.contains("fewer"), "{m}");
    invalid_naming(
        add(Box::new(|h| h.copy(&a.placeholder_range(Access::Read, 4, 40), &b.placeholder(Access::Write)))),
        "ca",
    );
    invalid_naming(
        add(Box::new(|h| h.copy(&a.placeholder_range(Access::Read, 5, 5), &b.placeholder(Access::Write)))),
        "ca",
    );
    expect_err(
        add(Box::new(|h| h.copy(&a.placeholder_range(Access::Read, 0, 4), &a.placeholder_range(Access::Write, 2, 6)))),
        Errc::Invalid,
        0,
    );
    // Device pointers: element type and room are checked.
    let small = Usm::device::<f32>(&env.ctx, 4).unwrap();
    let wrong = Usm::device::<u32>(&env.ctx, 8).unwrap();
    expect_err(add(Box::new(|h| h.copy_to_ptr(&a.placeholder(Access::Read), &small))), Errc::Invalid, 0);
    expect_err(add(Box::new(|h| h.copy_from_ptr(&small, &b.placeholder(Access::Write)))), Errc::Invalid, 0);
    let m = expect_err(add(Box::new(|h| h.copy_to_ptr(&a.placeholder(Access::Read), &wrong))), Errc::Invalid, 0);
    assert!(m.contains("u32") && m.contains("f32"), "{m}");
    // A required accessor the copy does not use.
    invalid_naming(
        add(Box::new(|h| {
            h.access(&ints, Access::Read);
            h.copy(&a.placeholder(Access::Read), &b.placeholder(Access::Write));
        })),
        "ci",
    );
    // Buffer rules of graphs: assume_buffer_outlives_graph (row 6), write-back (row 54).
    let plain = env.graph(GraphProps::none());
    expect_err(
        plain.add(|h| h.copy(&a.placeholder(Access::Read), &b.placeholder(Access::Write)), NodeProps::none()),
        Errc::Invalid,
        6,
    );
    let host = Buffer::from_host(&env.ctx, Some("wb"), &rng.f32s(8)).unwrap();
    expect_err(
        add(Box::new(|h| h.copy(&a.placeholder(Access::Read), &host.placeholder(Access::Write)))),
        Errc::Invalid,
        54,
    );
    // Not a dynamic command group alternative (row 13).
    let cgf = {
        let (a, b) = (a.clone(), b.clone());
        CommandGroup::new(move |h| h.copy(&a.placeholder(Access::Read), &b.placeholder(Access::Write)))
    };
    expect_err(DynamicCommandGroup::new(&g, vec![cgf]), Errc::Invalid, 13);
    assert!(g.get_nodes().is_empty(), "no refused copy added a node");
    // Eager errors are the same errors.
    let q = env.queue(QueueProps::none());
    invalid_naming(q.submit(|h| h.copy(&a.placeholder(Access::Read), &b.placeholder(Access::Read))), "cb");
}

#[test]
fn typed_parameter_update_and_read() {
    let env = env();
    let mut rng = Rng(0xc0ffee);
    let x = rng.f32s(8);
    let (s0, s1) = (rng.f32(), rng.f32());
    let ux = env.usm_f32(&x);
    let uy = Usm::device::<f32>(&env.ctx, 8).unwrap();
    let g = env.graph(GraphProps::none());
    let p = DynamicParameter::new(&g, s0).unwrap();
    let ptr = DynamicParameter::new(&g, &ux).unwrap();
    let n = g.add(|h| h.parallel_for(&env.kernel("scale"), 8u64, args![&ptr, &uy, &p]), NodeProps::none()).unwrap();
    let exec = g.finalize(FinalizeProps::updatable()).unwrap();
    assert_eq!(p.value_as::<f32>().unwrap().to_bits(), s0.to_bits());

    p.update_as::<f32>(s1).unwrap();
    assert_eq!(p.value_as::<f32>().unwrap().to_bits(), s1.to_bits());
    assert!(matches!(p.value().unwrap(), KArg::Scalar(l) if l == s1.literal()));
    exec.update_node(&n).unwrap();
    run(&env, &exec);
    let want: Vec<f32> = x.iter().map(|v| v * s1).collect();
    assert_eq!(bits(&uy.read::<f32>().unwrap()), bits(&want));

    // Another type is refused, naming the parameter and both types; the value stays.
    let m = expect_err(p.update_as::<i32>(3), Errc::Invalid, 0);
    assert!(m.contains(&format!("%{}", p.name())) && m.contains("i32") && m.contains("f32"), "{m}");
    expect_err(p.update_as::<f16>(f16::ONE), Errc::Invalid, 0);
    expect_err(p.value_as::<u32>(), Errc::Invalid, 0);
    let m = expect_err(ptr.update_as::<f32>(1.5), Errc::Invalid, 0);
    assert!(m.contains("a pointer"), "{m}");
    expect_err(ptr.value_as::<f32>(), Errc::Invalid, 0);
    assert_eq!(p.value_as::<f32>().unwrap().to_bits(), s1.to_bits());
    exec.update_node(&n).unwrap();
    run(&env, &exec);
    assert_eq!(bits(&uy.read::<f32>().unwrap()), bits(&want), "refused updates changed nothing");

    // f16 parameters take f16.
    let h0: Vec<f16> = (0..8).map(|_| rng.f16()).collect();
    let (t0, t1) = (rng.f16(), rng.f16());
    let uh = Usm::device::<f16>(&env.ctx, 8).unwrap();
    uh.write(&h0).unwrap();
    let g16 = env.graph(GraphProps::none());
    let p16 = DynamicParameter::new(&g16, t0).unwrap();
    g16.add(|h| h.parallel_for(&env.kernel("scale16"), 8u64, args![&uh, &p16]), NodeProps::none()).unwrap();
    p16.update_as::<f16>(t1).unwrap();
    expect_err(p16.update_as::<f32>(t1.to_f32()), Errc::Invalid, 0);
    assert_eq!(p16.value_as::<f16>().unwrap().to_bits(), t1.to_bits());
    run(&env, &g16.finalize(FinalizeProps::none()).unwrap());
    let want16: Vec<f16> = h0.iter().map(|v| f16::from_f32(v.to_f32() * t1.to_f32())).collect();
    assert_eq!(bits16(&uh.read::<f16>().unwrap()), bits16(&want16));
}

#[test]
fn argument_value_types_are_re_exported() {
    let env = env();
    let mut rng = Rng(4242);
    let (v, h, i) = (rng.f32(), rng.f16(), rng.next() as i64);
    // Everything below is named through cmdgraph_sycl alone.
    let lit: cmdgraph_sycl::Literal = v.literal();
    assert_eq!(lit, Literal { value: LitValue::Float(v as f64), ty: Some(ScalarType::F32) });
    assert_eq!(f32::from_literal(&lit).map(f32::to_bits), Some(v.to_bits()));
    assert_eq!(f16::from_literal(&h.literal()).map(f16::to_bits), Some(h.to_bits()));
    assert_eq!(i64::from_literal(&i.literal()), Some(i));
    assert_eq!(u32::from_literal(&(-1i32).literal()), None, "another type's literal is not a value");
    assert_eq!(u32::from_literal(&Literal { value: LitValue::Int(-1), ty: Some(ScalarType::U32) }), None);
    assert_eq!(bool::from_literal(&true.literal()), Some(true));
    let usm = Usm::device::<f32>(&env.ctx, 4).unwrap();
    let b = Buffer::new(&env.ctx, None, Type::F32, 4).unwrap();
    let values: Vec<cmdgraph_sycl::ArgValue> = vec![
        ArgValue::Scalar(lit),
        ArgValue::Pointer(Pointer { base: MemRef::Memory(usm.handle()), offset: 4 }),
        ArgValue::Accessor(ArgAccessor { buffer: MemRef::Memory(b.handle()), mode: Access::Read, range: Some((1, 3)) }),
    ];
    assert!(matches!(values[0], ArgValue::Scalar(l) if l.ty == Some(ScalarType::F32)));
    // The `half` crate itself is there too.
    assert_eq!(cmdgraph_sycl::half::f16::from_f32(h.to_f32()).to_bits(), h.to_bits());
}
