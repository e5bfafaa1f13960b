//! How the master spreads an application's executors over workers: Spark's
//! `scheduleExecutorsOnWorkers`, as a pure function of the free resources.
//!
//! Cores are handed out in steps of the executor size (one core when the application sets no
//! executor size, in which case each worker runs at most one executor taking every core assigned
//! there). In spread-out mode each pass gives every usable worker one step before any worker gets a
//! second; in consolidate mode a worker is filled before the next is used. A new executor needs the
//! memory (and other resources) of one executor free on the worker and the application under its
//! executor limit.

use std::collections::BTreeMap;

/// A worker's free resources, as the scheduler sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSlot {
    /// Cores not used by executors or drivers.
    pub cores_free: i32,
    /// Memory not used, MiB.
    pub memory_free: i32,
    /// Free units (addresses) of each custom resource.
    pub resources_free: BTreeMap<String, i64>,
}

impl WorkerSlot {
    /// A worker with these free cores and memory and no custom resources.
    pub fn new(cores_free: i32, memory_free: i32) -> Self {
        WorkerSlot {
            cores_free,
            memory_free,
            resources_free: BTreeMap::new(),
        }
    }
}

/// What one application wants in this round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutorDemand {
    /// Cores per executor; `None` for one executor per worker with all cores assigned there.
    pub cores_per_executor: Option<i32>,
    /// Memory per executor, MiB.
    pub memory_per_executor: i32,
    /// Custom resource units per executor.
    pub resources_per_executor: BTreeMap<String, i64>,
    /// Cores the application may still be given (max cores minus cores granted).
    pub cores_left: i32,
    /// Executors the application has now.
    pub executors_now: usize,
    /// Most executors the application may have (its executor limit).
    pub executor_limit: usize,
}

impl ExecutorDemand {
    /// The smallest number of cores one executor takes.
    pub fn min_cores(&self) -> i32 {
        self.cores_per_executor.unwrap_or(1).max(1)
    }

    /// Whether a worker can host one executor of this application at all (Spark's usable-worker
    /// filter, applied before scheduling).
    pub fn fits(&self, w: &WorkerSlot) -> bool {
        w.memory_free >= self.memory_per_executor
            && w.cores_free >= self.min_cores()
            && self
                .resources_per_executor
                .iter()
                .all(|(name, need)| w.resources_free.get(name).copied().unwrap_or(0) >= *need)
    }
}

/// Cores assigned to each worker of `workers` (same order). `workers` should already be the usable
/// ones, sorted as the master prefers them (most free cores first).
pub fn schedule_executors_on_workers(
    demand: &ExecutorDemand,
    workers: &[WorkerSlot],
    spread_out: bool,
) -> Vec<i32> {
    let step = demand.min_cores();
    let one_per_worker = demand.cores_per_executor.is_none();
    let n = workers.len();
    let mut cores = vec![0i32; n];
    let mut executors = vec![0usize; n];
    let free_total = workers
        .iter()
        .fold(0i64, |acc, w| acc + i64::from(w.cores_free.max(0)));
    let mut to_assign = i64::from(demand.cores_left.max(0)).min(free_total);

    // Spark sums the executors assigned so far on every check; keeping the running total gives
    // the same decisions in linear rather than quadratic time.
    let mut assigned_total = 0usize;
    let can_launch = |pos: usize,
                      cores: &[i32],
                      executors: &[usize],
                      to_assign: i64,
                      assigned_total: usize|
     -> bool {
        let w = &workers[pos];
        let keep = to_assign >= i64::from(step);
        let enough_cores = w.cores_free - cores[pos] >= step;
        let new_executor = !one_per_worker || executors[pos] == 0;
        if !new_executor {
            return keep && enough_cores;
        }
        let placed = executors[pos] as i64;
        let enough_memory = i64::from(w.memory_free)
            - placed * i64::from(demand.memory_per_executor)
            >= i64::from(demand.memory_per_executor);
        let enough_resources = demand.resources_per_executor.iter().all(|(name, need)| {
            let free = w.resources_free.get(name).copied().unwrap_or(0);
            free - placed * need >= *need
        });
        let under_limit =
            assigned_total.saturating_add(demand.executors_now) < demand.executor_limit;
        keep && enough_cores && enough_memory && enough_resources && under_limit
    };

    let mut free: Vec<usize> = (0..n)
        .filter(|p| can_launch(*p, &cores, &executors, to_assign, assigned_total))
        .collect();
    while !free.is_empty() {
        for &pos in &free {
            while can_launch(pos, &cores, &executors, to_assign, assigned_total) {
                to_assign -= i64::from(step);
                cores[pos] += step;
                if one_per_worker {
                    if executors[pos] == 0 {
                        assigned_total += 1;
                    }
                    executors[pos] = 1;
                } else {
                    executors[pos] += 1;
                    assigned_total += 1;
                }
                if spread_out {
                    break;
                }
            }
        }
        free.retain(|p| can_launch(*p, &cores, &executors, to_assign, assigned_total));
    }
    cores
}

/// The executors to start on a worker given `assigned` cores: their core counts.
pub fn executors_for(assigned: i32, cores_per_executor: Option<i32>) -> Vec<i32> {
    match cores_per_executor {
        _ if assigned <= 0 => Vec::new(),
        Some(c) if c > 0 => vec![c; (assigned / c) as usize],
        _ => vec![assigned],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(
        memory: i32,
        cores_per_executor: Option<i32>,
        max_cores: Option<i32>,
        limit: Option<usize>,
    ) -> ExecutorDemand {
        ExecutorDemand {
            cores_per_executor,
            memory_per_executor: memory,
            resources_per_executor: BTreeMap::new(),
            cores_left: max_cores.unwrap_or(i32::MAX),
            executors_now: 0,
            executor_limit: limit.unwrap_or(usize::MAX),
        }
    }

    fn three_workers() -> Vec<WorkerSlot> {
        vec![WorkerSlot::new(10, 4096); 3]
    }

    /// (what, memory, cores per executor, max cores, executor limit, spread-out result, consolidated result)
    type Case = (
        &'static str,
        i32,
        Option<i32>,
        Option<i32>,
        Option<usize>,
        [i32; 3],
        [i32; 3],
    );

    const CASES: &[Case] = &[
        ("basic", 1024, None, None, None, [10, 10, 10], [10, 10, 10]),
        (
            "more memory",
            3072,
            None,
            None,
            None,
            [10, 10, 10],
            [10, 10, 10],
        ),
        (
            "memory too large for any worker",
            5000,
            None,
            None,
            None,
            [0, 0, 0],
            [0, 0, 0],
        ),
        (
            "max cores 8",
            1024,
            None,
            Some(8),
            None,
            [3, 3, 2],
            [8, 0, 0],
        ),
        (
            "max cores 16",
            1024,
            None,
            Some(16),
            None,
            [6, 5, 5],
            [10, 6, 0],
        ),
        (
            "cores per executor 2",
            256,
            Some(2),
            None,
            None,
            [10, 10, 10],
            [10, 10, 10],
        ),
        (
            "memory allows four 2-core executors",
            1024,
            Some(2),
            None,
            None,
            [8, 8, 8],
            [8, 8, 8],
        ),
        (
            "cores per executor 3",
            256,
            Some(3),
            None,
            None,
            [9, 9, 9],
            [9, 9, 9],
        ),
        (
            "memory caps executors per worker",
            3072,
            Some(2),
            None,
            None,
            [2, 2, 2],
            [2, 2, 2],
        ),
        (
            "cores per executor 2, max cores 4",
            256,
            Some(2),
            Some(4),
            None,
            [2, 2, 0],
            [4, 0, 0],
        ),
        (
            "cores per executor 2, max cores 10",
            256,
            Some(2),
            Some(10),
            None,
            [4, 4, 2],
            [10, 0, 0],
        ),
        (
            "cores per executor 2, max cores 20",
            256,
            Some(2),
            Some(20),
            None,
            [8, 6, 6],
            [10, 10, 0],
        ),
        (
            "executor limit 0",
            1024,
            None,
            None,
            Some(0),
            [0, 0, 0],
            [0, 0, 0],
        ),
        (
            "executor limit 2",
            1024,
            None,
            None,
            Some(2),
            [10, 10, 0],
            [10, 10, 0],
        ),
        (
            "executor limit 5",
            1024,
            None,
            None,
            Some(5),
            [10, 10, 10],
            [10, 10, 10],
        ),
        (
            "executor limit 2, max cores 16",
            1024,
            None,
            Some(16),
            Some(2),
            [8, 8, 0],
            [10, 6, 0],
        ),
        (
            "executor limit 2, cores per executor 2",
            256,
            Some(2),
            None,
            Some(2),
            [2, 2, 0],
            [4, 0, 0],
        ),
        (
            "every limit",
            256,
            Some(2),
            Some(20),
            Some(5),
            [4, 4, 2],
            [10, 0, 0],
        ),
    ];

    #[test]
    fn allocation_matches_spark_in_spread_out_and_consolidate_modes() {
        for (what, memory, cpe, max, limit, spread, packed) in CASES {
            let d = demand(*memory, *cpe, *max, *limit);
            let workers = three_workers();
            assert_eq!(
                schedule_executors_on_workers(&d, &workers, true),
                spread.to_vec(),
                "{what}, spread out"
            );
            assert_eq!(
                schedule_executors_on_workers(&d, &workers, false),
                packed.to_vec(),
                "{what}, consolidated"
            );
        }
    }

    #[test]
    fn existing_executors_count_against_the_limit() {
        let mut d = demand(1024, Some(2), None, Some(3));
        d.executors_now = 2;
        assert_eq!(
            schedule_executors_on_workers(&d, &three_workers(), true),
            vec![2, 0, 0]
        );
    }

    #[test]
    fn custom_resources_cap_the_executors_a_worker_takes() {
        let mut d = demand(512, Some(1), None, None);
        d.resources_per_executor.insert("gpu".into(), 1);
        let mut w = WorkerSlot::new(4, 4096);
        w.resources_free.insert("gpu".into(), 2);
        let without = WorkerSlot::new(4, 4096);
        assert!(!d.fits(&without));
        assert_eq!(schedule_executors_on_workers(&d, &[w], false), vec![2]);
    }

    #[test]
    fn assigned_cores_become_executors_of_the_requested_size() {
        assert_eq!(executors_for(9, Some(3)), vec![3, 3, 3]);
        assert_eq!(executors_for(10, None), vec![10]);
        assert_eq!(executors_for(0, None), Vec::<i32>::new());
    }

    #[test]
    fn assignment_never_exceeds_free_cores_or_cores_left() {
        for seed in 0..200u64 {
            let mut x = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut next = |m: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % m) as i32
            };
            let workers: Vec<WorkerSlot> = (0..1 + next(6))
                .map(|_| WorkerSlot::new(next(9), next(5000)))
                .collect();
            let cpe = if next(2) == 0 {
                None
            } else {
                Some(1 + next(4))
            };
            let d = demand(1 + next(2000), cpe, Some(next(40)), Some(next(8) as usize));
            for spread in [true, false] {
                let got = schedule_executors_on_workers(&d, &workers, spread);
                assert!(got.iter().sum::<i32>() <= d.cores_left);
                for (g, w) in got.iter().zip(&workers) {
                    assert!(*g <= w.cores_free, "seed {seed}");
                    let n = executors_for(*g, d.cores_per_executor).len() as i64;
                    assert!(
                        n * i64::from(d.memory_per_executor) <= i64::from(w.memory_free),
                        "seed {seed}"
                    );
                }
                let total: usize = got
                    .iter()
                    .map(|g| executors_for(*g, d.cores_per_executor).len())
                    .sum();
                assert!(total <= d.executor_limit, "seed {seed}");
            }
        }
    }
}
