//! Authorization (SPEC §14): messages the protocol does not route from a peer's role are
//! refused (an ask fails, a one-way message closes that connection and nothing more is taken
//! from it), ids are bound to the connection that registered them, and secrets are redacted in
//! the state answer. Every refusal leaves the other peers served. The master core in the
//! in-memory cluster (`node::sim::Cluster`), the peers that misbehave as probes.

use sparkwire::messages::deploy::{
    ExecutorStateChanged, Heartbeat, RegisterApplication, RequestWorkerState, UnregisterApplication,
};
use sparkwire::messages::{
    Addr, DeployMessage, EndpointRef, ErrorDescription, ExecutorState, WorkerState,
};
use sparkwire::node::master::Config;
use sparkwire::node::sim::{app_description as app_desc, Cluster, NodeId};
use sparkwire::node::ConnId;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

/// A master, and the cluster it is in.
fn cluster() -> (Cluster, NodeId) {
    let mut c = Cluster::new();
    let m = c.add_master(Config::default(), Addr::new("127.0.0.1", 7077));
    (c, m)
}

/// A scripted worker at 127.0.0.1:`port`, registered.
fn worker(c: &mut Cluster, m: NodeId, id: &str, port: i32) -> (NodeId, ConnId) {
    c.add_worker_probe(m, id, Addr::new("127.0.0.1", port), 1, 1024)
}

/// The scripted worker `(w, conn)` reports executor `exec_id` of `app_id` in `state`.
fn executor_state(
    c: &mut Cluster,
    (w, conn): (NodeId, ConnId),
    app_id: &str,
    exec_id: i32,
    state: ExecutorState,
) -> Option<Result<Reply<DeployMessage>, ErrorDescription>> {
    c.ask(
        w,
        conn,
        ExecutorStateChanged::new(app_id.into(), exec_id, state),
    )
}

/// Whether the probe's connection closed.
fn closed(c: &Cluster, (p, conn): (NodeId, ConnId)) -> bool {
    c.probe(p).is_closed(conn)
}

#[test]
fn a_misdirected_one_way_message_closes_only_its_connection() {
    let (mut c, m) = cluster();
    let w = worker(&mut c, m, "worker-odd", 52000);
    let bystander = worker(&mut c, m, "worker-fine", 52001);
    c.send(
        w.0,
        w.1,
        RegisterApplication::new(app_desc("odd", None, 128), EndpointRef::client("odd")),
    );
    assert!(closed(&c, w), "a worker may not register an application");
    assert!(!closed(&c, bystander));
    let s = c.master(m).master_state();
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
    let (mut c, m) = cluster();
    let client = c.add_probe(Role::DriverClient, "client");
    let conn = c.connect(client, m).expect("connected");
    match c.ask(client, conn, RequestWorkerState::new()) {
        Some(Err(e)) => assert!(e.message.contains("RequestWorkerState"), "{}", e.message),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(!closed(&c, (client, conn)));
    assert!(c.ask_state(m).is_some(), "the master still serves");
}

#[test]
fn a_worker_cannot_speak_for_another_worker_or_its_executors() {
    let (mut c, m) = cluster();
    let a = worker(&mut c, m, "worker-a", 52010);
    let b = worker(&mut c, m, "worker-b", 52011);
    let mut desc = app_desc("owned", None, 256);
    desc.max_cores = Some(1);
    let (_, _, app_id) = c.app(m, Addr::new("127.0.0.1", 60000), desc);
    let app_id = app_id.expect("registered");
    let (on, other) = if c.count(m, a.0, "LaunchExecutor") == 0 {
        (b, a)
    } else {
        (a, b)
    };
    // The worker not running the executor reports it: refused, the executor is untouched.
    match executor_state(&mut c, other, &app_id, 0, ExecutorState::Failed) {
        Some(Err(e)) => assert!(e.message.contains("executor"), "{}", e.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(c.master(m).master_state().active_apps[0].cores_granted, 1);
    assert_eq!(
        executor_state(&mut c, on, &app_id, 0, ExecutorState::Running),
        Some(Ok(Reply::Bool(true)))
    );
    // A heartbeat naming another registered worker closes the sender's connection.
    c.send(
        other.0,
        other.1,
        Heartbeat::new(
            if other == a { "worker-b" } else { "worker-a" }.into(),
            EndpointRef::at(Addr::new("127.0.0.1", 52010), "Worker"),
        ),
    );
    assert!(closed(&c, other));
    assert!(!closed(&c, on));
}

#[test]
fn an_application_cannot_unregister_another() {
    let (mut c, m) = cluster();
    let (p1, c1, first_id) = c.app(
        m,
        Addr::new("127.0.0.1", 60000),
        app_desc("first", None, 256),
    );
    let (p2, c2, _) = c.app(
        m,
        Addr::new("127.0.0.1", 60001),
        app_desc("second", None, 256),
    );
    c.send(
        p2,
        c2,
        UnregisterApplication::new(first_id.clone().expect("registered")),
    );
    assert!(closed(&c, (p2, c2)));
    assert!(!closed(&c, (p1, c1)));
    let s = c.master(m).master_state();
    assert_eq!(
        s.active_apps.len(),
        1,
        "the second is gone with its connection"
    );
    assert_eq!(Some(s.active_apps[0].id.clone()), first_id);
    // Nothing more is taken from a refused connection.
    c.send(
        p2,
        c2,
        UnregisterApplication::new(first_id.expect("registered")),
    );
    assert_eq!(c.master(m).master_state().active_apps.len(), 1);
}

#[test]
fn secrets_in_an_application_command_are_redacted_in_the_state_answer() {
    let (mut c, m) = cluster();
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
    c.app(m, Addr::new("127.0.0.1", 60000), desc);
    let s = c.ask_state(m).expect("the state answer");
    let command = &s.active_apps[0].desc.command;
    assert_ne!(command.environment["SPARK_AUTH_SECRET"], "hunter2");
    assert!(!command.java_opts.iter().any(|o| o.contains("hunter2")));
    assert!(command
        .java_opts
        .contains(&"-Dspark.app.name=visible".to_string()));
    assert!(!format!("{s:?}").contains("hunter2"));
}
