//! Compiles the C++ shim around SPIRV-Tools' validator (src/spirv_val.cpp: exceptions stop
//! there). The library itself is built and linked by the `spirv-tools-sys` crate, from the
//! SPIRV-Tools source it vendors; the shim declares the two C functions it calls, so it needs
//! no header.

fn main() {
    println!("cargo:rerun-if-changed=src/spirv_val.cpp");
    cc::Build::new().cpp(true).file("src/spirv_val.cpp").flag_if_supported("-std=c++17").compile("cmdgraph_spirv_val");
}
