//! A decoder of this revision reads frames of a hypothetical newer revision that added optional
//! fields: the unknown fields are skipped, everything else decodes as before.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::Serialize;
use sparkwire::messages::deploy::Heartbeat;
use sparkwire::messages::{Addr, DeployMessage, EndpointRef, Version};
use sparkwire::wire::{decode_frame, Envelope};

/// Heartbeat as a newer revision would lay it out: two fields more, one of them nested.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HeartbeatNext {
    worker_id: String,
    load_average: Option<f64>,
    worker: EndpointRef,
    labels: BTreeMap<String, Vec<String>>,
}

fn frame_of(name: &str, fields: &impl Serialize) -> Bytes {
    let mut body = Vec::new();
    rmp::encode::write_array_len(&mut body, 2).expect("vec");
    rmp::encode::write_uint(&mut body, 0).expect("vec");
    rmp::encode::write_map_len(&mut body, 1).expect("vec");
    rmp::encode::write_str(&mut body, name).expect("vec");
    fields
        .serialize(&mut rmp_serde::Serializer::new(&mut body).with_struct_map())
        .expect("serializes");
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    Bytes::from(frame)
}

#[test]
fn a_newer_revision_s_optional_fields_are_skipped_by_this_decoder() {
    let worker = EndpointRef::at(Addr::new("127.0.0.1", 35001), "Worker");
    let next = HeartbeatNext {
        worker_id: "worker-1".into(),
        load_average: Some(0.75),
        worker: worker.clone(),
        labels: [("zone".to_string(), vec!["a".to_string(), "b".to_string()])]
            .into_iter()
            .collect(),
    };
    let expected = DeployMessage::Heartbeat(Heartbeat::new("worker-1".into(), worker));
    for version in Version::ALL {
        let got: Envelope<DeployMessage> =
            decode_frame(&frame_of("Heartbeat", &next), version).expect("decodes");
        assert_eq!(got, Envelope::Send(expected.clone()));
    }
}

#[test]
fn a_missing_optional_field_decodes_as_none_and_a_missing_required_one_is_an_error() {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct OlderExecutorStateChanged {
        app_id: String,
        exec_id: i32,
        state: &'static str,
    }
    let older = OlderExecutorStateChanged {
        app_id: "app-1".into(),
        exec_id: 3,
        state: "RUNNING",
    };
    let got: Envelope<DeployMessage> =
        decode_frame(&frame_of("ExecutorStateChanged", &older), Version::V2).expect("decodes");
    let Envelope::Send(DeployMessage::ExecutorStateChanged(m)) = got else {
        panic!("wrong message")
    };
    assert_eq!((m.message, m.exit_status), (None, None));

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct NoState {
        app_id: String,
        exec_id: i32,
    }
    let e = decode_frame::<DeployMessage>(
        &frame_of(
            "ExecutorStateChanged",
            &NoState {
                app_id: "a".into(),
                exec_id: 1,
            },
        ),
        Version::V2,
    )
    .expect_err("state is required");
    assert!(e.to_string().contains("state"), "{e}");
}
