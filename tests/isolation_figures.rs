//! The figures of issue 13's "Done when", measured against the `sparkwire master` binary. Not a
//! test: each is `#[ignore]`d and prints what it measured; `scripts/isolation-figures.sh` runs
//! them. They assert only that the scenario ran (the flooder was connected, the worker
//! registered), never a duration.

use common::cluster;
mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cluster::PATIENCE;
use common::flood::{flood, raw_peer, MASTER_ARGS};
use common::processes::{announced_master, first_line, BIN};
use sparkwire::connection::{Connection, ConnectionConfig, ConnectionError, Incoming};
use sparkwire::messages::deploy::RegisterWorker;
use sparkwire::messages::{Addr, DeployMessage, EndpointRef};
use sparkwire::wire::handshake::{HandshakeError, RefusalReason, Role};
use tokio::net::TcpStream;

/// A `sparkwire master` process on a free port, with `args` and at most `fds` file descriptors.
struct MasterProcess {
    child: Child,
    addr: Addr,
}

impl MasterProcess {
    fn start(fds: Option<u32>, args: &[&str]) -> MasterProcess {
        let limit = fds.map_or(String::new(), |n| format!("ulimit -n {n} && "));
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("{limit}exec \"$0\" \"$@\""))
            .arg(BIN)
            .args(MASTER_ARGS)
            .args(args)
            .env("RUST_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the master");
        let line = first_line(&mut child);
        MasterProcess {
            child,
            addr: announced_master(&line).1,
        }
    }

    /// The resident set size, in KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for MasterProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Connects as worker `id` and registers; returns how long it took from the connect to
/// RegisteredWorker, retrying a `tooManyConnections` refusal every 100 ms.
async fn register_worker(m: &Addr, id: &str, port: i32) -> Duration {
    let started = Instant::now();
    let mut conn: Connection<DeployMessage> = loop {
        let stream = TcpStream::connect((m.host.as_str(), m.port as u16))
            .await
            .expect("connect");
        match Connection::connect(stream, Role::Worker, id, ConnectionConfig::default()).await {
            Ok(conn) => break conn,
            Err(ConnectionError::Handshake(HandshakeError::Refused {
                reason: RefusalReason::TooManyConnections,
                ..
            })) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("worker {id}: {e}"),
        }
        assert!(started.elapsed() < PATIENCE * 3, "worker {id} never got in");
    };
    let me = Addr::new("127.0.0.1", port);
    conn.send(
        RegisterWorker::new(
            id.to_string(),
            me.host.clone(),
            port,
            EndpointRef::at(me, "Worker"),
            1,
            512,
            String::new(),
            m.clone(),
            Default::default(),
        )
        .into(),
    )
    .await
    .expect("sent");
    loop {
        match tokio::time::timeout(PATIENCE, conn.recv()).await {
            Ok(Ok(Incoming::Message(DeployMessage::RegisteredWorker(_)))) => {
                let took = started.elapsed();
                conn.close().await;
                return took;
            }
            Ok(Ok(_)) => {}
            other => panic!("worker {id} not registered: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: scripts/isolation-figures.sh"]
async fn figure_flood_60_s_master_rss_and_worker_registration_latency() {
    let secs: u64 = std::env::var("FLOOD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let master = MasterProcess::start(None, &[]);
    let m = master.addr.clone();
    let start_rss = master.rss_kib();
    let until = Instant::now() + Duration::from_secs(secs);
    // The flooder: asks without ever reading; when cut off, it comes back at once.
    let flood_addr = m.clone();
    let flooding = tokio::spawn(async move {
        let (mut sessions, mut asks) = (0u64, 0u64);
        while Instant::now() < until {
            let Ok(mut s) = raw_peer(&flood_addr, Role::Ui, "flooder").await else {
                continue;
            };
            sessions += 1;
            asks += flood(&mut s, Some(until)).await.0;
        }
        (sessions, asks)
    });
    let mut max_rss = start_rss;
    let mut latencies = Vec::new();
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        latencies.push(register_worker(&m, &format!("worker-{n}"), 40000 + n).await);
        for _ in 0..4 {
            max_rss = max_rss.max(master.rss_kib());
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    let (sessions, asks) = flooding.await.expect("joined");
    max_rss = max_rss.max(master.rss_kib());
    let worst = latencies.iter().max().copied().unwrap_or_default();
    println!(
        "FIGURE flood {secs} s: master RSS {} KiB at start, {} KiB at most; {} workers registered, \
         worst latency {:.3} s, median {:.3} s; the flooder was disconnected {} times ({} asks written)",
        start_rss,
        max_rss,
        latencies.len(),
        worst.as_secs_f64(),
        {
            let mut l = latencies.clone();
            l.sort();
            l.get(l.len() / 2).copied().unwrap_or_default().as_secs_f64()
        },
        sessions.saturating_sub(1),
        asks
    );
    assert!(sessions >= 1 && !latencies.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: scripts/isolation-figures.sh"]
async fn figure_1124_idle_peers_at_1024_descriptors_then_a_fresh_worker() {
    let idle_timeout = "3";
    let master = MasterProcess::start(
        Some(1024),
        &["--max-connections", "900", "--idle-timeout", idle_timeout],
    );
    let m = master.addr.clone();
    let mut held = Vec::new();
    let mut refused = 0;
    let mut failed = 0;
    for n in 0..1124 {
        match raw_peer(&m, Role::Ui, &format!("idle-{n}")).await {
            Ok(s) => held.push(s),
            Err(HandshakeError::Refused {
                reason: RefusalReason::TooManyConnections,
                ..
            }) => refused += 1,
            Err(_) => failed += 1,
        }
    }
    let opened = Instant::now();
    let took = register_worker(&m, "worker-fresh", 41000).await;
    println!(
        "FIGURE ulimit -n 1024, --max-connections 900, --idle-timeout {idle_timeout} s: of 1124 ui peers \
         {} handshaked and held idle, {refused} refused with tooManyConnections, {failed} failed otherwise; \
         a fresh worker registered {:.3} s after the last idle peer connected (retrying while refused); \
         master RSS {} KiB",
        held.len(),
        took.as_secs_f64(),
        master.rss_kib()
    );
    assert!(opened.elapsed() >= took);
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: scripts/isolation-figures.sh"]
async fn figure_rss_over_10_cycles_of_2000_connections() {
    let master = MasterProcess::start(None, &["--max-connections", "4000"]);
    let m = master.addr.clone();
    let mut line = format!("FIGURE master RSS (KiB) start {}", master.rss_kib());
    for cycle in 0..10 {
        let mut open = Vec::with_capacity(2000);
        for n in 0..2000 {
            open.push(
                raw_peer(&m, Role::Ui, &format!("c{cycle}-{n}"))
                    .await
                    .expect("accepted"),
            );
        }
        let full = master.rss_kib();
        drop(open);
        tokio::time::sleep(Duration::from_millis(500)).await;
        line.push_str(&format!(
            ", cycle {cycle}: {full} open / {} closed",
            master.rss_kib()
        ));
    }
    println!("{line}");
}
