//! The footprint analysis of kernel launches: exact extents for affine indices, `Whole`
//! where arithmetic may wrap or the index is unknown, and soundness against the reference
//! interpreter (every byte a launch really touched lies inside the reported extent).

use cmdgraph_interp::{AccessKind, Interpreter, RunOptions};
use cmdgraph_ir::footprint::{kernel_footprint, Extent, Footprint, MemAccess, Place};
use cmdgraph_ir::{Arg, ArgValue, KernelCommand, MemRef, Module, NodeKind};
use std::collections::BTreeMap;

/// Parses and verifies `src`. Races are allowed: the soundness checks run a launch
/// unordered with a probe writing every byte, on purpose, so that the interpreter's race
/// detector reports what the launch touched.
fn module(src: &str) -> Module {
    let m = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    let options = cmdgraph_ir::verify::VerifyOptions { allow_races: true };
    let errors = cmdgraph_ir::verify::check_with(&m, &options);
    assert!(errors.is_empty(), "verify: {errors:?}\n{src}");
    m
}

/// The launch of node `%k` in graph `@main`.
fn command(m: &Module) -> &KernelCommand {
    let g = &m.graphs[m.graph_by_name("main").expect("graph @main")];
    g.nodes
        .iter()
        .find_map(|(_, n)| match &n.kind {
            NodeKind::Kernel(c) if n.name == "k" => Some(c),
            _ => None,
        })
        .expect("kernel node %k")
}

/// The footprint of node `%k` of graph `@main`.
fn footprint_of(m: &Module) -> Footprint {
    let c = command(m);
    kernel_footprint(&m.functions, &m.kernels[c.kernel], &c.launch)
}

/// `kernel @f(params) { body }` launched as `launch` with `args` on `usm @x, @y : f32[4096]`.
fn fp(params: &str, body: &str, launch: &str, args: &str) -> Footprint {
    footprint_of(&module(&format!(
        "usm @x : f32[4096]\nusm @y : f32[4096]\nusm @z : f32[4096]\nusm @n : u32[16]\n\
         kernel @f({params}) {{\n{body}\n}}\n\
         graph @main {{\n  %k = kernel @f {launch} args({args})\n}}\n"
    )))
}

fn elems(lo: u64, hi: u64) -> Extent {
    Extent::Elems { lo, hi }
}

fn read(extent: Extent) -> MemAccess {
    MemAccess { read: true, write: false, extent }
}

fn write(extent: Extent) -> MemAccess {
    MemAccess { read: false, write: true, extent }
}

fn rw(extent: Extent) -> MemAccess {
    MemAccess { read: true, write: true, extent }
}

/// One load of `%x[%idx]` after `body` (which defines `%idx` from `%i = global_id 0`).
fn load_x(body: &str, launch: &str) -> Extent {
    let body = format!("  %i = global_id 0\n{body}\n  %v = load %x[%idx]");
    let f = fp("%x: buf<f32, read>", &body, launch, "@x");
    assert_eq!(f.accesses.len(), 1, "{f:?}");
    let (place, access) = f.accesses[0];
    assert_eq!(place, Place::Param(0));
    assert!(access.read && !access.write);
    access.extent
}

#[test]
fn affine_index_covers_the_range() {
    assert_eq!(load_x("  %idx = add %i, %i", "range(64)"), elems(0, 127));
    let f = fp("%x: buf<f32, read>", "  %i = global_id 0\n  %v = load %x[%i]", "range(64)", "@x");
    assert_eq!(f.accesses, vec![(Place::Param(0), read(elems(0, 64)))]);
}

#[test]
fn scaled_and_shifted_index_is_exact() {
    let body = "  %two = const 2 : u32\n  %three = const 3 : u32\n  %d = mul %two, %i\n  %idx = add %d, %three";
    assert_eq!(load_x(body, "range(64)"), elems(3, 130));
}

#[test]
fn nd_range_offset_moves_the_extent() {
    let body = "  %idx = add %i, %i";
    assert_eq!(load_x("  %idx = max %i, %i", "nd_range(global(64), local(16), offset(100))"), elems(100, 164));
    assert_eq!(load_x(body, "nd_range(global(64), local(16), offset(100))"), elems(200, 327));
    let groups = "  %g = group_id 0\n  %l = local_id 0\n  %n = local_range 0\n  %b = mul %g, %n\n  %idx = add %b, %l";
    assert_eq!(load_x(groups, "nd_range(global(64), local(16))"), elems(0, 64));
}

#[test]
fn two_dimensional_row_major_index() {
    let body = "  %r = global_id 0\n  %c = global_id 1\n  %w = const 16 : u32\n  %b = mul %r, %w\n  \
                %idx = add %b, %c\n  %v = load %x[%idx]\n  store %y[%idx], %v";
    let f = fp("%x: buf<f32, read>, %y: buf<f32, write>", body, "nd_range(global(8, 16), local(4, 4))", "@x, @y");
    assert_eq!(f.accesses, vec![(Place::Param(0), read(elems(0, 128))), (Place::Param(1), write(elems(0, 128)))]);
    // The third dimension is absent: id 0, range 1.
    let body = "  %z = global_id 2\n  %n = global_range 2\n  %idx = add %z, %n\n  %v = load %x[%idx]";
    assert_eq!(fp("%x: buf<f32, read>", body, "range(8, 8)", "@x").accesses[0].1.extent, elems(1, 2));
}

#[test]
fn read_and_write_flags_follow_the_ops() {
    let body = "  %i = global_id 0\n  %xv = load %x[%i]\n  %yv = load %y[%i]\n  %s = add %xv, %yv\n  store %y[%i], %s";
    let f = fp(
        "%a: f32, %x: buf<f32, read>, %y: buf<f32, read_write>, %z: buf<f32, write>",
        body,
        "range(100)",
        "1.0, @x, @y, @z",
    );
    // %z is never touched: absent, although its mode allows writing.
    assert_eq!(f.accesses, vec![(Place::Param(1), read(elems(0, 100))), (Place::Param(2), rw(elems(0, 100)))]);
    assert_eq!(f.get(Place::Param(3)), None);
}

#[test]
fn atomics_read_and_write() {
    for op in ["add %n[%zero], %one", "max %n[%zero], %one", "xchg %n[%zero], %one", "cmpxchg %n[%zero], %one, %zero"] {
        let body = format!("  %zero = const 0 : u32\n  %one = const 1 : u32\n  %old = atomic {op}");
        let f = fp("%n: buf<u32, read_write>", &body, "range(1000)", "@n");
        assert_eq!(f.accesses, vec![(Place::Param(0), rw(elems(0, 1)))], "{op}");
    }
}

#[test]
fn loaded_index_is_whole() {
    let body = "  %i = global_id 0\n  %j = load %n[%i]\n  %v = load %x[%j]";
    let f = fp("%n: buf<u32, read>, %x: buf<f32, read>", body, "range(16)", "@n, @x");
    assert_eq!(f.accesses, vec![(Place::Param(0), read(elems(0, 16))), (Place::Param(1), read(Extent::Whole))]);
    // So is an atomic's result and a scalar parameter (it can be updated after the analysis).
    let body = "  %zero = const 0 : u32\n  %one = const 1 : u32\n  %j = atomic add %n[%zero], %one\n  store %x[%j], %f";
    let f = fp("%n: buf<u32, read_write>, %x: buf<f32, write>, %f: f32", body, "range(16)", "@n, @x, 1.0");
    assert_eq!(f.get(Place::Param(1)), Some(write(Extent::Whole)));
    let f = fp("%x: buf<f32, read>, %s: u32", "  %v = load %x[%s]", "range(16)", "@x, 3");
    assert_eq!(f.get(Place::Param(0)), Some(read(Extent::Whole)));
}

#[test]
fn wrapping_arithmetic_is_whole() {
    // 0 - 1 wraps to u32::MAX: the access is anywhere.
    assert_eq!(load_x("  %one = const 1 : u32\n  %idx = sub %i, %one", "range(64)"), Extent::Whole);
    // Guarded by a max it stays exact.
    let guarded = "  %one = const 1 : u32\n  %m = max %i, %one\n  %idx = sub %m, %one";
    assert_eq!(load_x(guarded, "range(64)"), elems(0, 63));
    // A product past 2^32 wraps.
    assert_eq!(load_x("  %big = const 0x10000000 : u32\n  %idx = mul %i, %big", "range(64)"), Extent::Whole);
    // Widened first, the same product is exact.
    let wide = "  %w = cast %i to u64\n  %big = const 0x10000000 : u64\n  %idx = mul %w, %big";
    assert_eq!(load_x(wide, "range(64)"), elems(0, 63 * 0x1000_0000 + 1));
    // A signed index that may be negative is out of bounds of the base: whole.
    let signed = "  %s = cast %i to i32\n  %ten = const 10 : i32\n  %idx = sub %s, %ten";
    assert_eq!(load_x(signed, "range(64)"), Extent::Whole);
    // A cast that does not fit the target wraps.
    let narrow =
        "  %w = cast %i to u64\n  %big = const 0x100000000 : u64\n  %s = add %w, %big\n  %idx = cast %s to u32";
    assert_eq!(load_x(narrow, "range(64)"), Extent::Whole);
}

#[test]
fn square_is_bounded_soundly() {
    assert_eq!(load_x("  %idx = mul %i, %i", "range(64)"), elems(0, 63 * 63 + 1));
}

#[test]
fn remainder_div_and_masks() {
    let c = |op: &str, k: u32| {
        format!("  %seven = const 7 : u32\n  %s = mul %i, %seven\n  %k = const {k} : u32\n  %idx = {op} %s, %k")
    };
    assert_eq!(load_x(&c("rem", 10), "range(64)"), elems(0, 10));
    // A remainder larger than the dividend keeps the dividend.
    assert_eq!(load_x("  %k = const 100 : u32\n  %idx = rem %i, %k", "range(64)"), elems(0, 64));
    assert_eq!(load_x(&c("div", 4), "range(64)"), elems(0, 63 * 7 / 4 + 1));
    assert_eq!(load_x(&c("and", 15), "range(64)"), elems(0, 16));
    assert_eq!(load_x(&c("shr", 2), "range(64)"), elems(0, 63 * 7 / 4 + 1));
    assert_eq!(load_x(&c("shl", 1), "range(64)"), elems(0, 63 * 14 + 1));
    // Division by something that may be zero is not understood.
    assert_eq!(load_x("  %idx = div %i, %i", "range(64)"), Extent::Whole);
    // Masks and remainders bound even unknown (wrapped, loaded) values of their type.
    let wrapped = "  %one = const 1 : u32\n  %w = sub %i, %one\n  %m = const 511 : u32\n  %idx = and %w, %m";
    assert_eq!(load_x(wrapped, "range(64)"), elems(0, 512));
    let signed = "  %s = cast %i to i32\n  %ten = const 10 : i32\n  %d = sub %s, %ten\n  %m = const 15 : i32\n  \
                  %idx = and %d, %m";
    assert_eq!(load_x(signed, "range(64)"), elems(0, 16));
    let body = "  %i = global_id 0\n  %j = load %n[%i]\n  %eight = const 8 : u32\n  %r = rem %j, %eight\n  \
                %v = load %x[%r]";
    let f = fp("%n: buf<u32, read>, %x: buf<f32, read>", body, "range(16)", "@n, @x");
    assert_eq!(f.get(Place::Param(1)), Some(read(elems(0, 8))));
}

#[test]
fn loop_variable_indexing() {
    let body = "  %zero = const 0 : u32\n  %hi = const 16 : u32\n  %one = const 1 : u32\n  \
                for %j = %zero to %hi step %one {\n    %v = load %x[%j]\n  }";
    let f = fp("%x: buf<f32, read>", body, "range(1000)", "@x");
    assert_eq!(f.accesses, vec![(Place::Param(0), read(elems(0, 16)))]);
    // The bounds may depend on the work-item: j in [i, i + 4) for i in [0, 8).
    let body = "  %i = global_id 0\n  %four = const 4 : u32\n  %hi = add %i, %four\n  %s = const 3 : u32\n  \
                for %j = %i to %hi step %s {\n    store %y[%j], %f\n  }";
    let f = fp("%y: buf<f32, write>, %f: f32", body, "range(8)", "@y, 1.0");
    assert_eq!(f.accesses, vec![(Place::Param(0), write(elems(0, 11)))]);
    // An unknown lower bound still leaves j below the upper one.
    let body =
        "  %hi = const 16 : u32\n  %one = const 1 : u32\n  for %j = %s to %hi step %one {\n    %v = load %x[%j]\n  }";
    assert_eq!(fp("%x: buf<f32, read>, %s: u32", body, "range(4)", "@x, 3").accesses[0].1.extent, elems(0, 16));
    // A loop-carried index is unknown.
    let body = "  %zero = const 0 : u32\n  %hi = const 16 : u32\n  %one = const 1 : u32\n  \
                %r = for %j = %zero to %hi step %one carry(%c = %zero) {\n    %v = load %x[%c]\n    \
                %n = add %c, %one\n    yield %n\n  }";
    assert_eq!(fp("%x: buf<f32, read>", body, "range(4)", "@x").accesses, vec![(Place::Param(0), read(Extent::Whole))]);
}

#[test]
fn general_loops_keep_loop_invariant_indices_and_lose_carried_ones() {
    // An index computed in a `loop` body from values defined before it is known.
    let body = "  %one = const 1 : u32\n  %two = const 2 : u32\n  %zero = const 0 : u32\n  \
                %r = loop carry(%c = %zero) {\n    %j = mul %i, %two\n    %v = load %x[%j]\n    \
                %n = add %c, %one\n    %more = lt %n, %two\n    yield %more, %n\n  }\n  %idx = add %i, %zero";
    let f = fp("%x: buf<f32, read>", &format!("  %i = global_id 0\n{body}"), "range(8)", "@x");
    assert_eq!(f.accesses, vec![(Place::Param(0), read(elems(0, 15)))]);
    // A carried index, and a result, are unknown.
    let body = "  %i = global_id 0\n  %one = const 1 : u32\n  %eight = const 8 : u32\n  \
                %r = loop carry(%c = %i) {\n    store %y[%c], %f\n    %n = add %c, %one\n    \
                %more = lt %n, %eight\n    yield %more, %n\n  }\n  store %y[%r], %f";
    let f = fp("%y: buf<f32, write>, %f: f32", body, "range(4)", "@y, 1.0");
    assert_eq!(f.accesses, vec![(Place::Param(0), write(Extent::Whole))]);
}

#[test]
fn select_and_if_take_the_hull() {
    let sel = "  %h = const 100 : u32\n  %j = add %i, %h\n  %c = lt %i, %h\n  %idx = select %c, %i, %j";
    assert_eq!(load_x(sel, "range(64)"), elems(0, 164));
    let iff = "  %h = const 200 : u32\n  %c = lt %i, %h\n  %idx = if %c -> u32 {\n    yield %i\n  } else {\n    \
               yield %h\n  }";
    assert_eq!(load_x(iff, "range(64)"), elems(0, 201));
    // Ops inside a branch count as executed; guarded `i - 1` still wraps for i = 0 as far
    // as the analysis knows (it does not use conditions).
    let body = "  %i = global_id 0\n  %zero = const 0 : u32\n  %one = const 1 : u32\n  %c = gt %i, %zero\n  \
                if %c {\n    %j = sub %i, %one\n    store %y[%j], %f\n  }\n  %k = add %i, %one\n  store %y[%k], %f";
    let f = fp("%y: buf<f32, write>, %f: f32", body, "range(64)", "@y, 1.0");
    assert_eq!(f.accesses, vec![(Place::Param(0), write(Extent::Whole))]);
}

#[test]
fn device_global_is_a_global_place() {
    let m = module(
        "device_global @g : u32[32]\nusm @x : f32[64]\n\
         kernel @f(%x: buf<f32, read>) {\n  %i = global_id 0\n  %v = load %x[%i]\n  %one = const 1 : u32\n  \
         %o = atomic add @g[%i], %one\n  %t = local f32[64]\n  store %t[%i], %v\n}\n\
         graph @main {\n  %k = kernel @f nd_range(global(32), local(32)) args(@x)\n}\n",
    );
    let g = m.memory_by_name("g").unwrap();
    // Work-group memory (`local`) is private to the launch: absent.
    assert_eq!(
        footprint_of(&m).accesses,
        vec![(Place::Param(0), read(elems(0, 32))), (Place::Global(g), rw(elems(0, 32)))]
    );
}

#[test]
fn external_spirv_kernel_is_whole() {
    let m = module(
        "kernel @scale(%x: buf<f32, read>, %y: buf<f32, write>, %a: f32, %z: buf<f32, no_init>) \
         spirv \"kernels/scale.spv\" entry \"main\"\nusm @x : f32[64]\nusm @y : f32[64]\nusm @z : f32[64]\n\
         graph @main {\n  %k = kernel @scale range(64) args(@x, @y, 3.0, @z)\n}\n",
    );
    let whole = Extent::Whole;
    assert_eq!(
        footprint_of(&m).accesses,
        vec![(Place::Param(0), read(whole)), (Place::Param(1), rw(whole)), (Place::Param(3), rw(whole))]
    );
}

#[test]
fn single_task_is_one_work_item() {
    let f = fp(
        "%x: buf<f32, read>",
        "  %i = global_id 0\n  %n = global_range 0\n  %j = add %i, %n\n  %v = load %x[%j]",
        "single_task",
        "@x",
    );
    assert_eq!(f.accesses, vec![(Place::Param(0), read(elems(1, 2)))]);
}

#[test]
fn every_example_kernel_launch_has_a_footprint() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut launches = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "cgir") {
            continue;
        }
        let m = cmdgraph_ir::text::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (_, g) in m.graphs.iter() {
            for (_, n) in g.nodes.iter() {
                if let NodeKind::Kernel(c) = &n.kind {
                    let f = kernel_footprint(&m.functions, &m.kernels[c.kernel], &c.launch);
                    assert!(f.accesses.windows(2).all(|w| w[0].0 < w[1].0), "{}: unsorted {f:?}", path.display());
                    launches += 1;
                }
            }
        }
    }
    assert!(launches > 5);
}

// ---------------------------------------------------------------------------------------
// Soundness against the reference interpreter.
//
// Node `%k` runs unordered with one probe per memory that writes all of it (a memset, or a
// kernel for a device_global), so the race detector reports, per memory, the smallest byte
// range covering everything `%k` touched there and the strongest way it touched it.
// ---------------------------------------------------------------------------------------

/// Appends the probes to `src` (which declares `usm`/`device_global` memories and kernel
/// `@f`) and checks `%k = kernel @f <launch> args(<args>)` against the interpreter; returns how
/// many memories the interpreter saw `%k` touch.
fn check_sound(src: &str, launch: &str, args: &str) -> usize {
    let base = module(&format!("{src}\ngraph @main {{\n  %k = kernel @f {launch} args({args})\n}}\n"));
    let mut probes = String::new();
    let mut graph = format!("graph @main {{\n  %k = kernel @f {launch} args({args})\n");
    for (_, mem) in base.memories.iter() {
        let name = &mem.name;
        if matches!(mem.kind, cmdgraph_ir::MemoryKind::DeviceGlobal(_)) {
            probes.push_str(&format!(
                "kernel @probe_{name}() {{\n  %i = global_id 0\n  %z = const 0 : {t}\n  store @{name}[%i], %z\n}}\n",
                t = mem.elem
            ));
            graph.push_str(&format!("  %probe_{name} = kernel @probe_{name} range({}) args()\n", mem.count));
        } else {
            graph.push_str(&format!("  %probe_{name} = memset @{name}, 0, {}\n", mem.size_bytes()));
        }
    }
    graph.push_str("}\n");
    let full = module(&format!("{src}\n{probes}{graph}"));
    let fp = footprint_of(&full);

    let mut interp = Interpreter::new(&full).unwrap();
    let exec = interp.finalize("main").unwrap();
    let opts = RunOptions { check_races: true, fuel: Some(1 << 26), ..RunOptions::default() };
    let stats = interp.run_with(exec, &opts).unwrap_or_else(|e| panic!("run: {e:?}\n{src}"));

    // Which place names which memory.
    let c = command(&full);
    let mut place_of: BTreeMap<String, Place> = BTreeMap::new();
    for (i, arg) in c.args.iter().enumerate() {
        if let Arg::Value(ArgValue::Pointer(p)) = arg {
            let MemRef::Memory(h) = p.base else { continue };
            assert_eq!(p.offset, 0, "the check assumes pointers at offset 0");
            place_of.insert(format!("@{}", full.memories[h].name), Place::Param(i as u32));
        }
    }
    for (h, mem) in full.memories.iter() {
        if matches!(mem.kind, cmdgraph_ir::MemoryKind::DeviceGlobal(_)) {
            place_of.insert(format!("@{}", mem.name), Place::Global(h));
        }
    }

    let mut checked = 0;
    for race in stats.races.iter().filter(|r| r.first == "k" || r.second == "k") {
        checked += 1;
        let kind = if race.first == "k" { race.kinds.0 } else { race.kinds.1 };
        let place = place_of[&race.memory];
        let mem = &full.memories[full.memory_by_name(&race.memory[1..]).unwrap()];
        let size = mem.elem.size();
        let Some(access) = fp.get(place) else { panic!("{race} but {place:?} is absent from {fp:?}\n{src}") };
        match kind {
            AccessKind::Read => assert!(access.read, "{race}: {access:?} does not read\n{src}"),
            _ => assert!(access.write, "{race}: {access:?} does not write\n{src}"),
        }
        if let Extent::Elems { lo, hi } = access.extent {
            assert!(
                lo * size <= race.range.start && race.range.end <= hi * size,
                "{race}: touched bytes outside {access:?} ({size}-byte elements)\n{src}"
            );
        }
    }
    checked
}

#[test]
fn handwritten_kernels_are_sound_on_the_interpreter() {
    let mems = "usm @x : f32[4096]\nusm @y : f32[4096]\nusm @n : u32[64]\ndevice_global @g : u32[64]\n";
    let kernels = [
        // Affine 2-D with an offset.
        ("kernel @f(%x: buf<f32, read>, %y: buf<f32, write>) {\n  %r = global_id 0\n  %c = global_id 1\n  \
          %w = const 40 : u32\n  %b = mul %r, %w\n  %i = add %b, %c\n  %v = load %x[%i]\n  store %y[%i], %v\n}",
         "nd_range(global(8, 16), local(4, 8), offset(2, 3))", "@x, @y"),
        // A stencil guarded by `if`, with i - 1 and i + 1.
        ("kernel @f(%x: buf<f32, read>, %y: buf<f32, write>) {\n  %i = global_id 0\n  %zero = const 0 : u32\n  \
          %one = const 1 : u32\n  %c = gt %i, %zero\n  %s = if %c -> f32 {\n    %l = sub %i, %one\n    \
          %v = load %x[%l]\n    yield %v\n  } else {\n    %w = load %x[%i]\n    yield %w\n  }\n  %r = add %i, %one\n  \
          %u = load %x[%r]\n  %t = add %s, %u\n  store %y[%i], %t\n}", "range(100)", "@x, @y"),
        // A loop over a row, remainder and atomics on a device_global and a buffer.
        ("kernel @f(%x: buf<f32, read>, %n: buf<u32, read_write>) {\n  %i = global_id 0\n  %sixteen = const 16 : u32\n  \
          %lo = mul %i, %sixteen\n  %hi = add %lo, %sixteen\n  %one = const 1 : u32\n  \
          for %j = %lo to %hi step %one {\n    %v = load %x[%j]\n  }\n  %k = const 7 : u32\n  %m = rem %i, %k\n  \
          %o = atomic add %n[%m], %one\n  %p = atomic max @g[%i], %one\n}", "range(50)", "@x, @n"),
        // Work-group ids, shifts and masks.
        ("kernel @f(%x: buf<f32, read_write>) {\n  %g = group_id 0\n  %l = local_id 0\n  %two = const 2 : u32\n  \
          %gs = shl %g, %two\n  %m = const 3 : u32\n  %lm = and %l, %m\n  %i = add %gs, %lm\n  %h = shr %l, %two\n  \
          %j = add %i, %h\n  %v = load %x[%j]\n  store %x[%i], %v\n}", "nd_range(global(64), local(16))", "@x"),
        // Signed arithmetic with a cast back to an index.
        ("kernel @f(%y: buf<f32, write>) {\n  %i = global_id 0\n  %s = cast %i to i32\n  %five = const 5 : i32\n  \
          %d = sub %s, %five\n  %a = abs %d\n  %m = const 3 : i32\n  %q = div %a, %m\n  %f = const 1.0 : f32\n  \
          store %y[%q], %f\n  %w = cast %a to u64\n  store %y[%w], %f\n}", "range(30)", "@y"),
        // A general loop: a data-dependent number of rounds, a carried index and one from outside.
        ("kernel @f(%x: buf<f32, read>, %n: buf<u32, read_write>) {\n  %i = global_id 0\n  %one = const 1 : u32\n  \
          %seven = const 7 : u32\n  %lim = and %i, %seven\n  %r = loop carry(%c = %i) {\n    %v = load %x[%c]\n    \
          store %n[%i], %c\n    %d = add %c, %one\n    %end = add %i, %lim\n    %more = lt %c, %end\n    \
          yield %more, %d\n  }\n}", "range(40)", "@x, @n"),
        // A single task walking a loop with a step of 3.
        ("kernel @f(%n: buf<u32, write>) {\n  %lo = const 5 : u32\n  %hi = const 60 : u32\n  %s = const 3 : u32\n  \
          for %j = %lo to %hi step %s {\n    store %n[%j], %j\n  }\n}", "single_task", "@n"),
    ];
    for (kernel, launch, args) in kernels {
        // Every kernel touches memory, so the oracle must see it.
        assert!(check_sound(&format!("{mems}{kernel}\n"), launch, args) > 0, "{kernel}");
    }
}

/// A tiny deterministic generator (xorshift64*), so the test needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// A random integer expression kernel: ops over the launch builtins (and a loop variable),
/// in random integer types, ending in guarded loads, stores and atomics at the computed
/// index (the guard keeps the interpreter in bounds; the analysis ignores it, so it must
/// bound the unguarded index).
fn random_kernel(rng: &mut Rng, nd: bool) -> String {
    let types = ["u32", "i32", "u64", "i64"];
    let mut vals: Vec<(String, &str)> = Vec::new();
    let mut body = String::new();
    let mut fresh = 0;
    let mut name = || {
        fresh += 1;
        format!("%v{fresh}")
    };
    let builtins: &[&str] = if nd {
        &["global_id", "local_id", "group_id", "local_range", "global_range"]
    } else {
        &["global_id", "global_range"]
    };
    for _ in 0..3 {
        let (n, b, d) = (name(), rng.pick(builtins), rng.below(3));
        body.push_str(&format!("  {n} = {b} {d}\n"));
        vals.push((n, "u32"));
    }
    let in_loop = rng.below(3) == 0;
    let mut indent = "  ".to_string();
    if in_loop {
        let (lo, hi, st) = (name(), name(), name());
        body.push_str(&format!(
            "  {lo} = const {} : u32\n  {hi} = add {}, {lo}\n  {st} = const {} : u32\n  for %j = {lo} to {hi} step {st} {{\n",
            rng.below(5),
            vals[0].0,
            1 + rng.below(3)
        ));
        vals.push(("%j".to_string(), "u32"));
        indent.push_str("  ");
    }
    let ops = ["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"];
    for _ in 0..1 + rng.below(6) {
        let r = name();
        let (a, ta) = vals[rng.below(vals.len() as u64) as usize].clone();
        match rng.below(5) {
            0 => {
                let t = rng.pick(&types);
                body.push_str(&format!("{indent}{r} = cast {a} to {t}\n"));
                vals.push((r, t));
            }
            1 => {
                let c = name();
                let k = match rng.below(6) {
                    0 => rng.below(3) as i64,
                    1 => rng.below(40) as i64 - 8,
                    2 => rng.below(8) as i64 + 1,
                    3 => 511,
                    // Near the top of the type, so that sums wrap back into range.
                    4 if ta.starts_with('u') => 0xffff_fff0,
                    _ => 0x7fff_fff0,
                };
                let k = if ta.starts_with('u') { k.unsigned_abs() as i64 } else { k };
                let op = rng.pick(&ops);
                body.push_str(&format!("{indent}{c} = const {k} : {ta}\n{indent}{r} = {op} {a}, {c}\n"));
                vals.push((r, ta));
            }
            2 => {
                let same: Vec<_> = vals.iter().filter(|v| v.1 == ta).cloned().collect();
                let b = same[rng.below(same.len() as u64) as usize].0.clone();
                let (cond, c) = (name(), rng.pick(&["lt", "ge"]));
                body.push_str(&format!("{indent}{cond} = {c} {a}, {b}\n{indent}{r} = select {cond}, {a}, {b}\n"));
                vals.push((r, ta));
            }
            _ => {
                let same: Vec<_> = vals.iter().filter(|v| v.1 == ta).cloned().collect();
                let b = same[rng.below(same.len() as u64) as usize].0.clone();
                let op = rng.pick(&ops);
                body.push_str(&format!("{indent}{r} = {op} {a}, {b}\n"));
                vals.push((r, ta));
            }
        }
    }
    // Up to three accesses at random values, each guarded to [0, 512).
    for k in 0..1 + rng.below(3) {
        let (idx, t) = vals[vals.len() - 1 - rng.below(vals.len().min(4) as u64) as usize].clone();
        let (lim, ok) = (name(), name());
        body.push_str(&format!("{indent}{lim} = const 512 : {t}\n{indent}{ok} = lt {idx}, {lim}\n"));
        let ok = if t.starts_with('i') {
            let (z, nn, both) = (name(), name(), name());
            body.push_str(&format!(
                "{indent}{z} = const 0 : {t}\n{indent}{nn} = ge {idx}, {z}\n{indent}{both} = and {ok}, {nn}\n"
            ));
            both
        } else {
            ok
        };
        let access = match k % 3 {
            0 => format!("%l{k} = load %x[{idx}]"),
            1 => format!("store %y[{idx}], %f"),
            _ => format!("%o{k} = atomic add %n[{idx}], %one"),
        };
        body.push_str(&format!("{indent}if {ok} {{\n{indent}  {access}\n{indent}}}\n"));
    }
    if in_loop {
        body.push_str("  }\n");
    }
    format!(
        "usm @x : f32[512]\nusm @y : f32[512]\nusm @n : u32[512]\n\
         kernel @f(%x: buf<f32, read>, %y: buf<f32, write>, %n: buf<u32, read_write>) {{\n  \
         %f = const 1.0 : f32\n  %one = const 1 : u32\n{body}}}\n"
    )
}

#[test]
fn random_index_expressions_are_sound_on_the_interpreter() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut exact, mut checked) = (0, 0);
    for case in 0..200 {
        let nd = case % 2 == 0;
        let src = random_kernel(&mut rng, nd);
        let launch = if nd {
            let l = [1 + rng.below(4), 1 + rng.below(4)];
            let g = [l[0] * (1 + rng.below(4)), l[1] * (1 + rng.below(3))];
            format!(
                "nd_range(global({}, {}), local({}, {}), offset({}, {}))",
                g[0],
                g[1],
                l[0],
                l[1],
                rng.below(9),
                rng.below(3)
            )
        } else {
            format!("range({}, {})", 1 + rng.below(40), 1 + rng.below(3))
        };
        checked += check_sound(&src, &launch, "@x, @y, @n");
        let m = module(&format!("{src}graph @main {{\n  %k = kernel @f {launch} args(@x, @y, @n)\n}}\n"));
        exact += footprint_of(&m).accesses.iter().filter(|(_, a)| a.extent != Extent::Whole).count();
    }
    // The generator must exercise known extents, not only `Whole`.
    assert!(exact > 50, "only {exact} exact extents");
    assert!(checked > 100, "the interpreter saw only {checked} touched memories");
}
