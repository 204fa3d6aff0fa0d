//! The documents and the CLI agree, both ways.
//!
//! - docs/cli.md is current (issue 20): every subcommand and every long option that
//!   `cmdgraph <command> --help` lists is described in docs/cli.md, in that command's section
//!   outside its synopsis block (or, for the global `--color`, anywhere). A new option without
//!   documentation fails here, and so does one the synopsis lists but no text describes
//!   (issue 28: `run --timeout` was only in the synopsis).
//! - No document names a subcommand or an option that does not exist (issue 28: docs/capi.md
//!   and the C header cited `cmdgraph sign`). Every `cmdgraph WORD` in code (an inline code span,
//!   or a line of a fenced block) of README.md, ARCHITECTURE.md, docs/*.md and the C header
//!   must name a subcommand, and every `--option` after it in the same command must be one of
//!   that subcommand's options.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
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

/// `text` without its fenced code blocks (a section's synopsis and examples).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn every_command_and_option_is_described_in_docs_cli_md() {
    let docs = std::fs::read_to_string(repo().join("docs/cli.md")).expect("docs/cli.md");
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
        let section = prose(&rest[..rest.find("\n## ").unwrap_or(rest.len())]);
        for option in long_options(&help(&[command])) {
            // `--color` is global: documented once, under "Diagnostics".
            if option == "--color" {
                continue;
            }
            if !mentions_option(&section, &option) {
                missing.push(format!("cmdgraph {command} {option}"));
            }
        }
    }
    assert!(missing.is_empty(), "docs/cli.md does not describe (outside the synopsis):\n{}", missing.join("\n"));
}

/// Whether `text` has `option` as a whole option name (`--run` is not in `--runs`).
fn mentions_option(text: &str, option: &str) -> bool {
    text.match_indices(option).any(|(at, _)| {
        let next = text[at + option.len()..].chars().next();
        !matches!(next, Some(c) if c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// One piece of code in a document: where it is, and its text.
struct Code {
    place: String,
    text: String,
}

/// The code of a document: inline code spans, and each line of a fenced block (a line that
/// starts with whitespace continues the command of the line above, as a wrapped synopsis does).
fn code_of(path: &Path, text: &str) -> Vec<Code> {
    let name = path.strip_prefix(repo()).unwrap_or(path).display().to_string();
    let mut out: Vec<Code> = Vec::new();
    let mut fenced = false;
    let mut continues = false;
    for (i, line) in text.lines().enumerate() {
        let place = format!("{name}:{}", i + 1);
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continues = false;
            continue;
        }
        if fenced {
            let indented = line.starts_with([' ', '\t']) && !line.trim().is_empty();
            if indented && continues {
                let last = out.last_mut().expect("a line to continue");
                last.text.push(' ');
                last.text.push_str(line.trim());
            } else {
                out.push(Code { place, text: line.to_string() });
            }
            continues = line.contains("cmdgraph ") || (indented && continues);
            continue;
        }
        // Inline spans: the text between pairs of backticks on this line.
        for (k, span) in line.split('`').enumerate() {
            if k % 2 == 1 {
                out.push(Code { place: place.clone(), text: span.to_string() });
            }
        }
    }
    out
}

/// The `cmdgraph WORD ...` commands in a piece of code: each subcommand word with the words
/// up to the end of that command (a pipe, `&&`, `;`, or the next `cmdgraph`).
fn commands_in(code: &str) -> Vec<(String, Vec<String>)> {
    let words: Vec<&str> = code.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        // `cmdgraph` as a word of its own: not `cmdgraph-bench`, `cmdgraph::`, `./cmdgraph.h`.
        // And where a shell would run it: first, or after a prompt, an operator or `VAR=value`
        // (not `... this cmdgraph bug` in a message).
        let is_cmd = words[i] == "cmdgraph" || words[i].ends_with("/cmdgraph") || words[i] == "$(cmdgraph";
        let runs_here =
            i == 0 || ["$", "|", "&&", ";", "||", "time"].contains(&words[i - 1]) || words[i - 1].contains('=');
        // `cmdgraph <command> --help`, `cmdgraph COMMAND`: a placeholder, not a name.
        let placeholder =
            words.get(i + 1).is_some_and(|w| w.starts_with('<') || w.chars().all(|c| c.is_ascii_uppercase()));
        if is_cmd && runs_here && !placeholder && i + 1 < words.len() {
            let sub = words[i + 1].trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-').to_string();
            let mut rest = Vec::new();
            let mut j = i + 2;
            while j < words.len() && !["|", "&&", ";", "||"].contains(&words[j]) && words[j] != "cmdgraph" {
                rest.push(words[j].to_string());
                j += 1;
            }
            if !sub.is_empty() && sub.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '-') {
                out.push((sub, rest));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The long options named in words (`--passes=a,b` is `--passes`; `[--graph` is `--graph`).
fn options_in(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for w in words {
        let w = w.trim_start_matches(['[', '(', '`', '"', '\'']);
        if let Some(name) = w.strip_prefix("--") {
            let name: String = name.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            if !name.is_empty() {
                out.push(format!("--{name}"));
            }
        }
    }
    out
}

fn documents() -> Vec<PathBuf> {
    let root = repo();
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md"), root.join("capi/include/cmdgraph.h")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

#[test]
fn documents_name_only_commands_and_options_that_exist() {
    let top = help(&[]);
    let commands: BTreeSet<String> = commands(&top).into_iter().collect();
    let global: BTreeSet<String> =
        long_options(&top).into_iter().chain(["--help".into(), "--version".into()]).collect();
    let options_of =
        |c: &str| -> BTreeSet<String> { long_options(&help(&[c])).into_iter().chain(global.iter().cloned()).collect() };
    let per_command: std::collections::BTreeMap<String, BTreeSet<String>> =
        commands.iter().map(|c| (c.clone(), options_of(c))).collect();

    let mut wrong = Vec::new();
    let mut checked = 0;
    for path in documents() {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for code in code_of(&path, &text) {
            for (sub, rest) in commands_in(&code.text) {
                // A global option before the subcommand (`cmdgraph --color never verify`).
                if sub.starts_with('-') {
                    if !global.contains(&sub) {
                        wrong.push(format!("{}: `cmdgraph {sub}`: no such global option", code.place));
                    }
                    continue;
                }
                checked += 1;
                let Some(options) = per_command.get(&sub) else {
                    wrong.push(format!("{}: `cmdgraph {sub}`: no such subcommand (they are {commands:?})", code.place));
                    continue;
                };
                for option in options_in(&rest) {
                    if !options.contains(&option) {
                        wrong.push(format!(
                            "{}: `cmdgraph {sub} ... {option}`: `{sub}` has no option {option}",
                            code.place
                        ));
                    }
                }
            }
        }
    }
    // The scan must see the documents' commands, or it checks nothing.
    assert!(checked > 100, "only {checked} `cmdgraph COMMAND` uses found in the documents");
    assert!(wrong.is_empty(), "documents name what the CLI does not have:\n{}", wrong.join("\n"));
}

#[test]
fn the_scan_catches_what_it_must() {
    // The checker itself, on the two forms issue 28 found.
    let code = code_of(
        Path::new("x.md"),
        "as `cmdgraph sign` does\n```\ncmdgraph run B [--graph N]\n         [--timeout S]\n```\n",
    );
    let found: Vec<(String, Vec<String>)> = code.iter().flat_map(|c| commands_in(&c.text)).collect();
    assert_eq!(found[0].0, "sign");
    assert_eq!(found[1].0, "run");
    assert_eq!(options_in(&found[1].1), ["--graph", "--timeout"]);
    assert!(mentions_option("use --runs 2", "--runs") && !mentions_option("use --runs 2", "--run"));
}

#[test]
fn help_lists_every_documented_exit_code() {
    // docs/cli.md's table, `| N | meaning |`, against the line `cmdgraph --help` ends with.
    let docs = std::fs::read_to_string(repo().join("docs/cli.md")).expect("docs/cli.md");
    let table = &docs[docs.find("## Exit codes").expect("an exit code section")..];
    let codes: Vec<u8> = table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.trim_start_matches('|').split('|').next()?.trim().parse().ok())
        .collect();
    assert!(codes.len() >= 5, "exit codes not found in docs/cli.md: {codes:?}");
    let top = help(&[]);
    let line = top.lines().find(|l| l.starts_with("Exit codes:")).expect("`cmdgraph --help` lists its exit codes");
    for code in codes {
        assert!(line.contains(&format!(" {code} ")), "`cmdgraph --help` does not list exit code {code}: {line}");
    }
}
