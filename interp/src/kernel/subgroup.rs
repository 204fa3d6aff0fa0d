//! Subgroup ops over one work-group's lanes (docs/ir.md, "Subgroups").
//!
//! Subgroups cut the work-group by the linear local id in Vulkan's order, dimension 0
//! fastest (`LocalInvocationIndex`: codegen maps dimension `d` to the `d`-th component of
//! the Vulkan ids), into chunks of the run's subgroup size ([`crate::RunOptions`]); the
//! interpreter's own lanes are in SYCL's order (last dimension fastest), so each subgroup
//! is a list of interpreter lanes by subgroup lane. An op acts over the lanes of each
//! subgroup that are in the mask (the active lanes: those that reach it on the same
//! control-flow path, as SPIR-V's non-uniform operations define); a partial last subgroup's
//! missing lanes are never active. A work-group of more than one dimension must have a
//! dimension-0 size that is a multiple of the subgroup size, so that every subgroup lies in
//! one row (llvmpipe cuts rows into subgroups, other devices the linear order; both agree
//! then). What SPIR-V leaves undefined (a broadcast from an
//! inactive lane or a lane index that is not uniform, a shuffle from an inactive lane) is
//! an error here, so a program the interpreter runs has one meaning.

use super::super::error::InterpError;
use super::super::scalar;
use super::super::scalar::ftz;
use super::super::value::Lanes;
use super::simt::Exec;
use cmdgraph_ir::arena::Handle;
use cmdgraph_ir::kernel::Op;
use cmdgraph_ir::subgroup::{Collective, GroupArith, SubgroupBuiltin, SubgroupOp, BALLOT_TYPE};
use cmdgraph_ir::types::{ScalarType, Type};

/// The subgroups of a work-group: for each subgroup, its interpreter lanes by subgroup lane
/// (the last subgroup may be shorter).
pub(crate) fn partition(lid: &[Vec<u64>; 3], local: [u64; 3], n: usize, size: usize) -> Vec<Vec<usize>> {
    let count = n.div_ceil(size.max(1));
    let mut groups = vec![Vec::with_capacity(size); count];
    let mut order: Vec<(u64, usize)> = (0..n)
        .map(|lane| {
            let at = |d: usize| lid[d].get(lane).copied().unwrap_or(0);
            (at(0) + local[0] * (at(1) + local[1] * at(2)), lane)
        })
        .collect();
    order.sort_unstable();
    for (k, (_, lane)) in order.into_iter().enumerate() {
        groups[k / size.max(1)].push(lane);
    }
    groups
}

/// The identity of `op` on `ty` as canonical bits: what an exclusive scan gives its first
/// active lane (SPIR-V's identities: 0, 1, the largest and smallest values, all ones).
fn identity(op: GroupArith, ty: ScalarType) -> u64 {
    match (op, ty) {
        (GroupArith::Add | GroupArith::Or | GroupArith::Xor, _) => 0,
        (GroupArith::Mul, ScalarType::F32) => f32::to_bits(1.0) as u64,
        (GroupArith::Mul, _) => 1,
        (GroupArith::Min, ScalarType::F32) => f32::INFINITY.to_bits() as u64,
        (GroupArith::Max, ScalarType::F32) => f32::NEG_INFINITY.to_bits() as u64,
        (GroupArith::Min, ScalarType::I32) => i32::MAX as u32 as u64,
        (GroupArith::Max, ScalarType::I32) => i32::MIN as u32 as u64,
        (GroupArith::Min | GroupArith::And, _) => u32::MAX as u64,
        (GroupArith::Max, _) => 0,
    }
}

impl Exec<'_, '_, '_> {
    /// One subgroup op under `mask`: its result for every lane (inactive lanes get zeros,
    /// never observed).
    pub(crate) fn subgroup(&mut self, h: Handle<Op>, mask: &[bool], sg: &SubgroupOp) -> Result<Lanes, InterpError> {
        let n = self.ids.n;
        let size = self.subgroup_size;
        let local = self.prep.geo.local;
        if local[1] * local[2] > 1 && !local[0].is_multiple_of(size as u64) {
            // llvmpipe runs each row of dimension 0 as its own SIMD batch there (a 4x6 group
            // is six half-empty subgroups that report subgroup ids 0, 0, 1, 1, 2, 2), NVIDIA
            // cuts the linear order: no one answer to give.
            let msg = format!(
                "{} in a {}x{}x{} work-group: a work-group of more than one dimension needs a size in \
                 dimension 0 that is a multiple of the subgroup size {size} (devices form subgroups \
                 differently otherwise; docs/ir.md, \"Subgroups\")",
                sg.keyword(),
                local[0],
                local[1],
                local[2]
            );
            return Err(self.fault_at(h, mask, msg));
        }
        if self.subgroups.iter().map(Vec::len).sum::<usize>() != n {
            self.subgroups = partition(&self.ids.lid, self.prep.geo.local, n, size);
        }
        // The verifier's rule (E0334), checked again: the folds below assume 32-bit lanes.
        let mut types = Vec::new();
        for v in sg.operands() {
            types.push(self.data(h, mask, v)?.ty);
        }
        if let Some(problem) = sg.operand_problem(&types) {
            return Err(self.fault_at(h, mask, format!("{}: {problem}", sg.keyword())));
        }
        let groups = std::mem::take(&mut self.subgroups);
        let out = self.subgroup_in(h, mask, sg, &groups);
        self.subgroups = groups;
        out
    }

    fn subgroup_in(
        &self,
        h: Handle<Op>,
        mask: &[bool],
        sg: &SubgroupOp,
        groups: &[Vec<usize>],
    ) -> Result<Lanes, InterpError> {
        let n = self.ids.n;
        let size = self.subgroup_size;
        let active = |g: &[usize]| -> Vec<(usize, usize)> {
            g.iter()
                .enumerate()
                .filter(|(_, &lane)| mask.get(lane).copied().unwrap_or(false))
                .map(|(s, &l)| (s, l))
                .collect()
        };
        let per_lane = |f: &dyn Fn(usize, usize) -> u64| {
            let mut data = vec![0; n];
            for (s, g) in groups.iter().enumerate() {
                for (k, &lane) in g.iter().enumerate() {
                    data[lane] = f(s, k);
                }
            }
            Lanes { ty: Type::U32, data }
        };
        Ok(match sg {
            SubgroupOp::Builtin(b) => match b {
                SubgroupBuiltin::Size => Lanes::splat(Type::U32, &[size as u64], n),
                SubgroupBuiltin::Count => Lanes::splat(Type::U32, &[groups.len() as u64], n),
                SubgroupBuiltin::Id => per_lane(&|s, _| s as u64),
                SubgroupBuiltin::LocalId => per_lane(&|_, k| k as u64),
            },
            SubgroupOp::Arith { collective, op, value } => {
                let x = self.data(h, mask, *value)?;
                let f = scalar::binary(op.binary(), x.ty.scalar)
                    .filter(|_| !op.bitwise() || x.ty.scalar.is_integer())
                    .ok_or_else(|| self.fault_at(h, mask, format!("`{}` does not apply to {}", op.keyword(), x.ty)))?;
                let z = self.flush && x.ty.scalar == ScalarType::F32;
                let id = identity(*op, x.ty.scalar);
                let w = x.width();
                let mut out = Lanes::zeros(x.ty, n);
                for g in groups {
                    let lanes = active(g);
                    for c in 0..w {
                        // A left fold from the identity in lane order: what llvmpipe
                        // computes (docs/ir.md, "Subgroups" says what other orders give).
                        let mut acc = id;
                        let mut results = Vec::with_capacity(lanes.len());
                        for &(_, lane) in &lanes {
                            let before = acc;
                            acc = ftz(z, f(ftz(z, acc), ftz(z, x.data[lane * w + c])));
                            results.push((lane, before, acc));
                        }
                        for (lane, before, after) in results {
                            out.data[lane * w + c] = match collective {
                                Collective::Reduce => acc,
                                Collective::InclusiveScan => after,
                                Collective::ExclusiveScan => before,
                            };
                        }
                    }
                }
                out
            }
            SubgroupOp::Broadcast(value, lane_v) => {
                let x = self.data(h, mask, *value)?;
                let l = self.data(h, mask, *lane_v)?;
                let w = x.width();
                let mut out = Lanes::zeros(x.ty, n);
                for g in groups {
                    let lanes = active(g);
                    let Some(&(_, first)) = lanes.first() else { continue };
                    let want = l.data[first];
                    if let Some(&(_, other)) = lanes.iter().find(|(_, lane)| l.data[*lane] != want) {
                        let msg = format!(
                            "subgroup_broadcast lane index {} differs from {} of work-item {} in the same subgroup \
                             (it must be uniform)",
                            l.data[other],
                            want,
                            self.item_text(first)
                        );
                        return Err(self.fault(h, other, super::super::error::FaultKind::Other(msg)));
                    }
                    let src = self.source_lane(h, g, &lanes, first, want, "subgroup_broadcast")?;
                    for &(_, lane) in &lanes {
                        out.data[lane * w..(lane + 1) * w].copy_from_slice(&x.data[src * w..(src + 1) * w]);
                    }
                }
                out
            }
            SubgroupOp::Shuffle(value, lane_v) => {
                let x = self.data(h, mask, *value)?;
                let l = self.data(h, mask, *lane_v)?;
                let w = x.width();
                let mut out = Lanes::zeros(x.ty, n);
                for g in groups {
                    let lanes = active(g);
                    for &(_, lane) in &lanes {
                        let src = self.source_lane(h, g, &lanes, lane, l.data[lane], "subgroup_shuffle")?;
                        out.data[lane * w..(lane + 1) * w].copy_from_slice(&x.data[src * w..(src + 1) * w]);
                    }
                }
                out
            }
            SubgroupOp::BroadcastFirst(value) => {
                let x = self.data(h, mask, *value)?;
                let w = x.width();
                let mut out = Lanes::zeros(x.ty, n);
                for g in groups {
                    let lanes = active(g);
                    let Some(&(_, src)) = lanes.first() else { continue };
                    for &(_, lane) in &lanes {
                        out.data[lane * w..(lane + 1) * w].copy_from_slice(&x.data[src * w..(src + 1) * w]);
                    }
                }
                out
            }
            SubgroupOp::Ballot(cond) => {
                let c = self.bool_operand(h, mask, *cond)?;
                let mut out = Lanes::zeros(BALLOT_TYPE, n);
                for g in groups {
                    let lanes = active(g);
                    let mut bits = [0u64; 4];
                    for &(s, lane) in &lanes {
                        if c.data[lane] != 0 {
                            bits[s / 32] |= 1 << (s % 32);
                        }
                    }
                    for &(_, lane) in &lanes {
                        out.data[lane * 4..lane * 4 + 4].copy_from_slice(&bits);
                    }
                }
                out
            }
            SubgroupOp::Elect | SubgroupOp::All(_) | SubgroupOp::Any(_) => {
                let c = match sg {
                    SubgroupOp::All(c) | SubgroupOp::Any(c) => Some(self.bool_operand(h, mask, *c)?),
                    _ => None,
                };
                let mut out = Lanes::zeros(Type::BOOL, n);
                for g in groups {
                    let lanes = active(g);
                    let Some(&(_, first)) = lanes.first() else { continue };
                    let value = |lane: usize| c.is_some_and(|c| c.data[lane] != 0);
                    let all = lanes.iter().all(|&(_, l)| value(l));
                    let any = lanes.iter().any(|&(_, l)| value(l));
                    for &(_, lane) in &lanes {
                        out.data[lane] = u64::from(match sg {
                            SubgroupOp::All(_) => all,
                            SubgroupOp::Any(_) => any,
                            _ => lane == first,
                        });
                    }
                }
                out
            }
        })
    }

    /// A `bool` scalar operand.
    fn bool_operand(&self, h: Handle<Op>, mask: &[bool], v: cmdgraph_ir::kernel::V) -> Result<&Lanes, InterpError> {
        let c = self.data(h, mask, v)?;
        if c.ty != Type::BOOL {
            return Err(self.fault_at(h, mask, format!("the condition must be bool, not {}", c.ty)));
        }
        Ok(c)
    }

    /// The interpreter lane of subgroup lane `index` of subgroup `g`, which must be active
    /// (SPIR-V leaves the result undefined otherwise); `reader` is the lane asking.
    fn source_lane(
        &self,
        h: Handle<Op>,
        g: &[usize],
        active: &[(usize, usize)],
        reader: usize,
        index: u64,
        what: &str,
    ) -> Result<usize, InterpError> {
        let size = self.subgroup_size;
        let src = usize::try_from(index).ok().and_then(|i| g.get(i).copied());
        match src {
            Some(src) if active.iter().any(|&(_, l)| l == src) => Ok(src),
            _ => {
                let why = if index >= size as u64 {
                    format!("is not below the subgroup size {size}")
                } else if src.is_none() {
                    "is past the end of this partial subgroup".to_string()
                } else {
                    "is not active here (it does not reach this op on this path)".to_string()
                };
                let msg = format!("{what} reads lane {index}, which {why}: the result would be undefined");
                Err(self.fault(h, reader, super::super::error::FaultKind::Other(msg)))
            }
        }
    }
}
