//! Spark's `CtrTransportCipher`: after the auth engine's exchange every byte each way is one
//! continuous AES-CTR stream (a 128-bit big-endian counter starting at the direction's IV),
//! with no framing of its own: Spark's transport frames run inside it unchanged. The client
//! sends with the server's IV (`outputIv`) and reads with the client's (`inputIv`); the server
//! the other way round. AES-256 with engine version 1's 32-byte key, AES-128 with version 2's;
//! the original protocol ([`super::legacy`]) runs the same streams with keys of 16, 24 or 32 bytes.

use aes::{Aes128, Aes192, Aes256};
use ctr::cipher::{KeyIvInit, StreamCipher};

use super::engine::SessionKeys;
use super::AuthError;

type Ctr128 = ctr::Ctr128BE<Aes128>;
type Ctr192 = ctr::Ctr128BE<Aes192>;
type Ctr256 = ctr::Ctr128BE<Aes256>;

/// One direction's keystream.
pub struct CtrStream(Inner);

enum Inner {
    Aes128(Box<Ctr128>),
    Aes192(Box<Ctr192>),
    Aes256(Box<Ctr256>),
}

impl std::fmt::Debug for CtrStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            Inner::Aes128(_) => "CtrStream(AES-128)",
            Inner::Aes192(_) => "CtrStream(AES-192)",
            Inner::Aes256(_) => "CtrStream(AES-256)",
        })
    }
}

impl CtrStream {
    /// A stream under `key` (16, 24 or 32 bytes) whose counter starts at `iv`.
    pub(crate) fn new(key: &[u8], iv: &[u8; 16]) -> Result<Self, AuthError> {
        Ok(CtrStream(match key.len() {
            16 => Inner::Aes128(Box::new(
                Ctr128::new_from_slices(key, iv)
                    .map_err(|_| AuthError::Crypto("AES-CTR key".into()))?,
            )),
            24 => Inner::Aes192(Box::new(
                Ctr192::new_from_slices(key, iv)
                    .map_err(|_| AuthError::Crypto("AES-CTR key".into()))?,
            )),
            32 => Inner::Aes256(Box::new(
                Ctr256::new_from_slices(key, iv)
                    .map_err(|_| AuthError::Crypto("AES-CTR key".into()))?,
            )),
            n => return Err(AuthError::Crypto(format!("an AES key of {n} bytes"))),
        }))
    }

    /// Encrypts or decrypts `data` in place, moving the stream on by its length.
    pub fn apply(&mut self, data: &mut [u8]) {
        match &mut self.0 {
            Inner::Aes128(c) => c.apply_keystream(data),
            Inner::Aes192(c) => c.apply_keystream(data),
            Inner::Aes256(c) => c.apply_keystream(data),
        }
    }
}

/// Both directions of one side of a session.
#[derive(Debug)]
pub struct CtrSession {
    /// What this side sends.
    pub send: CtrStream,
    /// What this side receives.
    pub recv: CtrStream,
}

impl CtrSession {
    /// The client's side of session `keys`.
    pub fn client(keys: &SessionKeys) -> Result<Self, AuthError> {
        Ok(CtrSession {
            send: CtrStream::new(&keys.key, &keys.server_iv)?,
            recv: CtrStream::new(&keys.key, &keys.client_iv)?,
        })
    }

    /// The server's side of session `keys`.
    pub fn server(keys: &SessionKeys) -> Result<Self, AuthError> {
        Ok(CtrSession {
            send: CtrStream::new(&keys.key, &keys.client_iv)?,
            recv: CtrStream::new(&keys.key, &keys.server_iv)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_128_ctr_matches_nist_sp800_38a_f5_1() {
        let key = [
            0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf,
            0x4f, 0x3c,
        ];
        let iv = [
            0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd,
            0xfe, 0xff,
        ];
        let mut block = [
            0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93,
            0x17, 0x2a,
        ];
        let mut s = CtrStream::new(&key, &iv).expect("key");
        s.apply(&mut block);
        assert_eq!(
            block,
            [
                0x87, 0x4d, 0x61, 0x91, 0xb6, 0x20, 0xe3, 0x26, 0x1b, 0xef, 0x68, 0x64, 0x99, 0x0d,
                0xb6, 0xce
            ]
        );
    }

    #[test]
    fn the_client_s_send_is_the_server_s_receive_in_pieces_of_any_size() {
        let keys = SessionKeys {
            key: vec![7; 32],
            client_iv: [1; 16],
            server_iv: [2; 16],
        };
        let mut c = CtrSession::client(&keys).expect("client");
        let mut s = CtrSession::server(&keys).expect("server");
        let plain: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        let mut wire = plain.clone();
        c.send.apply(&mut wire);
        assert_ne!(wire, plain);
        let (a, b) = wire.split_at_mut(17);
        s.recv.apply(a);
        s.recv.apply(b);
        assert_eq!(wire, plain);
        let mut back = plain.clone();
        s.send.apply(&mut back);
        c.recv.apply(&mut back);
        assert_eq!(back, plain);
        assert!(CtrSession::client(&SessionKeys {
            key: vec![0; 5],
            ..keys
        })
        .is_err());
    }
}
