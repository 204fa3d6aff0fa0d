//! Subgroup ops (docs/codegen.md, "Subgroups").
//!
//! The builtins are LLVM's `llvm.spv.subgroup.*` intrinsics, which the SPIR-V backend lowers
//! to the `SubgroupSize`, `SubgroupId`, `SubgroupLocalInvocationId` and `NumSubgroups`
//! built-in variables. LLVM 22's backend has no intrinsic for most `OpGroupNonUniform*`
//! instructions in the Vulkan environment (no scans, no `mul`/bitwise reductions, no
//! broadcast), so each collective is a call to an imported function whose name carries the
//! instruction: `cmdgraph_sg_<opcode>_<group operation>_<type>`, with the scope constant as
//! its first argument. The calls are `convergent` (LLVM may not move them across control
//! flow, which would change the active lanes) and not read-none (LLVM may not merge or
//! drop them). After emission, `crate::subgroup::lower_calls` rewrites each call into its
//! instruction and removes the imports.

use super::types::{self, reg};
use super::{Lowerer, Val};
use crate::error::CodegenError;
use crate::subgroup::{call_name, Opcode, SCOPE_SUBGROUP};
use cmdgraph_ir::subgroup::{GroupArith, SubgroupBuiltin, SubgroupOp};
use cmdgraph_ir::{Handle, Op, ScalarType, Type};

impl Lowerer<'_> {
    /// One subgroup op; its result.
    pub fn subgroup(&mut self, h: Handle<Op>, sg: &SubgroupOp) -> Result<Val, CodegenError> {
        if self.width > 1 {
            return Err(self.err(h, "subgroup op in a vectorized kernel"));
        }
        let scope = Val::new("i32", SCOPE_SUBGROUP.to_string());
        let (opcode, group_op, args, ty) = match sg {
            SubgroupOp::Builtin(b) => {
                let x = match b {
                    SubgroupBuiltin::Size => self.ir.call("i32", "llvm.spv.subgroup.size", &[]),
                    SubgroupBuiltin::Id => self.ir.call("i32", "llvm.spv.subgroup.id", &[]),
                    SubgroupBuiltin::LocalId => self.ir.call("i32", "llvm.spv.subgroup.local.invocation.id", &[]),
                    SubgroupBuiltin::Count => {
                        // ceil(work-group size / subgroup size), computed here: llvmpipe's
                        // `NumSubgroups` rounds down (1 for a work-group of 12 in subgroups
                        // of 8).
                        let wg: u32 = self.plan.variant.workgroup_size.iter().map(|&d| d.max(1)).product();
                        let size = self.ir.call("i32", "llvm.spv.subgroup.size", &[]);
                        let up = self.ir.emit("i32", format!("add i32 {}, {}", size.v, wg.saturating_sub(1)));
                        self.ir.emit("i32", format!("udiv i32 {}, {}", up.v, size.v))
                    }
                };
                return Ok(self.widen(Type::U32, x));
            }
            SubgroupOp::Arith { collective, op, value } => {
                let t = self.data_ty(h, *value)?;
                let opcode = arith_opcode(*op, t.scalar)
                    .ok_or_else(|| self.err(h, format!("`{}` of {t} in a subgroup op", op.keyword())))?;
                let group_op = match collective {
                    cmdgraph_ir::subgroup::Collective::Reduce => 0,
                    cmdgraph_ir::subgroup::Collective::InclusiveScan => 1,
                    cmdgraph_ir::subgroup::Collective::ExclusiveScan => 2,
                };
                (opcode, Some(group_op), vec![self.val(h, *value)?], t)
            }
            SubgroupOp::Broadcast(x, l) | SubgroupOp::Shuffle(x, l) => {
                let t = self.data_ty(h, *x)?;
                let opcode = if matches!(sg, SubgroupOp::Broadcast(..)) { Opcode::Broadcast } else { Opcode::Shuffle };
                (opcode, None, vec![self.val(h, *x)?, self.val(h, *l)?], t)
            }
            SubgroupOp::BroadcastFirst(x) => {
                (Opcode::BroadcastFirst, None, vec![self.val(h, *x)?], self.data_ty(h, *x)?)
            }
            SubgroupOp::Ballot(c) => (Opcode::Ballot, None, vec![self.val(h, *c)?], cmdgraph_ir::subgroup::BALLOT_TYPE),
            SubgroupOp::All(c) => (Opcode::All, None, vec![self.val(h, *c)?], Type::BOOL),
            SubgroupOp::Any(c) => (Opcode::Any, None, vec![self.val(h, *c)?], Type::BOOL),
            SubgroupOp::Elect => (Opcode::Elect, None, Vec::new(), Type::BOOL),
        };
        let ret = reg(ty, 1);
        let name = call_name(opcode, group_op, &types::mangle(&ret));
        let mut all = vec![scope];
        all.extend(args);
        let params: Vec<&str> = all.iter().map(|a| a.ty.as_str()).collect();
        self.ir.declare(format!("declare {ret} @{name}({}) convergent nounwind", params.join(", ")));
        let operands: Vec<String> = all.iter().map(Val::typed).collect();
        Ok(self.ir.emit(&ret, format!("call {ret} @{name}({})", operands.join(", "))))
    }
}

/// The arithmetic instruction of `op` on `s` (the verifier admits `i32`, `u32`, `f32`).
fn arith_opcode(op: GroupArith, s: ScalarType) -> Option<Opcode> {
    let float = s == ScalarType::F32;
    let signed = s == ScalarType::I32;
    if !matches!(s, ScalarType::I32 | ScalarType::U32 | ScalarType::F32) || (float && op.bitwise()) {
        return None;
    }
    Some(match op {
        GroupArith::Add if float => Opcode::FAdd,
        GroupArith::Add => Opcode::IAdd,
        GroupArith::Mul if float => Opcode::FMul,
        GroupArith::Mul => Opcode::IMul,
        GroupArith::Min if float => Opcode::FMin,
        GroupArith::Min if signed => Opcode::SMin,
        GroupArith::Min => Opcode::UMin,
        GroupArith::Max if float => Opcode::FMax,
        GroupArith::Max if signed => Opcode::SMax,
        GroupArith::Max => Opcode::UMax,
        GroupArith::And => Opcode::BitwiseAnd,
        GroupArith::Or => Opcode::BitwiseOr,
        GroupArith::Xor => Opcode::BitwiseXor,
    })
}
