//! The README's driver example runs as written: from a program that links the crate (this test),
//! with `sparkwire` on `PATH` as `cargo install` puts it, against `sparkwire master` on its
//! default port and a `sparkwire worker` that allows only that `sparkwire`.

use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_sparkwire");
const README: &str = include_str!("../README.md");
const THIS_FILE: &str = include_str!("readme.rs");

/// The README's driver example: the code block after "The reference driver runs jobs".
fn readme_example() -> Vec<&'static str> {
    let after = README
        .split("The reference driver runs jobs")
        .nth(1)
        .expect("the README has the driver example");
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

// The README's example, line for line (the test checks that it is).
#[rustfmt::skip]
mod example {
use std::sync::Arc;
use sparkwire::reference::driver::{Driver, DriverConfig};
use sparkwire::reference::task::SumSquaresJob;

pub async fn demo() -> Result<(), Box<dyn std::error::Error>> {
let mut config = DriverConfig::new("sum");
config.masters = vec!["sparkwire://127.0.0.1:7077".into()];
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

fn first_line(child: &mut Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    let out = child.stdout.take().expect("stdout");
    let mut reader = std::io::BufReader::new(out);
    let _ = reader.read_line(&mut line);
    // Keep reading so the child never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = String::new();
        while reader.read_line(&mut sink).is_ok_and(|n| n > 0) {
            sink.clear();
        }
    });
    line
}

#[test]
fn the_readme_driver_example_runs_as_written() {
    // The README's example is this file's `example` module, line for line.
    let module = THIS_FILE
        .split("mod example {\n")
        .nth(1)
        .and_then(|m| m.split("\n}\n").next())
        .expect("the example module");
    let here: Vec<&str> = module
        .lines()
        .map(|l| l.strip_prefix("pub ").unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(
        readme_example(),
        here,
        "README.md and tests/readme.rs differ"
    );

    // `sparkwire` on PATH, as after `cargo install sparkwire` (set before any thread starts).
    let bin_dir = std::path::Path::new(BIN).parent().expect("a directory");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin_dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    std::env::set_var("PATH", std::env::join_paths(dirs).expect("PATH"));

    let mut master = Command::new(BIN)
        .args(["master", "--no-webui"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sparkwire master");
    let line = first_line(&mut master);
    let _master = Kill(master);
    assert_eq!(
        line.trim(),
        "sparkwire master listening on sparkwire://127.0.0.1:7077",
        "the master did not start on its default port 7077 (is another master running?)"
    );
    let work = std::env::temp_dir().join(format!("sparkwire-readme-{}", std::process::id()));
    let mut worker = Command::new(BIN)
        .args([
            "worker",
            "sparkwire://127.0.0.1:7077",
            "--no-webui",
            "--cores",
            "2",
            "--allow-exec",
            BIN,
            "--work-dir",
            work.to_str().expect("utf-8"),
        ])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sparkwire worker");
    let _ = first_line(&mut worker);
    let _worker = Kill(worker);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let outcome = runtime.block_on(async {
        tokio::time::timeout(std::time::Duration::from_secs(60), example::demo()).await
    });
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("the README example failed: {e}"),
        Err(_) => panic!("the README example did not finish within 60 s"),
    }
    let _ = std::fs::remove_dir_all(&work);
}
