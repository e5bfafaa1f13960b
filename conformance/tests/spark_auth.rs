//! The cases of SPEC §15.6 (`spark/15.6/…`, Spark's own authentication on its wire) against the
//! reference master's Spark port holding a secret: each passes against it, in the configuration
//! it applies to (Spark's defaults: SASL; the auth engine with SASL refused), and each fails
//! behind some fault of `Scope::Spark` (the fault proxy standing in for a broken endpoint).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sparkwire_conformance::faults::Fault;
use sparkwire_conformance::{cases, Target};

fn suite() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sparkwire-conformance"))
}

/// The `sparkwire` binary beside this test's profile directory.
fn sparkwire() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile directory");
    let bin = profile.join("sparkwire");
    assert!(
        bin.exists(),
        "{} is missing: build the workspace (cargo build --bin sparkwire)",
        bin.display()
    );
    bin
}

/// A scratch directory of this test's, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "sparkwire-conformance-spark-auth-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A reference master whose Spark port holds `secret` with Spark's settings `conf`; stopped
/// when dropped.
struct Master {
    child: Child,
    spark: String,
}

impl Master {
    fn start(secret_file: &Path, conf: &[&str]) -> Master {
        let mut cmd = Command::new(sparkwire());
        cmd.args(["master", "--port", "0", "--no-webui", "--spark-port", "0"])
            // A pinned release: the suite plays no JVM that answers the release questions.
            .args(["--spark-release", "4.0.1", "--secret-file"])
            .arg(secret_file);
        for kv in conf {
            cmd.args(["--spark-conf", kv]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the reference master");
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut spark = None;
        for _ in 0..10 {
            let mut line = String::new();
            if out.read_line(&mut line).expect("the master's output") == 0 {
                break;
            }
            if let Some(a) = line
                .trim()
                .rsplit("spark://")
                .next()
                .filter(|_| line.contains("spark://"))
            {
                spark = Some(a.to_string());
                break;
            }
        }
        let spark = spark.expect("the master's Spark port");
        Master { child, spark }
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the `spark/15.6/` cases against `m`, with the suite's `--spark-conf` `conf` and
/// `fault`: each case's verdict.
fn run(
    m: &Master,
    secret_file: &Path,
    conf: &[&str],
    fault: Option<&str>,
) -> BTreeMap<String, String> {
    let dir = secret_file.parent().expect("scratch");
    let json = dir.join(format!("r-{}.json", fault.unwrap_or("none")));
    let mut cmd = Command::new(suite());
    cmd.args([
        "--wire",
        "spark",
        "--spark-release",
        "4.0.1",
        "--target",
        "master",
    ])
    .args(["--addr", &m.spark, "--secret-file"])
    .arg(secret_file)
    .args(["--cases", "spark/15.6/", "--timeout-scale", "4", "--json"])
    .arg(&json);
    for kv in conf {
        cmd.args(["--spark-conf", kv]);
    }
    if let Some(f) = fault {
        cmd.args(["--fault", f]);
    }
    let out = cmd.output().expect("run the suite");
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "the suite could not run: status {code}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("JSON");
    let mut verdicts = BTreeMap::new();
    for c in report["cases"].as_array().expect("cases") {
        verdicts.insert(
            c["id"].as_str().unwrap_or("").to_string(),
            c["verdict"].as_str().unwrap_or("").to_string(),
        );
    }
    if fault.is_none() && code != 0 {
        eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    }
    verdicts
}

/// The two configurations: (name, the master's settings, the suite's).
const CONFIGS: [(&str, &[&str], &[&str]); 2] = [
    ("sasl", &[], &[]),
    (
        "engine",
        &["spark.network.crypto.saslFallback=false"],
        &[
            "spark.network.crypto.enabled=true",
            "spark.network.crypto.saslFallback=false",
        ],
    ),
];

#[test]
fn the_spark_auth_cases_pass_against_the_reference_master_and_each_fails_behind_some_fault() {
    let ids: BTreeSet<String> = cases(Target::Master)
        .into_iter()
        .map(|c| c.id)
        .filter(|id| id.starts_with("spark/15.6/"))
        .collect();
    assert!(ids.len() >= 7, "the cases of SPEC §15.6: {ids:?}");
    let faults: Vec<Fault> = Fault::all().filter(|f| f.breaks_spark_auth()).collect();
    assert!(faults.len() >= 4, "the faults of Spark's authentication");
    let mut passed = BTreeSet::new();
    let mut failed = BTreeSet::new();
    for (name, master_conf, suite_conf) in CONFIGS {
        let scratch = Scratch::new(name);
        let secret = scratch.0.join("secret");
        {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&secret)
                .expect("secret file");
            std::io::Write::write_all(
                &mut f,
                format!("secret-{}-{name}\n", std::process::id()).as_bytes(),
            )
            .expect("write the secret");
        }
        let m = Master::start(&secret, master_conf);
        for (id, v) in run(&m, &secret, suite_conf, None) {
            assert!(
                v == "pass" || v == "skipped",
                "{name}: {id} is {v} against the reference master"
            );
            if v == "pass" {
                passed.insert(id);
            }
        }
        for f in &faults {
            for (id, v) in run(&m, &secret, suite_conf, Some(f.name())) {
                if v == "fail" {
                    failed.insert(id);
                }
            }
        }
    }
    let never_passed: Vec<_> = ids.difference(&passed).collect();
    assert!(never_passed.is_empty(), "never passed: {never_passed:?}");
    let never_failed: Vec<_> = ids.difference(&failed).collect();
    assert!(
        never_failed.is_empty(),
        "cases no Spark authentication fault fails: {never_failed:?}"
    );
}
