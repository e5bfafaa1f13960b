//! Feeding the validator from live connections, determinism, and bounded memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sparkwire::messages::{CoarseMessage, TaskState, Version};
use sparkwire::validate::scenario::{msg, Scenario};
use sparkwire::validate::sparkwire_task_decoder;
use sparkwire::validate::{Config, Endpoint, Rule, SharedValidator, Validator, Violation};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

#[test]
fn connection_view_accepts_legal_traffic_and_rejects_an_illegal_message_as_it_arrives() {
    let shared = SharedValidator::default();
    let clock = Arc::new(AtomicU64::new(0));
    let tick = Arc::clone(&clock);
    let driver = Endpoint::new(Role::Driver, "app-1");
    let executor = Endpoint::new(Role::Executor, "app-1/0");
    // The driver's side of a connection its executor dialled.
    let view = shared.connection(1, driver, executor, false, Version::V2, move || {
        tick.fetch_add(1, Ordering::Relaxed)
    });
    assert!(view.opened().is_empty());
    let register = Envelope::Ask {
        id: 1,
        message: msg::register_executor("0", 1),
    };
    assert!(view.inbound(&register).is_ok());
    let accept: Envelope<CoarseMessage> = Envelope::Reply {
        id: 1,
        reply: Reply::Bool(true),
    };
    assert!(view.outbound(&accept).is_ok());
    assert!(view
        .inbound(&Envelope::Send(msg::launched_executor("0")))
        .is_ok());
    assert!(view
        .outbound(&Envelope::Send(msg::launch_task(1, 1)))
        .is_ok());
    let refused = view.outbound(&Envelope::Send(msg::launch_task(2, 1)));
    let rules: Vec<Rule> = refused
        .err()
        .unwrap_or_default()
        .iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, [Rule::TaskSlots]);
    let update = msg::status_update("0", 1, TaskState::Finished, 1);
    assert!(view.inbound(&Envelope::Send(update)).is_ok());
    assert!(view.closed().is_empty());
    assert_eq!(
        clock.load(Ordering::Relaxed),
        8,
        "one clock reading per event"
    );
    assert_eq!(shared.with(|v| v.events()), 8);
    assert_eq!(shared.with(|v| v.open_connections()), 0);
}

fn illegal_events() -> Vec<sparkwire::validate::Event> {
    let mut s = Scenario::new();
    let w = s.worker("worker-1", "10.0.0.1", 2, 2048);
    let app = s.app("app-1");
    for e in 0..4 {
        s.launch_executor(&app, &w, e, 1, 512);
    }
    s.up(&w, msg::heartbeat("worker-9"));
    s.close(&w);
    s.down(&app, msg::worker_removed("worker-1", "10.0.0.7"));
    s.into_events()
}

#[test]
fn verdicts_depend_only_on_the_events() {
    let events = illegal_events();
    let run = || -> Vec<Violation> {
        let mut v = Validator::default();
        let mut out: Vec<Violation> = events.iter().flat_map(|e| v.observe(e)).collect();
        out.extend(v.finish());
        out
    };
    let first = run();
    assert!(first.len() >= 3, "{first:#?}");
    for _ in 0..5 {
        assert_eq!(run(), first);
    }
}

#[test]
fn finished_tasks_beyond_the_history_cap_are_forgotten() {
    let mut s = Scenario::new();
    let e = s.executor(&Endpoint::new(Role::Driver, "app-1"), "0", 1);
    for t in 0..10 {
        s.run_task(&e, "0", t, 1);
    }
    // A late update about the first task: remembered as finished, or forgotten as unknown.
    s.up(&e, msg::status_update("0", 0, TaskState::Running, 1));
    let rule_with_cap = |cap: usize| {
        let config = Config {
            history_cap: cap,
            ..Config::with_task_decoder(sparkwire_task_decoder)
        };
        let mut v = Validator::new(config);
        let found: Vec<Rule> = s
            .events()
            .iter()
            .flat_map(|ev| v.observe(ev))
            .map(|x| x.rule)
            .collect();
        found
    };
    assert_eq!(rule_with_cap(100), [Rule::TaskTransition]);
    assert_eq!(rule_with_cap(3), [Rule::TaskKnown]);
}
