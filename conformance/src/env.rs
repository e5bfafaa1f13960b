//! What a case runs with: the endpoint's address or how to start it, the suite's settings, and
//! the case's wire log.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::case::Target;
use sparkwire::messages::Version;

/// The wire the suite's connections speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// sparkwire's own: the handshake, then MessagePack envelopes in length-prefixed frames.
    Sparkwire,
    /// Spark's own RPC (SPEC §15): Netty transport frames, `RequestMessage` headers, Java
    /// serialization, as the Spark release of this protocol version writes it (2: Spark 4.0.1,
    /// 1: Spark 3.0.3).
    Spark(Version),
}

impl Wire {
    /// The Spark release a Spark wire speaks, or `None` for sparkwire's wire.
    pub fn spark_release(self) -> Option<&'static str> {
        match self {
            Wire::Sparkwire => None,
            Wire::Spark(Version::V1) => Some("3.0.3"),
            Wire::Spark(_) => Some("4.0.1"),
        }
    }
}

/// How the suite reaches the endpoint under test.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// A running endpoint at this address (the master target).
    Addr(SocketAddr),
    /// The suite starts the endpoint for each case from this command template.
    Spawn(String),
    /// The suite listens here and waits for an endpoint started by hand.
    Listen(SocketAddr),
}

/// The run's settings, shared by every case.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The target.
    pub target: Target,
    /// How to reach it.
    pub endpoint: Endpoint,
    /// How long to wait for something that must happen (a reply, a close).
    pub patience: Duration,
    /// How long to watch for something that must not happen (a second reply).
    pub quiet: Duration,
    /// Whether the master spreads applications out (`spark.deploy.spreadOut`).
    pub spread_out: bool,
    /// The master's worker timeout, when known: the heartbeat cases need it.
    pub worker_timeout: Option<Duration>,
    /// The master's `spark.deploy.maxExecutorRetries`.
    pub max_executor_retries: u32,
    /// A fault to inject between the suite and the endpoint (the suite's own tests use it).
    pub fault: Option<crate::fault::Fault>,
    /// The endpoint's shared secret (protocol/handshake.md §10), when it is configured with one:
    /// the suite then authenticates its connections and runs the authentication cases.
    pub secret: Option<sparkwire::wire::handshake::Secret>,
    /// The file the secret was read from: an endpoint the suite starts gets its path as
    /// `{secret_file}` and in `SPARKWIRE_SECRET_FILE`, as a worker hands it to what it launches.
    pub secret_file: Option<std::path::PathBuf>,
    /// Whether each case's wire log holds every frame's bytes, in hex (`--hex`).
    pub hex: bool,
    /// The wire the suite speaks (`--wire`).
    pub wire: Wire,
}

/// The wire log of one case: every frame both ways, with times, in the wire's own words: each
/// envelope in the JSON form of protocol/trace.md (fields by their names in
/// protocol/messages.md), each handshake frame by the keys of protocol/handshake.md, and with
/// `--hex` ([`Log::with_hex`]) every frame's bytes too.
///
/// Every connection of a case is made with its log, so the log also carries what the case's
/// connections need to know of the run: the wire they speak and the endpoint under test.
#[derive(Debug, Clone)]
pub struct Log {
    start: Instant,
    lines: Arc<Mutex<Vec<String>>>,
    hex: bool,
    wire: Wire,
    target: Target,
}

impl Log {
    /// An empty log.
    pub fn new() -> Self {
        Log {
            start: Instant::now(),
            lines: Arc::new(Mutex::new(Vec::new())),
            hex: false,
            wire: Wire::Sparkwire,
            target: Target::Master,
        }
    }

    /// The log of a case of a run against `target` over `wire`.
    pub fn for_run(hex: bool, wire: Wire, target: Target) -> Self {
        Log {
            hex,
            wire,
            target,
            ..Log::new()
        }
    }

    /// The wire the case's connections speak.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// The kind of endpoint under test.
    pub fn target(&self) -> Target {
        self.target
    }

    /// An empty log that also holds every frame's bytes, in hex (`--hex`).
    pub fn with_hex(hex: bool) -> Self {
        Log { hex, ..Log::new() }
    }

    /// Whether the log holds every frame's bytes.
    pub fn hex(&self) -> bool {
        self.hex
    }

    /// Adds a line.
    pub fn push(&self, line: impl AsRef<str>) {
        let ms = self.start.elapsed().as_millis();
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() < 2000 {
                lines.push(format!("{ms:>6} ms  {}", line.as_ref()));
            }
        }
    }

    /// The lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Default for Log {
    fn default() -> Self {
        Log::new()
    }
}

/// A case's context.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The run's settings.
    pub settings: Arc<Settings>,
    /// The case's wire log.
    pub log: Log,
}
