//! The shrinker: a failing scenario made as small as it can be while it still fails the same
//! invariant (and, for `protocol`, the same rule of the validator), greedily (delta debugging's one-at-a-time pass, repeated to a fixpoint): fewer
//! faults, then fewer drivers, workers and masters, then fewer tasks and shorter faults.

use super::plan::{Fault, Scenario};
use super::{run, Failure};

/// What kind of failure `f` is: its invariant, and for `protocol` the validator's rule too (a
/// W7 failure does not shrink into a P5 one).
pub fn kind(f: &Failure) -> String {
    match f.detail.split_once(':') {
        Some((rule, _)) if f.invariant == super::oracle::PROTOCOL.name => {
            format!("{} {rule}", f.invariant)
        }
        _ => f.invariant.to_string(),
    }
}

/// Whether `s` still fails as `kind` says.
fn fails(s: &Scenario, kind: &str) -> bool {
    run(s, false)
        .failure
        .is_some_and(|f| self::kind(&f) == kind)
}

/// The smallest scenario found that fails `invariant` as `failing` does, and how many runs it
/// took. `failing` itself is returned when it does not fail so.
pub fn shrink(failing: &Scenario, invariant: &str, budget: usize) -> (Scenario, usize) {
    let mut best = failing.clone();
    let mut runs = 0;
    let Some(first) = run(&best, false)
        .failure
        .filter(|f| f.invariant == invariant)
    else {
        return (best, 1);
    };
    let invariant = kind(&first);
    let invariant = invariant.as_str();
    loop {
        let mut changed = false;
        for cand in candidates(&best) {
            if runs >= budget {
                return (best, runs);
            }
            runs += 1;
            if fails(&cand, invariant) {
                best = cand;
                changed = true;
                break;
            }
        }
        if !changed {
            return (best, runs);
        }
    }
}

/// Whether every driver's executor fits some worker, as [`Scenario::draw`] makes sure: the
/// liveness invariant holds only for a cluster with room, so a cut that leaves a job no worker
/// can run is not a smaller case of the same failure.
fn has_room(s: &Scenario) -> bool {
    s.drivers.iter().all(|d| {
        s.workers
            .iter()
            .any(|w| d.executor_cores.is_none_or(|c| c <= w.cores) && d.memory <= w.memory)
    })
}

/// Smaller variants of `s`, the biggest cuts first (each with room for every job).
fn candidates(s: &Scenario) -> Vec<Scenario> {
    let mut out = candidates_any(s);
    out.retain(has_room);
    out
}

fn candidates_any(s: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    if s.faults.len() > 1 {
        let mut c = s.clone();
        c.faults.truncate(s.faults.len() / 2);
        out.push(c);
        let mut c = s.clone();
        c.faults.drain(..s.faults.len() / 2);
        out.push(c);
    }
    for i in (0..s.faults.len()).rev() {
        let mut c = s.clone();
        c.faults.remove(i);
        out.push(c);
    }
    for i in (0..s.drivers.len()).rev() {
        if s.drivers.len() > 1 {
            let mut c = s.clone();
            c.drivers.remove(i);
            out.push(c);
        }
    }
    for i in (0..s.workers.len()).rev() {
        if s.workers.len() > 1 {
            let mut c = s.clone();
            c.workers.remove(i);
            out.push(c);
        }
    }
    if s.masters > 1 {
        let mut c = s.clone();
        c.masters -= 1;
        out.push(c);
    }
    if s.notify_ms > 0 {
        let mut c = s.clone();
        c.notify_ms = 0;
        out.push(c);
    }
    for i in 0..s.drivers.len() {
        if s.drivers[i].partitions > 1 {
            let mut c = s.clone();
            c.drivers[i].partitions = 1;
            out.push(c);
            let mut c = s.clone();
            c.drivers[i].partitions /= 2;
            out.push(c);
        }
        if s.drivers[i].submit_at > 0 {
            let mut c = s.clone();
            c.drivers[i].submit_at = 0;
            out.push(c);
        }
    }
    for i in 0..s.faults.len() {
        let (at, f) = s.faults[i];
        let shorter = match f {
            Fault::Partition { node, ms } if ms > 100 => {
                Some(Fault::Partition { node, ms: ms / 2 })
            }
            Fault::Pause { node, ms } if ms > 100 => Some(Fault::Pause { node, ms: ms / 2 }),
            Fault::Kill { node, ms } if ms > 0 => Some(Fault::Kill { node, ms: ms / 2 }),
            Fault::Fill { cores, ms } if ms > 100 => Some(Fault::Fill { cores, ms: ms / 2 }),
            Fault::Delay { link, ms } if ms > 1 => Some(Fault::Delay { link, ms: ms / 2 }),
            _ => None,
        };
        if let Some(f) = shorter {
            let mut c = s.clone();
            c.faults[i] = (at, f);
            out.push(c);
        }
        if at > 0 {
            let mut c = s.clone();
            c.faults[i] = (at / 2, f);
            c.faults.sort_by_key(|(t, _)| *t);
            out.push(c);
        }
    }
    out
}
