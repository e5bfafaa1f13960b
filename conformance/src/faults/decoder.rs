//! The faults of the decoder's and the encoder's sentences (SPEC §4, §11.4) and of rule K1: an
//! endpoint that writes its fields in another order, one that refuses a field it does not know,
//! and a driver that asks a cluster manager before it registered.

use bytes::Bytes;
use sparkwire::messages::{coarse, CoarseMessage, Version};
use sparkwire::wire::handshake::{Hello, Role};
use sparkwire::wire::msgpack::Cursor;
use sparkwire::wire::{encode_envelope, Envelope};

use super::{decoded, framed, lock, Act, Behaviour, HelloAct, State, StdMutex};

/// `fields-reordered`: the endpoint writes the fields of every message it sends in reverse
/// order (SPEC §4: "in the order the definition lists them"). A decoder takes them in any
/// order, so only a check of the encoder's order sees it.
pub(super) struct FieldsReordered;

impl Behaviour for FieldsReordered {
    fn endpoint_sent(&self, body: Bytes, _: &StdMutex<State>, _: bool) -> Act {
        match reversed_fields(&body) {
            Some(b) => Act::Forward(Bytes::from(b)),
            None => Act::Forward(body),
        }
    }
}

/// `body` with the entries of its message's field map in reverse order, when it is a send, an
/// ask or a reply message whose message has two fields or more.
fn reversed_fields(body: &[u8]) -> Option<Vec<u8>> {
    let mut cur = Cursor::new(body);
    let len = cur.array_len().ok()?;
    match (cur.uint().ok()?, len) {
        (0, 2) => {}
        (1, 3) => {
            cur.uint().ok()?;
        }
        (2, 3) => {
            cur.uint().ok()?;
            if cur.map_len().ok()? != 1 || cur.str().ok()? != "message" {
                return None;
            }
        }
        _ => return None,
    }
    if cur.map_len().ok()? != 1 {
        return None;
    }
    cur.str().ok()?;
    let n = cur.map_len().ok()?;
    if n < 2 {
        return None;
    }
    let head = cur.position();
    let mut entries = Vec::new();
    for _ in 0..n {
        let start = cur.position();
        cur.value().ok()?;
        cur.value().ok()?;
        entries.push(start..cur.position());
    }
    let end = cur.position();
    let mut out = body[..head].to_vec();
    for r in entries.into_iter().rev() {
        out.extend_from_slice(&body[r]);
    }
    out.extend_from_slice(&body[end..]);
    Some(out)
}

/// `unknown-key-refused`: the endpoint closes the connection on a frame whose message holds a
/// key its version does not define (a field of the other version, or of none), which a decoder
/// MUST skip (SPEC §4, §11.4), in a frame that is valid otherwise. Whichever side connects.
pub(super) struct UnknownKeyRefused;

impl Behaviour for UnknownKeyRefused {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        let (version, role) = {
            let g = lock(st);
            (g.version, g.seen.role)
        };
        let (Some(version), Some(role)) = (version, role) else {
            return Act::Forward(body);
        };
        // Only a frame that is valid otherwise: what a decoder refuses anyway is not the fault's.
        let valid = decoded(&body, st).is_some_and(|d| d.envelope.is_ok());
        match crate::harness::canonical::unknown_key(role.family(), &body, version) {
            Some(_) if valid => Act::Close,
            _ => Act::Forward(body),
        }
    }
}

/// `cluster-manager-asked`: a driver that takes a cluster manager's connection and, before any
/// RegisterClusterManager, asks it for executors (rule K1): the proxy accepts a `cluster-manager`
/// hello itself and sends a RequestExecutors ask at once.
pub(super) struct ClusterManagerAsked;

impl Behaviour for ClusterManagerAsked {
    fn suite_hello(&self, hello: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        match hello {
            Ok(h) if h.role == Role::ClusterManager => HelloAct::AcceptAny,
            _ => HelloAct::Pass,
        }
    }

    fn first_frames(&self, client_role: Option<Role>, version: Version) -> Vec<u8> {
        if client_role != Some(Role::ClusterManager) {
            return Vec::new();
        }
        let ask = Envelope::Ask {
            id: 1,
            message: CoarseMessage::from(coarse::RequestExecutors::new(
                Vec::new(),
                Default::default(),
                Default::default(),
                Default::default(),
            )),
        };
        let mut out = Vec::new();
        match encode_envelope(&ask, version, &mut out) {
            Ok(()) => framed(&out),
            Err(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::mp::{arr, map, s, u};

    #[test]
    fn the_fields_of_a_message_are_reversed_and_nothing_else_changes() {
        let send = arr(&[
            u(0),
            map(&[(
                "KillExecutor",
                map(&[("masterUrl", s("m")), ("appId", s("a")), ("execId", u(1))]),
            )]),
        ]);
        let want = arr(&[
            u(0),
            map(&[(
                "KillExecutor",
                map(&[("execId", u(1)), ("appId", s("a")), ("masterUrl", s("m"))]),
            )]),
        ]);
        assert_eq!(reversed_fields(&send), Some(want));
        // A message of one field, a failure: unchanged.
        let one = arr(&[
            u(0),
            map(&[("LaunchedExecutor", map(&[("executorId", s("1"))]))]),
        ]);
        assert_eq!(reversed_fields(&one), None);
        let failure = arr(&[
            u(3),
            u(1),
            map(&[("className", s("c")), ("message", s("m"))]),
        ]);
        assert_eq!(reversed_fields(&failure), None);
        // The reordered frame still decodes to the same message: only the order changed.
        let body = reversed_fields(&send).expect("reversed");
        let a = sparkwire::wire::decode_envelope::<sparkwire::messages::DeployMessage>(
            &Bytes::from(send.clone()),
            Version::V2,
        );
        let b = sparkwire::wire::decode_envelope::<sparkwire::messages::DeployMessage>(
            &Bytes::from(body.clone()),
            Version::V2,
        );
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert!(crate::harness::canonical::misordered("deploy", &body, Version::V2).is_some());
    }
}
