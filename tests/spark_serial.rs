//! Spark's Java serialization streams, read into graphs and written back: every stream of the real
//! captures comes back byte for byte.

use std::fs::File;
use std::path::PathBuf;

use sparkwire::spark::frame::{Frame, FrameDecoder};
use sparkwire::spark::pcap::{read_capture, TcpEvent};
use sparkwire::spark::rpc::RequestMessage;
use sparkwire::spark::serial::{read, write, Limits, MAGIC};

fn capture_streams(path: &PathBuf) -> Vec<(String, Vec<u8>)> {
    let (tcp, _) = read_capture(File::open(path).expect("opens"), Vec::new()).expect("reads");
    let mut decoders: std::collections::HashMap<(u64, bool), FrameDecoder> = Default::default();
    let mut out = Vec::new();
    for t in tcp {
        if let TcpEvent::Data { from_client, bytes } = t.event {
            let d = decoders.entry((t.conn, from_client)).or_default();
            d.push(&bytes);
            while let Some(item) = d.next_item() {
                let Ok(frame) = item.frame else { continue };
                let (label, stream) = match frame {
                    Frame::RpcRequest { body, .. } | Frame::OneWay { body } => {
                        match RequestMessage::parse(&body) {
                            Some(rm) => (format!("conn {} to {}", t.conn, rm.endpoint), rm.stream),
                            None => continue,
                        }
                    }
                    Frame::RpcResponse { body, .. } if body.starts_with(&MAGIC) => {
                        (format!("conn {} reply", t.conn), body)
                    }
                    _ => continue,
                };
                out.push((label, stream.to_vec()));
            }
        }
    }
    out
}

#[test]
fn every_stream_of_the_real_captures_is_written_back_byte_for_byte() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spark-captures");
    let mut total = 0;
    for name in ["A.pcap", "B.pcap"] {
        for (label, stream) in capture_streams(&dir.join(name)) {
            let g =
                read(&stream, &Limits::default()).unwrap_or_else(|e| panic!("{name} {label}: {e}"));
            let back =
                write(&g, &Limits::default()).unwrap_or_else(|e| panic!("{name} {label}: {e}"));
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
#[ignore]
fn dump_capture_streams() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spark-captures");
    let want = std::env::var("DUMP").unwrap_or_default();
    for (label, stream) in capture_streams(&dir.join("A.pcap")) {
        let g = read(&stream, &Limits::default()).unwrap();
        let text = sparkwire::spark::serial::dump(&g);
        if text.lines().next().unwrap_or("").contains(&want) {
            println!("== {label} ({} bytes)\n{text}", stream.len());
        }
    }
}

#[test]
#[ignore]
fn list_descriptors_of_captures() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spark-captures");
    let mut seen = std::collections::BTreeMap::new();
    for name in ["A.pcap", "B.pcap"] {
        for (_, stream) in capture_streams(&dir.join(name)) {
            let g = read(&stream, &Limits::default()).unwrap();
            for e in g.entries() {
                if let sparkwire::spark::serial::Entry::ClassDesc(d) = e {
                    let sup = d
                        .super_desc
                        .and_then(|h| g.class_desc(h))
                        .map(|s| s.name.clone());
                    let fields: Vec<String> = d
                        .fields
                        .iter()
                        .map(|f| format!("{}{}", f.code as char, f.name))
                        .collect();
                    seen.insert(
                        d.name.clone(),
                        format!(
                            "suid={} flags={} super={:?} fields={:?} annot={}",
                            d.suid,
                            d.flags,
                            sup,
                            fields,
                            d.annotation.len()
                        ),
                    );
                }
            }
        }
    }
    for (k, v) in seen {
        println!("{k} {v}");
    }
}

#[test]
fn every_message_of_the_real_captures_is_encoded_from_its_typed_value_byte_for_byte() {
    use sparkwire::messages::Version;
    use sparkwire::spark::encode::message_stream;
    use sparkwire::spark::map::{classify, Classified};
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spark-captures");
    let mut same = 0;
    let mut differ = Vec::new();
    for name in ["A.pcap", "B.pcap"] {
        for (label, stream) in capture_streams(&dir.join(name)) {
            let g = read(&stream, &Limits::default()).expect("reads");
            let Classified::Message(m) = classify(g.root_node()) else {
                continue;
            };
            match message_stream(&m, Version::V2, Some(&g)) {
                Ok(bytes) if bytes == stream => same += 1,
                Ok(bytes) => {
                    let back = read(&bytes, &Limits::default())
                        .map(|g| sparkwire::spark::serial::dump(&g));
                    differ.push(format!(
                        "{name} {label} {}: {} bytes for {}\n--- real\n{}\n--- ours\n{}",
                        m.name(),
                        bytes.len(),
                        stream.len(),
                        sparkwire::spark::serial::dump(&g),
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
