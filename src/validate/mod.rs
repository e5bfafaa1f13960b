//! Layer 4: a sans-IO state-machine validator of the protocol, in the style of quinn-proto and
//! rustls: protocol logic apart from IO.
//!
//! A [`Validator`] is fed [`Event`]s (a connection opened or closed, an envelope sent from one
//! endpoint to another), each with a time the caller supplies, and returns [`Violation`]s naming
//! the [`Rule`] broken, the event, what was expected instead and the entity involved. It owns no
//! socket and no clock; its verdicts depend only on the events, in order.
//!
//! It checks, per connection, routes and kinds from the definition, asks and replies, and the
//! conversation of each kind of connection (worker–master, application client–master, driver
//! client–master, executor–driver, cluster manager–driver); across connections, the lifecycles of
//! workers, applications, executors, drivers and tasks with Spark's states; and resources (a
//! worker's cores and memory, an executor's task slots). `protocol/rules.md` lists every rule.
//!
//! [`trace`] reads and writes traces (JSON Lines, `protocol/trace.md`); [`SharedValidator`] and
//! [`ConnectionView`] let a live connection feed the validator and refuse illegal messages as they
//! arrive; [`scenario`] builds legal event sequences for tests, examples and benchmarks.

mod coarse;
mod config;
mod conn;
mod deploy;
mod event;
mod history;
mod obligations;
mod rules;
#[cfg(feature = "testing")]
pub mod scenario;
mod shared;
mod sink;
mod spec;
#[cfg(feature = "trace")]
pub mod trace;
mod validator;
mod violation;

pub use config::{sparkwire_task_decoder, Config, TaskDecoder, TaskInfo};
pub use event::{
    AnyEnvelope, ConnId, Endpoint, EnvelopeRef, Event, EventBody, OutsideFrame, OutsideStatus,
    TaskPayloads, ValidatedFamily,
};
pub use rules::Rule;
pub use shared::{ConnectionView, SharedValidator};
pub use validator::Validator;
pub use violation::{Entity, EventRef, Violation};
