//! Every subgroup op prints as it is written and parses back to the same module; the
//! parser gives results their types (docs/ir.md, "Subgroups").

use cmdgraph_ir::kernel::{KernelBody, OpKind, ValueType};
use cmdgraph_ir::subgroup::{Collective, GroupArith, SubgroupOp};
use cmdgraph_ir::types::{ScalarType, Type};

const TEXT: &str = "kernel @k(%x: buf<f32, read_write>, %u: buf<u32, read_write>) {
  %i = global_id 0
  %v = load %x[%i]
  %w = load %u[%i]
  %n = subgroup_size
  %g = subgroup_id
  %l = subgroup_local_id
  %c = num_subgroups
  %r = subgroup_reduce add %v
  %s = subgroup_inclusive_scan mul %v
  %e = subgroup_exclusive_scan xor %w
  %vv = vec %v, %v
  %m = subgroup_reduce min %vv
  %b = subgroup_broadcast %v, %l
  %f = subgroup_broadcast_first %w
  %h = subgroup_shuffle %vv, %l
  %p = lt %v, %v
  %y = subgroup_ballot %p
  %t = subgroup_elect
  %a = subgroup_all %p
  %z = subgroup_any %t
}

usm @x : f32[64]
usm @u : u32[64]

graph @g {
  %k = kernel @k nd_range(global(64), local(32)) args(@x, @u)
}
";

#[test]
fn every_subgroup_op_round_trips_through_the_text_format() {
    let m = cmdgraph_ir::text::parse(TEXT).expect("parses");
    cmdgraph_ir::verify::verify(&m).expect("verifies");
    let printed = cmdgraph_ir::text::print(&m);
    assert_eq!(printed, TEXT);
    assert_eq!(cmdgraph_ir::text::parse(&printed).expect("reparses"), m);
}

#[test]
fn subgroup_results_have_their_types() {
    let m = cmdgraph_ir::text::parse(TEXT).expect("parses");
    let k = m.kernels.iter().next().expect("a kernel").1;
    let KernelBody::Ir(body) = &k.body else { panic!("a kernel-language body") };
    let ty = |name: &str| body.values.iter().find(|(_, v)| v.name == name).map(|(_, v)| v.ty);
    let data = ValueType::Data;
    assert_eq!(ty("n"), Some(data(Type::U32)));
    assert_eq!(ty("r"), Some(data(Type::scalar(ScalarType::F32))));
    assert_eq!(ty("m"), Some(data(Type::vector(ScalarType::F32, 2))));
    assert_eq!(ty("y"), Some(data(Type::vector(ScalarType::U32, 4))));
    assert_eq!(ty("t"), Some(data(Type::BOOL)));
    let scan = body.ops.iter().find_map(|(_, op)| match &op.kind {
        OpKind::Subgroup(SubgroupOp::Arith { collective: Collective::ExclusiveScan, op, .. }) => Some(*op),
        _ => None,
    });
    assert_eq!(scan, Some(GroupArith::Xor));
}
