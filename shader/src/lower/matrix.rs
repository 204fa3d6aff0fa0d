//! Matrix arithmetic on matrices taken apart into their columns (aggregate.rs): a matrix
//! value is a [`Val::Struct`] of column vectors. Products are written as the SPIR-V
//! definitions spell them: `M * v` is the sum over columns of `column_c * v[c]`, `v * M` the
//! dot product of `v` with each column, `A * B` the product of `A` with each column of `B`;
//! each `mul` and `add` rounds on its own (the IR never contracts them), in column order.

use naga::BinaryOperator as B;

use super::{Lowerer, Val};
use crate::error::{Result, ShaderError};
use crate::types::Ty;

impl Lowerer<'_> {
    /// `l op r` where at least one side is a matrix.
    pub(crate) fn matrix_binary(&mut self, op: B, l: Val, r: Val, span: naga::Span) -> Result<Val> {
        match (op, l, r) {
            (B::Add | B::Subtract, Val::Struct(a), Val::Struct(b)) if a.len() == b.len() => {
                let name = if op == B::Add { "add" } else { "sub" };
                let mut cols = Vec::new();
                for (x, y) in a.iter().zip(&b) {
                    let (x, t) = self.ssa(x, span)?;
                    let (y, _) = self.ssa(y, span)?;
                    cols.push(Val::Ssa(self.op(format!("{name} {x}, {y}"), t).0, t));
                }
                Ok(Val::Struct(cols))
            }
            (B::Multiply, Val::Struct(a), Val::Struct(b)) => {
                let mut cols = Vec::new();
                for col in &b {
                    let (n, t) = self.ssa(col, span)?;
                    let (c, ct) = self.matrix_times_vector(&a, (n, t), span)?;
                    cols.push(Val::Ssa(c, ct));
                }
                Ok(Val::Struct(cols))
            }
            (B::Multiply, Val::Struct(m), v) => {
                let (n, t) = self.ssa(&v, span)?;
                if t.lanes == 1 {
                    return self.matrix_times_scalar(&m, &n, span);
                }
                let (c, ct) = self.matrix_times_vector(&m, (n, t), span)?;
                Ok(Val::Ssa(c, ct))
            }
            (B::Multiply, v, Val::Struct(m)) => {
                let (n, t) = self.ssa(&v, span)?;
                if t.lanes == 1 {
                    return self.matrix_times_scalar(&m, &n, span);
                }
                // v * M: lane c is dot(v, column c).
                let lanes = self.lanes_of(&n, t);
                let mut out = Vec::new();
                for col in &m {
                    let (cn, ct) = self.ssa(col, span)?;
                    let col_lanes = self.lanes_of(&cn, ct);
                    if col_lanes.len() != lanes.len() {
                        return Err(mismatch(span));
                    }
                    let mut acc = self.op(format!("mul {}, {}", lanes[0], col_lanes[0]), t.with_lanes1()).0;
                    for (x, y) in lanes.iter().zip(&col_lanes).skip(1) {
                        let (p, _) = self.op(format!("mul {x}, {y}"), t.with_lanes1());
                        acc = self.op(format!("add {acc}, {p}"), t.with_lanes1()).0;
                    }
                    out.push(acc);
                }
                let rt = Ty { s: t.s, lanes: out.len() as u8 };
                if out.len() == 1 {
                    return Ok(Val::Ssa(out.remove(0), t.with_lanes1()));
                }
                Ok(Val::Ssa(self.op(format!("vec {}", out.join(", ")), rt).0, rt))
            }
            _ => {
                Err(ShaderError::at(span, "this matrix operation is not supported", "use `+`, `-` and `*` on matrices"))
            }
        }
    }

    /// `M * v`: the sum over columns of `column_c * v[c]`.
    fn matrix_times_vector(&mut self, m: &[Val], (n, t): (String, Ty), span: naga::Span) -> Result<(String, Ty)> {
        let lanes = self.lanes_of(&n, t);
        if lanes.len() != m.len() {
            return Err(mismatch(span));
        }
        let mut acc: Option<(String, Ty)> = None;
        for (col, x) in m.iter().zip(&lanes) {
            let (c, ct) = self.ssa(col, span)?;
            let (s, _) = self.op(format!("splat {x} : {}", ct.text()), ct);
            let (p, _) = self.op(format!("mul {c}, {s}"), ct);
            acc = Some(match acc {
                None => (p, ct),
                Some((a, _)) => self.op(format!("add {a}, {p}"), ct),
            });
        }
        acc.ok_or_else(|| mismatch(span))
    }

    /// Every column times the scalar `s`.
    fn matrix_times_scalar(&mut self, m: &[Val], s: &str, span: naga::Span) -> Result<Val> {
        let mut cols = Vec::new();
        for col in m {
            let (c, ct) = self.ssa(col, span)?;
            let (sp, _) = self.op(format!("splat {s} : {}", ct.text()), ct);
            cols.push(Val::Ssa(self.op(format!("mul {c}, {sp}"), ct).0, ct));
        }
        Ok(Val::Struct(cols))
    }
}

fn mismatch(span: naga::Span) -> ShaderError {
    ShaderError::at(span, "internal: matrix and vector sizes differ", "")
}
