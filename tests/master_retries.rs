//! Executor failures: an executor that ends abnormally is replaced until the application has
//! failed `maxExecutorRetries` times with none running, then the application is removed
//! (FAILED); Spark resets the count whenever an executor reports RUNNING, and a normal exit
//! (code 0) never counts. Real master and worker cores in the in-memory cluster
//! (`node::sim::Cluster`): the worker refuses a program it does not allow, and its processes
//! end when the test says; a worker refusing a program against the file system is in
//! `master_flow.rs`.

use std::time::Duration;

use sparkwire::messages::deploy::ApplicationRemoved;
use sparkwire::messages::{
    Addr, ApplicationDescription, ApplicationState, DeployMessage, ExecutorState,
};
use sparkwire::node::master::Config;
use sparkwire::node::sim::{app_description, Cluster, MasterNode, NodeId, WorkerNode};
use sparkwire::node::worker::RunKey;

fn updates(c: &Cluster, app: NodeId, state: ExecutorState) -> usize {
    c.probe(app)
        .received()
        .filter(|m| matches!(m, DeployMessage::ExecutorUpdated(u) if u.state == state))
        .count()
}

fn app_removed(c: &Cluster, app: NodeId) -> Vec<ApplicationRemoved> {
    c.probe(app).picked(|m| match m {
        DeployMessage::ApplicationRemoved(r) => Some(r.clone()),
        _ => None,
    })
}

/// A master with `config`, a worker of one core, and an application of `desc` registered.
fn cluster(
    config: Config,
    desc: ApplicationDescription,
) -> (Cluster, NodeId, NodeId, NodeId, String) {
    let mut c = Cluster::new();
    let m = c.add_master(config, Addr::new("127.0.0.1", 7077));
    let w = c.add_worker("worker-0", Addr::new("127.0.0.1", 52000), 1, 1024, &[m]);
    c.settle();
    let (app, _, app_id) = c.app(m, Addr::new("127.0.0.1", 60000), desc);
    (c, m, w, app, app_id.expect("registered"))
}

/// An application whose executors run a program no worker allows.
fn refused(name: &str) -> ApplicationDescription {
    let mut desc = app_description(name, None, 256);
    desc.command.main_class = "/bin/true".into();
    desc
}

/// The one executor running on `w` ends with `code`.
fn end_running(c: &mut Cluster, w: NodeId, code: i32) {
    let key: RunKey = c
        .node::<WorkerNode>(w)
        .running()
        .keys()
        .next()
        .cloned()
        .expect("running");
    c.node_mut::<WorkerNode>(w).end(&key, code);
    c.settle();
}

#[test]
fn an_application_whose_executors_cannot_start_is_removed_after_the_retry_limit() {
    let config = Config {
        max_executor_retries: 3,
        ..Config::default()
    };
    let (mut c, m, w, app, app_id) = cluster(config, refused("failing"));
    c.settle();
    assert_eq!(
        c.count(m, w, "LaunchExecutor"),
        3,
        "a replacement after each failure, no fourth"
    );
    assert_eq!(updates(&c, app, ExecutorState::Failed), 3);
    assert_eq!(
        app_removed(&c, app),
        vec![ApplicationRemoved::new("FAILED".into())]
    );
    assert_eq!(c.count(m, w, "ApplicationFinished"), 1);
    let s = c.master(m).master_state();
    assert!(s.active_apps.is_empty());
    assert_eq!(s.completed_apps[0].id, app_id);
    assert_eq!(s.completed_apps[0].state, ApplicationState::Failed);
    assert_eq!(s.workers[0].cores_used, 0, "the worker is freed");
    assert!(
        c.node::<MasterNode>(m).store().apps.is_empty(),
        "the application is unpersisted"
    );
    // Each refusal says why, from the worker.
    let why = c.probe(app).received().find_map(|m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Failed => u.message.clone(),
        _ => None,
    });
    assert!(why.is_some_and(|w| w.contains("allow-list")));
}

#[test]
fn executors_that_crash_after_running_are_replaced_without_limit_as_in_spark() {
    let config = Config {
        max_executor_retries: 2,
        ..Config::default()
    };
    let (mut c, m, w, app, _) = cluster(config, app_description("crashing", None, 256));
    c.settle();
    assert_eq!(
        c.node::<MasterNode>(m).store().apps.len(),
        1,
        "the application is persisted"
    );
    for _ in 0..6 {
        end_running(&mut c, w, 1);
    }
    assert_eq!(updates(&c, app, ExecutorState::Exited), 6);
    assert_eq!(updates(&c, app, ExecutorState::Running), 7);
    assert!(app_removed(&c, app).is_empty());
    assert_eq!(c.count(m, w, "LaunchExecutor"), 7, "each crash is replaced");
}

#[test]
fn normal_exits_do_not_count_and_a_negative_limit_never_removes() {
    let config = Config {
        max_executor_retries: 1,
        ..Config::default()
    };
    let (mut c, m, w, app, _) = cluster(config, app_description("clean", None, 256));
    c.settle();
    for _ in 0..3 {
        end_running(&mut c, w, 0);
    }
    assert!(app_removed(&c, app).is_empty());
    assert_eq!(c.count(m, w, "LaunchExecutor"), 4);

    let config = Config {
        max_executor_retries: -1,
        ..Config::default()
    };
    let (mut c, m, w, app, _) = cluster(config, refused("unlimited"));
    // Launch, refusal, relaunch: round after round, for a second of simulated time.
    c.run_for(Duration::from_secs(1));
    assert!(updates(&c, app, ExecutorState::Failed) > 20);
    assert!(app_removed(&c, app).is_empty());
    assert!(c.count(m, w, "LaunchExecutor") > 20);
}

#[test]
fn completed_applications_are_retained_up_to_the_limit_dropping_the_oldest_tenth() {
    let mut c = Cluster::new();
    let config = Config {
        retained_applications: 20,
        ..Config::default()
    };
    let m = c.add_master(config, Addr::new("127.0.0.1", 7077));
    let mut ids = Vec::new();
    for n in 0..21 {
        let (app, _, id) = c.app(
            m,
            Addr::new("127.0.0.1", 61000 + n),
            app_description("short", None, 256),
        );
        ids.push(id.expect("registered"));
        for link in c.links_between(app, m) {
            c.close(link);
        }
    }
    let s = c.master(m).master_state();
    let kept: Vec<String> = s.completed_apps.iter().map(|a| a.id.clone()).collect();
    // The 21st pushed out the oldest two (a tenth of 20), in order.
    assert_eq!(kept, ids[2..].to_vec());
    assert!(s
        .completed_apps
        .iter()
        .all(|a| a.state == ApplicationState::Finished));
}
