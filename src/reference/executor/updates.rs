//! How the executor writes the StatusUpdates its core decides.
//!
//! The updates go out on the driver's connection in the order the core decided them, without the
//! executor's event loop waiting: the connection's writer takes what was queued meanwhile in one
//! write, so that a task that ends before RUNNING was written goes out in the same write (both
//! frames stay, RUNNING first, as Spark's executor sends both). A small update is queued at once
//! ([`ConnectionHandle::post`]) while the connection's write queue is far from full; a large one,
//! or any update while the queue is fuller or the slow lane holds something, goes through the
//! slow lane, a task that waits for room ([`ConnectionHandle::send`]) as every update did before,
//! so that a large result being written never makes a post close the connection as a slow
//! consumer. The updates keep the order they were queued in.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::connection::{ConnectionError, ConnectionHandle, DEFAULT_MAX_OUTGOING_BYTES};
use crate::messages::coarse::StatusUpdate;
use crate::messages::CoarseMessage;

/// The largest task data queued at once; larger updates go through the slow lane.
const POST_DATA: usize = 64 * 1024;

/// Updates are queued at once only while the connection's write queue holds at most this much: a
/// quarter of its limit, which the executor's connection keeps at the default. The others are
/// queued while that holds too, and are small, so a post never finds the queue full.
const POST_QUEUED: usize = DEFAULT_MAX_OUTGOING_BYTES / 4;

/// The updates waiting for room, in order; `busy` while one taken from it is being queued.
#[derive(Default)]
struct Lane {
    waiting: VecDeque<StatusUpdate>,
    busy: bool,
}

/// The executor's updates to its driver.
pub(super) struct Updates {
    driver: ConnectionHandle<CoarseMessage>,
    not_sent: NotSent,
    lane: Mutex<Lane>,
    /// Woken when the slow lane has something.
    slow: Notify,
}

/// Where an update that cannot be sent as it is goes: `(task id, its cores, why)`, for the core
/// to report the task FAILED instead.
pub(super) type NotSent = Box<dyn Fn(i64, i32, String) + Send + Sync>;

impl Updates {
    /// Updates on `driver`; one that cannot be sent as it is goes to `not_sent`.
    /// [`Updates::slow_lane`] must run for the updates that wait for room.
    pub(super) fn new(driver: ConnectionHandle<CoarseMessage>, not_sent: NotSent) -> Arc<Self> {
        Arc::new(Updates {
            driver,
            not_sent,
            lane: Mutex::new(Lane::default()),
            slow: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Lane> {
        // Nothing panics while holding it; a poisoned lane is still in order.
        self.lane
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `update`, from any thread, without waiting. Once the connection is closed updates
    /// are dropped: the executor's loop sees the close and ends.
    pub(super) fn push(&self, update: StatusUpdate) {
        let mut lane = self.lock();
        let post = lane.waiting.is_empty()
            && !lane.busy
            && update.data.len() <= POST_DATA
            && self.driver.queued_bytes() <= POST_QUEUED;
        if !post {
            lane.waiting.push_back(update);
            drop(lane);
            self.slow.notify_one();
            return;
        }
        // Posted with the lane held, so that nothing of the slow lane is queued meanwhile.
        let (task_id, cpus) = (update.task_id, update.task_cpus);
        if let Err(ConnectionError::Outbound(e)) =
            self.driver.post(CoarseMessage::StatusUpdate(update))
        {
            (self.not_sent)(task_id, cpus, e.to_string());
        }
    }

    /// Sends the updates that wait for room, in order, until the connection closes.
    pub(super) async fn slow_lane(self: Arc<Self>) {
        loop {
            let next = {
                let mut lane = self.lock();
                let next = lane.waiting.pop_front();
                lane.busy = next.is_some();
                next
            };
            let Some(update) = next else {
                self.slow.notified().await;
                continue;
            };
            let (task_id, cpus) = (update.task_id, update.task_cpus);
            match self.driver.send(CoarseMessage::StatusUpdate(update)).await {
                Ok(()) => {}
                Err(ConnectionError::Outbound(e)) => (self.not_sent)(task_id, cpus, e.to_string()),
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::{Connection, ConnectionConfig, Incoming};
    use crate::messages::{Payload, TaskState};
    use crate::wire::handshake::Role;
    use std::time::Duration;

    async fn pair() -> (Connection<CoarseMessage>, Connection<CoarseMessage>) {
        // A small pipe: a large frame stays in the executor's queue until the driver reads.
        let (a, b) = tokio::io::duplex(16 * 1024);
        let driver = tokio::spawn(Connection::accept(
            b,
            Role::Driver,
            "driver",
            ConnectionConfig::default(),
        ));
        let executor = Connection::connect(a, Role::Executor, "app/0", ConnectionConfig::default())
            .await
            .expect("connects");
        let driver = driver.await.expect("joins").expect("accepts");
        (executor, driver)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn updates_behind_a_large_one_wait_in_order_and_never_close_the_connection() {
        let (executor, mut driver) = pair().await;
        let updates = Updates::new(executor.handle(), Box::new(|_, _, _| {}));
        let update = |task_id, state, data| StatusUpdate {
            executor_id: "0".into(),
            task_id,
            state,
            data,
            task_cpus: 1,
            resources: Default::default(),
        };
        let lane = tokio::spawn(Arc::clone(&updates).slow_lane());
        // More than the queue's byte limit: it waits for room in the slow lane.
        let big = Payload::from(vec![7u8; DEFAULT_MAX_OUTGOING_BYTES + 1024]);
        updates.push(update(1, TaskState::Finished, big));
        // Small updates from task threads while it is queued: they may not be posted past it.
        let from_threads = Arc::clone(&updates);
        std::thread::spawn(move || {
            for task in 2..200 {
                from_threads.push(update(task, TaskState::Running, Payload::default()));
            }
        })
        .join()
        .expect("pushes");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(executor.handle().close_reason().is_none(), "still open");
        let mut seen = Vec::new();
        while seen.len() < 199 {
            let incoming = tokio::time::timeout(Duration::from_secs(60), driver.recv())
                .await
                .expect("in time")
                .expect("received");
            match incoming {
                Incoming::Message(CoarseMessage::StatusUpdate(s)) => {
                    assert_eq!(s.executor_id, "0");
                    seen.push((s.task_id, s.data.len()));
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(seen[0], (1, DEFAULT_MAX_OUTGOING_BYTES + 1024));
        let order: Vec<i64> = seen.iter().map(|(id, _)| *id).collect();
        assert_eq!(order, (1..200).collect::<Vec<_>>());
        // With the lane empty again, small updates are posted at once and still in order.
        updates.push(update(200, TaskState::Running, Payload::default()));
        updates.push(update(
            200,
            TaskState::Finished,
            Payload::from(vec![1u8; 8]),
        ));
        for state in [TaskState::Running, TaskState::Finished] {
            match driver.recv().await.expect("received") {
                Incoming::Message(CoarseMessage::StatusUpdate(s)) => {
                    assert_eq!((s.task_id, s.state), (200, state));
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        lane.abort();
    }
}
