//! SASL DIGEST-MD5's confidentiality layer (quality of protection `auth-conf`, RFC 2831 §2.4),
//! which Spark runs after a SASL bootstrap when the client asks for it
//! (`spark.authenticate.enableSaslEncryption=true`) or the server demands it
//! (`spark.network.sasl.serverAlwaysEncrypt=true`).
//!
//! The keys come from the exchange's session key `H(A1)` (the binary MD5 of `A1`): the
//! integrity keys `Kic`/`Kis` = MD5(`H(A1)`, magic), the sealing keys `Kcc`/`Kcs` =
//! MD5(the first *n* bytes of `H(A1)`, magic) with *n* 16 for `rc4`, 7 for `rc4-56`, 5 for
//! `rc4-40`; `c` keys the client's sending direction, `s` the server's. A message `m` is sent as
//! `RC4(Kc, m ‖ HMAC-MD5(Ki, seq ‖ m)[0..10]) ‖ 0x0001 ‖ seq`, `seq` a 4-byte big-endian count
//! of the messages sent that way before (from 0); RC4's keystream runs on across messages.
//!
//! On the connection (Spark's `SaslEncryption`), each wrapped message is preceded by an 8-byte
//! big-endian length that counts itself: [`SaslPrivacy::seal_chunk`] and
//! [`SaslPrivacy::open_chunk`] speak that form. Spark wraps at most
//! `spark.network.sasl.maxEncryptedBlockSize` (64 KiB) of its stream per message.
//!
//! The RC4 ciphers are the ones Java's DIGEST-MD5 offers and chooses at its default strength;
//! `3des` and `des` are not spoken (a peer that offers only them is refused with
//! [`AuthError::Unsupported`]).

use hmac::{Hmac, Mac};
use md5::{Digest, Md5};
use rc4::consts::U16;
use rc4::{KeyInit, Rc4, StreamCipher};
use subtle::ConstantTimeEq;

use super::AuthError;

/// The largest wrapped message taken (its length field included): Spark's 64 KiB default block
/// with room for a peer configured larger.
pub const MAX_WRAPPED: u64 = 16 * 1024 * 1024;

/// The message type of a wrapped message (RFC 2831 §2.3, §2.4).
const MESSAGE_TYPE: [u8; 2] = [0, 1];

/// Bytes a wrapped message adds to its plaintext: the 10-byte MAC, the type and the sequence
/// number (RC4 needs no padding).
pub const OVERHEAD: usize = 10 + 2 + 4;

/// A cipher of DIGEST-MD5's confidentiality layer spoken here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SaslCipher {
    /// `rc4`: 128 bits of `H(A1)` in the sealing keys.
    Rc4,
    /// `rc4-56`: 56 bits.
    Rc4_56,
    /// `rc4-40`: 40 bits.
    Rc4_40,
}

impl SaslCipher {
    /// The cipher's token in a challenge's `cipher` directive and a response's.
    pub fn token(self) -> &'static str {
        match self {
            SaslCipher::Rc4 => "rc4",
            SaslCipher::Rc4_56 => "rc4-56",
            SaslCipher::Rc4_40 => "rc4-40",
        }
    }

    /// The cipher a token names, if spoken here.
    pub fn from_token(t: &str) -> Option<SaslCipher> {
        match t.trim() {
            "rc4" => Some(SaslCipher::Rc4),
            "rc4-56" => Some(SaslCipher::Rc4_56),
            "rc4-40" => Some(SaslCipher::Rc4_40),
            _ => None,
        }
    }

    /// The strongest spoken cipher of a challenge's `cipher` list.
    pub fn strongest_of(list: &str) -> Option<SaslCipher> {
        let offered: Vec<SaslCipher> = list.split(',').filter_map(Self::from_token).collect();
        [SaslCipher::Rc4, SaslCipher::Rc4_56, SaslCipher::Rc4_40]
            .into_iter()
            .find(|c| offered.contains(c))
    }

    /// How many bytes of `H(A1)` key the sealing keys.
    fn key_bytes(self) -> usize {
        match self {
            SaslCipher::Rc4 => 16,
            SaslCipher::Rc4_56 => 7,
            SaslCipher::Rc4_40 => 5,
        }
    }
}

const CLIENT_SIGN: &[u8] = b"Digest session key to client-to-server signing key magic constant";
const SERVER_SIGN: &[u8] = b"Digest session key to server-to-client signing key magic constant";
const CLIENT_SEAL: &[u8] = b"Digest H(A1) to client-to-server sealing key magic constant";
const SERVER_SEAL: &[u8] = b"Digest H(A1) to server-to-client sealing key magic constant";

fn md5_of(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// One side's state of the confidentiality layer after a DIGEST-MD5 exchange with `auth-conf`.
pub struct SaslPrivacy {
    cipher: SaslCipher,
    send_key: Rc4<U16>,
    recv_key: Rc4<U16>,
    send_mac: [u8; 16],
    recv_mac: [u8; 16],
    send_seq: u32,
    recv_seq: u32,
}

impl std::fmt::Debug for SaslPrivacy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslPrivacy")
            .field("cipher", &self.cipher)
            .field("send_seq", &self.send_seq)
            .field("recv_seq", &self.recv_seq)
            .finish_non_exhaustive()
    }
}

impl SaslPrivacy {
    /// The layer of the client (`client`) or the server of an exchange whose session key
    /// (`H(A1)`, binary) is `ha1`.
    pub fn new(ha1: &[u8; 16], cipher: SaslCipher, client: bool) -> Self {
        let n = cipher.key_bytes();
        let kic = md5_of(&[ha1, CLIENT_SIGN]);
        let kis = md5_of(&[ha1, SERVER_SIGN]);
        let kcc = md5_of(&[&ha1[..n], CLIENT_SEAL]);
        let kcs = md5_of(&[&ha1[..n], SERVER_SEAL]);
        let rc4 = |k: &[u8; 16]| Rc4::<U16>::new(k.into());
        let (send_key, recv_key, send_mac, recv_mac) = if client {
            (rc4(&kcc), rc4(&kcs), kic, kis)
        } else {
            (rc4(&kcs), rc4(&kcc), kis, kic)
        };
        SaslPrivacy {
            cipher,
            send_key,
            recv_key,
            send_mac,
            recv_mac,
            send_seq: 0,
            recv_seq: 0,
        }
    }

    /// The cipher negotiated.
    pub fn cipher(&self) -> SaslCipher {
        self.cipher
    }

    fn mac(key: &[u8; 16], seq: u32, msg: &[u8]) -> [u8; 10] {
        let mut m = <Hmac<Md5> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
        m.update(&seq.to_be_bytes());
        m.update(msg);
        let full = m.finalize().into_bytes();
        let mut out = [0u8; 10];
        out.copy_from_slice(&full[..10]);
        out
    }

    /// `wrap`: the message `msg` sealed, as Java's `SaslClient.wrap` / `SaslServer.wrap` give it.
    pub fn wrap(&mut self, msg: &[u8]) -> Vec<u8> {
        let seq = self.send_seq;
        let mac = Self::mac(&self.send_mac, seq, msg);
        let mut out = Vec::with_capacity(msg.len() + OVERHEAD);
        out.extend_from_slice(msg);
        out.extend_from_slice(&mac);
        self.send_key.apply_keystream(&mut out);
        out.extend_from_slice(&MESSAGE_TYPE);
        out.extend_from_slice(&seq.to_be_bytes());
        self.send_seq = self.send_seq.wrapping_add(1);
        out
    }

    /// `unwrap`: the message of a wrapped one from the peer; its sequence number must be the
    /// next and its MAC right, else [`AuthError::Rejected`] (the connection is then unusable: the
    /// keystream has moved on).
    pub fn unwrap(&mut self, wrapped: &[u8]) -> Result<Vec<u8>, AuthError> {
        if wrapped.len() < OVERHEAD {
            return Err(AuthError::Malformed(format!(
                "a SASL-wrapped message of {} bytes (at least {OVERHEAD})",
                wrapped.len()
            )));
        }
        let (sealed, tail) = wrapped.split_at(wrapped.len() - 6);
        if tail[..2] != MESSAGE_TYPE {
            return Err(AuthError::Malformed(format!(
                "a SASL-wrapped message of type {:02x}{:02x}, not 0001",
                tail[0], tail[1]
            )));
        }
        let seq = u32::from_be_bytes([tail[2], tail[3], tail[4], tail[5]]);
        if seq != self.recv_seq {
            return Err(AuthError::Rejected(format!(
                "a SASL-wrapped message numbered {seq} where {} was due",
                self.recv_seq
            )));
        }
        let mut plain = sealed.to_vec();
        self.recv_key.apply_keystream(&mut plain);
        let mac = plain.split_off(plain.len() - 10);
        let want = Self::mac(&self.recv_mac, seq, &plain);
        if !bool::from(mac.as_slice().ct_eq(&want)) {
            return Err(AuthError::Rejected(
                "a SASL-wrapped message's MAC is wrong: altered, or sealed with another key".into(),
            ));
        }
        self.recv_seq = self.recv_seq.wrapping_add(1);
        Ok(plain)
    }

    /// `msg` wrapped and preceded by Spark's 8-byte length (which counts itself).
    pub fn seal_chunk(&mut self, msg: &[u8]) -> Vec<u8> {
        let wrapped = self.wrap(msg);
        let mut out = Vec::with_capacity(8 + wrapped.len());
        out.extend_from_slice(&(8 + wrapped.len() as u64).to_be_bytes());
        out.extend_from_slice(&wrapped);
        out
    }

    /// The plaintext of the first whole chunk of `buf` and the bytes it took, or `None` while
    /// `buf` holds less than one chunk.
    pub fn open_chunk(&mut self, buf: &[u8]) -> Result<Option<(Vec<u8>, usize)>, AuthError> {
        let Some(len) = buf.get(..8) else {
            return Ok(None);
        };
        let n = u64::from_be_bytes(len.try_into().expect("8 bytes"));
        if !(8 + OVERHEAD as u64..=MAX_WRAPPED).contains(&n) {
            return Err(AuthError::Malformed(format!(
                "a SASL-encrypted chunk of {n} bytes ({} to {MAX_WRAPPED})",
                8 + OVERHEAD
            )));
        }
        let n = n as usize;
        if buf.len() < n {
            return Ok(None);
        }
        Ok(Some((self.unwrap(&buf[8..n])?, n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(cipher: SaslCipher) -> (SaslPrivacy, SaslPrivacy) {
        let ha1 = md5_of(&[b"a session key"]);
        (
            SaslPrivacy::new(&ha1, cipher, true),
            SaslPrivacy::new(&ha1, cipher, false),
        )
    }

    #[test]
    fn each_side_unwraps_what_the_other_wraps_in_both_directions_in_order() {
        for cipher in [SaslCipher::Rc4, SaslCipher::Rc4_56, SaslCipher::Rc4_40] {
            let (mut c, mut s) = pair(cipher);
            for i in 0..3u8 {
                let m = vec![i; 100 + usize::from(i)];
                let w = c.wrap(&m);
                assert_eq!(w.len(), m.len() + OVERHEAD);
                assert_ne!(&w[..m.len()], &m[..], "the message is sealed");
                assert_eq!(&w[w.len() - 4..], &u32::from(i).to_be_bytes());
                assert_eq!(s.unwrap(&w).expect("opens"), m);
                let back = s.wrap(b"answer");
                assert_eq!(c.unwrap(&back).expect("opens"), b"answer");
            }
        }
    }

    #[test]
    fn the_two_directions_have_different_keys() {
        let (mut c, mut s) = pair(SaslCipher::Rc4);
        let from_client = c.wrap(b"same text");
        let from_server = s.wrap(b"same text");
        assert_ne!(from_client, from_server);
        // A side cannot read its own message back as if it came from the peer.
        let (mut c2, _) = pair(SaslCipher::Rc4);
        assert!(c2.unwrap(&from_client).is_err());
    }

    #[test]
    fn an_altered_replayed_or_foreign_message_is_refused() {
        let (mut c, mut s) = pair(SaslCipher::Rc4);
        let mut w = c.wrap(b"register me");
        w[3] ^= 1;
        assert!(matches!(s.unwrap(&w), Err(AuthError::Rejected(_))));

        let (mut c, mut s) = pair(SaslCipher::Rc4);
        let w = c.wrap(b"once");
        s.unwrap(&w).expect("opens");
        assert!(
            matches!(s.unwrap(&w), Err(AuthError::Rejected(_))),
            "a replay"
        );

        let (mut c, _) = pair(SaslCipher::Rc4);
        let other = md5_of(&[b"another session key"]);
        let mut s = SaslPrivacy::new(&other, SaslCipher::Rc4, false);
        assert!(s.unwrap(&c.wrap(b"x")).is_err(), "another session's key");

        let (_, mut s) = pair(SaslCipher::Rc4);
        assert!(matches!(s.unwrap(&[0; 5]), Err(AuthError::Malformed(_))));
    }

    #[test]
    fn chunks_carry_spark_s_self_counting_length_and_open_only_when_whole() {
        let (mut c, mut s) = pair(SaslCipher::Rc4);
        let chunk = c.seal_chunk(b"hello");
        assert_eq!(
            u64::from_be_bytes(chunk[..8].try_into().expect("8")),
            chunk.len() as u64
        );
        assert!(s
            .open_chunk(&chunk[..chunk.len() - 1])
            .expect("ok")
            .is_none());
        let (plain, used) = s.open_chunk(&chunk).expect("ok").expect("whole");
        assert_eq!((plain.as_slice(), used), (&b"hello"[..], chunk.len()));
        let mut huge = (MAX_WRAPPED + 1).to_be_bytes().to_vec();
        huge.extend_from_slice(&[0; 32]);
        assert!(s.open_chunk(&huge).is_err());
    }

    #[test]
    fn the_strongest_offered_rc4_is_chosen_and_des_is_not_spoken() {
        assert_eq!(
            SaslCipher::strongest_of("3des,rc4,des,rc4-56,rc4-40"),
            Some(SaslCipher::Rc4)
        );
        assert_eq!(
            SaslCipher::strongest_of("rc4-40,rc4-56"),
            Some(SaslCipher::Rc4_56)
        );
        assert_eq!(SaslCipher::strongest_of("3des,des"), None);
    }
}
