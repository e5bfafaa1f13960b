//! The server's side of the handshake (protocol/handshake.md), the cases every listening
//! endpoint shares: acceptance and version choice, then refusals. One function per case,
//! registered in report order by [`add`].
