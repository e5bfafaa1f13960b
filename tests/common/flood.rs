//! What the isolation tests and figures share: raw `ui` peers that complete the handshake by
//! hand, and a flood of RequestMasterState asks by a peer that never reads.

#![allow(dead_code)]

use std::time::Instant;

use sparkwire::messages::deploy::RequestMasterState;
use sparkwire::messages::{Addr, DeployMessage, Version};
use sparkwire::wire::handshake::{check_answer, encode_hello, HandshakeError, Hello, Role};
use sparkwire::wire::{encode_frame, Envelope};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A raw TCP stream to `addr` that completed a plain handshake as `role` with id `id`, or the
/// handshake's error (a refusal, or [`HandshakeError::PeerClosed`] when the stream failed).
pub async fn raw_peer(addr: &Addr, role: Role, id: &str) -> Result<TcpStream, HandshakeError> {
    let mut stream = TcpStream::connect((addr.host.as_str(), addr.port as u16))
        .await
        .map_err(|_| HandshakeError::PeerClosed)?;
    let hello = Hello::new(&[Version::V1, Version::V2], role, id);
    let mut body = Vec::new();
    encode_hello(&hello, &mut body);
    let mut hello_frame = (body.len() as u32).to_be_bytes().to_vec();
    hello_frame.extend_from_slice(&body);
    stream
        .write_all(&hello_frame)
        .await
        .map_err(|_| HandshakeError::PeerClosed)?;
    let mut prefix = [0u8; 4];
    stream
        .read_exact(&mut prefix)
        .await
        .map_err(|_| HandshakeError::PeerClosed)?;
    let mut answer = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream
        .read_exact(&mut answer)
        .await
        .map_err(|_| HandshakeError::PeerClosed)?;
    check_answer(&answer, &hello).map(|_| stream)
}

/// `sparkwire master` on a free port, without a web UI port of its own, ending with the test.
pub const MASTER_ARGS: [&str; 6] = [
    "master",
    "--port",
    "0",
    "--webui-port",
    "0",
    "--exit-with-stdin",
];

/// The frame of ask `id`, RequestMasterState, in version 2.
pub fn ask_state_frame(id: u64) -> Vec<u8> {
    let ask = Envelope::Ask {
        id,
        message: DeployMessage::from(RequestMasterState::new()),
    };
    encode_frame(&ask, Version::V2).expect("encodable")
}

/// Writes RequestMasterState asks on `stream` in batches of 512, never reading, until a write
/// fails (the peer closed it) or `until` passes. Returns the asks written and whether the peer
/// closed the stream.
pub async fn flood(stream: &mut TcpStream, until: Option<Instant>) -> (u64, bool) {
    let mut id = 1u64;
    while until.is_none_or(|t| Instant::now() < t) {
        let mut batch = Vec::with_capacity(512 * 32);
        for n in 0..512 {
            batch.extend(ask_state_frame(id + n));
        }
        if stream.write_all(&batch).await.is_err() {
            return (id - 1, true);
        }
        id += 512;
    }
    (id - 1, false)
}
