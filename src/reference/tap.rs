//! Watching a process's connections: a shared validator that refuses illegal messages as they
//! cross (strict mode), and a trace of every event (JSON Lines, `protocol/trace.md`).
//!
//! An [`TraceObserver`] hands each connection a [`Tap`], which is the connection's
//! [`Inspector`]: it records the envelope in the trace, then feeds the validator, under one lock,
//! so that the trace and the validator see the same order. The connection's owner calls
//! [`Tap::opened`] before the first message and [`Tap::closed`] when the connection ends.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::connection::Inspector;
use crate::messages::Version;
use crate::validate::trace::{TraceFormat, TraceWriter};
use crate::validate::{
    Config, ConnId, ConnectionView, Endpoint, Event, Rule, SharedValidator, TaskInfo,
    ValidatedFamily, Violation,
};
use crate::wire::decode_task;
use crate::wire::Envelope;

/// Violation texts kept for the verdict.
const KEPT_VIOLATIONS: usize = 20;

/// Watches connections: validates them (when it has a validator) and traces them (when it has a
/// trace output or keeps events). Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct TraceObserver {
    inner: Arc<Inner>,
}

struct Inner {
    validator: Option<SharedValidator>,
    recorder: Mutex<Recorder>,
    tracing: bool,
    epoch_ms: u64,
    start: Instant,
    next_conn: AtomicU64,
}

struct Recorder {
    writer: Option<TraceWriter<Box<dyn Write + Send>>>,
    head: Vec<Event>,
    keep: usize,
    events: u64,
    write_error: Option<String>,
    violations: Vec<String>,
}

impl fmt::Debug for TraceObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceObserver")
            .field("strict", &self.inner.validator.is_some())
            .field("tracing", &self.inner.tracing)
            .finish()
    }
}

impl TraceObserver {
    /// An observer validating with `validator` (if any), writing the trace to `trace` (if any) and
    /// keeping the first `keep` events in memory (for a diagram).
    pub fn new(
        validator: Option<SharedValidator>,
        trace: Option<Box<dyn Write + Send>>,
        keep: usize,
    ) -> Self {
        TraceObserver::with_trace_format(validator, trace, TraceFormat::JsonLines, keep)
    }

    /// As [`new`](Self::new), writing the trace in `format` (protocol/trace.md).
    pub fn with_trace_format(
        validator: Option<SharedValidator>,
        trace: Option<Box<dyn Write + Send>>,
        format: TraceFormat,
        keep: usize,
    ) -> Self {
        let epoch_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let tracing = trace.is_some() || keep > 0;
        TraceObserver {
            inner: Arc::new(Inner {
                validator,
                recorder: Mutex::new(Recorder {
                    writer: trace.map(|out| TraceWriter::with_format(out, format)),
                    head: Vec::new(),
                    keep,
                    events: 0,
                    write_error: None,
                    violations: Vec::new(),
                }),
                tracing,
                epoch_ms,
                start: Instant::now(),
                next_conn: AtomicU64::new(1),
            }),
        }
    }

    /// An observer that only validates, strictly, with `validator`.
    pub fn strict(validator: SharedValidator) -> Self {
        TraceObserver::new(Some(validator), None, 0)
    }

    /// The validator, if this observer validates.
    pub fn validator(&self) -> Option<&SharedValidator> {
        self.inner.validator.as_ref()
    }

    /// The observer's clock: milliseconds since the Unix epoch, never decreasing.
    pub fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }

    /// A tap for a new connection between `local` (this process) and `peer`, in `version`;
    /// `local_dialled` says which end opened it. Call [`Tap::opened`] before its first message.
    pub fn tap(
        &self,
        local: Endpoint,
        peer: Endpoint,
        local_dialled: bool,
        version: Version,
    ) -> Tap {
        self.make_tap(local, peer, local_dialled, version, true)
    }

    /// A tap that neither validates nor writes the trace, and only keeps the connection's first
    /// events for the diagram: for a connection whose other end validates it (an application
    /// client's connection to a strict master, whose rules need the master's whole view).
    pub fn diagram_tap(
        &self,
        local: Endpoint,
        peer: Endpoint,
        local_dialled: bool,
        version: Version,
    ) -> Tap {
        self.make_tap(local, peer, local_dialled, version, false)
    }

    fn make_tap(
        &self,
        local: Endpoint,
        peer: Endpoint,
        local_dialled: bool,
        version: Version,
        validated: bool,
    ) -> Tap {
        let conn = self.inner.next_conn.fetch_add(1, Ordering::Relaxed);
        let validator = self.inner.validator.as_ref().filter(|_| validated);
        let view = validator.map(|v| {
            let inner = Arc::clone(&self.inner);
            v.connection(
                conn,
                local.clone(),
                peer.clone(),
                local_dialled,
                version,
                move || inner.now_ms(),
            )
        });
        Tap {
            inner: Arc::clone(&self.inner),
            view,
            conn,
            local,
            peer,
            local_dialled,
            version,
            to_file: validated,
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The first events traced (as many as asked for at creation).
    pub fn head(&self) -> Vec<Event> {
        self.inner.lock().head.clone()
    }

    /// Flushes the trace and returns the verdict so far; with `finish`, also runs the validator's
    /// end-of-trace checks (asks left unanswered on open connections).
    pub fn verdict(&self, finish: bool) -> Verdict {
        let mut rec = self.inner.lock();
        if let Some(w) = rec.writer.as_mut() {
            if let Err(e) = w.flush() {
                rec.write_error.get_or_insert(e.to_string());
            }
        }
        let (events, violations) = match &self.inner.validator {
            Some(v) => v.with(|v| {
                if finish {
                    let late = v.finish();
                    for x in late {
                        if rec.violations.len() < KEPT_VIOLATIONS {
                            rec.violations.push(x.to_string());
                        }
                    }
                }
                (v.events(), v.counts().clone())
            }),
            None => (rec.events, BTreeMap::new()),
        };
        Verdict {
            validated: self.inner.validator.is_some(),
            events,
            violations,
            examples: rec.violations.clone(),
            trace_error: rec.write_error.clone(),
        }
    }
}

impl Inner {
    fn now_ms(&self) -> u64 {
        self.epoch_ms
            .saturating_add(u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX))
    }

    fn lock(&self) -> MutexGuard<'_, Recorder> {
        self.recorder
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Recorder {
    fn record(&mut self, to_file: bool, event: impl FnOnce() -> Event) {
        let writing = to_file && self.writer.is_some();
        if !writing && self.head.len() >= self.keep {
            return;
        }
        let event = event();
        self.events += 1;
        if let Some(w) = self.writer.as_mut().filter(|_| to_file) {
            if let Err(e) = w.write(&event) {
                self.write_error.get_or_insert(e.to_string());
                self.writer = None;
            }
        }
        if self.head.len() < self.keep {
            self.head.push(event);
        }
    }

    fn note(&mut self, violations: &[Violation]) {
        for v in violations {
            if self.violations.len() < KEPT_VIOLATIONS {
                self.violations.push(v.to_string());
            }
        }
    }
}

/// The validator's task decoder for sparkwire's tasks (`LaunchTask.data` is a
/// [`TaskDescription`](crate::messages::TaskDescription), protocol/SPEC.md §10).
pub fn task_decoder(data: &[u8]) -> Option<TaskInfo> {
    let task = decode_task(&bytes::Bytes::copy_from_slice(data)).ok()?;
    Some(TaskInfo {
        task_id: task.task_id,
        cpus: u32::try_from(task.cpus).ok()?,
    })
}

/// A validator with the default settings and sparkwire's [`task_decoder`], for strict mode.
pub fn strict_validator() -> SharedValidator {
    SharedValidator::with_config(Config::with_task_decoder(task_decoder))
}

/// What an observer concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether a validator watched (strict mode).
    pub validated: bool,
    /// Events seen.
    pub events: u64,
    /// Violations by rule.
    pub violations: BTreeMap<Rule, u64>,
    /// The first violations, as text.
    pub examples: Vec<String>,
    /// Why the trace could not be written, if it could not.
    pub trace_error: Option<String>,
}

impl Verdict {
    /// Violations in all.
    pub fn total(&self) -> u64 {
        self.violations.values().sum()
    }

    /// No violation (and the trace, if any, was written).
    pub fn is_clean(&self) -> bool {
        self.total() == 0 && self.trace_error.is_none()
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.validated {
            return write!(f, "not validated ({} events traced)", self.events);
        }
        if self.total() == 0 {
            write!(f, "valid: {} events, no violation", self.events)?;
        } else {
            write!(
                f,
                "INVALID: {} events, {} violations (",
                self.events,
                self.total()
            )?;
            let mut first = true;
            for (rule, n) in &self.violations {
                if !first {
                    f.write_str(", ")?;
                }
                first = false;
                write!(f, "{} {}: {n}", rule.id(), rule.slug())?;
            }
            f.write_str(")")?;
        }
        if let Some(e) = &self.trace_error {
            write!(f, "; trace not written: {e}")?;
        }
        Ok(())
    }
}

/// One connection's tap: its inspector (validation and trace) and its open and close events.
/// Clones share the connection; give one to the connection, keep one to call
/// [`opened`](Self::opened) and [`closed`](Self::closed).
#[derive(Clone)]
pub struct Tap {
    inner: Arc<Inner>,
    view: Option<ConnectionView>,
    conn: ConnId,
    local: Endpoint,
    peer: Endpoint,
    local_dialled: bool,
    version: Version,
    to_file: bool,
    closed: Arc<AtomicBool>,
}

impl fmt::Debug for Tap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tap")
            .field("conn", &self.conn)
            .field("local", &self.local)
            .field("peer", &self.peer)
            .finish()
    }
}

impl Tap {
    /// The connection's id in the trace.
    pub fn conn(&self) -> ConnId {
        self.conn
    }

    /// Records the connection as opened.
    pub fn opened(&self) {
        let mut rec = self.inner.lock();
        if self.inner.tracing {
            let (client, server) = if self.local_dialled {
                (&self.local, &self.peer)
            } else {
                (&self.peer, &self.local)
            };
            let now = self.inner.now_ms();
            rec.record(self.to_file, || {
                Event::open(now, self.conn, client.clone(), server.clone(), self.version)
            });
        }
        if let Some(view) = &self.view {
            let v = view.opened();
            rec.note(&v);
        }
    }

    /// Records the connection as closed (once; later calls do nothing).
    pub fn closed(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut rec = self.inner.lock();
        if self.inner.tracing {
            let now = self.inner.now_ms();
            rec.record(self.to_file, || Event::close(now, self.conn));
        }
        if let Some(view) = &self.view {
            let v = view.closed();
            rec.note(&v);
        }
    }

    fn observe<F: ValidatedFamily>(&self, env: &Envelope<F>, inbound: bool) -> Result<(), String> {
        let mut rec = self.inner.lock();
        if self.inner.tracing {
            let now = self.inner.now_ms();
            let (from, to) = if inbound {
                (&self.peer, &self.local)
            } else {
                (&self.local, &self.peer)
            };
            rec.record(self.to_file, || {
                Event::message(
                    now,
                    self.conn,
                    from.clone(),
                    to.clone(),
                    self.version,
                    env.clone(),
                )
            });
        }
        let Some(view) = &self.view else {
            return Ok(());
        };
        let verdict = if inbound {
            view.inbound(env)
        } else {
            view.outbound(env)
        };
        verdict.map_err(|v| {
            rec.note(&v);
            v.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
    }
}

impl<F: ValidatedFamily> Inspector<F> for Tap {
    fn inbound(&mut self, env: &Envelope<F>) -> Result<(), String> {
        self.observe(env, true)
    }

    fn outbound(&mut self, env: &Envelope<F>) -> Result<(), String> {
        self.observe(env, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::coarse::LaunchedExecutor;
    use crate::messages::CoarseMessage;
    use crate::wire::handshake::Role;

    #[test]
    fn taps_trace_in_order_and_strict_views_refuse_and_count_violations() {
        let obs = TraceObserver::new(Some(SharedValidator::default()), None, 10);
        let driver = Endpoint::new(Role::Driver, "driver");
        let exec = Endpoint::new(Role::Executor, "1");
        let mut tap = obs.tap(driver, exec, false, Version::V2);
        tap.opened();
        let early = Envelope::Send(CoarseMessage::LaunchedExecutor(LaunchedExecutor {
            executor_id: "1".into(),
        }));
        let refusal = Inspector::inbound(&mut tap, &early).expect_err("X1 refuses");
        assert!(refusal.contains("X1"), "{refusal}");
        tap.closed();
        tap.closed();
        let head = obs.head();
        assert_eq!(head.len(), 3);
        assert!(head.windows(2).all(|w| w[0].time <= w[1].time));
        let verdict = obs.verdict(true);
        assert_eq!(verdict.total(), 1);
        assert!(!verdict.is_clean());
        assert!(verdict.to_string().contains("X1"), "{verdict}");
    }
}
