//! Jobs as a driver sees them: partitions, each partition's task input, and how results combine.

use super::{read_u64s, write_u64s};
use crate::messages::Payload;
use crate::node::driver::Job;

/// Names of the built-in jobs.
pub const JOB_NAMES: [&str; 6] = [
    "pi",
    "sum-squares",
    "sleep",
    "flaky",
    "big-result",
    "big-task",
];

fn u64_result(r: &Payload, what: &str) -> Result<u64, String> {
    read_u64s::<1>(r.as_slice(), what)
        .map(|[v]| v)
        .map_err(|e| e.to_string())
}

/// SparkPi: Monte Carlo estimate of π, `samples` points per partition.
#[derive(Debug, Clone)]
pub struct PiJob {
    /// Partitions.
    pub partitions: usize,
    /// Points sampled per partition (SparkPi uses 100,000).
    pub samples: u64,
    /// Seed; partition p uses seed + p.
    pub seed: u64,
}

impl Job for PiJob {
    fn name(&self) -> String {
        "pi".into()
    }
    fn runner(&self) -> &'static str {
        "pi"
    }
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn input(&self, p: usize) -> Payload {
        write_u64s(&[self.seed.wrapping_add(p as u64), self.samples])
    }
    fn combine(&self, results: &[Payload]) -> Result<String, String> {
        let mut inside = 0u64;
        for r in results {
            inside = inside.saturating_add(u64_result(r, "pi result")?);
        }
        let total = self.samples.saturating_mul(self.partitions as u64).max(1);
        Ok(format!(
            "Pi is roughly {}",
            4.0 * inside as f64 / total as f64
        ))
    }
}

/// The sum of i² for i in 0..n, split evenly over the partitions.
#[derive(Debug, Clone)]
pub struct SumSquaresJob {
    /// Partitions.
    pub partitions: usize,
    /// Upper bound (exclusive).
    pub n: u64,
}

impl SumSquaresJob {
    /// The range partition `p` covers.
    pub fn range(&self, p: usize) -> (u64, u64) {
        let parts = self.partitions.max(1) as u128;
        let at = |k: u128| (u128::from(self.n) * k / parts) as u64;
        (at(p as u128), at(p as u128 + 1))
    }

    /// The closed form n(n−1)(2n−1)/6, to check the distributed answer.
    pub fn expected(&self) -> u128 {
        let n = u128::from(self.n);
        if n == 0 {
            return 0;
        }
        n * (n - 1) * (2 * n - 1) / 6
    }
}

impl Job for SumSquaresJob {
    fn name(&self) -> String {
        "sum-squares".into()
    }
    fn runner(&self) -> &'static str {
        "sum-squares"
    }
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn input(&self, p: usize) -> Payload {
        let (a, b) = self.range(p);
        write_u64s(&[a, b])
    }
    fn combine(&self, results: &[Payload]) -> Result<String, String> {
        let mut total = 0u128;
        for r in results {
            let b: [u8; 16] = r
                .as_slice()
                .try_into()
                .map_err(|_| format!("sum-squares result is {} bytes, expected 16", r.len()))?;
            total = total
                .checked_add(u128::from_be_bytes(b))
                .ok_or("sum overflows 128 bits")?;
        }
        Ok(format!("Sum of squares of 0..{} is {}", self.n, total))
    }
}

/// Tasks that sleep.
#[derive(Debug, Clone)]
pub struct SleepJob {
    /// Partitions.
    pub partitions: usize,
    /// Milliseconds each task sleeps.
    pub millis: u64,
}

impl Job for SleepJob {
    fn name(&self) -> String {
        "sleep".into()
    }
    fn runner(&self) -> &'static str {
        "sleep"
    }
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn input(&self, _p: usize) -> Payload {
        write_u64s(&[self.millis])
    }
    fn combine(&self, results: &[Payload]) -> Result<String, String> {
        Ok(format!(
            "{} tasks slept {} ms each",
            results.len(),
            self.millis
        ))
    }
}

/// Tasks whose first `failures` attempts fail.
#[derive(Debug, Clone)]
pub struct FlakyJob {
    /// Partitions.
    pub partitions: usize,
    /// Attempts that fail before one succeeds.
    pub failures: u64,
}

impl Job for FlakyJob {
    fn name(&self) -> String {
        "flaky".into()
    }
    fn runner(&self) -> &'static str {
        "flaky"
    }
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn input(&self, _p: usize) -> Payload {
        write_u64s(&[self.failures])
    }
    fn combine(&self, results: &[Payload]) -> Result<String, String> {
        let attempts: Result<Vec<u64>, String> = results
            .iter()
            .map(|r| u64_result(r, "flaky result"))
            .collect();
        Ok(format!(
            "{} tasks succeeded on attempts {:?}",
            results.len(),
            attempts?
        ))
    }
}

/// Tasks that return `size` bytes each.
#[derive(Debug, Clone)]
pub struct BigResultJob {
    /// Partitions.
    pub partitions: usize,
    /// Result bytes per task.
    pub size: u64,
}

impl Job for BigResultJob {
    fn name(&self) -> String {
        "big-result".into()
    }
    fn runner(&self) -> &'static str {
        "big-result"
    }
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn input(&self, _p: usize) -> Payload {
        write_u64s(&[self.size])
    }
    fn combine(&self, results: &[Payload]) -> Result<String, String> {
        let total: usize = results.iter().map(Payload::len).sum();
        Ok(format!("{} results, {} bytes in all", results.len(), total))
    }
}

/// Tasks whose input is `size` bytes: to show the frame-size limit.
#[derive(Debug, Clone)]
pub struct BigTaskJob {
    /// Partitions.
    pub partitions: usize,
    /// Input bytes per task.
    pub size: u64,
}

impl Job for BigTaskJob {
    fn name(&self) -> String {
        "big-task".into()
    }
    fn runner(&self) -> &'static str {
        "big-task"
    }
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn input(&self, p: usize) -> Payload {
        Payload::from(
            (0..self.size)
                .map(|i| (i as usize + p) as u8)
                .collect::<Vec<u8>>(),
        )
    }
    fn combine(&self, results: &[Payload]) -> Result<String, String> {
        let mut total = 0u64;
        for r in results {
            total = total.saturating_add(u64_result(r, "big-task result")?);
        }
        Ok(format!(
            "{} tasks read {} input bytes",
            results.len(),
            total
        ))
    }
}

/// A built-in job by name; `param` is the job's size parameter (samples per partition for `pi`,
/// n for `sum-squares`, milliseconds for `sleep`, failing attempts for `flaky`, bytes for
/// `big-result` and `big-task`), with a default when `None`.
pub fn job_by_name(name: &str, partitions: usize, param: Option<u64>) -> Option<Box<dyn Job>> {
    let partitions = partitions.max(1);
    Some(match name {
        "pi" => Box::new(PiJob {
            partitions,
            samples: param.unwrap_or(100_000),
            seed: 42,
        }),
        "sum-squares" => Box::new(SumSquaresJob {
            partitions,
            n: param.unwrap_or(1_000_000),
        }),
        "sleep" => Box::new(SleepJob {
            partitions,
            millis: param.unwrap_or(100),
        }),
        "flaky" => Box::new(FlakyJob {
            partitions,
            failures: param.unwrap_or(2),
        }),
        "big-result" => Box::new(BigResultJob {
            partitions,
            size: param.unwrap_or(1 << 20),
        }),
        "big-task" => Box::new(BigTaskJob {
            partitions,
            size: param.unwrap_or(1 << 20),
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{BuiltinRunner, CancelFlag, TaskRunner};
    use super::*;
    use crate::messages::TaskDescription;
    use crate::wire::TaskFailure;

    fn task_of(job: &dyn Job, p: usize, attempt: i32) -> TaskDescription {
        TaskDescription {
            task_id: p as i64,
            attempt_number: attempt,
            executor_id: "1".into(),
            name: format!("task {p}.{attempt} in stage 0.0"),
            index: p as i32,
            partition_id: p as i32,
            stage_id: 0,
            stage_attempt_id: 0,
            properties: [(
                TaskDescription::RUNNER_PROPERTY.to_string(),
                job.runner().to_string(),
            )]
            .into_iter()
            .collect(),
            cpus: 1,
            resources: Default::default(),
            serialized_task: job.input(p),
        }
    }

    fn run_all(job: &dyn Job) -> Result<String, String> {
        let results: Result<Vec<Payload>, _> = (0..job.partitions())
            .map(|p| BuiltinRunner.run(&task_of(job, p, 0), &CancelFlag::new()))
            .collect();
        job.combine(&results.map_err(|e| e.to_string())?)
    }

    #[test]
    fn sum_squares_over_partitions_equals_the_closed_form() {
        for (n, parts) in [(0u64, 3usize), (1, 1), (10, 3), (100_001, 7)] {
            let job = SumSquaresJob {
                partitions: parts,
                n,
            };
            let out = run_all(&job).expect("runs");
            assert_eq!(
                out,
                format!("Sum of squares of 0..{n} is {}", job.expected())
            );
        }
    }

    #[test]
    fn pi_estimate_is_close_to_pi() {
        let job = PiJob {
            partitions: 4,
            samples: 50_000,
            seed: 7,
        };
        let out = run_all(&job).expect("runs");
        let v: f64 = out
            .trim_start_matches("Pi is roughly ")
            .parse()
            .expect("number");
        assert!((v - std::f64::consts::PI).abs() < 0.05, "{out}");
    }

    #[test]
    fn flaky_task_fails_its_first_attempts_then_succeeds() {
        let job = FlakyJob {
            partitions: 1,
            failures: 2,
        };
        assert!(BuiltinRunner
            .run(&task_of(&job, 0, 0), &CancelFlag::new())
            .is_err());
        assert!(BuiltinRunner
            .run(&task_of(&job, 0, 1), &CancelFlag::new())
            .is_err());
        assert!(BuiltinRunner
            .run(&task_of(&job, 0, 2), &CancelFlag::new())
            .is_ok());
    }

    #[test]
    fn only_tasks_bounded_well_under_the_brief_budget_run_on_the_event_loop() {
        let pi = |samples| PiJob {
            partitions: 1,
            samples,
            seed: 7,
        };
        let squares = |n| SumSquaresJob { partitions: 1, n };
        let brief = |job: &dyn Job| BuiltinRunner.runs_briefly(&task_of(job, 0, 0));
        assert!(brief(&pi(1)));
        assert!(brief(&pi(2_000)));
        assert!(!brief(&pi(2_001)));
        assert!(!brief(&pi(100_000)));
        assert!(brief(&squares(2_000)));
        assert!(!brief(&squares(1_000_000)));
        assert!(brief(&FlakyJob {
            partitions: 1,
            failures: 1
        }));
        // A sleep, a large result, a bad input or an unknown runner goes to a task thread.
        assert!(!brief(&SleepJob {
            partitions: 1,
            millis: 0
        }));
        assert!(!brief(&BigResultJob {
            partitions: 1,
            size: 10
        }));
        let mut bad = task_of(&pi(1), 0, 0);
        bad.serialized_task = Payload::copy_from(&[1, 2, 3]);
        assert!(!BuiltinRunner.runs_briefly(&bad));
        bad.properties
            .insert(TaskDescription::RUNNER_PROPERTY.into(), "nope".into());
        assert!(!BuiltinRunner.runs_briefly(&bad));
    }

    #[test]
    fn a_result_larger_than_any_message_fails_the_task_without_being_allocated() {
        let job = BigResultJob {
            partitions: 1,
            size: u64::MAX,
        };
        let failure = BuiltinRunner
            .run(&task_of(&job, 0, 0), &CancelFlag::new())
            .expect_err("too big");
        assert_eq!(failure.class_name, "java.lang.OutOfMemoryError");
        assert!(
            failure.message.contains("at most 2146435072"),
            "{failure:?}"
        );
        let small = BigResultJob {
            partitions: 1,
            size: 10,
        };
        let r = BuiltinRunner.run(&task_of(&small, 0, 0), &CancelFlag::new());
        assert_eq!(r.map(|p| p.len()), Ok(10));
    }

    #[test]
    fn a_sleep_too_long_for_the_clock_lasts_until_the_task_is_killed() {
        let job = SleepJob {
            partitions: 1,
            millis: u64::MAX,
        };
        let cancel = CancelFlag::new();
        let task = task_of(&job, 0, 0);
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let flag = cancel.clone();
        let t = std::thread::spawn(move || {
            let _ = done_tx.send(BuiltinRunner.run(&task, &flag));
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        cancel.cancel();
        let r = done_rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the task ends once killed");
        assert!(r.is_err_and(|f| f.class_name == TaskFailure::KILLED));
        t.join().expect("no panic");
    }

    #[test]
    fn cancelled_tasks_report_a_kill() {
        let job = SleepJob {
            partitions: 1,
            millis: 60_000,
        };
        let cancel = CancelFlag::new();
        cancel.cancel();
        let e = BuiltinRunner
            .run(&task_of(&job, 0, 0), &cancel)
            .expect_err("killed");
        assert!(e.is_kill());
    }

    #[test]
    fn bad_inputs_and_unknown_runners_are_failures_not_panics() {
        let mut t = task_of(
            &SleepJob {
                partitions: 1,
                millis: 1,
            },
            0,
            0,
        );
        t.serialized_task = Payload::copy_from(&[1, 2, 3]);
        assert!(BuiltinRunner.run(&t, &CancelFlag::new()).is_err());
        t.properties
            .insert(TaskDescription::RUNNER_PROPERTY.into(), "nope".into());
        let e = BuiltinRunner
            .run(&t, &CancelFlag::new())
            .expect_err("unknown");
        assert!(e.message.contains("nope"));
        t.properties.clear();
        assert!(BuiltinRunner.run(&t, &CancelFlag::new()).is_err());
    }

    #[test]
    fn big_jobs_move_the_bytes_they_say() {
        assert_eq!(
            run_all(&BigResultJob {
                partitions: 2,
                size: 1000
            })
            .expect("runs"),
            "2 results, 2000 bytes in all"
        );
        assert_eq!(
            run_all(&BigTaskJob {
                partitions: 3,
                size: 10
            })
            .expect("runs"),
            "3 tasks read 30 input bytes"
        );
        assert!(job_by_name("nope", 1, None).is_none());
        for name in JOB_NAMES {
            assert!(job_by_name(name, 2, Some(1)).is_some(), "{name}");
        }
    }
}
