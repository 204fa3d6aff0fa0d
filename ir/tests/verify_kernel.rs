//! Kernel-body invariants on parsed text: each case asserts the exact code and `line:col`
//! of the single error, and that a near miss (the mistake fixed) is clean.

mod verify_support;

use verify_support::near_miss;

/// A kernel whose ops from line 5 (column 3) are the `§`.
const K: &str = "\
kernel @k(%a: f32, %b: f32, %u: u32, %c: bool, %v4: vec4<f32>, %v3: vec3<f32>, %x: buf<f32, read_write>, %r: buf<f32, read>, %w: buf<u32, write>) {
  %i = global_id 0
  %zero = const 0 : u32
  %one = const 1 : u32
  §
}
device_global @g : u32[4]
usm @m : f32[4]
";

macro_rules! case {
    ($name:ident, $code:literal at ($line:literal, $col:literal): $bad:literal => $good:literal) => {
        #[test]
        fn $name() {
            near_miss(K, $bad, $good, $code, $line, $col);
        }
    };
}

case!(memory_used_as_value, "E0307" at (5, 3): "%s = add %x, %x" => "%s = add %a, %a");
case!(load_from_data, "E0308" at (5, 3): "%s = load %a[%i]" => "%s = load %x[%i]");
case!(load_from_usm_by_name, "E0308" at (5, 3): "%s = load @m[%i]" => "%s = load @g[%i]");
case!(const_does_not_fit, "E0309" at (5, 3): "%s = const 1.5 : u32" => "%s = const 1 : u32");
case!(const_negative_unsigned, "E0309" at (5, 3): "%s = const -1 : u32" => "%s = const -1 : i32");
case!(binary_types_differ, "E0311" at (5, 3): "%s = add %a, %u" => "%s = add %a, %b");
case!(fma_types_differ, "E0311" at (5, 3): "%s = fma %a, %b, %u" => "%s = fma %a, %b, %a");
case!(compare_types_differ, "E0311" at (5, 3): "%s = lt %a, %u" => "%s = lt %a, %b");
case!(select_branches_differ, "E0311" at (5, 3): "%s = select %c, %a, %u" => "%s = select %c, %a, %b");
case!(sqrt_of_integer, "E0312" at (5, 3): "%s = sqrt %u" => "%s = sqrt %a");
case!(xor_of_float, "E0312" at (5, 3): "%s = xor %a, %a" => "%s = xor %u, %u");
case!(shift_of_bool, "E0312" at (5, 3): "%s = shl %c, %c" => "%s = shl %u, %u");
case!(add_of_bool, "E0312" at (5, 3): "%s = add %c, %c" => "%s = or %c, %c");
case!(ordering_bools, "E0312" at (5, 3): "%s = lt %c, %c" => "%s = eq %c, %c");
case!(fma_of_integers, "E0312" at (5, 3): "%s = fma %u, %u, %u" => "%s = fma %a, %a, %a");
case!(select_condition, "E0313" at (5, 3): "%s = select %u, %a, %b" => "%s = select %c, %a, %b");
case!(select_lanes, "E0313" at (6, 3): "%m = lt %v3, %v3\n  %s = select %m, %v4, %v4" => "%m = lt %v4, %v4\n  %s = select %m, %v4, %v4");
case!(cast_lanes, "E0314" at (5, 3): "%s = cast %v4 to vec2<i32>" => "%s = cast %v4 to vec4<i32>");
case!(extract_lane, "E0315" at (5, 3): "%s = extract %v3, 3" => "%s = extract %v3, 2");
case!(insert_lane, "E0315" at (5, 3): "%s = insert %v4, 4, %a" => "%s = insert %v4, 3, %a");
case!(splat_to_scalar, "E0316" at (5, 3): "%s = splat %a : f32" => "%s = splat %a : vec4<f32>");
case!(splat_other_scalar, "E0316" at (5, 3): "%s = splat %a : vec2<u32>" => "%s = splat %u : vec2<u32>");
case!(insert_wrong_scalar, "E0316" at (5, 3): "%s = insert %v4, 0, %u" => "%s = insert %v4, 0, %a");
case!(extract_from_scalar, "E0316" at (5, 3): "%s = extract %a, 0" => "%s = extract %v4, 0");
case!(vec_of_five, "E0316" at (5, 3): "%s = vec %a, %b, %a, %b, %a" => "%s = vec %a, %b, %a, %b");
case!(vec_of_vectors, "E0316" at (5, 3): "%s = vec %v4, %v4" => "%s = vec %a, %b");
case!(vec_mixed_scalars, "E0311" at (5, 3): "%s = vec %a, %u" => "%s = vec %a, %b");
case!(float_index, "E0317" at (5, 3): "%s = load %x[%a]" => "%s = load %x[%i]");
case!(bool_index, "E0317" at (5, 3): "store %x[%c], %a" => "store %x[%one], %a");
case!(store_type, "E0318" at (5, 3): "store %x[%i], %u" => "store %x[%i], %a");
case!(device_global_store_type, "E0318" at (5, 3): "store @g[%i], %a" => "store @g[%i], %u");
case!(atomic_value_type, "E0318" at (5, 3): "%s = atomic add @g[%i], %a" => "%s = atomic add @g[%i], %u");
case!(cmpxchg_expected_type, "E0318" at (5, 3): "%s = atomic cmpxchg @g[%i], %a, %u" => "%s = atomic cmpxchg @g[%i], %one, %u");
case!(store_to_read_only, "E0319" at (5, 3): "store %r[%i], %a" => "store %x[%i], %a");
case!(load_from_write_only, "E0319" at (5, 3): "%s = load %w[%i]" => "%s = load %x[%i]");
case!(atomic_on_write_only, "E0320" at (5, 3): "%s = atomic add %w[%i], %u" => "%s = atomic add @g[%i], %u");
case!(atomic_and_on_float, "E0321" at (5, 3): "%s = atomic and %x[%i], %a" => "%s = atomic add %x[%i], %a");
case!(atomic_on_local_vector, "E0321" at (7, 3): "%t = local vec2<u32>[4]\n  %v = splat %u : vec2<u32>\n  %s = atomic max %t[%i], %v" => "%t = local u32[4]\n  %v = add %u, %u\n  %s = atomic max %t[%i], %v");
case!(for_float_bounds, "E0323" at (5, 3): "for %k = %a to %b step %a {\n    group_barrier\n  }" => "for %k = %zero to %u step %one {\n    group_barrier\n  }");
case!(for_mixed_bounds, "E0323" at (6, 3): "%n = const 8 : i32\n  for %k = %zero to %n step %one {\n    group_barrier\n  }" => "%n = const 8 : u32\n  for %k = %zero to %n step %one {\n    group_barrier\n  }");
case!(yield_at_top_level, "E0325" at (5, 3): "yield %a" => "group_barrier");
case!(yield_not_last, "E0325" at (6, 5): "%s = if %c -> f32 {\n    yield %a\n    group_barrier\n  } else {\n    yield %b\n  }" => "%s = if %c -> f32 {\n    group_barrier\n    yield %a\n  } else {\n    yield %b\n  }");
case!(yield_in_for_without_carry, "E0325" at (6, 5): "for %k = %zero to %u step %one {\n    yield %a\n  }" => "for %k = %zero to %u step %one {\n    group_barrier\n  }");
case!(yield_in_if_without_results, "E0325" at (6, 5): "if %c {\n    yield %a\n  }" => "if %c {\n    group_barrier\n  }");
case!(yield_type, "E0326" at (6, 5): "%s = if %c -> f32 {\n    yield %u\n  } else {\n    yield %b\n  }" => "%s = if %c -> f32 {\n    yield %a\n  } else {\n    yield %b\n  }");
case!(yield_count, "E0326" at (6, 5): "%s = for %k = %zero to %u step %one carry(%acc = %a) {\n    yield %acc, %b\n  }" => "%s = for %k = %zero to %u step %one carry(%acc = %a) {\n    yield %acc\n  }");
case!(for_missing_yield, "E0327" at (5, 3): "%s = for %k = %zero to %u step %one carry(%acc = %a) {\n    group_barrier\n  }" => "%s = for %k = %zero to %u step %one carry(%acc = %a) {\n    %n = add %acc, %b\n    yield %n\n  }");
case!(else_missing_yield, "E0327" at (5, 3): "%s = if %c -> f32 {\n    yield %a\n  } else {\n  }" => "%s = if %c -> f32 {\n    yield %a\n  } else {\n    yield %b\n  }");
case!(if_condition, "E0328" at (5, 3): "if %u {\n    group_barrier\n  }" => "if %c {\n    group_barrier\n  }");
case!(if_vector_condition, "E0328" at (6, 3): "%m = lt %v4, %v4\n  if %m {\n    group_barrier\n  }" => "%m = lt %a, %b\n  if %m {\n    group_barrier\n  }");
case!(if_missing_else, "E0329" at (5, 3): "%s = if %c -> f32 {\n    yield %a\n  }" => "%s = if %c -> f32 {\n    yield %a\n  } else {\n    yield %b\n  }");
case!(local_in_for, "E0330" at (6, 5): "for %k = %zero to %u step %one {\n    %t = local f32[16]\n  }" => "%t = local f32[16]\n  for %k = %zero to %u step %one {\n    store %t[%k], %a\n  }");
case!(local_of_zero, "E0332" at (5, 3): "%t = local f32[0]" => "%t = local f32[1]");

#[test]
fn group_barrier_in_divergent_control_flow_is_accepted() {
    // Non-uniform barriers are undefined behaviour (as in SYCL), not a verifier error.
    verify_support::expect_clean(&K.replace('§', "if %c {\n    group_barrier\n  }"));
}

#[test]
fn every_op_of_the_language_verifies_when_well_typed() {
    let ops = "\
%h = const 1.0 : f16
  %v = const 2.0 : vec4<f32>
  %n = neg %a
  %ab = abs %u
  %nt = not %c
  %rs = rsqrt %b
  %p = pow %a, %b
  %sh = shr %u, %one
  %mx = max %v4, %v
  %f = fma %a, %b, %a
  %cmp = ge %v4, %v
  %sel = select %cmp, %v4, %v
  %cs = cast %v4 to vec4<u32>
  %e = extract %v3, 2
  %ins = insert %v3, 0, %e
  %vv = vec %a, %b, %e
  %li = local_id 1
  %gr = group_range 2
  %ld = load %r[%i]
  store %x[%i], %ld
  %old = atomic xchg %x[%i], %a
  %cx = atomic cmpxchg @g[%zero], %zero, %one
  %sum, %prod = for %k = %zero to %u step %one carry(%s = %a, %q = %b) {
    %s2 = add %s, %a
    %inner = if %c -> f32 {
      yield %s2
    } else {
      yield %q
    }
    yield %s2, %inner
  }
  if %c {
    store %x[%i], %sum
  } else {
    store %x[%i], %prod
  }";
    verify_support::expect_clean(&K.replace('§', ops));
}
