//! Every `sparkwire-conformance` command the repository's documents show in their shell blocks
//! (the README, `docs/`, this crate's README) takes the flags shown: each is checked against the
//! suite's `--help`. The `sparkwire` commands of the same blocks, the `--spawn` templates
//! included, are checked by the sparkwire crate's `tests/doc_commands.rs`.

use std::path::Path;
use std::process::Command;

#[path = "../../tests/common/shell.rs"]
mod shell;
use shell::shell_commands;

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

/// The `sparkwire` binary the workspace build put beside the suite's.
fn sparkwire() -> std::path::PathBuf {
    let bin = Path::new(SUITE).with_file_name("sparkwire");
    assert!(
        bin.exists(),
        "{} is missing: build the workspace (cargo test --workspace builds it)",
        bin.display()
    );
    bin
}

/// The README's quick start 3 run as shown: its master (this build's, on a free port where the
/// README names 7077, so that the test takes no fixed port), the suite against it with a JUnit
/// report, and the suite's list. `cargo build` is what built this test. Each command must
/// succeed: the suite exits 0 only when every case passed.
#[test]
fn the_readme_quick_start_3_runs_as_shown() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README.md");
    let heading = "### 3. Check your own endpoint";
    let start = readme.find(heading).expect("the README's quick start 3");
    let body = &readme[start + heading.len()..];
    let commands = shell_commands(&body[..body.find("\n#").unwrap_or(body.len())]);
    let dir = std::env::temp_dir().join(format!("sparkwire-readme-qs3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let mut master: Option<(std::process::Child, String)> = None;
    let mut ran = Vec::new();
    for command in &commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        match words.first().copied() {
            Some("cargo") => continue,
            Some(w) if w.ends_with("/sparkwire") => {
                let args: Vec<&str> = words[1..]
                    .iter()
                    .map(|w| if *w == "7077" { "0" } else { w })
                    .collect();
                assert_eq!(args.first(), Some(&"master"), "`{command}`");
                let mut child = Command::new(sparkwire())
                    .args(&args)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("the master starts");
                let mut line = String::new();
                std::io::BufRead::read_line(
                    &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
                    &mut line,
                )
                .expect("the master's first line");
                let addr = line
                    .trim()
                    .rsplit("sparkwire://")
                    .next()
                    .expect("an address")
                    .to_string();
                master = Some((child, addr));
            }
            Some(w) if w.ends_with("/sparkwire-conformance") => {
                let addr = master.as_ref().map(|(_, a)| a.clone());
                let args: Vec<String> = words[1..]
                    .iter()
                    .map(|w| match (*w, &addr) {
                        ("127.0.0.1:7077", Some(a)) => a.clone(),
                        _ => w.to_string(),
                    })
                    .collect();
                let out = Command::new(SUITE)
                    .args(&args)
                    .current_dir(&dir)
                    .output()
                    .expect("the suite runs");
                let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                assert!(
                    out.status.success(),
                    "`{command}` failed ({}): {}\n{}",
                    out.status,
                    stdout.lines().rev().take(30).collect::<Vec<_>>().join("\n"),
                    String::from_utf8_lossy(&out.stderr)
                );
                if args.iter().any(|a| a == "--list") {
                    assert!(stdout.contains("handshake/"), "--list lists case ids");
                }
                if let Some(at) = args.iter().position(|a| a == "--junit") {
                    let report = dir.join(&args[at + 1]);
                    let xml = std::fs::read_to_string(&report).expect("the JUnit report");
                    assert!(xml.contains("<testsuite"), "{xml}");
                }
                ran.push(command.clone());
            }
            _ => panic!("quick start 3 shows `{command}`, which this test does not know"),
        }
    }
    if let Some((mut child, _)) = master {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(ran.len(), 2, "the suite's two commands ran: {ran:?}");
}
