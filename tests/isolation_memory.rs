//! The master's heap stays bounded under a flood by a `ui` peer that asks and never reads, and
//! connections that come and go leave nothing behind: measured with a counting global allocator,
//! alone in this test binary (one test function, so no other test allocates meanwhile).
//!

use common::cluster;
mod common;
use common::counting;

use std::time::Duration;

use cluster::*;
use common::flood::{flood, raw_peer};
use counting::{current, reset, Counting, PEAK};
use sparkwire::connection::{Limits, DEFAULT_MAX_OUTGOING_BYTES};
use sparkwire::wire::handshake::Role;
use std::sync::atomic::Ordering;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: usize = 1024 * 1024;

/// Waits until the live heap is at most `bound` bytes, failing after [`PATIENCE`].
async fn heap_settles_under(what: &str, bound: usize) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let now = current();
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
    let baseline = reset();

    // 1. A `ui` peer floods RequestMasterState asks and never reads, until the master drops it.
    let mut flooder = raw_peer(&m, Role::Ui, "flooder").await.expect("handshake");
    let flood = tokio::spawn(async move { flood(&mut flooder, None).await.0 });
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
            open.push(
                raw_peer(&m, Role::Ui, &format!("cycle-{cycle}-{n}"))
                    .await
                    .expect("handshake"),
            );
        }
        drop(open);
        if cycle == 0 {
            heap_settles_under("after the first cycle", baseline + 2 * MIB).await;
            // Let the last closes land before taking the level.
            tokio::time::sleep(Duration::from_millis(500)).await;
            after_first = current();
        } else {
            // 9 cycles of 200 connections: a leak of 150 bytes each would be 270 KiB.
            heap_settles_under(&format!("after cycle {cycle}"), after_first + 128 * 1024).await;
        }
    }
    let after = current();
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
