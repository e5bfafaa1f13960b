//! Master high availability in the file mode (`--recovery-mode filesystem --recovery-dir`,
//! the leader elected with a lock file there), its holes closed: a kill -9 of the active master
//! during a job and pause/resume cycles of the active master, as in `zookeeper_ha.rs` (the same
//! scenarios and the same overlap checker over the masters' logs); a record write that fails
//! fails the registration, as Spark's does; a deposed master stops. (A renewal that fails steps
//! the master down: `reference::master::ha`'s unit tests.)

use common::cluster;
mod common;
use common::ha;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cluster::{start_master, FakeWorker};
use common::files::temp_dir;
use ha::*;
use sparkwire::messages::{Addr, DeployMessage, RecoveryState};

fn file_master(dir: &Path, log: PathBuf) -> Process {
    let dir = dir.to_str().expect("path");
    Process::spawn(
        &[
            "master",
            "--port",
            "0",
            "--no-webui",
            "--recovery-mode",
            "filesystem",
            "--recovery-dir",
            dir,
        ],
        log,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_active_master_during_a_job_a_standby_takes_over_and_the_job_finishes() {
    let recovery = temp_dir("file-kill-recovery");
    let took = kill_9_during_a_job("file-kill", |log| file_master(&recovery, log)).await;
    eprintln!("takeover (filesystem, lease 3 s): {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_writes_nothing_after_its_lease_ran_out_and_stops_leading() {
    let recovery = temp_dir("file-pause-recovery");
    pause_cycles("file-pause", |log| file_master(&recovery, log)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_write_that_fails_fails_the_worker_registration() {
    let obs = cluster::observer(cluster::WORKER_TIMEOUT);
    let dir = temp_dir("file-failed-write");
    // Where the worker's record goes stands a non-empty directory: renaming over it fails.
    let blocked = dir.join("worker_w-blocked.json");
    std::fs::create_dir_all(blocked.join("inside")).expect("blocking directory");
    let master = start_master(&obs, |c| {
        c.recovery_dir = Some(dir.clone());
        c.lease = Duration::from_millis(1500);
    })
    .await;
    let m = cluster::addr_of(&master);
    wait_for(&m.to_string(), "the master ALIVE", |s| {
        s.status == RecoveryState::Alive
    })
    .await;
    let w = FakeWorker::connect(&m, "w-blocked", Addr::new("127.0.0.1", 1)).await;
    w.register(&m, 2, 1024).await;
    let log = w
        .wait("the registration's answer", |l| {
            l.iter().any(|m| {
                matches!(
                    m,
                    DeployMessage::RegisterWorkerFailed(_) | DeployMessage::RegisteredWorker(_)
                )
            })
        })
        .await;
    let failed = log.iter().find_map(|m| match m {
        DeployMessage::RegisterWorkerFailed(f) => Some(f.message.clone()),
        _ => None,
    });
    let failed = failed.expect("RegisterWorkerFailed, not RegisteredWorker");
    assert!(
        failed.starts_with("cannot persist worker w-blocked:"),
        "{failed}"
    );
    assert!(!log
        .iter()
        .any(|m| matches!(m, DeployMessage::RegisteredWorker(_))));
    let s = cluster::master_state(&m).await;
    assert!(
        s.workers
            .iter()
            .all(|w| w.id != "w-blocked" || w.state == sparkwire::messages::WorkerState::Dead),
        "{:?}",
        s.workers
    );
    // Another worker, whose record can be written, registers.
    let ok = FakeWorker::connect(&m, "w-ok", Addr::new("127.0.0.1", 2)).await;
    ok.register(&m, 2, 1024).await;
    ok.wait("registered", |l| {
        l.iter()
            .any(|m| matches!(m, DeployMessage::RegisteredWorker(_)))
    })
    .await;
    assert!(dir.join("worker_w-ok.json").is_file());
    w.close().await;
    ok.close().await;
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_master_stops() {
    let obs = cluster::observer(cluster::WORKER_TIMEOUT);
    let dir = temp_dir("file-deposed");
    let mut master = start_master(&obs, |c| {
        c.recovery_dir = Some(dir.clone());
        c.lease = Duration::from_millis(900);
    })
    .await;
    let m = cluster::addr_of(&master);
    wait_for(&m.to_string(), "the master ALIVE", |s| {
        s.status == RecoveryState::Alive
    })
    .await;
    // Another master's lease in the lock, renewed now (as after a takeover of a lock this
    // master failed to renew).
    let lock = dir.join(sparkwire::reference::master::ha::LOCK_FILE);
    let other = sparkwire::reference::master::ha::Lease {
        holder: "master-elsewhere".into(),
        pid: 1,
        nonce: 7,
        renewed_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64),
    };
    std::fs::write(&lock, serde_json::to_vec(&other).expect("json")).expect("lock");
    tokio::time::timeout(PATIENCE, master.stopped())
        .await
        .expect("the deposed master stops");
    let left: sparkwire::reference::master::ha::Lease =
        serde_json::from_slice(&std::fs::read(&lock).expect("lock")).expect("lease");
    assert_eq!(left, other, "it left the other master's lock alone");
}
