//! The load generator of Spark peers (`sparkwire::spark::load`, `sparkwire spark load`) against
//! the sparkwire master's Spark-wire front: a few hundred generated Spark workers and
//! applications registering, heartbeating, placed, ending and killing executors, every answer
//! checked, none missing; and against broken Spark masters, whose missing or wrong answers it
//! must count. Not timed: the figures are the bench's (benches/master_scale.py).
#![cfg(all(feature = "reference", feature = "spark-proxy", feature = "webui"))]

mod common;

use std::net::SocketAddr;
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use sparkwire::messages::deploy::{RegisteredApplication, RegisteredWorker};
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, Version};
use sparkwire::reference::master::{Master, MasterConfig, MasterHandle};
use sparkwire::spark::load::{run_load, LoadConfig, LoadReport};
use sparkwire::spark::{
    bool_stream, classify, message_stream, parse_stream, start_front, Classified, Frame,
    FrameDecoder, FrontConfig, Release, RequestMessage, ServerHandle, Typed, CHECK_EXISTENCE,
    MASTER_ENDPOINT,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn sparkwire_master() -> (MasterHandle, ServerHandle) {
    let mut config = MasterConfig {
        port: 0,
        web_ui_port: Some(0),
        ..MasterConfig::default()
    };
    config.core.worker_timeout = Duration::from_secs(8);
    config.limits.max_connections = 4096;
    let master = Master::start(config).await.expect("the master starts");
    let mut front = FrontConfig::new("127.0.0.1", 0, master.addr());
    front.max_connections = 4096;
    let front = start_front(front).await.expect("the front starts");
    (master, front)
}

fn load(master: SocketAddr, workers: usize, apps: usize) -> LoadConfig {
    let mut config = LoadConfig::new(
        master,
        Release::named("4.0.1").expect("4.0.1"),
        workers,
        apps,
    );
    config.worker_timeout = Duration::from_secs(8);
    config.steady = Duration::from_secs(4);
    config.fence_every = 2;
    config.answer_timeout = Duration::from_secs(90);
    config
}

fn errors(report: &LoadReport) -> String {
    format!("{} errors: {:#?}", report.errors, report.error_samples)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_spark_workers_and_thirty_applications_are_all_answered_right() {
    let (master, front) = sparkwire_master().await;
    let mut config = load(front.addr(), 300, 30);
    config.web_ui = master.web_ui_addr();
    let report = run_load(config).await.expect("the load runs");
    assert_eq!(report.errors, 0, "{}", errors(&report));
    assert_eq!(report.workers_registered, 300);
    assert_eq!(report.apps_registered, 30);
    // Two executors each, every one launched at a worker, added and RUNNING at its application.
    assert_eq!(report.executors_launched, 60);
    assert_eq!(report.app_to_last_launch_ms.samples, 30);
    // Applications 0, 4, … ended (every executor killed); 1, 5, … killed one executor each.
    assert_eq!(report.apps_ended, 8);
    assert_eq!(report.apps_killing, 8);
    assert_eq!(report.executors_killed, 8 * 2 + 8);
    // Heartbeats were fenced and every fence answered (RegisteredWorker duplicate).
    assert!(report.heartbeat_ms.samples > 0, "{report:?}");
    // The web UI's /json showed every worker ALIVE and the 22 applications still running.
    assert!(report.json.answered, "{report:?}");
    assert!(report.json.bytes > 0);
    // RequestMasterState over Spark's wire: the front answers it with a failure (it cannot
    // write Spark's MasterStateResponse), recorded, not an error.
    assert!(
        report.state_ask.answered || report.state_ask.failure.is_some(),
        "{report:?}"
    );
}

/// A `sparkwire master --spark-port` process of a file-system recovery group, on the ports
/// given; killed (SIGKILL) when dropped.
struct MasterProcess(Child);

impl Drop for MasterProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_master(dir: &str, spark_port: u16, ui_port: u16) -> MasterProcess {
    let (spark, ui) = (spark_port.to_string(), ui_port.to_string());
    let (child, _line) = common::processes::spawn_sparkwire(
        &[
            "master",
            "--port",
            "0",
            "--spark-port",
            &spark,
            "--webui-port",
            &ui,
            "--recovery-dir",
            dir,
            "--worker-timeout",
            "8",
            "--max-connections",
            "4096",
        ],
        &[],
    );
    MasterProcess(child)
}

/// How the leading master is lost.
#[derive(Clone, Copy, PartialEq)]
enum Loss {
    /// Killed (SIGKILL), with a standby of the same recovery directory waiting.
    KilledWithStandby,
    /// Stopped cleanly (SIGTERM) and started again on its ports and directory.
    Restarted,
}

/// A failover over Spark's wire with 100 generated Spark workers and 10 applications on the
/// leader of a file-system recovery directory: the next leader sends each its `MasterChanged`,
/// every worker and live application answers it on a connection of its own, the next leader's
/// `/json` shows every one recovered, and each worker registering again is answered as one it
/// holds. Every answer is checked (no error).
async fn spark_peers_follow_a_failover(loss: Loss) {
    // One failover at a time: each picks free ports for masters started later (a restart takes
    // its port again), which another test's picks must not take meanwhile.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = ONE_AT_A_TIME.lock().await;
    let dir = common::files::temp_dir("load-failover");
    let dir_text = dir.display().to_string();
    let free = common::ha::free_port;
    let (spark_a, ui_a) = (free(), free());
    let (spark_b, ui_b) = match loss {
        Loss::KilledWithStandby => (free(), free()),
        Loss::Restarted => (spark_a, ui_a),
    };
    let leader = spawn_master(&dir_text, spark_a, ui_a);
    let ui_of = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let mut ready = false;
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(ui_of(ui_a)).await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "the first master's web UI serves");
    // The first to take the directory's lock leads; a second waits as the standby.
    let next = Arc::new(Mutex::new(match loss {
        Loss::KilledWithStandby => Some(spawn_master(&dir_text, spark_b, ui_b)),
        Loss::Restarted => None,
    }));
    let leader = Arc::new(Mutex::new(Some(leader)));
    let mut config = load(ui_of(spark_a), 100, 10);
    config.web_ui = Some(ui_of(ui_a));
    config.failovers = vec![ui_of(ui_b)];
    config.failover_timeout = Duration::from_secs(120);
    let (to_lose, restarted) = (Arc::clone(&leader), Arc::clone(&next));
    let dir_again = dir_text.clone();
    config.on_phase = Some(Arc::new(move |phase: &str| {
        if phase != "failover-0" {
            return;
        }
        let Some(mut old) = to_lose.lock().expect("the leader").take() else {
            return;
        };
        match loss {
            // Dropping it kills it (SIGKILL): no goodbye to the peers or the directory.
            Loss::KilledWithStandby => drop(old),
            Loss::Restarted => {
                let pid = old.0.id().to_string();
                let term = std::process::Command::new("kill")
                    .args(["-TERM", &pid])
                    .status();
                assert!(term.is_ok_and(|s| s.success()), "SIGTERM sent");
                let _ = old.0.wait();
                *restarted.lock().expect("the next") =
                    Some(spawn_master(&dir_again, spark_b, ui_b));
            }
        }
    }));
    let report = run_load(config).await.expect("the load runs");
    assert_eq!(report.errors, 0, "{}", errors(&report));
    assert_eq!(report.workers_registered, 100);
    let f = report.failovers.first().expect("the failover was measured");
    assert!(f.failure.is_none(), "{f:?}");
    assert!(f.recovered_secs.is_some(), "{f:?}");
    // Every worker, and every application that had not ended (0, 4 and 8 ended), answered.
    assert_eq!(f.workers_changed, 100, "{f:?}");
    assert_eq!(f.apps_changed, 7, "{f:?}");
    assert!(f.workers_confirmed, "{f:?}");
    drop(next.lock().expect("the next").take());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The leader killed: the standby takes every Spark peer over. (Before the front named a
/// recovered worker's endpoint on the connection it answers on, its next `LaunchExecutor` went
/// to `AppClient`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leaders_spark_workers_and_applications_are_recovered_by_the_standby() {
    spark_peers_follow_a_failover(Loss::KilledWithStandby).await;
}

/// A clean restart on the same ports: the master recovers every Spark peer. (Before the master
/// held its recovered Spark peers for a front not yet listening, one elected before its front
/// listened dialled them on sparkwire's wire and gave them up.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_master_recovers_its_spark_workers_and_applications() {
    spark_peers_follow_a_failover(Loss::Restarted).await;
}

/// How a fake Spark master is broken.
#[derive(Clone, Copy)]
enum Broken {
    /// Registers workers and applications, and places nothing.
    NeverLaunches,
    /// Answers `CheckExistence(Master)` with `false`.
    DeniesTheMaster,
}

/// A Spark master in miniature that answers on each peer's own connection, broken as told.
async fn fake_master(broken: Broken) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        let mut next_app = 0;
        while let Ok((s, _)) = listener.accept().await {
            next_app += 1;
            tokio::spawn(serve_fake(s, addr, broken, next_app));
        }
    });
    addr
}

async fn serve_fake(mut s: TcpStream, own: SocketAddr, broken: Broken, n: usize) {
    let release = Release::named("4.0.1").expect("4.0.1");
    let me = Addr::new("127.0.0.1", i32::from(own.port()));
    let master_ref = EndpointRef::at(me.clone(), MASTER_ENDPOINT);
    let mut decoder = FrameDecoder::default();
    let mut buf = vec![0u8; 65536];
    let mut registered = false;
    loop {
        let Ok(read) = s.read(&mut buf).await else {
            return;
        };
        if read == 0 {
            return;
        }
        decoder.push(&buf[..read]);
        while let Some(item) = decoder.next_item() {
            let Ok(frame) = item.frame else { return };
            let (request_id, body) = match frame {
                Frame::RpcRequest { request_id, body } => (Some(request_id), body),
                Frame::OneWay { body } => (None, body),
                _ => continue,
            };
            let header = RequestMessage::parse(&body).expect("a header");
            let g = parse_stream(&header.stream).expect("a stream");
            let answer = if g.root_node().class() == Some(CHECK_EXISTENCE) {
                let yes = matches!(broken, Broken::NeverLaunches);
                let stream = bool_stream(yes, release).expect("a Boolean");
                Frame::RpcResponse {
                    request_id: request_id.expect("an ask"),
                    body: stream.into(),
                }
            } else {
                let (to, endpoint, m) = match classify(g.root_node()) {
                    Classified::Message(Typed::Deploy(DeployMessage::RegisterWorker(r))) => {
                        let dup = registered;
                        registered = true;
                        let m = RegisteredWorker::new(
                            master_ref.clone(),
                            String::new(),
                            me.clone(),
                            dup,
                        );
                        (r.worker, "Worker", DeployMessage::from(m))
                    }
                    Classified::Message(Typed::Deploy(DeployMessage::RegisterApplication(r))) => {
                        let m =
                            RegisteredApplication::new(format!("app-fake-{n}"), master_ref.clone());
                        (r.driver, "AppClient", DeployMessage::from(m))
                    }
                    _ => continue,
                };
                let stream =
                    message_stream(&Typed::Deploy(m), Version::V2, None).expect("a stream");
                let header = RequestMessage {
                    sender: Some((me.host.clone(), me.port)),
                    receiver: to.address.map(|a| (a.host, a.port)),
                    endpoint: endpoint.into(),
                    stream: Bytes::from(stream),
                };
                Frame::OneWay {
                    body: header.encode().expect("a header").into(),
                }
            };
            let bytes = answer.encode().expect("a frame");
            if s.write_all(&bytes).await.is_err() {
                return;
            }
        }
    }
}

fn quick(master: SocketAddr) -> LoadConfig {
    let mut config = load(master, 20, 4);
    config.answer_timeout = Duration::from_secs(3);
    config.steady = Duration::from_secs(1);
    config.worker_timeout = Duration::from_secs(2);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_that_registers_but_never_launches_an_executor_is_counted_wrong() {
    let master = fake_master(Broken::NeverLaunches).await;
    let report = run_load(quick(master)).await.expect("the load runs");
    // Everything registered and every fence answered: only the placement is missing.
    assert_eq!(report.workers_registered, 20);
    assert_eq!(report.apps_registered, 4);
    assert_eq!(report.executors_launched, 0);
    assert!(report.errors >= 4, "{}", errors(&report));
    for j in 0..4 {
        let named = format!("application {j}: 0 LaunchExecutor of 2 asked");
        assert!(
            report.error_samples.iter().any(|e| e == &named),
            "{named}: {}",
            errors(&report)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_whose_verifier_denies_the_master_is_counted_wrong() {
    let master = fake_master(Broken::DeniesTheMaster).await;
    let report = run_load(quick(master)).await.expect("the load runs");
    assert_eq!(report.workers_registered, 0);
    assert!(
        report
            .error_samples
            .iter()
            .any(|e| e.contains("CheckExistence(Master) answered Ok(Ok(Bool(false)))")),
        "{}",
        errors(&report)
    );
}
