//! Every command the README and the documents of `docs/` show in their shell blocks still runs as
//! shown: each `sparkwire` command (also as `cargo run -- …`, `target/release/sparkwire …`, or a
//! `--spawn` template) names a subcommand the binary has and only flags that subcommand takes,
//! and each script it runs exists. The Rust examples of the same documents are doctests
//! (`src/lib.rs`, `src/manual.rs`), the library guide's driver example runs in `tests/readme.rs`,
//! and `conformance/tests/doc_commands.rs` checks the `sparkwire-conformance` commands the same
//! way.

#![cfg(feature = "cli")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

mod common;
use common::processes::BIN;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Whether this is the repository, not the crate `cargo package` made (which carries
/// `Cargo.toml.orig` and neither `scripts/` nor `.ci/`).
fn in_the_repository() -> bool {
    !Path::new(ROOT).join("Cargo.toml.orig").exists()
}

/// The README and every document of docs/, by path.
fn documents() -> Vec<(String, String)> {
    let mut docs = vec![("README.md".to_string(), read("README.md"))];
    let mut names: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .into_string()
                .expect("utf-8")
        })
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "docs/ holds the documents: {names:?}");
    for name in names {
        let path = format!("docs/{name}");
        let text = read(&path);
        docs.push((path, text));
    }
    docs
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The commands of `text`'s shell blocks (```sh): one per line, a line ending in `\` joined with
/// the next, an indented line starting with `[` or `--` taken as the previous command's options
/// (the synopsis style of docs/operating.md's "Commands"), `$ ` prompts and `#` comments dropped,
/// and `a && b`, `a; b` split.
fn shell_commands(text: &str) -> Vec<String> {
    let mut commands: Vec<String> = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            in_sh = !in_sh && fence.trim() == "sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = strip_comment(line);
        let trimmed = code.trim();
        if trimmed.is_empty() {
            continue;
        }
        let indented = line.starts_with(' ');
        if pending.is_empty() && indented && (trimmed.starts_with('[') || trimmed.starts_with("--"))
        {
            if let Some(last) = commands.last_mut() {
                last.push(' ');
                last.push_str(trimmed);
                continue;
            }
        }
        let trimmed = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        if let Some(head) = trimmed.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        for part in pending.split("&&").flat_map(|p| p.split("; ")) {
            commands.push(part.trim().trim_end_matches('&').trim().to_string());
        }
        pending.clear();
    }
    assert!(pending.is_empty(), "a command ends in `\\`: {pending}");
    commands
}

/// `line` without its shell comment (a `#` at the start of a word, outside quotes).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double, mut prev) = (false, false, ' ');
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return &line[..i],
            _ => {}
        }
        prev = c;
    }
    line
}

/// The `sparkwire` arguments of `command`, if it runs the binary: `sparkwire …`,
/// `target/release/sparkwire …`, `cargo run [-q] [--release] -- …`; and the `'sparkwire …'`
/// templates it carries (a conformance suite's `--spawn`).
fn sparkwire_invocations(command: &str) -> Vec<String> {
    let mut found = Vec::new();
    let words: Vec<&str> = command.split_whitespace().collect();
    match words.first() {
        Some(&"sparkwire")
        | Some(&"target/release/sparkwire")
        | Some(&"target/debug/sparkwire") => found.push(words[1..].join(" ")),
        Some(&"cargo") if words.get(1) == Some(&"run") => {
            let is_bin = !words.iter().any(|w| *w == "-p" || *w == "--example");
            if let Some(at) = words.iter().position(|w| *w == "--") {
                if is_bin {
                    found.push(words[at + 1..].join(" "));
                }
            }
        }
        _ => {}
    }
    for quoted in command.split('\'').skip(1).step_by(2) {
        if let Some(args) = quoted.strip_prefix("sparkwire ") {
            found.push(args.to_string());
        }
    }
    found
}

/// The `--flags` among `args` (also inside `[…]` and `a|b` synopses).
fn flags(args: &str) -> Vec<String> {
    args.split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '|' || c == '=')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches([',', '.', ')']).to_string())
        .collect()
}

/// `sparkwire ARGS --help`, cached.
fn help(cache: &mut BTreeMap<Vec<String>, Option<String>>, args: &[String]) -> Option<String> {
    cache
        .entry(args.to_vec())
        .or_insert_with(|| {
            let out = Command::new(BIN)
                .args(args)
                .arg("--help")
                .output()
                .expect("sparkwire runs");
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .clone()
}

/// Whether `help` documents `flag` (followed by anything but more of a flag's name).
fn documents_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        !help[at + flag.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

#[test]
fn every_sparkwire_command_shown_names_a_real_subcommand_and_its_flags() {
    let mut cache = BTreeMap::new();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (path, text) in documents() {
        for command in shell_commands(&text) {
            for args in sparkwire_invocations(&command) {
                // The subcommand path: the first word, and the next while the help lists
                // subcommands (`spark decode`, `spec messages`, `trace convert`).
                let words: Vec<String> = args.split_whitespace().map(str::to_string).collect();
                let mut sub: Vec<String> = Vec::new();
                let mut text = help(&mut cache, &[]).expect("sparkwire --help");
                for word in &words {
                    if word.starts_with('-') || !text.contains("\nCommands:") {
                        break;
                    }
                    sub.push(word.clone());
                    match help(&mut cache, &sub) {
                        Some(h) => text = h,
                        None => {
                            wrong.push(format!("{path}: `{command}`: no subcommand {sub:?}"));
                            break;
                        }
                    }
                }
                for flag in flags(&args) {
                    if !documents_flag(&text, &flag) {
                        wrong.push(format!(
                            "{path}: `{command}`: `sparkwire {}` takes no {flag}",
                            sub.join(" ")
                        ));
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "commands the documents show that do not run as shown:\n{}",
        wrong.join("\n")
    );
    assert!(checked >= 40, "only {checked} sparkwire commands found");
}

#[test]
fn every_script_the_documents_run_exists_and_is_executable() {
    if !in_the_repository() {
        eprintln!("skipped: the packaged crate has no scripts/, fuzz/ or conformance/");
        return;
    }
    let mut scripts = 0;
    for (path, text) in documents() {
        for command in shell_commands(&text) {
            let words: Vec<&str> = command.split_whitespace().collect();
            let script = match words.as_slice() {
                ["bash", script, ..] => script,
                [script, ..] if script.ends_with(".sh") => script,
                _ => continue,
            };
            let file = Path::new(ROOT).join(script);
            assert!(file.is_file(), "{path} runs {script}, which does not exist");
            if !command.starts_with("bash ") {
                use std::os::unix::fs::PermissionsExt;
                let mode = file.metadata().expect("metadata").permissions().mode();
                assert!(
                    mode & 0o111 != 0,
                    "{path} runs {script} directly, which is not executable"
                );
            }
            scripts += 1;
        }
    }
    assert!(scripts >= 3, "only {scripts} scripts found");
}

/// The README's test command is the script, and CI runs that same script for its tests.
#[test]
fn the_readme_test_command_is_the_script_ci_runs() {
    if !in_the_repository() {
        eprintln!("skipped: the packaged crate has no scripts/ or .ci/");
        return;
    }
    let readme = read("README.md");
    let commands = shell_commands(&readme);
    assert!(
        commands.iter().any(|c| c == "scripts/test.sh"),
        "the README's set-up shows scripts/test.sh: {commands:?}"
    );
    let ci = read(".ci/run");
    let runs: Vec<&str> = ci
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter(|l| l.contains("scripts/test.sh") || l.contains("cargo test --workspace"))
        .collect();
    assert_eq!(
        runs,
        ["scripts/test.sh"],
        ".ci/run runs the workspace's tests only through scripts/test.sh"
    );
    let script = read("scripts/test.sh");
    assert!(
        script.contains("exec cargo test --workspace --all-features \"$@\""),
        "scripts/test.sh runs every test with every feature"
    );
    for package in ["chromium", "tshark", "zookeeper"] {
        assert!(
            script.contains(&format!("missing+=({package})")),
            "scripts/test.sh installs {package} when it is missing"
        );
    }
}
