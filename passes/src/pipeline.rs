//! The pipeline runner (filled by its helper).
