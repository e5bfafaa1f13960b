//! Layer 4: reference Master, Worker, driver and executor, built only on the public API of the
//! layers before it, as an outside implementation would be.
//!
//! [`master`] and [`worker`] run Spark's standalone Master and Worker on tokio; [`url`] parses
//! `sparkwire://` master URLs, [`observe`] plugs a shared validator into every connection they
//! make (strict mode), and [`clock`] formats Spark-style ids.

pub mod clock;
pub mod master;
pub mod observe;
pub(crate) mod outbox;
pub mod task;
pub mod url;
pub mod worker;
