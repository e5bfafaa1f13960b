//! Every public type has one public path (issue 12): a module whose items are re-exported by its
//! parent is private, and a public module (a namespace such as `messages::deploy`) is not
//! re-exported from. The test reads the module files of the library's layers and fails on a
//! `pub use` that reaches an item through public modules only, which would give that item a
//! second public path (the one through the modules, and the re-export).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The module files whose `pub use` lines are checked.
const CHECKED: &[&str] = &[
    "src/messages/mod.rs",
    "src/messages/deploy/mod.rs",
    "src/messages/coarse/mod.rs",
    "src/messages/legacy/mod.rs",
    "src/wire/mod.rs",
    "src/validate/mod.rs",
    "src/definition/mod.rs",
    "src/connection/mod.rs",
    "src/node/mod.rs",
    "src/node/master/mod.rs",
    "src/node/worker/mod.rs",
    "src/node/sim/mod.rs",
    "src/reference/mod.rs",
    "src/reference/master/mod.rs",
    "src/reference/worker/mod.rs",
    "src/reference/webui/mod.rs",
    "src/reference/driver/mod.rs",
    "src/spark/mod.rs",
    "src/spark/serial/mod.rs",
];

/// Re-exports from public modules that are meant: `node::ConnId` is the validator's connection
/// id (a `u64` alias, not a type of its own) named in the cores' vocabulary (issue 23).
const MEANT: &[(&str, &str)] = &[("src/node/mod.rs", "validate::ConnId")];

/// A module's top-level declarations: its child modules (name → declared `pub`) and the paths its
/// `pub use` items re-export, each split into segments (a glob ends in `*`).
#[derive(Debug, Default)]
struct Module {
    children: BTreeMap<String, bool>,
    reexports: Vec<Vec<String>>,
}

/// Removes `//` comments (every line comment and doc comment) and keeps the rest.
fn strip_comments(source: &str) -> String {
    source
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The full paths of a `use` tree such as `a::{b::C, D}` (without the `pub use` and the `;`).
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        let path: Vec<String> = tree.split("::").map(str::to_string).collect();
        return vec![path];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').expect("a closed use group")];
    let (mut depth, mut start, mut parts) = (0, 0, Vec::new());
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut paths = Vec::new();
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        for rest in expand(part) {
            let mut path: Vec<String> = prefix.split("::").map(str::to_string).collect();
            path.extend(rest);
            paths.push(path);
        }
    }
    paths
}

/// Reads a module's top-level (unindented) `mod` and `pub use` declarations.
fn parse(source: &str) -> Module {
    let source = strip_comments(source);
    let mut module = Module::default();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let (public, rest) = if let Some(rest) = line.strip_prefix("pub ") {
            (true, rest)
        } else if let Some(rest) = line.strip_prefix("pub(") {
            (false, rest.split_once(") ").map_or("", |(_, r)| r))
        } else {
            (false, line)
        };
        if let Some(name) = rest.strip_prefix("mod ") {
            let name = name.trim_end_matches([';', '{', ' ']).trim();
            module.children.insert(name.to_string(), public);
        } else if public && rest.starts_with("use ") {
            let mut statement = rest["use ".len()..].to_string();
            while !statement.contains(';') {
                match lines.next() {
                    Some(more) => statement.push_str(more),
                    None => break,
                }
            }
            let tree = statement.split(';').next().unwrap_or_default();
            module.reexports.extend(expand(tree));
        }
    }
    module
}

/// Where a child module of the module in `file` is defined, in `files`' keys.
fn child_file(file: &str, child: &str, files: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    let candidates: [PathBuf; 2] = [
        dir.join(format!("{child}.rs")),
        dir.join(child).join("mod.rs"),
    ];
    candidates
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .find(|p| files(p).is_some())
}

/// The re-exports of the module in `file` that reach an item through public modules only, so that
/// the item has a second public path; each as written, e.g. `coarse::CoarseMessage`.
fn second_paths(file: &str, files: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let source = files(file).unwrap_or_else(|| panic!("{file} exists"));
    let module = parse(&source);
    let mut found = Vec::new();
    for path in &module.reexports {
        let segments: Vec<&str> = path
            .iter()
            .map(String::as_str)
            .skip_while(|s| *s == "self")
            .collect();
        // Paths that start at a child of this module, or at the crate's root (`crate::`, read
        // from `src/lib.rs`); `super::` and external crates are other modules' business.
        let Some((last, modules)) = segments.split_last() else {
            continue;
        };
        let (start, children, modules) = match modules.split_first() {
            Some((&"crate", rest)) if !rest.is_empty() => {
                let Some(root) = files("src/lib.rs") else {
                    continue;
                };
                ("src/lib.rs".to_string(), parse(&root).children, rest)
            }
            Some((first, _)) if module.children.contains_key(*first) => {
                (file.to_string(), module.children.clone(), modules)
            }
            _ => continue,
        };
        // Walks down the modules: the path is a second one if every module on it is public.
        let (mut at, mut current, mut all_public) = (start, children, true);
        for (i, m) in modules.iter().enumerate() {
            if current.get(*m) != Some(&true) {
                all_public = false;
                break;
            }
            if i + 1 < modules.len() {
                let Some(next) = child_file(&at, m, files) else {
                    break; // an inline public module: counted as public all the way down
                };
                current = parse(&files(&next).expect("listed file")).children;
                at = next;
            }
        }
        if all_public {
            found.push(format!("{}::{last}", modules.join("::")));
        }
    }
    found
}

fn read_repo(path: &str) -> Option<String> {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).ok()
}

#[test]
fn every_reexported_item_lives_in_a_private_module() {
    let mut failures = Vec::new();
    for file in CHECKED {
        for path in second_paths(file, &read_repo) {
            if MEANT.contains(&(file, path.as_str())) {
                continue;
            }
            failures.push(format!(
                "{file}: `pub use {path}` re-exports from a public module"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "items with two public paths (make the module private, or stop re-exporting):\n{}",
        failures.join("\n")
    );
}

#[test]
fn checked_module_files_declare_modules_and_reexports() {
    // Guards the parser itself: each checked file is read and the layer roots do re-export, so an
    // empty parse cannot pass the test above by finding nothing.
    for file in CHECKED {
        assert!(
            read_repo(file).is_some(),
            "{file} is missing: update CHECKED"
        );
    }
    let messages = parse(&read_repo("src/messages/mod.rs").expect("messages"));
    assert_eq!(messages.children.get("deploy"), Some(&true));
    assert_eq!(messages.children.get("common"), Some(&false));
    assert!(messages
        .reexports
        .iter()
        .any(|p| p.last().map(String::as_str) == Some("DeployMessage")));
}

/// The layout `messages` had before issue 12: public implementation modules whose items were also
/// re-exported, and the family enums at two paths each.
#[test]
fn a_reexport_from_a_public_module_is_found() {
    let old_mod = "\
//! Layer 1.
#[macro_use]
mod family;
pub mod coarse;
pub mod common;
pub mod deploy;
mod set;

pub use coarse::CoarseMessage;
pub use common::*;
pub use deploy::{
    DeployMessage, // the family
};
pub use family::{Family, MessageBody};
";
    let files = |path: &str| -> Option<String> {
        match path {
            "m/mod.rs" => Some(old_mod.to_string()),
            "m/coarse/mod.rs" | "m/deploy/mod.rs" => {
                Some("mod worker;\npub use worker::*;\n".into())
            }
            "m/common.rs" | "m/family.rs" | "m/set.rs" => Some(String::new()),
            _ => None,
        }
    };
    assert_eq!(
        second_paths("m/mod.rs", &files),
        [
            "coarse::CoarseMessage",
            "common::*",
            "deploy::DeployMessage"
        ]
    );

    // Through the crate's root as well: a type of a public module re-exported elsewhere.
    let files = |path: &str| -> Option<String> {
        match path {
            "src/lib.rs" => Some("pub mod node;\npub mod reference;\n".into()),
            "src/node/mod.rs" => Some("pub mod master;\n".into()),
            "src/node/master.rs" => Some("pub struct StoredApp;\n".into()),
            "src/reference/mod.rs" => Some("pub use crate::node::master::StoredApp;\n".into()),
            _ => None,
        }
    };
    assert_eq!(
        second_paths("src/reference/mod.rs", &files),
        ["node::master::StoredApp"]
    );

    // A family enum defined in a private module of a public namespace has one public path.
    let new_mod = "pub mod deploy;\npub use deploy::family::DeployMessage;\n";
    let files = |path: &str| -> Option<String> {
        match path {
            "m/mod.rs" => Some(new_mod.to_string()),
            "m/deploy/mod.rs" => Some("pub(in crate::m) mod family {\n}\n".into()),
            _ => None,
        }
    };
    assert!(second_paths("m/mod.rs", &files).is_empty());
}
