//! The faults of what a worker launches and whom it obeys, and whom a driver or executor takes
//! a task's word from (SPEC §14.5, §14.2 Z5 and Z6, §7.1, §10): each breaks one sentence the
//! cases of `cases/spec/s14_5.rs` and `cases/spec/s10.rs` check.
//!
//! A proxy cannot make a worker run what it refuses, nor make it take a frame from a connection
//! it did not get it on: where the sentence is about what the endpoint does rather than what it
//! sends, the fault shows the suite what a worker that broke it would report (as
//! `finished-app-revived` shows a master's `true`), and says so.

use std::sync::Mutex as StdMutex;

use bytes::Bytes;
use sparkwire::messages::deploy::{ExecutorStateChanged, WorkerDecommissioning};
use sparkwire::messages::{
    CoarseMessage, DriverState, ExecutorState, TaskDescription, TaskState, Version,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{decode_envelope, decode_task, encode_envelope, encode_task, Envelope};

use super::{decoded, frame_of, framed, lock, reencoded, Act, Behaviour, Decoded, State, D};

type C = CoarseMessage;

/// What the launch faults remember of one connection.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// The executor id registered over the connection (the suite is an executor).
    own_executor: Option<String>,
    /// The worker id registered over the connection (the suite is the worker's master).
    worker_id: Option<String>,
    /// The worker's master, `host:port`, as the suite's RegisteredWorker named it.
    master: Option<String>,
    /// A DecommissionWorker came and is not answered yet.
    decommission_told: bool,
}

/// `body` as a coarse envelope, in the connection's version.
fn coarse(body: &Bytes, st: &StdMutex<State>) -> Option<(Version, Envelope<C>)> {
    let v = lock(st).version?;
    decode_envelope::<C>(body, v).ok().map(|e| (v, e))
}

/// `env` encoded in `version`, or `body` unchanged when it does not encode.
fn coarse_reencoded(env: &Envelope<C>, version: Version, body: Bytes) -> Act {
    let mut out = Vec::new();
    match encode_envelope(env, version, &mut out) {
        Ok(()) => Act::Forward(Bytes::from(out)),
        Err(_) => Act::Forward(body),
    }
}

/// `executor-refusal-hidden`: a worker's ExecutorStateChanged FAILED without an exit status (a
/// launch it refused) reaches the suite as RUNNING without a message, as from a worker that ran
/// the command.
pub(super) struct ExecutorRefusalHidden;

impl Behaviour for ExecutorRefusalHidden {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if endpoint_listens {
            return Act::Forward(body);
        }
        let Some(Decoded {
            version,
            envelope: Ok(Some(env)),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        let ran = |s: &ExecutorStateChanged| {
            (s.state == ExecutorState::Failed && s.exit_status.is_none()).then(|| {
                let mut s = s.clone();
                s.state = ExecutorState::Running;
                s.message = None;
                D::ExecutorStateChanged(s)
            })
        };
        let shown = match &env {
            Envelope::Send(D::ExecutorStateChanged(s)) => ran(s).map(Envelope::Send),
            Envelope::Ask {
                id,
                message: D::ExecutorStateChanged(s),
            } => ran(s).map(|message| Envelope::Ask { id: *id, message }),
            _ => None,
        };
        match shown {
            Some(e) => reencoded(&e, version, body),
            None => Act::Forward(body),
        }
    }
}

/// `driver-refusal-hidden`: a worker's DriverStateChanged ERROR (a launch it refused) reaches
/// the suite as RUNNING without an exception, as from a worker that ran the driver.
pub(super) struct DriverRefusalHidden;

impl Behaviour for DriverRefusalHidden {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if endpoint_listens {
            return Act::Forward(body);
        }
        match decoded(&body, st) {
            Some(Decoded {
                version,
                envelope: Ok(Some(Envelope::Send(D::DriverStateChanged(mut s)))),
                ..
            }) if s.state == DriverState::Error => {
                s.state = DriverState::Running;
                s.exception = None;
                reencoded(&Envelope::Send(D::DriverStateChanged(s)), version, body)
            }
            _ => Act::Forward(body),
        }
    }
}

/// The launches and kills a master-role peer the worker is not registered with sent it (SPEC
/// §14.2 Z5), by the worker's master (`host:port`) they named: what `foreign-master-obeyed` shows
/// on that master's connection. Shared by every connection of the process: the foreign
/// connection is not the one the report goes out on.
fn foreign_commands() -> &'static StdMutex<Vec<(String, ExecutorStateChanged)>> {
    static LIST: std::sync::OnceLock<StdMutex<Vec<(String, ExecutorStateChanged)>>> =
        std::sync::OnceLock::new();
    LIST.get_or_init(Default::default)
}

/// `host:port` of a master URL `scheme://host:port`.
fn master_of(url: &str) -> String {
    url.rsplit("://").next().unwrap_or(url).to_string()
}

/// `foreign-master-obeyed`: a worker takes LaunchExecutor and KillExecutor from any master-role
/// connection (SPEC §14.2 Z5). The proxy keeps such commands from the worker (which would refuse
/// them) and shows the suite, on the connection of the master they name, the ExecutorStateChanged
/// a worker that obeyed them sends: RUNNING for a launch, KILLED for a kill.
pub(super) struct ForeignMasterObeyed;

impl Behaviour for ForeignMasterObeyed {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if lock(st).client_role != Some(Role::Master) {
            return Act::Forward(body);
        }
        let report = match decoded(&body, st) {
            Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::LaunchExecutor(l)))),
                ..
            }) => Some((
                master_of(&l.master_url),
                ExecutorStateChanged::new(l.app_id, l.exec_id, ExecutorState::Running),
            )),
            Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::KillExecutor(k)))),
                ..
            }) => Some((
                master_of(&k.master_url),
                ExecutorStateChanged::new(k.app_id, k.exec_id, ExecutorState::Killed)
                    .with_exit_status(Some(143)),
            )),
            _ => None,
        };
        match report {
            Some(r) => {
                if let Ok(mut l) = foreign_commands().lock() {
                    l.push(r);
                }
                Act::Drop
            }
            None => Act::Forward(body),
        }
    }

    fn suite_sent_to_client(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(D::RegisteredWorker(r)))),
            ..
        }) = decoded(&body, st)
        {
            if let Some(a) = &r.master.address {
                lock(st).seen.launch.master = Some(format!("{}:{}", a.host, a.port));
            }
        }
        Act::Forward(body)
    }

    fn after_endpoint_frame(&self, _: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        let (master, version) = {
            let g = lock(st);
            (g.seen.launch.master.clone(), g.version)
        };
        let (Some(master), Some(version)) = (master, version) else {
            return Vec::new();
        };
        let mine: Vec<ExecutorStateChanged> = match foreign_commands().lock() {
            Ok(mut l) => {
                let (mine, rest) = l.drain(..).partition(|(m, _)| *m == master);
                *l = rest;
                mine.into_iter().map(|(_, s)| s).collect()
            }
            Err(_) => Vec::new(),
        };
        mine.into_iter()
            .flat_map(|s| {
                frame_of(&Envelope::Send(D::ExecutorStateChanged(s)), version).unwrap_or_default()
            })
            .collect()
    }
}

/// `decommission-answered`: a worker answers DecommissionWorker with WorkerDecommissioning
/// naming itself, the text SPEC §7.1 corrected: the proxy adds it after the worker's next frame.
pub(super) struct DecommissionAnswered;

impl Behaviour for DecommissionAnswered {
    fn suite_sent_to_client(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(D::DecommissionWorker(_)))),
            ..
        }) = decoded(&body, st)
        {
            lock(st).seen.launch.decommission_told = true;
        }
        Act::Forward(body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            if let Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::RegisterWorker(r)))),
                ..
            }) = decoded(&body, st)
            {
                lock(st).seen.launch.worker_id = Some(r.id);
            }
        }
        Act::Forward(body)
    }

    fn after_endpoint_frame(&self, _: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        let mut g = lock(st);
        let (Some(id), Some(version), true) = (
            g.seen.launch.worker_id.clone(),
            g.version,
            g.seen.launch.decommission_told,
        ) else {
            return Vec::new();
        };
        g.seen.launch.decommission_told = false;
        drop(g);
        let answer =
            WorkerDecommissioning::new(id, sparkwire::messages::EndpointRef::client("Worker"));
        frame_of(&Envelope::Send(D::WorkerDecommissioning(answer)), version).unwrap_or_default()
    }
}

/// `task-updates-loose`: an executor's StatusUpdate LAUNCHING or RUNNING carries bytes (SPEC
/// §10: empty `bin`), and its final StatusUpdate of a task goes twice (SPEC §10: exactly one of
/// FINISHED, FAILED or KILLED): the proxy puts a byte in the first and repeats the second.
pub(super) struct TaskUpdatesLoose;

impl Behaviour for TaskUpdatesLoose {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if endpoint_listens {
            return Act::Forward(body);
        }
        match coarse(&body, st) {
            Some((version, Envelope::Send(C::StatusUpdate(mut s))))
                if matches!(s.state, TaskState::Running | TaskState::Launching) =>
            {
                s.data = vec![0u8].into();
                coarse_reencoded(&Envelope::Send(C::StatusUpdate(s)), version, body)
            }
            _ => Act::Forward(body),
        }
    }

    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, st: &StdMutex<State>) -> Vec<u8> {
        match coarse(&Bytes::copy_from_slice(body), st) {
            Some((_, Envelope::Send(C::StatusUpdate(s)))) if s.state.is_finished() => framed(body),
            _ => Vec::new(),
        }
    }
}

/// `executor-ownership-unchecked`: a driver takes an executor's word for any executor (SPEC
/// §14.2 Z6): the proxy rewrites the executor id of each StatusUpdate, LaunchedExecutor and
/// ExecutorDecommissioning to the one registered over that connection.
pub(super) struct ExecutorOwnershipUnchecked;

impl Behaviour for ExecutorOwnershipUnchecked {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        let Some((version, env)) = coarse(&body, st) else {
            return Act::Forward(body);
        };
        let own = lock(st).seen.launch.own_executor.clone();
        let rewritten = match env {
            Envelope::Ask {
                message: C::RegisterExecutor(r),
                ..
            } => {
                lock(st).seen.launch.own_executor = Some(r.executor_id);
                return Act::Forward(body);
            }
            Envelope::Send(C::StatusUpdate(mut s)) => match own {
                Some(own) if s.executor_id != own => {
                    s.executor_id = own;
                    Envelope::Send(C::StatusUpdate(s))
                }
                _ => return Act::Forward(body),
            },
            Envelope::Send(C::LaunchedExecutor(mut l)) => match own {
                Some(own) if l.executor_id != own => {
                    l.executor_id = own;
                    Envelope::Send(C::LaunchedExecutor(l))
                }
                _ => return Act::Forward(body),
            },
            Envelope::Ask {
                id,
                message: C::ExecutorDecommissioning(mut d),
            } => match own {
                Some(own) if d.executor_id != own => {
                    d.executor_id = own;
                    Envelope::Ask {
                        id,
                        message: C::ExecutorDecommissioning(d),
                    }
                }
                _ => return Act::Forward(body),
            },
            _ => return Act::Forward(body),
        };
        coarse_reencoded(&rewritten, version, body)
    }
}

/// `task-named-otherwise`: a driver names its tasks otherwise than Spark (SPEC §10: `task 3.1 in
/// stage 0.0 (TID 7)`): the proxy renames each LaunchTask's task `TID n`.
pub(super) struct TaskNamedOtherwise;

impl Behaviour for TaskNamedOtherwise {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some((version, Envelope::Send(C::LaunchTask(l)))) = coarse(&body, st) else {
            return Act::Forward(body);
        };
        let Ok(mut t): Result<TaskDescription, _> =
            decode_task(&Bytes::copy_from_slice(l.data.as_slice()))
        else {
            return Act::Forward(body);
        };
        t.name = format!("TID {}", t.task_id);
        let Ok(data) = encode_task(&t) else {
            return Act::Forward(body);
        };
        let mut l = l;
        l.data = data.into();
        coarse_reencoded(&Envelope::Send(C::LaunchTask(l)), version, body)
    }
}

/// `master-dials-worker`: a master that dials a registering worker's advertised address (SPEC
/// §1: all traffic travels over the connection the worker opened): the proxy opens a connection
/// to it and says a master's hello there. Only for an address other than 127.0.0.1: the suite's
/// other workers advertise ports of 127.0.0.1 where nothing of theirs listens (and something
/// else on the host may), and spec/1/one-connection listens on 127.0.0.2.
pub(super) struct MasterDialsWorker;

impl Behaviour for MasterDialsWorker {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(D::RegisterWorker(r)))),
            ..
        }) = decoded(&body, st)
        {
            let at = r
                .host
                .parse::<std::net::IpAddr>()
                .ok()
                .filter(|ip| ip.is_loopback() && ip.to_string() != "127.0.0.1")
                .zip(u16::try_from(r.port).ok())
                .map(std::net::SocketAddr::from);
            if let Some(at) = at {
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    if let Ok(mut s) = tokio::net::TcpStream::connect(at).await {
                        let hello = sparkwire::wire::handshake::Hello::new(
                            &[Version::V2],
                            Role::Master,
                            "proxy",
                        );
                        let _ = s.write_all(&super::hello_bytes(&hello)).await;
                        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                    }
                });
            }
        }
        Act::Forward(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_master_url_keys_its_host_and_port() {
        assert_eq!(master_of("sparkwire://127.0.0.1:7077"), "127.0.0.1:7077");
        assert_eq!(master_of("spark://10.0.0.1:1"), "10.0.0.1:1");
    }
}
