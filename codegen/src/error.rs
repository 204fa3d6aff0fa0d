//! The one error type of code generation.

use cmdgraph_ir::Span;
use std::fmt;

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
    /// LLVM rejected the generated module or failed to emit SPIR-V (a codegen bug).
    Llvm {
        /// Kernel name.
        kernel: String,
        /// LLVM's message.
        message: String,
    },
    /// `spirv-val` rejected the SPIR-V (a codegen or LLVM bug).
    Validation {
        /// Kernel name.
        kernel: String,
        /// The validator's output.
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
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodegenError::Unsupported { kernel, op: Some(op), message, .. } => {
                write!(f, "kernel @{kernel}, op #{op}: {message}")
            }
            CodegenError::Unsupported { kernel, op: None, message, .. } => write!(f, "kernel @{kernel}: {message}"),
            CodegenError::Launch { kernel, message } => write!(f, "kernel @{kernel}: launch: {message}"),
            CodegenError::Llvm { kernel, message } => write!(f, "kernel @{kernel}: LLVM: {message}"),
            CodegenError::Validation { kernel, message } => {
                write!(f, "kernel @{kernel}: spirv-val rejected the SPIR-V:\n{message}")
            }
            CodegenError::Tool { message } => f.write_str(message),
        }
    }
}

impl std::error::Error for CodegenError {}
