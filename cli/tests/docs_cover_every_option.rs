//! docs/cli.md is current (issue 20): every subcommand and every long option that
//! `cmdgraph <command> --help` lists appears in docs/cli.md, in that command's section (or,
//! for the global `--color`, anywhere). A new option without documentation fails here.

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cmdgraph")).args(args).arg("--help").output().expect("cmdgraph runs");
    assert!(out.status.success(), "{args:?} --help failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The long options a help text lists (`--name`), in order, without `--help`/`--version`.
fn long_options(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        for word in line.split([' ', ',', '=', '<', '[']) {
            let bare = word.trim_end_matches([']', '>']);
            if bare.starts_with("--")
                && bare.len() > 2
                && !["--help", "--version"].contains(&bare)
                && !out.iter().any(|o| o == bare)
            {
                out.push(bare.to_string());
            }
        }
    }
    out
}

/// The subcommands `cmdgraph --help` lists.
fn commands(text: &str) -> Vec<String> {
    let body = text.split("Commands:").nth(1).unwrap_or("");
    let body = body.split("\n\n").next().unwrap_or("");
    body.lines().filter_map(|l| l.split_whitespace().next()).filter(|c| *c != "help").map(str::to_string).collect()
}

#[test]
fn every_command_and_option_is_in_docs_cli_md() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli.md")).expect("docs/cli.md");
    let top = help(&[]);
    let commands = commands(&top);
    assert!(commands.len() >= 10, "commands not found in `cmdgraph --help`: {commands:?}");
    let mut missing = Vec::new();
    for option in long_options(&top) {
        if !docs.contains(&option) {
            missing.push(format!("cmdgraph {option}"));
        }
    }
    for command in &commands {
        let heading = format!("## `cmdgraph {command}`");
        let Some(start) = docs.find(&heading) else {
            missing.push(format!("section {heading}"));
            continue;
        };
        let rest = &docs[start + heading.len()..];
        let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
        for option in long_options(&help(&[command])) {
            // `--color` is global: documented once, under "Diagnostics".
            if option == "--color" {
                continue;
            }
            if !section.contains(&option) {
                missing.push(format!("cmdgraph {command} {option}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/cli.md does not mention:\n{}", missing.join("\n"));
}
