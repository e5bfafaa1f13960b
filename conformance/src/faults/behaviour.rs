//! What a fault is to the proxy: a [`Behaviour`], whose hooks the proxy calls at each point of
//! a connection, and what a hook answers ([`HelloAct`] for a hello, [`Act`] for a frame); with the
//! helpers the frame-level faults share ([`decoded`], [`reencoded`], [`lock`]).

use std::sync::Mutex as StdMutex;

use bytes::Bytes;
use sparkwire::messages::Version;
use sparkwire::wire::handshake::{Accepted, Hello, RefusalReason, Role};
use sparkwire::wire::{decode_envelope, encode_envelope, Envelope, Error};

use super::auth::AuthBreak;
use super::proxy::State;
use super::D;

/// What the proxy does instead of a client's hello.
pub(super) enum HelloAct {
    /// Pass it on.
    Pass,
    /// Send these bytes (whole frames) upstream instead.
    Send(Vec<u8>),
    /// Accept the suite at once and say the proxy's own hello upstream ([`accept_any`]).
    AcceptAny,
    /// Refuse the suite for this reason and close both sides.
    Refuse(RefusalReason),
}

/// What a fault does at each point of a proxied connection. Every hook's default passes things
/// through unchanged; "the endpoint" is the endpoint under test, "the suite" the conformance
/// suite, whichever of them connects.
pub(super) trait Behaviour: Sync {
    /// The authentication the fault breaks, when the endpoint holds a secret: the proxy then
    /// stands in for the whole handshake ([`auth_fault`], [`client_auth_fault`]).
    fn auth(&self) -> Option<AuthBreak> {
        None
    }

    /// The endpoint's closes never reach the suite, and the proxy holds the suite's side open a
    /// while after both ends stopped.
    fn keeps_open(&self) -> bool {
        false
    }

    /// The endpoint's close of a connection whose client said it is `role` does not reach the
    /// suite (the suite's side stays open), when the suite connects.
    fn hides_close_of(&self, _role: Option<Role>) -> bool {
        false
    }

    /// A server the suite starts is started without the limits and the TLS settings its case
    /// chose.
    fn ignores_settings(&self) -> bool {
        false
    }

    /// The suite's hello, when the suite connects.
    fn suite_hello(&self, _hello: Result<&Hello, ()>, _body: &[u8], _reads: usize) -> HelloAct {
        HelloAct::Pass
    }

    /// A first frame from the suite over the pre-handshake limit: whether the endpoint accepts
    /// it anyway (as [`HelloAct::AcceptAny`]).
    fn accepts_oversized_hello(&self) -> bool {
        false
    }

    /// The endpoint's hello, when the endpoint connects: the bytes (whole frames) the suite
    /// gets instead, if any.
    fn endpoint_hello(&self, _hello: Hello, _body: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// The endpoint's acceptance, when the suite connects: the one the suite gets instead, if
    /// any.
    fn acceptance(&self, _a: &Accepted) -> Option<Accepted> {
        None
    }

    /// A frame from the suite to the endpoint after the handshake, when the suite connects.
    fn suite_sent(&self, body: Bytes, _st: &StdMutex<State>) -> Act {
        Act::Forward(body)
    }

    /// A frame from the endpoint to the suite after the handshake; `endpoint_listens` says
    /// whether the suite connected.
    fn endpoint_sent(&self, body: Bytes, _st: &StdMutex<State>, _endpoint_listens: bool) -> Act {
        Act::Forward(body)
    }

    /// A frame from the suite to the endpoint after the handshake, when the endpoint connects:
    /// by default what [`Behaviour::suite_sent`] does with it, whichever side connects.
    fn suite_sent_to_client(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        self.suite_sent(body, st)
    }

    /// The endpoint's refused answer to the suite's hello (`body`, its frame body), when the
    /// suite connects: the bytes (whole frames) the suite gets instead, if any.
    fn refusal(&self, _body: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// How long the suite's end of stream takes to reach the endpoint, when the suite connects
    /// as `role`.
    fn suite_end_delay(&self, _role: Option<Role>) -> Option<std::time::Duration> {
        None
    }

    /// How long the proxy holds each frame of the endpoint's (its handshake answer included)
    /// before it passes it on, when the suite connects.
    fn endpoint_delay(&self) -> Option<std::time::Duration> {
        None
    }

    /// What the suite gets (whole frames) when the endpoint's stream ends, before the close.
    fn endpoint_ends(&self, _st: &StdMutex<State>) -> Vec<u8> {
        Vec::new()
    }

    /// What the suite gets first (whole frames) on a connection the proxy accepted itself
    /// ([`HelloAct::AcceptAny`]) at `version`, the suite's hello declaring `client_role`.
    fn first_frames(&self, _client_role: Option<Role>, _version: Version) -> Vec<u8> {
        Vec::new()
    }

    /// What the suite gets after a frame of the endpoint's was passed on (whole frames), the
    /// endpoint's role being `role`.
    fn after_endpoint_frame(
        &self,
        _body: &[u8],
        _role: Option<Role>,
        _st: &StdMutex<State>,
    ) -> Vec<u8> {
        Vec::new()
    }
}

// ---- what the frame-level faults share ----

/// A frame after the handshake, decoded in the connection's version and family.
pub(super) struct Decoded {
    pub(super) version: Version,
    /// The connection is of the deploy family (its envelope is decoded as `D`).
    pub(super) deploy: bool,
    /// The deploy envelope (`None` for a coarse one), or why it does not decode.
    pub(super) envelope: Result<Option<Envelope<D>>, Error>,
}

/// `body` decoded, once the connection's version is known.
pub(super) fn decoded(body: &Bytes, st: &StdMutex<State>) -> Option<Decoded> {
    let (version, role) = {
        let g = lock(st);
        (g.version, g.seen.role)
    };
    let version = version?;
    let deploy = role.is_none_or(|r| r.family() == "deploy");
    let envelope = if deploy {
        decode_envelope::<D>(body, version).map(Some)
    } else {
        decode_envelope::<sparkwire::messages::CoarseMessage>(body, version).map(|_| None)
    };
    Some(Decoded {
        version,
        deploy,
        envelope,
    })
}

/// `env` encoded in `version`, or `body` unchanged when it does not encode.
pub(super) fn reencoded(env: &Envelope<D>, version: Version, body: Bytes) -> Act {
    let mut out = Vec::new();
    match encode_envelope(env, version, &mut out) {
        Ok(()) => Act::Forward(Bytes::from(out)),
        Err(_) => Act::Forward(body),
    }
}

pub(super) fn lock(st: &StdMutex<State>) -> std::sync::MutexGuard<'_, State> {
    st.lock().unwrap_or_else(|e| e.into_inner())
}

/// What to do with one frame.
pub(super) enum Act {
    Forward(Bytes),
    Drop,
    Close,
}
