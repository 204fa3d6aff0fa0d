//! The rewrite rules, as data: one table row per rule, grouped by theme, each directional.
//!
//! There is no blanket associativity or commutativity: every rule is written in the one
//! direction that makes the term cheaper or fuses work, so the e-graph stays small. Rows
//! whose pattern mentions `{T}` are instantiated once per scalar type they are exact for;
//! `{0}` and `{1}` stand for that type's zero and one constants (see [`super::lang`]).
//! Floating-point reassociation and contraction rules are only added when
//! [`crate::PassOptions::fuse_fp_reassoc`] is set: they change results in the last bits.

use super::lang::{const_symbol, DEAD_PREFIX};
use cmdgraph_ir::types::{LitValue, ScalarType};
use egg::{ConditionalApplier, EGraph, Id, Pattern, Rewrite, Subst, SymbolLang, Var};

/// A rule theme (reported by `--explain`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Theme {
    /// A consumer's load crosses the launch boundary of the producer before it.
    Vertical,
    /// A sibling's load crosses the launch boundary of a kernel it shares inputs with.
    Horizontal,
    /// A load reads the latest store to its memory, skipping stores to other memory.
    Forward,
    /// A store to graph-owned memory that nothing reads after the group is dropped.
    DeadStore,
    /// Exact algebraic identities.
    Arith,
    /// Floating-point reassociation and contraction (opt-in).
    Reassoc,
}

impl Theme {
    /// The theme's name as `--explain` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Theme::Vertical => "vertical",
            Theme::Horizontal => "horizontal",
            Theme::Forward => "store-to-load",
            Theme::DeadStore => "dead-store",
            Theme::Arith => "arith",
            Theme::Reassoc => "fp-reassoc",
        }
    }
}

/// A side condition of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cond {
    None,
    /// `?m` and `?n` are different memories (memory leaves are never merged, so different
    /// e-classes are different memory objects).
    Distinct,
    /// `?m` is a graph-owned temporary whose every use is inside the group.
    DeadTemp,
}

/// Which scalar types a rule row is instantiated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Types {
    /// Not typed.
    Untyped,
    /// Every numeric type (the identity holds bit-exactly for all of them).
    Numeric,
    /// Integer types only (e.g. `x + 0 = x` does not hold for `x = -0.0`).
    Integer,
    /// Float types only.
    Float,
}

struct Row {
    theme: Theme,
    name: &'static str,
    lhs: &'static str,
    rhs: &'static str,
    types: Types,
    cond: Cond,
}

const fn row(theme: Theme, name: &'static str, lhs: &'static str, rhs: &'static str, types: Types) -> Row {
    Row { theme, name, lhs, rhs, types, cond: Cond::None }
}

/// The rule table. `ld m s`: the element at the work-item's index of memory `m` in memory
/// state `s`; `st m v s`: state `s` after storing `v` there; `vbound s` / `hbound s`: the
/// launch boundary after a kernel whose results the next kernel reads (vertical) or does not
/// read (horizontal); `out m v rest`: the group's final store of `v` into `m`.
const ROWS: &[Row] = &[
    row(Theme::Vertical, "load-through-producer", "(ld ?m (vbound ?s))", "(ld ?m ?s)", Types::Untyped),
    row(Theme::Horizontal, "load-beside-sibling", "(ld ?m (hbound ?s))", "(ld ?m ?s)", Types::Untyped),
    row(Theme::Forward, "forward-store", "(ld ?m (st ?m ?v ?s))", "?v", Types::Untyped),
    Row {
        theme: Theme::Forward,
        name: "skip-other-store",
        lhs: "(ld ?m (st ?n ?v ?s))",
        rhs: "(ld ?m ?s)",
        types: Types::Untyped,
        cond: Cond::Distinct,
    },
    Row {
        theme: Theme::DeadStore,
        name: "drop-temporary-store",
        lhs: "(out ?m ?v ?rest)",
        rhs: "?rest",
        types: Types::Untyped,
        cond: Cond::DeadTemp,
    },
    row(Theme::Arith, "mul-one-right", "(mul.{T} ?x {1})", "?x", Types::Numeric),
    row(Theme::Arith, "mul-one-left", "(mul.{T} {1} ?x)", "?x", Types::Numeric),
    row(Theme::Arith, "div-one", "(div.{T} ?x {1})", "?x", Types::Numeric),
    row(Theme::Arith, "sub-zero", "(sub.{T} ?x {0})", "?x", Types::Numeric),
    row(Theme::Arith, "add-zero-right", "(add.{T} ?x {0})", "?x", Types::Integer),
    row(Theme::Arith, "add-zero-left", "(add.{T} {0} ?x)", "?x", Types::Integer),
    row(Theme::Arith, "neg-neg", "(neg.{T} (neg.{T} ?x))", "?x", Types::Numeric),
    row(Theme::Arith, "min-same", "(min.{T} ?x ?x)", "?x", Types::Numeric),
    row(Theme::Arith, "max-same", "(max.{T} ?x ?x)", "?x", Types::Numeric),
    row(Theme::Arith, "select-same", "(select.{T} ?c ?x ?x)", "?x", Types::Numeric),
    row(
        Theme::Reassoc,
        "add-assoc-right",
        "(add.{T} (add.{T} ?a ?b) ?c)",
        "(add.{T} ?a (add.{T} ?b ?c))",
        Types::Float,
    ),
    row(
        Theme::Reassoc,
        "mul-assoc-right",
        "(mul.{T} (mul.{T} ?a ?b) ?c)",
        "(mul.{T} ?a (mul.{T} ?b ?c))",
        Types::Float,
    ),
    row(Theme::Reassoc, "contract-fma", "(add.{T} (mul.{T} ?a ?b) ?c)", "(fma.{T} ?a ?b ?c)", Types::Float),
    row(
        Theme::Reassoc,
        "factor-mul",
        "(add.{T} (mul.{T} ?a ?x) (mul.{T} ?b ?x))",
        "(mul.{T} (add.{T} ?a ?b) ?x)",
        Types::Float,
    ),
];

const NUMERIC: [ScalarType; 11] = [
    ScalarType::I8,
    ScalarType::U8,
    ScalarType::I16,
    ScalarType::U16,
    ScalarType::I32,
    ScalarType::U32,
    ScalarType::I64,
    ScalarType::U64,
    ScalarType::F16,
    ScalarType::F32,
    ScalarType::F64,
];

/// One instantiated rule with its theme.
pub struct Rule {
    /// Its theme.
    pub theme: Theme,
    /// The egg rewrite (named `<theme>/<row name>[.<type>]`).
    pub rewrite: Rewrite<SymbolLang, ()>,
}

/// The rules for one run: every row, instantiated per type, reassociation rows only when
/// `fp_reassoc` is set. A row that does not parse is a bug in the table and is skipped (the
/// unit tests check that none is).
pub fn rules(fp_reassoc: bool) -> Vec<Rule> {
    let mut out = Vec::new();
    for r in ROWS {
        if r.theme == Theme::Reassoc && !fp_reassoc {
            continue;
        }
        let types: Vec<Option<ScalarType>> = match r.types {
            Types::Untyped => vec![None],
            Types::Numeric => NUMERIC.iter().copied().map(Some).collect(),
            Types::Integer => NUMERIC.iter().copied().filter(|t| t.is_integer()).map(Some).collect(),
            Types::Float => NUMERIC.iter().copied().filter(|t| t.is_float()).map(Some).collect(),
        };
        for ty in types {
            if let Some(rule) = instantiate(r, ty) {
                out.push(rule);
            }
        }
    }
    out
}

fn instantiate(r: &Row, ty: Option<ScalarType>) -> Option<Rule> {
    let fill = |s: &str| match ty {
        None => s.to_string(),
        Some(t) => {
            let (zero, one) = if t.is_float() {
                (LitValue::Float(0.0), LitValue::Float(1.0))
            } else {
                (LitValue::Int(0), LitValue::Int(1))
            };
            let ty = cmdgraph_ir::types::Type::scalar(t);
            s.replace("{T}", &ty.to_string())
                .replace("{0}", &const_symbol(zero, ty))
                .replace("{1}", &const_symbol(one, ty))
        }
    };
    let name = match ty {
        None => format!("{}/{}", r.theme.name(), r.name),
        Some(t) => format!("{}/{}.{}", r.theme.name(), r.name, t),
    };
    let lhs: Pattern<SymbolLang> = fill(r.lhs).parse().ok()?;
    let rhs: Pattern<SymbolLang> = fill(r.rhs).parse().ok()?;
    let rewrite = match r.cond {
        Cond::None => Rewrite::new(name, lhs, rhs).ok()?,
        Cond::Distinct => {
            let (m, n) = ("?m".parse::<Var>().ok()?, "?n".parse::<Var>().ok()?);
            let condition = move |eg: &mut EGraph<SymbolLang, ()>, _: Id, s: &Subst| eg.find(s[m]) != eg.find(s[n]);
            Rewrite::new(name, lhs, ConditionalApplier { condition, applier: rhs }).ok()?
        }
        Cond::DeadTemp => {
            let m = "?m".parse::<Var>().ok()?;
            let condition = move |eg: &mut EGraph<SymbolLang, ()>, _: Id, s: &Subst| {
                eg[s[m]].nodes.iter().any(|n| n.op.as_str().starts_with(DEAD_PREFIX))
            };
            Rewrite::new(name, lhs, ConditionalApplier { condition, applier: rhs }).ok()?
        }
    };
    Some(Rule { theme: r.theme, rewrite })
}

/// The theme of a rule by its name (the part before `/`).
pub fn theme_of(name: &str) -> Option<Theme> {
    let prefix = name.split('/').next()?;
    [Theme::Vertical, Theme::Horizontal, Theme::Forward, Theme::DeadStore, Theme::Arith, Theme::Reassoc]
        .into_iter()
        .find(|t| t.name() == prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_instantiates() {
        let expected: usize = ROWS
            .iter()
            .map(|r| match r.types {
                Types::Untyped => 1,
                Types::Numeric => 11,
                Types::Integer => 8,
                Types::Float => 3,
            })
            .sum();
        assert_eq!(rules(true).len(), expected);
        assert!(rules(false).len() < expected);
        assert!(rules(false).iter().all(|r| r.theme != Theme::Reassoc));
    }
}
