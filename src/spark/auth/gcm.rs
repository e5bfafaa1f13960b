//! Spark's `GcmTransportCipher` (`spark.network.crypto.cipher=AES/GCM/NoPadding`, Spark 4.0
//! and later): after the auth engine's exchange, every write each way is one message of Tink's
//! `AesGcmHkdfStreaming` segmented AEAD, framed by Spark:
//!
//! ```text
//! [u64 BE: the message's whole length, these 8 bytes included]
//! [header: its own length (1 byte: 1 + key size + 7), a random salt (key size), a random 7-byte nonce prefix]
//! [segments: 32 KiB of ciphertext each (32 KiB − 16 of plaintext and a 16-byte GCM tag); the last shorter]
//! ```
//!
//! Each message's segments are sealed with AES-GCM under
//! `HKDF-SHA256(ikm = the session key, salt, info = the 8 length bytes)` (the key's own size:
//! 32 bytes with engine version 1, 16 with version 2), the nonce of segment `i` being the prefix,
//! `i` as a big-endian `u32` and a byte saying whether it is the last. Both directions use the
//! session key; each message brings its own salt and prefix. The messages do not follow Spark's
//! transport frames: the reader takes their plaintexts as one byte stream.
//!
//! The opener reads a message segment by segment: it holds at most one segment (32 KiB) however
//! long the message says it is, and a segment that fails its tag, a header of the wrong length or
//! a length shorter than the header is a typed error of the connection.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm, Nonce, Tag};
use hkdf::Hkdf;
use sha2::Sha256;

use super::{random_bytes, AuthError};

/// Ciphertext bytes of a whole segment.
pub const SEGMENT: usize = 32 * 1024;
/// The GCM tag each segment ends with.
const TAG: usize = 16;
/// Plaintext bytes of a whole segment.
pub const PLAIN_SEGMENT: usize = SEGMENT - TAG;
const NONCE_PREFIX: usize = 7;
const LENGTH: usize = 8;
/// The longest message taken: Spark's frames are under 2 GiB (plus the segments' tags).
pub const MAX_MESSAGE: u64 = 1 << 32;

enum SegmentKey {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
}

fn header_len(key_len: usize) -> usize {
    1 + key_len + NONCE_PREFIX
}

fn segment_key(main: &[u8], salt: &[u8], length: u64) -> Result<SegmentKey, AuthError> {
    let mut k = vec![0u8; main.len()];
    Hkdf::<Sha256>::new(Some(salt), main)
        .expand(&length.to_be_bytes(), &mut k)
        .map_err(|_| AuthError::Crypto("HKDF output length".into()))?;
    let bad = |_| AuthError::Crypto("AES-GCM key".into());
    Ok(match k.len() {
        16 => SegmentKey::Aes128(Box::new(Aes128Gcm::new_from_slice(&k).map_err(bad)?)),
        32 => SegmentKey::Aes256(Box::new(Aes256Gcm::new_from_slice(&k).map_err(bad)?)),
        n => return Err(AuthError::Crypto(format!("an AES key of {n} bytes"))),
    })
}

fn nonce(prefix: &[u8], segment: u32, last: bool) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..NONCE_PREFIX].copy_from_slice(prefix);
    n[NONCE_PREFIX..11].copy_from_slice(&segment.to_be_bytes());
    n[11] = u8::from(last);
    n
}

fn check_key(key: &[u8]) -> Result<(), AuthError> {
    match key.len() {
        16 | 32 => Ok(()),
        n => Err(AuthError::Crypto(format!("an AES key of {n} bytes"))),
    }
}

/// Seals what one side writes.
pub struct GcmSealer {
    key: Vec<u8>,
}

impl std::fmt::Debug for GcmSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GcmSealer(AES-{})", self.key.len() * 8)
    }
}

impl GcmSealer {
    /// A sealer with the session key (16 or 32 bytes).
    pub fn new(key: &[u8]) -> Result<Self, AuthError> {
        check_key(key)?;
        Ok(GcmSealer { key: key.to_vec() })
    }

    /// `plain` as one message: length, header, segments.
    pub fn seal(&self, plain: &[u8]) -> Result<Vec<u8>, AuthError> {
        let salt = match self.key.len() {
            16 => random_bytes::<16>()?.to_vec(),
            _ => random_bytes::<32>()?.to_vec(),
        };
        let prefix = random_bytes::<NONCE_PREFIX>()?;
        self.seal_with(plain, &salt, &prefix)
    }

    fn seal_with(&self, plain: &[u8], salt: &[u8], prefix: &[u8]) -> Result<Vec<u8>, AuthError> {
        let hl = header_len(self.key.len());
        let full = plain.len() / PLAIN_SEGMENT;
        let partial = plain.len() % PLAIN_SEGMENT;
        let total = LENGTH + hl + full * SEGMENT + if partial > 0 { partial + TAG } else { 0 };
        let total = total as u64;
        let key = segment_key(&self.key, salt, total)?;
        let mut out = Vec::with_capacity(total as usize);
        out.extend_from_slice(&total.to_be_bytes());
        out.push(hl as u8);
        out.extend_from_slice(salt);
        out.extend_from_slice(prefix);
        let count = plain.len().div_ceil(PLAIN_SEGMENT);
        for (i, chunk) in plain.chunks(PLAIN_SEGMENT).enumerate() {
            let n = nonce(prefix, i as u32, i + 1 == count);
            let start = out.len();
            out.extend_from_slice(chunk);
            let tag = match &key {
                SegmentKey::Aes128(c) => {
                    c.encrypt_in_place_detached(Nonce::from_slice(&n), &[], &mut out[start..])
                }
                SegmentKey::Aes256(c) => {
                    c.encrypt_in_place_detached(Nonce::from_slice(&n), &[], &mut out[start..])
                }
            }
            .map_err(|_| AuthError::Crypto("AES-GCM encryption".into()))?;
            out.extend_from_slice(&tag);
        }
        debug_assert_eq!(out.len() as u64, total);
        Ok(out)
    }
}

enum State {
    Length(Vec<u8>),
    Header {
        expected: u64,
        buf: Vec<u8>,
    },
    Body {
        expected: u64,
        read: u64,
        key: SegmentKey,
        prefix: [u8; NONCE_PREFIX],
        segment: u32,
        buf: Vec<u8>,
    },
}

/// Opens what the other side writes, in pieces of any size.
pub struct GcmOpener {
    key: Vec<u8>,
    state: State,
}

impl std::fmt::Debug for GcmOpener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GcmOpener(AES-{})", self.key.len() * 8)
    }
}

impl GcmOpener {
    /// An opener with the session key (16 or 32 bytes).
    pub fn new(key: &[u8]) -> Result<Self, AuthError> {
        check_key(key)?;
        Ok(GcmOpener {
            key: key.to_vec(),
            state: State::Length(Vec::with_capacity(LENGTH)),
        })
    }

    /// Whether the bytes taken so far end between messages.
    pub fn at_boundary(&self) -> bool {
        matches!(&self.state, State::Length(b) if b.is_empty())
    }

    /// Takes `data`, appending the plaintext of every segment it completes to `out`.
    pub fn push(&mut self, mut data: &[u8], out: &mut Vec<u8>) -> Result<(), AuthError> {
        let hl = header_len(self.key.len());
        while !data.is_empty() {
            match &mut self.state {
                State::Length(buf) => {
                    let n = (LENGTH - buf.len()).min(data.len());
                    buf.extend_from_slice(&data[..n]);
                    data = &data[n..];
                    if buf.len() == LENGTH {
                        let mut b = [0u8; LENGTH];
                        b.copy_from_slice(buf);
                        let expected = u64::from_be_bytes(b);
                        if expected < (LENGTH + hl) as u64 || expected > MAX_MESSAGE {
                            return Err(AuthError::Malformed(format!(
                                "an AES-GCM message of {expected} bytes ({} to {MAX_MESSAGE})",
                                LENGTH + hl
                            )));
                        }
                        self.state = State::Header {
                            expected,
                            buf: Vec::with_capacity(hl),
                        };
                    }
                }
                State::Header { expected, buf } => {
                    let n = (hl - buf.len()).min(data.len());
                    buf.extend_from_slice(&data[..n]);
                    data = &data[n..];
                    if buf.len() == hl {
                        if usize::from(buf[0]) != hl {
                            return Err(AuthError::Malformed(format!(
                                "an AES-GCM header that says {} bytes, not {hl}",
                                buf[0]
                            )));
                        }
                        let salt = &buf[1..1 + self.key.len()];
                        let mut prefix = [0u8; NONCE_PREFIX];
                        prefix.copy_from_slice(&buf[1 + self.key.len()..]);
                        let expected = *expected;
                        let key = segment_key(&self.key, salt, expected)?;
                        let read = (LENGTH + hl) as u64;
                        self.state = if read == expected {
                            // A message without plaintext.
                            State::Length(Vec::with_capacity(LENGTH))
                        } else {
                            State::Body {
                                expected,
                                read,
                                key,
                                prefix,
                                segment: 0,
                                buf: Vec::with_capacity(SEGMENT),
                            }
                        };
                    }
                }
                State::Body {
                    expected,
                    read,
                    key,
                    prefix,
                    segment,
                    buf,
                } => {
                    let left = *expected - *read;
                    let n = (SEGMENT - buf.len())
                        .min(data.len())
                        .min(usize::try_from(left).unwrap_or(usize::MAX));
                    buf.extend_from_slice(&data[..n]);
                    data = &data[n..];
                    *read += n as u64;
                    let last = *read == *expected;
                    if buf.len() == SEGMENT || last {
                        if buf.len() < TAG {
                            return Err(AuthError::Malformed(format!(
                                "an AES-GCM segment of {} bytes, shorter than its tag",
                                buf.len()
                            )));
                        }
                        let n = nonce(prefix, *segment, last);
                        let split = buf.len() - TAG;
                        let (body, tag) = buf.split_at_mut(split);
                        let tag = Tag::clone_from_slice(tag);
                        match key {
                            SegmentKey::Aes128(c) => {
                                c.decrypt_in_place_detached(Nonce::from_slice(&n), &[], body, &tag)
                            }
                            SegmentKey::Aes256(c) => {
                                c.decrypt_in_place_detached(Nonce::from_slice(&n), &[], body, &tag)
                            }
                        }
                        .map_err(|_| {
                            AuthError::Rejected(format!(
                                "AES-GCM segment {segment} failed its tag: not the session's key, \
                                 or altered on the way"
                            ))
                        })?;
                        out.extend_from_slice(body);
                        buf.clear();
                        if last {
                            self.state = State::Length(Vec::with_capacity(LENGTH));
                        } else {
                            *segment = segment.checked_add(1).ok_or_else(|| {
                                AuthError::Malformed("an AES-GCM message of 2^32 segments".into())
                            })?;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Both directions of one side of a GCM session: the session key is the same both ways.
#[derive(Debug)]
pub struct GcmSession {
    /// What this side writes.
    pub send: GcmSealer,
    /// What this side reads.
    pub recv: GcmOpener,
}

impl GcmSession {
    /// Either side's session with the session key.
    pub fn new(key: &[u8]) -> Result<Self, AuthError> {
        Ok(GcmSession {
            send: GcmSealer::new(key)?,
            recv: GcmOpener::new(key)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_all(o: &mut GcmOpener, wire: &[u8], piece: usize) -> Result<Vec<u8>, AuthError> {
        let mut out = Vec::new();
        for chunk in wire.chunks(piece) {
            o.push(chunk, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn messages_of_every_segment_shape_round_trip_in_pieces_of_any_size() {
        for key in [vec![3u8; 16], vec![9u8; 32]] {
            let s = GcmSealer::new(&key).expect("key");
            let mut o = GcmOpener::new(&key).expect("key");
            let mut wire = Vec::new();
            let mut plain = Vec::new();
            for len in [
                1,
                100,
                PLAIN_SEGMENT - 1,
                PLAIN_SEGMENT,
                PLAIN_SEGMENT + 1,
                3 * PLAIN_SEGMENT,
            ] {
                let p: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
                let m = s.seal(&p).expect("seal");
                let hl = header_len(key.len());
                let segs = len.div_ceil(PLAIN_SEGMENT);
                assert_eq!(m.len(), LENGTH + hl + len + segs * TAG);
                assert_eq!(
                    u64::from_be_bytes(m[..8].try_into().expect("8")),
                    m.len() as u64
                );
                assert_eq!(usize::from(m[8]), hl);
                wire.extend_from_slice(&m);
                plain.extend_from_slice(&p);
            }
            for piece in [1, 7, 4096, SEGMENT + 5, wire.len()] {
                let mut fresh = GcmOpener::new(&key).expect("key");
                assert_eq!(open_all(&mut fresh, &wire, piece).expect("opens"), plain);
                assert!(fresh.at_boundary());
            }
            assert_eq!(open_all(&mut o, &wire, 1000).expect("opens"), plain);
        }
    }

    #[test]
    fn the_segment_key_and_nonces_are_tink_s() {
        // One segment, fixed salt and prefix: the ciphertext is AES-GCM under
        // HKDF-SHA256(key, salt, length) with nonce prefix || 0u32 || 1, checked with the
        // primitives directly.
        let key = [5u8; 16];
        let salt = [6u8; 16];
        let prefix = [7u8; 7];
        let m = GcmSealer::new(&key)
            .expect("key")
            .seal_with(b"hello", &salt, &prefix)
            .expect("seal");
        let total = (LENGTH + 24 + 5 + TAG) as u64;
        assert_eq!(&m[..8], &total.to_be_bytes());
        assert_eq!(m[8], 24);
        let mut k = [0u8; 16];
        Hkdf::<Sha256>::new(Some(&salt), &key)
            .expand(&total.to_be_bytes(), &mut k)
            .expect("hkdf");
        let mut n = [0u8; 12];
        n[..7].copy_from_slice(&prefix);
        n[11] = 1;
        let mut body = b"hello".to_vec();
        let tag = Aes128Gcm::new_from_slice(&k)
            .expect("key")
            .encrypt_in_place_detached(Nonce::from_slice(&n), &[], &mut body)
            .expect("encrypt");
        assert_eq!(&m[32..37], &body[..]);
        assert_eq!(&m[37..], &tag[..]);
    }

    #[test]
    fn a_changed_byte_a_wrong_key_or_a_lying_header_is_an_error() {
        let s = GcmSealer::new(&[1u8; 32]).expect("key");
        let m = s.seal(b"some RPC").expect("seal");
        let mut bent = m.clone();
        *bent.last_mut().expect("bytes") ^= 1;
        let mut o = GcmOpener::new(&[1u8; 32]).expect("key");
        assert!(matches!(
            o.push(&bent, &mut Vec::new()),
            Err(AuthError::Rejected(_))
        ));
        let mut other = GcmOpener::new(&[2u8; 32]).expect("key");
        assert!(matches!(
            other.push(&m, &mut Vec::new()),
            Err(AuthError::Rejected(_))
        ));
        let mut short = m.clone();
        short[..8].copy_from_slice(&5u64.to_be_bytes());
        assert!(matches!(
            GcmOpener::new(&[1u8; 32])
                .expect("key")
                .push(&short, &mut Vec::new()),
            Err(AuthError::Malformed(_))
        ));
        let mut huge = m.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(GcmOpener::new(&[1u8; 32])
            .expect("key")
            .push(&huge, &mut Vec::new())
            .is_err());
        let mut header = m;
        header[8] = 3;
        assert!(matches!(
            GcmOpener::new(&[1u8; 32])
                .expect("key")
                .push(&header, &mut Vec::new()),
            Err(AuthError::Malformed(_))
        ));
        assert!(GcmSealer::new(&[0u8; 5]).is_err());
    }
}
