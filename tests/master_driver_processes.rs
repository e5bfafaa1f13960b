//! Drivers in cluster deploy mode with real workers over TCP: supervision by the worker, relaunch
//! by the master when a worker is lost, and a driver off the worker's allow-list. Submission,
//! placement, status and kills as the master handles them are in `master_drivers.rs` (in memory).

use common::cluster;
mod common;

use std::path::Path;

use cluster::*;
use common::files::temp_dir;
use sparkwire::connection::Connection;
use sparkwire::messages::deploy::{DriverStatusResponse, RequestDriverStatus, RequestSubmitDriver};
use sparkwire::messages::{Command, DeployMessage, DriverDescription, DriverState};
use sparkwire::wire::Reply;

fn driver(script: &str, cores: i32, mem: i32, supervise: bool) -> DriverDescription {
    DriverDescription::new(
        "file:///app.jar".into(),
        mem,
        cores,
        supervise,
        Command::new(
            SH.into(),
            vec![
                "-c".into(),
                script.into(),
                "driver".into(),
                "{{WORKER_URL}}".into(),
            ],
            Default::default(),
            vec![],
            vec![],
            vec![],
        ),
        vec![],
    )
}

async fn submit(c: &Connection<DeployMessage>, d: DriverDescription) -> String {
    match ask(c, RequestSubmitDriver::new(d)).await {
        Reply::Message(DeployMessage::SubmitDriverResponse(r)) => {
            assert!(r.success, "{}", r.message);
            let id = r.driver_id.expect("an id");
            assert_eq!(r.message, format!("Driver successfully submitted as {id}"));
            assert!(id.starts_with("driver-"), "{id}");
            id
        }
        other => panic!("expected SubmitDriverResponse, got {other:?}"),
    }
}

async fn status(c: &Connection<DeployMessage>, id: &str) -> DriverStatusResponse {
    match ask(c, RequestDriverStatus::new(id.into())).await {
        Reply::Message(DeployMessage::DriverStatusResponse(r)) => r,
        other => panic!("expected DriverStatusResponse, got {other:?}"),
    }
}

async fn wait_status(
    c: &Connection<DeployMessage>,
    id: &str,
    state: DriverState,
) -> DriverStatusResponse {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let s = status(c, id).await;
        if s.state == Some(state) {
            return s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "driver {id} never {state}: {s:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervised_driver_is_restarted_by_its_worker_and_relaunched_when_the_worker_is_lost() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("supervise");
    let starts = work.join("starts");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let a = start_worker(&obs, vec![m.clone()], 1, 1024, &work).await;
    wait_master_state(&m, "worker a", |s| s.workers.len() == 1).await;
    let c = client(&m).await;
    // Fails on its first start, then runs.
    let script = format!(
        "echo start >> {0}; if [ $(wc -l < {0}) -lt 2 ]; then exit 1; fi; exec sleep 60",
        starts.display()
    );
    let id = submit(&c, driver(&script, 1, 256, true)).await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while lines(&starts) < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the worker never restarted the driver"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(status(&c, &id).await.state, Some(DriverState::Running));

    // Its worker goes away: the master relaunches it, under a new id, on another worker.
    let b = start_worker(&obs, vec![m.clone()], 1, 1024, &work).await;
    wait_master_state(&m, "worker b", |s| s.workers.len() == 2).await;
    a.shutdown().await;
    wait_status(&c, &id, DriverState::Relaunching).await;
    let s = wait_master_state(&m, "the driver relaunched on b", |s| {
        s.active_drivers
            .iter()
            .any(|d| d.worker_id.as_deref() == Some(b.id()))
    })
    .await;
    assert_ne!(s.active_drivers[0].id, id);
    assert_clean(&obs);
    c.close().await;
    b.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_off_the_allow_list_ends_in_error() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("driver-refused");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 1, 1024, &work).await;
    wait_master_state(&m, "the worker", |s| s.workers.len() == 1).await;
    let c = client(&m).await;
    let mut d = driver("true", 1, 256, false);
    d.command.main_class = "/bin/echo".into();
    let id = submit(&c, d).await;
    let s = wait_status(&c, &id, DriverState::Error).await;
    let e = s.exception.expect("the reason");
    assert!(e.message.contains("allow-list"), "{e}");
    assert_clean(&obs);
    c.close().await;
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}
