//! The Spark releases whose wire sparkwire speaks, and the release of a peer told from the Java
//! streams it sends.
//!
//! Each release has a class table (`protocol/spark/classes-*.json`, dumped from that release's own
//! jars by `scripts/spark/classes.sh`); releases whose tables are equal share one file, and
//! `protocol/spark/releases.json` says which release has which. Everything that differs between
//! releases on the wire follows from the table: the serialVersionUIDs a stream must carry, the
//! fields each class has (`LaunchExecutor.rpId`, `StatusUpdate.taskCpus` and its type, an
//! `ApplicationDescription` with executor sizes or with a resource profile, …) and the Scala
//! library's forms (Scala 2.12 writes `object`s whole; Scala 2.13 through
//! `ModuleSerializationProxy`).
//!
//! A Java stream names every class it carries with its serialVersionUID. [`Detector`] reads the
//! descriptors of each stream a peer sends and keeps the releases whose tables agree with all of
//! them; the release it answers in is the newest of those (SPEC §15.1 says why that choice is
//! safe). A peer that matches no release is refused with the classes that did not match.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

use super::classes::ClassTable;
use super::serial::{Entry, Graph};
use crate::messages::Version;

/// The class tables, by file name, as the crate carries them.
const TABLES: &[(&str, &str)] = &[
    (
        "classes-3.0.0.json",
        include_str!("../../protocol/spark/classes-3.0.0.json"),
    ),
    (
        "classes-3.0.1.json",
        include_str!("../../protocol/spark/classes-3.0.1.json"),
    ),
    (
        "classes-3.0.2.json",
        include_str!("../../protocol/spark/classes-3.0.2.json"),
    ),
    (
        "classes-3.0.3.json",
        include_str!("../../protocol/spark/classes-3.0.3.json"),
    ),
    (
        "classes-3.1.1.json",
        include_str!("../../protocol/spark/classes-3.1.1.json"),
    ),
    (
        "classes-3.1.2.json",
        include_str!("../../protocol/spark/classes-3.1.2.json"),
    ),
    (
        "classes-3.1.3.json",
        include_str!("../../protocol/spark/classes-3.1.3.json"),
    ),
    (
        "classes-3.2.0.json",
        include_str!("../../protocol/spark/classes-3.2.0.json"),
    ),
    (
        "classes-3.2.1.json",
        include_str!("../../protocol/spark/classes-3.2.1.json"),
    ),
    (
        "classes-3.2.3.json",
        include_str!("../../protocol/spark/classes-3.2.3.json"),
    ),
    (
        "classes-3.2.4.json",
        include_str!("../../protocol/spark/classes-3.2.4.json"),
    ),
    (
        "classes-3.3.0.json",
        include_str!("../../protocol/spark/classes-3.3.0.json"),
    ),
    (
        "classes-3.3.1.json",
        include_str!("../../protocol/spark/classes-3.3.1.json"),
    ),
    (
        "classes-3.3.2.json",
        include_str!("../../protocol/spark/classes-3.3.2.json"),
    ),
    (
        "classes-3.3.3.json",
        include_str!("../../protocol/spark/classes-3.3.3.json"),
    ),
    (
        "classes-3.4.0.json",
        include_str!("../../protocol/spark/classes-3.4.0.json"),
    ),
    (
        "classes-3.4.3.json",
        include_str!("../../protocol/spark/classes-3.4.3.json"),
    ),
    (
        "classes-3.4.4.json",
        include_str!("../../protocol/spark/classes-3.4.4.json"),
    ),
    (
        "classes-3.5.0.json",
        include_str!("../../protocol/spark/classes-3.5.0.json"),
    ),
    (
        "classes-3.5.1.json",
        include_str!("../../protocol/spark/classes-3.5.1.json"),
    ),
    (
        "classes-3.5.2.json",
        include_str!("../../protocol/spark/classes-3.5.2.json"),
    ),
    (
        "classes-3.5.3.json",
        include_str!("../../protocol/spark/classes-3.5.3.json"),
    ),
    (
        "classes-3.5.4.json",
        include_str!("../../protocol/spark/classes-3.5.4.json"),
    ),
    (
        "classes-4.0.1.json",
        include_str!("../../protocol/spark/classes-4.0.1.json"),
    ),
    (
        "classes-4.0.5.json",
        include_str!("../../protocol/spark/classes-4.0.5.json"),
    ),
    (
        "classes-4.1.0.json",
        include_str!("../../protocol/spark/classes-4.1.0.json"),
    ),
    (
        "classes-4.1.4.json",
        include_str!("../../protocol/spark/classes-4.1.4.json"),
    ),
    (
        "classes-4.2.0.json",
        include_str!("../../protocol/spark/classes-4.2.0.json"),
    ),
    (
        "classes-4.2.1.json",
        include_str!("../../protocol/spark/classes-4.2.1.json"),
    ),
    (
        "classes-4.3.0.json",
        include_str!("../../protocol/spark/classes-4.3.0.json"),
    ),
];

/// Which release has which table.
const INDEX: &str = include_str!("../../protocol/spark/releases.json");

#[derive(Debug, Deserialize)]
struct IndexFile {
    releases: Vec<IndexEntry>,
}

#[derive(Debug, Deserialize)]
struct IndexEntry {
    release: String,
    table: String,
    scala: String,
}

/// One Spark release as sparkwire speaks it.
#[derive(Debug)]
pub struct Release {
    name: String,
    table_file: String,
    line: String,
    scala: String,
    table: &'static ClassTable,
    ordinal: usize,
}

impl PartialEq for Release {
    fn eq(&self, other: &Release) -> bool {
        self.name == other.name
    }
}

impl Eq for Release {}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

struct Registry {
    releases: Vec<Release>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        // The tables and the index are the crate's own files, checked by its tests: a table that
        // does not load is a build defect, and the release that names it is left out.
        static PARSED: OnceLock<BTreeMap<&'static str, ClassTable>> = OnceLock::new();
        let tables = PARSED.get_or_init(|| {
            TABLES
                .iter()
                .filter_map(|(file, text)| ClassTable::from_json(text).ok().map(|t| (*file, t)))
                .collect()
        });
        let index: IndexFile =
            serde_json::from_str(INDEX).unwrap_or(IndexFile { releases: vec![] });
        let mut releases: Vec<Release> = index
            .releases
            .into_iter()
            .filter_map(|e| {
                let table = tables.get(e.table.as_str())?;
                let table: &'static ClassTable = table;
                Some(Release {
                    line: line_of(&e.release),
                    table_file: e.table,
                    name: e.release,
                    scala: e.scala,
                    table,
                    ordinal: 0,
                })
            })
            .collect();
        releases.sort_by_key(|r| release_key(&r.name));
        for (i, r) in releases.iter_mut().enumerate() {
            r.ordinal = i;
        }
        Registry { releases }
    })
}

/// `3.5` of `3.5.9`.
fn line_of(release: &str) -> String {
    let mut parts = release.split('.');
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => format!("{a}.{b}"),
        _ => release.to_string(),
    }
}

/// A release's name as numbers, for ordering (`3.10.0` after `3.9.0`).
fn release_key(release: &str) -> Vec<u32> {
    release
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0))
        .collect()
}

impl Release {
    /// Every release sparkwire speaks, oldest first.
    pub fn all() -> &'static [Release] {
        &registry().releases
    }

    /// The release named `name` (`3.5.9`), or the newest of a release line (`3.5`).
    pub fn named(name: &str) -> Option<&'static Release> {
        let all = Release::all();
        all.iter()
            .find(|r| r.name == name)
            .or_else(|| all.iter().rev().find(|r| r.line == name))
    }

    /// The release whose forms protocol `version` was defined from: Spark 3.0.3 for version 1,
    /// Spark 4.0.1 for version 2.
    pub fn of(version: Version) -> &'static Release {
        let name = match version {
            Version::V1 => "3.0.3",
            Version::V2 => "4.0.1",
        };
        // Both tables are part of the crate; the registry test proves they load.
        Release::named(name).unwrap_or_else(|| &Release::all()[0])
    }

    /// The release's name (`3.5.9`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its release line (`3.5`).
    pub fn line(&self) -> &str {
        &self.line
    }

    /// The Scala version its jars were built with (`2.12`, `2.13`).
    pub fn scala(&self) -> &str {
        &self.scala
    }

    /// Whether its table file is named after it (`classes-RELEASE.json`): the first release of
    /// those that share the table, which speaks for them in vectors and captures.
    pub fn names_its_table(&self) -> bool {
        self.table_file == format!("classes-{}.json", self.name)
    }

    /// Its class table.
    pub fn table(&self) -> &'static ClassTable {
        self.table
    }

    /// Whether Scala library objects are written whole (Scala 2.12), not through Scala 2.13's
    /// `ModuleSerializationProxy`.
    pub fn scala_212(&self) -> bool {
        self.table.writes_modules_whole()
    }

    /// Whether `class` has a serializable field `field` in this release.
    pub fn has_field(&self, class: &str, field: &str) -> bool {
        self.field_type(class, field).is_some()
    }

    /// The JVM type of `class`'s field `field` in this release (`I`, `Ljava/lang/String;`).
    pub fn field_type(&self, class: &str, field: &str) -> Option<String> {
        let c = self.table.get(class)?;
        let f = c.fields.iter().find(|f| f.name == field)?;
        Some(f.class.clone().unwrap_or_else(|| f.code.clone()))
    }

    /// The sparkwire protocol version this release's messages map to: version 1 while a
    /// `LaunchExecutor` carries no resource profile id (Spark 3.0), version 2 from there on
    /// (SPEC §15's table).
    pub fn version(&self) -> Version {
        if self.has_field(
            "org.apache.spark.deploy.DeployMessages$LaunchExecutor",
            "rpId",
        ) {
            Version::V2
        } else {
            Version::V1
        }
    }

    /// Whether peers of the two releases can share executors: an executor launched by a worker
    /// of one release speaks Java serialization to a driver of the other directly, so their
    /// tables must be the same.
    pub fn compatible(&self, other: &Release) -> bool {
        std::ptr::eq(self.table, other.table)
    }

    /// Whether the releases named `a` and `b` are [`compatible`](Release::compatible); a name
    /// sparkwire does not know is compatible only with the same name. The rule a master gives
    /// its core for placing executors (`node::master::Config::release_compatible`, SPEC §15.5).
    pub fn compatible_names(a: &str, b: &str) -> bool {
        match (Release::exactly(a), Release::exactly(b)) {
            (Some(x), Some(y)) => x.compatible(y),
            _ => a == b,
        }
    }

    /// The release named exactly `name` (`3.5.9`; not a release line).
    fn exactly(name: &str) -> Option<&'static Release> {
        Release::all().iter().find(|r| r.name() == name)
    }

    /// Judges the class descriptors of one stream against this release's table.
    pub fn judge(&self, graph: &Graph) -> Verdict {
        let mut verdict = Verdict::default();
        for e in graph.entries() {
            let Entry::ClassDesc(d) = e else { continue };
            match self.table.get(&d.name) {
                Some(c) if c.suid.parse::<i64>().ok() == Some(d.suid) => verdict.matched += 1,
                Some(c) => verdict.mismatched.push(Mismatch {
                    class: d.name.clone(),
                    sent: d.suid,
                    known: c.suid.parse().ok(),
                }),
                None => verdict.unknown += 1,
            }
        }
        verdict
    }
}

impl From<Version> for &'static Release {
    fn from(version: Version) -> &'static Release {
        Release::of(version)
    }
}

/// One class whose descriptor a stream sent with another serialVersionUID than a release has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The class.
    pub class: String,
    /// The serialVersionUID the stream carried.
    pub sent: i64,
    /// The release's.
    pub known: Option<i64>,
}

/// How one stream's descriptors agree with one release.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Descriptors the release has with the same serialVersionUID.
    pub matched: usize,
    /// Descriptors it has with another.
    pub mismatched: Vec<Mismatch>,
    /// Descriptors of classes its table does not list (the release may have them or not).
    pub unknown: usize,
}

/// What is known of one peer's release, from the streams it has sent.
#[derive(Debug, Clone)]
pub struct Detector {
    /// Releases still consistent with every stream, oldest first.
    candidates: Vec<&'static Release>,
    /// What the peer has sent that no release has, when no release is left.
    refused: Option<Unknown>,
    /// Whether any stream was judged.
    seen: bool,
    /// Pinned by the operator (`--spark-release`): never revised.
    pinned: bool,
}

/// A peer whose streams match no release sparkwire knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the peer speaks no Spark release sparkwire knows: {}", describe(.mismatched))]
pub struct Unknown {
    /// For each class that no remaining release has with the serialVersionUID sent: the class,
    /// the serialVersionUID sent, and the releases that have that class with another.
    pub mismatched: Vec<(String, i64, Vec<String>)>,
}

fn describe(m: &[(String, i64, Vec<String>)]) -> String {
    let mut out = Vec::new();
    for (class, suid, known) in m.iter().take(4) {
        out.push(format!(
            "{class} serialVersionUID {suid} (known: {})",
            if known.is_empty() {
                "in no release".to_string()
            } else {
                known.join(", ")
            }
        ));
    }
    if m.len() > 4 {
        out.push(format!("and {} more", m.len() - 4));
    }
    out.join("; ")
}

impl Default for Detector {
    fn default() -> Self {
        Detector::new()
    }
}

impl Detector {
    /// Nothing known yet: every release is possible.
    pub fn new() -> Self {
        Detector {
            candidates: Release::all().iter().collect(),
            refused: None,
            seen: false,
            pinned: false,
        }
    }

    /// The release set by the operator, never revised from the wire.
    pub fn pinned(release: &'static Release) -> Self {
        Detector {
            candidates: vec![release],
            refused: None,
            seen: true,
            pinned: true,
        }
    }

    /// Takes one more stream the peer sent. Keeps the releases that agree with it and with every
    /// earlier one; if none of those agrees but some release agrees with this stream, the
    /// peer's release is taken from this stream alone (a peer speaks one release; the newest
    /// stream is its word). Returns the peer's named classes when no release agrees.
    pub fn observe(&mut self, graph: &Graph) -> Result<&'static Release, Unknown> {
        if self.pinned {
            return Ok(self.release());
        }
        let agree = |r: &&'static Release| r.judge(graph).mismatched.is_empty();
        let narrowed: Vec<&'static Release> =
            self.candidates.iter().copied().filter(agree).collect();
        if !narrowed.is_empty() {
            self.candidates = narrowed;
            self.seen = true;
            self.refused = None;
            return Ok(self.release());
        }
        let fresh: Vec<&'static Release> = Release::all().iter().filter(agree).collect();
        if !fresh.is_empty() {
            // Earlier streams pointed elsewhere; this one is the peer's word now.
            self.candidates = fresh;
            self.seen = true;
            self.refused = None;
            return Ok(self.release());
        }
        let unknown = unknown_of(graph);
        self.refused = Some(unknown.clone());
        Err(unknown)
    }

    /// The release to answer in: the newest still consistent with what the peer sent (before
    /// any stream: the newest sparkwire knows).
    pub fn release(&self) -> &'static Release {
        self.candidates
            .last()
            .copied()
            .unwrap_or_else(|| Release::of(Version::V2))
    }

    /// Every release still consistent with what the peer sent, oldest first.
    pub fn candidates(&self) -> &[&'static Release] {
        &self.candidates
    }

    /// Whether a stream has been judged (or the release was pinned).
    pub fn known(&self) -> bool {
        self.seen
    }

    /// Why the peer was refused, when its last stream matched no release.
    pub fn refused(&self) -> Option<&Unknown> {
        self.refused.as_ref()
    }
}

/// The classes of `graph` that no release has with the serialVersionUID sent, with the releases
/// that have them with another; when each class is known somewhere but no one release has them
/// all, every class some release disagrees on.
fn unknown_of(graph: &Graph) -> Unknown {
    let mut disagreed: BTreeMap<(String, i64), Vec<String>> = BTreeMap::new();
    for r in Release::all() {
        for m in r.judge(graph).mismatched {
            disagreed
                .entry((m.class, m.sent))
                .or_default()
                .push(r.name.clone());
        }
    }
    let known_somewhere = |class: &str, suid: i64| {
        Release::all().iter().any(|r| {
            r.table
                .get(class)
                .is_some_and(|c| c.suid.parse::<i64>().ok() == Some(suid))
        })
    };
    let blamed: Vec<(String, i64, Vec<String>)> = disagreed
        .iter()
        .filter(|((class, suid), _)| !known_somewhere(class, *suid))
        .map(|((class, suid), rs)| (class.clone(), *suid, rs.clone()))
        .collect();
    let mismatched = if blamed.is_empty() {
        disagreed
            .into_iter()
            .map(|((class, suid), rs)| (class, suid, rs))
            .collect()
    } else {
        blamed
    };
    Unknown { mismatched }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_of_the_index_has_a_table_that_loads() {
        let index: IndexFile = serde_json::from_str(INDEX).expect("releases.json parses");
        assert_eq!(Release::all().len(), index.releases.len());
        for e in &index.releases {
            let r = Release::named(&e.release).expect("every indexed release loads");
            assert!(!r.table().is_empty(), "{} has an empty table", r.name());
        }
        for (file, _) in TABLES {
            assert!(
                index.releases.iter().any(|e| e.table == *file),
                "{file} is carried but no release uses it"
            );
        }
    }

    #[test]
    fn the_protocol_versions_map_to_the_releases_they_were_defined_from() {
        assert_eq!(Release::of(Version::V1).name(), "3.0.3");
        assert_eq!(Release::of(Version::V2).name(), "4.0.1");
        assert_eq!(Release::of(Version::V1).version(), Version::V1);
        assert_eq!(Release::of(Version::V2).version(), Version::V2);
        assert!(Release::of(Version::V1).scala_212());
        assert!(!Release::of(Version::V2).scala_212());
    }

    #[test]
    fn a_release_line_names_its_newest_release() {
        let r = Release::named("4.0").expect("the 4.0 line");
        assert_eq!(r.line(), "4.0");
        assert!(Release::named("9.9").is_none());
        assert!(release_key("3.10.0") > release_key("3.9.9"));
    }
}
