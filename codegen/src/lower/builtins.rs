//! Work-item builtins: ids and ranges per dimension, honouring the global offset.

use super::{Lowerer, Val};
use crate::error::CodegenError;
use cmdgraph_ir::kernel::Builtin;
use cmdgraph_ir::{Handle, Op, Type};

impl Lowerer<'_> {
    /// `GlobalInvocationId[d]` (the dispatch index, without the global offset).
    pub fn thread_id(&mut self, d: u32) -> Val {
        self.ir.call("i32", "llvm.spv.thread.id.i32", &[Val::new("i32", d.to_string())])
    }

    /// One builtin, as a `u32` of the current width.
    pub fn builtin(&mut self, h: Handle<Op>, b: Builtin, d: u8) -> Result<Val, CodegenError> {
        if d > 2 {
            return Err(self.err(h, format!("dimension {d} (0 to 2 are allowed)")));
        }
        let dim = Val::new("i32", d.to_string());
        let wg = self.plan.variant.workgroup_size.get(d as usize).copied().unwrap_or(1).max(1);
        if b == Builtin::GlobalId && d == 0 {
            if let Some(g) = self.gid0.clone() {
                return Ok(g);
            }
        }
        let scalar = match b {
            Builtin::GlobalId => {
                let id = self.thread_id(d as u32);
                let off = self.word(12 + 4 * d as u32);
                self.ir.emit("i32", format!("add i32 {}, {}", id.v, off.v))
            }
            Builtin::LocalId => self.ir.call("i32", "llvm.spv.thread.id.in.group.i32", &[dim]),
            Builtin::GroupId => self.ir.call("i32", "llvm.spv.group.id.i32", &[dim]),
            Builtin::GlobalRange => self.word(4 * d as u32),
            Builtin::LocalRange => Val::new("i32", wg.to_string()),
            Builtin::GroupRange => {
                let size = self.word(4 * d as u32);
                self.ir.emit("i32", format!("udiv i32 {}, {wg}", size.v))
            }
        };
        Ok(self.widen(Type::U32, scalar))
    }
}
