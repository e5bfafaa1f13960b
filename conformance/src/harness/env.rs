//! What a case runs with: the endpoint's address or how to start it, the suite's settings, and
//! the case's wire log.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use crate::faults::{Proxy, Side};
use crate::harness::verdict::Target;
use sparkwire::messages::DeployMessage;
use sparkwire::messages::Version;
use sparkwire::validate::{
    ConnId, Endpoint as End, Entity, EnvelopeRef, Rule, ValidatedFamily, Validator, Violation,
};
use sparkwire::wire::Envelope;

/// The wire the suite's connections speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// sparkwire's own: the handshake, then MessagePack envelopes in length-prefixed frames.
    Sparkwire,
    /// Spark's own RPC (SPEC §15): Netty transport frames, `RequestMessage` headers, Java
    /// serialization, as this Spark release writes it (its class table, `protocol/spark/`); the
    /// cases speak the sparkwire protocol version it maps to (SPEC §15.3).
    Spark(&'static sparkwire::spark::Release),
}

impl Wire {
    /// The Spark release a Spark wire speaks, or `None` for sparkwire's wire.
    pub fn spark_release(self) -> Option<&'static str> {
        match self {
            Wire::Sparkwire => None,
            Wire::Spark(release) => Some(release.name()),
        }
    }
}

/// Where the endpoint under test is: how the suite reaches it.
#[derive(Debug, Clone)]
pub enum Site {
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
    pub endpoint: Site,
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
    pub fault: Option<crate::faults::Fault>,
    /// The endpoint's shared secret (protocol/handshake.md §10), when it is configured with one:
    /// the suite then authenticates its connections and runs the authentication cases.
    pub secret: Option<sparkwire::wire::handshake::Secret>,
    /// The file the secret was read from: an endpoint the suite starts gets its path as
    /// `{secret_file}` and in `SPARKWIRE_SECRET_FILE`, as a worker hands it to what it launches.
    pub secret_file: Option<std::path::PathBuf>,
    /// On Spark's wire with a secret, Spark's own authentication the suite speaks (SPEC §15.6,
    /// `--spark-conf`): every connection it opens or accepts runs the bootstrap first.
    pub spark_auth: Option<crate::harness::spark_auth::SparkAuth>,
    /// Whether each case's wire log holds every frame's bytes, in hex (`--hex`).
    pub hex: bool,
    /// The wire the suite speaks (`--wire`).
    pub wire: Wire,
    /// The factor every case's own time limit is multiplied by (`--timeout-scale`).
    pub timeout_scale: f64,
    /// How long the whole run may take (`--deadline`): a case still running then, or not
    /// started, fails as timed out.
    pub run_deadline: Duration,
    /// Whether every case's frames are judged by the crate's validator ([`Judge`]); off only
    /// in the suite's own tests (`--no-judge`, hidden).
    pub judge: bool,
    /// The protocol versions the endpoint offers, when the suite knows them (a master's
    /// handshake answer lists them: [`crate::harness::peer::probe_versions`]): a case for a version it
    /// does not offer is skipped, saying so.
    pub endpoint_versions: Option<Vec<u64>>,
    /// What the run has learnt of the endpoint as a whole (mute, never closing), which every
    /// case's connections feed and consult.
    pub health: Arc<crate::harness::health::Health>,
    /// How to start a server of the master target's kind with settings a case chooses
    /// (`--spawn-server`, [`crate::harness::spawn::SERVER_PLACEHOLDERS`]): the cases about limits, the
    /// admin secret and TLS start one each, and are skipped without it.
    pub spawn_server: Option<String>,
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
    judge: Judge,
    versions: Option<Arc<Vec<u64>>>,
    health: Arc<crate::harness::health::Health>,
    spark_auth: Option<Arc<crate::harness::spark_auth::SparkAuth>>,
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
            judge: Judge::off(),
            versions: None,
            health: Arc::default(),
            spark_auth: None,
        }
    }

    /// The log of a case of a run with `settings`, whose connections are judged by the crate's
    /// validator ([`Judge`]) on sparkwire's wire.
    pub fn for_run(settings: &Settings) -> Self {
        let (hex, wire, target) = (settings.hex, settings.wire, settings.target);
        let judge = match wire {
            Wire::Sparkwire if settings.judge => Judge::new(target, settings.worker_timeout),
            _ => Judge::off(),
        };
        Log {
            hex,
            wire,
            target,
            judge,
            versions: settings.endpoint_versions.clone().map(Arc::new),
            health: Arc::clone(&settings.health),
            spark_auth: match wire {
                Wire::Spark(_) => settings.spark_auth.clone().map(Arc::new),
                Wire::Sparkwire => None,
            },
            ..Log::new()
        }
    }

    /// The protocol versions the endpoint offers, when known.
    pub fn endpoint_versions(&self) -> Option<&[u64]> {
        self.versions.as_deref().map(Vec::as_slice)
    }

    /// What the run knows of the endpoint as a whole.
    pub fn health(&self) -> &crate::harness::health::Health {
        &self.health
    }

    /// The case's judge.
    pub fn judge(&self) -> &Judge {
        &self.judge
    }

    /// Spark's own authentication the case's connections run first, on Spark's wire with a
    /// secret (SPEC §15.6).
    pub fn spark_auth(&self) -> Option<&crate::harness::spark_auth::SparkAuth> {
        self.spark_auth.as_deref()
    }

    /// The wire the case's connections speak.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// The kind of endpoint under test.
    pub fn target(&self) -> Target {
        self.target
    }

    /// An empty log of connections speaking Spark `release`'s own wire (`--wire spark`) to a
    /// master.
    #[cfg(test)]
    pub fn on_spark_wire(release: &'static sparkwire::spark::Release) -> Self {
        Log {
            wire: Wire::Spark(release),
            ..Log::new()
        }
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

/// How long the judge takes messages of different connections as crossing (the validator's
/// `crossing_window_ms`): longer than a case.
const CROSSING_WINDOW_MS: u64 = 30_000;

/// The rules a frame of the endpoint is still judged by once the suite itself broke the protocol
/// in a case: those that need no state of the conversation (the frame's route, kind and version).
fn stateless(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::RouteDefined | Rule::RouteNoLocal | Rule::RouteKind | Rule::ConnVersion
    )
}

/// The end-of-trace obligations (protocol/rules.md, End of the trace) the endpoint under test
/// owes, by target: N1 and N3 the master's, N4 a worker's, N2 an executor's. The others at the
/// end of a case are owed by the side the suite plays, or by asks a case leaves unanswered on
/// purpose.
fn owed_by(target: Target, rule: Rule) -> bool {
    matches!(
        (target, rule),
        (
            Target::Master,
            Rule::EndExecutorAddedLaunched | Rule::EndAppRegistered
        ) | (Target::Worker, Rule::EndExecutorState)
            | (Target::Executor, Rule::EndTaskEnded)
    )
}

/// The judge of one case (issue 30, item 1): the crate's own validator
/// ([`sparkwire::validate::Validator`]) fed every envelope of every connection of the case, both
/// ways, in the order the suite sees them. A rule the endpoint's frame breaks, or a frame of the
/// endpoint that does not decode strictly, is a finding: it fails the case, and the wire log
/// marks the frame. The suite's own frames are fed too, so that the validator knows the
/// conversation; a case that breaks the protocol on purpose (a frame the validator flags, bytes
/// written by hand) makes the conversation unknowable from then on, and the endpoint's frames
/// are then judged only by the rules that need no state (route, kind, version) and
/// by strict decoding. At the end of a case that passed and never broke the protocol, the
/// end-of-trace obligations the endpoint owes (rules N1–N4) are checked; since a case's
/// connections are closed as the case lets go of them, N2–N4 hold there by construction and N1
/// is the one that can fail.
///
/// Off on Spark's wire (whose frames are translations) and in [`Log::new`]'s logs.
#[derive(Debug, Clone)]
pub struct Judge(Option<Arc<Mutex<JudgeState>>>);

#[derive(Debug)]
struct JudgeState {
    validator: Validator,
    target: Target,
    start: Instant,
    next_conn: ConnId,
    /// Why the conversation is no longer known (the suite broke the protocol), if it is not.
    tainted: Option<String>,
    /// What the endpoint did wrong.
    findings: Vec<String>,
    /// The workers the suite registered in this case.
    workers: std::collections::HashSet<String>,
    /// The applications the endpoint registered in this case.
    apps: std::collections::HashSet<String>,
    /// The endpoint's end of each connection, as the validator names it.
    ends: std::collections::HashMap<ConnId, End>,
    /// When the case's time is up: the judge listens on the connections the case let go of
    /// while the endpoint still owes an answer on them until then at most.
    limit: Option<Instant>,
    /// The listeners on the connections the case let go of ([`Judge::settle`]).
    settling: Vec<tokio::task::JoinHandle<()>>,
    /// What the endpoint still owed on a connection when the judge stopped listening on it: end
    /// obligations, findings only once the case's body ended well ([`Judge::finish`]).
    unsettled: Vec<String>,
}

impl Judge {
    /// A judge that judges nothing.
    pub fn off() -> Self {
        Judge(None)
    }

    /// A judge for a case against `target`.
    pub fn new(target: Target, worker_timeout: Option<Duration>) -> Self {
        let mut config = sparkwire::validate::Config::sparkwire();
        // Time is the suite's to judge (each case has its own patience): no timed rule here.
        config.executor_state_within_ms = None;
        config.app_registration_within_ms = None;
        // The suite reads a case's connections one after the other, in the order the case wants:
        // messages of two connections reach the validator in that order, not in the order the
        // endpoint sent them. What the endpoint sends on one connection after what it sent on
        // another is taken as crossing for as long as a case lasts (N1 still wants every
        // ExecutorAdded's LaunchExecutor by the end).
        config.crossing_window_ms = CROSSING_WINDOW_MS;
        if let Some(w) = worker_timeout {
            config.worker_timeout_ms = u64::try_from(w.as_millis()).unwrap_or(u64::MAX);
        }
        Judge(Some(Arc::new(Mutex::new(JudgeState {
            validator: Validator::new(config),
            target,
            start: Instant::now(),
            next_conn: 1,
            tainted: None,
            findings: Vec::new(),
            workers: std::collections::HashSet::new(),
            apps: std::collections::HashSet::new(),
            ends: std::collections::HashMap::new(),
            limit: None,
            settling: Vec::new(),
            unsettled: Vec::new(),
        }))))
    }

    fn with<R>(&self, f: impl FnOnce(&mut JudgeState) -> R) -> Option<R> {
        let inner = self.0.as_ref()?;
        let mut guard = inner.lock().unwrap_or_else(|p| p.into_inner());
        Some(f(&mut guard))
    }

    /// Whether the judge judges anything.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// A connection between the suite (`suite`) and the endpoint (`endpoint`) is open at
    /// `version`; `suite_dialled` says who opened it. Its id in the validator, or `None` when
    /// the judge is off.
    pub fn open(
        &self,
        suite: &End,
        endpoint: &End,
        suite_dialled: bool,
        version: Version,
    ) -> Option<ConnId> {
        self.with(|s| {
            let id = s.next_conn;
            s.next_conn += 1;
            let now = s.now();
            let (client, server) = if suite_dialled {
                (suite, endpoint)
            } else {
                (endpoint, suite)
            };
            s.ends.insert(id, endpoint.clone());
            let v = s.validator.open(now, id, client, server, version);
            if let Some(first) = v.first() {
                s.taint(format!("the connection itself: {first}"));
            }
            id
        })
    }

    /// The suite sent `env` on `conn`. Returns why the conversation is no longer known, when
    /// this frame broke the protocol (the suite meant to).
    pub fn suite_sent<F: ValidatedFamily>(
        &self,
        conn: ConnId,
        suite: &End,
        endpoint: &End,
        version: Version,
        env: &Envelope<F>,
    ) -> Option<String> {
        self.with(|s| {
            if let EnvelopeRef::Deploy(e) = F::view(env) {
                if let Some(DeployMessage::RegisterWorker(r)) = e.message() {
                    s.workers.insert(r.id.clone());
                }
            }
            let now = s.now();
            let v = s
                .validator
                .message(now, conn, suite, endpoint, version, env);
            let (endpoint_s, suite_s): (Vec<Violation>, Vec<Violation>) = v
                .into_iter()
                // An ExecutorAdded whose launch never came is reported at the next event,
                // whoever sends it: the master's, not the suite's.
                .partition(|v| v.rule == Rule::ExecutorAddedMatches && s.target == Target::Master);
            for v in endpoint_s {
                s.find(v.to_string());
            }
            let first = suite_s.first()?;
            let why = format!(
                "the suite's own frame breaks rule {}: {first}",
                first.rule.id()
            );
            s.taint(why.clone());
            Some(why)
        })
        .flatten()
    }

    /// The suite wrote what the validator cannot follow (bytes by hand, an envelope that does not
    /// decode): the conversation is no longer known.
    pub fn suite_broke(&self, what: &str) {
        self.with(|s| s.taint(what.to_string()));
    }

    /// The endpoint sent `env` on `conn`: the rules it breaks, as findings (also kept).
    pub fn endpoint_sent<F: ValidatedFamily>(
        &self,
        conn: ConnId,
        suite: &End,
        endpoint: &End,
        version: Version,
        env: &Envelope<F>,
    ) -> Vec<String> {
        self.with(|s| {
            if let EnvelopeRef::Deploy(e) = F::view(env) {
                if let Some(DeployMessage::RegisteredApplication(r)) = e.message() {
                    s.apps.insert(r.app_id.clone());
                }
            }
            let now = s.now();
            let v = s
                .validator
                .message(now, conn, endpoint, suite, version, env);
            let known = s.tainted.is_none();
            let found: Vec<String> = v
                .into_iter()
                .filter(|v| known || stateless(v.rule))
                .filter(|v| !s.foreign(v))
                .map(|v| v.to_string())
                .collect();
            for f in &found {
                s.find(f.clone());
            }
            found
        })
        .unwrap_or_default()
    }

    /// The endpoint sent a frame whose field maps are not written as SPEC §4 says (fields in
    /// another order than the definition's, or not its own): the finding (also kept).
    pub fn endpoint_misencoded(&self, finding: String) -> String {
        self.with(|s| s.find(finding.clone()));
        finding
    }

    /// The endpoint sent a frame that does not decode: the finding (also kept).
    pub fn endpoint_undecodable(&self, error: &str) -> String {
        let finding =
            format!("a frame of the endpoint that does not decode strictly (SPEC §11): {error}");
        self.with(|s| s.find(finding.clone()));
        finding
    }

    /// Connection `conn` ended.
    pub fn closed(&self, conn: ConnId) {
        self.with(|s| {
            let now = s.now();
            let _ = s.validator.close(now, conn);
        });
    }

    /// The case's time is up at `limit`: the judge listens on the connections the case lets go of
    /// until then at most.
    pub fn set_limit(&self, limit: Instant) {
        self.with(|s| s.limit = Some(limit));
    }

    /// What the endpoint still owes on open connection `conn` (protocol/rules.md, End of the
    /// trace: the answers to the suite's asks (A4), to a RegisterWorker (W3), a task's end (N2),
    /// a registration's answer (N3), a launched executor's state (N4)), as findings; none when
    /// the conversation is not known (the suite broke the protocol).
    fn owed(s: &JudgeState, conn: ConnId) -> Vec<String> {
        if s.tainted.is_some() {
            return Vec::new();
        }
        let Some(end) = s.ends.get(&conn) else {
            return Vec::new();
        };
        s.validator
            .owed_on(conn, end)
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    /// Whether the endpoint still owes an answer on open connection `conn`.
    pub fn owes(&self, conn: ConnId) -> bool {
        self.with(|s| !Judge::owed(s, conn).is_empty())
            .unwrap_or(false)
    }

    /// The case let go of connection `conn` while the endpoint still owed an answer on it
    /// ([`Judge::owes`]): the judge listens on `copy` (the same connection) until the endpoint
    /// paid what it owed, closed it, or the case's time is up; then what is still owed is kept
    /// for [`Judge::finish`] and the connection closes. A correct endpoint answers at once, so
    /// the connection closes as soon as it has; one that owes for good holds its case to its
    /// limit.
    pub fn settle(&self, conn: ConnId, mut copy: impl Owing) {
        let Some(limit) = self.with(|s| s.limit).flatten() else {
            // Outside a case's run: nothing to wait for.
            return;
        };
        let judge = self.clone();
        copy.log_line(&format!(
            "(judge: the endpoint still owes an answer here; listening until it comes, at most {:.1} s)",
            limit.saturating_duration_since(Instant::now()).as_secs_f64()
        ));
        let task = tokio::spawn(async move {
            while judge.owes(conn) {
                let left = limit.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                if copy.closed_within(left).await {
                    break;
                }
            }
            if !copy.ended() {
                judge.with(|s| {
                    let owed = Judge::owed(s, conn);
                    s.unsettled.extend(owed);
                });
            }
            drop(copy);
        });
        self.with(|s| s.settling.push(task));
    }

    /// Waits until the judge stopped listening on every connection the case let go of.
    pub async fn settled(&self) {
        loop {
            let Some(task) = self.with(|s| s.settling.pop()).flatten() else {
                return;
            };
            let _ = task.await;
        }
    }

    /// Stops listening on the connections the case let go of (a case that did not end well owes
    /// nothing at its end).
    pub fn abandon(&self) {
        self.with(|s| {
            for task in s.settling.drain(..) {
                task.abort();
            }
        });
    }

    /// The end-of-trace obligations the endpoint owes, when the conversation is known (the suite
    /// broke nothing): what it still owed on a connection the case let go of when the judge
    /// stopped listening ([`Judge::settle`]: A4, W3, N2, N3, N4), and, of `Validator::finish`, the
    /// obligations of the target (N1 and N3 a master's, N4 a worker's, N2 an executor's) on the
    /// connections still open. Each is also kept as a finding. Call it after
    /// [`Judge::settled`].
    pub fn finish(&self) -> Vec<String> {
        self.with(|s| {
            if s.tainted.is_some() {
                return Vec::new();
            }
            let target = s.target;
            let mut found: Vec<String> = std::mem::take(&mut s.unsettled);
            found.extend(
                s.validator
                    .finish()
                    .into_iter()
                    .filter(|v| owed_by(target, v.rule))
                    .map(|v| v.to_string()),
            );
            for f in &found {
                s.find(f.clone());
            }
            found
        })
        .unwrap_or_default()
    }

    /// What the endpoint did wrong so far.
    pub fn findings(&self) -> Vec<String> {
        self.with(|s| s.findings.clone()).unwrap_or_default()
    }

    /// Why the conversation is no longer known, if it is not.
    pub fn tainted(&self) -> Option<String> {
        self.with(|s| s.tainted.clone()).flatten()
    }
}

impl JudgeState {
    /// Whether `v` is about a worker or an application of another case: a master under test is
    /// shared by the cases that run at once (and by the applications earlier cases left), tells
    /// every application of every worker it loses (rule W7) and every worker of every
    /// application that finishes (rule P6), which this case's trace cannot judge.
    fn foreign(&self, v: &Violation) -> bool {
        self.target == Target::Master
            && match (v.rule, &v.entity) {
                (Rule::WorkerRemovedWhenLost, Some(Entity::Worker(w))) => !self.workers.contains(w),
                (Rule::AppFinishedNotice, Some(Entity::App(a))) => !self.apps.contains(a),
                _ => false,
            }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn taint(&mut self, why: String) {
        if self.tainted.is_none() {
            self.tainted = Some(why);
        }
    }

    fn find(&mut self, finding: String) {
        if self.findings.len() < 50 && !self.findings.contains(&finding) {
            self.findings.push(finding);
        }
    }
}

/// A connection the judge listens on after its case let go of it ([`Judge::settle`]): the
/// connection layer ([`crate::harness::peer::Conn`]) gives it, so that the judge needs no connection type.
pub trait Owing: Send + 'static {
    /// Writes `line` to the connection's wire log.
    fn log_line(&mut self, line: &str);
    /// Reads the connection's next event, at most `within`: true when it closed (or nothing more
    /// can come), false when a frame came.
    fn closed_within(&mut self, within: Duration)
        -> impl std::future::Future<Output = bool> + Send;
    /// Whether the connection ended (closed, or the case's time ran out on it).
    fn ended(&self) -> bool;
}

/// Puts the fault the run injects in front of `upstream` (the suite's self-test, `--fault`): the
/// harness owns the faults, so that the kit, which starts endpoints and listens for them, reaches
/// them only through here. `secret` is the endpoint's shared secret, for the authentication
/// faults.
pub async fn fault_proxy(
    fault: crate::faults::Fault,
    upstream: SocketAddr,
    side: Side,
    secret: Option<sparkwire::wire::handshake::Secret>,
) -> Result<Proxy, String> {
    crate::faults::start(fault, upstream, side, secret).await
}
