//! The part of SPARK.md about Spark's own authentication (SPEC §15.6): the `spark/15.6/…` cases
//! run against a real Spark master with `spark.authenticate=true`, stored per release and
//! configuration as `conformance/spark/RELEASE-master-CONFIG.json` by `scripts/spark/conformance.sh
//! RELEASE -- master-sasl master-crypto` (CONFIG `sasl`: Spark's defaults, SASL only; `crypto`:
//! `spark.network.crypto.enabled=true` with `spark.network.crypto.saslFallback=false`).

use std::fmt::Write as _;
use std::path::Path;

use super::spark_md::{compare, parse_run, resolution, Comparison, Run};
use crate::harness::verdict::Target;

/// The releases whose authenticated runs are looked for, newest first.
pub const AUTH_RELEASES: [&str; 3] = ["4.3.0", "4.0.1", "3.5.9"];

/// The configurations of the real master: (file suffix, what it is).
pub const CONFIGS: [(&str, &str); 2] = [
    (
        "sasl",
        "SASL (Spark's defaults with `spark.authenticate=true`)",
    ),
    (
        "crypto",
        "auth engine, `spark.network.crypto.saslFallback=false`",
    ),
];

/// The id prefix of the cases of SPEC §15.6.
pub const PREFIX: &str = "spark/15.6/";

/// Every authenticated run stored in `dir`: (release, configuration, run).
pub fn load(dir: &Path) -> Result<Vec<(String, &'static str, Run)>, String> {
    let mut runs = Vec::new();
    for release in AUTH_RELEASES {
        for (config, _) in CONFIGS {
            let path = dir.join(format!("{release}-master-{config}.json"));
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let run = parse_run(release, Target::Master, &text)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            runs.push((release.to_string(), config, run));
        }
    }
    Ok(runs)
}

/// The section for `runs`; an error names every failure SPEC §15.4 does not explain.
pub fn render(runs: &[(String, &'static str, Run)]) -> Result<String, String> {
    let mut unresolved = Vec::new();
    for (release, config, r) in runs {
        for (id, v) in &r.cases {
            if matches!(v.verdict.as_str(), "fail" | "non-strict")
                && resolution(release, id).is_none()
            {
                unresolved.push(format!("{release} master-{config} {id}"));
            }
        }
    }
    if !unresolved.is_empty() {
        return Err(format!(
            "failures of Spark's authentication on real Spark with no resolution:\n{}",
            unresolved.join("\n")
        ));
    }
    let mut out = String::new();
    let _ = writeln!(out, "\n## Spark's own authentication (SPEC §15.6)\n");
    let _ = writeln!(
        out,
        "The `{PREFIX}…` cases against a real Spark master with `spark.authenticate=true` and a fresh \
         secret in its `spark-defaults.conf`, the suite given the same secret (`--secret-file`) and \
         settings (`--spark-conf`): `scripts/spark/conformance.sh RELEASE -- master-sasl master-crypto`, \
         stored as `conformance/spark/RELEASE-master-CONFIG.json`. A case about a setting the master \
         does not have is skipped.\n"
    );
    for (config, what) in CONFIGS {
        let _ = writeln!(out, "- `{config}`: {what}");
    }
    out.push('\n');
    let ids: Vec<String> = crate::cases(Target::Master)
        .into_iter()
        .map(|c| c.id)
        .filter(|id| id.starts_with(PREFIX))
        .collect();
    if runs.is_empty() {
        let _ = writeln!(out, "Not yet run on Spark:\n");
        for id in &ids {
            let _ = writeln!(out, "- `{id}`");
        }
        return Ok(out);
    }
    let mut header = String::from("| case |");
    let mut rule = String::from("|---|");
    for (release, config, r) in runs {
        let _ = write!(
            header,
            " Spark {release} `{config}` ({:.0} s) |",
            r.wall_seconds
        );
        rule.push_str("---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    for id in &ids {
        let mut line = format!("| `{id}` |");
        for (release, _, r) in runs {
            let cell = match r.cases.get(id) {
                None => "not yet run".to_string(),
                Some(v) if v.verdict == "pass" => format!("pass ({} ms)", v.millis),
                Some(v) if v.verdict == "skipped" => "skipped".to_string(),
                Some(v) => format!(
                    "**{}** (SPEC §15.4 {})",
                    v.verdict.to_uppercase(),
                    resolution(release, id).unwrap_or("")
                ),
            };
            let _ = write!(line, " {cell} |");
        }
        let _ = writeln!(out, "{line}");
    }
    Ok(out)
}

/// The authenticated runs in `fresh_dir` held against the stored ones in `stored_dir`
/// ([`compare`], each named `RELEASE-master-CONFIG`), and how many fresh runs there were.
pub fn compare_dirs(stored_dir: &Path, fresh_dir: &Path) -> Result<(Comparison, usize), String> {
    let stored = load(stored_dir)?;
    let fresh = load(fresh_dir)?;
    let mut out = Comparison::default();
    for (release, config, run) in &fresh {
        let then = stored
            .iter()
            .find(|(r, c, _)| r == release && c == config)
            .map(|(_, _, s)| s);
        let one = compare(then, run);
        let named = |line: String| line.replacen("-master", &format!("-master-{config}"), 1);
        out.changed.extend(one.changed.into_iter().map(named));
        out.not_yet_run
            .extend(one.not_yet_run.into_iter().map(named));
    }
    Ok((out, fresh.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, verdict: &str) {
        let text = format!(
            r#"{{"target":"master","totals":{{}},"wall_seconds":9.0,"cases":[
               {{"id":"spark/15.6/A3/sasl-refused","verdict":"{verdict}","millis":4}}]}}"#
        );
        std::fs::write(dir.join(name), text).expect("write a run");
    }

    #[test]
    fn an_authenticated_run_is_rendered_and_a_changed_verdict_named_with_its_configuration() {
        let base = std::env::temp_dir().join(format!("spark-auth-md-{}", std::process::id()));
        let (stored, fresh) = (base.join("stored"), base.join("fresh"));
        std::fs::create_dir_all(&stored).expect("dir");
        std::fs::create_dir_all(&fresh).expect("dir");
        write(&stored, "4.0.1-master-crypto.json", "pass");
        write(&fresh, "4.0.1-master-crypto.json", "skipped");
        let runs = load(&stored).expect("runs");
        let text = render(&runs).expect("rendered");
        assert!(
            text.contains("| `spark/15.6/A3/sasl-refused` | pass (4 ms) |"),
            "{text}"
        );
        assert!(text.contains("Spark 4.0.1 `crypto`"), "{text}");
        let (c, n) = compare_dirs(&stored, &fresh).expect("compared");
        assert_eq!(n, 1);
        assert_eq!(
            c.changed,
            ["4.0.1-master-crypto: spark/15.6/A3/sasl-refused: stored pass, now skipped"]
        );
        write(&stored, "4.0.1-master-sasl.json", "fail");
        let err = render(&load(&stored).expect("runs")).expect_err("an unresolved failure");
        assert!(
            err.contains("4.0.1 master-sasl spark/15.6/A3/sasl-refused"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
