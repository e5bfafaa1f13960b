//! The driver's task scheduler, without IO: one task set per job, resource offers, task states,
//! retries and aborts, after Spark's `TaskSchedulerImpl` and `TaskSetManager` (FIFO pool, no
//! locality, no speculation).
//!
//! The backend turns executors' free cores into [`Offer`]s and feeds status updates and executor
//! losses in. Every call that changes the state has the same shape: it returns nothing, and what
//! follows from it is queued as [`SchedulerEvent`]s ([`TaskLaunch`]es to send, tasks that ended,
//! results, kills to send, jobs that failed), which the backend drains in one place with
//! [`TaskScheduler::poll_event`], in order.

use std::collections::{BTreeMap, VecDeque};

use crate::messages::{Payload, TaskState};
use crate::wire::decode_failure;

use super::JobId;

/// Free cores on one executor, offered to the task sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// Executor id.
    pub executor: String,
    /// The executor's host.
    pub host: String,
    /// Cores not held by running tasks.
    pub free_cores: u32,
}

/// A task attempt assigned to an executor: the backend sends it (or reports why it could not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskLaunch {
    /// Task id, unique in the application (Spark's TID).
    pub task_id: i64,
    /// The job (and stage).
    pub job: JobId,
    /// Index of the task in its task set: its partition.
    pub index: usize,
    /// Attempt number of this index, from 0.
    pub attempt: u32,
    /// The executor.
    pub executor: String,
    /// Cores the task takes.
    pub cpus: u32,
}

/// What the backend must act on.
#[derive(Debug, Clone, PartialEq)]
pub enum SchedulerEvent {
    /// A task attempt was assigned to an executor: send it (or report why it could not be, with
    /// [`TaskScheduler::launch_refused`] or [`TaskScheduler::launch_failed`]).
    Launch(TaskLaunch),
    /// A StatusUpdate ended a task attempt (its cores on the executor are free again), or its
    /// executor was lost with it (state LOST). Comes before what the end causes (a result, a
    /// retry, a failed job).
    TaskEnded {
        /// Task id.
        task_id: i64,
        /// The attempt as it was assigned.
        task: RunningTask,
        /// The state it ended in.
        state: TaskState,
    },
    /// A task produced its partition's result (once per partition).
    TaskSucceeded {
        /// Job.
        job: JobId,
        /// Partition.
        index: usize,
        /// Result bytes.
        result: Payload,
    },
    /// Every partition of the job has its result.
    JobSucceeded {
        /// Job.
        job: JobId,
    },
    /// A task attempt failed and its partition goes back to the pending tasks.
    TaskFailed {
        /// Job.
        job: JobId,
        /// Spark's text: `Lost task 0.1 in stage 0.0 (TID 1) (host executor 1): …`.
        reason: String,
    },
    /// The job failed (its task set was aborted, or it was cancelled).
    JobFailed {
        /// Job.
        job: JobId,
        /// The job's failure text, as Spark's DAGScheduler gives it.
        message: String,
    },
    /// A running task to kill (its job failed or was cancelled).
    Kill {
        /// Task id.
        task_id: i64,
        /// Where it runs.
        executor: String,
        /// Why.
        reason: String,
    },
}

/// A task attempt the scheduler gave to an executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningTask {
    /// Job.
    pub job: JobId,
    /// Partition.
    pub index: usize,
    /// Attempt number.
    pub attempt: u32,
    /// Executor.
    pub executor: String,
    /// Its host.
    pub host: String,
    /// Cores held.
    pub cpus: u32,
    /// Whether LaunchTask was sent (assigned tasks not sent yet hold no cores on the executor).
    pub sent: bool,
}

#[derive(Debug)]
struct TaskSet {
    num_tasks: usize,
    pending: VecDeque<usize>,
    attempts: Vec<u32>,
    failures: Vec<u32>,
    successful: Vec<bool>,
    succeeded: usize,
    running: usize,
    zombie: bool,
}

/// The scheduler's state. See the module documentation.
#[derive(Debug)]
pub struct TaskScheduler {
    sets: BTreeMap<JobId, TaskSet>,
    running: BTreeMap<i64, RunningTask>,
    next_task_id: i64,
    task_cpus: u32,
    max_failures: u32,
    rotation: usize,
    events: VecDeque<SchedulerEvent>,
}

impl TaskScheduler {
    /// A scheduler giving each task `task_cpus` cores (Spark's `spark.task.cpus`) and failing a
    /// job when one of its tasks failed `max_failures` times (`spark.task.maxFailures`).
    pub fn new(task_cpus: u32, max_failures: u32) -> Self {
        TaskScheduler {
            sets: BTreeMap::new(),
            running: BTreeMap::new(),
            next_task_id: 0,
            task_cpus: task_cpus.max(1),
            max_failures: max_failures.max(1),
            rotation: 0,
            events: VecDeque::new(),
        }
    }

    /// The next thing to act on, oldest first; `None` when nothing is queued.
    pub fn poll_event(&mut self) -> Option<SchedulerEvent> {
        self.events.pop_front()
    }

    /// Cores each task takes.
    pub fn task_cpus(&self) -> u32 {
        self.task_cpus
    }

    /// Adds job `job`'s task set of `num_tasks` tasks. A job of no task succeeds at once.
    pub fn submit(&mut self, job: JobId, num_tasks: usize) {
        if num_tasks == 0 {
            self.events.push_back(SchedulerEvent::JobSucceeded { job });
            return;
        }
        self.sets.insert(
            job,
            TaskSet {
                num_tasks,
                pending: (0..num_tasks).collect(),
                attempts: vec![0; num_tasks],
                failures: vec![0; num_tasks],
                successful: vec![false; num_tasks],
                succeeded: 0,
                running: 0,
                zombie: false,
            },
        );
    }

    /// Whether some task waits for cores.
    pub fn has_pending(&self) -> bool {
        self.sets
            .values()
            .any(|s| !s.zombie && !s.pending.is_empty())
    }

    /// The task attempt `task_id`, while it is assigned or running.
    pub fn task(&self, task_id: i64) -> Option<&RunningTask> {
        self.running.get(&task_id)
    }

    /// Whether any task attempt is assigned or running, on any executor.
    pub fn has_running(&self) -> bool {
        !self.running.is_empty()
    }

    /// Tasks assigned or running on `executor`.
    pub fn running_on(&self, executor: &str) -> usize {
        self.running
            .values()
            .filter(|t| t.executor == executor)
            .count()
    }

    /// Hands pending tasks to the offers, FIFO by job, spreading them over the executors one
    /// task per executor per round; each task takes [`task_cpus`](Self::task_cpus) cores from
    /// its offer and is queued as [`SchedulerEvent::Launch`].
    pub fn resource_offers(&mut self, offers: &mut [Offer]) {
        if offers.is_empty() {
            return;
        }
        let start = self.rotation % offers.len();
        self.rotation = self.rotation.wrapping_add(1);
        let order: Vec<usize> = (0..offers.len())
            .map(|i| (start + i) % offers.len())
            .collect();
        let jobs: Vec<JobId> = self.sets.keys().copied().collect();
        for job in jobs {
            loop {
                let mut launched = false;
                for &o in &order {
                    let offer = &mut offers[o];
                    if offer.free_cores < self.task_cpus {
                        continue;
                    }
                    let Some(set) = self.sets.get_mut(&job) else {
                        break;
                    };
                    if set.zombie {
                        break;
                    }
                    let Some(index) = set.pending.pop_front() else {
                        break;
                    };
                    let attempt = set.attempts[index];
                    set.attempts[index] += 1;
                    set.running += 1;
                    let task_id = self.next_task_id;
                    self.next_task_id += 1;
                    offer.free_cores -= self.task_cpus;
                    self.running.insert(
                        task_id,
                        RunningTask {
                            job,
                            index,
                            attempt,
                            executor: offer.executor.clone(),
                            host: offer.host.clone(),
                            cpus: self.task_cpus,
                            sent: false,
                        },
                    );
                    self.events.push_back(SchedulerEvent::Launch(TaskLaunch {
                        task_id,
                        job,
                        index,
                        attempt,
                        executor: offer.executor.clone(),
                        cpus: self.task_cpus,
                    }));
                    launched = true;
                }
                if !launched {
                    break;
                }
            }
        }
    }

    /// Records that LaunchTask for `task_id` was sent (or handed to its connection). Does
    /// nothing when the task is no longer assigned ([`is_assigned`](Self::is_assigned) says so
    /// first: such a task must not be sent).
    pub fn mark_sent(&mut self, task_id: i64) {
        if let Some(t) = self.running.get_mut(&task_id) {
            t.sent = true;
        }
    }

    /// Whether `task_id` is assigned and not sent yet.
    pub fn is_assigned(&self, task_id: i64) -> bool {
        self.running.get(&task_id).is_some_and(|t| !t.sent)
    }

    /// A task that could not be launched, for `message` (a serialized task too large): its task
    /// set is aborted, as Spark's `TaskSetManager.abort`, and the job fails with
    /// `Job aborted due to stage failure: <message>`.
    pub fn launch_refused(&mut self, task_id: i64, message: &str) {
        let Some(task) = self.running.remove(&task_id) else {
            return;
        };
        if let Some(set) = self.sets.get_mut(&task.job) {
            set.running = set.running.saturating_sub(1);
        }
        self.fail_job(
            task.job,
            format!("Job aborted due to stage failure: {message}"),
            message,
        )
    }

    /// A task that was assigned but could not be sent because its executor's connection failed:
    /// it goes back to the pending tasks without counting as a failure.
    pub fn launch_failed(&mut self, task_id: i64) {
        if let Some(task) = self.running.remove(&task_id) {
            if let Some(set) = self.sets.get_mut(&task.job) {
                set.running = set.running.saturating_sub(1);
                set.attempts[task.index] = set.attempts[task.index].saturating_sub(1);
                if !set.zombie && !set.successful[task.index] {
                    set.pending.push_front(task.index);
                }
            }
            self.collect(task.job);
        }
    }

    /// A StatusUpdate from `executor`. When it ends the task, [`SchedulerEvent::TaskEnded`] is
    /// queued (its cores are free again), then what follows. Updates for tasks unknown, or not
    /// on that executor, are ignored.
    pub fn status_update(
        &mut self,
        executor: &str,
        task_id: i64,
        state: TaskState,
        data: &Payload,
    ) {
        let on_executor = self
            .running
            .get(&task_id)
            .is_some_and(|t| t.executor == executor && t.sent);
        if !on_executor || !state.is_finished() {
            return;
        }
        let Some(task) = self.running.remove(&task_id) else {
            return;
        };
        if let Some(set) = self.sets.get_mut(&task.job) {
            set.running = set.running.saturating_sub(1);
        }
        self.events.push_back(SchedulerEvent::TaskEnded {
            task_id,
            task: task.clone(),
            state,
        });
        match state {
            TaskState::Finished => self.succeeded(&task, data),
            TaskState::Killed => {
                let f = decode_failure(data.as_slice());
                let reason = format!("TaskKilled ({})", f.message);
                self.failed(task_id, &task, &reason, false);
            }
            TaskState::Lost => {
                let reason = format!(
                    "ExecutorLostFailure (executor {} reported the task lost)",
                    task.executor
                );
                self.failed(task_id, &task, &reason, true);
            }
            _ => {
                let f = decode_failure(data.as_slice());
                let reason = format!("{}: {}", f.class_name, f.message);
                self.failed(task_id, &task, &reason, true);
            }
        }
        self.collect(task.job);
    }

    /// Executor `executor` is gone: its tasks go back to the pending tasks; they count as failed
    /// attempts when `caused_by_app` (Spark's `ExecutorLostFailure.exitCausedByApp`).
    pub fn executor_lost(&mut self, executor: &str, reason: &str, caused_by_app: bool) {
        let mut lost: Vec<(i64, RunningTask)> = self
            .running
            .iter()
            .filter(|(_, t)| t.executor == executor)
            .map(|(id, t)| (*id, t.clone()))
            .collect();
        lost.sort_by_key(|(id, _)| *id);
        let cause = if caused_by_app {
            "exited caused by one of the running tasks"
        } else {
            "exited unrelated to the running tasks"
        };
        let text = format!("ExecutorLostFailure (executor {executor} {cause}) Reason: {reason}");
        for (id, task) in lost {
            self.running.remove(&id);
            if let Some(set) = self.sets.get_mut(&task.job) {
                set.running = set.running.saturating_sub(1);
            }
            if task.sent {
                self.events.push_back(SchedulerEvent::TaskEnded {
                    task_id: id,
                    task: task.clone(),
                    state: TaskState::Lost,
                });
                self.failed(id, &task, &text, caused_by_app);
            } else if let Some(set) = self.sets.get_mut(&task.job) {
                set.attempts[task.index] = set.attempts[task.index].saturating_sub(1);
                if !set.zombie && !set.successful[task.index] {
                    set.pending.push_front(task.index);
                }
            }
            self.collect(task.job);
        }
    }

    /// Cancels job `job`: its running tasks are killed and it fails with `message`.
    pub fn cancel(&mut self, job: JobId, message: String) {
        self.fail_job(job, message, "Stage cancelled");
    }

    /// Fails every job with `message` (the application is going away).
    pub fn fail_all(&mut self, message: &str) {
        let jobs: Vec<JobId> = self
            .sets
            .iter()
            .filter(|(_, s)| !s.zombie)
            .map(|(j, _)| *j)
            .collect();
        for job in jobs {
            self.fail_job(job, message.to_string(), message);
        }
    }

    fn succeeded(&mut self, task: &RunningTask, data: &Payload) {
        let Some(set) = self.sets.get_mut(&task.job) else {
            return;
        };
        if set.zombie || set.successful[task.index] {
            return;
        }
        set.successful[task.index] = true;
        set.succeeded += 1;
        self.events.push_back(SchedulerEvent::TaskSucceeded {
            job: task.job,
            index: task.index,
            result: data.clone(),
        });
        if set.succeeded == set.num_tasks {
            set.zombie = true;
            self.events
                .push_back(SchedulerEvent::JobSucceeded { job: task.job });
        }
    }

    fn failed(&mut self, task_id: i64, task: &RunningTask, reason: &str, counts: bool) {
        let max = self.max_failures;
        let Some(set) = self.sets.get_mut(&task.job) else {
            return;
        };
        if set.zombie || set.successful[task.index] {
            return;
        }
        let lost = format!(
            "Lost task {}.{} in stage {}.0 (TID {task_id}) ({} executor {}): {reason}",
            task.index, task.attempt, task.job, task.host, task.executor
        );
        self.events.push_back(SchedulerEvent::TaskFailed {
            job: task.job,
            reason: lost.clone(),
        });
        set.pending.push_back(task.index);
        if counts {
            set.failures[task.index] += 1;
            if set.failures[task.index] >= max {
                let abort = format!(
                    "Task {} in stage {}.0 failed {max} times, most recent failure: {lost}",
                    task.index, task.job
                );
                self.fail_job(
                    task.job,
                    format!("Job aborted due to stage failure: {abort}"),
                    &abort,
                );
            }
        }
    }

    /// Marks the job's task set a zombie, drops its pending and unsent tasks, and kills its
    /// running ones.
    fn fail_job(&mut self, job: JobId, message: String, kill_reason: &str) {
        let Some(set) = self.sets.get_mut(&job) else {
            return;
        };
        if set.zombie {
            return;
        }
        set.zombie = true;
        set.pending.clear();
        self.events
            .push_back(SchedulerEvent::JobFailed { job, message });
        let mut ids: Vec<i64> = self
            .running
            .iter()
            .filter(|(_, t)| t.job == job)
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        for id in ids {
            let sent = self.running.get(&id).is_some_and(|t| t.sent);
            if sent {
                if let Some(t) = self.running.get(&id) {
                    self.events.push_back(SchedulerEvent::Kill {
                        task_id: id,
                        executor: t.executor.clone(),
                        reason: kill_reason.to_string(),
                    });
                }
            } else if self.running.remove(&id).is_some() {
                if let Some(set) = self.sets.get_mut(&job) {
                    set.running = set.running.saturating_sub(1);
                }
            }
        }
        self.collect(job);
    }

    /// Forgets a finished task set once no task of it runs.
    fn collect(&mut self, job: JobId) {
        if self
            .sets
            .get(&job)
            .is_some_and(|s| s.zombie && s.running == 0)
        {
            self.sets.remove(&job);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{encode_failure, TaskFailure};

    fn offers(n: usize, cores: u32) -> Vec<Offer> {
        (0..n)
            .map(|i| Offer {
                executor: i.to_string(),
                host: "h".into(),
                free_cores: cores,
            })
            .collect()
    }

    /// Everything queued, oldest first.
    fn drain(s: &mut TaskScheduler) -> Vec<SchedulerEvent> {
        std::iter::from_fn(|| s.poll_event()).collect()
    }

    /// The launches an offer round makes (and nothing else is queued).
    fn offer(s: &mut TaskScheduler, o: &mut [Offer]) -> Vec<TaskLaunch> {
        s.resource_offers(o);
        drain(s)
            .into_iter()
            .map(|e| match e {
                SchedulerEvent::Launch(l) => l,
                other => panic!("not a launch: {other:?}"),
            })
            .collect()
    }

    /// A status update: whether it ended the task (TaskEnded first), and what followed.
    fn update(
        s: &mut TaskScheduler,
        executor: &str,
        task_id: i64,
        state: TaskState,
        data: &Payload,
    ) -> (Option<RunningTask>, Vec<SchedulerEvent>) {
        s.status_update(executor, task_id, state, data);
        let mut e = drain(s);
        let ended = match e.first() {
            Some(SchedulerEvent::TaskEnded { task, .. }) => Some(task.clone()),
            _ => None,
        };
        if ended.is_some() {
            e.remove(0);
        }
        (ended, e)
    }

    fn send_all(s: &mut TaskScheduler, l: &[TaskLaunch]) {
        for t in l {
            assert!(s.is_assigned(t.task_id));
            s.mark_sent(t.task_id);
        }
    }

    fn fail(s: &mut TaskScheduler, t: &TaskLaunch) -> Vec<SchedulerEvent> {
        let data = encode_failure(&TaskFailure::new("java.lang.RuntimeException", "boom"));
        update(s, &t.executor, t.task_id, TaskState::Failed, &data).1
    }

    #[test]
    fn offers_spread_tasks_over_executors_within_their_cores() {
        let mut s = TaskScheduler::new(1, 4);
        s.submit(0, 5);
        let mut o = offers(2, 2);
        let l = offer(&mut s, &mut o);
        assert_eq!(l.len(), 4);
        assert_eq!(o.iter().map(|o| o.free_cores).sum::<u32>(), 0);
        assert_eq!(l.iter().filter(|t| t.executor == "0").count(), 2);
        let ids: Vec<i64> = l.iter().map(|t| t.task_id).collect();
        assert_eq!(ids, [0, 1, 2, 3]);
        assert!(s.has_pending());
    }

    #[test]
    fn a_task_taking_two_cpus_needs_two_free_cores() {
        let mut s = TaskScheduler::new(2, 4);
        s.submit(0, 3);
        let mut o = offers(1, 3);
        assert_eq!(offer(&mut s, &mut o).len(), 1);
        assert_eq!(o[0].free_cores, 1);
    }

    #[test]
    fn all_partitions_finishing_succeed_the_job_once() {
        let mut s = TaskScheduler::new(1, 4);
        s.submit(7, 2);
        let l = offer(&mut s, &mut offers(2, 1));
        send_all(&mut s, &l);
        let r = Payload::copy_from(b"x");
        let (t, e) = update(
            &mut s,
            &l[0].executor,
            l[0].task_id,
            TaskState::Finished,
            &r,
        );
        assert!(t.is_some());
        assert_eq!(e.len(), 1);
        let (_, e) = update(
            &mut s,
            &l[1].executor,
            l[1].task_id,
            TaskState::Finished,
            &r,
        );
        assert!(matches!(
            e.last(),
            Some(SchedulerEvent::JobSucceeded { job: 7 })
        ));
        // A repeated update changes nothing.
        let (t, e) = update(
            &mut s,
            &l[1].executor,
            l[1].task_id,
            TaskState::Finished,
            &r,
        );
        assert!(t.is_none() && e.is_empty());
    }

    #[test]
    fn a_failed_task_is_retried_and_fails_the_job_on_its_fourth_failure() {
        let mut s = TaskScheduler::new(1, 4);
        s.submit(0, 1);
        for attempt in 0..4u32 {
            let l = offer(&mut s, &mut offers(1, 1));
            assert_eq!(l.len(), 1);
            assert_eq!(l[0].attempt, attempt);
            send_all(&mut s, &l);
            let e = fail(&mut s, &l[0]);
            if attempt < 3 {
                assert!(
                    matches!(e[..], [SchedulerEvent::TaskFailed { .. }]),
                    "{e:?}"
                );
            } else {
                let msg = e.iter().find_map(|e| match e {
                    SchedulerEvent::JobFailed { message, .. } => Some(message.clone()),
                    _ => None,
                });
                assert_eq!(
                    msg.as_deref(),
                    Some(
                        "Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times, \
                         most recent failure: Lost task 0.3 in stage 0.0 (TID 3) (h executor 0): \
                         java.lang.RuntimeException: boom"
                    )
                );
            }
        }
        assert!(!s.has_pending());
        assert!(offer(&mut s, &mut offers(1, 1)).is_empty());
    }

    #[test]
    fn kills_do_not_count_as_failures_and_lost_executors_requeue_their_tasks() {
        let mut s = TaskScheduler::new(1, 1);
        s.submit(0, 2);
        let l = offer(&mut s, &mut offers(2, 1));
        send_all(&mut s, &l);
        let killed = encode_failure(&TaskFailure::killed("test"));
        let (_, e) = update(
            &mut s,
            &l[0].executor,
            l[0].task_id,
            TaskState::Killed,
            &killed,
        );
        assert!(matches!(e[..], [SchedulerEvent::TaskFailed { .. }]));
        s.executor_lost(&l[1].executor, "gone", false);
        let e = drain(&mut s);
        // The lost attempt ends (LOST: counted with the failed and killed ones), then fails.
        assert!(
            matches!(
                e[..],
                [
                    SchedulerEvent::TaskEnded {
                        state: TaskState::Lost,
                        ..
                    },
                    SchedulerEvent::TaskFailed { .. }
                ]
            ),
            "{e:?}"
        );
        assert_eq!(s.running_on(&l[1].executor), 0);
        let again = offer(&mut s, &mut offers(1, 2));
        assert_eq!(again.len(), 2);
        assert!(again.iter().all(|t| t.attempt == 1));
    }

    #[test]
    fn cancelling_a_job_kills_its_sent_tasks_and_drops_unsent_ones() {
        let mut s = TaskScheduler::new(1, 4);
        s.submit(3, 3);
        let l = offer(&mut s, &mut offers(3, 1));
        s.mark_sent(l[0].task_id);
        s.cancel(3, "Job 3 cancelled".into());
        let e = drain(&mut s);
        assert!(matches!(&e[0], SchedulerEvent::JobFailed { job: 3, .. }));
        let kills: Vec<i64> = e
            .iter()
            .filter_map(|e| match e {
                SchedulerEvent::Kill { task_id, .. } => Some(*task_id),
                _ => None,
            })
            .collect();
        assert_eq!(kills, [l[0].task_id]);
        assert!(!s.is_assigned(l[1].task_id));
        assert!(
            s.task(l[1].task_id).is_none(),
            "an unsent task of a cancelled job is dropped"
        );
        // The killed task's update frees its cores and fails nothing more.
        let (t, e) = update(
            &mut s,
            &l[0].executor,
            l[0].task_id,
            TaskState::Killed,
            &Payload::default(),
        );
        assert!(t.is_some() && e.is_empty());
    }

    #[test]
    fn a_refused_launch_aborts_the_task_set_with_the_message() {
        let mut s = TaskScheduler::new(1, 4);
        s.submit(0, 2);
        s.submit(1, 1);
        let l = offer(&mut s, &mut offers(1, 1));
        s.launch_refused(l[0].task_id, "Serialized task 0:0 was 9 bytes");
        let e = drain(&mut s);
        assert!(
            matches!(&e[0], SchedulerEvent::JobFailed { job: 0, message }
            if message == "Job aborted due to stage failure: Serialized task 0:0 was 9 bytes")
        );
        // The other job still gets its task.
        let l = offer(&mut s, &mut offers(1, 1));
        assert_eq!(l.iter().map(|t| t.job).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn updates_from_another_executor_or_for_unknown_tasks_are_ignored() {
        let mut s = TaskScheduler::new(1, 4);
        s.submit(0, 1);
        let l = offer(&mut s, &mut offers(1, 1));
        send_all(&mut s, &l);
        let (t, e) = update(
            &mut s,
            "other",
            l[0].task_id,
            TaskState::Finished,
            &Payload::default(),
        );
        assert!(t.is_none() && e.is_empty());
        let (t, e) = update(
            &mut s,
            &l[0].executor,
            999,
            TaskState::Failed,
            &Payload::default(),
        );
        assert!(t.is_none() && e.is_empty());
        let (t, _) = update(
            &mut s,
            &l[0].executor,
            l[0].task_id,
            TaskState::Running,
            &Payload::default(),
        );
        assert!(t.is_none());
        assert_eq!(s.running_on(&l[0].executor), 1);
    }
}
