//! Validator throughput: validated events per second on a long generated trace, against two
//! baselines measured in the same run (cloning the events; decoding the trace's JSON lines).
//!
//! Run: `cargo bench --bench validate` (optionally `-- EVENTS` for the trace length, default 1M).

use std::hint::black_box;
use std::time::Instant;

use sparkwire::validate::scenario::{msg, Scenario};
use sparkwire::validate::sparkwire_task_decoder;
use sparkwire::validate::trace::{to_text, TraceReader};
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
            let (wid, w) = &workers[(a * 4 + e) % workers.len()];
            s.launch_executor(&app, &app_id, w, wid, e as i32, 4, 4096);
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

fn main() {
    let target = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(1_000_000);
    let events = generate(target);
    let n = events.len();
    let text = to_text(&events).expect("the generated trace writes");
    println!(
        "trace: {n} events, {:.1} MiB of JSON lines",
        text.len() as f64 / (1 << 20) as f64
    );

    let t = Instant::now();
    let mut cloned = 0usize;
    for e in &events {
        cloned += usize::from(black_box(e.clone()).conn > 0);
    }
    let clone_s = t.elapsed().as_secs_f64();
    black_box(cloned);

    let t = Instant::now();
    let mut decoded = 0usize;
    for e in TraceReader::new(text.as_bytes()) {
        decoded += usize::from(black_box(e.expect("the generated trace reads")).conn > 0);
    }
    let decode_s = t.elapsed().as_secs_f64();
    assert_eq!(decoded, n);

    let mut results = Vec::new();
    for (name, config) in [
        ("validate (task counting)", Config::default()),
        (
            "validate (task decoder)",
            Config::with_task_decoder(sparkwire_task_decoder),
        ),
    ] {
        let mut v = Validator::new(config);
        let t = Instant::now();
        let mut violations = 0usize;
        for e in &events {
            violations += v.observe(e).len();
        }
        violations += v.finish().len();
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(violations, 0, "the generated trace is legal");
        results.push((name, secs));
    }

    let clone_rate = rate(n, clone_s);
    let decode_rate = rate(n, decode_s);
    println!(
        "{:<28} {:>14} {:>12} {:>14}",
        "pass", "events/s", "time (s)", "vs clone"
    );
    println!(
        "{:<28} {:>14.0} {:>12.3} {:>14}",
        "baseline: clone events", clone_rate, clone_s, "1.00"
    );
    println!(
        "{:<28} {:>14.0} {:>12.3} {:>14.2}",
        "baseline: decode JSON lines",
        decode_rate,
        decode_s,
        decode_rate / clone_rate
    );
    for (name, secs) in results {
        let r = rate(n, secs);
        println!(
            "{:<28} {:>14.0} {:>12.3} {:>14.2}   ({:.1}x the JSON decode rate)",
            name,
            r,
            secs,
            r / clone_rate,
            r / decode_rate
        );
    }
}
