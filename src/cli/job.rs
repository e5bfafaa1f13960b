//! Running one job on a driver and reporting it: what `local-cluster` and `submit` (in client
//! deploy mode) share.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use sparkwire::connection::Counters;
use sparkwire::node::driver::{JobFailed, JobProgress, JobResult};
use sparkwire::reference::driver::{Driver, DriverStatus};
use sparkwire::reference::tap::{TraceObserver, Verdict};
use sparkwire::reference::task::{job_by_name, JOB_NAMES};

/// Most partitions a job may have.
pub(crate) const MAX_PARTITIONS: usize = 1_000_000;

/// Most bytes of a `big-task` input or a `big-result` result: 2047 MiB, the largest message
/// Spark allows (`spark.rpc.message.maxSize` at most 2047 MB); larger ones could never be sent.
pub(crate) const MAX_JOB_BYTES: u64 = sparkwire::reference::task::MAX_TASK_BYTES;

/// The job to run.
#[derive(Debug, Clone, Args)]
pub(crate) struct JobArgs {
    /// The job: pi, sum-squares, sleep, flaky, big-result or big-task.
    #[arg(long, default_value = "pi")]
    pub(crate) job: String,
    /// Partitions (tasks) of the job, 1 to 1000000.
    #[arg(long, default_value_t = 10)]
    pub(crate) partitions: usize,
    /// The job's size parameter: samples per partition (pi), n (sum-squares), milliseconds
    /// (sleep), failing attempts (flaky), bytes (big-result, big-task: at most 2047 MiB).
    #[arg(long)]
    pub(crate) param: Option<u64>,
}

impl JobArgs {
    /// Refuses an unknown job, a number of partitions out of range, or a size parameter that
    /// could never be sent (before anything is allocated for it).
    pub(crate) fn check(&self) -> Result<(), String> {
        if !JOB_NAMES.contains(&self.job.as_str()) {
            return Err(format!(
                "unknown job \"{}\"; jobs: {}",
                self.job,
                JOB_NAMES.join(", ")
            ));
        }
        if !(1..=MAX_PARTITIONS).contains(&self.partitions) {
            return Err(format!(
                "--partitions must be 1 to {MAX_PARTITIONS}, not {}",
                self.partitions
            ));
        }
        if let (Some(p), "big-task" | "big-result") = (self.param, self.job.as_str()) {
            if p > MAX_JOB_BYTES {
                return Err(format!(
                    "--param for {} is bytes per task, at most {MAX_JOB_BYTES} (2047 MiB, the \
                     largest message Spark allows), not {p}",
                    self.job
                ));
            }
        }
        Ok(())
    }

    /// The arguments that name this job on a `sparkwire` command line.
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--job".to_string(),
            self.job.clone(),
            "--partitions".to_string(),
            self.partitions.to_string(),
        ];
        if let Some(p) = self.param {
            args.push("--param".into());
            args.push(p.to_string());
        }
        args
    }
}

/// Waits for `executors` executors (at most `timeout`), runs the job, stops the driver and prints
/// what happened: the application, the first executor, the result, tasks per second, the
/// messages by type and the driver-side validator's verdict. `since` is when the command
/// started and `driver_started` how long after it the driver was started. `Ok(true)` when the
/// job succeeded and every connection was valid.
///
/// With `interrupt`, once it turns true the driver is stopped (before whatever the caller stops
/// next, such as the cluster) and the result is `Err("interrupted")`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_and_report(
    driver: Driver,
    job: &JobArgs,
    executors: usize,
    timeout: Duration,
    since: Instant,
    driver_started: Duration,
    observer: &TraceObserver,
    mut interrupt: Option<tokio::sync::watch::Receiver<bool>>,
) -> Result<bool, String> {
    let waited = tokio::select! {
        ready = driver.wait_for_executors(executors, timeout) => Some(ready),
        _ = interrupted(&mut interrupt) => None,
    };
    let Some(ready) = waited else {
        return Err(stop_interrupted(driver).await);
    };
    let ready = ready.map_err(|e| e.to_string())?;
    if ready.ready_executors() == 0 {
        // Bounded: with no executor by the timeout the job could only wait; say why instead.
        let why = driver.starvation(&ready).await;
        let _ = driver.stop().await;
        return Err(format!(
            "no executor registered within {} s, giving up: {why}",
            timeout.as_secs(),
        ));
    }
    if let Some(app_id) = &ready.app_id {
        println!("application {app_id} registered");
    }
    if let Some(first) = ready.first_executor_after {
        println!(
            "first executor registered {:.3} s after start; {} after {:.3} s",
            (driver_started + first).as_secs_f64(),
            ready_line(ready.ready_executors(), executors),
            since.elapsed().as_secs_f64()
        );
    }
    super::flush_stdout();

    let built = job_by_name(&job.job, job.partitions, job.param)
        .ok_or_else(|| format!("unknown job \"{}\"", job.job))?;
    let name = built.name();
    let handle = driver
        .submit(Arc::from(built))
        .await
        .map_err(|e| e.to_string())?;
    let progress = tokio::spawn(show_progress(handle.watch_progress()));
    let outcome = tokio::select! {
        outcome = handle.result() => Some(outcome),
        _ = interrupted(&mut interrupt) => None,
    };
    progress.abort();
    let Some(outcome) = outcome else {
        return Err(stop_interrupted(driver).await);
    };
    let status = driver.stop().await.unwrap_or_default();
    let wall = since.elapsed();
    let verdict = observer.verdict(true);
    Ok(report(&name, &outcome, &status, wall, &verdict))
}

/// Resolves once `interrupt` turns true; never without one (or once its sender is gone).
async fn interrupted(interrupt: &mut Option<tokio::sync::watch::Receiver<bool>>) {
    if let Some(rx) = interrupt {
        if rx.wait_for(|v| *v).await.is_ok() {
            return;
        }
    }
    std::future::pending::<()>().await
}

/// Stops the driver after an interruption (its jobs fail, its executors get StopExecutor, the
/// master UnregisterApplication), saying so; returns the error to report.
async fn stop_interrupted(driver: Driver) -> String {
    eprintln!("interrupted; stopping the driver");
    let _ = driver.stop().await;
    "interrupted".into()
}

/// Shows progress on stderr every second once a job runs longer than a second.
async fn show_progress(mut progress: tokio::sync::watch::Receiver<JobProgress>) {
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    loop {
        tick.tick().await;
        let p = *progress.borrow_and_update();
        eprintln!(
            "[{:>5.1} s] {}/{} tasks done{}",
            started.elapsed().as_secs_f64(),
            p.finished,
            p.total,
            if p.failed_attempts > 0 {
                format!(", {} failed attempts", p.failed_attempts)
            } else {
                String::new()
            }
        );
    }
}

fn report(
    name: &str,
    outcome: &Result<JobResult, JobFailed>,
    status: &DriverStatus,
    wall: Duration,
    verdict: &Verdict,
) -> bool {
    let job_ok = match outcome {
        Ok(r) => {
            println!("job {name}: {}", r.output);
            let secs = r.elapsed.as_secs_f64().max(1e-9);
            println!(
                "{} tasks in {:.3} s: {} tasks/s; wall time {:.3} s",
                r.tasks,
                secs,
                rate(r.tasks as f64 / secs),
                wall.as_secs_f64()
            );
            per_task(&status.counters, r.tasks);
            true
        }
        Err(e) => {
            println!("job {name} FAILED: {e}");
            println!("wall time {:.3} s", wall.as_secs_f64());
            false
        }
    };
    println!(
        "executors: {} lost; tasks: {} launched, {} finished, {} failed, killed or lost",
        status.executors_lost, status.tasks_launched, status.tasks_finished, status.tasks_failed
    );
    println!("messages (the driver's connections, both directions):");
    let mut names: Vec<&str> = status
        .counters
        .sent_by_name
        .keys()
        .chain(status.counters.received_by_name.keys())
        .copied()
        .collect();
    names.sort_unstable();
    names.dedup();
    for n in names {
        let s = status
            .counters
            .sent_by_name
            .get(n)
            .copied()
            .unwrap_or_default();
        let r = status
            .counters
            .received_by_name
            .get(n)
            .copied()
            .unwrap_or_default();
        println!(
            "  {n:<28} {:>8} frames {:>12} bytes",
            s.frames + r.frames,
            s.bytes + r.bytes
        );
    }
    println!("validator (driver side, strict): {verdict}");
    for example in &verdict.examples {
        println!("  {example}");
    }
    job_ok && verdict.is_clean()
}

/// How many executors are ready, against how many were waited for: "2 ready (1 awaited)" when
/// more came than were waited for, "1 of 2 ready" when fewer.
fn ready_line(ready: usize, awaited: usize) -> String {
    if ready > awaited {
        format!("{ready} ready ({awaited} awaited)")
    } else {
        format!("{ready} of {awaited} ready")
    }
}

/// A rate with three significant figures at least, whole above 100: a slow job's 0.25 tasks/s
/// is not rounded to 0.
fn rate(per_second: f64) -> String {
    if per_second >= 100.0 {
        format!("{per_second:.0}")
    } else if per_second >= 1.0 {
        format!("{per_second:.2}")
    } else {
        format!("{per_second:.3}")
    }
}

/// Frames and bytes per task: LaunchTask and StatusUpdate.
fn per_task(counters: &Counters, tasks: usize) {
    if tasks == 0 {
        return;
    }
    let mut frames = 0;
    let mut bytes = 0;
    for n in ["LaunchTask", "StatusUpdate"] {
        for t in [
            counters.sent_by_name.get(n),
            counters.received_by_name.get(n),
        ]
        .into_iter()
        .flatten()
        {
            frames += t.frames;
            bytes += t.bytes;
        }
    }
    println!(
        "per task: {:.2} frames, {:.0} bytes (LaunchTask and StatusUpdate)",
        frames as f64 / tasks as f64,
        bytes as f64 / tasks as f64
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_jobs_rate_is_not_rounded_to_zero_and_more_executors_than_awaited_read_so() {
        assert_eq!(rate(10.0 / 24.0), "0.417");
        assert_eq!(rate(2.5), "2.50");
        assert_eq!(rate(1234.4), "1234");
        assert_eq!(ready_line(2, 1), "2 ready (1 awaited)");
        assert_eq!(ready_line(1, 2), "1 of 2 ready");
        assert_eq!(ready_line(2, 2), "2 of 2 ready");
    }
}
