//! Spark's own wire under the suite's connections (`--wire spark`, SPEC §15): the cases keep
//! writing and reading sparkwire envelopes, and a connection translates each one to and from
//! what a Spark process of the same release writes: Netty transport frames, NettyRpcEnv's
//! `RequestMessage` header, one Java serialization stream (`sparkwire::spark`'s door).
//!
//! | sparkwire envelope | Spark transport frame |
//! |---|---|
//! | send | `OneWayMessage`: header (sender, receiver, endpoint name) and the message's stream |
//! | ask `id` | `RpcRequest` with request id `id`: header and the message's stream |
//! | reply `id` (`bool`, `int`, a message) | `RpcResponse` with request id `id`: the reply's stream alone |
//! | failure `id` | `RpcFailure` with request id `id`: the error's text |
//!
//! A connection also answers what a Spark peer asks before it registers:
//! `RpcEndpointVerifier$CheckExistence(name)` to the endpoint `endpoint-verifier` gets `true` when
//! `name` is the endpoint the suite plays on it. Sparkwire's handshake, close envelopes and
//! bytes written by hand have no Spark form: a case that needs them is skipped.

use bytes::Bytes;
use sparkwire::messages::{
    CoarseMessage, DeployMessage, EndpointRef, ErrorDescription, Family, Version,
};
use sparkwire::spark::{
    bool_stream, check_existence_stream, classify, error_of, int_stream, message_stream,
    parse_stream, reply_value, Classified, Frame, FrameDecoder, Release, ReplyValue,
    RequestMessage, Typed,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{decode_envelope, encode_envelope, Envelope, Reply};

use crate::harness::verdict::Target;

/// The verifier's endpoint name and its ask's class, as the library's Spark-wire door has them.
pub use sparkwire::spark::{CHECK_EXISTENCE, VERIFIER};

/// The name a Spark endpoint of `target` is registered under (`Master`, `Worker`,
/// `CoarseGrainedScheduler` for a driver's scheduler backend, `Executor`).
pub fn endpoint_of(target: Target) -> &'static str {
    match target {
        Target::Master => "Master",
        Target::Worker => "Worker",
        Target::Driver => "CoarseGrainedScheduler",
        Target::Executor => "Executor",
    }
}

/// The endpoint the suite plays when it takes connections as `role`.
pub fn endpoint_played(role: Role) -> &'static str {
    match role {
        Role::Master => "Master",
        Role::Worker => "Worker",
        Role::Driver => "CoarseGrainedScheduler",
        Role::Executor => "Executor",
        _ => "AppClient",
    }
}

/// What a frame read from the endpoint became.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A sparkwire envelope of the connection's family (its body), for the cases to read.
    Envelope(Bytes),
    /// Something with no sparkwire envelope (a class sparkwire does not catalogue, a message of
    /// the other family, a reply that does not decode): an undecodable body, so that a case
    /// waiting for an answer fails saying what came; the text says what it was.
    Foreign(String),
    /// Nothing for the cases (stream and chunk frames); the text says what it was.
    Ignored(String),
}

/// One connection's Spark side: the release spoken, the addresses its headers carry, and the
/// frames read so far.
#[derive(Debug)]
pub struct SparkSide {
    release: &'static Release,
    decoder: FrameDecoder,
    /// The suite's RPC address, the sender of every request and one-way message; `None` (a
    /// client-mode RpcEnv, as an executor's) until the suite registers something that names its
    /// own endpoint reference, whose address it then is: Spark's master keys a registered worker
    /// or application by that address and finds it again by the sender of the connection that
    /// closes.
    local: Option<(String, i32)>,
    /// The address and endpoint name the suite's messages are for.
    peer: (Option<(String, i32)>, String),
    /// The endpoint the suite plays on this connection (CheckExistence is answered `true` for it).
    played: String,
    /// The names the endpoint asked CheckExistence of, in order.
    checked: Vec<String>,
    /// How many messages (requests and one-way) the endpoint sent, CheckExistence included.
    requests: usize,
}

impl SparkSide {
    /// A connection speaking Spark `release` (in its own forms: its class table), to `peer`
    /// (address, endpoint name), the suite playing the endpoint `played`.
    pub fn new(
        release: &'static Release,
        peer: (Option<(String, i32)>, String),
        played: &str,
    ) -> Self {
        SparkSide {
            release,
            decoder: FrameDecoder::default(),
            local: None,
            peer,
            played: played.to_string(),
            checked: Vec::new(),
            requests: 0,
        }
    }

    /// The suite, accepting a connection on `local`, plays an endpoint with that address.
    pub fn with_local(mut self, local: Option<(String, i32)>) -> Self {
        self.local = local;
        self
    }

    /// The protocol version the Spark release spoken maps to (SPEC §15.3).
    pub fn version(&self) -> Version {
        self.release.version()
    }

    /// The Spark release spoken.
    pub fn release(&self) -> &'static Release {
        self.release
    }

    /// The names the endpoint asked `CheckExistence` of on this connection, in order.
    pub fn checked(&self) -> &[String] {
        &self.checked
    }

    /// The endpoint's RPC address as its first request's header gave it (`None` for a
    /// client-mode RpcEnv, or before it sent anything), or the address dialled.
    pub fn peer_address(&self) -> Option<&(String, i32)> {
        self.peer.0.as_ref()
    }

    /// How many requests and one-way messages the endpoint sent (CheckExistence included).
    pub fn requests(&self) -> usize {
        self.requests
    }

    /// The `RpcRequest` of `CheckExistence(name)` with request id `id`, to the verifier.
    pub fn check_existence(&self, id: i64, name: &str) -> Result<Vec<u8>, String> {
        let stream = check_existence_stream(name, self.release).map_err(|e| e.to_string())?;
        let header = RequestMessage {
            sender: self.local.clone(),
            receiver: self.peer.0.clone(),
            endpoint: VERIFIER.into(),
            stream: stream.into(),
        };
        frame(Frame::RpcRequest {
            request_id: id,
            body: header.encode().map_err(|e| e.to_string())?.into(),
        })
    }

    /// A request or one-way message to `endpoint` whose body is `stream`, as bytes on the wire.
    pub fn raw_request(
        &self,
        id: Option<i64>,
        endpoint: &str,
        stream: Bytes,
    ) -> Result<Vec<u8>, String> {
        let header = RequestMessage {
            sender: self.local.clone(),
            receiver: self.peer.0.clone(),
            endpoint: endpoint.into(),
            stream,
        };
        let body: Bytes = header.encode().map_err(|e| e.to_string())?.into();
        frame(match id {
            Some(request_id) => Frame::RpcRequest { request_id, body },
            None => Frame::OneWay { body },
        })
    }

    /// The Spark frame of the sparkwire envelope `body` of `family`.
    pub fn outgoing(&mut self, family: &str, body: &[u8]) -> Result<Vec<u8>, String> {
        let version = self.version();
        match family {
            "coarse" => {
                let env = decode_envelope::<CoarseMessage>(&Bytes::copy_from_slice(body), version)
                    .map_err(|e| format!("bytes that are no envelope ({e})"))?;
                self.envelope_frame(env, Typed::Coarse)
            }
            _ => {
                let env = decode_envelope::<DeployMessage>(&Bytes::copy_from_slice(body), version)
                    .map_err(|e| format!("bytes that are no envelope ({e})"))?;
                if let Envelope::Send(m) | Envelope::Ask { message: m, .. } = &env {
                    self.note_own_ref(m);
                }
                self.envelope_frame(env, Typed::Deploy)
            }
        }
    }

    /// A message that names the suite's own endpoint reference makes its address the sender of
    /// everything after it.
    fn note_own_ref(&mut self, m: &DeployMessage) {
        let own: Option<&EndpointRef> = match m {
            DeployMessage::RegisterWorker(r) => Some(&r.worker),
            DeployMessage::RegisterApplication(r) => Some(&r.driver),
            _ => None,
        };
        if let Some(a) = own.and_then(|r| r.address.as_ref()) {
            self.local = Some((a.host.clone(), a.port));
        }
    }

    fn envelope_frame<F: Family>(
        &mut self,
        env: Envelope<F>,
        typed: fn(F) -> Typed,
    ) -> Result<Vec<u8>, String> {
        let spoken = self.release;
        let stream = |m: F| {
            message_stream(&typed(m), spoken, None)
                .map(Bytes::from)
                .map_err(|e| format!("a message Spark {} cannot hold ({e})", spoken.name()))
        };
        match env {
            Envelope::Send(m) => {
                let endpoint = self.peer.1.clone();
                self.raw_request(None, &endpoint, stream(m)?)
            }
            Envelope::Ask { id, message } => {
                let endpoint = self.peer.1.clone();
                self.raw_request(Some(request_id(id)?), &endpoint, stream(message)?)
            }
            Envelope::Reply { id, reply } => {
                let body = match reply {
                    Reply::Bool(b) => bool_stream(b, spoken).map_err(|e| e.to_string())?.into(),
                    Reply::Int(i) => int_stream(i, spoken).map_err(|e| e.to_string())?.into(),
                    Reply::Message(m) => stream(m)?,
                    other => return Err(format!("a reply of kind {}", other.tag())),
                };
                frame(Frame::RpcResponse {
                    request_id: request_id(id)?,
                    body,
                })
            }
            Envelope::Failure { id, error } => frame(Frame::RpcFailure {
                request_id: request_id(id)?,
                error: format!("{}: {}", error.class_name, error.message),
            }),
            Envelope::Close(_) => Err("a close envelope (SPEC §8.1: Spark has none)".into()),
        }
    }

    /// Takes bytes read from the endpoint; returns what each whole frame became, and the frames
    /// the suite answers at once (CheckExistence).
    pub fn incoming(&mut self, family: &str, bytes: &[u8]) -> (Vec<Incoming>, Vec<Vec<u8>>) {
        self.decoder.push(bytes);
        let mut out = Vec::new();
        let mut answers = Vec::new();
        while let Some(item) = self.decoder.next_item() {
            match item.frame {
                Ok(f) => out.push(self.frame_in(family, f, &mut answers)),
                Err(e) => out.push(Incoming::Foreign(format!("a broken Spark frame: {e}"))),
            }
        }
        (out, answers)
    }

    fn frame_in(&mut self, family: &str, f: Frame, answers: &mut Vec<Vec<u8>>) -> Incoming {
        let version = self.version();
        match f {
            Frame::OneWay { body } => self.request_in(family, None, &body, answers),
            Frame::RpcRequest { request_id, body } => {
                self.request_in(family, Some(request_id), &body, answers)
            }
            Frame::RpcResponse { request_id, body } => {
                let reply = match parse_stream(&body) {
                    Ok(g) => reply_value(g.root_node()).map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                let id = request_id as u64;
                match reply {
                    Ok(ReplyValue::Bool(b)) => plain_in(family, Form::Bool(id, b), version),
                    Ok(ReplyValue::Int(i)) => plain_in(family, Form::Int(id, i), version),
                    Ok(ReplyValue::Message(m)) => typed_in(family, m, version, Form::Reply(id)),
                    Ok(ReplyValue::Failure(error)) => {
                        plain_in(family, Form::Failure(id, error), version)
                    }
                    Ok(ReplyValue::Other(class)) => {
                        Incoming::Foreign(format!("RpcResponse {request_id}: a {class}"))
                    }
                    Err(e) => Incoming::Foreign(format!("RpcResponse {request_id}: {e}")),
                }
            }
            Frame::RpcFailure { request_id, error } => plain_in(
                family,
                Form::Failure(request_id as u64, error_of(&error)),
                version,
            ),
            other => Incoming::Ignored(format!("a {} frame", other.kind().as_str())),
        }
    }

    fn request_in(
        &mut self,
        family: &str,
        id: Option<i64>,
        body: &Bytes,
        answers: &mut Vec<Vec<u8>>,
    ) -> Incoming {
        self.requests += 1;
        let Some(header) = RequestMessage::parse(body) else {
            return Incoming::Foreign("a request whose RequestMessage header does not read".into());
        };
        if self.peer.0.is_none() {
            self.peer.0 = header.sender.clone();
        }
        let graph = match parse_stream(&header.stream) {
            Ok(g) => g,
            Err(e) => return Incoming::Foreign(format!("a Java stream that does not read: {e}")),
        };
        let root = graph.root_node();
        if root.class() == Some(CHECK_EXISTENCE) {
            let name = root
                .field("name")
                .and_then(|n| n.as_str().map(str::to_string))
                .unwrap_or_default();
            let exists = name == self.played;
            self.checked.push(name.clone());
            if let Some(request_id) = id {
                let answer = bool_stream(exists, self.release)
                    .map_err(|e| e.to_string())
                    .and_then(|s| {
                        frame(Frame::RpcResponse {
                            request_id,
                            body: s.into(),
                        })
                    });
                if let Ok(a) = answer {
                    answers.push(a);
                }
            }
            return Incoming::Ignored(format!(
                "CheckExistence({name}) to {}, answered {exists}",
                header.endpoint
            ));
        }
        let version = self.version();
        match classify(root) {
            Classified::Message(m) => {
                if let (Typed::Deploy(DeployMessage::RegisterWorker(r)), None) = (&m, id) {
                    self.peer.1 = r.worker.name.clone();
                }
                let form = match id {
                    Some(id) => Form::Ask(id as u64),
                    None => Form::Send,
                };
                typed_in(family, m, version, form)
            }
            Classified::Outside(c) | Classified::Unknown(c) => {
                Incoming::Foreign(format!("a {c} to {}", header.endpoint))
            }
            Classified::Failed(c, e) => Incoming::Foreign(format!("a {c} that does not map: {e}")),
        }
    }
}

/// A sparkwire ask id as Spark's signed request id: ids past `i64::MAX` have none.
fn request_id(id: u64) -> Result<i64, String> {
    i64::try_from(id).map_err(|_| format!("ask id {id}: Spark's request ids are signed 64-bit"))
}

fn frame(f: Frame) -> Result<Vec<u8>, String> {
    f.encode().map_err(|e| e.to_string())
}

/// The forms of envelope an incoming frame becomes.
#[derive(Debug, Clone)]
enum Form {
    Send,
    Ask(u64),
    Reply(u64),
    Bool(u64, bool),
    Int(u64, i32),
    Failure(u64, ErrorDescription),
}

fn envelope<F: Family>(form: Form, m: Option<F>) -> Result<Envelope<F>, String> {
    Ok(match (form, m) {
        (Form::Send, Some(m)) => Envelope::Send(m),
        (Form::Ask(id), Some(message)) => Envelope::Ask { id, message },
        (Form::Reply(id), Some(m)) => Envelope::Reply {
            id,
            reply: Reply::Message(m),
        },
        (Form::Bool(id, b), _) => Envelope::Reply {
            id,
            reply: Reply::Bool(b),
        },
        (Form::Int(id, i), _) => Envelope::Reply {
            id,
            reply: Reply::Int(i),
        },
        (Form::Failure(id, error), _) => Envelope::Failure { id, error },
        (form, None) => return Err(format!("{form:?} without its message")),
    })
}

fn written<F: Family>(env: Result<Envelope<F>, String>, version: Version) -> Incoming {
    let mut body = Vec::new();
    match env.and_then(|e| encode_envelope(&e, version, &mut body).map_err(|e| e.to_string())) {
        Ok(()) => Incoming::Envelope(body.into()),
        Err(e) => Incoming::Foreign(format!("an envelope sparkwire cannot write: {e}")),
    }
}

/// An envelope without a message (a bool or int reply, a failure) as a body of `family`.
fn plain_in(family: &str, form: Form, version: Version) -> Incoming {
    if family == "coarse" {
        written(envelope::<CoarseMessage>(form, None), version)
    } else {
        written(envelope::<DeployMessage>(form, None), version)
    }
}

/// A typed message in an envelope of `form`, as a body of the connection's `family`.
fn typed_in(family: &str, m: Typed, version: Version, form: Form) -> Incoming {
    match (family, m) {
        ("coarse", Typed::Coarse(c)) => written(envelope(form, Some(c)), version),
        ("coarse", Typed::Deploy(d)) => Incoming::Foreign(format!(
            "{}, of the deploy family, on a coarse connection",
            d.name()
        )),
        (_, Typed::Deploy(d)) => written(envelope(form, Some(d)), version),
        (_, Typed::Coarse(c)) => Incoming::Foreign(format!(
            "{}, of the coarse family, on a deploy connection",
            c.name()
        )),
    }
}

/// An error text as Spark's `RpcFailure` carries it, read back.
pub fn failure_text(error: &ErrorDescription) -> String {
    format!("{}: {}", error.class_name, error.message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparkwire::messages::deploy::{Heartbeat, KillDriver, RequestMasterState};
    use sparkwire::messages::{Addr, EndpointRef};

    fn body(env: &Envelope<DeployMessage>) -> Vec<u8> {
        let mut b = Vec::new();
        encode_envelope(env, Version::V2, &mut b).expect("encodes");
        b
    }

    fn side(played: &str) -> SparkSide {
        SparkSide::new(
            Release::of(Version::V2),
            (Some(("127.0.0.1".into(), 7077)), "Master".into()),
            played,
        )
    }

    #[test]
    fn an_envelope_crosses_spark_s_wire_and_comes_back_the_same() {
        let hb = DeployMessage::from(Heartbeat::new(
            "worker-1".into(),
            EndpointRef::at(Addr::new("127.0.0.1", 7078), "Worker"),
        ));
        let ask = DeployMessage::from(RequestMasterState::new());
        let mut client = side("Worker");
        let mut server = side("Master");
        for env in [
            Envelope::Send(hb),
            Envelope::Ask {
                id: 42,
                message: ask,
            },
            Envelope::Reply {
                id: 42,
                reply: Reply::Bool(true),
            },
            Envelope::Failure {
                id: 7,
                error: ErrorDescription::new("org.apache.spark.SparkException", "no"),
            },
        ] {
            let wire = client
                .outgoing("deploy", &body(&env))
                .expect("a Spark frame");
            // Cut anywhere: the frame is read whole.
            let (first, answers) = server.incoming("deploy", &wire[..5]);
            assert!(first.is_empty() && answers.is_empty());
            let (items, answers) = server.incoming("deploy", &wire[5..]);
            assert!(answers.is_empty());
            assert_eq!(
                items,
                vec![Incoming::Envelope(body(&env).into())],
                "{env:?}"
            );
        }
        // A message names the suite's own reference: it is the sender from then on.
        let reg = DeployMessage::from(KillDriver::new("driver-1".into()));
        let wire = client
            .outgoing("deploy", &body(&Envelope::Send(reg)))
            .expect("frame");
        let mut d = FrameDecoder::default();
        d.push(&wire);
        let Some(Ok(Frame::OneWay { body })) = d.next_item().map(|i| i.frame) else {
            panic!("a one-way frame");
        };
        let header = RequestMessage::parse(&body).expect("a header");
        assert_eq!(header.sender, None, "no own reference registered yet");
        assert_eq!(header.endpoint, "Master");
        assert_eq!(header.receiver, Some(("127.0.0.1".into(), 7077)));
    }

    #[test]
    fn check_existence_is_answered_for_the_endpoint_played_only() {
        let asker = side("Worker");
        let mut master = side("Master");
        for (name, exists) in [("Master", true), ("Worker", false)] {
            let ask = asker.check_existence(9, name).expect("a request");
            let (items, answers) = master.incoming("deploy", &ask);
            assert!(matches!(&items[..], [Incoming::Ignored(_)]), "{items:?}");
            let mut back = side("Worker");
            let (replies, _) = back.incoming("deploy", &answers[0]);
            assert_eq!(
                replies,
                vec![Incoming::Envelope(
                    body(&Envelope::Reply {
                        id: 9,
                        reply: Reply::Bool(exists)
                    })
                    .into()
                )]
            );
        }
        assert_eq!(master.checked(), ["Master", "Worker"]);
    }

    #[test]
    fn what_has_no_spark_form_is_refused_and_what_sparkwire_cannot_read_is_foreign() {
        let mut s = side("Worker");
        let close =
            Envelope::<DeployMessage>::Close(sparkwire::wire::CloseReason::new("Idle", "x"));
        assert!(s.outgoing("deploy", &body(&close)).is_err());
        assert!(s
            .outgoing(
                "deploy",
                &body(&Envelope::Ask {
                    id: u64::MAX,
                    message: DeployMessage::from(RequestMasterState::new()),
                })
            )
            .is_err());
        assert!(s.outgoing("deploy", &[0xc1]).is_err());
        let garbage = Frame::RpcResponse {
            request_id: 3,
            body: Bytes::from_static(&[0xAC, 0xED, 0x00, 0x05, 0x70]),
        }
        .encode()
        .expect("frame");
        let (items, _) = s.incoming("deploy", &garbage);
        assert!(matches!(&items[..], [Incoming::Foreign(_)]), "{items:?}");
    }
}
