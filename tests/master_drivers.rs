//! Drivers in cluster deploy mode: submission, placement, status, kills (running, waiting, all),
//! their end states, supervision by the worker, and relaunch by the master when a worker is lost.

mod cluster;

use std::path::Path;

use cluster::*;
use sparkwire::connection::Connection;
use sparkwire::messages::deploy::{
    DriverStatusResponse, RequestDriverStatus, RequestKillAllDrivers, RequestKillDriver,
    RequestSubmitDriver,
};
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

async fn kill(c: &Connection<DeployMessage>, id: &str) -> (bool, String) {
    match ask(c, RequestKillDriver::new(id.into())).await {
        Reply::Message(DeployMessage::KillDriverResponse(r)) => {
            assert_eq!(r.driver_id, id);
            (r.success, r.message)
        }
        other => panic!("expected KillDriverResponse, got {other:?}"),
    }
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drivers_are_submitted_run_and_end_killed_finished_or_failed() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("drivers");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 2, 2048, &work).await;
    wait_master_state(&m, "the worker", |s| s.workers.len() == 1).await;
    let c = client(&m).await;

    let long = submit(&c, driver("exec sleep 60", 1, 256, false)).await;
    let s = wait_status(&c, &long, DriverState::Running).await;
    assert!(s.found);
    assert_eq!(s.worker_id.as_deref(), Some(worker.id()));
    assert_eq!(
        s.worker_host_port,
        Some(format!("127.0.0.1:{}", worker.addr().port()))
    );
    assert!(work.join(&long).join("stdout").exists());
    assert_eq!(
        kill(&c, &long).await,
        (true, format!("Kill request for {long} submitted"))
    );
    wait_status(&c, &long, DriverState::Killed).await;

    let ok = submit(&c, driver("exit 0", 1, 256, false)).await;
    wait_status(&c, &ok, DriverState::Finished).await;
    let bad = submit(&c, driver("exit 3", 1, 256, false)).await;
    wait_status(&c, &bad, DriverState::Failed).await;

    // Too big for any worker: it waits, and a kill ends it at once.
    let waiting = submit(&c, driver("true", 16, 256, false)).await;
    assert_eq!(
        status(&c, &waiting).await.state,
        Some(DriverState::Submitted)
    );
    assert!(kill(&c, &waiting).await.0);
    wait_status(&c, &waiting, DriverState::Killed).await;

    assert_eq!(
        kill(&c, "driver-none").await,
        (
            false,
            "Driver driver-none has already finished or does not exist".into()
        )
    );
    let unknown = status(&c, "driver-none").await;
    assert!(!unknown.found && unknown.state.is_none());

    let a = submit(&c, driver("exec sleep 60", 1, 256, false)).await;
    wait_status(&c, &a, DriverState::Running).await;
    match ask(&c, RequestKillAllDrivers::new()).await {
        Reply::Message(DeployMessage::KillAllDriversResponse(r)) => {
            assert!(r.success);
            assert_eq!(r.message, "Kill request for all drivers submitted");
        }
        other => panic!("expected KillAllDriversResponse, got {other:?}"),
    }
    wait_status(&c, &a, DriverState::Killed).await;
    let s = master_state(&m).await;
    assert!(s.active_drivers.is_empty());
    assert_eq!(s.completed_drivers.len(), 5);
    assert_eq!(s.workers[0].cores_used, 0);
    assert_clean(&obs);
    c.close().await;
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
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
