//! The one error type of the crate: what went wrong, where in the shader source.

use std::fmt;
use std::ops::Range;

/// Why a shader could not be translated, pointing at the construct in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderError {
    /// Bytes of the shader source the error is about; `0..0` when unknown.
    pub span: Range<usize>,
    /// What is wrong, naming the construct.
    pub message: String,
    /// What to do instead.
    pub help: String,
}

impl ShaderError {
    /// An error at `span` (a naga span; undefined spans become `0..0`).
    pub(crate) fn at(span: naga::Span, message: impl Into<String>, help: impl Into<String>) -> ShaderError {
        ShaderError { span: span.to_range().unwrap_or(0..0), message: message.into(), help: help.into() }
    }

    /// An error at `span`, or at `fallback` when `span` is undefined (naga leaves some
    /// generated statements without a span; the enclosing construct is the next best place).
    pub(crate) fn at_or(
        span: naga::Span,
        fallback: naga::Span,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> ShaderError {
        let span = if span.to_range().is_some_and(|r| !r.is_empty()) { span } else { fallback };
        ShaderError::at(span, message, help)
    }

    /// Clamps the span into `source` so that slicing the source with it never panics.
    pub(crate) fn clamped(mut self, source: &str) -> ShaderError {
        let len = source.len();
        let mut start = self.span.start.min(len);
        let mut end = self.span.end.clamp(start, len);
        while !source.is_char_boundary(start) {
            start -= 1;
        }
        while !source.is_char_boundary(end) {
            end += 1;
        }
        self.span = start..end;
        self
    }
}

impl fmt::Display for ShaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (bytes {}..{})", self.message, self.span.start, self.span.end)?;
        if !self.help.is_empty() {
            write!(f, "; help: {}", self.help)?;
        }
        Ok(())
    }
}

impl std::error::Error for ShaderError {}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, ShaderError>;
