//! The faults of the handshake and of a connection's route: hellos taken or answered wrongly, a
//! wrong role, closes hidden, frames the role never sends.

use std::sync::Mutex as StdMutex;

use bytes::Bytes;
use sparkwire::messages::Version;
use sparkwire::wire::encode_envelope;
use sparkwire::wire::handshake::encode_hello;
use sparkwire::wire::handshake::{Accepted, Hello, RefusalReason, Role};
use sparkwire::wire::Envelope;

use super::behaviour::{lock, Act, Behaviour, HelloAct};
use super::proxy::State;
use super::wire::{framed, hello_bytes};
use super::D;

/// The lowest (or highest) version of `versions` the crate knows.
pub(super) fn known_version(versions: &[u64], lowest: bool) -> Option<u64> {
    let known = versions
        .iter()
        .copied()
        .filter(|v| Version::from_number(*v).is_some());
    if lowest {
        known.min()
    } else {
        known.max()
    }
}

pub(super) struct AcceptAnyHello;

impl Behaviour for AcceptAnyHello {
    fn suite_hello(&self, _: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        HelloAct::AcceptAny
    }

    fn accepts_oversized_hello(&self) -> bool {
        true
    }
}

pub(super) struct LowestVersion;

impl Behaviour for LowestVersion {
    fn suite_hello(&self, hello: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        let Ok(h) = hello else {
            return HelloAct::Pass;
        };
        let mut h = h.clone();
        if let Some(min) = known_version(&h.versions, true) {
            h.versions = vec![min];
        }
        HelloAct::Send(hello_bytes(&h))
    }

    fn endpoint_hello(&self, mut h: Hello, _: &[u8]) -> Option<Vec<u8>> {
        if let Some(min) = known_version(&h.versions, true) {
            h.versions = vec![min];
        }
        Some(hello_bytes(&h))
    }
}

pub(super) struct RefuseSingleVersion;

impl Behaviour for RefuseSingleVersion {
    fn suite_hello(&self, hello: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        let Ok(h) = hello else {
            return HelloAct::Pass;
        };
        let mut vs = h.versions.clone();
        vs.sort_unstable();
        vs.dedup();
        if vs.len() == 1 {
            HelloAct::Refuse(RefusalReason::NoCommonVersion)
        } else {
            HelloAct::Pass
        }
    }

    fn endpoint_hello(&self, mut h: Hello, _: &[u8]) -> Option<Vec<u8>> {
        // As a client: it claims to speak only its highest version.
        if let Some(max) = known_version(&h.versions, false) {
            h.versions = vec![max];
        }
        Some(hello_bytes(&h))
    }
}

pub(super) struct WrongRole;

pub(super) fn other_role(r: Role) -> Role {
    if r == Role::Worker {
        Role::Ui
    } else {
        Role::Worker
    }
}

impl Behaviour for WrongRole {
    fn endpoint_hello(&self, mut h: Hello, _: &[u8]) -> Option<Vec<u8>> {
        h.role = other_role(h.role);
        Some(hello_bytes(&h))
    }

    fn acceptance(&self, a: &Accepted) -> Option<Accepted> {
        let mut a = a.clone();
        a.role = other_role(a.role);
        Some(a)
    }
}

pub(super) struct Pedantic;

impl Behaviour for Pedantic {
    fn suite_hello(&self, hello: Result<&Hello, ()>, body: &[u8], reads: usize) -> HelloAct {
        let canonical = hello.ok().map(|h| {
            let mut b = Vec::new();
            encode_hello(h, &mut b);
            b
        });
        let ok = canonical.as_deref() == Some(body)
            && hello.is_ok_and(|h| !h.id.is_empty())
            && body.len() < 65536
            && reads <= 1
            && hello.is_ok_and(|h| {
                h.versions
                    .iter()
                    .all(|v| Version::from_number(*v).is_some())
            });
        if ok {
            HelloAct::Pass
        } else {
            HelloAct::Refuse(RefusalReason::BadMagic)
        }
    }

    fn endpoint_hello(&self, h: Hello, _: &[u8]) -> Option<Vec<u8>> {
        // The same hello with its keys in reverse order.
        let mut e = crate::harness::mp::hello_entries(&h.versions, h.role.name(), &h.id);
        e.reverse();
        Some(framed(&crate::harness::mp::map(&e)))
    }
}

pub(super) struct KeepOpen;

impl Behaviour for KeepOpen {
    fn keeps_open(&self) -> bool {
        true
    }
}

pub(super) struct Mute;

impl Behaviour for Mute {
    fn keeps_open(&self) -> bool {
        true
    }

    fn endpoint_sent(&self, _: Bytes, _: &StdMutex<State>, _: bool) -> Act {
        Act::Drop
    }
}

pub(super) struct Duplicate;

impl Behaviour for Duplicate {
    fn endpoint_hello(&self, _: Hello, body: &[u8]) -> Option<Vec<u8>> {
        // An eager client: its hello twice, before any answer.
        let mut twice = framed(body);
        twice.extend_from_slice(&framed(body));
        Some(twice)
    }

    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, _: &StdMutex<State>) -> Vec<u8> {
        framed(body)
    }
}

pub(super) struct SilentClose;

impl Behaviour for SilentClose {
    fn endpoint_sent(&self, body: Bytes, _: &StdMutex<State>, _: bool) -> Act {
        // A close envelope, `[4, …]` (SPEC §8.1), is dropped.
        if body.len() >= 2 && body[0] == 0x92 && body[1] == 0x04 {
            Act::Drop
        } else {
            Act::Forward(body)
        }
    }
}

pub(super) struct AuthNotConfiguredTaken;

impl Behaviour for AuthNotConfiguredTaken {
    fn suite_hello(&self, hello: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        match hello {
            Ok(h) => {
                let mut h = h.clone();
                h.auth = None;
                HelloAct::Send(hello_bytes(&h))
            }
            Err(()) => HelloAct::Pass,
        }
    }
}

pub(super) struct OffRoute;

impl Behaviour for OffRoute {
    fn after_endpoint_frame(
        &self,
        body: &[u8],
        role: Option<Role>,
        st: &StdMutex<State>,
    ) -> Vec<u8> {
        off_route(body, role, st).unwrap_or_default()
    }
}

/// For `off-route`, the frame to add after `body`, a frame of an endpoint of `role`: after its
/// first one-way message on the connection, one its role never sends.
pub(super) fn off_route(body: &[u8], role: Option<Role>, st: &StdMutex<State>) -> Option<Vec<u8>> {
    use sparkwire::messages::{coarse, deploy, CoarseMessage, EndpointRef};
    if !(body.len() >= 2 && body[0] == 0x92 && body[1] == 0x00) {
        return None;
    }
    let v = {
        let mut st = lock(st);
        if st.off_route_sent {
            return None;
        }
        st.off_route_sent = true;
        st.version.unwrap_or(Version::V2)
    };
    let mut out = Vec::new();
    let encoded = match role? {
        Role::Master => encode_envelope(
            &Envelope::Send(D::from(deploy::Heartbeat::new(
                "worker-off-route".into(),
                EndpointRef::client("Worker"),
            ))),
            v,
            &mut out,
        ),
        Role::Driver => encode_envelope(
            &Envelope::Send(CoarseMessage::from(coarse::LaunchedExecutor::new(
                "1".into(),
            ))),
            v,
            &mut out,
        ),
        Role::Executor => encode_envelope(
            &Envelope::Send(CoarseMessage::from(coarse::StopExecutor::new())),
            v,
            &mut out,
        ),
        _ => encode_envelope(
            &Envelope::Send(D::from(deploy::KillDriver::new("driver-off-route".into()))),
            v,
            &mut out,
        ),
    };
    encoded.ok().map(|()| framed(&out))
}
