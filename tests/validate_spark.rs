//! The validator accepts what real Spark does (issue 15): ExecutorAdded seen before the matching
//! LaunchExecutor (they leave the master on different connections), a worker repeating the final
//! state of an executor that already finished, executors' WorkerWatcher connections to their
//! worker, and frames outside the catalogue; and it still refuses what stays wrong.

use sparkwire::messages::{DeployMessage, ExecutorState};
use sparkwire::validate::scenario::{msg, Scenario};
use sparkwire::validate::{
    Config, Endpoint, Event, EventBody, OutsideFrame, OutsideStatus, Rule, Validator,
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
