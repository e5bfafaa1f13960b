//! Spark's own wire: decoding and encoding real Spark 4.0.1 frames, beside sparkwire's MessagePack
//! frames of the same typed messages and a memcpy of the Spark frame, all measured in one run.
//!
//! Run with `cargo bench --bench spark`. The frames are the first of each message in the
//! captures of `tests/data/spark/4.0.1/`. For each it prints the Spark frame's size and the median
//! time per frame of:
//! - Spark decode: transport frame, RPC header, Java stream read into a graph, mapped to the typed
//!   message;
//! - Spark encode: the typed message to Java objects (taking from the original stream what the
//!   typed value does not hold, as `--check-roundtrip` does), written, wrapped in its RPC header and
//!   transport frame;
//! - MessagePack decode and encode of the same typed message as a sparkwire frame (version 2);
//! - a memcpy of the Spark frame's bytes;
//!
//! and the Spark figures as multiples of the memcpy and of MessagePack's. Then the proxy's added
//! latency: a frame sent through `sparkwire spark proxy` to an echoing upstream and back, against
//! the same frame sent to the upstream directly, over loopback, one at a time.

use std::collections::BTreeMap;
use std::fs::File;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sparkwire::messages::Version;
use sparkwire::spark::RequestMessage;
use sparkwire::spark::{classify, Classified, Typed};
use sparkwire::spark::{message_stream, parse_stream, Graph};
use sparkwire::spark::{read_capture, TcpEvent};
use sparkwire::spark::{Frame, FrameDecoder};
use sparkwire::wire::{decode_frame, encode_frame, Envelope};

const SAMPLES: usize = 31;
/// Bytes each sample handles at least.
const BYTES_PER_SAMPLE: usize = 4 * 1024 * 1024;
const MAX_BATCH: usize = 5_000;

fn median(mut t: Vec<Duration>) -> Duration {
    t.sort();
    t[t.len() / 2]
}

/// Median time of one call of `op` over `batch` calls a sample.
fn measure<O>(batch: usize, mut op: impl FnMut() -> O) -> Duration {
    let mut times = Vec::with_capacity(SAMPLES);
    for round in 0..SAMPLES + 3 {
        let start = Instant::now();
        for _ in 0..batch {
            black_box(op());
        }
        if round >= 3 {
            times.push(start.elapsed() / batch as u32);
        }
    }
    median(times)
}

/// A real frame: its bytes, its RPC header, its typed message.
struct Sample {
    name: String,
    raw: Bytes,
    header: Option<RequestMessage>,
    request_id: Option<i64>,
    typed: Typed,
}

fn samples() -> Vec<Sample> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/spark/4.0.1");
    let mut found: BTreeMap<String, Sample> = BTreeMap::new();
    for name in ["app.pcap", "cluster.pcap", "dynalloc.pcap"] {
        let file = File::open(dir.join(name)).expect("the capture opens");
        let (tcp, _) = read_capture(file, Vec::new()).expect("the capture reads");
        let mut decoders: BTreeMap<(u64, bool), FrameDecoder> = BTreeMap::new();
        for t in tcp {
            let TcpEvent::Data { from_client, bytes } = t.event else {
                continue;
            };
            let d = decoders.entry((t.conn, from_client)).or_default();
            d.push(&bytes);
            while let Some(item) = d.next_item() {
                let Ok(frame) = item.frame else { continue };
                let (header, request_id, stream) = match frame {
                    Frame::RpcRequest { request_id, body } => match RequestMessage::parse(&body) {
                        Some(rm) => (Some(rm.clone()), Some(request_id), rm.stream),
                        None => continue,
                    },
                    Frame::OneWay { body } => match RequestMessage::parse(&body) {
                        Some(rm) => (Some(rm.clone()), None, rm.stream),
                        None => continue,
                    },
                    _ => continue,
                };
                let Ok(g) = parse_stream(&stream) else {
                    continue;
                };
                let Classified::Message(typed) = classify(g.root_node()) else {
                    continue;
                };
                let key = format!("{}.{}", typed.family(), typed.name());
                found.entry(key.clone()).or_insert(Sample {
                    name: key,
                    raw: item.raw,
                    header,
                    request_id,
                    typed,
                });
            }
        }
    }
    let wanted = [
        "deploy.RegisterWorker",
        "deploy.Heartbeat",
        "deploy.RegisterApplication",
        "deploy.LaunchExecutor",
        "deploy.ExecutorStateChanged",
        "deploy.RequestExecutors",
        "coarse.RegisterExecutor",
        "coarse.LaunchTask",
        "coarse.StatusUpdate",
    ];
    wanted.iter().filter_map(|w| found.remove(*w)).collect()
}

fn spark_decode(raw: &Bytes) -> Typed {
    let mut d = FrameDecoder::default();
    d.push(raw);
    let item = d.next_item().expect("a frame");
    let body = match item.frame.expect("a good frame") {
        Frame::RpcRequest { body, .. } | Frame::OneWay { body } => body,
        _ => panic!("a request"),
    };
    let rm = RequestMessage::parse(&body).expect("a request message");
    let g = parse_stream(&rm.stream).expect("a stream");
    match classify(g.root_node()) {
        Classified::Message(m) => m,
        other => panic!("not a message: {other:?}"),
    }
}

fn spark_encode(s: &Sample, original: &Graph) -> Vec<u8> {
    let stream = message_stream(&s.typed, Version::V2, Some(original)).expect("encodes");
    let header = s.header.as_ref().expect("a header");
    let body: Bytes = RequestMessage {
        stream: stream.into(),
        ..header.clone()
    }
    .encode()
    .expect("a body")
    .into();
    match s.request_id {
        Some(request_id) => Frame::RpcRequest { request_id, body },
        None => Frame::OneWay { body },
    }
    .encode()
    .expect("a frame")
}

fn envelope_of(
    t: &Typed,
) -> (
    Option<Envelope<sparkwire::messages::DeployMessage>>,
    Option<Envelope<sparkwire::messages::CoarseMessage>>,
) {
    match t {
        Typed::Deploy(m) => (Some(Envelope::Send(m.clone())), None),
        Typed::Coarse(m) => (None, Some(Envelope::Send(m.clone()))),
    }
}

fn micros(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

fn main() {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "Spark 4.0.1 frames from tests/data/spark/4.0.1; load average at start: {}",
        load.trim()
    );
    println!();
    println!("| message | Spark frame (B) | Spark decode µs | Spark encode µs | MessagePack decode µs | MessagePack encode µs | memcpy µs | Spark decode / memcpy | Spark decode / MessagePack | Spark encode / MessagePack |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for s in samples() {
        // Encoding must give the frame back, or the figures measure something else.
        let header = s.header.as_ref().expect("a header");
        let original = parse_stream(&header.stream).expect("the stream");
        assert_eq!(
            spark_encode(&s, &original),
            s.raw.to_vec(),
            "{} re-encodes",
            s.name
        );
        let batch = (BYTES_PER_SAMPLE / s.raw.len().max(1)).clamp(50, MAX_BATCH);
        let decode = measure(batch, || spark_decode(&s.raw));
        let encode = measure(batch, || spark_encode(&s, &original));
        let (deploy, coarse) = envelope_of(&s.typed);
        let (mp_decode, mp_encode) = if let Some(env) = deploy {
            let frame = Bytes::from(encode_frame(&env, Version::V2).expect("msgpack"));
            (
                measure(batch, || {
                    decode_frame::<sparkwire::messages::DeployMessage>(&frame, Version::V2)
                        .expect("decodes")
                }),
                measure(batch, || encode_frame(&env, Version::V2).expect("encodes")),
            )
        } else if let Some(env) = coarse {
            let frame = Bytes::from(encode_frame(&env, Version::V2).expect("msgpack"));
            (
                measure(batch, || {
                    decode_frame::<sparkwire::messages::CoarseMessage>(&frame, Version::V2)
                        .expect("decodes")
                }),
                measure(batch, || encode_frame(&env, Version::V2).expect("encodes")),
            )
        } else {
            unreachable!()
        };
        let copy = measure(batch, || s.raw.to_vec());
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-12);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1}× | {:.1}× | {:.1}× |",
            s.name,
            s.raw.len(),
            micros(decode),
            micros(encode),
            micros(mp_decode),
            micros(mp_encode),
            micros(copy),
            ratio(decode, copy),
            ratio(decode, mp_decode),
            ratio(encode, mp_encode),
        );
    }
    println!();
    proxy_latency();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at end: {}", load.trim());
}

/// A frame through the proxy to an echoing upstream and back, against the same frame to the
/// upstream directly.
fn proxy_latency() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        // The upstream echoes what it reads.
        let upstream = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let up_addr = upstream.local_addr().expect("an address");
        tokio::spawn(async move {
            while let Ok((mut s, _)) = upstream.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let proxy = sparkwire::spark::start_proxy(
            listener,
            up_addr.to_string(),
            sparkwire::spark::ProxyOptions::default(),
        )
        .expect("the proxy starts");
        let frame = samples()
            .into_iter()
            .find(|s| s.name == "deploy.Heartbeat")
            .expect("a heartbeat")
            .raw;
        let mut figures = Vec::new();
        for (label, addr) in [
            ("direct", up_addr),
            ("through the proxy", proxy.local_addr()),
        ] {
            let mut conn = tokio::net::TcpStream::connect(addr)
                .await
                .expect("connects");
            conn.set_nodelay(true).expect("nodelay");
            let mut back = vec![0u8; frame.len()];
            let mut times = Vec::new();
            for i in 0..2_000 {
                let start = Instant::now();
                conn.write_all(&frame).await.expect("writes");
                conn.read_exact(&mut back).await.expect("reads");
                if i >= 200 {
                    times.push(start.elapsed());
                }
            }
            figures.push((label, median(times)));
        }
        println!(
            "| path ({}-byte Heartbeat frame, round trip) | median µs |",
            frame.len()
        );
        println!("|---|---|");
        for (label, t) in &figures {
            println!("| {label} | {} |", micros(*t));
        }
        let added = figures[1].1.saturating_sub(figures[0].1);
        println!(
            "\nthe proxy adds {} µs per message round trip (both directions decoded and traced)",
            micros(added)
        );
        let _ = proxy.stop().await;
    });
}
