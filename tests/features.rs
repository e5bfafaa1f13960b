//! The crate's one feature table (the front page of its docs, `src/lib.rs`) says what
//! `Cargo.toml` says: a row for every feature and none for a feature that does not exist, each
//! row's "implies" column the features that feature enables, and the default features named
//! right, there and in the README's map. docs.rs builds with every feature and marks each gated
//! item with its feature.

use std::collections::{BTreeMap, BTreeSet};

const CARGO_TOML: &str = include_str!("../Cargo.toml");
const LIB_RS: &str = include_str!("../src/lib.rs");
const README: &str = include_str!("../README.md");

/// `Cargo.toml`'s `[features]`: each feature and the features it enables (not the optional
/// dependencies, `dep:…`, nor a dependency's features, `crate/feature`).
fn cargo_features() -> BTreeMap<String, BTreeSet<String>> {
    let section = CARGO_TOML
        .split("\n[features]\n")
        .nth(1)
        .expect("Cargo.toml has [features]");
    let section = section.split("\n[").next().expect("a section");
    // One entry may span lines: join everything, drop comments, then split at `name = [ … ]`.
    let text: String = section
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut features = BTreeMap::new();
    let mut rest = text.as_str();
    while let Some(eq) = rest.find('=') {
        let name = rest[..eq].trim().to_string();
        let open = rest[eq..].find('[').expect("a list") + eq;
        let close = rest[open..].find(']').expect("a closed list") + open;
        let enables = rest[open + 1..close]
            .split(',')
            .map(|v| v.trim().trim_matches('"'))
            .filter(|v| !v.is_empty() && !v.starts_with("dep:") && !v.contains('/'))
            .map(str::to_string)
            .collect();
        assert!(
            features.insert(name.clone(), enables).is_none(),
            "{name} twice"
        );
        rest = &rest[close + 1..];
    }
    features
}

/// The names between backticks in `text`, in order.
fn ticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The lib.rs table's rows: feature → the features its "implies" column names.
fn documented_features() -> BTreeMap<String, BTreeSet<String>> {
    let docs: Vec<&str> = LIB_RS
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let header = docs
        .iter()
        .position(|l| *l == "| feature | gives | implies |")
        .expect("src/lib.rs has the feature table");
    let mut rows = BTreeMap::new();
    for line in docs[header + 2..].iter().take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        assert_eq!(cells.len(), 3, "a row of three cells: {line}");
        let name = ticked(cells[0]);
        assert_eq!(name.len(), 1, "one feature per row: {line}");
        let implies = ticked(cells[2]).into_iter().collect();
        assert!(
            rows.insert(name[0].clone(), implies).is_none(),
            "two rows for {}",
            name[0]
        );
    }
    rows
}

fn sorted(names: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    names.into_iter().collect()
}

#[test]
fn the_feature_table_has_a_row_per_feature_with_what_it_implies() {
    let mut cargo = cargo_features();
    cargo.remove("default").expect("a default feature set");
    let table = documented_features();
    let in_cargo = sorted(cargo.keys().cloned());
    let in_table = sorted(table.keys().cloned());
    assert_eq!(
        in_table,
        in_cargo,
        "src/lib.rs's feature table and Cargo.toml's [features] differ: missing rows {:?}, rows for no feature {:?}",
        in_cargo.difference(&in_table).collect::<Vec<_>>(),
        in_table.difference(&in_cargo).collect::<Vec<_>>()
    );
    for (name, enables) in &cargo {
        assert_eq!(
            &table[name], enables,
            "the feature table's row for `{name}` names what it implies wrong"
        );
    }
}

#[test]
fn the_default_features_are_named_right_in_lib_rs_and_the_readme() {
    let defaults = cargo_features().remove("default").expect("default");
    let sentence = LIB_RS
        .lines()
        .filter_map(|l| l.strip_prefix("//! "))
        .skip_while(|l| !l.starts_with("The default features are"))
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let named = sentence
        .split(", so ")
        .next()
        .expect("the default features, then why");
    assert_eq!(
        sorted(ticked(named)),
        defaults,
        "src/lib.rs names the default features wrong: {sentence}"
    );

    // The README's map: "Default: …. Others: …." names every feature once.
    let map = README
        .split("**Features.**")
        .nth(1)
        .and_then(|m| m.split("\n\n").next())
        .expect("the README's map names the features");
    let (default_part, others_part) = map.split_once("Others:").expect("Default: … Others: …");
    let (others, _) = others_part.split_once('.').expect("a sentence");
    assert_eq!(
        sorted(ticked(default_part)),
        defaults,
        "the README names the default features wrong"
    );
    let mut all = sorted(cargo_features().into_keys());
    all.remove("default");
    let others: BTreeSet<String> = sorted(ticked(others));
    assert_eq!(
        sorted(defaults.union(&others).cloned()),
        all,
        "the README's map does not name every feature"
    );
    assert!(
        defaults.is_disjoint(&others),
        "the README names a feature both default and not"
    );
}

#[test]
fn docs_rs_builds_every_feature_and_marks_gated_items() {
    let metadata = CARGO_TOML
        .split("\n[package.metadata.docs.rs]\n")
        .nth(1)
        .and_then(|m| m.split("\n[").next())
        .expect("Cargo.toml has [package.metadata.docs.rs]");
    // As written, or as `cargo package` rewrites it (one value a line, a trailing comma).
    let compact: String = metadata
        .split_whitespace()
        .collect::<String>()
        .replace(",]", "]");
    assert!(compact.contains("all-features=true"), "{metadata}");
    assert!(
        compact.contains(r#"rustdoc-args=["--cfg","docsrs"]"#),
        "{metadata}"
    );
    assert!(
        LIB_RS.contains("#![cfg_attr(docsrs, feature(doc_cfg))]"),
        "src/lib.rs turns on doc_cfg under docsrs"
    );
}

/// The layer numbers of src/lib.rs's list are the ones each layer's module says of itself.
#[test]
fn every_module_gives_its_layer_the_number_lib_rs_gives_it() {
    let layers = [
        ("messages", "src/messages/mod.rs", 1),
        ("definition", "src/definition/mod.rs", 2),
        ("wire", "src/wire/mod.rs", 2),
        ("connection", "src/connection/mod.rs", 3),
        ("validate", "src/validate/mod.rs", 4),
        ("node", "src/node/mod.rs", 5),
        ("reference", "src/reference/mod.rs", 6),
        ("the `sparkwire` binary", "src/cli/mod.rs", 7),
    ];
    let root = env!("CARGO_MANIFEST_DIR");
    for (name, file, number) in layers {
        let listed = LIB_RS
            .lines()
            .filter_map(|l| l.strip_prefix("//! "))
            .find(|l| l.starts_with(&format!("{number}. ")))
            .unwrap_or_else(|| panic!("src/lib.rs lists no layer {number}"));
        assert!(
            listed.contains(name),
            "src/lib.rs's layer {number} is not {name}: {listed}"
        );
        let text = std::fs::read_to_string(format!("{root}/{file}")).expect(file);
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!("//! Layer {number}:")),
            "{file} says {first:?}; src/lib.rs makes it layer {number}"
        );
    }
    // The README's map numbers them the same way.
    for (folder, number) in [
        ("`src/messages/`", 1),
        ("`src/connection/`", 3),
        ("`src/validate/`", 4),
        ("`src/node/`", 5),
        ("`src/reference/`", 6),
        ("`src/cli/`", 7),
    ] {
        let row = README
            .lines()
            .find(|l| l.starts_with(&format!("| {folder}")))
            .unwrap_or_else(|| panic!("the README's map has no row for {folder}"));
        assert!(
            row.contains(&format!("layer {number}:")),
            "the README's row for {folder} does not say layer {number}: {row}"
        );
    }
}
