//! The receiver's memory stays bounded when a peer declares a huge frame: measured with a counting
//! global allocator (tests/common/counting.rs), alone in this test binary so that no other test allocates
//! meanwhile.

mod common;
use common::counting;

use common::{raw_client_and_server, samples};
use counting::{growth_since, reset, Counting};
use sparkwire::connection::{ConnectionConfig, ConnectionError, Incoming};
use sparkwire::messages::{DeployMessage, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::LimitSetting;
use sparkwire::wire::{Envelope, FrameError};
use tokio::io::AsyncWriteExt;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[tokio::test]
async fn a_declared_4_gib_frame_grows_the_receivers_memory_by_a_few_kib_at_most() {
    let (mut raw, mut server) = raw_client_and_server::<DeployMessage>(
        &Version::ALL,
        Role::Worker,
        Role::Master,
        ConnectionConfig::default(),
    )
    .await;

    // Control: a legitimate 1 MiB frame does show up in the count, so the count can see growth.
    let big = Envelope::Send(DeployMessage::from(samples::register_worker()));
    let mut with_payload = common::envelope_frame(&big, Version::V2);
    let padding = sparkwire::messages::deploy::RegisterWorkerFailed::new("x".repeat(1024 * 1024));
    with_payload.extend(common::envelope_frame(
        &Envelope::Send(DeployMessage::from(padding)),
        Version::V2,
    ));
    let baseline = reset();
    let writer = async { raw.write_all(&with_payload).await.expect("raw write") };
    let reader = async {
        let first = server.recv().await;
        let second = server.recv().await;
        (first, second)
    };
    let ((), (first, second)) = tokio::join!(writer, reader);
    assert!(matches!(
        first,
        Ok(Incoming::Message(DeployMessage::RegisterWorker(_)))
    ));
    assert!(matches!(
        second,
        Ok(Incoming::Message(DeployMessage::RegisterWorkerFailed(_)))
    ));
    drop((first, second));
    assert!(
        growth_since(baseline) > 1024 * 1024,
        "the counter sees a 1 MiB frame"
    );

    // The attack: a prefix declaring 4 GiB - 1 bytes, then a few body bytes.
    let baseline = reset();
    raw.write_all(&[0xff, 0xff, 0xff, 0xff, 0x92, 0x00, 0x81])
        .await
        .expect("raw write");
    let refused = server.recv().await;
    let growth = growth_since(baseline);
    assert_eq!(
        refused,
        Err(ConnectionError::Inbound(FrameError::DeclaredTooLarge {
            declared: 4_294_967_295,
            limit: 134_217_728,
            setting: LimitSetting::MessageMaxSize,
        }))
    );
    assert!(growth < 8 * 1024, "memory grew by {growth} bytes");
}
