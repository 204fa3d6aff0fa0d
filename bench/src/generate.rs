//! Synthetic but realistic graphs as `.cgir` text, of any size.
//!
//! The graph is a sequence of blocks of ten nodes that look like what an application records:
//! a graph-owned temporary (`async_malloc`), kernels with pointer and scalar arguments that
//! produce and consume it, a memcpy and a memset on user USM, the temporary's `async_free`,
//! and an empty join node that the next block depends on. Some kernels also depend on a node
//! a few blocks back, so name lookup is not always of the previous line. A seeded generator
//! picks the buffers, so the text is identical run after run.

use std::fmt::Write;

/// Nodes per block (see the module doc).
pub const BLOCK: usize = 10;

/// USM allocations the kernels read and write.
const USM: usize = 16;

/// Elements per USM allocation and per temporary.
const ELEMS: usize = 4096;

/// splitmix64, so the generated text does not depend on a crate's version.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// The kernels and memory every generated module starts with.
fn prelude(out: &mut String) {
    out.push_str(
        "kernel @axpy(%x: buf<f32, read>, %y: buf<f32, read_write>, %a: f32) {
  %i = global_id 0
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = fma %a, %xv, %yv
  store %y[%i], %r
}

kernel @scale(%in: buf<f32, read>, %out: buf<f32, write>, %s: f32) {
  %i = global_id 0
  %v = load %in[%i]
  %r = mul %v, %s
  store %out[%i], %r
}
",
    );
    for u in 0..USM {
        let _ = write!(out, "\nusm @u{u} : f32[{ELEMS}]\n");
    }
}

/// A module with one graph of `nodes` nodes (rounded up to whole blocks), as canonical text.
pub fn module_text(nodes: usize) -> String {
    let blocks = nodes.div_ceil(BLOCK).max(1);
    let mut rng = Rng(0x5EED_CAFE);
    let mut out = String::with_capacity(blocks * BLOCK * 90 + 4096);
    prelude(&mut out);
    out.push_str("\ngraph @big {\n");
    let bytes = ELEMS * 4;
    for b in 0..blocks {
        let (x, y, z, w) = (rng.below(USM), rng.below(USM), rng.below(USM), rng.below(USM));
        let after_join = if b == 0 { String::new() } else { format!(" after(%j{})", b - 1) };
        let _ = writeln!(out, "  %m{b} = async_malloc f32[{ELEMS}]{after_join}");
        let _ = writeln!(out, "  %a{b} = kernel @scale range({ELEMS}) args(@u{x}, %m{b}, 2.0) after(%m{b})");
        let _ = writeln!(out, "  %b{b} = kernel @axpy range({ELEMS}) args(%m{b}, @u{y}, 0.5) after(%a{b})");
        // A long-range edge as well: to the join four blocks back, when there is one.
        let far = if b >= 4 { format!(", %j{}", b - 4) } else { String::new() };
        let _ = writeln!(out, "  %c{b} = kernel @axpy range({ELEMS}) args(@u{z}, @u{y}, -1.5) after(%b{b}{far})");
        let _ = writeln!(out, "  %d{b} = memcpy @u{w}, @u{y}, {bytes} after(%c{b})");
        let _ = writeln!(out, "  %e{b} = memset @u{x}, 0, {bytes} after(%a{b})");
        let _ = writeln!(out, "  %g{b} = kernel @scale range({ELEMS}) args(@u{w}, @u{z}, 3.0) after(%d{b}, %e{b})");
        let _ = writeln!(out, "  %h{b} = kernel @axpy range({ELEMS}) args(%m{b}, @u{w}, 1.25) after(%b{b}, %g{b})");
        let _ = writeln!(out, "  %f{b} = async_free %m{b} after(%h{b})");
        let _ = writeln!(out, "  %j{b} = empty after(%f{b}, %g{b})");
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_text_parses_verifies_and_is_canonical() {
        let text = module_text(1000);
        let module = cmdgraph_ir::text::parse(&text)
            .unwrap_or_else(|d| panic!("{}", cmdgraph_ir::diag::render_all(&d, "gen.cgir", &text)));
        if let Err(d) = cmdgraph_ir::verify::verify(&module) {
            panic!("{}", cmdgraph_ir::diag::render_all(&d, "gen.cgir", &text));
        }
        let graph = module.graphs.iter().next().map(|(_, g)| g).unwrap_or_else(|| panic!("no graph"));
        assert_eq!(graph.nodes.len(), 1000);
        assert_eq!(cmdgraph_ir::text::print(&module), text, "generated text is not canonical");
    }

    #[test]
    fn generation_is_deterministic_and_scales() {
        assert_eq!(module_text(200), module_text(200));
        let small = module_text(100).len();
        let large = module_text(1000).len();
        assert!(large > 9 * small / 2 && large < 11 * small, "{small} -> {large}");
    }
}
