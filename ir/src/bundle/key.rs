//! The structural key of a precompiled graph: how an application that builds a graph with
//! the API finds, at finalize, the bundle `cmdgraph compile --bundle-dir` made for it
//! (docs/bundle.md, "Keys").
//!
//! The key is `cgk1-` followed by the SHA-256, in lowercase hex, of the module's canonical
//! text (`text::print`) with its last graph renamed `@_`: its memory objects, kernels and
//! graphs, the executable graph with its finalize properties (`updatable`,
//! `enable_profiling`). The SYCL layer finalizes into a snapshot module whose last graph is
//! the executable one; its name is the API's counter (`g0`, `g1`, ...) and says nothing
//! about the graph, so it is left out: the same construction gives the same key whichever
//! graph object made it, and any change to a kernel, a memory object, a node, an edge, a
//! launch, an argument or a property gives another. The printer is the parser's exact
//! inverse, so a module exported as text and parsed again by the compiler keeps its key.

use crate::module::Module;
use crate::text;
use sha2::{Digest, Sha256};

/// The key's version prefix: a change to what the key covers changes it.
pub const KEY_PREFIX: &str = "cgk1-";

/// The structural key of `module` (see the module documentation).
pub fn graph_key(module: &Module) -> String {
    let mut canonical = module.clone();
    if let Some((_, last)) = canonical.graphs.iter_mut().last() {
        last.name = "_".to_string();
    }
    let digest = Sha256::digest(text::print(&canonical).as_bytes());
    let mut key = String::with_capacity(KEY_PREFIX.len() + 64);
    key.push_str(KEY_PREFIX);
    for b in digest {
        key.push_str(&format!("{b:02x}"));
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "usm @x : f32[4]\nkernel @k(%x: buf<f32, write>) {\n  %i = global_id 0\n  %f = cast %i to f32\n  store %x[%i], %f\n}\ngraph @g {\n  %n = kernel @k range(4) args(@x)\n}\n";

    #[test]
    fn the_key_survives_printing_and_parsing_and_changes_with_the_graph() {
        let m = text::parse(SRC).unwrap();
        let key = graph_key(&m);
        assert!(key.starts_with(KEY_PREFIX) && key.len() == KEY_PREFIX.len() + 64, "{key}");
        assert_eq!(graph_key(&text::parse(&text::print(&m)).unwrap()), key);
        assert_eq!(graph_key(&text::parse(&SRC.replace("@g", "@other")).unwrap()), key, "the name is not part of it");
        for changed in
            [SRC.replace("range(4)", "range(2)"), SRC.replace("graph @g {", "graph @g properties(updatable) {")]
        {
            assert_ne!(graph_key(&text::parse(&changed).unwrap()), key, "{changed}");
        }
    }
}
