//! Why an application waits, as `submit` says when it gives up (SPEC §16): the reason the master
//! gives for the application, asked by the driver, in place of Spark's generic "Initial job has
//! not accepted any resources". Real processes on loopback.

mod common;

use std::time::Duration;

use common::processes::{command, start, text};

const PATIENCE: Duration = Duration::from_secs(60);

fn last_word(line: &str) -> String {
    line.split_whitespace()
        .last()
        .unwrap_or_default()
        .to_string()
}

/// `submit --job pi` to `url` with `extra` arguments and a 3 s executor timeout: its exit code
/// and its last line (`sparkwire: …`).
fn submit(url: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec![
        "submit",
        "--master",
        url,
        "--job",
        "pi",
        "--executor-timeout",
        "3",
    ];
    args.extend_from_slice(extra);
    let out = command(&args).output().expect("run sparkwire submit");
    let printed = text(&out);
    let last = printed
        .lines()
        .rev()
        .find(|l| l.starts_with("sparkwire: "))
        .unwrap_or_default()
        .to_string();
    (out.status.code(), last, printed)
}

#[test]
fn submit_gives_up_with_the_reason_the_master_gives() {
    let work = std::env::temp_dir().join(format!("sparkwire-waiting-{}", std::process::id()));
    let master = start(&["master", "--port", "0", "--no-webui"]);
    let url = last_word(&master.line_within(PATIENCE));

    // No worker at all.
    let (code, last, printed) = submit(&url, &[]);
    assert_eq!(code, Some(2), "{printed}");
    assert!(
        last.contains("the master says the application waits: no alive worker"),
        "{printed}"
    );

    // A worker with less memory than one executor takes.
    let worker = start(&[
        "worker",
        &url,
        "--no-webui",
        "--cores",
        "2",
        "--memory",
        "256",
        "--work-dir",
        work.to_str().expect("utf-8"),
    ]);
    let _ = worker.line_within(PATIENCE);
    let (code, last, printed) = submit(&url, &["--executor-memory", "512m"]);
    assert_eq!(code, Some(2), "{printed}");
    assert!(
        last.contains("no alive worker has room: an executor takes")
            && last.contains("512 MiB; memory short")
            && last.contains("has 2 cores, 256 MiB free"),
        "{printed}"
    );
    drop(worker);
    drop(master);
    let _ = std::fs::remove_dir_all(&work);
}
