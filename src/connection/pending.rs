//! Ask correlation: the asks this side sent that await a reply, and the asks the peer sent that
//! await this side's answer.

use std::collections::{HashMap, HashSet, VecDeque};

use tokio::sync::oneshot;

use super::error::ConnectionError;
use crate::wire::Reply;

/// What an ask's waiter receives: the reply, or why there is none.
pub(crate) type Outcome<F> = Result<Reply<F>, ConnectionError>;

/// How many settled ask ids are remembered to tell a late or repeated reply from an unknown one.
pub(crate) const REMEMBERED_SETTLED: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Answered once.
    Answered,
    /// Gave up waiting; a reply may still come.
    Expired,
}

/// What to do with a reply that arrived.
pub(crate) enum Matched<F> {
    /// Hand it to the waiter.
    Waiter(oneshot::Sender<Outcome<F>>),
    /// Its ask had timed out: drop it.
    Late,
}

/// This side's asks, by id.
pub(crate) struct PendingAsks<F> {
    waiting: HashMap<u64, oneshot::Sender<Outcome<F>>>,
    settled: HashMap<u64, Settled>,
    settled_order: VecDeque<u64>,
}

impl<F> PendingAsks<F> {
    pub(crate) fn new() -> Self {
        PendingAsks {
            waiting: HashMap::new(),
            settled: HashMap::new(),
            settled_order: VecDeque::new(),
        }
    }

    /// Registers ask `id`, answered through `waiter`.
    pub(crate) fn insert(&mut self, id: u64, waiter: oneshot::Sender<Outcome<F>>) {
        self.waiting.insert(id, waiter);
    }

    /// Matches a reply to ask `id`.
    ///
    /// A reply to an ask answered before is [`ConnectionError::DuplicateReply`]; to an id never
    /// asked (or settled too long ago to be remembered), [`ConnectionError::UnknownAsk`].
    pub(crate) fn complete(&mut self, id: u64) -> Result<Matched<F>, ConnectionError> {
        if let Some(waiter) = self.waiting.remove(&id) {
            self.remember(id, Settled::Answered);
            return Ok(Matched::Waiter(waiter));
        }
        match self.settled.get_mut(&id) {
            Some(state @ Settled::Expired) => {
                *state = Settled::Answered;
                Ok(Matched::Late)
            }
            Some(Settled::Answered) => Err(ConnectionError::DuplicateReply { id }),
            None => Err(ConnectionError::UnknownAsk { id }),
        }
    }

    /// Gives up waiting for ask `id`. False when it is no longer waiting (it was just answered).
    pub(crate) fn expire(&mut self, id: u64) -> bool {
        if self.waiting.remove(&id).is_some() {
            self.remember(id, Settled::Expired);
            true
        } else {
            false
        }
    }

    /// How many asks await their reply.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Takes every waiter, to fail them all when the connection closes.
    pub(crate) fn drain(&mut self) -> Vec<oneshot::Sender<Outcome<F>>> {
        self.waiting.drain().map(|(_, waiter)| waiter).collect()
    }

    fn remember(&mut self, id: u64, state: Settled) {
        if self.settled.insert(id, state).is_none() {
            self.settled_order.push_back(id);
        }
        while self.settled_order.len() > REMEMBERED_SETTLED {
            if let Some(old) = self.settled_order.pop_front() {
                self.settled.remove(&old);
            }
        }
    }
}

/// The peer's asks that await this side's reply or failure.
#[derive(Debug, Default)]
pub(crate) struct IncomingAsks {
    open: HashSet<u64>,
}

impl IncomingAsks {
    /// Records the peer's ask `id`; [`ConnectionError::DuplicateAsk`] if one with that id is open.
    pub(crate) fn open(&mut self, id: u64) -> Result<(), ConnectionError> {
        if self.open.insert(id) {
            Ok(())
        } else {
            Err(ConnectionError::DuplicateAsk { id })
        }
    }

    /// How many of the peer's asks await an answer.
    pub(crate) fn len(&self) -> usize {
        self.open.len()
    }

    /// Takes ask `id` to answer it; [`ConnectionError::NoSuchAsk`] if it is not open.
    pub(crate) fn take(&mut self, id: u64) -> Result<(), ConnectionError> {
        if self.open.remove(&id) {
            Ok(())
        } else {
            Err(ConnectionError::NoSuchAsk { id })
        }
    }

    /// Puts ask `id` back after an answer could not be sent.
    pub(crate) fn restore(&mut self, id: u64) {
        self.open.insert(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::DeployMessage;

    #[test]
    fn replies_are_matched_once_and_late_ones_after_a_timeout_are_dropped() {
        let mut asks: PendingAsks<DeployMessage> = PendingAsks::new();
        let (tx, _rx) = oneshot::channel();
        asks.insert(1, tx);
        assert!(matches!(asks.complete(1), Ok(Matched::Waiter(_))));
        assert!(matches!(
            asks.complete(1),
            Err(ConnectionError::DuplicateReply { id: 1 })
        ));
        assert!(matches!(
            asks.complete(7),
            Err(ConnectionError::UnknownAsk { id: 7 })
        ));
        let (tx, _rx) = oneshot::channel();
        asks.insert(2, tx);
        assert!(asks.expire(2));
        assert!(!asks.expire(2));
        assert!(matches!(asks.complete(2), Ok(Matched::Late)));
        assert!(matches!(
            asks.complete(2),
            Err(ConnectionError::DuplicateReply { id: 2 })
        ));
    }

    #[test]
    fn settled_ids_are_remembered_up_to_a_bound() {
        let mut asks: PendingAsks<DeployMessage> = PendingAsks::new();
        for id in 0..(REMEMBERED_SETTLED as u64 + 10) {
            let (tx, _rx) = oneshot::channel();
            asks.insert(id, tx);
            assert!(matches!(asks.complete(id), Ok(Matched::Waiter(_))));
        }
        assert_eq!(asks.settled.len(), REMEMBERED_SETTLED);
        assert!(matches!(
            asks.complete(0),
            Err(ConnectionError::UnknownAsk { id: 0 })
        ));
        assert!(matches!(
            asks.complete(REMEMBERED_SETTLED as u64 + 9),
            Err(ConnectionError::DuplicateReply { .. })
        ));
    }

    #[test]
    fn incoming_asks_are_answered_once() {
        let mut open = IncomingAsks::default();
        assert_eq!(open.open(5), Ok(()));
        assert_eq!(open.open(5), Err(ConnectionError::DuplicateAsk { id: 5 }));
        assert_eq!(open.take(5), Ok(()));
        assert_eq!(open.take(5), Err(ConnectionError::NoSuchAsk { id: 5 }));
        open.restore(5);
        assert_eq!(open.take(5), Ok(()));
    }
}
