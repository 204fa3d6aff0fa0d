//! The one error type of code generation.

use cmdgraph_ir::diag::Diagnostic;
use cmdgraph_ir::Span;
use std::fmt;

/// The code of an internal compiler error's diagnostic (docs/codegen.md, "Internal errors").
pub const E_INTERNAL: &str = "E0599";

/// What an internal compiler error asks of the user.
const PLEASE_REPORT: &str = "please report this cmdgraph bug with the input file";

/// Why a kernel could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodegenError {
    /// The kernel (or one of its ops) cannot be lowered.
    Unsupported {
        /// Kernel name (without `@`).
        kernel: String,
        /// Index of the offending op in the body's op arena, when one is to blame.
        op: Option<usize>,
        /// Source span of that op ([`Span::UNDEFINED`] when unknown).
        span: Span,
        /// What is wrong.
        message: String,
    },
    /// The launch or variant does not fit the kernel or the ABI.
    Launch {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        message: String,
    },
    /// Code generation made something LLVM or `spirv-val` rejects: a bug in cmdgraph (or in
    /// LLVM), never in the input (an internal compiler error).
    Internal {
        /// Kernel name.
        kernel: String,
        /// The kernel's definition in the source ([`Span::UNDEFINED`] when it has none).
        span: Span,
        /// What failed, e.g. "spirv-val rejected the SPIR-V generated at -O2 (work-group 256x1x1)".
        what: String,
        /// The tool's own message.
        message: String,
    },
    /// An external tool (`spirv-val`, `spirv-dis`) could not be run.
    Tool {
        /// What failed.
        message: String,
    },
}

impl CodegenError {
    /// An [`CodegenError::Unsupported`] error without an op.
    pub(crate) fn unsupported(kernel: &str, message: impl Into<String>) -> CodegenError {
        CodegenError::Unsupported {
            kernel: kernel.to_string(),
            op: None,
            span: Span::UNDEFINED,
            message: message.into(),
        }
    }

    /// An [`CodegenError::Launch`] error.
    pub(crate) fn launch(kernel: &str, message: impl Into<String>) -> CodegenError {
        CodegenError::Launch { kernel: kernel.to_string(), message: message.into() }
    }

    /// Whether this is an internal compiler error: a bug in cmdgraph or LLVM, not in the input.
    pub fn is_internal(&self) -> bool {
        matches!(self, CodegenError::Internal { .. })
    }

    /// The kernel the error is about, when there is one.
    pub fn kernel(&self) -> Option<&str> {
        match self {
            CodegenError::Unsupported { kernel, .. }
            | CodegenError::Launch { kernel, .. }
            | CodegenError::Internal { kernel, .. } => Some(kernel),
            CodegenError::Tool { .. } => None,
        }
    }

    /// The error as a diagnostic located in the source module, when it has a location: an
    /// internal error at the kernel's `kernel` keyword (the tool's message in the help), an
    /// unsupported op at the op. Render it against the source text like the verifier's.
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        match self {
            CodegenError::Internal { kernel, span, what, message } if span.is_defined() => {
                let keyword = Span { start: span.start, end: span.start.saturating_add(6).min(span.end) };
                let detail: Vec<&str> = message.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
                let mut help =
                    "a bug in cmdgraph (or LLVM), not in the input: please report it with the input file".to_string();
                if !detail.is_empty() {
                    help.push_str(&format!("; the tool said: {}", detail.join(" | ")));
                }
                Some(
                    Diagnostic::error(
                        E_INTERNAL,
                        format!("internal compiler error: kernel @{kernel}: {what}"),
                        keyword,
                    )
                    .with_label("while compiling this kernel")
                    .with_help(help),
                )
            }
            CodegenError::Unsupported { kernel, op: Some(_), span, message } if span.is_defined() => {
                Some(Diagnostic::error(crate::support::E_UNSUPPORTED, format!("kernel @{kernel}: {message}"), *span))
            }
            _ => None,
        }
    }
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodegenError::Unsupported { kernel, op: Some(op), message, .. } => {
                write!(f, "kernel @{kernel}, op #{op}: {message}")
            }
            CodegenError::Unsupported { kernel, op: None, message, .. } => write!(f, "kernel @{kernel}: {message}"),
            CodegenError::Launch { kernel, message } => write!(f, "kernel @{kernel}: launch: {message}"),
            CodegenError::Internal { kernel, what, message, .. } => {
                write!(f, "internal compiler error: kernel @{kernel}: {what}; {PLEASE_REPORT}")?;
                for line in message.lines().filter(|l| !l.trim().is_empty()) {
                    write!(f, "\n  {line}")?;
                }
                Ok(())
            }
            CodegenError::Tool { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for CodegenError {}
