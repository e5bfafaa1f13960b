//! The faults of issue 44's decisions: where an `InvalidFields` fault lies (SPEC §8.2), the
//! handshake's features (handshake.md §5, §12), how soon a master sees a closed connection
//! (SPEC §14.2 Z4), a version 1 `ExecutorUpdated`'s `workerLost` (SPEC §5), an ask whose answer
//! is over the frame limit (SPEC §8), the failure class of a strict refusal (SPEC §14.3), and a
//! legal master that is slow to answer (not a fault: what a case must not depend on).

use std::time::Duration;

use bytes::Bytes;
use sparkwire::messages::ErrorDescription;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::{Hello, Role};
use sparkwire::wire::msgpack::Cursor;
use sparkwire::wire::{decode_envelope, encode_envelope, Envelope};

use super::{decoded, framed, lock, Act, Behaviour, Decoded, HelloAct, State, StdMutex, D};

/// What this file's faults remember of one connection.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// The ids of the suite's RequestMasterState asks.
    state_asks: std::collections::BTreeSet<u64>,
    /// The id of the suite's last ask.
    last_ask: Option<u64>,
}

/// The id of the ask `body` (`[1, id, message]`), read raw whatever the message.
fn ask_id(body: &[u8]) -> Option<u64> {
    let mut cur = Cursor::new(body);
    (cur.array_len().ok()? == 3 && cur.uint().ok()? == 1).then_some(())?;
    cur.uint().ok()
}

/// `answer-over-limit-pending`: the master leaves a RequestMasterState pending instead of
/// failing it when its answer would not fit the frame limit: the proxy drops the failure.
pub(super) struct AnswerOverLimitPending;

impl Behaviour for AnswerOverLimitPending {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Ok(Envelope::Ask {
            id,
            message: D::RequestMasterState(_),
        }) = decode_envelope::<D>(&body, Version::V2)
        {
            lock(st).seen.points.state_asks.insert(id);
        }
        Act::Forward(body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, _: bool) -> Act {
        match decode_envelope::<D>(&body, Version::V2) {
            Ok(Envelope::Failure { id, .. }) if lock(st).seen.points.state_asks.contains(&id) => {
                Act::Drop
            }
            _ => Act::Forward(body),
        }
    }
}

/// `driver-client-never-idle`: the master leaves an idle driver client's connection open (its
/// idle close is hidden from the suite: the close envelope dropped, the suite's side kept open).
pub(super) struct DriverClientNeverIdle;

impl Behaviour for DriverClientNeverIdle {
    fn hides_close_of(&self, role: Option<Role>) -> bool {
        role == Some(Role::DriverClient)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, _: bool) -> Act {
        if lock(st).client_role != Some(Role::DriverClient) || !is_close(&body) {
            return Act::Forward(body);
        }
        match decode_envelope::<D>(&body, Version::V2) {
            Ok(Envelope::Close(r)) if r.kind == "Idle" => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

/// `strict-refusal-as-foreign-id`: a strict master answers an ask it refuses for a rule of
/// rules.md with the failure of a foreign id: the proxy turns its RuleViolation close envelope
/// into a `java.lang.SecurityException` failure for the suite's last ask.
pub(super) struct StrictRefusalAsForeignId;

impl Behaviour for StrictRefusalAsForeignId {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(id) = ask_id(&body) {
            lock(st).seen.points.last_ask = Some(id);
        }
        Act::Forward(body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, _: bool) -> Act {
        if !is_close(&body) {
            return Act::Forward(body);
        }
        let (version, last) = {
            let g = lock(st);
            (g.version.unwrap_or(Version::V2), g.seen.points.last_ask)
        };
        let (Some(id), Ok(Envelope::Close(r))) = (last, decode_envelope::<D>(&body, version))
        else {
            return Act::Forward(body);
        };
        if r.kind != "RuleViolation" {
            return Act::Forward(body);
        }
        let error = ErrorDescription::new("java.lang.SecurityException", r.message);
        let mut out = Vec::new();
        match encode_envelope(&Envelope::<D>::Failure { id, error }, version, &mut out) {
            Ok(()) => Act::Forward(Bytes::from(out)),
            Err(_) => Act::Forward(body),
        }
    }
}

/// True for a close envelope, `[4, …]`.
fn is_close(body: &[u8]) -> bool {
    body.len() >= 2 && body[0] == 0x92 && body[1] == 0x04
}

/// `location-wrong`: the endpoint locates an `InvalidFields` fault as a decoder that reads past
/// the offending item's marker before it finds the fault would: one byte after the item's first.
pub(super) struct LocationWrong;

impl Behaviour for LocationWrong {
    fn endpoint_sent(&self, body: Bytes, _: &StdMutex<State>, _: bool) -> Act {
        if !is_close(&body) {
            return Act::Forward(body);
        }
        let reason = match sparkwire::wire::decode_envelope::<D>(&body, Version::V2) {
            Ok(Envelope::Close(r)) if r.kind == "InvalidFields" => r,
            _ => return Act::Forward(body),
        };
        let mut moved = reason.clone();
        moved.offset = Some(reason.offset.map_or(0, |o| o + 1));
        let mut out = Vec::new();
        match encode_envelope(&Envelope::<D>::Close(moved), Version::V2, &mut out) {
            Ok(()) => Act::Forward(Bytes::from(out)),
            Err(_) => Act::Forward(body),
        }
    }
}

/// `features-mishandled`: the server names a feature it takes as many times as the hello
/// offered it (and at least twice), writes the hello's `features` into a refused answer, and
/// checks `features` at no step (a hello whose `features` is not an array of `str` is read as
/// one without it).
pub(super) struct FeaturesMishandled;

/// `body`, a MessagePack map, without its entries keyed `key`; `None` when it has none or is not
/// a map of string keys.
fn without_key(body: &[u8], key: &str) -> Option<Vec<u8>> {
    let mut cur = Cursor::new(body);
    let n = cur.map_len().ok()?;
    let mut kept = Vec::new();
    let mut dropped = 0;
    for _ in 0..n {
        let start = cur.position();
        let k = cur.str().ok()?;
        cur.value().ok()?;
        if k == key {
            dropped += 1;
        } else {
            kept.extend_from_slice(&body[start..cur.position()]);
        }
    }
    if dropped == 0 || n - dropped > 15 {
        return None;
    }
    let mut out = vec![0x80 | (n - dropped) as u8];
    out.extend(kept);
    Some(out)
}

/// `body`, a MessagePack fixmap, with the entry `key: value` added at its end.
fn with_entry(body: &[u8], key: &str, value: &[u8]) -> Option<Vec<u8>> {
    let head = *body.first()?;
    if head & 0xf0 != 0x80 || head & 0x0f == 0x0f {
        return None;
    }
    let mut out = vec![head + 1];
    out.extend_from_slice(&body[1..]);
    out.extend(crate::harness::mp::s(key));
    out.extend_from_slice(value);
    Some(out)
}

impl Behaviour for FeaturesMishandled {
    fn suite_hello(&self, hello: Result<&Hello, ()>, body: &[u8], _: usize) -> HelloAct {
        if let Ok(h) = hello {
            lock_offered().clone_from(&h.features);
            return HelloAct::Pass;
        }
        // A hello that does not decode: without its `features`, it may.
        match without_key(body, "features") {
            Some(b) if sparkwire::wire::handshake::decode_hello(&b).is_ok() => {
                HelloAct::Send(framed(&b))
            }
            _ => HelloAct::Pass,
        }
    }

    fn acceptance(
        &self,
        a: &sparkwire::wire::handshake::Accepted,
    ) -> Option<sparkwire::wire::handshake::Accepted> {
        if a.features.is_empty() {
            return None;
        }
        let mut a = a.clone();
        let twice: Vec<String> = a
            .features
            .iter()
            .flat_map(|f| [f.clone(), f.clone()])
            .collect();
        a.features = twice;
        Some(a)
    }

    fn refusal(&self, body: &[u8]) -> Option<Vec<u8>> {
        let offered = lock_offered().clone();
        let names: Vec<Vec<u8>> = if offered.is_empty() {
            vec![crate::harness::mp::s(
                sparkwire::wire::handshake::CLOSE_REASON,
            )]
        } else {
            offered.iter().map(|f| crate::harness::mp::s(f)).collect()
        };
        with_entry(body, "features", &crate::harness::mp::arr(&names)).map(|b| framed(&b))
    }
}

/// The features of the last hello the suite said through `features-mishandled` (the refusal's
/// hook sees only the answer).
fn lock_offered() -> std::sync::MutexGuard<'static, Vec<String>> {
    static OFFERED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    OFFERED.lock().unwrap_or_else(|e| e.into_inner())
}

/// `close-noticed-late`: the master learns that a driver client's connection closed only long
/// after its end reached it (as one that notices only when it next writes would): the proxy
/// passes the end of the suite's `driver-client` connections on to the master 3 s late.
pub(super) struct CloseNoticedLate;

impl Behaviour for CloseNoticedLate {
    fn suite_end_delay(&self, role: Option<Role>) -> Option<Duration> {
        (role == Some(Role::DriverClient)).then_some(Duration::from_secs(3))
    }
}

/// `late-250ms`: not a fault but a legal, slow master: each frame it writes reaches the suite
/// 250 ms after the one before it could have (its handshake answer too).
pub(super) struct Late250Ms;

impl Behaviour for Late250Ms {
    fn endpoint_delay(&self) -> Option<Duration> {
        Some(Duration::from_millis(250))
    }
}

/// `worker-lost-wrong-v1`: a version 1 master that gets `ExecutorUpdated.workerLost` wrong: the
/// proxy flips it in every version 1 `ExecutorUpdated` (true for an executor whose worker was not
/// lost, false for one whose worker was).
pub(super) struct WorkerLostWrongV1;

impl Behaviour for WorkerLostWrongV1 {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some(Decoded {
            version: Version::V1,
            envelope: Ok(Some(Envelope::Send(D::ExecutorUpdated(mut u)))),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        // Version 1 carries `workerLost` (SPEC §5): a host of any kind reads as true.
        u.worker_host = match u.worker_host {
            Some(_) => None,
            None => Some(String::new()),
        };
        let mut out = Vec::new();
        match encode_envelope(
            &Envelope::Send(D::ExecutorUpdated(u)),
            Version::V1,
            &mut out,
        ) {
            Ok(()) => Act::Forward(Bytes::from(out)),
            Err(_) => Act::Forward(body),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_removed_from_a_map_and_an_entry_added() {
        let m = crate::harness::mp::map(&[
            ("a", crate::harness::mp::u(1)),
            ("features", crate::harness::mp::s("x")),
        ]);
        assert_eq!(
            without_key(&m, "features"),
            Some(crate::harness::mp::map(&[("a", crate::harness::mp::u(1))]))
        );
        assert_eq!(without_key(&m, "zzz"), None);
        let added = with_entry(
            &crate::harness::mp::map(&[("a", crate::harness::mp::u(1))]),
            "features",
            &crate::harness::mp::s("x"),
        );
        assert_eq!(added, Some(m));
    }
}
