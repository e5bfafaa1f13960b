//! Shared-secret authentication in the handshake, without IO: the secret, the nonces, the
//! challenge and proof frames, and the HMAC-SHA256 proofs (protocol/handshake.md §10).
//!
//! Each side proves that it holds the secret by a MAC over the whole exchange so far, keyed by the
//! secret: the server over the client's hello (which carries the client's nonce) and its own
//! nonce, the client over the hello and the server's challenge (which carries the server's nonce
//! and proof). Proofs are compared in constant time (`hmac`'s `verify_slice`).

use std::fmt;
use std::sync::Arc;

use hmac_sha256::HMAC;

use super::error::HandshakeError;
use super::map::{write_bin_entry, write_map, write_str_entry, Entries, MAGIC};

/// The one authentication mechanism: HMAC-SHA256 over the exchange, keyed by the shared secret.
pub const AUTH_MECHANISM: &str = "hmac-sha256";

/// Bytes in a nonce.
pub const NONCE_LEN: usize = 32;

/// Bytes in a proof (an HMAC-SHA256 tag).
pub const PROOF_LEN: usize = 32;

/// A nonce: 32 bytes from the operating system's random source, fresh for each handshake.
pub type Nonce = [u8; NONCE_LEN];

/// What the server's proof is prefixed with (domain separation: a server proof is never a valid
/// client proof).
const SERVER_LABEL: &[u8] = b"sparkwire-auth-v1 server\0";
/// What the client's proof is prefixed with.
const CLIENT_LABEL: &[u8] = b"sparkwire-auth-v1 client\0";
/// What the client's admin proof is prefixed with.
const ADMIN_LABEL: &[u8] = b"sparkwire-auth-v1 admin\0";

/// A shared secret. Its bytes never appear in `Debug` output; equality is constant-time.
#[derive(Clone)]
pub struct Secret(Arc<[u8]>);

impl Secret {
    /// A secret of these bytes; `None` when there are none (an empty secret proves nothing).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Option<Secret> {
        let bytes: Vec<u8> = bytes.into();
        if bytes.is_empty() {
            None
        } else {
            Some(Secret(Arc::from(bytes)))
        }
    }

    /// The secret's bytes, the HMAC key.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a secret has at least one byte.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(<{} bytes, redacted>)", self.0.len())
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        // In constant time: the SHA-256 digests of the two secrets, compared by the hash crate's
        // constant-time check (equal digests mean equal secrets).
        hmac_sha256::Hash::verify(self.expose(), &hmac_sha256::Hash::hash(other.expose()))
    }
}

impl Eq for Secret {}

/// The bytes of a whole handshake frame: the 4-byte big-endian length, then `body`. Proofs are
/// computed over frames as they cross the wire.
pub fn frame_bytes(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

fn mac(secret: &Secret, label: &[u8], parts: &[&[u8]]) -> HMAC {
    let mut mac = HMAC::new(secret.expose());
    mac.update(label);
    for part in parts {
        mac.update(part);
    }
    mac
}

/// True when `proof` is the MAC `mac` ends with, compared in constant time.
fn verify(mac: HMAC, proof: &[u8]) -> bool {
    match <&[u8; PROOF_LEN]>::try_from(proof) {
        Ok(proof) => mac.finalize_verify(proof),
        Err(_) => false,
    }
}

/// The server's proof: HMAC-SHA256(secret, `"sparkwire-auth-v1 server\0"` ‖ hello frame ‖
/// server nonce). `hello_frame` is the client's hello frame, prefix included.
pub fn server_proof(secret: &Secret, hello_frame: &[u8], server_nonce: &Nonce) -> [u8; PROOF_LEN] {
    mac(secret, SERVER_LABEL, &[hello_frame, server_nonce]).finalize()
}

/// The client's proof: HMAC-SHA256(secret, `"sparkwire-auth-v1 client\0"` ‖ hello frame ‖
/// challenge frame), both frames prefix included.
pub fn client_proof(
    secret: &Secret,
    hello_frame: &[u8],
    challenge_frame: &[u8],
) -> [u8; PROOF_LEN] {
    mac(secret, CLIENT_LABEL, &[hello_frame, challenge_frame]).finalize()
}

/// The client's admin proof: the same as [`client_proof`] with the admin secret and the label
/// `"sparkwire-auth-v1 admin\0"`.
pub fn admin_proof(
    admin_secret: &Secret,
    hello_frame: &[u8],
    challenge_frame: &[u8],
) -> [u8; PROOF_LEN] {
    mac(admin_secret, ADMIN_LABEL, &[hello_frame, challenge_frame]).finalize()
}

/// True when `proof` is the server's proof for this hello and nonce (constant-time).
pub fn verify_server_proof(
    secret: &Secret,
    hello_frame: &[u8],
    server_nonce: &Nonce,
    proof: &[u8],
) -> bool {
    verify(
        mac(secret, SERVER_LABEL, &[hello_frame, server_nonce]),
        proof,
    )
}

/// True when `proof` is the client's proof for this exchange (constant-time).
pub fn verify_client_proof(
    secret: &Secret,
    hello_frame: &[u8],
    challenge_frame: &[u8],
    proof: &[u8],
) -> bool {
    verify(
        mac(secret, CLIENT_LABEL, &[hello_frame, challenge_frame]),
        proof,
    )
}

/// True when `proof` is the admin proof for this exchange (constant-time).
pub fn verify_admin_proof(
    admin_secret: &Secret,
    hello_frame: &[u8],
    challenge_frame: &[u8],
    proof: &[u8],
) -> bool {
    verify(
        mac(admin_secret, ADMIN_LABEL, &[hello_frame, challenge_frame]),
        proof,
    )
}

/// The server's challenge (second frame, when the client asked to authenticate and the server
/// has a secret): the server's nonce and its proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The server's nonce.
    pub nonce: Nonce,
    /// The server's proof ([`server_proof`]).
    pub proof: [u8; PROOF_LEN],
}

/// Appends the challenge's frame body to `out`: `{magic, challenge: "hmac-sha256", nonce, proof}`.
pub fn encode_challenge(challenge: &Challenge, out: &mut Vec<u8>) {
    write_map(out, 4);
    write_str_entry(out, "magic", MAGIC);
    write_str_entry(out, "challenge", AUTH_MECHANISM);
    write_bin_entry(out, "nonce", &challenge.nonce);
    write_bin_entry(out, "proof", &challenge.proof);
}

/// Reads a challenge from parsed entries (the caller saw the `challenge` key).
pub(crate) fn challenge_from(entries: &Entries<'_>) -> Result<Challenge, HandshakeError> {
    let mechanism = entries.str("challenge")?;
    if mechanism != AUTH_MECHANISM {
        return Err(HandshakeError::Malformed(format!(
            "the server challenges with {mechanism:?}; this side knows only {AUTH_MECHANISM:?}"
        )));
    }
    Ok(Challenge {
        nonce: entries.bin_array("nonce")?,
        proof: entries.bin_array("proof")?,
    })
}

/// The client's proof (third frame): its proof, and an admin proof when it holds the admin
/// secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The client's proof ([`client_proof`]).
    pub proof: [u8; PROOF_LEN],
    /// The admin proof ([`admin_proof`]), if the client holds the admin secret.
    pub admin: Option<[u8; PROOF_LEN]>,
}

/// Appends the proof's frame body to `out`: `{magic, proof}` or `{magic, proof, admin}`.
pub fn encode_proof(proof: &Proof, out: &mut Vec<u8>) {
    write_map(out, if proof.admin.is_some() { 3 } else { 2 });
    write_str_entry(out, "magic", MAGIC);
    write_bin_entry(out, "proof", &proof.proof);
    if let Some(admin) = &proof.admin {
        write_bin_entry(out, "admin", admin);
    }
}

/// Reads a proof frame body. Unknown keys are ignored.
pub fn decode_proof(body: &[u8]) -> Result<Proof, HandshakeError> {
    let entries = Entries::parse(body)?;
    let admin = if entries.has("admin") {
        Some(entries.bin_array("admin")?)
    } else {
        None
    };
    Ok(Proof {
        proof: entries.bin_array("proof")?,
        admin,
    })
}

/// A fresh nonce from the operating system's random source (feature `tokio`, which brings
/// `getrandom`; without it, a sans-IO caller draws nonces from its own random source).
#[cfg(feature = "tokio")]
pub fn fresh_nonce() -> Result<Nonce, HandshakeError> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::getrandom(&mut nonce).map_err(|e| HandshakeError::Random(e.to_string()))?;
    Ok(nonce)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> Secret {
        Secret::new(s.as_bytes()).expect("not empty")
    }

    #[test]
    fn secrets_are_never_empty_never_printed_and_compare_by_value() {
        assert!(Secret::new(Vec::new()).is_none());
        let s = secret("hunter2-hunter2");
        assert_eq!(format!("{s:?}"), "Secret(<15 bytes, redacted>)");
        assert_eq!(s, secret("hunter2-hunter2"));
        assert_ne!(s, secret("hunter2-hunter3"));
        assert_ne!(s, secret("hunter2"));
    }

    #[test]
    fn proofs_verify_only_with_the_same_secret_transcript_and_role() {
        let k = secret("the shared secret");
        let hello = frame_bytes(b"hello");
        let challenge = frame_bytes(b"challenge");
        let nonce = [7u8; NONCE_LEN];
        let sp = server_proof(&k, &hello, &nonce);
        assert!(verify_server_proof(&k, &hello, &nonce, &sp));
        assert!(!verify_server_proof(&secret("other"), &hello, &nonce, &sp));
        assert!(!verify_server_proof(
            &k,
            &frame_bytes(b"hellp"),
            &nonce,
            &sp
        ));
        assert!(!verify_server_proof(&k, &hello, &[8u8; NONCE_LEN], &sp));
        assert!(!verify_server_proof(&k, &hello, &nonce, &sp[..31]));

        let cp = client_proof(&k, &hello, &challenge);
        assert!(verify_client_proof(&k, &hello, &challenge, &cp));
        assert!(!verify_client_proof(
            &k,
            &hello,
            &frame_bytes(b"challengf"),
            &cp
        ));
        // Labels keep the roles apart: a client proof is not an admin proof under the same key.
        assert!(!verify_admin_proof(&k, &hello, &challenge, &cp));
        let ap = admin_proof(&k, &hello, &challenge);
        assert!(verify_admin_proof(&k, &hello, &challenge, &ap));
        assert_ne!(ap, cp);
    }

    #[test]
    fn challenge_and_proof_frames_round_trip() {
        let c = Challenge {
            nonce: [1; NONCE_LEN],
            proof: [2; PROOF_LEN],
        };
        let mut body = Vec::new();
        encode_challenge(&c, &mut body);
        let entries = Entries::parse(&body).expect("a map");
        assert_eq!(challenge_from(&entries), Ok(c));
        for admin in [None, Some([3; PROOF_LEN])] {
            let p = Proof {
                proof: [4; PROOF_LEN],
                admin,
            };
            let mut body = Vec::new();
            encode_proof(&p, &mut body);
            assert_eq!(decode_proof(&body), Ok(p));
        }
    }

    #[test]
    fn a_proof_of_the_wrong_length_or_type_is_malformed() {
        let mut short = Vec::new();
        write_map(&mut short, 2);
        write_str_entry(&mut short, "magic", MAGIC);
        write_bin_entry(&mut short, "proof", &[0; 31]);
        assert!(matches!(
            decode_proof(&short),
            Err(HandshakeError::Malformed(_))
        ));
        let mut text = Vec::new();
        write_map(&mut text, 2);
        write_str_entry(&mut text, "magic", MAGIC);
        write_str_entry(&mut text, "proof", "x");
        assert!(matches!(
            decode_proof(&text),
            Err(HandshakeError::Malformed(_))
        ));
    }
}
