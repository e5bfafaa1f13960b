//! What the command line says when something is wrong: sizes out of range refused with their
//! limits, an empty trace refused, checks run outside the repository named as such, master URLs
//! under one rule, a worker that cannot reach its master saying so at WARN with its retry
//! schedule, a worker without an allow-list warning at start, and no colour codes into a pipe.

mod common;

use common::processes::{Proc, BIN};

use common::files::temp_dir;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run_in(dir: Option<&std::path::Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdin(Stdio::null()).env_remove("RUST_LOG");
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    cmd.output().expect("run sparkwire")
}

fn refused(args: &[&str], expected: &str) {
    let out = run_in(None, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(expected), "{args:?}: {err}");
}

#[test]
fn sizes_out_of_range_are_refused_with_their_limits() {
    refused(
        &["local-cluster", "--partitions", "0"],
        "--partitions must be 1 to 1000000, not 0",
    );
    refused(
        &["local-cluster", "--workers", "100000"],
        "--workers must be 1 to 64 (each is a process on this machine), not 100000",
    );
    refused(
        &["local-cluster", "--cores", "0"],
        "--cores must be 1 to 1024",
    );
    refused(
        &["local-cluster", "--job", "nope"],
        "unknown job \"nope\"; jobs: pi,",
    );
    let master = "sparkwire://127.0.0.1:9";
    refused(
        &["submit", "--master", master, "--partitions", "0"],
        "--partitions must be 1 to 1000000, not 0",
    );
    refused(
        &["submit", "--master", master, "--executor-memory", "lots"],
        "--executor-memory \"lots\": expected a size such as 512m or 2g",
    );
    refused(
        &["submit", "--master", master, "--executor-cores", "0"],
        "--executor-cores must be at least 1",
    );
}

/// Every flag whose number turns into memory (or into a time added to a clock) is bounded before
/// anything is allocated or started: a one-line error and exit status 2, never an abort, a panic
/// or a backtrace, whatever the number.
#[test]
fn every_size_and_count_flag_is_bounded_before_anything_is_allocated() {
    const HUGE: &str = "18446744073709551615";
    // Nothing listens here, and nothing is dialled: every refusal comes first.
    let master = "sparkwire://127.0.0.1:9";
    let bytes = "at most 2146435072 (2047 MiB, the largest message Spark allows), not";
    let cases: Vec<(Vec<&str>, String)> = vec![
        // --param of the jobs that allocate it (the abort).
        (
            vec!["local-cluster", "--job", "big-task", "--param", "999999999999"],
            format!("--param for big-task is bytes per task, {bytes} 999999999999"),
        ),
        (
            vec!["local-cluster", "--job", "big-result", "--param", HUGE],
            format!("--param for big-result is bytes per task, {bytes} {HUGE}"),
        ),
        (
            vec!["submit", "--master", master, "--job", "big-task", "--param", HUGE],
            format!("--param for big-task is bytes per task, {bytes} {HUGE}"),
        ),
        (
            vec!["driver", "--master", master, "--job", "big-result", "--param", HUGE],
            format!("--param for big-result is bytes per task, {bytes} {HUGE}"),
        ),
        // --partitions, in all three commands that run a job.
        (
            vec!["local-cluster", "--partitions", HUGE],
            format!("--partitions must be 1 to 1000000, not {HUGE}"),
        ),
        (
            vec!["submit", "--master", master, "--partitions", HUGE],
            format!("--partitions must be 1 to 1000000, not {HUGE}"),
        ),
        (
            vec!["driver", "--master", master, "--partitions", HUGE],
            format!("--partitions must be 1 to 1000000, not {HUGE}"),
        ),
        // Message and frame sizes.
        (
            vec!["driver", "--master", master, "--max-message-size", "4000000000"],
            "--max-message-size must be 1 to 2047 (MiB)".into(),
        ),
        (
            vec!["local-cluster", "--max-message-size", "4000000000"],
            "--max-message-size must be 1 to 2047 (MiB)".into(),
        ),
        (
            vec!["master", "--port", "0", "--no-webui", "--max-frame-bytes", HUGE],
            format!("--max-frame-bytes must be 1 to 2146435072 (2047 MiB, as spark.rpc.message.maxSize), not {HUGE}"),
        ),
        (
            vec!["worker", master, "--no-webui", "--max-frame-bytes", "0"],
            "--max-frame-bytes must be 1 to 2146435072".into(),
        ),
        // Connections held at once.
        (
            vec!["master", "--port", "0", "--no-webui", "--max-connections", HUGE],
            format!("--max-connections must be 1 to 1048576, not {HUGE}"),
        ),
        (
            vec!["worker", master, "--no-webui", "--max-connections", HUGE],
            format!("--max-connections must be 1 to 1048576, not {HUGE}"),
        ),
        (
            vec!["driver", "--master", master, "--max-connections", HUGE],
            format!("--max-connections must be 1 to 1048576, not {HUGE}"),
        ),
        // Times that are added to a clock's reading.
        (
            vec!["local-cluster", "--executor-timeout", HUGE],
            format!("--executor-timeout {HUGE} is over the most it takes, 315360000 seconds"),
        ),
        (
            vec!["submit", "--master", master, "--executor-timeout", HUGE],
            format!("--executor-timeout {HUGE} is over the most it takes, 315360000 seconds"),
        ),
        (
            vec!["driver", "--master", master, "--registration-timeout", HUGE],
            format!("--registration-timeout {HUGE} is over the most it takes"),
        ),
        (
            vec!["master", "--port", "0", "--no-webui", "--worker-timeout", "1e18"],
            "--worker-timeout: 1000000000000000000 seconds is over the most any flag takes".into(),
        ),
        (
            vec!["worker", master, "--no-webui", "--register-retry", "1e18"],
            "--register-retry: 1000000000000000000 seconds is over the most".into(),
        ),
        (
            vec!["master", "--port", "0", "--no-webui", "--idle-timeout", "1e300"],
            "--idle-timeout: ".into(),
        ),
        // Sizes with units.
        (
            vec!["submit", "--master", master, "--executor-memory", "99999999999g"],
            "--executor-memory \"99999999999g\": too large".into(),
        ),
    ];
    for (args, expected) in &cases {
        let out = run_in(None, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected.as_str()), "{args:?}: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line: {err}"
        );
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{args:?}: {err}"
        );
    }
}

/// An allow-list entry that cannot run is an error at start, not a warning; an empty one (what
/// `"$(command -v sparkwire)"` gives without sparkwire on PATH) says where it came from.
#[test]
fn a_worker_refuses_an_allow_list_entry_that_cannot_run_and_explains_an_empty_one() {
    let master = "sparkwire://127.0.0.1:9";
    for flag in ["--allow-exec", "--allow-exec-any"] {
        refused(
            &["worker", master, flag, ""],
            "If it came from \"$(command -v sparkwire)\", no sparkwire is on PATH",
        );
        refused(
            &["worker", master, flag, "/no/such/program"],
            "no such program to allow",
        );
    }
    refused(
        &["worker", master, "--allow-exec", "/"],
        "not a file: a worker runs only programs",
    );
}

#[test]
fn master_urls_take_sparkwire_and_spark_schemes_and_say_so() {
    refused(
        &["worker", "http://127.0.0.1:7077"],
        "it must start with sparkwire:// (or spark://, taken as the same)",
    );
    refused(
        &["submit", "--master", "127.0.0.1:7077"],
        "it must start with sparkwire:// (or spark://, taken as the same)",
    );
    // spark:// reaches the same (absent) master as sparkwire:// would: the error is about the
    // connection, not the URL.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    for scheme in ["spark", "sparkwire"] {
        refused(
            &["status", &format!("{scheme}://127.0.0.1:{port}")],
            &format!("cannot connect to 127.0.0.1:{port}: connection refused"),
        );
    }
}

#[test]
fn an_empty_trace_is_refused() {
    let dir = temp_dir("empty-trace");
    let trace = dir.join("empty.jsonl");
    std::fs::write(&trace, "").expect("write");
    refused(&["validate", trace.to_str().expect("utf-8")], "no events");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn checks_outside_the_repository_root_say_so() {
    let dir = temp_dir("not-root");
    for what in ["vectors", "docs"] {
        let out = run_in(Some(&dir), &["spec", what, "--check"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains("run the check at the root of the sparkwire repository"),
            "{what}: {err}"
        );
        assert!(!err.contains("stale"), "{what}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_worker_names_an_unreachable_master_and_its_retries_and_warns_without_an_allow_list() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let mut command = Command::new(BIN);
    command
        .args([
            "worker",
            &format!("sparkwire://127.0.0.1:{port}"),
            "--no-webui",
            "--register-retry",
            "0.2",
        ])
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let worker = Proc::spawn_reading_stderr(command);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let mut refused_twice = 0;
    while refused_twice < 2 && Instant::now() < deadline {
        if let Some(line) = worker.next_line(Duration::from_secs(1)) {
            if line.contains(&format!(
                "cannot connect to 127.0.0.1:{port}: connection refused"
            )) {
                refused_twice += 1;
            }
            seen.push(line);
        }
    }
    drop(worker);
    let text = seen.join("\n");
    assert_eq!(refused_twice, 2, "{text}");
    let refusal = seen
        .iter()
        .find(|l| l.contains("connection refused"))
        .expect("a refusal");
    assert!(refusal.contains("WARN"), "{refusal}");
    assert!(refusal.contains("; retrying in "), "{refusal}");
    assert!(refusal.contains("attempts left"), "{refusal}");
    assert!(
        seen.iter().any(|l| l.contains("WARN")
            && l.contains("no executable is allowed (--allow-exec, --allow-exec-any)")),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "colour codes in a pipe: {text}");
    assert!(!text.contains("Some("), "a Debug form: {text}");
}

/// The reference driver's Spark failure ("All masters are unresponsive!") carries the typed
/// connection error it met, not only Spark's generic words.
#[test]
fn a_driver_that_reaches_no_master_names_the_connection_error() {
    // A port held (bound) but not listening: refused for as long as the test runs, and taken by
    // nothing else on the machine meanwhile.
    let held = tokio::net::TcpSocket::new_v4().expect("a socket");
    held.bind("127.0.0.1:0".parse().expect("address"))
        .expect("bind");
    let port = held.local_addr().expect("address").port();
    let url = format!("sparkwire://127.0.0.1:{port}");
    let out = run_in(
        None,
        &["driver", "--master", &url, "--registration-timeout", "1"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "All masters are unresponsive! Giving up. ({url}: cannot connect to 127.0.0.1:{port}: connection refused"
        )),
        "{err}"
    );
}
