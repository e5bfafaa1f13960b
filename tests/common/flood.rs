//! What the isolation tests and figures share: raw `ui` peers that complete the handshake by
//! hand, and a flood of RequestMasterState asks by a peer that never reads.

use std::time::Instant;

use sparkwire::messages::deploy::RequestMasterState;
use sparkwire::messages::{Addr, DeployMessage, Version};
use sparkwire::wire::handshake::{check_answer, encode_hello, HandshakeError, Hello, Role};
use sparkwire::wire::{encode_frame, Envelope};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::common::{frame, read_raw_frame};

/// A raw TCP stream to `addr` that completed a plain handshake as `role` with id `id`, or the
/// handshake's error (a refusal, or [`HandshakeError::PeerClosed`] when the stream failed).
pub async fn raw_peer(addr: &Addr, role: Role, id: &str) -> Result<TcpStream, HandshakeError> {
    let mut stream = TcpStream::connect((addr.host.as_str(), addr.port as u16))
        .await
        .map_err(|_| HandshakeError::PeerClosed)?;
    let hello = Hello::new(&[Version::V1, Version::V2], role, id);
    let mut body = Vec::new();
    encode_hello(&hello, &mut body);
    stream
        .write_all(&frame(&body))
        .await
        .map_err(|_| HandshakeError::PeerClosed)?;
    let answer = read_raw_frame(&mut stream)
        .await
        .ok_or(HandshakeError::PeerClosed)?;
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
