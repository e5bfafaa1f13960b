//! Master high availability with a real ZooKeeper (Debian's `zookeeper` package, started by the
//! `zk` fixture on free ports and stopped by process id): election with ephemeral sequential
//! nodes under `<dir>/leader_election`, records under `<dir>/master_status`, every record write
//! fenced by this master's own election node; a kill -9 of the active master during a job (a
//! standby takes over, workers and the application re-register through MasterChanged, the job
//! finishes right); a paused leader that writes nothing once its session expired and stops
//! leading; the ZooKeeper leader killed in a 3-node ensemble. Every multi-master test ends with
//! the checker over the masters' logs: no master wrote after another one was elected after it.

mod cluster;
mod zk;

use std::time::{Duration, Instant};

use sparkwire::messages::{Addr, RecoveryState, WorkerState};
use sparkwire::reference::master::proto::{Record, RecordKind, StoredWorker};
use sparkwire::reference::master::recovery::zookeeper::{
    ZooKeeperStore, LEADER_ELECTION, MASTER_STATUS,
};
use sparkwire::reference::master::recovery::{
    LeaderEvent, LeaderSink, RecoveryError, RecoveryStore, ZooKeeperConfig,
};
use zk::*;
use zookeeper_client as zkc;

fn worker_record(id: &str) -> Record {
    Record::Worker(StoredWorker {
        id: id.into(),
        host: "127.0.0.1".into(),
        port: 1,
        endpoint: sparkwire::messages::EndpointRef::at(Addr::new("127.0.0.1", 1), "Worker"),
        cores: 1,
        memory: 512,
        web_ui: String::new(),
        resources: Default::default(),
    })
}

fn sink() -> (
    LeaderSink,
    tokio::sync::mpsc::UnboundedReceiver<LeaderEvent>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (
        std::sync::Arc::new(move |e| {
            let _ = tx.send(e);
        }),
        rx,
    )
}

async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<LeaderEvent>) -> Option<LeaderEvent> {
    tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .ok()
        .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_record_write_is_fenced_by_the_writers_election_node() {
    let server = ZooKeeper::standalone();
    let mut config = ZooKeeperConfig::new(&server.url(), "/fenced");
    config.session_timeout = Duration::from_secs(4);
    let mut a = ZooKeeperStore::new(config.clone(), "master-a");
    let mut b = ZooKeeperStore::new(config.clone(), "master-b");
    let (sink_a, mut events_a) = sink();
    let (sink_b, mut events_b) = sink();
    a.elect(sink_a).await.expect("a stands");
    assert_eq!(next(&mut events_a).await, Some(LeaderEvent::Elected));
    b.elect(sink_b).await.expect("b stands");
    a.write(&worker_record("w1"))
        .await
        .expect("the leader writes");
    a.write(&worker_record("w1"))
        .await
        .expect("and writes again (set)");
    assert!(
        matches!(
            b.write(&worker_record("w2")).await,
            Err(RecoveryError::Fenced(_))
        ),
        "a standby cannot write"
    );

    // Spark's layout: the election's nodes and the records, named as Spark names them.
    let look = zkc::Client::connect(&server.url()).await.expect("client");
    let mut latches = look
        .list_children(&format!("/fenced/{LEADER_ELECTION}"))
        .await
        .expect("election nodes");
    latches.sort();
    assert_eq!(latches.len(), 2, "{latches:?}");
    assert!(latches.iter().all(|l| l.starts_with("latch-")));
    let records = look
        .list_children(&format!("/fenced/{MASTER_STATUS}"))
        .await
        .expect("records");
    assert_eq!(records, vec!["worker_w1".to_string()]);

    // a's election node goes (as when its session expires): a can no longer write, b leads.
    let first = format!("/fenced/{LEADER_ELECTION}/{}", latches[0]);
    let (holder, _) = look.get_data(&first).await.expect("a's node");
    assert_eq!(holder, b"master-a");
    look.delete(&first, None).await.expect("delete a's node");
    assert_eq!(next(&mut events_b).await, Some(LeaderEvent::Elected));
    assert_eq!(next(&mut events_a).await, Some(LeaderEvent::Lost));
    assert!(matches!(
        a.write(&worker_record("w3")).await,
        Err(RecoveryError::Fenced(_))
    ));
    assert!(matches!(
        a.remove(RecordKind::Worker, "w1").await,
        Err(RecoveryError::Fenced(_))
    ));
    b.write(&worker_record("w2"))
        .await
        .expect("the new leader writes");

    // A corrupt record is skipped with a warning; the rest is recovered.
    look.create(
        &format!("/fenced/{MASTER_STATUS}/app_broken"),
        b"{not json",
        &zkc::CreateMode::Persistent.with_acls(zkc::Acls::anyone_all()),
    )
    .await
    .expect("a corrupt record");
    let stored = b.read_all().await.expect("read");
    let mut ids: Vec<&str> = stored.workers.iter().map(|w| w.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["w1", "w2"], "w3 was never written");
    assert!(stored.apps.is_empty());
    b.remove(RecordKind::Worker, "w1").await.expect("remove");
    b.remove(RecordKind::Worker, "w1")
        .await
        .expect("absent is fine");

    // A clean step-down closes the session: b's node goes at once.
    b.step_down(true).await;
    a.step_down(false).await;
    let left = look
        .list_children(&format!("/fenced/{LEADER_ELECTION}"))
        .await
        .expect("election nodes");
    assert!(left.is_empty(), "{left:?}");
}

/// The `Addr` of a master's `host:port`.
fn addr(host_port: &str) -> Addr {
    let (h, p) = host_port.rsplit_once(':').expect("host:port");
    Addr::new(h, p.parse::<i32>().expect("port"))
}

async fn state(m: &str) -> Option<sparkwire::messages::deploy::MasterStateResponse> {
    let a = addr(m);
    tokio::time::timeout(Duration::from_secs(5), cluster::master_state(&a))
        .await
        .ok()
}

/// Waits until the master at `m` answers a state satisfying `ok`.
async fn wait_for(
    m: &str,
    what: &str,
    ok: impl Fn(&sparkwire::messages::deploy::MasterStateResponse) -> bool,
) -> sparkwire::messages::deploy::MasterStateResponse {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(s) = tokio::spawn({
            let m = m.to_string();
            async move { state(&m).await }
        })
        .await
        .ok()
        .flatten()
        {
            if ok(&s) {
                return s;
            }
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn worker(masters: &str, dir: &std::path::Path, name: &str) -> Process {
    let work = dir.join(name);
    let work = work.to_str().expect("path").to_string();
    Process::spawn(
        &[
            "worker",
            masters,
            "--port",
            "0",
            "--no-webui",
            "--cores",
            "1",
            "--memory",
            "1024",
            "--work-dir",
            &work,
            "--allow-exec",
            BIN,
        ],
        dir.join(format!("{name}.log")),
    )
}

fn logs(masters: &[&Process]) -> Vec<String> {
    masters.iter().map(|m| m.log_text()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_active_master_during_a_job_a_standby_takes_over_and_the_job_finishes() {
    let server = ZooKeeper::standalone();
    let dir = temp_dir("zk-kill");
    let m1 = zk_master(&server.url(), "/kill", 3.0, dir.join("m1.log"), &[]);
    let a1 = master_address(&m1.first_line);
    wait_for(&a1, "m1 ALIVE", |s| s.status == RecoveryState::Alive).await;
    let m2 = zk_master(&server.url(), "/kill", 3.0, dir.join("m2.log"), &[]);
    let a2 = master_address(&m2.first_line);
    wait_for(&a2, "m2 STANDBY", |s| s.status == RecoveryState::Standby).await;
    let masters = format!("sparkwire://{a1},{a2}");
    let _w1 = worker(&masters, &dir, "w1");
    let _w2 = worker(&masters, &dir, "w2");
    wait_for(&a1, "two workers", |s| s.workers.len() == 2).await;
    let mut job = Process::spawn(
        &[
            "submit",
            "--master",
            &masters,
            "--job",
            "sleep",
            "--partitions",
            "24",
            "--param",
            "400",
            "--executor-memory",
            "512m",
        ],
        dir.join("job.log"),
    );
    wait_for(&a1, "the application running", |s| {
        s.active_apps.len() == 1 && s.workers.iter().map(|w| w.cores_used).sum::<i32>() == 2
    })
    .await;
    m1.signal("KILL");
    let killed = Instant::now();
    let s = wait_for(&a2, "m2 ALIVE with both workers and the application", |s| {
        s.status == RecoveryState::Alive
            && s.workers
                .iter()
                .filter(|w| w.state == WorkerState::Alive)
                .count()
                == 2
            && s.active_apps.len() == 1
    })
    .await;
    eprintln!(
        "takeover (kill -9 to the standby ALIVE, workers and application re-registered): {:?}",
        killed.elapsed()
    );
    assert_eq!(s.active_apps.len(), 1);
    assert!(
        job.wait_exit(PATIENCE).is_some_and(|s| s.success()),
        "the job failed: {:?}",
        job.output()
    );
    let out = job.output();
    assert!(
        out.iter()
            .any(|l| l == "job sleep: 24 tasks slept 400 ms each"),
        "{out:?}"
    );
    // The new master schedules: a job through the group after the takeover, checked exactly.
    let mut sum = Process::spawn(
        &[
            "submit",
            "--master",
            &masters,
            "--job",
            "sum-squares",
            "--partitions",
            "4",
            "--param",
            "1000",
            "--executor-memory",
            "512m",
        ],
        dir.join("sum.log"),
    );
    assert!(sum.wait_exit(PATIENCE).is_some_and(|s| s.success()));
    let expected = (0..1000u128).map(|i| i * i).sum::<u128>();
    assert!(
        sum.output()
            .iter()
            .any(|l| l.contains(&expected.to_string())),
        "{:?}",
        sum.output()
    );
    let written = check_no_overlap(&logs(&[&m1, &m2])).expect("no two masters wrote at once");
    assert!(written >= 4, "both masters wrote records ({written})");
}

/// Pause/resume cycles of the active master (`SPARKWIRE_PAUSE_CYCLES`, default 2; the closing
/// note's figure is from 20): each time the leader is stopped (SIGSTOP) past its session
/// timeout, the standby takes over, a new worker registers with both (the paused one finds it
/// waiting when it resumes), then the old leader resumes (SIGCONT): it must write nothing and
/// stop leading, and the checker finds no two masters writing at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_writes_nothing_after_its_session_expired_and_stops_leading() {
    let cycles: usize = std::env::var("SPARKWIRE_PAUSE_CYCLES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2);
    let server = ZooKeeper::standalone();
    let dir = temp_dir("zk-pause");
    let mut masters = vec![zk_master(
        &server.url(),
        "/pause",
        2.0,
        dir.join("m0.log"),
        &[],
    )];
    wait_for(&master_address(&masters[0].first_line), "m0 ALIVE", |s| {
        s.status == RecoveryState::Alive
    })
    .await;
    let mut workers = Vec::new();
    for cycle in 0..cycles {
        let standby = zk_master(
            &server.url(),
            "/pause",
            2.0,
            dir.join(format!("m{}.log", cycle + 1)),
            &[],
        );
        let (leader, next) = (masters.len() - 1, masters.len());
        let old = master_address(&masters[leader].first_line);
        let new = master_address(&standby.first_line);
        masters.push(standby);
        wait_for(&new, "the new master STANDBY", |s| {
            s.status == RecoveryState::Standby
        })
        .await;
        masters[leader].signal("STOP");
        wait_for(&new, "the standby ALIVE", |s| {
            s.status == RecoveryState::Alive
        })
        .await;
        let group = format!("sparkwire://{old},{new}");
        workers.push(worker(&group, &dir, &format!("w{cycle}")));
        wait_for(&new, "the worker registered", |s| s.workers.len() == 1).await;
        masters[leader].signal("CONT");
        let exit = masters[leader].wait_exit(PATIENCE);
        assert!(
            exit.is_some(),
            "cycle {cycle}: the old leader still runs after it resumed: {}",
            masters[leader].log_text()
        );
        let log = masters[leader].log_text();
        assert!(
            log.contains("Leadership has been revoked"),
            "cycle {cycle}: {log}"
        );
        let _ = next;
    }
    let logs: Vec<String> = masters.iter().map(Process::log_text).collect();
    let written = check_no_overlap(&logs).expect("no two masters wrote at once");
    assert!(
        written >= cycles,
        "each new leader wrote its worker ({written})"
    );
}

/// The ZooKeeper leader of a 3-node ensemble is killed under a running group of masters: the
/// active master's session moves to another server and lives on (it pauses at most), it stays
/// the leader, and it goes on writing its records; the killed server comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ensembles_leader_killed_under_running_masters_the_active_one_leads_on() {
    let mut ensemble = ZooKeeper::ensemble();
    let dir = temp_dir("zk-ensemble");
    let m1 = zk_master(&ensemble.url(), "/ensemble", 8.0, dir.join("m1.log"), &[]);
    let a1 = master_address(&m1.first_line);
    wait_for(&a1, "m1 ALIVE", |s| s.status == RecoveryState::Alive).await;
    let m2 = zk_master(&ensemble.url(), "/ensemble", 8.0, dir.join("m2.log"), &[]);
    let a2 = master_address(&m2.first_line);
    wait_for(&a2, "m2 STANDBY", |s| s.status == RecoveryState::Standby).await;
    let group = format!("sparkwire://{a1},{a2}");
    let _w1 = worker(&group, &dir, "w1");
    wait_for(&a1, "w1", |s| s.workers.len() == 1).await;
    let leader = ensemble.leader();
    ensemble.kill(leader);
    let _w2 = worker(&group, &dir, "w2");
    wait_for(&a1, "w2 registered with the same master", |s| {
        s.status == RecoveryState::Alive
            && s.workers
                .iter()
                .filter(|w| w.state == WorkerState::Alive)
                .count()
                == 2
    })
    .await;
    let s2 = state(&a2).await.expect("m2 answers");
    assert_eq!(s2.status, RecoveryState::Standby, "no takeover happened");
    ensemble.start_server(leader);
    ensemble.wait_serving();
    // Both workers' records are in ZooKeeper.
    let look = zkc::Client::connect(&ensemble.url()).await.expect("client");
    let records = look
        .list_children(&format!("/ensemble/{MASTER_STATUS}"))
        .await
        .expect("records");
    assert_eq!(
        records.iter().filter(|r| r.starts_with("worker_")).count(),
        2,
        "{records:?}"
    );
    check_no_overlap(&logs(&[&m1, &m2])).expect("no two masters wrote at once");
}

/// ZooKeeper (standalone) killed and started again under a running master, within the session
/// timeout: the master pauses (a registration's record write waits) rather than exits, and
/// carries on as the leader once the server is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_restarted_under_a_running_master_pauses_it_and_it_carries_on() {
    let mut server = ZooKeeper::standalone();
    let dir = temp_dir("zk-restart");
    let m1 = zk_master(&server.url(), "/restart", 15.0, dir.join("m1.log"), &[]);
    let a1 = master_address(&m1.first_line);
    wait_for(&a1, "m1 ALIVE", |s| s.status == RecoveryState::Alive).await;
    let group = format!("sparkwire://{a1}");
    let _w1 = worker(&group, &dir, "w1");
    wait_for(&a1, "w1", |s| s.workers.len() == 1).await;
    server.kill(0);
    let _w2 = worker(&group, &dir, "w2");
    server.start_server(0);
    server.wait_serving();
    wait_for(&a1, "w2 registered once ZooKeeper is back", |s| {
        s.status == RecoveryState::Alive
            && s.workers
                .iter()
                .filter(|w| w.state == WorkerState::Alive)
                .count()
                == 2
    })
    .await;
    let log = m1.log_text();
    assert!(!log.contains("Leadership has been revoked"), "{log}");
    assert!(!log.contains("cannot persist"), "{log}");
}
