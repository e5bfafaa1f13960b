//! Per-connection traffic counters, in total and by message name.

use std::collections::BTreeMap;

/// Frames and bytes (length prefixes included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Frames.
    pub frames: u64,
    /// Bytes, length prefixes included.
    pub bytes: u64,
}

impl Traffic {
    fn add(&mut self, bytes: usize) {
        self.frames += 1;
        self.bytes += bytes as u64;
    }
}

/// What a connection has sent and received so far.
///
/// Frames are keyed by what they carry: the message name (for sends, asks and replies holding a
/// message), `reply` (a reply holding a plain value), `failure`, or `handshake`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Everything written to the peer.
    pub sent: Traffic,
    /// Everything read from the peer.
    pub received: Traffic,
    /// Written, by what the frame carries.
    pub sent_by_name: BTreeMap<&'static str, Traffic>,
    /// Read, by what the frame carries.
    pub received_by_name: BTreeMap<&'static str, Traffic>,
    /// Replies that arrived after their ask had timed out (dropped).
    pub late_replies: u64,
}

impl Counters {
    /// Counts a frame written.
    pub(crate) fn record_sent(&mut self, name: &'static str, bytes: usize) {
        self.sent.add(bytes);
        self.sent_by_name.entry(name).or_default().add(bytes);
    }

    /// Counts a frame read.
    pub(crate) fn record_received(&mut self, name: &'static str, bytes: usize) {
        self.received.add(bytes);
        self.received_by_name.entry(name).or_default().add(bytes);
    }
}
