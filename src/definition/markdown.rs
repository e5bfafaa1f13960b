//! Renders the definition as Markdown: `protocol/messages.md`, the per-message reference that
//! `protocol/SPEC.md` points to. Written by `sparkwire spec docs`, never edited by hand.

use std::fmt::Write;

use super::{Definition, FieldDef, MessageKind, TypeKind};

fn versions_of(f: &FieldDef) -> String {
    match (f.since, f.until) {
        (Some(s), Some(u)) => format!("v{s}–v{u}"),
        (Some(s), None) => format!("v{s}+"),
        (None, Some(u)) => format!("v1–v{u}"),
        (None, None) => "all".to_string(),
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn field_table(out: &mut String, fields: &[FieldDef]) {
    if fields.is_empty() {
        out.push_str("No fields: the body is an empty map `{}`.\n\n");
        return;
    }
    out.push_str("| # | field | type | versions | meaning |\n|---|---|---|---|---|\n");
    for (i, f) in fields.iter().enumerate() {
        let mut meaning = cell(&f.doc);
        if let Some(d) = &f.default {
            let words = f.default_doc.as_deref().unwrap_or_default();
            let _ = write!(
                meaning,
                " *Reading v1:* {} `{}`.",
                cell(words),
                cell(&d.to_string())
            );
        }
        if let Some(d) = &f.from_v2 {
            let words = f.from_v2_doc.as_deref().unwrap_or_default();
            let _ = write!(
                meaning,
                " *Writing v1:* {} `{}`.",
                cell(words),
                cell(&d.to_string())
            );
        }
        let _ = writeln!(
            out,
            "| {} | `{}` | `{}` | {} | {} |",
            i + 1,
            f.name,
            f.ty,
            versions_of(f),
            meaning
        );
    }
    out.push('\n');
}

/// The whole Markdown reference.
pub fn render(def: &Definition) -> String {
    let mut out = String::new();
    out.push_str("# sparkwire messages and types\n\n");
    out.push_str(
        "Generated from `protocol/definition.json` by `sparkwire spec docs`; do not edit. \
         `protocol/SPEC.md` says how each type is laid out in MessagePack. Fields are listed in \
         wire order; an encoder writes exactly the fields of the version in use, in this order.\n\n",
    );
    out.push_str("## Versions\n\n| number | Spark | meaning |\n|---|---|---|\n");
    for v in &def.versions {
        let _ = writeln!(out, "| {} | {} | {} |", v.number, v.spark, cell(&v.doc));
    }
    out.push_str("\n## Roles\n\n| role | family | meaning |\n|---|---|---|\n");
    for r in &def.roles {
        let _ = writeln!(out, "| `{}` | {} | {} |", r.name, r.family, cell(&r.doc));
    }
    for family in ["deploy", "coarse"] {
        let title = if family == "deploy" {
            "Deploy family"
        } else {
            "Coarse-grained family"
        };
        let _ = writeln!(out, "\n## {title} (`{family}`)\n");
        out.push_str("| versions | message | route | kind |\n|---|---|---|---|\n");
        for m in def.messages.iter().filter(|m| m.family == family) {
            let _ = writeln!(
                out,
                "| {} | [{}](#{}-{}) | {} | {} |",
                m.version_range(),
                m.name,
                family,
                m.name.to_lowercase(),
                m.route(),
                cell(&m.kind_text())
            );
        }
        out.push('\n');
        for m in def.messages.iter().filter(|m| m.family == family) {
            let _ = writeln!(
                out,
                "<a id=\"{}-{}\"></a>\n### {} `{}`\n",
                family,
                m.name.to_lowercase(),
                family,
                m.name
            );
            let _ = writeln!(
                out,
                "Route: {}. Kind: {}. Versions: {}.{}\n",
                m.route(),
                m.kind_text(),
                m.version_range(),
                if m.kind == MessageKind::Local {
                    " Never crosses a connection."
                } else {
                    ""
                }
            );
            let _ = writeln!(out, "{}\n", m.doc);
            field_table(&mut out, &m.fields);
        }
    }
    out.push_str("## Shared types\n\n");
    for t in &def.types {
        let _ = writeln!(out, "### `{}`\n\n{}\n", t.name, t.doc);
        match t.kind {
            TypeKind::Struct => field_table(&mut out, &t.fields),
            TypeKind::Enum => {
                let values: Vec<String> = t.values.iter().map(|v| format!("`{v}`")).collect();
                let _ = writeln!(
                    out,
                    "An enumeration, sent as one of these strings: {}.\n",
                    values.join(", ")
                );
            }
            TypeKind::Union => {
                out.push_str(
                    "A union, sent as a one-entry map `{Variant: {fields}}`. Variants:\n\n",
                );
                for v in &t.variants {
                    let _ = writeln!(out, "#### `{}`\n\n{}\n", v.name, v.doc);
                    field_table(&mut out, &v.fields);
                }
            }
        }
    }
    out
}
