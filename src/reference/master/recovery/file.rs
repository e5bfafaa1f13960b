//! Spark's FILESYSTEM recovery mode: records in a directory ([`Persistence`]), the leader
//! elected with a lock file there ([`ha`](super::super::ha)).
//!
//! Fencing here is a check before each write, not an atomic operation: a write is made only
//! while this master's election says it leads, its last renewal is less than a lease old, and
//! the lock file still names its holding. A master paused between that check and its write
//! (for longer than a lease) can still write once; the ZooKeeper mode has no such window.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{BoxFuture, LeaderSink, RecoveryError, RecoveryStore};
use crate::node::master::{Record, RecordKind, Stored};
use crate::reference::master::ha::{Election, LeaderLock, Leading};
use crate::reference::master::persist::Persistence;

/// A recovery directory and its leader lock.
pub struct FileStore {
    persistence: Persistence,
    lock: LeaderLock,
    lease: Duration,
    leading: Leading,
    election: Option<Election>,
}

impl FileStore {
    /// Opens (creating) `dir` for the master `holder`, with leader leases of `lease`.
    pub fn open(dir: &Path, holder: &str, lease: Duration) -> Result<FileStore, RecoveryError> {
        Ok(FileStore {
            persistence: Persistence::open(dir)?,
            lock: LeaderLock::new(dir, holder, lease),
            lease,
            leading: Leading::default(),
            election: None,
        })
    }

    /// The directory.
    pub fn dir(&self) -> PathBuf {
        self.persistence.dir().to_path_buf()
    }

    /// Refuses a write unless this master leads (see the [module docs](self)).
    async fn fence(&self) -> Result<(), RecoveryError> {
        if !self.leading.now() {
            return Err(RecoveryError::Fenced(
                "this master's lease ran out or was lost".into(),
            ));
        }
        let lock = self.lock.clone();
        let holds = tokio::task::spawn_blocking(move || lock.holds())
            .await
            .unwrap_or(false);
        if holds {
            Ok(())
        } else {
            Err(RecoveryError::Fenced(
                "the leader lock names another master".into(),
            ))
        }
    }
}

impl RecoveryStore for FileStore {
    fn elect(&mut self, events: LeaderSink) -> BoxFuture<'_, Result<(), RecoveryError>> {
        let election = Election::spawn(
            self.lock.clone(),
            self.lease,
            self.leading.clone(),
            move |e| events(e),
        );
        self.election = Some(election);
        Box::pin(async { Ok(()) })
    }

    fn read_all(&mut self) -> BoxFuture<'_, Result<Stored, RecoveryError>> {
        let p = self.persistence.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || p.read_all())
                .await
                .map_err(|e| RecoveryError::Cancelled(e.to_string()))?
                .map_err(RecoveryError::from)
        })
    }

    fn write<'a>(&'a mut self, record: &'a Record) -> BoxFuture<'a, Result<(), RecoveryError>> {
        Box::pin(async move {
            self.fence().await?;
            let p = self.persistence.clone();
            let record = record.clone();
            tokio::task::spawn_blocking(move || p.store(&record))
                .await
                .map_err(|e| RecoveryError::Cancelled(e.to_string()))?
                .map_err(RecoveryError::from)
        })
    }

    fn remove<'a>(
        &'a mut self,
        kind: RecordKind,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), RecoveryError>> {
        Box::pin(async move {
            self.fence().await?;
            let p = self.persistence.clone();
            let id = id.to_string();
            tokio::task::spawn_blocking(move || p.forget(kind, &id))
                .await
                .map_err(|e| RecoveryError::Cancelled(e.to_string()))?
                .map_err(RecoveryError::from)
        })
    }

    fn step_down(&mut self, clean: bool) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(e) = self.election.take() {
                e.stop(clean).await;
            }
        })
    }

    fn describe(&self) -> String {
        format!("filesystem {}", self.persistence.dir().display())
    }
}
