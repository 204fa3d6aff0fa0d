//! f16 matrix products on KHR cooperative matrices (tensor cores), emitted as SPIR-V directly.
//!
//! LLVM 22's SPIR-V backend has no cooperative matrices for Vulkan, and the kernel language
//! has no matrix values, so this module writes the module itself (SPIR-V assembly, assembled
//! and validated by SPIRV-Tools in process). The result is an external kernel of cmdgraph's
//! ABI (docs/abi.md): buffers at bindings 1.., no argument block, every buffer a
//! `buf<vec4<f16>, ...>` parameter.
//!
//! `out (M×N) = epilogue(x (M×K) · w (K×N))`, row-major, f16 in and out, f32 accumulation. A
//! work-group computes a `bm × bn` tile of `out`: `ks` groups of `wm × wn` subgroups each take
//! one K slice, stage `bk`-wide steps of `x` and `w` through work-group memory (the next step's
//! loads in flight while this step multiplies), and multiply 16×16×16 fragments. The slices'
//! sums meet in work-group memory and are added in slice order, so the result does not depend
//! on timing; then every invocation finishes four adjacent outputs at a time and rounds each to
//! f16 once. Rows past `M` are read as row `M − 1` and never written, so `M` is free; `N` and
//! `K` must fit the tile. The order of additions differs from a one-work-item-per-output loop,
//! so results agree with it within rounding, not bit for bit (docs/passes.md, "Cooperative
//! matrices").
//!
//! The tile was chosen on an H200 (docs/performance.md, "f16 MLP"): 32×64 outputs, K steps of
//! 64, 2×2 subgroups, two K slices (256 invocations).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// What happens to each sum before it is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epilogue {
    /// `out = x·w`.
    Product,
    /// `out = x + gelu(x·w + b)` (GELU's tanh form), an MLP layer's residual branch: one
    /// more buffer, the bias `b` (N values), and the residual is `x` itself, so `N == K`.
    BiasGeluResidual,
}

/// Work-group tiling of a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Output rows per work-group (a multiple of 16 × `wm`).
    pub bm: u32,
    /// Output columns per work-group (a multiple of 16 × `wn`).
    pub bn: u32,
    /// K step staged through work-group memory (a multiple of 16).
    pub bk: u32,
    /// Subgroups along the rows.
    pub wm: u32,
    /// Subgroups along the columns.
    pub wn: u32,
    /// K slices, each with its own `wm × wn` subgroups.
    pub ks: u32,
}

impl Tile {
    /// The tile measured fastest for the MLP suite's layers on the H200.
    pub const MEASURED: Tile = Tile { bm: 32, bn: 64, bk: 64, wm: 2, wn: 2, ks: 2 };
}

/// Where a tile's data sits in work-group memory, in elements: each slice's staged rows of `x`
/// and `w` (`v4half`s, padded by 16 bytes against bank conflicts), and the f32 sums of every
/// slice but the first (or one slice's, which the epilogue reads).
struct Layout {
    /// Row stride of a staged `x` step.
    sa: u32,
    /// Row stride of a staged `w` step.
    sb: u32,
    /// One slice's staged `x` step.
    ta: u32,
    /// One slice's staged `w` step.
    tb: u32,
    /// The sums.
    sums: u32,
}

impl Tile {
    /// Saturating, so that a tile [`Gemm::check`] refuses still gives numbers.
    fn layout(&self) -> Layout {
        let (sa, sb) = (self.bk / 4 + 2, self.bn / 4 + 2);
        Layout {
            sa,
            sb,
            ta: self.bm.saturating_mul(sa),
            tb: self.bk.saturating_mul(sb),
            sums: self.ks.saturating_sub(1).max(1).saturating_mul(self.bm).saturating_mul(self.bn),
        }
    }
}

impl std::fmt::Display for Tile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}×{} outputs, K steps of {}, {}×{} subgroups, {} K slice{}",
            self.bm,
            self.bn,
            self.bk,
            self.wm,
            self.wn,
            self.ks,
            if self.ks == 1 { "" } else { "s" }
        )
    }
}

/// One product: sizes, tiling and epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gemm {
    /// Rows of `x` and `out`.
    pub m: u32,
    /// Columns of `w` and `out`.
    pub n: u32,
    /// Columns of `x`, rows of `w`.
    pub k: u32,
    /// The tiling.
    pub tile: Tile,
    /// The epilogue.
    pub epilogue: Epilogue,
}

/// Subgroup width the module assumes (NVIDIA's; a cooperative matrix spans one subgroup).
const SUBGROUP: u32 = 32;
/// `Workgroup` scope, and acquire-release on work-group memory, for `OpControlBarrier`.
const BARRIER: &str = "OpControlBarrier %c2 %c2 %c264";
/// Vulkan's guaranteed work-group memory is 16 KiB; NVIDIA and most desktop GPUs give 48.
const MAX_WORKGROUP_MEMORY: u64 = 49152;

impl Gemm {
    /// Invocations per work-group.
    pub fn invocations(&self) -> u64 {
        u64::from(SUBGROUP) * u64::from(self.tile.wm) * u64::from(self.tile.wn) * u64::from(self.tile.ks)
    }

    /// The node's launch, `range(x, y)` in work-items.
    pub fn launch(&self) -> (u64, u64) {
        let t = self.tile;
        (u64::from(self.n / t.bn.max(1)) * self.invocations(), u64::from(self.m.div_ceil(t.bm.max(1))))
    }

    /// The buffer parameters, in binding order, as the IR declares them.
    pub fn signature(&self) -> &'static str {
        match self.epilogue {
            Epilogue::Product => "%x: buf<vec4<f16>, read>, %w: buf<vec4<f16>, read>, %out: buf<vec4<f16>, write>",
            Epilogue::BiasGeluResidual => {
                "%x: buf<vec4<f16>, read>, %w: buf<vec4<f16>, read>, %b: buf<vec4<f16>, read>, %out: buf<vec4<f16>, write>"
            }
        }
    }

    /// Bytes of work-group memory: each slice's staged `x` and `w` steps (rows padded by 16
    /// bytes against bank conflicts), and the f32 sums of every slice but the first.
    pub fn workgroup_memory(&self) -> u64 {
        let l = self.tile.layout();
        u64::from(self.tile.ks) * (u64::from(l.ta) + u64::from(l.tb)) * 8 + u64::from(l.sums) * 4
    }

    /// Whether the sizes fit the tiling; the message says which does not and what would.
    pub fn check(&self) -> Result<(), String> {
        let t = self.tile;
        if [t.bm, t.bn, t.bk, t.wm, t.wn, t.ks].iter().any(|&v| v == 0 || v > 1024) {
            return Err(format!("tile {}: every tile size must be between 1 and 1024", self.tile));
        }
        if self.invocations() > 1024 {
            return Err(format!("tile {}: at most 1024 invocations per work-group", self.tile));
        }
        let rows = u64::from(self.m.max(t.bm));
        let largest = [rows * u64::from(self.k), u64::from(self.k) * u64::from(self.n), rows * u64::from(self.n)];
        if largest.iter().any(|&e| e > 1 << 31) {
            return Err(format!("{}x{}x{}: at most 2^31 elements per matrix (32-bit indices)", self.m, self.n, self.k));
        }
        let ts = SUBGROUP * t.wm * t.wn;
        let rules = [
            (t.bm > 0 && t.bm.is_multiple_of(16 * t.wm.max(1)), "bm must be a positive multiple of 16 × wm"),
            (t.bn > 0 && t.bn.is_multiple_of(16 * t.wn.max(1)), "bn must be a positive multiple of 16 × wn"),
            (t.bk > 0 && t.bk.is_multiple_of(16), "bk must be a positive multiple of 16"),
            (t.ks > 0, "ks must be positive"),
            (self.m > 0, "M must be positive"),
            (self.n > 0 && self.n.is_multiple_of(t.bn), "N must be a positive multiple of bn"),
            (self.k > 0 && self.k.is_multiple_of(t.bk * t.ks), "K must be a positive multiple of bk × ks"),
            ((t.bm * t.bk / 4).is_multiple_of(ts), "bm × bk / 4 must be a multiple of the invocations per slice"),
            ((t.bk * t.bn / 4).is_multiple_of(ts), "bk × bn / 4 must be a multiple of the invocations per slice"),
            ((t.bm * t.bn / 4).is_multiple_of(ts * t.ks), "bm × bn / 4 must be a multiple of the invocations"),
            (self.epilogue != Epilogue::BiasGeluResidual || self.n == self.k, "the residual epilogue needs N == K"),
            (self.workgroup_memory() <= MAX_WORKGROUP_MEMORY, "at most 48 KiB of work-group memory"),
        ];
        match rules.iter().find(|(ok, _)| !ok) {
            None => Ok(()),
            Some((_, rule)) => Err(format!("{}x{}x{} with tile {}: {rule}", self.m, self.n, self.k, self.tile)),
        }
    }
}

/// The module as SPIR-V assembly (SPIRV-Tools syntax), or why the sizes do not fit.
pub fn assembly(g: &Gemm) -> Result<String, String> {
    g.check()?;
    let mut a = Asm::default();
    a.body(g);
    Ok(a.finish(g))
}

/// The module, assembled and validated for Vulkan 1.3.
pub fn module(g: &Gemm) -> Result<Vec<u32>, String> {
    use spirv_tools::assembler::Assembler as _;
    let text = assembly(g)?;
    let assembler = spirv_tools::assembler::create(Some(spirv_tools::TargetEnv::Vulkan_1_3));
    let binary = assembler
        .assemble(&text, spirv_tools::assembler::AssemblerOptions::default())
        .map_err(|e| format!("the generated product does not assemble (a bug in coop_gemm.rs): {e}"))?;
    let words = binary.as_words().to_vec();
    match crate::validate::validate(&words) {
        Ok(Ok(())) => Ok(words),
        Ok(Err(message)) => Err(format!("the generated product is invalid SPIR-V (a bug in coop_gemm.rs): {message}")),
        Err(e) => Err(e.to_string()),
    }
}

/// The function body under construction: lines and the `u32` constants they use.
#[derive(Default)]
struct Asm {
    lines: Vec<String>,
    consts: BTreeSet<u32>,
}

impl Asm {
    /// The id of the `u32` constant `v`.
    fn c(&mut self, v: u32) -> String {
        self.consts.insert(v);
        format!("%c{v}")
    }

    fn emit(&mut self, line: String) {
        self.lines.push(line);
    }

    fn body(&mut self, g: &Gemm) {
        let t = g.tile;
        let (m, n, k) = (g.m, g.n, g.k);
        let ts = SUBGROUP * t.wm * t.wn;
        // At most 1024 after `check`.
        let inv = SUBGROUP * t.wm * t.wn * t.ks;
        let (fm, fn_) = (t.bm / t.wm / 16, t.bn / t.wn / 16);
        let steps = k / t.bk / t.ks;
        let Layout { sa, sb, ta, tb, .. } = t.layout();
        let (na, nb) = (t.bm * t.bk / 4 / ts, t.bk * t.bn / 4 / ts);
        for v in [0, 1, 2, 3, 4, 16, 264] {
            self.c(v);
        }
        self.emit("%main = OpFunction %void None %fn".into());
        self.emit("%entry = OpLabel".into());
        self.emit("%wid = OpLoad %v3uint %wgid".into());
        self.emit("%gx = OpCompositeExtract %uint %wid 0".into());
        self.emit("%gy = OpCompositeExtract %uint %wid 1".into());
        self.emit("%lid = OpLoad %v3uint %lidv".into());
        self.emit("%tt = OpCompositeExtract %uint %lid 0".into());
        let l = format!("%ks = OpUDiv %uint %tt {}", self.c(ts));
        self.emit(l);
        let l = format!("%t = OpUMod %uint %tt {}", self.c(ts));
        self.emit(l);
        let l = format!("%sg = OpUDiv %uint %t {}", self.c(SUBGROUP));
        self.emit(l);
        let l = format!("%kbase = OpIMul %uint %ks {}", self.c(k / t.ks / 4));
        self.emit(l);
        let l = format!("%kbrow = OpIMul %uint %ks {}", self.c(k / t.ks * n / 4));
        self.emit(l);
        let l = format!("%shoa = OpIMul %uint %ks {}", self.c(ta));
        self.emit(l);
        let l = format!("%shob = OpIMul %uint %ks {}", self.c(tb));
        self.emit(l);
        let l = format!("%wm = OpUDiv %uint %sg {}", self.c(t.wn));
        self.emit(l);
        let l = format!("%wn = OpUMod %uint %sg {}", self.c(t.wn));
        self.emit(l);
        let l = format!("%row0 = OpIMul %uint %gy {}", self.c(t.bm));
        self.emit(l);
        let l = format!("%col0 = OpIMul %uint %gx {}", self.c(t.bn));
        self.emit(l);
        // Where each invocation loads from (global, without the step's K offset) and stores to
        // (work-group memory); rows past M read row M - 1.
        for r in 0..na {
            let lines = [
                format!("%ae{r} = OpIAdd %uint %t {}", self.c(ts * r)),
                format!("%ar{r} = OpUDiv %uint %ae{r} {}", self.c(t.bk / 4)),
                format!("%ac{r} = OpUMod %uint %ae{r} {}", self.c(t.bk / 4)),
                format!("%agr0{r} = OpIAdd %uint %row0 %ar{r}"),
                format!("%agr{r} = OpExtInst %uint %glsl UMin %agr0{r} {}", self.c(m - 1)),
                format!("%agm{r} = OpIMul %uint %agr{r} {}", self.c(k / 4)),
                format!("%ag0{r} = OpIAdd %uint %agm{r} %ac{r}"),
                format!("%ag{r} = OpIAdd %uint %ag0{r} %kbase"),
                format!("%asm{r} = OpIMul %uint %ar{r} {}", self.c(sa)),
                format!("%as0{r} = OpIAdd %uint %asm{r} %ac{r}"),
                format!("%as{r} = OpIAdd %uint %as0{r} %shoa"),
            ];
            self.lines.extend(lines);
        }
        let l = format!("%bcol = OpUDiv %uint %col0 {}", self.c(4));
        self.emit(l);
        for r in 0..nb {
            let lines = [
                format!("%be{r} = OpIAdd %uint %t {}", self.c(ts * r)),
                format!("%br{r} = OpUDiv %uint %be{r} {}", self.c(t.bn / 4)),
                format!("%bc{r} = OpUMod %uint %be{r} {}", self.c(t.bn / 4)),
                format!("%bgm{r} = OpIMul %uint %br{r} {}", self.c(n / 4)),
                format!("%bgc{r} = OpIAdd %uint %bcol %bc{r}"),
                format!("%bg0{r} = OpIAdd %uint %bgm{r} %bgc{r}"),
                format!("%bg{r} = OpIAdd %uint %bg0{r} %kbrow"),
                format!("%bsm{r} = OpIMul %uint %br{r} {}", self.c(sb)),
                format!("%bs0{r} = OpIAdd %uint %bsm{r} %bc{r}"),
                format!("%bs{r} = OpIAdd %uint %bs0{r} %shob"),
            ];
            self.lines.extend(lines);
        }
        let l = format!("%wmr0 = OpIMul %uint %wm {}", self.c(fm * 16 * sa));
        self.emit(l);
        self.emit("%wmr = OpIAdd %uint %wmr0 %shoa".into());
        let l = format!("%wnc0 = OpIMul %uint %wn {}", self.c(fn_ * 4));
        self.emit(l);
        self.emit("%wnc = OpIAdd %uint %wnc0 %shob".into());
        self.loads(t, n, na, nb, "%c0", "i");
        self.emit("OpBranch %header".into());
        self.emit("%header = OpLabel".into());
        self.emit("%s = OpPhi %uint %c0 %entry %snext %cont".into());
        for i in 0..fm {
            for j in 0..fn_ {
                self.emit(format!("%acc{i}_{j} = OpPhi %matC %czero %entry %nacc{i}_{j} %cont"));
            }
        }
        for r in 0..na {
            self.emit(format!("%pa{r} = OpPhi %v4half %la{r}i %entry %la{r}n %cont"));
        }
        for r in 0..nb {
            self.emit(format!("%pb{r} = OpPhi %v4half %lb{r}i %entry %lb{r}n %cont"));
        }
        let l = format!("%more = OpULessThan %bool %s {}", self.c(steps));
        self.emit(l);
        self.emit("OpLoopMerge %merge %cont None".into());
        self.emit("OpBranchConditional %more %body %merge".into());
        self.emit("%body = OpLabel".into());
        // Stage this step, then load the next one (the last step reloads itself) while the
        // subgroups multiply.
        for r in 0..na {
            self.emit(format!("%sap{r} = OpAccessChain %pwv %shA %as{r}"));
            self.emit(format!("OpStore %sap{r} %pa{r}"));
        }
        for r in 0..nb {
            self.emit(format!("%sbp{r} = OpAccessChain %pwv %shB %bs{r}"));
            self.emit(format!("OpStore %sbp{r} %pb{r}"));
        }
        self.emit(BARRIER.into());
        self.emit("%s1 = OpIAdd %uint %s %c1".into());
        let l = format!("%slast = OpULessThan %bool %s1 {}", self.c(steps));
        self.emit(l);
        let l = format!("%snx = OpSelect %uint %slast %s1 {}", self.c(steps - 1));
        self.emit(l);
        self.loads(t, n, na, nb, "%snx", "n");
        let mut prev: BTreeMap<(u32, u32), String> = BTreeMap::new();
        for kk in 0..t.bk / 16 {
            for i in 0..fm {
                let l = format!("%fai{kk}_{i} = OpIAdd %uint %wmr {}", self.c(i * 16 * sa + kk * 4));
                self.emit(l);
                self.emit(format!("%fap{kk}_{i} = OpAccessChain %pwv %shA %fai{kk}_{i}"));
                let l = format!("%fa{kk}_{i} = OpCooperativeMatrixLoadKHR %matA %fap{kk}_{i} %c0 {}", self.c(sa));
                self.emit(l);
            }
            for j in 0..fn_ {
                let l = format!("%fbi{kk}_{j} = OpIAdd %uint %wnc {}", self.c(kk * 16 * sb + j * 4));
                self.emit(l);
                self.emit(format!("%fbp{kk}_{j} = OpAccessChain %pwv %shB %fbi{kk}_{j}"));
                let l = format!("%fb{kk}_{j} = OpCooperativeMatrixLoadKHR %matB %fbp{kk}_{j} %c0 {}", self.c(sb));
                self.emit(l);
            }
            for i in 0..fm {
                for j in 0..fn_ {
                    let name = if kk + 1 == t.bk / 16 { format!("%nacc{i}_{j}") } else { format!("%m{kk}_{i}_{j}") };
                    let before = prev.get(&(i, j)).cloned().unwrap_or_else(|| format!("%acc{i}_{j}"));
                    self.emit(format!("{name} = OpCooperativeMatrixMulAddKHR %matC %fa{kk}_{i} %fb{kk}_{j} {before}"));
                    prev.insert((i, j), name);
                }
            }
        }
        self.emit(BARRIER.into());
        self.emit("OpBranch %cont".into());
        self.emit("%cont = OpLabel".into());
        self.emit("%snext = OpIAdd %uint %s %c1".into());
        self.emit("OpBranch %header".into());
        self.emit("%merge = OpLabel".into());
        self.sums(t, fm, fn_);
        self.epilogue(g, inv);
        self.emit("OpReturn".into());
        self.emit("OpFunctionEnd".into());
    }

    /// The global loads of step `step` into `%la{r}{suffix}`, `%lb{r}{suffix}`.
    fn loads(&mut self, t: Tile, n: u32, na: u32, nb: u32, step: &str, suffix: &str) {
        let l = format!("%aoff{suffix} = OpIMul %uint {step} {}", self.c(t.bk / 4));
        self.emit(l);
        let l = format!("%boff{suffix} = OpIMul %uint {step} {}", self.c(t.bk * n / 4));
        self.emit(l);
        for r in 0..na {
            self.emit(format!("%gai{r}{suffix} = OpIAdd %uint %ag{r} %aoff{suffix}"));
            self.emit(format!("%gap{r}{suffix} = OpAccessChain %pgv %bufX %c0 %gai{r}{suffix}"));
            self.emit(format!("%la{r}{suffix} = OpLoad %v4half %gap{r}{suffix} Aligned 8"));
        }
        for r in 0..nb {
            self.emit(format!("%gbi{r}{suffix} = OpIAdd %uint %bg{r} %boff{suffix}"));
            self.emit(format!("%gbp{r}{suffix} = OpAccessChain %pgv %bufW %c0 %gbi{r}{suffix}"));
            self.emit(format!("%lb{r}{suffix} = OpLoad %v4half %gbp{r}{suffix} Aligned 8"));
        }
    }

    /// Slices 1.. store their sums in work-group memory; slice 0 adds them in slice order and
    /// leaves the total, f32, in the first region (which only it reads and writes there).
    fn sums(&mut self, t: Tile, fm: u32, fn_: u32) {
        let l = format!("%crow = OpIMul %uint %wm {}", self.c(fm * 16));
        self.emit(l);
        let l = format!("%ccol = OpIMul %uint %wn {}", self.c(fn_ * 16));
        self.emit(l);
        let l = format!("%prow = OpIMul %uint %crow {}", self.c(t.bn));
        self.emit(l);
        self.emit("%pbase0 = OpIAdd %uint %prow %ccol".into());
        let frag = |a: &mut Asm, i: u32, j: u32| a.c(i * 16 * t.bn + j * 16);
        if t.ks > 1 {
            self.emit("%ksm1 = OpISub %uint %ks %c1".into());
            let l = format!("%pks = OpIMul %uint %ksm1 {}", self.c(t.bm * t.bn));
            self.emit(l);
            self.emit("%pbase = OpIAdd %uint %pbase0 %pks".into());
            self.emit("%isw = OpUGreaterThanEqual %bool %ks %c1".into());
            self.emit("OpSelectionMerge %wdone None".into());
            self.emit("OpBranchConditional %isw %wpart %wdone".into());
            self.emit("%wpart = OpLabel".into());
            for i in 0..fm {
                for j in 0..fn_ {
                    let off = frag(self, i, j);
                    self.emit(format!("%po{i}_{j} = OpIAdd %uint %pbase {off}"));
                    self.emit(format!("%pp{i}_{j} = OpAccessChain %pwf %shP %po{i}_{j}"));
                    let l = format!("OpCooperativeMatrixStoreKHR %pp{i}_{j} %acc{i}_{j} %c0 {}", self.c(t.bn));
                    self.emit(l);
                }
            }
            self.emit("OpBranch %wdone".into());
            self.emit("%wdone = OpLabel".into());
            self.emit(BARRIER.into());
            self.emit("%is0 = OpIEqual %bool %ks %c0".into());
            self.emit("OpSelectionMerge %rdone None".into());
            self.emit("OpBranchConditional %is0 %rpart %rdone".into());
            self.emit("%rpart = OpLabel".into());
        }
        for i in 0..fm {
            for j in 0..fn_ {
                let mut cur = format!("%acc{i}_{j}");
                for s in 1..t.ks {
                    let l = format!(
                        "%qo{s}_{i}_{j} = OpIAdd %uint %pbase0 {}",
                        self.c((s - 1) * t.bm * t.bn + i * 16 * t.bn + j * 16)
                    );
                    self.emit(l);
                    self.emit(format!("%qp{s}_{i}_{j} = OpAccessChain %pwf %shP %qo{s}_{i}_{j}"));
                    let l =
                        format!("%q{s}_{i}_{j} = OpCooperativeMatrixLoadKHR %matC %qp{s}_{i}_{j} %c0 {}", self.c(t.bn));
                    self.emit(l);
                    self.emit(format!("%r{s}_{i}_{j} = OpFAdd %matC {cur} %q{s}_{i}_{j}"));
                    cur = format!("%r{s}_{i}_{j}");
                }
                let off = frag(self, i, j);
                self.emit(format!("%eo{i}_{j} = OpIAdd %uint %pbase0 {off}"));
                self.emit(format!("%ep{i}_{j} = OpAccessChain %pwf %shP %eo{i}_{j}"));
                let l = format!("OpCooperativeMatrixStoreKHR %ep{i}_{j} {cur} %c0 {}", self.c(t.bn));
                self.emit(l);
            }
        }
        if t.ks > 1 {
            self.emit("OpBranch %rdone".into());
            self.emit("%rdone = OpLabel".into());
        }
        self.emit(BARRIER.into());
    }

    /// Every invocation finishes four adjacent outputs at a time (rows below M only).
    fn epilogue(&mut self, g: &Gemm, inv: u32) {
        let t = g.tile;
        for e in 0..t.bm * t.bn / 4 / inv {
            let l = format!("%q{e} = OpIAdd %uint %tt {}", self.c(inv * e));
            self.emit(l);
            let l = format!("%er{e} = OpUDiv %uint %q{e} {}", self.c(t.bn / 4));
            self.emit(l);
            let l = format!("%ec{e} = OpUMod %uint %q{e} {}", self.c(t.bn / 4));
            self.emit(l);
            self.emit(format!("%es{e} = OpIMul %uint %q{e} %c4"));
            let mut lanes = Vec::new();
            for lane in 0..4 {
                let l = format!("%esi{e}_{lane} = OpIAdd %uint %es{e} {}", self.c(lane));
                self.emit(l);
                self.emit(format!("%esp{e}_{lane} = OpAccessChain %pwf %shP %esi{e}_{lane}"));
                self.emit(format!("%esv{e}_{lane} = OpLoad %float %esp{e}_{lane}"));
                lanes.push(format!("%esv{e}_{lane}"));
            }
            self.emit(format!("%sum{e} = OpCompositeConstruct %v4float {}", lanes.join(" ")));
            self.emit(format!("%xr{e} = OpIAdd %uint %row0 %er{e}"));
            let l = format!("%in{e} = OpULessThan %bool %xr{e} {}", self.c(g.m));
            self.emit(l);
            self.emit(format!("OpSelectionMerge %done{e} None"));
            self.emit(format!("OpBranchConditional %in{e} %out{e} %done{e}"));
            self.emit(format!("%out{e} = OpLabel"));
            self.emit(format!("%oc{e} = OpIAdd %uint %bcol %ec{e}"));
            let l = format!("%orm{e} = OpIMul %uint %xr{e} {}", self.c(g.n / 4));
            self.emit(l);
            self.emit(format!("%oi{e} = OpIAdd %uint %orm{e} %oc{e}"));
            let result = match g.epilogue {
                Epilogue::Product => format!("%sum{e}"),
                Epilogue::BiasGeluResidual => {
                    let lines = [
                        format!("%bp{e} = OpAccessChain %pgv %bufB %c0 %oc{e}"),
                        format!("%bv{e} = OpLoad %v4half %bp{e} Aligned 8"),
                        format!("%bf{e} = OpFConvert %v4float %bv{e}"),
                        format!("%z{e} = OpFAdd %v4float %sum{e} %bf{e}"),
                        format!("%z2_{e} = OpFMul %v4float %z{e} %z{e}"),
                        format!("%z3_{e} = OpFMul %v4float %z2_{e} %z{e}"),
                        format!("%ia{e} = OpFMul %v4float %z3_{e} %geluA"),
                        format!("%ib{e} = OpFAdd %v4float %z{e} %ia{e}"),
                        format!("%ic{e} = OpFMul %v4float %ib{e} %geluC"),
                        format!("%th{e} = OpExtInst %v4float %glsl Tanh %ic{e}"),
                        format!("%t1{e} = OpFAdd %v4float %th{e} %one4"),
                        format!("%hz{e} = OpFMul %v4float %z{e} %half4"),
                        format!("%g{e} = OpFMul %v4float %hz{e} %t1{e}"),
                        format!("%xp{e} = OpAccessChain %pgv %bufX %c0 %oi{e}"),
                        format!("%xv{e} = OpLoad %v4half %xp{e} Aligned 8"),
                        format!("%xf{e} = OpFConvert %v4float %xv{e}"),
                        format!("%res{e} = OpFAdd %v4float %xf{e} %g{e}"),
                    ];
                    self.lines.extend(lines);
                    format!("%res{e}")
                }
            };
            self.emit(format!("%oh{e} = OpFConvert %v4half {result}"));
            self.emit(format!("%op{e} = OpAccessChain %pgv %bufOut %c0 %oi{e}"));
            self.emit(format!("OpStore %op{e} %oh{e} Aligned 8"));
            self.emit(format!("OpBranch %done{e}"));
            self.emit(format!("%done{e} = OpLabel"));
        }
    }

    /// The module: header, types, constants and variables, then the function.
    fn finish(mut self, g: &Gemm) -> String {
        let t = g.tile;
        let Layout { ta, tb, sums, .. } = t.layout();
        let (stage_a, stage_b) = (t.ks * ta, t.ks * tb);
        for v in [stage_a, stage_b, sums] {
            self.c(v);
        }
        let bias = g.epilogue == Epilogue::BiasGeluResidual;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "; cmdgraph coop_gemm: {}x{}x{} f16, tile {}x{}x{}, {}x{} subgroups, {} K slices, epilogue {:?}",
            g.m, g.n, g.k, t.bm, t.bn, t.bk, t.wm, t.wn, t.ks, g.epilogue
        );
        s.push_str(
            "OpCapability Shader\nOpCapability Float16\nOpCapability StorageBuffer16BitAccess\n\
             OpCapability VulkanMemoryModel\nOpCapability CooperativeMatrixKHR\n\
             OpExtension \"SPV_KHR_cooperative_matrix\"\n%glsl = OpExtInstImport \"GLSL.std.450\"\n\
             OpMemoryModel Logical Vulkan\n",
        );
        let buffers: &[&str] =
            if bias { &["%bufX", "%bufW", "%bufB", "%bufOut"] } else { &["%bufX", "%bufW", "%bufOut"] };
        let _ = writeln!(s, "OpEntryPoint GLCompute %main \"main\" {} %wgid %lidv %shA %shB %shP", buffers.join(" "));
        let _ = writeln!(s, "OpExecutionMode %main LocalSize {} 1 1", g.invocations());
        s.push_str(
            "OpDecorate %wgid BuiltIn WorkgroupId\nOpDecorate %lidv BuiltIn LocalInvocationId\n\
             OpDecorate %rtv ArrayStride 8\nOpMemberDecorate %SV 0 Offset 0\nOpDecorate %SV Block\n",
        );
        for (i, b) in buffers.iter().enumerate() {
            let _ = writeln!(s, "OpDecorate {b} DescriptorSet 0\nOpDecorate {b} Binding {}", i + 1);
            if *b != "%bufOut" {
                let _ = writeln!(s, "OpDecorate {b} NonWritable");
            }
        }
        s.push_str(
            "%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%bool = OpTypeBool\n%uint = OpTypeInt 32 0\n\
             %half = OpTypeFloat 16\n%float = OpTypeFloat 32\n%v3uint = OpTypeVector %uint 3\n\
             %v4half = OpTypeVector %half 4\n%v4float = OpTypeVector %float 4\n%pin = OpTypePointer Input %v3uint\n",
        );
        for v in &self.consts {
            let _ = writeln!(s, "%c{v} = OpConstant %uint {v}");
        }
        let _ = writeln!(
            s,
            "%f0 = OpConstant %float 0\n%f1 = OpConstant %float 1\n%fhalf = OpConstant %float 0.5\n\
             %fA = OpConstant %float 0.044715\n%fC = OpConstant %float 0.7978846\n\
             %geluA = OpConstantComposite %v4float %fA %fA %fA %fA\n\
             %geluC = OpConstantComposite %v4float %fC %fC %fC %fC\n\
             %one4 = OpConstantComposite %v4float %f1 %f1 %f1 %f1\n\
             %half4 = OpConstantComposite %v4float %fhalf %fhalf %fhalf %fhalf\n\
             %rtv = OpTypeRuntimeArray %v4half\n%SV = OpTypeStruct %rtv\n%pSV = OpTypePointer StorageBuffer %SV\n\
             %pgv = OpTypePointer StorageBuffer %v4half\n\
             %arrA = OpTypeArray %v4half %c{stage_a}\n%arrB = OpTypeArray %v4half %c{stage_b}\n\
             %arrP = OpTypeArray %float %c{sums}\n\
             %pwA = OpTypePointer Workgroup %arrA\n%pwB = OpTypePointer Workgroup %arrB\n\
             %pwP = OpTypePointer Workgroup %arrP\n%pwv = OpTypePointer Workgroup %v4half\n\
             %pwf = OpTypePointer Workgroup %float"
        );
        for b in buffers {
            let _ = writeln!(s, "{b} = OpVariable %pSV StorageBuffer");
        }
        s.push_str(
            "%wgid = OpVariable %pin Input\n%lidv = OpVariable %pin Input\n%shA = OpVariable %pwA Workgroup\n\
             %shB = OpVariable %pwB Workgroup\n%shP = OpVariable %pwP Workgroup\n\
             %matA = OpTypeCooperativeMatrixKHR %half %c3 %c16 %c16 %c0\n\
             %matB = OpTypeCooperativeMatrixKHR %half %c3 %c16 %c16 %c1\n\
             %matC = OpTypeCooperativeMatrixKHR %float %c3 %c16 %c16 %c2\n\
             %czero = OpConstantComposite %matC %f0\n",
        );
        for l in &self.lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests;
