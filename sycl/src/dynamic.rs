//! `dynamic_parameter` and `dynamic_command_group` (000 §8.3.2, §8.3.3).
//!
//! Both are explicit-API objects of one modifiable graph. A parameter's value lives in the
//! IR (`dyn %p = ...`); the builder keeps, per parameter, every kernel argument slot it
//! was registered with (of a node, or of a dynamic command group's alternative). A slot
//! names one parameter in the IR, and two parameters may be registered with one slot:
//! `update` re-points all of its parameter's slots to it, so the parameter updated last
//! decides the slot, as in DPC++, where `update` writes the value into every registered
//! (node, argument) (decision A6). A dynamic command group's alternatives live in the IR
//! (`dcg %d active(i) { ... }`); nodes running it are `dynamic %d`.

use crate::args::KArg;
use crate::error::{ensure, Result, SyclError};
use crate::graph::{GraphInner, ModifiableGraph};
use crate::handler::{Command, CommandGroup, Handler, Mode};
use crate::memory::{Element, PtrBase};
use crate::queue::Event;
use cmdgraph_ir::{
    Alternative, Arg, ArgValue, DynCommandGroup, DynParam, Graph, Handle, Literal, Node, NodeKind, Span, Stmt,
};
use std::cell::RefCell;
use std::rc::Rc;

/// The dependencies of each alternative of a dynamic command group, checked for equal
/// topology when the group is added (row 11).
#[derive(Clone, Default)]
pub(crate) struct DcgDeps {
    pub(crate) events: Vec<Vec<Event>>,
    pub(crate) reqs: Vec<Vec<cmdgraph_ir::Accessor>>,
}

/// What holds a kernel argument slot registered with a dynamic parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotOwner {
    /// A kernel node.
    Node(Handle<Node>),
    /// Alternative `index` of a dynamic command group.
    Alternative { dcg: Handle<DynCommandGroup>, index: usize },
}

/// A kernel argument slot registered with a dynamic parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DynSlot {
    pub(crate) owner: SlotOwner,
    /// The argument index.
    pub(crate) arg: usize,
}

impl DynSlot {
    /// The slot's argument in `g`, if it is still a kernel argument there.
    fn arg_mut(self, g: &mut Graph) -> Option<&mut Arg> {
        let cmd = match self.owner {
            SlotOwner::Node(n) => match &mut g.nodes.try_get_mut(n)?.kind {
                NodeKind::Kernel(cmd) => cmd,
                _ => return None,
            },
            SlotOwner::Alternative { dcg, index } => match g.dcgs.try_get_mut(dcg)?.alternatives.get_mut(index)? {
                Alternative::Kernel(cmd) => cmd,
                _ => return None,
            },
        };
        cmd.args.get_mut(self.arg)
    }
}

impl GraphInner {
    /// Records the registrations `regs` (argument index, parameter) of `owner`, once it
    /// exists: a command group that fails registers nothing.
    pub(crate) fn register_slots(&mut self, owner: SlotOwner, regs: &[(usize, Handle<DynParam>)]) {
        for (arg, p) in regs {
            if let Some(slots) = self.dyn_slots.get_mut(p.index()) {
                slots.push(DynSlot { owner, arg: *arg });
            }
        }
    }
}

/// `dynamic_parameter<T>`: a kernel argument value that can change after the nodes using
/// it were added. Copies share one parameter.
#[derive(Clone)]
pub struct DynamicParameter {
    pub(crate) graph: Rc<RefCell<GraphInner>>,
    pub(crate) handle: Handle<DynParam>,
}

/// Whether `new` may replace `old` as the value of one parameter: same kind and type.
fn same_shape(old: &KArg, new: &KArg) -> bool {
    match (old, new) {
        (KArg::Scalar(a), KArg::Scalar(b)) => a.ty == b.ty,
        (KArg::Ptr(a), KArg::Ptr(b)) => ptr_elem(a) == ptr_elem(b),
        (KArg::Acc(a), KArg::Acc(b)) => a.buffer.elem() == b.buffer.elem() && a.mode == b.mode,
        (KArg::Bytes(a), KArg::Bytes(b)) => a.len() == b.len(),
        (KArg::Local { elem: a, .. }, KArg::Local { elem: b, .. }) => a == b,
        _ => false,
    }
}

fn ptr_elem(p: &crate::Ptr) -> Option<u64> {
    match &p.base {
        PtrBase::Usm(u) => Some(u.elem().size()),
        PtrBase::Alloc { .. } => None,
        PtrBase::Dangling => Some(0),
    }
}

impl DynamicParameter {
    /// `dynamic_parameter(graph, initialValue)`.
    pub fn new(graph: &ModifiableGraph, value: impl Into<KArg>) -> Result<DynamicParameter> {
        let rc = graph.inner().clone();
        let value = value.into();
        let ir_value = Self::ir_value(&rc, &rc.borrow(), &value, None)?;
        let mut inner = rc.borrow_mut();
        let name = format!("p{}", inner.ir.dyn_params.len());
        let handle = inner
            .ir
            .dyn_params
            .append(DynParam { name, value: ir_value, comments: Default::default() }, Span::UNDEFINED);
        inner.ir.body.push(Stmt::DynParam(handle));
        inner.dyn_values.push(value);
        inner.dyn_slots.push(Vec::new());
        drop(inner);
        Ok(DynamicParameter { graph: rc, handle })
    }

    /// The IR form of a parameter value. A graph allocation must exist before the
    /// parameter's statement (`defined_at`: the number of nodes then) so the IR defines
    /// names before their uses.
    fn ir_value(
        rc: &Rc<RefCell<GraphInner>>,
        inner: &GraphInner,
        value: &KArg,
        defined_at: Option<usize>,
    ) -> Result<ArgValue> {
        Ok(match value {
            KArg::Scalar(lit) => ArgValue::Scalar(*lit),
            KArg::Ptr(p) => {
                if let (PtrBase::Alloc { node, .. }, Some(n)) = (&p.base, defined_at) {
                    ensure(node.index() < n, 0, || {
                        "dynamic_parameter::update: the allocation was made after the parameter; a parameter can only point to allocations made before it".to_string()
                    })?;
                }
                ArgValue::Pointer(crate::graph::pointer_of(rc, inner, p)?)
            }
            KArg::Acc(a) => ArgValue::Accessor(a.to_ir()),
            KArg::Bytes(b) => ArgValue::Bytes(b.clone()),
            KArg::Local { elem, count } => ArgValue::Local { elem: *elem, count: *count },
            KArg::Dyn(_) => {
                return Err(SyclError::invalid(0, "a dynamic parameter cannot hold another dynamic parameter"))
            }
        })
    }

    /// `update(newValue)`: every argument slot registered with the parameter names it again
    /// (another parameter registered with the slot later may have taken it) and sees
    /// `value` in the modifiable graph at once; executable graphs see both only after
    /// `exec.update(...)` or a new finalize.
    pub fn update(&self, value: impl Into<KArg>) -> Result<()> {
        let value = value.into();
        let defined_at = {
            let inner = self.graph.borrow();
            let old = inner
                .dyn_values
                .get(self.handle.index())
                .ok_or_else(|| SyclError::invalid(0, "unknown dynamic parameter"))?;
            ensure(same_shape(old, &value), 0, || {
                format!(
                    "dynamic_parameter::update: {value:?} is not a value of the parameter's type (it holds {old:?})"
                )
            })?;
            let at = inner.ir.body.iter().position(|s| *s == Stmt::DynParam(self.handle)).unwrap_or(0);
            inner.ir.body[..at].iter().filter(|s| matches!(s, Stmt::Node(_))).count()
        };
        let ir_value = Self::ir_value(&self.graph, &self.graph.borrow(), &value, Some(defined_at))?;
        let mut inner = self.graph.borrow_mut();
        let inner = &mut *inner;
        inner.ir.dyn_params[self.handle].value = ir_value;
        inner.dyn_values[self.handle.index()] = value;
        for slot in inner.dyn_slots.get(self.handle.index()).map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(arg) = slot.arg_mut(&mut inner.ir) {
                *arg = Arg::Dyn(self.handle);
            }
        }
        Ok(())
    }

    /// `update(newValue)` for a scalar parameter, typed: `update_as::<f32>(2.5)`. `T`
    /// must be the type of the value the parameter holds; a parameter of another scalar
    /// type, or one holding a pointer, accessor, raw bytes or work-group memory, is an
    /// `invalid` error naming the parameter and both types, and keeps its value. Otherwise
    /// as [`DynamicParameter::update`].
    pub fn update_as<T: Element>(&self, value: T) -> Result<()> {
        self.check_scalar::<T>("update_as")?;
        self.update(KArg::Scalar(value.literal()))
    }

    /// The value the parameter holds now (the last `update`, or its initial value), as it
    /// was given.
    pub fn value(&self) -> Result<KArg> {
        self.graph
            .borrow()
            .dyn_values
            .get(self.handle.index())
            .cloned()
            .ok_or_else(|| SyclError::invalid(0, "unknown dynamic parameter"))
    }

    /// The scalar value the parameter holds now, typed; the same type rule as
    /// [`DynamicParameter::update_as`].
    pub fn value_as<T: Element>(&self) -> Result<T> {
        let lit = self.check_scalar::<T>("value_as")?;
        T::from_literal(&lit).ok_or_else(|| {
            SyclError::invalid(
                0,
                format!("dynamic_parameter %{}: its value {lit:?} does not fit {}", self.name(), T::TYPE),
            )
        })
    }

    /// The parameter's literal when it holds a scalar of `T`'s type; otherwise an error
    /// for `call`.
    fn check_scalar<T: Element>(&self, call: &str) -> Result<Literal> {
        let held = match self.value()? {
            KArg::Scalar(lit) if lit.ty == Some(T::TYPE.scalar) && T::TYPE.lanes == 1 => return Ok(lit),
            KArg::Scalar(lit) => match lit.ty {
                Some(t) => format!("{t} values"),
                None => "untyped scalars".to_string(),
            },
            KArg::Ptr(_) => "a pointer".to_string(),
            KArg::Acc(_) => "an accessor".to_string(),
            KArg::Bytes(b) => format!("{} raw bytes", b.len()),
            KArg::Local { .. } => "work-group memory".to_string(),
            KArg::Dyn(_) => "another dynamic parameter".to_string(),
        };
        Err(SyclError::invalid(
            0,
            format!(
                "dynamic_parameter %{}: {call}::<{}> on a parameter that holds {held}; use the type it was created with",
                self.name(),
                T::TYPE
            ),
        ))
    }

    /// The IR name (without `%`).
    pub fn name(&self) -> String {
        self.graph.borrow().ir.dyn_params[self.handle].name.clone()
    }

    /// The IR handle.
    pub fn handle(&self) -> Handle<DynParam> {
        self.handle
    }
}

impl std::fmt::Debug for DynamicParameter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DynamicParameter(%{})", self.name())
    }
}

/// `dynamic_command_group`: a list of command-group functions of which one, the active
/// one, runs. Copies share one group.
#[derive(Clone)]
pub struct DynamicCommandGroup {
    pub(crate) graph: Rc<RefCell<GraphInner>>,
    pub(crate) handle: Handle<DynCommandGroup>,
}

impl DynamicCommandGroup {
    /// `dynamic_command_group(graph, cgfList)`: runs each CGF once, in index order
    /// (000 §8.8); index 0 is active (rows 12-15).
    pub fn new(graph: &ModifiableGraph, cgfs: Vec<CommandGroup>) -> Result<DynamicCommandGroup> {
        let rc = graph.inner().clone();
        ensure(!cgfs.is_empty(), 14, || "dynamic_command_group: the command-group function list is empty".to_string())?;
        let mut alternatives = Vec::new();
        let mut regs = Vec::new();
        let mut deps = DcgDeps::default();
        let mut first_type = None;
        for (i, cgf) in cgfs.into_iter().enumerate() {
            let mut h = Handler::new(Mode::Dcg, Some(rc.clone()));
            cgf.apply(&mut h);
            if let Some(e) = h.error.take() {
                return Err(e);
            }
            crate::graph::check_banned(&h.command, h.scratch)?;
            let is_kernel = match &h.command {
                Some(Command::Kernel { .. }) => true,
                Some(Command::HostTask { .. }) => false,
                other => {
                    let what = other.as_ref().map_or("no command", Command::what);
                    return Err(SyclError::invalid(
                        13,
                        format!("dynamic_command_group: command-group function {i} holds {what}; only kernels and host tasks can be dynamic"),
                    ));
                }
            };
            if *first_type.get_or_insert(is_kernel) != is_kernel {
                return Err(SyclError::invalid(
                    15,
                    format!("dynamic_command_group: command-group function {i} is a {} but function 0 is a {}; all must have one command type", kind_name(is_kernel), kind_name(!is_kernel)),
                ));
            }
            if !is_kernel && (!h.dyn_set_args.is_empty() || !h.dyn_requires.is_empty()) {
                return Err(SyclError::invalid(
                    8,
                    "dynamic_command_group: a host task alternative registers a dynamic parameter",
                ));
            }
            let mut inner = rc.borrow_mut();
            let converted = crate::graph::convert_dcg(&rc, &mut inner, &mut h)?;
            crate::graph::check_buffers_dcg(&inner, &converted.reqs)?;
            alternatives.push(match converted.kind {
                NodeKind::Kernel(cmd) => Alternative::Kernel(cmd),
                NodeKind::HostTask(cmd) => Alternative::HostTask(cmd),
                other => Alternative::Other(Box::new(other)),
            });
            regs.push(converted.regs);
            deps.events.push(h.deps.clone());
            deps.reqs.push(converted.reqs.iter().map(crate::buffer::Accessor::to_ir).collect());
        }
        let mut inner = rc.borrow_mut();
        let name = format!("dcg{}", inner.ir.dcgs.len());
        let dcg = DynCommandGroup { name, active: 0, alternatives, comments: Default::default() };
        let handle = inner.ir.dcgs.append(dcg, Span::UNDEFINED);
        inner.ir.body.push(Stmt::Dcg(handle));
        inner.dcg_deps.push(deps);
        for (index, regs) in regs.iter().enumerate() {
            inner.register_slots(SlotOwner::Alternative { dcg: handle, index }, regs);
        }
        drop(inner);
        Ok(DynamicCommandGroup { graph: rc, handle })
    }

    /// `get_active_index()`.
    pub fn get_active_index(&self) -> usize {
        self.graph.borrow().ir.dcgs[self.handle].active as usize
    }

    /// `set_active_index(i)` (row 16): shows at once in the modifiable graph; executable
    /// graphs see it after `exec.update(node)` or a new finalize.
    pub fn set_active_index(&self, index: usize) -> Result<()> {
        let mut inner = self.graph.borrow_mut();
        let dcg = &mut inner.ir.dcgs[self.handle];
        let count = dcg.alternatives.len();
        ensure(index < count, 16, || {
            format!(
                "set_active_index({index}): the dynamic command group has {count} command-group functions (0..{count})"
            )
        })?;
        dcg.active = index as u32;
        Ok(())
    }

    /// The IR name (without `%`).
    pub fn name(&self) -> String {
        self.graph.borrow().ir.dcgs[self.handle].name.clone()
    }
}

fn kind_name(kernel: bool) -> &'static str {
    if kernel {
        "kernel"
    } else {
        "host task"
    }
}

impl std::fmt::Debug for DynamicCommandGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DynamicCommandGroup(%{})", self.name())
    }
}
