//! `conformance/COVERAGE.md`: the traceability matrix from the protocol's normative sentences to
//! the cases that check them.
//!
//! # Which sentences are normative (the extraction rule)
//!
//! The documents are `protocol/SPEC.md`, `protocol/handshake.md` and `protocol/rules.md`.
//! [`extract`] cuts each into units and keeps the normative ones:
//!
//! - **Units.** A paragraph (its lines joined), a list item (its continuation lines joined), or a
//!   row of a table (its cells joined with ` | `) is split into sentences at `.`, `!` or `?`
//!   followed by a space and then a capital letter, a backtick, `*`, `"` or `(`, never inside a
//!   `code span`. Every rule row of `rules.md` (a row whose first cell is an id such as `W1` and
//!   whose second is its slug) is one unit, whatever its text says: every rule id is in the map.
//! - **Skipped.** Fenced code blocks, headings, the header and separator rows of tables, the
//!   sentence that says how the RFC 2119 key words are used, sentences that begin with `Example`,
//!   and SPEC.md §12 (the implementer's checklist: an index of requirements stated in the other
//!   sections, each with the vector or test that checks it).
//! - **Normative.** A sentence is kept when, outside its code spans and its quotations (text
//!   between straight double quotes: a vector's name, a sentence cited from elsewhere), it has an RFC 2119 key word
//!   in capitals (`MUST`, `MUST NOT`, `SHOULD`, `SHOULD NOT`, `REQUIRED`, `SHALL`; not `MAY`,
//!   which grants a choice rather than asking for something), or one of the words that the
//!   documents use for an endpoint's observable duty in the present tense: `refuse`, `refuses`,
//!   `refused`, `answers`, `answered`, `closes`, `accepts`, `ignores`, `ignored`, `skips`,
//!   `never`, `exactly`, `replaced`, `reported`, `reports`, `chooses`, `unique`, `goes on`, or
//!   `take`/`takes`/`taken` together with `only` ("is taken only over its connection"); or it
//!   names, as a code span, a verdict: one of SPEC
//!   §8's decoding errors (`InvalidMessagePack` … `InvalidFields`) or handshake.md §5's refusal
//!   reasons (`tooManyConnections` … `noCommonVersion`).
//!
//! A sentence repeated word for word in its section (a row shared by two tables) counts once.
//! Each sentence belongs to the section of the nearest heading above it: the heading's number
//! (`2`, `4.1`, `14.2`), or its text when it has none (`Worker ↔ master` in `rules.md`), or
//! `intro` before the first `##` heading.
//!
//! # The map (`conformance/coverage.json`)
//!
//! A hand-maintained list of entries. Each names one sentence by a key and says what checks it:
//!
//! - `"key": "SPEC §2: MUST refuse a frame whose declared length"`: the document (`SPEC`,
//!   `handshake`, `rules`), `§` and the section, `: ` and a short quote of the sentence (spaces
//!   collapsed), which must occur in exactly one normative sentence of that section. A small edit
//!   elsewhere in the sentence keeps the key; renumbering a section or rewording the quoted words
//!   needs the key updated. A rule of `rules.md` is keyed `"rules W1 worker.register-first"`
//!   (id and slug).
//! - `"cases": [ids]`: the conformance cases that fail when an endpoint breaks the sentence
//!   (checked to exist);
//! - `"unobservable": "reason"`: why no case can see it over the wire (internal to the endpoint,
//!   an obligation of the suite's own side, …);
//! - `"unchecked": "what a case would do"`: observable but no case checks it yet; with `cases`
//!   too, the cases check part of it and `unchecked` says which part is left;
//! - `"note"`: optional, anything a reader should know (an ambiguity, a case that checks less
//!   than its id says);
//! - `"extra": true`: the key names a sentence the extraction rule does not keep (a row of a
//!   layout table that states a requirement without a key word); such entries add sentences to
//!   the matrix, are checked for staleness like the others, and are refused once the rule keeps
//!   the sentence itself.
//!
//! [`check`] refuses a normative sentence no entry names, an entry that names no sentence (its
//! sentence changed or went: the map cannot rot), a key matching several sentences, a sentence
//! named by two entries, an entry with neither cases nor a reason, and a case id that does not
//! exist. `sparkwire-conformance --write-coverage-md conformance/COVERAGE.md` prints, for each
//! unmapped sentence, the entry to add (with a key that is unique in its section); CI runs
//! `--check-coverage-md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use serde::Deserialize;

use crate::harness::verdict::Target;

/// The documents whose sentences are traced: (short name used in keys, path in the repository,
/// text).
pub const DOCUMENTS: [(&str, &str, &str); 3] = [
    (
        "SPEC",
        "protocol/SPEC.md",
        include_str!("../../../protocol/SPEC.md"),
    ),
    (
        "handshake",
        "protocol/handshake.md",
        include_str!("../../../protocol/handshake.md"),
    ),
    (
        "rules",
        "protocol/rules.md",
        include_str!("../../../protocol/rules.md"),
    ),
];

/// The map of `conformance/coverage.json`, as compiled into the suite.
pub const MAPPING: &str = include_str!("../../coverage.json");

/// Sections left out of the extraction, with why (see the module documentation).
pub const SKIPPED_SECTIONS: [(&str, &str, &str); 1] = [(
    "SPEC",
    "12",
    "the implementer's checklist, an index of requirements stated in the other sections",
)];

const KEY_WORDS: [&str; 4] = ["MUST", "SHOULD", "REQUIRED", "SHALL"];
const DUTY_WORDS: [&str; 17] = [
    "refuse", "refuses", "refused", "answers", "answered", "closes", "accepts", "ignores",
    "ignored", "skips", "never", "exactly", "replaced", "reported", "reports", "chooses", "unique",
];
/// Verdicts: SPEC §8's decoding errors and handshake.md §5's refusal reasons.
const VERDICTS: [&str; 17] = [
    "InvalidMessagePack",
    "TooDeep",
    "TrailingBytes",
    "BadEnvelope",
    "UnknownMessage",
    "NotInVersion",
    "LocalMessage",
    "InvalidFields",
    "tooManyConnections",
    "frameTooLarge",
    "badMagic",
    "malformedHello",
    "authRequired",
    "authNotConfigured",
    "authFailed",
    "roleNotAccepted",
    "noCommonVersion",
];

/// One normative sentence (or one rule of `rules.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentence {
    /// The document's short name: `SPEC`, `handshake` or `rules`.
    pub doc: String,
    /// The section: a heading's number, or its text when it has none, or `intro`.
    pub section: String,
    /// The sentence, whitespace collapsed (for a rule, the rule's text).
    pub text: String,
    /// For a rule row of `rules.md`: its id and slug.
    pub rule: Option<(String, String)>,
    /// Whether the extraction rule keeps it (every rule row, every normative sentence); the
    /// others can only be traced by an `extra` entry of the map.
    pub normative: bool,
}

impl Sentence {
    /// Where the sentence is, as keys and COVERAGE.md write it: `SPEC §2`, `rules W1`.
    pub fn place(&self) -> String {
        match &self.rule {
            Some((id, _)) => format!("{} {id}", self.doc),
            None => format!("{} §{}", self.doc, self.section),
        }
    }
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text outside `code spans`.
fn prose(s: &str) -> String {
    let mut out = String::new();
    let mut code = false;
    for c in s.chars() {
        if c == '`' {
            code = !code;
            out.push(' ');
        } else if !code {
            out.push(c);
        }
    }
    out
}

/// The sentence without its quotations: text between straight double quotes outside code spans
/// (a vector's name, a sentence cited from elsewhere) is someone else's words.
fn unquoted(s: &str) -> String {
    let mut out = String::new();
    let (mut code, mut quote) = (false, false);
    for c in s.chars() {
        match c {
            '`' if !quote => {
                code = !code;
                out.push(c);
            }
            '"' if !code => {
                quote = !quote;
                out.push(' ');
            }
            _ if quote => {}
            _ => out.push(c),
        }
    }
    out
}

/// Whether `sentence` is normative by the extraction rule (module documentation).
pub fn is_normative(sentence: &str) -> bool {
    let sentence = &unquoted(sentence);
    let text = prose(sentence);
    if text.contains("RFC 2119") || sentence.trim_start().starts_with("Example") {
        return false;
    }
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    let verdict = sentence
        .split('`')
        .skip(1)
        .step_by(2)
        .any(|code| VERDICTS.contains(&code));
    verdict
        || KEY_WORDS.iter().any(|k| has(k))
        || DUTY_WORDS.iter().any(|k| has(k))
        || (has("only") && (has("take") || has("takes") || has("taken")))
        || text.contains("goes on")
}

/// Splits a unit into sentences (module documentation).
pub fn sentences(unit: &str) -> Vec<String> {
    let chars: Vec<char> = unit.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut code = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        cur.push(c);
        if c == '`' {
            code = !code;
        }
        let ends = !code
            && matches!(c, '.' | '!' | '?')
            && chars.get(i + 1) == Some(&' ')
            && chars
                .get(i + 2)
                .is_some_and(|n| n.is_uppercase() || matches!(n, '`' | '*' | '"' | '('));
        if ends {
            out.push(cur.trim().to_string());
            cur.clear();
            i += 1;
        }
        i += 1;
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn heading_section(title: &str) -> String {
    let number: String = title
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let number = number.trim_end_matches('.');
    if !number.is_empty() && number.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        number.to_string()
    } else {
        title.trim().to_string()
    }
}

fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'|') {
            cur.push('|');
            chars.next();
        } else if c == '|' {
            out.push(cur.trim().to_string());
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    out.push(cur.trim().to_string());
    out
}

fn is_separator(row: &str) -> bool {
    row.starts_with('|') && row.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

fn rule_row(cells: &[String]) -> Option<(String, String, String)> {
    let [id, slug, text] = cells else { return None };
    let mut id_chars = id.chars();
    let id_ok = id_chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && id.len() > 1
        && id_chars.all(|c| c.is_ascii_digit());
    let slug = slug.strip_prefix('`')?.strip_suffix('`')?;
    id_ok.then(|| (id.clone(), slug.to_string(), text.clone()))
}

/// The normative sentences of one document (`doc` is its short name), in document order.
pub fn extract(doc: &str, text: &str) -> Vec<Sentence> {
    extract_all(doc, text)
        .into_iter()
        .filter(|s| s.normative)
        .collect()
}

/// Every sentence of one document outside the skipped parts, in document order, each marked
/// [`Sentence::normative`] or not.
pub fn extract_all(doc: &str, text: &str) -> Vec<Sentence> {
    // Units: a paragraph, list item or table row, whole (split into sentences below).
    let mut units: Vec<Sentence> = Vec::new();
    let unit = |section: &str, text: &str, rule: Option<(String, String)>| Sentence {
        doc: doc.to_string(),
        section: section.to_string(),
        text: text.to_string(),
        normative: rule.is_some(),
        rule,
    };
    let mut section = "intro".to_string();
    let mut fence = false;
    let mut open_paragraph = false;
    let lines: Vec<&str> = text.lines().collect();
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with("```") {
            fence = !fence;
            open_paragraph = false;
            continue;
        }
        if fence {
            continue;
        }
        if t.starts_with('#') {
            let level = t.chars().take_while(|c| *c == '#').count();
            if level >= 2 {
                section = heading_section(t[level..].trim());
            }
            open_paragraph = false;
            continue;
        }
        if t.is_empty() {
            open_paragraph = false;
            continue;
        }
        if t.starts_with('|') {
            open_paragraph = false;
            let header = lines.get(n + 1).is_some_and(|l| is_separator(l.trim()));
            if header || is_separator(t) {
                continue;
            }
            let cs = cells(t);
            if doc == "rules" {
                if let Some((id, slug, rule)) = rule_row(&cs) {
                    units.push(unit(&section, &rule, Some((id, slug))));
                    continue;
                }
            }
            units.push(unit(&section, &cs.join(" | "), None));
            continue;
        }
        let item = t.starts_with("- ")
            || t.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        if open_paragraph && !item {
            if let Some(last) = units.last_mut() {
                last.text.push(' ');
                last.text.push_str(t);
            }
        } else {
            // A list item's marker (`- `, `1. `) is not part of its text.
            let text = if item {
                t.split_once(' ').map_or(t, |(_, rest)| rest)
            } else {
                t
            };
            units.push(unit(&section, text, None));
            open_paragraph = true;
        }
    }
    let skipped = |s: &str| {
        SKIPPED_SECTIONS
            .iter()
            .any(|(d, sec, _)| *d == doc && *sec == s)
    };
    let mut out = Vec::new();
    for u in units {
        if skipped(&u.section) {
            continue;
        }
        if u.rule.is_some() {
            out.push(Sentence {
                text: collapse(&u.text),
                ..u
            });
            continue;
        }
        for s in sentences(&collapse(&u.text)) {
            // A sentence repeated word for word in its section (the same table row in two
            // tables) is one requirement, traced once.
            let repeated = out
                .iter()
                .any(|o: &Sentence| o.rule.is_none() && o.section == u.section && o.text == s);
            if !repeated {
                out.push(Sentence {
                    normative: is_normative(&s),
                    text: s,
                    ..u.clone()
                });
            }
        }
    }
    out
}

/// Every sentence of every traced document, normative or not (see [`extract_all`]).
pub fn all_sentences() -> Vec<Sentence> {
    DOCUMENTS
        .iter()
        .flat_map(|(doc, _, text)| extract_all(doc, text))
        .collect()
}

/// The map file: its entries.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// One entry per normative sentence.
    pub entries: Vec<Entry>,
}

/// One entry of the map (module documentation).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// `DOC §SECTION: quote`, or `rules ID slug`.
    pub key: String,
    /// The cases that check the sentence.
    #[serde(default)]
    pub cases: Vec<String>,
    /// Why no case can observe it over the wire.
    pub unobservable: Option<String>,
    /// What is left for a case to check.
    pub unchecked: Option<String>,
    /// Anything a reader should know.
    pub note: Option<String>,
    /// The sentence is one the extraction rule does not keep, traced by hand.
    #[serde(default)]
    pub extra: bool,
}

impl Mapping {
    /// Parses the JSON of a map file.
    pub fn parse(json: &str) -> Result<Mapping, String> {
        serde_json::from_str(json).map_err(|e| format!("coverage map: {e}"))
    }
}

/// What a key names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Sentence {
        doc: String,
        section: String,
        quote: String,
    },
    Rule {
        id: String,
        slug: String,
    },
}

fn parse_key(key: &str) -> Option<Key> {
    if let Some(rest) = key.strip_prefix("rules ") {
        if let Some((id, slug)) = rest.split_once(' ') {
            if !id.starts_with('§') && !slug.contains(' ') {
                return Some(Key::Rule {
                    id: id.to_string(),
                    slug: slug.to_string(),
                });
            }
        }
    }
    let (doc, rest) = key.split_once(" §")?;
    let (section, quote) = rest.split_once(": ")?;
    let quote = collapse(quote);
    (!quote.is_empty()).then(|| Key::Sentence {
        doc: doc.to_string(),
        section: section.to_string(),
        quote,
    })
}

fn matches(key: &Key, s: &Sentence) -> bool {
    match key {
        Key::Rule { id, slug } => {
            s.doc == "rules" && s.rule.as_ref().is_some_and(|(i, l)| i == id && l == slug)
        }
        Key::Sentence {
            doc,
            section,
            quote,
        } => s.rule.is_none() && &s.doc == doc && &s.section == section && s.text.contains(quote),
    }
}

/// A fault of the map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A normative sentence no entry names.
    Unmapped {
        /// The sentence.
        sentence: Sentence,
        /// A key that names it and no other sentence.
        suggested_key: String,
    },
    /// An entry whose key names no sentence: it changed or went.
    Stale {
        /// The entry's key.
        key: String,
    },
    /// An entry whose key names several sentences.
    Ambiguous {
        /// The entry's key.
        key: String,
        /// The sentences it names.
        sentences: Vec<String>,
    },
    /// A sentence named by several entries.
    NamedTwice {
        /// The sentence.
        sentence: String,
        /// The entries' keys.
        keys: Vec<String>,
    },
    /// An entry that names a case id no target has.
    UnknownCase {
        /// The entry's key.
        key: String,
        /// The case id.
        case: String,
    },
    /// An entry that is not well formed: a key that is not `DOC §SECTION: quote` or `rules ID
    /// slug`, or no cases and no reason, or both a reason and cases.
    BadEntry {
        /// The entry's key.
        key: String,
        /// What is wrong.
        why: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Unmapped {
                sentence,
                suggested_key,
            } => write!(
                f,
                "unmapped sentence ({}): {}\n  add: {{\"key\": {}, \"unchecked\": \"…\"}}",
                sentence.place(),
                sentence.text,
                serde_json::Value::from(suggested_key.as_str())
            ),
            Problem::Stale { key } => write!(
                f,
                "stale entry {key:?}: no normative sentence matches it any more (update or remove it)"
            ),
            Problem::Ambiguous { key, sentences } => write!(
                f,
                "ambiguous entry {key:?} matches {} sentences (quote more words): {}",
                sentences.len(),
                sentences.join(" / ")
            ),
            Problem::NamedTwice { sentence, keys } => {
                write!(f, "sentence named by {} entries {keys:?}: {sentence}", keys.len())
            }
            Problem::UnknownCase { key, case } => {
                write!(f, "entry {key:?} names case {case:?}, which no target has")
            }
            Problem::BadEntry { key, why } => write!(f, "entry {key:?}: {why}"),
        }
    }
}

/// How an entry accounts for its sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Cases check all of it.
    Checked,
    /// Cases check part of it; the rest is not yet checked.
    Partly,
    /// No case checks it yet.
    Unchecked,
    /// No case can observe it over the wire.
    Unobservable,
}

impl Entry {
    /// How this entry accounts for its sentence.
    pub fn status(&self) -> Status {
        match (
            self.cases.is_empty(),
            self.unchecked.is_some(),
            self.unobservable.is_some(),
        ) {
            (_, _, true) => Status::Unobservable,
            (false, false, _) => Status::Checked,
            (false, true, _) => Status::Partly,
            (true, _, _) => Status::Unchecked,
        }
    }
}

/// The matrix: every normative sentence with the entry that accounts for it.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// In document order.
    pub rows: Vec<(Sentence, Entry)>,
    /// Each case id and the targets that have it.
    pub cases: BTreeMap<String, BTreeSet<Target>>,
}

/// The shortest key (at least six words of the sentence from its start, more until unique) that
/// names `s` and no other sentence of `all`.
pub fn suggest_key(s: &Sentence, all: &[Sentence]) -> String {
    if let Some((id, slug)) = &s.rule {
        return format!("rules {id} {slug}");
    }
    let words: Vec<&str> = s.text.split(' ').collect();
    let mut n = words.len().min(6);
    loop {
        let quote = words[..n].join(" ");
        let key = format!("{}: {quote}", s.place());
        let parsed = parse_key(&key);
        let unique = parsed.as_ref().is_some_and(|k| {
            all.iter()
                .filter(|o| o.normative == s.normative && matches(k, o))
                .count()
                == 1
        });
        if unique || n >= words.len() {
            return key;
        }
        n += 1;
    }
}

/// Checks `mapping` against `sentences` and the case ids of `cases` (id → targets).
pub fn check(
    sentences: &[Sentence],
    mapping: &Mapping,
    cases: &BTreeMap<String, BTreeSet<Target>>,
) -> Result<Matrix, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut owner: Vec<Vec<usize>> = vec![Vec::new(); sentences.len()];
    for (e, entry) in mapping.entries.iter().enumerate() {
        let Some(key) = parse_key(&entry.key) else {
            problems.push(Problem::BadEntry {
                key: entry.key.clone(),
                why: "a key is `DOC §SECTION: quote` or `rules ID slug`".into(),
            });
            continue;
        };
        let bad = match (
            entry.cases.is_empty(),
            entry.unobservable.is_some(),
            entry.unchecked.is_some(),
        ) {
            (true, false, false) => Some("it needs cases, `unobservable` or `unchecked`"),
            (false, true, _) => Some("`unobservable` with cases: a case does observe it"),
            (_, true, true) => Some("both `unobservable` and `unchecked`"),
            _ => None,
        };
        if let Some(why) = bad {
            problems.push(Problem::BadEntry {
                key: entry.key.clone(),
                why: why.into(),
            });
        }
        for case in &entry.cases {
            if !cases.contains_key(case) {
                problems.push(Problem::UnknownCase {
                    key: entry.key.clone(),
                    case: case.clone(),
                });
            }
        }
        let hits: Vec<usize> = (0..sentences.len())
            .filter(|&i| matches(&key, &sentences[i]) && sentences[i].normative != entry.extra)
            .collect();
        let traced = entry.extra && sentences.iter().any(|s| s.normative && matches(&key, s));
        match hits.len() {
            0 if traced => problems.push(Problem::BadEntry {
                key: entry.key.clone(),
                why: "`extra` names a sentence the extraction rule already keeps: drop `extra`"
                    .into(),
            }),
            0 => problems.push(Problem::Stale {
                key: entry.key.clone(),
            }),
            1 => owner[hits[0]].push(e),
            _ => problems.push(Problem::Ambiguous {
                key: entry.key.clone(),
                sentences: hits.iter().map(|&i| sentences[i].text.clone()).collect(),
            }),
        }
    }
    let mut rows = Vec::new();
    for (i, s) in sentences.iter().enumerate() {
        match owner[i].as_slice() {
            [] if !s.normative => {}
            [] => problems.push(Problem::Unmapped {
                sentence: s.clone(),
                suggested_key: suggest_key(s, sentences),
            }),
            [e] => rows.push((s.clone(), mapping.entries[*e].clone())),
            many => problems.push(Problem::NamedTwice {
                sentence: s.text.clone(),
                keys: many
                    .iter()
                    .map(|&e| mapping.entries[e].key.clone())
                    .collect(),
            }),
        }
    }
    if problems.is_empty() {
        Ok(Matrix {
            rows,
            cases: cases.clone(),
        })
    } else {
        Err(problems)
    }
}

/// Every case id of the suite, with the targets that have it.
pub fn case_ids() -> BTreeMap<String, BTreeSet<Target>> {
    let mut ids: BTreeMap<String, BTreeSet<Target>> = BTreeMap::new();
    for c in crate::all_cases() {
        ids.entry(c.id.to_string()).or_default().insert(c.target);
    }
    ids
}

/// The matrix of the protocol documents, the compiled-in map and the suite's cases.
pub fn matrix() -> Result<Matrix, Vec<Problem>> {
    let mapping = Mapping::parse(MAPPING).map_err(|why| {
        vec![Problem::BadEntry {
            key: "conformance/coverage.json".into(),
            why,
        }]
    })?;
    check(&all_sentences(), &mapping, &case_ids())
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

impl Matrix {
    /// How many sentences have each status.
    pub fn count(&self, status: Status) -> usize {
        self.rows
            .iter()
            .filter(|(_, e)| e.status() == status)
            .count()
    }

    fn cases_cell(&self, entry: &Entry) -> String {
        entry
            .cases
            .iter()
            .map(|c| {
                let targets: Vec<&str> = self
                    .cases
                    .get(c)
                    .map(|ts| ts.iter().map(|t| t.name()).collect())
                    .unwrap_or_default();
                format!("`{c}` ({})", targets.join(", "))
            })
            .collect::<Vec<_>>()
            .join("<br>")
    }

    /// The text of COVERAGE.md.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let w = &mut out;
        let _ = writeln!(
            w,
            "# Traceability: the protocol's sentences and the cases that check them\n"
        );
        let _ = writeln!(
            w,
            "Generated by `sparkwire-conformance --write-coverage-md conformance/COVERAGE.md` from \
             `protocol/SPEC.md`, `protocol/handshake.md`, `protocol/rules.md`, the map \
             `conformance/coverage.json` and the cases' code; CI checks it is fresh and complete \
             (`--check-coverage-md`). Do not edit by hand: edit the map.\n"
        );
        let _ = writeln!(w, "## Which sentences are traced\n");
        let _ = writeln!(
            w,
            "- **Units.** Paragraphs, list items and table rows (cells joined with ` | `), split into \
             sentences at `.`, `!` or `?` followed by a space and a capital letter, a backtick, `*`, \
             `\"` or `(` (never inside a code span); a sentence repeated word for word in its section counts \
             once. Every rule of `rules.md` (a table row with an id \
             and a slug) is one unit, whatever its words: every rule id is traced."
        );
        let _ = writeln!(
            w,
            "- **Skipped.** Fenced code blocks, headings, tables' header rows, the sentence about RFC \
             2119's key words, sentences beginning `Example`, and {}.",
            SKIPPED_SECTIONS
                .iter()
                .map(|(d, s, why)| format!("{d} §{s} ({why})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            w,
            "- **Normative.** A sentence with, outside its code spans and quotations (text between \
             straight double quotes: a vector's name, a cited sentence), an RFC 2119 key word in capitals \
             ({}; not MAY, which grants a choice), or one of the words the documents use for an \
             endpoint's duty: {}, goes on, or take/takes/taken with only; or that names a verdict as a code \
             span (SPEC §8's decoding errors, handshake.md §5's refusals: {}).",
            KEY_WORDS.join(", "),
            DUTY_WORDS.join(", "),
            VERDICTS.join(", ")
        );
        let _ = writeln!(
            w,
            "- **Added by hand.** A sentence the rule misses but that states a requirement (a row \
             of a layout table, say) is traced by an entry marked `extra`, shown *(added)*.\n\
             - **Mapped** to the cases that fail when an endpoint breaks the sentence, or to why no \
             case can observe it over the wire, or marked not yet checked (with what a case would \
             do). A sentence checked in part is listed under both.\n"
        );
        let _ = writeln!(w, "## How to update\n");
        let _ = writeln!(
            w,
            "After editing a protocol document or a case, run `sparkwire-conformance \
             --write-coverage-md conformance/COVERAGE.md`. It refuses, naming each: a new normative \
             sentence with no entry (it prints the entry to add, with a key `DOC §SECTION: quote` \
             unique in its section, or `rules ID slug`), an entry whose quote no longer occurs (the \
             sentence changed, moved section, or went), a quote found in several sentences, and a \
             case id that does not exist. Add or fix the entries in `conformance/coverage.json` \
             (read the cases' requirements in `CASES.md`: name a case only if it fails against an \
             endpoint that breaks the sentence) and run it again.\n"
        );
        let _ = writeln!(w, "## Counts\n");
        let _ = writeln!(
            w,
            "| document | sentences | checked by cases | checked in part | not yet checked | cannot be observed |\n|---|---|---|---|---|---|"
        );
        let mut docs: Vec<&str> = DOCUMENTS.iter().map(|(d, _, _)| *d).collect();
        docs.push("all");
        for d in docs {
            let rows: Vec<_> = self
                .rows
                .iter()
                .filter(|(s, _)| d == "all" || s.doc == d)
                .collect();
            let n = |st: Status| rows.iter().filter(|(_, e)| e.status() == st).count();
            let name = DOCUMENTS
                .iter()
                .find(|(s, _, _)| *s == d)
                .map_or("all".to_string(), |(_, p, _)| format!("`{p}`"));
            let _ = writeln!(
                w,
                "| {name} | {} | {} | {} | {} | {} |",
                rows.len(),
                n(Status::Checked),
                n(Status::Partly),
                n(Status::Unchecked),
                n(Status::Unobservable)
            );
        }
        let added = self.rows.iter().filter(|(s, _)| !s.normative).count();
        let _ = writeln!(
            w,
            "\n{} sentences found by the rule ({} of them rule ids), {added} added by hand \
             (`extra`, marked *(added)*).",
            self.rows.len() - added,
            self.rows.iter().filter(|(s, _)| s.rule.is_some()).count()
        );
        let _ = writeln!(
            w,
            "{} distinct case ids exist; {} of them are named here.\n",
            self.cases.len(),
            self.rows
                .iter()
                .flat_map(|(_, e)| e.cases.iter())
                .collect::<BTreeSet<_>>()
                .len()
        );
        let group = |status: &[Status]| {
            let mut by: Vec<(String, Vec<&(Sentence, Entry)>)> = Vec::new();
            for row in self
                .rows
                .iter()
                .filter(|(_, e)| status.contains(&e.status()))
            {
                let place = format!("{} §{}", row.0.doc, row.0.section);
                match by.last_mut() {
                    Some((p, rs)) if *p == place => rs.push(row),
                    _ => by.push((place, vec![row])),
                }
            }
            by
        };
        let rule = |s: &Sentence| match &s.rule {
            Some((id, _)) => format!("**{id}** "),
            None if !s.normative => "*(added)* ".to_string(),
            None => String::new(),
        };
        let _ = writeln!(w, "## Not yet checked\n");
        let _ = writeln!(
            w,
            "Observable over the wire, but no case fails when an endpoint breaks it (or, checked \
             in part, the cases check only part of it): the next cases to write.\n"
        );
        for (place, rows) in group(&[Status::Unchecked, Status::Partly]) {
            let _ = writeln!(w, "### {place}\n");
            let _ = writeln!(
                w,
                "| sentence | what is left | checked in part by | note |\n|---|---|---|---|"
            );
            for (s, e) in rows {
                let _ = writeln!(
                    w,
                    "| {}{} | {} | {} | {} |",
                    rule(s),
                    cell(&s.text),
                    cell(e.unchecked.as_deref().unwrap_or("")),
                    self.cases_cell(e),
                    cell(e.note.as_deref().unwrap_or(""))
                );
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w, "## Cannot be observed over the wire\n");
        for (place, rows) in group(&[Status::Unobservable]) {
            let _ = writeln!(w, "### {place}\n");
            let _ = writeln!(w, "| sentence | why | note |\n|---|---|---|");
            for (s, e) in rows {
                let _ = writeln!(
                    w,
                    "| {}{} | {} | {} |",
                    rule(s),
                    cell(&s.text),
                    cell(e.unobservable.as_deref().unwrap_or("")),
                    cell(e.note.as_deref().unwrap_or(""))
                );
            }
            let _ = writeln!(w);
        }
        let _ = writeln!(w, "## Checked by cases\n");
        for (place, rows) in group(&[Status::Checked, Status::Partly]) {
            let _ = writeln!(w, "### {place}\n");
            let _ = writeln!(w, "| sentence | cases (targets) | note |\n|---|---|---|");
            for (s, e) in rows {
                let mut note = e.note.clone().unwrap_or_default();
                if e.status() == Status::Partly {
                    if !note.is_empty() {
                        note.push(' ');
                    }
                    note.push_str("In part: see Not yet checked.");
                }
                let _ = writeln!(
                    w,
                    "| {}{} | {} | {} |",
                    rule(s),
                    cell(&s.text),
                    self.cases_cell(e),
                    cell(&note)
                );
            }
            let _ = writeln!(w);
        }
        let named: BTreeSet<&String> = self.rows.iter().flat_map(|(_, e)| e.cases.iter()).collect();
        let unnamed: Vec<(&String, &BTreeSet<Target>)> = self
            .cases
            .iter()
            .filter(|(id, _)| !named.contains(id))
            .collect();
        let _ = writeln!(w, "## Cases no traced sentence names\n");
        let _ = writeln!(
            w,
            "They check something no traced sentence states (Spark's semantics, a field of \
             definition.json, a sentence without a key word), or a sentence they cannot fail \
             for. {} of {}:\n",
            unnamed.len(),
            self.cases.len()
        );
        for (id, targets) in unnamed {
            let ts: Vec<&str> = targets.iter().map(|t| t.name()).collect();
            let _ = writeln!(w, "- `{id}` ({})", ts.join(", "));
        }
        out.trim_end().to_string() + "\n"
    }
}

/// `--write-coverage-md PATH` (`write`) or `--check-coverage-md PATH`: the exit status, with
/// each fault of the map on stderr. Errors reading or writing PATH are `Err`.
pub fn run(path: &std::path::Path, write: bool) -> Result<std::process::ExitCode, String> {
    use std::io::Write as _;
    use std::process::ExitCode;
    let matrix = match matrix() {
        Ok(m) => m,
        Err(problems) => {
            for p in &problems {
                eprintln!("{p}");
            }
            eprintln!(
                "conformance/coverage.json: {} problem(s); see the module doc of coverage.rs or \
                 COVERAGE.md's \"How to update\"",
                problems.len()
            );
            return Ok(ExitCode::from(1));
        }
    };
    let text = matrix.render();
    // The gaps are allowed, but counted and shown (in CI's log too).
    // Through `write!`, not `println!`: a closed standard output (`| head`) is not a panic.
    let _ = writeln!(
        std::io::stdout().lock(),
        "coverage: {} sentences: {} checked by cases, {} in part, {} not yet checked, {} cannot \
         be observed over the wire",
        matrix.rows.len(),
        matrix.count(Status::Checked),
        matrix.count(Status::Partly),
        matrix.count(Status::Unchecked),
        matrix.count(Status::Unobservable)
    );
    if write {
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let on_disk = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if on_disk == text {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "{} is stale: run sparkwire-conformance --write-coverage-md {}",
        path.display(),
        path.display()
    );
    Ok(ExitCode::from(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "\
# Title

The key words MUST, MUST NOT, SHOULD and MAY are used as in RFC 2119.

## 2. Frames

A receiver MUST refuse a frame over the limit. It is a nice protocol. A sender SHOULD NOT
write one: it reports the error.

```
A MUST inside a code block is not a sentence.
```

- The value is read whole.
- A decoder skips keys it does not
  know, and reads on.

A peer MAY close the connection. The answer has the key `refused`.
Example: a frame that MUST be refused.
Bytes after the value are `TrailingBytes`.

| key | what |
|---|---|
| `magic` | exactly `sparkwire` |
| `magic` | exactly `sparkwire` |
| `id` | the peer's id |

### 2.1 Sizes

An encoder uses the shortest form. Nothing here is normative.

## 12. Checklist

- [ ] Refuse bytes after the value: a decoder MUST do so.
";

    fn texts(doc: &str, text: &str) -> Vec<(String, String)> {
        extract(doc, text)
            .into_iter()
            .map(|s| (s.section, s.text))
            .collect()
    }

    #[test]
    fn the_extractor_keeps_must_should_and_duty_sentences_of_prose_lists_and_tables() {
        let got = texts("SPEC", DOC);
        let want: Vec<(String, String)> = [
            ("2", "A receiver MUST refuse a frame over the limit."),
            ("2", "A sender SHOULD NOT write one: it reports the error."),
            ("2", "A decoder skips keys it does not know, and reads on."),
            ("2", "Bytes after the value are `TrailingBytes`."),
            ("2", "`magic` | exactly `sparkwire`"),
        ]
        .iter()
        .map(|(s, t)| (s.to_string(), t.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_extractor_ignores_code_blocks_the_rfc_sentence_may_examples_and_code_spans() {
        let all: Vec<String> = texts("SPEC", DOC).into_iter().map(|(_, t)| t).collect();
        let joined = all.join("\n");
        assert!(!joined.contains("inside a code block"), "{joined}");
        assert!(!joined.contains("RFC 2119"), "{joined}");
        assert!(
            !joined.contains("MAY close"),
            "a MAY grants a choice: {joined}"
        );
        assert!(
            !joined.contains("Example"),
            "examples are not requirements: {joined}"
        );
        assert!(
            !joined.contains("the key `refused`"),
            "a key word inside a code span is a name, not a duty: {joined}"
        );
        assert!(!joined.contains("nice protocol"), "{joined}");
        assert!(
            !joined.contains("shortest form"),
            "a sentence without a key word is not normative: {joined}"
        );
        assert!(
            !joined.contains("Refuse bytes"),
            "SPEC §12, the checklist, is skipped: {joined}"
        );
        // The same text in another document is not skipped: only SPEC's §12 is.
        assert!(texts("handshake", DOC)
            .iter()
            .any(|(s, t)| s == "12" && t.contains("a decoder MUST do so")));
    }

    #[test]
    fn the_extractor_takes_every_rule_row_of_rules_md_whatever_its_words() {
        let rules = "\
# Validator rules

## Workers

| id | slug | rule |
|---|---|---|
| W1 | `worker.register-first` | A worker sends RegisterWorker first. |
| W2 | `worker.id` | Heartbeats carry the id \\| registered. |

Legal orders are never flagged. The validator is fast.
";
        let got = extract("rules", rules);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(
            got[0].rule,
            Some(("W1".to_string(), "worker.register-first".to_string()))
        );
        assert_eq!(got[0].text, "A worker sends RegisterWorker first.");
        assert_eq!(got[1].text, "Heartbeats carry the id | registered.");
        assert_eq!(got[2].place(), "rules §Workers");
        assert_eq!(got[2].text, "Legal orders are never flagged.");
    }

    #[test]
    fn words_in_quotations_are_someone_else_s_and_do_not_make_a_sentence_normative() {
        assert!(!is_normative(
            r#"Vectors: "64 nested containers: accepted", "65 nested containers: refused"."#
        ));
        assert!(!is_normative(
            r#"A4: SPEC.md §3, "an ask MUST be answered", and §8, "it answers"."#
        ));
        assert!(!is_normative(
            r#"N1: SPEC.md §8, "a frame that is `TooDeep` is refused"."#
        ));
        assert!(is_normative(
            r#"A decoder refuses the frame "65 nested containers"."#
        ));
        assert!(is_normative(
            r#"Bytes after "the value" are `TrailingBytes`."#
        ));
    }

    #[test]
    fn sentences_end_at_a_stop_before_a_capital_but_never_inside_a_code_span() {
        assert_eq!(
            sentences("One `a. B` two. Three (four). `Five` six? Seven"),
            vec!["One `a. B` two.", "Three (four).", "`Five` six?", "Seven"]
        );
        assert_eq!(
            sentences("e.g. the value 0.5. done"),
            vec!["e.g. the value 0.5. done"]
        );
    }

    fn ids(list: &[&str]) -> BTreeMap<String, BTreeSet<Target>> {
        list.iter()
            .map(|id| (id.to_string(), BTreeSet::from([Target::Master])))
            .collect()
    }

    fn map(json: &str) -> Mapping {
        Mapping::parse(json).expect("a well-formed map")
    }

    fn sample() -> Vec<Sentence> {
        extract("SPEC", DOC)
    }

    const FULL: &str = r#"{"entries": [
        {"key": "SPEC §2: A receiver MUST refuse a frame", "cases": ["spec/2/size-limit"]},
        {"key": "SPEC §2: A sender SHOULD NOT", "unobservable": "the sender's own caller"},
        {"key": "SPEC §2: A decoder skips keys", "cases": ["spec/4/skip"], "unchecked": "a key of another version"},
        {"key": "SPEC §2: Bytes after the value", "unchecked": "trailing bytes after an ask"},
        {"key": "SPEC §2: `magic` | exactly", "cases": ["handshake/5/2/bad-magic"], "note": "both tables"}
    ]}"#;

    #[test]
    fn a_complete_map_passes_and_counts_each_status() {
        let m = check(
            &sample(),
            &map(FULL),
            &ids(&[
                "spec/2/size-limit",
                "spec/4/skip",
                "handshake/5/2/bad-magic",
            ]),
        )
        .expect("complete");
        assert_eq!(m.rows.len(), 5);
        assert_eq!(m.count(Status::Checked), 2);
        assert_eq!(m.count(Status::Partly), 1);
        assert_eq!(m.count(Status::Unchecked), 1);
        assert_eq!(m.count(Status::Unobservable), 1);
        let md = m.render();
        let not_yet = &md[md.find("## Not yet checked").expect("section")
            ..md.find("## Cannot be observed").expect("section")];
        assert!(not_yet.contains("trailing bytes after an ask"), "{not_yet}");
        assert!(not_yet.contains("a key of another version"), "{not_yet}");
        assert!(!not_yet.contains("A receiver MUST refuse"), "{not_yet}");
        assert!(md.contains("| all | 5 | 2 | 1 | 1 | 1 |"), "{md}");
    }

    #[test]
    fn an_unmapped_sentence_fails_with_a_key_that_names_it() {
        let mut json: serde_json::Value = serde_json::from_str(FULL).expect("json");
        json["entries"].as_array_mut().expect("entries").remove(0);
        let mapping: Mapping = serde_json::from_value(json).expect("map");
        let all = sample();
        let problems = check(
            &all,
            &mapping,
            &ids(&[
                "spec/2/size-limit",
                "spec/4/skip",
                "handshake/5/2/bad-magic",
            ]),
        )
        .expect_err("a sentence is unmapped");
        let [Problem::Unmapped {
            sentence,
            suggested_key,
        }] = problems.as_slice()
        else {
            panic!("{problems:?}")
        };
        assert_eq!(
            sentence.text,
            "A receiver MUST refuse a frame over the limit."
        );
        assert_eq!(suggested_key, "SPEC §2: A receiver MUST refuse a frame");
        // The suggested key names that sentence and no other.
        let key = parse_key(suggested_key).expect("a key");
        assert_eq!(all.iter().filter(|s| matches(&key, s)).count(), 1);
    }

    #[test]
    fn a_case_id_that_does_not_exist_fails() {
        let problems = check(
            &sample(),
            &map(FULL),
            &ids(&["spec/2/size-limit", "handshake/5/2/bad-magic"]),
        )
        .expect_err("spec/4/skip does not exist");
        assert_eq!(
            problems,
            vec![Problem::UnknownCase {
                key: "SPEC §2: A decoder skips keys".into(),
                case: "spec/4/skip".into()
            }]
        );
    }

    #[test]
    fn a_mapping_whose_sentence_changed_or_went_fails_as_stale() {
        // The document's sentence now says "a frame larger than" where the quote has
        // "a frame over": the entry no longer names it, and the sentence is unmapped.
        let edited = DOC.replace(
            "A receiver MUST refuse a frame over the limit.",
            "A receiver MUST refuse any frame larger than the limit.",
        );
        let problems = check(
            &extract("SPEC", &edited),
            &map(FULL),
            &ids(&[
                "spec/2/size-limit",
                "spec/4/skip",
                "handshake/5/2/bad-magic",
            ]),
        )
        .expect_err("stale");
        assert!(
            problems.contains(&Problem::Stale {
                key: "SPEC §2: A receiver MUST refuse a frame".into()
            }),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| matches!(p, Problem::Unmapped { sentence, .. } if sentence.text.contains("any frame larger"))),
            "{problems:?}"
        );
        // A sentence that went leaves its entry stale too, and so does a section renumbered.
        let renumbered = DOC.replace("## 2. Frames", "## 3. Frames");
        let problems = check(
            &extract("SPEC", &renumbered),
            &map(FULL),
            &ids(&[
                "spec/2/size-limit",
                "spec/4/skip",
                "handshake/5/2/bad-magic",
            ]),
        )
        .expect_err("stale");
        assert_eq!(
            problems
                .iter()
                .filter(|p| matches!(p, Problem::Stale { .. }))
                .count(),
            5,
            "{problems:?}"
        );
    }

    #[test]
    fn ambiguous_keys_sentences_named_twice_and_entries_without_a_verdict_fail() {
        let json = r#"{"entries": [
            {"key": "SPEC §2: A", "cases": ["x"]},
            {"key": "SPEC §2: A receiver MUST", "cases": ["x"]},
            {"key": "SPEC §2: A receiver MUST refuse", "unchecked": "y"},
            {"key": "SPEC §2: Bytes after the value", "note": "no verdict"},
            {"key": "SPEC §2: `magic` | exactly", "cases": ["x"], "unobservable": "z"},
            {"key": "no section here", "cases": ["x"]}
        ]}"#;
        let problems = check(&sample(), &map(json), &ids(&["x"])).expect_err("faults");
        let has = |f: &dyn Fn(&Problem) -> bool| problems.iter().any(f);
        assert!(
            has(&|p| matches!(p, Problem::Ambiguous { key, .. } if key == "SPEC §2: A")),
            "{problems:?}"
        );
        assert!(
            has(&|p| matches!(p, Problem::NamedTwice { keys, .. } if keys.len() == 2)),
            "{problems:?}"
        );
        assert!(
            has(
                &|p| matches!(p, Problem::BadEntry { key, .. } if key == "SPEC §2: Bytes after the value")
            ),
            "{problems:?}"
        );
        assert!(
            has(
                &|p| matches!(p, Problem::BadEntry { key, .. } if key == "SPEC §2: `magic` | exactly")
            ),
            "{problems:?}"
        );
        assert!(
            has(&|p| matches!(p, Problem::BadEntry { key, .. } if key == "no section here")),
            "{problems:?}"
        );
    }

    #[test]
    fn an_extra_entry_traces_a_sentence_the_rule_misses_and_only_such_a_sentence() {
        let all = extract_all("SPEC", DOC);
        let shortest = all
            .iter()
            .find(|s| s.text.contains("shortest form"))
            .expect("the sentence is extracted");
        assert!(!shortest.normative);
        let mut json: serde_json::Value = serde_json::from_str(FULL).expect("json");
        let entries = json["entries"].as_array_mut().expect("entries");
        entries.push(serde_json::json!({
            "key": "SPEC §2.1: An encoder uses the shortest form",
            "extra": true,
            "cases": ["spec/2/size-limit"]
        }));
        let mapping: Mapping = serde_json::from_value(json.clone()).expect("map");
        let known = ids(&[
            "spec/2/size-limit",
            "spec/4/skip",
            "handshake/5/2/bad-magic",
        ]);
        let m = check(&all, &mapping, &known).expect("complete");
        assert_eq!(m.rows.len(), 6);
        assert!(m
            .render()
            .contains("*(added)* An encoder uses the shortest form."));
        // Without `extra`, the key names no normative sentence: stale.
        json["entries"][5]["extra"] = serde_json::Value::Bool(false);
        let mapping: Mapping = serde_json::from_value(json.clone()).expect("map");
        let problems = check(&all, &mapping, &known).expect_err("stale");
        assert!(
            matches!(problems.as_slice(), [Problem::Stale { .. }]),
            "{problems:?}"
        );
        // `extra` on a sentence the rule keeps is refused.
        json["entries"][5]["key"] = serde_json::Value::from("SPEC §2: Bytes after the value are");
        json["entries"][5]["extra"] = serde_json::Value::Bool(true);
        let mapping: Mapping = serde_json::from_value(json).expect("map");
        let problems = check(&all, &mapping, &known).expect_err("not extra");
        assert!(
            problems.iter().any(
                |p| matches!(p, Problem::BadEntry { why, .. } if why.contains("already keeps"))
            ),
            "{problems:?}"
        );
    }

    #[test]
    fn a_map_with_an_unknown_field_is_refused() {
        assert!(Mapping::parse(r#"{"entries": [{"key": "SPEC §2: A", "case": ["x"]}]}"#).is_err());
    }

    #[test]
    fn the_protocol_documents_are_mapped_completely_to_cases_that_exist() {
        let m = matrix().unwrap_or_else(|problems| {
            panic!(
                "conformance/coverage.json does not map protocol/*.md (run sparkwire-conformance \
                 --write-coverage-md conformance/COVERAGE.md):\n{}",
                problems
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
        // Every rule id of rules.md is in the matrix.
        let rules = extract("rules", DOCUMENTS[2].2);
        let rule_ids = rules.iter().filter(|s| s.rule.is_some()).count();
        assert!(rule_ids >= 50, "{rule_ids} rules");
        assert_eq!(
            m.rows.iter().filter(|(s, _)| s.rule.is_some()).count(),
            rule_ids
        );
        assert!(
            include_str!("../../COVERAGE.md") == m.render(),
            "conformance/COVERAGE.md is stale: run `cargo run -p sparkwire-conformance -- \
             --write-coverage-md conformance/COVERAGE.md`"
        );
    }
}
