//! The Wireshark dissector (`protocol/wireshark/sparkwire.lua`, written by `sparkwire spec
//! wireshark`) run by Debian's `tshark` on captures this test makes over loopback, and on the
//! real Spark captures of `../shared/spark-captures/`: every frame is dissected, and every
//! dissected message (name, fields, error kind) is the one the crate decodes from the same bytes.
//!
//! The test's captures come from a tap: a loopback relay between a client and a server that
//! records each read as it passes it on, written as a pcap (Ethernet, IPv4, TCP with sequence
//! numbers) by `pcap-file` and `etherparse`. Behind the tap are the reference master (a worker's
//! registration, a refused handshake, the authentication exchange with and without the right
//! secret) and a raw peer that takes every golden vector's frame in both families and versions
//! (`protocol/vectors/`), with the malformed frames of `envelope.json` and `decoder.json` and
//! the message frames with random bytes replaced or cut short (seeded, so failures reproduce).
//! One connection's bytes are cut into 61-byte segments, so that frames cross TCP segments, and
//! one ends with a prefix declaring more than the frame limit. Spark frames the captures lack
//! (an `RpcFailure`, a one-way message from a client-mode RpcEnv) are written by hand.
//!
//! Without `tshark` the test says it is skipped, except under CI (`CI=true`), where it fails.
#![cfg(all(feature = "cli", feature = "spark"))]

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use etherparse::PacketBuilder;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;
use serde_json::{json, Value};
use sparkwire::connection::{Connection, ConnectionConfig, Security};
use sparkwire::definition::{wireshark, Definition};
use sparkwire::messages::coarse::LaunchTask;
use sparkwire::messages::Payload;
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version, Versioned};
use sparkwire::reference::master::{Master, MasterConfig};
use sparkwire::spark::{block_transfer_class, parse_stream, RequestMessage};
use sparkwire::spark::{read_capture, TcpEvent};
use sparkwire::spark::{Frame, FrameDecoder};
use sparkwire::wire::handshake::{
    decode_answer, decode_hello, decode_proof, encode_hello, verify_server_proof, Answer, Hello,
    Role, Secret,
};
use sparkwire::wire::{
    decode_frame, decode_task, encode_frame, Envelope, Error, Reply, DEFAULT_MAX_FRAME_SIZE,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use common::{frame, listener, raw_client_handshake, raw_server_handshake, read_raw_frame, Rng};

/// The secret of the authenticated master.
const SECRET: &[u8] = b"correct horse battery staple";

// ---------------------------------------------------------------------------------------------
// tshark
// ---------------------------------------------------------------------------------------------

/// Debian's tshark, or `None` (skipped) when it is not installed outside CI.
fn tshark() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("tshark"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("tshark is not installed: scripts/test.sh (the test command .ci/run runs) installs Debian's tshark; CI must not skip the dissector's test");
        }
        eprintln!("skipped: tshark is not installed (scripts/test.sh installs it)");
    }
    found
}

/// A directory of this test's own under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("wireshark-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The dissector as the generator writes it now.
fn dissector(dir: &Path) -> PathBuf {
    let path = dir.join("sparkwire.lua");
    let text = wireshark::render(Definition::builtin()).expect("the dissector renders");
    std::fs::write(&path, text).expect("write the dissector");
    path
}

/// Runs `tshark -o tcp.try_heuristic_first:TRUE -2 -X lua_script:LUA -T json -r CAPTURE` and
/// returns its packets. tshark runs with a home of its own, so that a user's preferences or an
/// installed copy of the dissector (`~/.local/lib/wireshark/plugins/`) play no part. The
/// dissectors are heuristic, found on any port; a free port the tests are given may be one
/// Wireshark assigns to another protocol (44818 is EtherNet/IP's), whose dissector would take
/// the packets first unless heuristics are tried first.
fn dissect(tshark: &Path, lua: &Path, capture: &Path) -> Vec<Value> {
    dissect_with(tshark, lua, capture, &[])
}

/// [`dissect`] with more of tshark's options (`-d` for Decode As).
fn dissect_with(tshark: &Path, lua: &Path, capture: &Path, options: &[&str]) -> Vec<Value> {
    let home = capture.with_extension("home");
    std::fs::create_dir_all(&home).expect("tshark's home");
    let out = Command::new(tshark)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .args(options)
        .args(["-o", "tcp.try_heuristic_first:TRUE"])
        .arg("-2")
        .arg("-X")
        .arg(format!("lua_script:{}", lua.display()))
        .args(["-T", "json", "--no-duplicate-keys", "-r"])
        .arg(capture)
        .output()
        .expect("tshark runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tshark failed: {stderr}");
    assert!(
        !stderr.contains("Lua: Error") && !stderr.contains("lua_script"),
        "the dissector raised a Lua error: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(at) = stdout.find("Lua Error") {
        let end = stdout[at..].find('\n').map_or(stdout.len(), |e| at + e);
        panic!("the dissector raised a Lua error: {}", &stdout[at..end]);
    }
    serde_json::from_slice(&out.stdout).expect("tshark's JSON")
}

/// The value of `v`, or of every element when it is an array (`--no-duplicate-keys` merges
/// repeated keys into arrays).
fn each(v: Option<&Value>) -> Vec<&Value> {
    match v {
        None => Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(other) => vec![other],
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_string)
}

/// One packet of tshark's output: its number, TCP stream and ports, and its layers.
struct Packet<'a> {
    number: u64,
    src_port: u16,
    dst_port: u16,
    payload: u64,
    reassembled_in: bool,
    retransmission: bool,
    layers: &'a Value,
}

fn packets(json: &[Value]) -> Vec<Packet<'_>> {
    json.iter()
        .map(|p| {
            let layers = &p["_source"]["layers"];
            let num = |v: &Value| -> u64 {
                v.as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("a number: {v}"))
            };
            let tcp = &layers["tcp"];
            Packet {
                number: num(&layers["frame"]["frame.number"]),
                src_port: num(&tcp["tcp.srcport"]) as u16,
                dst_port: num(&tcp["tcp.dstport"]) as u16,
                payload: num(&tcp["tcp.len"]),
                reassembled_in: tcp.get("tcp.reassembled_in").is_some(),
                retransmission: tcp.to_string().contains("tcp.analysis.retransmission"),
                layers,
            }
        })
        .collect()
}

/// Packets carrying TCP payload that no dissector of ours took. Segments of a reassembled PDU
/// count as taken (their PDU is dissected in the packet that completes it), and so do TCP
/// retransmissions (their bytes were dissected when they first crossed).
fn undissected(packets: &[Packet<'_>]) -> Vec<u64> {
    packets
        .iter()
        .filter(|p| p.payload > 0 && !p.reassembled_in && !p.retransmission)
        .filter(|p| p.layers.get("sparkwire").is_none() && p.layers.get("sparkrpc").is_none())
        .map(|p| p.number)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The tap: a loopback relay that records what crosses it, and the pcap it writes
// ---------------------------------------------------------------------------------------------

/// One relayed connection: its ends as the client saw them, and the reads in order.
#[derive(Debug, Default, Clone)]
struct Recorded {
    client: Option<SocketAddrV4>,
    server: Option<SocketAddrV4>,
    /// (from the client, bytes), in the order the relay read them.
    reads: Vec<(bool, Vec<u8>)>,
    /// Cut every read into segments of at most this many bytes in the capture.
    segment: Option<usize>,
}

#[derive(Clone, Default)]
struct Tap {
    conns: Arc<Mutex<Vec<Recorded>>>,
    pumps: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(a) => panic!("loopback IPv4 expected, got {a}"),
    }
}

impl Tap {
    /// Relays every connection to `listen` on to `upstream`, recording both directions.
    /// `segment`: cut the connections' reads into segments of at most this many bytes.
    fn relay(
        &self,
        listen: TcpListener,
        upstream: SocketAddr,
        segment: Option<usize>,
    ) -> JoinHandle<()> {
        let tap = self.clone();
        let server = v4(listen.local_addr().expect("relay address"));
        tokio::spawn(async move {
            while let Ok((inbound, peer)) = listen.accept().await {
                let Ok(outbound) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let _ = inbound.set_nodelay(true);
                let _ = outbound.set_nodelay(true);
                let index = {
                    let mut conns = tap.conns.lock().expect("tap");
                    conns.push(Recorded {
                        client: Some(v4(peer)),
                        server: Some(server),
                        segment,
                        ..Recorded::default()
                    });
                    conns.len() - 1
                };
                let (ci, co) = inbound.into_split();
                let (si, so) = outbound.into_split();
                let a = tokio::spawn(pump(tap.conns.clone(), index, true, ci, so));
                let b = tokio::spawn(pump(tap.conns.clone(), index, false, si, co));
                let mut pumps = tap.pumps.lock().expect("tap");
                pumps.push(a);
                pumps.push(b);
            }
        })
    }

    /// Waits until every relayed connection has ended both ways, and returns them.
    async fn finish(&self) -> Vec<Recorded> {
        loop {
            let pumps: Vec<JoinHandle<()>> = std::mem::take(&mut *self.pumps.lock().expect("tap"));
            if pumps.is_empty() {
                break;
            }
            for p in pumps {
                p.await.expect("a pump ends");
            }
        }
        self.conns.lock().expect("tap").clone()
    }
}

async fn pump(
    conns: Arc<Mutex<Vec<Recorded>>>,
    index: usize,
    from_client: bool,
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        conns.lock().expect("tap")[index]
            .reads
            .push((from_client, buf[..n].to_vec()));
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// Writes `conns` as one pcap: each connection's SYN exchange, its reads as TCP segments with
/// their sequence and acknowledgement numbers, and FINs both ways.
fn write_pcap(path: &Path, conns: &[Recorded]) {
    let file = std::fs::File::create(path).expect("create the capture");
    let header = PcapHeader {
        datalink: DataLink::ETHERNET,
        ..PcapHeader::default()
    };
    let mut writer = PcapWriter::with_header(file, header).expect("pcap header");
    let mut time = Duration::from_secs(1_796_112_000);
    let mut write =
        |src: SocketAddrV4, dst: SocketAddrV4, seq: u32, ack: u32, flags: &str, payload: &[u8]| {
            let mut tcp = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
                .ipv4(src.ip().octets(), dst.ip().octets(), 64)
                .tcp(src.port(), dst.port(), seq, 65535);
            if flags.contains('S') {
                tcp = tcp.syn();
            }
            if flags.contains('A') {
                tcp = tcp.ack(ack);
            }
            if flags.contains('P') {
                tcp = tcp.psh();
            }
            if flags.contains('F') {
                tcp = tcp.fin();
            }
            let mut data = Vec::with_capacity(payload.len() + 54);
            tcp.write(&mut data, payload).expect("a TCP packet");
            time += Duration::from_micros(100);
            let packet = PcapPacket::new(time, data.len() as u32, &data);
            writer.write_packet(&packet).expect("write a packet");
        };
    for c in conns {
        let (client, server) = (c.client.expect("client"), c.server.expect("server"));
        let (mut cseq, mut sseq) = (1_000u32, 900_000u32);
        write(client, server, cseq, 0, "S", &[]);
        write(server, client, sseq, cseq + 1, "SA", &[]);
        cseq += 1;
        sseq += 1;
        write(client, server, cseq, sseq, "A", &[]);
        for (from_client, bytes) in &c.reads {
            let size = c.segment.unwrap_or(60_000).min(60_000);
            for piece in bytes.chunks(size) {
                if *from_client {
                    write(client, server, cseq, sseq, "PA", piece);
                    cseq = cseq.wrapping_add(piece.len() as u32);
                } else {
                    write(server, client, sseq, cseq, "PA", piece);
                    sseq = sseq.wrapping_add(piece.len() as u32);
                }
            }
        }
        write(client, server, cseq, sseq, "FA", &[]);
        write(server, client, sseq, cseq + 1, "FA", &[]);
        write(client, server, cseq + 1, sseq + 1, "A", &[]);
    }
}

// ---------------------------------------------------------------------------------------------
// What the crate decodes from a recorded connection
// ---------------------------------------------------------------------------------------------

/// One frame as the crate reads it, in the form the dissector is compared in.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Hello {
        role: String,
        id: String,
        versions: String,
        auth: bool,
    },
    Challenge {
        nonce: Vec<u8>,
        proof: Vec<u8>,
    },
    Proof {
        admin: bool,
    },
    Accepted {
        version: u64,
        role: String,
    },
    Refused {
        reason: String,
        message: String,
    },
    Envelope {
        form: String,
        id: Option<u64>,
        message: Option<String>,
        reply: Option<String>,
        json: Value,
        /// `LaunchTask.data` read as a `TaskDescription` (SPEC §10), when it is one.
        task: Option<Value>,
    },
    Error {
        kind: String,
    },
    /// A prefix declaring more than the frame limit: nothing after it is read.
    TooLarge {
        declared: u32,
    },
}

/// The error kind of SPEC §8, as the vectors name it.
fn kind_of(e: &Error) -> &'static str {
    match e {
        Error::InvalidMessagePack(_) => "InvalidMessagePack",
        Error::TooDeep { .. } => "TooDeep",
        Error::TrailingBytes { .. } => "TrailingBytes",
        Error::BadEnvelope(_) => "BadEnvelope",
        Error::UnknownMessage { .. } => "UnknownMessage",
        Error::NotInVersion { .. } => "NotInVersion",
        Error::LocalMessage { .. } => "LocalMessage",
        Error::InvalidFields { .. } => "InvalidFields",
        other => panic!("not a decoding error: {other}"),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// The crate's reading of an envelope frame, whole with its length prefix.
fn envelope<F: Family>(frame: &[u8], version: Version) -> Seen {
    let env = match decode_frame::<F>(&Bytes::copy_from_slice(frame), version) {
        Ok(env) => env,
        Err(e) => {
            return Seen::Error {
                kind: kind_of(&e).to_string(),
            }
        }
    };
    let message = |m: &F| serde_json::to_value(Versioned(m, version)).expect("readable JSON");
    let task = |json: &Value| {
        let data = json["LaunchTask"]["data"].as_str()?;
        let task = decode_task(&Bytes::from(unhex(data))).ok()?;
        Some(serde_json::to_value(&task).expect("readable JSON"))
    };
    let (form, id, name, reply, json) = match &env {
        Envelope::Send(m) => ("send", None, Some(m.name()), None, message(m)),
        Envelope::Ask { id, message: m } => ("ask", Some(*id), Some(m.name()), None, message(m)),
        Envelope::Failure { id, error } => (
            "failure",
            Some(*id),
            None,
            None,
            serde_json::to_value(error).expect("JSON"),
        ),
        Envelope::Close(reason) => (
            "close",
            None,
            None,
            None,
            serde_json::to_value(reason).expect("JSON"),
        ),
        Envelope::Reply { id, reply } => {
            let (name, json) = match reply {
                Reply::Message(m) => (Some(m.name()), message(m)),
                Reply::Bool(b) => (None, json!({"bool": b})),
                Reply::Int(i) => (None, json!({"int": i})),
                Reply::Bytes(b) => (None, json!({"bytes": hex(b.as_slice())})),
                Reply::ThreadDump(t) => (None, json!({"threadDump": t})),
                Reply::LossReason(r) => (None, json!({"lossReason": r})),
            };
            (
                "reply",
                Some(*id),
                name,
                Some(reply.tag().to_string()),
                json,
            )
        }
    };
    Seen::Envelope {
        form: form.to_string(),
        id,
        message: name.map(str::to_string),
        reply,
        task: task(&json),
        json,
    }
}

/// Splits one direction's bytes into whole frames (prefix included), up to a prefix declaring
/// more than the crate's frame limit (`DEFAULT_MAX_FRAME_SIZE`): the stream can be read no
/// further, and that length is returned too.
fn frames_of(bytes: &[u8]) -> (Vec<Vec<u8>>, Option<u32>) {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 4 {
        let declared = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let len = declared as usize;
        if len > DEFAULT_MAX_FRAME_SIZE {
            return (out, Some(declared));
        }
        if rest.len() < 4 + len {
            break;
        }
        out.push(rest[..4 + len].to_vec());
        rest = &rest[4 + len..];
    }
    assert!(rest.is_empty(), "a direction ends in the middle of a frame");
    (out, None)
}

/// What the crate reads in each direction of a recorded connection: the handshake frames, then
/// the envelopes in the version and family the handshake chose.
fn crate_reading(c: &Recorded) -> [Vec<Seen>; 2] {
    let stream = |client: bool| -> Vec<u8> {
        c.reads
            .iter()
            .filter(|(fc, _)| *fc == client)
            .flat_map(|(_, b)| b.clone())
            .collect()
    };
    let ((up, up_over), (down, down_over)) = (frames_of(&stream(true)), frames_of(&stream(false)));
    let mut client = Vec::new();
    let mut server = Vec::new();
    let Some(hello_frame) = up.first() else {
        return [client, server];
    };
    let hello = decode_hello(&hello_frame[4..]).expect("the crate reads the hello");
    let versions: Vec<String> = hello.versions.iter().map(u64::to_string).collect();
    client.push(Seen::Hello {
        role: hello.role.name().to_string(),
        id: hello.id.clone(),
        versions: format!("[{}]", versions.join(", ")),
        auth: hello.auth.is_some(),
    });
    let mut down_rest = down.iter();
    let mut up_rest = up.iter().skip(1);
    if hello.auth.is_some() {
        if let Some(challenge) = down_rest.next() {
            let fields = challenge_fields(&challenge[4..]);
            server.push(Seen::Challenge {
                nonce: fields.0,
                proof: fields.1,
            });
            if let Some(proof) = up_rest.next() {
                let p = decode_proof(&proof[4..]).expect("the crate reads the proof");
                client.push(Seen::Proof {
                    admin: p.admin.is_some(),
                });
            }
        }
    }
    let negotiated = match down_rest.next().map(|a| decode_answer(&a[4..])) {
        None => None,
        Some(Ok(Answer::Accepted(a))) => {
            server.push(Seen::Accepted {
                version: u64::from(a.version.number()),
                role: a.role.name().to_string(),
            });
            Some(a.version)
        }
        Some(Ok(Answer::Refused(r))) => {
            server.push(Seen::Refused {
                reason: r.reason.name().to_string(),
                message: r.message,
            });
            None
        }
        Some(Err(e)) => panic!("the crate does not read the answer: {e}"),
    };
    let Some(version) = negotiated else {
        assert!(
            up_rest.next().is_none() && down_rest.next().is_none(),
            "frames after a handshake that did not complete"
        );
        return [client, server];
    };
    let read = |f: &Vec<u8>| match hello.role.family() {
        "deploy" => envelope::<DeployMessage>(f, version),
        _ => envelope::<CoarseMessage>(f, version),
    };
    client.extend(up_rest.map(read));
    server.extend(down_rest.map(read));
    let over = |declared: u32| Seen::TooLarge { declared };
    client.extend(up_over.map(over));
    server.extend(down_over.map(over));
    [client, server]
}

/// A challenge's nonce and proof, read with the crate's MessagePack reader.
fn challenge_fields(body: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let v: BTreeMap<String, rmpv_like::Val> = rmp_serde::from_slice(body).expect("a challenge map");
    let bin = |k: &str| match v.get(k) {
        Some(rmpv_like::Val::Bin(b)) => b.clone(),
        other => panic!("challenge {k}: {other:?}"),
    };
    (bin("nonce"), bin("proof"))
}

/// Just enough of a MessagePack value to read a challenge's entries.
mod rmpv_like {
    use serde::de::{Deserialize, Deserializer, Visitor};

    #[derive(Debug)]
    pub enum Val {
        Bin(Vec<u8>),
        Other,
    }

    impl<'de> Deserialize<'de> for Val {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Val, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Val;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a MessagePack value")
                }
                fn visit_bytes<E>(self, b: &[u8]) -> Result<Val, E> {
                    Ok(Val::Bin(b.to_vec()))
                }
                fn visit_byte_buf<E>(self, b: Vec<u8>) -> Result<Val, E> {
                    Ok(Val::Bin(b))
                }
                fn visit_str<E>(self, _: &str) -> Result<Val, E> {
                    Ok(Val::Other)
                }
            }
            d.deserialize_any(V)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// What the dissector shows
// ---------------------------------------------------------------------------------------------

/// The frames the dissector shows in one `sparkwire` layer (one frame each).
fn dissected(layer: &Value) -> Seen {
    if let Some(kind) = text(layer.get("sparkwire.handshake")) {
        let hs = &layer["sparkwire.handshake_tree"];
        let s = |k: &str| text(hs.get(k)).unwrap_or_default();
        let bytes = |k: &str| unhex(&s(k).replace(':', ""));
        return match kind.as_str() {
            "hello" => Seen::Hello {
                role: s("sparkwire.handshake.role"),
                id: s("sparkwire.handshake.id"),
                versions: s("sparkwire.handshake.versions"),
                auth: hs.get("sparkwire.handshake.auth").is_some(),
            },
            "challenge" => Seen::Challenge {
                nonce: bytes("sparkwire.handshake.nonce"),
                proof: bytes("sparkwire.handshake.proof"),
            },
            "proof" => Seen::Proof {
                admin: hs.get("sparkwire.handshake.admin").is_some(),
            },
            "answer (accepted)" => Seen::Accepted {
                version: s("sparkwire.handshake.version").parse().expect("a version"),
                role: s("sparkwire.handshake.role"),
            },
            "answer (refused)" => Seen::Refused {
                reason: s("sparkwire.handshake.refused"),
                message: s("sparkwire.handshake.message"),
            },
            other => panic!("a handshake frame of kind {other}"),
        };
    }
    if let Some(kind) = text(layer.get("sparkwire.error")) {
        return Seen::Error { kind };
    }
    if let Some(declared) = text(layer.get("sparkwire.too_large")) {
        return Seen::TooLarge {
            declared: declared.parse().expect("a length"),
        };
    }
    let json = text(layer.get("sparkwire.json")).expect("a decoded frame shows its value");
    Seen::Envelope {
        form: text(layer.get("sparkwire.envelope")).expect("the envelope form"),
        id: text(layer.get("sparkwire.id")).map(|i| i.parse().expect("an id")),
        message: text(layer.get("sparkwire.message")),
        reply: text(layer.get("sparkwire.reply")),
        json: serde_json::from_str(&json).expect("the dissector's JSON parses"),
        task: text(layer.get("sparkwire.task"))
            .map(|t| serde_json::from_str(&t).expect("the dissector's task JSON parses")),
    }
}

/// The top-level field names the dissector's tree shows for a message.
fn tree_fields(layer: &Value) -> Vec<String> {
    each(layer["sparkwire.message_tree"].get("sparkwire.field"))
        .into_iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// Whether two readable values are equal, numbers compared by value (Lua writes floats with 17
/// digits, integral ones as `2.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fn same_seen(a: &Seen, b: &Seen) -> bool {
    match (a, b) {
        (
            Seen::Envelope {
                form: f1,
                id: i1,
                message: m1,
                reply: r1,
                json: j1,
                task: t1,
            },
            Seen::Envelope {
                form: f2,
                id: i2,
                message: m2,
                reply: r2,
                json: j2,
                task: t2,
            },
        ) => {
            let tasks = match (t1, t2) {
                (Some(a), Some(b)) => same(a, b),
                (a, b) => a == b,
            };
            f1 == f2 && i1 == i2 && m1 == m2 && r1 == r2 && same(j1, j2) && tasks
        }
        _ => a == b,
    }
}

/// Figures of one comparison.
#[derive(Debug, Default)]
struct Figures {
    packets: usize,
    frames: usize,
    handshake: usize,
    messages: usize,
    errors: BTreeMap<String, usize>,
    message_names: BTreeSet<(u64, String)>,
    mismatches: Vec<String>,
    tasks: usize,
    too_large: usize,
    lost_bytes: usize,
}

/// Compares, connection by connection and direction by direction, what the dissector shows with
/// what the crate reads.
fn compare(json: &[Value], conns: &[Recorded], figures: &mut Figures) {
    let packets = packets(json);
    assert_eq!(
        undissected(&packets),
        Vec::<u64>::new(),
        "packets no dissector took"
    );
    figures.packets += packets.len();
    // (client port, server port, from client) -> the dissector's frames in order.
    let ends: BTreeSet<(u16, u16)> = conns
        .iter()
        .map(|c| {
            (
                c.client.expect("client").port(),
                c.server.expect("server").port(),
            )
        })
        .collect();
    let mut shown: HashMap<(u16, u16, bool), Vec<(u64, Value)>> = HashMap::new();
    for p in &packets {
        let key = if ends.contains(&(p.src_port, p.dst_port)) {
            (p.src_port, p.dst_port, true)
        } else {
            (p.dst_port, p.src_port, false)
        };
        for layer in each(p.layers.get("sparkwire")) {
            // Bytes after a frame over the limit are not frames: shown as such, not compared.
            if let Some(lost) = text(layer.get("sparkwire.lost")) {
                figures.lost_bytes += lost.parse::<usize>().expect("a byte count");
                continue;
            }
            shown
                .entry(key)
                .or_default()
                .push((p.number, layer.clone()));
        }
    }
    for c in conns {
        let port = c.client.expect("client").port();
        let server_port = c.server.expect("server").port();
        let expected = crate_reading(c);
        for (dir, want) in [(true, &expected[0]), (false, &expected[1])] {
            let got = shown.remove(&(port, server_port, dir)).unwrap_or_default();
            assert_eq!(
                got.len(),
                want.len(),
                "connection from port {port}, {}: the dissector shows {} frames, the crate reads {}",
                if dir { "client → server" } else { "server → client" },
                got.len(),
                want.len()
            );
            for ((number, layer), want) in got.iter().zip(want) {
                let seen = dissected(layer);
                if !same_seen(&seen, want) {
                    figures.mismatches.push(format!(
                        "frame in packet {number}: the dissector shows\n{seen:?} ({})\nthe crate reads\n{want:?}",
                        text(layer.get("sparkwire.error.detail")).unwrap_or_default()
                    ));
                    continue;
                }
                figures.frames += 1;
                match want {
                    Seen::Envelope {
                        message,
                        json,
                        task,
                        ..
                    } => {
                        figures.messages += 1;
                        figures.tasks += usize::from(task.is_some());
                        if let Some(name) = message {
                            let fields = json[name].as_object().expect("a field map");
                            let tree = tree_fields(layer);
                            for f in &tree {
                                assert!(
                                    fields.contains_key(f),
                                    "{name}: field {f} shown but not decoded"
                                );
                            }
                            for (k, v) in fields {
                                assert!(
                                    v.is_null() || tree.contains(k),
                                    "{name}: field {k} decoded but not shown in the tree"
                                );
                            }
                            let version = layer["sparkwire.version"]
                                .as_str()
                                .and_then(|v| v.parse().ok())
                                .expect("the version used");
                            figures.message_names.insert((version, name.clone()));
                        }
                    }
                    Seen::Error { kind } => *figures.errors.entry(kind.clone()).or_insert(0) += 1,
                    Seen::TooLarge { .. } => figures.too_large += 1,
                    _ => figures.handshake += 1,
                }
            }
        }
    }
    assert!(
        shown.is_empty(),
        "frames on connections not recorded: {:?}",
        shown.keys()
    );
    assert!(
        figures.mismatches.is_empty(),
        "{} frames differ:\n{}",
        figures.mismatches.len(),
        figures.mismatches.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// The connections
// ---------------------------------------------------------------------------------------------

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocol/vectors")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("vector file")).expect("JSON")
}

/// Every message vector's frame of `family` in `version` (local messages have none).
fn message_frames(family: &str, version: u64) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(vectors_dir().join(family))
        .expect("vector directory")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        for v in read_json(&f)["vectors"].as_array().expect("vectors") {
            if v["version"].as_u64() == Some(version) {
                if let Some(hex) = v["frame_hex"].as_str() {
                    out.push(unhex(hex));
                }
            }
        }
    }
    out
}

/// The frames of `envelope.json` and `decoder.json` (valid and malformed) of `family` in
/// `version`.
fn decoder_frames(family: &str, version: u64) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for file in ["envelope.json", "decoder.json"] {
        for v in read_json(&vectors_dir().join(file))
            .as_array()
            .expect("cases")
        {
            let v_version = v["version"]
                .as_u64()
                .or_else(|| v["version"].as_str().and_then(|s| s.parse().ok()));
            if v["family"].as_str() == Some(family) && v_version == Some(version) {
                let bytes = unhex(v["frame_hex"].as_str().expect("frame_hex"));
                let declared =
                    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
                assert_eq!(declared + 4, bytes.len(), "{}: a whole frame", v["name"]);
                out.push(bytes);
            }
        }
    }
    out
}

/// Every message frame of `family` in `version`, each with one to three of its body's bytes
/// replaced at random, and with every other seed also cut short at a random point (the length
/// prefix follows): frames every decoder must read the same way, most of them refused.
fn mutated_frames(family: &str, version: u64, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    message_frames(family, version)
        .into_iter()
        .map(|mut f| {
            for _ in 0..1 + rng.next_u64() % 3 {
                let at = 4 + (rng.next_u64() as usize) % (f.len() - 4);
                f[at] = rng.next_u64() as u8;
            }
            if seed % 2 == 1 {
                let keep = 4 + (rng.next_u64() as usize) % (f.len() - 4);
                f.truncate(keep);
                let len = (keep - 4) as u32;
                f[..4].copy_from_slice(&len.to_be_bytes());
            }
            f
        })
        .collect()
}

/// `LaunchTask` frames whose data is each task description vector (SPEC §10), whole and cut
/// short.
fn task_frames(version: Version) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for v in read_json(&vectors_dir().join("task-description.json"))
        .as_array()
        .expect("cases")
    {
        let data = unhex(v["hex"].as_str().expect("hex"));
        for len in [data.len(), data.len() / 2] {
            let message = CoarseMessage::from(LaunchTask::new(Payload::from(data[..len].to_vec())));
            out.push(encode_frame(&Envelope::Send(message), version).expect("encodes"));
        }
    }
    out
}

/// A raw peer behind the tap: the server side of the handshake at `version`, then reads to the
/// end. The client, through the tap, offers only `version` and writes `frames`.
async fn raw_exchange(
    tap: &Tap,
    role: Role,
    version: Version,
    frames: Vec<Vec<u8>>,
    segment: Option<usize>,
) -> usize {
    let server = listener().await;
    let upstream = server.local_addr().expect("address");
    let relay_listener = listener().await;
    let relay_addr = relay_listener.local_addr().expect("address");
    let relay = tap.relay(relay_listener, upstream, segment);
    let server_role = if role.family() == "deploy" {
        Role::Master
    } else {
        Role::Driver
    };
    let peer = tokio::spawn(async move {
        let (mut io, _) = server.accept().await.expect("accept");
        raw_server_handshake(&mut io, version, server_role).await;
        let mut sink = Vec::new();
        io.read_to_end(&mut sink).await.expect("read to the end");
    });
    let mut client = TcpStream::connect(relay_addr).await.expect("connect");
    let negotiated = raw_client_handshake(&mut client, &[version], role).await;
    assert_eq!(negotiated.version, version);
    for f in &frames {
        client.write_all(f).await.expect("write a frame");
    }
    client.shutdown().await.expect("shutdown");
    let mut rest = Vec::new();
    client
        .read_to_end(&mut rest)
        .await
        .expect("read to the end");
    peer.await.expect("the raw peer");
    relay.abort();
    frames.len()
}

/// The reference master behind the tap: a worker registers; a client offering only version 9 is
/// refused; with a secret, a worker authenticates and one with another secret is turned away.
async fn reference_master(tap: &Tap) {
    for secret in [None, Some(Secret::new(SECRET.to_vec()).expect("a secret"))] {
        let mut config = MasterConfig {
            port: 0,
            ..MasterConfig::default()
        };
        if let Some(s) = &secret {
            config.security = Security::with_secret(s.clone());
        }
        let master = Master::start(config).await.expect("the master starts");
        let relay_listener = listener().await;
        let relay_addr = relay_listener.local_addr().expect("address");
        let relay = tap.relay(relay_listener, master.addr(), None);

        let mut worker_config: ConnectionConfig<DeployMessage> = ConnectionConfig::default();
        if let Some(s) = &secret {
            worker_config.security = Security::with_secret(s.clone());
        }
        let stream = TcpStream::connect(relay_addr).await.expect("connect");
        let mut worker = Connection::connect(
            stream,
            Role::Worker,
            common::samples::WORKER_ID,
            worker_config,
        )
        .await
        .expect("the worker's handshake");
        worker
            .handle()
            .send(DeployMessage::from(common::samples::register_worker()))
            .await
            .expect("RegisterWorker");
        let answer = tokio::time::timeout(Duration::from_secs(60), worker.recv())
            .await
            .expect("the master answers in time")
            .expect("an answer");
        assert!(
            matches!(answer.message(), DeployMessage::RegisteredWorker(_)),
            "the master registers the worker: {:?}",
            answer.message()
        );
        worker
            .handle()
            .send(DeployMessage::from(common::samples::heartbeat()))
            .await
            .expect("Heartbeat");
        worker.handle().close().await;
        drop(worker);

        // A hello offering only a version the master does not speak.
        let mut raw = TcpStream::connect(relay_addr).await.expect("connect");
        let hello = Hello {
            versions: vec![9],
            role: Role::Worker,
            id: "worker-from-the-future".into(),
            auth: None,
            features: Vec::new(),
        };
        let mut body = Vec::new();
        encode_hello(&hello, &mut body);
        raw.write_all(&frame(&body)).await.expect("hello");
        let answer = read_raw_frame(&mut raw).await.expect("an answer");
        assert!(matches!(decode_answer(&answer), Ok(Answer::Refused(_))));
        let mut rest = Vec::new();
        let _ = raw.read_to_end(&mut rest).await;
        drop(raw);

        if secret.is_some() {
            // A worker holding another secret: it finds the server's proof wrong and closes.
            let other = Secret::new(b"another secret".to_vec()).expect("a secret");
            let stream = TcpStream::connect(relay_addr).await.expect("connect");
            let config: ConnectionConfig<DeployMessage> =
                ConnectionConfig::default().with_security(Security::with_secret(other));
            assert!(
                Connection::connect(stream, Role::Worker, "worker-2", config)
                    .await
                    .is_err()
            );
        }
        // Every relayed connection has ended before the master stops.
        tap.finish().await;
        relay.abort();
        master.shutdown().await;
    }
}

/// A challenge the crate accepts: its proof verifies against the hello frame and the secret.
fn check_challenges(conns: &[Recorded]) -> usize {
    let secret = Secret::new(SECRET.to_vec()).expect("a secret");
    let mut checked = 0;
    for c in conns {
        let [client, server] = crate_reading(c);
        if let (Some(Seen::Hello { auth: true, .. }), Some(Seen::Challenge { nonce, proof })) =
            (client.first(), server.first())
        {
            let up: Vec<u8> = c
                .reads
                .iter()
                .filter(|(fc, _)| *fc)
                .flat_map(|(_, b)| b.clone())
                .collect();
            let hello_frame = &frames_of(&up).0[0];
            let nonce: [u8; 32] = nonce.as_slice().try_into().expect("a 32-byte nonce");
            let proof: [u8; 32] = proof.as_slice().try_into().expect("a 32-byte proof");
            assert!(
                verify_server_proof(&secret, hello_frame, &nonce, &proof),
                "the challenge's nonce and proof, as shown, verify"
            );
            checked += 1;
        }
    }
    checked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tshark_shows_every_frame_as_the_crate_decodes_it() {
    let Some(tshark) = tshark() else {
        return;
    };
    let dir = scratch("loopback");
    let lua = dissector(&dir);
    let tap = Tap::default();

    reference_master(&tap).await;
    let mut sent = 0;
    for (family, role) in [("deploy", Role::Worker), ("coarse", Role::Executor)] {
        for version in Version::ALL {
            let n = u64::from(version.number());
            // The coarse family's messages in version 2 cross in 61-byte segments.
            let segment = (family == "coarse" && version == Version::V2).then_some(61);
            sent += raw_exchange(&tap, role, version, message_frames(family, n), segment).await;
            sent += raw_exchange(&tap, role, version, decoder_frames(family, n), None).await;
            if family == "coarse" {
                // Task descriptions, then a prefix declaring 200 MiB and bytes that follow it.
                let mut frames = task_frames(version);
                let mut over = (200u32 << 20).to_be_bytes().to_vec();
                over.extend_from_slice(b"bytes a decoder never reads as a frame");
                frames.push(over);
                sent += raw_exchange(&tap, role, version, frames, None).await;
            }
            for seed in 1..=8 {
                let frames = mutated_frames(family, n, seed * 10 + n);
                sent += raw_exchange(&tap, role, version, frames, None).await;
            }
        }
    }
    let conns = tap.finish().await;
    let capture = dir.join("loopback.pcap");
    write_pcap(&capture, &conns);

    let json = dissect(&tshark, &lua, &capture);
    let mut figures = Figures::default();
    compare(&json, &conns, &mut figures);
    let segments = packets(&json).iter().filter(|p| p.reassembled_in).count();
    assert!(
        segments > 0,
        "frames crossed TCP segments and were reassembled"
    );
    let challenges = check_challenges(&conns);
    eprintln!(
        "{} connections, {} packets ({segments} segments of reassembled frames), {} frames dissected: \
         {} handshake frames, {} envelopes compared ({} distinct messages by version), errors by \
         kind {:?}; {} frames over the limit ({} bytes after them); {} task descriptions, {} \
         challenges verified; {sent} frames written",
        conns.len(),
        figures.packets,
        figures.frames,
        figures.handshake,
        figures.messages,
        figures.message_names.len(),
        figures.errors,
        figures.too_large,
        figures.lost_bytes,
        figures.tasks,
        challenges
    );

    // Every message that can cross a connection, in each version that has it.
    let def = Definition::builtin();
    for m in &def.messages {
        for v in Version::ALL {
            if m.exists_in(v) && m.kind_in(v).as_str() != "local" {
                assert!(
                    figures
                        .message_names
                        .contains(&(u64::from(v.number()), m.name.clone())),
                    "{} in version {} was not compared",
                    m.name,
                    v.number()
                );
            }
        }
    }
    // Every error kind of SPEC §8.
    for kind in [
        "InvalidMessagePack",
        "TooDeep",
        "TrailingBytes",
        "BadEnvelope",
        "UnknownMessage",
        "NotInVersion",
        "LocalMessage",
        "InvalidFields",
    ] {
        assert!(
            figures.errors.contains_key(kind),
            "no {kind} frame compared"
        );
    }
    assert!(
        challenges >= 2,
        "the authentication exchanges were compared"
    );
    assert!(figures.tasks >= 4, "task descriptions were compared");
    assert_eq!(figures.too_large, 2, "frames over the limit were compared");
    assert!(
        figures.lost_bytes > 0,
        "the bytes after them were shown as such"
    );
    let refusals = conns
        .iter()
        .filter(|c| {
            crate_reading(c)[1]
                .iter()
                .any(|s| matches!(s, Seen::Refused { .. }))
        })
        .count();
    assert!(refusals >= 2, "refused handshakes were compared");
    std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
}

// ---------------------------------------------------------------------------------------------
// Spark's own captures
// ---------------------------------------------------------------------------------------------

/// The captures' directory, as tests/spark_captures.rs finds it.
fn captures() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spark-captures"),
        PathBuf::from("/work/shared/spark-captures"),
    ];
    if let Some(dir) = candidates.iter().find(|d| d.join("A.pcap").is_file()) {
        return Some(dir.clone());
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("the Spark captures are missing: looked in {candidates:?}; CI must check out shared/ beside the repository");
    }
    eprintln!("skipped: no Spark captures in {candidates:?}");
    None
}

/// One Spark frame: its type, endpoint, content class and, for a response or failure, the
/// class of the request it answers.
#[derive(Debug, Clone, PartialEq)]
struct SparkSeen {
    kind: u8,
    endpoint: Option<String>,
    class: Option<String>,
    answers: Option<Option<String>>,
}

fn class_of_body(body: &[u8]) -> Option<String> {
    if body.starts_with(&sparkwire::spark::MAGIC) {
        parse_stream(body)
            .ok()
            .and_then(|g| g.root_node().class().map(str::to_string))
    } else {
        block_transfer_class(body).map(str::to_string)
    }
}

/// The crate's reading of a capture: (client port, server port, from client) -> frames.
fn crate_spark(path: &Path) -> HashMap<(u16, u16, bool), Vec<SparkSeen>> {
    let file = std::fs::File::open(path).expect("capture");
    let (events, _) = read_capture(file, Vec::new()).expect("the capture reads");
    let mut ends: HashMap<u64, (u16, u16)> = HashMap::new();
    let mut decoders: HashMap<(u64, bool), FrameDecoder> = HashMap::new();
    let mut requests: HashMap<(u64, bool, i64), Option<String>> = HashMap::new();
    let mut out: HashMap<(u16, u16, bool), Vec<SparkSeen>> = HashMap::new();
    for e in events {
        match e.event {
            TcpEvent::Open(ep) => {
                ends.insert(e.conn, (ep.client.port(), ep.server.port()));
            }
            TcpEvent::Data { from_client, bytes } => {
                let d = decoders.entry((e.conn, from_client)).or_default();
                d.push(&bytes);
                while let Some(item) = d.next_item() {
                    let frame = item.frame.expect("every frame of the capture decodes");
                    let kind = frame.kind() as u8;
                    let request = |body: &Bytes| match RequestMessage::parse(body) {
                        Some(rm) => (Some(rm.endpoint.clone()), class_of_body(&rm.stream)),
                        None => (None, class_of_body(body)),
                    };
                    let seen = match &frame {
                        Frame::RpcRequest { request_id, body } => {
                            let (endpoint, class) = request(body);
                            requests.insert((e.conn, from_client, *request_id), class.clone());
                            SparkSeen {
                                kind,
                                endpoint,
                                class,
                                answers: None,
                            }
                        }
                        Frame::OneWay { body } => {
                            let (endpoint, class) = request(body);
                            SparkSeen {
                                kind,
                                endpoint,
                                class,
                                answers: None,
                            }
                        }
                        Frame::RpcResponse { request_id, body } => SparkSeen {
                            kind,
                            endpoint: None,
                            class: class_of_body(body),
                            answers: Some(
                                requests
                                    .remove(&(e.conn, !from_client, *request_id))
                                    .flatten(),
                            ),
                        },
                        Frame::RpcFailure { request_id, .. } => SparkSeen {
                            kind,
                            endpoint: None,
                            class: None,
                            answers: Some(
                                requests
                                    .remove(&(e.conn, !from_client, *request_id))
                                    .flatten(),
                            ),
                        },
                        _ => SparkSeen {
                            kind,
                            endpoint: None,
                            class: None,
                            answers: None,
                        },
                    };
                    let (c, s) = ends[&e.conn];
                    out.entry((c, s, from_client)).or_default().push(seen);
                }
            }
            TcpEvent::Gap { .. } => panic!("the capture has a gap"),
            TcpEvent::Close => {}
        }
    }
    out
}

#[test]
fn tshark_shows_every_spark_rpc_frame_of_the_real_captures() {
    let Some(tshark) = tshark() else {
        return;
    };
    let Some(captures) = captures() else {
        return;
    };
    let dir = scratch("spark");
    let lua = dissector(&dir);
    for name in ["A.pcap", "B.pcap"] {
        let path = captures.join(name);
        let want = crate_spark(&path);
        let json = dissect(&tshark, &lua, &path);
        let packets = packets(&json);
        assert_eq!(
            undissected(&packets),
            Vec::<u64>::new(),
            "{name}: packets no dissector took"
        );
        let mut got: HashMap<(u16, u16, bool), Vec<SparkSeen>> = HashMap::new();
        let mut rpc = 0;
        for p in &packets {
            let dst = p.dst_port;
            for layer in each(p.layers.get("sparkrpc")) {
                let Some(kind) = text(layer.get("sparkrpc.type")) else {
                    continue;
                };
                let kind: u8 = kind.parse().expect("a type byte");
                let answers =
                    matches!(kind, 4 | 5).then(|| text(layer.get("sparkrpc.request_class")));
                let seen = SparkSeen {
                    kind,
                    endpoint: text(layer.get("sparkrpc.endpoint")),
                    class: text(layer.get("sparkrpc.class")),
                    answers,
                };
                if matches!(kind, 3 | 4 | 5 | 9) {
                    rpc += 1;
                    assert!(
                        seen.class.is_some() || kind == 5,
                        "{name} packet {}: no class",
                        p.number
                    );
                }
                // The client is the side whose port the crate saw dial; both keys are tried.
                let key_c = (p.src_port, dst, true);
                let key_s = (dst, p.src_port, false);
                let key = if want.contains_key(&key_c) {
                    key_c
                } else {
                    key_s
                };
                got.entry(key).or_default().push(seen);
            }
        }
        let frames: usize = want.values().map(Vec::len).sum();
        assert_eq!(
            got.values().map(Vec::len).sum::<usize>(),
            frames,
            "{name}: frames shown and decoded"
        );
        for (key, frames) in &want {
            assert_eq!(got.get(key), Some(frames), "{name}: connection {key:?}");
        }
        eprintln!("{name}: {} packets, {frames} Spark frames ({rpc} RPC frames) shown as the crate decodes them", packets.len());
    }
    std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
}

/// `java.lang.Boolean.TRUE` as `ObjectOutputStream` writes it (an RpcResponse of capture A).
const JAVA_TRUE: &str = "aced0005737200116a6176612e6c616e672e426f6f6c65616ecd207280d59cfaee0200015a000576616c7565787001";

/// A Spark transport frame: its length (counting itself), type and the rest.
fn spark_frame(kind: u8, rest: &[u8]) -> Vec<u8> {
    let mut out = (9 + rest.len() as u64).to_be_bytes().to_vec();
    out.push(kind);
    out.extend_from_slice(rest);
    out
}

/// A `RequestMessage` body: optional sender, receiver, endpoint name, then the Java stream.
fn request_message(sender: Option<(&str, i32)>, endpoint: &str, stream: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for address in [sender, Some(("127.0.0.1", 7077))] {
        match address {
            None => out.push(0),
            Some((host, port)) => {
                out.push(1);
                out.extend_from_slice(&(host.len() as u16).to_be_bytes());
                out.extend_from_slice(host.as_bytes());
                out.extend_from_slice(&port.to_be_bytes());
            }
        }
    }
    out.extend_from_slice(&(endpoint.len() as u16).to_be_bytes());
    out.extend_from_slice(endpoint.as_bytes());
    out.extend_from_slice(stream);
    out
}

fn with_id_and_body(id: i64, body: &[u8]) -> Vec<u8> {
    let mut out = id.to_be_bytes().to_vec();
    out.extend_from_slice(&(body.len() as i32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Spark frames the captures do not have: an ask that fails (`RpcFailure`) and one that is
/// answered, a one-way message from a client-mode RpcEnv (no sender), in 9-byte segments: the
/// first holds no more than a frame's header.
#[test]
fn tshark_pairs_spark_failures_and_responses_with_their_requests() {
    let Some(tshark) = tshark() else {
        return;
    };
    let dir = scratch("spark-failure");
    let lua = dissector(&dir);
    let java_true = unhex(JAVA_TRUE);
    let ask = request_message(Some(("127.0.0.1", 35001)), "Master", &java_true);
    let mut failure = 42i64.to_be_bytes().to_vec();
    let error = "org.apache.spark.SparkException: Unsupported message\n\tat Master.receive";
    failure.extend_from_slice(&(error.len() as i32).to_be_bytes());
    failure.extend_from_slice(error.as_bytes());
    let reads = vec![
        (true, spark_frame(3, &with_id_and_body(42, &ask))),
        (false, spark_frame(5, &failure)),
        (true, spark_frame(3, &with_id_and_body(43, &ask))),
        (false, spark_frame(4, &with_id_and_body(43, &java_true))),
        (true, {
            let body = request_message(None, "Worker", &java_true);
            let mut rest = (body.len() as i32).to_be_bytes().to_vec();
            rest.extend_from_slice(&body);
            spark_frame(9, &rest)
        }),
    ];
    let conn = Recorded {
        client: Some("127.0.0.1:41001".parse().expect("address")),
        server: Some("127.0.0.1:17077".parse().expect("address")),
        reads,
        segment: Some(9),
    };
    let capture = dir.join("failure.pcap");
    write_pcap(&capture, &[conn]);
    let want = crate_spark(&capture);
    let json = dissect(&tshark, &lua, &capture);
    let packets = packets(&json);
    assert_eq!(undissected(&packets), Vec::<u64>::new());
    let mut got: HashMap<(u16, u16, bool), Vec<SparkSeen>> = HashMap::new();
    let mut errors = Vec::new();
    for p in &packets {
        for layer in each(p.layers.get("sparkrpc")) {
            let kind: u8 = text(layer.get("sparkrpc.type"))
                .expect("a frame type")
                .parse()
                .expect("a type byte");
            errors.extend(text(layer.get("sparkrpc.error")));
            let key = if p.src_port == 41001 {
                (41001, 17077, true)
            } else {
                (41001, 17077, false)
            };
            got.entry(key).or_default().push(SparkSeen {
                kind,
                endpoint: text(layer.get("sparkrpc.endpoint")),
                class: text(layer.get("sparkrpc.class")),
                answers: matches!(kind, 4 | 5).then(|| text(layer.get("sparkrpc.request_class"))),
            });
        }
    }
    assert_eq!(got, want);
    let failed = &want[&(41001, 17077, false)][0];
    assert_eq!(failed.kind, 5);
    assert_eq!(failed.answers, Some(Some("java.lang.Boolean".to_string())));
    assert_eq!(errors, vec![error.replace(['\n', '\t'], "?")]);
    std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
}

/// A capture that starts after the handshake: with *Decode As* sparkwire, frames are read as
/// envelopes in the preference's version (2), each message's family guessed from its name, and
/// flagged as read without a handshake.
#[test]
fn decode_as_reads_a_connection_whose_handshake_was_not_captured() {
    let Some(tshark) = tshark() else {
        return;
    };
    let dir = scratch("decode-as");
    let lua = dissector(&dir);
    let frames: Vec<Vec<u8>> = ["deploy", "coarse"]
        .iter()
        .flat_map(|family| message_frames(family, 2))
        .collect();
    let conn = Recorded {
        client: Some("127.0.0.1:41002".parse().expect("address")),
        server: Some("127.0.0.1:17077".parse().expect("address")),
        reads: vec![(true, frames.concat())],
        segment: Some(1000),
    };
    let capture = dir.join("no-handshake.pcap");
    write_pcap(&capture, &[conn]);
    let json = dissect_with(
        &tshark,
        &lua,
        &capture,
        &["-d", "tcp.port==17077,sparkwire"],
    );
    let packets = packets(&json);
    assert_eq!(undissected(&packets), Vec::<u64>::new());
    let layers: Vec<&Value> = packets
        .iter()
        .flat_map(|p| each(p.layers.get("sparkwire")))
        .collect();
    assert_eq!(layers.len(), frames.len(), "every frame is shown");
    for (layer, frame) in layers.iter().zip(&frames) {
        let deploy = envelope::<DeployMessage>(frame, Version::V2);
        let want = if matches!(deploy, Seen::Envelope { .. }) {
            deploy
        } else {
            envelope::<CoarseMessage>(frame, Version::V2)
        };
        let seen = dissected(layer);
        assert!(same_seen(&seen, &want), "{seen:?}\n{want:?}");
        assert!(
            layer.to_string().contains("sparkwire.no_handshake"),
            "flagged as read without a handshake"
        );
    }
    std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
}

#[test]
fn spec_wireshark_writes_the_dissector_and_check_finds_a_stale_one() {
    let dir = scratch("cli");
    let out = dir.join("nested").join("sparkwire.lua");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sparkwire"))
            .args(["spec", "wireshark", "--out"])
            .arg(&out)
            .args(args)
            .output()
            .expect("sparkwire runs")
    };
    assert!(run(&[]).status.success(), "spec wireshark writes the file");
    let written = std::fs::read_to_string(&out).expect("written");
    assert_eq!(
        written,
        wireshark::render(Definition::builtin()).expect("renders")
    );
    assert!(
        run(&["--check"]).status.success(),
        "a current file passes --check"
    );
    std::fs::write(
        &out,
        written.replace("MESSAGES[\"deploy\"]", "MESSAGES[\"depl0y\"]"),
    )
    .expect("edit");
    let stale = run(&["--check"]);
    assert_eq!(stale.status.code(), Some(1), "a stale file fails --check");
    assert!(String::from_utf8_lossy(&stale.stderr).contains("spec wireshark"));
    std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
}

#[test]
fn the_checked_in_dissector_is_current_with_the_definition() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/protocol/wireshark/sparkwire.lua"
    );
    let disk = std::fs::read_to_string(path).expect("protocol/wireshark/sparkwire.lua exists");
    assert!(
        disk == wireshark::render(Definition::builtin()).expect("renders"),
        "protocol/wireshark/sparkwire.lua is stale: run `cargo run -- spec wireshark`"
    );
}
