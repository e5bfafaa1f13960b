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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::reference::clock::now_ms;

/// The lock file's name in the recovery directory.
pub const LOCK_FILE: &str = "master.lock";

/// What the election tells the master (both recovery modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderEvent {
    /// This master holds the lock: it is the active one.
    Elected,
    /// This master may no longer lead (another took the lock, a renewal failed, the ZooKeeper
    /// session expired): it must stop.
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

    /// Whether the lock file names this holding now.
    pub fn holds(&self) -> bool {
        matches!(Self::read(&self.path()), Some((_, Some(l))) if l.nonce == self.mine.nonce)
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

/// What the election task needs of a lock: [`LeaderLock`], or a stand-in in tests.
pub trait Lock: Clone + Send + 'static {
    /// Tries once to take the lock.
    fn try_acquire(&mut self) -> std::io::Result<Attempt>;
    /// Renews the lock; `Ok(false)` when another master holds it now.
    fn renew(&mut self) -> std::io::Result<bool>;
    /// Gives the lock up, if this master holds it.
    fn release(&self);
}

impl Lock for LeaderLock {
    fn try_acquire(&mut self) -> std::io::Result<Attempt> {
        LeaderLock::try_acquire(self)
    }
    fn renew(&mut self) -> std::io::Result<bool> {
        LeaderLock::renew(self)
    }
    fn release(&self) {
        LeaderLock::release(self)
    }
}

/// Whether this master leads, as its election last learned: set when elected, cleared for good
/// when the lock is lost, a renewal fails, or a renewal is late (the lease may have run out).
#[derive(Debug, Clone, Default)]
pub struct Leading(Arc<Mutex<Option<Instant>>>);

impl Leading {
    /// Leading, and the lease (as this master last renewed it) has not run out.
    pub fn now(&self) -> bool {
        self.0
            .lock()
            .map(|until| until.is_some_and(|u| Instant::now() < u))
            .unwrap_or(false)
    }

    fn renewed(&self, lease: Duration) {
        if let Ok(mut until) = self.0.lock() {
            *until = Some(Instant::now() + lease);
        }
    }

    fn lost(&self) {
        if let Ok(mut until) = self.0.lock() {
            *until = None;
        }
    }
}

/// The election task of a master.
pub(crate) struct Election<L: Lock = LeaderLock> {
    task: tokio::task::JoinHandle<()>,
    lock: L,
}

impl<L: Lock> Election<L> {
    /// Starts trying to take `lock`; tells `events` when elected and when the lock is lost. A
    /// renewal that fails (the file system refused the write) or comes later than a third of
    /// the lease after it was due counts as lost: the master steps down rather than lead on a
    /// lease that may have run out for the others. `leading` follows it.
    pub(crate) fn spawn(
        lock: L,
        lease: Duration,
        leading: Leading,
        events: impl Fn(LeaderEvent) + Send + Sync + 'static,
    ) -> Election<L> {
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
            // The lease counts from before the write that took the lock.
            leading.renewed(lease - every);
            events(LeaderEvent::Elected);
            loop {
                tokio::time::sleep(every).await;
                let started = Instant::now();
                let Ok((back, renewed)) = tokio::task::spawn_blocking(move || {
                    let r = working.renew();
                    (working, r)
                })
                .await
                else {
                    return;
                };
                working = back;
                let why = match renewed {
                    Ok(true) if started.elapsed() < every => {
                        leading.renewed(lease.saturating_sub(started.elapsed()));
                        continue;
                    }
                    Ok(true) => format!(
                        "renewing the leader lock took {:?}, over a third of the lease",
                        started.elapsed()
                    ),
                    Ok(false) => "another master holds the leader lock".to_string(),
                    Err(e) => format!("cannot renew the leader lock: {e}"),
                };
                leading.lost();
                tracing::error!("{why}: stepping down");
                events(LeaderEvent::Lost);
                return;
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

    /// A lock whose renewals fail after `ok` of them.
    #[derive(Clone)]
    struct Failing {
        ok: Arc<Mutex<u32>>,
    }

    impl Lock for Failing {
        fn try_acquire(&mut self) -> std::io::Result<Attempt> {
            Ok(Attempt::Acquired)
        }
        fn renew(&mut self) -> std::io::Result<bool> {
            let mut ok = self.ok.lock().unwrap();
            if *ok == 0 {
                return Err(std::io::Error::other("disk full"));
            }
            *ok -= 1;
            Ok(true)
        }
        fn release(&self) {}
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_renewal_steps_the_master_down() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let leading = Leading::default();
        let lock = Failing {
            ok: Arc::new(Mutex::new(2)),
        };
        let election = Election::spawn(
            lock,
            Duration::from_millis(300),
            leading.clone(),
            move |e| {
                let _ = tx.send(e);
            },
        );
        assert_eq!(rx.recv().await, Some(LeaderEvent::Elected));
        assert!(leading.now(), "elected: leading");
        assert_eq!(rx.recv().await, Some(LeaderEvent::Lost));
        assert!(!leading.now(), "a failed renewal ends the leadership");
        assert_eq!(rx.recv().await, None, "the election stopped");
        election.stop(false).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_deposed_holder_learns_it_at_its_next_renewal() {
        let dir = temp_dir("deposed");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let leading = Leading::default();
        let lease = Duration::from_millis(600);
        let lock = LeaderLock::new(&dir, "a", lease);
        let election = Election::spawn(lock.clone(), lease, leading.clone(), move |e| {
            let _ = tx.send(e);
        });
        assert_eq!(rx.recv().await, Some(LeaderEvent::Elected));
        assert!(lock.holds());
        // Another master's lease replaces a's (as a takeover of a stale lock would).
        let other = Lease {
            holder: "b".into(),
            pid: 1,
            nonce: 42,
            renewed_ms: now_ms(),
        };
        fs::write(dir.join(LOCK_FILE), serde_json::to_vec(&other).unwrap()).unwrap();
        assert!(!lock.holds());
        assert_eq!(rx.recv().await, Some(LeaderEvent::Lost));
        assert!(!leading.now());
        election.stop(true).await;
        let left: Lease = serde_json::from_slice(&fs::read(dir.join(LOCK_FILE)).unwrap()).unwrap();
        assert_eq!(
            left, other,
            "a deposed master never releases the other's lock"
        );
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
