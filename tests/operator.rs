//! What an operator does: a master and two workers started by hand, `sparkwire submit` in both
//! deploy modes (exit status = the job's success), the web UI while a job runs (`/json`,
//! `/metrics` as Prometheus text, the page in a real headless Chromium, the worker's page), and
//! `sparkwire status`.
//!
//! The browser test needs Debian's chromium, which the test command, `scripts/test.sh`, installs
//! when it is missing; set `SPARKWIRE_CHROMIUM` to use another binary.

#![cfg(feature = "webui")]

mod common;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::processes::{command, start, text, Proc, BIN};
use sparkwire::reference::webui::fetch;

const PATIENCE: Duration = Duration::from_secs(60);

/// `sparkwire ARGS`, its standard output piped, logging warnings only (to nowhere).
fn spawn_quiet(args: &[&str]) -> Child {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sparkwire")
}

/// The last word of a line (an address or URL).
fn last_word(line: &str) -> String {
    line.split_whitespace()
        .last()
        .unwrap_or_default()
        .to_string()
}

fn sparkwire(args: &[&str]) -> Output {
    command(args).output().expect("run sparkwire")
}

async fn get(url: &str) -> String {
    let (status, body) = fetch(url, PATIENCE).await.expect("the web UI answers");
    assert_eq!(status, 200, "{url}: {body}");
    body
}

async fn get_json(url: &str) -> serde_json::Value {
    serde_json::from_str(&get(url).await).expect("JSON")
}

/// Polls `url` (JSON) until `ok` holds.
async fn wait_json(
    url: &str,
    what: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let v = get_json(url).await;
        if ok(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "never {what}: {v:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Parses the Prometheus text format strictly: `# HELP` and `# TYPE` lines, each family's TYPE
/// before its samples, samples `name{label="value",…} number`. Returns (name with labels, value).
fn parse_prometheus(body: &str) -> Vec<(String, f64)> {
    let mut typed = std::collections::BTreeSet::new();
    let mut samples = Vec::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let name = parts.next().expect("a name");
            let kind = parts.next().expect("a type");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            assert!(typed.insert(name.to_string()), "family {name} typed twice");
            continue;
        }
        if line.starts_with("# HELP ") || line.is_empty() {
            continue;
        }
        assert!(!line.starts_with('#'), "stray comment {line:?}");
        let (series, value) = line.rsplit_once(' ').expect("series and value");
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let name = series.split('{').next().expect("name");
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        assert!(typed.contains(name), "{name} has no TYPE line before it");
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                assert!(labels.starts_with('{') && labels.ends_with('}'), "{line:?}");
                for pair in labels[1..labels.len() - 1].split("\",") {
                    let (k, v) = pair.split_once("=\"").expect("label=\"value\"");
                    assert!(k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                    assert!(!v.trim_end_matches('"').contains('"'), "{line:?}");
                }
            }
        }
        samples.push((series.to_string(), value));
    }
    samples
}

fn sample(samples: &[(String, f64)], series: &str) -> f64 {
    samples
        .iter()
        .find(|(s, _)| s == series)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no sample {series}"))
}

/// The page as Chromium renders it (`--dump-dom`), in a fresh profile.
fn browser_dom(url: &str) -> String {
    let chromium = std::env::var("SPARKWIRE_CHROMIUM").unwrap_or_else(|_| "chromium".into());
    let profile = std::env::temp_dir().join(format!("sparkwire-chromium-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&profile);
    let out = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {chromium} ({e}): run the tests with scripts/test.sh, which installs chromium (as root), or `apt-get install -y chromium`")
        });
    let _ = std::fs::remove_dir_all(&profile);
    assert!(out.status.success(), "chromium failed: {:?}", out.status);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_submits_to_a_cluster_started_by_hand_and_watches_it() {
    let work = std::env::temp_dir().join(format!("sparkwire-operator-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let master = start(&["master", "--port", "0", "--webui-port", "0"]);
    let url = last_word(&master.line_within(PATIENCE));
    let ui = last_word(&master.line_within(PATIENCE));
    assert!(url.starts_with("sparkwire://127.0.0.1:"), "{url}");
    assert!(ui.starts_with("http://127.0.0.1:"), "{ui}");
    let mut workers = Vec::new();
    let mut worker_uis = Vec::new();
    for i in 0..2 {
        let dir = work.join(format!("w{i}"));
        let w = start(&[
            "worker",
            &url,
            "--cores",
            "1",
            "--memory",
            "2048",
            "--webui-port",
            "0",
            // Cluster deploy mode runs `sparkwire submit` as the driver: only a program allowed
            // with any arguments may be a driver (SPEC §14.5).
            "--allow-exec-any",
            BIN,
            "--work-dir",
            dir.to_str().expect("utf-8"),
        ]);
        let _ = w.line_within(PATIENCE);
        worker_uis.push(last_word(&w.line_within(PATIENCE)));
        workers.push(w);
    }
    let json_url = format!("{ui}/json");
    wait_json(&json_url, "two workers ALIVE", |v| v["aliveworkers"] == 2).await;

    // Client deploy mode: the driver in the submit process.
    let out = sparkwire(&["submit", "--master", &url, "--job", "pi"]);
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(printed.contains("job pi: Pi is roughly 3.1"), "{printed}");
    assert!(
        printed.contains("validator (driver side, strict): valid"),
        "{printed}"
    );

    // A job that fails: exit status 1.
    let out = sparkwire(&[
        "submit",
        "--master",
        &url,
        "--job",
        "flaky",
        "--param",
        "10",
        "--partitions",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("job flaky FAILED"), "{}", text(&out));

    // Cluster deploy mode: a worker runs the driver; its output comes from the worker's web UI.
    let out = sparkwire(&[
        "submit",
        "--master",
        &url,
        "--job",
        "pi",
        "--deploy-mode",
        "cluster",
        "--driver-memory",
        "512m",
    ]);
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(
        printed.contains("Driver successfully submitted as driver-"),
        "{printed}"
    );
    assert!(printed.contains(": RUNNING on worker worker-"), "{printed}");
    assert!(printed.contains(": FINISHED"), "{printed}");
    assert!(printed.contains("job pi: Pi is roughly 3.1"), "{printed}");

    // A job that runs long enough to be watched.
    let mut job = spawn_quiet(&[
        "submit",
        "--master",
        &url,
        "--job",
        "sleep",
        "--param",
        "6000",
        "--partitions",
        "4",
        "--executors",
        "2",
    ]);
    let state = wait_json(&json_url, "the application RUNNING on both workers", |v| {
        v["activeapps"][0]["state"] == "RUNNING" && v["coresused"] == 2
    })
    .await;
    let app_id = state["activeapps"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(state["activeapps"][0]["name"], "sparkwire sleep");
    assert_eq!(state["activeapps"][0]["memoryperexecutor"], 1024);
    assert_eq!(state["status"], "ALIVE");
    assert_eq!(state["completedapps"].as_array().map(Vec::len), Some(3));
    assert_eq!(state["completeddrivers"][0]["state"], "FINISHED");
    let worker_ids: Vec<String> = state["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .map(|w| {
            assert_eq!(w["state"], "ALIVE");
            assert_eq!(w["coresfree"], 0);
            assert_eq!(w["memoryfree"], 1024);
            assert!(
                worker_uis.contains(&w["webuiaddress"].as_str().unwrap_or("").to_string()),
                "{w}"
            );
            w["id"].as_str().expect("id").to_string()
        })
        .collect();

    let metrics = parse_prometheus(&get(&format!("{ui}/metrics")).await);
    assert_eq!(sample(&metrics, "sparkwire_master_workers_alive"), 2.0);
    assert_eq!(sample(&metrics, "sparkwire_master_cores_used"), 2.0);
    assert_eq!(sample(&metrics, "sparkwire_master_executors"), 2.0);
    assert_eq!(
        sample(&metrics, "sparkwire_master_applications{state=\"active\"}"),
        1.0
    );
    assert_eq!(
        sample(&metrics, "sparkwire_master_connections{role=\"worker\"}"),
        2.0
    );
    assert!(
        sample(
            &metrics,
            "sparkwire_master_frames_total{direction=\"received\",message=\"RegisterWorker\"}"
        ) >= 2.0
    );
    assert!(
        sample(
            &metrics,
            "sparkwire_master_bytes_total{direction=\"sent\",message=\"LaunchExecutor\"}"
        ) > 0.0
    );

    let dom = browser_dom(&format!("{ui}/"));
    assert!(dom.contains(&format!("Spark Master at {url}")), "{dom}");
    assert!(
        dom.contains("Workers (2)") && dom.contains("Running Applications (1)"),
        "{dom}"
    );
    assert!(
        dom.contains("Executors (2)") && dom.contains("Completed Drivers (1)"),
        "{dom}"
    );
    for id in &worker_ids {
        assert!(dom.contains(id.as_str()), "{id} not shown: {dom}");
    }
    assert!(
        dom.contains(&app_id) && dom.contains("RUNNING") && dom.contains("ALIVE"),
        "{dom}"
    );
    assert!(dom.contains("1 (1 Used, 0 Free)"), "{dom}");
    assert!(dom.contains("http-equiv=\"refresh\""), "{dom}");

    let worker_state = get_json(&format!("{}/json", worker_uis[0])).await;
    assert_eq!(worker_state["executors"][0]["appid"], app_id.as_str());
    assert_eq!(worker_state["masterurl"], url.as_str());
    let worker_page = get(&format!("{}/", worker_uis[0])).await;
    assert!(
        worker_page.contains("Running Executors (1)"),
        "{worker_page}"
    );

    let status = sparkwire(&["status", &url]);
    let table = text(&status);
    assert!(status.status.success(), "{table}");
    assert!(
        table.contains("WORKERS (2)") && table.contains("RUNNING APPLICATIONS (1)"),
        "{table}"
    );
    assert!(
        table.contains(&app_id) && table.contains(&worker_ids[0]),
        "{table}"
    );
    let status = sparkwire(&["status", &url, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status --json");
    assert_eq!(v["aliveworkers"], 2);
    assert_eq!(v["activeapps"][0]["id"], app_id.as_str());

    let done = job.wait().expect("submit exits");
    assert!(done.success(), "the watched job failed");
    drop(workers);
    drop(master);
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn status_names_a_master_it_cannot_reach() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let out = sparkwire(&["status", &format!("sparkwire://127.0.0.1:{port}")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "cannot connect to 127.0.0.1:{port}: connection refused"
        )),
        "{err}"
    );
}

#[test]
fn status_pointed_at_a_web_ui_says_it_is_an_http_server() {
    let master = start(&["master", "--port", "0", "--webui-port", "0"]);
    let _ = master.line_within(PATIENCE);
    let ui = last_word(&master.line_within(PATIENCE));
    let at = ui.strip_prefix("http://").expect("an http URL");
    let out = sparkwire(&["status", &format!("sparkwire://{at}")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "the master at {at} is an HTTP server (a web UI?), not a sparkwire endpoint"
        )),
        "{err}"
    );
    assert!(!err.contains("1213486160"), "{err}");
}

/// `submit` to a master without workers does not wait in silence: after 15 s it warns as Spark
/// does, and again every 15 s.
#[test]
fn submit_to_a_master_without_workers_warns_as_spark_does() {
    let master = start(&["master", "--port", "0", "--no-webui"]);
    let url = last_word(&master.line_within(PATIENCE));
    let mut command = Command::new(BIN);
    command
        .args(["submit", "--master", &url, "--job", "pi"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let submit = Proc::spawn_reading_stderr(command);
    let mut seen = Vec::new();
    let warned = loop {
        match submit.next_line(PATIENCE) {
            // Spark's line, with the reason the master gives in place of its generic advice
            // (SPEC §16).
            Some(line) if line.contains("WARN") && line.contains("Initial job has not accepted any resources; the master says the application waits: no alive worker") => break true,
            Some(line) => seen.push(line),
            None => break false,
        }
    };
    drop(submit);
    assert!(warned, "{seen:#?}");
}

#[test]
fn a_launch_the_worker_refuses_reaches_the_driver_with_its_reason() {
    let work = std::env::temp_dir().join(format!("sparkwire-refused-{}", std::process::id()));
    let master = start(&["master", "--port", "0", "--no-webui"]);
    let url = last_word(&master.line_within(PATIENCE));
    // No --allow-exec: this worker runs nothing.
    let worker = start(&[
        "worker",
        &url,
        "--no-webui",
        "--work-dir",
        work.to_str().expect("utf-8"),
    ]);
    let _ = worker.line_within(PATIENCE);
    let out = sparkwire(&[
        "submit",
        "--master",
        &url,
        "--job",
        "pi",
        "--executor-timeout",
        "50",
    ]);
    let printed = text(&out);
    assert_ne!(out.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains("Master removed our application: FAILED"),
        "{printed}"
    );
    assert!(
        printed.contains("not on the worker's allow-list (--allow-exec"),
        "the refusal's reason is not told: {printed}"
    );
    drop(worker);
    drop(master);
    let _ = std::fs::remove_dir_all(&work);
}

/// A port the system gives as free now, with the `n` ports above it free too (as far as a bind
/// tells): the test's own base port, never a fixed number.
fn free_base(n: u16) -> u16 {
    for _ in 0..50 {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = probe.local_addr().expect("addr").port();
        drop(probe);
        if base.checked_add(n).is_none() {
            continue;
        }
        if (0..=n).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
    panic!("no run of {n} free ports on 127.0.0.1");
}

/// Spark's `spark.port.maxRetries`: two workers given the same ports (as two started with the
/// defaults on one host are) both start, the second on the next ports up, both register and both
/// web UIs serve; so do two masters. The port taken is what each prints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_started_twice_on_one_port_take_the_next_ports_up_as_spark_does() {
    let base = free_base(3);
    let (p, ui) = (base.to_string(), (base + 2).to_string());
    let first = start(&["master", "--port", &p, "--webui-port", &ui]);
    let second = start(&["master", "--port", &p, "--webui-port", &ui]);
    let announced = |m: &Proc| {
        (
            last_word(&m.line_within(PATIENCE)),
            last_word(&m.line_within(PATIENCE)),
        )
    };
    let (url, master_ui) = announced(&first);
    let (url2, master_ui2) = announced(&second);
    // Both started at once: which one won each port is not fixed, only that they differ and
    // lie within the retries (both are tried upward from the same base).
    let mut ports = [&url, &url2].map(|u| u.rsplit(':').next().unwrap_or("").to_string());
    ports.sort();
    assert_eq!(
        ports,
        [base.to_string(), (base + 1).to_string()],
        "{url} {url2}"
    );
    let mut uis = [&master_ui, &master_ui2].map(|u| u.rsplit(':').next().unwrap_or("").to_string());
    uis.sort();
    // Each master binds its own port before its web UI's: base and base + 1 are the masters'.
    assert_eq!(
        uis,
        [(base + 2).to_string(), (base + 3).to_string()],
        "{master_ui} {master_ui2}"
    );
    drop(second);

    // Two workers, as started with the same default-style ports.
    let worker_base = free_base(3);
    let (wp, wui) = (worker_base.to_string(), (worker_base + 2).to_string());
    let work = std::env::temp_dir().join(format!("sparkwire-ports-{}", std::process::id()));
    let mut workers = Vec::new();
    let mut worker_uis = Vec::new();
    let mut worker_ports = Vec::new();
    for i in 0..2 {
        let dir = work.join(format!("w{i}"));
        let w = start(&[
            "worker",
            &url,
            "--port",
            &wp,
            "--webui-port",
            &wui,
            "--cores",
            "1",
            "--work-dir",
            dir.to_str().expect("utf-8"),
        ]);
        let line = w.line_within(PATIENCE);
        worker_ports.push(
            last_word(&line)
                .rsplit(':')
                .next()
                .unwrap_or("")
                .to_string(),
        );
        worker_uis.push(last_word(&w.line_within(PATIENCE)));
        workers.push(w);
    }
    // Started one after the other: the first took the ports asked for, the second the next up.
    assert_eq!(
        worker_ports,
        [worker_base.to_string(), (worker_base + 1).to_string()]
    );
    assert_eq!(
        worker_uis,
        [
            format!("http://127.0.0.1:{}", worker_base + 2),
            format!("http://127.0.0.1:{}", worker_base + 3)
        ]
    );
    wait_json(&format!("{master_ui}/json"), "two workers ALIVE", |v| {
        v["aliveworkers"] == 2
    })
    .await;
    for ui in &worker_uis {
        let page = get(&format!("{ui}/json")).await;
        assert!(page.contains("\"id\""), "{ui}: {page}");
    }
    drop(workers);
    drop(first);
    let _ = std::fs::remove_dir_all(&work);
}
