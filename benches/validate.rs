//! Validator throughput: validated events per second on a long generated trace, against two
//! baselines measured in the same run (cloning the events; decoding the trace's JSON lines), and
//! reading the trace in both forms (JSON Lines and binary), alone and with validation, on one
//! thread and pipelined on two (as `sparkwire validate` does).
//!
//! Run: `cargo bench --bench validate` (optionally `-- EVENTS` for the trace length, default 1M;
//! `-- --write-trace PATH` also writes the trace there, for timing `sparkwire validate PATH`: in
//! the binary form when PATH ends in `.swtrace`, else JSON Lines; it may be given twice).
//! Rates are per second of wall time and per second of this process's CPU time (the machine is
//! shared; the load average is printed at the start and the end).

use std::hint::black_box;
use std::time::Instant;

use sparkwire::validate::scenario::{msg, Scenario};
use sparkwire::validate::sparkwire_task_decoder;
use sparkwire::validate::trace::{
    event_from_json, read_pipelined, to_text, write_binary, BinaryTraceReader, TraceFormat,
    TraceReader,
};
use sparkwire::validate::{Config, Endpoint, Event, Validator};
use sparkwire::wire::handshake::Role;

/// A cluster of 64 workers and 16 applications with 4 executors each, then tasks round-robin over
/// the executors until `target` events, with heartbeats every 15 s of trace time.
fn generate(target: usize) -> Vec<Event> {
    let mut s = Scenario::new();
    let workers: Vec<_> = (0..64)
        .map(|i| {
            let id = format!("worker-{i}");
            let link = s.worker(&id, &format!("10.0.{}.{}", i / 256, i % 256), 16, 65536);
            (id, link)
        })
        .collect();
    let mut execs = Vec::new();
    for a in 0..16 {
        let app_id = format!("app-{a}");
        let app = s.app(&app_id);
        let driver = Endpoint::new(Role::Driver, app_id.clone());
        for e in 0..4 {
            let (_, w) = &workers[(a * 4 + e) % workers.len()];
            s.launch_executor(&app, w, e as i32, 4, 4096);
            let exec_id = e.to_string();
            let link = s.executor(&driver, &exec_id, 4);
            execs.push((link, exec_id));
        }
    }
    let mut task = 0i64;
    let mut last_beat = s.now();
    while s.events().len() < target {
        for (link, id) in &execs {
            // Four tasks in flight per executor, as its cores allow.
            for k in 0..4 {
                s.down(link, msg::launch_task(task + k, 1));
            }
            for k in 0..4 {
                s.up(
                    link,
                    msg::status_update(id, task + k, sparkwire::messages::TaskState::Running, 1),
                );
            }
            for k in 0..4 {
                s.up(
                    link,
                    msg::status_update(id, task + k, sparkwire::messages::TaskState::Finished, 1),
                );
            }
            task += 4;
        }
        if s.now() - last_beat >= 15_000 {
            last_beat = s.now();
            for (id, w) in &workers {
                s.up(w, msg::heartbeat(id));
            }
        }
    }
    s.into_events()
}

fn rate(events: usize, seconds: f64) -> f64 {
    events as f64 / seconds
}

/// The load average over the last minute ("?" where /proc/loadavg is absent).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// This process's CPU seconds (user + system) from /proc/self/stat, at 100 ticks per second
/// (Linux's USER_HZ); 0 where it is absent.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(0.0)
}

/// Wall and CPU seconds `f` takes.
fn timed(f: impl FnOnce()) -> (f64, f64) {
    let (t, c) = (Instant::now(), cpu_seconds());
    f();
    (t.elapsed().as_secs_f64(), cpu_seconds() - c)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let target = args
        .iter()
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(1_000_000);
    let write_to: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == "--write-trace")
        .filter_map(|(i, _)| args.get(i + 1))
        .collect();
    let load_before = load();
    let events = generate(target);
    let n = events.len();
    let text = to_text(&events).expect("the generated trace writes");
    let binary = write_binary(&events).expect("the generated trace writes");
    println!(
        "trace: {n} events, {:.1} MiB of JSON lines, {:.1} MiB binary",
        text.len() as f64 / (1 << 20) as f64,
        binary.len() as f64 / (1 << 20) as f64
    );
    for path in write_to {
        let bytes = match TraceFormat::for_path(path.as_ref()) {
            TraceFormat::Binary => binary.as_slice(),
            _ => text.as_bytes(),
        };
        std::fs::write(path, bytes).expect("the trace file writes");
        println!("trace written to {path}");
    }

    let mut passes: Vec<(&str, (f64, f64))> = Vec::new();
    passes.push((
        "baseline: clone events",
        timed(|| {
            let mut cloned = 0usize;
            for e in &events {
                cloned += usize::from(black_box(e.clone()).conn > 0);
            }
            black_box(cloned);
        }),
    ));
    passes.push((
        "baseline: JSON tree per line",
        timed(|| {
            let mut decoded = 0usize;
            for line in text.lines() {
                let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
                let e = event_from_json(&v).expect("the generated trace reads");
                decoded += usize::from(black_box(e).conn > 0);
            }
            assert_eq!(decoded, n);
        }),
    ));
    passes.push((
        "read trace (TraceReader)",
        timed(|| {
            let mut decoded = 0usize;
            for e in TraceReader::new(text.as_bytes()) {
                decoded += usize::from(black_box(e.expect("the generated trace reads")).conn > 0);
            }
            assert_eq!(decoded, n);
        }),
    ));
    passes.push((
        "read trace (binary)",
        timed(|| {
            let mut decoded = 0usize;
            for e in BinaryTraceReader::new(binary.as_slice()) {
                decoded += usize::from(black_box(e.expect("the generated trace reads")).conn > 0);
            }
            assert_eq!(decoded, n);
        }),
    ));
    let decoding = || Config::with_task_decoder(sparkwire_task_decoder);
    passes.push((
        "read+validate JSON, 1 thread",
        timed(|| {
            let mut v = Validator::new(decoding());
            let mut violations = 0usize;
            for e in TraceReader::new(text.as_bytes()) {
                violations += v.observe(&e.expect("the generated trace reads")).len();
            }
            assert_eq!(violations + v.finish().len(), 0);
        }),
    ));
    for (name, input) in [
        ("read+validate JSON, 2 threads", text.as_bytes()),
        ("read+validate binary, 2 thr.", binary.as_slice()),
    ] {
        passes.push((
            name,
            timed(|| {
                let mut v = Validator::new(decoding());
                let mut violations = 0usize;
                let read = read_pipelined(input, |e| violations += v.observe(e).len())
                    .expect("the generated trace reads");
                assert_eq!(read as usize, n);
                assert_eq!(violations + v.finish().len(), 0);
            }),
        ));
    }
    for (name, config) in [
        ("validate (task counting)", Config::default()),
        (
            "validate (task decoder)",
            Config::with_task_decoder(sparkwire_task_decoder),
        ),
    ] {
        let mut v = Validator::new(config);
        let took = timed(|| {
            let mut violations = 0usize;
            for e in &events {
                violations += v.observe(e).len();
            }
            violations += v.finish().len();
            assert_eq!(violations, 0, "the generated trace is legal");
        });
        passes.push((name, took));
    }

    println!(
        "load average (1 min): {load_before} at the start, {} at the end",
        load()
    );
    println!(
        "{:<30} {:>12} {:>10} {:>14} {:>10}",
        "pass", "events/s", "wall (s)", "events/CPU-s", "vs clone"
    );
    let clone_rate = rate(n, passes[0].1 .0);
    for (name, (wall, cpu)) in passes {
        let cpu_rate = if cpu > 0.0 {
            format!("{:.0}", rate(n, cpu))
        } else {
            "?".into()
        };
        println!(
            "{:<30} {:>12.0} {:>10.3} {:>14} {:>10.2}",
            name,
            rate(n, wall),
            wall,
            cpu_rate,
            rate(n, wall) / clone_rate
        );
    }
}
