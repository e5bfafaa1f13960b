//! The reference master's costs: one scheduling round with 10,000 workers and 1,000 waiting
//! applications (against sorting the workers once per application, the round's floor, measured
//! in the same run), and worker registrations per second with 1,000 workers connecting at once
//! over loopback (against the same 1,000 connections doing the handshake alone).
//!
//! Run with `cargo bench --bench master`. Prints a Markdown table.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use sparkwire::connection::{Connection, ConnectionConfig, Incoming};
use sparkwire::messages::deploy::RegisterWorker;
use sparkwire::messages::{Addr, DeployMessage, EndpointRef};
use sparkwire::node::master::round::{schedule_round, Grant, RoundWorker};
use sparkwire::node::master::schedule::{schedule_round_sorting, ExecutorDemand, WorkerSlot};
use sparkwire::reference::master::{Master, MasterConfig};
use sparkwire::wire::handshake::{client_handshake, server_handshake, Identity, Role, Secret};
use tokio::net::{TcpListener, TcpStream};

const WORKERS: usize = 10_000;
const APPS: usize = 1_000;
const CONNECTING: usize = 1_000;
const SAMPLES: usize = 5;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn workers() -> Vec<RoundWorker> {
    (0..WORKERS)
        .map(|i| RoundWorker {
            alive: i % 50 != 0,
            free: WorkerSlot::new(4 + (i % 5) as i32 * 4, 16_384 + (i % 3) as i32 * 8_192),
        })
        .collect()
}

fn apps() -> Vec<ExecutorDemand> {
    (0..APPS)
        .map(|i| ExecutorDemand {
            cores_per_executor: if i % 2 == 0 { Some(2) } else { None },
            memory_per_executor: 2_048,
            resources_per_executor: BTreeMap::new(),
            cores_left: 32,
            executors_now: 0,
            executor_limit: usize::MAX,
        })
        .collect()
}

fn bench_round(spread_out: bool) -> (Duration, Vec<Grant>) {
    let demands = apps();
    let mut times = Vec::new();
    let mut grants = Vec::new();
    for _ in 0..SAMPLES {
        let mut ws = workers();
        let start = Instant::now();
        grants = black_box(schedule_round(&mut ws, &demands, spread_out));
        times.push(start.elapsed());
    }
    (median(times), grants)
}

fn bench_sorting_round(spread_out: bool) -> (Duration, Vec<Grant>) {
    let demands = apps();
    let mut times = Vec::new();
    let mut grants = Vec::new();
    for _ in 0..3 {
        let mut ws = workers();
        let start = Instant::now();
        grants = schedule_round_sorting(&mut ws, &demands, spread_out);
        times.push(start.elapsed());
    }
    (median(times), grants)
}

/// The load average over the last minute, as /proc/loadavg gives it ("?" where there is none).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn bench_sorts() -> Duration {
    let mut times = Vec::new();
    for _ in 0..SAMPLES {
        let ws = workers();
        let start = Instant::now();
        for _ in 0..APPS {
            let mut idx: Vec<usize> = (0..ws.len()).filter(|&w| ws[w].alive).collect();
            idx.sort_by(|x, y| ws[*y].free.cores_free.cmp(&ws[*x].free.cores_free));
            black_box(&idx);
        }
        times.push(start.elapsed());
    }
    median(times)
}

fn register(i: usize, port: u16) -> DeployMessage {
    let addr = Addr::new("127.0.0.1", 40_000 + i as i32);
    RegisterWorker::new(
        format!("worker-bench-{i}"),
        addr.host.clone(),
        addr.port,
        EndpointRef::at(addr, "Worker"),
        8,
        16_384,
        String::new(),
        Addr::new("127.0.0.1", i32::from(port)),
        Default::default(),
    )
    .into()
}

/// 1,000 workers connect to a fresh master at once, register and wait for RegisteredWorker.
async fn bench_registrations() -> Duration {
    let master = Master::start(MasterConfig {
        port: 0,
        // Every worker connects at once: above the default cap on connections (512), which
        // would refuse the rest with `tooManyConnections`.
        limits: sparkwire::connection::Limits {
            max_connections: 2 * CONNECTING,
            ..sparkwire::connection::Limits::default()
        },
        ..MasterConfig::default()
    })
    .await
    .expect("master");
    let port = master.addr().port();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..CONNECTING {
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("connect");
            let mut conn: Connection<DeployMessage> = Connection::connect(
                stream,
                Role::Worker,
                format!("worker-bench-{i}"),
                ConnectionConfig::default(),
            )
            .await
            .expect("handshake");
            conn.send(register(i, port)).await.expect("sent");
            match conn.recv().await {
                Ok(Incoming::Message(DeployMessage::RegisteredWorker(_))) => {}
                other => panic!("expected RegisteredWorker, got {other:?}"),
            }
            conn
        }));
    }
    let mut conns = Vec::new();
    for t in tasks {
        conns.push(t.await.expect("task"));
    }
    let took = start.elapsed();
    drop(conns);
    master.shutdown().await;
    took
}

/// The same 1,000 connections doing the handshake alone, against a server that does nothing else;
/// with `secret`, both sides authenticate (protocol/handshake.md §10: four frames, two HMACs each).
async fn bench_handshakes(secret: Option<Secret>) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server_secret = secret.clone();
    let server = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            let secret = server_secret.clone();
            held.push(tokio::spawn(async move {
                let me = Identity::new(Role::Master, "bench").with_secret(secret);
                server_handshake(s, &me, |_| true).await.ok()
            }));
        }
    });
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..CONNECTING {
        let secret = secret.clone();
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("connect");
            let me = Identity::new(Role::Worker, format!("worker-bench-{i}")).with_secret(secret);
            client_handshake(stream, &me).await.expect("handshake")
        }));
    }
    let mut done = Vec::new();
    for t in tasks {
        done.push(t.await.expect("task"));
    }
    let took = start.elapsed();
    drop(done);
    server.abort();
    took
}

fn main() {
    let load_before = load();
    let (spread, spread_grants) = bench_round(true);
    let (packed, packed_grants) = bench_round(false);
    let (old_spread, old_spread_grants) = bench_sorting_round(true);
    let (old_packed, old_packed_grants) = bench_sorting_round(false);
    let same = spread_grants == old_spread_grants && packed_grants == old_packed_grants;
    let (spread_grants, packed_grants) = (spread_grants.len(), packed_grants.len());
    let sorts = bench_sorts();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut regs = Vec::new();
    let mut shakes = Vec::new();
    let mut authed = Vec::new();
    let secret = Secret::new(b"benchmark secret".to_vec());
    for _ in 0..3 {
        regs.push(rt.block_on(bench_registrations()));
        shakes.push(rt.block_on(bench_handshakes(None)));
        authed.push(rt.block_on(bench_handshakes(secret.clone())));
    }
    let (reg, shake, authed) = (median(regs), median(shakes), median(authed));
    let per_sec = |d: Duration| CONNECTING as f64 / d.as_secs_f64();
    println!(
        "load average (1 min): {load_before} at the start, {} at the end",
        load()
    );
    println!();
    println!("| measurement | time | note |");
    println!("|---|---|---|");
    println!(
        "| scheduling round, spread out ({WORKERS} workers, {APPS} apps) | {:.1} ms | {spread_grants} executors granted |",
        spread.as_secs_f64() * 1e3
    );
    println!(
        "| scheduling round, consolidate | {:.1} ms | {packed_grants} executors granted |",
        packed.as_secs_f64() * 1e3
    );
    println!(
        "| baseline: the round sorting every worker per application, spread out | {:.1} ms | indexed / sorting {:.4}x; same grants: {same} |",
        old_spread.as_secs_f64() * 1e3,
        spread.as_secs_f64() / old_spread.as_secs_f64()
    );
    println!(
        "| baseline: the round sorting every worker per application, consolidate | {:.1} ms | indexed / sorting {:.4}x |",
        old_packed.as_secs_f64() * 1e3,
        packed.as_secs_f64() / old_packed.as_secs_f64()
    );
    println!(
        "| baseline: sorting the workers {APPS} times | {:.1} ms | round / sorts: spread {:.2}x, consolidate {:.2}x |",
        sorts.as_secs_f64() * 1e3,
        spread.as_secs_f64() / sorts.as_secs_f64(),
        packed.as_secs_f64() / sorts.as_secs_f64()
    );
    println!(
        "| {CONNECTING} workers registering at once | {:.0} ms | {:.0} registrations/s |",
        reg.as_secs_f64() * 1e3,
        per_sec(reg)
    );
    println!(
        "| baseline: {CONNECTING} handshakes alone | {:.0} ms | {:.0} handshakes/s; registration / handshake {:.2}x |",
        shake.as_secs_f64() * 1e3,
        per_sec(shake),
        reg.as_secs_f64() / shake.as_secs_f64()
    );
    println!(
        "| {CONNECTING} handshakes with a shared secret | {:.0} ms | {:.0} handshakes/s; authenticated / plain {:.2}x |",
        authed.as_secs_f64() * 1e3,
        per_sec(authed),
        authed.as_secs_f64() / shake.as_secs_f64()
    );
}
