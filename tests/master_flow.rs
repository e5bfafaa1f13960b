//! The master with real workers over loopback TCP, every connection checked by the validator in
//! strict mode: a worker registers and heartbeats, an application registers and gets an executor,
//! the worker runs it as a process and reports its states, and the application's end kills it; a
//! real worker's loss, refusal and allow-list. The master's protocol behaviour in detail is tested
//! on the in-memory harness (`master_registration.rs`, `master_loss.rs`, `master_scheduling.rs`,
//! `master_retries.rs`, `master_failover.rs`).

mod cluster;

use cluster::*;
use sparkwire::messages::deploy::RequestWorkerState;
use sparkwire::messages::{Addr, DeployMessage, ExecutorState, WorkerState};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_gets_a_running_executor_that_is_killed_when_it_unregisters() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("flow");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 4, 4096, &work).await;
    wait_master_state(&m, "the worker registered", |s| {
        s.workers.len() == 1 && s.workers[0].state == WorkerState::Alive
    })
    .await;

    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("flow", "exec sleep 60", None, 512),
    )
    .await;
    let app_id = app.app_id().await;
    assert!(
        app_id.starts_with("app-") && app_id.ends_with("-0000"),
        "{app_id}"
    );
    let log = app
        .wait("the executor running", |log| {
            log.iter().any(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running))
        })
        .await;
    let added = log
        .iter()
        .find_map(|m| match m {
            DeployMessage::ExecutorAdded(a) => Some(a.clone()),
            _ => None,
        })
        .expect("ExecutorAdded");
    assert_eq!((added.id, added.cores, added.memory), (0, 4, 512));
    assert_eq!(added.worker_id, worker.id());
    assert!(work.join(&app_id).join("0").join("stdout").exists());

    // Heartbeats keep the worker alive well past the timeout.
    tokio::time::sleep(WORKER_TIMEOUT * 2).await;
    let s = master_state(&m).await;
    assert_eq!(s.workers[0].state, WorkerState::Alive);
    assert_eq!(s.workers[0].cores_used, 4);

    app.unregister().await;
    wait_master_state(&m, "the application finished and its cores freed", |s| {
        s.active_apps.is_empty() && s.completed_apps.len() == 1 && s.workers[0].cores_used == 0
    })
    .await;
    // The worker killed the process and reports it.
    let ui = ui(&sparkwire::messages::Addr::new(
        "127.0.0.1",
        i32::from(worker.addr().port()),
    ))
    .await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        match ask(&ui, RequestWorkerState::new()).await {
            sparkwire::wire::Reply::Message(DeployMessage::WorkerStateResponse(w))
                if w.executors.is_empty()
                    && w.finished_executors
                        .iter()
                        .any(|e| e.state == ExecutorState::Killed) =>
            {
                break
            }
            _ => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the executor was never killed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    ui.close().await;
    assert_clean(&obs);
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_that_exits_is_reported_exited_with_its_code_and_replaced() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("exit");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 2, 2048, &work).await;
    // First executor exits with 0 after a moment; the replacement sleeps.
    let script = "if [ \"$1\" = 0 ]; then sleep 0.2; exit 0; fi; exec sleep 60";
    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("exit", script, Some(1), 256),
    )
    .await;
    let log = app
        .wait("executor 0 exited", |log| {
            log.iter().any(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.id == 0 && u.state == ExecutorState::Exited))
        })
        .await;
    let exited = log
        .iter()
        .find_map(|m| match m {
            DeployMessage::ExecutorUpdated(u) if u.id == 0 && u.state == ExecutorState::Exited => {
                Some(u.clone())
            }
            _ => None,
        })
        .expect("exited");
    assert_eq!(
        exited.message.as_deref(),
        Some("Command exited with code 0")
    );
    assert_eq!(exited.exit_status, Some(0));
    // Two 1-core executors fill the worker; the exited one is replaced by executor 2.
    app.wait("a replacement executor", |log| {
        log.iter()
            .any(|m| matches!(m, DeployMessage::ExecutorAdded(a) if a.id == 2))
    })
    .await;
    assert_clean(&obs);
    app.unregister().await;
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

fn lost(log: &[DeployMessage]) -> Option<sparkwire::messages::deploy::ExecutorUpdated> {
    find(log, |m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Lost => Some(u.clone()),
        _ => None,
    })
}

fn removed(log: &[DeployMessage]) -> Option<sparkwire::messages::deploy::WorkerRemoved> {
    find(log, |m| match m {
        DeployMessage::WorkerRemoved(r) => Some(r.clone()),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_worker_that_goes_away_loses_its_executor_which_is_started_on_another() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("loss");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    let a = start_worker(&obs, vec![m.clone()], 2, 2048, &work).await;
    let b = start_worker(&obs, vec![m.clone()], 2, 2048, &work).await;
    wait_master_state(&m, "two workers", |s| s.workers.len() == 2).await;
    let mut desc = app_desc("loss", "exec sleep 60", None, 256);
    desc.max_cores = Some(2);
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let log = app
        .wait("an executor running", |l| {
            l.iter().any(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Running))
        })
        .await;
    let first = find(&log, |m| match m {
        DeployMessage::ExecutorAdded(e) => Some(e.clone()),
        _ => None,
    })
    .expect("ExecutorAdded");
    let (doomed, survivor) = if first.worker_id == a.id() {
        (a, b)
    } else {
        (b, a)
    };
    let doomed_id = doomed.id().to_string();
    let doomed_port = doomed.addr().port();
    doomed.shutdown().await;

    let log = app
        .wait("the executor lost and a new one on the other worker", |l| {
            lost(l).is_some()
                && removed(l).is_some()
                && l.iter()
                    .any(|m| matches!(m, DeployMessage::ExecutorAdded(e) if e.id == 1))
        })
        .await;
    let update = lost(&log).expect("LOST");
    assert_eq!(update.id, 0);
    assert_eq!(update.message.as_deref(), Some("worker lost"));
    assert_eq!(update.worker_host.as_deref(), Some("127.0.0.1"));
    let gone = removed(&log).expect("WorkerRemoved");
    assert_eq!(gone.id, doomed_id);
    assert_eq!(gone.host, "127.0.0.1");
    assert_eq!(
        gone.message,
        format!("127.0.0.1:{doomed_port} got disassociated")
    );
    let second = find(&log, |m| match m {
        DeployMessage::ExecutorAdded(e) if e.id == 1 => Some(e.clone()),
        _ => None,
    })
    .expect("second executor");
    assert_eq!(second.worker_id, survivor.id());
    let s = master_state(&m).await;
    assert!(s
        .workers
        .iter()
        .any(|w| w.id == doomed_id && w.state == WorkerState::Dead));
    assert_clean(&obs);
    app.unregister().await;
    survivor.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_worker_stops_when_its_registration_is_refused() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("refused");
    let master = start_master(&obs, |_| {}).await;
    let m = addr_of(&master);
    // A port the real worker will listen on, already claimed at the master by another id.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
        probe.local_addr().expect("addr").port()
    };
    let squatter = FakeWorker::connect(
        &m,
        "worker-squatter",
        Addr::new("127.0.0.1", i32::from(port)),
    )
    .await;
    squatter.register(&m, 1, 512).await;
    squatter
        .wait("registered", |l| {
            count(l, |m| matches!(m, DeployMessage::RegisteredWorker(_))) == 1
        })
        .await;
    let mut worker =
        start_worker_with(&obs, vec![m.clone()], 1, 512, &work, |c| c.port = port).await;
    let exit = tokio::time::timeout(PATIENCE, worker.stopped())
        .await
        .expect("the worker stops");
    assert_eq!(
        exit,
        sparkwire::node::worker::WorkerExit::RegistrationFailed(format!(
            "Attempted to re-register worker at same address: 127.0.0.1:{port}"
        ))
    );
    assert_clean(&obs);
    squatter.close().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_off_the_allow_list_is_refused_with_failed() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("allow");
    let master = start_master(&obs, |c| c.core.max_executor_retries = 1).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 1, 1024, &work).await;
    let mut desc = app_desc("evil", "true", None, 256);
    desc.command.main_class = "/bin/echo".into();
    desc.command.arguments = vec!["pwned".into()];
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let log = app
        .wait("FAILED", |l| {
            l.iter().any(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Failed))
        })
        .await;
    let failed = find(&log, |m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Failed => Some(u.clone()),
        _ => None,
    })
    .expect("failed");
    let text = failed.message.expect("a message");
    assert!(
        text.contains("not on the worker's allow-list (--allow-exec, --allow-exec-any)"),
        "{text}"
    );
    assert_eq!(failed.exit_status, None);
    let app_id = app.app_id().await;
    assert!(
        !work.join(&app_id).join("0").join("stdout").exists(),
        "nothing was run"
    );
    assert_clean(&obs);
    app.close().await;
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}
