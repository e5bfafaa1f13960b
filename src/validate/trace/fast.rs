//! Reading the common trace lines in one pass, straight from the line's bytes into an [`Event`],
//! without building a JSON tree first.
//!
//! [`event_from_line`] handles `open`, `close`, `send`, `ask`, `reply` and `failure` lines whose
//! keys come in the order writers emit them (`from` and `version` before `message` or `reply`),
//! each key once. Anything else, including every line that is wrong in any way, is left to the
//! full reader (`None`), which reads what this does not and names the error; so a line read here
//! is the event the full reader reads from it (the tests below check the two agree).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::messages::{CoarseMessage, DeployMessage, ErrorDescription, Family, Version};
use crate::validate::event::{AnyEnvelope, Endpoint, Event, EventBody, TaskPayloads};
use crate::wire::handshake::Role;
use crate::wire::{fields_from_readable, plain_from_readable};
use crate::wire::{Envelope, Reply};

/// The event of one trace line (already trimmed), or `None` when the full reader must read it.
pub(super) fn event_from_line(text: &[u8]) -> Option<Event> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let event = de.deserialize_map(LineVisitor).ok()?;
    de.end().ok()?;
    Some(event)
}

/// Why the fast path gave up; the full reader says what is wrong, if anything.
#[derive(Debug)]
struct GiveUp;

impl fmt::Display for GiveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to the full reader")
    }
}

fn give_up<E: de::Error>() -> E {
    E::custom(GiveUp)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Open,
    Close,
    Send,
    Ask,
    Reply,
    Failure,
}

impl Kind {
    fn from_name(name: &str) -> Option<Kind> {
        Some(match name {
            "open" => Kind::Open,
            "close" => Kind::Close,
            "send" => Kind::Send,
            "ask" => Kind::Ask,
            "reply" => Kind::Reply,
            "failure" => Kind::Failure,
            _ => return None,
        })
    }
}

/// A message, reply or error read before the envelope is put together.
enum Content {
    DeployMessage(DeployMessage),
    CoarseMessage(CoarseMessage),
    DeployReply(Reply<DeployMessage>),
    CoarseReply(Reply<CoarseMessage>),
    DeployError(ErrorDescription),
    CoarseError(ErrorDescription),
}

/// Sets `slot` once; a key met twice is left to the full reader.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(give_up());
    }
    *slot = Some(value);
    Ok(())
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace line")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut time = None;
        let mut conn = None;
        let mut kind = None;
        let mut id = None;
        let mut from: Option<Endpoint> = None;
        let mut to = None;
        let mut client = None;
        let mut server = None;
        let mut version: Option<Version> = None;
        let mut tasks = None;
        let mut content = None;
        let mut seen_message = false;
        let mut seen_reply = false;
        let mut seen_error = false;
        while let Some(key) = map.next_key::<&str>()? {
            match key {
                "time" => once(&mut time, map.next_value::<u64>()?)?,
                "conn" => once(&mut conn, map.next_value::<u64>()?)?,
                "event" => {
                    let name = map.next_value::<&str>()?;
                    once(&mut kind, Kind::from_name(name).ok_or_else(give_up)?)?;
                }
                "id" => once(&mut id, map.next_value::<u64>()?)?,
                "from" => once(&mut from, map.next_value_seed(EndpointSeed)?)?,
                "to" => once(&mut to, map.next_value_seed(EndpointSeed)?)?,
                "client" => once(&mut client, map.next_value_seed(EndpointSeed)?)?,
                "server" => once(&mut server, map.next_value_seed(EndpointSeed)?)?,
                "version" => {
                    let n = map.next_value::<u64>()?;
                    once(&mut version, Version::from_number(n).ok_or_else(give_up)?)?;
                }
                // An open's task payloads. Any other value is left to the full reader, which
                // refuses it on an open and ignores it elsewhere.
                "tasks" => {
                    let name = map.next_value::<&str>()?;
                    once(
                        &mut tasks,
                        TaskPayloads::from_name(name).ok_or_else(give_up)?,
                    )?;
                }
                "message" | "reply" | "error" => {
                    let seen = match key {
                        "message" => &mut seen_message,
                        "reply" => &mut seen_reply,
                        _ => &mut seen_error,
                    };
                    if std::mem::replace(seen, true) {
                        return Err(give_up());
                    }
                    let wanted = match (kind, key) {
                        (None, _) => return Err(give_up()),
                        (Some(Kind::Send | Kind::Ask), "message") => true,
                        (Some(Kind::Reply), "reply") => true,
                        (Some(Kind::Failure), "error") => true,
                        _ => false,
                    };
                    if !wanted {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                    let (Some(v), Some(sender)) = (version, from.as_ref()) else {
                        return Err(give_up());
                    };
                    let deploy = sender.role.family() == DeployMessage::FAMILY;
                    let read = match (key, deploy) {
                        ("message", true) => {
                            Content::DeployMessage(map.next_value_seed(MessageSeed::<
                                DeployMessage,
                            >::new(
                                v
                            ))?)
                        }
                        ("message", false) => {
                            Content::CoarseMessage(map.next_value_seed(MessageSeed::<
                                CoarseMessage,
                            >::new(
                                v
                            ))?)
                        }
                        ("reply", true) => Content::DeployReply(
                            map.next_value_seed(ReplySeed::<DeployMessage>::new(v))?,
                        ),
                        ("reply", false) => Content::CoarseReply(
                            map.next_value_seed(ReplySeed::<CoarseMessage>::new(v))?,
                        ),
                        (_, true) => {
                            Content::DeployError(map.next_value_seed(PlainSeed(PhantomData))?)
                        }
                        (_, false) => {
                            Content::CoarseError(map.next_value_seed(PlainSeed(PhantomData))?)
                        }
                    };
                    content = Some(read);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let (Some(time), Some(conn), Some(kind)) = (time, conn, kind) else {
            return Err(give_up());
        };
        let body = match kind {
            Kind::Close => EventBody::Close,
            Kind::Open => match (client, server, version) {
                (Some(client), Some(server), Some(version)) => EventBody::Open {
                    client,
                    server,
                    version,
                    tasks: tasks.unwrap_or_default(),
                },
                _ => return Err(give_up()),
            },
            _ => {
                let (Some(from), Some(to), Some(version), Some(content)) =
                    (from, to, version, content)
                else {
                    return Err(give_up());
                };
                let envelope = envelope(kind, id, content).ok_or_else(give_up)?;
                EventBody::Message {
                    from,
                    to,
                    version,
                    envelope,
                }
            }
        };
        Ok(Event { time, conn, body })
    }
}

fn envelope(kind: Kind, id: Option<u64>, content: Content) -> Option<AnyEnvelope> {
    Some(match (kind, content) {
        (Kind::Send, Content::DeployMessage(m)) => AnyEnvelope::Deploy(Envelope::Send(m)),
        (Kind::Send, Content::CoarseMessage(m)) => AnyEnvelope::Coarse(Envelope::Send(m)),
        (Kind::Ask, Content::DeployMessage(message)) => {
            AnyEnvelope::Deploy(Envelope::Ask { id: id?, message })
        }
        (Kind::Ask, Content::CoarseMessage(message)) => {
            AnyEnvelope::Coarse(Envelope::Ask { id: id?, message })
        }
        (Kind::Reply, Content::DeployReply(reply)) => {
            AnyEnvelope::Deploy(Envelope::Reply { id: id?, reply })
        }
        (Kind::Reply, Content::CoarseReply(reply)) => {
            AnyEnvelope::Coarse(Envelope::Reply { id: id?, reply })
        }
        (Kind::Failure, Content::DeployError(error)) => {
            AnyEnvelope::Deploy(Envelope::Failure { id: id?, error })
        }
        (Kind::Failure, Content::CoarseError(error)) => {
            AnyEnvelope::Coarse(Envelope::Failure { id: id?, error })
        }
        _ => return None,
    })
}

struct EndpointSeed;

impl<'de> DeserializeSeed<'de> for EndpointSeed {
    type Value = Endpoint;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Endpoint, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EndpointSeed {
    type Value = Endpoint;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an endpoint")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Endpoint, A::Error> {
        let mut role: Option<Role> = None;
        let mut id: Option<String> = None;
        while let Some(key) = map.next_key::<&str>()? {
            match key {
                "role" => {
                    let name = map.next_value::<&str>()?;
                    once(&mut role, Role::from_name(name).ok_or_else(give_up)?)?;
                }
                "id" => once(&mut id, map.next_value::<String>()?)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match (role, id) {
            (Some(role), Some(id)) => Ok(Endpoint { role, id }),
            _ => Err(give_up()),
        }
    }
}

/// `{Name: fields}` of family `F` in the layout of a version.
struct MessageSeed<F> {
    version: Version,
    family: PhantomData<F>,
}

impl<F> MessageSeed<F> {
    fn new(version: Version) -> Self {
        MessageSeed {
            version,
            family: PhantomData,
        }
    }
}

impl<'de, F: Family> DeserializeSeed<'de> for MessageSeed<F> {
    type Value = F;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<F, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: Family> Visitor<'de> for MessageSeed<F> {
    type Value = F;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message {Name: fields}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<F, A::Error> {
        let name = map.next_key::<&str>()?.ok_or_else(give_up)?;
        let message = map.next_value_seed(FieldsSeed::<F> {
            name,
            version: self.version,
            family: PhantomData,
        })?;
        if map.next_key::<IgnoredAny>()?.is_some() {
            return Err(give_up());
        }
        Ok(message)
    }
}

struct FieldsSeed<'n, F> {
    name: &'n str,
    version: Version,
    family: PhantomData<F>,
}

impl<'de, F: Family> DeserializeSeed<'de> for FieldsSeed<'_, F> {
    type Value = F;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<F, D::Error> {
        fields_from_readable::<F, D>(self.name, self.version, d).unwrap_or_else(|| Err(give_up()))
    }
}

/// A plain value (an error, a reply's bytes, thread dump or loss reason) under the strict layout.
struct PlainSeed<T>(PhantomData<T>);

impl<'de, T: de::Deserialize<'de>> DeserializeSeed<'de> for PlainSeed<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        plain_from_readable(d)
    }
}

/// A reply `{kind: value}` of family `F`.
struct ReplySeed<F> {
    version: Version,
    family: PhantomData<F>,
}

impl<F> ReplySeed<F> {
    fn new(version: Version) -> Self {
        ReplySeed {
            version,
            family: PhantomData,
        }
    }
}

impl<'de, F: Family> DeserializeSeed<'de> for ReplySeed<F> {
    type Value = Reply<F>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Reply<F>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: Family> Visitor<'de> for ReplySeed<F> {
    type Value = Reply<F>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a reply {kind: value}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Reply<F>, A::Error> {
        let tag = map.next_key::<&str>()?.ok_or_else(give_up)?;
        let reply = match tag {
            "bool" => Reply::Bool(map.next_value::<bool>()?),
            "int" => Reply::Int(map.next_value_seed(PlainSeed(PhantomData))?),
            "bytes" => Reply::Bytes(map.next_value_seed(PlainSeed(PhantomData))?),
            "threadDump" => Reply::ThreadDump(map.next_value_seed(PlainSeed(PhantomData))?),
            "lossReason" => Reply::LossReason(map.next_value_seed(PlainSeed(PhantomData))?),
            "message" => Reply::Message(map.next_value_seed(MessageSeed::<F>::new(self.version))?),
            _ => return Err(give_up()),
        };
        if map.next_key::<IgnoredAny>()?.is_some() {
            return Err(give_up());
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::trace::{event_from_json, to_text};
    use crate::validate::TaskPayloads;

    fn full(line: &str) -> Option<Event> {
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        event_from_json(&value).ok()
    }

    fn lines_of_the_traces() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/protocol/traces");
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).expect("protocol/traces") {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read_to_string(&path).expect("a trace");
                out.extend(
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(String::from),
                );
            }
        }
        out
    }

    /// Every event kind of the scenario builder, written by the trace writer.
    fn written_lines() -> Vec<String> {
        use crate::validate::scenario::{msg, Scenario};
        let mut s = Scenario::new();
        let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
        let app = s.app("app-1");
        s.launch_executor(&app, &w, 0, 2, 1024);
        let driver = Endpoint::new(Role::Driver, "app-1");
        let e = s.executor(&driver, "0", 2);
        s.down(&e, msg::launch_task(7, 1));
        s.up(
            &e,
            msg::status_update("0", 7, crate::messages::TaskState::Running, 1),
        );
        s.up(
            &e,
            msg::status_update("0", 7, crate::messages::TaskState::Finished, 1),
        );
        s.up(&w, msg::heartbeat("worker-1"));
        let spark = s.executor(&driver, "1", 2);
        s.set_tasks(&spark, TaskPayloads::Spark);
        s.down(&spark, msg::spark_launch_task(8, "1"));
        let text = to_text(&s.into_events()).expect("the scenario writes");
        text.lines().map(String::from).collect()
    }

    #[test]
    fn lines_as_writers_emit_them_read_in_one_pass_as_the_full_reader_reads_them() {
        let mut lines = written_lines();
        lines.extend(lines_of_the_traces());
        let mut fast = 0;
        for line in &lines {
            let want = full(line);
            match event_from_line(line.trim().as_bytes()) {
                Some(got) => {
                    assert_eq!(Some(&got), want.as_ref(), "{line}");
                    fast += 1;
                }
                // Only lines the full reader refuses, or does not see as messages written in
                // the writer's key order, are left to it.
                None => assert!(
                    want.is_none() || line.contains("\"outside\""),
                    "left to the full reader: {line}"
                ),
            }
        }
        assert!(
            fast >= written_lines().len(),
            "{fast} of {} lines",
            lines.len()
        );
    }

    #[test]
    fn unusual_lines_are_left_to_the_full_reader_or_read_alike() {
        let written = written_lines();
        let mut variants = Vec::new();
        for line in &written {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
            let obj = value.as_object().expect("an object");
            // Keys reversed: the message now precedes what says how to read it.
            let reversed: serde_json::Map<_, _> = obj
                .iter()
                .rev()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            variants.push(serde_json::Value::Object(reversed).to_string());
            // A key twice (the full reader keeps the last).
            variants.push(line.replacen("{\"time\":", "{\"time\":1,\"time\":", 1));
            // An unknown key, a wrong type, a truncated line, trailing text.
            variants.push(line.replacen("{", "{\"extra\":[1,{\"a\":null}],", 1));
            variants.push(line.replacen("\"conn\":", "\"conn\":-", 1));
            variants.push(line[..line.len() / 2].to_string());
            variants.push(format!("{line} x"));
            variants.push(line.replacen("\"version\":2", "\"version\":7", 1));
            variants.push(line.replacen("\"role\":\"", "\"role\":\"x", 1));
            // Task payloads: unknown, of the wrong type, twice, on an event that is no open.
            variants.push(line.replacen("\"spark\"", "\"scala\"", 1));
            variants.push(line.replacen("\"spark\"", "1", 1));
            variants.push(line.replacen("\"tasks\":", "\"tasks\":\"spark\",\"tasks\":", 1));
            variants.push(line.replacen("{", "{\"tasks\":\"sparkwire\",", 1));
        }
        for line in &variants {
            if let Some(got) = event_from_line(line.as_bytes()) {
                assert_eq!(Some(got), full(line), "{line}");
            }
        }
    }

    #[test]
    fn an_opens_task_payloads_are_read_in_one_pass_and_bad_ones_left_to_the_full_reader() {
        let open = written_lines()
            .into_iter()
            .find(|l| l.contains("\"tasks\":\"spark\""))
            .expect("the written lines mark a connection");
        let got = event_from_line(open.as_bytes()).expect("read in one pass");
        assert!(
            matches!(
                got.body,
                EventBody::Open {
                    tasks: TaskPayloads::Spark,
                    ..
                }
            ),
            "{got:?}"
        );
        let explicit = open.replace("\"spark\"", "\"sparkwire\"");
        let unmarked = open.replace(",\"tasks\":\"spark\"", "");
        assert_eq!(
            event_from_line(explicit.as_bytes()),
            event_from_line(unmarked.as_bytes())
        );
        let unknown = open.replace("\"spark\"", "\"scala\"");
        assert_eq!(event_from_line(unknown.as_bytes()), None);
        assert_eq!(full(&unknown), None, "the full reader refuses it");
    }
}
