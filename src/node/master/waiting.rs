//! Why an application or a driver waits (SPEC §16): the reason that binds it, found after each
//! scheduling round from the workers' free resources as the round left them, and shown in the
//! state answer (`ApplicationInfo.waitingReason`, `DriverInfo.waitingReason`), the web UI, `/json`
//! and `sparkwire status`.
//!
//! Each reason begins with one of the [`Reason`] phrases SPEC §16 lists, then `: ` and the
//! figures that make it bind. Spark's master says none of this: its driver only repeats "Initial
//! job has not accepted any resources".

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::state::{AppRec, WorkerRec};
use super::MasterCore;
use crate::messages::{ExecutorState, RecoveryState};

/// The reasons SPEC §16 lists, by the phrase each begins with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No worker is ALIVE (and connected).
    NoAliveWorker,
    /// Workers of other Spark releases could take one executor; none of the application's own
    /// release can (SPEC §15.5).
    NoWorkerOfItsRelease,
    /// No alive worker has the cores, memory and custom resources of one executor (or of the
    /// driver) free.
    NoWorkerWithRoom,
    /// A worker would have the cores were it not for the drivers it runs.
    CoresHeldByDrivers,
    /// `spark.cores.max` leaves fewer cores than one executor takes.
    CoresMaxReached,
    /// The application asked for no more executors (its executor limit).
    ExecutorLimitReached,
    /// Executors were launched and ended abnormally, none running since.
    ExecutorsEnding,
}

impl Reason {
    /// Every reason, in the order SPEC §16 lists them.
    pub const ALL: [Reason; 7] = [
        Reason::ExecutorsEnding,
        Reason::ExecutorLimitReached,
        Reason::CoresMaxReached,
        Reason::NoAliveWorker,
        Reason::NoWorkerOfItsRelease,
        Reason::CoresHeldByDrivers,
        Reason::NoWorkerWithRoom,
    ];

    /// The phrase a waiting reason of this kind begins with.
    pub fn phrase(self) -> &'static str {
        match self {
            Reason::NoAliveWorker => "no alive worker",
            Reason::NoWorkerOfItsRelease => "no worker of its release has room",
            Reason::NoWorkerWithRoom => "no alive worker has room",
            Reason::CoresHeldByDrivers => "cores held by drivers",
            Reason::CoresMaxReached => "spark.cores.max reached",
            Reason::ExecutorLimitReached => "executor limit reached",
            Reason::ExecutorsEnding => "executors launched but ending",
        }
    }

    /// The reason a waiting reason's text gives, by its first phrase.
    pub fn of(text: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| {
            text.strip_prefix(r.phrase())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
        })
    }
}

/// What one executor (or one driver) needs of a worker.
struct Need {
    cores: i32,
    memory: i32,
    resources: BTreeMap<String, i64>,
}

impl Need {
    fn describe(&self, what: &str) -> String {
        let mut s = format!(
            "{what} takes {} core{}, {} MiB",
            self.cores,
            plural(self.cores),
            self.memory
        );
        for (name, n) in &self.resources {
            let _ = write!(s, ", {n} {name}");
        }
        s
    }
}

fn plural(n: i32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A worker as the reasons see it: its free figures after the round, and the cores its drivers
/// hold.
struct Free<'a> {
    id: &'a str,
    cores: i32,
    memory: i32,
    resources: BTreeMap<String, i64>,
    driver_cores: i32,
}

impl Free<'_> {
    /// What of `need` this worker lacks: `cores`, `memory`, resource names.
    fn short(&self, need: &Need) -> Vec<String> {
        let mut short = Vec::new();
        if self.cores < need.cores {
            short.push("cores".to_string());
        }
        if self.memory < need.memory {
            short.push("memory".to_string());
        }
        for (name, n) in &need.resources {
            if self.resources.get(name).copied().unwrap_or(0) < *n {
                short.push(name.clone());
            }
        }
        short
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "{} has {} core{}, {} MiB",
            self.id,
            self.cores,
            plural(self.cores),
            self.memory
        );
        for (name, n) in &self.resources {
            let _ = write!(s, ", {n} {name}");
        }
        s.push_str(" free");
        s
    }
}

/// The reason no worker of `workers` takes `need` (the workers are the alive ones the
/// application or driver may use; none fits): cores held by drivers when a worker would have
/// room without them, else what is short on the best worker (the one short of the fewest things,
/// then with the most free cores, then memory).
fn no_room(need: &Need, what: &str, workers: &[Free<'_>]) -> String {
    let held = workers.iter().find(|w| {
        w.short(need) == ["cores"] && w.cores.saturating_add(w.driver_cores) >= need.cores
    });
    if let Some(w) = held {
        return format!(
            "{}: {}; {} ({} core{} held by drivers)",
            Reason::CoresHeldByDrivers.phrase(),
            need.describe(what),
            w.describe(),
            w.driver_cores,
            plural(w.driver_cores)
        );
    }
    let best = workers
        .iter()
        .min_by_key(|w| (w.short(need).len(), -w.cores, -w.memory, w.id));
    match best {
        Some(w) => format!(
            "{}: {}; {} short; best worker: {}",
            Reason::NoWorkerWithRoom.phrase(),
            need.describe(what),
            w.short(need).join(" and "),
            w.describe()
        ),
        None => Reason::NoAliveWorker.phrase().to_string(),
    }
}

/// How many workers of other releases with room a waiting application's reason names; it
/// counts the rest.
pub(crate) const ROOM_NAMED: usize = 5;

/// Two Spark releases (or none) whose executors and drivers can talk: SPEC §15.5's rule, with
/// `compatible` deciding between two named releases.
pub(crate) fn releases_agree(
    app: Option<&str>,
    worker: Option<&str>,
    compatible: fn(&str, &str) -> bool,
) -> bool {
    match (app, worker) {
        (Some(a), Some(w)) => compatible(a, w),
        _ => true,
    }
}

impl MasterCore {
    /// Worker `w` may take executors of application `a` (SPEC §15.5).
    pub(crate) fn may_place(&self, a: &AppRec, w: &WorkerRec) -> bool {
        releases_agree(
            a.spark_release.as_deref(),
            w.spark_release.as_deref(),
            self.config.release_compatible,
        )
    }

    /// The schedulable workers as the reasons see them.
    fn free_workers(&self) -> Vec<(&WorkerRec, Free<'_>)> {
        self.workers
            .schedulable()
            .into_iter()
            .filter_map(|id| self.workers.get(&id))
            .map(|w| {
                let driver_cores = w
                    .drivers
                    .iter()
                    .filter_map(|d| self.drivers.get(d))
                    .map(|d| d.desc.cores.max(0))
                    .sum();
                let free = Free {
                    id: &w.id,
                    cores: w.cores_free(),
                    memory: w.memory_free(),
                    resources: self.resources_free(w),
                    driver_cores,
                };
                (w, free)
            })
            .collect()
    }

    /// Sets each active application's and each waiting driver's reason from the state the
    /// round left (SPEC §16).
    pub(crate) fn update_waiting(&mut self) {
        if self.ha.state() != RecoveryState::Alive {
            return;
        }
        for (id, reason) in self.app_reasons() {
            let before = self.apps.get(&id).and_then(|a| a.waiting.clone());
            if reason != before {
                match &reason {
                    Some(why) => tracing::info!("Application {id} waits: {why}"),
                    None => tracing::info!("Application {id} no longer waits"),
                }
            }
            if reason.is_none() {
                // Steady again (or never failed): an old failure binds no more.
                self.apps.clear_failure(&id);
            }
            self.apps.set_waiting(&id, reason);
        }
        let driver_reasons: Vec<(String, Option<String>)> = {
            let free = self.free_workers();
            let frees: Vec<Free<'_>> = free.into_iter().map(|(_, f)| f).collect();
            self.drivers
                .waiting_ids()
                .iter()
                .filter_map(|id| self.drivers.get(id))
                .map(|d| {
                    let need = Need {
                        cores: d.desc.cores.max(1),
                        memory: d.desc.mem.max(0),
                        resources: BTreeMap::new(),
                    };
                    let reason = if frees.is_empty() {
                        Reason::NoAliveWorker.phrase().to_string()
                    } else {
                        no_room(&need, "the driver", &frees)
                    };
                    (d.id.clone(), Some(reason))
                })
                .collect()
        };
        self.drivers.set_waiting(driver_reasons);
    }

    /// Why each active application waits now (SPEC §16): from the workers' free figures as the
    /// last round left them, and the clock (an executor becomes steady with time).
    pub(crate) fn app_reasons(&self) -> Vec<(String, Option<String>)> {
        let free = self.free_workers();
        self.apps
            .active()
            .map(|a| (a.id.clone(), self.app_reason(a, &free)))
            .collect()
    }

    /// Why application `a` waits, given the schedulable workers' free figures; `None` when one
    /// of its executors runs, or executors are being launched with none ended yet.
    fn app_reason(&self, a: &AppRec, free: &[(&WorkerRec, Free<'_>)]) -> Option<String> {
        let running = |e: &&super::state::ExecRec| e.state == ExecutorState::Running;
        match &a.last_failure {
            // Steady: running since before the failure, or for `steady_executor` since.
            Some((at, first_after, failure)) => {
                let steady = a
                    .executors
                    .iter()
                    .filter(|(_, e)| running(e))
                    .any(|(id, e)| {
                        e.running_since.is_none_or(|since| {
                            (*id < *first_after && since <= *at)
                                || self.clock.now.saturating_duration_since(since)
                                    >= self.config.steady_executor
                        })
                    });
                if steady {
                    return None;
                }
                return Some(format!("{}: {failure}", Reason::ExecutorsEnding.phrase()));
            }
            None if !a.executors.is_empty() => return None,
            None => {}
        }
        if a.executor_limit == 0 {
            return Some(format!(
                "{}: the application asked for no executors",
                Reason::ExecutorLimitReached.phrase()
            ));
        }
        let need = Need {
            cores: a.cores_per_executor().unwrap_or(1).max(1),
            memory: a.memory_per_executor(),
            resources: a.resources_per_executor(),
        };
        if a.cores_left() < need.cores {
            return Some(format!(
                "{}: {} of {} core{} granted, an executor takes {}",
                Reason::CoresMaxReached.phrase(),
                a.cores_granted,
                a.desc.max_cores.unwrap_or(i32::MAX),
                plural(a.desc.max_cores.unwrap_or(i32::MAX)),
                need.cores
            ));
        }
        if free.is_empty() {
            return Some(Reason::NoAliveWorker.phrase().to_string());
        }
        let (own, other): (Vec<_>, Vec<_>) = free.iter().partition(|(w, _)| self.may_place(a, w));
        let fits = |f: &Free<'_>| f.short(&need).is_empty();
        if own.iter().any(|(_, f)| fits(f)) {
            // Room that the round did not use (an application recovered, not answered yet).
            return None;
        }
        let release = a.spark_release.as_deref().unwrap_or_default();
        if own.is_empty() || other.iter().any(|(_, f)| fits(f)) {
            let mut others: Vec<String> = other
                .iter()
                .filter(|(_, f)| fits(f))
                .map(|(w, _)| {
                    format!(
                        "{} (Spark {})",
                        w.id,
                        w.spark_release.as_deref().unwrap_or("?")
                    )
                })
                .collect();
            others.sort();
            let mut s = format!(
                "{}: the application speaks Spark {release}; {} alive worker{} of a compatible release",
                Reason::NoWorkerOfItsRelease.phrase(),
                own.len(),
                plural(i32::try_from(own.len()).unwrap_or(i32::MAX)),
            );
            if !own.is_empty() {
                let frees: Vec<Free<'_>> = own.iter().map(|(_, f)| clone_free(f)).collect();
                let _ = write!(s, " ({})", no_room(&need, "an executor", &frees));
            }
            if !others.is_empty() {
                // At most a few named, so that the reason (kept per application, logged when it
                // changes, shown in /json) stays bounded however many workers the cluster has.
                let named = others.len().min(ROOM_NAMED);
                let _ = write!(s, "; room on {}", others[..named].join(", "));
                if others.len() > named {
                    let _ = write!(s, " and {} more", others.len() - named);
                }
            }
            return Some(s);
        }
        let frees: Vec<Free<'_>> = own.iter().map(|(_, f)| clone_free(f)).collect();
        Some(no_room(&need, "an executor", &frees))
    }
}

/// How an executor's abnormal end reads in a waiting reason: which executor, on which worker, how
/// it ended, and the executor's own last line (`ExecutorStateChanged.message`).
pub(crate) fn failure_text(
    exec_id: i32,
    worker: Option<&str>,
    state: ExecutorState,
    exit_status: Option<i32>,
    message: Option<&str>,
) -> String {
    let mut s = format!("executor {exec_id}");
    if let Some(w) = worker {
        let _ = write!(s, " on {w}");
    }
    let _ = write!(s, " ended {state}");
    if let Some(code) = exit_status {
        let _ = write!(s, " (exit code {code})");
    }
    if let Some(m) = message.map(str::trim).filter(|m| !m.is_empty()) {
        let _ = write!(s, ": {m}");
    }
    s
}

fn clone_free<'a>(f: &Free<'a>) -> Free<'a> {
    Free {
        id: f.id,
        cores: f.cores,
        memory: f.memory,
        resources: f.resources.clone(),
        driver_cores: f.driver_cores,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn free(id: &str, cores: i32, memory: i32, driver_cores: i32) -> Free<'_> {
        Free {
            id,
            cores,
            memory,
            resources: BTreeMap::new(),
            driver_cores,
        }
    }

    fn need(cores: i32, memory: i32) -> Need {
        Need {
            cores,
            memory,
            resources: BTreeMap::new(),
        }
    }

    #[test]
    fn every_reason_is_told_by_its_phrase_and_no_phrase_is_another_s_prefix() {
        for r in Reason::ALL {
            assert_eq!(Reason::of(r.phrase()), Some(r));
            assert_eq!(Reason::of(&format!("{}: details", r.phrase())), Some(r));
        }
        assert_eq!(Reason::of("no alive workers"), None);
        assert_eq!(Reason::of("waiting"), None);
    }

    #[test]
    fn the_short_resource_and_the_best_worker_s_free_figures_are_named() {
        let workers = [free("w-1", 4, 512, 0), free("w-2", 1, 256, 0)];
        let text = no_room(&need(2, 1024), "an executor", &workers);
        assert_eq!(
            text,
            "no alive worker has room: an executor takes 2 cores, 1024 MiB; memory short; \
             best worker: w-1 has 4 cores, 512 MiB free"
        );
    }

    #[test]
    fn cores_held_by_drivers_bind_when_the_drivers_cores_would_make_room() {
        let workers = [free("w-1", 0, 4096, 1), free("w-2", 1, 4096, 2)];
        let text = no_room(&need(2, 1024), "an executor", &workers);
        assert_eq!(Reason::of(&text), Some(Reason::CoresHeldByDrivers));
        assert!(text.contains("w-2 has 1 core, 4096 MiB free (2 cores held by drivers)"));
    }

    #[test]
    fn cores_held_by_drivers_do_not_bind_when_memory_is_short_too() {
        let workers = [free("w-1", 0, 512, 4)];
        let text = no_room(&need(2, 1024), "an executor", &workers);
        assert_eq!(Reason::of(&text), Some(Reason::NoWorkerWithRoom));
        assert!(text.contains("cores and memory short"));
    }

    #[test]
    fn a_custom_resource_short_is_named() {
        let mut w = free("w-1", 8, 8192, 0);
        w.resources.insert("gpu".into(), 0);
        let mut n = need(1, 1024);
        n.resources.insert("gpu".into(), 1);
        let text = no_room(&n, "an executor", &[w]);
        assert!(
            text.contains("takes 1 core, 1024 MiB, 1 gpu; gpu short"),
            "{text}"
        );
    }

    #[test]
    fn releases_restrict_placement_only_when_both_sides_have_one() {
        let same = |a: &str, b: &str| a == b;
        assert!(releases_agree(None, None, same));
        assert!(releases_agree(Some("3.5.9"), None, same));
        assert!(releases_agree(None, Some("4.3.0"), same));
        assert!(releases_agree(Some("3.5.9"), Some("3.5.9"), same));
        assert!(!releases_agree(Some("3.5.9"), Some("4.3.0"), same));
    }
}
