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
