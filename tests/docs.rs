//! `protocol/messages.md` is what `sparkwire spec docs` writes from the definition.

use sparkwire::definition::{markdown, Definition};

#[test]
fn messages_md_is_current_with_the_definition() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/messages.md");
    let disk = std::fs::read_to_string(path).expect("protocol/messages.md exists");
    assert!(
        disk == markdown::render(Definition::builtin()),
        "protocol/messages.md is stale: run `cargo run -- spec docs`"
    );
}

#[test]
fn messages_md_documents_every_message_and_every_version_rule() {
    let def = Definition::builtin();
    let text = markdown::render(def);
    for m in &def.messages {
        assert!(
            text.contains(&format!("### {} `{}`", m.family, m.name)),
            "{} missing",
            m.name
        );
    }
    for f in def
        .messages
        .iter()
        .flat_map(|m| &m.fields)
        .chain(def.types.iter().flat_map(|t| &t.fields))
    {
        for (expr, words) in [(&f.default, &f.default_doc), (&f.from_v2, &f.from_v2_doc)] {
            if let Some(e) = expr {
                let words = words
                    .as_deref()
                    .expect("a conversion is also described in words");
                assert!(text.contains(words), "rule for {} missing", f.name);
                let shown = e.to_string().replace('|', "\\|");
                assert!(text.contains(&shown), "expression for {} missing", f.name);
            }
        }
    }
}

/// The definition's docs (and so messages.md) name fields by their wire names, never by the Rust
/// names where they differ (`masterAddress`, not `master_address`).
#[test]
fn docs_name_fields_by_their_wire_names() {
    fn snake(name: &str) -> String {
        let mut out = String::new();
        for c in name.chars() {
            if c.is_ascii_uppercase() {
                out.push('_');
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        }
        out
    }
    let def = Definition::builtin();
    let fields: Vec<&sparkwire::definition::FieldDef> = def
        .messages
        .iter()
        .flat_map(|m| &m.fields)
        .chain(def.types.iter().flat_map(|t| &t.fields))
        .chain(
            def.types
                .iter()
                .flat_map(|t| t.variants.iter().flat_map(|v| &v.fields)),
        )
        .collect();
    let text = markdown::render(def);
    for f in &fields {
        let rust = snake(&f.name);
        if rust != f.name {
            assert!(
                !text.contains(&format!("`{rust}`")),
                "messages.md names `{rust}`; the wire name is `{}`",
                f.name
            );
        }
    }
}

/// The example texts of refusals are the ones Spark's master sends.
#[test]
fn register_worker_failed_quotes_spark_s_text() {
    let def = Definition::builtin();
    let m = def
        .message("deploy", "RegisterWorkerFailed")
        .expect("RegisterWorkerFailed");
    let doc = &m.fields[0].doc;
    assert!(
        doc.contains("Attempted to re-register worker at same address: "),
        "{doc}"
    );
    assert!(!doc.contains("Duplicate worker ID"), "{doc}");
}

/// SPEC.md §11 and the implementer's checklist (§12) name vectors that exist, and the checklist
/// names every rule of rules.md.
#[test]
fn spec_checklist_names_real_vectors_and_every_rule() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = std::fs::read_to_string(root.join("protocol/SPEC.md")).expect("SPEC.md");
    let start = spec.find("## 11. Decoding in detail").expect("§11");
    // §11 and §12 only: the sections after them quote other things (program paths, messages).
    let end = spec[start..]
        .find("## 13.")
        .map_or(spec.len(), |at| start + at);
    let tail = &spec[start..end];
    let checklist = &tail[tail.find("## 12.").expect("§12")..];
    let mut names = Vec::new();
    for file in ["decoder.json", "envelope.json"] {
        let text =
            std::fs::read_to_string(root.join("protocol/vectors").join(file)).expect("vectors");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        for x in v.as_array().expect("array") {
            names.push(x["name"].as_str().expect("name").to_string());
            if let Some(s) = x.get("spec").and_then(|s| s.as_str()) {
                names.push(s.to_string());
            }
        }
    }
    // Double-quoted text outside backticks: vector names ("…" ends a shortened one).
    let mut quoted = Vec::new();
    let (mut tick, mut open) = (false, None);
    for (i, c) in tail.char_indices() {
        match c {
            '`' => tick = !tick,
            '"' if !tick => match open.take() {
                Some(at) => {
                    quoted.push(tail[at..i].split_whitespace().collect::<Vec<_>>().join(" "))
                }
                None => open = Some(i + 1),
            },
            _ => {}
        }
    }
    assert!(quoted.len() > 40, "{} quoted names", quoted.len());
    for q in &quoted {
        let q = q.trim_end_matches('…');
        assert!(
            names.iter().any(|n| n.starts_with(q)),
            "SPEC.md names a vector {q:?} that is not in decoder.json or envelope.json"
        );
    }
    for rule in sparkwire::validate::Rule::ALL {
        let id = rule.id();
        let letter = &id[..1];
        let listed = checklist.contains(&format!(" {id}"))
            || checklist.contains(&format!("{id},"))
            || checklist.split([' ', ';', ',']).any(|w| {
                // ranges such as W1–W8
                let mut parts = w.split('–');
                match (parts.next(), parts.next()) {
                    (Some(a), Some(b)) if a.starts_with(letter) && b.starts_with(letter) => {
                        let n = |s: &str| s[1..].parse::<u32>().ok();
                        let (lo, hi, me) = (n(a), n(b), n(id));
                        matches!((lo, hi, me), (Some(l), Some(h), Some(m)) if l <= m && m <= h)
                    }
                    _ => false,
                }
            });
        assert!(listed, "the checklist does not name rule {id}");
    }
}
