//! `sparkwire sim` and a reader that has gone: `sparkwire sim --seeds N | head -0` must end with
//! its verdict in the exit code, not panic on the broken pipe (exit code 101 and a panic
//! message).

#![cfg(feature = "cli")]

use std::io::Read;
use std::process::{Command, Stdio};

/// Runs `sparkwire sim` with `args`, its standard output a pipe whose reader closes before the
/// simulator writes anything (the seeds take longer than the close): its exit status and what
/// it wrote to standard error.
fn sim_into_a_closed_pipe(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
        .arg("sim")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    drop(child.stdout.take().expect("stdout is piped"));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut stderr)
        .expect("stderr reads");
    (child.wait().expect("the binary ends"), stderr)
}

#[test]
fn a_search_whose_reader_has_gone_ends_without_a_panic_and_keeps_its_verdict() {
    let (status, stderr) = sim_into_a_closed_pipe(&[
        "--seeds",
        "40",
        "--faults",
        "delay,reset",
        "--nodes",
        "1,1,1",
    ]);
    assert!(
        !stderr.contains("panicked"),
        "the simulator panicked on a closed stdout: {stderr}"
    );
    assert_ne!(status.code(), Some(101), "a panic's exit code: {stderr}");
    assert!(
        status.success(),
        "seeds that kept every invariant still exit 0: {status:?} {stderr}"
    );
}

#[test]
fn a_case_with_a_planted_bug_is_refused_by_the_command_line() {
    // Planted bugs are reached only by tests (node::plant): not by a case file either.
    let case = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/sim/planted-ignores-memory.txt"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_sparkwire"))
        .args(["sim", "--case", case])
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("planted"), "{stderr}");
}
