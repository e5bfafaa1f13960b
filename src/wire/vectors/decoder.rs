//! `protocol/vectors/decoder.json`: one vector for every decision SPEC.md takes about what a
//! decoder accepts or refuses and which error it reports: nesting depth (§2), envelope shapes and
//! error precedence (§8), canonical maps and sets (§4.1), field names of another version (§4).
//!
//! Each vector is a whole frame, built byte by byte (most of them are frames no sparkwire encoder
//! writes), with the family and version it is read as and either the error a decoder must report
//! or the message it must decode to and the frame an encoder writes for that message.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::{sample_message, Case};
use crate::definition::Definition;
use crate::messages::to_hex;
use crate::messages::{CoarseMessage, DeployMessage, Family, Version, Versioned};
use crate::wire::error_kind;
use crate::wire::Error;
use crate::wire::{decode_envelope, decode_frame, encode_frame, value_from_json};

/// One decoder vector.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct DecoderVector {
    /// What it shows.
    pub name: String,
    /// The section of SPEC.md that decides it.
    pub spec: String,
    /// The family the frame is read as: `deploy` or `coarse`.
    pub family: String,
    /// The negotiated protocol version it is read in.
    pub version: u8,
    /// Hex of the whole frame, length prefix included.
    pub frame_hex: String,
    /// For a frame that must be refused: the error (a `wire::Error` variant name); else `null`.
    pub error: Option<String>,
    /// For a frame that decodes: the message it carries, in readable JSON; else `null`.
    pub message: Option<Value>,
    /// For a frame that decodes: the frame an encoder writes for that message (differs from
    /// `frame_hex` where the decoder skipped something); else `null`.
    pub encodes_hex: Option<String>,
    /// For `InvalidFields`: the path a close envelope reports (SPEC §8.2); else `null`.
    #[serde(default)]
    pub path: Option<String>,
    /// For `InvalidFields`: the offset a close envelope reports, in the body (after the length
    /// prefix): where the offending item starts (SPEC §8.2); else `null`.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// A MessagePack value, written exactly as given: maps keep their entries' order, duplicates
/// included, so that frames no encoder writes can be built.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mp {
    Nil,
    Bool(bool),
    Int(i64),
    F64(f64),
    Str(String),
    Bin(Vec<u8>),
    Arr(Vec<Mp>),
    Map(Vec<(Mp, Mp)>),
    /// Bytes written as they are (whatever they hold).
    Raw(Vec<u8>),
    /// The offending item of a refused frame (SPEC §8.2): the vector's `offset` is where it
    /// starts.
    At(Box<Mp>),
}

impl Mp {
    pub(super) fn s(text: &str) -> Mp {
        Mp::Str(text.to_string())
    }

    /// `{name: fields}`.
    fn message(name: &str, fields: Vec<(&str, Mp)>) -> Mp {
        Mp::Map(vec![(
            Mp::s(name),
            Mp::Map(fields.into_iter().map(|(k, v)| (Mp::s(k), v)).collect()),
        )])
    }

    /// Replaces (or appends) the entry `key` of the field map of message `self`.
    fn with_field(mut self, key: &str, value: Mp) -> Mp {
        if let Mp::Map(outer) = &mut self {
            if let Some((_, Mp::Map(fields))) = outer.first_mut() {
                match fields.iter_mut().find(|(k, _)| *k == Mp::s(key)) {
                    Some(entry) => entry.1 = value,
                    None => fields.push((Mp::s(key), value)),
                }
            }
        }
        self
    }

    /// A readable JSON value as MessagePack (the samples used here hold no `bytes`).
    fn from_json(v: &Value) -> Mp {
        match v {
            Value::Null => Mp::Nil,
            Value::Bool(b) => Mp::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Mp::Int(i),
                None => Mp::F64(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => Mp::Str(s.clone()),
            Value::Array(items) => Mp::Arr(items.iter().map(Mp::from_json).collect()),
            Value::Object(map) => Mp::Map(
                map.iter()
                    .map(|(k, v)| (Mp::Str(k.clone()), Mp::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// The offending item: `self`, marked.
    fn at(self) -> Mp {
        Mp::At(Box::new(self))
    }

    /// The same map with its key `i` marked as the offending item.
    fn key_at(mut self, i: usize) -> Mp {
        if let Mp::Map(entries) = &mut self {
            if let Some(entry) = entries.get_mut(i) {
                entry.0 = entry.0.clone().at();
            }
        }
        self
    }

    /// The same array with its element `i` marked as the offending item.
    fn elem_at(mut self, i: usize) -> Mp {
        if let Mp::Arr(items) = &mut self {
            if let Some(item) = items.get_mut(i) {
                *item = item.clone().at();
            }
        }
        self
    }

    /// The same message `{Name: fields}` with its field map marked as the offending item.
    fn fields_at(mut self) -> Mp {
        if let Mp::Map(outer) = &mut self {
            if let Some(entry) = outer.first_mut() {
                entry.1 = entry.1.clone().at();
            }
        }
        self
    }

    fn write(&self, out: &mut Vec<u8>) {
        self.write_marked(out, &mut None);
    }

    /// Writes the value; `mark` gets where the item marked [`Mp::At`] starts.
    fn write_marked(&self, out: &mut Vec<u8>, mark: &mut Option<usize>) {
        // Writing to a Vec cannot fail.
        match self {
            Mp::Nil => {
                let _ = rmp::encode::write_nil(out);
            }
            Mp::Bool(b) => {
                let _ = rmp::encode::write_bool(out, *b);
            }
            Mp::Int(i) => {
                let _ = rmp::encode::write_sint(out, *i);
            }
            Mp::F64(f) => {
                let _ = rmp::encode::write_f64(out, *f);
            }
            Mp::Str(s) => {
                let _ = rmp::encode::write_str(out, s);
            }
            Mp::Bin(b) => {
                let _ = rmp::encode::write_bin(out, b);
            }
            Mp::Arr(items) => {
                let _ = rmp::encode::write_array_len(out, items.len() as u32);
                items.iter().for_each(|i| i.write_marked(out, mark));
            }
            Mp::Map(entries) => {
                let _ = rmp::encode::write_map_len(out, entries.len() as u32);
                for (k, v) in entries {
                    k.write_marked(out, mark);
                    v.write_marked(out, mark);
                }
            }
            Mp::Raw(bytes) => out.extend_from_slice(bytes),
            Mp::At(inner) => {
                *mark = Some(out.len());
                inner.write_marked(out, mark);
            }
        }
    }

    /// A whole frame holding this value, length prefix included, and where the marked item
    /// starts in the body.
    pub(super) fn frame(&self) -> (Vec<u8>, Option<usize>) {
        let mut body = Vec::new();
        let mut mark = None;
        self.write_marked(&mut body, &mut mark);
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        (out, mark)
    }
}

/// `[0, message]`.
fn send(message: Mp) -> Mp {
    Mp::Arr(vec![Mp::Int(0), message])
}

/// `[1, 1, message]`.
fn ask(message: Mp) -> Mp {
    Mp::Arr(vec![Mp::Int(1), Mp::Int(1), message])
}

/// `[0, {"StopExecutor": {"x": v}}]` where `v` is `arrays` arrays nested around a 0: the frame
/// holds `arrays + 3` nested containers, the envelope counted.
fn nested(arrays: usize) -> Mp {
    nested_around(arrays, Mp::Int(0))
}

/// `[0, {"StopExecutor": {"x": v}}]` where `v` is `arrays` arrays nested around `inner`.
fn nested_around(arrays: usize, inner: Mp) -> Mp {
    let mut v = inner;
    for _ in 0..arrays {
        v = Mp::Arr(vec![v]);
    }
    send(Mp::message("StopExecutor", vec![("x", v)]))
}

/// The definition's `full` sample of a message, in `version`'s layout, as MessagePack.
fn sample<F: Family>(def: &Definition, name: &str, version: Version) -> Result<Mp, Error> {
    let msg = def
        .messages
        .iter()
        .find(|m| m.name == name && m.family == F::FAMILY)
        .ok_or_else(|| Error::UnknownMessage {
            family: F::FAMILY,
            name: name.to_string(),
        })?;
    let value: F = sample_message(def, msg, Case::Full)?;
    let json = serde_json::to_value(Versioned(&value, version)).map_err(|e| Error::Encode {
        name: name.to_string(),
        detail: e.to_string(),
    })?;
    Ok(Mp::from_json(&json))
}

fn resource(name: &str) -> Mp {
    Mp::Map(vec![
        (Mp::s("name"), Mp::s(name)),
        (Mp::s("addresses"), Mp::Arr(vec![Mp::s("0")])),
    ])
}

fn str_map(keys: &[&str]) -> Mp {
    Mp::Map(keys.iter().map(|k| (Mp::s(k), resource(k))).collect())
}

fn strs(items: &[&str]) -> Mp {
    Mp::Arr(items.iter().map(|s| Mp::s(s)).collect())
}

/// What a decoder makes of one frame, as a vector records it: the error and, for
/// `InvalidFields`, its path and offset; or the message and the frame an encoder writes for it.
type Outcome = (
    Option<String>,
    Option<Value>,
    Option<String>,
    Option<(String, u64)>,
);

fn located(e: &Error) -> Option<(String, u64)> {
    match e {
        Error::InvalidFields { at: Some(at), .. } => Some((at.path.clone(), at.offset)),
        _ => None,
    }
}

fn outcome<F: Family>(frame: &[u8], version: Version) -> Result<Outcome, Error> {
    let bytes = Bytes::copy_from_slice(&frame[4..]);
    match decode_envelope::<F>(&bytes, version) {
        Err(e) => Ok((Some(error_kind(&e).to_string()), None, None, located(&e))),
        Ok(env) => {
            let message = env
                .message()
                .ok_or_else(|| Error::BadEnvelope("decoder vectors carry messages".to_string()))?;
            let json =
                serde_json::to_value(Versioned(message, version)).map_err(|e| Error::Encode {
                    name: message.name().to_string(),
                    detail: e.to_string(),
                })?;
            let again = to_hex(&encode_frame(&env, version)?);
            Ok((None, Some(json), Some(again), None))
        }
    }
}

struct Case1 {
    name: &'static str,
    spec: &'static str,
    family: &'static str,
    version: Version,
    frame: Mp,
    /// What SPEC.md says the decoder does: `Some(error)` or `None` (it decodes).
    want: Option<&'static str>,
    /// For `InvalidFields`: the path SPEC §8.2 gives the fault; the offset is where the item
    /// marked [`Mp::At`] starts.
    path: Option<&'static str>,
}

/// Every decoder vector. Fails if the reference decoder does not do what the vector says SPEC.md
/// decides, so the vectors cannot drift from the code.
pub fn decoder_vectors(def: &Definition) -> Result<Vec<DecoderVector>, Error> {
    use Version::{V1, V2};
    let deep = "§2 nesting";
    let prec = "§8 precedence";
    let shape = "§3 envelope";
    let maps = "§4.1 map";
    let sets = "§4.1 set";
    let other = "§4 fields of another version";
    let worker = sample::<DeployMessage>(def, "RegisterWorker", V2)?;
    let int_map = |keys: &[i64]| Mp::Map(keys.iter().map(|k| (Mp::Int(*k), Mp::Int(1))).collect());
    let hosts = |keys: &[&str]| {
        Mp::Map(vec![(
            Mp::Int(0),
            Mp::Map(keys.iter().map(|k| (Mp::s(k), Mp::Int(1))).collect()),
        )])
    };
    // The readable sample keys its integer maps by strings; MessagePack keys them by integers.
    let request = sample::<CoarseMessage>(def, "RequestExecutors", V2)?
        .with_field("numLocalityAwareTasksPerResourceProfileId", int_map(&[0]))
        .with_field("hostToLocalTaskCount", hosts(&["host-a"]));
    let request_v1 = sample::<CoarseMessage>(def, "RequestExecutors", V1)?;
    let launch_v1 = sample::<DeployMessage>(def, "LaunchExecutor", V1)?;
    let updated_v2 = sample::<DeployMessage>(def, "ExecutorUpdated", V2)?;
    let fields_array = |name: &str| Mp::Map(vec![(Mp::s(name), Mp::Arr(vec![Mp::Int(1)]))]);
    let kill = |exec: Mp| {
        send(Mp::message(
            "KillExecutor",
            vec![
                ("masterUrl", Mp::s("spark://10.0.0.100:7077")),
                ("appId", Mp::s("app-1")),
                ("execId", exec),
            ],
        ))
    };
    let changed = |state: Mp| {
        ask(Mp::message(
            "ExecutorStateChanged",
            vec![
                ("appId", Mp::s("app-1")),
                ("execId", Mp::Int(0)),
                ("state", state),
            ],
        ))
    };
    let task = |data: Mp| send(Mp::message("LaunchTask", vec![("data", data)]));
    let cpus = |amount: Mp| {
        let profile = Mp::Map(vec![
            (Mp::s("id"), Mp::Int(0)),
            (Mp::s("executorResources"), Mp::Map(vec![])),
            (
                Mp::s("taskResources"),
                Mp::Map(vec![(
                    Mp::s("cpus"),
                    Mp::Map(vec![
                        (Mp::s("resourceName"), Mp::s("cpus")),
                        (Mp::s("amount"), amount),
                    ]),
                )]),
            ),
        ]);
        ask(request.clone().with_field(
            "resourceProfileToTotalExecs",
            Mp::Arr(vec![Mp::Map(vec![
                (Mp::s("profile"), profile),
                (Mp::s("total"), Mp::Int(1)),
            ])]),
        ))
    };
    let skipped = |raw: Vec<u8>| send(Mp::message("StopExecutor", vec![("x", Mp::Raw(raw))]));
    let fields = "§4 fields";
    let layout = "§4.1 layout";
    let mut cases = vec![
        Case1 {
            name: "the reserved marker 0xc1, even inside a skipped field",
            spec: "§2 MessagePack",
            family: "coarse",
            version: V2,
            frame: skipped(vec![0xc1]),
            want: Some("InvalidMessagePack"),
            path: None,
        },
        Case1 {
            name: "an array declaring more elements than bytes remain",
            spec: "§2 allocation",
            family: "coarse",
            version: V2,
            frame: skipped(vec![0xdd, 0xff, 0xff, 0xff, 0xff, 0x00]),
            want: Some("InvalidMessagePack"),
            path: None,
        },
        Case1 {
            name: "a required field missing",
            spec: fields,
            family: "deploy",
            version: V2,
            frame: send(
                Mp::message(
                    "KillExecutor",
                    vec![
                        ("masterUrl", Mp::s("spark://10.0.0.100:7077")),
                        ("appId", Mp::s("app-1")),
                    ],
                )
                .fields_at(),
            ),
            want: Some("InvalidFields"),
            path: Some(""),
        },
        Case1 {
            name: "a field given twice",
            spec: fields,
            family: "deploy",
            version: V2,
            frame: send(Mp::Map(vec![(
                Mp::s("KillExecutor"),
                Mp::Map(vec![
                    (Mp::s("masterUrl"), Mp::s("spark://10.0.0.100:7077")),
                    (Mp::s("appId"), Mp::s("app-1")),
                    (Mp::s("execId"), Mp::Int(1)),
                    (Mp::s("execId").at(), Mp::Int(1)),
                ]),
            )])),
            want: Some("InvalidFields"),
            path: Some(""),
        },
        Case1 {
            name: "fields in another order than the definition's",
            spec: fields,
            family: "deploy",
            version: V2,
            frame: send(Mp::message(
                "KillExecutor",
                vec![
                    ("execId", Mp::Int(1)),
                    ("appId", Mp::s("app-1")),
                    ("masterUrl", Mp::s("spark://10.0.0.100:7077")),
                ],
            )),
            want: None,
            path: None,
        },
        Case1 {
            name: "option fields missing read as nil",
            spec: fields,
            family: "deploy",
            version: V2,
            frame: changed(Mp::s("RUNNING")),
            want: None,
            path: None,
        },
        Case1 {
            name: "an unknown enum value",
            spec: layout,
            family: "deploy",
            version: V2,
            frame: changed(Mp::s("SLEEPING").at()),
            want: Some("InvalidFields"),
            path: Some("state"),
        },
        Case1 {
            name: "an integer that does not fit i32",
            spec: layout,
            family: "deploy",
            version: V2,
            frame: kill(Mp::Int(1 << 31).at()),
            want: Some("InvalidFields"),
            path: Some("execId"),
        },
        Case1 {
            name: "an integer in a wider form than needed (encoders use the shortest)",
            spec: layout,
            family: "deploy",
            version: V2,
            frame: kill(Mp::Raw(vec![0xd3, 0, 0, 0, 0, 0, 0, 0, 5])),
            want: None,
            path: None,
        },
        Case1 {
            name: "bytes as an array of integers",
            spec: layout,
            family: "coarse",
            version: V2,
            frame: task(Mp::Arr(vec![Mp::Int(1), Mp::Int(2)]).at()),
            want: Some("InvalidFields"),
            path: Some("data"),
        },
        Case1 {
            name: "bytes as a string",
            spec: layout,
            family: "coarse",
            version: V2,
            frame: task(Mp::s("0102").at()),
            want: Some("InvalidFields"),
            path: Some("data"),
        },
        Case1 {
            name: "a float that is not finite",
            spec: layout,
            family: "coarse",
            version: V2,
            frame: cpus(Mp::F64(f64::NAN).at()),
            want: Some("InvalidFields"),
            path: Some("resourceProfileToTotalExecs[0].profile.taskResources[\"cpus\"].amount"),
        },
        Case1 {
            name: "a float 32 is accepted (encoders write float 64)",
            spec: layout,
            family: "coarse",
            version: V2,
            frame: cpus(Mp::Raw(vec![0xca, 0x3f, 0x00, 0x00, 0x00])),
            want: None,
            path: None,
        },
    ];
    cases.extend(vec![
        Case1 {
            name: "64 nested containers, the envelope counted: accepted",
            spec: deep,
            family: "coarse",
            version: V2,
            frame: nested(61),
            want: None,
            path: None,
        },
        Case1 {
            name: "65 nested containers, the envelope counted: refused",
            spec: deep,
            family: "coarse",
            version: V2,
            frame: nested(62),
            want: Some("TooDeep"),
            path: None,
        },
        Case1 {
            name: "64 nested containers, the innermost an empty array: accepted",
            spec: deep,
            family: "coarse",
            version: V2,
            frame: nested_around(60, Mp::Arr(Vec::new())),
            want: None,
            path: None,
        },
        Case1 {
            name: "65 nested containers, the innermost an empty array: refused (an empty container is a level)",
            spec: deep,
            family: "coarse",
            version: V2,
            frame: nested_around(61, Mp::Arr(Vec::new())),
            want: Some("TooDeep"),
            path: None,
        },
        Case1 {
            name: "65 nested containers, the innermost an empty map: refused",
            spec: deep,
            family: "coarse",
            version: V2,
            frame: nested_around(61, Mp::Map(Vec::new())),
            want: Some("TooDeep"),
            path: None,
        },
        Case1 {
            name: "too deep wins over an unknown message (the whole frame is scanned first)",
            spec: prec,
            family: "coarse",
            version: V2,
            frame: {
                let mut v = Mp::Int(0);
                for _ in 0..62 {
                    v = Mp::Arr(vec![v]);
                }
                send(Mp::message("NoSuchMessage", vec![("x", v)]))
            },
            want: Some("TooDeep"),
            path: None,
        },
        Case1 {
            name: "trailing bytes win over an unknown message",
            spec: prec,
            family: "coarse",
            version: V2,
            frame: Mp::Raw({
                let mut bytes = Vec::new();
                send(Mp::message("NoSuchMessage", vec![])).write(&mut bytes);
                bytes.push(0xc0);
                bytes
            }),
            want: Some("TrailingBytes"),
            path: None,
        },
        Case1 {
            name: "an envelope that is not an array",
            spec: shape,
            family: "coarse",
            version: V2,
            frame: Mp::Map(vec![(Mp::Int(0), Mp::message("StopExecutor", vec![]))]),
            want: Some("BadEnvelope"),
            path: None,
        },
        Case1 {
            name: "an envelope tag that is not an integer",
            spec: shape,
            family: "coarse",
            version: V2,
            frame: Mp::Arr(vec![Mp::s("send"), Mp::message("StopExecutor", vec![])]),
            want: Some("BadEnvelope"),
            path: None,
        },
        Case1 {
            name: "an ask id that is negative",
            spec: shape,
            family: "coarse",
            version: V2,
            frame: Mp::Arr(vec![
                Mp::Int(1),
                Mp::Int(-1),
                Mp::message(
                    "RetrieveSparkAppConfig",
                    vec![("resourceProfileId", Mp::Int(0))],
                ),
            ]),
            want: Some("BadEnvelope"),
            path: None,
        },
        Case1 {
            name: "a send of the wrong length",
            spec: shape,
            family: "coarse",
            version: V2,
            frame: Mp::Arr(vec![
                Mp::Int(0),
                Mp::message("StopExecutor", vec![]),
                Mp::Nil,
            ]),
            want: Some("BadEnvelope"),
            path: None,
        },
        Case1 {
            name: "a message that is not a map",
            spec: shape,
            family: "coarse",
            version: V2,
            frame: send(Mp::s("StopExecutor")),
            want: Some("BadEnvelope"),
            path: None,
        },
        Case1 {
            name: "a message map of two entries",
            spec: shape,
            family: "coarse",
            version: V2,
            frame: send(Mp::Map(vec![
                (Mp::s("StopExecutor"), Mp::Map(vec![])),
                (Mp::s("StopExecutor"), Mp::Map(vec![])),
            ])),
            want: Some("BadEnvelope"),
            path: None,
        },
        Case1 {
            name: "a message name that is not a string",
            spec: shape,
            family: "coarse",
            version: V2,
            frame: send(Mp::Map(vec![(Mp::Int(1), Mp::Map(vec![]))])),
            want: Some("BadEnvelope"),
            path: None,
        },
        Case1 {
            name: "unknown message wins over everything in its fields",
            spec: prec,
            family: "coarse",
            version: V1,
            frame: send(fields_array("NoSuchMessage")),
            want: Some("UnknownMessage"),
            path: None,
        },
        Case1 {
            name: "a message of the other family is unknown",
            spec: prec,
            family: "coarse",
            version: V2,
            frame: send(Mp::message("Heartbeat", vec![])),
            want: Some("UnknownMessage"),
            path: None,
        },
        Case1 {
            name: "local wins over not in version: a version 2 local message read as version 1",
            spec: prec,
            family: "coarse",
            version: V1,
            frame: send(Mp::message(
                "DecommissionExecutorsOnHost",
                vec![("host", Mp::s("h"))],
            )),
            want: Some("LocalMessage"),
            path: None,
        },
        Case1 {
            name: "local wins over invalid fields",
            spec: prec,
            family: "coarse",
            version: V2,
            frame: send(fields_array("Shutdown")),
            want: Some("LocalMessage"),
            path: None,
        },
        Case1 {
            name: "not in version wins over invalid fields",
            spec: prec,
            family: "coarse",
            version: V1,
            frame: send(fields_array("DecommissionExecutor")),
            want: Some("NotInVersion"),
            path: None,
        },
        Case1 {
            name: "the same fields in a version that has the message: invalid fields",
            spec: prec,
            family: "coarse",
            version: V2,
            frame: send(fields_array("DecommissionExecutor").fields_at()),
            want: Some("InvalidFields"),
            path: Some(""),
        },
        Case1 {
            name: "an unknown field is skipped without being examined",
            spec: other,
            family: "coarse",
            version: V2,
            frame: send(Mp::message(
                "StopExecutor",
                vec![(
                    "x",
                    Mp::Map(vec![
                        (Mp::s("b"), Mp::Int(1)),
                        (Mp::s("a"), Mp::Arr(vec![Mp::Nil])),
                        (Mp::s("a"), Mp::Bin(vec![0xc1])),
                    ]),
                )],
            )),
            want: None,
            path: None,
        },
        Case1 {
            name:
                "a version 2 field read in version 1 is an unknown key: skipped, whatever its value",
            spec: other,
            family: "deploy",
            version: V1,
            frame: send(launch_v1.with_field("rpId", Mp::s("not an i32"))),
            want: None,
            path: None,
        },
        Case1 {
            name:
                "a version 1 field read in version 2 is an unknown key: skipped, whatever its value",
            spec: other,
            family: "deploy",
            version: V2,
            frame: send(updated_v2.with_field("workerLost", Mp::Int(3))),
            want: None,
            path: None,
        },
        Case1 {
            name: "map keys ascending by their UTF-8 bytes (uppercase first)",
            spec: maps,
            family: "deploy",
            version: V2,
            frame: send(
                worker
                    .clone()
                    .with_field("resources", str_map(&["GPU", "fpga", "gpu"])),
            ),
            want: None,
            path: None,
        },
        Case1 {
            name: "a map key given twice",
            spec: maps,
            family: "deploy",
            version: V2,
            frame: send(
                worker
                    .clone()
                    .with_field("resources", str_map(&["gpu", "gpu"]).key_at(1)),
            ),
            want: Some("InvalidFields"),
            path: Some("resources"),
        },
        Case1 {
            name: "map keys out of order",
            spec: maps,
            family: "deploy",
            version: V2,
            frame: send(
                worker
                    .clone()
                    .with_field("resources", str_map(&["gpu", "fpga"]).key_at(1)),
            ),
            want: Some("InvalidFields"),
            path: Some("resources"),
        },
        Case1 {
            name: "integer map keys ascending by value",
            spec: maps,
            family: "coarse",
            version: V2,
            frame: ask(request.clone().with_field(
                "numLocalityAwareTasksPerResourceProfileId",
                int_map(&[-1, 2, 10]),
            )),
            want: None,
            path: None,
        },
        Case1 {
            name: "integer map keys out of order",
            spec: maps,
            family: "coarse",
            version: V2,
            frame: ask(request.clone().with_field(
                "numLocalityAwareTasksPerResourceProfileId",
                int_map(&[10, 2]).key_at(1),
            )),
            want: Some("InvalidFields"),
            path: Some("numLocalityAwareTasksPerResourceProfileId"),
        },
        Case1 {
            name: "keys out of order in a map inside a map",
            spec: maps,
            family: "coarse",
            version: V2,
            frame: ask(request
                .clone()
                .with_field(
                    "hostToLocalTaskCount",
                    Mp::Map(vec![(
                        Mp::Int(0),
                        Mp::Map(vec![
                            (Mp::s("b"), Mp::Int(1)),
                            (Mp::s("a").at(), Mp::Int(1)),
                        ]),
                    )]),
                )),
            want: Some("InvalidFields"),
            path: Some("hostToLocalTaskCount[0]"),
        },
        Case1 {
            name: "a set distinct and ascending",
            spec: sets,
            family: "coarse",
            version: V2,
            frame: ask(request
                .clone()
                .with_field("excludedNodes", strs(&["host-a", "host-b"]))),
            want: None,
            path: None,
        },
        Case1 {
            name: "a set element given twice",
            spec: sets,
            family: "coarse",
            version: V2,
            frame: ask(request
                .clone()
                .with_field("excludedNodes", strs(&["host-a", "host-a"]).elem_at(1))),
            want: Some("InvalidFields"),
            path: Some("excludedNodes"),
        },
        Case1 {
            name: "set elements out of order",
            spec: sets,
            family: "coarse",
            version: V2,
            frame: ask(request.with_field("excludedNodes", strs(&["host-b", "host-a"]).elem_at(1))),
            want: Some("InvalidFields"),
            path: Some("excludedNodes"),
        },
        Case1 {
            name: "set elements out of order in version 1",
            spec: sets,
            family: "coarse",
            version: V1,
            frame: ask(request_v1.with_field("nodeBlacklist", strs(&["host-b", "host-a"]).elem_at(1))),
            want: Some("InvalidFields"),
            path: Some("nodeBlacklist"),
        },
    ]);
    cases.extend(located_cases(def)?);
    let mut out = Vec::new();
    for case in cases {
        let (frame, mark) = case.frame.frame();
        let (error, message, encodes, at) = match case.family {
            "deploy" => outcome::<DeployMessage>(&frame, case.version)?,
            _ => outcome::<CoarseMessage>(&frame, case.version)?,
        };
        if error.as_deref() != case.want {
            return Err(Error::BadEnvelope(format!(
                "decoder vector {:?}: SPEC.md says {:?}, the decoder gives {:?}",
                case.name, case.want, error
            )));
        }
        // SPEC §8.2: an `InvalidFields` vector names its path and marks its offending item.
        let spec_at = match (case.want, case.path, mark) {
            (Some("InvalidFields"), Some(path), Some(mark)) => Some((path.to_string(), mark as u64)),
            (Some("InvalidFields"), _, _) => {
                return Err(Error::BadEnvelope(format!(
                    "decoder vector {:?}: an InvalidFields vector gives its path and marks its offending item",
                    case.name
                )))
            }
            _ => None,
        };
        if at != spec_at {
            return Err(Error::BadEnvelope(format!(
                "decoder vector {:?}: SPEC §8.2 places the fault at {:?}, the decoder at {:?}",
                case.name, spec_at, at
            )));
        }
        let frame_hex = to_hex(&frame);
        out.push(DecoderVector {
            name: case.name.to_string(),
            spec: case.spec.to_string(),
            family: case.family.to_string(),
            version: case.version.number(),
            frame_hex,
            error,
            message,
            encodes_hex: encodes,
            path: at.as_ref().map(|(p, _)| p.clone()),
            offset: at.map(|(_, o)| o),
        });
    }
    Ok(out)
}

/// Checks one decoder vector against the decoder: the named error, or the message and the frame
/// an encoder writes for it. Returns what went wrong.
pub fn check_decoder_vector(v: &DecoderVector) -> Result<(), String> {
    match v.family.as_str() {
        "deploy" => check_as::<DeployMessage>(v),
        "coarse" => check_as::<CoarseMessage>(v),
        other => Err(format!("unknown family {other:?}")),
    }
}

fn check_as<F: Family>(v: &DecoderVector) -> Result<(), String> {
    let version = Version::from_number(u64::from(v.version))
        .ok_or_else(|| format!("unknown version {}", v.version))?;
    let frame = crate::messages::from_hex(&v.frame_hex).ok_or("frame_hex is not hex")?;
    let got = decode_frame::<F>(&Bytes::from(frame), version);
    match (&v.error, got) {
        (Some(want), Err(e)) if error_kind(&e) == want => {
            let at = located(&e);
            let want_at = v.path.clone().zip(v.offset);
            if at == want_at {
                Ok(())
            } else {
                Err(format!("{want} located at {at:?}, not {want_at:?}"))
            }
        }
        (None, Ok(env)) => {
            let want = v
                .message
                .as_ref()
                .ok_or("a valid vector gives its message")?;
            let want: F = value_from_json(want, version).map_err(|e| e.to_string())?;
            if env.message() != Some(&want) {
                return Err(format!("decodes to {:?}, not {want:?}", env.message()));
            }
            let again = to_hex(&encode_frame(&env, version).map_err(|e| e.to_string())?);
            match &v.encodes_hex {
                Some(hex) if *hex == again => Ok(()),
                other => Err(format!("encodes to {again}, not {other:?}")),
            }
        }
        (want, got) => Err(format!("wanted {want:?}, got {got:?}")),
    }
}

/// One conversion vector: a message's value in version 2 and in version 1 (SPEC.md §5.1).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ConversionVector {
    /// `deploy` or `coarse`.
    pub family: String,
    /// The message.
    pub message: String,
    /// `full`, `minimal`, or what an extra case shows.
    pub case: String,
    /// The message in version 2, `{Name: {fields}}`.
    pub v2: Value,
    /// What an encoder writes for it in version 1 (the `fromV2` expressions applied).
    pub v1: Value,
    /// What a decoder reads from that version 1 value, in version 2 (the `default` expressions
    /// applied): `v2` as far as version 1 can carry it.
    pub v2_from_v1: Value,
}

fn conversion_of<F: Family>(case: &str, v2: &Value) -> Result<ConversionVector, Error> {
    let json = |m: &F, v: Version| {
        serde_json::to_value(Versioned(m, v)).map_err(|e| Error::Encode {
            name: m.name().to_string(),
            detail: e.to_string(),
        })
    };
    let m: F = value_from_json(v2, Version::V2)?;
    let v1 = json(&m, Version::V1)?;
    let back: F = value_from_json(&v1, Version::V1)?;
    Ok(ConversionVector {
        family: F::FAMILY.to_string(),
        message: m.name().to_string(),
        case: case.to_string(),
        v2: json(&m, Version::V2)?,
        v1,
        v2_from_v1: json(&back, Version::V2)?,
    })
}

/// Every message whose version 1 and version 2 values differ, in its `full` and `minimal`
/// samples, and extra cases for the conversions that sum or split collections.
pub fn conversion_vectors(def: &Definition) -> Result<Vec<ConversionVector>, Error> {
    let mut out = Vec::new();
    for mv in super::message_vectors(def)? {
        for case in ["full", "minimal"] {
            let of = |v: u8| {
                mv.vectors
                    .iter()
                    .find(|x| x.case == case && x.version == v)
                    .map(|x| x.value.clone())
            };
            let (Some(v1), Some(v2)) = (of(1), of(2)) else {
                continue;
            };
            if v1 == v2 {
                continue;
            }
            out.push(match mv.family.as_str() {
                "deploy" => conversion_of::<DeployMessage>(case, &v2)?,
                _ => conversion_of::<CoarseMessage>(case, &v2)?,
            });
        }
    }
    let profile =
        |id: i32| serde_json::json!({"id": id, "executorResources": {}, "taskResources": {}});
    out.push(conversion_of::<CoarseMessage>(
        "two profiles: totals and locality summed, hosts merged",
        &serde_json::json!({"RequestExecutors": {
            "resourceProfileToTotalExecs": [{"profile": profile(0), "total": 2}, {"profile": profile(1), "total": 3}],
            "numLocalityAwareTasksPerResourceProfileId": {"0": 1, "1": 2},
            "hostToLocalTaskCount": {"0": {"host-a": 1, "host-b": 2}, "1": {"host-a": 4}},
            "excludedNodes": ["host-c", "host-d"]
        }}),
    )?);
    out.push(conversion_of::<CoarseMessage>(
        "fractional amounts become whole units",
        &serde_json::json!({"StatusUpdate": {
            "executorId": "1", "taskId": 4, "state": "FINISHED", "data": "",
            "taskCpus": 2, "resources": {"gpu": {"0": 10_000_000_000_000_000i64, "1": 5_000_000_000_000_000i64}}
        }}),
    )?);
    out.push(conversion_of::<DeployMessage>(
        "a worker lost: the host set; version 1 keeps only that it was lost",
        &serde_json::json!({"ExecutorUpdated": {
            "id": 3, "state": "LOST", "message": "worker lost", "exitStatus": null,
            "workerHost": "10.0.0.7"
        }}),
    )?);
    Ok(out)
}

/// The vectors of SPEC §8.2: where an `InvalidFields` fault lies, as a close envelope reports it
/// (its path, and the offset where the offending item starts), for each kind of fault, inside
/// messages, replies, failures and close envelopes; and strings sent as `bin` (§4.1).
fn located_cases(def: &Definition) -> Result<Vec<Case1>, Error> {
    use Version::V2;
    let at = "§8.2 location";
    let kill =
        |fields: Vec<(Mp, Mp)>| send(Mp::Map(vec![(Mp::s("KillExecutor"), Mp::Map(fields))]));
    let master = || (Mp::s("masterUrl"), Mp::s("spark://10.0.0.100:7077"));
    let app = || (Mp::s("appId"), Mp::s("app-1"));
    let worker = sample::<DeployMessage>(def, "RegisterWorker", V2)?;
    let request = sample::<CoarseMessage>(def, "RequestExecutors", V2)?
        .with_field("numLocalityAwareTasksPerResourceProfileId", Mp::Map(vec![]))
        .with_field("hostToLocalTaskCount", Mp::Map(vec![]));
    let config = sample::<CoarseMessage>(def, "SparkAppConfig", V2)?;
    let reply = |message: Mp| {
        Mp::Arr(vec![
            Mp::Int(2),
            Mp::Int(1),
            Mp::Map(vec![(Mp::s("message"), message)]),
        ])
    };
    let remove = |reason: Mp| {
        send(Mp::message(
            "RemoveExecutor",
            vec![("executorId", Mp::s("1")), ("reason", reason)],
        ))
    };
    let close = |reason: Mp| Mp::Arr(vec![Mp::Int(4), reason]);
    let reason = |kind: Mp, offset: Mp| {
        Mp::Map(vec![
            (Mp::s("kind"), kind),
            (Mp::s("message"), Mp::s("m")),
            (Mp::s("path"), Mp::s("")),
            (Mp::s("offset"), offset),
        ])
    };
    let case = |name, family, frame, path| Case1 {
        name,
        spec: at,
        family,
        version: V2,
        frame,
        want: Some("InvalidFields"),
        path: Some(path),
    };
    Ok(vec![
        case(
            "a string sent as bin, even holding UTF-8: refused at the value",
            "deploy",
            kill(vec![
                master(),
                (Mp::s("appId"), Mp::Bin(b"app-1".to_vec()).at()),
                (Mp::s("execId"), Mp::Int(1)),
            ]),
            "appId",
        ),
        case(
            "a string map key sent as bin: refused at the key, the path names the map",
            "deploy",
            send(worker.clone().with_field(
                "resources",
                Mp::Map(vec![(Mp::Bin(b"gpu".to_vec()), resource("gpu"))]).key_at(0),
            )),
            "resources",
        ),
        case(
            "a field name sent as bin: refused at the key, the path names the field map",
            "deploy",
            kill(vec![
                master(),
                app(),
                (Mp::Bin(b"execId".to_vec()).at(), Mp::Int(1)),
            ]),
            "",
        ),
        case(
            "a field name that is an integer: refused at the key",
            "deploy",
            kill(vec![
                master(),
                app(),
                (Mp::s("execId"), Mp::Int(1)),
                (Mp::Int(2).at(), Mp::Int(1)),
            ]),
            "",
        ),
        case(
            "a struct written as an array: refused at the array",
            "deploy",
            send(Mp::message(
                "Heartbeat",
                vec![
                    ("workerId", Mp::s("worker-1")),
                    ("worker", Mp::Arr(vec![Mp::Nil, Mp::s("Worker")]).at()),
                ],
            )),
            "worker",
        ),
        case(
            "a union written as a map of two entries: refused at the union",
            "coarse",
            remove(
                Mp::Map(vec![
                    (Mp::s("ExecutorKilled"), Mp::Map(vec![])),
                    (Mp::s("LossReasonPending"), Mp::Map(vec![])),
                ])
                .at(),
            ),
            "reason",
        ),
        case(
            "a union variant named by an integer: refused at the name, the path names the union",
            "coarse",
            remove(Mp::Map(vec![(Mp::Int(0), Mp::Map(vec![]))]).key_at(0)),
            "reason",
        ),
        case(
            "an unknown union variant: refused at the name",
            "coarse",
            remove(Mp::Map(vec![(Mp::s("NoSuchReason"), Mp::Map(vec![]))]).key_at(0)),
            "reason",
        ),
        case(
            "a field of a union's variant: the variant's name is no step of the path",
            "coarse",
            remove(Mp::Map(vec![(
                Mp::s("ExecutorExited"),
                Mp::Map(vec![
                    (Mp::s("exitCode"), Mp::s("137").at()),
                    (Mp::s("exitCausedByApp"), Mp::Bool(false)),
                    (Mp::s("reason"), Mp::s("r")),
                ]),
            )])),
            "reason.exitCode",
        ),
        case(
            "a tuple of the wrong length, in a reply's message: refused at the tuple",
            "coarse",
            reply(config.clone().with_field(
                "sparkProperties",
                Mp::Arr(vec![
                    Mp::Arr(vec![Mp::s("a"), Mp::s("b")]),
                    Mp::Arr(vec![Mp::s("c"), Mp::s("d"), Mp::s("e")]).at(),
                ]),
            )),
            "sparkProperties[1]",
        ),
        case(
            "a tuple's element of the wrong type: indexes in brackets",
            "coarse",
            reply(config.with_field(
                "sparkProperties",
                Mp::Arr(vec![Mp::Arr(vec![Mp::s("a"), Mp::Int(1).at()])]),
            )),
            "sparkProperties[0][1]",
        ),
        case(
            "a string key with a quote, a backslash, a tab and non-ASCII, escaped in the path",
            "deploy",
            send(worker.with_field(
                "resources",
                Mp::Map(vec![(Mp::s("a\"b\\c\té"), Mp::Int(1).at())]),
            )),
            "resources[\"a\\\"b\\\\c\\u0009é\"]",
        ),
        case(
            "an integer map key in the path, unquoted",
            "coarse",
            ask(request.with_field(
                "numLocalityAwareTasksPerResourceProfileId",
                Mp::Map(vec![(Mp::Int(5), Mp::s("x").at())]),
            )),
            "numLocalityAwareTasksPerResourceProfileId[5]",
        ),
        case(
            "a reply's value of the wrong type: the path is relative to the reply's value",
            "coarse",
            Mp::Arr(vec![
                Mp::Int(2),
                Mp::Int(1),
                Mp::Map(vec![(Mp::s("bool"), Mp::Int(1).at())]),
            ]),
            "",
        ),
        case(
            "a failure's error that is not a map: the path is relative to the error",
            "coarse",
            Mp::Arr(vec![Mp::Int(3), Mp::Int(1), Mp::Nil.at()]),
            "",
        ),
        case(
            "a failure's class name of the wrong type",
            "coarse",
            Mp::Arr(vec![
                Mp::Int(3),
                Mp::Int(1),
                Mp::Map(vec![
                    (Mp::s("className"), Mp::Int(1).at()),
                    (Mp::s("message"), Mp::s("m")),
                ]),
            ]),
            "className",
        ),
        case(
            "a close reason that is not a map: invalid fields, not a bad envelope",
            "coarse",
            close(Mp::Nil.at()),
            "",
        ),
        case(
            "a close reason written as an array",
            "coarse",
            close(Mp::Arr(vec![Mp::s("Idle"), Mp::s("m")]).at()),
            "",
        ),
        case(
            "a close reason whose offset is negative",
            "coarse",
            close(reason(Mp::s("InvalidFields"), Mp::Int(-1).at())),
            "offset",
        ),
        case(
            "a close reason whose kind is not a string",
            "coarse",
            close(reason(Mp::Int(7).at(), Mp::Int(0))),
            "kind",
        ),
    ])
}
