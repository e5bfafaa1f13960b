//! A whole capture to a trace: TCP streams reassembled, Spark connections decoded, events in the
//! order the capture saw them.

use std::io::Read;

use super::pcap::{read_capture, CaptureError, TcpEvent};
use super::release::Release;
use super::tracer::{Summary, Tracer};
use crate::validate::Event;

/// What a capture held.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The trace's events, in time order (connections' events in their own order).
    pub events: Vec<Event>,
    /// What was found.
    pub summary: Summary,
    /// Packets read, and those skipped as not TCP over IP.
    pub packets: (u64, u64),
}

/// Decodes the Spark traffic of a pcap or pcapng capture: connections to `ports` only when not
/// empty; each connection read as the Spark release its own streams name (SPEC §15.1), or as
/// `release` when one is given.
pub fn decode_capture<R: Read>(
    input: R,
    ports: Vec<u16>,
    release: Option<&'static Release>,
) -> Result<Decoded, CaptureError> {
    decode_capture_with(input, ports, release, false)
}

/// As [`decode_capture`]; with `check_roundtrip`, every decoded catalogued frame is also encoded
/// again from its typed value and compared with its bytes ([`Summary::roundtrip`]).
pub fn decode_capture_with<R: Read>(
    input: R,
    ports: Vec<u16>,
    release: Option<&'static Release>,
    check_roundtrip: bool,
) -> Result<Decoded, CaptureError> {
    let (tcp, reassembler) = read_capture(input, ports)?;
    let mut tracer = Tracer::with_release(release);
    if check_roundtrip {
        tracer = tracer.check_roundtrip();
    }
    let mut events = Vec::new();
    for t in tcp {
        let time = u64::try_from(t.time.as_millis()).unwrap_or(u64::MAX);
        match t.event {
            TcpEvent::Open(ends) => tracer.open(
                t.conn,
                time,
                ends.client.to_string(),
                ends.server.to_string(),
            ),
            TcpEvent::Data { from_client, bytes } => {
                events.extend(tracer.data(t.conn, time, from_client, &bytes))
            }
            TcpEvent::Gap {
                from_client,
                missing,
            } => tracer.gap(t.conn, from_client, missing),
            TcpEvent::Close => events.extend(tracer.close(t.conn, time)),
        }
    }
    events.extend(tracer.finish());
    // Held events (an open written when its roles became known) go back to their times; the sort
    // is stable, so each connection keeps its order.
    events.sort_by_key(|e| e.time);
    Ok(Decoded {
        events,
        summary: tracer.summary().clone(),
        packets: (reassembler.packets, reassembler.skipped_packets),
    })
}

/// Every Java serialization stream a capture's Spark connections carry, in the order seen: the
/// messages of RPC requests and one-way messages (after their RPC header) and the bodies of
/// responses. For tools that look at Spark's objects themselves (`serial::read`, `dump`), and
/// for the round-trip fuzz target's seeds.
pub fn java_streams<R: Read>(input: R) -> Result<Vec<bytes::Bytes>, CaptureError> {
    use super::frame::{Frame, FrameDecoder};
    use super::rpc::RequestMessage;
    use super::serial::MAGIC;
    let (tcp, _) = read_capture(input, Vec::new())?;
    let mut decoders: std::collections::HashMap<(u64, bool), FrameDecoder> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
    for t in tcp {
        let TcpEvent::Data { from_client, bytes } = t.event else {
            continue;
        };
        let d = decoders.entry((t.conn, from_client)).or_default();
        d.push(&bytes);
        while let Some(item) = d.next_item() {
            match item.frame {
                Ok(Frame::RpcRequest { body, .. } | Frame::OneWay { body }) => {
                    if let Some(rm) = RequestMessage::parse(&body) {
                        out.push(rm.stream);
                    }
                }
                Ok(Frame::RpcResponse { body, .. }) if body.starts_with(&MAGIC) => out.push(body),
                _ => {}
            }
        }
    }
    Ok(out)
}
