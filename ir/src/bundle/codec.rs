//! The payload of a bundle file: every field of [`Bundle`] but the version and the hash, in
//! declaration order, as LEB128 integers, length-prefixed UTF-8 strings and raw bytes
//! (docs/bundle.md, "Format"). Decoding never panics and never allocates more than the
//! input can hold: every count is checked against the bytes left before anything is
//! reserved, and against a budget of memory for the decoded values (a string costs 24 bytes
//! for its one encoded byte of length, so "the bytes left" alone would let a payload of
//! empty names take 24 times its size); an error names the byte offset and the field being
//! read.

use super::{
    ArgField, ArgFieldKind, ArgLayout, Bundle, CompiledKernel, GraphPlan, LaunchVariant, MemorySlot, NodeOrigin,
    PoolPlan, Segment,
};

/// Writes the payload of `b` (everything but `format_version` and `content_hash`).
pub(super) fn encode(b: &Bundle) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(b.source.len() + b.optimized.len() + 4096));
    w.str(&b.source);
    w.str(&b.optimized);
    w.str(&b.pipeline);
    w.uint(b.kernels.len() as u64);
    for k in &b.kernels {
        w.str(&k.kernel);
        w.str(&k.entry);
        for d in k.workgroup_size {
            w.uint(d.into());
        }
        w.uint(k.items_per_invocation.into());
        w.uint(k.spirv.len() as u64);
        for word in &k.spirv {
            w.0.extend_from_slice(&word.to_le_bytes());
        }
        let l = &k.layout;
        w.uint(l.block_size.into());
        w.uint(l.fields.len() as u64);
        for f in &l.fields {
            w.uint(f.offset.into());
            match f.kind {
                ArgFieldKind::Value { bytes } => {
                    w.uint(0);
                    w.uint(bytes.into());
                }
                ArgFieldKind::Buffer { slot, elem_bytes } => {
                    w.uint(1);
                    w.uint(slot.into());
                    w.uint(elem_bytes.into());
                }
                ArgFieldKind::Local { capacity, elem_bytes } => {
                    w.uint(2);
                    w.uint(capacity);
                    w.uint(elem_bytes.into());
                }
            }
        }
        w.uint(l.slots.len() as u64);
        for s in &l.slots {
            match s {
                MemorySlot::Param { param, writes } => {
                    w.uint(0);
                    w.uint((*param).into());
                    w.uint((*writes).into());
                }
                MemorySlot::DeviceGlobal { name, writes } => {
                    w.uint(1);
                    w.str(name);
                    w.uint((*writes).into());
                }
                MemorySlot::Predicate => w.uint(2),
                MemorySlot::LoopPredicate { condition_param } => {
                    w.uint(3);
                    w.uint((*condition_param).into());
                }
            }
        }
    }
    w.uint(b.graphs.len() as u64);
    for g in &b.graphs {
        w.str(&g.name);
        w.uint(g.segments.len() as u64);
        for s in &g.segments {
            match s {
                Segment::Device { stages } => {
                    w.uint(0);
                    w.uint(stages.len() as u64);
                    for stage in stages {
                        w.uint(stage.len() as u64);
                        for n in stage {
                            w.str(n);
                        }
                    }
                }
                Segment::Host { node } => {
                    w.uint(1);
                    w.str(node);
                }
            }
        }
        let m = &g.memory;
        w.uint(m.size);
        w.uint(m.alignment);
        w.uint(m.offsets.len() as u64);
        for (n, o) in &m.offsets {
            w.str(n);
            w.uint(*o);
        }
        w.str(&m.report);
        w.uint(g.origins.len() as u64);
        for o in &g.origins {
            w.str(&o.node);
            w.uint(o.sources.len() as u64);
            for (graph, node) in &o.sources {
                w.str(graph);
                w.str(node);
            }
        }
        w.uint(g.launches.len() as u64);
        for l in &g.launches {
            w.str(&l.node);
            w.uint(l.alternative.map_or(0, |a| u64::from(a) + 1));
            w.uint(l.kernel.into());
        }
    }
    w.0
}

/// Reads a payload written by [`encode`]; `format_version` and `content_hash` are left for
/// the caller. The decoded values may take at most `budget` bytes of memory (each list
/// counts `size_of` of its items, each string 24 bytes plus its text, before it is made).
/// `Err` is (byte offset, what was being read, what is wrong).
pub(super) fn decode(bytes: &[u8], budget: u64) -> Result<Bundle, (usize, &'static str, String)> {
    let mut r = Reader { bytes, at: 0, what: "source", budget };
    let source = r.str()?;
    r.what = "optimized";
    let optimized = r.str()?;
    r.what = "pipeline";
    let pipeline = r.str()?;
    r.what = "kernels";
    let n = r.count::<CompiledKernel>(8)?;
    let mut kernels = Vec::with_capacity(n);
    for _ in 0..n {
        r.what = "kernel name";
        let kernel = r.str()?;
        r.what = "kernel entry point";
        let entry = r.str()?;
        r.what = "kernel work-group size";
        let workgroup_size = [r.u32()?, r.u32()?, r.u32()?];
        r.what = "kernel items per invocation";
        let items_per_invocation = r.u32()?;
        r.what = "kernel SPIR-V";
        let words = r.count::<u32>(4)?;
        let raw = r.take(words * 4)?;
        let spirv = raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        r.what = "argument block size";
        let block_size = r.u32()?;
        r.what = "argument fields";
        let nf = r.count::<ArgField>(3)?;
        let mut fields = Vec::with_capacity(nf);
        for _ in 0..nf {
            let offset = r.u32()?;
            let kind = match r.u32()? {
                0 => ArgFieldKind::Value { bytes: r.u32()? },
                1 => ArgFieldKind::Buffer { slot: r.u32()?, elem_bytes: r.u32()? },
                2 => ArgFieldKind::Local { capacity: r.uint()?, elem_bytes: r.u32()? },
                t => return Err(r.fail(format!("unknown field kind {t}"))),
            };
            fields.push(ArgField { offset, kind });
        }
        r.what = "memory slots";
        let ns = r.count::<MemorySlot>(3)?;
        let mut slots = Vec::with_capacity(ns);
        for _ in 0..ns {
            let slot = match r.u32()? {
                0 => MemorySlot::Param { param: r.u32()?, writes: r.bool()? },
                1 => MemorySlot::DeviceGlobal { name: r.str()?, writes: r.bool()? },
                2 => MemorySlot::Predicate,
                3 => MemorySlot::LoopPredicate { condition_param: r.u32()? },
                t => return Err(r.fail(format!("unknown slot kind {t}"))),
            };
            slots.push(slot);
        }
        let layout = ArgLayout { block_size, fields, slots };
        kernels.push(CompiledKernel { kernel, entry, workgroup_size, items_per_invocation, spirv, layout });
    }
    r.what = "graphs";
    let ng = r.count::<GraphPlan>(7)?;
    let mut graphs = Vec::with_capacity(ng);
    for _ in 0..ng {
        r.what = "graph name";
        let name = r.str()?;
        r.what = "segments";
        let nseg = r.count::<Segment>(2)?;
        let mut segments = Vec::with_capacity(nseg);
        for _ in 0..nseg {
            let seg = match r.u32()? {
                0 => {
                    let nst = r.count::<Vec<String>>(1)?;
                    let mut stages = Vec::with_capacity(nst);
                    for _ in 0..nst {
                        let nn = r.count::<String>(1)?;
                        let mut stage = Vec::with_capacity(nn);
                        for _ in 0..nn {
                            stage.push(r.str()?);
                        }
                        stages.push(stage);
                    }
                    Segment::Device { stages }
                }
                1 => Segment::Host { node: r.str()? },
                t => return Err(r.fail(format!("unknown segment kind {t}"))),
            };
            segments.push(seg);
        }
        r.what = "pool plan";
        let size = r.uint()?;
        let alignment = r.uint()?;
        let no = r.count::<(String, u64)>(2)?;
        let mut offsets = Vec::with_capacity(no);
        for _ in 0..no {
            offsets.push((r.str()?, r.uint()?));
        }
        r.what = "pool report";
        let report = r.str()?;
        r.what = "origins";
        let nor = r.count::<NodeOrigin>(2)?;
        let mut origins = Vec::with_capacity(nor);
        for _ in 0..nor {
            let node = r.str()?;
            let nsrc = r.count::<(String, String)>(2)?;
            let mut sources = Vec::with_capacity(nsrc);
            for _ in 0..nsrc {
                sources.push((r.str()?, r.str()?));
            }
            origins.push(NodeOrigin { node, sources });
        }
        r.what = "launch table";
        let nl = r.count::<LaunchVariant>(3)?;
        let mut launches = Vec::with_capacity(nl);
        for _ in 0..nl {
            let node = r.str()?;
            let alternative = match r.uint()? {
                0 => None,
                a => Some(u32::try_from(a - 1).map_err(|_| r.fail(format!("alternative {} too large", a - 1)))?),
            };
            let kernel = r.u32()?;
            launches.push(LaunchVariant { node, alternative, kernel });
        }
        graphs.push(GraphPlan {
            name,
            segments,
            memory: PoolPlan { size, alignment, offsets, report },
            origins,
            launches,
        });
    }
    r.what = "end of payload";
    if r.at != bytes.len() {
        return Err(r.fail(format!("{} bytes after the last field", bytes.len() - r.at)));
    }
    Ok(Bundle { format_version: 0, content_hash: String::new(), source, optimized, pipeline, kernels, graphs })
}

struct Writer(Vec<u8>);

impl Writer {
    /// LEB128.
    fn uint(&mut self, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    fn str(&mut self, s: &str) {
        self.uint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
    /// Bytes of memory the decoded values may still take.
    budget: u64,
}

impl<'a> Reader<'a> {
    fn fail(&self, message: String) -> (usize, &'static str, String) {
        (self.at, self.what, message)
    }

    fn uint(&mut self) -> Result<u64, (usize, &'static str, String)> {
        let start = self.at;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.at) else {
                self.at = start;
                return Err(self.fail("truncated integer".into()));
            };
            self.at += 1;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                self.at = start;
                return Err(self.fail("integer overflows 64 bits".into()));
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.at = start;
        Err(self.fail("integer overflows 64 bits".into()))
    }

    fn u32(&mut self) -> Result<u32, (usize, &'static str, String)> {
        let start = self.at;
        let v = self.uint()?;
        u32::try_from(v).map_err(|_| {
            self.at = start;
            self.fail(format!("{v} does not fit 32 bits"))
        })
    }

    fn bool(&mut self) -> Result<bool, (usize, &'static str, String)> {
        match self.uint()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.fail(format!("{v} is not a flag (0 or 1)"))),
        }
    }

    /// A count of items of type `T` each at least `min_bytes` long: more than the bytes
    /// left could hold, or more memory than the budget has left, is an error before
    /// anything is allocated for them.
    fn count<T>(&mut self, min_bytes: usize) -> Result<usize, (usize, &'static str, String)> {
        let start = self.at;
        let n = self.uint()?;
        let left = (self.bytes.len() - self.at) as u64;
        if n.saturating_mul(min_bytes as u64) > left {
            self.at = start;
            return Err(self.fail(format!("{n} items but only {left} bytes left")));
        }
        self.charge(n.saturating_mul(std::mem::size_of::<T>() as u64)).inspect_err(|_| self.at = start)?;
        Ok(n as usize)
    }

    /// Takes `bytes` from the budget, or fails naming it (a payload that decodes to far
    /// more memory than it takes is crafted: real bundles stay well under the budget).
    fn charge(&mut self, bytes: u64) -> Result<(), (usize, &'static str, String)> {
        match self.budget.checked_sub(bytes) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => Err(self.fail(format!(
                "the decoded values would take more than {} times the payload's size in memory \
                 (docs/bundle.md, \"Reading a bundle\")",
                super::DECODE_BUDGET_FACTOR
            ))),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], (usize, &'static str, String)> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.fail(format!("{n} bytes but only {} left", self.bytes.len() - self.at)));
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    /// A string: its text counts against the budget (its 24-byte `String` is counted by
    /// the list or value holding it).
    fn str(&mut self) -> Result<String, (usize, &'static str, String)> {
        let n = self.count::<u8>(1)?;
        let start = self.at;
        let raw = self.take(n)?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => {
                self.at = start + e.valid_up_to();
                Err(self.fail("invalid UTF-8 in a string".into()))
            }
        }
    }
}
