//! What the master's and the worker's tokio loops share: the table of a core's open connections
//! ([`Peers`]), which carries out every [`ConnOutput`] a core decides, in its order, through each
//! connection's own write queue, and counts the traffic of the connections that closed.

use std::collections::HashMap;
use std::time::Duration;

use crate::connection::Counters;
use crate::messages::DeployMessage;
use crate::node::{ConnId, ConnOutput};
use crate::reference::driver::add_counters;
use crate::reference::outbox::{Out, Outbox, Peer};

/// A core's open connections, by the id the core knows them by.
pub(crate) struct Peers {
    open: HashMap<ConnId, Peer>,
    outbox: Outbox,
    /// Traffic of the connections that closed, for the web UI's metrics.
    closed_traffic: Counters,
}

impl Peers {
    /// No connection yet; a graceful close waits at most `send_timeout` for a peer that does
    /// not read.
    pub(crate) fn new(send_timeout: Duration) -> Peers {
        Peers {
            open: HashMap::new(),
            outbox: Outbox::spawn(send_timeout),
            closed_traffic: Counters::default(),
        }
    }

    /// Connection `conn` is up.
    pub(crate) fn opened(&mut self, conn: ConnId, peer: Peer) {
        self.open.insert(conn, peer);
    }

    /// Connection `conn` closed: its traffic is kept in the total.
    pub(crate) fn closed(&mut self, conn: ConnId) {
        if let Some(peer) = self.open.remove(&conn) {
            add_counters(&mut self.closed_traffic, &peer.handle.counters());
        }
    }

    /// Does what the core decided on one of its connections (nothing when it is closed): a
    /// write goes to the connection's own queue at once, never waiting; a peer whose queue is
    /// full is closed as a slow consumer. An ask's answer is only logged.
    pub(crate) fn write(&self, out: ConnOutput<DeployMessage>) {
        let Some(peer) = self.open.get(&out.conn()) else {
            return;
        };
        match out {
            ConnOutput::Send { message, .. } => self.outbox.send(peer, message),
            ConnOutput::Ask { message, .. } => self.outbox.push(Out::Ask(peer.clone(), message)),
            ConnOutput::Reply { id, reply, .. } => self.outbox.reply(peer, id, reply),
            ConnOutput::Fail { id, error, .. } => {
                self.outbox.push(Out::Fail(peer.clone(), id, error))
            }
            ConnOutput::Close { reason, .. } => self.outbox.push(Out::Close(peer.clone(), reason)),
            ConnOutput::Abort { .. } => peer.kill(),
        }
    }

    /// Connection `conn`, if it is open.
    pub(crate) fn get(&self, conn: ConnId) -> Option<&Peer> {
        self.open.get(&conn)
    }

    /// Frames and bytes of every connection so far, open or closed.
    pub(crate) fn traffic(&self) -> Counters {
        let mut traffic = self.closed_traffic.clone();
        for peer in self.open.values() {
            add_counters(&mut traffic, &peer.handle.counters());
        }
        traffic
    }

    /// Closes every connection gracefully and waits until they closed (each given at most the
    /// send timeout) or `within` has passed.
    pub(crate) async fn close_all(&self, within: Duration) {
        for peer in self.open.values() {
            self.outbox.push(Out::Close(peer.clone(), None));
        }
        let (done, flushed) = tokio::sync::oneshot::channel();
        self.outbox.push(Out::Flush(done));
        let _ = tokio::time::timeout(within, flushed).await;
    }

    /// Drops every connection at once, as a crash would.
    pub(crate) fn kill_all(&self) {
        for peer in self.open.values() {
            peer.kill();
        }
    }
}
