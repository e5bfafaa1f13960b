//! Authorization on the in-memory harness (SPEC §14): messages the protocol does not route from
//! a peer's role are refused (an ask fails, a one-way message closes that connection and nothing
//! more is taken from it), ids are bound to the connection that registered them, and secrets are
//! redacted in the state answer. Every refusal leaves the other peers served.

#![cfg(feature = "testing")]

use sparkwire::messages::deploy::{
    Heartbeat, RegisterApplication, RequestWorkerState, UnregisterApplication,
};
use sparkwire::messages::{Addr, EndpointRef, ExecutorState, WorkerState};
use sparkwire::node::master::Config;
use sparkwire::reference::master::harness::{app_desc, Sim};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

#[test]
fn a_misdirected_one_way_message_closes_only_its_connection() {
    let mut sim = Sim::new(Config::default());
    let w = sim.worker("worker-odd", 52000, 1, 512);
    let bystander = sim.worker("worker-fine", 52001, 1, 512);
    sim.send(
        w,
        RegisterApplication::new(app_desc("odd", None, 128), EndpointRef::client("odd")),
    );
    assert!(sim.is_closed(w), "a worker may not register an application");
    assert!(!sim.is_closed(bystander));
    let s = sim.state();
    assert!(s.active_apps.is_empty());
    // Its close is a disassociation: the worker is DEAD; the other is not.
    assert_eq!(
        s.workers
            .iter()
            .map(|w| (w.id.as_str(), w.state))
            .collect::<Vec<_>>(),
        vec![
            ("worker-fine", WorkerState::Alive),
            ("worker-odd", WorkerState::Dead)
        ]
    );
}

#[test]
fn an_ask_the_master_does_not_serve_fails_and_the_connection_stays() {
    let mut sim = Sim::new(Config::default());
    let c = sim.connect(Role::DriverClient, "client");
    match sim.ask(c, RequestWorkerState::new()) {
        Some(Err(e)) => assert!(e.message.contains("RequestWorkerState"), "{}", e.message),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(!sim.is_closed(c));
    assert!(sim.ask_state().is_some(), "the master still serves");
}

#[test]
fn a_worker_cannot_speak_for_another_worker_or_its_executors() {
    let mut sim = Sim::new(Config::default());
    let a = sim.worker("worker-a", 52010, 1, 1024);
    let b = sim.worker("worker-b", 52011, 1, 1024);
    let mut desc = app_desc("owned", None, 256);
    desc.max_cores = Some(1);
    let (_, app_id) = sim.app(60000, desc);
    let app_id = app_id.expect("registered");
    let (on, other) = if sim.launches(a).is_empty() {
        (b, a)
    } else {
        (a, b)
    };
    // The worker not running the executor reports it: refused, the executor is untouched.
    match sim.executor_state(other, &app_id, 0, ExecutorState::Failed, None) {
        Some(Err(e)) => assert!(e.message.contains("executor"), "{}", e.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(sim.state().active_apps[0].cores_granted, 1);
    assert_eq!(
        sim.executor_state(on, &app_id, 0, ExecutorState::Running, None),
        Some(Ok(Reply::Bool(true)))
    );
    // A heartbeat naming another registered worker closes the sender's connection.
    sim.send(
        other,
        Heartbeat::new(
            if other == a { "worker-b" } else { "worker-a" }.into(),
            EndpointRef::at(Addr::new("127.0.0.1", 52010), "Worker"),
        ),
    );
    assert!(sim.is_closed(other));
    assert!(!sim.is_closed(on));
}

#[test]
fn an_application_cannot_unregister_another() {
    let mut sim = Sim::new(Config::default());
    let (first, first_id) = sim.app(60000, app_desc("first", None, 256));
    let (second, _) = sim.app(60001, app_desc("second", None, 256));
    sim.send(
        second,
        UnregisterApplication::new(first_id.clone().expect("registered")),
    );
    assert!(sim.is_closed(second));
    assert!(!sim.is_closed(first));
    let s = sim.state();
    assert_eq!(
        s.active_apps.len(),
        1,
        "the second is gone with its connection"
    );
    assert_eq!(Some(s.active_apps[0].id.clone()), first_id);
    // Nothing more is taken from a refused connection.
    sim.send(
        second,
        UnregisterApplication::new(first_id.expect("registered")),
    );
    assert_eq!(sim.state().active_apps.len(), 1);
}

#[test]
fn secrets_in_an_application_command_are_redacted_in_the_state_answer() {
    let mut sim = Sim::new(Config::default());
    let mut desc = app_desc("secretive", None, 256);
    desc.command
        .environment
        .insert("SPARK_AUTH_SECRET".into(), "hunter2".into());
    desc.command
        .java_opts
        .push("-Dspark.password=hunter2".into());
    desc.command
        .java_opts
        .push("-Dspark.app.name=visible".into());
    sim.app(60000, desc);
    let s = sim.ask_state().expect("the state answer");
    let command = &s.active_apps[0].desc.command;
    assert_ne!(command.environment["SPARK_AUTH_SECRET"], "hunter2");
    assert!(!command.java_opts.iter().any(|o| o.contains("hunter2")));
    assert!(command
        .java_opts
        .contains(&"-Dspark.app.name=visible".to_string()));
    assert!(!format!("{s:?}").contains("hunter2"));
}
