//! The validator accepts what real Spark does (issue 15): ExecutorAdded seen before the matching
//! LaunchExecutor (they leave the master on different connections), a worker repeating the final
//! state of an executor that already finished, executors' WorkerWatcher connections to their
//! worker, frames outside the catalogue, and (issue 24) Spark's own task payloads on connections
//! marked so, with no flag; and it still refuses what stays wrong.

use sparkwire::messages::{DeployMessage, ExecutorState, TaskState};
use sparkwire::validate::scenario::{msg, Scenario};
use sparkwire::validate::{
    Config, Endpoint, Event, EventBody, OutsideFrame, OutsideStatus, Rule, TaskPayloads, Validator,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

fn verdicts(events: &[Event], config: Config) -> Vec<Rule> {
    let mut v = Validator::new(config);
    let mut out: Vec<Rule> = events
        .iter()
        .flat_map(|e| v.observe(e))
        .map(|v| v.rule)
        .collect();
    out.extend(v.finish().iter().map(|v| v.rule));
    out
}

/// A worker and an application; the master's ExecutorAdded is seen `gap` ms before its
/// LaunchExecutor, with `cores` in the add.
fn added_before_launch(gap: u64, cores: i32) -> Vec<Event> {
    let mut s = Scenario::new();
    let worker = s.worker("worker-1", "10.0.0.1", 4, 4096);
    let app = s.app("app-1");
    s.down(&app, msg::executor_added(0, "worker-1", cores, 1024));
    s.advance(gap);
    s.down(&worker, msg::launch_executor("app-1", 0, 2, 1024));
    let ask = s.ask_up(
        &worker,
        msg::executor_state_changed("app-1", 0, ExecutorState::Running),
    );
    s.reply_down(&worker, ask, Reply::<DeployMessage>::Bool(true));
    s.down(&app, msg::executor_updated(0, ExecutorState::Running, None));
    s.into_events()
}

#[test]
fn executor_added_2_ms_before_its_launch_is_accepted() {
    assert_eq!(
        verdicts(&added_before_launch(2, 2), Config::default()),
        vec![]
    );
}

#[test]
fn executor_added_before_its_launch_is_refused_in_strict_order_or_beyond_the_window() {
    let strict = Config {
        strict_order: true,
        ..Config::default()
    };
    assert_eq!(
        verdicts(&added_before_launch(2, 2), strict),
        vec![Rule::ExecutorAddedMatches]
    );
    assert_eq!(
        verdicts(&added_before_launch(5_000, 2), Config::default()),
        vec![Rule::ExecutorAddedMatches]
    );
}

#[test]
fn an_early_executor_added_must_still_match_its_launch() {
    assert_eq!(
        verdicts(&added_before_launch(2, 3), Config::default()),
        vec![Rule::ExecutorAddedMatches]
    );
}

/// An executor launched, running and exited; then its worker reports `state` for it again.
fn repeated_state(state: ExecutorState, finish_app: bool) -> Vec<Event> {
    let mut s = Scenario::new();
    let worker = s.worker("worker-1", "10.0.0.1", 4, 4096);
    let app = s.app("app-1");
    s.launch_executor(&app, &worker, 1, 1, 512);
    let ask = s.ask_up(
        &worker,
        msg::executor_state_changed("app-1", 1, ExecutorState::Exited),
    );
    s.reply_down(&worker, ask, Reply::<DeployMessage>::Bool(true));
    s.down(&app, msg::executor_updated(1, ExecutorState::Exited, None));
    if finish_app {
        s.up(&app, msg::unregister_application("app-1"));
        s.close(&app);
    }
    let ask = s.ask_up(&worker, msg::executor_state_changed("app-1", 1, state));
    s.reply_down(&worker, ask, Reply::<DeployMessage>::Bool(true));
    s.into_events()
}

#[test]
fn a_worker_may_repeat_the_final_state_of_a_finished_executor() {
    assert_eq!(
        verdicts(
            &repeated_state(ExecutorState::Exited, true),
            Config::default()
        ),
        vec![]
    );
    assert_eq!(
        verdicts(
            &repeated_state(ExecutorState::Exited, false),
            Config::default()
        ),
        vec![]
    );
}

#[test]
fn a_finished_executor_still_cannot_come_back_running() {
    assert_eq!(
        verdicts(
            &repeated_state(ExecutorState::Running, false),
            Config::default()
        ),
        vec![Rule::ExecutorTransition]
    );
    assert_eq!(
        verdicts(
            &repeated_state(ExecutorState::Running, true),
            Config::default()
        ),
        vec![Rule::ExecutorStateFromHost]
    );
}

fn outside(time: u64, conn: u64, from: &Endpoint, to: &Endpoint) -> Event {
    Event {
        time,
        conn,
        body: EventBody::Outside {
            from: from.clone(),
            to: to.clone(),
            frame: OutsideFrame {
                transport: "RpcRequest".into(),
                id: Some(7),
                endpoint: Some("endpoint-verifier".into()),
                class: Some("org.apache.spark.rpc.netty.RpcEndpointVerifier$CheckExistence".into()),
                status: OutsideStatus::Outside,
                detail: None,
                bytes: 191,
            },
        },
    }
}

#[test]
fn a_worker_watcher_connection_with_frames_outside_the_catalogue_is_legal() {
    let mut s = Scenario::new();
    let exec = Endpoint::new(Role::Executor, "127.0.0.1:47030");
    let worker = Endpoint::new(Role::Worker, "worker-1");
    let link = s.open(exec.clone(), worker.clone());
    s.push(outside(s.now(), link.conn, &exec, &worker));
    s.push(outside(s.now(), link.conn, &worker, &exec));
    s.close(&link);
    assert_eq!(verdicts(s.events(), Config::default()), vec![]);
}

#[test]
fn frames_outside_the_catalogue_still_need_an_open_connection_and_its_ends() {
    let exec = Endpoint::new(Role::Executor, "e");
    let worker = Endpoint::new(Role::Worker, "w");
    let stranger = Endpoint::new(Role::Worker, "x");
    let mut s = Scenario::new();
    let link = s.open(exec.clone(), worker.clone());
    s.push(outside(s.now(), link.conn, &exec, &stranger));
    s.push(outside(s.now(), 99, &exec, &worker));
    assert_eq!(
        verdicts(s.events(), Config::default()),
        vec![Rule::ConnEndpoints, Rule::ConnOpen]
    );
}

#[test]
fn an_outside_event_reads_back_from_its_trace_line() {
    let e = outside(
        5,
        3,
        &Endpoint::new(Role::Executor, "e"),
        &Endpoint::new(Role::Worker, "w"),
    );
    let text = sparkwire::validate::trace::to_text(std::slice::from_ref(&e)).expect("writes");
    assert!(text.contains("\"event\":\"outside\"") && text.contains("\"status\":\"outside\""));
    let back = sparkwire::validate::trace::read_events(&text).expect("reads");
    assert_eq!(back, vec![e]);
    let bad = text.replace("\"status\":\"outside\"", "\"status\":\"guessed\"");
    assert!(sparkwire::validate::trace::read_events(&bad).is_err());
}

/// An executor of 2 cores running two tasks at once as a real Spark driver launches them
/// (LaunchTask data in Spark's own TaskDescription encoding), its connection opened with `tasks`.
fn spark_tasks(tasks: TaskPayloads) -> Vec<Event> {
    let mut s = Scenario::new();
    let driver = Endpoint::new(Role::Driver, "10.0.0.1:7078");
    let e = s.executor(&driver, "0", 2);
    s.set_tasks(&e, tasks);
    for task in [0, 1] {
        s.down(&e, msg::spark_launch_task(task, "0"));
    }
    for state in [TaskState::Running, TaskState::Finished] {
        for task in [0, 1] {
            s.up(&e, msg::status_update("0", task, state, 1));
        }
    }
    s.into_events()
}

#[test]
fn spark_task_payloads_on_a_connection_marked_spark_need_no_flag() {
    assert_eq!(
        verdicts(&spark_tasks(TaskPayloads::Spark), Config::sparkwire()),
        vec![]
    );
}

#[test]
fn spark_task_payloads_on_an_unmarked_connection_are_still_undecodable() {
    // The default marker is sparkwire's: the configured decoder reads each LaunchTask, fails,
    // and the task it did not record is then unknown to each StatusUpdate.
    assert_eq!(
        verdicts(&spark_tasks(TaskPayloads::default()), Config::sparkwire()),
        [vec![Rule::TaskDecodable; 2], vec![Rule::TaskKnown; 4]].concat()
    );
    // Without a decoder configured (--opaque-tasks) they were, and are, accepted.
    assert_eq!(
        verdicts(&spark_tasks(TaskPayloads::Sparkwire), Config::default()),
        vec![]
    );
}

#[test]
fn the_marker_is_per_connection() {
    // Two executors of one driver: the one whose connection is marked is counted, the other is
    // still read with the configured decoder.
    let mut s = Scenario::new();
    let driver = Endpoint::new(Role::Driver, "10.0.0.1:7078");
    let spark = s.executor(&driver, "0", 2);
    s.set_tasks(&spark, TaskPayloads::Spark);
    let ours = s.executor(&driver, "1", 2);
    s.down(&spark, msg::spark_launch_task(0, "0"));
    s.down(&ours, msg::spark_launch_task(1, "1"));
    s.down(&ours, msg::launch_task(2, 1));
    s.up(&spark, msg::status_update("0", 0, TaskState::Finished, 1));
    s.up(&ours, msg::status_update("1", 2, TaskState::Finished, 1));
    assert_eq!(
        verdicts(&s.into_events(), Config::sparkwire()),
        vec![Rule::TaskDecodable]
    );
}

#[test]
fn a_spark_marked_connection_counts_tasks_with_the_cpus_status_updates_report() {
    // Cores are still accounted: once a StatusUpdate says tasks take 2 cpus, a second task on
    // the 2-core executor while the first runs exceeds its cores.
    let mut s = Scenario::new();
    let driver = Endpoint::new(Role::Driver, "10.0.0.1:7078");
    let e = s.executor(&driver, "0", 2);
    s.set_tasks(&e, TaskPayloads::Spark);
    s.down(&e, msg::spark_launch_task(0, "0"));
    s.up(&e, msg::status_update("0", 0, TaskState::Running, 2));
    s.down(&e, msg::spark_launch_task(1, "0"));
    // The trace then ends with both tasks running on a live executor (rule N2).
    assert_eq!(
        verdicts(s.events(), Config::sparkwire()),
        vec![Rule::TaskSlots, Rule::EndTaskEnded]
    );
    // And a StatusUpdate with no task running is still refused.
    let mut s = Scenario::new();
    let e = s.executor(&driver, "0", 2);
    s.set_tasks(&e, TaskPayloads::Spark);
    s.up(&e, msg::status_update("0", 0, TaskState::Running, 1));
    assert_eq!(
        verdicts(s.events(), Config::sparkwire()),
        vec![Rule::TaskKnown]
    );
}
