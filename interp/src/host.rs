//! Host tasks and native commands: Rust callbacks registered by name.
//!
//! A callback gets the interpreter's [`HostContext`] as a `&mut dyn HostMemory` (the one
//! interface of `cmdgraph_ir::host`, which the Vulkan executor implements too): it reaches
//! exactly the memory the node's `access(...)` list names, with the declared modes enforced
//! (`read` may only read, `write`/`no_init` may only write, `read_write` both). Every access
//! is recorded for the race detector. A violation fails the run even when the callback
//! ignores the returned error.

use super::access::{AccessKind, NodeLog};
use super::memory::{MemCtx, Space};
use cmdgraph_ir::host::{HostError, HostFn, HostMemory};
use cmdgraph_ir::types::Access;
use std::collections::BTreeMap;

/// Callbacks for `host_task "name"` and `native "name"` nodes, by name.
#[derive(Default)]
pub struct HostCallbacks {
    map: BTreeMap<String, Box<HostFn>>,
}

impl HostCallbacks {
    /// An empty registry.
    pub fn new() -> HostCallbacks {
        HostCallbacks::default()
    }

    /// Registers (or replaces) the callback called `name`.
    pub fn register<F>(&mut self, name: &str, callback: F)
    where
        F: FnMut(&mut dyn HostMemory) -> Result<(), HostError> + Send + 'static,
    {
        self.map.insert(name.to_string(), Box::new(callback));
    }

    /// Registers (or replaces) an already boxed callback called `name`.
    pub fn register_boxed(&mut self, name: &str, callback: Box<HostFn>) {
        self.map.insert(name.to_string(), callback);
    }

    /// Whether a callback is registered under `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// The callback registered under `name`.
    pub(crate) fn get_mut(&mut self, name: &str) -> Option<&mut Box<HostFn>> {
        self.map.get_mut(name)
    }
}

impl std::fmt::Debug for HostCallbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.map.keys()).finish()
    }
}

/// One entry of the node's access list, resolved.
#[derive(Clone, Debug)]
pub(crate) struct Declared {
    /// `@x` or `%t`.
    pub name: String,
    /// The memory.
    pub space: Space,
    /// The declared mode.
    pub mode: Access,
}

/// What a host callback sees: the node's declared memory.
pub struct HostContext<'a> {
    node: &'a str,
    declared: Vec<Declared>,
    mem: MemCtx<'a>,
    log: Option<&'a mut NodeLog>,
    violation: Option<HostError>,
}

impl<'a> HostContext<'a> {
    pub(crate) fn new(node: &'a str, declared: Vec<Declared>, mem: MemCtx<'a>, log: Option<&'a mut NodeLog>) -> Self {
        HostContext { node, declared, mem, log, violation: None }
    }

    /// The first access violation, if any (reported even if the callback swallowed it).
    pub(crate) fn violation(&self) -> Option<HostError> {
        self.violation.clone()
    }

    fn lookup(&mut self, name: &str, attempted: &'static str) -> Result<Space, HostError> {
        let bare = name.trim_start_matches(['@', '%']);
        let found = self.declared.iter().find(|d| d.name.get(1..) == Some(bare)).cloned();
        let result = match found {
            None => Err(HostError::NotDeclared { memory: name.to_string() }),
            Some(d) => {
                if let Some(e) = HostError::check_mode(&d.name, attempted, d.mode) {
                    Err(e)
                } else if self.mem.check_live(d.space).is_err() {
                    Err(HostError::NotLive { memory: d.name.clone() })
                } else {
                    Ok(d.space)
                }
            }
        };
        self.note(result)
    }

    fn note<T>(&mut self, result: Result<T, HostError>) -> Result<T, HostError> {
        if let Err(e) = &result {
            self.violation.get_or_insert_with(|| e.clone());
        }
        result
    }

    fn record(&mut self, space: Space, kind: AccessKind, start: u64, len: u64) {
        let (loc, base) = self.mem.loc(space);
        if let Some(log) = self.log.as_deref_mut() {
            log.add(loc, kind, base + start, len);
        }
    }
}

impl HostMemory for HostContext<'_> {
    /// The path name of the node running the callback.
    fn node(&self) -> &str {
        self.node
    }

    /// Names of the memory the node declared (`@x`, `%t`), in list order.
    fn declared(&self) -> Vec<String> {
        self.declared.iter().map(|d| d.name.clone()).collect()
    }

    /// The declared mode of memory `name`, if the node declared it.
    fn mode(&self, name: &str) -> Option<Access> {
        let bare = name.trim_start_matches(['@', '%']);
        self.declared.iter().find(|d| d.name.get(1..) == Some(bare)).map(|d| d.mode)
    }

    /// Size in bytes of declared memory.
    fn size(&mut self, name: &str) -> Result<u64, HostError> {
        let bare = name.trim_start_matches(['@', '%']);
        match self.declared.iter().find(|d| d.name.get(1..) == Some(bare)) {
            Some(d) => Ok(self.mem.size(d.space)),
            None => self.note(Err(HostError::NotDeclared { memory: name.to_string() })),
        }
    }

    /// A copy of all bytes of declared readable memory.
    fn read(&mut self, name: &str) -> Result<Vec<u8>, HostError> {
        let space = self.lookup(name, "read")?;
        let bytes = match self.mem.bytes_mut(space) {
            Ok(b) => b.to_vec(),
            Err(e) => return self.note(Err(HostError::Failed(e.to_string()))),
        };
        self.record(space, AccessKind::Read, 0, bytes.len() as u64);
        Ok(bytes)
    }

    /// A copy of bytes `[offset, offset + len)` of declared readable memory (only those
    /// bytes count as read for the race detector).
    fn read_bytes(&mut self, name: &str, offset: u64, len: u64) -> Result<Vec<u8>, HostError> {
        let space = self.lookup(name, "read")?;
        let size = self.mem.size(space);
        if offset.checked_add(len).is_none_or(|end| end > size) {
            let err = HostError::OutOfBounds { memory: self.mem.name(space), start: offset, len, size };
            return self.note(Err(err));
        }
        let bytes = match self.mem.bytes_mut(space) {
            Ok(b) => b.get(offset as usize..(offset + len) as usize).unwrap_or_default().to_vec(),
            Err(e) => return self.note(Err(HostError::Failed(e.to_string()))),
        };
        self.record(space, AccessKind::Read, offset, len);
        Ok(bytes)
    }

    /// Writes `bytes` at byte `offset` of declared writable memory.
    fn write(&mut self, name: &str, offset: u64, bytes: &[u8]) -> Result<(), HostError> {
        let space = self.lookup(name, "write")?;
        let size = self.mem.size(space);
        let len = bytes.len() as u64;
        if offset.checked_add(len).is_none_or(|end| end > size) {
            let err = HostError::OutOfBounds { memory: self.mem.name(space), start: offset, len, size };
            return self.note(Err(err));
        }
        match self.mem.bytes_mut(space) {
            Ok(dst) => {
                if let Some(d) = dst.get_mut(offset as usize..(offset + len) as usize) {
                    d.copy_from_slice(bytes);
                }
            }
            Err(e) => return self.note(Err(HostError::Failed(e.to_string()))),
        }
        self.record(space, AccessKind::Write, offset, len);
        Ok(())
    }
}
