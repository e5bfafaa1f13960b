//! The commands of a Markdown document's shell blocks, as the documentation tests read them
//! (`tests/doc_commands.rs`, `tests/doc_runs.rs`, and `conformance/tests/doc_commands.rs`, which
//! includes this file).

/// The commands of `text`'s shell blocks (```sh): one per line, a line ending in `\` or inside a
/// single-quoted string joined with the next, an indented line starting with `[` or `--` taken as
/// the previous command's options (the synopsis style of docs/operating.md's "Commands"), `#`
/// comments dropped, and `a && b`, `a; b` split outside quotes. In a block whose commands carry
/// `$ ` prompts, only the prompted lines are commands: the others are what they print.
pub fn shell_commands(text: &str) -> Vec<String> {
    let mut commands: Vec<String> = Vec::new();
    let mut in_sh = false;
    let mut block: Vec<&str> = Vec::new();
    for line in text.lines() {
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            if in_sh {
                block_commands(&block, &mut commands);
                block.clear();
            }
            in_sh = !in_sh && fence.trim() == "sh";
            continue;
        }
        if in_sh {
            block.push(line);
        }
    }
    assert!(!in_sh, "a shell block is not closed");
    commands
}

/// The commands of one shell block's `lines`, pushed onto `commands`.
fn block_commands(lines: &[&str], commands: &mut Vec<String>) {
    let prompted = lines.iter().any(|l| l.trim_start().starts_with("$ "));
    let mut pending = String::new();
    for line in lines {
        let continuing = !pending.is_empty();
        let code = if continuing && open_quote(&pending) {
            *line
        } else {
            strip_comment(line)
        };
        let trimmed = code.trim();
        if trimmed.is_empty() && !continuing {
            continue;
        }
        if !continuing {
            let indented = line.starts_with(' ');
            if !prompted && indented && (trimmed.starts_with('[') || trimmed.starts_with("--")) {
                if let Some(last) = commands.last_mut() {
                    last.push(' ');
                    last.push_str(trimmed);
                    continue;
                }
            }
            if prompted && !trimmed.starts_with("$ ") {
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
        if open_quote(&pending) {
            pending.push('\n');
            continue;
        }
        for part in split_commands(&pending) {
            commands.push(part.trim().trim_end_matches('&').trim().to_string());
        }
        pending.clear();
    }
    assert!(
        pending.is_empty(),
        "a command ends in `\\` or an open quote: {pending}"
    );
}

/// Whether `text` ends inside a single- or double-quoted string.
fn open_quote(text: &str) -> bool {
    let (mut single, mut double) = (false, false);
    for c in text.chars() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ => {}
        }
    }
    single || double
}

/// `text` cut at each `&&` and each `; ` outside quotes.
fn split_commands(text: &str) -> Vec<&str> {
    let (mut single, mut double) = (false, false);
    let mut parts = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'&' if !single && !double && bytes.get(i + 1) == Some(&b'&') => {
                parts.push(&text[start..i]);
                start = i + 2;
                i += 1;
            }
            b';' if !single && !double && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(&text[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
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
