//! The driver's LaunchTask, refused before sending when the serialized task is too large.

use super::{ConnectionError, ConnectionHandle};
use crate::messages::coarse::LaunchTask;
use crate::messages::CoarseMessage;
use crate::wire::{check_task_size, task_size_limit, TaskRef};

impl ConnectionHandle<CoarseMessage> {
    /// The largest serialized task this connection sends: its frame limit less the envelope
    /// reserve ([`task_size_limit`]).
    pub fn max_task_size(&self) -> usize {
        task_size_limit(self.max_frame_size())
    }

    /// Sends `LaunchTask`, unless the serialized task is [`max_task_size`](Self::max_task_size)
    /// bytes or more: then nothing is sent, the connection stays open, and the error is
    /// [`ConnectionError::TaskTooLarge`], whose text is Spark's.
    pub async fn launch_task(
        &self,
        task: TaskRef,
        launch: LaunchTask,
    ) -> Result<(), ConnectionError> {
        check_task_size(task, launch.data.len(), self.max_task_size())?;
        self.send(CoarseMessage::LaunchTask(launch)).await
    }

    /// [`launch_task`](Self::launch_task) without ever waiting: an executor that does not read
    /// (its queue is full) is closed with [`ConnectionError::SlowConsumer`], so that a driver
    /// never stalls its other executors for it.
    pub fn post_launch_task(
        &self,
        task: TaskRef,
        launch: LaunchTask,
    ) -> Result<(), ConnectionError> {
        check_task_size(task, launch.data.len(), self.max_task_size())?;
        self.post(CoarseMessage::LaunchTask(launch))
    }
}
