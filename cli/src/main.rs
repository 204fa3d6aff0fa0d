//! The `cmdgraph` command-line tool.
fn main() {}
