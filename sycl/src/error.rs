//! SYCL's synchronous exceptions as a Rust error value.
//!
//! Every error the API raises carries the SYCL `errc` it stands for and the row of the
//! error table in `seed-features.md` §22 that defines it (row 0 for the few errors the
//! spec leaves to the implementation, e.g. a kernel argument that does not fit its
//! parameter). `docs/semantics.md` maps every row to the test that shows it.

use std::fmt;

/// The SYCL `errc` values the graph extension uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Errc {
    /// `errc::invalid`
    Invalid,
    /// `errc::feature_not_supported`
    FeatureNotSupported,
    /// `errc::kernel_not_supported`
    KernelNotSupported,
}

impl Errc {
    /// The C++ spelling, e.g. `invalid`.
    pub fn name(self) -> &'static str {
        match self {
            Errc::Invalid => "invalid",
            Errc::FeatureNotSupported => "feature_not_supported",
            Errc::KernelNotSupported => "kernel_not_supported",
        }
    }
}

/// A synchronous SYCL exception: the error code, the §22 row it implements and a message
/// that names the API call, what is wrong and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyclError {
    /// The `errc` value.
    pub code: Errc,
    /// The row of `seed-features.md` §22 (0: an implementation-defined error).
    pub row: u32,
    /// What went wrong.
    pub message: String,
}

impl SyclError {
    /// An `errc::invalid` error for §22 row `row`.
    pub fn invalid(row: u32, message: impl Into<String>) -> SyclError {
        SyclError { code: Errc::Invalid, row, message: message.into() }
    }

    /// An `errc::feature_not_supported` error for §22 row `row`.
    pub fn unsupported(row: u32, message: impl Into<String>) -> SyclError {
        SyclError { code: Errc::FeatureNotSupported, row, message: message.into() }
    }

    /// An `errc::kernel_not_supported` error for §22 row `row`.
    pub fn kernel_not_supported(row: u32, message: impl Into<String>) -> SyclError {
        SyclError { code: Errc::KernelNotSupported, row, message: message.into() }
    }
}

impl fmt::Display for SyclError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.row == 0 {
            write!(f, "{}: {}", self.code.name(), self.message)
        } else {
            write!(f, "{} (§22 row {}): {}", self.code.name(), self.row, self.message)
        }
    }
}

impl std::error::Error for SyclError {}

/// `Result` with a [`SyclError`].
pub type Result<T> = std::result::Result<T, SyclError>;

/// Returns `Err(SyclError::invalid(row, message))` unless `cond` holds.
pub(crate) fn ensure(cond: bool, row: u32, message: impl FnOnce() -> String) -> Result<()> {
    if cond {
        Ok(())
    } else {
        Err(SyclError::invalid(row, message()))
    }
}
