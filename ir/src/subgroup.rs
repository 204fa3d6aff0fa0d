//! Subgroup operations of the kernel language (docs/ir.md, "Subgroups").
//!
//! A work-group's work-items are cut into subgroups by linear local id (the last dimension
//! fastest, as SYCL linearises): subgroup `s` holds the work-items whose linear id `l` has
//! `l / size == s`, in lane `l % size`; the last subgroup is partial when the work-group
//! size is not a multiple of the subgroup size. A collective op acts over the *active*
//! lanes of its subgroup: those that execute it on the same control-flow path (SPIR-V's
//! non-uniform group operations); a partial subgroup's missing lanes are never active.
//!
//! All of them are one [`crate::kernel::OpKind::Subgroup`] so that the shared matches over
//! op kinds grow by one arm each; everything subgroup-specific lives here.

use crate::kernel::V;
use crate::types::{ScalarType, Type};
use serde::{Deserialize, Serialize};

/// One subgroup op.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SubgroupOp {
    /// `%n = subgroup_size` and the other per-work-item subgroup builtins (`u32`).
    Builtin(SubgroupBuiltin),
    /// `%r = subgroup_reduce add %x`, `subgroup_inclusive_scan add %x`,
    /// `subgroup_exclusive_scan add %x`.
    Arith {
        /// Reduce or which scan.
        collective: Collective,
        /// The combining operation.
        op: GroupArith,
        /// The operand.
        value: V,
    },
    /// `%r = subgroup_broadcast %x, %lane`: `%x` of lane `%lane`, which every active lane
    /// gives the same value and which must be active.
    Broadcast(V, V),
    /// `%r = subgroup_broadcast_first %x`: `%x` of the lowest active lane.
    BroadcastFirst(V),
    /// `%r = subgroup_shuffle %x, %lane`: `%x` of lane `%lane` (per work-item; that lane
    /// must be active).
    Shuffle(V, V),
    /// `%m = subgroup_ballot %c`: a `vec4<u32>` mask, bit `l % 32` of lane `l / 32` set
    /// when lane `l` is active with `%c` true.
    Ballot(V),
    /// `%e = subgroup_elect`: true in the lowest active lane only.
    Elect,
    /// `%r = subgroup_all %c`: whether `%c` is true in every active lane.
    All(V),
    /// `%r = subgroup_any %c`: whether `%c` is true in some active lane.
    Any(V),
}

/// The per-work-item subgroup builtins, each `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SubgroupBuiltin {
    /// `subgroup_size`: lanes per subgroup (the device's; a partial subgroup reports it too).
    Size,
    /// `subgroup_id`: the subgroup's index within the work-group.
    Id,
    /// `subgroup_local_id`: the work-item's lane.
    LocalId,
    /// `num_subgroups`: subgroups per work-group (`ceil(work-group size / subgroup size)`).
    Count,
}

impl SubgroupBuiltin {
    /// Every builtin.
    pub const ALL: [SubgroupBuiltin; 4] =
        [SubgroupBuiltin::Size, SubgroupBuiltin::Id, SubgroupBuiltin::LocalId, SubgroupBuiltin::Count];

    /// Its keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            SubgroupBuiltin::Size => "subgroup_size",
            SubgroupBuiltin::Id => "subgroup_id",
            SubgroupBuiltin::LocalId => "subgroup_local_id",
            SubgroupBuiltin::Count => "num_subgroups",
        }
    }
}

/// Which collective a [`SubgroupOp::Arith`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Collective {
    /// Every active lane gets the combination of every active lane's value.
    Reduce,
    /// Lane `l` gets the combination of the active lanes `<= l`.
    InclusiveScan,
    /// Lane `l` gets the combination of the active lanes `< l` (the identity when none).
    ExclusiveScan,
}

impl Collective {
    /// Every collective.
    pub const ALL: [Collective; 3] = [Collective::Reduce, Collective::InclusiveScan, Collective::ExclusiveScan];

    /// Its keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            Collective::Reduce => "subgroup_reduce",
            Collective::InclusiveScan => "subgroup_inclusive_scan",
            Collective::ExclusiveScan => "subgroup_exclusive_scan",
        }
    }
}

/// The combining operation of a reduction or scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GroupArith {
    /// `add`
    Add,
    /// `mul`
    Mul,
    /// `min` (as the kernel language's `min`)
    Min,
    /// `max` (as the kernel language's `max`)
    Max,
    /// `and` (integers)
    And,
    /// `or` (integers)
    Or,
    /// `xor` (integers)
    Xor,
}

impl GroupArith {
    /// Every operation.
    pub const ALL: [GroupArith; 7] = [
        GroupArith::Add,
        GroupArith::Mul,
        GroupArith::Min,
        GroupArith::Max,
        GroupArith::And,
        GroupArith::Or,
        GroupArith::Xor,
    ];

    /// Its keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            GroupArith::Add => "add",
            GroupArith::Mul => "mul",
            GroupArith::Min => "min",
            GroupArith::Max => "max",
            GroupArith::And => "and",
            GroupArith::Or => "or",
            GroupArith::Xor => "xor",
        }
    }

    /// Whether it is a bitwise operation (integers only).
    pub fn bitwise(self) -> bool {
        matches!(self, GroupArith::And | GroupArith::Or | GroupArith::Xor)
    }

    /// The kernel language's binary op it folds with.
    pub fn binary(self) -> crate::kernel::BinaryOp {
        use crate::kernel::BinaryOp;
        match self {
            GroupArith::Add => BinaryOp::Add,
            GroupArith::Mul => BinaryOp::Mul,
            GroupArith::Min => BinaryOp::Min,
            GroupArith::Max => BinaryOp::Max,
            GroupArith::And => BinaryOp::And,
            GroupArith::Or => BinaryOp::Or,
            GroupArith::Xor => BinaryOp::Xor,
        }
    }
}

/// The mask type of `subgroup_ballot`.
pub const BALLOT_TYPE: Type = Type::vector(ScalarType::U32, 4);

impl SubgroupOp {
    /// The keyword it is written with.
    pub fn keyword(&self) -> &'static str {
        match self {
            SubgroupOp::Builtin(b) => b.keyword(),
            SubgroupOp::Arith { collective, .. } => collective.keyword(),
            SubgroupOp::Broadcast(..) => "subgroup_broadcast",
            SubgroupOp::BroadcastFirst(_) => "subgroup_broadcast_first",
            SubgroupOp::Shuffle(..) => "subgroup_shuffle",
            SubgroupOp::Ballot(_) => "subgroup_ballot",
            SubgroupOp::Elect => "subgroup_elect",
            SubgroupOp::All(_) => "subgroup_all",
            SubgroupOp::Any(_) => "subgroup_any",
        }
    }

    /// Every keyword that starts a subgroup op (for the parser).
    pub const KEYWORDS: [&'static str; 14] = [
        "subgroup_size",
        "subgroup_id",
        "subgroup_local_id",
        "num_subgroups",
        "subgroup_reduce",
        "subgroup_inclusive_scan",
        "subgroup_exclusive_scan",
        "subgroup_broadcast",
        "subgroup_broadcast_first",
        "subgroup_shuffle",
        "subgroup_ballot",
        "subgroup_elect",
        "subgroup_all",
        "subgroup_any",
    ];

    /// Its value operands, in order.
    pub fn operands(&self) -> Vec<V> {
        match self {
            SubgroupOp::Builtin(_) | SubgroupOp::Elect => Vec::new(),
            SubgroupOp::Arith { value, .. } => vec![*value],
            SubgroupOp::Broadcast(x, l) | SubgroupOp::Shuffle(x, l) => vec![*x, *l],
            SubgroupOp::BroadcastFirst(x) | SubgroupOp::Ballot(x) | SubgroupOp::All(x) | SubgroupOp::Any(x) => {
                vec![*x]
            }
        }
    }

    /// Its operands, mutably (for passes that renumber values).
    pub fn operands_mut(&mut self) -> Vec<&mut V> {
        match self {
            SubgroupOp::Builtin(_) | SubgroupOp::Elect => Vec::new(),
            SubgroupOp::Arith { value, .. } => vec![value],
            SubgroupOp::Broadcast(x, l) | SubgroupOp::Shuffle(x, l) => vec![x, l],
            SubgroupOp::BroadcastFirst(x) | SubgroupOp::Ballot(x) | SubgroupOp::All(x) | SubgroupOp::Any(x) => {
                vec![x]
            }
        }
    }

    /// The type of its result given the type of its first operand (`None` for ops without
    /// operands): what the parser gives the result before the verifier checks anything.
    pub fn result_type(&self, first: Option<Type>) -> Type {
        match self {
            SubgroupOp::Builtin(_) => Type::U32,
            SubgroupOp::Ballot(_) => BALLOT_TYPE,
            SubgroupOp::Elect | SubgroupOp::All(_) | SubgroupOp::Any(_) => Type::BOOL,
            _ => first.unwrap_or(Type::U32),
        }
    }

    /// What is wrong with its operand types, if anything (the verifier's E0334); `types`
    /// has one entry per operand of [`SubgroupOp::operands`].
    ///
    /// Collectives take 32-bit scalars and vectors: 8-, 16- and 64-bit types in subgroup
    /// operations need the Vulkan feature `shaderSubgroupExtendedTypes`, which cmdgraph does
    /// not ask for.
    pub fn operand_problem(&self, types: &[Type]) -> Option<String> {
        let word = |t: Type| matches!(t.scalar, ScalarType::I32 | ScalarType::U32 | ScalarType::F32);
        let first = types.first().copied();
        match self {
            SubgroupOp::Builtin(_) | SubgroupOp::Elect => None,
            SubgroupOp::Arith { op, .. } => {
                let t = first?;
                if op.bitwise() && !matches!(t.scalar, ScalarType::I32 | ScalarType::U32) {
                    Some(format!("`{}` takes `i32` or `u32` scalars or vectors, not {t}", op.keyword()))
                } else if !word(t) {
                    Some(format!("`{}` takes `i32`, `u32` or `f32` scalars or vectors, not {t}", op.keyword()))
                } else {
                    None
                }
            }
            SubgroupOp::Broadcast(..) | SubgroupOp::Shuffle(..) | SubgroupOp::BroadcastFirst(_) => {
                let t = first?;
                if !word(t) && t.scalar != ScalarType::Bool {
                    return Some(format!("the value must be `i32`, `u32`, `f32` or `bool` (or a vector), not {t}"));
                }
                match types.get(1) {
                    Some(&l) if l != Type::U32 => Some(format!("the lane index must be `u32`, not {l}")),
                    _ => None,
                }
            }
            SubgroupOp::Ballot(_) | SubgroupOp::All(_) | SubgroupOp::Any(_) => {
                first.filter(|t| *t != Type::BOOL).map(|t| format!("the condition must be `bool`, not {t}"))
            }
        }
    }
}
