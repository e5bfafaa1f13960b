//! Layer 2: how messages cross a connection. A frame is a 4-byte big-endian length followed by one
//! MessagePack value, an [`Envelope`] holding a message laid out for the
//! negotiated version.
//!
//! Everything here is IO-free but [`FrameCodec`] and [`RawFrameCodec`] (the tokio-util codecs)
//! and the byte-stream side of the handshake, which come with the feature `tokio`; [`check`]
//! (bytes against the definition) and [`vectors`] (generating the golden vectors) come with the
//! feature `testing`.
//!
//! Module convention, as in the rest of the crate: the files that implement this layer are private
//! and their items are re-exported here, each at one path (`sparkwire::wire::Envelope`); the public
//! submodules are namespaces of their own, whose items are only reachable through them:
//! [`handshake`], [`msgpack`] (the MessagePack reader the decoders share), [`check`] and
//! [`vectors`].

mod body;
#[cfg(feature = "testing")]
pub mod check;
mod close;
#[cfg(feature = "tokio")]
mod codec;
mod de;
mod envelope;
mod error;
mod frame;
mod frame_error;
pub mod handshake;
#[cfg(feature = "trace")]
mod json;
mod limits;
pub mod msgpack;
mod strict;
mod task;
mod task_failure;
mod task_size;
#[cfg(feature = "testing")]
pub mod vectors;

pub use body::{
    check_sendable, decode_message, encode_message, fields_from, read_message, write_message,
};
pub use close::{error_kind, CloseReason};
#[cfg(feature = "tokio")]
pub use codec::{envelope_label, FrameCodec, RawFrameCodec};
pub use envelope::{decode_envelope, encode_envelope, Envelope, Reply};
pub use error::{Error, Location};
pub use frame::{decode_frame, encode_frame, FRAME_HEADER_LEN};
pub use frame_error::{prefix_is_http, FrameError};
#[cfg(feature = "trace")]
pub use json::{fields_from_readable, plain_from_json, plain_from_readable, value_from_json};
pub use limits::{
    FrameLimit, LimitSetting, DEFAULT_MAX_FRAME_SIZE, HANDSHAKE_FRAME_LIMIT, MAX_FRAME_SIZE_FIELD,
    READ_CHUNK, SPARK_MAX_SIZE_KEY,
};
pub use task::{decode_task, encode_task, peek_task, TaskHeader};
pub use task_failure::{decode_failure, encode_failure, TaskFailure};
pub use task_size::{
    check_task_size, task_size_limit, TaskRef, TaskTooLarge, TASK_ENVELOPE_RESERVE,
};
