//! The reference executor's built-in runners, named by the `sparkwire.runner` task property.

use std::time::{Duration, Instant};

use super::{read_u64s, CancelFlag, TaskRunner};
use crate::messages::{Payload, TaskDescription};
use crate::wire::TaskFailure;

/// Runs the built-in jobs: `pi`, `sum-squares`, `sleep`, `flaky`, `big-result`, `big-task`.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinRunner;

/// Samples between checks of the cancel flag.
const CHECK_EVERY: u64 = 4096;

/// A step of SplitMix64: a small, good, deterministic generator.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SparkPi's sampling: how many of `samples` random points of the square [-1, 1]² fall in the unit
/// circle. `None` if cancelled.
pub(crate) fn pi_inside(seed: u64, samples: u64, cancel: &CancelFlag) -> Option<u64> {
    let mut state = seed;
    let mut inside = 0u64;
    let unit = |r: u64| (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    for i in 0..samples {
        if i % CHECK_EVERY == 0 && cancel.is_cancelled() {
            return None;
        }
        let x = unit(splitmix(&mut state));
        let y = unit(splitmix(&mut state));
        if x * x + y * y <= 1.0 {
            inside += 1;
        }
    }
    Some(inside)
}

/// The sum of i² for i in start..end, or `None` on overflow of u128 (not reachable for u64 ranges
/// of realistic size) or cancellation.
pub(crate) fn sum_squares(start: u64, end: u64, cancel: &CancelFlag) -> Option<u128> {
    let mut total = 0u128;
    for i in start..end {
        if (i - start) % (CHECK_EVERY * 16) == 0 && cancel.is_cancelled() {
            return None;
        }
        total = total.checked_add(u128::from(i) * u128::from(i))?;
    }
    Some(total)
}

fn killed() -> TaskFailure {
    TaskFailure::killed("killed on request")
}

/// The largest SparkPi partition (samples) and sum-of-squares range (numbers) run on the
/// executor's event loop: both well under [`super::BRIEF_TASK`] (a sample or a number costs a
/// few nanoseconds).
const BRIEF_WORK: u64 = 2_000;

impl TaskRunner for BuiltinRunner {
    fn runs_briefly(&self, task: &TaskDescription) -> bool {
        let input = task.serialized_task.as_slice();
        match task.runner() {
            Some("pi") => {
                read_u64s::<2>(input, "pi").is_ok_and(|[_, samples]| samples <= BRIEF_WORK)
            }
            Some("sum-squares") => read_u64s::<2>(input, "sum-squares")
                .is_ok_and(|[start, end]| end.saturating_sub(start) <= BRIEF_WORK),
            // Neither computes anything: a failure or a count of the input's bytes.
            Some("flaky") | Some("big-task") => true,
            _ => false,
        }
    }

    fn run(&self, task: &TaskDescription, cancel: &CancelFlag) -> Result<Payload, TaskFailure> {
        let input = task.serialized_task.as_slice();
        match task.runner() {
            Some("pi") => {
                let [seed, samples] = read_u64s::<2>(input, "pi")?;
                let inside = pi_inside(seed, samples, cancel).ok_or_else(killed)?;
                Ok(super::write_u64s(&[inside]))
            }
            Some("sum-squares") => {
                let [start, end] = read_u64s::<2>(input, "sum-squares")?;
                let total = sum_squares(start, end, cancel).ok_or_else(|| {
                    if cancel.is_cancelled() {
                        killed()
                    } else {
                        TaskFailure::new("java.lang.ArithmeticException", "sum of squares overflows 128 bits")
                    }
                })?;
                Ok(Payload::from(total.to_be_bytes().to_vec()))
            }
            Some("sleep") => {
                let [millis] = read_u64s::<1>(input, "sleep")?;
                // A sleep too long for the clock lasts until the task is killed.
                let until = Instant::now().checked_add(Duration::from_millis(millis));
                while until.is_none_or(|u| Instant::now() < u) {
                    if cancel.is_cancelled() {
                        return Err(killed());
                    }
                    let left = until.map_or(Duration::MAX, |u| u.saturating_duration_since(Instant::now()));
                    std::thread::sleep(left.min(Duration::from_millis(10)));
                }
                Ok(Payload::default())
            }
            Some("flaky") => {
                let [failures] = read_u64s::<1>(input, "flaky")?;
                if u64::try_from(task.attempt_number).unwrap_or(0) < failures {
                    Err(TaskFailure::new(
                        "java.lang.RuntimeException",
                        format!("flaky task fails attempt {} of partition {}", task.attempt_number, task.partition_id),
                    ))
                } else {
                    Ok(super::write_u64s(&[u64::try_from(task.attempt_number).unwrap_or(0)]))
                }
            }
            Some("big-result") => {
                let [size] = read_u64s::<1>(input, "big-result")?;
                // Bounded before anything is allocated, and allocated without aborting.
                let too_big = || {
                    TaskFailure::new(
                        "java.lang.OutOfMemoryError",
                        format!("a result of {size} bytes: at most {} can be sent", super::MAX_TASK_BYTES),
                    )
                };
                if size > super::MAX_TASK_BYTES {
                    return Err(too_big());
                }
                let size = usize::try_from(size).map_err(|_| too_big())?;
                let mut result = Vec::new();
                result.try_reserve_exact(size).map_err(|_| too_big())?;
                result.extend((0..size).map(|i| (i % 251) as u8));
                Ok(Payload::from(result))
            }
            Some("big-task") => Ok(super::write_u64s(&[input.len() as u64])),
            Some(other) => Err(TaskFailure::new(
                "java.lang.ClassNotFoundException",
                format!("no runner named {other:?}; built-in runners are pi, sum-squares, sleep, flaky, big-result, big-task"),
            )),
            None => Err(TaskFailure::new(
                "java.lang.IllegalArgumentException",
                format!("task {} names no runner (property {})", task.task_id, TaskDescription::RUNNER_PROPERTY),
            )),
        }
    }
}
