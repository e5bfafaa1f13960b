//! How a task's failure travels in `StatusUpdate.data` (FAILED or KILLED): an
//! `ErrorDescription` as MessagePack.

use crate::messages::{ErrorDescription, Payload};

/// Why a task did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{class_name}: {message}")]
pub struct TaskFailure {
    /// Error class, as Spark names exceptions (`java.lang.ArithmeticException`) or `TaskKilled`.
    pub class_name: String,
    /// Message.
    pub message: String,
}

impl TaskFailure {
    /// The class name of a killed task.
    pub const KILLED: &'static str = "TaskKilled";

    /// A failure.
    pub fn new(class_name: impl Into<String>, message: impl Into<String>) -> Self {
        TaskFailure {
            class_name: class_name.into(),
            message: message.into(),
        }
    }

    /// The failure of a task killed on request.
    pub fn killed(reason: impl Into<String>) -> Self {
        TaskFailure::new(Self::KILLED, reason)
    }

    /// Whether this is a kill rather than an error.
    pub fn is_kill(&self) -> bool {
        self.class_name == Self::KILLED
    }
}

/// The `StatusUpdate.data` of a FAILED or KILLED task.
pub fn encode_failure(f: &TaskFailure) -> Payload {
    let desc = ErrorDescription::new(f.class_name.clone(), f.message.clone());
    let mut out = Vec::new();
    let mut ser = rmp_serde::Serializer::new(&mut out).with_struct_map();
    match serde::Serialize::serialize(&desc, &mut ser) {
        Ok(()) => Payload::from(out),
        // Serializing two strings into a Vec cannot fail; keep the text if it ever did.
        Err(_) => Payload::copy_from(f.message.as_bytes()),
    }
}

/// Reads the `StatusUpdate.data` of a FAILED or KILLED task; unreadable data becomes a failure
/// that says so, never a panic.
pub fn decode_failure(data: &[u8]) -> TaskFailure {
    match rmp_serde::from_slice::<ErrorDescription>(data) {
        Ok(d) => TaskFailure::new(d.class_name, d.message),
        Err(e) => TaskFailure::new(
            "sparkwire.UnreadableFailure",
            format!("failure data could not be read: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_round_trip_and_garbage_is_reported_not_panicked() {
        let f = TaskFailure::new("java.lang.RuntimeException", "boom");
        assert_eq!(decode_failure(encode_failure(&f).as_slice()), f);
        let g = decode_failure(&[0xc1, 0x00]);
        assert_eq!(g.class_name, "sparkwire.UnreadableFailure");
    }
}
