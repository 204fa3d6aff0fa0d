//! Transitive reduction of a DAG (filled by its helper).
