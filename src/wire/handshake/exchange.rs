//! The handshake over a byte stream: [`client_handshake`] and [`server_handshake`].

use bytes::BytesMut;
use futures_util::StreamExt;
use tokio::io::{split, AsyncRead, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio_util::codec::{Encoder, FramedRead};

use super::answer::{encode_answer, Answer, Refusal, RefusalReason};
use super::auth::fresh_nonce;
use super::decide::{
    check_answer, read_hello, read_server_frame, ClientNext, Identity, Negotiated, ServerHello,
};
use super::error::HandshakeError;
use super::hello::encode_hello;
use super::role::Role;
use crate::wire::FrameError;
use crate::wire::FrameLimit;
use crate::wire::RawFrameCodec;

/// A stream whose handshake completed: the negotiated parameters, and the stream's two halves,
/// ready to carry envelopes in the negotiated version.
///
/// The read half keeps whatever the peer sent after its handshake frame.
#[derive(Debug)]
pub struct Established<IO> {
    negotiated: Negotiated,
    reader: FramedRead<ReadHalf<IO>, RawFrameCodec>,
    writer: WriteHalf<IO>,
    sent: usize,
    received: usize,
}

impl<IO> Established<IO> {
    /// What the handshake settled.
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }

    /// Bytes of handshake frames, prefixes included: (sent, received).
    pub fn handshake_bytes(&self) -> (usize, usize) {
        (self.sent, self.received)
    }

    /// The parts: what was settled, the framed read half (still with the pre-handshake codec
    /// and any bytes already received), and the write half.
    pub fn into_parts(
        self,
    ) -> (
        Negotiated,
        FramedRead<ReadHalf<IO>, RawFrameCodec>,
        WriteHalf<IO>,
    ) {
        (self.negotiated, self.reader, self.writer)
    }
}

async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> Result<usize, HandshakeError> {
    let mut frame = BytesMut::new();
    RawFrameCodec::new(FrameLimit::HANDSHAKE).encode(body, &mut frame)?;
    writer.write_all(&frame).await.map_err(FrameError::from)?;
    writer.flush().await.map_err(FrameError::from)?;
    Ok(frame.len())
}

async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut FramedRead<R, RawFrameCodec>,
) -> Result<bytes::Bytes, HandshakeError> {
    match reader.next().await {
        None => Err(HandshakeError::PeerClosed),
        Some(Err(e)) => Err(HandshakeError::Frame(e)),
        Some(Ok(body)) => Ok(body),
    }
}

/// Runs the client side: sends `local`'s hello and reads the server's answer; with a secret, the
/// server's challenge first, then sends the proof and reads the answer (protocol/handshake.md
/// §10).
///
/// Frames are limited to 64 KiB until the handshake completes. Takes no time limit itself: wrap
/// it in `tokio::time::timeout` (the connection does).
///
/// ```
/// use sparkwire::messages::Version;
/// use sparkwire::wire::handshake::{client_handshake, server_handshake, Identity, Role};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let (client_io, server_io) = tokio::io::duplex(64 * 1024);
/// let master = Identity::new(Role::Master, "master-1");
/// let server = tokio::spawn(async move {
///     // The master takes workers only.
///     server_handshake(server_io, &master, |role| role == Role::Worker).await
/// });
/// let worker = Identity::new(Role::Worker, "worker-1");
/// let established = client_handshake(client_io, &worker).await?;
/// assert_eq!(established.negotiated().peer_role, Role::Master);
/// assert_eq!(established.negotiated().version, Version::V2);
/// let seen_by_master = server.await.expect("joined")?;
/// assert_eq!(seen_by_master.negotiated().peer_id, "worker-1");
/// # Ok::<(), sparkwire::wire::handshake::HandshakeError>(())
/// # }).unwrap();
/// ```
pub async fn client_handshake<IO>(
    io: IO,
    local: &Identity,
) -> Result<Established<IO>, HandshakeError>
where
    IO: AsyncRead + AsyncWrite,
{
    let (read_half, mut writer) = split(io);
    let mut reader = FramedRead::new(read_half, RawFrameCodec::new(FrameLimit::HANDSHAKE));
    let hello = match local.secret {
        Some(_) => local.hello_with_nonce(fresh_nonce()?),
        None => local.hello(),
    };
    let mut body = Vec::new();
    encode_hello(&hello, &mut body);
    let mut sent = write_frame(&mut writer, &body).await?;
    let first = read_frame(&mut reader).await?;
    let mut received = reader.decoder().last_frame_len();
    let next = match read_server_frame(&first, &hello, &body, local) {
        Ok(next) => next,
        Err(error) => {
            let _ = writer.shutdown().await;
            return Err(error);
        }
    };
    let negotiated = match next {
        ClientNext::Done(negotiated) => negotiated,
        ClientNext::SendProof(proof) => {
            sent += write_frame(&mut writer, &proof).await?;
            let answer = read_frame(&mut reader).await?;
            received += reader.decoder().last_frame_len();
            check_answer(&answer, &hello)?
        }
    };
    Ok(Established {
        negotiated,
        reader,
        writer,
        sent,
        received,
    })
}

/// Runs the server side: reads the client's hello and answers it; with a secret, sends a challenge
/// and reads the client's proof before answering. `accept` says which client roles this server
/// takes.
///
/// On a refusal the answer is sent, the stream is shut down and the reason is returned. A hello
/// over the 64 KiB limit is answered with `frameTooLarge` without reading its body.
pub async fn server_handshake<IO>(
    io: IO,
    local: &Identity,
    accept: impl Fn(Role) -> bool,
) -> Result<Established<IO>, HandshakeError>
where
    IO: AsyncRead + AsyncWrite,
{
    let (read_half, mut writer) = split(io);
    let mut reader = FramedRead::new(read_half, RawFrameCodec::new(FrameLimit::HANDSHAKE));
    let hello = match read_frame(&mut reader).await {
        Ok(hello) => hello,
        Err(error @ HandshakeError::Frame(FrameError::DeclaredTooLarge { .. })) => {
            let refusal = Answer::Refused(Refusal {
                reason: RefusalReason::FrameTooLarge,
                message: error.to_string(),
                versions: local.version_numbers(),
            });
            let mut body = Vec::new();
            encode_answer(&refusal, &mut body);
            // Best effort: the peer may not be listening; the refusal stands either way.
            let _ = write_frame(&mut writer, &body).await;
            let _ = writer.shutdown().await;
            return Err(error);
        }
        Err(error) => return Err(error),
    };
    let mut received = reader.decoder().last_frame_len();
    let mut sent = 0;
    let (answer, outcome) = match read_hello(&hello, local, &accept, fresh_nonce) {
        ServerHello::Answer(answer, outcome) => (answer, outcome),
        ServerHello::Challenge(auth) => {
            sent += write_frame(&mut writer, auth.challenge_body()).await?;
            let proof = match read_frame(&mut reader).await {
                Ok(proof) => proof,
                Err(error) => {
                    let _ = writer.shutdown().await;
                    return Err(error);
                }
            };
            received += reader.decoder().last_frame_len();
            auth.finish(&proof, local, &accept)
        }
    };
    let mut body = Vec::new();
    encode_answer(&answer, &mut body);
    match outcome {
        Ok(negotiated) => {
            sent += write_frame(&mut writer, &body).await?;
            Ok(Established {
                negotiated,
                reader,
                writer,
                sent,
                received,
            })
        }
        Err(error) => {
            let _ = write_frame(&mut writer, &body).await;
            let _ = writer.shutdown().await;
            Err(error)
        }
    }
}

/// Refuses a client before any other check, with `reason` (such as
/// [`RefusalReason::TooManyConnections`]) and `message`: reads its hello frame (so that the
/// refusal is not lost to a reset), answers with the refusal and shuts the stream down. Wrap it in
/// a short `tokio::time::timeout`: a client that sends nothing is simply dropped.
///
/// Returns the refusal as the error a server reports (protocol/handshake.md §5, step 0).
pub async fn refuse_handshake<IO>(
    io: IO,
    local: &Identity,
    reason: RefusalReason,
    message: &str,
) -> HandshakeError
where
    IO: AsyncRead + AsyncWrite,
{
    let (read_half, mut writer) = split(io);
    let mut reader = FramedRead::new(read_half, RawFrameCodec::new(FrameLimit::HANDSHAKE));
    // Whatever the hello holds, the answer is the same; a hello over the limit is not read.
    let _ = read_frame(&mut reader).await;
    let refusal = Answer::Refused(Refusal {
        reason: reason.clone(),
        message: message.to_string(),
        versions: local.version_numbers(),
    });
    let mut body = Vec::new();
    encode_answer(&refusal, &mut body);
    let _ = write_frame(&mut writer, &body).await;
    let _ = writer.shutdown().await;
    HandshakeError::Refused {
        reason,
        message: message.to_string(),
    }
}
