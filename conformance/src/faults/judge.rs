//! The faults only a case's judge catches (`crate::harness::env::Judge`): each breaks one rule of
//! protocol/rules.md (or one sentence of SPEC §6 and §14.1) that no case's own checks look at,
//! or one end-of-trace obligation (rules N1–N4), so that the self-test shows a case failing with
//! `✗ the frame above breaks the protocol: …` for it.

use bytes::Bytes;
use sparkwire::messages::{coarse, deploy, CoarseMessage, TaskState, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{decode_envelope, encode_envelope, Envelope};
use std::sync::Mutex as StdMutex;

use super::{decoded, frame_of, framed, lock, Act, Behaviour, Decoded, State, D};

/// What the judge's faults remember of one connection.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Whether the fault already added its frame on this connection.
    added: bool,
    /// Whether the suite's RegisterApplication on this connection named an application the
    /// `registration-unanswered` master ignores.
    ignored_registration: bool,
    /// The endpoint's frame the fault holds back, to pass on after the one it sent instead.
    held: Option<Bytes>,
}

/// The application name the suite's own flows register (`kit::master::app_desc`): the
/// `registration-unanswered` master answers it, and ignores any other.
const ANSWERED_NAME: &str = "sparkwire-conformance";

/// The description of the application the broken master reports: 1-core, 64 MiB executors of
/// the application the suite registers. The fault writes its own (a fault is the endpoint, not
/// the suite: it borrows nothing from the kit).
fn app_description() -> sparkwire::messages::ApplicationDescription {
    use sparkwire::messages::{ApplicationDescription, Command, ResourceProfile};
    let command = Command::new(
        "/bin/true".into(),
        vec![],
        Default::default(),
        vec![],
        vec![],
        vec![],
    );
    ApplicationDescription::new(
        ANSWERED_NAME.into(),
        command,
        String::new(),
        ResourceProfile::default_with(Some(1), 64),
        "conformance".into(),
    )
}

/// The connection's version, and marks it as the one where the fault adds its frame; `None` when
/// it did already (or the version is not known yet).
fn first_time(st: &StdMutex<State>) -> Option<Version> {
    let mut g = lock(st);
    if g.seen.judge.added {
        return None;
    }
    let v = g.version?;
    g.seen.judge.added = true;
    Some(v)
}

/// The endpoint's frame as a coarse envelope, with the connection's version.
fn coarse_of(body: &[u8], st: &StdMutex<State>) -> Option<(Version, Envelope<CoarseMessage>)> {
    let (version, role) = {
        let g = lock(st);
        (g.version?, g.seen.role)
    };
    if role.is_some_and(|r| r.family() != "coarse") {
        return None;
    }
    decode_envelope::<CoarseMessage>(&Bytes::copy_from_slice(body), version)
        .ok()
        .map(|e| (version, e))
}

/// The endpoint's frame as a deploy envelope.
fn deploy_of(body: &[u8], st: &StdMutex<State>) -> Option<(Version, Envelope<D>)> {
    match decoded(&Bytes::copy_from_slice(body), st)? {
        Decoded {
            version,
            envelope: Ok(Some(e)),
            ..
        } => Some((version, e)),
        _ => None,
    }
}

/// N1: the master tells an application of an executor it never launched.
pub(super) struct ExecutorAddedUnlaunched;

impl Behaviour for ExecutorAddedUnlaunched {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        let Some((v, Envelope::Send(D::ExecutorAdded(a)))) = deploy_of(body, st) else {
            return Vec::new();
        };
        if first_time(st).is_none() {
            return Vec::new();
        }
        let mut ghost = a.clone();
        ghost.id = a.id.saturating_add(1000);
        frame_of(&Envelope::Send(D::ExecutorAdded(ghost)), v).unwrap_or_default()
    }
}

/// N3: the master never answers a RegisterApplication whose application is not named
/// [`ANSWERED_NAME`].
pub(super) struct RegistrationUnanswered;

impl Behaviour for RegistrationUnanswered {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(D::RegisterApplication(r)))),
            ..
        }) = decoded(&body, st)
        {
            if r.app_description.name != ANSWERED_NAME {
                lock(st).seen.judge.ignored_registration = true;
            }
        }
        Act::Forward(body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens || !lock(st).seen.judge.ignored_registration {
            return Act::Forward(body);
        }
        match deploy_of(&body, st) {
            Some((_, Envelope::Send(D::RegisteredApplication(_)))) => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

/// N4: the worker never reports the state of an executor it was told to launch.
pub(super) struct ExecutorStateUnreported;

impl Behaviour for ExecutorStateUnreported {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, _: bool) -> Act {
        match deploy_of(&body, st) {
            Some((_, Envelope::Send(D::ExecutorStateChanged(_))))
            | Some((
                _,
                Envelope::Ask {
                    message: D::ExecutorStateChanged(_),
                    ..
                },
            )) => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

/// N2: the executor never sends a task's final StatusUpdate.
pub(super) struct FinalStatusDropped;

impl Behaviour for FinalStatusDropped {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, _: bool) -> Act {
        match coarse_of(&body, st) {
            Some((_, Envelope::Send(CoarseMessage::StatusUpdate(u)))) if u.state.is_finished() => {
                Act::Drop
            }
            _ => Act::Forward(body),
        }
    }
}

/// A1: the endpoint sends its first ask on a connection twice, with the same id, the first still
/// pending.
pub(super) struct AskIdReused;

impl Behaviour for AskIdReused {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        // An ask: [1, id, message].
        if !(body.len() >= 2 && body[0] == 0x93 && body[1] == 0x01) {
            return Vec::new();
        }
        match first_time(st) {
            Some(_) => framed(body),
            None => Vec::new(),
        }
    }
}

/// W6: the master sends a KillExecutor on a worker's connection before it registered the
/// worker: the proxy holds back the first RegisteredWorker on a connection, passes a KillExecutor
/// in its place, then the RegisteredWorker.
pub(super) struct CommandsUnregistered;

impl Behaviour for CommandsUnregistered {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some((v, Envelope::Send(D::RegisteredWorker(_)))) = deploy_of(&body, st) else {
            return Act::Forward(body);
        };
        if first_time(st).is_none() {
            return Act::Forward(body);
        }
        let kill =
            deploy::KillExecutor::new("master-unregistered".into(), "app-unregistered".into(), 0);
        let mut out = Vec::new();
        if encode_envelope(&Envelope::Send(D::KillExecutor(kill)), v, &mut out).is_err() {
            return Act::Forward(body);
        }
        lock(st).seen.judge.held = Some(body);
        Act::Forward(Bytes::from(out))
    }

    fn after_endpoint_frame(&self, _: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        match lock(st).seen.judge.held.take() {
            Some(held) => framed(&held),
            None => Vec::new(),
        }
    }
}

/// P2: the driver's application client names another application in what it sends after its
/// registration.
pub(super) struct AppIdWrong;

impl Behaviour for AppIdWrong {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, _: bool) -> Act {
        const WRONG: &str = "app-20250101000000-9999";
        let env = match deploy_of(&body, st) {
            Some((v, Envelope::Send(D::UnregisterApplication(mut u)))) => {
                u.app_id = WRONG.into();
                (v, Envelope::Send(D::UnregisterApplication(u)))
            }
            Some((
                v,
                Envelope::Ask {
                    id,
                    message: D::RequestExecutors(mut r),
                },
            )) => {
                r.app_id = WRONG.into();
                (
                    v,
                    Envelope::Ask {
                        id,
                        message: D::RequestExecutors(r),
                    },
                )
            }
            Some((
                v,
                Envelope::Ask {
                    id,
                    message: D::KillExecutors(mut k),
                },
            )) => {
                k.app_id = WRONG.into();
                (
                    v,
                    Envelope::Ask {
                        id,
                        message: D::KillExecutors(k),
                    },
                )
            }
            _ => return Act::Forward(body),
        };
        super::reencoded(&env.1, env.0, body)
    }
}

/// P4: the master launches an executor for an application its client unregistered: the proxy
/// remembers the last UnregisterApplication the suite sent, on any connection, and after the
/// next RegisteredWorker it adds a LaunchExecutor for that application.
pub(super) struct LaunchAfterUnregister {
    /// The application last unregistered, not yet launched.
    unregistered: StdMutex<Option<String>>,
}

/// The `launch-after-unregister` fault's behaviour.
pub(super) static LAUNCH_AFTER_UNREGISTER: LaunchAfterUnregister = LaunchAfterUnregister {
    unregistered: StdMutex::new(None),
};

impl LaunchAfterUnregister {
    fn last(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.unregistered.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Behaviour for LaunchAfterUnregister {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(D::UnregisterApplication(u)))),
            ..
        }) = decoded(&body, st)
        {
            *self.last() = Some(u.app_id.clone());
        }
        Act::Forward(body)
    }

    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        let Some((v, Envelope::Send(D::RegisteredWorker(r)))) = deploy_of(body, st) else {
            return Vec::new();
        };
        let Some(app) = self.last().take() else {
            return Vec::new();
        };
        let launch = deploy::LaunchExecutor::new(
            r.master_web_ui_url.clone(),
            app,
            0,
            0,
            app_description(),
            1,
            64,
            Default::default(),
        );
        frame_of(&Envelope::Send(D::LaunchExecutor(launch)), v).unwrap_or_default()
    }
}

/// P5: an application's end is told twice: a master repeats its first ApplicationRemoved on a
/// connection, a driver's application client its UnregisterApplication.
pub(super) struct AppEndTwice;

impl Behaviour for AppEndTwice {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        match deploy_of(body, st) {
            Some((_, Envelope::Send(D::ApplicationRemoved(_) | D::UnregisterApplication(_))))
                if first_time(st).is_some() =>
            {
                framed(body)
            }
            _ => Vec::new(),
        }
    }
}

/// P6: the master tells a worker an application finished as soon as it launches an executor of
/// it, while it runs.
pub(super) struct AppFinishedEarly;

impl Behaviour for AppFinishedEarly {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        let Some((v, Envelope::Send(D::LaunchExecutor(l)))) = deploy_of(body, st) else {
            return Vec::new();
        };
        if first_time(st).is_none() {
            return Vec::new();
        }
        let done = deploy::ApplicationFinished::new(l.app_id.clone());
        frame_of(&Envelope::Send(D::ApplicationFinished(done)), v).unwrap_or_default()
    }
}

/// X1: the executor says it launched before its driver accepted its RegisterExecutor.
pub(super) struct ExecutorTalksFirst;

impl Behaviour for ExecutorTalksFirst {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        let Some((
            v,
            Envelope::Ask {
                message: CoarseMessage::RegisterExecutor(r),
                ..
            },
        )) = coarse_of(body, st)
        else {
            return Vec::new();
        };
        if first_time(st).is_none() {
            return Vec::new();
        }
        let early = coarse::LaunchedExecutor::new(r.executor_id.clone());
        frame_of(&Envelope::Send(CoarseMessage::LaunchedExecutor(early)), v).unwrap_or_default()
    }
}

/// T2: the executor reports a task it was never given.
pub(super) struct UnknownTaskStatus;

impl Behaviour for UnknownTaskStatus {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        let Some((v, Envelope::Send(CoarseMessage::StatusUpdate(u)))) = coarse_of(body, st) else {
            return Vec::new();
        };
        if first_time(st).is_none() {
            return Vec::new();
        }
        let mut ghost = u.clone();
        ghost.task_id = u.task_id.saturating_add(1_000_000);
        ghost.state = TaskState::Running;
        frame_of(&Envelope::Send(CoarseMessage::StatusUpdate(ghost)), v).unwrap_or_default()
    }
}

/// The raw envelope `[0, {name: {}}]`: a one-way message with no fields, written by hand (the
/// crate's encoder writes neither a local message nor one of another version).
fn raw_send(name: &str) -> Vec<u8> {
    crate::harness::mp::arr(&[
        crate::harness::mp::u(0),
        crate::harness::mp::map(&[(name, crate::harness::mp::map(&[]))]),
    ])
}

/// Whether `body` is a one-way message (`[0, message]`).
fn is_send(body: &[u8]) -> bool {
    body.len() >= 2 && body[0] == 0x92 && body[1] == 0x00
}

/// SPEC §6: after its first one-way message on a connection, the master sends a local message
/// (WorkDirCleanup, a worker's own timer).
pub(super) struct LocalMessageSent;

impl Behaviour for LocalMessageSent {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        if !is_send(body) || first_time(st).is_none() {
            return Vec::new();
        }
        framed(&raw_send("WorkDirCleanup"))
    }
}

/// SPEC §14.1 (rule C4): after its first one-way message on a connection, the master sends it
/// again as an ask.
pub(super) struct WrongKind;

impl Behaviour for WrongKind {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        let Some((v, Envelope::Send(m))) = deploy_of(body, st) else {
            return Vec::new();
        };
        if first_time(st).is_none() {
            return Vec::new();
        }
        frame_of(
            &Envelope::Ask {
                id: 990_001,
                message: m,
            },
            v,
        )
        .unwrap_or_default()
    }
}

/// Rule C5: on a version 1 connection, after its first one-way message, the master sends
/// DecommissionWorker, a message of version 2.
pub(super) struct Version2OnV1;

impl Behaviour for Version2OnV1 {
    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        if !is_send(body) || lock(st).version != Some(Version::V1) || first_time(st).is_none() {
            return Vec::new();
        }
        framed(&raw_send("DecommissionWorker"))
    }
}
