//! Whole flows of a standalone cluster, built with the scenario helpers, are accepted; and the
//! same flows with one step wrong are caught.

use sparkwire::messages::{CoarseMessage, DeployMessage, DriverState, ExecutorState, TaskState};
mod common;

use common::scenarios::{launched_asked_about_and_killed, submitted};
use sparkwire::validate::scenario::{msg, Scenario};
use sparkwire::validate::sparkwire_task_decoder;
use sparkwire::validate::{Config, Endpoint, Event, Rule, Validator, Violation};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

fn run(config: Config, events: &[Event]) -> Vec<Violation> {
    let mut v = Validator::new(config);
    let mut out: Vec<Violation> = events.iter().flat_map(|e| v.observe(e)).collect();
    out.extend(v.finish());
    out
}

fn clean(events: &[Event]) {
    let found = run(Config::default(), events);
    assert!(found.is_empty(), "unexpected violations: {found:#?}");
    let found = run(Config::with_task_decoder(sparkwire_task_decoder), events);
    assert!(
        found.is_empty(),
        "unexpected violations with a task decoder: {found:#?}"
    );
}

fn driver() -> Endpoint {
    Endpoint::new(Role::Driver, "app-1")
}

#[test]
fn worker_registration_and_heartbeats_are_accepted() {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 4, 8192);
    s.up(&w, msg::worker_latest_state("worker-1", &[]));
    for _ in 0..3 {
        s.advance(15_000);
        s.up(&w, msg::heartbeat("worker-1"));
    }
    clean(s.events());
}

#[test]
fn application_executors_and_tasks_flow_is_accepted() {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 4, 8192);
    let app = s.app("app-1");
    let ask = s.ask_up(&app, msg::request_executors("app-1", 2));
    s.reply_down(&app, ask, Reply::<DeployMessage>::Bool(true));
    s.launch_executor(&app, &w, 0, 2, 1024);
    s.launch_executor(&app, &w, 1, 2, 1024);
    let e0 = s.executor(&driver(), "0", 2);
    let e1 = s.executor(&driver(), "1", 2);
    for t in 0..6 {
        let (link, id) = if t % 2 == 0 { (&e0, "0") } else { (&e1, "1") };
        s.run_task(link, id, t, 1);
    }
    // Two tasks at once fill executor 0's two cores.
    s.down(&e0, msg::launch_task(10, 1));
    s.down(&e0, msg::launch_task(11, 1));
    s.up(&e0, msg::status_update("0", 10, TaskState::Running, 1));
    s.up(&e0, msg::status_update("0", 11, TaskState::Running, 1));
    s.up(&e0, msg::status_update("0", 10, TaskState::Finished, 1));
    s.up(&e0, msg::status_update("0", 11, TaskState::Failed, 1));
    s.down(&e0, msg::stop_executor());
    s.down(&e1, msg::stop_executor());
    s.close(&e0);
    s.close(&e1);
    s.up(&app, msg::unregister_application("app-1"));
    s.down(&w, msg::kill_executor("app-1", 0));
    s.down(&w, msg::kill_executor("app-1", 1));
    s.down(&w, msg::application_finished("app-1"));
    for exec in [0, 1] {
        let ask = s.ask_up(
            &w,
            msg::executor_state_changed("app-1", exec, ExecutorState::Killed),
        );
        s.reply_down(&w, ask, Reply::<DeployMessage>::Bool(true));
    }
    s.close(&app);
    clean(s.events());
}

#[test]
fn executor_lost_and_replaced_is_accepted() {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 2, 2048);
    let app = s.app("app-1");
    s.launch_executor(&app, &w, 0, 2, 2048);
    let e0 = s.executor(&driver(), "0", 2);
    s.down(&e0, msg::launch_task(1, 1));
    // The executor process is killed: its connection drops, its worker reports EXITED.
    s.close(&e0);
    let ask = s.ask_up(
        &w,
        msg::executor_state_changed("app-1", 0, ExecutorState::Exited),
    );
    s.reply_down(&w, ask, Reply::<DeployMessage>::Bool(true));
    s.down(&app, msg::executor_updated(0, ExecutorState::Exited, None));
    // The freed cores go to a replacement at once.
    s.launch_executor(&app, &w, 1, 2, 2048);
    let e1 = s.executor(&driver(), "1", 2);
    s.run_task(&e1, "1", 2, 1);
    clean(s.events());
}

#[test]
fn worker_lost_flow_is_accepted() {
    let mut s = Scenario::new();
    let w1 = s.worker("worker-1", "10.0.0.1", 2, 2048);
    let w2 = s.worker("worker-2", "10.0.0.2", 2, 2048);
    let app = s.app("app-1");
    s.launch_executor(&app, &w1, 0, 1, 1024);
    s.launch_executor(&app, &w1, 1, 1, 1024);
    s.close(&w1);
    s.down(
        &app,
        msg::executor_updated(0, ExecutorState::Lost, Some("10.0.0.1")),
    );
    s.down(
        &app,
        msg::executor_updated(1, ExecutorState::Lost, Some("10.0.0.1")),
    );
    s.down(&app, msg::worker_removed("worker-1", "10.0.0.1"));
    s.launch_executor(&app, &w2, 2, 2, 2048);
    clean(s.events());
}

#[test]
fn worker_timed_out_then_reregistered_is_accepted() {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 2, 2048);
    let app = s.app("app-1");
    s.launch_executor(&app, &w, 0, 2, 2048);
    s.advance(61_000);
    s.down(
        &app,
        msg::executor_updated(0, ExecutorState::Lost, Some("10.0.0.1")),
    );
    s.down(&app, msg::worker_removed("worker-1", "10.0.0.1"));
    s.up(&w, msg::heartbeat("worker-1"));
    s.down(&w, msg::reconnect_worker());
    s.up(&w, msg::register_worker("worker-1", "10.0.0.1", 2, 2048));
    s.down(&w, msg::registered_worker(false));
    // Spark may launch before WorkerLatestState arrives: the order of the two is not fixed.
    s.launch_executor(&app, &w, 1, 2, 2048);
    s.up(
        &w,
        msg::worker_latest_state("worker-1", &[("app-1", 0, 2, 2048)]),
    );
    s.down(&w, msg::kill_executor("app-1", 0));
    let found = run(
        Config {
            strict_order: true,
            ..Config::default()
        },
        s.events(),
    );
    assert!(found.is_empty(), "{found:#?}");
    clean(s.events());
}

#[test]
fn master_failover_is_accepted() {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    let app = s.app("app-1");
    s.launch_executor(&app, &w, 0, 2, 1024);
    // master-1 dies: both its connections drop.
    s.close(&w);
    s.close(&app);
    s.master = Endpoint::new(Role::Master, "master-2");
    let w2 = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
    let app2 = s.open(Endpoint::new(Role::AppClient, "app-1"), s.master.clone());
    s.down(&w2, msg::master_changed());
    s.down(&app2, msg::master_changed());
    s.up(
        &w2,
        msg::worker_scheduler_state_response("worker-1", &[("app-1", 0, 2, 1024)], &[]),
    );
    s.up(&app2, msg::master_change_acknowledged("app-1"));
    s.up(&w2, msg::heartbeat("worker-1"));
    let ask = s.ask_up(
        &w2,
        msg::executor_state_changed("app-1", 0, ExecutorState::Exited),
    );
    s.reply_down(&w2, ask, Reply::<DeployMessage>::Bool(true));
    s.down(&app2, msg::executor_updated(0, ExecutorState::Exited, None));
    s.launch_executor(&app2, &w2, 1, 2, 1024);
    clean(s.events());
}

#[test]
fn driver_submitted_asked_about_and_killed_is_accepted() {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    let client = submitted(&mut s, "driver-1");
    launched_asked_about_and_killed(&mut s, &client, &w, "worker-1", "driver-1");
    let ask = s.ask_up(&client, msg::request_driver_status("driver-1"));
    let status = msg::driver_status_response(true, Some(DriverState::Killed), Some("worker-1"));
    s.reply_down(&client, ask, Reply::Message(status));
    // A second driver, killed while still waiting: no worker involved.
    let ask = s.ask_up(&client, msg::request_submit_driver(8, 1024, false));
    s.reply_down(
        &client,
        ask,
        Reply::Message(msg::submit_driver_response(true, Some("driver-2"))),
    );
    let ask = s.ask_up(&client, msg::request_kill_driver("driver-2"));
    s.reply_down(
        &client,
        ask,
        Reply::Message(msg::kill_driver_response("driver-2", true)),
    );
    s.close(&client);
    clean(s.events());
}

#[test]
fn decommissioning_flow_is_accepted_and_later_launches_are_caught() {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    let w2 = s.worker("worker-2", "10.0.0.2", 4, 4096);
    let app = s.app("app-1");
    s.launch_executor(&app, &w, 0, 2, 1024);
    let e0 = s.executor(&driver(), "0", 2);
    s.up(&w, msg::worker_decommissioning("worker-1"));
    s.down(
        &app,
        msg::executor_updated(0, ExecutorState::Decommissioned, Some("10.0.0.1")),
    );
    s.down(&e0, msg::decommission_executor());
    let ask = s.ask_up(&e0, msg::executor_decommissioning("0"));
    s.reply_down(&e0, ask, Reply::<CoarseMessage>::Bool(true));
    s.launch_executor(&app, &w2, 1, 2, 1024);
    clean(s.events());

    s.advance(5_000);
    s.down(&w, msg::launch_executor("app-1", 2, 1, 512));
    s.down(&e0, msg::launch_task(1, 1));
    let rules: Vec<Rule> = run(Config::default(), s.events())
        .iter()
        .map(|v| v.rule)
        .collect();
    // And the trace ends owing what those launches call for: the worker's ExecutorStateChanged
    // and the task's end (rules N4, N2).
    assert_eq!(
        rules,
        [
            Rule::WorkerLaunchAlive,
            Rule::ExecutorNoTasksAfterStop,
            Rule::EndExecutorState,
            Rule::EndTaskEnded
        ]
    );
}

#[test]
fn cluster_manager_flow_is_accepted() {
    let mut s = Scenario::new();
    let cm = s.open(Endpoint::new(Role::ClusterManager, "am-1"), driver());
    s.up(&cm, msg::register_cluster_manager());
    let ask = s.ask_down(&cm, msg::get_executor_loss_reason("3"));
    let reason = sparkwire::messages::ExecutorLossReason::executor_killed();
    s.reply_up(&cm, ask, Reply::<CoarseMessage>::LossReason(reason));
    clean(s.events());
}

#[test]
fn version_1_flow_is_accepted() {
    let mut s = Scenario::with_version(sparkwire::messages::Version::V1);
    let w = s.worker("worker-1", "10.0.0.1", 2, 2048);
    let app = s.app("app-1");
    s.launch_executor(&app, &w, 0, 2, 1024);
    let e0 = s.executor(&driver(), "0", 2);
    s.run_task(&e0, "0", 1, 1);
    s.close(&w);
    s.down(
        &app,
        msg::executor_updated(0, ExecutorState::Lost, Some("")),
    );
    clean(s.events());
}

#[test]
fn worker_reregistering_with_a_recovered_master_may_be_told_duplicate() {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    s.close(&w);
    s.master = Endpoint::new(Role::Master, "master-2");
    let w2 = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
    s.up(&w2, msg::register_worker("worker-1", "10.0.0.1", 4, 4096));
    // master-2 recovered worker-1 from its persisted state: a duplicate registration.
    s.down(&w2, msg::registered_worker(true));
    s.up(&w2, msg::heartbeat("worker-1"));
    clean(s.events());

    // The same master that lost the worker must register it anew.
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    s.close(&w);
    let w2 = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
    s.up(&w2, msg::register_worker("worker-1", "10.0.0.1", 4, 4096));
    s.down(&w2, msg::registered_worker(true));
    let rules: Vec<Rule> = run(Config::default(), s.events())
        .iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, [Rule::WorkerDuplicateId]);
}
