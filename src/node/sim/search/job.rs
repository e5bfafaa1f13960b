//! The simulator's job: each partition's task returns its partition's number, and the job sums
//! them (so that a wrong or lost result shows in the sum). Needs no runner of `reference`.

use std::sync::Arc;

use crate::messages::Payload;
use crate::node::driver::Job;
use crate::node::sim::TaskFn;
use crate::wire::TaskFailure;

/// Sums `0..partitions`, one partition per task.
#[derive(Debug, Clone, Copy)]
pub struct SumJob {
    /// Tasks.
    pub partitions: usize,
}

impl SumJob {
    /// What a successful run answers.
    pub fn expected(&self) -> String {
        let n = self.partitions as u64;
        format!("sum {}", n * n.saturating_sub(1) / 2)
    }
}

impl Job for SumJob {
    fn name(&self) -> String {
        format!("sum of {} partitions", self.partitions)
    }
    fn runner(&self) -> &'static str {
        "sim-sum"
    }
    fn partitions(&self) -> usize {
        self.partitions
    }
    fn input(&self, p: usize) -> Payload {
        Payload::copy_from(&(p as u64).to_be_bytes())
    }
    fn combine(&self, results: &[Payload]) -> Result<String, String> {
        let mut total = 0u64;
        for r in results {
            let b: [u8; 8] = r
                .as_slice()
                .try_into()
                .map_err(|_| format!("a result of {} bytes, not 8", r.len()))?;
            total = total.wrapping_add(u64::from_be_bytes(b));
        }
        Ok(format!("sum {total}"))
    }
}

/// The executors' task: its input back.
pub fn echo_tasks() -> TaskFn {
    Arc::new(|task| {
        let input = task.serialized_task.as_slice();
        if input.len() == 8 {
            Ok(Payload::copy_from(input))
        } else {
            Err(TaskFailure::new(
                "java.lang.IllegalArgumentException",
                "a sim-sum task's input is 8 bytes",
            ))
        }
    })
}
