//! One event to and from its JSON object.

use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::TraceErrorKind;
use crate::messages::{CoarseMessage, DeployMessage, ErrorDescription, Family, Version, Versioned};
use crate::validate::event::{
    AnyEnvelope, Endpoint, EnvelopeRef, Event, EventBody, OutsideFrame, OutsideStatus, TaskPayloads,
};
use crate::wire::handshake::Role;
use crate::wire::{plain_from_json, value_from_json, CloseReason, Envelope, Reply};

fn endpoint_json(e: &Endpoint) -> Value {
    json!({"role": e.role.name(), "id": e.id})
}

fn message_json<F: Family>(m: &F, version: Version) -> Result<Value, serde_json::Error> {
    serde_json::to_value(Versioned(m, version))
}

fn reply_json<F: Family>(r: &Reply<F>, version: Version) -> Result<Value, serde_json::Error> {
    let value = match r {
        Reply::Bool(b) => json!(b),
        Reply::Int(i) => json!(i),
        Reply::Bytes(p) => serde_json::to_value(p)?,
        Reply::ThreadDump(t) => serde_json::to_value(t)?,
        Reply::LossReason(l) => serde_json::to_value(l)?,
        Reply::Message(m) => message_json(m, version)?,
    };
    let mut map = Map::new();
    map.insert(r.tag().to_string(), value);
    Ok(Value::Object(map))
}

/// The JSON form of an envelope as a trace line carries it (protocol/trace.md, "Envelope
/// events"): `event` (`send`, `ask`, `reply`, `failure` or `closing`) and the keys of that event
/// (`id`, `message`, `reply`, `error`, `reason`), fields by their wire names, laid out for
/// `version`. Without the line's `time`, `conn`, `from`, `to` and `version`.
///
/// ```
/// use sparkwire::messages::{deploy::KillDriver, DeployMessage, Version};
/// use sparkwire::validate::trace::envelope_to_json;
/// use sparkwire::wire::Envelope;
///
/// let kill = Envelope::Send(DeployMessage::from(KillDriver::new("driver-1".into())));
/// let json = envelope_to_json(&kill, Version::V2).unwrap();
/// assert_eq!(
///     json.to_string(),
///     r#"{"event":"send","message":{"KillDriver":{"driverId":"driver-1"}}}"#
/// );
/// ```
pub fn envelope_to_json<F: Family>(
    env: &Envelope<F>,
    version: Version,
) -> Result<Value, serde_json::Error> {
    let mut out = Map::new();
    envelope_fields(env, version, &mut out)?;
    Ok(Value::Object(out))
}

fn envelope_fields<F: Family>(
    env: &Envelope<F>,
    version: Version,
    out: &mut Map<String, Value>,
) -> Result<(), serde_json::Error> {
    match env {
        Envelope::Send(m) => {
            out.insert("event".into(), json!("send"));
            out.insert("message".into(), message_json(m, version)?);
        }
        Envelope::Ask { id, message } => {
            out.insert("event".into(), json!("ask"));
            out.insert("id".into(), json!(id));
            out.insert("message".into(), message_json(message, version)?);
        }
        Envelope::Reply { id, reply } => {
            out.insert("event".into(), json!("reply"));
            out.insert("id".into(), json!(id));
            out.insert("reply".into(), reply_json(reply, version)?);
        }
        Envelope::Failure { id, error } => {
            out.insert("event".into(), json!("failure"));
            out.insert("id".into(), json!(id));
            out.insert("error".into(), serde_json::to_value(error)?);
        }
        Envelope::Close(reason) => {
            out.insert("event".into(), json!("closing"));
            out.insert("reason".into(), serde_json::to_value(reason)?);
        }
    }
    Ok(())
}

/// The JSON object of one trace line.
pub fn event_to_json(e: &Event) -> Result<Value, serde_json::Error> {
    let mut out = Map::new();
    out.insert("time".into(), json!(e.time));
    out.insert("conn".into(), json!(e.conn));
    match &e.body {
        EventBody::Open {
            client,
            server,
            version,
            tasks,
        } => {
            out.insert("event".into(), json!("open"));
            out.insert("client".into(), endpoint_json(client));
            out.insert("server".into(), endpoint_json(server));
            out.insert("version".into(), json!(version.number()));
            // Absent means sparkwire's: traces of sparkwire's own connections stay as they were.
            if *tasks != TaskPayloads::Sparkwire {
                out.insert("tasks".into(), json!(tasks.as_str()));
            }
        }
        EventBody::Close => {
            out.insert("event".into(), json!("close"));
        }
        EventBody::Message {
            from,
            to,
            version,
            envelope,
        } => {
            let mut tail = Map::new();
            match envelope.as_ref() {
                EnvelopeRef::Deploy(env) => envelope_fields(env, *version, &mut tail)?,
                EnvelopeRef::Coarse(env) => envelope_fields(env, *version, &mut tail)?,
            }
            if let Some(kind) = tail.remove("event") {
                out.insert("event".into(), kind);
            }
            if let Some(id) = tail.remove("id") {
                out.insert("id".into(), id);
            }
            out.insert("from".into(), endpoint_json(from));
            out.insert("to".into(), endpoint_json(to));
            out.insert("version".into(), json!(version.number()));
            out.extend(tail);
        }
        EventBody::Outside { from, to, frame } => outside_fields(from, to, frame, &mut out),
    }
    Ok(Value::Object(out))
}

fn field<'a>(obj: &'a Map<String, Value>, name: &'static str) -> Result<&'a Value, TraceErrorKind> {
    obj.get(name).ok_or(TraceErrorKind::Missing(name))
}

fn invalid(field: &'static str, problem: impl Into<String>) -> TraceErrorKind {
    TraceErrorKind::Invalid {
        field,
        problem: problem.into(),
    }
}

fn u64_field(obj: &Map<String, Value>, name: &'static str) -> Result<u64, TraceErrorKind> {
    field(obj, name)?
        .as_u64()
        .ok_or_else(|| invalid(name, "expected a non-negative integer"))
}

fn endpoint(obj: &Map<String, Value>, name: &'static str) -> Result<Endpoint, TraceErrorKind> {
    let e = field(obj, name)?
        .as_object()
        .ok_or_else(|| invalid(name, "expected an object {\"role\", \"id\"}"))?;
    let role = e
        .get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(name, "expected a \"role\" string"))?;
    let role =
        Role::from_name(role).ok_or_else(|| invalid(name, format!("unknown role {role:?}")))?;
    let id = e
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(name, "expected an \"id\" string"))?;
    Ok(Endpoint::new(role, id))
}

fn version(obj: &Map<String, Value>) -> Result<Version, TraceErrorKind> {
    let n = u64_field(obj, "version")?;
    Version::from_number(n)
        .ok_or_else(|| invalid("version", format!("unknown protocol version {n}")))
}

/// An open event's `tasks`: absent (or null) means sparkwire's.
fn tasks(obj: &Map<String, Value>) -> Result<TaskPayloads, TraceErrorKind> {
    let name = match obj.get("tasks") {
        None | Some(Value::Null) => return Ok(TaskPayloads::Sparkwire),
        Some(Value::String(s)) => s,
        Some(_) => return Err(invalid("tasks", "expected a string")),
    };
    TaskPayloads::from_name(name).ok_or_else(|| {
        invalid(
            "tasks",
            format!("unknown task payloads {name:?}; expected spark or sparkwire"),
        )
    })
}

fn plain<T: DeserializeOwned>(value: &Value, what: &'static str) -> Result<T, TraceErrorKind> {
    plain_from_json(value).map_err(|e| invalid(what, e.to_string()))
}

fn reply_from<F: Family>(value: &Value, version: Version) -> Result<Reply<F>, TraceErrorKind> {
    let obj = value
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or_else(|| invalid("reply", "expected an object with exactly one key"))?;
    let Some((tag, v)) = obj.iter().next() else {
        return Err(invalid("reply", "expected an object with exactly one key"));
    };
    Ok(match tag.as_str() {
        "bool" => Reply::Bool(v.as_bool().ok_or_else(|| invalid("reply", "bool: expected true or false"))?),
        "int" => Reply::Int(plain(v, "reply")?),
        "bytes" => Reply::Bytes(plain(v, "reply")?),
        "threadDump" => Reply::ThreadDump(plain(v, "reply")?),
        "lossReason" => Reply::LossReason(plain(v, "reply")?),
        "message" => Reply::Message(value_from_json(v, version)?),
        other => {
            return Err(invalid(
                "reply",
                format!("unknown reply kind {other:?}; expected bool, int, bytes, threadDump, lossReason or message"),
            ))
        }
    })
}

fn envelope_from<F: Family>(
    obj: &Map<String, Value>,
    kind: &str,
    version: Version,
) -> Result<Envelope<F>, TraceErrorKind> {
    let message =
        || -> Result<F, TraceErrorKind> { Ok(value_from_json(field(obj, "message")?, version)?) };
    Ok(match kind {
        "send" => Envelope::Send(message()?),
        "ask" => Envelope::Ask {
            id: u64_field(obj, "id")?,
            message: message()?,
        },
        "reply" => Envelope::Reply {
            id: u64_field(obj, "id")?,
            reply: reply_from(field(obj, "reply")?, version)?,
        },
        "closing" => Envelope::Close(plain::<CloseReason>(field(obj, "reason")?, "reason")?),
        _ => Envelope::Failure {
            id: u64_field(obj, "id")?,
            error: plain::<ErrorDescription>(field(obj, "error")?, "error")?,
        },
    })
}

/// Reads one event from its JSON object.
pub fn event_from_json(value: &Value) -> Result<Event, TraceErrorKind> {
    let obj = value
        .as_object()
        .ok_or_else(|| invalid("event", "a trace line is a JSON object"))?;
    let time = u64_field(obj, "time")?;
    let conn = u64_field(obj, "conn")?;
    let kind = field(obj, "event")?
        .as_str()
        .ok_or_else(|| invalid("event", "expected a string"))?;
    let body = match kind {
        "open" => EventBody::Open {
            client: endpoint(obj, "client")?,
            server: endpoint(obj, "server")?,
            version: version(obj)?,
            tasks: tasks(obj)?,
        },
        "close" => EventBody::Close,
        "send" | "ask" | "reply" | "failure" | "closing" => {
            let from = endpoint(obj, "from")?;
            let to = endpoint(obj, "to")?;
            let version = version(obj)?;
            let envelope = if from.role.family() == DeployMessage::FAMILY {
                AnyEnvelope::Deploy(envelope_from(obj, kind, version)?)
            } else {
                AnyEnvelope::Coarse(envelope_from::<CoarseMessage>(obj, kind, version)?)
            };
            EventBody::Message {
                from,
                to,
                version,
                envelope,
            }
        }
        "outside" => outside_from(obj)?,
        other => {
            return Err(invalid(
                "event",
                format!(
                    "unknown event {other:?}; expected open, close, send, ask, reply, failure or outside"
                ),
            ))
        }
    };
    Ok(Event { time, conn, body })
}

// --- Traffic outside the catalogue (protocol/trace.md) ---

fn outside_fields(from: &Endpoint, to: &Endpoint, f: &OutsideFrame, out: &mut Map<String, Value>) {
    out.insert("event".into(), json!("outside"));
    if let Some(id) = f.id {
        out.insert("id".into(), json!(id));
    }
    out.insert("from".into(), endpoint_json(from));
    out.insert("to".into(), endpoint_json(to));
    out.insert("transport".into(), json!(f.transport));
    if let Some(e) = &f.endpoint {
        out.insert("endpoint".into(), json!(e));
    }
    if let Some(c) = &f.class {
        out.insert("class".into(), json!(c));
    }
    out.insert("status".into(), json!(f.status.as_str()));
    if let Some(d) = &f.detail {
        out.insert("detail".into(), json!(d));
    }
    out.insert("bytes".into(), json!(f.bytes));
}

fn opt_str(obj: &Map<String, Value>, name: &'static str) -> Result<Option<String>, TraceErrorKind> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(name, "expected a string")),
    }
}

fn outside_from(obj: &Map<String, Value>) -> Result<EventBody, TraceErrorKind> {
    let status = field(obj, "status")?
        .as_str()
        .ok_or_else(|| invalid("status", "expected a string"))?;
    let status = OutsideStatus::from_name(status).ok_or_else(|| {
        invalid(
            "status",
            format!("unknown status {status:?}; expected outside, unknown or undecoded"),
        )
    })?;
    let transport = field(obj, "transport")?
        .as_str()
        .ok_or_else(|| invalid("transport", "expected a string"))?
        .to_string();
    let id = match obj.get("id") {
        None | Some(Value::Null) => None,
        Some(_) => Some(u64_field(obj, "id")?),
    };
    Ok(EventBody::Outside {
        from: endpoint(obj, "from")?,
        to: endpoint(obj, "to")?,
        frame: OutsideFrame {
            transport,
            id,
            endpoint: opt_str(obj, "endpoint")?,
            class: opt_str(obj, "class")?,
            status,
            detail: opt_str(obj, "detail")?,
            bytes: u64_field(obj, "bytes")?,
        },
    })
}

// --- end of traffic outside the catalogue ---

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closing_line_reads_back_as_the_close_envelope_it_was_written_from() {
        let line = json!({
            "time": 5, "conn": 2, "event": "closing",
            "from": {"role": "master", "id": "m"}, "to": {"role": "app-client", "id": "a"},
            "version": 2,
            "reason": {"kind": "InvalidFields", "message": "bad", "path": "appDescription", "offset": 40}
        });
        let event = event_from_json(&line).expect("a closing line");
        let EventBody::Message {
            envelope: AnyEnvelope::Deploy(Envelope::Close(reason)),
            ..
        } = &event.body
        else {
            panic!("a close envelope: {event:?}");
        };
        assert_eq!(reason.path.as_deref(), Some("appDescription"));
        assert_eq!(event_to_json(&event).expect("json"), line);
        // `path` and `offset` may be left out.
        let short = json!({
            "time": 5, "conn": 2, "event": "closing",
            "from": {"role": "driver", "id": "d"}, "to": {"role": "executor", "id": "1"},
            "version": 2, "reason": {"kind": "Idle", "message": "quiet"}
        });
        assert!(event_from_json(&short).is_ok());
    }
}
