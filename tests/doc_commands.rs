//! Every command the README and the documents of `docs/` show in their shell blocks still runs as
//! shown: each `sparkwire` command (also as `cargo run -- …`, `target/release/sparkwire …`, or a
//! `--spawn` template) names a subcommand the binary has and only flags that subcommand takes,
//! and each script it runs exists. `tests/doc_runs.rs` runs them. The Rust examples of the same documents are doctests
//! (`src/lib.rs`, `src/manual.rs`), the library guide's driver example runs in `tests/readme.rs`,
//! and `conformance/tests/doc_commands.rs` checks the `sparkwire-conformance` commands the same
//! way.

#![cfg(feature = "cli")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

mod common;
use common::processes::BIN;
use common::shell::shell_commands;

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
        script.contains("exec cargo test --workspace --all-features --no-fail-fast \"$@\""),
        "scripts/test.sh runs every test with every feature"
    );
    for package in ["chromium", "tshark", "zookeeper"] {
        assert!(
            script.contains(&format!("missing+=({package})")),
            "scripts/test.sh installs {package} when it is missing"
        );
    }
}

/// The commands of the README section headed `heading` (up to the next heading).
fn section_commands(readme: &str, heading: &str) -> Vec<String> {
    let start = readme
        .find(heading)
        .unwrap_or_else(|| panic!("the README has no section {heading:?}"));
    let body = &readme[start + heading.len()..];
    let end = body.find("\n#").unwrap_or(body.len());
    shell_commands(&body[..end])
}

/// Quick start 2 and the set-up's first command, run as the README shows them: each
/// `cargo run --release -- ARGS` runs this build's `sparkwire ARGS` (the test build stands in
/// for the release one), in a directory of its own, and must succeed and print what the README
/// says it prints. (Quick start 3 runs in `conformance/tests/doc_commands.rs`; quick start 1 is a
/// doctest of `src/lib.rs`; `scripts/test.sh` is what runs this test.)
#[test]
fn the_readme_quick_start_commands_run_as_shown() {
    let readme = read("README.md");
    let dir = common::files::temp_dir("readme-quick-start");
    let mut commands = section_commands(&readme, "### 2. A cluster on loopback");
    commands.extend(
        section_commands(&readme, "## Set-up")
            .into_iter()
            .filter(|c| c.starts_with("cargo run")),
    );
    assert!(commands.len() >= 4, "the commands: {commands:?}");
    let mut outputs = Vec::new();
    for command in &commands {
        let args = sparkwire_invocations(command);
        assert_eq!(args.len(), 1, "`{command}` runs sparkwire once");
        let out = Command::new(BIN)
            .args(args[0].split_whitespace())
            .current_dir(&dir)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("sparkwire runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "`{command}` failed ({}): {stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push((command.clone(), stdout));
    }
    // What the README says quick start 2 prints: the result, tasks per second, the messages by
    // type and the validators' verdicts; the trace it writes is then validated.
    for (command, out) in &outputs {
        if command.contains("local-cluster") {
            assert!(out.contains("tasks/s"), "`{command}`: {out}");
            assert!(out.contains("RegisterApplication"), "`{command}`: {out}");
        }
        if command.contains("spec messages") {
            assert!(out.contains("LaunchTask"), "`{command}`: {out}");
        }
    }
    let trace = dir.join("run.jsonl");
    assert!(
        trace.is_file() && std::fs::metadata(&trace).expect("metadata").len() > 0,
        "quick start 2 writes run.jsonl"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
