//! Faults the suite can put between itself and the endpoint under test, to prove that every case
//! can fail: a man-in-the-middle proxy that breaks a correct endpoint's behaviour in one named way.
//! `--fault NAME` (hidden from `--help`) turns one on; the suite's own tests run every target
//! under every fault and check that each case fails under at least one.
//!
//! Each fault is one entry of [`FAULTS`]: its name, what it breaks, which targets' self-test it
//! serves, and its behaviour, a `Behaviour` whose hooks the proxy calls at each point of a
//! connection (the hellos, the answer, every frame after the handshake, the closes). A hook a
//! fault does not override passes things through unchanged, so a new fault is one entry and the
//! hooks it needs.
//!
//! The folder, by what each file holds:
//! - `catalogue.rs`: [`FAULTS`], every fault, one entry each;
//! - `behaviour.rs`: the hooks a fault overrides (`Behaviour`) and what they answer;
//! - `proxy.rs`: the proxy ([`start`]), and what it knows of each connection;
//! - `pipe.rs`: the proxy's loop, by phase: the hellos, each frame after them, the closes;
//! - `auth.rs`: the authentication faults, which stand in for the whole handshake;
//! - `wire.rs`: reading and writing the proxy's frames;
//! - the faults by what they break: `hellos.rs` (the handshake and the route), `frames.rs` (the
//!   master's frames), `closes.rs`, `decoder.rs`, `judge.rs`, `launch.rs`, `limits.rs`,
//!   `points.rs`, `releases.rs`, `waiting.rs`.

use std::sync::Mutex as StdMutex;

use sparkwire::messages::DeployMessage;

use crate::harness::verdict::Target;

mod auth;
mod behaviour;
mod catalogue;
mod closes;
mod decoder;
mod frames;
mod hellos;
mod judge;
mod launch;
mod limits;
mod pipe;
mod points;
mod proxy;
mod releases;
mod spark_auth;
mod waiting;
mod wire;

use behaviour::{decoded, lock, reencoded, Act, Behaviour, Decoded, HelloAct};
pub use catalogue::FAULTS;
use proxy::State;
pub use proxy::{start, Proxy, Side};
use wire::{frame_of, framed, hello_bytes};

type D = DeployMessage;

/// Which targets' self-test a fault serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Any endpoint, listening or connecting.
    Any,
    /// An endpoint holding a shared secret (the suite is given it with `--secret-file`): the
    /// fault breaks its authentication.
    Auth,
    /// A master: the fault breaks only what the master target checks (ownership, redaction,
    /// SPARK-13604, ReconnectWorker, its decoder and handshake); the other targets' cases of the
    /// same kinds fail under the generic faults (`mute`, `keep-open`, `accept-any-hello`).
    Master,
    /// An endpoint that connects to the suite (a worker, a driver, an executor): the fault
    /// breaks only what the client targets check.
    Clients,
    /// These targets only: the fault breaks only what their cases check.
    Only(&'static [Target]),
    /// A server the suite starts itself (`--spawn-server`): the fault breaks its limits, its
    /// admin secret or its TLS, which only the cases that start one check.
    Server,
    /// An endpoint holding Spark's `spark.authenticate.secret` on Spark's wire (`--wire spark
    /// --secret-file`): the fault breaks Spark's own authentication (SPEC §15.6), which only
    /// the `spark/15.6/…` cases check; run by their own test, not the self-test of sparkwire's
    /// wire.
    Spark,
    /// Caught only by the cases' judge (`crate::harness::env::Judge`), in these targets: the fault breaks
    /// a rule no case's own checks look at (or an end-of-trace obligation), so it makes no case
    /// fail in the self-test, which runs with the judge off; the judge's own test
    /// (`the_judge_catches_each_of_its_faults`) runs it with the judge on.
    Judge(&'static [crate::harness::verdict::Target]),
}

/// One way to break an endpoint: an entry of [`FAULTS`].
pub struct FaultSpec {
    /// Its name (`--fault NAME`).
    pub name: &'static str,
    /// What it breaks, and how the proxy does it.
    pub doc: &'static str,
    /// Which targets' self-test it serves.
    pub scope: Scope,
    behaviour: &'static dyn Behaviour,
}

/// One way to break an endpoint: a handle on its entry of [`FAULTS`].
#[derive(Clone, Copy)]
pub struct Fault(&'static FaultSpec);

impl PartialEq for Fault {
    fn eq(&self, other: &Fault) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Fault {}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl Fault {
    /// Every fault, in the order of [`FAULTS`].
    pub fn all() -> impl Iterator<Item = Fault> {
        FAULTS.iter().map(Fault)
    }

    /// The fault named `name`.
    pub fn from_name(name: &str) -> Option<Fault> {
        Fault::all().find(|f| f.name() == name)
    }

    /// The fault's name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// What it breaks, and how.
    pub fn doc(self) -> &'static str {
        self.0.doc
    }

    /// True for the faults that break authentication ([`Scope::Auth`]).
    pub fn breaks_auth(self) -> bool {
        self.0.scope == Scope::Auth
    }

    /// True for the faults that break Spark's own authentication ([`Scope::Spark`]).
    pub fn breaks_spark_auth(self) -> bool {
        self.0.scope == Scope::Spark
    }

    /// True for the faults that break only what a master does ([`Scope::Master`]).
    pub fn master_only(self) -> bool {
        self.0.scope == Scope::Master
    }

    /// Whether the self-test runs `target` under this fault (its [`Scope`]): every target for a
    /// generic fault, the master for the authentication faults (which stand in for a master
    /// holding a secret) and the master's own, the targets named for the others.
    pub fn serves(self, target: Target) -> bool {
        match self.0.scope {
            Scope::Any => true,
            Scope::Auth | Scope::Master => target == Target::Master,
            Scope::Clients => target != Target::Master,
            Scope::Server => target == Target::Master,
            Scope::Only(targets) => targets.contains(&target),
            Scope::Judge(_) | Scope::Spark => false,
        }
    }

    /// True for the faults that break only a server the suite starts itself
    /// ([`Scope::Server`], `--spawn-server`).
    pub fn server_only(self) -> bool {
        self.0.scope == Scope::Server
    }

    /// True when a server the suite starts must be started without the limits and the TLS
    /// settings its case chose (the `settings-ignored` fault: a server that ignores them).
    pub fn ignores_settings(self) -> bool {
        self.0.behaviour.ignores_settings()
    }

    /// The targets whose cases' judge catches the fault ([`Scope::Judge`]); none for the others.
    pub fn judged_in(self) -> &'static [crate::harness::verdict::Target] {
        match self.0.scope {
            Scope::Judge(targets) => targets,
            _ => &[],
        }
    }
}
