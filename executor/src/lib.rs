//! cmdgraph-executor (filled by its own issue).
