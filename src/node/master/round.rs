//! One scheduling round over every waiting application (Spark's `startExecutorsOnWorkers`), as a
//! pure function of the workers' free resources: FIFO over the applications; for each, the usable
//! workers (alive, with the memory, cores and resources of one executor free) sorted by free cores,
//! most first; the cores [`super::schedule::schedule_executors_on_workers`] assigns each become executors of the
//! application's size, and what they take is no longer free for the next application.

use super::schedule::{ExecutorDemand, WorkerSlot};

/// A worker as the round sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundWorker {
    /// Whether executors may go there (ALIVE: not dead, not decommissioned).
    pub alive: bool,
    /// Its free resources, updated as the round hands them out.
    pub free: WorkerSlot,
}

/// One executor to launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Index of the application in the round's list.
    pub app: usize,
    /// Index of the worker in the round's list.
    pub worker: usize,
    /// Cores of the executor.
    pub cores: i32,
}

/// Runs one round: the executors to launch, in order. `workers`' free resources are reduced by
/// what the grants take. The workers are kept in an index by free cores
/// ([`super::schedule::WorkerIndex`]) rather than sorted for each application.
pub fn schedule_round(
    workers: &mut [RoundWorker],
    apps: &[ExecutorDemand],
    spread_out: bool,
) -> Vec<Grant> {
    super::schedule::schedule_round_indexed(workers, apps, spread_out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn demand(cores_per_executor: Option<i32>, memory: i32, max_cores: i32) -> ExecutorDemand {
        ExecutorDemand {
            cores_per_executor,
            memory_per_executor: memory,
            resources_per_executor: BTreeMap::new(),
            cores_left: max_cores,
            executors_now: 0,
            executor_limit: usize::MAX,
        }
    }

    fn worker(alive: bool, cores: i32, memory: i32) -> RoundWorker {
        RoundWorker {
            alive,
            free: WorkerSlot::new(cores, memory),
        }
    }

    #[test]
    fn first_application_is_served_first_and_later_ones_get_what_is_left() {
        let mut workers = vec![worker(true, 4, 4096), worker(true, 4, 4096)];
        let apps = vec![demand(Some(2), 1024, 6), demand(Some(2), 1024, i32::MAX)];
        let grants = schedule_round(&mut workers, &apps, true);
        let first: i32 = grants.iter().filter(|g| g.app == 0).map(|g| g.cores).sum();
        let second: i32 = grants.iter().filter(|g| g.app == 1).map(|g| g.cores).sum();
        assert_eq!((first, second), (6, 2));
        assert!(workers.iter().all(|w| w.free.cores_free == 0));
    }

    #[test]
    fn dead_workers_and_workers_without_memory_get_nothing() {
        let mut workers = vec![
            worker(false, 8, 8192),
            worker(true, 8, 512),
            worker(true, 2, 2048),
        ];
        let grants = schedule_round(&mut workers, &[demand(None, 1024, i32::MAX)], true);
        assert_eq!(
            grants,
            vec![Grant {
                app: 0,
                worker: 2,
                cores: 2
            }]
        );
    }

    #[test]
    fn workers_with_most_free_cores_are_filled_first_when_consolidating() {
        let mut workers = vec![worker(true, 2, 4096), worker(true, 6, 4096)];
        let grants = schedule_round(&mut workers, &[demand(Some(1), 256, 3)], false);
        assert!(grants.iter().all(|g| g.worker == 1));
        assert_eq!(grants.len(), 3);
    }
}
