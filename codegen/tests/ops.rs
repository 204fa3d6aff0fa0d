//! One small kernel per op family: it compiles at -O0 and -O2, `spirv-val` accepts it
//! (compile_kernel validates), and the LLVM IR holds the instruction the family lowers to.

use cmdgraph_codegen::{compile_kernel, emit, module_variants, CodegenError, Emit, Options};

/// Compiles every variant of `src` at -O0 and -O2 and returns the -O0 LLVM IR.
fn compile(src: &str) -> Result<String, CodegenError> {
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    if let Err(d) = cmdgraph_ir::verify::verify(&module) {
        panic!("verify: {d:?}\n{src}");
    }
    let mut ir = String::new();
    for (k, v) in module_variants(&module).unwrap() {
        for opt in [0, 2] {
            compile_kernel(&module, k, &v, &Options { opt_level: opt })?;
        }
        ir.push_str(&emit(&module, k, &v, &Options { opt_level: 0 }, Emit::LlvmIr)?);
    }
    Ok(ir)
}

/// A 1-D kernel `@k(%o: buf<T, write>, %a: buf<T, read>, %b: buf<T, read>)` whose body
/// computes `%r` from `%x = a[i]` and `%y = b[i]`, launched over 1000 items.
fn elementwise(ty: &str, body: &str) -> String {
    format!(
        "kernel @k(%o: buf<{ty}, write>, %a: buf<{ty}, read>, %b: buf<{ty}, read>) {{\n  %i = global_id 0\n  \
         %x = load %a[%i]\n  %y = load %b[%i]\n{body}\n  store %o[%i], %r\n}}\n\
         usm @o : {ty}[1000]\nusm @a : {ty}[1000]\nusm @b : {ty}[1000]\n\
         graph @g {{\n  %n = kernel @k range(1000) args(@o, @a, @b)\n}}\n"
    )
}

fn expect(src: &str, needles: &[&str]) {
    let ir = compile(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    for n in needles {
        assert!(ir.contains(n), "`{n}` not in the IR of\n{src}\n{ir}");
    }
}

#[test]
fn float_arithmetic_and_math() {
    for (op, needle) in [
        ("add", "fadd"),
        ("sub", "fsub"),
        ("mul", "fmul"),
        ("div", "fdiv"),
        ("rem", "frem"),
        ("pow", "llvm.pow.v4f32"),
        ("min", "fcmp olt"),
        ("max", "fcmp ogt"),
    ] {
        expect(&elementwise("f32", &format!("  %r = {op} %x, %y")), &[needle]);
    }
    for (op, needle) in [
        ("sqrt", "llvm.sqrt"),
        ("exp", "llvm.exp"),
        ("log", "llvm.log"),
        ("sin", "llvm.sin"),
        ("cos", "llvm.cos"),
        ("tanh", "llvm.tanh"),
        ("floor", "llvm.floor"),
        ("ceil", "llvm.ceil"),
        ("abs", "llvm.fabs"),
        ("neg", "fneg"),
        ("rsqrt", "fdiv"),
    ] {
        expect(&elementwise("f32", &format!("  %r = {op} %x")), &[needle]);
    }
    expect(&elementwise("f32", "  %r = fma %x, %y, %x"), &["llvm.fma"]);
}

#[test]
fn integer_arithmetic_wraps_and_guards_division() {
    for ty in ["i32", "u32", "i64", "u64"] {
        for op in ["add", "sub", "mul", "div", "rem", "min", "max", "and", "or", "xor", "shl", "shr"] {
            compile(&elementwise(ty, &format!("  %r = {op} %x, %y"))).unwrap_or_else(|e| panic!("{ty} {op}: {e}"));
        }
        compile(&elementwise(ty, "  %r = not %x")).unwrap();
        compile(&elementwise(ty, "  %r = abs %x")).unwrap();
    }
    // Division by zero selects 0 and avoids the division trap; MIN / -1 is the negation.
    expect(&elementwise("i32", "  %r = div %x, %y"), &["icmp eq <4 x i32>", "sdiv", "select"]);
    expect(&elementwise("u32", "  %r = shl %x, %y"), &["and <4 x i32>", "shl"]);
    expect(&elementwise("i32", "  %r = shr %x, %y"), &["ashr"]);
    expect(&elementwise("u32", "  %r = shr %x, %y"), &["lshr"]);
}

#[test]
fn comparisons_select_and_casts() {
    expect(&elementwise("f32", "  %c = ne %x, %y\n  %r = select %c, %x, %y"), &["fcmp une", "select"]);
    expect(&elementwise("i32", "  %c = lt %x, %y\n  %r = select %c, %x, %y"), &["icmp slt"]);
    expect(&elementwise("u32", "  %c = lt %x, %y\n  %r = select %c, %x, %y"), &["icmp ult"]);
    // Float to integer saturates and maps NaN to 0.
    expect(
        &elementwise("i32", "  %f = cast %x to f32\n  %r = cast %f to i32"),
        &["sitofp", "fptosi", "fcmp oge", "fcmp une"],
    );
    expect(&elementwise("u32", "  %f = cast %x to f32\n  %r = cast %f to u32"), &["uitofp", "fptoui"]);
    expect(&elementwise("i32", "  %w = cast %x to i64\n  %r = cast %w to i32"), &["sext", "trunc"]);
    expect(&elementwise("u32", "  %bb = cast %x to bool\n  %r = cast %bb to u32"), &["icmp ne", "zext"]);
}

#[test]
fn vectors_and_f16() {
    let src = "kernel @v(%o: buf<vec4<f32>, write>, %a: buf<f32, read>, %s: f32) {\n  %i = global_id 0\n  \
               %x = load %a[%i]\n  %v = splat %x : vec4<f32>\n  %w = insert %v, 2, %s\n  %e = extract %w, 1\n  \
               %u = vec %e, %x, %s, %e\n  %r = add %u, %w\n  store %o[%i], %r\n}\n\
               usm @o : vec4<f32>[64]\nusm @a : f32[64]\n\
               graph @g {\n  %n = kernel @v nd_range(global(64), local(32)) args(@o, @a, 1.5)\n}\n";
    expect(src, &["shufflevector", "insertelement <4 x float>", "extractelement", "fadd <4 x float>"]);
    expect(&elementwise("f16", "  %r = mul %x, %y"), &["fpext", "fmul", "fptrunc"]);
}

#[test]
fn loops_ifs_locals_barriers_and_atomics() {
    let src = "kernel @r(%in: buf<f32, read>, %out: buf<f32, read_write>, %cnt: buf<u32, read_write>, %t: local<f32>, %n: u32) {\n  \
               %lid = local_id 0\n  %gid = global_id 0\n  %v = load %in[%gid]\n  store %t[%lid], %v\n  group_barrier\n  \
               %z = const 0 : u32\n  %one = const 1 : u32\n  %acc0 = const 0.0 : f32\n  \
               %acc = for %j = %z to %n step %one carry(%a = %acc0) {\n    %x = load %t[%j]\n    %s = add %a, %x\n    yield %s\n  }\n  \
               %first = eq %lid, %z\n  %res = if %first -> f32 {\n    yield %acc\n  } else {\n    yield %v\n  }\n  \
               %old = atomic add %out[%z], %res\n  %c = atomic max %cnt[%z], %gid\n}\n\
               usm @i : f32[256]\nusm @o : f32[1]\nusm @c : u32[1]\n\
               graph @g {\n  %n = kernel @r nd_range(global(256), local(64)) args(@i, @o, @c, local f32[64], 64 : u32)\n}\n";
    expect(
        src,
        &[
            "phi float",
            "addrspace(3)",
            "llvm.spv.group.memory.barrier.with.group.sync",
            "atomicrmw fadd",
            "atomicrmw umax",
        ],
    );
}

#[test]
fn device_globals_have_slots_after_parameters() {
    let src = "kernel @d(%o: buf<u32, write>) {\n  %i = global_id 0\n  %v = load @counter[%i]\n  store %o[%i], %v\n}\n\
               device_global @counter : u32[16]\nusm @o : u32[16]\n\
               graph @g {\n  %n = kernel @d range(16) args(@o)\n}\n";
    let module = cmdgraph_ir::text::parse(src).unwrap();
    let (k, v) = module_variants(&module).unwrap().remove(0);
    let c = compile_kernel(&module, k, &v, &Options::default()).unwrap();
    assert_eq!(c.layout.slots.len(), 2);
    assert!(
        matches!(&c.layout.slots[1], cmdgraph_ir::bundle::MemorySlot::DeviceGlobal { name, writes: false } if name == "counter")
    );
    assert_eq!(c.layout.fields[0].offset, 32, "the first field follows the 32-byte header");
}

#[test]
fn cmpxchg_compiles_to_one_compare_exchange_without_float_atomic_extensions() {
    let src = "kernel @x(%o: buf<u32, read_write>, %f: buf<f32, read_write>) {\n  %z = const 0 : u32\n  \
               %one = const 1 : u32\n  %old = atomic cmpxchg %o[%z], %z, %one\n  store %o[%one], %old\n  \
               %v = const 2.5 : f32\n  %m = atomic max %f[%z], %v\n}\nusm @o : u32[2]\nusm @f : f32[1]\n\
               graph @g {\n  %n = kernel @x single_task args(@o, @f)\n}\n";
    let module = cmdgraph_ir::text::parse(src).unwrap();
    let (k, v) = module_variants(&module).unwrap().remove(0);
    let asm = cmdgraph_codegen::emit(&module, k, &v, &Options::default(), cmdgraph_codegen::Emit::SpirvAsm).unwrap();
    // One for cmpxchg, one in the f32 max loop; no OpCompositeInsert left from the backend.
    assert_eq!(asm.matches("OpAtomicCompareExchange").count(), 2, "{asm}");
    assert!(!asm.contains("OpCompositeInsert"), "{asm}");
    assert!(!asm.contains("AtomicFloat32MinMaxEXT") && !asm.contains("OpAtomicFMaxEXT"), "{asm}");
}
