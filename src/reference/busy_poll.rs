//! Busy polling: after traffic, a one-thread runtime keeps polling its sockets for a short window
//! instead of going to sleep, so that a reply arriving within it is read by a process that is
//! already awake.
//!
//! On a virtual machine, waking a process that sleeps on an idle vCPU is the dearest step of a
//! round trip: the sender pays for the wake-up interrupt and the reader for coming back from halt.
//! A tiny task's round trip (LaunchTask out, StatusUpdate back) is mostly that. Linux offers the
//! same trade for sockets (`SO_BUSY_POLL`); this is its counterpart in the event loop: a task that
//! yields to the runtime until the window has passed since the last activity, so that the runtime
//! polls its sockets without blocking (`epoll_wait` with no timeout) rather than parking.
//!
//! The cost is bounded: at most one window of CPU after each [`BusyPoll::activity`], and none once
//! activity stops. Meant for a current-thread runtime; on a multi-thread one it holds one worker
//! thread for the window.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Keeps the current runtime polling for a window after each [`BusyPoll::activity`]. Dropping it
/// stops the poller.
#[derive(Debug)]
pub(crate) struct BusyPoll {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    window: u64,
    origin: Instant,
    /// Nanoseconds from `origin` to the last activity.
    last: AtomicU64,
    kick: Notify,
    /// Times the poller handed the runtime back while polling (seen by tests).
    spins: AtomicU64,
}

impl Inner {
    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl BusyPoll {
    /// Spawns the poller on the current runtime; `None` for a zero window (never poll).
    pub(crate) fn start(window: Duration) -> Option<Self> {
        if window.is_zero() {
            return None;
        }
        let inner = Arc::new(Inner {
            window: u64::try_from(window.as_nanos()).unwrap_or(u64::MAX),
            origin: Instant::now(),
            last: AtomicU64::new(0),
            kick: Notify::new(),
            spins: AtomicU64::new(0),
        });
        tokio::spawn(spin(Arc::downgrade(&inner)));
        Some(BusyPoll { inner })
    }

    /// Something was sent or is expected: poll for the window from now.
    pub(crate) fn activity(&self) {
        self.inner.last.store(self.inner.now(), Ordering::Relaxed);
        self.inner.kick.notify_one();
    }

    #[cfg(test)]
    fn spins(&self) -> u64 {
        self.inner.spins.load(Ordering::Relaxed)
    }
}

impl Drop for BusyPoll {
    fn drop(&mut self) {
        // The poller holds the state while it waits for a kick: wake it, so that it lets go and,
        // finding the handle gone, ends.
        self.inner.kick.notify_one();
    }
}

async fn spin(inner: std::sync::Weak<Inner>) {
    loop {
        let Some(state) = inner.upgrade() else { return };
        state.kick.notified().await;
        drop(state);
        loop {
            let Some(state) = inner.upgrade() else { return };
            if state
                .now()
                .saturating_sub(state.last.load(Ordering::Relaxed))
                >= state.window
            {
                break;
            }
            state.spins.fetch_add(1, Ordering::Relaxed);
            drop(state);
            tokio::task::yield_now().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn a_zero_window_never_polls() {
        runtime().block_on(async {
            assert!(BusyPoll::start(Duration::ZERO).is_none());
        });
    }

    #[test]
    fn the_runtime_keeps_polling_after_activity_and_stops_when_the_window_has_passed() {
        runtime().block_on(async {
            let poll = BusyPoll::start(Duration::from_millis(20)).expect("a poller");
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert_eq!(poll.spins(), 0, "no polling before any activity");
            poll.activity();
            // Other tasks still run while it polls: this sleep ends.
            tokio::time::sleep(Duration::from_millis(2)).await;
            assert!(
                poll.spins() > 0,
                "the poller yields to the runtime while polling"
            );
            // Well past the window the poller has stopped: the count no longer moves.
            tokio::time::sleep(Duration::from_millis(60)).await;
            let settled = poll.spins();
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(
                poll.spins(),
                settled,
                "no polling once the window has passed"
            );
            // Activity starts it again.
            poll.activity();
            tokio::time::sleep(Duration::from_millis(2)).await;
            assert!(poll.spins() > settled, "activity starts a new window");
        });
    }

    #[test]
    fn dropping_the_last_handle_ends_the_poller() {
        runtime().block_on(async {
            let poll = BusyPoll::start(Duration::from_secs(3600)).expect("a poller");
            let weak = Arc::downgrade(&poll.inner);
            poll.activity();
            tokio::task::yield_now().await;
            drop(poll);
            // The poller notices within a few turns of the runtime and lets the state go.
            for _ in 0..100 {
                tokio::task::yield_now().await;
            }
            assert!(weak.upgrade().is_none(), "the poller released its state");
        });
    }
}
