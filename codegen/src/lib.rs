//! cmdgraph-codegen (filled by its own issue).
