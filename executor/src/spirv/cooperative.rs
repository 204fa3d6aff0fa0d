//! The cooperative-matrix multiply-adds a module performs (`SPV_KHR_cooperative_matrix`), each
//! with its shape, component types and scope: what [`crate::features::check`] holds against
//! the configurations the device lists (`vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR`).
//! The validator cannot know that list, and a driver given a combination outside it is free
//! to fail in any way, so such a module is refused before it reaches the driver.

use super::{instructions, OP_CONSTANT, OP_TYPE_FLOAT, OP_TYPE_INT};
use std::collections::BTreeMap;
use std::fmt;

const OP_TYPE_COOPERATIVE_MATRIX: u32 = 4456;
const OP_COOPERATIVE_MATRIX_MUL_ADD: u32 = 4459;
/// `OpTypeInt` .. `OpTypeForwardPointer`, `OpTypeCooperativeMatrixKHR`: instructions that
/// declare a type (their first operand is the new type's id).
fn declares_type(opcode: u32) -> bool {
    matches!(opcode, 19..=39 | 322 | 327 | 4456 | 5341 | 5358)
}

/// `Cooperative Matrix Operands` bits of a multiply-add (SPIR-V 3.2.53): signed integer
/// components of A, B, C and the result, and saturating accumulation.
const A_SIGNED: u32 = 0x1;
const B_SIGNED: u32 = 0x2;
const C_SIGNED: u32 = 0x4;
const RESULT_SIGNED: u32 = 0x8;
const SATURATING: u32 = 0x10;

/// A component type of a cooperative matrix, as Vulkan tells them apart
/// (`VkComponentTypeKHR`): an integer's signedness is the multiply-add's, not its type's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Component {
    /// An IEEE float of this width.
    Float(u32),
    /// An integer of this width, signed or not.
    Int {
        /// Bits.
        width: u32,
        /// Whether the multiply-add reads it as signed.
        signed: bool,
    },
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Component::Float(w) => write!(f, "f{w}"),
            Component::Int { width, signed: true } => write!(f, "i{width}"),
            Component::Int { width, signed: false } => write!(f, "u{width}"),
        }
    }
}

/// One multiply-add configuration: `result (m × n) = a (m × k) · b (k × n) + c (m × n)` at
/// `scope` (a SPIR-V scope, which `VkScopeKHR` numbers the same way). A module's
/// `OpCooperativeMatrixMulAddKHR` and an entry of the device's list are both this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MulAdd {
    /// Rows of A, C and the result.
    pub m: u32,
    /// Columns of B, C and the result.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
    /// A's components.
    pub a: Component,
    /// B's components.
    pub b: Component,
    /// C's components.
    pub c: Component,
    /// The result's components.
    pub result: Component,
    /// SPIR-V scope: 3 a subgroup, 2 a work-group.
    pub scope: u32,
    /// Whether the accumulation saturates (integers only).
    pub saturating: bool,
}

impl fmt::Display for MulAdd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = match self.scope {
            3 => "subgroup".to_string(),
            2 => "work-group".to_string(),
            s => format!("scope {s}"),
        };
        let sat = if self.saturating { ", saturating" } else { "" };
        write!(
            f,
            "{}x{}x{} {}·{} + {} → {} at {scope} scope{sat}",
            self.m, self.n, self.k, self.a, self.b, self.c, self.result
        )
    }
}

/// A cooperative-matrix type's operands, resolved: (component, scope, rows, columns, use).
type MatrixType = (Component, u32, u32, u32, u32);

/// The multiply-adds of `words` (a module the validator accepted), in module order, without
/// repeats. `Err` says which one could not be resolved: a size or scope that is not a plain
/// constant (a specialization constant), or an operand whose type the walk does not know.
pub fn mul_adds(words: &[u32]) -> Result<Vec<MulAdd>, String> {
    // id -> (float, width) of scalar types; id -> value of 32-bit integer constants;
    // id -> resolved matrix type; value id -> its type id.
    let mut scalars: BTreeMap<u32, (bool, u32)> = BTreeMap::new();
    let mut constants: BTreeMap<u32, u32> = BTreeMap::new();
    let mut matrices: BTreeMap<u32, Option<MatrixType>> = BTreeMap::new();
    let mut type_ids = std::collections::BTreeSet::new();
    let mut value_types: BTreeMap<u32, u32> = BTreeMap::new();
    let mut found = Vec::new();
    for (_, opcode, ops) in instructions(words) {
        match (opcode, ops) {
            (OP_TYPE_INT, [id, width, ..]) => {
                scalars.insert(*id, (false, *width));
            }
            (OP_TYPE_FLOAT, [id, width, ..]) => {
                scalars.insert(*id, (true, *width));
            }
            (OP_CONSTANT, [ty, id, value]) if scalars.get(ty).is_some_and(|&(f, w)| !f && w == 32) => {
                constants.insert(*id, *value);
            }
            (OP_TYPE_COOPERATIVE_MATRIX, [id, component, scope, rows, cols, usage]) => {
                let resolved = (|| {
                    let &(float, width) = scalars.get(component)?;
                    let c = if float { Component::Float(width) } else { Component::Int { width, signed: false } };
                    Some((
                        c,
                        *constants.get(scope)?,
                        *constants.get(rows)?,
                        *constants.get(cols)?,
                        *constants.get(usage)?,
                    ))
                })();
                matrices.insert(*id, resolved);
            }
            (OP_COOPERATIVE_MATRIX_MUL_ADD, [result_ty, _, a, b, c, rest @ ..]) => {
                let mask = rest.first().copied().unwrap_or(0);
                let of = |value: &u32| value_types.get(value).and_then(|t| matrices.get(t)).copied().flatten();
                let (Some(r), Some(a), Some(b), Some(c)) =
                    (matrices.get(result_ty).copied().flatten(), of(a), of(b), of(c))
                else {
                    return Err(format!(
                        "a cooperative-matrix multiply-add (result type %{result_ty}) whose operand types are not \
                         plain cooperative-matrix types with constant sizes and scope"
                    ));
                };
                let signed = |comp: Component, bit: u32| match comp {
                    Component::Int { width, .. } => Component::Int { width, signed: mask & bit != 0 },
                    float => float,
                };
                let m = MulAdd {
                    m: r.2,
                    n: r.3,
                    k: a.3,
                    a: signed(a.0, A_SIGNED),
                    b: signed(b.0, B_SIGNED),
                    c: signed(c.0, C_SIGNED),
                    result: signed(r.0, RESULT_SIGNED),
                    scope: r.1,
                    saturating: mask & SATURATING != 0,
                };
                if !found.contains(&m) {
                    found.push(m);
                }
            }
            _ => {}
        }
        // A type id is never a value id, so an instruction whose first operand is a type
        // declared before it has that result type and its second operand is the result.
        if declares_type(opcode) {
            if let Some(id) = ops.first() {
                type_ids.insert(*id);
            }
        } else if let [ty, id, ..] = ops {
            if type_ids.contains(ty) {
                value_types.insert(*id, *ty);
            }
        }
    }
    Ok(found)
}

/// tests/data/cooperative_matrix_f16.spv (assembled from the `.spvasm` beside it) as words:
/// one 16x16x16 f16·f16 + f32 multiply-add on a subgroup ([`test_mul_add`]).
#[cfg(test)]
pub(crate) fn test_module() -> Vec<u32> {
    let bytes = include_bytes!("../../tests/data/cooperative_matrix_f16.spv");
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The multiply-add of [`test_module`].
#[cfg(test)]
pub(crate) fn test_mul_add() -> MulAdd {
    MulAdd {
        m: 16,
        n: 16,
        k: 16,
        a: Component::Float(16),
        b: Component::Float(16),
        c: Component::Float(32),
        result: Component::Float(32),
        scope: 3,
        saturating: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_modules_multiply_add_is_16x16x16_f16_into_f32_on_a_subgroup() {
        let found = mul_adds(&test_module()).unwrap();
        let want = test_mul_add();
        assert_eq!(found, vec![want]);
        assert_eq!(want.to_string(), "16x16x16 f16·f16 + f32 → f32 at subgroup scope");
        assert_eq!(mul_adds(&test_module()[..5]).unwrap(), vec![]);
    }

    /// Operand words of the first instruction with `opcode`.
    fn at(words: &[u32], opcode: u32) -> usize {
        instructions(words).find(|(_, op, _)| *op == opcode).map(|(i, ..)| i).unwrap()
    }

    #[test]
    fn an_operand_of_unknown_type_is_an_error_not_a_guess() {
        let mut w = test_module();
        let i = at(&w, OP_COOPERATIVE_MATRIX_MUL_ADD);
        w[i + 3] = 0xffff; // A: an id nothing defines
        let e = mul_adds(&w).unwrap_err();
        assert!(e.contains("not plain cooperative-matrix types"), "{e}");
        // A matrix type whose row count is not a constant (here: the type's own component).
        let mut w = test_module();
        let t = at(&w, OP_TYPE_COOPERATIVE_MATRIX);
        w[t + 4] = w[t + 2];
        assert!(mul_adds(&w).is_err());
    }

    #[test]
    fn integer_signedness_and_saturation_come_from_the_operand_mask() {
        // The test module with A and B of 32-bit integers and a mask operand added to the
        // multiply-add: A signed, saturating.
        let mut w = test_module();
        let int = w[at(&w, OP_TYPE_INT) + 1];
        let types: Vec<usize> =
            instructions(&w).filter(|(_, op, _)| *op == OP_TYPE_COOPERATIVE_MATRIX).map(|(i, ..)| i).collect();
        w[types[0] + 2] = int;
        w[types[1] + 2] = int;
        let i = at(&w, OP_COOPERATIVE_MATRIX_MUL_ADD);
        w[i] += 1 << 16;
        w.insert(i + 6, A_SIGNED | SATURATING);
        let found = mul_adds(&w).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].a, Component::Int { width: 32, signed: true });
        assert_eq!(found[0].b, Component::Int { width: 32, signed: false });
        assert!(found[0].saturating);
        assert_eq!(found[0].to_string(), "16x16x16 i32·u32 + f32 → f32 at subgroup scope, saturating");
    }
}
