//! What the run has learnt of a shared endpoint as a whole (the master target's, which every
//! case talks to): that it is mute (it answers nothing after the handshake) or that it never
//! closes a connection, so that the cases still waiting for what it does not do end at once,
//! saying why, instead of each waiting out its time limit (issue 30, "bounded time").
//!
//! Neither is ever concluded from one case: a watcher beside the cases ([`watch`]) probes the
//! endpoint again and again, and concludes only when a probe's answer, or close, is still missing
//! at the probe's limit (a case's own time limit, 5 s times `--timeout-scale`, so that a correct
//! slow endpoint has the same allowance as in every case) *and* no connection of any case heard
//! a frame after the handshake (for a mute endpoint), or saw a close (for one that never
//! closes), while it waited. A correct endpoint answers the probe at once and closes at once on
//! a refused hello (protocol/handshake.md §5), so neither is ever concluded of it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// What the run knows of the endpoint; shared by every case's connections (through their
/// [`crate::harness::env::Log`]) and by the runner.
#[derive(Debug)]
pub struct Health {
    start: Instant,
    heard: AtomicU64,
    closes: AtomicU64,
    mute: OnceLock<String>,
    never_closes: OnceLock<String>,
    changed: Notify,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            start: Instant::now(),
            heard: AtomicU64::new(0),
            closes: AtomicU64::new(0),
            mute: OnceLock::new(),
            never_closes: OnceLock::new(),
            changed: Notify::new(),
        }
    }
}

impl Health {
    /// A connection of a case read a frame from the endpoint after the handshake.
    pub fn heard(&self) {
        self.heard.fetch_add(1, Ordering::Relaxed);
    }

    /// A connection of a case saw the endpoint close it.
    pub fn closed(&self) {
        self.closes.fetch_add(1, Ordering::Relaxed);
    }

    /// Why the endpoint is known to be mute, if it is.
    pub fn mute(&self) -> Option<&str> {
        self.mute.get().map(String::as_str)
    }

    /// Why the endpoint is known never to close a connection, if it is.
    pub fn never_closes(&self) -> Option<&str> {
        self.never_closes.get().map(String::as_str)
    }

    /// What is known against the endpoint, for a failed case's report: its muteness, or that
    /// it never closes.
    pub fn known(&self) -> Option<&str> {
        self.mute().or(self.never_closes())
    }

    /// Resolves once the endpoint is known to be mute, or, with `for_close`, also once it is
    /// known never to close.
    pub async fn concluded(&self, for_close: bool) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.mute().is_some() || (for_close && self.never_closes().is_some()) {
                return;
            }
            changed.await;
        }
    }

    fn since(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn conclude(&self, which: &OnceLock<String>, why: String) {
        if which.set(why).is_ok() {
            self.changed.notify_waiters();
        }
    }
}

/// What a probe of the endpoint found within its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probed {
    /// It answered the ask (a reply or a failure), or closed the connection the probe expected
    /// it to close.
    Yes,
    /// The limit passed first: nothing came.
    Nothing,
    /// The probe could not be made (no connection, a refused handshake, …): says nothing of
    /// the endpoint's muteness.
    Inconclusive,
}

/// A probe of the endpoint, given its limit.
pub type Probe =
    Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = Probed> + Send>> + Send + Sync>;

/// The probes of a shared endpoint: an ask it must answer, and (where the wire has one) a hello
/// it must refuse and then close the connection on.
pub struct Probes {
    /// What the ask is, in the conclusion's words (`RequestMasterState from a UI`).
    pub ask_name: &'static str,
    /// The ask.
    pub ask: Probe,
    /// What the refused hello is, in the conclusion's words.
    pub close_name: &'static str,
    /// The refused hello, expecting a close; `None` where the suite has none to send.
    pub close: Option<Probe>,
}

/// How long the watcher waits between two rounds of probes that the endpoint passed.
const ROUND_PAUSE: Duration = Duration::from_millis(500);

/// Probes the endpoint in rounds until the run ends (the caller aborts the task) or it is known
/// to be mute; `limit` is each probe's time limit.
pub async fn watch(health: Arc<Health>, probes: Arc<Probes>, limit: Duration) {
    while !round(&health, &probes, limit).await {
        tokio::time::sleep(ROUND_PAUSE).await;
    }
}

/// One round of probes, each within `limit`: draws what it shows (mute, never closing) and
/// returns whether the endpoint is known to be mute.
pub async fn round(health: &Health, probes: &Probes, limit: Duration) -> bool {
    let (heard, closes) = (
        health.heard.load(Ordering::Relaxed),
        health.closes.load(Ordering::Relaxed),
    );
    let started = health.since();
    let ask = (probes.ask)(limit);
    let close = async {
        match (&probes.close, health.never_closes()) {
            (Some(p), None) => p(limit).await,
            _ => Probed::Inconclusive,
        }
    };
    let (asked, closed) = tokio::join!(ask, close);
    if asked == Probed::Nothing && health.heard.load(Ordering::Relaxed) == heard {
        health.conclude(
            &health.mute,
            format!(
                "the endpoint is mute: its answer to {} was still missing after {:.1} s \
                 (a case's limit times --timeout-scale), and no connection of any case heard a \
                 frame from it meanwhile ({:.1}–{:.1} s into the run)",
                probes.ask_name,
                limit.as_secs_f64(),
                started,
                health.since()
            ),
        );
    }
    if closed == Probed::Nothing && health.closes.load(Ordering::Relaxed) == closes {
        health.conclude(
            &health.never_closes,
            format!(
                "the endpoint keeps its connections open: it had not closed the connection of \
                 {} after {:.1} s (a case's limit times --timeout-scale), and no connection of \
                 any case saw it close meanwhile ({:.1}–{:.1} s into the run)",
                probes.close_name,
                limit.as_secs_f64(),
                started,
                health.since()
            ),
        );
    }
    health.mute().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(p: Probed) -> Probe {
        Arc::new(move |_| Box::pin(async move { p }))
    }

    fn silent() -> Probe {
        Arc::new(|limit| {
            Box::pin(async move {
                tokio::time::sleep(limit).await;
                Probed::Nothing
            })
        })
    }

    #[tokio::test]
    async fn an_unanswered_probe_with_nothing_heard_meanwhile_concludes_mute() {
        let h = Arc::new(Health::default());
        let probes = Probes {
            ask_name: "an ask",
            ask: silent(),
            close_name: "a bad hello",
            close: Some(silent()),
        };
        tokio::time::timeout(
            Duration::from_secs(5),
            watch(Arc::clone(&h), Arc::new(probes), Duration::from_millis(50)),
        )
        .await
        .expect("the watcher ends once the endpoint is known mute");
        assert!(h.mute().is_some_and(|w| w.contains("an ask")));
        assert!(h.never_closes().is_some_and(|w| w.contains("a bad hello")));
        tokio::time::timeout(Duration::from_secs(1), h.concluded(false))
            .await
            .expect("concluded");
    }

    #[tokio::test]
    async fn a_frame_heard_meanwhile_or_an_answer_is_not_muteness() {
        let h = Arc::new(Health::default());
        let heard = Arc::clone(&h);
        // Silent probes, but a case hears the endpoint while each waits.
        let probe: Probe = Arc::new(move |limit| {
            let heard = Arc::clone(&heard);
            Box::pin(async move {
                heard.heard();
                heard.closed();
                tokio::time::sleep(limit).await;
                Probed::Nothing
            })
        });
        let probes = Probes {
            ask_name: "an ask",
            ask: Arc::clone(&probe),
            close_name: "a bad hello",
            close: Some(probe),
        };
        let _ = tokio::time::timeout(
            Duration::from_millis(400),
            watch(Arc::clone(&h), Arc::new(probes), Duration::from_millis(50)),
        )
        .await;
        assert_eq!(h.known(), None);
        // An answered ask and an inconclusive probe conclude nothing either.
        let probes = Probes {
            ask_name: "an ask",
            ask: fixed(Probed::Yes),
            close_name: "a bad hello",
            close: Some(fixed(Probed::Inconclusive)),
        };
        let _ = tokio::time::timeout(
            Duration::from_millis(300),
            watch(Arc::clone(&h), Arc::new(probes), Duration::from_millis(50)),
        )
        .await;
        assert_eq!(h.known(), None);
    }
}
