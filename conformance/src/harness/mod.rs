//! The harness: what runs cases and reports them. The ground ([`verdict`]: targets, levels,
//! failures, verdicts), the case and its registration ([`case`]), the run's settings, context and
//! judge ([`mod@env`]), connections and their wire logs ([`peer`], [`spark_wire`], MessagePack by hand
//! in [`mp`], canonical field maps in [`canonical`]), the endpoint's health ([`health`]), the
//! processes the suite starts ([`spawn`]), the [`runner`] and the [`report`]s.

pub mod canonical;
pub mod case;
pub mod env;
pub mod health;
pub mod mp;
pub mod peer;
pub mod report;
pub mod runner;
pub mod spark_auth;
pub mod spark_wire;
pub mod spawn;
pub mod verdict;
