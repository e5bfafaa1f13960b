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
