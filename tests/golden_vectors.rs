//! The golden vectors in `protocol/vectors/` are current, and every one of them decodes to its
//! value and encodes back to its exact bytes. Corrupted and truncated vectors never panic.

mod common;

use std::path::Path;

use bytes::Bytes;
use sparkwire::definition::Definition;
use sparkwire::messages::from_hex;
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::wire::check::{check_message, Strictness};
use sparkwire::wire::value_from_json;
use sparkwire::wire::vectors::{render_files, value_from_body, EnvelopeVector, MessageVectors};
use sparkwire::wire::write_message;
use sparkwire::wire::{decode_frame, encode_frame, error_kind, Envelope};

fn vectors_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/vectors"))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn on_disk() -> Vec<MessageVectors> {
    let def = Definition::builtin();
    def.messages
        .iter()
        .map(|m| {
            read_json(
                &vectors_dir()
                    .join(&m.family)
                    .join(format!("{}.json", m.name)),
            )
        })
        .collect()
}

#[test]
fn vector_files_match_what_the_generator_writes() {
    let files = render_files(Definition::builtin()).expect("generates");
    assert_eq!(files.len(), Definition::builtin().messages.len() + 6);
    for (rel, text) in files {
        let path = vectors_dir().join(&rel);
        let disk =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            disk == text,
            "{rel} is stale: run `cargo run -- spec vectors`"
        );
    }
}

#[test]
fn every_message_has_vectors_for_every_version_it_exists_in() {
    let def = Definition::builtin();
    for (m, mv) in def.messages.iter().zip(on_disk()) {
        for v in Version::ALL.into_iter().filter(|v| m.exists_in(*v)) {
            let n = mv
                .vectors
                .iter()
                .filter(|x| x.version == v.number())
                .count();
            assert!(n >= 2, "{} has {n} vectors for {v}", m.name);
        }
        assert!(mv
            .vectors
            .iter()
            .all(|x| Version::from_number(u64::from(x.version)).is_some_and(|v| m.exists_in(v))));
    }
}

fn check_family_vector<F: Family>(mv: &MessageVectors) {
    let def = Definition::builtin();
    for vec in &mv.vectors {
        let version = Version::from_number(u64::from(vec.version)).expect("known version");
        let from_json: F = value_from_json(&vec.value, version).expect("value decodes");
        let body = from_hex(&vec.body_hex).expect("hex");
        // Bytes decode to the value, and the value encodes to the bytes.
        let from_bytes: F = value_from_body(&body, version).expect("body decodes");
        assert_eq!(from_bytes, from_json, "{} {}", mv.message, vec.case);
        let mut again = Vec::new();
        write_message(&from_json, version, &mut again).expect("encodes");
        assert_eq!(
            again, body,
            "{} {} v{}: bytes differ",
            mv.message, vec.case, vec.version
        );
        check_message(def, F::FAMILY, version, &body, Strictness::Exact)
            .expect("body fits the definition");
        match &vec.frame_hex {
            Some(hex) => {
                let frame = Bytes::from(from_hex(hex).expect("hex"));
                let env: Envelope<F> = decode_frame(&frame, version).expect("frame decodes");
                assert_eq!(env.message(), Some(&from_json));
                assert_eq!(
                    encode_frame(&env, version).expect("encodes"),
                    frame.to_vec()
                );
            }
            None => {
                assert!(
                    from_json.is_local(),
                    "{} has no frame but is not local",
                    mv.message
                );
                let e = encode_frame(&Envelope::Send(from_json), version).expect_err("local");
                assert_eq!(error_kind(&e), "LocalMessage");
            }
        }
    }
}

#[test]
fn every_vector_decodes_to_its_value_and_encodes_to_its_bytes() {
    for mv in on_disk() {
        match mv.family.as_str() {
            "deploy" => check_family_vector::<DeployMessage>(&mv),
            _ => check_family_vector::<CoarseMessage>(&mv),
        }
    }
}

#[test]
fn envelope_vectors_decode_or_fail_with_the_named_error() {
    let env: Vec<EnvelopeVector> = read_json(&vectors_dir().join("envelope.json"));
    for v in env {
        let version = Version::from_number(u64::from(v.version)).expect("version");
        let frame = Bytes::from(from_hex(&v.frame_hex).expect("hex"));
        let got = decode_frame::<CoarseMessage>(&frame, version);
        match (&v.error, got) {
            (None, Ok(e)) => assert_eq!(
                encode_frame(&e, version).expect("encodes"),
                frame.to_vec(),
                "{}",
                v.name
            ),
            (Some(want), Err(e)) => {
                assert_eq!(error_kind(&e), want, "{}: {e}", v.name);
                // SPEC §8.2: an InvalidFields vector says where the fault lies, as decoder.json's.
                let r = sparkwire::wire::CloseReason::decoding(&e);
                assert_eq!(
                    (r.path, r.offset),
                    (v.path.clone(), v.offset),
                    "{}: the path and offset a close envelope reports",
                    v.name
                );
                assert_eq!(want == "InvalidFields", v.path.is_some(), "{}", v.name);
            }
            (want, got) => panic!("{}: wanted error {want:?}, got {got:?}", v.name),
        }
    }
}

#[test]
fn close_envelope_vectors_carry_their_readable_reason() {
    let env: Vec<EnvelopeVector> = read_json(&vectors_dir().join("envelope.json"));
    let mut closes = 0;
    for v in env.iter().filter(|v| v.error.is_none()) {
        let frame = Bytes::from(from_hex(&v.frame_hex).expect("hex"));
        if let Ok(Envelope::Close(reason)) = decode_frame::<DeployMessage>(&frame, Version::V2) {
            closes += 1;
            let readable = v.envelope.as_ref().and_then(|e| e.get("close"));
            assert_eq!(
                Some(&serde_json::to_value(&reason).expect("json")),
                readable,
                "{}",
                v.name
            );
            // Either family reads a close the same way.
            let coarse = decode_frame::<CoarseMessage>(&frame, Version::V1).expect("decodes");
            assert_eq!(coarse, Envelope::Close(reason));
        }
    }
    assert!(closes >= 2, "envelope.json holds close vectors ({closes})");
}

#[test]
fn decoder_vectors_decode_or_fail_as_spec_md_decides() {
    use sparkwire::wire::vectors::{check_decoder_vector, DecoderVector};
    let vectors: Vec<DecoderVector> = read_json(&vectors_dir().join("decoder.json"));
    assert!(vectors.len() >= 20, "{} decoder vectors", vectors.len());
    for v in &vectors {
        check_decoder_vector(v).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert!(
            v.spec.starts_with('§'),
            "{}: names its SPEC.md section",
            v.name
        );
    }
    // Both sides of each boundary are there.
    let error_of = |name: &str| {
        vectors
            .iter()
            .find(|v| v.name.starts_with(name))
            .unwrap_or_else(|| panic!("no vector {name:?}"))
            .error
            .clone()
    };
    assert_eq!(error_of("64 nested containers"), None);
    assert_eq!(error_of("65 nested containers").as_deref(), Some("TooDeep"));
    assert_eq!(
        error_of("a map key given twice").as_deref(),
        Some("InvalidFields")
    );
    assert_eq!(
        error_of("a set element given twice").as_deref(),
        Some("InvalidFields")
    );
    assert_eq!(
        error_of("local wins over not in version").as_deref(),
        Some("LocalMessage")
    );
}

#[test]
fn a_decoder_vector_with_the_wrong_verdict_is_caught() {
    use sparkwire::wire::vectors::{check_decoder_vector, DecoderVector};
    let vectors: Vec<DecoderVector> = read_json(&vectors_dir().join("decoder.json"));
    for v in vectors {
        let mut wrong = v.clone();
        wrong.error = match &v.error {
            Some(_) => None,
            None => Some("InvalidFields".into()),
        };
        assert!(check_decoder_vector(&wrong).is_err(), "{}", v.name);
    }
}

fn corrupt_never_panics<F: Family>(frame: &[u8], version: Version, rng: &mut common::Rng) {
    // Every truncation is an error, never a panic.
    for cut in 0..frame.len() {
        let short = Bytes::copy_from_slice(&frame[..cut]);
        assert!(
            decode_frame::<F>(&short, version).is_err(),
            "truncated to {cut} bytes decoded"
        );
        if cut >= 4 {
            // The body alone, without the prefix, truncated: also an error.
            let body = Bytes::copy_from_slice(&frame[4..cut]);
            assert!(sparkwire::wire::decode_envelope::<F>(&body, version).is_err());
        }
    }
    // Random byte flips: any result but a panic; a success must re-encode.
    for _ in 0..64 {
        let mut bad = frame.to_vec();
        let at = 4 + (rng.next_u64() as usize) % (bad.len() - 4);
        bad[at] ^= (rng.next_u64() as u8) | 1;
        if let Ok(env) = decode_frame::<F>(&Bytes::from(bad), version) {
            let _ = encode_frame(&env, version);
        }
    }
}

#[test]
fn truncated_and_corrupted_vectors_give_errors_and_never_panic() {
    let mut rng = common::Rng::new(99);
    for mv in on_disk() {
        for vec in &mv.vectors {
            let Some(hex) = &vec.frame_hex else { continue };
            let frame = from_hex(hex).expect("hex");
            let version = Version::from_number(u64::from(vec.version)).expect("version");
            match mv.family.as_str() {
                "deploy" => corrupt_never_panics::<DeployMessage>(&frame, version, &mut rng),
                _ => corrupt_never_panics::<CoarseMessage>(&frame, version, &mut rng),
            }
        }
    }
}

#[test]
fn task_description_vectors_decode_to_their_value_and_encode_to_their_bytes() {
    use sparkwire::messages::TaskDescription;
    use sparkwire::wire::vectors::TaskVector;
    use sparkwire::wire::{decode_task, encode_task};
    let vectors: Vec<TaskVector> = read_json(&vectors_dir().join("task-description.json"));
    assert_eq!(vectors.len(), 2);
    for v in vectors {
        let want: TaskDescription = serde_json::from_value(v.value.clone()).expect("value");
        let bytes = Bytes::from(from_hex(&v.hex).expect("hex"));
        assert_eq!(decode_task(&bytes).expect("decodes"), want, "{}", v.case);
        assert_eq!(
            encode_task(&want).expect("encodes"),
            bytes.to_vec(),
            "{}",
            v.case
        );
    }
}
