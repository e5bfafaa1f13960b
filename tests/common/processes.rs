//! Processes: the `sparkwire` binary run to its end or started, each started one stopped by its
//! own process id when the test drops it.

use std::io::BufRead;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use sparkwire::messages::Addr;
use sparkwire::node::url::MasterUrl;

/// The `sparkwire` binary cargo built for the tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_sparkwire");

/// `sparkwire ARGS`, logging warnings only, with no standard input.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).env("RUST_LOG", "warn").stdin(Stdio::null());
    c
}

/// Runs `sparkwire ARGS` to its end: its exit code (-1 when a signal ended it) and its standard
/// output followed by its standard error.
pub fn run(args: &[&str]) -> (i32, String) {
    let out = command(args).output().expect("sparkwire runs");
    (out.status.code().unwrap_or(-1), text(&out))
}

/// A finished process's standard output, then its standard error.
pub fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The arguments of a `sparkwire master` on free ports (its web UI's too), then `extra`.
pub fn master_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["master", "--port", "0", "--webui-port", "0"];
    args.extend_from_slice(extra);
    args
}

/// `sparkwire ARGS` started (its standard error to nowhere), its output read line by line.
pub fn start(args: &[&str]) -> Proc {
    let mut c = command(args);
    c.stderr(Stdio::null());
    Proc::spawn(c)
}

/// Starts the `sparkwire` binary with `args` and `env` added to its environment (standard input
/// a pipe the child holds, so that `--exit-with-stdin` ends it with the test); returns it and the
/// first line it printed.
pub fn spawn_sparkwire(args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sparkwire");
    let line = first_line(&mut child);
    (child, line)
}

/// The first line `child` printed on its standard output (a pipe), trimmed; the rest of its
/// output is not read.
pub fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("first line");
    line.trim().to_string()
}

/// The URL and the address a `sparkwire master` announced in its first line.
pub fn announced_master(line: &str) -> (String, Addr) {
    let url = line
        .strip_prefix("sparkwire master listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    let addr = MasterUrl::parse(&url).expect("a master URL").masters[0].clone();
    (url, addr)
}

/// The arguments of a `sparkwire worker` of master `url` on free ports, offering `cores` cores
/// and `memory` MiB, working in `work_dir`; the caller adds the rest.
pub fn worker_args<'a>(
    url: &'a str,
    cores: &'a str,
    memory: &'a str,
    work_dir: &'a str,
) -> Vec<&'a str> {
    vec![
        "worker",
        url,
        "--port",
        "0",
        "--webui-port",
        "0",
        "--cores",
        cores,
        "--memory",
        memory,
        "--work-dir",
        work_dir,
    ]
}

/// Sends SIGKILL to process `pid`.
pub fn kill9(pid: u32) {
    let ok = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -9 {pid}");
}

/// Process ids of the `sparkwire` processes whose arguments include `needle`.
pub fn processes_with_arg(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_ours = args.first().is_some_and(|a| a.ends_with(b"sparkwire"));
        if is_ours && args.contains(&needle.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// A child process started from `command`, killed (by its own pid) when dropped; its standard
/// output is read by a thread, line by line, so that it never blocks on a full pipe.
pub struct Proc {
    pub child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Proc {
    /// Spawns `command` with its standard output piped.
    pub fn spawn(mut command: Command) -> Proc {
        command.stdout(Stdio::piped());
        let mut child = command.spawn().expect("spawn sparkwire");
        let stdout = child.stdout.take().expect("stdout");
        Proc::reading(child, stdout)
    }

    /// Spawns `command` with its standard error piped: its lines are the ones read.
    pub fn spawn_reading_stderr(mut command: Command) -> Proc {
        command.stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawn sparkwire");
        let stderr = child.stderr.take().expect("stderr");
        Proc::reading(child, stderr)
    }

    fn reading(child: Child, stream: impl std::io::Read + Send + 'static) -> Proc {
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stream)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc { child, lines }
    }

    /// The next line it prints, if one comes within `patience`.
    pub fn next_line(&self, patience: Duration) -> Option<String> {
        self.lines.recv_timeout(patience).ok()
    }

    /// The next line it prints, waited for at most `patience`.
    pub fn line_within(&self, patience: Duration) -> String {
        self.lines
            .recv_timeout(patience)
            .expect("a line from the child")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
