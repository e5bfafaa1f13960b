//! A message's kind can differ by version: Spark 3.0's workers sent ExecutorStateChanged one-way,
//! Spark 4.0's ask. Each version's validator accepts its own form and flags the other (M3).

use sparkwire::messages::{ExecutorState, Version};
use sparkwire::validate::scenario::{msg, Scenario};
use sparkwire::validate::{Rule, Validator};

fn violations(s: &Scenario) -> Vec<Rule> {
    let mut v = Validator::default();
    s.events()
        .iter()
        .flat_map(|e| v.observe(e))
        .map(|x| x.rule)
        .collect()
}

fn with_worker_and_executor(version: Version) -> (Scenario, sparkwire::validate::scenario::Link) {
    let mut s = Scenario::with_version(version);
    let w = s.worker("worker-1", "10.0.0.1", 2, 2048);
    let app = s.app("app-1");
    s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
    s.down(&app, msg::executor_added(0, "worker-1", 1, 512));
    (s, w)
}

#[test]
fn executor_state_changed_is_a_send_in_version_1_and_an_ask_in_version_2() {
    let changed = || msg::executor_state_changed("app-1", 0, ExecutorState::Running);

    let (mut s, w) = with_worker_and_executor(Version::V1);
    s.up(&w, changed());
    assert_eq!(violations(&s), vec![], "a v1 send is legal");

    let (mut s, w) = with_worker_and_executor(Version::V1);
    s.ask_up(&w, changed());
    assert!(
        violations(&s).contains(&Rule::RouteKind),
        "a v1 ask is flagged"
    );

    let (mut s, w) = with_worker_and_executor(Version::V2);
    s.up(&w, changed());
    assert!(
        violations(&s).contains(&Rule::RouteKind),
        "a v2 send is flagged"
    );
}
