//! The master's recovery store in memory, shared by the masters of a [`Cluster`](super::Cluster),
//! with the semantics of either of the reference's back-ends (`reference::master::recovery`):
//!
//! - [`Semantics::File`], Spark's FILESYSTEM mode: a directory with no leader election and no
//!   fencing. Whoever is started on it reads it and writes to it; running one master at a time is
//!   the operator's affair.
//! - [`Semantics::ZooKeeper`], Spark's ZOOKEEPER mode: each master process holds a session;
//!   the oldest live session among the candidates leads (Curator's LeaderLatch, as sparkwire's
//!   election with ephemeral sequential nodes); a session is lost when its process dies or is
//!   cut off for longer than the session timeout, and then its leadership goes to the next one;
//!   a write from a session that does not lead is refused (a fenced write), so that a deposed
//!   leader that has not yet heard of it cannot overwrite its successor's records.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

use crate::node::master::{Record, RecordKind, Stored};

/// Which back-end's semantics a [`RecoveryStore`] has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Semantics {
    /// A directory: no election, no fencing.
    File,
    /// ZooKeeper: sessions, an election, fenced writes.
    ZooKeeper,
}

impl Semantics {
    /// Its name: `file` or `zookeeper`.
    pub fn name(self) -> &'static str {
        match self {
            Semantics::File => "file",
            Semantics::ZooKeeper => "zookeeper",
        }
    }
}

/// A session of a master process with the store.
pub type Session = u64;

/// A recovery store in memory; see the [module docs](self).
#[derive(Debug)]
pub struct RecoveryStore {
    semantics: Semantics,
    records: Stored,
    live: BTreeSet<Session>,
    next: Session,
    leader: Option<Session>,
    fenced: u64,
}

/// A store the masters of one cluster share.
pub type SharedStore = Rc<RefCell<RecoveryStore>>;

impl RecoveryStore {
    /// An empty store of `semantics`.
    pub fn new(semantics: Semantics) -> RecoveryStore {
        RecoveryStore {
            semantics,
            records: Stored::default(),
            live: BTreeSet::new(),
            next: 1,
            leader: None,
            fenced: 0,
        }
    }

    /// The same, to share.
    pub fn shared(semantics: Semantics) -> SharedStore {
        Rc::new(RefCell::new(RecoveryStore::new(semantics)))
    }

    /// Its semantics.
    pub fn semantics(&self) -> Semantics {
        self.semantics
    }

    /// A new master process's session.
    pub fn open_session(&mut self) -> Session {
        let s = self.next;
        self.next += 1;
        self.live.insert(s);
        s
    }

    /// Whether `session` is live.
    pub fn is_live(&self, session: Session) -> bool {
        self.live.contains(&session)
    }

    /// `session` ends (its process died, or was cut off past the session timeout); whether it
    /// led. Its leadership is vacant until [`RecoveryStore::elect`].
    pub fn expire(&mut self, session: Session) -> bool {
        self.live.remove(&session);
        if self.leader == Some(session) {
            self.leader = None;
            true
        } else {
            false
        }
    }

    /// The leading session, if one leads.
    pub fn leader(&self) -> Option<Session> {
        self.leader
    }

    /// `session` becomes the leader if none leads and it is live: what the store holds, for
    /// its master's recovery.
    pub fn elect(&mut self, session: Session) -> Option<Stored> {
        if self.leader.is_some() || !self.live.contains(&session) {
            return None;
        }
        self.leader = Some(session);
        Some(self.records.clone())
    }

    /// Whether `session` may write: always in a directory; in ZooKeeper, only the leader's live
    /// session.
    fn may_write(&self, session: Session) -> bool {
        match self.semantics {
            Semantics::File => true,
            Semantics::ZooKeeper => self.leader == Some(session) && self.live.contains(&session),
        }
    }

    /// Writes `record` for `session`; a fenced write is refused, saying why.
    pub fn write(&mut self, session: Session, record: Record) -> Result<(), String> {
        if !self.may_write(session) {
            self.fenced += 1;
            return Err(format!("session {session} does not hold the leadership"));
        }
        self.records.apply(record);
        Ok(())
    }

    /// Removes a record for `session`; a fenced removal is refused, saying why.
    pub fn remove(&mut self, session: Session, kind: RecordKind, id: &str) -> Result<(), String> {
        if !self.may_write(session) {
            self.fenced += 1;
            return Err(format!("session {session} does not hold the leadership"));
        }
        self.records.remove(kind, id);
        Ok(())
    }

    /// What it holds.
    pub fn records(&self) -> &Stored {
        &self.records
    }

    /// How many writes and removals were refused as fenced.
    pub fn fenced(&self) -> u64 {
        self.fenced
    }
}
