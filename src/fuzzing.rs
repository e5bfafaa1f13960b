//! The bodies of the fuzz targets in `fuzz/`, kept in the library so that a plain `cargo test`
//! replays the seed corpus and every regression file through exactly the same code, on the stable
//! toolchain, without cargo-fuzz.
//!
//! Each function takes arbitrary bytes. It must never panic on any input; where it checks a
//! property (an accepted frame re-encodes to something that decodes to the same value), a failed
//! check panics, which is how the fuzzer reports it.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::Decoder;

use crate::messages::{CoarseMessage, DeployMessage, Family, Version};
use crate::wire::{decode_envelope, encode_envelope};
use crate::wire::{decode_task, encode_task};
use crate::wire::{read_message, write_message};

/// The fuzz targets, by name (the file names under `fuzz/fuzz_targets/`).
pub const TARGETS: &[&str] = &[
    "frame_decoder",
    "handshake",
    "message_body",
    "envelope",
    "roundtrip",
    "task_description",
    "validator",
    "trace_reader",
    "binary_trace_reader",
    "spark_stream",
    "java_roundtrip",
];

/// Runs the target `name` on `data`; `false` when there is no such target.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "frame_decoder" => frame_decoder(data),
        "handshake" => handshake(data),
        "validator" => validator(data),
        "trace_reader" => trace_reader(data),
        "binary_trace_reader" => binary_trace_reader(data),
        "message_body" => message_body(data),
        "envelope" => envelope(data),
        "roundtrip" => roundtrip(data),
        "task_description" => task_description(data),
        "spark_stream" => spark_stream(data),
        "java_roundtrip" => java_roundtrip(data),
        _ => return false,
    }
    true
}

/// The frame limit the frame-decoder target uses: small, so that oversized declarations are
/// exercised as well as accepted frames.
pub const FUZZ_FRAME_LIMIT: usize = 4096;

/// Decodes every frame `codec` finds in `data`, fed in two pieces split at `split`, and returns
/// what it decoded (stopping at the first error, which is returned as text).
fn decode_all<D: Decoder>(mut codec: D, data: &[u8], split: usize) -> Vec<Result<D::Item, String>>
where
    D::Error: std::fmt::Display,
{
    let mut out = Vec::new();
    let mut buf = BytesMut::new();
    let split = split.min(data.len());
    for (i, piece) in [&data[..split], &data[split..]].into_iter().enumerate() {
        buf.extend_from_slice(piece);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(item)) => out.push(Ok(item)),
                Ok(None) => break,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
        if i == 1 {
            match codec.decode_eof(&mut buf) {
                Ok(Some(item)) => out.push(Ok(item)),
                Ok(None) => {}
                Err(e) => out.push(Err(e.to_string())),
            }
        }
    }
    out
}

/// The first byte picks the stage (before the handshake: raw frames under the handshake limit,
/// read as hellos; after it: envelopes of either family and version under a small limit) and the
/// second where the input is split in two reads. Decoding must not depend on how the bytes were
/// split, and every accepted envelope re-encodes to a frame that decodes to itself.
pub fn frame_decoder(data: &[u8]) {
    use crate::wire::handshake::decode_hello;
    use crate::wire::FrameLimit;
    use crate::wire::{FrameCodec, RawFrameCodec};
    let [selector, split, rest @ ..] = data else {
        return;
    };
    let version = if selector & 1 == 0 {
        Version::V1
    } else {
        Version::V2
    };
    let split = usize::from(*split);
    match selector % 6 {
        0 | 1 => {
            let whole = decode_all(RawFrameCodec::new(FrameLimit::HANDSHAKE), rest, rest.len());
            let pieces = decode_all(RawFrameCodec::new(FrameLimit::HANDSHAKE), rest, split);
            assert_eq!(
                whole, pieces,
                "raw frames depend on how the bytes were split"
            );
            for body in whole.into_iter().flatten() {
                let _ = decode_hello(&body);
            }
        }
        2 | 3 => frames_of::<DeployMessage>(rest, version, split),
        _ => frames_of::<CoarseMessage>(rest, version, split),
    }
    fn frames_of<F: Family>(data: &[u8], version: Version, split: usize) {
        let codec = || FrameCodec::<F>::new(version, FrameLimit::message(FUZZ_FRAME_LIMIT));
        let whole = decode_all(codec(), data, data.len());
        let pieces = decode_all(codec(), data, split);
        assert_eq!(whole, pieces, "frames depend on how the bytes were split");
        for env in whole.into_iter().flatten() {
            match codec().encode_to_bytes(&env) {
                Ok(frame) => {
                    let again = decode_all(codec(), &frame, frame.len());
                    assert_eq!(
                        again,
                        vec![Ok(env)],
                        "a re-encoded frame decodes differently"
                    );
                }
                Err(e) => panic!("an accepted envelope does not re-encode: {e}"),
            }
        }
    }
}

/// The bytes are a hello frame body for a server, and an answer for a client that sent a fixed
/// hello. Whatever the server accepts, it accepts at a version both sides speak, and its answer
/// is one the client accepts with the same outcome.
pub fn handshake(data: &[u8]) {
    use crate::wire::handshake::{
        answer_hello, check_answer, decode_answer, encode_answer, Answer, Hello, Identity, Role,
    };
    let _ = decode_answer(data);
    let client_hello = Hello::new(&Version::ALL, Role::Worker, "worker-1");
    let _ = check_answer(data, &client_hello);
    let server = Identity {
        role: Role::Master,
        id: "master".into(),
        versions: Version::ALL.to_vec(),
        secret: None,
        admin_secret: None,
        close_reason: true,
    };
    let (answer, outcome) = answer_hello(data, &server, |r| r.carries::<DeployMessage>());
    match (&answer, &outcome) {
        (Answer::Accepted(a), Ok(n)) => {
            assert_eq!(a.version, n.version);
            assert!(
                n.peer_versions.contains(&u64::from(n.version.number())),
                "chose a version the client did not offer"
            );
            let hello = Hello {
                versions: n.peer_versions.clone(),
                role: n.peer_role,
                id: n.peer_id.clone(),
                auth: None,
                features: if n.close_reason {
                    vec![crate::wire::handshake::CLOSE_REASON.to_string()]
                } else {
                    Vec::new()
                },
            };
            let mut body = Vec::new();
            encode_answer(&answer, &mut body);
            match check_answer(&body, &hello) {
                Ok(c) => {
                    assert_eq!(c.version, n.version);
                    assert_eq!(
                        c.close_reason, n.close_reason,
                        "the two sides disagree on closeReason"
                    );
                }
                Err(e) => panic!("the client refuses the server's own acceptance: {e}"),
            }
        }
        (Answer::Refused(_), Err(_)) => {}
        (a, o) => panic!("answer {a:?} disagrees with outcome {o:?}"),
    }
    authenticated_handshake(data, &server);
}

/// With a secret, the same bytes as a hello, as a proof and as a challenge: no server accepts
/// them without a valid proof, no client goes on without a valid challenge.
fn authenticated_handshake(data: &[u8], server: &crate::wire::handshake::Identity) {
    use crate::wire::handshake::{
        encode_hello, read_hello, read_server_frame, Answer, ClientNext, Identity, Role, Secret,
        ServerHello,
    };
    let secret = Secret::new(b"fuzzing secret".to_vec());
    let server = server.clone().with_secret(secret.clone());
    let accept = |r: Role| r.carries::<DeployMessage>();
    match read_hello(data, &server, accept, || Ok([7; 32])) {
        ServerHello::Answer(Answer::Accepted(_), _) | ServerHello::Answer(_, Ok(_)) => {
            panic!("a server with a secret accepted a hello without a proof")
        }
        ServerHello::Answer(..) => {}
        ServerHello::Challenge(auth) => {
            // The input as its own proof: guessing a valid one is out of reach.
            let (answer, outcome) = auth.finish(data, &server, accept);
            assert!(
                outcome.is_err() && !matches!(answer, Answer::Accepted(_)),
                "a guessed proof was accepted"
            );
        }
    }
    let client = Identity::new(Role::Worker, "worker-1").with_secret(secret);
    let hello = client.hello_with_nonce([1; 32]);
    let mut hello_body = Vec::new();
    encode_hello(&hello, &mut hello_body);
    if let Ok(ClientNext::Done(_)) = read_server_frame(data, &hello, &hello_body, &client) {
        panic!("a client with a secret went on without the server's proof");
    }
}

/// The first byte picks the family and version; the rest is read as a message body. An accepted
/// body re-encodes, and the re-encoding decodes to the same value.
pub fn message_body(data: &[u8]) {
    let Some((version, coarse, frame)) = selected(data) else {
        return;
    };
    if coarse {
        body_round_trip::<CoarseMessage>(&frame, version);
    } else {
        body_round_trip::<DeployMessage>(&frame, version);
    }
}

/// Reads the selector byte of the body and envelope targets: bit 0 picks the version (V1, V2),
/// bit 1 the family (deploy, coarse); the rest of the input is the frame.
fn selected(data: &[u8]) -> Option<(Version, bool, Bytes)> {
    let (&selector, rest) = data.split_first()?;
    let version = if selector & 1 == 0 {
        Version::V1
    } else {
        Version::V2
    };
    Some((version, selector & 2 != 0, Bytes::copy_from_slice(rest)))
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
    let Some((version, coarse, frame)) = selected(data) else {
        return;
    };
    if coarse {
        envelope_round_trip::<CoarseMessage>(&frame, version);
    } else {
        envelope_round_trip::<DeployMessage>(&frame, version);
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

/// Hello and answer frame bodies of every role and version set.
fn handshake_seeds() -> Vec<Vec<u8>> {
    use crate::wire::handshake::{
        answer_hello, encode_answer, encode_hello, Hello, Identity, Role,
    };
    let mut out = Vec::new();
    let server = Identity {
        role: Role::Master,
        id: "master".into(),
        versions: Version::ALL.to_vec(),
        secret: None,
        admin_secret: None,
        close_reason: true,
    };
    for role in Role::ALL {
        for versions in [&Version::ALL[..], &[Version::V1][..], &[Version::V2][..]] {
            let mut hello = Vec::new();
            encode_hello(&Hello::new(versions, role, "peer-1"), &mut hello);
            let (answer, _) = answer_hello(&hello, &server, |r| r.carries::<DeployMessage>());
            let mut body = Vec::new();
            encode_answer(&answer, &mut body);
            out.push(hello);
            out.push(body);
        }
    }
    // The authenticated exchange's frames.
    if let Ok(vectors) = crate::wire::vectors::auth_vectors() {
        for v in vectors {
            for hex in [
                Some(v.hello_hex),
                v.challenge_hex,
                v.proof_hex,
                v.answer_hex,
            ]
            .into_iter()
            .flatten()
            {
                if let Some(frame) = crate::messages::from_hex(&hex) {
                    out.push(frame.get(4..).unwrap_or_default().to_vec());
                }
            }
        }
    }
    out
}

/// Seed inputs for target `name`, made from the golden vectors (the same values the files in
/// `protocol/vectors/` hold): written by `sparkwire spec fuzz-seeds`.
pub fn seeds(name: &str) -> Vec<Vec<u8>> {
    use crate::definition::Definition;
    use crate::messages::from_hex;
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
        "frame_decoder" => {
            for mv in message_vectors(def).unwrap_or_default() {
                for v in mv.vectors {
                    if let Some(f) = v.frame_hex.as_deref().and_then(from_hex) {
                        let stage = if mv.family == "coarse" { 4 } else { 2 };
                        let mut seed = vec![stage | u8::from(v.version == 2), (f.len() / 2) as u8];
                        seed.extend_from_slice(&f);
                        out.push(seed);
                    }
                }
            }
            for hello in handshake_seeds() {
                let mut seed = vec![0, 3];
                seed.extend_from_slice(&(hello.len() as u32).to_be_bytes());
                seed.extend_from_slice(&hello);
                out.push(seed);
            }
        }
        "handshake" => out.extend(handshake_seeds()),
        "spark_stream" => out.extend(spark_seeds()),
        "java_roundtrip" => out.extend(java_seeds()),
        "trace_reader" | "validator" => {
            let legal = include_str!("../protocol/traces/legal-flow.jsonl");
            let illegal = include_str!("../protocol/traces/illegal-flow.jsonl");
            if name == "trace_reader" {
                out.push(legal.as_bytes().to_vec());
                out.push(illegal.as_bytes().to_vec());
                for line in legal.lines().chain(illegal.lines()).take(200) {
                    out.push(line.as_bytes().to_vec());
                }
            } else {
                for i in 0..64u8 {
                    out.push(
                        (0..512u16)
                            .map(|j| (j as u8).wrapping_mul(37).wrapping_add(i))
                            .collect(),
                    );
                }
            }
        }
        "binary_trace_reader" => out.extend(binary_trace_seeds()),
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

/// Builds a sequence of events from the bytes (connections opened and closed between a few
/// endpoints, arbitrary envelopes of either family along them) and feeds it to two fresh
/// validators: nothing panics, and both give the same verdicts, event by event.
#[cfg(feature = "arbitrary")]
pub fn validator(data: &[u8]) {
    use arbitrary::{Arbitrary, Unstructured};

    use crate::validate::{Endpoint, Event, Validator};
    use crate::wire::handshake::Role;
    use crate::wire::Envelope;

    let mut u = Unstructured::new(data);
    let mut events = Vec::new();
    let mut time = 0u64;
    let ids = ["a", "b", "c"];
    while !u.is_empty() && events.len() < 256 {
        let Ok(step) = u16::arbitrary(&mut u) else {
            break;
        };
        time += u64::from(step % 2000);
        let Ok(conn) = u8::arbitrary(&mut u) else {
            break;
        };
        let conn = u64::from(conn % 6);
        let Ok(kind) = u8::arbitrary(&mut u) else {
            break;
        };
        let endpoint = |u: &mut Unstructured<'_>| -> Option<Endpoint> {
            let role = *u.choose(&Role::ALL).ok()?;
            let id = *u.choose(&ids).ok()?;
            Some(Endpoint::new(role, id))
        };
        let (Some(a), Some(b)) = (endpoint(&mut u), endpoint(&mut u)) else {
            break;
        };
        let version = if kind & 0x80 == 0 {
            Version::V2
        } else {
            Version::V1
        };
        let event = match kind % 8 {
            0 => Event::open(time, conn, a, b, version),
            1 => Event::close(time, conn),
            2..=4 => match Envelope::<DeployMessage>::arbitrary(&mut u) {
                Ok(env) => Event::message(time, conn, a, b, version, env),
                Err(_) => break,
            },
            _ => match Envelope::<CoarseMessage>::arbitrary(&mut u) {
                Ok(env) => Event::message(time, conn, a, b, version, env),
                Err(_) => break,
            },
        };
        events.push(event);
    }
    let mut first = Validator::default();
    let mut second = Validator::default();
    for e in &events {
        let v1 = first.observe(e);
        let v2 = second.observe(e);
        assert_eq!(
            v1, v2,
            "verdicts differ between two validators fed the same events"
        );
    }
    assert_eq!(first.finish(), second.finish());
}

/// Without the `arbitrary` feature there is nothing to build events from.
#[cfg(not(feature = "arbitrary"))]
pub fn validator(_data: &[u8]) {}

/// The bytes are read as a trace (JSON Lines): nothing panics, and the events read, written back,
/// read the same.
pub fn trace_reader(data: &[u8]) {
    use crate::validate::trace::{read_events, to_text};
    let text = String::from_utf8_lossy(data);
    let Ok(events) = read_events(&text) else {
        return;
    };
    match to_text(&events) {
        Ok(again) => match read_events(&again) {
            Ok(back) => assert_eq!(back, events, "a written trace reads back differently"),
            Err(e) => panic!("a written trace does not read back: {e}"),
        },
        Err(e) => panic!("events read from a trace cannot be written: {e}"),
    }
}

/// The bytes, after a binary trace's header, are read as the records of a binary trace
/// (protocol/trace.md, "Binary form"): nothing panics, reading stops at the first bad record, the
/// events before it written back read back the same, and the detecting reader reads the whole
/// input exactly as the binary reader does.
pub fn binary_trace_reader(data: &[u8]) {
    use crate::validate::trace::{binary_header, write_binary, AnyTraceReader, BinaryTraceReader};
    let mut input = binary_header().to_vec();
    input.extend_from_slice(data);
    let mut events = Vec::new();
    let mut failed = None;
    for e in BinaryTraceReader::new(input.as_slice()) {
        match e {
            Ok(e) => events.push(e),
            Err(e) => {
                assert!(failed.is_none(), "reading goes on after an error");
                assert!(
                    e.offset as usize <= input.len(),
                    "{e}: offset beyond the input"
                );
                failed = Some(e);
            }
        }
    }
    let detected: Vec<_> = AnyTraceReader::new(input.as_slice()).collect();
    assert_eq!(detected.len(), events.len() + usize::from(failed.is_some()));
    match write_binary(&events) {
        Ok(again) => {
            let back: Result<Vec<_>, _> = BinaryTraceReader::new(again.as_slice()).collect();
            match back {
                Ok(back) => assert_eq!(back, events, "a written trace reads back differently"),
                Err(e) => panic!("a written binary trace does not read back: {e}"),
            }
        }
        Err(e) => panic!("events read from a binary trace cannot be written: {e}"),
    }
}

/// The sample traces in the binary form (without the header the target adds), whole and one
/// record at a time.
fn binary_trace_seeds() -> Vec<Vec<u8>> {
    use crate::validate::trace::{read_events, write_binary, HEADER_LEN};
    let mut out = Vec::new();
    for text in [
        include_str!("../protocol/traces/legal-flow.jsonl"),
        include_str!("../protocol/traces/illegal-flow.jsonl"),
    ] {
        let Ok(events) = read_events(text) else {
            continue;
        };
        if let Ok(all) = write_binary(&events) {
            out.push(all[HEADER_LEN..].to_vec());
        }
        for e in events.iter().take(100) {
            if let Ok(one) = write_binary(std::slice::from_ref(e)) {
                out.push(one[HEADER_LEN..].to_vec());
            }
        }
    }
    out
}

/// Spark's wire, raw: the first byte says where the bytes split between the client's and the
/// server's direction of one connection (the client's sent first), the second how each direction
/// is cut into reads. The tracer never panics; the events it makes always write as a trace that
/// reads back the same, and validate without a panic; decoding does not depend on how the reads
/// were cut.
#[cfg(feature = "spark")]
pub fn spark_stream(data: &[u8]) {
    use crate::spark::Tracer;
    use crate::validate::trace::{read_events, to_text};
    use crate::validate::{Config, Validator};
    let (Some(&split), Some(&cut)) = (data.first(), data.get(1)) else {
        return;
    };
    let rest = &data[2.min(data.len())..];
    let split = (usize::from(split) * rest.len() / 255).min(rest.len());
    let (c2s, s2c) = rest.split_at(split);
    let run = |piece: usize| {
        let mut t = Tracer::default();
        t.open(1, 0, "10.0.0.2:40000".into(), "10.0.0.1:7077".into());
        let mut events = Vec::new();
        let mut time = 0;
        for (from_client, mut bytes) in [(true, c2s), (false, s2c)] {
            while !bytes.is_empty() {
                time += 1;
                let n = piece.min(bytes.len());
                events.extend(t.data(1, time, from_client, &bytes[..n]));
                bytes = &bytes[n..];
            }
        }
        events.extend(t.close(1, time + 1));
        let stripped: Vec<_> = events
            .iter()
            .map(|e| crate::validate::Event {
                time: 0,
                ..e.clone()
            })
            .collect();
        (events, stripped, t.summary().clone())
    };
    let (events, whole, summary) = run(usize::MAX);
    let (_, pieces, _) = run(usize::from(cut).max(1));
    assert_eq!(whole, pieces, "decoding depends on how the reads were cut");
    match to_text(&events) {
        Ok(text) => match read_events(&text) {
            Ok(back) => assert_eq!(back, events, "a Spark trace reads back differently"),
            Err(e) => panic!("a Spark trace does not read back: {e}"),
        },
        Err(e) => panic!("a Spark trace cannot be written: {e}"),
    }
    let mut v = Validator::new(Config::default());
    for e in &events {
        let _ = v.observe(e);
    }
    let _ = v.finish();
    let _ = summary;
}

/// Without the `spark` feature there is no Spark decoder.
#[cfg(not(feature = "spark"))]
pub fn spark_stream(_data: &[u8]) {}

/// The limits the Java round-trip target reads and writes within: small, so that their refusals
/// are exercised.
#[cfg(feature = "spark")]
fn java_limits() -> crate::spark::serial::Limits {
    crate::spark::serial::Limits {
        max_bytes: 1 << 20,
        max_depth: 48,
        max_handles: 1 << 14,
    }
}

/// Java serialization both ways. With the first byte even, the rest is a stream: if it reads,
/// its graph writes, the bytes written read back to the same graph, and writing that gives the
/// same bytes again. With it odd, the rest is a program that builds a graph (objects whose
/// fields refer to any entry, themselves and later ones included, so cycles and
/// self-references; block data; arrays; strings): writing it either fails with a typed error or
/// gives bytes that read back to a graph that writes the same bytes. Nothing panics, and
/// nothing grows past the limits.
#[cfg(feature = "spark")]
pub fn java_roundtrip(data: &[u8]) {
    use crate::spark::serial::{read, write};
    let limits = java_limits();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let Ok(g) = read(rest, &limits) else {
            return;
        };
        let bytes = match write(&g, &limits) {
            Ok(b) => b,
            Err(e) => panic!("a graph read from a stream does not write: {e}"),
        };
        let back = match read(&bytes, &limits) {
            Ok(g) => g,
            Err(e) => panic!("what the writer wrote does not read: {e}"),
        };
        assert_eq!(back, g, "the written stream reads back to another graph");
        assert_eq!(
            write(&back, &limits).ok().as_deref(),
            Some(bytes.as_slice()),
            "writing is not stable"
        );
    } else {
        let g = java_program(rest);
        let Ok(bytes) = write(&g, &limits) else {
            return;
        };
        let back = match read(&bytes, &limits) {
            Ok(g) => g,
            Err(e) => panic!("what the writer wrote does not read: {e}"),
        };
        assert_eq!(
            write(&back, &limits).ok().as_deref(),
            Some(bytes.as_slice()),
            "a written graph does not come back"
        );
    }
}

/// Without the `spark` feature there is no Java serialization.
#[cfg(not(feature = "spark"))]
pub fn java_roundtrip(_data: &[u8]) {}

/// A graph built by `program`: each byte picks an operation, the next ones its arguments.
#[cfg(feature = "spark")]
fn java_program(program: &[u8]) -> crate::spark::serial::Graph {
    use crate::spark::serial::{
        Array, ClassData, ClassDesc, Elements, Entry, FieldDesc, Graph, Handle, Item, Object,
        Value, SC_SERIALIZABLE, SC_WRITE_METHOD,
    };
    let mut g = Graph::new();
    let object_sig = g.add(Entry::String("Ljava/lang/Object;".into()));
    let node = g.add(Entry::ClassDesc(ClassDesc {
        name: "fuzz.Node".into(),
        suid: 1,
        flags: SC_SERIALIZABLE,
        fields: vec![
            FieldDesc {
                code: b'I',
                name: "x".into(),
                signature: None,
            },
            FieldDesc {
                code: b'L',
                name: "next".into(),
                signature: Some(object_sig),
            },
            FieldDesc {
                code: b'L',
                name: "other".into(),
                signature: Some(object_sig),
            },
        ],
        annotation: Vec::new(),
        super_desc: None,
    }));
    let custom = g.add(Entry::ClassDesc(ClassDesc {
        name: "fuzz.Custom".into(),
        suid: 2,
        flags: SC_SERIALIZABLE | SC_WRITE_METHOD,
        fields: Vec::new(),
        annotation: Vec::new(),
        super_desc: Some(node),
    }));
    let array = g.add(Entry::ClassDesc(ClassDesc {
        name: "[Ljava.lang.Object;".into(),
        suid: 3,
        flags: SC_SERIALIZABLE,
        fields: Vec::new(),
        annotation: Vec::new(),
        super_desc: None,
    }));
    let mut bytes = program.iter().copied();
    let pick = |g: &Graph, b: Option<u8>| -> Value {
        match b {
            None | Some(0) => Value::Null,
            // Up to a few entries past the last: a reference to nothing, which must be refused.
            Some(b) => Value::Ref(Handle(u32::from(b) % (g.entries().len() as u32 + 3))),
        }
    };
    let mut root = None;
    let mut steps = 0;
    while let Some(op) = bytes.next() {
        steps += 1;
        if steps > 4096 {
            break;
        }
        match op % 6 {
            0 => {
                let n = usize::from(bytes.next().unwrap_or(0) % 12);
                let s: String = (0..n)
                    .map(|_| char::from(b'a' + bytes.next().unwrap_or(0) % 26))
                    .collect();
                g.add(Entry::String(s));
            }
            1 | 2 => {
                let x = i32::from(bytes.next().unwrap_or(0));
                let next = pick(&g, bytes.next());
                // The object's own handle: a self-reference.
                let own = Value::Ref(Handle(g.entries().len() as u32));
                let other = if op % 6 == 2 {
                    own
                } else {
                    pick(&g, bytes.next())
                };
                let h = g.add(Entry::Object(Object {
                    class: node,
                    data: vec![ClassData {
                        values: vec![Value::Int(x), next, other],
                        annotation: None,
                    }],
                }));
                root.get_or_insert(h);
            }
            3 => {
                let n = usize::from(bytes.next().unwrap_or(0) % 40);
                let data: Vec<u8> = (0..n * 37).map(|i| i as u8).collect();
                let v = pick(&g, bytes.next());
                let h = g.add(Entry::Object(Object {
                    class: custom,
                    data: vec![
                        ClassData {
                            values: vec![Value::Int(1), Value::Null, Value::Null],
                            annotation: None,
                        },
                        ClassData {
                            values: Vec::new(),
                            annotation: Some(vec![Item::Data(data), Item::Value(v)]),
                        },
                    ],
                }));
                root.get_or_insert(h);
            }
            4 => {
                let n = usize::from(bytes.next().unwrap_or(0) % 8);
                let values = (0..n).map(|_| pick(&g, bytes.next())).collect();
                g.add(Entry::Array(Array {
                    class: array,
                    elements: Elements::Values(values),
                }));
            }
            _ => {
                if let Value::Ref(h) = pick(&g, bytes.next()) {
                    root = Some(h);
                }
            }
        }
    }
    g.set_root(root);
    g
}

/// Seeds for `java_roundtrip`: every Java stream of the Spark 4.0.1 and 3.0.3 captures kept in
/// the repository (`tests/data/spark/`), and small graph programs with cycles.
#[cfg_attr(not(feature = "spark"), allow(unused_mut))]
fn java_seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![
        vec![1, 1, 5, 1, 2],
        vec![1, 2, 7, 3, 1, 9, 4, 5, 0],
        vec![1, 0, 3, 1, 2, 3, 1, 3, 4, 3, 5, 4, 3, 1, 2, 3],
        vec![1, 3, 20, 1, 1, 0, 4, 2, 1, 2, 5, 4],
    ];
    #[cfg(feature = "spark")]
    {
        let mut seen = std::collections::HashSet::new();
        // Every release's forms: the per-table vectors first, then whatever else the captures
        // of each release hold.
        let mut streams = spark_vector_streams();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/spark");
        let mut releases: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        releases.sort();
        for release in releases {
            let Ok(entries) = std::fs::read_dir(release) else {
                continue;
            };
            let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            paths.sort();
            for path in paths
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "pcap"))
            {
                let Ok(file) = std::fs::File::open(path) else {
                    continue;
                };
                streams.extend(crate::spark::java_streams(file).unwrap_or_default());
            }
        }
        for stream in streams {
            // One of each distinct stream, and none of the large task bodies.
            if stream.len() <= 16 * 1024 && seen.insert(stream.clone()) {
                let mut seed = vec![0];
                seed.extend_from_slice(&stream);
                out.push(seed);
            }
        }
    }
    out
}

/// The Java streams of the Spark-native golden vectors of every class table
/// (`protocol/vectors/spark/RELEASE.json`, one file per table), files in name order.
#[cfg(feature = "spark")]
fn spark_vector_streams() -> Vec<bytes::Bytes> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/vectors/spark");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let Some(v) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<crate::spark::SparkVectors>(&t).ok())
        else {
            continue;
        };
        out.extend(
            v.vectors
                .iter()
                .filter_map(|x| crate::messages::from_hex(&x.stream_hex))
                .map(bytes::Bytes::from),
        );
    }
    out
}

/// Seeds for `spark_stream`: small Spark frames of each transport type.
fn spark_seeds() -> Vec<Vec<u8>> {
    fn frame(ty: u8, header_and_body: &[u8]) -> Vec<u8> {
        let mut v = (9 + header_and_body.len() as u64).to_be_bytes().to_vec();
        v.push(ty);
        v.extend_from_slice(header_and_body);
        v
    }
    // java.lang.Boolean.TRUE as ObjectOutputStream writes it.
    let boolean: &[u8] = &[
        0xAC, 0xED, 0x00, 0x05, 0x73, 0x72, 0x00, 0x11, b'j', b'a', b'v', b'a', b'.', b'l', b'a',
        b'n', b'g', b'.', b'B', b'o', b'o', b'l', b'e', b'a', b'n', 0xCD, 0x20, 0x72, 0x80, 0xD5,
        0x9C, 0xFA, 0xEE, 0x02, 0x00, 0x01, b'Z', 0x00, 0x05, b'v', b'a', b'l', b'u', b'e', 0x78,
        0x70, 0x01,
    ];
    let mut request = vec![1, 0, 9];
    request.extend_from_slice(b"127.0.0.1");
    request.extend_from_slice(&7078i32.to_be_bytes());
    request.extend_from_slice(&[1, 0, 9]);
    request.extend_from_slice(b"127.0.0.1");
    request.extend_from_slice(&7077i32.to_be_bytes());
    request.extend_from_slice(&[0, 6]);
    request.extend_from_slice(b"Master");
    request.extend_from_slice(boolean);
    let rpc = |ty: u8, id: i64, body: &[u8]| {
        let mut h = id.to_be_bytes().to_vec();
        h.extend_from_slice(&(body.len() as i32).to_be_bytes());
        h.extend_from_slice(body);
        frame(ty, &h)
    };
    let mut one_way = (request.len() as i32).to_be_bytes().to_vec();
    one_way.extend_from_slice(&request);
    let mut stream = 2i32.to_be_bytes().to_vec();
    stream.extend_from_slice(b"s1");
    stream.extend_from_slice(&3i64.to_be_bytes());
    let mut chunk = 5i64.to_be_bytes().to_vec();
    chunk.extend_from_slice(&0i32.to_be_bytes());
    let mut out = Vec::new();
    for split in [0u8, 128, 200, 255] {
        let mut c2s = rpc(3, 7, &request);
        c2s.extend(frame(9, &one_way));
        c2s.extend(frame(0, &chunk));
        let mut s2c = rpc(4, 7, boolean);
        s2c.extend(frame(7, &stream));
        s2c.extend_from_slice(b"abc");
        s2c.extend(frame(1, &chunk));
        let mut seed = vec![0, [1u8, 3, 17, 200][usize::from(split) % 4]];
        seed.extend_from_slice(&c2s);
        let at = seed.len() - 2;
        seed.extend_from_slice(&s2c);
        seed[0] = ((at * 255) / (seed.len() - 2)).min(255) as u8;
        out.push(seed);
    }
    // Every release's messages as its own peers send them: each distinct stream of the
    // per-table vectors, one-way to the master, all in the client's direction.
    #[cfg(feature = "spark")]
    let mut seen = std::collections::HashSet::new();
    #[cfg(feature = "spark")]
    for stream in spark_vector_streams() {
        if stream.len() > 16 * 1024 || !seen.insert(stream.clone()) {
            continue;
        }
        let mut message = request[..request.len() - boolean.len()].to_vec();
        message.extend_from_slice(&stream);
        let mut body = (message.len() as i32).to_be_bytes().to_vec();
        body.extend_from_slice(&message);
        let mut seed = vec![255, 64];
        seed.extend(frame(9, &body));
        out.push(seed);
    }
    out
}
