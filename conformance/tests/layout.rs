//! The suite's shape, kept by tests: a case file (under `src/cases/`, but for the catalogue
//! `cases/mod.rs` that registers them) imports only the kit and the harness, never another
//! case file and never a fault; the kit (`src/kit/`) imports no case and no fault; no line
//! under `src/cases/` is over 120 characters; no file of `src/` imports itself through others
//! (no import cycle). Each rule reads the source as text, the
//! `crate::…` and `super::…` paths of its code (comments left out).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a case or the kit may import besides the kit: the harness (`src/harness/`: verdicts, the
/// case, the run's settings and context, connections and their wire logs, the endpoint's health,
/// the processes the suite starts, Spark's wire, MessagePack and canonical maps).
const HARNESS: [&str; 1] = ["harness"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, by its path relative to `src/`, with its text.
fn files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("reads the source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src()).expect("under src/");
                let text = std::fs::read_to_string(&path).expect("reads a source file");
                out.insert(rel.to_string_lossy().replace('\\', "/"), text);
            }
        }
    }
    out
}

/// The code of `text` without its comments (line comments and doc comments; the suite writes
/// no block comments), so that a path named in prose is no import.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.trim_start().starts_with("//") {
            true => "",
            false => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment after each `crate::` in `code`: the top module each path names.
fn crate_modules(code: &str) -> Vec<String> {
    code.match_indices("crate::")
        .filter(|(i, _)| {
            let before = code[..*i].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
        .map(|(i, m)| {
            code[i + m.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// A case file reaches nothing with `super::` (not its folder's other files, which are cases;
/// not its folder's `mod.rs`), but inside its `mod tests`, where `super::` is the file itself.
fn super_stays_home(file: &str, code: &str) -> Result<(), String> {
    let tests_at = code.find("mod tests").unwrap_or(usize::MAX);
    match code.match_indices("super::").any(|(i, _)| i < tests_at) {
        true => Err(format!("{file} reaches out of itself with super::")),
        false => Ok(()),
    }
}

#[test]
fn a_case_file_imports_only_the_kit_and_the_harness() {
    let mut wrong = Vec::new();
    for (file, text) in files(&src().join("cases")) {
        if file == "cases/mod.rs" {
            continue;
        }
        let code = code(&text);
        for m in crate_modules(&code) {
            if m != "kit" && !HARNESS.contains(&m.as_str()) {
                wrong.push(format!("{file} imports crate::{m}"));
            }
        }
        if let Err(e) = super_stays_home(&file, &code) {
            wrong.push(e);
        }
    }
    assert!(
        wrong.is_empty(),
        "a case file imports only the kit and the harness (move what it shares into src/kit/):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_kit_imports_no_case_and_no_fault() {
    let mut wrong = Vec::new();
    let kit = files(&src().join("kit"));
    assert!(kit.len() >= 5, "the kit is src/kit/: {kit:?}");
    for (file, text) in kit {
        let code = code(&text);
        for m in crate_modules(&code) {
            if m != "kit" && !HARNESS.contains(&m.as_str()) {
                wrong.push(format!("{file} imports crate::{m}"));
            }
        }
        if code.contains("super::super") {
            wrong.push(format!("{file} reaches out of the kit with super::"));
        }
    }
    assert!(
        wrong.is_empty(),
        "the kit imports no case and no fault:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_line_of_a_case_file_is_over_120_characters() {
    let mut long = Vec::new();
    for (file, text) in files(&src().join("cases")) {
        for (n, line) in text.lines().enumerate() {
            let width = line.chars().count();
            if width > 120 {
                long.push(format!("{file}:{}: {width} characters", n + 1));
            }
        }
    }
    assert!(
        long.is_empty(),
        "{} lines of case files are over 120 characters:\n{}",
        long.len(),
        long.join("\n")
    );
}

#[test]
fn the_rules_see_what_they_forbid() {
    let code = code(
        "use crate::kit::master::open;\n// crate::fault in prose\nuse crate::cases::spec::s7_1::highest;\n\
         let x = my_crate::fault::Fault;",
    );
    assert_eq!(crate_modules(&code), ["kit", "cases"]);
    assert!(super_stays_home("cases/spec/s8_1.rs", "mod closes { use super::*; }").is_err());
    assert!(super_stays_home("cases/spec/s14_2.rs", "use super::s7_1;").is_err());
    assert!(super_stays_home("cases/spec/mod.rs", "use super::rules;").is_err());
    assert!(super_stays_home("cases/spec/s8_1.rs", "mod tests { use super::*; }").is_ok());
}

/// The module a file under `src/` is (`cases/spec/s8_1.rs` is `cases::spec::s8_1`, a folder's
/// `mod.rs` the folder); `lib.rs` and `main.rs` are the crate's roots, no module.
fn module_of(file: &str) -> Option<String> {
    let path = file.strip_suffix(".rs")?;
    let path = path.strip_suffix("/mod").unwrap_or(path);
    (!matches!(path, "lib" | "main")).then(|| path.replace('/', "::"))
}

/// The modules each module of `src/` names by a `crate::` path in its code (outside its `mod
/// tests`): for each path, the longest of its prefixes that is a module.
fn module_graph() -> BTreeMap<String, Vec<String>> {
    let all = files(&src());
    let modules: BTreeMap<String, String> = all
        .iter()
        .filter_map(|(file, text)| Some((module_of(file)?, text.clone())))
        .collect();
    let mut graph = BTreeMap::new();
    for (module, text) in &modules {
        let code = code(text);
        let code = &code[..code.find("mod tests").unwrap_or(code.len())];
        let mut deps: Vec<String> = Vec::new();
        for (i, m) in code.match_indices("crate::") {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[i + m.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
            let named = (1..=parts.len())
                .rev()
                .map(|k| parts[..k].join("::"))
                .find(|candidate| modules.contains_key(candidate));
            if let Some(dep) = named.filter(|d| d != module && !deps.contains(d)) {
                deps.push(dep);
            }
        }
        graph.insert(module.clone(), deps);
    }
    graph
}

/// A cycle of `graph`, as the modules along it, if it has one.
fn a_cycle(graph: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    // 0: not seen, 1: on the current path, 2: done.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, Vec<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for dep in graph.get(m).into_iter().flatten() {
            match state.get(dep.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = path.iter().position(|p| p == dep).unwrap_or(0);
                    let mut cycle = path[from..].to_vec();
                    cycle.push(dep.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(cycle) = visit(dep, graph, state, path) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if state.get(m.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(cycle) = visit(m, graph, &mut state, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[test]
fn no_module_of_the_suite_imports_itself_through_others() {
    let graph = module_graph();
    assert!(
        graph.contains_key("cases::spec::s8_1") && graph.contains_key("kit::master"),
        "the graph has every file's module: {:?}",
        graph.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        a_cycle(&graph),
        None,
        "an import cycle between the suite's files"
    );
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let graph: BTreeMap<String, Vec<String>> = [
        ("case", vec!["env"]),
        ("env", vec!["peer"]),
        ("peer", vec!["case"]),
        ("kit", vec!["case"]),
    ]
    .into_iter()
    .map(|(m, d)| (m.to_string(), d.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        a_cycle(&graph),
        Some(vec![
            "case".into(),
            "env".into(),
            "peer".into(),
            "case".into()
        ])
    );
    let acyclic: BTreeMap<String, Vec<String>> = [
        ("kit".to_string(), vec!["case".to_string()]),
        ("case".to_string(), vec![]),
    ]
    .into_iter()
    .collect();
    assert_eq!(a_cycle(&acyclic), None);
    assert_eq!(
        module_of("cases/spec/mod.rs").as_deref(),
        Some("cases::spec")
    );
    assert_eq!(module_of("lib.rs"), None);
}
