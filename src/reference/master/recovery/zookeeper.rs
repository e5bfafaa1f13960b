//! Spark's ZOOKEEPER recovery mode (`spark.deploy.recoveryMode=ZOOKEEPER`), with Spark's node
//! layout under the configured directory (`spark.deploy.zookeeper.dir`, default `/spark`):
//!
//! - `<dir>/leader_election`: one ephemeral sequential node per master standing for election,
//!   `latch-<sequence>`, holding the master's id. The master whose node has the lowest sequence
//!   leads (the LeaderLatch recipe Spark uses through Curator); the others each watch the node just
//!   before their own, and look again when it goes.
//! - `<dir>/master_status`: one persistent node per record, `app_<id>`, `worker_<id>`,
//!   `driver_<id>` as Spark names them, holding the record in sparkwire's own form (JSON).
//!
//! Every record write and removal is one multi-operation that first checks this master's own
//! election node: ZooKeeper applies it only if that node still exists, which it does only while
//! this master's session lives and so while it leads (sequence numbers only grow: no node can come
//! before it). A master whose session expired, paused or partitioned, cannot write; whatever it
//! does is refused whole.
//!
//! The session: a dropped connection pauses the master (writes wait for the client to reconnect,
//! the leadership is kept); the master stops leading when the session expires, or when the
//! connection stays down until four fifths of a session timeout after the ensemble's last
//! answer: before the ensemble can expire the session and another master be elected, so that
//! the old leader has stopped before the new one starts. On a clean shutdown the session is closed, which
//! removes the election node at once: a standby takes over without waiting for an expiry.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use zookeeper_client as zk;

use super::{
    decode_record, encode_record, record_name, BoxFuture, LeaderEvent, LeaderSink, RecoveryError,
    RecoveryStore, ZooKeeperConfig,
};
use crate::node::master::{Record, RecordKind, Stored};

/// The election's node directory under the configured one.
pub const LEADER_ELECTION: &str = "leader_election";
/// The records' node directory under the configured one.
pub const MASTER_STATUS: &str = "master_status";
/// The prefix of election nodes (ZooKeeper appends a ten-digit sequence).
pub const LATCH_PREFIX: &str = "latch-";

fn zk_err(what: &str) -> impl Fn(zk::Error) -> RecoveryError + '_ {
    move |e| RecoveryError::ZooKeeper(format!("{what}: {e}"))
}

/// The session and the election node of a master that leads.
#[derive(Clone)]
struct Held {
    client: zk::Client,
    /// The absolute path of this master's election node.
    node: String,
}

/// A master's side of the recovery store in ZooKeeper.
pub struct ZooKeeperStore {
    config: ZooKeeperConfig,
    holder: String,
    /// Set once elected; cleared for good when the leadership ends.
    held: Arc<Mutex<Option<Held>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ZooKeeperStore {
    /// A store for the master `holder` (its id, written in its election node).
    pub fn new(config: ZooKeeperConfig, holder: &str) -> ZooKeeperStore {
        ZooKeeperStore {
            config,
            holder: holder.to_string(),
            held: Arc::new(Mutex::new(None)),
            task: None,
        }
    }

    fn dir(&self) -> String {
        self.config.dir.trim_end_matches('/').to_string()
    }

    fn held(&self) -> Result<Held, RecoveryError> {
        self.held
            .lock()
            .ok()
            .and_then(|h| h.clone())
            .ok_or_else(|| RecoveryError::Fenced("this master does not lead".into()))
    }

    fn lose(held: &Mutex<Option<Held>>) {
        if let Ok(mut h) = held.lock() {
            *h = None;
        }
    }

    /// Waits until the session is connected again after a dropped connection; `Err` when it
    /// ended or the leadership was lost meanwhile.
    async fn reconnected(&self, held: &Held) -> Result<(), RecoveryError> {
        let mut states = held.client.state_watcher();
        loop {
            match states.peek_state() {
                zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                    return Ok(())
                }
                zk::SessionState::Disconnected => {}
                other => {
                    return Err(RecoveryError::Fenced(format!(
                        "the ZooKeeper session ended ({other})"
                    )))
                }
            }
            let limit = self.config.session_timeout;
            if tokio::time::timeout(limit, states.changed()).await.is_err() {
                return Err(RecoveryError::Fenced(format!(
                    "ZooKeeper unreachable for {limit:?}, the session timeout"
                )));
            }
            self.held()?;
        }
    }

    /// One fenced multi-operation, retried across dropped connections: `op` adds the writes
    /// after the check of this master's election node.
    async fn fenced(
        &self,
        what: &str,
        op: impl Fn(&mut zk::CheckWriter<'_>) -> Result<(), zk::Error>,
    ) -> Result<Result<(), zk::Error>, RecoveryError> {
        loop {
            let held = self.held()?;
            let mut writer = held
                .client
                .new_check_writer(&held.node, None)
                .map_err(zk_err(what))?;
            op(&mut writer).map_err(zk_err(what))?;
            match writer.commit().await {
                Ok(_) => return Ok(Ok(())),
                Err(zk::CheckWriteError::CheckFailed { source }) => {
                    Self::lose(&self.held);
                    return Err(RecoveryError::Fenced(format!(
                        "this master's election node {} is gone ({source})",
                        held.node
                    )));
                }
                Err(zk::CheckWriteError::OperationFailed { source, .. }) => return Ok(Err(source)),
                Err(zk::CheckWriteError::RequestFailed {
                    source: zk::Error::ConnectionLoss,
                }) => {
                    tracing::warn!("{what}: connection to ZooKeeper lost; waiting to reconnect");
                    self.reconnected(&held).await?;
                }
                Err(zk::CheckWriteError::RequestFailed {
                    source:
                        source @ (zk::Error::SessionExpired
                        | zk::Error::ClientClosed
                        | zk::Error::AuthFailed),
                }) => {
                    Self::lose(&self.held);
                    return Err(RecoveryError::Fenced(format!(
                        "the ZooKeeper session ended ({source})"
                    )));
                }
                Err(zk::CheckWriteError::RequestFailed { source }) => {
                    return Err(zk_err(what)(source))
                }
            }
        }
    }
}

/// The sequence of an election node's name (`latch-0000000007` → 7).
fn sequence(name: &str) -> Option<i64> {
    name.rsplit('-').next().and_then(|s| s.parse().ok())
}

/// Connects a session to `config.servers`.
async fn connect(config: &ZooKeeperConfig) -> Result<zk::Client, RecoveryError> {
    zk::Client::connector()
        .with_session_timeout(config.session_timeout)
        .with_connection_timeout(config.connect_timeout)
        .connect(&config.servers)
        .await
        .map_err(zk_err("connecting"))
}

/// Creates `path` and its parents as persistent nodes (existing ones are fine).
async fn ensure_dir(client: &zk::Client, path: &str) -> Result<(), RecoveryError> {
    let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client
        .mkdir(path, &options)
        .await
        .map_err(zk_err("creating the directories"))
}

/// Stands for election in one session until this master leads (`Ok(true)`) or the session
/// ends (`Ok(false)`).
async fn stand(client: &zk::Client, election: &str, node: &str) -> Result<bool, RecoveryError> {
    let mine = node.rsplit('/').next().unwrap_or(node).to_string();
    let my_seq = sequence(&mine);
    loop {
        let mut children = match client.list_children(election).await {
            Ok(c) => c,
            Err(zk::Error::ConnectionLoss) => {
                let mut states = client.state_watcher();
                if !matches!(states.peek_state(), zk::SessionState::Disconnected) {
                    // The state has not caught up with the loss yet: look again shortly.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
                match states.changed().await {
                    zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                        continue
                    }
                    _ => return Ok(false),
                }
            }
            Err(zk::Error::SessionExpired | zk::Error::ClientClosed) => return Ok(false),
            Err(e) => return Err(zk_err("listing the election")(e)),
        };
        children.retain(|c| c.starts_with(LATCH_PREFIX) && sequence(c).is_some());
        children.sort_by_key(|c| sequence(c));
        if !children.contains(&mine) {
            // Our node is gone: the session expired under us.
            return Ok(false);
        }
        let before = children.iter().rfind(|c| sequence(c) < my_seq).cloned();
        let Some(before) = before else {
            return Ok(true);
        };
        let path = format!("{election}/{before}");
        match client.check_and_watch_stat(&path).await {
            Ok((None, _)) => continue,
            Ok((Some(_), watcher)) => {
                tracing::info!("standing by: {before} comes first in {election}");
                let event = watcher.changed().await;
                if matches!(
                    event.session_state,
                    zk::SessionState::Expired | zk::SessionState::Closed
                ) {
                    return Ok(false);
                }
            }
            Err(zk::Error::ConnectionLoss) => tokio::time::sleep(Duration::from_millis(200)).await,
            Err(zk::Error::SessionExpired | zk::Error::ClientClosed) => return Ok(false),
            Err(e) => return Err(zk_err("watching the election")(e)),
        }
    }
}

/// Follows the session and the election node of a master that leads until it may no longer:
/// its node deleted, the session expired or closed, or the connection down for so long that the
/// ensemble may expire the session. Returns why.
///
/// The ensemble expires a session a session timeout after it last heard from it, and no sooner;
/// it heard from this one at the latest when the last request it answered was sent. So the
/// leader asks for its own node every tenth of the (negotiated) session timeout, keeps when it
/// sent the last request answered, and steps down four fifths of a session timeout after that
/// if the connection is not back: before the ensemble can expire the session and another master
/// be elected (as Spark's master, through Curator, steps down as soon as the connection is
/// suspended), while a connection back within that time keeps the leadership.
async fn hold(client: &zk::Client, node: &str, requested: Duration) -> String {
    let mut states = client.state_watcher();
    // The ensemble bounds the session timeout asked for; the client knows what it granted.
    let timeout = match client.session_timeout() {
        t if t.is_zero() => requested,
        t => t.min(requested),
    };
    let mut heard = tokio::time::Instant::now();
    loop {
        match states.peek_state() {
            zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
                let sent = tokio::time::Instant::now();
                match client.check_and_watch_stat(node).await {
                    Ok((None, _)) => return format!("this master's election node {node} is gone"),
                    Ok((Some(_), watcher)) => {
                        heard = sent;
                        tokio::select! {
                            event = watcher.changed() => {
                                if event.event_type == zk::EventType::NodeDeleted {
                                    return format!("this master's election node {node} was deleted");
                                }
                            }
                            _ = states.changed() => {}
                            // Ask again, so that `heard` stays recent.
                            _ = tokio::time::sleep(timeout / 10) => {}
                        }
                    }
                    // The state says what happened; look again.
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
            zk::SessionState::Disconnected => {
                let deadline = heard + timeout * 4 / 5;
                tracing::warn!(
                    "connection to ZooKeeper lost: pausing writes; stepping down unless it is back within {:?} (four fifths of the session timeout {timeout:?} after the ensemble's last answer)",
                    deadline.saturating_duration_since(tokio::time::Instant::now())
                );
                match tokio::time::timeout_at(deadline, states.changed()).await {
                    Ok(zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly) => {
                        tracing::info!("connection to ZooKeeper back: the session lives on");
                    }
                    Ok(_) => {}
                    Err(_) => {
                        return format!(
                            "ZooKeeper unreachable for {:?} since its last answer, four fifths of the session timeout {timeout:?} (the ensemble may expire the session and elect another master)",
                            heard.elapsed()
                        )
                    }
                }
            }
            other => return format!("the ZooKeeper session ended ({other})"),
        }
    }
}

impl RecoveryStore for ZooKeeperStore {
    fn elect(&mut self, events: LeaderSink) -> BoxFuture<'_, Result<(), RecoveryError>> {
        Box::pin(async move {
            let dir = self.dir();
            let election = format!("{dir}/{LEADER_ELECTION}");
            let status = format!("{dir}/{MASTER_STATUS}");
            let config = self.config.clone();
            let holder = self.holder.clone();
            let held = self.held.clone();
            // The first session is made here, so that a master given wrong servers says so at
            // once; later ones (after a standby's session expired) by the task.
            let first = connect(&config).await?;
            ensure_dir(&first, &election).await?;
            ensure_dir(&first, &status).await?;
            let task = tokio::spawn(async move {
                let mut client = Some(first);
                loop {
                    let c = match client.take() {
                        Some(c) => c,
                        None => match connect(&config).await {
                            Ok(c) => c,
                            Err(e) => {
                                tracing::warn!("{e}; trying again");
                                tokio::time::sleep(config.session_timeout / 3).await;
                                continue;
                            }
                        },
                    };
                    let options =
                        zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
                    let prefix = format!("{election}/{LATCH_PREFIX}");
                    let node = match c.create(&prefix, holder.as_bytes(), &options).await {
                        Ok((_, seq)) => format!("{prefix}{seq}"),
                        Err(e) => {
                            tracing::warn!(
                                "cannot stand for election in {election}: {e}; trying again"
                            );
                            tokio::time::sleep(config.session_timeout / 3).await;
                            continue;
                        }
                    };
                    tracing::info!("standing for election as {node}");
                    match stand(&c, &election, &node).await {
                        Ok(true) => {
                            if let Ok(mut h) = held.lock() {
                                *h = Some(Held {
                                    client: c.clone(),
                                    node: node.clone(),
                                });
                            }
                            tracing::info!("elected leader in ZooKeeper as {node}");
                            events(LeaderEvent::Elected);
                            let why = hold(&c, &node, config.session_timeout).await;
                            ZooKeeperStore::lose(&held);
                            tracing::error!("{why}: this master no longer leads");
                            events(LeaderEvent::Lost);
                            return;
                        }
                        Ok(false) => {
                            tracing::warn!("the ZooKeeper session of {node} ended while standing by; standing again");
                        }
                        Err(e) => {
                            tracing::warn!("{e}; standing again");
                            tokio::time::sleep(config.session_timeout / 3).await;
                        }
                    }
                }
            });
            self.task = Some(task);
            Ok(())
        })
    }

    fn read_all(&mut self) -> BoxFuture<'_, Result<Stored, RecoveryError>> {
        Box::pin(async move {
            let held = self.held()?;
            let status = format!("{}/{MASTER_STATUS}", self.dir());
            let mut names = held
                .client
                .list_children(&status)
                .await
                .map_err(zk_err("listing the records"))?;
            names.sort();
            let mut stored = Stored::default();
            for name in names {
                let path = format!("{status}/{name}");
                let body = match held.client.get_data(&path).await {
                    Ok((body, _)) => body,
                    Err(zk::Error::NoNode) => continue,
                    Err(e) => return Err(zk_err("reading a record")(e)),
                };
                if let Err(why) = decode_record(&mut stored, &name, &body) {
                    tracing::warn!(node = %path, "skipping a malformed record: {why}");
                }
            }
            Ok(stored)
        })
    }

    fn write<'a>(&'a mut self, record: &'a Record) -> BoxFuture<'a, Result<(), RecoveryError>> {
        Box::pin(async move {
            let body = encode_record(record)?;
            let path = format!(
                "{}/{MASTER_STATUS}/{}",
                self.dir(),
                record_name(record.kind(), record.id())
            );
            let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
            match self
                .fenced("writing a record", |w| w.add_create(&path, &body, &options))
                .await?
            {
                Ok(()) => Ok(()),
                Err(zk::Error::NodeExists) => self
                    .fenced("writing a record", |w| w.add_set_data(&path, &body, None))
                    .await?
                    .map_err(zk_err("writing a record")),
                Err(e) => Err(zk_err("writing a record")(e)),
            }
        })
    }

    fn remove<'a>(
        &'a mut self,
        kind: RecordKind,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), RecoveryError>> {
        Box::pin(async move {
            let path = format!("{}/{MASTER_STATUS}/{}", self.dir(), record_name(kind, id));
            match self
                .fenced("removing a record", |w| w.add_delete(&path, None))
                .await?
            {
                Ok(()) | Err(zk::Error::NoNode) => Ok(()),
                Err(e) => Err(zk_err("removing a record")(e)),
            }
        })
    }

    fn step_down(&mut self, clean: bool) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(task) = self.task.take() {
                task.abort();
                let _ = task.await;
            }
            let held = self.held.lock().ok().and_then(|mut h| h.take());
            if let Some(held) = held {
                if clean {
                    // Dropping the last client closes the session (its ephemeral node goes with
                    // it); wait, briefly, until the ensemble confirmed.
                    let mut states = held.client.state_watcher();
                    drop(held);
                    let _ = tokio::time::timeout(Duration::from_secs(3), async {
                        while !matches!(
                            states.changed().await,
                            zk::SessionState::Closed | zk::SessionState::Expired
                        ) {}
                    })
                    .await;
                    tracing::info!("ZooKeeper session closed");
                }
            }
        })
    }

    fn describe(&self) -> String {
        format!("zookeeper {}{}", self.config.servers, self.dir())
    }
}
