//! Wire codec throughput: encoding and decoding whole frames with `FrameCodec`, against a memcpy
//! of the same bytes measured in the same run.
//!
//! Run with `cargo bench --bench wire`. Prints a Markdown table: for each message, the encoded
//! frame size and field count, then the median time per frame of encode, decode and memcpy,
//! encode and decode as multiples of memcpy, and the heap allocations (and bytes allocated) of
//! one decode.
//!
//! Allocations are counted by a global allocator of this bench binary only (the library has no
//! unsafe code); it counts only while a count is being taken, outside the timed samples, so the
//! timings do not pay for it beyond one relaxed load per allocation. Each decode here splits its
//! frame off a read buffer of its own, which the `bytes` crate then turns into a shared buffer:
//! one allocation of 40 bytes per decode that a connection's reader, splitting many frames off one
//! buffer, pays once per buffer. The rest are the decoded message's own (its strings, lists and
//! maps).

#[path = "../tests/common/samples.rs"]
mod samples;

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use sparkwire::messages::{CoarseMessage, DeployMessage, Family, Version};
use sparkwire::wire::Envelope;
use sparkwire::wire::FrameCodec;
use sparkwire::wire::FrameLimit;
use tokio_util::codec::Decoder;

/// Samples per measurement; the median is reported.
const SAMPLES: usize = 41;
/// Bytes each sample handles at least (frames are repeated up to this).
const BYTES_PER_SAMPLE: usize = 8 * 1024 * 1024;
/// Most frames in one sample.
const MAX_BATCH: usize = 20_000;

/// The system allocator, counting allocations and their bytes while [`COUNTING`] is set.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED_BYTES: AtomicU64 = AtomicU64::new(0);

fn note(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        ALLOCATED_BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` with the same arguments; the counters are atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A reallocation counts as one allocation of the new size.
        note(new_size);
        // SAFETY: as for `alloc`; `ptr` and `layout` come from this allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations and bytes allocated per call of `op`, over `calls` calls on inputs from `setup`
/// (built and dropped while not counting).
fn allocations<I, O>(
    calls: usize,
    setup: impl FnOnce() -> Vec<I>,
    mut op: impl FnMut(&mut I) -> O,
) -> (f64, f64) {
    let mut inputs = setup();
    let mut outputs = Vec::with_capacity(calls);
    ALLOCATIONS.store(0, Ordering::Relaxed);
    ALLOCATED_BYTES.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::SeqCst);
    for input in inputs.iter_mut() {
        outputs.push(op(black_box(input)));
    }
    COUNTING.store(false, Ordering::SeqCst);
    let count = ALLOCATIONS.load(Ordering::Relaxed) as f64 / calls as f64;
    let bytes = ALLOCATED_BYTES.load(Ordering::Relaxed) as f64 / calls as f64;
    drop(outputs);
    drop(inputs);
    (count, bytes)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Median time of one call of `op`, from `SAMPLES` samples of `batch` calls each. `setup` builds
/// each sample's inputs outside the timed part, and they are dropped after it (a decoded frame's
/// buffer is freed then, not while decoding). Each output is dropped at once, inside the timing.
fn measure<I, O>(
    batch: usize,
    mut setup: impl FnMut() -> Vec<I>,
    mut op: impl FnMut(&mut I) -> O,
) -> Duration {
    let mut times = Vec::with_capacity(SAMPLES);
    for round in 0..SAMPLES + 3 {
        let mut inputs = setup();
        let start = Instant::now();
        for input in inputs.iter_mut() {
            black_box(op(black_box(input)));
        }
        let elapsed = start.elapsed();
        drop(inputs);
        // The first rounds warm caches and the allocator up.
        if round >= 3 {
            times.push(elapsed / batch as u32);
        }
    }
    median(times)
}

struct Row {
    name: String,
    fields: usize,
    frame_len: usize,
    encode: Duration,
    decode: Duration,
    memcpy: Duration,
    /// Heap allocations of one decode, and their bytes.
    decode_allocs: (f64, f64),
}

fn bench<F: Family>(name: &str, fields: usize, message: F) -> Row {
    bench_envelope(name, fields, Envelope::Send(message))
}

fn bench_envelope<F: Family>(name: &str, fields: usize, env: Envelope<F>) -> Row {
    let limit = FrameLimit::message(256 * 1024 * 1024);
    let codec = FrameCodec::<F>::new(Version::V2, limit);
    let frame = codec
        .encode_to_bytes(&env)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let frame_len = frame.len();
    let batch = (BYTES_PER_SAMPLE / frame_len).clamp(1, MAX_BATCH);

    let encode = measure(
        batch,
        || vec![(); batch],
        |_: &mut ()| codec.encode_to_bytes(&env),
    );

    let mut decoder = FrameCodec::<F>::new(Version::V2, limit);
    let mut decode_one = |buf: &mut BytesMut| match decoder.decode(buf) {
        Ok(Some(decoded)) => decoded,
        other => panic!("{name}: decoding gave {other:?}"),
    };
    let inputs = |n: usize| {
        (0..n)
            .map(|_| BytesMut::from(&frame[..]))
            .collect::<Vec<_>>()
    };
    let decode = measure(batch, || inputs(batch), &mut decode_one);
    let counted = batch.min(1000);
    let decode_allocs = allocations(counted, || inputs(counted), &mut decode_one);

    let mut target = vec![0u8; frame_len];
    let memcpy = measure(
        batch,
        || vec![(); batch],
        |_: &mut ()| {
            target.copy_from_slice(&frame);
            black_box(target.as_ptr());
        },
    );

    Row {
        name: name.to_string(),
        fields,
        frame_len,
        encode,
        decode,
        memcpy,
        decode_allocs,
    }
}

fn micros(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 10.0 {
        format!("{us:.2}")
    } else {
        format!("{us:.1}")
    }
}

fn throughput(bytes: usize, d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs == 0.0 {
        return "-".to_string();
    }
    format!("{:.0}", bytes as f64 / secs / 1e6)
}

fn ratio(op: Duration, base: Duration) -> String {
    let base = base.as_secs_f64();
    if base == 0.0 {
        return "-".to_string();
    }
    format!("{:.2}", op.as_secs_f64() / base)
}

/// The frame size of `env`, prefix included.
fn frame_len<F: Family>(env: Envelope<F>) -> usize {
    let codec = FrameCodec::<F>::new(Version::V2, FrameLimit::DEFAULT);
    match codec.encode_to_vec(&env) {
        Ok(frame) => frame.len(),
        Err(e) => panic!("{e}"),
    }
}

/// Frame sizes next to those of a real Spark 4.0.1 cluster (shared/spark-baseline.md, Spark's frame
/// header included there too).
fn print_sizes() {
    use sparkwire::messages::coarse::StopExecutor;
    use sparkwire::messages::deploy::{ApplicationFinished, KillExecutor};
    let send_d = |m: DeployMessage| frame_len(Envelope::Send(m));
    let send_c = |m: CoarseMessage| frame_len(Envelope::Send(m));
    let ask_d = |m: DeployMessage| frame_len(Envelope::Ask { id: 1, message: m });
    let ask_c = |m: CoarseMessage| frame_len(Envelope::Ask { id: 1, message: m });
    let rows: Vec<(&str, usize, &str)> = vec![
        (
            "RegisterWorker",
            send_d(samples::register_worker().into()),
            "1462",
        ),
        (
            "RegisteredWorker",
            send_d(samples::registered_worker().into()),
            "1180",
        ),
        ("Heartbeat", send_d(samples::heartbeat().into()), "1128"),
        (
            "LaunchExecutor",
            send_d(samples::launch_executor().into()),
            "4431",
        ),
        (
            "ExecutorStateChanged (ask)",
            ask_d(samples::executor_state_changed().into()),
            "989–1156",
        ),
        (
            "KillExecutor",
            send_d(
                KillExecutor::new(
                    "spark://127.0.0.1:7077".to_string(),
                    samples::APP_ID.to_string(),
                    0,
                )
                .into(),
            ),
            "235",
        ),
        (
            "ApplicationFinished",
            send_d(ApplicationFinished::new(samples::APP_ID.to_string()).into()),
            "184",
        ),
        (
            "RetrieveSparkAppConfig (ask)",
            ask_c(samples::retrieve_spark_app_config().into()),
            "193",
        ),
        (
            "SparkAppConfig (reply)",
            frame_len(Envelope::Reply {
                id: 1,
                reply: sparkwire::wire::Reply::Message(CoarseMessage::from(
                    samples::spark_app_config(),
                )),
            }),
            "4708",
        ),
        (
            "RegisterExecutor (ask)",
            ask_c(samples::register_executor().into()),
            "1905",
        ),
        (
            "LaunchedExecutor",
            send_c(samples::launched_executor().into()),
            "193",
        ),
        (
            "StatusUpdate, empty data",
            send_c(samples::status_update(0).into()),
            "1105–2654 (with its result)",
        ),
        (
            "LaunchTask, payload bytes excluded",
            send_c(samples::launch_task(0).into()),
            "10113–10234 (trivial task, payload included)",
        ),
        ("StopExecutor", send_c(StopExecutor::new().into()), "227"),
        (
            "a Boolean reply",
            frame_len(Envelope::<CoarseMessage>::Reply {
                id: 1,
                reply: sparkwire::wire::Reply::Bool(true),
            }),
            "68",
        ),
    ];
    println!();
    println!("| message | sparkwire frame bytes | Spark 4.0.1 frame bytes |");
    println!("|---|---|---|");
    for (name, ours, spark) in rows {
        println!("| {name} | {ours} | {spark} |");
    }
}

fn main() {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    let rows = vec![
        bench::<CoarseMessage>(
            "StatusUpdate (1 KiB data)",
            6,
            samples::status_update(KIB).into(),
        ),
        bench::<CoarseMessage>(
            "StatusUpdate (1 MiB data)",
            6,
            samples::status_update(MIB).into(),
        ),
        bench::<DeployMessage>("RegisterWorker", 9, samples::register_worker().into()),
        bench::<DeployMessage>("LaunchExecutor", 8, samples::launch_executor().into()),
        bench::<CoarseMessage>(
            "LaunchTask (1 KiB task)",
            1,
            samples::launch_task(KIB).into(),
        ),
        bench::<CoarseMessage>(
            "LaunchTask (1 MiB task)",
            1,
            samples::launch_task(MIB).into(),
        ),
        // The small messages of a running cluster's hot paths: a tiny task's launch and its two
        // status updates (8 bytes of result), the answer to an ask, a worker's heartbeat and an
        // executor's state change and registration.
        bench::<CoarseMessage>(
            "LaunchTask (200-byte task)",
            1,
            samples::launch_task(200).into(),
        ),
        bench::<CoarseMessage>(
            "StatusUpdate (8 bytes data)",
            6,
            samples::status_update(8).into(),
        ),
        bench_envelope::<CoarseMessage>(
            "a Boolean reply",
            1,
            Envelope::Reply {
                id: 7,
                reply: sparkwire::wire::Reply::Bool(true),
            },
        ),
        bench::<DeployMessage>("Heartbeat", 2, samples::heartbeat().into()),
        bench_envelope::<DeployMessage>(
            "ExecutorStateChanged (ask)",
            5,
            Envelope::Ask {
                id: 7,
                message: samples::executor_state_changed().into(),
            },
        ),
        bench_envelope::<CoarseMessage>(
            "RegisterExecutor (ask)",
            8,
            Envelope::Ask {
                id: 7,
                message: samples::register_executor().into(),
            },
        ),
    ];
    println!("| message | fields | frame bytes | encode µs | decode µs | memcpy µs | encode MB/s | decode MB/s | encode ÷ memcpy | decode ÷ memcpy | allocations per decode | bytes allocated per decode |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.0} |",
            r.name,
            r.fields,
            r.frame_len,
            micros(r.encode),
            micros(r.decode),
            micros(r.memcpy),
            throughput(r.frame_len, r.encode),
            throughput(r.frame_len, r.decode),
            ratio(r.encode, r.memcpy),
            ratio(r.decode, r.memcpy),
            r.decode_allocs.0,
            r.decode_allocs.1,
        );
    }
    print_sizes();
}
