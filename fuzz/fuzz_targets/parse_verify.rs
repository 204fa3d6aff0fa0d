//! Fuzz target: any bytes through the text front end.
//!
//! UTF-8 input is parsed; a parsed module is verified and printed, and the printed text must
//! parse again and print to the same bytes (the printer is the parser's exact inverse).
//! Rejected input has its diagnostics rendered, which must not panic either.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let module = match cmdgraph_ir::text::parse(text) {
        Ok(module) => module,
        Err(diagnostics) => {
            for d in &diagnostics {
                let _ = d.render("fuzz.cgir", text);
            }
            return;
        }
    };
    if let Err(diagnostics) = cmdgraph_ir::verify::verify(&module) {
        for d in &diagnostics {
            let _ = d.render("fuzz.cgir", text);
        }
    }
    let printed = cmdgraph_ir::text::print(&module);
    let reparsed = match cmdgraph_ir::text::parse(&printed) {
        Ok(m) => m,
        Err(d) => panic!(
            "printed text does not parse:\n{}\n--- printed ---\n{printed}",
            cmdgraph_ir::diag::render_all(&d, "printed.cgir", &printed)
        ),
    };
    let again = cmdgraph_ir::text::print(&reparsed);
    assert_eq!(again, printed, "print(parse(print(m))) != print(m)");
});
