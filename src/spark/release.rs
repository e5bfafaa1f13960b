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
//! them; the release it answers in is the newest of those. A peer's own streams often leave
//! releases open that describe other classes differently (a worker never sends the
//! `ResourceProfile` a `LaunchExecutor` carries to it): [`Detector::probe`] picks a class to ask
//! the peer about (a [`Probe`], sent as a `java.lang.Class` object, which a JVM checks against its
//! own class without making an object), and [`Detector::answer`] keeps the releases that describe
//! it as the peer does (SPEC §15.3). A peer that matches no release is refused with the classes
//! that did not match.

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

    /// Whether a worker of this release asks `ExecutorStateChanged` (and waits for the master's
    /// `true`) rather than sending it one-way: from Spark 3.2.0 on (SPARK-34245), also in 3.2 and
    /// 3.3, whose messages map to protocol version 1, where it is a send; a master of those
    /// releases takes it only as an ask (SPEC §15.3's table, §15.4 S8).
    pub fn asks_executor_state(&self) -> bool {
        release_key(&self.name) >= release_key("3.2.0")
    }

    /// Whether peers of the two releases can share executors: an executor launched by a worker
    /// of one release speaks Java serialization to a driver of the other directly, so their
    /// tables must be the same.
    pub fn compatible(&self, other: &Release) -> bool {
        std::ptr::eq(self.table, other.table)
    }

    /// Whether peers labelled `a` and `b` ([`Release::label_of`]: one release's name, or the
    /// names of the class tables a peer may speak) may share executors: when some release `a`
    /// names is [`compatible`](Release::compatible) with some release `b` names, that is, when
    /// their sets of candidate tables intersect; a name sparkwire does not know is compatible
    /// only with the same name. The rule a master gives its core for placing executors
    /// (`node::master::Config::release_compatible`, SPEC §15.5).
    pub fn compatible_names(a: &str, b: &str) -> bool {
        Release::label_names(a).any(|x| {
            Release::label_names(b).any(|y| match (Release::exactly(x), Release::exactly(y)) {
                (Some(x), Some(y)) => x.compatible(y),
                _ => x == y,
            })
        })
    }

    /// The label that names the releases a peer may speak (SPEC §15.5), from its candidates
    /// ([`Detector::candidates`]): one name per class table among them, the newest release of
    /// each, oldest first, joined by `|` (`4.0.4|4.0.5|4.3.0`). Candidates of one
    /// table give one release's name, as a peer whose release is told exactly. Empty for no
    /// candidates.
    pub fn label_of(candidates: &[&'static Release]) -> String {
        let mut newest: Vec<&'static Release> = Vec::new();
        for r in candidates {
            match newest.iter_mut().find(|n| n.compatible(r)) {
                Some(n) if release_key(r.name()) > release_key(n.name()) => *n = r,
                Some(_) => {}
                None => newest.push(r),
            }
        }
        newest.sort_by_key(|r| release_key(r.name()));
        let names: Vec<&str> = newest.iter().map(|r| r.name()).collect();
        names.join(LABEL_SEPARATOR)
    }

    /// The names a label holds ([`Release::label_of`]; one release's name is a label of one),
    /// empty ones left out.
    pub fn label_names(label: &str) -> impl Iterator<Item = &str> {
        label
            .split(LABEL_SEPARATOR)
            .map(str::trim)
            .filter(|n| !n.is_empty())
    }

    /// The release a peer of `label` is answered in: the newest release the label names that
    /// sparkwire knows (a front answers a peer in the newest of its candidates, SPEC §15.3).
    pub fn answering(label: &str) -> Option<&'static Release> {
        Release::label_names(label)
            .filter_map(Release::exactly)
            .max_by_key(|r| release_key(r.name()))
    }

    /// The release named exactly `name` (`3.5.9`; not a release line).
    fn exactly(name: &str) -> Option<&'static Release> {
        Release::all().iter().find(|r| r.name() == name)
    }

    /// The failure a JVM of this release meets reading the class descriptors of `graph`, as the
    /// text of the exception (`java.io.InvalidClassException: CLASS; local class incompatible:
    /// …` for a serialVersionUID that differs, the first in the JVM's reading order: each
    /// descriptor's superclasses before it; else `java.lang.ClassNotFoundException: CLASS` for a
    /// class it does not have), or `None` when it reads them all. Array classes are not checked
    /// (`ObjectStreamClass.initNonProxy`), nor classes the table does not list when they are not
    /// Spark's or Scala's.
    pub fn read_failure(&self, graph: &Graph) -> Option<String> {
        let mut missing = None;
        for e in graph.entries() {
            let Entry::ClassDesc(leaf) = e else { continue };
            // The chain, the outermost superclass first.
            let mut chain = vec![leaf];
            let mut next = leaf.super_desc;
            while let Some(Entry::ClassDesc(d)) = next.and_then(|h| graph.get(h)) {
                if chain.len() > 64 {
                    break;
                }
                chain.push(d);
                next = d.super_desc;
            }
            for d in chain.into_iter().rev() {
                if d.name.starts_with('[') {
                    continue;
                }
                match self.table.get(&d.name) {
                    Some(c) => {
                        let local = c.suid.parse::<i64>().ok();
                        if local.is_some_and(|l| l != d.suid) {
                            return Some(format!(
                                "java.io.InvalidClassException: {}; local class incompatible: \
                                 stream classdesc serialVersionUID = {}, local class \
                                 serialVersionUID = {}",
                                d.name,
                                d.suid,
                                local.unwrap_or_default()
                            ));
                        }
                    }
                    None if d.name.starts_with("org.apache.spark.")
                        || d.name.starts_with("scala.") =>
                    {
                        missing.get_or_insert_with(|| d.name.clone());
                    }
                    None => {}
                }
            }
        }
        missing.map(|class| format!("java.lang.ClassNotFoundException: {class}"))
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

    /// The label that names the peer's candidates ([`Release::label_of`]): what a front
    /// announces as the peer's `sparkRelease` (SPEC §15.5). One release's name once the peer's
    /// streams and answers leave releases of one table (or the release is pinned); the newest
    /// release of each table left when they do not (probing ended without an answer).
    pub fn label(&self) -> String {
        match Release::label_of(&self.candidates) {
            l if l.is_empty() => self.release().name().to_string(),
            l => l,
        }
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

/// The endpoint a probe is addressed to: no Spark process has one of that name, so a peer that
/// reads the probe's stream answers that it could not find it (SPEC §15.3).
pub const PROBE_ENDPOINT: &str = "sparkwire-release-probe";

/// What separates the names of a label that names several releases ([`Release::label_of`]).
pub const LABEL_SEPARATOR: &str = "|";

/// Most probes asked of one peer.
pub const MAX_PROBES: usize = 12;

/// The classes whose forms a master and the workers and applications it serves exchange: the
/// standalone and coarse-grained messages, what their fields hold (descriptions, commands,
/// states, resource profiles, endpoint references) and the Scala library. Probes ask about these
/// only (SPEC §15.3).
const WIRE_CLASSES: &[&str] = &[
    "org.apache.spark.deploy.DeployMessages",
    "org.apache.spark.deploy.ApplicationDescription",
    "org.apache.spark.deploy.Command",
    "org.apache.spark.deploy.DriverDescription",
    "org.apache.spark.deploy.ExecutorDescription",
    "org.apache.spark.deploy.ExecutorState",
    "org.apache.spark.deploy.master.",
    "org.apache.spark.rpc.",
    "org.apache.spark.resource.",
    "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages",
    "scala.",
];

/// Whether `class` is one of the [`WIRE_CLASSES`].
fn on_the_wire(class: &str) -> bool {
    WIRE_CLASSES.iter().any(|p| class.starts_with(p))
}

/// A question to a peer whose streams leave its release open: the `java.lang.Class` object of
/// one class, described as one release describes it, asked of [`PROBE_ENDPOINT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    class: String,
    release: &'static Release,
}

impl Probe {
    /// The class asked about.
    pub fn class(&self) -> &str {
        &self.class
    }

    /// The release whose descriptor of it (and of its superclasses) the probe carries.
    pub fn release(&self) -> &'static Release {
        self.release
    }

    /// The probe's Java stream ([`class_stream`](super::class_stream)).
    pub fn stream(&self) -> Result<Vec<u8>, super::EncodeError> {
        super::encode::class_stream(&self.class, self.release)
    }
}

/// What a peer's answer to a [`Probe`] says of its classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// The peer read every descriptor the probe carried (and then found no endpoint of that
    /// name): its release describes them as the probe's release does.
    Read,
    /// The peer has `class` with another serialVersionUID, `local`
    /// (`java.io.InvalidClassException: CLASS; local class incompatible: stream classdesc
    /// serialVersionUID = S, local class serialVersionUID = L`).
    Incompatible {
        /// The class the peer named.
        class: String,
        /// The peer's own serialVersionUID of it.
        local: i64,
    },
    /// The peer has no class of that name (`java.lang.ClassNotFoundException: CLASS`).
    NoClass(String),
    /// Anything else: no answer in time, an answer that is not a failure, a failure of another
    /// kind. Tells nothing.
    Other,
}

impl ProbeAnswer {
    /// What the text of a peer's `RpcFailure` (or of the exception an `RpcFailure` object
    /// carries) says about a probe.
    pub fn of_failure(text: &str) -> ProbeAnswer {
        const INVALID: &str = "java.io.InvalidClassException: ";
        const LOCAL: &str = "local class serialVersionUID = ";
        const NO_CLASS: &str = "java.lang.ClassNotFoundException: ";
        if let Some(at) = text.find(INVALID) {
            let rest = &text[at + INVALID.len()..];
            let class = rest.split(';').next().unwrap_or_default().trim();
            let local = rest.find(LOCAL).and_then(|i| {
                let digits: String = rest[i + LOCAL.len()..]
                    .chars()
                    .take_while(|c| *c == '-' || c.is_ascii_digit())
                    .collect();
                digits.parse::<i64>().ok()
            });
            return match local {
                Some(local) if !class.is_empty() => ProbeAnswer::Incompatible {
                    class: class.to_string(),
                    local,
                },
                _ => ProbeAnswer::Other,
            };
        }
        if let Some(at) = text.find(NO_CLASS) {
            let class: String = text[at + NO_CLASS.len()..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            if !class.is_empty() {
                return ProbeAnswer::NoClass(class);
            }
        }
        if text.contains(PROBE_ENDPOINT) {
            return ProbeAnswer::Read;
        }
        ProbeAnswer::Other
    }
}

impl Detector {
    /// The probe that best tells apart the releases left, when they have different tables: a
    /// class of Spark's or Scala's that the releases left describe differently (or that some of
    /// them do not have), described as the newest release left that has it describes it. The
    /// classes of the wire (those a master writes and reads) come first, so that what a master
    /// writes to the peer is settled by the first answers; then the class whose answer leaves the fewest
    /// releases at worst, then one that is not a Scala companion object, then by name. Classes
    /// whose superclasses include one of neither Spark nor Scala are not asked about (a JVM's
    /// own classes differ with the JVM, not with Spark). `None` when the release is pinned or the
    /// releases left share one table.
    pub fn probe(&self) -> Option<Probe> {
        if self.pinned {
            return None;
        }
        let first = *self.candidates.first()?;
        if self.candidates.iter().all(|r| r.compatible(first)) {
            return None;
        }
        let mut names: Vec<&str> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for r in &self.candidates {
            if !seen.insert(r.table_file.as_str()) {
                continue;
            }
            names.extend(r.table.iter().map(|c| c.name.as_str()));
        }
        names.sort_unstable();
        names.dedup();
        // (not on the wire, the largest group an answer leaves, a companion object, the name)
        type Key<'a> = (bool, usize, bool, &'a str);
        let mut best: Option<(Key<'_>, &'static Release)> = None;
        for name in names {
            if !spark_or_scala(name) {
                continue;
            }
            let mut groups: BTreeMap<Option<&str>, usize> = BTreeMap::new();
            let mut source = None;
            for r in &self.candidates {
                let c = r.table.get(name);
                if let Some(c) = c {
                    if c.flags & 0x06 == 0 {
                        groups.clear();
                        break;
                    }
                    source = Some(*r);
                }
                *groups.entry(c.map(|c| c.suid.as_str())).or_default() += 1;
            }
            let Some(source) = source else { continue };
            if groups.len() < 2 || !chain_is_spark_or_scala(source, name) {
                continue;
            }
            let worst = groups.values().copied().max().unwrap_or(0);
            let key = (!on_the_wire(name), worst, name.ends_with('$'), name);
            if best.as_ref().is_none_or(|(b, _)| key < *b) {
                best = Some((key, source));
            }
        }
        best.map(|((_, _, _, class), release)| Probe {
            class: class.to_string(),
            release,
        })
    }

    /// Takes the peer's answer to `probe`: keeps the releases that describe the classes as the
    /// peer does. Returns whether the answer told something; an answer that would leave no
    /// release (the peer contradicts every one left), or that names a class of neither Spark
    /// nor Scala, tells nothing and changes nothing.
    pub fn answer(&mut self, probe: &Probe, answer: &ProbeAnswer) -> bool {
        if self.pinned {
            return false;
        }
        let keep = |r: &&'static Release| -> bool {
            match answer {
                ProbeAnswer::Read => {
                    // The peer has the class and each superclass of Spark's or Scala's as the
                    // probe's release describes them.
                    let mut next = Some(probe.class.clone());
                    let mut steps = 0;
                    while let Some(name) = next {
                        steps += 1;
                        let Some(theirs) = probe.release.table.get(&name) else {
                            return false;
                        };
                        if spark_or_scala(&name)
                            && r.table.get(&name).map(|c| &c.suid) != Some(&theirs.suid)
                        {
                            return false;
                        }
                        if steps > 64 {
                            return false;
                        }
                        next = theirs.super_class.clone();
                    }
                    true
                }
                ProbeAnswer::Incompatible { class, local } => r
                    .table
                    .get(class)
                    .is_some_and(|c| c.suid.parse::<i64>().ok() == Some(*local)),
                ProbeAnswer::NoClass(class) => r.table.get(class).is_none(),
                ProbeAnswer::Other => true,
            }
        };
        match answer {
            ProbeAnswer::Other => return false,
            ProbeAnswer::Incompatible { class, .. } | ProbeAnswer::NoClass(class)
                if !spark_or_scala(class) =>
            {
                return false
            }
            _ => {}
        }
        let narrowed: Vec<&'static Release> =
            self.candidates.iter().copied().filter(keep).collect();
        if narrowed.is_empty() || narrowed.len() == self.candidates.len() {
            return false;
        }
        self.candidates = narrowed;
        true
    }
}

/// Whether `class` is Spark's or the Scala library's (whose descriptors follow the Spark release,
/// where the JVM's own classes follow the JVM).
fn spark_or_scala(class: &str) -> bool {
    class.starts_with("org.apache.spark.") || class.starts_with("scala.")
}

/// Whether every serializable superclass of `class` in `release` is Spark's or Scala's.
fn chain_is_spark_or_scala(release: &Release, class: &str) -> bool {
    let mut next = release.table.get(class).and_then(|c| c.super_class.clone());
    let mut steps = 0;
    while let Some(name) = next {
        steps += 1;
        if !spark_or_scala(&name) || steps > 64 {
            return false;
        }
        next = release.table.get(&name).and_then(|c| c.super_class.clone());
    }
    true
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
    fn a_worker_asks_its_executor_state_from_3_2_0_on_whatever_version_its_fields_map_to() {
        for r in Release::all() {
            let before_3_2 = r.line() == "3.0" || r.line() == "3.1";
            assert_eq!(r.asks_executor_state(), !before_3_2, "{}", r.name());
        }
        // 3.2 and 3.3 have version 1's fields, where the state is a send: the release decides.
        for name in ["3.2.0", "3.3.4"] {
            let r = Release::named(name).expect("a known release");
            assert_eq!(r.version(), Version::V1, "{name}");
            assert!(r.asks_executor_state(), "{name}");
        }
    }

    #[test]
    fn a_probe_answer_is_read_from_the_failure_text_spark_sends() {
        // As a Spark 4.2.1 worker fails a stream carrying Spark 4.3.0's ResourceProfile
        // (Throwables.getStackTraceAsString of the exception).
        let text = "java.io.InvalidClassException: org.apache.spark.resource.ResourceProfile; \
                    local class incompatible: stream classdesc serialVersionUID = \
                    -1872747411836192885, local class serialVersionUID = -2517983430696660228\n\
                    \tat java.base/java.io.ObjectStreamClass.initNonProxy(ObjectStreamClass.java:597)";
        assert_eq!(
            ProbeAnswer::of_failure(text),
            ProbeAnswer::Incompatible {
                class: "org.apache.spark.resource.ResourceProfile".into(),
                local: -2517983430696660228,
            }
        );
        assert_eq!(
            ProbeAnswer::of_failure(
                "java.lang.ClassNotFoundException: org.apache.spark.deploy.DeployMessages$Gone\n\tat x"
            ),
            ProbeAnswer::NoClass("org.apache.spark.deploy.DeployMessages$Gone".into())
        );
        assert_eq!(
            ProbeAnswer::of_failure(&format!(
                "org.apache.spark.SparkException: Could not find {PROBE_ENDPOINT}."
            )),
            ProbeAnswer::Read
        );
        assert_eq!(
            ProbeAnswer::of_failure("java.io.InvalidClassException: broken"),
            ProbeAnswer::Other
        );
        assert_eq!(ProbeAnswer::of_failure(""), ProbeAnswer::Other);
    }

    #[test]
    fn probes_of_a_peer_of_4_1_to_4_3_end_with_its_own_table() {
        // Every release of 4.1-4.3 has the same RpcEndpointRef: a worker's streams leave them
        // all open, and they disagree on ResourceProfile, StatusUpdate and the tasks' classes.
        for own in Release::all().iter().filter(|r| r.line() >= "4.1") {
            let mut d = Detector::new();
            d.candidates.retain(|r| r.line() >= "4.1");
            let mut asked = 0;
            while let Some(p) = d.probe() {
                asked += 1;
                assert!(asked <= MAX_PROBES, "{own}: probes do not end");
                let stream = p.stream().expect("a probe's stream");
                let g = crate::spark::parse_stream(&stream).expect("a Java stream");
                let answer = match own.read_failure(&g) {
                    Some(text) => ProbeAnswer::of_failure(&text),
                    None => ProbeAnswer::Read,
                };
                assert!(
                    d.answer(&p, &answer),
                    "{own}: {answer:?} to {p:?} tells nothing"
                );
            }
            assert!(asked >= 1, "{own}: no probe asked");
            assert!(d.candidates().contains(&own), "{own}: {:?}", d.candidates());
            assert!(
                d.release().compatible(own),
                "{own} answered as {}",
                d.release()
            );
        }
    }

    #[test]
    fn a_pinned_release_is_never_probed_nor_revised_by_an_answer() {
        let r = Release::named("4.2.1").expect("4.2.1");
        let mut d = Detector::pinned(r);
        assert!(d.probe().is_none());
        let p = Probe {
            class: "org.apache.spark.resource.ResourceProfile".into(),
            release: Release::named("4.3.0").expect("4.3.0"),
        };
        assert!(!d.answer(&p, &ProbeAnswer::Read));
        assert_eq!(d.release(), r);
    }

    /// The detector of a peer of `own` whose probing stopped after `answered` answers (as when
    /// a probe's answer does not come in time): its streams left the releases of `lines`.
    fn probed(own: &'static Release, lines: &[&str], answered: usize) -> Detector {
        let mut d = Detector::new();
        d.candidates.retain(|r| lines.contains(&r.line()));
        for _ in 0..answered {
            let Some(p) = d.probe() else { break };
            let stream = p.stream().expect("a probe's stream");
            let g = crate::spark::parse_stream(&stream).expect("a Java stream");
            let answer = match own.read_failure(&g) {
                Some(text) => ProbeAnswer::of_failure(&text),
                None => ProbeAnswer::Read,
            };
            assert!(d.answer(&p, &answer), "{own}: {answer:?} tells nothing");
        }
        d
    }

    #[test]
    fn a_peer_left_ambiguous_is_labelled_with_every_table_it_may_speak_newest_of_each() {
        let own = Release::named("4.0.4").expect("4.0.4");
        let d = probed(own, &["4.0", "4.1", "4.2", "4.3"], 0);
        // 4.0.0-4.0.4 share one table, 4.1.0-4.1.3 another: each is named by its newest.
        assert_eq!(d.label(), "4.0.4|4.0.5|4.1.3|4.1.4|4.2.0|4.2.1|4.3.0");
        assert_eq!(Release::label_names(&d.label()).count(), 7);
        // Answered in the newest candidate, as before: the label does not change that.
        assert_eq!(Release::answering(&d.label()), Some(d.release()));
        assert_eq!(d.release().name(), "4.3.0");
        // Probed to the end, the same peer's label is one release's name, of its own table.
        let told = probed(own, &["4.0", "4.1", "4.2", "4.3"], MAX_PROBES);
        assert_eq!(told.label(), "4.0.4");
        assert!(Release::named(&told.label())
            .expect("a name")
            .compatible(own));
        // Pinned: the pinned release's name.
        assert_eq!(Detector::pinned(own).label(), "4.0.4");
    }

    #[test]
    fn peers_of_one_release_probed_to_different_depths_may_share_executors_and_others_may_not() {
        // Three workers of one 4.0.4 fleet: one probed to the end, one whose probing stopped
        // after one answer, one after none. Labelled by one guess each (the newest candidate),
        // they were 4.0.4, 4.0.5 and 4.3.0, and an application of 4.0.4 was refused two of them.
        let own = Release::named("4.0.4").expect("4.0.4");
        let lines = ["4.0", "4.1", "4.2", "4.3"];
        let labels: Vec<String> = [MAX_PROBES, 1, 0]
            .iter()
            .map(|n| probed(own, &lines, *n).label())
            .collect();
        assert_eq!(labels[0], "4.0.4");
        assert!(
            labels[1].contains('|'),
            "one answer does not settle 4.0-4.3: {labels:?}"
        );
        for a in &labels {
            for b in &labels {
                assert!(Release::compatible_names(a, b), "{a} and {b}");
            }
        }
        // An application of 4.0.4 may use every one of them.
        for l in &labels {
            assert!(Release::compatible_names("4.0.1", l), "4.0.1 and {l}");
        }
        // A peer told exactly is kept from a table not among another's candidates.
        assert!(!Release::compatible_names("4.0.4", "4.3.0"));
        assert!(!Release::compatible_names("3.5.9", &labels[2]));
        assert!(!Release::compatible_names(&labels[0], "4.0.5"));
        // Sets intersect when some table is in both, and only then.
        assert!(Release::compatible_names("3.5.9|4.0.4", "4.0.2|4.3.0"));
        assert!(!Release::compatible_names("3.5.9|4.0.5", "4.0.2|4.3.0"));
        // Names sparkwire does not know match only themselves, inside a label too.
        assert!(Release::compatible_names("9.9.9|4.3.0", "9.9.9"));
        assert!(!Release::compatible_names("9.9.9", "9.9.8"));
        assert!(!Release::compatible_names("", "4.0.4"));
    }

    #[test]
    fn a_label_of_one_table_is_the_newest_release_name_and_a_label_answers_in_its_newest() {
        let of = |names: &[&str]| -> Vec<&'static Release> {
            names
                .iter()
                .map(|n| Release::named(n).expect("a release"))
                .collect()
        };
        assert_eq!(
            Release::label_of(&of(&["4.0.0", "4.0.2", "4.0.1"])),
            "4.0.2"
        );
        assert_eq!(
            Release::label_of(&of(&["4.3.0", "4.0.0", "4.0.5"])),
            "4.0.0|4.0.5|4.3.0"
        );
        assert_eq!(Release::label_of(&[]), "");
        assert_eq!(
            Release::answering("4.0.4|4.3.0|4.0.5").map(Release::name),
            Some("4.3.0")
        );
        assert_eq!(
            Release::answering("3.5.9").map(Release::name),
            Some("3.5.9")
        );
        assert_eq!(Release::answering("9.9.9"), None);
    }

    #[test]
    fn a_release_line_names_its_newest_release() {
        let r = Release::named("4.0").expect("the 4.0 line");
        assert_eq!(r.line(), "4.0");
        assert!(Release::named("9.9").is_none());
        assert!(release_key("3.10.0") > release_key("3.9.9"));
    }
}
