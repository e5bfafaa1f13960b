//! The faults of a server the suite starts itself (`--spawn-server`, [`super::Scope::Server`]): its
//! resource limits (SPEC §8), its admin secret (SPEC §13, handshake.md §10.1) and its TLS
//! (handshake.md §11). Each breaks what the cases that start a server of their own check (their
//! helpers in `kit/support/limits.rs` and `admin.rs`; the TLS cases in `cases/handshake/s11.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use bytes::Bytes;
use sparkwire::messages::deploy::KillAllDriversResponse;
use sparkwire::messages::{DeployMessage, EndpointRef, Version};
use sparkwire::wire::handshake::{decode_proof, encode_proof};
use sparkwire::wire::{decode_envelope, encode_envelope, Envelope, Reply};

use super::{lock, Act, Behaviour, State};

type D = DeployMessage;

/// The close envelope kinds of the resource limits (SPEC §8.1).
const LIMIT_KINDS: [&str; 5] = [
    "Idle",
    "FrameTimedOut",
    "SlowConsumer",
    "TooManyAsks",
    "InboundOverflow",
];

/// `body`, a frame after the handshake, decoded as a deploy envelope of version 2 (the cases
/// that start a server speak version 2; the proxy does not follow an authenticated handshake to
/// its answer, so it does not know the version itself).
fn deploy(body: &Bytes) -> Option<Envelope<D>> {
    decode_envelope::<D>(body, Version::V2).ok()
}

/// `limit-closes-all`.
pub(super) struct LimitClosesAll;

/// Whether the endpoint closed a connection for a limit since the proxy started (one fault per
/// run of the suite: the process's proxies share it, as the connections of one endpoint do).
static LIMIT_CLOSED: AtomicBool = AtomicBool::new(false);

impl Behaviour for LimitClosesAll {
    fn endpoint_sent(&self, body: Bytes, _: &StdMutex<State>, _: bool) -> Act {
        if let Some(Envelope::Close(reason)) = deploy(&body) {
            if LIMIT_KINDS.contains(&reason.kind.as_str()) {
                LIMIT_CLOSED.store(true, Ordering::SeqCst);
            }
        }
        Act::Forward(body)
    }

    fn suite_sent(&self, body: Bytes, _: &StdMutex<State>) -> Act {
        if LIMIT_CLOSED.load(Ordering::SeqCst) {
            Act::Close
        } else {
            Act::Forward(body)
        }
    }
}

/// `registered-cut-off`.
pub(super) struct RegisteredCutOff;

/// How long after a registration `registered-cut-off` closes the connection.
const CUT_OFF_AFTER: Duration = Duration::from_millis(1500);

impl Behaviour for RegisteredCutOff {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        let mut g = lock(st);
        if let Some(Envelope::Send(D::RegisterWorker(_) | D::RegisterApplication(_))) =
            deploy(&body)
        {
            g.seen.registered_at = Some(std::time::Instant::now());
            return Act::Forward(body);
        }
        match g.seen.registered_at {
            Some(at) if at.elapsed() > CUT_OFF_AFTER => Act::Close,
            _ => Act::Forward(body),
        }
    }
}

/// `admin-inverted`.
pub(super) struct AdminInverted;

impl Behaviour for AdminInverted {
    fn suite_sent(&self, body: Bytes, _: &StdMutex<State>) -> Act {
        match decode_proof(&body) {
            Ok(p) if p.admin.is_some() => Act::Close,
            _ => Act::Forward(body),
        }
    }

    fn endpoint_sent(&self, body: Bytes, _: &StdMutex<State>, _: bool) -> Act {
        let Some(Envelope::Failure { id, error }) = deploy(&body) else {
            return Act::Forward(body);
        };
        if !error.message.starts_with("Permission denied:") {
            return Act::Forward(body);
        }
        // The reply the ask would have had: the failure's message names it (SPEC §13).
        let reply = if error.message.contains("RequestKillAllDrivers") {
            Reply::Message(D::KillAllDriversResponse(KillAllDriversResponse::new(
                EndpointRef::client("Master"),
                true,
                "Kill request for all drivers submitted".into(),
            )))
        } else if error.message.contains("DecommissionWorkersOnHosts") {
            Reply::Int(1)
        } else {
            Reply::Bool(true)
        };
        let mut out = Vec::new();
        match encode_envelope(&Envelope::Reply { id, reply }, Version::V2, &mut out) {
            Ok(()) => Act::Forward(Bytes::from(out)),
            Err(_) => Act::Forward(body),
        }
    }
}

/// `admin-proof-dropped`.
pub(super) struct AdminProofDropped;

impl Behaviour for AdminProofDropped {
    fn suite_sent(&self, body: Bytes, _: &StdMutex<State>) -> Act {
        match decode_proof(&body) {
            Ok(mut p) if p.admin.is_some() => {
                p.admin = None;
                let mut out = Vec::new();
                encode_proof(&p, &mut out);
                Act::Forward(Bytes::from(out))
            }
            _ => Act::Forward(body),
        }
    }
}

/// `settings-ignored`: nothing in the proxy; the suite starts the server without the limits and
/// the certificate the case chose.
pub(super) struct SettingsIgnored;

impl Behaviour for SettingsIgnored {
    fn ignores_settings(&self) -> bool {
        true
    }
}
