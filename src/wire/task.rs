//! The bytes of a [`TaskDescription`] inside `LaunchTask.data`: one MessagePack map of its fields,
//! laid out by the rules of message fields (SPEC.md §4, §10). The layout is the same in every
//! protocol version.

use bytes::Bytes;

use super::error::Error;
use super::msgpack::value_len;
use crate::messages::with_source_frame;
use crate::messages::TaskDescription;

/// Encodes a task description.
pub fn encode_task(task: &TaskDescription) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let mut ser = rmp_serde::Serializer::new(&mut out).with_struct_map();
    serde::Serialize::serialize(task, &mut ser).map_err(|e| Error::Encode {
        name: "TaskDescription".into(),
        detail: e.to_string(),
    })?;
    Ok(out)
}

/// Decodes a task description; `serializedTask` is sliced from `data`, not copied.
pub fn decode_task(data: &Bytes) -> Result<TaskDescription, Error> {
    let len = value_len(data)?;
    if len < data.len() {
        return Err(Error::TrailingBytes {
            extra: data.len() - len,
        });
    }
    with_source_frame(data, || {
        super::strict::from_slice(data).map_err(|e| Error::InvalidFields {
            name: "TaskDescription".into(),
            version: crate::messages::Version::LATEST,
            detail: e.to_string(),
        })
    })
}

/// A task description's id and cpus, read without building the whole description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskHeader {
    /// `taskId`.
    pub task_id: i64,
    /// `cpus`.
    pub cpus: i32,
}

/// Reads only `taskId` and `cpus` of a task description (other fields are skipped, nothing is
/// copied): what a validator needs from each `LaunchTask`.
pub fn peek_task(data: &[u8]) -> Result<TaskHeader, Error> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Header {
        task_id: i64,
        cpus: i32,
    }
    let len = value_len(data)?;
    if len < data.len() {
        return Err(Error::TrailingBytes {
            extra: data.len() - len,
        });
    }
    super::strict::from_slice::<Header>(data)
        .map(|h| TaskHeader {
            task_id: h.task_id,
            cpus: h.cpus,
        })
        .map_err(|e| Error::InvalidFields {
            name: "TaskDescription".into(),
            version: crate::messages::Version::LATEST,
            detail: e.to_string(),
        })
}
