//! The driver's two cores (the scheduler backend and the application client) and executor cores
//! in `node::sim::Cluster`, with real masters and workers where a scenario has them: no socket,
//! no thread, no real time. Tasks run through the built-in runner, each ending `TASK_TIME` of
//! simulated time after it started; every link delivers after 1 ms. What needs the runtime (the
//! strict validator on the driver's connections, busy polling, processes, a socket that stops
//! being read) stays over TCP in `driver_executor.rs`, `driver_slow_executor.rs` and
//! `isolation_driver.rs`.

mod common;

use std::time::Duration;

use common::builders::{backend_config, builtin_tasks, TASK_TIME};
use sparkwire::messages::coarse::{
    LaunchedExecutor, RegisterExecutor, RetrieveDelegationTokens, StatusUpdate,
};
use sparkwire::messages::{Addr, EndpointRef, Payload, TaskState};
use sparkwire::node::driver::{BackendInput, ClientInput, SubmitRefused, ALL_MASTERS_UNRESPONSIVE};
use sparkwire::node::executor::{ExecutorExit, StartFailed};
use sparkwire::node::master;
use sparkwire::node::sim::{Cluster, DriverNode, MasterNode, NodeId, WorkerNode};
use sparkwire::node::Core;
use sparkwire::reference::task::{BigResultJob, BigTaskJob, FlakyJob, PiJob, SumSquaresJob};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

/// Most simulated time a scenario may take.
const PATIENCE: Duration = Duration::from_secs(600);

/// A driver without masters, its executors started by hand.
fn driver_alone(max_message_size_mib: u32) -> (Cluster, NodeId) {
    let mut cluster = Cluster::new();
    let driver = cluster.add_driver(backend_config(max_message_size_mib), &[], builtin_tasks());
    (cluster, driver)
}

/// Starts executor `id` with `cores` for `driver` and waits until the driver has it ready.
fn executor(cluster: &mut Cluster, driver: NodeId, id: &str, cores: u32) -> NodeId {
    let e = cluster.add_executor(id, cores, driver, None);
    cluster.settle();
    e
}

fn ready(cluster: &Cluster, driver: NodeId) -> usize {
    let now = cluster.now();
    cluster.backend(driver).status(now).ready_executors()
}

/// Frames named `name` the driver wrote.
fn sent(cluster: &Cluster, driver: NodeId, name: &str) -> usize {
    cluster
        .sent()
        .iter()
        .filter(|s| s.from == driver && s.name == name)
        .count()
}

/// Frames named `name` the driver received from executors.
fn received(cluster: &Cluster, driver: NodeId, name: &str) -> usize {
    let executors = cluster.executors();
    cluster
        .sent()
        .iter()
        .filter(|s| s.to == driver && executors.contains(&s.from) && s.name == name)
        .count()
}

/// Runs a Pi job of `partitions` tasks (1000 samples each, from `seed`) on `driver`, which must
/// succeed.
fn pi_succeeds(cluster: &mut Cluster, driver: NodeId, partitions: usize, seed: u64) {
    let pi = PiJob {
        partitions,
        samples: 1000,
        seed,
    };
    let outcome = cluster.run_job(driver, pi, PATIENCE).expect("ended");
    assert!(outcome.is_ok(), "{outcome:?}");
}

/// Stops both of the driver's cores, as its runtime does.
fn stop(cluster: &mut Cluster, driver: NodeId) {
    let now = cluster.now();
    let node = cluster.node_mut::<DriverNode>(driver);
    node.backend_mut().handle(now, BackendInput::Stop);
    if let Some(client) = node.client_mut() {
        client.handle(now, ClientInput::Stop);
    }
    cluster.settle();
}

#[test]
fn a_driver_and_two_executors_run_a_job_and_stop_on_one_simulated_clock() {
    let (mut cluster, d) = driver_alone(128);
    let e1 = executor(&mut cluster, d, "1", 2);
    let e2 = executor(&mut cluster, d, "2", 1);
    assert_eq!(ready(&cluster, d), 2);
    let job = SumSquaresJob {
        partitions: 9,
        n: 100_000,
    };
    let expected = format!("Sum of squares of 0..100000 is {}", job.expected());
    let started = cluster.now();
    let result = cluster.run_job(d, job, PATIENCE).expect("ended");
    let result = result.expect("the job succeeds");
    assert_eq!(result.output, expected);
    assert_eq!(result.tasks, 9);
    // Three cores, 9 tasks of 10 ms: three rounds (and a few 1 ms link crossings).
    let took = cluster.now() - started;
    assert!(took >= 3 * TASK_TIME && took < 4 * TASK_TIME, "{took:?}");
    // Three frames per task, as Spark: LaunchTask, StatusUpdate RUNNING and FINISHED.
    assert_eq!(sent(&cluster, d, "LaunchTask"), 9);
    assert_eq!(received(&cluster, d, "StatusUpdate"), 18);
    let status = cluster.backend(d).status(cluster.now());
    assert_eq!(
        status.executor_connections, 4,
        "a bootstrap and a main one each"
    );
    stop(&mut cluster, d);
    assert_eq!(sent(&cluster, d, "StopExecutor"), 2);
    for e in [e1, e2] {
        assert_eq!(cluster.executor(e).exit(), Some(&Ok(ExecutorExit::Stopped)));
    }
    assert!(!cluster.backend(d).has_connections());
    assert_eq!(cluster.backend(d).status(cluster.now()).executors_lost, 0);
}

#[test]
fn an_executor_lost_mid_job_has_its_tasks_run_on_the_other() {
    let (mut cluster, d) = driver_alone(128);
    let victim = executor(&mut cluster, d, "1", 1);
    executor(&mut cluster, d, "2", 1);
    let job = cluster
        .submit(
            d,
            PiJob {
                partitions: 6,
                samples: 1000,
                seed: 3,
            },
        )
        .expect("taken");
    assert_eq!(sent(&cluster, d, "LaunchTask"), 2, "one task on each");
    // The victim's main connection (its last) is reset.
    let main = *cluster.links_between(victim, d).last().expect("a link");
    cluster.close(main);
    cluster.settle();
    assert!(
        matches!(
            cluster.executor(victim).exit(),
            Some(Ok(ExecutorExit::DriverLost(_)))
        ),
        "{:?}",
        cluster.executor(victim).exit()
    );
    assert!(cluster.run_until(PATIENCE, |c| c.driver(d).outcome(job).is_some()));
    let outcome = cluster.driver(d).outcome(job).expect("ended");
    assert!(outcome.is_ok(), "{outcome:?}");
    let status = cluster.backend(d).status(cluster.now());
    assert_eq!(status.executors_lost, 1);
    assert_eq!(
        sent(&cluster, d, "LaunchTask"),
        7,
        "the lost task ran again"
    );
    assert_eq!(status.executors.len(), 1);
}

#[test]
fn a_task_too_large_fails_its_job_with_sparks_text_and_the_next_job_runs() {
    let (mut cluster, d) = driver_alone(1);
    executor(&mut cluster, d, "1", 1);
    executor(&mut cluster, d, "2", 1);
    let big = BigTaskJob {
        partitions: 2,
        size: 2 << 20,
    };
    let big = cluster.run_job(d, big, PATIENCE).expect("ended");
    let big = big.expect_err("too big");
    let prefix = "Job aborted due to stage failure: Serialized task ";
    let suffix = " bytes, which exceeds max allowed: spark.rpc.message.maxSize (843776 bytes). \
                  Consider increasing spark.rpc.message.maxSize or using broadcast variables \
                  for large values.";
    assert!(
        big.message.starts_with(prefix) && big.message.ends_with(suffix),
        "{}",
        big.message
    );
    assert_eq!(
        sent(&cluster, d, "LaunchTask"),
        0,
        "nothing too large was written"
    );
    let small = BigTaskJob {
        partitions: 4,
        size: 1000,
    };
    let small = cluster.run_job(d, small, PATIENCE).expect("ended");
    assert_eq!(small.expect("fits").output, "4 tasks read 4000 input bytes");
    assert_eq!(sent(&cluster, d, "LaunchTask"), 4);
    assert_eq!(ready(&cluster, d), 2, "no executor was lost for it");
}

#[test]
fn a_result_too_big_for_a_frame_fails_the_task_and_keeps_the_executor() {
    let (mut cluster, d) = driver_alone(1);
    executor(&mut cluster, d, "1", 1);
    let big = BigResultJob {
        partitions: 1,
        size: 2 << 20,
    };
    let error = cluster.run_job(d, big, PATIENCE).expect("ended");
    let error = error.expect_err("fails");
    assert!(
        error.message.contains("failed 4 times")
            && error.message.contains(
                "Result of task (TID 3) was 2097152 bytes, which exceeds max allowed: \
                 spark.rpc.message.maxSize (843776 bytes)"
            ),
        "{}",
        error.message
    );
    let small = BigResultJob {
        partitions: 2,
        size: 1000,
    };
    let ok = cluster.run_job(d, small, PATIENCE).expect("ended");
    assert_eq!(
        ok.expect("small results pass").output,
        "2 results, 2000 bytes in all"
    );
    assert_eq!(cluster.backend(d).status(cluster.now()).executors_lost, 0);
}

#[test]
fn a_flaky_task_is_retried_until_it_succeeds() {
    let (mut cluster, d) = driver_alone(128);
    executor(&mut cluster, d, "1", 2);
    let job = FlakyJob {
        partitions: 2,
        failures: 2,
    };
    let result = cluster.run_job(d, job, PATIENCE).expect("ended");
    assert_eq!(
        result.expect("succeeds").output,
        "2 tasks succeeded on attempts [2, 2]"
    );
    assert_eq!(sent(&cluster, d, "LaunchTask"), 6);
    assert_eq!(cluster.backend(d).status(cluster.now()).tasks_failed, 4);
}

#[test]
fn a_task_failing_four_times_fails_its_job_with_the_last_error() {
    let (mut cluster, d) = driver_alone(128);
    executor(&mut cluster, d, "1", 1);
    let job = FlakyJob {
        partitions: 1,
        failures: 100,
    };
    let error = cluster.run_job(d, job, PATIENCE).expect("ended");
    assert_eq!(
        error.expect_err("the job fails").message,
        "Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times, most recent \
         failure: Lost task 0.3 in stage 0.0 (TID 3) (host.sim executor 1): \
         java.lang.RuntimeException: flaky task fails attempt 3 of partition 0"
    );
    assert_eq!(sent(&cluster, d, "LaunchTask"), 4);
}

#[test]
fn cancelling_a_job_kills_its_running_tasks_and_frees_the_executors() {
    let (mut cluster, d) = driver_alone(128);
    executor(&mut cluster, d, "1", 1);
    executor(&mut cluster, d, "2", 1);
    let pi = PiJob {
        partitions: 3,
        samples: 1000,
        seed: 1,
    };
    let job = cluster.submit(d, pi).expect("taken");
    cluster.run_until(PATIENCE, |c| sent(c, d, "LaunchTask") == 2);
    let now = cluster.now();
    cluster
        .node_mut::<DriverNode>(d)
        .backend_mut()
        .handle(now, BackendInput::Cancel(job));
    cluster.settle();
    assert_eq!(
        cluster
            .driver(d)
            .outcome(job)
            .map(|o| o.as_ref().map_err(|e| e.message.as_str()).err()),
        Some(Some("Job 0 cancelled"))
    );
    assert_eq!(sent(&cluster, d, "KillTask"), 2);
    assert!(cluster.run_until(PATIENCE, |c| {
        c.backend(d)
            .status(c.now())
            .executors
            .iter()
            .all(|e| e.free_cores == e.cores)
    }));
    assert_eq!(cluster.backend(d).status(cluster.now()).tasks_failed, 2);
    pi_succeeds(&mut cluster, d, 2, 3);
}

#[test]
fn a_second_executor_with_a_registered_id_is_refused_with_sparks_text() {
    let (mut cluster, d) = driver_alone(128);
    executor(&mut cluster, d, "7", 1);
    let second = executor(&mut cluster, d, "7", 1);
    assert_eq!(
        cluster.executor(second).exit(),
        Some(&Err(StartFailed::Refused(
            "Duplicate executor ID: 7".into()
        )))
    );
    assert_eq!(ready(&cluster, d), 1);
    pi_succeeds(&mut cluster, d, 2, 1);
}

#[test]
fn an_executor_whose_worker_goes_away_exits_and_the_driver_loses_it() {
    let (mut cluster, d) = driver_alone(128);
    let w = cluster.add_worker("worker-1", Addr::new("10.0.0.2", 4000), 4, 4096, &[]);
    let e = cluster.add_executor("1", 1, d, Some(w));
    executor(&mut cluster, d, "2", 1);
    assert_eq!(
        ready(&cluster, d),
        2,
        "registered after its worker's watch was up"
    );
    let pi = PiJob {
        partitions: 4,
        samples: 1000,
        seed: 2,
    };
    let job = cluster.submit(d, pi).expect("taken");
    cluster.kill(w);
    cluster.settle();
    assert_eq!(
        cluster.executor(e).exit(),
        Some(&Ok(ExecutorExit::WorkerLost(
            "the worker closed the connection".into()
        )))
    );
    assert_eq!(
        cluster
            .executor(e)
            .exit()
            .map(|x| x.as_ref().map(|x| x.code())),
        Some(Ok(1))
    );
    assert!(cluster.run_until(PATIENCE, |c| c.driver(d).outcome(job).is_some()));
    let outcome = cluster.driver(d).outcome(job).expect("ended");
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(cluster.backend(d).status(cluster.now()).executors_lost, 1);
}

#[test]
fn updates_for_unknown_tasks_and_unsupported_asks_are_answered_not_fatal() {
    let (mut cluster, d) = driver_alone(128);
    // An executor without the executor's manners: the test writes its frames.
    let x = cluster.add_probe(Role::Executor, "x");
    let conn = cluster.connect(x, d).expect("connected");
    let register = registration("x", "h");
    let registered = cluster.ask_coarse(x, conn, register).expect("answered");
    assert_eq!(registered, Ok(Reply::Bool(true)));
    cluster.send_coarse(x, conn, LaunchedExecutor::new("x".into()));
    let unknown = StatusUpdate::new(
        "x".into(),
        4242,
        TaskState::Failed,
        Payload::copy_from(&[0xc1]),
        1,
        Default::default(),
    );
    cluster.send_coarse(x, conn, unknown);
    let refused = cluster.ask_coarse(x, conn, RetrieveDelegationTokens::new());
    assert!(matches!(refused, Some(Err(_))), "{refused:?}");
    let status = cluster.backend(d).status(cluster.now());
    assert_eq!(status.ready_executors(), 1);
    assert_eq!(status.executors[0].free_cores, 1);
    assert!(!cluster.probe(x).is_closed(conn), "the connection stays up");
    for link in cluster.links_between(x, d) {
        cluster.close(link);
    }
    cluster.settle();
    assert!(cluster
        .backend(d)
        .status(cluster.now())
        .executors
        .is_empty());
}

#[test]
fn an_executor_reporting_for_another_executor_loses_its_connection() {
    let (mut cluster, d) = driver_alone(128);
    let mut conns = Vec::new();
    for id in ["1", "2"] {
        let probe = cluster.add_probe(Role::Executor, id);
        let conn = cluster.connect(probe, d).expect("connected");
        let register = registration(id, "127.0.0.1");
        let registered = cluster.ask_coarse(probe, conn, register);
        assert_eq!(registered, Some(Ok(Reply::Bool(true))));
        conns.push((probe, conn));
    }
    // Executor 2 reports on executor 1's behalf.
    let (two, conn) = conns[1];
    let forged = StatusUpdate::new(
        "1".into(),
        0,
        TaskState::Failed,
        Payload::default(),
        1,
        Default::default(),
    );
    cluster.send_coarse(two, conn, forged);
    assert!(cluster.probe(two).is_closed(conn), "its connection closes");
    let refusals = cluster.driver(d).refusals();
    assert!(
        refusals.len() == 1 && refusals[0].starts_with("NotOwner: "),
        "{refusals:?}"
    );
    // Executor 1 is still registered; executor 2 is gone with its connection.
    let status = cluster.backend(d).status(cluster.now());
    let ids: Vec<&str> = status.executors.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["1"]);
    assert!(!cluster.probe(conns[0].0).is_closed(conns[0].1));
}

/// The RegisterExecutor of executor `id` on `host`, with one core.
fn registration(id: &str, host: &str) -> RegisterExecutor {
    RegisterExecutor::new(
        id.into(),
        EndpointRef::client("Executor"),
        host.into(),
        1,
        Default::default(),
        Default::default(),
        Default::default(),
        0,
    )
}

fn master_config() -> master::Config {
    master::Config {
        worker_timeout: Duration::from_secs(60),
        ..Default::default()
    }
}

#[test]
fn executors_the_workers_start_for_the_application_join_its_driver_and_run_its_job() {
    let mut cluster = Cluster::new();
    let m = cluster.add_master(master_config(), Addr::new("10.0.0.1", 7077));
    let w1 = cluster.add_worker("worker-1", Addr::new("10.0.0.2", 4000), 2, 4096, &[m]);
    let w2 = cluster.add_worker("worker-2", Addr::new("10.0.0.3", 4000), 2, 4096, &[m]);
    let mut config = backend_config(128);
    config.executor_cores = Some(2);
    let d = cluster.add_driver(config, &[m], builtin_tasks());
    assert!(cluster.run_until(PATIENCE, |c| ready(c, d) == 2));
    assert!(cluster.backend(d).status(cluster.now()).app_id.is_some());
    assert_eq!(cluster.executors().len(), 2, "one on each worker");
    for w in [w1, w2] {
        assert_eq!(cluster.node::<WorkerNode>(w).running().len(), 1);
    }
    let job = SumSquaresJob {
        partitions: 8,
        n: 10_000,
    };
    let expected = format!("Sum of squares of 0..10000 is {}", job.expected());
    let result = cluster.run_job(d, job, PATIENCE).expect("ended");
    assert_eq!(result.expect("succeeds").output, expected);
    // A worker dies: its executor's watch ends, the executor exits, the driver loses it, and the
    // next job runs on the other.
    let lost = cluster.links_of(w1).len();
    assert!(lost >= 2, "a registration and a watch");
    cluster.kill(w1);
    assert!(cluster.run_until(PATIENCE, |c| ready(c, d) == 1));
    let exits: Vec<_> = cluster
        .executors()
        .into_iter()
        .filter_map(|e| cluster.executor(e).exit().cloned())
        .collect();
    assert_eq!(
        exits,
        [Ok(ExecutorExit::WorkerLost(
            "the worker closed the connection".into()
        ))]
    );
    pi_succeeds(&mut cluster, d, 4, 5);
}

#[test]
fn a_driver_that_stops_unregisters_and_its_executors_end_on_their_workers() {
    let mut cluster = Cluster::new();
    let m = cluster.add_master(master_config(), Addr::new("10.0.0.1", 7077));
    let w = cluster.add_worker("worker-1", Addr::new("10.0.0.2", 4000), 1, 4096, &[m]);
    let d = cluster.add_driver(backend_config(128), &[m], builtin_tasks());
    assert!(cluster.run_until(PATIENCE, |c| ready(c, d) == 1));
    assert_eq!(cluster.node::<WorkerNode>(w).running().len(), 1);
    // The driver stops (both its cores, as the runtime stops them): StopExecutor to its
    // executors, UnregisterApplication to the master, which has the worker kill what is left.
    stop(&mut cluster, d);
    cluster.run_for(Duration::from_secs(1));
    assert_eq!(cluster.count(d, m, "UnregisterApplication"), 1);
    let e = cluster.executors()[0];
    assert!(cluster.executor(e).exit().is_some() || cluster.links_of(e).is_empty());
    assert!(
        cluster.node::<WorkerNode>(w).running().is_empty(),
        "no executor started again"
    );
    assert_eq!(cluster.executors().len(), 1);
    assert!(cluster.links_between(e, d).is_empty());
}

#[test]
fn a_paused_executor_holds_its_task_until_it_resumes() {
    let (mut cluster, d) = driver_alone(128);
    let e = executor(&mut cluster, d, "1", 1);
    let job = PiJob {
        partitions: 1,
        samples: 10,
        seed: 1,
    };
    let job = cluster.submit(d, job).expect("taken");
    cluster.pause(e);
    cluster.run_for(Duration::from_secs(5));
    assert!(
        cluster.driver(d).outcome(job).is_none(),
        "nothing came back"
    );
    cluster.resume(e);
    assert!(cluster.run_until(PATIENCE, |c| c.driver(d).outcome(job).is_some()));
    assert!(cluster.elapsed() >= Duration::from_secs(5));
}

#[test]
fn the_app_client_retries_with_standby_masters_then_follows_master_changed_into_the_backend() {
    let mut cluster = Cluster::new();
    let m1 = cluster.add_standby_master(master_config(), Addr::new("10.0.0.1", 7077));
    let m2 = cluster.add_standby_master(master_config(), Addr::new("10.0.0.2", 7077));
    let d = cluster.add_driver(backend_config(128), &[m1, m2], builtin_tasks());
    // Standby masters ignore it: asked again every 20 s, of each.
    cluster.run_for(Duration::from_secs(30));
    assert_eq!(cluster.count(d, m1, "RegisterApplication"), 2);
    assert_eq!(cluster.count(d, m2, "RegisterApplication"), 2);
    cluster.elect(m1, master::Stored::default());
    assert!(cluster.run_until(Duration::from_secs(15), |c| {
        c.backend(d).status(c.now()).app_id.is_some()
    }));
    cluster.run_for(Duration::from_secs(60));
    assert_eq!(
        cluster.count(d, m1, "RegisterApplication"),
        3,
        "no more retries once registered"
    );
    // m1 dies; m2 takes over on what m1 stored, dials the application and says so.
    let stored = cluster.node::<MasterNode>(m1).store().clone();
    cluster.kill(m1);
    cluster.elect(m2, stored);
    assert!(cluster.run_until(PATIENCE, |c| {
        c.backend(d).status(c.now()).master_changes == 1
    }));
    assert_eq!(cluster.count(d, m2, "MasterChangeAcknowledged"), 1);
    let status = cluster.backend(d).status(cluster.now());
    assert!(
        status
            .master
            .as_deref()
            .is_some_and(|m| m.contains("10.0.0.2")),
        "{:?}",
        status.master
    );
}

#[test]
fn the_app_client_gives_up_when_no_master_answers_in_time_and_the_backend_takes_no_job() {
    let mut cluster = Cluster::new();
    let m1 = cluster.add_standby_master(master_config(), Addr::new("10.0.0.1", 7077));
    let m2 = cluster.add_master(master_config(), Addr::new("10.0.0.2", 7077));
    cluster.pause(m2);
    let d = cluster.add_driver(backend_config(128), &[m1, m2], builtin_tasks());
    assert!(cluster.run_until(PATIENCE, |c| c.backend(d).status(c.now()).dead.is_some()));
    assert_eq!(cluster.elapsed(), Duration::from_secs(60));
    assert_eq!(
        cluster.count(d, m1, "RegisterApplication"),
        3,
        "at 0, 20 and 40 s"
    );
    let why = format!(
        "{ALL_MASTERS_UNRESPONSIVE} (sparkwire://10.0.0.2:7077: cannot connect to \
         10.0.0.2:7077: connection refused)"
    );
    let pi = PiJob {
        partitions: 1,
        samples: 10,
        seed: 1,
    };
    assert_eq!(cluster.submit(d, pi), Err(SubmitRefused::Dead(why)));
}
