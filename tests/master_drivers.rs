//! Drivers in cluster deploy mode: submission, placement on a worker, status, kills (running,
//! waiting, all), their end states, the relaunch of a supervised driver whose worker is lost,
//! and who may kill a driver. Real master and worker cores in the in-memory cluster
//! (`node::sim::Cluster`), the driver clients as probes; workers running driver processes over
//! TCP are in `master_driver_processes.rs`.

use sparkwire::messages::deploy::{
    DriverStatusResponse, KillDriverResponse, RequestDriverStatus, RequestKillAllDrivers,
    RequestKillDriver, RequestSubmitDriver,
};
use sparkwire::messages::{Addr, DeployMessage, DriverDescription, DriverState};
use sparkwire::node::master::Config;
use sparkwire::node::sim::{
    driver_description as driver_desc, Cluster, MasterNode, NodeId, WorkerNode,
};
use sparkwire::node::worker::RunKey;
use sparkwire::node::ConnId;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

/// A driver client's probe and its connection.
type Client = (NodeId, ConnId);

fn client(c: &mut Cluster, m: NodeId, id: &str) -> Client {
    let p = c.add_probe(Role::DriverClient, id);
    (p, c.connect(p, m).expect("connected"))
}

fn submit(c: &mut Cluster, (p, conn): Client, d: DriverDescription) -> String {
    match c.ask(p, conn, RequestSubmitDriver::new(d)) {
        Some(Ok(Reply::Message(DeployMessage::SubmitDriverResponse(r)))) => {
            assert!(r.success, "{}", r.message);
            let id = r.driver_id.expect("an id");
            assert_eq!(r.message, format!("Driver successfully submitted as {id}"));
            c.settle();
            id
        }
        other => panic!("expected SubmitDriverResponse, got {other:?}"),
    }
}

fn status(c: &mut Cluster, (p, conn): Client, id: &str) -> DriverStatusResponse {
    match c.ask(p, conn, RequestDriverStatus::new(id.into())) {
        Some(Ok(Reply::Message(DeployMessage::DriverStatusResponse(r)))) => r,
        other => panic!("expected DriverStatusResponse, got {other:?}"),
    }
}

fn kill(c: &mut Cluster, (p, conn): Client, id: &str) -> Result<KillDriverResponse, String> {
    let answer = c.ask(p, conn, RequestKillDriver::new(id.into()));
    c.settle();
    match answer {
        Some(Ok(Reply::Message(DeployMessage::KillDriverResponse(r)))) => Ok(r),
        Some(Err(e)) => Err(e.message),
        other => panic!("expected KillDriverResponse, got {other:?}"),
    }
}

/// The drivers worker `w` runs.
fn running(c: &Cluster, w: NodeId) -> Vec<String> {
    c.node::<WorkerNode>(w)
        .running()
        .keys()
        .filter_map(|k| match k {
            RunKey::Driver(id) => Some(id.clone()),
            RunKey::Executor(..) => None,
        })
        .collect()
}

/// Driver `id` on worker `w` exits with `code`.
fn ends(c: &mut Cluster, w: NodeId, id: &str, code: i32) {
    c.node_mut::<WorkerNode>(w)
        .end(&RunKey::Driver(id.into()), code);
    c.settle();
}

fn cluster() -> (Cluster, NodeId) {
    let mut c = Cluster::new();
    let m = c.add_master(Config::default(), Addr::new("127.0.0.1", 7077));
    (c, m)
}

/// Worker `id` at 127.0.0.1:`port` with `cores` cores and 2 GiB, registered.
fn worker(c: &mut Cluster, m: NodeId, id: &str, port: i32, cores: i32) -> NodeId {
    let w = c.add_worker(id, Addr::new("127.0.0.1", port), cores, 2048, &[m]);
    c.settle();
    w
}

/// Worker `w`'s process dies.
fn lose(c: &mut Cluster, w: NodeId) {
    c.kill(w);
    c.settle();
}

#[test]
fn drivers_are_submitted_placed_killed_and_end_in_their_states() {
    let (mut c, m) = cluster();
    let w = worker(&mut c, m, "worker-0", 54000, 2);
    let cl = client(&mut c, m, "client");

    let long = submit(&mut c, cl, driver_desc(1, 256, false));
    assert_eq!(running(&c, w), vec![long.clone()]);
    let s = status(&mut c, cl, &long);
    assert!(s.found);
    assert_eq!(s.state, Some(DriverState::Running));
    assert_eq!(s.worker_id.as_deref(), Some("worker-0"));
    assert_eq!(s.worker_host_port.as_deref(), Some("127.0.0.1:54000"));
    assert_eq!(c.master(m).master_state().workers[0].cores_used, 1);
    let k = kill(&mut c, cl, &long).expect("answered");
    assert!(k.success);
    assert_eq!(k.message, format!("Kill request for {long} submitted"));
    // The worker killed it and said so.
    assert_eq!(c.count(m, w, "KillDriver"), 1);
    assert!(running(&c, w).is_empty());
    assert_eq!(status(&mut c, cl, &long).state, Some(DriverState::Killed));

    let ok = submit(&mut c, cl, driver_desc(1, 256, false));
    ends(&mut c, w, &ok, 0);
    let bad = submit(&mut c, cl, driver_desc(1, 256, false));
    ends(&mut c, w, &bad, 1);
    assert_eq!(status(&mut c, cl, &ok).state, Some(DriverState::Finished));
    assert_eq!(status(&mut c, cl, &bad).state, Some(DriverState::Failed));

    // Too big for any worker: it waits, and a kill ends it at once.
    let waiting = submit(&mut c, cl, driver_desc(16, 256, false));
    assert_eq!(
        status(&mut c, cl, &waiting).state,
        Some(DriverState::Submitted)
    );
    assert!(kill(&mut c, cl, &waiting).expect("answered").success);
    assert_eq!(
        status(&mut c, cl, &waiting).state,
        Some(DriverState::Killed)
    );

    let none = kill(&mut c, cl, "driver-none").expect("answered");
    assert!(!none.success);
    assert_eq!(
        none.message,
        "Driver driver-none has already finished or does not exist"
    );
    let unknown = status(&mut c, cl, "driver-none");
    assert!(!unknown.found && unknown.state.is_none());

    submit(&mut c, cl, driver_desc(1, 256, false));
    match c.ask(cl.0, cl.1, RequestKillAllDrivers::new()) {
        Some(Ok(Reply::Message(DeployMessage::KillAllDriversResponse(r)))) => {
            assert!(r.success);
            assert_eq!(r.message, "Kill request for all drivers submitted");
        }
        other => panic!("expected KillAllDriversResponse, got {other:?}"),
    }
    c.settle();
    let s = c.master(m).master_state();
    assert!(s.active_drivers.is_empty());
    assert_eq!(s.completed_drivers.len(), 5);
    assert_eq!(s.workers[0].cores_used, 0);
    assert!(
        c.node::<MasterNode>(m).store().drivers.is_empty(),
        "ended drivers are unpersisted"
    );
}

#[test]
fn a_supervised_driver_is_relaunched_under_a_new_id_when_its_worker_is_lost() {
    let (mut c, m) = cluster();
    let a = worker(&mut c, m, "worker-a", 54001, 1);
    let cl = client(&mut c, m, "client");
    let supervised = submit(&mut c, cl, driver_desc(1, 256, true));
    let b = worker(&mut c, m, "worker-b", 54002, 1);
    let plain = submit(&mut c, cl, driver_desc(1, 256, false));
    assert_eq!(running(&c, b), vec![plain.clone()], "a is full");
    lose(&mut c, b);
    assert_eq!(
        status(&mut c, cl, &plain).state,
        Some(DriverState::Error),
        "an unsupervised driver of a lost worker ends in ERROR"
    );
    assert_eq!(running(&c, a), vec![supervised.clone()]);
    let fresh = worker(&mut c, m, "worker-c", 54003, 1);
    lose(&mut c, a);
    assert_eq!(
        status(&mut c, cl, &supervised).state,
        Some(DriverState::Relaunching)
    );
    let relaunched = running(&c, fresh);
    assert_eq!(relaunched.len(), 1);
    assert_ne!(relaunched[0], supervised);
    assert_eq!(
        status(&mut c, cl, &relaunched[0]).state,
        Some(DriverState::Running)
    );
    assert_eq!(
        c.node::<MasterNode>(m).store().drivers.len(),
        1,
        "the new id is persisted"
    );
}

/// SPEC §14.2 Z4: once the connection that submitted a driver has closed (the submitting
/// `spark-submit` returned), the driver is bound to none and a new client may kill it, as
/// `spark-class org.apache.spark.deploy.Client kill` does from a new process; while the
/// submitter is connected, another client may not.
#[test]
fn a_driver_whose_submitter_left_is_killed_by_a_new_client() {
    let (mut c, m) = cluster();
    worker(&mut c, m, "worker-0", 54000, 2);
    let owner = client(&mut c, m, "owner");
    let id = submit(&mut c, owner, driver_desc(1, 256, false));
    let early = client(&mut c, m, "early");
    kill(&mut c, early, &id).expect_err("refused while the submitter is connected");
    for link in c.links_between(owner.0, m) {
        c.close(link);
    }
    c.settle();
    let later = client(&mut c, m, "later");
    let killed = kill(&mut c, later, &id).expect("answered");
    assert!(killed.success, "{}", killed.message);
    assert_eq!(killed.message, format!("Kill request for {id} submitted"));
    // The worker kills it; it ends KILLED.
    let s = status(&mut c, later, &id);
    assert_eq!(s.state, Some(DriverState::Killed), "{s:?}");
}

#[test]
fn only_the_client_that_submitted_a_driver_may_kill_it_and_a_standby_refuses_submissions() {
    let (mut c, m) = cluster();
    worker(&mut c, m, "worker-0", 54000, 2);
    let owner = client(&mut c, m, "owner");
    let other = client(&mut c, m, "other");
    let id = submit(&mut c, owner, driver_desc(1, 256, false));
    let refused = kill(&mut c, other, &id).expect_err("refused");
    assert!(refused.contains(&id), "{refused}");
    assert!(
        !c.probe(other.0).is_closed(other.1),
        "a refused ask leaves the connection open"
    );
    // Its status is anyone's to read.
    assert!(status(&mut c, other, &id).found);
    assert!(kill(&mut c, owner, &id).expect("answered").success);

    let standby = c.add_standby_master(Config::default(), Addr::new("127.0.0.1", 7078));
    let cl = client(&mut c, standby, "client");
    match c.ask(
        cl.0,
        cl.1,
        RequestSubmitDriver::new(driver_desc(1, 256, false)),
    ) {
        Some(Ok(Reply::Message(DeployMessage::SubmitDriverResponse(r)))) => {
            assert!(!r.success);
            assert_eq!(
                r.message,
                "Current state is not alive: STANDBY. Can only accept driver submissions in ALIVE state."
            );
        }
        other => panic!("expected SubmitDriverResponse, got {other:?}"),
    }
}
