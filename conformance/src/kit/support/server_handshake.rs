//! The server's side of the handshake (protocol/handshake.md), the cases every listening
//! endpoint shares: acceptance and version choice, then refusals. What those cases
//! (`cases/handshake/`, `for_server`) share.
