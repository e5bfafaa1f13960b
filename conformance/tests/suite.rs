//! The suite against the reference endpoints: every case passes against them, and every case
//! fails against at least one broken endpoint (a reference endpoint behind the fault proxy).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sparkwire_conformance::faults::Fault;
use sparkwire_conformance::{cases, Target};

/// The fault named `name` (one of `Fault::all()`).
fn fault(name: &str) -> Fault {
    Fault::from_name(name).unwrap_or_else(|| panic!("no fault named {name}"))
}

fn suite() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sparkwire-conformance"))
}

/// The `sparkwire` binary the workspace build put beside this test's profile directory.
fn sparkwire() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile directory");
    let bin = profile.join("sparkwire");
    assert!(
        bin.exists(),
        "{} is missing: build the workspace (cargo test --workspace builds it)",
        bin.display()
    );
    bin
}

/// A reference master on a free port, stopped when dropped.
struct Master {
    child: Child,
    addr: String,
}

impl Master {
    fn start(extra: &[String]) -> Master {
        // --strict: the rules/ cases expect a master that enforces protocol/rules.md; the
        // reference does in strict mode (routes it enforces always).
        let mut child = Command::new(sparkwire())
            .args(["master", "--port", "0", "--webui-port", "0", "--strict"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the reference master");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the master's first line");
        let addr = line
            .trim()
            .rsplit("sparkwire://")
            .next()
            .expect("an address")
            .to_string();
        Master { child, addr }
    }
}

impl Drop for Master {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn template(target: Target) -> String {
    let bin = sparkwire();
    let bin = bin.display();
    match target {
        Target::Master => unreachable!(),
        Target::Worker => format!("{bin} worker {{master_url}} --cores {{cores}} --memory {{memory}} --worker-timeout {{worker_timeout}} --register-retry 1 --work-dir {{work_dir}} --allow-exec-any {{allowed_exec}} --webui-port 0 --exit-with-stdin"),
        Target::Driver => format!("{bin} driver --master {{master_url}} --job {{job}} --partitions {{partitions}} --param {{param}} --max-message-size {{max_message_size}} --executor-cores {{cores}}"),
        Target::Executor => format!("{bin} executor --driver-url {{driver_url}} --executor-id {{executor_id}} --cores {{cores}} --app-id {{app_id}} --worker-url {{worker_url}}"),
    }
}

/// Runs the suite; returns its exit code and each case's verdict.
fn run(args: &[String]) -> (i32, BTreeMap<String, String>) {
    let (code, report) = run_report(args);
    let mut verdicts = BTreeMap::new();
    for c in report["cases"].as_array().expect("cases") {
        verdicts.insert(
            c["id"].as_str().unwrap_or("").to_string(),
            c["verdict"].as_str().unwrap_or("").to_string(),
        );
    }
    (code, verdicts)
}

/// Runs the suite; returns its exit code and its JSON report.
fn run_report(args: &[String]) -> (i32, serde_json::Value) {
    // A directory of this run's own: runs go on at the same time.
    let dir = std::env::temp_dir().join(format!(
        "sparkwire-conformance-test-{}-{}",
        std::process::id(),
        run_number()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let json = dir.join("r.json");
    let out = Command::new(suite())
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run the suite");
    let code = out.status.code().unwrap_or(-1);
    // Status 2 (or no report) means the suite could not run at all: no verdicts to count.
    assert!(
        code == 0 || code == 1,
        "the suite could not run ({args:?}): status {code}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("the suite's JSON report");
    let report: serde_json::Value = serde_json::from_str(&text).expect("JSON report");
    let _ = std::fs::remove_dir_all(&dir);
    if code != 0 && args.iter().all(|a| !a.starts_with("--fault")) {
        eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    }
    (code, report)
}

fn run_number() -> usize {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A shared secret in a file only its owner reads (as `--secret-file` wants), removed when
/// the process ends.
fn secret_file() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!(
            "sparkwire-conformance-secret-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let path = dir.join("secret");
        std::fs::write(&path, "conformance-test-secret\n").expect("the secret file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("mode 0600");
        path
    })
    .clone()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// One way to run a target: the suite's extra arguments, and the flags of the master it needs.
type Configuration = (Vec<String>, Vec<String>);

/// The master the cases about server settings (limits, the admin secret, TLS) start once per
/// case, with the settings each chooses (`--spawn-server`).
fn server_template() -> String {
    let bin = sparkwire();
    format!(
        "{} master --port {{port}} --port-retries 0 --no-webui --exit-with-stdin --max-connections {{max_connections}} --idle-timeout {{idle_timeout}} --frame-read-timeout {{frame_read_timeout}} --max-queued-bytes {{max_queued_bytes}} --max-frame-bytes {{max_frame_bytes}} [[--secret-file {{secret_file}}]] [[--admin-secret-file {{admin_secret_file}}]] [[--tls-cert {{tls_cert}} --tls-key {{tls_key}}]]",
        bin.display()
    )
}

/// The ids of the cases that start a server of their own (`--spawn-server`), as `--cases`
/// prefixes.
const SERVER_CASES: [&str; 6] = [
    "handshake/5/0/",
    "spec/8/limits/",
    "spec/13/admin/",
    "handshake/10.1/admin-proof-ignored",
    "handshake/10.1/wrong-admin-proof-refused",
    "handshake/11/",
];

/// Whether the self-test runs `configuration` under `fault`: the faults of a server the suite
/// starts ([`Fault::server_only`]) break only the cases that start one, which run alone in their
/// configuration, and those cases run under only those faults and the generic ones that break
/// what they check too (a hello accepted whatever it holds, closes that never come, close
/// envelopes dropped).
fn serves(configuration: &Configuration, fault: Fault) -> bool {
    let spawns = configuration.0.iter().any(|a| a == "--spawn-server");
    let generic = ["accept-any-hello", "keep-open", "silent-close"];
    if spawns {
        fault.server_only() || generic.contains(&fault.name())
    } else {
        !fault.server_only()
    }
}

/// The runs that together cover a target.
fn configurations(target: Target) -> Vec<Configuration> {
    match target {
        Target::Master => {
            let secret = secret_file().display().to_string();
            vec![
                (vec![], vec![]),
                (
                    strings(&[
                        "--spread-out",
                        "false",
                        "--worker-timeout",
                        "2",
                        "--cases",
                        "flow/master/scheduling",
                        "--cases",
                        "flow/master/heartbeat",
                    ]),
                    strings(&["--spread-out", "false", "--worker-timeout", "2"]),
                ),
                // The authentication cases, against a master holding a secret.
                (
                    strings(&[
                        "--secret-file",
                        &secret,
                        "--cases",
                        "handshake/10",
                        "--cases",
                        "spec/13",
                    ]),
                    strings(&["--secret-file", &secret]),
                ),
                // The cases about server settings, each against a master of its own.
                (
                    ["--spawn-server".to_string(), server_template()]
                        .into_iter()
                        .chain(
                            SERVER_CASES
                                .iter()
                                .flat_map(|c| ["--cases".into(), c.to_string()]),
                        )
                        .collect(),
                    vec![],
                ),
            ]
        }
        Target::Worker => {
            let secret = secret_file().display().to_string();
            let plain = template(Target::Worker);
            vec![
                (vec!["--spawn".into(), plain.clone()], vec![]),
                // A program allowed only as sparkwire's executor (SPEC §14.5); the template
                // last, as secured_configurations wants it.
                (
                    strings(&[
                        "--cases",
                        "spec/14.5/executor-program-not-a-driver",
                        "--spawn",
                        &plain.replace("--allow-exec-any", "--allow-exec"),
                    ]),
                    vec![],
                ),
                // A worker holding the secret hands it to what it launches (SPEC §13).
                (
                    strings(&[
                        "--spawn",
                        &format!("{plain} --secret-file {{secret_file}}"),
                        "--secret-file",
                        &secret,
                        "--cases",
                        "flow/worker/secret-handoff",
                    ]),
                    vec![],
                ),
            ]
        }
        t => vec![(vec!["--spawn".into(), template(t)], vec![])],
    }
}

/// The two tests that run whole targets take a machine's cores: they run one after the other.
fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// One run of the suite against `target` in one of its configurations (a master is started with
/// that configuration's flags), under `fault` if any.
fn run_config(
    target: Target,
    fault: Option<Fault>,
    patience: &str,
    (extra, master_flags): &Configuration,
) -> (i32, BTreeMap<String, String>) {
    let master = (target == Target::Master).then(|| Master::start(master_flags));
    let mut args: Vec<String> = vec![
        "--target".into(),
        target.name().into(),
        "--patience".into(),
        patience.into(),
    ];
    if let Some(m) = &master {
        args.push("--addr".into());
        args.push(m.addr.clone());
    }
    args.extend(extra.iter().cloned());
    if let Some(f) = fault {
        args.push("--fault".into());
        args.push(f.name().into());
        // A broken endpoint mostly makes cases wait, which costs no CPU: more at once.
        args.push("--jobs".into());
        args.push("32".into());
        // Every case runs to its own end: none is cut (failed) by the run's deadline, and the
        // cases' judge is off (the judge's own tests are below), so that a case counts as failing
        // against a fault only for what its own checks saw.
        args.extend(strings(&["--deadline", NO_DEADLINE, "--no-judge"]));
    }
    run(&args)
}

/// Every configuration of `target`, one after the other.
fn run_target(
    target: Target,
    fault: Option<Fault>,
    patience: &str,
) -> Vec<(i32, BTreeMap<String, String>)> {
    configurations(target)
        .iter()
        .map(|c| run_config(target, fault, patience, c))
        .collect()
}

/// Patience for the runs that must pass: long, because a correct endpoint answers as soon as it
/// can, so that only a broken one ever makes a case wait for it (a loaded machine then never
/// fails a correct endpoint, and a passing run is no slower).
const PASS_PATIENCE: &str = "30";

/// Patience under faults: a broken endpoint often makes a case wait the whole patience.
const FAULT_PATIENCE: &str = "2";

/// A run's deadline that no run of these tests reaches (`--deadline`, seconds).
const NO_DEADLINE: &str = "3600";

#[test]
fn every_target_passes_against_the_reference_endpoints() {
    let _heavy = heavy();
    let handles: Vec<_> = Target::ALL
        .into_iter()
        .map(|t| std::thread::spawn(move || (t, run_target(t, None, PASS_PATIENCE))))
        .collect();
    for h in handles {
        let (t, results) = h.join().expect("a target's run");
        let mut passed = BTreeSet::new();
        for (code, verdicts) in &results {
            assert_eq!(
                *code,
                0,
                "target {t}: a MUST failed: {:?}",
                verdicts
                    .iter()
                    .filter(|(_, v)| *v == "fail")
                    .collect::<Vec<_>>()
            );
            for (id, v) in verdicts {
                assert!(v == "pass" || v == "skipped", "target {t}: {id} is {v}");
                if v == "pass" {
                    passed.insert(id.clone());
                }
            }
        }
        // Every case passes in some configuration (a case skipped in one runs in the other).
        for c in cases(t) {
            // The reference clients offer both versions: an unoffered known version does not
            // exist for them, so this case applies only to single-version clients (it fails
            // under the lowest-version fault, where the client seems to offer one).
            let skip_ok = c.id == "handshake/6/unoffered-version-chosen"
                || covered_by_auth_tests(t, &c.id)
                || spark_wire_only(&c.id);
            assert!(
                passed.contains(&c.id) || skip_ok,
                "target {t}: {} never passed",
                c.id
            );
        }
    }
}

#[test]
fn every_case_fails_against_some_broken_endpoint() {
    let _heavy = heavy();
    // Every (target, fault, configuration), run by a few threads that each take the next when
    // done; the master's runs first, as they take longest (its cases that run alone wait for a
    // broken endpoint one after the other).
    let mut runs: Vec<(Target, Fault, Configuration)> = Vec::new();
    for t in Target::ALL {
        for f in Fault::all() {
            // The authentication faults stand in for a master holding a secret; the master's own
            // faults break only what the master target checks, the clients' only what the
            // worker, driver and executor targets check, and a fault scoped to some targets only
            // what theirs check (`Fault::serves`); the judge's are run by its own test
            // (the_judge_catches_each_of_its_faults).
            if !f.serves(t) {
                continue;
            }
            for c in configurations(t) {
                if serves(&c, f) {
                    runs.push((t, f, c));
                }
            }
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed: std::sync::Mutex<BTreeMap<Target, BTreeSet<String>>> = Default::default();
    std::thread::scope(|scope| {
        for _ in 0..6 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((t, f, c)) = runs.get(i) else { break };
                let (_, verdicts) = run_config(*t, Some(*f), FAULT_PATIENCE, c);
                let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                for (id, v) in verdicts {
                    if v == "fail" || v == "non-strict" {
                        failed.entry(*t).or_default().insert(id);
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut never = Vec::new();
    for t in Target::ALL {
        for c in cases(t) {
            if covered_by_auth_tests(t, &c.id) || spark_wire_only(&c.id) {
                continue;
            }
            if !failed.get(&t).is_some_and(|s| s.contains(&c.id)) {
                never.push(format!("{t} {}", c.id));
            }
        }
    }
    assert!(
        never.is_empty(),
        "cases that no broken endpoint fails: {never:#?}"
    );
}

/// Issue 44: a case must not depend on how fast a correct endpoint answers relative to a timeout
/// the suite set. A legal, slow master (the `late-250ms` proxy: each frame it writes 250 ms after
/// the one before) with a worker timeout of 2 s still passes the cases whose workers must stay
/// alive through many answers: the worker the suite plays heartbeats throughout.
#[test]
fn the_cases_waiting_on_the_worker_timeout_pass_against_a_master_250_ms_late() {
    let master = Master::start(&strings(&["--worker-timeout", "2"]));
    let ids = [
        "flow/master/executor/retries-exhausted",
        "flow/master/v1/worker-lost",
    ];
    let mut args = strings(&[
        "--target",
        "master",
        "--addr",
        &master.addr,
        "--worker-timeout",
        "2",
        "--patience",
        PASS_PATIENCE,
        "--fault",
        "late-250ms",
    ]);
    for id in ids {
        args.extend(strings(&["--cases", id]));
    }
    let (_, verdicts) = run(&args);
    for id in ids {
        assert_eq!(
            verdicts.get(id).map(String::as_str),
            Some("pass"),
            "{id} against a master 250 ms late: {verdicts:?}"
        );
    }
}

#[test]
fn cases_md_is_fresh() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("CASES.md");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == sparkwire_conformance::documents::cases_md::render(),
        "conformance/CASES.md is stale: run `cargo run -p sparkwire-conformance -- --write-cases-md conformance/CASES.md`"
    );
}

#[test]
fn at_least_150_cases_with_unique_ids() {
    let all = sparkwire_conformance::all_cases();
    assert!(all.len() >= 150, "{} cases", all.len());
    let mut seen = BTreeSet::new();
    for c in &all {
        assert!(
            seen.insert((c.target, c.id.clone())),
            "duplicate id {} for {}",
            c.id,
            c.target
        );
        assert!(!c.requirement.is_empty());
    }
}

// ---- the authentication cases of the worker, driver and executor targets ----

/// The verdicts of the authentication cases (handshake/10…, spec/13…) of one run.
fn auth_run(args: &[String], fault: Option<&str>) -> BTreeMap<String, String> {
    let secret = secret_file().display().to_string();
    let mut all = strings(&[
        "--patience",
        if fault.is_some() {
            FAULT_PATIENCE
        } else {
            PASS_PATIENCE
        },
        "--secret-file",
        &secret,
    ]);
    all.extend(args.iter().cloned());
    if !args.iter().any(|a| a == "--cases") {
        all.extend(strings(&["--cases", "handshake/10", "--cases", "spec/13"]));
    }
    if let Some(f) = fault {
        all.extend(strings(&[
            "--fault",
            f,
            "--deadline",
            NO_DEADLINE,
            "--no-judge",
        ]));
    }
    run(&all).1
}

/// True for the authentication cases of the worker, driver and executor: they need the secret
/// on both sides, and the `*_auth_cases_pass_secured_and_fail_broken` tests check them.
/// Whether case `id` is about Spark's own wire (`spark/…`, SPEC §15): it runs only with
/// `--wire spark`, which the reference endpoints do not serve yet, and is judged against real
/// Spark (conformance/SPARK.md) instead.
fn spark_wire_only(id: &str) -> bool {
    id.starts_with("spark/")
}

fn covered_by_auth_tests(target: Target, id: &str) -> bool {
    target != Target::Master && (id.starts_with("handshake/10") || id.starts_with("spec/13"))
}

/// The ids of the authentication cases of `target`.
fn auth_ids(target: Target) -> Vec<String> {
    cases(target)
        .into_iter()
        .map(|c| c.id)
        .filter(|id| covered_by_auth_tests(target, id))
        .collect()
}

/// Asserts that `verdicts` give `want` for every id of `ids`.
fn expect_all(what: &str, verdicts: &BTreeMap<String, String>, ids: &[String], want: &str) {
    for id in ids {
        assert_eq!(
            verdicts.get(id).map(String::as_str),
            Some(want),
            "{what}: {id} (all: {verdicts:?})"
        );
    }
}

/// The cases that only a server checking the client's proof passes.
const SERVER_PROOF_CASES: [&str; 2] = [
    "handshake/10.1/wrong-proof-refused",
    "handshake/10.1/replayed-proof-refused",
];

/// The cases that only a client checking the server's proof passes.
const CLIENT_CHECK_CASES: [&str; 3] = [
    "handshake/10.1/wrong-server-proof",
    "handshake/10.1/replayed-server-proof",
    "handshake/10.2/unauthenticated-server",
];

/// The authentication cases `ids` of the endpoint `spawn` starts all pass when it holds the
/// secret; they all fail behind a proxy that authenticates nobody, the `unchecked` ones fail
/// behind one that checks no proof, and `own` fails behind one that spoils the endpoint's own
/// proof.
fn secured_and_broken(name: &str, spawn: &[String], ids: &[String], unchecked: &[&str], own: &str) {
    let holding = format!("{name} holding the secret");
    expect_all(&holding, &auth_run(spawn, None), ids, "pass");
    let bypass = format!("{name} that does not authenticate");
    expect_all(&bypass, &auth_run(spawn, Some("auth-bypass")), ids, "fail");
    let unchecked: Vec<String> = unchecked.iter().map(|s| s.to_string()).collect();
    let any = format!("{name} that checks no proof");
    expect_all(
        &any,
        &auth_run(spawn, Some("any-proof")),
        &unchecked,
        "fail",
    );
    let bad = format!("{name} whose own proof is wrong");
    let own = [own.to_string()];
    expect_all(&bad, &auth_run(spawn, Some("bad-own-proof")), &own, "fail");
}

#[test]
fn worker_auth_cases_pass_secured_and_fail_broken() {
    let ids = auth_ids(Target::Worker);
    assert_eq!(ids.len(), 8, "{ids:?}");
    let secured = format!("{} --secret-file {{secret_file}}", template(Target::Worker));
    let spawn = strings(&["--target", "worker", "--spawn", &secured]);
    secured_and_broken(
        "a worker",
        &spawn,
        &ids,
        &SERVER_PROOF_CASES,
        "handshake/10.1/challenge",
    );
    // Without --secret-file the cases are skipped, never passed.
    let (_, plain) = run(&strings(&[
        "--target",
        "worker",
        "--spawn",
        &template(Target::Worker),
        "--cases",
        "handshake/10",
    ]));
    assert!(plain.values().all(|v| v == "skipped"), "{plain:?}");
}

#[test]
fn executor_auth_cases_pass_secured_and_fail_broken() {
    let ids = auth_ids(Target::Executor);
    assert_eq!(ids.len(), 5, "{ids:?}");
    // The executor finds the secret in SPARKWIRE_SECRET_FILE, as from the worker launching it.
    let spawn = strings(&[
        "--target",
        "executor",
        "--spawn",
        &template(Target::Executor),
    ]);
    secured_and_broken(
        "an executor",
        &spawn,
        &ids,
        &CLIENT_CHECK_CASES,
        "handshake/10.1/client-proof",
    );
    // An executor that ignores the secret it is given fails every case.
    let ignoring = format!(
        "env -u SPARKWIRE_SECRET_FILE {}",
        template(Target::Executor)
    );
    let ignoring = strings(&["--target", "executor", "--spawn", &ignoring]);
    expect_all(
        "an executor that ignores its secret",
        &auth_run(&ignoring, None),
        &ids,
        "fail",
    );
}

/// A free port on 127.0.0.1 (closed again: the suite listens there next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The verdict of the driver case `id`, against a reference driver holding the secret, run in
/// this process (its command, `sparkwire driver`, takes no secret): the suite listens and the
/// driver registers with it, once, as its one case runs.
fn secured_driver_case(id: &str, fault: Option<&str>) -> String {
    use sparkwire::connection::{read_secret_file, Security};
    use sparkwire::reference::driver::{Driver, DriverConfig};
    let port = free_port();
    let secret = read_secret_file(&secret_file()).expect("the secret file");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let driver = runtime.spawn(async move {
        let mut config = DriverConfig::new("sparkwire sum-squares");
        config.masters = vec![format!("sparkwire://127.0.0.1:{port}")];
        config.security = Security::with_secret(secret);
        config.registration_timeout = std::time::Duration::from_secs(120);
        config.executor_cores = Some(2);
        let driver = Driver::start(config).await.expect("the driver starts");
        let job = sparkwire::reference::task::job_by_name("sum-squares", 4, Some(1000))
            .expect("the sum-squares job");
        let _handle = driver.submit(std::sync::Arc::from(job)).await;
        std::future::pending::<()>().await;
    });
    let listen = format!("127.0.0.1:{port}");
    let verdicts = auth_run(
        &strings(&["--target", "driver", "--listen", &listen, "--cases", id]),
        fault,
    );
    driver.abort();
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    verdicts.get(id).cloned().unwrap_or_default()
}

#[test]
fn driver_auth_cases_pass_secured_and_fail_broken() {
    let ids = auth_ids(Target::Driver);
    assert_eq!(ids.len(), 8, "{ids:?}");
    // Each id picks only its own case (no id is the prefix of another).
    for id in &ids {
        assert_eq!(ids.iter().filter(|o| o.starts_with(id.as_str())).count(), 1);
    }
    for id in &ids {
        assert_eq!(
            secured_driver_case(id, None),
            "pass",
            "a driver holding the secret: {id}"
        );
        assert_eq!(
            secured_driver_case(id, Some("auth-bypass")),
            "fail",
            "a driver that authenticates nobody: {id}"
        );
    }
    for id in SERVER_PROOF_CASES {
        assert_eq!(
            secured_driver_case(id, Some("any-proof")),
            "fail",
            "a driver that takes any proof: {id}"
        );
    }
    let id = "handshake/10.1/challenge";
    assert_eq!(
        secured_driver_case(id, Some("bad-own-proof")),
        "fail",
        "a driver whose server proof is wrong: {id}"
    );
}

/// The runs that together cover `target` against an endpoint holding the secret, with the whole
/// suite given it (`--secret-file`): the same runs as [`configurations`], each secured.
fn secured_configurations(target: Target) -> Vec<Configuration> {
    let secret = secret_file().display().to_string();
    let given = strings(&["--secret-file", &secret]);
    configurations(target)
        .into_iter()
        // The master's run of the authentication cases alone: the whole secured run has them.
        .filter(|(extra, _)| !extra.contains(&given[0]))
        .map(|(mut extra, mut master_flags)| {
            match target {
                Target::Master => master_flags.extend(given.clone()),
                // The executor finds the secret in SPARKWIRE_SECRET_FILE, set by the suite as a
                // worker sets it for what it launches.
                Target::Executor => {}
                // The worker and the driver take it on their command line (the template's last).
                _ => {
                    if let Some(template) = extra.last_mut() {
                        template.push_str(" --secret-file {secret_file}");
                    }
                }
            }
            extra.extend(given.clone());
            (extra, master_flags)
        })
        .collect()
}

#[test]
fn the_whole_suite_passes_against_secured_reference_endpoints() {
    let _heavy = heavy();
    let handles: Vec<_> = Target::ALL
        .into_iter()
        .map(|t| {
            std::thread::spawn(move || {
                let runs: Vec<_> = secured_configurations(t)
                    .iter()
                    .map(|c| run_config(t, None, PASS_PATIENCE, c))
                    .collect();
                (t, runs)
            })
        })
        .collect();
    for h in handles {
        let (t, results) = h.join().expect("a target's secured run");
        let mut passed = BTreeSet::new();
        for (code, verdicts) in &results {
            let bad: Vec<_> = verdicts
                .iter()
                .filter(|(_, v)| *v != "pass" && *v != "skipped")
                .collect();
            assert!(
                *code == 0 && bad.is_empty(),
                "target {t} holding the secret: status {code}, cases not passed: {bad:?}"
            );
            passed.extend(
                verdicts
                    .iter()
                    .filter(|(_, v)| *v == "pass")
                    .map(|(id, _)| id.clone()),
            );
        }
        // Every case runs and passes, the authentication cases included: none is skipped
        // because the endpoint is secured (the one exception needs a single-version client).
        for c in cases(t) {
            assert!(
                passed.contains(&c.id)
                    || c.id == "handshake/6/unoffered-version-chosen"
                    || spark_wire_only(&c.id),
                "target {t} holding the secret: {} never passed",
                c.id
            );
        }
    }
}

/// The verdict of case `id` of `target` under `fault`, secured (the first of
/// [`secured_configurations`]) or not (the first of [`configurations`]).
fn verdict_under(target: Target, fault: Fault, secured: bool, id: &str) -> String {
    let (mut extra, master) = if secured {
        secured_configurations(target).remove(0)
    } else {
        configurations(target).remove(0)
    };
    extra.extend(strings(&["--cases", id]));
    let (_, verdicts) = run_config(target, Some(fault), FAULT_PATIENCE, &(extra, master));
    verdicts.get(id).cloned().unwrap_or_default()
}

#[test]
fn non_auth_cases_fail_against_broken_secured_endpoints_as_unsecured() {
    // Authenticating the suite's connections must hide no breakage: a representative case of
    // each kind (a version choice, framing after the handshake, a client's reading of the
    // answer, a flow) fails against a secured endpoint broken behind the fault proxy exactly as
    // it fails against the same endpoint unsecured.
    let checks = [
        (
            Target::Master,
            fault("lowest-version"),
            "handshake/6/highest-version",
        ),
        (Target::Master, fault("duplicate"), "spec/3/reply-once"),
        (Target::Worker, fault("mute"), "rules/W1/register-first"),
        (
            Target::Driver,
            fault("duplicate"),
            "flow/driver/job/completes",
        ),
        (
            Target::Executor,
            fault("duplicate"),
            "handshake/4/unknown-keys-ignored",
        ),
        (Target::Executor, fault("mute"), "spec/10/task-finished"),
    ];
    std::thread::scope(|scope| {
        let handles: Vec<_> = checks
            .iter()
            .map(|&(t, f, id)| {
                scope.spawn(move || {
                    let plain = verdict_under(t, f, false, id);
                    let secured = verdict_under(t, f, true, id);
                    (t, f, id, plain, secured)
                })
            })
            .collect();
        for h in handles {
            let (t, f, id, plain, secured) = h.join().expect("a fault run");
            assert_eq!(plain, "fail", "{t} {id} under {}, unsecured", f.name());
            assert_eq!(secured, "fail", "{t} {id} under {}, secured", f.name());
        }
    });
}

/// Runs the suite with arguments it must refuse before any case runs: exit status 2, the reason
/// on standard error, and no report (no case ran).
fn refused_before_any_case(args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!(
        "sparkwire-conformance-refused-{}-{}",
        std::process::id(),
        run_number()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let json = dir.join("r.json");
    let out = Command::new(suite())
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .output()
        .expect("run the suite");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        !json.exists(),
        "{args:?}: a report was written, so cases ran"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("PASS"),
        "{args:?}: cases ran"
    );
    let _ = std::fs::remove_dir_all(&dir);
    stderr
}

#[test]
fn arguments_that_would_fail_every_case_stop_the_suite_before_any_case_with_status_2() {
    let spawn =
        |template: &str| refused_before_any_case(&["--target", "worker", "--spawn", template]);
    let bin = sparkwire();
    let bin = bin.display();
    let e = spawn(&format!("{bin} worker {{master}} --webui-port 0"));
    assert!(e.contains("unknown placeholder {master}"), "{e}");
    let e = spawn(&format!("{bin} worker {{master_url}} --job {{job}}"));
    assert!(
        e.contains("placeholder {job} has no value for this target"),
        "{e}"
    );
    let e = spawn(&format!(
        "{bin} worker {{master_url}} --secret-file {{secret_file}}"
    ));
    assert!(e.contains("give --secret-file"), "{e}");
    let e = spawn("/no/such/program {master_url}");
    assert!(
        e.contains("the program /no/such/program does not exist or is not executable"),
        "{e}"
    );
    let e = spawn("no-such-sparkwire-program {master_url}");
    assert!(
        e.contains("no-such-sparkwire-program is not on PATH"),
        "{e}"
    );
    // A master nothing listens on: a port that was free a moment ago.
    let e = refused_before_any_case(&[
        "--target",
        "master",
        "--addr",
        &format!("127.0.0.1:{}", free_port()),
    ]);
    assert!(e.contains("cannot connect to 127.0.0.1:"), "{e}");
    let e = refused_before_any_case(&["--target", "worker", "--spawn", "sh", "--jobs", "0"]);
    assert!(e.contains("--jobs must be at least 1"), "{e}");
    // A server template without its port, with a placeholder only some cases give outside
    // [[…]], or for another target than the master.
    let nowhere = format!("127.0.0.1:{}", free_port());
    let server = |template: &str| {
        refused_before_any_case(&[
            "--target",
            "master",
            "--addr",
            &nowhere,
            "--spawn-server",
            template,
        ])
    };
    let e = server(&format!("{bin} master --idle-timeout {{idle_timeout}}"));
    assert!(e.contains("must use {port}"), "{e}");
    let e = server(&format!(
        "{bin} master --port {{port}} --secret-file {{secret_file}}"
    ));
    assert!(e.contains("inside [[…]]"), "{e}");
    let e = refused_before_any_case(&[
        "--target",
        "worker",
        "--spawn",
        "sh",
        "--spawn-server",
        "sh {port}",
    ]);
    assert!(e.contains("--spawn-server is for --target master"), "{e}");
}

// ---- the judge: every frame of the endpoint checked by the crate's validator ----

/// The master target against a reference master behind `fault`, with the cases' judge on or off
/// (`--no-judge`): the exit code and the JSON report.
fn master_under(fault: Fault, judge: bool) -> (i32, serde_json::Value) {
    let master = Master::start(&[]);
    let mut args = strings(&[
        "--target",
        "master",
        "--addr",
        &master.addr,
        "--patience",
        FAULT_PATIENCE,
        "--fault",
        fault.name(),
    ]);
    if !judge {
        args.push("--no-judge".into());
    }
    run_report(&args)
}

/// The cases of `report` that failed.
fn failed_cases(report: &serde_json::Value) -> Vec<&serde_json::Value> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .collect()
}

#[test]
fn only_the_judge_catches_a_master_that_sends_a_message_off_its_route() {
    // Behind the off-route fault the master adds a Heartbeat (a worker's message) after the first
    // one-way message it sends on each connection: no case looks for it, so without the judge
    // every case passes ...
    let (code, report) = master_under(fault("off-route"), false);
    assert_eq!(code, 0, "without the judge: {:?}", failed_cases(&report));
    // ... and with it, the cases in which it crosses fail, naming rule M1, with the frame marked
    // in their wire log.
    let (code, report) = master_under(fault("off-route"), true);
    assert_eq!(code, 1);
    let failed = failed_cases(&report);
    assert!(!failed.is_empty());
    for c in &failed {
        let seen = c["seen"].as_str().unwrap_or("");
        assert!(seen.contains("[M1 route.defined]"), "{}: {seen}", c["id"]);
        let log: Vec<&str> = c["wire_log"]
            .as_array()
            .expect("a wire log")
            .iter()
            .filter_map(|l| l.as_str())
            .collect();
        let marked = log
            .iter()
            .position(|l| l.contains("✗ the frame above breaks the protocol"))
            .unwrap_or_else(|| panic!("{}: no frame marked in {log:#?}", c["id"]));
        assert!(
            marked > 0
                && log[marked - 1].contains(r#"{"Heartbeat":{"workerId":"worker-off-route""#),
            "{}: the line above the mark is not the Heartbeat: {log:#?}",
            c["id"]
        );
    }
}

#[test]
fn the_judge_decodes_every_frame_strictly_failure_envelopes_included() {
    // A worker whose failure envelopes lack their `message` (SPEC §3): the cases that read a
    // failure fail, and the judge names the strict decoding of the frame.
    let spawn = strings(&["--target", "worker", "--spawn", &template(Target::Worker)]);
    let mut args = spawn.clone();
    args.extend(strings(&[
        "--patience",
        FAULT_PATIENCE,
        "--fault",
        fault("failure-without-message").name(),
        "--cases",
        "route/",
    ]));
    let (code, report) = run_report(&args);
    assert_eq!(code, 1);
    let failed = failed_cases(&report);
    assert!(!failed.is_empty());
    for c in failed {
        let seen = c["seen"].as_str().unwrap_or("");
        assert!(
            seen.contains("does not decode strictly (SPEC §11)") && seen.contains("`message`"),
            "{}: {seen}",
            c["id"]
        );
    }
}

/// Each fault only the judge catches (`Scope::Judge`), the target it breaks, a case that fails
/// under it with the judge on, and what the failure names.
const JUDGED: &[(&str, Target, &str, &str)] = &[
    (
        "executor-added-unlaunched",
        Target::Master,
        "flow/master/executor/added",
        "[N1 end.executor-added-launched]",
    ),
    (
        "registration-unanswered",
        Target::Master,
        "rules/N3/registration-answered-by-the-end",
        "[N3 end.app-registered]",
    ),
    (
        "executor-state-unreported",
        Target::Worker,
        "rules/N4/launch-answered-by-the-end",
        "[N4 end.executor-state]",
    ),
    (
        "final-status-dropped",
        Target::Executor,
        "rules/N2/task-ended-by-the-end",
        "[N2 end.task-ended]",
    ),
    (
        "ask-id-reused",
        Target::Executor,
        "handshake/6/version-2-chosen",
        "[A1 ask.unique-id]",
    ),
    (
        "commands-unregistered",
        Target::Master,
        "rules/W2/worker-id",
        "[W6 worker.commands-registered]",
    ),
    (
        "app-id-wrong",
        Target::Driver,
        "flow/driver/job/completes",
        "[P2 app.id]",
    ),
    (
        "app-end-twice",
        Target::Driver,
        "flow/driver/job/completes",
        "[P5 app.after-finish]",
    ),
    (
        "app-finished-early",
        Target::Master,
        "flow/master/executor/launch-fields",
        "[P6 app.finished-notice]",
    ),
    (
        "executor-talks-first",
        Target::Executor,
        "flow/executor/registration-refused",
        "[X1 executor.register-first]",
    ),
    (
        "unknown-task-status",
        Target::Executor,
        "spec/10/task-finished",
        "[T2 task.known]",
    ),
    (
        "local-message-sent",
        Target::Master,
        "rules/W2/worker-id",
        "does not decode strictly (SPEC §11): WorkDirCleanup",
    ),
    (
        "wrong-kind",
        Target::Master,
        "rules/W2/worker-id",
        "[M3 route.kind]",
    ),
    (
        "version-2-on-v1",
        Target::Master,
        "flow/master/registration/worker-v1",
        "does not decode strictly (SPEC §11): DecommissionWorker",
    ),
];

#[test]
fn the_judge_catches_each_of_its_faults() {
    let _heavy = heavy();
    // Every fault of the judge's scope is in the table, for a target it names.
    for f in Fault::all().filter(|f| !f.judged_in().is_empty()) {
        assert!(
            JUDGED
                .iter()
                .any(|(name, t, _, _)| *name == f.name() && f.judged_in().contains(t)),
            "{} is not in JUDGED",
            f.name()
        );
    }
    for (name, target, case, names) in JUDGED {
        let f = fault(name);
        let mut args = match target {
            Target::Master => Vec::new(),
            t => strings(&["--target", t.name(), "--spawn", &template(*t)]),
        };
        let master = (*target == Target::Master).then(|| Master::start(&[]));
        if let Some(m) = &master {
            args.extend(strings(&["--target", "master", "--addr", &m.addr]));
        }
        args.extend(strings(&[
            "--patience",
            FAULT_PATIENCE,
            "--fault",
            f.name(),
            "--cases",
            case,
        ]));
        let (_, report) = run_report(&args);
        let found = report["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .find(|c| c["id"] == *case)
            .unwrap_or_else(|| panic!("{name}: no case {case}"));
        let seen = found["seen"].as_str().unwrap_or("");
        assert_eq!(found["verdict"], "fail", "{name}: {case}: {found}");
        assert!(
            seen.contains(names),
            "{name}: {case} does not name {names}: {seen}"
        );
    }
}

// ---- version profiles ----

#[test]
fn single_version_masters_pass_with_the_other_version_s_cases_skipped() {
    let _heavy = heavy();
    for (only, other_case) in [
        // A v1-only master: the cases that speak version 2 only are skipped ...
        ("1", "spec/2/size-limit"),
        // ... and a v2-only one, the cases of a version-1 worker or client.
        ("2", "flow/master/registration/worker-v1"),
    ] {
        let master = Master::start(&strings(&["--protocol-versions", only]));
        let (code, report) = run_report(&strings(&[
            "--target",
            "master",
            "--addr",
            &master.addr,
            "--patience",
            PASS_PATIENCE,
        ]));
        assert_eq!(
            code,
            0,
            "--protocol-versions {only}: {:?}",
            failed_cases(&report)
        );
        let case = report["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .find(|c| c["id"] == other_case)
            .expect("the case");
        assert_eq!(case["verdict"], "skipped", "--protocol-versions {only}");
        let reason = case["reason"].as_str().unwrap_or("");
        assert!(
            reason.contains("which the endpoint does not offer")
                && reason.contains(&format!("it offers [{only}]")),
            "{reason}"
        );
        let passed = report["totals"]["passed"].as_u64().unwrap_or(0);
        assert!(passed >= 20, "--protocol-versions {only}: {passed} passed");
    }
}

// ---- bounded time ----

#[test]
fn a_run_against_a_mute_master_ends_at_its_deadline_naming_the_cases_that_timed_out() {
    // Behind the mute fault the master answers the handshake and then nothing: every case waits.
    // With a deadline of 3 s, before the run can know the master is mute (its probe waits a
    // case's limit, 5 s), the run ends then (the cases still running are cut, those not started
    // are not run), every case it cut is reported as timed out, and the exit status says a
    // MUST failed.
    let master = Master::start(&[]);
    let start = std::time::Instant::now();
    let (code, report) = run_report(&strings(&[
        "--target",
        "master",
        "--addr",
        &master.addr,
        "--fault",
        fault("mute").name(),
        "--deadline",
        "3",
    ]));
    let took = start.elapsed();
    assert_eq!(code, 1);
    let cases = report["cases"].as_array().expect("cases");
    let timed_out: Vec<&serde_json::Value> =
        cases.iter().filter(|c| c["timed_out"] == true).collect();
    assert!(!timed_out.is_empty());
    for c in &timed_out {
        assert_eq!(c["verdict"], "fail", "{}", c["id"]);
    }
    // The alone cases come last: the deadline found them not started.
    assert!(
        timed_out.iter().any(|c| c["seen"]
            .as_str()
            .unwrap_or("")
            .starts_with("not run: the run's deadline (3 s, --deadline) passed first")),
        "{timed_out:#?}"
    );
    // A deadline, not a performance figure: the run ends at it, whatever the load (the slack is
    // for starting the suite and writing the report).
    assert!(took.as_secs() < 3 + 20, "the run took {took:?}");
}

#[test]
fn a_mute_master_is_known_mute_and_the_cases_not_started_are_not_run() {
    // Behind the mute fault, with the default deadline (50 s): the run's probe (a UI's
    // RequestMasterState, unanswered for a case's limit while no case hears a frame) concludes
    // the master is mute; the cases waiting stop then and say why, those not started are not
    // run, and the deadline never comes into it.
    let master = Master::start(&[]);
    let (code, report) = run_report(&strings(&[
        "--target",
        "master",
        "--addr",
        &master.addr,
        "--fault",
        fault("mute").name(),
    ]));
    assert_eq!(code, 1);
    let cases = report["cases"].as_array().expect("cases");
    let seen = |c: &serde_json::Value| c["seen"].as_str().unwrap_or("").to_string();
    let not_run: Vec<&serde_json::Value> = cases
        .iter()
        .filter(|c| seen(c).starts_with("not run: the endpoint is mute: its answer to RequestMasterState from a UI was still missing"))
        .collect();
    assert!(!not_run.is_empty(), "{cases:#?}");
    for c in &not_run {
        assert_eq!(c["verdict"], "fail", "{}", c["id"]);
        assert_eq!(c["expected"], "an endpoint that answers", "{}", c["id"]);
    }
    // The alone cases, last, are among them.
    assert!(not_run
        .iter()
        .any(|c| c["id"] == "flow/master/heartbeat/keeps-alive"));
    assert!(
        cases.iter().all(|c| !seen(c).contains("--deadline")),
        "the run reached its deadline: {cases:#?}"
    );
}

#[test]
fn a_master_that_never_closes_is_known_so_and_the_waits_for_a_close_stop() {
    // Behind the keep-open fault the master answers as it should but the suite never sees it
    // close a connection: the run's probe (a hello with the wrong magic, still open after a
    // case's limit while no case saw a close) concludes so, and the cases waiting for a close
    // fail saying so instead of waiting out their limit. Cases that need no close still pass.
    let master = Master::start(&[]);
    let (code, report) = run_report(&strings(&[
        "--target",
        "master",
        "--addr",
        &master.addr,
        "--fault",
        fault("keep-open").name(),
    ]));
    assert_eq!(code, 1);
    let cases = report["cases"].as_array().expect("cases");
    let known = cases
        .iter()
        .filter(|c| {
            c["seen"].as_str().unwrap_or("").contains(
                "(the suite stopped waiting: the endpoint keeps its connections open: it had not closed the connection of a hello with the wrong magic",
            )
        })
        .count();
    assert!(known > 0, "{cases:#?}");
    assert!(cases
        .iter()
        .any(|c| c["id"] == "flow/master/registration/registered" && c["verdict"] == "pass"));
    assert!(cases
        .iter()
        .all(|c| !c["seen"].as_str().unwrap_or("").contains("not run")));
}
