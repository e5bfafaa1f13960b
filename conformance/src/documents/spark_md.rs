//! `conformance/SPARK.md`: the suite's verdict on real Spark (4.0.1 and 3.0.3, master and worker
//! targets over Spark's own wire), rendered from the stored results of those runs
//! (`conformance/spark/RELEASE-TARGET.json`, written by `scripts/spark/conformance.sh`). The runs
//! need real Spark; the rendering does not, so CI checks the file is fresh from the stored results.
//!
//! Every failure must end somewhere (issue 27): a case that fails on real Spark is rendered only
//! when [`resolution`] names the deviation of SPEC §15.4 that explains it; a failure without one
//! is an error, so neither the file nor its check can pass over it.
//!
//! The interop matrix (release × check, one table) is rendered from
//! `conformance/spark/matrix/RELEASE.json`, written by `scripts/spark/matrix.sh` per release: a
//! real worker and a PySpark application on a sparkwire master, `sparkwire worker --spark-home`
//! running that release's executors, the suite's master and worker targets against real Spark of
//! that release (each failing case with its SPEC §15.4 row), and decode plus round trip of the
//! release's captures.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::harness::verdict::Target;

/// The Spark releases judged, newest first.
pub const RELEASES: [&str; 2] = ["4.0.1", "3.0.3"];

/// The targets judged on real Spark.
pub const TARGETS: [Target; 2] = [Target::Master, Target::Worker];

/// One case's verdict in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `pass`, `fail`, `non-strict`, `skipped`, `unimplemented`.
    pub verdict: String,
    /// Milliseconds the case took.
    pub millis: u64,
}

/// One stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The Spark release.
    pub release: String,
    /// The target.
    pub target: Target,
    /// Seconds the whole run took.
    pub wall_seconds: f64,
    /// Verdicts by case id.
    pub cases: BTreeMap<String, Verdict>,
}

/// The file a run is stored in, in `dir`.
pub fn result_path(dir: &Path, release: &str, target: Target) -> std::path::PathBuf {
    dir.join(format!("{release}-{}.json", target.name()))
}

/// Reads a run stored as the suite's JSON report (`--json`; the wire logs may be left out).
pub fn parse_run(release: &str, target: Target, text: &str) -> Result<Run, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let wall_seconds = v["wall_seconds"]
        .as_f64()
        .ok_or("no wall_seconds in the report")?;
    let mut cases = BTreeMap::new();
    for c in v["cases"].as_array().ok_or("no cases in the report")? {
        let id = c["id"].as_str().ok_or("a case without id")?;
        let verdict = c["verdict"].as_str().ok_or("a case without verdict")?;
        let millis = c["millis"].as_u64().unwrap_or(0);
        cases.insert(
            id.to_string(),
            Verdict {
                verdict: verdict.to_string(),
                millis,
            },
        );
    }
    Ok(Run {
        release: release.to_string(),
        target,
        wall_seconds,
        cases,
    })
}

/// Every run stored in `dir` (a release and target without a file was not run).
pub fn load(dir: &Path) -> Result<Vec<Run>, String> {
    let mut runs = Vec::new();
    for release in RELEASES {
        for target in TARGETS {
            let path = result_path(dir, release, target);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            runs.push(
                parse_run(release, target, &text)
                    .map_err(|e| format!("{}: {e}", path.display()))?,
            );
        }
    }
    Ok(runs)
}

/// One release's row of the interop matrix: its checks as `scripts/spark/matrix.sh` stored them.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRow {
    /// The Spark release.
    pub release: String,
    /// The checks by key ([`MATRIX_CHECKS`]).
    pub checks: serde_json::Map<String, serde_json::Value>,
}

/// The matrix's columns: the key a check is stored under and its heading.
pub const MATRIX_CHECKS: [(&str, &str); 6] = [
    ("worker", "real worker registers"),
    ("application", "PySpark app: JVM and Python jobs"),
    ("sparkwire-worker", "`sparkwire worker --spark-home`"),
    ("conformance-master", "suite vs real master"),
    ("conformance-worker", "suite vs real worker"),
    ("decode", "decode + round trip of its captures"),
];

/// A release name's numbers, for ordering (`3.10.0` after `3.9.0`).
fn release_key(name: &str) -> Vec<u64> {
    name.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// Every row stored in `dir/matrix/` (`RELEASE.json`), newest release first; none when the
/// directory is missing.
pub fn load_matrix(dir: &Path) -> Result<Vec<MatrixRow>, String> {
    let dir = dir.join("matrix");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(Vec::new());
    };
    let mut rows = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        rows.push(parse_matrix_row(&text).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    rows.sort_by_key(|r| std::cmp::Reverse(release_key(&r.release)));
    Ok(rows)
}

/// Reads one stored row (`{"release": …, "checks": {…}}`).
pub fn parse_matrix_row(text: &str) -> Result<MatrixRow, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let release = v["release"].as_str().ok_or("no release")?.to_string();
    let checks = v["checks"].as_object().ok_or("no checks")?.clone();
    Ok(MatrixRow { release, checks })
}

/// One cell of the matrix; an error for a conformance failure no SPEC §15.4 row explains.
fn matrix_cell(release: &str, key: &str, v: Option<&serde_json::Value>) -> Result<String, String> {
    let Some(v) = v else {
        return Ok("not run".into());
    };
    let n = |f: &str| v[f].as_u64().unwrap_or(0);
    Ok(match key {
        "conformance-master" | "conformance-worker" => {
            if let Some(e) = v["error"].as_str() {
                return Ok(format!("**NOT RUN**: {e}"));
            }
            let mut rows: BTreeMap<&str, usize> = BTreeMap::new();
            let mut unresolved = Vec::new();
            for id in v["failures"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
            {
                match resolution(release, id) {
                    Some(r) => *rows.entry(r).or_default() += 1,
                    None => unresolved.push(format!("{release} {key} {id}")),
                }
            }
            if !unresolved.is_empty() {
                return Err(unresolved.join("\n"));
            }
            let failed = n("fail") + n("nonStrict");
            let why: Vec<String> = rows.iter().map(|(r, k)| format!("{r} ×{k}")).collect();
            // A verdict summed up from a full run kept in conformance/spark/, not run by the script.
            let stored = match v["source"].as_str() {
                Some(s) if s != "this run" => format!("; stored run `{s}`"),
                _ => String::new(),
            };
            if failed == 0 {
                format!(
                    "pass: {} cases ({} skipped{stored})",
                    n("pass"),
                    n("skipped")
                )
            } else {
                format!(
                    "{} pass, {failed} fail: SPEC §15.4 {} ({} skipped{stored})",
                    n("pass"),
                    why.join(", "),
                    n("skipped")
                )
            }
        }
        "decode" => {
            // Every violation's kind (as matrix.sh counts them) under the SPEC §15.4 row that
            // explains it on this release; a kind no row explains, violations not counted by
            // kind (a row stored before kinds were), or a capture failing with no violation of
            // its own fail the cell.
            let mut rows: BTreeMap<&str, u64> = BTreeMap::new();
            let mut unexplained: Vec<String> = Vec::new();
            let mut counted = 0;
            for (kind, count) in v["violationKinds"].as_object().into_iter().flatten() {
                let count = count.as_u64().unwrap_or(0);
                counted += count;
                match decode_resolution(release, kind) {
                    Some(r) => *rows.entry(r).or_default() += count,
                    None => unexplained.push(format!("{kind} ×{count}")),
                }
            }
            if n("violations") > counted {
                unexplained.push(format!("{} not told by kind", n("violations") - counted));
            }
            let other_failures = match v.get("failedOtherwise") {
                Some(f) => f.as_array().map_or(0, Vec::len),
                // A row stored before failures were told apart: any failed capture.
                None => v["failedCaptures"].as_array().map_or(0, Vec::len),
            };
            let explained: Vec<String> = rows
                .iter()
                .map(|(r, k)| format!("SPEC §15.4 {r} ×{k}"))
                .collect();
            let mut text = format!(
                "{} captures, {} frames: {} not decoded, {} unknown classes, {} re-encoded differently, {} violations",
                n("captures"),
                n("frames"),
                n("notDecoded"),
                n("unknownClasses"),
                n("differ"),
                n("violations")
            );
            if !explained.is_empty() {
                let _ = write!(text, " ({})", explained.join(", "));
            }
            if !unexplained.is_empty() {
                let _ = write!(
                    text,
                    "; not explained: {}",
                    unexplained.join("; ").replace('|', "\\|")
                );
            }
            if n("captures") == 0 {
                "no captures".into()
            } else if other_failures > 0
                || !unexplained.is_empty()
                || n("notDecoded") + n("unknownClasses") + n("differ") > 0
            {
                format!("**FAIL**: {text}")
            } else {
                format!("pass: {text}")
            }
        }
        _ => {
            let detail = v["detail"].as_str().unwrap_or_default().replace('|', "\\|");
            if v["ok"].as_bool() == Some(true) {
                "pass".into()
            } else {
                format!("**FAIL**: {detail}")
            }
        }
    })
}

/// The interop matrix section of SPARK.md (empty without rows); an error names every
/// conformance failure no SPEC §15.4 row explains.
pub fn render_matrix(rows: &[MatrixRow]) -> Result<String, String> {
    let mut out = String::new();
    if rows.is_empty() {
        return Ok(out);
    }
    let _ = writeln!(
        out,
        "## The interop matrix
"
    );
    let _ = writeln!(
        out,
        "Made by `scripts/spark/matrix.sh [RELEASE…]` (stored per release in `conformance/spark/matrix/RELEASE.json`), \
         one release at a time against real Spark from PyPI: a real worker of the release registers with a \
         sparkwire master told no release, a PySpark application of it runs a JVM job and a Python job to the \
         right results, `sparkwire worker --spark-home` of it runs its executors (`scripts/spark/lane.sh`), the \
         suite's master and worker targets judge real Spark of it (`scripts/spark/conformance.sh`; each failure \
         counted under the SPEC §15.4 row that explains it), and `sparkwire spark decode --check-roundtrip` reads \
         its captures (`tests/data/spark/RELEASE/`) with no release given (each violation the validator finds \
         counted under the SPEC §15.4 row that explains it on that release; one no row explains fails the check).\n"
    );
    let mut header = String::from("| release |");
    let mut rule = String::from("|---|");
    for (_, title) in MATRIX_CHECKS {
        let _ = write!(header, " {title} |");
        rule.push_str("---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    let mut unresolved = Vec::new();
    let mut newest_first: Vec<&MatrixRow> = rows.iter().collect();
    newest_first.sort_by_key(|r| std::cmp::Reverse(release_key(&r.release)));
    for r in newest_first {
        let mut line = format!("| {} |", r.release);
        for (key, _) in MATRIX_CHECKS {
            match matrix_cell(&r.release, key, r.checks.get(key)) {
                Ok(c) => {
                    let _ = write!(line, " {c} |");
                }
                Err(e) => unresolved.push(e),
            }
        }
        let _ = writeln!(out, "{line}");
    }
    if !unresolved.is_empty() {
        return Err(format!(
            "failures on real Spark with no resolution (change the spec or add the deviation to SPEC §15.4 and to spark_md::resolution):\n{}",
            unresolved.join("\n")
        ));
    }
    out.push('\n');
    Ok(out)
}

/// SPARK.md from the stored runs and matrix rows in `dir` (`conformance/spark`).
pub fn render_dir(dir: &Path) -> Result<String, String> {
    let mut out = render(&load(dir)?, &load_matrix(dir)?)?;
    out.push_str(&super::spark_auth_md::render(&super::spark_auth_md::load(
        dir,
    )?)?);
    Ok(out)
}

/// The deviation of SPEC §15.4 that explains why real Spark `release` fails case `id`, if one
/// does: most rows hold on every release, some (S8) only on the releases that differ there.
pub fn resolution(release: &str, id: &str) -> Option<&'static str> {
    // S8: Spark 3.2 and 3.3 have version 1's fields, where ExecutorStateChanged is a send, but
    // their workers ask it and their masters take it only as an ask (`receiveAndReply`; their
    // `receive` has no case for it). The suite's worker asks it there as theirs do
    // (`kit::master::asks_executor_state`); what fails is the one case that sends it one-way as
    // version 1 says, against their master, and the one that wants it sent so, against their
    // worker.
    const ONLY_ON_3_2_AND_3_3: &[(&str, &str)] = &[
        ("flow/master/executor/state-send-v1", "S8"),
        ("flow/worker/executor/state-send-v1", "S8"),
    ];
    if ["3.2.", "3.3."].iter().any(|l| release.starts_with(l)) {
        if let Some((_, s)) = ONLY_ON_3_2_AND_3_3.iter().find(|(i, _)| *i == id) {
            return Some(s);
        }
    }
    const RESOLVED: &[(&str, &str)] = &[
        ("route/deploy/", "S1"),
        ("rules/M3/", "S1"),
        ("rules/W1/register-first", "S2"),
        ("rules/P1/", "S2"),
        ("rules/W2/", "S2"),
        ("rules/P2/", "S2"),
        ("spec/14.2/Z1/", "S2"),
        ("spec/14.2/Z4/kill-driver-other-connection", "S2"),
        ("spec/14.2/Z2/heartbeat-other-connection", "S2"),
        ("spec/14.2/Z2/latest-state-other-connection", "S2"),
        ("spec/14.2/Z2/decommissioning-other-connection", "S2"),
        ("spec/14.2/Z2/scheduler-state-other-connection", "S2"),
        ("spec/14.2/Z2/second-worker-not-registered", "S2"),
        ("spec/14.2/Z3/executor-state-other-worker", "S2"),
        ("spec/14.2/Z3/driver-state-other-worker", "S2"),
        ("spec/14.2/Z5/", "S2"),
        ("spec/14.3/refused-send-loses-", "S2"),
        ("spec/14.3/refused-creates-nothing", "S1"),
        ("spec/14.3/failure-form", "S1"),
        ("spec/14.4/redaction", "S6"),
        // The case waits for the application RUNNING in the state answer, whose state Spark's
        // ApplicationInfo never sends (`@transient`).
        ("spec/16/nil-while-running", "S3"),
        ("flow/worker/executor/not-allowed", "S4"),
        ("flow/worker/ui/state", "S5"),
    ];
    RESOLVED
        .iter()
        .find(|(prefix, _)| id.starts_with(prefix))
        .map(|(_, s)| *s)
}

/// The deviation of SPEC §15.4 that explains a violation of kind `kind` (as
/// `scripts/spark/matrix.sh` writes it: `MESSAGE [RULE name]: expected TEXT`, ids as `…`) found
/// by the validator in a capture of Spark `release`, if one does.
pub fn decode_resolution(release: &str, kind: &str) -> Option<&'static str> {
    // S8: Spark 3.2 and 3.3 ask ExecutorStateChanged, which version 1 (their fields') sends: the
    // asks (M3), their Boolean answers (A2), the ExecutorUpdated that follow a state a reader of
    // version 1 did not take (E5) and the state it therefore never took in time (L1).
    let line_3_2_or_3_3 = ["3.2.", "3.3."].iter().any(|l| release.starts_with(l));
    let s8 = kind
        .starts_with("ExecutorStateChanged [M3 route.kind]: expected ExecutorStateChanged as a send, found it as a ask")
        || kind.contains("(bool) [A2 ask.reply-pending]: expected a reply to an ask of")
        || kind.contains("[E5 executor.updated-matches]: expected no update: the worker reported no new state")
        || kind.contains("[L1 timed.executor-state]: expected an ExecutorStateChanged for");
    (line_3_2_or_3_3 && s8).then_some("S8")
}

/// A stored run's verdicts held against a fresh run of the same release and target (what
/// `scripts/spark/conformance.sh --check` asks, through `--compare-spark-results`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// `RELEASE-TARGET: ID: stored X, now Y`, for every case whose verdict changed, or that the
    /// stored run has and the fresh one lacks: each fails the check.
    pub changed: Vec<String>,
    /// `RELEASE-TARGET: ID`, for every case of the fresh run that the stored run has no verdict
    /// for: a case added since real Spark last ran. It is "not yet run on Spark" and fails
    /// nothing, so that adding a case needs no JVM.
    pub not_yet_run: Vec<String>,
}

/// Holds `fresh` against `stored` (`None`: that release and target were never stored), verdicts
/// only, since the times differ from run to run.
pub fn compare(stored: Option<&Run>, fresh: &Run) -> Comparison {
    let name = format!("{}-{}", fresh.release, fresh.target.name());
    let mut out = Comparison::default();
    for (id, now) in &fresh.cases {
        match stored.and_then(|s| s.cases.get(id)) {
            None => out.not_yet_run.push(format!("{name}: {id}")),
            Some(then) if then.verdict != now.verdict => out.changed.push(format!(
                "{name}: {id}: stored {}, now {}",
                then.verdict, now.verdict
            )),
            Some(_) => {}
        }
    }
    for (id, then) in stored.map(|s| &s.cases).into_iter().flatten() {
        if !fresh.cases.contains_key(id) {
            out.changed
                .push(format!("{name}: {id}: stored {}, now none", then.verdict));
        }
    }
    out
}

/// [`compare`] for every fresh run in `fresh_dir` against the stored ones in `stored_dir`.
pub fn compare_dirs(stored_dir: &Path, fresh_dir: &Path) -> Result<Comparison, String> {
    let stored = load(stored_dir)?;
    let fresh = load(fresh_dir)?;
    let (mut out, authenticated) = super::spark_auth_md::compare_dirs(stored_dir, fresh_dir)?;
    if fresh.is_empty() && authenticated == 0 {
        return Err(format!(
            "{}: no run of real Spark in it",
            fresh_dir.display()
        ));
    }
    for run in &fresh {
        let then = stored
            .iter()
            .find(|s| s.release == run.release && s.target == run.target);
        let one = compare(then, run);
        out.changed.extend(one.changed);
        out.not_yet_run.extend(one.not_yet_run);
    }
    Ok(out)
}

/// The cases of `target` that no stored run of it has a verdict for, in report order.
fn not_yet_run(target: Target, of: &[&Run]) -> Vec<String> {
    crate::cases(target)
        .into_iter()
        .map(|c| c.id)
        .filter(|id| of.iter().all(|r| !r.cases.contains_key(id)))
        // Their verdicts are those of the authenticated runs (`super::spark_auth_md`).
        .filter(|id| !id.starts_with(super::spark_auth_md::PREFIX))
        .collect()
}

fn cell(v: Option<&Verdict>, in_suite: bool) -> String {
    match v {
        None if in_suite => "not yet run".into(),
        None => "—".into(),
        Some(v) if v.verdict == "skipped" => "skipped".into(),
        Some(v) if v.verdict == "pass" => format!("pass ({} ms)", v.millis),
        Some(v) => format!("**{}** ({} ms)", v.verdict.to_uppercase(), v.millis),
    }
}

/// The text of SPARK.md for `runs` and the interop `matrix`; an error names every failure
/// [`resolution`] does not explain.
pub fn render(runs: &[Run], matrix: &[MatrixRow]) -> Result<String, String> {
    let matrix = render_matrix(matrix)?;
    let mut unresolved = Vec::new();
    for r in runs {
        for (id, v) in &r.cases {
            if matches!(v.verdict.as_str(), "fail" | "non-strict")
                && resolution(&r.release, id).is_none()
            {
                unresolved.push(format!("{} {} {id}", r.release, r.target));
            }
        }
    }
    if !unresolved.is_empty() {
        return Err(format!(
            "failures on real Spark with no resolution (change the spec or add the deviation to SPEC §15.4 and to spark_md::resolution):\n{}",
            unresolved.join("\n")
        ));
    }
    let mut out = String::new();
    let _ = writeln!(out, "# The conformance suite's verdict on real Spark\n");
    let _ = writeln!(
        out,
        "Generated by `sparkwire-conformance --write-spark-md conformance/SPARK.md --spark-results conformance/spark` \
         from the stored runs in `conformance/spark/` (one JSON report per release and target, made by \
         `scripts/spark/conformance.sh`, which needs real Spark); CI checks it is fresh (`--check-spark-md`). \
         Do not edit by hand.\n"
    );
    let _ = writeln!(
        out,
        "Each run is `sparkwire-conformance --wire spark --spark-release RELEASE --target TARGET`: the suite \
         speaks Spark's own RPC (SPEC §15) to a real Spark master (started by the script, `spark.worker.timeout=4`, \
         `--worker-timeout 4`) or plays the master to real Spark workers it starts itself (one per case, \
         `spark.worker.timeout=2`, `spark.decommission.enabled=true` so that DecommissionWorker is taken). Cases about \
         sparkwire's own framing, handshake and authentication are skipped with \"not on Spark's wire\"; a failure is \
         resolved by a deviation of SPEC §15.4, named in the last column.\n"
    );
    out.push_str(&matrix);
    if !matrix.is_empty() {
        let _ = writeln!(out, "## Every case on Spark 4.0.1 and 3.0.3\n");
    }
    let _ = writeln!(
        out,
        "| release | target | pass | fail | non-strict | skipped | with a verdict | wall time |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for r in runs {
        let count = |v: &str| r.cases.values().filter(|c| c.verdict == v).count();
        let (pass, failed, ns) = (count("pass"), count("fail"), count("non-strict"));
        let skipped = count("skipped") + count("unimplemented");
        let _ = writeln!(
            out,
            "| {} | {} | {pass} | {failed} | {ns} | {skipped} | {} | {:.0} s |",
            r.release,
            r.target,
            pass + failed + ns,
            r.wall_seconds
        );
    }
    for target in TARGETS {
        let of: Vec<&Run> = runs.iter().filter(|r| r.target == target).collect();
        if of.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n## Target `{target}`\n");
        let mut header = String::from("| case |");
        let mut rule = String::from("|---|");
        for r in &of {
            let _ = write!(header, " Spark {} |", r.release);
            rule.push_str("---|");
        }
        header.push_str(" resolution |");
        rule.push_str("---|");
        let _ = writeln!(out, "{header}\n{rule}");
        let mut ids: Vec<&String> = Vec::new();
        for c in crate::cases(target) {
            if let Some(id) = of
                .iter()
                .find_map(|r| r.cases.get_key_value(&c.id).map(|(k, _)| k))
            {
                ids.push(id);
            }
        }
        for r in &of {
            for id in r.cases.keys() {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        let suite: Vec<String> = crate::cases(target).into_iter().map(|c| c.id).collect();
        for id in ids {
            let mut line = format!("| `{id}` |");
            // The rows that explain the failures of this case, each once, in the runs' order.
            let mut rows: Vec<&str> = Vec::new();
            for r in &of {
                let v = r.cases.get(id);
                if v.is_some_and(|v| matches!(v.verdict.as_str(), "fail" | "non-strict")) {
                    if let Some(s) = resolution(&r.release, id) {
                        if !rows.contains(&s) {
                            rows.push(s);
                        }
                    }
                }
                let _ = write!(line, " {} |", cell(v, suite.contains(id)));
            }
            let res = if rows.is_empty() {
                String::new()
            } else {
                format!("SPEC §15.4 {}", rows.join(", "))
            };
            let _ = writeln!(out, "{line} {res} |");
        }
        let missing = not_yet_run(target, &of);
        if !missing.is_empty() {
            let _ = writeln!(
                out,
                "\n### Not yet run on Spark\n\nCases of target `{target}` with no stored verdict on real Spark: \
                 added since `scripts/spark/conformance.sh` last ran. Its `--check` (CI) passes over them; \
                 the next full run of the script stores their verdicts.\n"
            );
            for id in missing {
                let _ = writeln!(out, "- `{id}`");
            }
        }
    }
    Ok(out)
}

/// Whether SPARK.md as stored (`on_disk`) differs from its fresh rendering (`fresh`) only by
/// cases added to the suite since it was written: lines `` - `ID` `` of a "Not yet run on Spark"
/// list that `on_disk` lacks. Such a SPARK.md is not stale for `--check-spark-md`, so that adding
/// a case needs no JVM and regenerates one file (CASES.md); any other difference, a verdict above
/// all, still is.
pub fn differs_only_by_new_cases(on_disk: &str, fresh: &str) -> bool {
    let known: std::collections::HashSet<&str> = on_disk.lines().collect();
    let mut in_list = false;
    let mut kept = Vec::new();
    for line in fresh.lines() {
        if line.starts_with('#') {
            in_list = line == "### Not yet run on Spark";
        }
        let new_case = in_list && line.starts_with("- `") && !known.contains(line);
        if !new_case {
            kept.push(line);
        }
    }
    kept.into_iter().eq(on_disk.lines())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(verdicts: &[(&str, &str)]) -> Run {
        let cases = verdicts
            .iter()
            .map(|(id, v)| {
                (
                    id.to_string(),
                    Verdict {
                        verdict: v.to_string(),
                        millis: 3,
                    },
                )
            })
            .collect();
        Run {
            release: "4.0.1".into(),
            target: Target::Master,
            wall_seconds: 12.0,
            cases,
        }
    }

    #[test]
    fn a_failure_without_a_resolution_is_refused_and_one_with_is_rendered_with_it() {
        let e = render(&[run(&[("flow/master/app/registered", "fail")])], &[]).unwrap_err();
        assert!(e.contains("4.0.1 master flow/master/app/registered"), "{e}");
        let text = render(
            &[run(&[
                ("route/deploy/RegisterWorker", "fail"),
                ("flow/master/app/registered", "pass"),
                ("handshake/4/accepted", "skipped"),
            ])],
            &[],
        )
        .expect("renders");
        assert!(
            text.contains("| `route/deploy/RegisterWorker` | **FAIL** (3 ms) | SPEC §15.4 S1 |"),
            "{text}"
        );
        assert!(
            text.contains("| `flow/master/app/registered` | pass (3 ms) |  |"),
            "{text}"
        );
        assert!(
            text.contains("| 4.0.1 | master | 1 | 1 | 0 | 1 | 2 | 12 s |"),
            "{text}"
        );
    }

    #[test]
    fn a_new_case_is_not_yet_run_and_only_a_changed_or_lost_verdict_fails_the_check() {
        let stored = run(&[("a", "pass"), ("b", "fail"), ("c", "skipped")]);
        let same = compare(
            Some(&stored),
            &run(&[("a", "pass"), ("b", "fail"), ("c", "skipped")]),
        );
        assert_eq!(same, Comparison::default());
        let fresh = run(&[("a", "pass"), ("b", "pass"), ("new", "fail")]);
        let c = compare(Some(&stored), &fresh);
        assert_eq!(
            c.changed,
            [
                "4.0.1-master: b: stored fail, now pass",
                "4.0.1-master: c: stored skipped, now none"
            ]
        );
        assert_eq!(c.not_yet_run, ["4.0.1-master: new"]);
        let never = compare(None, &fresh);
        assert!(never.changed.is_empty(), "{never:?}");
        assert_eq!(never.not_yet_run.len(), 3);
    }

    #[test]
    fn a_case_of_the_suite_without_a_stored_verdict_is_listed_as_not_yet_run() {
        let text = render(&[run(&[("flow/master/app/registered", "pass")])], &[]).expect("renders");
        let (_, list) = text
            .split_once("### Not yet run on Spark")
            .expect("a list of the cases not yet run");
        assert!(list.contains("- `handshake/4/accepted`\n"), "{list}");
        assert!(!list.contains("flow/master/app/registered"), "{list}");
        let mut r303 = run(&[("handshake/4/accepted", "skipped")]);
        r303.release = "3.0.3".into();
        let text = render(
            &[run(&[("handshake/4/accepted", "skipped")]), r303.clone()],
            &[],
        )
        .unwrap();
        assert!(
            text.contains("| `handshake/4/accepted` | skipped | skipped |  |"),
            "{text}"
        );
        r303.cases.clear();
        r303.cases.insert(
            "flow/master/app/registered".into(),
            Verdict {
                verdict: "pass".into(),
                millis: 3,
            },
        );
        let text = render(&[run(&[("handshake/4/accepted", "skipped")]), r303], &[]).unwrap();
        assert!(
            text.contains("| `handshake/4/accepted` | skipped | not yet run |  |"),
            "{text}"
        );
    }

    #[test]
    fn the_matrix_files_each_conformance_failure_under_its_spec_row_and_shows_every_other_failure()
    {
        let row = |release: &str, master_failures: &str, differ: u32| {
            parse_matrix_row(&format!(
                r#"{{"release": "{release}", "checks": {{
                    "worker": {{"ok": true, "detail": "registered"}},
                    "application": {{"ok": false, "detail": "the PySpark application's PY job gave ''"}},
                    "conformance-master": {{"pass": 90, "fail": 2, "nonStrict": 0, "skipped": 40,
                        "failures": {{{master_failures}}}}},
                    "decode": {{"captures": 3, "frames": 400, "notDecoded": 0, "unknownClasses": 0,
                        "differ": {differ}, "violations": 0, "failedCaptures": []}}
                }}}}"#
            ))
            .expect("a row")
        };
        let resolved = r#""route/deploy/RegisterWorker": "fail", "spec/14.2/Z1/x": "fail""#;
        let text = render_matrix(&[row("3.5.9", resolved, 0), row("4.3.0", resolved, 2)])
            .expect("renders");
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| 4.3.0 |") || l.starts_with("| 3.5.9 |"))
            .collect();
        // Newest release first; one row per release, one column per check.
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].starts_with("| 4.3.0 | pass | **FAIL**: the PySpark"),
            "{text}"
        );
        assert!(
            lines[0].contains("| not run |"),
            "no sparkwire-worker check: {text}"
        );
        assert!(
            lines[0].contains("| 90 pass, 2 fail: SPEC §15.4 S1 ×1, S2 ×1 (40 skipped) |"),
            "{text}"
        );
        assert!(lines[0].contains("**FAIL**: 3 captures, 400 frames: 0 not decoded, 0 unknown classes, 2 re-encoded differently"), "{text}");
        assert!(
            lines[1].contains("| pass: 3 captures, 400 frames"),
            "{text}"
        );
        // A conformance failure no row explains is refused, naming it.
        let e = render_matrix(&[row("3.1.3", r#""flow/master/app/registered": "fail""#, 0)])
            .unwrap_err();
        assert!(
            e.contains("3.1.3 conformance-master flow/master/app/registered"),
            "{e}"
        );
        assert_eq!(render_matrix(&[]).expect("renders"), "");
    }

    #[test]
    fn a_version_1_state_case_failing_on_3_2_or_3_3_is_filed_under_s8_and_on_any_other_release_under_none(
    ) {
        let row = |release: &str| {
            parse_matrix_row(&format!(
                r#"{{"release": "{release}", "checks": {{
                    "conformance-master": {{"pass": 70, "fail": 2, "nonStrict": 0, "skipped": 40,
                        "failures": {{"flow/master/executor/state-send-v1": "fail",
                                      "route/deploy/RegisterWorker": "fail"}}}}
                }}}}"#
            ))
            .expect("a row")
        };
        for release in ["3.2.4", "3.3.4", "3.2.0"] {
            let text = render_matrix(&[row(release)]).expect("renders");
            assert!(
                text.contains("| 70 pass, 2 fail: SPEC §15.4 S1 ×1, S8 ×1 (40 skipped) |"),
                "{release}: {text}"
            );
        }
        // Spark 3.1 takes the state one-way, as version 1 sends it: no row explains it there.
        for release in ["3.1.3", "3.0.3"] {
            let e = render_matrix(&[row(release)]).unwrap_err();
            assert!(
                e.contains(&format!(
                    "{release} conformance-master flow/master/executor/state-send-v1"
                )),
                "{release}: {e}"
            );
        }
        assert_eq!(
            resolution("3.3.4", "flow/worker/executor/state-send-v1"),
            Some("S8")
        );
        assert_eq!(
            resolution("3.1.3", "flow/worker/executor/state-send-v1"),
            None
        );
        // The suite's worker asks its state on 3.2 and 3.3 as theirs do: a case that reports it
        // and fails there is not explained by S8.
        for id in [
            "flow/master/executor/kill-executors",
            "flow/master/executor/failed-relaunched",
            "flow/master/v1/worker-lost",
        ] {
            assert_eq!(resolution("3.2.4", id), None, "{id}");
        }
        assert_eq!(resolution("3.2.4", "route/deploy/Heartbeat"), Some("S1"));
    }

    #[test]
    fn the_matrix_files_each_decode_violation_under_the_spec_row_that_explains_it_on_its_release() {
        let row = |release: &str, kinds: &str, violations: u32, failed_otherwise: &str| {
            parse_matrix_row(&format!(
                r#"{{"release": "{release}", "checks": {{
                    "decode": {{"captures": 3, "frames": 383, "notDecoded": 0, "unknownClasses": 0,
                        "differ": 0, "violations": {violations},
                        "failedCaptures": ["app.pcap"], "failedOtherwise": [{failed_otherwise}],
                        "violationKinds": {{{kinds}}}}}
                }}}}"#
            ))
            .expect("a row")
        };
        let s8 = r#"
            "ExecutorStateChanged [M3 route.kind]: expected ExecutorStateChanged as a send, found it as a ask": 11,
            "ExecutorUpdated [E5 executor.updated-matches]: expected no update: the worker reported no new state": 6,
            "reply … (bool) [A2 ask.reply-pending]: expected a reply to an ask of … pending on this connection; … is not": 11,
            "RequestDriverStatus [L1 timed.executor-state]: expected an ExecutorStateChanged for … within … ms": 1"#;
        let decode = |rows: &[MatrixRow]| -> String {
            let text = render_matrix(rows).expect("renders");
            let line = text
                .lines()
                .find(|l| l.starts_with("| 3."))
                .expect("a row")
                .to_string();
            line.rsplit(" | ")
                .next()
                .expect("the decode cell")
                .to_string()
        };
        // On 3.3 (and 3.2) S8 explains each of those kinds: the cell passes, citing the row.
        assert_eq!(
            decode(&[row("3.3.4", s8, 29, "")]),
            "pass: 3 captures, 383 frames: 0 not decoded, 0 unknown classes, 0 re-encoded \
             differently, 29 violations (SPEC §15.4 S8 ×29) |"
        );
        assert!(decode(&[row("3.2.4", s8, 29, "")]).starts_with("pass: "));
        // The same kinds on a release S8 is not about are failures, named.
        let other = decode(&[row("3.1.3", s8, 29, "")]);
        assert!(other.starts_with("**FAIL**: "), "{other}");
        assert!(
            other.contains("not explained: ExecutorStateChanged [M3 route.kind]"),
            "{other}"
        );
        // A kind S8 does not name fails on 3.3 too; so do violations not told by kind and a
        // capture failing with no violation of its own.
        let extra = format!(r#"{s8}, "RegisterWorker [W1 worker.register-first]: expected …": 1"#);
        let cell = decode(&[row("3.3.4", &extra, 30, "")]);
        assert!(
            cell.starts_with("**FAIL**: ")
                && cell.contains("(SPEC §15.4 S8 ×29); not explained: RegisterWorker"),
            "{cell}"
        );
        let cell = decode(&[row("3.3.4", s8, 31, "")]);
        assert!(cell.contains("not explained: 2 not told by kind"), "{cell}");
        assert!(decode(&[row("3.3.4", s8, 29, r#""cluster.pcap""#)]).starts_with("**FAIL**: "));
        assert_eq!(
            decode_resolution("3.3.4", "RegisterWorker [W1 x]: expected y"),
            None
        );
    }

    #[test]
    fn a_stored_report_reads_back_with_or_without_wire_logs() {
        let text = r#"{"target":"master","totals":{},"wall_seconds":1.5,"cases":[
            {"id":"a","verdict":"pass","millis":4},
            {"id":"b","verdict":"fail","millis":9,"wire_log":["x"]}]}"#;
        let r = parse_run("3.0.3", Target::Worker, text).expect("reads");
        assert_eq!(r.cases["b"].verdict, "fail");
        assert_eq!(r.cases["a"].millis, 4);
        assert_eq!(r.wall_seconds, 1.5);
        assert!(parse_run("3.0.3", Target::Worker, "{}").is_err());
    }

    #[test]
    fn a_spark_md_lacking_only_new_cases_in_a_not_yet_run_list_is_not_stale() {
        let stored = run(&[("flow/master/app/registered", "pass")]);
        let fresh = render(&[stored], &[]).expect("renders");
        let (head, list) = fresh
            .split_once("- `handshake/4/accepted`\n")
            .expect("a case not yet run");
        let without = format!("{head}{list}");
        assert!(differs_only_by_new_cases(&without, &fresh));
        assert!(differs_only_by_new_cases(&fresh, &fresh));
        let changed = fresh.replace("| pass (", "| **FAIL** (");
        assert_ne!(changed, fresh, "the fixture has a verdict to change");
        assert!(!differs_only_by_new_cases(&changed, &fresh));
        let extra = format!("{fresh}- `a/case/gone`\n");
        assert!(!differs_only_by_new_cases(&extra, &fresh));
    }
}
