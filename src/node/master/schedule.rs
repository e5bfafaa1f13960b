//! How the master spreads an application's executors over workers: Spark's
//! `scheduleExecutorsOnWorkers`, as a pure function of the free resources.
//!
//! Cores are handed out in steps of the executor size (one core when the application sets no
//! executor size, in which case each worker runs at most one executor taking every core assigned
//! there). In spread-out mode each pass gives every usable worker one step before any worker gets a
//! second; in consolidate mode a worker is filled before the next is used. A new executor needs the
//! memory (and other resources) of one executor free on the worker and the application under its
//! executor limit.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use super::round::{Grant, RoundWorker};

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

/// The alive workers ordered as the round prefers them: most free cores first, ties in worker
/// order. Kept up to date as the round hands cores out, so no application pays for sorting every
/// worker: each takes the first usable workers it needs and stops when no worker left has the
/// cores of one executor.
#[derive(Debug, Clone, Default)]
pub struct WorkerIndex {
    by_cores: BTreeSet<(Reverse<i32>, usize)>,
}

impl WorkerIndex {
    /// Indexes `workers`' alive ones by free cores.
    pub fn new(workers: &[RoundWorker]) -> Self {
        WorkerIndex {
            by_cores: workers
                .iter()
                .enumerate()
                .filter(|(_, w)| w.alive)
                .map(|(i, w)| (Reverse(w.free.cores_free), i))
                .collect(),
        }
    }

    /// Worker `index`'s free cores went from `before` to `after`.
    pub fn moved(&mut self, index: usize, before: i32, after: i32) {
        if self.by_cores.remove(&(Reverse(before), index)) {
            self.by_cores.insert((Reverse(after), index));
        }
    }

    /// The workers `demand` may use (those where one of its executors fits), in preference order,
    /// at most `limit` of them. Stops at the first worker without the cores of one executor.
    pub fn usable(
        &self,
        workers: &[RoundWorker],
        demand: &ExecutorDemand,
        limit: usize,
    ) -> Vec<usize> {
        let min = demand.min_cores();
        self.by_cores
            .iter()
            .take_while(|(Reverse(cores), _)| *cores >= min)
            .map(|&(_, i)| i)
            .filter(|&i| workers.get(i).is_some_and(|w| demand.fits(&w.free)))
            .take(limit)
            .collect()
    }
}

/// How many of the usable workers (in preference order) [`schedule_executors_on_workers`] needs
/// to see to decide exactly as it would over all of them. Every worker it gives cores to is among
/// the first `ceil(cores_left / step)` usable ones (each such worker receives at least one step in
/// the first pass, and the first pass stops when the cores left are below one step), and that many
/// usable workers hold at least `cores_left` free cores, so the cores it hands out are the same.
pub fn workers_needed(demand: &ExecutorDemand) -> usize {
    let step = i64::from(demand.min_cores());
    let left = i64::from(demand.cores_left.max(0));
    usize::try_from((left + step - 1) / step).unwrap_or(usize::MAX)
}

/// One scheduling round over `apps` (FIFO) with an index of the workers by free cores instead of
/// a sort per application: the decisions of filtering and sorting every worker for each
/// application, in less time. `workers`' free resources are reduced by what the grants take.
pub fn schedule_round_indexed(
    workers: &mut [RoundWorker],
    apps: &[ExecutorDemand],
    spread_out: bool,
) -> Vec<Grant> {
    let mut grants = Vec::new();
    let mut index = WorkerIndex::new(workers);
    let mut slots: Vec<WorkerSlot> = Vec::new();
    for (a, demand) in apps.iter().enumerate() {
        if demand.cores_left < demand.min_cores() {
            continue;
        }
        let usable = index.usable(workers, demand, workers_needed(demand));
        if usable.is_empty() {
            continue;
        }
        slots.clear();
        slots.extend(usable.iter().map(|&w| workers[w].free.clone()));
        let assigned = schedule_executors_on_workers(demand, &slots, spread_out);
        for (pos, &cores) in assigned.iter().enumerate() {
            if cores <= 0 {
                continue;
            }
            let w = usable[pos];
            let before = workers[w].free.cores_free;
            grant(workers, a, demand, w, cores, &mut grants);
            index.moved(w, before, workers[w].free.cores_free);
        }
    }
    grants
}

/// Turns the `cores` assigned to worker `w` into executors of application `a`: their grants, and
/// what they take off the worker's free resources.
fn grant(
    workers: &mut [RoundWorker],
    a: usize,
    demand: &ExecutorDemand,
    w: usize,
    cores: i32,
    grants: &mut Vec<Grant>,
) {
    for size in executors_for(cores, demand.cores_per_executor) {
        let free = &mut workers[w].free;
        free.cores_free -= size;
        free.memory_free -= demand.memory_per_executor;
        for (name, need) in &demand.resources_per_executor {
            if let Some(have) = free.resources_free.get_mut(name) {
                *have -= need;
            }
        }
        grants.push(Grant {
            app: a,
            worker: w,
            cores: size,
        });
    }
}

/// The same round without the index, as Spark writes it: for every application, filter and sort
/// all the workers (most free cores first, ties in worker order) and schedule over all the usable
/// ones. [`schedule_round_indexed`] decides exactly as this does, faster; this one is kept as the
/// reference the tests and `cargo bench --bench master` compare it with.
pub fn schedule_round_sorting(
    workers: &mut [RoundWorker],
    apps: &[ExecutorDemand],
    spread_out: bool,
) -> Vec<Grant> {
    let mut grants = Vec::new();
    for (a, demand) in apps.iter().enumerate() {
        if demand.cores_left < demand.min_cores() {
            continue;
        }
        let mut usable: Vec<usize> = (0..workers.len())
            .filter(|&w| workers[w].alive && demand.fits(&workers[w].free))
            .collect();
        usable.sort_by(|x, y| {
            workers[*y]
                .free
                .cores_free
                .cmp(&workers[*x].free.cores_free)
        });
        let slots: Vec<WorkerSlot> = usable.iter().map(|&w| workers[w].free.clone()).collect();
        let assigned = schedule_executors_on_workers(demand, &slots, spread_out);
        for (pos, &cores) in assigned.iter().enumerate() {
            grant(workers, a, demand, usable[pos], cores, &mut grants);
        }
    }
    grants
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

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, m: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % m
        }
    }

    fn random_round(rng: &mut Rng) -> (Vec<RoundWorker>, Vec<ExecutorDemand>) {
        let workers = (0..rng.below(40))
            .map(|_| {
                let mut free = WorkerSlot::new(rng.below(13) as i32, 256 * rng.below(33) as i32);
                if rng.below(3) == 0 {
                    free.resources_free
                        .insert("gpu".into(), rng.below(5) as i64);
                }
                RoundWorker {
                    alive: rng.below(8) != 0,
                    free,
                }
            })
            .collect();
        let apps = (0..1 + rng.below(12))
            .map(|_| {
                let mut resources = BTreeMap::new();
                if rng.below(4) == 0 {
                    resources.insert("gpu".to_string(), 1 + rng.below(2) as i64);
                }
                ExecutorDemand {
                    cores_per_executor: match rng.below(3) {
                        0 => None,
                        _ => Some(1 + rng.below(4) as i32),
                    },
                    memory_per_executor: 256 * (1 + rng.below(8) as i32),
                    resources_per_executor: resources,
                    cores_left: match rng.below(4) {
                        0 => i32::MAX,
                        1 => rng.below(3) as i32,
                        _ => rng.below(60) as i32,
                    },
                    executors_now: rng.below(3) as usize,
                    executor_limit: match rng.below(3) {
                        0 => usize::MAX,
                        _ => rng.below(12) as usize,
                    },
                }
            })
            .collect();
        (workers, apps)
    }

    #[test]
    fn indexed_round_decides_as_sorting_every_worker_for_every_application() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut granted = 0;
        for case in 0..3000 {
            let (workers, apps) = random_round(&mut rng);
            for spread in [true, false] {
                let mut old = workers.clone();
                let mut new = workers.clone();
                let want = schedule_round_sorting(&mut old, &apps, spread);
                let got = schedule_round_indexed(&mut new, &apps, spread);
                assert_eq!(got, want, "case {case}, spread out {spread}");
                assert_eq!(
                    new, old,
                    "case {case}, spread out {spread}: free resources after"
                );
                granted += got.len();
            }
        }
        // The inputs are not all trivial: many executors were placed.
        assert!(granted > 10_000, "only {granted} grants");
    }

    #[test]
    fn index_keeps_most_free_cores_first_and_ties_in_worker_order() {
        let mut workers: Vec<RoundWorker> = [3, 8, 3, 0, 8]
            .iter()
            .map(|&c| RoundWorker {
                alive: true,
                free: WorkerSlot::new(c, 4096),
            })
            .collect();
        workers[4].alive = false;
        let mut index = WorkerIndex::new(&workers);
        let d = demand(1024, Some(2), None, None);
        assert_eq!(index.usable(&workers, &d, usize::MAX), vec![1, 0, 2]);
        assert_eq!(index.usable(&workers, &d, 2), vec![1, 0]);
        workers[1].free.cores_free = 1;
        index.moved(1, 8, 1);
        assert_eq!(index.usable(&workers, &d, usize::MAX), vec![0, 2]);
        assert_eq!(workers_needed(&demand(1, Some(3), Some(7), None)), 3);
        assert_eq!(workers_needed(&demand(1, None, Some(0), None)), 0);
    }
}
