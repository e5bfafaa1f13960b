//! The proxy's frames: reading them ([`Reader`], [`read_frame`]), writing them to a side that may
//! have closed ([`Writer`]), and framing what a fault sends.

use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use sparkwire::messages::Version;
use sparkwire::wire::handshake::{decode_hello, encode_answer, encode_hello, Answer, Hello};
use sparkwire::wire::{encode_envelope, Envelope};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

pub(super) struct Reader {
    pub(super) half: OwnedReadHalf,
    pub(super) buf: BytesMut,
    pub(super) reads: usize,
}

pub(super) enum Item {
    Frame(Bytes, usize),
    Oversized(Vec<u8>),
    End,
}

impl Reader {
    /// A reader of `half`, nothing read yet.
    pub(super) fn new(half: OwnedReadHalf) -> Reader {
        Reader {
            half,
            buf: BytesMut::new(),
            reads: 0,
        }
    }

    /// The next frame (with the number of reads it took), a frame over the limit (the
    /// pre-handshake one when `before_handshake`), or the end of the stream.
    pub(super) async fn next(&mut self, before_handshake: bool) -> Item {
        loop {
            if self.buf.len() >= 4 {
                let n = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize;
                let limit = if before_handshake { 65536 } else { 64 << 20 };
                if n > limit {
                    return Item::Oversized(self.buf.split().to_vec());
                }
                if self.buf.len() >= 4 + n {
                    self.buf.advance(4);
                    let reads = std::mem::take(&mut self.reads);
                    return Item::Frame(self.buf.split_to(n).freeze(), reads);
                }
            }
            match self.half.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return Item::End,
                Ok(_) => self.reads += 1,
            }
        }
    }
}

/// `env` in `version`, framed; `None` when it does not encode.
pub(super) fn frame_of<F: sparkwire::messages::Family>(
    env: &Envelope<F>,
    version: Version,
) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    encode_envelope(env, version, &mut out).ok()?;
    Some(framed(&out))
}

pub(super) fn framed(body: &[u8]) -> Vec<u8> {
    crate::harness::mp::frame(body)
}

pub(super) fn answer_bytes(a: &Answer) -> Vec<u8> {
    let mut b = Vec::new();
    encode_answer(a, &mut b);
    framed(&b)
}

pub(super) fn hello_bytes(h: &Hello) -> Vec<u8> {
    let mut b = Vec::new();
    encode_hello(h, &mut b);
    framed(&b)
}

pub(super) type Writer = Arc<Mutex<Option<OwnedWriteHalf>>>;

pub(super) async fn write(w: &Writer, bytes: &[u8]) {
    let mut g = w.lock().await;
    if let Some(h) = g.as_mut() {
        if h.write_all(bytes).await.is_err() {
            *g = None;
        }
    }
}

pub(super) async fn close(w: &Writer) {
    let mut g = w.lock().await;
    if let Some(mut h) = g.take() {
        let _ = h.shutdown().await;
    }
}

/// Reads one frame body of at most the pre-handshake limit.
pub(super) async fn read_frame(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).await.ok()?;
    let n = u32::from_be_bytes(prefix) as usize;
    if n > 65536 {
        return None;
    }
    let mut body = vec![0u8; n];
    stream.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// Reads a client's hello: its frame body and what it says.
pub(super) async fn read_hello_frame(stream: &mut TcpStream) -> Option<(Vec<u8>, Hello)> {
    let body = read_frame(stream).await?;
    let hello = decode_hello(&body).ok()?;
    Some((body, hello))
}
