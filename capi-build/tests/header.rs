//! The checked-in C header (`include/cmdgraph_build.h`) is what cbindgen generates from the crate
//! now; `CMDGRAPH_BLESS=1` rewrites it instead of failing.

use std::path::Path;

#[test]
fn the_checked_in_header_is_up_to_date() {
    let crate_dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(Path::new(crate_dir).join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = Path::new(crate_dir).join("include/cmdgraph_build.h");
    if std::env::var("CMDGRAPH_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write include/cmdgraph_build.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != generated {
        let first = checked_in.lines().zip(generated.lines()).position(|(a, b)| a != b);
        let line = first.unwrap_or_else(|| checked_in.lines().count().min(generated.lines().count()));
        panic!(
            "capi-build/include/cmdgraph_build.h is out of date with capi-build/src (first difference at line {}: checked in {:?}, \
             generated {:?}).\nRegenerate it with: CMDGRAPH_BLESS=1 cargo test -p cmdgraph-capi-build --test header",
            line + 1,
            checked_in.lines().nth(line).unwrap_or("<end of file>"),
            generated.lines().nth(line).unwrap_or("<end of file>"),
        );
    }
}
