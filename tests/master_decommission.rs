//! Decommissioning, on the in-memory harness: DecommissionWorkersOnHosts answers how many
//! workers it decommissions and tells each (DecommissionWorker); their executors are
//! DECOMMISSIONED for their applications, the worker's own WorkerDecommissioning changes nothing
//! more, and no new executor goes there. With an admin secret, only an admin `ui` peer may ask.

#![cfg(feature = "testing")]

use std::time::Duration;

use sparkwire::messages::deploy::{DecommissionWorkersOnHosts, WorkerDecommissioning};
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, ExecutorState, WorkerState};
use sparkwire::node::master::Config;
use sparkwire::reference::master::harness::{app_desc, Sim};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

fn decommission(hosts: &[&str]) -> DecommissionWorkersOnHosts {
    DecommissionWorkersOnHosts::new(hosts.iter().map(|h| h.to_string()).collect())
}

fn count(log: &[DeployMessage], f: impl Fn(&DeployMessage) -> bool) -> usize {
    log.iter().filter(|m| f(m)).count()
}

#[test]
fn decommissioned_workers_get_no_new_executors() {
    let mut sim = Sim::new(Config {
        worker_timeout: Duration::from_secs(60),
        ..Config::default()
    });
    let w = sim.worker("worker-0", 55000, 2, 2048);
    sim.keep_alive(w, "worker-0");
    let (app, app_id) = sim.app(60000, app_desc("decom", Some(1), 256));
    let app_id = app_id.expect("registered");
    assert_eq!(sim.launches(w).len(), 2);

    let ui = sim.connect(Role::Ui, "ui");
    assert_eq!(
        sim.ask(ui, decommission(&["elsewhere"])),
        Some(Ok(Reply::Int(0)))
    );
    assert_eq!(
        sim.ask(ui, decommission(&["127.0.0.1"])),
        Some(Ok(Reply::Int(1)))
    );
    assert!(sim
        .received(w)
        .iter()
        .any(|m| matches!(m, DeployMessage::DecommissionWorker(_))));
    let decommissioned: Vec<_> = sim
        .received(app)
        .iter()
        .filter_map(|m| match m {
            DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Decommissioned => {
                Some(u.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(decommissioned.len(), 2);
    assert!(decommissioned.iter().all(|u| {
        u.worker_host.as_deref() == Some("127.0.0.1")
            && u.message.as_deref() == Some("worker decommissioned")
    }));
    let s = sim.state();
    assert_eq!(s.workers[0].state, WorkerState::Decommissioned);
    assert_eq!(s.active_apps[0].cores_granted, 0);

    // The worker confirms, and its executors end: the application wants executors again, but
    // the only worker is decommissioned, however long one waits.
    sim.send(
        w,
        WorkerDecommissioning::new(
            "worker-0".into(),
            EndpointRef::at(Addr::new("127.0.0.1", 55000), "Worker"),
        ),
    );
    for exec in 0..2 {
        sim.executor_state(w, &app_id, exec, ExecutorState::Killed, None);
    }
    sim.advance(Duration::from_secs(600));
    assert_eq!(
        count(sim.received(app), |m| matches!(
            m,
            DeployMessage::ExecutorAdded(_)
        )),
        2
    );
    let s = sim.state();
    assert_eq!(s.workers[0].state, WorkerState::Decommissioned);
    assert_eq!(s.workers[0].cores_used, 0, "the ended executors freed it");
    assert!(!s.active_apps.is_empty(), "the application is not removed");
}

#[test]
fn with_an_admin_secret_only_an_admin_ui_may_decommission() {
    let config = Config {
        admins_only: true,
        ..Config::default()
    };
    let mut sim = Sim::new(config);
    sim.worker("worker-0", 55000, 2, 2048);
    let plain = sim.connect(Role::Ui, "ui");
    match sim.ask(plain, decommission(&["127.0.0.1"])) {
        Some(Err(e)) => {
            assert_eq!(e.class_name, "java.lang.SecurityException");
            assert!(e.message.contains("admin secret"), "{}", e.message);
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(sim.state().workers[0].state, WorkerState::Alive);
    let admin = sim.connect_admin("admin-ui");
    assert_eq!(
        sim.ask(admin, decommission(&["127.0.0.1"])),
        Some(Ok(Reply::Int(1)))
    );
    assert_eq!(sim.state().workers[0].state, WorkerState::Decommissioned);
}
