//! The faults of close envelopes and refused asks (SPEC §8, §8.1, §14.3): each breaks one thing
//! an endpoint owes about how it ends a connection or answers an ask it refuses.

use std::sync::Mutex as StdMutex;

use bytes::Bytes;
use sparkwire::messages::Version;
use sparkwire::wire::{decode_envelope, encode_envelope, Envelope};

use super::behaviour::{lock, Act, Behaviour};
use super::proxy::State;
use super::wire::framed;
use super::D;

/// The kinds of SPEC §8.1's table, all of them: what a receiver of this revision knows. The
/// first eight are §8's decoding errors, in their order of precedence (§11.2).
const KNOWN: [&str; 20] = [
    "InvalidMessagePack",
    "TooDeep",
    "TrailingBytes",
    "BadEnvelope",
    "UnknownMessage",
    "NotInVersion",
    "LocalMessage",
    "InvalidFields",
    "FrameTooLarge",
    "UnknownAsk",
    "DuplicateReply",
    "DuplicateAsk",
    "NotOnRoute",
    "NotOwner",
    "RuleViolation",
    "SlowConsumer",
    "InboundOverflow",
    "TooManyAsks",
    "FrameTimedOut",
    "Idle",
];

/// The kinds of SPEC §8's decoding errors, in their order of precedence (§11.2).
const DECODING: &[&str] = KNOWN.split_at(8).0;

/// The fields of `CloseReason` (SPEC §8.1).
const FIELDS: [&str; 4] = ["kind", "message", "path", "offset"];

/// True for a close envelope, `[4, …]`.
fn is_close(body: &[u8]) -> bool {
    body.len() >= 2 && body[0] == 0x92 && body[1] == 0x04
}

/// The close envelope's reason, read as sparkwire's decoder reads it (whatever the family).
fn reason_of(body: &[u8], st: &StdMutex<State>) -> Option<sparkwire::wire::CloseReason> {
    let version = lock(st).version.unwrap_or(Version::V2);
    match decode_envelope::<D>(&Bytes::copy_from_slice(body), version) {
        Ok(Envelope::Close(r)) => Some(r),
        _ => None,
    }
}

fn close_frame(reason: sparkwire::wire::CloseReason) -> Vec<u8> {
    let mut out = Vec::new();
    match encode_envelope(&Envelope::<D>::Close(reason), Version::V2, &mut out) {
        Ok(()) => out,
        Err(_) => Vec::new(),
    }
}

/// `refused-ask-closes`: the endpoint closes the connection on an ask it refuses instead of
/// answering it with a failure.
pub(super) struct RefusedAskCloses;

impl Behaviour for RefusedAskCloses {
    fn endpoint_sent(&self, body: Bytes, _: &StdMutex<State>, endpoint_listens: bool) -> Act {
        // `[3, id, error]`, any family.
        let failure = body.len() >= 2 && body[0] == 0x93 && body[1] == 0x03;
        match (failure, endpoint_listens) {
            (false, _) => Act::Forward(body),
            (true, true) => Act::Close,
            // Where the endpoint connects the proxy cannot close its side for it: the failure
            // is dropped, the ask left pending.
            (true, false) => Act::Drop,
        }
    }
}

/// `close-kind-wrong`: the endpoint names the wrong kind in its close envelopes.
pub(super) struct CloseKindWrong;

/// The kind `close-kind-wrong` writes for `kind`: a decoding error's next in §8's order (the last
/// one's the first), an ask error another ask error, a strict endpoint's RuleViolation NotOwner;
/// the others unchanged.
fn wrong_kind(kind: &str) -> Option<&'static str> {
    if let Some(i) = DECODING.iter().position(|k| *k == kind) {
        return Some(DECODING[(i + 1) % DECODING.len()]);
    }
    match kind {
        "UnknownAsk" => Some("DuplicateReply"),
        "DuplicateReply" | "DuplicateAsk" => Some("UnknownAsk"),
        "RuleViolation" => Some("NotOwner"),
        _ => None,
    }
}

impl Behaviour for CloseKindWrong {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, _: bool) -> Act {
        if !is_close(&body) {
            return Act::Forward(body);
        }
        match reason_of(&body, st) {
            Some(mut r) => match wrong_kind(&r.kind) {
                Some(k) => {
                    r.kind = k.to_string();
                    let out = close_frame(r);
                    if out.is_empty() {
                        Act::Forward(body)
                    } else {
                        Act::Forward(Bytes::from(out))
                    }
                }
                None => Act::Forward(body),
            },
            None => Act::Forward(body),
        }
    }
}

/// `close-envelope-always`: the endpoint sends a close envelope before every close, its
/// ordinary ones too (its shutdown, a connection it no longer needs).
pub(super) struct CloseEnvelopeAlways;

impl Behaviour for CloseEnvelopeAlways {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, _: bool) -> Act {
        lock(st).endpoint_last_close = is_close(&body);
        Act::Forward(body)
    }

    fn endpoint_ends(&self, st: &StdMutex<State>) -> Vec<u8> {
        let g = lock(st);
        if g.version.is_none() || g.endpoint_last_close {
            return Vec::new();
        }
        drop(g);
        let body = close_frame(sparkwire::wire::CloseReason::new(
            "Idle",
            "added by the fault proxy before an ordinary close",
        ));
        if body.is_empty() {
            Vec::new()
        } else {
            framed(&body)
        }
    }
}

/// `close-kind-unknown-ignored`: an endpoint ignores a close envelope whose kind it does not
/// know, or that holds a field it does not know, and goes on.
pub(super) struct CloseKindUnknownIgnored;

/// True when the close envelope `body` names a kind outside SPEC §8.1's table or holds a field
/// `CloseReason` does not have.
fn unknown_to_this_revision(body: &[u8]) -> bool {
    let mut cur = &body[2..];
    let Ok(n) = rmp::decode::read_map_len(&mut cur) else {
        return false;
    };
    for _ in 0..n {
        let mut key = vec![0u8; 256];
        let Ok(k) = rmp::decode::read_str(&mut cur, &mut key) else {
            return false;
        };
        let k = k.to_string();
        if !FIELDS.contains(&k.as_str()) {
            return true;
        }
        let start = body.len() - cur.len();
        let Ok(len) = sparkwire::wire::msgpack::value_len(&body[start..]) else {
            return false;
        };
        if k == "kind" {
            let mut v = vec![0u8; 256];
            let mut vcur = &body[start..start + len];
            if let Ok(kind) = rmp::decode::read_str(&mut vcur, &mut v) {
                if !KNOWN.contains(&kind) {
                    return true;
                }
            }
        }
        cur = &cur[len..];
    }
    false
}

impl Behaviour for CloseKindUnknownIgnored {
    fn suite_sent_to_client(&self, body: Bytes, _: &StdMutex<State>) -> Act {
        ignored(body)
    }

    fn suite_sent(&self, body: Bytes, _: &StdMutex<State>) -> Act {
        ignored(body)
    }
}

/// Drops a close envelope of a kind or with a field this revision does not know.
fn ignored(body: Bytes) -> Act {
    if is_close(&body) && unknown_to_this_revision(&body) {
        Act::Drop
    } else {
        Act::Forward(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(entries: &[(&'static str, Vec<u8>)]) -> Vec<u8> {
        crate::harness::mp::arr(&[crate::harness::mp::u(4), crate::harness::mp::map(entries)])
    }

    #[test]
    fn an_unknown_kind_or_field_is_told_from_a_known_close() {
        let known = close(&[
            ("kind", crate::harness::mp::s("Idle")),
            ("message", crate::harness::mp::s("idle")),
        ]);
        assert!(!unknown_to_this_revision(&known));
        let kind = close(&[
            ("kind", crate::harness::mp::s("zzzKind")),
            ("message", crate::harness::mp::s("later")),
        ]);
        assert!(unknown_to_this_revision(&kind));
        let field = close(&[
            ("kind", crate::harness::mp::s("NotOnRoute")),
            ("message", crate::harness::mp::s("m")),
            ("zzzField", crate::harness::mp::u(1)),
        ]);
        assert!(unknown_to_this_revision(&field));
    }

    #[test]
    fn every_decoding_and_ask_kind_is_rewritten_to_another() {
        for k in DECODING.iter().chain(&[
            "UnknownAsk",
            "DuplicateReply",
            "DuplicateAsk",
            "RuleViolation",
        ]) {
            let w = wrong_kind(k).expect("a kind rewritten");
            assert_ne!(w, *k);
        }
        assert_eq!(wrong_kind("NotOnRoute"), None);
    }
}
