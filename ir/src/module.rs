//! The top level of the IR: a [`Module`] holds kernels, memory objects and graphs.

use crate::arena::{Arena, Handle};
use crate::graph::Graph;
use crate::kernel::{Function, Kernel};
use crate::types::{Literal, Type};
use serde::{Deserialize, Serialize};

/// Comments attached to an item, statement or op so that `cmdgraph fmt` keeps them.
///
/// `leading` lines stand on their own lines before the entity (each without the `//`
/// marker, leading space kept); `trailing` is a comment on the same line after it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Comments {
    /// Whole-line comments before the entity, in order.
    pub leading: Vec<String>,
    /// A comment at the end of the entity's last line.
    pub trailing: Option<String>,
    /// A blank line the user wrote before the entity (before its leading comments) where
    /// the printer would not put one by itself: between two memory declarations, or
    /// between two statements of a graph (not before its first). `cmdgraph fmt` keeps it;
    /// several blank lines become one.
    #[serde(default)]
    pub blank_before: bool,
    /// Items only: a blank line between the leading comments and the item, as after a
    /// file's header comment. `cmdgraph fmt` keeps it.
    #[serde(default)]
    pub blank_after_leading: bool,
}

impl Comments {
    /// Whether there is no comment at all.
    pub fn is_empty(&self) -> bool {
        self.leading.is_empty() && self.trailing.is_none()
    }

    /// Whether there is nothing to keep: no comment and no blank line.
    pub fn is_bare(&self) -> bool {
        self.is_empty() && !self.blank_before && !self.blank_after_leading
    }
}

/// A whole `.cgir` file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Module {
    /// Kernel definitions (with bodies or external SPIR-V).
    pub kernels: Arena<Kernel>,
    /// Functions that kernels call.
    #[serde(default)]
    pub functions: Arena<Function>,
    /// User memory (USM allocations, SYCL buffers) and `device_global` variables.
    pub memories: Arena<MemoryObject>,
    /// Command graphs.
    pub graphs: Arena<Graph>,
    /// Top-level items in source order; the printer follows it.
    pub items: Vec<Item>,
    /// Comments after the last item.
    pub trailing_comments: Vec<String>,
}

/// A reference to one top-level item, in source order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Item {
    /// A `kernel` definition.
    Kernel(Handle<Kernel>),
    /// A `func` definition.
    Function(Handle<Function>),
    /// A `usm`, `buffer` or `device_global` declaration.
    Memory(Handle<MemoryObject>),
    /// A `graph` definition.
    Graph(Handle<Graph>),
}

impl Module {
    /// Finds a kernel by name (without the `@`).
    pub fn kernel_by_name(&self, name: &str) -> Option<Handle<Kernel>> {
        self.kernels.iter().find(|(_, k)| k.name == name).map(|(h, _)| h)
    }

    /// Finds a function by name (without the `@`).
    pub fn function_by_name(&self, name: &str) -> Option<Handle<Function>> {
        self.functions.iter().find(|(_, f)| f.def.name == name).map(|(h, _)| h)
    }

    /// Finds a memory object by name (without the `@`).
    pub fn memory_by_name(&self, name: &str) -> Option<Handle<MemoryObject>> {
        self.memories.iter().find(|(_, m)| m.name == name).map(|(h, _)| h)
    }

    /// Finds a graph by name (without the `@`).
    pub fn graph_by_name(&self, name: &str) -> Option<Handle<Graph>> {
        self.graphs.iter().find(|(_, g)| g.name == name).map(|(h, _)| h)
    }
}

/// Memory that exists outside any one graph: bound by the application at run time
/// (`usm`, `buffer`) or owned by the device (`device_global`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryObject {
    /// Name without the `@`.
    pub name: String,
    /// Element type.
    pub elem: Type,
    /// Number of elements.
    pub count: u64,
    /// What kind of memory this is.
    pub kind: MemoryKind,
    /// The device it lives on (`home(N)`, `replicated`; docs/multi-device.md).
    #[serde(default)]
    pub home: Home,
    /// Attached comments.
    pub comments: Comments,
}

/// Where a memory object lives when a graph's nodes run on several devices
/// (docs/multi-device.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Home {
    /// Not written: the device of the graph that uses it.
    #[default]
    Graph,
    /// `home(N)`: device `N`'s memory; nodes of other devices reach it only through a copy
    /// whose other end is on their device (a transfer).
    Device(u32),
    /// `replicated`: one copy per device, each written by the host when the application
    /// binds it; nodes only read it.
    Replicated,
    /// `home(host)`: one copy in host memory that every device reaches (imported into each,
    /// `VK_EXT_external_memory_host`), read and written by nodes of any device. `split-devices`
    /// moves data between devices through such memory; the stages order its uses.
    Host,
}

impl Home {
    /// The device this memory lives on in a graph targeting `graph_device` (`None`:
    /// replicated, on every device, or on the host, reached by every device).
    pub fn device_in(self, graph_device: u32) -> Option<u32> {
        match self {
            Home::Graph => Some(graph_device),
            Home::Device(d) => Some(d),
            Home::Replicated | Home::Host => None,
        }
    }
}

impl MemoryObject {
    /// Size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.elem.size().saturating_mul(self.count)
    }
}

/// The kind of a [`MemoryObject`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MemoryKind {
    /// `usm @x : f32[N] [device|shared|host]`: a USM allocation the application binds at
    /// run time.
    Usm(UsmKind),
    /// `buffer @b : f32[N]`: a SYCL buffer, reached through accessors.
    Buffer,
    /// `device_global @g : T[N] [= [...]] [properties(...)]`: one instance per device,
    /// persisting across graph executions; only kernels may touch it inside a graph.
    DeviceGlobal(DeviceGlobal),
}

/// `usm::alloc` kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UsmKind {
    /// `device` (the default, not printed).
    Device,
    /// `shared`
    Shared,
    /// `host`
    Host,
}

impl UsmKind {
    /// The keyword spelling this kind.
    pub fn keyword(self) -> &'static str {
        match self {
            UsmKind::Device => "device",
            UsmKind::Shared => "shared",
            UsmKind::Host => "host",
        }
    }

    /// Parses a keyword.
    pub fn from_keyword(word: &str) -> Option<UsmKind> {
        [UsmKind::Device, UsmKind::Shared, UsmKind::Host].into_iter().find(|k| k.keyword() == word)
    }
}

/// A `device_global` declaration's initialiser and compile-time properties (003).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceGlobal {
    /// Initial elements (`= [1, 2, 3]`); empty means zero-initialised. When shorter than
    /// the element count the rest is zero.
    pub init: Vec<Literal>,
    /// `device_image_scope`
    pub device_image_scope: bool,
    /// `host_access(read|write|read_write|none)`; `None` when not written (= read_write).
    pub host_access: Option<HostAccess>,
    /// `init_mode(reprogram|reset)`; `None` when not written.
    pub init_mode: Option<InitMode>,
    /// `implement_in_csr`
    pub implement_in_csr: bool,
}

/// The `host_access` property of a `device_global`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HostAccess {
    /// `read`
    Read,
    /// `write`
    Write,
    /// `read_write`
    ReadWrite,
    /// `none`
    None,
}

/// The `init_mode` property of a `device_global`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InitMode {
    /// `reprogram`
    Reprogram,
    /// `reset`
    Reset,
}
