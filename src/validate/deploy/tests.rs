//! The master's view of executors across a worker's loss (rules E2, E3, E5).

use crate::messages::{DeployMessage, ExecutorState};
use crate::validate::scenario::{msg, Link, Scenario};
use crate::validate::{Rule, Validator};
use crate::wire::Reply;

/// A worker (`w`) with executor app-1/0 RUNNING, the application on `app`, and the master's
/// worker timeout passed without a heartbeat: the master declares the executor LOST with its
/// worker.
fn lost_with_its_worker(s: &mut Scenario) -> (Link, Link) {
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    let app = s.app("app-1");
    s.launch_executor(&app, &w, 0, 2, 1024);
    s.advance(60_000);
    s.down(
        &app,
        msg::executor_updated(0, ExecutorState::Lost, Some("10.0.0.1")),
    );
    (w, app)
}

/// ExecutorStateChanged of app-1/`exec` from the worker on `w`, answered true.
fn report(s: &mut Scenario, w: &Link, exec: i32, state: ExecutorState) {
    let a = s.ask_up(w, msg::executor_state_changed("app-1", exec, state));
    s.reply_down(w, a, Reply::<DeployMessage>::Bool(true));
}

fn verdicts(s: &Scenario) -> Vec<Rule> {
    let mut v = Validator::default();
    s.events()
        .iter()
        .flat_map(|e| v.observe(e))
        .map(|v| v.rule)
        .collect()
}

#[test]
fn a_worker_reporting_on_an_executor_its_master_declared_lost_with_it_is_not_judged() {
    // Seeds 167 and 319 of the simulator: the worker, paused past the worker timeout, runs
    // again and reports its executor RUNNING, then EXITED; the master (as Spark's) no longer
    // knows the executor and ignores both.
    let mut s = Scenario::new();
    let (w, _) = lost_with_its_worker(&mut s);
    report(&mut s, &w, 0, ExecutorState::Running);
    report(&mut s, &w, 0, ExecutorState::Exited);
    assert_eq!(verdicts(&s), Vec::<Rule>::new());
}

#[test]
fn the_master_forwarding_such_a_report_breaks_e5() {
    let mut s = Scenario::new();
    let (w, app) = lost_with_its_worker(&mut s);
    report(&mut s, &w, 0, ExecutorState::Exited);
    s.down(&app, msg::executor_updated(0, ExecutorState::Exited, None));
    assert_eq!(verdicts(&s), vec![Rule::ExecutorUpdatedMatches]);
}

#[test]
fn another_worker_reporting_on_the_lost_executor_is_still_judged() {
    let mut s = Scenario::new();
    let (_, _) = lost_with_its_worker(&mut s);
    let w2 = s.worker("worker-2", "10.0.0.2", 4, 4096);
    report(&mut s, &w2, 0, ExecutorState::Running);
    assert_eq!(verdicts(&s), vec![Rule::ExecutorTransition]);
}

#[test]
fn a_worker_still_alive_cannot_go_back_from_a_finished_state() {
    // The allowance is only for a worker its master lost: E3 still holds otherwise.
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    let app = s.app("app-1");
    s.launch_executor(&app, &w, 0, 2, 1024);
    report(&mut s, &w, 0, ExecutorState::Exited);
    report(&mut s, &w, 0, ExecutorState::Running);
    assert_eq!(verdicts(&s), vec![Rule::ExecutorTransition]);
}
