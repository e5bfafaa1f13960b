//! Random values of every message survive encoding and decoding in every version that has them,
//! as that version can carry them; what a version cannot carry is refused with a typed error.
#![cfg(feature = "arbitrary")]

mod common;

use arbitrary::Arbitrary;
use bytes::Bytes;
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::wire::{decode_frame, encode_frame, Envelope, Error, Reply};
use sparkwire::wire::{read_message, write_message};

fn round_trips<F: Family + for<'a> Arbitrary<'a>>(seed: u64) {
    for m in common::samples_of_every_message::<F>(seed, 40) {
        for v in Version::ALL {
            let expected = m.as_version(v);
            assert_eq!(
                expected.as_version(v),
                expected,
                "{}: as_version is not idempotent",
                m.name()
            );
            if !m.exists_in(v) {
                let e =
                    encode_frame(&Envelope::Send(m.clone()), v).expect_err("absent from version");
                assert!(
                    matches!(e, Error::NotInVersion { .. } | Error::LocalMessage { .. }),
                    "{e}"
                );
                continue;
            }
            // The body alone, local messages included.
            let mut body = Vec::new();
            write_message(&m, v, &mut body).expect("encodes");
            let frame = Bytes::from(body);
            let back: F =
                read_message(&frame, &frame, v).unwrap_or_else(|e| panic!("{}: {e}", m.name()));
            assert_eq!(back, expected, "{} in {v}", m.name());
            // Whole frames, in every envelope form that can carry a message.
            let envs = [
                Envelope::Send(m.clone()),
                Envelope::Ask {
                    id: u64::MAX,
                    message: m.clone(),
                },
                Envelope::Reply {
                    id: 3,
                    reply: Reply::Message(m.clone()),
                },
            ];
            for env in envs {
                match encode_frame(&env, v) {
                    Ok(bytes) => {
                        let decoded: Envelope<F> =
                            decode_frame(&Bytes::from(bytes), v).expect("decodes");
                        assert_eq!(decoded.message(), Some(&expected));
                    }
                    Err(Error::LocalMessage { name }) => {
                        assert!(m.is_local(), "{name} refused as local");
                    }
                    Err(e) => panic!("{}: {e}", m.name()),
                }
            }
        }
    }
}

#[test]
fn random_deploy_messages_round_trip_in_every_version() {
    round_trips::<DeployMessage>(1);
}

#[test]
fn random_coarse_messages_round_trip_in_every_version() {
    round_trips::<CoarseMessage>(2);
}

#[test]
fn random_envelopes_round_trip() {
    let mut rng = common::Rng::new(3);
    let mut checked = 0;
    for _ in 0..3000 {
        let data = rng.bytes(400);
        let mut u = arbitrary::Unstructured::new(&data);
        let Ok(env) = Envelope::<CoarseMessage>::arbitrary(&mut u) else {
            continue;
        };
        if let Ok(bytes) = encode_frame(&env, Version::V2) {
            let back: Envelope<CoarseMessage> =
                decode_frame(&Bytes::from(bytes), Version::V2).expect("decodes");
            let expected = match env {
                Envelope::Send(m) => Envelope::Send(m.as_version(Version::V2)),
                other => other,
            };
            assert_eq!(back, expected);
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} envelopes were encodable");
}

#[test]
fn version_two_messages_are_refused_for_a_version_one_peer_both_ways() {
    let m = DeployMessage::from(sparkwire::messages::deploy::DecommissionWorker::new());
    let e = encode_frame(&Envelope::Send(m.clone()), Version::V1).expect_err("v2 only");
    assert_eq!(
        e,
        Error::NotInVersion {
            name: "DecommissionWorker",
            version: Version::V1,
            since: Version::V2
        }
    );
    assert!(e.to_string().contains("added in v2"), "{e}");
    let v2 = Bytes::from(encode_frame(&Envelope::Send(m), Version::V2).expect("v2 has it"));
    let e = decode_frame::<DeployMessage>(&v2, Version::V1).expect_err("v1 reader");
    assert!(
        matches!(
            e,
            Error::NotInVersion {
                name: "DecommissionWorker",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn local_messages_are_refused_by_the_codec_both_ways() {
    let m = CoarseMessage::from(sparkwire::messages::coarse::ReviveOffers::new());
    let e = encode_frame(&Envelope::Send(m.clone()), Version::V2).expect_err("local");
    assert_eq!(
        e,
        Error::LocalMessage {
            name: "ReviveOffers"
        }
    );
    // Hand-built frame [0, {"ReviveOffers": {}}].
    let mut body = vec![0x92, 0x00];
    write_message(&m, Version::V2, &mut body).expect("body alone is writable");
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    let e = decode_frame::<CoarseMessage>(&Bytes::from(frame), Version::V2).expect_err("local");
    assert_eq!(
        e,
        Error::LocalMessage {
            name: "ReviveOffers"
        }
    );
}

#[test]
fn version_one_layout_fills_documented_defaults() {
    use sparkwire::messages::coarse::StatusUpdate;
    use sparkwire::messages::{Payload, TaskState};
    let mut resources = std::collections::BTreeMap::new();
    resources.insert(
        "gpu".to_string(),
        [("0".to_string(), 5_000_000_000_000_000i64)]
            .into_iter()
            .collect(),
    );
    let m = CoarseMessage::from(StatusUpdate::new(
        "1".into(),
        9,
        TaskState::Finished,
        Payload::copy_from(b"ok"),
        2,
        resources,
    ));
    let bytes =
        Bytes::from(encode_frame(&Envelope::Send(m), Version::V1).expect("v1 has StatusUpdate"));
    let Envelope::Send(CoarseMessage::StatusUpdate(back)) =
        decode_frame(&bytes, Version::V1).expect("decodes")
    else {
        panic!("not a StatusUpdate")
    };
    assert_eq!(back.task_cpus, 1, "v1 has no taskCpus: one cpu per task");
    assert_eq!(
        back.resources["gpu"]["0"], 10_000_000_000_000_000,
        "v1 addresses are whole units"
    );
    assert_eq!(back.data.as_slice(), b"ok");
}

fn app_config_with_task_cpus(amount: f64) -> CoarseMessage {
    let mut profile = sparkwire::messages::ResourceProfile::default_with(Some(2), 1024);
    if let Some(cpus) = profile.task_resources.get_mut("cpus") {
        cpus.amount = amount;
    }
    CoarseMessage::from(sparkwire::messages::coarse::SparkAppConfig::new(
        vec![],
        profile,
    ))
}

#[test]
fn a_resource_amount_that_is_not_finite_is_refused_both_ways() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut out = Vec::new();
        let e = write_message(&app_config_with_task_cpus(bad), Version::V2, &mut out)
            .expect_err("a NaN or infinite amount is not encoded");
        assert!(
            matches!(&e, Error::Encode { name, .. } if name == "SparkAppConfig"),
            "{e}"
        );
        assert!(e.to_string().contains("not a finite number"), "{e}");
    }
    // Encode 1.0, then put a NaN where its float 64 is.
    let mut body = Vec::new();
    write_message(&app_config_with_task_cpus(1.0), Version::V2, &mut body).expect("finite");
    let one = [0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0];
    let at = body
        .windows(one.len())
        .position(|w| w == one)
        .expect("the amount is a float 64");
    body[at + 1..at + 9].copy_from_slice(&f64::NAN.to_be_bytes());
    let frame = Bytes::from(body);
    let e = read_message::<CoarseMessage>(&frame, &frame, Version::V2).expect_err("NaN refused");
    assert!(
        matches!(&e, Error::InvalidFields { name, .. } if name == "SparkAppConfig"),
        "{e}"
    );
    assert!(e.to_string().contains("NaN is not a finite number"), "{e}");
}
