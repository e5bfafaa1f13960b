//! The golden test vectors of `protocol/vectors/`: for every message and every version that has it,
//! the value in readable JSON and the exact bytes of its body and of a whole frame carrying it.
//!
//! Vector values are built from the definition alone (every field filled for the `full` case;
//! options empty and collections empty for the `minimal` case), then decoded into the Rust types
//! and encoded again, so a vector exists only where the definition and the types agree. The files
//! are written by `sparkwire spec vectors` and never edited by hand.

mod auth;
mod decoder;
mod features;

pub use auth::{auth_vectors, AuthVector};
pub use decoder::{
    check_decoder_vector, conversion_vectors, decoder_vectors, ConversionVector, DecoderVector,
};
pub use features::{feature_vectors, FeatureVector};

use bytes::Bytes;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::definition::{Definition, FieldDef, MessageDef, MessageKind, TypeExpr, TypeKind};
use crate::messages::to_hex;
use crate::messages::{
    CoarseMessage, DeployMessage, ErrorDescription, ExecutorLossReason, Family, Payload,
    ThreadStackTrace, Version, Versioned,
};
use crate::wire::{encode_frame, read_message, write_message, CloseReason, Envelope, Error, Reply};

/// The two sample cases every message has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// Every optional field set, every collection holding one element.
    Full,
    /// Every optional field empty, every collection empty.
    Minimal,
}

impl Case {
    /// The case's name in the vector files.
    pub fn as_str(self) -> &'static str {
        match self {
            Case::Full => "full",
            Case::Minimal => "minimal",
        }
    }
}

/// One vector: a message in one version.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Vector {
    /// `full` or `minimal`.
    pub case: String,
    /// Protocol version number.
    pub version: u8,
    /// `send`, `ask`, `reply` or `local`.
    pub kind: String,
    /// The message, `{Name: {fields}}`, in that version's layout (binary fields as hex).
    pub value: Value,
    /// Hex of the message body's MessagePack.
    pub body_hex: String,
    /// Hex of a whole frame carrying it (send: `[0, body]`; ask: `[1, 1, body]`; reply:
    /// `[2, 1, {"message": body}]`), or `null` for local messages, which never form a frame.
    pub frame_hex: Option<String>,
}

/// The vectors of one message.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct MessageVectors {
    /// `deploy` or `coarse`.
    pub family: String,
    /// Spark's name.
    pub message: String,
    /// Its vectors.
    pub vectors: Vec<Vector>,
}

/// A sample JSON value of type `ty` in the newest layout.
fn sample(def: &Definition, ty: &TypeExpr, field: &str, case: Case) -> Value {
    let full = case == Case::Full;
    match ty {
        TypeExpr::String => Value::String(format!("{field}-1")),
        TypeExpr::Bool => Value::Bool(full),
        TypeExpr::I32 => json!(if full { 7 } else { 0 }),
        TypeExpr::I64 => json!(if full { 1_700_000_000_123i64 } else { 0 }),
        TypeExpr::F64 => json!(if full { 0.5 } else { 0.0 }),
        TypeExpr::Bytes => Value::String(if full {
            "00017fff".into()
        } else {
            String::new()
        }),
        TypeExpr::Option(inner) => {
            if full {
                sample(def, inner, field, case)
            } else {
                Value::Null
            }
        }
        TypeExpr::List(inner) | TypeExpr::Set(inner) => {
            if full {
                json!([sample(def, inner, field, case)])
            } else {
                json!([])
            }
        }
        TypeExpr::Tuple(items) => {
            Value::Array(items.iter().map(|t| sample(def, t, field, case)).collect())
        }
        TypeExpr::Map(k, v) => {
            let mut m = Map::new();
            if full {
                let key = match sample(def, k, &format!("{field}Key"), case) {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                m.insert(key, sample(def, v, field, case));
            }
            Value::Object(m)
        }
        TypeExpr::Named(name) => match def.type_def(name) {
            Some(t) => match t.kind {
                TypeKind::Struct => sample_struct(def, &t.fields, case),
                TypeKind::Enum => {
                    let pick = if full { 1 } else { 0 };
                    json!(t.values.get(pick).or(t.values.first()))
                }
                TypeKind::Union => match t.variants.first() {
                    Some(v) => json!({ v.name.clone(): sample_struct(def, &v.fields, case) }),
                    None => Value::Null,
                },
            },
            None => Value::Null,
        },
    }
}

fn sample_struct(def: &Definition, fields: &[FieldDef], case: Case) -> Value {
    let mut m = Map::new();
    for f in fields.iter().filter(|f| f.exists_in(Version::LATEST)) {
        let v = match f.type_expr() {
            Ok(t) => sample(def, &t, &f.name, case),
            Err(_) => Value::Null,
        };
        m.insert(f.name.clone(), v);
    }
    Value::Object(m)
}

/// The sample message `msg` of family `F` for `case`, as a Rust value.
pub fn sample_message<F: Family>(
    def: &Definition,
    msg: &MessageDef,
    case: Case,
) -> Result<F, Error> {
    let fields = sample_struct(def, &msg.fields, case);
    match F::deserialize_fields(&msg.name, Version::LATEST, fields) {
        Some(Ok(m)) => Ok(m),
        Some(Err(e)) => Err(Error::InvalidFields {
            name: msg.name.clone(),
            version: Version::LATEST,
            detail: format!("the definition's sample does not fit the Rust type: {e}"),
            at: None,
        }),
        None => Err(Error::UnknownMessage {
            family: F::FAMILY,
            name: msg.name.clone(),
        }),
    }
}

fn envelope_for<F: Family>(kind: MessageKind, m: F) -> Option<Envelope<F>> {
    match kind {
        MessageKind::Send => Some(Envelope::Send(m)),
        MessageKind::Ask => Some(Envelope::Ask { id: 1, message: m }),
        MessageKind::Reply => Some(Envelope::Reply {
            id: 1,
            reply: Reply::Message(m),
        }),
        MessageKind::Local => None,
    }
}

fn vectors_of<F: Family>(def: &Definition, msg: &MessageDef) -> Result<MessageVectors, Error> {
    let mut vectors = Vec::new();
    for case in [Case::Full, Case::Minimal] {
        let value: F = sample_message(def, msg, case)?;
        for version in Version::ALL.into_iter().filter(|v| msg.exists_in(*v)) {
            let mut body = Vec::new();
            write_message(&value, version, &mut body)?;
            let json =
                serde_json::to_value(Versioned(&value, version)).map_err(|e| Error::Encode {
                    name: msg.name.clone(),
                    detail: e.to_string(),
                })?;
            let frame = match envelope_for(msg.kind_in(version), value.clone()) {
                Some(env) => Some(to_hex(&encode_frame(&env, version)?)),
                None => None,
            };
            vectors.push(Vector {
                case: case.as_str().to_string(),
                version: version.number(),
                kind: msg.kind_in(version).as_str().to_string(),
                value: json,
                body_hex: to_hex(&body),
                frame_hex: frame,
            });
        }
    }
    Ok(MessageVectors {
        family: msg.family.clone(),
        message: msg.name.clone(),
        vectors,
    })
}

/// The vectors of every message of the definition, in definition order.
pub fn message_vectors(def: &Definition) -> Result<Vec<MessageVectors>, Error> {
    def.messages
        .iter()
        .map(|m| match m.family.as_str() {
            "deploy" => vectors_of::<DeployMessage>(def, m),
            _ => vectors_of::<CoarseMessage>(def, m),
        })
        .collect()
}

/// Every vector file's path (relative to the vectors directory) and text, exactly as
/// `sparkwire spec vectors` writes them.
pub fn render_files(def: &Definition) -> Result<Vec<(String, String)>, Error> {
    let json_err = |e: serde_json::Error| Error::Encode {
        name: "vector file".into(),
        detail: e.to_string(),
    };
    let mut files = Vec::new();
    for mv in message_vectors(def)? {
        let text = serde_json::to_string_pretty(&mv).map_err(json_err)?;
        files.push((format!("{}/{}.json", mv.family, mv.message), text + "\n"));
    }
    let text = serde_json::to_string_pretty(&envelope_vectors()?).map_err(json_err)?;
    files.push(("envelope.json".to_string(), text + "\n"));
    let text = serde_json::to_string_pretty(&task_vectors(def)?).map_err(json_err)?;
    files.push(("task-description.json".to_string(), text + "\n"));
    let text = serde_json::to_string_pretty(&auth_vectors()?).map_err(json_err)?;
    files.push(("handshake-auth.json".to_string(), text + "\n"));
    // Handshake features (handshake.md §12).
    let text = serde_json::to_string_pretty(&feature_vectors()?).map_err(json_err)?;
    files.push(("handshake-features.json".to_string(), text + "\n"));
    // Decoder decisions (SPEC §2, §3, §4, §4.1, §8).
    let text = serde_json::to_string_pretty(&decoder_vectors(def)?).map_err(json_err)?;
    files.push(("decoder.json".to_string(), text + "\n"));
    // Version conversions (SPEC §5.1).
    let text = serde_json::to_string_pretty(&conversion_vectors(def)?).map_err(json_err)?;
    files.push(("conversions.json".to_string(), text + "\n"));
    Ok(files)
}

/// Decodes a vector's `body_hex` bytes.
pub fn value_from_body<F: Family>(body: &[u8], version: Version) -> Result<F, Error> {
    let frame = Bytes::copy_from_slice(body);
    read_message(&frame, &frame, version)
}

/// One envelope vector: a frame that is not a plain message, or an invalid frame.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct EnvelopeVector {
    /// What it shows.
    pub name: String,
    /// The family the frame is read as.
    pub family: String,
    /// Protocol version number.
    pub version: u8,
    /// Hex of the whole frame, length prefix included.
    pub frame_hex: String,
    /// For valid frames: the envelope in readable form; `null` for invalid ones.
    pub envelope: Option<Value>,
    /// For invalid frames: the error a decoder must report (a `wire::Error` variant name).
    pub error: Option<String>,
    /// For `InvalidFields`: the path a close envelope reports (SPEC §8.2), as in `decoder.json`;
    /// else `null`.
    #[serde(default)]
    pub path: Option<String>,
    /// For `InvalidFields`: the offset a close envelope reports, in the body (after the length
    /// prefix), of the offending item's first byte (SPEC §8.2); else `null`.
    #[serde(default)]
    pub offset: Option<u64>,
}

fn frame_hex_of(env: &Envelope<CoarseMessage>, version: Version) -> Result<String, Error> {
    Ok(to_hex(&encode_frame(env, version)?))
}

fn with_prefix(body: &[u8]) -> String {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    to_hex(&out)
}

/// Vectors of replies of every kind, a failure, close envelopes (SPEC §8.1), and frames every
/// decoder must refuse.
pub fn envelope_vectors() -> Result<Vec<EnvelopeVector>, Error> {
    let v2 = Version::V2;
    let valid: Vec<(&str, Envelope<CoarseMessage>, Value)> = vec![
        (
            "reply bool",
            Envelope::Reply {
                id: 7,
                reply: Reply::Bool(true),
            },
            json!({"reply": 7, "bool": true}),
        ),
        (
            "reply int",
            Envelope::Reply {
                id: 8,
                reply: Reply::Int(-3),
            },
            json!({"reply": 8, "int": -3}),
        ),
        (
            "reply bytes",
            Envelope::Reply {
                id: 9,
                reply: Reply::Bytes(Payload::copy_from(&[1, 2, 3])),
            },
            json!({"reply": 9, "bytes": "010203"}),
        ),
        (
            "reply thread dump, none",
            Envelope::Reply {
                id: 10,
                reply: Reply::ThreadDump(None),
            },
            json!({"reply": 10, "threadDump": null}),
        ),
        (
            "reply thread dump",
            Envelope::Reply {
                id: 11,
                reply: Reply::ThreadDump(Some(ThreadStackTrace {
                    thread_id: 42,
                    thread_name: "Executor task launch worker-0".into(),
                    thread_state: "RUNNABLE".into(),
                    stack_trace: vec!["Task.run".into()],
                })),
            },
            json!({"reply": 11, "threadDump": {"threadId": 42, "threadName": "Executor task launch worker-0", "threadState": "RUNNABLE", "stackTrace": ["Task.run"]}}),
        ),
        (
            "reply loss reason",
            Envelope::Reply {
                id: 12,
                reply: Reply::LossReason(ExecutorLossReason::ExecutorExited {
                    exit_code: 137,
                    exit_caused_by_app: false,
                    reason: "Command exited with code 137".into(),
                }),
            },
            json!({"reply": 12, "lossReason": {"ExecutorExited": {"exitCode": 137, "exitCausedByApp": false, "reason": "Command exited with code 137"}}}),
        ),
        (
            "failure",
            Envelope::Failure {
                id: 13,
                error: ErrorDescription::new(
                    "java.lang.IllegalStateException",
                    "Duplicate executor ID: 1",
                ),
            },
            json!({"failure": 13, "className": "java.lang.IllegalStateException", "message": "Duplicate executor ID: 1"}),
        ),
        (
            "close after a decoding error, with its location",
            Envelope::Close(CloseReason {
                kind: "InvalidFields".into(),
                message: "invalid RegisterApplication in protocol 2 at appDescription.command.environment (byte 120): map key \"A\" after \"B\": keys are distinct and ascending".into(),
                path: Some("appDescription.command.environment".into()),
                offset: Some(120),
            }),
            json!({"close": {"kind": "InvalidFields", "message": "invalid RegisterApplication in protocol 2 at appDescription.command.environment (byte 120): map key \"A\" after \"B\": keys are distinct and ascending", "path": "appDescription.command.environment", "offset": 120}}),
        ),
        (
            "close after a refusal, without a location",
            Envelope::Close(CloseReason::new(
                "NotOnRoute",
                "a worker may not send RegisterApplication to a master",
            )),
            json!({"close": {"kind": "NotOnRoute", "message": "a worker may not send RegisterApplication to a master", "path": null, "offset": null}}),
        ),
        (
            "close of a kind the receiver does not know: taken as it is",
            Envelope::Close(CloseReason::new(
                "SomeLaterKind",
                "a kind a later revision may add",
            )),
            json!({"close": {"kind": "SomeLaterKind", "message": "a kind a later revision may add", "path": null, "offset": null}}),
        ),
        (
            "close of another kind with a path and an offset: read as sent",
            Envelope::Close(CloseReason {
                kind: "RuleViolation".into(),
                message: "W1: a worker's first message is RegisterWorker".into(),
                path: Some(String::new()),
                offset: Some(0),
            }),
            json!({"close": {"kind": "RuleViolation", "message": "W1: a worker's first message is RegisterWorker", "path": "", "offset": 0}}),
        ),
    ];
    let mut out = Vec::new();
    for (name, env, readable) in valid {
        out.push(EnvelopeVector {
            name: name.into(),
            family: "coarse".into(),
            version: v2.number(),
            frame_hex: frame_hex_of(&env, v2)?,
            envelope: Some(readable),
            error: None,
            path: None,
            offset: None,
        });
    }
    let stop = Envelope::Send(CoarseMessage::StopExecutor(
        crate::messages::coarse::StopExecutor {},
    ));
    let good = encode_frame(&stop, v2)?;
    let body = &good[4..];
    let mut trailing = body.to_vec();
    trailing.push(0xc0);
    // (name, version, frame, error, and for InvalidFields where SPEC §8.2 places the fault: the
    // path and the offset of the offending item's first byte in the body).
    type Invalid<'a> = (&'a str, u8, String, &'a str, Option<(&'a str, u64)>);
    let mut invalid: Vec<Invalid> = vec![
        (
            "trailing byte after the envelope",
            2,
            with_prefix(&trailing),
            "TrailingBytes",
            None,
        ),
        (
            "truncated envelope",
            2,
            with_prefix(&body[..body.len() - 1]),
            "InvalidMessagePack",
            None,
        ),
        // [0, {"NoSuchMessage": {}}]
        (
            "unknown message",
            2,
            with_prefix(&[
                0x92, 0x00, 0x81, 0xad, b'N', b'o', b'S', b'u', b'c', b'h', b'M', b'e', b's', b's',
                b'a', b'g', b'e', 0x80,
            ]),
            "UnknownMessage",
            None,
        ),
        // [4, {"kind": "Idle"}]: a close needs its message; the fault lies at the reason's map
        // (a missing field, SPEC §8.2), path "" (relative to the reason)
        (
            "a close without its message",
            2,
            with_prefix(&[
                0x92, 0x04, 0x81, 0xa4, b'k', b'i', b'n', b'd', 0xa4, b'I', b'd', b'l', b'e',
            ]),
            "InvalidFields",
            Some(("", 2)),
        ),
        // [4]: a close is an array of two
        (
            "a close without its reason",
            2,
            with_prefix(&[0x91, 0x04]),
            "BadEnvelope",
            None,
        ),
        // [5, ...]: no such envelope tag
        (
            "unknown envelope tag",
            2,
            with_prefix(&[0x92, 0x05, 0xc0]),
            "BadEnvelope",
            None,
        ),
        // [0, {"Shutdown": {"exitCode": 0}}]: local
        (
            "local message",
            2,
            with_prefix(&[
                0x92, 0x00, 0x81, 0xa8, b'S', b'h', b'u', b't', b'd', b'o', b'w', b'n', 0x81, 0xa8,
                b'e', b'x', b'i', b't', b'C', b'o', b'd', b'e', 0x00,
            ]),
            "LocalMessage",
            None,
        ),
        // [0, {"KillTask": [1, "1", true, "r"]}]: the fields as an array, not a map; refused at
        // the array (SPEC §8.2: a struct written as an array), path "" (the message's fields)
        (
            "message fields as an array",
            2,
            with_prefix(&[
                0x92, 0x00, 0x81, 0xa8, b'K', b'i', b'l', b'l', b'T', b'a', b's', b'k', 0x94, 0x01,
                0xa1, b'1', 0xc3, 0xa1, b'r',
            ]),
            "InvalidFields",
            Some(("", 12)),
        ),
        // an extension value
        (
            "extension type",
            2,
            with_prefix(&[0xd4, 0x01, 0x00]),
            "InvalidMessagePack",
            None,
        ),
    ];
    let decommission = Envelope::Send(CoarseMessage::DecommissionExecutor(
        crate::messages::coarse::DecommissionExecutor {},
    ));
    let v2_only = encode_frame(&decommission, v2)?;
    invalid.push((
        "version 2 message read as version 1",
        1,
        to_hex(&v2_only),
        "NotInVersion",
        None,
    ));
    for (name, version, hex, error, at) in invalid {
        // SPEC §8.2's place for the fault, checked against the decoder as decoder.json's are.
        let frame = crate::messages::from_hex(&hex)
            .ok_or_else(|| Error::BadEnvelope(format!("envelope vector {name:?}: not hex")))?;
        let version_of = Version::from_number(u64::from(version))
            .ok_or_else(|| Error::BadEnvelope(format!("envelope vector {name:?}: version")))?;
        let decoded = crate::wire::decode_envelope::<CoarseMessage>(
            &Bytes::copy_from_slice(&frame[4..]),
            version_of,
        );
        let located = match &decoded {
            Err(e) => {
                let r = CloseReason::decoding(e);
                r.path.zip(r.offset)
            }
            Ok(_) => None,
        };
        let spec_at = at.map(|(p, o)| (p.to_string(), o));
        if located != spec_at {
            return Err(Error::BadEnvelope(format!(
                "envelope vector {name:?}: SPEC §8.2 places the fault at {spec_at:?}, the decoder at {located:?}"
            )));
        }
        out.push(EnvelopeVector {
            name: name.into(),
            family: "coarse".into(),
            version,
            frame_hex: hex,
            envelope: None,
            error: Some(error.into()),
            path: spec_at.as_ref().map(|(p, _)| p.clone()),
            offset: spec_at.map(|(_, o)| o),
        });
    }
    Ok(out)
}

/// One task description vector: `LaunchTask.data` in readable form and as bytes.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TaskVector {
    /// `full` or `minimal`.
    pub case: String,
    /// The task description in readable JSON (`serializedTask` as hex).
    pub value: Value,
    /// Hex of its MessagePack: the bytes of `LaunchTask.data`.
    pub hex: String,
}

/// Vectors of the task description, built from the definition like the message vectors.
pub fn task_vectors(def: &Definition) -> Result<Vec<TaskVector>, Error> {
    let fields = def
        .type_def("TaskDescription")
        .map(|t| t.fields.clone())
        .unwrap_or_default();
    let mut out = Vec::new();
    for case in [Case::Full, Case::Minimal] {
        let value = sample_struct(def, &fields, case);
        let task: crate::messages::TaskDescription =
            serde_json::from_value(value).map_err(|e| Error::InvalidFields {
                name: "TaskDescription".into(),
                version: Version::LATEST,
                detail: format!("the definition's sample does not fit the Rust type: {e}"),
                at: None,
            })?;
        let bytes = crate::wire::encode_task(&task)?;
        let readable = serde_json::to_value(&task).map_err(|e| Error::Encode {
            name: "TaskDescription".into(),
            detail: e.to_string(),
        })?;
        out.push(TaskVector {
            case: case.as_str().into(),
            value: readable,
            hex: to_hex(&bytes),
        });
    }
    Ok(out)
}
