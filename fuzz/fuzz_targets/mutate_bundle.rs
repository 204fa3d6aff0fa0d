//! Structural mutations of a bundle, steered by the fuzzer's bytes: shared by the
//! `load_bundle` and `run_bundle` targets.

use cmdgraph_ir::bundle::{ArgFieldKind, Bundle, MemorySlot, Segment};

/// A little-endian word stream from the input, for steering the mutations.
pub struct Steer<'a> {
    pub data: &'a [u8],
    pub at: usize,
}

impl Steer<'_> {
    pub fn next(&mut self) -> u32 {
        let mut w = [0u8; 4];
        for b in &mut w {
            *b = self.data.get(self.at % self.data.len().max(1)).copied().unwrap_or(0);
            self.at += 1;
        }
        u32::from_le_bytes(w)
    }
}

pub fn mutate(b: &Bundle, s: &mut Steer, which: u32) -> Bundle {
    let mut b = b.clone();
    let k = (s.next() as usize) % b.kernels.len().max(1);
    match which % 12 {
        0 => {
            if let Some(kernel) = b.kernels.get_mut(k) {
                let i = (s.next() as usize) % kernel.spirv.len().max(1);
                if let Some(w) = kernel.spirv.get_mut(i) {
                    *w = s.next();
                }
            }
        }
        1 => {
            if let Some(kernel) = b.kernels.get_mut(k) {
                let n = (s.next() as usize) % (kernel.spirv.len() + 1);
                kernel.spirv.truncate(n);
            }
        }
        2 => {
            if let Some(f) = b.kernels.get_mut(k).and_then(|k| k.layout.fields.first_mut()) {
                f.offset = s.next();
            }
        }
        3 => {
            if let Some(kernel) = b.kernels.get_mut(k) {
                kernel.layout.block_size = s.next();
                kernel.workgroup_size[(s.next() % 3) as usize] = s.next() % 4;
                kernel.items_per_invocation = s.next() % 3;
            }
        }
        4 => {
            if let Some(kernel) = b.kernels.get_mut(k) {
                kernel.layout.slots.push(MemorySlot::DeviceGlobal { name: format!("g{}", s.next()), writes: true });
                if let Some(f) = kernel.layout.fields.last_mut() {
                    f.kind = ArgFieldKind::Buffer { slot: s.next() % 8, elem_bytes: s.next() % 9 };
                }
            }
        }
        5 => {
            let n = (s.next() as usize) % (b.optimized.len() + 1);
            let cut = (0..=n).rev().find(|&i| b.optimized.is_char_boundary(i)).unwrap_or(0);
            b.optimized.truncate(cut);
        }
        6 => {
            let n = (s.next() as usize) % (b.source.len() + 1);
            let cut = (0..=n).rev().find(|&i| b.source.is_char_boundary(i)).unwrap_or(0);
            b.source.truncate(cut);
        }
        7 => b.format_version = s.next() % 3,
        8 => {
            if let Some(g) = b.graphs.first_mut() {
                g.memory.size = u64::from(s.next());
                g.memory.offsets.push((format!("n{}", s.next() % 4), u64::from(s.next())));
                g.segments.push(Segment::Host { node: format!("k{}", s.next() % 4) });
            }
        }
        9 => {
            let first = b.kernels.first().map(|k| k.kernel.clone()).unwrap_or_default();
            if let Some(kernel) = b.kernels.get_mut(k) {
                kernel.entry = String::from_utf8_lossy(&s.next().to_le_bytes()).into_owned();
                kernel.kernel = first;
            }
        }
        10 => {
            if let Some(kernel) = b.kernels.get(k).cloned() {
                b.kernels.push(kernel);
            }
        }
        _ => {
            if !b.kernels.is_empty() {
                b.kernels.remove(k);
            }
        }
    }
    b
}
