//! sparkwire-conformance: checks a live endpoint of Spark's standalone cluster (a master, worker,
//! driver or executor, in any language) against the sparkwire protocol, case by case, over real
//! TCP, playing the other side of each conversation: the counterpart of h2spec for HTTP/2.
//!
//! Every [`case::Case`] has a stable id tied to the document and section it checks, the
//! requirement sentence, its level (MUST or SHOULD) and a timeout; [`runner::run`] runs them and
//! [`report`] writes the human, JSON and JUnit reports. [`cases`] lists every case of a target.
//! It uses only sparkwire's public API, as an outside tester would.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod canonical;
pub mod case;
pub mod documents;
pub mod env;
pub mod fault;
pub mod health;
pub mod kit;
pub mod mp;
pub mod peer;
pub mod report;
pub mod runner;
pub mod spark_wire;
pub mod spawn;
pub mod targets;
pub mod verdict;

pub use case::{Case, Level, Target, Verdict};

/// Every case of `target`, in report order.
pub fn cases(target: Target) -> Vec<Case> {
    targets::cases(target)
}

/// Every case of every target.
pub fn all_cases() -> Vec<Case> {
    Target::ALL.into_iter().flat_map(cases).collect()
}
