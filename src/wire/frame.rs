//! Whole frames as byte strings: a 4-byte big-endian length, then the envelope.

use bytes::Bytes;

use super::envelope::{decode_envelope, encode_envelope, Envelope};
use super::error::Error;
use crate::messages::{Family, Version};

/// Bytes in the length prefix.
pub const FRAME_HEADER_LEN: usize = 4;

/// Encodes `env` as one whole frame, length prefix included.
pub fn encode_frame<F: Family>(env: &Envelope<F>, version: Version) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; FRAME_HEADER_LEN];
    encode_envelope(env, version, &mut out)?;
    let body_len = out.len() - FRAME_HEADER_LEN;
    let len = u32::try_from(body_len).map_err(|_| Error::Encode {
        name: env
            .message()
            .map(|m| m.name())
            .unwrap_or("envelope")
            .to_string(),
        detail: format!("{body_len} bytes do not fit a frame's 4-byte length"),
    })?;
    out[..FRAME_HEADER_LEN].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// Decodes one whole frame, length prefix included; the prefix must match the bytes that follow.
///
/// After the prefix this is [`decode_envelope`], the one decoding path: `FrameCodec` (and so
/// every connection of `sparkwire::connection`) decodes each frame body with it too, which is
/// why `tests/decoder_live.rs` finds every vector of `protocol/vectors/decoder.json` decided alike
/// here and on a live connection.
pub fn decode_frame<F: Family>(frame: &Bytes, version: Version) -> Result<Envelope<F>, Error> {
    if frame.len() < FRAME_HEADER_LEN {
        return Err(Error::InvalidMessagePack(format!(
            "a frame starts with a {FRAME_HEADER_LEN}-byte length; only {} byte(s) given",
            frame.len()
        )));
    }
    let mut prefix = [0u8; FRAME_HEADER_LEN];
    prefix.copy_from_slice(&frame[..FRAME_HEADER_LEN]);
    let declared = u32::from_be_bytes(prefix) as usize;
    let actual = frame.len() - FRAME_HEADER_LEN;
    if declared > actual {
        return Err(Error::InvalidMessagePack(format!(
            "frame declares {declared} bytes but {actual} follow its length prefix"
        )));
    }
    if declared < actual {
        return Err(Error::TrailingBytes {
            extra: actual - declared,
        });
    }
    decode_envelope(&frame.slice(FRAME_HEADER_LEN..), version)
}
