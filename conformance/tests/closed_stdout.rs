//! The suite's binary and a reader that stops early: `sparkwire-conformance --list | head -1`
//! must end the listing, not panic on the broken pipe (exit code 101 and a panic message).

use std::io::Read;
use std::process::{Command, Stdio};

#[test]
fn a_listing_whose_reader_closes_early_ends_without_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sparkwire-conformance"))
        .arg("--list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the suite's binary starts");
    // Read one byte, then close the pipe: the rest of the listing (hundreds of lines, more than
    // a pipe's buffer holds) meets a reader that has gone.
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut first = [0u8; 1];
    stdout.read_exact(&mut first).expect("the listing starts");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut stderr)
        .expect("stderr reads");
    let status = child.wait().expect("the suite's binary ends");
    assert!(
        !stderr.contains("panicked"),
        "the binary panicked on a closed stdout: {stderr}"
    );
    assert_ne!(
        status.code(),
        Some(101),
        "exit code 101 is a panic's: {stderr}"
    );
    assert!(
        status.success(),
        "a listing cut short by its reader is still a success: {status:?}"
    );
}
