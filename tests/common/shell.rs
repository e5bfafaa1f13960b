//! The commands of a Markdown document's shell blocks, as the documentation tests read them
//! (`tests/doc_commands.rs`, and `conformance/tests/doc_commands.rs`, which includes this file).

/// The commands of `text`'s shell blocks (```sh): one per line, a line ending in `\` joined with
/// the next, an indented line starting with `[` or `--` taken as the previous command's options
/// (the synopsis style of docs/operating.md's "Commands"), `$ ` prompts and `#` comments dropped,
/// and `a && b`, `a; b` split.
pub fn shell_commands(text: &str) -> Vec<String> {
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
