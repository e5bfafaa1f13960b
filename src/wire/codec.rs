//! Frame codecs for tokio-util's `FramedRead` / `FramedWrite`.
//!
//! * [`RawFrameCodec`] cuts a byte stream into frame bodies ([`Bytes`]) and enforces a
//!   [`FrameLimit`]; the handshake uses it directly.
//! * [`FrameCodec`] adds the envelope: it decodes and encodes [`Envelope`]s of one family in the
//!   negotiated [`Version`].
//!
//! Memory stays bounded by what the peer really sends: a length prefix over the limit is refused
//! as soon as its 4 bytes arrive, and the decoder never reserves more than [`READ_CHUNK`] bytes
//! ahead of the bytes received. Decoding does not copy payloads: the frame body is split off the
//! read buffer and payloads are slices of it.

use std::marker::PhantomData;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::envelope::{decode_envelope, encode_envelope, Envelope, Reply};
use super::frame_error::FrameError;
use super::limits::{FrameLimit, READ_CHUNK};
use super::FRAME_HEADER_LEN;
use crate::messages::{Family, Version};

/// What an envelope carries, for errors and counters: the message name, or `reply` / `failure`
/// / `close` for replies, failures and closes that carry no message.
pub fn envelope_label<F: Family>(env: &Envelope<F>) -> &'static str {
    match env {
        Envelope::Send(m) | Envelope::Ask { message: m, .. } => m.name(),
        Envelope::Reply {
            reply: Reply::Message(m),
            ..
        } => m.name(),
        Envelope::Reply { .. } => "reply",
        Envelope::Failure { .. } => "failure",
        Envelope::Close(_) => "close",
    }
}

/// Room an encoder starts with: most control messages fit, so they are written without growing
/// the buffer.
const INITIAL_ENCODE_CAPACITY: usize = 2048;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadState {
    /// Waiting for a length prefix.
    Head,
    /// The prefix declared this many body bytes; waiting for them.
    Body(usize),
}

/// Cuts a byte stream into frame bodies: a 4-byte big-endian length `N`, then `N` bytes.
///
/// Decoding yields each body as [`Bytes`] split off the read buffer (no copy). Encoding writes a
/// body with its prefix. Both directions refuse frames over the [`FrameLimit`].
#[derive(Debug, Clone)]
pub struct RawFrameCodec {
    limit: FrameLimit,
    state: ReadState,
    last_frame_len: usize,
}

impl RawFrameCodec {
    /// A codec enforcing `limit`.
    pub fn new(limit: FrameLimit) -> Self {
        RawFrameCodec {
            limit,
            state: ReadState::Head,
            last_frame_len: 0,
        }
    }

    /// The limit enforced.
    pub fn limit(&self) -> FrameLimit {
        self.limit
    }

    /// Size on the wire, prefix included, of the last frame decoded.
    pub fn last_frame_len(&self) -> usize {
        self.last_frame_len
    }

    /// The length of a body of `len` bytes, if `limit` allows it; otherwise the encoder's error.
    fn check_outgoing(&self, name: &'static str, len: usize) -> Result<u32, FrameError> {
        let size = len as u64;
        match u32::try_from(len) {
            Ok(prefix) if self.limit.allows(size) => Ok(prefix),
            _ => Err(FrameError::EncodedTooLarge {
                name,
                size,
                limit: self.limit.max(),
                setting: self.limit.setting(),
            }),
        }
    }
}

impl Decoder for RawFrameCodec {
    type Item = Bytes;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        if self.state == ReadState::Head {
            if src.len() < FRAME_HEADER_LEN {
                src.reserve(FRAME_HEADER_LEN - src.len());
                return Ok(None);
            }
            let mut prefix = [0u8; FRAME_HEADER_LEN];
            prefix.copy_from_slice(&src[..FRAME_HEADER_LEN]);
            let declared = u64::from(u32::from_be_bytes(prefix));
            if !self.limit.allows(declared) {
                return Err(FrameError::DeclaredTooLarge {
                    declared,
                    limit: self.limit.max(),
                    setting: self.limit.setting(),
                });
            }
            // `allows` caps the length at u32::MAX, which fits a usize on every supported target.
            let len = usize::try_from(declared).map_err(|_| FrameError::DeclaredTooLarge {
                declared,
                limit: self.limit.max(),
                setting: self.limit.setting(),
            })?;
            src.advance(FRAME_HEADER_LEN);
            self.state = ReadState::Body(len);
        }
        let ReadState::Body(len) = self.state else {
            return Ok(None);
        };
        if src.len() < len {
            // Room for the next chunk only: the buffer grows as the bytes arrive, never on the
            // declaration alone.
            src.reserve((len - src.len()).min(READ_CHUNK));
            return Ok(None);
        }
        self.state = ReadState::Head;
        self.last_frame_len = FRAME_HEADER_LEN + len;
        Ok(Some(src.split_to(len).freeze()))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        if let Some(frame) = self.decode(src)? {
            return Ok(Some(frame));
        }
        match self.state {
            ReadState::Head if src.is_empty() => Ok(None),
            ReadState::Head => Err(FrameError::Truncated {
                declared: None,
                received: src.len(),
            }),
            ReadState::Body(len) => Err(FrameError::Truncated {
                declared: Some(len as u64),
                received: src.len(),
            }),
        }
    }
}

impl Encoder<&[u8]> for RawFrameCodec {
    type Error = FrameError;

    fn encode(&mut self, body: &[u8], dst: &mut BytesMut) -> Result<(), FrameError> {
        let prefix = self.check_outgoing("frame", body.len())?;
        dst.reserve(FRAME_HEADER_LEN + body.len());
        dst.put_u32(prefix);
        dst.extend_from_slice(body);
        Ok(())
    }
}

/// Decodes and encodes envelopes of family `F` in one protocol version, one frame each.
///
/// Decoding is zero-copy for payloads. Encoding refuses a frame over the limit, and a message that
/// is local or absent from the version, before writing any byte of it. Over a stream, wrap it in
/// `tokio_util::codec::Framed` (`examples/framed_codec.rs`); on bytes:
///
/// ```
/// use bytes::BytesMut;
/// use sparkwire::messages::{deploy::KillDriver, DeployMessage, Version};
/// use sparkwire::wire::{Envelope, FrameCodec, FrameLimit};
/// use tokio_util::codec::Decoder;
///
/// let mut codec = FrameCodec::<DeployMessage>::new(Version::V2, FrameLimit::DEFAULT);
/// let sent = Envelope::Send(DeployMessage::from(KillDriver::new("driver-1".into())));
/// let mut buf = BytesMut::from(&codec.encode_to_bytes(&sent)?[..]);
/// // Half a frame decodes to nothing yet; the whole frame to the envelope.
/// let mut half = buf.split_to(buf.len() / 2);
/// assert_eq!(codec.decode(&mut half)?, None);
/// half.unsplit(buf);
/// assert_eq!(codec.decode(&mut half)?, Some(sent));
/// # Ok::<(), sparkwire::wire::FrameError>(())
/// ```
#[derive(Debug)]
pub struct FrameCodec<F> {
    raw: RawFrameCodec,
    version: Version,
    family: PhantomData<fn() -> F>,
}

impl<F> Clone for FrameCodec<F> {
    fn clone(&self) -> Self {
        FrameCodec {
            raw: self.raw.clone(),
            version: self.version,
            family: PhantomData,
        }
    }
}

impl<F: Family> FrameCodec<F> {
    /// A codec for `version` enforcing `limit`.
    pub fn new(version: Version, limit: FrameLimit) -> Self {
        FrameCodec {
            raw: RawFrameCodec::new(limit),
            version,
            family: PhantomData,
        }
    }

    /// Continues a raw codec (after the handshake) with envelopes in `version` and a new limit.
    pub fn from_raw(raw: RawFrameCodec, version: Version, limit: FrameLimit) -> Self {
        let mut codec = FrameCodec::new(version, limit);
        codec.raw.state = raw.state;
        codec
    }

    /// The version frames are encoded and decoded in.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The limit enforced.
    pub fn limit(&self) -> FrameLimit {
        self.raw.limit()
    }

    /// Size on the wire, prefix included, of the last frame decoded.
    pub fn last_frame_len(&self) -> usize {
        self.raw.last_frame_len()
    }

    /// Encodes `env` as a whole frame, length prefix included, into a new vector.
    pub fn encode_to_vec(&self, env: &Envelope<F>) -> Result<Vec<u8>, FrameError> {
        let mut out = Vec::with_capacity(INITIAL_ENCODE_CAPACITY);
        out.extend_from_slice(&[0u8; FRAME_HEADER_LEN]);
        encode_envelope(env, self.version, &mut out)?;
        let prefix = self
            .raw
            .check_outgoing(envelope_label(env), out.len() - FRAME_HEADER_LEN)?;
        out[..FRAME_HEADER_LEN].copy_from_slice(&prefix.to_be_bytes());
        Ok(out)
    }

    /// Encodes `env` as a whole frame into [`Bytes`], without copying it after encoding.
    pub fn encode_to_bytes(&self, env: &Envelope<F>) -> Result<Bytes, FrameError> {
        self.encode_to_vec(env).map(Bytes::from)
    }
}

impl<F: Family> Decoder for FrameCodec<F> {
    type Item = Envelope<F>;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Envelope<F>>, FrameError> {
        match self.raw.decode(src)? {
            Some(body) => Ok(Some(decode_envelope(&body, self.version)?)),
            None => Ok(None),
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Envelope<F>>, FrameError> {
        match self.raw.decode_eof(src)? {
            Some(body) => Ok(Some(decode_envelope(&body, self.version)?)),
            None => Ok(None),
        }
    }
}

impl<F: Family> Encoder<&Envelope<F>> for FrameCodec<F> {
    type Error = FrameError;

    fn encode(&mut self, env: &Envelope<F>, dst: &mut BytesMut) -> Result<(), FrameError> {
        let frame = self.encode_to_vec(env)?;
        if dst.is_empty() {
            // Hand the encoded vector over as the buffer: no copy.
            *dst = BytesMut::from(Bytes::from(frame));
        } else {
            dst.extend_from_slice(&frame);
        }
        Ok(())
    }
}

impl<F: Family> Encoder<Envelope<F>> for FrameCodec<F> {
    type Error = FrameError;

    fn encode(&mut self, env: Envelope<F>, dst: &mut BytesMut) -> Result<(), FrameError> {
        Encoder::<&Envelope<F>>::encode(self, &env, dst)
    }
}
