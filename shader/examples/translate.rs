//! Prints the IR kernel of a shader file's `main` entry point: `translate FILE [ENTRY]`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: translate FILE.{{wgsl,comp}} [ENTRY]");
        std::process::exit(2);
    };
    let entry = args.get(2).map_or("main", String::as_str);
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let lang = if path.ends_with(".wgsl") { cmdgraph_shader::Lang::Wgsl } else { cmdgraph_shader::Lang::Glsl };
    match cmdgraph_shader::translate(lang, &src, entry, "k") {
        Ok(t) => print!("{}", t.text),
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    }
}
