//! The driver's check before sending `LaunchTask`: a serialized task as large as the largest
//! message allowed is refused, as Spark's `CoarseGrainedSchedulerBackend.launchTasks` refuses it
//! (`serializedTask.limit() >= maxRpcMessageSize`), with Spark's text.
//!
//! On a connection, the task must leave room for the envelope around it, so the size allowed is
//! the frame limit less [`TASK_ENVELOPE_RESERVE`] ([`task_size_limit`]).

use super::limits::SPARK_MAX_SIZE_KEY;

/// Bytes of the frame limit kept for the envelope around a serialized task: 200 KiB, the reserve
/// Spark kept for the same purpose (`AkkaUtils.reservedSizeBytes`).
pub const TASK_ENVELOPE_RESERVE: usize = 200 * 1024;

/// The task as Spark names it in the message: `Serialized task {task_id}:{index}`, its task id and
/// its index in the task set (both 0 for the first task of the first job).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskRef {
    /// The task's id (Spark's `TaskDescription.taskId`).
    pub task_id: i64,
    /// The task's index in its task set, its partition (Spark's `TaskDescription.index`).
    pub index: i32,
}

/// A serialized task too large to send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Serialized task {}:{} was {size} bytes, which exceeds max allowed: {key} ({max_allowed} bytes). \
     Consider increasing {key} or using broadcast variables for large values.",
    task.task_id, task.index, key = SPARK_MAX_SIZE_KEY
)]
pub struct TaskTooLarge {
    /// The task.
    pub task: TaskRef,
    /// Its serialized size, in bytes.
    pub size: usize,
    /// The largest size allowed, in bytes.
    pub max_allowed: usize,
}

/// The largest serialized task a connection whose frame limit is `max_frame_size` can carry:
/// the limit less [`TASK_ENVELOPE_RESERVE`].
pub fn task_size_limit(max_frame_size: usize) -> usize {
    max_frame_size.saturating_sub(TASK_ENVELOPE_RESERVE)
}

/// Refuses a task whose serialized size is `max_allowed` bytes or more, as Spark does.
pub fn check_task_size(task: TaskRef, size: usize, max_allowed: usize) -> Result<(), TaskTooLarge> {
    if size >= max_allowed {
        return Err(TaskTooLarge {
            task,
            size,
            max_allowed,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_task_error_is_sparks_text_exactly() {
        let task = TaskRef {
            task_id: 0,
            index: 0,
        };
        let error = check_task_size(task, 209_725_157, 1_048_576).err();
        assert_eq!(
            error.map(|e| e.to_string()).as_deref(),
            Some(
                "Serialized task 0:0 was 209725157 bytes, which exceeds max allowed: \
                 spark.rpc.message.maxSize (1048576 bytes). Consider increasing \
                 spark.rpc.message.maxSize or using broadcast variables for large values."
            )
        );
    }

    #[test]
    fn a_task_exactly_at_the_limit_is_refused_and_one_byte_less_passes() {
        let task = TaskRef {
            task_id: 12,
            index: 3,
        };
        assert!(check_task_size(task, 1000, 1000).is_err());
        assert_eq!(check_task_size(task, 999, 1000), Ok(()));
        assert_eq!(check_task_size(task, 0, 1000), Ok(()));
    }

    #[test]
    fn connection_task_limit_keeps_200_kib_for_the_envelope() {
        assert_eq!(task_size_limit(1_048_576), 1_048_576 - 204_800);
        assert_eq!(task_size_limit(100), 0);
    }
}
