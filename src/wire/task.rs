//! The bytes of a [`TaskDescription`] inside `LaunchTask.data`: one MessagePack map of its fields,
//! laid out by the rules of message fields (SPEC.md §4, §10). The layout is the same in every
//! protocol version.

use bytes::Bytes;

use super::error::Error;
use super::msgpack::{value_len, Cursor};
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
            at: None,
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
///
/// The common layout (a map with string keys, each of the two once, integer values in range) is
/// read in one pass over the map's entries; anything else goes through the general decoder, so
/// the answer, errors included, is the general decoder's.
pub fn peek_task(data: &[u8]) -> Result<TaskHeader, Error> {
    let len = value_len(data)?;
    if len < data.len() {
        return Err(Error::TrailingBytes {
            extra: data.len() - len,
        });
    }
    match peek_common(data) {
        Some(header) => Ok(header),
        None => peek_general(data),
    }
}

/// `taskId` and `cpus` of a map laid out as encoders write it; `None` for anything else. `data`
/// has been measured as one well-formed value.
fn peek_common(data: &[u8]) -> Option<TaskHeader> {
    let mut c = Cursor::new(data);
    let entries = c.map_len().ok()?;
    let (mut task_id, mut cpus) = (None, None);
    for _ in 0..entries {
        if !matches!(c.peek(), Some(0xa0..=0xbf | 0xd9..=0xdb)) {
            return None;
        }
        match c.str().ok()? {
            "taskId" if task_id.is_none() => {
                task_id = Some(i64::try_from(c.int().ok()?).ok()?);
            }
            "cpus" if cpus.is_none() => {
                cpus = Some(i32::try_from(c.int().ok()?).ok()?);
            }
            "taskId" | "cpus" => return None,
            _ => {
                c.value().ok()?;
            }
        }
    }
    Some(TaskHeader {
        task_id: task_id?,
        cpus: cpus?,
    })
}

/// `taskId` and `cpus` through the general (serde) decoder, which skips the other fields.
fn peek_general(data: &[u8]) -> Result<TaskHeader, Error> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Header {
        task_id: i64,
        cpus: i32,
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
            at: None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::Payload;

    fn task(id: i64, cpus: i32) -> Vec<u8> {
        let mut properties = std::collections::BTreeMap::new();
        properties.insert("sparkwire.runner".to_string(), "pi".to_string());
        let mut resources = std::collections::BTreeMap::new();
        resources.insert(
            "gpu".to_string(),
            std::collections::BTreeMap::from([("0".to_string(), 1i64 << 54)]),
        );
        let t = TaskDescription {
            task_id: id,
            attempt_number: 0,
            executor_id: "3".into(),
            name: "task 1.0 in stage 0.0 (TID 1)".into(),
            index: 1,
            partition_id: 1,
            stage_id: 0,
            stage_attempt_id: 0,
            properties,
            cpus,
            resources,
            serialized_task: Payload::copy_from(&[7; 40]),
        };
        encode_task(&t).expect("encodes")
    }

    /// The one-pass reading answers as the general decoder does wherever it answers at all.
    fn agrees(data: &[u8]) {
        let fast = value_len(data)
            .ok()
            .filter(|n| *n == data.len())
            .and_then(|_| peek_common(data));
        if let Some(fast) = fast {
            assert_eq!(peek_general(data).ok(), Some(fast), "{data:02x?}");
        }
    }

    #[test]
    fn encoded_tasks_are_read_in_one_pass_as_the_general_decoder_reads_them() {
        for (id, cpus) in [(0, 1), (i64::MAX, i32::MAX), (-5, 0), (1 << 40, 3)] {
            let data = task(id, cpus);
            assert_eq!(
                peek_common(&data),
                Some(TaskHeader { task_id: id, cpus }),
                "the common layout takes the one pass"
            );
            assert_eq!(
                peek_task(&data).ok(),
                Some(TaskHeader { task_id: id, cpus })
            );
            agrees(&data);
        }
    }

    #[test]
    fn mangled_tasks_read_alike_or_fall_back_to_the_general_decoder() {
        let data = task(12, 2);
        // Every byte changed to a few telling values, and every truncation.
        for i in 0..data.len() {
            for b in [
                0x00, 0x7f, 0x80, 0x91, 0xa6, 0xc0, 0xc4, 0xcc, 0xcf, 0xd3, 0xff,
            ] {
                let mut m = data.clone();
                m[i] = b;
                agrees(&m);
                assert_eq!(
                    peek_task(&m).ok(),
                    if value_len(&m).ok() == Some(m.len()) {
                        peek_general(&m).ok()
                    } else {
                        None
                    },
                    "{m:02x?}"
                );
            }
            assert!(peek_task(&data[..i]).is_err());
        }
    }

    #[test]
    fn a_key_twice_a_wrong_type_or_a_value_out_of_range_is_left_to_the_general_decoder() {
        // {"taskId": 1, "cpus": 1, "taskId": 2}: serde refuses the duplicate.
        let mut dup = vec![0x83];
        for (k, v) in [("taskId", 1u8), ("cpus", 1), ("taskId", 2)] {
            dup.push(0xa0 | k.len() as u8);
            dup.extend_from_slice(k.as_bytes());
            dup.push(v);
        }
        assert_eq!(peek_common(&dup), None);
        assert!(peek_task(&dup).is_err());
        // cpus over i32::MAX.
        let mut big = vec![0x82, 0xa6];
        big.extend_from_slice(b"taskId");
        big.push(0x01);
        big.push(0xa4);
        big.extend_from_slice(b"cpus");
        big.extend_from_slice(&[0xce, 0x80, 0, 0, 0]);
        assert_eq!(peek_common(&big), None);
        assert!(peek_task(&big).is_err());
        // An array is refused (a struct is a map).
        assert!(peek_task(&[0x92, 0x01, 0x01]).is_err());
    }
}
