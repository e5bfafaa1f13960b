//! The library guide's driver example (docs/library.md, linked from the README) runs as written:
//! from a program that links the crate (this test), with `sparkwire` on `PATH` as `cargo install` puts it, against a `sparkwire master` and a
//! `sparkwire worker` that allows only that `sparkwire`. The master listens on a port the system
//! picks, not the example's 7077 (the example's one difference, checked below): tests never
//! depend on a fixed port, and a cluster started by hand as docs/operating.md shows may be running beside them,
//! which the second test proves changes nothing.

use std::process::{Child, Command, Stdio};

mod common;
use common::files::temp_dir;
use common::processes::BIN;

const LIBRARY: &str = include_str!("../docs/library.md");
const THIS_FILE: &str = include_str!("readme.rs");

/// The driver example: the code block of docs/library.md after "The reference driver runs jobs".
fn readme_example() -> Vec<&'static str> {
    let after = LIBRARY
        .split("The reference driver runs jobs")
        .nth(1)
        .expect("docs/library.md has the driver example");
    let block = after
        .split("```rust,no_run\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a rust code block");
    block
        .lines()
        .map(|l| l.strip_prefix("# ").unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .collect()
}

// docs/library.md's example, line for line (the test checks that it is).
#[rustfmt::skip]
mod example {
use std::sync::Arc;
use sparkwire::reference::driver::{Driver, DriverConfig};
use sparkwire::reference::task::SumSquaresJob;

pub async fn demo(master: &str) -> Result<(), Box<dyn std::error::Error>> {
let mut config = DriverConfig::new("sum");
config.masters = vec![master.into()];
let driver = Driver::start(config).await?;
let result = driver.run(Arc::new(SumSquaresJob { partitions: 8, n: 1_000_000 })).await??;
println!("{}", result.output);
driver.stop().await;
Ok(()) }
}

struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first `n` lines `child` prints; a thread reads the rest so that the child never blocks
/// on a full pipe.
fn first_lines(child: &mut Child, n: usize) -> Vec<String> {
    use std::io::BufRead;
    let out = child.stdout.take().expect("stdout");
    let mut reader = std::io::BufReader::new(out);
    let mut lines = Vec::new();
    for _ in 0..n {
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        lines.push(line);
    }
    std::thread::spawn(move || {
        let mut sink = String::new();
        while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    lines
}

#[test]
fn the_library_guides_driver_example_runs_as_written() {
    // docs/library.md's example is this file's `example` module, line for line.
    let module = THIS_FILE
        .split("mod example {\n")
        .nth(1)
        .and_then(|m| m.split("\n}\n").next())
        .expect("the example module");
    // The example's master URL and the function without arguments are the only differences.
    let here: Vec<String> = module
        .lines()
        .map(|l| l.strip_prefix("pub ").unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.replace("demo(master: &str)", "demo()").replace(
                "vec![master.into()]",
                "vec![\"sparkwire://127.0.0.1:7077\".into()]",
            )
        })
        .collect();
    assert_eq!(
        readme_example(),
        here,
        "docs/library.md and tests/readme.rs differ"
    );

    let _one_at_a_time = sparkwire_on_path();
    run_the_example_on_a_cluster_of_its_own();
}

/// Puts `sparkwire` on PATH, as after `cargo install sparkwire`, and holds the tests of this file
/// one after the other: PATH is set while no other of them runs.
fn sparkwire_on_path() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    static PATH_SET: std::sync::Once = std::sync::Once::new();
    let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
    PATH_SET.call_once(|| {
        let bin_dir = std::path::Path::new(BIN).parent().expect("a directory");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![bin_dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        std::env::set_var("PATH", std::env::join_paths(dirs).expect("PATH"));
    });
    guard
}

/// Starts `sparkwire ARGS` (logging warnings only, standard output piped); returns it and the
/// lines it printed first (`lines` of them).
fn start(args: &[&str], lines: usize) -> (Kill, Vec<String>) {
    let mut child = Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sparkwire");
    let printed = first_lines(&mut child, lines);
    (Kill(child), printed)
}

/// The example against a master and a worker on ports the system picks.
fn run_the_example_on_a_cluster_of_its_own() {
    let (_master, line) = start(&["master", "--port", "0", "--no-webui"], 1);
    let url = line[0]
        .trim()
        .strip_prefix("sparkwire master listening on ")
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_string();
    let work = temp_dir("readme");
    let (_worker, _) = start(
        &[
            "worker",
            &url,
            "--no-webui",
            "--cores",
            "2",
            "--allow-exec",
            BIN,
            "--work-dir",
            work.to_str().expect("utf-8"),
        ],
        1,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let outcome = runtime.block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(60), example::demo(&url)).await
    });
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("the docs/library.md example failed: {e}"),
        Err(_) => panic!("the docs/library.md example did not finish within 60 s"),
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// The hand-started cluster of docs/operating.md (`sparkwire master` and a worker, with their default ports:
/// 7077, 8080 and 8081 when free, the next ports up when not) running beside what the tests do
/// changes nothing: the library example on a cluster of its own and `sparkwire local-cluster`
/// still succeed, and the hand-started master sees nothing of them (no application, no worker
/// but its own). A test that dialled the documented port would register with it and fail this.
#[cfg(feature = "webui")]
#[test]
fn a_hand_started_cluster_beside_the_tests_changes_nothing() {
    let _one_at_a_time = sparkwire_on_path();
    let (_master, lines) = start(&["master"], 2);
    let url = lines[0]
        .trim()
        .strip_prefix("sparkwire master listening on ")
        .unwrap_or_else(|| panic!("{lines:?}"))
        .to_string();
    let ui = lines[1]
        .trim()
        .strip_prefix("sparkwire master web UI at ")
        .unwrap_or_else(|| panic!("{lines:?}"))
        .to_string();
    let work = temp_dir("readme-hand");
    let (_worker, _) = start(
        &[
            "worker",
            &url,
            "--cores",
            "1",
            "--allow-exec",
            BIN,
            "--work-dir",
            work.to_str().expect("utf-8"),
        ],
        2,
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let state = || -> serde_json::Value {
        let (status, body) = runtime
            .block_on(sparkwire::reference::webui::fetch(
                &format!("{ui}/json"),
                std::time::Duration::from_secs(30),
            ))
            .expect("the hand-started master's web UI answers");
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).expect("JSON")
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while state()["aliveworkers"] != 1 {
        assert!(std::time::Instant::now() < deadline, "{:#}", state());
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // What the tests do, beside it.
    run_the_example_on_a_cluster_of_its_own();
    let out = Command::new(BIN)
        .args(["local-cluster", "--job", "pi", "--partitions", "4"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("local-cluster");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let state = state();
    assert_eq!(
        state["workers"].as_array().map(Vec::len),
        Some(1),
        "{state:#}"
    );
    assert_eq!(
        state["activeapps"].as_array().map(Vec::len),
        Some(0),
        "{state:#}"
    );
    assert_eq!(
        state["completedapps"].as_array().map(Vec::len),
        Some(0),
        "{state:#}"
    );
    let _ = std::fs::remove_dir_all(&work);
}
