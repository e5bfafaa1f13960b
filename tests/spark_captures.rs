//! The shared captures of a real Spark 4.0.1 cluster (`../shared/spark-captures/`): every frame
//! decodes, each catalogued message into its type, the rest marked outside the catalogue, the
//! counts agree with the capture's independent decode (`decoded/*.json`, javaobj-py3), and the
//! traces validate.
#![cfg(feature = "spark")]

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use sparkwire::messages::Version;
use sparkwire::spark::RequestMessage;
use sparkwire::spark::{decode_capture, Decoded};
use sparkwire::spark::{read_capture, TcpEvent};
use sparkwire::spark::{read_stream, write_stream, Limits, MAGIC};
use sparkwire::spark::{Frame, FrameDecoder};
use sparkwire::validate::trace::{to_text, TraceReader};
use sparkwire::validate::{Config, EventBody, OutsideStatus, Validator};
use sparkwire::wire::handshake::Role;

/// The captures' directory. Missing captures fail the test under CI (`CI=true`), where the
/// repository is cloned beside `shared/`; elsewhere the test says it is skipped.
fn captures() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spark-captures"),
        PathBuf::from("/work/shared/spark-captures"),
    ];
    if let Some(dir) = candidates.iter().find(|d| d.join("A.pcap").is_file()) {
        return Some(dir.clone());
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "the Spark captures are missing: looked in {candidates:?}; CI must check out shared/ beside the repository"
        );
    }
    eprintln!("skipped: no Spark captures in {candidates:?}");
    None
}

fn decode(dir: &Path, name: &str) -> Decoded {
    let f = File::open(dir.join(name)).expect("capture opens");
    decode_capture(f, Vec::new(), None).expect("capture decodes")
}

/// (transport, class) → frames, from the capture's reference decode.
fn reference_counts(dir: &Path, name: &str) -> BTreeMap<(String, String), u64> {
    let text = std::fs::read_to_string(dir.join("decoded").join(name)).expect("reference decode");
    let json: serde_json::Value = serde_json::from_str(&text).expect("reference JSON");
    let mut out = BTreeMap::new();
    for conn in json["connections"].as_array().expect("connections") {
        for f in conn["frames"].as_array().expect("frames") {
            let transport = f["transport"].as_str().expect("transport").to_string();
            let class = f["cls"].as_str().expect("cls");
            let class = match class.strip_prefix("BlockTransferMessage$") {
                Some(c) => format!("org.apache.spark.network.shuffle.protocol.{c}"),
                None => class.to_string(),
            };
            *out.entry((transport, class)).or_insert(0) += 1;
        }
    }
    out
}

/// Every catalogued Spark class of the captures and its sparkwire type.
const EXPECTED_TYPES: &[(&str, &str)] = &[
    (
        "org.apache.spark.deploy.DeployMessages$ApplicationFinished",
        "deploy.ApplicationFinished",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$ExecutorAdded",
        "deploy.ExecutorAdded",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$ExecutorStateChanged",
        "deploy.ExecutorStateChanged",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$ExecutorUpdated",
        "deploy.ExecutorUpdated",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$Heartbeat",
        "deploy.Heartbeat",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$KillExecutor",
        "deploy.KillExecutor",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$LaunchExecutor",
        "deploy.LaunchExecutor",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$RegisterApplication",
        "deploy.RegisterApplication",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$RegisterWorker",
        "deploy.RegisterWorker",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$RegisteredApplication",
        "deploy.RegisteredApplication",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$RegisteredWorker",
        "deploy.RegisteredWorker",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$UnregisterApplication",
        "deploy.UnregisterApplication",
    ),
    (
        "org.apache.spark.deploy.DeployMessages$WorkerLatestState",
        "deploy.WorkerLatestState",
    ),
    (
        "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$LaunchTask",
        "coarse.LaunchTask",
    ),
    (
        "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$LaunchedExecutor",
        "coarse.LaunchedExecutor",
    ),
    (
        "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$RegisterExecutor",
        "coarse.RegisterExecutor",
    ),
    (
        "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$RetrieveSparkAppConfig",
        "coarse.RetrieveSparkAppConfig",
    ),
    (
        "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$SparkAppConfig",
        "coarse.SparkAppConfig",
    ),
    (
        "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$StatusUpdate",
        "coarse.StatusUpdate",
    ),
    (
        "org.apache.spark.scheduler.cluster.CoarseGrainedClusterMessages$StopExecutor$",
        "coarse.StopExecutor",
    ),
];

fn check_capture(name: &str, reference: &str, frames: u64, connections: usize) {
    let Some(dir) = captures() else {
        return;
    };
    let d = decode(&dir, name);
    let s = &d.summary;
    assert!(
        s.failures.is_empty(),
        "{name}: not decoded: {:#?}",
        s.failures
    );
    assert!(
        s.unknown.is_empty(),
        "{name}: unknown classes: {:?}",
        s.unknown
    );
    assert_eq!(s.total_frames(), frames, "{name}: frames");
    assert_eq!(s.connections.len(), connections, "{name}: connections");
    assert!(s
        .connections
        .values()
        .all(|c| !c.not_spark && c.roles.is_some()));
    // Frame by frame, the same classes as the independent decode.
    assert_eq!(
        s.by_class,
        reference_counts(&dir, reference),
        "{name}: frames by class"
    );
    // Each catalogued class has its sparkwire type.
    let types: BTreeMap<&str, &str> = s
        .messages
        .iter()
        .map(|(c, (t, _))| (c.as_str(), t.as_str()))
        .collect();
    let expected: BTreeMap<&str, &str> = EXPECTED_TYPES.iter().copied().collect();
    assert_eq!(types, expected, "{name}: Spark classes to sparkwire types");
    // Catalogued messages and outside frames make up every frame.
    let typed: u64 = s.messages.values().map(|(_, n)| n).sum::<u64>()
        + s.by_class
            .iter()
            .filter(|((t, c), _)| t == "RpcResponse" && c == "java.lang.Boolean")
            .map(|(_, n)| n)
            .sum::<u64>()
        - s.outside.get("java.lang.Boolean").copied().unwrap_or(0);
    let outside: u64 = s.outside.values().sum();
    assert_eq!(typed + outside, frames, "{name}: typed + outside = frames");
    // The trace validates, as decoded and as read back from its text.
    let mut v = Validator::new(Config::default());
    let mut violations: Vec<String> = d
        .events
        .iter()
        .flat_map(|e| v.observe(e))
        .map(|v| v.to_string())
        .collect();
    violations.extend(v.finish().iter().map(|v| v.to_string()));
    assert!(violations.is_empty(), "{name}: {violations:#?}");
    let text = to_text(&d.events).expect("trace text");
    let back: Vec<_> = TraceReader::new(text.as_bytes())
        .collect::<Result<_, _>>()
        .expect("the trace reads back");
    assert_eq!(back, d.events, "{name}: trace round trip");
    let mut v = Validator::new(Config::default());
    assert!(back.iter().all(|e| v.observe(e).is_empty()) && v.finish().is_empty());
}

#[test]
fn capture_a_decodes_every_frame_and_validates() {
    check_capture("A.pcap", "A.json", 105, 10);
}

#[test]
fn capture_b_with_a_killed_executor_decodes_every_frame_and_validates() {
    check_capture("B.pcap", "B.json", 259, 14);
}

#[test]
fn connections_get_the_roles_spark_gives_them() {
    let Some(dir) = captures() else {
        return;
    };
    let d = decode(&dir, "B.pcap");
    let mut kinds = BTreeMap::new();
    for c in d.summary.connections.values() {
        *kinds.entry((c.roles, c.server.clone())).or_insert(0) += 1;
    }
    let pair = |a, b, port: &str| (Some((a, b)), format!("127.0.0.1:{port}"));
    // Worker and application client to the master; executors' bootstrap and main connections to
    // the driver; WorkerWatcher connections to the worker; block fetches from the driver's
    // BlockManager.
    assert_eq!(
        kinds.get(&pair(Role::Worker, Role::Master, "17077")),
        Some(&1)
    );
    assert_eq!(
        kinds.get(&pair(Role::AppClient, Role::Master, "17077")),
        Some(&1)
    );
    assert_eq!(
        kinds.get(&pair(Role::Executor, Role::Driver, "17090")),
        Some(&6)
    );
    assert_eq!(
        kinds.get(&pair(Role::Executor, Role::Worker, "17078")),
        Some(&3)
    );
    assert_eq!(
        kinds.get(&pair(Role::Executor, Role::Driver, "17091")),
        Some(&3)
    );
    // The killed executor: its EXITED state with exit status 137 reached the master.
    let exited = d.events.iter().any(|e| {
        matches!(&e.body, EventBody::Message { envelope: sparkwire::validate::AnyEnvelope::Deploy(
            sparkwire::wire::Envelope::Ask { message: sparkwire::messages::DeployMessage::ExecutorStateChanged(c), .. }), .. }
            if c.exit_status == Some(137) && c.state == sparkwire::messages::ExecutorState::Exited)
    });
    assert!(exited);
    // Outside frames are marked outside, with their class.
    assert!(d.events.iter().any(|e| matches!(&e.body, EventBody::Outside { frame, .. }
        if frame.status == OutsideStatus::Outside
            && frame.class.as_deref() == Some("org.apache.spark.rpc.netty.RpcEndpointVerifier$CheckExistence"))));
}

#[test]
fn a_capture_cut_short_reports_what_it_could_not_decode_and_never_panics() {
    let Some(dir) = captures() else {
        return;
    };
    let bytes = std::fs::read(dir.join("A.pcap")).expect("capture");
    // pcap's record boundaries break at arbitrary places: the reader either refuses the file or
    // decodes the part it has.
    for cut in [24, 1000, 20_000, 77_777, bytes.len() - 3] {
        let _ = decode_capture(&bytes[..cut], Vec::new(), None);
    }
}

#[test]
fn the_same_capture_as_pcapng_decodes_to_the_same_trace() {
    use pcap_file::pcap::PcapReader;
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
    use pcap_file::pcapng::PcapNgWriter;
    let Some(dir) = captures() else {
        return;
    };
    let bytes = std::fs::read(dir.join("A.pcap")).expect("capture");
    let mut reader = PcapReader::new(&bytes[..]).expect("pcap");
    let mut writer = PcapNgWriter::new(Vec::new()).expect("pcapng writer");
    writer
        .write_pcapng_block(InterfaceDescriptionBlock {
            linktype: reader.header().datalink,
            snaplen: 0,
            options: vec![],
        })
        .expect("interface");
    while let Some(p) = reader.next_packet() {
        let p = p.expect("packet");
        writer
            .write_pcapng_block(EnhancedPacketBlock {
                interface_id: 0,
                timestamp: p.timestamp,
                original_len: p.orig_len,
                data: p.data,
                options: vec![],
            })
            .expect("packet written");
    }
    let ng = writer.into_inner();
    let from_ng = decode_capture(&ng[..], Vec::new(), None).expect("pcapng decodes");
    let from_pcap = decode(&dir, "A.pcap");
    assert_eq!(from_ng.events, from_pcap.events);
    assert_eq!(from_ng.summary, from_pcap.summary);
}

#[test]
fn ports_select_the_connections_decoded() {
    let Some(dir) = captures() else {
        return;
    };
    let f = File::open(dir.join("A.pcap")).expect("capture");
    let d = decode_capture(f, vec![17077], None).expect("decodes");
    assert_eq!(
        d.summary.connections.len(),
        2,
        "the worker's and the application's"
    );
    assert!(d
        .summary
        .connections
        .values()
        .all(|c| c.server == "127.0.0.1:17077"));
    assert!(d.summary.failures.is_empty());
}

#[test]
fn corrupted_bytes_of_real_streams_are_reported_never_a_panic() {
    use sparkwire::spark::Tracer;
    use sparkwire::spark::{read_capture, TcpEvent};
    let Some(dir) = captures() else {
        return;
    };
    let (tcp, _) =
        read_capture(File::open(dir.join("A.pcap")).expect("capture"), Vec::new()).expect("reads");
    // Each connection's bytes, per direction.
    let mut streams: BTreeMap<(u64, bool), Vec<u8>> = BTreeMap::new();
    for t in &tcp {
        if let TcpEvent::Data { from_client, bytes } = &t.event {
            streams
                .entry((t.conn, *from_client))
                .or_default()
                .extend_from_slice(bytes);
        }
    }
    let mut corrupted = 0;
    for ((conn, from_client), bytes) in &streams {
        for (n, at) in (0..bytes.len()).step_by(61).enumerate() {
            let mut b = bytes.clone();
            b[at] ^= [0xFF, 0x01, 0x80, 0x7F][n % 4];
            let mut t = Tracer::default();
            t.open(*conn, 0, "127.0.0.1:40000".into(), "127.0.0.1:17077".into());
            let mut events = t.data(*conn, 1, *from_client, &b);
            events.extend(t.close(*conn, 2));
            let mut v = Validator::new(Config::default());
            for e in &events {
                let _ = v.observe(e);
            }
            corrupted += 1;
        }
    }
    assert!(corrupted > 500, "{corrupted} corrupted streams");
}

#[test]
fn every_frame_of_the_real_captures_is_re_encoded_from_its_typed_value_byte_for_byte() {
    let Some(dir) = captures() else { return };
    for name in ["A.pcap", "B.pcap"] {
        let f = File::open(dir.join(name)).expect("capture opens");
        let d = sparkwire::spark::decode_capture_with(f, Vec::new(), None, true)
            .expect("capture decodes");
        let rt = d.summary.roundtrip.expect("the round trip was checked");
        assert_eq!(rt.differ, 0, "{name}: {:#?}", rt.differences);
        // Every catalogued message and every endpoint check was written again.
        let messages: u64 = d.summary.messages.values().map(|(_, n)| n).sum();
        let checks = rt.by_message.get("CheckExistence").map_or(0, |c| c.0);
        let replies = rt.by_message.get("reply.bool").map_or(0, |c| c.0);
        assert_eq!(
            rt.same,
            messages + checks + replies,
            "{name}: {:?}",
            rt.by_message
        );
        assert!(rt.same > 80, "{name}: {} frames", rt.same);
    }
}

/// Every Java stream of a capture: requests' and one-way messages' (after their RPC header)
/// and replies', with a label naming the connection and endpoint.
fn capture_streams(path: &Path) -> Vec<(String, Vec<u8>)> {
    directed_streams(path)
        .into_iter()
        .map(|(conn, _, endpoint, stream)| {
            let label = if endpoint == REPLY {
                format!("conn {conn} reply")
            } else {
                format!("conn {conn} to {endpoint}")
            };
            (label, stream)
        })
        .collect()
}

#[test]
fn every_stream_of_the_real_captures_is_written_back_byte_for_byte() {
    let Some(dir) = captures() else { return };
    let mut total = 0;
    for name in ["A.pcap", "B.pcap"] {
        for (label, stream) in capture_streams(&dir.join(name)) {
            let g = read_stream(&stream, &Limits::default())
                .unwrap_or_else(|e| panic!("{name} {label}: {e}"));
            let back = write_stream(&g, &Limits::default())
                .unwrap_or_else(|e| panic!("{name} {label}: {e}"));
            assert!(
                back == stream,
                "{name} {label}: {} bytes back for {}",
                back.len(),
                stream.len()
            );
            total += 1;
        }
    }
    eprintln!("{total} streams");
    assert!(total > 100);
}

#[test]
fn every_message_of_the_real_captures_is_encoded_from_its_typed_value_byte_for_byte() {
    use sparkwire::messages::Version;
    use sparkwire::spark::message_stream;
    use sparkwire::spark::{classify, Classified};
    let Some(dir) = captures() else { return };
    let mut same = 0;
    let mut differ = Vec::new();
    for name in ["A.pcap", "B.pcap"] {
        for (label, stream) in capture_streams(&dir.join(name)) {
            let g = read_stream(&stream, &Limits::default()).expect("reads");
            let Classified::Message(m) = classify(g.root_node()) else {
                continue;
            };
            match message_stream(&m, Version::V2, Some(&g)) {
                Ok(bytes) if bytes == stream => same += 1,
                Ok(bytes) => {
                    let back = read_stream(&bytes, &Limits::default())
                        .map(|g| sparkwire::spark::dump_stream(&g));
                    differ.push(format!(
                        "{name} {label} {}: {} bytes for {}\n--- real\n{}\n--- ours\n{}",
                        m.name(),
                        bytes.len(),
                        stream.len(),
                        sparkwire::spark::dump_stream(&g),
                        back.unwrap_or_else(|e| e.to_string())
                    ));
                }
                Err(e) => differ.push(format!("{name} {label} {}: {e}", m.name())),
            }
        }
    }
    eprintln!("{same} re-encoded byte for byte, {} differ", differ.len());
    assert!(differ.is_empty(), "{}", differ.join("\n\n"));
}

/// The captures kept in the repository (`tests/data/spark/`, made by `scripts/spark/capture.sh`).
fn repository_captures(version: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/spark")
        .join(version);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    out.retain(|p| p.extension().is_some_and(|e| e == "pcap"));
    out.sort();
    out
}

/// Decodes a capture of Spark `release` (told from the wire, not given) with the round trip checked: nothing undecoded or
/// unknown, every frame re-encoded byte for byte, and no violation where `sparkwire validate`
/// (with no flag) looks; the round trip's counts.
fn decodes_re_encodes_and_validates(path: &Path, release: &str) -> sparkwire::spark::RoundTrip {
    let name = path.display();
    let f = File::open(path).expect("capture opens");
    let d =
        sparkwire::spark::decode_capture_with(f, Vec::new(), None, true).expect("capture decodes");
    let s = &d.summary;
    // Every Spark connection's release was told from its own streams: the capture's own release
    // agrees with everything it sent (where its streams cannot tell releases apart, a newer one
    // that agrees as well may be the one answered in, SPEC §15.3).
    for (id, c) in &s.connections {
        if c.not_spark || c.messages == 0 {
            continue;
        }
        assert!(
            c.release.is_some() && c.agreeing.iter().any(|r| r == release),
            "{name}: conn {id}: Spark {release} not among the agreeing releases {:?}",
            c.agreeing
        );
    }
    assert!(
        s.failures.is_empty(),
        "{name}: not decoded: {:#?}",
        s.failures
    );
    assert!(
        s.unknown.is_empty(),
        "{name}: unknown classes: {:?}",
        s.unknown
    );
    let rt = s.roundtrip.clone().expect("checked");
    assert_eq!(rt.differ, 0, "{name}: {:#?}", rt.differences);
    // As `sparkwire validate` does with no flag: the trace marks Spark's task payloads.
    let mut v = Validator::new(Config::sparkwire());
    let mut violations = Vec::new();
    for e in &d.events {
        violations.extend(v.observe(e));
    }
    violations.extend(v.finish());
    // Spark 3.2 and 3.3 ask ExecutorStateChanged (answered with a Boolean), which protocol
    // version 1, whose fields they have, sends (SPEC §15.4 S8): those asks, their answers, the
    // ExecutorUpdated that follow them and the state changes a reader of version 1 therefore
    // never takes (L1) are what S8 explains, and nothing else is excused.
    if ["3.2", "3.3"].iter().any(|line| release.starts_with(line)) {
        violations.retain(|v| {
            let text = v.to_string();
            !(text.contains("expected ExecutorStateChanged as a send, found it as a ask")
                || (text.contains("(bool) [A2 ask.reply-pending]"))
                || text.contains("[E5 executor.updated-matches]")
                    && text.contains("the worker reported no new state")
                || text.contains("[L1 timed.executor-state]")
                    && text.contains("expected an ExecutorStateChanged for"))
        });
    }
    assert!(violations.is_empty(), "{name}: {violations:#?}");
    rt
}

#[test]
fn every_spark_4_capture_decodes_re_encodes_byte_for_byte_and_validates() {
    let captures = repository_captures("4.0.1");
    assert!(captures.len() >= 7, "the 4.0.1 captures: {captures:?}");
    let mut messages = std::collections::BTreeSet::new();
    for path in captures {
        let rt = decodes_re_encodes_and_validates(&path, "4.0.1");
        messages.extend(rt.by_message.keys().cloned());
    }
    // Together they put these on the wire, each re-encoded byte for byte.
    for m in [
        "deploy.RequestSubmitDriver",
        "deploy.LaunchDriver",
        "deploy.SubmitDriverResponse",
        "deploy.DriverStatusResponse",
        "deploy.KillDriverResponse",
        "deploy.RequestExecutors",
        "deploy.KillExecutors",
        "deploy.MasterChanged",
        "deploy.WorkerSchedulerStateResponse",
        "deploy.MasterStateResponse",
        "deploy.MasterInStandby",
        "deploy.WorkerDecommissioning",
        "deploy.DecommissionWorkersOnHosts",
        "coarse.RemoveExecutor",
    ] {
        assert!(messages.contains(m), "{m} in no capture: {messages:?}");
    }
}

/// Every class descriptor in the repository's captures of `version`, with its superclass's name.
fn captured_descriptors(version: &str) -> BTreeMap<String, (String, Option<String>)> {
    let mut out = BTreeMap::new();
    for path in repository_captures(version) {
        let streams =
            sparkwire::spark::java_streams(File::open(&path).expect("opens")).expect("reads");
        for stream in streams {
            let g = read_stream(&stream, &Limits::default()).expect("a stream reads");
            for e in g.entries() {
                if let sparkwire::spark::Entry::ClassDesc(d) = e {
                    let fields: Vec<String> = d
                        .fields
                        .iter()
                        .map(|f| {
                            let sig = f.signature.and_then(|s| g.string(s)).unwrap_or_default();
                            format!("{}{} {sig}", f.code as char, f.name)
                        })
                        .collect();
                    let key = format!("suid={} flags={} fields={fields:?}", d.suid, d.flags);
                    let sup = d
                        .super_desc
                        .and_then(|h| g.class_desc(h))
                        .map(|s| s.name.clone());
                    out.insert(d.name.clone(), (key, sup));
                }
            }
        }
    }
    out
}

#[test]
fn the_class_tables_agree_with_every_descriptor_in_the_captures() {
    use sparkwire::spark::ClassTable;
    for (version, protocol) in [("4.0.1", Version::V2), ("3.0.3", Version::V1)] {
        let Some(table) = ClassTable::of(protocol) else {
            // A version whose table sparkwire does not load is not written; it is still read.
            assert_eq!(version, "3.0.3", "the 4.0.1 table loads");
            continue;
        };
        let captured = captured_descriptors(version);
        assert!(
            captured.len() > 100,
            "{version}: {} descriptors",
            captured.len()
        );
        for (name, (key, sup)) in &captured {
            let Some(c) = table.get(name) else {
                // A class that is not serializable appears only as a Class object (a lambda's
                // capturing class): the JVM describes it with no UID, flags or fields.
                assert_eq!(
                    (key.as_str(), sup),
                    ("suid=0 flags=0 fields=[]", &None),
                    "{version}: {name} is in a capture, not in the table"
                );
                continue;
            };
            let fields: Vec<String> = c
                .fields
                .iter()
                .map(|f| {
                    format!(
                        "{}{} {}",
                        f.code,
                        f.name,
                        f.class.clone().unwrap_or_default()
                    )
                })
                .collect();
            let want = format!("suid={} flags={} fields={fields:?}", c.suid, c.flags);
            assert_eq!(&want, key, "{version}: {name}");
            assert_eq!(&c.super_class, sup, "{version}: {name}'s superclass");
        }
    }
}

#[test]
fn spark_golden_vectors_decode_to_their_values_and_encode_to_their_streams() {
    use sparkwire::spark::{check_vectors, SparkVectors};
    // Spark release, vectors at least, from captures at least.
    for (release, at_least, from_real) in [("4.0.1", 60, 45), ("3.0.3", 50, 40)] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("protocol/vectors/spark")
            .join(format!("{release}.json"));
        let text = std::fs::read_to_string(&path).expect("the Spark vectors");
        let v: SparkVectors = serde_json::from_str(&text).expect("they parse");
        assert_eq!(v.spark, release);
        let n = check_vectors(&v).unwrap_or_else(|e| panic!("{release}: {e}"));
        let from_captures = v
            .vectors
            .iter()
            .filter(|x| x.source.starts_with("capture"))
            .count();
        // Every message the master sends or receives is among them, most from real traffic.
        assert!(n >= at_least, "{release}: {n} vectors");
        assert!(
            from_captures >= from_real,
            "{release}: {from_captures} from captures"
        );
        for m in [
            "deploy.RegisterWorker",
            "deploy.LaunchExecutor",
            "deploy.MasterStateResponse",
        ] {
            let x = v.vectors.iter().find(|x| x.message == m).expect(m);
            assert!(
                x.source.starts_with("capture"),
                "{release} {m}: {}",
                x.source
            );
        }
    }
}

#[test]
fn every_class_table_has_golden_vectors_that_decode_to_their_values_and_encode_to_their_streams() {
    use sparkwire::spark::{check_vectors, Release, SparkVectors};
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("protocol/vectors/spark");
    let mut checked = Vec::new();
    for release in Release::all().iter().filter(|r| r.names_its_table()) {
        let path = dir.join(format!("{}.json", release.name()));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run `sparkwire spec vectors`)", path.display()));
        let v: SparkVectors = serde_json::from_str(&text).expect("they parse");
        assert_eq!(v.spark, release.name());
        assert_eq!(v.protocol_version, release.version().number());
        let n = check_vectors(&v).unwrap_or_else(|e| panic!("{release}: {e}"));
        // The messages every release's master and worker exchange are written in its forms.
        for m in [
            "deploy.RegisterWorker",
            "deploy.RegisteredWorker",
            "deploy.LaunchExecutor",
            "deploy.RegisterApplication",
            "deploy.ExecutorUpdated",
            "coarse.StatusUpdate",
            "coarse.LaunchTask",
        ] {
            assert!(
                v.vectors.iter().any(|x| x.message == m),
                "Spark {release} has no vector for {m}: {:?}",
                v.not_written.get(m)
            );
        }
        checked.push((release.name().to_string(), n));
    }
    assert!(checked.len() >= 2, "{checked:?}");
}

// ---- Spark 3.0.3 (protocol version 1) ----

#[test]
fn every_spark_3_capture_decodes_re_encodes_byte_for_byte_and_validates() {
    let captures = repository_captures("3.0.3");
    assert!(captures.len() >= 8, "the 3.0.3 captures: {captures:?}");
    let mut messages = std::collections::BTreeSet::new();
    let mut same = 0;
    for path in captures {
        let rt = decodes_re_encodes_and_validates(&path, "3.0.3");
        same += rt.same;
        messages.extend(rt.by_message.keys().cloned());
    }
    assert!(same > 500, "{same} frames re-encoded byte for byte");
    // Together they put these on the wire in Spark 3.0.3's own forms (Scala 2.12 collections,
    // whole enumerations, 3.0.3's older fields), each re-encoded byte for byte.
    for m in [
        "deploy.RegisterApplication",
        "deploy.LaunchExecutor",
        "deploy.ExecutorUpdated",
        "deploy.WorkerLatestState",
        "deploy.RequestSubmitDriver",
        "deploy.LaunchDriver",
        "deploy.SubmitDriverResponse",
        "deploy.DriverStatusResponse",
        "deploy.KillDriverResponse",
        "deploy.RequestExecutors",
        "deploy.KillExecutors",
        "deploy.MasterChanged",
        "deploy.WorkerSchedulerStateResponse",
        "deploy.MasterStateResponse",
        "deploy.RegisterWorkerFailed",
        "coarse.SparkAppConfig",
        "coarse.StatusUpdate",
        "coarse.RegisterExecutor",
    ] {
        assert!(messages.contains(m), "{m} in no capture: {messages:?}");
    }
}

/// Spark 3.0.3's messages written from the typed value alone (no original stream to take what
/// it does not hold), per message: (byte for byte, different, refused). What differs is what
/// the typed value cannot hold: a process's ask timeout (RegisterApplication: 10 s configured),
/// the order of a small map built from `sys.env` (RegisterExecutor's log URLs), an exception's
/// stack trace (DriverStatusResponse), the names an enumeration object has been asked for
/// (ExecutorStateChanged: its `nmap`), a host string shared by two fields (one RegisterWorker);
/// MasterStateResponse is refused (the master's own objects).
#[test]
fn spark_3_messages_from_the_typed_value_alone_are_exactly_these() {
    use sparkwire::spark::message_stream;
    use sparkwire::spark::{classify, Classified};
    let mut got: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
    for path in repository_captures("3.0.3") {
        for (label, stream) in capture_streams(&path) {
            let g = read_stream(&stream, &Limits::default()).expect("reads");
            let Classified::Message(m) = classify(g.root_node()) else {
                continue;
            };
            let e = got.entry(m.name().to_string()).or_default();
            match message_stream(&m, Version::V1, None) {
                Ok(bytes) if bytes == stream => e.0 += 1,
                Ok(_) => e.1 += 1,
                Err(err) => {
                    e.2 += 1;
                    assert_eq!(m.name(), "MasterStateResponse", "{label}: {err}");
                }
            }
        }
    }
    let expected: BTreeMap<String, (u32, u32, u32)> = [
        ("ApplicationFinished", 7, 0, 0),
        ("ApplicationRemoved", 1, 0, 0),
        ("DriverStateChanged", 2, 0, 0),
        ("DriverStatusResponse", 5, 1, 0),
        ("ExecutorAdded", 10, 0, 0),
        ("ExecutorStateChanged", 15, 5, 0),
        ("ExecutorUpdated", 12, 0, 0),
        ("Heartbeat", 25, 0, 0),
        ("KillDriver", 1, 0, 0),
        ("KillDriverResponse", 2, 0, 0),
        ("KillExecutor", 8, 0, 0),
        ("KillExecutors", 2, 0, 0),
        ("KillTask", 1, 0, 0),
        ("LaunchDriver", 2, 0, 0),
        ("LaunchExecutor", 10, 0, 0),
        ("LaunchTask", 33, 0, 0),
        ("LaunchedExecutor", 10, 0, 0),
        ("MasterChangeAcknowledged", 1, 0, 0),
        ("MasterChanged", 2, 0, 0),
        ("MasterInStandby", 2, 0, 0),
        ("MasterStateResponse", 0, 0, 3),
        ("ReconnectWorker", 1, 0, 0),
        ("RegisterApplication", 5, 2, 0),
        ("RegisterExecutor", 0, 10, 0),
        ("RegisterWorker", 12, 1, 0),
        ("RegisterWorkerFailed", 1, 0, 0),
        ("RegisteredApplication", 7, 0, 0),
        ("RegisteredWorker", 10, 0, 0),
        ("RequestDriverStatus", 6, 0, 0),
        ("RequestExecutors", 7, 0, 0),
        ("RequestKillDriver", 2, 0, 0),
        ("RequestMasterState", 3, 0, 0),
        ("RequestSubmitDriver", 3, 0, 0),
        ("RetrieveSparkAppConfig", 10, 0, 0),
        ("SparkAppConfig", 10, 0, 0),
        ("StatusUpdate", 65, 0, 0),
        ("StopExecutor", 7, 0, 0),
        ("SubmitDriverResponse", 3, 0, 0),
        ("UnregisterApplication", 7, 0, 0),
        ("WorkerLatestState", 10, 0, 0),
        ("WorkerRemoved", 1, 0, 0),
        ("WorkerSchedulerStateResponse", 1, 0, 0),
    ]
    .into_iter()
    .map(|(m, s, d, r)| (m.to_string(), (s, d, r)))
    .collect();
    assert_eq!(got, expected);
}

#[test]
fn every_capture_of_every_release_decodes_re_encodes_byte_for_byte_and_validates_with_no_flag() {
    use sparkwire::spark::Release;
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/spark");
    let mut releases = Vec::new();
    for entry in std::fs::read_dir(&data).expect("tests/data/spark") {
        let dir = entry.expect("an entry").path();
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !dir.is_dir() {
            continue;
        }
        let release = Release::named(name)
            .unwrap_or_else(|| panic!("tests/data/spark/{name}: not a release sparkwire speaks"));
        let captures = repository_captures(name);
        assert!(
            !captures.is_empty(),
            "tests/data/spark/{name} holds no capture"
        );
        let mut same = 0;
        for path in &captures {
            // The release is told from each connection's own streams: no version is given.
            let rt = decodes_re_encodes_and_validates(path, release.name());
            same += rt.same;
        }
        assert!(same > 0, "{name}: nothing re-encoded");
        releases.push(name.to_string());
    }
    assert!(releases.len() >= 2, "{releases:?}");
}

/// Every release line from 3.0 to 4.3 has real captures of at least the app, cluster and
/// worker-lost scenarios (`scripts/spark/capture.sh RELEASE app cluster worker-lost`) in
/// `tests/data/spark/RELEASE/` for one of its releases. The packaged crate leaves the captures of
/// most lines out (Cargo.toml's `include`): there the test says what it skips, unless CI=true.
#[test]
fn every_release_line_has_captures_of_the_app_cluster_and_worker_lost_scenarios() {
    use sparkwire::spark::Release;
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/spark");
    let mut lines: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in Release::all() {
        lines.entry(r.line()).or_default().push(r.name());
    }
    assert!(lines.len() >= 10, "{lines:?}");
    let mut missing = Vec::new();
    for (line, releases) in &lines {
        let captured = releases.iter().any(|r| {
            ["app", "cluster", "worker-lost"]
                .iter()
                .all(|s| data.join(r).join(format!("{s}.pcap")).is_file())
        });
        if !captured {
            missing.push(*line);
        }
    }
    if missing.is_empty() {
        return;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("release lines without captures of app, cluster and worker-lost: {missing:?}");
    }
    eprintln!("skipped: no captures of the release lines {missing:?} here (the packaged crate leaves them out)");
}

/// `tests/data/spark/RELEASE/app.pcap`, or `None` where it is absent and this is not CI (the
/// packaged crate leaves most releases' captures out; CI, with `CI=true`, must have them).
fn app_capture(release: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/spark")
        .join(release)
        .join("app.pcap");
    if path.exists() {
        return Some(path);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{} is missing", path.display());
    }
    eprintln!(
        "skipped: no {} here (the packaged crate leaves it out)",
        path.display()
    );
    None
}

/// What [`directed_streams`] names an answer's endpoint.
const REPLY: &str = "reply";

/// Every Java stream of a capture with where it went: the connection, whether its client sent
/// it, the endpoint (`reply` for an answer's) and the stream, in the order sent.
fn directed_streams(path: &Path) -> Vec<(u64, bool, String, Vec<u8>)> {
    let (tcp, _) = read_capture(File::open(path).expect("opens"), Vec::new()).expect("reads");
    let mut decoders: std::collections::HashMap<(u64, bool), FrameDecoder> = Default::default();
    let mut out = Vec::new();
    for t in tcp {
        if let TcpEvent::Data { from_client, bytes } = t.event {
            let d = decoders.entry((t.conn, from_client)).or_default();
            d.push(&bytes);
            while let Some(item) = d.next_item() {
                let Ok(frame) = item.frame else { continue };
                let (endpoint, stream) = match frame {
                    Frame::RpcRequest { body, .. } | Frame::OneWay { body } => {
                        match RequestMessage::parse(&body) {
                            Some(rm) => (rm.endpoint, rm.stream),
                            None => continue,
                        }
                    }
                    Frame::RpcResponse { body, .. } if body.starts_with(&MAGIC) => {
                        (REPLY.to_string(), body)
                    }
                    _ => continue,
                };
                out.push((t.conn, from_client, endpoint, stream.to_vec()));
            }
        }
    }
    out
}

/// The deploy message a stream holds, if it holds one.
fn deploy_of(stream: &[u8]) -> Option<sparkwire::messages::DeployMessage> {
    use sparkwire::spark::{classify, parse_stream, Classified, Typed};
    let g = parse_stream(stream).ok()?;
    match classify(g.root_node()) {
        Classified::Message(Typed::Deploy(m)) => Some(m),
        _ => None,
    }
}

/// Probes `d` as a Spark front does, each probe answered as a JVM of `own` answers it (the
/// failure its reading of the probe's descriptors meets, or "could not find" the probe's
/// endpoint); the number of probes asked.
fn probe_as(d: &mut sparkwire::spark::Detector, own: &'static sparkwire::spark::Release) -> usize {
    use sparkwire::spark::{parse_stream, ProbeAnswer, PROBE_ENDPOINT};
    let mut asked = 0;
    while let Some(p) = d.probe() {
        asked += 1;
        assert!(asked <= 12, "{own}: the probes do not end");
        let g = parse_stream(&p.stream().expect("a probe's stream")).expect("a Java stream");
        let text = own.read_failure(&g).unwrap_or_else(|| {
            format!("org.apache.spark.SparkException: Could not find {PROBE_ENDPOINT}.")
        });
        assert!(
            d.answer(&p, &ProbeAnswer::of_failure(&text)),
            "{own}: {text} tells nothing of {p:?}"
        );
    }
    asked
}

/// Issue 37: a real Spark 4.1 or 4.2 worker's streams (CheckExistence, RegisterWorker) agree
/// with 4.3.0 as well, whose ResourceProfile differs; answered in the newest agreeing release,
/// the LaunchExecutor carrying its application's ResourceProfile could not be read. Probed, it
/// is answered in its own table's forms, which it reads.
#[test]
fn real_4_1_and_4_2_workers_are_probed_apart_from_4_3_and_read_the_launch_executor_for_them() {
    use sparkwire::messages::DeployMessage as D;
    use sparkwire::spark::{message_stream, parse_stream, Detector, Release, Typed};
    for release in ["4.1.4", "4.2.1"] {
        let own = Release::named(release).expect("a release");
        let Some(path) = app_capture(release) else {
            continue;
        };
        let streams = directed_streams(&path);
        let (worker_conn, _) = streams
            .iter()
            .find_map(|(c, client, _, s)| {
                (*client && matches!(deploy_of(s), Some(D::RegisterWorker(_)))).then_some((*c, ()))
            })
            .expect("a worker registered");
        let mut d = Detector::new();
        for (_, _, _, s) in streams
            .iter()
            .filter(|(c, client, _, _)| *c == worker_conn && *client)
        {
            let registers = matches!(deploy_of(s), Some(D::RegisterWorker(_)));
            d.observe(&parse_stream(s).expect("a stream"))
                .expect("a release it knows");
            if registers {
                break;
            }
        }
        let names: Vec<&str> = d.candidates().iter().map(|r| r.name()).collect();
        assert!(
            names.contains(&release) && names.contains(&"4.3.0"),
            "{release}: the worker's streams leave {names:?}"
        );
        let launch = streams
            .iter()
            .find_map(|(c, client, _, s)| match deploy_of(s) {
                Some(m @ D::LaunchExecutor(_)) if *c == worker_conn && !*client => Some(m),
                _ => None,
            })
            .expect("the master launched an executor on the worker");
        let app = streams
            .iter()
            .find(|(_, client, _, s)| {
                *client && matches!(deploy_of(s), Some(D::RegisterApplication(_)))
            })
            .map(|(_, _, _, s)| parse_stream(s).expect("a stream"))
            .expect("an application registered");
        let written = |r: &'static Release| {
            let s = message_stream(&Typed::Deploy(launch.clone()), r, Some(&app))
                .expect("LaunchExecutor is written");
            own.read_failure(&parse_stream(&s).expect("a stream"))
        };
        // Answered in the newest release its streams agree with: what the real worker logged.
        let unread = written(d.release()).expect("4.3.0's LaunchExecutor is unreadable");
        assert!(
            d.release().name() == "4.3.0" && unread.contains("resource.ResourceProfile"),
            "{release}: {unread}"
        );
        let asked = probe_as(&mut d, own);
        assert!(asked >= 1);
        assert!(
            d.release().compatible(own),
            "{release}: probed to {} ({:?})",
            d.release(),
            d.candidates()
        );
        assert_eq!(written(d.release()), None, "{release}");
    }
}

/// Issue 37: a real Spark 3.0.3 driver's streams agree with 3.1-3.3 as well, whose
/// ExecutorUpdated differs (workerHost for workerLost); answered in the newest of them, it
/// dropped every ExecutorUpdated. Probed, it is answered in 3.0's forms.
#[test]
fn a_real_3_0_3_driver_is_probed_apart_from_3_1_to_3_3_and_reads_executor_updated() {
    use sparkwire::messages::DeployMessage as D;
    use sparkwire::spark::{message_stream, parse_stream, Detector, Release, Typed};
    let own = Release::named("3.0.3").expect("3.0.3");
    let Some(path) = app_capture("3.0.3") else {
        return;
    };
    let streams = directed_streams(&path);
    let app_conn = streams
        .iter()
        .find_map(|(c, client, _, s)| {
            (*client && matches!(deploy_of(s), Some(D::RegisterApplication(_)))).then_some(*c)
        })
        .expect("an application registered");
    let mut d = Detector::new();
    for (_, _, _, s) in streams
        .iter()
        .filter(|(c, client, _, _)| *c == app_conn && *client)
    {
        let registers = matches!(deploy_of(s), Some(D::RegisterApplication(_)));
        d.observe(&parse_stream(s).expect("a stream"))
            .expect("a release it knows");
        if registers {
            break;
        }
    }
    assert!(
        !d.release().compatible(own) && d.candidates().contains(&own),
        "the driver's streams leave {:?}",
        d.candidates()
    );
    let updated = streams
        .iter()
        .find_map(|(c, client, _, s)| match deploy_of(s) {
            Some(m @ D::ExecutorUpdated(_)) if *c == app_conn && !*client => Some(m),
            _ => None,
        })
        .expect("the master told the driver of its executors");
    // As a front writes what the master sends: from the typed value alone.
    let written = |r: &'static Release| {
        let s = message_stream(&Typed::Deploy(updated.clone()), r, None)
            .expect("ExecutorUpdated is written");
        own.read_failure(&parse_stream(&s).expect("a stream"))
    };
    let unread = written(d.release()).expect("the newest agreeing release's is unreadable");
    assert!(unread.contains("ExecutorUpdated"), "{unread}");
    probe_as(&mut d, own);
    assert!(d.release().compatible(own), "probed to {}", d.release());
    assert_eq!(written(d.release()), None);
}
