//! IR-text renderings of command parts for DOT labels (`args(@x, %t + 64, 2.0 : f32)`); `diff`
//! uses them too, so that its lines read like the IR.
//!
//! These follow docs/ir.md so that a label reads like the statement it came from. They never
//! index an arena directly: a module built through the API may hold dangling handles, and a
//! picture of a broken module is still useful, so a missing entity renders as `?`.

use crate::graph::{Accessor, Arg, ArgValue, Graph, HostTaskCommand, KernelCommand, Launch, MemRef, Node, Pointer};
use crate::module::Module;
use crate::types::{LitValue, Literal};
use crate::Handle;

/// `@name` of a module memory object or `%name` of a graph allocation.
pub(crate) fn memref(module: &Module, graph: &Graph, mem: MemRef) -> String {
    match mem {
        MemRef::Memory(h) => global(module.memories.try_get(h).map(|m| m.name.as_str())),
        MemRef::Alloc(h) => node_ref(graph, h),
    }
}

/// `%name` of a node of `graph`.
pub(crate) fn node_ref(graph: &Graph, node: Handle<Node>) -> String {
    local(graph.nodes.try_get(node).map(|n| n.name.as_str()))
}

/// `@name`, or `@?` for a dangling handle.
pub(crate) fn global(name: Option<&str>) -> String {
    format!("@{}", name.unwrap_or("?"))
}

/// `%name`, or `%?` for a dangling handle.
pub(crate) fn local(name: Option<&str>) -> String {
    format!("%{}", name.unwrap_or("?"))
}

/// `@x`, `@x + 64`.
pub(crate) fn pointer(module: &Module, graph: &Graph, ptr: &Pointer) -> String {
    let base = memref(module, graph, ptr.base);
    if ptr.offset == 0 {
        base
    } else {
        format!("{base} + {}", ptr.offset)
    }
}

/// A literal as the printer writes it: `2.0`, `-3`, `true`, `1.5 : f32`.
pub(crate) fn literal(lit: &Literal) -> String {
    let value = match lit.value {
        LitValue::Bool(b) => b.to_string(),
        LitValue::Int(i) => i.to_string(),
        LitValue::Float(f) if f.is_nan() => "nan".to_string(),
        LitValue::Float(f) if f.is_infinite() => if f > 0.0 { "inf" } else { "-inf" }.to_string(),
        // `{:?}` is the shortest text that reads back to the same f64 (docs/ir.md).
        LitValue::Float(f) => format!("{f:?}"),
    };
    match lit.ty {
        Some(ty) => format!("{value} : {ty}"),
        None => value,
    }
}

/// `acc(@b, read)`, `acc(@b[16..32], write)`.
fn accessor(module: &Module, graph: &Graph, acc: &Accessor) -> String {
    let buffer = memref(module, graph, acc.buffer);
    match acc.range {
        Some((lo, hi)) => format!("acc({buffer}[{lo}..{hi}], {})", acc.mode),
        None => format!("acc({buffer}, {})", acc.mode),
    }
}

/// The value of an argument or dynamic parameter.
pub(crate) fn arg_value(module: &Module, graph: &Graph, value: &ArgValue) -> String {
    match value {
        ArgValue::Scalar(lit) => literal(lit),
        ArgValue::Pointer(ptr) => pointer(module, graph, ptr),
        ArgValue::Accessor(acc) => accessor(module, graph, acc),
        ArgValue::Bytes(bytes) => {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("x\"{hex}\"")
        }
        ArgValue::Local { elem, count } => format!("local {elem}[{count}]"),
    }
}

/// One kernel argument: a value or the dynamic parameter it is registered with.
pub(crate) fn arg(module: &Module, graph: &Graph, arg: &Arg) -> String {
    match arg {
        Arg::Value(v) => arg_value(module, graph, v),
        Arg::Dyn(p) => local(graph.dyn_params.try_get(*p).map(|d| d.name.as_str())),
    }
}

/// `range(1024, 1024)`, `nd_range(global(...), local(...))`, `single_task`.
pub(crate) fn launch(launch: &Launch) -> String {
    let list = |xs: &[u64]| xs.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    match launch {
        Launch::SingleTask => "single_task".to_string(),
        Launch::Range(r) => format!("range({})", list(r)),
        Launch::NdRange { global, local, offset } if offset.is_empty() => {
            format!("nd_range(global({}), local({}))", list(global), list(local))
        }
        Launch::NdRange { global, local, offset } => {
            format!("nd_range(global({}), local({}), offset({}))", list(global), list(local), list(offset))
        }
    }
}

/// `args(@x, %t, 2.0)`.
pub(crate) fn args(module: &Module, graph: &Graph, cmd: &KernelCommand) -> String {
    let parts: Vec<String> = cmd.args.iter().map(|a| arg(module, graph, a)).collect();
    format!("args({})", parts.join(", "))
}

/// `kernel @k range(N) args(...)`: a whole kernel command on one line.
pub(crate) fn kernel_command(module: &Module, graph: &Graph, cmd: &KernelCommand) -> String {
    format!("kernel {} {} {}", kernel_name(module, cmd), launch(&cmd.launch), args(module, graph, cmd))
}

/// `@k`: the kernel a command launches.
pub(crate) fn kernel_name(module: &Module, cmd: &KernelCommand) -> String {
    global(module.kernels.try_get(cmd.kernel).map(|k| k.name.as_str()))
}

/// `access(@x read, %t write)`, empty when the list is.
pub(crate) fn access_list(module: &Module, graph: &Graph, task: &HostTaskCommand) -> Option<String> {
    if task.access.is_empty() {
        return None;
    }
    let parts: Vec<String> =
        task.access.iter().map(|a| format!("{} {}", memref(module, graph, a.mem), a.mode)).collect();
    Some(format!("access({})", parts.join(", ")))
}

/// A string literal as the IR writes it: quoted, with `\\ \" \n \t \u{XXXX}` escapes.
pub(crate) fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ScalarType;

    #[test]
    fn literals_print_like_the_ir() {
        let f = |v: f64, ty| literal(&Literal { value: LitValue::Float(v), ty });
        assert_eq!(f(2.0, None), "2.0");
        assert_eq!(f(1e-7, Some(ScalarType::F32)), "1e-7 : f32");
        assert_eq!(f(f64::NAN, None), "nan");
        assert_eq!(f(f64::NEG_INFINITY, None), "-inf");
        assert_eq!(literal(&Literal { value: LitValue::Int(-3), ty: Some(ScalarType::I32) }), "-3 : i32");
        assert_eq!(literal(&Literal { value: LitValue::Bool(true), ty: None }), "true");
    }

    #[test]
    fn strings_escape_quotes_backslashes_and_controls() {
        assert_eq!(string("a\"b\\c\nd\u{1}é"), "\"a\\\"b\\\\c\\nd\\u{0001}é\"");
    }

    #[test]
    fn launches_print_every_form() {
        assert_eq!(launch(&Launch::SingleTask), "single_task");
        assert_eq!(launch(&Launch::Range(vec![4, 8])), "range(4, 8)");
        let nd = Launch::NdRange { global: vec![64], local: vec![8], offset: vec![] };
        assert_eq!(launch(&nd), "nd_range(global(64), local(8))");
        let nd = Launch::NdRange { global: vec![64], local: vec![8], offset: vec![2] };
        assert_eq!(launch(&nd), "nd_range(global(64), local(8), offset(2))");
    }
}
