//! The frame codec on its own: limits, truncation, zero-copy decoding, round trips through
//! tokio-util's FramedRead / FramedWrite.

mod common;

use bytes::{BufMut, BytesMut};
use common::samples;
use futures_util::StreamExt;
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::wire::{Envelope, Error, FrameError, Reply};
use sparkwire::wire::{FrameCodec, RawFrameCodec};
use sparkwire::wire::{FrameLimit, LimitSetting, DEFAULT_MAX_FRAME_SIZE, READ_CHUNK};
use tokio::io::{duplex, AsyncWriteExt};
use tokio_util::codec::{Decoder, Encoder, FramedRead};

const MIB: usize = 1024 * 1024;

fn coarse(version: Version) -> FrameCodec<CoarseMessage> {
    FrameCodec::new(version, FrameLimit::DEFAULT)
}

#[test]
fn a_declared_4_gib_frame_is_refused_at_its_header_without_growing_the_buffer() {
    let mut codec = coarse(Version::V2);
    let mut buf = BytesMut::with_capacity(64);
    buf.put_u32(u32::MAX);
    buf.extend_from_slice(&[0x92, 0x00]);
    let before = buf.capacity();
    let result = codec.decode(&mut buf);
    assert_eq!(
        result.err(),
        Some(FrameError::DeclaredTooLarge {
            declared: u64::from(u32::MAX),
            limit: DEFAULT_MAX_FRAME_SIZE,
            setting: LimitSetting::MessageMaxSize,
        })
    );
    assert_eq!(buf.capacity(), before);
    assert!(buf.capacity() < 4096);
}

#[test]
fn a_large_declared_frame_makes_the_buffer_grow_only_a_chunk_at_a_time() {
    let mut codec = coarse(Version::V2);
    let mut buf = BytesMut::new();
    buf.put_u32(100 * MIB as u32);
    assert_eq!(codec.decode(&mut buf).ok(), Some(None));
    assert!(
        buf.capacity() <= READ_CHUNK + 64,
        "capacity {}",
        buf.capacity()
    );
}

#[test]
fn oversized_frame_error_names_size_limit_and_both_settings() {
    let text = FrameError::DeclaredTooLarge {
        declared: 4_294_967_295,
        limit: DEFAULT_MAX_FRAME_SIZE,
        setting: LimitSetting::MessageMaxSize,
    }
    .to_string();
    for part in [
        "4294967295",
        "134217728",
        "spark.rpc.message.maxSize",
        "ConnectionConfig::max_frame_size",
    ] {
        assert!(text.contains(part), "{text:?} lacks {part:?}");
    }
}

#[test]
fn a_129_mib_frame_is_refused_by_the_default_encoder_and_accepted_with_a_raised_limit() {
    let env = Envelope::Send(CoarseMessage::from(samples::launch_task(129 * MIB)));
    let mut dst = BytesMut::new();
    let refused = coarse(Version::V2).encode(&env, &mut dst);
    match refused {
        Err(FrameError::EncodedTooLarge {
            name,
            size,
            limit,
            setting,
        }) => {
            assert_eq!(name, "LaunchTask");
            assert!(size > 129 * MIB as u64);
            assert_eq!(limit, DEFAULT_MAX_FRAME_SIZE);
            assert_eq!(setting, LimitSetting::MessageMaxSize);
        }
        other => panic!("expected EncodedTooLarge, got {other:?}"),
    }
    assert!(dst.is_empty(), "nothing written for a refused frame");

    let mut raised = FrameCodec::<CoarseMessage>::new(Version::V2, FrameLimit::message(130 * MIB));
    assert_eq!(raised.encode(&env, &mut dst), Ok(()));
    let decoded = raised.decode(&mut dst);
    assert_eq!(decoded, Ok(Some(env)));
}

#[test]
fn launch_task_payload_of_1_mib_is_decoded_without_copying() {
    let env = Envelope::Send(CoarseMessage::from(samples::launch_task(MIB)));
    let mut codec = coarse(Version::V2);
    let mut buf = BytesMut::new();
    assert_eq!(codec.encode(&env, &mut buf), Ok(()));
    let start = buf.as_ptr() as usize;
    let end = start + buf.len();
    let decoded = codec.decode(&mut buf);
    let Ok(Some(Envelope::Send(CoarseMessage::LaunchTask(task)))) = decoded else {
        panic!("expected a LaunchTask, got {decoded:?}");
    };
    assert_eq!(task.data.len(), MIB);
    let at = task.data.as_slice().as_ptr() as usize;
    assert!(
        at >= start && at + MIB <= end,
        "payload at {at:#x} lies outside the read buffer {start:#x}..{end:#x}"
    );
}

#[test]
fn frames_cut_at_every_byte_decode_the_same() {
    let envs: Vec<Envelope<DeployMessage>> = vec![
        Envelope::Send(samples::register_worker().into()),
        Envelope::Ask {
            id: 7,
            message: samples::executor_state_changed().into(),
        },
        Envelope::Reply {
            id: 7,
            reply: Reply::Bool(true),
        },
    ];
    let mut wire = BytesMut::new();
    let mut encoder = FrameCodec::<DeployMessage>::new(Version::V2, FrameLimit::DEFAULT);
    for env in &envs {
        assert_eq!(encoder.encode(env, &mut wire), Ok(()));
    }
    let mut decoder = FrameCodec::<DeployMessage>::new(Version::V2, FrameLimit::DEFAULT);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for byte in wire.iter() {
        buf.put_u8(*byte);
        while let Ok(Some(env)) = decoder.decode(&mut buf) {
            out.push(env);
        }
    }
    assert_eq!(out, envs);
    assert!(buf.is_empty());
}

#[test]
fn the_stream_ending_inside_a_frame_is_a_truncated_frame() {
    let mut codec = coarse(Version::V2);
    let mut buf = BytesMut::new();
    buf.put_u32(100);
    buf.extend_from_slice(&[0u8; 10]);
    assert_eq!(
        codec.decode_eof(&mut buf),
        Err(FrameError::Truncated {
            declared: Some(100),
            received: 10
        })
    );
    let mut prefix_only = BytesMut::from(&[0u8, 0][..]);
    assert_eq!(
        coarse(Version::V2).decode_eof(&mut prefix_only),
        Err(FrameError::Truncated {
            declared: None,
            received: 2
        })
    );
    let mut empty = BytesMut::new();
    assert_eq!(coarse(Version::V2).decode_eof(&mut empty), Ok(None));
}

#[test]
fn the_codec_decodes_in_the_version_it_was_given() {
    let env = Envelope::Send(DeployMessage::from(samples::decommission_worker()));
    let mut buf = BytesMut::new();
    let mut v2 = FrameCodec::<DeployMessage>::new(Version::V2, FrameLimit::DEFAULT);
    assert_eq!(v2.encode(&env, &mut buf), Ok(()));
    let mut v1 = FrameCodec::<DeployMessage>::new(Version::V1, FrameLimit::DEFAULT);
    assert!(matches!(
        v1.decode(&mut buf),
        Err(FrameError::Envelope(Error::NotInVersion {
            name: "DecommissionWorker",
            ..
        }))
    ));
    let mut out = BytesMut::new();
    assert!(matches!(
        v1.encode(&env, &mut out),
        Err(FrameError::Envelope(Error::NotInVersion { .. }))
    ));
    assert!(out.is_empty());
}

#[test]
fn the_raw_codec_enforces_the_pre_handshake_limit_both_ways() {
    let mut raw = RawFrameCodec::new(FrameLimit::HANDSHAKE);
    let mut dst = BytesMut::new();
    let big = vec![0u8; 64 * 1024 + 1];
    assert_eq!(
        raw.encode(&big[..], &mut dst),
        Err(FrameError::EncodedTooLarge {
            name: "frame",
            size: 65_537,
            limit: 65_536,
            setting: LimitSetting::Handshake
        })
    );
    assert!(dst.is_empty());
    assert_eq!(raw.encode(&big[..65_536], &mut dst), Ok(()));
    assert_eq!(
        raw.decode(&mut dst).map(|f| f.map(|b| b.len())),
        Ok(Some(65_536))
    );
    let mut declared = BytesMut::new();
    declared.put_u32(65_537);
    assert!(matches!(
        raw.decode(&mut declared),
        Err(FrameError::DeclaredTooLarge {
            declared: 65_537,
            setting: LimitSetting::Handshake,
            ..
        })
    ));
}

#[tokio::test]
async fn framed_read_over_a_pipe_yields_every_envelope_then_a_truncation_error() {
    let (mut tx, rx) = duplex(1024);
    let envs: Vec<Envelope<CoarseMessage>> = vec![
        Envelope::Send(samples::status_update(3000).into()),
        Envelope::Send(samples::launch_task(5000).into()),
        Envelope::Failure {
            id: 3,
            error: sparkwire::messages::ErrorDescription::new("java.lang.Exception", "boom"),
        },
    ];
    let writer = async {
        let codec = coarse(Version::V2);
        for env in &envs {
            let bytes = codec.encode_to_bytes(env).expect("encodable");
            tx.write_all(&bytes).await.expect("write");
        }
        tx.write_all(&[0, 0, 1, 0, 0x92]).await.expect("write");
        drop(tx);
    };
    let reader = async {
        let mut framed = FramedRead::new(rx, coarse(Version::V2));
        let mut got = Vec::new();
        while let Some(item) = framed.next().await {
            got.push(item);
        }
        got
    };
    let ((), got) = tokio::join!(writer, reader);
    let expected: Vec<Result<Envelope<CoarseMessage>, FrameError>> = envs
        .iter()
        .cloned()
        .map(Ok)
        .chain([Err(FrameError::Truncated {
            declared: Some(256),
            received: 1,
        })])
        .collect();
    assert_eq!(got, expected);
}

#[test]
fn every_family_round_trips_through_the_codec_in_both_versions() {
    fn round_trip<F: Family>(messages: Vec<F>) {
        for version in Version::ALL {
            let mut codec = FrameCodec::<F>::new(version, FrameLimit::DEFAULT);
            for message in &messages {
                if !message.exists_in(version) {
                    continue;
                }
                let env = Envelope::Ask {
                    id: 1,
                    message: message.clone(),
                };
                let mut buf = BytesMut::new();
                assert_eq!(codec.encode(&env, &mut buf), Ok(()));
                let expected = Envelope::Ask {
                    id: 1,
                    message: message.as_version(version),
                };
                assert_eq!(codec.decode(&mut buf), Ok(Some(expected)));
            }
        }
    }
    round_trip::<DeployMessage>(vec![
        samples::register_worker().into(),
        samples::launch_executor().into(),
        samples::worker_decommissioning().into(),
        samples::request_submit_driver().into(),
    ]);
    round_trip::<CoarseMessage>(vec![
        samples::register_executor().into(),
        samples::status_update(10).into(),
        samples::spark_app_config().into(),
        samples::executor_decommissioning().into(),
    ]);
}
