//! One WARN line for every refusal (SPEC §14.3) and every protocol error (SPEC §8, §8.1) a
//! reference endpoint meets, naming the peer (address, role, id once registered), the error kind
//! and the reason; and a limit on how many such lines a process writes, so that a peer sending
//! a flood of bad frames cannot fill the disk.
//!
//! The limit is a token bucket per process ([`Limiter`]): [`BURST`] lines at once, then
//! [`PER_SECOND`] a second. Lines over it are counted, not written; the next line written is
//! preceded by `N more refusals or protocol errors suppressed`.

use std::fmt;
use std::sync::Mutex;
use std::time::Instant;

use crate::wire::handshake::Role;

/// Lines a process may write at once.
pub const BURST: u32 = 20;

/// Lines a process may write a second once its burst is spent.
pub const PER_SECOND: u32 = 1;

/// A token bucket: up to `capacity` tokens, refilled at `per_second`; each line written takes
/// one. Time is given by the caller, so that tests drive it without sleeping.
#[derive(Debug)]
pub struct Limiter {
    capacity: f64,
    per_second: f64,
    tokens: f64,
    last: Option<Instant>,
    suppressed: u64,
}

/// What [`Limiter::admit`] decided for one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Write it; `suppressed` lines were dropped since the last line written.
    Write {
        /// Lines dropped before this one.
        suppressed: u64,
    },
    /// Drop it (it is counted).
    Suppress,
}

impl Limiter {
    /// A full bucket of `capacity` tokens, refilled at `per_second`.
    pub fn new(capacity: u32, per_second: u32) -> Self {
        Limiter {
            capacity: f64::from(capacity.max(1)),
            per_second: f64::from(per_second),
            tokens: f64::from(capacity.max(1)),
            last: None,
            suppressed: 0,
        }
    }

    /// Whether a line may be written at `now`.
    pub fn admit(&mut self, now: Instant) -> Admit {
        if let Some(last) = self.last {
            let elapsed = now.saturating_duration_since(last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.per_second).min(self.capacity);
        }
        if self.last.is_none_or(|last| now > last) {
            self.last = Some(now);
        }
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Admit::Write {
                suppressed: std::mem::take(&mut self.suppressed),
            }
        } else {
            self.suppressed += 1;
            Admit::Suppress
        }
    }

    /// Lines dropped since the last line written.
    pub fn suppressed(&self) -> u64 {
        self.suppressed
    }
}

static LIMITER: Mutex<Option<Limiter>> = Mutex::new(None);

/// The peer a line is about.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer<'a> {
    /// Its address (`host:port`), as this side sees it.
    pub(crate) addr: &'a str,
    /// The role it declared in its handshake.
    pub(crate) role: Role,
    /// The id it registered (a worker id, an application id, an executor id), or the id of its
    /// hello until it has; empty when neither.
    pub(crate) id: &'a str,
    /// This process's id of the connection.
    pub(crate) conn: u64,
}

/// Writes one WARN line about `peer`, of error kind `kind`, unless the process's limit is spent.
pub(crate) fn warn(peer: Peer<'_>, what: &str, kind: &str, reason: &dyn fmt::Display) {
    let admitted = {
        let mut limiter = LIMITER.lock().unwrap_or_else(|p| p.into_inner());
        limiter
            .get_or_insert_with(|| Limiter::new(BURST, PER_SECOND))
            .admit(Instant::now())
    };
    let Admit::Write { suppressed } = admitted else {
        return;
    };
    if suppressed > 0 {
        tracing::warn!("{suppressed} more refusals or protocol errors suppressed");
    }
    let id = if peer.id.is_empty() { "-" } else { peer.id };
    tracing::warn!(
        peer = peer.addr,
        role = %peer.role,
        id,
        conn = peer.conn,
        kind,
        "{what}: {reason}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_is_written_then_one_line_a_second_and_the_dropped_ones_are_counted() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut limiter = Limiter::new(3, 1);
        for _ in 0..3 {
            assert_eq!(limiter.admit(at(0)), Admit::Write { suppressed: 0 });
        }
        // The burst is spent: a flood in the same instant is dropped and counted.
        for _ in 0..1000 {
            assert_eq!(limiter.admit(at(0)), Admit::Suppress);
        }
        assert_eq!(limiter.suppressed(), 1000);
        // Half a second earns half a token: still dropped.
        assert_eq!(limiter.admit(at(500)), Admit::Suppress);
        // A second after the flood began, one line, which reports what was dropped.
        assert_eq!(limiter.admit(at(1000)), Admit::Write { suppressed: 1001 });
        assert_eq!(limiter.admit(at(1000)), Admit::Suppress);
        assert_eq!(limiter.admit(at(2000)), Admit::Write { suppressed: 1 });
    }

    #[test]
    fn a_quiet_spell_refills_the_burst_but_not_beyond() {
        let start = Instant::now();
        let mut limiter = Limiter::new(2, 1);
        assert!(matches!(limiter.admit(start), Admit::Write { .. }));
        assert!(matches!(limiter.admit(start), Admit::Write { .. }));
        assert_eq!(limiter.admit(start), Admit::Suppress);
        // An hour later: a full bucket of 2, not 3600.
        let later = start + Duration::from_secs(3600);
        assert_eq!(limiter.admit(later), Admit::Write { suppressed: 1 });
        assert_eq!(limiter.admit(later), Admit::Write { suppressed: 0 });
        assert_eq!(limiter.admit(later), Admit::Suppress);
    }

    #[test]
    fn a_clock_read_out_of_order_never_adds_tokens() {
        let start = Instant::now() + Duration::from_secs(10);
        let mut limiter = Limiter::new(1, 1);
        assert!(matches!(limiter.admit(start), Admit::Write { .. }));
        // An earlier instant (threads reading the clock in another order) earns nothing.
        assert_eq!(
            limiter.admit(start - Duration::from_secs(5)),
            Admit::Suppress
        );
        assert_eq!(limiter.admit(start), Admit::Suppress);
    }
}
