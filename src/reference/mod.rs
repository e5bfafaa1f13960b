//! Layer 6: the tokio runtime of the reference Master, Worker, driver and executor: sockets,
//! processes, files, timers and web UIs around the protocol cores of [`node`](crate::node).
//! One generic driver (the private `runtime` module) runs the master's, the worker's, the
//! application client's and the scheduler backend's cores: it owns their connections and write
//! queues, their timer and their inbox, drains each core in one place, and hands each effect to
//! the role (processes, files, dialling, the web UI's state, the recovery store).
//!
//! [`master`] and [`worker`] run Spark's standalone Master and Worker on tokio; [`ports`]
//! listens on a port or the next free one up as Spark's services do, [`observe`] plugs a shared
//! validator into every connection they make (strict mode), and [`clock`] reads the wall clock.
//!
//! [`driver`] and [`executor`] are an application's side: Spark's StandaloneAppClient and
//! CoarseGrainedSchedulerBackend, and CoarseGrainedExecutorBackend; [`task`] holds what they run.
//! [`tap`] validates and traces a driver's connections, [`local_cluster`] starts a master and
//! workers as processes (`sparkwire local-cluster`), and [`diagram`] draws traces.

pub mod address;
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
mod runtime;
pub mod tap;
pub mod task;
pub(crate) mod url;
pub(crate) mod violations;
pub mod webui;
pub mod worker;
