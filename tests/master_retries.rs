//! Executor failures: an executor that ends abnormally is replaced until the application has
//! failed `maxExecutorRetries` times with none running, then the application is removed
//! (FAILED); Spark resets the count whenever an executor reports RUNNING, and a normal exit
//! (code 0) never counts. On the in-memory harness; a worker refusing a program off its
//! allow-list is in `master_flow.rs`.

#![cfg(feature = "testing")]

use sparkwire::messages::deploy::ApplicationRemoved;
use sparkwire::messages::{ApplicationState, DeployMessage, ExecutorState};
use sparkwire::node::master::Config;
use sparkwire::reference::master::harness::{app_desc, picked, Sim};
use sparkwire::wire::Reply;

fn updates(log: &[DeployMessage], state: ExecutorState) -> usize {
    log.iter()
        .filter(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == state))
        .count()
}

fn app_removed(log: &[DeployMessage]) -> Vec<ApplicationRemoved> {
    picked(log, |m| match m {
        DeployMessage::ApplicationRemoved(r) => Some(r.clone()),
        _ => None,
    })
}

#[test]
fn an_application_whose_executors_cannot_start_is_removed_after_the_retry_limit() {
    let mut sim = Sim::new(Config {
        max_executor_retries: 3,
        ..Config::default()
    });
    let w = sim.worker("worker-0", 52000, 1, 1024);
    let (app, app_id) = sim.app(60000, app_desc("failing", None, 256));
    let app_id = app_id.expect("registered");
    assert_eq!(sim.store().apps.len(), 1, "the application is persisted");
    for attempt in 0..3 {
        let launches = sim.launches(w);
        assert_eq!(
            launches.len(),
            attempt + 1,
            "a replacement after each failure"
        );
        let exec_id = launches[attempt].exec_id;
        assert_eq!(exec_id, attempt as i32, "executor ids are not reused");
        let answer = sim.executor_state(w, &app_id, exec_id, ExecutorState::Failed, None);
        assert_eq!(answer, Some(Ok(Reply::Bool(true))));
    }
    let log = sim.received(app);
    assert_eq!(updates(log, ExecutorState::Failed), 3);
    assert_eq!(
        app_removed(log),
        vec![ApplicationRemoved::new("FAILED".into(),)]
    );
    assert_eq!(sim.launches(w).len(), 3, "no fourth launch");
    assert!(sim
        .received(w)
        .iter()
        .any(|m| matches!(m, DeployMessage::ApplicationFinished(f) if f.id == app_id)));
    let s = sim.state();
    assert!(s.active_apps.is_empty());
    assert_eq!(s.completed_apps[0].state, ApplicationState::Failed);
    assert_eq!(s.workers[0].cores_used, 0, "the worker is freed");
    assert!(
        sim.store().apps.is_empty(),
        "the application is unpersisted"
    );
}

#[test]
fn executors_that_crash_after_running_are_replaced_without_limit_as_in_spark() {
    let mut sim = Sim::new(Config {
        max_executor_retries: 2,
        ..Config::default()
    });
    let w = sim.worker("worker-0", 52000, 1, 1024);
    let (app, app_id) = sim.app(60000, app_desc("crashing", None, 256));
    let app_id = app_id.expect("registered");
    for n in 0..6 {
        let exec_id = sim.launches(w)[n].exec_id;
        sim.executor_state(w, &app_id, exec_id, ExecutorState::Running, None);
        sim.executor_state(w, &app_id, exec_id, ExecutorState::Exited, Some(1));
    }
    let log = sim.received(app);
    assert_eq!(updates(log, ExecutorState::Exited), 6);
    assert!(app_removed(log).is_empty());
    assert_eq!(sim.launches(w).len(), 7, "each crash is replaced");
}

#[test]
fn normal_exits_do_not_count_and_a_negative_limit_never_removes() {
    let mut sim = Sim::new(Config {
        max_executor_retries: 1,
        ..Config::default()
    });
    let w = sim.worker("worker-0", 52000, 1, 1024);
    let (app, app_id) = sim.app(60000, app_desc("clean", None, 256));
    let app_id = app_id.expect("registered");
    for n in 0..3 {
        let exec_id = sim.launches(w)[n].exec_id;
        sim.executor_state(w, &app_id, exec_id, ExecutorState::Exited, Some(0));
    }
    assert!(app_removed(sim.received(app)).is_empty());

    let mut sim = Sim::new(Config {
        max_executor_retries: -1,
        ..Config::default()
    });
    let w = sim.worker("worker-0", 52000, 1, 1024);
    let (app, app_id) = sim.app(60000, app_desc("unlimited", None, 256));
    let app_id = app_id.expect("registered");
    for n in 0..20 {
        let exec_id = sim.launches(w)[n].exec_id;
        sim.executor_state(w, &app_id, exec_id, ExecutorState::Failed, None);
    }
    assert!(app_removed(sim.received(app)).is_empty());
    assert_eq!(sim.launches(w).len(), 21);
}

#[test]
fn completed_applications_are_retained_up_to_the_limit_dropping_the_oldest_tenth() {
    let mut sim = Sim::new(Config {
        retained_applications: 20,
        ..Config::default()
    });
    let mut ids = Vec::new();
    for n in 0..21 {
        let (conn, id) = sim.app(61000 + n, app_desc("short", None, 256));
        ids.push(id.expect("registered"));
        sim.close(conn);
    }
    let kept: Vec<String> = sim
        .state()
        .completed_apps
        .into_iter()
        .map(|a| a.id)
        .collect();
    // The 21st pushed out the oldest two (a tenth of 20), in order.
    assert_eq!(kept, ids[2..].to_vec());
    assert!(sim
        .state()
        .completed_apps
        .iter()
        .all(|a| a.state == ApplicationState::Finished));
}
