//! Layer 5: reference Master, Worker, driver and executor, built only on the public API of the
//! layers before it, as an outside implementation would be.
//!
//! [`master`] and [`worker`] run Spark's standalone Master and Worker on tokio; [`ports`]
//! listens on a port or the next free one up as Spark's services do, [`url`] parses
//! `sparkwire://` master URLs and `spark://` endpoint addresses, [`observe`] plugs a shared
//! validator into every connection they make (strict mode), and [`clock`] formats Spark-style ids.
//!
//! [`driver`] and [`executor`] are an application's side: Spark's StandaloneAppClient and
//! CoarseGrainedSchedulerBackend, and CoarseGrainedExecutorBackend; [`task`] holds what they run.
//! [`tap`] validates and traces a driver's connections, [`local_cluster`] starts a master and
//! workers as processes (`sparkwire local-cluster`), and [`diagram`] draws traces.

/// Moved to [`crate::node::authz`]; kept here for the master and worker until they move to `node`.
pub use crate::node::authz;
pub(crate) mod busy_poll;
pub mod clock;
pub mod diagram;
pub mod driver;
pub mod executor;
#[cfg(feature = "testing")]
pub mod local_cluster;
pub mod master;
pub mod observe;
pub(crate) mod outbox;
pub mod ports;
pub mod redact;
pub mod tap;
pub mod task;
pub mod url;
pub mod violations;
pub mod webui;
pub mod worker;
