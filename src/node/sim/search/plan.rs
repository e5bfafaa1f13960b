//! What a seed draws: the cluster (its masters and their recovery store, workers, drivers and
//! their jobs) and the fault plan, with a text form that a regression case keeps and replays.

use std::fmt::Write as _;

use super::rng::Rng;
use crate::node::plant::Plant;
use crate::node::sim::store::Semantics;

/// The kinds of fault a plan may hold (`--faults`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultKind {
    /// A link's delay changes (connections reorder against one another, never within one).
    Delay,
    /// A connection resets: a frame is dropped, so the connection is cut, and both ends see it
    /// closed.
    Reset,
    /// A node is partitioned: its connections go silent (what is written on them is lost) and no
    /// new one can be made; when it heals, the silent ones close, as TCP's timeouts would.
    Partition,
    /// A node stops (SIGSTOP) and resumes: its clock jumps over the pause.
    Pause,
    /// A master or worker dies and restarts later, or an executor dies.
    Kill,
    /// A master's ZooKeeper session is lost.
    Session,
    /// An application that holds a worker's cores runs for a while (the worker is full).
    Fill,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::Delay,
        FaultKind::Reset,
        FaultKind::Partition,
        FaultKind::Pause,
        FaultKind::Kill,
        FaultKind::Session,
        FaultKind::Fill,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Delay => "delay",
            FaultKind::Reset => "reset",
            FaultKind::Partition => "partition",
            FaultKind::Pause => "pause",
            FaultKind::Kill => "kill",
            FaultKind::Session => "session",
            FaultKind::Fill => "fill",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A node of the plan, by its role and number (`master-0`, `worker-1`, `executor-3`: the
/// fourth executor started).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// Master number n (its address; whichever process runs there).
    Master(usize),
    /// Worker number n (its address).
    Worker(usize),
    /// Driver number n.
    Driver(usize),
    /// The n-th executor started (modulo how many there are).
    Executor(usize),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Master(n) => write!(f, "master-{n}"),
            Target::Worker(n) => write!(f, "worker-{n}"),
            Target::Driver(n) => write!(f, "driver-{n}"),
            Target::Executor(n) => write!(f, "executor-{n}"),
        }
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Target, String> {
        let (role, n) = s
            .rsplit_once('-')
            .ok_or_else(|| format!("not a node: {s}"))?;
        let n: usize = n.parse().map_err(|_| format!("not a node: {s}"))?;
        match role {
            "master" => Ok(Target::Master(n)),
            "worker" => Ok(Target::Worker(n)),
            "driver" => Ok(Target::Driver(n)),
            "executor" => Ok(Target::Executor(n)),
            _ => Err(format!("not a node: {s}")),
        }
    }
}

/// One fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The `link`-th open connection (modulo how many) delivers after `ms` from now on.
    Delay {
        /// Which connection.
        link: usize,
        /// Its new delay, ms.
        ms: u64,
    },
    /// The `link`-th open connection (modulo how many) resets.
    Reset {
        /// Which connection.
        link: usize,
    },
    /// `node` is partitioned for `ms`.
    Partition {
        /// Which node.
        node: Target,
        /// For how long, ms.
        ms: u64,
    },
    /// `node` is paused for `ms`.
    Pause {
        /// Which node.
        node: Target,
        /// For how long, ms.
        ms: u64,
    },
    /// `node` dies; a master or worker restarts `ms` later (at the heal when 0).
    Kill {
        /// Which node.
        node: Target,
        /// When it restarts, ms after.
        ms: u64,
    },
    /// Master `master`'s ZooKeeper session is lost.
    Session {
        /// Which master.
        master: usize,
    },
    /// An application holding a whole worker's cores runs for `ms`.
    Fill {
        /// The cores it asks for per executor.
        cores: i32,
        /// For how long, ms.
        ms: u64,
    },
}

impl Fault {
    /// Its kind.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Delay { .. } => FaultKind::Delay,
            Fault::Reset { .. } => FaultKind::Reset,
            Fault::Partition { .. } => FaultKind::Partition,
            Fault::Pause { .. } => FaultKind::Pause,
            Fault::Kill { .. } => FaultKind::Kill,
            Fault::Session { .. } => FaultKind::Session,
            Fault::Fill { .. } => FaultKind::Fill,
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Delay { link, ms } => write!(f, "delay link-{link} {ms}"),
            Fault::Reset { link } => write!(f, "reset link-{link}"),
            Fault::Partition { node, ms } => write!(f, "partition {node} {ms}"),
            Fault::Pause { node, ms } => write!(f, "pause {node} {ms}"),
            Fault::Kill { node, ms } => write!(f, "kill {node} {ms}"),
            Fault::Session { master } => write!(f, "session master-{master}"),
            Fault::Fill { cores, ms } => write!(f, "fill {cores} {ms}"),
        }
    }
}

/// A worker's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerSpec {
    /// Cores.
    pub cores: i32,
    /// Memory, MiB.
    pub memory: i32,
}

/// A driver: its application's executors and its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverSpec {
    /// Cores per executor (`None`: a whole worker's).
    pub executor_cores: Option<i32>,
    /// Memory per executor, MiB.
    pub memory: i32,
    /// The job's tasks.
    pub partitions: usize,
    /// When the job is submitted, ms.
    pub submit_at: u64,
}

/// Everything a run does: the cluster and the fault plan. [`Scenario::draw`] makes one from a
/// seed; [`Scenario::to_text`] and [`Scenario::parse`] keep it as a regression case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// The seed it was drawn from (also seeds the cores' own randomness).
    pub seed: u64,
    /// The bug planted in the cores (tests only).
    pub plant: Plant,
    /// The recovery store's semantics.
    pub store: Semantics,
    /// How many master addresses (ZooKeeper: as many master processes; file: one at a time).
    pub masters: usize,
    /// The workers.
    pub workers: Vec<WorkerSpec>,
    /// The drivers.
    pub drivers: Vec<DriverSpec>,
    /// How long a deposed leader takes to hear of it, ms (ZooKeeper).
    pub notify_ms: u64,
    /// The faults, by time (ms).
    pub faults: Vec<(u64, Fault)>,
}

/// What the seeds may draw (`--nodes`, `--faults`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knobs {
    /// Most masters.
    pub max_masters: usize,
    /// Most workers.
    pub max_workers: usize,
    /// Most drivers.
    pub max_drivers: usize,
    /// Most faults.
    pub max_faults: usize,
    /// The kinds of fault drawn.
    pub faults: Vec<FaultKind>,
    /// The stores drawn.
    pub stores: Vec<Semantics>,
    /// How long a dial waits for a paused or partitioned peer before it fails, ms
    /// ([`Cluster::set_dial_timeout`](crate::node::sim::Cluster::set_dial_timeout); 0: refused
    /// at once, the model before TCP's was).
    pub dial_timeout_ms: u64,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            max_masters: 3,
            max_workers: 3,
            max_drivers: 2,
            max_faults: 8,
            faults: FaultKind::ALL.to_vec(),
            stores: vec![Semantics::File, Semantics::ZooKeeper],
            dial_timeout_ms: crate::node::sim::DIAL_TIMEOUT.as_millis() as u64,
        }
    }
}

/// When the faults stop and everything heals, ms.
pub const FAULT_WINDOW_MS: u64 = 30_000;

impl Scenario {
    /// The scenario seed `seed` draws within `knobs`.
    pub fn draw(seed: u64, knobs: &Knobs) -> Scenario {
        let mut r = Rng::new(seed);
        let store = knobs.stores[r.below(knobs.stores.len().max(1)) % knobs.stores.len().max(1)];
        let masters = r.range(1, knobs.max_masters.max(1) as u64) as usize;
        let nworkers = r.range(1, knobs.max_workers.max(1) as u64) as usize;
        let workers: Vec<WorkerSpec> = (0..nworkers)
            .map(|_| WorkerSpec {
                cores: r.range(1, 4) as i32,
                memory: 512 * r.range(1, 4) as i32,
            })
            .collect();
        let biggest = workers.iter().map(|w| w.memory).max().unwrap_or(512);
        let ndrivers = r.range(1, knobs.max_drivers.max(1) as u64) as usize;
        let drivers = (0..ndrivers)
            .map(|_| {
                // An executor that fits some worker: the cluster has room for every job.
                let w = workers[r.below(workers.len())];
                DriverSpec {
                    executor_cores: if r.chance(30) {
                        None
                    } else {
                        Some(r.range(1, w.cores as u64) as i32)
                    },
                    memory: 256 * r.range(1, (w.memory.min(biggest) / 256) as u64) as i32,
                    partitions: r.range(1, 12) as usize,
                    submit_at: r.range(0, FAULT_WINDOW_MS),
                }
            })
            .collect();
        let nfaults = if knobs.faults.is_empty() {
            0
        } else {
            r.range(0, knobs.max_faults as u64) as usize
        };
        let mut faults: Vec<(u64, Fault)> = (0..nfaults)
            .filter_map(|_| {
                let at = r.range(0, FAULT_WINDOW_MS - 1);
                let kind = knobs.faults[r.below(knobs.faults.len())];
                let node = |r: &mut Rng| match r.below(4) {
                    0 => Target::Master(r.below(masters)),
                    1 => Target::Worker(r.below(nworkers)),
                    2 => Target::Executor(r.below(8)),
                    _ => Target::Driver(r.below(ndrivers)),
                };
                let fault = match kind {
                    FaultKind::Delay => Fault::Delay {
                        link: r.below(64),
                        ms: r.range(0, 400),
                    },
                    FaultKind::Reset => Fault::Reset { link: r.below(64) },
                    FaultKind::Partition => Fault::Partition {
                        node: node(&mut r),
                        ms: r.range(100, 20_000),
                    },
                    FaultKind::Pause => Fault::Pause {
                        node: node(&mut r),
                        ms: r.range(100, 20_000),
                    },
                    FaultKind::Kill => {
                        let node = match node(&mut r) {
                            Target::Driver(_) => Target::Executor(r.below(8)),
                            n => n,
                        };
                        Fault::Kill {
                            node,
                            ms: r.range(0, 15_000),
                        }
                    }
                    FaultKind::Session if store == Semantics::ZooKeeper => Fault::Session {
                        master: r.below(masters),
                    },
                    FaultKind::Session => return None,
                    FaultKind::Fill => Fault::Fill {
                        cores: workers[r.below(workers.len())].cores,
                        ms: r.range(1_000, 20_000),
                    },
                };
                Some((at, fault))
            })
            .collect();
        faults.sort_by_key(|(at, _)| *at);
        Scenario {
            seed,
            plant: Plant::None,
            store,
            masters,
            workers,
            drivers,
            notify_ms: r.range(0, 2_000),
            faults,
        }
    }

    /// The text form: one line a fact, `#` comments.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "seed {}", self.seed);
        let _ = writeln!(s, "plant {}", self.plant.name());
        let _ = writeln!(s, "store {}", self.store.name());
        let _ = writeln!(s, "masters {}", self.masters);
        let _ = writeln!(s, "notify {}", self.notify_ms);
        for w in &self.workers {
            let _ = writeln!(s, "worker {} {}", w.cores, w.memory);
        }
        for d in &self.drivers {
            let _ = writeln!(
                s,
                "driver {} {} {} {}",
                d.executor_cores.unwrap_or(0),
                d.memory,
                d.partitions,
                d.submit_at
            );
        }
        for (at, f) in &self.faults {
            let _ = writeln!(s, "fault {at} {f}");
        }
        s
    }

    /// A scenario from its text form.
    pub fn parse(text: &str) -> Result<Scenario, String> {
        let mut sc = Scenario {
            seed: 0,
            plant: Plant::None,
            store: Semantics::File,
            masters: 1,
            workers: Vec::new(),
            drivers: Vec::new(),
            notify_ms: 0,
            faults: Vec::new(),
        };
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |what: &str| format!("line {}: {what}: {line}", n + 1);
            let w: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| -> Result<u64, String> {
                w.get(i)
                    .and_then(|x| x.parse().ok())
                    .ok_or_else(|| bad("a number expected"))
            };
            let link = |i: usize| -> Result<usize, String> {
                w.get(i)
                    .and_then(|x| x.strip_prefix("link-"))
                    .and_then(|x| x.parse().ok())
                    .ok_or_else(|| bad("a link-N expected"))
            };
            let target = |i: usize| -> Result<Target, String> {
                w.get(i).ok_or_else(|| bad("a node expected"))?.parse()
            };
            match w[0] {
                "seed" => sc.seed = num(1)?,
                "plant" => {
                    sc.plant = w
                        .get(1)
                        .and_then(|p| Plant::from_name(p))
                        .ok_or_else(|| bad("unknown plant"))?
                }
                "store" => {
                    sc.store = match w.get(1) {
                        Some(&"file") => Semantics::File,
                        Some(&"zookeeper") => Semantics::ZooKeeper,
                        _ => return Err(bad("file or zookeeper expected")),
                    }
                }
                "masters" => sc.masters = num(1)?.max(1) as usize,
                "notify" => sc.notify_ms = num(1)?,
                "worker" => sc.workers.push(WorkerSpec {
                    cores: num(1)? as i32,
                    memory: num(2)? as i32,
                }),
                "driver" => sc.drivers.push(DriverSpec {
                    executor_cores: Some(num(1)? as i32).filter(|c| *c > 0),
                    memory: num(2)? as i32,
                    partitions: num(3)? as usize,
                    submit_at: num(4)?,
                }),
                "fault" => {
                    let at = num(1)?;
                    let fault = match w.get(2).copied() {
                        Some("delay") => Fault::Delay {
                            link: link(3)?,
                            ms: num(4)?,
                        },
                        Some("reset") => Fault::Reset { link: link(3)? },
                        Some("partition") => Fault::Partition {
                            node: target(3)?,
                            ms: num(4)?,
                        },
                        Some("pause") => Fault::Pause {
                            node: target(3)?,
                            ms: num(4)?,
                        },
                        Some("kill") => Fault::Kill {
                            node: target(3)?,
                            ms: num(4)?,
                        },
                        Some("session") => match target(3)? {
                            Target::Master(master) => Fault::Session { master },
                            _ => return Err(bad("a master expected")),
                        },
                        Some("fill") => Fault::Fill {
                            cores: num(3)? as i32,
                            ms: num(4)?,
                        },
                        _ => return Err(bad("unknown fault")),
                    };
                    sc.faults.push((at, fault));
                }
                _ => return Err(bad("unknown line")),
            }
        }
        if sc.workers.is_empty() {
            return Err("a scenario has a worker at least".into());
        }
        sc.faults.sort_by_key(|(at, _)| *at);
        Ok(sc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drawn_scenario_reads_back_from_its_text() {
        for seed in 0..200 {
            let s = Scenario::draw(seed, &Knobs::default());
            assert_eq!(
                Scenario::parse(&s.to_text()).as_ref(),
                Ok(&s),
                "{}",
                s.to_text()
            );
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_scenario() {
        let k = Knobs::default();
        assert_eq!(Scenario::draw(99, &k), Scenario::draw(99, &k));
        assert_ne!(Scenario::draw(99, &k), Scenario::draw(100, &k));
    }
}
