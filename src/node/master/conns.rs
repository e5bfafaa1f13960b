//! The master's open connections: who is at the other end of each, and whether it still takes
//! messages.

use std::collections::BTreeMap;

use crate::node::ConnId;
use crate::wire::handshake::Role;

/// A connection the core knows.
#[derive(Debug, Clone)]
pub(crate) struct ConnRec {
    pub(crate) role: Role,
    pub(crate) peer_id: String,
    /// The peer's address, for logs.
    pub(crate) addr: String,
    /// The peer proved the admin secret in the handshake.
    pub(crate) admin: bool,
    /// A one-way message was refused: the connection is closing and nothing more is taken.
    refused: bool,
}

/// The open connections.
#[derive(Debug, Default)]
pub(crate) struct Conns {
    all: BTreeMap<ConnId, ConnRec>,
}

impl Conns {
    /// Connection `conn` completed its handshake with a peer of `role`.
    pub(crate) fn open(
        &mut self,
        conn: ConnId,
        role: Role,
        (peer_id, addr): (String, String),
        admin: bool,
    ) {
        let rec = ConnRec {
            role,
            peer_id,
            addr,
            admin,
            refused: false,
        };
        self.all.insert(conn, rec);
    }

    /// Connection `conn` closed: what it was, if the core knew it.
    pub(crate) fn close(&mut self, conn: ConnId) -> Option<ConnRec> {
        self.all.remove(&conn)
    }

    /// Open connection `conn`.
    pub(crate) fn get(&self, conn: ConnId) -> Option<&ConnRec> {
        self.all.get(&conn)
    }

    /// `conn` is open (what is written on it goes out).
    pub(crate) fn is_open(&self, conn: ConnId) -> bool {
        self.all.contains_key(&conn)
    }

    /// `conn` is open and still takes messages (none of its one-way messages was refused).
    pub(crate) fn takes(&self, conn: ConnId) -> bool {
        self.all.get(&conn).is_some_and(|c| !c.refused)
    }

    /// A one-way message on `conn` was refused: it takes nothing more. Whether it is open.
    pub(crate) fn refused(&mut self, conn: ConnId) -> bool {
        match self.all.get_mut(&conn) {
            Some(c) => {
                c.refused = true;
                true
            }
            None => false,
        }
    }

    /// `conn` is open with one of `roles`.
    pub(crate) fn is(&self, conn: ConnId, roles: &[Role]) -> bool {
        self.all.get(&conn).is_some_and(|c| roles.contains(&c.role))
    }

    /// Open connections by the peer's role name.
    pub(crate) fn by_role(&self) -> BTreeMap<&'static str, u64> {
        let mut roles = BTreeMap::new();
        for c in self.all.values() {
            *roles.entry(c.role.name()).or_insert(0) += 1;
        }
        roles
    }
}
