//! The frame codec over `tokio_util::codec::Framed`: two ends of an in-memory pipe exchange
//! envelopes of the deploy family in protocol version 2. (A real connection first runs the
//! handshake, `protocol/handshake.md`; `sparkwire::connection::Connection` does both.)
//!
//! Run: `cargo run --example framed_codec`

use futures_util::{SinkExt, StreamExt};
use sparkwire::messages::deploy::{KillDriver, KillDriverResponse};
use sparkwire::messages::{DeployMessage, EndpointRef, Version};
use sparkwire::wire::{Envelope, FrameCodec, FrameLimit, Reply};
use tokio_util::codec::Framed;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let codec = || FrameCodec::<DeployMessage>::new(Version::V2, FrameLimit::DEFAULT);
    let mut client = Framed::new(a, codec());
    let mut master = Framed::new(b, codec());

    // The client asks; the master reads the envelope and replies under the same id.
    let ask = Envelope::Ask {
        id: 1,
        message: DeployMessage::from(KillDriver::new("driver-20250101120000-0000".into())),
    };
    client.send(ask).await?;
    let Some(Envelope::Ask { id, message }) = master.next().await.transpose()? else {
        return Err("expected an ask".into());
    };
    println!("master got ask {id}: {message:?}");
    let answer = KillDriverResponse::new(
        EndpointRef::client("Master"),
        "driver-20250101120000-0000".into(),
        true,
        "Kill request for driver-20250101120000-0000 submitted".into(),
    );
    master
        .send(Envelope::Reply {
            id,
            reply: Reply::Message(answer.into()),
        })
        .await?;
    match client.next().await.transpose()? {
        Some(Envelope::Reply {
            id: 1,
            reply: Reply::Message(m),
        }) => {
            println!("client got the reply: {m:?}")
        }
        other => return Err(format!("expected the reply, got {other:?}").into()),
    }
    Ok(())
}
