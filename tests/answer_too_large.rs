//! SPEC §8: "an ask that cannot be answered is answered with a failure envelope rather than left
//! pending", an answer over the answering side's own frame limit included: the asker gets
//! `org.apache.spark.SparkException`, and the connection stays open.

mod common;

use common::connected;
use sparkwire::connection::{ConnectionConfig, ConnectionError, Incoming};
use sparkwire::messages::{CoarseMessage, Payload, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{FrameError, Reply};

const MIB: usize = 1024 * 1024;

#[tokio::test]
async fn an_answer_over_the_frame_limit_fails_the_ask_and_keeps_the_connection() {
    let config = || {
        ConnectionConfig::default()
            .with_versions(&Version::ALL)
            .with_max_frame_size(MIB)
    };
    let (cluster_manager, mut driver) =
        connected::<CoarseMessage>(Role::ClusterManager, config(), Role::Driver, config()).await;
    let ask: CoarseMessage = sparkwire::wire::value_from_json(
        &serde_json::json!({"RetrieveDelegationTokens": {}}),
        Version::V2,
    )
    .expect("a message");
    let answer = async {
        match driver.recv().await {
            Ok(Incoming::Ask { id, .. }) => {
                driver
                    .reply(id, Reply::Bytes(Payload::from(vec![7u8; 2 * MIB])))
                    .await
            }
            other => panic!("expected an ask, got {other:?}"),
        }
    };
    let (got, replied) = tokio::join!(cluster_manager.ask(ask.clone()), answer);
    assert!(
        matches!(
            replied,
            Err(ConnectionError::Outbound(
                FrameError::EncodedTooLarge { .. }
            ))
        ),
        "the answerer learns its reply was not sent: {replied:?}"
    );
    match got {
        Err(ConnectionError::Remote { error, .. }) => {
            assert_eq!(error.class_name, "org.apache.spark.SparkException");
            assert!(
                error.message.contains("cannot be sent"),
                "{}",
                error.message
            );
        }
        other => panic!("the ask is failed, not {other:?}"),
    }
    // The connection stays open: the next ask is answered.
    let answer = async {
        match driver.recv().await {
            Ok(Incoming::Ask { id, .. }) => {
                driver
                    .reply(id, Reply::Bytes(Payload::from(vec![1u8])))
                    .await
            }
            other => panic!("expected an ask, got {other:?}"),
        }
    };
    let (got, replied) = tokio::join!(cluster_manager.ask(ask), answer);
    assert_eq!(replied, Ok(()));
    assert_eq!(got, Ok(Reply::Bytes(Payload::from(vec![1u8]))));
}
