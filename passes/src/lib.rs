//! cmdgraph-passes (filled by its own issue).
