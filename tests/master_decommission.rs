//! Decommissioning: DecommissionWorkersOnHosts answers how many workers it decommissions and
//! tells each (DecommissionWorker), which, as Spark's worker, sends nothing back; their executors
//! are DECOMMISSIONED for their applications, and no new executor goes there. With an admin
//! secret, only an admin `ui` peer may ask. Real master and worker cores in the in-memory
//! cluster (`node::sim::Cluster`), UIs and the application's client as probes.

use std::time::Duration;

use sparkwire::messages::deploy::DecommissionWorkersOnHosts;
use sparkwire::messages::{Addr, DeployMessage, ExecutorState, WorkerState};
use sparkwire::node::master::Config;
use sparkwire::node::sim::{app_description, Cluster, NodeId, Probe, WorkerNode};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

fn decommission(hosts: &[&str]) -> DecommissionWorkersOnHosts {
    DecommissionWorkersOnHosts::new(hosts.iter().map(|h| h.to_string()).collect())
}

/// A master with `config` and one worker of two cores at 127.0.0.1, registered.
fn cluster(config: Config) -> (Cluster, NodeId, NodeId) {
    let mut c = Cluster::new();
    let m = c.add_master(config, Addr::new("127.0.0.1", 7077));
    let w = c.add_worker("worker-0", Addr::new("127.0.0.1", 55000), 2, 2048, &[m]);
    c.settle();
    (c, m, w)
}

#[test]
fn decommissioned_workers_get_no_new_executors() {
    let (mut c, m, w) = cluster(Config::default());
    let (app, _, _) = c.app(
        m,
        Addr::new("127.0.0.1", 60000),
        app_description("decom", Some(1), 256),
    );
    c.settle();
    assert_eq!(c.node::<WorkerNode>(w).running().len(), 2);

    let ui = c.add_probe(Role::Ui, "ui");
    let conn = c.connect(ui, m).expect("connected");
    assert_eq!(
        c.ask(ui, conn, decommission(&["elsewhere"])),
        Some(Ok(Reply::Int(0)))
    );
    assert_eq!(
        c.ask(ui, conn, decommission(&["127.0.0.1"])),
        Some(Ok(Reply::Int(1)))
    );
    assert_eq!(c.count(m, w, "DecommissionWorker"), 1);
    // The real worker sends nothing back (SPEC §7.1): the master already counts it decommissioned.
    assert_eq!(c.count(w, m, "WorkerDecommissioning"), 0);
    let decommissioned: Vec<_> = c
        .probe(app)
        .received()
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
    let s = c.master(m).master_state();
    assert_eq!(s.workers[0].state, WorkerState::Decommissioned);
    assert_eq!(s.active_apps[0].cores_granted, 0);

    // Its executors end: the application wants executors again, but the only worker is
    // decommissioned, however long one waits.
    let keys: Vec<_> = c.node::<WorkerNode>(w).running().keys().cloned().collect();
    for key in &keys {
        c.node_mut::<WorkerNode>(w).end(key, 0);
    }
    c.run_for(Duration::from_secs(600));
    let added = c
        .probe(app)
        .received()
        .filter(|m| matches!(m, DeployMessage::ExecutorAdded(_)))
        .count();
    assert_eq!(added, 2);
    assert_eq!(c.count(m, w, "LaunchExecutor"), 2);
    let s = c.master(m).master_state();
    assert_eq!(s.workers[0].state, WorkerState::Decommissioned);
    assert_eq!(s.workers[0].cores_used, 0, "the ended executors freed it");
    assert!(!s.active_apps.is_empty(), "the application is not removed");
}

#[test]
fn with_an_admin_secret_only_an_admin_ui_may_decommission() {
    let (mut c, m, _) = cluster(Config {
        admins_only: true,
        ..Config::default()
    });
    let plain = c.add_probe(Role::Ui, "ui");
    let conn = c.connect(plain, m).expect("connected");
    match c.ask(plain, conn, decommission(&["127.0.0.1"])) {
        Some(Err(e)) => {
            assert_eq!(e.class_name, "java.lang.SecurityException");
            assert!(e.message.contains("admin secret"), "{}", e.message);
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(
        c.master(m).master_state().workers[0].state,
        WorkerState::Alive
    );
    let admin = c.add(Box::new(Probe::new(Role::Ui, "admin-ui").admin()));
    let conn = c.connect(admin, m).expect("connected");
    assert_eq!(
        c.ask(admin, conn, decommission(&["127.0.0.1"])),
        Some(Ok(Reply::Int(1)))
    );
    assert_eq!(
        c.master(m).master_state().workers[0].state,
        WorkerState::Decommissioned
    );
}
