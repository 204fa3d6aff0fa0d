//! Round trip of the text format: a hand-written module holding every construct of
//! docs/ir.md, a property test over generated modules, and parsing hostile input.
//!
//! The properties: `print(parse(print(m))) == print(m)` and `parse(print(m)) == m` for
//! every module the generator builds; `print(parse(t)) == t` for canonical text `t`; and
//! `parse` never panics.

mod gen;

use cmdgraph_ir::graph::{Alternative, Arg, EdgeKind, Launch, NodeKind};
use cmdgraph_ir::kernel::{KernelBody, OpKind, Region};
use cmdgraph_ir::module::{MemoryKind, UsmKind};
use cmdgraph_ir::text::{parse, print};
use cmdgraph_ir::{diag, Module};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// Every construct of docs/ir.md, in canonical form.
const EVERYTHING: &str = r##"// A module that uses every construct of docs/ir.md, in canonical form.
//   (indented text after the marker is kept as written)
kernel @saxpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xi = load %x[%i] // trailing comment on an op
  %yi = load %y[%i]
  %r = fma %a, %xi, %yi
  store %y[%i], %r
} // trailing comment on a kernel

// a function with two results, and one without
func @minmax(%a: f32, %b: f32) -> f32, f32 {
  %lo = min %a, %b
  %hi = max %a, %b
  return %lo, %hi
}

func @put(%out: buf<f32, write>, %tile: local<f32>, %i: u32, %v: f32) {
  store %tile[%i], %v
  group_barrier
  %w = load %tile[%i]
  store %out[%i], %w
}

kernel @calls(%x: buf<f32, read_write>, %tile: local<f32>) {
  %i = local_id 0
  %a = load %x[%i]
  %lo, %hi = call @minmax(%a, %a)
  %bits = bitcast %hi to u32
  %count = len %x
  call @put(%x, %tile, %i, %hi)
}

kernel @ops(%in: buf<f32, read>, %out: buf<f32, write>, %cnt: buf<u32, read_write>, %big: buf<i64, read_write>, %fa: buf<f32, read_write>, %tile: local<f32>, %n: u32, %v4: vec4<f32>, %h: f16, %z: buf<f32, no_init>) {
  // builtins
  %gi = global_id 0
  %li = local_id 1
  %gr = group_id 2
  %gs = global_range 0
  %ls = local_range 1
  %ng = group_range 2
  // constants
  %c0 = const 0 : u32
  %c1 = const 1 : u32
  %f = const 2.5 : f32
  %fneg = const -0.0 : f32
  %finf = const inf : f32
  %fninf = const -inf : f32
  %fnan = const nan : f32
  %ftiny = const 1e-7 : f32
  %fhuge = const 1e300 : f32
  %fint = const 3 : f32
  %hc = const 0.5 : f16
  %b = const true : bool
  %bf = const false : bool
  %imin = const -9223372036854775808 : i64
  %umax = const 18446744073709551615 : u64
  %i32 = const -17 : i32
  %vc = const 1.0 : vec4<f32>
  %v2 = const 0 : vec2<i32>
  %v3 = const 1 : vec3<u32>
  // unary
  %u0 = neg %f
  %u1 = not %c1
  %u2 = abs %f
  %u3 = sqrt %f
  %u4 = rsqrt %f
  %u5 = exp %f
  %u6 = log %f
  %u7 = sin %f
  %u8 = cos %f
  %u9 = tanh %f
  %u10 = floor %f
  %u11 = ceil %h
  // binary
  %b0 = add %gi, %c1
  %b1 = sub %gi, %c1
  %b2 = mul %gi, %c1
  %b3 = div %gi, %c1
  %b4 = rem %gi, %c1
  %b5 = min %f, %u2
  %b6 = max %f, %u2
  %b7 = pow %f, %u2
  %b8 = and %c0, %c1
  %b9 = or %c0, %c1
  %b10 = xor %b, %bf
  %b11 = shl %c1, %c1
  %b12 = shr %i32, %i32
  %fm = fma %f, %f, %f
  // comparisons
  %q0 = eq %gi, %c0
  %q1 = ne %gi, %c0
  %q2 = lt %gi, %n
  %q3 = le %f, %u2
  %q4 = gt %f, %u2
  %q5 = ge %v4, %vc
  %sel = select %q2, %f, %u2
  %cv = cast %gi to f32
  %cw = cast %v4 to vec4<i32>
  %sp = splat %f : vec4<f32>
  %ex = extract %v4, 3
  %ins = insert %sp, 0, %f
  %vv2 = vec %f, %f
  %vv3 = vec %f, %f, %f
  %vv4 = vec %f, %f, %f, %u2
  // memory
  %t = local f32[256]
  %ld = load %in[%gi]
  %lt = load %tile[%li]
  %lo = load %t[%li]
  %lg = load @counter[%c0]
  %lh = load @table[%c0]
  store %out[%gi], %ld
  store %t[%li], %lt
  store %z[%gi], %f
  store @counter[%c0], %c1
  group_barrier
  // atomics
  %a0 = atomic add %cnt[%c0], %c1
  %a1 = atomic sub %cnt[%c0], %c1
  %a2 = atomic min %cnt[%c0], %c1
  %a3 = atomic max %cnt[%c0], %c1
  %a4 = atomic and %cnt[%c0], %c1
  %a5 = atomic or %cnt[%c0], %c1
  %a6 = atomic xor %cnt[%c0], %c1
  %a7 = atomic xchg %big[%c0], %imin
  %a8 = atomic cmpxchg %cnt[%c0], %c0, %c1
  %a9 = atomic add %fa[%c0], %f
  atomic add @counter[%c0], %c1
  // structured control flow
  %sum, %prod = for %k = %c0 to %n step %c1 carry(%acc = %f, %pacc = %f) {
    %x = load %in[%k]
    %pos = gt %x, %acc
    %m = if %pos -> f32 {
      yield %x
    } else {
      %negx = neg %x
      yield %negx // trailing comment on yield
      // closing comment of an else region
    }
    %nacc = add %acc, %m
    %np = mul %pacc, %m
    yield %nacc, %np
  } // trailing comment on a for
  for %j = %c0 to %n step %c1 {
    store %out[%j], %sum
    // closing comment of a for region
  }
  if %b {
    store %out[%gi], %prod
  }
  if %bf {
    store %out[%gi], %f
  } else {
    group_barrier
  }
  %pair, %other = if %q2 -> f32, u32 {
    yield %f, %c0
  } else {
    yield %u2, %c1
  }
  %left, %steps = loop carry(%lv = %n, %ls2 = %c0) {
    %lhalf = shr %lv, %c1
    %ls3 = add %ls2, %c1
    %lmore = gt %lhalf, %c0
    yield %lmore, %lhalf, %ls3 // trailing comment on a loop yield
  } // trailing comment on a loop
  loop {
    store %out[%steps], %f
    yield %bf
    // closing comment of a loop region
  }
  // closing comment of a kernel body
}

kernel @ext(%x: buf<f32, read>, %y: buf<f32, write>) spirv "kernels/ext \"v2\"\n\t\u{1}é.spv" entry "main"

kernel @nothing() {
}

usm @x : f32[1024] // trailing comment on memory
usm @y : f32[1024] shared
// leading comment on memory
usm @staging : f32[1024] host
buffer @img : vec4<f32>[65536]
device_global @counter : u32[1] = [0] properties(device_image_scope, host_access(none))
device_global @table : f32[4] = [1.5, -2.0, inf, nan] properties(device_image_scope, implement_in_csr, host_access(read_write), init_mode(reset))
device_global @flags : bool[2] = [true, false] properties(host_access(read), init_mode(reprogram))
device_global @plain : i64[8] = [-1, 16, 3]
device_global @w : u32[1] properties(host_access(write))

// leading comment on a graph
graph @main device(1) context(2) properties(no_cycle_check, assume_buffer_outlives_graph, updatable, enable_profiling) {
  queue @q0 in_order
  queue @q1 discard_events
  queue @q2 in_order discard_events // trailing comment on a queue
  // leading comment on a queue
  queue @q3
  dyn %alpha = 2.0 : f32
  dyn %n = 7 : u32
  dyn %src = @x
  dyn %off = @x + 64
  dyn %acc = acc(@img, read)
  dyn %acc2 = acc(@img[16..32], read_write) // trailing comment on a dyn
  // leading comment on a dyn
  dyn %raw = x"0000803f"
  dyn %wg = local f32[256]
  dyn %flag = true : bool
  dyn %big = -170141183460469231731687303715884105728 : i64
  %t = async_malloc f32[4096] zero_init
  %t2 = async_malloc vec2<f32>[16]
  %t3 = async_malloc u32[8] host
  %t4 = async_malloc u32[8] shared zero_init
  dyn %tp = %t + 16
  %k0 = kernel @saxpy range(1024) args(@x, @y, 2.0)
  %k1 = kernel @saxpy range(1024, 2) args(%src, %t, %alpha) after(%k0, %t)
  %k2 = kernel @ops nd_range(global(1024, 1024), local(16, 16)) args(acc(@img[0..512], read), %t + 64, %acc, %raw, local f32[256], 7 : u32, x"", -3, true : bool, %wg)
  %k3 = kernel @ops nd_range(global(64, 64, 4), local(8, 8, 1), offset(0, 0, 1)) args(%t2, 1e-7, nan : f32, -inf, 0 : u64)
  %k4 = kernel @ext single_task args()
  // leading comment on a node
  %c = memcpy @y + 64, @x, 4096 on @q0 after(%k1 via in_order) // trailing comment on a node
  %c2 = memcpy %t, @x + 8, 128
  %s = memset %t, 255, 4096 after(%t)
  %fl = memfill @x, 1.5 : f32, 1024
  %fl2 = memfill %t2, -7 : i32, 3
  %p = prefetch @x, 4096
  %a = memadvise @x, 4096, -2
  %snd = send @x + 64, 256 to(1) tag(7)
  %rcv = recv %t, 256 from(2) tag(4294967295) after(%snd)
  %red = allreduce max @x, 4096 after(%rcv)
  %b = barrier wait(%k0, %c) on @q0 after(%k0 via barrier, %c via barrier)
  %b2 = barrier on @q1
  %h = host_task "log \"stats\"\n\tdone" access(@x read, %t write, @img read_write, @y no_init) after(%k2 via accessor)
  %h2 = host_task "plain"
  %nat = native "cublas_gemm" access(@x read) after(%h via event)
  %nat2 = native "noop"
  %sg = subgraph @inner after(%nat via transitive)
  %ft = async_free %t after(%k2, %s)
  %e = empty after(%a via all_leaves, %b via all_leaves)
  // leading comment on a dcg
  dcg %act active(1) {
    kernel @saxpy range(4096) args(@x, @y, %alpha)
    kernel @saxpy nd_range(global(4096), local(64)) args(@y, @x, 3.0 : f32)
  } // trailing comment on a dcg
  dcg %ht active(0) {
    host_task "cb1" access(@x read)
    host_task "cb2"
  }
  dcg %odd active(0) {
    memcpy @x, @y, 16
    empty
    dynamic %act
  }
  %dn = dynamic %act after(%e)
  %dn2 = dynamic %act
  %dh = dynamic %ht on @q3 after(%dn, %dn2 via event)
  edge %e -> %sg
  // leading comment on an edge
  edge %k4 -> %dn2 // trailing comment on an edge
  edge %k4 -> %dn2
  // closing comment of a graph
} // trailing comment on a graph

graph @inner {
  %x = empty
}

graph @empty {
}

// trailing comment of the module
//
"##;

fn parse_ok(src: &str) -> Module {
    parse(src).unwrap_or_else(|e| panic!("{}", diag::render_all(&e, "input.cgir", src)))
}

#[test]
fn the_canonical_module_prints_back_byte_for_byte() {
    let m = parse_ok(EVERYTHING);
    let printed = print(&m);
    if printed != EVERYTHING {
        let line = printed.lines().zip(EVERYTHING.lines()).position(|(a, b)| a != b);
        panic!("first differing line: {line:?}\n{printed}");
    }
    let again = parse_ok(&printed);
    assert_eq!(again, m);
    assert_eq!(print(&again), printed);
}

/// The names of the variants in `debug` renderings, e.g. "Memcpy" from "Memcpy { .. }".
fn variant(debug: String) -> String {
    debug.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("").to_string()
}

fn ops_in<'a>(body: &'a cmdgraph_ir::kernel::Body, region: &Region, out: &mut Vec<&'a OpKind>) {
    for &op in &region.ops {
        let kind = &body.ops[op].kind;
        out.push(kind);
        match kind {
            OpKind::For { body: r, .. } | OpKind::Loop { body: r, .. } => ops_in(body, r, out),
            OpKind::If { then_region, else_region, .. } => {
                ops_in(body, then_region, out);
                if let Some(e) = else_region {
                    ops_in(body, e, out);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn the_canonical_module_uses_every_construct() {
    let m = parse_ok(EVERYTHING);
    // Commands, in nodes and in dynamic command group alternatives.
    let mut commands = BTreeSet::new();
    let mut edges = BTreeSet::new();
    let mut args = BTreeSet::new();
    let mut launches = BTreeSet::new();
    for (_, g) in m.graphs.iter() {
        let mut kinds: Vec<&NodeKind> = g.nodes.iter().map(|(_, n)| &n.kind).collect();
        for (_, d) in g.dcgs.iter() {
            for alt in &d.alternatives {
                match alt {
                    Alternative::Kernel(_) => {
                        commands.insert("alt:Kernel".to_string());
                    }
                    Alternative::HostTask(_) => {
                        commands.insert("alt:HostTask".to_string());
                    }
                    Alternative::Other(k) => {
                        commands.insert("alt:Other".to_string());
                        kinds.push(k);
                    }
                }
            }
        }
        for kind in kinds {
            commands.insert(variant(format!("{kind:?}")));
            if let NodeKind::Kernel(cmd) = kind {
                launches.insert(variant(format!("{:?}", cmd.launch)));
                if let Launch::NdRange { offset, .. } = &cmd.launch {
                    launches.insert(format!("offset:{}", !offset.is_empty()));
                }
                for a in &cmd.args {
                    args.insert(match a {
                        Arg::Dyn(_) => "Dyn".to_string(),
                        Arg::Value(v) => variant(format!("{v:?}")),
                    });
                }
            }
        }
        for (_, e) in g.edges.iter() {
            edges.insert(e.kind);
        }
        for (_, p) in g.dyn_params.iter() {
            args.insert(format!("dyn:{}", variant(format!("{:?}", p.value))));
        }
    }
    assert_eq!(commands.len(), 15 + 3, "{commands:?}");
    assert_eq!(edges.len(), EdgeKind::ALL.len(), "{edges:?}");
    assert_eq!(args.len(), 6 + 5, "{args:?}");
    assert_eq!(launches.len(), 3 + 2, "{launches:?}");
    // Memory kinds, including every USM kind.
    let memories: BTreeSet<String> = m
        .memories
        .iter()
        .map(|(_, mem)| match &mem.kind {
            MemoryKind::Usm(k) => format!("{k:?}"),
            other => variant(format!("{other:?}")),
        })
        .collect();
    assert_eq!(memories.len(), 5, "{memories:?}");
    assert!(m.memories.iter().any(|(_, mem)| matches!(mem.kind, MemoryKind::Usm(UsmKind::Host))));
    // Ops, and every operator of each family.
    let mut ops = Vec::new();
    for k in m.kernels.iter().map(|(_, k)| k).chain(m.functions.iter().map(|(_, f)| &f.def)) {
        if let KernelBody::Ir(body) = &k.body {
            ops_in(body, &body.entry, &mut ops);
        }
    }
    let op_names: BTreeSet<String> = ops.iter().map(|k| variant(format!("{k:?}"))).collect();
    assert_eq!(op_names.len(), 25, "{op_names:?}");
    let operators: BTreeSet<String> = ops
        .iter()
        .filter_map(|k| match k {
            OpKind::Builtin(b, _) => Some(format!("builtin:{b:?}")),
            OpKind::Unary(u, _) => Some(format!("unary:{u:?}")),
            OpKind::Binary(b, ..) => Some(format!("binary:{b:?}")),
            OpKind::Cmp(c, ..) => Some(format!("cmp:{c:?}")),
            OpKind::Atomic { op, .. } => Some(format!("atomic:{op:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(operators.len(), 6 + 12 + 13 + 6 + 9, "{operators:?}");
    assert!(ops.iter().any(|k| matches!(k, OpKind::Atomic { mem: cmdgraph_ir::kernel::MemBase::Global(_), .. })));
    assert!(matches!(m.kernels.iter().nth(3).map(|(_, k)| &k.body), Some(KernelBody::Spirv { .. })));
    assert!(m.trailing_comments.len() == 2);
}

#[test]
fn non_canonical_text_is_normalised() {
    let messy = "usm @x:f32[0x10]   device // x\r\n\
                 graph   @g   properties( updatable ,no_cycle_check)  context(0) device(0){\r\n\
                 %a=empty\n%b = memcpy @x + 0 , @x+4,8 after(%a via depends_on)\n\
                 dyn %p = @x + 0\n}";
    let canonical = "usm @x : f32[16] // x\n\n\
                     graph @g properties(no_cycle_check, updatable) {\n  \
                     %a = empty\n  %b = memcpy @x, @x + 4, 8 after(%a)\n  dyn %p = @x\n}\n";
    let m = parse_ok(messy);
    assert_eq!(print(&m), canonical);
    assert_eq!(print(&parse_ok(canonical)), canonical);
    assert_eq!(parse_ok(canonical), m);
}

/// Parses `src`, which may be anything; only a panic fails.
fn parse_anything(src: &str) {
    if let Ok(m) = parse(src) {
        // Whatever parses prints, and the print parses back to the same module.
        let printed = print(&m);
        let again = parse(&printed).unwrap_or_else(|e| panic!("{}", diag::render_all(&e, "printed", &printed)));
        assert_eq!(again, m, "{printed}");
    }
}

#[test]
fn truncations_of_the_canonical_module_parse_or_fail_cleanly() {
    // Every cut at a token boundary (next to whitespace) and every seventh cut elsewhere:
    // all cuts take long in a debug build, and cuts inside one token differ little.
    let mut previous = ' ';
    for (i, c) in EVERYTHING.char_indices() {
        if i % 7 == 0 || c.is_whitespace() || previous.is_whitespace() {
            parse_anything(&EVERYTHING[..i]);
        }
        previous = c;
    }
    parse_anything(EVERYTHING);
}

#[test]
fn deleting_any_line_of_the_canonical_module_parses_or_fails_cleanly() {
    let lines: Vec<&str> = EVERYTHING.lines().collect();
    for i in 0..lines.len() {
        let mut src = lines[..i].join("\n");
        src.push('\n');
        src.push_str(&lines[i + 1..].join("\n"));
        parse_anything(&src);
    }
}

/// Tokens and fragments of the language, to build plausible garbage from.
const VOCABULARY: [&str; 52] = [
    "kernel",
    "graph",
    "usm",
    "buffer",
    "device_global",
    "@a",
    "@b",
    "%x",
    "%y",
    "%t",
    "=",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    "->",
    "..",
    "+",
    "1",
    "-2",
    "0x1f",
    "1.5",
    "nan",
    "-inf",
    "\"s\"",
    "x\"0a\"",
    "f32",
    "vec4",
    "buf",
    "read",
    "empty",
    "memcpy",
    "after",
    "via",
    "for",
    "loop",
    "if",
    "yield",
    "dcg",
    "dyn",
    "// c\n",
    "\n",
    "range",
    "send",
    "allreduce",
    "tag",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn printing_then_parsing_gives_back_the_module(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let m = gen::module(&bytes);
        let text = print(&m);
        let parsed = parse(&text).map_err(|e| TestCaseError::fail(diag::render_all(&e, "generated.cgir", &text)))?;
        prop_assert!(parsed == m, "parse(print(m)) != m for:\n{}", text);
        prop_assert_eq!(print(&parsed), text);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        parse_anything(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_token_soup_never_panics(words in proptest::collection::vec(0..VOCABULARY.len(), 0..120)) {
        let src: Vec<&str> = words.iter().map(|&i| VOCABULARY[i]).collect();
        parse_anything(&src.join(" "));
    }

    #[test]
    fn mutated_canonical_module_never_panics(cut in 0..EVERYTHING.len(), len in 0usize..40, word in 0..VOCABULARY.len()) {
        let mut src = EVERYTHING.to_string();
        let start = (0..=cut).rev().find(|&i| src.is_char_boundary(i)).unwrap_or(0);
        let end = (start + len..=src.len()).find(|&i| src.is_char_boundary(i)).unwrap_or(src.len());
        src.replace_range(start..end, VOCABULARY[word]);
        parse_anything(&src);
    }
}

/// The variants a module uses: ops, commands, edge kinds, arguments, comments.
fn constructs(m: &Module) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, k) in m.kernels.iter() {
        if let KernelBody::Ir(body) = &k.body {
            let mut ops = Vec::new();
            ops_in(body, &body.entry, &mut ops);
            out.extend(ops.iter().map(|k| format!("op:{}", variant(format!("{k:?}")))));
            out.extend(body.ops.iter().filter(|(_, o)| !o.comments.is_empty()).map(|_| "op-comment".to_string()));
        }
    }
    for (_, g) in m.graphs.iter() {
        out.extend(g.nodes.iter().map(|(_, n)| format!("node:{}", variant(format!("{:?}", n.kind)))));
        out.extend(g.edges.iter().map(|(_, e)| format!("edge:{:?}", e.kind)));
        out.extend(
            g.dcgs.iter().flat_map(|(_, d)| &d.alternatives).map(|a| format!("alt:{}", variant(format!("{a:?}")))),
        );
        out.extend(g.dyn_params.iter().map(|(_, p)| format!("dyn:{}", variant(format!("{:?}", p.value)))));
        out.extend(g.queues.iter().map(|_| "queue".to_string()));
        out.extend(g.edge_comments.keys().map(|_| "edge-comment".to_string()));
    }
    out.extend(m.memories.iter().map(|(_, mem)| format!("memory:{}", variant(format!("{:?}", mem.kind)))));
    out
}

#[test]
fn the_generator_covers_the_language() {
    let mut seen = BTreeSet::new();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..300 {
        let bytes: Vec<u8> = (0..3000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        seen.extend(constructs(&gen::module(&bytes)));
    }
    let count = |prefix: &str| seen.iter().filter(|s| s.starts_with(prefix)).count();
    assert_eq!(count("op:"), 22, "{seen:?}");
    assert_eq!(count("node:"), 15, "{seen:?}");
    assert_eq!(count("edge:"), 8, "{seen:?}");
    assert_eq!(count("alt:"), 3, "{seen:?}");
    assert_eq!(count("dyn:"), 5, "{seen:?}");
    assert_eq!(count("memory:"), 3, "{seen:?}");
    for s in ["queue", "edge-comment", "op-comment"] {
        assert!(seen.contains(s), "{s}: {seen:?}");
    }
}

/// `wgsl`/`glsl` kernels, from a file or inline between `"""`, print as written (the inline
/// text raw, over lines, with braces and quotes kept), and an unterminated inline text is a
/// located error.
#[test]
fn shader_kernels_print_as_written() {
    let text = r#"kernel @a(%x: buf<f32, read_write>) wgsl "k/a.wgsl" entry "main"

kernel @b(%x: buf<f32, read_write>, %n: u32) glsl entry "main" """
#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer X { float x[]; };
void main() { x[gl_GlobalInvocationID.x] *= 2.0; } // "quoted" {braces}
"""
"#;
    let m = cmdgraph_ir::text::parse(text).unwrap_or_else(|d| panic!("{d:?}"));
    let bodies: Vec<&KernelBody> = m.kernels.iter().map(|(_, k)| &k.body).collect();
    assert!(
        matches!(bodies[0], KernelBody::Shader { lang: cmdgraph_ir::ShaderLang::Wgsl, source: cmdgraph_ir::ShaderSource::File(p), entry } if p == "k/a.wgsl" && entry == "main")
    );
    let KernelBody::Shader {
        lang: cmdgraph_ir::ShaderLang::Glsl, source: cmdgraph_ir::ShaderSource::Inline(src), ..
    } = bodies[1]
    else {
        panic!("{:?}", bodies[1])
    };
    assert!(src.starts_with("\n#version 450\n") && src.contains("\"quoted\" {braces}\n"), "{src:?}");
    assert_eq!(cmdgraph_ir::text::print(&m), text);
    let err =
        cmdgraph_ir::text::parse("kernel @a(%x: buf<f32, read>) wgsl entry \"main\" \"\"\"fn main() {}\n").unwrap_err();
    assert_eq!(err[0].code, "E0002", "{err:?}");
    assert_eq!(err[0].line_col("kernel @a(%x: buf<f32, read>) wgsl entry \"main\" \"\"\"fn main() {}\n"), (1, 49));
}
