//! The machine's own limit for the task path, and the task path as a fraction of it.
//!
//! A tiny task is about one round trip between a driver and an executor: a LaunchTask out, a
//! StatusUpdate RUNNING and a StatusUpdate FINISHED back. No implementation of the task path can
//! beat a ping-pong of frames of those sizes between two processes over loopback TCP on the same
//! machine, so that ping-pong is the ceiling each task-path figure is compared with. Run with
//!
//! ```text
//! cargo bench --bench ceiling                       # 5 rounds, 2 s per ping-pong
//! cargo bench --bench ceiling -- --runs 3 --seconds 1 --no-task-path
//! cargo bench --bench ceiling -- --sparkwire /path/to/another/sparkwire   # another build's task path
//! ```
//!
//! Each round measures, one after the other (never two at once):
//!
//! - four ping-pongs between this process and a copy of it (`SPARKWIRE_CEILING_PEER` tells the
//!   copy to play the executor), each a LaunchTask-sized frame out and two StatusUpdate-sized
//!   frames back in one write, over a `TCP_NODELAY` loopback connection:
//!   - *raw*: the frames' bytes prepared once and only copied; *codec*: every frame encoded with
//!     [`encode_frame`] and decoded with [`decode_frame`] as a connection would;
//!   - *blocking*: each side sleeps in `read` until the other's frame arrives (what a process
//!     does by default); *spinning*: each side polls a non-blocking socket without sleeping (what
//!     `--busy-poll-us` lets the driver do for a moment);
//! - the task path: `sparkwire local-cluster --job pi --partitions 20000 --param 1` (tiny tasks)
//!   with 1 worker × 1 core by default and with `--busy-poll-us 1000`, then 2 × 1 and 2 × 2, each
//!   a release binary's whole run as a process (its own "tasks/s" line).
//!
//! It prints each figure's median over the rounds with its minimum and maximum, the CPU time
//! (user + system, from `/proc`) both processes of a ping-pong spent per round trip and every
//! process of a task-path run spent per task (start-up included), and the task path
//! as a fraction of the blocking ceiling (default settings) and of the spinning one (busy
//! polling), with the load average before and after. The frames' sizes are those of
//! `BENCHMARKS.md`'s tiny task: a 225-byte LaunchTask and two StatusUpdates of 97 and 105 bytes
//! (prefixes included).

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sparkwire::messages::coarse::{LaunchTask, StatusUpdate};
use sparkwire::messages::{CoarseMessage, Payload, TaskState, Version};
use sparkwire::wire::{decode_frame, encode_frame, Envelope};

/// Names the peer's part in a copy of this process: `MODE PORT`.
const PEER: &str = "SPARKWIRE_CEILING_PEER";
/// The LaunchTask frame's size, prefix included (BENCHMARKS.md's tiny task).
const LAUNCH_TASK_FRAME: usize = 225;
/// The FINISHED StatusUpdate's result bytes (a SparkPi partition's count).
const RESULT_BYTES: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wait {
    Block,
    Spin,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Encoding {
    Raw,
    Codec,
}

#[derive(Clone, Copy, Debug)]
struct Mode {
    wait: Wait,
    bytes: Encoding,
}

impl Mode {
    const ALL: [Mode; 4] = [
        Mode {
            wait: Wait::Block,
            bytes: Encoding::Raw,
        },
        Mode {
            wait: Wait::Block,
            bytes: Encoding::Codec,
        },
        Mode {
            wait: Wait::Spin,
            bytes: Encoding::Raw,
        },
        Mode {
            wait: Wait::Spin,
            bytes: Encoding::Codec,
        },
    ];

    fn name(self) -> String {
        let wait = match self.wait {
            Wait::Block => "blocking",
            Wait::Spin => "spinning",
        };
        let bytes = match self.bytes {
            Encoding::Raw => "raw bytes",
            Encoding::Codec => "sparkwire's codec",
        };
        format!("ping-pong, {wait}, {bytes}")
    }

    fn arg(self) -> String {
        format!("{:?}-{:?}", self.wait, self.bytes)
    }

    fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.arg() == s)
    }
}

/// The tiny task's LaunchTask: its task description padded so the frame is
/// [`LAUNCH_TASK_FRAME`] bytes.
fn launch_task() -> CoarseMessage {
    let frame_of = |n: usize| {
        let m = CoarseMessage::from(LaunchTask::new(Payload::from(vec![0xa5; n])));
        encode_frame(&Envelope::Send(m.clone()), Version::V2)
            .map(|f| (f.len(), m))
            .expect("LaunchTask encodes")
    };
    let (empty, _) = frame_of(0);
    let mut n = LAUNCH_TASK_FRAME.saturating_sub(empty);
    // A bin's length header grows at 256 bytes: step down until the frame fits exactly or less.
    while n > 0 && frame_of(n).0 > LAUNCH_TASK_FRAME {
        n -= 1;
    }
    frame_of(n).1
}

fn status_update(state: TaskState, result: usize) -> CoarseMessage {
    CoarseMessage::from(StatusUpdate::new(
        "0".to_string(),
        4_242,
        state,
        Payload::from(vec![0x5a; result]),
        1,
        Default::default(),
    ))
}

fn frame(m: &CoarseMessage) -> Vec<u8> {
    encode_frame(&Envelope::Send(m.clone()), Version::V2).expect("encodes")
}

/// One side of the ping-pong's connection.
struct Conn {
    stream: TcpStream,
    wait: Wait,
    buf: Vec<u8>,
}

impl Conn {
    fn new(stream: TcpStream, wait: Wait) -> Conn {
        stream.set_nodelay(true).expect("TCP_NODELAY");
        stream
            .set_nonblocking(wait == Wait::Spin)
            .expect("non-blocking");
        Conn {
            stream,
            wait,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Reads until one whole frame is buffered and returns it (prefix included); `None` when the
    /// peer closed.
    fn frame(&mut self) -> Option<Vec<u8>> {
        let mut chunk = [0u8; 4096];
        loop {
            if self.buf.len() >= 4 {
                let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                let whole = 4 + len as usize;
                if self.buf.len() >= whole {
                    let rest = self.buf.split_off(whole);
                    return Some(std::mem::replace(&mut self.buf, rest));
                }
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock && self.wait == Wait::Spin => {
                    std::hint::spin_loop()
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("ping-pong read: {e}"),
            }
        }
    }

    fn send(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match self.stream.write(bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    std::hint::spin_loop()
                }
                Err(e) => panic!("ping-pong write: {e}"),
            }
        }
    }
}

/// The executor's part: answers each LaunchTask with RUNNING and FINISHED in one write, until
/// the driver's side closes.
fn peer(mode: Mode, port: u16) {
    let mut conn = Conn::new(
        TcpStream::connect(("127.0.0.1", port)).expect("the peer connects"),
        mode.wait,
    );
    let raw_reply = [
        frame(&status_update(TaskState::Running, 0)),
        frame(&status_update(TaskState::Finished, RESULT_BYTES)),
    ]
    .concat();
    let running = status_update(TaskState::Running, 0);
    let finished = status_update(TaskState::Finished, RESULT_BYTES);
    while let Some(f) = conn.frame() {
        match mode.bytes {
            Encoding::Raw => conn.send(&raw_reply),
            Encoding::Codec => {
                let got: Envelope<CoarseMessage> =
                    decode_frame(&Bytes::from(f), Version::V2).expect("a LaunchTask decodes");
                assert!(matches!(got, Envelope::Send(CoarseMessage::LaunchTask(_))));
                let mut out = frame(&running);
                out.extend_from_slice(&frame(&finished));
                conn.send(&out);
            }
        }
    }
}

/// Round trips per second of one ping-pong of `mode` for `seconds`, and the CPU time both
/// processes spent per round trip meanwhile (`None` where `/proc` does not say).
fn ping_pong(mode: Mode, seconds: f64) -> (f64, Option<f64>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("binds");
    let port = listener.local_addr().expect("an address").port();
    let mut child = Command::new(std::env::current_exe().expect("this bench's path"))
        .env(PEER, format!("{} {port}", mode.arg()))
        .stdin(Stdio::null())
        .spawn()
        .expect("the peer starts");
    let (stream, _) = listener.accept().expect("the peer connects");
    let mut conn = Conn::new(stream, mode.wait);
    let launch = launch_task();
    let raw = frame(&launch);
    assert_eq!(raw.len(), LAUNCH_TASK_FRAME, "the LaunchTask frame's size");
    let one = |conn: &mut Conn| {
        match mode.bytes {
            Encoding::Raw => conn.send(&raw),
            Encoding::Codec => conn.send(&frame(&launch)),
        }
        for _ in 0..2 {
            let f = conn.frame().expect("the peer answers");
            if mode.bytes == Encoding::Codec {
                let got: Envelope<CoarseMessage> =
                    decode_frame(&Bytes::from(f), Version::V2).expect("a StatusUpdate decodes");
                assert!(matches!(
                    got,
                    Envelope::Send(CoarseMessage::StatusUpdate(_))
                ));
            }
        }
    };
    // Warm-up: the peer's start and the first wake-ups are not measured.
    for _ in 0..2_000 {
        one(&mut conn);
    }
    let budget = Duration::from_secs_f64(seconds);
    let child_pid = child.id().to_string();
    let cpu = || Some(cpu_of("self")? + cpu_of(&child_pid)?);
    let cpu_before = cpu();
    let start = Instant::now();
    let mut trips = 0u64;
    while start.elapsed() < budget {
        for _ in 0..100 {
            one(&mut conn);
        }
        trips += 100;
    }
    let rate = trips as f64 / start.elapsed().as_secs_f64();
    let per_trip = cpu_before
        .zip(cpu())
        .map(|(before, after)| (after - before) / trips as f64);
    drop(conn);
    let _ = child.wait();
    (rate, per_trip)
}

/// One task-path run: `sparkwire local-cluster` with `args`, its printed tasks per second, and
/// the CPU time of the whole run (every process of it, start-up included) per task.
fn task_path(bin: &str, args: &[&str]) -> Option<(f64, Option<f64>)> {
    let cpu_before = children_cpu();
    let out = Command::new(bin)
        .args([
            "local-cluster",
            "--job",
            "pi",
            "--partitions",
            &TASKS.to_string(),
            "--param",
            "1",
        ])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let per_task = cpu_before
        .zip(children_cpu())
        .map(|(before, after)| (after - before) / TASKS as f64);
    let text = String::from_utf8_lossy(&out.stdout);
    let rate = text.lines().find_map(|l| {
        let (_, after) = l.split_once(" s: ")?;
        after.split_once(" tasks/s")?.0.trim().parse::<f64>().ok()
    });
    if rate.is_none() {
        eprintln!(
            "ceiling: `{bin} local-cluster {}` printed no tasks/s (exit {:?}): {}",
            args.join(" "),
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    rate.map(|r| (r, per_task))
}

/// Tiny tasks per task-path run.
const TASKS: u32 = 20_000;

/// CPU seconds (user + system) of process `pid` so far, from `/proc/PID/stat` (Linux; `None`
/// elsewhere or when the process is gone).
fn cpu_of(pid: &str) -> Option<f64> {
    // utime and stime: fields 14 and 15 of the line.
    stat_seconds(pid, 14)
}

/// CPU seconds (user + system) of this process's waited-for children so far (`cutime` and
/// `cstime`, fields 16 and 17 of `/proc/self/stat`): a whole task-path run and the processes it
/// started and waited for.
fn children_cpu() -> Option<f64> {
    stat_seconds("self", 16)
}

/// The sum of fields `first` and `first + 1` (1-based, clock ticks) of `/proc/PID/stat`, in
/// seconds.
fn stat_seconds(pid: &str, first: usize) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing parenthesis start with the state, field 3.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields
        .get(first - 3..first - 1)?
        .iter()
        .filter_map(|f| f.parse::<f64>().ok())
        .sum();
    Some(ticks / CLOCK_TICKS)
}

/// The kernel's clock ticks per second in `/proc`'s CPU times (`USER_HZ`, 100 on Linux).
const CLOCK_TICKS: f64 = 100.0;

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Median, minimum and maximum.
fn summary(xs: &[f64]) -> (f64, f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    if let Ok(part) = std::env::var(PEER) {
        let (mode, port) = part.split_once(' ').expect("MODE PORT");
        let mode = Mode::parse(mode).expect("a known mode");
        peer(mode, port.parse().expect("a port"));
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.parse::<f64>().expect("a number"))
            .unwrap_or(default)
    };
    let runs = value("--runs", 5.0) as usize;
    let seconds = value("--seconds", 2.0);
    let with_task_path = !args.iter().any(|a| a == "--no-task-path");
    let bin = args
        .iter()
        .position(|a| a == "--sparkwire")
        .and_then(|i| args.get(i + 1))
        .map_or(env!("CARGO_BIN_EXE_sparkwire"), String::as_str);
    let layouts: [(&str, &[&str]); 4] = [
        (
            "task path, 1 worker × 1 core",
            &["--workers", "1", "--cores", "1"],
        ),
        (
            "task path, 1 × 1, --busy-poll-us 1000",
            &["--workers", "1", "--cores", "1", "--busy-poll-us", "1000"],
        ),
        (
            "task path, 2 workers × 1 core",
            &["--workers", "2", "--cores", "1"],
        ),
        (
            "task path, 2 workers × 2 cores",
            &["--workers", "2", "--cores", "2"],
        ),
    ];

    if with_task_path {
        println!("task path of: {bin}");
    }
    println!("load average before: {}", load_average());
    let mut ceilings: Vec<Vec<f64>> = vec![Vec::new(); Mode::ALL.len()];
    // CPU seconds per round trip of each ping-pong, per round where /proc said.
    let mut ceiling_cpu: Vec<Vec<f64>> = vec![Vec::new(); Mode::ALL.len()];
    // Per layout, each round's rate (`None`: that round's run printed none).
    let mut paths: Vec<Vec<Option<f64>>> = vec![Vec::new(); layouts.len()];
    let mut path_cpu: Vec<Vec<f64>> = vec![Vec::new(); layouts.len()];
    for round in 0..runs {
        for (i, mode) in Mode::ALL.into_iter().enumerate() {
            let (r, cpu) = ping_pong(mode, seconds);
            eprintln!("round {}: {}: {r:.0} round trips/s", round + 1, mode.name());
            ceilings[i].push(r);
            ceiling_cpu[i].extend(cpu);
        }
        if with_task_path {
            for (i, (name, args)) in layouts.iter().enumerate() {
                let r = task_path(bin, args);
                if let Some((r, _)) = r {
                    eprintln!("round {}: {name}: {r:.0} tasks/s", round + 1);
                }
                paths[i].push(r.map(|(r, _)| r));
                path_cpu[i].extend(r.and_then(|(_, cpu)| cpu));
            }
        }
    }
    println!("load average after: {}", load_average());
    println!();
    // CPU per operation: the time both processes of a ping-pong spent on the CPU per round trip
    // while it was measured; every process of a task-path run per task, start-up included.
    let micros = |xs: &[f64]| {
        if xs.is_empty() {
            "—".to_string()
        } else {
            format!("{:.0} µs", summary(xs).0 * 1e6)
        }
    };
    println!(
        "| what | per second, median (min–max) over {runs} rounds | CPU per round trip or task (median) |"
    );
    println!("|---|---|---|");
    for (i, mode) in Mode::ALL.into_iter().enumerate() {
        let (m, lo, hi) = summary(&ceilings[i]);
        println!(
            "| {} | {m:.0} ({lo:.0}–{hi:.0}) round trips | {} |",
            mode.name(),
            micros(&ceiling_cpu[i])
        );
    }
    for (i, (name, _)) in layouts.iter().enumerate() {
        let rates: Vec<f64> = paths[i].iter().flatten().copied().collect();
        if rates.is_empty() {
            continue;
        }
        let (m, lo, hi) = summary(&rates);
        println!(
            "| {name} | {m:.0} ({lo:.0}–{hi:.0}) tasks | {} |",
            micros(&path_cpu[i])
        );
    }
    let measured = |i: usize| paths[i].iter().any(Option::is_some);
    if with_task_path && measured(0) && measured(1) {
        let block = summary(&ceilings[0]).0;
        let spin = summary(&ceilings[2]).0;
        // Each round's task path against the same round's ceiling, then the median of those.
        let fraction = |path: &[Option<f64>], ceiling: &[f64]| {
            let pairs: Vec<f64> = path
                .iter()
                .zip(ceiling)
                .filter_map(|(p, c)| p.map(|p| p / c))
                .collect();
            summary(&pairs).0
        };
        println!();
        println!(
            "1 × 1 by default: {:.2} of the blocking ceiling ({block:.0} round trips/s), the \
             median of each round's ratio",
            fraction(&paths[0], &ceilings[0])
        );
        println!(
            "1 × 1 with --busy-poll-us 1000: {:.2} of the spinning ceiling ({spin:.0} round \
             trips/s)",
            fraction(&paths[1], &ceilings[2])
        );
    }
}
