//! Issue 16: kernels whose loads sit on both sides of control flow compile at every `-O`
//! level to SPIR-V that `spirv-val --target-env vulkan1.3` accepts. At -O2 GVN's PRE used to
//! merge two `getpointer` calls into a `phi ptr`, which Vulkan's logical addressing forbids
//! ("Using pointers with OpPhi requires capability VariablePointers"); codegen/src/legalize.rs
//! turns such merges back into index merges. Here: the reported kernel, its `select` and
//! `for` variants, and generated kernels with loads and stores under nested `if`/`for`.

use cmdgraph_codegen::{compile_kernel, emit, module_variants, spirv_bytes, Emit, Options};
use std::io::Write;
use std::process::{Command, Stdio};

/// The kernel of the issue: a load in one arm of an `if`, another after it.
const LEFT_SUM: &str = "\
kernel @left_sum(%u: buf<f32, read>, %y: buf<f32, write>) {
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %fz = const 0.0 : f32
  %has_l = gt %i, %zero
  %ul = if %has_l -> f32 {
    %il = sub %i, %one
    %v = load %u[%il]
    yield %v
  } else {
    yield %fz
  }
  %uc = load %u[%i]
  %s = add %ul, %uc
  store %y[%i], %s
}
";

/// Both loads unconditional, one of them chosen by `select`.
const LEFT_SELECT: &str = "\
kernel @left_select(%u: buf<f32, read>, %y: buf<f32, write>) {
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %has_l = gt %i, %zero
  %il = sub %i, %one
  %l = load %u[%il]
  %c = load %u[%i]
  %ul = select %has_l, %l, %c
  %s = add %ul, %c
  store %y[%i], %s
}
";

/// The index chosen by an `if`, loads in both arms and after.
const PICK: &str = "\
kernel @pick(%u: buf<f32, read>, %y: buf<f32, write>) {
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %has_l = gt %i, %zero
  %j, %a = if %has_l -> u32, f32 {
    %il = sub %i, %one
    %v = load %u[%il]
    yield %il, %v
  } else {
    %w = load %u[%i]
    yield %i, %w
  }
  %x = load %u[%j]
  %s = add %a, %x
  store %y[%i], %s
}
";

/// The issue's pattern inside a `for`: each iteration loads `u[j - 1]` when `j > 0`, then
/// `u[j]`.
const LOOP_LEFT_SUM: &str = "\
kernel @loop_left_sum(%u: buf<f32, read>, %y: buf<f32, write>, %n: u32) {
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %fz = const 0.0 : f32
  %acc = for %j = %zero to %n step %one carry(%a = %fz) {
    %gt = gt %j, %zero
    %l = if %gt -> f32 {
      %jm = sub %j, %one
      %v = load %u[%jm]
      yield %v
    } else {
      yield %fz
    }
    %c = load %u[%j]
    %s = add %l, %c
    %a2 = add %a, %s
    yield %a2
  }
  %mine = load %u[%i]
  %r = add %acc, %mine
  store %y[%i], %r
}
";

/// A load before the loop and the same address loaded in every iteration and after it.
const LOOP_INVARIANT: &str = "\
kernel @loop_invariant(%u: buf<f32, read>, %y: buf<f32, write>, %n: u32) {
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %fz = const 0.0 : f32
  %has = gt %n, %zero
  %first = if %has -> f32 {
    %v = load %u[%i]
    yield %v
  } else {
    yield %fz
  }
  %acc = for %j = %zero to %n step %one carry(%a = %first) {
    %vi = load %u[%i]
    %w = load %u[%j]
    %p = mul %vi, %w
    %a2 = add %a, %p
    yield %a2
  }
  %last = load %u[%i]
  %r = add %acc, %last
  store %y[%i], %r
}
";

fn module(kernel: &str, name: &str, extra_args: &str) -> String {
    format!(
        "{kernel}\nusm @u : f32[1024]\nusm @y : f32[1024]\n\ngraph @g {{\n  %k = kernel @{name} range(1024) args(@u, @y{extra_args})\n}}\n"
    )
}

/// `spirv-val --target-env vulkan1.3` on `words`, its output when it rejects them.
fn spirv_val(words: &[u32]) -> Result<(), String> {
    let mut child = Command::new("spirv-val")
        .args(["--target-env", "vulkan1.3", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spirv-val (package spirv-tools)");
    child.stdin.take().expect("stdin").write_all(&spirv_bytes(words)).expect("write");
    let out = child.wait_with_output().expect("spirv-val");
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout)))
    }
}

/// Whether a line of LLVM IR is a phi or select of pointers.
fn merges_pointers(ir: &str) -> bool {
    ir.lines().any(|l| l.contains(" = phi ptr") || (l.contains(" = select ") && l.contains(", ptr ")))
}

/// Compiles every variant of `src` at -O0 to -O3: valid SPIR-V (compile_kernel runs
/// spirv-val, and so does this), no pointer merge in the optimized LLVM IR.
fn compiles_everywhere(src: &str) {
    let module = cmdgraph_ir::text::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    if let Err(d) = cmdgraph_ir::verify::verify(&module) {
        panic!("verify: {d:?}\n{src}");
    }
    for (k, v) in module_variants(&module).expect("variants") {
        for opt in 0..=3 {
            let options = Options { opt_level: opt };
            let c = compile_kernel(&module, k, &v, &options).unwrap_or_else(|e| panic!("-O{opt}: {e}\n{src}"));
            spirv_val(&c.spirv).unwrap_or_else(|e| panic!("-O{opt}: spirv-val: {e}\n{src}"));
            let ir = emit(&module, k, &v, &options, Emit::LlvmIr).expect("emit");
            assert!(!merges_pointers(&ir), "-O{opt}: a pointer merge reached the backend:\n{ir}");
        }
    }
}

#[test]
fn the_issue_kernel_compiles_at_every_level() {
    compiles_everywhere(&module(LEFT_SUM, "left_sum", ""));
}

#[test]
fn the_issue_kernel_at_o2_merges_no_pointer_and_keeps_both_loads() {
    let src = module(LEFT_SUM, "left_sum", "");
    let m = cmdgraph_ir::text::parse(&src).expect("parses");
    let (k, v) = module_variants(&m).expect("variants").remove(0);
    let ir = emit(&m, k, &v, &Options { opt_level: 2 }, Emit::LlvmIr).expect("compiles at -O2");
    assert!(!merges_pointers(&ir), "{ir}");
    assert_eq!(ir.matches("load float").count(), 2, "{ir}");
}

#[test]
fn the_select_variant_compiles_at_every_level() {
    compiles_everywhere(&module(LEFT_SELECT, "left_select", ""));
}

#[test]
fn an_index_chosen_by_an_if_compiles_at_every_level() {
    compiles_everywhere(&module(PICK, "pick", ""));
}

#[test]
fn the_loop_variants_compile_at_every_level() {
    compiles_everywhere(&module(LOOP_LEFT_SUM, "loop_left_sum", ", 16"));
    compiles_everywhere(&module(LOOP_INVARIANT, "loop_invariant", ", 16"));
}

#[test]
fn nd_range_and_work_group_memory_variants_compile_at_every_level() {
    // The same pattern on a work-group array (getelementptr, not getpointer).
    let src = "\
kernel @lds(%u: buf<f32, read>, %y: buf<f32, write>) {
  %i = global_id 0
  %l = local_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  %fz = const 0.0 : f32
  %t = local f32[64]
  %v = load %u[%i]
  store %t[%l], %v
  group_barrier
  %has_l = gt %l, %zero
  %left = if %has_l -> f32 {
    %lm = sub %l, %one
    %x = load %t[%lm]
    yield %x
  } else {
    yield %fz
  }
  %c = load %t[%l]
  %s = add %left, %c
  store %y[%i], %s
}

usm @u : f32[1024]
usm @y : f32[1024]

graph @g {
  %k = kernel @lds nd_range(global(1024), local(64)) args(@u, @y)
}
";
    compiles_everywhere(src);
}

/// A small deterministic generator (xorshift), so failures reproduce from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, xs: &'a [String]) -> &'a str {
        &xs[self.below(xs.len())]
    }
}

/// Generated kernel bodies: loads of two buffers at indices derived from the id and loop
/// variables, under nested `if`s (with and without results) and `for`s, selects, stores.
struct Gen {
    rng: Rng,
    next: usize,
    out: Vec<String>,
}

/// Values in scope: `u32` indices and `f32` data.
#[derive(Clone)]
struct Scope {
    idx: Vec<String>,
    f: Vec<String>,
}

impl Gen {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("%{prefix}{}", self.next)
    }

    fn line(&mut self, depth: usize, text: String) {
        self.out.push(format!("{}{text}", "  ".repeat(depth + 1)));
    }

    fn cond(&mut self, s: &Scope, depth: usize) -> String {
        let c = self.fresh("c");
        let (a, b) = (self.rng.pick(&s.idx).to_string(), self.rng.pick(&s.idx).to_string());
        let op = ["gt", "lt", "eq", "ne"][self.rng.below(4)];
        self.line(depth, format!("{c} = {op} {a}, {b}"));
        c
    }

    /// Emits `n` statements at `depth`, extending `s`.
    fn region(&mut self, s: &mut Scope, depth: usize, n: usize) {
        for _ in 0..n {
            let choice = if depth >= 3 { self.rng.below(4) } else { self.rng.below(8) };
            match choice {
                0 | 1 => {
                    let v = self.fresh("f");
                    let buf = ["%u", "%w"][self.rng.below(2)];
                    let i = self.rng.pick(&s.idx).to_string();
                    self.line(depth, format!("{v} = load {buf}[{i}]"));
                    s.f.push(v);
                }
                2 => {
                    let v = self.fresh("x");
                    let i = self.rng.pick(&s.idx).to_string();
                    let op = ["add", "sub"][self.rng.below(2)];
                    self.line(depth, format!("{v} = {op} {i}, %one"));
                    s.idx.push(v);
                }
                3 => {
                    let c = self.cond(s, depth);
                    let v = self.fresh("f");
                    let (a, b) = (self.rng.pick(&s.f).to_string(), self.rng.pick(&s.f).to_string());
                    self.line(depth, format!("{v} = select {c}, {a}, {b}"));
                    s.f.push(v);
                }
                4 | 5 => {
                    // if with an f32 and a u32 result
                    let c = self.cond(s, depth);
                    let (f, x) = (self.fresh("f"), self.fresh("x"));
                    self.line(depth, format!("{f}, {x} = if {c} -> f32, u32 {{"));
                    for arm in 0..2 {
                        if arm == 1 {
                            self.line(depth, "} else {".into());
                        }
                        let mut inner = s.clone();
                        let n = 1 + self.rng.below(3);
                        self.region(&mut inner, depth + 1, n);
                        let (yf, yx) = (self.rng.pick(&inner.f).to_string(), self.rng.pick(&inner.idx).to_string());
                        self.line(depth + 1, format!("yield {yf}, {yx}"));
                    }
                    self.line(depth, "}".into());
                    s.f.push(f);
                    s.idx.push(x);
                }
                6 => {
                    // if without results: a store under a condition
                    let c = self.cond(s, depth);
                    self.line(depth, format!("if {c} {{"));
                    let mut inner = s.clone();
                    let n = 1 + self.rng.below(2);
                    self.region(&mut inner, depth + 1, n);
                    let (i, v) = (self.rng.pick(&inner.idx).to_string(), self.rng.pick(&inner.f).to_string());
                    self.line(depth + 1, format!("store %y[{i}], {v}"));
                    self.line(depth, "}".into());
                }
                _ => {
                    let (r, j, a) = (self.fresh("f"), self.fresh("j"), self.fresh("a"));
                    let init = self.rng.pick(&s.f).to_string();
                    self.line(depth, format!("{r} = for {j} = %zero to %n step %one carry({a} = {init}) {{"));
                    let mut inner = s.clone();
                    inner.idx.push(j);
                    inner.f.push(a.clone());
                    let n = 1 + self.rng.below(4);
                    self.region(&mut inner, depth + 1, n);
                    let sum = self.fresh("f");
                    let last = inner.f.last().cloned().unwrap_or(a.clone());
                    self.line(depth + 1, format!("{sum} = add {a}, {last}"));
                    self.line(depth + 1, format!("yield {sum}"));
                    self.line(depth, "}".into());
                    s.f.push(r);
                }
            }
        }
    }
}

fn generated(seed: u64) -> String {
    let mut g = Gen { rng: Rng(seed), next: 0, out: Vec::new() };
    let mut s = Scope { idx: vec!["%i".into(), "%zero".into(), "%one".into()], f: vec!["%fz".into()] };
    let n = 3 + g.rng.below(5);
    g.region(&mut s, 0, n);
    let last = s.f.last().cloned().unwrap_or("%fz".into());
    format!(
        "kernel @gen(%u: buf<f32, read>, %w: buf<f32, read>, %y: buf<f32, write>, %n: u32) {{\n  %i = global_id 0\n  \
         %zero = const 0 : u32\n  %one = const 1 : u32\n  %fz = const 0.0 : f32\n{}\n  store %y[%i], {last}\n}}\n\n\
         usm @u : f32[1024]\nusm @w : f32[1024]\nusm @y : f32[1024]\n\n\
         graph @g {{\n  %k = kernel @gen range(1000) args(@u, @w, @y, 4)\n}}\n",
        g.out.join("\n")
    )
}

#[test]
fn generated_kernels_with_loads_under_control_flow_compile_at_every_level() {
    for seed in 1..=40u64 {
        let src = generated(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        compiles_everywhere(&src);
    }
}
