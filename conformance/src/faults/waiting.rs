//! The fault of SPEC §16 (why an application waits): a master that states a waiting reason no
//! table row gives, and keeps one while an executor of the application runs. The cases of
//! `cases/spec/s16.rs` check the sentences it breaks.

use std::sync::Mutex as StdMutex;

use bytes::Bytes;
use sparkwire::wire::{Envelope, Reply};

use super::{decoded, reencoded, Act, Behaviour, Decoded, State, D};

/// A reason that begins with none of SPEC §16's phrases.
pub(super) const UNLISTED: &str = "waiting for resources";

/// `waiting-reason-unlisted`: every active application of a `MasterStateResponse` reads
/// [`UNLISTED`].
pub(super) struct WaitingReasonUnlisted;

impl Behaviour for WaitingReasonUnlisted {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some(Decoded {
            version,
            envelope:
                Ok(Some(Envelope::Reply {
                    id,
                    reply: Reply::Message(D::MasterStateResponse(mut s)),
                })),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        for a in &mut s.active_apps {
            a.waiting_reason = Some(UNLISTED.to_string());
        }
        let env = Envelope::Reply {
            id,
            reply: Reply::Message(D::MasterStateResponse(s)),
        };
        reencoded(&env, version, body)
    }
}
