//! The class tables of every Spark release sparkwire knows (`protocol/spark/releases.json` and the
//! `protocol/spark/classes-*.json` it names, made by `scripts/spark/classes.sh` from each release's
//! own jars): the index is whole and its files are all used, equal tables share one file, and
//! `protocol/spark/changes.md` (for each message class, the releases at which its descriptor
//! changed) is exactly what the tables say. A few facts measured on real Spark pin the tables down.
//!
//! Plain Rust over the JSON files: nothing of sparkwire is used.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const BLESS: &str = "SPARKWIRE_BLESS=1 cargo test --test spark_release_tables";

/// The tables the crate loads by name (src/spark/classes.rs) keep their names.
const PINNED: [&str; 2] = ["3.0.3", "4.0.1"];

#[derive(Clone, PartialEq, Eq, Debug)]
struct Field {
    code: String,
    name: String,
    class: Option<String>,
}

#[derive(Clone, PartialEq, Eq, Debug)]
struct Desc {
    suid: String,
    flags: u64,
    fields: Vec<Field>,
    sup: Option<String>,
}

#[derive(Debug)]
struct Release {
    release: String,
    line: String,
    table: String,
    scala: String,
    scala_library: String,
    java: String,
}

struct TableFile {
    spark: String,
    classes: BTreeMap<String, Desc>,
}

struct Tables {
    releases: Vec<Release>,
    files: BTreeMap<String, TableFile>,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/spark")
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn string(v: &Value, key: &str, what: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{what}: no string {key:?}"))
        .to_string()
}

fn parse_table(path: &Path) -> TableFile {
    let v: Value =
        serde_json::from_str(&text(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let what = path.display().to_string();
    let mut classes = BTreeMap::new();
    for c in v["classes"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no classes"))
    {
        let name = string(c, "name", &what);
        let fields = c["fields"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: {name}: no fields"))
            .iter()
            .map(|f| Field {
                code: string(f, "type", &name),
                name: string(f, "name", &name),
                class: f.get("class").and_then(Value::as_str).map(str::to_string),
            })
            .collect();
        let desc = Desc {
            suid: string(c, "suid", &name),
            flags: c["flags"]
                .as_u64()
                .unwrap_or_else(|| panic!("{what}: {name}: flags")),
            fields,
            sup: c["super"].as_str().map(str::to_string),
        };
        assert!(
            classes.insert(name.clone(), desc).is_none(),
            "{what}: {name} twice"
        );
    }
    TableFile {
        spark: string(&v, "spark", &what),
        classes,
    }
}

fn load() -> Tables {
    let index: Value = serde_json::from_str(&text(&dir().join("releases.json")))
        .expect("protocol/spark/releases.json is JSON");
    let mut releases = Vec::new();
    for e in index["releases"]
        .as_array()
        .expect("releases.json: a releases array")
    {
        releases.push(Release {
            release: string(e, "release", "releases.json"),
            line: string(e, "line", "releases.json"),
            table: string(e, "table", "releases.json"),
            scala: string(e, "scala", "releases.json"),
            scala_library: string(e, "scala_library", "releases.json"),
            java: string(e, "java", "releases.json"),
        });
    }
    let mut files = BTreeMap::new();
    for r in &releases {
        if !files.contains_key(&r.table) {
            let path = dir().join(&r.table);
            assert!(
                path.is_file(),
                "release {} names {}, which does not exist",
                r.release,
                r.table
            );
            files.insert(r.table.clone(), parse_table(&path));
        }
    }
    Tables { releases, files }
}

/// "3.5.9" -> (3, 5, 9)
fn version_key(r: &str) -> Vec<u32> {
    r.split('.')
        .map(|x| x.parse().unwrap_or_else(|_| panic!("release {r:?}")))
        .collect()
}

impl Tables {
    fn desc(&self, release: &str, class: &str) -> Option<&Desc> {
        let r = self
            .releases
            .iter()
            .find(|r| r.release == release)
            .unwrap_or_else(|| panic!("no release {release} in the index"));
        self.files[&r.table].classes.get(class)
    }

    fn field<'a>(&'a self, release: &str, class: &str, field: &str) -> Option<&'a Field> {
        self.desc(release, class)
            .unwrap_or_else(|| panic!("{class} is not in {release}'s table"))
            .fields
            .iter()
            .find(|f| f.name == field)
    }

    /// The classes changes.md follows: Spark's deploy and coarse-grained cluster messages, the
    /// block manager's messages, everything in `rpc/` and `resource/`, the classes directly in
    /// `deploy/` (ApplicationDescription, Command, ...), Scala's library classes (collections,
    /// Option, tuples, enumerations), and whatever a field of one of them is declared with or
    /// derives from, in any release.
    fn message_classes(&self) -> BTreeSet<String> {
        let root = |n: &str| {
            n.starts_with("org.apache.spark.deploy.DeployMessages$")
                || n.starts_with("org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$")
                || n.starts_with("org.apache.spark.storage.BlockManagerMessages$")
                || n.starts_with("org.apache.spark.rpc.")
                || n.starts_with("org.apache.spark.resource.")
                || n.starts_with("scala.")
                || n.strip_prefix("org.apache.spark.deploy.")
                    .is_some_and(|rest| !rest.contains('.'))
        };
        let mut out = BTreeSet::new();
        for t in self.files.values() {
            let mut todo: Vec<String> = t.classes.keys().filter(|n| root(n)).cloned().collect();
            while let Some(n) = todo.pop() {
                let Some(d) = t.classes.get(&n) else { continue };
                if !out.insert(n) {
                    continue;
                }
                todo.extend(d.sup.iter().cloned());
                for f in &d.fields {
                    if let Some(c) = &f.class {
                        if let Some(inner) = c.strip_prefix('L').and_then(|c| c.strip_suffix(';')) {
                            todo.push(inner.replace('/', "."));
                        } else if c.starts_with('[') {
                            todo.push(c.replace('/', "."));
                        }
                    }
                }
            }
        }
        out
    }
}

fn short(class: &str) -> String {
    class
        .strip_prefix("org.apache.spark.")
        .unwrap_or(class)
        .to_string()
}

fn field_type(f: &Field) -> String {
    match f.code.as_str() {
        "B" => "byte".into(),
        "C" => "char".into(),
        "D" => "double".into(),
        "F" => "float".into(),
        "I" => "int".into(),
        "J" => "long".into(),
        "S" => "short".into(),
        "Z" => "boolean".into(),
        _ => {
            let c = f.class.as_deref().unwrap_or("?");
            match c.strip_prefix('L').and_then(|c| c.strip_suffix(';')) {
                Some(inner) => short(&inner.replace('/', ".")),
                None => c.to_string(),
            }
        }
    }
}

fn show_field(f: &Field) -> String {
    format!("`{}: {}`", f.name, field_type(f))
}

fn show_desc(d: &Desc) -> String {
    let fields = if d.fields.is_empty() {
        "no fields".to_string()
    } else {
        d.fields
            .iter()
            .map(show_field)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sup = d
        .sup
        .as_deref()
        .map_or(String::new(), |s| format!("; super `{}`", short(s)));
    format!("suid {}, flags 0x{:02x}; {fields}{sup}", d.suid, d.flags)
}

/// What differs from `old` to `new`, in words.
fn diff(old: &Desc, new: &Desc) -> String {
    let mut parts = Vec::new();
    if old.suid != new.suid {
        parts.push(format!("suid {} → {}", old.suid, new.suid));
    }
    if old.flags != new.flags {
        parts.push(format!("flags 0x{:02x} → 0x{:02x}", old.flags, new.flags));
    }
    for f in &new.fields {
        match old.fields.iter().find(|o| o.name == f.name) {
            None => parts.push(format!("+ {}", show_field(f))),
            Some(o) if o != f => parts.push(format!(
                "`{}`: {} → {}",
                f.name,
                field_type(o),
                field_type(f)
            )),
            Some(_) => {}
        }
    }
    for o in &old.fields {
        if !new.fields.iter().any(|f| f.name == o.name) {
            parts.push(format!("− {}", show_field(o)));
        }
    }
    if old.sup != new.sup {
        let s = |x: &Option<String>| x.as_deref().map_or("none".to_string(), short);
        parts.push(format!("super {} → {}", s(&old.sup), s(&new.sup)));
    }
    if parts.is_empty() {
        parts.push("field order".to_string());
    }
    parts.join("; ")
}

/// "3.0.0–3.0.3, 3.1.1" for the releases (indices into the index order) in `present`.
fn ranges(t: &Tables, present: &[bool]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < present.len() {
        if present[i] {
            let start = i;
            while i + 1 < present.len() && present[i + 1] {
                i += 1;
            }
            let (a, b) = (&t.releases[start].release, &t.releases[i].release);
            out.push(if a == b {
                a.clone()
            } else {
                format!("{a}–{b}")
            });
        }
        i += 1;
    }
    out.join(", ")
}

/// protocol/spark/changes.md, from the tables.
fn render_changes(t: &Tables) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Spark's message classes, release by release\n");
    let _ = writeln!(
        s,
        "Generated from `protocol/spark/releases.json` and the class tables it names (made by \
         `bash scripts/spark/classes.sh --all` from each release's jars) by\n`{BLESS}`; \
         `tests/spark_release_tables.rs` fails when this file differs from what the tables say. \
         Do not edit it by hand.\n"
    );
    let _ = writeln!(
        s,
        "Releases are taken in version order (not in order of publication): a change \"at\" a \
         release compares its descriptor with the one of the release listed before it, the \
         previous patch release or the last one of the previous line. A descriptor is the \
         serialVersionUID (suid), the `classDescFlags` byte, the serializable fields and the \
         serializable super class. Field types are Java's, with `org.apache.spark.` left out.\n"
    );
    let _ = writeln!(s, "## Releases\n");
    let _ = writeln!(
        s,
        "| release | line | Scala | Java that dumped it | table | classes |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for r in &t.releases {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | `{}` | {} |",
            r.release,
            r.line,
            r.scala_library,
            r.java,
            r.table,
            t.files[&r.table].classes.len()
        );
    }
    let mut classes: Vec<String> = t.message_classes().into_iter().collect();
    // Spark's messages first, then the other Spark classes, then Java's and Scala's.
    let group = |c: &str| {
        if c.contains("Messages$") && c.starts_with("org.apache.spark.") {
            0
        } else if c.starts_with("org.apache.spark.") {
            1
        } else {
            2
        }
    };
    classes.sort_by(|a, b| (group(a), a).cmp(&(group(b), b)));
    let _ = writeln!(s, "\n## What changed at each release\n");
    let _ = writeln!(
        s,
        "For the message classes (`DeployMessages$*`, `CoarseGrainedClusterMessages$*`, \
         `BlockManagerMessages$*`, companion objects left out) and the classes of `rpc/` and the \
         ones directly in `deploy/`: those that appear, that are gone, whose fields (or flags or \
         super class) changed, and how many changed their serialVersionUID alone; then how many of \
         all the classes followed below changed.\n"
    );
    let _ = writeln!(
        s,
        "| release | new | gone | fields changed | suid alone | all followed |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    let list = |v: &[String]| {
        if v.is_empty() {
            "—".to_string()
        } else {
            v.join(", ")
        }
    };
    for (i, r) in t.releases.iter().enumerate().skip(1) {
        let (before, now) = (&t.files[&t.releases[i - 1].table], &t.files[&r.table]);
        let (mut new, mut gone, mut fields, mut suid, mut all) = (vec![], vec![], vec![], 0, 0);
        for c in &classes {
            let (a, b) = (before.classes.get(c), now.classes.get(c));
            if a == b {
                continue;
            }
            all += 1;
            let spark = group(c) == 0
                || c.starts_with("org.apache.spark.rpc.")
                || c.strip_prefix("org.apache.spark.deploy.")
                    .is_some_and(|rest| !rest.contains('.'));
            if !spark || c.ends_with('$') {
                continue;
            }
            let n = short(c)
                .rsplit_once('.')
                .map_or(short(c), |(_, n)| n.to_string());
            match (a, b) {
                (None, _) => new.push(n),
                (_, None) => gone.push(n),
                (Some(a), Some(b))
                    if a.fields == b.fields && a.flags == b.flags && a.sup == b.sup =>
                {
                    suid += 1
                }
                (Some(a), Some(b)) => fields.push(format!(
                    "{n} ({})",
                    diff(a, b)
                        .split("; ")
                        .filter(|p| !p.starts_with("suid"))
                        .collect::<Vec<_>>()
                        .join("; ")
                )),
            }
        }
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {suid} | {all} |",
            r.release,
            list(&new),
            list(&gone),
            list(&fields)
        );
    }
    let mut changed = Vec::new();
    let mut unchanged = Vec::new();
    for c in &classes {
        let descs: Vec<Option<&Desc>> = t
            .releases
            .iter()
            .map(|r| t.files[&r.table].classes.get(c))
            .collect();
        let mut events = Vec::new();
        let mut prev: Option<&Desc> = None;
        let mut seen = false;
        for (r, d) in t.releases.iter().zip(&descs) {
            match (prev, d) {
                (None, Some(d)) => events.push(format!(
                    "- **{}**: {} {}",
                    r.release,
                    if seen { "back:" } else { "first:" },
                    show_desc(d)
                )),
                (Some(_), None) => events.push(format!("- **{}**: gone", r.release)),
                (Some(p), Some(d)) if p != *d => {
                    events.push(format!("- **{}**: {}", r.release, diff(p, d)))
                }
                _ => {}
            }
            seen |= d.is_some();
            prev = *d;
        }
        let present: Vec<bool> = descs.iter().map(Option::is_some).collect();
        if events.len() > 1 {
            changed.push((c, ranges(t, &present), events));
        } else {
            unchanged.push((c, ranges(t, &present)));
        }
    }
    let _ = writeln!(
        s,
        "\n## Classes whose descriptor changed ({} of {})\n",
        changed.len(),
        classes.len()
    );
    let _ = writeln!(
        s,
        "The classes followed: Spark's `DeployMessages$*`, `CoarseGrainedClusterMessages$*` and \
         `BlockManagerMessages$*`, everything in `rpc/` and `resource/`, the classes directly in \
         `deploy/`, Scala's library classes of the tables, and every class a field of one of \
         them is declared with or that one of them derives from. The first line of a class gives \
         its descriptor where it first appears.\n"
    );
    for (c, present, events) in &changed {
        let _ = writeln!(s, "### `{}`\n", short(c));
        let _ = writeln!(s, "In {present}.\n");
        for e in events {
            let _ = writeln!(s, "{e}");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "## Classes with one descriptor in every release that has them ({})\n",
        unchanged.len()
    );
    let _ = writeln!(s, "| class | in |");
    let _ = writeln!(s, "|---|---|");
    for (c, present) in &unchanged {
        let _ = writeln!(s, "| `{}` | {present} |", short(c));
    }
    s
}

#[test]
fn changes_md_is_what_the_tables_say() {
    let t = load();
    let want = render_changes(&t);
    let path = dir().join("changes.md");
    if std::env::var_os("SPARKWIRE_BLESS").is_some() {
        std::fs::write(&path, &want).expect("write protocol/spark/changes.md");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let line = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(have.lines().count().min(want.lines().count()));
        panic!(
            "protocol/spark/changes.md differs from what the tables say (first at line {}); \
             regenerate it with `{BLESS}`",
            line + 1
        );
    }
}

#[test]
fn every_index_entry_names_a_table_file_and_every_table_file_is_named() {
    let t = load();
    assert!(!t.releases.is_empty(), "releases.json lists no release");
    let named: BTreeSet<&str> = t.releases.iter().map(|r| r.table.as_str()).collect();
    let mut on_disk = BTreeSet::new();
    for e in std::fs::read_dir(dir()).expect("protocol/spark/") {
        let name = e.expect("a directory entry").file_name();
        let name = name.to_string_lossy().to_string();
        if name.starts_with("classes-") && name.ends_with(".json") {
            on_disk.insert(name);
        }
    }
    for n in &named {
        assert!(on_disk.contains(*n), "{n} is named by the index but absent");
    }
    for f in &on_disk {
        assert!(
            named.contains(f.as_str()),
            "{f} is in protocol/spark/ but no release of releases.json uses it"
        );
    }
    let mut seen = BTreeSet::new();
    for r in &t.releases {
        assert!(seen.insert(&r.release), "{} twice in the index", r.release);
        assert_eq!(
            r.line,
            r.release.rsplit_once('.').expect("a patch release").0,
            "{}'s line",
            r.release
        );
        assert!(
            r.scala_library.starts_with(&format!("{}.", r.scala)),
            "{}: scala {} vs scala-library {}",
            r.release,
            r.scala,
            r.scala_library
        );
    }
    // Every release scripts/spark/releases.txt knows has its table, and no other (the packaged
    // crate carries no scripts/: there the index alone is checked).
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/spark/releases.txt");
    let known: Vec<String> = if list.exists() {
        text(&list)
    } else {
        t.releases
            .iter()
            .map(|r| format!("{}\n", r.release))
            .collect()
    }
    .lines()
    .filter_map(|l| l.split('#').next()?.split_whitespace().next())
    .map(str::to_string)
    .collect();
    let indexed: Vec<String> = t.releases.iter().map(|r| r.release.clone()).collect();
    assert_eq!(
        indexed, known,
        "releases.json lists exactly the releases of releases.txt"
    );
    let keys: Vec<Vec<u32>> = t.releases.iter().map(|r| version_key(&r.release)).collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "the index is in version order"
    );
}

#[test]
fn equal_tables_share_one_file_named_after_its_oldest_release() {
    let t = load();
    let files: Vec<(&String, &TableFile)> = t.files.iter().collect();
    for (i, (a, ta)) in files.iter().enumerate() {
        for (b, tb) in &files[i + 1..] {
            assert!(
                ta.classes != tb.classes,
                "{a} and {b} hold the same descriptors: they should be one file"
            );
        }
    }
    for (name, file) in &t.files {
        let users: Vec<&Release> = t.releases.iter().filter(|r| &r.table == name).collect();
        let owner = users
            .iter()
            .find(|r| PINNED.contains(&r.release.as_str()))
            .unwrap_or(&users[0]);
        assert_eq!(
            name,
            &format!("classes-{}.json", owner.release),
            "a table is named after the oldest release that uses it (or the one the crate loads)"
        );
        assert_eq!(
            file.spark, owner.release,
            "{name}'s \"spark\" header names its release"
        );
        // One table is one Scala: 2.12 and 2.13 write their collections differently.
        assert!(
            users.iter().all(|r| r.scala == owner.scala),
            "{name} is used by releases of different Scala versions"
        );
    }
}

#[test]
fn scala_2_12_for_spark_3_and_2_13_for_spark_4_as_their_collections_show() {
    let t = load();
    for r in &t.releases {
        let want = if r.release.starts_with("3.") {
            "2.12"
        } else {
            "2.13"
        };
        assert_eq!(r.scala, want, "{}'s Scala", r.release);
        // Scala 2.13 writes an `object` through ModuleSerializationProxy and a List through
        // DefaultSerializationProxy; Scala 2.12 has List$SerializationProxy instead.
        let proxy = t
            .desc(&r.release, "scala.runtime.ModuleSerializationProxy")
            .is_some();
        let list_proxy = t
            .desc(
                &r.release,
                "scala.collection.immutable.List$SerializationProxy",
            )
            .is_some();
        assert_eq!(
            proxy,
            want == "2.13",
            "{}: ModuleSerializationProxy",
            r.release
        );
        assert_eq!(
            list_proxy,
            want == "2.12",
            "{}: List$SerializationProxy",
            r.release
        );
    }
}

fn has(t: &Tables, release: &str) -> bool {
    t.releases.iter().any(|r| r.release == release)
}

#[test]
fn rpc_endpoint_ref_has_the_serial_version_uids_real_spark_reported() {
    // The serialVersionUIDs real Spark printed in its InvalidClassException (issue 37): a 3.0.3,
    // 3.5.9, 4.0.1 and 4.3.0 worker against a master of another release.
    let t = load();
    let measured = [
        ("3.0.3", "-3992716321891270988"),
        ("3.5.9", "-2184441956866814275"),
        ("4.0.1", "3898290494905438830"),
        ("4.2.1", "-6062078299962416402"),
        ("4.3.0", "-6062078299962416402"),
    ];
    let mut checked = 0;
    for (release, suid) in measured {
        if has(&t, release) {
            let d = t
                .desc(release, "org.apache.spark.rpc.RpcEndpointRef")
                .expect("RpcEndpointRef in every table");
            assert_eq!(d.suid, suid, "RpcEndpointRef's suid in {release}");
            checked += 1;
        }
    }
    assert!(
        checked >= 2,
        "the tables of the measured releases are in the index"
    );
    // Computed, not declared: it changes with RpcEndpointRef's methods. Grouped by their newest
    // releases, the lines share it thus.
    let mut newest: BTreeMap<&str, &str> = BTreeMap::new();
    for r in &t.releases {
        newest.insert(&r.line, &r.release);
    }
    let mut by_suid: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (line, release) in &newest {
        let d = t
            .desc(release, "org.apache.spark.rpc.RpcEndpointRef")
            .expect("RpcEndpointRef in every table");
        by_suid.entry(d.suid.clone()).or_default().push(line);
    }
    let mut groups: Vec<Vec<&str>> = by_suid.into_values().collect();
    groups.sort();
    assert_eq!(
        groups,
        vec![
            vec!["3.0", "3.1", "3.2", "3.3"],
            vec!["3.4", "3.5"],
            vec!["4.0"],
            vec!["4.1", "4.2", "4.3"],
        ],
        "the release lines sharing RpcEndpointRef's serialVersionUID"
    );
}

fn at_least(release: &str, than: &str) -> bool {
    version_key(release) >= version_key(than)
}

#[test]
fn status_update_gains_task_cpus_in_3_4_which_becomes_a_big_decimal_in_4_3() {
    let t = load();
    let class = "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$StatusUpdate";
    for r in &t.releases {
        let f = t.field(&r.release, class, "taskCpus");
        let want = if at_least(&r.release, "4.3.0") {
            Some(("L", "Lscala/math/BigDecimal;"))
        } else if at_least(&r.release, "3.4.0") {
            Some(("I", ""))
        } else {
            None
        };
        let got = f.map(|f| (f.code.as_str(), f.class.as_deref().unwrap_or("")));
        assert_eq!(got, want, "StatusUpdate.taskCpus in {}", r.release);
    }
    let changes = render_changes(&t);
    assert!(
        changes.contains("`taskCpus`: int → scala.math.BigDecimal"),
        "changes.md says taskCpus became a BigDecimal"
    );
}

#[test]
fn launch_executor_gains_rp_id_in_3_4() {
    let t = load();
    let class = "org.apache.spark.deploy.DeployMessages$LaunchExecutor";
    for r in &t.releases {
        let f = t.field(&r.release, class, "rpId").map(|f| f.code.as_str());
        let want = at_least(&r.release, "3.4.0").then_some("I");
        assert_eq!(f, want, "LaunchExecutor.rpId in {}", r.release);
    }
}
