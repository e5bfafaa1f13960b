//! Spark-native golden vectors (`protocol/vectors/spark/SPARK.json`): for each catalogued message
//! that crosses Spark's wire, the Java stream Spark sent for it (the first one in the captures of
//! `tests/data/spark/SPARK/`) and its typed value; for a message no capture holds, the stream
//! sparkwire writes for the definition's sample value, marked `built`. Decoding a vector's stream
//! gives its value; encoding its value gives its stream (with the stream's own objects for what a
//! typed value does not hold, `fromValueAlone` says whether it needs them).
//!
//! Written by `sparkwire spec vectors` with the other golden vectors and checked fresh in CI;
//! `check` verifies a file's every vector both ways.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::encode;
use super::java;
use super::map::{classify, reply_value, Classified, ReplyValue, Typed};
use super::release::Release;
use crate::definition::{Definition, MessageKind};
use crate::messages::{to_hex, CoarseMessage, DeployMessage, Family, Version, Versioned};
use crate::wire::vectors::{sample_message, Case};

/// One vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SparkVector {
    /// `deploy.RegisterWorker`, `reply.bool`, `reply.i32`, `CheckExistence`.
    pub message: String,
    /// The Java class of the stream's object.
    pub class: String,
    /// `capture NAME` (the capture it was taken from) or `built`.
    pub source: String,
    /// The typed value, as traces and vectors write messages (`{"Name": {fields…}}`), or the
    /// reply's Boolean or integer, or the checked endpoint's name.
    pub value: Value,
    /// The Java serialization stream, in hex.
    pub stream_hex: String,
    /// Whether the value alone (without the stream's own objects) encodes to the stream.
    pub from_value_alone: bool,
}

/// A version's vectors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SparkVectors {
    /// The Spark release.
    pub spark: String,
    /// sparkwire's protocol version for it.
    pub protocol_version: u8,
    /// What the file is.
    pub note: String,
    /// Every vector, by message name.
    pub vectors: Vec<SparkVector>,
    /// Messages that cross Spark's wire but have no vector, with the reason.
    pub not_written: BTreeMap<String, String>,
}

fn typed_json(m: &Typed, version: Version) -> Result<Value, String> {
    match m {
        Typed::Deploy(d) => serde_json::to_value(Versioned(d, version)),
        Typed::Coarse(c) => serde_json::to_value(Versioned(c, version)),
    }
    .map_err(|e| e.to_string())
}

/// What a stream holds, for a vector: its name, class, value, and the stream written again
/// with and without its own objects.
type Described = (String, String, Value, Vec<u8>, Vec<u8>);

fn describe(stream: &[u8], release: &'static Release) -> Result<Option<Described>, String> {
    let version = release.version();
    let g = java::parse(stream).map_err(|e| e.to_string())?;
    let root = g.root_node();
    let class = root.class().unwrap_or_default().to_string();
    let e = |e: encode::EncodeError| e.to_string();
    if class == "org.apache.spark.rpc.netty.RpcEndpointVerifier$CheckExistence" {
        let name = java::str_field(root, "name").map_err(|e| e.to_string())?;
        let again = encode::check_existence_stream(&name, release).map_err(e)?;
        return Ok(Some((
            "CheckExistence".into(),
            class,
            Value::String(name),
            again.clone(),
            again,
        )));
    }
    if let Classified::Message(m) = classify(root) {
        let value = typed_json(&m, version)?;
        let with = encode::message_stream(&m, release, Some(&g)).map_err(e)?;
        let alone = encode::message_stream(&m, release, None).unwrap_or_default();
        let name = format!("{}.{}", m.family(), m.name());
        return Ok(Some((name, class, value, with, alone)));
    }
    match reply_value(root) {
        Ok(ReplyValue::Bool(b)) => {
            let again = encode::bool_stream(b, release).map_err(e)?;
            Ok(Some((
                "reply.bool".into(),
                class,
                Value::Bool(b),
                again.clone(),
                again,
            )))
        }
        Ok(ReplyValue::Int(i)) => {
            let again = encode::int_stream(i, release).map_err(e)?;
            Ok(Some((
                "reply.i32".into(),
                class,
                Value::from(i),
                again.clone(),
                again,
            )))
        }
        _ => Ok(None),
    }
}

/// The vectors of Spark `release` from the captures in `captures` (a directory of `*.pcap`;
/// `None`: no capture, every vector written from the definition's sample values).
pub fn render_vectors(
    release: &'static Release,
    captures: Option<&Path>,
) -> Result<SparkVectors, String> {
    let version = release.version();
    let mut paths: Vec<_> = match captures {
        Some(dir) => std::fs::read_dir(dir)
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
            .collect(),
        None => Vec::new(),
    };
    paths.sort();
    let mut vectors: BTreeMap<String, SparkVector> = BTreeMap::new();
    for path in &paths {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let file = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
        let streams = super::decode::java_streams(file).map_err(|e| format!("{name}: {e}"))?;
        for stream in streams {
            let Some((message, class, value, with, alone)) =
                describe(&stream, release).map_err(|e| format!("{name}: {e}"))?
            else {
                continue;
            };
            if vectors.contains_key(&message) {
                continue;
            }
            if with != stream.as_ref() {
                return Err(format!(
                    "{name}: {message} does not re-encode byte for byte"
                ));
            }
            vectors.insert(
                message.clone(),
                SparkVector {
                    message,
                    class,
                    source: format!("capture {name}"),
                    value,
                    stream_hex: to_hex(&stream),
                    from_value_alone: alone == stream.as_ref(),
                },
            );
        }
    }
    let mut not_written = BTreeMap::new();
    let def = Definition::builtin();
    for msg in &def.messages {
        if !msg.exists_in(version) || msg.kind_in(version) == MessageKind::Local {
            continue;
        }
        let key = format!("{}.{}", msg.family, msg.name);
        if vectors.contains_key(&key) {
            continue;
        }
        let prefix = if msg.family == DeployMessage::FAMILY {
            super::map::DEPLOY_PREFIX
        } else {
            super::map::COARSE_PREFIX
        };
        let class = format!("{prefix}{}", msg.name);
        if release.table().get(&class).is_none()
            && release.table().get(&format!("{class}$")).is_none()
        {
            not_written.insert(
                key,
                format!("Spark {release} has no {class}: the message is not in this release"),
            );
            continue;
        }
        let typed = if msg.family == DeployMessage::FAMILY {
            sample_message::<DeployMessage>(def, msg, Case::Full).map(Typed::Deploy)
        } else {
            sample_message::<CoarseMessage>(def, msg, Case::Full).map(Typed::Coarse)
        };
        let typed = match typed {
            Ok(t) => t,
            Err(e) => {
                not_written.insert(key, e.to_string());
                continue;
            }
        };
        match encode::message_stream(&typed, release, None) {
            Ok(stream) => {
                let g = java::parse(&stream).map_err(|e| format!("{key}: {e}"))?;
                let class = g.root_node().class().unwrap_or_default().to_string();
                // What the release's forms keep of the sample value (a release without a
                // field drops it): the value its stream reads back as.
                let kept = match classify(g.root_node()) {
                    Classified::Message(m) => m,
                    other => return Err(format!("{key}: written, it reads back as {other:?}")),
                };
                vectors.insert(
                    key.clone(),
                    SparkVector {
                        message: key,
                        class,
                        source: "built".into(),
                        value: typed_json(&kept, version)?,
                        stream_hex: to_hex(&stream),
                        from_value_alone: true,
                    },
                );
            }
            Err(e) => {
                not_written.insert(key, e.to_string());
            }
        }
    }
    Ok(SparkVectors {
        spark: release.name().into(),
        protocol_version: version.number(),
        note: format!(
            "Spark {}'s own Java streams for sparkwire's typed messages: from the captures of \
             tests/data/spark/{}/ (source `capture …`), or written by sparkwire from the \
             definition's sample value with the class descriptors of Spark {} \
             (protocol/spark/releases.json; source `built`). Regenerate with `sparkwire spec \
             vectors`.",
            release.name(),
            release.name(),
            release.name(),
        ),
        vectors: vectors.into_values().collect(),
        not_written,
    })
}

/// Checks every vector of `v` both ways: its stream decodes to its value, and its value (with
/// the stream's own objects, or alone when `fromValueAlone`) encodes to its stream. Returns how
/// many were checked.
pub fn check_vectors(v: &SparkVectors) -> Result<usize, String> {
    let release = Release::named(&v.spark)
        .ok_or_else(|| format!("Spark {}: not a release sparkwire speaks", v.spark))?;
    if release.version().number() != v.protocol_version {
        return Err(format!(
            "Spark {} maps to protocol version {}, not {}",
            v.spark,
            release.version().number(),
            v.protocol_version
        ));
    }
    for vector in &v.vectors {
        let stream = crate::messages::from_hex(&vector.stream_hex)
            .ok_or_else(|| format!("{}: bad hex", vector.message))?;
        let Some((message, class, value, with, alone)) = describe(&stream, release)? else {
            return Err(format!("{}: the stream holds no message", vector.message));
        };
        let fail = |what: &str| Err(format!("{}: {what}", vector.message));
        if message != vector.message || class != vector.class {
            return fail(&format!("decodes as {message} ({class})"));
        }
        if value != vector.value {
            return fail("decodes to another value");
        }
        if with != stream {
            return fail("its value does not encode to its stream");
        }
        if vector.from_value_alone != (alone == stream) {
            return fail("fromValueAlone is wrong");
        }
    }
    Ok(v.vectors.len())
}

/// The text of a vectors file.
pub fn vectors_text(v: &SparkVectors) -> Result<String, String> {
    serde_json::to_string_pretty(v)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| e.to_string())
}
