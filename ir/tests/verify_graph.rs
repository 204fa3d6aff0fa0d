//! Graph invariants on parsed text: each case asserts the exact code and `line:col` of the
//! single error, and that a near miss (the same graph with the mistake fixed) is clean.

mod verify_support;

use verify_support::near_miss;

/// Kernels, memory and a graph whose statement on line 23 (column 3) is the `§`.
const G: &str = "\
kernel @scale(%x: buf<f32, read_write>, %n: u32) {
  %i = global_id 0
  %v = load %x[%i]
  store %x[%i], %v
}
kernel @tile(%x: buf<f32, read_write>, %t: local<f32>) {
  %i = local_id 0
  %v = load %x[%i]
  store %t[%i], %v
}
usm @x : f32[64]
usm @u : u32[64]
buffer @b : f32[64]
buffer @c : f32[64]
device_global @dg : f32[16]
graph @g properties(assume_buffer_outlives_graph) {
  queue @q
  queue @io in_order
  queue @d discard_events
  dyn %p = @x
  %e = empty
  %t = async_malloc f32[64] after(%e)
  §
}
graph @child device(1) {
  %n = empty
}
graph @same {
  %n = empty
}
graph @allocs {
  %t = async_malloc f32[4]
  %f = async_free %t after(%t)
}
";

macro_rules! case {
    ($name:ident, $code:literal at ($line:literal, $col:literal): $bad:literal => $good:literal) => {
        case!($name, G, $code at ($line, $col): $bad => $good);
    };
    ($name:ident, $template:expr, $code:literal at ($line:literal, $col:literal): $bad:literal => $good:literal) => {
        #[test]
        fn $name() {
            near_miss($template, $bad, $good, $code, $line, $col);
        }
    };
}

case!(zero_element_memory, "usm @x : f32[§]", "E0206" at (1, 1): "0" => "1");
case!(device_global_initialiser_too_long, "device_global @g : u32[§] = [1, 2]", "E0207" at (1, 1): "1" => "2");
case!(device_global_initialiser_does_not_fit, "device_global @g : u32[2] = [§]", "E0207" at (1, 1): "1, -1" => "1, 2");

case!(arg_count, "E0210" at (23, 3): "%k = kernel @scale range(64) args(@x)" => "%k = kernel @scale range(64) args(@x, 1)");
case!(pointer_for_scalar, "E0211" at (23, 41): "%k = kernel @scale range(64) args(@x, @x)" => "%k = kernel @scale range(64) args(@x, 7)");
case!(bytes_for_buffer, "E0211" at (23, 37): "%k = kernel @scale range(64) args(x\"00\", 1)" => "%k = kernel @scale range(64) args(@x, 1)");
case!(scalar_does_not_fit, "E0212" at (23, 41): "%k = kernel @scale range(64) args(@x, 3.5)" => "%k = kernel @scale range(64) args(@x, 3)");
case!(scalar_typed_otherwise, "E0212" at (23, 41): "%k = kernel @scale range(64) args(@x, 3 : i32)" => "%k = kernel @scale range(64) args(@x, 3 : u32)");
case!(element_type, "E0213" at (23, 37): "%k = kernel @scale range(64) args(@u, 1)" => "%k = kernel @scale range(64) args(@x, 1)");
case!(accessor_mode, "E0214" at (23, 37): "%k = kernel @scale range(64) args(acc(@b, read), 1)" => "%k = kernel @scale range(64) args(acc(@b, read_write), 1)");
case!(accessor_on_usm, "E0215" at (23, 37): "%k = kernel @scale range(64) args(acc(@x, read_write), 1)" => "%k = kernel @scale range(64) args(acc(@b, read_write), 1)");
case!(accessor_on_allocation, "E0215" at (23, 37): "%k = kernel @scale range(64) args(acc(%t, read_write), 1) after(%t)" => "%k = kernel @scale range(64) args(%t, 1) after(%t)");
case!(buffer_as_pointer, "E0216" at (23, 37): "%k = kernel @scale range(64) args(@b, 1)" => "%k = kernel @scale range(64) args(@x, 1)");
case!(memset_on_buffer, "E0216" at (23, 3): "%m = memset @b, 0, 16" => "%m = memset @x, 0, 16");
case!(device_global_memcpy, "E0217" at (23, 3): "%m = memcpy @x, @dg, 64" => "%m = memcpy @x, @u, 64");
case!(device_global_kernel_arg, "E0217" at (23, 37): "%k = kernel @scale range(16) args(@dg, 1)" => "%k = kernel @scale range(16) args(@x, 1)");
case!(device_global_host_task, "E0217" at (23, 29): "%h = host_task \"f\" access(@dg read)" => "%h = host_task \"f\" access(@x read)");
case!(raw_bytes_size, "E0218" at (23, 41): "%k = kernel @scale range(64) args(@x, x\"0100\")" => "%k = kernel @scale range(64) args(@x, x\"01000000\")");
case!(local_needs_nd_range, "E0219" at (23, 21): "%k = kernel @tile range(64) args(@x, local f32[16])" => "%k = kernel @tile nd_range(global(64), local(16)) args(@x, local f32[16])");
case!(local_arg_element_type, "E0213" at (23, 62): "%k = kernel @tile nd_range(global(64), local(16)) args(@x, local u32[16])" => "%k = kernel @tile nd_range(global(64), local(16)) args(@x, local f32[16])");
case!(dyn_param_on_recorded_node, "E0221" at (23, 37): "%k = kernel @scale range(64) args(%p, 1) on @q" => "%k = kernel @scale range(64) args(%p, 1)");
case!(pointer_out_of_bounds, "E0222" at (23, 36): "%k = kernel @scale range(1) args(@x + 1024, 1)" => "%k = kernel @scale range(1) args(@x + 252, 1)");
case!(pointer_misaligned, "E0223" at (23, 36): "%k = kernel @scale range(1) args(@x + 2, 1)" => "%k = kernel @scale range(1) args(@x + 4, 1)");
case!(launch_dims, "E0225" at (23, 22): "%k = kernel @scale range(4, 4, 2, 2) args(@x, 1)" => "%k = kernel @scale range(4, 4, 4) args(@x, 1)");
case!(launch_zero, "E0226" at (23, 22): "%k = kernel @scale range(8, 0) args(@x, 1)" => "%k = kernel @scale range(8, 8) args(@x, 1)");
case!(nd_range_dims, "E0227" at (23, 22): "%k = kernel @scale nd_range(global(8, 8), local(4)) args(@x, 1)" => "%k = kernel @scale nd_range(global(8, 8), local(4, 4)) args(@x, 1)");
case!(nd_range_indivisible, "E0228" at (23, 22): "%k = kernel @scale nd_range(global(64), local(6)) args(@x, 1)" => "%k = kernel @scale nd_range(global(64), local(8)) args(@x, 1)");

case!(memcpy_out_of_bounds, "E0230" at (23, 3): "%m = memcpy @x + 128, @u, 256" => "%m = memcpy @x + 128, @u, 128");
case!(prefetch_out_of_bounds, "E0230" at (23, 3): "%m = prefetch @x + 8, 256" => "%m = prefetch @x + 8, 248");
case!(accessor_out_of_bounds, "E0230" at (23, 36): "%k = kernel @scale range(1) args(acc(@b[32..80], read_write), 1)" => "%k = kernel @scale range(1) args(acc(@b[32..64], read_write), 1)");
case!(memcpy_overlap, "E0231" at (23, 3): "%m = memcpy @x + 32, @x, 64" => "%m = memcpy @x + 64, @x, 64");
case!(accessor_range_empty, "E0232" at (23, 36): "%k = kernel @scale range(1) args(acc(@b[8..8], read_write), 1)" => "%k = kernel @scale range(1) args(acc(@b[8..9], read_write), 1)");
case!(memfill_pattern, "E0233" at (23, 3): "%m = memfill @u, 1.5 : u32, 64" => "%m = memfill @u, 1 : u32, 64");

/// A graph whose properties are the `§`.
const NO_ASSUME: &str = "\
kernel @scale(%x: buf<f32, read_write>, %n: u32) {
  %i = global_id 0
  %v = load %x[%i]
  store %x[%i], %v
}
buffer @b : f32[64]
graph @g § {
  %k = kernel @scale range(64) args(acc(@b, read_write), 1)
}
";
case!(buffer_without_assume, NO_ASSUME, "E0234" at (8, 37): "" => "properties(assume_buffer_outlives_graph)");

case!(alloc_kind, "E0240" at (23, 3): "%m = async_malloc f32[4] host" => "%m = async_malloc f32[4]");
case!(free_of_foreign_memory, "E0241" at (23, 3): "%f = async_free %e after(%e)" => "%f = async_free %t after(%t)");
case!(double_free, "E0243" at (24, 3): "%f0 = async_free %t after(%t)\n  %f1 = async_free %t after(%f0)" => "%f0 = async_free %t after(%t)\n  %f1 = empty after(%f0)");
case!(use_before_malloc, "E0244" at (23, 37): "%k = kernel @scale range(64) args(%t, 1)" => "%k = kernel @scale range(64) args(%t, 1) after(%t)");
case!(use_through_dyn_before_malloc, "E0244" at (24, 37): "dyn %q = %t\n  %k = kernel @scale range(64) args(%q, 1)" => "dyn %q = %t\n  %k = kernel @scale range(64) args(%q, 1) after(%t)");
case!(use_after_free, "E0245" at (24, 37): "%f = async_free %t after(%t)\n  %k = kernel @scale range(64) args(%t, 1) after(%f)" => "%k = kernel @scale range(64) args(%t, 1) after(%t)\n  %f = async_free %t after(%k)");
case!(use_not_before_free, "E0246" at (23, 37): "%k = kernel @scale range(64) args(%t, 1) after(%t)\n  %f = async_free %t after(%t)" => "%k = kernel @scale range(64) args(%t, 1) after(%t)\n  %f = async_free %t after(%k)");
case!(host_task_use_not_before_free, "E0246" at (23, 29): "%h = host_task \"f\" access(%t read) after(%t)\n  %f = async_free %t after(%t)" => "%h = host_task \"f\" access(%t read) after(%t)\n  %f = async_free %t after(%h)");
case!(free_not_after_malloc, "E0247" at (23, 3): "%f = async_free %t" => "%f = async_free %t after(%t)");

case!(self_edge, "E0250" at (23, 3): "edge %e -> %e" => "%z = empty\n  edge %e -> %z");
case!(cycle, "E0251" at (24, 3): "%a = empty after(%e)\n  edge %a -> %e" => "%a = empty after(%e)\n  %b = empty\n  edge %a -> %b");
case!(in_order_without_queue, "E0254" at (23, 26): "%a = empty on @q after(%e via in_order)" => "%a = empty on @io\n  %b = empty on @io after(%a via in_order)");
case!(in_order_on_out_of_order_queue, "E0254" at (24, 26): "%a = empty on @q\n  %b = empty on @q after(%a via in_order)" => "%a = empty on @io\n  %b = empty on @io after(%a via in_order)");
case!(event_from_discard_queue, "E0255" at (24, 20): "%a = empty on @d\n  %b = empty after(%a via event)" => "%a = empty on @q\n  %b = empty after(%a via event)");
case!(barrier_edge, "E0256" at (24, 26): "%a = empty on @q\n  %b = empty on @q after(%a via barrier)" => "%a = empty on @q\n  %b = barrier on @q after(%a via barrier)");
case!(barrier_edge_to_other_queue, "E0256" at (25, 27): "%a = empty on @q\n  %b = barrier on @q after(%a via barrier)\n  %c = empty on @io after(%b via barrier)" => "%a = empty on @q\n  %b = barrier on @q after(%a via barrier)\n  %c = empty on @q after(%b via barrier)");
case!(transitive_edge, "E0257" at (24, 20): "%a = empty on @q\n  %b = empty after(%a via transitive)" => "%a = empty on @q\n  %b = empty on @io after(%a via transitive)");
case!(accessor_edge, "E0258" at (24, 68): "%k0 = kernel @scale range(64) args(acc(@b, read_write), 1)\n  %k1 = kernel @scale range(64) args(acc(@c, read_write), 1) after(%k0 via accessor)" => "%k0 = kernel @scale range(64) args(acc(@b, read_write), 1)\n  %k1 = kernel @scale range(64) args(acc(@b, read_write), 1) after(%k0 via accessor)");
case!(accessor_edge_between_readers, "E0258" at (24, 45): "%h0 = host_task \"a\" access(@b read)\n  %h1 = host_task \"b\" access(@b read) after(%h0 via accessor)" => "%h0 = host_task \"a\" access(@b read)\n  %h1 = host_task \"b\" access(@b write) after(%h0 via accessor)");

case!(explicit_barrier, "E0260" at (23, 3): "%a = barrier wait(%e) after(%e via barrier)" => "%a = barrier wait(%e) on @q after(%e via barrier)");
case!(barrier_wait_not_predecessor, "E0261" at (23, 21): "%a = barrier wait(%e) on @q" => "%a = barrier wait(%e) on @q after(%e via barrier)");

/// Two graphs; the first one's statement is the `§`.
const TWO: &str = "graph @a {\n  §\n}\ngraph @b {\n  %s = subgraph @a\n}\n";
case!(subgraph_recursion, TWO, "E0265" at (2, 3): "%s = subgraph @b" => "%s = empty");
case!(subgraph_of_itself, TWO, "E0265" at (2, 3): "%s = subgraph @a" => "%s = empty");
case!(subgraph_with_allocations, "E0266" at (23, 3): "%s = subgraph @allocs" => "%s = subgraph @same");
case!(subgraph_device_mismatch, "E0267" at (23, 3): "%s = subgraph @child" => "%s = subgraph @same");

case!(dcg_empty, "E0270" at (23, 3): "dcg %d active(0) {\n  }" => "dcg %d active(0) {\n    host_task \"a\"\n  }");
case!(dcg_active_out_of_range, "E0271" at (23, 3): "dcg %d active(1) {\n    host_task \"a\"\n  }" => "dcg %d active(0) {\n    host_task \"a\"\n  }");
case!(dcg_memcpy_alternative, "E0272" at (24, 5): "dcg %d active(0) {\n    memcpy @x, @u, 16\n  }" => "dcg %d active(0) {\n    host_task \"a\"\n  }");
case!(dcg_mixed_types, "E0273" at (25, 5): "dcg %d active(0) {\n    kernel @scale range(64) args(@x, 1)\n    host_task \"a\"\n  }" => "dcg %d active(0) {\n    kernel @scale range(64) args(@x, 1)\n    kernel @scale range(64) args(@x, 2)\n  }");
case!(dcg_accessor_mismatch, "E0274" at (25, 5): "dcg %d active(0) {\n    kernel @scale range(64) args(acc(@b, read_write), 1)\n    kernel @scale range(64) args(acc(@c, read_write), 1)\n  }" => "dcg %d active(0) {\n    kernel @scale range(64) args(acc(@b, read_write), 1)\n    kernel @scale range(32) args(acc(@b, read_write), 2)\n  }");
case!(dcg_host_task_accessor_mismatch, "E0274" at (25, 5): "dcg %d active(0) {\n    host_task \"a\" access(@b read)\n    host_task \"b\" access(@b write)\n  }" => "dcg %d active(0) {\n    host_task \"a\" access(@b read)\n    host_task \"b\" access(@b read)\n  }");
case!(dcg_recorded, "E0275" at (26, 3): "dcg %d active(0) {\n    host_task \"a\"\n  }\n  %n = dynamic %d on @q" => "dcg %d active(0) {\n    host_task \"a\"\n  }\n  %n = dynamic %d");
case!(dcg_alternative_arguments_are_checked, "E0212" at (24, 38): "dcg %d active(0) {\n    kernel @scale range(64) args(@x, -1)\n  }" => "dcg %d active(0) {\n    kernel @scale range(64) args(@x, 1)\n  }");
case!(dyn_param_value_checked_at_each_slot, "E0213" at (24, 37): "dyn %q = @u\n  %k = kernel @scale range(64) args(%q, 1)" => "dyn %q = @x\n  %k = kernel @scale range(64) args(%q, 1)");
case!(dyn_param_device_global, "E0217" at (23, 3): "dyn %q = @dg" => "dyn %q = @x");

#[test]
fn errors_come_sorted_by_position_and_all_are_reported() {
    let src = G.replace('§', "%a = kernel @scale range(0) args(@u, 1.5)\n  %m = memset @b, 0, 16\n  edge %a -> %a");
    let m = verify_support::parse(&src);
    let diags = cmdgraph_ir::verify::verify(&m).expect_err("three lines of mistakes");
    let found: Vec<(&str, (usize, usize))> = diags.iter().map(|d| (d.code, d.line_col(&src))).collect();
    assert_eq!(
        found,
        vec![("E0226", (23, 22)), ("E0213", (23, 36)), ("E0212", (23, 40)), ("E0216", (24, 3)), ("E0250", (25, 3)),]
    );
}

#[test]
fn the_cycle_names_the_closing_edge_and_its_nodes() {
    let src = G.replace('§', "%a = empty after(%t)\n  %b = empty after(%a)\n  edge %b -> %t\n  edge %b -> %e");
    let errors = cmdgraph_ir::verify::check(&verify_support::parse(&src));
    assert_eq!(errors.len(), 1, "{errors:#?}");
    match &errors[0] {
        cmdgraph_ir::verify::VerifyError::Cycle { cycle, no_cycle_check, .. } => {
            assert_eq!(cycle, &["%t", "%a", "%b", "%t"]);
            assert!(!no_cycle_check);
        }
        other => panic!("expected a cycle, got {other:?}"),
    }
}
