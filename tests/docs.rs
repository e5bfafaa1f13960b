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
