//! Layer 2: how messages cross a connection. A frame is a 4-byte big-endian length followed by one
//! MessagePack value, an [`Envelope`] holding a message laid out for the
//! negotiated version.

pub mod auth_vectors;
pub mod body;
pub mod check;
pub mod codec;
pub mod decoder_vectors;
pub mod envelope;
mod error;
pub mod frame;
mod frame_error;
pub mod handshake;
pub mod limits;
pub mod msgpack;
mod strict;
pub mod task;
pub mod task_size;
pub mod vectors;

pub use codec::{FrameCodec, RawFrameCodec};
pub use envelope::{decode_envelope, encode_envelope, Envelope, Reply};
pub use error::Error;
pub use frame::{decode_frame, encode_frame, FRAME_HEADER_LEN};
pub use frame_error::FrameError;
pub use limits::{FrameLimit, LimitSetting};
