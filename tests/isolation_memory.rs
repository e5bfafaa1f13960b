//! The master's heap stays bounded under a flood by a `ui` peer that asks and never reads, and
//! connections that come and go leave nothing behind: measured with a counting global allocator,
//! alone in this test binary (one test function, so no other test allocates meanwhile).
//!
//! Implementing `GlobalAlloc` needs `unsafe`; it only forwards to the system allocator and counts.
//! The library itself forbids unsafe code.

mod cluster;
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cluster::*;
use common::{envelope_frame, frame, read_raw_frame};
use sparkwire::connection::{Limits, DEFAULT_MAX_OUTGOING_BYTES};
use sparkwire::messages::deploy::RequestMasterState;
use sparkwire::messages::{Addr, DeployMessage, Version};
use sparkwire::wire::handshake::{check_answer, encode_hello, Hello, Role};
use sparkwire::wire::Envelope;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwards the caller's layout to the system allocator unchanged.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const MIB: usize = 1024 * 1024;

/// A raw stream to the master that completed a `ui` handshake.
async fn raw_ui(m: &Addr, id: &str) -> TcpStream {
    let mut stream = TcpStream::connect((m.host.as_str(), m.port as u16))
        .await
        .expect("connect");
    let hello = Hello::new(&[Version::V2], Role::Ui, id);
    let mut body = Vec::new();
    encode_hello(&hello, &mut body);
    stream.write_all(&frame(&body)).await.expect("hello");
    let answer = read_raw_frame(&mut stream).await.expect("answer");
    check_answer(&answer, &hello).expect("accepted");
    stream
}

fn ask_state_frame(id: u64) -> Vec<u8> {
    envelope_frame(
        &Envelope::Ask {
            id,
            message: DeployMessage::from(RequestMasterState {}),
        },
        Version::V2,
    )
}

/// Waits until the live heap is at most `bound` bytes, failing after [`PATIENCE`].
async fn heap_settles_under(what: &str, bound: usize) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let now = CURRENT.load(Ordering::SeqCst);
        if now <= bound {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: the live heap stays at {} KiB, over {} KiB",
            now / 1024,
            bound / 1024
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_stays_bounded_and_connection_cycles_leave_nothing_behind() {
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |c| {
        c.observer = None;
        c.limits = Limits::default();
    })
    .await;
    let m = addr_of(&master);
    // Warm up: one state answer, so that lazily built tables exist before the baseline.
    let _ = master_state(&m).await;
    let baseline = CURRENT.load(Ordering::SeqCst);
    PEAK.store(baseline, Ordering::SeqCst);

    // 1. A `ui` peer floods RequestMasterState asks and never reads, until the master drops it.
    let mut flooder = raw_ui(&m, "flooder").await;
    let flood = tokio::spawn(async move {
        let mut id = 1u64;
        loop {
            let mut batch = Vec::new();
            for _ in 0..512 {
                batch.extend(ask_state_frame(id));
                id += 1;
            }
            if flooder.write_all(&batch).await.is_err() {
                return id;
            }
        }
    });
    let asks = tokio::time::timeout(PATIENCE, flood)
        .await
        .expect("the flooder is disconnected")
        .expect("joined");
    let peak = PEAK.load(Ordering::SeqCst) - baseline;
    assert!(asks > 512, "the flooder sent {asks} asks");
    // The bound: its 4 MiB queue (which counts what its frames really take), buffers and a few
    // dozen messages in flight. (Before, frames were counted by length only, each holding a
    // 2 KiB allocation: 56 MiB.)
    assert!(
        peak < 2 * DEFAULT_MAX_OUTGOING_BYTES + 4 * MIB,
        "a non-reading ui grew the heap by {} KiB",
        peak / 1024
    );
    heap_settles_under("after the flood", baseline + 4 * MIB).await;

    // 2. Cycles of opening and closing connections: after the first (tables grow to their
    // size), the heap comes back to the same level each time: nothing is left per connection.
    const PER_CYCLE: usize = 200;
    let mut after_first = 0;
    for cycle in 0..10 {
        let mut open = Vec::with_capacity(PER_CYCLE);
        for n in 0..PER_CYCLE {
            open.push(raw_ui(&m, &format!("cycle-{cycle}-{n}")).await);
        }
        drop(open);
        if cycle == 0 {
            heap_settles_under("after the first cycle", baseline + 2 * MIB).await;
            // Let the last closes land before taking the level.
            tokio::time::sleep(Duration::from_millis(500)).await;
            after_first = CURRENT.load(Ordering::SeqCst);
        } else {
            // 9 cycles of 200 connections: a leak of 150 bytes each would be 270 KiB.
            heap_settles_under(&format!("after cycle {cycle}"), after_first + 128 * 1024).await;
        }
    }
    let after = CURRENT.load(Ordering::SeqCst);
    println!(
        "heap: baseline {} KiB, flood peak +{} KiB ({asks} asks), after the first cycle of \
         {PER_CYCLE} connections {} KiB, after the tenth {} KiB",
        baseline / 1024,
        peak / 1024,
        after_first / 1024,
        after / 1024
    );
    master.shutdown().await;
}
