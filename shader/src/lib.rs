//! Translates a WGSL or GLSL compute shader into a kernel of cmdgraph's IR, as IR text.
//!
//! The shader is parsed by [naga](https://docs.rs/naga)'s `wgsl-in` / `glsl-in` front ends
//! and validated by naga's validator; the entry point's naga IR is then lowered to the IR's
//! structured SSA form (docs/ir.md, "Kernels"). naga 28 is used: it is the newest release
//! whose `rust-version` (1.82) fits the workspace's 1.85 (naga 29 and 30 need Rust 1.87).
//!
//! # Parameters
//!
//! The kernel's parameters come in this order (see [`ParamOrigin`]):
//! 1. storage buffers the entry point uses, by (group, binding), as `buf<T, access>`;
//! 2. the scalar members of the uniform blocks the entry point uses, by (group, binding) and
//!    then member order;
//! 3. the scalar members of the push-constant block, in member order.
//!
//! # What is translated
//!
//! Storage buffers holding a runtime-sized or fixed-size array of scalars or vectors, or one
//! scalar or vector (bare or as the one member of a struct), scalar uniforms, work-group arrays and scalars (`local T[n]`), the
//! `global_invocation_id`, `local_invocation_id`, `local_invocation_index`, `workgroup_id`
//! and `num_workgroups` builtins, arithmetic, comparisons, `select`, numeric casts, vector
//! construction / lanes / swizzles, the math functions the IR has and those WGSL defines in
//! terms of them (`dot mix length distance normalize cross sign step smoothstep fract trunc
//! round saturate`, integer `abs`, `countOneBits`), local variables (turned into SSA values,
//! merged at `if`s and carried through loops), `switch` (a chain of `if`s), counted `for`
//! loops, calls of user functions (inlined), atomics (`atomicCompareExchangeWeak` as the IR's
//! strong `cmpxchg`) and work-group barriers. Anything else is a
//! [`ShaderError`] pointing at the construct; no input makes [`translate`] panic.
//!
//! # Semantics kept
//!
//! - WGSL integer `/` by zero gives the dividend (the IR's `div` gives 0): a `select` fixes
//!   it up. WGSL float `%` is `e1 - e2 * trunc(e1 / e2)` (the IR's `rem` is the exact
//!   fmod), written out with IR ops. GLSL leaves both undefined and gets the plain ops.
//! - Shift amounts: WGSL takes them modulo the bit width, as the IR does; a `u32` amount
//!   of an `i32` shift is cast to `i32` (same bits, same result).
//! - `clamp(e, lo, hi)` is `min(max(e, lo), hi)`, WGSL's definition; the other written-out
//!   functions follow the WGSL specification's formulas (`mix` = `e1 * (1 - e3) + e2 * e3`,
//!   `dot` adds the lane products in lane order, `round` is exactly round-half-to-even,
//!   `sign` of a float zero or NaN is its argument).
//! - `switch`: case groups tested in order, `default` last; a `break` ending a case leaves
//!   the switch; a case body that falls through into the next (GLSL) is refused.
//! - A `return` must end the function: at its end, at the end of both branches of a final
//!   `if`, or in a guard `if c { return; } rest` (the rest becomes the other branch).
//! - Loops: only `for (var i = lo; i < hi; i += step)` with a positive literal step, a
//!   bound that reads no memory and no variable the loop changes, and no `break`,
//!   `continue` or `return` inside; its counter may not be read after the loop. (The IR's
//!   loop stops at `hi` where the shader's would wrap past it only when `hi` is within
//!   `step` of the type's maximum.)
//!
//! # Refused, with a [`ShaderError`] at the construct
//!
//! `while` / `loop` / other loop shapes, `break`, `continue`, early `return`, `switch` cases
//! that fall through, textures and samplers, buffers of structs / several members,
//! non-scalar uniform members, f16 and f64, matrices, arrays and structs as values,
//! dynamic indexing of vectors, stores to one lane of a vector in memory,
//! `arrayLength`, uses of a whole array or struct loaded from memory, math functions the IR
//! cannot express exactly, derivatives,
//! subgroup operations, pipeline overrides, and a memory barrier without a control barrier.

mod error;
mod lower;
mod resolve;
mod types;

pub use error::ShaderError;
pub use resolve::{resolve, ResolveError};

use naga::valid::{Capabilities, ValidationFlags, Validator};

/// The language of the shader source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// WGSL.
    Wgsl,
    /// GLSL (a `#version 450` compute shader; naga calls its entry point `main`).
    Glsl,
}

/// A translated compute entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Translated {
    /// The kernel: `kernel @NAME(params) {\n ...\n}\n`.
    pub text: String,
    /// Where each kernel parameter comes from, in parameter order.
    pub params: Vec<ParamOrigin>,
    /// The shader's work-group size (`@workgroup_size` / `local_size_*`); the launch of the
    /// kernel should use it as its local range, since the IR kernel cannot state it.
    pub workgroup_size: [u32; 3],
}

/// What a kernel parameter stands for in the shader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamOrigin {
    /// A storage buffer at (`group`, `binding`); `name` is the shader's name for it.
    Storage {
        /// The bind group (GLSL `set`).
        group: u32,
        /// The binding within the group.
        binding: u32,
        /// The variable's name, or the array member's for a nameless GLSL block.
        name: String,
    },
    /// Scalar member `member` of a uniform block at (`group`, `binding`).
    Uniform {
        /// The bind group (GLSL `set`).
        group: u32,
        /// The binding within the group.
        binding: u32,
        /// The member's name (the variable's, for a bare `var<uniform> a: f32`).
        member: String,
    },
    /// Scalar member `member` of the push-constant block.
    PushConstant {
        /// The member's name.
        member: String,
    },
}

/// Translates the compute entry point `entry` of `source` into an IR kernel named
/// `kernel_name` (without the `@`).
///
/// The output depends only on the arguments (same input, same text).
pub fn translate(lang: Lang, source: &str, entry: &str, kernel_name: &str) -> Result<Translated, ShaderError> {
    // naga's front ends have panicked on malformed input in past releases; a panic there
    // (or a bug here) must reach the caller as an error, not take down a compiler driver.
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| translate_inner(lang, source, entry, kernel_name)))
            .unwrap_or_else(|_| {
                Err(ShaderError {
                    span: 0..0,
                    message: "internal error: the shader front end or translator panicked on this input".into(),
                    help: "please report the shader".into(),
                })
            });
    result.map_err(|e| e.clamped(source))
}

fn translate_inner(lang: Lang, source: &str, entry: &str, kernel_name: &str) -> Result<Translated, ShaderError> {
    let mut module = parse(lang, source)?;
    // GLSL's `writeonly buffer` comes out of naga's front end as a store-only storage
    // variable, which its validator refuses (WGSL has no such thing): it is validated as
    // read-write and becomes a `write` buffer parameter.
    let mut write_only = std::collections::BTreeSet::new();
    for (h, g) in module.global_variables.iter_mut() {
        if let naga::AddressSpace::Storage { access } = &mut g.space {
            if !access.contains(naga::StorageAccess::LOAD) {
                *access |= naga::StorageAccess::LOAD;
                write_only.insert(h.index() as u32);
            }
        }
    }
    // All capabilities: what naga would refuse for a missing capability (f64, push
    // constants, ...) is either translated or refused below with a message of our own.
    let mut validator = Validator::new(ValidationFlags::all(), Capabilities::all());
    let info = validator.validate(&module).map_err(|e| {
        let span = e.spans().next().map(|(s, _)| *s).unwrap_or_default();
        // naga's top-level message names only the function; the causes say what is wrong.
        let mut message = format!("invalid shader: {}", e.as_inner());
        let mut cause = std::error::Error::source(e.as_inner());
        while let Some(c) = cause {
            message.push_str(&format!(": {c}"));
            cause = c.source();
        }
        ShaderError::at(span, message, "")
    })?;
    let Some(index) = module.entry_points.iter().position(|ep| ep.name == entry) else {
        let present: Vec<String> =
            module.entry_points.iter().map(|ep| format!("`{}` ({:?})", ep.name, ep.stage).to_lowercase()).collect();
        let listed = if present.is_empty() { "none".to_string() } else { present.join(", ") };
        return Err(ShaderError::at(
            naga::Span::default(),
            format!("no entry point `{entry}`; the shader has: {listed}"),
            "name one of the compute entry points",
        ));
    };
    let ep = &module.entry_points[index];
    if ep.stage != naga::ShaderStage::Compute {
        return Err(ShaderError::at(
            naga::Span::default(),
            format!("entry point `{entry}` is a {:?} shader, not a compute shader", ep.stage).to_lowercase(),
            "only compute entry points become kernels",
        ));
    }
    if !kernel_name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        || !kernel_name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
    {
        return Err(ShaderError::at(
            naga::Span::default(),
            format!("`{kernel_name}` is not a valid kernel name"),
            "use letters, digits and `_`, not starting with a digit",
        ));
    }
    lower::lower(&module, info.get_entry_point(index), ep, lang, kernel_name, &write_only)
}

fn parse(lang: Lang, source: &str) -> Result<naga::Module, ShaderError> {
    match lang {
        Lang::Wgsl => naga::front::wgsl::parse_str(source).map_err(|e| {
            let span = e.labels().next().map(|(s, _)| s).unwrap_or_default();
            ShaderError::at(span, format!("WGSL: {}", e.message()), "")
        }),
        Lang::Glsl => {
            let options = naga::front::glsl::Options::from(naga::ShaderStage::Compute);
            naga::front::glsl::Frontend::default().parse(&options, source).map_err(|e| match e.errors.first() {
                Some(first) => ShaderError::at(first.meta, format!("GLSL: {}", first.kind), ""),
                None => ShaderError::at(naga::Span::default(), "GLSL: the shader did not parse", ""),
            })
        }
    }
}
