//! Scheduling end to end: executors spread over workers or packed on few, the executor limit
//! from initialExecutorLimit and RequestExecutors, KillExecutors, and workers without the memory
//! of one executor left out. Workers are played by the test (no processes), with a long timeout.

mod cluster;

use std::time::Duration;

use cluster::*;
use sparkwire::messages::deploy::{KillExecutors, LaunchExecutor, RequestExecutors};
use sparkwire::messages::{Addr, DeployMessage, ProfileExecutors, ResourceProfile};
use sparkwire::wire::Reply;

const LONG: Duration = Duration::from_secs(60);

fn launches(w: &FakeWorker) -> Vec<LaunchExecutor> {
    w.log()
        .into_iter()
        .filter_map(|m| match m {
            DeployMessage::LaunchExecutor(l) => Some(l),
            _ => None,
        })
        .collect()
}

async fn workers(m: &Addr, n: usize, cores: i32, memory: i32) -> Vec<FakeWorker> {
    let mut out = Vec::new();
    for i in 0..n {
        let w = FakeWorker::connect(
            m,
            &format!("worker-{i}"),
            Addr::new("127.0.0.1", 51000 + i as i32),
        )
        .await;
        w.register(m, cores, memory).await;
        w.wait("registered", |l| {
            l.iter()
                .any(|m| matches!(m, DeployMessage::RegisteredWorker(_)))
        })
        .await;
        out.push(w);
    }
    out
}

async fn placement(spread_out: bool) -> Vec<usize> {
    let obs = observer(LONG);
    let master = start_master(&obs, |c| {
        c.spread_out = spread_out;
        c.worker_timeout = LONG;
    })
    .await;
    let m = addr_of(&master);
    let ws = workers(&m, 3, 4, 4096).await;
    let mut desc = app_desc("place", "true", Some(1), 256);
    desc.max_cores = Some(3);
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    app.wait("three executors", |l| {
        count(l, |m| matches!(m, DeployMessage::ExecutorAdded(_))) == 3
    })
    .await;
    let mut per_worker = Vec::new();
    for w in &ws {
        per_worker.push(launches(w).len());
    }
    assert!(launches(&ws[0])
        .iter()
        .all(|l| l.cores == 1 && l.memory == 256));
    assert_clean(&obs);
    app.unregister().await;
    for w in ws {
        w.close().await;
    }
    master.shutdown().await;
    per_worker
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spread_out_mode_puts_one_executor_on_each_worker() {
    assert_eq!(placement(true).await, vec![1, 1, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consolidate_mode_fills_one_worker_first() {
    let mut got = placement(false).await;
    got.sort_unstable();
    assert_eq!(got, vec![0, 0, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_executor_limit_follows_requests_and_killed_executors_are_not_replaced() {
    let obs = observer(LONG);
    let master = start_master(&obs, |c| c.worker_timeout = LONG).await;
    let m = addr_of(&master);
    let ws = workers(&m, 1, 8, 8192).await;
    let mut desc = app_desc("limit", "true", Some(2), 512);
    desc.initial_executor_limit = Some(1);
    let app = TestApp::register(std::slice::from_ref(&m), desc).await;
    let app_id = app.app_id().await;
    app.wait("one executor", |l| {
        count(l, |m| matches!(m, DeployMessage::ExecutorAdded(_))) == 1
    })
    .await;

    let profile = ResourceProfile::default_with(Some(2), 512);
    let reply = app
        .ask(RequestExecutors::new(
            app_id.clone(),
            vec![ProfileExecutors::new(profile, 3)],
        ))
        .await;
    assert_eq!(reply, Reply::Bool(true));
    app.wait("three executors", |l| {
        count(l, |m| matches!(m, DeployMessage::ExecutorAdded(_))) == 3
    })
    .await;

    let profile = ResourceProfile::default_with(Some(2), 512);
    let reply = app
        .ask(RequestExecutors::new(
            app_id.clone(),
            vec![ProfileExecutors::new(profile, 2)],
        ))
        .await;
    assert_eq!(reply, Reply::Bool(true));
    let reply = app
        .ask(KillExecutors::new(
            app_id.clone(),
            vec!["1".into(), "not-a-number".into()],
        ))
        .await;
    assert_eq!(reply, Reply::Bool(true));
    ws[0]
        .wait("KillExecutor for executor 1", |l| {
            l.iter().any(|m| matches!(m, DeployMessage::KillExecutor(k) if k.exec_id == 1 && k.app_id == app_id))
        })
        .await;
    // Two executors remain, matching the limit of 2: none is added.
    let s = wait_master_state(&m, "4 cores in use", |s| s.workers[0].cores_used == 4).await;
    assert_eq!(s.active_apps[0].cores_granted, 4);
    assert_eq!(
        count(&app.log(), |m| matches!(m, DeployMessage::ExecutorAdded(_))),
        3
    );
    assert_clean(&obs);
    app.unregister().await;
    for w in ws {
        w.close().await;
    }
    master.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_without_the_memory_of_one_executor_get_none() {
    let obs = observer(LONG);
    let master = start_master(&obs, |c| c.worker_timeout = LONG).await;
    let m = addr_of(&master);
    let small = FakeWorker::connect(&m, "worker-small", Addr::new("127.0.0.1", 51100)).await;
    small.register(&m, 8, 256).await;
    let big = FakeWorker::connect(&m, "worker-big", Addr::new("127.0.0.1", 51101)).await;
    big.register(&m, 2, 4096).await;
    wait_master_state(&m, "two workers", |s| s.workers.len() == 2).await;
    let app = TestApp::register(
        std::slice::from_ref(&m),
        app_desc("mem", "true", None, 1024),
    )
    .await;
    app.wait("an executor", |l| {
        count(l, |m| matches!(m, DeployMessage::ExecutorAdded(_))) == 1
    })
    .await;
    assert_eq!(launches(&big).len(), 1);
    assert_eq!(
        launches(&big)[0].cores,
        2,
        "one executor takes every core of the worker"
    );
    assert!(launches(&small).is_empty());
    assert_clean(&obs);
    app.unregister().await;
    small.close().await;
    big.close().await;
    master.shutdown().await;
}
