//! The host side of host tasks, shared by every runtime: what a host callback sees
//! ([`HostMemory`]), the callback type ([`HostFn`]) and its errors ([`HostError`]).
//!
//! The reference interpreter and the Vulkan executor each implement [`HostMemory`] over
//! their own memory, so one callback, written once, runs on both (issue 19: a host task used
//! to be written twice, once per runtime's context type). The rules are the same on both:
//! a callback reaches exactly the memory its node's `access(...)` list names, with the
//! declared modes enforced (`read` may only read, `write`/`no_init` may only write,
//! `read_write` both), and an access outside them is an error the run reports even when
//! the callback ignores it.

use crate::data::{from_bytes, to_bytes, Element};
use crate::types::Access;
use std::fmt;

/// A host callback: called with the node's view of memory, once per execution of its node.
/// `Send`, because the executor runs host tasks on a worker thread.
pub type HostFn = dyn FnMut(&mut dyn HostMemory) -> Result<(), HostError> + Send;

/// What a host callback sees: the memory its node declared.
pub trait HostMemory {
    /// The name of the node running the callback.
    fn node(&self) -> &str;
    /// Names of the memory the node declared (`@x`, `%t`), in list order.
    fn declared(&self) -> Vec<String>;
    /// The declared mode of memory `name` (with or without its sigil), if declared.
    fn mode(&self, name: &str) -> Option<Access>;
    /// Size in bytes of declared memory.
    fn size(&mut self, name: &str) -> Result<u64, HostError>;
    /// A copy of bytes `[offset, offset + len)` of declared readable memory.
    fn read_bytes(&mut self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>, HostError>;
    /// Writes `bytes` at byte `offset` of declared writable memory.
    fn write(&mut self, name: &str, offset: u64, bytes: &[u8]) -> Result<(), HostError>;

    /// A copy of all bytes of declared readable memory.
    fn read(&mut self, name: &str) -> Result<Vec<u8>, HostError> {
        let size = self.size(name)?;
        self.read_bytes(name, 0, size)
    }
}

impl dyn HostMemory + '_ {
    /// All of declared readable memory as elements.
    pub fn read_as<T: Element>(&mut self, name: &str) -> Result<Vec<T>, HostError> {
        Ok(from_bytes(&self.read(name)?))
    }

    /// Writes elements starting at element `index` of declared writable memory.
    pub fn write_as<T: Element>(&mut self, name: &str, index: u64, values: &[T]) -> Result<(), HostError> {
        let offset = index.checked_mul(T::SIZE as u64).ok_or_else(|| HostError::OutOfBounds {
            memory: name.to_string(),
            start: u64::MAX,
            len: 0,
            size: 0,
        })?;
        self.write(name, offset, &to_bytes(values))
    }
}

/// An error raised by, or on behalf of, a host callback.
#[derive(Clone, Debug, PartialEq)]
pub enum HostError {
    /// The memory is not in the node's `access(...)` list.
    NotDeclared {
        /// The name asked for.
        memory: String,
    },
    /// A read of memory declared without read access, or a write without write access.
    Mode {
        /// The memory.
        memory: String,
        /// `read` or `write`.
        attempted: &'static str,
        /// The declared mode.
        declared: Access,
    },
    /// A byte range outside the memory.
    OutOfBounds {
        /// The memory.
        memory: String,
        /// First byte.
        start: u64,
        /// Byte count.
        len: u64,
        /// Size of the memory.
        size: u64,
    },
    /// The memory is a graph allocation that is not live.
    NotLive {
        /// The allocation.
        memory: String,
    },
    /// The callback reported a failure of its own.
    Failed(String),
}

impl HostError {
    /// A failure reported by the callback itself.
    pub fn failed(message: impl Into<String>) -> HostError {
        HostError::Failed(message.into())
    }

    /// The error for a `read` or `write` of memory whose declared mode forbids it, or
    /// `None` when the mode allows it.
    pub fn check_mode(memory: &str, attempted: &'static str, declared: Access) -> Option<HostError> {
        let ok = if attempted == "read" { declared.reads() } else { declared.writes() };
        (!ok).then(|| HostError::Mode { memory: memory.to_string(), attempted, declared })
    }
}

impl From<String> for HostError {
    fn from(message: String) -> HostError {
        HostError::Failed(message)
    }
}

impl From<&str> for HostError {
    fn from(message: &str) -> HostError {
        HostError::Failed(message.to_string())
    }
}

impl std::error::Error for HostError {}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostError::NotDeclared { memory } => {
                write!(f, "{memory} is not in the node's access list")
            }
            HostError::Mode { memory, attempted, declared } => {
                write!(f, "{attempted} of {memory}, which is declared `{declared}`")
            }
            HostError::OutOfBounds { memory, start, len, size } => {
                write!(f, "bytes {start}..{} out of bounds of {memory} ({size} bytes)", *start as u128 + *len as u128)
            }
            HostError::NotLive { memory } => write!(f, "graph allocation {memory} is not live"),
            HostError::Failed(message) => f.write_str(message),
        }
    }
}
