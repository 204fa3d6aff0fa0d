//! Storage for everything a graph can touch, and bounds/lifetime checks.
//!
//! - User memory (`usm`, `buffer`): one byte vector per module memory object, zeroed when
//!   the interpreter is created; the application binds and reads it by name.
//! - `device_global`: one instance per (device, variable), created from its initialiser
//!   (the rest zero) the first time anything on that device touches it, then persisting
//!   across runs and graphs.
//! - Graph-owned allocations: per executable graph, either one vector per `async_malloc`
//!   node ([`AllocLayout::Separate`]) or sub-ranges of one pool at caller-given offsets
//!   ([`AllocLayout::Pool`]), so a memory plan can be checked by running it.

use super::error::FaultKind;
use super::value::alloc_bytes;
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::graph::Node;
use cmdgraph_ir::module::{MemoryKind, MemoryObject, Module};
use std::collections::BTreeMap;

/// A piece of memory a command or kernel argument refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Space {
    /// A module `usm` or `buffer`.
    User(Handle<MemoryObject>),
    /// A module `device_global` (on the executing graph's device).
    DeviceGlobal(Handle<MemoryObject>),
    /// A graph-owned allocation of the executable graph's root graph.
    Alloc(Handle<Node>),
}

/// The unit the race detector tracks bytes in. In pool mode every allocation is tracked in
/// pool coordinates, so two allocations the plan made overlap are seen to overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Loc {
    /// A module `usm` or `buffer`.
    User(Handle<MemoryObject>),
    /// A module `device_global`.
    DeviceGlobal(Handle<MemoryObject>),
    /// A graph allocation (separate layout).
    Alloc(Handle<Node>),
    /// The allocation pool (pool layout).
    Pool,
}

/// How the graph-owned allocations of an executable graph are laid out.
#[derive(Clone, Debug, PartialEq)]
pub enum AllocLayout {
    /// Each allocation has storage of its own.
    Separate,
    /// Allocations live in one pool at the given byte offsets (a memory plan).
    Pool(cmdgraph_ir::pool::PoolLayout),
}

/// One graph-owned allocation.
#[derive(Clone, Debug)]
pub(crate) struct AllocInfo {
    /// The `async_malloc` node's name.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Offset in the pool (0 in the separate layout).
    pub pool_offset: u64,
}

/// Where an allocation is in its life during one run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Life {
    /// Its `async_malloc` node has not run yet.
    Unallocated,
    /// Allocated and not freed.
    Live,
    /// Freed by the named `async_free` node.
    Freed(String),
}

/// The graph-owned allocations of one executable graph.
#[derive(Debug)]
pub(crate) struct Allocs {
    /// Every allocation, by its `async_malloc` node.
    pub info: BTreeMap<Handle<Node>, AllocInfo>,
    /// Separate storage per allocation (separate layout).
    separate: BTreeMap<Handle<Node>, Vec<u8>>,
    /// The pool (pool layout), else `None`.
    pool: Option<Vec<u8>>,
    /// Lifetimes in the current run.
    pub life: BTreeMap<Handle<Node>, Life>,
    /// The `zero_init` allocations: the only ones whose contents outlive a run (A9).
    zeroed: Vec<Handle<Node>>,
}

impl Allocs {
    /// Storage for `info` (sizes and offsets already validated), zero-filled where
    /// `zeroed` says so and poisoned elsewhere.
    pub fn new(
        info: BTreeMap<Handle<Node>, AllocInfo>,
        zeroed: &[Handle<Node>],
        pool_size: Option<u64>,
    ) -> Result<Allocs, String> {
        let poison = super::value::POISON;
        let mut separate = BTreeMap::new();
        let mut pool = None;
        match pool_size {
            None => {
                for (h, a) in &info {
                    let fill = if zeroed.contains(h) { 0 } else { poison };
                    separate.insert(*h, alloc_bytes(a.size, fill)?);
                }
            }
            Some(size) => {
                let mut bytes = alloc_bytes(size, poison)?;
                for h in zeroed {
                    if let Some(a) = info.get(h) {
                        if let Some(r) =
                            bytes.get_mut(a.pool_offset as usize..a.pool_offset.saturating_add(a.size) as usize)
                        {
                            r.fill(0);
                        }
                    }
                }
                pool = Some(bytes);
            }
        }
        let life = info.keys().map(|h| (*h, Life::Unallocated)).collect();
        Ok(Allocs { info, separate, pool, life, zeroed: zeroed.to_vec() })
    }

    /// Starts a run: forgets every allocation's state and poisons every allocation that is
    /// not `zero_init` (decision A9: only `zero_init` contents outlive a run, so a memory
    /// plan may share the others' bytes; reading one before writing it reads [`POISON`]).
    ///
    /// [`POISON`]: super::value::POISON
    pub fn start_run(&mut self) {
        for life in self.life.values_mut() {
            *life = Life::Unallocated;
        }
        let poison = super::value::POISON;
        for (h, a) in &self.info {
            if self.zeroed.contains(h) {
                continue;
            }
            match &mut self.pool {
                None => {
                    if let Some(bytes) = self.separate.get_mut(h) {
                        bytes.fill(poison);
                    }
                }
                Some(pool) => {
                    let end = a.pool_offset.saturating_add(a.size);
                    if let Some(r) = pool.get_mut(a.pool_offset as usize..end as usize) {
                        r.fill(poison);
                    }
                }
            }
        }
    }

    /// Whether allocations share one pool.
    pub fn pooled(&self) -> bool {
        self.pool.is_some()
    }

    /// The bytes of one allocation.
    fn bytes_mut(&mut self, h: Handle<Node>) -> Option<&mut [u8]> {
        match &mut self.pool {
            Some(pool) => {
                let a = self.info.get(&h)?;
                pool.get_mut(a.pool_offset as usize..a.pool_offset.saturating_add(a.size) as usize)
            }
            None => self.separate.get_mut(&h).map(|v| v.as_mut_slice()),
        }
    }

    /// A copy of one allocation's bytes.
    pub fn read(&mut self, h: Handle<Node>) -> Option<Vec<u8>> {
        self.bytes_mut(h).map(|b| b.to_vec())
    }
}

/// Device-global instances, created on first use per device.
#[derive(Debug, Default)]
pub(crate) struct DeviceGlobals {
    /// The initial image of every device_global, by memory handle index.
    pub init: BTreeMap<Handle<MemoryObject>, Vec<u8>>,
    /// Live instances by (device, variable).
    pub live: BTreeMap<(u32, Handle<MemoryObject>), Vec<u8>>,
}

impl DeviceGlobals {
    /// The instance of `h` on `device`, created from the initial image on first use.
    fn instance(&mut self, device: u32, h: Handle<MemoryObject>) -> Option<&mut Vec<u8>> {
        if !self.live.contains_key(&(device, h)) {
            let init = self.init.get(&h)?.clone();
            self.live.insert((device, h), init);
        }
        self.live.get_mut(&(device, h))
    }
}

/// Everything memory a run may touch, borrowed for the run.
pub(crate) struct MemCtx<'a> {
    /// The module (for memory names and kinds).
    pub module: &'a Module,
    /// User memory by memory handle index (empty vectors for device globals).
    pub user: &'a mut Vec<Vec<u8>>,
    /// Device globals.
    pub dg: &'a mut DeviceGlobals,
    /// The executable graph's allocations.
    pub allocs: &'a mut Allocs,
    /// The device the graph runs on.
    pub device: u32,
}

impl MemCtx<'_> {
    /// A shorter-lived view of the same memory (for host callbacks).
    pub fn reborrow(&mut self) -> MemCtx<'_> {
        MemCtx { module: self.module, user: self.user, dg: self.dg, allocs: self.allocs, device: self.device }
    }

    /// The display name of a space: `@x` or `%t`.
    pub fn name(&self, space: Space) -> String {
        match space {
            Space::User(h) | Space::DeviceGlobal(h) => match self.module.memories.try_get(h) {
                Some(m) => format!("@{}", m.name),
                None => "@?".to_string(),
            },
            Space::Alloc(h) => match self.allocs.info.get(&h) {
                Some(a) => format!("%{}", a.name),
                None => "%?".to_string(),
            },
        }
    }

    /// Size in bytes of a space.
    pub fn size(&self, space: Space) -> u64 {
        match space {
            Space::User(h) => self.user.get(h.index()).map_or(0, |v| v.len() as u64),
            Space::DeviceGlobal(h) => self.dg.init.get(&h).map_or(0, |v| v.len() as u64),
            Space::Alloc(h) => self.allocs.info.get(&h).map_or(0, |a| a.size),
        }
    }

    /// Fails unless `space` may be used now: graph allocations must be live.
    pub fn check_live(&self, space: Space) -> Result<(), FaultKind> {
        if let Space::Alloc(h) = space {
            match self.allocs.life.get(&h) {
                Some(Life::Live) => {}
                Some(Life::Freed(by)) => {
                    return Err(FaultKind::Lifetime { memory: self.name(space), freed_by: Some(by.clone()) })
                }
                _ => return Err(FaultKind::Lifetime { memory: self.name(space), freed_by: None }),
            }
        }
        Ok(())
    }

    /// The bytes of a space (not checking liveness).
    pub fn bytes_mut(&mut self, space: Space) -> Result<&mut [u8], FaultKind> {
        let missing = || FaultKind::Other("memory has no storage (bad handle)".to_string());
        match space {
            Space::User(h) => self.user.get_mut(h.index()).map(|v| v.as_mut_slice()).ok_or_else(missing),
            Space::DeviceGlobal(h) => self.dg.instance(self.device, h).map(|v| v.as_mut_slice()).ok_or_else(missing),
            Space::Alloc(h) => self.allocs.bytes_mut(h).ok_or_else(missing),
        }
    }

    /// Where the race detector files accesses to `space`, and the offset to add.
    pub fn loc(&self, space: Space) -> (Loc, u64) {
        match space {
            Space::User(h) => (Loc::User(h), 0),
            Space::DeviceGlobal(h) => (Loc::DeviceGlobal(h), 0),
            Space::Alloc(h) if self.allocs.pooled() => {
                (Loc::Pool, self.allocs.info.get(&h).map_or(0, |a| a.pool_offset))
            }
            Space::Alloc(h) => (Loc::Alloc(h), 0),
        }
    }

    /// The space a module memory object names in a graph command; device globals are not
    /// allowed there (docs/ir.md, §59 of the spec checklist).
    pub fn user_space(&self, h: Handle<MemoryObject>) -> Result<Space, FaultKind> {
        match self.module.memories.try_get(h).map(|m| &m.kind) {
            Some(MemoryKind::Usm(_) | MemoryKind::Buffer) => Ok(Space::User(h)),
            Some(MemoryKind::DeviceGlobal(_)) => Err(FaultKind::Other(format!(
                "{} is a device_global; only kernel bodies may touch it (`load @g[%i]`)",
                self.name(Space::User(h))
            ))),
            None => Err(FaultKind::Other("memory handle out of range".to_string())),
        }
    }

    /// Checks that bytes `[start, start + len)` lie inside `space`.
    pub fn check_range(&self, space: Space, start: u64, len: u64) -> Result<(), FaultKind> {
        let size = self.size(space);
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(FaultKind::BytesOutOfBounds { memory: self.name(space), start, len, size });
        }
        Ok(())
    }
}
