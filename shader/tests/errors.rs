//! Shaders the translator refuses: each error points at the construct and nothing panics.

mod support;

use cmdgraph_shader::{translate, Lang, ShaderError};
use support::shader;

/// Translates `file` expecting an error whose span covers text containing `construct` and
/// whose message contains `message`.
fn refused(file: &str, construct: &str, message: &str) -> ShaderError {
    let (lang, src) = shader(file);
    let e = match translate(lang, &src, "main", "k") {
        Ok(t) => panic!("{file}: translated, expected an error:\n{}", t.text),
        Err(e) => e,
    };
    assert!(!e.span.is_empty(), "{file}: empty span: {e}");
    let spanned = &src[e.span.clone()];
    assert!(
        spanned.contains(construct),
        "{file}: span {:?} is `{spanned}`, expected it to contain `{construct}`: {e}",
        e.span
    );
    assert!(e.message.contains(message), "{file}: message `{}` lacks `{message}`", e.message);
    e
}

/// The line of `src` that `span` starts on.
fn line_of(src: &str, span: &std::ops::Range<usize>) -> usize {
    src[..span.start].matches('\n').count() + 1
}

#[test]
fn syntax_error_points_into_its_line_wgsl() {
    let e = refused("err_syntax.wgsl", "*", "WGSL");
    let (_, src) = shader("err_syntax.wgsl");
    assert_eq!(line_of(&src, &e.span), 5, "{e}");
}

#[test]
fn syntax_error_points_into_its_line_glsl() {
    let e = refused("err_syntax.comp", "*", "GLSL");
    let (_, src) = shader("err_syntax.comp");
    assert_eq!(line_of(&src, &e.span), 6, "{e}");
}

#[test]
fn missing_entry_point_lists_the_present_ones() {
    let (lang, src) = shader("saxpy.wgsl");
    let e = translate(lang, &src, "nope", "k").expect_err("no entry point `nope`");
    assert!(e.message.contains("`nope`") && e.message.contains("`main` (compute)"), "{e}");
}

/// A `return` nested in `if`s before more code (not in a loop, where a flag handles it).
#[test]
fn return_before_the_end_is_refused() {
    refused("err_return.wgsl", "return", "`return` before the end of the function");
}

#[test]
fn struct_of_mixed_scalar_types_is_refused() {
    refused("err_struct_mixed.wgsl", "ps", "storage buffer `ps` mixes scalar types: f32 and u32");
}

#[test]
fn whole_struct_load_as_a_value_is_refused() {
    let e = refused("err_struct_whole.wgsl", "ps[gid.x]", "a load of a whole array or struct");
    let (_, src) = shader("err_struct_whole.wgsl");
    assert_eq!(line_of(&src, &e.span), 11, "{e}");
}

#[test]
fn member_of_a_struct_loaded_before_a_store_is_refused() {
    // Read where it is used, `p.pos` would see the store: refused at the use.
    let e = refused("err_struct_stale.wgsl", "p.pos", "used after a store");
    let (_, src) = shader("err_struct_stale.wgsl");
    assert_eq!(line_of(&src, &e.span), 8, "{e}");
}

#[test]
fn f64_is_refused() {
    // naga keeps no span for a block member: the error points at the block.
    refused("err_f64.comp", "Y", "storage buffer `y` has elements of type f64");
}

#[test]
fn storage_texture_is_refused_wgsl() {
    refused("err_texture.wgsl", "img", "storage texture `img`");
}

#[test]
fn storage_texture_is_refused_glsl() {
    refused("err_texture.comp", "img", "storage texture `img`");
}

#[test]
fn bad_kernel_name_is_refused() {
    let (lang, src) = shader("saxpy.wgsl");
    let e = translate(lang, &src, "main", "9 lives").expect_err("bad name");
    assert!(e.message.contains("not a valid kernel name"), "{e}");
}

/// Every prefix of every test shader, and copies with bytes garbled, translate or fail
/// without a panic, with a span inside the source.
#[test]
fn truncated_and_garbled_shaders_do_not_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shaders");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("shaders").flatten().map(|e| e.path()).collect();
    files.sort();
    let mut rng = support::Rng::new(7);
    for path in files {
        let src = std::fs::read_to_string(&path).expect("read");
        let lang = if path.extension().is_some_and(|e| e == "wgsl") { Lang::Wgsl } else { Lang::Glsl };
        let check = |text: &str| {
            if let Err(e) = translate(lang, text, "main", "k") {
                assert!(e.span.end <= text.len() && text.is_char_boundary(e.span.start), "{}: {e}", path.display());
            }
        };
        for cut in (0..src.len()).step_by(7) {
            check(&src[..cut]);
        }
        let bytes = src.as_bytes();
        for _ in 0..60 {
            let mut b = bytes.to_vec();
            for _ in 0..1 + rng.next() % 3 {
                let at = (rng.next() % b.len() as u64) as usize;
                b[at] = b"{}()[];<>+-*/%=!&|^.,:@0123456789 \nxyzuvf"[(rng.next() % 41) as usize];
            }
            check(&String::from_utf8_lossy(&b));
        }
    }
}

#[test]
fn loop_counter_read_after_its_loop_is_refused() {
    refused("err_counter.comp", "k", "read after the loop");
}

#[test]
fn switch_case_falling_through_is_refused_glsl() {
    refused("err_switch.comp", "switch", "falls through");
}

/// `let c = a;` of a fixed-size array in memory is read element by element where `c[i]` is
/// used: after a store to the array that would see the store, so it is refused at the use.
#[test]
fn an_element_of_a_whole_array_load_used_after_a_store_is_refused() {
    let e = refused("err_whole_load.wgsl", "c[1]", "used after a store");
    let (_, src) = shader("err_whole_load.wgsl");
    assert_eq!(line_of(&src, &e.span), 8, "{e}");
}

#[test]
fn a_local_array_past_the_leaf_limit_is_refused_at_its_declaration() {
    let e = refused("err_local_big.wgsl", "big", "more than 256 scalars and vectors");
    let (_, src) = shader("err_local_big.wgsl");
    assert_eq!(line_of(&src, &e.span), 5, "{e}");
}

#[test]
fn a_matrix_function_is_refused_where_it_is_called() {
    let e = refused("err_matrix_op.wgsl", "transpose", "matrix");
    let (_, src) = shader("err_matrix_op.wgsl");
    assert_eq!(line_of(&src, &e.span), 6, "{e}");
}

#[test]
fn a_read_of_a_writeonly_buffer_is_refused_at_the_read() {
    let e = refused("err_writeonly_read.comp", "[i + 1u]", "a read of `writeonly` buffer `y`");
    let (_, src) = shader("err_writeonly_read.comp");
    assert_eq!(line_of(&src, &e.span), 6, "{e}");
}
