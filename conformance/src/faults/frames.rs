//! The frame-level faults of the master target (the suite connects): frames after the handshake
//! taken that should not be, ownership unchecked, secrets not redacted, SPARK-13604, a worker not
//! told to reconnect, an application revived.

use std::sync::Mutex as StdMutex;

use bytes::Bytes;
use sparkwire::wire::{decode_envelope, error_kind, Envelope, Error, Reply};

use super::behaviour::{decoded, lock, reencoded, Act, Behaviour, Decoded};
use super::proxy::State;
use super::D;

pub(super) struct DeepTaken;

impl Behaviour for DeepTaken {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        match decoded(&body, st).map(|d| d.envelope) {
            Some(Err(Error::TooDeep { .. })) => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

pub(super) struct DepthOffByOne;

impl Behaviour for DepthOffByOne {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if decoded(&body, st).is_none_or(|d| d.envelope.is_err()) {
            return Act::Forward(body);
        }
        // 64 levels exactly: one more array around it is too deep.
        let mut wrapped = vec![0x91];
        wrapped.extend_from_slice(&body);
        match sparkwire::wire::msgpack::value_len(&wrapped) {
            Err(Error::TooDeep { .. }) => Act::Close,
            _ => Act::Forward(body),
        }
    }
}

/// `wrong-type-taken` (`order: false`) and `unordered-taken` (`order: true`).
pub(super) struct InvalidFieldsTaken {
    pub(super) order: bool,
}

impl Behaviour for InvalidFieldsTaken {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        match decoded(&body, st).map(|d| d.envelope) {
            Some(Err(e)) if error_kind(&e) == "InvalidFields" => {
                let order = e.to_string().contains("distinct and ascending");
                if order == self.order {
                    Act::Drop
                } else {
                    Act::Forward(body)
                }
            }
            _ => Act::Forward(body),
        }
    }
}

pub(super) struct OwnershipUnchecked;

impl Behaviour for OwnershipUnchecked {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        let Some(Decoded {
            version,
            envelope: Ok(Some(env)),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        let mut g = lock(st);
        let (w, a) = (g.seen.own_worker.clone(), g.seen.own_app.clone());
        let rewritten = match env {
            Envelope::Send(D::RegisterWorker(r)) => {
                g.seen.own_worker = Some(r.id.clone());
                return Act::Forward(body);
            }
            Envelope::Send(D::Heartbeat(mut h)) if w.is_some() => {
                h.worker_id = w.unwrap_or_default();
                Envelope::Send(D::Heartbeat(h))
            }
            Envelope::Send(D::WorkerLatestState(mut l)) if w.is_some() => {
                l.id = w.unwrap_or_default();
                Envelope::Send(D::WorkerLatestState(l))
            }
            Envelope::Send(D::WorkerDecommissioning(mut d)) if w.is_some() => {
                d.id = w.unwrap_or_default();
                Envelope::Send(D::WorkerDecommissioning(d))
            }
            Envelope::Send(D::WorkerSchedulerStateResponse(mut r)) if w.is_some() => {
                r.id = w.unwrap_or_default();
                Envelope::Send(D::WorkerSchedulerStateResponse(r))
            }
            Envelope::Send(D::UnregisterApplication(mut u)) if a.is_some() => {
                u.app_id = a.unwrap_or_default();
                Envelope::Send(D::UnregisterApplication(u))
            }
            Envelope::Ask {
                id,
                message: D::RequestExecutors(mut r),
            } if a.is_some() => {
                r.app_id = a.unwrap_or_default();
                Envelope::Ask {
                    id,
                    message: D::RequestExecutors(r),
                }
            }
            Envelope::Ask {
                id,
                message: D::KillExecutors(mut k),
            } if a.is_some() => {
                k.app_id = a.unwrap_or_default();
                Envelope::Ask {
                    id,
                    message: D::KillExecutors(k),
                }
            }
            _ => return Act::Forward(body),
        };
        drop(g);
        reencoded(&rewritten, version, body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if endpoint_listens {
            if let Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::RegisteredApplication(r)))),
                ..
            }) = decoded(&body, st)
            {
                lock(st).seen.own_app = Some(r.app_id.clone());
            }
        }
        Act::Forward(body)
    }
}

/// The values the suite registered, by their redacted form: what `no-redaction` puts back (all
/// connections of the process share it: the UI that reads is not the client that registered).
pub(super) fn unredacted() -> &'static StdMutex<std::collections::BTreeMap<String, String>> {
    static MAP: std::sync::OnceLock<StdMutex<std::collections::BTreeMap<String, String>>> =
        std::sync::OnceLock::new();
    MAP.get_or_init(Default::default)
}

pub(super) const REDACTED: &str = "*********(redacted)";

pub(super) struct NoRedaction;

impl Behaviour for NoRedaction {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(D::RegisterApplication(r)))),
            ..
        }) = decoded(&body, st)
        {
            let cmd = &r.app_description.command;
            if let Ok(mut m) = unredacted().lock() {
                for (k, v) in &cmd.environment {
                    m.insert(format!("env {k}"), v.clone());
                }
                for o in cmd.java_opts.iter().chain(&cmd.arguments) {
                    if let Some((k, _)) = o.split_once('=') {
                        m.insert(format!("{k}={REDACTED}"), o.clone());
                    }
                }
            }
        }
        Act::Forward(body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some(Decoded {
            version,
            envelope:
                Ok(Some(Envelope::Reply {
                    id,
                    reply: sparkwire::wire::Reply::Message(D::MasterStateResponse(mut s)),
                })),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        let Ok(m) = unredacted().lock().map(|m| m.clone()) else {
            return Act::Forward(body);
        };
        for a in s.active_apps.iter_mut().chain(s.completed_apps.iter_mut()) {
            let cmd = &mut a.desc.command;
            for (k, v) in cmd.environment.iter_mut() {
                if let Some(orig) = m.get(&format!("env {k}")) {
                    v.clone_from(orig);
                }
            }
            for o in cmd.java_opts.iter_mut().chain(cmd.arguments.iter_mut()) {
                if let Some(orig) = m.get(o.as_str()) {
                    o.clone_from(orig);
                }
            }
        }
        let env = Envelope::Reply {
            id,
            reply: sparkwire::wire::Reply::Message(D::MasterStateResponse(s)),
        };
        reencoded(&env, version, body)
    }
}

pub(super) struct No13604;

impl Behaviour for No13604 {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(m))),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        let mut g = lock(st);
        match m {
            D::LaunchExecutor(l) => {
                g.seen.launched_executors.insert((l.app_id, l.exec_id));
                Act::Forward(body)
            }
            D::LaunchDriver(l) => {
                g.seen.launched_drivers.insert(l.driver_id);
                Act::Forward(body)
            }
            D::KillExecutor(k)
                if !g
                    .seen
                    .launched_executors
                    .contains(&(k.app_id.clone(), k.exec_id)) =>
            {
                Act::Drop
            }
            D::KillDriver(k) if !g.seen.launched_drivers.contains(&k.driver_id) => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

pub(super) struct NoReconnect;

impl Behaviour for NoReconnect {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        match decoded(&body, st) {
            Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::ReconnectWorker(_)))),
                ..
            }) if endpoint_listens => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

pub(super) struct DecommissioningDropped;

impl Behaviour for DecommissioningDropped {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        match decoded(&body, st) {
            Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::WorkerDecommissioning(_)))),
                ..
            }) => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

pub(super) struct FinishedAppRevived;

impl Behaviour for FinishedAppRevived {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope:
                Ok(Some(Envelope::Ask {
                    id,
                    message: D::RequestExecutors(_) | D::KillExecutors(_),
                })),
            ..
        }) = decoded(&body, st)
        {
            lock(st).seen.executor_asks.insert(id);
        }
        Act::Forward(body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        match decoded(&body, st) {
            Some(Decoded {
                version,
                envelope:
                    Ok(Some(Envelope::Reply {
                        id,
                        reply: Reply::Bool(false),
                    })),
                ..
            }) if lock(st).seen.executor_asks.remove(&id) => reencoded(
                &Envelope::Reply {
                    id,
                    reply: Reply::Bool(true),
                },
                version,
                body,
            ),
            _ => Act::Forward(body),
        }
    }
}

pub(super) struct FailureWithoutMessage;

impl Behaviour for FailureWithoutMessage {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some(d) = decoded(&body, st) else {
            return Act::Forward(body);
        };
        // [3, id, {"className": …, "message": …}] → [3, id, {"className": …}], any family.
        let failure = if d.deploy {
            match d.envelope {
                Ok(Some(Envelope::Failure { id, error })) => Some((id, error.class_name)),
                _ => None,
            }
        } else {
            match decode_envelope::<sparkwire::messages::CoarseMessage>(&body, d.version) {
                Ok(Envelope::Failure { id, error }) => Some((id, error.class_name)),
                _ => None,
            }
        };
        match failure {
            Some((id, class)) => Act::Forward(Bytes::from(crate::harness::mp::arr(&[
                crate::harness::mp::u(3),
                crate::harness::mp::u(id),
                crate::harness::mp::map(&[("className", crate::harness::mp::s(&class))]),
            ]))),
            None => Act::Forward(body),
        }
    }
}
