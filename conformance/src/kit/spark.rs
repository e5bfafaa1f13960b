//! An endpoint that listens on Spark's wire, as the `spark/15.…` cases see it.

use crate::kit::server::Server;
use sparkwire::messages::DeployMessage;
use sparkwire::wire::Reply;

type D = DeployMessage;

/// An ask the endpoint answers, and how to recognise its answer.
pub type Probe = (fn() -> D, fn(&Reply<D>) -> bool);

/// An endpoint that listens, as the Spark-wire cases see it.
#[derive(Clone)]
pub struct SparkServer {
    /// How to reach it, its name in requirements and the role the suite's connections take.
    pub server: Server,
    /// An ask it answers, and how to recognise the answer.
    pub probe: Probe,
    /// A message it takes one-way but has no answer for when asked.
    pub not_asked: fn() -> D,
}
