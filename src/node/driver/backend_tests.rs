//! The scheduler backend's core alone, driven in memory with simulated time: no socket, no timer, no
//! task; every frame it would send is read back from its output queue.

use std::sync::Arc;
use std::time::Instant;

use super::{BackendConfig, BackendCore, BackendEffect, BackendInput as Input, JobProgress};
use super::{Job, JobId, SubmitRefused};
use crate::messages::coarse::{
    ExecutorDecommissioning, LaunchedExecutor, RegisterExecutor, StatusUpdate,
};
use crate::messages::{CoarseMessage, EndpointRef, Payload, TaskDescription, TaskState};
use crate::node::{ConnId, ConnInput, ConnOutput, Core, PeerInfo};
use crate::reference::task::{BigTaskJob, PiJob};
use crate::wire::decode_task;
use crate::wire::handshake::Role;
use crate::wire::Reply;
use crate::wire::DEFAULT_MAX_FRAME_SIZE;

type Output = crate::node::Output<CoarseMessage, BackendEffect>;

/// Spark's defaults, as `DriverConfig::new` has them.
fn config() -> BackendConfig {
    BackendConfig {
        app_name: "test".into(),
        driver_host: "127.0.0.1".into(),
        driver_port: 7078,
        task_cpus: 1,
        max_task_failures: 4,
        revive_interval: std::time::Duration::from_secs(1),
        max_message_size_mib: 128,
        executor_cores: None,
        executor_memory_mb: 1024,
    }
}

/// A core and the simulated clock it is fed.
struct Harness {
    core: BackendCore,
    now: Instant,
    out: Vec<Output>,
}

impl Harness {
    fn new() -> Harness {
        let now = Instant::now();
        Harness {
            core: BackendCore::new(config(), now),
            now,
            out: Vec::new(),
        }
    }

    fn input(&mut self, input: impl Into<Input>) {
        self.core.handle(self.now, input.into());
        self.collect();
    }

    fn collect(&mut self) {
        while let Some(o) = self.core.poll() {
            self.out.push(o);
        }
    }

    /// What the core queued since the last call.
    fn take(&mut self) -> Vec<Output> {
        std::mem::take(&mut self.out)
    }

    fn submit(&mut self, job: impl Job + 'static) -> Result<JobId, SubmitRefused> {
        let id = self.core.submit(self.now, Arc::new(job));
        self.collect();
        id
    }

    /// An executor `id` with `cores` on connection `conn`, registered and ready.
    fn executor(&mut self, conn: ConnId, id: &str, cores: i32) {
        self.connect(conn, DEFAULT_MAX_FRAME_SIZE);
        self.input(ConnInput::Ask {
            conn,
            id: 1,
            message: CoarseMessage::RegisterExecutor(register(id, cores)),
        });
        let answer = self.take();
        assert_eq!(
            answer,
            [Output::Conn(ConnOutput::Reply {
                conn,
                id: 1,
                reply: Reply::Bool(true)
            })]
        );
        self.input(ConnInput::Message {
            conn,
            message: CoarseMessage::LaunchedExecutor(LaunchedExecutor {
                executor_id: id.into(),
            }),
        });
    }

    /// Executors "0" (on connection 1) and "1" (on 2) of one core each, and a SparkPi job of
    /// `partitions` tasks: the LaunchTasks its first offers sent.
    fn two_executors_running_pi(&mut self, partitions: usize) -> Vec<(ConnId, TaskDescription)> {
        self.executor(1, "0", 1);
        self.executor(2, "1", 1);
        self.submit(pi(partitions)).expect("submitted");
        launches(&self.take())
    }

    fn connect(&mut self, conn: ConnId, max_frame_size: usize) {
        let peer = PeerInfo {
            role: Role::Executor,
            id: format!("executor-on-{conn}"),
            addr: format!("127.0.0.1:{}", 40_000 + conn),
            version: crate::messages::Version::V2,
            admin: false,
            max_frame_size,
        };
        self.input(ConnInput::Opened {
            conn,
            peer,
            origin: (),
        });
    }

    fn finish(&mut self, conn: ConnId, exec: &str, task_id: i64, result: u64) {
        self.input(ConnInput::Message {
            conn,
            message: CoarseMessage::StatusUpdate(update(
                exec,
                task_id,
                TaskState::Finished,
                Payload::from(result.to_be_bytes().to_vec()),
            )),
        });
    }
}

fn register(id: &str, cores: i32) -> RegisterExecutor {
    RegisterExecutor {
        executor_id: id.into(),
        executor_ref: EndpointRef::client("Executor"),
        hostname: "host-a".into(),
        cores,
        log_urls: Default::default(),
        attributes: Default::default(),
        resources: Default::default(),
        resource_profile_id: 0,
    }
}

fn update(exec: &str, task_id: i64, state: TaskState, data: Payload) -> StatusUpdate {
    StatusUpdate {
        executor_id: exec.into(),
        task_id,
        state,
        data,
        task_cpus: 1,
        resources: Default::default(),
    }
}

fn pi(partitions: usize) -> PiJob {
    PiJob {
        partitions,
        samples: 10,
        seed: 1,
    }
}

/// The LaunchTasks among `out`: (connection, decoded task).
fn launches(out: &[Output]) -> Vec<(ConnId, TaskDescription)> {
    out.iter()
        .filter_map(|o| match o {
            Output::Conn(ConnOutput::Send {
                conn,
                message: CoarseMessage::LaunchTask(launch),
            }) => {
                let desc = decode_task(&launch.data.0).expect("a task the core encoded");
                Some((*conn, desc))
            }
            _ => None,
        })
        .collect()
}

fn job_outcome(out: &[Output], job: JobId) -> Option<Result<String, String>> {
    out.iter().find_map(|o| match o {
        Output::Effect(BackendEffect::JobEnded { job: j, outcome }) if *j == job => Some(
            outcome
                .as_ref()
                .map(|r| r.output.clone())
                .map_err(|f| f.message.clone()),
        ),
        _ => None,
    })
}

#[test]
fn offers_of_a_ready_executor_become_launch_tasks_within_its_cores() {
    let mut h = Harness::new();
    h.connect(1, DEFAULT_MAX_FRAME_SIZE);
    h.input(ConnInput::Ask {
        conn: 1,
        id: 7,
        message: CoarseMessage::RegisterExecutor(register("0", 2)),
    });
    h.take();
    let job = h.submit(pi(5)).expect("submitted");
    assert!(
        launches(&h.take()).is_empty(),
        "no task before the executor says LaunchedExecutor"
    );
    h.input(ConnInput::Message {
        conn: 1,
        message: CoarseMessage::LaunchedExecutor(LaunchedExecutor {
            executor_id: "0".into(),
        }),
    });
    let sent = launches(&h.take());
    assert_eq!(sent.len(), 2, "two cores, two tasks");
    for (i, (conn, desc)) in sent.iter().enumerate() {
        assert_eq!(*conn, 1);
        assert_eq!(desc.executor_id, "0");
        assert_eq!(desc.task_id, i as i64);
        assert_eq!(desc.index, i as i32);
        assert_eq!(desc.stage_id, job as i32);
        assert_eq!(desc.name, format!("task {i}.0 in stage 0.0 (TID {i})"));
    }
    let status = h.core.status(h.now);
    assert_eq!(status.tasks_launched, 2);
    assert_eq!(status.executors[0].free_cores, 0);
}

#[test]
fn status_updates_free_cores_launch_the_next_task_and_end_the_job() {
    let mut h = Harness::new();
    h.executor(1, "0", 1);
    let job = h.submit(pi(2)).expect("submitted");
    let first = launches(&h.take());
    assert_eq!(first.len(), 1);
    h.finish(1, "0", first[0].1.task_id, 7);
    let out = h.take();
    assert!(out.contains(&Output::Effect(BackendEffect::Progress {
        job,
        progress: JobProgress {
            finished: 1,
            total: 2,
            failed_attempts: 0
        }
    })));
    let second = launches(&out);
    assert_eq!(second.len(), 1, "the freed core takes the next task");
    assert_eq!(second[0].1.index, 1);
    h.finish(1, "0", second[0].1.task_id, 9);
    let out = h.take();
    // 16 of 20 points inside: 4 * 16 / 20.
    assert_eq!(
        job_outcome(&out, job),
        Some(Ok("Pi is roughly 3.2".to_string()))
    );
    let status = h.core.status(h.now);
    assert_eq!(status.tasks_finished, 2);
    assert_eq!(status.executors[0].free_cores, 1);
}

#[test]
fn a_batch_of_status_updates_makes_its_offers_once_at_its_end() {
    let mut h = Harness::new();
    let first = h.two_executors_running_pi(4);
    assert_eq!(first.len(), 2, "one task per executor");
    h.core.begin_batch();
    for (conn, desc) in &first {
        h.finish(*conn, &desc.executor_id, desc.task_id, 3);
    }
    assert!(
        launches(&h.take()).is_empty(),
        "no offer while the batch is open"
    );
    let status = h.core.status(h.now);
    assert!(
        status.executors.iter().all(|e| e.free_cores == 1),
        "the updates were handled at once: both cores are free"
    );
    h.core.end_batch();
    h.collect();
    let next = launches(&h.take());
    let mut targets: Vec<ConnId> = next.iter().map(|(conn, _)| *conn).collect();
    targets.sort_unstable();
    assert_eq!(targets, [1, 2], "each freed core takes one task at the end");
    let mut indices: Vec<i32> = next.iter().map(|(_, d)| d.index).collect();
    indices.sort_unstable();
    assert_eq!(indices, [2, 3]);
}

#[test]
fn a_lost_connection_loses_its_executor_and_its_task_runs_again_elsewhere() {
    let mut h = Harness::new();
    h.executor(1, "0", 1);
    h.executor(2, "1", 1);
    let job = h.submit(pi(2)).expect("submitted");
    let sent = launches(&h.take());
    assert_eq!(sent.len(), 2);
    assert!(h.core.tasks_out(), "two tasks are out");
    let on_lost = sent
        .iter()
        .find(|(c, _)| *c == 1)
        .expect("a task on 1")
        .1
        .clone();
    let on_kept = sent
        .iter()
        .find(|(c, _)| *c == 2)
        .expect("a task on 2")
        .1
        .clone();
    // A send to executor 0 failed (it stopped reading): it is lost at once.
    h.input(Input::Lost {
        conn: 1,
        reason: "LaunchTask waited over 30s".into(),
    });
    let out = h.take();
    assert!(
        out.contains(&Output::Conn(ConnOutput::Abort { conn: 1 })),
        "{out:?}"
    );
    assert!(launches(&out).is_empty(), "executor 1 has no free core yet");
    assert_eq!(h.core.status(h.now).executors_lost, 1);
    assert!(h.core.status(h.now).executors.iter().all(|e| e.id != "0"));
    // Whatever the lost connection still delivers is not taken.
    h.finish(1, "0", on_lost.task_id, 5);
    assert!(launches(&h.take()).is_empty());
    // Executor 1 finishes its task and takes the lost one, as its second attempt.
    h.finish(2, "1", on_kept.task_id, 5);
    let again = launches(&h.take());
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].0, 2);
    assert_eq!(again[0].1.index, on_lost.index);
    assert_eq!(again[0].1.attempt_number, 1);
    h.finish(2, "1", again[0].1.task_id, 5);
    assert!(matches!(job_outcome(&h.take(), job), Some(Ok(_))));
    // The lost attempt counts as ended: nothing is out, so the loop's busy polling stops.
    assert!(!h.core.tasks_out(), "no task is out once the job is done");
    // The reader's close afterwards changes nothing more.
    h.input(ConnInput::Closed {
        conn: 1,
        reason: "closed".into(),
    });
    assert_eq!(h.core.status(h.now).executors_lost, 1);
    assert!(launches(&h.take()).is_empty());
}

#[test]
fn a_disconnected_executor_fails_its_attempts_with_sparks_reason() {
    let mut h = Harness::new();
    h.executor(1, "0", 1);
    let job = h.submit(pi(1)).expect("submitted");
    h.take();
    h.input(ConnInput::Closed {
        conn: 1,
        reason: "connection reset".into(),
    });
    let out = h.take();
    assert!(out.contains(&Output::Effect(BackendEffect::Progress {
        job,
        progress: JobProgress {
            finished: 0,
            total: 1,
            failed_attempts: 1
        }
    })));
    h.executor(2, "1", 1);
    let again = launches(&h.take());
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].1.attempt_number, 1);
}

#[test]
fn a_task_too_large_for_the_connection_fails_its_job_with_sparks_text() {
    let mut h = Harness::new();
    // 200 KiB of envelope reserve plus 1000 bytes: tasks of 1000 bytes or more are refused.
    h.connect(1, 200 * 1024 + 1000);
    h.input(ConnInput::Ask {
        conn: 1,
        id: 1,
        message: CoarseMessage::RegisterExecutor(register("0", 1)),
    });
    h.input(ConnInput::Message {
        conn: 1,
        message: CoarseMessage::LaunchedExecutor(LaunchedExecutor {
            executor_id: "0".into(),
        }),
    });
    h.take();
    let job = h
        .submit(BigTaskJob {
            partitions: 1,
            size: 5000,
        })
        .expect("submitted");
    let out = h.take();
    assert!(launches(&out).is_empty(), "nothing is sent");
    let message = job_outcome(&out, job)
        .expect("the job ended")
        .expect_err("the job failed");
    assert!(
        message.starts_with("Job aborted due to stage failure: Serialized task 0:0 was "),
        "{message}"
    );
    assert!(
        message.ends_with(
            " bytes, which exceeds max allowed: spark.rpc.message.maxSize (1000 bytes). \
             Consider increasing spark.rpc.message.maxSize or using broadcast variables for \
             large values."
        ),
        "{message}"
    );
    assert_eq!(h.core.status(h.now).executors[0].free_cores, 1);
}

#[test]
fn an_executor_speaks_only_for_itself() {
    let mut h = Harness::new();
    let sent = h.two_executors_running_pi(2);
    let on_0 = sent
        .iter()
        .find(|(c, _)| *c == 1)
        .expect("a task on 0")
        .1
        .task_id;
    // Connection 2 reports executor 0's task: refused, and connection 2 is closed.
    h.input(ConnInput::Message {
        conn: 2,
        message: CoarseMessage::StatusUpdate(update(
            "0",
            on_0,
            TaskState::Finished,
            Payload::default(),
        )),
    });
    // … and told why: a foreign id is NotOwner (SPEC §14.3).
    let out = h.take();
    assert!(
        matches!(&out[..], [Output::Effect(BackendEffect::Refused { conn: 2, kind: "NotOwner", .. }), Output::Conn(ConnOutput::Close { conn: 2, reason: Some(r) })] if r.kind == "NotOwner" && r.message.contains("executor 0")),
        "{out:?}"
    );
    assert_eq!(h.core.status(h.now).tasks_finished, 0);
    // A second registration of the same id is refused with Spark's text.
    h.connect(3, DEFAULT_MAX_FRAME_SIZE);
    h.input(ConnInput::Ask {
        conn: 3,
        id: 4,
        message: CoarseMessage::RegisterExecutor(register("0", 1)),
    });
    match h.take().as_slice() {
        [Output::Conn(ConnOutput::Fail {
            conn: 3,
            id: 4,
            error,
        })] => {
            assert_eq!(error.message, "Duplicate executor ID: 0")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_decommissioning_executor_gets_no_more_tasks() {
    let mut h = Harness::new();
    h.executor(1, "0", 1);
    h.input(ConnInput::Ask {
        conn: 1,
        id: 2,
        message: CoarseMessage::ExecutorDecommissioning(ExecutorDecommissioning {
            executor_id: "0".into(),
        }),
    });
    assert_eq!(
        h.take(),
        [Output::Conn(ConnOutput::Reply {
            conn: 1,
            id: 2,
            reply: Reply::Bool(true)
        })]
    );
    h.submit(pi(1)).expect("submitted");
    assert!(launches(&h.take()).is_empty());
}

#[test]
fn cancelling_kills_sent_tasks_and_fails_the_job() {
    let mut h = Harness::new();
    h.executor(1, "0", 1);
    let job = h.submit(pi(3)).expect("submitted");
    let sent = launches(&h.take());
    h.input(Input::Cancel(job));
    let out = h.take();
    assert_eq!(
        job_outcome(&out, job),
        Some(Err(format!("Job {job} cancelled")))
    );
    let kills: Vec<i64> = out
        .iter()
        .filter_map(|o| match o {
            Output::Conn(ConnOutput::Send {
                conn: 1,
                message: CoarseMessage::KillTask(k),
            }) => Some(k.task_id),
            _ => None,
        })
        .collect();
    assert_eq!(kills, [sent[0].1.task_id]);
}

#[test]
fn the_revive_timer_offers_cores_at_its_interval() {
    let mut h = Harness::new();
    let start = h.now;
    let interval = config().revive_interval;
    assert_eq!(h.core.poll_timeout(), Some(start + interval));
    h.executor(1, "0", 1);
    h.input(Input::KillExecutors(vec!["0".into()]));
    h.submit(pi(1)).expect("submitted");
    assert!(
        launches(&h.take()).is_empty(),
        "an executor being killed takes no task"
    );
    // Early: nothing happens, the deadline stays.
    h.core.handle_timeout(start + interval / 2);
    assert_eq!(h.core.poll_timeout(), Some(start + interval));
    h.now = start + interval;
    h.core.handle_timeout(h.now);
    assert_eq!(h.core.poll_timeout(), Some(h.now + interval));
}

#[test]
fn stopping_fails_jobs_stops_executors_and_takes_no_more_work() {
    let mut h = Harness::new();
    h.executor(1, "0", 1);
    h.executor(2, "1", 1);
    let job = h.submit(pi(4)).expect("submitted");
    h.take();
    h.input(Input::Stop);
    let out = h.take();
    assert_eq!(
        job_outcome(&out, job),
        Some(Err(format!(
            "Job {job} cancelled because SparkContext was shut down"
        )))
    );
    let stopped: Vec<ConnId> = out
        .iter()
        .filter_map(|o| match o {
            Output::Conn(ConnOutput::Send {
                conn,
                message: CoarseMessage::StopExecutor(_),
            }) => Some(*conn),
            _ => None,
        })
        .collect();
    assert_eq!(stopped, [1, 2]);
    assert!(
        !out.iter().any(|o| matches!(
            o,
            Output::Conn(ConnOutput::Send {
                message: CoarseMessage::KillTask(_),
                ..
            })
        )),
        "no KillTask while stopping"
    );
    assert!(matches!(h.submit(pi(1)), Err(SubmitRefused::Stopped)));
    assert_eq!(h.core.poll_timeout(), None);
    // Executors leaving now are the orderly end, not losses.
    h.input(ConnInput::Closed {
        conn: 1,
        reason: "closed".into(),
    });
    assert_eq!(h.core.status(h.now).executors_lost, 0);
}
