//! Leader election among masters sharing a recovery directory, with no dependency beyond the
//! file system: the active master holds `master.lock` there.
//!
//! The lock file holds its holder's id, process id, a random nonce and the time it was last
//! renewed (ms since the epoch). The holder renews it every third of the lease by writing a new
//! file and renaming it over the lock. A master that finds no lock creates one with `create_new`
//! (exclusive: of several masters trying at once, one succeeds). A lock not renewed for a whole
//! lease is stale: a standby takes it over by renaming it away (of several standbys renaming the
//! same file, one succeeds), checking that what it renamed is the stale lock it judged (else it
//! puts it back, with a hard link that fails if a lock exists), then creating its own. A holder
//! that finds someone else's nonce in the lock when renewing has lost its leadership and stops,
//! as Spark's master does when ZooKeeper revokes it. Wall clocks of the masters must agree within
//! a fraction of the lease (they share a directory, typically one machine or one NFS server).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::reference::clock::now_ms;

/// The lock file's name in the recovery directory.
pub const LOCK_FILE: &str = "master.lock";

/// What the election tells the master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderEvent {
    /// This master holds the lock: it is the active one.
    Elected,
    /// Another master took the lock: this one must stop.
    Lost,
}

/// The content of the lock file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The holder's id (`master-host:port`).
    pub holder: String,
    /// The holder's process id.
    pub pid: u32,
    /// Random, per holding.
    pub nonce: u64,
    /// When it was last renewed, ms since the epoch.
    pub renewed_ms: i64,
}

/// A master's side of the lock in `dir`.
#[derive(Debug, Clone)]
pub struct LeaderLock {
    dir: PathBuf,
    lease: Duration,
    mine: Lease,
}

/// What trying to take the lock gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Taken: this master is the leader.
    Acquired,
    /// Held by another master, whose lease is current.
    HeldBy(String),
}

fn random_nonce(holder: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write(holder.as_bytes());
    h.write_i64(now_ms());
    h.write_u32(std::process::id());
    h.finish()
}

impl LeaderLock {
    /// The lock of `dir` for the master `holder`, with leases of `lease`.
    pub fn new(dir: &Path, holder: &str, lease: Duration) -> LeaderLock {
        LeaderLock {
            dir: dir.to_path_buf(),
            lease,
            mine: Lease {
                holder: holder.to_string(),
                pid: std::process::id(),
                nonce: random_nonce(holder),
                renewed_ms: 0,
            },
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join(LOCK_FILE)
    }

    fn read(path: &Path) -> Option<(Vec<u8>, Option<Lease>)> {
        let body = fs::read(path).ok()?;
        let lease = serde_json::from_slice(&body).ok();
        Some((body, lease))
    }

    fn is_stale(&self, lease: &Option<Lease>) -> bool {
        let lease_ms = i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX);
        match lease {
            Some(l) => now_ms().saturating_sub(l.renewed_ms) > lease_ms,
            // A lock that cannot be read is a torn or foreign file: stale.
            None => true,
        }
    }

    fn body(&mut self) -> std::io::Result<Vec<u8>> {
        self.mine.renewed_ms = now_ms();
        serde_json::to_vec(&self.mine).map_err(std::io::Error::other)
    }

    fn create(&mut self) -> std::io::Result<bool> {
        let body = self.body()?;
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.path())
        {
            Ok(mut f) => {
                f.write_all(&body)?;
                f.sync_all()?;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Tries once to take the lock.
    pub fn try_acquire(&mut self) -> std::io::Result<Attempt> {
        if self.create()? {
            return Ok(Attempt::Acquired);
        }
        let path = self.path();
        let Some((body, lease)) = Self::read(&path) else {
            // Removed meanwhile: try again at once.
            return Ok(if self.create()? {
                Attempt::Acquired
            } else {
                Attempt::HeldBy("another master".into())
            });
        };
        if !self.is_stale(&lease) {
            return Ok(Attempt::HeldBy(
                lease.map_or_else(|| "another master".into(), |l| l.holder),
            ));
        }
        let aside = self.dir.join(format!(
            "{LOCK_FILE}.stale-{}-{}",
            self.mine.pid, self.mine.nonce
        ));
        if fs::rename(&path, &aside).is_err() {
            return Ok(Attempt::HeldBy("another master taking over".into()));
        }
        let moved = fs::read(&aside).unwrap_or_default();
        if moved != body {
            // Renewed or replaced between the read and the rename: put it back.
            let _ = fs::hard_link(&aside, &path);
            let _ = fs::remove_file(&aside);
            return Ok(Attempt::HeldBy("another master".into()));
        }
        let _ = fs::remove_file(&aside);
        if let Some(l) = lease {
            tracing::warn!(
                "taking over the leader lock of {} (pid {}), not renewed for over {:?}",
                l.holder,
                l.pid,
                self.lease
            );
        }
        Ok(if self.create()? {
            Attempt::Acquired
        } else {
            Attempt::HeldBy("another master".into())
        })
    }

    /// Renews the lock; `Ok(false)` when another master holds it now.
    pub fn renew(&mut self) -> std::io::Result<bool> {
        let path = self.path();
        match Self::read(&path) {
            Some((_, Some(l))) if l.nonce == self.mine.nonce => {}
            _ => return Ok(false),
        }
        let tmp = self.dir.join(format!(
            ".{LOCK_FILE}.renew-{}-{}",
            self.mine.pid, self.mine.nonce
        ));
        let body = self.body()?;
        {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&body)?;
            f.sync_all()?;
        }
        fs::rename(&tmp, &path)?;
        Ok(true)
    }

    /// Gives the lock up, if this master holds it.
    pub fn release(&self) {
        let path = self.path();
        if let Some((_, Some(l))) = Self::read(&path) {
            if l.nonce == self.mine.nonce {
                let _ = fs::remove_file(&path);
            }
        }
    }
}

/// The election task of a master.
pub(crate) struct Election {
    task: tokio::task::JoinHandle<()>,
    lock: LeaderLock,
}

impl Election {
    /// Starts trying to take the lock; tells `events` when elected and when the lock is lost.
    pub(crate) fn spawn<E: From<LeaderEvent> + Send + 'static>(
        dir: PathBuf,
        holder: String,
        lease: Duration,
        events: mpsc::UnboundedSender<E>,
    ) -> Election {
        let lock = LeaderLock::new(&dir, &holder, lease);
        let mut working = lock.clone();
        let every = (lease / 3).max(Duration::from_millis(10));
        let task = tokio::spawn(async move {
            loop {
                let Ok((back, attempt)) = tokio::task::spawn_blocking(move || {
                    let r = working.try_acquire();
                    (working, r)
                })
                .await
                else {
                    return;
                };
                working = back;
                match attempt {
                    Ok(Attempt::Acquired) => break,
                    Ok(Attempt::HeldBy(h)) => tracing::debug!("standing by: {h} leads"),
                    Err(e) => tracing::warn!(error = %e, "cannot use the leader lock"),
                }
                tokio::time::sleep(every).await;
            }
            if events.send(LeaderEvent::Elected.into()).is_err() {
                return;
            }
            loop {
                tokio::time::sleep(every).await;
                let Ok((back, renewed)) = tokio::task::spawn_blocking(move || {
                    let r = working.renew();
                    (working, r)
                })
                .await
                else {
                    return;
                };
                working = back;
                match renewed {
                    Ok(true) => {}
                    Ok(false) => {
                        let _ = events.send(LeaderEvent::Lost.into());
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot renew the leader lock"),
                }
            }
        });
        Election { task, lock }
    }

    /// Stops the election; releases the lock when `release` (a clean shutdown).
    pub(crate) async fn stop(self, release: bool) {
        self.task.abort();
        let _ = self.task.await;
        if release {
            let lock = self.lock;
            let _ = tokio::task::spawn_blocking(move || lock.release()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "sparkwire-ha-{name}-{}-{}",
            std::process::id(),
            now_ms()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn one_master_holds_the_lock_until_its_lease_goes_stale() {
        let dir = temp_dir("stale");
        let lease = Duration::from_secs(60);
        let mut a = LeaderLock::new(&dir, "a", lease);
        let mut b = LeaderLock::new(&dir, "b", lease);
        assert_eq!(a.try_acquire().unwrap(), Attempt::Acquired);
        assert_eq!(b.try_acquire().unwrap(), Attempt::HeldBy("a".into()));
        assert!(a.renew().unwrap());
        // a stops renewing: its lease, as written, is older than a whole lease.
        let path = dir.join(LOCK_FILE);
        let mut held: Lease = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        held.renewed_ms -= 61_000;
        fs::write(&path, serde_json::to_vec(&held).unwrap()).unwrap();
        assert_eq!(b.try_acquire().unwrap(), Attempt::Acquired);
        assert!(!a.renew().unwrap(), "a must see that b took over");
        b.release();
        assert_eq!(a.try_acquire().unwrap(), Attempt::Acquired);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_torn_lock_file_is_taken_over() {
        let dir = temp_dir("torn");
        fs::write(dir.join(LOCK_FILE), b"{not json").unwrap();
        let mut a = LeaderLock::new(&dir, "a", Duration::from_secs(60));
        assert_eq!(a.try_acquire().unwrap(), Attempt::Acquired);
        let _ = fs::remove_dir_all(&dir);
    }
}
