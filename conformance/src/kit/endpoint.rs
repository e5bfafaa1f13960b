//! The endpoint under test, as the cases that every endpoint of a kind share see it: one
//! [`Endpoint`] describes it whichever it is (a master, a worker on its UI port or dialing its
//! master, a driver, an executor, one holding a secret or speaking Spark's wire). Where it runs
//! (its address, its wire, its secret and TLS, the Spark release) is the run's, in
//! `ctx.settings`; the descriptor says what it is, how the suite reaches it, the roles of each
//! side, and what the cases send it.
//!
//! `kit::support::{master, worker, driver, executor, auth}` build the descriptors; a section's
//! cases for any endpoint of a kind are a function of an `&Endpoint` (`for_server`,
//! `for_client`, `for_secured`, `for_spark_server`, `for_served`).

use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::Conn;
use crate::harness::verdict::{fail, Failure};
use crate::kit::auth::{Guarded, OpenGuarded};
use crate::kit::client::Start;
use crate::kit::server::{Listening, Open, RawMessage};
use crate::kit::spawned::Run;
use sparkwire::messages::DeployMessage;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

type D = DeployMessage;

/// An endpoint under test.
#[derive(Clone)]
pub struct Endpoint {
    /// What it is, in requirement texts (`the master`, `a worker (on its port)`).
    pub name: &'static str,
    /// Its message family (`deploy`, `coarse`).
    pub family: &'static str,
    /// The role it declares: in its answer when it listens, in its hello when it dials.
    pub role: Role,
    /// The role the suite takes with it: a client role it takes when it listens, the role the
    /// suite declares in its answer when it dials.
    pub suite_role: Role,
    /// A role of the other family: one it refuses when it listens, one a client SHOULD refuse
    /// in the suite's answer when it dials.
    pub other_family_role: Role,
    /// How the suite reaches it.
    pub reach: Reach,
    /// What the cases send it, when it listens.
    pub messages: Option<Messages>,
    /// What changes its state, when it holds a secret ([`Reach::Guarded`]).
    pub change: Option<Change>,
    /// What the Spark-wire cases ask it, when it speaks Spark's wire too.
    pub spark: Option<SparkProbe>,
}

/// How the suite reaches an endpoint.
#[derive(Clone)]
pub enum Reach {
    /// It listens: opened (started if need be) for each case.
    Listens(Open),
    /// It dials the suite: started for each case, its first connection accepted.
    Dials(Start),
    /// It listens holding the shared secret, with a change of its state to try.
    Guarded(OpenGuarded),
}

/// The messages the cases about any listening endpoint send it.
#[derive(Clone)]
pub struct Messages {
    /// An ask it answers with a reply on a connection of the suite's role: name and fields.
    pub probe: RawMessage,
    /// An ask the suite's role may not send it (SPEC §14.1): its name.
    pub refused: &'static str,
    /// A message of version 2 only, that the suite's role may send it: name and fields.
    pub v2_only: RawMessage,
    /// A local message of its family.
    pub local: &'static str,
    /// A message of its family whose first field is mistyped (the integer 5, one byte).
    pub bad_fields: RawMessage,
    /// A one-way message of its family, well-formed, that the suite's role may not send it
    /// (off its route, SPEC §14.1): name and fields.
    pub off_route: RawMessage,
}

/// The change the authentication cases try on an endpoint holding a secret.
#[derive(Clone, Copy)]
pub struct Change {
    /// The name of the message [`Guarded::change`] holds (`RegisterWorker`, …).
    pub what: &'static str,
    /// The last part of the id of the case that sends the change unauthenticated
    /// (`spec/13/unauthenticated-NAME`).
    pub case: &'static str,
}

/// An ask the endpoint answers on Spark's wire, and how to recognise its answer.
pub type Probe = (fn() -> D, fn(&Reply<D>) -> bool);

/// What the Spark-wire cases ask an endpoint.
#[derive(Clone, Copy)]
pub struct SparkProbe {
    /// An ask it answers, and how to recognise the answer.
    pub probe: Probe,
    /// A message it takes one-way but has no answer for when asked.
    pub not_asked: fn() -> D,
}

impl Endpoint {
    /// Opens the endpoint for a case (it listens).
    pub async fn open(&self, ctx: Ctx) -> Result<Listening, Failure> {
        match &self.reach {
            Reach::Listens(open) => open(ctx).await,
            Reach::Guarded(open) => Ok(open(ctx).await?.at),
            Reach::Dials(_) => Err(self.misdescribed("listens")),
        }
    }

    /// Starts the endpoint for a case and accepts its first connection (it dials).
    pub async fn start(&self, ctx: Ctx) -> Result<(Run, Conn), Failure> {
        match &self.reach {
            Reach::Dials(start) => start(ctx).await,
            _ => Err(self.misdescribed("dials")),
        }
    }

    /// Opens the endpoint holding the secret, with a change of its state to try.
    pub async fn open_guarded(&self, ctx: Ctx) -> Result<Guarded, Failure> {
        match &self.reach {
            Reach::Guarded(open) => open(ctx).await,
            _ => Err(self.misdescribed("holds a secret")),
        }
    }

    /// The messages the cases send it. The catalogue registers the cases about listening
    /// endpoints only with descriptors that name them: one that does not is a bug of the suite,
    /// found by every run.
    pub fn messages(&self) -> &Messages {
        self.messages
            .as_ref()
            .unwrap_or_else(|| panic!("the descriptor of {} names no messages", self.name))
    }

    /// The change the authentication cases try (registered only with descriptors that name it).
    pub fn change(&self) -> Change {
        self.change
            .unwrap_or_else(|| panic!("the descriptor of {} names no change", self.name))
    }

    /// The Spark-wire probe (registered only with descriptors that name it).
    pub fn spark(&self) -> SparkProbe {
        self.spark
            .unwrap_or_else(|| panic!("the descriptor of {} names no Spark probe", self.name))
    }

    /// The body of the endpoint's probe message, with a field of a later revision when `extra`.
    pub fn probe_body(&self, extra: bool) -> Vec<u8> {
        let probe = self.messages().probe;
        let mut fields = (probe.1)();
        if extra {
            fields.push(("zzzAFieldOfALaterRevision", mp::s("ignored")));
        }
        mp::map(&[(probe.0, mp::map(&fields))])
    }

    fn misdescribed(&self, how: &str) -> Failure {
        fail(
            format!("a descriptor of an endpoint that {how}"),
            format!("the suite's descriptor of {}, which does not", self.name),
        )
    }
}
