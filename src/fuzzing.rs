//! The bodies of the fuzz targets in `fuzz/`, kept in the library so that a plain `cargo test`
//! replays the seed corpus and every regression file through exactly the same code, on the stable
//! toolchain, without cargo-fuzz.
//!
//! Each function takes arbitrary bytes. It must never panic on any input; where it checks a
//! property (an accepted frame re-encodes to something that decodes to the same value), a failed
//! check panics, which is how the fuzzer reports it.

use bytes::Bytes;

use crate::messages::{CoarseMessage, DeployMessage, Family, Version};
use crate::wire::body::{read_message, write_message};
use crate::wire::task::{decode_task, encode_task};
use crate::wire::{decode_envelope, encode_envelope};

/// The fuzz targets, by name (the file names under `fuzz/fuzz_targets/`).
pub const TARGETS: &[&str] = &["message_body", "envelope", "roundtrip", "task_description"];

/// Runs the target `name` on `data`; `false` when there is no such target.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "message_body" => message_body(data),
        "envelope" => envelope(data),
        "roundtrip" => roundtrip(data),
        "task_description" => task_description(data),
        _ => return false,
    }
    true
}

/// The first byte picks the family and version; the rest is read as a message body. An accepted
/// body re-encodes, and the re-encoding decodes to the same value.
pub fn message_body(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let version = if selector & 1 == 0 {
        Version::V1
    } else {
        Version::V2
    };
    let frame = Bytes::copy_from_slice(rest);
    if selector & 2 == 0 {
        body_round_trip::<DeployMessage>(&frame, version);
    } else {
        body_round_trip::<CoarseMessage>(&frame, version);
    }
}

fn body_round_trip<F: Family>(frame: &Bytes, version: Version) {
    let Ok(m) = read_message::<F>(frame, frame, version) else {
        return;
    };
    let mut again = Vec::new();
    if let Err(e) = write_message(&m, version, &mut again) {
        panic!("accepted {} but cannot encode it again: {e}", m.name());
    }
    let again = Bytes::from(again);
    match read_message::<F>(&again, &again, version) {
        Ok(back) => assert_eq!(back, m, "re-encoded {} decodes differently", m.name()),
        Err(e) => panic!("re-encoded {} does not decode: {e}", m.name()),
    }
}

/// The first byte picks the family and version; the rest is read as an envelope (a frame's body).
pub fn envelope(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let version = if selector & 1 == 0 {
        Version::V1
    } else {
        Version::V2
    };
    let frame = Bytes::copy_from_slice(rest);
    if selector & 2 == 0 {
        envelope_round_trip::<DeployMessage>(&frame, version);
    } else {
        envelope_round_trip::<CoarseMessage>(&frame, version);
    }
}

fn envelope_round_trip<F: Family>(frame: &Bytes, version: Version) {
    let Ok(env) = decode_envelope::<F>(frame, version) else {
        return;
    };
    let mut again = Vec::new();
    if let Err(e) = encode_envelope(&env, version, &mut again) {
        panic!("accepted an envelope but cannot encode it again: {e}");
    }
    match decode_envelope::<F>(&Bytes::from(again), version) {
        Ok(back) => assert_eq!(back, env, "re-encoded envelope decodes differently"),
        Err(e) => panic!("re-encoded envelope does not decode: {e}"),
    }
}

/// A structured message built from the bytes is encoded for each version that has it and decoded
/// back; the result equals the message as that version can carry it.
#[cfg(feature = "arbitrary")]
pub fn roundtrip(data: &[u8]) {
    use arbitrary::{Arbitrary, Unstructured};
    let mut u = Unstructured::new(data);
    let Ok(coarse) = bool::arbitrary(&mut u) else {
        return;
    };
    if coarse {
        if let Ok(m) = CoarseMessage::arbitrary(&mut u) {
            message_round_trip(&m);
        }
    } else if let Ok(m) = DeployMessage::arbitrary(&mut u) {
        message_round_trip(&m);
    }
}

/// Without the `arbitrary` feature there is nothing to build messages from.
#[cfg(not(feature = "arbitrary"))]
pub fn roundtrip(_data: &[u8]) {}

/// Encodes `m` in every version that has it and checks it decodes to `m.as_version(v)`.
pub fn message_round_trip<F: Family>(m: &F) {
    for v in Version::ALL {
        if !m.exists_in(v) {
            continue;
        }
        let mut body = Vec::new();
        if let Err(e) = write_message(m, v, &mut body) {
            panic!("{} does not encode in {v}: {e}", m.name());
        }
        let body = Bytes::from(body);
        match read_message::<F>(&body, &body, v) {
            Ok(back) => assert_eq!(back, m.as_version(v), "{} in {v}", m.name()),
            Err(e) => panic!("{} encoded in {v} does not decode: {e}", m.name()),
        }
    }
}

/// The bytes are read as `LaunchTask.data`; an accepted task description re-encodes to the same.
pub fn task_description(data: &[u8]) {
    let bytes = Bytes::copy_from_slice(data);
    let Ok(task) = decode_task(&bytes) else {
        return;
    };
    match encode_task(&task) {
        Ok(again) => match decode_task(&Bytes::from(again)) {
            Ok(back) => assert_eq!(back, task),
            Err(e) => panic!("re-encoded task does not decode: {e}"),
        },
        Err(e) => panic!("accepted task does not encode: {e}"),
    }
}

/// Seed inputs for target `name`, made from the golden vectors (the same values the files in
/// `protocol/vectors/` hold): written by `sparkwire spec fuzz-seeds`.
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    use crate::definition::Definition;
    use crate::messages::payload::from_hex;
    use crate::wire::vectors::{envelope_vectors, message_vectors, task_vectors};
    let def = Definition::builtin();
    let mut out = Vec::new();
    let selector =
        |family: &str, version: u8| u8::from(version == 2) | if family == "coarse" { 2 } else { 0 };
    match name {
        "message_body" | "envelope" => {
            for mv in message_vectors(def).unwrap_or_default() {
                for v in mv.vectors {
                    let bytes = if name == "message_body" {
                        from_hex(&v.body_hex)
                    } else {
                        v.frame_hex
                            .as_deref()
                            .and_then(from_hex)
                            .map(|f| f[4.min(f.len())..].to_vec())
                    };
                    if let Some(b) = bytes {
                        let mut seed = vec![selector(&mv.family, v.version)];
                        seed.extend_from_slice(&b);
                        out.push(seed);
                    }
                }
            }
            if name == "envelope" {
                for ev in envelope_vectors().unwrap_or_default() {
                    if let Some(f) = from_hex(&ev.frame_hex) {
                        let mut seed = vec![selector(&ev.family, ev.version)];
                        seed.extend_from_slice(&f[4.min(f.len())..]);
                        out.push(seed);
                    }
                }
            }
        }
        "task_description" => {
            for tv in task_vectors(def).unwrap_or_default() {
                if let Some(b) = from_hex(&tv.hex) {
                    out.push(b);
                }
            }
        }
        "roundtrip" => {
            for i in 0..64u8 {
                out.push(
                    (0..256u16)
                        .map(|j| (j as u8).wrapping_mul(31).wrapping_add(i))
                        .collect(),
                );
            }
        }
        _ => {}
    }
    out
}
