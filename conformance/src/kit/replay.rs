//! Replaying every message of a family to an endpoint: which messages it takes from whom, and
//! how a refused one is answered (SPEC §11).

use crate::harness::env::Ctx;
use crate::harness::peer::{Conn, Event};
use crate::harness::verdict::{check, fail, Outcome};
use crate::kit::common::wait;
use crate::kit::server::close_envelope;
use sparkwire::definition::{Definition, MessageDef, MessageKind};
use sparkwire::messages::{from_hex, DeployMessage, Version};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::vectors::{decoder_vectors, envelope_vectors};
use sparkwire::wire::Envelope;

type D = DeployMessage;

/// One decision to replay: where it comes from, the frame, the error it must be refused with
/// (`None`: it must be taken), its version, and how the master can receive it.
#[derive(Clone)]
pub struct Replay {
    pub(crate) file: &'static str,
    pub(crate) name: String,
    pub(crate) frame: Vec<u8>,
    pub(crate) error: Option<String>,
    pub(crate) version: Version,
    pub(crate) how: How,
}

/// Who sends a replayed frame, so that its message is legal on its route (SPEC §14.1).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// The frame is refused before its message is looked at (MessagePack, nesting, trailing
    /// bytes, the envelope's shape, an unknown or local name): any role, here a UI.
    AnyRole,
    /// A worker connection that registered a worker first (Heartbeat, ExecutorStateChanged, …).
    RegisteredWorker,
    /// A fresh connection of this role, for a message that role sends first (RegisterWorker).
    Fresh(Role),
}

/// The errors a decoder reports before it reads a message name (SPEC §11.2, steps 1–3).
pub const BEFORE_NAME: [&str; 4] = [
    "InvalidMessagePack",
    "TooDeep",
    "TrailingBytes",
    "BadEnvelope",
];

/// The roles the suite plays towards a master.
pub const CLIENTS: [Role; 4] = [Role::Worker, Role::AppClient, Role::DriverClient, Role::Ui];

/// The envelope tag and message name of a frame's body, as far as they can be read.
pub fn tag_and_name(body: &[u8]) -> (Option<u64>, Option<String>) {
    let mut cur = body;
    let Ok(len) = rmp::decode::read_array_len(&mut cur) else {
        return (None, None);
    };
    let Ok(tag) = rmp::decode::read_int::<u64, _>(&mut cur) else {
        return (None, None);
    };
    if (tag == 1 && len != 3) || (tag == 0 && len != 2) {
        return (Some(tag), None);
    }
    if tag == 1 && rmp::decode::read_int::<u64, _>(&mut cur).is_err() {
        return (Some(tag), None);
    }
    if rmp::decode::read_map_len(&mut cur).ok() != Some(1) {
        return (Some(tag), None);
    }
    let mut buf = vec![0u8; 256];
    let name = rmp::decode::read_str(&mut cur, &mut buf)
        .ok()
        .map(str::to_string);
    (Some(tag), name)
}

fn message_of(family: &str, name: &str) -> Option<&'static MessageDef> {
    Definition::builtin()
        .messages
        .iter()
        .find(|m| m.family == family && m.name == name)
}

/// The endpoint a replay goes to: its family, its role's name in the definition, the roles the
/// suite plays towards it.
pub struct At {
    pub(crate) family: &'static str,
    pub(crate) role: &'static str,
    pub(crate) peers: &'static [Role],
}

/// A master: it takes the deploy family from the suite playing any of its clients.
pub const MASTER: At = At {
    family: "deploy",
    role: "master",
    peers: &CLIENTS,
};

/// A worker: it takes the deploy family from the suite playing its master.
pub const WORKER: At = At {
    family: "deploy",
    role: "worker",
    peers: &[Role::Master],
};

/// An executor: it takes the coarse family from the suite playing its driver.
pub const EXECUTOR: At = At {
    family: "coarse",
    role: "executor",
    peers: &[Role::Driver],
};

/// How the endpoint `at` receives the frame `body` of `family` that must be refused with
/// `error` (or taken), or `None` when no role the suite plays may send it there.
pub fn how_at(
    at: &At,
    family: &str,
    body: &[u8],
    error: Option<&str>,
    version: Version,
) -> Option<How> {
    if error.is_some_and(|e| BEFORE_NAME.contains(&e)) {
        return Some(How::AnyRole);
    }
    let (tag, name) = tag_and_name(body);
    let name = name?;
    let def = message_of(at.family, &name);
    if error == Some("UnknownMessage") {
        // Unknown in the vector's family; on the endpoint's connection it must be unknown too.
        return def.is_none().then_some(How::AnyRole);
    }
    if family != at.family {
        return None;
    }
    let def = def?;
    if def.kind == MessageKind::Local {
        return Some(How::AnyRole);
    }
    if !def.to.iter().any(|t| t == at.role) {
        return None;
    }
    let kind = if version == Version::V1 {
        def.kind_v1.unwrap_or(def.kind)
    } else {
        def.kind
    };
    // ExecutorStateChanged is taken both ways (SPEC §14.1).
    let kind_ok = match tag? {
        0 => kind == MessageKind::Send || def.name == "ExecutorStateChanged",
        1 => kind == MessageKind::Ask,
        _ => false,
    };
    if !kind_ok {
        return None;
    }
    let role = at
        .peers
        .iter()
        .copied()
        .find(|r| def.from.iter().any(|f| f == r.name()))?;
    Some(match (role, name.as_str()) {
        (Role::Worker, "RegisterWorker") => How::Fresh(Role::Worker),
        (Role::Worker, _) => How::RegisteredWorker,
        (r, _) => How::Fresh(r),
    })
}

/// A case id's last part for a vector name: lowercase words joined by `-`.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Every decision of the vectors the endpoint `at` can receive.
pub fn replays(at: &At) -> Vec<Replay> {
    let mut out = Vec::new();
    let def = Definition::builtin();
    if let Ok(vs) = decoder_vectors(def) {
        for v in vs {
            let Some(bytes) = from_hex(&v.frame_hex) else {
                continue;
            };
            let Some(version) = Version::from_number(u64::from(v.version)) else {
                continue;
            };
            let body = bytes.get(4..).unwrap_or_default();
            if let Some(how) = how_at(at, &v.family, body, v.error.as_deref(), version) {
                out.push(Replay {
                    file: "decoder",
                    name: v.name,
                    frame: bytes,
                    error: v.error,
                    version,
                    how,
                });
            }
        }
    }
    if let Ok(vs) = envelope_vectors() {
        for v in vs.into_iter().filter(|v| v.error.is_some()) {
            let Some(bytes) = from_hex(&v.frame_hex) else {
                continue;
            };
            let Some(version) = Version::from_number(u64::from(v.version)) else {
                continue;
            };
            let body = bytes.get(4..).unwrap_or_default();
            if let Some(how) = how_at(at, &v.family, body, v.error.as_deref(), version) {
                out.push(Replay {
                    file: "envelope",
                    name: v.name,
                    frame: bytes,
                    error: v.error,
                    version,
                    how,
                });
            }
        }
    }
    out
}

/// The close kinds that refuse a message for what it says, not for how it is encoded: a strict
/// master MAY close for them after a valid frame whose content breaks a rule (SPEC §8.1,
/// `RuleViolation`; §14).
pub const NOT_DECODING: [&str; 3] = ["RuleViolation", "NotOwner", "NotOnRoute"];

/// Reads for the quiet time; fails when the connection closes, unless its close envelope says
/// the message was refused for what it says (`NOT_DECODING`), not for its encoding.
pub async fn stays_open(ctx: &Ctx, c: &mut Conn, close_reason: bool) -> Outcome {
    let want = "the connection kept open (the frame is valid)";
    let end = tokio::time::Instant::now() + ctx.settings.quiet;
    let mut last = None;
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        match c.next(left).await {
            None => return Ok(()),
            Some(Event::Frame(body)) => last = Some(body),
            Some(Event::Closed(how)) => {
                let kind = last.as_ref().and_then(|b| {
                    match sparkwire::wire::decode_envelope::<D>(b, c.v()) {
                        Ok(Envelope::Close(reason)) => Some(reason.kind),
                        _ => None,
                    }
                });
                return match kind {
                    Some(k) if close_reason && NOT_DECODING.contains(&k.as_str()) => Ok(()),
                    Some(k) => Err(fail(want, format!("the connection closed ({k})"))),
                    None => Err(fail(want, format!("the connection closed ({how})"))),
                };
            }
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a prefix declaring {n} bytes")))
            }
        }
    }
}

/// Expects the connection closed for the decoding error `error` (SPEC §8: "On any decoding error
/// the receiver closes that connection only"). Where the handshake agreed on `closeReason`
/// (`agreed`), the close envelope must come and name `error` (SPEC §8.1: "the kind is the first
/// that applies, §11.2"). Where the suite cannot tell whether it was agreed (it accepted the
/// endpoint's hello itself), a close envelope that comes must name `error` all the same.
pub async fn refused_with(ctx: &Ctx, c: &mut Conn, error: &str, agreed: bool) -> Outcome {
    if agreed {
        let want = format!("a close envelope of kind {error}, then the close");
        let reason = close_envelope(ctx, c, &want).await?;
        return check(reason.kind == error, want, format!("{reason:?}"));
    }
    let want = format!("the connection closed ({error})");
    let deadline = tokio::time::Instant::now() + wait(ctx);
    let mut last = None;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match c.next_or_close(left).await {
            Some(Event::Frame(body)) => last = Some(body),
            Some(Event::TooLarge(n)) => {
                return Err(fail(want, format!("a prefix declaring {n} bytes")))
            }
            Some(Event::Closed(_)) => {
                let kind = last.as_ref().and_then(|b| {
                    match sparkwire::wire::decode_envelope::<D>(b, c.v()) {
                        Ok(Envelope::Close(reason)) => Some(reason.kind),
                        _ => None,
                    }
                });
                return match kind {
                    Some(k) if k != error => Err(fail(
                        format!("{want}, a close envelope naming {error}"),
                        format!("a close envelope of kind {k}"),
                    )),
                    _ => Ok(()),
                };
            }
            None => {
                return Err(fail(
                    want,
                    format!(
                        "the connection still open after {} ms",
                        wait(ctx).as_millis()
                    ),
                ))
            }
        }
    }
}
