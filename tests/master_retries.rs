//! Executor failures: an executor that ends abnormally is replaced until the application has
//! failed `maxExecutorRetries` times with none running, then the application is removed
//! (FAILED) — Spark resets the count whenever an executor reports RUNNING —; a worker refuses to run a program off its allow-list.

mod cluster;

use cluster::*;
use sparkwire::messages::{ApplicationState, DeployMessage, ExecutorState};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_whose_executors_cannot_start_is_removed_after_the_retry_limit() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("retries");
    // Allowed, but not executable: every launch fails.
    let broken = work.join("not-executable");
    std::fs::write(&broken, "#!/bin/sh\nexit 0\n").expect("write");
    let master = start_master(&obs, |c| c.max_executor_retries = 3).await;
    let m = addr_of(&master);
    let worker = start_worker_with(&obs, vec![m.clone()], 1, 1024, &work, |c| {
        c.allow_exec_any.push(broken.clone())
    })
    .await;
    let mut desc = app_desc("failing", "true", None, 256);
    desc.command.main_class = broken.display().to_string();
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let log = app
        .wait("ApplicationRemoved", |l| {
            l.iter()
                .any(|m| matches!(m, DeployMessage::ApplicationRemoved(_)))
        })
        .await;
    let failures: Vec<_> = log
        .iter()
        .filter_map(|m| match m {
            DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Failed => {
                Some(u.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(failures.len(), 3, "three failed launches before removal");
    assert!(failures.iter().all(|u| u
        .message
        .as_deref()
        .is_some_and(|t| t.contains("cannot run"))));
    let removed = find(&log, |m| match m {
        DeployMessage::ApplicationRemoved(r) => Some(r.message.clone()),
        _ => None,
    });
    assert_eq!(removed.as_deref(), Some("FAILED"));
    let s = wait_master_state(&m, "the application completed", |s| {
        s.active_apps.is_empty()
    })
    .await;
    assert_eq!(s.completed_apps[0].state, ApplicationState::Failed);
    assert_clean(&obs);
    app.close().await;
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executors_that_crash_after_running_are_replaced_without_limit_as_in_spark() {
    // Spark resets an application's retry count whenever an executor reports RUNNING, so a crash
    // after start never adds up to the limit.
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("crashloop");
    let master = start_master(&obs, |c| c.max_executor_retries = 2).await;
    let m = addr_of(&master);
    let worker = start_worker(&obs, vec![m.clone()], 1, 1024, &work).await;
    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("crashing", "exit 1", None, 256),
    )
    .await;
    let log = app
        .wait("five crashes", |l| {
            count(l, |m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Exited)) >= 5
        })
        .await;
    assert!(!log
        .iter()
        .any(|m| matches!(m, DeployMessage::ApplicationRemoved(_))));
    let exited = find(&log, |m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Exited => Some(u.clone()),
        _ => None,
    })
    .expect("exit");
    assert_eq!(
        exited.message.as_deref(),
        Some("Command exited with code 1")
    );
    assert_eq!(exited.exit_status, Some(1));
    assert_clean(&obs);
    app.unregister().await;
    worker.shutdown().await;
    master.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_off_the_allow_list_is_refused_with_failed() {
    let obs = observer(WORKER_TIMEOUT);
    let work = temp_dir("allow");
    let master = start_master(&obs, |c| c.max_executor_retries = 1).await;
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
