//! Model-shaped workloads for planning: graphs in `.cgir` text, deterministic per seed.
//!
//! A workload is a *tensor program*: op `i` reads earlier tensors and writes tensor `i`
//! (a graph-owned allocation of its own size). It is recorded the way an application would
//! record it from one or more in-order queues: per op an `async_malloc` and a kernel on the
//! op's queue, then an `async_free` for each tensor whose last reader this was; readers on
//! other queues are joined with event edges. Tensors nothing reads are copied to `@out`.
//! Every kernel computes `out[i] = (c * a[i] + b[i]) / 2` over the first `base` elements, so
//! the same graphs run on the interpreter with separate and pooled allocations.
//!
//! Shapes: [`Shape::LayerStack`] (a residual stack: each layer reads the previous one and
//! the one `skip` back), [`Shape::EncoderDecoder`] (U-Net: sizes halve going down, the decoder
//! reads the mirrored encoder tensor), [`Shape::RandomDag`] (each op reads 1 to 3 of the last
//! `window` tensors).

use std::fmt::Write;

/// The shape of a generated tensor program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Residual layers: op `i` reads `i - 1` and, every `skip` layers, `i - skip`.
    LayerStack {
        /// Skip-connection distance.
        skip: usize,
    },
    /// U-Net blocks of `levels` down and `levels` up.
    EncoderDecoder {
        /// Levels per block.
        levels: usize,
    },
    /// Random reads among the last `window` tensors.
    RandomDag {
        /// How far back an op may read.
        window: usize,
    },
}

/// How tensor sizes are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sizes {
    /// Every tensor has `base` elements (times the shape's level factor).
    Uniform,
    /// `base` times a log-uniform factor in 1..=`max_factor`.
    Mixed {
        /// Largest factor.
        max_factor: u64,
    },
}

/// A workload description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The shape.
    pub shape: Shape,
    /// Number of ops (= allocations).
    pub ops: usize,
    /// Number of in-order queues the ops are spread over.
    pub queues: usize,
    /// Elements every kernel computes (and the smallest tensor).
    pub base: u64,
    /// Size distribution.
    pub sizes: Sizes,
    /// Random seed.
    pub seed: u64,
}

/// A generated tensor program (built by [`Spec::program`], which keeps its parts
/// consistent: one entry per op everywhere, inputs naming earlier ops).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Program {
    /// Per op: element count of its tensor.
    counts: Vec<u64>,
    /// Per op: the tensors it reads (0 to 3, earlier ops).
    inputs: Vec<Vec<usize>>,
    /// Per op: its queue.
    queue: Vec<usize>,
    /// Elements every kernel computes.
    base: u64,
}

/// splitmix64: a small deterministic generator (no dependency, same numbers everywhere).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

impl Spec {
    /// The tensor program.
    pub fn program(&self) -> Program {
        let mut rng = Rng::new(self.seed);
        let n = self.ops;
        let queues = self.queues.max(1);
        let mut counts = Vec::with_capacity(n);
        let mut inputs = Vec::with_capacity(n);
        let mut queue = Vec::with_capacity(n);
        for i in 0..n {
            let (level_factor, ins): (u64, Vec<usize>) = match self.shape {
                Shape::LayerStack { skip } => {
                    let skip = skip.max(2);
                    let mut ins = Vec::new();
                    if i >= 1 {
                        ins.push(i - 1);
                    }
                    if i >= skip && i % skip == 0 {
                        ins.push(i - skip);
                    }
                    (1, ins)
                }
                Shape::EncoderDecoder { levels } => {
                    let levels = levels.max(1);
                    let block = 2 * levels;
                    let j = i % block;
                    let start = i - j;
                    let depth = if j < levels { j } else { block - 1 - j };
                    let mut ins = Vec::new();
                    if i >= 1 {
                        ins.push(i - 1);
                    }
                    if j >= levels {
                        // Decoder step j reads the encoder tensor at the same depth.
                        ins.push(start + (block - 1 - j));
                    }
                    (1u64 << (levels - 1 - depth.min(levels - 1)).min(16), ins)
                }
                Shape::RandomDag { window } => {
                    let window = window.max(1);
                    let mut ins = Vec::new();
                    if i >= 1 {
                        let k = 1 + rng.below(3) as usize;
                        for _ in 0..k {
                            let back = 1 + rng.below(window.min(i) as u64) as usize;
                            ins.push(i - back);
                        }
                        ins.sort_unstable();
                        ins.dedup();
                    }
                    (1, ins)
                }
            };
            let mut ins = ins;
            ins.sort_unstable();
            ins.dedup();
            let factor = match self.sizes {
                Sizes::Uniform => 1,
                Sizes::Mixed { max_factor } => {
                    // Log-uniform: a random power of two, then a random multiple below it.
                    let bits = 64 - max_factor.max(1).leading_zeros() as u64;
                    let hi = 1u64 << rng.below(bits);
                    (hi + rng.below(hi)).clamp(1, max_factor.max(1))
                }
            };
            counts.push(self.base.max(1) * level_factor * factor);
            inputs.push(ins);
            queue.push(match self.shape {
                // Layers alternate between queues in runs, like two streams.
                Shape::LayerStack { .. } | Shape::EncoderDecoder { .. } => (i / 4) % queues,
                Shape::RandomDag { .. } => rng.below(queues as u64) as usize,
            });
        }
        Program { counts, inputs, queue, base: self.base.max(1) }
    }
}

impl Program {
    /// Number of ops (= allocations).
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether there are no ops.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Tensors nothing reads, in op order (they are copied to `@out`).
    pub fn sinks(&self) -> Vec<usize> {
        let mut read = vec![false; self.counts.len()];
        for ins in &self.inputs {
            for &t in ins {
                read[t] = true;
            }
        }
        (0..self.counts.len()).filter(|&i| !read[i]).collect()
    }

    /// The program as a module with one graph `@g`, kernel `@op`, input `@x` and output `@out`.
    pub fn to_text(&self) -> String {
        let n = self.counts.len();
        let base = self.base;
        let sinks = self.sinks();
        let queues = self.queue.iter().copied().max().map_or(1, |q| q + 1);
        let mut last_reader = vec![usize::MAX; n];
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, ins) in self.inputs.iter().enumerate() {
            for &t in ins {
                last_reader[t] = i;
                readers[t].push(i);
            }
        }
        let mut out = String::new();
        out.push_str(
            "kernel @op(%a: buf<f32, read>, %b: buf<f32, read>, %out: buf<f32, write>, %c: f32) {\n  \
             %i = global_id 0\n  %av = load %a[%i]\n  %bv = load %b[%i]\n  %s = fma %c, %av, %bv\n  \
             %h = const 0.5 : f32\n  %r = mul %s, %h\n  store %out[%i], %r\n}\n\n",
        );
        let _ = writeln!(out, "usm @x : f32[{base}]");
        let _ = writeln!(out, "usm @out : f32[{}]\n", base * sinks.len().max(1) as u64);
        out.push_str("graph @g {\n");
        for q in 0..queues {
            let _ = writeln!(out, "  queue @q{q} in_order");
        }
        let mut prev: Vec<Option<String>> = vec![None; queues];
        let mut sink_slot = vec![usize::MAX; n];
        for (k, &s) in sinks.iter().enumerate() {
            sink_slot[s] = k;
        }
        let emit = |out: &mut String,
                    prev: &mut Vec<Option<String>>,
                    q: usize,
                    name: String,
                    cmd: String,
                    events: &[String]| {
            let mut deps: Vec<String> = Vec::new();
            if let Some(p) = &prev[q] {
                deps.push(format!("{p} via in_order"));
            }
            for e in events {
                if Some(e) != prev[q].as_ref() && !deps.iter().any(|d| d.starts_with(&format!("{e} "))) {
                    deps.push(format!("{e} via event"));
                }
            }
            let after = if deps.is_empty() { String::new() } else { format!(" after({})", deps.join(", ")) };
            let _ = writeln!(out, "  {name} = {cmd} on @q{q}{after}");
            prev[q] = Some(name);
        };
        for (i, &q) in self.queue.iter().enumerate() {
            emit(&mut out, &mut prev, q, format!("%m{i}"), format!("async_malloc f32[{}]", self.counts[i]), &[]);
            let arg = |t: Option<&usize>| t.map_or("@x".to_string(), |t| format!("%m{t}"));
            let ins = &self.inputs[i];
            let (a, b) = (arg(ins.first()), arg(ins.get(1).or(ins.first())));
            let c = 0.25 + (i % 4) as f64 * 0.25;
            // Readers wait for the producer's last command (its second launch, if any).
            let last = |t: usize| if self.inputs[t].len() > 2 { format!("%j{t}") } else { format!("%k{t}") };
            let events: Vec<String> = ins.iter().filter(|&&t| self.queue[t] != q).map(|&t| last(t)).collect();
            emit(
                &mut out,
                &mut prev,
                q,
                format!("%k{i}"),
                format!("kernel @op range({base}) args({a}, {b}, %m{i}, {c:?})"),
                &events,
            );
            // A third input is read too, through a second launch, so every listed input is used.
            if let Some(t) = ins.get(2) {
                let ev: Vec<String> = if self.queue[*t] != q { vec![last(*t)] } else { Vec::new() };
                emit(
                    &mut out,
                    &mut prev,
                    q,
                    format!("%j{i}"),
                    format!("kernel @op range({base}) args(%m{i}, %m{t}, %m{i}, 1.0)"),
                    &ev,
                );
            }
            if sink_slot[i] != usize::MAX {
                let off = sink_slot[i] as u64 * base * 4;
                emit(
                    &mut out,
                    &mut prev,
                    q,
                    format!("%c{i}"),
                    format!("memcpy @out + {off}, %m{i}, {}", base * 4),
                    &[],
                );
                emit(&mut out, &mut prev, q, format!("%f{i}"), format!("async_free %m{i}"), &[]);
            }
            for &t in ins.iter() {
                if last_reader[t] == i {
                    let events: Vec<String> = readers[t]
                        .iter()
                        .filter(|&&r| self.queue[r] != q)
                        .map(|&r| if self.inputs[r].get(2) == Some(&t) { format!("%j{r}") } else { format!("%k{r}") })
                        .collect();
                    emit(&mut out, &mut prev, q, format!("%f{t}"), format!("async_free %m{t}"), &events);
                }
            }
        }
        out.push_str("}\n");
        out
    }
}

/// A graph whose allocations live exactly on the given time intervals: `(lower, upper,
/// size in bytes)`, live on `[lower, upper)` as in MiniMalloc's CSV format. A chain of empty
/// "tick" nodes stands for time; an allocation's malloc follows the tick of its `lower`, its
/// free precedes the tick of its `upper`, so `a ≺ b` iff `upper_a <= lower_b`.
pub fn intervals_text(intervals: &[(u64, u64, u64)]) -> String {
    let mut coords: Vec<u64> = intervals.iter().flat_map(|&(l, u, _)| [l, u]).collect();
    coords.sort_unstable();
    coords.dedup();
    let tick = |c: u64| coords.partition_point(|&x| x < c);
    let mut starting: Vec<Vec<usize>> = vec![Vec::new(); coords.len()];
    let mut ending: Vec<Vec<usize>> = vec![Vec::new(); coords.len()];
    for (i, &(l, u, _)) in intervals.iter().enumerate() {
        starting[tick(l)].push(i);
        ending[tick(u)].push(i);
    }
    let mut out = String::from("graph @g {\n");
    for k in 0..coords.len() {
        let mut deps: Vec<String> = if k > 0 { vec![format!("%t{}", k - 1)] } else { Vec::new() };
        deps.extend(ending[k].iter().map(|i| format!("%f{i}")));
        let after = if deps.is_empty() { String::new() } else { format!(" after({})", deps.join(", ")) };
        let _ = writeln!(out, "  %t{k} = empty{after}");
        for &i in &starting[k] {
            let size = intervals[i].2;
            let _ = writeln!(out, "  %m{i} = async_malloc bool[{size}] after(%t{k})");
            let _ = writeln!(out, "  %f{i} = async_free %m{i} after(%m{i})");
        }
    }
    out.push_str("}\n");
    out
}

/// Parses MiniMalloc's CSV (`id,lower,upper,size` with a header line) into intervals.
pub fn parse_minimalloc_csv(text: &str) -> Result<Vec<(u64, u64, u64)>, String> {
    let mut out = Vec::new();
    for (no, line) in text.lines().enumerate().skip(1) {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split(',').collect();
        let num = |k: usize| -> Result<u64, String> {
            cols.get(k)
                .and_then(|c| c.trim().parse().ok())
                .ok_or_else(|| format!("line {}: column {} is not a number", no + 1, k + 1))
        };
        let (l, u, s) = (num(1)?, num(2)?, num(3)?);
        if u <= l {
            return Err(format!("line {}: empty interval [{l}, {u})", no + 1));
        }
        out.push((l, u, s));
    }
    Ok(out)
}
