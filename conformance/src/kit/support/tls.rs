//! `--target master`, handshake.md §11 (TLS): a server the suite starts with a certificate for
//! 127.0.0.1 (`--spawn-server`, `{tls_cert}` and `{tls_key}`) is dialled with TLS through the
//! crate's own client (`sparkwire::connection`), and the whole handshake and an ask run inside
//! it. One function per case.
