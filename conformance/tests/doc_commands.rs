//! Every `sparkwire-conformance` command the repository's documents show in their shell blocks
//! (the README, `docs/`, this crate's README) takes the flags shown: each is checked against the
//! suite's `--help`. The `sparkwire` commands of the same blocks, the `--spawn` templates
//! included, are checked by the sparkwire crate's `tests/doc_commands.rs`.

use std::path::Path;
use std::process::Command;

const SUITE: &str = env!("CARGO_BIN_EXE_sparkwire-conformance");
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The documents that show the suite's commands, by path from the repository's root.
fn documents() -> Vec<(String, String)> {
    let mut paths = vec!["README.md".to_string(), "conformance/README.md".to_string()];
    let mut names: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .into_string()
                .expect("utf-8")
        })
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    names.sort();
    paths.extend(names);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(&p))
                .unwrap_or_else(|e| panic!("{p}: {e}"));
            (p, text)
        })
        .collect()
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

/// The suite's arguments of `command`, if it runs the suite (`sparkwire-conformance …`,
/// `target/release/sparkwire-conformance …`, `cargo run -p sparkwire-conformance -- …`), with its
/// quoted templates left out.
fn suite_arguments(command: &str) -> Option<String> {
    // Quoted words (a template, in single or double quotes) are the endpoint's, not the suite's.
    let (mut unquoted, mut quote) = (String::new(), None);
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (None, _) => unquoted.push(c),
            (Some(q), _) if c == q => {
                quote = None;
                unquoted.push('…');
            }
            (Some(_), _) => {}
        }
    }
    let words: Vec<&str> = unquoted.split_whitespace().collect();
    match words.first()? {
        w if w.ends_with("sparkwire-conformance") => Some(words[1..].join(" ")),
        &"cargo" if words.contains(&"sparkwire-conformance") && words.get(1) == Some(&"run") => {
            let at = words.iter().position(|w| *w == "--")?;
            Some(words[at + 1..].join(" "))
        }
        _ => None,
    }
}

#[test]
fn every_conformance_command_shown_takes_the_flags_shown() {
    let out = Command::new(SUITE)
        .arg("--help")
        .output()
        .expect("the suite runs");
    assert!(out.status.success(), "sparkwire-conformance --help");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (path, text) in documents() {
        for command in shell_commands(&text) {
            let Some(args) = suite_arguments(&command) else {
                continue;
            };
            for flag in args
                .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '=')
                .filter(|w| w.starts_with("--") && w.len() > 2)
            {
                let takes = help.match_indices(flag).any(|(at, _)| {
                    !help[at + flag.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                });
                if !takes {
                    wrong.push(format!("{path}: `{command}`: no {flag}"));
                }
            }
            checked += 1;
        }
    }
    assert!(
        wrong.is_empty(),
        "suite commands the documents show that do not run as shown:\n{}",
        wrong.join("\n")
    );
    assert!(checked >= 10, "only {checked} suite commands found");
}
