//! Spark's transport frames (the Netty `MessageEncoder` / `TransportFrameDecoder` framing of
//! `org.apache.spark.network.protocol`), read incrementally from one direction of a TCP stream.
//!
//! A frame is an `int64` big-endian length that counts itself, a type byte, the type's header and
//! the body. Stream data (after `StreamResponse` and `UploadStream`) follows its frame outside it,
//! for as many bytes as the header says.

use bytes::{Buf, Bytes, BytesMut};

/// Frames longer than this are skipped (not buffered) and reported: Spark's own
/// `spark.rpc.message.maxSize` is at most 2047 MiB, but a decoder must not hold that much per peer.
pub const DEFAULT_MAX_FRAME: u64 = 256 * 1024 * 1024;

/// The type of a transport frame (Spark's `Message.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FrameType {
    /// 0: a request for one chunk of a stream.
    ChunkFetchRequest,
    /// 1: a chunk.
    ChunkFetchSuccess,
    /// 2: a chunk could not be fetched.
    ChunkFetchFailure,
    /// 3: an RPC expecting a response.
    RpcRequest,
    /// 4: the response to an RpcRequest.
    RpcResponse,
    /// 5: an RpcRequest failed.
    RpcFailure,
    /// 6: a request for a stream.
    StreamRequest,
    /// 7: a stream's header; its data follows the frame.
    StreamResponse,
    /// 8: a stream could not be opened.
    StreamFailure,
    /// 9: a message expecting no response.
    OneWayMessage,
    /// 10: an RPC with a stream of data after the frame.
    UploadStream,
    /// 11: a request for merged shuffle-block metadata.
    MergedBlockMetaRequest,
    /// 12: merged shuffle-block metadata.
    MergedBlockMetaSuccess,
}

impl FrameType {
    /// The type of type byte `b`, if Spark defines one.
    pub fn from_byte(b: u8) -> Option<FrameType> {
        use FrameType::*;
        Some(match b {
            0 => ChunkFetchRequest,
            1 => ChunkFetchSuccess,
            2 => ChunkFetchFailure,
            3 => RpcRequest,
            4 => RpcResponse,
            5 => RpcFailure,
            6 => StreamRequest,
            7 => StreamResponse,
            8 => StreamFailure,
            9 => OneWayMessage,
            10 => UploadStream,
            11 => MergedBlockMetaRequest,
            12 => MergedBlockMetaSuccess,
            _ => return None,
        })
    }

    /// Spark's name of the type, such as `RpcRequest`.
    pub fn as_str(self) -> &'static str {
        use FrameType::*;
        match self {
            ChunkFetchRequest => "ChunkFetchRequest",
            ChunkFetchSuccess => "ChunkFetchSuccess",
            ChunkFetchFailure => "ChunkFetchFailure",
            RpcRequest => "RpcRequest",
            RpcResponse => "RpcResponse",
            RpcFailure => "RpcFailure",
            StreamRequest => "StreamRequest",
            StreamResponse => "StreamResponse",
            StreamFailure => "StreamFailure",
            OneWayMessage => "OneWayMessage",
            UploadStream => "UploadStream",
            MergedBlockMetaRequest => "MergedBlockMetaRequest",
            MergedBlockMetaSuccess => "MergedBlockMetaSuccess",
        }
    }
}

impl std::fmt::Display for FrameType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One frame, its header read.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// An RPC expecting a response with the same id.
    RpcRequest {
        /// The request id.
        request_id: i64,
        /// The body (a `RequestMessage`, or a block-transfer message).
        body: Bytes,
    },
    /// The response to request `request_id`.
    RpcResponse {
        /// The request id.
        request_id: i64,
        /// The body (a Java serialization stream, or a block-transfer message).
        body: Bytes,
    },
    /// Request `request_id` failed.
    RpcFailure {
        /// The request id.
        request_id: i64,
        /// The error (Spark sends the exception's stack trace as text).
        error: String,
    },
    /// A message expecting no response.
    OneWay {
        /// The body (a `RequestMessage`).
        body: Bytes,
    },
    /// A frame of the chunk, stream or merged-block types: header fields, and the body length.
    Transfer {
        /// The type.
        kind: FrameType,
        /// A short description of the header (stream and chunk ids).
        header: String,
        /// Bytes of body, in the frame or streamed after it.
        body_len: u64,
    },
}

impl Frame {
    /// The frame's type.
    pub fn kind(&self) -> FrameType {
        match self {
            Frame::RpcRequest { .. } => FrameType::RpcRequest,
            Frame::RpcResponse { .. } => FrameType::RpcResponse,
            Frame::RpcFailure { .. } => FrameType::RpcFailure,
            Frame::OneWay { .. } => FrameType::OneWayMessage,
            Frame::Transfer { kind, .. } => *kind,
        }
    }
}

/// What is wrong with a frame or with the stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The length field is smaller than a length and a type byte: the stream's framing is lost.
    #[error("frame length {0} is shorter than its own header")]
    BadLength(u64),
    /// The type byte is none of Spark's.
    #[error("unknown frame type {0}")]
    UnknownType(u8),
    /// The frame is longer than the decoder's limit; it was skipped.
    #[error("frame of {len} bytes exceeds the limit of {limit} bytes; skipped")]
    TooLong {
        /// The frame's length.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// The header does not fit the frame, or a length in it disagrees with the frame's.
    #[error("{kind} frame malformed: {problem}")]
    Malformed {
        /// The frame's type.
        kind: FrameType,
        /// What is wrong.
        problem: String,
    },
}

/// What cannot be written as a transport frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameEncodeError {
    /// A body or text longer than Spark's `int32` lengths hold.
    #[error("{what} of {len} bytes is longer than an int32 length holds")]
    TooLong {
        /// What.
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// A frame sparkwire only reads (chunk, stream and merged-block frames are summarised).
    #[error("{0} frames are read, not written, by sparkwire")]
    NotWritable(FrameType),
}

fn len_i32(what: &'static str, len: usize) -> Result<i32, FrameEncodeError> {
    i32::try_from(len).map_err(|_| FrameEncodeError::TooLong { what, len })
}

impl Frame {
    /// The frame as Spark's `MessageEncoder` writes it: its `int64` length (counting itself),
    /// its type byte, its header and its body.
    ///
    /// ```
    /// use sparkwire::spark::{Frame, FrameDecoder};
    /// let frame = Frame::RpcResponse { request_id: 7, body: vec![1, 2, 3].into() };
    /// let bytes = frame.encode()?;
    /// assert_eq!(bytes.len(), 8 + 1 + 8 + 4 + 3);
    /// let mut dec = FrameDecoder::default();
    /// dec.push(&bytes);
    /// assert_eq!(dec.next_item().map(|i| i.frame), Some(Ok(frame)));
    /// # Ok::<(), sparkwire::spark::FrameEncodeError>(())
    /// ```
    pub fn encode(&self) -> Result<Vec<u8>, FrameEncodeError> {
        let mut header = Vec::with_capacity(16);
        let body: &[u8] = match self {
            Frame::RpcRequest { request_id, body } | Frame::RpcResponse { request_id, body } => {
                header.extend_from_slice(&request_id.to_be_bytes());
                header.extend_from_slice(&len_i32("a body", body.len())?.to_be_bytes());
                body
            }
            Frame::RpcFailure { request_id, error } => {
                header.extend_from_slice(&request_id.to_be_bytes());
                header.extend_from_slice(&len_i32("an error text", error.len())?.to_be_bytes());
                header.extend_from_slice(error.as_bytes());
                &[]
            }
            Frame::OneWay { body } => {
                header.extend_from_slice(&len_i32("a body", body.len())?.to_be_bytes());
                body
            }
            Frame::Transfer { kind, .. } => return Err(FrameEncodeError::NotWritable(*kind)),
        };
        let total = 8 + 1 + header.len() + body.len();
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u64).to_be_bytes());
        out.push(self.kind() as u8);
        out.extend_from_slice(&header);
        out.extend_from_slice(body);
        Ok(out)
    }
}

impl FrameError {
    /// Whether the stream can go on after this error (the frame's own length was sound).
    pub fn recoverable(&self) -> bool {
        !matches!(self, FrameError::BadLength(_))
    }
}

/// One item read from a direction of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameItem {
    /// Bytes of the stream it took (frame length, or stream data).
    pub bytes: u64,
    /// The frame, or the error in it.
    pub frame: Result<Frame, FrameError>,
    /// The frame's bytes, whole, for a frame read in full (empty for one skipped or lost).
    pub raw: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading frames.
    Frames,
    /// Skipping this many bytes of a frame over the limit.
    Skip(u64),
    /// Passing over this many bytes of stream data after a frame.
    StreamData(u64),
    /// The framing was lost: everything after is ignored.
    Lost,
}

/// Reads frames from the bytes of one direction of a connection, fed in any pieces.
///
/// ```
/// use sparkwire::spark::{Frame, FrameDecoder};
///
/// // A OneWayMessage of a 2-byte body: length 8 + 1 + 4 + 2 = 15.
/// let mut wire = vec![0, 0, 0, 0, 0, 0, 0, 15, 9, 0, 0, 0, 2, 0xAB, 0xCD];
/// let mut dec = FrameDecoder::default();
/// dec.push(&wire[..5]);
/// assert!(dec.next_item().is_none());
/// dec.push(&wire.split_off(5));
/// let item = dec.next_item().expect("a whole frame");
/// assert_eq!(item.frame, Ok(Frame::OneWay { body: vec![0xAB, 0xCD].into() }));
/// ```
#[derive(Debug)]
pub struct FrameDecoder {
    buf: BytesMut,
    state: State,
    max_frame: u64,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(DEFAULT_MAX_FRAME)
    }
}

impl FrameDecoder {
    /// A decoder that skips frames longer than `max_frame` bytes.
    pub fn new(max_frame: u64) -> Self {
        FrameDecoder {
            buf: BytesMut::new(),
            state: State::Frames,
            max_frame: max_frame.max(9),
        }
    }

    /// Whether the framing was lost (a length field made no sense): nothing more is decoded.
    pub fn is_lost(&self) -> bool {
        self.state == State::Lost
    }

    /// Bytes buffered, waiting for the rest of a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Feeds bytes of the stream.
    pub fn push(&mut self, mut data: &[u8]) {
        loop {
            match self.state {
                State::Lost => return,
                State::Skip(n) | State::StreamData(n) => {
                    let take = (data.len() as u64).min(n);
                    data = &data[take as usize..];
                    let left = n - take;
                    self.state = match (self.state, left) {
                        (_, 0) => State::Frames,
                        (State::Skip(_), l) => State::Skip(l),
                        (_, l) => State::StreamData(l),
                    };
                    if left > 0 || data.is_empty() {
                        return;
                    }
                }
                State::Frames => {
                    self.buf.extend_from_slice(data);
                    return;
                }
            }
        }
    }

    /// The next whole item, if its bytes have all arrived.
    pub fn next_item(&mut self) -> Option<FrameItem> {
        if self.state != State::Frames || self.buf.len() < 8 {
            return None;
        }
        let len = u64::from_be_bytes(self.buf[..8].try_into().ok()?);
        if len < 9 {
            self.state = State::Lost;
            self.buf.clear();
            return Some(FrameItem {
                bytes: 8,
                frame: Err(FrameError::BadLength(len)),
                raw: Bytes::new(),
            });
        }
        if len > self.max_frame {
            let have = self.buf.len() as u64;
            if have >= len {
                let _ = self.buf.split_to(len as usize);
            } else {
                self.buf.clear();
                self.state = State::Skip(len - have);
            }
            return Some(FrameItem {
                bytes: len,
                frame: Err(FrameError::TooLong {
                    len,
                    limit: self.max_frame,
                }),
                raw: Bytes::new(),
            });
        }
        if (self.buf.len() as u64) < len {
            return None;
        }
        let raw = self.buf.split_to(len as usize).freeze();
        let mut frame = raw.clone();
        frame.advance(8);
        let ty = frame.get_u8();
        let parsed = match FrameType::from_byte(ty) {
            None => Err(FrameError::UnknownType(ty)),
            Some(kind) => parse(kind, frame),
        };
        if let Ok(Frame::Transfer {
            kind: FrameType::StreamResponse | FrameType::UploadStream,
            body_len,
            ..
        }) = &parsed
        {
            if *body_len > 0 {
                self.state = State::StreamData(*body_len);
                let rest = self.buf.split();
                self.push(&rest);
            }
        }
        Some(FrameItem {
            bytes: len,
            frame: parsed,
            raw,
        })
    }
}

fn malformed(kind: FrameType, problem: impl Into<String>) -> FrameError {
    FrameError::Malformed {
        kind,
        problem: problem.into(),
    }
}

/// Reads `N` bytes.
fn take<const N: usize>(kind: FrameType, b: &mut Bytes, what: &str) -> Result<[u8; N], FrameError> {
    if b.len() < N {
        return Err(malformed(kind, format!("too short for its {what}")));
    }
    let mut out = [0u8; N];
    b.copy_to_slice(&mut out);
    Ok(out)
}

fn i64_of(kind: FrameType, b: &mut Bytes, what: &str) -> Result<i64, FrameError> {
    take::<8>(kind, b, what).map(i64::from_be_bytes)
}

fn i32_of(kind: FrameType, b: &mut Bytes, what: &str) -> Result<i32, FrameError> {
    take::<4>(kind, b, what).map(i32::from_be_bytes)
}

/// A string as Spark's `Encoders.Strings` writes it: `int32` length, UTF-8 bytes.
fn string_of(kind: FrameType, b: &mut Bytes, what: &str) -> Result<String, FrameError> {
    let len = i32_of(kind, b, what)?;
    let len = usize::try_from(len)
        .ok()
        .filter(|l| *l <= b.len())
        .ok_or_else(|| malformed(kind, format!("{what} length {len} does not fit")))?;
    let text = b.split_to(len);
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// A body whose length the header also gives: the two must agree.
fn body_of(kind: FrameType, b: Bytes, declared: i32) -> Result<Bytes, FrameError> {
    if i64::from(declared) != b.len() as i64 {
        return Err(malformed(
            kind,
            format!(
                "header says a body of {declared} bytes, the frame holds {}",
                b.len()
            ),
        ));
    }
    Ok(b)
}

fn parse(kind: FrameType, mut b: Bytes) -> Result<Frame, FrameError> {
    use FrameType::*;
    Ok(match kind {
        RpcRequest | RpcResponse => {
            let request_id = i64_of(kind, &mut b, "request id")?;
            let declared = i32_of(kind, &mut b, "body length")?;
            let body = body_of(kind, b, declared)?;
            if kind == RpcRequest {
                Frame::RpcRequest { request_id, body }
            } else {
                Frame::RpcResponse { request_id, body }
            }
        }
        RpcFailure => {
            let request_id = i64_of(kind, &mut b, "request id")?;
            let error = string_of(kind, &mut b, "error")?;
            Frame::RpcFailure { request_id, error }
        }
        OneWayMessage => {
            let declared = i32_of(kind, &mut b, "body length")?;
            Frame::OneWay {
                body: body_of(kind, b, declared)?,
            }
        }
        ChunkFetchRequest | ChunkFetchSuccess | ChunkFetchFailure => {
            let stream = i64_of(kind, &mut b, "stream id")?;
            let chunk = i32_of(kind, &mut b, "chunk index")?;
            let mut header = format!("stream {stream} chunk {chunk}");
            if kind == ChunkFetchFailure {
                let error = string_of(kind, &mut b, "error")?;
                header.push_str(&format!(": {error}"));
            }
            Frame::Transfer {
                kind,
                header,
                body_len: b.len() as u64,
            }
        }
        StreamRequest | StreamFailure => {
            let stream = string_of(kind, &mut b, "stream id")?;
            let mut header = format!("stream {stream}");
            if kind == StreamFailure {
                let error = string_of(kind, &mut b, "error")?;
                header.push_str(&format!(": {error}"));
            }
            Frame::Transfer {
                kind,
                header,
                body_len: 0,
            }
        }
        StreamResponse => {
            let stream = string_of(kind, &mut b, "stream id")?;
            let count = i64_of(kind, &mut b, "byte count")?;
            let body_len = u64::try_from(count)
                .map_err(|_| malformed(kind, format!("negative byte count {count}")))?;
            Frame::Transfer {
                kind,
                header: format!("stream {stream}"),
                body_len,
            }
        }
        UploadStream => {
            let request_id = i64_of(kind, &mut b, "request id")?;
            let meta_len = i32_of(kind, &mut b, "metadata length")?;
            let meta_len = usize::try_from(meta_len)
                .ok()
                .filter(|l| *l <= b.len())
                .ok_or_else(|| malformed(kind, "metadata length does not fit"))?;
            b.advance(meta_len);
            let count = i64_of(kind, &mut b, "byte count")?;
            let body_len = u64::try_from(count)
                .map_err(|_| malformed(kind, format!("negative byte count {count}")))?;
            Frame::Transfer {
                kind,
                header: format!("request {request_id}"),
                body_len,
            }
        }
        MergedBlockMetaRequest | MergedBlockMetaSuccess => {
            let request_id = i64_of(kind, &mut b, "request id")?;
            Frame::Transfer {
                kind,
                header: format!("request {request_id}"),
                body_len: b.len() as u64,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(ty: u8, header_and_body: &[u8]) -> Vec<u8> {
        let len = 9 + header_and_body.len() as u64;
        let mut v = len.to_be_bytes().to_vec();
        v.push(ty);
        v.extend_from_slice(header_and_body);
        v
    }

    #[test]
    fn an_rpc_request_split_in_single_bytes_decodes_once() {
        let mut hb = 77i64.to_be_bytes().to_vec();
        hb.extend_from_slice(&3i32.to_be_bytes());
        hb.extend_from_slice(b"abc");
        let wire = frame(3, &hb);
        let mut d = FrameDecoder::default();
        let mut got = Vec::new();
        for b in &wire {
            d.push(std::slice::from_ref(b));
            while let Some(i) = d.next_item() {
                got.push(i);
            }
        }
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].bytes, wire.len() as u64);
        assert_eq!(
            got[0].frame,
            Ok(Frame::RpcRequest {
                request_id: 77,
                body: Bytes::from_static(b"abc")
            })
        );
    }

    #[test]
    fn a_body_length_that_disagrees_is_malformed_and_the_next_frame_still_decodes() {
        let mut hb = 1i64.to_be_bytes().to_vec();
        hb.extend_from_slice(&9i32.to_be_bytes());
        hb.extend_from_slice(b"ab");
        let mut wire = frame(4, &hb);
        wire.extend(frame(9, &[0, 0, 0, 0]));
        let mut d = FrameDecoder::default();
        d.push(&wire);
        assert!(matches!(
            d.next_item().map(|i| i.frame),
            Some(Err(FrameError::Malformed { .. }))
        ));
        assert_eq!(
            d.next_item().map(|i| i.frame),
            Some(Ok(Frame::OneWay { body: Bytes::new() }))
        );
    }

    #[test]
    fn a_length_below_the_header_loses_the_framing() {
        let mut d = FrameDecoder::default();
        d.push(&[0, 0, 0, 0, 0, 0, 0, 3, 9, 9, 9]);
        assert_eq!(
            d.next_item().map(|i| i.frame),
            Some(Err(FrameError::BadLength(3)))
        );
        assert!(d.is_lost());
        d.push(&frame(9, &[0, 0, 0, 0]));
        assert!(d.next_item().is_none());
    }

    #[test]
    fn an_oversized_frame_is_skipped_without_buffering_it() {
        let mut d = FrameDecoder::new(64);
        let mut wire = 1000u64.to_be_bytes().to_vec();
        wire.push(9);
        d.push(&wire);
        assert!(matches!(
            d.next_item().map(|i| i.frame),
            Some(Err(FrameError::TooLong { len: 1000, .. }))
        ));
        d.push(&vec![0u8; 991]);
        assert_eq!(d.buffered(), 0);
        d.push(&frame(9, &[0, 0, 0, 0]));
        assert_eq!(
            d.next_item().map(|i| i.frame),
            Some(Ok(Frame::OneWay { body: Bytes::new() }))
        );
    }

    #[test]
    fn stream_data_after_a_stream_response_is_passed_over() {
        let mut hb = 2i32.to_be_bytes().to_vec();
        hb.extend_from_slice(b"s1");
        hb.extend_from_slice(&5i64.to_be_bytes());
        let mut wire = frame(7, &hb);
        wire.extend_from_slice(b"12345");
        wire.extend(frame(9, &[0, 0, 0, 0]));
        let mut d = FrameDecoder::default();
        d.push(&wire);
        let first = d.next_item().map(|i| i.frame);
        assert!(matches!(
            first,
            Some(Ok(Frame::Transfer {
                kind: FrameType::StreamResponse,
                body_len: 5,
                ..
            }))
        ));
        assert_eq!(
            d.next_item().map(|i| i.frame),
            Some(Ok(Frame::OneWay { body: Bytes::new() }))
        );
    }
}
