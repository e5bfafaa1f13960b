//! Framing after the handshake (protocol/SPEC.md §2 frames, §3 envelopes, §4 messages and
//! fields, §6 local messages, §8 decoding errors and §8.1 close envelopes), the cases every
//! listening endpoint shares: what those cases (`cases/spec/`, `for_server`) share.
